/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_port_caps_choose(): device-info structs built here (like
 * net_null, net_memif and a NIC with offloads) against the rules stated below,
 * which restate the port's requirements rather than the code: the MTU covers
 * encap.mtu and a standard 1500-byte client packet, frames that do not fit one
 * mbuf need RX scatter and TX multi-segment (else a warning), offered extras are
 * not enabled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/port_caps.h"

/* The data room of a default mbuf after its headroom (RTE_MBUF_DEFAULT_BUF_SIZE). */
#define ROOM 2048u

/* What rte_eth_dev_info_get() reports for a PMD that states no limits (net_null). */
static struct rte_eth_dev_info
plain(void)
{
	struct rte_eth_dev_info i;

	memset(&i, 0, sizeof(i));
	i.min_mtu = 68;
	i.max_mtu = UINT16_MAX;
	i.max_rx_pktlen = UINT32_MAX;
	return i;
}

static int
choose(const struct rte_eth_dev_info *i, uint16_t mtu, uint32_t room, struct lb_port_caps *c,
       char *err)
{
	return lb_port_caps_choose(i, mtu, room, c, err, 256);
}

/* No offloads offered: nothing enabled; MTU 1500 for encap.mtu 1280..1500, else encap.mtu. */
static void
test_plain_device(void **state)
{
	struct rte_eth_dev_info i = plain();
	struct lb_port_caps c;
	char err[256];

	(void)state;
	assert_int_equal(choose(&i, 1280, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 1500);
	assert_true(c.rx_offloads == 0 && c.tx_offloads == 0 && !c.tx_ip_cksum);
	assert_int_equal(choose(&i, 1500, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 1500);
	/* 2000 + 14 + 8 = 2022 bytes fit a 2048-byte buffer: no scatter needed. */
	assert_int_equal(choose(&i, 2000, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 2000);
	assert_true(c.rx_offloads == 0 && c.tx_offloads == 0);
}

/*
 * net_memif states max_rx_pktlen 1518 and no max_mtu: 1518 - 18 (Ethernet
 * header and CRC) = 1500 at most. encap.mtu 1501 is refused naming the field.
 */
static void
test_memif_limits(void **state)
{
	struct rte_eth_dev_info i = plain();
	struct lb_port_caps c;
	char err[256];

	(void)state;
	i.max_rx_pktlen = 1518;
	i.tx_offload_capa = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	assert_int_equal(lb_port_caps_max_mtu(&i), 1500);
	assert_int_equal(choose(&i, 1500, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 1500);
	assert_int_equal(c.tx_offloads, RTE_ETH_TX_OFFLOAD_MULTI_SEGS);
	assert_int_equal(c.rx_offloads, 0);
	assert_int_equal(choose(&i, 1501, ROOM, &c, err), -EINVAL);
	assert_non_null(strstr(err, "encap.mtu 1501"));
	assert_non_null(strstr(err, "1500"));
}

/*
 * A device stating max_mtu 1400 and max_rx_pktlen 1426 (overhead 26): encap.mtu
 * 1280 gets MTU 1400 (the floor lowered to what the device does), 1400 fits,
 * 1401 is refused. A min_mtu above 1500 raises the MTU to it.
 */
static void
test_device_max_and_min_mtu(void **state)
{
	struct rte_eth_dev_info i = plain();
	struct lb_port_caps c;
	char err[256];

	(void)state;
	i.max_mtu = 1400;
	i.max_rx_pktlen = 1426;
	assert_int_equal(choose(&i, 1280, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 1400);
	assert_int_equal(choose(&i, 1400, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 1400);
	assert_int_equal(choose(&i, 1401, ROOM, &c, err), -EINVAL);
	assert_non_null(strstr(err, "encap.mtu"));

	i = plain();
	i.max_mtu = 9600;
	i.max_rx_pktlen = 9618;
	assert_int_equal(lb_port_caps_max_mtu(&i), 9600);
	i.max_rx_pktlen = 9000; /* frame limit below max_mtu + 18: the frame limit rules */
	assert_int_equal(lb_port_caps_max_mtu(&i), 9000 - 18);
	i = plain();
	i.min_mtu = 1600;
	assert_int_equal(choose(&i, 1280, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 1600);
}

/*
 * A NIC offering scatter, multi-segment, IPv4/TCP/UDP checksums, VLAN strip and
 * RSS hash: multi-segment and the IPv4 header checksum are enabled, scatter
 * only once MTU + 22 bytes (Ethernet, two VLAN tags) exceeds the buffer, the
 * rest never.
 */
static void
test_nic_offloads(void **state)
{
	struct rte_eth_dev_info i = plain();
	struct lb_port_caps c;
	char err[256];

	(void)state;
	i.max_mtu = 9702;
	i.max_rx_pktlen = 9728;
	i.rx_offload_capa = RTE_ETH_RX_OFFLOAD_SCATTER | RTE_ETH_RX_OFFLOAD_VLAN_STRIP |
	                    RTE_ETH_RX_OFFLOAD_RSS_HASH | RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	i.tx_offload_capa = RTE_ETH_TX_OFFLOAD_MULTI_SEGS | RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
	                    RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM |
	                    RTE_ETH_TX_OFFLOAD_VLAN_INSERT;
	assert_int_equal(choose(&i, 1500, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 1500);
	assert_int_equal(c.rx_offloads, 0);
	assert_int_equal(c.tx_offloads,
	                 RTE_ETH_TX_OFFLOAD_MULTI_SEGS | RTE_ETH_TX_OFFLOAD_IPV4_CKSUM);
	assert_true(c.tx_ip_cksum);

	assert_int_equal(choose(&i, 9000, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 9000);
	assert_int_equal(c.rx_offloads, RTE_ETH_RX_OFFLOAD_SCATTER);
	assert_int_equal(c.tx_offloads,
	                 RTE_ETH_TX_OFFLOAD_MULTI_SEGS | RTE_ETH_TX_OFFLOAD_IPV4_CKSUM);

	/* The scatter boundary: 2026 + 22 = 2048 fits, 2027 does not. */
	assert_int_equal(choose(&i, 2026, ROOM, &c, err), 0);
	assert_int_equal(c.rx_offloads, 0);
	assert_int_equal(choose(&i, 2027, ROOM, &c, err), 0);
	assert_int_equal(c.rx_offloads, RTE_ETH_RX_OFFLOAD_SCATTER);
	/* A 9216-byte data room takes jumbo frames whole. */
	assert_int_equal(choose(&i, 9000, 9216, &c, err), 0);
	assert_int_equal(c.rx_offloads, 0);
}

/*
 * Jumbo frames on a device that cannot scatter, or cannot send chains: the
 * port still starts (net_pcap chains large frames by itself) without scatter,
 * with a warning naming what is missing; no warning when nothing is needed.
 */
static void
test_jumbo_without_scatter_warns(void **state)
{
	struct rte_eth_dev_info i = plain();
	struct lb_port_caps c;
	char err[256];

	(void)state;
	i.tx_offload_capa = RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	assert_int_equal(choose(&i, 9000, ROOM, &c, err), 0);
	assert_int_equal(c.mtu, 9000);
	assert_int_equal(c.rx_offloads, 0);
	assert_non_null(strstr(c.warning, "RX scatter"));
	i.tx_offload_capa = 0;
	i.rx_offload_capa = RTE_ETH_RX_OFFLOAD_SCATTER;
	assert_int_equal(choose(&i, 9000, ROOM, &c, err), 0);
	assert_int_equal(c.rx_offloads, 0);
	assert_non_null(strstr(c.warning, "TX multi-segment"));
	assert_int_equal(choose(&i, 1500, ROOM, &c, err), 0);
	assert_string_equal(c.warning, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_plain_device),
	        cmocka_unit_test(test_memif_limits),
	        cmocka_unit_test(test_device_max_and_min_mtu),
	        cmocka_unit_test(test_nic_offloads),
	        cmocka_unit_test(test_jumbo_without_scatter_warns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
