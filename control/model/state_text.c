/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Incremental encoding of the state file: the document without its VIPs is
 * encoded whole (it is small), each VIP's object comes from the cache when an
 * equal VIP was encoded last time, and the pieces are joined with the
 * indentation Jansson gives a VIP at depth 2 of the document.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/json_text.h"
#include "control/model/state_text.h"

/* What Jansson's JSON_INDENT(2) puts before an element of the root's "vips" array. */
#define VIP_INDENT "    "
#define VIPS_EMPTY "\"vips\": []\n}"

/* One VIP as last encoded: its inputs (copied) and its text, indented for depth 2. */
struct vip_text {
	struct lb_cfg_vip vip; /* backends points into be; health pointers never read */
	struct lb_cfg_backend *be;
	char *text;
	size_t len;
};

struct lb_state_text {
	struct vip_text *vips;
	uint32_t n_vips;
};

struct lb_state_text *
lb_state_text_new(void)
{
	return calloc(1, sizeof(struct lb_state_text));
}

static void
entries_free(struct vip_text *v, uint32_t n)
{
	for (uint32_t i = 0; v != NULL && i < n; i++) {
		free(v[i].be);
		free(v[i].text);
	}
	free(v);
}

void
lb_state_text_free(struct lb_state_text *st)
{
	if (st == NULL)
		return;
	entries_free(st->vips, st->n_vips);
	free(st);
}

static size_t
addr_len(uint8_t af)
{
	return af == LB_AF_INET ? 4 : 16;
}

/* Whether a and b encode the same (every field lb_config_backend_to_json writes). */
static bool
backend_same(const struct lb_cfg_backend *a, const struct lb_cfg_backend *b)
{
	return a->af == b->af && a->state == b->state && a->weight == b->weight &&
	       memcmp(&a->addr, &b->addr, addr_len(a->af)) == 0 && strcmp(a->name, b->name) == 0 &&
	       a->health_digest == b->health_digest;
}

/* Whether a and b encode the same (every field lb_config_vip_to_json writes). */
static bool
vip_same(const struct lb_cfg_vip *a, const struct lb_cfg_vip *b)
{
	if (a->af != b->af || a->proto != b->proto || a->port != b->port ||
	    a->key_mode != b->key_mode || a->encap != b->encap || a->hot_mode != b->hot_mode ||
	    a->n_backends != b->n_backends || a->health_digest != b->health_digest ||
	    memcmp(&a->addr, &b->addr, addr_len(a->af)) != 0)
		return false;
	for (uint32_t j = 0; j < a->n_backends; j++)
		if (!backend_same(&a->backends[j], &b->backends[j]))
			return false;
	return true;
}

/* The cached entry equal to v: the one at its index or a neighbour (a VIP added or removed before
 * it). */
static struct vip_text *
cache_find(struct lb_state_text *st, uint32_t i, const struct lb_cfg_vip *v)
{
	const int64_t at[3] = {i, (int64_t)i + 1, (int64_t)i - 1};

	for (int k = 0; k < 3; k++)
		if (at[k] >= 0 && at[k] < st->n_vips && st->vips[at[k]].text != NULL &&
		    vip_same(&st->vips[at[k]].vip, v))
			return &st->vips[at[k]];
	return NULL;
}

/* Bytes of text once every '\n' is followed by VIP_INDENT. */
static size_t
indented_len(const char *text, size_t len)
{
	size_t n = len;

	for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + len - p))) != NULL; p++)
		n += strlen(VIP_INDENT);
	return n;
}

static char *
put_indented(char *out, const char *text, size_t len)
{
	const char *end = text + len;

	while (text < end) {
		const char *nl = memchr(text, '\n', (size_t)(end - text));
		size_t n = nl != NULL ? (size_t)(nl - text) + 1 : (size_t)(end - text);

		memcpy(out, text, n);
		out += n;
		text += n;
		if (nl != NULL) {
			memcpy(out, VIP_INDENT, strlen(VIP_INDENT));
			out += strlen(VIP_INDENT);
		}
	}
	return out;
}

/* text with VIP_INDENT after every '\n' (malloc'd, *len set), or NULL. */
static char *
indented(const char *text, size_t *len)
{
	size_t n = strlen(text), total = indented_len(text, n);
	char *out = malloc(total + 1);

	if (out == NULL)
		return NULL;
	put_indented(out, text, n);
	out[total] = '\0';
	*len = total;
	return out;
}

/* Encode v into e (a copy of its inputs and its indented text). */
static int
entry_encode(struct vip_text *e, const struct lb_cfg_vip *v)
{
	json_t *o = lb_config_vip_to_json(v);

	char *flat = o != NULL ? lb_json_text_dumps(o, JSON_INDENT(2)) : NULL;

	json_decref(o);
	e->text = flat != NULL ? indented(flat, &e->len) : NULL;
	free(flat);
	e->be = malloc((v->n_backends ? v->n_backends : 1) * sizeof(*e->be));
	if (e->text == NULL || e->be == NULL) {
		free(e->text);
		free(e->be);
		e->text = NULL;
		e->be = NULL;
		return -ENOMEM;
	}
	if (v->n_backends != 0) /* a VIP without backends may have no array */
		memcpy(e->be, v->backends, v->n_backends * sizeof(*e->be));
	e->vip = *v;
	e->vip.backends = e->be;
	return 0;
}

/* The document without VIPs ("vips": [] last), as Jansson indents it. */
static char *
head_text(const struct lb_config *cfg)
{
	struct lb_config empty = *cfg;
	json_t *doc;
	char *s;

	empty.n_vips = 0;
	doc = lb_config_to_json(&empty);
	s = doc != NULL ? lb_json_text_dumps(doc, JSON_INDENT(2)) : NULL;
	json_decref(doc);
	return s;
}

int
lb_state_text_encode(struct lb_state_text *st, const struct lb_config *cfg, char **text,
                     size_t *len, unsigned int *encoded)
{
	struct vip_text *next = calloc(cfg->n_vips ? cfg->n_vips : 1, sizeof(*next));
	char *head = head_text(cfg), *out = NULL, *p;
	size_t hlen, total;
	unsigned int fresh = 0;
	uint32_t i;

	if (next == NULL || head == NULL)
		goto oom;
	hlen = strlen(head);
	if (hlen < strlen(VIPS_EMPTY) || strcmp(head + hlen - strlen(VIPS_EMPTY), VIPS_EMPTY) != 0)
		goto oom; /* not the shape Jansson gives: cannot happen */
	/* Each VIP: "\n" VIP_INDENT text, indented, and "," between them. */
	total = hlen + 2; /* the trailing "\n" and the NUL */
	for (i = 0; i < cfg->n_vips; i++) {
		struct vip_text *old = cache_find(st, i, &cfg->vips[i]);

		if (old != NULL) {
			next[i] = *old; /* moved: the old entry gives up its buffers */
			old->text = NULL;
			old->be = NULL;
		} else if (entry_encode(&next[i], &cfg->vips[i]) != 0) {
			goto oom;
		} else {
			fresh++;
		}
		total += 1 + strlen("\n" VIP_INDENT) + next[i].len;
	}
	total += strlen("\n  ]");
	out = malloc(total);
	if (out == NULL)
		goto oom;
	if (cfg->n_vips == 0) {
		p = out + hlen;
		memcpy(out, head, hlen);
	} else {
		size_t keep = hlen - strlen("[]\n}");

		memcpy(out, head, keep);
		p = out + keep;
		*p++ = '[';
		for (i = 0; i < cfg->n_vips; i++) {
			if (i > 0)
				*p++ = ',';
			memcpy(p, "\n" VIP_INDENT, strlen("\n" VIP_INDENT));
			p += strlen("\n" VIP_INDENT);
			memcpy(p, next[i].text, next[i].len);
			p += next[i].len;
		}
		memcpy(p, "\n  ]\n}", strlen("\n  ]\n}"));
		p += strlen("\n  ]\n}");
	}
	*p++ = '\n';
	*p = '\0';
	free(head);
	entries_free(st->vips, st->n_vips);
	st->vips = next;
	st->n_vips = cfg->n_vips;
	*text = out;
	*len = (size_t)(p - out);
	if (encoded != NULL)
		*encoded = fresh;
	return 0;
oom:
	/* Entries moved into next are freed with it: the cache starts again empty. */
	entries_free(next, next != NULL ? cfg->n_vips : 0);
	entries_free(st->vips, st->n_vips);
	st->vips = NULL;
	st->n_vips = 0;
	free(head);
	free(out);
	return -ENOMEM;
}
