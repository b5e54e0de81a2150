/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port set-up: every DPDK port EAL was given (PMD or vdev) gets one RX and one
 * TX queue per worker, RSS across them when there is more than one worker
 * (or the device's own spreading: af_packet's fanout, a memif peer), its MTU
 * and offloads (port_caps.h), and a shared mbuf pool. Start-up and shutdown
 * only; nothing here runs per packet.
 */
#ifndef LB_PORT_H
#define LB_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mempool.h>

#include "dataplane/port_caps.h"

/**
 * Configure and start one port with n_queues RX/TX queue pairs, the MTU and
 * offloads lb_port_caps_choose() picks for encap_mtu (in caps), and
 * link-state interrupts if the PMD has them (lsc); logs one line about it.
 * A net_memif port whose start fails (a client before its server) is started
 * again once a second, up to LB_PORT_MEMIF_WAIT_S times or a pending
 * SIGTERM/SIGINT.
 *
 * @return 0, or -errno with a reason in err (no RSS for several queues, too
 *   many queues for the device, encap_mtu beyond the device, a DPDK call
 *   failing).
 */
int lb_port_start(uint16_t port, uint16_t n_queues, struct rte_mempool *pool, uint16_t encap_mtu,
                  struct lb_port_caps *caps, bool *lsc, char *err, size_t errlen);

/* Start attempts of a memif client port waiting for its server, one a second. */
#define LB_PORT_MEMIF_WAIT_S 60

/**
 * True for the drivers that spread flows over several queues without RSS
 * (net_af_packet: PACKET_FANOUT_HASH; net_memif: the peer picks the queue).
 */
bool lb_port_spreads_itself(const char *driver_name);

/** Stop and close a port (flushes a net_pcap TX file). */
void lb_port_close(uint16_t port);

/** An mbuf pool sized for n_ports ports with n_queues queue pairs each. */
struct rte_mempool *lb_port_pool_create(uint16_t n_ports, uint16_t n_queues);

#endif /* LB_PORT_H */
