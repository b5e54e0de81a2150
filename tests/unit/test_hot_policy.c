/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the hot-key controller may do with a VIP's keys and how densely the
 * sketch samples: hot_mode in the configuration and the state file, keys
 * listed without an override (report VIPs, elephants of 5-tuple TCP VIPs),
 * and the automatic sample rate against a binomial model kept here.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/hot/hotkey.h"
#include "control/build/snapshot_build.h"
#include "control/model/state_text.h"
#include "dataplane/sketch.h"
#include "config_fixture.h"

#define BASE                                                                                       \
	"{'encap': {'source_v4': '10.0.0.1', 'next_hop_mac': '02:00:00:00:00:01'},"                \
	" 'maglev': {'table_size': 65537, 'seed': 'policy'}, "

/* A VIP of 10 backends: protocol, key mode and hot_mode as given ("" for none). */
static struct lb_config *
vip_cfg(const char *proto, const char *key, const char *mode)
{
	char doc[2048];
	int n;

	n = snprintf(doc, sizeof(doc),
	             BASE "'vips': [{'address': '192.0.2.10', 'port': 80, 'protocol': '%s', "
	                  "'key': '%s'%s%s%s, 'backends': [",
	             proto, key, *mode ? ", 'hot_mode': '" : "", mode, *mode ? "'" : "");
	for (int j = 0; j < 10; j++)
		n += snprintf(doc + n, sizeof(doc) - (size_t)n, "%s{'address': '10.1.0.%d'}",
		              j ? ", " : "", j + 1);
	snprintf(doc + n, sizeof(doc) - (size_t)n, "]}]}");
	return load_ok(doc);
}

static void
test_hot_mode_config(void **state)
{
	char err[ERR_LEN];
	struct lb_config *cfg;

	(void)state;
	/* Affinity is the operator's choice: a VIP keyed on the source reports
	 * its hot keys unless "spread" is set; a 5-tuple VIP spreads. */
	cfg = vip_cfg("tcp", "src_ip", "");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_REPORT);
	lb_config_free(cfg);
	cfg = vip_cfg("udp", "src_ip_dport", "");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_REPORT);
	lb_config_free(cfg);
	cfg = vip_cfg("tcp", "5tuple", "");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_SPREAD);
	lb_config_free(cfg);
	cfg = vip_cfg("tcp", "src_ip", "spread");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_SPREAD);
	assert_int_equal(cfg->hot.sample, LB_HOT_SAMPLE_AUTO);
	assert_int_equal(cfg->hot.weight, LB_HOT_WEIGHT_PACKETS);
	lb_config_free(cfg);
	cfg = vip_cfg("tcp", "src_ip", "report");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_REPORT);
	lb_config_free(cfg);
	cfg = vip_cfg("udp", "src_ip", "off");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_OFF);
	lb_config_free(cfg);

	assert_null(load_sq(BASE "'vips': [{'address': '192.0.2.1', 'port': 80, 'protocol': 'tcp',"
	                         " 'hot_mode': 'per_packet'}]}",
	                    err));
	assert_error(err, "vips[0].hot_mode", "UDP VIPs only");
	assert_null(load_sq(BASE "'vips': [{'address': '192.0.2.1', 'port': 0, 'protocol': 'tcp',"
	                         " 'key': 'src_ip', 'hot_mode': 'per_packet'}]}",
	                    err));
	assert_error(err, "vips[0].hot_mode", "UDP VIPs only");
	/* A UDP VIP takes it with every key mode, a single 5-tuple included. */
	cfg = vip_cfg("udp", "5tuple", "per_packet");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_PER_PACKET);
	lb_config_free(cfg);
	cfg = vip_cfg("udp", "src_ip", "per_packet");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_PER_PACKET);
	lb_config_free(cfg);
	cfg = vip_cfg("udp", "src_ip_dport", "per_packet");
	assert_int_equal(cfg->vips[0].hot_mode, LB_HOT_PER_PACKET);
	lb_config_free(cfg);
	assert_null(load_sq(BASE "'vips': [{'address': '192.0.2.1', 'port': 53, 'protocol': 'udp',"
	                         " 'hot_mode': 'spray'}]}",
	                    err));
	assert_error(err, "vips[0].hot_mode", "is not one of");
	assert_null(load_sq(BASE "'hot': {'sample': 9}}", err));
	assert_error(err, "hot.sample", "9 out of range [0, 8] or \"auto\"");
	assert_null(load_sq(BASE "'hot': {'sample': 'fast'}}", err));
	assert_error(err, "hot.sample", "expected \"auto\"");
	assert_null(load_sq(BASE "'hot': {'weight': 'flows'}}", err));
	assert_error(err, "hot.weight", "is not one of: packets, bytes");
	cfg = load_ok(BASE "'hot': {'sample': 0, 'weight': 'bytes'}}");
	assert_int_equal(cfg->hot.sample, 0);
	assert_int_equal(cfg->hot.weight, LB_HOT_WEIGHT_BYTES);
	lb_config_free(cfg);
}

/* The state file's VIP text cache must see a change of hot_mode alone. */
static void
test_hot_mode_state_text(void **state)
{
	struct lb_state_text *st = lb_state_text_new();
	struct lb_config *cfg = vip_cfg("tcp", "src_ip", ""), *back;
	unsigned int encoded = 0;
	char *text, err[ERR_LEN];
	size_t len;

	(void)state;
	assert_non_null(st);
	assert_int_equal(lb_state_text_encode(st, cfg, &text, &len, &encoded), 0);
	free(text);
	cfg->vips[0].hot_mode = LB_HOT_SPREAD;
	assert_int_equal(lb_state_text_encode(st, cfg, &text, &len, &encoded), 0);
	assert_int_equal(encoded, 1);
	/* What a restart from the state file reads back. */
	back = load_sq(text, err);
	assert_non_null(back);
	assert_int_equal(back->vips[0].hot_mode, LB_HOT_SPREAD);
	free(text);
	lb_config_free(back);
	lb_config_free(cfg);
	/* per_packet on a UDP VIP survives a restart too. */
	cfg = vip_cfg("udp", "5tuple", "per_packet");
	assert_int_equal(lb_state_text_encode(st, cfg, &text, &len, &encoded), 0);
	assert_non_null(strstr(text, "\"hot_mode\": \"per_packet\""));
	back = load_sq(text, err);
	assert_non_null(back);
	assert_int_equal(back->vips[0].hot_mode, LB_HOT_PER_PACKET);
	free(text);
	lb_config_free(back);
	lb_config_free(cfg);
	lb_state_text_free(st);
}

/* One window with one candidate of share `share` on VIP 0 (T = 10^6). */
static bool
window(struct lb_hotkey *h, const struct lb_snapshot *s, uint64_t key_hash, double share,
       uint64_t w)
{
	static uint64_t load[LB_MAX_BACKENDS];
	uint64_t total[LB_MAX_VIPS] = {0};
	struct lb_hot_candidate c = {.vip_id = 0, .key_hash = key_hash};

	total[0] = 1000000;
	c.count = (uint64_t)(share * 1e6);
	for (uint32_t i = 0; i < s->n_backends; i++)
		load[i] = 100000;
	return lb_hotkey_window(h, s, load, total, &c, share > 0 ? 1 : 0, w);
}

/* hot_mode as given on a VIP with key; a key at 30% for 3 windows, then 0. */
static void
listed_not_overridden(const char *key, const char *mode, bool elephant)
{
	struct lb_config *cfg = vip_cfg("tcp", key, mode);
	struct lb_snapshot *s;
	struct lb_hotkey *h = lb_hotkey_create(NULL);
	const struct lb_hot_override *ov;
	struct lb_hot_listed l[4];
	char err[ERR_LEN];
	uint64_t w = 1;

	assert_non_null(h);
	s = lb_snapshot_build(cfg, 1, err, sizeof(err));
	assert_non_null(s);
	for (; w <= 3; w++) {
		assert_false(window(h, s, 0xabcdef12345ULL, 0.3, w));
		assert_int_equal(lb_hotkey_overrides(h, &ov), 0);
		assert_int_equal(lb_hotkey_listed(h, l, 4), 1);
		assert_true(l[0].elephant == elephant);
		assert_int_equal(l[0].since_window, 1);
		assert_true(fabs(l[0].share - 0.3) < 1e-9);
	}
	/* Never overridden by hand either. */
	assert_int_equal(lb_hotkey_pin(h, s, 0, 0xabcdef12345ULL, NULL, 2, w), -EPERM);
	/* Delisted after demote_windows (5) windows below threshold_low. */
	for (uint64_t k = 0; k < 4; k++, w++) {
		window(h, s, 0, 0, w);
		assert_int_equal(lb_hotkey_listed(h, l, 4), 1);
	}
	window(h, s, 0, 0, w);
	assert_int_equal(lb_hotkey_listed(h, l, 4), 0);
	lb_hotkey_free(h);
	lb_snapshot_free(s);
	lb_config_free(cfg);
}

static void
test_elephant_never_overridden(void **state)
{
	(void)state;
	listed_not_overridden("5tuple", "", true);
	listed_not_overridden("5tuple", "report", true);
}

static void
test_report_never_overridden(void **state)
{
	(void)state;
	listed_not_overridden("src_ip", "report", false);
}

/* The same key on a spread src_ip VIP is overridden (the contrast). */
static void
test_spread_overrides(void **state)
{
	struct lb_config *cfg = vip_cfg("tcp", "src_ip", "spread");
	struct lb_hotkey *h = lb_hotkey_create(NULL);
	const struct lb_hot_override *ov;
	struct lb_snapshot *s;
	char err[ERR_LEN];

	(void)state;
	s = lb_snapshot_build(cfg, 1, err, sizeof(err));
	assert_non_null(s);
	assert_true(window(h, s, 0xabcdef12345ULL, 0.3, 1));
	assert_int_equal(lb_hotkey_overrides(h, &ov), 1);
	assert_int_equal(lb_hotkey_listed(h, NULL, 0), 0);
	lb_hotkey_free(h);
	lb_snapshot_free(s);
	lb_config_free(cfg);
}

/*
 * The automatic shift against its definition, recomputed here: the largest
 * s <= 8 with (phi / 2) * n / 2^s >= 64.
 */
/*
 * A 5-tuple key of a per_packet UDP VIP is one flow whose packets can be
 * sprayed: overridden (not an elephant), over at least the r of the cap's
 * formula r = ceil(N p / (c - 1 + p)) (N = 10, p = 0.3, c = 1.25: 6).
 */
static void
test_per_packet_5tuple_overrides(void **state)
{
	struct lb_config *cfg = vip_cfg("udp", "5tuple", "per_packet");
	struct lb_hotkey *h = lb_hotkey_create(NULL);
	const struct lb_hot_override *ov;
	struct lb_snapshot *s;
	char err[ERR_LEN];
	double x = 10 * 0.3 / (1.25 - 1 + 0.3);
	uint16_t r_min = (uint16_t)x + ((double)(uint16_t)x < x ? 1 : 0);

	(void)state;
	assert_int_equal(r_min, 6);
	s = lb_snapshot_build(cfg, 1, err, sizeof(err));
	assert_non_null(s);
	assert_true(window(h, s, 0xabcdef12345ULL, 0.3, 1));
	assert_int_equal(lb_hotkey_overrides(h, &ov), 1);
	assert_true(ov[0].n_replicas >= r_min);
	assert_int_equal(lb_hotkey_listed(h, NULL, 0), 0);
	/* The operator may pin it too. */
	assert_int_equal(lb_hotkey_pin(h, s, 0, 0xabcdef12345ULL, NULL, 4, 2), 0);
	lb_hotkey_free(h);
	lb_snapshot_free(s);
	lb_config_free(cfg);
}

static void
test_auto_shift(void **state)
{
	static const uint64_t n[] = {0, 1000, 20000, 25600, 25599, 100000, 1000000, 10000000};

	(void)state;
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
		unsigned int want = 0;

		for (unsigned int s = 0; s <= 8; s++)
			if (0.005 * (double)n[i] >= 64.0 * (double)(1u << s))
				want = s;
		assert_int_equal(lb_sketch_auto_shift(n[i], 0.01), want);
	}
	/* 25600 packets: phi/2 * n = 128 = 64 * 2^1 exactly. */
	assert_int_equal(lb_sketch_auto_shift(25600, 0.01), 1);
	assert_int_equal(lb_sketch_auto_shift(20000, 0.01), 0);
}

static uint64_t
mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/*
 * Windows of 2*10^4 packets on a core: a key at 0.75 phi (150 packets, inside
 * the band [phi/2, phi)) must be named in every window at the automatic rate.
 * Returns the windows (of 200) that named it at shift s.
 */
static unsigned int
named_windows(unsigned int shift)
{
	struct lb_sketch *sk = lb_sketch_create(shift);
	struct lb_sketch_cand cand[64];
	struct lb_flow_key key = {0};
	const uint64_t hot = mix(777);
	unsigned int named = 0;
	uint64_t rng = 1;

	assert_non_null(sk);
	for (uint64_t w = 1; w <= 200; w++) {
		uint32_t nc = 0;

		lb_sketch_poll(sk, w);
		for (uint32_t i = 0; i < 20000; i++) {
			/* The hot key's 150 packets spread at random among the others. */
			rng = mix(rng);
			lb_sketch_add(sk, 0, (rng % 20000) < 150 ? hot : mix(w << 20 | i), &key, 1);
		}
		lb_sketch_poll(sk, w + 1);
		assert_true(lb_sketch_read(sk, w, cand, 64, &nc, NULL));
		for (uint32_t i = 0; i < nc; i++)
			named += cand[i].key_hash == hot;
	}
	lb_sketch_free(sk);
	return named;
}

static void
test_auto_rate_names_band(void **state)
{
	unsigned int s = lb_sketch_auto_shift(20000, 0.01);

	(void)state;
	/* Binomial model: at shift 0 the key's count is exact (about 150 packets,
	 * 0.75 phi): named whenever it is above the candidate gate. */
	assert_true(named_windows(s) >= 199);
}

/* Control's per-core choice: from the window's packets, adopted at the next window. */
static void
test_adapt_per_core(void **state)
{
	struct lb_sketch *sk = lb_sketch_create(0);
	struct lb_flow_key key = {0};

	(void)state;
	assert_non_null(sk);
	lb_sketch_poll(sk, 1);
	for (uint32_t i = 0; i < 1000000; i++)
		lb_sketch_add(sk, 0, mix(i), &key, 1);
	lb_sketch_count_packets(sk, 1000000); /* as the pipeline does per burst */
	lb_sketch_poll(sk, 2);
	/* (phi/2) 10^6 = 5000 = 78 * 2^6: shift 6. */
	assert_int_equal(lb_sketch_adapt(sk, 1, -1, false, 0.01), 6);
	assert_int_equal(sk->sample_shift, 0); /* window 2 keeps its rate */
	lb_sketch_poll(sk, 3);
	assert_int_equal(sk->sample_shift, 6);
	assert_int_equal(sk->weight_bytes, 0);
	/* A fixed shift and byte weights. */
	assert_int_equal(lb_sketch_adapt(sk, 2, 3, true, 0.01), 3);
	lb_sketch_poll(sk, 4);
	assert_int_equal(sk->sample_shift, 3);
	assert_int_equal(sk->weight_bytes, 1);
	lb_sketch_free(sk);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_hot_mode_config),
	        cmocka_unit_test(test_hot_mode_state_text),
	        cmocka_unit_test(test_elephant_never_overridden),
	        cmocka_unit_test(test_report_never_overridden),
	        cmocka_unit_test(test_spread_overrides),
	        cmocka_unit_test(test_per_packet_5tuple_overrides),
	        cmocka_unit_test(test_auto_shift),
	        cmocka_unit_test(test_auto_rate_names_band),
	        cmocka_unit_test(test_adapt_per_core),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
