/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The health checker on the control thread: keeps a record per backend of
 * the running configuration, starts probes as the scheduler says on the
 * event loop (never blocking it), counts their results, and when a backend's
 * state in the snapshot must change, publishes through the same path as an
 * operator's change (one rebuild, one snapshot). Health state is not saved.
 */
#ifndef LB_HEALTH_RUN_H
#define LB_HEALTH_RUN_H

#include <stdint.h>

#include <jansson.h>

#include "control/model/config.h"

#define LB_HEALTH_MAX_INFLIGHT 64 /* probes under way at once */
#define LB_HEALTH_MAX_EVENTS 256  /* transitions and fail-open changes kept */

struct lb_health_run;
struct lb_loop;
struct lb_publisher;

/**
 * A checker of pub's configuration (probes start on the first tick after
 * lb_health_run_attach).
 *
 * @return the checker, or NULL (out of memory).
 */
struct lb_health_run *lb_health_run_create(struct lb_publisher *pub);

/** Run probes on loop (NULL: stop every probe and run none). */
void lb_health_run_attach(struct lb_health_run *r, struct lb_loop *loop);

/**
 * Periodic work at now_ms: follow the configuration, expire probes past
 * their timeout, start the due ones, and publish when a backend's state in
 * the snapshot changes (a refused publication is retried on the next tick).
 */
void lb_health_run_tick(struct lb_health_run *r, uint64_t now_ms);

/**
 * Lay the health verdicts into cfg before its snapshot is built (each
 * backend's health_out, fail-open applied per VIP); cfg's ids must be
 * assigned. Counts and logs fail-open changes.
 */
void lb_health_run_lay(struct lb_health_run *r, struct lb_config *cfg);

/**
 * [{"vip", "address", "name"?, "state", "health", "effective", "check",
 *   "last_result", "last_error", "last_change_ms", "probes_ok",
 *   "probes_failed", "timeouts", "transitions", "fail_open", "kept"}] for
 * every backend of the running configuration; NULL if out of memory.
 */
json_t *lb_health_run_list(const struct lb_health_run *r);

/** {"ms", "event", "vip", "address", "result"} of recent events, oldest first; NULL likewise. */
json_t *lb_health_run_events(const struct lb_health_run *r);

/** Totals for the stats document: {"probes_ok", ..., "inflight", "deferred", "publish_failed"}. */
json_t *lb_health_run_stats(const struct lb_health_run *r);

/** The health record of backend (id, gen), or NULL if none: "up"/"down"/"unknown" for reports. */
const char *lb_health_run_state_name(const struct lb_health_run *r, uint16_t id, uint16_t gen);

void lb_health_run_destroy(struct lb_health_run *r);

#endif /* LB_HEALTH_RUN_H */
