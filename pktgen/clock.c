/* SPDX-License-Identifier: BSD-3-Clause */
/* The tick rate against CLOCK_MONOTONIC (clock.h). */
#include <errno.h>
#include <time.h>

#include "clock.h"

#define TRIES 5

static int
mono_ns(uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return -1;
	*ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

/* A (tick, clock) pair: the tick read between two clock reads, the clock
 * taken as their midpoint; of TRIES pairs the one with the shortest gap. */
static int
pair(uint64_t (*read_tick)(void), uint64_t *tick, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < TRIES; i++) {
		uint64_t a, b, t;

		if (mono_ns(&a) != 0)
			return -1;
		t = read_tick();
		if (mono_ns(&b) != 0)
			return -1;
		if (b - a < best) {
			best = b - a;
			*tick = t;
			*ns = a + (b - a) / 2;
		}
	}
	return 0;
}

uint64_t
sg_clock_tick_hz(uint64_t (*read_tick)(void), unsigned int ms)
{
	uint64_t t0, n0, t1, n1;
	struct timespec d;

	if (ms < 10)
		ms = 10;
	if (pair(read_tick, &t0, &n0) != 0)
		return 0;
	d.tv_sec = ms / 1000;
	d.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&d, &d) != 0)
		if (errno != EINTR)
			return 0;
	if (pair(read_tick, &t1, &n1) != 0 || n1 <= n0 || t1 <= t0)
		return 0;
	return (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000ull / (n1 - n0));
}
