/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for drain and undrain (control/rpc/rpc_drain.c) against the fake
 * daemon of rpc_fixture.c: without an announcer -32603; with one, the op's
 * document; never in a batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "rpc_fixture.h"

static int drain_calls;
static bool drain_last;

static json_t *
fake_drain(void *arg, bool on)
{
	(void)arg;
	drain_calls++;
	drain_last = on;
	return json_pack("{s:b}", "drained", on);
}

static void
test_rpc_drain(void **state)
{
	struct fake *f = *state;
	json_t *r;

	drain_calls = 0;
	r = rpc(f, REQ0("drain"));
	assert_error(r, LB_RPC_ERR_INTERNAL, "no route announcer configured");
	json_decref(r);
	f->ops.drain = fake_drain;
	r = rpc(f, REQ0("drain"));
	assert_true(json_is_true(json_object_get(result_of(r), "drained")));
	json_decref(r);
	assert_true(drain_last);
	r = rpc(f, REQ0("undrain"));
	assert_true(json_is_false(json_object_get(result_of(r), "drained")));
	json_decref(r);
	assert_false(drain_last);
	r = rpc(f, REQ("drain", "{'now': true}"));
	assert_error(r, LB_RPC_ERR_INVALID_PARAMS, "now: unknown field");
	json_decref(r);
	r = rpc(f, "[" REQ0("drain") "]");
	assert_error(json_array_get(r, 0), LB_RPC_ERR_INVALID_REQUEST,
	             "invalid request: drain cannot be part of a batch");
	json_decref(r);
	assert_int_equal(drain_calls, 2);
	assert_int_equal(f->apply_calls, 0);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
	        RPC_TEST(test_rpc_drain),
	};

	return run_rpc_group("rpc_drain", NULL, 0, tests, N_ROWS(tests));
}
