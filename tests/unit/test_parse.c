/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_parse() and lb_parse_frame(): a table of frames built byte by byte (each row
 * its own cmocka test, named after the behaviour), and truncation sweeps that cut sample frames at
 * every offset into heap buffers of exactly that size so the sanitizers see any read past the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "parse.h"

#define PKT_MAX 2048

#define ETH_IPV4 0x0800
#define ETH_IPV6 0x86DD
#define ETH_ARP 0x0806
#define ETH_VLAN 0x8100
#define ETH_QINQ 0x88A8

#define IP_HOPOPTS 0
#define IP_ICMP 1
#define IP_TCP 6
#define IP_UDP 17
#define IP_ROUTING 43
#define IP_FRAGMENT 44
#define IP_GRE 47
#define IP_ICMPV6 58
#define IP_DSTOPTS 60

#define IP4_DF 0x4000
#define IP4_MF 0x2000

/* Ports of the client-to-VIP direction, which every OK row expects. */
#define CPORT 40000
#define VPORT 443

/* The client, the VIP and a router on the path, per family. */
static const uint8_t client4[4] = {198, 51, 100, 7};
static const uint8_t vip4[4] = {203, 0, 113, 10};
static const uint8_t router4[4] = {192, 0, 2, 1};
static const uint8_t client6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x07};
static const uint8_t vip6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};
static const uint8_t router6[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0,
                                    0,    0,    0,    0,    0,    0,    0, 0x01};

struct pkt {
	uint8_t b[PKT_MAX];
	uint32_t len;
};

/* Byte builders. */

static void
put(struct pkt *p, const void *src, size_t n)
{
	assert_true(p->len + n <= PKT_MAX);
	memcpy(p->b + p->len, src, n);
	p->len += (uint32_t)n;
}

static void
put8(struct pkt *p, uint8_t v)
{
	put(p, &v, 1);
}

static void
put16(struct pkt *p, uint16_t v)
{
	put8(p, (uint8_t)(v >> 8));
	put8(p, (uint8_t)v);
}

static void
put32(struct pkt *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p, (uint16_t)v);
}

static void
fill(struct pkt *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		put8(p, v);
}

static void
set16(uint8_t *at, uint16_t v)
{
	at[0] = (uint8_t)(v >> 8);
	at[1] = (uint8_t)v;
}

/* The Internet checksum (RFC 1071). */
static uint16_t
inet_csum(const uint8_t *b, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (n & 1)
		sum += (uint32_t)b[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

static void
eth(struct pkt *p, uint16_t type)
{
	static const uint8_t macs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};

	put(p, macs, sizeof(macs));
	put16(p, type);
}

/* One VLAN tag after an ethertype that announced it. */
static void
vlan(struct pkt *p, uint16_t vid, uint16_t type)
{
	put16(p, vid);
	put16(p, type);
}

/* An IPv4 header with opt_len bytes of options; returns its offset. */
static uint32_t
ip4(struct pkt *p, uint8_t proto, const uint8_t *src, const uint8_t *dst, uint16_t frag,
    uint8_t tos, unsigned int opt_len)
{
	uint32_t at = p->len;

	assert_true(opt_len % 4 == 0 && opt_len <= 40);
	put8(p, (uint8_t)(0x40 | (5 + opt_len / 4)));
	put8(p, tos);
	put16(p, 0); /* total length: ip4_done() */
	put16(p, 0x1234);
	put16(p, frag);
	put8(p, 64);
	put8(p, proto);
	put16(p, 0); /* checksum: ip4_done() */
	put(p, src, 4);
	put(p, dst, 4);
	if (opt_len > 0) {
		fill(p, opt_len - 1, 1); /* NOP */
		put8(p, 0);              /* end of options */
	}
	return at;
}

/* Set an IPv4 header's total length and recompute its checksum. */
static void
ip4_set_len(uint8_t *ip, uint16_t tot)
{
	set16(ip + 2, tot);
	set16(ip + 10, 0);
	set16(ip + 10, inet_csum(ip, (size_t)(ip[0] & 0x0F) * 4));
}

/* The IPv4 packet at offset at ends at the end of what has been built. */
static void
ip4_done(struct pkt *p, uint32_t at)
{
	ip4_set_len(p->b + at, (uint16_t)(p->len - at));
}

static uint32_t
ip6(struct pkt *p, uint8_t nh, const uint8_t *src, const uint8_t *dst, uint8_t tc)
{
	uint32_t at = p->len;

	put32(p, 0x60000000u | (uint32_t)tc << 20 | 0x12345);
	put16(p, 0); /* payload length: ip6_done() */
	put8(p, nh);
	put8(p, 64);
	put(p, src, 16);
	put(p, dst, 16);
	return at;
}

static void
ip6_done(struct pkt *p, uint32_t at)
{
	set16(p->b + at + 4, (uint16_t)(p->len - at - 40));
}

/* Hop-by-hop or destination options of units * 8 bytes, padded with PadN. */
static void
ip6_opts(struct pkt *p, uint8_t nh, unsigned int units)
{
	put8(p, nh);
	put8(p, (uint8_t)(units - 1));
	put8(p, 1); /* PadN */
	put8(p, (uint8_t)(units * 8 - 4));
	fill(p, units * 8 - 4, 0);
}

/* A segment routing header with no segments left, units * 8 bytes. */
static void
ip6_routing(struct pkt *p, uint8_t nh, unsigned int units)
{
	put8(p, nh);
	put8(p, (uint8_t)(units - 1));
	put8(p, 4); /* routing type: SRH */
	put8(p, 0); /* segments left */
	fill(p, units * 8 - 4, 0);
}

static void
ip6_frag(struct pkt *p, uint8_t nh, uint16_t offset_units, int more)
{
	put8(p, nh);
	put8(p, 0);
	put16(p, (uint16_t)(offset_units << 3 | (more ? 1 : 0)));
	put32(p, 0xCAFEF00D);
}

/* A TCP header whose data offset field says doff, with opt_len option bytes. */
static void
tcp_raw(struct pkt *p, uint16_t sport, uint16_t dport, uint8_t doff, unsigned int opt_len)
{
	put16(p, sport);
	put16(p, dport);
	put32(p, 1000); /* seq */
	put32(p, 0);    /* ack */
	put8(p, (uint8_t)(doff << 4));
	put8(p, 0x02);       /* SYN */
	put16(p, 65535);     /* window */
	put16(p, 0);         /* checksum, not checked */
	put16(p, 0);         /* urgent */
	fill(p, opt_len, 1); /* NOP options */
}

static void
tcp(struct pkt *p, uint16_t sport, uint16_t dport, unsigned int opt_len)
{
	tcp_raw(p, sport, dport, (uint8_t)(5 + opt_len / 4), opt_len);
}

static void
udp(struct pkt *p, uint16_t sport, uint16_t dport, uint16_t payload)
{
	put16(p, sport);
	put16(p, dport);
	put16(p, (uint16_t)(8 + payload));
	put16(p, 0);
	fill(p, payload, 0xAB);
}

/* An ICMP or ICMPv6 header; rest is the second word (MTU, pointer, unused). */
static uint32_t
icmp(struct pkt *p, uint8_t type, uint8_t code, uint32_t rest)
{
	uint32_t at = p->len;

	put8(p, type);
	put8(p, code);
	put16(p, 0);
	put32(p, rest);
	return at;
}

static void
icmp4_done(struct pkt *p, uint32_t at)
{
	set16(p->b + at + 2, inet_csum(p->b + at, p->len - at));
}

/* Frames for the table. Unless a row says otherwise, client to VIP. */

static void
b_ip4_tcp(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_TCP, client4, vip4, IP4_DF, 0x28, 0);
	tcp(p, CPORT, VPORT, 12);
	fill(p, 100, 0x5A);
	ip4_done(p, ip);
}

static void
b_ip4_udp(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_UDP, client4, vip4, 0, 0, 0);
	udp(p, CPORT, VPORT, 64);
	ip4_done(p, ip);
}

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

/* QinQ with an 802.1ad outer tag, TCP with options: also a truncation sample. */
static void
b_qinq(struct pkt *p)
{
	eth(p, ETH_QINQ);
	vlan(p, 10, ETH_VLAN);
	vlan(p, 20, ETH_IPV4);
	uint32_t ip = ip4(p, IP_TCP, client4, vip4, IP4_DF, 0, 4);
	tcp(p, CPORT, VPORT, 12);
	fill(p, 10, 0x5A);
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
b_ip6_tcp(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_TCP, client6, vip6, 0xB8);
	tcp(p, CPORT, VPORT, 20);
	fill(p, 30, 0x5A);
	ip6_done(p, ip);
}

static void
b_ip6_udp(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_UDP, client6, vip6, 0);
	udp(p, CPORT, VPORT, 0);
	ip6_done(p, ip);
}

/* Hop-by-hop, routing, destination options, UDP: also a truncation sample. */
static void
b_ip6_ext(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_HOPOPTS, client6, vip6, 0);
	ip6_opts(p, IP_ROUTING, 1);
	ip6_routing(p, IP_DSTOPTS, 3);
	ip6_opts(p, IP_UDP, 2);
	udp(p, CPORT, VPORT, 20);
	ip6_done(p, ip);
}

/* Extension headers in an unusual order are still walked. */
static void
b_ip6_ext_any_order(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_DSTOPTS, client6, vip6, 0);
	ip6_opts(p, IP_ROUTING, 1);
	ip6_routing(p, IP_HOPOPTS, 1);
	ip6_opts(p, IP_TCP, 1);
	tcp(p, CPORT, VPORT, 0);
	ip6_done(p, ip);
}

static void
ext_chain(struct pkt *p, unsigned int n)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_DSTOPTS, client6, vip6, 0);
	for (unsigned int i = 0; i < n; i++)
		ip6_opts(p, i + 1 == n ? IP_UDP : IP_DSTOPTS, 1);
	udp(p, CPORT, VPORT, 0);
	ip6_done(p, ip);
}

static void
b_ip6_ext_8(struct pkt *p)
{
	ext_chain(p, 8);
}

static void
b_ip6_ext_9(struct pkt *p)
{
	ext_chain(p, 9);
}

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

/* Destination options after the fragment header: the walk goes on past it. */
static void
b_ip6_frag_first_dstopts(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_HOPOPTS, client6, vip6, 0);
	ip6_opts(p, IP_FRAGMENT, 1);
	ip6_frag(p, IP_DSTOPTS, 0, 1);
	ip6_opts(p, IP_UDP, 1);
	udp(p, CPORT, VPORT, 32);
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

/*
 * ICMP fragmentation needed from a router to the VIP, quoting the backend's
 * TCP packet from the VIP to the client (with IP options, cut after 8 bytes of
 * TCP as routers do). Also a truncation sample.
 */
static void
b_icmp_frag_needed(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_ICMP, router4, vip4, 0, 0xC0, 0);
	uint32_t ic = icmp(p, 3, 4, 1400);
	uint32_t in = ip4(p, IP_TCP, vip4, client4, IP4_DF, 0, 8);
	ip4_set_len(p->b + in, 1500);
	tcp(p, VPORT, CPORT, 0);
	p->len -= 12;
	icmp4_done(p, ic);
	ip4_done(p, ip);
}

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

/*
 * ICMPv6 packet too big quoting the backend's UDP packet from the VIP, which
 * carried a destination options header. Also a truncation sample.
 */
static void
b_icmp6_too_big(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_ICMPV6, router6, vip6, 0);
	icmp(p, 2, 0, 1280);
	uint32_t in = ip6(p, IP_DSTOPTS, vip6, client6, 0);
	ip6_opts(p, IP_UDP, 1);
	udp(p, VPORT, CPORT, 1400);
	ip6_done(p, in);
	p->len -= 1400; /* the quote is cut, the inner length is not */
	ip6_done(p, ip);
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
b_ip6_padding(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_UDP, client6, vip6, 0);
	udp(p, CPORT, VPORT, 2);
	ip6_done(p, ip);
	fill(p, 8, 0xEE);
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
b_ip6_bad_version(struct pkt *p)
{
	b_ip6_udp(p);
	p->b[14] = 0x40;
}

static void
b_ip6_payload_beyond_frame(struct pkt *p)
{
	b_ip6_udp(p);
	set16(p->b + 14 + 4, 9);
}

static void
b_ip6_ext_beyond_payload(struct pkt *p)
{
	/* The routing header says 24 bytes but only 16 are in the payload. */
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_ROUTING, client6, vip6, 0);
	ip6_routing(p, IP_UDP, 2);
	p->b[p->len - 16 + 1] = 2;
	ip6_done(p, ip);
	fill(p, 8, 0); /* in the frame, beyond the packet */
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

struct parse_case {
	const char *name;
	void (*build)(struct pkt *p);
	int rc;
	/* The rest is checked only when rc is LB_PARSE_OK. */
	uint8_t af;
	uint8_t proto;
	uint16_t sport; /* host order; the addresses are client -> VIP */
	uint16_t dport;
	uint16_t l2_len;
	uint16_t l3_len;
	uint8_t flags;
	uint8_t tos;
};

#define OK LB_PARSE_OK
#define NOT_LB LB_PARSE_NOT_LB
#define FRAG LB_PKT_FRAGMENT
#define ICMPERR LB_PKT_ICMP_ERROR
#define DF LB_PKT_DF

/* A row that only checks the return code. */
#define DROP(name, build, rc)                                                                      \
	{                                                                                          \
		name, build, rc, 0, 0, 0, 0, 0, 0, 0, 0                                            \
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
        {"test_parse_ip6_tcp", b_ip6_tcp, OK, 6, IP_TCP, CPORT, VPORT, 14, 110, 0, 0xB8},
        {"test_parse_ip6_udp", b_ip6_udp, OK, 6, IP_UDP, CPORT, VPORT, 14, 48, 0, 0},
        {"test_parse_ip6_ext_headers", b_ip6_ext, OK, 6, IP_UDP, CPORT, VPORT, 14, 116, 0, 0},
        {"test_parse_ip6_ext_any_order", b_ip6_ext_any_order, OK, 6, IP_TCP, CPORT, VPORT, 14, 84,
         0, 0},
        {"test_parse_ip6_ext_8_accepted", b_ip6_ext_8, OK, 6, IP_UDP, CPORT, VPORT, 14, 112, 0, 0},
        DROP("test_parse_ip6_ext_too_many", b_ip6_ext_9, LB_DROP_IP6_MALFORMED),
        {"test_parse_ip6_frag_first", b_ip6_frag_first, OK, 6, IP_TCP, 0, 0, 14, 132, FRAG, 0},
        {"test_parse_ip6_frag_first_dstopts", b_ip6_frag_first_dstopts, OK, 6, IP_UDP, 0, 0, 14,
         104, FRAG, 0},
        {"test_parse_ip6_frag_nonfirst", b_ip6_frag_nonfirst, OK, 6, IP_TCP, 0, 0, 14, 51, FRAG, 0},
        {"test_parse_ip6_frag_last", b_ip6_frag_last, OK, 6, IP_TCP, 0, 0, 14, 88, FRAG, 0},
        {"test_parse_ip6_frag_atomic", b_ip6_frag_atomic, OK, 6, IP_UDP, CPORT, VPORT, 14, 64, 0,
         0},
        DROP("test_parse_ip6_frag_twice", b_ip6_frag_twice, LB_DROP_IP6_MALFORMED),
        DROP("test_parse_ip6_frag_gre_not_lb", b_ip6_frag_gre, NOT_LB),
        {"test_parse_ip4_frag_first", b_ip4_frag_first, OK, 4, IP_TCP, 0, 0, 14, 136, FRAG, 0},
        {"test_parse_ip4_frag_middle", b_ip4_frag_middle, OK, 4, IP_TCP, 0, 0, 14, 116, FRAG, 0},
        {"test_parse_ip4_frag_last", b_ip4_frag_last, OK, 4, IP_TCP, 0, 0, 14, 28, FRAG, 0},
        DROP("test_parse_ip4_frag_gre_not_lb", b_ip4_frag_gre, NOT_LB),
        {"test_parse_icmp_frag_needed", b_icmp_frag_needed, OK, 4, IP_TCP, CPORT, VPORT, 14, 64,
         ICMPERR, 0xC0},
        {"test_parse_icmp_time_exceeded", b_icmp_time_exceeded_udp, OK, 4, IP_UDP, CPORT, VPORT, 14,
         156, ICMPERR, 0},
        {"test_parse_icmp_quotes_fragment", b_icmp_quotes_fragment, OK, 4, IP_TCP, 0, 0, 14, 48,
         ICMPERR | FRAG, 0},
        DROP("test_parse_icmp_quotes_icmp", b_icmp_quotes_icmp, LB_DROP_ICMP_MALFORMED),
        DROP("test_parse_icmp_quotes_bad_version", b_icmp_quotes_bad_version,
             LB_DROP_ICMP_MALFORMED),
        DROP("test_parse_icmp_quotes_short_ihl", b_icmp_quotes_short_ihl, LB_DROP_ICMP_MALFORMED),
        DROP("test_parse_icmp_header_cut", b_icmp_header_cut, LB_DROP_ICMP_TRUNC),
        DROP("test_parse_icmp_echo_not_lb", b_icmp_echo, NOT_LB),
        DROP("test_parse_icmp_in_fragment_not_lb", b_icmp_in_fragment, NOT_LB),
        {"test_parse_icmp6_too_big", b_icmp6_too_big, OK, 6, IP_UDP, CPORT, VPORT, 14, 104, ICMPERR,
         0},
        {"test_parse_icmp6_quotes_fragment", b_icmp6_quotes_fragment, OK, 6, IP_UDP, 0, 0, 14, 96,
         ICMPERR | FRAG, 0},
        DROP("test_parse_icmp6_quotes_gre", b_icmp6_quotes_gre, LB_DROP_ICMP_MALFORMED),
        DROP("test_parse_icmp6_echo_not_lb", b_icmp6_echo, NOT_LB),
        DROP("test_parse_icmp6_neighbour_solicit_not_lb", b_icmp6_neighbour_solicit, NOT_LB),
        DROP("test_parse_arp_not_lb", b_arp, NOT_LB),
        DROP("test_parse_gre_not_lb", b_gre, NOT_LB),
        {"test_parse_ip4_padding_ignored", b_ip4_padding, OK, 4, IP_UDP, CPORT, VPORT, 14, 28, 0,
         0},
        {"test_parse_ip6_padding_ignored", b_ip6_padding, OK, 6, IP_UDP, CPORT, VPORT, 14, 50, 0,
         0},
        DROP("test_parse_ip4_bad_version", b_ip4_bad_version, LB_DROP_IP4_MALFORMED),
        DROP("test_parse_ip4_ihl_below_5", b_ip4_short_ihl, LB_DROP_IP4_MALFORMED),
        DROP("test_parse_ip4_total_below_ihl", b_ip4_tot_below_ihl, LB_DROP_IP4_MALFORMED),
        DROP("test_parse_ip4_total_beyond_frame", b_ip4_tot_beyond_frame, LB_DROP_IP4_TRUNC),
        DROP("test_parse_ip6_bad_version", b_ip6_bad_version, LB_DROP_IP6_MALFORMED),
        DROP("test_parse_ip6_payload_beyond_frame", b_ip6_payload_beyond_frame, LB_DROP_IP6_TRUNC),
        DROP("test_parse_ip6_ext_beyond_payload", b_ip6_ext_beyond_payload, LB_DROP_IP6_TRUNC),
        DROP("test_parse_tcp_doff_below_5", b_tcp_doff_short, LB_DROP_L4_TRUNC),
        DROP("test_parse_tcp_doff_beyond_packet", b_tcp_doff_beyond, LB_DROP_L4_TRUNC),
        DROP("test_parse_udp_short", b_udp_short, LB_DROP_L4_TRUNC),
        DROP("test_parse_runt", b_runt, LB_DROP_ETH_TRUNC),
        DROP("test_parse_vlan_cut", b_vlan_cut, LB_DROP_ETH_TRUNC),
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* The key a row expects: client to VIP, everything else zero. */
static void
want_key(const struct parse_case *c, struct lb_flow_key *k)
{
	memset(k, 0, sizeof(*k));
	if (c->af == LB_AF_INET) {
		memcpy(k->src.b, client4, 4);
		memcpy(k->dst.b, vip4, 4);
	} else {
		memcpy(k->src.b, client6, 16);
		memcpy(k->dst.b, vip6, 16);
	}
	k->sport = htons(c->sport);
	k->dport = htons(c->dport);
	k->proto = c->proto;
	k->af = c->af;
}

/* Parse len bytes from an odd address in a heap block that ends right there. */
static int
parse_heap(const uint8_t *src, uint32_t len, struct lb_pkt_info *info)
{
	uint8_t *raw = malloc(len + 1);
	int rc;

	assert_non_null(raw);
	memcpy(raw + 1, src, len);
	memset(info, 0xA5, sizeof(*info)); /* the parser must clear what it leaves */
	rc = lb_parse(raw + 1, len, info);
	free(raw);
	return rc;
}

static void
test_parse_case(void **state)
{
	const struct parse_case *c = *state;
	struct pkt *p = calloc(1, sizeof(*p));
	struct lb_pkt_info info;
	struct lb_flow_key want;
	int rc;

	assert_non_null(p);
	c->build(p);
	rc = parse_heap(p->b, p->len, &info);
	assert_int_equal(rc, c->rc);
	if (rc == LB_PARSE_OK) {
		want_key(c, &want);
		assert_memory_equal(&info.key, &want, sizeof(want));
		assert_int_equal(info.l2_len, c->l2_len);
		assert_int_equal(info.l3_len, c->l3_len);
		assert_int_equal(info.flags, c->flags);
		assert_int_equal(info.tos, c->tos);
		assert_int_equal(info.pad, 0);
	}
	free(p);
}

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

/* A payload length l3_len cannot hold needs a frame over 64 KiB. */
static void
test_parse_ip6_over_64k(void **state)
{
	uint32_t len = 14 + 40 + 65535;
	uint8_t *raw = calloc(1, len);
	struct pkt *p = calloc(1, sizeof(*p));
	struct lb_pkt_info info;

	(void)state;
	assert_non_null(raw);
	assert_non_null(p);
	b_ip6_udp(p);
	memcpy(raw, p->b, p->len);
	set16(raw + 14 + 4, 65535);
	assert_int_equal(lb_parse(raw, len, &info), LB_DROP_IP6_MALFORMED);
	set16(raw + 14 + 4, 65535 - 40);
	assert_int_equal(lb_parse(raw, len, &info), LB_PARSE_OK);
	assert_int_equal(info.l3_len, 65535);
	free(p);
	free(raw);
}

/* Samples for the truncation sweeps. */
struct trunc_step {
	uint32_t below; /* an IP packet shorter than this ... */
	int rc;         /* ... gives this */
};

struct trunc_case {
	const char *name;
	void (*build)(struct pkt *p);
	uint8_t af;
	uint16_t l2_len;
	uint32_t l3_hdr; /* the IP header with options: the shortest packet tried */
	struct trunc_step steps[3];
};

static const struct trunc_case trunc_cases[] = {
        {"qinq_ip4_tcp_options", b_qinq, 4, 22, 24, {{24 + 32, LB_DROP_L4_TRUNC}}},
        {"ip4_udp", b_ip4_udp, 4, 14, 20, {{28, LB_DROP_L4_TRUNC}}},
        {"ip6_tcp", b_ip6_tcp, 6, 14, 40, {{80, LB_DROP_L4_TRUNC}}},
        {"ip6_ext_udp",
         b_ip6_ext,
         6,
         14,
         40,
         {{40 + 8 + 24 + 16, LB_DROP_IP6_TRUNC}, {40 + 48 + 8, LB_DROP_L4_TRUNC}}},
        {"icmp_frag_needed",
         b_icmp_frag_needed,
         4,
         14,
         20,
         {{20 + 8 + 28 + 4, LB_DROP_ICMP_TRUNC}}},
        {"icmp6_too_big", b_icmp6_too_big, 6, 14, 40, {{40 + 8 + 48 + 4, LB_DROP_ICMP_TRUNC}}},
        {"ip6_frag_first_dstopts",
         b_ip6_frag_first_dstopts,
         6,
         14,
         40,
         {{40 + 8 + 8 + 8, LB_DROP_IP6_TRUNC}}},
};

#define N_TRUNC (sizeof(trunc_cases) / sizeof(trunc_cases[0]))

/*
 * The frame cut at every length: the IP header then claims more than is there,
 * so the result is always the Ethernet or IP truncation reason, never OK.
 */
static void
test_parse_truncated_frames(void **state)
{
	struct pkt *p = calloc(1, sizeof(*p));

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < N_TRUNC; i++) {
		const struct trunc_case *c = &trunc_cases[i];
		int ip_trunc = c->af == 4 ? LB_DROP_IP4_TRUNC : LB_DROP_IP6_TRUNC;
		struct lb_pkt_info info;

		memset(p, 0, sizeof(*p));
		c->build(p);
		assert_int_equal(lb_parse(p->b, p->len, &info), LB_PARSE_OK);
		for (uint32_t k = 0; k < p->len; k++) {
			/* Exactly k bytes on the heap, so ASan sees byte k being read. */
			uint8_t *buf = malloc(k);
			int rc;

			assert_true(k == 0 || buf != NULL);
			if (k > 0)
				memcpy(buf, p->b, k);
			rc = lb_parse(buf, k, &info);
			free(buf);
			if (rc != (k < c->l2_len ? LB_DROP_ETH_TRUNC : ip_trunc))
				fail_msg("%s cut to %u bytes: got %d", c->name, k, rc);
		}
	}
	free(p);
}

/*
 * The IP packet cut at every length from its header up, with its length field
 * (and checksum) made to agree: the cut then lands in an extension header, the
 * L4 header or the ICMP quote, and each gives its own reason. Once the needed
 * headers are whole the result is OK with the full packet's key.
 */
static void
test_parse_truncated_ip_packets(void **state)
{
	struct pkt *p = calloc(1, sizeof(*p));

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < N_TRUNC; i++) {
		const struct trunc_case *c = &trunc_cases[i];
		struct lb_pkt_info full;
		struct lb_pkt_info info;
		uint32_t l3_full;

		memset(p, 0, sizeof(*p));
		c->build(p);
		assert_int_equal(lb_parse(p->b, p->len, &full), LB_PARSE_OK);
		l3_full = p->len - c->l2_len;
		for (uint32_t l3 = c->l3_hdr; l3 < l3_full; l3++) {
			uint32_t k = c->l2_len + l3;
			uint8_t *buf = malloc(k);
			int want = LB_PARSE_OK;
			int rc;

			assert_non_null(buf);
			memcpy(buf, p->b, k);
			if (c->af == 4)
				ip4_set_len(buf + c->l2_len, (uint16_t)l3);
			else
				set16(buf + c->l2_len + 4, (uint16_t)(l3 - 40));
			rc = lb_parse(buf, k, &info);
			free(buf);
			for (size_t s = 0; s < 3 && c->steps[s].below != 0; s++) {
				if (l3 < c->steps[s].below) {
					want = c->steps[s].rc;
					break;
				}
			}
			if (rc != want)
				fail_msg("%s with %u bytes of IP: got %d, want %d", c->name, l3, rc,
				         want);
			if (rc == LB_PARSE_OK) {
				assert_memory_equal(&info.key, &full.key, sizeof(full.key));
				assert_int_equal(info.l3_len, l3);
			}
		}
	}
	free(p);
}

/*
 * A jumbo frame as a chain: only the first segment (seg bytes, exactly that
 * much on the heap) is given, the IP length is checked against the frame.
 */
static int
parse_seg_heap(const uint8_t *src, uint32_t seg, uint32_t frame, struct lb_pkt_info *info)
{
	uint8_t *buf = malloc(seg > 0 ? seg : 1);
	int rc;

	assert_non_null(buf);
	memcpy(buf, src, seg);
	memset(info, 0xA5, sizeof(*info));
	rc = lb_parse_frame(buf, seg, frame, info);
	free(buf);
	return rc;
}

/* 4000 bytes of IPv4 TCP in a 4014-byte frame whose first segment holds 2048. */
static void
test_parse_frame_jumbo_ip4_ok(void **state)
{
	uint8_t *frame = calloc(1, 4014);
	struct pkt *p = calloc(1, sizeof(*p));
	struct lb_pkt_info info;

	(void)state;
	assert_non_null(frame);
	assert_non_null(p);
	b_ip4_tcp(p);
	memcpy(frame, p->b, p->len);
	ip4_set_len(frame + 14, 4000);
	assert_int_equal(parse_seg_heap(frame, 2048, 4014, &info), LB_PARSE_OK);
	assert_int_equal(info.l2_len, 14);
	assert_int_equal(info.l3_len, 4000);
	assert_int_equal(info.key.af, LB_AF_INET);
	assert_int_equal(info.key.proto, IP_TCP);
	assert_int_equal(ntohs(info.key.sport), CPORT);
	assert_int_equal(ntohs(info.key.dport), VPORT);
	assert_memory_equal(info.key.dst.b, vip4, 4);
	assert_true(info.flags & LB_PKT_DF);
	/* The whole frame contiguous gives the same answer. */
	assert_int_equal(lb_parse_frame(frame, 4014, 4014, &info), LB_PARSE_OK);
	assert_int_equal(info.l3_len, 4000);
	/* Only the first segment as the whole frame: the total length is beyond it. */
	assert_int_equal(parse_seg_heap(frame, 2048, 2048, &info), LB_DROP_IP4_TRUNC);
	/* A frame one byte short of the total length is still truncated. */
	assert_int_equal(parse_seg_heap(frame, 2048, 4013, &info), LB_DROP_IP4_TRUNC);
	free(p);
	free(frame);
}

static void
test_parse_frame_jumbo_ip6_ok(void **state)
{
	uint8_t *frame = calloc(1, 9014);
	struct pkt *p = calloc(1, sizeof(*p));
	struct lb_pkt_info info;

	(void)state;
	assert_non_null(frame);
	assert_non_null(p);
	b_ip6_ext(p);
	memcpy(frame, p->b, p->len);
	set16(frame + 14 + 4, 9000 - 40);
	assert_int_equal(parse_seg_heap(frame, 1500, 9014, &info), LB_PARSE_OK);
	assert_int_equal(info.l3_len, 9000);
	assert_int_equal(info.key.af, LB_AF_INET6);
	assert_int_equal(info.key.proto, IP_UDP);
	assert_int_equal(ntohs(info.key.sport), CPORT);
	assert_int_equal(ntohs(info.key.dport), VPORT);
	assert_int_equal(parse_seg_heap(frame, 1500, 9013, &info), LB_DROP_IP6_TRUNC);
	assert_int_equal(parse_seg_heap(frame, 1500, 1500, &info), LB_DROP_IP6_TRUNC);
	free(p);
	free(frame);
}

/* A first segment longer than the frame is clamped to it. */
static void
test_parse_frame_seg_beyond_frame_clamped(void **state)
{
	struct pkt *p = calloc(1, sizeof(*p));
	struct lb_pkt_info info;

	(void)state;
	assert_non_null(p);
	b_ip4_udp(p);
	assert_int_equal(lb_parse_frame(p->b, p->len + 100, p->len, &info), LB_PARSE_OK);
	assert_int_equal(lb_parse_frame(p->b, p->len, p->len - 1, &info), LB_DROP_IP4_TRUNC);
	free(p);
}

/*
 * Every sample with the segment boundary at every offset inside its headers
 * while the frame is whole: a header that crosses the boundary gives the trunc
 * reason of that header (as when the packet itself ends there), and once the
 * needed headers are in the first segment the result is OK with the full key
 * and the full l3_len.
 */
static void
test_parse_frame_split_headers_trunc(void **state)
{
	struct pkt *p = calloc(1, sizeof(*p));

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < N_TRUNC; i++) {
		const struct trunc_case *c = &trunc_cases[i];
		int ip_trunc = c->af == 4 ? LB_DROP_IP4_TRUNC : LB_DROP_IP6_TRUNC;
		struct lb_pkt_info full;
		struct lb_pkt_info info;

		memset(p, 0, sizeof(*p));
		c->build(p);
		assert_int_equal(lb_parse(p->b, p->len, &full), LB_PARSE_OK);
		for (uint32_t seg = 0; seg <= p->len; seg++) {
			int want = LB_PARSE_OK;
			int rc;

			if (seg < c->l2_len) {
				want = LB_DROP_ETH_TRUNC;
			} else if (seg - c->l2_len < c->l3_hdr) {
				want = ip_trunc;
			} else {
				for (size_t s = 0; s < 3 && c->steps[s].below != 0; s++) {
					if (seg - c->l2_len < c->steps[s].below) {
						want = c->steps[s].rc;
						break;
					}
				}
			}
			rc = parse_seg_heap(p->b, seg, p->len, &info);
			if (rc != want)
				fail_msg("%s split at %u of %u: got %d, want %d", c->name, seg,
				         p->len, rc, want);
			if (rc == LB_PARSE_OK) {
				assert_memory_equal(&info.key, &full.key, sizeof(full.key));
				assert_int_equal(info.l3_len, full.l3_len);
				assert_int_equal(info.l2_len, full.l2_len);
			}
		}
	}
	free(p);
}

int
main(void)
{
	struct CMUnitTest tests[N_CASES + 10];
	size_t n = 0;

	/* One test per row, named after the row so a failure says which. */
	for (size_t i = 0; i < N_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_parse_case,
		                                                        (void *)&cases[i]);
		tests[n++].name = cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_ip4_fragments_share_key);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_ip6_fragments_share_key);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_icmp_error_matches_flow);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_ip6_over_64k);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_truncated_frames);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_truncated_ip_packets);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_frame_jumbo_ip4_ok);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_frame_jumbo_ip6_ok);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_frame_seg_beyond_frame_clamped);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_frame_split_headers_trunc);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
