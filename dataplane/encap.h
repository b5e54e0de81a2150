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

#include "snapshot.h"

#define LB_ETH_HLEN 14
#define LB_IP4_HLEN 20
#define LB_IP6_HLEN 40
#define LB_UDP_HLEN 8
#define LB_ICMP_HLEN 8
#define LB_OUTER_TTL 64
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
