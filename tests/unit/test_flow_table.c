/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the per-core flow table: hits and misses, expiry with the
 * 32-bit tick counter wrapping, entries idle past 2^31 ticks, touch, eviction of the
 * soonest-expiring entry in a full bucket, reuse of expired slots, capacity rounding, the memory
 * layout, and survival of recent flows when the table is oversubscribed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/flow_table.h"
#include "../support/rng.h"

/* Fixture: a 64-entry table (16 buckets) in *state. */
#define SMALL_CAP 64u

static int
setup_small(void **state)
{
	struct lb_flow_table *ft = lb_flow_table_create(SMALL_CAP);

	if (ft == NULL)
		return -1;
	*state = ft;
	return 0;
}

static int
teardown_table(void **state)
{
	lb_flow_table_free(*state);
	return 0;
}

/* The i-th distinct signature that lands in bucket b of ft. */
static uint64_t
sig_in_bucket(const struct lb_flow_table *ft, uint32_t b, uint32_t i)
{
	return ((uint64_t)(i + 1) * (ft->mask + 1)) | b;
}

static void
test_flow_table_layout(void **state)
{
	struct lb_flow_table *ft = *state;

	assert_int_equal(sizeof(struct lb_flow_entry), 16);
	assert_int_equal(sizeof(struct lb_flow_bucket), 64);
	assert_int_equal(alignof(struct lb_flow_bucket), 64);
	assert_int_equal(LB_FLOW_WAYS, 4);
	/* One bucket is one cache line: the array itself must be line-aligned. */
	assert_int_equal((uintptr_t)ft->buckets % 64, 0);
}

struct cap_case {
	const char *name;
	uint32_t requested;
	uint32_t want_buckets;
};

static const struct cap_case cap_cases[] = {
        {"test_flow_table_capacity 1", 1, 1},
        {"test_flow_table_capacity 3", 3, 1},
        {"test_flow_table_capacity 4", 4, 1},
        {"test_flow_table_capacity 5", 5, 2},
        {"test_flow_table_capacity 64", 64, 16},
        {"test_flow_table_capacity 65", 65, 32},
        {"test_flow_table_capacity 1000", 1000, 256},
        {"test_flow_table_capacity 4096", 4096, 1024},
        {"test_flow_table_capacity 4097", 4097, 2048},
        {"test_flow_table_capacity 1048576", 1u << 20, 1u << 18},
        {"test_flow_table_capacity 1048577", (1u << 20) + 1, 1u << 19},
};

#define N_CAP_CASES (sizeof(cap_cases) / sizeof(cap_cases[0]))

static void
test_flow_table_capacity(void **state)
{
	const struct cap_case *c = *state;
	struct lb_flow_table *ft = lb_flow_table_create(c->requested);

	assert_non_null(ft);
	assert_true(lb_flow_table_capacity(ft) >= c->requested);
	/* Power of two, and the smallest one that fits. */
	assert_int_equal(ft->n_buckets & (ft->n_buckets - 1), 0);
	assert_int_equal(ft->n_buckets, c->want_buckets);
	assert_int_equal(ft->mask, ft->n_buckets - 1);
	assert_int_equal(lb_flow_table_capacity(ft), ft->n_buckets * LB_FLOW_WAYS);
	assert_int_equal((uintptr_t)ft->buckets % 64, 0);
	/* Starts empty: every entry zero. */
	for (uint32_t i = 0; i < ft->n_buckets; i++)
		for (int j = 0; j < LB_FLOW_WAYS; j++)
			assert_int_equal(ft->buckets[i].e[j].sig, 0);
	assert_int_equal(lb_flow_table_count(ft, 0), 0);
	lb_flow_table_free(ft);
}

static void
test_flow_table_create_invalid(void **state)
{
	(void)state;
	errno = 0;
	assert_null(lb_flow_table_create(0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(lb_flow_table_create((1u << 30) + 1));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(lb_flow_table_create(UINT32_MAX));
	assert_int_equal(errno, EINVAL);
	lb_flow_table_free(NULL); /* allowed, like free() */
}

static void
test_flow_table_hit(void **state)
{
	struct lb_flow_table *ft = *state;
	uint64_t sig = lb_flow_sig(0x1234567890abcdefULL);
	struct lb_flow_entry *e;

	assert_false(lb_flow_insert(ft, sig, 1000, 300, 42, 7));
	e = lb_flow_lookup(ft, sig, 1000);
	assert_non_null(e);
	assert_int_equal(e->sig, sig);
	assert_int_equal(e->backend, 42);
	assert_int_equal(e->gen, 7);
	assert_int_equal(e->expires, 1300);
	assert_ptr_equal(lb_flow_lookup(ft, sig, 1299), e);
	/* Lookup does not refresh. */
	assert_int_equal(e->expires, 1300);
	assert_int_equal(lb_flow_table_count(ft, 1000), 1);
}

static void
test_flow_table_miss(void **state)
{
	struct lb_flow_table *ft = *state;
	uint64_t a = sig_in_bucket(ft, 5, 0), b = sig_in_bucket(ft, 5, 1);

	assert_null(lb_flow_lookup(ft, a, 0));
	assert_false(lb_flow_insert(ft, a, 0, 100, 1, 1));
	/* Same bucket, different signature; and a different bucket. */
	assert_null(lb_flow_lookup(ft, b, 10));
	assert_null(lb_flow_lookup(ft, sig_in_bucket(ft, 6, 0), 10));
	assert_non_null(lb_flow_lookup(ft, a, 10));
}

/* Re-inserting a live flow (re-pin to another backend) overwrites it in place. */
static void
test_flow_table_reinsert_overwrites(void **state)
{
	struct lb_flow_table *ft = *state;
	uint64_t a = sig_in_bucket(ft, 3, 0);
	struct lb_flow_entry *e;

	assert_false(lb_flow_insert(ft, a, 0, 100, 1, 1));
	assert_false(lb_flow_insert(ft, sig_in_bucket(ft, 3, 1), 0, 100, 2, 1));
	assert_false(lb_flow_insert(ft, a, 50, 100, 9, 3));
	e = lb_flow_lookup(ft, a, 60);
	assert_non_null(e);
	assert_int_equal(e->backend, 9);
	assert_int_equal(e->gen, 3);
	assert_int_equal(e->expires, 150);
	assert_int_equal(lb_flow_table_count(ft, 60), 2);
}

/*
 * Re-pinning a live flow whose bucket has an expired way *before* the flow's
 * own way must overwrite the flow's own way, not leave a stale twin behind.
 */
static void
test_flow_table_reinsert_no_twin(void **state)
{
	struct lb_flow_table *ft = *state;
	uint64_t a = sig_in_bucket(ft, 4, 0), x = sig_in_bucket(ft, 4, 1);
	struct lb_flow_entry *e;

	assert_false(lb_flow_insert(ft, a, 0, 5, 1, 1));    /* way 0, expires at 5 */
	assert_false(lb_flow_insert(ft, x, 0, 100, 2, 1));  /* way 1, expires at 100 */
	assert_false(lb_flow_insert(ft, x, 10, 100, 7, 2)); /* a is expired by now */
	assert_int_equal(lb_flow_table_count(ft, 10), 1);
	e = lb_flow_lookup(ft, x, 10);
	assert_non_null(e);
	assert_int_equal(e->backend, 7);
	assert_int_equal(e->gen, 2);
}

struct expiry_case {
	const char *name;
	uint32_t now;
	uint32_t idle;
};

static const struct expiry_case expiry_cases[] = {
        {"test_flow_table_expiry now=0", 0, 300},
        {"test_flow_table_expiry now=1000", 1000, 30},
        {"test_flow_table_expiry idle=1", 77, 1},
        {"test_flow_table_expiry just below 2^31", 0x7FFFFFF0u, 0x20},
        {"test_flow_table_expiry wraps near UINT32_MAX", UINT32_MAX - 5, 10},
        {"test_flow_table_expiry now=UINT32_MAX", UINT32_MAX, 300000},
        {"test_flow_table_expiry expires exactly 0", UINT32_MAX - 99, 100},
        {"test_flow_table_expiry long idle across wrap", 0xF0000000u, 0x40000000u},
};

#define N_EXPIRY_CASES (sizeof(expiry_cases) / sizeof(expiry_cases[0]))

static void
test_flow_table_expiry(void **state)
{
	const struct expiry_case *c = *state;
	struct lb_flow_table *ft = lb_flow_table_create(SMALL_CAP);
	uint64_t sig = sig_in_bucket(ft, 1, 0);
	uint32_t end = c->now + c->idle; /* wraps on purpose */

	assert_non_null(ft);
	lb_flow_insert(ft, sig, c->now, c->idle, 5, 1);
	assert_non_null(lb_flow_lookup(ft, sig, c->now));
	assert_non_null(lb_flow_lookup(ft, sig, end - 1));
	assert_int_equal(lb_flow_table_count(ft, end - 1), 1);
	/* Expired exactly when now reaches expires, and stays expired. */
	assert_null(lb_flow_lookup(ft, sig, end));
	assert_null(lb_flow_lookup(ft, sig, end + 1));
	assert_null(lb_flow_lookup(ft, sig, end + 1000));
	assert_int_equal(lb_flow_table_count(ft, end), 0);
	assert_int_equal(lb_flow_table_count(ft, end + 12345), 0);
	lb_flow_table_free(ft);
}

/*
 * An entry left idle for longer than half the 32-bit tick range (2^31 ticks,
 * about 25 days of 1 ms ticks) must stay expired: the plain signed comparison
 * of now and expires would see it as live again. The clock advances as a
 * worker's does, one call per loop pass: in steps (the sweep runs) or in one
 * jump (a worker that did not run for that long).
 */
struct wrap_case {
	const char *name;
	uint32_t t0;
	uint32_t step; /* ticks per loop pass; 0 = one jump to the end */
};

static const struct wrap_case wrap_cases[] = {
        {"test_flow_table_idle_past_2^31 jump", 1000, 0},
        {"test_flow_table_idle_past_2^31 jump across wrap", UINT32_MAX - 50, 0},
        {"test_flow_table_idle_past_2^31 steps of 1000", 1000, 1000},
        {"test_flow_table_idle_past_2^31 steps of 2^20", 0x7FFFFFFFu, 1u << 20},
};

#define N_WRAP_CASES (sizeof(wrap_cases) / sizeof(wrap_cases[0]))

static void
test_flow_table_idle_past_2_31(void **state)
{
	const struct wrap_case *c = *state;
	struct lb_flow_table *ft = lb_flow_table_create(SMALL_CAP);
	uint64_t sig = sig_in_bucket(ft, 3, 0), live = sig_in_bucket(ft, 3, 1);
	const uint64_t idle = 300, end = (1ull << 31) + 2 * idle; /* ticks after t0 */
	uint32_t now = c->t0;

	assert_non_null(ft);
	lb_flow_table_advance(ft, now);
	lb_flow_insert(ft, sig, now, (uint32_t)idle, 5, 1);
	lb_flow_insert(ft, live, now, 1u << 24, 6, 1);
	for (uint64_t t = 0; t < end;) {
		uint64_t d = c->step == 0 ? end - t : c->step;

		if (d > end - t)
			d = end - t;
		t += d;
		now = c->t0 + (uint32_t)t;
		lb_flow_table_advance(ft, now);
		/* A flow active all along is never lost (after a jump it comes back). */
		if (lb_flow_lookup(ft, live, now) == NULL)
			lb_flow_insert(ft, live, now, 1u << 24, 6, 1);
		else
			lb_flow_touch(lb_flow_lookup(ft, live, now), now, 1u << 24);
	}
	/* 2^31 + 600 ticks after its last packet, past expires by 2^31 + 300. */
	assert_null(lb_flow_lookup(ft, sig, now));
	assert_null(lb_flow_lookup(ft, sig, now + 1000));
	assert_int_equal(lb_flow_table_count(ft, now), 1);
	assert_non_null(lb_flow_lookup(ft, live, now));
	/* A new flow in the same bucket takes a free way, evicting nothing. */
	assert_false(lb_flow_insert(ft, sig_in_bucket(ft, 3, 2), now, 100, 7, 1));
	assert_false(lb_flow_insert(ft, sig_in_bucket(ft, 3, 3), now, 100, 8, 1));
	assert_false(lb_flow_insert(ft, sig_in_bucket(ft, 3, 4), now, 100, 9, 1));
	lb_flow_table_free(ft);
}

static void
test_flow_table_touch_extends(void **state)
{
	struct lb_flow_table *ft = *state;
	uint32_t t0 = UINT32_MAX - 12; /* the extension crosses the wrap */
	uint64_t sig = sig_in_bucket(ft, 9, 0);
	struct lb_flow_entry *e;

	lb_flow_insert(ft, sig, t0, 10, 3, 2);
	e = lb_flow_lookup(ft, sig, t0 + 8);
	assert_non_null(e);
	lb_flow_touch(e, t0 + 8, 10);
	/* Would have expired at t0 + 10 without the touch. */
	assert_ptr_equal(lb_flow_lookup(ft, sig, t0 + 10), e);
	assert_ptr_equal(lb_flow_lookup(ft, sig, t0 + 17), e);
	assert_int_equal(e->backend, 3);
	assert_int_equal(e->gen, 2);
	assert_null(lb_flow_lookup(ft, sig, t0 + 18));
}

/*
 * Eviction: four live entries in one bucket with the given lifetimes, then a
 * fifth flow. The victim must be the entry expiring first, wherever it sits,
 * also when expiries straddle the tick counter's wrap.
 */
struct evict_case {
	const char *name;
	uint32_t now;
	uint32_t idle[LB_FLOW_WAYS];
	int victim;
};

static const struct evict_case evict_cases[] = {
        {"test_flow_table_evicts_soonest slot 0", 100, {10, 20, 30, 40}, 0},
        {"test_flow_table_evicts_soonest slot 1", 100, {50, 20, 80, 30}, 1},
        {"test_flow_table_evicts_soonest slot 2", 100, {50, 40, 5, 30}, 2},
        {"test_flow_table_evicts_soonest slot 3", 100, {50, 40, 60, 30}, 3},
        /* Expiries UINT32_MAX-5, 9, 19, 29: the first is soonest despite being largest. */
        {"test_flow_table_evicts_soonest across wrap", UINT32_MAX - 10, {40, 30, 20, 5}, 3},
        {"test_flow_table_evicts_soonest across wrap slot 0", UINT32_MAX - 10, {5, 20, 30, 40}, 0},
};

#define N_EVICT_CASES (sizeof(evict_cases) / sizeof(evict_cases[0]))

static void
test_flow_table_evicts_soonest(void **state)
{
	const struct evict_case *c = *state;
	struct lb_flow_table *ft = lb_flow_table_create(SMALL_CAP);
	uint64_t sig[LB_FLOW_WAYS + 1];
	uint32_t later = c->now + 1;

	assert_non_null(ft);
	for (int i = 0; i <= LB_FLOW_WAYS; i++)
		sig[i] = sig_in_bucket(ft, 7, (uint32_t)i);
	for (int i = 0; i < LB_FLOW_WAYS; i++)
		assert_false(lb_flow_insert(ft, sig[i], c->now, c->idle[i], (uint16_t)i, 1));
	assert_int_equal(lb_flow_table_count(ft, later), 4);
	assert_true(lb_flow_insert(ft, sig[4], later, 1000, 4, 1));
	for (int i = 0; i < LB_FLOW_WAYS; i++) {
		struct lb_flow_entry *e = lb_flow_lookup(ft, sig[i], later);

		if (i == c->victim) {
			assert_null(e);
		} else {
			assert_non_null(e);
			assert_int_equal(e->backend, i);
		}
	}
	assert_non_null(lb_flow_lookup(ft, sig[4], later));
	assert_int_equal(lb_flow_lookup(ft, sig[4], later)->backend, 4);
	assert_int_equal(lb_flow_table_count(ft, later), 4);
	/* Other buckets are untouched. */
	for (uint32_t b = 0; b < ft->n_buckets; b++)
		if (b != 7)
			for (int j = 0; j < LB_FLOW_WAYS; j++)
				assert_int_equal(ft->buckets[b].e[j].sig, 0);
	lb_flow_table_free(ft);
}

/* A full bucket with one expired entry takes a new flow without evicting. */
static void
test_flow_table_reuses_expired_slot(void **state)
{
	struct lb_flow_table *ft = *state;
	static const uint32_t idle[LB_FLOW_WAYS] = {100, 100, 10, 100};
	uint64_t sig[LB_FLOW_WAYS + 1];

	for (int i = 0; i <= LB_FLOW_WAYS; i++)
		sig[i] = sig_in_bucket(ft, 2, (uint32_t)i);
	for (int i = 0; i < LB_FLOW_WAYS; i++)
		assert_false(lb_flow_insert(ft, sig[i], 0, idle[i], (uint16_t)i, 1));
	/* At 50 entry 2 has expired (at 10); the others are live. */
	assert_false(lb_flow_insert(ft, sig[4], 50, 100, 4, 1));
	assert_ptr_equal(lb_flow_lookup(ft, sig[4], 50), &ft->buckets[2].e[2]);
	for (int i = 0; i < LB_FLOW_WAYS; i++)
		if (i != 2)
			assert_non_null(lb_flow_lookup(ft, sig[i], 50));
	assert_int_equal(lb_flow_table_count(ft, 50), 4);
}

struct sig_case {
	const char *name;
	uint64_t hash;
	uint64_t want;
};

static const struct sig_case sig_cases[] = {
        {"test_flow_table_sig 0 -> 1", 0, 1},
        {"test_flow_table_sig 1", 1, 1},
        {"test_flow_table_sig 2", 2, 2},
        {"test_flow_table_sig bucket-0 sig kept", 0x100, 0x100},
        {"test_flow_table_sig max", UINT64_MAX, UINT64_MAX},
        {"test_flow_table_sig high bit", 1ULL << 63, 1ULL << 63},
};

#define N_SIG_CASES (sizeof(sig_cases) / sizeof(sig_cases[0]))

static void
test_flow_table_sig(void **state)
{
	const struct sig_case *c = *state;

	assert_int_equal(lb_flow_sig(c->hash), c->want);
	assert_int_not_equal(lb_flow_sig(c->hash), 0);
}

/* A flow whose hash is 0 still gets an entry (sig 1), not an "empty" slot. */
static void
test_flow_table_sig_zero_hash_is_stored(void **state)
{
	struct lb_flow_table *ft = *state;
	uint64_t s = lb_flow_sig(0);
	struct lb_flow_entry *e;

	lb_flow_insert(ft, s, 0, 100, 11, 1);
	e = lb_flow_lookup(ft, lb_flow_sig(0), 5);
	assert_non_null(e);
	assert_int_equal(e->backend, 11);
	assert_int_equal(lb_flow_table_count(ft, 5), 1);
}

static void
test_flow_table_count(void **state)
{
	struct lb_flow_table *ft = *state;

	/* 40 flows over all 16 buckets, lifetimes 100..139. */
	for (uint32_t i = 0; i < 40; i++)
		lb_flow_insert(ft, sig_in_bucket(ft, i % 16, i / 16), 0, 100 + i, 1, 1);
	assert_int_equal(lb_flow_table_count(ft, 0), 40);
	assert_int_equal(lb_flow_table_count(ft, 99), 40);
	assert_int_equal(lb_flow_table_count(ft, 100), 39);
	assert_int_equal(lb_flow_table_count(ft, 120), 19);
	assert_int_equal(lb_flow_table_count(ft, 138), 1);
	assert_int_equal(lb_flow_table_count(ft, 139), 0);
}

/*
 * Oversubscription: 4x capacity random flows, one tick apart, all with the same
 * long lifetime, starting just before the tick counter wraps. The table never
 * holds more than its capacity, and because a full bucket evicts its oldest
 * entry, a flow is lost only if 4 later flows hash to its bucket. For the last
 * C/4 flows (C = capacity, B = C/4 buckets) the later arrivals in a bucket are
 * Poisson with mean lambda <= 1, uniform over [0, 1], so the expected loss is
 * about E[P(Poisson(lambda) >= 4)] < 1%. Evicting anything but the oldest (e.g.
 * always way 0, or the newest) loses about 1 - E[e^-lambda] = 37%, so requiring
 * 97% to survive separates the two with a wide margin.
 */
#define PRESSURE_CAP 4096u

static void
test_flow_table_pressure_keeps_recent(void **state)
{
	struct lb_flow_table *ft = lb_flow_table_create(PRESSURE_CAP);
	uint32_t cap, n, recent, survived = 0, evictions = 0;
	uint32_t t0 = UINT32_MAX - 5000, now = t0;
	const uint32_t idle = 1u << 20;
	uint64_t rng = 0xfeed, *sigs;

	(void)state;
	assert_non_null(ft);
	cap = lb_flow_table_capacity(ft);
	n = 4 * cap;
	recent = cap / 4;
	sigs = calloc(n, sizeof(*sigs));
	assert_non_null(sigs);
	for (uint32_t i = 0; i < n; i++, now++) {
		sigs[i] = lb_flow_sig(rng_next(&rng));
		evictions += lb_flow_insert(ft, sigs[i], now, idle, (uint16_t)i, 1);
		if (i % 1024 == 0)
			assert_true(lb_flow_table_count(ft, now) <= cap);
	}
	assert_true(lb_flow_table_count(ft, now) <= cap);
	/* 16 flows per bucket on average: all but a handful of buckets fill. */
	assert_true(lb_flow_table_count(ft, now) >= cap - 16);
	assert_true(evictions >= n - cap);
	for (uint32_t i = n - recent; i < n; i++) {
		struct lb_flow_entry *e = lb_flow_lookup(ft, sigs[i], now);

		if (e != NULL && e->backend == (uint16_t)i)
			survived++;
	}
	print_message("recent flows surviving: %u of %u (%.2f%%)\n", survived, recent,
	              100.0 * survived / recent);
	assert_true(survived * 100 >= recent * 97);
	free(sigs);
	lb_flow_table_free(ft);
}

/*
 * A bucket under pressure keeps an opening connection before a closed one: a
 * new flow's entry (SYN seen, expiring soon) is what its next packets need to
 * stay on the backend the SYN went to, while a closing entry (FIN or RST seen)
 * only guards the last packets of a finished connection. So a full bucket of
 * one NEW entry and three CLOSING entries that expire later gives up a
 * CLOSING one (the soonest of them), and established entries go last.
 */
static void
test_flow_table_evicts_closing_before_new(void **state)
{
	struct lb_flow_table *ft = lb_flow_table_create(SMALL_CAP);
	uint64_t sig[LB_FLOW_WAYS + 2];
	const uint32_t now = 100;

	(void)state;
	assert_non_null(ft);
	for (int i = 0; i < LB_FLOW_WAYS + 2; i++)
		sig[i] = sig_in_bucket(ft, 3, (uint32_t)i);
	assert_int_equal(lb_flow_insert_state(ft, sig[0], now, 10, 0, 1, LB_FLOW_NEW, false),
	                 LB_FLOW_INS_OK);
	for (int i = 1; i < LB_FLOW_WAYS; i++)
		assert_int_equal(lb_flow_insert_state(ft, sig[i], now, 100 + (uint32_t)i,
		                                      (uint16_t)i, 1, LB_FLOW_CLOSING, false),
		                 LB_FLOW_INS_OK);
	assert_int_equal(lb_flow_insert_state(ft, sig[4], now + 1, 10, 4, 1, LB_FLOW_NEW, false),
	                 LB_FLOW_INS_EVICTED);
	/* The opening connection stays; the closing entry that expires first went. */
	assert_non_null(lb_flow_lookup(ft, sig[0], now + 1));
	assert_null(lb_flow_lookup(ft, sig[1], now + 1));
	assert_non_null(lb_flow_lookup(ft, sig[2], now + 1));
	assert_non_null(lb_flow_lookup(ft, sig[4], now + 1));
	/* With no closing entry left to give, the NEW entries go before an
	 * established one. */
	lb_flow_insert_state(ft, sig[2], now + 1, 1000, 2, 1, LB_FLOW_ESTABLISHED, false);
	lb_flow_insert_state(ft, sig[3], now + 1, 1000, 3, 1, LB_FLOW_ESTABLISHED, false);
	assert_int_equal(lb_flow_insert_state(ft, sig[5], now + 2, 10, 5, 1, LB_FLOW_NEW, false),
	                 LB_FLOW_INS_EVICTED);
	assert_true(lb_flow_lookup(ft, sig[0], now + 2) == NULL ||
	            lb_flow_lookup(ft, sig[4], now + 2) == NULL);
	assert_non_null(lb_flow_lookup(ft, sig[2], now + 2));
	assert_non_null(lb_flow_lookup(ft, sig[3], now + 2));
	lb_flow_table_free(ft);
}

int
main(void)
{
	struct CMUnitTest tests[N_CAP_CASES + N_EXPIRY_CASES + N_EVICT_CASES + N_SIG_CASES +
	                        N_WRAP_CASES + 16];
	size_t n = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_layout, setup_small, teardown_table);
	/* Table rows: one test per row, named after the row so a failure says which. */
	for (size_t i = 0; i < N_CAP_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_flow_table_capacity,
		                                                        (void *)&cap_cases[i]);
		tests[n++].name = cap_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_flow_table_create_invalid);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_hit, setup_small, teardown_table);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_miss, setup_small, teardown_table);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_reinsert_overwrites, setup_small, teardown_table);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_reinsert_no_twin, setup_small, teardown_table);
	for (size_t i = 0; i < N_EXPIRY_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_flow_table_expiry,
		                                                        (void *)&expiry_cases[i]);
		tests[n++].name = expiry_cases[i].name;
	}
	for (size_t i = 0; i < N_WRAP_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(
		        test_flow_table_idle_past_2_31, (void *)&wrap_cases[i]);
		tests[n++].name = wrap_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_touch_extends, setup_small, teardown_table);
	for (size_t i = 0; i < N_EVICT_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(
		        test_flow_table_evicts_soonest, (void *)&evict_cases[i]);
		tests[n++].name = evict_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_reuses_expired_slot, setup_small, teardown_table);
	for (size_t i = 0; i < N_SIG_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_flow_table_sig,
		                                                        (void *)&sig_cases[i]);
		tests[n++].name = sig_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_sig_zero_hash_is_stored, setup_small, teardown_table);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_flow_table_count, setup_small, teardown_table);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_flow_table_pressure_keeps_recent);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_flow_table_evicts_closing_before_new);
	return _cmocka_run_group_tests("flow_table", tests, n, NULL, NULL);
}
