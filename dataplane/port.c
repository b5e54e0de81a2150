/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet device and mempool set-up for spillwayd. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "pipeline.h"
#include "port.h"

#define RX_DESC 1024
#define TX_DESC 1024
#define POOL_CACHE 256

struct rte_mempool *
lb_port_pool_create(uint16_t n_ports, uint16_t n_queues)
{
	/* Every descriptor may hold an mbuf, plus each worker's burst in flight and
	 * the per-lcore caches. */
	unsigned int n = (unsigned int)n_ports * n_queues * (RX_DESC + TX_DESC) +
	                 (unsigned int)n_queues * (4 * LB_BURST + POOL_CACHE) + 1024;

	return rte_pktmbuf_pool_create("lb_mbufs", n, POOL_CACHE, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
	                               (int)rte_socket_id());
}

/*
 * Devices that spread flows over their queues without RSS: the af_packet PMD
 * joins its queues' sockets in a PACKET_FANOUT_HASH group (the kernel's flow
 * hash picks the queue), and a memif peer picks the queue of each packet
 * itself, as a NIC's RSS would.
 */
bool
lb_port_spreads_itself(const char *driver_name)
{
	static const char *const spreading[] = {"net_af_packet", "net_memif"};

	for (size_t i = 0; driver_name != NULL && i < RTE_DIM(spreading); i++)
		if (strcmp(driver_name, spreading[i]) == 0)
			return true;
	return false;
}

int
lb_port_start(uint16_t port, uint16_t n_queues, struct rte_mempool *pool, char *err, size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = RX_DESC, nb_txd = TX_DESC;
	int socket = rte_eth_dev_socket_id(port);
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0) {
		snprintf(err, errlen, "port %u: cannot read device info: %s", port, strerror(-rc));
		return rc;
	}
	if (n_queues > info.max_rx_queues || n_queues > info.max_tx_queues) {
		snprintf(err, errlen,
		         "port %u (%s): %u workers need %u queue pairs, the device has %u RX / %u "
		         "TX",
		         port, info.driver_name, n_queues, n_queues, info.max_rx_queues,
		         info.max_tx_queues);
		return -EINVAL;
	}
	if (n_queues > 1 && !lb_port_spreads_itself(info.driver_name)) {
		if (info.flow_type_rss_offloads == 0) {
			snprintf(err, errlen,
			         "port %u (%s): no RSS, so %u workers cannot share it; run one "
			         "worker lcore",
			         port, info.driver_name, n_queues);
			return -ENOTSUP;
		}
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
		        (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) &
		        info.flow_type_rss_offloads;
	}
	if (socket < 0)
		socket = (int)rte_socket_id();
	if ((rc = rte_eth_dev_configure(port, n_queues, n_queues, &conf)) != 0 ||
	    (rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd)) != 0) {
		snprintf(err, errlen, "port %u: configure failed: %s", port, strerror(-rc));
		return rc;
	}
	for (uint16_t q = 0; q < n_queues; q++) {
		rc = rte_eth_rx_queue_setup(port, q, nb_rxd, (unsigned int)socket, NULL, pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(port, q, nb_txd, (unsigned int)socket, NULL);
		if (rc != 0) {
			snprintf(err, errlen, "port %u queue %u: set-up failed: %s", port, q,
			         strerror(-rc));
			return rc;
		}
	}
	rc = rte_eth_dev_start(port);
	if (rc != 0) {
		snprintf(err, errlen, "port %u: start failed: %s", port, strerror(-rc));
		return rc;
	}
	/* The balancer receives frames for VIPs whatever their MAC; some vdevs
	 * cannot do promiscuous mode and do not need it. */
	(void)rte_eth_promiscuous_enable(port);
	return 0;
}

void
lb_port_close(uint16_t port)
{
	(void)rte_eth_dev_stop(port);
	(void)rte_eth_dev_close(port);
}
