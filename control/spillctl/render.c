/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pieces of output several spillctl commands share: reply members with
 * defaults, --json printing, a VIP object as VIP notation, and the hot keys
 * (key notation, replicas, share) as "stats", "hot" and "top" show them.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "render.h"
#include "table.h"

const char *
spillctl_jstr(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : def;
}

json_int_t
spillctl_jint(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (json_int_t)json_real_value(v);
	return 0;
}

void
spillctl_print_json(const json_t *v)
{
	json_dumpf(v, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
	fputc('\n', stdout);
}

void
spillctl_vip_text(const json_t *v, char *buf, size_t len)
{
	const char *addr = spillctl_jstr(v, "address", "?");
	bool v6 = strchr(addr, ':') != NULL;

	snprintf(buf, len, "%s%s%s:%lld/%s", v6 ? "[" : "", addr, v6 ? "]" : "",
	         (long long)spillctl_jint(v, "port"), spillctl_jstr(v, "protocol", "?"));
}

void
spillctl_hot_key_text(const json_t *key, char *buf, size_t len)
{
	const json_t *sp = json_object_get(key, "sport");
	const json_t *dp = json_object_get(key, "dport");
	char s[32] = "", d[32] = "";

	if (json_is_string(key)) {
		snprintf(buf, len, "%s", json_string_value(key));
		return;
	}
	if (json_is_integer(sp))
		snprintf(s, sizeof(s), " sport %lld", (long long)json_integer_value(sp));
	if (json_is_integer(dp))
		snprintf(d, sizeof(d), " dport %lld", (long long)json_integer_value(dp));
	snprintf(buf, len, "%s%s%s", spillctl_jstr(key, "src", "?"), s, d);
}

/* "N" or, from an array of addresses, "N (a, b, c, ...)": the first three. */
static void
hot_replicas_text(const json_t *r, char *buf, size_t len)
{
	const json_t *e;
	size_t i, n, used;

	if (!json_is_array(r)) {
		snprintf(buf, len, "%lld",
		         (long long)(json_is_integer(r) ? json_integer_value(r) : 0));
		return;
	}
	n = json_array_size(r);
	used = (size_t)snprintf(buf, len, "%zu", n);
	json_array_foreach (r, i, e) {
		if (used >= len)
			break;
		if (i == 3) {
			used += (size_t)snprintf(buf + used, len - used, ", ...");
			break;
		}
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : " (",
		                         json_is_string(e) ? json_string_value(e) : "?");
	}
	if (n > 0 && used < len)
		snprintf(buf + used, len - used, ")");
}

const char *
spillctl_share_text(const json_t *o, char *buf, size_t len)
{
	const json_t *s = json_object_get(o, "share");

	if (json_is_number(s))
		snprintf(buf, len, "%.2f%%", json_number_value(s) * 100.0);
	else
		snprintf(buf, len, "-");
	return buf;
}

void
spillctl_hot_text_get(const json_t *o, struct spillctl_hot_text *t)
{
	snprintf(t->vip, sizeof(t->vip), "?");
	if (json_is_object(json_object_get(o, "vip")))
		spillctl_vip_text(json_object_get(o, "vip"), t->vip, sizeof(t->vip));
	spillctl_hot_key_text(json_object_get(o, "key"), t->key, sizeof(t->key));
	hot_replicas_text(json_object_get(o, "replicas"), t->replicas, sizeof(t->replicas));
}

void
spillctl_print_hot_overrides(const json_t *overrides, bool brief, unsigned int indent)
{
	const json_t *o;
	struct spillctl_table t;
	size_t i;

	spillctl_table_init(&t, brief ? "VIP|KEY|>SHARE|REPLICAS"
	                              : "VIP|KEY|>SHARE|REPLICAS|>SINCE WINDOW|PINNED");
	json_array_foreach (overrides, i, o) {
		struct spillctl_hot_text ht;
		char sh[32];

		spillctl_hot_text_get(o, &ht);
		spillctl_share_text(o, sh, sizeof(sh));
		if (brief)
			spillctl_table_add(&t, "%s\t%s\t%s\t%s", ht.vip, ht.key, sh, ht.replicas);
		else
			spillctl_table_add(&t, "%s\t%s\t%s\t%s\t%lld\t%s", ht.vip, ht.key, sh,
			                   ht.replicas, (long long)spillctl_jint(o, "since_window"),
			                   json_is_true(json_object_get(o, "pinned")) ? "yes"
			                                                              : "no");
	}
	spillctl_table_print(&t, indent);
	spillctl_table_free(&t);
}

void
spillctl_print_hot_keys(const json_t *stats)
{
	const json_t *hk = json_object_get(stats, "hot_keys");
	const json_t *e;
	size_t i;

	if (!json_is_array(hk))
		return;
	if (json_array_size(hk) == 0) {
		fputs("\nhot keys: (none)\n", stdout);
		return;
	}
	fputs("\nhot keys:\n", stdout);
	json_array_foreach (hk, i, e) {
		const json_t *vip = json_object_get(e, "vip");
		const json_t *key = json_object_get(e, "key");
		const json_t *share = json_object_get(e, "share");
		char vt[128] = "";
		char *other;

		if (json_is_object(vip))
			spillctl_vip_text(vip, vt, sizeof(vt));
		if (json_is_object(e) && json_is_string(key)) {
			printf("  %s%s%s", vt, *vt ? "  " : "", json_string_value(key));
			if (json_is_number(share))
				printf("  %.1f%%", json_number_value(share) * 100.0);
			fputc('\n', stdout);
			continue;
		}
		other = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
		printf("  %s\n", other != NULL ? other : "?");
		free(other);
	}
}
