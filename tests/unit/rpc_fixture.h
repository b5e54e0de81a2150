/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the test_rpc*.c programs share: an in-memory daemon (struct
 * lb_rpc_ops over a config, a snapshot built from it, and an apply that can
 * be told to fail), requests written as single-quoted JSON, the checks of a
 * reply, and the table-driven rejection rows (one cmocka test per row).
 */
#ifndef SPW_TEST_RPC_FIXTURE_H
#define SPW_TEST_RPC_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"

#define ERR_LEN 512

/* Hot-key fakes: record each call, answer canned JSON or the rc set. */
struct fake_hot {
	int list_calls, events_calls, set_calls, pin_calls;
	json_t *params;   /* what hot_list reports as "params"; hot_set merges into it */
	json_t *set_seen; /* a copy of the last hot_set params */
	int set_rc;
	const char *set_err; /* written to err when set_rc != 0, if set */
	bool list_fails;     /* hot_list returns NULL */
	uint16_t vip_id;
	struct lb_flow_key key;
	uint16_t r;
	bool pin;
	int pin_rc;
	const char *pin_err;
};

/* ---- The fake daemon ---- */

struct fake {
	struct lb_rpc_ops ops;
	struct lb_config *cfg;
	struct lb_snapshot *snap;
	uint64_t generation;
	int apply_calls;
	int apply_rc; /* non-zero: apply fails with it */
	int save_calls;
	int save_rc;
	const char *save_path; /* written to err on success, if set */
	struct fake_hot hot;
};

#define ENCAP                                                                                      \
	"'encap': {'source_v4': '192.0.2.1', 'source_v6': '2001:db8::1', "                         \
	"'next_hop_mac': '02:00:5e:00:53:01'}, 'maglev': {'table_size': 251}"

/* Two VIPs: 192.0.2.10:80/tcp (backends 10.1.0.1, 10.1.0.2 "web2") and [2001:db8::10]:443/udp. */
extern const char base_config[];

#define VREF "{'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp'}"
#define VREF_FIELDS "'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp'"
#define REQ(method, params)                                                                        \
	"{'jsonrpc': '2.0', 'id': 1, 'method': '" method "', 'params': " params "}"
#define REQ0(method) "{'jsonrpc': '2.0', 'id': 1, 'method': '" method "'}"

#define ADD_VIP "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp'}"
#define NEW_VIP_REF "{'vip': " ADD_VIP

/* ---- Rejections: one row each; nothing may change. ---- */

struct err_case {
	const char *name;
	const char *line;
	int code;
	const char *msg; /* the message starts with this */
	const char *id;  /* the reply's id, as JSON */
};

#define P LB_RPC_ERR_INVALID_PARAMS
#define NF LB_RPC_ERR_NOT_FOUND
#define EX LB_RPC_ERR_EXISTS
#define IR LB_RPC_ERR_INVALID_REQUEST

struct row_fixture {
	struct fake *f;
	const void *row;
};

/* JSON written with single quotes so the tables stay readable; the copy uses double quotes. */
char *dq(const char *sq);
/* A single-quoted JSON text parsed (fails the test when it does not parse). */
json_t *parse_sq(const char *sq);

/* A fake daemon running cfg (taken); apply_calls starts at 0. */
struct fake *fake_new_cfg(struct lb_config *cfg);
/* A fake daemon running the single-quoted configuration sq_config. */
struct fake *fake_new(const char *sq_config);
/* A running config with n_vips VIPs of per_vip backends each (weight 0: cheap tables). */
struct fake *fake_big(uint32_t n_vips, uint32_t per_vip);
void fake_free(struct fake *f);
/* cmocka fixtures: *state is a fake_new(base_config). */
int setup(void **state);
int teardown(void **state);

/* Send a line as it is; the reply parsed, or NULL when there is none. */
json_t *rpc_raw(struct fake *f, const char *line, size_t len);
/* Send a single-quoted line. */
json_t *rpc(struct fake *f, const char *sq_line);
/* Send the calls (single-quoted JSON, up to a NULL) as one batch line. */
json_t *rpc_batch(struct fake *f, const char *const *calls);
/* v as compact JSON, in one of 8 static buffers used in turn. */
char *show(const json_t *v);
void assert_id(const json_t *reply, const char *sq_id);
/* The result of a successful reply (borrowed from reply). */
json_t *result_of(const json_t *reply);
/* An error reply with code and a message starting with msg_prefix (NULL: any). */
void assert_error(const json_t *reply, int code, const char *msg_prefix);
/* The result of a call expected to succeed (caller decrefs the reply). */
json_t *call_ok(struct fake *f, const char *sq_line, json_t **reply);
/* The running configuration as its JSON document (caller decrefs). */
json_t *config_doc(const struct fake *f);

/* A row test's fixtures: *state holds the row (prestate), then a struct row_fixture. */
int row_setup_with(void **state, struct fake *f);
/* row_setup_with a fake_new(base_config). */
int row_setup(void **state);
int row_teardown(void **state);
/* The row test of an err_case: its error and id, and nothing applied or changed. */
void test_rpc_rejects(void **state);

/*
 * Append to tests one test of fn per row (n_rows rows of size bytes, each a
 * struct whose first member is its name, the test's name), set up by
 * setup_fn and torn down by row_teardown. @return the new number of tests.
 */
size_t add_row_tests(struct CMUnitTest *tests, size_t n, CMUnitTestFunction fn,
                     CMFixtureFunction setup_fn, const void *rows, size_t size, size_t n_rows);
#define ADD_ROWS(tests, n, fn, setup_fn, rows)                                                     \
	add_row_tests(tests, n, fn, setup_fn, rows, sizeof(rows[0]), sizeof(rows) / sizeof(rows[0]))
#define N_ROWS(rows) (sizeof(rows) / sizeof(rows[0]))

/* A test of fn on a fresh fake_new(base_config) (setup, teardown). */
#define RPC_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/*
 * Run the cmocka group: one test_rpc_rejects per row of rows (n_rows, may be
 * 0), then tests (n_tests). @return cmocka's result (failed tests), or 1
 * when out of memory.
 */
int run_rpc_group(const char *group, const struct err_case *rows, size_t n_rows,
                  const struct CMUnitTest *tests, size_t n_tests);

#endif /* SPW_TEST_RPC_FIXTURE_H */
