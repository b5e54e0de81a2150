/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for control/model/json_text.c: reals at their shortest
 * round-trip precision, one row per spelling; strings, integers and the
 * text around the numbers untouched; every shortened real reads back to
 * the double Jansson was given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/model/json_text.h"

struct shorten_row {
	const char *name;
	const char *in;
	const char *out;
};

static const struct shorten_row rows[] = {
        {"point three", "[0.29999999999999999]", "[0.3]"},
        {"already short", "[0.01, 0.5, 0.25]", "[0.01, 0.5, 0.25]"},
        {"stays a real", "{\"a\": 1.0, \"b\": -2.0}", "{\"a\": 1.0, \"b\": -2.0}"},
        {"small exponent", "[9.9999999999999995e-7]", "[1e-6]"},
        {"large", "[1e+20]", "[1e20]"},
        {"negative", "[-0.0050000000000000001]", "[-0.005]"},
        {"integers untouched", "[100, -3, 0]", "[100, -3, 0]"},
        {"strings untouched", "{\"0.29999999999999999\": \"1.50000000000000000 \\\" 0.1\"}",
         "{\"0.29999999999999999\": \"1.50000000000000000 \\\" 0.1\"}"},
        {"needs every digit", "[0.30000000000000004]", "[0.30000000000000004]"},
};

static void
test_json_text_shorten(void **state)
{
	const struct shorten_row *r = *state;
	char *s = strdup(r->in);

	assert_non_null(s);
	assert_int_equal(lb_json_text_shorten(s), strlen(r->out));
	assert_string_equal(s, r->out);
	free(s);
}

/* Jansson's own reals, shortened, read back to the same doubles. */
static void
test_json_text_round_trip(void **state)
{
	static const double v[] = {0.3,   0.1 + 0.2, 1e-9,  1.0 / 3, 123456.789, 6.02214076e23,
	                           1e300, -0.0,      0.005, 0.15,    0.07,       5e-324};
	json_t *a = json_array(), *back;
	char *s;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		json_array_append_new(a, json_real(v[i]));
	s = lb_json_text_dumps(a, JSON_COMPACT);
	assert_non_null(s);
	assert_non_null(strstr(s, "[0.3,0.30000000000000004,1e-9,"));
	back = json_loads(s, 0, NULL);
	assert_non_null(back);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_true(json_is_real(json_array_get(back, i)));
		assert_true(json_real_value(json_array_get(back, i)) == v[i]);
	}
	free(s);
	json_decref(back);
	json_decref(a);
}

int
main(void)
{
	struct CMUnitTest tests[sizeof(rows) / sizeof(rows[0]) + 1];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_json_text_shorten,
		                                                        (void *)&rows[i]);
		tests[n++].name = rows[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_json_text_round_trip);
	return _cmocka_run_group_tests("json_text", tests, n, NULL, NULL);
}
