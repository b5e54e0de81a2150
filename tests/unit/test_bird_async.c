/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BIRD announcer, the asynchronous part: the publish hook's file writes (only
 * on change), withdrawals before and announcements after a publication, drain
 * and undrain, and the exchange with a fake BIRD (bird_fixture.c) on an event
 * loop: a silent BIRD must not keep the loop from serving another descriptor,
 * changes during an exchange follow in one more, refusals and timeouts are
 * retried after the backoff. No wall-clock assertion: timeouts and backoff
 * run on a clock the test sets (or are only required to end), the rest is
 * counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/hooks/bird.h"
#include "bird_fixture.h"
#include "control/base/loop.h"

/* B and C announced (A withdrawn, C new). */
#define CFG_BC                                                                                     \
	"{" ENCAP " \"vips\": ["                                                                   \
	"{\"address\": \"10.100.0.2\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["       \
	"  {\"address\": \"10.1.0.1\"}]},"                                                         \
	"{\"address\": \"10.100.0.3\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["       \
	"  {\"address\": \"10.1.0.1\"}]}]}"

static char *
slurp(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *buf = calloc(1, 65536);

	assert_non_null(buf);
	if (fp == NULL) {
		free(buf);
		return NULL;
	}
	buf[fread(buf, 1, 65535, fp)] = '\0';
	fclose(fp);
	return buf;
}

static int
count_routes(const char *text)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, "\troute ")) != NULL; p++)
		n++;
	return n;
}

static struct lb_bird *
announcer(struct fake *f, uint32_t timeout_ms)
{
	struct lb_bird_params p = {
	        .include_path = f->include, .socket_path = f->sock, .timeout_ms = timeout_ms};
	struct lb_bird *b = lb_bird_create(&p);

	assert_non_null(b);
	return b;
}

/* The test's clock for deadlines and backoff (announcer_clocked). */
static uint64_t g_now_ms;

static uint64_t
test_now(void)
{
	return g_now_ms;
}

static struct lb_bird *
announcer_clocked(struct fake *f, uint32_t timeout_ms)
{
	struct lb_bird_params p = {.include_path = f->include,
	                           .socket_path = f->sock,
	                           .timeout_ms = timeout_ms,
	                           .now_ms = test_now};
	struct lb_bird *b = lb_bird_create(&p);

	assert_non_null(b);
	g_now_ms = 1000000;
	return b;
}

static json_int_t
stat_int(const struct lb_bird *b, const char *key)
{
	json_t *st = lb_bird_stats(b);
	json_int_t v = json_integer_value(json_object_get(st, key));

	json_decref(st);
	return v;
}

static bool
stat_true(const struct lb_bird *b, const char *key)
{
	json_t *st = lb_bird_stats(b);
	bool v = json_is_true(json_object_get(st, key));

	json_decref(st);
	return v;
}

/* stats[key] as a string ("" for null), in buf. */
static const char *
stat_str(const struct lb_bird *b, const char *key, char *buf, size_t len)
{
	json_t *st = lb_bird_stats(b);
	const char *v = json_string_value(json_object_get(st, key));

	snprintf(buf, len, "%s", v != NULL ? v : "");
	json_decref(st);
	return buf;
}

/* The control thread's loop in miniature: b attached to it, a pipe beside. */
struct rig {
	struct lb_loop *loop;
	int pipe[2];
	int pipe_calls; /* the pipe's callback, served */
};

static void
on_pipe(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	struct rig *r = arg;
	char c;

	(void)loop;
	(void)events;
	if (read(fd, &c, 1) == 1)
		r->pipe_calls++;
}

static void
rig_open(struct rig *r, struct lb_bird *b)
{
	memset(r, 0, sizeof(*r));
	r->loop = lb_loop_create();
	assert_non_null(r->loop);
	assert_int_equal(pipe(r->pipe), 0);
	assert_int_equal(lb_loop_add(r->loop, r->pipe[0], LB_LOOP_READABLE, on_pipe, r), 0);
	assert_int_equal(lb_bird_attach(b, r->loop), 0);
}

static void
rig_close(struct rig *r, struct lb_bird *b)
{
	assert_int_equal(lb_bird_attach(b, NULL), 0);
	lb_loop_destroy(r->loop);
	close(r->pipe[0]);
	close(r->pipe[1]);
}

/* Whose clock an asynchronous case's announcer reads for deadlines and backoff. */
enum async_clock {
	ASYNC_REAL_CLOCK, /* lb_now_ms (announcer) */
	ASYNC_TEST_CLOCK  /* g_now_ms (announcer_clocked) */
};

/* What the asynchronous cases differ in: async_setup's prestate (ASYNC). */
struct async_params {
	uint32_t timeout_ms; /* the announcer's timeout for one exchange with BIRD */
	enum async_clock clock;
};

/*
 * An asynchronous case's state, made by async_setup and freed by
 * async_teardown: the fake BIRD (setup), an announcer on its socket with the
 * case's async_params, that announcer's publish hook, a rig it is attached
 * to, and the snapshots of CFG_AB and CFG_BC.
 */
struct async {
	struct fake *f;
	struct lb_bird *b;
	struct lb_publish_hook h;
	struct rig r;
	struct lb_snapshot *ab, *bc;
};

static int
async_setup(void **state)
{
	const struct async_params *p = *state;
	struct async *a = calloc(1, sizeof(*a));

	if (a == NULL || setup(state) != 0)
		return -1;
	a->f = *state;
	if (p->clock == ASYNC_TEST_CLOCK)
		a->b = announcer_clocked(a->f, p->timeout_ms);
	else
		a->b = announcer(a->f, p->timeout_ms);
	a->h = lb_bird_hook(a->b);
	a->ab = snap_of(CFG_AB);
	a->bc = snap_of(CFG_BC);
	rig_open(&a->r, a->b);
	*state = a;
	return 0;
}

static int
async_teardown(void **state)
{
	struct async *a = *state;

	rig_close(&a->r, a->b);
	lb_snapshot_free(a->ab);
	lb_snapshot_free(a->bc);
	lb_bird_free(a->b);
	*state = a->f;
	free(a);
	return teardown(state);
}

/* Drive loop and tick until the exchange under way is over (bounded). */
static void
settle(struct async *a, const struct lb_snapshot *live)
{
	for (int i = 0; i < 1000 && lb_bird_busy(a->h.arg); i++) {
		lb_loop_run_once(a->r.loop, 10);
		a->h.tick(a->h.arg, live);
	}
	assert_false(lb_bird_busy(a->h.arg));
}

/* ---- tests ---- */

/* The file is written and BIRD asked once per change of the set, never otherwise. */
static void
test_bird_hook_writes_only_on_change(void **state)
{
	struct async *a = *state;
	struct lb_snapshot *s1 = snap_of(CFG_MIXED), *s2 = snap_of(CFG_MIXED);
	char err[ERR_LEN], expect[1024];
	struct lb_bird_prefix p[16];
	struct stat st;
	char *text;

	a->f->mode = FAKE_OK;
	assert_string_equal(a->h.name, "bird");
	/* First publication: before has nothing of ours to withdraw. */
	assert_int_equal(a->h.before(a->h.arg, s1, NULL, err, sizeof(err)), 0);
	assert_int_equal(stat_int(a->b, "writes"), 0);
	assert_false(lb_bird_busy(a->b));
	assert_int_equal(a->h.after(a->h.arg, s1, NULL, err, sizeof(err)), 0);
	settle(a, s1);
	assert_int_equal(stat_int(a->b, "writes"), 1);
	assert_int_equal(stat_int(a->b, "attempts"), 1);
	assert_int_equal(stat_int(a->b, "reloads"), 1);
	assert_int_equal(stat_int(a->b, "announced"), 3);
	assert_int_equal(fake_commands(a->f), 1);
	text = slurp(a->f->include);
	assert_non_null(text);
	lb_bird_render(p, lb_bird_prefixes(s1, p, 16), expect, sizeof(expect));
	assert_string_equal(text, expect);
	free(text);
	assert_int_equal(stat(a->f->include, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* Same set again (another snapshot, same VIPs): nothing written, nothing sent. */
	assert_int_equal(a->h.before(a->h.arg, s2, s1, err, sizeof(err)), 0);
	assert_int_equal(a->h.after(a->h.arg, s2, s1, err, sizeof(err)), 0);
	assert_false(lb_bird_busy(a->b));
	a->h.tick(a->h.arg, s2);
	assert_int_equal(stat_int(a->b, "writes"), 1);
	assert_int_equal(stat_int(a->b, "attempts"), 1);
	assert_int_equal(stat_int(a->b, "reloads"), 1);
	assert_int_equal(fake_commands(a->f), 1);
	lb_snapshot_free(s1);
	lb_snapshot_free(s2);
}

/* A -> B: withdrawals in before (nothing new yet), announcements in after;
 * each file is written before the hook returns. */
static void
test_bird_hook_withdraw_before_announce_after(void **state)
{
	struct async *a = *state;
	char err[ERR_LEN];
	char *text;

	a->f->mode = FAKE_OK;
	assert_int_equal(a->h.after(a->h.arg, a->ab, NULL, err, sizeof(err)), 0);
	settle(a, a->ab);
	assert_int_equal(a->h.before(a->h.arg, a->bc, a->ab, err, sizeof(err)), 0);
	text = slurp(a->f->include);
	assert_int_equal(count_routes(text), 1);
	assert_non_null(strstr(text, "10.100.0.2/32"));
	assert_null(strstr(text, "10.100.0.1/32")); /* withdrawn before bc goes live */
	assert_null(strstr(text, "10.100.0.3/32")); /* not announced before bc is live */
	free(text);
	settle(a, a->ab);
	assert_int_equal(fake_commands(a->f), 2);
	assert_int_equal(a->h.after(a->h.arg, a->bc, a->ab, err, sizeof(err)), 0);
	text = slurp(a->f->include);
	assert_int_equal(count_routes(text), 2);
	assert_non_null(strstr(text, "10.100.0.2/32"));
	assert_non_null(strstr(text, "10.100.0.3/32"));
	free(text);
	settle(a, a->bc);
	assert_int_equal(fake_commands(a->f), 3);
	/* A pure addition withdraws nothing: before is a no-op. */
	assert_int_equal(a->h.before(a->h.arg, a->bc, a->bc, err, sizeof(err)), 0);
	assert_false(lb_bird_busy(a->b));
	assert_int_equal(fake_commands(a->f), 3);
}

static void
test_bird_drain_and_undrain(void **state)
{
	struct async *a = *state;
	char err[ERR_LEN];
	json_t *st;
	char *text;

	a->f->mode = FAKE_OK;
	assert_int_equal(a->h.after(a->h.arg, a->ab, NULL, err, sizeof(err)), 0);
	settle(a, a->ab);
	assert_false(lb_bird_drained(a->b));
	assert_int_equal(a->h.drain(a->h.arg, true, a->ab, err, sizeof(err)), 0);
	assert_true(lb_bird_drained(a->b));
	/* The file is empty at once; BIRD's confirmation follows. */
	text = slurp(a->f->include);
	assert_int_equal(count_routes(text), 0);
	free(text);
	settle(a, a->ab);
	st = lb_bird_stats(a->b);
	assert_true(json_is_true(json_object_get(st, "drained")));
	assert_false(json_is_true(json_object_get(st, "pending")));
	assert_int_equal(json_integer_value(json_object_get(st, "announced")), 0);
	assert_true(json_is_integer(json_object_get(st, "last_withdraw_ms")));
	json_decref(st);
	/* Drained: a publication announces nothing. */
	assert_int_equal(a->h.before(a->h.arg, a->bc, a->ab, err, sizeof(err)), 0);
	assert_int_equal(a->h.after(a->h.arg, a->bc, a->ab, err, sizeof(err)), 0);
	text = slurp(a->f->include);
	assert_int_equal(count_routes(text), 0);
	free(text);
	/* Draining twice is harmless. */
	assert_int_equal(a->h.drain(a->h.arg, true, a->bc, err, sizeof(err)), 0);
	assert_int_equal(a->h.drain(a->h.arg, false, a->bc, err, sizeof(err)), 0);
	assert_false(lb_bird_drained(a->b));
	text = slurp(a->f->include);
	assert_int_equal(count_routes(text), 2);
	free(text);
	settle(a, a->bc);
	assert_int_equal(stat_int(a->b, "announced"), 2);
}

/*
 * BIRD refuses, then accepts: the error is reported and counted, and retried
 * from the tick after the backoff (100 ms, then doubling: the documented
 * policy, checked on the test's clock): not one tick earlier.
 */
static void
test_bird_refusal_retried_with_backoff(void **state)
{
	struct async *a = *state;
	char err[ERR_LEN] = "", buf[ERR_LEN];

	a->f->mode = FAKE_REFUSE;
	/* The hook only writes the file: BIRD's refusal comes later. */
	assert_int_equal(a->h.after(a->h.arg, a->ab, NULL, err, sizeof(err)), 0);
	settle(a, a->ab);
	assert_int_equal(stat_int(a->b, "errors"), 1);
	assert_true(stat_true(a->b, "pending"));
	assert_int_equal(stat_int(a->b, "announced"), 0);
	assert_string_equal(stat_str(a->b, "last_result", buf, sizeof(buf)), "refused");
	assert_non_null(strstr(stat_str(a->b, "last_error", buf, sizeof(buf)), "8002"));
	assert_non_null(strstr(buf, "syntax error"));
	assert_int_equal(stat_int(a->b, "backoff_ms"), 100);
	assert_int_equal(stat_int(a->b, "retry_in_ms"), 100);
	/* 99 ms later: no new attempt; 100 ms: one. */
	g_now_ms += 99;
	a->h.tick(a->h.arg, a->ab);
	assert_int_equal(stat_int(a->b, "attempts"), 1);
	g_now_ms += 1;
	a->h.tick(a->h.arg, a->ab);
	assert_int_equal(stat_int(a->b, "attempts"), 2);
	settle(a, a->ab);
	assert_int_equal(stat_int(a->b, "errors"), 2);
	assert_int_equal(stat_int(a->b, "backoff_ms"), 200);
	g_now_ms += 199;
	a->h.tick(a->h.arg, a->ab);
	assert_int_equal(stat_int(a->b, "attempts"), 2);
	/* The file was written once; the retries only ask BIRD again. */
	assert_int_equal(stat_int(a->b, "writes"), 1);
	a->f->mode = FAKE_OK;
	g_now_ms += 1;
	a->h.tick(a->h.arg, a->ab);
	assert_int_equal(stat_int(a->b, "attempts"), 3);
	settle(a, a->ab);
	assert_int_equal(stat_int(a->b, "reloads"), 1);
	assert_int_equal(stat_int(a->b, "writes"), 1);
	assert_int_equal(stat_int(a->b, "announced"), 2);
	assert_int_equal(stat_int(a->b, "errors"), 2);
	assert_int_equal(stat_int(a->b, "backoff_ms"), 0);
	assert_false(stat_true(a->b, "pending"));
	assert_string_equal(stat_str(a->b, "last_result", buf, sizeof(buf)), "ok");
}

/* A silent BIRD: the exchange ends at its deadline (1 s, the test's clock, as
 * main gives it), is counted as a timeout, and retried after a backoff that
 * doubles up to 5 s. */
static void
test_bird_timeouts_backoff(void **state)
{
	/* The documented policy: 100 ms after the first failure, doubling, at most 5 s. */
	static const json_int_t backoff[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};
	struct async *a = *state;
	char err[ERR_LEN] = "", buf[ERR_LEN];
	int k;

	a->f->mode = FAKE_SILENT;
	assert_int_equal(a->h.after(a->h.arg, a->ab, NULL, err, sizeof(err)), 0);
	for (k = 1; k <= 8; k++) {
		wait_accepts(a->f, k);
		/* One exchange at a time, open until its deadline. */
		assert_int_equal(stat_int(a->b, "attempts"), k);
		g_now_ms += 999;
		lb_loop_run_once(a->r.loop, 0);
		a->h.tick(a->h.arg, a->ab);
		assert_true(lb_bird_busy(a->b));
		assert_int_equal(stat_int(a->b, "errors"), k - 1);
		g_now_ms += 1;
		a->h.tick(a->h.arg, a->ab);
		assert_false(lb_bird_busy(a->b));
		assert_int_equal(stat_int(a->b, "errors"), k);
		assert_int_equal(stat_int(a->b, "timeouts"), k);
		assert_int_equal(stat_int(a->b, "backoff_ms"), backoff[k - 1]);
		assert_string_equal(stat_str(a->b, "last_result", buf, sizeof(buf)), "timeout");
		assert_non_null(strstr(stat_str(a->b, "last_error", buf, sizeof(buf)),
		                       "no reply from BIRD in time"));
		assert_true(stat_true(a->b, "pending"));
		g_now_ms += (uint64_t)backoff[k - 1] - 1;
		a->h.tick(a->h.arg, a->ab);
		assert_int_equal(stat_int(a->b, "attempts"), k);
		if (k == 8)
			a->f->mode = FAKE_OK;
		g_now_ms += 1;
		a->h.tick(a->h.arg, a->ab);
		assert_int_equal(stat_int(a->b, "attempts"), k + 1);
	}
	settle(a, a->ab);
	assert_int_equal(stat_int(a->b, "reloads"), 1);
	assert_int_equal(stat_int(a->b, "errors"), 8);
	assert_int_equal(stat_int(a->b, "announced"), 2);
	assert_false(stat_true(a->b, "pending"));
}

/*
 * BIRD accepts and says nothing: the hook returns at once, the loop goes on
 * serving another descriptor while the exchange waits, and the exchange
 * completes once BIRD answers. The state is in the stats all along.
 */
static void
test_bird_silent_does_not_block_loop(void **state)
{
	struct async *a = *state;
	char err[ERR_LEN] = "", buf[ERR_LEN];
	char *text;

	a->f->mode = FAKE_HOLD;
	assert_int_equal(a->h.after(a->h.arg, a->ab, NULL, err, sizeof(err)), 0);
	/* The include file is in place before the exchange. */
	text = slurp(a->f->include);
	assert_int_equal(count_routes(text), 2);
	free(text);
	assert_true(lb_bird_busy(a->b));
	assert_true(stat_true(a->b, "pending"));
	assert_true(stat_true(a->b, "in_flight"));
	assert_int_equal(stat_int(a->b, "attempts"), 1);
	assert_int_equal(stat_int(a->b, "reloads"), 0);
	assert_int_equal(stat_int(a->b, "announced"), 0);
	assert_string_equal(stat_str(a->b, "last_result", buf, sizeof(buf)), "");
	wait_accepts(a->f, 1);
	/* Three rounds of another client's traffic, served while BIRD is silent. */
	for (int i = 1; i <= 3; i++) {
		assert_int_equal(write(a->r.pipe[1], "x", 1), 1);
		for (int j = 0; j < 100 && a->r.pipe_calls < i; j++) {
			lb_loop_run_once(a->r.loop, 100);
			a->h.tick(a->h.arg, a->ab);
		}
		assert_int_equal(a->r.pipe_calls, i);
		assert_true(lb_bird_busy(a->b));
	}
	assert_int_equal(stat_int(a->b, "reloads"), 0);
	/* BIRD answers: the loop completes the exchange. */
	a->f->release = 1;
	settle(a, a->ab);
	assert_int_equal(stat_int(a->b, "reloads"), 1);
	assert_int_equal(stat_int(a->b, "attempts"), 1);
	assert_int_equal(stat_int(a->b, "errors"), 0);
	assert_int_equal(stat_int(a->b, "announced"), 2);
	assert_false(stat_true(a->b, "pending"));
	assert_false(stat_true(a->b, "in_flight"));
	assert_string_equal(stat_str(a->b, "last_result", buf, sizeof(buf)), "ok");
	assert_int_equal(fake_commands(a->f), 1);
}

/* Changes while an exchange waits are written at once and sent together in
 * one more exchange when it ends: BIRD ends up with the newest file. */
static void
test_bird_changes_during_exchange_follow(void **state)
{
	struct async *a = *state;
	char err[ERR_LEN] = "", buf[80];
	json_t *st;

	a->f->mode = FAKE_HOLD;
	assert_int_equal(a->h.after(a->h.arg, a->ab, NULL, err, sizeof(err)), 0);
	assert_int_equal(a->h.before(a->h.arg, a->bc, a->ab, err, sizeof(err)), 0);
	assert_int_equal(a->h.after(a->h.arg, a->bc, a->ab, err, sizeof(err)), 0);
	assert_int_equal(stat_int(a->b, "writes"), 3);
	assert_int_equal(stat_int(a->b, "attempts"), 1);
	a->f->release = 1;
	for (int i = 0; i < 1000 && stat_int(a->b, "reloads") < 2; i++) {
		lb_loop_run_once(a->r.loop, 10);
		a->h.tick(a->h.arg, a->bc);
	}
	settle(a, a->bc);
	assert_int_equal(stat_int(a->b, "reloads"), 2);
	assert_int_equal(stat_int(a->b, "attempts"), 2);
	assert_int_equal(fake_commands(a->f), 2);
	st = lb_bird_stats(a->b);
	assert_false(json_is_true(json_object_get(st, "pending")));
	assert_int_equal(json_array_size(json_object_get(st, "prefixes")), 2);
	snprintf(buf, sizeof(buf), "%s",
	         json_string_value(json_array_get(json_object_get(st, "prefixes"), 1)));
	assert_string_equal(buf, "10.100.0.3/32");
	json_decref(st);
}

/* Draining against a silent BIRD: the file is emptied at once, the exchange
 * is busy until its deadline (2 s, the test's clock, as main gives it) and no
 * longer (what the stop sequence waits for). */
static void
test_bird_drain_silent_bounded(void **state)
{
	struct async *a = *state;
	char err[ERR_LEN] = "";
	json_t *st;
	char *text;

	a->f->mode = FAKE_OK;
	assert_int_equal(a->h.after(a->h.arg, a->ab, NULL, err, sizeof(err)), 0);
	settle(a, a->ab);
	a->f->mode = FAKE_SILENT;
	assert_int_equal(a->h.drain(a->h.arg, true, a->ab, err, sizeof(err)), 0);
	text = slurp(a->f->include);
	assert_int_equal(count_routes(text), 0);
	free(text);
	assert_true(lb_bird_busy(a->b));
	g_now_ms += 1999;
	a->h.tick(a->h.arg, a->ab);
	assert_true(lb_bird_busy(a->b));
	g_now_ms += 1;
	a->h.tick(a->h.arg, a->ab);
	assert_false(lb_bird_busy(a->b));
	st = lb_bird_stats(a->b);
	assert_true(json_is_true(json_object_get(st, "drained")));
	assert_true(json_is_true(json_object_get(st, "pending")));
	assert_int_equal(json_integer_value(json_object_get(st, "timeouts")), 1);
	assert_true(json_is_null(json_object_get(st, "last_withdraw_ms")));
	json_decref(st);
}

/* An asynchronous case: its exchange's timeout and clock, then async_setup and async_teardown. */
#define ASYNC(test, timeout_ms, clock)                                                             \
	cmocka_unit_test_prestate_setup_teardown(test, async_setup, async_teardown,                \
	                                         (&(struct async_params){timeout_ms, clock}))

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        ASYNC(test_bird_hook_writes_only_on_change, 5000, ASYNC_REAL_CLOCK),
	        ASYNC(test_bird_hook_withdraw_before_announce_after, 5000, ASYNC_REAL_CLOCK),
	        ASYNC(test_bird_drain_and_undrain, 5000, ASYNC_REAL_CLOCK),
	        ASYNC(test_bird_refusal_retried_with_backoff, 5000, ASYNC_TEST_CLOCK),
	        ASYNC(test_bird_timeouts_backoff, 1000, ASYNC_TEST_CLOCK),
	        ASYNC(test_bird_silent_does_not_block_loop, 60000, ASYNC_REAL_CLOCK),
	        ASYNC(test_bird_changes_during_exchange_follow, 60000, ASYNC_REAL_CLOCK),
	        ASYNC(test_bird_drain_silent_bounded, 2000, ASYNC_TEST_CLOCK),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
