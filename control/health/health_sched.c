/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The probe scheduler of health_sched.h: a flat array of slots scanned from a
 * rotating cursor, so that when the in-flight bound holds probes back, the
 * slots passed over are the first ones looked at next time.
 */
#include <errno.h>
#include <stdlib.h>

#include "dataplane/hash.h"
#include "control/health/health_sched.h"

int
lb_health_sched_init(struct lb_health_sched *s, uint32_t n, uint32_t max_inflight)
{
	if (s == NULL || n == 0)
		return -EINVAL;
	*s = (struct lb_health_sched){0};
	s->slots = calloc(n, sizeof(*s->slots));
	if (s->slots == NULL)
		return -ENOMEM;
	s->n = n;
	s->max_inflight = max_inflight > 0 ? max_inflight : 1;
	return 0;
}

void
lb_health_sched_fini(struct lb_health_sched *s)
{
	if (s == NULL)
		return;
	free(s->slots);
	*s = (struct lb_health_sched){0};
}

uint32_t
lb_health_sched_phase(uint32_t key, uint32_t interval_ms)
{
	/* splitmix64 seeded with the key: consecutive keys land far apart. */
	uint64_t x = key, z = lb_splitmix64(&x);

	return interval_ms > 0 ? (uint32_t)(z % interval_ms) : 0;
}

int
lb_health_sched_add(struct lb_health_sched *s, uint32_t slot, uint32_t key, uint32_t interval_ms,
                    uint32_t timeout_ms, uint64_t now_ms)
{
	struct lb_health_sched_slot *e;

	if (slot >= s->n)
		return -EINVAL;
	e = &s->slots[slot];
	e->interval_ms = interval_ms > 0 ? interval_ms : 1;
	e->timeout_ms = timeout_ms;
	e->due_ms = now_ms + lb_health_sched_phase(key, e->interval_ms);
	e->used = true;
	return 0;
}

void
lb_health_sched_remove(struct lb_health_sched *s, uint32_t slot)
{
	if (slot >= s->n)
		return;
	if (s->slots[slot].busy)
		s->inflight--;
	s->slots[slot] = (struct lb_health_sched_slot){0};
}

uint32_t
lb_health_sched_due(struct lb_health_sched *s, uint64_t now_ms, uint32_t *out, uint32_t max)
{
	uint32_t got = 0, start = s->cursor;

	for (uint32_t k = 0; k < s->n; k++) {
		uint32_t i = (start + k) % s->n;
		struct lb_health_sched_slot *e = &s->slots[i];

		if (!e->used || e->busy || e->due_ms > now_ms)
			continue;
		if (got == max || s->inflight >= s->max_inflight) {
			s->deferred++;
			continue;
		}
		e->busy = true;
		e->started_ms = now_ms;
		s->inflight++;
		out[got++] = i;
		s->cursor = (i + 1) % s->n;
	}
	return got;
}

uint32_t
lb_health_sched_expired(const struct lb_health_sched *s, uint64_t now_ms, uint32_t *out,
                        uint32_t max)
{
	uint32_t got = 0;

	for (uint32_t i = 0; i < s->n && got < max; i++) {
		const struct lb_health_sched_slot *e = &s->slots[i];

		if (e->used && e->busy && now_ms >= e->started_ms + e->timeout_ms)
			out[got++] = i;
	}
	return got;
}

void
lb_health_sched_done(struct lb_health_sched *s, uint32_t slot, uint64_t now_ms)
{
	struct lb_health_sched_slot *e;

	if (slot >= s->n || !s->slots[slot].busy)
		return;
	e = &s->slots[slot];
	e->busy = false;
	s->inflight--;
	e->due_ms += e->interval_ms;
	if (e->due_ms <= now_ms)
		e->due_ms += ((now_ms - e->due_ms) / e->interval_ms + 1) * e->interval_ms;
}
