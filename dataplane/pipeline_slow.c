/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pipeline's slow paths, out of line so that the fast path stays small:
 * packets too big for the tunnel (outer fragments or an ICMP too-big in place),
 * GUE over IPv6 for chained packets, fragments steered by the fragment table,
 * ICMP errors (followed to their flow, learned from for the path MTU), and the
 * MAC and martian-source verdicts of the first pass. No locks, no allocation,
 * no system calls.
 */
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dataplane/encap.h"
#include "dataplane/flow_state.h"
#include "dataplane/frag_out.h"
#include "dataplane/spray.h"
#include "dataplane/l2.h"
#include "dataplane/parse.h"
#include "dataplane/pipeline_internal.h"
#include "dataplane/pmtu.h"

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
void
lb_pipeline_mac_reject(const struct lb_worker *w, struct pkt_state *ps, enum lb_mac_class mc)
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
int
lb_pipeline_martian(const struct lb_snapshot *s, const struct lb_pkt_info *info)
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
void
lb_pipeline_gue6_chain(const struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
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
 * A packet over the MTU once encapsulated: sent as outer fragments where the
 * RFCs want that (lb_frag_out_wanted(), under either too_big policy), else
 * answered with ICMP or dropped. Rare: out of line.
 */
void
lb_pipeline_oversize(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
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
	/* A sprayed key: one draw per datagram, the same for all its fragments. */
	if (unlikely(f.vip->spray) &&
	    lb_pipeline_spray(w, s, m, &f, out, t4, lb_spray_frag_salt(fm.id)))
		return true;
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
void
lb_pipeline_other(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf *m,
                  const struct pkt_state *ps, struct lb_burst_out *out,
                  const struct lb_encap4_tmpl *t4)
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
