/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-key overrides through control/runtime/publish.c: a configuration change that
 * makes a replica of an override unusable (down, draining, weight 0, removed)
 * publishes a snapshot whose override table already lacks it and holds as many
 * replicas as before, the controller agreeing; no window runs in between.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rte_rcu_qsbr.h>

#include "control/model/config.h"
#include "config_fixture.h"
#include "eal.h"
#include "control/hot/hotkey.h"
#include "dataplane/override.h"
#include "control/runtime/publish.h"

#define N_CORES 2
#define N_BE 10
#define KEY 0x0123456789abcdefULL

static struct rte_rcu_qsbr *qsv;
static struct lb_core_counters *counters[N_CORES];
static const struct lb_core_counters *cores[N_CORES];
static const unsigned int lcores[N_CORES] = {3, 5};
static struct lb_snapshot *live;
static struct lb_publisher pub;
static struct lb_hotkey *hot;

static struct lb_config *
config(void)
{
	char doc[4096];
	int len = snprintf(doc, sizeof(doc),
	                   "{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": "
	                   "\"02:00:00:00:00:01\"}, \"maglev\": {\"table_size\": 1021},"
	                   " \"vips\": [{\"address\": \"192.0.2.1\", \"port\": 80, "
	                   "\"protocol\": \"tcp\", \"key\": \"src_ip\", \"hot_mode\": \"spread\", "
	                   "\"backends\": [");

	for (int j = 0; j < N_BE; j++)
		len += snprintf(doc + len, sizeof(doc) - (size_t)len,
		                "%s{\"address\": \"10.1.0.%d\"}", j ? ", " : "", j + 1);
	snprintf(doc + len, sizeof(doc) - (size_t)len, "]}]}");
	return load_ok(doc);
}

/* Publish cfg; both cores then report, as running workers do. */
static void
apply(struct lb_config *cfg)
{
	char err[256];

	assert_int_equal(lb_publish_apply(&pub, cfg, false, err, sizeof(err)), 0);
	for (unsigned int i = 0; i < N_CORES; i++)
		rte_rcu_qsbr_quiescent(qsv, i);
	lb_publish_tick(&pub);
}

static int
setup(void **state)
{
	struct lb_publish_params p = {0};
	size_t sz = rte_rcu_qsbr_get_memsize(N_CORES);

	(void)state;
	qsv = aligned_alloc(RTE_CACHE_LINE_SIZE,
	                    (sz + RTE_CACHE_LINE_SIZE - 1) & ~(size_t)(RTE_CACHE_LINE_SIZE - 1));
	assert_non_null(qsv);
	assert_int_equal(rte_rcu_qsbr_init(qsv, N_CORES), 0);
	for (unsigned int i = 0; i < N_CORES; i++) {
		counters[i] = calloc(1, sizeof(*counters[i]));
		assert_non_null(counters[i]);
		cores[i] = counters[i];
		assert_int_equal(rte_rcu_qsbr_thread_register(qsv, i), 0);
		rte_rcu_qsbr_thread_online(qsv, i);
	}
	live = NULL;
	memset(&pub, 0, sizeof(pub));
	p.qsv = qsv;
	p.snap = &live;
	p.cores = cores;
	p.lcores = lcores;
	p.n_cores = N_CORES;
	lb_publish_init(&pub, &p);
	hot = lb_hotkey_create(NULL);
	assert_non_null(hot);
	pub.hot = hot;
	apply(config());
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	lb_publish_fini(&pub);
	lb_hotkey_free(hot);
	for (unsigned int i = 0; i < N_CORES; i++)
		free(counters[i]);
	free(qsv);
	return 0;
}

enum how { DOWN, DRAINING, WEIGHT0, REMOVED };
static const enum how g_how[] = {DOWN, DRAINING, WEIGHT0, REMOVED};

static bool
has(const uint16_t *l, uint16_t n, uint16_t id)
{
	for (uint16_t i = 0; i < n; i++)
		if (l[i] == id)
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
static uint16_t
model_r(uint32_t n, double p, double c, double margin)
{
	static const uint32_t ladder[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};
	double x = n * p / (c * (1 - margin) - 1 + p);

	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++)
		if (ladder[i] >= x - 1e-9)
			return (uint16_t)(ladder[i] > n ? n : ladder[i]);
	return (uint16_t)n;
}

/* Whether r replicas over n backends hold the cap less the margin with even
 * other traffic: (1 - p) + n p / r <= c (1 - margin), in averages. */
static bool
model_holds(uint32_t n, double p, double c, double margin, uint32_t r)
{
	return (1 - p) + n * p / r <= c * (1 - margin) + 1e-9;
}

/*
 * N = 10, p = 0.3, c = 1.25, margin 0.05: r = ceil(3 / 0.4875) = 7, the rung 8, by the
 * model. The key is promoted in one window and published; then one change
 * makes its second replica unusable. The snapshot that change publishes: the
 * override is there, without that replica, with r over the 9 left by the model
 * (at least the fewest that hold the cap, at most those that hold it less the
 * margin: 5..6), all active backends of the VIP, the same list as the
 * controller's.
 */
static void
test_change_publishes_without_the_replica(void **state)
{
	const enum how how = *(const enum how *)*state;
	uint64_t load[N_BE], total[1] = {1000000};
	struct lb_hot_candidate c = {.vip_id = 0, .key_hash = KEY, .count = 300000};
	const struct lb_override_slot *slot;
	const struct lb_hot_override *o;
	struct lb_config *cfg;
	const uint16_t *reps;
	uint16_t gone, home, r = model_r(N_BE, 0.3, 1.25, DEFAULT_MARGIN);

	/* Other traffic even, the key's 300000 packets on its Maglev home. */
	for (int i = 0; i < N_BE; i++)
		load[i] = 70000;
	home = lb_maglev_pick(live, &live->vips[0], KEY);
	assert_true(home < N_BE);
	load[home] += 300000;
	c.vip_id = live->vips[0].id;
	total[0] = 1000000;
	assert_true(lb_hotkey_window(hot, live, load, total, &c, 1, 1));
	apply(lb_config_clone(pub.cfg));
	slot = lb_override_find(&live->overrides, c.vip_id, KEY);
	assert_non_null(slot);
	assert_int_equal(slot->n_replicas, r);
	gone = live->overrides.replicas[slot->first + 1];

	cfg = lb_config_clone(pub.cfg);
	assert_non_null(cfg);
	for (uint32_t j = 0; j < cfg->vips[0].n_backends; j++) {
		struct lb_cfg_backend *b = &cfg->vips[0].backends[j];

		if (b->id != gone)
			continue;
		if (how == DOWN)
			b->state = LB_BACKEND_DOWN;
		else if (how == DRAINING)
			b->state = LB_BACKEND_DRAINING;
		else if (how == WEIGHT0)
			b->weight = 0;
		else
			memmove(b, b + 1, (cfg->vips[0].n_backends - j - 1) * sizeof(*b));
		if (how == REMOVED)
			cfg->vips[0].n_backends--;
		break;
	}
	apply(cfg);

	slot = lb_override_find(&live->overrides, c.vip_id, KEY);
	assert_non_null(slot);
	reps = &live->overrides.replicas[slot->first];
	assert_false(has(reps, slot->n_replicas, gone));
	/* The same count holds the cap over the 9 left: kept, the gone
	 * replica's position substituted. */
	assert_true(model_holds(N_BE - 1, 0.3, 1.25, DEFAULT_MARGIN, r));
	assert_int_equal(slot->n_replicas, r);
	for (uint16_t i = 0; i < slot->n_replicas; i++) {
		const struct lb_backend *b = &live->backends[reps[i]];

		assert_true(reps[i] < live->n_backends);
		assert_int_equal(b->vip_id, c.vip_id);
		assert_int_equal(b->state, LB_BACKEND_ACTIVE);
		assert_true(b->weight > 0);
	}
	assert_int_equal(lb_hotkey_overrides(hot, &o), 1);
	assert_int_equal(o->n_replicas, slot->n_replicas);
	assert_memory_equal(o->replicas, reps, slot->n_replicas * sizeof(*reps));
}

int
main(void)
{
	struct CMUnitTest tests[4];

	for (size_t i = 0; i < 4; i++)
		tests[i] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
		        test_change_publishes_without_the_replica, setup, teardown,
		        (void *)&g_how[i]);
	if (test_eal_init("test_hot_publish", "spw-hotpub") < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	return _cmocka_run_group_tests("hot_publish", tests, 4, NULL, NULL);
}
