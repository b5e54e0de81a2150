/* SPDX-License-Identifier: BSD-3-Clause */
/* Frame builder and output decoder. Runs per packet: no allocation, no calls
 * beyond memcpy/memset. */
#include <string.h>

#include "pkt.h"

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define IPPROTO_IPIP_ 4
#define IPPROTO_IPV6_ 41

static inline void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static inline uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

uint32_t
sg_csum_add(uint32_t sum, const void *data, uint32_t len)
{
	const uint8_t *p = data;

	/* Big-endian 16-bit words; headers here are short, so bytewise is fine. */
	for (; len > 1; len -= 2, p += 2)
		sum += get16(p);
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

void
sg_pkt_write(uint8_t *f, uint16_t len, const uint8_t macs[12], const struct sg_flow *fl,
             const struct sg_stamp *st, uint32_t tcp_seq, uint8_t tcp_flags)
{
	uint16_t iphl = fl->af == LB_AF_INET ? 20 : 40;
	uint16_t l4hl = fl->proto == SG_PROTO_TCP ? 20 : 8;
	uint16_t l3len = (uint16_t)(len - SG_ETH_HLEN);
	uint16_t l4len = (uint16_t)(l3len - iphl);
	uint8_t *ip = f + SG_ETH_HLEN, *l4 = ip + iphl, *pl = l4 + l4hl;
	uint32_t sum;

	memcpy(f, macs, 12);
	put16(f + 12, fl->af == LB_AF_INET ? ETH_P_IP : ETH_P_IPV6);
	if (fl->af == LB_AF_INET) {
		ip[0] = 0x45;
		ip[1] = 0;
		put16(ip + 2, l3len);
		put16(ip + 4, (uint16_t)st->seq); /* identification */
		put16(ip + 6, 0x4000);            /* DF */
		ip[8] = 64;
		ip[9] = fl->proto;
		put16(ip + 10, 0);
		memcpy(ip + 12, fl->src.b, 4);
		memcpy(ip + 16, fl->dst.b, 4);
		put16(ip + 10, sg_csum_fold(sg_csum_add(0, ip, 20)));
		sum = sg_csum_add(0, ip + 12, 8);
	} else {
		put32(ip, 0x60000000u | (st->flow & 0xfffff)); /* flow label: the flow id */
		put16(ip + 4, l4len);
		ip[6] = fl->proto;
		ip[7] = 64;
		memcpy(ip + 8, fl->src.b, 16);
		memcpy(ip + 24, fl->dst.b, 16);
		sum = sg_csum_add(0, ip + 8, 32);
	}
	/* Pseudo-header: addresses (summed above), protocol and L4 length. */
	sum += fl->proto + (uint32_t)l4len;

	put16(l4, fl->sport);
	put16(l4 + 2, fl->dport);
	if (fl->proto == SG_PROTO_TCP) {
		put32(l4 + 4, tcp_seq);
		put32(l4 + 8, tcp_flags & SG_TCP_SYN ? 0 : 1);
		l4[12] = 5 << 4;
		l4[13] = tcp_flags;
		put16(l4 + 14, 65535);
		put16(l4 + 16, 0);
		put16(l4 + 18, 0);
	} else {
		put16(l4 + 4, l4len);
		put16(l4 + 6, 0);
	}
	put16(pl, SG_STAMP_MAGIC);
	put32(pl + 2, st->flow);
	put32(pl + 6, st->seq);
	memcpy(pl + 10, &st->tsc, 8); /* host order: only this host reads it */
	memset(pl + SG_STAMP_LEN, 0, (size_t)(len - (pl + SG_STAMP_LEN - f)));

	/* Zero padding adds nothing to the sum: header and stamp are enough. */
	sum = sg_csum_add(sum, l4, (uint32_t)l4hl + SG_STAMP_LEN);
	uint16_t ck = sg_csum_fold(sum);
	if (fl->proto == SG_PROTO_UDP && ck == 0)
		ck = 0xffff;
	put16(l4 + (fl->proto == SG_PROTO_TCP ? 16 : 6), ck);
}

/* The inner IP packet at p (n bytes to the end of the buffer). */
static enum sg_dec
decode_inner(const uint8_t *p, uint32_t n, struct sg_decoded *d)
{
	uint32_t iphl;
	uint8_t proto;

	if (n < 20)
		return SG_DEC_TRUNC;
	if ((p[0] >> 4) == 4) {
		iphl = (uint32_t)(p[0] & 0xf) * 4;
		if (iphl < 20 || n < iphl)
			return SG_DEC_TRUNC;
		if (get16(p + 6) & 0x3fff) /* a fragment: the stamp is in the first one only */
			return SG_DEC_NO_STAMP;
		proto = p[9];
		d->inner.af = LB_AF_INET;
		memset(&d->inner.src, 0, 2 * sizeof(d->inner.src));
		memcpy(d->inner.src.b, p + 12, 4);
		memcpy(d->inner.dst.b, p + 16, 4);
	} else if ((p[0] >> 4) == 6) {
		iphl = 40;
		if (n < iphl)
			return SG_DEC_TRUNC;
		proto = p[6];
		d->inner.af = LB_AF_INET6;
		memcpy(d->inner.src.b, p + 8, 16);
		memcpy(d->inner.dst.b, p + 24, 16);
	} else {
		return SG_DEC_NO_STAMP;
	}
	if (proto != SG_PROTO_TCP && proto != SG_PROTO_UDP)
		return SG_DEC_NO_STAMP;
	p += iphl;
	n -= iphl;
	uint32_t l4hl = 8;
	if (proto == SG_PROTO_TCP) {
		if (n < 20)
			return SG_DEC_TRUNC;
		l4hl = (uint32_t)(p[12] >> 4) * 4;
		if (l4hl < 20)
			return SG_DEC_NO_STAMP;
	}
	if (n < l4hl + SG_STAMP_LEN)
		return SG_DEC_TRUNC;
	d->inner.proto = proto;
	d->inner.sport = get16(p);
	d->inner.dport = get16(p + 2);
	d->inner.vip = 0;
	p += l4hl;
	if (get16(p) != SG_STAMP_MAGIC)
		return SG_DEC_NO_STAMP;
	d->st.flow = get32(p + 2);
	d->st.seq = get32(p + 6);
	memcpy(&d->st.tsc, p + 10, 8);
	return SG_DEC_OK;
}

enum sg_dec
sg_pkt_decode(const uint8_t *f, uint32_t len, uint16_t gue_port, struct sg_decoded *d)
{
	uint32_t off = 12, iphl;
	uint16_t et;
	uint8_t proto;

	if (len < SG_ETH_HLEN)
		return SG_DEC_TRUNC;
	et = get16(f + off);
	while (et == ETH_P_8021Q || et == ETH_P_8021AD) {
		off += 4;
		if (len < off + 2)
			return SG_DEC_TRUNC;
		et = get16(f + off);
	}
	off += 2;
	const uint8_t *ip = f + off;
	uint32_t n = len - off;
	if (et == ETH_P_IP) {
		if (n < 20)
			return SG_DEC_TRUNC;
		if ((ip[0] >> 4) != 4)
			return SG_DEC_NOT_ENCAP;
		iphl = (uint32_t)(ip[0] & 0xf) * 4;
		if (iphl < 20 || n < iphl)
			return SG_DEC_TRUNC;
		if (get16(ip + 6) & 0x3fff)
			return SG_DEC_NOT_ENCAP;
		proto = ip[9];
		d->backend_af = LB_AF_INET;
		memset(&d->backend, 0, sizeof(d->backend));
		memcpy(d->backend.b, ip + 16, 4);
	} else if (et == ETH_P_IPV6) {
		iphl = 40;
		if (n < iphl)
			return SG_DEC_TRUNC;
		proto = ip[6];
		d->backend_af = LB_AF_INET6;
		memcpy(d->backend.b, ip + 24, 16);
	} else {
		return SG_DEC_NOT_ENCAP;
	}
	ip += iphl;
	n -= iphl;
	if (proto == IPPROTO_IPIP_ || proto == IPPROTO_IPV6_) {
		d->gue = 0;
		if (n > 0 && (ip[0] >> 4) != (proto == IPPROTO_IPIP_ ? 4 : 6))
			return SG_DEC_NO_STAMP;
		return decode_inner(ip, n, d);
	}
	if (proto == SG_PROTO_UDP) {
		if (n < 8)
			return SG_DEC_TRUNC;
		if (get16(ip + 2) != gue_port)
			return SG_DEC_NOT_ENCAP;
		d->gue = 1;
		return decode_inner(ip + 8, n - 8, d);
	}
	return SG_DEC_NOT_ENCAP;
}
