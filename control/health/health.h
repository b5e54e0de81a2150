/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The health state machine, pure (no sockets, no clock of its own): a
 * backend's probe results counted with rise/fall hysteresis, and per VIP the
 * states its backends take in the snapshot, where the operator's down or
 * draining always wins and fail-open keeps every backend in when more than a
 * fraction of the VIP's checked backends would be out at once.
 */
#ifndef LB_HEALTH_H
#define LB_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

/* A backend's health as reported ("health"). */
enum lb_health_state {
	LB_HEALTH_UNKNOWN = 0, /* no verdict yet (or not checked): serves */
	LB_HEALTH_UP,
	LB_HEALTH_DOWN,
};

/* The outcome of one probe ("last_result"). */
enum lb_health_result {
	LB_HEALTH_RESULT_NONE = 0, /* no probe finished yet */
	LB_HEALTH_RESULT_OK,
	LB_HEALTH_RESULT_FAIL,
	LB_HEALTH_RESULT_TIMEOUT, /* counts as a failure */
};

/* One backend's health record and counters. */
struct lb_health_bk {
	uint8_t state;           /* enum lb_health_state */
	uint8_t last_result;     /* enum lb_health_result */
	bool run_ok;             /* the kind of the current run of results */
	bool kept;               /* down, but kept in by the VIP's fail-open */
	uint32_t run;            /* consecutive results of that kind */
	uint64_t last_change_ms; /* of state; 0: never changed */
	uint64_t probes_ok, probes_failed, timeouts, transitions, fail_open;
};

/**
 * Count one probe result (ok, fail or timeout) at now_ms. The state becomes
 * up after rise consecutive successes and down after fall consecutive
 * failures (from unknown too); rise and fall of 0 count as 1.
 *
 * @return true if the state changed (transitions and last_change_ms updated).
 */
bool lb_health_observe(struct lb_health_bk *b, enum lb_health_result r, uint32_t rise,
                       uint32_t fall, uint64_t now_ms);

/** Back to unknown with no run (counters kept): the check was (re)configured. */
void lb_health_reset(struct lb_health_bk *b);

/* One backend of a VIP as lb_health_decide() takes it. */
struct lb_health_member {
	uint8_t op_state; /* the operator's enum lb_backend_state */
	uint8_t health;   /* enum lb_health_state */
	uint8_t on_down;  /* enum lb_health_on_down (health_probe.h) */
	bool checked;     /* a check is configured (type is not none) */
};

/**
 * The state each of a VIP's n members takes in the snapshot (out[i], an enum
 * lb_backend_state): the operator's down or draining as is; a checked active
 * member whose health is down becomes down (move_flows) or draining
 * (keep_flows); every other member keeps its operator state. Fail-open: when
 * the members that health would take out are more than fail_open times the
 * checked active members, none is taken out (out[i] is then op_state) and
 * kept[i] (may be NULL) is set for each member kept in that way.
 *
 * @return the number of members kept in by fail-open (0: not failing open).
 */
uint32_t lb_health_decide(const struct lb_health_member *m, uint32_t n, double fail_open,
                          uint8_t *out, bool *kept);

/** "unknown", "up", "down". */
const char *lb_health_state_name(uint8_t state);

/** "none", "ok", "fail", "timeout". */
const char *lb_health_result_name(uint8_t result);

#endif /* LB_HEALTH_H */
