/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet parser: turns a frame into the flow key the balancer steers on, or a
 * reason to drop it. Every length is checked before the bytes it covers are
 * read, and all multi-byte fields are read with byte loads or memcpy, so any
 * alignment and any truncation is safe. Runs once per packet: the untagged
 * IPv4 TCP/UDP case is tested first at every step.
 *
 * Choices the interface leaves open:
 * - At most two VLAN tags (0x8100 or 0x88A8, in either position). A third tag
 *   is well-formed Ethernet we do not handle: LB_PARSE_NOT_LB, so it goes to
 *   the exception path rather than being counted as malformed.
 * - A fragment (IPv4 MF or offset, IPv6 fragment header with M or offset) is
 *   keyed without ports, the first fragment included, so every fragment of a
 *   datagram maps to the same key. Fragments of anything but TCP/UDP
 *   (including ICMP) are LB_PARSE_NOT_LB. For an IPv6 first fragment the
 *   protocol is found by walking on past the fragment header; a non-first
 *   fragment stops there and uses the header's next header field.
 * - In an ICMP error the quoted packet was sent by us (the backend), so its
 *   fragmentation is unrelated to the client's: a quoted first fragment keeps
 *   its ports, only a quoted non-first fragment is keyed without ports.
 * - An ICMP error is the balancer's only if its quote names a TCP/UDP flow
 *   (the pipeline then asks whether that flow is a VIP's). An ICMP header or
 *   quote cut short, a quote that is not IP or not TCP/UDP, is someone else's:
 *   LB_PARSE_NOT_LB, the rule bpf/xsk_steer.bpf.c applies, so both modes send
 *   it to the same place.
 * - IPv6 jumbograms are not supported: a payload length of 0 means no payload.
 * - Multi-segment frames (lb_parse_frame): every header the parser reads must
 *   lie in the first, contiguous segment; only the IP total / payload length is
 *   checked against the whole frame. A header that crosses the segment boundary
 *   is reported with the trunc reason of that header (eth, ip4, ip6 for an
 *   extension header, l4, icmp for the quoted packet), as if the frame ended
 *   there: the parser never gathers bytes from later segments. With 2 KiB mbufs
 *   that only happens to frames whose headers are absurdly long.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dataplane/parse.h"

#define ETH_HLEN 14 /* dst MAC, src MAC, ethertype */
#define VLAN_HLEN 4 /* TCI + the next ethertype */
#define MAX_VLAN_TAGS 2
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD
#define ETHERTYPE_VLAN 0x8100 /* 802.1Q, also stacked as QinQ */
#define ETHERTYPE_QINQ 0x88A8 /* 802.1ad service tag */

#define IP4_MIN_HLEN 20
#define IP4_DF 0x4000
#define IP4_MF 0x2000
#define IP4_OFFSET 0x1FFF

#define IP6_HLEN 40
#define IP6_EXT_MIN 8          /* every walked extension header is 8-byte units */
#define IP6_FRAG_OFFSET 0xFFF8 /* fragment header: offset in 8-byte units */
#define IP6_FRAG_M 0x0001      /* fragment header: more fragments */
#define IP6_MAX_EXT 8          /* bounds the walk; RFC 8200 chains are short */

#define PROTO_HOPOPTS 0
#define PROTO_ICMP 1
#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_ROUTING 43
#define PROTO_FRAGMENT 44
#define PROTO_ICMPV6 58
#define PROTO_DSTOPTS 60

#define TCP_MIN_HLEN 20
#define UDP_HLEN 8
#define ICMP_HLEN 8    /* type, code, checksum, 4 bytes of rest-of-header */
#define QUOTED_PORTS 4 /* of the quoted L4 header only the ports are needed */

#define ICMP_DEST_UNREACH 3 /* includes fragmentation needed (code 4) */
#define ICMP_TIME_EXCEEDED 11
#define ICMP_PARAMETER_PROB 12
#define ICMPV6_DEST_UNREACH 1
#define ICMPV6_PACKET_TOO_BIG 2
#define ICMPV6_TIME_EXCEEDED 3
#define ICMPV6_PARAM_PROB 4

/* Where an IPv6 extension header walk ended with respect to fragmentation. */
enum ip6_frag {
	IP6_NOT_FRAG = 0,
	IP6_FIRST_FRAG,    /* offset 0, M set: protocol known, no ports wanted */
	IP6_NONFIRST_FRAG, /* offset != 0: walk stopped at the fragment header */
};

/* Error codes for a header walk, which differ for outer and quoted packets. */
struct walk_err {
	int trunc;
	int malformed;
};

static inline uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline int
is_tcp_udp(uint8_t proto)
{
	return proto == PROTO_TCP || proto == PROTO_UDP;
}

/*
 * Walk IPv6 extension headers starting at next header nh, with the fixed
 * header at ip and l3_len bytes of IP packet available. On success *nh is the
 * upper-layer protocol (or the fragment header's next header for a non-first
 * fragment), *off where that header starts and *frag what was seen.
 */
static inline int
ip6_walk(const uint8_t *ip, uint32_t l3_len, uint8_t *nh, uint32_t *off, enum ip6_frag *frag,
         const struct walk_err *err)
{
	uint8_t next = *nh;
	uint32_t o = IP6_HLEN;
	int seen_frag = 0;

	for (unsigned int n = 0;; n++) {
		if (next != PROTO_HOPOPTS && next != PROTO_ROUTING && next != PROTO_DSTOPTS &&
		    next != PROTO_FRAGMENT)
			break;
		if (n == IP6_MAX_EXT)
			return err->malformed;
		/* o <= l3_len always holds, so the subtraction cannot wrap. */
		if (l3_len - o < IP6_EXT_MIN)
			return err->trunc;
		if (next == PROTO_FRAGMENT) {
			uint16_t fo = rd16(ip + o + 2);

			/* Two fragment headers in one chain make no sense. */
			if (seen_frag)
				return err->malformed;
			seen_frag = 1;
			next = ip[o];
			o += IP6_EXT_MIN;
			if (fo & IP6_FRAG_OFFSET) {
				*frag = IP6_NONFIRST_FRAG;
				break;
			}
			/* Offset 0 and no M is an atomic fragment (RFC 6946): not one. */
			if (fo & IP6_FRAG_M)
				*frag = IP6_FIRST_FRAG;
		} else {
			uint32_t hl = ((uint32_t)ip[o + 1] + 1) * 8;

			if (l3_len - o < hl)
				return err->trunc;
			next = ip[o];
			o += hl;
		}
	}
	*nh = next;
	*off = o;
	return LB_PARSE_OK;
}

/* TCP or UDP header of the outer packet: check it is whole, take the ports. */
static inline int
parse_l4(const uint8_t *l4, uint32_t avail, uint8_t proto, struct lb_pkt_info *info)
{
	struct lb_flow_key *key = &info->key;

	if (proto == PROTO_TCP) {
		uint32_t doff;

		if (avail < TCP_MIN_HLEN)
			return LB_DROP_L4_TRUNC;
		doff = (uint32_t)(l4[12] >> 4) * 4;
		/* No L4 malformed reason exists; a short data offset cuts the header. */
		if (doff < TCP_MIN_HLEN || doff > avail)
			return LB_DROP_L4_TRUNC;
		info->tcp_flags = l4[13];
	} else if (avail < UDP_HLEN) {
		return LB_DROP_L4_TRUNC;
	}
	memcpy(&key->sport, l4, 2);
	memcpy(&key->dport, l4 + 2, 2);
	return LB_PARSE_OK;
}

/*
 * The ports of a quoted TCP/UDP header, reversed: the quoted packet went from
 * the VIP to the client, the key is for the client-to-VIP direction.
 */
static inline int
quoted_ports(const uint8_t *l4, uint32_t avail, struct lb_flow_key *key)
{
	if (avail < QUOTED_PORTS)
		return LB_DROP_ICMP_TRUNC;
	memcpy(&key->dport, l4, 2);
	memcpy(&key->sport, l4 + 2, 2);
	return LB_PARSE_OK;
}

/*
 * ICMP error: icmp points at the ICMP header, avail runs to the end of the
 * outer IP packet. The quoted packet is usually cut short, so only its header
 * and ports must be present; its own total length is not checked.
 */
static int
parse_icmp4(const uint8_t *icmp, uint32_t avail, struct lb_pkt_info *info)
{
	const uint8_t *in;
	uint32_t hlen;
	uint8_t type;
	uint8_t proto;

	if (avail < ICMP_HLEN)
		return LB_PARSE_NOT_LB;
	type = icmp[0];
	if (type != ICMP_DEST_UNREACH && type != ICMP_TIME_EXCEEDED && type != ICMP_PARAMETER_PROB)
		return LB_PARSE_NOT_LB;
	in = icmp + ICMP_HLEN;
	avail -= ICMP_HLEN;
	if (avail < IP4_MIN_HLEN)
		return LB_PARSE_NOT_LB;
	if (in[0] >> 4 != 4)
		return LB_PARSE_NOT_LB;
	hlen = (uint32_t)(in[0] & 0x0F) * 4;
	if (hlen < IP4_MIN_HLEN)
		return LB_PARSE_NOT_LB;
	if (hlen > avail)
		return LB_PARSE_NOT_LB;
	proto = in[9];
	if (!is_tcp_udp(proto))
		return LB_PARSE_NOT_LB;

	info->key.proto = proto;
	memcpy(info->key.src.b, in + 16, 4);
	memcpy(info->key.dst.b, in + 12, 4);
	info->flags |= LB_PKT_ICMP_ERROR;
	if (rd16(in + 6) & IP4_OFFSET) {
		info->flags |= LB_PKT_FRAGMENT;
		return LB_PARSE_OK;
	}
	return quoted_ports(in + hlen, avail - hlen, &info->key) == LB_PARSE_OK ? LB_PARSE_OK
	                                                                        : LB_PARSE_NOT_LB;
}

static int
parse_icmp6(const uint8_t *icmp, uint32_t avail, struct lb_pkt_info *info)
{
	static const struct walk_err err = {LB_DROP_ICMP_TRUNC, LB_DROP_ICMP_MALFORMED};
	enum ip6_frag frag = IP6_NOT_FRAG;
	const uint8_t *in;
	uint32_t off;
	uint8_t type;
	uint8_t nh;
	int rc;

	if (avail < ICMP_HLEN)
		return LB_PARSE_NOT_LB;
	type = icmp[0];
	/* Types 1-4 are the errors; 128 and up are informational (echo, ND). */
	if (type < ICMPV6_DEST_UNREACH || type > ICMPV6_PARAM_PROB)
		return LB_PARSE_NOT_LB;
	in = icmp + ICMP_HLEN;
	avail -= ICMP_HLEN;
	if (avail < IP6_HLEN)
		return LB_PARSE_NOT_LB;
	if (in[0] >> 4 != 6)
		return LB_PARSE_NOT_LB;
	/* Extension headers must fit in what was quoted, not in the payload length. */
	nh = in[6];
	rc = ip6_walk(in, avail, &nh, &off, &frag, &err);
	if (rc != LB_PARSE_OK)
		return LB_PARSE_NOT_LB;
	if (!is_tcp_udp(nh))
		return LB_PARSE_NOT_LB;

	info->key.proto = nh;
	memcpy(info->key.src.b, in + 24, 16);
	memcpy(info->key.dst.b, in + 8, 16);
	info->flags |= LB_PKT_ICMP_ERROR;
	if (frag == IP6_NONFIRST_FRAG) {
		info->flags |= LB_PKT_FRAGMENT;
		return LB_PARSE_OK;
	}
	return quoted_ports(in + off, avail - off, &info->key) == LB_PARSE_OK ? LB_PARSE_OK
	                                                                      : LB_PARSE_NOT_LB;
}

/*
 * ip points at the IPv4 header; seg runs to the end of the first segment (the
 * bytes that may be read), avail to the end of the frame (seg <= avail).
 */
static inline int
parse_ip4(const uint8_t *ip, uint32_t seg, uint32_t avail, struct lb_pkt_info *info)
{
	uint32_t hlen;
	uint32_t tot;
	uint32_t lim;
	uint16_t frag;
	uint8_t proto;

	if (seg < IP4_MIN_HLEN)
		return LB_DROP_IP4_TRUNC;
	if (ip[0] >> 4 != 4)
		return LB_DROP_IP4_MALFORMED;
	hlen = (uint32_t)(ip[0] & 0x0F) * 4;
	if (hlen < IP4_MIN_HLEN)
		return LB_DROP_IP4_MALFORMED;
	if (hlen > seg)
		return LB_DROP_IP4_TRUNC;
	tot = rd16(ip + 2);
	if (tot < hlen)
		return LB_DROP_IP4_MALFORMED;
	/* Bytes past tot are Ethernet padding and are ignored. */
	if (tot > avail)
		return LB_DROP_IP4_TRUNC;
	/* Upper-layer headers are read only within the packet and the segment. */
	lim = tot < seg ? tot : seg;

	info->l3_len = (uint16_t)tot;
	info->tos = ip[1];
	proto = ip[9];
	info->key.proto = proto;
	info->key.af = LB_AF_INET;
	memcpy(info->key.src.b, ip + 12, 4);
	memcpy(info->key.dst.b, ip + 16, 4);
	frag = rd16(ip + 6);
	if (frag & IP4_DF)
		info->flags |= LB_PKT_DF;
	if (frag & (IP4_MF | IP4_OFFSET)) {
		info->flags |=
		        (frag & IP4_OFFSET) ? LB_PKT_FRAGMENT | LB_PKT_FRAG_LATER : LB_PKT_FRAGMENT;
		return is_tcp_udp(proto) ? LB_PARSE_OK : LB_PARSE_NOT_LB;
	}

	if (is_tcp_udp(proto))
		return parse_l4(ip + hlen, lim - hlen, proto, info);
	if (proto == PROTO_ICMP)
		return parse_icmp4(ip + hlen, lim - hlen, info);
	return LB_PARSE_NOT_LB;
}

/* ip points at the IPv6 header; seg and avail as for parse_ip4(). */
static inline int
parse_ip6(const uint8_t *ip, uint32_t seg, uint32_t avail, struct lb_pkt_info *info)
{
	static const struct walk_err err = {LB_DROP_IP6_TRUNC, LB_DROP_IP6_MALFORMED};
	enum ip6_frag frag = IP6_NOT_FRAG;
	uint32_t l3_len;
	uint32_t lim;
	uint32_t off;
	uint8_t nh;
	int rc;

	if (seg < IP6_HLEN)
		return LB_DROP_IP6_TRUNC;
	if (ip[0] >> 4 != 6)
		return LB_DROP_IP6_MALFORMED;
	l3_len = IP6_HLEN + (uint32_t)rd16(ip + 4);
	if (l3_len > avail)
		return LB_DROP_IP6_TRUNC;
	/*
	 * Only a frame over 64 KiB can hold such a packet, and l3_len could not
	 * represent it.
	 */
	if (l3_len > UINT16_MAX)
		return LB_DROP_IP6_MALFORMED;
	/* Extension and upper-layer headers are read only within the segment. */
	lim = l3_len < seg ? l3_len : seg;

	info->l3_len = (uint16_t)l3_len;
	info->tos = (uint8_t)((ip[0] & 0x0F) << 4 | ip[1] >> 4);
	info->key.af = LB_AF_INET6;
	memcpy(info->key.src.b, ip + 8, 16);
	memcpy(info->key.dst.b, ip + 24, 16);

	nh = ip[6];
	if (is_tcp_udp(nh)) {
		off = IP6_HLEN;
	} else {
		rc = ip6_walk(ip, lim, &nh, &off, &frag, &err);
		if (rc != LB_PARSE_OK)
			return rc;
	}
	info->key.proto = nh;
	if (frag != IP6_NOT_FRAG) {
		info->flags |= frag == IP6_NONFIRST_FRAG ? LB_PKT_FRAGMENT | LB_PKT_FRAG_LATER
		                                         : LB_PKT_FRAGMENT;
		return is_tcp_udp(nh) ? LB_PARSE_OK : LB_PARSE_NOT_LB;
	}

	if (is_tcp_udp(nh))
		return parse_l4(ip + off, lim - off, nh, info);
	if (nh == PROTO_ICMPV6)
		return parse_icmp6(ip + off, lim - off, info);
	return LB_PARSE_NOT_LB;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
_Static_assert(sizeof(struct lb_pkt_info) == 48 && offsetof(struct lb_pkt_info, l2_len) == 40 &&
                       offsetof(struct lb_flow_key, sport) == 32,
               "fast path writes lb_pkt_info as six 64-bit words");

/*
 * The common case, untagged IPv4 without options or fragmentation carrying a
 * whole TCP/UDP header, in straight-line code: true with *info filled exactly
 * as the general path would fill it, or false (nothing decided) to take the
 * general path. info is written as whole 64-bit words rather than zeroed and
 * then patched field by field, so that the VIP lookup and the hash, which load
 * it as 64-bit words right away, are forwarded from the store buffer instead of
 * waiting for a dozen narrow stores to reach the cache. len is the readable
 * length (first segment, at most the frame).
 */
static inline bool
parse_fast_ip4(const uint8_t *data, uint32_t len, uint32_t frame_len, struct lb_pkt_info *info)
{
	const uint8_t *ip = data + ETH_HLEN;
	const uint8_t *l4 = ip + IP4_MIN_HLEN;
	uint32_t tot, lim, src, dst, ports;
	uint16_t frag;
	uint8_t proto, flags;
	uint64_t q0, q4, q5;
	const uint64_t zero = 0;

	if (len < ETH_HLEN + IP4_MIN_HLEN + UDP_HLEN || rd16(data + 12) != ETHERTYPE_IPV4 ||
	    ip[0] != 0x45)
		return false;
	tot = rd16(ip + 2);
	frag = rd16(ip + 6);
	proto = ip[9];
	if (tot < IP4_MIN_HLEN || tot > frame_len - ETH_HLEN || (frag & (IP4_MF | IP4_OFFSET)))
		return false;
	lim = tot < len - ETH_HLEN ? tot : len - ETH_HLEN;
	if (proto == PROTO_TCP) {
		uint32_t doff;

		if (lim < IP4_MIN_HLEN + TCP_MIN_HLEN)
			return false;
		doff = (uint32_t)(l4[12] >> 4) * 4;
		if (doff < TCP_MIN_HLEN || doff > lim - IP4_MIN_HLEN)
			return false;
	} else if (proto != PROTO_UDP || lim < IP4_MIN_HLEN + UDP_HLEN) {
		return false;
	}
	flags = (frag & IP4_DF) ? LB_PKT_DF : 0;
	memcpy(&src, ip + 12, 4);
	memcpy(&dst, ip + 16, 4);
	memcpy(&ports, l4, 4); /* sport, dport as on the wire */
	q0 = src;
	q4 = ports | (uint64_t)proto << 32 | (uint64_t)LB_AF_INET << 40;
	q5 = ETH_HLEN | (uint64_t)tot << 16 | (uint64_t)flags << 32 | (uint64_t)ip[1] << 40 |
	     (uint64_t)(proto == PROTO_TCP ? l4[13] : 0) << 48;
	/* Separate stores of separate variables: an array copied in one go went
	 * through the stack and stalled on its own narrower stores. */
	memcpy((uint8_t *)info, &q0, 8);
	memcpy((uint8_t *)info + 8, &zero, 8);
	q0 = dst;
	memcpy((uint8_t *)info + 16, &q0, 8);
	memcpy((uint8_t *)info + 24, &zero, 8);
	memcpy((uint8_t *)info + 32, &q4, 8);
	memcpy((uint8_t *)info + 40, &q5, 8);
	return true;
}
#else
static inline bool
parse_fast_ip4(const uint8_t *data, uint32_t len, uint32_t frame_len, struct lb_pkt_info *info)
{
	(void)data, (void)len, (void)frame_len, (void)info;
	return false;
}
#endif

int
lb_parse_frame(const uint8_t *data, uint32_t seg_len, uint32_t frame_len, struct lb_pkt_info *info)
{
	uint32_t len = seg_len;
	uint32_t off = ETH_HLEN;
	uint16_t type;

	/* A first segment longer than the frame is a caller bug; never read past either. */
	if (frame_len < len)
		len = frame_len;
	if (parse_fast_ip4(data, len, frame_len, info))
		return LB_PARSE_OK;
	/* The key is hashed as bytes: unused address bytes and padding must be 0. */
	memset(info, 0, sizeof(*info));
	if (len < ETH_HLEN)
		return LB_DROP_ETH_TRUNC;
	type = rd16(data + 12);
	if (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) {
		for (unsigned int tags = 0;; tags++) {
			if (tags == MAX_VLAN_TAGS)
				return LB_PARSE_NOT_LB;
			if (len - off < VLAN_HLEN)
				return LB_DROP_ETH_TRUNC;
			type = rd16(data + off + 2);
			off += VLAN_HLEN;
			if (type != ETHERTYPE_VLAN && type != ETHERTYPE_QINQ)
				break;
		}
	}
	info->l2_len = (uint16_t)off;

	if (type == ETHERTYPE_IPV4)
		return parse_ip4(data + off, len - off, frame_len - off, info);
	if (type == ETHERTYPE_IPV6)
		return parse_ip6(data + off, len - off, frame_len - off, info);
	return LB_PARSE_NOT_LB;
}

int
lb_parse(const uint8_t *data, uint32_t len, struct lb_pkt_info *info)
{
	return lb_parse_frame(data, len, len, info);
}
