/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ethernet device and mempool set-up for spillwayd: queues, RSS, and the MTU
 * and offloads port_caps.c chooses, logged per port. Start-up only.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "dataplane/pipeline.h"
#include "dataplane/port.h"
#include "dataplane/port_caps.h"

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

/* Append the names of the bits of offloads to buf ("none" if there are none). */
static void
offload_names(char *buf, size_t len, uint64_t offloads, const char *(*name)(uint64_t))
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int b = 0; b < 64 && used < len; b++)
		if (offloads & (UINT64_C(1) << b)) {
			int k = snprintf(buf + used, len - used, "%s%s", used ? "," : "",
			                 name(UINT64_C(1) << b));

			if (k > 0)
				used += (size_t)k;
		}
	if (used == 0)
		snprintf(buf, len, "none");
}

/* One start-up line per port: MTU, offloads, how its link is watched. */
static void
log_port(uint16_t port, const struct rte_eth_dev_info *info, const struct lb_port_caps *caps,
         bool lsc)
{
	char rx[128], tx[128];

	offload_names(rx, sizeof(rx), caps->rx_offloads, rte_eth_dev_rx_offload_name);
	offload_names(tx, sizeof(tx), caps->tx_offloads, rte_eth_dev_tx_offload_name);
	fprintf(stderr,
	        "spillwayd: port %u (%s): MTU %u, RX offloads %s, TX offloads %s, outer IPv4 "
	        "checksum by %s, link state by %s\n",
	        port, info->driver_name, caps->mtu, rx, tx,
	        caps->tx_ip_cksum ? "the NIC" : "software", lsc ? "interrupt" : "polling");
}

/* A stop signal waiting (blocked until the control thread reads it). */
static bool
stop_pending(void)
{
	sigset_t set;

	return sigpending(&set) == 0 &&
	       (sigismember(&set, SIGTERM) == 1 || sigismember(&set, SIGINT) == 1);
}

/*
 * rte_eth_dev_start(); a memif client whose server socket is not there yet
 * (its start fails) is started again every second, up to
 * LB_PORT_MEMIF_WAIT_S times or until a stop signal, its link logged down.
 */
static int
start_or_wait(uint16_t port, const struct rte_eth_dev_info *info)
{
	int rc = rte_eth_dev_start(port);

	if (rc == 0 || strcmp(info->driver_name, "net_memif") != 0)
		return rc;
	fprintf(stderr,
	        "spillwayd: port %u link down (net_memif: no server yet; starting again every "
	        "second for %u s)\n",
	        port, LB_PORT_MEMIF_WAIT_S);
	for (unsigned int i = 0; i < LB_PORT_MEMIF_WAIT_S && rc != 0 && !stop_pending(); i++) {
		sleep(1);
		rc = rte_eth_dev_start(port);
	}
	return rc;
}

int
lb_port_start(uint16_t port, uint16_t n_queues, struct rte_mempool *pool, uint16_t encap_mtu,
              struct lb_port_caps *caps, bool *lsc, char *err, size_t errlen)
{
	char why[192];
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
	rc = lb_port_caps_choose(&info, encap_mtu,
	                         (uint32_t)rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM,
	                         caps, why, sizeof(why));
	if (rc != 0) {
		snprintf(err, errlen, "port %u (%s): %s", port, info.driver_name, why);
		return rc;
	}
	conf.rxmode.mtu = caps->mtu;
	conf.rxmode.offloads = caps->rx_offloads;
	conf.txmode.offloads = caps->tx_offloads;
	*lsc = info.dev_flags != NULL && (*info.dev_flags & RTE_ETH_DEV_INTR_LSC) != 0;
	conf.intr_conf.lsc = *lsc ? 1 : 0;
	if (socket < 0)
		socket = (int)rte_socket_id();
	if ((rc = rte_eth_dev_configure(port, n_queues, n_queues, &conf)) != 0 ||
	    (rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd)) != 0) {
		snprintf(err, errlen, "port %u: configure failed: %s", port, strerror(-rc));
		return rc;
	}
	/* configure records the MTU; a PMD with an MTU operation (a kernel
	 * interface under af_xdp, a NIC's frame limit) applies it here. */
	rc = rte_eth_dev_set_mtu(port, caps->mtu);
	if (rc != 0 && rc != -ENOTSUP) {
		snprintf(err, errlen, "port %u: cannot set MTU %u: %s", port, caps->mtu,
		         strerror(-rc));
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
	rc = start_or_wait(port, &info);
	if (rc != 0) {
		snprintf(err, errlen, "port %u: start failed: %s", port, strerror(-rc));
		return rc;
	}
	/* The balancer receives frames for VIPs whatever their MAC; some vdevs
	 * cannot do promiscuous mode and do not need it. */
	(void)rte_eth_promiscuous_enable(port);
	log_port(port, &info, caps, *lsc);
	if (caps->warning[0] != '\0')
		fprintf(stderr, "spillwayd: port %u (%s): warning: MTU %u: %s\n", port,
		        info.driver_name, caps->mtu, caps->warning);
	return 0;
}

void
lb_port_close(uint16_t port)
{
	(void)rte_eth_dev_stop(port);
	(void)rte_eth_dev_close(port);
}
