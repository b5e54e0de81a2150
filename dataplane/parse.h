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

#include "dataplane/counters.h"
#include "dataplane/hash.h"

/* lb_parse() return values besides the enum lb_drop_reason codes (all > 0). */
#define LB_PARSE_OK 0
#define LB_PARSE_NOT_LB (-1) /* well formed, but not TCP/UDP/ICMP-error over IP */

/* lb_pkt_info.flags */
#define LB_PKT_FRAGMENT 0x01   /* part of a fragmented datagram: key has no ports */
#define LB_PKT_ICMP_ERROR 0x02 /* key is the quoted flow, reversed */
#define LB_PKT_DF 0x04         /* outer IPv4 has Don't Fragment set */
#define LB_PKT_FRAG_LATER 0x08 /* the packet is a fragment other than the first */

/* lb_pkt_info.tcp_flags (RFC 9293 §3.1) */
#define LB_TCP_FIN 0x01
#define LB_TCP_SYN 0x02
#define LB_TCP_RST 0x04
#define LB_TCP_ACK 0x10

struct lb_pkt_info {
	/*
	 * The flow the packet belongs to, as the client sent it: for an ICMP error
	 * the quoted packet (which the backend sent from the VIP) reversed, so
	 * key.dst is the VIP. Ports are zero for fragments.
	 */
	struct lb_flow_key key;
	uint16_t l2_len;   /* Ethernet + VLAN tags: where the IP header starts */
	uint16_t l3_len;   /* the IP packet's own length (total length / 40 + payload) */
	uint8_t flags;     /* LB_PKT_* */
	uint8_t tos;       /* IPv4 TOS / IPv6 traffic class: DSCP and ECN */
	uint8_t tcp_flags; /* the TCP header's flags byte (LB_TCP_*); 0 for UDP, ICMP */
	uint8_t pad;
};

/**
 * Parse one frame.
 *
 * @return LB_PARSE_OK with *info filled; LB_PARSE_NOT_LB for traffic that is not
 *   for the balancer (ARP, other protocols, ICMP that is not an error, an ICMP
 *   error whose quote does not name a TCP/UDP flow: cut before the quoted
 *   ports, not IP, not TCP/UDP, as bpf/xsk_steer.bpf.c passes them); or an
 *   enum lb_drop_reason for malformed or truncated input. Bytes past len (for
 *   example Ethernet padding beyond the IP length) are never needed.
 */
int lb_parse(const uint8_t *data, uint32_t len, struct lb_pkt_info *info);

/**
 * Parse a frame of which only the first seg_len bytes are contiguous at data,
 * such as a multi-segment mbuf chain (seg_len = first segment's data_len,
 * frame_len = pkt_len). lb_parse(data, len, info) is the seg_len == frame_len
 * case.
 *
 * Every header read (Ethernet, VLAN, IP, IPv6 extensions, TCP/UDP, ICMP and
 * the packet it quotes) must lie within seg_len; the IPv4 total length and
 * IPv6 payload length are checked against frame_len, so info->l3_len may run
 * past the first segment. A header that crosses the segment boundary is
 * reported as truncated (LB_DROP_ETH_TRUNC, LB_DROP_IP4_TRUNC,
 * LB_DROP_IP6_TRUNC or LB_DROP_L4_TRUNC, after the header concerned; an ICMP
 * error's quote cut so is LB_PARSE_NOT_LB), even though the frame holds it: the parser never
 * gathers bytes from later segments. Never reads outside [data, data + min(seg_len, frame_len)).
 *
 * @return as lb_parse().
 */
int lb_parse_frame(const uint8_t *data, uint32_t seg_len, uint32_t frame_len,
                   struct lb_pkt_info *info);

#endif /* LB_PARSE_H */
