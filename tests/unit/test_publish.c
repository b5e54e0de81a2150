/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Publication against a worker that stops reporting quiescent states: the
 * test owns an RCU variable with two registered threads, reports for one of
 * them and never for the other, and checks that publication never blocks,
 * that changes are refused naming the silent core, that the retired
 * snapshots kept alive stay within the documented bound, and that changes are
 * accepted again once the core reports.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_rcu_qsbr.h>

#include "control/model/config.h"
#include "config_fixture.h"
#include "eal.h"
#include "control/runtime/publish.h"

#define N_CORES 2
#define STALLED 0 /* the thread id (and core index) that never reports */
#define HEALTHY 1
/* docs/reliability.md: at most 8 replaced snapshots wait for their readers. */
#define DOC_RETIRED_MAX 8
#define GUARD_S 30 /* a publication that blocks fails the test, not the suite's timeout */

#define CFG                                                                                        \
	"{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": \"02:00:00:00:00:01\"},"      \
	" \"maglev\": {\"table_size\": 251},"                                                      \
	" \"vips\": [{\"address\": \"192.0.2.1\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\"}]}]}"

static struct rte_rcu_qsbr *qsv;
static struct lb_core_counters *counters[N_CORES];
static const struct lb_core_counters *cores[N_CORES];
static const unsigned int lcores[N_CORES] = {7, 9};
static struct lb_snapshot *live;
static struct lb_publisher pub;

static void
on_alarm(int sig)
{
	static const char msg[] = "FAIL: a publication blocked (a silent worker hangs control)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static struct lb_config *
config(void)
{
	return load_ok(CFG);
}

/* The running configuration with the first backend's weight set to w. */
static struct lb_config *
change(uint32_t w)
{
	struct lb_config *c = lb_config_clone(pub.cfg);

	assert_non_null(c);
	c->vips[0].backends[0].weight = w;
	return c;
}

static int
setup(void **state)
{
	struct lb_publish_params p = {0};
	char err[256];
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
	assert_int_equal(lb_publish_apply(&pub, config(), false, err, sizeof(err)), 0);
	signal(SIGALRM, on_alarm);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	alarm(0);
	lb_publish_fini(&pub);
	for (unsigned int i = 0; i < N_CORES; i++)
		free(counters[i]);
	free(qsv);
	return 0;
}

/*
 * 100 changes while one core never reports: none blocks; once the retired
 * snapshots reach the bound, the changes are refused with -EBUSY naming the
 * silent core's lcore and not the healthy one's. No retired snapshot can be
 * freed meanwhile, so the accepted changes are the snapshots kept alive.
 */
static void
test_publish_never_blocks_on_a_silent_core(void **state)
{
	unsigned int ok = 0, refused = 0;
	char err[512];

	(void)state;
	alarm(GUARD_S);
	for (uint32_t k = 0; k < 100; k++) {
		int rc = lb_publish_apply(&pub, change(2 + k % 50), false, err, sizeof(err));

		rte_rcu_qsbr_quiescent(qsv, HEALTHY);
		if (rc == 0) {
			assert_int_equal(refused, 0); /* once refused, refused until it reports */
			ok++;
			continue;
		}
		assert_int_equal(rc, -EBUSY);
		assert_non_null(strstr(err, "lcore 7"));
		assert_null(strstr(err, "lcore 9"));
		refused++;
	}
	alarm(0);
	assert_true(refused > 0);
	assert_true(ok <= DOC_RETIRED_MAX);
}

/*
 * Tick until a core is reported stalled (bounded by GUARD_S through the
 * alarm), the healthy core reporting all along as a running worker does.
 */
static void
wait_stalled(bool *st, bool healthy_online)
{
	while (lb_publish_stalled(&pub, st) == 0) {
		if (healthy_online)
			rte_rcu_qsbr_quiescent(qsv, HEALTHY);
		lb_publish_tick(&pub);
		usleep(10000);
	}
}

/*
 * A few changes, then the silent core is named (and only it) once it has
 * held a retired snapshot long enough; a change is refused; after it reports
 * once, the tick frees what it held and changes are accepted again.
 */
static void
test_publish_names_the_stalled_core_and_recovers(void **state)
{
	bool st[N_CORES];
	char err[512];

	(void)state;
	alarm(GUARD_S);
	for (uint32_t k = 0; k < 3; k++) {
		assert_int_equal(lb_publish_apply(&pub, change(2 + k), false, err, sizeof(err)), 0);
		rte_rcu_qsbr_quiescent(qsv, HEALTHY);
	}
	wait_stalled(st, true);
	assert_true(st[STALLED]);
	assert_false(st[HEALTHY]);
	assert_int_equal(lb_publish_apply(&pub, change(9), false, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "lcore 7"));
	/* The refused change is not the running one. */
	assert_int_equal(pub.cfg->vips[0].backends[0].weight, 4);

	rte_rcu_qsbr_quiescent(qsv, STALLED);
	lb_publish_tick(&pub);
	assert_int_equal(lb_publish_stalled(&pub, st), 0);
	assert_false(st[STALLED]);
	assert_int_equal(lb_publish_apply(&pub, change(9), false, err, sizeof(err)), 0);
	assert_int_equal(pub.cfg->vips[0].backends[0].weight, 9);
	alarm(0);
}

/* No change at all: the tick's probe finds the silent core, and the first change is refused. */
static void
test_publish_probe_finds_a_stall_without_changes(void **state)
{
	bool st[N_CORES];
	char err[512];

	(void)state;
	alarm(GUARD_S);
	rte_rcu_qsbr_quiescent(qsv, STALLED); /* the initial publication's snapshot is not held */
	rte_rcu_qsbr_quiescent(qsv, HEALTHY);
	lb_publish_tick(&pub);
	wait_stalled(st, true);
	assert_true(st[STALLED]);
	assert_false(st[HEALTHY]);
	assert_int_equal(lb_publish_apply(&pub, change(5), false, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "lcore 7"));
	rte_rcu_qsbr_quiescent(qsv, STALLED);
	lb_publish_tick(&pub);
	assert_int_equal(lb_publish_apply(&pub, change(5), false, err, sizeof(err)), 0);
	alarm(0);
}

/*
 * An offline core (a worker that stopped) is never stalled, neither while
 * alone nor beside a stalled one: only the silent online core is named.
 */
static void
test_publish_offline_core_is_not_stalled(void **state)
{
	bool st[N_CORES];
	char err[512];

	(void)state;
	alarm(GUARD_S);
	rte_rcu_qsbr_thread_offline(qsv, HEALTHY);
	rte_rcu_qsbr_quiescent(qsv, STALLED);
	for (uint32_t k = 0; k < 3 * DOC_RETIRED_MAX; k++) {
		assert_int_equal(lb_publish_apply(&pub, change(2 + k), false, err, sizeof(err)), 0);
		rte_rcu_qsbr_quiescent(qsv, STALLED);
	}
	assert_int_equal(lb_publish_stalled(&pub, NULL), 0);
	assert_int_equal(lb_publish_apply(&pub, change(99), false, err, sizeof(err)), 0);
	/* Now the online core goes silent while holding the last snapshot. */
	wait_stalled(st, false);
	assert_true(st[STALLED]);
	assert_false(st[HEALTHY]);
	assert_int_equal(lb_publish_apply(&pub, change(5), false, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "lcore 7"));
	assert_null(strstr(err, "lcore 9"));
	alarm(0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_publish_never_blocks_on_a_silent_core, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_publish_names_the_stalled_core_and_recovers,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_publish_probe_finds_a_stall_without_changes,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_publish_offline_core_is_not_stalled, setup,
	                                        teardown),
	};

	if (test_eal_init("test_publish", "spw-publish") < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
