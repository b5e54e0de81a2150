/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-key controller: promotes keys whose share of their VIP reaches φ to an
 * override over r = ceil(N p / (c - 1 + p)) replicas chosen along the key's
 * Maglev preference order under the bounded-load cap, re-plans and demotes
 * with hysteresis. This file holds the controller object, its parameters, the
 * override index, the window step and pin/unpin; the planning maths (with the
 * units) is in hot_plan.c, the load bookkeeping in hot_loads.c, the events and
 * JSON reports in hot_events.c. docs/hot-keys.md "The controller" has the
 * math and the flapping bound.
 *
 * Parameters. Ranges and defaults are control/model/params.h's. A field left
 * 0 takes its default: threshold 0 is "auto" (the promotion bound derived per
 * VIP), threshold_low threshold / 2 under a numeric threshold and 0 ("auto")
 * under "auto"; demote_windows, epsilon, ewma_alpha and margin their
 * defaults. A zero-initialised struct (or NULL at create) means "defaults".
 *
 * Promotion and demotion follow the load a key puts on its home: with share
 * p of a VIP whose usable weights sum to W, the home (weight w_h) carries
 * 1 - p + p W / w_h times its fair load, over the cap c = 1 + epsilon as soon
 * as p > (c - 1) w_h / (W - w_h) (promotion_bound). A key is promoted when
 * the lower bound of its share passes that bound, and goes home only when the
 * upper bound of its smoothed share is LB_HOT_DEMOTE_BAND of it or less.
 *
 * Over 800 lines because the window step, its share statistics, the re-plan
 * check and pin/unpin read and write the same override state; the planning
 * maths, loads, events and reports are already in files of their own.
 *
 * Invariants: every override has 1..LB_HOT_MAX_REPLICAS distinct replicas, all
 * of its VIP (an override with none would read as an empty slot in the
 * snapshot's table), listed in the key's preference order.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "control/hot/hot_events.h"
#include "control/hot/hot_plan.h"
#include "control/hot/hot_report.h"
#include "control/hot/hotkey.h"
#include "control/hot/hotkey_internal.h"
#include "control/model/params.h"

/* --- parameters ---------------------------------------------------------- */

/* x is 0 (the default, or "auto") or a value of parameter id. */
static bool
zero_or_ok(enum lb_hot_param id, double x)
{
	return x == 0 || lb_param_ok(&lb_hot_param_table[id], x);
}

static int
params_resolve(const struct lb_hot_params *in, struct lb_hot_params *out)
{
	struct lb_hot_params p = {0};

	if (in != NULL)
		p = *in;
	/* A margin below 0 is none; NaN fails every check. */
	if (!zero_or_ok(LB_HOT_P_THRESHOLD, p.threshold) ||
	    !zero_or_ok(LB_HOT_P_THRESHOLD_LOW, p.threshold_low) ||
	    !zero_or_ok(LB_HOT_P_EPSILON, p.epsilon) ||
	    !zero_or_ok(LB_HOT_P_EWMA_ALPHA, p.ewma_alpha) ||
	    !zero_or_ok(LB_HOT_P_DEMOTE_WINDOWS, p.demote_windows) ||
	    !(p.margin <= 0 || lb_param_ok(&lb_hot_param_table[LB_HOT_P_MARGIN], p.margin)))
		return -EINVAL;
	if (p.threshold_low == 0 && p.threshold != LB_HOT_THRESHOLD_AUTO)
		p.threshold_low = p.threshold / LB_HOT_THRESHOLD_LOW_DIV;
	if (p.threshold != LB_HOT_THRESHOLD_AUTO && p.threshold_low > p.threshold)
		return -EINVAL;
	if (p.demote_windows == 0)
		p.demote_windows = LB_HOT_DEMOTE_WINDOWS_DEFAULT;
	if (p.epsilon == 0)
		p.epsilon = LB_HOT_EPSILON_DEFAULT;
	if (p.ewma_alpha == 0)
		p.ewma_alpha = LB_HOT_EWMA_ALPHA_DEFAULT;
	if (p.margin == 0)
		p.margin = LB_HOT_MARGIN_DEFAULT;
	else if (p.margin < 0)
		p.margin = -1; /* none */
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
	h->key_var = LB_HOT_KEY_VAR;
	h->load = calloc(LB_HOT_N_IDS, sizeof(*h->load));
	h->load_gen = calloc(LB_HOT_N_IDS, sizeof(*h->load_gen));
	h->usable = calloc(LB_HOT_N_IDS, sizeof(*h->usable));
	h->scanned = calloc(LB_HOT_N_IDS, sizeof(*h->scanned));
	h->stepped = calloc(LB_HOT_N_IDS, sizeof(*h->stepped));
	h->mark = calloc(LB_HOT_N_IDS, sizeof(*h->mark));
	h->pref = calloc(LB_HOT_N_IDS, sizeof(*h->pref));
	h->proj = calloc(LB_HOT_N_IDS, sizeof(*h->proj));
	h->taken = calloc(LB_HOT_N_IDS, sizeof(*h->taken));
	h->ranks = calloc(LB_HOT_N_IDS, sizeof(*h->ranks));
	h->var = calloc(LB_HOT_N_IDS, sizeof(*h->var));
	h->var_floor = calloc(LB_HOT_N_IDS, sizeof(*h->var_floor));
	h->host = calloc(LB_HOT_N_IDS, sizeof(*h->host));
	h->host_load = calloc(LB_HOT_N_IDS, sizeof(*h->host_load));
	h->host_fair = calloc(LB_HOT_N_IDS, sizeof(*h->host_fair));
	h->host_var = calloc(LB_HOT_N_IDS, sizeof(*h->host_var));
	h->host_floor = calloc(LB_HOT_N_IDS, sizeof(*h->host_floor));
	h->head = calloc(LB_HOT_N_IDS, sizeof(*h->head));
	h->heads = calloc(LB_HOT_N_IDS, sizeof(*h->heads));
	h->host_index = calloc(LB_HOT_HOST_SLOTS, sizeof(*h->host_index));
	h->host_stamp = calloc(LB_HOT_HOST_SLOTS, sizeof(*h->host_stamp));
	if (h->load == NULL || h->load_gen == NULL || h->usable == NULL || h->scanned == NULL ||
	    h->stepped == NULL || h->mark == NULL || h->pref == NULL || h->proj == NULL ||
	    h->taken == NULL || h->ranks == NULL || h->var == NULL || h->var_floor == NULL ||
	    h->host == NULL || h->host_load == NULL || h->host_fair == NULL ||
	    h->host_var == NULL || h->host_floor == NULL || h->head == NULL || h->heads == NULL ||
	    h->host_index == NULL || h->host_stamp == NULL) {
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
	free(h->stepped);
	free(h->mark);
	free(h->pref);
	free(h->proj);
	free(h->taken);
	free(h->ranks);
	free(h->var);
	free(h->var_floor);
	free(h->host);
	free(h->host_load);
	free(h->host_fair);
	free(h->host_var);
	free(h->host_floor);
	free(h->head);
	free(h->heads);
	free(h->host_index);
	free(h->host_stamp);
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

/* --- the override index --------------------------------------------------- */

static int
index_find(const struct lb_hotkey *h, uint16_t vip_id, uint64_t key_hash)
{
	uint32_t i = lb_override_slot_of(key_hash, vip_id, LB_HOT_INDEX_SIZE - 1);

	for (;; i = (i + 1) & (LB_HOT_INDEX_SIZE - 1)) {
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
	uint32_t i =
	        lb_override_slot_of(h->ov[pos].key_hash, h->ov[pos].vip_id, LB_HOT_INDEX_SIZE - 1);

	while (h->index[i] != 0)
		i = (i + 1) & (LB_HOT_INDEX_SIZE - 1);
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

/* --- changing overrides --------------------------------------------------- */

static bool
same_list(const uint16_t *a, uint16_t na, const uint16_t *b, uint16_t nb)
{
	return na == nb && memcmp(a, b, na * sizeof(*a)) == 0;
}

/* What the replicas of override pos carry of its key in all: the data path
 * spreads it over the usable ones in proportion to their weights (so an
 * unusable one's part is on the others). */
static double
carried_part(const struct lb_hotkey *h, uint32_t pos)
{
	return h->st[pos].key_load;
}

/* Replace an override's replicas (and the load estimate with them); part:
 * what the old replicas carry of the key. */
static void
apply(struct lb_hotkey *h, const struct lb_snapshot *s, uint32_t pos, const uint16_t *list,
      uint16_t n, double part)
{
	struct lb_hot_override *o = &h->ov[pos];
	double ks = h->st[pos].key_load;

	lb_hot_plan_shift_load(h, s, o->replicas, o->n_replicas, part, list, n, ks);
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

		lb_hot_plan_shift_load(h, s, o->replicas, o->n_replicas, carried_part(h, pos),
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

/* The key's load in load units, as planned: the larger of its latest and its
 * smoothed share, times the VIP's load. */
static double
key_plan_load(const struct lb_hot_override *o, const struct lb_hot_ov_state *st,
              const struct lb_hot_vip_info *vi)
{
	return lb_hot_dmax(o->share, st->share_ewma) * vi->sum_ewma;
}

/* Record a plan's outcome; an infeasible one is reported once, when it starts. */
static void
note_plan(struct lb_hotkey *h, uint32_t pos, const struct lb_hot_plan_result *res, double k,
          uint64_t window)
{
	struct lb_hot_ov_state *st = &h->st[pos];
	bool was = st->capped;

	/* An operator's r is not a plan that failed to hold the cap. */
	st->capped = !res->feasible && st->pin_r == 0;
	st->capped_load = k;
	st->peak = res->peak;
	if (st->pin_r == 0)
		st->over_windows = 0;
	if (st->capped && !was) {
		h->infeasible++;
		lb_hot_events_add(h, LB_HOT_EV_INFEASIBLE, window, &h->ov[pos]);
		h->ev[(h->ev_next + LB_HOT_MAX_EVENTS - 1) % LB_HOT_MAX_EVENTS].peak = res->peak;
	}
}

/* The relative standard deviation of a share measured from a count of that
 * many packets (variance about LB_HOT_KEY_VAR times the count, the count
 * taken as at least one sample's worth), averaged by an EWMA whose variance
 * is f times one window's (1: one window). */
static double
share_rsd(const struct lb_hotkey *h, double count, double f)
{
	if (!(count > h->key_var))
		count = h->key_var;
	return lb_hot_sqrt(h->key_var * f / count);
}

/* A measured share's lower bound, as a factor: 1 less LB_HOT_SHARE_Z
 * standard deviations of the sketch's sampling noise of a count (variance
 * about h->key_var times the count), at least 0.5. A key is promoted on
 * it and grown on its smoothed share: instances that measure the same key
 * near a rung's edge start on the lower rung together and step up when the
 * smoothed share, less noisy than one window's, crosses (the dead band keeps
 * them there), rather than each on the side its first window's noise fell. */
static double
share_floor(const struct lb_hotkey *h, double count)
{
	double y;

	if (!(count > 0))
		return 1;
	y = 1 - LB_HOT_SHARE_Z * share_rsd(h, count, 1);
	return y < 0.5 ? 0.5 : y;
}

/* A smoothed share's upper bound, as a factor: 1 plus LB_HOT_SHARE_Z
 * standard deviations of the sampling noise of an EWMA with alpha a of the
 * key's count (about st->seen_slow per window); with no sample yet, 1 plus
 * LB_HOT_SHARE_Z (no shrink on it). For the smoothed share (a = the EWMA's
 * alpha) the dead band judges a shrink on it, so a key counted in a few
 * samples per window does not step down on a stretch of low windows; for
 * the slow share (a divided by LB_HOT_SLOW_DIV) both the climb and the dead
 * band do. */
static double
share_bound(const struct lb_hotkey *h, const struct lb_hot_ov_state *st, double a)
{
	if (!(st->seen_slow > 0))
		return 1 + LB_HOT_SHARE_Z;
	return 1 + LB_HOT_SHARE_Z * share_rsd(h, st->seen_slow, a / (2 - a));
}

/* Whether this window's share of the key (from total packets of its VIP) is
 * a step from its smoothed share: more than LB_HOT_STEP_Z standard deviations
 * of the sampling noise of the larger of this window's count and the count
 * the smoothed share expects (about LB_HOT_KEY_VAR times it), at least one
 * sample's worth, so a window whose few samples happen to be many is not
 * taken for an arrival. */
static bool
share_step(const struct lb_hotkey *h, const struct lb_hot_ov_state *st, double share,
           uint64_t total)
{
	double n0 = st->share_ewma * (double)total, d = share - st->share_ewma;

	if (total == 0)
		return false;
	if (n0 < (double)st->seen)
		n0 = (double)st->seen;
	if (n0 < h->key_var)
		n0 = h->key_var;
	d = d < 0 ? -d : d;
	return d > LB_HOT_STEP_Z * n0 * share_rsd(h, n0, 1) / (double)total;
}

/* The share above which a key puts its home (weight w_h of the VIP's usable
 * W) over the cap: (c - 1) w_h / (W - w_h); none (infinity) when the home is
 * the VIP's only usable weight. */
static double
promotion_bound(const struct lb_hotkey *h, const struct lb_snapshot *s,
                const struct lb_hot_vip_info *vi, uint16_t home)
{
	double w = lb_hot_plan_weight(s, home);

	if (!(w > 0) || !(vi->sum_w > w))
		return HUGE_VAL;
	return h->p.epsilon * w / (vi->sum_w - w);
}

void
lb_hotkey_set_key_var(struct lb_hotkey *h, double var)
{
	h->key_var = var >= 1 ? var : 1;
}

double
lb_hotkey_vip_bound(const struct lb_snapshot *s, const struct lb_vip *v, double epsilon)
{
	double sum = 0, wmin = HUGE_VAL;

	for (uint32_t i = 0; i < s->n_backends; i++) {
		const struct lb_backend *b = &s->backends[i];

		if (b->vip_id != v->id || b->state != LB_BACKEND_ACTIVE || b->weight == 0)
			continue;
		sum += b->weight;
		if (b->weight < wmin)
			wmin = b->weight;
	}
	if (!(sum > wmin))
		return HUGE_VAL;
	return epsilon * wmin / (sum - wmin);
}

/*
 * Re-plan override pos if a replica is unusable (at once), a replica or its
 * host has been over the cap for LB_HOT_PERSIST_WINDOWS windows (unless the
 * last plan already could not hold it and the key's load has not grown by
 * LB_HOT_SHRINK_MARGIN since), an operator's r differs, the key grew past
 * its rung, or fewer replicas would hold the cap with the key's load times
 * LB_HOT_SHRINK_MARGIN (the dead band). With
 * only_broken (a change being published, not a window, or a window in which
 * the VIP had no packet), only an unusable replica re-plans, and no window is
 * counted.
 */
static bool
check_override(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
               const struct lb_hot_vip_info *vi, uint32_t pos, uint64_t window, bool only_broken)
{
	struct lb_hot_override *o = &h->ov[pos];
	struct lb_hot_ov_state *st = &h->st[pos];
	uint16_t list[LB_HOT_MAX_REPLICAS];
	struct lb_hot_plan_result res;
	bool broken = false, over = false, replan = false, fixed = o->pinned && st->pin_r != 0;
	bool shrink = false;
	double k = key_plan_load(o, st, vi), part = carried_part(h, pos);
	double a = h->p.ewma_alpha, a_slow = a / LB_HOT_SLOW_DIV;
	uint32_t r = st->pin_r;
	uint16_t n;

	for (uint16_t i = 0; i < o->n_replicas; i++) {
		uint16_t b = o->replicas[i];

		if (!lb_hot_plan_usable(h, b))
			broken = true;
		else if (lb_hot_plan_over(h, s, vi, b))
			over = true;
	}
	if (only_broken) {
		if (!broken)
			return false;
		replan = true;
	} else {
		/* Counted while pinned too: windows over the cap under an operator's r
		 * are measured overload once the pin goes. */
		st->over_windows = over ? st->over_windows + 1 : 0;
		if (broken)
			replan = true;
		else if (fixed)
			replan = (st->pin_r < vi->n ? st->pin_r : vi->n) != o->n_replicas;
		/* Loads shifted: over the cap for LB_HOT_PERSIST_WINDOWS windows.
		 * (A key that grew within a window, still arriving when it was
		 * promoted, is a step of its share, which restarts the smoothed
		 * share, and the climb below re-plans it at once.) */
		if (!replan && !fixed && st->over_windows >= LB_HOT_PERSIST_WINDOWS &&
		    !(st->capped && k < st->capped_load * LB_HOT_SHRINK_MARGIN))
			replan = true;
		if (!replan && !fixed) {
			/* A key grown past its rung's list re-plans up the ladder,
			 * judged on the smoothed share or on the slow share's upper
			 * bound, whichever is larger: near a rung's edge every
			 * instance then steps up, each on its own noise, to the rung
			 * where all end (the dead band keeps them there), and the
			 * slow share's noise is small enough that the band of shares
			 * in which only some do is narrow. */
			double kg = st->share_ewma;

			/* The slow share only while the smoothed one, at its upper
			 * bound, is not below it: a key leaving is not grown for. */
			if (st->share_ewma * share_bound(h, st, a) >= st->share_slow)
				kg = lb_hot_dmax(kg, st->share_slow * share_bound(h, st, a_slow));
			kg *= vi->sum_ewma;

			n = lb_hot_plan_choose(h, s, v, vi, o->key_hash, 0, kg, o->replicas,
			                       o->n_replicas, part, NULL, &res);
			if (n > o->n_replicas) {
				replan = true;
				k = kg;
			}
		}
		if (!replan && !fixed && o->low_windows == 0 && o->n_replicas > 1) {
			/* The dead band: shrink only if the key, LB_HOT_SHRINK_MARGIN
			 * times larger, would still fit in fewer replicas, both as
			 * measured lately (at the smoothed share's upper bound) and as
			 * the slow share's upper bound. */
			double ks = st->share_slow * share_bound(h, st, a_slow) * vi->sum_ewma;
			double ku = st->share_ewma * share_bound(h, st, a) * vi->sum_ewma;

			ks = lb_hot_dmax(lb_hot_dmax(k, ku), ks) * LB_HOT_SHRINK_MARGIN;
			n = lb_hot_plan_choose(h, s, v, vi, o->key_hash, 0, ks, o->replicas,
			                       o->n_replicas, part, NULL, &res);
			if (res.feasible && n < o->n_replicas) {
				replan = shrink = true;
				k = ks;
			}
		}
	}
	if (!replan)
		return false;
	n = 0;
	if (broken && r == 0 && !over) {
		/* A replica gone: the same count with its position substituted
		 * moves only its flows, if that still holds the cap. */
		n = lb_hot_plan_choose(h, s, v, vi, o->key_hash, o->n_replicas, k, o->replicas,
		                       o->n_replicas, part, list, &res);
		if (!res.feasible)
			n = 0;
	}
	if (n == 0)
		n = lb_hot_plan_choose(h, s, v, vi, o->key_hash, r, k, o->replicas, o->n_replicas,
		                       part, list, &res);
	if (n > 0 && n < o->n_replicas && !shrink && !broken && r == 0) {
		/* A re-plan for load moves the key off what is over, or up the
		 * ladder; only the dead band's judgement steps it down, unless
		 * the same count cannot hold the cap and the fewer can (what is
		 * over must then be left out). */
		uint16_t same[LB_HOT_MAX_REPLICAS];
		struct lb_hot_plan_result rs;
		uint16_t ns = lb_hot_plan_choose(h, s, v, vi, o->key_hash, o->n_replicas, k,
		                                 o->replicas, o->n_replicas, part, same, &rs);

		if (ns > 0 && (rs.feasible || !res.feasible)) {
			memcpy(list, same, ns * sizeof(list[0]));
			n = ns;
			res = rs;
		}
	}
	if (n == 0)
		return false;
	note_plan(h, pos, &res, k, window);
	if (same_list(list, n, o->replicas, o->n_replicas))
		return false;
	apply(h, s, pos, list, n, part);
	h->replans++;
	lb_hot_events_add(h, LB_HOT_EV_REPLAN, window, o);
	return true;
}

/* A new override for (v, key) planned with share p; -ENOSPC when full. */
static int
create(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
       const struct lb_hot_vip_info *vi, uint64_t key_hash, const struct lb_flow_key *key, double p,
       double p_plan, uint32_t r, uint64_t window)
{
	uint16_t list[LB_HOT_MAX_REPLICAS], home;
	struct lb_hot_plan_result res;
	struct lb_hot_override *o;
	struct lb_hot_ov_state *st;
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
	st->share_slow = p;
	/* What the home's EWMA holds of this key, as far as the share tells (all
	 * of this window's if the home's load restarted at a step). */
	home = lb_maglev_pick(s, v, key_hash);
	st->key_load = home < LB_HOT_N_IDS && h->stepped[home] == h->stamp ? p * vi->sum_raw
	                                                                   : p * vi->sum_ewma;
	st->fresh = true;
	n = lb_hot_plan_choose(h, s, v, vi, key_hash, r, p_plan * vi->sum_ewma, &home,
	                       home == LB_BACKEND_NONE ? 0 : 1, st->key_load, list, &res);
	if (n == 0)
		return -ENOENT;
	st->capped = !res.feasible;
	st->capped_load = p_plan * vi->sum_ewma;
	st->peak = res.peak;
	lb_hot_plan_shift_load(h, s, &home, home == LB_BACKEND_NONE ? 0 : 1, st->key_load, list, n,
	                       st->key_load);
	memcpy(o->replicas, list, n * sizeof(*list));
	o->n_replicas = n;
	h->n_ov++;
	index_insert(h, pos);
	return 0;
}

/* Whether override o's key fits back on its home this window: an idle VIP
 * says nothing against it; otherwise the upper bound of its smoothed share is
 * at most LB_HOT_DEMOTE_BAND of the promotion bound, and the share is below
 * the operator's threshold_low when one is set. */
static bool
goes_home(const struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v,
          const struct lb_hot_vip_info *vi, const struct lb_hot_override *o,
          const struct lb_hot_ov_state *st, double share, uint64_t total)
{
	uint16_t home;

	if (total == 0)
		return true;
	if (h->p.threshold_low > 0 && !(share < h->p.threshold_low))
		return false;
	home = lb_maglev_pick(s, v, o->key_hash);
	if (home == LB_BACKEND_NONE || !lb_hot_plan_usable(h, home))
		return false;
	return st->share_ewma * share_bound(h, st, h->p.ewma_alpha) <=
	       LB_HOT_DEMOTE_BAND * promotion_bound(h, s, vi, home);
}

/* --- the window ----------------------------------------------------------- */

/*
 * Candidate c of the window: a key that may not be spread is listed (report
 * VIPs, elephants); an overridden key's count is fed to its override; a new
 * key is promoted once the lower bound of its share takes its home over the
 * cap. @return whether an override was created.
 */
static bool
window_candidate(struct lb_hotkey *h, const struct lb_snapshot *s, const uint64_t *load,
                 const uint64_t *vip_total, const struct lb_hot_candidate *c, uint64_t window)
{
	const struct lb_hot_params *p = &h->p;
	const struct lb_vip *v = vip_by_id(h, s, c->vip_id);
	const struct lb_hot_vip_info *vi;
	struct lb_hot_ov_state *st;
	uint64_t total;
	uint16_t home;
	double share, bound;
	int pos;

	if (v == NULL || vip_total == NULL || (total = vip_total[v->id]) == 0)
		return false;
	share = (double)c->count / (double)total;
	/* Keys that may not be spread are listed, never overridden. */
	if (lb_hot_report_kind(v) != LB_HOT_KIND_SPREAD) {
		if (lb_hot_report_kind(v) != LB_HOT_KIND_OFF)
			lb_hot_report_feed(h, v, c, share > 1 ? 1 : share,
			                   p->threshold > 0 ? p->threshold
			                                    : lb_hotkey_vip_bound(s, v, p->epsilon),
			                   window);
		return false;
	}
	pos = index_find(h, v->id, c->key_hash);
	if (pos >= 0) {
		h->st[pos].seen += c->count;
		return false;
	}
	if (share > 1)
		share = 1;
	/* The operator's floor (0: auto, the bound alone). */
	if (share < p->threshold)
		return false;
	vi = lb_hot_plan_vip_info(h, s, v, load);
	if (vi->n < 2)
		return false; /* one backend: nothing to spread over */
	/* Promoted once the share's lower bound takes its home over the cap. */
	home = lb_maglev_pick(s, v, c->key_hash);
	if (home == LB_BACKEND_NONE || !lb_hot_plan_usable(h, home))
		return false;
	bound = promotion_bound(h, s, vi, home);
	if (!(share * share_floor(h, (double)c->count) > bound)) {
		/* Above the bound, but not resolvably: counted. */
		if (share > bound)
			h->unresolved++;
		return false;
	}
	if (create(h, s, v, vi, c->key_hash, &c->key, share,
	           share * share_floor(h, (double)c->count), 0, window) == -ENOSPC) {
		h->table_full++;
		return false;
	}
	st = &h->st[h->n_ov - 1];
	st->seen_slow = (double)c->count;
	h->promotions++;
	lb_hot_events_add(h, LB_HOT_EV_PROMOTE, window, &h->ov[h->n_ov - 1]);
	if (st->capped) {
		h->infeasible++;
		lb_hot_events_add(h, LB_HOT_EV_INFEASIBLE, window, &h->ov[h->n_ov - 1]);
		h->ev[(h->ev_next + LB_HOT_MAX_EVENTS - 1) % LB_HOT_MAX_EVENTS].peak = st->peak;
	}
	return true;
}

/* Override i's share this window (0 on an idle VIP) into its smoothed and slow
 * shares and its load estimate. */
static double
window_share(struct lb_hotkey *h, const struct lb_hot_vip_info *vi, uint32_t i, uint64_t total)
{
	const struct lb_hot_params *p = &h->p;
	struct lb_hot_override *o = &h->ov[i];
	struct lb_hot_ov_state *st = &h->st[i];
	double share = total ? (double)st->seen / (double)total : 0;

	if (share > 1)
		share = 1;
	o->share = share;
	if (total > 0) {
		/* Idle windows say nothing of the key's share. */
		double a = p->ewma_alpha / LB_HOT_SLOW_DIV;

		/* The key arrived or left: its smoothed share restarts from this
		 * window, as the loads do at a step. The slow share does not (a
		 * key leaving shrinks slowly, and one window taken for a step
		 * does not hold r up). */
		if (share_step(h, st, share, total))
			st->share_ewma = share;
		else
			st->share_ewma =
			        p->ewma_alpha * share + (1 - p->ewma_alpha) * st->share_ewma;
		st->share_slow = a * share + (1 - a) * st->share_slow;
		st->seen_slow = a * (double)st->seen + (1 - a) * st->seen_slow;
	}
	st->key_load = p->ewma_alpha * share * vi->sum_raw + (1 - p->ewma_alpha) * st->key_load;
	/* A replica whose load restarted at a step holds all of this window's
	 * part of the key, not a smoothed one. */
	for (uint16_t j = 0; j < o->n_replicas; j++)
		if (o->replicas[j] < LB_HOT_N_IDS && h->stepped[o->replicas[j]] == h->stamp) {
			st->key_load = share * vi->sum_raw;
			break;
		}
	return share;
}

/*
 * Override i after the window's candidates: dropped if its VIP no longer
 * spreads or has no usable backend, demoted once it fits home for
 * demote_windows windows, else checked for a re-plan. @return whether the
 * overrides changed.
 */
static bool
window_override(struct lb_hotkey *h, const struct lb_snapshot *s, const uint64_t *load,
                const uint64_t *vip_total, uint32_t i, uint64_t window)
{
	struct lb_hot_override *o = &h->ov[i];
	struct lb_hot_ov_state *st = &h->st[i];
	const struct lb_vip *v = vip_by_id(h, s, o->vip_id);
	const struct lb_hot_vip_info *vi;
	uint64_t total;
	double share;

	/* A VIP whose hot_mode no longer lets its keys be spread drops them. */
	if (v == NULL || lb_hot_report_kind(v) != LB_HOT_KIND_SPREAD) {
		lb_hot_events_add(h, LB_HOT_EV_DROP, window, o);
		h->dropped++;
		remove_at(h, s, NULL, i);
		return true;
	}
	vi = lb_hot_plan_vip_info(h, s, v, load);
	total = vip_total != NULL ? vip_total[v->id] : 0;
	share = window_share(h, vi, i, total);
	o->low_windows = goes_home(h, s, v, vi, o, st, share, total) ? o->low_windows + 1 : 0;
	if (!o->pinned && o->low_windows >= h->p.demote_windows) {
		lb_hot_events_add(h, LB_HOT_EV_DEMOTE, window, o);
		h->demotions++;
		remove_at(h, s, v, i);
		return true;
	}
	if (vi->n == 0) {
		lb_hot_events_add(h, LB_HOT_EV_DROP, window, o);
		h->dropped++;
		remove_at(h, s, v, i);
		return true;
	}
	/* An idle window says nothing of the key's load or of its replicas' (a
	 * drained instance): only a replica gone re-plans, so the list the
	 * peers share stays while no traffic comes. */
	return check_override(h, s, v, vi, i, window, total == 0);
}

bool
lb_hotkey_window(struct lb_hotkey *h, const struct lb_snapshot *s, const uint64_t *load,
                 const uint64_t *vip_total, const struct lb_hot_candidate *c, uint32_t n_c,
                 uint64_t window)
{
	bool changed = false;

	begin_call(h, s);
	h->last_window = window;
	lb_hot_plan_update_loads(h, s, load, vip_total);
	lb_hot_plan_hosts(h, s);
	for (uint32_t i = 0; i < h->n_ov; i++) {
		h->st[i].seen = 0;
		h->st[i].fresh = false;
	}
	/* Candidates: feed existing overrides, promote new hot keys. */
	for (uint32_t i = 0; i < n_c; i++)
		changed |= window_candidate(h, s, load, vip_total, &c[i], window);
	/* Existing overrides (not those made this window): share, demotion,
	 * re-planning. */
	for (uint32_t i = 0; i < h->n_ov; i++)
		if (!h->st[i].fresh)
			changed |= window_override(h, s, load, vip_total, i, window);
	compact(h);
	lb_hot_report_end(h, vip_total, s, vip_by_id, window);
	return changed;
}

void
lb_hotkey_window_missed(struct lb_hotkey *h, uint64_t window)
{
	h->last_window = window;
	h->windows_missed++;
}

/* Drop override pos (its VIP is gone, or has no usable backend left). */
static void
drop_at(struct lb_hotkey *h, const struct lb_snapshot *s, const struct lb_vip *v, uint32_t pos,
        uint64_t window)
{
	lb_hot_events_add(h, LB_HOT_EV_DROP, window, &h->ov[pos]);
	h->dropped++;
	remove_at(h, s, v, pos);
}

bool
lb_hotkey_revalidate(struct lb_hotkey *h, const struct lb_snapshot *s)
{
	bool changed = false;

	begin_call(h, s);
	for (uint32_t i = 0; i < h->n_ov; i++) {
		const struct lb_vip *v = vip_by_id(h, s, h->ov[i].vip_id);
		const struct lb_hot_vip_info *vi =
		        v != NULL ? lb_hot_plan_vip_info(h, s, v, NULL) : NULL;

		if (vi == NULL || vi->n == 0) {
			drop_at(h, s, v, i, h->last_window);
			changed = true;
			continue;
		}
		if (check_override(h, s, v, vi, i, h->last_window, true))
			changed = true;
	}
	compact(h);
	return changed;
}

bool
lb_hotkey_replica_in(const struct lb_snapshot *s, const struct lb_hot_override *o, uint16_t id)
{
	return id < s->n_backends && s->backends[id].gen != 0 &&
	       s->backends[id].vip_id == o->vip_id;
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
	const struct lb_hot_vip_info *vi;
	int pos, rc;

	begin_call(h, s);
	lb_hot_plan_hosts(h, s);
	h->last_window = window;
	v = vip_by_id(h, s, vip_id);
	if (v == NULL)
		return -ENOENT;
	if (lb_hot_report_kind(v) != LB_HOT_KIND_SPREAD)
		return -EPERM; /* its hot_mode (or an elephant key) forbids overrides */
	vi = lb_hot_plan_vip_info(h, s, v, NULL);
	if (vi->n == 0)
		return -ENOENT; /* no usable backend to pin to */
	pos = index_find(h, vip_id, key_hash);
	if (pos < 0) {
		/* No measured share yet: r = 0 asks for the computed count, which
		 * is then 1 until windows measure the key. */
		uint32_t want = r ? r : lb_hotkey_replicas(vi->n, 0, 1 + h->p.epsilon);

		rc = create(h, s, v, vi, key_hash, key, 0, 0, want, window);
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
	check_override(h, s, v, vi, (uint32_t)pos, window, false);
	lb_hot_events_add(h, LB_HOT_EV_PIN, window, &h->ov[pos]);
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
	lb_hot_events_add(h, LB_HOT_EV_UNPIN, h->last_window, &h->ov[pos]);
	return 0;
}
