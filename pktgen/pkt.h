/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packets spillgen sends and what it reads back, as pure functions over byte
 * buffers (no EAL calls, so the tests run anywhere).
 *
 * Sent: Ethernet + IPv4/IPv6 + TCP/UDP + an 18-byte stamp at the start of the
 * L4 payload (magic, flow id, per-flow sequence number, TSC at build time),
 * zero padding to the frame size, correct IPv4 header and L4 checksums.
 * Read back: Ethernet (802.1Q tags skipped) + outer IPv4/IPv6 + either the inner
 * IP packet (IPIP: protocol 4 or 41) or UDP to the GUE port and the inner IP
 * packet (GUE variant 1). The outer destination names the backend; the stamp
 * names the flow.
 */
#ifndef SG_PKT_H
#define SG_PKT_H

#include <stdint.h>

#include "dataplane/hash.h"

#define SG_ETH_HLEN 14
#define SG_STAMP_LEN 18
#define SG_STAMP_MAGIC 0x5347 /* "SG" */
#define SG_FCS_LEN 4          /* counted in --size, not written (DPDK frames carry no FCS) */
#define SG_PROTO_TCP 6
#define SG_PROTO_UDP 17
#define SG_TCP_SYN 0x02
#define SG_TCP_PSH_ACK 0x18

/* One generated connection. Ports in host order. */
struct sg_flow {
	union lb_ip src;
	union lb_ip dst;
	uint16_t sport;
	uint16_t dport;
	uint8_t proto;
	uint8_t af;   /* LB_AF_INET or LB_AF_INET6 */
	uint16_t vip; /* index into the VIP list */
};

struct sg_stamp {
	uint32_t flow;
	uint32_t seq;
	uint64_t tsc;
};

/** Smallest frame (without FCS) that carries the stamp for af/proto. */
static inline uint16_t
sg_pkt_min_len(uint8_t af, uint8_t proto)
{
	return (uint16_t)(SG_ETH_HLEN + (af == LB_AF_INET ? 20 : 40) +
	                  (proto == SG_PROTO_TCP ? 20 : 8) + SG_STAMP_LEN);
}

/**
 * Write a whole frame of len bytes (len >= sg_pkt_min_len()) at f: macs is
 * destination then source MAC. For TCP, tcp_seq/tcp_flags fill the header
 * (ack 1, window 65535). Padding after the stamp is zeroed.
 */
void sg_pkt_write(uint8_t *f, uint16_t len, const uint8_t macs[12], const struct sg_flow *fl,
                  const struct sg_stamp *st, uint32_t tcp_seq, uint8_t tcp_flags);

/* What sg_pkt_decode() found. */
enum sg_dec {
	SG_DEC_OK = 0,
	SG_DEC_NOT_ENCAP, /* not IPIP/GUE toward a backend (ARP, ICMP, other) */
	SG_DEC_TRUNC,     /* headers or stamp beyond the buffer */
	SG_DEC_NO_STAMP,  /* encapsulated, but the inner payload is not ours */
	SG_DEC_N,
};

struct sg_decoded {
	union lb_ip backend; /* outer destination */
	uint8_t backend_af;
	uint8_t gue;          /* 1: GUE over UDP, 0: IPIP */
	struct sg_flow inner; /* vip left 0 */
	struct sg_stamp st;
};

/**
 * Decode the balancer's output frame (len bytes at f; the stamp must lie
 * within them). gue_port is the UDP destination port that marks GUE.
 */
enum sg_dec sg_pkt_decode(const uint8_t *f, uint32_t len, uint16_t gue_port, struct sg_decoded *d);

/** One's complement sum of len bytes (folded to 16 bits by sg_csum_fold). */
uint32_t sg_csum_add(uint32_t sum, const void *data, uint32_t len);

static inline uint16_t
sg_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

#endif /* SG_PKT_H */
