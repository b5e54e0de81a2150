/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Benchmark for lb_pipeline_burst: ns per packet for the paths a worker takes
 * on one VIP with 100 backends (Maglev M = 65537), 64-byte TCP frames in
 * bursts of 32: a flow-table hit with few and with a million flows resident,
 * and a new flow (Maglev pick + insert) with a million resident. Each figure
 * is the median of several rounds and comes with a baseline: the same loop
 * with the pipeline replaced by a read of each packet's first cache line, so
 * the ratio shows what the pipeline itself costs.
 *
 * The same 32 mbufs are reused: before each burst they are reset and the
 * frame rewritten (forward() prepends the outer headers), outside the timed
 * region. Only the lb_pipeline_burst call (or the baseline's read) is timed,
 * with rdtsc around each burst.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "config.h"
#include "flow_table.h"
#include "pipeline.h"
#include "snapshot_build.h"

#define N_BACKENDS 100
#define FRAME_LEN 64           /* Ethernet 14 + IPv4 20 + TCP 20 + 10 bytes of data */
#define ROUNDS 7               /* timed rounds per case; the median is reported */
#define FT_CAPACITY (1u << 22) /* entries: 1M flows fill a quarter, so hits stay hits */
#define HIT_PACKETS (1u << 20) /* packets per round of the hit cases */
#define NEW_PACKETS (1u << 17) /* fresh flows per round of the new-flow case */
#define BIG_FLOWS 1000000u
#define SMALL_FLOWS 1000u
#define FRESH_BASE 0x800000u /* flow numbers from here on are never pre-inserted */

static const uint8_t g_port_mac[6] = {0x02, 0x1b, 0, 0, 0, 0x01};
static uint8_t g_frame[FRAME_LEN];
static volatile uint64_t g_sink; /* keeps the baseline's reads alive */

/* A 64-byte TCP ACK from client 10.x.y.z:port to the VIP 192.0.2.10:80. */
static void
frame_init(void)
{
	static const uint8_t hdr[] = {
	        /* Ethernet: to us, from the router, IPv4 */
	        0x02, 0x1b, 0, 0, 0, 0x01, 0x02, 0xcc, 0, 0, 0, 0x07, 0x08, 0x00,
	        /* IPv4: 50 bytes, DF, TTL 64, TCP, 10.0.0.0 -> 192.0.2.10 */
	        0x45, 0, 0, 50, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 0, 192, 0, 2, 10,
	        /* TCP: 0 -> 80, ACK */
	        0, 0, 0, 80, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0};

	memcpy(g_frame, hdr, sizeof(hdr));
	memset(g_frame + sizeof(hdr), 0x5A, FRAME_LEN - sizeof(hdr));
}

/* Rewrite m as flow number i: source 10.(i>>16).(i>>8).i, source port from i. */
static void
mbuf_set(struct rte_mbuf *m, uint32_t i)
{
	uint8_t *p;
	uint16_t sport = (uint16_t)(1024 + (i >> 24) * 997 + (i & 0x3FF));

	rte_pktmbuf_reset(m);
	p = (uint8_t *)rte_pktmbuf_append(m, FRAME_LEN);
	memcpy(p, g_frame, FRAME_LEN);
	p[14 + 13] = (uint8_t)(i >> 16);
	p[14 + 14] = (uint8_t)(i >> 8);
	p[14 + 15] = (uint8_t)i;
	p[34] = (uint8_t)(sport >> 8);
	p[35] = (uint8_t)sport;
}

static struct lb_snapshot *
snapshot_make(void)
{
	char *doc = malloc(64 * N_BACKENDS + 512), err[256];
	struct lb_snapshot *s = NULL;
	struct lb_config *cfg = NULL;
	json_error_t je;
	json_t *root;
	size_t n;

	if (doc == NULL)
		return NULL;
	n = (size_t)sprintf(doc,
	                    "{\"encap\": {\"source_v4\": \"10.255.0.1\", \"next_hop_mac\": "
	                    "\"02:00:00:00:00:01\"}, \"maglev\": {\"table_size\": 65537}, "
	                    "\"flows\": {\"capacity\": %u}, \"vips\": [{\"address\": "
	                    "\"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\", "
	                    "\"backends\": [",
	                    FT_CAPACITY);
	for (unsigned int b = 0; b < N_BACKENDS; b++)
		n += (size_t)sprintf(doc + n, "%s{\"address\": \"10.1.%u.%u\"}", b ? ", " : "",
		                     b / 250, b % 250 + 1);
	strcpy(doc + n, "]}]}");
	root = json_loads(doc, 0, &je);
	if (root == NULL)
		fprintf(stderr, "bench_pipeline: config JSON: %s\n", je.text);
	else if ((cfg = lb_config_from_json(root, err, sizeof(err))) == NULL)
		fprintf(stderr, "bench_pipeline: config: %s\n", err);
	else if ((s = lb_snapshot_build(cfg, 1, err, sizeof(err))) == NULL)
		fprintf(stderr, "bench_pipeline: snapshot: %s\n", err);
	json_decref(root);
	lb_config_free(cfg);
	free(doc);
	return s;
}

struct bench {
	struct lb_worker *w;
	const struct lb_snapshot *s;
	struct rte_mbuf *m[LB_BURST];
	double ns_per_cycle;
};

/*
 * One round: n_pkts packets of flows first, first + 1, ... (wrapping after
 * n_flows) in bursts of LB_BURST. Returns ns/packet for the timed part, or a
 * negative value if a packet was not forwarded.
 */
static double
round_run(struct bench *b, uint32_t first, uint32_t n_flows, uint32_t n_pkts, int baseline)
{
	uint64_t cycles = 0;
	uint32_t f = 0;

	for (uint32_t done = 0; done < n_pkts; done += LB_BURST) {
		struct lb_burst_out out;
		uint64_t t0, t1;

		for (int i = 0; i < LB_BURST; i++) {
			mbuf_set(b->m[i], first + f);
			if (++f == n_flows)
				f = 0;
		}
		if (baseline) {
			uint64_t acc = 0;

			t0 = rte_rdtsc();
			for (int i = 0; i < LB_BURST; i++) {
				const uint8_t *p = rte_pktmbuf_mtod(b->m[i], const uint8_t *);

				acc += p[12] + p[14 + 19] + rte_pktmbuf_pkt_len(b->m[i]);
			}
			t1 = rte_rdtsc();
			g_sink += acc;
		} else {
			t0 = rte_rdtsc();
			lb_pipeline_burst(b->w, b->s, b->m, LB_BURST, &out);
			t1 = rte_rdtsc();
			if (out.n_fwd != LB_BURST) {
				fprintf(stderr,
				        "bench_pipeline: ERROR: %u of %u packets forwarded "
				        "(back %u, exception %u, dropped %u)\n",
				        out.n_fwd, LB_BURST, out.n_back, out.n_exc, out.n_drop);
				return -1.0;
			}
		}
		cycles += t1 - t0;
	}
	return (double)cycles * b->ns_per_cycle / (double)n_pkts;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Median over ROUNDS rounds; fresh moves first on by n_pkts every round so
 * that each round sees flows never seen before.
 */
static double
median_run(struct bench *b, uint32_t first, uint32_t n_flows, uint32_t n_pkts, int fresh,
           int baseline)
{
	double r[ROUNDS];

	for (int i = 0; i < ROUNDS; i++) {
		r[i] = round_run(b, first + (fresh ? (uint32_t)i * n_pkts : 0), n_flows, n_pkts,
		                 baseline);
		if (r[i] < 0)
			return -1.0;
	}
	qsort(r, ROUNDS, sizeof(r[0]), cmp_double);
	return r[ROUNDS / 2];
}

/* Run a case and its baseline, print one line; -1 if the pipeline failed. */
static int
report(struct bench *b, const char *name, uint32_t resident, uint32_t first, uint32_t n_flows,
       uint32_t n_pkts, int fresh)
{
	const struct lb_core_counters *c = b->w->cnt;
	uint64_t hits = c->flow_hits, misses = c->flow_misses;
	double pipe, base;

	pipe = median_run(b, first, n_flows, n_pkts, fresh, 0);
	if (pipe < 0)
		return -1;
	hits = c->flow_hits - hits;
	misses = c->flow_misses - misses;
	base = median_run(b, first, n_flows, n_pkts, fresh, 1);
	printf("pipeline %s flows=%u: %.1f ns/pkt (baseline %.1f ns/pkt; %.1fx; hits %.1f%%, "
	       "median of %d rounds of %u packets)\n",
	       name, resident, pipe, base, pipe / base,
	       100.0 * (double)hits / (double)(hits + misses), ROUNDS, n_pkts);
	fflush(stdout);
	return 0;
}

/* Insert flows [0, n) (one untimed pass); -1 if a packet was not forwarded. */
static int
preload(struct bench *b, uint32_t n)
{
	return round_run(b, 0, n, (n + LB_BURST - 1) / LB_BURST * LB_BURST, 0) < 0 ? -1 : 0;
}

static struct lb_worker *
worker_make(void)
{
	struct lb_worker *w = aligned_alloc(64, sizeof(*w));

	if (w == NULL)
		return NULL;
	memset(w, 0, sizeof(*w));
	w->ft = lb_flow_table_create(FT_CAPACITY);
	w->cnt = aligned_alloc(64, sizeof(*w->cnt));
	if (w->ft == NULL || w->cnt == NULL) {
		lb_flow_table_free(w->ft);
		free(w->cnt);
		free(w);
		return NULL;
	}
	memset(w->cnt, 0, sizeof(*w->cnt));
	w->now = 1000;
	w->tcp_idle = w->udp_idle = 1u << 30; /* nothing ages out during the run */
	memcpy(w->src_mac, g_port_mac, sizeof(g_port_mac));
	return w;
}

static void
worker_free(struct lb_worker *w)
{
	lb_flow_table_free(w->ft);
	free(w->cnt);
	free(w);
}

int
main(void)
{
	char prefix[64];
	char *eal_argv[] = {"bench_pipeline", "--no-huge", "-m", "256", "--no-pci",
	                    "--file-prefix",  prefix,      "-l", "0",   "--log-level",
	                    "error",          NULL};
	int eal_argc = (int)(sizeof(eal_argv) / sizeof(eal_argv[0])) - 1;
	struct rte_mempool *pool;
	struct lb_snapshot *s;
	struct bench b = {0};
	int have_mbufs = 0;
	int rc = 1;

	snprintf(prefix, sizeof(prefix), "bench-pipeline-%d", (int)getpid());
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "bench_pipeline: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	pool = rte_pktmbuf_pool_create("bench", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
	                               SOCKET_ID_ANY);
	s = snapshot_make();
	if (pool == NULL || s == NULL) {
		fprintf(stderr, "bench_pipeline: set-up failed\n");
		goto out;
	}
	if (rte_pktmbuf_alloc_bulk(pool, b.m, LB_BURST) != 0)
		goto out;
	have_mbufs = 1;
	frame_init();
	b.s = s;
	b.ns_per_cycle = 1e9 / (double)rte_get_tsc_hz();
	printf("bench_pipeline: 1 VIP, %u backends, M=%u, %u-byte TCP frames, bursts of %u, "
	       "flow table %u entries, TSC %.3f GHz\n",
	       N_BACKENDS, s->table_size, FRAME_LEN, LB_BURST, FT_CAPACITY,
	       (double)rte_get_tsc_hz() / 1e9);

	/* Few flows: the flow table stays in L1/L2. */
	b.w = worker_make();
	if (b.w == NULL || preload(&b, SMALL_FLOWS) != 0 ||
	    report(&b, "flow_hit", SMALL_FLOWS, 0, SMALL_FLOWS, HIT_PACKETS, 0) != 0)
		goto out_w;
	worker_free(b.w);

	/* A million flows: every lookup misses the caches. */
	b.w = worker_make();
	if (b.w == NULL || preload(&b, BIG_FLOWS) != 0 ||
	    report(&b, "flow_hit", BIG_FLOWS, 0, BIG_FLOWS, HIT_PACKETS, 0) != 0 ||
	    report(&b, "new_flow", BIG_FLOWS, FRESH_BASE, NEW_PACKETS, NEW_PACKETS, 1) != 0)
		goto out_w;
	rc = 0;
out_w:
	if (b.w != NULL)
		worker_free(b.w);
out:
	if (rc != 0)
		fprintf(stderr, "bench_pipeline: FAILED\n");
	if (have_mbufs)
		rte_pktmbuf_free_bulk(b.m, LB_BURST);
	rte_mempool_free(pool);
	lb_snapshot_free(s);
	rte_eal_cleanup();
	return rc;
}
