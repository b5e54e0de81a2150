/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "top": calls "stats" every interval and shows the rates computed from two
 * samples (totals, drop reasons, per VIP and backend) and the hot keys,
 * redrawn on a terminal, appended otherwise, one JSON object per refresh
 * with --json; until --count refreshes or SIGINT/SIGTERM.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "args.h"
#include "conn.h"
#include "render.h"
#include "spillctl.h"
#include "table.h"

static void
on_stop_signal(int sig)
{
	(void)sig;
	spillctl_stop = 1;
}

/* Per-second rate of counter @key between two objects; 0 if it went backwards. */
static double
rate(const json_t *cur, const json_t *prev, const char *key, double dt)
{
	json_int_t d = spillctl_jint(cur, key) - spillctl_jint(prev, key);

	return d > 0 && dt > 0 ? (double)d / dt : 0.0;
}

static void
fmt_rate(char *buf, size_t len, double r)
{
	if (r >= 100 || r == 0)
		snprintf(buf, len, "%.0f", r);
	else
		snprintf(buf, len, "%.1f", r);
}

/* Index of the previous sample: "VIP" and "VIP|backend" to their objects. */
static json_t *
index_stats(const json_t *stats)
{
	json_t *idx = json_object();
	json_t *v;
	json_t *b;
	size_t i;
	size_t j;

	json_array_foreach (json_object_get(stats, "vips"), i, v) {
		char vt[128];
		char key[192];

		spillctl_vip_text(v, vt, sizeof(vt));
		json_object_set(idx, vt, v);
		json_array_foreach (json_object_get(v, "backends"), j, b) {
			snprintf(key, sizeof(key), "%s|%s", vt, spillctl_jstr(b, "address", "?"));
			json_object_set(idx, key, b);
		}
	}
	return idx;
}

/* Rates of one VIP or backend: cells "PKT/S\tMBIT/S\tNEW/S[\tDROP/S]", "-" when new. */
static void
rate_cells(char *buf, size_t len, const json_t *cur, const json_t *prev, double dt, bool drops)
{
	char p[32] = "-";
	char m[32] = "-";
	char f[32] = "-";
	char d[32] = "-";

	if (prev != NULL) {
		fmt_rate(p, sizeof(p), rate(cur, prev, "packets", dt));
		snprintf(m, sizeof(m), "%.2f", rate(cur, prev, "bytes", dt) * 8 / 1e6);
		fmt_rate(f, sizeof(f), rate(cur, prev, "new_flows", dt));
		if (json_object_get(cur, "dropped") != NULL)
			fmt_rate(d, sizeof(d), rate(cur, prev, "dropped", dt));
	}
	snprintf(buf, len, "%s\t%s\t%s%s%s", p, m, f, drops ? "\t" : "", drops ? d : "");
}

static json_t *
top_rates_json(const json_t *cur, const json_t *prev, const json_t *idx, double dt)
{
	const json_t *tc = json_object_get(cur, "totals");
	const json_t *tp = json_object_get(prev, "totals");
	json_t *drops = json_object();
	json_t *vips = json_array();
	const char *reason;
	const json_t *x;
	const json_t *v;
	const json_t *b;
	size_t i;
	size_t j;

	json_object_foreach (json_object_get(tc, "drops"), reason, x) {
		json_object_set_new(drops, reason,
		                    json_real(rate(json_object_get(tc, "drops"),
		                                   json_object_get(tp, "drops"), reason, dt)));
	}
	json_array_foreach (json_object_get(cur, "vips"), i, v) {
		char vt[128];
		char key[192];
		const json_t *pv;
		json_t *bes = json_array();

		spillctl_vip_text(v, vt, sizeof(vt));
		pv = json_object_get(idx, vt);
		json_array_foreach (json_object_get(v, "backends"), j, b) {
			const json_t *pb;

			snprintf(key, sizeof(key), "%s|%s", vt, spillctl_jstr(b, "address", "?"));
			pb = json_object_get(idx, key);
			json_array_append_new(
			        bes,
			        json_pack("{s:s, s:o, s:o, s:o}", "address",
			                  spillctl_jstr(b, "address", "?"), "packets_per_s",
			                  pb ? json_real(rate(b, pb, "packets", dt)) : json_null(),
			                  "bytes_per_s",
			                  pb ? json_real(rate(b, pb, "bytes", dt)) : json_null(),
			                  "new_flows_per_s",
			                  pb ? json_real(rate(b, pb, "new_flows", dt))
			                     : json_null()));
		}
		json_array_append_new(
		        vips, json_pack("{s:s, s:o, s:o, s:o, s:o}", "vip", vt, "packets_per_s",
		                        pv ? json_real(rate(v, pv, "packets", dt)) : json_null(),
		                        "bytes_per_s",
		                        pv ? json_real(rate(v, pv, "bytes", dt)) : json_null(),
		                        "new_flows_per_s",
		                        pv ? json_real(rate(v, pv, "new_flows", dt)) : json_null(),
		                        "backends", bes));
	}
	return json_pack("{s:f, s:I, s:{s:f, s:f, s:f, s:o}, s:o}", "interval_s", dt, "generation",
	                 spillctl_jint(cur, "generation"), "totals", "rx_pps",
	                 rate(tc, tp, "rx_packets", dt), "forwarded_pps",
	                 rate(tc, tp, "forwarded", dt), "dropped_pps", rate(tc, tp, "dropped", dt),
	                 "drops_per_s", drops, "vips", vips);
}

/* The hot keys of a hot_list result under the rates (top). */
static void
print_top_hot(const json_t *hot)
{
	const json_t *ov = json_object_get(hot, "overrides");

	if (json_array_size(ov) == 0) {
		fputs("\nhot keys: (none)\n", stdout);
		return;
	}
	fputs("\nhot keys:\n", stdout);
	spillctl_print_hot_overrides(ov, true, 2);
}

/* @hot: the hot_list result, NULL when the server has no hot keys. */
static void
top_render(const struct spillctl_cli *cli, const json_t *cur, const json_t *prev, const json_t *hot,
           double dt, double interval)
{
	const json_t *tc = json_object_get(cur, "totals");
	const json_t *tp = json_object_get(prev, "totals");
	json_t *idx = index_stats(prev);
	const json_t *v;
	const json_t *b;
	const char *reason;
	const json_t *x;
	char hms[32];
	char r1[32];
	char r2[32];
	char r3[32];
	struct spillctl_table t;
	bool vip_drops = false;
	bool any = false;
	time_t wall = time(NULL);
	struct tm tm;
	size_t i;
	size_t j;

	if (cli->json) {
		json_t *o = top_rates_json(cur, prev, idx, dt);

		if (hot != NULL && json_is_array(json_object_get(hot, "overrides")))
			json_object_set(o, "hot_keys", json_object_get(hot, "overrides"));
		json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
		fputc('\n', stdout);
		json_decref(o);
		json_decref(idx);
		fflush(stdout);
		return;
	}
	localtime_r(&wall, &tm);
	strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	fmt_rate(r1, sizeof(r1), rate(tc, tp, "rx_packets", dt));
	fmt_rate(r2, sizeof(r2), rate(tc, tp, "forwarded", dt));
	fmt_rate(r3, sizeof(r3), rate(tc, tp, "dropped", dt));
	printf("spillctl top  %s  every %gs  generation %lld  %s\n", cli->socket_path, interval,
	       (long long)spillctl_jint(cur, "generation"), hms);
	printf("rx %s pps  fwd %s pps  drop %s pps\n", r1, r2, r3);
	fputs("drops/s ", stdout);
	json_object_foreach (json_object_get(tc, "drops"), reason, x) {
		double r = rate(json_object_get(tc, "drops"), json_object_get(tp, "drops"), reason,
		                dt);

		if (r == 0)
			continue;
		fmt_rate(r1, sizeof(r1), r);
		printf("%s %s %s", any ? "," : "", spillctl_esc(reason), r1);
		any = true;
	}
	fputs(any ? "\n\n" : " (none)\n\n", stdout);

	json_array_foreach (json_object_get(cur, "vips"), i, v) {
		if (json_object_get(v, "dropped") != NULL)
			vip_drops = true;
	}
	spillctl_table_init(
	        &t, vip_drops ? "VIP / BACKEND|>WEIGHT|STATE|>PKT/S|>MBIT/S|>NEW FLOWS/S|>DROP/S"
	                      : "VIP / BACKEND|>WEIGHT|STATE|>PKT/S|>MBIT/S|>NEW FLOWS/S");
	json_array_foreach (json_object_get(cur, "vips"), i, v) {
		char vt[128];
		char key[192];
		char cells[160];

		spillctl_vip_text(v, vt, sizeof(vt));
		rate_cells(cells, sizeof(cells), v, json_object_get(idx, vt), dt, vip_drops);
		spillctl_table_add(&t, "%s\t\t\t%s", vt, cells);
		json_array_foreach (json_object_get(v, "backends"), j, b) {
			const char *addr = spillctl_jstr(b, "address", "?");

			snprintf(key, sizeof(key), "%s|%s", vt, addr);
			rate_cells(cells, sizeof(cells), b, json_object_get(idx, key), dt,
			           vip_drops);
			spillctl_table_add(&t, "  %s\t%lld\t%s\t%s", spillctl_esc(addr),
			                   (long long)spillctl_jint(b, "weight"),
			                   spillctl_jtext(b, "state", ""), cells);
		}
	}
	if (t.nrows != 0)
		spillctl_table_print(&t, 0);
	else
		fputs("no VIPs\n", stdout);
	spillctl_table_free(&t);
	if (hot != NULL)
		print_top_hot(hot);
	else
		spillctl_print_hot_keys(cur);
	json_decref(idx);
	fflush(stdout);
}

/* Sleeps until @until (monotonic ns) or a stop signal. */
static void
sleep_until(int64_t until)
{
	while (!spillctl_stop) {
		int64_t left = until - spillctl_now_ns();
		struct timespec ts;

		if (left <= 0)
			return;
		ts.tv_sec = (time_t)(left / 1000000000);
		ts.tv_nsec = (long)(left % 1000000000);
		nanosleep(&ts, NULL);
	}
}

static int
cmd_top(struct spillctl_cli *cli, const struct spillctl_args *a)
{
	const char *iv = spillctl_arg_get(a, "interval");
	const char *cv = spillctl_arg_get(a, "count");
	bool tty = isatty(STDOUT_FILENO) && !cli->json;
	double interval = 1.0;
	unsigned long count = 0;
	unsigned long shown = 0;
	struct sigaction sa = {.sa_handler = on_stop_signal};
	json_t *prev = NULL;
	bool ask_hot = true; /* until hot_list fails: disabled, or an older server */
	int64_t prev_t = 0;
	int64_t next;
	int rc = SPILLCTL_EXIT_OK;

	if (iv != NULL && !spillctl_parse_seconds(iv, 0.01, 3600, &interval))
		return spillctl_usage_error(a->cmd,
		                            "--interval: '%s' is not a number of seconds from "
		                            "0.01 to 3600",
		                            iv);
	if (cv != NULL && (!spillctl_parse_ulong(cv, 1000000000, &count) || count == 0))
		return spillctl_usage_error(a->cmd, "--count: '%s' is not a positive integer", cv);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	next = spillctl_now_ns();
	while (!spillctl_stop) {
		json_t *cur;
		int64_t t;

		rc = spillctl_call(cli, "stats", NULL, &spillctl_shape_stats, &cur);
		if (rc != SPILLCTL_EXIT_OK)
			break;
		t = spillctl_now_ns();
		if (prev != NULL) {
			json_t *hot = NULL;
			json_t *herr = NULL;

			if (ask_hot) {
				rc = spillctl_call_err(cli, "hot_list", NULL,
				                       &spillctl_shape_hot_list, &hot, &herr);
				if (rc == SPILLCTL_EXIT_SERVER) {
					ask_hot = false;
					rc = SPILLCTL_EXIT_OK;
				}
				json_decref(herr);
				if (rc != SPILLCTL_EXIT_OK) {
					json_decref(cur);
					break;
				}
			}
			if (tty)
				fputs("\033[H\033[2J", stdout);
			else if (shown != 0 && !cli->json)
				fputc('\n', stdout);
			top_render(cli, cur, prev, hot, (double)(t - prev_t) / 1e9, interval);
			json_decref(hot);
			shown++;
		}
		json_decref(prev);
		prev = cur;
		prev_t = t;
		if (count != 0 && shown >= count)
			break;
		next += (int64_t)(interval * 1e9);
		if (next < spillctl_now_ns())
			next = spillctl_now_ns(); /* a slow reply: do not try to catch up */
		sleep_until(next);
	}
	json_decref(prev);
	if (spillctl_stop)
		rc = SPILLCTL_EXIT_OK;
	return rc;
}

static const struct spillctl_opt opts_top[] = {
        {.name = "interval", .has_arg = true},
        {.name = "count", .has_arg = true},
        {.name = NULL},
};

static const struct spillctl_command top_cmd = {
        .name = "top",
        .synopsis = "[--interval SEC] [--count N]",
        .summary = "live rates per VIP and backend",
        .help = "Calls \"stats\" every SEC seconds and shows rates computed from the\n"
                "differences: received, forwarded and dropped packets/s, drops/s per\n"
                "reason, and per VIP and per backend packets/s, Mbit/s (inner bytes) and\n"
                "new flows/s (\"-\" for one that appeared since the last sample). A\n"
                "\"hot keys\" section (VIP, key, share, replicas; method \"hot_list\")\n"
                "appears when the server runs the hot-key controller. On a\n"
                "terminal the screen is redrawn; otherwise each refresh is printed as a\n"
                "block after a blank line (with --json: one JSON object per line).\n"
                "Stop with Ctrl-C.\n"
                "\n"
                "Options:\n"
                "  --interval SEC   seconds between refreshes, 0.01-3600 (default 1)\n"
                "  --count N        stop after N refreshes (N + 1 calls)\n"
                "\n"
                "Examples:\n"
                "  spillctl top\n"
                "  spillctl top --interval 5 --count 12 > rates.log\n",
        .opts = opts_top,
        .run = cmd_top,
};

const struct spillctl_command *const spillctl_cmds_top[] = {
        &top_cmd,
        NULL,
};
