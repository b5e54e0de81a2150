/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for what lb_pipeline_burst() counts and samples: a mixed burst
 * conserving packets across forwarded, back, exception and every drop reason,
 * the hot-key sketch fed a burst at a time against one lb_sketch_add() per
 * packet, the per-VIP and per-backend counters kept in registers against
 * the packets' fates, and hot.weight (packets or bytes) in the sketch and the
 * controller's backend loads against a model of the frames (pipeline_fixture.h).
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/hash.h"
#include "dataplane/parse.h"
#include "dataplane/pipeline.h"
#include "dataplane/sketch.h"
#include "dataplane/snapshot.h"

#include "control/runtime/hot_window.h"
#include "pipeline_fixture.h"

/* --- tests --------------------------------------------------------------- */

/*
 * A mixed burst, one packet of every kind: each ends in exactly one place,
 * and rx_packets equals forwarded + back + exception + drops.
 */
static void
test_pipeline_counters_conserve(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct frame *f = calloc(LB_BURST, sizeof(*f));
	const struct frame *fp[LB_BURST];
	int fate[LB_BURST], bid[LB_BURST];
	uint32_t n = 0;
	uint64_t drops = 0;

	assert_non_null(f);
	for (uint32_t i = 0; i < 12; i++) {
		struct flow fl = i & 1 ? flow6(i) : flow4(i);

		build(&f[n++], &fl, 20, IP4_DF, false);
	}
	{
		struct flow fl = flow4(100);

		build_sized(&f[n++], &fl, 1481, true);  /* ICMP back */
		build_sized(&f[n++], &fl, 1481, false); /* outer fragments */
		build_frag(&f[n++], &fl, 0, true, 64);
		build_icmp_error(&f[n++], &fl);
		build(&f[n], &fl, 20, IP4_DF, false); /* total length beyond the frame */
		f[n].len -= 10;
		n++;
		build(&f[n], &fl, 20, IP4_DF, false); /* TCP header cut */
		wr16(f[n].b + f[n].l2 + 2, 20 + 12);
		wr16(f[n].b + f[n].l2 + 10, 0);
		f[n].len = f[n].l2 + 32;
		n++;
		fl.dst = ip4_addr(192, 0, 2, 30); /* no backend */
		build(&f[n++], &fl, 20, IP4_DF, false);
		fl.dst = ip4_addr(192, 0, 2, 99); /* no VIP */
		build(&f[n++], &fl, 20, IP4_DF, false);
		put_eth(&f[n], ETHERTYPE_ARP, false);
		memset(f[n].b + f[n].len, 0, 46);
		f[n].len += 46;
		n++;
		f[n].len = 10; /* runt */
		memset(f[n].b, 0, 10);
		n++;
	}
	for (uint32_t i = 0; i < n; i++)
		fp[i] = &f[i];
	run_frames(fx, fp, n, fate, bid);
	assert_int_equal(c->rx_packets, n);
	assert_int_equal(count_eq(fate, n, FATE_FWD), 12 + 2); /* + fragment, ICMP error */
	assert_int_equal(count_eq(fate, n, FATE_BACK), 1);
	assert_int_equal(count_eq(fate, n, FATE_EXC), 0);
	assert_int_equal(count_eq(fate, n, FATE_FRAG), 1);
	assert_int_equal(c->fragmented_out, 1);
	for (unsigned int r = 0; r < LB_DROP__COUNT; r++)
		drops += c->drops[r];
	assert_int_equal(drops, count_eq(fate, n, FATE_DROP));
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 0);
	assert_int_equal(c->drops[LB_DROP_IP4_TRUNC], 1);
	assert_int_equal(c->drops[LB_DROP_L4_TRUNC], 1);
	assert_int_equal(c->drops[LB_DROP_NO_BACKEND], 1);
	assert_int_equal(c->drops[LB_DROP_NO_VIP], 2);
	assert_int_equal(c->drops[LB_DROP_ETH_TRUNC], 1);
	assert_int_equal(c->rx_packets, count_eq(fate, n, FATE_FWD) + count_eq(fate, n, FATE_BACK) +
	                                        count_eq(fate, n, FATE_EXC) +
	                                        count_eq(fate, n, FATE_FRAG) + drops);
	free(f);
}

/*
 * Frames for the sketch and counter tests: bursts of one VIP (the pipeline's
 * batched paths), bursts mixing VIPs, non-VIP packets, fragments, ICMP errors
 * and parse drops (its packet-by-packet paths), and short bursts. Flows repeat
 * (flow i % 40, so some keys become sketch candidates).
 */
static uint32_t
mixed_frames(struct frame *f, uint32_t max)
{
	uint32_t n = 0, round = 0;

	while (n + LB_BURST <= max) {
		uint32_t kind = round % 4, len = kind == 3 ? 1 + round % 31 : LB_BURST;

		for (uint32_t j = 0; j < len; j++, n++) {
			uint32_t i = (round * 7 + j * 13) % 40 + (j % 5 == 0 ? 1000 : 0);
			struct flow fl = flow4(i);

			if (kind == 1 && j % 3 == 1)
				fl = flow6(i);
			else if (kind == 1 && j % 3 == 2)
				fl.dst = ip4_addr(192, 0, 2, 20), fl.proto = PROTO_UDP,
				fl.dport = 53;
			build(&f[n], &fl, 20 + j, IP4_DF, false);
			if (kind == 2 && j == 5)
				build_frag(&f[n], &fl, 0, true, 64);
			if (kind == 2 && j == 9)
				build_icmp_error(&f[n], &fl);
			if (kind == 2 && j == 11)
				f[n].len -= 10; /* IPv4 total length beyond the frame */
			if (kind == 2 && j == 17) {
				fl.dst = ip4_addr(192, 0, 2, 99); /* no VIP */
				build(&f[n], &fl, 20, IP4_DF, false);
			}
		}
		round++;
	}
	return n;
}

/* The reference: one lb_sketch_add() per VIP packet, under its VIP's key mode. */
static void
sketch_ref_add(const struct lb_snapshot *s, struct lb_sketch *ref, const struct frame *f)
{
	struct lb_pkt_info info;
	const struct lb_vip *v;
	struct lb_flow_key k;

	if (lb_parse_frame(f->b, f->len, f->len, &info) != LB_PARSE_OK)
		return;
	if (info.flags & LB_PKT_FRAGMENT)
		v = lb_vip_lookup_frag(s, info.key.af, &info.key.dst, info.key.proto);
	else
		v = lb_vip_lookup(s, info.key.af, &info.key.dst, info.key.proto, info.key.dport);
	if (v == NULL)
		return;
	if (v->key_mode == LB_KEY_5TUPLE) {
		lb_sketch_add(ref, v->id, lb_hash_flow(&s->hkey, &info.key), &info.key, 1);
		return;
	}
	memset(&k, 0, sizeof(k));
	k.src = info.key.src;
	k.af = info.key.af;
	if (v->key_mode == LB_KEY_SRC_IP_DPORT)
		k.dport = info.key.dport;
	lb_sketch_add(ref, v->id, lb_hash_flow(&s->hkey, &k), &k, 1);
}

/*
 * The pipeline feeds the sketch a burst at a time (the VIP's total once, only
 * the sampled packets visited): the sketch must end up exactly as with one
 * lb_sketch_add() per packet, at every sampling rate and key mode.
 */
static void
test_pipeline_sketch_matches_per_packet(void **state)
{
	static const char *const key_vips[] = {
	        NULL, /* the default VIPs, all 5-tuple */
	        "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\", \"key\": "
	        "\"src_ip\", \"backends\": [" VIP0_BACKENDS "]},"
	        "{\"address\": \"2001:db8::10\", \"port\": 443, \"protocol\": \"tcp\", \"encap\": "
	        "\"gue\", \"key\": \"src_ip_dport\", \"backends\": [{\"address\": \"fd01::1\"}]},"
	        "{\"address\": \"192.0.2.20\", \"port\": 0, \"protocol\": \"udp\", \"encap\": "
	        "\"gue\", \"backends\": [{\"address\": \"10.2.0.1\"}]}"};
	static const unsigned int shifts[] = {0, 2, 4};
	struct fixture *fx = *state;
	const uint32_t max = 160 * LB_BURST;
	struct frame *f = calloc(max, sizeof(*f));
	const struct frame **fp = calloc(max, sizeof(*fp));
	int *fate = calloc(max, sizeof(int)), *bid = calloc(max, sizeof(int));
	uint32_t n;

	assert_true(f != NULL && fp != NULL && fate != NULL && bid != NULL);
	n = mixed_frames(f, max);
	for (uint32_t i = 0; i < n; i++)
		fp[i] = &f[i];
	for (size_t kv = 0; kv < 2; kv++) {
		if (key_vips[kv] != NULL)
			fx_config(fx, cfg_load(1500, "icmp", key_vips[kv]));
		for (size_t si = 0; si < 3 * 3; si++) {
			struct lb_sketch *sk = lb_sketch_create(shifts[si % 3]);
			struct lb_sketch *ref = lb_sketch_create(shifts[si % 3]);
			/* A VIP total carried in from earlier in the window moves the
			 * candidate gate (total >> 9) across these keys' counts, so
			 * the running total each sampled packet sees is checked too. */
			uint64_t t0 = (uint64_t)(si / 3) * (25000u >> shifts[si % 3]);
			uint32_t cands = 0;

			assert_true(sk != NULL && ref != NULL);
			for (int v = 0; v < 3; v++)
				sk->buf[0].vip_total[v] = ref->buf[0].vip_total[v] = t0;
			fx->w->sketch = sk;
			/* Burst by burst as mixed_frames() laid them out. */
			for (uint32_t i = 0, round = 0; i < n; round++) {
				uint32_t len = round % 4 == 3 ? 1 + round % 31 : LB_BURST;

				run_frames(fx, fp + i, len, fate + i, bid + i);
				for (uint32_t j = i; j < i + len; j++)
					sketch_ref_add(fx->snap, ref, &f[j]);
				i += len;
			}
			fx->w->sketch = NULL;
			assert_int_equal(sk->countdown, ref->countdown);
			assert_int_equal(sk->rng, ref->rng);
			assert_int_equal(sk->evictions, ref->evictions);
			assert_memory_equal(sk->buf[0].vip_total, ref->buf[0].vip_total,
			                    sizeof(ref->buf[0].vip_total));
			assert_memory_equal(sk->buf[0].cm, ref->buf[0].cm, sizeof(ref->buf[0].cm));
			assert_memory_equal(sk->buf[0].tag, ref->buf[0].tag,
			                    sizeof(ref->buf[0].tag));
			assert_memory_equal(sk->buf[0].key, ref->buf[0].key,
			                    sizeof(ref->buf[0].key));
			for (uint32_t t = 0; t < LB_SKETCH_CANDS; t++)
				cands += ref->buf[0].tag[t].count != 0;
			print_message("keys %s, 1 in %u, totals from %llu: %llu VIP packets, %u "
			              "candidates, same\n",
			              kv ? "src_ip" : "5tuple", 1u << shifts[si % 3],
			              (unsigned long long)t0,
			              (unsigned long long)(ref->buf[0].vip_total[0] +
			                                   ref->buf[0].vip_total[1] +
			                                   ref->buf[0].vip_total[2] - 3 * t0),
			              cands);
			if (t0 == 0)
				assert_true(cands > 0);
			lb_sketch_free(sk);
			lb_sketch_free(ref);
		}
	}
	free(f);
	free(fp);
	free(fate);
	free(bid);
}

/*
 * Per-VIP and per-backend packets and bytes are kept in registers across a
 * run of one VIP and added at VIP changes and at the end of the burst: they
 * must still count every forwarded packet and its inner bytes exactly.
 */
static void
test_pipeline_vip_backend_counters_exact(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	const uint32_t max = 40 * LB_BURST;
	struct frame *f = calloc(max, sizeof(*f));
	const struct frame **fp = calloc(max, sizeof(*fp));
	int *fate = calloc(max, sizeof(int)), *bid = calloc(max, sizeof(int));
	uint64_t vp[LB_MAX_VIPS] = {0}, vb[LB_MAX_VIPS] = {0};
	uint64_t bp[LB_MAX_BACKENDS] = {0}, bb[LB_MAX_BACKENDS] = {0};
	uint64_t fwd = 0;
	uint32_t n;

	assert_true(f != NULL && fp != NULL && fate != NULL && bid != NULL);
	n = mixed_frames(f, max);
	for (uint32_t i = 0, round = 0; i < n; round++) {
		uint32_t len = round % 4 == 3 ? 1 + round % 31 : LB_BURST;

		for (uint32_t j = i; j < i + len; j++)
			fp[j] = &f[j];
		run_frames(fx, fp + i, len, fate + i, bid + i);
		i += len;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct lb_pkt_info info;
		const struct lb_vip *v;

		if (fate[i] != FATE_FWD)
			continue;
		assert_true(bid[i] >= 0);
		assert_int_equal(lb_parse_frame(f[i].b, f[i].len, f[i].len, &info), LB_PARSE_OK);
		if (info.flags & LB_PKT_FRAGMENT)
			v = lb_vip_lookup_frag(fx->snap, info.key.af, &info.key.dst,
			                       info.key.proto);
		else
			v = lb_vip_lookup(fx->snap, info.key.af, &info.key.dst, info.key.proto,
			                  info.key.dport);
		assert_non_null(v);
		vp[v->id]++;
		vb[v->id] += info.l3_len;
		bp[bid[i]]++;
		bb[bid[i]] += info.l3_len;
		fwd++;
	}
	assert_true(fwd > n / 2);
	for (uint32_t i = 0; i < LB_MAX_VIPS; i++) {
		assert_int_equal(c->vip[i].packets, vp[i]);
		assert_int_equal(c->vip[i].bytes, vb[i]);
	}
	for (uint32_t i = 0; i < LB_MAX_BACKENDS; i++) {
		assert_int_equal(c->backend[i].packets, bp[i]);
		assert_int_equal(c->backend[i].bytes, bb[i]);
	}
	assert_int_equal(c->rx_packets, n);
	free(f);
	free(fp);
	free(fate);
	free(bid);
}

/*
 * hot.weight: one source of few large packets (A: 24 of 1400 payload bytes),
 * one of many small ones (B: 240 bare TCP headers), and 60 background sources
 * (4 packets of 200 payload bytes each) on a src_ip VIP. The test's model
 * weighs each frame as it built it (1, or its IP total length 20 + 20 +
 * payload) and says which sources reach the threshold: in packets B alone, in
 * bytes A alone. The sketch (1 in 1) must report the model's VIP total
 * exactly, the model's hot sources as its candidates at or above the
 * threshold and no other, each within 5% of the model's count (Count-Min
 * never under); the controller's backend loads (lb_hot_window_backend_load)
 * must be the model's weights of the frames each backend received.
 */
struct weight_src {
	uint8_t last;     /* 198.51.100.last */
	uint32_t packets; /* connections of one packet each */
	uint32_t payload;
};

static void
test_pipeline_hot_weight_bytes(void **state)
{
	static const char vips[] =
	        "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": "
	        "\"tcp\", \"key\": \"src_ip\", \"backends\": [" VIP0_BACKENDS "]}";
	const double phi = 0.2;
	struct weight_src src[62] = {{1, 24, 1400}, {2, 240, 0}};
	struct fixture *fx = *state;
	const uint32_t max = 1024;
	struct frame *f = calloc(max, sizeof(*f));
	const struct frame **fp = calloc(max, sizeof(*fp));
	int *fate = calloc(max, sizeof(int)), *bid = calloc(max, sizeof(int));
	uint8_t *who = calloc(max, 1);
	struct lb_sketch_cand *cands = calloc(LB_SKETCH_CANDS, sizeof(*cands));
	uint32_t n = 0, left[62];

	assert_true(f != NULL && fp != NULL && fate != NULL && bid != NULL && who != NULL &&
	            cands != NULL);
	for (uint32_t i = 2; i < 62; i++)
		src[i] = (struct weight_src){(uint8_t)(10 + i), 4, 200};
	for (uint32_t i = 0; i < 62; i++)
		left[i] = src[i].packets;
	/* Interleaved: a packet of every source with some left, round after round. */
	for (bool more = true; more;) {
		more = false;
		for (uint32_t i = 0; i < 62; i++) {
			struct flow fl = flow4(0);

			if (left[i] == 0)
				continue;
			assert_true(n < max);
			fl.src = ip4_addr(198, 51, 100, src[i].last);
			fl.sport = (uint16_t)(2000 + left[i]);
			build(&f[n], &fl, src[i].payload, IP4_DF, false);
			fp[n] = &f[n];
			who[n++] = (uint8_t)i;
			left[i]--;
			more = true;
		}
	}
	for (int bytes = 0; bytes < 2; bytes++) {
		struct lb_config *cfg = cfg_load(1500, "icmp", vips);
		const struct lb_core_counters *cores[1] = {fx->w->cnt};
		struct lb_publisher pub = {.cores = cores, .n_cores = 1};
		struct lb_hot_window hw = {.pub = &pub};
		uint64_t before[LB_MAX_BACKENDS], want_load[LB_MAX_BACKENDS] = {0};
		uint64_t total[LB_MAX_VIPS], model_total = 0, model[62] = {0};
		struct lb_sketch *sk = lb_sketch_create(0);
		const struct flow vf = flow4(0);
		const struct lb_vip *v;
		uint32_t k = 0, hot_seen = 0;

		assert_non_null(sk);
		cfg->hot.weight = bytes ? LB_HOT_WEIGHT_BYTES : LB_HOT_WEIGHT_PACKETS;
		fx_config(fx, cfg);
		pub.cfg = fx->cfg;
		v = lb_vip_lookup(fx->snap, LB_AF_INET, &vf.dst, PROTO_TCP, htons(80));
		assert_non_null(v);
		for (uint32_t b = 0; b < LB_MAX_BACKENDS; b++)
			before[b] = lb_hot_window_backend_load(&hw, 0, b);
		assert_int_equal(lb_sketch_set_policy(sk, 0, bytes), 0);
		lb_sketch_poll(sk, 1);
		assert_int_equal(sk->weight_bytes, bytes);
		fx->w->sketch = sk;
		for (uint32_t i = 0; i < n; i += LB_BURST)
			run_frames(fx, fp + i, n - i < LB_BURST ? n - i : LB_BURST, fate + i,
			           bid + i);
		fx->w->sketch = NULL;
		lb_sketch_poll(sk, 2);
		assert_true(lb_sketch_read(sk, 1, cands, LB_SKETCH_CANDS, &k, total));

		/* The model: each frame's weight as the test built it. */
		for (uint32_t i = 0; i < n; i++) {
			uint64_t w = bytes ? 20 + 20 + src[who[i]].payload : 1;

			model[who[i]] += w;
			model_total += w;
			assert_int_equal(fate[i], FATE_FWD);
			want_load[bid[i]] += w;
		}
		assert_int_equal(total[v->id], model_total);
		for (uint32_t i = 0; i < 62; i++) {
			const struct lb_sketch_cand *c = NULL;
			union lb_ip a = ip4_addr(198, 51, 100, src[i].last);
			bool model_hot = (double)model[i] >= phi * (double)model_total;

			for (uint32_t j = 0; j < k; j++)
				if (cands[j].vip_id == v->id &&
				    memcmp(&cands[j].key.src, &a, sizeof(a)) == 0)
					c = &cands[j];
			if (model_hot) {
				assert_non_null(c);
				assert_true(c->count >= model[i]);
				assert_true((double)c->count <= 1.05 * (double)model[i]);
				hot_seen++;
				print_message(
				        "weight %s: source 198.51.100.%u hot, model %llu of %llu "
				        "(%.3f), sketch %u\n",
				        bytes ? "bytes" : "packets", src[i].last,
				        (unsigned long long)model[i],
				        (unsigned long long)model_total,
				        (double)model[i] / (double)model_total, c->count);
			} else if (c != NULL) {
				assert_true((double)c->count < phi * (double)total[v->id]);
			}
		}
		assert_int_equal(hot_seen, 1);
		/* Which source is hot depends on the unit: B in packets, A in bytes. */
		assert_true(((double)model[bytes ? 0 : 1] >= phi * (double)model_total) &&
		            ((double)model[bytes ? 1 : 0] < phi * (double)model_total));
		for (uint32_t b = 0; b < LB_MAX_BACKENDS; b++)
			assert_int_equal(lb_hot_window_backend_load(&hw, 0, b) - before[b],
			                 want_load[b]);
		lb_sketch_free(sk);
	}
	free(f);
	free(fp);
	free(fate);
	free(bid);
	free(who);
	free(cands);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_pipeline_counters_conserve),
	        T(test_pipeline_sketch_matches_per_packet),
	        T(test_pipeline_vip_backend_counters_exact),
	        T(test_pipeline_hot_weight_bytes),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
