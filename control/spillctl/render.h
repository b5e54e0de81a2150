/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reading and printing the server's replies for spillctl's commands: the
 * escaping of server strings, member accessors with defaults, JSON output
 * for --json, the VIP and hot-key notations, and the hot-key sections that
 * stats, hot and top share.
 */
#ifndef SPILLCTL_RENDER_H
#define SPILLCTL_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/*
 * @s as the terminal may see it: backslash, tab, newline and carriage return
 * as \\ \t \n \r, other control bytes (ESC, DEL...) and bytes that are not
 * UTF-8 as \xNN, C1 controls, line separators and bidi overrides as \uNNNN;
 * other UTF-8 text as it is. The copy lives in one of 8 buffers used in turn:
 * valid until 8 more calls. Never NULL ("?" when out of memory).
 */
const char *spillctl_esc(const char *s);

/* spillctl_esc() of spillctl_jstr(): a server string ready to print. */
const char *spillctl_jtext(const json_t *o, const char *key, const char *def);

/* String member @key of @o, or @def if absent or not a string (raw: escape to print). */
const char *spillctl_jstr(const json_t *o, const char *key, const char *def);

/* Number member @key of @o as an integer (reals truncated), 0 if absent. */
json_int_t spillctl_jint(const json_t *o, const char *key);

/* @v indented on stdout, then a newline; non-ASCII as \u escapes (still JSON). */
void spillctl_print_json(const json_t *v);

/* "192.0.2.10:80/tcp" or "[2001:db8::10]:443/udp" from a VIP object. */
void spillctl_vip_text(const json_t *v, char *buf, size_t len);

/* A key object as the command line writes it: "SRC[ sport P][ dport P]". */
void spillctl_hot_key_text(const json_t *key, char *buf, size_t len);

/* The "share" member of @o as a percentage ("12.50%"), or "-"; returns @buf. */
const char *spillctl_share_text(const json_t *o, char *buf, size_t len);

/* The VIP ("?" if none), key and replicas of a hot-key override or event, as text. */
struct spillctl_hot_text {
	char vip[128];
	char key[128];
	char replicas[256];
};

void spillctl_hot_text_get(const json_t *o, struct spillctl_hot_text *t);

/* The overrides of a hot_list result as a table (@brief: VIP, key, share, replicas). */
void spillctl_print_hot_overrides(const json_t *overrides, bool brief, unsigned int indent);

/* The "hot_keys" section, only when the stats document has one. */
void spillctl_print_hot_keys(const json_t *stats);

#endif /* SPILLCTL_RENDER_H */
