/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "backend" commands: add, remove and change one backend of a VIP, and
 * the drain, down and up shorthands for its state, each beside its row of
 * the command table. Each prints the backend as the server now has it.
 * "backend list" prints every backend's operator state beside its health.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "args.h"
#include "conn.h"
#include "render.h"
#include "spillctl.h"
#include "table.h"

static const char *const g_states[] = {"active", "draining", "down", NULL};

/* Adds "state" from option --state to @o; false after a usage error. */
static bool
opt_state(const struct spillctl_args *a, json_t *o)
{
	const char *s = spillctl_arg_get(a, "state");

	if (s == NULL)
		return true;
	if (!spillctl_check_enum(a, "state", s, g_states))
		return false;
	json_object_set_new(o, "state", json_string(s));
	return true;
}

/* A backend name as the server takes it: 1 to 63 bytes of A-Z a-z 0-9 . _ : -. */
static bool
name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 63)
		return false;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") ==
	       n;
}

static void
print_backend(const char *verb, const json_t *b, const char *vt)
{
	const char *addr = spillctl_jstr(b, "address", "?");
	const char *name = spillctl_jstr(b, "name", "");

	bool named = *name && strcmp(name, addr) != 0;

	printf("%sbackend %s%s%s%s of %s: weight %lld, state %s\n", verb, spillctl_esc(addr),
	       named ? " (" : "", named ? spillctl_esc(name) : "", named ? ")" : "", vt,
	       (long long)spillctl_jint(b, "weight"), spillctl_jtext(b, "state", "active"));
}

/* Parses "VIP ADDR" into {"vip": ref, "address": ADDR} and the VIP's text. */
static json_t *
backend_ref(const struct spillctl_args *a, char *vt, size_t vtlen)
{
	char addr[INET6_ADDRSTRLEN];
	struct spillctl_vip_ref v;
	json_t *ref;

	if (!spillctl_arg_vip(a, 0, &v) || !spillctl_arg_address(a, 1, addr, sizeof(addr)))
		return NULL;
	ref = spillctl_vip_ref_json(&v);
	spillctl_vip_text(ref, vt, vtlen);
	return json_pack("{s:o, s:s}", "vip", ref, "address", addr);
}

/* backend_ref() with --weight and --state added; NULL after a usage error. */
static json_t *
backend_ref_opts(const struct spillctl_args *a, char *vt, size_t vtlen)
{
	json_t *params = backend_ref(a, vt, vtlen);

	if (params != NULL && (!spillctl_opt_uint(a, "weight", "weight", 0, 65535, params) ||
	                       !opt_state(a, params))) {
		json_decref(params);
		return NULL;
	}
	return params;
}

/* @method (backend_add or backend_set) with @params (stolen); prints the backend after @verb. */
static int
backend_call(struct spillctl_cli *cli, const char *method, json_t *params, const char *verb,
             const char *vt)
{
	json_t *res;
	int rc = spillctl_call_print(cli, method, params, &spillctl_shape_backend, &res);

	if (res != NULL) {
		print_backend(verb, res, vt);
		json_decref(res);
	}
	return rc;
}

static int
cmd_backend_add(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	const char *name = spillctl_arg_get(a, "name");
	char vt[128];
	json_t *params = backend_ref_opts(a, vt, sizeof(vt));

	if (params == NULL)
		return SPILLCTL_EXIT_USAGE;
	if (name != NULL) {
		if (!name_valid(name)) {
			json_decref(params);
			return spillctl_usage_error(a->cmd,
			                            "--name: expected 1 to 63 bytes of A-Z a-z 0-9 "
			                            ". _ : - (docs/control-protocol.md)");
		}
		json_object_set_new(params, "name", json_string(name));
	}
	return backend_call(cli, "backend_add", params, "added ", vt);
}

static const struct spillctl_opt opts_backend_add[] = {
        {.name = "weight", .has_arg = true},
        {.name = "name", .has_arg = true},
        {.name = "state", .has_arg = true},
        {.name = NULL},
};

static const struct spillctl_command backend_add_cmd = {
        .name = "backend add",
        .synopsis = "VIP ADDR [--weight W] [--name NAME] [--state STATE]",
        .summary = "add a backend to a VIP",
        .help = "Adds backend ADDR (IPv4 or IPv6, either family whatever the VIP's) to VIP\n"
                "(method \"backend_add\"). Only the flows whose table slots move to it\n"
                "change backend.\n"
                "\n"
                "Options:\n"
                "  --weight W       share of the table, 0-65535 (server default 1)\n"
                "  --name NAME      stable identity (default: the address), 1-63 bytes of\n"
                "                   A-Z a-z 0-9 . _ : -; the backend's slots derive from it\n"
                "  --state STATE    active (default), draining or down\n"
                "\n"
                "Examples:\n"
                "  spillctl backend add 192.0.2.10:80/tcp 10.1.0.3\n"
                "  spillctl backend add 192.0.2.10:80 10.1.0.4 --weight 2 --name web-4\n",
        .opts = opts_backend_add,
        .min_pos = 2,
        .max_pos = 2,
        .run = cmd_backend_add,
};

static int
cmd_backend_remove(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	char vt[128];
	json_t *params = backend_ref(a, vt, sizeof(vt));
	json_t *res;
	int rc;

	if (params == NULL)
		return SPILLCTL_EXIT_USAGE;
	rc = spillctl_call_print(cli, "backend_remove", json_incref(params), &spillctl_shape_object,
	                         &res);
	if (res != NULL) {
		printf("removed backend %s from %s\n", spillctl_jstr(params, "address", "?"), vt);
		json_decref(res);
	}
	json_decref(params);
	return rc;
}

static const struct spillctl_command backend_remove_cmd = {
        .name = "backend remove",
        .synopsis = "VIP ADDR",
        .summary = "remove a backend from a VIP",
        .help = "Removes backend ADDR from VIP (method \"backend_remove\"). Only the flows\n"
                "that were on it are given another backend. To let its connections finish\n"
                "first, drain it and remove it later.\n"
                "\n"
                "Example:\n"
                "  spillctl backend remove 192.0.2.10:80/tcp 10.1.0.3\n",
        .min_pos = 2,
        .max_pos = 2,
        .run = cmd_backend_remove,
};

static int
cmd_backend_set(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	char vt[128];
	json_t *params = backend_ref_opts(a, vt, sizeof(vt));

	if (params == NULL)
		return SPILLCTL_EXIT_USAGE;
	if (!spillctl_arg_flag(a, "weight") && !spillctl_arg_flag(a, "state")) {
		json_decref(params);
		return spillctl_usage_error(a->cmd, "backend set: give --weight, --state or both");
	}
	return backend_call(cli, "backend_set", params, "", vt);
}

static const struct spillctl_opt opts_backend_set[] = {
        {.name = "weight", .has_arg = true},
        {.name = "state", .has_arg = true},
        {.name = NULL},
};

static const struct spillctl_command backend_set_cmd = {
        .name = "backend set",
        .synopsis = "VIP ADDR [--weight W] [--state STATE]",
        .summary = "change a backend's weight or state",
        .help = "Changes the weight, the state or both (method \"backend_set\").\n"
                "\n"
                "Options:\n"
                "  --weight W       0-65535; 0 gives it no new flows, its flows continue\n"
                "  --state STATE    active: takes new flows; draining: keeps its flows,\n"
                "                   gets no new ones; down: gets nothing, its flows move\n"
                "\n"
                "Examples:\n"
                "  spillctl backend set 192.0.2.10:80/tcp 10.1.0.2 --weight 3\n"
                "  spillctl backend set 192.0.2.10:80/tcp 10.1.0.2 --state active --weight 1\n",
        .opts = opts_backend_set,
        .min_pos = 2,
        .max_pos = 2,
        .run = cmd_backend_set,
};

static int
set_state(struct spillctl_cli *cli, const struct spillctl_args *a, const char *state)
{
	char vt[128];
	json_t *params = backend_ref(a, vt, sizeof(vt));

	if (params == NULL)
		return SPILLCTL_EXIT_USAGE;
	json_object_set_new(params, "state", json_string(state));
	return backend_call(cli, "backend_set", params, "", vt);
}

static int
cmd_backend_drain(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	return set_state(cli, a, "draining");
}

static const struct spillctl_command backend_drain_cmd = {
        .name = "backend drain",
        .synopsis = "VIP ADDR",
        .summary = "stop new flows to a backend, keep its flows",
        .help = "Same as 'backend set VIP ADDR --state draining': the backend keeps its\n"
                "established flows and gets no new ones. Watch its new flows and packets\n"
                "fall with 'spillctl top', then remove it.\n"
                "\n"
                "Example:\n"
                "  spillctl backend drain 192.0.2.10:80/tcp 10.1.0.2\n",
        .min_pos = 2,
        .max_pos = 2,
        .run = cmd_backend_drain,
};

static int
cmd_backend_down(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	return set_state(cli, a, "down");
}

static const struct spillctl_command backend_down_cmd = {
        .name = "backend down",
        .synopsis = "VIP ADDR",
        .summary = "take a backend out now (its flows move)",
        .help = "Same as 'backend set VIP ADDR --state down': the backend gets no packets;\n"
                "its flows are given other backends.\n"
                "\n"
                "Example:\n"
                "  spillctl backend down 192.0.2.10:80/tcp 10.1.0.2\n",
        .min_pos = 2,
        .max_pos = 2,
        .run = cmd_backend_down,
};

static int
cmd_backend_up(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	return set_state(cli, a, "active");
}

static const struct spillctl_command backend_up_cmd = {
        .name = "backend up",
        .synopsis = "VIP ADDR",
        .summary = "put a backend back in service",
        .help = "Same as 'backend set VIP ADDR --state active'.\n"
                "\n"
                "Example:\n"
                "  spillctl backend up 192.0.2.10:80/tcp 10.1.0.2\n",
        .min_pos = 2,
        .max_pos = 2,
        .run = cmd_backend_up,
};

static int
cmd_backend_list(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	struct spillctl_table t;
	json_t *res = NULL;
	const json_t *b;
	size_t i;
	int rc;

	(void)a;
	rc = spillctl_call_print(cli, "health_list", NULL, &spillctl_shape_object, &res);
	if (rc != 0 || res == NULL)
		return rc;
	spillctl_table_init(&t, "VIP|ADDRESS|STATE|HEALTH|IN TABLE AS|CHECK|LAST|>OK|>FAILED|"
	                        ">CHANGED MS");
	json_array_foreach (json_object_get(res, "backends"), i, b) {
		char vt[128];

		snprintf(vt, sizeof(vt), "%s:%lld/%s", spillctl_jstr(b, "vip", "?"),
		         (long long)spillctl_jint(b, "port"), spillctl_jstr(b, "protocol", "?"));
		spillctl_table_add(
		        &t, "%s\t%s\t%s\t%s%s\t%s\t%s\t%s\t%lld\t%lld\t%lld", spillctl_esc(vt),
		        spillctl_esc(spillctl_jstr(b, "address", "?")),
		        spillctl_jtext(b, "state", "?"), spillctl_jtext(b, "health", "?"),
		        json_is_true(json_object_get(b, "kept")) ? " (kept)" : "",
		        spillctl_jtext(b, "effective", "?"), spillctl_jtext(b, "check", "?"),
		        spillctl_jtext(b, "last_result", "?"),
		        (long long)spillctl_jint(b, "probes_ok"),
		        (long long)(spillctl_jint(b, "probes_failed") +
		                    spillctl_jint(b, "timeouts")),
		        (long long)spillctl_jint(b, "last_change_ms"));
	}
	spillctl_table_print(&t, 0);
	spillctl_table_free(&t);
	json_decref(res);
	return 0;
}

static const struct spillctl_command backend_list_cmd = {
        .name = "backend list",
        .synopsis = "",
        .summary = "list every backend with its health",
        .help = "Prints one line per backend of every VIP (method \"health_list\"): the\n"
                "operator's state, the health checks' verdict (up, down, unknown; \"(kept)\"\n"
                "when the VIP fails open), the state it has in the Maglev table, the check\n"
                "type, the last probe's result, probes passed and failed, and the clock\n"
                "(ms, monotonic) of the last health change. --json prints the reply,\n"
                "recent health events included.\n"
                "\n"
                "Example:\n"
                "  spillctl backend list\n",
        .min_pos = 0,
        .max_pos = 0,
        .run = cmd_backend_list,
};

const struct spillctl_command *const spillctl_cmds_backend[] = {
        &backend_list_cmd,  &backend_add_cmd,  &backend_remove_cmd, &backend_set_cmd,
        &backend_drain_cmd, &backend_down_cmd, &backend_up_cmd,     NULL,
};
