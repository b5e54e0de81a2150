/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The generator: the flow table (K Zipf-ranked flows, then each hot phase's
 * connections), per-flow sequence numbers, and sg_gen_next(), which picks a
 * flow (the hot key with probability p, else a Zipf draw) and writes its next
 * packet. Owned by the TX lcore; no allocation after sg_gen_init().
 */
#ifndef SG_GEN_H
#define SG_GEN_H

#include <stdint.h>

#include "options.h"
#include "pkt.h"
#include "rng.h"
#include "zipf.h"

#define SG_IMIX_SLOTS 12 /* 7 x 64, 4 x 570, 1 x 1518 (the classic "simple IMIX") */

struct sg_gen {
	uint32_t nbase;  /* Zipf flows: ids [0, nbase) */
	uint32_t nflows; /* all flow ids, hot ones included */
	struct sg_flow *flows;
	uint32_t *seq;       /* next sequence number per flow = packets sent */
	uint32_t *tcp_bytes; /* payload bytes sent per TCP flow after its SYN */
	struct sg_alias zipf;
	struct sg_rng rng;
	uint8_t macs[12];
	uint16_t size; /* frame size without FCS, or 0 for IMIX */
	uint16_t imix[SG_IMIX_SLOTS];
	/* The current phase's hot key. */
	uint64_t hot_thresh; /* take the hot key when a 64-bit draw is below this */
	uint32_t hot_lo, hot_pool, hot_conns, hot_per_conn, hot_next;
	uint32_t *hot_id;  /* [max conns] flow id offset per connection slot */
	uint32_t *hot_cnt; /* [max conns] packets on the slot's connection */
};

/** Lay out the flows and build the Zipf table. @return 0, -EINVAL or -ENOMEM. */
int sg_gen_init(struct sg_gen *g, struct sg_opts *o, const uint8_t src_mac[6]);
void sg_gen_free(struct sg_gen *g);

/** Switch to a phase (its hot key, if any). */
void sg_gen_phase(struct sg_gen *g, const struct sg_phase *ph);

/** Flow id of the next packet. */
static inline uint32_t
sg_gen_pick(struct sg_gen *g)
{
	if (g->hot_thresh != 0 && sg_rng_next(&g->rng) < g->hot_thresh) {
		uint32_t u, s = g->hot_conns == 1 ? 0 : sg_rng_below(&g->rng, g->hot_conns, &u);

		if (g->hot_per_conn != 0 && g->hot_cnt[s] >= g->hot_per_conn) {
			g->hot_id[s] = g->hot_next++ % g->hot_pool;
			g->hot_cnt[s] = 0;
		}
		g->hot_cnt[s]++;
		return g->hot_lo + g->hot_id[s];
	}
	return sg_alias_sample(&g->zipf, &g->rng);
}

/**
 * Write the next packet of flow fid at buf (room for 1518 bytes), stamped
 * with tsc. @return the frame length (without FCS).
 */
static inline uint16_t
sg_gen_write(struct sg_gen *g, uint32_t fid, uint8_t *buf, uint64_t tsc)
{
	const struct sg_flow *fl = &g->flows[fid];
	uint16_t len = g->size, min = sg_pkt_min_len(fl->af, fl->proto);
	struct sg_stamp st = {.flow = fid, .seq = g->seq[fid]++, .tsc = tsc};
	uint32_t tcp_seq = 0;
	uint8_t flags = 0;

	if (len == 0) {
		uint32_t u;
		len = g->imix[sg_rng_below(&g->rng, SG_IMIX_SLOTS, &u)];
	}
	if (len < min)
		len = min;
	if (fl->proto == SG_PROTO_TCP) {
		uint32_t isn = fid * 2654435761u;
		if (st.seq == 0) {
			flags = SG_TCP_SYN;
			tcp_seq = isn;
		} else {
			flags = SG_TCP_PSH_ACK;
			tcp_seq = isn + 1 + g->tcp_bytes[fid];
		}
		g->tcp_bytes[fid] += (uint32_t)(len - min + SG_STAMP_LEN);
	}
	sg_pkt_write(buf, len, g->macs, fl, &st, tcp_seq, flags);
	return len;
}

#endif /* SG_GEN_H */
