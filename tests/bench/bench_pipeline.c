/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Benchmark for lb_pipeline_burst: ns and TSC cycles per packet for the paths a
 * worker takes on one VIP with 100 backends (Maglev M = 65537), 64-byte TCP
 * frames in bursts of 32: a flow-table hit with 1k and with 1M flows resident
 * (flows drawn uniformly, and Zipf-distributed for 1M), and a new flow (Maglev
 * pick + insert) with 1M resident. Each figure is the median of several rounds
 * and comes with a baseline measured in the same run: the same loop with the
 * pipeline replaced by a read of each packet's first cache line, so the ratio
 * shows what the pipeline itself costs.
 *
 * No repeat-one-packet trap: before every burst the next 32 of 2048 mbufs
 * (cycled like an RX ring, so their headroom is not in L1) are reset and
 * their frames rewritten for the flows drawn next (forward() strips L2 and
 * prepends the outer headers, so a replayed mbuf would measure nothing), outside
 * the timed region, followed by a full fence so that no store of that rewrite
 * is still in flight when the timed part reads the frame. Only the
 * lb_pipeline_burst call (or the baseline's read) is timed, with rdtsc around
 * each burst. The frames are therefore in L1 when the
 * pipeline starts, as after a PMD's RX with DDIO they would be in L3 at best.
 *
 * The "stage" lines (bench_pipeline_stages.c) time each step of the pipeline
 * alone over the same fresh bursts of the 1k-flow case (public inline helpers,
 * one burst of 32 per rdtsc pair), to give a per-stage cycle budget; stages
 * overlap in the real pipeline, so they need not add up to the whole.
 *
 * Each hit and new-flow case is followed by the same case with the hot-key
 * sketch on (NAME+sketch_sN: sampling 1 in 2^N, N = 0, 2, 4; a round is one
 * window, switched untimed), for the sketch's added ns/packet.
 *
 * new_flow_src_ip and new_flow_hot: new flows of 64 source addresses on a VIP
 * keyed by source address, 1M flows resident, without and with a hot-key
 * override for each of them (the override path against the Maglev pick).
 *
 * The "memory" line gives the flow table's bytes per entry: its allocation
 * divided by its capacity, and the process's resident-set growth over creating
 * it (the table is touched at creation) and over inserting the 1M flows.
 *
 * Usage: bench_pipeline [--json FILE] [NAME-SUBSTRING]  runs the cases whose
 * name contains it; --json also writes every figure to FILE (bench_json.h).
 * SPILLWAY_BENCH_QUICK=1 shrinks every case (for valgrind --tool=callgrind);
 * SPILLWAY_BENCH_FLOWS=N sets the resident set of the big cases (default 1M,
 * 64k with SPILLWAY_BENCH_QUICK).
 *
 * Under valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no
 * (tests/bench/ipp_guard.py), each case's timed lb_pipeline_burst calls, and
 * nothing else, are counted: instrumentation is switched on for the case's
 * pipeline rounds only (set-up, preloads and baselines run uninstrumented),
 * collection is toggled around each timed call, and the counts are dumped
 * under the label "NAME/FLOWS" when the case's rounds end. Outside valgrind
 * the client requests are a few no-op instructions, skipped by one branch.
 */
#include <inttypes.h>
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

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#else
#define BENCH_HAVE_CALLGRIND 0
#endif

#include "control/model/config.h"
#include "dataplane/flow_table.h"
#include "dataplane/parse.h"
#include "dataplane/pipeline.h"
#include "dataplane/sketch.h"
#include "control/build/snapshot_build.h"

#include "eal.h"
#include "median.h"
#include "rng.h"
#include "zipf.h"

#include "bench_json.h"
#include "bench_pipeline.h"

#define N_BACKENDS 100
#define FT_CAPACITY (1u << 22) /* entries: 1M flows fill a quarter, so hits stay hits */
#define HIT_PACKETS (1u << 20) /* packets per round of the hit cases */
#define NEW_PACKETS (1u << 17) /* fresh flows per round of the new-flow case */
#define BIG_FLOWS 1000000u
#define SMALL_FLOWS 1000u
#define FRESH_BASE 0x800000u /* flow numbers from here on are never pre-inserted */

static const uint8_t g_port_mac[6] = {0x02, 0x1b, 0, 0, 0, 0x01};
static uint8_t g_frame[FRAME_LEN];
volatile uint64_t g_sink; /* keeps the baseline's reads alive */

/* Sizes, shrunk by SPILLWAY_BENCH_QUICK; g_big_flows set by SPILLWAY_BENCH_FLOWS. */
uint32_t g_rounds = ROUNDS;
static uint32_t g_hit_packets = HIT_PACKETS;
static uint32_t g_new_packets = NEW_PACKETS;
static uint32_t g_big_flows = BIG_FLOWS;
static const char *g_filter;
/* Running under callgrind: count each case's timed calls (see the top). */
static int g_callgrind;
/* Set while a case's timed rounds run under callgrind: collect those calls. */
static int g_collect;
/* Set while the hot-key cases run: frames of flow i come from one of HOT_KEYS
 * source addresses (see mbuf_set). */
static int g_hot_src;

#define HOT_KEYS 64    /* hot source addresses, each with an override */
#define HOT_REPLICAS 3 /* backends each hot key spreads over */

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

void
mbuf_set(struct rte_mbuf *m, uint32_t i)
{
	uint8_t *p;
	uint16_t sport = (uint16_t)(1024 + (i >> 24) * 997 + (i & 0x3FF));

	rte_pktmbuf_reset(m);
	p = (uint8_t *)rte_pktmbuf_append(m, FRAME_LEN);
	memcpy(p, g_frame, FRAME_LEN);
	if (g_hot_src) {
		/* Source 10.200.0.(i mod HOT_KEYS), a port per flow: 64 x 64512 flows. */
		sport = (uint16_t)(1024 + (i / HOT_KEYS) % 64512);
		p[14 + 13] = 200;
		p[14 + 14] = 0;
		p[14 + 15] = (uint8_t)(i % HOT_KEYS);
	} else {
		p[14 + 13] = (uint8_t)(i >> 16);
		p[14 + 14] = (uint8_t)(i >> 8);
		p[14 + 15] = (uint8_t)i;
	}
	p[34] = (uint8_t)(sport >> 8);
	p[35] = (uint8_t)sport;
}

/*
 * The benchmark's snapshot: one VIP keyed by key ("5tuple" or "src_ip"). With
 * hot, also HOT_KEYS overrides on that VIP: the source addresses of g_hot_src,
 * each spread over HOT_REPLICAS backends.
 */
static struct lb_snapshot *
snapshot_make_key(const char *key, int hot)
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
	                    "\"key\": \"%s\", \"backends\": [",
	                    FT_CAPACITY, key);
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
	else if (hot) {
		struct lb_snapshot_override ov[HOT_KEYS];
		uint16_t rep[HOT_KEYS][HOT_REPLICAS];
		struct lb_snapshot *with = NULL;

		frame_init();
		for (uint32_t k = 0; k < HOT_KEYS; k++) {
			uint8_t f[FRAME_LEN];
			struct lb_pkt_info info;
			const struct lb_vip *v;

			/* The key hash of hot source k, as the pipeline computes it. */
			memcpy(f, g_frame, FRAME_LEN);
			f[14 + 13] = 200;
			f[14 + 14] = 0;
			f[14 + 15] = (uint8_t)k;
			lb_parse_frame(f, FRAME_LEN, FRAME_LEN, &info);
			v = lb_vip_lookup(s, info.key.af, &info.key.dst, info.key.proto,
			                  info.key.dport);
			for (uint32_t r = 0; r < HOT_REPLICAS; r++)
				rep[k][r] = (uint16_t)((k * 7 + r * 31) % N_BACKENDS);
			ov[k] = (struct lb_snapshot_override){
			        .vip_id = v->id,
			        .key_hash = lb_vip_key_hash(s, v, &info.key, 0),
			        .n_replicas = HOT_REPLICAS,
			        .replicas = rep[k]};
		}
		with = lb_snapshot_build_ext(cfg, 2, s, ov, HOT_KEYS, err, sizeof(err));
		if (with == NULL || with->overrides.n != HOT_KEYS)
			fprintf(stderr, "bench_pipeline: snapshot with overrides: %s\n",
			        with == NULL ? err : "overrides dropped");
		lb_snapshot_free(s);
		s = with;
	}
	json_decref(root);
	lb_config_free(cfg);
	free(doc);
	return s;
}

static struct lb_snapshot *
snapshot_make(void)
{
	return snapshot_make_key("5tuple", 0);
}

void
burst_next(struct bench *b)
{
	b->m = &b->pool[b->next];
	b->next = (b->next + LB_BURST) % N_MBUFS;
}

/*
 * One round of n_pkts packets in bursts of LB_BURST: flow draw[k] for packet k
 * if draw is given, else flows first, first + 1, ... Returns TSC cycles/packet
 * for the timed part, or a negative value if a packet was not forwarded.
 */
static double
round_run(struct bench *b, uint32_t first, const uint32_t *draw, uint32_t n_pkts, int baseline)
{
	uint64_t cycles = 0;

	for (uint32_t done = 0; done < n_pkts; done += LB_BURST) {
		struct lb_burst_out out;
		uint64_t t0, t1;

		burst_next(b);
		for (uint32_t i = 0; i < LB_BURST; i++)
			mbuf_set(b->m[i], draw != NULL ? draw[done + i] : first + done + i);
		/* Drain the store buffer: received frames come from memory, and loads
		 * of bytes still in flight from mbuf_set() would stall on it. */
		rte_mb();
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
#if BENCH_HAVE_CALLGRIND
			if (unlikely(g_collect))
				CALLGRIND_TOGGLE_COLLECT;
#endif
			lb_pipeline_burst(b->w, b->s, b->m, LB_BURST, &out);
#if BENCH_HAVE_CALLGRIND
			if (unlikely(g_collect))
				CALLGRIND_TOGGLE_COLLECT;
#endif
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
	return (double)cycles / (double)n_pkts;
}

/*
 * Median over g_rounds rounds; with fresh, round i uses flows first + i * n_pkts
 * onwards, so that each round sees flows never seen before.
 */
static double
median_run(struct bench *b, uint32_t first, const uint32_t *draw, uint32_t n_pkts, int fresh,
           int baseline, double *min)
{
	double r[ROUNDS];

	for (uint32_t i = 0; i < g_rounds; i++) {
		/* A round is a hot-key window (~1M packets), switched untimed. */
		if (b->w->sketch != NULL)
			lb_sketch_poll(b->w->sketch, ++b->window);
		r[i] = round_run(b, first + (fresh ? i * n_pkts : 0), draw, n_pkts, baseline);
		if (r[i] < 0)
			return -1.0;
	}
	double med = median(r, g_rounds); /* sorts r */

	if (min != NULL)
		*min = r[0];
	return med;
}

static int
selected(const char *name)
{
	return g_filter == NULL || strstr(name, g_filter) != NULL;
}

/*
 * Under callgrind: instrument from here on, with nothing collected so far
 * (round_run() collects the timed calls while g_collect is set).
 */
static void
count_start(void)
{
	if (!g_callgrind)
		return;
#if BENCH_HAVE_CALLGRIND
	CALLGRIND_START_INSTRUMENTATION;
	CALLGRIND_ZERO_STATS;
	g_collect = 1;
#endif
}

/* Under callgrind: dump what the case's timed calls executed as "NAME/FLOWS". */
static void
count_stop(const char *name, uint32_t resident)
{
	if (!g_callgrind)
		return;
#if BENCH_HAVE_CALLGRIND
	char label[128];

	g_collect = 0;
	snprintf(label, sizeof(label), "%s/%u", name, resident);
	CALLGRIND_DUMP_STATS_AT(label);
	CALLGRIND_STOP_INSTRUMENTATION;
#else
	(void)name;
	(void)resident;
#endif
}

/* Run a case and its baseline, print one line; -1 if the pipeline failed. */
static int
report(struct bench *b, const char *name, uint32_t resident, uint32_t first, const uint32_t *draw,
       uint32_t n_pkts, int fresh)
{
	const struct lb_core_counters *c = b->w->cnt;
	uint64_t hits = c->flow_hits, misses = c->flow_misses;
	double pipe, base, pipe_min;

	if (!selected(name))
		return 0;
	count_start();
	pipe = median_run(b, first, draw, n_pkts, fresh, 0, &pipe_min);
	count_stop(name, resident);
	if (pipe < 0)
		return -1;
	hits = c->flow_hits - hits;
	misses = c->flow_misses - misses;
	/* A hit case that misses measures the wrong path: fail, do not report it. */
	if (strstr(name, "flow_hit") != NULL && hits < (hits + misses) / 100 * 99) {
		fprintf(stderr,
		        "bench_pipeline: %s: %" PRIu64 " hits of %" PRIu64
		        " packets (under 99%%): not the hit path\n",
		        name, hits, hits + misses);
		return -1;
	}
	base = median_run(b, first, draw, n_pkts, fresh, 1, NULL);
	printf("pipeline %s flows=%u: %.1f ns/pkt %.1f cycles/pkt (baseline %.1f ns/pkt %.1f "
	       "cycles/pkt; hits %.1f%%; median of %u rounds of %u packets)\n",
	       name, resident, pipe * b->ns_per_cycle, pipe, base * b->ns_per_cycle, base,
	       100.0 * (double)hits / (double)(hits + misses), g_rounds, n_pkts);
	fflush(stdout);
	bj_add(json_pack("{s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i}", "name", name,
	                 "flows", (json_int_t)resident, "ns_per_pkt", pipe * b->ns_per_cycle,
	                 "cycles_per_pkt", pipe, "min_ns_per_pkt", pipe_min * b->ns_per_cycle,
	                 "baseline_ns_per_pkt", base * b->ns_per_cycle, "baseline_cycles_per_pkt",
	                 base, "hit_pct", 100.0 * (double)hits / (double)(hits + misses), "rounds",
	                 (json_int_t)g_rounds, "packets_per_round", (json_int_t)n_pkts));
	return 0;
}

/*
 * The same case with the hot-key sketch on, sampling 1 in 2^shift for each
 * shift of SKETCH_SHIFTS, printed as NAME+sketch_sSHIFT right after the
 * sketch-free line so the two are measured minutes apart at most. fresh_base:
 * for the new-flow case, where flow numbers start for each shift (never seen).
 */
static const unsigned int g_sketch_shifts[] = {0, 2, 4};

static int
report_sketch(struct bench *b, const char *name, uint32_t resident, uint32_t first,
              const uint32_t *draw, uint32_t n_pkts, int fresh)
{
	for (size_t i = 0; i < sizeof(g_sketch_shifts) / sizeof(g_sketch_shifts[0]); i++) {
		char full[96];
		int rc;

		snprintf(full, sizeof(full), "%s+sketch_s%u", name, g_sketch_shifts[i]);
		if (!selected(full))
			continue;
		b->w->sketch = lb_sketch_create(g_sketch_shifts[i]);
		if (b->w->sketch == NULL)
			return -1;
		rc = report(b, full, resident,
		            fresh ? first + (uint32_t)(i + 1) * 0x100000u : first, draw, n_pkts,
		            fresh);
		lb_sketch_free(b->w->sketch);
		b->w->sketch = NULL;
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* Insert flows [0, n) (one untimed pass); -1 if a packet was not forwarded. */
static int
preload(struct bench *b, uint32_t n)
{
	return round_run(b, 0, NULL, (n + LB_BURST - 1) / LB_BURST * LB_BURST, 0) < 0 ? -1 : 0;
}

/* The per-stage cycles of the hit path (bench_pipeline_stages.c), a line per stage. */
static void
stages_run(struct bench *b, const char *name, uint32_t resident, const uint32_t *draw,
           uint32_t n_pkts)
{
	double r[ST__N][ROUNDS];

	if (!selected(name))
		return;
	stages_measure(b, draw, n_pkts, r);
	for (int st = 0; st < ST__N; st++) {
		double c = median(r[st], g_rounds);

		printf("pipeline %s flows=%u: %s %.1f ns/pkt %.1f cycles/pkt (alone, incl. "
		       "rdtsc pair / 32)\n",
		       name, resident, g_stage_name[st], c * b->ns_per_cycle, c);
		bj_add(json_pack("{s:s, s:s, s:i, s:f, s:f, s:i}", "name", name, "stage",
		                 g_stage_name[st], "flows", (json_int_t)resident, "ns_per_pkt",
		                 c * b->ns_per_cycle, "cycles_per_pkt", c, "rounds",
		                 (json_int_t)g_rounds));
	}
	fflush(stdout);
}

/*
 * The pipeline hashes eight keys at a time with AVX-512, else four with AVX2,
 * where it can: check that both give lb_hash_flow()'s value for random keys of
 * both families (0 if so). A variant the CPU lacks is skipped, and said so.
 */
static int
hash_x4_check(const struct lb_snapshot *s)
{
#ifdef LB_HASH_HAVE_X4
	int have4 = __builtin_cpu_supports("avx2");
#ifdef LB_HASH_HAVE_X8
	int have8 = __builtin_cpu_supports("avx512f");
#else
	int have8 = 0;
#endif
	uint64_t x = 12345;

	printf("bench_pipeline: hash check: x4 (AVX2) %s, x8 and x8s (AVX-512F) %s\n",
	       have4 ? "checked" : "skipped, no AVX2", have8 ? "checked" : "skipped, no AVX-512F");
	for (int round = 0; round < 50000; round++) {
		struct lb_flow_key k[8];
		const struct lb_flow_key *kp[8];
		uint64_t h[8];

		for (int i = 0; i < 8; i++) {
			uint64_t r[5];

			for (int j = 0; j < 5; j++)
				r[j] = rng_xorshift(&x);
			memcpy(&k[i], r, sizeof(k[i]));
			if (r[0] & 1) {
				memset(&k[i].src.b[4], 0, 12);
				memset(&k[i].dst.b[4], 0, 12);
			}
			kp[i] = &k[i];
		}
		if (have4) {
			lb_hash_flow_x4(&s->hkey, kp, h);
			lb_hash_flow_x4(&s->hkey, kp + 4, h + 4);
			for (int i = 0; i < 8; i++)
				if (h[i] != lb_hash_flow(&s->hkey, &k[i])) {
					fprintf(stderr,
					        "bench_pipeline: lb_hash_flow_x4 differs\n");
					return -1;
				}
		}
#ifdef LB_HASH_HAVE_X8
		if (have8) {
			lb_hash_flow_x8(&s->hkey, kp, h);
			for (int i = 0; i < 8; i++)
				if (h[i] != lb_hash_flow(&s->hkey, &k[i])) {
					fprintf(stderr,
					        "bench_pipeline: lb_hash_flow_x8 differs\n");
					return -1;
				}
			lb_hash_flow_x8s(&s->hkey, &k[0], sizeof(k[0]), h);
			for (int i = 0; i < 8; i++)
				if (h[i] != lb_hash_flow(&s->hkey, &k[i])) {
					fprintf(stderr,
					        "bench_pipeline: lb_hash_flow_x8s differs\n");
					return -1;
				}
		}
#endif
	}
#else
	(void)s;
#endif
	return 0;
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
	/* Nothing ages out during the run; a new entry too (syn_idle 0 would make
	 * it dead on arrival, and every "hit" a miss). */
	w->tcp_idle = w->udp_idle = w->syn_idle = w->closing_idle = 1u << 30;
	memcpy(w->src_mac, g_port_mac, sizeof(g_port_mac));
	memcpy(w->rx_mac, g_port_mac, sizeof(g_port_mac));
	w->check_dst_mac = true; /* spillwayd's default: the frames are to g_port_mac */
	return w;
}

static void
worker_free(struct lb_worker *w)
{
	if (w == NULL)
		return;
	lb_flow_table_free(w->ft);
	free(w->cnt);
	free(w);
}

/* The process's resident set in bytes (VmRSS), -1 if unknown. */
static long
rss_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/*
 * Flow-table memory: allocation / capacity (what sizing costs per entry), the
 * resident-set growth over its creation (the table is touched then) and over
 * inserting g_big_flows flows, and the allocation per resident flow at this
 * benchmark's load (a quarter of the capacity).
 */
static void
memory_report(const struct lb_flow_table *ft, long rss0, long rss1, long rss2)
{
	uint32_t cap = lb_flow_table_capacity(ft);
	double alloc = (double)ft->n_buckets * sizeof(struct lb_flow_bucket);
	double rss_create = rss0 >= 0 && rss1 >= 0 ? (double)(rss1 - rss0) : -1;
	double rss_insert = rss1 >= 0 && rss2 >= 0 ? (double)(rss2 - rss1) : -1;

	if (!selected("memory"))
		return;
	printf("pipeline memory: flow table %u entries (%zu B each), %.0f MiB allocated: "
	       "%.1f B/entry; RSS +%.1f MiB at creation (%.1f B/entry), +%.1f MiB inserting %u "
	       "flows; %.1f B per resident flow at %.0f%% load\n",
	       cap, sizeof(struct lb_flow_entry), alloc / 1048576.0, alloc / cap,
	       rss_create / 1048576.0, rss_create / cap, rss_insert / 1048576.0, g_big_flows,
	       alloc / g_big_flows, 100.0 * g_big_flows / cap);
	bj_add(json_pack("{s:s, s:i, s:i, s:f, s:f, s:f, s:f, s:i, s:f}", "name", "memory",
	                 "capacity", (json_int_t)cap, "entry_bytes",
	                 (json_int_t)sizeof(struct lb_flow_entry), "alloc_bytes", alloc,
	                 "bytes_per_entry", alloc / cap, "rss_create_bytes", rss_create,
	                 "rss_bytes_per_entry", rss_create / cap, "resident_flows",
	                 (json_int_t)g_big_flows, "bytes_per_resident_flow", alloc / g_big_flows));
}

/*
 * The hot-key override path against the new-flow path, same run, same flows,
 * 1M flows resident: new flows of HOT_KEYS source addresses on a VIP keyed by
 * source address, without overrides (new_flow_src_ip: Maglev pick), then with
 * every one of those keys overridden (new_flow_hot: override probe + replica
 * pick by 5-tuple hash). Flow numbers are fresh for each case.
 */
static int
hot_cases(struct bench *b)
{
	const struct lb_snapshot *saved = b->s;
	struct lb_snapshot *plain, *hot;
	uint32_t per_case = g_rounds * g_new_packets;
	int rc = -1;

	if (!selected("new_flow_src_ip") && !selected("new_flow_hot"))
		return 0;
	if ((uint64_t)2 * per_case > (uint64_t)HOT_KEYS * 64512) {
		fprintf(stderr, "bench_pipeline: too few hot-key flows for the rounds\n");
		return -1;
	}
	plain = snapshot_make_key("src_ip", 0);
	hot = snapshot_make_key("src_ip", 1);
	if (plain != NULL && hot != NULL) {
		g_hot_src = 1;
		b->s = plain;
		rc = report(b, "new_flow_src_ip", g_big_flows, 0, NULL, g_new_packets, 1);
		b->s = hot;
		uint64_t spread = b->w->cnt->hot_spread;

		if (rc == 0)
			rc = report(b, "new_flow_hot", g_big_flows, per_case, NULL, g_new_packets,
			            1);
		/* Every timed packet of the hot case must have taken the override. */
		if (rc == 0 && selected("new_flow_hot") &&
		    b->w->cnt->hot_spread - spread < (uint64_t)per_case) {
			fprintf(stderr,
			        "bench_pipeline: new_flow_hot: %llu of %u packets overridden\n",
			        (unsigned long long)(b->w->cnt->hot_spread - spread), per_case);
			rc = -1;
		}
		g_hot_src = 0;
		b->s = saved;
	}
	lb_snapshot_free(plain);
	lb_snapshot_free(hot);
	return rc;
}

static int
run_cases(struct bench *b)
{
	uint32_t *small = draws_make(g_hit_packets, SMALL_FLOWS, 0);
	uint32_t *uni = draws_make(g_hit_packets, g_big_flows, 0);
	uint32_t *zipf = draws_make(g_hit_packets, g_big_flows, 1);
	long rss0, rss1;
	int rc = -1;

	if (small == NULL || uni == NULL || zipf == NULL)
		goto out;

	/* Few flows: the flow table stays in L1/L2. */
	b->w = worker_make();
	if (b->w == NULL || preload(b, SMALL_FLOWS) != 0 ||
	    report(b, "flow_hit_uniform", SMALL_FLOWS, 0, small, g_hit_packets, 0) != 0 ||
	    report_sketch(b, "flow_hit_uniform", SMALL_FLOWS, 0, small, g_hit_packets, 0) != 0)
		goto out;
	stages_run(b, "stage", SMALL_FLOWS, small, g_hit_packets);
	worker_free(b->w);

	/* A million flows: the table (64 MiB) is far bigger than the caches. */
	rss0 = rss_bytes();
	b->w = worker_make();
	if (b->w == NULL)
		goto out;
	rss1 = rss_bytes();

	if (preload(b, g_big_flows) != 0)
		goto out;
	memory_report(b->w->ft, rss0, rss1, rss_bytes());
	if (report(b, "flow_hit_uniform", g_big_flows, 0, uni, g_hit_packets, 0) != 0 ||
	    report_sketch(b, "flow_hit_uniform", g_big_flows, 0, uni, g_hit_packets, 0) != 0 ||
	    report(b, "flow_hit_zipf", g_big_flows, 0, zipf, g_hit_packets, 0) != 0 ||
	    report_sketch(b, "flow_hit_zipf", g_big_flows, 0, zipf, g_hit_packets, 0) != 0 ||
	    report(b, "new_flow", g_big_flows, FRESH_BASE, NULL, g_new_packets, 1) != 0 ||
	    report_sketch(b, "new_flow", g_big_flows, FRESH_BASE, NULL, g_new_packets, 1) != 0 ||
	    hot_cases(b) != 0)
		goto out;
	rc = 0;
out:
	worker_free(b->w);
	b->w = NULL;
	free(small);
	free(uni);
	free(zipf);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *quick = getenv("SPILLWAY_BENCH_QUICK");
	const char *flows = getenv("SPILLWAY_BENCH_FLOWS");
	struct rte_mempool *pool;
	struct lb_snapshot *s;
	struct bench b = {0};
	int have_mbufs = 0;
	int rc = 1;

	argc = bj_args(argc, argv);
	if (argc > 1)
		g_filter = argv[1];
#if BENCH_HAVE_CALLGRIND
	g_callgrind = RUNNING_ON_VALGRIND != 0;
#endif
	if (quick != NULL && quick[0] == '1') {
		g_rounds = 3;
		g_hit_packets = 1u << 15;
		g_new_packets = 1u << 13;
		g_big_flows = 1u << 16;
	}
	if (flows != NULL) {
		char *end;
		unsigned long n = strtoul(flows, &end, 10);

		if (*flows == '\0' || *end != '\0' || n < 1 || n > FRESH_BASE) {
			fprintf(stderr, "bench_pipeline: SPILLWAY_BENCH_FLOWS: 1 to %u\n",
			        FRESH_BASE);
			return 1;
		}
		g_big_flows = (uint32_t)n;
	}
	if (test_eal_init("bench_pipeline", "bench-pipeline") < 0) {
		fprintf(stderr, "bench_pipeline: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	pool = rte_pktmbuf_pool_create("bench", N_MBUFS + 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
	                               SOCKET_ID_ANY);
	s = snapshot_make();
	if (pool == NULL || s == NULL) {
		fprintf(stderr, "bench_pipeline: set-up failed\n");
		goto out;
	}
	if (rte_pktmbuf_alloc_bulk(pool, b.pool, N_MBUFS) != 0)
		goto out;
	have_mbufs = 1;
	frame_init();
	b.s = s;
	b.ns_per_cycle = 1e9 / (double)rte_get_tsc_hz();
	printf("bench_pipeline: 1 VIP, %u backends, M=%u, %u-byte TCP frames, bursts of %u, "
	       "flow table %u entries, TSC %.3f GHz\n",
	       N_BACKENDS, s->table_size, FRAME_LEN, LB_BURST, FT_CAPACITY,
	       (double)rte_get_tsc_hz() / 1e9);
	if (hash_x4_check(s) == 0 && run_cases(&b) == 0 &&
	    bj_write("bench_pipeline", (double)rte_get_tsc_hz()) == 0)
		rc = 0;
out:
	if (rc != 0)
		fprintf(stderr, "bench_pipeline: FAILED\n");
	if (have_mbufs)
		rte_pktmbuf_free_bulk(b.pool, N_MBUFS);
	rte_mempool_free(pool);
	lb_snapshot_free(s);
	rte_eal_cleanup();
	return rc;
}
