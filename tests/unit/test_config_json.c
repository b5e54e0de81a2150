/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lb_config_to_json under allocation failure: Jansson's allocator is replaced
 * (json_set_alloc_funcs) by one that fails the k-th allocation, for every k up
 * to the number a successful encoding makes; each result must be NULL or the
 * complete document, equal to a reference the test writes out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "control/model/config.h"

#include "config_fixture.h"

/* Two VIPs (IPv4 and IPv6), named and unnamed backends, every non-default field. */
static const char input[] =
        "{'encap': {'source_v4': '192.0.2.1', 'source_v6': '2001:db8::1',"
        "           'next_hop_mac': '02:00:5e:00:53:01', 'mtu': 9000, 'gue_port': 7000,"
        "           'too_big': 'drop'},"
        " 'maglev': {'table_size': 251, 'seed': 's1'},"
        " 'flows': {'capacity': 4096, 'tcp_idle_ms': 1000, 'udp_idle_ms': 2000,"
        " 'syn_idle_ms': 700, 'closing_idle_ms': 800, 'new_flow_rate': 5000,"
        " 'new_flow_burst': 900},"
        " 'hot': {'enabled': false, 'window_ms': 50, 'threshold': 0.5, 'epsilon': 0.125,"
        "         'weight': 'bytes', 'sample': 3,"
        "         'margin': 0.25, 'ewma_alpha': 0.75, 'demote_windows': 9, 'threshold_low': 0.125},"
        " 'vips': [{'address': '203.0.113.1', 'port': 80, 'protocol': 'tcp', 'hot_mode': 'report',"
        "           'backends': [{'address': '10.0.0.1', 'weight': 3, 'name': 'web-1'},"
        "                        {'address': '10.0.0.2', 'state': 'draining'}]},"
        "          {'address': '2001:db8::80', 'port': 53, 'protocol': 'udp', 'key': 'src_ip',"
        "           'encap': 'gue', 'backends': [{'address': '2001:db8:1::1', 'name': 'dns'}]}]}";

/* The document lb_config_to_json must produce for input, written out in full. */
static const char reference[] =
        "{'encap': {'source_v4': '192.0.2.1', 'source_v6': '2001:db8::1',"
        "           'next_hop_mac': '02:00:5e:00:53:01', 'mtu': 9000, 'gue_port': 7000,"
        "           'too_big': 'drop'},"
        " 'maglev': {'table_size': 251, 'seed': 's1'},"
        " 'flows': {'capacity': 4096, 'tcp_idle_ms': 1000, 'udp_idle_ms': 2000,"
        " 'syn_idle_ms': 700, 'closing_idle_ms': 800, 'new_flow_rate': 5000,"
        " 'new_flow_burst': 900},"
        " 'icmp': {'rate_per_sec': 1000, 'burst': 50},"
        " 'hot': {'enabled': false, 'window_ms': 50, 'threshold': 0.5, 'epsilon': 0.125,"
        "         'weight': 'bytes', 'sample': 3,"
        "         'margin': 0.25, 'ewma_alpha': 0.75, 'demote_windows': 9, 'threshold_low': 0.125},"
        " 'vips': [{'address': '203.0.113.1', 'port': 80, 'protocol': 'tcp', 'key': '5tuple',"
        "           'encap': 'ipip', 'hot_mode': 'report',"
        "           'backends': [{'address': '10.0.0.1', 'weight': 3, 'state': 'active',"
        "                         'name': 'web-1'},"
        "                        {'address': '10.0.0.2', 'weight': 1, 'state': 'draining'}]},"
        "          {'address': '2001:db8::80', 'port': 53, 'protocol': 'udp', 'key': 'src_ip',"
        "           'encap': 'gue',"
        "           'backends': [{'address': '2001:db8:1::1', 'weight': 1, 'state': 'active',"
        "                         'name': 'dns'}]}]}";

static unsigned long g_allocs;  /* allocations since the last reset */
static unsigned long g_fail_at; /* this allocation (1-based) fails; 0: none */
static bool g_fail_after;       /* and every later one too */

static void *
counting_malloc(size_t n)
{
	g_allocs++;
	if (g_fail_at != 0 && (g_allocs == g_fail_at || (g_fail_after && g_allocs > g_fail_at)))
		return NULL;
	return malloc(n);
}

static void
reset(unsigned long fail_at, bool after)
{
	g_allocs = 0;
	g_fail_at = fail_at;
	g_fail_after = after;
}

static void
test_to_json_matches_reference(void **state)
{
	struct lb_config *c = load_ok(input);
	json_t *ref = parse_sq(reference), *j;

	(void)state;
	j = lb_config_to_json(c);
	assert_non_null(j);
	if (!json_equal(j, ref)) {
		char *got = json_dumps(j, JSON_SORT_KEYS);

		fail_msg("lb_config_to_json: %s", got);
	}
	json_decref(j);
	json_decref(ref);
	lb_config_free(c);
}

/* Every k-th allocation failing (alone, or with all after it): NULL or complete. */
static void
test_to_json_allocation_failures(void **state)
{
	struct lb_config *c = load_ok(input);
	json_t *ref = parse_sq(reference);
	unsigned long total, nulls = 0;

	(void)state;
	json_set_alloc_funcs(counting_malloc, free);
	reset(0, false);
	json_decref(lb_config_to_json(c));
	total = g_allocs;
	assert_true(total > 20); /* the counter does see Jansson's allocations */
	for (int after = 0; after <= 1; after++)
		for (unsigned long k = 1; k <= total; k++) {
			json_t *j;

			reset(k, after);
			j = lb_config_to_json(c);
			reset(0, false);
			if (j == NULL) {
				nulls++;
				continue;
			}
			if (!json_equal(j, ref)) {
				char *got = json_dumps(j, JSON_SORT_KEYS);

				fail_msg("allocation %lu of %lu failed%s: a partial document: %s",
				         k, total, after ? " (and every later one)" : "", got);
			}
			json_decref(j);
		}
	json_set_alloc_funcs(malloc, free);
	/* Every allocation feeds the document: each failure must have shown. */
	assert_int_equal(nulls, 2 * total);
	json_decref(ref);
	lb_config_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_to_json_matches_reference),
	        cmocka_unit_test(test_to_json_allocation_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
