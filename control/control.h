/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: owns the configuration, builds and publishes snapshots,
 * retires old ones through RCU, and runs the event loop (signalfd for
 * SIGTERM/SIGINT/SIGHUP, a timerfd for periodic work, the control socket's
 * epoll set). It runs on the EAL main lcore; workers never wait for it. Every
 * configuration change is written to the state file, if there is one, before
 * it is published.
 */
#ifndef LB_CONTROL_H
#define LB_CONTROL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>

#include "dataplane/counters.h"
#include "dataplane/snapshot.h"
#include "control/model/config.h"
#include "control/runtime/publish.h"

struct lb_control;
struct lb_loop;

struct lb_pmtu_table;

struct lb_control_params {
	const char *config_path;   /* what SIGHUP reloads; NULL: SIGHUP ignored */
	const char *state_path;    /* persisted configuration, or NULL */
	const char *control_path;  /* control socket, or NULL for none */
	mode_t control_mode;       /* 0: 0660 */
	uint32_t control_idle_ms;  /* 0: LB_SERVER_DEFAULT_IDLE_MS */
	const char *control_group; /* group name or gid, or NULL */
	const char *metrics_addr;  /* --metrics ADDR:PORT (metrics_http.h), or NULL */
	struct rte_rcu_qsbr *qsv;
	struct lb_snapshot **snap; /* the pointer workers read */
	volatile bool *stop;       /* set to stop the workers */
	const struct lb_core_counters *const *cores;
	const unsigned int *lcores;
	unsigned int n_cores;
	uint32_t idle_exit_ms; /* 0: run until a signal */
	/* Hot keys: each worker's sketch (NULL: hot keys off) and the open window
	 * number the workers poll. */
	struct lb_sketch *const *sketches;
	volatile uint64_t *window;
	/* The mbuf pool, for stats "mempool" {size, available, in_use}; NULL: none.
	 * After the ports are closed, in_use must be 0 (no mbuf leaked). */
	const struct rte_mempool *pool;
	/* Learned path MTUs toward backends, for stats "path_mtu"; NULL: none. */
	const struct lb_pmtu_table *pmtu;
	/* Publication hooks (see struct lb_publish_hook), run in array order. */
	const struct lb_publish_hook *hooks;
	unsigned int n_hooks;
	/* SIGTERM/SIGINT with a drain hook: withdraw, keep forwarding this long
	 * (counted from the drain if the instance was already drained), then
	 * stop. 0: stop at once (after the withdrawal). A second signal stops
	 * as soon as the exchange with BIRD under way ends (its answer or its
	 * deadline), at once if none is; a third stops at once. */
	uint32_t drain_wait_ms;
};

/**
 * Take ownership of cfg, build its snapshot and publish it (before workers
 * start, so they never see a NULL snapshot). With a state path whose file does
 * not exist yet, write cfg there, so the file exists from then on. With a
 * control path, create the control socket; with a metrics address, listen
 * there.
 *
 * @return the control object, or NULL with a reason in err.
 */
struct lb_control *lb_control_create(const struct lb_control_params *p, struct lb_config *cfg,
                                     char *err, size_t errlen);

/**
 * Run the event loop until SIGTERM/SIGINT (or the idle-exit timeout). Blocks;
 * the signals must be blocked in every thread before EAL starts the workers.
 *
 * @return 0 on a clean stop, -errno if the loop itself failed.
 */
int lb_control_run(struct lb_control *c);

/**
 * Build a new configuration's snapshot, write the configuration to the state
 * file (if any), then publish and adopt it. Takes ownership of cfg.
 *
 * @return 0, or -errno with a reason in err; then nothing changed (not the
 *   running configuration, not the state file).
 */
int lb_control_apply(struct lb_control *c, struct lb_config *cfg, char *err, size_t errlen);

/**
 * The stats document for the current configuration, plus "generation" (of the
 * published snapshot) and each core's "snapshot_gen" (of the snapshot it last
 * used): once every core shows the generation, no worker uses an older one.
 */
json_t *lb_control_stats(const struct lb_control *c);

/** Free everything; call after the workers have stopped. */
void lb_control_destroy(struct lb_control *c);

#endif /* LB_CONTROL_H */
