/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key controller's planning maths: which backends of a VIP are usable
 * and the bounded-load cap over them, the replica count on its ladder, the
 * replica list laid along a key's rendezvous order under the cap (hot_plan.c),
 * and the EWMA load bookkeeping (hot_loads.c), with the small helpers both
 * files use. Internal to the hotkey module; hot_plan.c also defines
 * lb_hotkey_replicas(), lb_hotkey_preference(), lb_hotkey_order() and
 * lb_hotkey_rung() of hotkey.h.
 */
#ifndef LB_HOT_PLAN_H
#define LB_HOT_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "control/hot/hotkey_internal.h"

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
 * The per-call host figures (every backend address over all VIPs): load, fair
 * load (each membership's weight times its VIP's average per unit of weight)
 * and noise. O(n_backends); call after lb_hot_plan_update_loads() in the same
 * call (h->stamp).
 */
void lb_hot_plan_hosts(struct lb_hotkey *h, const struct lb_snapshot *s);

/** Backend id's cap: c times its weight times the VIP's average per unit of weight. */
double lb_hot_plan_cap(const struct lb_hotkey *h, const struct lb_snapshot *s,
                       const struct lb_hot_vip_info *vi, uint16_t id);

/** Whether backend id, or its host over every VIP, is above its cap now. */
bool lb_hot_plan_over(const struct lb_hotkey *h, const struct lb_snapshot *s,
                      const struct lb_hot_vip_info *vi, uint16_t id);

/**
 * Whether a key of load k_plan fits on backend home alone under the cap (no
 * margin), its host included; part: what home's load holds of the key now.
 */
bool lb_hot_plan_fits(const struct lb_hotkey *h, const struct lb_snapshot *s,
                      const struct lb_hot_vip_info *vi, uint16_t home, double k_plan, double part);

/**
 * Choose replicas for a key of load k_plan. cur/n_cur are the backends that
 * carry it now, part load units in all (each usable one its weight's share).
 * A backend's headroom is its cap (and its host's) less the margin (hot.margin)
 * less LB_HOT_NOISE_Z standard deviations of its real fluctuation (measured
 * variance beyond LB_HOT_FLOOR_K sampling floors) less its load without the
 * key, that load taken as fair unless it is more than LB_HOT_DENOISE_Z
 * standard deviations of its sampling noise from fair; replica i
 * is charged k_plan w_i / W of the list's weight W, as the data path spreads
 * the key. The list for r is laid along the key's rendezvous order
 * (lb_hotkey_order): position i is the i-th backend if it is usable and has
 * the headroom, else a substitute taken from the far end of the order.
 * r_fixed > 0 asks for that many; 0 takes the lowest rung of the ladder
 * (lb_hotkey_rung) whose list fills with backends that have the headroom; if
 * none does, every usable backend up to LB_HOT_MAX_REPLICAS, the least
 * loaded. Output in slot order (the order the data path's pick needs to be
 * stable); out NULL only counts. res (may be NULL): feasible (the plan holds
 * the cap c, with or without the margin: the margin is a goal), and the
 * projected peak/average per unit of weight. @return the count.
 */
uint16_t lb_hot_plan_choose(struct lb_hotkey *h, const struct lb_snapshot *s,
                            const struct lb_vip *v, const struct lb_hot_vip_info *vi,
                            uint64_t key_hash, uint32_t r_fixed, double k_plan, const uint16_t *cur,
                            uint16_t n_cur, double part, uint16_t *out,
                            struct lb_hot_plan_result *res);

/**
 * The key's rendezvous order over every membership of v in s (any state):
 * backends by descending hash of (key, backend address), the same on every
 * instance with the same membership, and unchanged for the others when one
 * comes or goes. scratch: LB_HOT_N_IDS entries. @return the count.
 */
uint16_t lb_hot_plan_order(const struct lb_snapshot *s, const struct lb_vip *v, uint64_t key_hash,
                           uint16_t *out, struct lb_hot_rank *scratch);

/**
 * Move the key's estimated traffic from the backends that carried it
 * (from_load in all, each its weight's part over the usable ones) to the new
 * ones (key_load, each its weight's part), weights as in s.
 */
void lb_hot_plan_shift_load(struct lb_hotkey *h, const struct lb_snapshot *s, const uint16_t *from,
                            uint16_t n_from, double from_load, const uint16_t *to, uint16_t n_to,
                            double key_load);

/**
 * Fold this window's per-backend loads (s->n_backends entries; NULL: all 0)
 * into the EWMAs. A new membership starts from its first window; ids beyond the
 * registry are forgotten. vip_total: this window's packets per VIP (NULL:
 * loads are taken as packets); a deviation beyond LB_HOT_STEP_Z times the
 * sampling noise of the count plus the measured noise is a step in the traffic
 * mix: the load restarts from this window and the noise estimate keeps it out.
 * In a window in which one of a VIP's loads stepped, all of its loads restart
 * (their shares moved with the new mix), noise kept.
 */
void lb_hot_plan_update_loads(struct lb_hotkey *h, const struct lb_snapshot *s,
                              const uint64_t *load, const uint64_t *vip_total);

/* --- shared by hot_plan.c and hot_loads.c --------------------------------- */

/* Whether backend id of s is in the registry, active and of weight > 0. */
static inline bool
lb_hot_plan_registry_usable(const struct lb_snapshot *s, uint16_t id)
{
	const struct lb_backend *b = &s->backends[id];

	return b->gen != 0 && b->state == LB_BACKEND_ACTIVE && b->weight > 0;
}

/* The sampling floor of a load x: the variance of one window's count, about
 * Poisson (the count), in load units (times units per packet). */
static inline double
lb_hot_plan_window_floor(const struct lb_hotkey *h, const struct lb_backend *b, double x)
{
	double u = b->vip_id < LB_MAX_VIPS && h->vip_upp[b->vip_id] > 0 ? h->vip_upp[b->vip_id] : 1;

	return (x > 1 ? x : 1) * u;
}

/* Backend id's weight in s, 0 if not in the registry. */
static inline double
lb_hot_plan_weight(const struct lb_snapshot *s, uint16_t id)
{
	return id < s->n_backends ? (double)s->backends[id].weight : 0;
}

/* Σ weight of the backends in ids usable in this call (all of them if none is). */
static inline double
lb_hot_plan_carrier_weight(const struct lb_hotkey *h, const struct lb_snapshot *s,
                           const uint16_t *ids, uint16_t n)
{
	double w = 0, all = 0;

	for (uint16_t i = 0; i < n; i++) {
		all += lb_hot_plan_weight(s, ids[i]);
		if (lb_hot_plan_usable(h, ids[i]))
			w += lb_hot_plan_weight(s, ids[i]);
	}
	return w > 0 ? w : all;
}

/** Square root by Newton's iteration (no libm in this library); 0 for x <= 0. */
double lb_hot_sqrt(double x);

/**
 * A backend's address (family and 16 bytes) folded into 64 bits: each 8-byte
 * word xored in, multiplied by mul, then shifted right by shift and xored.
 * The planner's identity hash and the host table use it with their own
 * constants.
 */
uint64_t lb_hot_addr_hash(const struct lb_backend *b, uint64_t mul, unsigned int shift);

#endif /* LB_HOT_PLAN_H */
