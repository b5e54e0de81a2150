/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XDP program for a NIC shared with the kernel: frames whose destination (address, port, protocol)
 * is a spillway VIP go to the AF_XDP socket of the receiving queue, everything else (ARP, ND, the
 * host's own traffic, malformed frames) goes to the kernel with XDP_PASS. Each verdict is counted
 * per CPU by reason. DPDK 22.11's af_xdp PMD loads this object with xdp_prog=PATH and fills
 * xsks_map itself.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bpf/xsk_steer.h"

#define IP4_MF 0x2000     /* frag_off: more fragments */
#define IP4_OFFSET 0x1FFF /* frag_off: fragment offset in 8-byte units */
#define IP6_FRAG_OFFSET 0xFFF8
#define IP6_FRAG_M 0x0001

#ifndef IPPROTO_FRAGMENT
#define IPPROTO_FRAGMENT 44
#endif
#ifndef IPPROTO_HOPOPTS
#define IPPROTO_HOPOPTS 0
#endif
#ifndef IPPROTO_ROUTING
#define IPPROTO_ROUTING 43
#endif
#ifndef IPPROTO_DSTOPTS
#define IPPROTO_DSTOPTS 60
#endif

/*
 * Set by the loader before load (rodata). When true the program returns XDP_REDIRECT for a VIP
 * without calling bpf_redirect_map(), so BPF_PROG_TEST_RUN can see the verdict without an XSK.
 */
const volatile bool test_mode = false;

/* AF_XDP sockets by receive queue; filled by DPDK's af_xdp PMD (or by libxdp). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, LB_XSK_QUEUE_MAX);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

/*
 * VIPs to steer, kept equal to the published snapshot by spillwayd. Not pinned: DPDK's af_xdp PMD
 * loads this object (xdp_prog=PATH) and spillwayd reaches the maps through the program attached
 * to the interface (lb_xsk_maps_from_ifindex), so each instance has its own maps.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LB_XSK_VIP_MAX);
	__type(key, struct lb_xsk_vip_key);
	__type(value, struct lb_xsk_vip_value);
} spillway_vips SEC(".maps");

/* Verdict counters, indexed by enum lb_xsk_counter; summed over CPUs by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_XSK_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} spillway_xstat SEC(".maps");

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

struct ip6_ext {
	__u8 nexthdr;
	__u8 hdrlen;
};

struct ip6_frag {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 id;
};

static __always_inline int
count(__u32 idx, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&spillway_xstat, &idx);

	if (c)
		*c += 1; /* per-CPU slot: no atomic needed */
	return verdict;
}

static __always_inline bool
is_vip(struct lb_xsk_vip_key *key, bool frag)
{
	struct lb_xsk_vip_value *v;

	if (key->port && bpf_map_lookup_elem(&spillway_vips, key))
		return true;
	key->port = 0; /* port-agnostic VIP on the same address and protocol */
	v = bpf_map_lookup_elem(&spillway_vips, key);
	/* A fragments-only entry takes fragments, never whole datagrams to other ports. */
	return v && (frag || !(v->flags & LB_XSK_VIP_FRAG_ONLY));
}

/*
 * Walks the IPv6 extension headers after the fixed header. Returns the offset of the upper-layer
 * header and sets *proto, or -1 when a header is cut short or the chain is too long. *frag is set
 * to FRAG_FIRST or FRAG_LATER for a fragment; a later fragment stops at its fragment header.
 */
enum { FRAG_NONE, FRAG_FIRST, FRAG_LATER };

static __always_inline int
walk_ip6(void *data, void *data_end, int off, __u8 *proto, __u8 *frag)
{
	__u8 nh = *proto;

	/* Up to LB_XSK_IP6_EXT_MAX extension headers, then the upper layer: one more pass. AH is
	 * not walked (dataplane/parse.c does not either: such a packet is not the balancer's). */
	for (int i = 0; i <= LB_XSK_IP6_EXT_MAX; i++) {
		switch (nh) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS: {
			struct ip6_ext *e = data + off;

			if ((void *)(e + 1) > data_end)
				return -1;
			nh = e->nexthdr;
			off += ((int)e->hdrlen + 1) * 8;
			break;
		}
		case IPPROTO_FRAGMENT: {
			struct ip6_frag *f = data + off;
			__u16 fo;

			if ((void *)(f + 1) > data_end)
				return -1;
			fo = bpf_ntohs(f->frag_off);
			if (!(fo & (IP6_FRAG_OFFSET | IP6_FRAG_M))) {
				/* atomic fragment: a whole datagram */
				nh = f->nexthdr;
				off += sizeof(*f);
				break;
			}
			*frag = FRAG_FIRST;
			nh = f->nexthdr;
			off += sizeof(*f);
			if (fo & IP6_FRAG_OFFSET) {
				*frag = FRAG_LATER;
				*proto = nh;
				return off;
			}
			break;
		}
		default:
			*proto = nh;
			return off;
		}
		/* Keeps the offset bounded for the verifier; no real frame is this long. */
		if (off > 0xFFFF)
			return -1;
	}
	return -1;
}

/*
 * ICMP errors about a packet a backend sent from a VIP (fragmentation needed, packet too big,
 * time exceeded, unreachable, parameter problem) belong to spillway, which matches them to the
 * flow through the quoted header, as dataplane/parse.c does. off is the ICMP header's offset,
 * l3_end the offset where the outer IP packet ends (the quote is read only before it), proto ICMP
 * or ICMPv6 under the matching IP version. Fills key with the quoted packet's source (the VIP),
 * protocol and source port, *frag when the quoted packet is a later fragment (no ports). Returns
 * false for anything else: informational ICMP (echo, ND), cut short, not TCP/UDP; such an error is
 * not spillway's, and dataplane/parse.c calls it LB_PARSE_NOT_LB.
 */
static __always_inline bool
icmp_error_key(void *data, void *data_end, int off, int l3_end, __u8 proto,
               struct lb_xsk_vip_key *key, bool *frag)
{
	__u8 *icmp = data + off;
	__u8 type, inner;
	__be16 *ports;

	if ((void *)(icmp + 8) > data_end || off + 8 > l3_end)
		return false;
	type = icmp[0];
	off += 8;
	if (proto == IPPROTO_ICMP && key->family == LB_XSK_AF_INET) {
		struct iphdr *in = data + off;
		int ihl;

		if (type != 3 && type != 11 && type != 12)
			return false;
		if ((void *)(in + 1) > data_end)
			return false;
		ihl = in->ihl * 4;
		if (in->version != 4 || ihl < (int)sizeof(*in))
			return false;
		__builtin_memcpy(key->addr, &in->saddr, 4);
		inner = in->protocol;
		*frag = (in->frag_off & bpf_htons(IP4_OFFSET)) != 0;
		off += ihl;
	} else if (proto == IPPROTO_ICMPV6 && key->family == LB_XSK_AF_INET6) {
		struct ipv6hdr *in6 = data + off;
		__u8 f = FRAG_NONE;

		if (type < 1 || type > 4) /* 128 and up: echo, ND, MLD */
			return false;
		if ((void *)(in6 + 1) > data_end || in6->version != 6)
			return false;
		__builtin_memcpy(key->addr, &in6->saddr, 16);
		inner = in6->nexthdr;
		off = walk_ip6(data, data_end, off + sizeof(*in6), &inner, &f);
		if (off < 0)
			return false;
		*frag = f == FRAG_LATER;
	} else {
		return false;
	}
	if (inner != IPPROTO_TCP && inner != IPPROTO_UDP)
		return false;
	key->proto = inner;
	if (*frag) {
		key->port = 0;
		return off <= l3_end;
	}
	if (off > 0xFFFF)
		return false;
	ports = data + off;
	/* The quote ends with the outer IP packet: Ethernet padding is not quoted. */
	if ((void *)(ports + 2) > data_end || off + 4 > l3_end)
		return false;
	key->port = ports[0]; /* the quoted packet's source port: the VIP's */
	return true;
}

SEC("xdp")
int
xsk_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct lb_xsk_vip_key key = {};
	struct ethhdr *eth = data;
	bool frag = false;
	__u16 eth_proto;
	__u8 proto;
	int off, l3_end;

	if ((void *)(eth + 1) > data_end)
		return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
	eth_proto = eth->h_proto;
	off = sizeof(*eth);

	for (int i = 0; i < LB_XSK_VLAN_MAX; i++) {
		struct vlan_tag *v = data + off;

		if (eth_proto != bpf_htons(ETH_P_8021Q) && eth_proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(v + 1) > data_end)
			return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
		eth_proto = v->proto;
		off += sizeof(*v);
	}

	if (eth_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + off;
		int ihl;

		if ((void *)(ip + 1) > data_end)
			return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
		ihl = ip->ihl * 4;
		if (ip->version != 4 || ihl < (int)sizeof(*ip))
			return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
		if (data + off + ihl > data_end)
			return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
		key.family = LB_XSK_AF_INET;
		l3_end = off + bpf_ntohs(ip->tot_len);
		__builtin_memcpy(key.addr, &ip->daddr, 4);
		proto = ip->protocol;
		frag = (ip->frag_off & bpf_htons(IP4_MF | IP4_OFFSET)) != 0;
		off += ihl;
	} else if (eth_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;

		if ((void *)(ip6 + 1) > data_end)
			return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
		if (ip6->version != 6)
			return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
		key.family = LB_XSK_AF_INET6;
		l3_end = off + (int)sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
		__builtin_memcpy(key.addr, &ip6->daddr, 16);
		__u8 f = FRAG_NONE;

		proto = ip6->nexthdr;
		off = walk_ip6(data, data_end, off + sizeof(*ip6), &proto, &f);
		if (off < 0)
			return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
		frag = f != FRAG_NONE;
	} else {
		return count(LB_XSK_CNT_PASS_NOT_IP, XDP_PASS);
	}

	if ((proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) && !frag) {
		bool qfrag = false;

		if (icmp_error_key(data, data_end, off, l3_end, proto, &key, &qfrag) &&
		    is_vip(&key, qfrag))
			goto steer;
		return count(LB_XSK_CNT_PASS_NOT_L4, XDP_PASS);
	}
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return count(LB_XSK_CNT_PASS_NOT_L4, XDP_PASS);
	key.proto = proto;

	if (frag) {
		/*
		 * Fragments carry no ports past the first, so all fragments of a datagram are
		 * keyed the same way, by the port-0 entry of the address: a port-agnostic VIP,
		 * or the fragments-only entry spillwayd adds for port-specific VIPs.
		 */
		key.port = 0;
		if (!is_vip(&key, true))
			return count(LB_XSK_CNT_PASS_FRAGMENT, XDP_PASS);
	} else {
		if (off > 0xFFFF)
			return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
		if (proto == IPPROTO_TCP) {
			struct tcphdr *th = data + off;

			if ((void *)(th + 1) > data_end)
				return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
			key.port = th->dest;
		} else {
			struct udphdr *uh = data + off;

			if ((void *)(uh + 1) > data_end)
				return count(LB_XSK_CNT_PASS_MALFORMED, XDP_PASS);
			key.port = uh->dest;
		}
		if (!is_vip(&key, false))
			return count(LB_XSK_CNT_PASS_NOT_VIP, XDP_PASS);
	}

steer:
	if (test_mode)
		return count(LB_XSK_CNT_REDIRECT, XDP_REDIRECT);
	if (bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS) == XDP_REDIRECT)
		return count(LB_XSK_CNT_REDIRECT, XDP_REDIRECT);
	return count(LB_XSK_CNT_PASS_NO_XSK, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
