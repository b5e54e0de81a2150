/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Snapshot publication: build the new snapshot completely, store its pointer
 * with release semantics, take an RCU token, and park the old snapshot on a
 * bounded retire list. The periodic timer polls rte_rcu_qsbr_check() without
 * blocking and frees a retired snapshot once every worker has reported a
 * quiescent state since. Nothing here waits for a worker without a bound: a
 * core that stops reporting is named stalled and changes are refused until
 * it reports again.
 *
 * A change is built completely (ids, snapshot), then written to the state file,
 * then published: a failure at any step leaves both the running configuration
 * and the file as they were.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>

#include "control/base/clock.h"
#include "control/hot/hotkey.h"
#include "control/base/persist.h"
#include "control/model/state_text.h"
#include "control/runtime/publish.h"
#include "control/build/snapshot_build.h"

#define PUB_WAIT_MAX_NS 50000000ull /* give up waiting for a stuck worker after 50 ms */

void
lb_publish_init(struct lb_publisher *pub, const struct lb_publish_params *p)
{
	pub->qsv = p->qsv;
	pub->snap = p->snap;
	pub->cores = p->cores;
	pub->lcores = p->lcores;
	pub->n_cores = p->n_cores;
	pub->hooks = p->hooks;
	pub->n_hooks = p->n_hooks;
	pub->state_path = p->state_path;
	if (pub->n_hooks > 0)
		pub->hook_fail = calloc(pub->n_hooks, sizeof(*pub->hook_fail));
}

void
lb_publish_reclaim(struct lb_publisher *pub)
{
	unsigned int j = 0;

	for (unsigned int i = 0; i < pub->n_retire; i++) {
		struct lb_retired *r = &pub->retire[i];

		if (rte_rcu_qsbr_check(pub->qsv, r->token, false) == 1)
			lb_snapshot_free(r->snap);
		else
			pub->retire[j++] = *r;
	}
	pub->n_retire = j;
}

/* Whether RCU thread i is online and has not reported since token was taken. */
static bool
behind(const struct lb_publisher *pub, unsigned int i, uint64_t token)
{
	/* Acquire pairs with the worker's release store in rte_rcu_qsbr_quiescent. */
	uint64_t c = __atomic_load_n(&pub->qsv->qsbr_cnt[i].cnt, __ATOMIC_ACQUIRE);

	return c != __RTE_QSBR_CNT_THR_OFFLINE && c < token;
}

unsigned int
lb_publish_stalled(const struct lb_publisher *pub, bool *stalled)
{
	uint64_t now = lb_now_ms();
	const struct lb_retired *old = pub->n_retire > 0 ? &pub->retire[0] : NULL;
	const struct lb_retired *probe = pub->probe.since_ms != 0 ? &pub->probe : NULL;
	unsigned int n = 0;

	if (old != NULL && now - old->since_ms < LB_PUBLISH_STALL_MS)
		old = NULL;
	if (probe != NULL && now - probe->since_ms < LB_PUBLISH_STALL_MS)
		probe = NULL;
	for (unsigned int i = 0; i < pub->n_cores; i++) {
		bool s = (old != NULL && behind(pub, i, old->token)) ||
		         (probe != NULL && behind(pub, i, probe->token));

		if (stalled != NULL)
			stalled[i] = s;
		n += s;
	}
	return n;
}

static unsigned int
lcore_of(const struct lb_publisher *pub, unsigned int i)
{
	return pub->lcores != NULL ? pub->lcores[i] : i;
}

json_t *
lb_publish_stalled_json(const struct lb_publisher *pub)
{
	bool *st = calloc(pub->n_cores > 0 ? pub->n_cores : 1, sizeof(*st));
	json_t *a = json_array();

	if (st == NULL || a == NULL) {
		free(st);
		json_decref(a);
		return NULL;
	}
	lb_publish_stalled(pub, st);
	for (unsigned int i = 0; i < pub->n_cores; i++)
		if (st[i])
			json_array_append_new(a, json_integer(lcore_of(pub, i)));
	free(st);
	return a;
}

/* "lcore 3, lcore 5" into buf: the cores flagged in st, or else those behind token. */
static void
name_cores(const struct lb_publisher *pub, const bool *st, uint64_t token, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < pub->n_cores && off < len; i++) {
		if (st != NULL ? !st[i] : !behind(pub, i, token))
			continue;
		int w = snprintf(buf + off, len - off, "%slcore %u", off > 0 ? ", " : "",
		                 lcore_of(pub, i));

		if (w < 0)
			break;
		off += (size_t)w;
	}
}

int
lb_publish_ready(struct lb_publisher *pub, char *err, size_t errlen)
{
	uint64_t t0 = lb_now_ms();
	char names[256];
	bool *st = NULL;
	unsigned int n;

	lb_publish_reclaim(pub);
	n = lb_publish_stalled(pub, NULL);
	/* A slow core gets a short grace; a stalled one none. */
	while (n == 0 && pub->n_retire == LB_PUBLISH_RETIRE_MAX &&
	       lb_now_ms() - t0 < LB_PUBLISH_FULL_WAIT_MS) {
		rte_pause();
		lb_publish_reclaim(pub);
		n = lb_publish_stalled(pub, NULL);
	}
	if (n == 0 && pub->n_retire < LB_PUBLISH_RETIRE_MAX)
		return 0;
	pub->refused++;
	if (n > 0)
		st = calloc(pub->n_cores, sizeof(*st));
	if (st != NULL)
		lb_publish_stalled(pub, st);
	name_cores(pub, st, pub->n_retire > 0 ? pub->retire[0].token : pub->probe.token, names,
	           sizeof(names));
	free(st);
	snprintf(err, errlen,
	         "worker stalled: %s %s not passed a quiescent state; %u replaced snapshot(s) "
	         "wait for it; changes are refused until it does",
	         names[0] != '\0' ? names : "a core", n > 1 ? "have" : "has", pub->n_retire);
	return -EBUSY;
}

void
lb_publish_tick(struct lb_publisher *pub)
{
	unsigned int n;

	lb_publish_reclaim(pub);
	if (pub->probe.since_ms != 0 && rte_rcu_qsbr_check(pub->qsv, pub->probe.token, false) == 1)
		pub->probe.since_ms = 0;
	if (pub->probe.since_ms == 0 && pub->n_retire == 0 && pub->n_cores > 0) {
		pub->probe.token = rte_rcu_qsbr_start(pub->qsv);
		pub->probe.since_ms = lb_now_ms();
	}
	n = lb_publish_stalled(pub, NULL);
	if (n != pub->n_stalled) {
		json_t *a = lb_publish_stalled_json(pub);
		char *list = a != NULL ? json_dumps(a, JSON_COMPACT) : NULL;

		if (n > 0)
			fprintf(stderr,
			        "spillwayd: worker stalled: lcore(s) %s passed no quiescent state "
			        "for %u ms; configuration changes are refused\n",
			        list != NULL ? list : "?", LB_PUBLISH_STALL_MS);
		else
			fprintf(stderr, "spillwayd: workers report quiescent states again; "
			                "configuration changes are accepted\n");
		free(list);
		json_decref(a);
		pub->n_stalled = n;
	}
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
assign_ids(struct lb_publisher *pub, struct lb_config *next)
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
		int oi = lb_config_find_vip(pub->cfg, v);
		const struct lb_cfg_vip *ov = oi >= 0 ? &pub->cfg->vips[oi] : NULL;

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
			if (++pub->backend_gen[id] == 0)
				pub->backend_gen[id] = 1;
			b->gen = pub->backend_gen[id];
		}
	}
	free(be_used);
	free(sorted);
	return 0;
}

int
lb_publish_persist(struct lb_publisher *pub, const struct lb_config *cfg, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (pub->state_text == NULL)
		pub->state_text = lb_state_text_new();
	if (pub->state_text == NULL ||
	    lb_state_text_encode(pub->state_text, cfg, &text, &len, NULL) != 0) {
		snprintf(err, errlen, "%s: out of memory", pub->state_path);
		return -ENOMEM;
	}
	err[0] = '\0';
	rc = lb_persist_write_text(pub->state_path, text, len, 0600, err, errlen);
	free(text);
	if (rc == LB_PERSIST_UNSYNCED) {
		/* The file holds cfg: applied, but a power loss may bring the old one back. */
		pub->persist_unsynced++;
		fprintf(stderr, "spillwayd: %s (change applied; not yet durable)\n", err);
		rc = 0;
	}
	if (rc != 0 && err[0] == '\0')
		snprintf(err, errlen, "%s: cannot write the state file: %s", pub->state_path,
		         strerror(-rc));
	return rc;
}

/*
 * Wait until every worker runs the snapshot just published, so a reply means
 * "in force everywhere". Workers poll without sleeping, so this takes one loop
 * pass (microseconds); the wait is bounded in case a worker is descheduled.
 */
static void
wait_switch(struct lb_publisher *pub)
{
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc(), dt;
	uint64_t limit = PUB_WAIT_MAX_NS * hz / 1000000000ull;

	for (;;) {
		unsigned int behind = 0;

		for (unsigned int i = 0; i < pub->n_cores; i++)
			if (__atomic_load_n(&pub->cores[i]->snapshot_gen, __ATOMIC_ACQUIRE) <
			    pub->generation)
				behind++;
		dt = rte_rdtsc() - t0;
		if (behind == 0)
			break;
		if (dt > limit) {
			pub->pub_timeouts++;
			return;
		}
		rte_pause();
	}
	pub->pub_ns[pub->pub_count % LB_PUBLISH_SAMPLES] = dt * 1000000000ull / hz;
	lb_publish_observe(pub, pub->pub_ns[pub->pub_count % LB_PUBLISH_SAMPLES]);
	pub->pub_count++;
}

/* Workers switch within one loop pass (microseconds); the wait gives up at 50 ms. */
const uint64_t lb_publish_hist_le_ns[LB_PUBLISH_HIST_N] = {
        1000,   2500,    5000,    10000,   25000,    50000,    100000,   250000,
        500000, 1000000, 2500000, 5000000, 10000000, 25000000, 50000000,
};

void
lb_publish_observe(struct lb_publisher *pub, uint64_t ns)
{
	unsigned int i = 0;

	while (i < LB_PUBLISH_HIST_N && ns > lb_publish_hist_le_ns[i])
		i++;
	pub->pub_hist[i]++;
	pub->pub_sum_ns += ns;
}

static json_t *
histogram_json(const struct lb_publisher *pub)
{
	json_t *le = json_array(), *bk = json_array();
	uint64_t cum = 0;

	for (unsigned int i = 0; i <= LB_PUBLISH_HIST_N; i++) {
		if (i < LB_PUBLISH_HIST_N)
			json_array_append_new(le,
			                      json_real((double)lb_publish_hist_le_ns[i] / 1e9));
		cum += pub->pub_hist[i];
		json_array_append_new(bk, json_integer((json_int_t)cum));
	}
	return json_pack("{s:o, s:o, s:f, s:I}", "le_s", le, "buckets", bk, "sum_s",
	                 (double)pub->pub_sum_ns / 1e9, "count", (json_int_t)cum);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

json_t *
lb_publish_json(const struct lb_publisher *pub)
{
	uint64_t v[LB_PUBLISH_SAMPLES];
	unsigned int n = pub->pub_count < LB_PUBLISH_SAMPLES ? (unsigned int)pub->pub_count
	                                                     : LB_PUBLISH_SAMPLES;
	json_t *o = json_object();

	json_object_set_new(o, "samples", json_integer((json_int_t)pub->pub_count));
	json_object_set_new(o, "timeouts", json_integer((json_int_t)pub->pub_timeouts));
	json_object_set_new(o, "state_unsynced", json_integer((json_int_t)pub->persist_unsynced));
	json_object_set_new(o, "build_us", json_real((double)pub->build_ns / 1000.0));
	json_object_set_new(o, "retired", json_integer(pub->n_retire));
	json_object_set_new(o, "refused", json_integer((json_int_t)pub->refused));
	json_object_set_new(o, "latency_histogram", histogram_json(pub));
	if (n == 0)
		return o;
	json_object_set_new(
	        o, "last_us",
	        json_real((double)pub->pub_ns[(pub->pub_count - 1) % LB_PUBLISH_SAMPLES] / 1000.0));
	memcpy(v, pub->pub_ns, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_u64);
	json_object_set_new(o, "p50_us", json_real((double)v[n / 2] / 1000.0));
	json_object_set_new(o, "p99_us", json_real((double)v[(n * 99) / 100] / 1000.0));
	json_object_set_new(o, "max_us", json_real((double)v[n - 1] / 1000.0));
	return o;
}

/* The hot-key overrides in the form the snapshot builder takes. */
static uint32_t
overrides_for_build(const struct lb_publisher *pub, struct lb_snapshot_override *out)
{
	const struct lb_hot_override *o;
	uint32_t n;

	if (pub->hot == NULL)
		return 0;
	n = lb_hotkey_overrides(pub->hot, &o);
	for (uint32_t i = 0; i < n; i++) {
		out[i].vip_id = o[i].vip_id;
		out[i].key_hash = o[i].key_hash;
		out[i].n_replicas = o[i].n_replicas;
		out[i].replicas = o[i].replicas;
	}
	return n;
}

struct lb_snapshot *
lb_publish_build(struct lb_publisher *pub, const struct lb_config *cfg, char *err, size_t errlen)
{
	struct lb_snapshot_override *ov = NULL;
	struct lb_snapshot *s;
	uint32_t n_ov = 0;
	uint64_t t0 = rte_rdtsc();

	if (pub->hot != NULL) {
		ov = calloc(LB_HOT_MAX_OVERRIDES, sizeof(*ov));
		if (ov == NULL) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		n_ov = overrides_for_build(pub, ov);
	}
	/* Before the workers run (start-up) their cores are idle: build on them too. */
	s = lb_snapshot_build_par(cfg, pub->generation + 1, *pub->snap, ov, n_ov,
	                          pub->live ? 1 : (unsigned int)sysconf(_SC_NPROCESSORS_ONLN), err,
	                          errlen);
	/* A replica the change made unusable is replaced in this very snapshot;
	 * the rebuild shares every table with the first build. */
	if (s != NULL && pub->hot != NULL && lb_hotkey_revalidate(pub->hot, s)) {
		struct lb_snapshot *first = s;

		n_ov = overrides_for_build(pub, ov);
		s = lb_snapshot_build_par(cfg, pub->generation + 1, first, ov, n_ov, 1, err,
		                          errlen);
		lb_snapshot_free(first);
	}
	free(ov);
	pub->build_ns = (rte_rdtsc() - t0) * 1000000000ull / rte_get_tsc_hz();
	return s;
}

/* Run every hook's before (after == false) or after step; failures are logged. */
static void
run_hooks(struct lb_publisher *pub, bool after, const struct lb_snapshot *next,
          const struct lb_snapshot *prev)
{
	char err[256];

	for (unsigned int i = 0; i < pub->n_hooks; i++) {
		const struct lb_publish_hook *h = &pub->hooks[i];
		int (*fn)(void *, const struct lb_snapshot *, const struct lb_snapshot *, char *,
		          size_t) = after ? h->after : h->before;

		if (fn == NULL)
			continue;
		err[0] = '\0';
		if (fn(h->arg, next, prev, err, sizeof(err)) != 0) {
			if (pub->hook_fail != NULL)
				pub->hook_fail[i]++;
			fprintf(stderr, "spillwayd: %s: %s\n", h->name, err);
		}
	}
}

int
lb_publish_snapshot(struct lb_publisher *pub, struct lb_snapshot *s)
{
	struct lb_snapshot *old;
	char err[16];

	/* Only a caller that skipped lb_publish_ready meets a full list here. */
	lb_publish_reclaim(pub);
	if (pub->n_retire == LB_PUBLISH_RETIRE_MAX &&
	    lb_publish_ready(pub, err, sizeof(err)) != 0) {
		lb_snapshot_free(s); /* never published: no reader has it */
		return -EBUSY;
	}
	old = *pub->snap;
	run_hooks(pub, false, s, old);
	/* Release: every store that filled the snapshot happens before the pointer. */
	__atomic_store_n(pub->snap, s, __ATOMIC_RELEASE);
	pub->generation++;
	if (old != NULL) {
		pub->retire[pub->n_retire].snap = old;
		pub->retire[pub->n_retire].token = rte_rcu_qsbr_start(pub->qsv);
		pub->retire[pub->n_retire].since_ms = lb_now_ms();
		pub->n_retire++;
	}
	if (pub->live)
		wait_switch(pub);
	/* old is parked on the retire list: reclaim() frees it no earlier than
	 * the next publication or tick, so the hooks may still read it. */
	run_hooks(pub, true, s, old);
	return 0;
}

int
lb_publish_apply(struct lb_publisher *pub, struct lb_config *cfg, bool save, char *err,
                 size_t errlen)
{
	struct lb_snapshot *s;
	int rc;

	/* Refused before the state file is written: nothing changes. */
	rc = lb_publish_ready(pub, err, errlen);
	if (rc != 0) {
		lb_config_free(cfg);
		return rc;
	}
	/* assign_ids may advance backend generations even if a later step fails:
	 * harmless, a generation is only required never to repeat. */
	rc = assign_ids(pub, cfg);
	if (rc != 0) {
		snprintf(err, errlen, "cannot assign ids: %s", strerror(-rc));
		lb_config_free(cfg);
		return rc;
	}
	/* Health checks take backends out on the same path as an operator. */
	if (pub->lay_health != NULL)
		pub->lay_health(pub->health, cfg);
	s = lb_publish_build(pub, cfg, err, errlen);
	if (s == NULL) {
		lb_config_free(cfg);
		return -ENOMEM;
	}
	if (save && pub->state_path != NULL) {
		rc = lb_publish_persist(pub, cfg, err, errlen);
		if (rc != 0) {
			lb_snapshot_free(s); /* never published: no reader has it */
			lb_config_free(cfg);
			return rc;
		}
	}
	lb_config_free(pub->cfg);
	pub->cfg = cfg;
	/* lb_publish_ready above kept a retire slot free: this publishes. */
	return lb_publish_snapshot(pub, s);
}

json_t *
lb_publish_hooks_json(const struct lb_publisher *pub)
{
	json_t *hooks = json_object();

	for (unsigned int i = 0; i < pub->n_hooks; i++) {
		const struct lb_publish_hook *h = &pub->hooks[i];
		json_t *o = h->stats != NULL ? h->stats(h->arg) : NULL;

		if (o == NULL)
			o = json_object();
		json_object_set_new(
		        o, "failures",
		        json_integer((json_int_t)(pub->hook_fail ? pub->hook_fail[i] : 0)));
		json_object_set_new(hooks, h->name, o);
	}
	return hooks;
}

/* Failures are logged: the hooks retry on their tick. */
void
lb_publish_drain(struct lb_publisher *pub, bool on)
{
	char err[256];

	if (on && !pub->drained)
		pub->drained_ms = lb_now_ms();
	pub->drained = on;
	for (unsigned int i = 0; i < pub->n_hooks; i++) {
		const struct lb_publish_hook *h = &pub->hooks[i];

		if (h->drain == NULL)
			continue;
		err[0] = '\0';
		if (h->drain(h->arg, on, *pub->snap, err, sizeof(err)) != 0) {
			if (pub->hook_fail != NULL)
				pub->hook_fail[i]++;
			fprintf(stderr, "spillwayd: %s: %s: %s (retrying)\n", h->name,
			        on ? "drain" : "undrain", err);
		}
	}
}

void
lb_publish_fini(struct lb_publisher *pub)
{
	for (unsigned int i = 0; i < pub->n_retire; i++)
		lb_snapshot_free(pub->retire[i].snap);
	lb_snapshot_free(*pub->snap);
	*pub->snap = NULL;
	lb_config_free(pub->cfg);
	lb_state_text_free(pub->state_text);
	pub->state_text = NULL;
	free(pub->hook_fail);
}
