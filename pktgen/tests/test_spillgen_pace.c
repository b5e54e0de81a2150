/* SPDX-License-Identifier: BSD-3-Clause */
/* Rate pacing math on a simulated clock (no wall clock is asserted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pace.h"

static void
test_spillgen_pace_due_exact(void **state)
{
	(void)state;
	const uint64_t hz = 2100000000ULL;

	assert_int_equal(sg_pace_due(0, hz, 1000000), 0);
	assert_int_equal(sg_pace_due(hz, hz, 1000000), 1000000);
	assert_int_equal(sg_pace_due(hz / 2, hz, 10000), 5000);
	assert_int_equal(sg_pace_due(hz - 1, hz, 10000), 9999);
	/* No overflow for a day at 100 Mpps. */
	assert_true(sg_pace_due(hz * 86400, hz, 100000000) == 8640000000000ULL);
}

/* Poll at irregular intervals for one simulated second: exactly pps sent,
 * never more than owed, never more than a burst at once. */
static void
test_spillgen_pace_converges(void **state)
{
	(void)state;
	const uint64_t hz = 2000000000ULL;
	const uint64_t rates[] = {10000, 100000, 1000000, 7777777};

	for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		struct sg_pace p;
		uint64_t now = 1000, sent = 0, step = 1;

		sg_pace_init(&p, now, hz, rates[k], 1u << 30);
		while (now < 1000 + hz) {
			uint32_t n = sg_pace_owed(&p, now, 32);
			assert_true(n <= 32);
			sg_pace_sent(&p, n);
			sent += n;
			assert_true(sent <= sg_pace_due(now - 1000, hz, rates[k]));
			step = (step * 1103515245 + 12345) % 3001 + 50; /* 50-3050 ticks */
			now += step;
		}
		uint32_t n;
		while ((n = sg_pace_owed(&p, 1000 + hz, 32)) != 0) {
			sg_pace_sent(&p, n);
			sent += n;
		}
		assert_int_equal(sent, rates[k]);
		assert_int_equal(p.skipped, 0);
	}
}

static void
test_spillgen_pace_writes_off_stalls(void **state)
{
	(void)state;
	const uint64_t hz = 1000000000ULL;
	struct sg_pace p;

	sg_pace_init(&p, 0, hz, 1000000, 1000); /* cap: 1 ms of packets */
	/* A 10 ms stall: 10000 owed, 9000 written off, 1000 still sent. */
	uint64_t sent = 0;
	uint32_t n;
	while ((n = sg_pace_owed(&p, hz / 100, 32)) != 0) {
		sg_pace_sent(&p, n);
		sent += n;
	}
	assert_int_equal(p.skipped, 9000);
	assert_int_equal(sent, 1000);
}

static void
test_spillgen_pace_unlimited(void **state)
{
	(void)state;
	struct sg_pace p;

	sg_pace_init(&p, 0, 1000, 0, 0);
	assert_int_equal(sg_pace_owed(&p, 0, 32), 32);
}

int
main(void)
{
	const struct CMUnitTest t[] = {
	        cmocka_unit_test(test_spillgen_pace_due_exact),
	        cmocka_unit_test(test_spillgen_pace_converges),
	        cmocka_unit_test(test_spillgen_pace_writes_off_stalls),
	        cmocka_unit_test(test_spillgen_pace_unlimited),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
