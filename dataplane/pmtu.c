/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Learning the path MTU toward backends from ICMP errors about our own
 * encapsulated packets, and ageing it out. Pure code over bytes and the shared
 * table: relaxed atomic loads and stores only, no locks, no allocation.
 */
#include <stdbool.h>
#include <string.h>

#include "dataplane/pmtu.h"

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define IP4_HLEN 20
#define IP6_HLEN 40
#define ICMP_HLEN 8
#define PROTO_ICMP 1
#define PROTO_IPIP 4
#define PROTO_UDP 17
#define PROTO_IPV6 41
#define PROTO_ICMPV6 58

static inline uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Whether a walk over n entries may start at tick now: walk_spent counts the
 * entries walks started in walk_tick. Relaxed and approximate under races
 * between workers (a few walks more or less), which is all a bound needs.
 */
static bool
walk_allowed(struct lb_pmtu_table *t, uint32_t n, uint32_t now)
{
	uint32_t spent;

	if (__atomic_load_n(&t->walk_tick, __ATOMIC_RELAXED) != now) {
		__atomic_store_n(&t->walk_tick, now, __ATOMIC_RELAXED);
		__atomic_store_n(&t->walk_spent, 0, __ATOMIC_RELAXED);
	}
	spent = __atomic_fetch_add(&t->walk_spent, n != 0 ? n : 1, __ATOMIC_RELAXED);
	return spent < LB_PMTU_WALK_BUDGET;
}

/* min_word's MTU down to mtu at once, and the learn counted (sweep passes see it). */
static void
min_lower(struct lb_pmtu_table *t, uint16_t mtu)
{
	uint64_t old = __atomic_load_n(&t->min_word, __ATOMIC_RELAXED), nw;

	do {
		uint16_t cur = (uint16_t)old;

		nw = ((old >> 16) + 1) << 16 | (cur == 0 || mtu < cur ? mtu : cur);
	} while (!__atomic_compare_exchange_n(&t->min_word, &old, nw, false, __ATOMIC_RELEASE,
	                                      __ATOMIC_RELAXED));
}

enum lb_pmtu_verdict
lb_pmtu_learn(struct lb_pmtu_table *t, const struct lb_snapshot *s, uint8_t af,
              const union lb_ip *addr, uint32_t mtu, uint32_t now)
{
	uint32_t min = af == LB_AF_INET ? LB_PMTU_MIN4 : LB_PMTU_MIN6;
	uint32_t until = now + t->age;
	bool learned = false;

	if (until == 0) /* 0 would read as no expiry set in a fresh table */
		until = 1;
	if (mtu < min || !walk_allowed(t, s->n_backends, now))
		return LB_PMTU_IGNORED;
	for (uint32_t id = 0; id < s->n_backends; id++) {
		const struct lb_backend *b = &s->backends[id];

		if (b->gen == 0 || b->af != af || memcmp(&b->addr, addr, sizeof(*addr)) != 0)
			continue;
		if (mtu >= lb_pmtu_mtu(t, s, (uint16_t)id, s->encap.mtu, now))
			continue;
		__atomic_store_n(&t->e[id],
		                 (uint64_t)until << 32 | (uint64_t)b->gen << 16 | (uint64_t)mtu,
		                 __ATOMIC_RELAXED);
		learned = true;
	}
	if (!learned)
		return LB_PMTU_IGNORED;
	min_lower(t, (uint16_t)mtu);
	__atomic_store_n(&t->live_until, until, __ATOMIC_RELAXED);
	__atomic_store_n(&t->any, 1, __ATOMIC_RELAXED);
	return LB_PMTU_LEARNED;
}

/*
 * Whether the quoted outer packet q (avail bytes) is ours to a backend: from
 * src, protocol IPIP, IPv6-in-IP or UDP to the GUE port. *dst: its destination.
 */
static bool
quote_ours(const uint8_t *q, uint32_t avail, uint8_t af, const union lb_ip *src, uint16_t gue_port,
           union lb_ip *dst)
{
	uint32_t hlen;
	uint8_t proto;

	memset(dst, 0, sizeof(*dst));
	if (af == LB_AF_INET) {
		if (avail < IP4_HLEN || (q[0] >> 4) != 4)
			return false;
		hlen = (uint32_t)(q[0] & 0xF) * 4;
		proto = q[9];
		if (hlen < IP4_HLEN || memcmp(q + 12, src->b, 4) != 0)
			return false;
		memcpy(dst->b, q + 16, 4);
	} else {
		if (avail < IP6_HLEN || (q[0] >> 4) != 6)
			return false;
		hlen = IP6_HLEN;
		proto = q[6];
		if (memcmp(q + 8, src->b, 16) != 0)
			return false;
		memcpy(dst->b, q + 24, 16);
	}
	if (proto == PROTO_IPIP || proto == PROTO_IPV6)
		return true;
	/* GUE: the UDP destination port is in the 8 bytes every quote carries. */
	if (proto != PROTO_UDP || avail < hlen + 4)
		return false;
	return memcmp(q + hlen + 2, &gue_port, 2) == 0;
}

enum lb_pmtu_verdict
lb_pmtu_icmp(struct lb_pmtu_table *t, const struct lb_snapshot *s, const uint8_t *frame,
             uint32_t len, uint32_t now)
{
	const struct lb_encap_conf *ec = &s->encap;
	uint32_t off = ETH_HLEN, mtu;
	const uint8_t *ip, *icmp;
	union lb_ip dst;
	uint16_t type;
	int tags = 0;

	if (t == NULL || len < ETH_HLEN)
		return LB_PMTU_NOT_OURS;
	type = rd16(frame + 12);
	while ((type == 0x8100 || type == 0x88A8) && tags++ < 2 && len >= off + VLAN_HLEN) {
		type = rd16(frame + off + 2);
		off += VLAN_HLEN;
	}
	ip = frame + off;
	if (type == 0x0800 && ec->has_src4) {
		uint32_t hlen;

		if (len < off + IP4_HLEN || (ip[0] >> 4) != 4 || ip[9] != PROTO_ICMP ||
		    memcmp(ip + 16, ec->src4.b, 4) != 0)
			return LB_PMTU_NOT_OURS;
		/* A fragment's quote is not where the header says. */
		if ((rd16(ip + 6) & 0x3FFF) != 0)
			return LB_PMTU_NOT_OURS;
		hlen = (uint32_t)(ip[0] & 0xF) * 4;
		if (hlen < IP4_HLEN || len < off + hlen + ICMP_HLEN)
			return LB_PMTU_NOT_OURS;
		icmp = ip + hlen;
		if (icmp[0] != 3 || icmp[1] != 4) /* RFC 1191 §4: fragmentation needed */
			return LB_PMTU_NOT_OURS;
		if (!quote_ours(icmp + ICMP_HLEN, len - off - hlen - ICMP_HLEN, LB_AF_INET,
		                &ec->src4, ec->gue_port, &dst))
			return LB_PMTU_NOT_OURS;
		mtu = rd16(icmp + 6); /* Next-Hop MTU; 0 from pre-RFC 1191 routers: ignored */
		return lb_pmtu_learn(t, s, LB_AF_INET, &dst, mtu, now);
	}
	if (type == 0x86DD && ec->has_src6) {
		if (len < off + IP6_HLEN + ICMP_HLEN || (ip[0] >> 4) != 6 ||
		    ip[6] != PROTO_ICMPV6 || memcmp(ip + 24, ec->src6.b, 16) != 0)
			return LB_PMTU_NOT_OURS;
		icmp = ip + IP6_HLEN;
		if (icmp[0] != 2 || icmp[1] != 0) /* RFC 4443 §3.2: Packet Too Big */
			return LB_PMTU_NOT_OURS;
		if (!quote_ours(icmp + ICMP_HLEN, len - off - IP6_HLEN - ICMP_HLEN, LB_AF_INET6,
		                &ec->src6, ec->gue_port, &dst))
			return LB_PMTU_NOT_OURS;
		mtu = (uint32_t)rd16(icmp + 4) << 16 | rd16(icmp + 6);
		return lb_pmtu_learn(t, s, LB_AF_INET6, &dst, mtu, now);
	}
	return LB_PMTU_NOT_OURS;
}

void
lb_pmtu_sweep(struct lb_pmtu_table *t, struct lb_pmtu_cursor *c, uint32_t now)
{
	uint32_t pos = c->pos;

	if (pos == 0) {
		/* Acquire pairs with min_lower(): entries learned before are seen. */
		c->pass_word = __atomic_load_n(&t->min_word, __ATOMIC_ACQUIRE);
		c->pass_min = 0;
	}
	for (uint32_t i = 0; i < LB_PMTU_SWEEP; i++, pos++) {
		uint64_t e = __atomic_load_n(&t->e[pos], __ATOMIC_RELAXED);
		uint16_t m = (uint16_t)e;

		if (e == 0)
			continue;
		/* Only an expired value is cleared: a learn in between wins. */
		if (!lb_pmtu_ahead((uint32_t)(e >> 32), now))
			__atomic_compare_exchange_n(&t->e[pos], &e, 0, false, __ATOMIC_RELAXED,
			                            __ATOMIC_RELAXED);
		else if (c->pass_min == 0 || m < c->pass_min)
			c->pass_min = m;
	}
	if (pos == LB_MAX_BACKENDS) {
		/* A learn during the pass changed min_word: this pass's minimum may
		 * miss it, so it is not published (the next pass tries again). */
		uint64_t w = c->pass_word;

		__atomic_compare_exchange_n(&t->min_word, &w, (w & ~(uint64_t)0xFFFF) | c->pass_min,
		                            false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		pos = 0;
	}
	c->pos = pos;
}
