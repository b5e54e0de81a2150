/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Types shared by the XDP steering program (xsk_steer.bpf.c) and its user-space loader: the VIP
 * map key and value, the per-CPU counter indexes, and the map names and sizes. Only <linux/types.h>
 * is used so that the same header compiles for -target bpf and for the host.
 */
#ifndef LB_XSK_STEER_H
#define LB_XSK_STEER_H

#include <linux/types.h>

/* Entries in the VIP map: one per (address, port, protocol) VIP, port 0 for port-agnostic ones. */
#ifndef LB_XSK_VIP_MAX
#define LB_XSK_VIP_MAX 4096
#endif

/* Entries in xsks_map, indexed by the receiving queue (ctx->rx_queue_index). */
#ifndef LB_XSK_QUEUE_MAX
#define LB_XSK_QUEUE_MAX 64
#endif

/* VLAN tags skipped before the EtherType that carries IP: 2 covers QinQ (802.1ad + 802.1Q). */
#ifndef LB_XSK_VLAN_MAX
#define LB_XSK_VLAN_MAX 2
#endif

/* IPv6 extension headers walked before giving up (XDP_PASS, counted as malformed). */
#ifndef LB_XSK_IP6_EXT_MAX
#define LB_XSK_IP6_EXT_MAX 8
#endif

/*
 * Map names, as seen by bpftool and as file names under the pin root when the maps are pinned by
 * name (BPF object names hold at most 15 characters). DPDK's af_xdp PMD looks up "xsks_map".
 */
#define LB_XSK_MAP_XSKS "xsks_map"
#define LB_XSK_MAP_VIPS "spillway_vips"
#define LB_XSK_MAP_STATS "spillway_xstat"

/* Address families as stored in the key: the Linux AF_INET / AF_INET6 values. */
#define LB_XSK_AF_INET 2
#define LB_XSK_AF_INET6 10

/*
 * VIP map key. An IPv4 address sits in addr[0..3], the rest zero. port is in network byte order
 * and is 0 for a port-agnostic VIP. 20 bytes, no padding: user space must zero the whole key.
 */
struct lb_xsk_vip_key {
	__u8 family; /* LB_XSK_AF_INET or LB_XSK_AF_INET6 */
	__u8 proto;  /* IPPROTO_TCP or IPPROTO_UDP */
	__be16 port; /* destination port, network order; 0 = any port */
	__u8 addr[16];
};

/*
 * Value flag of a port-0 key that is not a port-agnostic VIP but takes the fragments of the
 * address's port-specific VIPs (fragments carry no ports past the first; the data path sends
 * them to the address's VIP with the lowest port). Non-fragments never match such an entry.
 */
#define LB_XSK_VIP_FRAG_ONLY 1u

/* VIP map value. vip_id lets user space correlate; flags: LB_XSK_VIP_FRAG_ONLY or 0. */
struct lb_xsk_vip_value {
	__u32 vip_id;
	__u32 flags;
};

/* Indexes into the per-CPU counter array (one __u64 per CPU per index). */
enum lb_xsk_counter {
	LB_XSK_CNT_REDIRECT = 0,   /* VIP packet handed to bpf_redirect_map() and accepted */
	LB_XSK_CNT_PASS_NO_XSK,    /* VIP packet, but no socket on this queue in xsks_map */
	LB_XSK_CNT_PASS_NOT_IP,    /* ARP, LLDP, anything not IPv4/IPv6 after the VLAN tags */
	LB_XSK_CNT_PASS_NOT_L4,    /* IP but neither TCP nor UDP (ICMP, ICMPv6/ND, GRE...) */
	LB_XSK_CNT_PASS_NOT_VIP,   /* TCP/UDP whose destination is not in the VIP map */
	LB_XSK_CNT_PASS_FRAGMENT,  /* fragment whose address has no port-agnostic VIP */
	LB_XSK_CNT_PASS_MALFORMED, /* truncated headers, bad IHL, too many VLAN/ext headers */
	LB_XSK_CNT_MAX,
};

#endif /* LB_XSK_STEER_H */
