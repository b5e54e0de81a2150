/* SPDX-License-Identifier: BSD-3-Clause */
/* The analyser's figures on hand-made packet sequences: per-backend counts,
 * loss, duplicates, reordering, flows at several backends, hot-key spread,
 * intervals, peak/avg, Jain, percentiles. */
#include <arpa/inet.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis.h"

#define HZ 1000000ULL /* 1 tick = 1 us */
#define IV 100000ULL  /* 100 ms intervals */

static struct sg_analysis an;

static int
setup(void **state)
{
	struct sg_vip v;

	(void)state;
	memset(&v, 0, sizeof(v));
	v.af = LB_AF_INET;
	v.proto = 17;
	v.port = 53;
	inet_pton(AF_INET, "192.0.2.10", v.addr.b);
	for (int b = 0; b < SG_MAX_BACKENDS; b++)
		v.weight[b] = -1;
	if (sg_an_init(&an, 16, NULL, &v, 1, 6080, HZ, IV, 100) != 0)
		return -1;
	an.t0 = 0;
	an.latency = true;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	sg_an_free(&an);
	return 0;
}

static void
pkt(uint32_t flow, uint32_t seq, const char *backend, uint64_t now, uint64_t tsc)
{
	struct sg_decoded d;

	memset(&d, 0, sizeof(d));
	d.backend_af = LB_AF_INET;
	inet_pton(AF_INET, backend, d.backend.b);
	d.inner.af = LB_AF_INET;
	d.inner.proto = 17;
	d.inner.dport = 53;
	inet_pton(AF_INET, "192.0.2.10", d.inner.dst.b);
	d.st.flow = flow;
	d.st.seq = seq;
	d.st.tsc = tsc;
	sg_an_record(&an, SG_DEC_OK, &d, 100, now, sg_an_interval(&an, now));
}

static void
test_spillgen_analysis_loss_dup_reorder(void **state)
{
	(void)state;
	/* Flow 0: 0 1 2 4 3 3 (reorder then dup), 7 (gap 5, 6 lost). */
	const uint32_t f0[] = {0, 1, 2, 4, 3, 3, 7};
	for (size_t i = 0; i < 7; i++)
		pkt(0, f0[i], "10.1.0.1", 1000 + i, 900);
	/* Flow 1: 2 3 (0 and 1 lost), then 200 (far ahead), then 3 again (dup),
	 * then 100 (more than 64 behind: late). */
	pkt(1, 2, "10.1.0.2", 2000, 1000);
	pkt(1, 3, "10.1.0.2", 2001, 1000);
	pkt(1, 200, "10.1.0.2", 2002, 1000);
	pkt(1, 100, "10.1.0.2", 2003, 1000);
	/* Flow 2 moves from backend 1 to 2. */
	pkt(2, 0, "10.1.0.1", 250000, 249000);
	pkt(2, 1, "10.1.0.2", 250001, 249000);
	/* A packet of a flow id outside the table. */
	pkt(99, 0, "10.1.0.1", 2004, 1000);

	uint32_t sent[16] = {8, 202, 2};
	struct sg_flow_summary s;
	sg_an_flow_summary(&an, sent, &s);
	assert_int_equal(an.nbackends, 2);
	assert_int_equal(an.be_pkts[0], 7 + 1);
	assert_int_equal(an.be_pkts[1], 4 + 1);
	assert_int_equal(an.unknown_flow, 1);
	assert_int_equal(s.dup, 1);
	assert_int_equal(s.reordered, 1);
	assert_int_equal(s.late, 1);
	/* Flow 0: 8 sent, 6 unique (0 1 2 3 4 7) -> 2 lost. Flow 1: 202 sent,
	 * 4 unique (2 3 200 100) -> 198 lost. Flow 2: none lost. */
	assert_int_equal(s.lost, 2 + 198);
	assert_int_equal(s.flows_with_loss, 2);
	assert_int_equal(s.flows_moved, 1);
	assert_int_equal(s.flows_single_backend, 2);
	assert_int_equal(an.moves, 1);
	assert_int_equal(an.series_moved[2], 1); /* at t = 0.25 s */
	/* Without sent counts, highest sequence + 1 stands for what was sent. */
	sg_an_flow_summary(&an, NULL, &s);
	assert_int_equal(s.sent, 8 + 201 + 2);
	/* Intervals: 12 packets in interval 0, 2 in interval 2. */
	assert_int_equal(an.n_iv, 3);
	assert_int_equal(
	        an.series_be[0 * SG_MAX_BACKENDS + 0] + an.series_be[0 * SG_MAX_BACKENDS + 1], 11);
	/* Latency: 100-ish ticks for flow 0, 1000-ish for flow 1/2. */
	assert_int_equal(an.lat_n, 13);
}

static void
test_spillgen_analysis_figures(void **state)
{
	(void)state;
	const double eq[4] = {1, 1, 1, 1};
	const double even[4] = {25, 25, 25, 25}, one[4] = {100, 0, 0, 0}, half[4] = {50, 50, 0, 0};
	const double w[3] = {1, 2, 1}, byw[3] = {25, 50, 25};

	assert_true(fabs(sg_fig_peak_avg(even, eq, 4) - 1.0) < 1e-12);
	assert_true(fabs(sg_fig_jain(even, eq, 4) - 1.0) < 1e-12);
	assert_true(fabs(sg_fig_peak_avg(one, eq, 4) - 4.0) < 1e-12);
	assert_true(fabs(sg_fig_jain(one, eq, 4) - 0.25) < 1e-12);
	assert_true(fabs(sg_fig_peak_avg(half, eq, 4) - 2.0) < 1e-12);
	assert_true(fabs(sg_fig_jain(half, eq, 4) - 0.5) < 1e-12);
	/* Weighted: a backend with twice the weight and twice the load is fair. */
	assert_true(fabs(sg_fig_peak_avg(byw, w, 3) - 1.0) < 1e-12);
	assert_true(fabs(sg_fig_jain(byw, w, 3) - 1.0) < 1e-12);
	/* Nothing expected. */
	const double zero[2] = {0, 0};
	assert_true(isnan(sg_fig_peak_avg(even, zero, 2)));
}

static void
test_spillgen_analysis_percentiles(void **state)
{
	(void)state;
	static uint64_t h[SG_LAT_BUCKETS];

	/* Bucket edges are monotonic and each midpoint within 1/32 of the value. */
	for (uint64_t v = 1; v < (1ULL << 40); v = v * 3 / 2 + 1) {
		uint32_t b = sg_lat_bucket(v);
		assert_true(b < SG_LAT_BUCKETS);
		assert_true(sg_lat_bucket(v + 1) >= b);
		assert_true(fabs(sg_lat_bucket_mid(b) - (double)v) <= (double)v / 16 + 0.5);
	}
	/* 1..1000 once each: p50 ~ 500, p99 ~ 990. */
	memset(h, 0, sizeof(h));
	for (uint64_t v = 1; v <= 1000; v++)
		h[sg_lat_bucket(v)]++;
	assert_true(fabs(sg_fig_percentile(h, SG_LAT_BUCKETS, 0.5) - 500) < 500 / 16.0);
	assert_true(fabs(sg_fig_percentile(h, SG_LAT_BUCKETS, 0.99) - 990) < 990 / 16.0);
	assert_true(sg_fig_percentile(h, SG_LAT_BUCKETS, 1.0) >= 960);
	memset(h, 0, sizeof(h));
	assert_true(isnan(sg_fig_percentile(h, SG_LAT_BUCKETS, 0.5)));
}

static void
test_spillgen_analysis_hot_spread(void **state)
{
	(void)state;
	struct sg_hot_track *t = &an.hot[an.nhot++];

	t->fid_lo = 10;
	t->fid_hi = 14;
	t->start_tsc = 300000;
	pkt(10, 0, "10.1.0.3", 300100, 300000);
	pkt(11, 0, "10.1.0.3", 300200, 300000);
	pkt(12, 0, "10.1.0.4", 312345, 300000); /* a second backend: promoted */
	pkt(13, 0, "10.1.0.3", 312400, 300000);
	assert_int_equal(t->packets, 4);
	assert_true(t->first_rx_tsc == 300100);
	assert_true(t->spread_tsc == 312345);
	assert_int_equal(__builtin_popcountll(t->seen[0]), 2);
}

int
main(void)
{
	const struct CMUnitTest t[] = {
	        cmocka_unit_test_setup_teardown(test_spillgen_analysis_loss_dup_reorder, setup,
	                                        teardown),
	        cmocka_unit_test(test_spillgen_analysis_figures),
	        cmocka_unit_test(test_spillgen_analysis_percentiles),
	        cmocka_unit_test_setup_teardown(test_spillgen_analysis_hot_spread, setup, teardown),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
