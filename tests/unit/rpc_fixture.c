/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fixture of the test_rpc*.c programs (rpc_fixture.h): the fake daemon
 * behind struct lb_rpc_ops, sending request lines and checking replies, and
 * the runner of the table-driven rejection rows.
 */
#include <errno.h>
#include <netinet/in.h>
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
#include "control/build/snapshot_build.h"
#include "rpc_fixture.h"

/* ---- The fake daemon ---- */

static const struct lb_config *
fake_config(void *arg)
{
	return ((struct fake *)arg)->cfg;
}

/*
 * What lb_control_apply does, minus publication: snapshot, adopt. It keeps the
 * handlers' ids, which must already make a runnable configuration.
 */
static int
fake_apply(void *arg, struct lb_config *next, char *err, size_t errlen)
{
	static bool vip_seen[LB_MAX_VIPS], be_seen[LB_MAX_BACKENDS];
	struct fake *f = arg;
	struct lb_snapshot *s;

	f->apply_calls++;
	assert_non_null(next);
	assert_ptr_not_equal(next, f->cfg);
	memset(vip_seen, 0, sizeof(vip_seen));
	memset(be_seen, 0, sizeof(be_seen));
	for (uint32_t i = 0; i < next->n_vips; i++) {
		const struct lb_cfg_vip *v = &next->vips[i];

		if (v->id >= LB_MAX_VIPS || vip_seen[v->id])
			fail_msg("vips[%u]: id %u reused or too big", i, v->id);
		vip_seen[v->id] = true;
		for (uint32_t j = 0; j < v->n_backends; j++) {
			const struct lb_cfg_backend *b = &v->backends[j];

			if (b->id >= LB_MAX_BACKENDS || be_seen[b->id] || b->gen == 0)
				fail_msg("vips[%u].backends[%u]: id %u gen %u", i, j, b->id,
				         b->gen);
			be_seen[b->id] = true;
		}
	}
	if (f->apply_rc != 0) {
		snprintf(err, errlen, "/var/lib/spillway/state.json: write: %s",
		         strerror(-f->apply_rc));
		lb_config_free(next);
		return f->apply_rc;
	}
	s = lb_snapshot_build(next, f->generation + 1, err, errlen);
	if (s == NULL) {
		lb_config_free(next);
		return -ENOMEM;
	}
	lb_snapshot_free(f->snap);
	lb_config_free(f->cfg);
	f->snap = s;
	f->cfg = next;
	f->generation++;
	return 0;
}

static json_t *
fake_stats(void *arg)
{
	(void)arg;
	return json_pack("{s:{s:i, s:i}}", "totals", "rx_packets", (json_int_t)42, "tx_packets",
	                 (json_int_t)41);
}

static const struct lb_snapshot *
fake_snapshot(void *arg)
{
	return ((struct fake *)arg)->snap;
}

static int
fake_save(void *arg, char *err, size_t errlen)
{
	struct fake *f = arg;

	f->save_calls++;
	if (f->save_rc != 0) {
		if (f->save_rc != -ENOENT)
			snprintf(err, errlen, "state.json: fsync: %s", strerror(-f->save_rc));
		return f->save_rc;
	}
	if (f->save_path != NULL)
		snprintf(err, errlen, "%s", f->save_path);
	return 0;
}

/* JSON written with single quotes so the tables stay readable; swapped here. */
char *
dq(const char *sq)
{
	char *s = strdup(sq);

	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}

json_t *
parse_sq(const char *sq)
{
	char *s = dq(sq);
	json_error_t je;
	json_t *root = json_loads(s, JSON_REJECT_DUPLICATES, &je);

	if (root == NULL)
		fail_msg("test JSON does not parse: %s\n%s", je.text, s);
	free(s);
	return root;
}

const char base_config[] =
        "{" ENCAP ", 'vips': ["
        " {'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp', 'backends': ["
        "   {'address': '10.1.0.1'}, {'address': '10.1.0.2', 'weight': 2, 'name': 'web2'}]},"
        " {'address': '2001:db8::10', 'port': 443, 'protocol': 'udp', 'key': 'src_ip',"
        "  'encap': 'gue'}]}";

/* A fake daemon running cfg (taken); apply_calls starts at 0. */
struct fake *
fake_new_cfg(struct lb_config *cfg)
{
	struct fake *f = calloc(1, sizeof(*f));
	char err[ERR_LEN];

	assert_non_null(f);
	f->ops = (struct lb_rpc_ops){.arg = f,
	                             .config = fake_config,
	                             .apply = fake_apply,
	                             .stats = fake_stats,
	                             .snapshot = fake_snapshot,
	                             .save = fake_save};
	if (fake_apply(f, cfg, err, sizeof(err)) != 0)
		fail_msg("initial apply: %s", err);
	f->apply_calls = 0;
	return f;
}

struct fake *
fake_new(const char *sq_config)
{
	json_t *root = parse_sq(sq_config);
	char err[ERR_LEN];
	struct lb_config *cfg = lb_config_from_json(root, err, sizeof(err));

	json_decref(root);
	if (cfg == NULL)
		fail_msg("test config rejected: %s", err);
	return fake_new_cfg(cfg);
}

/* A running config with n_vips VIPs of per_vip backends each (weight 0: cheap tables). */
struct fake *
fake_big(uint32_t n_vips, uint32_t per_vip)
{
	json_t *root = parse_sq("{" ENCAP "}");
	char err[ERR_LEN];
	struct lb_config *cfg = lb_config_from_json(root, err, sizeof(err));

	json_decref(root);
	assert_non_null(cfg);
	cfg->vips = calloc(n_vips, sizeof(*cfg->vips));
	assert_non_null(cfg->vips);
	for (uint32_t i = 0; i < n_vips; i++) {
		struct lb_cfg_vip *v = &cfg->vips[i];

		v->id = (uint16_t)i;

		assert_int_equal(lb_ip_from_str("203.0.113.1", &v->af, &v->addr), 0);
		v->port = (uint16_t)(i + 1);
		v->proto = IPPROTO_TCP;
		cfg->n_vips++;
		v->backends = calloc(per_vip ? per_vip : 1, sizeof(*v->backends));
		assert_non_null(v->backends);
		for (uint32_t j = 0; j < per_vip; j++) {
			struct lb_cfg_backend *b = &v->backends[j];
			char a[32];

			snprintf(a, sizeof(a), "10.%u.%u.%u", j >> 16, (j >> 8) & 255, j & 255);
			assert_int_equal(lb_ip_from_str(a, &b->af, &b->addr), 0);
			b->id = (uint16_t)(i * per_vip + j);
			b->gen = 1;
			v->n_backends++;
		}
	}
	return fake_new_cfg(cfg);
}

void
fake_free(struct fake *f)
{
	lb_snapshot_free(f->snap);
	lb_config_free(f->cfg);
	json_decref(f->hot.params);
	json_decref(f->hot.set_seen);
	free(f);
}

int
setup(void **state)
{
	*state = fake_new(base_config);
	return 0;
}

int
teardown(void **state)
{
	fake_free(*state);
	return 0;
}

/* ---- Calling ---- */

/* Send a line as it is; the reply parsed, or NULL when there is none. */
json_t *
rpc_raw(struct fake *f, const char *line, size_t len)
{
	char *out = lb_rpc_handle(&f->ops, line, len);
	json_error_t je;
	json_t *r;

	if (out == NULL)
		return NULL;
	if (strchr(out, '\n') != NULL)
		fail_msg("reply is not one line: %s", out);
	r = json_loads(out, JSON_REJECT_DUPLICATES, &je);
	if (r == NULL)
		fail_msg("reply is not JSON (%s): %s", je.text, out);
	free(out);
	return r;
}

json_t *
rpc(struct fake *f, const char *sq_line)
{
	char *line = dq(sq_line);
	json_t *r = rpc_raw(f, line, strlen(line));

	free(line);
	return r;
}

/* Send the calls (single-quoted JSON, up to a NULL) as one batch line. */
json_t *
rpc_batch(struct fake *f, const char *const *calls)
{
	size_t len = 2;
	char *line;
	json_t *r;

	for (size_t i = 0; calls[i] != NULL; i++)
		len += strlen(calls[i]) + 1;
	line = malloc(len);
	assert_non_null(line);
	strcpy(line, "[");
	for (size_t i = 0; calls[i] != NULL; i++) {
		if (i > 0)
			strcat(line, ",");
		strcat(line, calls[i]);
	}
	strcat(line, "]");
	r = rpc(f, line);
	free(line);
	return r;
}

char *
show(const json_t *v)
{
	static char buf[8][4096];
	static int next;
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	char *b = buf[next++ % 8];

	snprintf(b, sizeof(buf[0]), "%s", s != NULL ? s : "(null)");
	free(s);
	return b;
}

void
assert_id(const json_t *reply, const char *sq_id)
{
	json_t *want = json_loads(sq_id, JSON_DECODE_ANY, NULL);

	assert_non_null(want);
	if (!json_equal(json_object_get(reply, "id"), want))
		fail_msg("reply id %s, want %s: %s", show(json_object_get(reply, "id")), sq_id,
		         show(reply));
	json_decref(want);
}

/* The result of a successful reply (borrowed from reply). */
json_t *
result_of(const json_t *reply)
{
	json_t *res;

	if (reply == NULL)
		fail_msg("no reply");
	if (!json_is_string(json_object_get(reply, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(reply, "jsonrpc")), "2.0") != 0)
		fail_msg("reply without jsonrpc 2.0: %s", show(reply));
	res = json_object_get(reply, "result");
	if (res == NULL || json_object_get(reply, "error") != NULL)
		fail_msg("want a result, got %s", show(reply));
	return res;
}

void
assert_error(const json_t *reply, int code, const char *msg_prefix)
{
	const json_t *e;
	const char *msg;

	if (reply == NULL)
		fail_msg("no reply; want error %d", code);
	e = json_object_get(reply, "error");
	if (e == NULL || json_object_get(reply, "result") != NULL)
		fail_msg("want error %d, got %s", code, show(reply));
	if (json_integer_value(json_object_get(e, "code")) != code)
		fail_msg("want error %d, got %s", code, show(reply));
	msg = json_string_value(json_object_get(e, "message"));
	assert_non_null(msg);
	if (msg_prefix != NULL && strncmp(msg, msg_prefix, strlen(msg_prefix)) != 0)
		fail_msg("message \"%s\" does not start with \"%s\"", msg, msg_prefix);
}

/* The result of a call expected to succeed (caller decrefs the reply). */
json_t *
call_ok(struct fake *f, const char *sq_line, json_t **reply)
{
	*reply = rpc(f, sq_line);
	return result_of(*reply);
}

json_t *
config_doc(const struct fake *f)
{
	return lb_config_to_json(f->cfg);
}

/* ---- Rows ---- */

int
row_setup_with(void **state, struct fake *f)
{
	struct row_fixture *rf = calloc(1, sizeof(*rf));

	if (rf == NULL) {
		fake_free(f);
		return -1;
	}
	rf->row = *state;
	rf->f = f;
	*state = rf;
	return 0;
}

int
row_setup(void **state)
{
	return row_setup_with(state, fake_new(base_config));
}

int
row_teardown(void **state)
{
	struct row_fixture *rf = *state;

	fake_free(rf->f);
	free(rf);
	return 0;
}

void
test_rpc_rejects(void **state)
{
	struct row_fixture *rf = *state;
	const struct err_case *c = rf->row;
	struct fake *f = rf->f;
	json_t *before = config_doc(f), *after, *r;
	uint64_t gen = f->generation;

	r = rpc(f, c->line);
	assert_error(r, c->code, c->msg);
	assert_id(r, c->id);
	/* -32602 carries the field (the message's path) and the method's usage as data. */
	if (c->code == P) {
		json_t *data = json_object_get(json_object_get(r, "error"), "data");
		const char *field = json_string_value(json_object_get(data, "field"));

		assert_true(json_is_string(json_object_get(data, "usage")));
		assert_non_null(field);
		assert_int_equal(strncmp(c->msg, field, strlen(field)), 0);
		assert_int_equal(strncmp(c->msg + strlen(field), ": ", 2), 0);
	}
	assert_int_equal(f->apply_calls, 0);
	assert_int_equal(f->generation, gen);
	after = config_doc(f);
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
	json_decref(r);
}

size_t
add_row_tests(struct CMUnitTest *tests, size_t n, CMUnitTestFunction fn, CMFixtureFunction setup_fn,
              const void *rows, size_t size, size_t n_rows)
{
	for (size_t i = 0; i < n_rows; i++) {
		const void *row = (const char *)rows + i * size;

		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
		        fn, setup_fn, row_teardown, (void *)row);
		tests[n++].name = *(const char *const *)row;
	}
	return n;
}

int
run_rpc_group(const char *group, const struct err_case *rows, size_t n_rows,
              const struct CMUnitTest *tests, size_t n_tests)
{
	struct CMUnitTest *all = calloc(n_rows + n_tests, sizeof(*all));
	size_t n;
	int rc;

	if (all == NULL)
		return 1;
	n = add_row_tests(all, 0, test_rpc_rejects, row_setup, rows, sizeof(*rows), n_rows);
	for (size_t i = 0; i < n_tests; i++)
		all[n++] = tests[i];
	rc = _cmocka_run_group_tests(group, all, n, NULL, NULL);
	free(all);
	return rc;
}
