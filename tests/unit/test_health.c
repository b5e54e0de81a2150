/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the health state machine: every sequence of probe results up
 * to a length, for several rise/fall pairs, against a model the test keeps
 * (the state is decided by the last run of equal results); and the per-VIP
 * decision over every combination of small members against a reference that
 * counts in rationals: operator precedence, on_down, fail-open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/model/config.h"
#include "control/health/health.h"
#include "control/health/health_probe.h"
#include "dataplane/snapshot.h"

#define SEQ_MAX 9

/* The model: walk the results, tracking the last run; the state changes when
 * a run of successes reaches rise or a run of failures reaches fall. */
static uint8_t
model_state(const int *res, int n, uint32_t rise, uint32_t fall, int *changes)
{
	uint8_t st = LB_HEALTH_UNKNOWN;
	int run = 0, prev = -1;

	*changes = 0;
	for (int i = 0; i < n; i++) {
		int ok = res[i] == LB_HEALTH_RESULT_OK;

		run = ok == prev ? run + 1 : 1;
		prev = ok;
		if (ok && run == (int)rise && st != LB_HEALTH_UP) {
			st = LB_HEALTH_UP;
			(*changes)++;
		}
		if (!ok && run == (int)fall && st != LB_HEALTH_DOWN) {
			st = LB_HEALTH_DOWN;
			(*changes)++;
		}
	}
	return st;
}

static void
test_observe_exhaustive(void **state)
{
	static const uint32_t rf[][2] = {{1, 1}, {2, 3}, {3, 2}, {1, 4}, {4, 1}, {3, 3}};
	static const int kinds[] = {LB_HEALTH_RESULT_OK, LB_HEALTH_RESULT_FAIL,
	                            LB_HEALTH_RESULT_TIMEOUT};
	(void)state;
	for (size_t p = 0; p < sizeof(rf) / sizeof(rf[0]); p++) {
		for (int len = 1; len <= SEQ_MAX; len++) {
			int total = 1;

			for (int i = 0; i < len; i++)
				total *= 3;
			for (int code = 0; code < total; code++) {
				int res[SEQ_MAX], c = code, changes = 0, model_changes, ok = 0,
				                  fail = 0, to = 0;
				struct lb_health_bk b = {0};

				for (int i = 0; i < len; i++) {
					res[i] = kinds[c % 3];
					c /= 3;
					ok += res[i] == LB_HEALTH_RESULT_OK;
					fail += res[i] == LB_HEALTH_RESULT_FAIL;
					to += res[i] == LB_HEALTH_RESULT_TIMEOUT;
					if (lb_health_observe(&b, res[i], rf[p][0], rf[p][1],
					                      100 + (uint64_t)i))
						changes++;
				}
				assert_int_equal(b.state, model_state(res, len, rf[p][0], rf[p][1],
				                                      &model_changes));
				assert_int_equal(changes, model_changes);
				assert_int_equal(b.transitions, (uint64_t)model_changes);
				assert_int_equal(b.probes_ok, ok);
				assert_int_equal(b.probes_failed, fail);
				assert_int_equal(b.timeouts, to);
				assert_int_equal(b.last_result, res[len - 1]);
			}
		}
	}
}

/* The first change is stamped with the probe's time; a repeat changes nothing. */
static void
test_observe_times(void **state)
{
	struct lb_health_bk b = {0};

	(void)state;
	assert_false(lb_health_observe(&b, LB_HEALTH_RESULT_FAIL, 2, 2, 10));
	assert_true(lb_health_observe(&b, LB_HEALTH_RESULT_FAIL, 2, 2, 20));
	assert_int_equal(b.last_change_ms, 20);
	assert_false(lb_health_observe(&b, LB_HEALTH_RESULT_FAIL, 2, 2, 30));
	assert_int_equal(b.last_change_ms, 20);
	assert_false(lb_health_observe(&b, LB_HEALTH_RESULT_NONE, 2, 2, 40));
	assert_int_equal(b.probes_ok + b.probes_failed + b.timeouts, 3);
	/* rise/fall 0 count as 1 */
	assert_true(lb_health_observe(&b, LB_HEALTH_RESULT_OK, 0, 0, 50));
	assert_int_equal(b.state, LB_HEALTH_UP);
	lb_health_reset(&b);
	assert_int_equal(b.state, LB_HEALTH_UNKNOWN);
	assert_int_equal(b.run, 0);
	assert_int_equal(b.transitions, 2);
}

/* Reference: fail-open iff leaving/eligible > f, compared as leaving * D > N * eligible. */
static void
check_decide(const struct lb_health_member *m, uint32_t n, uint32_t f_num, uint32_t f_den)
{
	uint8_t out[8];
	bool kept[8];
	uint32_t eligible = 0, leaving = 0, got;
	bool open;

	for (uint32_t i = 0; i < n; i++) {
		bool el = m[i].checked && m[i].op_state == LB_BACKEND_ACTIVE;

		eligible += el;
		leaving += el && m[i].health == LB_HEALTH_DOWN;
	}
	open = leaving > 0 && (uint64_t)leaving * f_den > (uint64_t)f_num * eligible;
	got = lb_health_decide(m, n, (double)f_num / f_den, out, kept);
	assert_int_equal(got, open ? leaving : 0);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t want = m[i].op_state;
		bool leave = m[i].checked && m[i].op_state == LB_BACKEND_ACTIVE &&
		             m[i].health == LB_HEALTH_DOWN;

		/* The operator's down and draining are never changed. */
		if (m[i].op_state != LB_BACKEND_ACTIVE)
			assert_int_equal(out[i], m[i].op_state);
		if (leave && !open)
			want = m[i].on_down == LB_HEALTH_KEEP_FLOWS ? LB_BACKEND_DRAINING
			                                            : LB_BACKEND_DOWN;
		assert_int_equal(out[i], want);
		assert_int_equal(kept[i], leave && open);
	}
}

/* Every member is one of: op state (3) x health (3) x on_down (2) x checked (2). */
static void
test_decide_exhaustive(void **state)
{
	static const uint32_t fr[][2] = {{0, 1}, {1, 4}, {1, 3}, {1, 2}, {2, 3}, {3, 4}, {1, 1}};
	(void)state;
	for (uint32_t n = 1; n <= 4; n++) {
		uint32_t total = 1;

		for (uint32_t i = 0; i < n; i++)
			total *= 36;
		for (uint32_t code = 0; code < total; code++) {
			struct lb_health_member m[4];
			uint32_t c = code;

			for (uint32_t i = 0; i < n; i++) {
				uint32_t d = c % 36;

				c /= 36;
				m[i].op_state = (uint8_t)(d % 3);
				m[i].health = (uint8_t)(d / 3 % 3);
				m[i].on_down = (uint8_t)(d / 9 % 2);
				m[i].checked = d / 18 != 0;
			}
			for (size_t f = 0; f < sizeof(fr) / sizeof(fr[0]); f++)
				check_decide(m, n, fr[f][0], fr[f][1]);
		}
	}
}

/* The cases the documentation names, spelled out. */
static void
test_decide_examples(void **state)
{
	struct lb_health_member m[4];
	uint8_t out[4];
	bool kept[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		m[i] = (struct lb_health_member){LB_BACKEND_ACTIVE, LB_HEALTH_UP,
		                                 LB_HEALTH_MOVE_FLOWS, true};
	/* 2 of 4 down with fail_open 0.5: not more than half, both leave. */
	m[0].health = m[1].health = LB_HEALTH_DOWN;
	m[1].on_down = LB_HEALTH_KEEP_FLOWS;
	assert_int_equal(lb_health_decide(m, 4, 0.5, out, kept), 0);
	assert_int_equal(out[0], LB_BACKEND_DOWN);
	assert_int_equal(out[1], LB_BACKEND_DRAINING);
	assert_int_equal(out[2], LB_BACKEND_ACTIVE);
	/* 3 of 4: fail-open, every one stays in. */
	m[2].health = LB_HEALTH_DOWN;
	assert_int_equal(lb_health_decide(m, 4, 0.5, out, kept), 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(out[i], LB_BACKEND_ACTIVE);
	assert_true(kept[0] && kept[1] && kept[2] && !kept[3]);
	/* fail_open 1: all four may leave. */
	m[3].health = LB_HEALTH_DOWN;
	assert_int_equal(lb_health_decide(m, 4, 1.0, out, NULL), 0);
	for (int i = 0; i < 4; i++)
		assert_int_not_equal(out[i], LB_BACKEND_ACTIVE);
	/* An operator down with passing probes stays down. */
	m[0] = (struct lb_health_member){LB_BACKEND_DOWN, LB_HEALTH_UP, LB_HEALTH_MOVE_FLOWS, true};
	assert_int_equal(lb_health_decide(m, 1, 0.5, out, NULL), 0);
	assert_int_equal(out[0], LB_BACKEND_DOWN);
	/* Unknown serves. */
	m[0] = (struct lb_health_member){LB_BACKEND_ACTIVE, LB_HEALTH_UNKNOWN, LB_HEALTH_MOVE_FLOWS,
	                                 true};
	assert_int_equal(lb_health_decide(m, 1, 0.0, out, NULL), 0);
	assert_int_equal(out[0], LB_BACKEND_ACTIVE);
	assert_string_equal(lb_health_state_name(LB_HEALTH_DOWN), "down");
	assert_string_equal(lb_health_result_name(LB_HEALTH_RESULT_TIMEOUT), "timeout");
}

/* Health objects: the documented defaults, a backend override, and the round
 * trip through the document form (what the state file holds) and a clone. */
static void
test_config_roundtrip(void **state)
{
	static const char doc[] =
	        "{\"encap\": {\"source_v4\": \"192.0.2.1\", \"next_hop_mac\": "
	        "\"02:00:5e:00:53:01\"}, \"vips\": [{\"address\": \"203.0.113.1\", "
	        "\"port\": 53, \"protocol\": \"udp\", \"health\": {\"type\": \"udp\", "
	        "\"request\": \"00FF10\", \"response\": \"00ff\", \"fail_open\": 0.25}, "
	        "\"backends\": [{\"address\": \"10.0.0.1\"}, {\"address\": \"10.0.0.2\", "
	        "\"health\": {\"type\": \"http\", \"port\": 8080, \"interval_ms\": 300, "
	        "\"on_down\": \"keep_flows\"}}]}]}";
	char err[256];
	json_t *root = json_loads(doc, 0, NULL), *out;
	struct lb_config *a, *b, *c;
	const struct lb_health_conf *h;

	(void)state;
	a = lb_config_from_json(root, err, sizeof(err));
	assert_non_null(a);
	h = lb_cfg_backend_health(&a->vips[0], &a->vips[0].backends[0]);
	assert_ptr_equal(h, a->vips[0].health);
	assert_int_equal(h->type, LB_HEALTH_TYPE_UDP);
	assert_int_equal(h->interval_ms, 2000);
	assert_int_equal(h->timeout_ms, 1000);
	assert_int_equal(h->rise, 2);
	assert_int_equal(h->fall, 3);
	assert_int_equal(h->via, LB_HEALTH_VIA_DIRECT);
	assert_int_equal(h->on_down, LB_HEALTH_MOVE_FLOWS);
	assert_int_equal(h->request_len, 3);
	assert_int_equal(h->request[1], 0xff);
	assert_int_equal(h->response_len, 2);
	assert_true(h->fail_open == 0.25);
	h = lb_cfg_backend_health(&a->vips[0], &a->vips[0].backends[1]);
	assert_int_equal(h->type, LB_HEALTH_TYPE_HTTP);
	assert_string_equal(h->path, "/");
	assert_int_equal(h->expect, 200);
	assert_int_equal(h->timeout_ms, 300); /* the default, capped at the interval */
	assert_int_equal(h->on_down, LB_HEALTH_KEEP_FLOWS);
	out = lb_config_to_json(a);
	assert_non_null(out);
	b = lb_config_from_json(out, err, sizeof(err));
	assert_non_null(b);
	c = lb_config_clone(b);
	assert_non_null(c);
	for (int k = 0; k < 2; k++) {
		const struct lb_config *x = k == 0 ? b : c;

		assert_int_equal(x->vips[0].health_digest, a->vips[0].health_digest);
		assert_int_equal(x->vips[0].backends[0].health_digest, 0);
		assert_null(x->vips[0].backends[0].health);
		assert_int_equal(x->vips[0].backends[1].health_digest,
		                 a->vips[0].backends[1].health_digest);
		assert_memory_equal(x->vips[0].backends[1].health, a->vips[0].backends[1].health,
		                    sizeof(struct lb_health_conf));
	}
	assert_ptr_not_equal(c->vips[0].health, b->vips[0].health);
	assert_int_not_equal(a->vips[0].health_digest, a->vips[0].backends[1].health_digest);
	json_decref(out);
	json_decref(root);
	lb_config_free(a);
	lb_config_free(b);
	lb_config_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_observe_exhaustive), cmocka_unit_test(test_observe_times),
	        cmocka_unit_test(test_decide_exhaustive),  cmocka_unit_test(test_decide_examples),
	        cmocka_unit_test(test_config_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
