/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_pipeline_burst() at the tunnel MTU: the ICMP too-big
 * reply built in place (IPv4 and IPv6, from single mbufs and from chains whose
 * tail is freed), the policy drops, packets sent as outer fragments where RFC
 * 2003 §5.1 and RFC 2473 §7.1 want that (IPv4 without DF, IPv6 of at most 1280
 * bytes; reassembled here and compared with the input), the IPv6 PTB never
 * below 1280, multi-segment jumbo frames forwarded with their headers
 * prepended and their padding trimmed, and the outer IPv4 checksum left to
 * the NIC when it offers it (pipeline_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "control/model/config.h"
#include "dataplane/encap.h"
#include "dataplane/pipeline.h"

#include "pipeline_fixture.h"

/* --- tests --------------------------------------------------------------- */

/* Check an ICMP too-big built in place from frame f (single segment). */
static void
check_too_big_reply(const struct fixture *fx, const struct rte_mbuf *m, const struct frame *f,
                    uint8_t af, uint32_t mtu)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *ip = p + LB_ETH_HLEN;
	uint32_t ihl = af == LB_AF_INET ? 20 : 40;
	uint32_t qmax = af == LB_AF_INET ? 576 - 28 : 1280 - 48;
	uint32_t qlen = f->l3 < qmax ? f->l3 : qmax;
	const uint8_t *icmp = ip + ihl;

	(void)fx;
	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + ihl + 8 + qlen);
	assert_int_equal(rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m));
	assert_memory_equal(p, g_client_mac, 6); /* back where it came from */
	assert_memory_equal(p + 6, g_lb_mac, 6);
	if (af == LB_AF_INET) {
		assert_int_equal(rd16(p + 12), ETHERTYPE_IPV4);
		assert_int_equal(rd16(ip + 2), 20 + 8 + qlen);
		assert_int_equal(ip[9], PROTO_ICMP);
		assert_int_equal(sum16(0, ip, 20), 0xFFFF);
		assert_memory_equal(ip + 12, g_src4, 4);
		assert_memory_equal(ip + 16, f->b + f->l2 + 12, 4); /* the client */
		assert_int_equal(icmp[0], 3);
		assert_int_equal(icmp[1], 4);
		assert_int_equal(rd16(icmp + 6), mtu);
		assert_int_equal(sum16(0, icmp, 8 + qlen), 0xFFFF);
	} else {
		assert_int_equal(rd16(p + 12), ETHERTYPE_IPV6);
		assert_int_equal(rd16(ip + 4), 8 + qlen);
		assert_int_equal(ip[6], PROTO_ICMPV6);
		assert_memory_equal(ip + 24, f->b + f->l2 + 8, 16);
		assert_int_equal(icmp[0], 2);
		assert_int_equal(rd32(icmp + 4), mtu);
		assert_int_equal(ip6_l4_sum(ip, icmp, 8 + qlen, PROTO_ICMPV6), 0xFFFF);
	}
	assert_memory_equal(icmp + 8, f->b + f->l2, qlen);
}

/*
 * The fragments of one packet in out->frag, judged by RFC 791 §3.2 (outer
 * IPv4: same id, DF clear, MF on all but the last, offsets in 8-byte units
 * adding up, header checksums) or RFC 8200 §4.5 (outer IPv6: fragment header,
 * M, offsets, one identification), each at most mtu bytes; their reassembly
 * (outer header of the first, payloads at their offsets) must be what plain
 * encapsulation of f would be: the inner packet after the outer header (and
 * UDP for GUE). The reassembled outer payload is copied to re if not NULL.
 */
static void
check_outer_frags(const struct fixture *fx, const struct lb_burst_out *out, const struct frame *f,
                  uint32_t mtu, uint8_t *re)
{
	static uint8_t buf[FRAME_MAX];
	uint32_t next = 0, id = 0, outer_len = 0, gue = 0;
	bool v6 = false;

	assert_true(out->n_frag >= 2);
	for (uint16_t i = 0; i < out->n_frag; i++) {
		const struct rte_mbuf *m = out->frag[i];
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *), *ip = p + 14, *pl;
		uint32_t l3 = rte_pktmbuf_pkt_len(m) - 14, off, len, this_id;
		bool more, last = i + 1 == out->n_frag;

		assert_int_equal(m->nb_segs, 1);
		assert_true(l3 <= mtu);
		assert_memory_equal(p, g_next_hop, 6);
		if (rte_pktmbuf_pkt_len(m) >= LB_ETH_HLEN + LB_IP6_HLEN)
			assert_true(out_backend(fx->snap, m) >= 0);
		if (rd16(p + 12) == ETHERTYPE_IPV4) {
			uint16_t fo = rd16(ip + 6);

			assert_int_equal(ip[0], 0x45);
			assert_int_equal(rd16(ip + 2), l3);
			assert_int_equal(fo & IP4_DF, 0);
			assert_int_equal(sum16(0, ip, 20), 0xFFFF);
			more = (fo & IP4_MF) != 0;
			off = (uint32_t)(fo & 0x1FFF) * 8;
			this_id = rd16(ip + 4);
			pl = ip + 20;
			len = l3 - 20;
			if (ip[9] == PROTO_UDP)
				gue = 8;
		} else {
			const uint8_t *fh = ip + 40;

			v6 = true;
			assert_int_equal(rd16(p + 12), ETHERTYPE_IPV6);
			assert_int_equal(rd16(ip + 4), l3 - 40);
			assert_int_equal(ip[6], PROTO_FRAG);
			assert_int_equal(fh[1], 0);
			more = (rd16(fh + 2) & 1) != 0;
			off = (uint32_t)(rd16(fh + 2) >> 3) * 8;
			this_id = rd32(fh + 4);
			pl = fh + 8;
			len = l3 - 48;
			if (fh[0] == PROTO_UDP)
				gue = 8;
		}
		assert_int_equal(more, !last);
		if (!last)
			assert_int_equal(len % 8, 0);
		assert_int_equal(off, next);
		if (i == 0)
			id = this_id;
		assert_int_equal(this_id, id);
		assert_true(off + len <= sizeof(buf));
		memcpy(buf + off, pl, len);
		next = off + len;
		outer_len = next;
	}
	/* the reassembled outer payload: [UDP for GUE] + the inner packet */
	assert_int_equal(outer_len, gue + f->l3);
	assert_memory_equal(buf + gue, f->b + f->l2, f->l3);
	if (gue)
		assert_int_equal(rd16(buf + 4), 8 + f->l3);
	(void)v6;
	if (re != NULL)
		memcpy(re, buf, outer_len);
}

/*
 * Over the MTU once encapsulated: ICMP back to the client (IPv4 with DF,
 * IPv6 over 1280 bytes), or a drop when so configured.
 * A packet that just fits is forwarded.
 */
static void
test_pipeline_too_big_icmp_or_drop(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl4 = flow4(11), fl6 = flow6(11);
	struct lb_burst_out out;
	struct rte_mbuf *m;
	struct frame f;

	build_sized(&f, &fl4, 1480, true); /* 1480 + 20 = 1500: fits */
	assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);

	build_sized(&f, &fl4, 1481, true);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	check_too_big_reply(fx, m, &f, LB_AF_INET, 1480);
	out_free(&out);

	build_sized(&f, &fl6, 1500, false); /* GUE over IPv6: 48 bytes of overhead */
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	check_too_big_reply(fx, m, &f, LB_AF_INET6, 1452);
	out_free(&out);

	fx->cfg->encap.too_big = LB_TOO_BIG_DROP;
	fx_publish(fx);
	build_sized(&f, &fl4, 1481, true);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	build_sized(&f, &fl6, 1500, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 2);
	assert_int_equal(c->flow_misses, 2); /* the too-big packets still pinned their flows */
}

/*
 * A jumbo frame arriving as a chain and too big for the tunnel: the ICMP
 * quote is in the first segment, the rest of the chain is freed (the pool
 * check in teardown sees a leak) and the reply is one segment.
 */
static void
test_pipeline_too_big_chain_icmp_frees_tail(void **state)
{
	struct fixture *fx = *state;
	struct flow fl4 = flow4(12), fl6 = flow6(12);
	struct lb_burst_out out;
	struct rte_mbuf *m[2];
	struct frame *f = malloc(2 * sizeof(*f));

	assert_non_null(f);
	build_sized(&f[0], &fl4, 4000, true);
	build_sized(&f[1], &fl6, 9000, false);
	m[0] = mk_chain(&f[0], SEG_MAX, SEG_MAX);
	m[1] = mk_chain(&f[1], 1500, 1000);
	assert_int_equal(m[0]->nb_segs, 2);
	assert_int_equal(m[1]->nb_segs, 9);
	run(fx, m, 2, &out);
	assert_int_equal(out.n_back, 2);
	check_too_big_reply(fx, m[0], &f[0], LB_AF_INET, 1480);
	check_too_big_reply(fx, m[1], &f[1], LB_AF_INET6, 1452);
	out_free(&out);

	/* IPv4 without DF in a chain: sent as outer fragments, the chain freed. */
	build_sized(&f[0], &fl4, 3000, false);
	m[0] = mk_chain(&f[0], SEG_MAX, SEG_MAX);
	run(fx, m, 1, &out);
	assert_int_equal(out.n_fragmented, 1);
	check_outer_frags(fx, &out, &f[0], 1500, NULL);
	out_free(&out);
	free(f);
}

/* A 9000-byte MTU: chains are forwarded as they are, headers prepended to the first segment. */
static void
test_pipeline_jumbo_chain_forwarded(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl4 = flow4(13), fl6 = flow6(13);
	uint8_t *lin = malloc(FRAME_MAX + 100);
	struct frame *f = malloc(sizeof(*f));
	struct lb_burst_out out;
	struct rte_mbuf *m;
	const uint8_t *ip, *udp;

	assert_non_null(lin);
	assert_non_null(f);
	fx_config(fx, cfg_load(9000, "icmp", g_base_vips));

	/* IPIP, two segments. */
	build_sized(f, &fl4, 4000, true);
	m = mk_chain(f, SEG_MAX, SEG_MAX);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	assert_int_equal(m->nb_segs, 2);
	assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + 20 + 4000);
	ip = rte_pktmbuf_read(m, 0, rte_pktmbuf_pkt_len(m), lin);
	assert_int_equal(rd16(ip + LB_ETH_HLEN + 2), 20 + 4000);
	assert_memory_equal(ip + LB_ETH_HLEN + 20, f->b + f->l2, 4000);
	out_free(&out);

	/*
	 * GUE over IPv6, odd segment sizes so the checksum crosses boundaries at
	 * odd offsets, and 4 bytes of trailing padding trimmed from the last one.
	 */
	build_sized(f, &fl6, 8000, false);
	memset(f->b + f->len, 0xEE, 4);
	f->len += 4;
	m = mk_chain(f, 1001, 777);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + 40 + 8 + 8000);
	ip = (const uint8_t *)rte_pktmbuf_read(m, 0, rte_pktmbuf_pkt_len(m), lin) + LB_ETH_HLEN;
	udp = ip + 40;
	assert_int_equal(rd16(ip + 4), 8 + 8000);
	assert_int_equal(rd16(udp + 4), 8 + 8000);
	assert_int_not_equal(rd16(udp + 6), 0);
	assert_int_equal(ip6_l4_sum(ip, udp, 8 + 8000, PROTO_UDP), 0xFFFF);
	assert_memory_equal(udp + 8, f->b + f->l2, 8000);
	out_free(&out);

	/* Padding longer than the last segment cannot be trimmed there: no_headroom. */
	build_sized(f, &fl4, 3000, true);
	memset(f->b + f->len, 0xEE, 10);
	f->len += 10;
	m = mk_chain(f, SEG_MAX, 970); /* segments 2048, 970, 6 */
	assert_int_equal(m->nb_segs, 3);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_drop, 1);
	assert_int_equal(c->drops[LB_DROP_NO_HEADROOM], 1);
	out_free(&out);
	free(f);
	free(lin);
}

/*
 * IPv4 without DF over the MTU once encapsulated (RFC 2003 §5.1): sent as
 * outer fragments under either too_big policy, counted, also when the packet
 * is itself a fragment; with DF it is still answered with ICMP.
 */
static void
test_pipeline_df0_outer_fragments(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl4 = flow4(21), fl2 = flow4(22);
	struct lb_burst_out out;
	struct rte_mbuf *m[2];
	struct frame f[2];

	build_sized(&f[0], &fl4, 1481, false);
	m[0] = mk_mbuf(&f[0]);
	run(fx, m, 1, &out);
	assert_int_equal(out.n_fwd, 0);
	assert_int_equal(out.n_fragmented, 1);
	assert_int_equal(out.n_frag, 2); /* RFC 791: 1480 bytes, then 21 */
	check_outer_frags(fx, &out, &f[0], 1500, NULL);
	out_free(&out);
	assert_int_equal(c->fragmented_out, 1);
	assert_int_equal(c->fragments_out, 2);

	/* a later fragment of a datagram (DF clear), too big, and a fitting packet beside it */
	build_frag(&f[0], &fl4, 300, true, 1488);
	build_sized(&f[1], &fl2, 1000, false);
	m[0] = mk_mbuf(&f[0]);
	m[1] = mk_mbuf(&f[1]);
	run(fx, m, 2, &out);
	assert_int_equal(out.n_fwd, 1);
	assert_int_equal(out.n_fragmented, 1);
	check_outer_frags(fx, &out, &f[0], 1500, NULL);
	out_free(&out);

	/* the drop policy is about ICMP: fragmentation still applies */
	fx->cfg->encap.too_big = LB_TOO_BIG_DROP;
	fx_publish(fx);
	build_sized(&f[0], &fl4, 4000, false);
	m[0] = mk_chain(&f[0], SEG_MAX, SEG_MAX);
	run(fx, m, 1, &out);
	assert_int_equal(out.n_frag, 3); /* 1480 + 1480 + 1040 */
	check_outer_frags(fx, &out, &f[0], 1500, NULL);
	out_free(&out);
	assert_int_equal(c->fragmented_out, 3);
	assert_int_equal(c->fragments_out, 7);
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 0);
}

/*
 * encap.mtu 1300, GUE over IPv6 (48 bytes): RFC 2473 §7.1. An IPv6 packet of
 * at most 1280 bytes is sent as outer IPv6 fragments (whose reassembly carries
 * a valid UDP checksum); a larger one gets a PTB of max(1252, 1280) = 1280.
 * IPv4 with DF gets 1300 - 20 (IPIP), as RFC 1191 wants.
 */
static void
test_pipeline_ipv6_tunnel_below_1280(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl6 = flow6(23), fl4 = flow4(23);
	static uint8_t re[FRAME_MAX];
	struct lb_burst_out out;
	struct rte_mbuf *m;
	struct frame f;
	uint8_t ph[40];

	fx_config(fx, cfg_load(1300, "icmp", g_base_vips));
	build_sized(&f, &fl6, 1252, false); /* fits exactly */
	assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);

	build_sized(&f, &fl6, 1280, false);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 0);
	assert_int_equal(out.n_fragmented, 1);
	check_outer_frags(fx, &out, &f, 1300, re);
	/* the UDP checksum over the reassembled datagram, pseudo-header from the first fragment */
	memcpy(ph, rte_pktmbuf_mtod_offset(out.frag[0], const uint8_t *, 14), 40);
	assert_int_equal(ip6_l4_sum(ph, re, 8 + 1280, PROTO_UDP), 0xFFFF);
	out_free(&out);

	build_sized(&f, &fl6, 1281, false);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	check_too_big_reply(fx, m, &f, LB_AF_INET6, 1280);
	out_free(&out);

	build_sized(&f, &fl4, 1281, true);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	check_too_big_reply(fx, m, &f, LB_AF_INET, 1280);
	out_free(&out);
	assert_int_equal(c->fragmented_out, 1);
}

/*
 * A burst whose fragments overflow the 64-frame fragment list: the packets
 * that fit are sent whole as fragments, every other one is dropped and
 * counted frag_failed, none is lost uncounted. 4000 bytes at MTU 1500 (IPIP):
 * RFC 791's NFB = (1500 - 20) / 8 = 185, so 3 fragments a packet, and
 * 64 / 3 = 21 packets fit.
 */
static void
test_pipeline_outer_fragments_overflow_counted(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	const uint32_t per = (4020 - 20 + 1479) / 1480, fit = LB_FRAG_OUT_MAX / per;
	struct rte_mbuf *m[LB_BURST];
	struct lb_burst_out out;
	struct frame *f = malloc(sizeof(*f));

	assert_non_null(f);
	for (int i = 0; i < LB_BURST; i++) {
		struct flow fl = flow4(100 + (uint32_t)i);

		build_sized(f, &fl, 4000, false);
		m[i] = mk_chain(f, SEG_MAX, SEG_MAX);
	}
	run(fx, m, LB_BURST, &out);
	assert_int_equal(per, 3);
	assert_int_equal(out.n_fragmented, fit);
	assert_int_equal(out.n_frag, fit * per);
	assert_int_equal(out.n_drop, LB_BURST - fit);
	assert_int_equal(c->drops[LB_DROP_FRAG_FAILED], LB_BURST - fit);
	assert_int_equal(c->fragmented_out, fit);
	assert_int_equal(c->fragments_out, fit * per);
	out_free(&out);
	free(f);
}

/*
 * Outer IPv4 checksum offload (w->tx_ip_cksum, set when every TX port offers
 * it): the header checksum is left 0 and the mbuf asks the NIC for it
 * (RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM, l2_len 14, l3_len 20, as
 * rte_mbuf_core.h requires). Filled in as RFC 1071 says, the header is the
 * one the software path writes. IPv6 outer packets and ICMP replies carry no
 * request.
 */
static void
test_pipeline_tx_ip_cksum_offload(void **state)
{
	const uint64_t want = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
	struct fixture *fx = *state;
	struct flow fl4 = flow4(14), fl6 = flow6(14);
	struct lb_burst_out out;
	struct rte_mbuf *m;
	struct frame f;
	uint8_t sw[20], hw[20];

	build_sized(&f, &fl4, 1000, true);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	assert_int_equal(m->ol_flags & want, 0);
	memcpy(sw, rte_pktmbuf_mtod_offset(m, const uint8_t *, LB_ETH_HLEN), 20);
	assert_int_equal(sum16(0, sw, 20), 0xFFFF);
	out_free(&out);

	fx->w->tx_ip_cksum = true;
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	assert_int_equal(m->ol_flags & want, want);
	assert_int_equal(m->l2_len, 14);
	assert_int_equal(m->l3_len, 20);
	memcpy(hw, rte_pktmbuf_mtod_offset(m, const uint8_t *, LB_ETH_HLEN), 20);
	assert_int_equal(rd16(hw + 10), 0);
	wr16(hw + 10, (uint16_t)~sum16(0, hw, 20)); /* what the NIC writes */
	assert_memory_equal(hw, sw, 20);
	out_free(&out);

	build_sized(&f, &fl6, 1000, false); /* GUE over IPv6: no IPv4 header to fill */
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	assert_int_equal(m->ol_flags & want, 0);
	out_free(&out);

	build_sized(&f, &fl4, 1481, true); /* too big: the reply is checksummed here */
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	assert_int_equal(m->ol_flags & want, 0);
	assert_int_equal(sum16(0, rte_pktmbuf_mtod_offset(m, const uint8_t *, LB_ETH_HLEN), 20),
	                 0xFFFF);
	out_free(&out);
	fx->w->tx_ip_cksum = false;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_pipeline_too_big_icmp_or_drop),
	        T(test_pipeline_too_big_chain_icmp_frees_tail),
	        T(test_pipeline_jumbo_chain_forwarded),
	        T(test_pipeline_df0_outer_fragments),
	        T(test_pipeline_ipv6_tunnel_below_1280),
	        T(test_pipeline_outer_fragments_overflow_counted),
	        T(test_pipeline_tx_ip_cksum_offload),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
