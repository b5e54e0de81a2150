/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the hot-key controller's window step, on real snapshots built
 * from JSON configurations as control builds them. The centre is a simulation
 * of the case of docs/hot-keys.md "The simulated table" (N = 100, M = 65537,
 * one key with p = 0.08, c = 1.25): per-backend load computed from the
 * assignment each window, printed as a table and checked against
 * 1 - p + N p / r; then failures, load shifts, a minute of a share sweeping
 * across the threshold (the flapping bound), demotion, pinning, VIP removal,
 * events, counters and parameters. The planning maths on its own is in
 * test_hot_plan.c. Over 800 lines: a dozen cases of one controller on the
 * simulation of hotkey_fixture.c, with the reference oracles they share
 * (formula, ref_water_fill); split by case, those oracles would move into the
 * fixture for this file's use alone.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/model/config.h"
#include "control/hot/hotkey.h"
#include "control/build/snapshot_build.h"
#include "../support/rng.h"
#include "hotkey_fixture.h"

#define P_HOT 0.08
#define C_CAP 1.25
/* Divisible by 100 and 99 with p = 0.08, so every simulated load is an exact
 * integer before and after a backend fails. */
#define T_EXACT 9900000u
#define ULP 1e-9

/* --- helpers ----------------------------------------------------------------- */

static bool
has_replica(const struct lb_hot_override *o, uint16_t id)
{
	for (uint16_t i = 0; i < o->n_replicas; i++)
		if (o->replicas[i] == id)
			return true;
	return false;
}

static uint64_t
counter(const struct lb_hotkey *h, const char *name)
{
	json_t *c = lb_hotkey_counters_json(h);
	uint64_t v;

	assert_non_null(c);
	assert_true(json_is_integer(json_object_get(c, name)));
	v = (uint64_t)json_integer_value(json_object_get(c, name));
	json_decref(c);
	return v;
}

static void
assert_valid_override(const struct lb_snapshot *s, const struct lb_hot_override *o)
{
	assert_true(o->n_replicas >= 1 && o->n_replicas <= LB_HOT_MAX_REPLICAS);
	for (uint16_t i = 0; i < o->n_replicas; i++) {
		assert_true(active(s, o->replicas[i]));
		assert_int_equal(s->backends[o->replicas[i]].vip_id, o->vip_id);
		for (uint16_t j = 0; j < i; j++)
			assert_int_not_equal(o->replicas[i], o->replicas[j]);
	}
}

static double
formula(uint32_t n, double p, uint32_t r)
{
	return 1 - p + n * p / r;
}

static int
desc_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x > y ? -1 : x < y;
}

/*
 * The replica count by the rule of docs/hot-keys.md "Planning under noise,
 * weights, several keys and shared hosts", on the simulation's own model of
 * the loads (margin off, no noise): every usable backend of VIP 0 (weights
 * equal) has the cap c L / N (L: every backend's load summed, the extra
 * included) and carries (T - hot) w[b] + extra[b] of the other traffic;
 * r is the lowest rung of the ladder 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, ...
 * for which at least r backends have a headroom cap (1 - margin) - other
 * that takes hot / r (the margin: hot.margin, a fraction of the cap).
 */
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

static const uint32_t g_ref_ladder[] = {1,  2,  3,  4,  6,  8,   12,  16,
                                        24, 32, 48, 64, 96, 128, 192, 256};

static uint32_t
ref_water_fill_margin(const struct sim *m, double c, double margin)
{
	static double heads[LB_MAX_BACKENDS];
	double total = (double)m->T;
	uint32_t n = 0;

	for (uint32_t id = 0; id < m->s->n_backends; id++)
		if (active(m->s, (uint16_t)id)) {
			heads[n++] = (double)(m->T - m->hot) * m->w[id] + (double)m->extra[id];
			total += (double)m->extra[id];
		}
	for (uint32_t i = 0; i < n; i++) {
		/* The planner takes a load within 3 standard deviations of a
		 * Poisson count of one window from the fair (T - hot) / n as fair,
		 * and pulls one beyond by that much. */
		double fair = (total - (double)m->hot) / n, e = heads[i] - fair;
		double sd = 3 * ref_sqrt(heads[i]);

		heads[i] = e > sd ? heads[i] - sd : e < -sd ? heads[i] + sd : fair;
		heads[i] = c * (1 - margin) * total / n - heads[i];
	}
	qsort(heads, n, sizeof(heads[0]), desc_double);
	for (size_t k = 0; k < sizeof(g_ref_ladder) / sizeof(g_ref_ladder[0]); k++) {
		uint32_t r = g_ref_ladder[k] < n ? g_ref_ladder[k] : n;

		if ((double)m->hot / r <= heads[r - 1] * (1 + ULP))
			return r;
		if (r == n)
			break;
	}
	return n;
}

static uint32_t
ref_water_fill(const struct sim *m, double c)
{
	return ref_water_fill_margin(m, c, 0);
}

/* hot.margin and c of the defaults (docs/operations.md). */
#define DEFAULT_MARGIN 0.05
#define DEFAULT_C 1.25

static void
print_row(const char *what, uint32_t n, uint32_t r, double measured, double want)
{
	char rs[16];

	snprintf(rs, sizeof(rs), r ? "%u" : "-", r);
	printf("  | %-40s | %3u | %4s | %8.4f | %8.4f |\n", what, n, rs, measured, want);
}

/*
 * The table of docs/hot-keys.md: no override (8.92), the computed r = 25
 * (1.24 <= 1.25; with Maglev-hashed other traffic the water-filling r of
 * ref_water_fill()), r forced to 4 by a pin (2.92), back to computed in the
 * first window after unpin (the pinned windows were over the cap), and a
 * replica (the key's Maglev home) failing: re-planned in the window of the
 * failure, under the cap without it.
 */
static void
test_hotkey_simulation_table(void **state)
{
	const bool realistic = *state != NULL;
	struct lb_hot_params p = {.threshold = 0.01, .epsilon = C_CAP - 1, .margin = -1};
	struct sim *m = sim_new(realistic, N_SIM, &p);
	const struct lb_hot_override *o;
	double ratio, tol;
	uint16_t pref[N_SIM], failed, before[N_SIM], n_before;
	uint32_t np, r_ref;

	m->T = T_EXACT;
	m->hot = (uint64_t)(P_HOT * T_EXACT + 0.5);
	/* Realistic mode: only the other keys' imbalance moves the numbers, and by
	 * at most (1 - p) times their largest relative deviation from the mean. */
	tol = realistic ? (1 - P_HOT) * m->other_dev + ULP : ULP;
	printf("\n  %s other traffic (max deviation of other load from its mean: %.4f)\n",
	       realistic ? "Maglev-hashed" : "perfectly even", m->other_dev);
	printf("  | %-40s | %3s | %4s | %8s | %8s |\n", "scenario", "N", "r", "peak/avg",
	       "1-p+Np/r");
	printf("  |%s|-----|------|----------|----------|\n",
	       "------------------------------------------");

	/* 1. No override: the key's home carries 1 - p + N p. */
	assert_true(sim_step(m, &ratio));
	print_row("no override", N_SIM, 0, ratio, formula(N_SIM, P_HOT, 1));
	assert_true(ratio > formula(N_SIM, P_HOT, 1) - tol &&
	            ratio < formula(N_SIM, P_HOT, 1) + tol);

	/* Promoted in that same window: r = 32 along the key's rendezvous order
	 * (even traffic: every headroom is 0.33 of the average, 8 / 0.33 = 24.2,
	 * and 32 is the ladder's rung above it). */
	o = find_ov(m->h, 0, HOT_HASH);
	assert_non_null(o);
	r_ref = ref_water_fill(m, C_CAP);
	if (!realistic)
		assert_int_equal(r_ref, 32);
	assert_int_equal(o->n_replicas, r_ref);
	assert_valid_override(m->s, o);
	np = lb_hotkey_order(m->s, &m->s->vips[0], HOT_HASH, pref, N_SIM);
	assert_int_equal(np, N_SIM);
	if (!realistic) {
		/* Every backend projects to 1.17 <= 1.25: the first 32 in order. */
		assert_memory_equal(o->replicas, pref, 32 * sizeof(uint16_t));
	}

	/* 2. With the computed r: under the cap, and steady (no re-plans). */
	for (int k = 0; k < 5; k++) {
		assert_false(sim_step(m, &ratio));
		if (realistic)
			assert_true(ratio <= C_CAP + ULP);
		else
			assert_true(ratio > formula(N_SIM, P_HOT, 32) - tol &&
			            ratio < formula(N_SIM, P_HOT, 32) + tol);
	}
	print_row("computed r (bounded loads)", N_SIM, r_ref, ratio, formula(N_SIM, P_HOT, r_ref));
	assert_true(ratio <= C_CAP + ULP);
	assert_int_equal(counter(m->h, "replans"), 0);
	if (realistic) {
		/* For contrast: the same r on the first 25 of the preference order
		 * without the cap check (plain consistent hashing with replicas). */
		uint64_t peak = 0, other = m->T - m->hot;

		for (uint32_t j = 0; j < np; j++) {
			uint64_t l = (uint64_t)((double)other * m->w[pref[j]] + 0.5) +
			             (j < 25 ? m->hot / 25 : 0);

			peak = l > peak ? l : peak;
		}
		print_row("computed r, no cap check (for contrast)", N_SIM, 25,
		          (double)peak * N_SIM / (double)m->T, formula(N_SIM, P_HOT, 25));
	}

	/* 3. Pinned to r = 4: the cap cannot hold; least loaded, and no churn. */
	assert_int_equal(lb_hotkey_pin(m->h, m->s, 0, HOT_HASH, NULL, 4, m->window), 0);
	o = find_ov(m->h, 0, HOT_HASH);
	assert_int_equal(o->n_replicas, 4);
	assert_true(o->pinned);
	assert_valid_override(m->s, o);
	if (!realistic)
		assert_memory_equal(o->replicas, pref, 4 * sizeof(uint16_t));
	for (int k = 0; k < 5; k++) {
		assert_false(sim_step(m, &ratio));
		assert_true(ratio > formula(N_SIM, P_HOT, 4) - tol &&
		            ratio < formula(N_SIM, P_HOT, 4) + tol);
	}
	print_row("pinned r = 4", N_SIM, 4, ratio, formula(N_SIM, P_HOT, 4));

	/* 4. Unpinned: the 5 pinned windows were over the cap (>= the 3 the
	 * persistence rule asks), so r grows back to the computed one in the
	 * next window. */
	assert_int_equal(lb_hotkey_unpin(m->h, 0, HOT_HASH), 0);
	assert_true(sim_step(m, NULL));
	o = find_ov(m->h, 0, HOT_HASH);
	assert_int_equal(o->n_replicas, r_ref);
	assert_false(o->pinned);
	assert_false(sim_step(m, &ratio));
	assert_true(ratio <= C_CAP + ULP);
	print_row("unpinned: computed r again", N_SIM, r_ref, ratio, formula(N_SIM, P_HOT, r_ref));

	/* 5. A replica fails: the first of the list, marked down in a rebuilt
	 * snapshot. */
	memcpy(before, o->replicas, o->n_replicas * sizeof(before[0]));
	n_before = o->n_replicas;
	failed = o->replicas[0];
	assert_int_equal(m->cfg->vips[0].backends[failed].id, failed);
	m->cfg->vips[0].backends[failed].state = LB_BACKEND_DOWN;
	sim_publish(m);
	tol = realistic ? (1 - P_HOT) * m->other_dev + ULP : ULP;
	/* The window of the failure re-plans at once (no persistence). */
	assert_true(sim_step(m, &ratio));
	print_row("replica down, before re-plan", N_SIM - 1, r_ref - 1, ratio,
	          formula(N_SIM - 1, P_HOT, r_ref - 1));
	o = find_ov(m->h, 0, HOT_HASH);
	assert_non_null(o);
	assert_false(has_replica(o, failed));
	assert_valid_override(m->s, o);
	/* The same count with the failed position substituted still holds the
	 * cap over the 99 left (even traffic: 0.92 + 7.92 / 32 = 1.17): only
	 * that position changes, so only its flows move. */
	r_ref = n_before;
	assert_int_equal(o->n_replicas, r_ref);
	for (uint16_t i = 1; i < o->n_replicas; i++)
		assert_int_equal(o->replicas[i], before[i]);
	assert_false(sim_step(m, &ratio));
	assert_true(ratio <= C_CAP + ULP);
	if (!realistic)
		assert_true(ratio > formula(N_SIM - 1, P_HOT, r_ref) - tol &&
		            ratio < formula(N_SIM - 1, P_HOT, r_ref) + tol);
	print_row("replica down, re-planned", N_SIM - 1, o->n_replicas, ratio,
	          formula(N_SIM - 1, P_HOT, o->n_replicas));
	assert_int_equal(counter(m->h, "promotions"), 1);
	assert_int_equal(counter(m->h, "demotions"), 0);
	sim_free(m);
}

/*
 * A replica whose other traffic rises above the cap is replaced once it has
 * been over the cap in 3 consecutive windows (the persistence rule of
 * docs/hot-keys.md; the test counts the windows from the loads it sends);
 * then quiet.
 */
static void
test_hotkey_load_shift_replans(void **state)
{
	struct lb_hot_params p = {.threshold = 0.01, .epsilon = C_CAP - 1, .margin = -1};
	struct sim *m = sim_new(false, N_SIM, &p);
	const struct lb_hot_override *o;
	uint16_t victim;
	double ratio;

	(void)state;
	m->T = T_EXACT;
	m->hot = (uint64_t)(P_HOT * T_EXACT + 0.5);
	assert_true(sim_step(m, NULL));
	o = find_ov(m->h, 0, HOT_HASH);
	victim = o->replicas[3];
	m->extra[victim] = T_EXACT / N_SIM / 2; /* +0.5 average */
	for (uint32_t over = 0;;) {
		bool changed = sim_step(m, NULL);

		/* The load the victim was sent this window against the cap. */
		over = (double)m->load[victim] >
		                       C_CAP * (double)(T_EXACT + m->extra[victim]) / N_SIM
		               ? over + 1
		               : 0;
		assert_true(m->window < 10);
		if (over < 3) {
			assert_false(changed);
			continue;
		}
		assert_true(changed);
		break;
	}
	o = find_ov(m->h, 0, HOT_HASH);
	assert_false(has_replica(o, victim));
	/* The extra load raised the average and so the cap, but the others'
	 * 0.92 is within the noise of their fair 0.925 and counts as that:
	 * 1.25 x 1.005 - 0.925 = 0.331 < 8 / 24, so the rung stays 32, the
	 * victim's position substituted. */
	assert_int_equal(ref_water_fill(m, C_CAP), 32);
	assert_int_equal(o->n_replicas, 32);
	assert_int_equal(counter(m->h, "replans"), 1);
	for (int k = 0; k < 10; k++)
		assert_false(sim_step(m, &ratio));
	/* The victim's own 0.92 + 0.5 is not the key's doing; the replicas hold the cap. */
	for (uint16_t i = 0; i < o->n_replicas; i++)
		assert_true((double)m->load[o->replicas[i]] <=
		            C_CAP * (double)(T_EXACT + m->extra[victim]) / N_SIM);
	assert_int_equal(counter(m->h, "replans"), 1);
	sim_free(m);
}

/* Every way a replica stops being usable: the next window re-plans without it. */
enum unusable_how { GONE_DOWN, GONE_DRAINING, GONE_WEIGHT0, GONE_REMOVED };

static const char *const g_unusable_names[] = {"down", "draining", "weight 0", "removed"};
static const enum unusable_how g_unusable[] = {GONE_DOWN, GONE_DRAINING, GONE_WEIGHT0,
                                               GONE_REMOVED};

static void
test_hotkey_replica_unusable(void **state)
{
	const enum unusable_how how = *(const enum unusable_how *)*state;
	struct lb_hot_params p = {.epsilon = C_CAP - 1, .margin = -1};
	struct sim *m = sim_new(false, 20, &p);
	struct lb_cfg_vip *cv = &m->cfg->vips[0];
	const struct lb_hot_override *o;
	uint16_t gone;

	m->T = 2000000;
	m->hot = 600000; /* p = 0.3: ceil(20 * 0.3 / 0.55) = 11, the rung 12 */
	assert_true(sim_step(m, NULL));
	o = find_ov(m->h, 0, HOT_HASH);
	assert_int_equal(ref_water_fill(m, C_CAP), 12);
	assert_int_equal(o->n_replicas, 12);
	gone = o->replicas[1];
	printf("  replica %u %s\n", gone, g_unusable_names[how]);
	switch (how) {
	case GONE_DOWN:
		cv->backends[gone].state = LB_BACKEND_DOWN;
		break;
	case GONE_DRAINING:
		cv->backends[gone].state = LB_BACKEND_DRAINING;
		break;
	case GONE_WEIGHT0:
		cv->backends[gone].weight = 0;
		break;
	case GONE_REMOVED:
		memmove(&cv->backends[gone], &cv->backends[gone + 1],
		        (cv->n_backends - gone - 1) * sizeof(*cv->backends));
		cv->n_backends--;
		break;
	}
	sim_publish(m);
	assert_true(sim_step(m, NULL));
	o = find_ov(m->h, 0, HOT_HASH);
	assert_false(has_replica(o, gone));
	assert_valid_override(m->s, o);
	/* 19 left: 0.3 T over headrooms of 0.55 T / 19 -> ceil(10.36) = 11, the
	 * rung 12, and the same 12 with the position substituted hold the cap.
	 * The window of the change spreads the traffic anew; that step is not
	 * noise, so it must not widen the margin and inflate r. */
	assert_int_equal(ref_water_fill(m, C_CAP), 12);
	assert_int_equal(o->n_replicas, 12);
	assert_int_equal(counter(m->h, "replans"), 1);
	assert_false(sim_step(m, NULL));
	sim_free(m);
}

/* --- the flapping bound ------------------------------------------------------ */

/*
 * A minute of 100 ms windows: p follows a triangle wave between 0.3 φ and
 * 1.7 φ (period 20 s) plus uniform noise of ±0.15 φ, so it crosses φ many
 * times near each crossing. Bound: a promotion needs p >= φ, a demotion needs
 * D consecutive windows with p < φ/2, and they alternate. So promotions are at
 * most the number U of band crossings (p entering [φ, 1] after having been
 * below φ/2, or at the start), demotions at most promotions, and an override
 * lives at least D windows. Checked per event, and the counts are asserted.
 */
static void
test_hotkey_sweep_no_flapping(void **state)
{
	const double phi = 0.01, low = phi / 2;
	const uint32_t D = 5, windows = 600, period = 200;
	struct lb_hot_params p = {.threshold = phi,
	                          .threshold_low = low,
	                          .demote_windows = D,
	                          .epsilon = 0.25,
	                          .ewma_alpha = 0.5};
	struct sim *m = sim_new(false, N_SIM, &p);
	double share[600];
	uint64_t rng = 7, promoted_at = 0;
	uint32_t promotions = 0, demotions = 0, naive = 0, band_up = 0, below_run = 0;
	uint32_t r_prev = 0, r_max = 0, r_top = 0, r_changes = 0;
	bool was_on = false, naive_on = false, band_high = false, band_known = false;
	bool falling = false;

	(void)state;
	m->T = 1000000;
	for (uint32_t t = 0; t < windows; t++) {
		uint32_t ph = t % period;
		double tri = ph < period / 2 ? -1 + 4.0 * ph / period : 3 - 4.0 * ph / period;
		double noise = ((double)(rng_next(&rng) >> 11) / (double)(1ULL << 53)) * 2 - 1;
		bool on;

		/* From 0 to 2.35 phi, at 0 for a tenth of each period: the low end is below 0.8 of
		 * the promotion bound (c - 1)/(N - 1) = 0.25 phi, where a key goes home. */
		share[t] = phi * (1 + 1.2 * tri + 0.15 * noise);
		if (share[t] < 0)
			share[t] = 0;
		m->hot = (uint64_t)(share[t] * (double)m->T + 0.5);
		sim_step(m, NULL);
		on = find_ov(m->h, 0, HOT_HASH) != NULL;
		below_run = share[t] < low ? below_run + 1 : 0;
		if (on && !was_on) {
			promotions++;
			promoted_at = m->window;
			assert_true(share[t] >= phi);
		}
		if (!on && was_on) {
			demotions++;
			assert_true(below_run >= D);
			assert_true(m->window - promoted_at >= D);
		}
		if (on) {
			uint16_t r = find_ov(m->h, 0, HOT_HASH)->n_replicas;

			assert_valid_override(m->s, find_ov(m->h, 0, HOT_HASH));
			/* r within one lifetime: a staircase up, then down, no back and forth. */
			if (!was_on) {
				r_prev = r_max = r;
				falling = false;
			}
			if (r < r_prev)
				falling = true;
			if (r > r_prev)
				assert_false(falling);
			if (r > r_max)
				r_max = r;
			if (r != r_prev)
				r_changes++;
			r_prev = r;
			if (r_max > r_top)
				r_top = r_max;
		}
		was_on = on;
		/* The band state machine, and a single-threshold controller to compare. */
		if (share[t] >= phi && (!band_known || !band_high)) {
			band_up++;
			band_high = band_known = true;
		} else if (share[t] < low) {
			band_high = false;
			band_known = true;
		}
		if ((share[t] >= phi) != naive_on) {
			naive++;
			naive_on = share[t] >= phi;
		}
	}
	printf("\n  sweep over %u windows: promotions %u, demotions %u, re-plans %llu (r up to "
	       "%u); band crossings U = %u; a single-threshold controller would switch %u "
	       "times\n",
	       windows, promotions, demotions, (unsigned long long)counter(m->h, "replans"), r_top,
	       band_up, naive);
	assert_int_equal(counter(m->h, "promotions"), promotions);
	assert_int_equal(counter(m->h, "demotions"), demotions);
	assert_true(promotions >= 1 && demotions >= 1);
	assert_true(promotions <= band_up);
	assert_true(demotions <= promotions && promotions <= demotions + 1);
	/* Three periods: at most one promotion and one demotion each. */
	assert_true(band_up <= windows / period + 1);
	assert_true(promotions <= windows / period && demotions <= windows / period);
	/* Re-plans here are r changes only (nothing fails): a staircase per
	 * lifetime, so at most 2 (r_max - 1) each. */
	assert_int_equal(counter(m->h, "replans"), r_changes);
	assert_true(r_changes <= promotions * 2 * (r_top - 1));
	assert_true(naive > 4 * promotions);
	sim_free(m);
}

/* --- demotion, pinning, removal ---------------------------------------------- */

static void
test_hotkey_demotes_after_share_drops(void **state)
{
	struct lb_hot_params p = {.demote_windows = 5};
	struct sim *m = sim_new(false, N_SIM, &p);
	uint16_t home;

	(void)state;
	m->T = T_EXACT;
	m->hot = (uint64_t)(P_HOT * T_EXACT + 0.5);
	assert_true(sim_step(m, NULL));
	assert_non_null(find_ov(m->h, 0, HOT_HASH));
	/* A one-window gap (the sketch missed it) does not demote... */
	m->hot_reported = false;
	assert_false(sim_step(m, NULL));
	m->hot_reported = true;
	assert_false(sim_step(m, NULL));
	assert_int_equal(find_ov(m->h, 0, HOT_HASH)->low_windows, 0);
	/* ...five windows without it do, on the fifth. */
	m->hot_reported = false;
	for (int k = 1; k < 5; k++) {
		sim_step(m, NULL);
		assert_non_null(find_ov(m->h, 0, HOT_HASH));
		assert_int_equal(find_ov(m->h, 0, HOT_HASH)->low_windows, k);
	}
	assert_true(sim_step(m, NULL));
	assert_null(find_ov(m->h, 0, HOT_HASH));
	assert_int_equal(counter(m->h, "demotions"), 1);
	assert_int_equal(counter(m->h, "active"), 0);
	/* Back on its home: no more changes. */
	home = lb_maglev_pick(m->s, &m->s->vips[0], HOT_HASH);
	m->hot = 0;
	assert_false(sim_step(m, NULL));
	assert_int_not_equal(home, LB_BACKEND_NONE);

	/* A share between the thresholds keeps the override (hysteresis). */
	m->hot_reported = true;
	m->hot = (uint64_t)(0.02 * T_EXACT);
	assert_true(sim_step(m, NULL));
	m->hot = (uint64_t)(0.007 * T_EXACT); /* below φ = 0.01, above φ/2 */
	for (int k = 0; k < 20; k++)
		sim_step(m, NULL);
	assert_non_null(find_ov(m->h, 0, HOT_HASH));
	sim_free(m);
}

static void
test_hotkey_pin_unpin(void **state)
{
	struct lb_hot_params p = {.demote_windows = 3};
	struct sim *m = sim_new(false, N_SIM, &p);
	const struct lb_hot_override *o;
	const uint64_t cold = 0xc01dULL;
	struct lb_flow_key key;

	(void)state;
	m->T = T_EXACT;
	m->hot = (uint64_t)(P_HOT * T_EXACT + 0.5);
	assert_true(sim_step(m, NULL));
	/* Pinned with r = 0 (computed): keeps its r, never demoted. Default
	 * margin: headroom 1.25 x 0.95 - 0.92 = 0.2675, 8 / 0.2675 -> 30, the
	 * rung 32. */
	assert_int_equal(ref_water_fill_margin(m, DEFAULT_C, DEFAULT_MARGIN), 32);
	assert_int_equal(lb_hotkey_pin(m->h, m->s, 0, HOT_HASH, NULL, 0, m->window), 0);
	assert_int_equal(find_ov(m->h, 0, HOT_HASH)->n_replicas, 32);
	m->hot_reported = false;
	for (int k = 0; k < 20; k++)
		sim_step(m, NULL);
	o = find_ov(m->h, 0, HOT_HASH);
	assert_non_null(o);
	assert_true(o->pinned);
	assert_int_equal(o->low_windows, 20);
	assert_int_equal(counter(m->h, "pinned"), 1);
	/* Unpinned: demoted after demote_windows more windows. */
	assert_int_equal(lb_hotkey_unpin(m->h, 0, HOT_HASH), 0);
	assert_int_equal(counter(m->h, "pinned"), 0);
	for (int k = 0; k < 2; k++) {
		sim_step(m, NULL);
		assert_non_null(find_ov(m->h, 0, HOT_HASH));
	}
	assert_true(sim_step(m, NULL));
	assert_null(find_ov(m->h, 0, HOT_HASH));

	/* Pinning a key that was never hot: one replica per r, key stored. */
	memset(&key, 0, sizeof(key));
	key.sport = 1234;
	assert_int_equal(lb_hotkey_pin(m->h, m->s, 0, cold, &key, 0, m->window), 0);
	o = find_ov(m->h, 0, cold);
	assert_int_equal(o->n_replicas, 1);
	assert_int_equal(o->key.sport, 1234);
	assert_int_equal(lb_hotkey_pin(m->h, m->s, 0, cold, &key, 3, m->window), 0);
	assert_int_equal(find_ov(m->h, 0, cold)->n_replicas, 3);
	assert_valid_override(m->s, find_ov(m->h, 0, cold));
	/* r larger than N is clamped to N. */
	assert_int_equal(lb_hotkey_pin(m->h, m->s, 0, cold, &key, 200, m->window), 0);
	assert_int_equal(find_ov(m->h, 0, cold)->n_replicas, N_SIM);
	assert_valid_override(m->s, find_ov(m->h, 0, cold));

	/* Errors. */
	assert_int_equal(lb_hotkey_pin(m->h, m->s, 7, cold, NULL, 0, m->window), -ENOENT);
	assert_int_equal(lb_hotkey_unpin(m->h, 0, 0xdeadULL), -ENOENT);
	assert_int_equal(lb_hotkey_unpin(m->h, 7, cold), -ENOENT);
	sim_free(m);
}

static void
test_hotkey_table_full(void **state)
{
	uint32_t n = 4;
	struct lb_config *cfg = cfg_make(1, &n);
	struct lb_snapshot *s = snap_make(cfg, 1);
	struct lb_hotkey *h = lb_hotkey_create(NULL);
	uint64_t load[4] = {100, 100, 100, 100}, total[1] = {400};
	struct lb_hot_candidate c = {.vip_id = 0, .key_hash = 0xfeed, .count = 200};

	(void)state;
	for (uint64_t k = 0; k < LB_HOT_MAX_OVERRIDES; k++)
		assert_int_equal(lb_hotkey_pin(h, s, 0, k * 0x9e3779b97f4a7c15ULL + 1, NULL, 2, 1),
		                 0);
	assert_int_equal(lb_hotkey_pin(h, s, 0, 0xfeed, NULL, 2, 1), -ENOSPC);
	assert_int_equal(counter(h, "active"), LB_HOT_MAX_OVERRIDES);
	/* A hot key that finds the table full is counted, not promoted. */
	lb_hotkey_window(h, s, load, total, &c, 1, 2);
	assert_int_equal(counter(h, "table_full"), 1);
	assert_null(find_ov(h, 0, 0xfeed));
	/* Every pinned key is still found (the index survives the fill). */
	for (uint64_t k = 0; k < LB_HOT_MAX_OVERRIDES; k++)
		assert_int_equal(lb_hotkey_unpin(h, 0, k * 0x9e3779b97f4a7c15ULL + 1), 0);
	lb_hotkey_free(h);
	lb_snapshot_free(s);
	lb_config_free(cfg);
}

static void
test_hotkey_vip_removed_drops(void **state)
{
	const uint32_t n[2] = {10, 10};
	struct lb_config *cfg = cfg_make(2, n);
	struct lb_snapshot *s = snap_make(cfg, 1);
	struct lb_hotkey *h = lb_hotkey_create(NULL);
	uint64_t load[20], total[2] = {1000000, 1000000};
	struct lb_hot_candidate c[2] = {{.vip_id = 0, .key_hash = 11, .count = 300000},
	                                {.vip_id = 1, .key_hash = 22, .count = 300000}};
	json_t *ev;

	(void)state;
	for (int i = 0; i < 20; i++)
		load[i] = 100000;
	load[lb_maglev_pick(s, &s->vips[0], 11)] += 300000;
	load[lb_maglev_pick(s, &s->vips[1], 22)] += 300000;
	assert_true(lb_hotkey_window(h, s, load, total, c, 2, 1));
	assert_int_equal(counter(h, "active"), 2);

	/* VIP 1 removed: its override goes, VIP 0's stays. */
	lb_snapshot_free(s);
	lb_config_free(cfg);
	cfg = cfg_make(1, n);
	s = snap_make(cfg, 2);
	assert_true(lb_hotkey_window(h, s, load, total, c, 2, 2));
	assert_null(find_ov(h, 1, 22));
	assert_non_null(find_ov(h, 0, 11));
	assert_int_equal(counter(h, "dropped"), 1);
	ev = lb_hotkey_events_json(h);
	assert_string_equal(json_string_value(json_object_get(
	                            json_array_get(ev, json_array_size(ev) - 1), "event")),
	                    "drop");
	json_decref(ev);
	lb_hotkey_free(h);
	lb_snapshot_free(s);
	lb_config_free(cfg);
}

/* One usable backend (one configured, or two with one down): nothing to spread. */
static void
test_hotkey_single_backend_not_promoted(void **state)
{
	const uint32_t n[2] = {1, 2};
	struct lb_config *cfg = cfg_make(2, n);
	struct lb_snapshot *s;
	struct lb_hotkey *h = lb_hotkey_create(NULL);
	uint64_t load[3] = {1000, 1000, 0}, total[2] = {1000, 1000};
	struct lb_hot_candidate c[2] = {{.vip_id = 0, .key_hash = 1, .count = 900},
	                                {.vip_id = 1, .key_hash = 2, .count = 900}};

	(void)state;
	cfg->vips[1].backends[1].state = LB_BACKEND_DOWN;
	s = snap_make(cfg, 1);
	assert_int_equal(s->vips[1].n_active, 1);
	assert_false(lb_hotkey_window(h, s, load, total, c, 2, 1));
	assert_int_equal(counter(h, "active"), 0);
	assert_int_equal(counter(h, "promotions"), 0);
	lb_hotkey_free(h);
	lb_snapshot_free(s);
	lb_config_free(cfg);
}

/* --- events, counters, parameters -------------------------------------------- */

static void
test_hotkey_events_json(void **state)
{
	struct lb_hot_params p = {.demote_windows = 2};
	struct sim *m = sim_new(false, N_SIM, &p);
	static const char *const want[] = {"promote", "pin", "unpin", "demote"};
	char hash[24];
	json_t *ev, *e;

	(void)state;
	m->T = T_EXACT;
	m->hot = (uint64_t)(P_HOT * T_EXACT + 0.5);
	sim_step(m, NULL);
	assert_int_equal(lb_hotkey_pin(m->h, m->s, 0, HOT_HASH, NULL, 0, m->window), 0);
	assert_int_equal(lb_hotkey_unpin(m->h, 0, HOT_HASH), 0);
	m->hot_reported = false;
	sim_step(m, NULL);
	sim_step(m, NULL);
	ev = lb_hotkey_events_json(m->h);
	assert_true(json_is_array(ev));
	assert_int_equal(json_array_size(ev), 4);
	snprintf(hash, sizeof(hash), "0x%016llx", (unsigned long long)HOT_HASH);
	for (size_t i = 0; i < 4; i++) {
		e = json_array_get(ev, i);
		assert_string_equal(json_string_value(json_object_get(e, "event")), want[i]);
		assert_string_equal(json_string_value(json_object_get(e, "key_hash")), hash);
		assert_int_equal(json_integer_value(json_object_get(e, "vip_id")), 0);
		assert_true(json_is_real(json_object_get(e, "share")));
		assert_true(json_is_integer(json_object_get(e, "window")));
	}
	e = json_array_get(ev, 0);
	assert_int_equal(json_integer_value(json_object_get(e, "window")), 1);
	assert_int_equal(json_integer_value(json_object_get(e, "replicas")),
	                 ref_water_fill_margin(m, DEFAULT_C, DEFAULT_MARGIN));
	assert_true(json_real_value(json_object_get(e, "share")) > P_HOT - ULP);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ev, 3), "window")), 3);
	json_decref(ev);

	/* The ring keeps the newest LB_HOT_MAX_EVENTS, oldest first. */
	for (uint32_t k = 0; k < LB_HOT_MAX_EVENTS; k++) {
		assert_int_equal(lb_hotkey_pin(m->h, m->s, 0, 77, NULL, 1, 100 + k), 0);
		assert_int_equal(lb_hotkey_unpin(m->h, 0, 77), 0);
	}
	ev = lb_hotkey_events_json(m->h);
	assert_int_equal(json_array_size(ev), LB_HOT_MAX_EVENTS);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ev, 0), "window")),
	                 100 + LB_HOT_MAX_EVENTS / 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 0), "event")),
	                    "pin");
	json_decref(ev);
	sim_free(m);
}

static void
test_hotkey_params(void **state)
{
	static const struct lb_hot_params bad[] = {
	        {.threshold = -0.1},
	        {.threshold = 1.5},
	        {.threshold = 0.01, .threshold_low = 0.02},
	        {.epsilon = -1},
	        {.ewma_alpha = 1.5},
	        {.threshold = __builtin_nan("")},
	        {.epsilon = 100.001},
	        {.demote_windows = 1001},
	        {.ewma_alpha = 0.0099},
	        {.margin = 0.501},
	};
	struct lb_hot_params p, q = {.threshold = 0.05, .epsilon = 0.1};
	struct lb_hotkey *h = lb_hotkey_create(NULL);

	(void)state;
	assert_non_null(h);
	lb_hotkey_get_params(h, &p);
	/* threshold auto (0): no floor beyond the VIP's promotion bound. */
	assert_true(p.threshold == 0 && p.threshold_low == 0 && p.demote_windows == 5 &&
	            p.epsilon == 0.25 && p.ewma_alpha == 0.5);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_null(lb_hotkey_create(&bad[i]));
		assert_int_equal(errno, EINVAL);
		assert_int_equal(lb_hotkey_set_params(h, &bad[i]), -EINVAL);
	}
	assert_int_equal(lb_hotkey_set_params(h, &q), 0);
	lb_hotkey_get_params(h, &p);
	assert_true(p.threshold == 0.05 && p.threshold_low == 0.025 && p.epsilon == 0.1);
	lb_hotkey_free(h);
	lb_hotkey_free(NULL);
}

int
main(void)
{
	static const int realistic = 1;
	struct CMUnitTest tests[64];
	size_t n = 0;

	tests[n++] =
	        (struct CMUnitTest)cmocka_unit_test_prestate(test_hotkey_simulation_table, NULL);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_prestate(test_hotkey_simulation_table,
	                                                          (void *)&realistic);
	for (size_t i = 0; i < sizeof(g_unusable) / sizeof(g_unusable[0]); i++)
		tests[n++] = (struct CMUnitTest)cmocka_unit_test_prestate(
		        test_hotkey_replica_unusable, (void *)&g_unusable[i]);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_load_shift_replans);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_sweep_no_flapping);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_demotes_after_share_drops);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_pin_unpin);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_table_full);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_vip_removed_drops);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_single_backend_not_promoted);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_events_json);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hotkey_params);
	return _cmocka_run_group_tests("hotkey", tests, n, NULL, NULL);
}
