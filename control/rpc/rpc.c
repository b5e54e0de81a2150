/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC 2.0 dispatcher of the control socket (docs/control-protocol.md):
 * request and batch validation, the method lookup over the per-file method
 * tables, execution and error replies. Every call of a request or batch runs
 * against one private copy of the running configuration; the copy goes to
 * ops->apply only if every call succeeded, so a batch is one transaction with
 * one rebuild. A request's replies together may take LB_RPC_MAX_REPLY bytes:
 * each call's reply is measured as it is made, and the call that would pass
 * the budget fails (aborting the batch). The methods live in rpc_vip.c,
 * rpc_backend.c, rpc_query.c, rpc_hot.c and rpc_drain.c; ids beyond Jansson's
 * numbers are found and echoed by rpc_id.c.
 */
#include <stdbool.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"
#include "control/model/json_text.h"
#include "control/rpc/rpc.h"
#include "control/rpc/rpc_id.h"
#include "control/rpc/rpc_internal.h"
#include "control/io/server.h"

_Static_assert(LB_RPC_MAX_REPLY + 1 <= LB_SERVER_DEFAULT_MAX_OUTPUT,
               "a reply and its newline fit the server's output cap");
_Static_assert(LB_RPC_ERR_TOO_LARGE == LB_SERVER_ERR_REPLY_TOO_LARGE,
               "one code for a reply over either limit");

#define PARSE_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

/* One element of a request line. */
struct call {
	const struct lb_rpc_method *m;
	const json_t *params; /* borrowed from the parsed line */
	const json_t *id;     /* borrowed; NULL: none or invalid (replied to as null) */
	const char *raw_id;   /* an id Jansson cannot hold: its bytes in the line, echoed as is */
	size_t raw_len;
	bool notification; /* a valid request without "id": no reply */
	struct lb_rpc_outcome out;
};

/* Every method, by the file that handles it; each table ends with a row without a name. */
static const struct lb_rpc_method *const method_tables[] = {
        lb_rpc_query_methods, lb_rpc_vip_methods,   lb_rpc_backend_methods,
        lb_rpc_hot_methods,   lb_rpc_drain_methods,
};

static const struct lb_rpc_method *
find_method(const char *name)
{
	for (size_t i = 0; i < sizeof(method_tables) / sizeof(method_tables[0]); i++)
		for (const struct lb_rpc_method *m = method_tables[i]; m->name != NULL; m++)
			if (strcmp(m->name, name) == 0)
				return m;
	return NULL;
}

/* ---- Envelope, execution, replies ---- */

/* Check one request object; on failure out holds the error (replied to even without id). */
static int
decode_request(const json_t *req, struct call *c)
{
	static const char *const members[] = {"jsonrpc", "method", "params", "id", NULL};
	const json_t *id, *v, *p;
	const char *k;
	json_t *val;

	if (!json_is_object(req))
		return lb_rpc_fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		                   "invalid request: expected a request object, got %s",
		                   lb_config_json_type(req));
	id = json_object_get(req, "id");
	if (id != NULL && !json_is_string(id) && !json_is_number(id) && !json_is_null(id))
		return lb_rpc_fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		                   "invalid request: id must be a string, a number or null, got %s",
		                   lb_config_json_type(id));
	c->id = id;
	json_object_foreach ((json_t *)req, k, val) {
		const char *const *m;

		for (m = members; *m != NULL && strcmp(*m, k) != 0; m++)
			;
		if (*m == NULL)
			return lb_rpc_fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
			                   "invalid request: unknown member \"%s\"", k);
	}
	v = json_object_get(req, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		return lb_rpc_fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		                   "invalid request: jsonrpc must be \"2.0\"");
	v = json_object_get(req, "method");
	if (!json_is_string(v))
		return lb_rpc_fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		                   "invalid request: method must be a string");
	p = json_object_get(req, "params");
	if (p != NULL && !json_is_object(p))
		return lb_rpc_fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		                   "invalid request: params must be an object, got %s",
		                   lb_config_json_type(p));
	c->params = p;
	c->notification = id == NULL;
	c->m = find_method(json_string_value(v));
	if (c->m == NULL)
		return lb_rpc_fail(&c->out, LB_RPC_ERR_METHOD_NOT_FOUND, "method not found: %s",
		                   json_string_value(v));
	return 0;
}

/* Replace a call's outcome by an error (its result, if any, is dropped). */
static void
override(struct lb_rpc_outcome *o, int code, const char *msg)
{
	json_decref(o->result);
	o->result = NULL;
	json_decref(o->data);
	o->data = NULL;
	lb_rpc_fail(o, code, "%s", msg);
}

/* {"field": the path the message starts with, "usage": the method's params}. */
static json_t *
params_error_data(const struct lb_rpc_outcome *o, const struct lb_rpc_method *m)
{
	const char *end = strstr(o->msg, ": ");
	json_t *d = json_object();

	if (d == NULL ||
	    (end != NULL &&
	     json_object_set_new(d, "field", json_stringn(o->msg, (size_t)(end - o->msg))) != 0) ||
	    json_object_set_new(d, "usage", json_string(m->usage)) != 0) {
		json_decref(d);
		return NULL;
	}
	return d;
}

static json_t *reply(const json_t *id, const struct lb_rpc_outcome *o);

/*
 * Charge call i's reply (and the comma before it) to the request's budget;
 * over it, the call fails with LB_RPC_ERR_TOO_LARGE. 0 or that code.
 */
static int
charge_reply(struct lb_rpc_txn *t, struct call *c, size_t i, size_t n)
{
	json_t *r = reply(c->id, &c->out);
	char *text = lb_json_text_dumps(r, JSON_COMPACT), msg[LB_RPC_MSG_LEN];
	size_t need = (text != NULL ? strlen(text) : 0) + (i > 0);

	free(text);
	json_decref(r);
	if (need <= t->reply_left) {
		t->reply_left -= need;
		return 0;
	}
	if (n == 1)
		snprintf(msg, sizeof(msg),
		         "reply too large: the reply takes %zu bytes, over the %zu one reply may "
		         "take",
		         need, LB_RPC_MAX_REPLY);
	else
		snprintf(msg, sizeof(msg),
		         "reply too large: this call's reply (%zu bytes) takes the batch's reply "
		         "past "
		         "the %zu bytes one reply may take; send it in a request of its own or ask "
		         "for less",
		         need, LB_RPC_MAX_REPLY);
	override(&c->out, LB_RPC_ERR_TOO_LARGE, msg);
	return LB_RPC_ERR_TOO_LARGE;
}

/*
 * Run calls in order against one working copy. The first failure (a reply
 * over the budget included) aborts the rest and discards the copy; if
 * everything succeeded and something changed, one ops->apply makes it the
 * running configuration.
 */
static void
run_calls(const struct lb_rpc_ops *ops, struct call *calls, size_t n, const json_t *no_params)
{
	/* The batch's brackets are charged up front. */
	struct lb_rpc_txn t = {ops, NULL, LB_RPC_MAX_REPLY - 2, LB_RPC_MAX_SCAN};
	bool changed = false;
	char err[LB_RPC_MSG_LEN];
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		struct call *c = &calls[i];

		if (c->m->handler(&t, c->params ? c->params : no_params, &c->out) != 0) {
			if (c->out.code == LB_RPC_ERR_INVALID_PARAMS)
				c->out.data = params_error_data(&c->out, c->m);
			break;
		}
		if (charge_reply(&t, c, i, n) != 0)
			break;
		changed = changed || c->m->mutates;
	}
	if (i < n) {
		for (size_t j = 0; j < n; j++)
			if (j != i)
				override(&calls[j].out, LB_RPC_ERR_ABORTED, "transaction aborted");
		lb_config_free(t.work);
		return;
	}
	if (!changed) {
		lb_config_free(t.work);
		return;
	}
	err[0] = '\0';
	rc = ops->apply(ops->arg, t.work, err, sizeof(err));
	if (rc != 0)
		for (size_t j = 0; j < n; j++)
			override(&calls[j].out,
			         rc == -EBUSY ? LB_RPC_ERR_STALLED : LB_RPC_ERR_INTERNAL,
			         err[0] ? err : "cannot apply the configuration");
}

/*
 * A message as a JSON string. Messages are cut to LB_RPC_MSG_LEN bytes and may end
 * in part of a UTF-8 sequence (at most 3 bytes), which Jansson refuses.
 */
static json_t *
message(const char *msg)
{
	char buf[LB_RPC_MSG_LEN];
	json_t *s = json_string(msg);
	size_t n;

	snprintf(buf, sizeof(buf), "%s", msg);
	n = strlen(buf);
	for (int cut = 0; s == NULL && cut < 4 && n > 0; cut++) {
		buf[--n] = '\0';
		s = json_string(buf);
	}
	return s != NULL ? s : json_string("(message is not valid UTF-8)");
}

static json_t *
error_object(int code, const char *msg, json_t *data)
{
	json_t *e = json_pack("{s:i, s:o}", "code", code, "message", message(msg));

	if (e != NULL && data != NULL && json_object_set(e, "data", data) != 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}

static json_t *
reply(const json_t *id, const struct lb_rpc_outcome *o)
{
	json_t *idv = id != NULL ? json_incref((json_t *)id) : json_null();

	if (o->code == 0)
		return json_pack("{s:s, s:o, s:O}", "jsonrpc", "2.0", "id", idv, "result",
		                 o->result);
	return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id", idv, "error",
	                 error_object(o->code, o->msg, o->data));
}

static char *
dump(json_t *r)
{
	char *s;

	if (r == NULL)
		return lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
	s = lb_json_text_dumps(r, JSON_COMPACT);
	json_decref(r);
	if (s == NULL)
		return lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
	return s;
}

/* The reply text of one call, its id echoed byte for byte if Jansson could not hold it. */
static char *
reply_text(const struct call *c)
{
	char *s, *spliced;

	if (c->raw_id == NULL)
		return dump(reply(c->id, &c->out));
	s = dump(reply(NULL, &c->out));
	spliced = lb_rpc_splice_id(s, c->raw_id, c->raw_len);
	free(s);
	return spliced != NULL ? spliced : lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
}

/* A batch's replies joined as one array text (what json_dumps of the array gives). */
static char *
batch_text(const struct call *calls, size_t n)
{
	size_t len = 1, cap = 256;
	char *s = malloc(cap);

	if (s == NULL)
		return lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
	s[0] = '[';
	for (size_t i = 0; i < n; i++) {
		char *r, *grown;
		size_t rl;

		if (calls[i].notification)
			continue;
		r = reply_text(&calls[i]);
		rl = r != NULL ? strlen(r) : 0;
		if (r == NULL || len + rl + 3 > cap) {
			cap = (len + rl + 3) * 2;
			grown = r != NULL ? realloc(s, cap) : NULL;
			if (grown == NULL) {
				free(r);
				free(s);
				return lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
			}
			s = grown;
		}
		if (len > 1)
			s[len++] = ',';
		memcpy(s + len, r, rl);
		len += rl;
		free(r);
	}
	if (len == 1) { /* notifications only: no reply */
		free(s);
		return NULL;
	}
	s[len++] = ']';
	s[len] = '\0';
	return s;
}

/*
 * The line Jansson refused with a numeric overflow: parsed again with each
 * "id" it cannot hold replaced by a placeholder (ids[] says where the real
 * ones are), or NULL with je describing why not.
 */
static json_t *
parse_with_big_ids(const char *line, size_t len, struct lb_rpc_big_id *ids, size_t max,
                   size_t *n_ids, json_error_t *je)
{
	char *copy;
	size_t clen;
	int n = lb_rpc_big_ids(line, len, ids, max, &copy, &clen);
	json_t *root;

	*n_ids = 0;
	if (n <= 0)
		return NULL;
	root = json_loadb(copy, clen, PARSE_FLAGS, je);
	free(copy);
	if (root != NULL)
		*n_ids = (size_t)n;
	return root;
}

/* The error for a line Jansson refused: -32700, or -32600 for valid JSON with a number beyond
 * range. */
static char *
refused_line(const char *line, size_t len, const json_error_t *je)
{
	char msg[LB_RPC_MSG_LEN];
	json_error_t je2;
	json_t *again;

	if (json_error_code(je) == json_error_numeric_overflow) {
		char *copy;
		size_t clen;
		int n = lb_rpc_without_big_numbers(line, len, &copy, &clen);
		bool valid;

		/* With every well-formed number Jansson refuses replaced: is the rest JSON? */
		if (n > 0) {
			again = json_loadb(copy, clen, PARSE_FLAGS, &je2);
			free(copy);
			valid = again != NULL;
			json_decref(again);
		} else {
			valid = n < 0; /* out of memory: taken as valid, as before the copy */
		}
		if (valid) {
			snprintf(msg, sizeof(msg),
			         "invalid request: number out of range (at byte %d): an integer "
			         "must fit in 64 bits, a real in a double",
			         je->position);
			return lb_rpc_error_reply(LB_RPC_ERR_INVALID_REQUEST, msg);
		}
		/* Not JSON: the first fault after the numbers, read as doubles, where it is. */
		again = json_loadb(line, len, PARSE_FLAGS | JSON_DECODE_INT_AS_REAL, &je2);
		json_decref(again);
		if (again == NULL && json_error_code(&je2) != json_error_numeric_overflow)
			je = &je2;
	}
	snprintf(msg, sizeof(msg), "parse error: %s (at byte %d)", je->text, je->position);
	return lb_rpc_error_reply(LB_RPC_ERR_PARSE, msg);
}

/* The reply to line: its calls run (fail_code 0), or each given fail_code and fail_msg. */
static char *
handle(const struct lb_rpc_ops *ops, const char *line, size_t len, int fail_code,
       const char *fail_msg)
{
	struct call *calls = NULL;
	struct lb_rpc_big_id *big = NULL;
	size_t n_big = 0;
	json_t *root = NULL, *no_params = NULL, *replies = NULL;
	bool batch, valid = true, oom = false;
	json_error_t je;
	char *text = NULL;
	size_t n;

	root = json_loadb(line, len, PARSE_FLAGS, &je);
	if (root == NULL && json_error_code(&je) == json_error_numeric_overflow) {
		json_error_t je_ids;

		big = malloc(LB_RPC_MAX_BATCH * sizeof(*big));
		if (big != NULL)
			root = parse_with_big_ids(line, len, big, LB_RPC_MAX_BATCH, &n_big,
			                          &je_ids);
	}
	if (root == NULL) {
		free(big);
		return refused_line(line, len, &je);
	}
	batch = json_is_array(root);
	n = batch ? json_array_size(root) : 1;
	if (batch && n == 0) {
		free(big);
		json_decref(root);
		return lb_rpc_error_reply(LB_RPC_ERR_INVALID_REQUEST,
		                          "invalid request: empty batch");
	}
	if (batch && n > LB_RPC_MAX_BATCH) {
		char msg[LB_RPC_MSG_LEN];

		snprintf(msg, sizeof(msg), "invalid request: batch of %zu calls (at most %d)", n,
		         LB_RPC_MAX_BATCH);
		free(big);
		json_decref(root);
		return lb_rpc_error_reply(LB_RPC_ERR_INVALID_REQUEST, msg);
	}
	calls = calloc(n, sizeof(*calls));
	no_params = json_object();
	if (calls == NULL || no_params == NULL) {
		text = lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < n_big; i++)
		if (big[i].call < n) {
			calls[big[i].call].raw_id = line + big[i].off;
			calls[big[i].call].raw_len = big[i].len;
		}

	/* Every envelope is checked before anything runs: one bad one aborts all. */
	for (size_t i = 0; i < n; i++) {
		struct call *c = &calls[i];

		if (decode_request(batch ? json_array_get(root, i) : root, c) != 0)
			valid = false;
		else if (batch && c->m->no_batch) {
			lb_rpc_fail(
			        &c->out, LB_RPC_ERR_INVALID_REQUEST,
			        "invalid request: %s cannot be part of a batch (it changes runtime "
			        "state, which a transaction cannot roll back)",
			        c->m->name);
			valid = false;
		}
	}
	if (valid && fail_code != 0)
		for (size_t i = 0; i < n; i++)
			override(&calls[i].out, fail_code, fail_msg);
	else if (valid)
		run_calls(ops, calls, n, no_params);
	else
		for (size_t i = 0; i < n; i++)
			if (calls[i].out.code == 0)
				override(&calls[i].out, LB_RPC_ERR_ABORTED, "transaction aborted");

	if (!batch) {
		if (!calls[0].notification)
			text = reply_text(&calls[0]);
		goto cleanup;
	}
	if (n_big > 0) {
		text = batch_text(calls, n);
		goto cleanup;
	}
	replies = json_array();
	for (size_t i = 0; replies != NULL && i < n; i++)
		if (!calls[i].notification &&
		    json_array_append_new(replies, reply(calls[i].id, &calls[i].out)) != 0)
			oom = true;
	if (replies == NULL || oom)
		text = lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
	else if (json_array_size(replies) > 0)
		text = dump(json_incref(replies));
cleanup:
	for (size_t i = 0; calls != NULL && i < n; i++) {
		json_decref(calls[i].out.result);
		json_decref(calls[i].out.data);
	}
	free(calls);
	free(big);
	json_decref(replies);
	json_decref(no_params);
	json_decref(root);
	return text;
}

char *
lb_rpc_handle(const struct lb_rpc_ops *ops, const char *line, size_t len)
{
	return handle(ops, line, len, 0, NULL);
}

char *
lb_rpc_fail_request(const char *line, size_t len, int code, const char *msg)
{
	return handle(NULL, line, len, code, msg);
}

char *
lb_rpc_error_reply(int code, const char *message_text)
{
	json_t *r =
	        json_pack("{s:s, s:n, s:o}", "jsonrpc", "2.0", "id", "error",
	                  error_object(code, message_text != NULL ? message_text : "error", NULL));
	char *s;

	if (r == NULL)
		return NULL;
	s = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	return s;
}
