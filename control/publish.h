/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Snapshot publication for the control thread: ids for a new configuration's
 * VIPs and backends, the snapshot build, the state file write, the pointer
 * swap with the publication hooks around it, and the retirement of old
 * snapshots through RCU. Internal to control/; runs on the control thread.
 */
#ifndef LB_PUBLISH_H
#define LB_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <rte_rcu_qsbr.h>

#include "../dataplane/counters.h"
#include "../dataplane/snapshot.h"
#include "config.h"
#include "control.h"

#define LB_PUBLISH_RETIRE_MAX 64 /* snapshots waiting for their readers to go */
#define LB_PUBLISH_SAMPLES 1024  /* publication latencies kept */

struct lb_hotkey;

/* A replaced snapshot, freed once every worker has passed the RCU token. */
struct lb_retired {
	struct lb_snapshot *snap;
	uint64_t token;
};

struct lb_publisher {
	/* From the control's parameters (lb_publish_init). */
	struct rte_rcu_qsbr *qsv;
	struct lb_snapshot **snap; /* the pointer workers read */
	const struct lb_core_counters *const *cores;
	unsigned int n_cores;
	const struct lb_publish_hook *hooks;
	unsigned int n_hooks;
	uint64_t *hook_fail;    /* per hook: failed calls (NULL: not counted) */
	const char *state_path; /* or NULL */
	/* Hot-key overrides laid into every build (NULL: none). */
	struct lb_hotkey *hot;
	bool live; /* workers are running: publication waits for them to switch */
	/* The running configuration, owned. */
	struct lb_config *cfg;
	/* Identity of memberships across changes: a VIP or backend that stays keeps
	 * its id; an id that is freed and reused gets a new generation, so flows
	 * pinned to its previous owner are never taken for the new one's. */
	uint16_t backend_gen[LB_MAX_BACKENDS];
	uint64_t generation; /* of the published snapshot */
	/* Publication latency (store of the pointer -> every worker on it), ns,
	 * the last LB_PUBLISH_SAMPLES changes; and the last snapshot build time. */
	uint64_t pub_ns[LB_PUBLISH_SAMPLES];
	uint64_t pub_count;
	uint64_t pub_timeouts;
	uint64_t persist_unsynced; /* state file written, directory fsync failed */
	uint64_t build_ns;
	struct lb_retired retire[LB_PUBLISH_RETIRE_MAX];
	unsigned int n_retire;
	/* Hooks with a drain step: routes withdrawn since drained_ms. */
	bool drained;
	uint64_t drained_ms;
};

/**
 * Take the RCU variable, the snapshot pointer, the cores' counters, the hooks
 * and the state path from p, into a zeroed pub. Hook failures go uncounted if
 * their counters cannot be allocated.
 */
void lb_publish_init(struct lb_publisher *pub, const struct lb_control_params *p);

/**
 * Build cfg's snapshot for the next generation: tables unchanged since the
 * published snapshot are copied from it, hot-key overrides are laid in.
 *
 * @return the snapshot (not yet published), or NULL with a reason in err.
 */
struct lb_snapshot *lb_publish_build(struct lb_publisher *pub, const struct lb_config *cfg,
                                     char *err, size_t errlen);

/**
 * Publish a built snapshot: the hooks' before steps, the pointer swap, the
 * old snapshot retired through RCU, the wait for the workers (when live),
 * the hooks' after steps. Hook failures are logged and counted.
 */
void lb_publish_snapshot(struct lb_publisher *pub, struct lb_snapshot *s);

/**
 * Give cfg's VIPs and backends their ids, build its snapshot, write it to
 * the state file (if save and there is one), adopt it as the running
 * configuration and publish it. Takes ownership of cfg in every case.
 *
 * @return 0, or -errno with a reason in err, nothing changed then: -ENOSPC
 *   no backend id left, -ENOMEM, or the state file write's -errno.
 */
int lb_publish_apply(struct lb_publisher *pub, struct lb_config *cfg, bool save, char *err,
                     size_t errlen);

/**
 * Write cfg to the state file (pub's state path, which must be set). A write
 * whose rename succeeded but whose directory fsync failed (LB_PERSIST_UNSYNCED)
 * counts as written: it is logged, counted in persist_unsynced, and returns 0.
 *
 * @return 0, or -errno with a reason in err (the file is unchanged then):
 *   -ENOMEM, or what lb_persist_write returned.
 */
int lb_publish_persist(struct lb_publisher *pub, const struct lb_config *cfg, char *err,
                       size_t errlen);

/** Free the retired snapshots no worker can still read; wait: until all can be freed. */
void lb_publish_reclaim(struct lb_publisher *pub, bool wait);

/** Drain (on) or undrain every hook with a drain step; failures are logged and counted. */
void lb_publish_drain(struct lb_publisher *pub, bool on);

/** {"samples", "last_us", "p50_us", "p99_us", "max_us", "timeouts", "build_us"} */
json_t *lb_publish_json(const struct lb_publisher *pub);

/** {name: the hook's stats plus its failed calls as "failures"} for every hook. */
json_t *lb_publish_hooks_json(const struct lb_publisher *pub);

/** Free the retired and the published snapshot (the pointer is cleared) and the configuration. */
void lb_publish_fini(struct lb_publisher *pub);

#endif /* LB_PUBLISH_H */
