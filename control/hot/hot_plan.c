/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key controller's planning maths: the replica count
 * r = ceil(N p / (c - 1 + p)) and its ladder, a key's Maglev preference order
 * and its rendezvous order, the usable backends and the cap of a VIP, and the
 * replica list laid along the rendezvous order under that cap (loads within
 * their noise of fair taken as fair, so instances agree). The backend loads it
 * plans on are kept by hot_loads.c. docs/hot-keys.md "The controller" has the
 * math.
 *
 * Units. A candidate's share p = count / vip_total is unit-free. Backend loads
 * may be in another unit (bytes, new flows), so the key's traffic is expressed
 * in load units as p times the VIP's summed backend load.
 */
#include <string.h>

#include "control/hot/hot_plan.h"

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
	uint64_t seen[(LB_HOT_N_IDS + 64) / 64] = {0}; /* bitmap of ids already listed (2 KiB) */
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
	return id < s->n_backends && s->backends[id].vip_id == v->id &&
	       lb_hot_plan_registry_usable(s, id);
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

double
lb_hot_sqrt(double x)
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

uint64_t
lb_hot_addr_hash(const struct lb_backend *b, uint64_t mul, unsigned int shift)
{
	uint64_t x = (uint64_t)b->af * 0x9E3779B97F4A7C15ULL;

	for (int i = 0; i < 16; i += 8) {
		uint64_t w;

		memcpy(&w, (const uint8_t *)&b->addr + i, 8);
		x = (x ^ w) * mul;
		x ^= x >> shift;
	}
	return x;
}

/* A backend's identity as every instance knows it (its address), hashed: the
 * rendezvous order's input, so its constants are part of what instances must
 * agree on. */
static uint64_t
identity_hash(const struct lb_backend *b)
{
	return lb_hot_addr_hash(b, 0xbf58476d1ce4e5b9ULL, 31);
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
	sd = LB_HOT_DENOISE_Z * lb_hot_sqrt(v + extra);
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
			double w = lb_hot_plan_weight(s, h->pref[j]);

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
		w += lb_hot_plan_weight(s, h->pref[pos[i]]);
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
	w_cur = lb_hot_plan_carrier_weight(h, s, cur, n_cur);
	np = lb_hot_plan_order(s, v, key_hash, h->pref, h->ranks);
	for (uint32_t j = 0; j < np; j++) {
		uint16_t b = h->pref[j];
		double own, base, hbase, hb, hh, w = lb_hot_plan_weight(s, b), fair, hfair, kv, fl,
		                                 hfl;

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
		kv = own * h->key_var;
		fl = h->var_floor[b];
		hfl = h->host_floor[h->host[b]];
		base = denoised(h, h->load[b] - own, fair > 0 ? fair : 0, h->var[b], fl,
		                lb_hot_plan_window_floor(h, &s->backends[b], h->load[b] - own), kv);
		hbase = denoised(h, h->host_load[h->host[b]] - own, hfair > 0 ? hfair : 0,
		                 h->host_var[h->host[b]], hfl,
		                 lb_hot_plan_window_floor(h, &s->backends[b],
		                                          h->host_load[h->host[b]] - own),
		                 kv);
		base = base > 0 ? base : 0;
		hbase = hbase > 0 ? hbase : 0;
		/* The cap is judged per window: a real fluctuation's per-window sd
		 * (not the EWMA's) is kept below it. */
		hb = lb_hot_plan_cap(h, s, vi, b) * (1 - m) - base -
		     LB_HOT_NOISE_Z * lb_hot_sqrt(excess(h->var[b], fl));
		hh = host_cap(h, b) * (1 - m) - hbase -
		     LB_HOT_NOISE_Z * lb_hot_sqrt(excess(h->host_var[h->host[b]], hfl));
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
		double w = lb_hot_plan_weight(s, b);
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
