/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration loader: JSON document -> struct lb_config, with every field
 * checked for type, range and uniqueness. A rejection names the field's path
 * and says what is wrong; nothing half-built escapes. The model's copies,
 * frees and address helpers are config_model.c's; the name and duplicate
 * checks config_check.c's; the way back to a document is config_json.c's.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"
#include "control/model/config_internal.h"
#include "dataplane/icmp_limit.h"
#include "control/base/prime.h"

/* Error context: the path of the field being read, e.g. "vips[1].backends[0]". */
struct ctx {
	char *err;
	size_t errlen;
};

static int
fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lb_config_vfail(c->err, c->errlen, path, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const char *
lb_config_json_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

const char *
lb_config_unknown_key(const json_t *obj, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)obj, k, v) {
		const char *const *a;

		for (a = allowed; *a != NULL; a++)
			if (strcmp(*a, k) == 0)
				break;
		if (*a == NULL)
			return k;
	}
	return NULL;
}

/* Reject keys not in the allowed list (a typo must not be silently ignored). */
static int
check_keys(struct ctx *c, const char *path, const json_t *obj, const char *const *allowed)
{
	const char *k = lb_config_unknown_key(obj, allowed);
	char sub[256];

	if (k == NULL)
		return 0;
	snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
	return fail(c, sub, "unknown field");
}

static void
join(char *buf, size_t len, const char *path, const char *key)
{
	snprintf(buf, len, "%s%s%s", path, *path ? "." : "", key);
}

static int
get_obj(struct ctx *c, const char *path, const json_t *parent, const char *key, json_t **out)
{
	json_t *v = json_object_get(parent, key);
	char p[256];

	*out = NULL;
	if (v == NULL)
		return 0;
	join(p, sizeof(p), path, key);
	if (!json_is_object(v))
		return fail(c, p, "expected an object, got %s", lb_config_json_type(v));
	*out = v;
	return 0;
}

static int
get_str(struct ctx *c, const char *path, const json_t *obj, const char *key, const char **out,
        int required)
{
	json_t *v = json_object_get(obj, key);
	char p[256];

	join(p, sizeof(p), path, key);
	if (v == NULL) {
		if (required)
			return fail(c, p, "missing (required)");
		return 0;
	}
	if (!json_is_string(v))
		return fail(c, p, "expected a string, got %s", lb_config_json_type(v));
	*out = json_string_value(v);
	return 0;
}

static int
get_uint(struct ctx *c, const char *path, const json_t *obj, const char *key, uint64_t min,
         uint64_t max, uint64_t *out, int required)
{
	json_t *v = json_object_get(obj, key);
	char p[256];
	json_int_t i;

	join(p, sizeof(p), path, key);
	if (v == NULL) {
		if (required)
			return fail(c, p, "missing (required)");
		return 0;
	}
	if (!json_is_integer(v))
		return fail(c, p, "expected an integer, got %s", lb_config_json_type(v));
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return fail(c, p, "%lld out of range [%llu, %llu]", (long long)i,
		            (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)i;
	return 0;
}

/* Map a string field to one of a list of names; index in *out. */
static int
get_enum(struct ctx *c, const char *path, const json_t *obj, const char *key,
         const char *const *names, uint8_t *out)
{
	const char *s = NULL;
	char p[256];
	int rc;

	rc = get_str(c, path, obj, key, &s, 0);
	if (rc != 0 || s == NULL)
		return rc;
	for (uint8_t i = 0; names[i] != NULL; i++) {
		if (strcmp(names[i], s) == 0) {
			*out = i;
			return 0;
		}
	}
	join(p, sizeof(p), path, key);
	{
		char list[128] = "";

		for (int i = 0; names[i] != NULL; i++) {
			strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
			strncat(list, names[i], sizeof(list) - strlen(list) - 1);
		}
		return fail(c, p, "\"%s\" is not one of: %s", s, list);
	}
}

static int
get_addr(struct ctx *c, const char *path, const json_t *obj, const char *key, uint8_t *af,
         union lb_ip *ip, int required)
{
	const char *s = NULL;
	char p[256];
	int rc;

	rc = get_str(c, path, obj, key, &s, required);
	if (rc != 0 || s == NULL)
		return rc;
	join(p, sizeof(p), path, key);
	if (lb_ip_from_str(s, af, ip) != 0)
		return fail(c, p, "not an IPv4 or IPv6 address: \"%s\"", s);
	return 0;
}

static const char *const proto_names[] = {"tcp", "udp", NULL};
const char *const lb_config_key_names[] = {"5tuple", "src_ip", "src_ip_dport", NULL};
const char *const lb_config_encap_names[] = {"ipip", "gue", NULL};
const char *const lb_config_state_names[] = {"active", "draining", "down", NULL};
const char *const lb_config_too_big_names[] = {"icmp", "drop", NULL};

/* encap.vlan: "strip" (default), "keep", or a VLAN id 1-4094. */
static int
parse_vlan(struct ctx *c, const json_t *v, struct lb_encap_conf *e)
{
	e->vlan = LB_VLAN_STRIP;
	e->vlan_id = 0;
	if (v == NULL)
		return 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (strcmp(s, "strip") == 0)
			return 0;
		if (strcmp(s, "keep") == 0) {
			e->vlan = LB_VLAN_KEEP;
			return 0;
		}
		return fail(c, "encap.vlan", "is not one of: strip, keep, or a VLAN id 1-4094");
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 4094)
		return fail(c, "encap.vlan", "is not one of: strip, keep, or a VLAN id 1-4094");
	e->vlan = LB_VLAN_FIXED;
	e->vlan_id = (uint16_t)json_integer_value(v);
	return 0;
}

static int
parse_encap(struct ctx *c, const json_t *root, struct lb_config *cfg)
{
	static const char *const keys[] = {"source_v4", "source_v6", "next_hop_mac", "mtu",
	                                   "gue_port",  "too_big",   "vlan",         NULL};
	struct lb_encap_conf *e = &cfg->encap;
	const char *mac = NULL;
	json_t *o;
	uint64_t u;
	uint8_t af;
	int rc;

	e->mtu = 1500;
	e->gue_port = htons(LB_GUE_DEFAULT_PORT);
	e->too_big = LB_TOO_BIG_ICMP;
	if ((rc = get_obj(c, "", root, "encap", &o)) != 0)
		return rc;
	if (o == NULL)
		return fail(c, "encap",
		            "missing (required: at least source_v4 or source_v6, "
		            "and next_hop_mac)");
	if ((rc = check_keys(c, "encap", o, keys)) != 0)
		return rc;
	if ((rc = get_addr(c, "encap", o, "source_v4", &af, &e->src4, 0)) != 0)
		return rc;
	if (json_object_get(o, "source_v4") != NULL) {
		if (af != LB_AF_INET)
			return fail(c, "encap.source_v4", "not an IPv4 address");
		e->has_src4 = true;
	}
	if ((rc = get_addr(c, "encap", o, "source_v6", &af, &e->src6, 0)) != 0)
		return rc;
	if (json_object_get(o, "source_v6") != NULL) {
		if (af != LB_AF_INET6)
			return fail(c, "encap.source_v6", "not an IPv6 address");
		e->has_src6 = true;
	}
	if (!e->has_src4 && !e->has_src6)
		return fail(c, "encap", "needs source_v4 or source_v6 (outer source address)");
	if ((rc = get_str(c, "encap", o, "next_hop_mac", &mac, 1)) != 0)
		return rc;
	{
		unsigned int m[6];
		char tail;

		/* Exactly xx:xx:xx:xx:xx:xx; sscanf alone would take "+2", " 2" or "-1". */
		bool shape = strlen(mac) == 17;

		for (int i = 0; shape && i < 17; i++)
			shape = (i % 3 == 2) ? mac[i] == ':' : isxdigit((unsigned char)mac[i]) != 0;
		if (!shape || sscanf(mac, "%2x:%2x:%2x:%2x:%2x:%2x%c", &m[0], &m[1], &m[2], &m[3],
		                     &m[4], &m[5], &tail) != 6)
			return fail(c, "encap.next_hop_mac", "not a MAC address: \"%s\"", mac);
		for (int i = 0; i < 6; i++)
			e->next_hop_mac[i] = (uint8_t)m[i];
	}
	u = e->mtu;
	if ((rc = get_uint(c, "encap", o, "mtu", 1280, 9000, &u, 0)) != 0)
		return rc;
	e->mtu = (uint16_t)u;
	u = LB_GUE_DEFAULT_PORT;
	if ((rc = get_uint(c, "encap", o, "gue_port", 1, 65535, &u, 0)) != 0)
		return rc;
	e->gue_port = htons((uint16_t)u);
	if ((rc = get_enum(c, "encap", o, "too_big", lb_config_too_big_names, &e->too_big)) != 0)
		return rc;
	return parse_vlan(c, json_object_get(o, "vlan"), e);
}

/*
 * The hot object: every parameter at its default (params.h), then those the
 * document gives; threshold_low left "auto" under a numeric threshold becomes
 * threshold / LB_HOT_THRESHOLD_LOW_DIV.
 */
static int
parse_hot(struct ctx *c, const json_t *root, struct lb_config *cfg)
{
	double val[LB_HOT_P_N];
	bool given[LB_HOT_P_N];
	json_t *o;
	int rc;

	for (int i = 0; i < LB_HOT_P_N; i++)
		lb_config_hot_set(cfg, (enum lb_hot_param)i, lb_hot_param_table[i].def);
	if ((rc = get_obj(c, "", root, "hot", &o)) != 0)
		return rc;
	if (o != NULL) {
		rc = lb_config_hot_params_from_json(o, "hot", false, val, given, c->err, c->errlen);
		if (rc != 0)
			return rc;
		for (int i = 0; i < LB_HOT_P_N; i++)
			if (given[i])
				lb_config_hot_set(cfg, (enum lb_hot_param)i, val[i]);
	}
	if (cfg->hot.threshold_low == LB_HOT_THRESHOLD_LOW_AUTO &&
	    cfg->hot.threshold != LB_HOT_THRESHOLD_AUTO)
		cfg->hot.threshold_low = cfg->hot.threshold / LB_HOT_THRESHOLD_LOW_DIV;
	return 0;
}

static int
parse_globals(struct ctx *c, const json_t *root, struct lb_config *cfg)
{
	static const char *const maglev_keys[] = {"table_size", "seed", NULL};
	static const char *const flow_keys[] = {
	        "capacity",        "tcp_idle_ms",   "udp_idle_ms",    "syn_idle_ms",
	        "closing_idle_ms", "new_flow_rate", "new_flow_burst", NULL};
	static const char *const icmp_keys[] = {"rate_per_sec", "burst", NULL};
	const char *seed = NULL;
	json_t *o;
	uint64_t u;
	int rc;

	cfg->table_size = LB_MAGLEV_DEFAULT_SIZE;
	snprintf(cfg->seed, sizeof(cfg->seed), "spillway");
	if ((rc = get_obj(c, "", root, "maglev", &o)) != 0)
		return rc;
	if (o != NULL) {
		if ((rc = check_keys(c, "maglev", o, maglev_keys)) != 0)
			return rc;
		u = cfg->table_size;
		if ((rc = get_uint(c, "maglev", o, "table_size", 3, LB_MAGLEV_MAX_SIZE, &u, 0)) !=
		    0)
			return rc;
		if (!lb_is_prime((uint32_t)u))
			return fail(c, "maglev.table_size", "%llu is not prime",
			            (unsigned long long)u);
		cfg->table_size = (uint32_t)u;
		if ((rc = get_str(c, "maglev", o, "seed", &seed, 0)) != 0)
			return rc;
		if (seed != NULL) {
			if (strlen(seed) == 0 || strlen(seed) >= sizeof(cfg->seed))
				return fail(c, "maglev.seed", "must be 1 to %zu bytes",
				            sizeof(cfg->seed) - 1);
			snprintf(cfg->seed, sizeof(cfg->seed), "%s", seed);
		}
	}

	cfg->flows.capacity = LB_FLOW_DEFAULT_CAPACITY;
	cfg->flows.tcp_idle_ms = LB_FLOW_DEFAULT_TCP_IDLE_MS;
	cfg->flows.udp_idle_ms = LB_FLOW_DEFAULT_UDP_IDLE_MS;
	cfg->flows.syn_idle_ms = LB_FLOW_DEFAULT_SYN_IDLE_MS;
	cfg->flows.closing_idle_ms = LB_FLOW_DEFAULT_CLOSING_IDLE_MS;
	cfg->flows.new_flow_rate = 0;
	cfg->flows.new_flow_burst = LB_FLOW_DEFAULT_NEW_FLOW_BURST;
	if ((rc = get_obj(c, "", root, "flows", &o)) != 0)
		return rc;
	if (o != NULL) {
		if ((rc = check_keys(c, "flows", o, flow_keys)) != 0)
			return rc;
		u = cfg->flows.capacity;
		if ((rc = get_uint(c, "flows", o, "capacity", 64, 1u << 27, &u, 0)) != 0)
			return rc;
		cfg->flows.capacity = (uint32_t)u;
		u = cfg->flows.tcp_idle_ms;
		if ((rc = get_uint(c, "flows", o, "tcp_idle_ms", 1, 86400000, &u, 0)) != 0)
			return rc;
		cfg->flows.tcp_idle_ms = (uint32_t)u;
		u = cfg->flows.udp_idle_ms;
		if ((rc = get_uint(c, "flows", o, "udp_idle_ms", 1, 86400000, &u, 0)) != 0)
			return rc;
		cfg->flows.udp_idle_ms = (uint32_t)u;
		u = cfg->flows.syn_idle_ms;
		if ((rc = get_uint(c, "flows", o, "syn_idle_ms", 1, 86400000, &u, 0)) != 0)
			return rc;
		cfg->flows.syn_idle_ms = (uint32_t)u;
		u = cfg->flows.closing_idle_ms;
		if ((rc = get_uint(c, "flows", o, "closing_idle_ms", 1, 86400000, &u, 0)) != 0)
			return rc;
		cfg->flows.closing_idle_ms = (uint32_t)u;
		u = cfg->flows.new_flow_rate;
		if ((rc = get_uint(c, "flows", o, "new_flow_rate", 0, 100000000, &u, 0)) != 0)
			return rc;
		cfg->flows.new_flow_rate = (uint32_t)u;
		u = cfg->flows.new_flow_burst;
		if ((rc = get_uint(c, "flows", o, "new_flow_burst", 1, 100000000, &u, 0)) != 0)
			return rc;
		cfg->flows.new_flow_burst = (uint32_t)u;
	}

	cfg->icmp.rate_per_sec = LB_ICMP_DEFAULT_RATE;
	cfg->icmp.burst = LB_ICMP_DEFAULT_BURST;
	if ((rc = get_obj(c, "", root, "icmp", &o)) != 0)
		return rc;
	if (o != NULL) {
		if ((rc = check_keys(c, "icmp", o, icmp_keys)) != 0)
			return rc;
		u = cfg->icmp.rate_per_sec;
		if ((rc = get_uint(c, "icmp", o, "rate_per_sec", 1, LB_ICMP_MAX_RATE, &u, 0)) != 0)
			return rc;
		cfg->icmp.rate_per_sec = (uint32_t)u;
		u = cfg->icmp.burst;
		if ((rc = get_uint(c, "icmp", o, "burst", 1, LB_ICMP_MAX_BURST, &u, 0)) != 0)
			return rc;
		cfg->icmp.burst = (uint32_t)u;
	}

	return parse_hot(c, root, cfg);
}

/* A health object under path into a new *out (freed again on failure). */
static int
parse_health(struct ctx *c, const char *path, const json_t *o, bool vip,
             struct lb_health_conf **out, uint64_t *digest)
{
	struct lb_health_conf *h = malloc(sizeof(*h));
	char p[256];
	int rc;

	if (h == NULL)
		return fail(c, path, "out of memory"), -ENOMEM;
	join(p, sizeof(p), path, "health");
	rc = lb_config_health_from_json(o, p, vip, h, c->err, c->errlen);
	if (rc != 0) {
		free(h);
		return rc;
	}
	*out = h;
	*digest = lb_config_health_digest(h);
	return 0;
}

/* A check needs a port: its own, else the VIP's. */
static int
check_health_port(struct ctx *c, const char *path, const struct lb_health_conf *h,
                  uint16_t vip_port)
{
	if (h == NULL || h->type == LB_HEALTH_TYPE_NONE || h->port != 0 || vip_port != 0)
		return 0;
	return fail(c, path, "health.port: required when the VIP's port is 0");
}

static int
parse_backend(struct ctx *c, const char *path, const json_t *o, const struct lb_config *cfg,
              struct lb_cfg_backend *b)
{
	static const char *const keys[] = {"address", "weight", "name", "state", "health", NULL};
	const char *name = NULL;
	json_t *h;
	uint64_t u = 1;
	int rc;

	if (!json_is_object(o))
		return fail(c, path, "expected an object, got %s", lb_config_json_type(o));
	if ((rc = check_keys(c, path, o, keys)) != 0)
		return rc;
	if ((rc = get_addr(c, path, o, "address", &b->af, &b->addr, 1)) != 0)
		return rc;
	if (b->af == LB_AF_INET && !cfg->encap.has_src4)
		return fail(c, path, "IPv4 backend needs encap.source_v4");
	if (b->af == LB_AF_INET6 && !cfg->encap.has_src6)
		return fail(c, path, "IPv6 backend needs encap.source_v6");
	if ((rc = get_uint(c, path, o, "weight", 0, 65535, &u, 0)) != 0)
		return rc;
	b->weight = (uint32_t)u;
	if ((rc = get_str(c, path, o, "name", &name, 0)) != 0)
		return rc;
	if (name != NULL) {
		char p[256];

		join(p, sizeof(p), path, "name");
		if ((rc = lb_config_check_name(c->err, c->errlen, p, name)) != 0)
			return rc;
		snprintf(b->name, sizeof(b->name), "%s", name);
	}
	b->state = LB_BACKEND_ACTIVE;
	if ((rc = get_enum(c, path, o, "state", lb_config_state_names, &b->state)) != 0)
		return rc;
	h = json_object_get(o, "health");
	return h != NULL ? parse_health(c, path, h, false, &b->health, &b->health_digest) : 0;
}

static int
parse_vip(struct ctx *c, const char *path, const json_t *o, const struct lb_config *cfg,
          struct lb_cfg_vip *v, uint32_t *next_backend_id)
{
	static const char *const keys[] = {"address",  "port",     "protocol", "key", "encap",
	                                   "backends", "hot_mode", "health",   NULL};
	json_t *arr;
	uint64_t u = 0;
	uint8_t proto = 0;
	size_t i;
	int rc;

	if (!json_is_object(o))
		return fail(c, path, "expected an object, got %s", lb_config_json_type(o));
	if ((rc = check_keys(c, path, o, keys)) != 0)
		return rc;
	if ((rc = get_addr(c, path, o, "address", &v->af, &v->addr, 1)) != 0)
		return rc;
	if ((rc = get_uint(c, path, o, "port", 0, 65535, &u, 1)) != 0)
		return rc;
	v->port = (uint16_t)u;
	if (json_object_get(o, "protocol") == NULL) {
		char p[256];

		join(p, sizeof(p), path, "protocol");
		return fail(c, p, "missing (required: \"tcp\" or \"udp\")");
	}
	if ((rc = get_enum(c, path, o, "protocol", proto_names, &proto)) != 0)
		return rc;
	v->proto = proto == 0 ? IPPROTO_TCP : IPPROTO_UDP;
	v->key_mode = LB_KEY_5TUPLE;
	if ((rc = get_enum(c, path, o, "key", lb_config_key_names, &v->key_mode)) != 0)
		return rc;
	v->hot_mode = lb_config_hot_mode_default(v->key_mode);
	if (json_object_get(o, "hot_mode") != NULL &&
	    (rc = lb_config_hot_mode_from_json(json_object_get(o, "hot_mode"), v->proto, path,
	                                       &v->hot_mode, c->err, c->errlen)) != 0)
		return rc;
	v->encap = LB_ENCAP_IPIP;
	if ((rc = get_enum(c, path, o, "encap", lb_config_encap_names, &v->encap)) != 0)
		return rc;
	if (json_object_get(o, "health") != NULL &&
	    ((rc = parse_health(c, path, json_object_get(o, "health"), true, &v->health,
	                        &v->health_digest)) != 0 ||
	     (rc = check_health_port(c, path, v->health, v->port)) != 0))
		return rc;

	arr = json_object_get(o, "backends");
	if (arr == NULL)
		return 0;
	{
		char p[256];

		join(p, sizeof(p), path, "backends");
		if (!json_is_array(arr))
			return fail(c, p, "expected an array, got %s", lb_config_json_type(arr));
		/* Distinct codes so the control socket can tell a limit (-ENOSPC) and
		 * an allocation failure (-ENOMEM) from a malformed field. One limit:
		 * backend ids (LB_FLOW_BACKEND_BITS) number the memberships of all
		 * VIPs, so it bounds one VIP's too, on the array's size alone. */
		if (*next_backend_id + json_array_size(arr) > LB_MAX_BACKENDS) {
			fail(c, p, "too many backends in all (at most %u)", LB_MAX_BACKENDS);
			return -ENOSPC;
		}
		v->backends = calloc(json_array_size(arr) ? json_array_size(arr) : 1,
		                     sizeof(*v->backends));
		if (v->backends == NULL) {
			fail(c, p, "out of memory");
			return -ENOMEM;
		}
		for (i = 0; i < json_array_size(arr); i++) {
			struct lb_cfg_backend *b = &v->backends[i];
			char bp[256];

			snprintf(bp, sizeof(bp), "%s[%zu]", p, i);
			if ((rc = parse_backend(c, bp, json_array_get(arr, i), cfg, b)) != 0)
				return rc;
			v->n_backends++;
			if ((rc = check_health_port(c, bp, b->health, v->port)) != 0)
				return rc;
			b->id = (uint16_t)(*next_backend_id)++;
			b->gen = 1;
		}
		if ((rc = lb_config_check_duplicates(c->err, c->errlen, p, v)) != 0)
			return rc;
	}
	return 0;
}

struct lb_config *
lb_config_from_json(const json_t *root, char *err, size_t errlen)
{
	static const char *const keys[] = {"encap", "maglev", "flows", "icmp", "hot", "vips", NULL};
	struct ctx c = {err, errlen};
	struct lb_config *cfg;
	uint32_t next_backend_id = 0;
	json_t *vips;

	if (!json_is_object(root)) {
		fail(&c, "(document)", "expected an object, got %s", lb_config_json_type(root));
		return NULL;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		fail(&c, "(document)", "out of memory");
		return NULL;
	}
	if (check_keys(&c, "", root, keys) != 0 || parse_encap(&c, root, cfg) != 0 ||
	    parse_globals(&c, root, cfg) != 0)
		goto error;

	vips = json_object_get(root, "vips");
	if (vips != NULL && !json_is_array(vips)) {
		fail(&c, "vips", "expected an array, got %s", lb_config_json_type(vips));
		goto error;
	}
	if (vips != NULL && json_array_size(vips) > LB_MAX_VIPS) {
		fail(&c, "vips", "too many VIPs (%zu, at most %u)", json_array_size(vips),
		     LB_MAX_VIPS);
		goto error;
	}
	if (vips != NULL &&
	    (uint64_t)json_array_size(vips) * cfg->table_size > LB_MAGLEV_MAX_SLOTS) {
		fail(&c, "maglev.table_size",
		     "%zu VIPs x %u slots is over the budget of all Maglev tables (%llu slots, "
		     "%llu MiB): use a smaller table_size or fewer VIPs",
		     json_array_size(vips), cfg->table_size,
		     (unsigned long long)LB_MAGLEV_MAX_SLOTS,
		     (unsigned long long)(LB_MAGLEV_MAX_SLOTS * 2 >> 20));
		goto error;
	}
	if (vips != NULL && json_array_size(vips) > 0) {
		struct lb_config_vip_set seen = {{0}}; /* 4 KiB */
		int dup;

		cfg->vips = calloc(json_array_size(vips), sizeof(*cfg->vips));
		if (cfg->vips == NULL) {
			fail(&c, "vips", "out of memory");
			goto error;
		}
		for (size_t i = 0; i < json_array_size(vips); i++) {
			struct lb_cfg_vip *v = &cfg->vips[i];
			char p[64];

			snprintf(p, sizeof(p), "vips[%zu]", i);
			cfg->n_vips++;
			if (parse_vip(&c, p, json_array_get(vips, i), cfg, v, &next_backend_id) !=
			    0)
				goto error;
			v->id = (uint16_t)i;
			dup = lb_config_vip_set_add(&seen, cfg->vips, (uint32_t)i);
			if (dup >= 0) {
				fail(&c, p,
				     "duplicate VIP (same address, port and protocol as vips[%d])",
				     dup);
				goto error;
			}
		}
	}
	return cfg;
error:
	lb_config_free(cfg);
	return NULL;
}

int
lb_config_vip_from_json(const struct lb_config *cfg, const json_t *o, const char *path,
                        struct lb_cfg_vip *out, char *err, size_t errlen)
{
	struct ctx c = {err, errlen};
	uint32_t next_backend_id = lb_config_backend_count(cfg);
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_vip(&c, path, o, cfg, out, &next_backend_id);
	if (rc != 0) {
		lb_cfg_vip_clear(out);
		memset(out, 0, sizeof(*out));
		return rc;
	}
	out->id = (uint16_t)cfg->n_vips;
	return 0;
}

int
lb_config_backend_from_json(const struct lb_config *cfg, const json_t *o, const char *path,
                            struct lb_cfg_backend *out, char *err, size_t errlen)
{
	struct ctx c = {err, errlen};
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_backend(&c, path, o, cfg, out);
	if (rc != 0)
		return rc;
	out->id = (uint16_t)lb_config_backend_count(cfg);
	out->gen = 1;
	return 0;
}

struct lb_config *
lb_config_load_file(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root;
	struct lb_config *cfg;

	root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		if (je.line < 0)
			snprintf(err, errlen, "%s: %s", path, je.text);
		else
			snprintf(err, errlen, "%s:%d:%d: invalid JSON: %s", path, je.line,
			         je.column, je.text);
		return NULL;
	}
	cfg = lb_config_from_json(root, err, errlen);
	json_decref(root);
	return cfg;
}
