/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-key controller: promotes keys whose share of their VIP reaches φ to an
 * override over r = ceil(N p / (c - 1 + p)) replicas chosen along the key's
 * Maglev preference order under the bounded-load cap, re-plans and demotes
 * with hysteresis. docs/hot-keys.md "The controller" has the math and the
 * flapping bound; the choices the header leaves open are written down here.
 *
 * Units. A candidate's share p = count / vip_total is unit-free. Backend loads
 * may be in another unit (bytes, new flows), so the key's traffic is expressed
 * in load units as p times the VIP's summed backend load.
 *
 * Load bookkeeping. Each backend's load is an EWMA of the per-window array.
 * Each override also tracks an EWMA of its key's traffic in load units
 * (key_load), updated with the same alpha, so by linearity a replica's EWMA
 * minus key_load / n_replicas is the EWMA of everything else it carries. When
 * a plan moves the key, the controller moves key_load between the old and the
 * new replicas' EWMAs at once (a predictor step): otherwise the lag of the
 * EWMA would make the old home look overloaded for a few windows and trigger
 * needless re-plans. Measurements correct the estimate from the next window.
 *
 * Parameters. A field left 0 takes its default (threshold 0.01, threshold_low
 * threshold / 2, demote_windows 5, epsilon 0.25, ewma_alpha 0.5), so a
 * zero-initialised struct (or NULL at create) means "defaults".
 *
 * Invariants: every override has 1..LB_HOT_MAX_REPLICAS distinct replicas, all
 * of its VIP (an override with none would read as an empty slot in the
 * snapshot's table), listed in the key's preference order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotkey.h"

#define DEFAULT_THRESHOLD 0.01
#define DEFAULT_DEMOTE_WINDOWS 5
#define DEFAULT_EPSILON 0.25
#define DEFAULT_ALPHA 0.5
#define MAX_EPSILON 1000.0 /* beyond this the cap means nothing; a typo, not a policy */

/* Backend ids are uint16_t with 0xFFFF reserved, so per-id arrays are this long. */
#define N_IDS 65535u

/* Override index: open addressing, 4x the override limit so load <= 1/4. */
#define INDEX_SIZE 4096u

/* Relative slack on the cap so float rounding (1.24999999) is not a violation. */
#define CAP_SLACK 1e-9

/* The fallback ranks projected loads on a grid of this fraction of the average,
 * so equal loads computed along different float paths tie (and then preference
 * order decides), instead of ulp noise choosing a different replica set each
 * window. */
#define LOAD_QUANTUM 1e-6

/* Shrinking r is allowed only to a level that would still hold the cap if the
 * smoothed share grew by this factor: the dead band that keeps r from
 * oscillating when the share wanders around the boundary between two r. */
#define SHRINK_MARGIN 1.25

/* r = ceil(x) but x within this of an integer counts as that integer, so
 * N p / (c - 1 + p) = 40.000000000000007 gives 40, not 41. */
#define CEIL_TOLERANCE 1e-9

_Static_assert(LB_HOT_MAX_OVERRIDES * 4 <= INDEX_SIZE, "override index load must stay <= 1/4");
_Static_assert((INDEX_SIZE & (INDEX_SIZE - 1)) == 0, "override index size must be a power of 2");

enum ev_type {
	EV_PROMOTE = 0,
	EV_DEMOTE,
	EV_REPLAN,
	EV_PIN,
	EV_UNPIN,
	EV_DROP, /* VIP removed or left without usable backends */
};

static const char *const ev_names[] = {"promote", "demote", "replan", "pin", "unpin", "drop"};

struct event {
	uint64_t window;
	uint64_t key_hash;
	double share;
	uint16_t vip_id;
	uint16_t replicas;
	uint8_t type; /* enum ev_type */
};

/* Controller-private state of one override (same position as in ov[]). */
struct ov_state {
	double share_ewma; /* smoothed share: drives r */
	double key_load;   /* EWMA of the key's traffic in load units (see top) */
	uint64_t seen;     /* candidate count this window */
	uint16_t pin_r;    /* replicas an operator asked for; 0 = computed */
	bool fresh;        /* promoted this window: already planned */
};

/* A VIP's usable backends this call: from one scan of its Maglev table. */
struct vip_info {
	uint64_t stamp;  /* valid when == lb_hotkey.stamp */
	uint32_t n;      /* usable backends (N) */
	double sum_ewma; /* their EWMA loads */
	double sum_raw;  /* their loads this window (0 outside a window) */
	double cap;      /* c * sum_ewma / n */
};

struct rank {
	int64_t q;  /* quantised projected load */
	uint32_t j; /* position in the preference list */
};

struct lb_hotkey {
	struct lb_hot_params p;
	uint32_t n_ov;
	struct lb_hot_override ov[LB_HOT_MAX_OVERRIDES];
	struct ov_state st[LB_HOT_MAX_OVERRIDES];
	uint16_t index[INDEX_SIZE]; /* position in ov[] + 1; 0 = empty */

	struct event ev[LB_HOT_MAX_EVENTS];
	uint32_t ev_next; /* ring position of the next event */
	uint32_t ev_n;

	uint64_t promotions, demotions, replans, dropped, table_full;

	/* Per backend id (N_IDS entries). */
	double *load;       /* EWMA of the per-window load */
	uint16_t *load_gen; /* membership generation the EWMA belongs to; 0 = none */
	uint64_t *usable;   /* == stamp: in its VIP's table and active (this call) */
	uint64_t *scanned;  /* == stamp: already met in its VIP's table scan */
	uint64_t *mark;     /* == mark_stamp: carries the key being planned */
	uint64_t mark_stamp;
	uint32_t n_known;     /* ids below this may hold an EWMA */
	uint64_t last_window; /* of the latest window or pin, for unpin's event */

	/* Scratch for planning (N_IDS entries each). */
	uint16_t *pref;
	double *proj;
	uint8_t *taken;
	struct rank *ranks;

	uint64_t stamp; /* bumped on every call that reads a snapshot */
	struct vip_info vi[LB_MAX_VIPS];
	uint16_t vip_pos[LB_MAX_VIPS]; /* position in s->vips + 1 (valid with vip_stamp) */
	uint64_t vip_stamp[LB_MAX_VIPS];
};

/* --- parameters ---------------------------------------------------------- */

static int
params_resolve(const struct lb_hot_params *in, struct lb_hot_params *out)
{
	struct lb_hot_params p = {0};

	if (in != NULL)
		p = *in;
	/* The comparisons are written so that NaN fails them. */
	if (!(p.threshold >= 0 && p.threshold <= 1) || !(p.threshold_low >= 0) ||
	    !(p.epsilon >= 0 && p.epsilon <= MAX_EPSILON) ||
	    !(p.ewma_alpha >= 0 && p.ewma_alpha <= 1))
		return -EINVAL;
	if (p.threshold == 0)
		p.threshold = DEFAULT_THRESHOLD;
	if (p.threshold_low == 0)
		p.threshold_low = p.threshold / 2;
	if (p.threshold_low > p.threshold)
		return -EINVAL;
	if (p.demote_windows == 0)
		p.demote_windows = DEFAULT_DEMOTE_WINDOWS;
	if (p.epsilon == 0)
		p.epsilon = DEFAULT_EPSILON;
	if (p.ewma_alpha == 0)
		p.ewma_alpha = DEFAULT_ALPHA;
	*out = p;
	return 0;
}

struct lb_hotkey *
lb_hotkey_create(const struct lb_hot_params *p)
{
	struct lb_hot_params rp;
	struct lb_hotkey *h;

	if (params_resolve(p, &rp) != 0) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	h->p = rp;
	h->load = calloc(N_IDS, sizeof(*h->load));
	h->load_gen = calloc(N_IDS, sizeof(*h->load_gen));
	h->usable = calloc(N_IDS, sizeof(*h->usable));
	h->scanned = calloc(N_IDS, sizeof(*h->scanned));
	h->mark = calloc(N_IDS, sizeof(*h->mark));
	h->pref = calloc(N_IDS, sizeof(*h->pref));
	h->proj = calloc(N_IDS, sizeof(*h->proj));
	h->taken = calloc(N_IDS, sizeof(*h->taken));
	h->ranks = calloc(N_IDS, sizeof(*h->ranks));
	if (h->load == NULL || h->load_gen == NULL || h->usable == NULL || h->scanned == NULL ||
	    h->mark == NULL || h->pref == NULL || h->proj == NULL || h->taken == NULL ||
	    h->ranks == NULL) {
		lb_hotkey_free(h);
		errno = ENOMEM;
		return NULL;
	}
	return h;
}

void
lb_hotkey_free(struct lb_hotkey *h)
{
	if (h == NULL)
		return;
	free(h->load);
	free(h->load_gen);
	free(h->usable);
	free(h->scanned);
	free(h->mark);
	free(h->pref);
	free(h->proj);
	free(h->taken);
	free(h->ranks);
	free(h);
}

int
lb_hotkey_set_params(struct lb_hotkey *h, const struct lb_hot_params *p)
{
	struct lb_hot_params rp;

	if (p == NULL || params_resolve(p, &rp) != 0)
		return -EINVAL;
	h->p = rp;
	return 0;
}

void
lb_hotkey_get_params(const struct lb_hotkey *h, struct lb_hot_params *p)
{
	*p = h->p;
}

/* --- pure helpers -------------------------------------------------------- */

uint32_t
lb_hotkey_replicas(uint32_t n_backends, double share, double c)
{
	uint32_t max = n_backends < LB_HOT_MAX_REPLICAS ? n_backends : LB_HOT_MAX_REPLICAS;
	double den, x;
	uint32_t r;

	if (n_backends == 0)
		return 0; /* nothing to spread over */
	if (!(share > 0))
		return 1;
	if (share > 1)
		share = 1;
	den = c - 1 + share;
	if (!(den > 0))
		return max; /* c < 1 - p: no finite r holds the cap */
	x = (double)n_backends * share / den;
	if (!(x < (double)max))
		return max;
	r = (uint32_t)x;
	if ((double)r < x - CEIL_TOLERANCE)
		r++;
	return r < 1 ? 1 : r;
}

uint16_t
lb_hotkey_preference(const struct lb_snapshot *s, const struct lb_vip *v, uint64_t key_hash,
                     uint16_t *out, uint16_t max)
{
	uint64_t seen[(N_IDS + 64) / 64] = {0}; /* 8 KiB bitmap of ids already listed */
	uint32_t m = s->table_size, want = max, i, k;
	uint16_t n = 0;

	if (v == NULL || v->table == NULL || m == 0 || max == 0 || v->n_active == 0)
		return 0;
	if (v->n_active < want)
		want = v->n_active;
	i = lb_fastmod((uint32_t)key_hash, s->table_fastmod, m);
	/* At most one lap: every backend in the table shows up within M slots. In
	 * practice the scan stops after about N ln N slots (coupon collector). */
	for (k = 0; k < m; k++) {
		uint16_t id = v->table[i];

		if (++i == m)
			i = 0;
		if (id == LB_BACKEND_NONE || (seen[id >> 6] >> (id & 63)) & 1)
			continue;
		seen[id >> 6] |= 1ULL << (id & 63);
		out[n++] = id;
		if (n == want)
			break;
	}
	return n;
}

/* --- events and the override index ---------------------------------------- */

static void
event_add(struct lb_hotkey *h, enum ev_type type, uint64_t window, const struct lb_hot_override *o)
{
	struct event *e = &h->ev[h->ev_next];

	e->window = window;
	e->key_hash = o->key_hash;
	e->share = o->share;
	e->vip_id = o->vip_id;
	e->replicas = o->n_replicas;
	e->type = (uint8_t)type;
	h->ev_next = (h->ev_next + 1) % LB_HOT_MAX_EVENTS;
	if (h->ev_n < LB_HOT_MAX_EVENTS)
		h->ev_n++;
}

static int
index_find(const struct lb_hotkey *h, uint16_t vip_id, uint64_t key_hash)
{
	uint32_t i = lb_override_slot_of(key_hash, vip_id, INDEX_SIZE - 1);

	for (;; i = (i + 1) & (INDEX_SIZE - 1)) {
		uint16_t e = h->index[i];

		if (e == 0)
			return -1;
		if (h->ov[e - 1].key_hash == key_hash && h->ov[e - 1].vip_id == vip_id)
			return e - 1;
	}
}

static void
index_insert(struct lb_hotkey *h, uint32_t pos)
{
	uint32_t i = lb_override_slot_of(h->ov[pos].key_hash, h->ov[pos].vip_id, INDEX_SIZE - 1);

	while (h->index[i] != 0)
		i = (i + 1) & (INDEX_SIZE - 1);
	h->index[i] = (uint16_t)(pos + 1);
}

static void
index_rebuild(struct lb_hotkey *h)
{
	memset(h->index, 0, sizeof(h->index));
	for (uint32_t i = 0; i < h->n_ov; i++)
		index_insert(h, i);
}

/* --- the snapshot as this call sees it ------------------------------------ */

/* Map VIP ids to positions in s->vips for this call. */
static void
begin_call(struct lb_hotkey *h, const struct lb_snapshot *s)
{
	h->stamp++;
	for (uint32_t i = 0; i < s->n_vips; i++) {
		uint16_t id = s->vips[i].id;

		if (id < LB_MAX_VIPS) {
			h->vip_pos[id] = (uint16_t)(i + 1);
			h->vip_stamp[id] = h->stamp;
		}
	}
}

static const struct lb_vip *
vip_by_id(const struct lb_hotkey *h, const struct lb_snapshot *s, uint16_t id)
{
	if (id >= LB_MAX_VIPS || h->vip_stamp[id] != h->stamp)
		return NULL;
	return &s->vips[h->vip_pos[id] - 1];
}

static bool
registry_active(const struct lb_snapshot *s, const struct lb_vip *v, uint16_t id)
{
	const struct lb_backend *b;

	if (id >= s->n_backends)
		return false;
	b = &s->backends[id];
	return b->gen != 0 && b->vip_id == v->id && b->state == LB_BACKEND_ACTIVE && b->weight > 0;
}

/*
 * The VIP's usable backends (in its table and active with weight > 0), their
 * load sums and the cap: one scan of the table per VIP per call, O(M), cached
 * by stamp so every candidate and override of the VIP shares it.
 */
static const struct vip_info *
vip_info(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
         const uint64_t *raw)
{
	struct vip_info *vi = &h->vi[v->id];
	uint32_t distinct = 0;

	if (vi->stamp == h->stamp)
		return vi;
	memset(vi, 0, sizeof(*vi));
	vi->stamp = h->stamp;
	for (uint32_t i = 0; i < s->table_size && distinct < v->n_active; i++) {
		uint16_t id = v->table[i];

		/* One id is one membership, in one VIP's table only, so a per-id
		 * stamp tells "already counted" for every VIP of the call at once. */
		if (id == LB_BACKEND_NONE || h->scanned[id] == h->stamp)
			continue;
		h->scanned[id] = h->stamp;
		distinct++;
		if (!registry_active(s, v, id))
			continue;
		h->usable[id] = h->stamp;
		vi->n++;
		vi->sum_ewma += h->load[id];
		if (raw != NULL)
			vi->sum_raw += (double)raw[id];
	}
	if (vi->n > 0)
		vi->cap = (1 + h->p.epsilon) * vi->sum_ewma / vi->n;
	return vi;
}

static bool
is_usable(const struct lb_hotkey *h, uint16_t id)
{
	return id < N_IDS && h->usable[id] == h->stamp;
}

/* --- planning ------------------------------------------------------------- */

static int
rank_cmp(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;

	if (x->q != y->q)
		return x->q < y->q ? -1 : 1;
	return x->j < y->j ? -1 : x->j > y->j;
}

/*
 * Choose r replicas for a key. cur/n_cur are the backends that carry the key
 * now (its replicas, or its Maglev home before promotion) with part load units
 * each. A backend qualifies if its load without the key plus k_plan / r stays
 * under the cap; qualifying backends are taken in preference order. If fewer
 * than r qualify, the rest are the least loaded (projected) of the remaining
 * ones, ties in preference order: the cap cannot be held, so spread the excess
 * where it hurts least. Output in preference order. @return the count (>= 1
 * when the VIP has a usable backend).
 */
static uint16_t
plan(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
     const struct vip_info *vi, uint64_t key_hash, uint32_t r, double k_plan, const uint16_t *cur,
     uint16_t n_cur, double part, uint16_t *out)
{
	double per, cap = vi->cap * (1 + CAP_SLACK), quantum;
	uint32_t np, n = 0, n_rest = 0;
	uint16_t n_out = 0;

	if (r > vi->n)
		r = vi->n;
	if (r > LB_HOT_MAX_REPLICAS)
		r = LB_HOT_MAX_REPLICAS;
	if (r == 0)
		return 0;
	per = k_plan / r;
	h->mark_stamp++;
	for (uint16_t i = 0; i < n_cur; i++)
		if (cur[i] < N_IDS)
			h->mark[cur[i]] = h->mark_stamp;
	np = lb_hotkey_preference(s, v, key_hash, h->pref, (uint16_t)N_IDS);
	for (uint32_t j = 0; j < np; j++) {
		uint16_t b = h->pref[j];
		double base;

		h->taken[j] = 0;
		if (!is_usable(h, b)) {
			h->proj[j] = -1;
			continue;
		}
		base = h->load[b] - (h->mark[b] == h->mark_stamp ? part : 0);
		h->proj[j] = (base > 0 ? base : 0) + per;
		if (n < r && h->proj[j] <= cap) {
			h->taken[j] = 1;
			n++;
		}
	}
	if (n < r) {
		quantum = vi->sum_ewma / vi->n * LOAD_QUANTUM;
		if (!(quantum > 0))
			quantum = 1;
		for (uint32_t j = 0; j < np; j++)
			if (!h->taken[j] && h->proj[j] >= 0) {
				h->ranks[n_rest].q = (int64_t)(h->proj[j] / quantum + 0.5);
				h->ranks[n_rest].j = j;
				n_rest++;
			}
		qsort(h->ranks, n_rest, sizeof(h->ranks[0]), rank_cmp);
		for (uint32_t i = 0; i < n_rest && n < r; i++, n++)
			h->taken[h->ranks[i].j] = 1;
	}
	for (uint32_t j = 0; j < np; j++)
		if (h->taken[j])
			out[n_out++] = h->pref[j];
	return n_out;
}

/* Move the key's estimated traffic from the backends that carried it to the new ones. */
static void
shift_load(struct lb_hotkey *h, const uint16_t *from, uint16_t n_from, double part_from,
           const uint16_t *to, uint16_t n_to, double key_load)
{
	for (uint16_t i = 0; i < n_from; i++)
		if (from[i] < N_IDS) {
			h->load[from[i]] -= part_from;
			if (h->load[from[i]] < 0)
				h->load[from[i]] = 0;
		}
	for (uint16_t i = 0; n_to > 0 && i < n_to; i++)
		if (to[i] < N_IDS)
			h->load[to[i]] += key_load / n_to;
}

static bool
same_list(const uint16_t *a, uint16_t na, const uint16_t *b, uint16_t nb)
{
	return na == nb && memcmp(a, b, na * sizeof(*a)) == 0;
}

/* Replace an override's replicas (and the load estimate with them). */
static void
apply(struct lb_hotkey *h, uint32_t pos, const uint16_t *list, uint16_t n)
{
	struct lb_hot_override *o = &h->ov[pos];
	double ks = h->st[pos].key_load;

	shift_load(h, o->replicas, o->n_replicas, o->n_replicas ? ks / o->n_replicas : 0, list, n,
	           ks);
	memcpy(o->replicas, list, n * sizeof(*list));
	o->n_replicas = n;
}

/* Remove override pos: its traffic goes back to its Maglev home. */
static void
remove_at(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v, uint32_t pos)
{
	struct lb_hot_override *o = &h->ov[pos];

	if (v != NULL) {
		uint16_t home = lb_maglev_pick(s, v, o->key_hash);

		shift_load(h, o->replicas, o->n_replicas, h->st[pos].key_load / o->n_replicas,
		           &home, home == LB_BACKEND_NONE ? 0 : 1, h->st[pos].key_load);
	}
	o->n_replicas = 0; /* compacted away at the end of the call */
}

static void
compact(struct lb_hotkey *h)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < h->n_ov; i++) {
		if (h->ov[i].n_replicas == 0)
			continue;
		if (i != j) {
			h->ov[j] = h->ov[i];
			h->st[j] = h->st[i];
		}
		j++;
	}
	if (j != h->n_ov) {
		h->n_ov = j;
		index_rebuild(h);
	}
}

static double
dmax(double a, double b)
{
	return a > b ? a : b;
}

/*
 * The replica count an existing override should have. Growth is immediate
 * (the cap is at stake); shrinking waits for a dead band and never happens
 * while the key counts down to demotion.
 */
static uint32_t
target_r(const struct lb_hotkey *h, uint32_t pos, uint32_t n_usable, bool over_cap)
{
	const struct lb_hot_override *o = &h->ov[pos];
	const struct ov_state *st = &h->st[pos];
	double c = 1 + h->p.epsilon;
	uint32_t maxr = n_usable < LB_HOT_MAX_REPLICAS ? n_usable : LB_HOT_MAX_REPLICAS;
	uint32_t cur = o->n_replicas < maxr ? o->n_replicas : maxr;
	uint32_t up, down;

	if (o->pinned && st->pin_r != 0)
		return st->pin_r < maxr ? st->pin_r : maxr;
	up = lb_hotkey_replicas(n_usable, st->share_ewma, c);
	if (over_cap)
		up = lb_hotkey_replicas(n_usable, dmax(o->share, st->share_ewma), c);
	if (up > cur)
		return up;
	/* Shrink only if both this window's and the smoothed share, with the
	 * margin, fit in fewer replicas: one quiet window alone never shrinks. */
	if (o->low_windows == 0) {
		down = lb_hotkey_replicas(n_usable, dmax(o->share, st->share_ewma) * SHRINK_MARGIN,
		                          c);
		if (down < cur)
			return down;
	}
	return cur;
}

/* Re-plan override pos if a replica is unusable or over the cap, or r must change. */
static bool
check_override(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
               const struct vip_info *vi, uint32_t pos, uint64_t window)
{
	struct lb_hot_override *o = &h->ov[pos];
	const struct ov_state *st = &h->st[pos];
	uint16_t list[LB_HOT_MAX_REPLICAS];
	bool broken = false, over = false;
	uint32_t r;
	uint16_t n;

	for (uint16_t i = 0; i < o->n_replicas; i++) {
		uint16_t b = o->replicas[i];

		if (!is_usable(h, b))
			broken = true;
		else if (h->load[b] > vi->cap * (1 + CAP_SLACK))
			over = true;
	}
	r = target_r(h, pos, vi->n, over);
	if (!broken && !over && r == o->n_replicas)
		return false;
	n = plan(h, s, v, vi, o->key_hash, r, dmax(o->share, st->share_ewma) * vi->sum_ewma,
	         o->replicas, o->n_replicas, st->key_load / o->n_replicas, list);
	if (n == 0 || same_list(list, n, o->replicas, o->n_replicas))
		return false;
	apply(h, pos, list, n);
	h->replans++;
	event_add(h, EV_REPLAN, window, o);
	return true;
}

/* A new override for (v, key) planned with share p; -ENOSPC when full. */
static int
create(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
       const struct vip_info *vi, uint64_t key_hash, const struct lb_flow_key *key, double p,
       uint32_t r, uint64_t window)
{
	uint16_t list[LB_HOT_MAX_REPLICAS], home;
	struct lb_hot_override *o;
	struct ov_state *st;
	uint32_t pos;
	uint16_t n;

	if (h->n_ov >= LB_HOT_MAX_OVERRIDES)
		return -ENOSPC;
	pos = h->n_ov;
	o = &h->ov[pos];
	st = &h->st[pos];
	memset(o, 0, sizeof(*o));
	memset(st, 0, sizeof(*st));
	o->vip_id = v->id;
	o->key_hash = key_hash;
	if (key != NULL)
		o->key = *key;
	o->share = p;
	o->since_window = window;
	st->share_ewma = p;
	/* What the home's EWMA holds of this key, as far as the share tells. */
	st->key_load = p * vi->sum_ewma;
	st->fresh = true;
	home = lb_maglev_pick(s, v, key_hash);
	n = plan(h, s, v, vi, key_hash, r, p * vi->sum_ewma, &home, home == LB_BACKEND_NONE ? 0 : 1,
	         st->key_load, list);
	if (n == 0)
		return -ENOENT;
	shift_load(h, &home, home == LB_BACKEND_NONE ? 0 : 1, st->key_load, list, n, st->key_load);
	memcpy(o->replicas, list, n * sizeof(*list));
	o->n_replicas = n;
	h->n_ov++;
	index_insert(h, pos);
	return 0;
}

/* --- the window ----------------------------------------------------------- */

static void
update_loads(struct lb_hotkey *h, const struct lb_snapshot *s, const uint64_t *load)
{
	double a = h->p.ewma_alpha;
	uint32_t n = s->n_backends < N_IDS ? s->n_backends : N_IDS;

	for (uint32_t id = 0; id < n; id++) {
		uint16_t gen = s->backends[id].gen;
		double x = load != NULL ? (double)load[id] : 0;

		if (gen == 0)
			h->load[id] = 0;
		else if (h->load_gen[id] != gen)
			h->load[id] = x; /* a new membership starts from its first window */
		else
			h->load[id] = a * x + (1 - a) * h->load[id];
		h->load_gen[id] = gen;
	}
	/* Ids beyond the registry: forgotten, so a later reuse starts fresh. */
	for (uint32_t id = n; id < h->n_known; id++) {
		h->load[id] = 0;
		h->load_gen[id] = 0;
	}
	h->n_known = n;
}

bool
lb_hotkey_window(struct lb_hotkey *h, const struct lb_snapshot *s, const uint64_t *load,
                 const uint64_t *vip_total, const struct lb_hot_candidate *c, uint32_t n_c,
                 uint64_t window)
{
	const struct lb_hot_params *p = &h->p;
	bool changed = false;

	begin_call(h, s);
	h->last_window = window;
	update_loads(h, s, load);
	for (uint32_t i = 0; i < h->n_ov; i++) {
		h->st[i].seen = 0;
		h->st[i].fresh = false;
	}

	/* Candidates: feed existing overrides, promote new hot keys. */
	for (uint32_t i = 0; i < n_c; i++) {
		const struct lb_vip *v = vip_by_id(h, s, c[i].vip_id);
		const struct vip_info *vi;
		uint64_t total;
		double share;
		int pos;

		if (v == NULL || vip_total == NULL || (total = vip_total[v->id]) == 0)
			continue;
		pos = index_find(h, v->id, c[i].key_hash);
		if (pos >= 0) {
			h->st[pos].seen += c[i].count;
			continue;
		}
		share = (double)c[i].count / (double)total;
		if (share > 1)
			share = 1;
		if (share < p->threshold)
			continue;
		vi = vip_info(h, s, v, load);
		if (vi->n < 2)
			continue; /* one backend: nothing to spread over */
		/* r = 1: N·p <= c − 1 + p, so the key's home stays under the cap with
		 * the key on it; an override would change nothing. */
		if (lb_hotkey_replicas(vi->n, share, 1 + p->epsilon) < 2)
			continue;
		if (create(h, s, v, vi, c[i].key_hash, &c[i].key, share,
		           lb_hotkey_replicas(vi->n, share, 1 + p->epsilon), window) == -ENOSPC) {
			h->table_full++;
			continue;
		}
		h->promotions++;
		event_add(h, EV_PROMOTE, window, &h->ov[h->n_ov - 1]);
		changed = true;
	}

	/* Existing overrides: share, demotion, re-planning. */
	for (uint32_t i = 0; i < h->n_ov; i++) {
		struct lb_hot_override *o = &h->ov[i];
		struct ov_state *st = &h->st[i];
		const struct lb_vip *v;
		const struct vip_info *vi;
		uint64_t total;
		double share;

		if (st->fresh)
			continue;
		v = vip_by_id(h, s, o->vip_id);
		if (v == NULL) {
			event_add(h, EV_DROP, window, o);
			h->dropped++;
			remove_at(h, s, NULL, i);
			changed = true;
			continue;
		}
		vi = vip_info(h, s, v, load);
		total = vip_total != NULL ? vip_total[v->id] : 0;
		share = total ? (double)st->seen / (double)total : 0;
		if (share > 1)
			share = 1;
		o->share = share;
		st->share_ewma = p->ewma_alpha * share + (1 - p->ewma_alpha) * st->share_ewma;
		st->key_load =
		        p->ewma_alpha * share * vi->sum_raw + (1 - p->ewma_alpha) * st->key_load;
		o->low_windows = share < p->threshold_low ? o->low_windows + 1 : 0;
		if (!o->pinned && o->low_windows >= p->demote_windows) {
			event_add(h, EV_DEMOTE, window, o);
			h->demotions++;
			remove_at(h, s, v, i);
			changed = true;
			continue;
		}
		if (vi->n == 0) {
			event_add(h, EV_DROP, window, o);
			h->dropped++;
			remove_at(h, s, v, i);
			changed = true;
			continue;
		}
		if (check_override(h, s, v, vi, i, window))
			changed = true;
	}
	compact(h);
	return changed;
}

/* --- operators ------------------------------------------------------------ */

uint32_t
lb_hotkey_overrides(const struct lb_hotkey *h, const struct lb_hot_override **out)
{
	*out = h->ov;
	return h->n_ov;
}

int
lb_hotkey_pin(struct lb_hotkey *h, const struct lb_snapshot *s, uint16_t vip_id, uint64_t key_hash,
              const struct lb_flow_key *key, uint16_t r, uint64_t window)
{
	const struct lb_vip *v;
	const struct vip_info *vi;
	int pos, rc;

	begin_call(h, s);
	h->last_window = window;
	v = vip_by_id(h, s, vip_id);
	if (v == NULL)
		return -ENOENT;
	vi = vip_info(h, s, v, NULL);
	if (vi->n == 0)
		return -ENOENT; /* no usable backend to pin to */
	pos = index_find(h, vip_id, key_hash);
	if (pos < 0) {
		/* No measured share yet: r = 0 asks for the computed count, which
		 * is then 1 until windows measure the key. */
		uint32_t want = r ? r : lb_hotkey_replicas(vi->n, 0, 1 + h->p.epsilon);

		rc = create(h, s, v, vi, key_hash, key, 0, want, window);
		if (rc != 0)
			return rc;
		pos = (int)h->n_ov - 1;
		h->st[pos].fresh = false;
	}
	h->ov[pos].pinned = true;
	h->st[pos].pin_r = r;
	if (key != NULL)
		h->ov[pos].key = *key;
	/* An operator's r applies at once (no hysteresis); r = 0 re-plans only
	 * if a replica is unusable or over the cap. */
	check_override(h, s, v, vi, (uint32_t)pos, window);
	event_add(h, EV_PIN, window, &h->ov[pos]);
	return 0;
}

int
lb_hotkey_unpin(struct lb_hotkey *h, uint16_t vip_id, uint64_t key_hash)
{
	int pos = index_find(h, vip_id, key_hash);

	if (pos < 0)
		return -ENOENT;
	h->ov[pos].pinned = false;
	h->ov[pos].low_windows = 0;
	h->st[pos].pin_r = 0;
	event_add(h, EV_UNPIN, h->last_window, &h->ov[pos]);
	return 0;
}

/* --- JSON ----------------------------------------------------------------- */

json_t *
lb_hotkey_events_json(const struct lb_hotkey *h)
{
	json_t *arr = json_array();
	uint32_t first = (h->ev_next + LB_HOT_MAX_EVENTS - h->ev_n) % LB_HOT_MAX_EVENTS;

	if (arr == NULL)
		return NULL;
	for (uint32_t k = 0; k < h->ev_n; k++) {
		const struct event *e = &h->ev[(first + k) % LB_HOT_MAX_EVENTS];
		char hash[24];

		/* As a hex string: JSON numbers above 2^53 do not survive most parsers. */
		snprintf(hash, sizeof(hash), "0x%016" PRIx64, e->key_hash);
		if (json_array_append_new(
		            arr, json_pack("{s:I, s:s, s:i, s:s, s:f, s:i}", "window",
		                           (json_int_t)e->window, "event", ev_names[e->type],
		                           "vip_id", (int)e->vip_id, "key_hash", hash, "share",
		                           e->share, "replicas", (int)e->replicas)) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

json_t *
lb_hotkey_counters_json(const struct lb_hotkey *h)
{
	uint32_t pinned = 0;

	for (uint32_t i = 0; i < h->n_ov; i++)
		pinned += h->ov[i].pinned;
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "promotions",
	                 (json_int_t)h->promotions, "demotions", (json_int_t)h->demotions,
	                 "replans", (json_int_t)h->replans, "dropped", (json_int_t)h->dropped,
	                 "table_full", (json_int_t)h->table_full, "active", (json_int_t)h->n_ov,
	                 "pinned", (json_int_t)pinned);
}
