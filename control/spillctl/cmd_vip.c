/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "vip" commands: list, show, add (with its first backends) and remove
 * a VIP, each beside its row of the command table. A VIP is printed with its
 * settings and a table of its backends.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "args.h"
#include "conn.h"
#include "render.h"
#include "spillctl.h"
#include "table.h"

static const char *const g_keys[] = {"5tuple", "src_ip", "src_ip_dport", NULL};
static const char *const g_encaps[] = {"ipip", "gue", NULL};

/* Backend rows (address, name, weight, state) of a VIP object; @labelled
 * rows carry the word "weight" in a column of its own (no heading printed). */
static void
add_backend_rows(struct spillctl_table *t, const json_t *vip, bool labelled)
{
	const json_t *b;
	size_t i;

	json_array_foreach (json_object_get(vip, "backends"), i, b) {
		const char *addr = spillctl_jstr(b, "address", "?");
		const char *name = spillctl_jstr(b, "name", "");

		spillctl_table_add(t, "%s\t%s\t%s%lld\t%s", spillctl_esc(addr),
		                   strcmp(name, addr) != 0 ? spillctl_esc(name) : "",
		                   labelled ? "weight\t" : "",
		                   (long long)spillctl_jint(b, "weight"),
		                   spillctl_jtext(b, "state", "active"));
	}
}

static void
print_vip_detail(const json_t *vip)
{
	char vt[128];
	struct spillctl_table t;

	spillctl_vip_text(vip, vt, sizeof(vt));
	printf("vip       %s\nkey       %s\nencap     %s\nbackends  %zu\n", vt,
	       spillctl_jtext(vip, "key", "5tuple"), spillctl_jtext(vip, "encap", "ipip"),
	       json_array_size(json_object_get(vip, "backends")));
	if (json_array_size(json_object_get(vip, "backends")) == 0)
		return;
	spillctl_table_init(&t, "ADDRESS|NAME|>WEIGHT|STATE");
	add_backend_rows(&t, vip, false);
	fputc('\n', stdout);
	spillctl_table_print(&t, 2);
	spillctl_table_free(&t);
}

static int
cmd_vip_list(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	struct spillctl_table vt;
	struct spillctl_table bt;
	const json_t *v;
	json_t *res;
	size_t i;
	size_t *first;
	int rc = spillctl_call_print(cli, "vip_list", NULL, &spillctl_shape_vip_list, &res);

	(void)a;
	if (res == NULL)
		return rc;
	if (json_array_size(res) == 0) {
		fputs("no VIPs\n", stdout);
		json_decref(res);
		return rc;
	}
	/* Two tables whose columns are each aligned over every VIP; printed interleaved. */
	spillctl_table_init(&vt, "VIP|>BACKENDS|KEY|ENCAP");
	spillctl_table_init(&bt, "ADDRESS|NAME|WEIGHT|>W|STATE");
	first = calloc(json_array_size(res) + 1, sizeof(*first));
	json_array_foreach (res, i, v) {
		char text[128];

		spillctl_vip_text(v, text, sizeof(text));
		spillctl_table_add(&vt, "%s\t%zu\t%s\t%s", text,
		                   json_array_size(json_object_get(v, "backends")),
		                   spillctl_jtext(v, "key", "5tuple"),
		                   spillctl_jtext(v, "encap", "ipip"));
		if (first != NULL)
			first[i] = bt.nrows;
		add_backend_rows(&bt, v, true);
	}
	if (first != NULL)
		first[json_array_size(res)] = bt.nrows;
	spillctl_table_print_head(&vt, 0);
	for (i = 0; i < json_array_size(res); i++) {
		spillctl_table_print_rows(&vt, 0, i, i + 1);
		if (first != NULL)
			spillctl_table_print_rows(&bt, 4, first[i], first[i + 1]);
	}
	free(first);
	spillctl_table_free(&vt);
	spillctl_table_free(&bt);
	json_decref(res);
	return rc;
}

static const struct spillctl_command vip_list_cmd = {
        .name = "vip list",
        .synopsis = "",
        .summary = "list the VIPs with their backends",
        .help = "Prints one line per VIP (address:port/protocol, number of backends, hash\n"
                "key, encapsulation), each followed by its backends, indented: address,\n"
                "name (when it differs from the address), weight and state. Method\n"
                "\"vip_list\"; --json prints the array of VIP objects.\n"
                "\n"
                "Examples:\n"
                "  spillctl vip list\n"
                "  spillctl vip list --json | jq -r '.[] | .address'\n",
        .run = cmd_vip_list,
};

/* Calls @method with the VIP of the first argument (into @v); SPILLCTL_EXIT_USAGE if invalid. */
static int
call_vip(struct spillctl_cli *cli, const struct spillctl_args *a, const char *method,
         const struct spillctl_shape *shape, struct spillctl_vip_ref *v, json_t **human)
{
	*human = NULL;
	if (!spillctl_arg_vip(a, 0, v))
		return SPILLCTL_EXIT_USAGE;
	return spillctl_call_print(cli, method, spillctl_vip_ref_json(v), shape, human);
}

static int
cmd_vip_show(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	struct spillctl_vip_ref v;
	json_t *res;
	int rc = call_vip(cli, a, "vip_get", &spillctl_shape_vip, &v, &res);

	if (res != NULL) {
		print_vip_detail(res);
		json_decref(res);
	}
	return rc;
}

static const struct spillctl_command vip_show_cmd = {
        .name = "vip show",
        .synopsis = "VIP",
        .summary = "show one VIP",
        .help = "Prints the VIP's settings and a table of its backends (method \"vip_get\").\n"
                "Exit status 1 with \"not found (code -32001)\" if there is no such VIP.\n"
                "\n"
                "Examples:\n"
                "  spillctl vip show 192.0.2.10:80/tcp\n"
                "  spillctl vip show '[2001:db8::10]:443/udp'\n",
        .min_pos = 1,
        .max_pos = 1,
        .run = cmd_vip_show,
};

static int
cmd_vip_add(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	const char *key = spillctl_arg_get(a, "key");
	const char *encap = spillctl_arg_get(a, "encap");
	struct spillctl_vip_ref v;
	const char **bes;
	size_t nbes;
	json_t *params;
	json_t *res;
	int rc;

	if (!spillctl_arg_vip(a, 0, &v))
		return SPILLCTL_EXIT_USAGE;
	if (key != NULL && !spillctl_check_enum(a, "key", key, g_keys))
		return SPILLCTL_EXIT_USAGE;
	if (encap != NULL && !spillctl_check_enum(a, "encap", encap, g_encaps))
		return SPILLCTL_EXIT_USAGE;
	params = spillctl_vip_ref_json(&v);
	if (key != NULL)
		json_object_set_new(params, "key", json_string(key));
	if (encap != NULL)
		json_object_set_new(params, "encap", json_string(encap));
	bes = spillctl_arg_values(a, "backend", &nbes);
	if (nbes != 0) {
		json_t *arr = json_array();

		for (size_t i = 0; i < nbes; i++) {
			char addr[INET6_ADDRSTRLEN];
			long w;
			json_t *b;

			if (!spillctl_parse_backend_spec(bes[i], addr, sizeof(addr), &w)) {
				json_decref(arr);
				json_decref(params);
				return spillctl_usage_error(
				        a->cmd,
				        "--backend: invalid '%s' (expected ADDRESS or "
				        "ADDRESS:WEIGHT with a weight from 0 to 65535; "
				        "IPv6 in brackets: [ADDRESS] or [ADDRESS]:WEIGHT)",
				        bes[i]);
			}
			b = json_pack("{s:s}", "address", addr);
			if (w >= 0)
				json_object_set_new(b, "weight", json_integer(w));
			json_array_append_new(arr, b);
		}
		json_object_set_new(params, "backends", arr);
	}
	rc = spillctl_call_print(cli, "vip_add", params, &spillctl_shape_vip, &res);
	if (res != NULL) {
		fputs("added VIP\n", stdout);
		print_vip_detail(res);
		json_decref(res);
	}
	return rc;
}

static const struct spillctl_opt opts_vip_add[] = {
        {.name = "key", .has_arg = true},
        {.name = "encap", .has_arg = true},
        {.name = "backend", .has_arg = true, .repeat = true},
        {.name = NULL},
};

static const struct spillctl_command vip_add_cmd = {
        .name = "vip add",
        .synopsis = "VIP [--key KEY] [--encap ENCAP] [--backend ADDR[:WEIGHT]]...",
        .summary = "add a VIP, optionally with backends",
        .help = "Adds the VIP (method \"vip_add\"); it carries traffic when the command\n"
                "returns. Without --backend it has no backend and its packets are dropped\n"
                "(counted no_backend) until one is added.\n"
                "\n"
                "Options:\n"
                "  --key KEY              what the Maglev hash sees: 5tuple (the default),\n"
                "                         src_ip, or src_ip_dport\n"
                "  --encap ENCAP          ipip (the default) or gue\n"
                "  --backend ADDR[:WEIGHT]\n"
                "                         a backend, weight 0-65535 (default 1); repeat for\n"
                "                         more. IPv6 in brackets: [2001:db8::1] or\n"
                "                         [2001:db8::1]:3\n"
                "\n"
                "Examples:\n"
                "  spillctl vip add 192.0.2.10:80/tcp --backend 10.1.0.1 --backend 10.1.0.2:2\n"
                "  spillctl vip add 192.0.2.20/udp --key src_ip --encap gue --backend 10.1.0.9\n"
                "  spillctl vip add '[2001:db8::10]:443' --backend '[2001:db8:1::1]:3'\n",
        .opts = opts_vip_add,
        .min_pos = 1,
        .max_pos = 1,
        .run = cmd_vip_add,
};

static int
cmd_vip_remove(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	struct spillctl_vip_ref v;
	json_t *res;
	int rc = call_vip(cli, a, "vip_remove", &spillctl_shape_object, &v, &res);

	if (res != NULL) {
		printf("removed VIP %s%s%s:%lu/%s\n", strchr(v.address, ':') ? "[" : "", v.address,
		       strchr(v.address, ':') ? "]" : "", v.port, v.protocol);
		json_decref(res);
	}
	return rc;
}

static const struct spillctl_command vip_remove_cmd = {
        .name = "vip remove",
        .synopsis = "VIP",
        .summary = "remove a VIP and all its backends",
        .help = "Removes the VIP (method \"vip_remove\"); its traffic is no longer balanced\n"
                "once the command returns.\n"
                "\n"
                "Example:\n"
                "  spillctl vip remove 192.0.2.10:80/tcp\n",
        .min_pos = 1,
        .max_pos = 1,
        .run = cmd_vip_remove,
};

const struct spillctl_command *const spillctl_cmds_vip[] = {
        &vip_list_cmd, &vip_show_cmd, &vip_add_cmd, &vip_remove_cmd, NULL,
};
