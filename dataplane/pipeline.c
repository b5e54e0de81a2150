/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Burst processing in two passes, as l3fwd does: the first parses every packet,
 * finds its VIP, hashes its 5-tuple and prefetches its flow-table bucket; the
 * second, by which time the buckets are in cache, decides and encapsulates.
 * No locks, no allocation, no system calls.
 *
 * Frames larger than one mbuf arrive as chains. Every header is in the first
 * segment (lb_parse_frame() insists on it); the outer headers are prepended to
 * it and Ethernet padding is trimmed from the last one, so a chain is forwarded
 * as it is, with the GUE-over-IPv6 UDP checksum computed over all segments.
 */
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "encap.h"
#include "flow_state.h"
#include "frag_out.h"
#include "l2.h"
#include "parse.h"
#include "pipeline.h"
#include "pmtu.h"

/* Per-packet scratch carried from the first pass to the second. */
struct pkt_state {
	struct lb_pkt_info info;
	const struct lb_vip *vip; /* NULL: not for a VIP (or dropped) */
	uint64_t hash;            /* SipHash of info.key */
	int verdict;              /* LB_PARSE_OK, LB_PARSE_NOT_LB or a drop reason */
};

uint32_t
lb_pipeline_ms_to_ticks(uint32_t ms, uint64_t ticks_per_s)
{
	uint64_t t = (uint64_t)ms * ticks_per_s / 1000;

	if (t == 0)
		t = 1;
	if (t > INT32_MAX)
		t = INT32_MAX;
	return (uint32_t)t;
}

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
 * The key the sketch counts a sampled packet of v under (what Maglev hashes):
 * the 5-tuple and its hash already made, or for the source-address modes the
 * reduced key and a second SipHash of it, made only for sampled packets.
 */
static inline uint64_t
sketch_key(const struct lb_snapshot *s, const struct lb_vip *v, const struct pkt_state *ps,
           struct lb_flow_key *k, const struct lb_flow_key **kp)
{
	if (v->key_mode == LB_KEY_5TUPLE) {
		*kp = &ps->info.key;
		return ps->hash;
	}
	memset(k, 0, sizeof(*k));
	k->src = ps->info.key.src;
	k->af = ps->info.key.af;
	if (v->key_mode == LB_KEY_SRC_IP_DPORT)
		k->dport = ps->info.key.dport;
	*kp = k;
	return lb_hash_flow(&s->hkey, k);
}

/*
 * Feed the burst's VIP packets to the hot-key sketch, each under the key its
 * VIP's key mode makes. Changes nothing in forwarding. Packet by packet, for
 * bursts that mix VIPs or carry non-VIP packets.
 */
static __attribute__((noinline)) void
sketch_burst(struct lb_sketch *sk, const struct lb_snapshot *s, const struct pkt_state *st,
             uint16_t n)
{
	uint32_t fed = 0;

	for (uint16_t i = 0; i < n; i++) {
		const struct pkt_state *ps = &st[i];
		const struct lb_vip *v = ps->vip;
		const struct lb_flow_key *kp;
		struct lb_flow_key k;
		uint32_t wt;

		if (v == NULL || v->hot_mode == LB_HOT_OFF)
			continue;
		fed++;
		wt = sk->weight_bytes ? ps->info.l3_len : 1;
		if (!lb_sketch_next_sampled(sk)) {
			lb_sketch_add(sk, v->id, 0, NULL, wt); /* counted in the VIP's total only */
		} else {
			uint64_t kh = sketch_key(s, v, ps, &k, &kp);

			lb_sketch_add(sk, v->id, kh, kp, wt);
		}
	}
	lb_sketch_count_packets(sk, fed);
}

/*
 * The same for a burst whose n packets all belong to VIP v (the usual case),
 * with the same result as n calls of lb_sketch_add(), counter for counter: the
 * VIP's total is added once, and only the sampled packets are visited (the
 * countdown says which: the next sampled one is packet countdown - 1).
 */
static inline void
sketch_burst_one(struct lb_sketch *sk, const struct lb_snapshot *s, const struct lb_vip *v,
                 const struct pkt_state *st, uint16_t n)
{
	struct lb_sketch_buf *b = sk->cur;
	uint64_t base = b->vip_total[v->id];
	uint32_t c = sk->countdown;

	if (v->hot_mode == LB_HOT_OFF)
		return;
	if (sk->weight_bytes) {
		sketch_burst(sk, s, st, n); /* each packet's own weight */
		return;
	}
	lb_sketch_count_packets(sk, n);
	b->vip_total[v->id] = base + n;
	while (c <= n) {
		const struct pkt_state *ps = &st[c - 1];
		const struct lb_flow_key *kp;
		struct lb_flow_key k;
		uint64_t kh = sketch_key(s, v, ps, &k, &kp);

		/* Packet c - 1: the VIP's running total includes it. */
		lb_sketch_cm_add(sk, b, v->id, kh, kp, 1, base + c);
		c += lb_sketch_gap(sk);
	}
	sk->countdown = c - n;
}

/*
 * Answer a packet too big for the tunnel with ICMP, in place: 0, or the drop
 * reason when we cannot or may not (lb_icmp_may_answer(), the rate limit).
 * Rare: kept out of line so that forward() stays small enough to inline.
 */
static __attribute__((noinline, cold)) unsigned int
icmp_too_big(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
             const struct pkt_state *ps, uint16_t overhead, uint16_t mtu)
{
	const struct lb_pkt_info *info = &ps->info;
	uint8_t af = info->key.af, eth_dst[6];
	uint16_t hlen = lb_icmp_too_big_hlen(af), qlen;
	struct lb_vlan_tags tags;
	uint32_t adv;
	uint8_t *hdr;

	if (s->encap.too_big != LB_TOO_BIG_ICMP)
		return LB_DROP_TOO_BIG;
	if (af == LB_AF_INET && !(info->flags & LB_PKT_DF))
		return LB_DROP_TOO_BIG; /* the network may fragment it; we do not */
	if ((af == LB_AF_INET && !s->encap.has_src4) || (af == LB_AF_INET6 && !s->encap.has_src6))
		return LB_DROP_TOO_BIG;
	if (!lb_icmp_may_answer(rte_pktmbuf_mtod(m, const uint8_t *), info))
		return LB_DROP_TOO_BIG;
	qlen = info->l3_len;
	if (qlen > lb_icmp_too_big_max_quote(af))
		qlen = lb_icmp_too_big_max_quote(af);
	/* The quote must be in the first segment; the rest of a chain is not sent. */
	if ((uint32_t)info->l2_len + qlen > rte_pktmbuf_data_len(m))
		return LB_DROP_TOO_BIG;
	if (!lb_icmp_limit_take(&w->icmp, w->now))
		return LB_DROP_ICMP_LIMITED;
	if (m->next != NULL) {
		struct rte_mbuf *tail = m->next;

		/* Make the tail a valid chain head (mbuf debug checks it), then free it. */
		tail->nb_segs = (uint16_t)(m->nb_segs - 1);
		tail->pkt_len = m->pkt_len - m->data_len;
		rte_pktmbuf_free(tail);
		m->next = NULL;
		m->nb_segs = 1;
		m->pkt_len = m->data_len;
	}
	memcpy(eth_dst, rte_pktmbuf_mtod_offset(m, uint8_t *, 6), 6);
	lb_vlan_tags_of(rte_pktmbuf_mtod(m, const uint8_t *), info->l2_len, &tags);
	rte_pktmbuf_adj(m, info->l2_len);
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_pkt_len(m) - qlen));
	hdr = (uint8_t *)rte_pktmbuf_prepend(m, hlen);
	if (hdr == NULL)
		return LB_DROP_TOO_BIG;
	/* RFC 2473 §7.1(a): an IPv6 PTB never says less than 1280; 1280 will
	 * be sent as outer fragments (lb_frag_out_wanted()). */
	adv = (uint32_t)mtu - overhead;
	if (af == LB_AF_INET6 && adv < LB_FRAG_OUT_IPV6_MIN)
		adv = LB_FRAG_OUT_IPV6_MIN;
	lb_icmp_too_big_write(hdr, &s->encap, eth_dst, w->rx_mac, af, qlen, adv);
	/* Back into the VLAN(s) the packet came from. */
	return lb_vlan_push(m, &tags) == 0 ? 0 : LB_DROP_NO_HEADROOM;
}

/*
 * A frame not addressed to the receiving port's MAC is never balanced: a
 * group-addressed one (ARP, ND, other multicast) is the host's, for the
 * exception port if there is one; the rest are dropped as not_our_mac.
 */
static __attribute__((noinline, cold)) void
mac_reject(const struct lb_worker *w, struct pkt_state *ps, enum lb_mac_class mc)
{
	memset(&ps->info, 0, sizeof(ps->info));
	ps->vip = NULL;
	ps->verdict =
	        mc == LB_MAC_GROUP && w->has_exception ? LB_PARSE_NOT_LB : LB_DROP_NOT_OUR_MAC;
}

/*
 * A packet from a martian source: dropped if it is for a VIP (it must be
 * neither forwarded nor answered), left to the exception path otherwise (the
 * host's own traffic, such as DHCP from 0.0.0.0, is the kernel's to judge).
 */
static __attribute__((noinline, cold)) int
martian_verdict(const struct lb_snapshot *s, const struct lb_pkt_info *info)
{
	const struct lb_vip *v;

	if (info->flags & LB_PKT_FRAGMENT)
		v = lb_vip_lookup_frag(s, info->key.af, &info->key.dst, info->key.proto);
	else
		v = lb_vip_lookup(s, info->key.af, &info->key.dst, info->key.proto,
		                  info->key.dport);
	return v != NULL ? LB_DROP_MARTIAN_SRC : LB_PARSE_OK;
}

/*
 * Ones'-complement sum of len bytes from offset off of a chain, folded, not
 * complemented. A segment's part starting at an odd offset of the range is
 * byte-swapped (RFC 1071 byte-order independence). DPDK 22.11's
 * rte_raw_cksum_mbuf() swaps such a part before folding it, losing its
 * carries, so the chain is walked here.
 */
static uint16_t
chain_sum(const struct rte_mbuf *m, uint32_t off, uint32_t len)
{
	uint32_t sum = 0, done = 0;

	for (; m != NULL && done < len; m = m->next) {
		uint32_t n = rte_pktmbuf_data_len(m);
		uint16_t part;

		if (off >= n) {
			off -= n;
			continue;
		}
		n -= off;
		if (n > len - done)
			n = len - done;
		part = rte_raw_cksum(rte_pktmbuf_mtod_offset(m, const uint8_t *, off), n);
		sum += (done & 1) ? rte_bswap16(part) : part;
		done += n;
		off = 0;
	}
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)sum;
}

/*
 * GUE over IPv6 for a chained packet: lb_encap_write() checksums the inner
 * packet as one buffer, so write the headers for an empty payload (its checksum
 * reads only the UDP header), then set the real lengths and checksum the UDP
 * datagram across all segments. The datagram starts in the first segment and
 * runs to the end of the chain (padding was trimmed).
 */
static __attribute__((noinline, cold)) void
gue6_write_chain(const struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
                 uint8_t *hdr, const struct lb_backend *be, const struct pkt_state *ps)
{
	const uint32_t l4_off = LB_ETH_HLEN + LB_IP6_HLEN;
	uint16_t l4_len = (uint16_t)(LB_UDP_HLEN + ps->info.l3_len);
	struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(hdr + LB_ETH_HLEN);
	uint8_t *udp = hdr + l4_off;
	uint16_t be_len = rte_cpu_to_be_16(l4_len);
	uint32_t sum;
	uint16_t ck;

	lb_encap_write(hdr, &s->encap, w->src_mac, be, LB_ENCAP_GUE, ps->info.key.af, 0,
	               ps->info.tos, ps->hash);
	memcpy(&ip6->payload_len, &be_len, 2); /* no extension headers: payload = UDP */
	memcpy(udp + 4, &be_len, 2);           /* UDP length */
	memset(udp + 6, 0, 2);                 /* checksum field counts as zero */
	/* The datagram runs from l4_off to the end of the chain. */
	sum = (uint32_t)chain_sum(m, l4_off, l4_len) + rte_ipv6_phdr_cksum(ip6, 0);
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	ck = (uint16_t)~sum;
	if (ck == 0) /* RFC 768: a computed 0 is sent as all ones */
		ck = 0xFFFF;
	memcpy(udp + 6, &ck, 2);
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
		gue6_write_chain(w, s, m, hdr, be, ps);
	else
		lb_encap_write(hdr, &s->encap, w->src_mac, be, v->encap, ps->info.key.af, inner_len,
		               ps->info.tos, ps->hash);
	return true;
}

/*
 * A packet over the MTU once encapsulated: sent as outer fragments where the
 * RFCs want that (lb_frag_out_wanted(), under either too_big policy), else
 * answered with ICMP or dropped. Rare: out of line.
 */
static __attribute__((noinline, cold)) void
oversize(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
         const struct pkt_state *ps, uint16_t bid, struct lb_burst_out *out,
         const struct lb_encap4_tmpl *t4, uint16_t overhead, uint16_t mtu)
{
	struct lb_core_counters *cnt = w->cnt;
	uint32_t len = ps->info.l3_len;
	struct lb_vlan_tags tags;
	unsigned int why;
	int n;

	if (!lb_frag_out_wanted(ps->info.key.af, ps->info.flags & LB_PKT_DF, len) ||
	    len + overhead > UINT16_MAX) {
		why = icmp_too_big(w, s, m, ps, overhead, mtu);
		if (why == 0)
			out->back[out->n_back++] = m;
		else
			drop(w, out, m, why);
		return;
	}
	if (unlikely(s->encap.vlan != LB_VLAN_STRIP)) /* read before the headers overwrite them */
		lb_vlan_fwd_tags(&s->encap, rte_pktmbuf_mtod(m, const uint8_t *), ps->info.l2_len,
		                 &tags);
	if (!encap_in_place(w, s, m, ps, &s->backends[bid], out, t4, LB_ETH_HLEN + overhead))
		return;
	n = lb_frag_out_split(m, mtu, w->frag_id, &out->frag[out->n_frag],
	                      LB_FRAG_OUT_MAX - out->n_frag);
	if (n < 0) {
		drop(w, out, m, LB_DROP_FRAG_FAILED);
		return;
	}
	/* Every fragment carries the forwarding policy's tags. */
	for (int i = 0; s->encap.vlan != LB_VLAN_STRIP && i < n; i++) {
		if (lb_vlan_push(out->frag[out->n_frag + i], &tags) != 0) {
			rte_pktmbuf_free_bulk(&out->frag[out->n_frag], (unsigned int)n);
			drop(w, out, m, LB_DROP_FRAG_FAILED);
			return;
		}
	}
	rte_pktmbuf_free(m);
	w->frag_id++;
	out->n_frag = (uint16_t)(out->n_frag + n);
	out->n_fragmented++;
	cnt->fragmented_out++;
	cnt->fragments_out += (uint64_t)n;
	cnt->vip[ps->vip->id].packets++;
	cnt->vip[ps->vip->id].bytes += len;
	cnt->backend[bid].packets++;
	cnt->backend[bid].bytes += len;
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
			oversize(w, s, m, ps, bid, out, t4, overhead, eff);
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

/*
 * A fragment as a packet of its datagram's flow: the first fragment records
 * its ports in the per-core fragment table, a later one takes them from there,
 * and then both go through the VIP lookup, the flow table and the choice as an
 * unfragmented packet with those ports would. False (nothing done) if the
 * ports are not known: the caller falls back to the address-only choice.
 */
static __attribute__((noinline)) bool
frag_steer(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
           const struct pkt_state *ps, struct lb_burst_out *out, const struct lb_encap4_tmpl *t4)
{
	struct lb_core_counters *cnt = w->cnt;
	const struct lb_flow_key *key = &ps->info.key;
	uint32_t len = rte_pktmbuf_data_len(m) - ps->info.l2_len;
	struct pkt_state f = *ps;
	struct lb_frag_meta fm;
	struct lb_frag_key k;
	struct lb_flow_entry *e;
	uint64_t sig;
	uint16_t bid;

	if (len > ps->info.l3_len)
		len = ps->info.l3_len;
	if (lb_frag_inspect(rte_pktmbuf_mtod_offset(m, const uint8_t *, ps->info.l2_len), len,
	                    key->af, &fm) != 0)
		return false;
	memset(&k, 0, sizeof(k));
	k.src = key->src;
	k.dst = key->dst;
	k.id = fm.id;
	k.proto = key->proto;
	k.af = key->af;
	if (fm.has_ports) {
		cnt->frag_evictions +=
		        (uint64_t)lb_frag_record(w->frag, &s->hkey, &k, fm.sport, fm.dport, w->now);
		cnt->frag_tracked++;
		f.info.key.sport = fm.sport;
		f.info.key.dport = fm.dport;
	} else if (!fm.first && lb_frag_find(w->frag, &s->hkey, &k, w->now, &f.info.key.sport,
	                                     &f.info.key.dport) == 0) {
		cnt->frag_followed++;
	} else {
		cnt->frag_unmatched++;
		return false;
	}
	f.vip = lb_vip_lookup(s, key->af, &key->dst, key->proto, f.info.key.dport);
	if (f.vip == NULL && w->has_exception) {
		out->exc[out->n_exc++] = m;
		return true;
	}
	if (f.vip == NULL) {
		drop(w, out, m, LB_DROP_NO_VIP);
		return true;
	}
	f.hash = lb_hash_flow(&s->hkey, &f.info.key);
	sig = lb_flow_sig(f.hash);
	e = lb_flow_lookup(w->ft, sig, w->now);
	if (e != NULL && lb_backend_usable(s, f.vip, e->backend, e->gen)) {
		cnt->flow_hits++;
		lb_flow_touch(e, w->now, key->proto == IPPROTO_TCP ? w->tcp_idle : w->udp_idle);
		forward(w, s, m, &f, e->backend, out, t4, NULL, cnt, w->mtu_gate, &out->n_fwd);
		return true;
	}
	if (e != NULL)
		cnt->flow_rechosen++;
	else
		cnt->flow_misses++;
	bid = choose(w, s, f.vip, &f);
	if (bid == LB_BACKEND_NONE) {
		drop(w, out, m, LB_DROP_NO_BACKEND);
		return true;
	}
	if (lb_flow_insert(w->ft, sig, w->now,
	                   key->proto == IPPROTO_TCP ? w->tcp_idle : w->udp_idle, bid,
	                   s->backends[bid].gen))
		cnt->flow_evictions++;
	cnt->vip[f.vip->id].new_flows++;
	cnt->backend[bid].new_flows++;
	forward(w, s, m, &f, bid, out, t4, NULL, cnt, w->mtu_gate, &out->n_fwd);
	return true;
}

/* An MTU error about our own tunnel packet: learned from, then handled as before. */
static __attribute__((noinline, cold)) void
pmtu_note(struct lb_worker *w, const struct lb_snapshot *s, const struct rte_mbuf *m)
{
	enum lb_pmtu_verdict v = lb_pmtu_icmp(w->pmtu, s, rte_pktmbuf_mtod(m, const uint8_t *),
	                                      rte_pktmbuf_data_len(m), w->now);

	w->cnt->pmtu_learned += v == LB_PMTU_LEARNED;
	w->cnt->pmtu_ignored += v == LB_PMTU_IGNORED;
}

/*
 * Pass 2 for the packets off the fast path: parse drops, non-VIP packets,
 * fragments and ICMP errors. Out of line, counting straight into w->cnt.
 */
static __attribute__((noinline)) void
pass2_other(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
            const struct pkt_state *ps, struct lb_burst_out *out, const struct lb_encap4_tmpl *t4)
{
	struct lb_core_counters *cnt = w->cnt;
	const struct lb_vip *v = ps->vip;
	uint8_t flags = ps->info.flags;
	struct lb_flow_entry *e;
	uint64_t sig;
	uint16_t bid;

	if (ps->verdict > 0) {
		drop(w, out, m, (unsigned int)ps->verdict);
		return;
	}
	if (v == NULL) {
		if (unlikely(w->pmtu != NULL))
			pmtu_note(w, s, m);
		if (w->has_exception)
			out->exc[out->n_exc++] = m;
		else
			drop(w, out, m, LB_DROP_NO_VIP);
		return;
	}
	if (flags & LB_PKT_FRAGMENT) {
		cnt->fragments++;
		if (w->frag != NULL && frag_steer(w, s, m, ps, out, t4))
			return;
		/* No ports known: the address-only choice, the same for every
		 * fragment of a datagram without a first one seen. */
		bid = lb_maglev_pick(s, v, key_hash(s, v, ps));
		if (bid == LB_BACKEND_NONE)
			drop(w, out, m, LB_DROP_NO_BACKEND);
		else
			forward(w, s, m, ps, bid, out, t4, NULL, cnt, w->mtu_gate, &out->n_fwd);
		return;
	}
	/* An ICMP error follows its flow but neither refreshes nor creates one. */
	cnt->icmp_errors++;
	sig = lb_flow_sig(ps->hash);
	e = lb_flow_lookup(w->ft, sig, w->now);
	if (e != NULL) {
		if (lb_backend_usable(s, v, e->backend, e->gen)) {
			cnt->flow_hits++;
			forward(w, s, m, ps, e->backend, out, t4, NULL, cnt, w->mtu_gate,
			        &out->n_fwd);
			return;
		}
		cnt->flow_rechosen++;
	} else {
		cnt->flow_misses++;
	}
	bid = choose(w, s, v, ps);
	if (bid == LB_BACKEND_NONE)
		drop(w, out, m, LB_DROP_NO_BACKEND);
	else
		forward(w, s, m, ps, bid, out, t4, NULL, cnt, w->mtu_gate, &out->n_fwd);
}

/*
 * Whether lb_hash_flow_x4() may run: the CPU has AVX2 (DPDK 22.11 builds for a
 * baseline without it). 256 bits is within DPDK's default SIMD width; its
 * rte_vect_get_max_simd_bitwidth() knob is still experimental API there.
 */
static inline bool
hash_x4_ok(void)
{
#ifdef LB_HASH_HAVE_X4
	return __builtin_cpu_supports("avx2");
#else
	return false;
#endif
}

/* Whether lb_hash_flow_x8() may run: the CPU has AVX-512F. */
static inline bool
hash_x8_ok(void)
{
#ifdef LB_HASH_HAVE_X8
	return __builtin_cpu_supports("avx512f");
#else
	return false;
#endif
}

/*
 * st[i].hash = lb_hash_flow(key of packet i) for the whole burst, and each
 * packet's flow-table bucket prefetched as soon as its hash is known. Every
 * bucket is prefetched, also those of packets that will not look one up (no
 * VIP, fragments): the address is valid, and skipping them cost a test per
 * packet for a case that is rare.
 */
static inline void
hash_burst(const struct lb_snapshot *s, const struct lb_flow_table *ft, struct pkt_state *st,
           uint16_t n)
{
	uint16_t i = 0;

#ifdef LB_HASH_HAVE_X8
	if (hash_x8_ok()) {
		for (; i + 8 <= n; i += 8) {
			uint64_t h[8];

			lb_hash_flow_x8s(&s->hkey, &st[i].info.key, sizeof(st[0]), h);
			for (int j = 0; j < 8; j++) {
				st[i + j].hash = h[j];
				rte_prefetch0(lb_flow_bucket_of(ft, lb_flow_sig(h[j])));
			}
		}
	}
#endif
#ifdef LB_HASH_HAVE_X4
	if (hash_x4_ok()) {
		for (; i + 4 <= n; i += 4) {
			const struct lb_flow_key *k[4] = {&st[i].info.key, &st[i + 1].info.key,
			                                  &st[i + 2].info.key, &st[i + 3].info.key};
			uint64_t h[4];

			lb_hash_flow_x4(&s->hkey, k, h);
			for (int j = 0; j < 4; j++) {
				st[i + j].hash = h[j];
				rte_prefetch0(lb_flow_bucket_of(ft, lb_flow_sig(h[j])));
			}
		}
	}
#endif
	for (; i < n; i++) {
		st[i].hash = lb_hash_flow(&s->hkey, &st[i].info.key);
		rte_prefetch0(lb_flow_bucket_of(ft, lb_flow_sig(st[i].hash)));
	}
}

void
lb_pipeline_burst(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf **pkts,
                  uint16_t n, struct lb_burst_out *out)
{
	struct pkt_state st[LB_BURST];
	struct lb_core_counters *cnt = w->cnt;
	struct lb_flow_table *ft = w->ft;
	const uint32_t now = w->now, tcp_idle = w->tcp_idle, udp_idle = w->udp_idle;
	struct lb_encap4_tmpl t4;
	struct vip_acc acc = {0, 0, 0};
	uint64_t rx_bytes = 0, hits = 0;
	const uint16_t mtu = lb_pmtu_gate(w->pmtu, s->encap.mtu, now);
	uint16_t n_fwd = 0; /* out->n_fwd, kept in a register in pass 2 */

	w->mtu_gate = mtu;
	out->n_fwd = out->n_back = out->n_exc = out->n_drop = 0;
	out->n_frag = out->n_fragmented = 0;
	if (n > LB_BURST)
		n = LB_BURST;
	if (n == 0)
		return;

	/*
	 * Pass 1: parse, classify. The VIP of the last packet looked up in full
	 * is memoized by its question (destination, protocol, port, family),
	 * held in registers: a burst is mostly one VIP. burst_vip is that VIP if
	 * every packet of the burst has it (for the sketch).
	 */
	const struct lb_vip *last_vip = NULL, *burst_vip = NULL;
	uint64_t last_d0 = 0, last_d1 = 0, last_w4 = 0;
	bool have_last = false, uniform = true;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct pkt_state *ps = &st[i];
		const struct lb_pkt_info *info = &ps->info;
		const struct lb_vip *v;

		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		rx_bytes += rte_pktmbuf_pkt_len(m);
		if (w->check_dst_mac && likely(rte_pktmbuf_data_len(m) >= LB_ETH_HLEN)) {
			enum lb_mac_class mc =
			        lb_mac_classify(rte_pktmbuf_mtod(m, const uint8_t *), w->rx_mac);

			if (unlikely(mc != LB_MAC_OURS)) {
				mac_reject(w, ps, mc);
				uniform = false;
				continue;
			}
		}
		ps->verdict =
		        lb_parse_frame(rte_pktmbuf_mtod(m, const uint8_t *),
		                       rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m), &ps->info);
		if (unlikely(ps->verdict != LB_PARSE_OK)) {
			ps->vip = NULL;
			uniform = false;
			continue;
		}
		if (unlikely(lb_icmp_martian_src(&info->key))) {
			ps->verdict = martian_verdict(s, info);
			ps->vip = NULL; /* either dropped or not for a VIP */
			uniform = false;
			continue;
		}
		if (unlikely(info->flags & LB_PKT_FRAGMENT)) {
			v = lb_vip_lookup_frag(s, info->key.af, &info->key.dst, info->key.proto);
		} else {
			/*
			 * Word 4 of a key holds sport (bytes 0-1), dport (2-3),
			 * proto (4), af (5) in memory order: the question is it
			 * without the source port, and the destination.
			 */
			uint64_t w4;

			memcpy(&w4,
			       (const uint8_t *)&info->key + offsetof(struct lb_flow_key, sport),
			       8);
			memset(&w4, 0, 2);
			if (have_last && w4 == last_w4 && info->key.dst.q[0] == last_d0 &&
			    info->key.dst.q[1] == last_d1) {
				ps->vip = last_vip; /* checked against burst_vip when looked up */
				continue;
			}
			v = lb_vip_lookup(s, info->key.af, &info->key.dst, info->key.proto,
			                  info->key.dport);
			have_last = true;
			last_w4 = w4;
			last_d0 = info->key.dst.q[0];
			last_d1 = info->key.dst.q[1];
			last_vip = v;
		}
		ps->vip = v;
		if (burst_vip == NULL)
			burst_vip = v;
		if (v == NULL || v != burst_vip)
			uniform = false;
	}
	cnt->rx_packets += n;
	cnt->rx_bytes += rx_bytes;

	/*
	 * Pass 1b: hash the 5-tuples and prefetch their buckets. Done apart from
	 * parsing so that the keys' stores have reached L1 by the time their
	 * words are loaded, and eight or four at a time where the CPU allows.
	 * Keys of packets without a VIP are hashed too (they are well defined:
	 * the parser zeroes them first); that costs less than sorting them out.
	 */
	hash_burst(s, ft, st, n);
	/* While the buckets arrive: the sketch (its counters are L2-resident). */
	if (w->sketch != NULL) {
		if (uniform)
			sketch_burst_one(w->sketch, s, burst_vip, st, n);
		else
			sketch_burst(w->sketch, s, st, n);
	}

	/* Per-burst constants of the IPv4 encapsulation. */
	lb_encap4_tmpl_init(&t4, &s->encap, w->src_mac);
	t4.hw_ip_cksum = w->tx_ip_cksum;

	/*
	 * Pass 2: flow table, Maglev, encapsulate. The fast path is a VIP packet
	 * that is neither a fragment nor an ICMP error; the rest go out of line.
	 */
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct pkt_state *ps = &st[i];
		const struct lb_vip *v = ps->vip;
		struct lb_flow_entry *e;
		uint32_t idle;
		uint64_t sig;
		uint16_t bid;

		if (unlikely(v == NULL ||
		             (ps->info.flags & (LB_PKT_FRAGMENT | LB_PKT_ICMP_ERROR)))) {
			out->n_fwd = n_fwd;
			pass2_other(w, s, m, ps, out, &t4);
			n_fwd = out->n_fwd;
			continue;
		}
		sig = lb_flow_sig(ps->hash);
		idle = ps->info.key.proto == IPPROTO_TCP ? tcp_idle : udp_idle;
		e = lb_flow_lookup(ft, sig, now);
		if (likely(e != NULL)) {
			if (likely(lb_backend_usable(s, v, e->backend, e->gen))) {
				hits++;
				lb_flow_refresh(e, now, ps->info.tcp_flags, idle, w->syn_idle,
				                w->closing_idle);
				forward(w, s, m, ps, e->backend, out, &t4, &acc, cnt, mtu, &n_fwd);
				continue;
			}
			cnt->flow_rechosen++;
		} else {
			cnt->flow_misses++;
		}
		bid = choose(w, s, v, ps);
		if (bid == LB_BACKEND_NONE) {
			drop(w, out, m, LB_DROP_NO_BACKEND);
			continue;
		}
		if (e != NULL)
			lb_flow_repin(w, e, ps->info.tcp_flags, idle, bid, s->backends[bid].gen);
		else
			lb_flow_admit(w, sig, ps->info.tcp_flags, bid, s->backends[bid].gen);
		cnt->vip[v->id].new_flows++;
		cnt->backend[bid].new_flows++;
		forward(w, s, m, ps, bid, out, &t4, &acc, cnt, mtu, &n_fwd);
	}
	out->n_fwd = n_fwd;
	cnt->flow_hits += hits;
	vip_acc_flush(cnt, &acc);
}
