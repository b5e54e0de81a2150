/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The health checker of health_run.h. Records are indexed by backend id (the
 * publisher keeps ids stable across changes; a reused id has a new
 * generation, which resets the record). Probes come from a small pool, each
 * with its own copy of the health object it runs, so a configuration change
 * during a probe never leaves it pointing at freed memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/base/clock.h"
#include "control/health/health.h"
#include "control/health/health_probe.h"
#include "control/runtime/health_run.h"
#include "control/health/health_sched.h"
#include "control/base/loop.h"
#include "control/runtime/publish.h"

struct rec {
	uint16_t gen;    /* of the backend the record is for; 0: none */
	uint64_t conf;   /* digest of its health object (0: not checked) */
	uint64_t seen;   /* sync round that saw it */
	int16_t probe;   /* pool index of its probe in flight, -1: none */
	uint32_t vi, bi; /* its place in the configuration last followed */
	struct lb_health_bk bk;
	char last_error[LB_PROBE_WHY_MAX];
};

struct pooled {
	struct lb_probe p;
	struct lb_health_conf conf; /* p.conf points here */
	const struct lb_probe_transport *t;
	struct lb_health_run *run;
	uint16_t id; /* backend id; pool entry in use iff in_use */
	bool in_use;
	bool registered; /* p.fd is in the loop */
};

struct event {
	uint64_t ms;
	uint16_t vip_id;
	uint8_t af;
	union lb_ip addr;
	uint8_t type; /* enum ev_type */
	uint8_t result;
};

enum ev_type { EV_UP, EV_DOWN, EV_FAIL_OPEN, EV_FAIL_OPEN_END };
static const char *const ev_names[] = {"health_up", "health_down", "fail_open", "fail_open_end"};

struct lb_health_run {
	struct lb_publisher *pub;
	struct lb_loop *loop;
	struct lb_health_sched sched;
	struct rec *rec; /* LB_MAX_BACKENDS */
	struct pooled pool[LB_HEALTH_MAX_INFLIGHT];
	const struct lb_config *synced; /* the configuration last followed */
	uint64_t synced_gen;
	uint64_t round;
	bool dirty; /* a state changed: the snapshot may need to change */
	bool vip_open[LB_MAX_VIPS];
	struct event ev[LB_HEALTH_MAX_EVENTS];
	uint32_t ev_next, ev_n;
	uint64_t publish_failed, publishes;
};

static void
event_add(struct lb_health_run *r, enum ev_type type, const struct lb_cfg_vip *v,
          const struct lb_cfg_backend *b, uint8_t result)
{
	struct event *e = &r->ev[r->ev_next];

	*e = (struct event){
	        .ms = lb_now_ms(), .vip_id = v->id, .type = (uint8_t)type, .result = result};
	if (b != NULL) {
		e->af = b->af;
		e->addr = b->addr;
	}
	r->ev_next = (r->ev_next + 1) % LB_HEALTH_MAX_EVENTS;
	if (r->ev_n < LB_HEALTH_MAX_EVENTS)
		r->ev_n++;
}

struct lb_health_run *
lb_health_run_create(struct lb_publisher *pub)
{
	struct lb_health_run *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->pub = pub;
	r->rec = calloc(LB_MAX_BACKENDS, sizeof(*r->rec));
	if (r->rec == NULL ||
	    lb_health_sched_init(&r->sched, LB_MAX_BACKENDS, LB_HEALTH_MAX_INFLIGHT) != 0) {
		free(r->rec);
		free(r);
		return NULL;
	}
	for (uint32_t i = 0; i < LB_MAX_BACKENDS; i++)
		r->rec[i].probe = -1;
	return r;
}

/* End backend id's probe in flight, if any (its result is dropped). */
static void
probe_drop(struct lb_health_run *r, uint16_t id)
{
	struct rec *rc = &r->rec[id];
	struct pooled *q;

	if (rc->probe < 0)
		return;
	q = &r->pool[rc->probe];
	if (q->registered && r->loop != NULL)
		lb_loop_del(r->loop, q->p.fd);
	q->registered = false;
	if (q->t != NULL)
		q->t->stop(q->t->arg, &q->p);
	q->in_use = false;
	rc->probe = -1;
}

static const struct lb_cfg_vip *
vip_of(const struct lb_config *cfg, uint16_t id, uint16_t gen, const struct lb_cfg_backend **bp)
{
	for (uint32_t i = 0; i < cfg->n_vips; i++)
		for (uint32_t j = 0; j < cfg->vips[i].n_backends; j++)
			if (cfg->vips[i].backends[j].id == id &&
			    cfg->vips[i].backends[j].gen == gen) {
				*bp = &cfg->vips[i].backends[j];
				return &cfg->vips[i];
			}
	return NULL;
}

/* Finish id's probe with result (at now_ms): count it, schedule the next. */
static void
probe_finish(struct lb_health_run *r, uint16_t id, enum lb_health_result res, uint64_t now_ms)
{
	struct rec *rc = &r->rec[id];
	struct pooled *q = &r->pool[rc->probe];
	uint32_t rise = q->conf.rise, fall = q->conf.fall;

	if (res == LB_HEALTH_RESULT_OK)
		rc->last_error[0] = '\0';
	else
		snprintf(rc->last_error, sizeof(rc->last_error), "%s",
		         res == LB_HEALTH_RESULT_TIMEOUT ? "timeout" : q->p.why);
	probe_drop(r, id);
	lb_health_sched_done(&r->sched, id, now_ms);
	if (lb_health_observe(&rc->bk, res, rise, fall, now_ms)) {
		const struct lb_cfg_backend *b = NULL;
		const struct lb_cfg_vip *v = vip_of(r->pub->cfg, id, rc->gen, &b);
		char a[64];

		r->dirty = true;
		if (v != NULL) {
			event_add(r, rc->bk.state == LB_HEALTH_UP ? EV_UP : EV_DOWN, v, b,
			          (uint8_t)res);
			fprintf(stderr, "spillwayd: health: backend %s of VIP %u is %s (%s)\n",
			        lb_ip_to_str(b->af, &b->addr, a, sizeof(a)), v->id,
			        lb_health_state_name(rc->bk.state),
			        res == LB_HEALTH_RESULT_OK ? "probe ok" : rc->last_error);
		}
	}
}

static void
on_probe_fd(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	struct pooled *q = arg;
	struct lb_health_run *r = q->run;
	enum lb_probe_status st = q->t->poll(q->t->arg, &q->p, events);

	if (st == LB_PROBE_PENDING) {
		/* The transport may wait for something else now. */
		if (q->p.fd != fd || q->p.events == 0) {
			lb_loop_del(loop, fd);
			q->registered = q->p.fd >= 0 && lb_loop_add(loop, q->p.fd, q->p.events,
			                                            on_probe_fd, q) == 0;
		} else {
			lb_loop_del(loop, fd);
			q->registered = lb_loop_add(loop, fd, q->p.events, on_probe_fd, q) == 0;
		}
		if (q->registered)
			return;
		snprintf(q->p.why, sizeof(q->p.why), "cannot wait for the probe's socket");
		st = LB_PROBE_FAIL;
	}
	probe_finish(r, q->id, st == LB_PROBE_OK ? LB_HEALTH_RESULT_OK : LB_HEALTH_RESULT_FAIL,
	             lb_now_ms());
}

static void
probe_start(struct lb_health_run *r, uint16_t id, uint64_t now_ms)
{
	const struct lb_config *cfg = r->pub->cfg;
	const struct rec *rc = &r->rec[id];
	const struct lb_cfg_vip *v =
	        cfg == r->synced && rc->vi < cfg->n_vips ? &cfg->vips[rc->vi] : NULL;
	const struct lb_cfg_backend *b =
	        v != NULL && rc->bi < v->n_backends ? &v->backends[rc->bi] : NULL;
	const struct lb_health_conf *h = NULL;
	struct pooled *q = NULL;

	if (b == NULL || b->id != id || b->gen != rc->gen)
		v = vip_of(cfg, id, rc->gen, &b);
	h = v != NULL ? lb_cfg_backend_health(v, b) : NULL;
	enum lb_probe_status st;

	for (int i = 0; i < LB_HEALTH_MAX_INFLIGHT && q == NULL; i++)
		if (!r->pool[i].in_use) {
			q = &r->pool[i];
			r->rec[id].probe = (int16_t)i;
		}
	if (h == NULL || q == NULL) {
		lb_health_sched_remove(&r->sched, id);
		r->rec[id].probe = -1;
		return;
	}
	*q = (struct pooled){.conf = *h, .run = r, .id = id, .in_use = true};
	q->t = lb_health_probe_transport(h->via);
	q->p.conf = &q->conf;
	q->p.fd = -1;
	q->p.af = b->af;
	q->p.addr = b->addr;
	q->p.port = h->port != 0 ? h->port : v->port;
	q->p.vip_af = v->af;
	q->p.vip_addr = v->addr;
	q->p.vip_port = v->port;
	q->p.vip_proto = v->proto;
	q->p.vip_encap = v->encap;
	q->p.backend_id = id;
	if (q->t == NULL) {
		snprintf(q->p.why, sizeof(q->p.why), "no transport for this via");
		st = LB_PROBE_FAIL;
	} else {
		st = q->t->start(q->t->arg, &q->p);
	}
	if (st == LB_PROBE_PENDING) {
		q->registered = q->p.fd >= 0 && q->p.events != 0 &&
		                lb_loop_add(r->loop, q->p.fd, q->p.events, on_probe_fd, q) == 0;
		if (q->registered)
			return;
		snprintf(q->p.why, sizeof(q->p.why), "cannot wait for the probe's socket");
		st = LB_PROBE_FAIL;
	}
	probe_finish(r, id, st == LB_PROBE_OK ? LB_HEALTH_RESULT_OK : LB_HEALTH_RESULT_FAIL,
	             now_ms);
}

/* Follow the running configuration: records for new backends, none for gone ones. */
static void
sync_config(struct lb_health_run *r, uint64_t now_ms)
{
	const struct lb_config *cfg = r->pub->cfg;

	if (cfg == r->synced && r->pub->generation == r->synced_gen)
		return;
	r->synced = cfg;
	r->synced_gen = r->pub->generation;
	r->round++;
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];

		for (uint32_t j = 0; j < v->n_backends; j++) {
			const struct lb_cfg_backend *b = &v->backends[j];
			const struct lb_health_conf *h = lb_cfg_backend_health(v, b);
			uint64_t d =
			        h == NULL || h->type == LB_HEALTH_TYPE_NONE
			                ? 0
			                : (b->health != NULL ? b->health_digest : v->health_digest);
			struct rec *rc = &r->rec[b->id];

			rc->seen = r->round;
			rc->vi = i;
			rc->bi = j;
			if (rc->gen == b->gen && rc->conf == d)
				continue;
			probe_drop(r, b->id);
			if (rc->gen != b->gen) {
				memset(&rc->bk, 0, sizeof(rc->bk));
				rc->last_error[0] = '\0';
			} else {
				lb_health_reset(&rc->bk);
			}
			rc->gen = b->gen;
			rc->conf = d;
			r->dirty = true;
			lb_health_sched_remove(&r->sched, b->id);
			if (d != 0)
				lb_health_sched_add(&r->sched, b->id,
				                    (uint32_t)b->id << 16 ^ b->gen, h->interval_ms,
				                    h->timeout_ms, now_ms);
		}
	}
	for (uint32_t id = 0; id < LB_MAX_BACKENDS; id++) {
		struct rec *rc = &r->rec[id];

		if (rc->gen == 0 || rc->seen == r->round)
			continue;
		probe_drop(r, (uint16_t)id);
		lb_health_sched_remove(&r->sched, id);
		memset(&rc->bk, 0, sizeof(rc->bk));
		rc->gen = 0;
		rc->conf = 0;
	}
}

/*
 * What cfg's VIP v gets from the verdicts: health_out of its backends
 * (written if write), fail-open changes counted and logged if write.
 * Returns whether any health_out differs from what cfg holds.
 */
static bool
lay_vip(struct lb_health_run *r, struct lb_cfg_vip *v, bool write)
{
	struct lb_health_member *m = calloc(v->n_backends ? v->n_backends : 1, sizeof(*m));
	uint8_t *out = calloc(v->n_backends ? v->n_backends : 1, 1);
	bool *kept = calloc(v->n_backends ? v->n_backends : 1, sizeof(*kept));
	bool changed = false;
	uint32_t n_kept;

	if (m == NULL || out == NULL || kept == NULL) {
		free(m);
		free(out);
		free(kept);
		return false;
	}
	for (uint32_t j = 0; j < v->n_backends; j++) {
		const struct lb_cfg_backend *b = &v->backends[j];
		const struct lb_health_conf *h = lb_cfg_backend_health(v, b);
		const struct rec *rc = &r->rec[b->id];

		m[j].op_state = b->state;
		m[j].checked = h != NULL && h->type != LB_HEALTH_TYPE_NONE;
		m[j].on_down = h != NULL ? h->on_down : LB_HEALTH_MOVE_FLOWS;
		m[j].health = rc->gen == b->gen ? rc->bk.state : LB_HEALTH_UNKNOWN;
	}
	n_kept = lb_health_decide(
	        m, v->n_backends,
	        v->health != NULL ? v->health->fail_open : LB_HEALTH_DEFAULT_FAIL_OPEN, out, kept);
	for (uint32_t j = 0; j < v->n_backends; j++) {
		struct lb_cfg_backend *b = &v->backends[j];
		uint8_t ho = out[j] != b->state ? out[j] : 0;
		struct rec *rc = &r->rec[b->id];

		changed |= ho != b->health_out;
		if (!write)
			continue;
		b->health_out = ho;
		if (rc->gen == b->gen) {
			if (kept[j] && !rc->bk.kept)
				rc->bk.fail_open++;
			rc->bk.kept = kept[j];
		}
	}
	if (write && v->id < LB_MAX_VIPS && (n_kept > 0) != r->vip_open[v->id]) {
		r->vip_open[v->id] = n_kept > 0;
		event_add(r, n_kept > 0 ? EV_FAIL_OPEN : EV_FAIL_OPEN_END, v, NULL, 0);
		fprintf(stderr,
		        "spillwayd: health: VIP %u %s fail-open (%u of its backends failing are "
		        "kept in)\n",
		        v->id, n_kept > 0 ? "enters" : "leaves", n_kept);
	}
	free(m);
	free(out);
	free(kept);
	return changed;
}

void
lb_health_run_lay(struct lb_health_run *r, struct lb_config *cfg)
{
	if (r == NULL)
		return;
	for (uint32_t i = 0; i < cfg->n_vips; i++)
		lay_vip(r, &cfg->vips[i], true);
}

void
lb_health_run_attach(struct lb_health_run *r, struct lb_loop *loop)
{
	if (r == NULL)
		return;
	if (loop == NULL)
		for (uint32_t id = 0; id < LB_MAX_BACKENDS; id++)
			if (r->rec[id].probe >= 0) {
				probe_drop(r, (uint16_t)id);
				lb_health_sched_done(&r->sched, id, lb_now_ms());
			}
	r->loop = loop;
}

void
lb_health_run_tick(struct lb_health_run *r, uint64_t now_ms)
{
	uint32_t ids[LB_HEALTH_MAX_INFLIGHT], n;

	if (r == NULL || r->loop == NULL)
		return;
	sync_config(r, now_ms);
	n = lb_health_sched_expired(&r->sched, now_ms, ids, LB_HEALTH_MAX_INFLIGHT);
	for (uint32_t k = 0; k < n; k++)
		if (r->rec[ids[k]].probe >= 0)
			probe_finish(r, (uint16_t)ids[k], LB_HEALTH_RESULT_TIMEOUT, now_ms);
		else
			lb_health_sched_done(&r->sched, ids[k], now_ms);
	n = lb_health_sched_due(&r->sched, now_ms, ids, LB_HEALTH_MAX_INFLIGHT);
	for (uint32_t k = 0; k < n; k++)
		probe_start(r, (uint16_t)ids[k], now_ms);
	if (r->dirty) {
		struct lb_config *cfg = r->pub->cfg, *next;
		bool change = false;
		char err[256];

		for (uint32_t i = 0; i < cfg->n_vips; i++)
			change |= lay_vip(r, &cfg->vips[i], false);
		if (!change) {
			r->dirty = false;
			return;
		}
		next = lb_config_clone(cfg);
		if (next == NULL || lb_publish_apply(r->pub, next, false, err, sizeof(err)) != 0) {
			r->publish_failed++; /* retried on the next tick */
			return;
		}
		r->publishes++;
		r->dirty = false;
	}
}

static json_t *
rec_json(const struct lb_health_run *r, const struct lb_cfg_vip *v, const struct lb_cfg_backend *b)
{
	const struct rec *rc = &r->rec[b->id];
	const struct lb_health_conf *h = lb_cfg_backend_health(v, b);
	bool ours = rc->gen == b->gen;
	char a[64], va[64];
	static const char *const states[] = {"active", "draining", "down"};
	json_t *o = json_pack(
	        "{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
	        "vip", lb_ip_to_str(v->af, &v->addr, va, sizeof(va)), "port", (int)v->port,
	        "protocol", v->proto == 6 ? "tcp" : "udp", "address",
	        lb_ip_to_str(b->af, &b->addr, a, sizeof(a)), "state", states[b->state], "health",
	        lb_health_state_name(ours ? rc->bk.state : LB_HEALTH_UNKNOWN), "effective",
	        states[lb_cfg_backend_effective_state(b)], "last_result",
	        lb_health_result_name(ours ? rc->bk.last_result : 0), "last_error",
	        ours ? rc->last_error : "", "last_change_ms",
	        (json_int_t)(ours ? rc->bk.last_change_ms : 0), "probes_ok",
	        (json_int_t)(ours ? rc->bk.probes_ok : 0), "probes_failed",
	        (json_int_t)(ours ? rc->bk.probes_failed : 0), "timeouts",
	        (json_int_t)(ours ? rc->bk.timeouts : 0), "transitions",
	        (json_int_t)(ours ? rc->bk.transitions : 0), "fail_open",
	        (json_int_t)(ours ? rc->bk.fail_open : 0), "kept", ours && rc->bk.kept);

	if (o == NULL)
		return NULL;
	if (b->name[0] != '\0')
		json_object_set_new(o, "name", json_string(b->name));
	json_object_set_new(o, "check",
	                    json_string(h == NULL || h->type == LB_HEALTH_TYPE_NONE ? "none"
	                                : h->type == LB_HEALTH_TYPE_TCP             ? "tcp"
	                                : h->type == LB_HEALTH_TYPE_HTTP            ? "http"
	                                                                            : "udp"));
	return o;
}

json_t *
lb_health_run_list(const struct lb_health_run *r)
{
	const struct lb_config *cfg = r->pub->cfg;
	json_t *arr = json_array();

	for (uint32_t i = 0; arr != NULL && i < cfg->n_vips; i++)
		for (uint32_t j = 0; j < cfg->vips[i].n_backends; j++)
			if (json_array_append_new(arr, rec_json(r, &cfg->vips[i],
			                                        &cfg->vips[i].backends[j])) != 0) {
				json_decref(arr);
				return NULL;
			}
	return arr;
}

json_t *
lb_health_run_events(const struct lb_health_run *r)
{
	json_t *arr = json_array();
	uint32_t first = (r->ev_next + LB_HEALTH_MAX_EVENTS - r->ev_n) % LB_HEALTH_MAX_EVENTS;

	for (uint32_t k = 0; arr != NULL && k < r->ev_n; k++) {
		const struct event *e = &r->ev[(first + k) % LB_HEALTH_MAX_EVENTS];
		char a[64];
		json_t *o = json_pack("{s:I, s:s, s:i, s:s}", "ms", (json_int_t)e->ms, "event",
		                      ev_names[e->type], "vip_id", (int)e->vip_id, "result",
		                      lb_health_result_name(e->result));

		if (o != NULL && e->af != 0)
			json_object_set_new(
			        o, "address",
			        json_string(lb_ip_to_str(e->af, &e->addr, a, sizeof(a))));
		if (json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

json_t *
lb_health_run_stats(const struct lb_health_run *r)
{
	uint64_t ok = 0, failed = 0, to = 0, tr = 0, fo = 0, up = 0, down = 0, unknown = 0;

	for (uint32_t id = 0; id < LB_MAX_BACKENDS; id++) {
		const struct rec *rc = &r->rec[id];

		if (rc->gen == 0)
			continue;
		ok += rc->bk.probes_ok;
		failed += rc->bk.probes_failed;
		to += rc->bk.timeouts;
		tr += rc->bk.transitions;
		fo += rc->bk.fail_open;
		if (rc->conf != 0) {
			up += rc->bk.state == LB_HEALTH_UP;
			down += rc->bk.state == LB_HEALTH_DOWN;
			unknown += rc->bk.state == LB_HEALTH_UNKNOWN;
		}
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
	                 "probes_ok", (json_int_t)ok, "probes_failed", (json_int_t)failed,
	                 "timeouts", (json_int_t)to, "transitions", (json_int_t)tr, "fail_open",
	                 (json_int_t)fo, "up", (json_int_t)up, "down", (json_int_t)down, "unknown",
	                 (json_int_t)unknown, "inflight", (json_int_t)r->sched.inflight, "deferred",
	                 (json_int_t)r->sched.deferred, "publishes", (json_int_t)r->publishes,
	                 "publish_failed", (json_int_t)r->publish_failed);
}

const char *
lb_health_run_state_name(const struct lb_health_run *r, uint16_t id, uint16_t gen)
{
	if (r == NULL || id >= LB_MAX_BACKENDS || r->rec[id].gen != gen)
		return "unknown";
	return lb_health_state_name(r->rec[id].bk.state);
}

void
lb_health_run_destroy(struct lb_health_run *r)
{
	if (r == NULL)
		return;
	lb_health_run_attach(r, NULL);
	lb_health_sched_fini(&r->sched);
	free(r->rec);
	free(r);
}
