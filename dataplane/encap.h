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

#include "snapshot.h"

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
 * The outer IPv4 header (also used by lb_icmp_too_big_write): DF, TTL 64, no options. It is
 * composed as five 32-bit words in registers, summed and stored once. Building it field by field in
 * a stack struct and then checksumming that made every 32-bit load of the sum wait on a failed
 * store-to-load forward from the narrower field stores (the hottest spot of encapsulation in the
 * profile). The sum: five 32-bit words added in 64 bits, then folded; 2^32 and 2^16 are both 1
 * modulo 0xFFFF, so it is the RFC 1071 sum rte_ipv4_cksum() computes 16 bits at a time.
 */
static inline void
lb_encap_put_ip4(uint8_t *p, uint8_t tos, uint16_t total_len, uint8_t proto, const union lb_ip *src,
                 const union lb_ip *dst)
{
	/* Each word is stored on its own: copying an array of them made the
	 * compiler bounce it through the stack, with the same stall. */
	uint32_t w0 = rte_cpu_to_be_32(0x45000000u | (uint32_t)tos << 16 | total_len);
	uint32_t w1 = rte_cpu_to_be_32(RTE_IPV4_HDR_DF_FLAG); /* packet id 0 */
	uint32_t w2 = rte_cpu_to_be_32((uint32_t)LB_OUTER_TTL << 24 | (uint32_t)proto << 16);
	uint32_t w3, w4;
	uint64_t sum;
	uint16_t ck;

	memcpy(&w3, src->b, 4);
	memcpy(&w4, dst->b, 4);
	sum = (uint64_t)w0 + w1 + w2 + w3 + w4;
	sum = (sum & 0xFFFFFFFF) + (sum >> 32); /* < 2^32 + 5 */
	sum = (sum & 0xFFFF) + (sum >> 16);     /* < 2^17 */
	sum = (sum & 0xFFFF) + (sum >> 16);     /* <= 2^16 */
	sum = (sum & 0xFFFF) + (sum >> 16);     /* <= 0xFFFF */
	ck = (uint16_t)~sum;
	memcpy(p, &w0, 4);
	memcpy(p + 4, &w1, 4);
	memcpy(p + 8, &w2, 4);
	memcpy(p + 10, &ck, 2); /* the checksum field, zero in w2 */
	memcpy(p + 12, &w3, 4);
	memcpy(p + 16, &w4, 4);
}

/*
 * lb_encap_write() for an IPv4 backend (the outer IPv4 part of it), inline so
 * that the pipeline's per-packet call folds into straight-line stores.
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
