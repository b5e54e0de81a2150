/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key controller's planning maths: which backends of a VIP are usable
 * and the bounded-load cap over them, the replica count with its dead band,
 * the choice of replicas along a key's preference order under the cap, and
 * the EWMA load bookkeeping. Internal to the hotkey module; hot_plan.c also
 * defines lb_hotkey_replicas() and lb_hotkey_preference() of hotkey.h.
 */
#ifndef LB_HOT_PLAN_H
#define LB_HOT_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "hotkey_internal.h"

/**
 * The VIP's usable backends (in its table and active with weight > 0), their
 * load sums and the cap: one scan of the table per VIP per call, O(M), cached
 * by h->stamp so every candidate and override of the VIP shares it. Marks the
 * usable ids for lb_hot_plan_usable(). raw: this window's per-id loads (sum_raw),
 * or NULL outside a window.
 */
const struct lb_hot_vip_info *lb_hot_plan_vip_info(struct lb_hotkey *h, const struct lb_snapshot *s,
                                                   const struct lb_vip *v, const uint64_t *raw);

/** Whether backend id was found usable by lb_hot_plan_vip_info() in this call. */
bool lb_hot_plan_usable(const struct lb_hotkey *h, uint16_t id);

/**
 * Choose r replicas for a key. cur/n_cur are the backends that carry the key
 * now (its replicas, or its Maglev home before promotion) with part load units
 * each. A backend qualifies if its load without the key plus k_plan / r stays
 * under the cap; qualifying backends are taken in preference order. If fewer
 * than r qualify, the rest are the least loaded (projected) of the remaining
 * ones, ties in preference order: the cap cannot be held, so spread the excess
 * where it hurts least. Output in preference order. @return the count (>= 1
 * when the VIP has a usable backend).
 */
uint16_t lb_hot_plan_choose(struct lb_hotkey *h, const struct lb_snapshot *s,
                            const struct lb_vip *v, const struct lb_hot_vip_info *vi,
                            uint64_t key_hash, uint32_t r, double k_plan, const uint16_t *cur,
                            uint16_t n_cur, double part, uint16_t *out);

/**
 * The replica count override pos should have over n_usable backends (over_cap:
 * a replica is above the cap). An operator's r wins; growth is immediate (the
 * cap is at stake); shrinking waits for a dead band and never happens while the
 * key counts down to demotion.
 */
uint32_t lb_hot_plan_target_r(const struct lb_hotkey *h, uint32_t pos, uint32_t n_usable,
                              bool over_cap);

/**
 * Move the key's estimated traffic from the backends that carried it (part_from
 * each) to the new ones (key_load spread evenly over them).
 */
void lb_hot_plan_shift_load(struct lb_hotkey *h, const uint16_t *from, uint16_t n_from,
                            double part_from, const uint16_t *to, uint16_t n_to, double key_load);

/**
 * Fold this window's per-backend loads (s->n_backends entries; NULL: all 0)
 * into the EWMAs. A new membership starts from its first window; ids beyond the
 * registry are forgotten.
 */
void lb_hot_plan_update_loads(struct lb_hotkey *h, const struct lb_snapshot *s,
                              const uint64_t *load);

#endif /* LB_HOT_PLAN_H */
