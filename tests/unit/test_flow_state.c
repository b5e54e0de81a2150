/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the TCP-aware flow state (flow_state.h) and the new-flow rate
 * guard (flow_guard.h): a SYN flood does not evict an established entry, RST
 * and FIN shorten an entry's life, unconfirmed entries expire early, the guard
 * admits its burst then its rate; and the evictions of the 4-way buckets
 * against occupancy, measured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/flow_state.h"
#include "../support/rng.h"

#define FULL 100000u
#define SYN 50u
#define CLOSING 70u
#define ACK_PSH 0x18

struct env {
	struct lb_worker w;
	struct lb_core_counters cnt;
};

static int
setup(void **state)
{
	struct env *v = aligned_alloc(64, sizeof(*v));

	if (v == NULL)
		return -1;
	memset(v, 0, sizeof(*v));
	v->w.ft = lb_flow_table_create(64);
	v->w.cnt = &v->cnt;
	v->w.now = 1000;
	v->w.tcp_idle = v->w.udp_idle = FULL;
	v->w.syn_idle = SYN;
	v->w.closing_idle = CLOSING;
	*state = v;
	return v->w.ft == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	struct env *v = *state;

	lb_flow_table_free(v->w.ft);
	free(v);
	return 0;
}

/* One packet of flow sig with flags f, as the pipeline handles it: hit or admit. */
static void
packet(struct env *v, uint64_t sig, uint8_t f, uint16_t bid)
{
	struct lb_flow_entry *e = lb_flow_lookup(v->w.ft, sig, v->w.now);

	if (e != NULL)
		lb_flow_refresh(e, v->w.now, f, FULL, SYN, CLOSING);
	else
		lb_flow_admit(&v->w, sig, f, bid, 1);
}

static void
test_flow_state_syn_flood_keeps_established(void **state)
{
	struct env *v = *state;
	uint64_t rng = 77, est = lb_flow_sig(0xabcdef12345ULL);
	struct lb_flow_entry *e;

	packet(v, est, LB_TCP_SYN, 3);
	v->w.now++;
	packet(v, est, LB_TCP_ACK, 3); /* the handshake's ACK confirms */
	assert_int_equal(lb_flow_lookup(v->w.ft, est, v->w.now)->state, LB_FLOW_ESTABLISHED);
	for (int i = 0; i < 400; i++)
		packet(v, lb_flow_sig(rng_next(&rng)), LB_TCP_SYN, 9);
	e = lb_flow_lookup(v->w.ft, est, v->w.now);
	assert_non_null(e);
	assert_int_equal(e->backend, 3);
	/* 400 new flows in 64 ways, one established: most were turned away or
	 * replaced other new entries, none replaced the established one. */
	assert_true(v->cnt.flow_evictions >= 400 - 63);
	/* Its bucket kept it; the three other ways hold new entries. */
	assert_int_equal(lb_flow_table_count(v->w.ft, v->w.now), 64);
	/* The flood's entries are gone after syn_idle, the connection is not. */
	v->w.now += SYN;
	assert_int_equal(lb_flow_table_count(v->w.ft, v->w.now), 1);
}

static void
test_flow_state_all_established_bucket_turns_away(void **state)
{
	struct env *v = *state;
	uint64_t s[5];

	for (int i = 0; i < 5; i++)
		s[i] = ((uint64_t)(i + 1) << 8) | 5; /* bucket 5 of 16 */
	for (int i = 0; i < 4; i++) {
		packet(v, s[i], ACK_PSH, (uint16_t)i);
		packet(v, s[i], ACK_PSH, (uint16_t)i);
	}
	packet(v, s[4], LB_TCP_SYN, 4);
	assert_null(lb_flow_lookup(v->w.ft, s[4], v->w.now));
	assert_int_equal(v->cnt.flow_unpinned, 1);
	assert_int_equal(v->cnt.flow_evictions, 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(lb_flow_lookup(v->w.ft, s[i], v->w.now)->backend, i);
}

/* Lifetimes per the model: new → SYN, established → FULL, FIN/RST → CLOSING. */
static void
test_flow_state_lifetimes(void **state)
{
	struct env *v = *state;
	uint64_t a = lb_flow_sig(0x1111ULL << 8), b = lb_flow_sig(0x2222ULL << 8);
	const uint32_t t0 = v->w.now;

	packet(v, a, LB_TCP_SYN, 1);
	assert_int_equal(lb_flow_lookup(v->w.ft, a, t0)->expires, t0 + SYN);
	packet(v, a, LB_TCP_SYN, 1); /* a retransmitted SYN confirms nothing */
	assert_int_equal(lb_flow_lookup(v->w.ft, a, t0)->state, LB_FLOW_NEW);
	assert_null(lb_flow_lookup(v->w.ft, a, t0 + SYN)); /* unconfirmed: expires early */

	packet(v, b, ACK_PSH, 2);
	packet(v, b, ACK_PSH, 2);
	assert_int_equal(lb_flow_lookup(v->w.ft, b, t0)->expires, t0 + FULL);
	v->w.now = t0 + 10;
	packet(v, b, LB_TCP_RST | LB_TCP_ACK, 2); /* RST shortens */
	assert_int_equal(lb_flow_lookup(v->w.ft, b, v->w.now)->state, LB_FLOW_CLOSING);
	assert_int_equal(lb_flow_lookup(v->w.ft, b, v->w.now)->expires, t0 + 10 + CLOSING);
	packet(v, b, LB_TCP_ACK, 2); /* closing stays closing */
	assert_int_equal(lb_flow_lookup(v->w.ft, b, v->w.now)->expires, t0 + 10 + CLOSING);
	assert_null(lb_flow_lookup(v->w.ft, b, t0 + 10 + CLOSING));
	/* A FIN to a flow never seen: a closing entry. */
	packet(v, a, LB_TCP_FIN | LB_TCP_ACK, 1);
	assert_int_equal(lb_flow_lookup(v->w.ft, a, v->w.now)->state, LB_FLOW_CLOSING);
}

/* rate 1000/s on a 1000-tick/s clock with a burst of 10. */
static void
test_flow_state_guard(void **state)
{
	struct lb_flow_guard g;
	unsigned int ok = 0;

	(void)state;
	lb_flow_guard_init(&g, 1000, 10, 1000, 0);
	for (int i = 0; i < 50; i++)
		ok += lb_flow_guard_take(&g, 5);
	assert_int_equal(ok, 10);
	ok = 0;
	for (uint32_t t = 6; t < 106; t++)
		for (int i = 0; i < 3; i++)
			ok += lb_flow_guard_take(&g, t);
	assert_int_equal(ok, 100); /* one per tick */
	lb_flow_guard_init(&g, 0, 10, 1000, 0);
	for (int i = 0; i < 1000; i++)
		assert_true(lb_flow_guard_take(&g, 0));
}

/*
 * Measurement: N established flows (two packets each) in a table of C ways
 * with 4-way buckets; how many find no way (flow_unpinned, formerly an
 * eviction of another live flow) against occupancy N / C. Reported, and
 * bounded by balls into bins: a flow is left out only when its bucket already
 * holds 4.
 */
static void
test_flow_state_overflow_vs_occupancy(void **state)
{
	static const unsigned int pct[] = {1, 3, 7, 12, 25, 50};
	const uint32_t cap = 1u << 18;

	(void)state;
	for (size_t k = 0; k < sizeof(pct) / sizeof(pct[0]); k++) {
		struct env *v;
		uint64_t rng = 12345 + k;
		uint32_t n = cap / 100 * pct[k];

		setup((void **)&v);
		lb_flow_table_free(v->w.ft);
		v->w.ft = lb_flow_table_create(cap);
		assert_non_null(v->w.ft);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t s = lb_flow_sig(rng_next(&rng));

			packet(v, s, ACK_PSH, 1);
			packet(v, s, ACK_PSH, 1);
		}
		print_message(
		        "4-way, %u entries, %u%% occupancy: %u flows of %u unpinned (%.3f%%)\n",
		        cap, pct[k], (unsigned int)v->cnt.flow_unpinned, n,
		        100.0 * (double)v->cnt.flow_unpinned / n);
		if (pct[k] <= 7)
			assert_true(v->cnt.flow_unpinned * 1000 <= n);
		teardown((void **)&v);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_flow_state_syn_flood_keeps_established, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_flow_state_all_established_bucket_turns_away,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_flow_state_lifetimes, setup, teardown),
	        cmocka_unit_test(test_flow_state_guard),
	        cmocka_unit_test(test_flow_state_overflow_vs_occupancy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
