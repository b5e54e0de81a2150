/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_parse() on fragments: a table of IPv4 and IPv6 fragments
 * (first, middle, last, atomic, a second fragment header, not TCP/UDP), each
 * row its own cmocka test, and every fragment of one datagram, the first
 * included, landing on one key (parse_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/parse.h"

#include "parse_fixture.h"

/* Frames for the table. Unless a row says otherwise, client to VIP. */

static void
b_ip6_frag_first(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_FRAGMENT, client6, vip6, 0);
	ip6_frag(p, IP_TCP, 0, 1);
	tcp(p, CPORT, VPORT, 0);
	fill(p, 64, 0x5A);
	ip6_done(p, ip);
}

static void
b_ip6_frag_nonfirst(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_FRAGMENT, client6, vip6, 0);
	ip6_frag(p, IP_TCP, 11, 1);
	fill(p, 3, 0x5A); /* not even a port's worth of data */
	ip6_done(p, ip);
}

static void
b_ip6_frag_last(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_FRAGMENT, client6, vip6, 0);
	ip6_frag(p, IP_TCP, 22, 0);
	fill(p, 40, 0x5A);
	ip6_done(p, ip);
}

static void
b_ip6_frag_atomic(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_FRAGMENT, client6, vip6, 0);
	ip6_frag(p, IP_UDP, 0, 0);
	udp(p, CPORT, VPORT, 8);
	ip6_done(p, ip);
}

static void
b_ip6_frag_twice(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_FRAGMENT, client6, vip6, 0);
	ip6_frag(p, IP_FRAGMENT, 0, 0);
	ip6_frag(p, IP_UDP, 0, 1);
	udp(p, CPORT, VPORT, 8);
	ip6_done(p, ip);
}

static void
b_ip6_frag_gre(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_FRAGMENT, client6, vip6, 0);
	ip6_frag(p, IP_GRE, 0, 1);
	fill(p, 16, 0);
	ip6_done(p, ip);
}

static void
frag4(struct pkt *p, uint16_t frag)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_TCP, client4, vip4, frag, 0, 0);
	if ((frag & 0x1FFF) == 0)
		tcp(p, CPORT, VPORT, 0);
	fill(p, (frag & IP4_MF) ? 96 : 8, 0x5A);
	ip4_done(p, ip);
}

static void
b_ip4_frag_first(struct pkt *p)
{
	frag4(p, IP4_MF);
}

static void
b_ip4_frag_middle(struct pkt *p)
{
	frag4(p, IP4_MF | 15);
}

static void
b_ip4_frag_last(struct pkt *p)
{
	frag4(p, 30);
}

static void
b_ip4_frag_gre(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_GRE, client4, vip4, IP4_MF, 0, 0);
	fill(p, 16, 0);
	ip4_done(p, ip);
}

static const struct parse_case cases[] = {
        {"test_parse_ip6_frag_first", b_ip6_frag_first, OK, 6, IP_TCP, 0, 0, 14, 132, FRAG, 0},
        {"test_parse_ip6_frag_first_dstopts", b_ip6_frag_first_dstopts, OK, 6, IP_UDP, 0, 0, 14,
         104, FRAG, 0},
        {"test_parse_ip6_frag_nonfirst", b_ip6_frag_nonfirst, OK, 6, IP_TCP, 0, 0, 14, 51,
         FRAG | LATER, 0},
        {"test_parse_ip6_frag_last", b_ip6_frag_last, OK, 6, IP_TCP, 0, 0, 14, 88, FRAG | LATER, 0},
        {"test_parse_ip6_frag_atomic", b_ip6_frag_atomic, OK, 6, IP_UDP, CPORT, VPORT, 14, 64, 0,
         0},
        DROP("test_parse_ip6_frag_twice", b_ip6_frag_twice, LB_DROP_IP6_MALFORMED),
        DROP("test_parse_ip6_frag_gre_not_lb", b_ip6_frag_gre, NOT_LB),
        {"test_parse_ip4_frag_first", b_ip4_frag_first, OK, 4, IP_TCP, 0, 0, 14, 136, FRAG, 0},
        {"test_parse_ip4_frag_middle", b_ip4_frag_middle, OK, 4, IP_TCP, 0, 0, 14, 116,
         FRAG | LATER, 0},
        {"test_parse_ip4_frag_last", b_ip4_frag_last, OK, 4, IP_TCP, 0, 0, 14, 28, FRAG | LATER, 0},
        DROP("test_parse_ip4_frag_gre_not_lb", b_ip4_frag_gre, NOT_LB),
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* Every fragment of one datagram, the first included, lands on one key. */
static void
fragments_share_key(void (*const builds[3])(struct pkt *))
{
	struct lb_pkt_info first;
	struct lb_pkt_info info;
	struct pkt *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	for (size_t i = 0; i < 3; i++) {
		memset(p, 0, sizeof(*p));
		builds[i](p);
		assert_int_equal(parse_heap(p->b, p->len, i == 0 ? &first : &info), LB_PARSE_OK);
		if (i > 0)
			assert_memory_equal(&info.key, &first.key, sizeof(first.key));
	}
	free(p);
}

static void
test_parse_ip4_fragments_share_key(void **state)
{
	void (*const builds[3])(struct pkt *) = {b_ip4_frag_first, b_ip4_frag_middle,
	                                         b_ip4_frag_last};

	(void)state;
	fragments_share_key(builds);
}

static void
test_parse_ip6_fragments_share_key(void **state)
{
	void (*const builds[3])(struct pkt *) = {b_ip6_frag_first, b_ip6_frag_nonfirst,
	                                         b_ip6_frag_last};

	(void)state;
	fragments_share_key(builds);
}

int
main(void)
{
	struct CMUnitTest tests[N_CASES + 2];
	size_t n = parse_case_tests(tests, cases, N_CASES);

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_ip4_fragments_share_key);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_ip6_fragments_share_key);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
