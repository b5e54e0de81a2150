/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the control socket's methods reach (struct lb_rpc_ops): the running
 * configuration and its application, the stats document, the state file, the
 * drain state, and the hot-key controller's overrides, events and parameters,
 * rendered with VIPs and keys named as clients name them. With a state file,
 * the changes of one turn of the control socket are applied at once and
 * written once, before any of their replies is sent (group commit).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/runtime/control_rpc.h"
#include "control/runtime/health_run.h"

static const struct lb_config *
ops_config(void *arg)
{
	const struct lb_control_rpc *cr = arg;

	return cr->pub->cfg;
}

/* What a deferred reply needs to become an error instead: its request line. */
struct token {
	size_t len;
	char line[];
};

/*
 * A change from the socket with a state file: applied and published now, its
 * write left to the turn's commit (lb_control_rpc_commit), which writes the
 * state file once for every change of the turn. The configuration the file
 * holds is kept until then, to go back to if the write fails.
 */
static int
ops_apply(void *arg, struct lb_config *next, char *err, size_t errlen)
{
	struct lb_control_rpc *cr = arg;
	struct lb_config *before = NULL;
	int rc;

	if (!cr->in_request || cr->pub->state_path == NULL)
		return lb_publish_apply(cr->pub, next, true, err, errlen);
	if (cr->durable == NULL) {
		before = lb_config_clone(cr->pub->cfg);
		if (before == NULL) {
			lb_config_free(next);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	rc = lb_publish_apply(cr->pub, next, false, err, errlen);
	if (rc != 0) {
		lb_config_free(before);
		return rc;
	}
	if (before != NULL)
		cr->durable = before;
	cr->deferred = true;
	return 0;
}

void
lb_control_rpc_commit(void *arg)
{
	struct lb_control_rpc *cr = arg;
	char err[256];
	int rc;

	cr->commit_rc = 0;
	if (cr->durable == NULL)
		return;
	rc = lb_publish_persist(cr->pub, cr->pub->cfg, cr->commit_err, sizeof(cr->commit_err));
	if (rc == 0) {
		lb_config_free(cr->durable);
		cr->durable = NULL;
		return;
	}
	cr->commit_rc = rc;
	/* Nothing of the turn was acknowledged: back to what the file holds. */
	fprintf(stderr, "spillwayd: %s; the changes of this turn are refused\n", cr->commit_err);
	rc = lb_publish_apply(cr->pub, cr->durable, false, err, sizeof(err));
	cr->durable = NULL;
	if (rc != 0)
		fprintf(stderr,
		        "spillwayd: cannot go back to the state file's configuration: %s; the "
		        "refused changes stay in force until the next change\n",
		        err);
}

void *
lb_control_rpc_token(void *arg)
{
	struct lb_control_rpc *cr = arg;
	void *t = cr->token;

	cr->token = NULL;
	return t;
}

char *
lb_control_rpc_finish(void *arg, char *reply, void *token)
{
	const struct lb_control_rpc *cr = arg;
	struct token *t = token;
	char *text;

	if (t == NULL || cr->commit_rc == 0) {
		free(t);
		return reply;
	}
	free(reply);
	text = lb_rpc_fail_request(t->line, t->len, LB_RPC_ERR_INTERNAL, cr->commit_err);
	free(t);
	return text;
}

static json_t *
ops_health_list(void *arg)
{
	const struct lb_control_rpc *cr = arg;

	return lb_health_run_list(cr->pub->health);
}

static json_t *
ops_health_events(void *arg)
{
	const struct lb_control_rpc *cr = arg;

	return lb_health_run_events(cr->pub->health);
}

static json_t *
ops_stats(void *arg)
{
	const struct lb_control_rpc *cr = arg;

	return cr->stats(cr->stats_arg);
}

static const struct lb_snapshot *
ops_snapshot(void *arg)
{
	const struct lb_control_rpc *cr = arg;

	return *cr->pub->snap;
}

static int
ops_save(void *arg, char *err, size_t errlen)
{
	struct lb_control_rpc *cr = arg;

	int rc;

	if (cr->pub->state_path == NULL) {
		snprintf(err, errlen,
		         "no state file configured (start spillwayd with --state FILE)");
		return -ENOENT;
	}
	if (cr->in_request && cr->durable != NULL) {
		/* Changes of this turn wait for the commit: the save is that write. */
		cr->deferred = true;
		snprintf(err, errlen, "%s", cr->pub->state_path);
		return 0;
	}
	rc = lb_publish_persist(cr->pub, cr->pub->cfg, err, errlen);
	/* rpc.h's convention: on success err carries the path for the reply. */
	if (rc == 0)
		snprintf(err, errlen, "%s", cr->pub->state_path);
	return rc;
}

static json_t *
ops_drain(void *arg, bool on)
{
	struct lb_control_rpc *cr = arg;

	if (!on && *cr->stop_ms != 0) {
		/* Stopping after a signal: announcing again would attract traffic
		 * the instance is about to drop. */
		fprintf(stderr, "spillwayd: undrain ignored: stopping\n");
	} else {
		lb_publish_drain(cr->pub, on);
		fprintf(stderr, "spillwayd: %s\n",
		        on ? "drained: routes withdrawn, still forwarding"
		           : "undrained: routes announced");
	}
	return json_pack("{s:b, s:b, s:o}", "drained", cr->pub->drained, "stopping",
	                 *cr->stop_ms != 0, "hooks", lb_publish_hooks_json(cr->pub));
}

char *
lb_control_rpc_request(void *arg, const char *line, size_t len)
{
	struct lb_control_rpc *cr = arg;
	struct token *t = NULL;
	char *text;

	if (cr->group_commit) {
		/* Taken first: a change must not be left without what its failure reply needs. */
		t = malloc(sizeof(*t) + len);
		if (t == NULL)
			return lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
		t->len = len;
		memcpy(t->line, line, len);
	}
	cr->deferred = false;
	cr->in_request = t != NULL;
	text = lb_rpc_handle(&cr->ops, line, len);
	cr->in_request = false;
	if (!cr->deferred) {
		free(t);
		return text;
	}
	cr->token = t;
	return text;
}

static const struct lb_vip *
snap_vip(const struct lb_snapshot *s, uint16_t vip_id)
{
	for (uint32_t i = 0; i < s->n_vips; i++)
		if (s->vips[i].id == vip_id)
			return &s->vips[i];
	return NULL;
}

static json_t *
vip_ref_json(const struct lb_vip *v)
{
	char buf[64];

	return json_pack("{s:s, s:i, s:s}", "address", lb_ip_to_str(v->af, &v->addr, buf, 64),
	                 "port", (json_int_t)ntohs(v->port), "protocol",
	                 v->proto == IPPROTO_TCP ? "tcp" : "udp");
}

/* The key as the VIP's key mode sees it. */
static json_t *
key_json(const struct lb_vip *v, const struct lb_flow_key *k)
{
	char buf[64];
	json_t *o = json_object();

	json_object_set_new(o, "src", json_string(lb_ip_to_str(k->af, &k->src, buf, 64)));
	if (v->key_mode != LB_KEY_SRC_IP)
		json_object_set_new(o, "dport", json_integer(ntohs(k->dport)));
	if (v->key_mode == LB_KEY_5TUPLE) {
		json_object_set_new(o, "sport", json_integer(ntohs(k->sport)));
		json_object_set_new(o, "dst", json_string(lb_ip_to_str(k->af, &k->dst, buf, 64)));
		json_object_set_new(o, "protocol",
		                    json_string(k->proto == IPPROTO_TCP ? "tcp" : "udp"));
	}
	return o;
}

/* What hot_list and hot_set report: the controller's parameters in the document's form. */
static json_t *
hot_params_json(const struct lb_hot_window *hw)
{
	const struct lb_param *t = lb_hot_param_table;
	struct lb_hot_params hp;

	lb_hotkey_get_params(hw->hot, &hp);
	return json_pack(
	        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "threshold",
	        lb_config_hot_param_json(&t[LB_HOT_P_THRESHOLD], hp.threshold), "threshold_low",
	        lb_config_hot_param_json(&t[LB_HOT_P_THRESHOLD_LOW], hp.threshold_low), "epsilon",
	        lb_config_hot_param_json(&t[LB_HOT_P_EPSILON], hp.epsilon), "demote_windows",
	        lb_config_hot_param_json(&t[LB_HOT_P_DEMOTE_WINDOWS], hp.demote_windows),
	        "window_ms", lb_config_hot_param_json(&t[LB_HOT_P_WINDOW_MS], hw->window_ms),
	        "margin",
	        lb_config_hot_param_json(&t[LB_HOT_P_MARGIN], hp.margin > 0 ? hp.margin : 0),
	        "ewma_alpha", lb_config_hot_param_json(&t[LB_HOT_P_EWMA_ALPHA], hp.ewma_alpha),
	        "sample", lb_config_hot_param_json(&t[LB_HOT_P_SAMPLE], hw->sample));
}

static json_t *
ops_hot_list(void *arg)
{
	const struct lb_control_rpc *cr = arg;
	const struct lb_hot_window *hw = cr->hw;
	const struct lb_snapshot *s = *cr->pub->snap;
	const struct lb_hot_override *o;
	uint32_t n = lb_hotkey_overrides(hw->hot, &o);
	json_t *root = json_object(), *arr = json_array();
	json_t *counters = lb_hotkey_counters_json(hw->hot);
	char buf[64];

	json_object_set_new(counters, "missed_core_windows", json_integer((json_int_t)hw->missed));
	json_object_set_new(root, "params", hot_params_json(hw));
	json_object_set_new(root, "window", json_integer((json_int_t)hw->window));
	json_object_set_new(root, "counters", counters);
	for (uint32_t i = 0; i < n; i++) {
		const struct lb_vip *v = snap_vip(s, o[i].vip_id);
		json_t *reps = json_array(), *e;

		if (v == NULL)
			continue;
		for (uint16_t r = 0; r < o[i].n_replicas; r++) {
			const struct lb_backend *b;

			/* The controller's state may be ahead of the published snapshot. */
			if (!lb_hotkey_replica_in(s, &o[i], o[i].replicas[r]))
				continue;
			b = &s->backends[o[i].replicas[r]];
			json_array_append_new(reps,
			                      json_string(lb_ip_to_str(b->af, &b->addr, buf, 64)));
		}
		snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)o[i].key_hash);
		e = json_pack("{s:o, s:o, s:s, s:f, s:o, s:I, s:b}", "vip", vip_ref_json(v), "key",
		              key_json(v, &o[i].key), "key_hash", buf, "share", o[i].share,
		              "replicas", reps, "since_window", (json_int_t)o[i].since_window,
		              "pinned", o[i].pinned);
		json_array_append_new(arr, e);
	}
	json_object_set_new(root, "overrides", arr);
	/* Hot keys listed without an override: "report" VIPs' keys, elephants. */
	arr = json_array();
	for (uint32_t i = 0, nl = lb_hotkey_listed(hw->hot, NULL, 0); i < nl; i++) {
		struct lb_hot_listed l;
		const struct lb_vip *v;

		lb_hotkey_listed_at(hw->hot, i, &l);
		v = snap_vip(s, l.vip_id);
		if (v == NULL)
			continue;
		snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)l.key_hash);
		json_array_append_new(arr, json_pack("{s:o, s:o, s:s, s:f, s:s, s:I}", "vip",
		                                     vip_ref_json(v), "key", key_json(v, &l.key),
		                                     "key_hash", buf, "share", l.share, "kind",
		                                     l.elephant ? "elephant" : "report",
		                                     "since_window", (json_int_t)l.since_window));
	}
	json_object_set_new(root, "reported", arr);
	/* The promotion bound in force per VIP: the share at which a key on its
	 * lightest usable backend takes it over the cap (null: fewer than two
	 * usable backends), and the operator's floor on top of it. */
	arr = json_array();
	for (uint32_t i = 0; s != NULL && i < s->n_vips; i++) {
		struct lb_hot_params hp;
		double b;

		lb_hotkey_get_params(hw->hot, &hp);
		b = lb_hotkey_vip_bound(s, &s->vips[i], hp.epsilon);
		json_array_append_new(
		        arr, json_pack("{s:o, s:s, s:o, s:o}", "vip", vip_ref_json(&s->vips[i]),
		                       "hot_mode", lb_config_hot_mode_name(s->vips[i].hot_mode),
		                       "bound", b < HUGE_VAL ? json_real(b) : json_null(), "floor",
		                       hp.threshold > 0 ? json_real(hp.threshold) : json_null()));
	}
	json_object_set_new(root, "bounds", arr);
	return root;
}

static json_t *
ops_hot_events(void *arg)
{
	const struct lb_control_rpc *cr = arg;
	const struct lb_hot_window *hw = cr->hw;
	const struct lb_snapshot *s = *cr->pub->snap;
	json_t *ev = lb_hotkey_events_json(hw->hot), *e;
	size_t i;

	/* Name VIPs as clients do, by address, port and protocol. */
	json_array_foreach (ev, i, e) {
		const struct lb_vip *v =
		        snap_vip(s, (uint16_t)json_integer_value(json_object_get(e, "vip_id")));

		const struct lb_flow_key *k = lb_hotkey_event_key(hw->hot, (uint32_t)i);

		if (v != NULL)
			json_object_set_new(e, "vip", vip_ref_json(v));
		/* The key as the VIP's key mode sees it, when the override knew it. */
		if (v != NULL && k != NULL && k->af != 0)
			json_object_set_new(e, "key", key_json(v, k));
	}
	return ev;
}

/*
 * hot_set's params (checked by the method) into the running controller and
 * windows. A new threshold keeps the demotion threshold's ratio to it unless
 * threshold_low is set too; to or from "auto" the demotion threshold is
 * "auto" (threshold / 2 under a number) again.
 */
static int
ops_hot_set(void *arg, const json_t *params, char *err, size_t errlen)
{
	struct lb_control_rpc *cr = arg;
	struct lb_hot_window *hw = cr->hw;
	double val[LB_HOT_P_N];
	bool given[LB_HOT_P_N];
	struct lb_hot_params hp;
	int rc;

	rc = lb_config_hot_params_from_json(params, "", true, val, given, err, errlen);
	if (rc != 0)
		return rc;
	lb_hotkey_get_params(hw->hot, &hp);
	if (given[LB_HOT_P_THRESHOLD]) {
		double old = hp.threshold, th = val[LB_HOT_P_THRESHOLD];

		if (!given[LB_HOT_P_THRESHOLD_LOW])
			hp.threshold_low = old > 0 && th > 0 ? hp.threshold_low * th / old
			                                     : LB_HOT_THRESHOLD_LOW_AUTO;
		hp.threshold = th;
	}
	if (given[LB_HOT_P_THRESHOLD_LOW])
		hp.threshold_low = val[LB_HOT_P_THRESHOLD_LOW];
	if (given[LB_HOT_P_EPSILON])
		hp.epsilon = val[LB_HOT_P_EPSILON];
	if (given[LB_HOT_P_DEMOTE_WINDOWS])
		hp.demote_windows = (uint32_t)val[LB_HOT_P_DEMOTE_WINDOWS];
	if (given[LB_HOT_P_MARGIN])
		hp.margin = val[LB_HOT_P_MARGIN] > 0 ? val[LB_HOT_P_MARGIN] : -1; /* 0: none */
	if (given[LB_HOT_P_EWMA_ALPHA])
		hp.ewma_alpha = val[LB_HOT_P_EWMA_ALPHA];
	rc = lb_config_hot_check_low(hp.threshold, hp.threshold_low, "", err, errlen);
	if (rc != 0)
		return rc;
	rc = lb_hotkey_set_params(hw->hot, &hp);
	if (rc != 0) {
		snprintf(err, errlen, "invalid hot-key parameters");
		return rc;
	}
	if (given[LB_HOT_P_WINDOW_MS])
		hw->window_ms = (uint32_t)val[LB_HOT_P_WINDOW_MS];
	/* The sketches take the sample rate from the next window they open. */
	if (given[LB_HOT_P_SAMPLE])
		hw->sample = (int8_t)val[LB_HOT_P_SAMPLE];
	return 0;
}

static int
ops_hot_pin(void *arg, uint16_t vip_id, const struct lb_flow_key *key, uint16_t replicas, bool pin,
            char *err, size_t errlen)
{
	struct lb_control_rpc *cr = arg;
	struct lb_hot_window *hw = cr->hw;
	const struct lb_snapshot *s = *cr->pub->snap;
	const struct lb_vip *v = snap_vip(s, vip_id);
	struct lb_snapshot *ns;
	uint64_t kh;
	int rc;

	if (v == NULL) {
		snprintf(err, errlen, "no such VIP");
		return -ENOENT;
	}
	/* Refused before the controller changes: a pin is published or not made. */
	rc = lb_publish_ready(cr->pub, err, errlen);
	if (rc != 0)
		return rc;
	kh = lb_vip_key_hash(s, v, key, lb_hash_flow(&s->hkey, key));
	rc = pin ? lb_hotkey_pin(hw->hot, s, vip_id, kh, key, replicas, hw->window)
	         : lb_hotkey_unpin(hw->hot, vip_id, kh);
	if (rc != 0) {
		snprintf(err, errlen, "%s",
		         rc == -ENOENT   ? "no override for that key"
		         : rc == -ENOSPC ? "override table full"
		                         : strerror(-rc));
		return rc;
	}
	ns = lb_publish_build(cr->pub, cr->pub->cfg, err, errlen);
	if (ns == NULL)
		return -ENOMEM;
	return lb_publish_snapshot(cr->pub, ns);
}

void
lb_control_rpc_init(struct lb_control_rpc *cr, json_t *(*stats)(const void *stats_arg),
                    const void *stats_arg, struct lb_publisher *pub, struct lb_hot_window *hw,
                    const uint64_t *stop_ms)
{
	cr->stats = stats;
	cr->stats_arg = stats_arg;
	cr->pub = pub;
	cr->hw = hw;
	cr->stop_ms = stop_ms;
	cr->ops = (struct lb_rpc_ops){
	        .arg = cr,
	        .config = ops_config,
	        .apply = ops_apply,
	        .stats = ops_stats,
	        .snapshot = ops_snapshot,
	        .save = ops_save,
	};
	for (unsigned int i = 0; i < pub->n_hooks; i++)
		if (pub->hooks[i].drain != NULL)
			cr->ops.drain = ops_drain;
	if (pub->health != NULL) {
		cr->ops.health_list = ops_health_list;
		cr->ops.health_events = ops_health_events;
	}
	if (hw != NULL) {
		cr->ops.hot_list = ops_hot_list;
		cr->ops.hot_events = ops_hot_events;
		cr->ops.hot_set = ops_hot_set;
		cr->ops.hot_pin = ops_hot_pin;
	}
}
