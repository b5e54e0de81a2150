/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the pure pieces of the DPDK telemetry commands: how a VIP is
 * written, which VIP a selector names (a table of selectors, each a row),
 * the copy of the configuration the telemetry thread reads, and the counter
 * fields: every one is named and read as the stats document names and sums it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "config_fixture.h"
#include "control/io/stats.h"
#include "control/io/telemetry.h"

static const char cfg_sq[] =
        "{'encap': {'source_v4': '10.0.0.1', 'source_v6': 'fd00::1',"
        "           'next_hop_mac': '02:00:00:00:00:01'},"
        " 'vips': [{'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp',"
        "           'backends': [{'address': '10.1.0.1'}, {'address': '10.1.0.2', 'name': 'b2',"
        "                         'weight': 3}]},"
        "          {'address': 'fd00::10', 'port': 53, 'protocol': 'udp',"
        "           'backends': [{'address': 'fd01::1'}]},"
        "          {'address': '192.0.2.11', 'port': 0, 'protocol': 'udp',"
        "           'backends': []}]}";

static void
test_telemetry_vip_text(void **state)
{
	union lb_ip a4 = {.b = {192, 0, 2, 10}}, a6 = {.b = {0xfd, 0, [15] = 0x10}};
	char buf[LB_TELE_VIP_TEXT], tiny[8] = "zzz";

	(void)state;
	assert_int_equal(lb_telemetry_vip_text(LB_AF_INET, &a4, 80, IPPROTO_TCP, buf, sizeof(buf)),
	                 0);
	assert_string_equal(buf, "192.0.2.10:80/tcp");
	assert_int_equal(lb_telemetry_vip_text(LB_AF_INET6, &a6, 53, IPPROTO_UDP, buf, sizeof(buf)),
	                 0);
	assert_string_equal(buf, "[fd00::10]:53/udp");
	assert_int_equal(lb_telemetry_vip_text(LB_AF_INET, &a4, 0, IPPROTO_UDP, buf, sizeof(buf)),
	                 0);
	assert_string_equal(buf, "192.0.2.10:0/udp");
	assert_int_equal(
	        lb_telemetry_vip_text(LB_AF_INET, &a4, 80, IPPROTO_TCP, tiny, sizeof(tiny)),
	        -ENOSPC);
	assert_string_equal(tiny, "");
}

static void
test_telemetry_dir_copy(void **state)
{
	struct lb_config *cfg = load_ok(cfg_sq);
	struct lb_tele_dir d;

	(void)state;
	assert_int_equal(lb_telemetry_dir_build(&d, cfg, 7), 0);
	assert_int_equal(d.generation, 7);
	assert_int_equal(d.n_vips, 3);
	assert_int_equal(d.n_backends, 3);
	assert_string_equal(d.vips[0].text, "192.0.2.10:80/tcp");
	assert_string_equal(d.vips[1].text, "[fd00::10]:53/udp");
	assert_string_equal(d.vips[2].text, "192.0.2.11:0/udp");
	assert_int_equal(d.vips[0].first_backend, 0);
	assert_int_equal(d.vips[0].n_backends, 2);
	assert_int_equal(d.vips[1].first_backend, 2);
	assert_int_equal(d.vips[1].n_backends, 1);
	assert_int_equal(d.vips[2].n_backends, 0);
	assert_string_equal(d.backends[0].address, "10.1.0.1");
	assert_string_equal(d.backends[1].address, "10.1.0.2");
	assert_string_equal(d.backends[1].name, "b2");
	assert_int_equal(d.backends[1].weight, 3);
	assert_string_equal(d.backends[2].address, "fd01::1");
	for (uint32_t i = 0; i < d.n_vips; i++)
		assert_int_equal(d.vips[i].id, cfg->vips[i].id);
	for (uint32_t i = 0; i < d.n_backends; i++)
		assert_int_equal(d.backends[i].id,
		                 i < 2 ? cfg->vips[0].backends[i].id : cfg->vips[1].backends[0].id);
	lb_telemetry_dir_free(&d);
	assert_int_equal(d.n_vips, 0);
	assert_null(d.vips);
	lb_config_free(cfg);
}

struct find_case {
	const char *sel;
	int want; /* index, or -errno */
};

static const struct find_case find_cases[] = {
        {"0", 0},
        {"1", 1},
        {"2", 2},
        {"9", -ENOENT},
        {"192.0.2.10:80/tcp", 0},
        {"[fd00::10]:53/udp", 1},
        {"fd00::10:53/udp", 1},
        {"[fd00:0:0::10]:53/udp", 1},
        {"192.0.2.11:0/udp", 2},
        {"192.0.2.10:80/udp", -ENOENT},
        {"192.0.2.10:81/tcp", -ENOENT},
        {"192.0.2.11:53/udp", -ENOENT},
        {"192.0.2.10:80/sctp", -EINVAL},
        {"192.0.2.10:80", -EINVAL},
        {"192.0.2.10/tcp", -EINVAL},
        {"192.0.2.10:99999/tcp", -EINVAL},
        {"192.0.2.10:8x/tcp", -EINVAL},
        {"[fd00::10:53/udp", -EINVAL},
        {"nonsense", -EINVAL},
        {"", -EINVAL},
        {NULL, -EINVAL},
};

static void
test_telemetry_vip_find(void **state)
{
	const struct find_case *c = *state;
	struct lb_config *cfg = load_ok(cfg_sq);
	struct lb_tele_dir d;

	assert_int_equal(lb_telemetry_dir_build(&d, cfg, 1), 0);
	print_message("selector \"%s\"\n", c->sel != NULL ? c->sel : "(null)");
	assert_int_equal(lb_telemetry_vip_find(&d, c->sel), c->want);
	lb_telemetry_dir_free(&d);
	lb_config_free(cfg);
}

/* Each field's name is a scalar of the stats document, with the same value. */
static void
test_telemetry_fields_match_stats(void **state)
{
	struct lb_core_counters *c = calloc(1, sizeof(*c));
	const struct lb_core_counters *cores[1] = {c};
	unsigned int lcores[1] = {1};
	uint64_t *w = (uint64_t *)c;
	json_t *doc, *tot;

	(void)state;
	assert_non_null(c);
	/* Distinct values in every scalar word (the fields come first). */
	for (size_t i = 0; i < offsetof(struct lb_core_counters, drops) / sizeof(uint64_t); i++)
		w[i] = 1000 + i;
	doc = lb_stats_json(NULL, cores, lcores, 1);
	assert_non_null(doc);
	tot = json_object_get(doc, "totals");
	for (unsigned int i = 0; i < LB_TELE_N_FIELDS; i++) {
		const char *name = lb_telemetry_field_name(i);
		json_t *v;

		assert_non_null(name);
		v = json_object_get(tot, name);
		assert_non_null(v);
		assert_int_equal(json_integer_value(v), lb_telemetry_field_load(c, i));
		for (unsigned int j = 0; j < i; j++)
			assert_string_not_equal(name, lb_telemetry_field_name(j));
	}
	assert_null(lb_telemetry_field_name(LB_TELE_N_FIELDS));
	/* Every scalar of the document is a field, or one the commands add. */
	const char *key;
	json_t *val;
	json_object_foreach (tot, key, val) {
		bool found = strcmp(key, "dropped") == 0 || strcmp(key, "drops") == 0;

		for (unsigned int i = 0; i < LB_TELE_N_FIELDS && !found; i++)
			found = strcmp(key, lb_telemetry_field_name(i)) == 0;
		print_message("stats field %s\n", key);
		assert_true(found);
	}
	json_decref(doc);
	free(c);
}

static void
test_telemetry_hot_off(void **state)
{
	struct lb_tele_hot t;

	(void)state;
	assert_int_equal(lb_telemetry_hot_build(&t, NULL, NULL, 5), 0);
	assert_false(t.enabled);
	assert_int_equal(t.window, 5);
	assert_int_equal(t.n_keys, 0);
	lb_telemetry_hot_free(&t);
}

int
main(void)
{
	struct CMUnitTest tests[4 + sizeof(find_cases) / sizeof(find_cases[0])] = {
	        cmocka_unit_test(test_telemetry_vip_text),
	        cmocka_unit_test(test_telemetry_dir_copy),
	        cmocka_unit_test(test_telemetry_fields_match_stats),
	        cmocka_unit_test(test_telemetry_hot_off),
	};

	for (size_t i = 0; i < sizeof(find_cases) / sizeof(find_cases[0]); i++)
		tests[4 + i] = (struct CMUnitTest)cmocka_unit_test_prestate(test_telemetry_vip_find,
		                                                            (void *)&find_cases[i]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
