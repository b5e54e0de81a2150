/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tunnel path MTU discovery through lb_pipeline_burst(): an ICMP "fragmentation
 * needed" (RFC 1191) quoting our IPIP packet to a backend lowers the MTU toward
 * that backend only; expected replies and fragment sizes are computed here from
 * RFC 1191 and the IPIP overhead (RFC 2003: one 20-byte IPv4 header).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "dataplane/pipeline.h"
#include "dataplane/pmtu.h"
#include "control/io/stats.h"

#include "pipeline_fixture.h"

#define LEARNED 1400u    /* the Next-Hop MTU the router reports */
#define IPIP_OVERHEAD 20 /* RFC 2003 §3: the outer IPv4 header */

/*
 * An ICMP type 3 code 4 from a router to encap.source_v4 quoting the first 28
 * bytes of an IPIP packet from source (a.b.c.d) to the backend dst, protocol proto.
 */
static void
build_frag_needed(struct frame *f, const uint8_t src[4], const union lb_ip *dst, uint8_t proto,
                  uint16_t mtu)
{
	static const uint8_t router[4] = {198, 51, 100, 7};
	uint8_t *ip, *icmp, *q;

	memset(f, 0, sizeof(*f));
	put_eth(f, ETHERTYPE_IPV4, false);
	ip = f->b + f->l2;
	ip[0] = 0x45;
	wr16(ip + 2, 20 + 8 + 28);
	ip[8] = 64;
	ip[9] = PROTO_ICMP;
	memcpy(ip + 12, router, 4);
	memcpy(ip + 16, g_src4, 4);
	icmp = ip + 20;
	icmp[0] = 3;
	icmp[1] = 4;
	wr16(icmp + 6, mtu);
	q = icmp + 8;
	q[0] = 0x45;
	wr16(q + 2, 1500);
	wr16(q + 6, IP4_DF);
	q[8] = 64;
	q[9] = proto;
	memcpy(q + 12, src, 4);
	memcpy(q + 16, dst->b, 4);
	q[20] = 0x45; /* the inner packet's first 8 bytes */
	wr16(q + 22, 1480);
	f->l3 = 20 + 8 + 28;
	f->len = f->l2 + f->l3;
}

/*
 * An ICMPv6 Packet Too Big from a router to encap.source_v6 quoting our GUE
 * over IPv6 packet to the backend dst (UDP to encap.gue_port).
 */
static void
build_ptb(struct frame *f, const struct lb_snapshot *s, const union lb_ip *dst, uint32_t mtu)
{
	union lb_ip router = ip6_addr("2001:db8:ff::7");
	uint8_t *ip, *icmp, *q;

	memset(f, 0, sizeof(*f));
	put_eth(f, ETHERTYPE_IPV6, false);
	ip = f->b + f->l2;
	ip[0] = 0x60;
	wr16(ip + 4, 8 + 48);
	ip[6] = PROTO_ICMPV6;
	ip[7] = 64;
	memcpy(ip + 8, router.b, 16);
	memcpy(ip + 24, s->encap.src6.b, 16);
	icmp = ip + 40;
	icmp[0] = 2;
	wr16(icmp + 4, (uint16_t)(mtu >> 16));
	wr16(icmp + 6, (uint16_t)mtu);
	q = icmp + 8;
	q[0] = 0x60;
	wr16(q + 4, 1460);
	q[6] = PROTO_UDP;
	q[7] = 64;
	memcpy(q + 8, s->encap.src6.b, 16);
	memcpy(q + 24, dst->b, 16);
	wr16(q + 40, 40000);
	memcpy(q + 42, &s->encap.gue_port, 2);
	f->l3 = 40 + 8 + 48;
	f->len = f->l2 + f->l3;
}

/*
 * IPv6 VIP over GUE/IPv6 (overhead 40 + 8): after a PTB of 1300 toward the
 * backend, a 1300-byte packet gets a PTB of max(1300 - 48, 1280) = 1280
 * (RFC 2473 §7.1(a)); one of 1280 bytes goes out as outer fragments of at
 * most 1300 bytes (§7.1(b)).
 */
static void
test_pmtu_ptb_ipv6_floor(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	const uint32_t learned = 1300, overhead = 40 + 8;
	const uint32_t adv = learned - overhead > 1280 ? learned - overhead : 1280;
	struct flow fl = flow6(7);
	struct lb_burst_out out;
	struct rte_mbuf *m;
	struct frame *f = malloc(sizeof(*f));
	int bid;

	assert_non_null(f);
	fx->w->pmtu = lb_pmtu_create(IDLE);
	build_sized(f, &fl, 200, false);
	assert_int_equal(run_one(fx, f, &bid), FATE_FWD);
	build_ptb(f, fx->snap, &fx->snap->backends[bid].addr, learned);
	assert_int_equal(run_one(fx, f, NULL), FATE_DROP);
	assert_int_equal(c->pmtu_learned, 1);

	build_sized(f, &fl, learned, false);
	m = mk_mbuf(f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	{
		const uint8_t *icmp = rte_pktmbuf_mtod(m, const uint8_t *) + 14 + 40;

		assert_int_equal(icmp[0], 2);
		assert_int_equal(rd32(icmp + 4), adv);
	}
	out_free(&out);

	build_sized(f, &fl, 1280, false);
	m = mk_mbuf(f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fragmented, 1);
	for (uint16_t i = 0; i < out.n_frag; i++)
		assert_true(rte_pktmbuf_pkt_len(out.frag[i]) - 14 <= learned);
	out_free(&out);
	free(f);
	lb_pmtu_free(fx->w->pmtu);
	fx->w->pmtu = NULL;
}

/* Two flows of VIP 0 on different backends, and their backend ids. */
static void
two_backends(struct fixture *fx, struct flow *a, int *ba, struct flow *b, int *bb)
{
	struct frame f;

	*a = flow4(100);
	build_sized(&f, a, 100, true);
	assert_int_equal(run_one(fx, &f, ba), FATE_FWD);
	for (uint32_t i = 101; i < 200; i++) {
		*b = flow4(i);
		build_sized(&f, b, 100, true);
		assert_int_equal(run_one(fx, &f, bb), FATE_FWD);
		if (*bb != *ba)
			return;
	}
	fail_msg("no second backend");
}

static void
test_pmtu_frag_needed_lowers_one_backend(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	const uint8_t other_src[4] = {10, 0, 0, 99};
	struct flow fa, fb;
	struct lb_burst_out out;
	struct rte_mbuf *m;
	struct frame *f = malloc(sizeof(*f));
	int ba, bb;

	assert_non_null(f);
	fx->w->pmtu = lb_pmtu_create(IDLE);
	assert_non_null(fx->w->pmtu);
	two_backends(fx, &fa, &ba, &fb, &bb);
	const union lb_ip *addr = &fx->snap->backends[ba].addr;

	/* Quoting someone else's packet, or reporting less than 576: not learned. */
	build_frag_needed(f, other_src, addr, PROTO_IPIP, LEARNED);
	assert_int_equal(run_one(fx, f, NULL), FATE_DROP); /* no_vip, as before */
	build_frag_needed(f, g_src4, addr, PROTO_IPIP, 575);
	assert_int_equal(run_one(fx, f, NULL), FATE_DROP);
	assert_int_equal(c->pmtu_learned, 0);
	assert_int_equal(c->pmtu_ignored, 1);
	build_sized(f, &fa, LEARNED, true); /* 1400 + 20 <= 1500 still */
	assert_int_equal(run_one(fx, f, NULL), FATE_FWD);

	/* Quoting our IPIP packet to backend A with MTU 1400. */
	build_frag_needed(f, g_src4, addr, PROTO_IPIP, LEARNED);
	assert_int_equal(run_one(fx, f, NULL), FATE_DROP);
	assert_int_equal(c->pmtu_learned, 1);
	/* A higher value than the one learned is ignored (RFC 1191 §6.3). */
	build_frag_needed(f, g_src4, addr, PROTO_IPIP, LEARNED + 50);
	assert_int_equal(run_one(fx, f, NULL), FATE_DROP);
	assert_int_equal(c->pmtu_ignored, 2);

	/* DF=1, 1400 bytes toward A: frag-needed advertising 1400 - 20. */
	build_sized(f, &fa, LEARNED, true);
	m = mk_mbuf(f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	{
		const uint8_t *icmp = rte_pktmbuf_mtod(m, const uint8_t *) + 14 + 20;

		assert_int_equal(icmp[0], 3);
		assert_int_equal(icmp[1], 4);
		assert_int_equal(rd16(icmp + 6), LEARNED - IPIP_OVERHEAD);
	}
	out_free(&out);
	/* The largest that fits the learned MTU is forwarded. */
	build_sized(f, &fa, LEARNED - IPIP_OVERHEAD, true);
	assert_int_equal(run_one(fx, f, NULL), FATE_FWD);

	/* DF=0: outer fragments of at most 1400 bytes, the inner packet whole in them. */
	build_sized(f, &fa, LEARNED, false);
	m = mk_mbuf(f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fragmented, 1);
	assert_true(out.n_frag >= 2);
	{
		uint32_t payload = 0;

		for (uint16_t i = 0; i < out.n_frag; i++) {
			uint32_t l3 = rte_pktmbuf_pkt_len(out.frag[i]) - 14;

			assert_true(l3 <= LEARNED);
			assert_int_equal(out_backend(fx->snap, out.frag[i]), ba);
			payload += l3 - 20;
		}
		assert_int_equal(payload, LEARNED);
	}
	out_free(&out);

	/* Backend B keeps encap.mtu 1500. */
	build_sized(f, &fb, 1480, true);
	assert_int_equal(run_one(fx, f, NULL), FATE_FWD);

	/* The stats show path_mtu 1400 on backend A and on no other. */
	{
		const struct lb_core_counters *cores[1] = {fx->w->cnt};
		const unsigned int lcores[1] = {1};
		json_t *root = lb_stats_json(fx->cfg, cores, lcores, 1), *b;
		char want[32];
		size_t i, n = 0;

		assert_non_null(root);
		lb_stats_add_path_mtu(root, fx->cfg, fx->snap, fx->w->pmtu, fx->w->now);
		snprintf(want, sizeof(want), "%u.%u.%u.%u", addr->b[0], addr->b[1], addr->b[2],
		         addr->b[3]);
		for (size_t v = 0; v < json_array_size(json_object_get(root, "vips")); v++) {
			json_t *bes = json_object_get(
			        json_array_get(json_object_get(root, "vips"), v), "backends");

			json_array_foreach (bes, i, b) {
				if (json_object_get(b, "path_mtu") == NULL)
					continue;
				n++;
				assert_string_equal(
				        json_string_value(json_object_get(b, "address")), want);
				assert_int_equal(json_integer_value(json_object_get(b, "path_mtu")),
				                 LEARNED);
			}
		}
		assert_int_equal(n, 1);
		json_decref(root);
	}
	free(f);
	lb_pmtu_free(fx->w->pmtu);
	fx->w->pmtu = NULL;
}

/* A learned MTU ages out: after its lifetime encap.mtu applies again. */
static void
test_pmtu_ages_out(void **state)
{
	struct fixture *fx = *state;
	struct flow fa, fb;
	struct frame *f = malloc(sizeof(*f));
	int ba, bb;

	assert_non_null(f);
	fx->w->pmtu = lb_pmtu_create(100);
	two_backends(fx, &fa, &ba, &fb, &bb);
	build_frag_needed(f, g_src4, &fx->snap->backends[ba].addr, PROTO_IPIP, LEARNED);
	assert_int_equal(run_one(fx, f, NULL), FATE_DROP);
	build_sized(f, &fa, LEARNED, true);
	assert_int_equal(run_one(fx, f, NULL), FATE_BACK);
	fx->w->now += 100;
	assert_int_equal(run_one(fx, f, NULL), FATE_FWD);
	fx->w->now = NOW;
	free(f);
	lb_pmtu_free(fx->w->pmtu);
	fx->w->pmtu = NULL;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_pmtu_frag_needed_lowers_one_backend),
	        T(test_pmtu_ages_out),
	        T(test_pmtu_ptb_ipv6_floor),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
