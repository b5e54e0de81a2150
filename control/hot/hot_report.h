/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot keys the controller lists but never overrides: the keys of a VIP whose
 * hot_mode is "report", and elephants (a 5-tuple key of a TCP VIP is one
 * connection, which no override can spread). Listed at share >= threshold,
 * delisted after demote_windows windows below threshold_low, like overrides.
 * Internal to the hotkey module.
 */
#ifndef LB_HOT_REPORT_H
#define LB_HOT_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "control/hot/hotkey_internal.h"

/** What the controller does with v's hot keys: spread, report, elephant (or off). */
enum lb_hot_kind lb_hot_report_kind(const struct lb_vip *v);

/**
 * Candidate c of v (kind report or elephant) with share in the window: count
 * it for its listed entry, or list it if share >= list_at (the operator's
 * threshold, or with threshold auto the share that would break the VIP's
 * cap; counted in report_full when the list is full). A listed key is
 * delisted after demote_windows windows below threshold_low, or with none
 * set below LB_HOT_DEMOTE_BAND of list_at.
 */
void lb_hot_report_feed(struct lb_hotkey *h, const struct lb_vip *v,
                        const struct lb_hot_candidate *c, double share, double list_at,
                        uint64_t window);

/**
 * End of a window: every entry's share of the window, the demotion count, and
 * delisting of entries whose VIP is gone, no longer reports, or stayed below
 * threshold_low for demote_windows windows. vip_of maps a VIP id to the VIP in
 * s, the snapshot of this call (NULL: gone).
 */
void lb_hot_report_end(struct lb_hotkey *h, const uint64_t *vip_total, const struct lb_snapshot *s,
                       const struct lb_vip *(*vip_of)(const struct lb_hotkey *,
                                                      const struct lb_snapshot *, uint16_t),
                       uint64_t window);

#endif /* LB_HOT_REPORT_H */
