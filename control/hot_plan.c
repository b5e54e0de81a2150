/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key controller's planning maths: the replica count
 * r = ceil(N p / (c - 1 + p)) and its ladder, a key's Maglev preference order
 * and its rendezvous order, the usable backends and the cap of a VIP, the
 * replica list laid along the rendezvous order under that cap (loads within
 * their noise of fair taken as fair, so instances agree), and the bookkeeping
 * of backend loads. docs/hot-keys.md "The controller" has the math.
 *
 * Units. A candidate's share p = count / vip_total is unit-free. Backend loads
 * may be in another unit (bytes, new flows), so the key's traffic is expressed
 * in load units as p times the VIP's summed backend load.
 *
 * Load bookkeeping. Each backend's load is an EWMA of the per-window array.
 * Each override also tracks an EWMA of its key's traffic in load units
 * (key_load), updated with the same alpha, so by linearity a replica's EWMA
 * minus its weight's part of key_load (w_i / W over the usable replicas, as
 * the data path spreads it) is the EWMA of everything else it carries. When
 * a plan moves the key, the controller moves key_load between the old and the
 * new replicas' EWMAs at once (a predictor step): otherwise the lag of the
 * EWMA would make the old home look overloaded for a few windows and trigger
 * needless re-plans. Measurements correct the estimate from the next window.
 */
#include <string.h>

#include "hot_plan.h"

/* The planner's fallback ranks loads on a grid of this fraction of the
 * average, so equal loads computed along different float paths tie (and then
 * the key's order decides). */
#define LOAD_QUANTUM 1e-6

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
registry_usable(const struct lb_snapshot *s, uint16_t id)
{
	const struct lb_backend *b = &s->backends[id];

	return b->gen != 0 && b->state == LB_BACKEND_ACTIVE && b->weight > 0;
}

static bool
registry_active(const struct lb_snapshot *s, const struct lb_vip *v, uint16_t id)
{
	return id < s->n_backends && s->backends[id].vip_id == v->id && registry_usable(s, id);
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
		vi->sum_w += s->backends[id].weight;
		vi->sum_ewma += h->load[id];
		if (raw != NULL)
			vi->sum_raw += (double)raw[id];
	}
	if (vi->n > 0) {
		vi->cap = (1 + h->p.epsilon) * vi->sum_ewma / vi->n;
		vi->unit = vi->sum_ewma / vi->sum_w;
	}
	return vi;
}

bool
lb_hot_plan_usable(const struct lb_hotkey *h, uint16_t id)
{
	return id < LB_HOT_N_IDS && h->usable[id] == h->stamp;
}

/* --- hosts ---------------------------------------------------------------- */

static uint32_t
host_slot_of(const struct lb_backend *b)
{
	uint64_t x = (uint64_t)b->af * 0x9E3779B97F4A7C15ULL;

	for (int i = 0; i < 16; i += 8) {
		uint64_t w;

		memcpy(&w, (const uint8_t *)&b->addr + i, 8);
		x = (x ^ w) * 0xff51afd7ed558ccdULL;
		x ^= x >> 29;
	}
	return (uint32_t)(x >> 40) & (LB_HOT_HOST_SLOTS - 1);
}

static bool
same_host(const struct lb_backend *a, const struct lb_backend *b)
{
	return a->af == b->af && memcmp(&a->addr, &b->addr, sizeof(a->addr)) == 0;
}

/* The sampling floor of a load x: the variance of one window's count, about
 * Poisson (the count), in load units (times units per packet). */
static double
window_floor(const struct lb_hotkey *h, const struct lb_backend *b, double x)
{
	double u = b->vip_id < LB_MAX_VIPS && h->vip_upp[b->vip_id] > 0 ? h->vip_upp[b->vip_id] : 1;

	return (x > 1 ? x : 1) * u;
}

void
lb_hot_plan_hosts(struct lb_hotkey *h, const struct lb_snapshot *s)
{
	uint32_t n = s->n_backends < LB_HOT_N_IDS ? s->n_backends : LB_HOT_N_IDS;

	memset(h->vip_sum, 0, sizeof(h->vip_sum));
	memset(h->vip_w, 0, sizeof(h->vip_w));
	for (uint32_t id = 0; id < n; id++) {
		const struct lb_backend *b = &s->backends[id];

		if (!registry_usable(s, (uint16_t)id) || b->vip_id >= LB_MAX_VIPS)
			continue;
		h->vip_sum[b->vip_id] += h->load[id];
		h->vip_w[b->vip_id] += b->weight;
	}
	for (uint32_t id = 0; id < n; id++) {
		const struct lb_backend *b = &s->backends[id];
		uint32_t i;
		uint16_t rep;

		h->host[id] = (uint16_t)id;
		if (b->gen == 0) {
			h->host_load[id] = 0;
			h->host_fair[id] = 0;
			h->host_var[id] = 0;
			h->host_floor[id] = 0;
			continue;
		}
		for (i = host_slot_of(b);; i = (i + 1) & (LB_HOT_HOST_SLOTS - 1)) {
			if (h->host_stamp[i] != h->stamp) {
				h->host_stamp[i] = h->stamp;
				h->host_index[i] = id + 1;
				rep = (uint16_t)id;
				h->host_load[rep] = 0;
				h->host_fair[rep] = 0;
				h->host_var[rep] = 0;
				h->host_floor[rep] = 0;
				break;
			}
			if (same_host(&s->backends[h->host_index[i] - 1], b)) {
				rep = (uint16_t)(h->host_index[i] - 1);
				break;
			}
		}
		h->host[id] = rep;
		h->host_load[rep] += h->load[id];
		h->host_var[rep] += h->var[id];
		h->host_floor[rep] += h->var_floor[id];
		if (registry_usable(s, (uint16_t)id) && b->vip_id < LB_MAX_VIPS &&
		    h->vip_w[b->vip_id] > 0)
			h->host_fair[rep] +=
			        b->weight * h->vip_sum[b->vip_id] / h->vip_w[b->vip_id];
	}
}

/* --- caps ----------------------------------------------------------------- */

double
lb_hot_plan_cap(const struct lb_hotkey *h, const struct lb_snapshot *s,
                const struct lb_hot_vip_info *vi, uint16_t id)
{
	return (1 + h->p.epsilon) * s->backends[id].weight * vi->unit;
}

static double
host_cap(const struct lb_hotkey *h, uint16_t id)
{
	return (1 + h->p.epsilon) * h->host_fair[h->host[id]];
}

bool
lb_hot_plan_over(const struct lb_hotkey *h, const struct lb_snapshot *s,
                 const struct lb_hot_vip_info *vi, uint16_t id)
{
	double slack = 1 + LB_HOT_CAP_SLACK;

	return h->load[id] > lb_hot_plan_cap(h, s, vi, id) * slack ||
	       h->host_load[h->host[id]] > host_cap(h, id) * slack;
}

bool
lb_hot_plan_fits(const struct lb_hotkey *h, const struct lb_snapshot *s,
                 const struct lb_hot_vip_info *vi, uint16_t home, double k_plan, double part)
{
	double slack = 1 + LB_HOT_CAP_SLACK;
	double base = h->load[home] - part, hbase = h->host_load[h->host[home]] - part;

	return (base > 0 ? base : 0) + k_plan <= lb_hot_plan_cap(h, s, vi, home) * slack &&
	       (hbase > 0 ? hbase : 0) + k_plan <= host_cap(h, home) * slack;
}

/* Square root by Newton's iteration (no libm in this library); x >= 0. */
static double
root(double x)
{
	double y = x > 1 ? x : 1;

	if (!(x > 0))
		return 0;
	for (int i = 0; i < 64; i++) {
		double n = 0.5 * (y + x / y);

		if (!(n < y))
			break;
		y = n;
	}
	return y;
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

/* Backend id's weight in s, 0 if not in the registry. */
static double
weight_of(const struct lb_snapshot *s, uint16_t id)
{
	return id < s->n_backends ? (double)s->backends[id].weight : 0;
}

/* Σ weight of the backends in ids usable in this call (all of them if none is). */
static double
carrier_weight(const struct lb_hotkey *h, const struct lb_snapshot *s, const uint16_t *ids,
               uint16_t n)
{
	double w = 0, all = 0;

	for (uint16_t i = 0; i < n; i++) {
		all += weight_of(s, ids[i]);
		if (lb_hot_plan_usable(h, ids[i]))
			w += weight_of(s, ids[i]);
	}
	return w > 0 ? w : all;
}

/* A backend's identity as every instance knows it (its address), hashed. */
static uint64_t
identity_hash(const struct lb_backend *b)
{
	uint64_t x = (uint64_t)b->af * 0x9E3779B97F4A7C15ULL;

	for (int i = 0; i < 16; i += 8) {
		uint64_t w;

		memcpy(&w, (const uint8_t *)&b->addr + i, 8);
		x = (x ^ w) * 0xbf58476d1ce4e5b9ULL;
		x ^= x >> 31;
	}
	return x;
}

/* The rendezvous score of (key, backend): splitmix64's finaliser. */
static uint64_t
score_of(uint64_t key_hash, uint64_t ident)
{
	uint64_t x = key_hash ^ ident;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint16_t
lb_hot_plan_order(const struct lb_snapshot *s, const struct lb_vip *v, uint64_t key_hash,
                  uint16_t *out, struct lb_hot_rank *scratch)
{
	uint32_t n = 0, lim = s->n_backends < LB_HOT_N_IDS ? s->n_backends : LB_HOT_N_IDS;

	if (v == NULL)
		return 0;
	for (uint32_t id = 0; id < lim; id++) {
		const struct lb_backend *b = &s->backends[id];

		if (b->gen == 0 || b->vip_id != v->id)
			continue;
		/* Ascending q is descending score. */
		scratch[n].q = (int64_t)(~score_of(key_hash, identity_hash(b)) >> 1);
		scratch[n].j = id;
		n++;
	}
	qsort(scratch, n, sizeof(*scratch), rank_cmp);
	for (uint32_t i = 0; i < n; i++)
		out[i] = (uint16_t)scratch[i].j;
	return (uint16_t)n;
}

uint16_t
lb_hotkey_order(const struct lb_snapshot *s, const struct lb_vip *v, uint64_t key_hash,
                uint16_t *out, uint16_t max)
{
	struct lb_hot_rank *scratch = malloc(LB_HOT_N_IDS * sizeof(*scratch));
	uint16_t *all = malloc(LB_HOT_N_IDS * sizeof(*all));
	uint16_t n = 0;

	if (scratch != NULL && all != NULL) {
		n = lb_hot_plan_order(s, v, key_hash, all, scratch);
		n = n < max ? n : max;
		memcpy(out, all, n * sizeof(*out));
	}
	free(scratch);
	free(all);
	return n;
}

/* The ladder of replica counts a computed plan uses: coarse, so that two
 * instances measuring the same key with independent noise land on the same
 * rung almost always. */
static const uint16_t g_ladder[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};

uint32_t
lb_hotkey_rung(uint32_t r)
{
	for (size_t i = 0; i < sizeof(g_ladder) / sizeof(g_ladder[0]); i++)
		if (g_ladder[i] >= r)
			return g_ladder[i];
	return LB_HOT_MAX_REPLICAS;
}

/* The real fluctuation of a load: its measured variance (var, of one
 * window) beyond LB_HOT_FLOOR_K times its sampling floor, or 0. */
static double
excess(double var, double floor)
{
	double x = var - LB_HOT_FLOOR_K * floor;

	return x > 0 ? x : 0;
}

/* A measured load made robust to sampling noise: a deviation from the fair
 * load within LB_HOT_DENOISE_Z standard deviations of its sampling noise
 * counts as none, so every instance sees the same (fair) load unless one is
 * really loaded by something else. The sampling noise: the EWMA's of the part
 * of var up to LB_HOT_FLOOR_K times vfloor (the sampling floor measured
 * alongside var), but at least floor (a Poisson count's variance of one
 * window of this load: a load that restarted is one raw window), plus extra (a key part's
 * estimate). A real fluctuation (the excess) is common to every instance and is not denoised: the
 * plan keeps headroom for it instead. */
static double
denoised(const struct lb_hotkey *h, double measured, double fair, double var, double vfloor,
         double floor, double extra)
{
	double a = h->p.ewma_alpha, sd, e = measured - fair;
	double v = (var - excess(var, vfloor)) * a / (2 - a);

	if (v < floor)
		v = floor;
	sd = LB_HOT_DENOISE_Z * root(v + extra);
	if (e > sd)
		return measured - sd;
	if (e < -sd)
		return measured + sd;
	return fair;
}

/*
 * Lay the replica list for r along the order: position i < r holds pref[i]
 * when it may take the key (h->head[i] >= 0 with u per unit of weight), else
 * the next such backend from the far end of the order, so a position's
 * substitute does not depend on r and a backend going down or coming back
 * moves only its own position. pos: the positions in the order, slot by
 * slot. @return the count laid.
 */
static uint32_t
lay(struct lb_hotkey *h, uint32_t np, uint32_t r, double u, uint32_t *pos)
{
	uint32_t n = 0, tail = np;

	for (uint32_t j = 0; j < np; j++)
		h->taken[j] = 0;
	for (uint32_t i = 0; i < np && n < r; i++) {
		bool ok = h->proj[i] >= 0 && u <= h->head[i] * (1 + LB_HOT_CAP_SLACK) + 1e-12;

		if (ok && !h->taken[i]) {
			h->taken[i] = 1;
			pos[n++] = i;
			continue;
		}
		while (tail > i + 1) {
			uint32_t t = --tail;

			if (!h->taken[t] && h->proj[t] >= 0 &&
			    u <= h->head[t] * (1 + LB_HOT_CAP_SLACK) + 1e-12) {
				h->taken[t] = 1;
				pos[n++] = t;
				break;
			}
		}
	}
	return n;
}

/* Fill pos[n .. r-1] with the usable backends not laid yet of least load
 * without the key per unit of weight (on a grid of LOAD_QUANTUM of the
 * average, so equal loads tie), ties in order. @return the count laid. */
static uint32_t
fill_least(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_hot_vip_info *vi,
           uint32_t np, uint32_t n, uint32_t r, uint32_t *pos)
{
	double quantum = vi->unit * LOAD_QUANTUM;
	uint32_t n_rest = 0;

	if (!(quantum > 0))
		quantum = 1;
	for (uint32_t j = 0; j < np; j++)
		if (!h->taken[j] && h->proj[j] >= 0) {
			double w = weight_of(s, h->pref[j]);

			h->ranks[n_rest].q = (int64_t)(h->proj[j] / w / quantum + 0.5);
			h->ranks[n_rest].j = j;
			n_rest++;
		}
	qsort(h->ranks, n_rest, sizeof(h->ranks[0]), rank_cmp);
	for (uint32_t i = 0; i < n_rest && n < r; i++) {
		h->taken[h->ranks[i].j] = 1;
		pos[n++] = h->ranks[i].j;
	}
	return n;
}

static int
pos_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether every laid backend takes its weight's part of k (k w_i / W over the
 * laid list, as the data path spreads it) within its headroom. */
static bool
fits_laid(const struct lb_hotkey *h, const struct lb_snapshot *s, const uint32_t *pos, uint32_t n,
          double k)
{
	double w = 0;

	for (uint32_t i = 0; i < n; i++)
		w += weight_of(s, h->pref[pos[i]]);
	for (uint32_t i = 0; i < n; i++)
		if (!(k / w <= h->head[pos[i]] * (1 + LB_HOT_CAP_SLACK) + 1e-12))
			return false;
	return n > 0;
}

uint16_t
lb_hot_plan_choose(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
                   const struct lb_hot_vip_info *vi, uint64_t key_hash, uint32_t r_fixed,
                   double k_plan, const uint16_t *cur, uint16_t n_cur, double part, uint16_t *out,
                   struct lb_hot_plan_result *res)
{
	uint32_t np, nu = 0, r = 0, maxr = vi->n, n = 0, pos[LB_HOT_MAX_REPLICAS];
	double u = 0, peak = 0, w_cur, m = h->p.margin > 0 ? h->p.margin : 0, w_avg;
	bool feasible = false, holds = true;
	uint16_t n_out = 0;

	if (maxr > LB_HOT_MAX_REPLICAS)
		maxr = LB_HOT_MAX_REPLICAS;
	if (maxr == 0 || !(vi->sum_w > 0))
		return 0;
	h->mark_stamp++;
	for (uint16_t i = 0; i < n_cur; i++)
		if (cur[i] < LB_HOT_N_IDS)
			h->mark[cur[i]] = h->mark_stamp;
	w_cur = carrier_weight(h, s, cur, n_cur);
	np = lb_hot_plan_order(s, v, key_hash, h->pref, h->ranks);
	for (uint32_t j = 0; j < np; j++) {
		uint16_t b = h->pref[j];
		double own, base, hbase, hb, hh, w = weight_of(s, b), fair, hfair, kv, fl, hfl;

		if (!lb_hot_plan_usable(h, b) || !(w > 0)) {
			h->proj[j] = -1;
			continue;
		}
		/* The data path gives each carrier its weight's part of the key. */
		own = h->mark[b] == h->mark_stamp && w_cur > 0 ? part * w / w_cur : 0;
		fair = (vi->sum_ewma - k_plan) * w / vi->sum_w;
		hfair = h->host_fair[h->host[b]] - k_plan * w / vi->sum_w;
		/* A carrier's load without the key is its load less an estimate of
		 * its part, which carries the sketch's sampling noise too. */
		kv = own * LB_HOT_KEY_VAR;
		fl = h->var_floor[b];
		hfl = h->host_floor[h->host[b]];
		base = denoised(h, h->load[b] - own, fair > 0 ? fair : 0, h->var[b], fl,
		                window_floor(h, &s->backends[b], h->load[b] - own), kv);
		hbase = denoised(h, h->host_load[h->host[b]] - own, hfair > 0 ? hfair : 0,
		                 h->host_var[h->host[b]], hfl,
		                 window_floor(h, &s->backends[b], h->host_load[h->host[b]] - own),
		                 kv);
		base = base > 0 ? base : 0;
		hbase = hbase > 0 ? hbase : 0;
		/* The cap is judged per window: a real fluctuation's per-window sd
		 * (not the EWMA's) is kept below it. */
		hb = lb_hot_plan_cap(h, s, vi, b) * (1 - m) - base -
		     LB_HOT_NOISE_Z * root(excess(h->var[b], fl));
		hh = host_cap(h, b) * (1 - m) - hbase -
		     LB_HOT_NOISE_Z * root(excess(h->host_var[h->host[b]], hfl));
		h->head[j] = (hb < hh ? hb : hh) / w; /* per unit of weight */
		h->proj[j] = base;                    /* without the key */
		nu++;
	}
	if (nu == 0)
		return 0;
	if (maxr > nu)
		maxr = nu;
	w_avg = vi->sum_w / vi->n;
	if (r_fixed > 0) {
		/* An operator's r: exactly that many, along the order. */
		r = r_fixed < maxr ? r_fixed : maxr;
		u = k_plan / (r * w_avg);
		n = lay(h, np, r, u, pos);
		feasible = n == r && fits_laid(h, s, pos, n, k_plan);
		if (n < r)
			n = fill_least(h, s, vi, np, n, r, pos);
	} else {
		/* The lowest rung of the ladder whose list, of backends that each
		 * take their weight's part of the key within their headroom, fills. */
		for (uint32_t want = 1;; want = lb_hotkey_rung(want + 1)) {
			r = want < maxr ? want : maxr;
			u = k_plan / (r * w_avg);
			n = lay(h, np, r, u, pos);
			if (n == r && fits_laid(h, s, pos, n, k_plan)) {
				feasible = true;
				break;
			}
			if (r == maxr)
				break;
		}
		if (!feasible) {
			/* None holds the cap: as many as allowed, the least loaded. */
			u = k_plan / (maxr * w_avg);
			for (uint32_t j = 0; j < np; j++)
				h->taken[j] = 0;
			n = fill_least(h, s, vi, np, 0, maxr, pos);
			qsort(pos, n, sizeof(*pos), pos_cmp);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint16_t b = h->pref[pos[i]];
		double w = weight_of(s, b);
		double q = vi->unit > 0 ? (h->proj[pos[i]] + u * w) / (w * vi->unit) : 0;

		peak = q > peak ? q : peak;
		/* The margin is a goal: a plan that holds the cap is feasible. */
		holds = holds &&
		        lb_hot_plan_fits(h, s, vi, b, u * w,
		                         h->mark[b] == h->mark_stamp && w_cur > 0 ? part * w / w_cur
		                                                                  : 0);
		if (out != NULL)
			out[n_out] = b;
		n_out++;
	}
	if (res != NULL) {
		res->feasible = feasible || (n > 0 && holds);
		res->peak = peak;
	}
	return n_out;
}

/* --- loads ---------------------------------------------------------------- */

void
lb_hot_plan_shift_load(struct lb_hotkey *h, const struct lb_snapshot *s, const uint16_t *from,
                       uint16_t n_from, double from_load, const uint16_t *to, uint16_t n_to,
                       double key_load)
{
	double w_from = carrier_weight(h, s, from, n_from), w_to = 0;

	for (uint16_t i = 0; i < n_to; i++)
		w_to += weight_of(s, to[i]);
	for (uint16_t i = 0; i < n_from && w_from > 0; i++)
		if (from[i] < LB_HOT_N_IDS) {
			double part = from_load * weight_of(s, from[i]) / w_from;
			double d = h->load[from[i]] < part ? h->load[from[i]] : part;

			h->load[from[i]] -= d;
			h->host_load[h->host[from[i]]] -= d;
		}
	for (uint16_t i = 0; i < n_to && w_to > 0; i++)
		if (to[i] < LB_HOT_N_IDS) {
			double part = key_load * weight_of(s, to[i]) / w_to;

			h->load[to[i]] += part;
			h->host_load[h->host[to[i]]] += part;
		}
}

/* One usable membership's contribution to its VIP's digest. */
static uint64_t
membership_digest(const struct lb_backend *b, uint32_t id)
{
	uint64_t x = ((uint64_t)id << 32 | (uint64_t)b->gen << 16) ^
	             (uint64_t)b->weight * 0x9E3779B97F4A7C15ULL;

	x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

/* LB_HOT_STEP_Z^2 times the sampling variance of a load x: a count of x packets
 * is about Poisson (variance x), in load units times the VIP's units per
 * packet. */
static double
step_z2(const struct lb_hotkey *h, const struct lb_backend *b, double x, const uint64_t *vip_total)
{
	double u = 1;

	if (vip_total != NULL && b->vip_id < LB_MAX_VIPS && vip_total[b->vip_id] > 0 &&
	    h->vip_sum[b->vip_id] > 0)
		u = h->vip_sum[b->vip_id] / (double)vip_total[b->vip_id];
	return LB_HOT_STEP_Z * LB_HOT_STEP_Z * (x > 1 ? x : 1) * u;
}

/* Backend id's deviation this window from its smoothed load scaled to this
 * window's VIP volume (vip_sum / vip_w as lb_hot_plan_update_loads() sets them). */
static double
deviation(const struct lb_hotkey *h, const struct lb_backend *b, uint32_t id, const uint64_t *load)
{
	double x = load != NULL ? (double)load[id] : 0;

	if (b->vip_id < LB_MAX_VIPS && h->vip_w[b->vip_id] > 0)
		return x - h->load[id] * h->vip_sum[b->vip_id] / h->vip_w[b->vip_id];
	return x - h->load[id];
}

/* Whether backend id's load this window is a step: beyond LB_HOT_STEP_Z times
 * its count's sampling noise plus its measured noise. */
static bool
is_step(const struct lb_hotkey *h, const struct lb_backend *b, uint32_t id, const uint64_t *load,
        const uint64_t *vip_total)
{
	double x = load != NULL ? (double)load[id] : 0, d = deviation(h, b, id, load);

	return d * d > step_z2(h, b, x, vip_total) + LB_HOT_STEP_Z * LB_HOT_STEP_Z * h->var[id];
}

void
lb_hot_plan_update_loads(struct lb_hotkey *h, const struct lb_snapshot *s, const uint64_t *load,
                         const uint64_t *vip_total)
{
	double a = h->p.ewma_alpha;
	uint32_t n = s->n_backends < LB_HOT_N_IDS ? s->n_backends : LB_HOT_N_IDS;

	/* A VIP whose usable set changed since the latest window (a backend
	 * down, drained, re-weighted, added or removed) has its traffic spread
	 * anew: the step is not noise and the old EWMA does not describe the new
	 * spread, so its loads restart from this window and their noise is kept. */
	memset(h->vip_sig_now, 0, sizeof(h->vip_sig_now));
	for (uint32_t id = 0; id < n; id++) {
		const struct lb_backend *b = &s->backends[id];

		if (registry_usable(s, (uint16_t)id) && b->vip_id < LB_MAX_VIPS)
			h->vip_sig_now[b->vip_id] += membership_digest(b, id);
	}
	/* Each VIP's load this window (vip_sum) and smoothed (vip_w), as scratch
	 * until lb_hot_plan_hosts() recomputes both. The cap scales with the VIP's
	 * average, so a change of the VIP's whole volume (its rate, or a window a
	 * little longer than the last) moves a load and its cap together: noise is
	 * a load's deviation from its smoothed load scaled to this window's volume.
	 * The VIP's units per packet (1 for packets, the mean size for bytes) set
	 * the sampling noise floor of a load. */
	memset(h->vip_sum, 0, sizeof(h->vip_sum));
	memset(h->vip_w, 0, sizeof(h->vip_w));
	for (uint32_t id = 0; load != NULL && id < n; id++) {
		const struct lb_backend *b = &s->backends[id];

		if (b->gen != 0 && b->vip_id < LB_MAX_VIPS && h->load_gen[id] == b->gen) {
			h->vip_sum[b->vip_id] += (double)load[id];
			h->vip_w[b->vip_id] += h->load[id];
		}
	}
	for (uint32_t id = 0; load != NULL && vip_total != NULL && id < n; id++) {
		uint16_t vid = s->backends[id].vip_id;

		if (vid < LB_MAX_VIPS && vip_total[vid] > 0 && h->vip_sum[vid] > 0)
			h->vip_upp[vid] = h->vip_sum[vid] / (double)vip_total[vid];
	}
	/* Steps first: a step on one backend (a key arriving on its home, or
	 * growing, or leaving it) changes the share of every other backend of its
	 * VIP too, often by less than the step bound, and of the key's replicas'
	 * other traffic inside their totals. That is the new mix, not noise: in
	 * such a window every load of the VIP restarts from it, noise kept. */
	for (uint32_t id = 0; id < n; id++) {
		const struct lb_backend *b = &s->backends[id];

		if (b->gen == 0 || h->load_gen[id] != b->gen ||
		    (b->vip_id < LB_MAX_VIPS &&
		     h->vip_sig_now[b->vip_id] != h->vip_sig[b->vip_id]) ||
		    !is_step(h, b, id, load, vip_total))
			continue;
		h->stepped[id] = h->stamp;
		if (b->vip_id < LB_MAX_VIPS)
			h->vip_stepped[b->vip_id] = h->stamp;
	}
	for (uint32_t id = 0; id < n; id++) {
		const struct lb_backend *b = &s->backends[id];
		uint16_t gen = b->gen;
		double x = load != NULL ? (double)load[id] : 0, d = deviation(h, b, id, load);

		if (gen == 0) {
			h->load[id] = 0;
			h->var[id] = 0;
			h->var_floor[id] = 0;
		} else if (h->load_gen[id] != gen) {
			h->load[id] = x; /* a new membership starts from its first window */
			h->var[id] = 0;
			h->var_floor[id] = 0;
		} else if (b->vip_id < LB_MAX_VIPS &&
		           h->vip_sig_now[b->vip_id] != h->vip_sig[b->vip_id]) {
			h->load[id] = x;
		} else if (h->stepped[id] == h->stamp ||
		           (b->vip_id < LB_MAX_VIPS && h->vip_stepped[b->vip_id] == h->stamp)) {
			h->load[id] = x; /* a step in the traffic mix: not noise */
			h->stepped[id] = h->stamp;
		} else {
			h->load[id] = a * x + (1 - a) * h->load[id];
			h->var[id] = a * d * d + (1 - a) * h->var[id];
			h->var_floor[id] = a * window_floor(h, b, x) + (1 - a) * h->var_floor[id];
		}
		h->load_gen[id] = gen;
	}
	memcpy(h->vip_sig, h->vip_sig_now, sizeof(h->vip_sig));
	/* Ids beyond the registry: forgotten, so a later reuse starts fresh. */
	for (uint32_t id = n; id < h->n_known; id++) {
		h->load[id] = 0;
		h->var[id] = 0;
		h->var_floor[id] = 0;
		h->load_gen[id] = 0;
	}
	h->n_known = n;
}
