/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the hot-key controller's planning maths, on real snapshots
 * built from JSON configurations as control builds them: the replica count
 * r = ceil(N p / (c - 1 + p)) row by row, a key's preference order along its
 * VIP's Maglev table, and the choice of replicas under the bounded-load cap at
 * promotion. The window step over time is in test_hotkey.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "control/hot/hotkey.h"
#include "control/build/snapshot_build.h"
#include "../support/rng.h"
#include "hotkey_fixture.h"

/* --- the replica count ------------------------------------------------------- */

struct replicas_row {
	uint32_t n;
	double p, c;
	uint32_t want;
};

static const struct replicas_row g_replicas_rows[] = {
        {100, 0.08, 1.25, 25},   /* the simulated case: 8 / 0.33 = 24.2 */
        {100, 0.01, 1.25, 4},    /* 1 / 0.26 = 3.85 */
        {100, 0.5, 1.25, 67},    /* 50 / 0.75 = 66.7 */
        {100, 1.0, 1.25, 80},    /* exactly 80: no spurious 81 */
        {100, 0.2, 1.3, 40},     /* 20 / 0.5 = 40 despite 1.3 - 1 = 0.30000000000000004 */
        {99, 0.08, 1.25, 24},    /* 7.92 / 0.33 = 24.000000000000004 -> 24 */
        {100, 0.08, 1.0, 100},   /* c = 1: every backend */
        {100, 0.001, 1.25, 1},   /* 0.1 / 0.251: at least one */
        {100, 0.0, 1.25, 1},     /* no share: one */
        {1000, 0.08, 1.25, 243}, /* 80 / 0.33 = 242.4 */
        {10000, 0.08, 1.25, LB_HOT_MAX_REPLICAS}, /* 2425: the limit */
        {3, 0.9, 1.25, 3},                        /* 2.35: at most N */
        {2, 0.9, 1.25, 2},
        {1, 0.9, 1.25, 1},
        {0, 0.5, 1.25, 0},    /* no backend: none */
        {100, 0.1, 0.5, 100}, /* c < 1 - p: no finite r holds it */
};

static void
test_hotkey_replicas_row(void **state)
{
	const struct replicas_row *r = *state;

	assert_int_equal(lb_hotkey_replicas(r->n, r->p, r->c), r->want);
}

/* --- the preference order ---------------------------------------------------- */

/* Distinct ids, the Maglev home first, in table order, deterministic. */
static void
test_hotkey_preference(void **state)
{
	uint32_t n = N_SIM;
	struct lb_config *cfg = cfg_make(1, &n);
	struct lb_snapshot *s = snap_make(cfg, 1), *s2;
	uint16_t a[N_SIM], b[N_SIM], c[N_SIM];
	uint64_t rng = 3;

	(void)state;
	for (int k = 0; k < 200; k++) {
		uint64_t key = rng_next(&rng);
		uint32_t slot = lb_fastmod((uint32_t)key, s->table_fastmod, s->table_size);
		uint16_t na = lb_hotkey_preference(s, &s->vips[0], key, a, N_SIM);

		assert_int_equal(na, N_SIM);
		assert_int_equal(a[0], lb_maglev_pick(s, &s->vips[0], key));
		assert_int_equal(a[0], s->vips[0].table[slot]);
		for (uint32_t i = 0; i < na; i++)
			for (uint32_t j = 0; j < i; j++)
				assert_int_not_equal(a[i], a[j]);
		/* The second entry is the next different id after the home's slot. */
		for (uint32_t i = slot;; i = (i + 1) % s->table_size)
			if (s->vips[0].table[i] != a[0]) {
				assert_int_equal(a[1], s->vips[0].table[i]);
				break;
			}
		/* A shorter list is a prefix. */
		assert_int_equal(lb_hotkey_preference(s, &s->vips[0], key, b, 7), 7);
		assert_memory_equal(a, b, 7 * sizeof(uint16_t));
		(void)c;
	}
	/* Another instance, same config: the same order. */
	s2 = snap_make(cfg, 9);
	assert_int_equal(lb_hotkey_preference(s, &s->vips[0], HOT_HASH, a, N_SIM), N_SIM);
	assert_int_equal(lb_hotkey_preference(s2, &s2->vips[0], HOT_HASH, b, N_SIM), N_SIM);
	assert_memory_equal(a, b, sizeof(a));
	lb_snapshot_free(s2);
	/* A backend down is absent, and the rest keep their relative order. */
	cfg->vips[0].backends[a[1]].state = LB_BACKEND_DOWN;
	s2 = snap_make(cfg, 10);
	assert_int_equal(lb_hotkey_preference(s2, &s2->vips[0], HOT_HASH, c, N_SIM), N_SIM - 1);
	for (uint32_t i = 0; i < N_SIM - 1; i++)
		assert_int_not_equal(c[i], a[1]);
	assert_int_equal(c[0], a[0]);
	assert_int_equal(lb_hotkey_preference(s2, &s2->vips[0], HOT_HASH, c, 0), 0);
	lb_snapshot_free(s2);
	lb_snapshot_free(s);
	lb_config_free(cfg);
}

/* --- bounded loads at promotion ---------------------------------------------- */

/* Square root by bisection (no libm here); x >= 0. */
static double
ref_sqrt(double x)
{
	double lo = 0, hi = x > 1 ? x : 1;

	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (mid * mid < x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The planning rule of docs/hot-keys.md "Planning under noise, weights,
 * several keys and shared hosts" for one VIP of n equal-weight backends,
 * margin off, one window (EWMA alpha 0.5, no measured noise): cap = c x the
 * average load; a backend's load without the key (the home carries the key
 * now) counts as the fair (total - key) / n when within 3 standard deviations
 * of a Poisson count of one window (sqrt(load), plus for the home 16 times
 * the key: its estimate is a 1-in-16 sample) of it, else as itself pulled by
 * that much; its headroom is the cap less that. r is r_fixed, or the lowest
 * rung of 1, 2, 3, 4, 6, 8, 12, ... whose list fills: position i of the order
 * holds pref[i] if its headroom takes key / r, else the next backend from the
 * far end of the order that does. With r_fixed and too few, the least loaded
 * of the rest fill in after them, ties in order. @return r.
 */
static uint32_t
ref_plan(const uint64_t *load, const uint16_t *pref, uint32_t n, uint16_t home, double key,
         double c, uint32_t r_fixed, uint16_t *out)
{
	static const uint32_t ladder[] = {1, 2, 3, 4, 6, 8, 12, 16};
	double base[16], head[16], total = 0;
	bool taken[16];
	uint32_t r = 0, got = 0;

	for (uint32_t j = 0; j < n; j++)
		total += (double)load[pref[j]];
	for (uint32_t j = 0; j < n; j++) {
		double fair = (total - key) / n, sd, e;

		base[j] = (double)load[pref[j]] - (pref[j] == home ? key : 0);
		sd = 3 * ref_sqrt(base[j] + (pref[j] == home ? 16 * key : 0));
		e = base[j] - fair;
		base[j] = e > sd ? base[j] - sd : e < -sd ? base[j] + sd : fair;
		head[j] = c * total / n - base[j];
	}
	for (size_t k = 0; k < sizeof(ladder) / sizeof(ladder[0]); k++) {
		uint32_t tail = n;

		r = r_fixed ? r_fixed : ladder[k] < n ? ladder[k] : n;
		got = 0;
		for (uint32_t j = 0; j < n; j++)
			taken[j] = false;
		for (uint32_t i = 0; i < n && got < r; i++) {
			if (key / r <= head[i] && !taken[i]) {
				taken[i] = true;
				out[got++] = pref[i];
				continue;
			}
			while (tail > i + 1) {
				uint32_t t = --tail;

				if (!taken[t] && key / r <= head[t]) {
					taken[t] = true;
					out[got++] = pref[t];
					break;
				}
			}
		}
		if (got == r || r_fixed || r == n)
			break;
	}
	while (got < r) {
		uint32_t best = n;

		for (uint32_t j = 0; j < n; j++)
			if (!taken[j] && (best == n || base[j] < base[best]))
				best = j;
		taken[best] = true;
		out[got++] = pref[best];
	}
	return r;
}

/*
 * Bounded loads at promotion: a heavy backend early in the key's order gives
 * its position to a substitute from the far end of the order; r is the lowest
 * rung whose list fills with backends of enough headroom (not the even-load
 * formula); with an operator's r that fewer backends can take, the least
 * loaded of the rest fill in.
 */
static void
test_hotkey_bounded_load_skips(void **state)
{
	uint32_t n = 10;
	struct lb_config *cfg = cfg_make(1, &n);
	struct lb_snapshot *s = snap_make(cfg, 1);
	struct lb_hot_params np = {.margin = -1};
	struct lb_hotkey *h = lb_hotkey_create(&np);
	const struct lb_hot_override *o;
	uint64_t load[16], total[1];
	uint16_t pref[16], want[16], home;
	struct lb_hot_candidate c = {.vip_id = 0, .key_hash = HOT_HASH};

	(void)state;
	assert_int_equal(lb_hotkey_order(s, &s->vips[0], HOT_HASH, pref, 16), 10);
	home = lb_maglev_pick(s, &s->vips[0], HOT_HASH);

	/* p = 0.2. Base 100k each, pref[1] 300k: T = 1.5M, hot = 300k, average
	 * 150k, cap 187.5k: pref[1] has no headroom, the others about 87k each,
	 * so 300k / 4 = 75k fits: r = 4 (the even-load formula would say 5). */
	for (int i = 0; i < 10; i++)
		load[pref[i]] = i == 1 ? 300000 : 100000;
	load[home] += 300000;
	total[0] = 1500000;
	c.count = 300000;
	assert_int_equal(ref_plan(load, pref, 10, home, 300000, 1.25, 0, want), 4);
	assert_true(lb_hotkey_window(h, s, load, total, &c, 1, 1));
	o = find_ov(h, 0, HOT_HASH);
	assert_non_null(o);
	assert_int_equal(o->n_replicas, 4);
	assert_memory_equal(o->replicas, want, 4 * sizeof(want[0]));
	if (home != pref[1])
		assert_int_equal(want[1], pref[9]); /* pref[1]'s position substituted */
	lb_hotkey_free(h);

	/* pref[1..6] heavy (pref[4] a little less), T = 2.6875M, hot 537.5k:
	 * the others have about 235k of headroom, 537.5k / 3 fits. */
	h = lb_hotkey_create(&np);
	for (int i = 0; i < 10; i++)
		load[pref[i]] = (i >= 1 && i <= 6) ? 300000 : 100000;
	load[pref[4]] = 250000;
	load[home] += 537500;
	total[0] = 2687500;
	c.count = 537500;
	assert_int_equal(ref_plan(load, pref, 10, home, 537500, 1.25, 0, want), 3);
	assert_true(lb_hotkey_window(h, s, load, total, &c, 1, 1));
	o = find_ov(h, 0, HOT_HASH);
	assert_int_equal(o->n_replicas, 3);
	assert_memory_equal(o->replicas, want, 3 * sizeof(want[0]));
	lb_hotkey_free(h);

	/* Pinned to r = 5 with no measured share: pref[1..6] over the cap
	 * (pref[4] least), only 4 have headroom, so pref[4] fills the fifth. */
	h = lb_hotkey_create(&np);
	for (int i = 0; i < 10; i++)
		load[pref[i]] = (i >= 1 && i <= 6) ? 300000 : 100000;
	load[pref[4]] = 280000;
	total[0] = 2150000;
	assert_int_equal(ref_plan(load, pref, 10, home, 0, 1.25, 5, want), 5);
	assert_int_equal(want[4], pref[4]);
	assert_false(lb_hotkey_window(h, s, load, total, NULL, 0, 1));
	assert_int_equal(lb_hotkey_pin(h, s, 0, HOT_HASH, NULL, 5, 1), 0);
	o = find_ov(h, 0, HOT_HASH);
	assert_non_null(o);
	assert_int_equal(o->n_replicas, 5);
	assert_memory_equal(o->replicas, want, 5 * sizeof(want[0]));
	lb_hotkey_free(h);
	lb_snapshot_free(s);
	lb_config_free(cfg);
}

int
main(void)
{
	struct CMUnitTest tests[32];
	size_t n = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_bounded_load_skips);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_preference);
	for (size_t i = 0; i < sizeof(g_replicas_rows) / sizeof(g_replicas_rows[0]); i++)
		tests[n++] = (struct CMUnitTest)cmocka_unit_test_prestate(
		        test_hotkey_replicas_row, (void *)&g_replicas_rows[i]);
	return _cmocka_run_group_tests("hot_plan", tests, n, NULL, NULL);
}
