/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Result shapes for spillctl: per method, the members a command reads and
 * their JSON types (docs/control-protocol.md), and the recursive check that
 * names the first member out of shape. Optional members may be absent, but
 * when present must have their type.
 */
#include <stdio.h>
#include <string.h>

#include "render.h"
#include "shape.h"

#define K_STR SPILLCTL_K_STR
#define K_INT SPILLCTL_K_INT
#define K_BOOL SPILLCTL_K_BOOL
#define K_NULL SPILLCTL_K_NULL
#define K_OBJ SPILLCTL_K_OBJ
#define K_ARR SPILLCTL_K_ARR
#define K_NUM SPILLCTL_K_NUM

static unsigned int
kind_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return K_STR;
	case JSON_INTEGER:
		return K_INT;
	case JSON_REAL:
		return SPILLCTL_K_REAL;
	case JSON_TRUE:
	case JSON_FALSE:
		return K_BOOL;
	case JSON_OBJECT:
		return K_OBJ;
	case JSON_ARRAY:
		return K_ARR;
	default:
		return K_NULL;
	}
}

static const char *
kind_name(unsigned int k)
{
	switch (k) {
	case K_STR:
		return "a string";
	case K_INT:
		return "an integer";
	case SPILLCTL_K_REAL:
		return "a real number";
	case K_BOOL:
		return "a boolean";
	case K_OBJ:
		return "an object";
	case K_ARR:
		return "an array";
	default:
		return "null";
	}
}

/* "a string or null" etc. from a set of kinds. */
static void
kinds_text(unsigned int kinds, char *buf, size_t len)
{
	static const unsigned int order[] = {K_OBJ,  K_ARR,  K_STR,          K_INT,
	                                     K_BOOL, K_NULL, SPILLCTL_K_REAL};
	size_t used = 0;

	buf[0] = '\0';
	if ((kinds & K_NUM) == K_NUM) {
		used += (size_t)snprintf(buf, len, "a number");
		kinds &= ~K_NUM;
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && used < len; i++)
		if (kinds & order[i])
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " or " : "",
			                         kind_name(order[i]));
}

bool
spillctl_shape_check(const json_t *v, const struct spillctl_shape *s, const char *root, char *why,
                     size_t len)
{
	char sub[256];

	if ((kind_of(v) & s->kinds) == 0) {
		char want[96];

		kinds_text(s->kinds, want, sizeof(want));
		snprintf(why, len, "%s: expected %s, got %s", root, want, kind_name(kind_of(v)));
		return false;
	}
	if (json_is_array(v) && s->each != NULL) {
		const json_t *e;
		size_t i;

		json_array_foreach (v, i, e) {
			snprintf(sub, sizeof(sub), "%s[%zu]", root, i);
			if (!spillctl_shape_check(e, s->each, sub, why, len))
				return false;
		}
	}
	if (!json_is_object(v))
		return true;
	for (const struct spillctl_member *m = s->members; m != NULL && m->key != NULL; m++) {
		const json_t *mv = json_object_get(v, m->key);

		snprintf(sub, sizeof(sub), "%s.%s", root, m->key);
		if (mv == NULL) {
			if (!m->required)
				continue;
			snprintf(why, len, "%s: missing", sub);
			return false;
		}
		if (!spillctl_shape_check(mv, m->shape, sub, why, len))
			return false;
	}
	if (s->each != NULL) {
		const char *k;
		json_t *mv;

		json_object_foreach ((json_t *)v, k, mv) {
			snprintf(sub, sizeof(sub), "%s.%s", root, spillctl_esc(k));
			if (!spillctl_shape_check(mv, s->each, sub, why, len))
				return false;
		}
	}
	return true;
}

/* ---- Building blocks ---- */

static const struct spillctl_shape str = {K_STR, NULL, NULL};
static const struct spillctl_shape str_or_null = {K_STR | K_NULL, NULL, NULL};
static const struct spillctl_shape integer = {K_INT, NULL, NULL};
static const struct spillctl_shape number = {K_NUM, NULL, NULL};
static const struct spillctl_shape boolean = {K_BOOL, NULL, NULL};
static const struct spillctl_shape ints = {K_OBJ, NULL, &integer};   /* {name: integer} */
static const struct spillctl_shape numbers = {K_OBJ, NULL, &number}; /* {name: number} */

const struct spillctl_shape spillctl_shape_any = {SPILLCTL_K_ANY, NULL, NULL};
const struct spillctl_shape spillctl_shape_object = {K_OBJ, NULL, NULL};

#define REQ(k, s)                                                                                  \
	{                                                                                          \
		k, true, &(s)                                                                      \
	}
#define OPT(k, s)                                                                                  \
	{                                                                                          \
		k, false, &(s)                                                                     \
	}

static const struct spillctl_member version_m[] = {
        REQ("version", str), REQ("protocol", integer), {NULL, false, NULL}};
const struct spillctl_shape spillctl_shape_version = {K_OBJ, version_m, NULL};

static const struct spillctl_member backend_m[] = {REQ("address", str),
                                                   OPT("name", str),
                                                   REQ("weight", integer),
                                                   REQ("state", str),
                                                   {NULL, false, NULL}};
const struct spillctl_shape spillctl_shape_backend = {K_OBJ, backend_m, NULL};
static const struct spillctl_shape backends = {K_ARR, NULL, &spillctl_shape_backend};

static const struct spillctl_member vip_m[] = {
        REQ("address", str), REQ("port", integer),      REQ("protocol", str), OPT("key", str),
        OPT("encap", str),   REQ("backends", backends), {NULL, false, NULL}};
const struct spillctl_shape spillctl_shape_vip = {K_OBJ, vip_m, NULL};
const struct spillctl_shape spillctl_shape_vip_list = {K_ARR, NULL, &spillctl_shape_vip};

/* A VIP named in a stats, hot_list or hot_events result. */
static const struct spillctl_member vip_ref_m[] = {
        REQ("address", str), REQ("port", integer), REQ("protocol", str), {NULL, false, NULL}};
static const struct spillctl_shape vip_ref = {K_OBJ, vip_ref_m, NULL};

/* ---- stats ---- */

static const struct spillctl_member totals_m[] = {REQ("rx_packets", integer),
                                                  REQ("rx_bytes", integer),
                                                  REQ("forwarded", integer),
                                                  REQ("forwarded_bytes", integer),
                                                  REQ("icmp_sent", integer),
                                                  REQ("exception", integer),
                                                  REQ("dropped", integer),
                                                  REQ("flow_hits", integer),
                                                  REQ("flow_misses", integer),
                                                  REQ("flow_evictions", integer),
                                                  REQ("flow_rechosen", integer),
                                                  REQ("fragments", integer),
                                                  REQ("icmp_errors", integer),
                                                  REQ("drops", ints),
                                                  {NULL, false, NULL}};
static const struct spillctl_shape totals = {K_OBJ, totals_m, NULL};

static const struct spillctl_member stat_backend_m[] = {
        REQ("address", str),       OPT("name", str),         REQ("weight", integer),
        REQ("state", str),         REQ("packets", integer),  REQ("bytes", integer),
        REQ("new_flows", integer), OPT("path_mtu", integer), {NULL, false, NULL}};
static const struct spillctl_shape stat_backend = {K_OBJ, stat_backend_m, NULL};
static const struct spillctl_shape stat_backends = {K_ARR, NULL, &stat_backend};

static const struct spillctl_member stat_vip_m[] = {REQ("address", str),
                                                    REQ("port", integer),
                                                    REQ("protocol", str),
                                                    REQ("packets", integer),
                                                    REQ("bytes", integer),
                                                    REQ("new_flows", integer),
                                                    REQ("backends", stat_backends),
                                                    {NULL, false, NULL}};
static const struct spillctl_shape stat_vip = {K_OBJ, stat_vip_m, NULL};
static const struct spillctl_shape stat_vips = {K_ARR, NULL, &stat_vip};

static const struct spillctl_member core_m[] = {
        REQ("lcore", integer),   REQ("rx_packets", integer), REQ("forwarded", integer),
        REQ("dropped", integer), REQ("flow_hits", integer),  REQ("flow_misses", integer),
        {NULL, false, NULL}};
static const struct spillctl_shape core = {K_OBJ, core_m, NULL};
static const struct spillctl_shape cores = {K_ARR, NULL, &core};
/* Printed as they come: a string key with its VIP and share, anything else as JSON. */
static const struct spillctl_shape hot_keys = {K_ARR, NULL, NULL};

static const struct spillctl_member stats_m[] = {REQ("generation", integer), REQ("totals", totals),
                                                 REQ("vips", stat_vips),     REQ("cores", cores),
                                                 OPT("hot_keys", hot_keys),  {NULL, false, NULL}};
const struct spillctl_shape spillctl_shape_stats = {K_OBJ, stats_m, NULL};

/* ---- maglev_table, config_save, drain ---- */

static const struct spillctl_member slot_backend_m[] = {
        REQ("address", str), OPT("name", str), REQ("slots", integer), {NULL, false, NULL}};
static const struct spillctl_shape slot_backend = {K_OBJ, slot_backend_m, NULL};
static const struct spillctl_shape slot_backends = {K_ARR, NULL, &slot_backend};
static const struct spillctl_shape slots = {K_ARR, NULL, &str_or_null};

static const struct spillctl_member maglev_m[] = {
        REQ("table_size", integer), REQ("generation", integer), REQ("backends", slot_backends),
        OPT("from", integer),       OPT("table", slots),        {NULL, false, NULL}};
const struct spillctl_shape spillctl_shape_maglev_table = {K_OBJ, maglev_m, NULL};

static const struct spillctl_member config_save_m[] = {REQ("path", str), {NULL, false, NULL}};
const struct spillctl_shape spillctl_shape_config_save = {K_OBJ, config_save_m, NULL};

static const struct spillctl_member bird_m[] = {OPT("announced", integer),
                                                OPT("pending", boolean),
                                                OPT("last_error", str_or_null),
                                                {NULL, false, NULL}};
static const struct spillctl_shape bird = {K_OBJ, bird_m, NULL};
static const struct spillctl_member hooks_m[] = {OPT("bird", bird), {NULL, false, NULL}};
static const struct spillctl_shape hooks = {K_OBJ, hooks_m, NULL};
static const struct spillctl_member drain_m[] = {
        OPT("drained", boolean), OPT("hooks", hooks), {NULL, false, NULL}};
const struct spillctl_shape spillctl_shape_drain = {K_OBJ, drain_m, NULL};

/* ---- hot keys ---- */

static const struct spillctl_member key_m[] = {
        OPT("src", str), OPT("sport", integer), OPT("dport", integer), {NULL, false, NULL}};
/* An object with these members, or a key already written as text. */
static const struct spillctl_shape key = {K_OBJ | K_STR, key_m, NULL};
/* The replica addresses, or only how many. */
static const struct spillctl_shape replicas = {K_ARR | K_INT, NULL, &str};

static const struct spillctl_member override_m[] = {
        REQ("vip", vip_ref),          REQ("key", key),
        REQ("share", number),         REQ("replicas", replicas),
        OPT("since_window", integer), OPT("pinned", boolean),
        {NULL, false, NULL}};
static const struct spillctl_shape override = {K_OBJ, override_m, NULL};
static const struct spillctl_shape overrides = {K_ARR, NULL, &override};

/* The controller's parameters: numbers, "threshold" and "threshold_low" ("auto"
 * or a number) and "sample" ("auto" or a shift). */
static const struct spillctl_shape int_or_str = {K_INT | K_STR, NULL, NULL};
static const struct spillctl_shape num_or_str = {K_NUM | K_STR, NULL, NULL};
static const struct spillctl_member hot_params_m[] = {
        OPT("threshold", num_or_str),  OPT("threshold_low", num_or_str), OPT("epsilon", number),
        OPT("demote_windows", number), OPT("window_ms", number),         OPT("margin", number),
        OPT("ewma_alpha", number),     OPT("sample", int_or_str),        {NULL, false, NULL}};
static const struct spillctl_shape hot_params = {K_OBJ, hot_params_m, NULL};

static const struct spillctl_member hot_list_m[] = {REQ("window", integer),
                                                    REQ("params", hot_params),
                                                    REQ("counters", numbers),
                                                    REQ("overrides", overrides),
                                                    {NULL, false, NULL}};
const struct spillctl_shape spillctl_shape_hot_list = {K_OBJ, hot_list_m, NULL};

static const struct spillctl_member event_m[] = {
        REQ("window", integer), REQ("event", str),         OPT("vip", vip_ref), OPT("key", key),
        OPT("share", number),   OPT("replicas", replicas), {NULL, false, NULL}};
static const struct spillctl_shape event = {K_OBJ, event_m, NULL};
const struct spillctl_shape spillctl_shape_hot_events = {K_ARR, NULL, &event};

const struct spillctl_shape spillctl_shape_hot_set = {K_OBJ, hot_params_m, NULL};
