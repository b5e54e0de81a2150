/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillwayd's per-worker state, set up before the workers start and freed
 * after they stop: one lb_worker_ctx per worker lcore (counters and flow table
 * on the lcore's socket, a hot-key sketch when hot keys are on), the QSBR
 * variable the workers report to, and the arrays control reads. Start-up and
 * shutdown only; the worker loop itself is worker.c.
 */
#ifndef LB_WORKERS_H
#define LB_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lb_config;
struct lb_core_counters;
struct lb_io_conf;
struct lb_sketch;
struct lb_snapshot;
struct lb_worker_ctx;
struct lb_pmtu_table;
struct rte_rcu_qsbr;

/* What every worker shares; the pointers must outlive the workers. */
struct lb_workers_params {
	const struct lb_config *cfg; /* flows (capacity, idle timeouts), hot.enabled */
	const struct lb_io_conf *io;
	const uint8_t *src_mac; /* 6 bytes: the outer Ethernet source */
	bool has_exception;     /* an exception port takes non-VIP traffic */
	bool check_dst_mac;     /* only frames to the receiving port's MAC are balanced */
	bool tx_ip_cksum;       /* every forwarding TX port fills outer IPv4 checksums */
	struct lb_snapshot *const *snap;
	const volatile bool *stop;
	const volatile uint64_t *window; /* the hot-key window control opens */
};

struct lb_workers {
	unsigned int n;
	struct lb_worker_ctx *ctx;       /* [n], in RTE_LCORE_FOREACH_WORKER order */
	struct rte_rcu_qsbr *qsv;        /* n threads; worker i is thread i */
	struct lb_core_counters **cores; /* [n]: ctx[i].w.cnt */
	unsigned int *lcores;            /* [n]: ctx[i].lcore */
	struct lb_sketch **sketches;     /* [n], or NULL when hot keys are off */
	struct lb_pmtu_table *pmtu;      /* shared by every ctx[i].w (pmtu.h) */
};

/**
 * Set up ws (zeroed by the caller) for n workers, one per worker lcore.
 *
 * @return 0, or -ENOMEM with the reason in err ("out of memory for worker
 *   state", or which lcore's flow table or sketch); lb_workers_free() frees
 *   what was set up either way.
 */
int lb_workers_create(struct lb_workers *ws, unsigned int n, const struct lb_workers_params *p,
                      char *err, size_t errlen);

/** Launch lb_worker_main() on every worker lcore (rte_eal_mp_wait_lcore() waits for them). */
void lb_workers_launch(struct lb_workers *ws);

/** After the workers have stopped and control is gone. */
void lb_workers_free(struct lb_workers *ws);

#endif /* LB_WORKERS_H */
