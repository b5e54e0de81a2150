/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The health state machine of health.h: runs of equal probe results move a
 * backend between unknown, up and down, and a VIP's decision lays those
 * states under the operator's, with fail-open as the guard against a checker
 * whose own network is broken.
 */
#include "control/health/health.h"
#include "dataplane/snapshot.h"
#include "control/health/health_probe.h"

bool
lb_health_observe(struct lb_health_bk *b, enum lb_health_result r, uint32_t rise, uint32_t fall,
                  uint64_t now_ms)
{
	bool ok = r == LB_HEALTH_RESULT_OK;
	uint8_t next = b->state;

	if (r == LB_HEALTH_RESULT_NONE)
		return false;
	b->last_result = (uint8_t)r;
	if (ok)
		b->probes_ok++;
	else if (r == LB_HEALTH_RESULT_TIMEOUT)
		b->timeouts++;
	else
		b->probes_failed++;
	if (b->run > 0 && b->run_ok == ok) {
		if (b->run < UINT32_MAX)
			b->run++;
	} else {
		b->run_ok = ok;
		b->run = 1;
	}
	if (ok && b->run >= (rise > 0 ? rise : 1))
		next = LB_HEALTH_UP;
	else if (!ok && b->run >= (fall > 0 ? fall : 1))
		next = LB_HEALTH_DOWN;
	if (next == b->state)
		return false;
	b->state = next;
	b->transitions++;
	b->last_change_ms = now_ms;
	return true;
}

void
lb_health_reset(struct lb_health_bk *b)
{
	b->state = LB_HEALTH_UNKNOWN;
	b->last_result = LB_HEALTH_RESULT_NONE;
	b->run = 0;
	b->run_ok = false;
	b->kept = false;
}

/* Whether health may take member m out (and would, given its state). */
static bool
would_leave(const struct lb_health_member *m)
{
	return m->checked && m->op_state == LB_BACKEND_ACTIVE && m->health == LB_HEALTH_DOWN;
}

uint32_t
lb_health_decide(const struct lb_health_member *m, uint32_t n, double fail_open, uint8_t *out,
                 bool *kept)
{
	uint32_t eligible = 0, leaving = 0;
	bool open;

	for (uint32_t i = 0; i < n; i++) {
		if (m[i].checked && m[i].op_state == LB_BACKEND_ACTIVE)
			eligible++;
		if (would_leave(&m[i]))
			leaving++;
	}
	/* A margin so a fraction the double cannot hold exactly (1/3 of 3) is
	 * judged as written. */
	open = leaving > 0 && (double)leaving > fail_open * (double)eligible + 1e-9;
	for (uint32_t i = 0; i < n; i++) {
		bool leave = would_leave(&m[i]);

		if (kept != NULL)
			kept[i] = open && leave;
		if (leave && !open)
			out[i] = m[i].on_down == LB_HEALTH_KEEP_FLOWS ? LB_BACKEND_DRAINING
			                                              : LB_BACKEND_DOWN;
		else
			out[i] = m[i].op_state;
	}
	return open ? leaving : 0;
}

const char *
lb_health_state_name(uint8_t state)
{
	switch (state) {
	case LB_HEALTH_UP:
		return "up";
	case LB_HEALTH_DOWN:
		return "down";
	default:
		return "unknown";
	}
}

const char *
lb_health_result_name(uint8_t result)
{
	switch (result) {
	case LB_HEALTH_RESULT_OK:
		return "ok";
	case LB_HEALTH_RESULT_FAIL:
		return "fail";
	case LB_HEALTH_RESULT_TIMEOUT:
		return "timeout";
	default:
		return "none";
	}
}
