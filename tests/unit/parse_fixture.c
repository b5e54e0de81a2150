/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared part of the lb_parse() tests (parse_fixture.h): the byte and
 * header builders, the sample frames more than one program parses, and the
 * runner of a table row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "dataplane/hash.h"
#include "dataplane/parse.h"

#include "parse_fixture.h"

/* The client, the VIP and a router on the path, per family. */
const uint8_t client4[4] = {198, 51, 100, 7};
const uint8_t vip4[4] = {203, 0, 113, 10};
const uint8_t router4[4] = {192, 0, 2, 1};
const uint8_t client6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x07};
const uint8_t vip6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};
const uint8_t router6[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};

/* Byte builders. */

void
put(struct pkt *p, const void *src, size_t n)
{
	assert_true(p->len + n <= PKT_MAX);
	memcpy(p->b + p->len, src, n);
	p->len += (uint32_t)n;
}

void
put8(struct pkt *p, uint8_t v)
{
	put(p, &v, 1);
}

void
put16(struct pkt *p, uint16_t v)
{
	put8(p, (uint8_t)(v >> 8));
	put8(p, (uint8_t)v);
}

void
put32(struct pkt *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p, (uint16_t)v);
}

void
fill(struct pkt *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		put8(p, v);
}

void
set16(uint8_t *at, uint16_t v)
{
	at[0] = (uint8_t)(v >> 8);
	at[1] = (uint8_t)v;
}

uint16_t
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

void
eth(struct pkt *p, uint16_t type)
{
	static const uint8_t macs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};

	put(p, macs, sizeof(macs));
	put16(p, type);
}

void
vlan(struct pkt *p, uint16_t vid, uint16_t type)
{
	put16(p, vid);
	put16(p, type);
}

uint32_t
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

void
ip4_set_len(uint8_t *ip, uint16_t tot)
{
	set16(ip + 2, tot);
	set16(ip + 10, 0);
	set16(ip + 10, inet_csum(ip, (size_t)(ip[0] & 0x0F) * 4));
}

void
ip4_done(struct pkt *p, uint32_t at)
{
	ip4_set_len(p->b + at, (uint16_t)(p->len - at));
}

uint32_t
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

void
ip6_done(struct pkt *p, uint32_t at)
{
	set16(p->b + at + 4, (uint16_t)(p->len - at - 40));
}

void
ip6_opts(struct pkt *p, uint8_t nh, unsigned int units)
{
	put8(p, nh);
	put8(p, (uint8_t)(units - 1));
	put8(p, 1); /* PadN */
	put8(p, (uint8_t)(units * 8 - 4));
	fill(p, units * 8 - 4, 0);
}

void
ip6_routing(struct pkt *p, uint8_t nh, unsigned int units)
{
	put8(p, nh);
	put8(p, (uint8_t)(units - 1));
	put8(p, 4); /* routing type: SRH */
	put8(p, 0); /* segments left */
	fill(p, units * 8 - 4, 0);
}

void
ip6_frag(struct pkt *p, uint8_t nh, uint16_t offset_units, int more)
{
	put8(p, nh);
	put8(p, 0);
	put16(p, (uint16_t)(offset_units << 3 | (more ? 1 : 0)));
	put32(p, 0xCAFEF00D);
}

void
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

void
tcp(struct pkt *p, uint16_t sport, uint16_t dport, unsigned int opt_len)
{
	tcp_raw(p, sport, dport, (uint8_t)(5 + opt_len / 4), opt_len);
}

void
udp(struct pkt *p, uint16_t sport, uint16_t dport, uint16_t payload)
{
	put16(p, sport);
	put16(p, dport);
	put16(p, (uint16_t)(8 + payload));
	put16(p, 0);
	fill(p, payload, 0xAB);
}

uint32_t
icmp(struct pkt *p, uint8_t type, uint8_t code, uint32_t rest)
{
	uint32_t at = p->len;

	put8(p, type);
	put8(p, code);
	put16(p, 0);
	put32(p, rest);
	return at;
}

void
icmp4_done(struct pkt *p, uint32_t at)
{
	set16(p->b + at + 2, inet_csum(p->b + at, p->len - at));
}

void
b_ip4_tcp(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_TCP, client4, vip4, IP4_DF, 0x28, 0);
	tcp(p, CPORT, VPORT, 12);
	fill(p, 100, 0x5A);
	ip4_done(p, ip);
}

void
b_ip4_udp(struct pkt *p)
{
	eth(p, ETH_IPV4);
	uint32_t ip = ip4(p, IP_UDP, client4, vip4, 0, 0, 0);
	udp(p, CPORT, VPORT, 64);
	ip4_done(p, ip);
}

void
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

void
b_ip6_tcp(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_TCP, client6, vip6, 0xB8);
	tcp(p, CPORT, VPORT, 20);
	fill(p, 30, 0x5A);
	ip6_done(p, ip);
}

void
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

void
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

void
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

void
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

/* --- the table ----------------------------------------------------------- */

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

int
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

size_t
parse_case_tests(struct CMUnitTest *tests, const struct parse_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		tests[i] = (struct CMUnitTest)cmocka_unit_test_prestate(test_parse_case,
		                                                        (void *)&cases[i]);
		tests[i].name = cases[i].name;
	}
	return n;
}
