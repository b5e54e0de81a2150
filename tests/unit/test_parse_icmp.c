/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_parse() on ICMP and ICMPv6: errors quoting a packet of a
 * flow (keyed as that flow, client to VIP), quotes that are fragments or
 * malformed, cut headers, and messages that are not errors (echo, neighbour
 * solicitation), each row its own cmocka test (parse_fixture.h).
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
b_icmp_time_exceeded_udp(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, router4, vip4, 0, 0, 0);
	uint32_t ic = icmp(p, 11, 0, 0);
	uint32_t in = ip4(p, IP_UDP, vip4, client4, 0, 0, 0);
	udp(p, VPORT, CPORT, 100);
	ip4_done(p, in);
	icmp4_done(p, ic);
	ip4_done(p, ip);
}

static void
b_icmp_quotes_fragment(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, router4, vip4, 0, 0, 0);
	uint32_t ic = icmp(p, 3, 4, 1400);
	uint32_t in = ip4(p, IP_TCP, vip4, client4, IP4_MF | 100, 0, 0);
	ip4_set_len(p->b + in, 1500);
	icmp4_done(p, ic);
	ip4_done(p, ip);
}

static void
b_icmp_quotes_icmp(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, router4, vip4, 0, 0, 0);
	uint32_t ic = icmp(p, 3, 4, 1400);
	uint32_t in = ip4(p, IP_ICMP, vip4, client4, 0, 0, 0);
	icmp(p, 8, 0, 0x00010001);
	ip4_done(p, in);
	icmp4_done(p, ic);
	ip4_done(p, ip);
}

static void
b_icmp_quotes_bad_version(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, router4, vip4, 0, 0, 0);
	uint32_t ic = icmp(p, 3, 4, 1400);
	uint32_t in = ip4(p, IP_TCP, vip4, client4, 0, 0, 0);
	tcp(p, VPORT, CPORT, 0);
	p->b[in] = 0x65;
	icmp4_done(p, ic);
	ip4_done(p, ip);
}

static void
b_icmp_quotes_short_ihl(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, router4, vip4, 0, 0, 0);
	uint32_t ic = icmp(p, 3, 4, 1400);
	uint32_t in = ip4(p, IP_TCP, vip4, client4, 0, 0, 0);
	tcp(p, VPORT, CPORT, 0);
	p->b[in] = 0x44;
	icmp4_done(p, ic);
	ip4_done(p, ip);
}

static void
b_icmp_header_cut(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, router4, vip4, 0, 0, 0);
	put8(p, 3);
	put8(p, 4);
	put16(p, 0);
	put16(p, 0);
	ip4_done(p, ip);
}

static void
b_icmp_echo(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, client4, vip4, 0, 0, 0);
	uint32_t ic = icmp(p, 8, 0, 0x00010001);
	fill(p, 56, 0x5A);
	icmp4_done(p, ic);
	ip4_done(p, ip);
}

static void
b_icmp_in_fragment(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, client4, vip4, IP4_MF, 0, 0);
	icmp(p, 3, 4, 1400);
	fill(p, 64, 0);
	ip4_done(p, ip);
}

static void
b_icmp6_quotes_fragment(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_ICMPV6, router6, vip6, 0);
	icmp(p, 2, 0, 1280);
	ip6(p, IP_FRAGMENT, vip6, client6, 0);
	ip6_frag(p, IP_UDP, 100, 1);
	ip6_done(p, ip);
}

static void
b_icmp6_quotes_gre(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_ICMPV6, router6, vip6, 0);
	icmp(p, 1, 4, 0);
	ip6(p, IP_GRE, vip6, client6, 0);
	fill(p, 8, 0);
	ip6_done(p, ip);
}

static void
b_icmp6_echo(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_ICMPV6, client6, vip6, 0);
	icmp(p, 128, 0, 0x00010001);
	fill(p, 56, 0x5A);
	ip6_done(p, ip);
}

static void
b_icmp6_neighbour_solicit(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_ICMPV6, client6, vip6, 0);
	icmp(p, 135, 0, 0);
	put(p, vip6, 16);
	ip6_done(p, ip);
}

static const struct parse_case cases[] = {
        {"test_parse_icmp_frag_needed", b_icmp_frag_needed, OK, 4, IP_TCP, CPORT, VPORT, 14, 64,
         ICMPERR, 0xC0},
        {"test_parse_icmp_time_exceeded", b_icmp_time_exceeded_udp, OK, 4, IP_UDP, CPORT, VPORT, 14,
         156, ICMPERR, 0},
        {"test_parse_icmp_quotes_fragment", b_icmp_quotes_fragment, OK, 4, IP_TCP, 0, 0, 14, 48,
         ICMPERR | FRAG, 0},
        /* A quote that names no TCP/UDP flow is not the balancer's (the XDP rule). */
        DROP("test_parse_icmp_quotes_icmp", b_icmp_quotes_icmp, NOT_LB),
        DROP("test_parse_icmp_quotes_bad_version", b_icmp_quotes_bad_version, NOT_LB),
        DROP("test_parse_icmp_quotes_short_ihl", b_icmp_quotes_short_ihl, NOT_LB),
        DROP("test_parse_icmp_header_cut", b_icmp_header_cut, NOT_LB),
        DROP("test_parse_icmp_echo_not_lb", b_icmp_echo, NOT_LB),
        DROP("test_parse_icmp_in_fragment_not_lb", b_icmp_in_fragment, NOT_LB),
        {"test_parse_icmp6_too_big", b_icmp6_too_big, OK, 6, IP_UDP, CPORT, VPORT, 14, 104, ICMPERR,
         0},
        {"test_parse_icmp6_quotes_fragment", b_icmp6_quotes_fragment, OK, 6, IP_UDP, 0, 0, 14, 96,
         ICMPERR | FRAG, 0},
        DROP("test_parse_icmp6_quotes_gre", b_icmp6_quotes_gre, NOT_LB),
        DROP("test_parse_icmp6_echo_not_lb", b_icmp6_echo, NOT_LB),
        DROP("test_parse_icmp6_neighbour_solicit_not_lb", b_icmp6_neighbour_solicit, NOT_LB),
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* An ICMP error lands on the key of the flow it reports on. */
static void
test_parse_icmp_error_matches_flow(void **state)
{
	struct lb_pkt_info flow;
	struct lb_pkt_info err;
	struct pkt *p = calloc(1, sizeof(*p));

	(void)state;
	assert_non_null(p);
	b_ip4_tcp(p);
	assert_int_equal(parse_heap(p->b, p->len, &flow), LB_PARSE_OK);
	memset(p, 0, sizeof(*p));
	b_icmp_frag_needed(p);
	assert_int_equal(parse_heap(p->b, p->len, &err), LB_PARSE_OK);
	assert_memory_equal(&err.key, &flow.key, sizeof(flow.key));
	free(p);
}

int
main(void)
{
	struct CMUnitTest tests[N_CASES + 1];
	size_t n = parse_case_tests(tests, cases, N_CASES);

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_icmp_error_matches_flow);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
