/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillwayd's worker contexts: allocation (counters on each lcore's socket,
 * flow tables sized by the configuration, hot-key sketches sampling 1 packet
 * in 16), the flow-table tick, launching the workers, and freeing it all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_random.h>
#include <rte_rcu_qsbr.h>

#include "control/model/config.h"
#include "dataplane/flow_table.h"
#include "dataplane/sketch.h"
#include "dataplane/worker.h"
#include "dataplane/workers.h"

static unsigned int
tick_shift_for(uint64_t hz)
{
	/* Largest shift whose tick is at most 1 ms: idle timeouts stay exact to a
	 * millisecond and 32-bit ticks wrap only after weeks. */
	unsigned int shift = 0;

	while ((hz >> (shift + 1)) >= 1000)
		shift++;
	return shift;
}

int
lb_workers_create(struct lb_workers *ws, unsigned int n, const struct lb_workers_params *p,
                  char *err, size_t errlen)
{
	const struct lb_config *cfg = p->cfg;
	size_t qsz = rte_rcu_qsbr_get_memsize(n);

	ws->n = n;
	ws->qsv = rte_zmalloc("lb_qsbr", qsz, RTE_CACHE_LINE_SIZE);
	ws->ctx = rte_zmalloc("lb_workers", n * sizeof(*ws->ctx), RTE_CACHE_LINE_SIZE);
	ws->cores = calloc(n, sizeof(*ws->cores));
	ws->lcores = calloc(n, sizeof(*ws->lcores));
	if (ws->qsv == NULL || ws->ctx == NULL || ws->cores == NULL || ws->lcores == NULL ||
	    rte_rcu_qsbr_init(ws->qsv, n) != 0) {
		snprintf(err, errlen, "out of memory for worker state");
		return -ENOMEM;
	}

	uint64_t hz = rte_get_tsc_hz();
	unsigned int shift = tick_shift_for(hz);
	uint64_t ticks_per_s = hz >> shift;
	unsigned int lcore, w = 0;

	/* One path MTU table for all workers (pmtu.h), freed with them. */
	ws->pmtu = lb_pmtu_create(lb_pipeline_ms_to_ticks(LB_PMTU_AGE_MS, ticks_per_s));
	if (ws->pmtu == NULL) {
		snprintf(err, errlen, "out of memory for the path MTU table");
		return -ENOMEM;
	}
	ws->pmtu->tick_shift = shift;
	RTE_LCORE_FOREACH_WORKER (lcore) {
		struct lb_worker_ctx *c = &ws->ctx[w];

		c->w.pmtu = ws->pmtu;

		c->lcore = lcore;
		c->queue = (uint16_t)w;
		c->rcu_id = w;
		c->tick_shift = shift;
		c->io = p->io;
		c->snap = p->snap;
		c->qsv = ws->qsv;
		c->stop = p->stop;
		c->w.cnt = rte_zmalloc_socket("lb_counters", sizeof(*c->w.cnt), RTE_CACHE_LINE_SIZE,
		                              (int)rte_lcore_to_socket_id(lcore));
		c->w.ft = lb_flow_table_create(cfg->flows.capacity);
		if (c->w.cnt == NULL || c->w.ft == NULL) {
			snprintf(err, errlen,
			         "out of memory for lcore %u's flow table (%u entries)", lcore,
			         cfg->flows.capacity);
			return -ENOMEM;
		}
		c->w.frag = lb_frag_table_create(
		        LB_FRAG_DEFAULT_CAPACITY,
		        lb_pipeline_ms_to_ticks(LB_FRAG_DEFAULT_TIMEOUT_MS, ticks_per_s));
		if (c->w.frag == NULL) {
			snprintf(err, errlen, "out of memory for lcore %u's fragment table", lcore);
			return -ENOMEM;
		}
		c->w.tcp_idle = lb_pipeline_ms_to_ticks(cfg->flows.tcp_idle_ms, ticks_per_s);
		c->w.udp_idle = lb_pipeline_ms_to_ticks(cfg->flows.udp_idle_ms, ticks_per_s);
		c->w.syn_idle = lb_pipeline_ms_to_ticks(cfg->flows.syn_idle_ms, ticks_per_s);
		c->w.closing_idle =
		        lb_pipeline_ms_to_ticks(cfg->flows.closing_idle_ms, ticks_per_s);
		lb_flow_guard_init(&c->w.guard, cfg->flows.new_flow_rate, cfg->flows.new_flow_burst,
		                   ticks_per_s, 0);
		if (lb_icmp_limit_init(&c->w.icmp, cfg->icmp.rate_per_sec, cfg->icmp.burst,
		                       ticks_per_s, (uint32_t)(rte_rdtsc() >> shift)) != 0) {
			snprintf(err, errlen, "icmp: rate_per_sec %u or burst %u out of range",
			         cfg->icmp.rate_per_sec, cfg->icmp.burst);
			return -EINVAL;
		}
		memcpy(c->w.src_mac, p->src_mac, 6);
		c->w.has_exception = p->has_exception;
		/* Outer fragment identifications start apart on each worker. */
		c->w.frag_id = (uint32_t)rte_rand();
		c->w.check_dst_mac = p->check_dst_mac;
		c->w.tx_ip_cksum = p->tx_ip_cksum;
		if (cfg->hot.enabled) {
			/* hot.sample's shift, or with "auto" every packet until control
			 * has measured the core's rate (docs/hot-keys.md, "Sampling");
			 * the weight applies from the first window control reads. */
			unsigned int sk_shift =
			        cfg->hot.sample >= 0 ? (unsigned int)cfg->hot.sample : 0;

			if (ws->sketches == NULL)
				ws->sketches = calloc(n, sizeof(*ws->sketches));
			c->w.sketch = ws->sketches != NULL ? lb_sketch_create(sk_shift) : NULL;
			if (c->w.sketch == NULL) {
				snprintf(err, errlen, "out of memory for lcore %u's hot-key sketch",
				         lcore);
				return -ENOMEM;
			}
			lb_sketch_set_policy(c->w.sketch, sk_shift,
			                     cfg->hot.weight == LB_HOT_WEIGHT_BYTES);
			ws->sketches[w] = c->w.sketch;
			c->window = p->window;
		}
		ws->cores[w] = c->w.cnt;
		ws->lcores[w] = lcore;
		w++;
	}
	return 0;
}

void
lb_workers_launch(struct lb_workers *ws)
{
	for (unsigned int i = 0; i < ws->n; i++)
		rte_eal_remote_launch(lb_worker_main, &ws->ctx[i], ws->ctx[i].lcore);
}

void
lb_workers_free(struct lb_workers *ws)
{
	if (ws->ctx != NULL)
		for (unsigned int i = 0; i < ws->n; i++) {
			lb_flow_table_free(ws->ctx[i].w.ft);
			lb_sketch_free(ws->ctx[i].w.sketch);
			lb_frag_table_free(ws->ctx[i].w.frag);
			rte_free(ws->ctx[i].w.cnt);
		}
	rte_free(ws->ctx);
	rte_free(ws->qsv);
	free(ws->cores);
	free(ws->sketches);
	free(ws->lcores);
	lb_pmtu_free(ws->pmtu);
}
