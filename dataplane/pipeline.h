/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-burst packet pipeline: parse, VIP lookup, flow table, Maglev choice,
 * encapsulation. It sorts a burst into what goes out toward backends, what goes
 * back to the client (ICMP too-big), what goes to the exception port and what
 * is dropped (already counted by reason). The worker does the I/O; tests and
 * benchmarks call this directly on synthetic mbufs.
 */
#ifndef LB_PIPELINE_H
#define LB_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dataplane/counters.h"
#include "dataplane/flow_guard.h"
#include "dataplane/flow_table.h"
#include "dataplane/frag_out.h"
#include "dataplane/frag_table.h"
#include "dataplane/icmp_limit.h"
#include "dataplane/pmtu.h"
#include "dataplane/sketch.h"
#include "dataplane/snapshot.h"

#define LB_BURST 32

/* Per-core state of one worker. Written by that worker only. */
struct lb_worker {
	struct lb_flow_table *ft;
	struct lb_core_counters *cnt;
	uint32_t now;      /* flow-table ticks; the worker refreshes it per burst */
	uint32_t tcp_idle; /* idle timeouts in ticks */
	uint32_t udp_idle;
	uint32_t syn_idle;          /* lifetime of an entry not yet confirmed (flows.syn_idle_ms) */
	uint32_t closing_idle;      /* after a FIN or RST (flows.closing_idle_ms) */
	struct lb_flow_guard guard; /* new-flow rate guard (flows.new_flow_rate) */
	uint8_t src_mac[6];         /* outer Ethernet source: the out port's MAC */
	uint8_t rx_mac[6];          /* the receiving port's MAC: ICMP replies' source */
	bool check_dst_mac;         /* only frames to rx_mac are ours (lb_mac_classify) */
	bool has_exception;         /* non-VIP traffic goes to the exception port */
	struct lb_sketch *sketch;   /* hot-key sketch fed every VIP packet; NULL = disabled */
	struct lb_frag_table *frag; /* fragments' ports by datagram; NULL = addresses only */
	struct lb_icmp_limit icmp;  /* generated ICMP errors; zeroed = no limit */
	uint32_t frag_id;           /* identification of the next outer packet fragmented */
	bool tx_ip_cksum;           /* the TX ports fill outer IPv4 checksums (port_caps.h) */
	struct lb_pmtu_table *pmtu; /* shared by all workers; NULL = encap.mtu only */
	struct lb_pmtu_cursor pmtu_cursor; /* lb_pmtu_sweep()'s position and pass */
	uint16_t mtu_gate;                 /* the burst's oversize threshold (lb_pmtu_gate()) */
	uint64_t spray_seq;                /* packets sprayed: each one's own draw (spray.h) */
} __attribute__((aligned(64)));

struct lb_burst_out {
	uint16_t n_fwd;  /* encapsulated, toward backends */
	uint16_t n_back; /* ICMP too-big, back out of the receiving port */
	uint16_t n_exc;  /* non-VIP, to the exception port */
	uint16_t n_drop; /* to free; their drop counters are already incremented */
	uint16_t n_frag; /* fragments of encapsulated packets, toward backends */
	/* Packets sent as those fragments (frag_out.h); their own mbufs are freed. */
	uint16_t n_fragmented;
	struct rte_mbuf *fwd[LB_BURST];
	struct rte_mbuf *back[LB_BURST];
	struct rte_mbuf *exc[LB_BURST];
	struct rte_mbuf *drop[LB_BURST];
	struct rte_mbuf *frag[LB_FRAG_OUT_MAX];
};

/**
 * Process up to LB_BURST packets against one snapshot. Counts rx, per-VIP and
 * per-backend traffic, flow events, outer fragmentation and drops; the caller
 * counts what TX takes (forwarded: fwd and frag, icmp_sent, exception) and
 * what it refuses (tx_full).
 */
void lb_pipeline_burst(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf **pkts,
                       uint16_t n, struct lb_burst_out *out);

/** Convert milliseconds to flow-table ticks at ticks_per_s (at least 1 tick). */
uint32_t lb_pipeline_ms_to_ticks(uint32_t ms, uint64_t ticks_per_s);

#endif /* LB_PIPELINE_H */
