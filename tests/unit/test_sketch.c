/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the per-core hot-key sketch (dataplane/sketch.h): accuracy on
 * a Zipf(1.0) stream over a million keys with injected keys of known share
 * (every key at 2*phi or above reported with a count within the Count-Min
 * bound, no key below phi/2 estimated above phi), the double-buffer protocol
 * (open windows unreadable, closed ones readable, reopened buffers detected,
 * a racing reader never gets a torn window), sampling scale-up, and the
 * never-underestimate property of Count-Min. Pure module: no EAL.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <inttypes.h>

#include <cmocka.h>

#include "dataplane/hash.h"
#include "dataplane/sketch.h"

#include "flow_key.h"
#include "rng.h"
#include "zipf.h"

#define PHI 0.01        /* the controller's default threshold */
#define N_ZIPF 1000000u /* Zipf keys of VIP 1 */
#define T_VIP1 1000000u /* packets of VIP 1 in the window */
#define N_UNI2 20000u   /* uniform keys of VIP 2 */
#define T_VIP2 50000u   /* packets of VIP 2 */
#define VIP1 1
#define VIP2 2
#define MAX_CANDS LB_SKETCH_CANDS

static const struct lb_hash_key g_hkey = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};

/* Square root by Newton's method (the test links no libm). */
static double
sq_root(double v)
{
	double r = v > 1 ? v : 1;

	if (v <= 0)
		return 0;
	for (int i = 0; i < 200; i++)
		r = 0.5 * (r + v / r);
	return r;
}

#define E_CONST 2.718281828459045 /* e, of Count-Min's e/W */

/* ---------------------------------------------------------------- basics */

static void
test_sketch_create_rejects_shift(void **state)
{
	(void)state;
	errno = 0;
	assert_null(lb_sketch_create(LB_SKETCH_MAX_SHIFT + 1));
	assert_int_equal(errno, EINVAL);
}

static void
test_sketch_memory(void **state)
{
	struct lb_sketch *sk = lb_sketch_create(0);
	size_t cm = (size_t)LB_SKETCH_DEPTH * LB_SKETCH_WIDTH * sizeof(uint32_t);

	(void)state;
	assert_non_null(sk);
	/* Both buffers: the Count-Min rows dominate, and nothing is allocated later. */
	assert_true(lb_sketch_memory() >= 2 * cm);
	assert_true(lb_sketch_memory() <= 2 * cm + 2 * 64 * 1024);
	print_message("sketch memory per core: %zu bytes (%.1f KiB)\n", lb_sketch_memory(),
	              (double)lb_sketch_memory() / 1024.0);
	lb_sketch_free(sk);
	lb_sketch_free(NULL);
}

/* ------------------------------------------------------- double buffering */

static void
add_n(struct lb_sketch *sk, uint16_t vip, uint32_t key_no, uint32_t n)
{
	struct lb_flow_key k;

	flow_key_make(&k, key_no);
	for (uint32_t i = 0; i < n; i++)
		lb_sketch_add(sk, vip, lb_hash_flow(&g_hkey, &k), &k, 1);
}

static void
test_sketch_windows(void **state)
{
	struct lb_sketch *sk = lb_sketch_create(0);
	static uint64_t totals[LB_MAX_VIPS];
	struct lb_sketch_cand c[8];
	struct lb_flow_key k7;
	uint32_t n = 99;

	(void)state;
	assert_non_null(sk);
	flow_key_make(&k7, 7);
	lb_sketch_poll(sk, 0); /* no later window: nothing happens */
	/* Keys enter the candidates at 8 packets (LB_SKETCH_CAND_STEP). */
	add_n(sk, 3, 7, 10);
	add_n(sk, 5, 8, 8);
	add_n(sk, 5, 9, 4);
	/* Window 0 is still being written: not readable, no estimate. */
	assert_false(lb_sketch_read(sk, 0, c, 8, &n, totals));
	assert_int_equal(n, 0);
	assert_int_equal(lb_sketch_estimate(sk, 0, 3, lb_hash_flow(&g_hkey, &k7)), 0);

	lb_sketch_poll(sk, 1); /* control opened 1: window 0 is closed */
	assert_true(lb_sketch_read(sk, 0, c, 8, &n, totals));
	assert_int_equal(totals[3], 10);
	assert_int_equal(totals[5], 12);
	assert_int_equal(totals[4], 0);
	assert_int_equal(n, 2); /* key 9, 4 packets: below the step, counted but unnamed */
	assert_int_equal(c[0].vip_id, 3); /* heaviest first */
	assert_int_equal(c[0].count, 10);
	assert_int_equal(c[0].key_hash, lb_hash_flow(&g_hkey, &k7));
	assert_memory_equal(&c[0].key, &k7, sizeof(k7));
	assert_int_equal(c[1].vip_id, 5);
	assert_int_equal(c[1].count, 8);
	assert_int_equal(lb_sketch_estimate(sk, 0, 3, c[0].key_hash), 10);
	assert_int_equal(lb_sketch_estimate(sk, 0, 5, c[0].key_hash), 0); /* per VIP */
	/* max bounds the copy. */
	assert_true(lb_sketch_read(sk, 0, c, 1, &n, NULL));
	assert_int_equal(n, 1);
	assert_false(lb_sketch_read(sk, 1, c, 8, &n, totals)); /* open */

	/* Window 1: a fresh buffer, its own totals. */
	add_n(sk, 3, 7, 8);
	lb_sketch_poll(sk, 1); /* same window: no-op */
	lb_sketch_poll(sk, 0); /* never backwards */
	assert_false(lb_sketch_read(sk, 1, c, 8, &n, totals));
	lb_sketch_poll(sk, 2);
	assert_true(lb_sketch_read(sk, 1, c, 8, &n, totals));
	assert_int_equal(totals[3], 8);
	assert_int_equal(totals[5], 0);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].count, 8);
	/* Opening 2 reopened window 0's buffer: past its deadline, refused. */
	assert_false(lb_sketch_read(sk, 0, c, 8, &n, totals));
	assert_int_equal(lb_sketch_estimate(sk, 0, 3, c[0].key_hash), 0);

	/* A jump (the core saw 3 and 4 open at once): the buffer is window 2;
	 * windows 3 and 4 never existed on this core. */
	add_n(sk, 3, 7, 1);
	lb_sketch_poll(sk, 5);
	assert_true(lb_sketch_read(sk, 2, c, 8, &n, totals));
	assert_int_equal(totals[3], 1);
	assert_false(lb_sketch_read(sk, 3, c, 8, &n, totals));
	assert_false(lb_sketch_read(sk, 4, c, 8, &n, totals));
	assert_false(lb_sketch_read(sk, LB_SKETCH_OPEN, c, 8, &n, totals));
	lb_sketch_free(sk);
}

/*
 * The candidate gate (LB_SKETCH_GATE_SHIFT): a key becomes a candidate only
 * once its estimate reaches 2^-9 of its VIP's running total. A VIP carries
 * 40,000 keys of two packets each (their estimates, inflated by collisions,
 * stay far below the gate of ~200), a key of 64 packets (0.08%: below the gate
 * all along) and a key of 2,000 packets (2.4%: above it), interleaved
 * (one light packet every 625 background keys, one heavy every 20).
 * Only the heavy key may be named; the others are counted but unnamed.
 */
static void
test_sketch_gate_keeps_light_keys_out(void **state)
{
	struct lb_sketch *sk = lb_sketch_create(0);
	static struct lb_sketch_cand c[LB_SKETCH_CANDS];
	static uint64_t totals[LB_MAX_VIPS];
	struct lb_flow_key light, heavy;
	uint32_t n = 0;

	(void)state;
	assert_non_null(sk);
	flow_key_make(&light, 1000001);
	flow_key_make(&heavy, 1000002);
	for (uint32_t i = 0; i < 40000; i++) {
		add_n(sk, 2, i, 2);
		if (i % 625 == 0)
			lb_sketch_add(sk, 2, lb_hash_flow(&g_hkey, &light), &light, 1);
		if (i % 20 == 0)
			lb_sketch_add(sk, 2, lb_hash_flow(&g_hkey, &heavy), &heavy, 1);
	}
	lb_sketch_poll(sk, 1);
	assert_true(lb_sketch_read(sk, 0, c, LB_SKETCH_CANDS, &n, totals));
	assert_int_equal(totals[2], 80000 + 64 + 2000);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].key_hash, lb_hash_flow(&g_hkey, &heavy));
	assert_true(c[0].count >= 2000);
	lb_sketch_free(sk);
}

/*
 * A reader racing the worker: window w carries exactly PER_WINDOW packets of
 * weight w + 1 on one key whose hash is w, so any torn copy (totals of one
 * window, candidate of another, or a half-cleared buffer) shows. Reads that
 * come too late must fail; none may succeed with wrong data.
 */
#define RACE_WINDOWS 20000u
#define PER_WINDOW 512u

struct race {
	struct lb_sketch *sk;
	uint64_t open; /* the window control has opened, as the worker reads it */
	int done;
};

static void *
race_worker(void *arg)
{
	struct race *r = arg;
	struct lb_flow_key k;
	uint64_t w = 0;

	flow_key_make(&k, 1);
	while (w < RACE_WINDOWS) {
		for (uint32_t i = 0; i < PER_WINDOW; i++)
			lb_sketch_add(r->sk, 9, w, &k, (uint32_t)w + 1);
		/* Control would open windows on a timer; here the worker drives. */
		__atomic_store_n(&r->open, w + 1, __ATOMIC_RELEASE);
		lb_sketch_poll(r->sk, ++w);
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void
test_sketch_racing_reader(void **state)
{
	static uint64_t totals[LB_MAX_VIPS];
	struct race r = {.sk = lb_sketch_create(0)};
	struct lb_sketch_cand c[4];
	uint64_t ok = 0, late = 0;
	pthread_t th;

	(void)state;
	assert_non_null(r.sk);
	assert_int_equal(pthread_create(&th, NULL, race_worker, &r), 0);
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		uint64_t open = __atomic_load_n(&r.open, __ATOMIC_ACQUIRE);
		uint32_t n;

		if (open == 0)
			continue;
		if (!lb_sketch_read(r.sk, open - 1, c, 4, &n, totals)) {
			late++;
			continue;
		}
		ok++;
		assert_int_equal(totals[9], (uint64_t)PER_WINDOW * open);
		assert_int_equal(n, 1);
		assert_int_equal(c[0].key_hash, open - 1);
		assert_int_equal(c[0].count, (uint64_t)PER_WINDOW * open);
	}
	pthread_join(th, NULL);
	print_message("racing reader: %" PRIu64 " consistent reads, %" PRIu64 " refused\n", ok,
	              late);
	lb_sketch_free(r.sk);
}

/* ----------------------------------------------- never underestimates (CM) */

struct under_case {
	const char *name;
	uint32_t n_keys;     /* distinct keys */
	uint32_t packets;    /* stream length */
	uint32_t weight_max; /* weights drawn in [1, weight_max] */
};

static const struct under_case under_cases[] = {
        {"sketch_never_under_few_keys", 100, 200000, 1},
        {"sketch_never_under_many_keys", 300000, 600000, 1},
        {"sketch_never_under_bytes", 50000, 300000, 1500},
};

static void
test_sketch_never_under(void **state)
{
	const struct under_case *uc = *state;
	uint64_t *truth = calloc(uc->n_keys, sizeof(*truth));
	uint64_t *hash = malloc(uc->n_keys * sizeof(*hash));
	struct lb_sketch *sk = lb_sketch_create(0);
	uint64_t x = 12345, total = 0, over_max = 0;
	struct lb_flow_key k;

	assert_non_null(truth);
	assert_non_null(hash);
	assert_non_null(sk);
	for (uint32_t i = 0; i < uc->n_keys; i++) {
		flow_key_make(&k, i);
		hash[i] = lb_hash_flow(&g_hkey, &k);
	}
	for (uint32_t p = 0; p < uc->packets; p++) {
		uint32_t i = (uint32_t)((rng_xorshift(&x) >> 32) * uc->n_keys >> 32);
		uint32_t wgt = 1 + (uint32_t)(rng_xorshift(&x) % uc->weight_max);

		flow_key_make(&k, i);
		lb_sketch_add(sk, 4, hash[i], &k, wgt);
		truth[i] += wgt;
		total += wgt;
	}
	lb_sketch_poll(sk, 1);
	for (uint32_t i = 0; i < uc->n_keys; i++) {
		uint64_t e = lb_sketch_estimate(sk, 0, 4, hash[i]);

		assert_true(e >= truth[i]);
		if (e - truth[i] > over_max)
			over_max = e - truth[i];
	}
	/* Count-Min's bound e/W * T, as a sanity check of the whole: */
	print_message("%s: T=%" PRIu64 " max over %" PRIu64 " (e/W*T = %.0f)\n", uc->name, total,
	              over_max, E_CONST / LB_SKETCH_WIDTH * (double)total);
	lb_sketch_free(sk);
	free(truth);
	free(hash);
}

/* ------------------------------------------ Zipf plus injected heavy keys */

/* Injected keys of VIP 1 (shares of VIP 1's packets) and of VIP 2. */
struct inject {
	uint16_t vip;
	double share;
};

static const struct inject g_inject[] = {
        {VIP1, 0.10},  {VIP1, 0.04},  {VIP1, 0.02},   /* 2 phi exactly */
        {VIP1, 0.012}, {VIP1, 0.006}, {VIP1, 0.0049}, /* just below phi/2 */
        {VIP1, 0.003}, {VIP2, 0.30},  {VIP2, 0.021},  {VIP2, 0.0045},
};
#define N_INJECT (sizeof(g_inject) / sizeof(g_inject[0]))

/* Key numbers: Zipf ranks 0..N_ZIPF-1, then VIP 2's uniform keys, then the injected ones. */
#define UNI2_BASE N_ZIPF
#define INJ_BASE (N_ZIPF + N_UNI2)
#define N_KEYS (INJ_BASE + N_INJECT)

struct stream {
	uint32_t *pkt; /* key number of each packet */
	uint32_t n_pkt;
	uint64_t *hash;  /* per key */
	uint16_t *vip;   /* per key */
	uint64_t *truth; /* per key: packets */
	uint64_t total[3];
};

static struct stream g_stream;

static int
stream_setup(void **state)
{
	struct stream *s = &g_stream;
	double *cdf = zipf_cdf_make(N_ZIPF);
	uint64_t x = 0x9E3779B97F4A7C15ULL;
	uint32_t n = 0, inj1 = 0, inj2 = 0;
	struct lb_flow_key k;

	(void)state;
	s->n_pkt = T_VIP1 + T_VIP2;
	s->pkt = malloc(s->n_pkt * sizeof(*s->pkt));
	s->hash = malloc(N_KEYS * sizeof(*s->hash));
	s->vip = malloc(N_KEYS * sizeof(*s->vip));
	s->truth = calloc(N_KEYS, sizeof(*s->truth));
	if (cdf == NULL || s->pkt == NULL || s->hash == NULL || s->vip == NULL || s->truth == NULL)
		return -1;
	for (uint32_t i = 0; i < N_KEYS; i++) {
		flow_key_make(&k, i);
		s->hash[i] = lb_hash_flow(&g_hkey, &k);
		s->vip[i] = i < UNI2_BASE ? VIP1 : i < INJ_BASE ? VIP2 : g_inject[i - INJ_BASE].vip;
	}
	/* Injected keys: exact packet counts. */
	for (uint32_t j = 0; j < N_INJECT; j++) {
		uint32_t t = g_inject[j].vip == VIP1 ? T_VIP1 : T_VIP2;
		uint32_t c = (uint32_t)(g_inject[j].share * t + 0.5);

		for (uint32_t i = 0; i < c; i++)
			s->pkt[n++] = INJ_BASE + j;
		if (g_inject[j].vip == VIP1)
			inj1 += c;
		else
			inj2 += c;
	}
	/* The rest of VIP 1 is Zipf(1.0) over a million keys, of VIP 2 uniform. */
	for (uint32_t i = 0; i < T_VIP1 - inj1; i++)
		s->pkt[n++] = zipf_draw(cdf, N_ZIPF, &x);
	for (uint32_t i = 0; i < T_VIP2 - inj2; i++)
		s->pkt[n++] = UNI2_BASE + (uint32_t)((rng_xorshift(&x) >> 32) * N_UNI2 >> 32);
	/* Interleave (Fisher-Yates), then count the truth. */
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rng_xorshift(&x) % (i + 1)), t = s->pkt[i];

		s->pkt[i] = s->pkt[j];
		s->pkt[j] = t;
	}
	for (uint32_t i = 0; i < n; i++) {
		s->truth[s->pkt[i]]++;
		s->total[s->vip[s->pkt[i]]]++;
	}
	free(cdf);
	return n == s->n_pkt ? 0 : -1;
}

static int
stream_teardown(void **state)
{
	(void)state;
	free(g_stream.pkt);
	free(g_stream.hash);
	free(g_stream.vip);
	free(g_stream.truth);
	return 0;
}

struct zipf_case {
	const char *name;
	unsigned int shift;
};

static const struct zipf_case zipf_cases[] = {
        {"sketch_zipf_heavy_keys_unsampled", 0},
        {"sketch_zipf_heavy_keys_sampled_1_in_4", 2},
        {"sketch_zipf_heavy_keys_sampled_1_in_16", 4},
};

static void
test_sketch_zipf(void **state)
{
	const struct zipf_case *zc = *state;
	const struct stream *s = &g_stream;
	struct lb_sketch *sk = lb_sketch_create(zc->shift);
	static struct lb_sketch_cand c[MAX_CANDS];
	static uint64_t totals[LB_MAX_VIPS];
	const double bound = E_CONST / LB_SKETCH_WIDTH * (double)s->n_pkt; /* Count-Min: e/W * T */
	uint32_t n_c, heavy = 0, light_max_key = 0;
	double worst_rel = 0, light_max = 0;
	struct lb_flow_key k;

	assert_non_null(sk);
	for (uint32_t i = 0; i < s->n_pkt; i++) {
		uint32_t key = s->pkt[i];

		flow_key_make(&k, key);
		lb_sketch_add(sk, s->vip[key], s->hash[key], &k, 1);
	}
	lb_sketch_poll(sk, 1);
	assert_true(lb_sketch_read(sk, 0, c, MAX_CANDS, &n_c, totals));
	/* Totals are exact whatever the sampling. */
	assert_int_equal(totals[VIP1], s->total[VIP1]);
	assert_int_equal(totals[VIP2], s->total[VIP2]);

	for (uint32_t key = 0; key < N_KEYS; key++) {
		double t = (double)s->total[s->vip[key]];
		double share = (double)s->truth[key] / t;
		uint64_t est = lb_sketch_estimate(sk, 0, s->vip[key], s->hash[key]);

		if (share >= 2 * PHI) {
			/* Reported, named, and within the CM bound (plus, when
			 * sampled, five standard deviations of the sampling). */
			double sigma = sq_root((double)s->truth[key] * (double)(1u << zc->shift));
			double lo = zc->shift ? (double)s->truth[key] - 5 * sigma
			                      : (double)s->truth[key];
			double hi = (double)s->truth[key] + bound + (zc->shift ? 5 * sigma : 0);
			uint32_t j;

			for (j = 0; j < n_c; j++)
				if (c[j].vip_id == s->vip[key] && c[j].key_hash == s->hash[key])
					break;
			if (j == n_c)
				fail_msg("key %u (share %.4f) not reported", key, share);
			flow_key_make(&k, key);
			assert_memory_equal(&c[j].key, &k, sizeof(k));
			if ((double)c[j].count < lo || (double)c[j].count > hi)
				fail_msg("key %u: count %u outside [%.0f, %.0f]", key, c[j].count,
				         lo, hi);
			if (__builtin_fabs((double)c[j].count / (double)s->truth[key] - 1) >
			    worst_rel)
				worst_rel = __builtin_fabs(
				        (double)c[j].count / (double)s->truth[key] - 1);
			heavy++;
		} else if (share < PHI / 2) {
			/* Would not be promoted: its estimate stays below phi. */
			if ((double)est >= PHI * t)
				fail_msg("key %u (share %.5f) estimated %" PRIu64 " >= phi*T %.0f",
				         key, share, est, PHI * t);
			if ((double)est / t > light_max) {
				light_max = (double)est / t;
				light_max_key = key;
			}
		}
		if (zc->shift == 0)
			assert_true(est >= s->truth[key]);
	}
	/* So are the candidates' own counts. */
	for (uint32_t j = 0; j < n_c; j++) {
		uint32_t key;

		/* 10.a.b.c: the key number is a.b.c. */
		key = (uint32_t)c[j].key.src.b[1] << 16 | (uint32_t)c[j].key.src.b[2] << 8 |
		      c[j].key.src.b[3];
		assert_true(key < N_KEYS);
		if ((double)s->truth[key] / (double)s->total[c[j].vip_id] < PHI / 2)
			assert_true((double)c[j].count < PHI * (double)s->total[c[j].vip_id]);
	}
	print_message("%s: %u keys >= 2phi all reported (worst count error %.2f%%), %u "
	              "candidates, top light-key estimate %.4f of its VIP (key %u, true %.4f), "
	              "evictions %" PRIu64 "\n",
	              zc->name, heavy, 100 * worst_rel, n_c, light_max, light_max_key,
	              (double)s->truth[light_max_key] / (double)s->total[s->vip[light_max_key]],
	              sk->evictions);
	assert_true(heavy >= 7); /* injected: 3 on VIP 1, 2 on VIP 2; Zipf ranks 1 and 2 */
	lb_sketch_free(sk);
}

/* ------------------------------------------------------- sampling scale-up */

struct scale_case {
	const char *name;
	unsigned int shift;
	uint32_t packets;
};

static const struct scale_case scale_cases[] = {
        {"sketch_scale_shift_1", 1, 100000},
        {"sketch_scale_shift_4", 4, 100000},
        {"sketch_scale_shift_8", 8, 1000000},
};

static void
test_sketch_scale(void **state)
{
	const struct scale_case *sc = *state;
	struct lb_sketch *sk = lb_sketch_create(sc->shift);
	static uint64_t totals[LB_MAX_VIPS];
	struct lb_sketch_cand c[4];
	struct lb_flow_key k;
	uint64_t h, est;
	double sigma = sq_root((double)sc->packets * (double)(1u << sc->shift));
	uint32_t n;

	assert_non_null(sk);
	flow_key_make(&k, 42);
	h = lb_hash_flow(&g_hkey, &k);
	/* One heavy key amid a background of others. */
	for (uint32_t i = 0; i < sc->packets; i++) {
		lb_sketch_add(sk, 1, h, &k, 1);
		add_n(sk, 1, 1000 + i % 5000, 1);
	}
	lb_sketch_poll(sk, 1);
	est = lb_sketch_estimate(sk, 0, 1, h);
	assert_true(lb_sketch_read(sk, 0, c, 4, &n, totals));
	assert_int_equal(totals[1], 2ull * sc->packets);
	assert_true(n >= 1);
	assert_int_equal(c[0].key_hash, h);
	/* Within five standard deviations of sampling (plus the CM bound above). */
	if (__builtin_fabs((double)c[0].count - sc->packets) >
	    5 * sigma + E_CONST / LB_SKETCH_WIDTH * 2.0 * sc->packets)
		fail_msg("count %u for %u packets (sigma %.0f)", c[0].count, sc->packets, sigma);
	assert_true(est >= c[0].count);
	print_message("%s: %u packets -> count %u (%+.2f%%, sigma %.2f%%)\n", sc->name, sc->packets,
	              c[0].count, 100.0 * ((double)c[0].count / sc->packets - 1),
	              100.0 * sigma / sc->packets);
	lb_sketch_free(sk);
}

int
main(void)
{
	struct CMUnitTest tests[32];
	struct CMUnitTest zipf[4];
	size_t n = 0, nz = 0;
	int rc;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_sketch_create_rejects_shift);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_sketch_memory);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_sketch_windows);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_sketch_gate_keeps_light_keys_out);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_sketch_racing_reader);
	for (size_t i = 0; i < sizeof(under_cases) / sizeof(under_cases[0]); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_sketch_never_under,
		                                                        (void *)&under_cases[i]);
		tests[n++].name = under_cases[i].name;
	}
	for (size_t i = 0; i < sizeof(scale_cases) / sizeof(scale_cases[0]); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_sketch_scale,
		                                                        (void *)&scale_cases[i]);
		tests[n++].name = scale_cases[i].name;
	}
	rc = _cmocka_run_group_tests("sketch", tests, n, NULL, NULL);
	/* The Zipf stream is built once for its cases. */
	for (size_t i = 0; i < sizeof(zipf_cases) / sizeof(zipf_cases[0]); i++) {
		zipf[nz] = (struct CMUnitTest)cmocka_unit_test_prestate(test_sketch_zipf,
		                                                        (void *)&zipf_cases[i]);
		zipf[nz++].name = zipf_cases[i].name;
	}
	rc |= _cmocka_run_group_tests("sketch_zipf", zipf, nz, stream_setup, stream_teardown);
	return rc;
}
