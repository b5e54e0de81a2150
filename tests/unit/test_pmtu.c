/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The path MTU table (pmtu.h) on a hand-made snapshot: the bounds of RFC 1191
 * and RFC 8201, ageing, a backend id reused by another membership, and the
 * parsing of frag-needed / Packet Too Big errors about our own packets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/pmtu.h"

#define AGE 1000u
#define NOW 5000u

static struct lb_backend g_be[3];
static struct lb_snapshot g_s;

static void
snap_init(void)
{
	memset(g_be, 0, sizeof(g_be));
	memset(&g_s, 0, sizeof(g_s));
	for (int i = 0; i < 2; i++) {
		g_be[i].af = LB_AF_INET;
		g_be[i].gen = 1;
		g_be[i].addr.b[0] = 10;
		g_be[i].addr.b[3] = (uint8_t)(i + 1);
	}
	g_be[2].af = LB_AF_INET6;
	g_be[2].gen = 1;
	g_be[2].addr.b[0] = 0xfd;
	g_be[2].addr.b[15] = 1;
	g_s.backends = g_be;
	g_s.n_backends = 3;
	g_s.encap.mtu = 1500;
	g_s.encap.has_src4 = true;
	g_s.encap.has_src6 = true;
	g_s.encap.src4.b[0] = 10;
	g_s.encap.src4.b[3] = 100;
	g_s.encap.src6.b[0] = 0xfd;
	g_s.encap.src6.b[15] = 0x64;
	g_s.encap.gue_port = (uint16_t)(6080 >> 8 | (6080 & 0xFF) << 8);
}

static void
test_pmtu_bounds(void **state)
{
	struct lb_pmtu_table *t = lb_pmtu_create(AGE);

	(void)state;
	snap_init();
	assert_non_null(t);
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW), 1500); /* nothing learned */
	/* RFC 1191 §3 / RFC 8201 §4: below 576 (IPv4) or 1280 (IPv6) is ignored. */
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[0].addr, 575, NOW),
	                 LB_PMTU_IGNORED);
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET6, &g_be[2].addr, 1279, NOW),
	                 LB_PMTU_IGNORED);
	/* not below encap.mtu: ignored */
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[0].addr, 1500, NOW),
	                 LB_PMTU_IGNORED);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 0, 1500, NOW), 1500);
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[0].addr, 576, NOW),
	                 LB_PMTU_LEARNED);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 0, 1500, NOW), 576);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 1, 1500, NOW), 1500); /* another address */
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW), 576);
	/* a higher report does not raise it */
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[0].addr, 1400, NOW),
	                 LB_PMTU_IGNORED);
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET6, &g_be[2].addr, 1280, NOW),
	                 LB_PMTU_LEARNED);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 2, 1500, NOW), 1280);
	/* no backend with the address */
	union lb_ip none = g_be[0].addr;
	none.b[3] = 77;
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &none, 1400, NOW), LB_PMTU_IGNORED);
	lb_pmtu_free(t);
}

static void
test_pmtu_ages_and_sweeps(void **state)
{
	struct lb_pmtu_table *t = lb_pmtu_create(AGE);
	struct lb_pmtu_cursor cursor = {0};

	(void)state;
	snap_init();
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[1].addr, 1400, NOW),
	                 LB_PMTU_LEARNED);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 1, 1500, NOW + AGE - 1), 1400);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 1, 1500, NOW + AGE), 1500);
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW + AGE), 1500);
	/* once swept, the entry cannot come back when the tick counter wraps */
	for (uint32_t i = 0; i < LB_MAX_BACKENDS / LB_PMTU_SWEEP; i++)
		lb_pmtu_sweep(t, &cursor, NOW + AGE);
	assert_int_equal(t->e[1], 0);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 1, 1500, NOW + AGE + (1u << 31) + 5), 1500);
	lb_pmtu_free(t);
}

/*
 * The burst's threshold is the smallest learned MTU that may be live: a packet
 * no larger than that never looks its backend's entry up. Reference values:
 * the MTUs the test itself fed in.
 */
static void
test_pmtu_gate_smallest(void **state)
{
	struct lb_pmtu_table *t = lb_pmtu_create(AGE);
	struct lb_pmtu_cursor c = {0};

	(void)state;
	snap_init();
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[0].addr, 1400, NOW),
	                 LB_PMTU_LEARNED);
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW), 1400);
	assert_int_equal(lb_pmtu_gate(t, 1300, NOW), 1300); /* never above mtu */
	/* a lower value, then a higher one that lives longer */
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[1].addr, 1200, NOW + 5),
	                 LB_PMTU_LEARNED);
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW + 5), 1200);
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET6, &g_be[2].addr, 1300, NOW + 10),
	                 LB_PMTU_LEARNED);
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW + 10), 1200);
	/* the lower ones expire: a full sweep pass publishes what is left */
	for (uint32_t i = 0; i < LB_MAX_BACKENDS / LB_PMTU_SWEEP; i++)
		lb_pmtu_sweep(t, &c, NOW + AGE + 6); /* 0 and 1 expired, 2 lives */
	assert_int_equal(c.pos, 0);
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW + AGE + 6), 1300);
	/* a learn during a pass keeps that pass from raising the threshold */
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[0].addr, 1350, NOW + AGE + 7),
	                 LB_PMTU_LEARNED);
	lb_pmtu_sweep(t, &c, NOW + AGE + 7);
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[1].addr, 1250, NOW + AGE + 7),
	                 LB_PMTU_LEARNED);
	for (uint32_t i = 1; i < LB_MAX_BACKENDS / LB_PMTU_SWEEP; i++)
		lb_pmtu_sweep(t, &c, NOW + AGE + 8);
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW + AGE + 8), 1250);
	/* everything expired: the threshold is mtu again */
	for (uint32_t i = 0; i < LB_MAX_BACKENDS / LB_PMTU_SWEEP; i++)
		lb_pmtu_sweep(t, &c, NOW + 3 * AGE);
	assert_int_equal(lb_pmtu_gate(t, 1500, NOW + 3 * AGE), 1500);
	lb_pmtu_free(t);
}

/*
 * Errors that walk the backends are bounded per tick: with more backends than
 * the budget, one walk per tick; the next tick walks again.
 */
static void
test_pmtu_walk_budget(void **state)
{
	static struct lb_backend many[LB_PMTU_WALK_BUDGET];
	struct lb_pmtu_table *t = lb_pmtu_create(AGE);
	uint32_t learned = 0;

	(void)state;
	snap_init();
	for (uint32_t i = 0; i < LB_PMTU_WALK_BUDGET; i++) {
		many[i].af = LB_AF_INET;
		many[i].gen = 1;
		many[i].addr.b[0] = 10;
		many[i].addr.b[2] = (uint8_t)(i >> 8);
		many[i].addr.b[3] = (uint8_t)i;
	}
	g_s.backends = many;
	g_s.n_backends = LB_PMTU_WALK_BUDGET;
	/* 100 valid errors in one tick, each lower than the one before: one walks */
	for (uint32_t k = 0; k < 100; k++)
		learned += lb_pmtu_learn(t, &g_s, LB_AF_INET, &many[k].addr, 1400 - k, NOW) ==
		           LB_PMTU_LEARNED;
	assert_int_equal(learned, 1);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 0, 1500, NOW), 1400);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 1, 1500, NOW), 1500);
	/* the next tick has a budget again */
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &many[1].addr, 1399, NOW + 1),
	                 LB_PMTU_LEARNED);
	/* with few backends, many walks fit in a tick */
	g_s.n_backends = 8;
	learned = 0;
	for (uint32_t k = 0; k < 8; k++)
		learned += lb_pmtu_learn(t, &g_s, LB_AF_INET, &many[k].addr, 1300, NOW + 2) ==
		           LB_PMTU_LEARNED;
	assert_int_equal(learned, 8);
	lb_pmtu_free(t);
}

/* A backend id taken by another membership (gen bumped) does not inherit the MTU. */
static void
test_pmtu_id_reuse(void **state)
{
	struct lb_pmtu_table *t = lb_pmtu_create(AGE);

	(void)state;
	snap_init();
	assert_int_equal(lb_pmtu_learn(t, &g_s, LB_AF_INET, &g_be[0].addr, 1400, NOW),
	                 LB_PMTU_LEARNED);
	g_be[0].gen = 2;
	g_be[0].addr.b[3] = 50;
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 0, 1500, NOW), 1500);
	lb_pmtu_free(t);
}

/* frame: Ethernet + IPv4 ICMP 3/4 (or IPv6 ICMPv6 2) quoting an outer packet. */
static uint32_t
mk_icmp(uint8_t *b, uint8_t af, const union lb_ip *qsrc, const union lb_ip *qdst, uint8_t proto,
        uint16_t dport, uint32_t mtu)
{
	uint8_t *ip = b + 14, *icmp, *q;
	uint32_t qh = af == LB_AF_INET ? 20 : 40;

	memset(b, 0, 200);
	if (af == LB_AF_INET) {
		b[12] = 0x08;
		ip[0] = 0x45;
		ip[9] = 1;
		memcpy(ip + 16, g_s.encap.src4.b, 4);
		icmp = ip + 20;
		icmp[0] = 3;
		icmp[1] = 4;
		icmp[6] = (uint8_t)(mtu >> 8);
		icmp[7] = (uint8_t)mtu;
		q = icmp + 8;
		q[0] = 0x45;
		q[9] = proto;
		memcpy(q + 12, qsrc->b, 4);
		memcpy(q + 16, qdst->b, 4);
	} else {
		b[12] = 0x86;
		b[13] = 0xDD;
		ip[0] = 0x60;
		ip[6] = 58;
		memcpy(ip + 24, g_s.encap.src6.b, 16);
		icmp = ip + 40;
		icmp[0] = 2;
		icmp[4] = (uint8_t)(mtu >> 24);
		icmp[5] = (uint8_t)(mtu >> 16);
		icmp[6] = (uint8_t)(mtu >> 8);
		icmp[7] = (uint8_t)mtu;
		q = icmp + 8;
		q[0] = 0x60;
		q[6] = proto;
		memcpy(q + 8, qsrc->b, 16);
		memcpy(q + 24, qdst->b, 16);
	}
	memcpy(q + qh + 2, &dport, 2);
	return (uint32_t)(q + qh + 8 - b);
}

static void
test_pmtu_icmp_parse(void **state)
{
	struct lb_pmtu_table *t = lb_pmtu_create(AGE);
	uint8_t b[200];
	uint32_t n;

	(void)state;
	snap_init();
	/* GUE to another port: not ours */
	n = mk_icmp(b, LB_AF_INET, &g_s.encap.src4, &g_be[0].addr, 17, 53, 1400);
	assert_int_equal(lb_pmtu_icmp(t, &g_s, b, n, NOW), LB_PMTU_NOT_OURS);
	/* GUE to gue_port: ours */
	n = mk_icmp(b, LB_AF_INET, &g_s.encap.src4, &g_be[0].addr, 17, g_s.encap.gue_port, 1400);
	assert_int_equal(lb_pmtu_icmp(t, &g_s, b, n, NOW), LB_PMTU_LEARNED);
	/* cut before the UDP ports: not ours */
	assert_int_equal(lb_pmtu_icmp(t, &g_s, b, n - 6, NOW), LB_PMTU_NOT_OURS);
	/* IPv6-in-IPv4 quote (41), MTU 0 of an RFC 792 router: ignored */
	n = mk_icmp(b, LB_AF_INET, &g_s.encap.src4, &g_be[1].addr, 41, 0, 0);
	assert_int_equal(lb_pmtu_icmp(t, &g_s, b, n, NOW), LB_PMTU_IGNORED);
	/* IPv6 PTB, 32-bit MTU field */
	n = mk_icmp(b, LB_AF_INET6, &g_s.encap.src6, &g_be[2].addr, 4, 0, 1300);
	assert_int_equal(lb_pmtu_icmp(t, &g_s, b, n, NOW), LB_PMTU_LEARNED);
	assert_int_equal(lb_pmtu_mtu(t, &g_s, 2, 1500, NOW), 1300);
	/* quoted source not ours */
	n = mk_icmp(b, LB_AF_INET6, &g_be[2].addr, &g_be[2].addr, 4, 0, 1290);
	assert_int_equal(lb_pmtu_icmp(t, &g_s, b, n, NOW), LB_PMTU_NOT_OURS);
	lb_pmtu_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_pmtu_bounds),
	        cmocka_unit_test(test_pmtu_ages_and_sweeps),
	        cmocka_unit_test(test_pmtu_gate_smallest),
	        cmocka_unit_test(test_pmtu_walk_budget),
	        cmocka_unit_test(test_pmtu_id_reuse),
	        cmocka_unit_test(test_pmtu_icmp_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
