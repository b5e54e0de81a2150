/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "hot" commands on the hot-key controller: list the overrides, show the
 * recent events, change the parameters, pin and unpin one key by hand; each
 * beside its row of the command table.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "control/model/params.h"
#include "args.h"
#include "conn.h"
#include "render.h"
#include "spillctl.h"
#include "table.h"

/* A JSON number as text: integers as they are, reals with %g; a string
 * (hot_list's "sample": "auto") escaped. */
static void
num_text(const json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%g", json_real_value(v));
	else if (json_is_string(v))
		snprintf(buf, len, "%s", spillctl_esc(json_string_value(v)));
	else
		snprintf(buf, len, "?");
}

/* "name value, name value, ..." of an object's members, in their order. */
static void
print_members(const char *label, const json_t *o)
{
	const char *k;
	const json_t *v;
	bool any = false;

	printf("%s", label);
	json_object_foreach ((json_t *)o, k, v) {
		char n[64];

		num_text(v, n, sizeof(n));
		printf("%s%s %s", any ? ", " : "", spillctl_esc(k), n);
		any = true;
	}
	fputs(any ? "\n" : "(none)\n", stdout);
}

/* Hot keys listed without an override: "report" VIPs' keys and elephants. */
static void
print_reported(const json_t *rep)
{
	struct spillctl_table t;
	const json_t *o;
	size_t i;

	if (json_array_size(rep) == 0)
		return;
	fputs("\nlisted, not overridden\n", stdout);
	spillctl_table_init(&t, "VIP|KEY|>SHARE|KIND|>SINCE WINDOW");
	json_array_foreach (rep, i, o) {
		struct spillctl_hot_text ht;
		const char *kind = json_string_value(json_object_get(o, "kind"));
		char sh[32];

		spillctl_hot_text_get(o, &ht);
		spillctl_share_text(o, sh, sizeof(sh));
		spillctl_table_add(&t, "%s\t%s\t%s\t%s\t%lld", ht.vip, ht.key, sh,
		                   kind != NULL && strcmp(kind, "elephant") == 0 ? "elephant"
		                                                                 : "report",
		                   (long long)spillctl_jint(o, "since_window"));
	}
	spillctl_table_print(&t, 0);
	spillctl_table_free(&t);
}

static int
cmd_hot_list(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	json_t *res;
	int rc = spillctl_call_print(cli, "hot_list", NULL, &spillctl_shape_hot_list, &res);
	const json_t *ov;

	(void)a;
	if (res == NULL)
		return rc;
	ov = json_object_get(res, "overrides");
	printf("window    %lld\n", (long long)spillctl_jint(res, "window"));
	print_members("params    ", json_object_get(res, "params"));
	print_members("counters  ", json_object_get(res, "counters"));
	if (json_array_size(ov) == 0 && json_array_size(json_object_get(res, "reported")) == 0) {
		fputs("\nno hot keys\n", stdout);
	} else if (json_array_size(ov) != 0) {
		fputc('\n', stdout);
		spillctl_print_hot_overrides(ov, false, 0);
	}
	print_reported(json_object_get(res, "reported"));
	json_decref(res);
	return rc;
}

static const struct spillctl_command hot_list_cmd = {
        .name = "hot list",
        .synopsis = "",
        .summary = "list the hot keys and their replicas",
        .help = "Prints the hot-key controller's state (method \"hot_list\"): the current\n"
                "window, the parameters, the counters (promotions, demotions, re-plans,\n"
                "active and pinned overrides), and one row per hot key: its VIP, the key\n"
                "(written as 'hot pin' takes it: SRC [sport P] [dport P]), its latest share\n"
                "of the VIP's traffic, its replicas (how many, and the first three\n"
                "backends, its Maglev home first), the window it was promoted in, and\n"
                "whether an operator pinned it. Fails with code -32603 \"hot keys are\n"
                "disabled\" when spillwayd runs with hot.enabled false.\n"
                "\n"
                "Examples:\n"
                "  spillctl hot list\n"
                "  spillctl --json hot list | jq '.overrides[] | select(.share > 0.05)'\n",
        .run = cmd_hot_list,
};

static int
cmd_hot_events(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	json_t *res;
	int rc = spillctl_call_print(cli, "hot_events", NULL, &spillctl_shape_hot_events, &res);
	const json_t *e;
	struct spillctl_table t;
	size_t i;

	(void)a;
	if (res == NULL)
		return rc;
	if (json_array_size(res) == 0) {
		fputs("no events\n", stdout);
		json_decref(res);
		return rc;
	}
	spillctl_table_init(&t, ">WINDOW|EVENT|VIP|KEY|>SHARE|>REPLICAS");
	json_array_foreach (res, i, e) {
		struct spillctl_hot_text ht;
		char sh[32];

		spillctl_hot_text_get(e, &ht);
		spillctl_table_add(&t, "%lld\t%s\t%s\t%s\t%s\t%s",
		                   (long long)spillctl_jint(e, "window"),
		                   spillctl_jtext(e, "event", "?"), ht.vip, ht.key,
		                   spillctl_share_text(e, sh, sizeof(sh)), ht.replicas);
	}
	spillctl_table_print(&t, 0);
	spillctl_table_free(&t);
	json_decref(res);
	return rc;
}

static const struct spillctl_command hot_events_cmd = {
        .name = "hot events",
        .synopsis = "",
        .summary = "show recent promotions, demotions and re-plans",
        .help = "Prints the controller's recent events, oldest first (method \"hot_events\"),\n"
                "one line each: the window, the event (promote, demote, replan, pin or\n"
                "unpin), the VIP, the key, its share then and its number of replicas.\n"
                "\n"
                "Examples:\n"
                "  spillctl hot events\n"
                "  spillctl --json hot events | jq -c '.[] | select(.event == \"promote\")'\n",
        .run = cmd_hot_events,
};

/*
 * --NAME (NAME a hot_set parameter, '_' spelt '-') into @p, checked against
 * the daemon's own table (control/model/params.h): "auto" where the
 * parameter takes it, else an integer or a number in its range.
 */
static bool
opt_param(const struct spillctl_args *a, const struct lb_param *prm, json_t *p)
{
	char opt[32], range[64], *end;
	const char *s;
	double v;

	snprintf(opt, sizeof(opt), "%s", prm->name);
	for (char *c = opt; *c != '\0'; c++)
		if (*c == '_')
			*c = '-';
	s = spillctl_arg_get(a, opt);
	if (s == NULL)
		return true;
	if (prm->auto_ok && strcmp(s, "auto") == 0) {
		json_object_set_new(p, prm->name, json_string("auto"));
		return true;
	}
	errno = 0;
	v = prm->type == LB_PARAM_INT ? (double)strtoll(s, &end, 10) : strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !lb_param_ok(prm, v) ||
	    (prm->auto_ok && v == prm->auto_value)) {
		spillctl_usage_error(a->cmd, "--%s: '%s' is not %s%s in %s", opt, s,
		                     prm->auto_ok ? "\"auto\" or " : "",
		                     prm->type == LB_PARAM_INT ? "an integer" : "a number",
		                     lb_param_range(prm, range, sizeof(range)));
		return false;
	}
	json_object_set_new(p, prm->name,
	                    prm->type == LB_PARAM_INT ? json_integer((json_int_t)v) : json_real(v));
	return true;
}

static int
cmd_hot_set(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	json_t *p = json_object();
	json_t *res;
	int rc;

	for (int i = 0; i < LB_HOT_P_N; i++) {
		if (lb_hot_param_table[i].where != LB_PARAM_SOCKET)
			continue;
		if (!opt_param(a, &lb_hot_param_table[i], p)) {
			json_decref(p);
			return SPILLCTL_EXIT_USAGE;
		}
	}
	if (json_object_size(p) == 0) {
		json_decref(p);
		return spillctl_usage_error(a->cmd,
		                            "hot set: give at least one of --threshold, "
		                            "--threshold-low, --epsilon, --demote-windows, "
		                            "--window-ms, --sample, --margin, --ewma-alpha");
	}
	rc = spillctl_call_print(cli, "hot_set", p, &spillctl_shape_hot_set, &res);
	if (res != NULL) {
		print_members("hot-key parameters: ", res);
		json_decref(res);
	}
	return rc;
}

static const struct spillctl_opt opts_hot_set[] = {
        {.name = "threshold", .has_arg = true},
        {.name = "threshold-low", .has_arg = true},
        {.name = "epsilon", .has_arg = true},
        {.name = "demote-windows", .has_arg = true},
        {.name = "window-ms", .has_arg = true},
        {.name = "sample", .has_arg = true},
        {.name = "margin", .has_arg = true},
        {.name = "ewma-alpha", .has_arg = true},
        {.name = NULL},
};

static const struct spillctl_command hot_set_cmd = {
        .name = "hot set",
        .synopsis = "[--threshold auto|X] [--threshold-low auto|X] [--epsilon X] "
                    "[--demote-windows N] [--window-ms N] [--sample auto|N] [--margin X] "
                    "[--ewma-alpha X]",
        .summary = "change the hot-key parameters",
        .help = "Changes the controller's parameters from the next window (method\n"
                "\"hot_set\"); at least one option. Prints the parameters now in force.\n"
                "The change is runtime state, not configuration: the configuration's \"hot\"\n"
                "section is not rewritten.\n"
                "\n"
                "Options:\n"
                "  --threshold auto|X   promote a key at this share of its VIP, above 0, at\n"
                "                       most 1 (0.01 = 1%); auto: where its home would pass\n"
                "                       the cap\n"
                "  --threshold-low auto|X demote below this share, above 0, at most the\n"
                "                       threshold; auto: half a numeric threshold\n"
                "  --epsilon X          load cap: backends stay under (1 + X) times the\n"
                "                       average, 0.001-100\n"
                "  --demote-windows N   demote after N consecutive windows below the lower\n"
                "                       threshold, 1-1000\n"
                "  --window-ms N        the measurement window, 10-60000 ms\n"
                "  --sample auto|N      the sketches sample 1 packet in 2^N, 0-8; auto:\n"
                "                       each core from its measured rate\n"
                "  --margin X           plans stay this fraction below the cap, 0-0.5\n"
                "                       (0: none)\n"
                "  --ewma-alpha X       weight of the newest window in the smoothed loads,\n"
                "                       0.01-1\n"
                "\n"
                "Examples:\n"
                "  spillctl hot set --threshold 0.05 --threshold-low 0.02\n"
                "  spillctl hot set --epsilon 0.1 --window-ms 200\n"
                "  spillctl hot set --sample 2\n",
        .opts = opts_hot_set,
        .run = cmd_hot_set,
};

/* "VIP SRC [--sport P] [--dport P]" as {"vip": ..., "key": {...}}; NULL after a usage error. */
static json_t *
hot_key_params(const struct spillctl_args *a, char *vt, size_t vtlen, char *kt, size_t ktlen)
{
	static const char *const ports[] = {"sport", "dport"};
	char src[INET6_ADDRSTRLEN];
	struct spillctl_vip_ref v;
	json_t *key, *p;

	if (!spillctl_arg_vip(a, 0, &v))
		return NULL;
	if (!spillctl_parse_address(a->pos[1], src, sizeof(src))) {
		spillctl_usage_error(a->cmd,
		                     "invalid source address '%s': not an IPv4 or IPv6 address",
		                     a->pos[1]);
		return NULL;
	}
	key = json_pack("{s:s}", "src", src);
	for (size_t i = 0; i < 2; i++) {
		const char *s = spillctl_arg_get(a, ports[i]);
		unsigned long port;

		if (s == NULL)
			continue;
		if (!spillctl_parse_ulong(s, 65535, &port)) {
			spillctl_usage_error(a->cmd, "--%s: '%s' is not a port from 0 to 65535",
			                     ports[i], s);
			json_decref(key);
			return NULL;
		}
		json_object_set_new(key, ports[i], json_integer((json_int_t)port));
	}
	p = json_pack("{s:o, s:o}", "vip", spillctl_vip_ref_json(&v), "key", key);
	spillctl_vip_text(json_object_get(p, "vip"), vt, vtlen);
	spillctl_hot_key_text(key, kt, ktlen);
	return p;
}

static int
cmd_hot_pin(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	const char *rs = spillctl_arg_get(a, "replicas");
	char vt[128], kt[128];
	unsigned long r = 0;
	json_t *p, *res;
	int rc;

	if (rs != NULL && !spillctl_parse_ulong(rs, 256, &r))
		return spillctl_usage_error(a->cmd,
		                            "--replicas: '%s' is not an integer from 0 to 256", rs);
	p = hot_key_params(a, vt, sizeof(vt), kt, sizeof(kt));
	if (p == NULL)
		return SPILLCTL_EXIT_USAGE;
	if (rs != NULL)
		json_object_set_new(p, "replicas", json_integer((json_int_t)r));
	rc = spillctl_call_print(cli, "hot_pin", p, &spillctl_shape_object, &res);
	if (res != NULL) {
		if (r != 0)
			printf("pinned %s of %s over %lu replicas\n", kt, vt, r);
		else
			printf("pinned %s of %s (replicas from its share)\n", kt, vt);
		json_decref(res);
	}
	return rc;
}

static const struct spillctl_opt opts_hot_pin[] = {
        {.name = "sport", .has_arg = true},
        {.name = "dport", .has_arg = true},
        {.name = "replicas", .has_arg = true},
        {.name = NULL},
};

static const struct spillctl_command hot_pin_cmd = {
        .name = "hot pin",
        .synopsis = "VIP SRC [--sport P] [--dport P] [--replicas R]",
        .summary = "spread one key by hand, never demoted",
        .help = "Pins an override for one key of VIP (method \"hot_pin\"): its new flows\n"
                "spread over R replicas, and the controller never demotes it. Established\n"
                "flows stay on their backend. The key is what the VIP's key mode hashes:\n"
                "\n"
                "  src_ip         SRC\n"
                "  src_ip_dport   SRC --dport P (the VIP's port by default)\n"
                "  5tuple         SRC --sport P --dport P (the VIP's port by default);\n"
                "                 the destination and protocol are the VIP's\n"
                "\n"
                "An option the key mode does not use is refused by the server (code -32602).\n"
                "\n"
                "Options:\n"
                "  --sport P      the client's source port (5tuple), 0-65535\n"
                "  --dport P      the destination port (src_ip_dport, 5tuple), 0-65535\n"
                "  --replicas R   number of backends, 1-256; 0 or absent: computed from\n"
                "                 the key's share\n"
                "\n"
                "Examples:\n"
                "  spillctl hot pin 192.0.2.20:443/tcp 198.51.100.7 --replicas 8\n"
                "  spillctl hot pin 192.0.2.30/udp 203.0.113.9 --dport 53\n"
                "  spillctl hot pin 192.0.2.10:80/tcp 198.51.100.7 --sport 40000\n"
                "  spillctl hot pin '[2001:db8::10]:443/udp' 2001:db8:5::7\n",
        .opts = opts_hot_pin,
        .min_pos = 2,
        .max_pos = 2,
        .run = cmd_hot_pin,
};

static int
cmd_hot_unpin(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	char vt[128], kt[128];
	json_t *p = hot_key_params(a, vt, sizeof(vt), kt, sizeof(kt));
	json_t *res;
	int rc;

	if (p == NULL)
		return SPILLCTL_EXIT_USAGE;
	rc = spillctl_call_print(cli, "hot_unpin", p, &spillctl_shape_object, &res);
	if (res != NULL) {
		printf("unpinned %s of %s (demoted automatically once its share falls)\n", kt, vt);
		json_decref(res);
	}
	return rc;
}

static const struct spillctl_opt opts_hot_unpin[] = {
        {.name = "sport", .has_arg = true},
        {.name = "dport", .has_arg = true},
        {.name = NULL},
};

static const struct spillctl_command hot_unpin_cmd = {
        .name = "hot unpin",
        .synopsis = "VIP SRC [--sport P] [--dport P]",
        .summary = "hand a pinned key back to the controller",
        .help = "Unpins the override of one key (method \"hot_unpin\"), written as for 'hot\n"
                "pin'. The override stays until the controller demotes it (its share below\n"
                "the lower threshold for --demote-windows windows). Fails with code -32001\n"
                "if the key has no override.\n"
                "\n"
                "Example:\n"
                "  spillctl hot unpin 192.0.2.20:443/tcp 198.51.100.7\n",
        .opts = opts_hot_unpin,
        .min_pos = 2,
        .max_pos = 2,
        .run = cmd_hot_unpin,
};

const struct spillctl_command *const spillctl_cmds_hot[] = {
        &hot_list_cmd, &hot_events_cmd, &hot_set_cmd, &hot_pin_cmd, &hot_unpin_cmd, NULL,
};
