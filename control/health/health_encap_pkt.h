/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frames of a health probe sent "via encap": a TCP SYN, the RST that ends
 * it, or a UDP request, from the prober's address to VIP:port, encapsulated
 * toward one backend by the data path's own lb_encap_write(), so the outer
 * headers are exactly those of a client's packet to that VIP.
 * Pure: no sockets, no allocation, no EAL.
 */
#ifndef LB_HEALTH_ENCAP_PKT_H
#define LB_HEALTH_ENCAP_PKT_H

#include <stddef.h>
#include <stdint.h>

#include "dataplane/hash.h"
#include "dataplane/snapshot.h"

/* What the inner packet is. */
enum lb_hc_pkt_kind {
	LB_HC_PKT_SYN, /* TCP SYN, MSS option, window 65535 */
	LB_HC_PKT_RST, /* TCP RST (no ACK) with sequence seq */
	LB_HC_PKT_UDP, /* UDP datagram carrying payload */
};

#define LB_HC_PKT_TTL 64       /* inner TTL / hop limit */
#define LB_HC_PKT_WINDOW 65535 /* SYN's window */
#define LB_HC_PKT_MAX_LEN 1600 /* largest frame lb_hc_pkt_build() writes */
#define LB_HC_PKT_MAX_PAYLOAD 1024

struct lb_hc_pkt {
	const struct lb_encap_conf *encap; /* outer sources, GUE port, next hop MAC */
	uint8_t encap_type;                /* LB_ENCAP_IPIP or LB_ENCAP_GUE (the VIP's) */
	uint8_t kind;                      /* enum lb_hc_pkt_kind */
	uint8_t af;                        /* inner family (the VIP's): LB_AF_INET/6 */
	uint8_t be_af;                     /* the backend's family: the outer header's */
	union lb_ip be_addr;               /* outer destination */
	union lb_ip src;                   /* inner source: the prober's address */
	union lb_ip vip;                   /* inner destination */
	uint16_t sport;                    /* inner source port, host order */
	uint16_t dport;                    /* the VIP's port, host order */
	uint32_t seq;                      /* TCP sequence number */
	uint16_t mss;                      /* SYN's MSS option */
	uint64_t flow_hash;                /* GUE source port, IPv6 flow label */
	const uint8_t *payload;            /* UDP payload */
	uint16_t payload_len;              /* at most LB_HC_PKT_MAX_PAYLOAD */
};

/**
 * Write the whole frame (Ethernet to next_hop_mac from src_mac, outer IP,
 * UDP for GUE, inner IP, TCP or UDP) into buf. The inner IPv4 header has
 * DF, id 0, TTL 64; the inner IPv6 header flow label 0, hop limit 64; TCP and
 * UDP checksums are computed. The outer headers are lb_encap_write()'s.
 *
 * @return the frame's length (> 0); -EINVAL for a bad kind, family, encap or
 *         an outer family without a source address; -EMSGSIZE if the payload
 *         is too long; -ENOSPC if cap is too small.
 */
int lb_hc_pkt_build(const struct lb_hc_pkt *p, const uint8_t src_mac[6], uint8_t *buf, size_t cap);

/**
 * The flow hash the data path computes for the inner packet (keyed SipHash
 * of its 5-tuple, lb_hash_flow()), so that a probe's GUE source port and
 * IPv6 flow label are the ones a client's packet with that 5-tuple gets.
 */
uint64_t lb_hc_pkt_flow_hash(const struct lb_hash_key *key, const struct lb_hc_pkt *p);

#endif /* LB_HEALTH_ENCAP_PKT_H */
