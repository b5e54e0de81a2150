/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-core counters: packet totals, drops by reason, and per-VIP and per-backend
 * traffic. Each worker writes only its own struct; control reads all of them
 * without stopping anyone and sums. A 64-bit aligned store is atomic on x86-64,
 * so a reader sees each counter either before or after an increment.
 */
#ifndef LB_COUNTERS_H
#define LB_COUNTERS_H

#include <stdint.h>

#include "dataplane/snapshot.h"

/*
 * Why a packet was dropped. Every received packet ends in exactly one of:
 * forwarded, icmp_sent, exception, or one of these; a packet sent as outer
 * fragments counts as its fragments (fragments_out - fragmented_out extra). Values start at 1 so
 * the parser can return 0 for success.
 */
enum lb_drop_reason {
	LB_DROP_ETH_TRUNC = 1,  /* shorter than the Ethernet (and VLAN) headers */
	LB_DROP_IP4_TRUNC,      /* IPv4 header or total length beyond the frame */
	LB_DROP_IP4_MALFORMED,  /* version, IHL or total length inconsistent */
	LB_DROP_IP6_TRUNC,      /* IPv6 header, payload or an extension header cut */
	LB_DROP_IP6_MALFORMED,  /* bad version, extension chain too long, bad fragment */
	LB_DROP_L4_TRUNC,       /* TCP/UDP header cut */
	LB_DROP_ICMP_TRUNC,     /* no longer produced: a cut quote is not the balancer's */
	LB_DROP_ICMP_MALFORMED, /* no longer produced: a non-TCP/UDP quote is not ours */
	LB_DROP_NO_VIP,         /* not for any VIP, and no exception port */
	LB_DROP_NO_BACKEND,     /* VIP with no usable backend */
	LB_DROP_TOO_BIG,        /* over the MTU once encapsulated, policy drop */
	LB_DROP_NO_HEADROOM,    /* mbuf cannot take the outer headers */
	LB_DROP_TX_FULL,        /* the TX queue did not take it */
	LB_DROP_MARTIAN_SRC,    /* to a VIP from a martian source (lb_icmp_martian_src) */
	LB_DROP_ICMP_LIMITED,   /* too big; its ICMP error was over the rate limit */
	LB_DROP_FRAG_FAILED,    /* to be sent as outer fragments: no mbufs or no room */
	LB_DROP_NOT_OUR_MAC, /* to another host's MAC, or to a group MAC with no exception port */
	LB_DROP__COUNT
};

/** The JSON name of a drop reason ("eth_trunc", ...); NULL if out of range. */
const char *lb_drop_reason_name(unsigned int reason);

struct lb_obj_counters {
	uint64_t packets;
	uint64_t bytes;
	uint64_t new_flows;
};

struct lb_core_counters {
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t forwarded; /* encapsulated and accepted by TX */
	uint64_t forwarded_bytes;
	uint64_t icmp_sent; /* too-big packets answered with ICMP */
	uint64_t exception; /* non-VIP packets sent to the exception port */
	uint64_t flow_hits;
	uint64_t flow_misses;
	uint64_t flow_evictions;    /* live entries evicted to make room */
	uint64_t flow_rechosen;     /* entries whose backend was gone or down */
	uint64_t flow_unpinned;     /* new flows left without an entry: all 4 ways established */
	uint64_t flow_rate_limited; /* new flows over flows.new_flow_rate: no entry */
	uint64_t fragments;
	uint64_t icmp_errors;    /* ICMP errors steered by their inner flow */
	uint64_t snapshot_gen;   /* generation of the snapshot this core last used */
	uint64_t hot_spread;     /* new flows sent to a hot key's replica by its override */
	uint64_t hot_sprayed;    /* packets of a per_packet VIP's hot key sprayed, unpinned */
	uint64_t frag_tracked;   /* first fragments whose ports were recorded */
	uint64_t frag_followed;  /* later fragments steered by their first fragment's ports */
	uint64_t frag_unmatched; /* fragments steered by addresses only (no first seen) */
	uint64_t frag_evictions; /* live fragment-table entries replaced to make room */
	uint64_t fragmented_out; /* packets encapsulated and sent as outer fragments */
	uint64_t fragments_out;  /* the fragment frames made of them */
	uint64_t pmtu_learned;   /* MTU errors about our tunnel packets that lowered a path MTU */
	uint64_t pmtu_ignored;   /* the same, out of bounds or not lower (pmtu.h) */
	uint64_t drops[LB_DROP__COUNT];
	struct lb_obj_counters vip[LB_MAX_VIPS];
	struct lb_obj_counters backend[LB_MAX_BACKENDS];
} __attribute__((aligned(64)));

#endif /* LB_COUNTERS_H */
