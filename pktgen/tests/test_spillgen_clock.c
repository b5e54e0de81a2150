/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sg_clock_tick_hz against counters whose rate the test sets: a counter
 * derived from CLOCK_MONOTONIC at 2 596 101 723 ticks per second (the TSC of
 * a machine whose EAL estimate says 2.600 GHz) and one at 1 GHz must be
 * measured within 1e-4 of their rates; a counter that does not advance gives
 * 0. The measurement reads the clock around each counter read, so a
 * descheduled moment can widen one pair: each case has 3 tries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <cmocka.h>

#include "../clock.h"

static uint64_t g_rate;

static uint64_t
counter(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)((unsigned __int128)((uint64_t)ts.tv_sec * 1000000000ull +
	                                      (uint64_t)ts.tv_nsec) *
	                  g_rate / 1000000000ull);
}

static uint64_t
stuck(void)
{
	return 42;
}

static void
check_rate(uint64_t rate)
{
	double err = 1;

	g_rate = rate;
	for (int i = 0; i < 3 && !(err < 1e-4); i++) {
		uint64_t hz = sg_clock_tick_hz(counter, 100);

		err = (double)hz / (double)rate - 1;
		err = err < 0 ? -err : err;
		printf("  rate %llu: measured %llu (relative error %.2e)\n",
		       (unsigned long long)rate, (unsigned long long)hz, err);
	}
	assert_true(err < 1e-4);
}

static void
test_tsc_rate(void **state)
{
	(void)state;
	check_rate(2596101723ull);
}

static void
test_one_ghz(void **state)
{
	(void)state;
	check_rate(1000000000ull);
}

static void
test_stuck_counter(void **state)
{
	(void)state;
	assert_int_equal(sg_clock_tick_hz(stuck, 10), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tsc_rate),
	        cmocka_unit_test(test_one_ghz),
	        cmocka_unit_test(test_stuck_counter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
