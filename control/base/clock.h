/* SPDX-License-Identifier: BSD-3-Clause */
/* The control thread's clock: monotonic milliseconds (timeouts, backoff, drain waits). */
#ifndef LB_CLOCK_H
#define LB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
lb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif /* LB_CLOCK_H */
