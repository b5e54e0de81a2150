/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus text rendering: walks the stats and hot_list documents and
 * writes one metric family after another into a growing buffer bounded by the
 * caller's limit. Counters summed over cores are left to PromQL (sum by),
 * so only per-core, per-VIP and per-backend series are written, never the
 * document's totals (they would double every sum).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/io/metrics.h"

const unsigned int lb_metrics_codes[LB_METRICS_CODES] = {200, 400, 404, 405, 408, 431, 500, 503};

struct buf {
	char *p;
	size_t len, cap, max;
	int err; /* first failure: -ENOMEM or -E2BIG */
};

struct label {
	const char *k, *v;
};

static void
grow(struct buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->err != 0)
		return;
	if (b->len + need + 1 > b->max) {
		b->err = -E2BIG;
		return;
	}
	while (cap < b->len + need + 1)
		cap *= 2;
	if (cap == b->cap)
		return;
	p = realloc(b->p, cap);
	if (p == NULL) {
		b->err = -ENOMEM;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void
put_n(struct buf *b, const char *s, size_t n)
{
	grow(b, n);
	if (b->err != 0)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
put(struct buf *b, const char *s)
{
	put_n(b, s, strlen(s));
}

/* A label value: backslash, double quote and line feed escaped. */
static void
put_escaped(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			put(b, "\\\\");
		else if (*s == '"')
			put(b, "\\\"");
		else if (*s == '\n')
			put(b, "\\n");
		else
			put_n(b, s, 1);
	}
}

static void
family(struct buf *b, const char *name, const char *type, const char *help)
{
	put(b, "# HELP ");
	put(b, name);
	put(b, " ");
	put(b, help);
	put(b, "\n# TYPE ");
	put(b, name);
	put(b, " ");
	put(b, type);
	put(b, "\n");
}

/* A float as the format spells it: shortest %g that reads back, +Inf, NaN. */
static void
fmt_double(double d, char *out, size_t len)
{
	if (isnan(d))
		snprintf(out, len, "NaN");
	else if (isinf(d))
		snprintf(out, len, d > 0 ? "+Inf" : "-Inf");
	else
		snprintf(out, len, "%.15g", d);
}

/* A JSON number or boolean as a sample value; false for anything else. */
static bool
value_text(const json_t *v, char *out, size_t len)
{
	if (json_is_integer(v))
		snprintf(out, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		fmt_double(json_real_value(v), out, len);
	else if (json_is_boolean(v))
		snprintf(out, len, "%d", json_is_true(v) ? 1 : 0);
	else
		return false;
	return true;
}

static void
sample(struct buf *b, const char *name, const struct label *l, unsigned int n, const char *value)
{
	put(b, name);
	for (unsigned int i = 0; i < n; i++) {
		put(b, i == 0 ? "{" : ",");
		put(b, l[i].k);
		put(b, "=\"");
		put_escaped(b, l[i].v);
		put(b, "\"");
	}
	if (n > 0)
		put(b, "}");
	put(b, " ");
	put(b, value);
	put(b, "\n");
}

/* A sample from a JSON value; nothing if it is not a number or boolean. */
static void
sample_json(struct buf *b, const char *name, const struct label *l, unsigned int n, const json_t *v)
{
	char text[64];

	if (value_text(v, text, sizeof(text)))
		sample(b, name, l, n, text);
}

/* "192.0.2.10:80/tcp", "[2001:db8::1]:53/udp" from {address, port, protocol}. */
static const char *
vip_label(const json_t *vip, char *out, size_t len)
{
	const char *a = json_string_value(json_object_get(vip, "address"));
	const char *p = json_string_value(json_object_get(vip, "protocol"));
	long long port = json_integer_value(json_object_get(vip, "port"));

	if (a == NULL)
		a = "";
	snprintf(out, len, strchr(a, ':') != NULL ? "[%s]:%lld/%s" : "%s:%lld/%s", a, port,
	         p != NULL ? p : "");
	return out;
}

/* --- per core -------------------------------------------------------------- */

struct metric {
	const char *key, *name, *type, *help;
};

static const struct metric core_metrics[] = {
        {"rx_packets", "spillway_rx_packets_total", "counter", "Packets received."},
        {"rx_bytes", "spillway_rx_bytes_total", "counter", "Bytes received (frames)."},
        {"forwarded", "spillway_forwarded_packets_total", "counter",
         "Packets encapsulated to a backend and taken by TX."},
        {"forwarded_bytes", "spillway_forwarded_bytes_total", "counter",
         "Bytes of the forwarded packets, outer headers included."},
        {"icmp_sent", "spillway_icmp_sent_packets_total", "counter",
         "Too-big packets answered with an ICMP error to the client."},
        {"exception", "spillway_exception_packets_total", "counter",
         "Packets for no VIP sent to the exception port."},
        {"flow_hits", "spillway_flow_hits_total", "counter", "Flow-table lookups that hit."},
        {"flow_misses", "spillway_flow_misses_total", "counter",
         "Flow-table lookups that missed (a backend was chosen)."},
        {"flow_evictions", "spillway_flow_evictions_total", "counter",
         "Live flow-table entries evicted to make room."},
        {"flow_rechosen", "spillway_flow_rechosen_total", "counter",
         "Flow-table entries whose backend was gone or down, chosen again."},
        {"fragments", "spillway_fragment_packets_total", "counter", "IP fragments received."},
        {"icmp_errors", "spillway_icmp_error_packets_total", "counter",
         "ICMP errors steered by the flow they quote."},
        {"hot_spread", "spillway_hot_spread_flows_total", "counter",
         "New flows sent to a hot key's replica by its override."},
        {"hot_sprayed", "spillway_hot_sprayed_packets_total", "counter",
         "Packets of a per_packet VIP's hot key sent to a replica drawn per packet."},
        {"flow_unpinned", "spillway_flow_unpinned_packets_total", "counter",
         "Packets of new flows sent without a flow-table entry (bucket full of established "
         "flows)."},
        {"flow_rate_limited", "spillway_flow_rate_limited_packets_total", "counter",
         "Packets of new flows over the new-flow rate, sent without a flow-table entry."},
        {"frag_tracked", "spillway_fragment_datagrams_tracked_total", "counter",
         "First fragments whose ports were recorded for the datagram's later fragments."},
        {"frag_followed", "spillway_fragments_followed_total", "counter",
         "Later fragments steered by their first fragment's ports."},
        {"frag_unmatched", "spillway_fragments_unmatched_total", "counter",
         "Later fragments with no first fragment recorded (address-only choice)."},
        {"frag_evictions", "spillway_fragment_table_evictions_total", "counter",
         "Live fragment-table entries replaced in a full bucket."},
        {"fragmented_out", "spillway_fragmented_out_packets_total", "counter",
         "Packets over encap.mtu encapsulated and sent as outer fragments."},
        {"fragments_out", "spillway_fragments_out_total", "counter",
         "Outer fragment frames made of those packets."},
        {"pmtu_learned", "spillway_pmtu_learned_total", "counter",
         "ICMP too-big errors quoting our own tunnel packet that lowered a backend's path "
         "MTU."},
        {"pmtu_ignored", "spillway_pmtu_ignored_total", "counter",
         "ICMP too-big errors to our tunnel source that were not believed (no matching "
         "quote, or an MTU out of range)."},
        {"snapshot_gen", "spillway_core_snapshot_generation", "gauge",
         "Generation of the snapshot the core last used."},
        {"stalled", "spillway_core_stalled", "gauge",
         "1 if the core has not passed a quiescent state in time."},
};

static void
render_cores(struct buf *b, const json_t *cores)
{
	size_t i;
	const json_t *c;
	char lc[24];

	for (size_t m = 0; m < sizeof(core_metrics) / sizeof(core_metrics[0]); m++) {
		family(b, core_metrics[m].name, core_metrics[m].type, core_metrics[m].help);
		json_array_foreach (cores, i, c) {
			struct label l = {"core", lc};

			snprintf(lc, sizeof(lc), "%lld",
			         (long long)json_integer_value(json_object_get(c, "lcore")));
			sample_json(b, core_metrics[m].name, &l, 1,
			            json_object_get(c, core_metrics[m].key));
		}
	}
	family(b, "spillway_dropped_packets_total", "counter",
	       "Packets dropped, by reason (docs/operations.md lists the reasons).");
	json_array_foreach (cores, i, c) {
		const char *reason;
		const json_t *v;

		snprintf(lc, sizeof(lc), "%lld",
		         (long long)json_integer_value(json_object_get(c, "lcore")));
		json_object_foreach ((json_t *)json_object_get(c, "drops"), reason, v) {
			struct label l[2] = {{"core", lc}, {"reason", reason}};

			sample_json(b, "spillway_dropped_packets_total", l, 2, v);
		}
	}
}

/* --- per VIP and backend ------------------------------------------------------ */

static const struct metric obj_metrics[] = {
        {"packets", "packets_total", "counter", "Packets forwarded to"},
        {"bytes", "bytes_total", "counter", "Inner IP bytes forwarded to"},
        {"new_flows", "new_flows_total", "counter", "Flows created for"},
};

static const char *const state_names[] = {"active", "draining", "down"};

static void
render_vips(struct buf *b, const json_t *vips)
{
	char name[64], help[96], vl[80];
	size_t i, j;
	const json_t *v, *be;

	for (size_t m = 0; m < 3; m++) {
		snprintf(name, sizeof(name), "spillway_vip_%s", obj_metrics[m].name);
		snprintf(help, sizeof(help), "%s the VIP.", obj_metrics[m].help);
		family(b, name, "counter", help);
		json_array_foreach (vips, i, v) {
			struct label l = {"vip", vip_label(v, vl, sizeof(vl))};

			sample_json(b, name, &l, 1, json_object_get(v, obj_metrics[m].key));
		}
	}
	for (size_t m = 0; m < 4 + 1; m++) {
		bool st = m == 4, w = m == 3;

		if (st)
			snprintf(name, sizeof(name), "spillway_backend_state");
		else if (w)
			snprintf(name, sizeof(name), "spillway_backend_weight");
		else
			snprintf(name, sizeof(name), "spillway_backend_%s", obj_metrics[m].name);
		if (st)
			family(b, name, "gauge",
			       "1 for the backend's operator state (active, draining, down), 0 "
			       "for the others.");
		else if (w)
			family(b, name, "gauge", "The backend's Maglev weight in the VIP.");
		else {
			snprintf(help, sizeof(help), "%s the backend (a membership in one VIP).",
			         obj_metrics[m].help);
			family(b, name, "counter", help);
		}
		json_array_foreach (vips, i, v) {
			vip_label(v, vl, sizeof(vl));
			json_array_foreach (json_object_get(v, "backends"), j, be) {
				const char *a = json_string_value(json_object_get(be, "address"));
				struct label l[3] = {{"vip", vl}, {"backend", a != NULL ? a : ""}};

				if (!st) {
					sample_json(b, name, l, 2,
					            json_object_get(be, w ? "weight"
					                                  : obj_metrics[m].key));
					continue;
				}
				const char *s = json_string_value(json_object_get(be, "state"));

				for (size_t k = 0; k < 3; k++) {
					l[2].k = "state";
					l[2].v = state_names[k];
					sample(b, name, l, 3,
					       s != NULL && strcmp(s, state_names[k]) == 0 ? "1"
					                                                   : "0");
				}
			}
		}
	}
	family(b, "spillway_backend_path_mtu_bytes", "gauge",
	       "Path MTU learned toward the backend's address, below encap.mtu (only "
	       "backends with a live learned value).");
	json_array_foreach (vips, i, v) {
		vip_label(v, vl, sizeof(vl));
		json_array_foreach (json_object_get(v, "backends"), j, be) {
			const char *a = json_string_value(json_object_get(be, "address"));
			struct label l[2] = {{"vip", vl}, {"backend", a != NULL ? a : ""}};
			const json_t *m = json_object_get(be, "path_mtu");

			if (m != NULL)
				sample_json(b, "spillway_backend_path_mtu_bytes", l, 2, m);
		}
	}
}

/* --- publication, mempool, hooks -------------------------------------------- */

/* {"le_s": [...], "buckets": [cumulative..., +Inf], "sum_s", "count"} as a histogram. */
static void
render_histogram(struct buf *b, const char *name, const char *help, const json_t *h)
{
	const json_t *le = json_object_get(h, "le_s"), *bk = json_object_get(h, "buckets");
	char n[96], t[64];
	size_t i;
	const json_t *v;

	if (!json_is_array(le) || !json_is_array(bk) ||
	    json_array_size(bk) != json_array_size(le) + 1)
		return;
	family(b, name, "histogram", help);
	snprintf(n, sizeof(n), "%s_bucket", name);
	json_array_foreach (bk, i, v) {
		struct label l = {"le", t};

		if (i < json_array_size(le))
			fmt_double(json_number_value(json_array_get(le, i)), t, sizeof(t));
		else
			snprintf(t, sizeof(t), "+Inf");
		sample_json(b, n, &l, 1, v);
	}
	snprintf(n, sizeof(n), "%s_sum", name);
	sample_json(b, n, NULL, 0, json_object_get(h, "sum_s"));
	snprintf(n, sizeof(n), "%s_count", name);
	sample_json(b, n, NULL, 0, json_object_get(h, "count"));
}

static void
one(struct buf *b, const struct metric *m, const json_t *obj)
{
	const json_t *v = json_object_get(obj, m->key);

	if (v == NULL)
		return;
	family(b, m->name, m->type, m->help);
	sample_json(b, m->name, NULL, 0, v);
}

static void
render_publish(struct buf *b, const json_t *stats)
{
	static const struct metric top[] = {
	        {"generation", "spillway_snapshot_generation", "gauge",
	         "Generation of the published snapshot (one per configuration change)."},
	        {"drained", "spillway_drained", "gauge",
	         "1 while the routes are withdrawn (drain, or a stop under way)."},
	};
	static const struct metric pub[] = {
	        {"timeouts", "spillway_publish_timeouts_total", "counter",
	         "Publications whose wait for every worker to switch ran out."},
	        {"refused", "spillway_publish_refused_total", "counter",
	         "Changes refused while a core was stalled."},
	        {"state_unsynced", "spillway_state_unsynced_total", "counter",
	         "State file writes whose directory fsync failed."},
	        {"retired", "spillway_retired_snapshots", "gauge",
	         "Replaced snapshots still waiting for their readers."},
	};
	static const struct metric mp[] = {
	        {"size", "spillway_mempool_size", "gauge", "Mbufs in the packet pool."},
	        {"available", "spillway_mempool_available", "gauge",
	         "Mbufs free in the pool (per-core caches counted as free)."},
	        {"in_use", "spillway_mempool_in_use", "gauge", "Mbufs taken from the pool."},
	};
	const json_t *p = json_object_get(stats, "publish"), *m = json_object_get(stats, "mempool");

	for (size_t i = 0; i < 2; i++)
		one(b, &top[i], stats);
	for (size_t i = 0; p != NULL && i < 4; i++)
		one(b, &pub[i], p);
	if (p != NULL && json_is_number(json_object_get(p, "build_us"))) {
		char t[64];

		family(b, "spillway_snapshot_build_seconds", "gauge",
		       "Time the last snapshot build took.");
		fmt_double(json_number_value(json_object_get(p, "build_us")) / 1e6, t, sizeof(t));
		sample(b, "spillway_snapshot_build_seconds", NULL, 0, t);
	}
	render_histogram(b, "spillway_publish_latency_seconds",
	                 "From the snapshot pointer store to every worker running it.",
	                 json_object_get(p, "latency_histogram"));
	for (size_t i = 0; m != NULL && i < 3; i++)
		one(b, &mp[i], m);
}

/* Hook fields that count events (the rest of a hook's numbers are states). */
static bool
hook_counter(const char *k)
{
	static const char *const names[] = {
	        "writes",   "attempts",    "reloads",     "errors",      "timeouts",
	        "map_adds", "map_removes", "map_errors",  "reconciles",  "tick_reconciles",
	        "redirect", "pass_no_xsk", "pass_not_ip", "pass_not_l4", "link_changes",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(k, names[i]) == 0)
			return true;
	return strncmp(k, "pass_", 5) == 0;
}

static void
render_hooks(struct buf *b, const json_t *hooks)
{
	const char *name, *k;
	const json_t *h, *v;

	if (!json_is_object(hooks))
		return;
	family(b, "spillway_hook_failures_total", "counter",
	       "Failed calls of a publication hook (xdp, bird).");
	json_object_foreach ((json_t *)hooks, name, h) {
		struct label l = {"hook", name};

		sample_json(b, "spillway_hook_failures_total", &l, 1,
		            json_object_get(h, "failures"));
	}
	family(b, "spillway_hook_events_total", "counter",
	       "A publication hook's own event counters (stats hooks.HOOK.EVENT).");
	json_object_foreach ((json_t *)hooks, name, h) {
		json_object_foreach ((json_t *)h, k, v) {
			struct label l[2] = {{"hook", name}, {"event", k}};

			if (json_is_integer(v) && hook_counter(k))
				sample_json(b, "spillway_hook_events_total", l, 2, v);
		}
	}
}

/* --- hot keys -------------------------------------------------------------- */

static void
render_hot(struct buf *b, const json_t *hot, const json_t *list)
{
	static const struct metric m[] = {
	        {"promotions", "spillway_hot_promotions_total", "counter",
	         "Hot keys promoted (given an override)."},
	        {"demotions", "spillway_hot_demotions_total", "counter", "Hot keys demoted."},
	        {"replans", "spillway_hot_replans_total", "counter",
	         "Overrides planned again (a replica failed or loads shifted)."},
	        {"dropped", "spillway_hot_dropped_total", "counter",
	         "Overrides dropped (their VIP or backends went away)."},
	        {"table_full", "spillway_hot_table_full_total", "counter",
	         "Promotions refused because the override table was full."},
	        {"unresolved", "spillway_hot_unresolved_total", "counter",
	         "Candidate windows above the promotion bound that the sampling could not "
	         "resolve from it."},
	        {"window", "spillway_hot_windows_total", "counter",
	         "Hot-key windows closed (the controller's logical clock)."},
	        {"active", "spillway_hot_overrides", "gauge", "Active hot-key overrides."},
	        {"pinned", "spillway_hot_pinned_overrides", "gauge",
	         "Active overrides pinned by an operator."},
	};
	static const struct metric missed = {"missed_core_windows",
	                                     "spillway_hot_missed_core_windows_total", "counter",
	                                     "Core windows the controller could not read in time."};
	static const struct metric wmissed = {
	        "windows_missed", "spillway_hot_windows_missed_total", "counter",
	        "Windows not read from every core in time: no hot-key decision taken on them."};
	const json_t *ov = json_object_get(list, "overrides"), *o;
	char vl[80], t[64];
	size_t i;

	for (size_t k = 0; hot != NULL && k < sizeof(m) / sizeof(m[0]); k++)
		one(b, &m[k], hot);
	if (list == NULL)
		return;
	one(b, &missed, json_object_get(list, "counters"));
	one(b, &wmissed, json_object_get(list, "counters"));
	for (int share = 1; share >= 0; share--) {
		const char *name = share ? "spillway_hot_key_share" : "spillway_hot_key_replicas";

		family(b, name, "gauge",
		       share ? "Latest measured share of its VIP's traffic of each hot key."
		             : "Backends each hot key's new flows are spread over.");
		json_array_foreach (ov, i, o) {
			const char *h = json_string_value(json_object_get(o, "key_hash"));
			struct label l[2] = {
			        {"vip", vip_label(json_object_get(o, "vip"), vl, sizeof(vl))},
			        {"key", h != NULL ? h : ""}};

			if (share) {
				sample_json(b, name, l, 2, json_object_get(o, "share"));
				continue;
			}
			snprintf(t, sizeof(t), "%zu",
			         json_array_size(json_object_get(o, "replicas")));
			sample(b, name, l, 2, t);
		}
	}
}

static void
render_http(struct buf *b, const uint64_t *http)
{
	char code[8], t[24];

	if (http == NULL)
		return;
	family(b, "spillway_metrics_requests_total", "counter",
	       "Requests to the metrics endpoint, by the HTTP status answered.");
	for (unsigned int i = 0; i < LB_METRICS_CODES; i++) {
		struct label l = {"code", code};

		snprintf(code, sizeof(code), "%u", lb_metrics_codes[i]);
		snprintf(t, sizeof(t), "%llu", (unsigned long long)http[i]);
		sample(b, "spillway_metrics_requests_total", &l, 1, t);
	}
}

int
lb_metrics_render(const struct lb_metrics_input *in, size_t max, char **out, size_t *len)
{
	struct buf b = {.max = max};

	if (in == NULL || out == NULL || len == NULL || !json_is_object(in->stats))
		return -EINVAL;
	family(&b, "spillway_build_info", "gauge", "Always 1; the version as a label.");
	{
		struct label l = {"version", in->version != NULL ? in->version : ""};

		sample(&b, "spillway_build_info", &l, 1, "1");
	}
	render_cores(&b, json_object_get(in->stats, "cores"));
	render_vips(&b, json_object_get(in->stats, "vips"));
	render_publish(&b, in->stats);
	render_hooks(&b, json_object_get(in->stats, "hooks"));
	render_hot(&b, json_object_get(in->stats, "hot"), in->hot);
	render_http(&b, in->http);
	if (b.err == 0 && b.p == NULL)
		put(&b, "");
	if (b.err != 0) {
		free(b.p);
		return b.err;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
