/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet parser: Ethernet (802.1Q, QinQ), IPv4 with options, IPv6 with extension
 * headers, TCP, UDP, and ICMP/ICMPv6 errors matched on the flow they quote.
 *
 * Pure code over a byte range: no DPDK, no allocation, never reads outside
 * [data, data + len). The result says which flow a packet belongs to; the worker
 * decides what to do with it.
 */
#ifndef LB_PARSE_H
#define LB_PARSE_H

#include <stdint.h>

#include "counters.h"
#include "hash.h"

/* lb_parse() return values besides the enum lb_drop_reason codes (all > 0). */
#define LB_PARSE_OK 0
#define LB_PARSE_NOT_LB (-1) /* well formed, but not TCP/UDP/ICMP-error over IP */

/* lb_pkt_info.flags */
#define LB_PKT_FRAGMENT 0x01   /* part of a fragmented datagram: key has no ports */
#define LB_PKT_ICMP_ERROR 0x02 /* key is the quoted flow, reversed */
#define LB_PKT_DF 0x04         /* outer IPv4 has Don't Fragment set */

struct lb_pkt_info {
	/*
	 * The flow the packet belongs to, as the client sent it: for an ICMP error
	 * the quoted packet (which the backend sent from the VIP) reversed, so
	 * key.dst is the VIP. Ports are zero for fragments.
	 */
	struct lb_flow_key key;
	uint16_t l2_len;  /* Ethernet + VLAN tags: where the IP header starts */
	uint16_t l3_len;  /* the IP packet's own length (total length / 40 + payload) */
	uint8_t flags;    /* LB_PKT_* */
	uint8_t tos;      /* IPv4 TOS / IPv6 traffic class: DSCP and ECN */
	uint16_t pad;
};

/**
 * Parse one frame.
 *
 * @return LB_PARSE_OK with *info filled; LB_PARSE_NOT_LB for traffic that is not
 *   for the balancer (ARP, other protocols, ICMP that is not an error); or an
 *   enum lb_drop_reason for malformed or truncated input. Bytes past len (for
 *   example Ethernet padding beyond the IP length) are never needed.
 */
int lb_parse(const uint8_t *data, uint32_t len, struct lb_pkt_info *info);

#endif /* LB_PARSE_H */
