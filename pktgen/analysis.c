/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-packet accounting (sg_an_record and what it calls run on the RX lcore:
 * no allocation, no locks) and the figures computed after the run. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

int
sg_an_init(struct sg_analysis *an, uint32_t nflows, const struct sg_flow *flows,
           const struct sg_vip *vips, uint16_t nvips, uint16_t gue_port, uint64_t hz,
           uint64_t iv_ticks, uint32_t max_iv)
{
	memset(an, 0, sizeof(*an));
	if (nflows == 0 || nvips == 0 || nvips > SG_MAX_VIPS || iv_ticks == 0 || max_iv == 0)
		return -EINVAL;
	an->nflows = nflows;
	an->flows = flows;
	an->gue_port = gue_port;
	an->hz = hz;
	an->iv_ticks = iv_ticks;
	an->max_iv = max_iv;
	an->nvips = nvips;
	an->vips = calloc(SG_MAX_VIPS, sizeof(*an->vips));
	an->fs = calloc(nflows, sizeof(*an->fs));
	an->series_be = calloc((size_t)max_iv * SG_MAX_BACKENDS, sizeof(uint32_t));
	an->series_vip = calloc((size_t)max_iv * SG_MAX_VIPS, sizeof(uint32_t));
	an->series_moved = calloc(max_iv, sizeof(uint32_t));
	an->series_lost = calloc(max_iv, sizeof(uint32_t));
	if (an->vips == NULL || an->fs == NULL || an->series_be == NULL || an->series_vip == NULL ||
	    an->series_moved == NULL || an->series_lost == NULL) {
		sg_an_free(an);
		return -ENOMEM;
	}
	memcpy(an->vips, vips, nvips * sizeof(*vips));
	for (uint32_t i = 0; i < nflows; i++)
		an->fs[i].backend = SG_NO_BACKEND;
	return 0;
}

void
sg_an_free(struct sg_analysis *an)
{
	free(an->vips);
	free(an->fs);
	free(an->series_be);
	free(an->series_vip);
	free(an->series_moved);
	free(an->series_lost);
	an->vips = NULL;
	an->fs = NULL;
	an->series_be = an->series_vip = an->series_moved = an->series_lost = NULL;
}

static inline uint32_t
addr_slot(const union lb_ip *a)
{
	uint64_t h = (a->q[0] ^ (a->q[1] * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return (uint32_t)(h >> 54) & (SG_BE_SLOTS - 1);
}

uint16_t
sg_an_backend(struct sg_analysis *an, const union lb_ip *a, uint8_t af)
{
	uint32_t s = addr_slot(a);

	for (uint32_t i = 0; i < SG_BE_SLOTS; i++, s = (s + 1) & (SG_BE_SLOTS - 1)) {
		uint16_t v = an->slot[s];

		if (v == 0) {
			if (an->nbackends >= SG_MAX_BACKENDS)
				return SG_NO_BACKEND;
			uint16_t b = an->nbackends++;
			an->be[b].addr = *a;
			an->be[b].af = af;
			an->slot[s] = (uint16_t)(b + 1);
			return b;
		}
		if (an->be[v - 1].af == af && an->be[v - 1].addr.q[0] == a->q[0] &&
		    an->be[v - 1].addr.q[1] == a->q[1])
			return (uint16_t)(v - 1);
	}
	return SG_NO_BACKEND;
}

double
sg_lat_bucket_mid(uint32_t b)
{
	if (b < (1u << SG_LAT_SUB_BITS))
		return b;
	uint32_t e = (b >> SG_LAT_SUB_BITS) + SG_LAT_SUB_BITS - 1; /* msb */
	uint32_t sub = b & ((1u << SG_LAT_SUB_BITS) - 1);
	double lo = ldexp((double)((1u << SG_LAT_SUB_BITS) + sub), (int)e - SG_LAT_SUB_BITS);
	double width = ldexp(1.0, (int)e - SG_LAT_SUB_BITS);
	return lo + width / 2;
}

static inline uint16_t
vip_of(const struct sg_analysis *an, const struct sg_decoded *d)
{
	if (an->flows != NULL)
		return an->flows[d->st.flow].vip;
	for (uint16_t v = 0; v < an->nvips; v++) {
		const struct sg_vip *x = &an->vips[v];
		if (x->af == d->inner.af && x->proto == d->inner.proto &&
		    (x->port == 0 || x->port == d->inner.dport) &&
		    memcmp(x->addr.b, d->inner.dst.b, x->af == LB_AF_INET ? 4 : 16) == 0)
			return v;
	}
	return 0;
}

static inline bool
same_tuple(const struct sg_flow *a, const struct sg_flow *b)
{
	return a->af == b->af && a->proto == b->proto && a->sport == b->sport &&
	       a->dport == b->dport && a->src.q[0] == b->src.q[0] && a->src.q[1] == b->src.q[1] &&
	       a->dst.q[0] == b->dst.q[0] && a->dst.q[1] == b->dst.q[1];
}

static inline void
record_hot(struct sg_analysis *an, const struct sg_stamp *st, uint16_t b, uint64_t now)
{
	uint32_t fid = st->flow;

	for (uint16_t h = 0; h < an->nhot; h++) {
		struct sg_hot_track *t = &an->hot[h];

		if (fid < t->fid_lo || fid >= t->fid_hi)
			continue;
		t->packets++;
		t->be_pkts[b]++;
		if (st->seq == 0 && st->tsc > t->be_new_tsc[b])
			t->be_new_tsc[b] = st->tsc;
		t->seen[b >> 6] |= 1ULL << (b & 63);
		if (t->first_rx_tsc == 0) {
			t->first_rx_tsc = now;
			t->first_backend = b;
		} else if (b != t->first_backend && t->spread_tsc == 0) {
			t->spread_tsc = now;
		}
		return;
	}
}

void
sg_an_record(struct sg_analysis *an, enum sg_dec res, const struct sg_decoded *d,
             uint32_t frame_len, uint64_t now, uint32_t iv)
{
	an->rx++;
	an->rx_bytes += frame_len;
	an->dec[res]++;
	if (res != SG_DEC_OK)
		return;
	uint32_t fid = d->st.flow;
	if (fid >= an->nflows) {
		an->unknown_flow++;
		return;
	}
	if (an->flows != NULL && !same_tuple(&an->flows[fid], &d->inner)) {
		an->mismatched++;
		return;
	}
	uint16_t b = sg_an_backend(an, &d->backend, d->backend_af);
	if (b == SG_NO_BACKEND) {
		an->no_backend_slot++;
		return;
	}
	an->decoded++;
	uint16_t v = vip_of(an, d);
	an->be_pkts[b]++;
	an->vip_be_pkts[v][b]++;
	an->vip_pkts[v]++;
	an->series_be[(size_t)iv * SG_MAX_BACKENDS + b]++;
	an->series_vip[(size_t)iv * SG_MAX_VIPS + v]++;
	if (iv >= an->n_iv)
		an->n_iv = iv + 1;

	struct sg_flow_rx *f = &an->fs[fid];
	uint32_t s = d->st.seq;
	f->rx++;
	if (f->rx == 1 || s >= f->top) {
		uint32_t shift = s - f->top + 1;
		if (f->rx > 1 && shift > 1) {
			an->gaps += shift - 1;
			an->series_lost[iv] += shift - 1;
		} else if (f->rx == 1 && s > 0) {
			an->gaps += s;
			an->series_lost[iv] += s;
		}
		f->win = shift >= 64 ? 0 : f->win << shift;
		f->win |= 1;
		f->top = s + 1;
	} else {
		uint32_t k = f->top - 1 - s;
		if (k >= 64) {
			an->late++; /* too old to tell: counted once, as a late arrival */
		} else if (f->win & (1ULL << k)) {
			f->dup++;
			an->dup++;
		} else {
			f->win |= 1ULL << k;
			an->reordered++;
		}
	}
	if (f->backend != b) {
		if (f->backend != SG_NO_BACKEND) {
			if (!f->moved) {
				f->moved = 1;
				an->moved_flows++;
				an->moved_from[f->backend]++;
			}
			an->moves++;
			an->series_moved[iv]++;
		}
		f->backend = b;
	}
	if (an->latency) {
		if (now >= d->st.tsc) {
			uint64_t l = now - d->st.tsc;
			an->lat[sg_lat_bucket(l)]++;
			an->lat_n++;
			an->lat_sum += (double)l;
			if (l > an->lat_max)
				an->lat_max = l;
		} else {
			an->lat_neg++;
		}
	}
	if (an->nhot != 0 && fid >= an->hot[0].fid_lo)
		record_hot(an, &d->st, b, now);
}

double
sg_fig_peak_avg(const double *load, const double *expected, uint32_t n)
{
	double tl = 0, te = 0, peak = 0;
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!(expected[i] > 0))
			continue;
		tl += load[i];
		te += expected[i];
		k++;
	}
	if (k == 0 || !(tl > 0))
		return NAN;
	/* Scale expectations to the packets those backends actually carried, so a
	 * backend outside the expected set does not shift the average. */
	for (uint32_t i = 0; i < n; i++) {
		if (!(expected[i] > 0))
			continue;
		double r = load[i] / (expected[i] * tl / te);
		if (r > peak)
			peak = r;
	}
	return peak;
}

double
sg_fig_jain(const double *load, const double *expected, uint32_t n)
{
	double s = 0, s2 = 0;
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!(expected[i] > 0))
			continue;
		double x = load[i] / expected[i];
		s += x;
		s2 += x * x;
		k++;
	}
	if (k == 0 || !(s2 > 0))
		return NAN;
	return s * s / (k * s2);
}

double
sg_fig_percentile(const uint64_t *hist, uint32_t n, double q)
{
	uint64_t total = 0, acc = 0, rank;

	for (uint32_t i = 0; i < n; i++)
		total += hist[i];
	if (total == 0)
		return NAN;
	/* Nearest rank: the smallest value with at least q of the samples at or below it. */
	rank = (uint64_t)ceil(q * (double)total);
	if (rank == 0)
		rank = 1;
	for (uint32_t i = 0; i < n; i++) {
		acc += hist[i];
		if (acc >= rank)
			return sg_lat_bucket_mid(i);
	}
	return sg_lat_bucket_mid(n - 1);
}

void
sg_an_expected(const struct sg_analysis *an, const double *vip_pkts, double *expected)
{
	for (uint16_t b = 0; b < an->nbackends; b++)
		expected[b] = 0;
	for (uint16_t v = 0; v < an->nvips; v++) {
		const struct sg_vip *x = &an->vips[v];
		double tw = 0;
		uint32_t nseen = 0;

		if (!(vip_pkts[v] > 0))
			continue;
		if (x->configured) {
			for (uint16_t b = 0; b < an->nbackends; b++)
				if (x->weight[b] > 0)
					tw += x->weight[b];
		}
		if (tw > 0) {
			for (uint16_t b = 0; b < an->nbackends; b++)
				if (x->weight[b] > 0)
					expected[b] += vip_pkts[v] * x->weight[b] / tw;
			continue;
		}
		for (uint16_t b = 0; b < an->nbackends; b++)
			nseen += an->vip_be_pkts[v][b] > 0;
		for (uint16_t b = 0; b < an->nbackends; b++)
			if (an->vip_be_pkts[v][b] > 0)
				expected[b] += vip_pkts[v] / nseen;
	}
}

void
sg_an_flow_summary(const struct sg_analysis *an, const uint32_t *sent, struct sg_flow_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < an->nflows; i++) {
		const struct sg_flow_rx *f = &an->fs[i];
		uint64_t n = sent != NULL ? sent[i] : f->top;
		uint64_t uniq = f->rx - f->dup;

		if (n > 0)
			s->flows_sent++;
		s->sent += n;
		if (f->rx == 0) {
			if (n > 0) {
				s->flows_with_loss++;
				s->lost += n;
			}
			continue;
		}
		s->flows_seen++;
		s->unique += uniq;
		s->dup += f->dup;
		if (uniq < n) {
			s->lost += n - uniq;
			s->flows_with_loss++;
		}
		if (f->dup)
			s->flows_with_dup++;
		if (f->moved)
			s->flows_moved++;
		else
			s->flows_single_backend++;
	}
	s->reordered = an->reordered;
	s->late = an->late;
}

void
sg_an_interval_balance(const struct sg_analysis *an, uint32_t iv, double *peak, double *jain)
{
	double vp[SG_MAX_VIPS], load[SG_MAX_BACKENDS], exp_[SG_MAX_BACKENDS];

	for (uint16_t v = 0; v < an->nvips; v++)
		vp[v] = an->series_vip[(size_t)iv * SG_MAX_VIPS + v];
	for (uint16_t b = 0; b < an->nbackends; b++)
		load[b] = an->series_be[(size_t)iv * SG_MAX_BACKENDS + b];
	sg_an_expected(an, vp, exp_);
	*peak = sg_fig_peak_avg(load, exp_, an->nbackends);
	*jain = sg_fig_jain(load, exp_, an->nbackends);
}
