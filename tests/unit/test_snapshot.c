/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Snapshot builder: Maglev tables shared with the previous snapshot only when
 * their inputs are unchanged (and then byte-identical to a fresh build), freed
 * with the last snapshot that references them (counted by wrapping the
 * allocator: -Wl,--wrap=aligned_alloc,--wrap=free), built alike on any number
 * of threads; and hot-key overrides laid out so workers find them.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "config_fixture.h"
#include "dataplane/override.h"
#include "control/build/snapshot_build.h"

#define CFG                                                                                        \
	"{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": \"02:00:00:00:00:01\"},"      \
	" \"maglev\": {\"table_size\": 65537, \"seed\": \"snap\"},"                                \
	" \"vips\": [{\"address\": \"192.0.2.1\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\"},"    \
	"                          {\"address\": \"10.1.0.3\"}]},"                                 \
	"            {\"address\": \"192.0.2.2\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.2.0.1\"}, {\"address\": \"10.2.0.2\"}]}]}"

/*
 * The allocator model: every aligned_alloc of at least a table's bytes
 * (2 * 65537; the snapshots' other blocks are far smaller here) is recorded
 * until freed. The builder's own counters are not consulted.
 */
#define TRACK_MIN (2u * 65537u)
#define TRACK_MAX 256

void *__real_aligned_alloc(size_t align, size_t size);
void __real_free(void *p);
void *__wrap_aligned_alloc(size_t align, size_t size);
void __wrap_free(void *p);

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static const void *g_live[TRACK_MAX]; /* large blocks allocated and not freed */
static unsigned int g_n_live;

void *
__wrap_aligned_alloc(size_t align, size_t size)
{
	void *p = __real_aligned_alloc(align, size);

	if (p != NULL && size >= TRACK_MIN) {
		pthread_mutex_lock(&g_mu);
		if (g_n_live < TRACK_MAX)
			g_live[g_n_live++] = p;
		pthread_mutex_unlock(&g_mu);
	}
	return p;
}

void
__wrap_free(void *p)
{
	pthread_mutex_lock(&g_mu);
	for (unsigned int i = 0; p != NULL && i < g_n_live; i++)
		if (g_live[i] == p) {
			g_live[i] = g_live[--g_n_live];
			break;
		}
	pthread_mutex_unlock(&g_mu);
	__real_free(p);
}

/* Whether a table's memory lies in a live large block of the model. */
static bool
table_live(const uint16_t *t, size_t bytes)
{
	bool found = false;

	pthread_mutex_lock(&g_mu);
	for (unsigned int i = 0; i < g_n_live && !found; i++)
		found = (const uint8_t *)t >= (const uint8_t *)g_live[i] &&
		        (const uint8_t *)t + bytes <= (const uint8_t *)g_live[i] + 64 + bytes;
	pthread_mutex_unlock(&g_mu);
	return found;
}

static unsigned int
n_live(void)
{
	unsigned int n;

	pthread_mutex_lock(&g_mu);
	n = g_n_live;
	pthread_mutex_unlock(&g_mu);
	return n;
}

/* Distinct table pointers over the snapshots given (NULL entries skipped). */
static unsigned int
distinct_tables(struct lb_snapshot *const *s, unsigned int n)
{
	const uint16_t *seen[64];
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++)
		for (uint32_t v = 0; s[i] != NULL && v < s[i]->n_vips; v++) {
			unsigned int j = 0;

			while (j < k && seen[j] != s[i]->vips[v].table)
				j++;
			if (j == k) {
				assert_true(k < 64);
				seen[k++] = s[i]->vips[v].table;
			}
		}
	return k;
}

static struct lb_config *
config(void)
{
	return load_ok(CFG);
}

static size_t
table_bytes(const struct lb_snapshot *s)
{
	return (size_t)s->table_size * sizeof(uint16_t);
}

/* Unchanged VIPs are copied, changed ones rebuilt; both equal a fresh build. */
static void
test_snapshot_reuses_unchanged_tables(void **state)
{
	struct lb_config *c = config();
	char err[256];
	struct lb_snapshot *s1, *s2, *fresh;

	(void)state;
	s1 = lb_snapshot_build(c, 1, err, sizeof(err));
	assert_non_null(s1);
	c->vips[0].backends[1].weight = 3; /* VIP 0 changes, VIP 1 does not */
	s2 = lb_snapshot_build_ext(c, 2, s1, NULL, 0, err, sizeof(err));
	fresh = lb_snapshot_build(c, 2, err, sizeof(err));
	assert_non_null(s2);
	assert_non_null(fresh);
	assert_int_not_equal(s1->vips[0].table_digest, s2->vips[0].table_digest);
	assert_int_equal(s1->vips[1].table_digest, s2->vips[1].table_digest);
	assert_memory_not_equal(s1->vips[0].table, s2->vips[0].table, table_bytes(s1));
	for (int i = 0; i < 2; i++)
		assert_memory_equal(s2->vips[i].table, fresh->vips[i].table, table_bytes(s2));
	lb_snapshot_free(s1);
	lb_snapshot_free(s2);
	lb_snapshot_free(fresh);
	lb_config_free(c);
}

/* A different seed invalidates every table, even with the same membership. */
static void
test_snapshot_seed_change_rebuilds(void **state)
{
	struct lb_config *c = config();
	char err[256];
	struct lb_snapshot *s1, *s2;

	(void)state;
	s1 = lb_snapshot_build(c, 1, err, sizeof(err));
	snprintf(c->seed, sizeof(c->seed), "other");
	s2 = lb_snapshot_build_ext(c, 2, s1, NULL, 0, err, sizeof(err));
	assert_non_null(s1);
	assert_non_null(s2);
	assert_memory_not_equal(s1->vips[1].table, s2->vips[1].table, table_bytes(s1));
	lb_snapshot_free(s1);
	lb_snapshot_free(s2);
	lb_config_free(c);
}

static void
test_snapshot_overrides_found(void **state)
{
	struct lb_config *c = config();
	char err[256];
	uint16_t r0[] = {c->vips[0].backends[0].id, c->vips[0].backends[2].id,
	                 c->vips[1].backends[0].id /* another VIP's: left out */};
	uint16_t r1[] = {c->vips[0].backends[1].id}; /* not VIP 1's: override dropped */
	uint16_t r2[] = {c->vips[1].backends[1].id};
	struct lb_snapshot_override ov[] = {
	        {c->vips[0].id, 0x1111222233334444ULL, 3, r0},
	        {c->vips[1].id, 0x5555666677778888ULL, 1, r1},
	        {c->vips[1].id, 0x1111222233334444ULL, 1, r2}, /* same key, other VIP */
	};
	struct lb_snapshot *s;
	const struct lb_override_slot *o;
	unsigned int hits[2] = {0, 0};

	(void)state;
	s = lb_snapshot_build_ext(c, 1, NULL, ov, 3, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(s->overrides.n, 2);
	o = lb_override_find(&s->overrides, c->vips[0].id, 0x1111222233334444ULL);
	assert_non_null(o);
	assert_int_equal(o->n_replicas, 2);
	assert_null(lb_override_find(&s->overrides, c->vips[1].id, 0x5555666677778888ULL));
	assert_null(lb_override_find(&s->overrides, c->vips[0].id, 0x5555666677778888ULL));
	o = lb_override_find(&s->overrides, c->vips[1].id, 0x1111222233334444ULL);
	assert_non_null(o);
	assert_int_equal(s->overrides.replicas[o->first], c->vips[1].backends[1].id);
	/* Flows spread over the replicas by their 5-tuple hash, evenly. */
	o = lb_override_find(&s->overrides, c->vips[0].id, 0x1111222233334444ULL);
	for (uint64_t f = 0; f < 20000; f++) {
		uint64_t h = f * 0x9E3779B97F4A7C15ULL;
		uint16_t id = lb_override_pick(&s->overrides, o, h);

		assert_int_equal(id, lb_override_pick(&s->overrides, o, h));
		hits[id == c->vips[0].backends[0].id ? 0 : 1]++;
	}
	assert_true(hits[0] > 9000 && hits[1] > 9000);
	lb_snapshot_free(s);
	lb_config_free(c);
}

/*
 * Replica shares follow the weights: over flow hashes spread evenly on the
 * 64-bit circle, replica i of weights w gets w_i / W of the key's flows
 * (the test's own sum), for weights with a common factor, weights summing to
 * more list entries than an override holds, and one replica down (its
 * share goes to the others in proportion to theirs).
 */
static void
test_snapshot_overrides_weighted(void **state)
{
	static const uint32_t cases[][3] = {
	        {1, 1, 3}, {5, 10, 15}, {1, 1000, 333}, {7, 0, 2}, {2, 3, 0},
	};
	struct lb_config *c = config();
	char err[256];

	(void)state;
	for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
		uint16_t r[3];
		struct lb_snapshot_override ov = {c->vips[0].id, 0x1111222233334444ULL, 3, r};
		const struct lb_override_slot *o;
		struct lb_snapshot *s;
		unsigned int hits[3] = {0, 0, 0};
		const unsigned int flows = 1u << 18;
		double sum = 0;

		for (int j = 0; j < 3; j++) {
			c->vips[0].backends[j].weight = cases[t][j];
			r[j] = c->vips[0].backends[j].id;
			sum += cases[t][j];
		}
		s = lb_snapshot_build_ext(c, 1, NULL, &ov, 1, err, sizeof(err));
		assert_non_null(s);
		o = lb_override_find(&s->overrides, c->vips[0].id, ov.key_hash);
		assert_non_null(o);
		for (uint64_t f = 0; f < flows; f++) {
			uint64_t h = f * 0x9E3779B97F4A7C15ULL;
			uint16_t id = lb_override_pick(&s->overrides, o, h);
			int j;

			for (j = 0; j < 3 && r[j] != id; j++)
				;
			assert_true(j < 3);
			hits[j]++;
		}
		for (int j = 0; j < 3; j++) {
			double got = (double)hits[j] / flows, want = cases[t][j] / sum;
			/* 0.003 for the list's rounding (1/1024 an entry) and the
			 * hashes, plus 5 standard deviations of the pick table's
			 * quantization: its entries are jumps of fixed hashes, the
			 * share a binomial draw of sd sqrt(p (1 - p) / entries),
			 * 0.0031 at p = 0.2 over 2^14 entries. */
			double tol = 0.003 + 5 * sqrt(want * (1 - want) / LB_OVERRIDE_LUT_SIZE);

			if (got < want - tol || got > want + tol)
				fail_msg("weights %u,%u,%u: replica %d got %.4f, want %.4f",
				         cases[t][0], cases[t][1], cases[t][2], j, got, want);
		}
		lb_snapshot_free(s);
	}
	lb_config_free(c);
}

static void
test_snapshot_no_overrides_is_empty(void **state)
{
	struct lb_config *c = config();
	char err[256];
	struct lb_snapshot *s = lb_snapshot_build(c, 1, err, sizeof(err));

	(void)state;
	assert_non_null(s);
	assert_int_equal(s->overrides.n, 0);
	assert_null(lb_override_find(&s->overrides, 0, 42));
	lb_snapshot_free(s);
	lb_config_free(c);
}

/* A third VIP, so two changes in turn leave one table untouched by both. */
#define CFG3                                                                                       \
	"{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": \"02:00:00:00:00:01\"},"      \
	" \"maglev\": {\"table_size\": 65537, \"seed\": \"snap\"},"                                \
	" \"vips\": [{\"address\": \"192.0.2.1\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\"}]},"  \
	"            {\"address\": \"192.0.2.2\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.2.0.1\"}, {\"address\": \"10.2.0.2\"}]},"  \
	"            {\"address\": \"192.0.2.3\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.3.0.1\"}, {\"address\": \"10.3.0.2\"}]}]}"

/*
 * A change to one VIP gives that VIP a new table (equal to a fresh build) and
 * leaves every other VIP pointing at the previous snapshot's table; retiring
 * snapshots in any order frees exactly the tables no live snapshot references.
 */
static void
test_snapshot_shares_tables_and_frees_the_unreferenced(void **state)
{
	struct lb_config *c = load_ok(CFG3);
	char err[256];
	struct lb_snapshot *s[3], *fresh;
	const uint16_t *changed0, *changed1, *first0;
	size_t bytes;

	(void)state;
	assert_int_equal(n_live(), 0);
	s[0] = lb_snapshot_build(c, 1, err, sizeof(err));
	assert_non_null(s[0]);
	bytes = table_bytes(s[0]);
	assert_int_equal(n_live(), 3); /* one table per VIP */

	c->vips[0].backends[1].weight = 3;
	s[1] = lb_snapshot_build_ext(c, 2, s[0], NULL, 0, err, sizeof(err));
	assert_non_null(s[1]);
	assert_ptr_not_equal(s[1]->vips[0].table, s[0]->vips[0].table);
	assert_ptr_equal(s[1]->vips[1].table, s[0]->vips[1].table);
	assert_ptr_equal(s[1]->vips[2].table, s[0]->vips[2].table);
	assert_int_equal(n_live(), 4); /* only VIP 0's table is new */
	fresh = lb_snapshot_build(c, 9, err, sizeof(err));
	assert_non_null(fresh);
	for (int i = 0; i < 3; i++)
		assert_memory_equal(s[1]->vips[i].table, fresh->vips[i].table, bytes);
	lb_snapshot_free(fresh);
	assert_int_equal(n_live(), 4);

	c->vips[1].backends[0].state = LB_BACKEND_DRAINING;
	s[2] = lb_snapshot_build_ext(c, 3, s[1], NULL, 0, err, sizeof(err));
	assert_non_null(s[2]);
	assert_ptr_equal(s[2]->vips[0].table, s[1]->vips[0].table);
	assert_ptr_not_equal(s[2]->vips[1].table, s[1]->vips[1].table);
	assert_ptr_equal(s[2]->vips[2].table, s[0]->vips[2].table);
	fresh = lb_snapshot_build(c, 9, err, sizeof(err));
	assert_non_null(fresh);
	assert_memory_equal(s[2]->vips[1].table, fresh->vips[1].table, bytes);
	lb_snapshot_free(fresh);
	assert_int_equal(n_live(), distinct_tables(s, 3));
	assert_int_equal(n_live(), 5);

	/* The oldest retires first: only its own VIP 0 table goes. */
	first0 = s[0]->vips[0].table;
	changed0 = s[1]->vips[0].table;
	changed1 = s[2]->vips[1].table;
	lb_snapshot_free(s[0]);
	s[0] = NULL;
	assert_false(table_live(first0, bytes));
	assert_int_equal(n_live(), distinct_tables(s, 3));
	assert_int_equal(n_live(), 4);
	/* Then the newest (out of order): its own VIP 1 table goes, s[1] intact. */
	lb_snapshot_free(s[2]);
	s[2] = NULL;
	assert_false(table_live(changed1, bytes));
	assert_int_equal(n_live(), distinct_tables(s, 3));
	assert_int_equal(n_live(), 3);
	for (int i = 0; i < 3; i++)
		assert_true(table_live(s[1]->vips[i].table, bytes));
	assert_ptr_equal(s[1]->vips[0].table, changed0);
	lb_snapshot_free(s[1]);
	assert_int_equal(n_live(), 0);
	lb_config_free(c);
}

/* A snapshot rebuilt with no change shares every table and allocates none. */
static void
test_snapshot_rebuild_without_change_allocates_no_table(void **state)
{
	struct lb_config *c = load_ok(CFG3);
	char err[256];
	struct lb_snapshot *s1, *s2;

	(void)state;
	s1 = lb_snapshot_build(c, 1, err, sizeof(err));
	assert_non_null(s1);
	s2 = lb_snapshot_build_ext(c, 2, s1, NULL, 0, err, sizeof(err));
	assert_non_null(s2);
	assert_int_equal(n_live(), 3);
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(s2->vips[i].table, s1->vips[i].table);
	lb_snapshot_free(s2);
	assert_int_equal(n_live(), 3);
	lb_snapshot_free(s1);
	assert_int_equal(n_live(), 0);
	lb_config_free(c);
}

/* Sixteen VIPs built on 1 and on 4 threads: the same tables byte for byte. */
static void
test_snapshot_threads_give_the_same_tables(void **state)
{
	char text[8192], *p = text;
	struct lb_config *c;
	struct lb_snapshot *one, *four;
	char err[256];

	(void)state;
	p += sprintf(p, "{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": "
	                "\"02:00:00:00:00:01\"}, \"maglev\": {\"table_size\": 65537, "
	                "\"seed\": \"par\"}, \"vips\": [");
	for (int v = 0; v < 16; v++) {
		p += sprintf(p,
		             "%s{\"address\": \"192.0.2.%d\", \"port\": 80, \"protocol\": \"tcp\", "
		             "\"backends\": [",
		             v ? ", " : "", v + 1);
		for (int b = 0; b <= v % 5; b++)
			p += sprintf(p, "%s{\"address\": \"10.%d.0.%d\"}", b ? ", " : "", v, b + 1);
		p += sprintf(p, "]}");
	}
	sprintf(p, "]}");
	c = load_ok(text);
	one = lb_snapshot_build_par(c, 1, NULL, NULL, 0, 1, err, sizeof(err));
	four = lb_snapshot_build_par(c, 1, NULL, NULL, 0, 4, err, sizeof(err));
	assert_non_null(one);
	assert_non_null(four);
	assert_int_equal(n_live(), 32);
	for (int v = 0; v < 16; v++) {
		assert_int_equal(one->vips[v].n_active, v % 5 + 1);
		assert_memory_equal(one->vips[v].table, four->vips[v].table, table_bytes(one));
	}
	lb_snapshot_free(one);
	lb_snapshot_free(four);
	assert_int_equal(n_live(), 0);
	lb_config_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_snapshot_reuses_unchanged_tables),
	        cmocka_unit_test(test_snapshot_seed_change_rebuilds),
	        cmocka_unit_test(test_snapshot_overrides_found),
	        cmocka_unit_test(test_snapshot_overrides_weighted),
	        cmocka_unit_test(test_snapshot_no_overrides_is_empty),
	        cmocka_unit_test(test_snapshot_shares_tables_and_frees_the_unreferenced),
	        cmocka_unit_test(test_snapshot_rebuild_without_change_allocates_no_table),
	        cmocka_unit_test(test_snapshot_threads_give_the_same_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
