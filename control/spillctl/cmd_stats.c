/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counter commands: "stats" (totals, drop reasons, per VIP and backend,
 * per core, hot keys) and "table" (a VIP's Maglev table shares, or every
 * slot), each beside its row of the command table.
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

/* The totals' counters in a fixed order, then any drop reason that is not zero. */
static void
print_totals(const json_t *tot)
{
	static const char *const flows[] = {"flow_hits",     "flow_misses", "flow_evictions",
	                                    "flow_rechosen", "fragments",   "icmp_errors"};
	json_t *drops = json_object_get(tot, "drops");
	const char *reason;
	const json_t *v;
	bool any = false;

	printf("totals    rx %lld packets %lld bytes, forwarded %lld (%lld bytes), "
	       "icmp_sent %lld, exception %lld, dropped %lld\n",
	       (long long)spillctl_jint(tot, "rx_packets"),
	       (long long)spillctl_jint(tot, "rx_bytes"),
	       (long long)spillctl_jint(tot, "forwarded"),
	       (long long)spillctl_jint(tot, "forwarded_bytes"),
	       (long long)spillctl_jint(tot, "icmp_sent"),
	       (long long)spillctl_jint(tot, "exception"),
	       (long long)spillctl_jint(tot, "dropped"));
	fputs("flows    ", stdout);
	for (size_t i = 0; i < sizeof(flows) / sizeof(flows[0]); i++)
		printf("%s %s %lld", i ? "," : "",
		       flows[i] + (strncmp(flows[i], "flow_", 5) ? 0 : 5),
		       (long long)spillctl_jint(tot, flows[i]));
	fputs("\ndrops     ", stdout);
	json_object_foreach (drops, reason, v) {
		if (json_integer_value(v) == 0)
			continue;
		printf("%s%s %lld", any ? ", " : "", spillctl_esc(reason),
		       (long long)json_integer_value(v));
		any = true;
	}
	fputs(any ? "\n" : "(none)\n", stdout);
}

static void
print_stats_vips(const json_t *vips)
{
	const json_t *v;
	const json_t *b;
	struct spillctl_table t;
	size_t i;
	size_t j;

	if (json_array_size(vips) == 0) {
		fputs("no VIPs\n", stdout);
		return;
	}
	spillctl_table_init(&t, "VIP / BACKEND|>WEIGHT|STATE|>PACKETS|>BYTES|>NEW FLOWS");
	json_array_foreach (vips, i, v) {
		char vt[128];

		spillctl_vip_text(v, vt, sizeof(vt));
		spillctl_table_add(&t, "%s\t\t\t%lld\t%lld\t%lld", vt,
		                   (long long)spillctl_jint(v, "packets"),
		                   (long long)spillctl_jint(v, "bytes"),
		                   (long long)spillctl_jint(v, "new_flows"));
		json_array_foreach (json_object_get(v, "backends"), j, b) {
			const char *addr = spillctl_jstr(b, "address", "?");
			const char *name = spillctl_jstr(b, "name", "");
			bool named = *name && strcmp(name, addr) != 0;
			char st[64];

			/* A learned path MTU toward the backend shows with its state. */
			if (json_is_integer(json_object_get(b, "path_mtu")))
				snprintf(st, sizeof(st), "%s, path mtu %lld",
				         spillctl_jtext(b, "state", ""),
				         (long long)spillctl_jint(b, "path_mtu"));
			else
				snprintf(st, sizeof(st), "%s", spillctl_jtext(b, "state", ""));
			spillctl_table_add(&t, "  %s%s%s%s\t%lld\t%s\t%lld\t%lld\t%lld",
			                   spillctl_esc(addr), named ? " (" : "",
			                   named ? spillctl_esc(name) : "", named ? ")" : "",
			                   (long long)spillctl_jint(b, "weight"), st,
			                   (long long)spillctl_jint(b, "packets"),
			                   (long long)spillctl_jint(b, "bytes"),
			                   (long long)spillctl_jint(b, "new_flows"));
		}
	}
	spillctl_table_print(&t, 0);
	spillctl_table_free(&t);
}

static void
print_cores(const json_t *cores)
{
	const json_t *c;
	struct spillctl_table t;
	size_t i;

	if (json_array_size(cores) == 0)
		return;
	spillctl_table_init(&t, ">LCORE|>RX|>FORWARDED|>DROPPED|>FLOW HITS|>FLOW MISSES");
	json_array_foreach (cores, i, c) {
		spillctl_table_add(&t, "%lld\t%lld\t%lld\t%lld\t%lld\t%lld",
		                   (long long)spillctl_jint(c, "lcore"),
		                   (long long)spillctl_jint(c, "rx_packets"),
		                   (long long)spillctl_jint(c, "forwarded"),
		                   (long long)spillctl_jint(c, "dropped"),
		                   (long long)spillctl_jint(c, "flow_hits"),
		                   (long long)spillctl_jint(c, "flow_misses"));
	}
	fputc('\n', stdout);
	spillctl_table_print(&t, 0);
	spillctl_table_free(&t);
}

/* The stats VIP object matching @v, or NULL. */
static json_t *
stats_find_vip(const json_t *stats, const struct spillctl_vip_ref *v)
{
	json_t *e;
	size_t i;

	json_array_foreach (json_object_get(stats, "vips"), i, e) {
		char addr[INET6_ADDRSTRLEN];

		if (spillctl_parse_address(spillctl_jstr(e, "address", ""), addr, sizeof(addr)) &&
		    strcmp(addr, v->address) == 0 &&
		    spillctl_jint(e, "port") == (json_int_t)v->port &&
		    strcmp(spillctl_jstr(e, "protocol", ""), v->protocol) == 0)
			return e;
	}
	return NULL;
}

static int
cmd_stats(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	const char *vip_arg = spillctl_arg_get(a, "vip");
	struct spillctl_vip_ref v;
	json_t *res;
	json_t *one = NULL;
	int rc;

	if (vip_arg != NULL) {
		const char *why;

		if (!spillctl_parse_vip(vip_arg, &v, &why))
			return spillctl_usage_error(a->cmd, "--vip: invalid VIP '%s': %s", vip_arg,
			                            why);
	}
	rc = spillctl_call(cli, "stats", NULL, &spillctl_shape_stats, &res);
	if (rc != SPILLCTL_EXIT_OK)
		return rc;
	if (vip_arg != NULL) {
		one = stats_find_vip(res, &v);
		if (one == NULL) {
			fprintf(stderr, "spillctl: no counters for VIP %s (not configured)\n",
			        vip_arg);
			json_decref(res);
			return SPILLCTL_EXIT_SERVER;
		}
	}
	if (cli->json) {
		spillctl_print_json(one != NULL ? one : res);
	} else if (one != NULL) {
		json_t *arr = json_pack("[O]", one);

		print_stats_vips(arr);
		json_decref(arr);
	} else {
		printf("generation %lld\n", (long long)spillctl_jint(res, "generation"));
		print_totals(json_object_get(res, "totals"));
		fputc('\n', stdout);
		print_stats_vips(json_object_get(res, "vips"));
		print_cores(json_object_get(res, "cores"));
		spillctl_print_hot_keys(res);
	}
	json_decref(res);
	return SPILLCTL_EXIT_OK;
}

static const struct spillctl_opt opts_stats[] = {
        {.name = "vip", .has_arg = true},
        {.name = NULL},
};

static const struct spillctl_command stats_cmd = {
        .name = "stats",
        .synopsis = "[--vip VIP]",
        .summary = "show the counters",
        .help = "Prints the counters since start (method \"stats\"): the snapshot generation,\n"
                "the totals, the drop reasons that are not zero, packets, bytes and new\n"
                "flows per VIP and per backend, and one line per worker core. The counters\n"
                "are described in docs/operations.md (\"Counters\").\n"
                "\n"
                "Options:\n"
                "  --vip VIP    only this VIP's table (with --json: only its object)\n"
                "\n"
                "Examples:\n"
                "  spillctl stats\n"
                "  spillctl stats --vip 192.0.2.10:80/tcp\n"
                "  spillctl --json stats | jq .totals.drops\n",
        .opts = opts_stats,
        .run = cmd_stats,
};

/*
 * Slots asked for per maglev_table request with --raw: 65536 IPv6 addresses
 * (at most 42 bytes each in the reply) stay under the server's reply limit
 * of 4,190,208 bytes; a page the server still refuses as too large (-32004)
 * is asked for again with half the count.
 */
#define TABLE_PAGE 65536
/* Reads of the whole table before giving up when it changes between pages. */
#define TABLE_TRIES 3
#define RPC_TOO_LARGE (-32004)

/* One raw page from slot @from: *count slots (halved while the server finds it too large). */
static int
table_page(struct spillctl_cli *cli, const struct spillctl_vip_ref *v, json_int_t from,
           json_int_t *count, json_t **res)
{
	for (;;) {
		json_t *params = json_pack("{s:o,s:b,s:I,s:I}", "vip", spillctl_vip_ref_json(v),
		                           "raw", 1, "from", from, "count", *count);
		json_t *err;
		int rc = spillctl_call_err(cli, "maglev_table", params,
		                           &spillctl_shape_maglev_table, res, &err);

		if (err == NULL)
			return rc;
		if (spillctl_jint(err, "code") == RPC_TOO_LARGE && *count > 1) {
			json_decref(err);
			*count /= 2;
			continue;
		}
		spillctl_report_error(cli, err);
		json_decref(err);
		return rc;
	}
}

/* A page must start at @from and hold exactly the slots asked for (cut at the table's end). */
static int
table_page_check(struct spillctl_cli *cli, const json_t *page, json_int_t from, json_int_t count,
                 json_int_t size)
{
	const json_t *f = json_object_get(page, "from");
	const json_t *t = json_object_get(page, "table");
	json_int_t want = size - from < count ? size - from : count;

	if (f != NULL && json_integer_value(f) != from)
		return spillctl_io_error(cli,
		                         "malformed reply to maglev_table: result.from: %lld, "
		                         "asked for %lld",
		                         (long long)json_integer_value(f), (long long)from);
	if (!json_is_array(t))
		return spillctl_io_error(cli, "malformed reply to maglev_table: result.table: "
		                              "missing in a raw reply");
	if ((json_int_t)json_array_size(t) != want)
		return spillctl_io_error(cli,
		                         "malformed reply to maglev_table: result.table: %zu "
		                         "slots from %lld of %lld, expected %lld",
		                         json_array_size(t), (long long)from, (long long)size,
		                         (long long)want);
	return SPILLCTL_EXIT_OK;
}

/*
 * The whole raw table in *out: the first page's result, its "table" holding
 * every slot. Pages whose table size or backends (addresses, names, slot
 * counts: what the table is built from) differ from the first page's were
 * taken from another table; the read then starts again, TABLE_TRIES times.
 */
static int
table_read_raw(struct spillctl_cli *cli, const struct spillctl_vip_ref *v, const char *vt,
               json_t **out)
{
	json_int_t count = TABLE_PAGE;

	*out = NULL;
	for (int attempt = 0; attempt < TABLE_TRIES; attempt++) {
		json_t *first;
		json_t *all;
		json_int_t size;
		bool changed = false;
		int rc = table_page(cli, v, 0, &count, &first);

		if (rc != SPILLCTL_EXIT_OK)
			return rc;
		size = spillctl_jint(first, "table_size");
		rc = table_page_check(cli, first, 0, count, size);
		all = json_object_get(first, "table");
		while (rc == SPILLCTL_EXIT_OK && (json_int_t)json_array_size(all) < size) {
			json_int_t from = (json_int_t)json_array_size(all);
			json_t *page;

			rc = table_page(cli, v, from, &count, &page);
			if (rc != SPILLCTL_EXIT_OK)
				break;
			if (spillctl_jint(page, "table_size") != size ||
			    !json_equal(json_object_get(page, "backends"),
			                json_object_get(first, "backends"))) {
				changed = true;
				json_decref(page);
				break;
			}
			rc = table_page_check(cli, page, from, count, size);
			if (rc == SPILLCTL_EXIT_OK)
				json_array_extend(all, json_object_get(page, "table"));
			json_decref(page);
		}
		if (rc != SPILLCTL_EXIT_OK) {
			json_decref(first);
			return rc;
		}
		if (!changed) {
			*out = first;
			return SPILLCTL_EXIT_OK;
		}
		json_decref(first);
	}
	fprintf(stderr,
	        "spillctl: the table of %s changed while it was read, %d times: try again\n", vt,
	        TABLE_TRIES);
	return SPILLCTL_EXIT_SERVER;
}

/* Every slot, one line each, as an aligned ">SLOT|BACKEND" table. */
static void
print_slots(const json_t *table)
{
	size_t n = json_array_size(table);
	int w = 4; /* "SLOT" */
	const json_t *s;
	size_t i;

	for (size_t top = n > 0 ? n - 1 : 0; top >= 10000; top /= 10)
		w++;
	printf("%*s  BACKEND\n", w, "SLOT");
	json_array_foreach (table, i, s)
		printf("%*zu  %s\n", w, i,
		       json_is_string(s) ? spillctl_esc(json_string_value(s)) : "-");
}

static int
cmd_table(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	struct spillctl_vip_ref v;
	const json_t *b;
	json_t *params;
	json_t *res;
	struct spillctl_table t;
	json_int_t size;
	json_int_t used = 0;
	char vt[128];
	size_t i;
	int rc;

	if (!spillctl_arg_vip(a, 0, &v))
		return SPILLCTL_EXIT_USAGE;
	params = json_pack("{s:o}", "vip", spillctl_vip_ref_json(&v));
	spillctl_vip_text(json_object_get(params, "vip"), vt, sizeof(vt));
	if (spillctl_arg_flag(a, "raw")) {
		json_decref(params);
		rc = table_read_raw(cli, &v, vt, &res);
		if (res != NULL && cli->json) {
			spillctl_print_json(res);
			json_decref(res);
			res = NULL;
		}
	} else {
		rc = spillctl_call_print(cli, "maglev_table", params, &spillctl_shape_maglev_table,
		                         &res);
	}
	if (res == NULL)
		return rc;
	size = spillctl_jint(res, "table_size");
	printf("%s: table size %lld, generation %lld\n\n", vt, (long long)size,
	       (long long)spillctl_jint(res, "generation"));
	spillctl_table_init(&t, "BACKEND|NAME|>SLOTS|>SHARE");
	json_array_foreach (json_object_get(res, "backends"), i, b) {
		const char *addr = spillctl_jstr(b, "address", "?");
		const char *name = spillctl_jstr(b, "name", "");
		json_int_t slots = spillctl_jint(b, "slots");

		used += slots;
		spillctl_table_add(&t, "%s\t%s\t%lld\t%.2f%%", spillctl_esc(addr),
		                   strcmp(name, addr) ? spillctl_esc(name) : "", (long long)slots,
		                   size > 0 ? 100.0 * (double)slots / (double)size : 0.0);
	}
	if (size > used)
		spillctl_table_add(&t, "(empty)\t\t%lld\t%.2f%%", (long long)(size - used),
		                   100.0 * (double)(size - used) / (double)size);
	spillctl_table_print(&t, 0);
	spillctl_table_free(&t);
	if (json_is_array(json_object_get(res, "table"))) {
		fputc('\n', stdout);
		print_slots(json_object_get(res, "table"));
	}
	json_decref(res);
	return rc;
}

static const struct spillctl_opt opts_table[] = {
        {.name = "raw"},
        {.name = NULL},
};

static const struct spillctl_command table_cmd = {
        .name = "table",
        .synopsis = "VIP [--raw]",
        .summary = "show a VIP's Maglev table shares",
        .help = "Prints the table size and, per backend, its number of slots and its share\n"
                "of the table (method \"maglev_table\"); slots owned by no backend (no\n"
                "usable backend) are shown as (empty).\n"
                "\n"
                "Options:\n"
                "  --raw    also print the backend of every slot (large: one line per slot),\n"
                "           read in pages of 65536 slots (\"from\"/\"count\"), each checked\n"
                "           to come from the same table; the whole table is read again if\n"
                "           it changed meanwhile (3 times at most, then exit 1)\n"
                "\n"
                "Examples:\n"
                "  spillctl table 192.0.2.10:80/tcp\n"
                "  spillctl --json table 192.0.2.10:80/tcp --raw > table.json\n",
        .opts = opts_table,
        .min_pos = 1,
        .max_pos = 1,
        .run = cmd_table,
};

const struct spillctl_command *const spillctl_cmds_stats[] = {
        &stats_cmd,
        &table_cmd,
        NULL,
};
