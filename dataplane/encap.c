/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Outer header construction. Fields are written with memcpy/byte stores, so the
 * buffer needs no alignment; checksums use DPDK's inline helpers (no EAL).
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "dataplane/encap.h"

#define ICMP6_PACKET_TOO_BIG 2
#define PROTO_IPIP 4
#define PROTO_IPV6 41
#define PROTO_UDP 17
#define PROTO_ICMP 1
#define PROTO_ICMPV6 58

static void
write_ip6(uint8_t *p, uint8_t tc, uint32_t flow_label, uint16_t payload_len, uint8_t proto,
          const union lb_ip *src, const union lb_ip *dst)
{
	struct rte_ipv6_hdr h;

	h.vtc_flow = rte_cpu_to_be_32((6u << 28) | ((uint32_t)tc << 20) | (flow_label & 0xFFFFF));
	h.payload_len = rte_cpu_to_be_16(payload_len);
	h.proto = proto;
	h.hop_limits = LB_OUTER_TTL;
	memcpy(h.src_addr, src->b, 16);
	memcpy(h.dst_addr, dst->b, 16);
	memcpy(p, &h, sizeof(h));
}

/* Ones'-complement checksum over an IPv6 pseudo-header and l4_len bytes at l4. */
static uint16_t
ip6_l4_cksum(const uint8_t *ip6, const uint8_t *l4, uint32_t l4_len, uint8_t proto)
{
	struct {
		uint32_t len;
		uint8_t zero[3];
		uint8_t proto;
	} ph = {rte_cpu_to_be_32(l4_len), {0, 0, 0}, proto};
	uint32_t sum;

	sum = rte_raw_cksum(ip6 + 8, 32); /* source and destination addresses */
	sum += rte_raw_cksum(&ph, sizeof(ph));
	sum += rte_raw_cksum(l4, l4_len);
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t
lb_encap_write(uint8_t *hdr, const struct lb_encap_conf *conf, const uint8_t src_mac[6],
               const struct lb_backend *be, uint8_t encap, uint8_t inner_af, uint16_t inner_len,
               uint8_t tos, uint64_t flow_hash)
{
	uint8_t inner_proto = inner_af == LB_AF_INET ? PROTO_IPIP : PROTO_IPV6;
	uint16_t overhead = lb_encap_overhead(be->af, encap);
	uint8_t *ip = hdr + LB_ETH_HLEN;
	uint8_t proto = encap == LB_ENCAP_GUE ? PROTO_UDP : inner_proto;

	if (be->af == LB_AF_INET)
		return lb_encap_write4(hdr, conf, src_mac, be, encap, inner_af, inner_len, tos,
		                       flow_hash);
	lb_encap_put_eth(hdr, conf->next_hop_mac, src_mac, RTE_ETHER_TYPE_IPV6);
	write_ip6(ip, tos, (uint32_t)flow_hash, (uint16_t)(overhead - LB_IP6_HLEN + inner_len),
	          proto, &conf->src6, &be->addr);
	if (encap == LB_ENCAP_GUE) {
		uint8_t *udp = ip + LB_IP6_HLEN;
		struct rte_udp_hdr u;
		uint16_t ck;

		u.src_port = rte_cpu_to_be_16(lb_encap_gue_sport(flow_hash));
		u.dst_port = conf->gue_port;
		u.dgram_len = rte_cpu_to_be_16((uint16_t)(LB_UDP_HLEN + inner_len));
		u.dgram_cksum = 0;
		memcpy(udp, &u, sizeof(u));
		/* RFC 8200 8.1: UDP over IPv6 needs a checksum. 0 is sent as 0xFFFF. */
		ck = ip6_l4_cksum(ip, udp, LB_UDP_HLEN + inner_len, PROTO_UDP);
		if (ck == 0)
			ck = 0xFFFF;
		memcpy(udp + 6, &ck, 2);
	}
	return (uint16_t)(LB_ETH_HLEN + overhead);
}

uint16_t
lb_icmp_too_big_write(uint8_t *hdr, const struct lb_encap_conf *conf, const uint8_t eth_dst[6],
                      const uint8_t eth_src[6], uint8_t af, uint16_t qlen, uint32_t mtu)
{
	uint16_t hlen = lb_icmp_too_big_hlen(af);
	uint8_t *ip = hdr + LB_ETH_HLEN;
	union lb_ip client = {0};

	if (af == LB_AF_INET) {
		uint8_t *icmp = ip + LB_IP4_HLEN;
		uint16_t mtu16 = rte_cpu_to_be_16((uint16_t)mtu), ck;

		if (!conf->has_src4)
			return 0;
		/* The quoted packet starts right after our headers; its source is the client. */
		memcpy(client.b, hdr + hlen + 12, 4);
		lb_encap_put_eth(hdr, eth_dst, eth_src, RTE_ETHER_TYPE_IPV4);
		lb_encap_put_ip4(ip, 0, (uint16_t)(LB_IP4_HLEN + LB_ICMP_HLEN + qlen), PROTO_ICMP,
		                 &conf->src4, &client);
		icmp[0] = 3; /* destination unreachable */
		icmp[1] = 4; /* fragmentation needed and DF set (RFC 1191) */
		icmp[2] = icmp[3] = 0;
		icmp[4] = icmp[5] = 0;
		memcpy(icmp + 6, &mtu16, 2);
		ck = (uint16_t)~rte_raw_cksum(icmp, LB_ICMP_HLEN + qlen);
		memcpy(icmp + 2, &ck, 2);
	} else {
		uint8_t *icmp = ip + LB_IP6_HLEN;
		uint32_t mtu32 = rte_cpu_to_be_32(mtu);
		uint16_t ck;

		if (!conf->has_src6)
			return 0;
		memcpy(client.b, hdr + hlen + 8, 16);
		lb_encap_put_eth(hdr, eth_dst, eth_src, RTE_ETHER_TYPE_IPV6);
		write_ip6(ip, 0, 0, (uint16_t)(LB_ICMP_HLEN + qlen), PROTO_ICMPV6, &conf->src6,
		          &client);
		icmp[0] = ICMP6_PACKET_TOO_BIG;
		icmp[1] = 0;
		icmp[2] = icmp[3] = 0;
		memcpy(icmp + 4, &mtu32, 4);
		ck = ip6_l4_cksum(ip, icmp, LB_ICMP_HLEN + qlen, PROTO_ICMPV6);
		memcpy(icmp + 2, &ck, 2);
	}
	return hlen;
}
