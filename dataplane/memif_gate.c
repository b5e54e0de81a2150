/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memif gate: one interrupt source of spillwayd's or spillgen's own in the
 * EAL interrupt thread, which takes turns with the workers on memif ports and
 * closes those ports there.
 *
 * DPDK 22.11's memif PMD runs its control channel in the EAL interrupt thread,
 * with no lock against the data path or against the application's own calls:
 *
 * 1. When the peer goes away, that thread's memif_disconnect() clears the
 *    "connected" flag and then unmaps the shared rings (memif_free_regions())
 *    while a worker may be inside rte_eth_rx_burst()/rte_eth_tx_burst(): one
 *    that passed the flag check just before, and was preempted, resumes on
 *    unmapped memory (seen: SIGSEGV in eth_memif_rx() on ring->tail/head).
 * 2. rte_eth_dev_stop()/close() from another thread can run memif_disconnect()
 *    at the same time as the interrupt thread does, or free the queues it uses.
 * 3. Closing a connected port unregisters its control channel, and any
 *    unregistration makes the interrupt thread rebuild its epoll set, reading
 *    every interrupt source; the memif server's listener stays registered (the
 *    PMD frees its socket without unregistering it) with its handle in DPDK
 *    memory, and rte_eal_cleanup() neither stops the thread nor waits for it:
 *    a rebuild late enough runs into the unmapping of DPDK memory (seen in
 *    spillgen: SIGSEGV in rte_intr_fd_get() under rte_eal_cleanup()). EAL
 *    alarms would cause one more such rebuild inside rte_eal_cleanup() itself
 *    (rte_eal_alarm_cleanup() unregisters their source), so none are used.
 *
 * So with a memif port the program registers one interrupt source of its own,
 * an eventfd, and never unregisters it. Its callback, in the interrupt thread:
 * - while the workers run, is the gate: it holds the interrupt thread while the
 *   workers use the ports, then every GATE_HOLD_MS takes the workers off them
 *   (*n_ports = 0: spillwayd's io.n_rx_ports, so no RX and no TX either;
 *   spillgen's one port), waits for an RCU grace period on their QSBR
 *   variable (every burst begun before has returned), and returns with its
 *   eventfd readable again, so that the interrupt thread handles what came in
 *   meanwhile (memif messages, a peer's disconnect) and then calls it again,
 *   and the workers go back to the ports. The workers wait for as long as the
 *   interrupt thread takes to get a CPU and run: microseconds on a free core,
 *   milliseconds on one shared with a busy poller (spillgen's and spillwayd's
 *   on a 2-core machine). Hence the long hold: with the links up the thread
 *   only has a peer's disconnect to handle, at most GATE_HOLD_MS late (the
 *   workers meanwhile use rings that stay mapped);
 * - afterwards runs what the main thread asks: stop and close a memif port
 *   (2), then two empty calls, one after the other: a rebuild pending when the
 *   first is asked for is done before the second runs (3).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_rcu_qsbr.h>

#include "dataplane/memif_gate.h"

#define GATE_HOLD_MS 1000    /* every memif link up */
#define GATE_HOLD_DOWN_MS 10 /* a memif link down or connecting: handshake sooner */

enum intr_op { OP_NONE, OP_SYNC, OP_CLOSE };

struct lb_memif_gate {
	struct rte_intr_handle *ih;
	const char *prog;
	int kick_fd;   /* eventfd, the source: readable = run the callback */
	int wake_fd;   /* eventfd: ends a hold early */
	bool gate;     /* main -> callback: hold for the workers */
	int op;        /* main -> callback: enum intr_op; back to OP_NONE when done */
	uint16_t port; /* OP_CLOSE's */
	uint16_t *n_ports;
	uint16_t n_open; /* the workers' real *n_ports */
	struct rte_rcu_qsbr *qsv;
	uint16_t n_memif;
	uint16_t memif[RTE_MAX_ETHPORTS];
};

bool
lb_memif_gate_is_memif(uint16_t port)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(port, &info) == 0 && info.driver_name != NULL &&
	       strcmp(info.driver_name, "net_memif") == 0;
}

static void
intr_kick(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one)) {
		/* An eventfd takes a 1 unless it is near 2^64: cannot fail. */
	}
}

/* In the EAL interrupt thread. */
static void
intr_cb(void *arg)
{
	struct lb_memif_gate *x = arg;
	uint64_t v;
	int op;

	if (read(x->kick_fd, &v, sizeof(v)) < 0) {
		/* Not readable: nothing to clear. */
	}
	if (__atomic_load_n(&x->gate, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd = {.fd = x->wake_fd, .events = POLLIN};
		bool up = true;

		for (uint16_t i = 0; i < x->n_memif; i++) {
			struct rte_eth_link link = {0};

			if (rte_eth_link_get_nowait(x->memif[i], &link) != 0 || !link.link_status)
				up = false;
		}
		/* Hold: the workers use the ports. */
		__atomic_store_n(x->n_ports, x->n_open, __ATOMIC_RELEASE);
		(void)poll(&pfd, 1, up ? GATE_HOLD_MS : GATE_HOLD_DOWN_MS);
		/* Release: the workers leave the ports, after the bursts they are in. */
		__atomic_store_n(x->n_ports, 0, __ATOMIC_RELEASE);
		rte_rcu_qsbr_check(x->qsv, rte_rcu_qsbr_start(x->qsv), true);
		if (__atomic_load_n(&x->gate, __ATOMIC_ACQUIRE)) {
			intr_kick(x->kick_fd);
			return;
		}
	}
	op = __atomic_load_n(&x->op, __ATOMIC_ACQUIRE);
	if (op == OP_CLOSE) {
		(void)rte_eth_dev_stop(x->port);
		(void)rte_eth_dev_close(x->port);
	}
	if (op != OP_NONE)
		__atomic_store_n(&x->op, OP_NONE, __ATOMIC_RELEASE);
}

/* Have the callback do op (and end the gate); false if it did not within 5 s. */
static bool
intr_run(struct lb_memif_gate *x, enum intr_op op, uint16_t port)
{
	x->port = port;
	__atomic_store_n(&x->op, op, __ATOMIC_RELEASE);
	__atomic_store_n(&x->gate, false, __ATOMIC_RELEASE);
	intr_kick(x->wake_fd);
	intr_kick(x->kick_fd);
	for (int ms = 0; ms < 5000; ms++) {
		if (__atomic_load_n(&x->op, __ATOMIC_ACQUIRE) == OP_NONE)
			return true;
		usleep(1000);
	}
	fprintf(stderr, "%s: the EAL interrupt thread did not answer in 5 s\n", x->prog);
	return false;
}

int
lb_memif_gate_create(int port, const char *prog, struct lb_memif_gate **out)
{
	struct lb_memif_gate *x = calloc(1, sizeof(*x));
	uint16_t p;

	*out = NULL;
	if (x == NULL)
		return -ENOMEM;
	x->prog = prog;
	if (port >= 0) {
		if (lb_memif_gate_is_memif((uint16_t)port))
			x->memif[x->n_memif++] = (uint16_t)port;
	} else {
		RTE_ETH_FOREACH_DEV (p)
			if (lb_memif_gate_is_memif(p))
				x->memif[x->n_memif++] = p;
	}
	if (x->n_memif == 0) {
		free(x);
		return 0;
	}
	x->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	x->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	/* The handle setters are experimental in 22.11 (stable since 23.11). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	x->ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	if (x->kick_fd >= 0 && x->wake_fd >= 0 && x->ih != NULL &&
	    rte_intr_fd_set(x->ih, x->kick_fd) == 0 &&
	    rte_intr_type_set(x->ih, RTE_INTR_HANDLE_EXT) == 0 &&
	    rte_intr_callback_register(x->ih, intr_cb, x) == 0) {
		*out = x;
		return 0;
	}
	rte_intr_instance_free(x->ih);
#pragma GCC diagnostic pop
	if (x->kick_fd >= 0)
		close(x->kick_fd);
	if (x->wake_fd >= 0)
		close(x->wake_fd);
	free(x);
	return -EIO;
}

void
lb_memif_gate_start(struct lb_memif_gate *g, uint16_t *n_ports, struct rte_rcu_qsbr *qsv)
{
	if (g == NULL)
		return;
	g->n_ports = n_ports;
	g->n_open = *n_ports;
	g->qsv = qsv;
	__atomic_store_n(n_ports, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&g->gate, true, __ATOMIC_RELEASE);
	intr_kick(g->kick_fd);
}

void
lb_memif_gate_stop(struct lb_memif_gate *g)
{
	if (g != NULL && __atomic_load_n(&g->gate, __ATOMIC_ACQUIRE))
		(void)intr_run(g, OP_SYNC, 0);
}

int
lb_memif_gate_close_port(struct lb_memif_gate *g, uint16_t port)
{
	return intr_run(g, OP_CLOSE, port) ? 0 : -ETIMEDOUT;
}

void
lb_memif_gate_settle(struct lb_memif_gate *g)
{
	if (g != NULL && intr_run(g, OP_SYNC, 0))
		(void)intr_run(g, OP_SYNC, 0);
}
