/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pieces of output several spillctl commands share: server strings escaped
 * for the terminal, reply members with defaults, --json printing, a VIP
 * object as VIP notation, and the hot keys (key notation, replicas, share)
 * as "stats", "hot" and "top" show them.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "control/model/json_text.h"
#include "render.h"
#include "table.h"

/* Escaped copies handed out in turn: a few may be used in one printf. */
#define ESC_SLOTS 8

static struct {
	char *buf;
	size_t cap;
} g_esc[ESC_SLOTS];
static unsigned int g_esc_next;

/* Length of the valid UTF-8 sequence at @s and its code point, or 0 if invalid. */
static size_t
utf8_seq(const unsigned char *s, uint32_t *cp)
{
	size_t n;
	uint32_t c;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	c = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	/* Overlong, surrogate or above U+10FFFF. */
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Code points shown as \uXXXX: C1 controls, line separators, bidi overrides. */
static bool
cp_hidden(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0x2028 || c == 0x2029 || c == 0x200e ||
	       c == 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

const char *
spillctl_esc(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
	size_t need = strlen((const char *)p) * 4 + 1;
	unsigned int slot = g_esc_next++ % ESC_SLOTS;
	char *o;

	if (g_esc[slot].cap < need) {
		char *nb = realloc(g_esc[slot].buf, need);

		if (nb == NULL)
			return "?";
		g_esc[slot].buf = nb;
		g_esc[slot].cap = need;
	}
	o = g_esc[slot].buf;
	while (*p != '\0') {
		uint32_t cp;
		size_t n;

		if (*p == '\\' || *p == '\t' || *p == '\n' || *p == '\r') {
			*o++ = '\\';
			*o++ = *p == '\t' ? 't' : *p == '\n' ? 'n' : *p == '\r' ? 'r' : '\\';
			p++;
		} else if (*p < 0x20 || *p == 0x7f) {
			o += sprintf(o, "\\x%02x", *p++);
		} else if (*p < 0x80) {
			*o++ = (char)*p++;
		} else if ((n = utf8_seq(p, &cp)) == 0) {
			o += sprintf(o, "\\x%02x", *p++); /* not UTF-8: the byte */
		} else if (cp_hidden(cp)) {
			o += sprintf(o, "\\u%04x", (unsigned int)cp);
			p += n;
		} else {
			memcpy(o, p, n);
			o += n;
			p += n;
		}
	}
	*o = '\0';
	return g_esc[slot].buf;
}

const char *
spillctl_jtext(const json_t *o, const char *key, const char *def)
{
	return spillctl_esc(spillctl_jstr(o, key, def));
}

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
	/* Reals as the daemon writes them: shortest round-trip precision. */
	char *s = lb_json_text_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);

	if (s != NULL)
		fputs(s, stdout);
	free(s);
	fputc('\n', stdout);
}

void
spillctl_vip_text(const json_t *v, char *buf, size_t len)
{
	const char *addr = spillctl_jstr(v, "address", "?");
	bool v6 = strchr(addr, ':') != NULL;

	snprintf(buf, len, "%s%s%s:%lld/%s", v6 ? "[" : "", spillctl_esc(addr), v6 ? "]" : "",
	         (long long)spillctl_jint(v, "port"), spillctl_jtext(v, "protocol", "?"));
}

void
spillctl_hot_key_text(const json_t *key, char *buf, size_t len)
{
	const json_t *sp = json_object_get(key, "sport");
	const json_t *dp = json_object_get(key, "dport");
	char s[32] = "", d[32] = "";

	if (json_is_string(key)) {
		snprintf(buf, len, "%s", spillctl_esc(json_string_value(key)));
		return;
	}
	if (json_is_integer(sp))
		snprintf(s, sizeof(s), " sport %lld", (long long)json_integer_value(sp));
	if (json_is_integer(dp))
		snprintf(d, sizeof(d), " dport %lld", (long long)json_integer_value(dp));
	snprintf(buf, len, "%s%s%s", spillctl_jtext(key, "src", "?"), s, d);
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
		                         json_is_string(e) ? spillctl_esc(json_string_value(e))
		                                           : "?");
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
			printf("  %s%s%s", vt, *vt ? "  " : "",
			       spillctl_esc(json_string_value(key)));
			if (json_is_number(share))
				printf("  %.1f%%", json_number_value(share) * 100.0);
			fputc('\n', stdout);
			continue;
		}
		other = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
		printf("  %s\n", other != NULL ? other : "?");
		free(other);
	}
}
