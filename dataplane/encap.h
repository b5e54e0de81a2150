/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encapsulation toward backends (IPIP: 4in4, 6in6, 4in6, 6in4; GUE variant 1
 * over UDP, which Linux FOU decapsulates), and ICMP "fragmentation needed" /
 * "packet too big" answers for packets that no longer fit once encapsulated.
 *
 * Pure functions over byte buffers: the caller makes room in front of the
 * inner IP packet (rte_pktmbuf_prepend) and these write the headers there.
 */
#ifndef LB_ENCAP_H
#define LB_ENCAP_H

#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>

#include "dataplane/snapshot.h"

#define LB_ETH_HLEN 14
#define LB_IP4_HLEN 20
#define LB_IP6_HLEN 40
#define LB_UDP_HLEN 8
#define LB_ICMP_HLEN 8
#define LB_OUTER_TTL 64
#define LB_PROTO_IPIP 4  /* IPv4 in IP */
#define LB_PROTO_IPV6 41 /* IPv6 in IP */
#define LB_PROTO_UDP 17
/* Largest ICMP error we send: RFC 1812 4.3.2.3 (576) and RFC 4443 2.4 (1280). */
#define LB_ICMP4_MAX_LEN 576
#define LB_ICMP6_MAX_LEN 1280

/** L3 bytes the encapsulation adds (outer IP, plus UDP for GUE). */
static inline uint16_t
lb_encap_overhead(uint8_t outer_af, uint8_t encap)
{
	return (uint16_t)((outer_af == LB_AF_INET ? LB_IP4_HLEN : LB_IP6_HLEN) +
	                  (encap == LB_ENCAP_GUE ? LB_UDP_HLEN : 0));
}

/** GUE/FOU UDP source port from the flow hash: ephemeral range, so backends can RSS on it. */
static inline uint16_t
lb_encap_gue_sport(uint64_t flow_hash)
{
	return (uint16_t)(0xC000u | ((flow_hash >> 40) & 0x3FFFu));
}

/* Outer header pieces, inline for the per-packet path. */
static inline void
lb_encap_put_eth(uint8_t *p, const uint8_t dst[6], const uint8_t src[6], uint16_t ethertype)
{
	uint16_t et = rte_cpu_to_be_16(ethertype);

	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	memcpy(p + 12, &et, 2);
}

/*
 * The RFC 1071 checksum of a sum of 32-bit words taken in 64 bits (fewer than
 * 2^32 of them): the end-around carries folded down to 16 bits, complemented.
 * 2^32 and 2^16 are both 1 modulo 0xFFFF. The last fold is the rotate trick:
 * the high half of x + ror16(x) is hi + lo with the carry of lo + hi added back.
 */
static inline uint16_t
lb_cksum_fold32s(uint64_t sum)
{
	uint32_t x;

	sum = (sum & 0xFFFFFFFF) + (sum >> 32); /* < 2^33 */
	sum = (sum & 0xFFFFFFFF) + (sum >> 32); /* < 2^32 */
	x = (uint32_t)sum;
	x += (x >> 16) | (x << 16);
	return (uint16_t) ~(x >> 16);
}

/*
 * The outer IPv4 header from its words (w1: id and flags, w3: source, w4:
 * destination, as stored): DF, TTL 64, no options. It is composed as 32-bit
 * words in registers, summed in 64 bits and stored once. Building it field by
 * field in a stack struct and then checksumming that made every 32-bit load of
 * the sum wait on a failed store-to-load forward from the narrower field stores
 * (the hottest spot of encapsulation in the profile).
 */
static inline void
lb_encap_put_ip4w(uint8_t *p, uint8_t tos, uint16_t total_len, uint8_t proto, uint32_t w1,
                  uint32_t w3, uint32_t w4)
{
	/* Each word is stored on its own: copying an array of them made the
	 * compiler bounce it through the stack, with the same stall. */
	uint32_t w0 = rte_cpu_to_be_32(0x45000000u | (uint32_t)tos << 16 | total_len);
	uint32_t w2 = rte_cpu_to_be_32((uint32_t)LB_OUTER_TTL << 24 | (uint32_t)proto << 16);
	uint16_t ck = lb_cksum_fold32s((uint64_t)w0 + w1 + w2 + w3 + w4);

	/* The checksum is bytes 2-3 of word 2 (zero in w2). */
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
	w2 |= (uint32_t)ck << 16;
#else
	w2 |= ck;
#endif
	memcpy(p, &w0, 4);
	memcpy(p + 4, &w1, 4);
	memcpy(p + 8, &w2, 4);
	memcpy(p + 12, &w3, 4);
	memcpy(p + 16, &w4, 4);
}

/* The outer IPv4 header (also used by lb_icmp_too_big_write): DF, TTL 64, no options. */
static inline void
lb_encap_put_ip4(uint8_t *p, uint8_t tos, uint16_t total_len, uint8_t proto, const union lb_ip *src,
                 const union lb_ip *dst)
{
	uint32_t w3, w4;

	memcpy(&w3, src->b, 4);
	memcpy(&w4, dst->b, 4);
	lb_encap_put_ip4w(p, tos, total_len, proto, rte_cpu_to_be_32(RTE_IPV4_HDR_DF_FLAG), w3, w4);
}

/*
 * What lb_encap_write4() writes the same for every packet of a burst (one
 * snapshot, one worker), made once per burst: the Ethernet header as one
 * 16-byte store (its last two bytes are overwritten by the IPv4 header that
 * follows), the constant words of the outer IPv4 header, and their sum, for
 * each of the three outer protocols (lb_encap4_kind()).
 */
struct lb_encap4_tmpl {
	uint8_t eth[16];   /* next hop, source MAC, IPv4 ethertype, then 0x45 0 (overwritten) */
	uint32_t w1;       /* id 0, DF, as stored */
	uint32_t w3;       /* outer source address, as stored */
	uint32_t w2[3];    /* TTL 64, protocol, checksum 0, as stored, per kind */
	uint64_t sum[3];   /* w1 + w2[kind] + w3 */
	uint16_t gue_port; /* network byte order */
	bool hw_ip_cksum;  /* leave the header checksum 0 for the NIC to fill */
};

/* The outer IPv4 header's protocol: 0 IPIP (inner IPv4), 1 IPv6-in-IPv4, 2 GUE (UDP). */
static inline unsigned int
lb_encap4_kind(uint8_t encap, uint8_t inner_af)
{
	return encap == LB_ENCAP_GUE ? 2 : (inner_af == LB_AF_INET ? 0 : 1);
}

static inline void
lb_encap4_tmpl_init(struct lb_encap4_tmpl *t, const struct lb_encap_conf *conf,
                    const uint8_t src_mac[6])
{
	static const uint8_t proto[3] = {LB_PROTO_IPIP, LB_PROTO_IPV6, LB_PROTO_UDP};

	lb_encap_put_eth(t->eth, conf->next_hop_mac, src_mac, RTE_ETHER_TYPE_IPV4);
	t->eth[14] = 0x45;
	t->eth[15] = 0;
	t->w1 = rte_cpu_to_be_32(RTE_IPV4_HDR_DF_FLAG);
	memcpy(&t->w3, conf->src4.b, 4);
	for (int k = 0; k < 3; k++) {
		t->w2[k] =
		        rte_cpu_to_be_32((uint32_t)LB_OUTER_TTL << 24 | (uint32_t)proto[k] << 16);
		t->sum[k] = (uint64_t)t->w1 + t->w2[k] + t->w3;
	}
	t->gue_port = conf->gue_port;
	t->hw_ip_cksum = false;
}

/*
 * lb_encap_write4() from a template made by lb_encap4_tmpl_init(); with
 * hw_ip_cksum set the header checksum is left 0 (the caller asks the NIC for
 * it in the mbuf's offload flags).
 */
static inline uint16_t
lb_encap_write4_tmpl(uint8_t *hdr, const struct lb_encap4_tmpl *t, const struct lb_backend *be,
                     uint8_t encap, uint8_t inner_af, uint16_t inner_len, uint8_t tos,
                     uint64_t flow_hash)
{
	unsigned int k = lb_encap4_kind(encap, inner_af);
	uint16_t overhead = k == 2 ? LB_IP4_HLEN + LB_UDP_HLEN : LB_IP4_HLEN;
	uint32_t w0 = rte_cpu_to_be_32(0x45000000u | (uint32_t)tos << 16 |
	                               (uint16_t)(overhead + inner_len));
	uint32_t w2 = t->w2[k], w4;
	uint16_t ck;
	uint8_t *ip = hdr + LB_ETH_HLEN;

	memcpy(&w4, be->addr.b, 4);
	ck = t->hw_ip_cksum ? 0 : lb_cksum_fold32s((uint64_t)w0 + t->sum[k] + w4);
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
	w2 |= (uint32_t)ck << 16;
#else
	w2 |= ck;
#endif
	memcpy(hdr, t->eth, 16); /* bytes 14-15 are rewritten just below */
	memcpy(ip, &w0, 4);
	memcpy(ip + 4, &t->w1, 4);
	memcpy(ip + 8, &w2, 4);
	memcpy(ip + 12, &t->w3, 4);
	memcpy(ip + 16, &w4, 4);
	if (k == 2) {
		/* UDP checksum 0 over IPv4 (RFC 768). */
		uint16_t u[4] = {rte_cpu_to_be_16(lb_encap_gue_sport(flow_hash)), t->gue_port,
		                 rte_cpu_to_be_16((uint16_t)(LB_UDP_HLEN + inner_len)), 0};

		memcpy(ip + LB_IP4_HLEN, u, sizeof(u));
	}
	return (uint16_t)(LB_ETH_HLEN + overhead);
}

/*
 * lb_encap_write() for an IPv4 backend (the outer IPv4 part of it), without a
 * template: what lb_encap_write4_tmpl() writes (test_encap checks both agree).
 */
static inline uint16_t
lb_encap_write4(uint8_t *hdr, const struct lb_encap_conf *conf, const uint8_t src_mac[6],
                const struct lb_backend *be, uint8_t encap, uint8_t inner_af, uint16_t inner_len,
                uint8_t tos, uint64_t flow_hash)
{
	uint16_t overhead = lb_encap_overhead(LB_AF_INET, encap);
	uint8_t proto = encap == LB_ENCAP_GUE
	                        ? LB_PROTO_UDP
	                        : (inner_af == LB_AF_INET ? LB_PROTO_IPIP : LB_PROTO_IPV6);

	lb_encap_put_eth(hdr, conf->next_hop_mac, src_mac, RTE_ETHER_TYPE_IPV4);
	lb_encap_put_ip4(hdr + LB_ETH_HLEN, tos, (uint16_t)(overhead + inner_len), proto,
	                 &conf->src4, &be->addr);
	if (encap == LB_ENCAP_GUE) {
		/* UDP checksum 0 over IPv4 (RFC 768). */
		uint16_t u[4] = {rte_cpu_to_be_16(lb_encap_gue_sport(flow_hash)), conf->gue_port,
		                 rte_cpu_to_be_16((uint16_t)(LB_UDP_HLEN + inner_len)), 0};

		memcpy(hdr + LB_ETH_HLEN + LB_IP4_HLEN, u, sizeof(u));
	}
	return (uint16_t)(LB_ETH_HLEN + overhead);
}

/**
 * Write Ethernet + outer IP (+ UDP for GUE) at hdr. The inner IP packet
 * (inner_len bytes) must already follow at hdr + LB_ETH_HLEN + overhead; for an
 * IPv6 outer with GUE its bytes are read for the UDP checksum. Outer IPv4 gets
 * DF, TTL 64, a header checksum and a zero UDP checksum (RFC 768 allows it);
 * outer IPv6 a computed UDP checksum and a flow label from the flow hash.
 * DSCP and ECN are copied from the inner header (tos).
 *
 * @return bytes written (LB_ETH_HLEN + overhead).
 */
uint16_t lb_encap_write(uint8_t *hdr, const struct lb_encap_conf *conf, const uint8_t src_mac[6],
                        const struct lb_backend *be, uint8_t encap, uint8_t inner_af,
                        uint16_t inner_len, uint8_t tos, uint64_t flow_hash);

/** Header bytes (Ethernet + IP + ICMP) in front of the quote of an ICMP too-big. */
static inline uint16_t
lb_icmp_too_big_hlen(uint8_t af)
{
	return (uint16_t)(LB_ETH_HLEN + (af == LB_AF_INET ? LB_IP4_HLEN : LB_IP6_HLEN) +
	                  LB_ICMP_HLEN);
}

/** Most bytes of the offending packet an ICMP too-big may quote. */
static inline uint16_t
lb_icmp_too_big_max_quote(uint8_t af)
{
	return af == LB_AF_INET ? LB_ICMP4_MAX_LEN - LB_IP4_HLEN - LB_ICMP_HLEN
	                        : LB_ICMP6_MAX_LEN - LB_IP6_HLEN - LB_ICMP_HLEN;
}

/**
 * Write Ethernet + IP + ICMP "fragmentation needed" (type 3 code 4) or ICMPv6
 * "packet too big" (type 2) at hdr, in front of qlen quoted bytes of the
 * offending packet (which follow at hdr + lb_icmp_too_big_hlen(af)). The reply
 * goes from the balancer's source address to the quoted packet's source.
 *
 * @return bytes written, or 0 if there is no source address for af.
 */
uint16_t lb_icmp_too_big_write(uint8_t *hdr, const struct lb_encap_conf *conf,
                               const uint8_t eth_dst[6], const uint8_t eth_src[6], uint8_t af,
                               uint16_t qlen, uint32_t mtu);

#endif /* LB_ENCAP_H */
