/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_parse(), IPv6: a table of frames built byte by byte
 * (parse_fixture.h), each row its own cmocka test: the extension-header walk
 * (any order, at most eight), padding, a bad version and lengths beyond the
 * frame or the payload, and a payload length that needs a frame over 64 KiB.
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
b_ip6_udp(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_UDP, client6, vip6, 0);
	udp(p, CPORT, VPORT, 0);
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
b_ip6_padding(struct pkt *p)
{
	eth(p, ETH_IPV6);
	uint32_t ip = ip6(p, IP_UDP, client6, vip6, 0);
	udp(p, CPORT, VPORT, 2);
	ip6_done(p, ip);
	fill(p, 8, 0xEE);
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

static const struct parse_case cases[] = {
        {"test_parse_ip6_tcp", b_ip6_tcp, OK, 6, IP_TCP, CPORT, VPORT, 14, 110, 0, 0xB8},
        {"test_parse_ip6_udp", b_ip6_udp, OK, 6, IP_UDP, CPORT, VPORT, 14, 48, 0, 0},
        {"test_parse_ip6_ext_headers", b_ip6_ext, OK, 6, IP_UDP, CPORT, VPORT, 14, 116, 0, 0},
        {"test_parse_ip6_ext_any_order", b_ip6_ext_any_order, OK, 6, IP_TCP, CPORT, VPORT, 14, 84,
         0, 0},
        {"test_parse_ip6_ext_8_accepted", b_ip6_ext_8, OK, 6, IP_UDP, CPORT, VPORT, 14, 112, 0, 0},
        DROP("test_parse_ip6_ext_too_many", b_ip6_ext_9, LB_DROP_IP6_MALFORMED),
        {"test_parse_ip6_padding_ignored", b_ip6_padding, OK, 6, IP_UDP, CPORT, VPORT, 14, 50, 0,
         0},
        DROP("test_parse_ip6_bad_version", b_ip6_bad_version, LB_DROP_IP6_MALFORMED),
        DROP("test_parse_ip6_payload_beyond_frame", b_ip6_payload_beyond_frame, LB_DROP_IP6_TRUNC),
        DROP("test_parse_ip6_ext_beyond_payload", b_ip6_ext_beyond_payload, LB_DROP_IP6_TRUNC),
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

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

int
main(void)
{
	struct CMUnitTest tests[N_CASES + 1];
	size_t n = parse_case_tests(tests, cases, N_CASES);

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_ip6_over_64k);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
