/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the control socket's request dispatch (control/rpc/rpc.c)
 * against the fake daemon of rpc_fixture.c: one row per rejected envelope,
 * ids, notifications, the size and batch limits, a failing apply, and
 * batches as transactions (all applied with one apply, or nothing).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "rpc_fixture.h"

/* ---- Rejections of the envelope: one row each; nothing may change. ---- */

static const struct err_case err_cases[] = {
        /* Envelope. */
        {"envelope not JSON", "hello", LB_RPC_ERR_PARSE, "parse error", "null"},
        {"envelope truncated", "{'jsonrpc': '2.0', 'id': 1", LB_RPC_ERR_PARSE, "parse error",
         "null"},
        {"envelope trailing garbage", REQ0("version") " x", LB_RPC_ERR_PARSE, "parse error",
         "null"},
        {"envelope duplicate member", "{'jsonrpc': '2.0', 'id': 1, 'id': 2, 'method': 'version'}",
         LB_RPC_ERR_PARSE, "parse error", "null"},
        {"envelope empty line", "", LB_RPC_ERR_PARSE, "parse error", "null"},
        {"envelope empty batch", "[]", IR, "invalid request: empty batch", "null"},
        {"envelope number", "5", IR, "invalid request: expected a request object", "null"},
        {"envelope string", "'version'", IR, "invalid request: expected a request object", "null"},
        {"envelope jsonrpc 1.0", "{'jsonrpc': '1.0', 'id': 1, 'method': 'version'}", IR,
         "invalid request: jsonrpc must be \"2.0\"", "1"},
        {"envelope jsonrpc number", "{'jsonrpc': 2.0, 'id': 1, 'method': 'version'}", IR,
         "invalid request: jsonrpc must be", "1"},
        {"envelope jsonrpc missing", "{'id': 1, 'method': 'version'}", IR,
         "invalid request: jsonrpc must be", "1"},
        {"envelope method missing", "{'jsonrpc': '2.0', 'id': 1}", IR,
         "invalid request: method must be a string", "1"},
        {"envelope method number", "{'jsonrpc': '2.0', 'id': 1, 'method': 5}", IR,
         "invalid request: method must be a string", "1"},
        {"envelope params array", "{'jsonrpc': '2.0', 'id': 1, 'method': 'version', 'params': []}",
         IR, "invalid request: params must be an object, got an array", "1"},
        {"envelope params string",
         "{'jsonrpc': '2.0', 'id': 1, 'method': 'version', 'params': 'x'}", IR,
         "invalid request: params must be an object", "1"},
        {"envelope params null", "{'jsonrpc': '2.0', 'id': 1, 'method': 'version', 'params': null}",
         IR, "invalid request: params must be an object", "1"},
        {"envelope id object", "{'jsonrpc': '2.0', 'id': {}, 'method': 'version'}", IR,
         "invalid request: id must be", "null"},
        {"envelope id boolean", "{'jsonrpc': '2.0', 'id': true, 'method': 'version'}", IR,
         "invalid request: id must be", "null"},
        {"envelope unknown member", "{'jsonrpc': '2.0', 'id': 1, 'method': 'version', 'x': 1}", IR,
         "invalid request: unknown member \"x\"", "1"},
        {"envelope invalid without id is answered", "{'jsonrpc': '2.0', 'method': 5}", IR,
         "invalid request", "null"},
        {"envelope method not found", REQ0("vip_frobnicate"), LB_RPC_ERR_METHOD_NOT_FOUND,
         "method not found: vip_frobnicate", "1"},
        {"envelope method name is case-sensitive", REQ0("Version"), LB_RPC_ERR_METHOD_NOT_FOUND,
         "method not found", "1"},

        /* Ids are echoed whatever the error. */
        {"id string echoed on error",
         "{'jsonrpc': '2.0', 'id': 'req-7', 'method': 'vip_get', 'params': {}}", P,
         "address: missing", "\"req-7\""},
        {"id null echoed on error", "{'jsonrpc': '2.0', 'id': null, 'method': 'nope'}",
         LB_RPC_ERR_METHOD_NOT_FOUND, "method not found", "null"},
};

/* A failing apply changes nothing and its message reaches the client. */
static void
test_rpc_apply_fails(void **state)
{
	struct fake *f = *state;
	json_t *before = config_doc(f), *after, *r;

	f->apply_rc = -ENOSPC;
	r = rpc(f, REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.1', 'weight': 5}"));
	assert_error(r, LB_RPC_ERR_INTERNAL, "/var/lib/spillway/state.json: write: ");
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	after = config_doc(f);
	assert_true(json_equal(before, after));
	json_decref(after);
	json_decref(before);
}

static void
test_rpc_limit_batch(void **state)
{
	struct fake *f = *state;
	size_t cap = (LB_RPC_MAX_BATCH + 1) * 64 + 8, len = 0;
	char *line = malloc(cap);
	json_t *r;

	assert_non_null(line);
	line[len++] = '[';
	for (int i = 0; i < LB_RPC_MAX_BATCH; i++)
		len += (size_t)snprintf(line + len, cap - len,
		                        "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"version\"}",
		                        i ? "," : "", i);
	line[len] = ']';
	/* The limit itself is accepted... */
	r = rpc_raw(f, line, len + 1);
	assert_int_equal(json_array_size(r), LB_RPC_MAX_BATCH);
	assert_id(json_array_get(r, LB_RPC_MAX_BATCH - 1), "1023");
	json_decref(r);
	/* ...one more is not. */
	len += (size_t)snprintf(line + len, cap - len,
	                        ",{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"version\"}]");
	r = rpc_raw(f, line, len);
	assert_error(r, IR, "invalid request: batch of 1025 calls (at most 1024)");
	assert_id(r, "null");
	json_decref(r);
	free(line);
}

/* ---- Envelope details ---- */

static void
test_rpc_ids_echoed(void **state)
{
	static const char *const ids[] = {"\"abc\"", "7",    "0",    "-3",
	                                  "1.5",     "null", "\"\"", "\"\\u00e9t\\u00e9\""};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char line[128];
		json_t *r;

		snprintf(line, sizeof(line),
		         "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"version\"}", ids[i]);
		r = rpc_raw(f, line, strlen(line));
		result_of(r);
		assert_id(r, ids[i]);
		json_decref(r);
	}
}

/* The reply text for line, as the daemon sends it (not parsed: ids beyond Jansson's range). */
static char *
reply_text_of(struct fake *f, const char *line)
{
	char *out = lb_rpc_handle(&f->ops, line, strlen(line));

	assert_non_null(out);
	if (strchr(out, '\n') != NULL)
		fail_msg("reply is not one line: %s", out);
	return out;
}

/* The reply, read with integers as doubles (so a big id parses): valid JSON of one object. */
static json_t *
loose_parse(const char *text)
{
	json_error_t je;
	json_t *r = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &je);

	if (r == NULL)
		fail_msg("reply is not JSON (%s): %s", je.text, text);
	return r;
}

/*
 * Ids beyond int64 (and beyond double) are valid JSON numbers and valid
 * JSON-RPC ids: the request is served and the id echoed byte for byte
 * (JSON-RPC 2.0, 4: "the same value as the id member of the Request").
 */
static void
test_rpc_big_ids_echoed(void **state)
{
	static const char *const ids[] = {
	        "18446744073709551616", /* 2^64 */
	        "9223372036854775808",  /* INT64_MAX + 1 */
	        "-9223372036854775809", /* INT64_MIN - 1 */
	        "123456789012345678901234567890123456789",
	        "1e400", /* beyond double */
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char line[256], want[128], *out;
		json_t *r;

		snprintf(line, sizeof(line),
		         "{\"jsonrpc\": \"2.0\", \"id\" : %s , \"method\": \"version\"}", ids[i]);
		out = reply_text_of(f, line);
		snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":", ids[i]);
		if (strncmp(out, want, strlen(want)) != 0)
			fail_msg("id %s: reply %s", ids[i], out);
		if (strcmp(ids[i], "1e400") != 0) {
			r = loose_parse(out);
			assert_true(json_is_object(json_object_get(r, "result")));
			json_decref(r);
		}
		free(out);
	}
}

/*
 * A token that starts like a number too large for Jansson but is not a JSON
 * number (RFC 8259, 6: -? int frac? exp?, no leading zeros, no '+', nothing
 * after it) makes the line invalid JSON: -32700 with id null, never an id
 * echoed (which would make the reply invalid JSON too).
 */
static void
test_rpc_big_id_malformed_numbers(void **state)
{
	static const char *const ids[] = {
	        "111111111111111111111-1111111111111111144",
	        "99999999999999999999e",
	        "99999999999999999999.",
	        "99999999999999999999.e5",
	        "099999999999999999999",
	        "-099999999999999999999",
	        "99999999999999999999-",
	        "--99999999999999999999",
	        "99999999999999999999ee1",
	        "99999999999999999999e+",
	        "1e400.5",
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char line[256];
		json_t *r;

		snprintf(line, sizeof(line),
		         "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"version\"}", ids[i]);
		r = rpc_raw(f, line, strlen(line));
		if (r == NULL)
			fail_msg("id %s: no reply", ids[i]);
		if (json_integer_value(json_object_get(json_object_get(r, "error"), "code")) !=
		    -32700)
			fail_msg("id %s: reply is not -32700", ids[i]);
		assert_error(r, -32700, "parse error");
		assert_id(r, "null");
		json_decref(r);
	}
}

/* In a batch, each call's id comes back with its own reply, in order; calls run as usual. */
static void
test_rpc_big_ids_batch(void **state)
{
	struct fake *f = *state;
	char *out = reply_text_of(
	        f, "[{\"jsonrpc\":\"2.0\",\"id\":18446744073709551617,\"method\":\"version\"},"
	           " {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"version\"},"
	           " {\"jsonrpc\":\"2.0\",\"method\":\"version\"},"
	           " {\"jsonrpc\":\"2.0\",\"id\":-18446744073709551618,\"method\":\"version\"}]");
	const char *a = strstr(out, "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551617,\"result\":");
	const char *b = strstr(out, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":");
	const char *c =
	        strstr(out, "{\"jsonrpc\":\"2.0\",\"id\":-18446744073709551618,\"result\":");
	json_t *r = loose_parse(out);

	if (a == NULL || b == NULL || c == NULL || !(a < b && b < c))
		fail_msg("batch reply: %s", out);
	assert_true(json_is_array(r));
	assert_int_equal(json_array_size(r), 3); /* the notification has none */
	for (size_t i = 0; i < 3; i++)
		assert_true(json_is_object(json_object_get(json_array_get(r, i), "result")));
	json_decref(r);
	free(out);
}

/*
 * A number beyond range elsewhere than the top-level id (here params, and an
 * "id" inside params) is still valid JSON: -32600 (id null), not -32700. A
 * line that is not JSON after such a number stays -32700.
 */
static void
test_rpc_big_numbers_elsewhere(void **state)
{
	static const char *const lines[] = {
	        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"backend_set\",\"params\":"
	        "{\"weight\":99999999999999999999}}",
	        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"version\",\"params\":"
	        "{\"id\":99999999999999999999}}",
	        "{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,\"method\":\"version\","
	        "\"params\":{\"x\":99999999999999999999}}",
	};
	struct fake *f = *state;
	json_t *r;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		r = rpc_raw(f, lines[i], strlen(lines[i]));
		assert_error(r, -32600, "invalid request: number out of range");
		assert_id(r, "null");
		json_decref(r);
	}
	r = rpc_raw(f, "{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,", 34);
	assert_error(r, -32700, "parse error");
	json_decref(r);
	r = rpc_raw(f, "{\"id\":99999999999999999999 x}", 29);
	assert_error(r, -32700, "parse error");
	json_decref(r);
	assert_int_equal(f->apply_calls, 0);
}

static void
test_rpc_notifications(void **state)
{
	struct fake *f = *state;

	assert_null(rpc(f, "{'jsonrpc': '2.0', 'method': 'version'}"));
	/* Errors of notifications are not answered either. */
	assert_null(rpc(f, "{'jsonrpc': '2.0', 'method': 'nope'}"));
	assert_null(rpc(f, "{'jsonrpc': '2.0', 'method': 'vip_get', 'params': {}}"));
	assert_int_equal(f->apply_calls, 0);
	/* But they are executed. */
	assert_null(rpc(f, "{'jsonrpc': '2.0', 'method': 'backend_set', 'params': "
	                   "{'vip': " VREF ", 'address': '10.1.0.1', 'weight': 9}}"));
	assert_int_equal(f->apply_calls, 1);
	assert_int_equal(f->cfg->vips[0].backends[0].weight, 9);
	/* A batch of notifications has no reply at all. */
	assert_null(rpc(f, "[{'jsonrpc': '2.0', 'method': 'version'}, "
	                   "{'jsonrpc': '2.0', 'method': 'vip_remove', 'params': " VREF "}]"));
	assert_int_equal(f->apply_calls, 2);
	assert_int_equal(f->cfg->n_vips, 1);
}

/* A line with a NUL byte in it is not JSON. */
static void
test_rpc_nul_byte(void **state)
{
	static const char line[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"version\"}\0junk";
	struct fake *f = *state;
	json_t *r = rpc_raw(f, line, sizeof(line) - 1);

	assert_error(r, LB_RPC_ERR_PARSE, "parse error");
	json_decref(r);
}

/* A message cut inside a UTF-8 sequence still makes a valid reply. */
static void
test_rpc_long_utf8_message(void **state)
{
	struct fake *f = *state;
	char line[4096];
	size_t n = 0;
	json_t *r;
	const char *msg;

	n += (size_t)snprintf(
	        line, sizeof(line),
	        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"backend_add\",\"params\":"
	        "{\"vip\":{\"address\":\"192.0.2.10\",\"port\":80,\"protocol\":\"tcp\"},"
	        "\"address\":\"10.1.0.9\",\"state\":\"x");
	for (int i = 0; i < 400; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "\xe2\x82\xac"); /* euro sign */
	n += (size_t)snprintf(line + n, sizeof(line) - n, "\"}}");
	r = rpc_raw(f, line, n);
	assert_error(r, P, "state: \"x\xe2\x82\xac");
	msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
	assert_true(strlen(msg) < 512);
	json_decref(r);
}

static void
test_rpc_error_reply(void **state)
{
	char *s = lb_rpc_error_reply(LB_RPC_ERR_INVALID_REQUEST, "request too large");

	(void)state;
	assert_string_equal(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	                       "\"message\":\"request too large\"}}");
	free(s);
	s = lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "bad \xff byte");
	assert_non_null(s);
	free(s);
}

/* ---- Batches are transactions ---- */

static void
test_rpc_batch_applies_once(void **state)
{
	static const char *const calls[] = {
	        REQ("vip_add", ADD_VIP),
	        "{'jsonrpc': '2.0', 'id': 'b', 'method': 'backend_add', "
	        "'params': " NEW_VIP_REF ", 'address': '10.3.0.1'}}",
	        /* A notification in the middle: executed, not answered. */
	        "{'jsonrpc': '2.0', 'method': 'backend_add', "
	        "'params': " NEW_VIP_REF ", 'address': '10.3.0.2'}}",
	        "{'jsonrpc': '2.0', 'id': 3, 'method': 'backend_set', "
	        "'params': " NEW_VIP_REF ", 'address': '10.3.0.1', 'weight': 4}}",
	        "{'jsonrpc': '2.0', 'id': 4, 'method': 'vip_get', 'params': " ADD_VIP "}",
	        "{'jsonrpc': '2.0', 'id': 5, 'method': 'backend_remove', "
	        "'params': {'vip': " VREF ", 'address': '10.1.0.1'}}",
	        "{'jsonrpc': '2.0', 'id': 6, 'method': 'config_get'}",
	        NULL,
	};
	struct fake *f = *state;
	json_t *r = rpc_batch(f, calls), *res;

	/* One reply per call with an id, in order. */
	assert_int_equal(json_array_size(r), 6);
	assert_id(json_array_get(r, 0), "1");
	assert_id(json_array_get(r, 1), "\"b\"");
	assert_id(json_array_get(r, 2), "3");
	assert_id(json_array_get(r, 5), "6");
	for (size_t i = 0; i < 6; i++)
		result_of(json_array_get(r, i));
	/* Reads see the batch's earlier writes. */
	res = json_object_get(result_of(json_array_get(r, 3)), "backends");
	assert_int_equal(json_array_size(res), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 0), "weight")), 4);
	res = result_of(json_array_get(r, 5));
	assert_int_equal(json_array_size(json_object_get(res, "vips")), 3);
	json_decref(r);

	assert_int_equal(f->apply_calls, 1);
	assert_int_equal(f->generation, 2);
	assert_int_equal(f->cfg->n_vips, 3);
	assert_int_equal(f->cfg->vips[2].n_backends, 2);
	assert_int_equal(f->cfg->vips[2].backends[0].weight, 4);
	assert_int_equal(f->cfg->vips[0].n_backends, 1);
}

/* A read-only batch applies nothing. */
static void
test_rpc_batch_read_only(void **state)
{
	static const char *const calls[] = {REQ0("version"), REQ0("vip_list"), REQ0("stats"), NULL};
	struct fake *f = *state;
	json_t *r = rpc_batch(f, calls);

	assert_int_equal(json_array_size(r), 3);
	for (size_t i = 0; i < 3; i++)
		result_of(json_array_get(r, i));
	json_decref(r);
	assert_int_equal(f->apply_calls, 0);
}

/* Reads of the published state (maglev_table, stats) do not see the batch's writes. */
static void
test_rpc_batch_published_reads(void **state)
{
	static const char *const calls[] = {
	        REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'weight': 0}"),
	        REQ("maglev_table", "{'vip': " VREF "}"),
	        NULL,
	};
	struct fake *f = *state;
	json_t *r = rpc_batch(f, calls), *res, *bes;

	res = result_of(json_array_get(r, 1));
	bes = json_object_get(res, "backends");
	assert_true(json_integer_value(json_object_get(json_array_get(bes, 1), "slots")) > 0);
	assert_int_equal(json_integer_value(json_object_get(res, "generation")), 1);
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	r = rpc(f, REQ("maglev_table", "{'vip': " VREF "}"));
	bes = json_object_get(result_of(r), "backends");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(bes, 1), "slots")), 0);
	json_decref(r);
}

struct batch_case {
	const char *name;
	const char *calls[4]; /* up to a NULL */
	size_t n_replies;
	size_t failing; /* index (in replies) of the call with its own error; SIZE_MAX: none */
	int code;       /* its error */
	const char *msg;
};

static const struct batch_case batch_cases[] = {
        {"batch last call bad",
         {REQ("vip_add", ADD_VIP), REQ("backend_add", NEW_VIP_REF ", 'address': '10.3.0.1'}"),
          REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.1', 'weight': 'x'}")},
         3,
         2,
         P,
         "weight: expected an integer, got a string"},
        {"batch first call bad",
         {REQ("vip_remove", "{'address': '192.0.2.99', 'port': 80, 'protocol': 'tcp'}"),
          REQ("vip_add", ADD_VIP)},
         2,
         0,
         NF,
         "VIP 192.0.2.99:80/tcp not found"},
        {"batch conflict with an earlier call",
         {REQ("vip_add", ADD_VIP), REQ("vip_add", ADD_VIP)},
         2,
         1,
         EX,
         "VIP 198.51.100.1:80/tcp already exists"},
        {"batch uses what an earlier call removed",
         {REQ("vip_remove", VREF),
          REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.1', 'weight': 3}")},
         2,
         1,
         NF,
         "VIP 192.0.2.10:80/tcp not found"},
        {"batch invalid element",
         {REQ("vip_add", ADD_VIP), "17", REQ0("version")},
         3,
         1,
         IR,
         "invalid request: expected a request object"},
        {"batch unknown method",
         {REQ("vip_add", ADD_VIP), REQ0("vip_explode")},
         2,
         1,
         LB_RPC_ERR_METHOD_NOT_FOUND,
         "method not found"},
        /* A failing notification aborts the batch without a reply of its own. */
        {"batch failing notification",
         {REQ("vip_add", ADD_VIP), "{'jsonrpc': '2.0', 'method': 'vip_get', 'params': {}}",
          REQ0("version")},
         2,
         SIZE_MAX,
         0,
         NULL},
};

static void
test_rpc_batch_aborts(void **state)
{
	struct row_fixture *rf = *state;
	const struct batch_case *c = rf->row;
	struct fake *f = rf->f;
	json_t *before = config_doc(f), *after, *r;

	r = rpc_batch(f, c->calls);
	assert_true(json_is_array(r));
	assert_int_equal(json_array_size(r), c->n_replies);
	for (size_t i = 0; i < c->n_replies; i++) {
		if (i == c->failing)
			assert_error(json_array_get(r, i), c->code, c->msg);
		else
			assert_error(json_array_get(r, i), LB_RPC_ERR_ABORTED,
			             "transaction aborted");
	}
	json_decref(r);
	assert_int_equal(f->apply_calls, 0);
	after = config_doc(f);
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
}

/* When the one apply fails, every call of the batch reports it. */
static void
test_rpc_batch_apply_fails(void **state)
{
	static const char *const calls[] = {
	        REQ("vip_add", ADD_VIP),
	        REQ0("version"),
	        "{'jsonrpc': '2.0', 'method': 'vip_remove', 'params': " VREF "}",
	        NULL,
	};
	struct fake *f = *state;
	json_t *before = config_doc(f), *after, *r;

	f->apply_rc = -EIO;
	r = rpc_batch(f, calls);
	assert_int_equal(json_array_size(r), 2);
	for (size_t i = 0; i < 2; i++)
		assert_error(json_array_get(r, i), LB_RPC_ERR_INTERNAL,
		             "/var/lib/spillway/state.json: write: ");
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	after = config_doc(f);
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
}

/* ---- The config module pieces the handlers rest on ---- */

static void
test_rpc_config_clone(void **state)
{
	struct fake *f = *state;
	struct lb_config *c = lb_config_clone(f->cfg);
	json_t *a = config_doc(f), *b;

	assert_non_null(c);
	b = lb_config_to_json(c);
	assert_true(json_equal(a, b));
	assert_ptr_not_equal(c->vips, f->cfg->vips);
	assert_ptr_not_equal(c->vips[0].backends, f->cfg->vips[0].backends);
	assert_int_equal(c->vips[0].backends[1].id, f->cfg->vips[0].backends[1].id);
	c->vips[0].backends[0].weight = 99;
	assert_int_equal(f->cfg->vips[0].backends[0].weight, 1);
	json_decref(a);
	json_decref(b);
	lb_config_free(c);
}

int
main(void)
{
	struct CMUnitTest tests[N_ROWS(err_cases) + N_ROWS(batch_cases) + 20];
	size_t n = 0;

	n = ADD_ROWS(tests, n, test_rpc_rejects, row_setup, err_cases);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_apply_fails);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_limit_batch);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_ids_echoed);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_big_ids_echoed);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_big_ids_batch);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_big_id_malformed_numbers);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_big_numbers_elsewhere);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_notifications);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_nul_byte);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_long_utf8_message);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rpc_error_reply);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_batch_applies_once);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_batch_read_only);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_batch_published_reads);
	n = ADD_ROWS(tests, n, test_rpc_batch_aborts, row_setup, batch_cases);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_batch_apply_fails);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_config_clone);
	return _cmocka_run_group_tests("rpc", tests, n, NULL, NULL);
}
