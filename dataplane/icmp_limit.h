/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rules for generated ICMP errors: a per-core token bucket (RFC 4443
 * §2.4(f), RFC 1812 §4.3.2.8), the packets that must never be answered
 * (RFC 1812 §4.3.2.7, RFC 4443 §2.4(e)) and the martian sources whose packets
 * are neither forwarded nor answered (RFC 1812 §5.3.7, RFC 4291 §2.5.2-2.7).
 * Per-packet code: no locks, no allocation, time in the worker's ticks.
 */
#ifndef LB_ICMP_LIMIT_H
#define LB_ICMP_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/hash.h"
#include "dataplane/parse.h"

#define LB_ICMP_DEFAULT_RATE 1000 /* errors per second per core */
#define LB_ICMP_DEFAULT_BURST 50  /* bucket depth per core */
#define LB_ICMP_MAX_RATE 1000000
#define LB_ICMP_MAX_BURST 1000000

/*
 * A token bucket counted in exact integers: one token is ticks_per_s units,
 * each tick adds rate units, the bucket holds at most burst tokens. rate 0
 * (a zeroed struct, never configured) means no limit.
 */
struct lb_icmp_limit {
	uint64_t credit; /* units in the bucket */
	uint64_t cap;    /* burst * cost */
	uint64_t cost;   /* units per token: ticks per second */
	uint32_t rate;   /* units added per tick: tokens per second */
	uint32_t last;   /* tick of the last refill */
};

/**
 * Set up a full bucket of burst tokens refilled at rate_per_s, in ticks of
 * ticks_per_s, starting at tick now.
 *
 * @return 0, or -EINVAL if rate_per_s, burst or ticks_per_s is 0 or a rate or
 *   burst is above LB_ICMP_MAX_RATE / LB_ICMP_MAX_BURST.
 */
int lb_icmp_limit_init(struct lb_icmp_limit *l, uint32_t rate_per_s, uint32_t burst,
                       uint64_t ticks_per_s, uint32_t now);

/**
 * Take one token at tick now (ticks wrap: the elapsed time is now - last,
 * modulo 2^32). True if the error may be sent.
 */
static inline bool
lb_icmp_limit_take(struct lb_icmp_limit *l, uint32_t now)
{
	uint64_t elapsed = (uint32_t)(now - l->last);

	if (l->rate == 0)
		return true;
	l->last = now;
	/* elapsed < 2^32 and rate <= 10^6: the product fits in 64 bits. */
	l->credit += elapsed * l->rate;
	if (l->credit > l->cap)
		l->credit = l->cap;
	if (l->credit < l->cost)
		return false;
	l->credit -= l->cost;
	return true;
}

/**
 * Whether a source address is martian: IPv4 0/8, 127/8, 224/4 (multicast) and
 * 240/4 (reserved, including 255.255.255.255); IPv6 ::, ::1 and ff00::/8.
 */
static inline bool
lb_icmp_martian_src(const struct lb_flow_key *k)
{
	if (k->af == LB_AF_INET) {
		uint8_t b = k->src.b[0];

		return b == 0 || b == 127 || b >= 224;
	}
	if (k->src.b[0] == 0xFF)
		return true;
	/* :: or ::1: fifteen zero bytes, then 0 or 1. */
	return k->src.q[0] == 0 && k->src.w[2] == 0 && k->src.b[12] == 0 && k->src.b[13] == 0 &&
	       k->src.b[14] == 0 && k->src.b[15] <= 1;
}

/**
 * Whether an ICMP error may be generated about a packet: not about an ICMP
 * error, not about a non-first fragment, not about a frame sent to a
 * link-layer multicast or broadcast address (eth_dst: the frame's destination
 * MAC), not about a packet to an IP multicast or broadcast address, never to a
 * martian source.
 */
bool lb_icmp_may_answer(const uint8_t *eth_dst, const struct lb_pkt_info *info);

#endif /* LB_ICMP_LIMIT_H */
