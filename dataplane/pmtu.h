/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Path MTU toward backends, learned from ICMP "fragmentation needed" (RFC 1191)
 * and ICMPv6 Packet Too Big (RFC 8201) errors that quote our own encapsulated
 * packets. One table shared by all workers, indexed by backend id; workers write
 * it with relaxed 64-bit atomic stores and read it on the oversize check only.
 */
#ifndef LB_PMTU_H
#define LB_PMTU_H

#include <stdint.h>

#include "dataplane/snapshot.h"

#define LB_PMTU_AGE_MS 600000u /* a learned MTU is forgotten after 10 minutes (RFC 1191 §6.3) */
#define LB_PMTU_MIN4 576u      /* smaller IPv4 outer MTUs are ignored (RFC 791, RFC 1191 §3) */
#define LB_PMTU_MIN6 1280u /* smaller IPv6 outer MTUs are ignored (RFC 8200 §5, RFC 8201 §4) */
#define LB_PMTU_SWEEP 8u   /* entries lb_pmtu_sweep() checks per call */
/* Backend entries lb_pmtu_learn() compares per tick, all workers together; a
 * walk that starts within the budget runs to its end, so one per tick always does. */
#define LB_PMTU_WALK_BUDGET 4096u

_Static_assert(LB_MAX_BACKENDS % LB_PMTU_SWEEP == 0, "a sweep pass ends on a call's end");

/*
 * e[id]: 0, or expiry tick (bits 32-63) | backend gen (16-31) | MTU (0-15).
 * live_until is a hint for the fast path: no entry outlives it. min_word:
 * learn count (bits 16-63) | the smallest MTU that may be live (0-15, 0: none);
 * a learn lowers it at once, a sweep pass raises it to what it found live if
 * nothing was learned meanwhile.
 */
struct lb_pmtu_table {
	uint32_t live_until;
	uint32_t any;        /* nonzero once something was learned */
	uint32_t age;        /* ticks */
	uint32_t tick_shift; /* a tick is TSC >> tick_shift (for readers off the workers) */
	uint64_t min_word;
	uint32_t walk_tick;  /* the tick walk_spent counts for */
	uint32_t walk_spent; /* entries compared by lb_pmtu_learn() in walk_tick */
	uint64_t e[LB_MAX_BACKENDS];
};

/* One sweeper's place in the table and what its current pass has seen. */
struct lb_pmtu_cursor {
	uint32_t pos;
	uint16_t pass_min;  /* smallest live MTU seen this pass (0: none) */
	uint64_t pass_word; /* min_word as the pass began */
};

enum lb_pmtu_verdict {
	LB_PMTU_NOT_OURS = 0, /* not an MTU error about our own encapsulated packet */
	LB_PMTU_IGNORED,      /* about our packet, but out of bounds or not lower */
	LB_PMTU_LEARNED,      /* lowered the MTU toward that backend */
};

/** A zeroed table whose entries live age_ticks; NULL if out of memory. */
struct lb_pmtu_table *lb_pmtu_create(uint32_t age_ticks);

/** Free a table from lb_pmtu_create() (NULL is fine). */
void lb_pmtu_free(struct lb_pmtu_table *t);

/** Whether an expiry tick is still ahead of now (wrap-safe within 2^31 ticks). */
static inline int
lb_pmtu_ahead(uint32_t until, uint32_t now)
{
	return (int32_t)(until - now) > 0;
}

/**
 * The burst's oversize threshold: mtu while no learned value can be live (the
 * one compare of the fast path is unchanged), else the smallest learned MTU
 * that may be live (min_word), so that only a packet larger than that
 * consults its backend's entry (lb_pmtu_mtu()).
 */
static inline uint16_t
lb_pmtu_gate(const struct lb_pmtu_table *t, uint16_t mtu, uint32_t now)
{
	uint16_t m;

	if (t == NULL || __atomic_load_n(&t->any, __ATOMIC_RELAXED) == 0 ||
	    !lb_pmtu_ahead(__atomic_load_n(&t->live_until, __ATOMIC_RELAXED), now))
		return mtu;
	m = (uint16_t)__atomic_load_n(&t->min_word, __ATOMIC_RELAXED);
	return m != 0 && m < mtu ? m : mtu;
}

/** The effective MTU toward backend id bid of s: a live learned value below mtu, else mtu. */
static inline uint16_t
lb_pmtu_mtu(const struct lb_pmtu_table *t, const struct lb_snapshot *s, uint16_t bid, uint16_t mtu,
            uint32_t now)
{
	uint64_t e;
	uint16_t m;

	if (t == NULL || bid >= s->n_backends)
		return mtu;
	e = __atomic_load_n(&t->e[bid], __ATOMIC_RELAXED);
	m = (uint16_t)e;
	if (m == 0 || m >= mtu || (uint16_t)(e >> 16) != s->backends[bid].gen ||
	    !lb_pmtu_ahead((uint32_t)(e >> 32), now))
		return mtu;
	return m;
}

/**
 * Lower the MTU toward every backend id of s with address (af, addr) to mtu
 * (the outer packet's MTU the ICMP error reported).
 *
 * Compares at most about LB_PMTU_WALK_BUDGET backend entries per tick over
 * all callers: a call past the budget learns nothing.
 *
 * @return LB_PMTU_LEARNED; LB_PMTU_IGNORED if mtu is below LB_PMTU_MIN4 /
 *   LB_PMTU_MIN6, not below the current effective MTU, no backend has addr,
 *   or the tick's budget is spent.
 */
enum lb_pmtu_verdict lb_pmtu_learn(struct lb_pmtu_table *t, const struct lb_snapshot *s, uint8_t af,
                                   const union lb_ip *addr, uint32_t mtu, uint32_t now);

/**
 * Judge a frame (Ethernet, with any VLAN tags) of len contiguous bytes: an
 * IPv4 ICMP type 3 code 4 or ICMPv6 type 2 to encap.src4/src6 that quotes an
 * outer packet from that source to a backend of s, IPIP (4), IPv6-in-IP (41)
 * or UDP to encap.gue_port, is learned from (lb_pmtu_learn()).
 */
enum lb_pmtu_verdict lb_pmtu_icmp(struct lb_pmtu_table *t, const struct lb_snapshot *s,
                                  const uint8_t *frame, uint32_t len, uint32_t now);

/**
 * Clear up to LB_PMTU_SWEEP expired entries from c->pos on, so that none
 * outlives 2^31 ticks and comes back to life when the tick counter wraps; at
 * the end of a pass over the table, publish the smallest live MTU it saw as
 * min_word's, unless something was learned during the pass.
 */
void lb_pmtu_sweep(struct lb_pmtu_table *t, struct lb_pmtu_cursor *c, uint32_t now);

#endif /* LB_PMTU_H */
