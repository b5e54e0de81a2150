/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Snapshot builder: Maglev tables copied from the previous snapshot only when
 * their inputs are unchanged (and then byte-identical to a fresh build), and
 * hot-key overrides laid out so workers find them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "override.h"
#include "snapshot_build.h"

#define CFG                                                                                        \
	"{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": \"02:00:00:00:00:01\"},"      \
	" \"maglev\": {\"table_size\": 65537, \"seed\": \"snap\"},"                                \
	" \"vips\": [{\"address\": \"192.0.2.1\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\"},"    \
	"                          {\"address\": \"10.1.0.3\"}]},"                                 \
	"            {\"address\": \"192.0.2.2\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.2.0.1\"}, {\"address\": \"10.2.0.2\"}]}]}"

static struct lb_config *
config(void)
{
	json_error_t je;
	json_t *root = json_loads(CFG, 0, &je);
	char err[256];
	struct lb_config *c;

	assert_non_null(root);
	c = lb_config_from_json(root, err, sizeof(err));
	json_decref(root);
	assert_non_null(c);
	return c;
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_snapshot_reuses_unchanged_tables),
	        cmocka_unit_test(test_snapshot_seed_change_rebuilds),
	        cmocka_unit_test(test_snapshot_overrides_found),
	        cmocka_unit_test(test_snapshot_no_overrides_is_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
