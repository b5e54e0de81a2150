/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fragmentation of an encapsulated packet that exceeds encap.mtu, where the
 * RFCs want the tunnel packet fragmented rather than the inner one refused
 * (RFC 2003 §5.1 for IPv4 without DF, RFC 2473 §7.1 for IPv6 of at most 1280
 * bytes): the outer IPv4 packet is cut with DF clear (RFC 791), the outer IPv6
 * packet gets a fragment header (RFC 8200 §4.5). Fragments are copied into new
 * mbufs taken from the packet's own, preallocated, pool.
 */
#ifndef LB_FRAG_OUT_H
#define LB_FRAG_OUT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dataplane/snapshot.h"

/* Fragment frames one burst may produce (struct lb_burst_out's frag array). */
#define LB_FRAG_OUT_MAX 64
#define LB_FRAG_OUT_IP6_FH 8      /* the IPv6 fragment header */
#define LB_FRAG_OUT_IPV6_MIN 1280 /* RFC 8200 §5: the IPv6 minimum link MTU */

/**
 * Whether an inner packet of inner_len bytes that does not fit the tunnel is
 * sent as outer fragments: IPv4 without DF (RFC 2003 §5.1; fragments of a
 * datagram have no DF either), IPv6 of at most 1280 bytes (RFC 2473 §7.1(b)).
 * Otherwise it is answered with ICMP (or dropped by policy).
 */
static inline bool
lb_frag_out_wanted(uint8_t inner_af, bool df, uint32_t inner_len)
{
	return inner_af == LB_AF_INET ? !df : inner_len <= LB_FRAG_OUT_IPV6_MIN;
}

/**
 * Outer payload bytes per fragment: a multiple of 8 such that the fragment's
 * IP packet is at most mtu bytes and its frame (with 14 bytes of Ethernet) at
 * most room bytes. 0 if not even 8 bytes fit.
 */
static inline uint32_t
lb_frag_out_unit(uint8_t outer_af, uint32_t mtu, uint32_t room)
{
	uint32_t hdr = outer_af == LB_AF_INET ? 20u : 40u + LB_FRAG_OUT_IP6_FH;
	uint32_t l3 = room < 14 ? 0 : room - 14;

	if (l3 > mtu)
		l3 = mtu;
	return l3 <= hdr ? 0 : (l3 - hdr) & ~7u;
}

/**
 * Copy the encapsulated frame m (Ethernet, then an outer IPv4 header without
 * options or an outer IPv6 header without extension headers, in the first
 * segment; the rest may be chained) into fragments of at most mtu L3 bytes,
 * stored in frags[0..n). Outer IPv4 fragments carry identification id & 0xFFFF
 * and DF clear; outer IPv6 fragments a fragment header with identification id.
 * m is not changed (the caller frees it). Allocates from m->pool only.
 *
 * @return n (at least 2), -EINVAL if m is not such a frame or fits mtu
 *         already (or no 8 bytes fit a fragment), -ENOSPC if more than max
 *         fragments are needed, -ENOMEM if the pool has too few mbufs.
 */
int lb_frag_out_split(const struct rte_mbuf *m, uint16_t mtu, uint32_t id, struct rte_mbuf **frags,
                      unsigned int max);

#endif /* LB_FRAG_OUT_H */
