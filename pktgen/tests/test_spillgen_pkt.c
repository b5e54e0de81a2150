/* SPDX-License-Identifier: BSD-3-Clause */
/* Frame builder (checksums, layout, sizes) and the decoder of the balancer's
 * output (IPIP 4in4 / 6in6 / 4in6, GUE over IPv4 and IPv6, VLAN, errors). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gen.h"
#include "pkt.h"

static const uint8_t macs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};

static void
flow(struct sg_flow *f, uint8_t af, uint8_t proto)
{
	memset(f, 0, sizeof(*f));
	f->af = af;
	f->proto = proto;
	if (af == LB_AF_INET) {
		inet_pton(AF_INET, "198.18.0.7", f->src.b);
		inet_pton(AF_INET, "192.0.2.10", f->dst.b);
	} else {
		inet_pton(AF_INET6, "2001:db8:5347::7", f->src.b);
		inet_pton(AF_INET6, "2001:db8::10", f->dst.b);
	}
	f->sport = 40001;
	f->dport = 80;
}

/* Checksum of the L4 segment with its pseudo-header: 0 when correct. */
static uint16_t
l4_check(const uint8_t *fr, uint16_t len, uint8_t af, uint8_t proto)
{
	const uint8_t *ip = fr + 14;
	uint32_t iphl = af == LB_AF_INET ? 20 : 40, l4len = len - 14 - iphl, sum;

	sum = sg_csum_add(0, ip + (af == LB_AF_INET ? 12 : 8), af == LB_AF_INET ? 8 : 32);
	sum += proto + l4len;
	sum = sg_csum_add(sum, ip + iphl, l4len);
	return sg_csum_fold(sum);
}

struct bcase {
	uint8_t af, proto;
	uint16_t len;
};

static const struct bcase bcases[] = {
        {LB_AF_INET, SG_PROTO_UDP, 60},   {LB_AF_INET, SG_PROTO_TCP, 72},
        {LB_AF_INET6, SG_PROTO_UDP, 80},  {LB_AF_INET6, SG_PROTO_TCP, 1514},
        {LB_AF_INET, SG_PROTO_UDP, 1514}, {LB_AF_INET, SG_PROTO_UDP, 61},
};

static void
test_spillgen_pkt_build_checksums(void **state)
{
	const struct bcase *c = *state;
	struct sg_flow f;
	struct sg_stamp st = {.flow = 123456, .seq = 77, .tsc = 0x0102030405060708ULL};
	uint8_t fr[1600];

	flow(&f, c->af, c->proto);
	memset(fr, 0xAA, sizeof(fr));
	sg_pkt_write(fr, c->len, macs, &f, &st, 1000, SG_TCP_PSH_ACK);
	assert_memory_equal(fr, macs, 12);
	if (c->af == LB_AF_INET) {
		assert_int_equal(fr[12] << 8 | fr[13], 0x0800);
		assert_int_equal(sg_csum_fold(sg_csum_add(0, fr + 14, 20)), 0);
		assert_int_equal(fr[16] << 8 | fr[17], c->len - 14);
	} else {
		assert_int_equal(fr[12] << 8 | fr[13], 0x86DD);
		assert_int_equal(fr[18] << 8 | fr[19], c->len - 54);
	}
	assert_int_equal(l4_check(fr, c->len, c->af, c->proto), 0);
	/* Padding is zero, nothing is written past len. */
	assert_int_equal(fr[c->len], 0xAA);
	if (c->len > sg_pkt_min_len(c->af, c->proto))
		assert_int_equal(fr[c->len - 1], 0);
}

/* Wrap a generated frame as spillwayd would: Ethernet, outer IP, (UDP,) inner. */
static uint16_t
encap(uint8_t *out, const uint8_t *in, uint16_t inlen, uint8_t outer_af, int gue,
      const char *backend, uint16_t gue_port, int vlan)
{
	uint16_t off = 0, inner = (uint16_t)(inlen - 14);
	uint8_t inner_v = in[14] >> 4;

	memcpy(out, macs, 12);
	off = 12;
	if (vlan) {
		out[off++] = 0x81;
		out[off++] = 0x00;
		out[off++] = 0;
		out[off++] = 5;
	}
	out[off++] = outer_af == LB_AF_INET ? 0x08 : 0x86;
	out[off++] = outer_af == LB_AF_INET ? 0x00 : 0xDD;
	uint16_t l4 = (uint16_t)(inner + (gue ? 8 : 0));
	uint8_t proto = gue ? 17 : inner_v == 4 ? 4 : 41;
	if (outer_af == LB_AF_INET) {
		uint8_t *ip = out + off;
		memset(ip, 0, 20);
		ip[0] = 0x45;
		ip[2] = (uint8_t)((20 + l4) >> 8);
		ip[3] = (uint8_t)(20 + l4);
		ip[6] = 0x40;
		ip[8] = 64;
		ip[9] = proto;
		inet_pton(AF_INET, "10.0.0.1", ip + 12);
		inet_pton(AF_INET, backend, ip + 16);
		off += 20;
	} else {
		uint8_t *ip = out + off;
		memset(ip, 0, 40);
		ip[0] = 0x60;
		ip[4] = (uint8_t)(l4 >> 8);
		ip[5] = (uint8_t)l4;
		ip[6] = proto;
		ip[7] = 64;
		inet_pton(AF_INET6, "fd00::1", ip + 8);
		inet_pton(AF_INET6, backend, ip + 24);
		off += 40;
	}
	if (gue) {
		uint8_t *u = out + off;
		u[0] = 0xC0;
		u[1] = 0x01;
		u[2] = (uint8_t)(gue_port >> 8);
		u[3] = (uint8_t)gue_port;
		u[4] = (uint8_t)(l4 >> 8);
		u[5] = (uint8_t)l4;
		u[6] = u[7] = 0;
		off += 8;
	}
	memcpy(out + off, in + 14, inner);
	return (uint16_t)(off + inner);
}

struct dcase {
	uint8_t inner_af, proto, outer_af;
	int gue, vlan;
	const char *backend;
};

static const struct dcase dcases[] = {
        {LB_AF_INET, SG_PROTO_UDP, LB_AF_INET, 0, 0, "10.1.0.1"},
        {LB_AF_INET, SG_PROTO_TCP, LB_AF_INET, 1, 0, "10.1.0.2"},
        {LB_AF_INET6, SG_PROTO_UDP, LB_AF_INET6, 0, 0, "fd00:1::1"},
        {LB_AF_INET6, SG_PROTO_TCP, LB_AF_INET6, 1, 1, "fd00:1::2"},
        {LB_AF_INET, SG_PROTO_UDP, LB_AF_INET6, 0, 0, "fd00:1::3"},
        {LB_AF_INET6, SG_PROTO_UDP, LB_AF_INET, 1, 1, "10.1.0.9"},
};

static void
test_spillgen_pkt_decode_encapsulated(void **state)
{
	const struct dcase *c = *state;
	struct sg_flow f;
	struct sg_stamp st = {.flow = 42, .seq = 0xdeadbeef, .tsc = 987654321};
	struct sg_decoded d;
	uint8_t in[200], out[300];
	union lb_ip be;
	uint16_t len = sg_pkt_min_len(c->inner_af, c->proto);

	flow(&f, c->inner_af, c->proto);
	sg_pkt_write(in, len, macs, &f, &st, 1, SG_TCP_SYN);
	uint16_t n = encap(out, in, len, c->outer_af, c->gue, c->backend, 6080, c->vlan);
	memset(&d, 0, sizeof(d));
	assert_int_equal(sg_pkt_decode(out, n, 6080, &d), SG_DEC_OK);
	memset(&be, 0, sizeof(be));
	inet_pton(c->outer_af == LB_AF_INET ? AF_INET : AF_INET6, c->backend, be.b);
	assert_memory_equal(d.backend.b, be.b, 16);
	assert_int_equal(d.backend_af, c->outer_af);
	assert_int_equal(d.gue, c->gue);
	assert_int_equal(d.st.flow, 42);
	assert_int_equal(d.st.seq, 0xdeadbeef);
	assert_true(d.st.tsc == 987654321);
	assert_int_equal(d.inner.sport, 40001);
	assert_int_equal(d.inner.dport, 80);
	assert_int_equal(d.inner.proto, c->proto);
	assert_memory_equal(d.inner.src.b, f.src.b, 16);
	assert_memory_equal(d.inner.dst.b, f.dst.b, 16);
	/* Every truncation is caught, never read past the end. */
	for (uint16_t k = 0; k < n; k++)
		assert_int_not_equal(sg_pkt_decode(out, k, 6080, &d), SG_DEC_OK);
	/* GUE on another port is not ours. */
	if (c->gue)
		assert_int_equal(sg_pkt_decode(out, n, 6081, &d), SG_DEC_NOT_ENCAP);
}

static void
test_spillgen_pkt_decode_rejects(void **state)
{
	(void)state;
	struct sg_flow f;
	struct sg_stamp st = {.flow = 1, .seq = 2, .tsc = 3};
	struct sg_decoded d;
	uint8_t in[100], out[200];
	uint16_t len = sg_pkt_min_len(LB_AF_INET, SG_PROTO_UDP);

	flow(&f, LB_AF_INET, SG_PROTO_UDP);
	sg_pkt_write(in, len, macs, &f, &st, 0, 0);
	/* The plain generated frame is not encapsulated. */
	assert_int_equal(sg_pkt_decode(in, len, 6080, &d), SG_DEC_NOT_ENCAP);
	uint16_t n = encap(out, in, len, LB_AF_INET, 0, "10.1.0.1", 6080, 0);
	out[n - SG_STAMP_LEN] ^= 0xff; /* break the magic */
	assert_int_equal(sg_pkt_decode(out, n, 6080, &d), SG_DEC_NO_STAMP);
	out[12] = 0x08;
	out[13] = 0x06; /* ARP */
	assert_int_equal(sg_pkt_decode(out, n, 6080, &d), SG_DEC_NOT_ENCAP);
}

static void
test_spillgen_pkt_gen_sizes_and_tcp(void **state)
{
	(void)state;
	static struct sg_opts o;
	struct sg_gen g;
	uint8_t buf[1600], src[6] = {2, 0, 0, 0, 0, 9};
	char *argv[] = {"spillgen", "--vip", "192.0.2.10:80/tcp", "-f", "10", "-S", "imix", NULL};

	assert_int_equal(sg_opts_parse(&o, 7, argv), 0);
	assert_int_equal(sg_gen_init(&g, &o, src), 0);
	uint64_t sizes[3] = {0};
	for (int i = 0; i < 12000; i++) {
		uint16_t len = sg_gen_write(&g, 3, buf, 0);
		sizes[len == 72 ? 0 : len == 566 ? 1 : len == 1514 ? 2 : 0]++;
		assert_true(len == 72 || len == 566 ||
		            len == 1514); /* 60 grows to 72 for IPv4/TCP */
		assert_int_equal(buf[14 + 20 + 13], i == 0 ? SG_TCP_SYN : SG_TCP_PSH_ACK);
		assert_int_equal(l4_check(buf, len, LB_AF_INET, SG_PROTO_TCP), 0);
	}
	/* 7:4:1 */
	assert_true(sizes[0] > 6500 && sizes[0] < 7500);
	assert_true(sizes[1] > 3600 && sizes[1] < 4400);
	assert_true(sizes[2] > 800 && sizes[2] < 1200);
	assert_int_equal(g.seq[3], 12000);
	sg_gen_free(&g);
}

int
main(void)
{
	struct CMUnitTest t[32];
	size_t k = 0;

	for (size_t i = 0; i < sizeof(bcases) / sizeof(bcases[0]); i++) {
		struct CMUnitTest u = cmocka_unit_test_prestate(test_spillgen_pkt_build_checksums,
		                                                (void *)&bcases[i]);
		t[k++] = u;
	}
	for (size_t i = 0; i < sizeof(dcases) / sizeof(dcases[0]); i++) {
		struct CMUnitTest u = cmocka_unit_test_prestate(
		        test_spillgen_pkt_decode_encapsulated, (void *)&dcases[i]);
		t[k++] = u;
	}
	t[k++] = (struct CMUnitTest)cmocka_unit_test(test_spillgen_pkt_decode_rejects);
	t[k++] = (struct CMUnitTest)cmocka_unit_test(test_spillgen_pkt_gen_sizes_and_tcp);
	return _cmocka_run_group_tests("spillgen_pkt", t, k, NULL, NULL);
}
