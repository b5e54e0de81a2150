/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the vip_* methods of the control socket (control/rpc/rpc_vip.c)
 * against the fake daemon of rpc_fixture.c: one row per rejected VIP
 * reference or object, the results of vip_list, vip_get, vip_add and
 * vip_remove, and the limits on VIPs and on all Maglev tables together.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "rpc_fixture.h"

/* ---- Rejections: one row each; nothing may change. ---- */

static const struct err_case err_cases[] = {
        /* Params of methods that take none. */
        {"vip_list unknown param", REQ("vip_list", "{'x': 1}"), P, "x: unknown field", "1"},

        /* VIP references. */
        {"vip_get no params", REQ0("vip_get"), P, "address: missing (required)", "1"},
        {"vip_get missing port", REQ("vip_get", "{'address': '192.0.2.10', 'protocol': 'tcp'}"), P,
         "port: missing (required)", "1"},
        {"vip_get missing protocol", REQ("vip_get", "{'address': '192.0.2.10', 'port': 80}"), P,
         "protocol: missing", "1"},
        {"vip_get port string",
         REQ("vip_get", "{'address': '192.0.2.10', 'port': '80', 'protocol': 'tcp'}"), P,
         "port: expected an integer, got a string", "1"},
        {"vip_get port out of range",
         REQ("vip_get", "{'address': '192.0.2.10', 'port': 65536, 'protocol': 'tcp'}"), P,
         "port: 65536 out of range", "1"},
        {"vip_get port negative",
         REQ("vip_get", "{'address': '192.0.2.10', 'port': -1, 'protocol': 'tcp'}"), P,
         "port: -1 out of range", "1"},
        {"vip_get bad address",
         REQ("vip_get", "{'address': '192.0.2.300', 'port': 80, 'protocol': 'tcp'}"), P,
         "address: not an IPv4 or IPv6 address: \"192.0.2.300\"", "1"},
        {"vip_get address number", REQ("vip_get", "{'address': 1, 'port': 80, 'protocol': 'tcp'}"),
         P, "address: expected a string, got an integer", "1"},
        {"vip_get bad protocol",
         REQ("vip_get", "{'address': '192.0.2.10', 'port': 80, 'protocol': 'sctp'}"), P,
         "protocol: \"sctp\" is not one of: tcp, udp", "1"},
        {"vip_get VIP fields are not reference fields",
         REQ("vip_get", "{" VREF_FIELDS ", 'key': '5tuple'}"), P, "key: unknown field", "1"},
        {"vip_get unknown field", REQ("vip_get", "{" VREF_FIELDS ", 'name': 'x'}"), P,
         "name: unknown field", "1"},
        {"vip_remove missing address", REQ("vip_remove", "{'port': 80, 'protocol': 'tcp'}"), P,
         "address: missing (required)", "1"},
        {"vip_remove unknown field", REQ("vip_remove", "{" VREF_FIELDS ", 'backends': []}"), P,
         "backends: unknown field", "1"},

        /* VIP objects. */
        {"vip_add missing protocol", REQ("vip_add", "{'address': '198.51.100.1', 'port': 80}"), P,
         "protocol: missing", "1"},
        {"vip_add bad key",
         REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp', 'key': 'dst'}"),
         P, "key: \"dst\" is not one of: 5tuple, src_ip, src_ip_dport", "1"},
        {"vip_add bad encap",
         REQ("vip_add",
             "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp', 'encap': 'gre'}"),
         P, "encap: \"gre\" is not one of: ipip, gue", "1"},
        {"vip_add unknown field",
         REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp', 'weight': 1}"),
         P, "weight: unknown field", "1"},
        {"vip_add backends not an array",
         REQ("vip_add",
             "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp', 'backends': {}}"),
         P, "backends: expected an array, got an object", "1"},
        {"vip_add backend weight string",
         REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp', "
                        "'backends': [{'address': '10.2.0.1', 'weight': 'x'}]}"),
         P, "backends[0].weight: expected an integer, got a string", "1"},
        {"vip_add backend unknown field",
         REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp', "
                        "'backends': [{'address': '10.2.0.1', 'port': 80}]}"),
         P, "backends[0].port: unknown field", "1"},
        {"vip_add duplicate backend",
         REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp', "
                        "'backends': [{'address': '10.2.0.1'}, {'address': '10.2.0.1'}]}"),
         P, "backends[1]: duplicate backend address", "1"},

        /* Not found. */
        {"vip_get other port",
         REQ("vip_get", "{'address': '192.0.2.10', 'port': 81, 'protocol': 'tcp'}"), NF,
         "VIP 192.0.2.10:81/tcp not found", "1"},
        {"vip_get other protocol",
         REQ("vip_get", "{'address': '192.0.2.10', 'port': 80, 'protocol': 'udp'}"), NF,
         "VIP 192.0.2.10:80/udp not found", "1"},
        {"vip_remove not found",
         REQ("vip_remove", "{'address': '2001:db8::10', 'port': 443, 'protocol': 'tcp'}"), NF,
         "VIP [2001:db8::10]:443/tcp not found", "1"},

        /* Already exists. */
        {"vip_add exists", REQ("vip_add", VREF), EX, "VIP 192.0.2.10:80/tcp already exists", "1"},
        {"vip_add exists (IPv6, other key)",
         REQ("vip_add", "{'address': '2001:db8::10', 'port': 443, 'protocol': 'udp'}"), EX,
         "VIP [2001:db8::10]:443/udp already exists", "1"},
};

/* ---- Methods ---- */

/* The VIPs of the configuration document as vip_list shows them: every VIP
 * with the hot_mode in force, a source-keyed VIP's default being "report"
 * and a 5-tuple VIP's "spread" (docs/hot-keys.md, "Affinity"). */
static void
with_hot_modes(json_t *vips)
{
	size_t i;
	json_t *v;

	json_array_foreach (vips, i, v) {
		const char *key = json_string_value(json_object_get(v, "key"));

		if (json_object_get(v, "hot_mode") == NULL)
			json_object_set_new(
			        v, "hot_mode",
			        json_string(strcmp(key, "5tuple") == 0 ? "spread" : "report"));
	}
}

static void
test_rpc_vip_list_and_get(void **state)
{
	struct fake *f = *state;
	json_t *doc = config_doc(f), *r, *res;

	with_hot_modes(json_object_get(doc, "vips"));

	res = call_ok(f, REQ0("vip_list"), &r);
	assert_true(json_equal(res, json_object_get(doc, "vips")));
	json_decref(r);

	res = call_ok(f, REQ("vip_get", VREF), &r);
	assert_true(json_equal(res, json_array_get(json_object_get(doc, "vips"), 0)));
	json_decref(r);

	res = call_ok(
	        f, REQ("vip_get", "{'address': '2001:db8:0::10', 'port': 443, 'protocol': 'udp'}"),
	        &r);
	assert_true(json_equal(res, json_array_get(json_object_get(doc, "vips"), 1)));
	assert_string_equal(json_string_value(json_object_get(res, "key")), "src_ip");
	assert_string_equal(json_string_value(json_object_get(res, "encap")), "gue");
	json_decref(r);
	json_decref(doc);
	assert_int_equal(f->apply_calls, 0);
}

static void
test_rpc_vip_add(void **state)
{
	struct fake *f = *state;
	json_t *r, *res, *want;

	res = call_ok(f,
	              REQ("vip_add", "{'address': '198.51.100.1', 'port': 0, 'protocol': 'udp', "
	                             "'backends': [{'address': '10.2.0.1', 'state': 'draining'}, "
	                             "{'address': '2001:db8:2::1', 'weight': 0, 'name': 'six'}]}"),
	              &r);
	/* As stored: every default spelled out. */
	want = parse_sq(
	        "{'address': '198.51.100.1', 'port': 0, 'protocol': 'udp', "
	        "'key': '5tuple', 'encap': 'ipip', 'backends': ["
	        "{'address': '10.2.0.1', 'weight': 1, 'state': 'draining'},"
	        "{'address': '2001:db8:2::1', 'weight': 0, 'state': 'active', 'name': 'six'}]}");
	if (!json_equal(res, want))
		fail_msg("got %s, want %s", show(res), show(want));
	json_decref(want);
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	assert_int_equal(f->cfg->n_vips, 3);
	assert_int_equal(f->cfg->vips[2].n_backends, 2);
	assert_int_equal(f->snap->n_vips, 3);

	/* Without backends; visible to vip_get. */
	call_ok(f, REQ("vip_add", "{'address': '198.51.100.2', 'port': 53, 'protocol': 'udp'}"),
	        &r);
	json_decref(r);
	res = call_ok(f,
	              REQ("vip_get", "{'address': '198.51.100.2', 'port': 53, 'protocol': 'udp'}"),
	              &r);
	assert_int_equal(json_array_size(json_object_get(res, "backends")), 0);
	json_decref(r);
	assert_int_equal(f->apply_calls, 2);
}

static void
test_rpc_vip_remove(void **state)
{
	struct fake *f = *state;
	json_t *r, *res;

	res = call_ok(f, REQ("vip_remove", VREF), &r);
	assert_string_equal(show(res), "{}");
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	assert_int_equal(f->cfg->n_vips, 1);
	assert_int_equal(f->cfg->vips[0].port, 443);
	r = rpc(f, REQ("vip_get", VREF));
	assert_error(r, NF, "VIP 192.0.2.10:80/tcp not found");
	json_decref(r);
}

/* ---- Limits ---- */

/* vip_add past the budget of all tables (VIPs x table_size) is refused. */
static void
test_rpc_limit_table_budget(void **state)
{
	uint32_t fit = (uint32_t)(LB_MAGLEV_MAX_SLOTS / 1048573);
	struct fake *f = fake_big(fit, 0);
	json_t *r;

	(void)state;
	f->cfg->table_size = 1048573;
	r = rpc(f, REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp'}"));
	assert_error(r, LB_RPC_ERR_LIMIT, "too many VIPs for table_size 1048573");
	json_decref(r);
	assert_int_equal(f->apply_calls, 0);
	fake_free(f);
}

static void
test_rpc_limit_vips(void **state)
{
	static const char *const calls[] = {
	        REQ("vip_remove", "{'address': '203.0.113.1', 'port': 1, 'protocol': 'tcp'}"),
	        REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp'}"),
	        NULL,
	};
	struct fake *f = fake_big(LB_MAX_VIPS, 0);
	json_t *r;

	(void)state;
	r = rpc(f, REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp'}"));
	assert_error(r, LB_RPC_ERR_LIMIT, "too many VIPs (at most 1024)");
	json_decref(r);
	/* An existing VIP is reported as such before the limit. */
	r = rpc(f, REQ("vip_add", "{'address': '203.0.113.1', 'port': 1, 'protocol': 'tcp'}"));
	assert_error(r, EX, "VIP 203.0.113.1:1/tcp already exists");
	json_decref(r);
	/* Removing one in the same batch makes room. */
	r = rpc_batch(f, calls);
	result_of(json_array_get(r, 0));
	result_of(json_array_get(r, 1));
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	assert_int_equal(f->cfg->n_vips, LB_MAX_VIPS);
	fake_free(f);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
	        RPC_TEST(test_rpc_vip_list_and_get),
	        RPC_TEST(test_rpc_vip_add),
	        RPC_TEST(test_rpc_vip_remove),
	        cmocka_unit_test(test_rpc_limit_vips),
	        cmocka_unit_test(test_rpc_limit_table_budget),
	};

	return run_rpc_group("rpc_vip", err_cases, N_ROWS(err_cases), tests, N_ROWS(tests));
}
