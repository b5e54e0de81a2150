/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lb_pipeline_burst() on a per_packet UDP VIP: a hot key's packets drawn over
 * its replicas packet by packet, never pinned in the flow table, pinned again
 * from Maglev once the override is gone; a datagram's fragments at one
 * replica; other keys and spread VIPs untouched. Expected spreads are the
 * binomial model of a uniform draw over the replicas, kept by the test.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/flow_table.h"
#include "dataplane/frag_table.h"
#include "dataplane/parse.h"
#include "pipeline_fixture.h"
#include "control/build/snapshot_build.h"

/* VIP 0: UDP per_packet, 5-tuple key, backends 0-3. VIP 1: the same but spread (4-7). */
static const char *const spray_vips =
        "{\"address\": \"192.0.2.10\", \"port\": 53, \"protocol\": \"udp\", \"hot_mode\": "
        "\"per_packet\", \"backends\": [" VIP0_BACKENDS "]},"
        "{\"address\": \"192.0.2.11\", \"port\": 53, \"protocol\": \"udp\", \"backends\": "
        "[{\"address\": \"10.3.0.1\"}, {\"address\": \"10.3.0.2\"}, {\"address\": "
        "\"10.3.0.3\"}, {\"address\": \"10.3.0.4\"}]}";

#define N_SPRAY 4000

static int
spray_setup(void **state)
{
	struct fixture *fx;

	setup(state);
	fx = *state;
	fx_config(fx, cfg_load(1500, "icmp", spray_vips));
	return 0;
}

/* The i-th UDP client flow to VIP vip (0 or 1). */
static struct flow
udp_flow(uint32_t i, unsigned int vip)
{
	struct flow f = {.af = LB_AF_INET, .proto = PROTO_UDP, .dport = 53};

	f.src = ip4_addr(100, 70, (uint8_t)(i >> 8), (uint8_t)i);
	f.dst = ip4_addr(192, 0, 2, (uint8_t)(10 + vip));
	f.sport = (uint16_t)(2000 + i);
	return f;
}

/* The key hash the VIP's overrides are keyed by, for the packet in f. */
static uint64_t
frame_key_hash(const struct lb_snapshot *s, unsigned int vip, const struct frame *f)
{
	struct lb_pkt_info info;

	assert_int_equal(lb_parse_frame(f->b, f->len, f->len, &info), LB_PARSE_OK);
	return lb_vip_key_hash(s, &s->vips[vip], &info.key, lb_hash_flow(&s->hkey, &info.key));
}

/* Publish fx->cfg with one override of (vip, key_hash) over replicas (or none). */
static void
publish_ov(struct fixture *fx, uint16_t vip, uint64_t key_hash, const uint16_t *replicas,
           uint16_t n)
{
	struct lb_snapshot_override ov = {
	        .vip_id = vip, .key_hash = key_hash, .n_replicas = n, .replicas = replicas};
	struct lb_snapshot *s;
	char err[256];

	s = lb_snapshot_build_ext(fx->cfg, ++fx->generation, fx->snap, &ov, n > 0 ? 1 : 0, err,
	                          sizeof(err));
	if (s == NULL)
		fail_msg("snapshot: %s", err);
	lb_snapshot_free(fx->snap);
	fx->snap = s;
}

/* n packets of frame f; per[b] counts those forwarded to backend b. */
static void
send_n(struct fixture *fx, const struct frame *f, uint32_t n, unsigned int *per)
{
	const struct frame **fp = calloc(n, sizeof(*fp));
	int *fate = calloc(n, sizeof(int)), *bid = calloc(n, sizeof(int));

	assert_non_null(fp);
	assert_non_null(fate);
	assert_non_null(bid);
	for (uint32_t i = 0; i < n; i++)
		fp[i] = f;
	run_frames(fx, fp, n, fate, bid);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(fate[i], FATE_FWD);
		assert_true(bid[i] >= 0 && bid[i] < 8);
		per[bid[i]]++;
	}
	free(fp);
	free(fate);
	free(bid);
}

static const uint16_t reps0[4] = {0, 1, 2, 3};
static const uint16_t reps1[4] = {4, 5, 6, 7};

/*
 * One 5-tuple, pinned before it is hot, is sprayed once overridden: each of the
 * 4 replicas within 5 binomial standard deviations of N/4, no entry made or
 * hit; the same override on a spread VIP keeps its flow on its pinned backend.
 */
static void
test_spray_single_5tuple_not_pinned(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl = udp_flow(1, 0), fl1 = udp_flow(1, 1);
	unsigned int per[8] = {0};
	double mean = N_SPRAY / 4.0, sd = sqrt(N_SPRAY * 0.25 * 0.75);
	uint64_t hits, misses;
	struct frame f, f1;
	int home, home1;

	build(&f, &fl, 64, 0, false);
	build(&f1, &fl1, 64, 0, false);
	assert_int_equal(run_one(fx, &f, &home), FATE_FWD);
	assert_int_equal(run_one(fx, &f1, &home1), FATE_FWD);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 2);
	publish_ov(fx, 0, frame_key_hash(fx->snap, 0, &f), reps0, 4);
	assert_true(fx->snap->vips[0].spray);
	assert_false(fx->snap->vips[1].spray);
	hits = c->flow_hits;
	misses = c->flow_misses;
	send_n(fx, &f, N_SPRAY, per);
	for (int b = 0; b < 4; b++)
		assert_true(fabs(per[b] - mean) <= 5 * sd);
	assert_int_equal(c->hot_sprayed, N_SPRAY);
	assert_int_equal(c->hot_spread, 0);
	assert_int_equal(c->flow_hits, hits);
	assert_int_equal(c->flow_misses, misses);
	assert_int_equal(c->vip[0].new_flows, 1);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 2);
	/* Every packet counted once on its backend. */
	assert_int_equal(c->backend[0].packets + c->backend[1].packets + c->backend[2].packets +
	                         c->backend[3].packets,
	                 N_SPRAY + 1);

	/* A spread VIP's pinned flow stays where it is under the same kind of override. */
	publish_ov(fx, 1, frame_key_hash(fx->snap, 1, &f1), reps1, 4);
	assert_false(fx->snap->vips[1].spray);
	memset(per, 0, sizeof(per));
	send_n(fx, &f1, 200, per);
	assert_int_equal(per[home1], 200);
	assert_int_equal(c->hot_sprayed, N_SPRAY);
}

/* Another key of the per_packet VIP is pinned as usual while one key is sprayed. */
static void
test_spray_other_keys_pinned(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow hot = udp_flow(1, 0);
	unsigned int per[8] = {0};
	struct frame f;

	build(&f, &hot, 64, 0, false);
	publish_ov(fx, 0, frame_key_hash(fx->snap, 0, &f), reps0, 4);
	for (uint32_t i = 2; i < 66; i++) {
		struct flow fl = udp_flow(i, 0);
		int b0, b1;

		build(&f, &fl, 64, 0, false);
		assert_int_equal(run_one(fx, &f, &b0), FATE_FWD);
		assert_int_equal(run_one(fx, &f, &b1), FATE_FWD);
		assert_int_equal(b0, b1);
	}
	assert_int_equal(c->flow_misses, 64);
	assert_int_equal(c->flow_hits, 64);
	assert_int_equal(c->hot_sprayed, 0);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 64);
	build(&f, &hot, 64, 0, false);
	send_n(fx, &f, 100, per);
	assert_int_equal(c->hot_sprayed, 100);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 64);
}

/*
 * Sprayed while hot (no entry), then the override goes: the next packet makes
 * an entry (a miss, a new flow) on the key's Maglev backend, the one it had
 * before any override, and every later packet hits it.
 */
static void
test_spray_pins_after_demotion(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl = udp_flow(7, 0);
	unsigned int per[8] = {0}, used = 0;
	struct frame f;
	int home, b;

	/* Its Maglev backend, from a worker that has never seen an override. */
	build(&f, &fl, 64, 0, false);
	assert_int_equal(run_one(fx, &f, &home), FATE_FWD);
	lb_flow_table_free(fx->w->ft);
	fx->w->ft = lb_flow_table_create(FLOW_CAPACITY);
	assert_non_null(fx->w->ft);

	publish_ov(fx, 0, frame_key_hash(fx->snap, 0, &f), reps0, 4);
	send_n(fx, &f, 400, per);
	for (int i = 0; i < 4; i++)
		used += per[i] > 0;
	assert_int_equal(used, 4);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 0);

	publish_ov(fx, 0, 0, NULL, 0); /* demoted */
	assert_false(fx->snap->vips[0].spray);
	uint64_t misses = c->flow_misses, hits = c->flow_hits, nf = c->vip[0].new_flows;

	assert_int_equal(run_one(fx, &f, &b), FATE_FWD);
	assert_int_equal(b, home);
	assert_int_equal(c->flow_misses, misses + 1);
	assert_int_equal(c->vip[0].new_flows, nf + 1);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 1);
	memset(per, 0, sizeof(per));
	send_n(fx, &f, 100, per);
	assert_int_equal(per[home], 100);
	assert_int_equal(c->flow_hits, hits + 100);
	assert_int_equal(c->hot_sprayed, 400);
}

/* Set the IPv4 identification of a fragment built by build_frag(). */
static void
set_ip4_id(struct frame *f, uint16_t id)
{
	uint8_t *ip = f->b + f->l2;

	wr16(ip + 4, id);
	wr16(ip + 10, 0);
	wr16(ip + 10, (uint16_t)~sum16(0, ip, 20));
}

/*
 * Fragmented datagrams of the sprayed 5-tuple (first, middle, last; each its
 * own IP ID): a datagram's fragments at one replica, the datagrams spread over
 * the replicas, no flow entry. A datagram whose later fragment comes before its
 * first is steered by addresses only, as without an override.
 */
static void
test_spray_fragments_together(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl = udp_flow(3, 0);
	unsigned int used[8] = {0}, n_used = 0;
	int early_before, early_after, b;
	struct frame f;

	fx->w->frag = lb_frag_table_create(1024, 1000);
	assert_non_null(fx->w->frag);
	/* Today's steering of a fragment with no first fragment seen. */
	build_frag(&f, &fl, 63, true, 504);
	set_ip4_id(&f, 9999);
	assert_int_equal(run_one(fx, &f, &early_before), FATE_FWD);

	build(&f, &fl, 64, 0, false);
	publish_ov(fx, 0, frame_key_hash(fx->snap, 0, &f), reps0, 4);
	for (uint16_t d = 0; d < 64; d++) {
		int bid[3];

		build_frag(&f, &fl, 0, true, 504);
		set_ip4_id(&f, (uint16_t)(100 + d));
		assert_int_equal(run_one(fx, &f, &bid[0]), FATE_FWD);
		build_frag(&f, &fl, 63, true, 504);
		set_ip4_id(&f, (uint16_t)(100 + d));
		assert_int_equal(run_one(fx, &f, &bid[1]), FATE_FWD);
		/* A plain packet of the key between them draws on its own. */
		build(&f, &fl, 64, 0, false);
		assert_int_equal(run_one(fx, &f, &b), FATE_FWD);
		build_frag(&f, &fl, 126, false, 100);
		set_ip4_id(&f, (uint16_t)(100 + d));
		assert_int_equal(run_one(fx, &f, &bid[2]), FATE_FWD);
		assert_int_equal(bid[1], bid[0]);
		assert_int_equal(bid[2], bid[0]);
		assert_true(bid[0] >= 0 && bid[0] < 4);
		used[bid[0]]++;
	}
	for (int i = 0; i < 4; i++)
		n_used += used[i] > 0;
	/* 64 uniform draws over 4 miss one replica with probability < 4 (3/4)^64. */
	assert_int_equal(n_used, 4);
	assert_int_equal(c->hot_sprayed, 4 * 64);
	assert_int_equal(c->frag_tracked, 64);
	assert_int_equal(c->frag_followed, 2 * 64);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 0);

	/* Early fragment: the address-only choice, as before the override. */
	build_frag(&f, &fl, 63, true, 504);
	set_ip4_id(&f, 9998);
	assert_int_equal(run_one(fx, &f, &early_after), FATE_FWD);
	assert_int_equal(early_after, early_before);
	assert_int_equal(c->frag_unmatched, 2);
	lb_frag_table_free(fx->w->frag);
	fx->w->frag = NULL;
}

#define T(f) cmocka_unit_test_setup_teardown(f, spray_setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_spray_single_5tuple_not_pinned),
	        T(test_spray_other_keys_pinned),
	        T(test_spray_pins_after_demotion),
	        T(test_spray_fragments_together),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
