/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for encapsulation and ICMP too-big: every header byte compared with
 * one built here field by field (own byte stores, own checksum), checksums
 * verified the way a receiver does, and the bytes around the headers checked
 * untouched. Nothing here calls the module to compute an expected value except
 * lb_encap_gue_sport, which the header names as the source of the UDP port and
 * which is tested on its own.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/encap.h"
#include "../support/rng.h"

/* ---- Byte helpers and the RFC 1071 checksum, written independently. ---- */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Sum of big-endian 16-bit words; an odd last byte is the high half of a word. */
static uint32_t
sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)sum;
}

/* IPv6 pseudo-header (RFC 8200 8.1) sum for an upper-layer packet. */
static uint32_t
ip6_pseudo_sum(const uint8_t src[16], const uint8_t dst[16], uint32_t len, uint8_t nh)
{
	uint8_t ph[40];

	memcpy(ph, src, 16);
	memcpy(ph + 16, dst, 16);
	put32(ph + 32, len);
	ph[36] = ph[37] = ph[38] = 0;
	ph[39] = nh;
	return sum16(ph, sizeof(ph), 0);
}

/* ---- The test network. ---- */

static const uint8_t next_hop_mac[6] = {0x02, 0x00, 0x5e, 0x00, 0x53, 0x01};
static const uint8_t port_mac[6] = {0x02, 0x00, 0x5e, 0x00, 0x53, 0x02};
static const uint8_t client_mac[6] = {0x02, 0x00, 0x5e, 0x00, 0x53, 0x99};
static const uint8_t lb_src4[4] = {192, 0, 2, 1};
static const uint8_t lb_src6[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0,
                                    0,    0,    0,    0,    0,    0,    0, 1};
static const uint8_t be4[4] = {10, 1, 2, 3};
static const uint8_t be6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
static const uint8_t client4[4] = {198, 51, 100, 7};
static const uint8_t client6[16] = {0x20, 0x01, 0x0d, 0xb8, 0xc1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
static const uint8_t vip4[4] = {203, 0, 113, 10};
static const uint8_t vip6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};

#define GUE_PORT 6080

static void
make_conf(struct lb_encap_conf *conf, bool has4, bool has6)
{
	memset(conf, 0, sizeof(*conf));
	memcpy(conf->src4.b, lb_src4, 4);
	memcpy(conf->src6.b, lb_src6, 16);
	conf->has_src4 = has4;
	conf->has_src6 = has6;
	memcpy(conf->next_hop_mac, next_hop_mac, 6);
	conf->mtu = 1500;
	conf->gue_port = htons(GUE_PORT);
}

static void
make_backend(struct lb_backend *be, uint8_t af)
{
	memset(be, 0, sizeof(*be));
	be->af = af;
	memcpy(be->addr.b, af == LB_AF_INET ? be4 : be6, af == LB_AF_INET ? 4 : 16);
	be->gen = 1;
	be->weight = 1;
}

/* An inner (or quoted) IP packet from the client to the VIP, random payload. */
static void
make_inner(uint8_t *p, uint8_t af, uint16_t len, uint8_t tos, uint64_t *rng)
{
	for (uint16_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng_next(rng);
	if (af == LB_AF_INET) {
		assert_true(len >= 20);
		p[0] = 0x45;
		p[1] = tos;
		put16(p + 2, len);
		p[9] = 6;
		memcpy(p + 12, client4, 4);
		memcpy(p + 16, vip4, 4);
	} else {
		assert_true(len >= 40);
		put32(p, 6u << 28 | (uint32_t)tos << 20 | 0x12345);
		put16(p + 4, (uint16_t)(len - 40));
		p[6] = 6;
		p[7] = 60;
		memcpy(p + 8, client6, 16);
		memcpy(p + 24, vip6, 16);
	}
}

static size_t
build_eth(uint8_t *p, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	put16(p + 12, type);
	return 14;
}

static size_t
build_ip4(uint8_t *p, uint8_t tos, uint16_t total, uint8_t proto, const uint8_t src[4],
          const uint8_t dst[4])
{
	p[0] = 0x45;          /* version 4, 5 words */
	p[1] = tos;           /* DSCP + ECN */
	put16(p + 2, total);  /* total length */
	put16(p + 4, 0);      /* identification */
	put16(p + 6, 0x4000); /* DF, offset 0 */
	p[8] = 64;            /* TTL */
	p[9] = proto;
	put16(p + 10, 0);
	memcpy(p + 12, src, 4);
	memcpy(p + 16, dst, 4);
	put16(p + 10, (uint16_t)~fold(sum16(p, 20, 0)));
	return 20;
}

static size_t
build_ip6(uint8_t *p, uint8_t tc, uint32_t flow, uint16_t plen, uint8_t nh, const uint8_t src[16],
          const uint8_t dst[16])
{
	p[0] = (uint8_t)(0x60 | tc >> 4);
	p[1] = (uint8_t)((tc & 0x0F) << 4 | ((flow >> 16) & 0x0F));
	p[2] = (uint8_t)(flow >> 8);
	p[3] = (uint8_t)flow;
	put16(p + 4, plen);
	p[6] = nh;
	p[7] = 64; /* hop limit */
	memcpy(p + 8, src, 16);
	memcpy(p + 24, dst, 16);
	return 40;
}

/* Fail naming the first differing byte, so a broken field is easy to spot. */
static void
assert_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i])
			fail_msg("%s: byte %zu is 0x%02x, want 0x%02x", what, i, got[i], want[i]);
}

#define GUARD 64
#define CANARY 0xEE
#define BUF_LEN (GUARD + 14 + 48 + 1500 + GUARD)

/* ---- lb_encap_write ---- */

struct encap_case {
	const char *name;
	uint8_t outer_af;
	uint8_t inner_af;
	uint8_t encap;
	uint16_t inner_len;
	uint8_t tos;
	uint64_t flow_hash;
};

static const struct encap_case encap_cases[] = {
        {"test_encap_write ipip 4in4", LB_AF_INET, LB_AF_INET, LB_ENCAP_IPIP, 60, 0xB9,
         0x0123456789abcdefULL},
        {"test_encap_write ipip 6in6", LB_AF_INET6, LB_AF_INET6, LB_ENCAP_IPIP, 80, 0xB9,
         0x0123456789abcdefULL},
        {"test_encap_write ipip 4in6", LB_AF_INET6, LB_AF_INET, LB_ENCAP_IPIP, 60, 0xB9,
         0xfedcba9876543210ULL},
        {"test_encap_write ipip 6in4", LB_AF_INET, LB_AF_INET6, LB_ENCAP_IPIP, 80, 0xB9,
         0xfedcba9876543210ULL},
        {"test_encap_write gue 4 over ipv4", LB_AF_INET, LB_AF_INET, LB_ENCAP_GUE, 60, 0xB9,
         0x0000a5a5deadbeefULL},
        {"test_encap_write gue 6 over ipv4 odd", LB_AF_INET, LB_AF_INET6, LB_ENCAP_GUE, 81, 0xB9,
         0x1111222233334444ULL},
        {"test_encap_write gue 4 over ipv6", LB_AF_INET6, LB_AF_INET, LB_ENCAP_GUE, 60, 0xB9,
         0x5555666677778888ULL},
        {"test_encap_write gue 6 over ipv6", LB_AF_INET6, LB_AF_INET6, LB_ENCAP_GUE, 1452, 0xB9,
         0x99990000aaaabbbbULL},
        {"test_encap_write gue 6 over ipv6 odd", LB_AF_INET6, LB_AF_INET6, LB_ENCAP_GUE, 101, 0x2E,
         0xffffffffffffffffULL},
        {"test_encap_write gue 4 over ipv6 odd", LB_AF_INET6, LB_AF_INET, LB_ENCAP_GUE, 21, 0x01,
         0},
        {"test_encap_write ipip 4in4 tos 0", LB_AF_INET, LB_AF_INET, LB_ENCAP_IPIP, 1480, 0x00, 1},
        {"test_encap_write ipip 6in6 ecn ce", LB_AF_INET6, LB_AF_INET6, LB_ENCAP_IPIP, 40, 0x03,
         0x00000000000fffffULL},
        {"test_encap_write ipip 6in4 dscp ef", LB_AF_INET, LB_AF_INET6, LB_ENCAP_IPIP, 1480, 0xB8,
         2},
};

#define N_ENCAP_CASES (sizeof(encap_cases) / sizeof(encap_cases[0]))

/* Headers lb_encap_write should produce for row c, built here; returns their length. */
static size_t
build_encap(uint8_t *want, const struct encap_case *c, const uint8_t *inner)
{
	bool gue = c->encap == LB_ENCAP_GUE;
	uint8_t inner_proto = c->inner_af == LB_AF_INET ? 4 : 41;
	uint8_t proto = gue ? 17 : inner_proto;
	uint16_t udp_len = (uint16_t)(8 + c->inner_len);
	uint16_t l4_len = gue ? udp_len : c->inner_len;
	uint8_t *ip = want + 14, *udp;
	size_t ip_len;

	if (c->outer_af == LB_AF_INET) {
		build_eth(want, next_hop_mac, port_mac, 0x0800);
		ip_len = build_ip4(ip, c->tos, (uint16_t)(20 + l4_len), proto, lb_src4, be4);
	} else {
		build_eth(want, next_hop_mac, port_mac, 0x86DD);
		ip_len = build_ip6(ip, c->tos, (uint32_t)(c->flow_hash & 0xFFFFF), l4_len, proto,
		                   lb_src6, be6);
	}
	if (!gue)
		return 14 + ip_len;
	udp = ip + ip_len;
	put16(udp, lb_encap_gue_sport(c->flow_hash));
	put16(udp + 2, GUE_PORT);
	put16(udp + 4, udp_len);
	put16(udp + 6, 0); /* IPv4: no checksum (RFC 768) */
	if (c->outer_af == LB_AF_INET6) {
		uint32_t s = ip6_pseudo_sum(lb_src6, be6, udp_len, 17);
		uint16_t ck;

		s = sum16(udp, 8, s);
		s = sum16(inner, c->inner_len, s);
		ck = (uint16_t)~fold(s);
		put16(udp + 6, ck == 0 ? 0xFFFF : ck);
	}
	return 14 + ip_len + 8;
}

static void
test_encap_write(void **state)
{
	const struct encap_case *c = *state;
	size_t want_len =
	        14 + (c->outer_af == LB_AF_INET ? 20 : 40) + (c->encap == LB_ENCAP_GUE ? 8 : 0);
	uint8_t *buf = malloc(BUF_LEN), *copy = malloc(BUF_LEN), want[14 + 48];
	uint8_t *hdr = buf + GUARD, *ip = hdr + 14;
	struct lb_encap_conf conf;
	struct lb_backend be;
	uint64_t rng = c->flow_hash ^ c->inner_len;
	uint16_t ret;

	assert_non_null(buf);
	assert_non_null(copy);
	memset(buf, CANARY, BUF_LEN);
	make_conf(&conf, true, true);
	make_backend(&be, c->outer_af);
	make_inner(hdr + want_len, c->inner_af, c->inner_len, c->tos, &rng);
	memcpy(copy, buf, BUF_LEN);

	ret = lb_encap_write(hdr, &conf, port_mac, &be, c->encap, c->inner_af, c->inner_len, c->tos,
	                     c->flow_hash);
	assert_int_equal(ret, want_len);
	assert_int_equal(ret, LB_ETH_HLEN + lb_encap_overhead(c->outer_af, c->encap));
	assert_int_equal(build_encap(want, c, hdr + want_len), want_len);
	assert_bytes(c->name, hdr, want, want_len);

	/* Nothing outside the headers was written: not the inner packet, not around it. */
	assert_bytes("guard before", buf, copy, GUARD);
	assert_bytes("inner packet and after", hdr + want_len, copy + GUARD + want_len,
	             BUF_LEN - GUARD - want_len);

	/* The receiver's view, independent of the expected bytes above. */
	if (c->outer_af == LB_AF_INET) {
		assert_int_equal(fold(sum16(ip, 20, 0)), 0xFFFF);
		assert_int_equal(ip[1], c->tos);
		assert_int_equal(ip[6] & 0x40, 0x40); /* DF */
		assert_int_equal(ip[8], 64);
		assert_int_equal(get16(ip + 2), want_len - 14 + c->inner_len);
	} else {
		assert_int_equal((get16(ip) >> 4) & 0xFF, c->tos);
		assert_int_equal(ip[7], 64);
		assert_int_equal(get16(ip + 4), want_len - 14 - 40 + c->inner_len);
	}
	if (c->encap == LB_ENCAP_GUE) {
		uint8_t *udp = ip + (c->outer_af == LB_AF_INET ? 20 : 40);
		uint16_t sport = get16(udp);

		assert_true(sport >= 0xC000);
		assert_int_equal(get16(udp + 2), GUE_PORT);
		assert_int_equal(get16(udp + 4), 8 + c->inner_len);
		if (c->outer_af == LB_AF_INET6) {
			uint32_t s = ip6_pseudo_sum(ip + 8, ip + 24, 8u + c->inner_len, 17);

			assert_int_not_equal(get16(udp + 6), 0);
			assert_int_equal(fold(sum16(udp, 8u + c->inner_len, s)), 0xFFFF);
		} else {
			assert_int_equal(get16(udp + 6), 0);
		}
	}
	free(buf);
	free(copy);
}

/*
 * An IPv6 UDP checksum that computes to 0 must go out as 0xFFFF (0 means "no
 * checksum", which IPv6 forbids). Steer the inner bytes so the sum is 0xFFFF.
 */
static void
test_encap_gue_ipv6_checksum_never_zero(void **state)
{
	const struct encap_case c = {"zero checksum",  LB_AF_INET6, LB_AF_INET6,
	                             LB_ENCAP_GUE,     100,         0xB9,
	                             0x42424242deadULL};
	uint8_t buf[GUARD + 62 + 100], want[62];
	uint8_t *hdr = buf + GUARD, *inner = hdr + 62, *udp = hdr + 14 + 40;
	struct lb_encap_conf conf;
	struct lb_backend be;
	uint64_t rng = 5;
	uint32_t s;

	(void)state;
	make_conf(&conf, true, true);
	make_backend(&be, LB_AF_INET6);
	make_inner(inner, LB_AF_INET6, c.inner_len, c.tos, &rng);
	/* Sum of everything covered with the last inner word 0, then fill it to make 0xFFFF. */
	put16(inner + 98, 0);
	build_encap(want, &c, inner);
	put16(want + 14 + 40 + 6, 0);
	s = ip6_pseudo_sum(lb_src6, be6, 108, 17);
	s = sum16(want + 14 + 40, 8, s);
	s = sum16(inner, c.inner_len, s);
	put16(inner + 98, (uint16_t)~fold(s));

	assert_int_equal(lb_encap_write(hdr, &conf, port_mac, &be, c.encap, c.inner_af, c.inner_len,
	                                c.tos, c.flow_hash),
	                 62);
	assert_int_equal(get16(udp + 6), 0xFFFF);
	s = ip6_pseudo_sum(lb_src6, be6, 108, 17);
	assert_int_equal(fold(sum16(udp, 108, s)), 0xFFFF);
}

struct overhead_case {
	const char *name;
	uint8_t af;
	uint8_t encap;
	uint16_t want;
};

static const struct overhead_case overhead_cases[] = {
        {"test_encap_overhead ipip v4", LB_AF_INET, LB_ENCAP_IPIP, 20},
        {"test_encap_overhead gue v4", LB_AF_INET, LB_ENCAP_GUE, 28},
        {"test_encap_overhead ipip v6", LB_AF_INET6, LB_ENCAP_IPIP, 40},
        {"test_encap_overhead gue v6", LB_AF_INET6, LB_ENCAP_GUE, 48},
};

#define N_OVERHEAD_CASES (sizeof(overhead_cases) / sizeof(overhead_cases[0]))

static void
test_encap_overhead(void **state)
{
	const struct overhead_case *c = *state;

	assert_int_equal(lb_encap_overhead(c->af, c->encap), c->want);
}

static void
test_encap_gue_sport_range(void **state)
{
	static uint8_t seen[0x4000];
	uint64_t rng = 0x5907;
	uint32_t distinct = 0;

	(void)state;
	memset(seen, 0, sizeof(seen));
	assert_true(lb_encap_gue_sport(0) >= 0xC000);
	assert_true(lb_encap_gue_sport(UINT64_MAX) >= 0xC000);
	for (int i = 0; i < 100000; i++) {
		uint64_t h = rng_next(&rng);
		uint16_t p = lb_encap_gue_sport(h);

		assert_true(p >= 0xC000);
		assert_int_equal(p, lb_encap_gue_sport(h)); /* deterministic */
		distinct += !seen[p - 0xC000];
		seen[p - 0xC000] = 1;
	}
	/* 100k random hashes over 16384 ports leave ~0.2% unseen; a port from few
	 * or constant hash bits would cover a fraction of the range. */
	print_message("distinct GUE source ports: %u of 16384\n", distinct);
	assert_true(distinct >= 16000);
}

/* ---- lb_icmp_too_big_write ---- */

struct icmp_case {
	const char *name;
	uint8_t af;
	uint16_t qlen;
	uint32_t mtu;
};

static const struct icmp_case icmp_cases[] = {
        {"test_encap_icmp_too_big v4 max quote", LB_AF_INET, 548, 1480},
        {"test_encap_icmp_too_big v4 short quote", LB_AF_INET, 68, 1476},
        {"test_encap_icmp_too_big v4 odd quote", LB_AF_INET, 67, 576},
        {"test_encap_icmp_too_big v6 max quote", LB_AF_INET6, 1232, 1440},
        {"test_encap_icmp_too_big v6 short quote", LB_AF_INET6, 100, 1280},
        {"test_encap_icmp_too_big v6 odd quote 32-bit mtu", LB_AF_INET6, 101, 0x00012345},
};

#define N_ICMP_CASES (sizeof(icmp_cases) / sizeof(icmp_cases[0]))

static void
test_encap_icmp_too_big(void **state)
{
	const struct icmp_case *c = *state;
	size_t hlen = c->af == LB_AF_INET ? 14 + 20 + 8 : 14 + 40 + 8;
	uint8_t *buf = malloc(BUF_LEN), *copy = malloc(BUF_LEN), want[14 + 40 + 8];
	uint8_t *hdr = buf + GUARD, *quote = hdr + hlen, *ip = hdr + 14, *icmp;
	struct lb_encap_conf conf;
	uint64_t rng = c->qlen;

	assert_non_null(buf);
	assert_non_null(copy);
	memset(buf, CANARY, BUF_LEN);
	make_conf(&conf, true, true);
	make_inner(quote, c->af, c->qlen, 0x28, &rng);
	memcpy(copy, buf, BUF_LEN);

	assert_int_equal(
	        lb_icmp_too_big_write(hdr, &conf, client_mac, port_mac, c->af, c->qlen, c->mtu),
	        hlen);
	assert_int_equal(lb_icmp_too_big_hlen(c->af), hlen);

	if (c->af == LB_AF_INET) {
		icmp = want + 14 + 20;
		build_eth(want, client_mac, port_mac, 0x0800);
		build_ip4(want + 14, 0, (uint16_t)(28 + c->qlen), 1, lb_src4, client4);
		icmp[0] = 3; /* destination unreachable */
		icmp[1] = 4; /* fragmentation needed */
		put16(icmp + 2, 0);
		put16(icmp + 4, 0); /* unused */
		put16(icmp + 6, (uint16_t)c->mtu);
		put16(icmp + 2, (uint16_t)~fold(sum16(quote, c->qlen, sum16(icmp, 8, 0))));
	} else {
		uint32_t s;

		icmp = want + 14 + 40;
		build_eth(want, client_mac, port_mac, 0x86DD);
		build_ip6(want + 14, 0, 0, (uint16_t)(8 + c->qlen), 58, lb_src6, client6);
		icmp[0] = 2; /* packet too big */
		icmp[1] = 0;
		put16(icmp + 2, 0);
		put32(icmp + 4, c->mtu);
		s = ip6_pseudo_sum(lb_src6, client6, 8u + c->qlen, 58);
		put16(icmp + 2, (uint16_t)~fold(sum16(quote, c->qlen, sum16(icmp, 8, s))));
	}
	assert_bytes(c->name, hdr, want, hlen);
	assert_bytes("guard before", buf, copy, GUARD);
	assert_bytes("quote and after", quote, copy + GUARD + hlen, BUF_LEN - GUARD - hlen);

	/* The receiver's view: addresses and checksums. */
	icmp = ip + (c->af == LB_AF_INET ? 20 : 40);
	if (c->af == LB_AF_INET) {
		assert_memory_equal(ip + 12, lb_src4, 4);
		assert_memory_equal(ip + 16, quote + 12, 4); /* back to the quoted source */
		assert_int_equal(fold(sum16(ip, 20, 0)), 0xFFFF);
		assert_int_equal(fold(sum16(icmp, 8u + c->qlen, 0)), 0xFFFF);
		assert_int_equal(get16(icmp + 6), c->mtu);
	} else {
		uint32_t s = ip6_pseudo_sum(ip + 8, ip + 24, 8u + c->qlen, 58);

		assert_memory_equal(ip + 8, lb_src6, 16);
		assert_memory_equal(ip + 24, quote + 8, 16);
		assert_int_equal(fold(sum16(icmp, 8u + c->qlen, s)), 0xFFFF);
		assert_int_equal((uint32_t)get16(icmp + 4) << 16 | get16(icmp + 6), c->mtu);
	}
	free(buf);
	free(copy);
}

/*
 * The outer IPv4 header's checksum (the 64-bit word sum and its folds, incl.
 * the rotate fold) against a plain 16-bit RFC 1071 sum over the written
 * header, for random sources, backends, TOS and lengths, and the extremes
 * (all-ones addresses); the pipeline's template path writes the same bytes as
 * lb_encap_write().
 */
static void
test_encap_ip4_checksum_random(void **state)
{
	struct lb_encap_conf conf;
	uint64_t rng = 0x1071;

	(void)state;
	for (int i = 0; i < 200000; i++) {
		uint8_t a[64], b[64];
		struct lb_backend be;
		struct lb_encap4_tmpl t;
		uint8_t encap = (i & 1) ? LB_ENCAP_GUE : LB_ENCAP_IPIP;
		uint8_t inner_af = (i & 2) ? LB_AF_INET6 : LB_AF_INET;
		uint16_t inner_len = (uint16_t)(rng_next(&rng) % 65400);
		uint8_t tos = (uint8_t)rng_next(&rng);
		uint64_t h = rng_next(&rng);
		uint32_t sum;

		make_conf(&conf, true, true);
		memset(&be, 0, sizeof(be));
		be.af = LB_AF_INET;
		if (i % 97 == 0) {
			memset(conf.src4.b, 0xFF, 4);
			memset(be.addr.b, 0xFF, 4);
		} else {
			uint32_t x = (uint32_t)rng_next(&rng), y = (uint32_t)rng_next(&rng);

			memcpy(conf.src4.b, &x, 4);
			memcpy(be.addr.b, &y, 4);
		}
		memset(a, CANARY, sizeof(a));
		memset(b, CANARY, sizeof(b));
		assert_int_equal(
		        lb_encap_write(a, &conf, port_mac, &be, encap, inner_af, inner_len, tos, h),
		        lb_encap_overhead(LB_AF_INET, encap) + LB_ETH_HLEN);
		lb_encap4_tmpl_init(&t, &conf, port_mac);
		lb_encap_write4_tmpl(b, &t, &be, encap, inner_af, inner_len, tos, h);
		assert_memory_equal(a, b, sizeof(a));
		sum = sum16(a + LB_ETH_HLEN, LB_IP4_HLEN, 0);
		while (sum >> 16)
			sum = (sum & 0xFFFF) + (sum >> 16);
		assert_int_equal(sum, 0xFFFF);
		assert_memory_equal(a + LB_ETH_HLEN + 12, conf.src4.b, 4);
		assert_memory_equal(a + LB_ETH_HLEN + 16, be.addr.b, 4);
	}
}

/* No source address for the family: nothing is written and 0 returned. */
static void
test_encap_icmp_too_big_no_source(void **state)
{
	static const struct {
		uint8_t af;
		bool has4, has6;
	} rows[] = {
	        {LB_AF_INET, false, true},
	        {LB_AF_INET6, true, false},
	        {LB_AF_INET, false, false},
	        {LB_AF_INET6, false, false},
	};
	uint8_t buf[GUARD + 62 + 100], copy[sizeof(buf)];
	struct lb_encap_conf conf;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t rng = i;

		memset(buf, CANARY, sizeof(buf));
		make_inner(buf + GUARD + lb_icmp_too_big_hlen(rows[i].af), rows[i].af, 60, 0, &rng);
		memcpy(copy, buf, sizeof(buf));
		make_conf(&conf, rows[i].has4, rows[i].has6);
		assert_int_equal(lb_icmp_too_big_write(buf + GUARD, &conf, client_mac, port_mac,
		                                       rows[i].af, 60, 1400),
		                 0);
		assert_memory_equal(buf, copy, sizeof(buf));
	}
}

static void
test_encap_icmp_sizes(void **state)
{
	(void)state;
	assert_int_equal(lb_icmp_too_big_hlen(LB_AF_INET), 42);
	assert_int_equal(lb_icmp_too_big_hlen(LB_AF_INET6), 62);
	/* RFC 1812: at most 576 bytes in all; RFC 4443: at most 1280. */
	assert_int_equal(lb_icmp_too_big_max_quote(LB_AF_INET), 576 - 28);
	assert_int_equal(lb_icmp_too_big_max_quote(LB_AF_INET6), 1280 - 48);
}

int
main(void)
{
	struct CMUnitTest tests[N_ENCAP_CASES + N_OVERHEAD_CASES + N_ICMP_CASES + 8];
	size_t n = 0;

	/* Table rows: one test per row, named after the row so a failure says which. */
	for (size_t i = 0; i < N_ENCAP_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_encap_write,
		                                                        (void *)&encap_cases[i]);
		tests[n++].name = encap_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encap_gue_ipv6_checksum_never_zero);
	for (size_t i = 0; i < N_OVERHEAD_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_encap_overhead,
		                                                        (void *)&overhead_cases[i]);
		tests[n++].name = overhead_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encap_gue_sport_range);
	for (size_t i = 0; i < N_ICMP_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_encap_icmp_too_big,
		                                                        (void *)&icmp_cases[i]);
		tests[n++].name = icmp_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encap_icmp_too_big_no_source);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encap_icmp_sizes);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encap_ip4_checksum_random);
	return _cmocka_run_group_tests("encap", tests, n, NULL, NULL);
}
