/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_parse(), Ethernet, IPv4, TCP and UDP: a table of frames
 * built byte by byte (parse_fixture.h), each row its own cmocka test named
 * after the behaviour: VLAN and QinQ tags, IPv4 options and padding, what is
 * not for the balancer (ARP, GRE, three tags), and malformed or cut IPv4, TCP
 * and UDP headers, each dropped with its own reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dataplane/parse.h"

#include "parse_fixture.h"

/* Frames for the table. Unless a row says otherwise, client to VIP. */

static void
b_ip4_options(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_TCP, client4, vip4, 0, 0, 40);
	tcp(p, CPORT, VPORT, 0);
	ip4_done(p, ip);
}

static void
b_vlan(struct pkt *p)
{
	eth(p, ETH_VLAN);
	vlan(p, 100, ETH_IPV4);
	uint32_t ip = ip4(p, IP_UDP, client4, vip4, 0, 0, 0);
	udp(p, CPORT, VPORT, 10);
	ip4_done(p, ip);
}

static void
b_qinq_stacked_8100(struct pkt *p)
{
	eth(p, ETH_VLAN);
	vlan(p, 10, ETH_VLAN);
	vlan(p, 20, ETH_IPV6);
	uint32_t ip = ip6(p, IP_TCP, client6, vip6, 0);
	tcp(p, CPORT, VPORT, 0);
	ip6_done(p, ip);
}

static void
b_three_tags(struct pkt *p)
{
	eth(p, ETH_QINQ);
	vlan(p, 10, ETH_VLAN);
	vlan(p, 20, ETH_VLAN);
	vlan(p, 30, ETH_IPV4);
	uint32_t ip = ip4(p, IP_UDP, client4, vip4, 0, 0, 0);
	udp(p, CPORT, VPORT, 10);
	ip4_done(p, ip);
}

static void
b_arp(struct pkt *p)
{
	eth(p, ETH_ARP);
	put16(p, 1);
	put16(p, ETH_IPV4);
	put8(p, 6);
	put8(p, 4);
	put16(p, 1);
	fill(p, 6, 2);
	put(p, client4, 4);
	fill(p, 6, 0);
	put(p, vip4, 4);
	fill(p, 18, 0); /* padding to 60 */
}

static void
b_gre(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_GRE, client4, vip4, 0, 0, 0);
	put16(p, 0);
	put16(p, ETH_IPV4);
	fill(p, 40, 0);
	ip4_done(p, ip);
}

/* A 64-byte frame: 46 bytes of IPv4 would be 28, the rest is padding. */
static void
b_ip4_padding(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_UDP, client4, vip4, 0, 0, 0);
	udp(p, CPORT, VPORT, 0);
	ip4_done(p, ip);
	fill(p, 60 - p->len, 0xEE);
}

static void
b_ip4_bad_version(struct pkt *p)
{
	b_ip4_udp(p);
	p->b[14] = 0x65;
}

static void
b_ip4_short_ihl(struct pkt *p)
{
	b_ip4_udp(p);
	p->b[14] = 0x44;
}

static void
b_ip4_tot_below_ihl(struct pkt *p)
{
	b_ip4_options(p);
	ip4_set_len(p->b + 14, 40); /* header is 60 */
}

static void
b_ip4_tot_beyond_frame(struct pkt *p)
{
	b_ip4_udp(p);
	ip4_set_len(p->b + 14, (uint16_t)(p->len - 14 + 1));
}

static void
b_tcp_doff_short(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_TCP, client4, vip4, 0, 0, 0);
	tcp_raw(p, CPORT, VPORT, 4, 0);
	fill(p, 20, 0);
	ip4_done(p, ip);
}

static void
b_tcp_doff_beyond(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_TCP, client4, vip4, 0, 0, 0);
	tcp_raw(p, CPORT, VPORT, 6, 0);
	ip4_done(p, ip);
	fill(p, 10, 0); /* padding does not count as TCP options */
}

static void
b_udp_short(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_UDP, client6, vip6, 0);
	put16(p, CPORT);
	put16(p, VPORT);
	put16(p, 8);
	ip6_done(p, ip);
	fill(p, 20, 0);
}

static void
b_runt(struct pkt *p)
{
	eth(p, ETH_IPV4);
	p->len = 13;
}

static void
b_vlan_cut(struct pkt *p)
{
	eth(p, ETH_VLAN);
	put16(p, 100);
	put8(p, 0x08);
}

static const struct parse_case cases[] = {
        {"test_parse_ip4_tcp", b_ip4_tcp, OK, 4, IP_TCP, CPORT, VPORT, 14, 152, DF, 0x28},
        {"test_parse_ip4_udp", b_ip4_udp, OK, 4, IP_UDP, CPORT, VPORT, 14, 92, 0, 0},
        {"test_parse_ip4_options", b_ip4_options, OK, 4, IP_TCP, CPORT, VPORT, 14, 80, 0, 0},
        {"test_parse_vlan", b_vlan, OK, 4, IP_UDP, CPORT, VPORT, 18, 38, 0, 0},
        {"test_parse_qinq", b_qinq, OK, 4, IP_TCP, CPORT, VPORT, 22, 66, DF, 0},
        {"test_parse_qinq_stacked_8100", b_qinq_stacked_8100, OK, 6, IP_TCP, CPORT, VPORT, 22, 60,
         0, 0},
        DROP("test_parse_three_tags_not_lb", b_three_tags, NOT_LB),
        DROP("test_parse_arp_not_lb", b_arp, NOT_LB),
        DROP("test_parse_gre_not_lb", b_gre, NOT_LB),
        {"test_parse_ip4_padding_ignored", b_ip4_padding, OK, 4, IP_UDP, CPORT, VPORT, 14, 28, 0,
         0},
        DROP("test_parse_ip4_bad_version", b_ip4_bad_version, LB_DROP_IP4_MALFORMED),
        DROP("test_parse_ip4_ihl_below_5", b_ip4_short_ihl, LB_DROP_IP4_MALFORMED),
        DROP("test_parse_ip4_total_below_ihl", b_ip4_tot_below_ihl, LB_DROP_IP4_MALFORMED),
        DROP("test_parse_ip4_total_beyond_frame", b_ip4_tot_beyond_frame, LB_DROP_IP4_TRUNC),
        DROP("test_parse_tcp_doff_below_5", b_tcp_doff_short, LB_DROP_L4_TRUNC),
        DROP("test_parse_tcp_doff_beyond_packet", b_tcp_doff_beyond, LB_DROP_L4_TRUNC),
        DROP("test_parse_udp_short", b_udp_short, LB_DROP_L4_TRUNC),
        DROP("test_parse_runt", b_runt, LB_DROP_ETH_TRUNC),
        DROP("test_parse_vlan_cut", b_vlan_cut, LB_DROP_ETH_TRUNC),
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

int
main(void)
{
	struct CMUnitTest tests[N_CASES];

	parse_case_tests(tests, cases, N_CASES);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
