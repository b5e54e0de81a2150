/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the XDP steering program, run in the kernel through BPF_PROG_TEST_RUN
 * (bpf_prog_test_run_opts) on frames built byte by byte: a table of frames with the verdict and
 * counter each must produce (each row its own cmocka test), truncation sweeps, map updates, and the
 * XDP_PASS fallback of bpf_redirect_map() with an empty xsks_map. Needs root; exits 77 (skip) when
 * the kernel refuses to load the program.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "bpf/xsk_steer_loader.h"

#define PKT_MAX 512
#define SKIP_RC 77
#define ETH_HLEN 14 /* BPF_PROG_TEST_RUN refuses XDP input shorter than this */

#define ETH_IPV4 0x0800
#define ETH_IPV6 0x86DD
#define ETH_ARP 0x0806
#define ETH_VLAN 0x8100
#define ETH_QINQ 0x88A8

#define IP_ICMP 1
#define IP_TCP 6
#define IP_UDP 17
#define IP_FRAGMENT 44
#define IP_ICMPV6 58
#define IP_DSTOPTS 60

enum frag { NOFRAG, FRAG_FIRST, FRAG_LATER };

static const uint8_t client4[4] = {198, 51, 100, 7};
static const uint8_t vip4[4] = {203, 0, 113, 10};     /* TCP 443, UDP 53 */
static const uint8_t anyport4[4] = {203, 0, 113, 20}; /* TCP, every port */
static const uint8_t host4[4] = {192, 0, 2, 1};       /* the host's own address */
static const uint8_t client6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x07};
static const uint8_t vip6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};
static const uint8_t anyport6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20};
static const uint8_t host6[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};

/* Program handles: one in test mode (verdict without XSK), one as deployed. */
static struct lb_xsk_steer *g_test;
static struct lb_xsk_steer *g_real;

struct pkt {
	uint8_t b[PKT_MAX];
	uint32_t len;
};

static void
put(struct pkt *p, const void *src, size_t n)
{
	assert_true(p->len + n <= PKT_MAX);
	memcpy(p->b + p->len, src, n);
	p->len += n;
}

static void
put8(struct pkt *p, uint8_t v)
{
	put(p, &v, 1);
}

static void
put16(struct pkt *p, uint16_t v)
{
	uint16_t be = htons(v);

	put(p, &be, 2);
}

static void
put_zero(struct pkt *p, size_t n)
{
	assert_true(p->len + n <= PKT_MAX);
	memset(p->b + p->len, 0, n);
	p->len += n;
}

/* Ethernet header, then `vlans` tags (the outer one 802.1ad when there are two). */
static void
put_eth(struct pkt *p, int vlans, uint16_t type)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x01};
	static const uint8_t smac[6] = {0x02, 0, 0, 0, 0, 0x02};

	put(p, dmac, 6);
	put(p, smac, 6);
	for (int i = 0; i < vlans; i++) {
		put16(p, (vlans == 2 && i == 0) ? ETH_QINQ : ETH_VLAN);
		put16(p, (uint16_t)(100 + i));
	}
	put16(p, type);
}

static void
put_l4(struct pkt *p, uint8_t proto, uint16_t dport)
{
	if (proto == IP_TCP) {
		put16(p, 40000);
		put16(p, dport);
		put_zero(p, 8);
		put8(p, 5 << 4); /* data offset 5 words */
		put8(p, 0x02);   /* SYN */
		put16(p, 65535);
		put_zero(p, 4);
	} else if (proto == IP_UDP) {
		put16(p, 40000);
		put16(p, dport);
		put16(p, 8);
		put16(p, 0);
	} else { /* ICMP / ICMPv6: type 128/135 or 8, code, checksum, rest */
		put8(p, (uint8_t)dport);
		put_zero(p, 7);
	}
}

static void
build4(struct pkt *p, int vlans, const uint8_t *dst, uint8_t proto, uint16_t dport, enum frag frag)
{
	uint16_t fo = frag == FRAG_FIRST ? 0x2000 : frag == FRAG_LATER ? 185 : 0x4000;

	p->len = 0;
	put_eth(p, vlans, ETH_IPV4);
	put8(p, 0x45);
	put8(p, 0);
	put16(p, 20 + (proto == IP_TCP ? 20 : 8));
	put16(p, 1);
	put16(p, fo);
	put8(p, 64);
	put8(p, proto);
	put16(p, 0);
	put(p, client4, 4);
	put(p, dst, 4);
	if (frag != FRAG_LATER)
		put_l4(p, proto, dport);
	else
		put_zero(p, 8);
}

/* ndst: destination options headers before the upper layer (or the fragment header). */
static void
build6(struct pkt *p, int vlans, const uint8_t *dst, uint8_t proto, uint16_t dport, enum frag frag,
       int ndst)
{
	uint8_t first = frag != NOFRAG ? IP_FRAGMENT : proto;

	p->len = 0;
	put_eth(p, vlans, ETH_IPV6);
	put8(p, 0x60);
	put_zero(p, 3);
	put16(p, 0); /* payload length: not checked by the program */
	put8(p, ndst ? IP_DSTOPTS : first);
	put8(p, 64);
	put(p, client6, 16);
	put(p, dst, 16);
	for (int i = 0; i < ndst; i++) {
		put8(p, i + 1 < ndst ? IP_DSTOPTS : first);
		put8(p, 0); /* 8 bytes */
		put8(p, 1); /* PadN over the remaining 6 bytes */
		put8(p, 4);
		put_zero(p, 4);
	}
	if (frag != NOFRAG) {
		put8(p, proto);
		put8(p, 0);
		put16(p, frag == FRAG_FIRST ? 0x0001 : (uint16_t)(185 << 3));
		put_zero(p, 4);
	}
	if (frag != FRAG_LATER)
		put_l4(p, proto, dport);
	else
		put_zero(p, 8);
}

static void
build_arp(struct pkt *p, int vlans)
{
	p->len = 0;
	put_eth(p, vlans, ETH_ARP);
	put16(p, 1);
	put16(p, ETH_IPV4);
	put8(p, 6);
	put8(p, 4);
	put16(p, 1);
	put_zero(p, 6);
	put(p, client4, 4);
	put_zero(p, 6);
	put(p, vip4, 4);
}

static int
run_fd(int prog_fd, const struct pkt *p, uint32_t len, uint32_t *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b, .data_size_in = len, .repeat = 1);
	int err = bpf_prog_test_run_opts(prog_fd, &o);

	if (err)
		return -errno;
	*retval = o.retval;
	return 0;
}

static void
counters(struct lb_xsk_steer *s, uint64_t out[LB_XSK_CNT_MAX])
{
	assert_int_equal(lb_xsk_counters_read(lb_xsk_steer_stats_map_fd(s), out), 0);
}

/* Runs p and checks the verdict and that exactly counter `cnt` went up by one. */
static void
expect(struct lb_xsk_steer *s, const struct pkt *p, uint32_t len, uint32_t verdict, int cnt)
{
	uint64_t before[LB_XSK_CNT_MAX], after[LB_XSK_CNT_MAX];
	uint32_t ret = ~0u;

	counters(s, before);
	assert_int_equal(run_fd(lb_xsk_steer_prog_fd(s), p, len, &ret), 0);
	assert_int_equal(ret, verdict);
	counters(s, after);
	for (int i = 0; i < LB_XSK_CNT_MAX; i++) {
		if (after[i] - before[i] != (uint64_t)(i == cnt)) {
			fprintf(stderr, "counter %d: %llu -> %llu (expected counter %d)\n", i,
			        (unsigned long long)before[i], (unsigned long long)after[i], cnt);
			fail();
		}
	}
}

static void
vip(struct lb_xsk_steer *s, bool add, int family, const void *addr, uint8_t proto, uint16_t port)
{
	struct lb_xsk_vip_key key;
	int fd = lb_xsk_steer_vip_map_fd(s);

	assert_int_equal(lb_xsk_vip_key_make(&key, family, addr, proto, htons(port)), 0);
	if (add)
		assert_int_equal(lb_xsk_vip_add(fd, &key, 1), 0);
	else
		assert_int_equal(lb_xsk_vip_remove(fd, &key), 0);
}

static void
add_vips(struct lb_xsk_steer *s)
{
	vip(s, true, AF_INET, vip4, IP_TCP, 443);
	vip(s, true, AF_INET, vip4, IP_UDP, 53);
	vip(s, true, AF_INET, anyport4, IP_TCP, 0);
	vip(s, true, AF_INET6, vip6, IP_TCP, 443);
	vip(s, true, AF_INET6, vip6, IP_UDP, 53);
	vip(s, true, AF_INET6, anyport6, IP_UDP, 0);
}

/* The frame table. */

enum kind { K4, K6, KARP };

struct xcase {
	const char *name;
	enum kind kind;
	int vlans;
	const uint8_t *dst;
	uint8_t proto;
	uint16_t dport;
	enum frag frag;
	int ndst;
	uint32_t verdict;
	int cnt;
};

#define REDIR XDP_REDIRECT, LB_XSK_CNT_REDIRECT
#define PASS(c) XDP_PASS, LB_XSK_CNT_PASS_##c

static const struct xcase cases[] = {
        {"v4_tcp_vip", K4, 0, vip4, IP_TCP, 443, NOFRAG, 0, REDIR},
        {"v4_udp_vip", K4, 0, vip4, IP_UDP, 53, NOFRAG, 0, REDIR},
        {"v6_tcp_vip", K6, 0, vip6, IP_TCP, 443, NOFRAG, 0, REDIR},
        {"v6_udp_vip", K6, 0, vip6, IP_UDP, 53, NOFRAG, 0, REDIR},
        {"v4_tcp_vlan", K4, 1, vip4, IP_TCP, 443, NOFRAG, 0, REDIR},
        {"v4_tcp_qinq", K4, 2, vip4, IP_TCP, 443, NOFRAG, 0, REDIR},
        {"v6_udp_qinq", K6, 2, vip6, IP_UDP, 53, NOFRAG, 0, REDIR},
        {"v4_anyport_vip", K4, 0, anyport4, IP_TCP, 8080, NOFRAG, 0, REDIR},
        {"v6_anyport_vip", K6, 0, anyport6, IP_UDP, 9, NOFRAG, 0, REDIR},
        {"v6_ext_headers", K6, 0, vip6, IP_TCP, 443, NOFRAG, 3, REDIR},
        {"v6_ext_headers_8", K6, 0, vip6, IP_TCP, 443, NOFRAG, 8, REDIR},
        {"v6_ext_headers_too_many", K6, 0, vip6, IP_TCP, 443, NOFRAG, 9, PASS(MALFORMED)},
        {"v4_anyport_frag_first", K4, 0, anyport4, IP_TCP, 80, FRAG_FIRST, 0, REDIR},
        {"v4_anyport_frag_later", K4, 0, anyport4, IP_TCP, 80, FRAG_LATER, 0, REDIR},
        {"v6_anyport_frag_later", K6, 0, anyport6, IP_UDP, 80, FRAG_LATER, 1, REDIR},
        {"v4_port_vip_frag", K4, 0, vip4, IP_TCP, 443, FRAG_FIRST, 0, PASS(FRAGMENT)},
        {"v4_nonvip_frag", K4, 0, host4, IP_UDP, 53, FRAG_LATER, 0, PASS(FRAGMENT)},
        {"v6_nonvip_frag", K6, 0, host6, IP_UDP, 53, FRAG_FIRST, 0, PASS(FRAGMENT)},
        {"v4_vip_other_port", K4, 0, vip4, IP_TCP, 22, NOFRAG, 0, PASS(NOT_VIP)},
        {"v4_vip_other_proto", K4, 0, vip4, IP_UDP, 443, NOFRAG, 0, PASS(NOT_VIP)},
        {"v4_anyport_other_proto", K4, 0, anyport4, IP_UDP, 80, NOFRAG, 0, PASS(NOT_VIP)},
        {"v4_host_ssh", K4, 0, host4, IP_TCP, 22, NOFRAG, 0, PASS(NOT_VIP)},
        {"v6_host_ssh", K6, 1, host6, IP_TCP, 22, NOFRAG, 0, PASS(NOT_VIP)},
        {"v4_icmp_to_vip", K4, 0, vip4, IP_ICMP, 8, NOFRAG, 0, PASS(NOT_L4)},
        {"v6_nd_to_vip", K6, 0, vip6, IP_ICMPV6, 135, NOFRAG, 0, PASS(NOT_L4)},
        {"v6_echo_to_vip", K6, 0, vip6, IP_ICMPV6, 128, NOFRAG, 0, PASS(NOT_L4)},
        {"arp", KARP, 0, NULL, 0, 0, NOFRAG, 0, PASS(NOT_IP)},
        {"arp_vlan", KARP, 1, NULL, 0, 0, NOFRAG, 0, PASS(NOT_IP)},
};

static void
build_case(struct pkt *p, const struct xcase *c)
{
	if (c->kind == K4)
		build4(p, c->vlans, c->dst, c->proto, c->dport, c->frag);
	else if (c->kind == K6)
		build6(p, c->vlans, c->dst, c->proto, c->dport, c->frag, c->ndst);
	else
		build_arp(p, c->vlans);
}

static void
test_xsk_steer_case(void **state)
{
	const struct xcase *c = *state;
	struct pkt p;

	build_case(&p, c);
	expect(g_test, &p, p.len, c->verdict, c->cnt);
}

/* Every cut of each VIP sample from ETH_HLEN up passes as malformed. */
static void
test_xsk_steer_truncated(void **state)
{
	static const int samples[] = {0, 1, 2, 3, 5, 6, 9};
	struct pkt p;

	(void)state;
	for (size_t s = 0; s < sizeof(samples) / sizeof(samples[0]); s++) {
		build_case(&p, &cases[samples[s]]);
		for (uint32_t len = ETH_HLEN; len < p.len; len++)
			expect(g_test, &p, len, XDP_PASS, LB_XSK_CNT_PASS_MALFORMED);
		expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	}
}

/*
 * An ICMP error a router sends to a VIP about a backend's reply (source VIP:vport, quoted with at
 * least its ports): type/code, then the quoted header. quoted_l4 bytes of the quoted L4 header are
 * kept (the source port first). later: the quoted packet is a later fragment.
 */
static void
build_icmp_err(struct pkt *p, bool v6, uint8_t type, const uint8_t *vipa, uint8_t proto,
               uint16_t vport, int quoted_l4, bool later)
{
	uint8_t l4[8] = {0};

	l4[0] = (uint8_t)(vport >> 8), l4[1] = (uint8_t)vport;
	l4[2] = 0x9c, l4[3] = 0x40; /* client port 40000 */
	p->len = 0;
	if (!v6) {
		put_eth(p, 0, ETH_IPV4);
		put8(p, 0x45);
		put8(p, 0);
		put16(p, (uint16_t)(20 + 8 + 20 + quoted_l4));
		put16(p, 1);
		put16(p, 0x4000);
		put8(p, 64);
		put8(p, IP_ICMP);
		put16(p, 0);
		put(p, client4, 4); /* a router on the way back */
		put(p, vipa, 4);
		put8(p, type);
		put8(p, 4); /* fragmentation needed */
		put_zero(p, 4);
		put16(p, 1400);
		put8(p, 0x45);
		put8(p, 0);
		put16(p, 1500);
		put16(p, 2);
		put16(p, later ? 185 : 0x4000);
		put8(p, 63);
		put8(p, proto);
		put16(p, 0);
		put(p, vipa, 4);
		put(p, client4, 4);
	} else {
		put_eth(p, 0, ETH_IPV6);
		put8(p, 0x60);
		put_zero(p, 3);
		put16(p, 0);
		put8(p, IP_ICMPV6);
		put8(p, 64);
		put(p, client6, 16);
		put(p, vipa, 16);
		put8(p, type);
		put8(p, 0);
		put_zero(p, 2);
		put16(p, 0);
		put16(p, 1400);
		put8(p, 0x60);
		put_zero(p, 3);
		put16(p, 1440);
		put8(p, later ? IP_FRAGMENT : proto);
		put8(p, 63);
		put(p, vipa, 16);
		put(p, client6, 16);
		if (later) {
			put8(p, proto);
			put8(p, 0);
			put16(p, (uint16_t)(185 << 3));
			put_zero(p, 4);
		}
	}
	if (!later)
		put(p, l4, (size_t)quoted_l4);
	/* The outer IPv6 payload length: everything after the fixed header. */
	if (v6) {
		p->b[ETH_HLEN + 4] = (uint8_t)((p->len - ETH_HLEN - 40) >> 8);
		p->b[ETH_HLEN + 5] = (uint8_t)(p->len - ETH_HLEN - 40);
	}
}

/*
 * ICMP errors about a VIP's flow (fragmentation needed, time exceeded, packet too big) go to
 * spillway, which finds the flow through the quoted header; others (echo, errors about another
 * port, cut-short quotes) stay with the kernel.
 */
static void
test_xsk_steer_icmp_errors(void **state)
{
	struct pkt p;

	(void)state;
	build_icmp_err(&p, false, 3, vip4, IP_TCP, 443, 8, false);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build_icmp_err(&p, false, 11, vip4, IP_UDP, 53, 4, false);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build_icmp_err(&p, false, 12, anyport4, IP_TCP, 9999, 8, false);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build_icmp_err(&p, false, 3, vip4, IP_TCP, 444, 8, false); /* not a VIP port */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_L4);
	build_icmp_err(&p, false, 3, host4, IP_TCP, 22, 8, false); /* the host's own flow */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_L4);
	build_icmp_err(&p, false, 5, vip4, IP_TCP, 443, 8, false); /* redirect: not an error */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_L4);
	build_icmp_err(&p, false, 3, vip4, IP_TCP, 443, 3, false); /* ports cut short */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_L4);
	build_icmp_err(&p, false, 3, vip4, IP_TCP, 443, 8,
	               true); /* later fragment: no port-0 entry */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_L4);
	build_icmp_err(&p, false, 3, anyport4, IP_TCP, 0, 0, true);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);

	build_icmp_err(&p, true, 2, vip6, IP_TCP, 443, 8, false); /* packet too big */
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build_icmp_err(&p, true, 1, vip6, IP_UDP, 53, 4, false);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build_icmp_err(&p, true, 2, vip6, IP_TCP, 444, 8, false);
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_L4);
	build_icmp_err(&p, true, 2, anyport6, IP_UDP, 0, 0, true);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build_icmp_err(&p, true, 129, vip6, IP_TCP, 443, 8, false); /* echo reply */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_L4);

	/* Ports past the outer IP packet's end (in Ethernet padding) are not quoted. */
	for (int v6 = 0; v6 < 2; v6++) {
		uint32_t at = ETH_HLEN + (v6 ? 4 : 2), l3;

		build_icmp_err(&p, v6, v6 ? 2 : 3, v6 ? vip6 : vip4, IP_TCP, 443, 8, false);
		l3 = (uint32_t)(p.b[at] << 8 | p.b[at + 1]);
		p.b[at] = (uint8_t)((l3 - 6) >> 8);
		p.b[at + 1] = (uint8_t)(l3 - 6);
		expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_L4);
	}

	/* Cut at every length: never a redirect until the quoted ports are whole. */
	for (int v6 = 0; v6 < 2; v6++) {
		uint32_t ip_end = ETH_HLEN + (v6 ? 40 : 20);

		build_icmp_err(&p, v6, v6 ? 2 : 3, v6 ? vip6 : vip4, IP_TCP, 443, 8, false);
		for (uint32_t len = ETH_HLEN; len < p.len - 4; len++)
			expect(g_test, &p, len, XDP_PASS,
			       len < ip_end ? LB_XSK_CNT_PASS_MALFORMED : LB_XSK_CNT_PASS_NOT_L4);
		for (uint32_t len = p.len - 4; len <= p.len; len++)
			expect(g_test, &p, len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	}
}

/* A bad IPv4 header length or IP version is malformed, not a VIP. */
static void
test_xsk_steer_bad_ip_header(void **state)
{
	struct pkt p;

	(void)state;
	build4(&p, 0, vip4, IP_TCP, 443, NOFRAG);
	p.b[ETH_HLEN] = 0x44; /* IHL 4 */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_MALFORMED);
	p.b[ETH_HLEN] = 0x4f; /* IHL 15: past the end */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_MALFORMED);
	p.b[ETH_HLEN] = 0x65; /* version 6 under an IPv4 EtherType */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_MALFORMED);
}

/* Adding and removing a VIP takes effect on the next packet. */
static void
test_xsk_steer_map_update(void **state)
{
	static const uint8_t new4[4] = {203, 0, 113, 99};
	struct pkt p;

	(void)state;
	build4(&p, 0, new4, IP_UDP, 4500, NOFRAG);
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_VIP);
	vip(g_test, true, AF_INET, new4, IP_UDP, 4500);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	vip(g_test, false, AF_INET, new4, IP_UDP, 4500);
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_VIP);

	/* A port-agnostic entry next to a port one: removing the port one keeps the address. */
	vip(g_test, true, AF_INET, new4, IP_UDP, 0);
	vip(g_test, true, AF_INET, new4, IP_UDP, 4500);
	vip(g_test, false, AF_INET, new4, IP_UDP, 4500);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	vip(g_test, false, AF_INET, new4, IP_UDP, 0);
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_VIP);
}

/*
 * A fragments-only entry (port 0, LB_XSK_VIP_FRAG_ONLY), as spillwayd adds for an address with
 * port-specific VIPs only: first and later fragments to the address are steered; whole datagrams
 * to a port without a VIP are not; the port-specific VIP itself still is.
 */
static void
test_xsk_steer_frag_only_entry(void **state)
{
	static const uint8_t a4[4] = {203, 0, 113, 77};
	struct lb_xsk_vip_value fo = {.vip_id = 3, .flags = LB_XSK_VIP_FRAG_ONLY};
	struct lb_xsk_vip_key k;
	struct pkt p;
	int fd = lb_xsk_steer_vip_map_fd(g_test);

	(void)state;
	vip(g_test, true, AF_INET, a4, IP_TCP, 8080);
	build4(&p, 0, a4, IP_TCP, 8080, FRAG_FIRST);
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_FRAGMENT);
	assert_int_equal(lb_xsk_vip_key_make(&k, AF_INET, a4, IP_TCP, 0), 0);
	assert_int_equal(lb_xsk_vip_put(fd, &k, &fo), 0);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build4(&p, 0, a4, IP_TCP, 8080, FRAG_LATER);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build4(&p, 0, a4, IP_TCP, 8080, NOFRAG);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	build4(&p, 0, a4, IP_TCP, 22, NOFRAG);
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_VIP);
	build4(&p, 0, a4, IP_UDP, 8080, FRAG_FIRST); /* other protocol: no entry */
	expect(g_test, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_FRAGMENT);
	/* The same key as a port-agnostic VIP takes every port. */
	assert_int_equal(lb_xsk_vip_add(fd, &k, 3), 0);
	build4(&p, 0, a4, IP_TCP, 22, NOFRAG);
	expect(g_test, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	assert_int_equal(lb_xsk_vip_remove(fd, &k), 0);
	vip(g_test, false, AF_INET, a4, IP_TCP, 8080);
}

/* As deployed, a VIP packet with no socket on its queue falls back to the kernel. */
static void
test_xsk_steer_no_xsk_passes(void **state)
{
	struct pkt p;

	(void)state;
	build4(&p, 0, vip4, IP_TCP, 443, NOFRAG);
	expect(g_real, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NO_XSK);
	build6(&p, 1, vip6, IP_UDP, 53, NOFRAG, 0);
	expect(g_real, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NO_XSK);
	build4(&p, 0, host4, IP_TCP, 22, NOFRAG);
	expect(g_real, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_VIP);
}

/*
 * DPDK's af_xdp PMD loads the object and attaches it; spillwayd finds that copy's maps through the
 * interface. Here: attach a loaded copy to lo in a private network namespace (generic mode), find
 * its maps by ifindex, and check that a VIP added through them steers that copy. Also the refusals:
 * no program attached, a program that is not spillway's.
 */
static void
test_xsk_steer_maps_from_ifindex(void **state)
{
	struct lb_xsk_steer_opts o = {.test_mode = true};
	struct lb_xsk_steer *a;
	struct lb_xsk_maps m;
	struct lb_xsk_vip_key key;
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	struct pkt p;
	int lo;

	(void)state;
	if (unshare(CLONE_NEWNET))
		skip();
	lo = (int)if_nametoindex("lo");
	assert_true(lo > 0);
	assert_int_equal(lb_xsk_maps_from_ifindex(lo, &m), -ENOENT);
	assert_int_equal(m.vips_fd, -1);
	a = lb_xsk_steer_open(&o);
	assert_non_null(a);
	/* From the program fd: the same maps as the skeleton's. */
	assert_int_equal(lb_xsk_maps_from_prog(lb_xsk_steer_prog_fd(a), &m), 0);
	memset(&info, 0, sizeof(info));
	assert_int_equal(bpf_obj_get_info_by_fd(m.vips_fd, &info, &len), 0);
	{
		struct bpf_map_info x, y;
		uint32_t lx = sizeof(x), ly = sizeof(y);

		memset(&x, 0, sizeof(x));
		memset(&y, 0, sizeof(y));
		assert_int_equal(bpf_obj_get_info_by_fd(m.vips_fd, &x, &lx), 0);
		assert_int_equal(bpf_obj_get_info_by_fd(lb_xsk_steer_vip_map_fd(a), &y, &ly), 0);
		assert_int_equal(x.id, y.id);
		assert_int_equal(bpf_obj_get_info_by_fd(m.stats_fd, &x, &lx), 0);
		assert_int_equal(bpf_obj_get_info_by_fd(lb_xsk_steer_stats_map_fd(a), &y, &ly), 0);
		assert_int_equal(x.id, y.id);
	}
	lb_xsk_maps_close(&m);
	assert_int_equal(m.vips_fd, -1);
	/* Attached to lo: found by ifindex, and a VIP added through it steers. */
	assert_int_equal(bpf_xdp_attach(lo, lb_xsk_steer_prog_fd(a), XDP_FLAGS_SKB_MODE, NULL), 0);
	assert_int_equal(lb_xsk_maps_from_ifindex(lo, &m), 0);
	assert_int_equal(lb_xsk_vip_key_make(&key, AF_INET, host4, IP_TCP, htons(8443)), 0);
	assert_int_equal(lb_xsk_vip_add(m.vips_fd, &key, 7), 0);
	build4(&p, 0, host4, IP_TCP, 8443, NOFRAG);
	expect(a, &p, p.len, XDP_REDIRECT, LB_XSK_CNT_REDIRECT);
	assert_int_equal(lb_xsk_vip_remove(m.vips_fd, &key), 0);
	expect(a, &p, p.len, XDP_PASS, LB_XSK_CNT_PASS_NOT_VIP);
	lb_xsk_maps_close(&m);
	assert_int_equal(bpf_xdp_detach(lo, XDP_FLAGS_SKB_MODE, NULL), 0);
	assert_int_equal(lb_xsk_maps_from_ifindex(lo, &m), -ENOENT);
	lb_xsk_steer_close(a);
}

/* A program that is not the steering program (an XDP_PASS stub) is refused with -EPROTO. */
static void
test_xsk_steer_maps_foreign_prog(void **state)
{
	struct bpf_insn insns[] = {
	        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_PASS},
	        {.code = BPF_JMP | BPF_EXIT},
	};
	struct lb_xsk_maps m;
	int fd;

	(void)state;
	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "other", "GPL", insns, 2, NULL);
	if (fd < 0)
		skip();
	assert_int_equal(lb_xsk_maps_from_prog(fd, &m), -EPROTO);
	assert_int_equal(m.vips_fd, -1);
	assert_int_equal(m.stats_fd, -1);
	close(fd);
}

/* Key construction and the API's argument checks (no kernel needed). */
static void
test_xsk_steer_key_and_path(void **state)
{
	struct lb_xsk_vip_key key;

	(void)state;
	assert_int_equal(sizeof(key), 20);
	assert_int_equal(lb_xsk_vip_key_make(&key, AF_INET, vip4, IP_TCP, htons(443)), 0);
	assert_int_equal(key.family, LB_XSK_AF_INET);
	assert_int_equal(key.port, htons(443));
	assert_memory_equal(key.addr, vip4, 4);
	for (int i = 4; i < 16; i++)
		assert_int_equal(key.addr[i], 0);
	assert_int_equal(lb_xsk_vip_key_make(&key, AF_INET, vip4, IP_ICMP, 0), -EINVAL);
	assert_int_equal(lb_xsk_vip_key_make(&key, AF_UNIX, vip4, IP_TCP, 0), -EINVAL);
	assert_int_equal(lb_xsk_vip_key_make(&key, AF_INET6, client6, IP_UDP, htons(1)), 0);
	assert_int_equal(lb_xsk_vip_remove(lb_xsk_steer_vip_map_fd(g_test), &key), -ENOENT);
	assert_non_null(lb_xsk_obj_path());
	assert_non_null(strstr(lb_xsk_obj_path(), "xsk_steer.bpf.o"));
}

int
main(void)
{
	struct lb_xsk_steer_opts topts = {.test_mode = true};
	struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0]) + 16];
	size_t n = 0;
	int rc;

	g_test = lb_xsk_steer_open(&topts);
	if (!g_test) {
		fprintf(stderr,
		        "SKIP: the kernel refused to load the XDP program (%s); needs root\n",
		        strerror(errno));
		return SKIP_RC;
	}
	g_real = lb_xsk_steer_open(NULL);
	if (!g_real) {
		fprintf(stderr, "second load failed: %s\n", strerror(errno));
		lb_xsk_steer_close(g_test);
		return 1;
	}
	add_vips(g_test);
	add_vips(g_real);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct CMUnitTest t =
		        cmocka_unit_test_prestate(test_xsk_steer_case, (void *)&cases[i]);

		t.name = cases[i].name;
		tests[n++] = t;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_truncated);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_bad_ip_header);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_map_update);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_no_xsk_passes);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_frag_only_entry);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_icmp_errors);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_maps_foreign_prog);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_maps_from_ifindex);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_xsk_steer_key_and_path);

	rc = _cmocka_run_group_tests("xsk_steer", tests, n, NULL, NULL);
	lb_xsk_steer_close(g_real);
	lb_xsk_steer_close(g_test);
	return rc;
}
