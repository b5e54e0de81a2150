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

#include "dataplane/counters.h"
#include "dataplane/snapshot.h"
#include "control/model/config.h"

/* Replaced snapshots alive at once, waiting for their readers to go: with the
 * published one and one being built, at most LB_PUBLISH_RETIRE_MAX + 2
 * snapshots exist. */
#define LB_PUBLISH_RETIRE_MAX 8
#define LB_PUBLISH_SAMPLES 1024 /* publication latencies kept */
#define LB_PUBLISH_HIST_N 15    /* latency histogram bounds (lb_publish_hist_le_ns) */
/* A core that has not passed a quiescent state this long after a snapshot
 * was retired (or a probe taken) is stalled: changes are refused meanwhile. */
#define LB_PUBLISH_STALL_MS 1000
/* With every retire slot taken, how long a change waits for one to free. */
#define LB_PUBLISH_FULL_WAIT_MS 50

struct lb_health_run;
struct lb_loop;
struct lb_hotkey;
struct lb_state_text;

/*
 * A publication hook keeps something outside the process in step with the
 * published snapshot: the XDP program's VIP map (a VIP is added before a
 * snapshot that has it goes live, removed once no worker uses a snapshot that
 * has it), the BGP speaker's announcements. Hooks run on the control thread,
 * in order, around every publication including the first (prev == NULL); a
 * failure is logged and counted (stats "hooks"), the publication goes on: the
 * data path never waits on the outside world.
 */
struct lb_publish_hook {
	const char *name; /* key under stats "hooks" */
	void *arg;
	/* Before next is stored for the workers; prev is the live snapshot. */
	int (*before)(void *arg, const struct lb_snapshot *next, const struct lb_snapshot *prev,
	              char *err, size_t errlen);
	/* After every worker runs next (prev is retired but not yet freed). */
	int (*after)(void *arg, const struct lb_snapshot *next, const struct lb_snapshot *prev,
	             char *err, size_t errlen);
	/* Periodic work on the control timer (every ~10 ms), may be NULL. */
	void (*tick)(void *arg, const struct lb_snapshot *live);
	/* The hook's own counters for the stats document, may be NULL. */
	json_t *(*stats)(void *arg);
	/* For a hook that announces routes (may be NULL): withdraw everything and
	 * keep it withdrawn (on), or announce what live serves again (off).
	 * Called by the drain/undrain methods and on SIGTERM; 0 or -errno with a
	 * message (the hook stays in the asked state and retries on its tick). */
	int (*drain)(void *arg, bool on, const struct lb_snapshot *live, char *err, size_t errlen);
	/* May be NULL: register the hook's descriptors with the control thread's
	 * event loop once it runs (loop), drop them before it goes (NULL). The
	 * hook's own exchanges then never block the thread. 0 or -errno. */
	int (*attach)(void *arg, struct lb_loop *loop);
	/* May be NULL: an exchange of the hook is under way (bounded by the
	 * hook's own timeout); the stop sequence waits for it. */
	bool (*busy)(void *arg);
};
/* What a publisher takes from the control thread's parameters. */
struct lb_publish_params {
	struct rte_rcu_qsbr *qsv;
	struct lb_snapshot **snap; /* the pointer workers read */
	const struct lb_core_counters *const *cores;
	const unsigned int *lcores;
	unsigned int n_cores;
	const struct lb_publish_hook *hooks; /* run in array order */
	unsigned int n_hooks;
	const char *state_path; /* persisted configuration, or NULL */
};

/* A replaced snapshot, freed once every worker has passed the RCU token. */
struct lb_retired {
	struct lb_snapshot *snap;
	uint64_t token;
	uint64_t since_ms; /* when it was retired */
};

struct lb_publisher {
	/* From the control's parameters (lb_publish_init). */
	struct rte_rcu_qsbr *qsv;
	struct lb_snapshot **snap; /* the pointer workers read */
	const struct lb_core_counters *const *cores;
	const unsigned int *lcores; /* core i's lcore, or NULL: core i is named i */
	unsigned int n_cores;       /* core i is RCU thread i */
	const struct lb_publish_hook *hooks;
	unsigned int n_hooks;
	uint64_t *hook_fail;    /* per hook: failed calls (NULL: not counted) */
	const char *state_path; /* or NULL */
	/* Hot-key overrides laid into every build (NULL: none). */
	struct lb_hotkey *hot;
	/* Health verdicts laid into every applied configuration by lay_health
	 * (lb_health_run_lay, set by the owner; NULL: none). */
	struct lb_health_run *health;
	void (*lay_health)(struct lb_health_run *health, struct lb_config *cfg);
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
	/* Every measured latency, counted in its histogram bucket (the last one:
	 * above every bound), and their sum. */
	uint64_t pub_hist[LB_PUBLISH_HIST_N + 1];
	uint64_t pub_sum_ns;
	uint64_t pub_timeouts;
	uint64_t persist_unsynced; /* state file written, directory fsync failed */
	/* The state file's text per VIP, kept between writes (NULL until the first). */
	struct lb_state_text *state_text;
	uint64_t build_ns;
	struct lb_retired retire[LB_PUBLISH_RETIRE_MAX]; /* oldest first */
	unsigned int n_retire;
	/* A token taken on the tick while nothing is retired, so a core that
	 * stops reporting is found without a publication. */
	struct lb_retired probe; /* .snap unused; since_ms 0: none pending */
	unsigned int n_stalled;  /* at the last tick (logged when it changes) */
	uint64_t refused;        /* changes refused while a core was stalled */
	/* Hooks with a drain step: routes withdrawn since drained_ms. */
	bool drained;
	uint64_t drained_ms;
};

/**
 * Take the RCU variable, the snapshot pointer, the cores' counters, the hooks
 * and the state path from p, into a zeroed pub. Hook failures go uncounted if
 * their counters cannot be allocated.
 */
void lb_publish_init(struct lb_publisher *pub, const struct lb_publish_params *p);

/**
 * Build cfg's snapshot for the next generation: tables unchanged since the
 * published snapshot are copied from it, hot-key overrides are laid in, after
 * lb_hotkey_revalidate() has replaced (in the controller too) every replica
 * cfg leaves unusable and dropped the overrides of VIPs cfg removed.
 *
 * @return the snapshot (not yet published), or NULL with a reason in err.
 */
struct lb_snapshot *lb_publish_build(struct lb_publisher *pub, const struct lb_config *cfg,
                                     char *err, size_t errlen);

/**
 * Whether a change may be published now: frees what it can of the retired
 * snapshots; with every retire slot still taken, waits up to
 * LB_PUBLISH_FULL_WAIT_MS for one to free. Never waits longer.
 *
 * @return 0, or -EBUSY with the cores that hold it up named in err (by
 *   lcore): a core is stalled (lb_publish_stalled), or every retire slot is
 *   taken. The refusal is counted.
 */
int lb_publish_ready(struct lb_publisher *pub, char *err, size_t errlen);

/**
 * Which cores are stalled: stalled[i] (n_cores entries, may be NULL) is set
 * for a core that has not passed a quiescent state for LB_PUBLISH_STALL_MS
 * since a snapshot it could read was retired, or since the tick's probe.
 *
 * @return how many cores are stalled.
 */
unsigned int lb_publish_stalled(const struct lb_publisher *pub, bool *stalled);

/**
 * Periodic work (the control timer): free the retired snapshots no worker can
 * still read, take or check the probe token, and log when cores become
 * stalled or recover.
 */
void lb_publish_tick(struct lb_publisher *pub);

/**
 * Publish a built snapshot: the hooks' before steps, the pointer swap, the
 * old snapshot retired through RCU, the wait for the workers (when live,
 * bounded), the hooks' after steps. Hook failures are logged and counted.
 * Never blocks on a stalled worker.
 *
 * @return 0, or -EBUSY (s is freed, nothing changed) when lb_publish_ready
 *   refuses; after a successful lb_publish_ready with no publication in
 *   between, always 0.
 */
int lb_publish_snapshot(struct lb_publisher *pub, struct lb_snapshot *s);

/**
 * Check that a change may be published (lb_publish_ready), give cfg's VIPs
 * and backends their ids, build its snapshot, write it to the state file (if
 * save and there is one), adopt it as the running configuration and publish
 * it. Takes ownership of cfg in every case.
 *
 * @return 0, or -errno with a reason in err, nothing changed then: -EBUSY a
 *   core is stalled (see lb_publish_ready), -ENOSPC no backend id left,
 *   -ENOMEM, or the state file write's -errno.
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

/** Free the retired snapshots no worker can still read (never waits). */
void lb_publish_reclaim(struct lb_publisher *pub);

/** [lcore, ...] of the stalled cores (lb_publish_stalled). */
json_t *lb_publish_stalled_json(const struct lb_publisher *pub);

/** Drain (on) or undrain every hook with a drain step; failures are logged and counted. */
void lb_publish_drain(struct lb_publisher *pub, bool on);

/** Upper bounds of the publication latency histogram's buckets, ns, ascending. */
extern const uint64_t lb_publish_hist_le_ns[LB_PUBLISH_HIST_N];

/** Count one publication latency (ns) in the histogram. */
void lb_publish_observe(struct lb_publisher *pub, uint64_t ns);

/**
 * {"samples", "last_us", "p50_us", "p99_us", "max_us", "timeouts", "build_us",
 *  "retired", "refused", "latency_histogram"}: retired snapshots alive, changes
 * refused while a core was stalled; the histogram as {"le_s": [bounds],
 * "buckets": [cumulative counts, the last one +Inf], "sum_s", "count"}.
 */
json_t *lb_publish_json(const struct lb_publisher *pub);

/** {name: the hook's stats plus its failed calls as "failures"} for every hook. */
json_t *lb_publish_hooks_json(const struct lb_publisher *pub);

/** Free the retired and the published snapshot (the pointer is cleared) and the configuration. */
void lb_publish_fini(struct lb_publisher *pub);

#endif /* LB_PUBLISH_H */
