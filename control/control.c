/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control thread event loop and snapshot publication.
 *
 * Publication: build the new snapshot completely, store its pointer with
 * release semantics, take an RCU token, and park the old snapshot on a retire
 * list. The periodic timer polls rte_rcu_qsbr_check() without blocking and frees
 * a retired snapshot once every worker has reported a quiescent state since.
 *
 * A change is built completely (ids, snapshot), then written to the state file,
 * then published: a failure at any step leaves both the running configuration
 * and the file as they were. The control socket's requests arrive here as lines
 * and are answered by rpc.c through struct lb_rpc_ops.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>

#include "../dataplane/sketch.h"
#include "control.h"
#include "clock.h"
#include "hotkey.h"
#include "persist.h"
#include "rpc.h"
#include "server.h"
#include "snapshot_build.h"
#include "stats.h"

#define TICK_MS 10
#define RETIRE_MAX 64
#define PUB_SAMPLES 1024
#define HOT_CANDS_PER_CORE 256      /* candidates read from each core per window */
#define PUB_WAIT_MAX_NS 50000000ull /* give up waiting for a stuck worker after 50 ms */

struct retired {
	struct lb_snapshot *snap;
	uint64_t token;
};

struct lb_control {
	struct lb_control_params p;
	struct lb_config *cfg;
	/* Identity of memberships across changes: a VIP or backend that stays keeps
	 * its id; an id that is freed and reused gets a new generation, so flows
	 * pinned to its previous owner are never taken for the new one's. */
	uint16_t backend_gen[LB_MAX_BACKENDS];
	uint64_t generation;
	bool live; /* workers are running: publication waits for them to switch */
	/* Publication latency (store of the pointer -> every worker on it), ns,
	 * the last PUB_SAMPLES changes; and the last snapshot build time. */
	uint64_t pub_ns[PUB_SAMPLES];
	uint64_t pub_count;
	uint64_t pub_timeouts;
	uint64_t build_ns;
	/* Hot keys (NULL when disabled): the controller, the open window, the
	 * closed window still to read (0: none), when the next window opens, and
	 * each backend's cumulative packets at the last window (for loads). */
	struct lb_hotkey *hot;
	uint64_t hot_window;
	uint64_t hot_pending;
	uint64_t hot_next_ms;
	uint32_t hot_window_ms;
	uint64_t hot_missed; /* core-windows lost: a core reopened before we read */
	uint64_t *hot_prev;
	uint64_t *hot_load;
	uint64_t *hot_vip_total;
	struct lb_sketch_cand *hot_cands;
	struct lb_hot_candidate *hot_merged;
	struct retired retire[RETIRE_MAX];
	unsigned int n_retire;
	int epfd, sigfd, timerfd;
	struct lb_server *server;
	struct lb_rpc_ops ops;
	uint64_t last_rx;
	uint64_t idle_ms;
	uint64_t *hook_fail; /* per hook: failed before/after calls */
	/* Drain (hooks with a drain step): routes withdrawn since drained_ms; on a
	 * stop signal, the loop ends at stop_ms (0: no stop pending). */
	bool drained;
	uint64_t drained_ms;
	uint64_t stop_ms;
};

static void
reclaim(struct lb_control *c, bool wait)
{
	unsigned int j = 0;

	for (unsigned int i = 0; i < c->n_retire; i++) {
		struct retired *r = &c->retire[i];

		if (rte_rcu_qsbr_check(c->p.qsv, r->token, wait) == 1)
			lb_snapshot_free(r->snap);
		else
			c->retire[j++] = *r;
	}
	c->n_retire = j;
}

static const struct lb_cfg_vip *
find_vip(const struct lb_config *cfg, const struct lb_cfg_vip *v)
{
	for (uint32_t i = 0; cfg != NULL && i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *o = &cfg->vips[i];

		if (o->af == v->af && o->proto == v->proto && o->port == v->port &&
		    memcmp(&o->addr, &v->addr, sizeof(o->addr)) == 0)
			return o;
	}
	return NULL;
}

/* Order of backends by (family, address, name): the identity that matching uses. */
static int
cmp_backend(const struct lb_cfg_backend *a, const struct lb_cfg_backend *b)
{
	int d = memcmp(&a->addr, &b->addr, sizeof(a->addr));

	if (d == 0)
		d = (int)a->af - (int)b->af;
	if (d == 0)
		d = strcmp(a->name, b->name);
	return d;
}

static int
cmp_backend_ptr(const void *a, const void *b)
{
	return cmp_backend(*(const struct lb_cfg_backend *const *)a,
	                   *(const struct lb_cfg_backend *const *)b);
}

/* The backend of sorted (n entries, by cmp_backend) with b's identity, or NULL. */
static const struct lb_cfg_backend *
find_backend(const struct lb_cfg_backend *const *sorted, uint32_t n, const struct lb_cfg_backend *b)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int d = cmp_backend(sorted[mid], b);

		if (d == 0)
			return sorted[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The first free slot at or after *cursor (wrapping), marked used; -1 if none. */
static int
alloc_id(bool *used, unsigned int n, unsigned int *cursor)
{
	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = (*cursor + k) % n;

		if (!used[i]) {
			used[i] = true;
			*cursor = i + 1;
			return (int)i;
		}
	}
	return -1;
}

/*
 * Give next's VIPs and backends the ids they have in the running config
 * (matched by VIP address/port/protocol and backend identity + address); new
 * ones get free ids, with a fresh generation for backends.
 */
static int
assign_ids(struct lb_control *c, struct lb_config *next)
{
	bool vip_used[LB_MAX_VIPS] = {false};
	bool *be_used = calloc(LB_MAX_BACKENDS, sizeof(*be_used));
	const struct lb_cfg_backend **sorted = calloc(LB_MAX_BACKENDS, sizeof(*sorted));
	unsigned int vip_cursor = 0, be_cursor = 0;

	if (be_used == NULL || sorted == NULL) {
		free(be_used);
		free(sorted);
		return -ENOMEM;
	}
	/* Pass 1: carry over ids of what stays. */
	for (uint32_t i = 0; i < next->n_vips; i++) {
		struct lb_cfg_vip *v = &next->vips[i];
		const struct lb_cfg_vip *ov = find_vip(c->cfg, v);

		v->id = UINT16_MAX;
		if (ov != NULL) {
			v->id = ov->id;
			vip_used[v->id] = true;
		}
		uint32_t n_old = ov != NULL ? ov->n_backends : 0;

		/* Sorted once per VIP, so matching N backends costs O(N log N). */
		for (uint32_t j = 0; j < n_old; j++)
			sorted[j] = &ov->backends[j];
		qsort(sorted, n_old, sizeof(*sorted), cmp_backend_ptr);
		for (uint32_t j = 0; j < v->n_backends; j++) {
			struct lb_cfg_backend *b = &v->backends[j];
			const struct lb_cfg_backend *ob = find_backend(sorted, n_old, b);

			b->id = UINT16_MAX;
			if (ob != NULL) {
				b->id = ob->id;
				b->gen = ob->gen;
				be_used[b->id] = true;
			}
		}
	}
	/* Pass 2: new ids for what is new. */
	for (uint32_t i = 0; i < next->n_vips; i++) {
		struct lb_cfg_vip *v = &next->vips[i];

		if (v->id == UINT16_MAX)
			v->id = (uint16_t)alloc_id(vip_used, LB_MAX_VIPS, &vip_cursor);
		for (uint32_t j = 0; j < v->n_backends; j++) {
			struct lb_cfg_backend *b = &v->backends[j];
			int id;

			if (b->id != UINT16_MAX)
				continue;
			id = alloc_id(be_used, LB_MAX_BACKENDS, &be_cursor);
			if (id < 0) {
				free(be_used);
				free(sorted);
				return -ENOSPC;
			}
			b->id = (uint16_t)id;
			/* Never 0 (the unused-slot marker), never a generation an old
			 * flow entry for this id could hold. */
			if (++c->backend_gen[id] == 0)
				c->backend_gen[id] = 1;
			b->gen = c->backend_gen[id];
		}
	}
	free(be_used);
	free(sorted);
	return 0;
}

static int
persist(const struct lb_control *c, const struct lb_config *cfg, char *err, size_t errlen)
{
	json_t *doc = lb_config_to_json(cfg);
	int rc;

	if (doc == NULL) {
		snprintf(err, errlen, "%s: out of memory", c->p.state_path);
		return -ENOMEM;
	}
	err[0] = '\0';
	rc = lb_persist_write(c->p.state_path, doc, err, errlen);
	json_decref(doc);
	if (rc != 0 && err[0] == '\0')
		snprintf(err, errlen, "%s: cannot write the state file: %s", c->p.state_path,
		         strerror(-rc));
	return rc;
}

/*
 * Wait until every worker runs the snapshot just published, so a reply means
 * "in force everywhere". Workers poll without sleeping, so this takes one loop
 * pass (microseconds); the wait is bounded in case a worker is descheduled.
 */
static void
wait_switch(struct lb_control *c)
{
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc(), dt;
	uint64_t limit = PUB_WAIT_MAX_NS * hz / 1000000000ull;

	for (;;) {
		unsigned int behind = 0;

		for (unsigned int i = 0; i < c->p.n_cores; i++)
			if (__atomic_load_n(&c->p.cores[i]->snapshot_gen, __ATOMIC_ACQUIRE) <
			    c->generation)
				behind++;
		dt = rte_rdtsc() - t0;
		if (behind == 0)
			break;
		if (dt > limit) {
			c->pub_timeouts++;
			return;
		}
		rte_pause();
	}
	c->pub_ns[c->pub_count++ % PUB_SAMPLES] = dt * 1000000000ull / hz;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* {"samples", "last_us", "p50_us", "p99_us", "max_us", "timeouts", "build_us"} */
static json_t *
publish_json(const struct lb_control *c)
{
	uint64_t v[PUB_SAMPLES];
	unsigned int n = c->pub_count < PUB_SAMPLES ? (unsigned int)c->pub_count : PUB_SAMPLES;
	json_t *o = json_object();

	json_object_set_new(o, "samples", json_integer((json_int_t)c->pub_count));
	json_object_set_new(o, "timeouts", json_integer((json_int_t)c->pub_timeouts));
	json_object_set_new(o, "build_us", json_real((double)c->build_ns / 1000.0));
	if (n == 0)
		return o;
	json_object_set_new(
	        o, "last_us",
	        json_real((double)c->pub_ns[(c->pub_count - 1) % PUB_SAMPLES] / 1000.0));
	memcpy(v, c->pub_ns, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_u64);
	json_object_set_new(o, "p50_us", json_real((double)v[n / 2] / 1000.0));
	json_object_set_new(o, "p99_us", json_real((double)v[(n * 99) / 100] / 1000.0));
	json_object_set_new(o, "max_us", json_real((double)v[n - 1] / 1000.0));
	return o;
}

/* The hot-key overrides in the form the snapshot builder takes. */
static uint32_t
overrides_for_build(const struct lb_control *c, struct lb_snapshot_override *out)
{
	const struct lb_hot_override *o;
	uint32_t n;

	if (c->hot == NULL)
		return 0;
	n = lb_hotkey_overrides(c->hot, &o);
	for (uint32_t i = 0; i < n; i++) {
		out[i].vip_id = o[i].vip_id;
		out[i].key_hash = o[i].key_hash;
		out[i].n_replicas = o[i].n_replicas;
		out[i].replicas = o[i].replicas;
	}
	return n;
}

/*
 * Build cfg's snapshot for the next generation: tables unchanged since the
 * published snapshot are copied from it, hot-key overrides are laid in.
 */
static struct lb_snapshot *
build(struct lb_control *c, const struct lb_config *cfg, char *err, size_t errlen)
{
	struct lb_snapshot_override *ov = NULL;
	struct lb_snapshot *s;
	uint32_t n_ov = 0;
	uint64_t t0 = rte_rdtsc();

	if (c->hot != NULL) {
		ov = calloc(LB_HOT_MAX_OVERRIDES, sizeof(*ov));
		if (ov == NULL) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		n_ov = overrides_for_build(c, ov);
	}
	s = lb_snapshot_build_ext(cfg, c->generation + 1, *c->p.snap, ov, n_ov, err, errlen);
	free(ov);
	c->build_ns = (rte_rdtsc() - t0) * 1000000000ull / rte_get_tsc_hz();
	return s;
}

/* Run every hook's before (after == false) or after step; failures are logged. */
static void
run_hooks(struct lb_control *c, bool after, const struct lb_snapshot *next,
          const struct lb_snapshot *prev)
{
	char err[256];

	for (unsigned int i = 0; i < c->p.n_hooks; i++) {
		const struct lb_publish_hook *h = &c->p.hooks[i];
		int (*fn)(void *, const struct lb_snapshot *, const struct lb_snapshot *, char *,
		          size_t) = after ? h->after : h->before;

		if (fn == NULL)
			continue;
		err[0] = '\0';
		if (fn(h->arg, next, prev, err, sizeof(err)) != 0) {
			if (c->hook_fail != NULL)
				c->hook_fail[i]++;
			fprintf(stderr, "spillwayd: %s: %s\n", h->name, err);
		}
	}
}

/* Publish a built snapshot: pointer swap, old one retired through RCU. */
static void
publish(struct lb_control *c, struct lb_snapshot *s)
{
	struct lb_snapshot *old;

	reclaim(c, false);
	if (c->n_retire == RETIRE_MAX) {
		/* Workers are slow to pass a quiescent state: wait rather than leak. */
		reclaim(c, true);
	}
	old = *c->p.snap;
	run_hooks(c, false, s, old);
	/* Release: every store that filled the snapshot happens before the pointer. */
	__atomic_store_n(c->p.snap, s, __ATOMIC_RELEASE);
	c->generation++;
	if (old != NULL) {
		c->retire[c->n_retire].snap = old;
		c->retire[c->n_retire].token = rte_rcu_qsbr_start(c->p.qsv);
		c->n_retire++;
	}
	if (c->live)
		wait_switch(c);
	/* old is parked on the retire list: reclaim() frees it no earlier than
	 * the next publication or tick, so the hooks may still read it. */
	run_hooks(c, true, s, old);
}

/* Build, persist (if asked and configured), publish. Takes ownership of cfg. */
static int
apply(struct lb_control *c, struct lb_config *cfg, bool save, char *err, size_t errlen)
{
	struct lb_snapshot *s;
	int rc;

	/* assign_ids may advance backend generations even if a later step fails:
	 * harmless, a generation is only required never to repeat. */
	rc = assign_ids(c, cfg);
	if (rc != 0) {
		snprintf(err, errlen, "cannot assign ids: %s", strerror(-rc));
		lb_config_free(cfg);
		return rc;
	}
	s = build(c, cfg, err, errlen);
	if (s == NULL) {
		lb_config_free(cfg);
		return -ENOMEM;
	}
	if (save && c->p.state_path != NULL) {
		rc = persist(c, cfg, err, errlen);
		if (rc != 0) {
			lb_snapshot_free(s); /* never published: no reader has it */
			lb_config_free(cfg);
			return rc;
		}
	}
	lb_config_free(c->cfg);
	c->cfg = cfg;
	publish(c, s);
	return 0;
}

int
lb_control_apply(struct lb_control *c, struct lb_config *cfg, char *err, size_t errlen)
{
	return apply(c, cfg, true, err, errlen);
}

/* ---- what the RPC handlers reach (struct lb_rpc_ops) ---- */

static const struct lb_config *
ops_config(void *arg)
{
	const struct lb_control *c = arg;

	return c->cfg;
}

static int
ops_apply(void *arg, struct lb_config *next, char *err, size_t errlen)
{
	return lb_control_apply(arg, next, err, errlen);
}

static json_t *
ops_stats(void *arg)
{
	return lb_control_stats(arg);
}

static const struct lb_snapshot *
ops_snapshot(void *arg)
{
	const struct lb_control *c = arg;

	return *c->p.snap;
}

static int
ops_save(void *arg, char *err, size_t errlen)
{
	const struct lb_control *c = arg;

	int rc;

	if (c->p.state_path == NULL) {
		snprintf(err, errlen,
		         "no state file configured (start spillwayd with --state FILE)");
		return -ENOENT;
	}
	rc = persist(c, c->cfg, err, errlen);
	/* rpc.h's convention: on success err carries the path for the reply. */
	if (rc == 0)
		snprintf(err, errlen, "%s", c->p.state_path);
	return rc;
}

/* {name: the hook's stats plus its failed before/after calls} for every hook. */
static json_t *
hooks_json(const struct lb_control *c)
{
	json_t *hooks = json_object();

	for (unsigned int i = 0; i < c->p.n_hooks; i++) {
		const struct lb_publish_hook *h = &c->p.hooks[i];
		json_t *o = h->stats != NULL ? h->stats(h->arg) : NULL;

		if (o == NULL)
			o = json_object();
		json_object_set_new(o, "failures",
		                    json_integer((json_int_t)(c->hook_fail ? c->hook_fail[i] : 0)));
		json_object_set_new(hooks, h->name, o);
	}
	return hooks;
}

/* Drain or undrain every announcing hook; failures are logged (hooks retry). */
static void
drain_hooks(struct lb_control *c, bool on)
{
	char err[256];

	if (on && !c->drained)
		c->drained_ms = lb_now_ms();
	c->drained = on;
	for (unsigned int i = 0; i < c->p.n_hooks; i++) {
		const struct lb_publish_hook *h = &c->p.hooks[i];

		if (h->drain == NULL)
			continue;
		err[0] = '\0';
		if (h->drain(h->arg, on, *c->p.snap, err, sizeof(err)) != 0) {
			if (c->hook_fail != NULL)
				c->hook_fail[i]++;
			fprintf(stderr, "spillwayd: %s: %s: %s (retrying)\n", h->name,
			        on ? "drain" : "undrain", err);
		}
	}
}

static json_t *
ops_drain(void *arg, bool on)
{
	struct lb_control *c = arg;

	if (!on && c->stop_ms != 0) {
		/* Stopping after a signal: announcing again would attract traffic
		 * the instance is about to drop. */
		fprintf(stderr, "spillwayd: undrain ignored: stopping\n");
	} else {
		drain_hooks(c, on);
		fprintf(stderr, "spillwayd: %s\n",
		        on ? "drained: routes withdrawn, still forwarding"
		           : "undrained: routes announced");
	}
	return json_pack("{s:b, s:b, s:o}", "drained", c->drained, "stopping", c->stop_ms != 0,
	                 "hooks", hooks_json(c));
}

static char *
on_request(void *arg, const char *line, size_t len)
{
	const struct lb_control *c = arg;

	return lb_rpc_handle(&c->ops, line, len);
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

static json_t *
hot_params_json(const struct lb_control *c)
{
	struct lb_hot_params hp;

	lb_hotkey_get_params(c->hot, &hp);
	return json_pack("{s:f, s:f, s:f, s:i, s:i}", "threshold", hp.threshold, "threshold_low",
	                 hp.threshold_low, "epsilon", hp.epsilon, "demote_windows",
	                 (json_int_t)hp.demote_windows, "window_ms", (json_int_t)c->hot_window_ms);
}

static json_t *
ops_hot_list(void *arg)
{
	const struct lb_control *c = arg;
	const struct lb_snapshot *s = *c->p.snap;
	const struct lb_hot_override *o;
	uint32_t n = lb_hotkey_overrides(c->hot, &o);
	json_t *root = json_object(), *arr = json_array();
	json_t *counters = lb_hotkey_counters_json(c->hot);
	char buf[64];

	json_object_set_new(counters, "missed_core_windows",
	                    json_integer((json_int_t)c->hot_missed));
	json_object_set_new(root, "params", hot_params_json(c));
	json_object_set_new(root, "window", json_integer((json_int_t)c->hot_window));
	json_object_set_new(root, "counters", counters);
	for (uint32_t i = 0; i < n; i++) {
		const struct lb_vip *v = snap_vip(s, o[i].vip_id);
		json_t *reps = json_array(), *e;

		if (v == NULL)
			continue;
		for (uint16_t r = 0; r < o[i].n_replicas; r++) {
			const struct lb_backend *b = &s->backends[o[i].replicas[r]];

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
	return root;
}

static json_t *
ops_hot_events(void *arg)
{
	const struct lb_control *c = arg;
	const struct lb_snapshot *s = *c->p.snap;
	json_t *ev = lb_hotkey_events_json(c->hot), *e;
	size_t i;

	/* Name VIPs as clients do, by address, port and protocol. */
	json_array_foreach (ev, i, e) {
		const struct lb_vip *v =
		        snap_vip(s, (uint16_t)json_integer_value(json_object_get(e, "vip_id")));

		if (v != NULL)
			json_object_set_new(e, "vip", vip_ref_json(v));
	}
	return ev;
}

static int
ops_hot_set(void *arg, const json_t *params, char *err, size_t errlen)
{
	struct lb_control *c = arg;
	struct lb_hot_params hp;
	json_t *v;
	int rc;

	lb_hotkey_get_params(c->hot, &hp);
	if ((v = json_object_get(params, "threshold")) != NULL) {
		double old = hp.threshold;

		hp.threshold = json_number_value(v);
		/* Keep the demotion threshold's ratio unless it is set too. */
		if (json_object_get(params, "threshold_low") == NULL)
			hp.threshold_low = hp.threshold_low * hp.threshold / old;
	}
	if ((v = json_object_get(params, "threshold_low")) != NULL)
		hp.threshold_low = json_number_value(v);
	if ((v = json_object_get(params, "epsilon")) != NULL)
		hp.epsilon = json_number_value(v);
	if ((v = json_object_get(params, "demote_windows")) != NULL)
		hp.demote_windows = (uint32_t)json_integer_value(v);
	rc = lb_hotkey_set_params(c->hot, &hp);
	if (rc != 0) {
		snprintf(err, errlen,
		         "invalid hot-key parameters (threshold_low must not exceed "
		         "threshold)");
		return rc;
	}
	if ((v = json_object_get(params, "window_ms")) != NULL)
		c->hot_window_ms = (uint32_t)json_integer_value(v);
	return 0;
}

static int
ops_hot_pin(void *arg, uint16_t vip_id, const struct lb_flow_key *key, uint16_t r, bool pin,
            char *err, size_t errlen)
{
	struct lb_control *c = arg;
	const struct lb_snapshot *s = *c->p.snap;
	const struct lb_vip *v = snap_vip(s, vip_id);
	struct lb_snapshot *ns;
	uint64_t kh;
	int rc;

	if (v == NULL) {
		snprintf(err, errlen, "no such VIP");
		return -ENOENT;
	}
	kh = lb_vip_key_hash(s, v, key, lb_hash_flow(&s->hkey, key));
	rc = pin ? lb_hotkey_pin(c->hot, s, vip_id, kh, key, r, c->hot_window)
	         : lb_hotkey_unpin(c->hot, vip_id, kh);
	if (rc != 0) {
		snprintf(err, errlen, "%s",
		         rc == -ENOENT   ? "no override for that key"
		         : rc == -ENOSPC ? "override table full"
		                         : strerror(-rc));
		return rc;
	}
	ns = build(c, c->cfg, err, errlen);
	if (ns == NULL)
		return -ENOMEM;
	publish(c, ns);
	return 0;
}

/* Hot keys on: the controller and its buffers, parameters from the config. */
static int
hot_create(struct lb_control *c, const struct lb_config *cfg, char *err, size_t errlen)
{
	struct lb_hot_params hp = {
	        .threshold = cfg->hot.threshold,
	        .threshold_low = cfg->hot.threshold / 2,
	        .demote_windows = 5,
	        .epsilon = cfg->hot.epsilon,
	        .ewma_alpha = 0.5,
	};

	c->hot = lb_hotkey_create(&hp);
	c->hot_prev = calloc(LB_MAX_BACKENDS, sizeof(*c->hot_prev));
	c->hot_load = calloc(LB_MAX_BACKENDS, sizeof(*c->hot_load));
	c->hot_vip_total = calloc(LB_MAX_VIPS, sizeof(*c->hot_vip_total));
	c->hot_cands = calloc((size_t)c->p.n_cores * HOT_CANDS_PER_CORE, sizeof(*c->hot_cands));
	c->hot_merged = calloc((size_t)c->p.n_cores * HOT_CANDS_PER_CORE, sizeof(*c->hot_merged));
	if (c->hot == NULL || c->hot_prev == NULL || c->hot_load == NULL ||
	    c->hot_vip_total == NULL || c->hot_cands == NULL || c->hot_merged == NULL) {
		snprintf(err, errlen, "hot keys: cannot create the controller: %s",
		         strerror(errno ? errno : ENOMEM));
		return -ENOMEM;
	}
	c->hot_window_ms = cfg->hot.window_ms;
	c->ops.hot_list = ops_hot_list;
	c->ops.hot_events = ops_hot_events;
	c->ops.hot_set = ops_hot_set;
	c->ops.hot_pin = ops_hot_pin;
	return 0;
}

static void
hot_destroy(struct lb_control *c)
{
	lb_hotkey_free(c->hot);
	free(c->hot_prev);
	free(c->hot_load);
	free(c->hot_vip_total);
	free(c->hot_cands);
	free(c->hot_merged);
}

struct lb_control *
lb_control_create(const struct lb_control_params *p, struct lb_config *cfg, char *err,
                  size_t errlen)
{
	struct lb_control *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		lb_config_free(cfg);
		return NULL;
	}
	c->p = *p;
	c->epfd = c->sigfd = c->timerfd = -1;
	if (c->p.n_hooks > 0)
		c->hook_fail = calloc(c->p.n_hooks, sizeof(*c->hook_fail));
	c->ops = (struct lb_rpc_ops){
	        .arg = c,
	        .config = ops_config,
	        .apply = ops_apply,
	        .stats = ops_stats,
	        .snapshot = ops_snapshot,
	        .save = ops_save,
	};
	for (unsigned int i = 0; i < c->p.n_hooks; i++)
		if (c->p.hooks[i].drain != NULL)
			c->ops.drain = ops_drain;
	if (c->p.sketches != NULL && c->p.window != NULL && cfg->hot.enabled &&
	    hot_create(c, cfg, err, errlen) != 0) {
		hot_destroy(c);
		lb_config_free(cfg);
		free(c);
		return NULL;
	}
	if (c->p.state_path != NULL) {
		int n = lb_persist_cleanup(c->p.state_path);

		if (n > 0)
			fprintf(stderr,
			        "spillwayd: removed %d temporary file(s) of %s left by a "
			        "crash\n",
			        n, c->p.state_path);
	}
	if (apply(c, cfg, false, err, errlen) != 0) {
		hot_destroy(c);
		free(c);
		return NULL;
	}
	/* From now on the state file always exists: a restart finds it. */
	if (c->p.state_path != NULL && access(c->p.state_path, F_OK) != 0 && errno == ENOENT &&
	    persist(c, c->cfg, err, errlen) != 0)
		goto fail;
	if (c->p.control_path != NULL) {
		struct lb_server_params sp = {
		        .path = c->p.control_path,
		        .mode = c->p.control_mode,
		        .group = c->p.control_group,
		        .on_request = on_request,
		        .error_reply = lb_rpc_error_reply,
		        .arg = c,
		};

		c->server = lb_server_create(&sp, err, errlen);
		if (c->server == NULL)
			goto fail;
	}
	return c;
fail:
	lb_control_destroy(c);
	return NULL;
}

json_t *
lb_control_stats(const struct lb_control *c)
{
	json_t *root = lb_stats_json(c->cfg, c->p.cores, c->p.lcores, c->p.n_cores);
	json_t *cores;

	if (root == NULL)
		return NULL;
	cores = json_object_get(root, "cores");
	json_object_set_new(root, "generation", json_integer((json_int_t)c->generation));
	json_object_set_new(root, "publish", publish_json(c));
	if (c->p.pool != NULL) {
		unsigned int size = c->p.pool->size;
		/* Counts the per-lcore caches as available: exact once workers stop. */
		unsigned int avail = rte_mempool_avail_count(c->p.pool);
		json_t *m = json_object();

		json_object_set_new(m, "size", json_integer(size));
		json_object_set_new(m, "available", json_integer(avail));
		json_object_set_new(m, "in_use", json_integer(size > avail ? size - avail : 0));
		json_object_set_new(root, "mempool", m);
	}
	if (c->p.n_hooks > 0)
		json_object_set_new(root, "hooks", hooks_json(c));
	if (c->ops.drain != NULL)
		json_object_set_new(root, "drained", json_boolean(c->drained));
	if (c->hot != NULL) {
		json_t *h = lb_hotkey_counters_json(c->hot);

		json_object_set_new(h, "window", json_integer((json_int_t)c->hot_window));
		json_object_set_new(root, "hot", h);
	}
	for (unsigned int i = 0; i < c->p.n_cores; i++) {
		/* Acquire pairs with the worker's release store of its generation. */
		uint64_t g = __atomic_load_n(&c->p.cores[i]->snapshot_gen, __ATOMIC_ACQUIRE);

		json_object_set_new(json_array_get(cores, i), "snapshot_gen",
		                    json_integer((json_int_t)g));
	}
	return root;
}

static uint64_t
total_rx(const struct lb_control *c)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < c->p.n_cores; i++)
		n += __atomic_load_n(&c->p.cores[i]->rx_packets, __ATOMIC_RELAXED);
	return n;
}

static void
reload(struct lb_control *c)
{
	char err[512];
	struct lb_config *cfg;

	if (c->p.config_path == NULL) {
		fprintf(stderr, "spillwayd: SIGHUP: no --config to reload; ignored\n");
		return;
	}
	cfg = lb_config_load_file(c->p.config_path, err, sizeof(err));
	if (cfg == NULL) {
		fprintf(stderr, "spillwayd: SIGHUP: %s; keeping the running configuration\n", err);
		return;
	}
	if (lb_control_apply(c, cfg, err, sizeof(err)) != 0)
		fprintf(stderr, "spillwayd: SIGHUP: %s; keeping the running configuration\n", err);
	else
		fprintf(stderr, "spillwayd: SIGHUP: configuration reloaded (generation %llu)%s\n",
		        (unsigned long long)c->generation,
		        c->p.state_path != NULL ? " and saved" : "");
}

static int
cmp_cand(const void *a, const void *b)
{
	const struct lb_sketch_cand *x = a, *y = b;

	if (x->vip_id != y->vip_id)
		return x->vip_id < y->vip_id ? -1 : 1;
	return x->key_hash < y->key_hash ? -1 : x->key_hash > y->key_hash;
}

/*
 * Window w is closed on every core: merge the cores' candidates and totals,
 * take each backend's load over the window from the counters, run the
 * controller, and publish a new snapshot if the overrides changed.
 */
static void
hot_process(struct lb_control *c, uint64_t w)
{
	const struct lb_snapshot *s = *c->p.snap;
	uint32_t n = 0, m = 0;
	char err[256];

	memset(c->hot_vip_total, 0, LB_MAX_VIPS * sizeof(*c->hot_vip_total));
	for (unsigned int i = 0; i < c->p.n_cores; i++) {
		uint64_t totals[LB_MAX_VIPS];
		uint32_t k = 0;

		if (!lb_sketch_read(c->p.sketches[i], w, c->hot_cands + n, HOT_CANDS_PER_CORE, &k,
		                    totals)) {
			c->hot_missed++;
			continue;
		}
		n += k;
		for (unsigned int v = 0; v < LB_MAX_VIPS; v++)
			c->hot_vip_total[v] += totals[v];
	}
	/* Same (VIP, key) on several cores: one candidate, counts summed. */
	qsort(c->hot_cands, n, sizeof(*c->hot_cands), cmp_cand);
	for (uint32_t i = 0; i < n; i++) {
		if (m > 0 && c->hot_merged[m - 1].vip_id == c->hot_cands[i].vip_id &&
		    c->hot_merged[m - 1].key_hash == c->hot_cands[i].key_hash) {
			c->hot_merged[m - 1].count += c->hot_cands[i].count;
			continue;
		}
		c->hot_merged[m].vip_id = c->hot_cands[i].vip_id;
		c->hot_merged[m].key_hash = c->hot_cands[i].key_hash;
		c->hot_merged[m].key = c->hot_cands[i].key;
		c->hot_merged[m].count = c->hot_cands[i].count;
		m++;
	}
	for (uint32_t id = 0; id < s->n_backends && id < LB_MAX_BACKENDS; id++) {
		uint64_t cur = 0;

		for (unsigned int i = 0; i < c->p.n_cores; i++)
			cur += __atomic_load_n(&c->p.cores[i]->backend[id].packets,
			                       __ATOMIC_RELAXED);
		c->hot_load[id] = cur - c->hot_prev[id];
		c->hot_prev[id] = cur;
	}
	if (lb_hotkey_window(c->hot, s, c->hot_load, c->hot_vip_total, c->hot_merged, m, w)) {
		struct lb_snapshot *ns = build(c, c->cfg, err, sizeof(err));

		if (ns == NULL)
			fprintf(stderr, "spillwayd: hot keys: %s; overrides not published\n", err);
		else
			publish(c, ns);
	}
}

/* Open the next window when it is due; read the closed one once every core closed it. */
static void
hot_tick(struct lb_control *c)
{
	uint64_t now = lb_now_ms();

	if (c->hot_pending != 0) {
		hot_process(c, c->hot_pending);
		c->hot_pending = 0;
	}
	if (now < c->hot_next_ms)
		return;
	c->hot_next_ms = now + c->hot_window_ms;
	c->hot_window++;
	/* Release: pairs with the workers' acquire load in lb_sketch_poll. */
	__atomic_store_n(c->p.window, c->hot_window, __ATOMIC_RELEASE);
	if (c->hot_window > 1)
		c->hot_pending = c->hot_window - 1;
}

static int
on_tick(struct lb_control *c)
{
	uint64_t expirations, rx;

	if (read(c->timerfd, &expirations, sizeof(expirations)) < 0)
		return 0;
	reclaim(c, false);
	if (c->hot != NULL)
		hot_tick(c);
	for (unsigned int i = 0; i < c->p.n_hooks; i++)
		if (c->p.hooks[i].tick != NULL)
			c->p.hooks[i].tick(c->p.hooks[i].arg, *c->p.snap);
	if (c->server != NULL)
		lb_server_tick(c->server);
	if (c->stop_ms != 0 && lb_now_ms() >= c->stop_ms)
		return 2;
	if (c->p.idle_exit_ms == 0)
		return 0;
	rx = total_rx(c);
	if (rx != c->last_rx) {
		c->last_rx = rx;
		c->idle_ms = 0;
		return 0;
	}
	c->idle_ms += TICK_MS * expirations;
	return c->idle_ms >= c->p.idle_exit_ms;
}

/*
 * A stop signal with an announcer: withdraw first, keep forwarding for
 * drain_wait_ms (from the drain, if it happened earlier) so routers move the
 * traffic away, then stop from the tick.
 */
static void
stop_draining(struct lb_control *c, int sig)
{
	uint64_t now, until;

	if (!c->drained)
		drain_hooks(c, true);
	now = lb_now_ms();
	until = c->drained_ms + c->p.drain_wait_ms;
	c->stop_ms = until > now ? until : now;
	if (c->stop_ms == 0)
		c->stop_ms = 1;
	fprintf(stderr,
	        "spillwayd: %s: routes withdrawn, forwarding for %llu ms more, then stopping "
	        "(send it again to stop now)\n",
	        strsignal(sig), (unsigned long long)(c->stop_ms - now));
}

int
lb_control_run(struct lb_control *c)
{
	struct itimerspec its = {{0, TICK_MS * 1000000L}, {0, TICK_MS * 1000000L}};
	struct epoll_event ev;
	sigset_t set;
	int rc = 0;

	c->live = true; /* main launched the workers before calling us */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	c->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	c->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->sigfd < 0 || c->timerfd < 0 || c->epfd < 0 ||
	    timerfd_settime(c->timerfd, 0, &its, NULL) != 0)
		return -errno;
	ev.events = EPOLLIN;
	ev.data.fd = c->sigfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->sigfd, &ev) != 0)
		return -errno;
	ev.data.fd = c->timerfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->timerfd, &ev) != 0)
		return -errno;
	if (c->server != NULL) {
		/* Nested epoll: the server's set is readable when a client needs us. */
		ev.data.fd = lb_server_fd(c->server);
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0)
			return -errno;
	}

	for (;;) {
		struct epoll_event evs[8];
		int n = epoll_wait(c->epfd, evs, 8, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == c->timerfd) {
				int t = on_tick(c);

				if (t == 2) {
					fprintf(stderr, "spillwayd: drain wait over, stopping\n");
					goto out;
				}
				if (t) {
					fprintf(stderr, "spillwayd: idle for %u ms, stopping\n",
					        c->p.idle_exit_ms);
					goto out;
				}
			} else if (c->server != NULL && evs[i].data.fd == lb_server_fd(c->server)) {
				rc = lb_server_process(c->server);
				if (rc != 0)
					goto out;
			} else if (evs[i].data.fd == c->sigfd) {
				struct signalfd_siginfo si;

				while (read(c->sigfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGHUP) {
						reload(c);
						continue;
					}
					if (c->ops.drain != NULL && c->stop_ms == 0) {
						stop_draining(c, (int)si.ssi_signo);
						continue;
					}
					fprintf(stderr, "spillwayd: %s, stopping\n",
					        strsignal((int)si.ssi_signo));
					goto out;
				}
			}
		}
	}
out:
	*c->p.stop = true;
	return rc;
}

void
lb_control_destroy(struct lb_control *c)
{
	if (c == NULL)
		return;
	lb_server_destroy(c->server);
	for (unsigned int i = 0; i < c->n_retire; i++)
		lb_snapshot_free(c->retire[i].snap);
	lb_snapshot_free(*c->p.snap);
	*c->p.snap = NULL;
	lb_config_free(c->cfg);
	hot_destroy(c);
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->sigfd >= 0)
		close(c->sigfd);
	if (c->timerfd >= 0)
		close(c->timerfd);
	free(c->hook_fail);
	free(c);
}
