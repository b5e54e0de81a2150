/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Benchmark for the per-core hot-key sketch: ns and TSC cycles per
 * lb_sketch_add() for uniform and Zipf(1.0) keys over a million flows, with
 * sampling off and at 1 in 4 and 1 in 16; the cost of a window switch
 * (lb_sketch_poll, which clears a buffer); and, for comparison, DPDK 22.11's
 * rte_member in sketch mode (Count-Min with NitroSketch-style sampling and a
 * top-k heap) on the same streams, with the accuracy of both after one window
 * of 10^6 packets (heavy keys' count error, largest light-key estimate).
 *
 * Keys and their SipHash are precomputed, as the pipeline has them when it
 * feeds the sketch; windows of 10^6 packets (poll between them, not timed in
 * the per-add figure). Each figure is the median of 7 rounds of 2^22 packets,
 * next to a baseline loop that reads the same keys and hashes.
 *
 * Usage: bench_sketch [--json FILE] [NAME-SUBSTRING] (--json: every figure to FILE,
 * bench_json.h). rte_member needs EAL (no hugepages).
 */
#define ALLOW_EXPERIMENTAL_API 1

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_member.h>

#include "dataplane/hash.h"
#include "dataplane/sketch.h"

#include "eal.h"
#include "flow_key.h"
#include "median.h"
#include "zipf.h"

#include "bench_json.h"

#define N_KEYS 1000000u
#define ROUND_PKTS (1u << 22)
#define WINDOW_PKTS 1000000u
#define ROUNDS 7
#define VIP 1
#define TOP_K 512
/* rte_member's top-k: 22.11 sizes its free-slot ring to align32pow2(top_k)
 * entries, which holds one fewer, so a power-of-two top_k fails every insert
 * once the heap is full (with an ERR log line per packet). */
#define MEMBER_TOP_K 500

static const struct lb_hash_key g_hkey = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};
static struct lb_flow_key *g_keys;
static uint64_t *g_hash;
/* Per packet of a stream, laid out in order as the pipeline has them: the hash
 * and a pointer to the key (only dereferenced when a key becomes a candidate). */
struct pkt {
	uint64_t *hash;
	const struct lb_flow_key **key;
};
static volatile uint64_t g_sink;
static double g_ns_per_cycle;
static const char *g_filter;

static int
selected(const char *name)
{
	return g_filter == NULL || strstr(name, g_filter) != NULL;
}

enum impl { IMPL_BASELINE, IMPL_LB, IMPL_MEMBER };

struct run {
	enum impl impl;
	struct lb_sketch *sk;
	struct rte_member_setsum *ms;
	float rate; /* rte_member's sample rate */
	uint64_t window;
	uint64_t poll_cycles; /* window switches, summed */
	uint32_t polls;
};

static struct rte_member_setsum *
member_make(float sample_rate)
{
	static int seq;
	char name[32];
	struct rte_member_parameters p;

	memset(&p, 0, sizeof(p));
	snprintf(name, sizeof(name), "sk%d", seq++);
	p.name = name;
	p.type = RTE_MEMBER_TYPE_SKETCH;
	p.key_len = sizeof(struct lb_flow_key);
	p.prim_hash_seed = 1;
	p.sec_hash_seed = 2;
	/* Width 4/error_rate/sample_rate: 8192 columns unsampled, as ours. */
	p.error_rate = 4.0f / 8192.0f;
	p.sample_rate = sample_rate;
	p.top_k = MEMBER_TOP_K;
	p.socket_id = 0;
	return rte_member_create(&p);
}

/*
 * A new window for rte_member: a fresh set-summary (not timed). Its
 * rte_member_reset() in 22.11 refills the key-slot ring but leaves the heap's
 * own hash table, so every insert after a reset fails with an ERR log line.
 */
static void
member_renew(struct run *r)
{
	rte_member_free(r->ms);
	r->ms = member_make(r->rate);
}

/* One round: TSC cycles per packet of the adds (window switches timed apart). */
static double
round_run(struct run *r, const struct pkt *pkt)
{
	uint64_t cycles = 0, acc = 0;

	for (uint32_t done = 0; done < ROUND_PKTS; done += WINDOW_PKTS) {
		uint32_t end = done + WINDOW_PKTS < ROUND_PKTS ? done + WINDOW_PKTS : ROUND_PKTS;
		uint64_t t0 = rte_rdtsc(), t1;

		switch (r->impl) {
		case IMPL_BASELINE:
			for (uint32_t i = done; i < end; i++)
				acc += pkt->hash[i] ^ (uintptr_t)pkt->key[i];
			break;
		case IMPL_LB:
			for (uint32_t i = done; i < end; i++)
				lb_sketch_add(r->sk, VIP, pkt->hash[i], pkt->key[i], 1);
			break;
		case IMPL_MEMBER:
			for (uint32_t i = done; i < end; i++)
				acc += (uint64_t)rte_member_add(r->ms, pkt->key[i], 1);
			break;
		}
		t1 = rte_rdtsc();
		cycles += t1 - t0;
		if (r->impl == IMPL_LB) {
			t0 = rte_rdtsc();
			lb_sketch_poll(r->sk, ++r->window);
			r->poll_cycles += rte_rdtsc() - t0;
			r->polls++;
		} else if (r->impl == IMPL_MEMBER) {
			member_renew(r);
		}
	}
	g_sink += acc;
	return (double)cycles / ROUND_PKTS;
}

static double
median_run(struct run *r, const struct pkt *pk)
{
	double v[ROUNDS];
	/* rte_member is three orders slower: fewer rounds. */
	int n = r->impl == IMPL_MEMBER ? 3 : ROUNDS;

	for (int i = 0; i < n; i++)
		v[i] = round_run(r, pk);
	return median(v, (uint32_t)n);
}

/* Accuracy after one window of WINDOW_PKTS Zipf packets: truth from the stream. */
struct acc {
	double heavy_worst;   /* worst relative count error over the true top 10 */
	uint32_t heavy_found; /* of the top 10, how many the candidates/heap named */
	double light_max;     /* largest estimate/T of a key with true share < 0.5% */
};

static void
accuracy(struct run *r, const uint32_t *draw, uint32_t *truth, struct acc *a)
{
	static struct lb_sketch_cand cands[TOP_K];
	static uint64_t totals[LB_MAX_VIPS];
	uint32_t top[10] = {0}, n_c = 0;
	void *mkeys[TOP_K];
	uint64_t mcounts[TOP_K];
	int n_m = 0;

	memset(truth, 0, N_KEYS * sizeof(*truth));
	memset(a, 0, sizeof(*a));
	if (r->impl != IMPL_MEMBER)
		lb_sketch_poll(r->sk, ++r->window);
	else
		member_renew(r);
	for (uint32_t i = 0; i < WINDOW_PKTS; i++) {
		truth[draw[i]]++;
		if (r->impl != IMPL_MEMBER)
			lb_sketch_add(r->sk, VIP, g_hash[draw[i]], &g_keys[draw[i]], 1);
		else
			rte_member_add(r->ms, &g_keys[draw[i]], 1);
	}
	if (r->impl != IMPL_MEMBER) {
		lb_sketch_poll(r->sk, ++r->window);
		lb_sketch_read(r->sk, r->window - 1, cands, TOP_K, &n_c, totals);
	} else {
		n_m = rte_member_report_heavyhitter(r->ms, mkeys, mcounts);
	}
	/* The true top 10 (insertion into a sorted array of 10). */
	for (uint32_t k = 0; k < N_KEYS; k++) {
		int j = 9;

		if (truth[k] <= truth[top[9]])
			continue;
		while (j > 0 && truth[k] > truth[top[j - 1]]) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = k;
	}
	for (int t = 0; t < 10; t++) {
		uint64_t c = 0;
		int found = 0;

		if (r->impl != IMPL_MEMBER) {
			for (uint32_t j = 0; j < n_c; j++)
				if (cands[j].key_hash == g_hash[top[t]]) {
					c = cands[j].count;
					found = 1;
				}
		} else {
			for (int j = 0; j < n_m; j++)
				if (memcmp(mkeys[j], &g_keys[top[t]], sizeof(g_keys[0])) == 0) {
					c = mcounts[j];
					found = 1;
				}
		}
		if (found) {
			double e = (double)c / truth[top[t]] - 1;

			a->heavy_found++;
			if ((e < 0 ? -e : e) > a->heavy_worst)
				a->heavy_worst = e < 0 ? -e : e;
		}
	}
	for (uint32_t k = 0; k < N_KEYS; k++) {
		uint64_t e = 0;

		if (truth[k] >= WINDOW_PKTS / 200)
			continue;
		if (r->impl != IMPL_MEMBER)
			e = lb_sketch_estimate(r->sk, r->window - 1, VIP, g_hash[k]);
		else
			rte_member_query_count(r->ms, &g_keys[k], &e);
		if ((double)e / WINDOW_PKTS > a->light_max)
			a->light_max = (double)e / WINDOW_PKTS;
	}
}

static void
report(const char *name, struct run *r, const struct pkt *pk, const uint32_t *draw, double base,
       uint32_t *truth, int zipf)
{
	double c;
	struct acc a;
	json_t *j;

	if (!selected(name))
		return;
	r->poll_cycles = 0;
	r->polls = 0;
	c = median_run(r, pk);
	printf("sketch %s: %.2f ns/add %.1f cycles/add (baseline loop %.2f ns)", name,
	       c * g_ns_per_cycle, c, base * g_ns_per_cycle);
	if (r->polls)
		printf("; window switch %.1f us",
		       (double)r->poll_cycles / r->polls * g_ns_per_cycle / 1000.0);
	if (zipf) {
		accuracy(r, draw, truth, &a);
		printf("; 1 window of %u Zipf pkts: top-10 named %u, worst error %.2f%%, "
		       "max light-key estimate %.4f of T",
		       WINDOW_PKTS, a.heavy_found, 100 * a.heavy_worst, a.light_max);
	}
	printf("\n");
	fflush(stdout);
	j = json_pack("{s:s, s:f, s:f, s:f}", "name", name, "ns_per_add", c * g_ns_per_cycle,
	              "cycles_per_add", c, "baseline_ns", base * g_ns_per_cycle);
	if (j != NULL && r->polls)
		json_object_set_new(
		        j, "window_switch_us",
		        json_real((double)r->poll_cycles / r->polls * g_ns_per_cycle / 1000.0));
	if (j != NULL && zipf) {
		json_object_set_new(j, "top10_named", json_integer(a.heavy_found));
		json_object_set_new(j, "top10_worst_error_pct", json_real(100 * a.heavy_worst));
		json_object_set_new(j, "light_max_share", json_real(a.light_max));
	}
	bj_add(j);
}

int
main(int argc, char **argv)
{
	uint32_t *uni, *zipf, *truth;
	struct pkt pk_u = {0}, pk_z = {0};
	static const unsigned int shifts[] = {0, 2, 4};
	static const float rates[] = {1.0f, 0.0625f};
	double base_u, base_z;
	struct run base = {.impl = IMPL_BASELINE};
	int rc = 1;

	argc = bj_args(argc, argv);
	if (argc > 1)
		g_filter = argv[1];
	if (test_eal_init("bench_sketch", "bench-sketch") < 0) {
		fprintf(stderr, "bench_sketch: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	g_ns_per_cycle = 1e9 / (double)rte_get_tsc_hz();
	/* rte_member logs each failed heap insert and each heap hash-table
	 * resize at ERR (see MEMBER_TOP_K and docs/benchmarks.md), up to one line
	 * per packet on uniform keys: silenced, so the timing is of the sketch. */
	rte_log_set_level_pattern("lib.member", RTE_LOG_CRIT);
	g_keys = malloc(N_KEYS * sizeof(*g_keys));
	g_hash = malloc(N_KEYS * sizeof(*g_hash));
	truth = malloc(N_KEYS * sizeof(*truth));
	uni = draws_make(ROUND_PKTS, N_KEYS, 0);
	zipf = draws_make(ROUND_PKTS, N_KEYS, 1);
	if (g_keys == NULL || g_hash == NULL || truth == NULL || uni == NULL || zipf == NULL)
		goto out;
	for (uint32_t i = 0; i < N_KEYS; i++) {
		flow_key_make(&g_keys[i], i);
		g_hash[i] = lb_hash_flow(&g_hkey, &g_keys[i]);
	}
	pk_u.hash = malloc(ROUND_PKTS * sizeof(*pk_u.hash));
	pk_u.key = malloc(ROUND_PKTS * sizeof(*pk_u.key));
	pk_z.hash = malloc(ROUND_PKTS * sizeof(*pk_z.hash));
	pk_z.key = malloc(ROUND_PKTS * sizeof(*pk_z.key));
	if (pk_u.hash == NULL || pk_u.key == NULL || pk_z.hash == NULL || pk_z.key == NULL)
		goto out;
	for (uint32_t i = 0; i < ROUND_PKTS; i++) {
		pk_u.hash[i] = g_hash[uni[i]];
		pk_u.key[i] = &g_keys[uni[i]];
		pk_z.hash[i] = g_hash[zipf[i]];
		pk_z.key[i] = &g_keys[zipf[i]];
	}

	printf("bench_sketch: %u keys, windows of %u packets, D=%u W=%u, %zu bytes per core, "
	       "TSC %.3f GHz\n",
	       N_KEYS, WINDOW_PKTS, LB_SKETCH_DEPTH, LB_SKETCH_WIDTH, lb_sketch_memory(),
	       (double)rte_get_tsc_hz() / 1e9);
	base_u = median_run(&base, &pk_u);
	base_z = median_run(&base, &pk_z);
	for (size_t i = 0; i < sizeof(shifts) / sizeof(shifts[0]); i++) {
		unsigned int sh = shifts[i];
		struct run r = {.impl = IMPL_LB, .sk = lb_sketch_create(sh)};
		const char *kind = "lb_add";
		char name[64];

		if (r.sk == NULL)
			goto out;
		snprintf(name, sizeof(name), "%s_uniform_shift%u", kind, sh);
		report(name, &r, &pk_u, uni, base_u, truth, 0);
		snprintf(name, sizeof(name), "%s_zipf_shift%u", kind, sh);
		report(name, &r, &pk_z, zipf, base_z, truth, 1);
		lb_sketch_free(r.sk);
	}
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		struct run r = {.impl = IMPL_MEMBER, .ms = member_make(rates[i]), .rate = rates[i]};
		char name[64];

		if (r.ms == NULL) {
			fprintf(stderr, "bench_sketch: rte_member_create: %s\n",
			        rte_strerror(rte_errno));
			goto out;
		}
		snprintf(name, sizeof(name), "rte_member_uniform_rate%.4f", (double)rates[i]);
		report(name, &r, &pk_u, uni, base_u, truth, 0);
		snprintf(name, sizeof(name), "rte_member_zipf_rate%.4f", (double)rates[i]);
		report(name, &r, &pk_z, zipf, base_z, truth, 1);
		rte_member_free(r.ms);
	}
	rc = bj_write("bench_sketch", (double)rte_get_tsc_hz()) == 0 ? 0 : 1;
out:
	if (rc != 0)
		fprintf(stderr, "bench_sketch: FAILED\n");
	free(g_keys);
	free(g_hash);
	free(truth);
	free(uni);
	free(zipf);
	free(pk_u.hash);
	free(pk_u.key);
	free(pk_z.hash);
	free(pk_z.key);
	rte_eal_cleanup();
	return rc;
}
