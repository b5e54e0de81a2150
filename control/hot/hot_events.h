/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key controller's record of what it did: a ring of the newest
 * LB_HOT_MAX_EVENTS promotions, demotions, re-plans, pins, unpins and drops.
 * Internal to the hotkey module; hot_events.c also defines the JSON reports
 * of hotkey.h (lb_hotkey_events_json() and lb_hotkey_counters_json()).
 */
#ifndef LB_HOT_EVENTS_H
#define LB_HOT_EVENTS_H

#include <stdint.h>

#include "control/hot/hotkey_internal.h"

/** Record an event of override o (its share and replica count as they are now). */
void lb_hot_events_add(struct lb_hotkey *h, enum lb_hot_event_type type, uint64_t window,
                       const struct lb_hot_override *o);

#endif /* LB_HOT_EVENTS_H */
