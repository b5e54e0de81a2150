/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key controller's load bookkeeping: each backend's EWMA load and
 * noise folded in per window (a step in the traffic mix restarts them), the
 * per-host figures over every VIP, and the key's load moved at once when a
 * plan moves the key. hot_plan.c plans on these; docs/hot-keys.md has the math.
 */
#include <string.h>

#include "control/hot/hot_plan.h"

/*
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

/* --- hosts ---------------------------------------------------------------- */

/* A host's slot in the host table: its address hashed (local only; no other
 * instance depends on these constants). */
static uint32_t
host_slot_of(const struct lb_backend *b)
{
	uint64_t x = lb_hot_addr_hash(b, 0xff51afd7ed558ccdULL, 29);

	return (uint32_t)(x >> 40) & (LB_HOT_HOST_SLOTS - 1);
}

static bool
same_host(const struct lb_backend *a, const struct lb_backend *b)
{
	return a->af == b->af && memcmp(&a->addr, &b->addr, sizeof(a->addr)) == 0;
}

void
lb_hot_plan_hosts(struct lb_hotkey *h, const struct lb_snapshot *s)
{
	uint32_t n = s->n_backends < LB_HOT_N_IDS ? s->n_backends : LB_HOT_N_IDS;

	memset(h->vip_sum, 0, sizeof(h->vip_sum));
	memset(h->vip_w, 0, sizeof(h->vip_w));
	for (uint32_t id = 0; id < n; id++) {
		const struct lb_backend *b = &s->backends[id];

		if (!lb_hot_plan_registry_usable(s, (uint16_t)id) || b->vip_id >= LB_MAX_VIPS)
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
		if (lb_hot_plan_registry_usable(s, (uint16_t)id) && b->vip_id < LB_MAX_VIPS &&
		    h->vip_w[b->vip_id] > 0)
			h->host_fair[rep] +=
			        b->weight * h->vip_sum[b->vip_id] / h->vip_w[b->vip_id];
	}
}

/* --- loads ---------------------------------------------------------------- */

void
lb_hot_plan_shift_load(struct lb_hotkey *h, const struct lb_snapshot *s, const uint16_t *from,
                       uint16_t n_from, double from_load, const uint16_t *to, uint16_t n_to,
                       double key_load)
{
	double w_from = lb_hot_plan_carrier_weight(h, s, from, n_from), w_to = 0;

	for (uint16_t i = 0; i < n_to; i++)
		w_to += lb_hot_plan_weight(s, to[i]);
	for (uint16_t i = 0; i < n_from && w_from > 0; i++)
		if (from[i] < LB_HOT_N_IDS) {
			double part = from_load * lb_hot_plan_weight(s, from[i]) / w_from;
			double d = h->load[from[i]] < part ? h->load[from[i]] : part;

			h->load[from[i]] -= d;
			h->host_load[h->host[from[i]]] -= d;
		}
	for (uint16_t i = 0; i < n_to && w_to > 0; i++)
		if (to[i] < LB_HOT_N_IDS) {
			double part = key_load * lb_hot_plan_weight(s, to[i]) / w_to;

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

		if (lb_hot_plan_registry_usable(s, (uint16_t)id) && b->vip_id < LB_MAX_VIPS)
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
			h->var_floor[id] =
			        a * lb_hot_plan_window_floor(h, b, x) + (1 - a) * h->var_floor[id];
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
