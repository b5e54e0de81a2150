/* SPDX-License-Identifier: BSD-3-Clause */
/* Output formats. Everything is derived from struct sg_run after the run. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report.h"

void
sg_addr_str(const union lb_ip *a, uint8_t af, char *buf, size_t len)
{
	if (inet_ntop(af == LB_AF_INET ? AF_INET : AF_INET6, a->b, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

static double
ticks_us(const struct sg_analysis *an, double t)
{
	return t * 1e6 / (double)an->hz;
}

/* Figures over the whole run. */
struct totals {
	double load[SG_MAX_BACKENDS], expected[SG_MAX_BACKENDS];
	double peak, jain, iv_peak_max, iv_peak_mean;
	uint32_t iv_counted;
	struct sg_flow_summary fs;
	double p50, p90, p99, p999, lat_max, lat_mean;
};

static void
totals(const struct sg_run *r, struct totals *t)
{
	const struct sg_analysis *an = r->an;
	double vp[SG_MAX_VIPS];

	memset(t, 0, sizeof(*t));
	for (uint16_t v = 0; v < an->nvips; v++)
		vp[v] = (double)an->vip_pkts[v];
	for (uint16_t b = 0; b < an->nbackends; b++)
		t->load[b] = (double)an->be_pkts[b];
	sg_an_expected(an, vp, t->expected);
	t->peak = sg_fig_peak_avg(t->load, t->expected, an->nbackends);
	t->jain = sg_fig_jain(t->load, t->expected, an->nbackends);
	/* Per interval: only intervals with traffic count. */
	for (uint32_t iv = 0; iv < an->n_iv; iv++) {
		double p, j;
		sg_an_interval_balance(an, iv, &p, &j);
		if (isnan(p))
			continue;
		if (p > t->iv_peak_max)
			t->iv_peak_max = p;
		t->iv_peak_mean += p;
		t->iv_counted++;
	}
	if (t->iv_counted)
		t->iv_peak_mean /= t->iv_counted;
	sg_an_flow_summary(an, r->sent, &t->fs);
	t->p50 = ticks_us(an, sg_fig_percentile(an->lat, SG_LAT_BUCKETS, 0.50));
	t->p90 = ticks_us(an, sg_fig_percentile(an->lat, SG_LAT_BUCKETS, 0.90));
	t->p99 = ticks_us(an, sg_fig_percentile(an->lat, SG_LAT_BUCKETS, 0.99));
	t->p999 = ticks_us(an, sg_fig_percentile(an->lat, SG_LAT_BUCKETS, 0.999));
	t->lat_max = an->lat_n ? ticks_us(an, (double)an->lat_max) : NAN;
	t->lat_mean = an->lat_n ? ticks_us(an, an->lat_sum / (double)an->lat_n) : NAN;
}

/* Hot-key figures of one phase. */
struct hot_fig {
	bool present, promoted;
	double delay_ms;     /* phase start -> the key at a second backend */
	double cap_delay_ms; /* phase start -> end of the first interval under the cap; NAN never */
	double peak_first, peak_max,
	        peak_last; /* first, worst and last full interval of the phase */
	uint32_t backends;
	uint64_t packets, phase_pkts;
};

static void
hot_figures(const struct sg_run *r, uint16_t p, struct hot_fig *h)
{
	const struct sg_analysis *an = r->an;
	const struct sg_phase *ph = &r->o->phases[p];
	const struct sg_hot_track *t = NULL;
	double ivs = (double)an->iv_ticks / (double)an->hz;

	memset(h, 0, sizeof(*h));
	h->delay_ms = h->cap_delay_ms = h->peak_first = h->peak_last = NAN;
	for (uint16_t i = 0; i < an->nhot; i++)
		if (an->hot[i].fid_lo == ph->hot.fid_lo && ph->hot.kind != 0)
			t = &an->hot[i];
	if (t == NULL)
		return;
	h->present = true;
	h->packets = t->packets;
	for (int w = 0; w < SG_MAX_BACKENDS / 64; w++)
		h->backends += (uint32_t)__builtin_popcountll(t->seen[w]);
	if (t->spread_tsc) {
		h->promoted = true;
		h->delay_ms = (double)(t->spread_tsc - t->start_tsc) * 1e3 / (double)an->hz;
	}
	uint32_t first = (uint32_t)ceil(ph->start / ivs - 1e-9);
	uint32_t last = (uint32_t)floor(ph->end / ivs + 1e-9); /* exclusive */
	for (uint32_t iv = first; iv < last && iv < an->n_iv; iv++) {
		double pk, j;
		sg_an_interval_balance(an, iv, &pk, &j);
		for (uint16_t v = 0; v < an->nvips; v++)
			h->phase_pkts += an->series_vip[(size_t)iv * SG_MAX_VIPS + v];
		if (isnan(pk))
			continue;
		if (isnan(h->peak_first))
			h->peak_first = pk;
		if (pk > h->peak_max)
			h->peak_max = pk;
		h->peak_last = pk;
		if (isnan(h->cap_delay_ms) && pk <= r->o->cap)
			h->cap_delay_ms = ((iv + 1) * ivs - ph->start) * 1e3;
	}
}

/* The key's packets per backend, with the send time (seconds from the run's
 * start) of the latest first packet of one of its connections there. */
static json_t *
hot_per_backend(const struct sg_analysis *an, const struct sg_phase *ph)
{
	json_t *a = json_array();
	char buf[64];

	for (uint16_t i = 0; i < an->nhot; i++) {
		const struct sg_hot_track *t = &an->hot[i];

		if (t->fid_lo != ph->hot.fid_lo)
			continue;
		for (uint16_t b = 0; b < an->nbackends; b++) {
			if (t->be_pkts[b] == 0)
				continue;
			json_t *e = json_object();
			sg_addr_str(&an->be[b].addr, an->be[b].af, buf, sizeof(buf));
			json_object_set_new(e, "address", json_string(buf));
			json_object_set_new(e, "packets", json_integer((json_int_t)t->be_pkts[b]));
			json_object_set_new(
			        e, "last_new_flow_s",
			        t->be_new_tsc[b] > an->t0
			                ? json_real((double)(t->be_new_tsc[b] - an->t0) /
			                            (double)an->hz)
			                : json_null());
			json_array_append_new(a, e);
		}
		break;
	}
	return a;
}

static double
phase_pps(const struct sg_phase_result *pr)
{
	double d = pr->t_end - pr->t_start;
	return d > 0 ? (double)pr->sent / d : NAN;
}

static const char *const dec_names[SG_DEC_N] = {"ok", "not_encap", "truncated", "no_stamp"};

void
sg_report_table(FILE *f, const struct sg_run *r)
{
	const struct sg_analysis *an = r->an;
	const struct sg_opts *o = r->o;
	struct totals t;
	char buf[64];

	totals(r, &t);
	fprintf(f, "\nspillgen: %.2f s, %s, %s\n", r->elapsed, r->wiring, r->lcores);
	if (!o->analyse_only) {
		fprintf(f, "\n%-12s %9s %9s %12s %12s %8s %10s\n", "phase", "start_s", "end_s",
		        "target_pps", "achieved", "error%", "skipped");
		for (uint16_t p = 0; p < o->nphases; p++) {
			const struct sg_phase *ph = &o->phases[p];
			double a = phase_pps(&r->ph[p]);
			char tgt[24], er[16];
			if (ph->pps) {
				snprintf(tgt, sizeof(tgt), "%llu", (unsigned long long)ph->pps);
				snprintf(er, sizeof(er), "%+.3f",
				         (a - (double)ph->pps) / (double)ph->pps * 100);
			} else {
				snprintf(tgt, sizeof(tgt), "max");
				snprintf(er, sizeof(er), "-");
			}
			fprintf(f, "%-12s %9.2f %9.2f %12s %12.0f %8s %10llu\n", ph->name,
			        ph->start, ph->end, tgt, a, er,
			        (unsigned long long)r->ph[p].skipped);
		}
		fprintf(f, "\nsent %llu packets (%llu bytes), %u flows\n",
		        (unsigned long long)r->tx_pkts, (unsigned long long)r->tx_bytes, o->flows);
	}
	fprintf(f, "received %llu packets: %llu decoded", (unsigned long long)an->rx,
	        (unsigned long long)an->decoded);
	for (int d = 1; d < SG_DEC_N; d++)
		if (an->dec[d])
			fprintf(f, ", %llu %s", (unsigned long long)an->dec[d], dec_names[d]);
	if (an->unknown_flow || an->mismatched)
		fprintf(f, ", %llu unknown flow, %llu 5-tuple mismatch",
		        (unsigned long long)an->unknown_flow, (unsigned long long)an->mismatched);
	fprintf(f, "\n\n%-40s %12s %8s %9s %9s\n", "backend", "packets", "share", "expected",
	        "rel_load");
	double tot = 0;
	for (uint16_t b = 0; b < an->nbackends; b++)
		tot += t.load[b];
	for (uint16_t b = 0; b < an->nbackends; b++) {
		double te = 0;
		for (uint16_t k = 0; k < an->nbackends; k++)
			te += t.expected[k];
		sg_addr_str(&an->be[b].addr, an->be[b].af, buf, sizeof(buf));
		fprintf(f, "%-40s %12llu %7.2f%% %8.2f%% %9.3f\n", buf,
		        (unsigned long long)an->be_pkts[b], tot > 0 ? t.load[b] / tot * 100 : 0,
		        te > 0 ? t.expected[b] / te * 100 : 0,
		        t.expected[b] > 0 ? t.load[b] / (t.expected[b] * tot / te) : NAN);
	}
	fprintf(f,
	        "\npeak/avg %.3f  jain %.4f  (per %u ms interval: worst peak/avg %.3f, mean "
	        "%.3f)\n",
	        t.peak, t.jain, o->interval_ms, t.iv_peak_max, t.iv_peak_mean);
	fprintf(f,
	        "flows: %llu sent, %llu seen, %llu on one backend, %llu at more than one "
	        "(%llu moves)\n",
	        (unsigned long long)t.fs.flows_sent, (unsigned long long)t.fs.flows_seen,
	        (unsigned long long)t.fs.flows_single_backend, (unsigned long long)t.fs.flows_moved,
	        (unsigned long long)an->moves);
	fprintf(f,
	        "loss: %llu packets (%.4f%%) in %llu flows; duplicates %llu; reordered %llu; "
	        "late %llu\n",
	        (unsigned long long)t.fs.lost,
	        t.fs.sent ? (double)t.fs.lost / (double)t.fs.sent * 100 : 0.0,
	        (unsigned long long)t.fs.flows_with_loss, (unsigned long long)t.fs.dup,
	        (unsigned long long)t.fs.reordered, (unsigned long long)t.fs.late);
	if (an->latency && an->lat_n)
		fprintf(f,
		        "latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean "
		        "%.1f\n",
		        t.p50, t.p90, t.p99, t.p999, t.lat_max, t.lat_mean);
	for (uint16_t p = 0; p < o->nphases; p++) {
		struct hot_fig h;
		hot_figures(r, p, &h);
		if (!h.present)
			continue;
		fprintf(f, "hot key in %s (%s, share %.2f, %llu packets at %u backend(s)): ",
		        o->phases[p].name,
		        o->phases[p].hot.kind == SG_HOT_SRC_IP ? "src_ip" : "5tuple",
		        o->phases[p].hot.share, (unsigned long long)h.packets, h.backends);
		if (h.promoted)
			fprintf(f, "reached a second backend after %.1f ms", h.delay_ms);
		else
			fprintf(f, "not promoted (one backend throughout)");
		fprintf(f, "; peak/avg first %.2f, worst %.2f, last %.2f; ", h.peak_first,
		        h.peak_max, h.peak_last);
		if (isnan(h.cap_delay_ms))
			fprintf(f, "never under cap %.2f\n", o->cap);
		else
			fprintf(f, "under cap %.2f after %.0f ms\n", o->cap, h.cap_delay_ms);
	}
	if (o->svg)
		fprintf(f, "plot: %s\n", o->svg);
}

static json_t *
jnum(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

int
sg_report_json(const char *path, const struct sg_run *r)
{
	const struct sg_analysis *an = r->an;
	const struct sg_opts *o = r->o;
	struct totals t;
	char buf[64];
	json_t *root = json_object(), *a, *x;
	int rc;

	totals(r, &t);
	json_object_set_new(root, "elapsed_s", json_real(r->elapsed));
	json_object_set_new(root, "wiring", json_string(r->wiring));
	json_object_set_new(root, "lcores", json_string(r->lcores));
	x = json_object();
	json_object_set_new(x, "flows", json_integer(o->flows));
	json_object_set_new(x, "zipf", json_real(o->zipf));
	json_object_set_new(x, "size",
	                    o->size == SG_SIZE_IMIX ? json_string("imix") : json_integer(o->size));
	json_object_set_new(x, "interval_ms", json_integer(o->interval_ms));
	json_object_set_new(x, "cap", json_real(o->cap));
	json_object_set_new(x, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(x, "analyse_only", json_boolean(o->analyse_only));
	a = json_array();
	for (uint16_t v = 0; v < o->nvips; v++) {
		const struct sg_vip *vp = &o->vips[v];
		char s[96];
		sg_addr_str(&vp->addr, vp->af, buf, sizeof(buf));
		snprintf(s, sizeof(s), vp->af == LB_AF_INET ? "%s:%u/%s" : "[%s]:%u/%s", buf,
		         vp->port, vp->proto == SG_PROTO_TCP ? "tcp" : "udp");
		json_array_append_new(a, json_string(s));
	}
	json_object_set_new(x, "vips", a);
	json_object_set_new(root, "config", x);

	x = json_object();
	json_object_set_new(x, "packets", json_integer((json_int_t)r->tx_pkts));
	json_object_set_new(x, "bytes", json_integer((json_int_t)r->tx_bytes));
	json_object_set_new(x, "unsent", json_integer((json_int_t)r->tx_unsent));
	json_object_set_new(x, "alloc_failures", json_integer((json_int_t)r->alloc_fail));
	a = json_array();
	for (uint16_t p = 0; p < o->nphases && !o->analyse_only; p++) {
		const struct sg_phase *ph = &o->phases[p];
		json_t *e = json_object();
		double ach = phase_pps(&r->ph[p]);
		json_object_set_new(e, "name", json_string(ph->name));
		json_object_set_new(e, "start_s", json_real(ph->start));
		json_object_set_new(e, "end_s", json_real(ph->end));
		json_object_set_new(e, "target_pps",
		                    ph->pps ? json_integer((json_int_t)ph->pps) : json_null());
		json_object_set_new(e, "packets", json_integer((json_int_t)r->ph[p].sent));
		json_object_set_new(e, "skipped", json_integer((json_int_t)r->ph[p].skipped));
		json_object_set_new(e, "achieved_pps", jnum(ach));
		json_object_set_new(e, "rate_error_pct",
		                    ph->pps ? jnum((ach - (double)ph->pps) / (double)ph->pps * 100)
		                            : json_null());
		json_array_append_new(a, e);
	}
	json_object_set_new(x, "phases", a);
	json_object_set_new(root, "tx", x);

	x = json_object();
	json_object_set_new(x, "packets", json_integer((json_int_t)an->rx));
	json_object_set_new(x, "bytes", json_integer((json_int_t)an->rx_bytes));
	json_object_set_new(x, "decoded", json_integer((json_int_t)an->decoded));
	for (int d = 1; d < SG_DEC_N; d++)
		json_object_set_new(x, dec_names[d], json_integer((json_int_t)an->dec[d]));
	json_object_set_new(x, "unknown_flow", json_integer((json_int_t)an->unknown_flow));
	json_object_set_new(x, "tuple_mismatch", json_integer((json_int_t)an->mismatched));
	json_object_set_new(root, "rx", x);

	a = json_array();
	double tot = 0, te = 0;
	for (uint16_t b = 0; b < an->nbackends; b++) {
		tot += t.load[b];
		te += t.expected[b];
	}
	for (uint16_t b = 0; b < an->nbackends; b++) {
		json_t *e = json_object();
		sg_addr_str(&an->be[b].addr, an->be[b].af, buf, sizeof(buf));
		json_object_set_new(e, "address", json_string(buf));
		json_object_set_new(e, "packets", json_integer((json_int_t)an->be_pkts[b]));
		json_object_set_new(e, "share", jnum(tot > 0 ? t.load[b] / tot : NAN));
		json_object_set_new(e, "expected_share", jnum(te > 0 ? t.expected[b] / te : NAN));
		json_object_set_new(
		        e, "relative_load",
		        jnum(t.expected[b] > 0 ? t.load[b] / (t.expected[b] * tot / te) : NAN));
		json_array_append_new(a, e);
	}
	json_object_set_new(root, "backends", a);

	x = json_object();
	json_object_set_new(x, "peak_to_avg", jnum(t.peak));
	json_object_set_new(x, "jain", jnum(t.jain));
	json_object_set_new(x, "interval_peak_to_avg_max", jnum(t.iv_peak_max));
	json_object_set_new(x, "interval_peak_to_avg_mean", jnum(t.iv_peak_mean));
	json_object_set_new(root, "balance", x);

	x = json_object();
	json_object_set_new(x, "sent", json_integer((json_int_t)t.fs.flows_sent));
	json_object_set_new(x, "seen", json_integer((json_int_t)t.fs.flows_seen));
	json_object_set_new(x, "single_backend",
	                    json_integer((json_int_t)t.fs.flows_single_backend));
	json_object_set_new(x, "multi_backend", json_integer((json_int_t)t.fs.flows_moved));
	json_object_set_new(x, "moves", json_integer((json_int_t)an->moves));
	json_t *mf = json_object();
	for (uint16_t b = 0; b < an->nbackends; b++) {
		if (an->moved_from[b] == 0)
			continue;
		sg_addr_str(&an->be[b].addr, an->be[b].af, buf, sizeof(buf));
		json_object_set_new(mf, buf, json_integer((json_int_t)an->moved_from[b]));
	}
	json_object_set_new(x, "moved_from", mf);
	json_object_set_new(x, "with_loss", json_integer((json_int_t)t.fs.flows_with_loss));
	json_object_set_new(x, "with_duplicates", json_integer((json_int_t)t.fs.flows_with_dup));
	json_object_set_new(root, "flows", x);

	x = json_object();
	json_object_set_new(x, "sent", json_integer((json_int_t)t.fs.sent));
	json_object_set_new(x, "received_unique", json_integer((json_int_t)t.fs.unique));
	json_object_set_new(x, "lost", json_integer((json_int_t)t.fs.lost));
	json_object_set_new(x, "loss_pct",
	                    jnum(t.fs.sent ? (double)t.fs.lost / (double)t.fs.sent * 100 : 0));
	json_object_set_new(x, "duplicates", json_integer((json_int_t)t.fs.dup));
	json_object_set_new(x, "reordered", json_integer((json_int_t)t.fs.reordered));
	json_object_set_new(x, "late", json_integer((json_int_t)t.fs.late));
	json_object_set_new(root, "packets", x);

	x = json_object();
	json_object_set_new(x, "samples", json_integer((json_int_t)an->lat_n));
	json_object_set_new(x, "p50", jnum(t.p50));
	json_object_set_new(x, "p90", jnum(t.p90));
	json_object_set_new(x, "p99", jnum(t.p99));
	json_object_set_new(x, "p999", jnum(t.p999));
	json_object_set_new(x, "max", jnum(t.lat_max));
	json_object_set_new(x, "mean", jnum(t.lat_mean));
	json_object_set_new(root, "latency_us", x);

	a = json_array();
	for (uint16_t p = 0; p < o->nphases; p++) {
		struct hot_fig h;
		hot_figures(r, p, &h);
		if (!h.present)
			continue;
		json_t *e = json_object();
		json_object_set_new(e, "phase", json_string(o->phases[p].name));
		json_object_set_new(
		        e, "key",
		        json_string(o->phases[p].hot.kind == SG_HOT_SRC_IP ? "src_ip" : "5tuple"));
		json_object_set_new(e, "share", json_real(o->phases[p].hot.share));
		json_object_set_new(e, "packets", json_integer((json_int_t)h.packets));
		json_object_set_new(
		        e, "measured_share",
		        jnum(h.phase_pkts ? (double)h.packets / (double)h.phase_pkts : NAN));
		json_object_set_new(e, "backends", json_integer(h.backends));
		json_object_set_new(e, "promoted", json_boolean(h.promoted));
		json_object_set_new(e, "promotion_delay_ms", jnum(h.delay_ms));
		json_object_set_new(e, "cap", json_real(o->cap));
		json_object_set_new(e, "under_cap_delay_ms", jnum(h.cap_delay_ms));
		json_object_set_new(e, "peak_to_avg_first", jnum(h.peak_first));
		json_object_set_new(e, "peak_to_avg_max", jnum(h.peak_max));
		json_object_set_new(e, "peak_to_avg_last", jnum(h.peak_last));
		json_object_set_new(e, "per_backend", hot_per_backend(an, &o->phases[p]));
		json_array_append_new(a, e);
	}
	json_object_set_new(root, "hot_keys", a);

	if (strcmp(path, "-") == 0) {
		rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
		fputc('\n', stdout);
	} else {
		rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	}
	json_decref(root);
	return rc == 0 ? 0 : -EIO;
}

int
sg_report_csv(const char *path, const struct sg_run *r)
{
	const struct sg_analysis *an = r->an;
	double ivs = (double)an->iv_ticks / (double)an->hz;
	char buf[64];
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -errno;
	fprintf(f, "t_s,phase,tx_pps,backend,pps,peak_to_avg,jain,moved_flows,seq_gaps\n");
	for (uint32_t iv = 0; iv < an->n_iv; iv++) {
		double t = iv * ivs, pk, j;
		const char *phase = "";
		for (uint16_t p = 0; p < r->o->nphases; p++)
			if (t + 1e-9 >= r->o->phases[p].start && t < r->o->phases[p].end)
				phase = r->o->phases[p].name;
		sg_an_interval_balance(an, iv, &pk, &j);
		for (uint16_t b = 0; b < an->nbackends; b++) {
			sg_addr_str(&an->be[b].addr, an->be[b].af, buf, sizeof(buf));
			fprintf(f, "%.3f,%s,%.0f,%s,%.0f,%.4f,%.4f,%u,%u\n", t, phase,
			        r->tx_series ? r->tx_series[iv] / ivs : 0.0, buf,
			        an->series_be[(size_t)iv * SG_MAX_BACKENDS + b] / ivs, pk, j,
			        an->series_moved[iv], an->series_lost[iv]);
		}
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

/* Colours for up to 10 backends, then they repeat (Tableau 10). */
static const char *const colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

int
sg_report_svg(const char *path, const struct sg_run *r)
{
	const struct sg_analysis *an = r->an;
	const struct sg_opts *o = r->o;
	double ivs = (double)an->iv_ticks / (double)an->hz;
	const double W = 960, H = 540, L = 70, R = 200, T = 40, B = 50;
	double pw = W - L - R, ph = H - T - B, ymax = 1, tmax;
	char buf[64];
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -errno;
	tmax = an->n_iv * ivs;
	if (tmax <= 0)
		tmax = 1;
	for (uint32_t iv = 0; iv < an->n_iv; iv++)
		for (uint16_t b = 0; b < an->nbackends; b++) {
			double v = an->series_be[(size_t)iv * SG_MAX_BACKENDS + b] / ivs;
			if (v > ymax)
				ymax = v;
		}
	/* A round upper bound: 1, 2 or 5 times a power of ten. */
	double e = pow(10, floor(log10(ymax))), top = e;
	while (top < ymax)
		top = top == e ? 2 * e : top == 2 * e ? 5 * e : 10 * e;
	ymax = top;
#define X(t) (L + (t) / tmax * pw)
#define Y(v) (T + ph - (v) / ymax * ph)
	fprintf(f,
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
	        "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
	        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	        "<text x=\"%.0f\" y=\"22\" font-size=\"15\">spillgen: packets per second at each "
	        "backend (%u ms intervals)</text>\n",
	        W, H, W, H, L, o->interval_ms);
	/* Phases: shaded bands with their names; hot phases in orange. */
	for (uint16_t p = 0; p < o->nphases; p++) {
		const struct sg_phase *q = &o->phases[p];
		double x0 = X(q->start), x1 = X(q->end < tmax ? q->end : tmax);
		if (q->start >= tmax)
			continue;
		fprintf(f,
		        "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\" "
		        "opacity=\"0.12\"/>\n<text x=\"%.1f\" y=\"%.0f\" "
		        "fill=\"#555\">%s%s</text>\n",
		        x0, T, x1 - x0, ph, q->hot.kind ? "#f28e2b" : (p % 2 ? "#888" : "#ccc"),
		        x0 + 4, T + 14, q->name, q->hot.kind ? " (hot key)" : "");
	}
	/* Axes, grid and labels. */
	for (int i = 0; i <= 5; i++) {
		double v = ymax * i / 5;
		fprintf(f,
		        "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
		        "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n",
		        L, L + pw, Y(v), Y(v), L - 6, Y(v) + 4, v);
	}
	double tstep = pow(10, floor(log10(tmax)));
	if (tmax / tstep < 4)
		tstep /= 2;
	for (double t = 0; t <= tmax + 1e-9; t += tstep)
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n", X(t),
		        T + ph + 18, t);
	fprintf(f,
	        "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">time (s)</text>\n"
	        "<text transform=\"translate(16 %.0f) rotate(-90)\" text-anchor=\"middle\">"
	        "packets/s</text>\n"
	        "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
	        "stroke=\"#333\"/>\n",
	        L + pw / 2, H - 12, T + ph / 2, L, T, pw, ph);
	for (uint16_t b = 0; b < an->nbackends; b++) {
		const char *c = colours[b % 10];
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
		        c);
		for (uint32_t iv = 0; iv < an->n_iv; iv++)
			fprintf(f, "%.1f,%.1f ", X((iv + 0.5) * ivs),
			        Y(an->series_be[(size_t)iv * SG_MAX_BACKENDS + b] / ivs));
		sg_addr_str(&an->be[b].addr, an->be[b].af, buf, sizeof(buf));
		fprintf(f,
		        "\"/>\n<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
		        "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
		        L + pw + 14, T + 10 + b * 18.0, c, L + pw + 32, T + 21 + b * 18.0, buf);
	}
	fprintf(f, "</svg>\n");
#undef X
#undef Y
	return fclose(f) == 0 ? 0 : -EIO;
}
