/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker lcore: RX bursts from every port, the pipeline, TX bursts, then an
 * RCU quiescent state. One worker owns queue `queue` of every port.
 */
#ifndef LB_WORKER_H
#define LB_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_rcu_qsbr.h>

#include "dataplane/pipeline.h"

/* Which ports a worker reads and where its output goes; shared, read-only. */
struct lb_io_conf {
	uint16_t n_rx_ports;
	uint16_t rx_ports[RTE_MAX_ETHPORTS];
	int out_port; /* -1: one-armed, out of the port the packet came in on */
	int exc_port; /* -1: none, non-VIP traffic is dropped */
	uint8_t port_mac[RTE_MAX_ETHPORTS][6]; /* each port's MAC (rte_eth_macaddr_get) */
};

struct lb_worker_ctx {
	struct lb_worker w; /* per-core pipeline state */
	unsigned int lcore;
	uint16_t queue;          /* this worker's queue on every port */
	unsigned int rcu_id;     /* thread id in the QSBR variable */
	unsigned int tick_shift; /* flow-table tick = TSC >> tick_shift */
	const struct lb_io_conf *io;
	struct lb_snapshot *const *snap; /* published pointer, loaded with acquire */
	struct rte_rcu_qsbr *qsv;
	const volatile bool *stop;
	/* The hot-key window control has opened (w.sketch must be set); NULL = no sketch. */
	const volatile uint64_t *window;
} __attribute__((aligned(64)));

/*
 * Test-only (SPILLWAY_TEST_STALL_FILE, docs/testing.md): while entry rcu_id is
 * set, that worker keeps forwarding but reports no quiescent state, as a
 * stalled worker would. Set only by the control thread in that test mode.
 */
extern volatile bool lb_worker_test_stall[RTE_MAX_LCORE];

/** lcore entry point; arg is a struct lb_worker_ctx. Returns when *stop is set. */
int lb_worker_main(void *arg);

#endif /* LB_WORKER_H */
