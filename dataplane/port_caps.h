/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a port is configured with, decided from its device info alone: the MTU
 * from encap.mtu, RX scatter and TX multi-segment, and the outer IPv4 header
 * checksum by the NIC. A pure function (no EAL, no device access), so the
 * rules are unit-tested with hand-made rte_eth_dev_info structs.
 */
#ifndef LB_PORT_CAPS_H
#define LB_PORT_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_ethdev.h>

/* Never received below this: the IP MTU of a standard Ethernet segment. */
#define LB_PORT_RX_MTU_FLOOR RTE_ETHER_MTU

/* L2 bytes in a received buffer beyond the MTU: Ethernet and two VLAN tags. */
#define LB_PORT_L2_ROOM (RTE_ETHER_HDR_LEN + 2 * RTE_VLAN_HLEN)

struct lb_port_caps {
	uint16_t mtu;         /* the port's MTU (largest IP packet, RX and TX) */
	uint64_t rx_offloads; /* for rte_eth_conf.rxmode.offloads */
	uint64_t tx_offloads; /* for rte_eth_conf.txmode.offloads */
	bool tx_ip_cksum;     /* the NIC fills the outer IPv4 header checksum */
	char warning[160];    /* why large frames may not be received, or "" */
};

/**
 * The largest MTU info allows: its max_mtu, and max_rx_pktlen less the L2
 * overhead ethdev assumes for it (max_rx_pktlen - max_mtu when the device
 * states max_mtu, else Ethernet header + CRC).
 */
uint16_t lb_port_caps_max_mtu(const struct rte_eth_dev_info *info);

/**
 * Choose a port's configuration. Rules:
 *  - MTU: max(encap_mtu, LB_PORT_RX_MTU_FLOOR), so a client's full-size
 *    packet is received (and answered with a too-big) even when encap.mtu is
 *    smaller; lowered to the device's maximum if that is below the floor but
 *    not below encap_mtu; raised to its min_mtu.
 *  - RX scatter when MTU + LB_PORT_L2_ROOM exceeds buf_room (one mbuf's data
 *    room) and the device offers both RX scatter and TX multi-segment; if it
 *    lacks either, no scatter and out->warning says so (net_pcap and memif
 *    chain large frames without it; a NIC drops them). TX multi-segment
 *    whenever offered (the pipeline forwards the chains a PMD gives it).
 *  - TX IPv4 checksum whenever offered.
 *
 * @return 0, or -EINVAL with a reason in err: encap_mtu above the device's
 *   maximum MTU.
 */
int lb_port_caps_choose(const struct rte_eth_dev_info *info, uint16_t encap_mtu, uint32_t buf_room,
                        struct lb_port_caps *out, char *err, size_t errlen);

#endif /* LB_PORT_CAPS_H */
