/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the control socket's request handling, against an in-memory
 * daemon (struct lb_rpc_ops over a config, a snapshot built from it, and an
 * apply that can be told to fail): every method's result, one row per
 * rejection (code and the message naming the field), the JSON-RPC envelope,
 * notifications, and batches as transactions (all applied with one apply, or
 * nothing).
 */
#include <arpa/inet.h>
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

#include "../../control/config.h"
#include "../../control/rpc.h"
#include "../../control/snapshot_build.h"

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

static json_t *
fake_hot_list(void *arg)
{
	struct fake *f = arg;

	f->hot.list_calls++;
	if (f->hot.list_fails)
		return NULL;
	return json_pack("{s:O, s:i, s:{s:i, s:i, s:i, s:i, s:i}, s:[{s:{s:s, s:i, s:s}, "
	                 "s:{s:s}, s:s, s:f, s:[s, s], s:i, s:b}]}",
	                 "params", f->hot.params, "window", (json_int_t)1234, "counters",
	                 "promotions", 3, "demotions", 1, "replans", 2, "active", 1, "pinned", 0,
	                 "overrides", "vip", "address", "2001:db8::10", "port", 443, "protocol",
	                 "udp", "key", "src", "2001:db8:5::7", "key_hash", "0x1234abcd", "share",
	                 0.08, "replicas", "10.1.0.1", "10.1.0.2", "since_window", (json_int_t)1200,
	                 "pinned", 0);
}

static json_t *
fake_hot_events(void *arg)
{
	struct fake *f = arg;

	f->hot.events_calls++;
	return json_pack("[{s:i, s:s, s:{s:s, s:i, s:s}, s:{s:s}, s:f, s:i}]", "window",
	                 (json_int_t)1200, "event", "promote", "vip", "address", "2001:db8::10",
	                 "port", 443, "protocol", "udp", "key", "src", "2001:db8:5::7", "share",
	                 0.08, "replicas", 2);
}

static int
fake_hot_set(void *arg, const json_t *params, char *err, size_t errlen)
{
	struct fake *f = arg;

	f->hot.set_calls++;
	json_decref(f->hot.set_seen);
	f->hot.set_seen = json_deep_copy(params);
	if (f->hot.set_rc != 0) {
		if (f->hot.set_err != NULL)
			snprintf(err, errlen, "%s", f->hot.set_err);
		return f->hot.set_rc;
	}
	json_object_update(f->hot.params, (json_t *)params);
	return 0;
}

static int
fake_hot_pin(void *arg, uint16_t vip_id, const struct lb_flow_key *key, uint16_t r, bool pin,
             char *err, size_t errlen)
{
	struct fake *f = arg;

	f->hot.pin_calls++;
	f->hot.vip_id = vip_id;
	f->hot.key = *key;
	f->hot.r = r;
	f->hot.pin = pin;
	if (f->hot.pin_rc != 0 && f->hot.pin_err != NULL)
		snprintf(err, errlen, "%s", f->hot.pin_err);
	return f->hot.pin_rc;
}

/* JSON written with single quotes so the tables stay readable; swapped here. */
static char *
dq(const char *sq)
{
	char *s = strdup(sq);

	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}

static json_t *
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

#define ENCAP                                                                                      \
	"'encap': {'source_v4': '192.0.2.1', 'source_v6': '2001:db8::1', "                         \
	"'next_hop_mac': '02:00:5e:00:53:01'}, 'maglev': {'table_size': 251}"

static const char base_config[] =
        "{" ENCAP ", 'vips': ["
        " {'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp', 'backends': ["
        "   {'address': '10.1.0.1'}, {'address': '10.1.0.2', 'weight': 2, 'name': 'web2'}]},"
        " {'address': '2001:db8::10', 'port': 443, 'protocol': 'udp', 'key': 'src_ip',"
        "  'encap': 'gue'}]}";

/* A fake daemon running cfg (taken); apply_calls starts at 0. */
static struct fake *
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

static struct fake *
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

static void
fake_free(struct fake *f)
{
	lb_snapshot_free(f->snap);
	lb_config_free(f->cfg);
	json_decref(f->hot.params);
	json_decref(f->hot.set_seen);
	free(f);
}

static int
setup(void **state)
{
	*state = fake_new(base_config);
	return 0;
}

static int
teardown(void **state)
{
	fake_free(*state);
	return 0;
}

/* ---- Calling ---- */

/* Send a line as it is; the reply parsed, or NULL when there is none. */
static json_t *
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

static json_t *
rpc(struct fake *f, const char *sq_line)
{
	char *line = dq(sq_line);
	json_t *r = rpc_raw(f, line, strlen(line));

	free(line);
	return r;
}

/* Send the calls (single-quoted JSON, up to a NULL) as one batch line. */
static json_t *
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

static char *
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

static void
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
static json_t *
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

static void
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
static json_t *
call_ok(struct fake *f, const char *sq_line, json_t **reply)
{
	*reply = rpc(f, sq_line);
	return result_of(*reply);
}

static json_t *
config_doc(const struct fake *f)
{
	return lb_config_to_json(f->cfg);
}

#define VREF "{'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp'}"
#define VREF_FIELDS "'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp'"
#define REQ(method, params)                                                                        \
	"{'jsonrpc': '2.0', 'id': 1, 'method': '" method "', 'params': " params "}"
#define REQ0(method) "{'jsonrpc': '2.0', 'id': 1, 'method': '" method "'}"

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

        /* Params of methods that take none. */
        {"version unknown param", REQ("version", "{'verbose': true}"), P, "verbose: unknown field",
         "1"},
        {"vip_list unknown param", REQ("vip_list", "{'x': 1}"), P, "x: unknown field", "1"},
        {"stats unknown param", REQ("stats", "{'x': 1}"), P, "x: unknown field", "1"},
        {"config_get unknown param", REQ("config_get", "{'x': 1}"), P, "x: unknown field", "1"},
        {"config_save unknown param", REQ("config_save", "{'path': '/tmp/x'}"), P,
         "path: unknown field", "1"},

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
         "name: must be 1 to 63 characters", "1"},
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
         "weight, state: missing", "1"},
        {"backend_set weight string",
         REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'weight': 'x'}"), P,
         "weight: expected an integer, got a string", "1"},
        {"backend_set bad state",
         REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'state': 'drain'}"), P,
         "state: \"drain\" is not one of", "1"},
        {"backend_set name is not settable",
         REQ("backend_set", "{'vip': " VREF ", 'address': '10.1.0.2', 'name': 'x'}"), P,
         "name: unknown field", "1"},
        {"maglev_table missing vip", REQ("maglev_table", "{}"), P, "vip: missing (required)", "1"},
        {"maglev_table raw not a boolean", REQ("maglev_table", "{'vip': " VREF ", 'raw': 1}"), P,
         "raw: expected a boolean, got an integer", "1"},
        {"maglev_table unknown field", REQ("maglev_table", "{'vip': " VREF ", 'size': 1}"), P,
         "size: unknown field", "1"},

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
        {"maglev_table VIP not found",
         REQ("maglev_table", "{'vip': {'address': '192.0.2.99', 'port': 80, 'protocol': 'tcp'}}"),
         NF, "VIP 192.0.2.99:80/tcp not found", "1"},

        /* Already exists. */
        {"vip_add exists", REQ("vip_add", VREF), EX, "VIP 192.0.2.10:80/tcp already exists", "1"},
        {"vip_add exists (IPv6, other key)",
         REQ("vip_add", "{'address': '2001:db8::10', 'port': 443, 'protocol': 'udp'}"), EX,
         "VIP [2001:db8::10]:443/udp already exists", "1"},
        {"backend_add exists", REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.1'}"), EX,
         "backend 10.1.0.1 already in VIP 192.0.2.10:80/tcp", "1"},
        {"backend_add name taken",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.3', 'name': 'web2'}"), EX,
         "a backend with identity \"web2\" is already in VIP", "1"},
        {"backend_add name equal to another's address",
         REQ("backend_add", "{'vip': " VREF ", 'address': '10.1.0.3', 'name': '10.1.0.1'}"), EX,
         "a backend with identity \"10.1.0.1\"", "1"},

        /* Ids are echoed whatever the error. */
        {"id string echoed on error",
         "{'jsonrpc': '2.0', 'id': 'req-7', 'method': 'vip_get', 'params': {}}", P,
         "address: missing", "\"req-7\""},
        {"id null echoed on error", "{'jsonrpc': '2.0', 'id': null, 'method': 'nope'}",
         LB_RPC_ERR_METHOD_NOT_FOUND, "method not found", "null"},

        /* config_save without a state file is in test_rpc_config_save. */
};

#define N_ERR_CASES (sizeof(err_cases) / sizeof(err_cases[0]))

struct row_fixture {
	struct fake *f;
	const void *row;
};

static int
row_setup(void **state)
{
	struct row_fixture *rf = calloc(1, sizeof(*rf));

	if (rf == NULL)
		return -1;
	rf->row = *state;
	rf->f = fake_new(base_config);
	*state = rf;
	return 0;
}

static int
row_teardown(void **state)
{
	struct row_fixture *rf = *state;

	fake_free(rf->f);
	free(rf);
	return 0;
}

static void
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

/* ---- Methods ---- */

static void
test_rpc_version(void **state)
{
	struct fake *f = *state;
	json_t *r, *res = call_ok(f, REQ0("version"), &r);

	assert_string_equal(show(res), "{\"version\":\"0.1.0\",\"protocol\":1}");
	assert_id(r, "1");
	json_decref(r);
	/* Empty params are the same as none. */
	res = call_ok(f, REQ("version", "{}"), &r);
	assert_int_equal(json_integer_value(json_object_get(res, "protocol")), 1);
	json_decref(r);
}

static void
test_rpc_vip_list_and_get(void **state)
{
	struct fake *f = *state;
	json_t *doc = config_doc(f), *r, *res;

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

/* ---- Limits ---- */

/* A running config with n_vips VIPs of per_vip backends each (weight 0: cheap tables). */
static struct fake *
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

	/* More than one VIP may hold: rejected before anything is parsed. */
	params = json_pack("{s:s, s:i, s:s, s:[]}", "address", "198.51.100.2", "port",
	                   (json_int_t)80, "protocol", "tcp", "backends");
	assert_non_null(params);
	for (uint32_t i = 0; i < LB_CFG_MAX_BACKENDS_PER_VIP + 1; i++)
		json_array_append_new(json_object_get(params, "backends"), json_object());
	r = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)1, "method",
	              "vip_add", "params", params);
	line = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	r = rpc_raw(f, line, strlen(line));
	free(line);
	assert_error(r, LB_RPC_ERR_LIMIT, "backends: too many backends (at most 65534 per VIP)");
	json_decref(r);
	assert_int_equal(f->apply_calls, 1);
	fake_free(f);
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

#define ADD_VIP "{'address': '198.51.100.1', 'port': 80, 'protocol': 'tcp'}"
#define NEW_VIP_REF "{'vip': " ADD_VIP

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

#define N_BATCH_CASES (sizeof(batch_cases) / sizeof(batch_cases[0]))

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

/* ---- Hot keys ---- */

/* base_config plus src_ip_dport VIPs of every port and of one port. */
static const char hot_config[] =
        "{" ENCAP ", 'vips': ["
        " {'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp', 'backends': ["
        "   {'address': '10.1.0.1'}, {'address': '10.1.0.2', 'weight': 2, 'name': 'web2'}]},"
        " {'address': '2001:db8::10', 'port': 443, 'protocol': 'udp', 'key': 'src_ip',"
        "  'encap': 'gue'},"
        " {'address': '192.0.2.20', 'port': 0, 'protocol': 'udp', 'key': 'src_ip_dport'},"
        " {'address': '192.0.2.30', 'port': 53, 'protocol': 'udp', 'key': 'src_ip_dport'}]}";

#define V6REF "{'address': '2001:db8::10', 'port': 443, 'protocol': 'udp'}"
#define V20REF "{'address': '192.0.2.20', 'port': 0, 'protocol': 'udp'}"
#define V30REF "{'address': '192.0.2.30', 'port': 53, 'protocol': 'udp'}"
#define HOT_PARAMS                                                                                 \
	"{'threshold': 0.01, 'threshold_low': 0.005, 'epsilon': 0.25, 'demote_windows': 5, "       \
	"'window_ms': 100}"

/* A fake daemon with the hot-key ops; VIP ids are not their indexes. */
static struct fake *
fake_new_hot(void)
{
	struct fake *f = fake_new(hot_config);

	f->ops.hot_list = fake_hot_list;
	f->ops.hot_events = fake_hot_events;
	f->ops.hot_set = fake_hot_set;
	f->ops.hot_pin = fake_hot_pin;
	f->hot.params = parse_sq(HOT_PARAMS);
	for (uint32_t i = 0; i < f->cfg->n_vips; i++)
		f->cfg->vips[i].id = (uint16_t)(700 + i);
	return f;
}

static int
hot_setup(void **state)
{
	*state = fake_new_hot();
	return 0;
}

static int
hot_row_setup(void **state)
{
	struct row_fixture *rf = calloc(1, sizeof(*rf));

	if (rf == NULL)
		return -1;
	rf->row = *state;
	rf->f = fake_new_hot();
	*state = rf;
	return 0;
}

/* Rejected before the daemon is asked: nothing changes, no op runs. */
static const struct err_case hot_err_cases[] = {
        /* hot_list, hot_events */
        {"hot_list unknown param", REQ("hot_list", "{'vip': " VREF "}"), P, "vip: unknown field",
         "1"},
        {"hot_events unknown param", REQ("hot_events", "{'since': 3}"), P, "since: unknown field",
         "1"},

        /* hot_set */
        {"hot_set nothing", REQ("hot_set", "{}"), P,
         "threshold, threshold_low, epsilon, demote_windows, window_ms: missing", "1"},
        {"hot_set no params", REQ0("hot_set"), P,
         "threshold, threshold_low, epsilon, demote_windows, window_ms: missing", "1"},
        {"hot_set unknown field", REQ("hot_set", "{'threshold': 0.1, 'alpha': 0.5}"), P,
         "alpha: unknown field", "1"},
        {"hot_set threshold 0", REQ("hot_set", "{'threshold': 0}"), P,
         "threshold: 0 out of range (0, 1]", "1"},
        {"hot_set threshold above 1", REQ("hot_set", "{'threshold': 1.5}"), P,
         "threshold: 1.5 out of range (0, 1]", "1"},
        {"hot_set threshold negative", REQ("hot_set", "{'threshold': -0.1}"), P,
         "threshold: -0.1 out of range", "1"},
        {"hot_set threshold string", REQ("hot_set", "{'threshold': '0.1'}"), P,
         "threshold: expected a number, got a string", "1"},
        {"hot_set threshold null", REQ("hot_set", "{'threshold': null}"), P,
         "threshold: expected a number, got null", "1"},
        {"hot_set threshold_low 0", REQ("hot_set", "{'threshold_low': 0}"), P,
         "threshold_low: 0 out of range (0, 1]", "1"},
        {"hot_set threshold_low above 1", REQ("hot_set", "{'threshold_low': 2}"), P,
         "threshold_low: 2 out of range (0, 1]", "1"},
        {"hot_set threshold_low above threshold",
         REQ("hot_set", "{'threshold': 0.1, 'threshold_low': 0.2}"), P,
         "threshold_low: 0.2 is above threshold 0.1", "1"},
        {"hot_set epsilon too small", REQ("hot_set", "{'epsilon': 0.0005}"), P,
         "epsilon: 0.0005 out of range [0.001, 100]", "1"},
        {"hot_set epsilon too big", REQ("hot_set", "{'epsilon': 101}"), P,
         "epsilon: 101 out of range [0.001, 100]", "1"},
        {"hot_set epsilon bool", REQ("hot_set", "{'epsilon': true}"), P,
         "epsilon: expected a number, got a boolean", "1"},
        {"hot_set demote_windows 0", REQ("hot_set", "{'demote_windows': 0}"), P,
         "demote_windows: 0 out of range [1, 1000]", "1"},
        {"hot_set demote_windows too big", REQ("hot_set", "{'demote_windows': 1001}"), P,
         "demote_windows: 1001 out of range [1, 1000]", "1"},
        {"hot_set demote_windows real", REQ("hot_set", "{'demote_windows': 2.5}"), P,
         "demote_windows: expected an integer, got a number", "1"},
        {"hot_set window_ms too small", REQ("hot_set", "{'window_ms': 9}"), P,
         "window_ms: 9 out of range [10, 60000]", "1"},
        {"hot_set window_ms too big", REQ("hot_set", "{'window_ms': 60001}"), P,
         "window_ms: 60001 out of range [10, 60000]", "1"},
        {"hot_set window_ms string", REQ("hot_set", "{'window_ms': '100'}"), P,
         "window_ms: expected an integer, got a string", "1"},
        {"hot_set one bad among good",
         REQ("hot_set", "{'threshold': 0.1, 'epsilon': 0.5, 'window_ms': 5}"), P,
         "window_ms: 5 out of range", "1"},

        /* hot_pin: the envelope of the params */
        {"hot_pin no params", REQ0("hot_pin"), P, "vip: missing", "1"},
        {"hot_pin no vip", REQ("hot_pin", "{'key': {'src': '198.51.100.7'}}"), P, "vip: missing",
         "1"},
        {"hot_pin bad vip",
         REQ("hot_pin", "{'vip': {'address': '192.0.2.300', 'port': 80, "
                        "'protocol': 'tcp'}, 'key': {'src': '1.2.3.4'}}"),
         P, "vip.address: ", "1"},
        {"hot_pin vip unknown field",
         REQ("hot_pin", "{'vip': {'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp', "
                        "'key': '5tuple'}, 'key': {'src': '1.2.3.4'}}"),
         P, "vip.key: unknown field", "1"},
        {"hot_pin no key", REQ("hot_pin", "{'vip': " VREF "}"), P, "key: missing (required)", "1"},
        {"hot_pin key not an object", REQ("hot_pin", "{'vip': " VREF ", 'key': '198.51.100.7'}"), P,
         "key: expected an object, got a string", "1"},
        {"hot_pin unknown field",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, 'pin': true}"), P,
         "pin: unknown field", "1"},
        {"hot_pin key unknown field",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1, 'port': 80}}"), P,
         "key.port: unknown field", "1"},
        {"hot_pin replicas too many",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, "
                        "'replicas': 257}"),
         P, "replicas: 257 out of range [0, 256]", "1"},
        {"hot_pin replicas negative",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, "
                        "'replicas': -1}"),
         P, "replicas: -1 out of range [0, 256]", "1"},
        {"hot_pin replicas real",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, "
                        "'replicas': 2.5}"),
         P, "replicas: expected an integer, got a number", "1"},
        {"hot_pin replicas string",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, "
                        "'replicas': '3'}"),
         P, "replicas: expected an integer, got a string", "1"},
        {"hot_pin no such VIP",
         REQ("hot_pin", "{'vip': {'address': '192.0.2.99', 'port': 80, 'protocol': 'tcp'}, "
                        "'key': {'src': '1.2.3.4'}}"),
         NF, "VIP 192.0.2.99:80/tcp not found", "1"},
        {"hot_pin VIP of another protocol",
         REQ("hot_pin", "{'vip': {'address': '192.0.2.10', 'port': 80, 'protocol': 'udp'}, "
                        "'key': {'src': '1.2.3.4'}}"),
         NF, "VIP 192.0.2.10:80/udp not found", "1"},

        /* hot_pin: the key's fields */
        {"hot_pin key.src missing", REQ("hot_pin", "{'vip': " VREF ", 'key': {'sport': 1}}"), P,
         "key.src: missing (required)", "1"},
        {"hot_pin key.src not a string",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': 5, 'sport': 1}}"), P,
         "key.src: expected a string, got an integer", "1"},
        {"hot_pin key.src not an address",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': 'gateway', 'sport': 1}}"), P,
         "key.src: not an IPv4 or IPv6 address: \"gateway\"", "1"},
        {"hot_pin key.src with a port",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4:80', 'sport': 1}}"), P,
         "key.src: not an IPv4 or IPv6 address", "1"},
        {"hot_pin key.src IPv6 for an IPv4 VIP",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '2001:db8::7', 'sport': 1}}"), P,
         "key.src: an IPv6 address, but VIP 192.0.2.10:80/tcp is IPv4", "1"},
        {"hot_pin key.src IPv4 for an IPv6 VIP",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '198.51.100.7'}}"), P,
         "key.src: an IPv4 address, but VIP [2001:db8::10]:443/udp is IPv6", "1"},
        {"hot_pin 5tuple key.sport missing",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'dport': 80}}"), P,
         "key.sport: missing (required by key mode 5tuple)", "1"},
        {"hot_pin key.sport too big",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 65536}}"), P,
         "key.sport: 65536 out of range [0, 65535]", "1"},
        {"hot_pin key.sport string",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': '1'}}"), P,
         "key.sport: expected an integer, got a string", "1"},
        {"hot_pin key.dport negative",
         REQ("hot_pin",
             "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, 'dport': -1}}"),
         P, "key.dport: -1 out of range [0, 65535]", "1"},
        {"hot_pin key.dport not the VIP's port",
         REQ("hot_pin",
             "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, 'dport': 8080}}"),
         P, "key.dport: 8080 is not the port of VIP 192.0.2.10:80/tcp", "1"},
        {"hot_pin key.dst not the VIP",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'dst': '192.0.2.11'}}"),
         P, "key.dst: not the address of VIP 192.0.2.10:80/tcp", "1"},
        {"hot_pin key.dst of the other family",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'dst': '2001:db8::10'}}"),
         P, "key.dst: an IPv6 address", "1"},
        {"hot_pin key.dst not an address",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'dst': 7}}"),
         P, "key.dst: expected a string, got an integer", "1"},
        {"hot_pin key.protocol not the VIP's",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'protocol': 'udp'}}"),
         P, "key.protocol: not the protocol of VIP 192.0.2.10:80/tcp", "1"},
        {"hot_pin key.protocol unknown",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'protocol': 'sctp'}}"),
         P, "key.protocol: expected \"tcp\" or \"udp\", got \"sctp\"", "1"},
        {"hot_pin key.protocol number",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'protocol': 6}}"),
         P, "key.protocol: expected a string, got an integer", "1"},
        {"hot_pin src_ip key.sport not used",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7', 'sport': 1}}"), P,
         "key.sport: not used by the VIP's key mode src_ip", "1"},
        {"hot_pin src_ip key.dport not used",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7', 'dport': 443}}"), P,
         "key.dport: not used by the VIP's key mode src_ip", "1"},
        {"hot_pin src_ip key.dst not used",
         REQ("hot_pin",
             "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7', 'dst': '2001:db8::10'}}"),
         P, "key.dst: not used by the VIP's key mode src_ip", "1"},
        {"hot_pin src_ip key.protocol not used",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7', 'protocol': 'udp'}}"),
         P, "key.protocol: not used by the VIP's key mode src_ip", "1"},
        {"hot_pin src_ip_dport key.sport not used",
         REQ("hot_pin",
             "{'vip': " V20REF ", 'key': {'src': '203.0.113.9', 'sport': 5, 'dport': 53}}"),
         P, "key.sport: not used by the VIP's key mode src_ip_dport", "1"},
        {"hot_pin src_ip_dport key.dport missing on a VIP of every port",
         REQ("hot_pin", "{'vip': " V20REF ", 'key': {'src': '203.0.113.9'}}"), P,
         "key.dport: missing (required by key mode src_ip_dport on a VIP of every port)", "1"},
        {"hot_pin src_ip_dport key.dport not the VIP's port",
         REQ("hot_pin", "{'vip': " V30REF ", 'key': {'src': '203.0.113.9', 'dport': 54}}"), P,
         "key.dport: 54 is not the port of VIP 192.0.2.30:53/udp", "1"},

        /* hot_unpin */
        {"hot_unpin replicas",
         REQ("hot_unpin", "{'vip': " V6REF ", 'key': {'src': '2001:db8::7'}, "
                          "'replicas': 2}"),
         P, "replicas: unknown field", "1"},
        {"hot_unpin no key", REQ("hot_unpin", "{'vip': " V6REF "}"), P, "key: missing", "1"},
        {"hot_unpin key.sport not used",
         REQ("hot_unpin", "{'vip': " V6REF ", 'key': {'src': '2001:db8::7', 'sport': 9}}"), P,
         "key.sport: not used by the VIP's key mode src_ip", "1"},
        {"hot_unpin no such VIP",
         REQ("hot_unpin", "{'vip': {'address': '2001:db8::11', 'port': 443, 'protocol': 'udp'}, "
                          "'key': {'src': '2001:db8::7'}}"),
         NF, "VIP [2001:db8::11]:443/udp not found", "1"},
};

#define N_HOT_ERR_CASES (sizeof(hot_err_cases) / sizeof(hot_err_cases[0]))

static void
test_rpc_hot_rejects(void **state)
{
	struct row_fixture *rf = *state;
	struct fake *f = rf->f;

	test_rpc_rejects(state);
	assert_int_equal(f->hot.set_calls, 0);
	assert_int_equal(f->hot.pin_calls, 0);
}

/* A valid hot_pin / hot_unpin and the flow key the op must see. */
struct hot_pin_case {
	const char *name;
	const char *line;
	uint32_t vip;    /* index in hot_config (its id is 700 + index) */
	const char *src; /* the key's addresses as text; dst NULL: zero */
	const char *dst;
	uint16_t sport, dport; /* host byte order; the op must see network order */
	uint8_t proto;
	uint16_t r;
	bool pin;
};

static const struct hot_pin_case hot_pin_cases[] = {
        {"hot_pin 5tuple, dport from the VIP",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 40000}}"), 0,
         "198.51.100.7", "192.0.2.10", 40000, 80, IPPROTO_TCP, 0, true},
        {"hot_pin 5tuple, every field",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'dst': '192.0.2.10', "
                        "'sport': 1, 'dport': 80, 'protocol': 'tcp'}, 'replicas': 25}"),
         0, "198.51.100.7", "192.0.2.10", 1, 80, IPPROTO_TCP, 25, true},
        {"hot_pin 5tuple, sport 65535, replicas 0",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '0.0.0.0', 'sport': 65535}, "
                        "'replicas': 0}"),
         0, "0.0.0.0", "192.0.2.10", 65535, 80, IPPROTO_TCP, 0, true},
        {"hot_pin src_ip IPv6",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '2001:DB8:5:0::7'}, 'replicas': 256}"),
         1, "2001:db8:5::7", NULL, 0, 0, 0, 256, true},
        {"hot_pin src_ip_dport, VIP of every port",
         REQ("hot_pin", "{'vip': " V20REF ", 'key': {'src': '203.0.113.9', 'dport': 8443}, "
                        "'replicas': 3}"),
         2, "203.0.113.9", NULL, 0, 8443, 0, 3, true},
        {"hot_pin src_ip_dport, dport from the VIP",
         REQ("hot_pin", "{'vip': " V30REF ", 'key': {'src': '203.0.113.9'}}"), 3, "203.0.113.9",
         NULL, 0, 53, 0, 0, true},
        {"hot_pin src_ip_dport, dport given",
         REQ("hot_pin", "{'vip': " V30REF ", 'key': {'src': '203.0.113.9', 'dport': 53}}"), 3,
         "203.0.113.9", NULL, 0, 53, 0, 0, true},
        {"hot_unpin 5tuple",
         REQ("hot_unpin",
             "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 40000, 'dport': 80}}"),
         0, "198.51.100.7", "192.0.2.10", 40000, 80, IPPROTO_TCP, 0, false},
        {"hot_unpin src_ip",
         REQ("hot_unpin", "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7'}}"), 1,
         "2001:db8:5::7", NULL, 0, 0, 0, 0, false},
};

#define N_HOT_PIN_CASES (sizeof(hot_pin_cases) / sizeof(hot_pin_cases[0]))

static void
test_rpc_hot_pin(void **state)
{
	struct row_fixture *rf = *state;
	const struct hot_pin_case *c = rf->row;
	struct fake *f = rf->f;
	struct lb_flow_key want;
	json_t *before = config_doc(f), *after, *r;
	uint8_t af;

	r = rpc(f, c->line);
	assert_true(json_is_object(result_of(r)) && json_object_size(result_of(r)) == 0);
	json_decref(r);
	assert_int_equal(f->hot.pin_calls, 1);
	assert_int_equal(f->hot.vip_id, 700 + c->vip);
	assert_int_equal(f->hot.r, c->r);
	assert_int_equal(f->hot.pin, c->pin);

	memset(&want, 0, sizeof(want));
	assert_int_equal(lb_ip_from_str(c->src, &af, &want.src), 0);
	want.af = af;
	if (c->dst != NULL)
		assert_int_equal(lb_ip_from_str(c->dst, &af, &want.dst), 0);
	want.sport = htons(c->sport);
	want.dport = htons(c->dport);
	want.proto = c->proto;
	if (memcmp(&want, &f->hot.key, sizeof(want)) != 0) {
		char got[2 * sizeof(want) + 1], exp[2 * sizeof(want) + 1];

		for (size_t i = 0; i < sizeof(want); i++) {
			sprintf(got + 2 * i, "%02x", ((const uint8_t *)&f->hot.key)[i]);
			sprintf(exp + 2 * i, "%02x", ((const uint8_t *)&want)[i]);
		}
		fail_msg("flow key\n got  %s\n want %s", got, exp);
	}
	/* Runtime state only: the configuration is not touched. */
	assert_int_equal(f->apply_calls, 0);
	after = config_doc(f);
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
}

/* The daemon's answer mapped to an error code. */
struct hot_errno_case {
	const char *name;
	const char *line;
	int set_rc, pin_rc;
	const char *err; /* what the op writes to err */
	bool list_fails;
	int code;
	const char *msg;
};

#define PIN_LINE REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}")
#define UNPIN_LINE REQ("hot_unpin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}")
#define SET_LINE REQ("hot_set", "{'threshold_low': 0.3}")

static const struct hot_errno_case hot_errno_cases[] = {
        {"hot_pin ENOENT with a message", PIN_LINE, 0, -ENOENT,
         "VIP 192.0.2.10:80/tcp: not in the snapshot", false, NF,
         "VIP 192.0.2.10:80/tcp: not in the snapshot"},
        {"hot_pin ENOENT", PIN_LINE, 0, -ENOENT, NULL, false, NF,
         "VIP 192.0.2.10:80/tcp is not running"},
        {"hot_unpin ENOENT", UNPIN_LINE, 0, -ENOENT, NULL, false, NF,
         "no override of this key in VIP 192.0.2.10:80/tcp"},
        {"hot_unpin ENOENT with a message", UNPIN_LINE, 0, -ENOENT, "no such override", false, NF,
         "no such override"},
        {"hot_pin ENOSPC with a message", PIN_LINE, 0, -ENOSPC, "override table full (1024)", false,
         LB_RPC_ERR_LIMIT, "override table full (1024)"},
        {"hot_pin ENOSPC", PIN_LINE, 0, -ENOSPC, NULL, false, LB_RPC_ERR_LIMIT,
         "too many hot-key overrides"},
        {"hot_pin EINVAL", PIN_LINE, 0, -EINVAL, "key: the VIP has no backend", false, P,
         "key: the VIP has no backend"},
        {"hot_pin EIO", PIN_LINE, 0, -EIO, NULL, false, LB_RPC_ERR_INTERNAL, "Input/output error"},
        {"hot_pin ENOMEM with a message", PIN_LINE, 0, -ENOMEM, "out of memory", false,
         LB_RPC_ERR_INTERNAL, "out of memory"},
        {"hot_set EINVAL", SET_LINE, -EINVAL, 0, "threshold_low: 0.3 is above threshold 0.01",
         false, P, "threshold_low: 0.3 is above threshold 0.01"},
        {"hot_set EINVAL without a message", SET_LINE, -EINVAL, 0, NULL, false, P,
         "invalid hot-key parameters"},
        {"hot_set ENOMEM", SET_LINE, -ENOMEM, 0, NULL, false, LB_RPC_ERR_INTERNAL,
         "Cannot allocate memory"},
        {"hot_set then hot_list fails", SET_LINE, 0, 0, NULL, true, LB_RPC_ERR_INTERNAL,
         "parameters changed, but reading them back failed"},
        {"hot_list fails", REQ0("hot_list"), 0, 0, NULL, true, LB_RPC_ERR_INTERNAL,
         "out of memory"},
};

#define N_HOT_ERRNO_CASES (sizeof(hot_errno_cases) / sizeof(hot_errno_cases[0]))

static void
test_rpc_hot_errno(void **state)
{
	struct row_fixture *rf = *state;
	const struct hot_errno_case *c = rf->row;
	struct fake *f = rf->f;
	json_t *r;

	f->hot.set_rc = c->set_rc;
	f->hot.set_err = c->err;
	f->hot.pin_rc = c->pin_rc;
	f->hot.pin_err = c->err;
	f->hot.list_fails = c->list_fails;
	r = rpc(f, c->line);
	assert_error(r, c->code, c->msg);
	assert_id(r, "1");
	if (c->code == P) {
		json_t *data = json_object_get(json_object_get(r, "error"), "data");

		assert_true(json_is_string(json_object_get(data, "usage")));
	}
	json_decref(r);
	assert_int_equal(f->hot.pin_calls + f->hot.set_calls + f->hot.list_calls > 0, 1);
	assert_int_equal(f->apply_calls, 0);
}

static void
test_rpc_hot_list_events(void **state)
{
	struct fake *f = *state;
	json_t *r, *res, *want;

	res = call_ok(f, REQ0("hot_list"), &r);
	want = fake_hot_list(f);
	assert_true(json_equal(res, want));
	json_decref(want);
	json_decref(r);
	res = call_ok(f, REQ("hot_list", "{}"), &r);
	assert_int_equal(json_integer_value(json_object_get(res, "window")), 1234);
	json_decref(r);
	assert_int_equal(f->hot.list_calls, 3);

	res = call_ok(f, REQ0("hot_events"), &r);
	want = fake_hot_events(f);
	assert_true(json_equal(res, want));
	json_decref(want);
	json_decref(r);
	assert_int_equal(f->hot.events_calls, 2);
	assert_int_equal(f->apply_calls, 0);
}

static void
test_rpc_hot_set(void **state)
{
	static const struct {
		const char *params;
		const char *want; /* the params object after the change */
	} cases[] = {
	        {"{'threshold': 0.05}",
	         "{'threshold': 0.05, 'threshold_low': 0.005, 'epsilon': 0.25, "
	         "'demote_windows': 5, 'window_ms': 100}"},
	        {"{'threshold': 1, 'threshold_low': 1}",
	         "{'threshold': 1, 'threshold_low': 1, 'epsilon': 0.25, 'demote_windows': 5, "
	         "'window_ms': 100}"},
	        {"{'threshold': 0.2, 'threshold_low': 0.1, 'epsilon': 0.001, 'demote_windows': 1, "
	         "'window_ms': 10}",
	         "{'threshold': 0.2, 'threshold_low': 0.1, 'epsilon': 0.001, 'demote_windows': 1, "
	         "'window_ms': 10}"},
	        {"{'epsilon': 100, 'demote_windows': 1000, 'window_ms': 60000}",
	         "{'threshold': 0.2, 'threshold_low': 0.1, 'epsilon': 100, 'demote_windows': 1000, "
	         "'window_ms': 60000}"},
	        /* Alone, threshold_low is judged against the current threshold by the daemon. */
	        {"{'threshold_low': 0.15}",
	         "{'threshold': 0.2, 'threshold_low': 0.15, 'epsilon': 100, 'demote_windows': "
	         "1000, 'window_ms': 60000}"},
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[512];
		json_t *r, *res, *sent = parse_sq(cases[i].params), *want = parse_sq(cases[i].want);

		snprintf(line, sizeof(line), REQ("hot_set", "%s"), cases[i].params);
		res = call_ok(f, line, &r);
		if (!json_equal(res, want))
			fail_msg("hot_set %s: result %s, want %s", cases[i].params, show(res),
			         show(want));
		/* The op saw exactly the params sent. */
		assert_true(json_equal(f->hot.set_seen, sent));
		assert_int_equal(f->hot.set_calls, (int)i + 1);
		json_decref(r);
		json_decref(sent);
		json_decref(want);
	}
	assert_int_equal(f->apply_calls, 0);
	/* A notification is executed, not answered. */
	assert_null(rpc(f, "{'jsonrpc': '2.0', 'method': 'hot_set', 'params': {'window_ms': 50}}"));
	assert_int_equal(f->hot.set_calls, 6);
	assert_int_equal(json_integer_value(json_object_get(f->hot.params, "window_ms")), 50);
}

/* Without the hot-key ops every hot_* method says so, whatever its params. */
static void
test_rpc_hot_disabled(void **state)
{
	static const char *const lines[] = {
	        REQ0("hot_list"),
	        REQ("hot_list", "{'x': 1}"),
	        REQ0("hot_events"),
	        REQ("hot_set", "{'threshold': 0.1}"),
	        REQ("hot_set", "{'threshold': 7}"),
	        REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}"),
	        REQ("hot_unpin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}"),
	        REQ0("hot_pin"),
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		json_t *r = rpc(f, lines[i]);

		assert_error(r, LB_RPC_ERR_INTERNAL,
		             "hot keys are disabled (hot.enabled is false)");
		json_decref(r);
	}
	assert_int_equal(f->apply_calls, 0);
}

/* drain/undrain: without an announcer -32603; with one, the op's document; never in a batch. */
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

/* One op missing is enough for its methods to say so; hot_set also needs hot_list. */
static void
test_rpc_hot_partly_disabled(void **state)
{
	struct fake *f = *state;
	json_t *r;

	f->ops.hot_list = NULL;
	r = rpc(f, REQ("hot_set", "{'threshold': 0.1}"));
	assert_error(r, LB_RPC_ERR_INTERNAL, "hot keys are disabled");
	json_decref(r);
	assert_int_equal(f->hot.set_calls, 0);
	r = rpc(f, REQ0("hot_events"));
	result_of(r);
	json_decref(r);
}

/* Reads may join a batch; changes to runtime state may not (nothing could roll them back). */
static void
test_rpc_hot_batch(void **state)
{
	static const char *const reads[] = {REQ0("hot_list"), REQ0("version"), REQ0("hot_events"),
	                                    NULL};
	static const char *const changes[] = {
	        REQ("hot_set", "{'threshold': 0.1}"),
	        REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}"),
	        REQ("hot_unpin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}"),
	};
	struct fake *f = *state;
	json_t *r = rpc_batch(f, reads);

	assert_int_equal(json_array_size(r), 3);
	for (size_t i = 0; i < 3; i++)
		result_of(json_array_get(r, i));
	json_decref(r);
	assert_int_equal(f->hot.list_calls, 1);
	assert_int_equal(f->hot.events_calls, 1);

	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		const char *calls[] = {REQ("vip_add", ADD_VIP), changes[i], NULL};
		const char *alone[] = {changes[i], NULL};
		json_t *before = config_doc(f), *after;

		r = rpc_batch(f, calls);
		assert_int_equal(json_array_size(r), 2);
		assert_error(json_array_get(r, 0), LB_RPC_ERR_ABORTED, "transaction aborted");
		assert_error(json_array_get(r, 1), IR, "invalid request: hot_");
		assert_id(json_array_get(r, 1), "1");
		json_decref(r);
		/* Even alone in an array. */
		r = rpc_batch(f, alone);
		assert_error(json_array_get(r, 0), IR, "invalid request: hot_");
		json_decref(r);
		after = config_doc(f);
		assert_true(json_equal(before, after));
		json_decref(before);
		json_decref(after);
	}
	assert_int_equal(f->hot.set_calls, 0);
	assert_int_equal(f->hot.pin_calls, 0);
	assert_int_equal(f->apply_calls, 0);
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
	struct CMUnitTest tests[N_ERR_CASES + N_BATCH_CASES + N_HOT_ERR_CASES + N_HOT_PIN_CASES +
	                        N_HOT_ERRNO_CASES + 50];
	size_t n = 0;

#define T(fn) (struct CMUnitTest) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	for (size_t i = 0; i < N_ERR_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
		        test_rpc_rejects, row_setup, row_teardown, (void *)&err_cases[i]);
		tests[n++].name = err_cases[i].name;
	}
	tests[n++] = T(test_rpc_version);
	tests[n++] = T(test_rpc_vip_list_and_get);
	tests[n++] = T(test_rpc_vip_add);
	tests[n++] = T(test_rpc_vip_remove);
	tests[n++] = T(test_rpc_backend_add);
	tests[n++] = T(test_rpc_backend_remove);
	tests[n++] = T(test_rpc_backend_set);
	tests[n++] = T(test_rpc_stats);
	tests[n++] = T(test_rpc_maglev_table);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rpc_maglev_table_default_size);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rpc_backend_family_needs_source);
	tests[n++] = T(test_rpc_config_get);
	tests[n++] = T(test_rpc_config_save);
	tests[n++] = T(test_rpc_apply_fails);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rpc_limit_vips);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rpc_limit_table_budget);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rpc_limit_backends);
	tests[n++] = T(test_rpc_limit_batch);
	tests[n++] = T(test_rpc_ids_echoed);
	tests[n++] = T(test_rpc_notifications);
	tests[n++] = T(test_rpc_nul_byte);
	tests[n++] = T(test_rpc_long_utf8_message);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rpc_error_reply);
	tests[n++] = T(test_rpc_batch_applies_once);
	tests[n++] = T(test_rpc_batch_read_only);
	tests[n++] = T(test_rpc_batch_published_reads);
	for (size_t i = 0; i < N_BATCH_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
		        test_rpc_batch_aborts, row_setup, row_teardown, (void *)&batch_cases[i]);
		tests[n++].name = batch_cases[i].name;
	}
	tests[n++] = T(test_rpc_batch_apply_fails);
	tests[n++] = T(test_rpc_config_clone);
	for (size_t i = 0; i < N_HOT_ERR_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
		        test_rpc_hot_rejects, hot_row_setup, row_teardown,
		        (void *)&hot_err_cases[i]);
		tests[n++].name = hot_err_cases[i].name;
	}
	for (size_t i = 0; i < N_HOT_PIN_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
		        test_rpc_hot_pin, hot_row_setup, row_teardown, (void *)&hot_pin_cases[i]);
		tests[n++].name = hot_pin_cases[i].name;
	}
	for (size_t i = 0; i < N_HOT_ERRNO_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
		        test_rpc_hot_errno, hot_row_setup, row_teardown,
		        (void *)&hot_errno_cases[i]);
		tests[n++].name = hot_errno_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_rpc_hot_list_events,
	                                                                hot_setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_rpc_hot_set, hot_setup,
	                                                                teardown);
	tests[n++] = T(test_rpc_hot_disabled);
	tests[n++] = T(test_rpc_drain);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_rpc_hot_partly_disabled, hot_setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_rpc_hot_batch,
	                                                                hot_setup, teardown);
#undef T
	return _cmocka_run_group_tests("rpc", tests, n, NULL, NULL);
}
