/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port configuration rules of port_caps.h: MTU, scatter, multi-segment
 * and checksum offload from a device's stated limits and capabilities.
 * Start-up only.
 */
#include <errno.h>
#include <stdio.h>

#include "dataplane/port_caps.h"

uint16_t
lb_port_caps_max_mtu(const struct rte_eth_dev_info *info)
{
	uint32_t overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
	uint32_t max = info->max_mtu;

	/* ethdev's eth_dev_get_overhead_len(). */
	if (info->max_mtu != UINT16_MAX && info->max_rx_pktlen > info->max_mtu)
		overhead = info->max_rx_pktlen - info->max_mtu;
	if (info->max_rx_pktlen <= overhead)
		return 0;
	if (info->max_rx_pktlen - overhead < max)
		max = info->max_rx_pktlen - overhead;
	return (uint16_t)max;
}

int
lb_port_caps_choose(const struct rte_eth_dev_info *info, uint16_t encap_mtu, uint32_t buf_room,
                    struct lb_port_caps *out, char *err, size_t errlen)
{
	uint16_t max = lb_port_caps_max_mtu(info);
	uint16_t mtu = encap_mtu > LB_PORT_RX_MTU_FLOOR ? encap_mtu : LB_PORT_RX_MTU_FLOOR;

	*out = (struct lb_port_caps){0};
	if (encap_mtu > max) {
		snprintf(err, errlen, "encap.mtu %u is above the device's maximum MTU %u",
		         encap_mtu, max);
		return -EINVAL;
	}
	if (mtu > max)
		mtu = max;
	if (mtu < info->min_mtu)
		mtu = info->min_mtu;
	out->mtu = mtu;
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		out->tx_offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if ((uint32_t)mtu + LB_PORT_L2_ROOM > buf_room) {
		if ((info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) &&
		    (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
			out->rx_offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
		else
			snprintf(
			        out->warning, sizeof(out->warning),
			        "frames over %u bytes do not fit one mbuf and the device lacks %s: "
			        "they reach the pipeline only if the PMD chains them itself",
			        buf_room,
			        !(info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)
			                ? "RX scatter"
			                : "TX multi-segment");
	}
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
		out->tx_offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
		out->tx_ip_cksum = true;
	}
	return 0;
}
