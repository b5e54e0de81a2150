/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rate pacing on the TSC. A phase that started at tick t0 with target R packets
 * per second owes floor((now - t0) * R / hz) packets by tick now; the TX loop
 * sends what it owes minus what it sent, at most one burst at a time. Counting
 * from the phase start (not from the last burst) keeps rounding errors from
 * accumulating: the achieved rate converges to R whatever the burst sizes.
 * If the loop falls behind by more than a backlog cap (a stall, a descheduled
 * core), the debt above the cap is written off rather than sent as a burst,
 * and counted, so the achieved rate reports the truth.
 */
#ifndef SG_PACE_H
#define SG_PACE_H

#include <stdint.h>

/** Packets owed after elapsed ticks at pps packets per second (exact, 128-bit). */
static inline uint64_t
sg_pace_due(uint64_t elapsed, uint64_t hz, uint64_t pps)
{
	return (uint64_t)((unsigned __int128)elapsed * pps / hz);
}

struct sg_pace {
	uint64_t t0;      /* tick the phase started */
	uint64_t hz;      /* ticks per second */
	uint64_t pps;     /* 0: as fast as possible */
	uint64_t sent;    /* packets counted against the schedule (sent + written off) */
	uint64_t max_lag; /* most packets owed before the excess is written off */
	uint64_t skipped; /* packets written off */
};

static inline void
sg_pace_init(struct sg_pace *p, uint64_t t0, uint64_t hz, uint64_t pps, uint64_t max_lag)
{
	p->t0 = t0;
	p->hz = hz;
	p->pps = pps;
	p->sent = 0;
	p->max_lag = max_lag;
	p->skipped = 0;
}

/** How many packets to send now, at most burst; the caller then calls sg_pace_sent(). */
static inline uint32_t
sg_pace_owed(struct sg_pace *p, uint64_t now, uint32_t burst)
{
	uint64_t due, owed;

	if (p->pps == 0)
		return burst;
	due = sg_pace_due(now - p->t0, p->hz, p->pps);
	if (due <= p->sent)
		return 0;
	owed = due - p->sent;
	if (owed > p->max_lag) {
		p->skipped += owed - p->max_lag;
		p->sent += owed - p->max_lag;
		owed = p->max_lag;
	}
	return owed < burst ? (uint32_t)owed : burst;
}

static inline void
sg_pace_sent(struct sg_pace *p, uint32_t n)
{
	p->sent += n;
}

#endif /* SG_PACE_H */
