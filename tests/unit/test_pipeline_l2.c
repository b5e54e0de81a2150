/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the Ethernet layer of lb_pipeline_burst(): VLAN tags kept on
 * ICMP too-big replies and carried on forwarded frames per encap.vlan, the
 * replies' source MAC (the receiving port's), and the destination MAC check
 * (pipeline_fixture.h). Expected frames are assembled here from the input.
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

#define ETHERTYPE_QINQ 0x88A8

static const uint8_t out_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x0e, 0x0f}; /* --out-port's */

/* Insert a tag (tpid, tci) in front of f's existing tags. */
static void
push_tag(struct frame *f, uint16_t tpid, uint16_t tci)
{
	memmove(f->b + 16, f->b + 12, f->len - 12);
	wr16(f->b + 12, tpid);
	wr16(f->b + 14, tci);
	f->len += 4;
	f->l2 += 4;
}

/* The frame's tags (bytes 12 .. l2 - 2) must be tags[0..len) and then et. */
static void
assert_tags(const struct rte_mbuf *m, const uint8_t *tags, uint32_t len, uint16_t et)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	if (len > 0)
		assert_memory_equal(p + 12, tags, len);
	assert_int_equal(rd16(p + 12 + len), et);
}

/*
 * A tagged oversized packet is answered in its VLANs: the same TPIDs and TCIs
 * in the same order, for one 802.1Q tag and for QinQ, IPv4 and IPv6, with the
 * receiving port's MAC as source even when forwarding leaves by another port.
 */
static void
test_pipeline_icmp_reply_keeps_tags(void **state)
{
	struct fixture *fx = *state;
	struct flow fl4 = flow4(21), fl6 = flow6(21);
	const struct flow *fls[2] = {&fl4, &fl6};
	struct lb_burst_out out;
	struct rte_mbuf *m;
	struct frame f;

	memcpy(fx->w->src_mac, out_mac, 6); /* forwarding goes out of another port */
	for (int af = 0; af < 2; af++) {
		for (int n = 0; n <= 2; n++) {
			uint8_t tags[8];
			uint32_t hl = af == 0 ? 20 + 8 : 40 + 8;

			build_sized(&f, fls[af], af == 0 ? 1481 : 1500, true);
			/* Outermost first: 0x88A8 TCI 0x2007 (PCP 1, VLAN 7), then 0x8100 TCI 100.
			 */
			if (n >= 1)
				push_tag(&f, ETHERTYPE_VLAN, 100);
			if (n == 2)
				push_tag(&f, ETHERTYPE_QINQ, 0x2007);
			memcpy(tags, f.b + 12, 4u * n);
			m = mk_mbuf(&f);
			run(fx, &m, 1, &out);
			assert_int_equal(out.n_back, 1);
			assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), g_client_mac, 6);
			assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *) + 6, g_lb_mac, 6);
			assert_tags(m, tags, 4u * n, af == 0 ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6);
			/* The quote follows the tags and the ICMP header. */
			assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *) + 14 + 4 * n + hl,
			                    f.b + f.l2, 64);
			out_free(&out);
		}
	}
}

/* The tags of a forwarded frame per encap.vlan: none, the input's, one fixed. */
static void
test_pipeline_forward_vlan_policy(void **state)
{
	struct fixture *fx = *state;
	struct flow fl = flow4(22);
	static const uint8_t fixed[4] = {0x81, 0x00, 0x0F, 0xA0}; /* VLAN 4000 */
	uint8_t tags[8];
	struct lb_burst_out out;
	struct rte_mbuf *m;
	struct frame f;

	build(&f, &fl, 100, 0, false);
	push_tag(&f, ETHERTYPE_VLAN, 100);
	push_tag(&f, ETHERTYPE_QINQ, 0x2007);
	memcpy(tags, f.b + 12, 8);

	for (int policy = 0; policy < 3; policy++) {
		fx->cfg->encap.vlan = (uint8_t)policy;
		fx->cfg->encap.vlan_id = policy == LB_VLAN_FIXED ? 4000 : 0;
		fx_publish(fx);
		for (int tagged = 0; tagged < 2; tagged++) {
			struct frame g;

			if (tagged)
				g = f;
			else
				build(&g, &fl, 100, 0, false);
			m = mk_mbuf(&g);
			run(fx, &m, 1, &out);
			assert_int_equal(out.n_fwd, 1);
			assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), g_next_hop, 6);
			uint32_t tl = 0;

			if (policy == LB_VLAN_STRIP || (policy == LB_VLAN_KEEP && !tagged)) {
				assert_tags(m, NULL, 0, ETHERTYPE_IPV4);
			} else if (policy == LB_VLAN_KEEP) {
				assert_tags(m, tags, 8, ETHERTYPE_IPV4);
				tl = 8;
			} else {
				assert_tags(m, fixed, 4, ETHERTYPE_IPV4);
				tl = 4;
			}
			/* The inner packet is intact after the tags and the outer IPv4 header. */
			assert_int_equal(rte_pktmbuf_pkt_len(m), 14 + tl + 20 + g.l3);
			assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *) +
			                            rte_pktmbuf_pkt_len(m) - g.l3,
			                    g.b + g.l2, g.l3);
			out_free(&out);
		}
	}
}

/*
 * Destination MAC: our unicast MAC is balanced; another host's is dropped as
 * not_our_mac; broadcast and multicast go to the exception port when there is
 * one, else are dropped as not_our_mac; with the check off all are balanced.
 */
static void
test_pipeline_dst_mac_check(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static const uint8_t other[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x99};
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t mcast[6] = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01};
	static const uint8_t mcast4[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
	const uint8_t *dst[4] = {other, bcast, mcast, mcast4};
	struct flow fl = flow4(23);
	struct frame f;

	build(&f, &fl, 10, 0, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);
	for (int i = 0; i < 4; i++) {
		memcpy(f.b, dst[i], 6);
		assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	}
	assert_int_equal(c->drops[LB_DROP_NOT_OUR_MAC], 4);

	fx->w->has_exception = true;
	for (int i = 0; i < 4; i++) {
		memcpy(f.b, dst[i], 6);
		assert_int_equal(run_one(fx, &f, NULL), i == 0 ? FATE_DROP : FATE_EXC);
	}
	assert_int_equal(c->drops[LB_DROP_NOT_OUR_MAC], 5);

	fx->w->check_dst_mac = false;
	for (int i = 0; i < 4; i++) {
		memcpy(f.b, dst[i], 6);
		assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);
	}
	assert_int_equal(c->drops[LB_DROP_NOT_OUR_MAC], 5);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_pipeline_icmp_reply_keeps_tags),
	        T(test_pipeline_forward_vlan_policy),
	        T(test_pipeline_dst_mac_check),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
