/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two hot-key controllers behind ECMP: the real controller code, two
 * instances with byte-identical snapshots, each fed its own half of the same
 * traffic (every split and the sketch's 1-in-16 sample drawn independently).
 * Per window after promotion: the fraction of the hot key's new flows both
 * send to the same backend (the real pick over the real layouts) and each
 * one's expected peak/average. Prints the table of docs/hot-keys.md.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/build/snapshot_build.h"
#include "dataplane/override.h"
#include "../support/rng.h"
#include "hotkey_fixture.h"

#define SAMPLE_SHIFT 4 /* the data path's default: 1 packet in 16 */
#define WINDOWS 40     /* windows judged per row */
#define FLOWS 20000    /* flow hashes over which agreement is counted */
#define C_CAP 1.25

/* One instance: its controller, its randomness, its loads. */
struct inst {
	struct lb_hotkey *h;
	uint64_t rng;
	uint64_t load[LB_MAX_BACKENDS];
	struct lb_snapshot *laid; /* its overrides laid out by the real builder */
};

struct world {
	struct lb_config *cfg;
	struct lb_snapshot *s;
	double w[LB_MAX_BACKENDS]; /* share of the other traffic: Maglev table slots */
	uint32_t n;
	struct inst in[2];
};

static struct lb_snapshot *
lay(struct world *wd, struct lb_hotkey *h)
{
	static struct lb_snapshot_override ov[LB_HOT_MAX_OVERRIDES];
	const struct lb_hot_override *o;
	uint32_t n = lb_hotkey_overrides(h, &o);
	struct lb_snapshot *s;
	char err[256];

	for (uint32_t i = 0; i < n; i++)
		ov[i] = (struct lb_snapshot_override){o[i].vip_id, o[i].key_hash, o[i].n_replicas,
		                                      o[i].replicas};
	s = lb_snapshot_build_ext(wd->cfg, wd->s->generation, wd->s, ov, n, err, sizeof(err));
	if (s == NULL)
		fail_msg("snapshot: %s", err);
	return s;
}

/* This window of instance x: T packets of which the key's share p; its loads
 * as its own layout spreads them, the sketch's count; one controller window.
 * Returns the instance's expected peak/average (its layout, the shares). */
static double
step(struct world *wd, struct inst *x, uint64_t T, double p, uint64_t window)
{
	const struct lb_override_slot *os;
	struct lb_hot_candidate c = {.vip_id = 0, .key_hash = HOT_HASH};
	uint64_t vip_total[LB_MAX_VIPS] = {0}, nk = rng_binomial(&x->rng, T, p), rest = T - nk;
	double lambda = (double)(T >> SAMPLE_SHIFT) / 8192.0, part[LB_MAX_BACKENDS] = {0};
	double peak = 0, left = 1;
	uint64_t over = UINT64_MAX;

	memset(x->load, 0, sizeof(x->load));
	os = x->laid != NULL ? lb_override_find(&x->laid->overrides, 0, HOT_HASH) : NULL;
	if (os == NULL)
		part[lb_maglev_pick(wd->s, &wd->s->vips[0], HOT_HASH)] = 1;
	else
		for (uint32_t e = 0; e < os->n_replicas; e++)
			part[x->laid->overrides.replicas[os->first + e]] += 1.0 / os->n_replicas;
	/* The key's packets by the layout's parts, the rest by the table. */
	for (uint32_t id = 0; id < wd->n; id++) {
		uint64_t k = part[id] > 0 ? rng_binomial(&x->rng, nk, part[id] / left) : 0;

		k = k > nk ? nk : k;
		x->load[id] += k;
		nk -= k;
		left -= part[id];
	}
	left = 1;
	for (uint32_t id = 0; id < wd->n; id++) {
		uint64_t o = rng_binomial(&x->rng, rest, left > 0 ? wd->w[id] / left : 0);

		o = o > rest ? rest : o;
		x->load[id] += o;
		rest -= o;
		left -= wd->w[id];
		peak = (1 - p) * wd->w[id] + p * part[id] > peak
		               ? (1 - p) * wd->w[id] + p * part[id]
		               : peak;
	}
	vip_total[0] = T;
	/* The sketch: a 1-in-16 sample of the key plus a Count-Min overestimate. */
	for (int r = 0; r < 4; r++) {
		double v = lambda + rng_sqrt(lambda) * rng_normal(&x->rng) + 0.5;
		uint64_t cm = v > 0 ? (uint64_t)v : 0;

		over = cm < over ? cm : over;
	}
	c.count = (rng_binomial(&x->rng, (uint64_t)(p * (double)T), 1.0 / (1u << SAMPLE_SHIFT)) +
	           over)
	          << SAMPLE_SHIFT;
	if (lb_hotkey_window(x->h, wd->s, x->load, vip_total, &c, 1, window)) {
		lb_snapshot_free(x->laid);
		x->laid = lay(wd, x->h);
	}
	return peak * wd->n;
}

/* The fraction of FLOWS random flow hashes the two layouts send alike. */
static double
agreement(const struct world *wd, uint64_t seed)
{
	const struct lb_override_slot *a, *b;
	uint32_t same = 0;

	a = wd->in[0].laid ? lb_override_find(&wd->in[0].laid->overrides, 0, HOT_HASH) : NULL;
	b = wd->in[1].laid ? lb_override_find(&wd->in[1].laid->overrides, 0, HOT_HASH) : NULL;
	if (a == NULL || b == NULL)
		return a == b ? 1 : -1; /* -1: only one has promoted */
	for (uint32_t f = 0; f < FLOWS; f++) {
		uint64_t hsh = rng_next(&seed);

		same += lb_override_pick(&wd->in[0].laid->overrides, a, hsh) ==
		        lb_override_pick(&wd->in[1].laid->overrides, b, hsh);
	}
	return (double)same / FLOWS;
}

struct row {
	double p;
	uint64_t T;
	uint32_t n_backends;  /* 0: N_SIM */
	double threshold;     /* 0: 0.01 */
	uint32_t windows_max; /* windows judged: 0 means WINDOWS */
	uint32_t differ;      /* windows whose two lists differ */
	uint32_t one_only;    /* windows in which only one instance has the key */
	double dp;            /* instance 0 sees share p + dp, instance 1 p - dp */
	double min_agree, mean_agree, max_peak;
	uint32_t r_lo, r_hi, below; /* replica counts seen; windows agreeing on < 95% */
	uint32_t windows;
};

static void
run_row(struct row *rw, uint64_t seed)
{
	struct lb_hot_params hp = {.threshold = rw->threshold > 0 ? rw->threshold : 0.01,
	                           .epsilon = C_CAP - 1};
	uint32_t n = rw->n_backends ? rw->n_backends : N_SIM, judged = 0;
	uint32_t want = rw->windows_max ? rw->windows_max : WINDOWS;
	struct world wd;
	double sum = 0;

	memset(&wd, 0, sizeof(wd));
	wd.cfg = cfg_make(1, &n);
	wd.s = snap_make(wd.cfg, 1);
	wd.n = wd.s->n_backends;
	for (uint32_t i = 0; i < wd.s->table_size; i++)
		wd.w[wd.s->vips[0].table[i]] += 1.0 / wd.s->table_size;
	for (int i = 0; i < 2; i++) {
		wd.in[i].h = lb_hotkey_create(&hp);
		assert_non_null(wd.in[i].h);
		wd.in[i].rng = seed * 2 + (uint64_t)i + 1;
	}
	rw->min_agree = 1;
	rw->max_peak = 0;
	rw->r_lo = UINT32_MAX;
	rw->r_hi = 0;
	rw->below = 0;
	rw->differ = 0;
	rw->one_only = 0;
	for (uint64_t win = 1; judged < want; win++) {
		const struct lb_hot_override *o[2];
		double a;

		assert_true(win < want + (rw->threshold > 0 ? 200 : 10));
		for (int i = 0; i < 2; i++) {
			double pk =
			        step(&wd, &wd.in[i], rw->T, rw->p + (i ? -rw->dp : rw->dp), win);

			if (win > 1)
				rw->max_peak = pk > rw->max_peak ? pk : rw->max_peak;
		}
		/* From the first window both have promoted. */
		o[0] = find_ov(wd.in[0].h, 0, HOT_HASH);
		o[1] = find_ov(wd.in[1].h, 0, HOT_HASH);
		if (o[0] == NULL && o[1] == NULL)
			continue;
		a = agreement(&wd, seed ^ win);
		if (a < 0) {
			/* One has promoted, the other not yet: its flows go home. */
			assert_true(rw->threshold > 0);
			rw->one_only++;
			continue;
		}
		if (o[0]->n_replicas != o[1]->n_replicas ||
		    memcmp(o[0]->replicas, o[1]->replicas,
		           o[0]->n_replicas * sizeof(o[0]->replicas[0])) != 0)
			rw->differ++;
		for (int i = 0; i < 2; i++) {
			rw->r_lo = o[i]->n_replicas < rw->r_lo ? o[i]->n_replicas : rw->r_lo;
			rw->r_hi = o[i]->n_replicas > rw->r_hi ? o[i]->n_replicas : rw->r_hi;
		}
		if (a < 0.95)
			rw->below++;
		rw->min_agree = a < rw->min_agree ? a : rw->min_agree;
		sum += a;
		judged++;
	}
	rw->mean_agree = sum / judged;
	rw->windows = judged;
	for (int i = 0; i < 2; i++) {
		lb_snapshot_free(wd.in[i].laid);
		lb_hotkey_free(wd.in[i].h);
	}
	lb_snapshot_free(wd.s);
	lb_config_free(wd.cfg);
}

static void
print_row(const struct row *rw)
{
	printf("  | %5.3f | %7llu | %3u..%-3u | %6.4f | %6.4f | %3u of %3u | %6.4f |\n", rw->p,
	       (unsigned long long)rw->T, rw->r_lo, rw->r_hi, rw->min_agree, rw->mean_agree,
	       rw->below, rw->windows, rw->max_peak);
}

/* Rows over seeds 1..n: the worst and the mean of them. */
static void
run_rows(struct row *rw, uint64_t n)
{
	struct row all = *rw;

	all.min_agree = 1;
	all.mean_agree = 0;
	all.max_peak = 0;
	all.r_lo = UINT32_MAX;
	all.r_hi = 0;
	all.below = all.windows = all.differ = all.one_only = 0;
	for (uint64_t seed = 1; seed <= n; seed++) {
		run_row(rw, seed);
		all.min_agree = rw->min_agree < all.min_agree ? rw->min_agree : all.min_agree;
		all.mean_agree += rw->mean_agree / (double)n;
		all.max_peak = rw->max_peak > all.max_peak ? rw->max_peak : all.max_peak;
		all.r_lo = rw->r_lo < all.r_lo ? rw->r_lo : all.r_lo;
		all.r_hi = rw->r_hi > all.r_hi ? rw->r_hi : all.r_hi;
		all.below += rw->below;
		all.windows += rw->windows;
		all.differ += rw->differ;
		all.one_only += rw->one_only;
	}
	*rw = all;
}

/*
 * The seed scenario: N = 100, p = 0.08, c = 1.25, at 10^5 and 10^6 packets per
 * window per instance, 5 runs of 40 windows each: both instances agree on
 * >= 95% of the key's new flows in every window after promotion, and each
 * stays <= c.
 */
static void
test_two_instances_agree(void **state)
{
	static const uint64_t Ts[] = {100000, 1000000};

	(void)state;
	for (size_t t = 0; t < 2; t++) {
		struct row rw = {.p = 0.08, .T = Ts[t]};

		run_rows(&rw, 5);
		print_row(&rw);
		assert_true(rw.min_agree >= 0.95);
		assert_true(rw.max_peak <= C_CAP + 1e-9);
	}
}

/* The sweep of docs/hot-keys.md: printed; each instance within the cap. */
static void
test_sweep_table(void **state)
{
	static const double ps[] = {0.02, 0.05, 0.059, 0.08, 0.088, 0.1, 0.15, 0.2, 0.3, 0.5};
	static const uint64_t Ts[] = {100000, 1000000};

	(void)state;
	printf("\n  | p     | pkts/w  | r        | min agr | mean   | windows < 95%% | peak |\n");
	for (size_t t = 0; t < 2; t++)
		for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
			struct row rw = {.p = ps[i], .T = Ts[t]};

			run_rows(&rw, 3);
			print_row(&rw);
			assert_true(rw.max_peak <= C_CAP + 1e-9);
		}
}

/*
 * The end-to-end test's volume (ecmp_hot): 8 backends, a key of share 0.5
 * (r 6 or 8 at c = 1.25: near a rung's edge), 150 packets per window per
 * instance, so the key's 1-in-16 count is about 5 per window and its share
 * varies by about 45% window to window. Both instances must settle on the
 * same list and keep it: after the first 20 windows of each run, the lists
 * differ in at most 2% of the windows, over 10 runs of 200 windows.
 */
/* Windows, after the first 20, in which the two lists differ, over runs of
 * 220 windows of the row tmpl with seeds 1..n (*windows: those judged). With
 * verbose, each run's figures are printed. */
static uint32_t
differ_after_head(const struct row *tmpl, uint64_t n, uint32_t *windows, bool verbose)
{
	uint32_t differ = 0;

	*windows = 0;
	for (uint64_t seed = 1; seed <= n; seed++) {
		struct row head = *tmpl, rw = *tmpl;

		head.windows_max = 20;
		rw.windows_max = 220;
		run_row(&head, seed);
		run_row(&rw, seed);
		/* The same seed: rw's first 20 windows are head's. */
		differ += rw.differ - head.differ;
		*windows += rw.windows - head.windows;
		if (verbose)
			printf("  seed %llu: r %u..%u, lists differ in %u of %u windows (%u in the "
			       "first %u), one only %u, min agreement %.3f, peak %.3f\n",
			       (unsigned long long)seed, rw.r_lo, rw.r_hi, rw.differ, rw.windows,
			       head.differ, head.windows, rw.one_only, rw.min_agree, rw.max_peak);
	}
	return differ;
}

static void
test_low_volume_agree(void **state)
{
	const struct row tmpl = {.p = 0.5, .T = 150, .n_backends = 8, .threshold = 0.3};
	uint32_t windows, differ = differ_after_head(&tmpl, 10, &windows, true);

	(void)state;
	printf("  lists differ in %u of %u windows after the first 20\n", differ, windows);
	assert_true(differ * 50 <= windows);
}

/* windows windows of T packets per window, hot of them the key's; the key's
 * override then (the test fails if there is none). */
static const struct lb_hot_override *
sim_run(struct sim *m, uint64_t T, uint64_t hot, int windows)
{
	const struct lb_hot_override *o;

	m->T = T;
	m->hot = hot;
	for (int t = 0; t < windows; t++)
		sim_step(m, NULL);
	o = find_ov(m->h, 0, HOT_HASH);
	assert_non_null(o);
	return o;
}

/*
 * The climb rule at a few samples per window, with exact counts (no noise, so
 * the expected rung follows from the rule in docs/hot-keys.md alone): 16
 * backends, T = 1000 packets per window, a key of share s = 0.18. Its
 * smoothed share is below the 8/12 edge (0.1875 at c = 1.25 and the default
 * margin), its slow share's upper bound s (1 + 2 sqrt(16 / (s T) a / (2 -
 * a))), a = 0.5 / 8, is above it: the key climbs to the rung that bound needs
 * (12, not every backend), and that plan holds the cap (no infeasible event).
 */
static void
test_climbs_on_slow_bound(void **state)
{
	struct lb_hot_params p = {.threshold = 0.1, .epsilon = C_CAP - 1, .ewma_alpha = 0.5};
	struct sim *m = sim_new(false, 16, &p);
	const struct lb_hot_override *o;
	double s = 0.18, a = 0.5 / 8, up, x, x0;
	uint32_t want, plain;
	json_t *cnt;

	(void)state;
	up = s * (1 + 2 * rng_sqrt(16.0 / (s * 1000) * a / (2 - a)));
	x = 16 * up / (C_CAP * (1 - 0.05) - 1 + up);
	x0 = 16 * s / (C_CAP * (1 - 0.05) - 1 + s);
	want = ref_rung(x);
	plain = ref_rung(x0);
	o = sim_run(m, 1000, 180, 30);
	cnt = lb_hotkey_counters_json(m->h);
	printf("  s = 0.18 at 1000 packets per window: r %u for the share (%.2f), slow bound "
	       "%.4f: %.2f -> r %u; r = %u, infeasible %lld\n",
	       plain, x0, up, x, want, o->n_replicas,
	       (long long)json_integer_value(json_object_get(cnt, "infeasible")));
	assert_int_equal(plain, 8);
	assert_int_equal(want, 12);
	assert_int_equal(o->n_replicas, want);
	assert_int_equal(json_integer_value(json_object_get(cnt, "infeasible")), 0);
	json_decref(cnt);
	sim_free(m);
}

/*
 * Where agreement ends (printed with the argument "grid", not run by the
 * suite): 8 backends, shares around the 6/8 edge, T packets per window per
 * instance, the two instances' own shares p + dp and p - dp (ECMP splitting
 * the key's connections unevenly). Windows, after each run's first 20, in
 * which the two lists differ, over 10 runs of 220 windows.
 */
static void
print_grid(void)
{
	static const uint64_t Ts[] = {150, 400, 1000, 4000, 20000};
	static const double dps[] = {0, 0.03, 0.06};
	static const double ps[] = {0.42, 0.48, 0.52};

	printf("| p | packets/window/instance | dp 0 | dp 0.03 | dp 0.06 "
	       "|\n|---|---|---|---|---|\n");
	for (size_t q = 0; q < sizeof(ps) / sizeof(ps[0]); q++)
		for (size_t t = 0; t < sizeof(Ts) / sizeof(Ts[0]); t++) {
			printf("| %.2f | %llu |", ps[q], (unsigned long long)Ts[t]);
			for (size_t d = 0; d < sizeof(dps) / sizeof(dps[0]); d++) {
				const struct row tmpl = {.p = ps[q],
				                         .T = Ts[t],
				                         .n_backends = 8,
				                         .threshold = 0.3,
				                         .dp = dps[d]};
				uint32_t windows,
				        differ = differ_after_head(&tmpl, 10, &windows, false);

				printf(" %.3f |", (double)differ / windows);
			}
			printf("\n");
		}
}

/* A drained instance: ECMP sends it nothing, so its VIP is idle for many
 * windows (below demote_windows). An idle window says nothing about the key's
 * load, so the key's list must stay the one planned under traffic: the peer
 * still plans for the key, and the connections that return on undrain (or
 * move over when the peer drains) are picked over this list. */
static void
test_idle_windows_keep_the_list(void **state)
{
	struct lb_hot_params p = {.threshold = 0.3,
	                          .threshold_low = 0.15,
	                          .demote_windows = 1000,
	                          .epsilon = 0.25,
	                          .ewma_alpha = 0.5};
	struct sim *m = sim_new(true, 8, &p);
	const struct lb_hot_override *o;
	uint16_t before[256], n_before;

	(void)state;
	o = sim_run(m, 400, 200, 40);
	assert_true(o->n_replicas > 1);
	n_before = o->n_replicas;
	memcpy(before, o->replicas, n_before * sizeof(before[0]));
	/* One replica loaded by something else for two windows, just short of
	 * the windows a persistent overload waits before re-planning. */
	m->extra[o->replicas[0]] = 40;
	sim_step(m, NULL);
	sim_step(m, NULL);
	m->extra[o->replicas[0]] = 0;
	o = find_ov(m->h, 0, HOT_HASH);
	assert_int_equal(o->n_replicas, n_before);
	m->T = 0;
	m->hot = 0;
	for (int t = 0; t < 50; t++) {
		sim_step(m, NULL);
		o = find_ov(m->h, 0, HOT_HASH);
		assert_non_null(o);
		assert_int_equal(o->n_replicas, n_before);
		assert_memory_equal(o->replicas, before, n_before * sizeof(before[0]));
	}
	sim_free(m);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_two_instances_agree),
	        cmocka_unit_test(test_sweep_table),
	        cmocka_unit_test(test_low_volume_agree),
	        cmocka_unit_test(test_climbs_on_slow_bound),
	        cmocka_unit_test(test_idle_windows_keep_the_list),
	};

	if (argc > 1 && strcmp(argv[1], "grid") == 0) {
		print_grid();
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
