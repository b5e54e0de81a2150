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

#include "../../control/config.h"
#include "../../control/hotkey.h"
#include "../../control/snapshot_build.h"
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

static int
desc_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x > y ? -1 : x < y;
}

/*
 * The planning rule of docs/hot-keys.md "Planning under noise, weights,
 * several keys and shared hosts" for one VIP of n equal-weight backends,
 * margin off, no noise: cap = c x the average load; a backend's headroom is
 * the cap less its load without the key (the home carries the key now); r is
 * r_fixed, or the fewest whose r largest headrooms all take key / r; the
 * replicas are the backends with that headroom in preference order, and if
 * fewer than r have it the least projected (load + key / r) of the rest fill
 * in, ties in preference order. Output in preference order. @return r.
 */
static uint32_t
ref_plan(const uint64_t *load, const uint16_t *pref, uint32_t n, double key, double c,
         uint32_t r_fixed, uint16_t *out)
{
	double base[16], head[16], sorted[16], total = 0, per;
	bool taken[16] = {false};
	uint32_t r = r_fixed, got = 0, k = 0;

	for (uint32_t j = 0; j < n; j++)
		total += (double)load[pref[j]];
	for (uint32_t j = 0; j < n; j++) {
		base[j] = (double)load[pref[j]] - (j == 0 ? key : 0);
		head[j] = c * total / n - base[j];
		sorted[j] = head[j];
	}
	qsort(sorted, n, sizeof(sorted[0]), desc_double);
	if (r == 0)
		for (r = 1; r < n && !(key / r <= sorted[r - 1]); r++)
			;
	per = key / r;
	for (uint32_t j = 0; j < n && got < r; j++)
		if (per <= head[j]) {
			taken[j] = true;
			got++;
		}
	while (got < r) {
		uint32_t best = n;

		for (uint32_t j = 0; j < n; j++)
			if (!taken[j] && (best == n || base[j] < base[best]))
				best = j;
		taken[best] = true;
		got++;
	}
	for (uint32_t j = 0; j < n; j++)
		if (taken[j])
			out[k++] = pref[j];
	return r;
}

/*
 * Bounded loads at promotion: a heavy backend early in the key's preference
 * order is skipped; r is the water-filling count over the measured headrooms
 * (not the even-load formula); with an operator's r that fewer backends can
 * take, the least loaded of the rest fill in.
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
	uint16_t pref[16], want[16];
	struct lb_hot_candidate c = {.vip_id = 0, .key_hash = HOT_HASH};

	(void)state;
	assert_int_equal(lb_hotkey_preference(s, &s->vips[0], HOT_HASH, pref, 16), 10);

	/* p = 0.2. Base 100k each, pref[1] 300k: T = 1.5M, hot = 300k, average
	 * 150k, cap 187.5k: pref[1] has no headroom, the others 87.5k each, so
	 * 300k / 4 = 75k fits: r = 4 (the even-load formula would say 5). */
	for (int i = 0; i < 10; i++)
		load[pref[i]] = i == 1 ? 300000 : 100000;
	load[pref[0]] += 300000;
	total[0] = 1500000;
	c.count = 300000;
	assert_int_equal(ref_plan(load, pref, 10, 300000, 1.25, 0, want), 4);
	assert_true(lb_hotkey_window(h, s, load, total, &c, 1, 1));
	o = find_ov(h, 0, HOT_HASH);
	assert_non_null(o);
	assert_int_equal(o->n_replicas, 4);
	assert_memory_equal(o->replicas, want, 4 * sizeof(want[0]));
	assert_int_equal(want[1], pref[2]); /* pref[1] skipped */
	lb_hotkey_free(h);

	/* pref[1..6] heavy (pref[4] a little less), T = 2.6875M, hot 537.5k:
	 * the home and pref[7..9] have 235.9k of headroom, 537.5k / 3 fits. */
	h = lb_hotkey_create(&np);
	for (int i = 0; i < 10; i++)
		load[pref[i]] = (i >= 1 && i <= 6) ? 300000 : 100000;
	load[pref[4]] = 250000;
	load[pref[0]] += 537500;
	total[0] = 2687500;
	c.count = 537500;
	assert_int_equal(ref_plan(load, pref, 10, 537500, 1.25, 0, want), 3);
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
	assert_int_equal(ref_plan(load, pref, 10, 0, 1.25, 5, want), 5);
	assert_int_equal(want[1], pref[4]);
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
