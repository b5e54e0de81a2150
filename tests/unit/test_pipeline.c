/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_pipeline_burst(), forwarding: flows pinned to the backend
 * their first packet chose, the exact output bytes of each encapsulation, ICMP
 * errors and fragments steered without flow state, and what is not for a VIP
 * or has no backend. Hand-built frames in real mbufs (pipeline_fixture.h);
 * every test ends by checking that the counters conserve packets and that
 * every mbuf went back to the pool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "dataplane/encap.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"

#include "pipeline_fixture.h"

/* --- tests --------------------------------------------------------------- */

/* Every packet of a flow goes to the backend its first packet chose. */
static void
test_pipeline_flow_sticks_to_backend(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	int first[64], again[64];
	uint64_t new_flows = 0;

	send_flows(fx, 0, 64, first);
	for (int round = 0; round < 4; round++) {
		send_flows(fx, 0, 64, again);
		assert_memory_equal(again, first, sizeof(first));
	}
	assert_int_equal(c->flow_misses, 64);
	assert_int_equal(c->flow_hits, 4 * 64);
	assert_int_equal(c->vip[0].new_flows, 64);
	assert_int_equal(c->vip[0].packets, 5 * 64);
	for (int b = 0; b < 4; b++) {
		new_flows += c->backend[b].new_flows;
		/* 64 flows over 4 equal backends: each gets some. */
		assert_true(count_eq(first, 64, b) > 0);
	}
	assert_int_equal(new_flows, 64);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 64);
}

/*
 * IPIP 4in4: Ethernet to the next hop from our MAC, an outer IPv4 header with
 * DF, TTL 64, the inner DSCP/ECN and a valid checksum, and then exactly the
 * client's IP packet (the VLAN tag and the Ethernet padding gone).
 */
static void
test_pipeline_output_ipip4_byte_exact(void **state)
{
	struct fixture *fx = *state;
	struct flow fl = flow4(7);
	struct rte_mbuf *pkts[2];
	struct lb_burst_out out;
	struct frame f[2];

	build(&f[0], &fl, 100, IP4_DF, true);
	/* A bare SYN-sized packet padded to the 60-byte Ethernet minimum. */
	fl = flow4(8);
	build(&f[1], &fl, 0, IP4_DF, false);
	memset(f[1].b + f[1].len, 0xEE, 60 - f[1].len);
	f[1].len = 60;
	for (int i = 0; i < 2; i++)
		pkts[i] = mk_mbuf(&f[i]);
	run(fx, pkts, 2, &out);
	assert_int_equal(out.n_fwd, 2);
	for (int i = 0; i < 2; i++) {
		const struct rte_mbuf *m = out.fwd[i];
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
		const uint8_t *ip = p + LB_ETH_HLEN;
		int bid = out_backend(fx->snap, m);

		assert_ptr_equal(m, pkts[i]);
		assert_true(bid >= 0 && bid < 4);
		assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + 20 + f[i].l3);
		assert_memory_equal(p, g_next_hop, 6);
		assert_memory_equal(p + 6, g_lb_mac, 6);
		assert_int_equal(rd16(p + 12), ETHERTYPE_IPV4);
		assert_int_equal(ip[0], 0x45);
		assert_int_equal(ip[1], 0x28);
		assert_int_equal(rd16(ip + 2), 20 + f[i].l3);
		assert_int_equal(rd16(ip + 6), IP4_DF);
		assert_int_equal(ip[8], 64);
		assert_int_equal(ip[9], PROTO_IPIP);
		assert_int_equal(sum16(0, ip, 20), 0xFFFF);
		assert_memory_equal(ip + 12, g_src4, 4);
		assert_memory_equal(ip + 16, fx->snap->backends[bid].addr.b, 4);
		assert_memory_equal(ip + 20, f[i].b + f[i].l2, f[i].l3);
		assert_true(fx->w->cnt->backend[bid].bytes >= f[i].l3);
	}
	assert_int_equal(fx->w->cnt->vip[0].bytes, f[0].l3 + f[1].l3);
	out_free(&out);
}

/*
 * GUE over IPv6 (6in6): outer IPv6 with the inner traffic class, UDP from the
 * ephemeral range to the GUE port with a checksum that verifies, then the
 * client's packet.
 */
static void
test_pipeline_output_gue6_byte_exact(void **state)
{
	struct fixture *fx = *state;
	struct flow fl = flow6(3);
	struct lb_burst_out out;
	struct rte_mbuf *m;
	const uint8_t *p, *ip, *udp;
	struct frame f;
	int bid;

	build(&f, &fl, 333, 0, false);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	bid = out_backend(fx->snap, m);
	assert_true(bid == 4 || bid == 5);
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	ip = p + LB_ETH_HLEN;
	udp = ip + LB_IP6_HLEN;
	assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + 40 + 8 + f.l3);
	assert_memory_equal(p, g_next_hop, 6);
	assert_memory_equal(p + 6, g_lb_mac, 6);
	assert_int_equal(rd16(p + 12), ETHERTYPE_IPV6);
	assert_int_equal(ip[0] >> 4, 6);
	assert_int_equal((rd32(ip) >> 20) & 0xFF, 0xB8);
	assert_int_equal(rd16(ip + 4), 8 + f.l3);
	assert_int_equal(ip[6], PROTO_UDP);
	assert_int_equal(ip[7], 64);
	assert_memory_equal(ip + 8, ip6_addr("fd00::1").b, 16);
	assert_memory_equal(ip + 24, fx->snap->backends[bid].addr.b, 16);
	assert_true(rd16(udp) >= 0xC000);
	assert_int_equal(rd16(udp + 2), LB_GUE_DEFAULT_PORT);
	assert_int_equal(rd16(udp + 4), 8 + f.l3);
	assert_int_equal(ip6_l4_sum(ip, udp, 8 + f.l3, PROTO_UDP), 0xFFFF);
	assert_memory_equal(udp + 8, f.b + f.l2, f.l3);
	out_free(&out);
}

/* GUE over IPv4: UDP checksum 0 (RFC 768 allows it), IPv4 outer. */
static void
test_pipeline_output_gue4_byte_exact(void **state)
{
	struct fixture *fx = *state;
	struct flow fl = flow4(9);
	struct lb_burst_out out;
	struct rte_mbuf *m;
	const uint8_t *ip, *udp;
	struct frame f;
	int bid;

	fl.proto = PROTO_UDP;
	fl.dst = ip4_addr(192, 0, 2, 20);
	fl.dport = 5353; /* port-agnostic VIP */
	build(&f, &fl, 64, 0, false);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	bid = out_backend(fx->snap, m);
	assert_true(bid == 6 || bid == 7);
	ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, LB_ETH_HLEN);
	udp = ip + 20;
	assert_int_equal(rd16(ip + 2), 20 + 8 + f.l3);
	assert_int_equal(ip[9], PROTO_UDP);
	assert_int_equal(sum16(0, ip, 20), 0xFFFF);
	assert_int_equal(rd16(udp + 2), LB_GUE_DEFAULT_PORT);
	assert_int_equal(rd16(udp + 4), 8 + f.l3);
	assert_int_equal(rd16(udp + 6), 0);
	assert_memory_equal(udp + 8, f.b + f.l2, f.l3);
	assert_int_equal(fx->w->cnt->vip[2].packets, 1);
	out_free(&out);
}

/*
 * An ICMP error about a flow goes to that flow's backend, does not refresh
 * its entry and creates none for an unknown flow; IPv4 and IPv6.
 */
static void
test_pipeline_icmp_error_follows_flow(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow flows[2] = {flow4(42), flow6(42)};
	int bid_flow, bid_err;
	struct frame f;

	for (int i = 0; i < 2; i++) {
		struct flow fl = flows[i];
		struct lb_flow_key key;
		struct lb_flow_entry *e;
		uint32_t count;

		build(&f, &fl, 10, IP4_DF, false);
		assert_int_equal(run_one(fx, &f, &bid_flow), FATE_FWD);
		count = lb_flow_table_count(fx->w->ft, fx->w->now);

		/* The entry's expiry must not move when the error is steered. */
		memset(&key, 0, sizeof(key));
		key.src = fl.src;
		key.dst = fl.dst;
		key.sport = htons(fl.sport);
		key.dport = htons(fl.dport);
		key.proto = fl.proto;
		key.af = fl.af;
		e = lb_flow_lookup(fx->w->ft, lb_flow_sig(lb_hash_flow(&fx->snap->hkey, &key)),
		                   fx->w->now);
		assert_non_null(e);
		assert_int_equal(e->expires, NOW + IDLE);
		fx->w->now = NOW + 500;

		build_icmp_error(&f, &fl);
		assert_int_equal(run_one(fx, &f, &bid_err), FATE_FWD);
		assert_int_equal(bid_err, bid_flow);
		assert_int_equal(e->expires, NOW + IDLE);
		assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), count);

		/* An error about a flow we have not seen: steered by Maglev, no entry. */
		fl.sport = (uint16_t)(fl.sport + 1);
		build_icmp_error(&f, &fl);
		assert_int_equal(run_one(fx, &f, &bid_err), FATE_FWD);
		assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), count);
		/* ... and the flow, when it comes, agrees with it. */
		build(&f, &fl, 10, IP4_DF, false);
		assert_int_equal(run_one(fx, &f, &bid_flow), FATE_FWD);
		assert_int_equal(bid_flow, bid_err);
		fx->w->now = NOW;
	}
	assert_int_equal(c->icmp_errors, 4);
}

/* All fragments of a datagram (first, middle, last) reach one backend, statelessly. */
static void
test_pipeline_fragments_of_datagram_one_backend(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	bool used[8] = {false};
	struct frame f;

	for (uint32_t d = 0; d < 64; d++) {
		struct flow fl = d & 1 ? flow6(d) : flow4(d);
		int bid[3];

		build_frag(&f, &fl, 0, true, 504);
		assert_int_equal(run_one(fx, &f, &bid[0]), FATE_FWD);
		build_frag(&f, &fl, 63, true, 504);
		assert_int_equal(run_one(fx, &f, &bid[1]), FATE_FWD);
		build_frag(&f, &fl, 126, false, 100);
		assert_int_equal(run_one(fx, &f, &bid[2]), FATE_FWD);
		assert_int_equal(bid[1], bid[0]);
		assert_int_equal(bid[2], bid[0]);
		assert_true(bid[0] >= 0 && bid[0] < 8);
		used[bid[0]] = true;
	}
	assert_int_equal(c->fragments, 3 * 64);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 0);
	/* Different datagrams still spread over the backends. */
	assert_true(used[0] + used[1] + used[2] + used[3] >= 2);
	assert_true(used[4] && used[5]);
}

/* Not for a VIP (no VIP address, or not TCP/UDP at all): dropped, or to the exception list. */
static void
test_pipeline_no_vip_dropped_or_exception(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl = flow4(1);
	struct frame f[3];
	const struct frame *fp[3] = {&f[0], &f[1], &f[2]};
	int fate[3], bid[3];

	fl.dst = ip4_addr(192, 0, 2, 99);
	build(&f[0], &fl, 10, IP4_DF, false);
	fl = flow4(1);
	fl.dport = 8080; /* VIP address, other port: no port-agnostic VIP there */
	build(&f[1], &fl, 10, IP4_DF, false);
	put_eth(&f[2], ETHERTYPE_ARP, false);
	memset(f[2].b + f[2].len, 0, 46);
	f[2].len += 46;

	run_frames(fx, fp, 3, fate, bid);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fate[i], FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_NO_VIP], 3);

	fx->w->has_exception = true;
	run_frames(fx, fp, 3, fate, bid);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fate[i], FATE_EXC);
	assert_int_equal(c->drops[LB_DROP_NO_VIP], 3);
}

/* A VIP with no usable backend drops, counted no_backend, and creates no flow. */
static void
test_pipeline_vip_without_backend_dropped(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl = flow4(5);
	struct frame f;

	fl.dst = ip4_addr(192, 0, 2, 30);
	build(&f, &fl, 10, IP4_DF, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_NO_BACKEND], 1);

	/* Every backend of VIP 0 down: its established flow has nowhere to go. */
	fl = flow4(5);
	build(&f, &fl, 10, IP4_DF, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);
	for (uint32_t j = 0; j < 4; j++)
		fx->cfg->vips[0].backends[j].state = LB_BACKEND_DOWN;
	fx_publish(fx);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_NO_BACKEND], 2);
	assert_int_equal(c->flow_rechosen, 1);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_pipeline_flow_sticks_to_backend),
	        T(test_pipeline_output_ipip4_byte_exact),
	        T(test_pipeline_output_gue6_byte_exact),
	        T(test_pipeline_output_gue4_byte_exact),
	        T(test_pipeline_icmp_error_follows_flow),
	        T(test_pipeline_fragments_of_datagram_one_backend),
	        T(test_pipeline_no_vip_dropped_or_exception),
	        T(test_pipeline_vip_without_backend_dropped),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
