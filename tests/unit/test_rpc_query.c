/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the read-only methods of the control socket and
 * config_save (control/rpc/rpc_query.c) against the fake daemon of
 * rpc_fixture.c: one row per rejected call, version, stats, the published
 * Maglev table, config_get and config_save.
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

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "rpc_fixture.h"

/* ---- Rejections: one row each; nothing may change. ---- */

static const struct err_case err_cases[] = {
        /* Params of methods that take none. */
        {"version unknown param", REQ("version", "{'verbose': true}"), P, "verbose: unknown field",
         "1"},
        {"stats unknown param", REQ("stats", "{'x': 1}"), P, "x: unknown field", "1"},
        {"config_get unknown param", REQ("config_get", "{'x': 1}"), P, "x: unknown field", "1"},
        {"config_save unknown param", REQ("config_save", "{'path': '/tmp/x'}"), P,
         "path: unknown field", "1"},

        /* Backend calls. */
        {"maglev_table missing vip", REQ("maglev_table", "{}"), P, "vip: missing (required)", "1"},
        {"maglev_table raw not a boolean", REQ("maglev_table", "{'vip': " VREF ", 'raw': 1}"), P,
         "raw: expected a boolean, got an integer", "1"},
        {"maglev_table unknown field", REQ("maglev_table", "{'vip': " VREF ", 'size': 1}"), P,
         "size: unknown field", "1"},

        {"maglev_table from without raw", REQ("maglev_table", "{'vip': " VREF ", 'from': 0}"), P,
         "from: only with raw: true", "1"},
        {"maglev_table from negative",
         REQ("maglev_table", "{'vip': " VREF ", 'raw': true, 'from': -1}"), P,
         "from: -1 out of range [0, 250]", "1"},
        {"maglev_table from past the end",
         REQ("maglev_table", "{'vip': " VREF ", 'raw': true, 'from': 251}"), P,
         "from: 251 out of range [0, 250]", "1"},
        {"maglev_table from not an integer",
         REQ("maglev_table", "{'vip': " VREF ", 'raw': true, 'from': '1'}"), P,
         "from: expected an integer, got a string", "1"},
        {"maglev_table count zero",
         REQ("maglev_table", "{'vip': " VREF ", 'raw': true, 'count': 0}"), P,
         "count: 0 out of range [1, 1048573]", "1"},
        {"maglev_table count without raw", REQ("maglev_table", "{'vip': " VREF ", 'count': 5}"), P,
         "count: only with raw: true", "1"},

        /* Not found. */
        {"maglev_table VIP not found",
         REQ("maglev_table", "{'vip': {'address': '192.0.2.99', 'port': 80, 'protocol': 'tcp'}}"),
         NF, "VIP 192.0.2.99:80/tcp not found", "1"},

        /* config_save without a state file is in test_rpc_config_save. */
};

/* ---- Methods ---- */

static void
test_rpc_version(void **state)
{
	struct fake *f = *state;
	json_t *r, *res = call_ok(f, REQ0("version"), &r);

	/* The project version meson was configured with (meson.build). */
	assert_string_equal(show(res), "{\"version\":\"" SPILLWAY_VERSION "\",\"protocol\":1}");
	assert_id(r, "1");
	json_decref(r);
	/* Empty params are the same as none. */
	res = call_ok(f, REQ("version", "{}"), &r);
	assert_int_equal(json_integer_value(json_object_get(res, "protocol")), 1);
	json_decref(r);
}

static void
test_rpc_stats(void **state)
{
	struct fake *f = *state;
	json_t *r, *res;

	res = call_ok(f, REQ0("stats"), &r);
	assert_int_equal(
	        json_integer_value(json_object_get(json_object_get(res, "totals"), "rx_packets")),
	        42);
	assert_int_equal(json_integer_value(json_object_get(res, "generation")), 1);
	json_decref(r);
	call_ok(f, REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.1', 'weight': 3}"), &r);
	json_decref(r);
	res = call_ok(f, REQ0("stats"), &r);
	assert_int_equal(json_integer_value(json_object_get(res, "generation")), 2);
	json_decref(r);
}

/* Slots per backend add up to M and follow the weights; raw names every slot. */
static void
test_rpc_maglev_table(void **state)
{
	struct fake *f = *state;
	json_t *r, *res, *bes, *table;
	json_int_t s1, s2, n1 = 0, n2 = 0;

	res = call_ok(f, REQ("maglev_table", "{'vip': " VREF "}"), &r);
	assert_int_equal(json_integer_value(json_object_get(res, "table_size")), 251);
	assert_int_equal(json_integer_value(json_object_get(res, "generation")), 1);
	assert_null(json_object_get(res, "table"));
	bes = json_object_get(res, "backends");
	assert_int_equal(json_array_size(bes), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(bes, 0), "address")),
	                    "10.1.0.1");
	assert_null(json_object_get(json_array_get(bes, 0), "name"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(bes, 1), "name")),
	                    "web2");
	s1 = json_integer_value(json_object_get(json_array_get(bes, 0), "slots"));
	s2 = json_integer_value(json_object_get(json_array_get(bes, 1), "slots"));
	assert_int_equal(s1 + s2, 251);
	assert_true(s2 > s1); /* weight 2 against 1 */
	json_decref(r);

	res = call_ok(f, REQ("maglev_table", "{'vip': " VREF ", 'raw': true}"), &r);
	table = json_object_get(res, "table");
	assert_int_equal(json_array_size(table), 251);
	for (size_t i = 0; i < json_array_size(table); i++) {
		const char *a = json_string_value(json_array_get(table, i));

		assert_non_null(a);
		if (strcmp(a, "10.1.0.1") == 0)
			n1++;
		else if (strcmp(a, "10.1.0.2") == 0)
			n2++;
		else
			fail_msg("slot %zu: %s", i, a);
	}
	assert_int_equal(n1, s1);
	assert_int_equal(n2, s2);
	json_decref(r);

	/* A draining backend keeps no slots; raw false is the default. */
	call_ok(f,
	        REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'state': 'draining'}"),
	        &r);
	json_decref(r);
	res = call_ok(f, REQ("maglev_table", "{'vip': " VREF ", 'raw': false}"), &r);
	bes = json_object_get(res, "backends");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(bes, 0), "slots")), 251);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(bes, 1), "slots")), 0);
	assert_int_equal(json_integer_value(json_object_get(res, "generation")), 2);
	assert_null(json_object_get(res, "table"));
	json_decref(r);

	/* A VIP without backends: every slot empty. */
	res = call_ok(f,
	              REQ("maglev_table", "{'vip': {'address': '2001:db8::10', 'port': 443, "
	                                  "'protocol': 'udp'}, 'raw': true}"),
	              &r);
	assert_int_equal(json_array_size(json_object_get(res, "backends")), 0);
	table = json_object_get(res, "table");
	assert_int_equal(json_array_size(table), 251);
	for (size_t i = 0; i < json_array_size(table); i++)
		assert_true(json_is_null(json_array_get(table, i)));
	json_decref(r);
}

/* The default table size: the raw table is large but complete. */
static void
test_rpc_maglev_table_default_size(void **state)
{
	struct fake *f;
	json_t *r, *res, *table;

	(void)state;
	f = fake_new("{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'}, "
	             "'vips': [{" VREF_FIELDS ", 'backends': [{'address': '10.1.0.1'}, "
	             "{'address': '10.1.0.2'}, {'address': '10.1.0.3', 'weight': 0}]}]}");
	res = call_ok(f, REQ("maglev_table", "{'vip': " VREF ", 'raw': true}"), &r);
	assert_int_equal(json_integer_value(json_object_get(res, "table_size")), 65537);
	table = json_object_get(res, "table");
	assert_int_equal(json_array_size(table), 65537);
	assert_int_equal(json_integer_value(json_object_get(
	                         json_array_get(json_object_get(res, "backends"), 2), "slots")),
	                 0);
	json_decref(r);
	fake_free(f);
}

/* from/count: the slots [from, from + count) of the whole raw table, cut at its end. */
static void
test_rpc_maglev_table_range(void **state)
{
	struct fake *f = *state;
	json_t *r, *res, *whole, *part;

	res = call_ok(f, REQ("maglev_table", "{'vip': " VREF ", 'raw': true}"), &r);
	whole = json_incref(json_object_get(res, "table"));
	assert_int_equal(json_integer_value(json_object_get(res, "from")), 0);
	json_decref(r);
	res = call_ok(
	        f, REQ("maglev_table", "{'vip': " VREF ", 'raw': true, 'from': 10, 'count': 20}"),
	        &r);
	assert_int_equal(json_integer_value(json_object_get(res, "from")), 10);
	assert_int_equal(json_integer_value(json_object_get(res, "table_size")), 251);
	part = json_object_get(res, "table");
	assert_int_equal(json_array_size(part), 20);
	for (size_t i = 0; i < 20; i++)
		assert_true(json_equal(json_array_get(part, i), json_array_get(whole, 10 + i)));
	/* The counts are of the whole table still. */
	assert_int_equal(
	        json_integer_value(json_object_get(
	                json_array_get(json_object_get(res, "backends"), 0), "slots")) +
	                json_integer_value(json_object_get(
	                        json_array_get(json_object_get(res, "backends"), 1), "slots")),
	        251);
	json_decref(r);
	res = call_ok(
	        f, REQ("maglev_table", "{'vip': " VREF ", 'raw': true, 'from': 240, 'count': 100}"),
	        &r);
	part = json_object_get(res, "table");
	assert_int_equal(json_array_size(part), 11);
	assert_true(json_equal(json_array_get(part, 10), json_array_get(whole, 250)));
	json_decref(r);
	json_decref(whole);
}

/* The bytes of slot entries in a compact JSON array of n copies of the string s. */
static size_t
array_bytes(const char *s, size_t n)
{
	return 2 + n * (strlen(s) + 2) + (n - 1);
}

/*
 * A raw table whose text is over the reply budget is refused with a message
 * that says how to get it; pages of it by from/count come whole.
 */
static void
test_rpc_reply_budget_single(void **state)
{
	const uint32_t m = 1048573;
	struct fake *f;
	json_t *r, *res;
	uint32_t from = 0, total = 0, page = 262144;
	char line[512];

	(void)state;
	f = fake_new("{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'}, "
	             "'maglev': {'table_size': 1048573}, "
	             "'vips': [{" VREF_FIELDS ", 'backends': [{'address': '10.1.0.1'}, "
	             "{'address': '10.1.0.2'}]}]}");
	/* Every slot holds one of two 8-character addresses: the table alone
	 * is over the budget, a quarter of it is not. */
	assert_true(array_bytes("10.1.0.1", m) > LB_RPC_MAX_REPLY);
	assert_true(array_bytes("10.1.0.1", page) + 1024 < LB_RPC_MAX_REPLY);
	r = rpc(f, REQ("maglev_table", "{'vip': " VREF ", 'raw': true}"));
	assert_error(r, LB_RPC_ERR_TOO_LARGE, "reply too large: ");
	assert_non_null(
	        strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
	               "from and count"));
	json_decref(r);
	while (from < m) {
		char *text, *dl;

		snprintf(line, sizeof(line),
		         REQ("maglev_table",
		             "{'vip': " VREF ", 'raw': true, 'from': %u, 'count': %u}"),
		         from, page);
		dl = dq(line);
		text = lb_rpc_handle(&f->ops, dl, strlen(dl));
		assert_non_null(text);
		assert_true(strlen(text) <= LB_RPC_MAX_REPLY);
		r = json_loads(text, 0, NULL);
		res = result_of(r);
		assert_int_equal(json_integer_value(json_object_get(res, "from")), from);
		total += (uint32_t)json_array_size(json_object_get(res, "table"));
		from += page;
		json_decref(r);
		free(text);
		free(dl);
	}
	assert_int_equal(total, m);
	fake_free(f);
}

/*
 * A batch of raw tables: the call that would take the reply past the budget
 * gets -32004, the others -32010 (nothing is applied); one call fewer fits.
 * The size of one reply is measured on a request of its own.
 */
static void
test_rpc_reply_budget_batch(void **state)
{
	static const char raw[] = REQ("maglev_table", "{'vip': " VREF ", 'raw': true}");
	static const char set[] =
	        REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.1', 'weight': 3}");
	const char *calls[16];
	struct fake *f;
	size_t one, fit;
	char *dl, *text;
	json_t *r;

	(void)state;
	f = fake_new("{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'}, "
	             "'vips': [{" VREF_FIELDS ", 'backends': [{'address': '10.1.0.1'}, "
	             "{'address': '10.1.0.2'}]}]}");
	dl = dq(raw);
	text = lb_rpc_handle(&f->ops, dl, strlen(dl));
	one = strlen(text);
	free(text);
	free(dl);
	/* k replies take 2 + k * one + (k - 1) bytes. */
	fit = (LB_RPC_MAX_REPLY - 1) / (one + 1);
	assert_true(fit >= 2 && fit + 2 < 16);
	for (size_t i = 0; i < fit; i++)
		calls[i] = raw;
	calls[fit] = NULL;
	r = rpc_batch(f, calls);
	assert_int_equal(json_array_size(r), fit);
	for (size_t i = 0; i < fit; i++)
		result_of(json_array_get(r, i));
	json_decref(r);

	calls[0] = set;
	for (size_t i = 1; i <= fit + 1; i++)
		calls[i] = raw;
	calls[fit + 2] = NULL;
	r = rpc_batch(f, calls);
	assert_int_equal(json_array_size(r), fit + 2);
	for (size_t i = 0; i < fit + 2; i++)
		assert_error(json_array_get(r, i),
		             i == fit + 1 ? LB_RPC_ERR_TOO_LARGE : LB_RPC_ERR_ABORTED,
		             i == fit + 1 ? "reply too large: " : "transaction aborted");
	json_decref(r);
	assert_int_equal(f->apply_calls, 0);
	fake_free(f);
}

/*
 * Results that no method checks ahead (config_get of a large configuration)
 * are measured as they are made: the call that would take the batch's reply
 * past the budget gets -32004, the others -32010; one call fewer fits.
 */
static void
test_rpc_reply_budget_measured(void **state)
{
	static const char get[] = REQ0("config_get");
	struct fake *f = fake_big(64, 256);
	const char *calls[64];
	size_t one, fit;
	char *dl, *text;
	json_t *r;

	(void)state;
	dl = dq(get);
	text = lb_rpc_handle(&f->ops, dl, strlen(dl));
	one = strlen(text);
	free(text);
	free(dl);
	fit = (LB_RPC_MAX_REPLY - 1) / (one + 1);
	assert_true(fit >= 1 && fit + 1 < 64);
	for (size_t i = 0; i <= fit; i++)
		calls[i] = get;
	calls[fit + 1] = NULL;
	r = rpc_batch(f, calls);
	assert_int_equal(json_array_size(r), fit + 1);
	for (size_t i = 0; i <= fit; i++)
		assert_error(
		        json_array_get(r, i), i == fit ? LB_RPC_ERR_TOO_LARGE : LB_RPC_ERR_ABORTED,
		        i == fit ? "reply too large: this call's reply" : "transaction aborted");
	json_decref(r);
	calls[fit] = NULL;
	r = rpc_batch(f, calls);
	assert_int_equal(json_array_size(r), fit);
	for (size_t i = 0; i < fit; i++)
		result_of(json_array_get(r, i));
	json_decref(r);
	fake_free(f);
}

/*
 * Slots scanned per request are bounded too: a batch of table counts over
 * LB_RPC_MAX_SCAN slots stops at the call that passes it.
 */
static void
test_rpc_scan_budget_batch(void **state)
{
	static const char call[] = REQ("maglev_table", "{'vip': " VREF "}");
	const uint32_t m = 1048573;
	const char *calls[LB_RPC_MAX_SCAN / 1048573 + 3];
	size_t fit = LB_RPC_MAX_SCAN / m, n = fit + 2;
	struct fake *f;
	json_t *r;

	(void)state;
	f = fake_new("{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'}, "
	             "'maglev': {'table_size': 1048573}, "
	             "'vips': [{" VREF_FIELDS ", 'backends': [{'address': '10.1.0.1'}]}]}");
	for (size_t i = 0; i < n; i++)
		calls[i] = call;
	calls[n] = NULL;
	r = rpc_batch(f, calls);
	assert_int_equal(json_array_size(r), n);
	for (size_t i = 0; i < n; i++)
		assert_error(json_array_get(r, i),
		             i == fit ? LB_RPC_ERR_TOO_LARGE : LB_RPC_ERR_ABORTED,
		             i == fit ? "request too costly: " : "transaction aborted");
	json_decref(r);
	calls[fit] = NULL;
	r = rpc_batch(f, calls);
	assert_int_equal(json_array_size(r), fit);
	for (size_t i = 0; i < fit; i++)
		result_of(json_array_get(r, i));
	json_decref(r);
	fake_free(f);
}

static void
test_rpc_config_get(void **state)
{
	struct fake *f = *state;
	json_t *r, *res, *doc = config_doc(f);
	struct lb_config *back;
	char err[ERR_LEN];

	res = call_ok(f, REQ0("config_get"), &r);
	assert_true(json_equal(res, doc));
	/* The document loads back as a configuration. */
	back = lb_config_from_json(res, err, sizeof(err));
	if (back == NULL)
		fail_msg("config_get result rejected: %s", err);
	lb_config_free(back);
	json_decref(r);
	json_decref(doc);
}

static void
test_rpc_config_save(void **state)
{
	struct fake *f = *state;
	json_t *r, *res;

	f->save_path = "/var/lib/spillway/state.json";
	res = call_ok(f, REQ0("config_save"), &r);
	assert_string_equal(show(res), "{\"path\":\"/var/lib/spillway/state.json\"}");
	json_decref(r);
	assert_int_equal(f->save_calls, 1);

	f->save_rc = -ENOENT;
	r = rpc(f, REQ0("config_save"));
	assert_error(r, LB_RPC_ERR_INTERNAL, "no state file configured (--state)");
	json_decref(r);

	f->save_rc = -EIO;
	r = rpc(f, REQ0("config_save"));
	assert_error(r, LB_RPC_ERR_INTERNAL, "state.json: fsync: ");
	json_decref(r);
	assert_int_equal(f->save_calls, 3);
	assert_int_equal(f->apply_calls, 0);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
	        RPC_TEST(test_rpc_version),
	        RPC_TEST(test_rpc_stats),
	        RPC_TEST(test_rpc_maglev_table),
	        cmocka_unit_test(test_rpc_maglev_table_default_size),
	        RPC_TEST(test_rpc_maglev_table_range),
	        cmocka_unit_test(test_rpc_reply_budget_single),
	        cmocka_unit_test(test_rpc_reply_budget_batch),
	        cmocka_unit_test(test_rpc_scan_budget_batch),
	        cmocka_unit_test(test_rpc_reply_budget_measured),
	        RPC_TEST(test_rpc_config_get),
	        RPC_TEST(test_rpc_config_save),
	};

	return run_rpc_group("rpc_query", err_cases, N_ROWS(err_cases), tests, N_ROWS(tests));
}
