/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ids beyond what Jansson holds (see rpc_id.h): a small scanner over the
 * request text that follows strings, objects and arrays only far enough to
 * find the top-level "id" members, and the splice that puts such an id back,
 * byte for byte, into a reply. The text is validated by Jansson afterwards:
 * the scanner only locates tokens, and stops at anything unexpected.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "control/rpc/rpc_id.h"

static const char *
ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* p at '"': past the closing quote, or NULL. */
static const char *
skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

static bool
number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Past one value (nested containers by depth), or NULL. */
static const char *
skip_value(const char *p, const char *end)
{
	unsigned long depth = 0;

	if (p >= end)
		return NULL;
	if (*p != '{' && *p != '[') {
		if (*p == '"')
			return skip_string(p, end);
		while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
		       *p != '\r' && *p != '\n')
			p++;
		return p;
	}
	while (p < end) {
		if (*p == '"') {
			p = skip_string(p, end);
			if (p == NULL)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return NULL;
}

/*
 * p[0..n) is exactly one JSON number (RFC 8259, 6):
 * -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
 */
static bool
json_number(const char *p, size_t n)
{
	const char *end = p + n;

	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (p < end && *p >= '1' && *p <= '9')
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	else
		return false;
	if (p < end && *p == '.') {
		if (++p >= end || *p < '0' || *p > '9')
			return false;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return false;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	return p == end;
}

/*
 * A number token Jansson refuses as too large. Jansson reports the overflow
 * of a leading number before it looks at what follows, so the token's own
 * grammar is checked first: anything else is left to Jansson to reject.
 */
static bool
overflows(const char *p, size_t n)
{
	json_error_t je;
	json_t *v;

	if (!json_number(p, n))
		return false;
	v = json_loadb(p, n, JSON_DECODE_ANY, &je);
	if (v != NULL) {
		json_decref(v);
		return false;
	}
	return json_error_code(&je) == json_error_numeric_overflow;
}

/* p at '{': record its "id" member if it overflows; past the object, or NULL. */
static const char *
scan_object(const char *line, const char *p, const char *end, size_t call,
            struct lb_rpc_big_id *ids, size_t max, size_t *n)
{
	for (p = ws(p + 1, end); p < end && *p != '}';) {
		const char *k = p, *v;
		bool is_id;

		if (*p != '"' || (p = skip_string(p, end)) == NULL)
			return NULL;
		is_id = p - k == 4 && memcmp(k, "\"id\"", 4) == 0;
		p = ws(p, end);
		if (p >= end || *p != ':')
			return NULL;
		v = ws(p + 1, end);
		if (v < end && (*v == '-' || (*v >= '0' && *v <= '9'))) {
			for (p = v; p < end && number_char(*p);)
				p++;
			if (is_id && *n < max && overflows(v, (size_t)(p - v)))
				ids[(*n)++] = (struct lb_rpc_big_id){.call = call,
				                                     .off = (size_t)(v - line),
				                                     .len = (size_t)(p - v)};
		} else if ((p = skip_value(v, end)) == NULL) {
			return NULL;
		}
		p = ws(p, end);
		if (p >= end || *p != ',')
			break;
		p = ws(p + 1, end);
	}
	return p < end && *p == '}' ? p + 1 : NULL;
}

static size_t
find_ids(const char *line, size_t len, struct lb_rpc_big_id *ids, size_t max)
{
	const char *end = line + len, *p = ws(line, end);
	size_t n = 0;

	if (p < end && *p == '{') {
		scan_object(line, p, end, 0, ids, max, &n);
		return n;
	}
	if (p >= end || *p != '[')
		return 0;
	for (size_t call = 0;; call++) {
		p = ws(p + 1, end);
		if (p < end && *p == '{')
			p = scan_object(line, p, end, call, ids, max, &n);
		else
			p = skip_value(p, end);
		if (p == NULL)
			break;
		p = ws(p, end);
		if (p >= end || *p != ',')
			break;
	}
	return n;
}

int
lb_rpc_big_ids(const char *line, size_t len, struct lb_rpc_big_id *ids, size_t max, char **out,
               size_t *outlen)
{
	size_t n = find_ids(line, len, ids, max), o = 0, from = 0;
	char *s;

	*out = NULL;
	*outlen = 0;
	if (n == 0)
		return 0;
	/* Each replacement ("0") is no longer than what it replaces. */
	s = malloc(len + 1);
	if (s == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(s + o, line + from, ids[i].off - from);
		o += ids[i].off - from;
		s[o++] = '0';
		from = ids[i].off + ids[i].len;
	}
	memcpy(s + o, line + from, len - from);
	o += len - from;
	s[o] = '\0';
	*out = s;
	*outlen = o;
	return (int)n;
}

int
lb_rpc_without_big_numbers(const char *line, size_t len, char **out, size_t *outlen)
{
	const char *p = line, *end = line + len;
	size_t o = 0;
	int n = 0;
	char *s;

	*out = NULL;
	*outlen = 0;
	/* Each replacement ("0") is no longer than what it replaces. */
	s = malloc(len + 1);
	if (s == NULL)
		return -ENOMEM;
	while (p < end) {
		const char *t = p;

		if (*p == '"') {
			p = skip_string(p, end);
			if (p == NULL)
				p = end;
		} else if (*p == '-' || (*p >= '0' && *p <= '9')) {
			while (p < end && number_char(*p))
				p++;
			if (overflows(t, (size_t)(p - t))) {
				s[o++] = '0';
				n++;
				continue;
			}
		} else {
			p++;
		}
		memcpy(s + o, t, (size_t)(p - t));
		o += (size_t)(p - t);
	}
	if (n == 0) {
		free(s);
		return 0;
	}
	s[o] = '\0';
	*out = s;
	*outlen = o;
	return n;
}

char *
lb_rpc_splice_id(const char *reply, const char *raw, size_t len)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	const size_t hl = sizeof(head) - 1, nl = 4; /* "null" */
	size_t rest;
	char *s;

	if (reply == NULL || strncmp(reply, head, hl) != 0 || strncmp(reply + hl, "null", nl) != 0)
		return NULL;
	rest = strlen(reply + hl + nl);
	s = malloc(hl + len + rest + 1);
	if (s == NULL)
		return NULL;
	memcpy(s, head, hl);
	memcpy(s + hl, raw, len);
	memcpy(s + hl + len, reply + hl + nl, rest + 1);
	return s;
}
