// SPDX-License-Identifier: BSD-3-Clause
/*
 * Backend-side decapsulation for the end-to-end tests, for kernels built
 * without IPIP and FOU (CONFIG_NET_IPIP, CONFIG_NET_FOU: the project's
 * Firecracker kernel has neither and loads no modules). Attached with XDP to
 * the backend's veth, it does what `ip link add ipip0 type ipip external` +
 * `ip fou add port GUE_PORT gue` do for what spillway sends, and checks it as
 * strictly as Linux would:
 *   outer IPv4 without options, not a fragment, valid header checksum, total
 *   length within the frame; IPIP (protocol 4), or UDP to GUE_PORT whose
 *   length matches the IP length and whose payload starts with an IPv4
 *   header (GUE variant 1: first two bits 01, then IP version 4); the inner
 *   IPv4 header complete, its total length within what is left.
 * It strips the outer headers (bpf_xdp_adjust_head), keeps the Ethernet
 * header, and passes the inner packet to the stack, which delivers it to the
 * VIP on lo. Anything not encapsulated passes untouched; an encapsulated
 * frame that fails a check is dropped and counted by reason, so the test can
 * assert that nothing spillway sent was malformed.
 *
 * Build: clang -O2 -g -target bpf -I/usr/include/$(cc -print-multiarch) \
 *        -DGUE_PORT=6080 -c e2e_decap.bpf.c -o e2e_decap.bpf.o
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef GUE_PORT
#define GUE_PORT 6080
#endif

enum {
	E2E_IPIP,      /* IPIP decapsulated */
	E2E_GUE,       /* GUE variant 1 decapsulated */
	E2E_BAD_CSUM,  /* outer IPv4 header checksum wrong */
	E2E_BAD_LEN,   /* outer IP or UDP length wrong, or the inner header cut */
	E2E_BAD_INNER, /* not IPv4 after the outer headers (GUE: not variant 1 IPv4) */
	E2E_BAD_FRAG,  /* outer header fragmented or with options */
	E2E_CNT_MAX
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, E2E_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} e2e_decap_cnt SEC(".maps");

static __always_inline int
count(__u32 i, int verdict)
{
	__u64 *v = bpf_map_lookup_elem(&e2e_decap_cnt, &i);

	if (v)
		__sync_fetch_and_add(v, 1);
	return verdict;
}

SEC("xdp")
int
e2e_decap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data, copy;
	struct iphdr *ip = (void *)(eth + 1), *in;
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0, outer, kind;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (ip->protocol == IPPROTO_IPIP) {
		outer = sizeof(struct iphdr);
		kind = E2E_IPIP;
	} else if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *udp = (void *)ip + ip->ihl * 4;

		if (ip->ihl < 5 || (void *)(udp + 1) > end || udp->dest != bpf_htons(GUE_PORT))
			return XDP_PASS;
		if (ip->ihl != 5)
			return count(E2E_BAD_FRAG, XDP_DROP);
		if (bpf_ntohs(udp->len) != bpf_ntohs(ip->tot_len) - sizeof(struct iphdr))
			return count(E2E_BAD_LEN, XDP_DROP);
		outer = sizeof(struct iphdr) + sizeof(struct udphdr);
		kind = E2E_GUE;
	} else {
		return XDP_PASS;
	}
	if (ip->version != 4 || ip->ihl != 5 || (ip->frag_off & bpf_htons(0x3FFF)))
		return count(E2E_BAD_FRAG, XDP_DROP);
#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	if (sum != 0xFFFF)
		return count(E2E_BAD_CSUM, XDP_DROP);
	if ((void *)ip + bpf_ntohs(ip->tot_len) > end || bpf_ntohs(ip->tot_len) < outer + 20)
		return count(E2E_BAD_LEN, XDP_DROP);
	in = (void *)ip + outer;
	if ((void *)(in + 1) > end)
		return count(E2E_BAD_LEN, XDP_DROP);
	/* GUE variant 1 is recognised by its first two bits (01) and then by the IP
	 * version nibble, as Linux's gue_udp_recv() does; for IPIP the same check. */
	if (in->version != 4)
		return count(E2E_BAD_INNER, XDP_DROP);
	if (bpf_ntohs(in->tot_len) != bpf_ntohs(ip->tot_len) - outer)
		return count(E2E_BAD_LEN, XDP_DROP);
	__builtin_memcpy(&copy, eth, sizeof(copy));
	if (bpf_xdp_adjust_head(ctx, (int)outer))
		return count(E2E_BAD_LEN, XDP_DROP);
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return XDP_DROP;
	__builtin_memcpy(eth, &copy, sizeof(copy));
	return count(kind, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
