/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Worker loop, shaped like l3fwd's lpm_main_loop: set-up before the loop, then
 * RX burst, process, TX burst, and a quiescent-state report once per pass so
 * control knows when a retired snapshot can no longer be in use here.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "dataplane/frag_table.h"
#include "dataplane/worker.h"

volatile bool lb_worker_test_stall[RTE_MAX_LCORE];

/* Transmit a list; whatever TX does not take is freed and counted. */
static inline uint16_t
tx_or_drop(struct lb_worker *w, uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent;

	if (n == 0)
		return 0;
	sent = rte_eth_tx_burst(port, queue, pkts, n);
	if (sent < n) {
		w->cnt->drops[LB_DROP_TX_FULL] += (uint64_t)(n - sent);
		rte_pktmbuf_free_bulk(&pkts[sent], n - sent);
	}
	return sent;
}

_Static_assert(LB_FRAG_OUT_MAX >= LB_BURST, "tx_fwd's byte array holds either list");

/*
 * Transmit encapsulated packets (a burst's fwd or frag list): forwarded and
 * forwarded_bytes count what TX takes. Bytes are read before TX: once sent, an
 * mbuf is the driver's.
 */
static inline void
tx_fwd(struct lb_worker *w, uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t bytes[LB_FRAG_OUT_MAX + 1];
	uint16_t sent;

	bytes[0] = 0;
	for (uint16_t i = 0; i < n; i++)
		bytes[i + 1] = bytes[i] + rte_pktmbuf_pkt_len(pkts[i]);
	sent = tx_or_drop(w, port, queue, pkts, n);
	w->cnt->forwarded += sent;
	w->cnt->forwarded_bytes += bytes[sent];
}

int
lb_worker_main(void *arg)
{
	struct lb_worker_ctx *ctx = arg;
	struct lb_worker *w = &ctx->w;
	const struct lb_io_conf *io = ctx->io;
	struct lb_core_counters *cnt = w->cnt;
	struct rte_mbuf *pkts[LB_BURST];
	struct lb_burst_out out;
	const uint16_t q = ctx->queue;

	rte_rcu_qsbr_thread_register(ctx->qsv, ctx->rcu_id);
	rte_rcu_qsbr_thread_online(ctx->qsv, ctx->rcu_id);

	while (!*ctx->stop) {
		/* Acquire pairs with control's release store: the snapshot's contents
		 * are visible before its pointer is. */
		const struct lb_snapshot *s = __atomic_load_n(ctx->snap, __ATOMIC_ACQUIRE);

		/* Lets control see when every core has moved to a new snapshot. */
		if (cnt->snapshot_gen != s->generation)
			__atomic_store_n(&cnt->snapshot_gen, s->generation, __ATOMIC_RELEASE);
		w->now = (uint32_t)(rte_rdtsc() >> ctx->tick_shift);
		lb_flow_table_advance(w->ft, w->now); /* the expiry sweep, once per tick */
		if (w->frag != NULL)
			lb_frag_table_advance(w->frag, w->now);
		if (w->pmtu != NULL)
			lb_pmtu_sweep(w->pmtu, &w->pmtu_cursor, w->now);
		/* Relaxed: the number is all control publishes with it; the sketch
		 * orders its own buffers (release on close, see sketch.c). */
		if (ctx->window != NULL && w->sketch != NULL)
			lb_sketch_poll(w->sketch, __atomic_load_n(ctx->window, __ATOMIC_RELAXED));
		/* 0 while the memif gate (memif_gate.c) keeps this worker off the ports;
		 * acquire: what the interrupt thread did meanwhile is visible. */
		const uint16_t n_rx = __atomic_load_n(&io->n_rx_ports, __ATOMIC_ACQUIRE);

		for (uint16_t p = 0; p < n_rx; p++) {
			uint16_t port = io->rx_ports[p];
			uint16_t n = rte_eth_rx_burst(port, q, pkts, LB_BURST);

			if (n == 0)
				continue;
			/* Replies leave by the receiving port, and one-armed so does the rest. */
			memcpy(w->rx_mac, io->port_mac[port], 6);
			if (io->out_port < 0)
				memcpy(w->src_mac, io->port_mac[port], 6);
			lb_pipeline_burst(w, s, pkts, n, &out);
			uint16_t fwd_port = io->out_port < 0 ? port : (uint16_t)io->out_port;

			tx_fwd(w, fwd_port, q, out.fwd, out.n_fwd);
			if (unlikely(out.n_frag != 0))
				tx_fwd(w, fwd_port, q, out.frag, out.n_frag);
			cnt->icmp_sent += tx_or_drop(w, port, q, out.back, out.n_back);
			if (io->exc_port >= 0)
				cnt->exception += tx_or_drop(w, (uint16_t)io->exc_port, q, out.exc,
				                             out.n_exc);
			if (out.n_drop)
				rte_pktmbuf_free_bulk(out.drop, out.n_drop);
		}
		/* One plain load a pass; never set outside the test mode. */
		if (likely(!lb_worker_test_stall[ctx->rcu_id]))
			rte_rcu_qsbr_quiescent(ctx->qsv, ctx->rcu_id);
	}
	rte_rcu_qsbr_thread_offline(ctx->qsv, ctx->rcu_id);
	rte_rcu_qsbr_thread_unregister(ctx->qsv, ctx->rcu_id);
	return 0;
}
