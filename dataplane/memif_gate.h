/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memif gate: on memif ports, the workers and the EAL interrupt thread
 * (where DPDK 22.11's memif PMD runs its control channel, with no lock against
 * the data path) take turns, and the ports are closed in that thread. Used by
 * spillwayd and spillgen; memif_gate.c explains why. Start-up and shutdown
 * only, plus the interrupt thread's callback.
 */
#ifndef LB_MEMIF_GATE_H
#define LB_MEMIF_GATE_H

#include <stdbool.h>
#include <stdint.h>

struct rte_rcu_qsbr;
struct lb_memif_gate;

/** Whether a DPDK port is a memif one (driver net_memif). */
bool lb_memif_gate_is_memif(uint16_t port);

/**
 * Right after the ports exist: register the gate's interrupt source (an
 * eventfd, never unregistered) if port is a memif port, or, with port < 0, if
 * any DPDK port is. The workers are not gated until lb_memif_gate_start().
 * prog names the program in the gate's messages ("spillwayd").
 *
 * @return 0 with *out the gate, or NULL when there is no memif port;
 *   -ENOMEM, or -EIO when an eventfd or the interrupt source cannot be set up.
 */
int lb_memif_gate_create(int port, const char *prog, struct lb_memif_gate **out);

/**
 * Before the workers start: take them off the ports and let the gate give
 * them back. *n_ports is how many ports the workers may use (they read it
 * with acquire before every pass or burst): the gate stores its present value
 * while it holds the interrupt thread and 0 while it does not, and waits for
 * a grace period of qsv (the workers' quiescent states) after storing 0.
 * Nothing when g is NULL.
 */
void lb_memif_gate_start(struct lb_memif_gate *g, uint16_t *n_ports, struct rte_rcu_qsbr *qsv);

/** After the workers have stopped: end the gate. Nothing when g is NULL or not started. */
void lb_memif_gate_stop(struct lb_memif_gate *g);

/**
 * After lb_memif_gate_stop(): have the interrupt thread stop and close a
 * memif port.
 *
 * @return 0, or -ETIMEDOUT (after a message) when the thread did not answer
 *   within 5 s: the caller then closes the port itself.
 */
int lb_memif_gate_close_port(struct lb_memif_gate *g, uint16_t port);

/**
 * After the closes: two empty calls in the interrupt thread, one after the
 * other, so that the epoll rebuild a close caused is over before EAL cleans
 * up. The gate stays registered (and allocated) until the process ends.
 * Nothing when g is NULL.
 */
void lb_memif_gate_settle(struct lb_memif_gate *g);

#endif /* LB_MEMIF_GATE_H */
