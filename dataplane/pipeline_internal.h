/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the three pipeline files share: the per-packet scratch of a burst, the
 * inlined steps of forwarding (choice, encapsulation, counting), the out of
 * line slow paths that pipeline_slow.c holds (oversized packets, chained GUE
 * over IPv6, fragments, ICMP errors, MAC and martian checks) and the per
 * packet spray of pipeline_spray.c. Internal to dataplane/: nothing outside
 * pipeline.c, pipeline_slow.c and pipeline_spray.c includes it.
 */
#ifndef LB_PIPELINE_INTERNAL_H
#define LB_PIPELINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dataplane/encap.h"
#include "dataplane/l2.h"
#include "dataplane/parse.h"
#include "dataplane/pipeline.h"
#include "dataplane/pmtu.h"

/* Slow paths, in pipeline_slow.c. */
struct pkt_state;
struct vip_acc;

/*
 * The verdict for a frame not addressed to the receiving port's MAC, written
 * into ps (for the exception port, or a not_our_mac drop).
 */
__attribute__((noinline, cold)) void
lb_pipeline_mac_reject(const struct lb_worker *w, struct pkt_state *ps, enum lb_mac_class mc);

/* LB_DROP_MARTIAN_SRC for a martian source's packet to a VIP, else LB_PARSE_OK. */
__attribute__((noinline, cold)) int lb_pipeline_martian(const struct lb_snapshot *s,
                                                        const struct lb_pkt_info *info);

/* Write GUE-over-IPv6 headers at hdr for a chained packet, checksumming every segment. */
__attribute__((noinline, cold)) void
lb_pipeline_gue6_chain(const struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
                       uint8_t *hdr, const struct lb_backend *be, const struct pkt_state *ps);

/* A packet over the effective MTU once encapsulated: outer fragments, ICMP or a drop. */
__attribute__((noinline, cold)) void
lb_pipeline_oversize(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
                     const struct pkt_state *ps, uint16_t bid, struct lb_burst_out *out,
                     const struct lb_encap4_tmpl *t4, uint16_t overhead, uint16_t mtu);

/* Pass 2 for parse drops, non-VIP packets, fragments and ICMP errors. */
__attribute__((noinline)) void lb_pipeline_other(struct lb_worker *w, const struct lb_snapshot *s,
                                                 struct rte_mbuf *m, const struct pkt_state *ps,
                                                 struct lb_burst_out *out,
                                                 const struct lb_encap4_tmpl *t4);

/*
 * A packet of a VIP with v->spray set: if its key has an override, sent to a
 * replica drawn by lb_spray_hash(ps->hash, salt), without the flow table
 * (counted in hot_sprayed), and true; false (nothing done) for any other key.
 */
__attribute__((noinline)) bool lb_pipeline_spray(struct lb_worker *w, const struct lb_snapshot *s,
                                                 struct rte_mbuf *m, const struct pkt_state *ps,
                                                 struct lb_burst_out *out,
                                                 const struct lb_encap4_tmpl *t4, uint64_t salt);

/* Per-packet scratch carried from the first pass to the second. */
struct pkt_state {
	struct lb_pkt_info info;
	const struct lb_vip *vip; /* NULL: not for a VIP (or dropped) */
	uint64_t hash;            /* SipHash of info.key */
	int verdict;              /* LB_PARSE_OK, LB_PARSE_NOT_LB or a drop reason */
};

static inline void
drop(struct lb_worker *w, struct lb_burst_out *out, struct rte_mbuf *m, unsigned int reason)
{
	w->cnt->drops[reason]++;
	out->drop[out->n_drop++] = m;
}

/* The key Maglev hashes, per the VIP's key mode (the sketch sees the same). */
static inline uint64_t
key_hash(const struct lb_snapshot *s, const struct lb_vip *v, const struct pkt_state *ps)
{
	return lb_vip_key_hash(s, v, &ps->info.key, ps->hash);
}

/*
 * A new flow's backend: a hot key's override spreads its flows over the
 * replicas by the flow's 5-tuple hash (one replica per connection); any other
 * key takes its Maglev slot. The override table is empty unless keys are hot,
 * and then one probe settles it.
 */
static inline uint16_t
choose(struct lb_worker *w, const struct lb_snapshot *s, const struct lb_vip *v,
       const struct pkt_state *ps)
{
	uint64_t kh = key_hash(s, v, ps);

	if (s->overrides.n != 0) {
		const struct lb_override_slot *o = lb_override_find(&s->overrides, v->id, kh);

		if (o != NULL) {
			w->cnt->hot_spread++;
			return lb_override_pick(&s->overrides, o, ps->hash);
		}
	}
	return lb_maglev_pick(s, v, kh);
}

/*
 * The per-VIP packets and bytes of the burst's current run of one VIP, kept in
 * registers and added to the VIP's counters when the VIP changes and at the
 * end of the burst (a burst is mostly one VIP). The counters are exact once
 * lb_pipeline_burst() returns.
 */
struct vip_acc {
	uint32_t vid;
	uint32_t packets;
	uint64_t bytes;
};

static inline void
vip_acc_flush(struct lb_core_counters *cnt, struct vip_acc *a)
{
	cnt->vip[a->vid].packets += a->packets;
	cnt->vip[a->vid].bytes += a->bytes;
	a->packets = 0;
	a->bytes = 0;
}

/* Encapsulate m toward be in place; false if it was dropped (counted). */
static inline __attribute__((always_inline)) bool
encap_in_place(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
               const struct pkt_state *ps, const struct lb_backend *be, struct lb_burst_out *out,
               const struct lb_encap4_tmpl *t4, uint16_t hlen)
{
	const struct lb_vip *v = ps->vip;
	uint16_t inner_len = ps->info.l3_len;
	uint8_t encap = v->encap;
	uint8_t *hdr;

	/*
	 * Strip L2 and any Ethernet padding (the inner packet is exactly the IP
	 * packet) and make room for the outer headers. A single segment, the
	 * usual case, is done on the mbuf fields directly: what
	 * rte_pktmbuf_adj/trim/prepend would do, without their re-checks (the
	 * parser has bounded l2_len + inner_len by the segment) and without
	 * touching the mbuf's second cache line.
	 */
	if (likely(m->nb_segs == 1)) {
		uint32_t off = (uint32_t)m->data_off + ps->info.l2_len;

		if (unlikely(off < hlen)) {
			drop(w, out, m, LB_DROP_NO_HEADROOM);
			return false;
		}
		m->data_off = (uint16_t)(off - hlen);
		m->data_len = (uint16_t)(inner_len + hlen);
		m->pkt_len = (uint32_t)inner_len + hlen;
		hdr = rte_pktmbuf_mtod(m, uint8_t *);
	} else {
		rte_pktmbuf_adj(m, ps->info.l2_len);
		if (rte_pktmbuf_pkt_len(m) > inner_len &&
		    rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_pkt_len(m) - inner_len)) != 0) {
			drop(w, out, m, LB_DROP_NO_HEADROOM);
			return false;
		}
		hdr = (uint8_t *)rte_pktmbuf_prepend(m, hlen);
		if (hdr == NULL) {
			drop(w, out, m, LB_DROP_NO_HEADROOM);
			return false;
		}
	}
	if (likely(be->af == LB_AF_INET)) {
		lb_encap_write4_tmpl(hdr, t4, be, encap, ps->info.key.af, inner_len, ps->info.tos,
		                     ps->hash);
		if (t4->hw_ip_cksum) { /* the same for a whole run of the worker */
			m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
			m->l2_len = LB_ETH_HLEN;
			m->l3_len = LB_IP4_HLEN;
		}
	} else if (encap == LB_ENCAP_GUE && !rte_pktmbuf_is_contiguous(m))
		lb_pipeline_gue6_chain(w, s, m, hdr, be, ps);
	else
		lb_encap_write(hdr, &s->encap, w->src_mac, be, v->encap, ps->info.key.af, inner_len,
		               ps->info.tos, ps->hash);
	return true;
}

/*
 * Always inlined (measured: the call and its spills were ~20 instructions a
 * packet). t4: the burst's IPv4 encapsulation template. acc: where the VIP's
 * packets and bytes go, or NULL to count them in w->cnt directly.
 */
static inline __attribute__((always_inline)) void
forward(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
        const struct pkt_state *ps, uint16_t bid, struct lb_burst_out *out,
        const struct lb_encap4_tmpl *t4, struct vip_acc *acc, struct lb_core_counters *cnt,
        uint16_t mtu, uint16_t *n_fwd)
{
	const struct lb_backend *be = &s->backends[bid];
	const struct lb_vip *v = ps->vip;
	uint16_t inner_len = ps->info.l3_len;
	uint8_t encap = v->encap, be_af = be->af;
	/* lb_encap_overhead(), as straight-line arithmetic. */
	uint16_t overhead = (uint16_t)((be_af == LB_AF_INET ? LB_IP4_HLEN : LB_IP6_HLEN) +
	                               (encap == LB_ENCAP_GUE ? LB_UDP_HLEN : 0));
	uint16_t hlen = (uint16_t)(LB_ETH_HLEN + overhead);
	struct lb_vlan_tags tags;

	/* mtu is the burst's gate (lb_pmtu_gate()): encap.mtu unless a learned
	 * path MTU may be live, and then the backend's own entry decides. */
	if (unlikely((uint32_t)inner_len + overhead > mtu)) {
		uint16_t eff = lb_pmtu_mtu(w->pmtu, s, bid, s->encap.mtu, w->now);

		if ((uint32_t)inner_len + overhead > eff) {
			lb_pipeline_oversize(w, s, m, ps, bid, out, t4, overhead, eff);
			return;
		}
	}
	if (unlikely(s->encap.vlan != LB_VLAN_STRIP)) /* read before the headers overwrite them */
		lb_vlan_fwd_tags(&s->encap, rte_pktmbuf_mtod(m, const uint8_t *), ps->info.l2_len,
		                 &tags);
	if (unlikely(!encap_in_place(w, s, m, ps, be, out, t4, hlen)))
		return;
	if (unlikely(s->encap.vlan != LB_VLAN_STRIP)) {
		if (lb_vlan_push(m, &tags) != 0) {
			drop(w, out, m, LB_DROP_NO_HEADROOM);
			return;
		}
		m->l2_len = (uint64_t)(LB_ETH_HLEN + tags.len); /* for the checksum offload */
	}
	if (acc != NULL) {
		if (unlikely(v->id != acc->vid)) {
			vip_acc_flush(cnt, acc);
			acc->vid = v->id;
		}
		acc->packets++;
		acc->bytes += inner_len;
	} else {
		cnt->vip[v->id].packets++;
		cnt->vip[v->id].bytes += inner_len;
	}
	cnt->backend[bid].packets++;
	cnt->backend[bid].bytes += inner_len;
	out->fwd[(*n_fwd)++] = m;
}

#endif /* LB_PIPELINE_INTERNAL_H */
