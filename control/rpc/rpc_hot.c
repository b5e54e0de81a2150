/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot_* methods of the control socket: runtime state of the hot-key
 * controller, not configuration (ops->hot_*). Changes (hot_set, hot_pin,
 * hot_unpin) cannot be rolled back by a transaction, so they only come as a
 * request of their own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "control/model/config.h"
#include "control/hot/hotkey.h"
#include "control/rpc/rpc.h"
#include "control/rpc/rpc_internal.h"

#define HOT_KEY "{src, dport? (src_ip_dport, 5tuple), sport? dst? protocol? (5tuple)}"

static const char *const key_mode_names[] = {"5tuple", "src_ip", "src_ip_dport"};

static int
fail_hot_disabled(struct lb_rpc_outcome *o)
{
	return lb_rpc_fail(o, LB_RPC_ERR_INTERNAL, "hot keys are disabled (hot.enabled is false)");
}

/* An integer member at path.name (path "" for params) within lo..hi. */
static int
decode_int(struct lb_rpc_outcome *o, const json_t *obj, const char *path, const char *name,
           json_int_t lo, json_int_t hi, json_int_t *v)
{
	const json_t *j = json_object_get(obj, name);

	if (!json_is_integer(j))
		return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
		                   "%s%s%s: expected an integer, got %s", path, *path ? "." : "",
		                   name, lb_config_json_type(j));
	*v = json_integer_value(j);
	if (*v < lo || *v > hi)
		return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
		                   "%s%s%s: %lld out of range [%lld, %lld]", path, *path ? "." : "",
		                   name, (long long)*v, (long long)lo, (long long)hi);
	return 0;
}

static int
rpc_hot_list(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	if (t->ops->hot_list == NULL)
		return fail_hot_disabled(out);
	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	return lb_rpc_succeed(out, t->ops->hot_list(t->ops->arg));
}

static int
rpc_hot_events(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	if (t->ops->hot_events == NULL)
		return fail_hot_disabled(out);
	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	return lb_rpc_succeed(out, t->ops->hot_events(t->ops->arg));
}

/*
 * hot_set: the members decoded and checked by the configuration's own decoder
 * (config_hot.c, params.h's ranges), so the socket refuses what the file
 * refuses, with the same message; then the daemon applies them.
 */
static int
rpc_hot_set(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	char err[LB_RPC_MSG_LEN] = "", names[LB_RPC_MSG_LEN] = "";
	double val[LB_HOT_P_N];
	bool given[LB_HOT_P_N];
	json_t *list, *p;
	int rc;

	if (t->ops->hot_set == NULL || t->ops->hot_list == NULL)
		return fail_hot_disabled(out);
	if (lb_config_hot_params_from_json(params, "", true, val, given, err, sizeof(err)) != 0)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS, "%s", err);
	if (json_object_size(params) == 0) {
		for (int i = 0; i < LB_HOT_P_N; i++)
			if (lb_hot_param_table[i].where == LB_PARAM_SOCKET)
				snprintf(names + strlen(names), sizeof(names) - strlen(names),
				         "%s%s", names[0] ? ", " : "", lb_hot_param_table[i].name);
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS,
		                   "%s: missing (at least one is required)", names);
	}
	rc = t->ops->hot_set(t->ops->arg, params, err, sizeof(err));
	if (rc == -EINVAL)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS, "%s",
		                   err[0] ? err : "invalid hot-key parameters");
	if (rc != 0)
		return lb_rpc_fail(out, LB_RPC_ERR_INTERNAL, "%s", err[0] ? err : strerror(-rc));
	/* The parameters as they now are (what the controller kept). */
	list = t->ops->hot_list(t->ops->arg);
	p = json_object_get(list, "params");
	if (!json_is_object(p)) {
		json_decref(list);
		return lb_rpc_fail(out, LB_RPC_ERR_INTERNAL,
		                   "parameters changed, but reading them back failed");
	}
	json_incref(p);
	json_decref(list);
	return lb_rpc_succeed(out, p);
}

/* key.name, an address of the VIP's family. */
static int
decode_key_addr(struct lb_rpc_outcome *o, const json_t *key, const char *name,
                const struct lb_cfg_vip *v, union lb_ip *ip)
{
	const json_t *j = json_object_get(key, name);
	char vs[96];
	uint8_t af;

	if (!json_is_string(j))
		return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
		                   "key.%s: expected a string, got %s", name,
		                   lb_config_json_type(j));
	if (lb_ip_from_str(json_string_value(j), &af, ip) != 0)
		return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
		                   "key.%s: not an IPv4 or IPv6 address: \"%s\"", name,
		                   json_string_value(j));
	if (af != v->af)
		return lb_rpc_fail(
		        o, LB_RPC_ERR_INVALID_PARAMS, "key.%s: an %s address, but VIP %s is %s",
		        name, af == LB_AF_INET ? "IPv4" : "IPv6", lb_rpc_vip_str(v, vs, sizeof(vs)),
		        v->af == LB_AF_INET ? "IPv4" : "IPv6");
	return 0;
}

/*
 * params.key as the flow key the data path builds for the VIP's key mode
 * (dataplane/parse.c, lb_vip_key_hash): zeroed, then src and af; plus dport
 * for src_ip_dport; plus dst (the VIP), sport, dport and proto for 5tuple.
 * Ports in network byte order. A field the mode does not use is rejected, so
 * an operator never believes a key is narrower than it is.
 */
static int
decode_flow_key(struct lb_rpc_outcome *o, const json_t *params, const struct lb_cfg_vip *v,
                struct lb_flow_key *fk)
{
	static const char *const keys[] = {"src", "dst", "sport", "dport", "protocol", NULL};
	const json_t *key = json_object_get(params, "key");
	const char *mode = v->key_mode < 3 ? key_mode_names[v->key_mode] : "?";
	bool use_dport = v->key_mode != LB_KEY_SRC_IP;
	bool use_5 = v->key_mode == LB_KEY_5TUPLE;
	const char *used[] = {"src", "dst", "sport", "dport", "protocol"};
	bool allowed[] = {true, use_5, use_5, use_dport, use_5};
	char vs[96];
	json_int_t port;
	union lb_ip ip;

	if (lb_rpc_check_keys(o, key, "key", keys) != 0)
		return o->code;
	for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
		if (!allowed[i] && json_object_get(key, used[i]) != NULL)
			return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
			                   "key.%s: not used by the VIP's key mode %s", used[i],
			                   mode);

	memset(fk, 0, sizeof(*fk));
	fk->af = v->af;
	if (json_object_get(key, "src") == NULL)
		return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS, "key.src: missing (required)");
	if (decode_key_addr(o, key, "src", v, &fk->src) != 0)
		return o->code;
	if (use_dport) {
		/* A VIP with a port sees only that port: it is the default and the only value. */
		if (json_object_get(key, "dport") == NULL) {
			if (v->port == 0)
				return lb_rpc_fail(
				        o, LB_RPC_ERR_INVALID_PARAMS,
				        "key.dport: missing (required by key mode %s on a VIP "
				        "of every port)",
				        mode);
			port = v->port;
		} else if (decode_int(o, key, "key", "dport", 0, 65535, &port) != 0) {
			return o->code;
		} else if (v->port != 0 && port != v->port) {
			return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
			                   "key.dport: %lld is not the port of VIP %s",
			                   (long long)port, lb_rpc_vip_str(v, vs, sizeof(vs)));
		}
		fk->dport = htons((uint16_t)port);
	}
	if (!use_5)
		return 0;
	if (json_object_get(key, "sport") == NULL)
		return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
		                   "key.sport: missing (required by key mode 5tuple)");
	if (decode_int(o, key, "key", "sport", 0, 65535, &port) != 0)
		return o->code;
	fk->sport = htons((uint16_t)port);
	fk->dst = v->addr;
	if (json_object_get(key, "dst") != NULL) {
		if (decode_key_addr(o, key, "dst", v, &ip) != 0)
			return o->code;
		if (memcmp(&ip, &v->addr, sizeof(ip)) != 0)
			return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
			                   "key.dst: not the address of VIP %s",
			                   lb_rpc_vip_str(v, vs, sizeof(vs)));
	}
	fk->proto = v->proto;
	if (json_object_get(key, "protocol") != NULL) {
		const json_t *p = json_object_get(key, "protocol");
		const char *s = json_string_value(p);

		if (!json_is_string(p))
			return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
			                   "key.protocol: expected a string, got %s",
			                   lb_config_json_type(p));
		if (strcmp(s, "tcp") != 0 && strcmp(s, "udp") != 0)
			return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
			                   "key.protocol: expected \"tcp\" or \"udp\", got \"%s\"",
			                   s);
		if ((strcmp(s, "tcp") == 0 ? IPPROTO_TCP : IPPROTO_UDP) != v->proto)
			return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS,
			                   "key.protocol: not the protocol of VIP %s",
			                   lb_rpc_vip_str(v, vs, sizeof(vs)));
	}
	return 0;
}

static int
hot_pin_common(struct lb_rpc_txn *t, const json_t *params, bool pin, struct lb_rpc_outcome *out)
{
	static const char *const pin_keys[] = {"vip", "key", "replicas", NULL};
	static const char *const unpin_keys[] = {"vip", "key", NULL};
	const struct lb_cfg_vip *v;
	struct lb_flow_key fk;
	struct lb_cfg_vip ref;
	char err[LB_RPC_MSG_LEN] = "", vs[96];
	const json_t *key;
	json_int_t r = 0;
	int vi, rc;

	if (t->ops->hot_pin == NULL)
		return fail_hot_disabled(out);
	if (lb_rpc_check_keys(out, params, "", pin ? pin_keys : unpin_keys) != 0 ||
	    lb_rpc_decode_vip_member(t, params, &ref, out) != 0)
		return out->code;
	if (pin && json_object_get(params, "replicas") != NULL &&
	    decode_int(out, params, "", "replicas", 0, LB_HOT_MAX_REPLICAS, &r) != 0)
		return out->code;
	key = json_object_get(params, "key");
	if (key == NULL)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS, "key: missing (required)");
	if (!json_is_object(key))
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS,
		                   "key: expected an object, got %s", lb_config_json_type(key));
	vi = lb_rpc_find_vip(lb_rpc_view(t), &ref);
	if (vi < 0)
		return lb_rpc_fail_no_vip(out, &ref);
	v = &lb_rpc_view(t)->vips[vi];
	if (decode_flow_key(out, params, v, &fk) != 0)
		return out->code;
	rc = t->ops->hot_pin(t->ops->arg, v->id, &fk, (uint16_t)r, pin, err, sizeof(err));
	if (rc == 0)
		return lb_rpc_succeed(out, json_object());
	if (rc == -ENOENT && err[0] != '\0')
		return lb_rpc_fail(out, LB_RPC_ERR_NOT_FOUND, "%s", err);
	if (rc == -ENOENT)
		return lb_rpc_fail(out, LB_RPC_ERR_NOT_FOUND,
		                   pin ? "VIP %s is not running (not in the published snapshot)"
		                       : "no override of this key in VIP %s",
		                   lb_rpc_vip_str(v, vs, sizeof(vs)));
	if (rc == -EPERM)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS,
		                   "vip: VIP %s never overrides its keys (hot_mode %s%s)",
		                   lb_rpc_vip_str(v, vs, sizeof(vs)),
		                   v->hot_mode == LB_HOT_OFF      ? "off"
		                   : v->hot_mode == LB_HOT_REPORT ? "report"
		                                                  : "spread",
		                   v->key_mode == LB_KEY_5TUPLE && v->proto == IPPROTO_TCP
		                           ? "; a 5-tuple key of a TCP VIP is one connection"
		                           : "");
	if (rc == -ENOSPC)
		return lb_rpc_fail(out, LB_RPC_ERR_LIMIT, "%s",
		                   err[0] ? err : "too many hot-key overrides");
	if (rc == -EINVAL)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS, "%s",
		                   err[0] ? err : "invalid key");
	if (rc == -EBUSY)
		return lb_rpc_fail(out, LB_RPC_ERR_STALLED, "%s",
		                   err[0] ? err : "a worker is stalled");
	return lb_rpc_fail(out, LB_RPC_ERR_INTERNAL, "%s", err[0] ? err : strerror(-rc));
}

static int
rpc_hot_pin(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	return hot_pin_common(t, params, true, out);
}

static int
rpc_hot_unpin(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	return hot_pin_common(t, params, false, out);
}

const struct lb_rpc_method lb_rpc_hot_methods[] = {
        {.name = "hot_list", .handler = rpc_hot_list, .usage = "hot_list"},
        {.name = "hot_events", .handler = rpc_hot_events, .usage = "hot_events"},
        {.name = "hot_set",
         .handler = rpc_hot_set,
         .no_batch = true,
         .usage = "hot_set {window_ms?, threshold?, epsilon?, sample?, margin?, ewma_alpha?, "
                  "demote_windows?, threshold_low?} (at least one)"},
        {.name = "hot_pin",
         .handler = rpc_hot_pin,
         .no_batch = true,
         .usage = "hot_pin {vip: " LB_RPC_VIP_REF ", key: " HOT_KEY ", replicas?}"},
        {.name = "hot_unpin",
         .handler = rpc_hot_unpin,
         .no_batch = true,
         .usage = "hot_unpin {vip: " LB_RPC_VIP_REF ", key: " HOT_KEY "}"},
        {.name = NULL},
};
