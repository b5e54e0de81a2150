/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Probe scheduling for the health checks, on a clock the caller passes in
 * (tests drive it by hand): each slot is probed once per interval at a phase
 * derived from its key (deterministic jitter: probes of many backends spread
 * over the interval instead of firing together), at most max_inflight probes
 * run at once, and a probe still running timeout_ms after its start expires.
 */
#ifndef LB_HEALTH_SCHED_H
#define LB_HEALTH_SCHED_H

#include <stdbool.h>
#include <stdint.h>

struct lb_health_sched_slot {
	uint64_t due_ms;     /* next start */
	uint64_t started_ms; /* of the probe in flight */
	uint32_t interval_ms;
	uint32_t timeout_ms;
	bool used;
	bool busy; /* a probe is in flight */
};

struct lb_health_sched {
	struct lb_health_sched_slot *slots;
	uint32_t n;
	uint32_t max_inflight;
	uint32_t inflight;
	uint32_t cursor;   /* where the next scan for due slots begins (fairness) */
	uint64_t deferred; /* due slots left waiting because max_inflight was reached */
};

/**
 * n slots, all unused; at most max_inflight probes at once (0 counts as 1).
 *
 * @return 0, -EINVAL (s NULL or n 0), -ENOMEM.
 */
int lb_health_sched_init(struct lb_health_sched *s, uint32_t n, uint32_t max_inflight);

void lb_health_sched_fini(struct lb_health_sched *s);

/** The phase of key within interval_ms: a hash of key, in [0, interval_ms). */
uint32_t lb_health_sched_phase(uint32_t key, uint32_t interval_ms);

/**
 * Start scheduling slot: first probe at now_ms + its phase, then every
 * interval_ms (0 counts as 1). A slot already used is rescheduled (a probe
 * in flight stays in flight).
 *
 * @return 0, -EINVAL (slot out of range).
 */
int lb_health_sched_add(struct lb_health_sched *s, uint32_t slot, uint32_t key,
                        uint32_t interval_ms, uint32_t timeout_ms, uint64_t now_ms);

/** Stop scheduling slot; a probe in flight no longer counts. Out of range: no-op. */
void lb_health_sched_remove(struct lb_health_sched *s, uint32_t slot);

/**
 * The slots whose probe should start now (due, not in flight), at most max
 * and at most the free in-flight places, in a round-robin order; each is
 * marked in flight from now_ms. Due slots left over wait (counted in
 * deferred) and keep their place for the next call.
 *
 * @return how many slots were written to out.
 */
uint32_t lb_health_sched_due(struct lb_health_sched *s, uint64_t now_ms, uint32_t *out,
                             uint32_t max);

/**
 * The in-flight slots whose timeout has passed at now_ms (at most max). They
 * stay in flight until lb_health_sched_done().
 *
 * @return how many slots were written to out.
 */
uint32_t lb_health_sched_expired(const struct lb_health_sched *s, uint64_t now_ms, uint32_t *out,
                                 uint32_t max);

/**
 * The probe of slot finished (or expired) at now_ms: the next one is due one
 * interval after the previous due time, skipping whole intervals already past
 * (the phase is kept). Not in flight: no-op.
 */
void lb_health_sched_done(struct lb_health_sched *s, uint32_t slot, uint64_t now_ms);

#endif /* LB_HEALTH_SCHED_H */
