/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the data path's replica pick of a hot key's override
 * (dataplane/override.h): how many of the key's flows keep their replica when
 * the list grows or shrinks by one replica or has one replaced in place, and
 * the shares of replicas repeated by weight. Expected values are the ideal
 * shares counted over random flow hashes, judged with a binomial tolerance.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>

#include <cmocka.h>

#include "dataplane/override.h"
#include "../support/rng.h"

#define FLOWS 200000

/*
 * Tolerance of a measured fraction whose ideal is p. Two errors add up: the
 * FLOWS random hashes (standard deviation sqrt(p (1 - p) / FLOWS), at most
 * 0.0012) and the pick table's quantization: its LB_OVERRIDE_LUT_SIZE
 * entries are the jump of fixed hashes, so the fraction of entries with a
 * given outcome is itself a binomial draw of standard deviation
 * sqrt(p (1 - p) / LB_OVERRIDE_LUT_SIZE), at most 0.0039 at 2^14 entries.
 * 5 standard deviations of their sum: at most 5 * sqrt(0.25 / 200000 +
 * 0.25 / 16384) = 0.0204, and 0.0078 at p = 1/26 (the range partition keeps
 * about half there).
 */
static double
tol(double p)
{
	double v = p * (1 - p);

	return 5 * sqrt(v / FLOWS + v / LB_OVERRIDE_LUT_SIZE);
}

/* A one-override table over list[0 .. n-1]. */
struct one {
	struct lb_override_slot slot;
	struct lb_override_table t;
	uint16_t lut[LB_OVERRIDE_LUT_SIZE];
};

static void
one_init(struct one *o, const uint16_t *list, uint32_t n)
{
	o->slot = (struct lb_override_slot){.key_hash = 1, .vip_id = 0, .n_replicas = (uint16_t)n};
	lb_override_lut_fill(o->lut, n);
	o->t = (struct lb_override_table){
	        .n = 1, .mask = 0, .slots = &o->slot, .replicas = list, .lut = o->lut};
}

/* Over FLOWS random hashes: the fraction whose replica is the same in a and
 * b; moved_ok: every flow that moved went from a's `from` (any if
 * 0xFFFF) to b's `to` (any if 0xFFFF). */
static double
kept(const uint16_t *a, uint32_t na, const uint16_t *b, uint32_t nb, uint16_t from, uint16_t to,
     bool *moved_ok)
{
	static struct one x, y;
	uint64_t seed = 0x5eed0000 + na * 7919 + nb;
	uint32_t same = 0;

	one_init(&x, a, na);
	one_init(&y, b, nb);
	*moved_ok = true;
	for (uint32_t i = 0; i < FLOWS; i++) {
		uint64_t hsh = rng_next(&seed);
		uint16_t p = lb_override_pick(&x.t, &x.slot, hsh),
		         q = lb_override_pick(&y.t, &y.slot, hsh);

		if (p == q)
			same++;
		else if ((from != 0xFFFF && p != from) || (to != 0xFFFF && q != to))
			*moved_ok = false;
	}
	return (double)same / FLOWS;
}

static void
test_grow_keeps_r_over_r_plus_1(void **state)
{
	static const uint32_t rs[] = {1, 2, 5, 24, 25, 31, 100, 255};
	uint16_t list[257];

	(void)state;
	for (uint32_t i = 0; i < 257; i++)
		list[i] = (uint16_t)(1000 + i);
	for (size_t k = 0; k < sizeof(rs) / sizeof(rs[0]); k++) {
		uint32_t r = rs[k];
		bool ok;
		double f = kept(list, r, list, r + 1, 0xFFFF, list[r], &ok);

		/* Ideal: r / (r + 1) kept, every moved flow on the new replica. */
		print_message("r %u -> %u: kept %.4f (ideal %.4f)\n", r, r + 1, f,
		              (double)r / (r + 1));
		assert_true(f >= (double)r / (r + 1) - tol(1.0 / (r + 1)));
		assert_true(f <= (double)r / (r + 1) + tol(1.0 / (r + 1)));
		assert_true(ok);
	}
}

static void
test_shrink_moves_only_the_removed(void **state)
{
	static const uint32_t rs[] = {2, 3, 8, 25, 26, 64, 256};
	uint16_t list[256];

	(void)state;
	for (uint32_t i = 0; i < 256; i++)
		list[i] = (uint16_t)(2000 + i);
	for (size_t k = 0; k < sizeof(rs) / sizeof(rs[0]); k++) {
		uint32_t r = rs[k];
		bool ok;
		double f = kept(list, r, list, r - 1, list[r - 1], 0xFFFF, &ok);

		print_message("r %u -> %u: kept %.4f (ideal %.4f)\n", r, r - 1, f,
		              (double)(r - 1) / r);
		assert_true(f >= (double)(r - 1) / r - tol(1.0 / r));
		assert_true(ok); /* only the removed replica's flows moved */
	}
}

static void
test_replace_in_place_moves_only_its_flows(void **state)
{
	static const uint32_t rs[] = {2, 6, 25, 100};
	uint16_t a[100], b[100];

	(void)state;
	for (size_t k = 0; k < sizeof(rs) / sizeof(rs[0]); k++) {
		uint32_t r = rs[k], at = r / 2;
		bool ok;
		double f;

		for (uint32_t i = 0; i < r; i++)
			a[i] = b[i] = (uint16_t)(3000 + i);
		b[at] = 4000; /* a down replica replaced by another backend */
		f = kept(a, r, b, r, a[at], 4000, &ok);
		assert_true(f >= (double)(r - 1) / r - tol(1.0 / r));
		assert_true(ok);
	}
}

static void
test_weighted_shares(void **state)
{
	/* Weights 3, 1, 2, 2 by repetition: 8 entries. */
	static const uint16_t list[] = {7, 7, 7, 8, 9, 9, 10, 10};
	static const double want[] = {3.0 / 8, 1.0 / 8, 2.0 / 8, 2.0 / 8};
	uint32_t cnt[4] = {0};
	uint64_t seed = 42;
	static struct one o;

	(void)state;
	one_init(&o, list, 8);
	for (uint32_t i = 0; i < FLOWS; i++)
		cnt[lb_override_pick(&o.t, &o.slot, rng_next(&seed)) - 7]++;
	for (int i = 0; i < 4; i++) {
		double f = (double)cnt[i] / FLOWS;

		assert_true(f > want[i] - tol(want[i]) && f < want[i] + tol(want[i]));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_grow_keeps_r_over_r_plus_1),
	        cmocka_unit_test(test_shrink_moves_only_the_removed),
	        cmocka_unit_test(test_replace_in_place_moves_only_its_flows),
	        cmocka_unit_test(test_weighted_shares),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
