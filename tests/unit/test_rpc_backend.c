/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the backend_* methods of the control socket
 * (control/rpc/rpc_backend.c) against the fake daemon of rpc_fixture.c: one row
 * per rejected call, the results of backend_add, backend_remove and
 * backend_set, and the limits on backends.
 */
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

/* 63 bytes, every byte a backend name may hold; and 64, one more than allowed. */
#define NAME63 "_:-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
#define NAME64 NAME63 "X"

/* ---- Rejections: one row each; nothing may change. ---- */

static const struct err_case err_cases[] = {
        /* Backend calls. */
        {"backend_add missing vip", REQ("backend_add", "{'address': '10.1.0.9'}"), P,
         "vip: missing (required)", "1"},
        {"backend_add vip not an object",
         REQ("backend_add", "{'vip': '192.0.2.10', 'address': '10.1.0.9'}"), P,
         "vip: expected an object, got a string", "1"},
        {"backend_add vip unknown field",
         REQ("backend_add", "{'vip': {" VREF_FIELDS ", 'key': 'src_ip'}, 'address': '10.1.0.9'}"),
         P, "vip.key: unknown field", "1"},
        {"backend_add vip port wrong type",
         REQ("backend_add", "{'vip': {'address': '192.0.2.10', 'port': true, 'protocol': 'tcp'}, "
                            "'address': '10.1.0.9'}"),
         P, "vip.port: expected an integer, got a boolean", "1"},
        {"backend_add vip bad address",
         REQ("backend_add", "{'vip': {'address': 'example.com', 'port': 80, 'protocol': 'tcp'}, "
                            "'address': '10.1.0.9'}"),
         P, "vip.address: not an IPv4 or IPv6 address", "1"},
        {"backend_add missing address", REQ("backend_add", "{'vip': " VREF "}"), P,
         "address: missing (required)", "1"},
        {"backend_add bad address", REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0'}"), P,
         "address: not an IPv4 or IPv6 address: \"10.1.0\"", "1"},
        {"backend_add weight negative",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'weight': -1}"), P,
         "weight: -1 out of range [0, 65535]", "1"},
        {"backend_add weight too big",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'weight': 65536}"), P,
         "weight: 65536 out of range", "1"},
        {"backend_add weight real",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'weight': 1.5}"), P,
         "weight: expected an integer, got a number", "1"},
        {"backend_add bad state",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'state': 'up'}"), P,
         "state: \"up\" is not one of: active, draining, down", "1"},
        {"backend_add empty name",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'name': ''}"), P,
         "name: must be 1 to 63 bytes (got 0)", "1"},
        /* Names: 1 to 63 bytes of A-Z a-z 0-9 . _ : -, judged as in the file. */
        {"backend_add name 64 bytes",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'name': '" NAME64 "'}"), P,
         "name: must be 1 to 63 bytes (got 64)", "1"},
        {"backend_add name with tabs",
         REQ("backend_add",
             "{'vip': " VREF ", 'address': '10.1.0.9', 'name': 'x\\tweight\\t999\\tdown'}"),
         P, "name: byte 2 (0x09) is not allowed", "1"},
        {"backend_add name with ESC",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'name': 'a\\u001b[31m'}"), P,
         "name: byte 2 (0x1b) is not allowed", "1"},
        {"backend_add name with space",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'name': 'a b'}"), P,
         "name: byte 2 (0x20) is not allowed", "1"},
        {"backend_add name with slash",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'name': '/'}"), P,
         "name: byte 1 (0x2f) is not allowed", "1"},
        {"backend_add name non-ASCII",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'name': '\\u00e9'}"), P,
         "name: byte 1 (0xc3) is not allowed", "1"},
        {"backend_add unknown field",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.9', 'port': 8080}"), P,
         "port: unknown field", "1"},
        {"backend_remove unknown field",
         REQ("backend_remove", "{'vip': " VREF ", 'address': '10.1.0.1', 'weight': 1}"), P,
         "weight: unknown field", "1"},
        {"backend_remove missing address", REQ("backend_remove", "{'vip': " VREF "}"), P,
         "address: missing (required)", "1"},
        {"backend_set nothing to set",
         REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.1'}"), P,
         "weight, state, health: missing", "1"},
        {"backend_set weight string",
         REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'weight': 'x'}"), P,
         "weight: expected an integer, got a string", "1"},
        {"backend_set bad state",
         REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'state': 'drain'}"), P,
         "state: \"drain\" is not one of", "1"},
        {"backend_set name is not settable",
         REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'name': 'x'}"), P,
         "name: unknown field", "1"},

        /* Not found. */
        {"backend_add VIP not found",
         REQ("backend_add", "{'vip': {'address': '192.0.2.11', 'port': 80, 'protocol': 'tcp'}, "
                            "'address': '10.1.0.9'}"),
         NF, "VIP 192.0.2.11:80/tcp not found", "1"},
        {"backend_remove VIP not found",
         REQ("backend_remove",
             "{'vip': {'address': '192.0.2.10', 'port': 8080, 'protocol': 'tcp'}, "
             "'address': '10.1.0.1'}"),
         NF, "VIP 192.0.2.10:8080/tcp not found", "1"},
        {"backend_remove not found",
         REQ("backend_remove", "{'vip': " VREF ", 'address': '10.1.0.9'}"), NF,
         "backend 10.1.0.9 not found in VIP 192.0.2.10:80/tcp", "1"},
        {"backend_set not found",
         REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.9', 'weight': 0}"), NF,
         "backend 10.1.0.9 not found", "1"},

        /* Already exists. */
        {"backend_add exists", REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.1'}"), EX,
         "backend 10.1.0.1 already in VIP 192.0.2.10:80/tcp", "1"},
        {"backend_add name taken",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.3', 'name': 'web2'}"), EX,
         "a backend with identity \"web2\" is already in VIP", "1"},
        {"backend_add name equal to another's address",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.3', 'name': '10.1.0.1'}"), EX,
         "a backend with identity \"10.1.0.1\"", "1"},
};

/* ---- Methods ---- */

static void
test_rpc_backend_add(void **state)
{
	struct fake *f = *state;
	json_t *r, *res;

	res = call_ok(f, REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.3'}"), &r);
	assert_string_equal(show(res),
	                    "{\"address\":\"10.1.0.3\",\"weight\":1,\"state\":\"active\"}");
	json_decref(r);
	res = call_ok(f,
	              REQ("backend_add",
	                  "{'vip': " VREF ", 'address': '2001:db8:1::4', 'weight': 7, "
	                  "'name': 'v6', 'state': 'down'}"),
	              &r);
	assert_string_equal(show(res), "{\"address\":\"2001:db8:1::4\",\"weight\":7,"
	                               "\"state\":\"down\",\"name\":\"v6\"}");
	json_decref(r);
	/* The same address in another VIP is another membership. */
	call_ok(f,
	        REQ("backend_add", "{'vip': {'address': '2001:db8::10', 'port': 443, "
	                           "'protocol': 'udp'}, 'address': '10.1.0.1'}"),
	        &r);
	json_decref(r);
	assert_int_equal(f->apply_calls, 3);
	assert_int_equal(f->cfg->vips[0].n_backends, 4);
	assert_int_equal(f->cfg->vips[0].backends[3].weight, 7);
	assert_string_equal(f->cfg->vips[0].backends[3].name, "v6");
	assert_int_equal(f->cfg->vips[1].n_backends, 1);
}

/* Every byte of the name set, 63 of them (the limit), is accepted and kept. */
static void
test_rpc_backend_name_set(void **state)
{
	struct fake *f = *state;
	json_t *r, *res;

	res = call_ok(f,
	              REQ("backend_add",
	                  "{'vip': " VREF ", 'address': '10.1.0.3', 'name': '" NAME63 "'}"),
	              &r);
	assert_string_equal(json_string_value(json_object_get(res, "name")), NAME63);
	json_decref(r);
	assert_int_equal(strlen(f->cfg->vips[0].backends[2].name), 63);
	assert_string_equal(f->cfg->vips[0].backends[2].name, NAME63);
}

static void
test_rpc_backend_remove(void **state)
{
	struct fake *f = *state;
	json_t *r, *res;

	res = call_ok(f, REQ("backend_remove", "{'vip': " VREF ", 'address': '10.1.0.1'}"), &r);
	assert_string_equal(show(res), "{}");
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	assert_int_equal(f->cfg->vips[0].n_backends, 1);
	assert_string_equal(f->cfg->vips[0].backends[0].name, "web2");
	assert_int_equal(f->cfg->vips[0].backends[0].weight, 2);
}

static void
test_rpc_backend_set(void **state)
{
	struct fake *f = *state;
	json_t *r, *res;

	/* The protocol document's example. */
	r = rpc(f, "{'jsonrpc':'2.0','id':1,'method':'backend_set','params':{'vip':{'address':"
	           "'192.0.2.10','port':80,'protocol':'tcp'},'address':'10.1.0.1','state':"
	           "'draining'}}");
	assert_string_equal(show(r), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"address\":"
	                             "\"10.1.0.1\",\"weight\":1,\"state\":\"draining\"}}");
	json_decref(r);
	assert_int_equal(f->cfg->vips[0].backends[0].state, LB_BACKEND_DRAINING);
	assert_int_equal(f->cfg->vips[0].backends[0].weight, 1);

	/* Only what is given changes. */
	res = call_ok(
	        f, REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'weight': 0}"), &r);
	assert_string_equal(show(res),
	                    "{\"address\":\"10.1.0.2\",\"weight\":0,\"state\":\"active\","
	                    "\"name\":\"web2\"}");
	json_decref(r);
	res = call_ok(f,
	              REQ("backend_set",
	                  "{'vip': " VREF ", 'address': '10.1.0.2', 'weight': 65535, "
	                  "'state': 'down'}"),
	              &r);
	assert_int_equal(json_integer_value(json_object_get(res, "weight")), 65535);
	json_decref(r);
	assert_int_equal(f->cfg->vips[0].backends[1].weight, 65535);
	assert_int_equal(f->cfg->vips[0].backends[1].state, LB_BACKEND_DOWN);
	assert_string_equal(f->cfg->vips[0].backends[1].name, "web2");
	assert_int_equal(f->apply_calls, 3);
}

/* An address family without an outer source address is named as the address's fault. */
static void
test_rpc_backend_family_needs_source(void **state)
{
	struct fake *f;
	json_t *r;

	(void)state;
	f = fake_new("{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'}, "
	             "'maglev': {'table_size': 251}, 'vips': [{" VREF_FIELDS "}]}");
	r = rpc(f, REQ("backend_add", "{'vip': " VREF ", 'address': '2001:db8::5'}"));
	assert_error(r, P, "address: IPv6 backend needs encap.source_v6");
	json_decref(r);
	r = rpc(f, REQ("vip_add", "{'address': '192.0.2.20', 'port': 80, 'protocol': 'tcp', "
	                          "'backends': [{'address': '2001:db8::5'}]}"));
	assert_error(r, P, "backends[0]: IPv6 backend needs encap.source_v6");
	json_decref(r);
	assert_int_equal(f->apply_calls, 0);
	fake_free(f);
}

/* ---- Limits ---- */

static void
test_rpc_limit_backends(void **state)
{
	struct fake *f = fake_big(LB_MAX_BACKENDS / 1024, 1024);
	json_t *r, *params;
	char *line;

	(void)state;
	r = rpc(f, REQ("backend_add", "{'vip': {'address': '203.0.113.1', 'port': 1, "
	                              "'protocol': 'tcp'}, 'address': '10.9.9.9'}"));
	assert_error(r, LB_RPC_ERR_LIMIT, "too many backends in all (at most 16384)");
	json_decref(r);
	r = rpc(f, REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp', "
	                          "'backends': [{'address': '10.9.9.9'}]}"));
	assert_error(r, LB_RPC_ERR_LIMIT, "backends: too many backends in all");
	json_decref(r);
	/* A VIP without backends still fits. */
	r = rpc(f, REQ("vip_add", "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp'}"));
	result_of(r);
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);

	/* More than all VIPs together may hold: rejected before anything is parsed. */
	params = json_pack("{s:s, s:i, s:s, s:[]}", "address", "198.51.100.2", "port",
	                   (json_int_t)80, "protocol", "tcp", "backends");
	assert_non_null(params);
	for (uint32_t i = 0; i < LB_MAX_BACKENDS + 1; i++)
		json_array_append_new(json_object_get(params, "backends"), json_object());
	r = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)1, "method",
	              "vip_add", "params", params);
	line = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	r = rpc_raw(f, line, strlen(line));
	free(line);
	assert_error(r, LB_RPC_ERR_LIMIT, "backends: too many backends in all (at most 16384)");
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	fake_free(f);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
	        RPC_TEST(test_rpc_backend_add),
	        RPC_TEST(test_rpc_backend_remove),
	        RPC_TEST(test_rpc_backend_set),
	        RPC_TEST(test_rpc_backend_name_set),
	        cmocka_unit_test(test_rpc_backend_family_needs_source),
	        cmocka_unit_test(test_rpc_limit_backends),
	};

	return run_rpc_group("rpc_backend", err_cases, N_ROWS(err_cases), tests, N_ROWS(tests));
}
