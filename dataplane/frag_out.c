/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The outer-packet fragmenter (frag_out.h): per fragment, the Ethernet and
 * outer IP headers copied and adjusted (length, offset, MF / M, checksum or
 * fragment header), then its slice of the outer payload copied from the chain.
 * No locks, no system calls; mbufs come from the packet's pool.
 */
#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "dataplane/frag_out.h"

#define ETH_HLEN 14
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD
#define PROTO_FRAG 44
#define IP4_MF 0x2000

static inline void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

int
lb_frag_out_split(const struct rte_mbuf *m, uint16_t mtu, uint32_t id, struct rte_mbuf **frags,
                  unsigned int max)
{
	const uint8_t *eth = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t ihl, fh, l3, payload, unit, n, room;
	uint16_t type;
	uint8_t af;

	if (rte_pktmbuf_data_len(m) < ETH_HLEN)
		return -EINVAL;
	type = (uint16_t)(eth[12] << 8 | eth[13]);
	if (type == ETHERTYPE_IPV4)
		af = LB_AF_INET;
	else if (type == ETHERTYPE_IPV6)
		af = LB_AF_INET6;
	else
		return -EINVAL;
	ihl = af == LB_AF_INET ? 20 : 40;
	fh = af == LB_AF_INET ? 0 : LB_FRAG_OUT_IP6_FH;
	if (rte_pktmbuf_data_len(m) < ETH_HLEN + ihl ||
	    rte_pktmbuf_pkt_len(m) <= ETH_HLEN + (uint32_t)mtu)
		return -EINVAL;
	l3 = rte_pktmbuf_pkt_len(m) - ETH_HLEN;
	payload = l3 - ihl;
	room = (uint32_t)rte_pktmbuf_data_room_size(m->pool) - RTE_PKTMBUF_HEADROOM;
	unit = lb_frag_out_unit(af, mtu, room);
	if (unit == 0)
		return -EINVAL;
	n = (payload + unit - 1) / unit;
	if (n > max)
		return -ENOSPC;
	if (rte_pktmbuf_alloc_bulk(m->pool, frags, n) != 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off = i * unit;
		uint32_t len = payload - off < unit ? payload - off : unit;
		uint16_t more = i + 1 < n;
		uint8_t *p = (uint8_t *)rte_pktmbuf_append(frags[i],
		                                           (uint16_t)(ETH_HLEN + ihl + fh + len));
		uint8_t *ip = p + ETH_HLEN, *dst = ip + ihl + fh;
		const void *src;

		/* unit and the room check above make every fragment fit one mbuf */
		memcpy(p, eth, ETH_HLEN + ihl);
		if (af == LB_AF_INET) {
			uint16_t ck;

			put16(ip + 2, (uint16_t)(ihl + len));
			put16(ip + 4, (uint16_t)id);
			put16(ip + 6, (uint16_t)((off >> 3) | (more ? IP4_MF : 0)));
			ip[10] = ip[11] = 0;
			ck = (uint16_t)~rte_raw_cksum(ip, ihl);
			memcpy(ip + 10, &ck, 2);
		} else {
			uint8_t *f = ip + ihl;
			uint32_t id_be = rte_cpu_to_be_32(id);

			put16(ip + 4, (uint16_t)(fh + len));
			f[0] = ip[6]; /* the next header after the fragment header */
			f[1] = 0;
			put16(f + 2, (uint16_t)(off | more)); /* offset in 8-byte units, << 3 */
			memcpy(f + 4, &id_be, 4);
			ip[6] = PROTO_FRAG;
		}
		src = rte_pktmbuf_read(m, ETH_HLEN + ihl + off, len, dst);
		if (src != dst)
			memcpy(dst, src, len);
	}
	return (int)n;
}
