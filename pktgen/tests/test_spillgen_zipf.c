/* SPDX-License-Identifier: BSD-3-Clause */
/* Zipf alias sampler: the table's exact probabilities, and empirical
 * frequencies against them by a chi-square test at significance 0.001. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "zipf.h"

struct zcase {
	uint32_t n;
	double s;
};

static const struct zcase cases[] = {{1, 1.0},    {2, 0.5},    {100, 1.0},
                                     {1000, 1.2}, {1000, 0.0}, {5000, 0.8}};

static void
test_spillgen_zipf_table_exact(void **state)
{
	const struct zcase *c = *state;
	struct sg_alias a;
	double h = 0, total = 0;

	assert_int_equal(sg_zipf_build(&a, c->n, c->s), 0);
	for (uint32_t i = 0; i < c->n; i++)
		h += pow(i + 1.0, -c->s);
	for (uint32_t i = 0; i < c->n; i++) {
		double want = pow(i + 1.0, -c->s) / h, got = sg_alias_prob(&a, i);
		/* Thresholds are held to 2^-32 of a bucket (1/n of the mass). */
		assert_true(fabs(got - want) <= 1e-9 + want * 1e-9);
		total += got;
	}
	assert_true(fabs(total - 1.0) < 1e-9);
	sg_alias_free(&a);
}

/* Upper 0.001 critical value of chi-square with k degrees of freedom, by the
 * Wilson-Hilferty approximation (within 0.5% for k >= 30). */
static double
chi2_crit_001(double k)
{
	double z = 3.090232; /* standard normal 0.999 quantile */
	double t = 1 - 2 / (9 * k) + z * sqrt(2 / (9 * k));
	return k * t * t * t;
}

static void
test_spillgen_zipf_chi_square(void **state)
{
	(void)state;
	const uint32_t n = 200, samples = 2000000;
	struct sg_alias a;
	struct sg_rng r;
	uint64_t *cnt = calloc(n, sizeof(*cnt));
	double chi2 = 0;

	assert_non_null(cnt);
	assert_int_equal(sg_zipf_build(&a, n, 1.0), 0);
	sg_rng_seed(&r, 42);
	for (uint32_t i = 0; i < samples; i++)
		cnt[sg_alias_sample(&a, &r)]++;
	for (uint32_t i = 0; i < n; i++) {
		double e = sg_alias_prob(&a, i) * samples;
		chi2 += (cnt[i] - e) * (cnt[i] - e) / e;
	}
	/* Every bucket expects > 900 samples here, so the test is valid; with
	 * a fixed seed it is deterministic. */
	print_message("chi2 = %.1f, critical (df %u, alpha 0.001) = %.1f\n", chi2, n - 1,
	              chi2_crit_001(n - 1));
	assert_true(chi2 < chi2_crit_001(n - 1));
	free(cnt);
	sg_alias_free(&a);
}

static void
test_spillgen_zipf_rejects_bad_input(void **state)
{
	(void)state;
	struct sg_alias a;
	double w[3] = {0, 0, 0}, neg[2] = {1, -1};

	assert_int_equal(sg_zipf_build(&a, 0, 1.0), -EINVAL);
	assert_int_equal(sg_zipf_build(&a, 10, -1.0), -EINVAL);
	assert_int_equal(sg_alias_build(&a, w, 3), -EINVAL);
	assert_int_equal(sg_alias_build(&a, neg, 2), -EINVAL);
}

static void
test_spillgen_zipf_zero_weight_never_drawn(void **state)
{
	(void)state;
	double w[4] = {1, 0, 3, 0};
	struct sg_alias a;
	struct sg_rng r;

	assert_int_equal(sg_alias_build(&a, w, 4), 0);
	sg_rng_seed(&r, 7);
	for (int i = 0; i < 100000; i++) {
		uint32_t k = sg_alias_sample(&a, &r);
		assert_true(k == 0 || k == 2);
	}
	assert_true(fabs(sg_alias_prob(&a, 0) - 0.25) < 1e-9);
	assert_true(fabs(sg_alias_prob(&a, 2) - 0.75) < 1e-9);
	sg_alias_free(&a);
}

static void
test_spillgen_zipf_bounded_draw_uniform(void **state)
{
	(void)state;
	/* n = 3 does not divide 2^32: Lemire's rejection keeps it exact. */
	struct sg_rng r;
	uint64_t c[3] = {0};
	uint32_t spare;

	sg_rng_seed(&r, 1);
	for (int i = 0; i < 300000; i++)
		c[sg_rng_below(&r, 3, &spare)]++;
	for (int i = 0; i < 3; i++)
		assert_true(c[i] > 99000 && c[i] < 101000);
}

int
main(void)
{
	struct CMUnitTest t[sizeof(cases) / sizeof(cases[0]) + 4];
	size_t k = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct CMUnitTest u = cmocka_unit_test_prestate(test_spillgen_zipf_table_exact,
		                                                (void *)&cases[i]);
		t[k++] = u;
	}
	t[k++] = (struct CMUnitTest)cmocka_unit_test(test_spillgen_zipf_chi_square);
	t[k++] = (struct CMUnitTest)cmocka_unit_test(test_spillgen_zipf_rejects_bad_input);
	t[k++] = (struct CMUnitTest)cmocka_unit_test(test_spillgen_zipf_zero_weight_never_drawn);
	t[k++] = (struct CMUnitTest)cmocka_unit_test(test_spillgen_zipf_bounded_draw_uniform);
	return _cmocka_run_group_tests("spillgen_zipf", t, k, NULL, NULL);
}
