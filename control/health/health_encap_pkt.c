/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Health probe frames via encap: the inner IP packet (TCP SYN, TCP RST or
 * UDP) is written first, then lb_encap_write() puts the data path's outer
 * headers in front of it. tests/integration/health_encap_pkt_check.py
 * compares every kind, family and encapsulation with scapy byte for byte.
 */
#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>

#include "dataplane/encap.h"
#include "control/health/health_encap_pkt.h"

#define PROTO_TCP 6
#define TCP_HLEN 20
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_OPT_MSS 2

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* RFC 1071 sum (not complemented, not folded) of len bytes, as big-endian words. */
static uint32_t
sum_be(const uint8_t *p, size_t len)
{
	uint32_t s = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < len)
		s += (uint32_t)p[i] << 8;
	return s;
}

static uint16_t
fold(uint32_t s)
{
	s = (s & 0xFFFF) + (s >> 16);
	s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

/* The TCP/UDP checksum over the pseudo-header of the inner IP header at ip. */
static uint16_t
l4_cksum(const uint8_t *ip, uint8_t af, const uint8_t *l4, uint16_t l4_len, uint8_t proto)
{
	uint32_t s = af == LB_AF_INET ? sum_be(ip + 12, 8) : sum_be(ip + 8, 32);

	s += proto + (uint32_t)l4_len;
	s += sum_be(l4, l4_len);
	return fold(s);
}

static uint16_t
inner_l4_len(const struct lb_hc_pkt *p)
{
	switch (p->kind) {
	case LB_HC_PKT_SYN:
		return TCP_HLEN + 4;
	case LB_HC_PKT_RST:
		return TCP_HLEN;
	default:
		return (uint16_t)(LB_UDP_HLEN + p->payload_len);
	}
}

/* The inner IP header (without its payload) for l4_len bytes of L4. */
static uint16_t
write_inner_ip(uint8_t *ip, const struct lb_hc_pkt *p, uint8_t proto, uint16_t l4_len)
{
	if (p->af == LB_AF_INET) {
		memset(ip, 0, LB_IP4_HLEN);
		ip[0] = 0x45;
		put16(ip + 2, (uint16_t)(LB_IP4_HLEN + l4_len));
		ip[6] = 0x40; /* DF, id 0 */
		ip[8] = LB_HC_PKT_TTL;
		ip[9] = proto;
		memcpy(ip + 12, p->src.b, 4);
		memcpy(ip + 16, p->vip.b, 4);
		put16(ip + 10, fold(sum_be(ip, LB_IP4_HLEN)));
		return LB_IP4_HLEN;
	}
	memset(ip, 0, LB_IP6_HLEN);
	ip[0] = 0x60;
	put16(ip + 4, l4_len);
	ip[6] = proto;
	ip[7] = LB_HC_PKT_TTL;
	memcpy(ip + 8, p->src.b, 16);
	memcpy(ip + 24, p->vip.b, 16);
	return LB_IP6_HLEN;
}

static void
write_l4(uint8_t *ip, uint8_t *l4, const struct lb_hc_pkt *p, uint16_t l4_len)
{
	uint16_t ck;

	if (p->kind == LB_HC_PKT_UDP) {
		put16(l4, p->sport);
		put16(l4 + 2, p->dport);
		put16(l4 + 4, l4_len);
		put16(l4 + 6, 0);
		if (p->payload_len)
			memcpy(l4 + LB_UDP_HLEN, p->payload, p->payload_len);
		ck = l4_cksum(ip, p->af, l4, l4_len, LB_PROTO_UDP);
		put16(l4 + 6, ck == 0 ? 0xFFFF : ck); /* RFC 768: 0 is sent as all ones */
		return;
	}
	memset(l4, 0, l4_len);
	put16(l4, p->sport);
	put16(l4 + 2, p->dport);
	put32(l4 + 4, p->seq);
	l4[12] = (uint8_t)((l4_len / 4) << 4);
	if (p->kind == LB_HC_PKT_SYN) {
		l4[13] = TCP_SYN;
		put16(l4 + 14, LB_HC_PKT_WINDOW);
		l4[20] = TCP_OPT_MSS;
		l4[21] = 4;
		put16(l4 + 22, p->mss);
	} else {
		l4[13] = TCP_RST;
	}
	put16(l4 + 16, l4_cksum(ip, p->af, l4, l4_len, PROTO_TCP));
}

int
lb_hc_pkt_build(const struct lb_hc_pkt *p, const uint8_t src_mac[6], uint8_t *buf, size_t cap)
{
	struct lb_backend be;
	uint16_t overhead, l4_len, ip_len, inner_len;
	uint8_t proto, *inner;

	if (p->kind > LB_HC_PKT_UDP || (p->af != LB_AF_INET && p->af != LB_AF_INET6) ||
	    (p->be_af != LB_AF_INET && p->be_af != LB_AF_INET6) ||
	    (p->encap_type != LB_ENCAP_IPIP && p->encap_type != LB_ENCAP_GUE))
		return -EINVAL;
	if ((p->be_af == LB_AF_INET && !p->encap->has_src4) ||
	    (p->be_af == LB_AF_INET6 && !p->encap->has_src6))
		return -EINVAL;
	if (p->kind == LB_HC_PKT_UDP && p->payload_len > LB_HC_PKT_MAX_PAYLOAD)
		return -EMSGSIZE;
	overhead = lb_encap_overhead(p->be_af, p->encap_type);
	l4_len = inner_l4_len(p);
	ip_len = p->af == LB_AF_INET ? LB_IP4_HLEN : LB_IP6_HLEN;
	inner_len = (uint16_t)(ip_len + l4_len);
	if (cap < (size_t)LB_ETH_HLEN + overhead + inner_len)
		return -ENOSPC;
	proto = p->kind == LB_HC_PKT_UDP ? LB_PROTO_UDP : PROTO_TCP;
	inner = buf + LB_ETH_HLEN + overhead;
	write_inner_ip(inner, p, proto, l4_len);
	write_l4(inner, inner + ip_len, p, l4_len);

	memset(&be, 0, sizeof(be));
	be.addr = p->be_addr;
	be.af = p->be_af;
	lb_encap_write(buf, p->encap, src_mac, &be, p->encap_type, p->af, inner_len, 0,
	               p->flow_hash);
	return LB_ETH_HLEN + overhead + inner_len;
}

uint64_t
lb_hc_pkt_flow_hash(const struct lb_hash_key *key, const struct lb_hc_pkt *p)
{
	struct lb_flow_key fk;
	uint16_t sp = rte_cpu_to_be_16(p->sport), dp = rte_cpu_to_be_16(p->dport);

	memset(&fk, 0, sizeof(fk));
	fk.src = p->src;
	fk.dst = p->vip;
	memcpy(&fk.sport, &sp, 2);
	memcpy(&fk.dport, &dp, 2);
	fk.proto = p->kind == LB_HC_PKT_UDP ? LB_PROTO_UDP : PROTO_TCP;
	fk.af = p->af;
	return lb_hash_flow(key, &fk);
}
