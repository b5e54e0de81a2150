/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the rules of generated ICMP errors (dataplane/icmp_limit.h)
 * in lb_pipeline_burst(): the per-core token bucket (RFC 4443 §2.4(f)), no
 * error about an ICMP error, a later fragment or a multicast/broadcast frame
 * (RFC 4443 §2.4(e), RFC 1812 §4.3.2.7), martian sources dropped, and ICMP
 * errors whose quote is no VIP's flow sent to the exception path.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "dataplane/icmp_limit.h"
#include "dataplane/pipeline.h"

#include "pipeline_fixture.h"

#define TPS 1000u /* ticks per second of the tests' clock */

/*
 * The bucket against its definition: burst tokens to start with, rate tokens
 * a second after that, never more than burst held. Expected counts are worked
 * out by hand from those three rules.
 */
static void
test_icmp_limit_bucket(void **state)
{
	struct lb_icmp_limit l;
	unsigned int sent = 0;

	(void)state;
	assert_int_equal(lb_icmp_limit_init(&l, 0, 5, TPS, 0), -EINVAL);
	assert_int_equal(lb_icmp_limit_init(&l, 10, 0, TPS, 0), -EINVAL);
	assert_int_equal(lb_icmp_limit_init(&l, LB_ICMP_MAX_RATE + 1, 5, TPS, 0), -EINVAL);
	assert_int_equal(lb_icmp_limit_init(&l, 10, 5, TPS, 100), 0);
	/* 40 at one instant: the burst of 5. */
	for (int i = 0; i < 40; i++)
		sent += lb_icmp_limit_take(&l, 100);
	assert_int_equal(sent, 5);
	/* 10 per second: one token per 100 ticks, none at 99. */
	assert_false(lb_icmp_limit_take(&l, 199));
	assert_true(lb_icmp_limit_take(&l, 200));
	assert_false(lb_icmp_limit_take(&l, 200));
	/* An hour idle refills the bucket to 5, not to 36,000. */
	sent = 0;
	for (int i = 0; i < 40; i++)
		sent += lb_icmp_limit_take(&l, 200 + 3600u * TPS);
	assert_int_equal(sent, 5);
	/* The tick counter wraps: 100 ticks across the wrap are one token. */
	assert_int_equal(lb_icmp_limit_init(&l, 10, 1, TPS, UINT32_MAX - 49), 0);
	assert_true(lb_icmp_limit_take(&l, UINT32_MAX - 49));
	assert_false(lb_icmp_limit_take(&l, 49));
	assert_true(lb_icmp_limit_take(&l, 50));
	/* A zeroed bucket (never configured) does not limit. */
	memset(&l, 0, sizeof(l));
	for (int i = 0; i < 100; i++)
		assert_true(lb_icmp_limit_take(&l, 0));
}

/* The martian sources of RFC 1812 §5.3.7 and RFC 4291, and some that are not. */
static void
test_icmp_martian_sources(void **state)
{
	static const uint8_t v4[][4] = {{0, 0, 0, 0},        {0, 1, 2, 3},       {127, 0, 0, 1},
	                                {224, 0, 0, 1},      {239, 255, 255, 1}, {240, 0, 0, 1},
	                                {255, 255, 255, 255}};
	static const uint8_t ok4[][4] = {{1, 0, 0, 0},
	                                 {126, 255, 255, 255},
	                                 {128, 0, 0, 1},
	                                 {223, 255, 255, 255},
	                                 {198, 18, 0, 1}};
	static const char *const v6[] = {"::", "::1", "ff02::1", "ff0e::1:2"};
	static const char *const ok6[] = {"::2", "2001:db8::1", "fe80::1", "::ffff:1.2.3.4",
	                                  "100::1"};
	struct lb_flow_key k;

	(void)state;
	for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		memset(&k, 0, sizeof(k));
		k.af = LB_AF_INET;
		memcpy(k.src.b, v4[i], 4);
		assert_true(lb_icmp_martian_src(&k));
	}
	for (size_t i = 0; i < sizeof(ok4) / sizeof(ok4[0]); i++) {
		memset(&k, 0, sizeof(k));
		k.af = LB_AF_INET;
		memcpy(k.src.b, ok4[i], 4);
		assert_false(lb_icmp_martian_src(&k));
	}
	for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		memset(&k, 0, sizeof(k));
		k.af = LB_AF_INET6;
		k.src = ip6_addr(v6[i]);
		assert_true(lb_icmp_martian_src(&k));
	}
	for (size_t i = 0; i < sizeof(ok6) / sizeof(ok6[0]); i++) {
		memset(&k, 0, sizeof(k));
		k.af = LB_AF_INET6;
		k.src = ip6_addr(ok6[i]);
		assert_false(lb_icmp_martian_src(&k));
	}
}

/*
 * 40 oversized DF packets at one instant with a bucket of rate 10/s, burst 5:
 * 5 frag-needed replies, 35 counted icmp_limited; 100 ticks (0.1 s) later one
 * more token.
 */
static void
test_pipeline_icmp_rate_limited(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static struct frame f[40];
	const struct frame *fp[40];
	int fate[40], bid[40];

	assert_int_equal(lb_icmp_limit_init(&fx->w->icmp, 10, 5, TPS, NOW), 0);
	for (uint32_t i = 0; i < 40; i++) {
		struct flow fl = flow4(100 + i);

		build_sized(&f[i], &fl, 1481, true);
		fp[i] = &f[i];
	}
	run_frames(fx, fp, 40, fate, bid);
	assert_int_equal(count_eq(fate, 40, FATE_BACK), 5);
	assert_int_equal(count_eq(fate, 40, FATE_DROP), 35);
	assert_int_equal(c->drops[LB_DROP_ICMP_LIMITED], 35);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(fate[i], FATE_BACK); /* the first five, in order */
	fx->w->now = NOW + 100;
	run_frames(fx, fp, 2, fate, bid);
	assert_int_equal(fate[0], FATE_BACK);
	assert_int_equal(fate[1], FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_ICMP_LIMITED], 36);
}

/* An ICMP error about flow fl grown to l3 bytes (quote padded), DF set for IPv4. */
static void
build_big_icmp_error(struct frame *f, const struct flow *fl, uint32_t l3)
{
	uint8_t *ip;

	build_icmp_error(f, fl);
	ip = f->b + f->l2;
	memset(f->b + f->len, 0x5A, l3 - f->l3);
	f->len += l3 - f->l3;
	f->l3 = l3;
	if (fl->af == LB_AF_INET) {
		wr16(ip + 2, (uint16_t)l3);
		wr16(ip + 6, IP4_DF);
	} else {
		wr16(ip + 4, (uint16_t)(l3 - 40));
	}
}

/*
 * No ICMP error about an ICMP error (RFC 4443 §2.4(e.1), RFC 1812 §4.3.2.7),
 * a non-first fragment, or a frame sent to a broadcast or multicast MAC: each
 * is too big, dropped as such, never answered.
 */
static void
test_pipeline_icmp_never_answered(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl4 = flow4(7), fl6 = flow6(7);
	struct frame f;

	/* The flows exist, so the errors are about VIP flows. */
	build(&f, &fl4, 10, IP4_DF, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);
	build(&f, &fl6, 10, 0, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);

	build_big_icmp_error(&f, &fl6, 1460);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	build_big_icmp_error(&f, &fl4, 1481);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->icmp_errors, 2);
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 2);

	build_frag(&f, &fl6, 200, true, 1460); /* a later fragment */
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	build_frag(&f, &fl6, 0, true, 1460); /* the first fragment is answered */
	assert_int_equal(run_one(fx, &f, NULL), FATE_BACK);
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 3);

	/* Group MACs reach the ICMP rules only with the destination MAC check off. */
	fx->w->check_dst_mac = false;
	build_sized(&f, &fl4, 1481, true);
	memset(f.b, 0xFF, 6); /* to the broadcast MAC */
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	f.b[0] = 0x01; /* to a multicast MAC: 01:ff:ff:ff:ff:ff */
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 5);
	assert_int_equal(c->drops[LB_DROP_ICMP_LIMITED], 0);
}

/*
 * Packets to a VIP from martian sources are dropped and counted, oversized
 * ones too (never answered); from a martian source to no VIP they stay on the
 * exception path (the host's own traffic, such as DHCP).
 */
static void
test_pipeline_martian_dropped(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static const uint8_t v4[][4] = {{0, 0, 0, 0},   {0, 9, 9, 9},   {127, 0, 0, 1},
	                                {224, 0, 0, 5}, {240, 1, 2, 3}, {255, 255, 255, 255}};
	static const char *const v6[] = {"::", "::1", "ff02::1"};
	unsigned int n = 0;
	struct frame f;

	fx->w->has_exception = true;
	for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		struct flow fl = flow4(30);

		memcpy(fl.src.b, v4[i], 4);
		build(&f, &fl, 10, IP4_DF, false);
		assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
		build_sized(&f, &fl, 1481, true);
		assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
		n += 2;
	}
	for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		struct flow fl = flow6(30);

		fl.src = ip6_addr(v6[i]);
		build(&f, &fl, 10, 0, false);
		assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
		build_frag(&f, &fl, 0, true, 100);
		assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
		n += 2;
	}
	assert_int_equal(c->drops[LB_DROP_MARTIAN_SRC], n);
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 0);
	{
		struct flow fl = flow4(31);

		fl.src = ip4_addr(0, 0, 0, 0);
		fl.dst = ip4_addr(255, 255, 255, 255);
		fl.proto = PROTO_UDP;
		fl.sport = 68;
		fl.dport = 67;
		build(&f, &fl, 40, 0, false);
		assert_int_equal(run_one(fx, &f, NULL), FATE_EXC);
	}
	assert_int_equal(c->drops[LB_DROP_MARTIAN_SRC], n);
	/* A well-formed source still goes through. */
	{
		struct flow fl = flow4(32);

		build(&f, &fl, 10, IP4_DF, false);
		assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);
	}
}

/*
 * ICMP errors that name no VIP flow are not ours: a quote from an address no
 * VIP has, a quote of an ICMP echo, a quote cut before its ports, an ICMP
 * header cut short. With an exception port they go there, without one they are
 * no_vip; never icmp_malformed or icmp_trunc.
 */
static void
test_pipeline_icmp_not_ours(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl = flow4(40);
	struct frame f[4];
	const struct frame *fp[4] = {&f[0], &f[1], &f[2], &f[3]};
	int fate[4], bid[4];
	uint8_t *ip, *q;

	/* 0: quoted packet from 192.0.2.99 (no VIP there). */
	{
		struct flow other = fl;

		other.dst = ip4_addr(192, 0, 2, 99);
		build_icmp_error(&f[0], &other);
	}
	/* 1: the quote is an ICMP echo reply from the VIP. */
	build_icmp_error(&f[1], &fl);
	q = f[1].b + f[1].l2 + 20 + 8;
	q[9] = PROTO_ICMP;
	/* 2: the quote cut after its IP header (no ports). */
	build_icmp_error(&f[2], &fl);
	ip = f[2].b + f[2].l2;
	f[2].len -= 8;
	f[2].l3 -= 8;
	wr16(ip + 2, (uint16_t)f[2].l3);
	/* 3: the ICMP header itself cut to 4 bytes. */
	build_icmp_error(&f[3], &fl);
	ip = f[3].b + f[3].l2;
	f[3].len = f[3].l2 + 24;
	f[3].l3 = 24;
	wr16(ip + 2, 24);

	fx->w->has_exception = true;
	run_frames(fx, fp, 4, fate, bid);
	assert_int_equal(count_eq(fate, 4, FATE_EXC), 4);
	fx->w->has_exception = false;
	run_frames(fx, fp, 4, fate, bid);
	assert_int_equal(count_eq(fate, 4, FATE_DROP), 4);
	assert_int_equal(c->drops[LB_DROP_NO_VIP], 4);
	assert_int_equal(c->drops[LB_DROP_ICMP_MALFORMED], 0);
	assert_int_equal(c->drops[LB_DROP_ICMP_TRUNC], 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_icmp_limit_bucket),
	        cmocka_unit_test(test_icmp_martian_sources),
	        T(test_pipeline_icmp_rate_limited),
	        T(test_pipeline_icmp_never_answered),
	        T(test_pipeline_martian_dropped),
	        T(test_pipeline_icmp_not_ours),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
