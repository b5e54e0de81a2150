/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw JSON-RPC from the command line: "call" sends one request with any
 * method and params, "batch" sends a file of calls as one JSON-RPC batch
 * (one transaction on the server) and reports each call's outcome; each
 * beside its row of the command table.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "args.h"
#include "conn.h"
#include "render.h"
#include "spillctl.h"

/* Reads JSON from @name ("-": standard input); NULL after a usage error. */
static json_t *
load_json_arg(const struct spillctl_args *a, const char *what, const char *name, bool text)
{
	json_error_t err;
	json_t *v;

	if (strcmp(name, "-") == 0)
		v = json_loadf(stdin, JSON_REJECT_DUPLICATES, &err);
	else if (text)
		v = json_loads(name, JSON_REJECT_DUPLICATES, &err);
	else
		v = json_load_file(name, JSON_REJECT_DUPLICATES, &err);
	if (v == NULL) {
		if (err.line > 0)
			spillctl_usage_error(a->cmd, "%s: %d:%d: %s", what, err.line, err.column,
			                     err.text);
		else
			spillctl_usage_error(a->cmd, "%s: %s", what, err.text);
	}
	return v;
}

static int
cmd_call(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	const char *method = a->pos[0];
	json_t *params = NULL;

	if (*method == '\0')
		return spillctl_usage_error(a->cmd, "call: empty METHOD");
	if (a->npos > 1) {
		params = load_json_arg(a, "PARAMS-JSON", a->pos[1], true);
		if (params == NULL)
			return SPILLCTL_EXIT_USAGE;
		if (!json_is_object(params)) {
			json_decref(params);
			return spillctl_usage_error(a->cmd, "PARAMS-JSON must be a JSON object");
		}
	}
	return spillctl_call_json(cli, method, params, &spillctl_shape_any);
}

static const struct spillctl_command call_cmd = {
        .name = "call",
        .synopsis = "METHOD [PARAMS-JSON]",
        .summary = "send any request (raw JSON-RPC)",
        .help = "Sends one request with method METHOD and params PARAMS-JSON, a JSON object\n"
                "('-' reads it from standard input), and prints the result as JSON.\n"
                "Methods are listed in docs/control-protocol.md.\n"
                "\n"
                "Examples:\n"
                "  spillctl call vip_list\n"
                "  spillctl call backend_set '{\"vip\":{\"address\":\"192.0.2.10\",\"port\":80,\n"
                "    \"protocol\":\"tcp\"},\"address\":\"10.1.0.2\",\"weight\":0}'\n",
        .min_pos = 1,
        .max_pos = 2,
        .run = cmd_call,
};

/* Checks the batch file's calls: {"method": string, "params": object?} each. */
static bool
batch_valid(const struct spillctl_args *a, const json_t *calls)
{
	json_t *c;
	size_t i;

	if (!json_is_array(calls) || json_array_size(calls) == 0) {
		spillctl_usage_error(a->cmd, "batch: expected a non-empty JSON array of calls");
		return false;
	}
	json_array_foreach (calls, i, c) {
		const char *k;
		const json_t *v;

		if (!json_is_object(c)) {
			spillctl_usage_error(a->cmd, "batch: [%zu]: expected an object", i);
			return false;
		}
		if (!json_is_string(json_object_get(c, "method"))) {
			spillctl_usage_error(a->cmd, "batch: [%zu].method: expected a string", i);
			return false;
		}
		json_object_foreach (c, k, v) {
			if (strcmp(k, "method") == 0)
				continue;
			if (strcmp(k, "params") == 0 && json_is_object(v))
				continue;
			spillctl_usage_error(
			        a->cmd, "batch: [%zu].%s: %s", i, k,
			        strcmp(k, "params") == 0
			                ? "expected an object"
			                : "unknown field (a call is {\"method\", \"params\"}; "
			                  "ids are added by spillctl)");
			return false;
		}
	}
	return true;
}

static int
cmd_batch(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	json_t *calls = load_json_arg(a, a->pos[0], a->pos[0], false);
	json_t *req;
	json_t *reply = NULL;
	json_t *ordered = NULL;
	const json_t *c;
	const json_t *failed = NULL;
	size_t n;
	size_t i;
	int rc;

	if (calls == NULL)
		return SPILLCTL_EXIT_USAGE;
	if (!batch_valid(a, calls)) {
		json_decref(calls);
		return SPILLCTL_EXIT_USAGE;
	}
	n = json_array_size(calls);
	req = json_array();
	json_array_foreach (calls, i, c) {
		json_t *p = json_object_get(c, "params");

		json_array_append_new(
		        req, spillctl_request(cli, json_string_value(json_object_get(c, "method")),
		                              p != NULL ? json_incref(p) : NULL));
	}
	rc = spillctl_exchange(cli, req, &reply);
	if (rc != SPILLCTL_EXIT_OK)
		goto out;

	/* The whole batch refused (empty, too long, unreadable): one error object. */
	if (json_is_object(reply)) {
		json_t *res;
		json_t *err;
		char why[256];

		if (!spillctl_reply_valid(reply, json_null(), &res, &err, why, sizeof(why))) {
			rc = spillctl_io_error(cli, "malformed reply to a batch: %s", why);
			goto out;
		}
		if (err == NULL) {
			rc = spillctl_io_error(cli, "malformed reply to a batch: a result where an "
			                            "array of replies or one error was expected");
			goto out;
		}
		spillctl_report_error(cli, err);
		rc = SPILLCTL_EXIT_SERVER;
		goto out;
	}
	if (!json_is_array(reply) || json_array_size(reply) != n) {
		rc = spillctl_io_error(cli, "malformed reply to a batch: expected %zu replies", n);
		goto out;
	}
	/* Replies may come in any order: put them in request order by id. */
	ordered = json_array();
	for (i = 0; i < n; i++) {
		const json_t *want = json_object_get(json_array_get(req, i), "id");
		json_t *found = NULL;
		json_t *r;
		size_t j;

		json_array_foreach (reply, j, r) {
			if (json_equal(json_object_get(r, "id"), want)) {
				found = r;
				break;
			}
		}
		{
			json_t *res;
			json_t *err;
			char why[256] = "no reply with its id";

			if (found == NULL ||
			    !spillctl_reply_valid(found, want, &res, &err, why, sizeof(why))) {
				rc = spillctl_io_error(cli,
				                       "malformed reply to a batch: call %zu: %s",
				                       i + 1, why);
				goto out;
			}
			if (err != NULL &&
			    (failed == NULL || (spillctl_jint(failed, "code") == -32010 &&
			                        spillctl_jint(err, "code") != -32010)))
				failed = err;
		}
		json_array_append(ordered, found);
	}
	if (failed != NULL) {
		fprintf(stderr, "spillctl: %s (code %lld)\n",
		        spillctl_jtext(failed, "message", "?"),
		        (long long)spillctl_jint(failed, "code"));
		rc = SPILLCTL_EXIT_SERVER;
	}
	if (cli->json) {
		json_t *out = json_array();
		json_t *r;

		/* Success: the results in call order. Failure: the reply objects. */
		json_array_foreach (ordered, i, r) {
			json_array_append(out, failed != NULL ? r : json_object_get(r, "result"));
		}
		spillctl_print_json(out);
		json_decref(out);
	} else {
		const json_t *r;

		json_array_foreach (ordered, i, r) {
			const json_t *err = json_object_get(r, "error");
			const char *m = json_string_value(
			        json_object_get(json_array_get(calls, i), "method"));

			if (err != NULL)
				printf("%zu  %s: %s (code %lld)\n", i + 1, spillctl_esc(m),
				       spillctl_jtext(err, "message", "?"),
				       (long long)spillctl_jint(err, "code"));
			else
				printf("%zu  %s: ok\n", i + 1, spillctl_esc(m));
		}
		if (failed != NULL)
			fputs("batch not applied (no change was made)\n", stdout);
		else
			printf("batch applied: %zu calls\n", n);
	}
out:
	json_decref(ordered);
	json_decref(reply);
	json_decref(req);
	json_decref(calls);
	return rc;
}

static const struct spillctl_command batch_cmd = {
        .name = "batch",
        .synopsis = "FILE|-",
        .summary = "apply several calls as one transaction",
        .help = "Reads a JSON array of calls, each {\"method\": M, \"params\": {...}}, from FILE\n"
                "(or standard input for -) and sends them as one JSON-RPC batch: the server\n"
                "applies all of them with one table rebuild, or none. spillctl numbers the\n"
                "requests itself. Prints each call's outcome; with --json, the array of\n"
                "results in call order, or, if the batch failed, the array of replies.\n"
                "Exit status 1 if the batch was not applied; the failing call's error is\n"
                "printed (the others report \"transaction aborted\", code -32010).\n"
                "\n"
                "Example (add 10.1.0.3 and drain 10.1.0.1 in one step):\n"
                "  spillctl batch - <<'EOF'\n"
                "  [{\"method\": \"backend_add\", \"params\": {\"vip\": {\"address\": "
                "\"192.0.2.10\",\n"
                "     \"port\": 80, \"protocol\": \"tcp\"}, \"address\": \"10.1.0.3\"}},\n"
                "   {\"method\": \"backend_set\", \"params\": {\"vip\": {\"address\": "
                "\"192.0.2.10\",\n"
                "     \"port\": 80, \"protocol\": \"tcp\"}, \"address\": \"10.1.0.1\",\n"
                "     \"state\": \"draining\"}}]\n"
                "  EOF\n",
        .min_pos = 1,
        .max_pos = 1,
        .run = cmd_batch,
};

const struct spillctl_command *const spillctl_cmds_batch[] = {
        &call_cmd,
        &batch_cmd,
        NULL,
};
