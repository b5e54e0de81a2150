/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key controller's planning maths: the replica count
 * r = ceil(N p / (c - 1 + p)), a key's Maglev preference order, the usable
 * backends and the cap of a VIP, the choice of replicas under that cap, and
 * the bookkeeping of backend loads. docs/hot-keys.md "The controller" has the math.
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
 */
#include <stdlib.h>
#include <string.h>

#include "hot_plan.h"

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

/* --- replica count and preference order ----------------------------------- */

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
	uint64_t seen[(LB_HOT_N_IDS + 64) / 64] = {0}; /* 8 KiB bitmap of ids already listed */
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

/* --- the usable backends and the cap -------------------------------------- */

static bool
registry_active(const struct lb_snapshot *s, const struct lb_vip *v, uint16_t id)
{
	const struct lb_backend *b;

	if (id >= s->n_backends)
		return false;
	b = &s->backends[id];
	return b->gen != 0 && b->vip_id == v->id && b->state == LB_BACKEND_ACTIVE && b->weight > 0;
}

const struct lb_hot_vip_info *
lb_hot_plan_vip_info(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
                     const uint64_t *raw)
{
	struct lb_hot_vip_info *vi = &h->vi[v->id];
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

bool
lb_hot_plan_usable(const struct lb_hotkey *h, uint16_t id)
{
	return id < LB_HOT_N_IDS && h->usable[id] == h->stamp;
}

/* --- planning ------------------------------------------------------------- */

static int
rank_cmp(const void *a, const void *b)
{
	const struct lb_hot_rank *x = a, *y = b;

	if (x->q != y->q)
		return x->q < y->q ? -1 : 1;
	return x->j < y->j ? -1 : x->j > y->j;
}

uint16_t
lb_hot_plan_choose(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
                   const struct lb_hot_vip_info *vi, uint64_t key_hash, uint32_t r, double k_plan,
                   const uint16_t *cur, uint16_t n_cur, double part, uint16_t *out)
{
	double per, cap = vi->cap * (1 + LB_HOT_CAP_SLACK), quantum;
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
		if (cur[i] < LB_HOT_N_IDS)
			h->mark[cur[i]] = h->mark_stamp;
	np = lb_hotkey_preference(s, v, key_hash, h->pref, (uint16_t)LB_HOT_N_IDS);
	for (uint32_t j = 0; j < np; j++) {
		uint16_t b = h->pref[j];
		double base;

		h->taken[j] = 0;
		if (!lb_hot_plan_usable(h, b)) {
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

uint32_t
lb_hot_plan_target_r(const struct lb_hotkey *h, uint32_t pos, uint32_t n_usable, bool over_cap)
{
	const struct lb_hot_override *o = &h->ov[pos];
	const struct lb_hot_ov_state *st = &h->st[pos];
	double c = 1 + h->p.epsilon;
	uint32_t maxr = n_usable < LB_HOT_MAX_REPLICAS ? n_usable : LB_HOT_MAX_REPLICAS;
	uint32_t cur = o->n_replicas < maxr ? o->n_replicas : maxr;
	uint32_t up, down;

	if (o->pinned && st->pin_r != 0)
		return st->pin_r < maxr ? st->pin_r : maxr;
	up = lb_hotkey_replicas(n_usable, st->share_ewma, c);
	if (over_cap)
		up = lb_hotkey_replicas(n_usable, lb_hot_dmax(o->share, st->share_ewma), c);
	if (up > cur)
		return up;
	/* Shrink only if both this window's and the smoothed share, with the
	 * margin, fit in fewer replicas: one quiet window alone never shrinks. */
	if (o->low_windows == 0) {
		down = lb_hotkey_replicas(n_usable,
		                          lb_hot_dmax(o->share, st->share_ewma) * SHRINK_MARGIN, c);
		if (down < cur)
			return down;
	}
	return cur;
}

/* --- loads ---------------------------------------------------------------- */

void
lb_hot_plan_shift_load(struct lb_hotkey *h, const uint16_t *from, uint16_t n_from, double part_from,
                       const uint16_t *to, uint16_t n_to, double key_load)
{
	for (uint16_t i = 0; i < n_from; i++)
		if (from[i] < LB_HOT_N_IDS) {
			h->load[from[i]] -= part_from;
			if (h->load[from[i]] < 0)
				h->load[from[i]] = 0;
		}
	for (uint16_t i = 0; n_to > 0 && i < n_to; i++)
		if (to[i] < LB_HOT_N_IDS)
			h->load[to[i]] += key_load / n_to;
}

void
lb_hot_plan_update_loads(struct lb_hotkey *h, const struct lb_snapshot *s, const uint64_t *load)
{
	double a = h->p.ewma_alpha;
	uint32_t n = s->n_backends < LB_HOT_N_IDS ? s->n_backends : LB_HOT_N_IDS;

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
