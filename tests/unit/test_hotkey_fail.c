/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the hot-key controller when things go wrong, on the simulated
 * VIP of hotkey_fixture.c and the controller's logical clock (window numbers,
 * never time): a replica made unusable by a change is replaced against the
 * change's own snapshot, before any window; a batch removing a VIP's backends
 * or the VIP leaves no override naming them; a window control could not read
 * decides nothing; an idle VIP demotes on the schedule of a key gone cold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/model/config.h"
#include "control/hot/hotkey.h"
#include "control/build/snapshot_build.h"
#include "dataplane/override.h"
#include "hotkey_fixture.h"

#define P_HOT 0.08
#define T_WIN 9900000u
#define D_WIN 5u /* demote_windows of these tests */

static uint64_t
counter(const struct lb_hotkey *h, const char *name)
{
	json_t *c = lb_hotkey_counters_json(h);
	uint64_t v;

	assert_non_null(c);
	assert_true(json_is_integer(json_object_get(c, name)));
	v = (uint64_t)json_integer_value(json_object_get(c, name));
	json_decref(c);
	return v;
}

static bool
has(const uint16_t *list, uint16_t n, uint16_t id)
{
	for (uint16_t i = 0; i < n; i++)
		if (list[i] == id)
			return true;
	return false;
}

/* hot.margin's default (docs/operations.md). */
#define DEFAULT_MARGIN 0.05

/* The planner's rule for even other traffic (docs/hot-keys.md, "Planning
 * under noise"), computed here: the fewest r whose replicas, each carrying the
 * others' (1 - p) / N of the traffic plus p / r of the key, stay under the cap
 * less the margin, x = N p / (c (1 - margin) - 1 + p), raised to the next
 * rung of the ladder 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ... */
static uint32_t
model_r(uint32_t n, double p, double c, double margin)
{
	static const uint32_t ladder[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};
	double x = n * p / (c * (1 - margin) - 1 + p);

	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++)
		if (ladder[i] >= x - 1e-9)
			return (uint32_t)(ladder[i] > n ? n : ladder[i]);
	return (uint32_t)n;
}

/* Whether r replicas over n backends hold the cap less the margin with even
 * other traffic: (1 - p) + n p / r <= c (1 - margin), in averages. */
static bool
model_holds(uint32_t n, double p, double c, double margin, uint32_t r)
{
	return (1 - p) + n * p / r <= c * (1 - margin) + 1e-9;
}

/* Every replica of o is an active backend of o's VIP in s, none twice. */
static void
assert_usable_in(const struct lb_snapshot *s, const struct lb_hot_override *o)
{
	assert_true(o->n_replicas >= 1);
	for (uint16_t i = 0; i < o->n_replicas; i++) {
		uint16_t id = o->replicas[i];

		assert_true(id < s->n_backends);
		assert_true(s->backends[id].gen != 0);
		assert_int_equal(s->backends[id].vip_id, o->vip_id);
		assert_true(active(s, id));
		assert_true(lb_hotkey_replica_in(s, o, id));
		assert_false(has(o->replicas, i, id));
	}
}

/* The override table of a snapshot built from cfg with the controller's
 * overrides as they are now (what control/runtime/publish.c lays in). */
static struct lb_snapshot *
build_with(const struct lb_config *cfg, const struct lb_hotkey *h, uint64_t gen)
{
	struct lb_snapshot_override ov[8];
	const struct lb_hot_override *o;
	uint32_t n = lb_hotkey_overrides(h, &o);
	char err[256];
	struct lb_snapshot *s;

	assert_true(n <= 8);
	for (uint32_t i = 0; i < n; i++)
		ov[i] = (struct lb_snapshot_override){o[i].vip_id, o[i].key_hash, o[i].n_replicas,
		                                      o[i].replicas};
	s = lb_snapshot_build_ext(cfg, gen, NULL, ov, n, err, sizeof(err));
	assert_non_null(s);
	return s;
}

/* --- a replica failure, in the change's snapshot ------------------------------ */

enum how { DOWN, DRAINING, WEIGHT0, REMOVED };
static const enum how g_how[] = {DOWN, DRAINING, WEIGHT0, REMOVED};
static const char *const g_how_name[] = {"down", "draining", "weight 0", "removed"};

/*
 * N = 20, p = 0.3, c = 1.25, margin 0.05: r = 13 (11..12 over the 19 left).
 * A replica is made unusable by a change of configuration. (1) The snapshot
 * built for the change with the controller's overrides as they stood carries
 * no override naming it (the builder's own check). (2) lb_hotkey_revalidate
 * on that snapshot, before any window, replaces it: r replicas by the model,
 * all usable there, one re-plan; a second call and the next window change
 * nothing, and that window's traffic is under the cap.
 */
static void
test_failure_replanned_in_the_change_snapshot(void **state)
{
	const enum how how = *(const enum how *)*state;
	struct lb_hot_params p = {.epsilon = 0.25};
	struct sim *m = sim_new(false, 20, &p);
	struct lb_cfg_vip *cv = &m->cfg->vips[0];
	const struct lb_hot_override *o;
	const struct lb_override_slot *slot;
	struct lb_snapshot *laid;
	uint32_t r = model_r(20, 0.3, 1.25, DEFAULT_MARGIN);
	/* Over the 19 left the same count still holds the cap less the margin,
	 * so the re-plan keeps it and substitutes the gone replica's position
	 * (only its flows move). */
	double ratio;
	uint16_t gone, before[LB_HOT_MAX_REPLICAS];

	m->T = 2000000;
	m->hot = 600000;
	assert_true(sim_step(m, NULL));
	o = find_ov(m->h, 0, HOT_HASH);
	assert_non_null(o);
	assert_int_equal(o->n_replicas, r);
	gone = o->replicas[1];
	memcpy(before, o->replicas, o->n_replicas * sizeof(before[0]));
	printf("  replica %u %s\n", gone, g_how_name[how]);
	switch (how) {
	case DOWN:
		cv->backends[gone].state = LB_BACKEND_DOWN;
		break;
	case DRAINING:
		cv->backends[gone].state = LB_BACKEND_DRAINING;
		break;
	case WEIGHT0:
		cv->backends[gone].weight = 0;
		break;
	case REMOVED:
		memmove(&cv->backends[gone], &cv->backends[gone + 1],
		        (cv->n_backends - gone - 1) * sizeof(*cv->backends));
		cv->n_backends--;
		break;
	}
	sim_publish(m); /* m->s: the change's snapshot, no window has seen it */

	/* (1) Laid out as the controller still has it: the replica is left out. */
	laid = build_with(m->cfg, m->h, m->generation);
	slot = lb_override_find(&laid->overrides, 0, HOT_HASH);
	assert_non_null(slot);
	assert_false(has(&laid->overrides.replicas[slot->first], slot->n_replicas, gone));
	for (uint16_t i = 0; i < slot->n_replicas; i++)
		assert_true(active(laid, laid->overrides.replicas[slot->first + i]));
	lb_snapshot_free(laid);

	/* (2) Re-planned against the change's snapshot, before any window. */
	assert_true(lb_hotkey_revalidate(m->h, m->s));
	o = find_ov(m->h, 0, HOT_HASH);
	assert_non_null(o);
	assert_false(has(o->replicas, o->n_replicas, gone));
	assert_usable_in(m->s, o);
	printf("  r = %u (model %u), after the change %u (model %u)\n", r, r, o->n_replicas, r);
	assert_true(model_holds(19, 0.3, 1.25, DEFAULT_MARGIN, r));
	assert_int_equal(o->n_replicas, r);
	/* A membership that stays (down, draining, weight 0) keeps its place in
	 * the key's order: only its position changes. A removed one leaves the
	 * order, so the positions after it shift. */
	for (uint16_t i = 0; how != REMOVED && i < o->n_replicas; i++)
		if (i != 1)
			assert_int_equal(o->replicas[i], before[i]);
	assert_int_equal(counter(m->h, "replans"), 1);
	laid = build_with(m->cfg, m->h, m->generation);
	slot = lb_override_find(&laid->overrides, 0, HOT_HASH);
	assert_non_null(slot);
	assert_int_equal(slot->n_replicas, o->n_replicas);
	lb_snapshot_free(laid);
	assert_false(lb_hotkey_revalidate(m->h, m->s));
	/* The traffic of the next window, spread by the change's snapshot with
	 * the re-planned override: under the cap. */
	assert_false(sim_step(m, &ratio));
	assert_true(ratio <= 1.25 + 1e-9);
	assert_int_equal(counter(m->h, "replans"), 1);
	sim_free(m);
}

/*
 * Two VIPs of 10 backends, a hot key on each. One batch removes VIP 0's
 * backends that are its key's replicas (but two) and VIP 1 with all its
 * backends. Against the batch's snapshot, before any window: VIP 1's
 * override is dropped, VIP 0's names only backends of the snapshot's registry.
 * Before that, a reader holding the stale overrides finds the removed ids
 * rejected by lb_hotkey_replica_in (hot_list's check).
 */
static void
test_batch_removal_leaves_no_stale_override(void **state)
{
	const uint32_t n2[2] = {10, 10};
	struct lb_config *cfg = cfg_make(2, n2);
	struct lb_snapshot *s = snap_make(cfg, 1);
	struct lb_hotkey *h = lb_hotkey_create(NULL);
	uint64_t load[20], total[2] = {1000000, 1000000};
	struct lb_hot_candidate c[2] = {{.vip_id = 0, .key_hash = 11, .count = 300000},
	                                {.vip_id = 1, .key_hash = 22, .count = 300000}};
	const struct lb_hot_override *o;
	struct lb_cfg_vip *cv;
	uint32_t kept = 0, stale = 0, w = 0;

	(void)state;
	for (int i = 0; i < 20; i++)
		load[i] = 100000;
	load[lb_maglev_pick(s, &s->vips[0], 11)] += 300000;
	load[lb_maglev_pick(s, &s->vips[1], 22)] += 300000;
	assert_true(lb_hotkey_window(h, s, load, total, c, 2, 1));
	o = find_ov(h, 0, 11);
	assert_non_null(o);
	assert_true(o->n_replicas >= 3);
	assert_non_null(find_ov(h, 1, 22));

	/* The batch: VIP 1 removed; VIP 0 keeps two of its key's replicas and
	 * the backends that were not replicas. */
	lb_snapshot_free(s);
	cfg->n_vips = 1;
	cv = &cfg->vips[0];
	for (uint32_t j = 0; j < cv->n_backends; j++) {
		bool rep = has(o->replicas, o->n_replicas, cv->backends[j].id);

		if (rep && kept++ >= 2)
			continue;
		cv->backends[w++] = cv->backends[j];
	}
	cv->n_backends = w;
	s = snap_make(cfg, 2);

	/* A reader of the stale state rejects every id the batch removed. */
	for (uint16_t i = 0; i < o->n_replicas; i++)
		stale += !lb_hotkey_replica_in(s, o, o->replicas[i]);
	assert_int_equal(stale, o->n_replicas - 2);
	o = find_ov(h, 1, 22);
	for (uint16_t i = 0; i < o->n_replicas; i++)
		assert_false(lb_hotkey_replica_in(s, o, o->replicas[i]));

	assert_true(lb_hotkey_revalidate(h, s));
	assert_null(find_ov(h, 1, 22));
	assert_int_equal(counter(h, "dropped"), 1);
	o = find_ov(h, 0, 11);
	assert_non_null(o);
	assert_usable_in(s, o);
	lb_hotkey_free(h);
	lb_snapshot_free(s);
	cfg->n_vips = 2; /* VIP 1 is still allocated: freed with the rest */
	lb_config_free(cfg);
}

/* --- missed and idle windows -------------------------------------------------- */

/* One window control could not read, on the simulation's clock. */
static void
miss(struct sim *m)
{
	lb_hotkey_window_missed(m->h, ++m->window);
}

/*
 * N = 100, p = 0.08, D = 5. While the key stays at p, 30 windows with 2 of
 * every 3 missed and then a run of 12 missed in a row: no demotion, no
 * re-plan, one promotion, and windows_missed counts them. Then the key stops:
 * it demotes after exactly D read windows below φ/2, however many missed
 * windows fall between them (they neither count nor reset the count).
 */
static void
test_missed_windows_decide_nothing(void **state)
{
	struct lb_hot_params p = {.demote_windows = D_WIN};
	struct sim *m = sim_new(false, N_SIM, &p);
	uint64_t missed = 0, low_read = 0;

	(void)state;
	m->T = T_WIN;
	m->hot = (uint64_t)(P_HOT * T_WIN + 0.5);
	assert_true(sim_step(m, NULL));
	for (int k = 0; k < 30; k++) {
		if (k % 3 != 0) {
			miss(m);
			missed++;
		} else {
			sim_step(m, NULL);
		}
	}
	for (int k = 0; k < 12; k++, missed++)
		miss(m);
	assert_non_null(find_ov(m->h, 0, HOT_HASH));
	assert_int_equal(find_ov(m->h, 0, HOT_HASH)->low_windows, 0);
	assert_int_equal(counter(m->h, "promotions"), 1);
	assert_int_equal(counter(m->h, "demotions"), 0);
	assert_int_equal(counter(m->h, "windows_missed"), missed);

	/* The key stops; read windows alternate with missed ones. */
	m->hot = 0;
	while (find_ov(m->h, 0, HOT_HASH) != NULL) {
		miss(m);
		missed++;
		sim_step(m, NULL);
		low_read++;
		assert_true(low_read <= D_WIN);
	}
	assert_int_equal(low_read, D_WIN);
	assert_int_equal(counter(m->h, "demotions"), 1);
	assert_int_equal(counter(m->h, "windows_missed"), missed);
	sim_free(m);
}

/*
 * The VIP goes idle (no packet at all: its total is 0) after its key was
 * promoted: the override is demoted within D + 1 windows of the key
 * stopping, on the D-th idle window.
 */
static void
test_idle_vip_demotes(void **state)
{
	struct lb_hot_params p = {.demote_windows = D_WIN};
	struct sim *m = sim_new(false, N_SIM, &p);
	uint64_t stop;

	(void)state;
	m->T = T_WIN;
	m->hot = (uint64_t)(P_HOT * T_WIN + 0.5);
	assert_true(sim_step(m, NULL));
	assert_false(sim_step(m, NULL));
	stop = m->window; /* the last window with traffic */
	m->T = 0;
	m->hot = 0;
	while (find_ov(m->h, 0, HOT_HASH) != NULL) {
		sim_step(m, NULL);
		assert_true(m->window - stop <= D_WIN + 1);
	}
	assert_int_equal(m->window - stop, D_WIN);
	assert_int_equal(counter(m->h, "demotions"), 1);
	assert_int_equal(counter(m->h, "windows_missed"), 0);
	sim_free(m);
}

int
main(void)
{
	struct CMUnitTest tests[16];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(g_how) / sizeof(g_how[0]); i++)
		tests[n++] = (struct CMUnitTest)cmocka_unit_test_prestate(
		        test_failure_replanned_in_the_change_snapshot, (void *)&g_how[i]);
	tests[n++] =
	        (struct CMUnitTest)cmocka_unit_test(test_batch_removal_leaves_no_stale_override);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_missed_windows_decide_nothing);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_idle_vip_demotes);
	return _cmocka_run_group_tests("hotkey_fail", tests, n, NULL, NULL);
}
