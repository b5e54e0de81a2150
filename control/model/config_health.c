/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "health" objects of the configuration: a VIP's (the default for its
 * backends, with the VIP's fail-open fraction) and a backend's (a complete
 * replacement). Read with defaults and range checks, every rejection naming
 * the field; written back in full; digested so copies compare by content.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"
#include "control/model/config_internal.h"

static const char *const type_names[] = {"none", "tcp", "http", "udp", NULL};
static const char *const via_names[] = {"direct", "encap", NULL};
static const char *const on_down_names[] = {"move_flows", "keep_flows", NULL};

static int
hfail(char *err, size_t errlen, const char *path, const char *key, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "%s%s%s: ", path, *path ? "." : "", key);

	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int
get_u(const json_t *o, const char *path, const char *key, uint64_t min, uint64_t max, uint32_t *out,
      char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	json_int_t i;

	if (v == NULL)
		return 0;
	if (!json_is_integer(v))
		return hfail(err, errlen, path, key, "expected an integer, got %s",
		             lb_config_json_type(v));
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return hfail(err, errlen, path, key, "%lld out of range [%llu, %llu]", (long long)i,
		             (unsigned long long)min, (unsigned long long)max);
	*out = (uint32_t)i;
	return 0;
}

static int
get_name(const json_t *o, const char *path, const char *key, const char *const *names, uint8_t *out,
         char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	char list[96] = "";

	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return hfail(err, errlen, path, key, "expected a string, got %s",
		             lb_config_json_type(v));
	for (uint8_t i = 0; names[i] != NULL; i++) {
		if (strcmp(names[i], json_string_value(v)) == 0) {
			*out = i;
			return 0;
		}
		strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
		strncat(list, names[i], sizeof(list) - strlen(list) - 1);
	}
	return hfail(err, errlen, path, key, "\"%s\" is not one of: %s", json_string_value(v),
	             list);
}

static int
hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static int
get_hex(const json_t *o, const char *path, const char *key, uint8_t *out, uint16_t *len, char *err,
        size_t errlen)
{
	json_t *v = json_object_get(o, key);
	const char *s;
	size_t n;

	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return hfail(err, errlen, path, key, "expected a string of hex digits, got %s",
		             lb_config_json_type(v));
	s = json_string_value(v);
	n = strlen(s);
	if (n % 2 != 0 || n / 2 > LB_HEALTH_BYTES_MAX)
		return hfail(err, errlen, path, key,
		             "expected an even number of hex digits, at most %u bytes",
		             LB_HEALTH_BYTES_MAX);
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval((unsigned char)s[i]), lo = hexval((unsigned char)s[i + 1]);

		if (hi < 0 || lo < 0)
			return hfail(err, errlen, path, key, "byte %zu is not a hex digit", i + 1);
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*len = (uint16_t)(n / 2);
	return 0;
}

int
lb_config_health_from_json(const json_t *o, const char *path, bool vip, struct lb_health_conf *h,
                           char *err, size_t errlen)
{
	static const char *const vip_keys[] = {
	        "type", "port", "path",    "expect",  "interval_ms", "timeout_ms", "rise",
	        "fall", "via",  "on_down", "request", "response",    "fail_open",  NULL};
	const char *const *keys = vip_keys;
	const char *k;
	json_t *v;
	int rc;

	memset(h, 0, sizeof(*h));
	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s: expected an object, got %s", path,
		         lb_config_json_type(o));
		return -EINVAL;
	}
	k = lb_config_unknown_key(o, keys);
	if (k != NULL)
		return hfail(err, errlen, path, k, "unknown field");
	if (!vip && json_object_get(o, "fail_open") != NULL)
		return hfail(err, errlen, path, "fail_open", "only a VIP's health object has it");
	if (json_object_get(o, "type") == NULL)
		return hfail(err, errlen, path, "type",
		             "missing (required: \"tcp\", \"http\", \"udp\" or \"none\")");
	h->interval_ms = LB_HEALTH_DEFAULT_INTERVAL_MS;
	h->rise = LB_HEALTH_DEFAULT_RISE;
	h->fall = LB_HEALTH_DEFAULT_FALL;
	h->expect = LB_HEALTH_DEFAULT_EXPECT;
	h->fail_open = LB_HEALTH_DEFAULT_FAIL_OPEN;
	snprintf(h->path, sizeof(h->path), "/");
	if ((rc = get_name(o, path, "type", type_names, &h->type, err, errlen)) != 0 ||
	    (rc = get_name(o, path, "via", via_names, &h->via, err, errlen)) != 0 ||
	    (rc = get_name(o, path, "on_down", on_down_names, &h->on_down, err, errlen)) != 0)
		return rc;
	{
		uint32_t port = 0, expect = h->expect;

		if ((rc = get_u(o, path, "port", 0, 65535, &port, err, errlen)) != 0 ||
		    (rc = get_u(o, path, "expect", 100, 599, &expect, err, errlen)) != 0)
			return rc;
		h->port = (uint16_t)port;
		h->expect = (uint16_t)expect;
	}
	if ((rc = get_u(o, path, "interval_ms", LB_HEALTH_MIN_INTERVAL_MS,
	                LB_HEALTH_MAX_INTERVAL_MS, &h->interval_ms, err, errlen)) != 0)
		return rc;
	h->timeout_ms = h->interval_ms < LB_HEALTH_DEFAULT_TIMEOUT_MS
	                        ? h->interval_ms
	                        : LB_HEALTH_DEFAULT_TIMEOUT_MS;
	if ((rc = get_u(o, path, "timeout_ms", 1, h->interval_ms, &h->timeout_ms, err, errlen)) !=
	            0 ||
	    (rc = get_u(o, path, "rise", 1, LB_HEALTH_MAX_RISE_FALL, &h->rise, err, errlen)) != 0 ||
	    (rc = get_u(o, path, "fall", 1, LB_HEALTH_MAX_RISE_FALL, &h->fall, err, errlen)) != 0)
		return rc;
	v = json_object_get(o, "path");
	if (v != NULL) {
		const char *s = json_is_string(v) ? json_string_value(v) : NULL;

		if (s == NULL)
			return hfail(err, errlen, path, "path", "expected a string, got %s",
			             lb_config_json_type(v));
		if (s[0] != '/' || strlen(s) >= sizeof(h->path))
			return hfail(err, errlen, path, "path",
			             "must begin with '/' and be at most %zu bytes",
			             sizeof(h->path) - 1);
		for (const char *p = s; *p != '\0'; p++)
			if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
				return hfail(err, errlen, path, "path",
				             "byte %zu is not a visible ASCII character",
				             (size_t)(p - s) + 1);
		snprintf(h->path, sizeof(h->path), "%s", s);
	}
	if (h->type != LB_HEALTH_TYPE_HTTP) {
		if (json_object_get(o, "path") != NULL)
			return hfail(err, errlen, path, "path", "only for type \"http\"");
		if (json_object_get(o, "expect") != NULL)
			return hfail(err, errlen, path, "expect", "only for type \"http\"");
	}
	if ((rc = get_hex(o, path, "request", h->request, &h->request_len, err, errlen)) != 0 ||
	    (rc = get_hex(o, path, "response", h->response, &h->response_len, err, errlen)) != 0)
		return rc;
	if (h->type == LB_HEALTH_TYPE_UDP && h->request_len == 0)
		return hfail(err, errlen, path, "request",
		             "missing (required for type \"udp\": the request in hex)");
	if (h->type != LB_HEALTH_TYPE_UDP) {
		if (json_object_get(o, "request") != NULL)
			return hfail(err, errlen, path, "request", "only for type \"udp\"");
		if (json_object_get(o, "response") != NULL)
			return hfail(err, errlen, path, "response", "only for type \"udp\"");
	}
	v = json_object_get(o, "fail_open");
	if (v != NULL) {
		double d = json_is_number(v) ? json_number_value(v) : -1.0;

		if (!json_is_number(v))
			return hfail(err, errlen, path, "fail_open", "expected a number, got %s",
			             lb_config_json_type(v));
		if (!isfinite(d) || d < 0.0 || d > 1.0)
			return hfail(err, errlen, path, "fail_open", "%g out of range [0, 1]", d);
		h->fail_open = d;
	}
	/* The encapsulated prober completes a handshake only (health_encap.c). */
	if (h->type == LB_HEALTH_TYPE_HTTP && h->via == LB_HEALTH_VIA_ENCAP)
		return hfail(err, errlen, path, "via", "encap: not offered for type \"http\"");
	return 0;
}

json_t *
lb_config_health_to_json(const struct lb_health_conf *h, bool vip)
{
	json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:s}", "type",
	                      type_names[h->type], "port", (json_int_t)h->port, "interval_ms",
	                      (json_int_t)h->interval_ms, "timeout_ms", (json_int_t)h->timeout_ms,
	                      "rise", (json_int_t)h->rise, "fall", (json_int_t)h->fall, "via",
	                      via_names[h->via], "on_down", on_down_names[h->on_down]);
	bool ok = o != NULL;

	if (ok && h->type == LB_HEALTH_TYPE_HTTP)
		ok = json_object_set_new(o, "path", json_string(h->path)) == 0 &&
		     json_object_set_new(o, "expect", json_integer(h->expect)) == 0;
	if (ok && h->type == LB_HEALTH_TYPE_UDP) {
		char hex[2 * LB_HEALTH_BYTES_MAX + 1];

		for (uint16_t i = 0; i < h->request_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", h->request[i]);
		hex[2 * h->request_len] = '\0';
		ok = json_object_set_new(o, "request", json_string(hex)) == 0;
		for (uint16_t i = 0; i < h->response_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", h->response[i]);
		hex[2 * h->response_len] = '\0';
		ok = ok && (h->response_len == 0 ||
		            json_object_set_new(o, "response", json_string(hex)) == 0);
	}
	if (ok && vip)
		ok = json_object_set_new(o, "fail_open", json_real(h->fail_open)) == 0;
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

uint64_t
lb_config_health_digest(const struct lb_health_conf *h)
{
	/* FNV-1a over the fields the document holds (never 0 for a set object). */
	uint64_t d = 0xcbf29ce484222325ull;
	const uint8_t *p;
	struct lb_health_conf c;

	if (h == NULL)
		return 0;
	memset(&c, 0, sizeof(c));
	c.type = h->type;
	c.via = h->via;
	c.on_down = h->on_down;
	c.port = h->port;
	c.expect = h->expect;
	c.interval_ms = h->interval_ms;
	c.timeout_ms = h->timeout_ms;
	c.rise = h->rise;
	c.fall = h->fall;
	c.fail_open = h->fail_open;
	memcpy(c.path, h->path, strnlen(h->path, sizeof(c.path) - 1));
	c.request_len = h->request_len;
	c.response_len = h->response_len;
	memcpy(c.request, h->request, h->request_len);
	memcpy(c.response, h->response, h->response_len);
	p = (const uint8_t *)&c;
	for (size_t i = 0; i < sizeof(c); i++)
		d = (d ^ p[i]) * 0x100000001b3ull;
	return d != 0 ? d : 1;
}

struct lb_health_conf *
lb_config_health_dup(const struct lb_health_conf *h)
{
	struct lb_health_conf *c;

	if (h == NULL)
		return NULL;
	c = malloc(sizeof(*c));
	if (c != NULL)
		memcpy(c, h, sizeof(*c));
	return c;
}

const struct lb_health_conf *
lb_cfg_backend_health(const struct lb_cfg_vip *v, const struct lb_cfg_backend *b)
{
	return b->health != NULL ? b->health : v->health;
}

uint8_t
lb_cfg_backend_effective_state(const struct lb_cfg_backend *b)
{
	return b->state == LB_BACKEND_ACTIVE && b->health_out != 0 ? b->health_out : b->state;
}

void
lb_cfg_backend_clear(struct lb_cfg_backend *b)
{
	free(b->health);
	b->health = NULL;
	b->health_digest = 0;
}

void
lb_cfg_vip_clear(struct lb_cfg_vip *v)
{
	for (uint32_t j = 0; v->backends != NULL && j < v->n_backends; j++)
		lb_cfg_backend_clear(&v->backends[j]);
	free(v->backends);
	v->backends = NULL;
	v->n_backends = 0;
	free(v->health);
	v->health = NULL;
	v->health_digest = 0;
}
