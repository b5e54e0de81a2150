/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the lb_parse() tests (test_parse*.c) share: frames built byte by byte
 * (the addresses and ports every row expects, header builders, the sample
 * frames that the truncation sweeps reuse), and the table row with its runner,
 * which parses each row's frame from a heap block of exactly its size.
 */
#ifndef SPW_TEST_PARSE_FIXTURE_H
#define SPW_TEST_PARSE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dataplane/hash.h"
#include "dataplane/parse.h"

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
extern const uint8_t client4[4];
extern const uint8_t vip4[4];
extern const uint8_t router4[4];
extern const uint8_t client6[16];
extern const uint8_t vip6[16];
extern const uint8_t router6[16];

struct pkt {
	uint8_t b[PKT_MAX];
	uint32_t len;
};

/* Byte builders. */

/* Append n bytes of src; append one byte, a 16-bit or 32-bit big-endian value. */
void put(struct pkt *p, const void *src, size_t n);
void put8(struct pkt *p, uint8_t v);
void put16(struct pkt *p, uint16_t v);
void put32(struct pkt *p, uint32_t v);

/* Append n bytes of value v. */
void fill(struct pkt *p, size_t n, uint8_t v);

/* Store v big-endian at at. */
void set16(uint8_t *at, uint16_t v);

/* The Internet checksum (RFC 1071). */
uint16_t inet_csum(const uint8_t *b, size_t n);

/* An Ethernet header between two fixed MACs with the given ethertype. */
void eth(struct pkt *p, uint16_t type);

/* One VLAN tag after an ethertype that announced it. */
void vlan(struct pkt *p, uint16_t vid, uint16_t type);

/* An IPv4 header with opt_len bytes of options; returns its offset. */
uint32_t ip4(struct pkt *p, uint8_t proto, const uint8_t *src, const uint8_t *dst, uint16_t frag,
             uint8_t tos, unsigned int opt_len);

/* Set an IPv4 header's total length and recompute its checksum. */
void ip4_set_len(uint8_t *ip, uint16_t tot);

/* The IPv4 packet at offset at ends at the end of what has been built. */
void ip4_done(struct pkt *p, uint32_t at);

/* An IPv6 header with next header nh and traffic class tc; returns its offset. */
uint32_t ip6(struct pkt *p, uint8_t nh, const uint8_t *src, const uint8_t *dst, uint8_t tc);

/* The IPv6 packet at offset at ends at the end of what has been built. */
void ip6_done(struct pkt *p, uint32_t at);

/* Hop-by-hop or destination options of units * 8 bytes, padded with PadN. */
void ip6_opts(struct pkt *p, uint8_t nh, unsigned int units);

/* A segment routing header with no segments left, units * 8 bytes. */
void ip6_routing(struct pkt *p, uint8_t nh, unsigned int units);

/* A fragment header: offset in 8-byte units, more = M flag. */
void ip6_frag(struct pkt *p, uint8_t nh, uint16_t offset_units, int more);

/* A TCP header whose data offset field says doff, with opt_len option bytes. */
void tcp_raw(struct pkt *p, uint16_t sport, uint16_t dport, uint8_t doff, unsigned int opt_len);

/* A SYN with opt_len bytes of NOP options and the data offset that says so. */
void tcp(struct pkt *p, uint16_t sport, uint16_t dport, unsigned int opt_len);

/* A UDP header and payload bytes of 0xAB. */
void udp(struct pkt *p, uint16_t sport, uint16_t dport, uint16_t payload);

/* An ICMP or ICMPv6 header; rest is the second word (MTU, pointer, unused). */
uint32_t icmp(struct pkt *p, uint8_t type, uint8_t code, uint32_t rest);

/* The ICMP checksum over what has been built from offset at. */
void icmp4_done(struct pkt *p, uint32_t at);

/*
 * Sample frames used by more than one program, client to VIP. IPv4 TCP with
 * options and data; IPv4 UDP; QinQ with an 802.1ad outer tag, TCP with
 * options; IPv6 TCP; IPv6 hop-by-hop, routing, destination options, UDP; an
 * IPv6 first fragment with destination options after the fragment header.
 */
void b_ip4_tcp(struct pkt *p);
void b_ip4_udp(struct pkt *p);
void b_qinq(struct pkt *p);
void b_ip6_tcp(struct pkt *p);
void b_ip6_ext(struct pkt *p);
void b_ip6_frag_first_dstopts(struct pkt *p);

/*
 * ICMP fragmentation needed from a router to the VIP, quoting the backend's
 * TCP packet from the VIP to the client (with IP options, cut after 8 bytes of
 * TCP as routers do). Also a truncation sample.
 */
void b_icmp_frag_needed(struct pkt *p);

/*
 * ICMPv6 packet too big quoting the backend's UDP packet from the VIP, which
 * carried a destination options header. Also a truncation sample.
 */
void b_icmp6_too_big(struct pkt *p);

/* --- the table ----------------------------------------------------------- */

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
#define LATER LB_PKT_FRAG_LATER /* a fragment other than the first */
#define ICMPERR LB_PKT_ICMP_ERROR
#define DF LB_PKT_DF

/* A row that only checks the return code. */
#define DROP(name, build, rc)                                                                      \
	{                                                                                          \
		name, build, rc, 0, 0, 0, 0, 0, 0, 0, 0                                            \
	}

/* Parse len bytes from an odd address in a heap block that ends right there. */
int parse_heap(const uint8_t *src, uint32_t len, struct lb_pkt_info *info);

/*
 * Fill tests[0..n) with one cmocka test per row of cases (parse the row's
 * frame, check its return code and, when OK, everything it fills in), each
 * named after its row so that a failure says which. Returns n.
 */
size_t parse_case_tests(struct CMUnitTest *tests, const struct parse_case *cases, size_t n);

#endif /* SPW_TEST_PARSE_FIXTURE_H */
