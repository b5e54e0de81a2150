/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_pipeline_burst() across membership changes, with
 * configurations rebuilt and published as control does: a backend added,
 * removed, its id reused with a new generation, draining, at weight 0 and
 * down, and under a SYN flood. Established flows stay on their backend unless it is gone or down;
 * only new flows follow the new Maglev table (pipeline_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "dataplane/snapshot.h"

#include "pipeline_fixture.h"

/* --- tests --------------------------------------------------------------- */

/*
 * A backend added to the VIP: established flows stay where they are (the
 * flow table pins them, although Maglev now sends some of them to the new
 * backend), while new flows spread onto it.
 */
static void
test_pipeline_add_backend_keeps_established(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS], fresh[N_FLOWS], unpinned[N_FLOWS];
	struct lb_flow_table *pinned = fx->w->ft;
	uint64_t hits;

	send_flows(fx, 0, N_FLOWS, before);
	fx_config(fx, cfg_load(1500, "icmp",
	                       "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": "
	                       "\"tcp\", \"backends\": [" VIP0_BACKENDS
	                       ", {\"address\": \"10.1.0.5\"}]}"));
	/* Document order keeps ids 0-3 for the old four; the new one is id 4. */
	assert_int_equal(fx->cfg->vips[0].backends[4].id, 4);
	hits = c->flow_hits;
	send_flows(fx, 0, N_FLOWS, after);
	assert_memory_equal(after, before, sizeof(before));
	assert_int_equal(c->flow_hits - hits, N_FLOWS);
	assert_int_equal(c->flow_rechosen, 0);

	send_flows(fx, 100000, N_FLOWS, fresh);
	/* 1/5 of 400 expected; far from 0 whatever the seed. */
	assert_true(count_eq(fresh, N_FLOWS, 4) > N_FLOWS / 10);
	assert_int_equal(c->backend[4].new_flows, count_eq(fresh, N_FLOWS, 4));

	/* Without the flow table the same established flows would have moved. */
	fx->w->ft = lb_flow_table_create(FLOW_CAPACITY);
	assert_non_null(fx->w->ft);
	send_flows(fx, 0, N_FLOWS, unpinned);
	assert_true(count_eq(unpinned, N_FLOWS, 4) > 0);
	lb_flow_table_free(fx->w->ft);
	fx->w->ft = pinned;
}

/*
 * A backend removed: the configuration is rebuilt without it and the others
 * keep their ids (as control's reload does), so its id is gone from the
 * registry. Only its flows move, each counted as re-chosen once.
 */
static void
test_pipeline_remove_backend_moves_only_its_flows(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS], again[N_FLOWS];
	unsigned int on1;
	uint64_t new_flows;

	send_flows(fx, 0, N_FLOWS, before);
	on1 = count_eq(before, N_FLOWS, 1);
	assert_true(on1 > 0);
	fx_config(fx, cfg_load(1500, "icmp",
	                       "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": "
	                       "\"tcp\", \"backends\": [{\"address\": \"10.1.0.1\"}, "
	                       "{\"address\": \"10.1.0.3\"}, {\"address\": \"10.1.0.4\"}]}"));
	/* Document order would renumber 10.1.0.3 and .4 to 1 and 2: keep them at 2 and 3. */
	fx->cfg->vips[0].backends[1].id = 2;
	fx->cfg->vips[0].backends[2].id = 3;
	fx_publish(fx);
	assert_int_equal(fx->snap->backends[1].gen, 0);

	new_flows = c->vip[0].new_flows;
	send_flows(fx, 0, N_FLOWS, after);
	for (uint32_t i = 0; i < N_FLOWS; i++) {
		if (before[i] == 1)
			assert_true(after[i] == 0 || after[i] == 2 || after[i] == 3);
		else
			assert_int_equal(after[i], before[i]);
	}
	assert_int_equal(c->flow_rechosen, on1);
	assert_int_equal(c->vip[0].new_flows - new_flows, on1);
	/* Re-pinned: the next packets are plain hits. */
	send_flows(fx, 0, N_FLOWS, again);
	assert_memory_equal(again, after, sizeof(after));
	assert_int_equal(c->flow_rechosen, on1);
}

/*
 * The same id reused for another backend with a new generation: flows pinned
 * to the old membership are recognised as stale and re-chosen; the others stay.
 */
static void
test_pipeline_reused_id_new_gen_rechooses(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS];
	unsigned int on1;

	send_flows(fx, 0, N_FLOWS, before);
	on1 = count_eq(before, N_FLOWS, 1);
	fx_config(fx, cfg_load(1500, "icmp",
	                       "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": "
	                       "\"tcp\", \"backends\": [{\"address\": \"10.1.0.1\"}, "
	                       "{\"address\": \"10.1.0.9\"}, {\"address\": \"10.1.0.3\"}, "
	                       "{\"address\": \"10.1.0.4\"}]}"));
	fx->cfg->vips[0].backends[1].gen = 2;
	fx_publish(fx);
	assert_int_equal(fx->snap->backends[1].gen, 2);

	send_flows(fx, 0, N_FLOWS, after);
	for (uint32_t i = 0; i < N_FLOWS; i++)
		if (before[i] != 1)
			assert_int_equal(after[i], before[i]);
	assert_int_equal(c->flow_rechosen, on1);
}

/* Set backend j of VIP 0 to a state / weight and publish. */
static void
set_backend(struct fixture *fx, uint32_t j, uint8_t st, uint32_t weight)
{
	fx->cfg->vips[0].backends[j].state = st;
	fx->cfg->vips[0].backends[j].weight = weight;
	fx_publish(fx);
}

/* Draining, or weight 0: established flows stay, no new flow goes there. */
static void
check_keeps_established_no_new(struct fixture *fx, uint8_t st, uint32_t weight)
{
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS], fresh[N_FLOWS];

	send_flows(fx, 0, N_FLOWS, before);
	assert_true(count_eq(before, N_FLOWS, 1) > 0);
	set_backend(fx, 1, st, weight);
	send_flows(fx, 0, N_FLOWS, after);
	assert_memory_equal(after, before, sizeof(before));
	assert_int_equal(c->flow_rechosen, 0);
	send_flows(fx, 100000, N_FLOWS, fresh);
	assert_int_equal(count_eq(fresh, N_FLOWS, 1), 0);
	assert_int_equal(c->flow_rechosen, 0);
}

static void
test_pipeline_draining_keeps_flows_gets_no_new(void **state)
{
	check_keeps_established_no_new(*state, LB_BACKEND_DRAINING, 1);
}

static void
test_pipeline_weight_zero_keeps_flows_gets_no_new(void **state)
{
	check_keeps_established_no_new(*state, LB_BACKEND_ACTIVE, 0);
}

/* Down: its flows are re-chosen onto the others, nothing else moves. */
static void
test_pipeline_down_moves_its_flows(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS];
	unsigned int on1;

	send_flows(fx, 0, N_FLOWS, before);
	on1 = count_eq(before, N_FLOWS, 1);
	assert_true(on1 > 0);
	set_backend(fx, 1, LB_BACKEND_DOWN, 1);
	send_flows(fx, 0, N_FLOWS, after);
	for (uint32_t i = 0; i < N_FLOWS; i++) {
		if (before[i] == 1)
			assert_int_not_equal(after[i], 1);
		else
			assert_int_equal(after[i], before[i]);
	}
	assert_int_equal(c->flow_rechosen, on1);
	assert_int_equal(c->backend[1].packets, on1); /* only the first round */
}

/*
 * A live flow's entry is refreshed by its packets: flows sending every half
 * idle time stay pinned for four idle times although a backend was added in
 * between (Maglev now sends some of them to it), while flows that fell silent
 * for longer than the idle time have expired and follow the new table.
 */
static void
test_pipeline_live_flows_outlive_idle_time(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], now_[N_FLOWS], silent[N_FLOWS], fresh[N_FLOWS];
	unsigned int moved_in_table = 0;
	uint64_t hits;

	send_flows(fx, 0, N_FLOWS, before);
	send_flows(fx, 200000, N_FLOWS, silent);
	fx_config(fx, cfg_load(1500, "icmp",
	                       "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": "
	                       "\"tcp\", \"backends\": [" VIP0_BACKENDS
	                       ", {\"address\": \"10.1.0.5\"}]}"));
	hits = c->flow_hits;
	for (int step = 1; step <= 8; step++) {
		fx->w->now = NOW + (uint32_t)step * (IDLE / 2);
		send_flows(fx, 0, N_FLOWS, now_);
		assert_memory_equal(now_, before, sizeof(before));
	}
	assert_int_equal(c->flow_hits - hits, 8 * N_FLOWS);

	/* The silent flows expired: they are new flows on the new table. */
	fx->w->now += 1;
	hits = c->flow_misses;
	send_flows(fx, 200000, N_FLOWS, fresh);
	assert_int_equal(c->flow_misses - hits, N_FLOWS);
	for (uint32_t i = 0; i < N_FLOWS; i++)
		moved_in_table += fresh[i] != silent[i];
	/* About 1/5 of them belong to the new backend now; never none of 400. */
	assert_true(moved_in_table > 0);
	assert_int_equal(moved_in_table, count_eq(fresh, N_FLOWS, 4));
}

/*
 * Membership under a SYN flood: 16 established connections (two packets each)
 * in a 64-entry table, two backends draining, then 400 SYNs from spoofed
 * sources, each a never-seen flow, 25 per bucket on average. Every
 * established connection must still reach the backend the test recorded for
 * it before the flood, those on the draining backends included (Maglev no
 * longer picks them for anything new).
 */
#define EST_FLOWS 16
#define FLOOD 400
#define SMALL_TABLE 64

static void
send_syns(struct fixture *fx, uint32_t base, uint32_t n)
{
	static struct frame fr[LB_BURST];
	const struct frame *f[LB_BURST];
	int fate[LB_BURST], bid[LB_BURST];

	for (uint32_t i = 0; i < n; i += LB_BURST) {
		uint32_t k = n - i < LB_BURST ? n - i : LB_BURST;

		for (uint32_t j = 0; j < k; j++) {
			struct flow fl = flow4(base + i + j);

			build(&fr[j], &fl, 0, IP4_DF, false);
			fr[j].b[fr[j].l2 + 20 + 13] = 0x02; /* SYN alone */
			f[j] = &fr[j];
		}
		run_frames(fx, f, k, fate, bid);
		for (uint32_t j = 0; j < k; j++)
			assert_int_equal(fate[j], FATE_FWD);
	}
}

static void
test_pipeline_syn_flood_keeps_drained_flows(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	int est[EST_FLOWS], again[EST_FLOWS], after[EST_FLOWS];
	unsigned int on_drained;
	uint64_t hits;

	lb_flow_table_free(fx->w->ft);
	fx->w->ft = lb_flow_table_create(SMALL_TABLE);
	assert_non_null(fx->w->ft);
	fx->w->syn_idle = IDLE / 100;
	send_flows(fx, 0, EST_FLOWS, est); /* the test's record of each backend */
	hits = c->flow_hits;
	send_flows(fx, 0, EST_FLOWS, again); /* the second packet confirms */
	assert_memory_equal(again, est, sizeof(est));
	assert_int_equal(c->flow_hits - hits, EST_FLOWS);
	on_drained = count_eq(est, EST_FLOWS, 1) + count_eq(est, EST_FLOWS, 2);
	assert_true(on_drained > 0);
	fx->cfg->vips[0].backends[1].state = LB_BACKEND_DRAINING;
	set_backend(fx, 2, LB_BACKEND_DRAINING, 1);

	fx->w->now += 1;
	send_syns(fx, 1000000, FLOOD);
	fx->w->now += 1;
	hits = c->flow_hits;
	send_flows(fx, 0, EST_FLOWS, after);
	assert_memory_equal(after, est, sizeof(est));
	assert_int_equal(c->flow_hits - hits, EST_FLOWS);
	assert_int_equal(c->flow_rechosen, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_pipeline_add_backend_keeps_established),
	        T(test_pipeline_remove_backend_moves_only_its_flows),
	        T(test_pipeline_reused_id_new_gen_rechooses),
	        T(test_pipeline_draining_keeps_flows_gets_no_new),
	        T(test_pipeline_weight_zero_keeps_flows_gets_no_new),
	        T(test_pipeline_down_moves_its_flows),
	        T(test_pipeline_live_flows_outlive_idle_time),
	        T(test_pipeline_syn_flood_keeps_drained_flows),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
