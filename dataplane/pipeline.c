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

#include "dataplane/encap.h"
#include "dataplane/flow_state.h"
#include "dataplane/frag_out.h"
#include "dataplane/l2.h"
#include "dataplane/parse.h"
#include "dataplane/pipeline.h"
#include "dataplane/pipeline_internal.h"
#include "dataplane/pmtu.h"

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

/*
 * Pass 1: parse and classify packets [0, n) of pkts into st, and count them
 * received. The VIP of the last packet looked up in full is memoized by its
 * question (destination, protocol, port, family), held in registers: a burst
 * is mostly one VIP. *burst_vip is the first VIP found. @return whether
 * every packet of the burst has *burst_vip (the sketch then takes the burst at
 * once).
 */
static inline bool
classify_burst(const struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf **pkts,
               struct pkt_state *st, uint16_t n, const struct lb_vip **first_vip)
{
	struct lb_core_counters *cnt = w->cnt;
	const struct lb_vip *last_vip = NULL, *burst_vip = NULL;
	uint64_t last_d0 = 0, last_d1 = 0, last_w4 = 0, rx_bytes = 0;
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
				lb_pipeline_mac_reject(w, ps, mc);
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
			ps->verdict = lb_pipeline_martian(s, info);
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
	*first_vip = burst_vip;
	return uniform;
}

/*
 * Pass 2: flow table, Maglev, encapsulate packets [0, n) of pkts, whose
 * state pass 1 wrote into st and whose buckets hash_burst() prefetched. The
 * fast path is a VIP packet that is neither a fragment nor an ICMP error; the
 * rest go out of line.
 */
static inline void
forward_burst(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf **pkts,
              const struct pkt_state *st, uint16_t n, uint16_t mtu, struct lb_burst_out *out,
              struct lb_core_counters *cnt, struct lb_flow_table *ft, uint32_t now,
              uint32_t tcp_idle, uint32_t udp_idle)
{
	struct lb_encap4_tmpl t4;
	struct vip_acc acc = {0, 0, 0};
	uint64_t hits = 0;
	uint16_t n_fwd = 0; /* out->n_fwd, kept in a register */

	/* Per-burst constants of the IPv4 encapsulation. */
	lb_encap4_tmpl_init(&t4, &s->encap, w->src_mac);
	t4.hw_ip_cksum = w->tx_ip_cksum;

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
			lb_pipeline_other(w, s, m, ps, out, &t4);
			n_fwd = out->n_fwd;
			continue;
		}
		if (unlikely(v->spray)) { /* a per_packet VIP with a hot key */
			bool sprayed;

			out->n_fwd = n_fwd;
			sprayed = lb_pipeline_spray(w, s, m, ps, out, &t4, ++w->spray_seq);
			n_fwd = out->n_fwd;
			if (sprayed)
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

/*
 * The burst in its phases: pass 1 (classify_burst), pass 1b (hash_burst, and
 * the sketch while the buckets arrive), pass 2 (forward_burst). Each phase is
 * inlined here (a static function called once), so the split costs nothing.
 */
void
lb_pipeline_burst(struct lb_worker *w, const struct lb_snapshot *s, struct rte_mbuf **pkts,
                  uint16_t n, struct lb_burst_out *out)
{
	struct pkt_state st[LB_BURST];
	struct lb_core_counters *cnt = w->cnt;
	struct lb_flow_table *ft = w->ft;
	const uint32_t now = w->now, tcp_idle = w->tcp_idle, udp_idle = w->udp_idle;
	const uint16_t mtu = lb_pmtu_gate(w->pmtu, s->encap.mtu, now);
	const struct lb_vip *burst_vip;
	bool uniform;

	w->mtu_gate = mtu;
	out->n_fwd = out->n_back = out->n_exc = out->n_drop = 0;
	out->n_frag = out->n_fragmented = 0;
	if (n > LB_BURST)
		n = LB_BURST;
	if (n == 0)
		return;

	uniform = classify_burst(w, s, pkts, st, n, &burst_vip);
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
	forward_burst(w, s, pkts, st, n, mtu, out, cnt, ft, now, tcp_idle, udp_idle);
}
