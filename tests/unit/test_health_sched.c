/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the health probe scheduler on a clock the test advances by
 * hand: probes of many backends spread over the interval (no bucket of the
 * interval holds much more than its share), each backend is probed once per
 * interval at a stable phase, the in-flight bound holds with no slot starved,
 * and timeouts expire exactly at start + timeout_ms.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/health/health_sched.h"

#define N 1000
#define INTERVAL 1000u

/* Starts per 100 ms bucket over one interval: each near N/10. */
static void
test_spread(void **state)
{
	struct lb_health_sched s;
	uint32_t out[N], bucket[10] = {0}, total = 0;

	(void)state;
	assert_int_equal(lb_health_sched_init(&s, N, N), 0);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(lb_health_sched_add(&s, i, i, INTERVAL, 100, 0), 0);
	for (uint64_t t = 0; t < INTERVAL; t++) {
		uint32_t got = lb_health_sched_due(&s, t, out, N);

		bucket[t / 100] += got;
		total += got;
		for (uint32_t k = 0; k < got; k++)
			lb_health_sched_done(&s, out[k], t);
	}
	assert_int_equal(total, N);
	for (int b = 0; b < 10; b++) {
		assert_true(bucket[b] >= N / 10 / 2);
		assert_true(bucket[b] <= N / 10 * 2);
	}
	/* No single millisecond holds more than a few. */
	for (uint32_t i = 0; i < N; i++)
		assert_true(lb_health_sched_phase(i, INTERVAL) < INTERVAL);
	lb_health_sched_fini(&s);
}

/* Over 5 intervals every slot starts exactly 5 times, each at its phase + k*interval. */
static void
test_period(void **state)
{
	struct lb_health_sched s;
	uint32_t out[64], starts[64] = {0};
	uint64_t first[64];

	(void)state;
	assert_int_equal(lb_health_sched_init(&s, 64, 64), 0);
	for (uint32_t i = 0; i < 64; i++)
		lb_health_sched_add(&s, i, i * 7 + 3, 200, 50, 1000);
	for (uint64_t t = 1000; t < 2000; t++) {
		uint32_t got = lb_health_sched_due(&s, t, out, 64);

		for (uint32_t k = 0; k < got; k++) {
			uint32_t i = out[k];

			if (starts[i] == 0)
				first[i] = t;
			/* Same phase every interval. */
			assert_int_equal(t, first[i] + 200u * starts[i]);
			assert_int_equal(first[i], 1000 + lb_health_sched_phase(i * 7 + 3, 200));
			starts[i]++;
			lb_health_sched_done(&s, i, t + 3); /* answered 3 ms later */
		}
	}
	for (uint32_t i = 0; i < 64; i++)
		assert_int_equal(starts[i], 5);
	lb_health_sched_fini(&s);
}

/* With 100 slots due at once and 8 in flight at most: never more than 8, all served in turn. */
static void
test_bounded(void **state)
{
	struct lb_health_sched s;
	uint32_t out[128], starts[100] = {0}, running[8], n_running = 0;

	(void)state;
	assert_int_equal(lb_health_sched_init(&s, 100, 8), 0);
	for (uint32_t i = 0; i < 100; i++)
		lb_health_sched_add(&s, i, i, 10000, 5000, 0);
	/* Everything is due at 10000 (one full interval after any phase). */
	for (uint64_t t = 10000; t < 10100; t++) {
		uint32_t got = lb_health_sched_due(&s, t, out, 128);

		assert_true(n_running + got <= 8);
		assert_int_equal(s.inflight, n_running + got);
		for (uint32_t k = 0; k < got; k++)
			running[n_running++] = out[k];
		/* One probe finishes per millisecond, the oldest. */
		if (n_running > 0) {
			starts[running[0]]++;
			lb_health_sched_done(&s, running[0], t);
			memmove(running, running + 1, --n_running * sizeof(running[0]));
		}
	}
	/* 100 ms, one completion per ms: each of the 100 slots once (first
	 * probes happened before 10000 were not driven, so all were due). */
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(starts[i], 1);
	assert_true(s.deferred > 0);
	lb_health_sched_fini(&s);
}

static void
test_timeout(void **state)
{
	struct lb_health_sched s;
	uint32_t out[4], slot;
	uint64_t t0;

	(void)state;
	assert_int_equal(lb_health_sched_init(&s, 4, 4), 0);
	lb_health_sched_add(&s, 2, 99, 1000, 300, 0);
	t0 = lb_health_sched_phase(99, 1000);
	assert_int_equal(lb_health_sched_due(&s, t0 > 0 ? t0 - 1 : 0, out, 4), t0 > 0 ? 0 : 1);
	if (t0 > 0)
		assert_int_equal(lb_health_sched_due(&s, t0, out, 4), 1);
	slot = out[0];
	assert_int_equal(slot, 2);
	assert_int_equal(lb_health_sched_expired(&s, t0 + 299, out, 4), 0);
	assert_int_equal(lb_health_sched_expired(&s, t0 + 300, out, 4), 1);
	assert_int_equal(out[0], 2);
	/* Not due again while in flight, even past its next due time. */
	assert_int_equal(lb_health_sched_due(&s, t0 + 1500, out, 4), 0);
	/* Done late: the next start keeps the phase, whole intervals skipped. */
	lb_health_sched_done(&s, 2, t0 + 2500);
	assert_int_equal(s.slots[2].due_ms, t0 + 3000);
	assert_int_equal(s.inflight, 0);
	/* Remove while in flight frees the place. */
	assert_int_equal(lb_health_sched_due(&s, t0 + 3000, out, 4), 1);
	lb_health_sched_remove(&s, 2);
	assert_int_equal(s.inflight, 0);
	assert_int_equal(lb_health_sched_due(&s, t0 + 9000, out, 4), 0);
	lb_health_sched_done(&s, 2, t0 + 9000); /* not in flight: no-op */
	assert_int_equal(s.inflight, 0);
	assert_int_equal(lb_health_sched_add(&s, 4, 1, 1, 1, 0), -EINVAL);
	assert_int_equal(lb_health_sched_init(&s, 0, 1), -EINVAL);
	lb_health_sched_fini(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_spread),
	        cmocka_unit_test(test_period),
	        cmocka_unit_test(test_bounded),
	        cmocka_unit_test(test_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
