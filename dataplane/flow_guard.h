/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-core new-flow rate guard: a token bucket in flow-table ticks that a
 * worker consults before a packet of an unknown flow creates an entry. A
 * packet over the rate still goes to its Maglev backend, without an entry.
 * Written by its worker only: no locks, no atomics, no division.
 */
#ifndef LB_FLOW_GUARD_H
#define LB_FLOW_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#define LB_FLOW_GUARD_ONE (1ull << 16) /* one token in the bucket's fixed point */

struct lb_flow_guard {
	uint64_t tokens;   /* in 1/65536 of a flow */
	uint64_t cap;      /* burst, same unit */
	uint64_t per_tick; /* refill per tick, same unit; 0 = guard off */
	uint32_t last;     /* tick of the last refill */
};

/**
 * Set the guard to rate new flows per second (0 = off) with a burst of burst
 * flows, on a clock of ticks_per_s ticks; the bucket starts full at now.
 */
static inline void
lb_flow_guard_init(struct lb_flow_guard *g, uint32_t rate, uint32_t burst, uint64_t ticks_per_s,
                   uint32_t now)
{
	g->per_tick = rate == 0 || ticks_per_s == 0
	                      ? 0
	                      : (uint64_t)rate * LB_FLOW_GUARD_ONE / ticks_per_s;
	if (rate != 0 && g->per_tick == 0)
		g->per_tick = 1;
	g->cap = (uint64_t)(burst == 0 ? 1 : burst) * LB_FLOW_GUARD_ONE;
	g->tokens = g->cap;
	g->last = now;
}

/** Whether a new flow may create an entry at now (takes a token if so). */
static inline bool
lb_flow_guard_take(struct lb_flow_guard *g, uint32_t now)
{
	if (g->per_tick == 0)
		return true;
	if (now != g->last) {
		uint64_t add = (uint64_t)(now - g->last) * g->per_tick;

		g->tokens = add >= g->cap - g->tokens ? g->cap : g->tokens + add;
		g->last = now;
	}
	if (g->tokens < LB_FLOW_GUARD_ONE)
		return false;
	g->tokens -= LB_FLOW_GUARD_ONE;
	return true;
}

#endif /* LB_FLOW_GUARD_H */
