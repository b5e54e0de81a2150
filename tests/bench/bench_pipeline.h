/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What bench_pipeline.c (the cases, their reports and main) shares with
 * bench_pipeline_stages.c (each step of the hit path timed alone): the frame
 * and round sizes, the benchmark's state, and how the next burst of fresh
 * frames is laid out before it is timed.
 */
#ifndef SPW_BENCH_PIPELINE_H
#define SPW_BENCH_PIPELINE_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "dataplane/pipeline.h"
#include "dataplane/snapshot.h"

#define FRAME_LEN 64 /* Ethernet 14 + IPv4 20 + TCP 20 + 10 bytes of data */
#define ROUNDS 7     /* timed rounds per case; the median is reported */
#define N_MBUFS 2048 /* in flight: an RX ring's worth, so mbufs are not all in L1 */

extern uint32_t g_rounds; /* timed rounds per case: ROUNDS, fewer with SPILLWAY_BENCH_QUICK */
extern volatile uint64_t g_sink; /* keeps the baseline's reads alive */

struct bench {
	struct lb_worker *w;
	const struct lb_snapshot *s;
	struct rte_mbuf *pool[N_MBUFS]; /* cycled through a burst at a time, like an RX ring */
	struct rte_mbuf **m;            /* the current burst's */
	uint32_t next;                  /* first mbuf of the next burst */
	double ns_per_cycle;
	uint64_t window; /* hot-key window, when the worker has a sketch */
};

/* Rewrite m as flow number i: source 10.(i>>16).(i>>8).i, source port from i. */
void mbuf_set(struct rte_mbuf *m, uint32_t i);

/* Move on to the next LB_BURST mbufs of the pool. */
void burst_next(struct bench *b);

/*
 * Per-stage cycles: each step of the hit path alone, over bursts of fresh
 * frames of the flows in draw, one rdtsc pair per stage per burst. Stage
 * inputs come from the previous stage run on the same burst.
 */
enum {
	ST_PARSE,
	ST_VIP,
	ST_HASH,
	ST_HASH4,
	ST_HASH8,
	ST_FLOW,
	ST_MAGLEV,
	ST_ENCAP,
	ST_ENCAP_T,
	ST_COUNT1,
	ST_COUNT,
	ST__N
};

extern const char *const g_stage_name[ST__N];

/*
 * Time every stage over g_rounds rounds of n_pkts packets of the flows in draw
 * against b's worker and snapshot: r[stage][round] is TSC cycles per packet.
 */
void stages_measure(struct bench *b, const uint32_t *draw, uint32_t n_pkts,
                    double r[ST__N][ROUNDS]);

#endif /* SPW_BENCH_PIPELINE_H */
