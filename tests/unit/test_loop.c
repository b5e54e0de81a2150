/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the control thread's event loop: callbacks run for ready
 * descriptors with their argument, a deleted registration is never called
 * again (even for an event fetched in the same dispatch), lb_loop_stop ends the
 * dispatch and lb_loop_run, signals do not end lb_loop_run, and every error the
 * header documents is returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../control/loop.h"

/* What a callback saw, and what it does to the loop when called. */
struct probe {
	int calls;
	int fd;
	uint32_t events;
	struct lb_loop *loop;
	int stop_after;      /* call lb_loop_stop on this call (0: never) */
	int del_fd;          /* delete this fd when called (-1: none) */
	int del_rc;          /* what that lb_loop_del returned */
	struct probe *other; /* re-register del_fd for this probe (NULL: don't) */
	bool drain;          /* read what is readable */
};

static void
probe_init(struct probe *p)
{
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->del_fd = -1;
}

static void
on_event(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	struct probe *p = arg;

	p->calls++;
	p->fd = fd;
	p->events = events;
	p->loop = loop;
	if (p->drain) {
		char buf[64];

		while (read(fd, buf, sizeof(buf)) > 0)
			;
	}
	if (p->del_fd >= 0) {
		p->del_rc = lb_loop_del(loop, p->del_fd);
		if (p->other != NULL)
			assert_int_equal(
			        lb_loop_add(loop, p->del_fd, LB_LOOP_READABLE, on_event, p->other),
			        0);
		p->del_fd = -1;
	}
	if (p->stop_after != 0 && p->calls == p->stop_after)
		lb_loop_stop(loop);
}

static void
make_pipe(int fds[2])
{
	assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
}

static void
poke(int fd)
{
	assert_int_equal(write(fd, "x", 1), 1);
}

static void
test_loop_readable_with_arg(void **state)
{
	struct lb_loop *loop = lb_loop_create();
	struct probe a, b;
	int pa[2], pb[2];

	(void)state;
	assert_non_null(loop);
	probe_init(&a);
	probe_init(&b);
	make_pipe(pa);
	make_pipe(pb);
	assert_int_equal(lb_loop_add(loop, pa[0], LB_LOOP_READABLE, on_event, &a), 0);
	assert_int_equal(lb_loop_add(loop, pb[0], LB_LOOP_READABLE, on_event, &b), 0);

	/* Nothing ready: nothing called, the timeout is honoured. */
	assert_int_equal(lb_loop_run_once(loop, 0), 0);
	assert_int_equal(lb_loop_run_once(loop, 10), 0);
	assert_int_equal(a.calls + b.calls, 0);

	/* Only the ready one, with its own argument, fd and events. */
	poke(pb[1]);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(a.calls, 0);
	assert_int_equal(b.calls, 1);
	assert_int_equal(b.fd, pb[0]);
	assert_int_equal(b.events, LB_LOOP_READABLE);
	assert_ptr_equal(b.loop, loop);

	/* Level-triggered: still readable, called again; both when both are. */
	poke(pa[1]);
	assert_int_equal(lb_loop_run_once(loop, 1000), 2);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.fd, pa[0]);
	assert_int_equal(b.calls, 2);

	lb_loop_destroy(loop);
	/* The descriptors stay open. */
	assert_int_equal(fcntl(pa[0], F_GETFD), FD_CLOEXEC);
	for (int i = 0; i < 2; i++) {
		close(pa[i]);
		close(pb[i]);
	}
}

static void
test_loop_writable_and_hangup(void **state)
{
	struct lb_loop *loop = lb_loop_create();
	struct probe w, r;
	int p[2];

	(void)state;
	assert_non_null(loop);
	probe_init(&w);
	probe_init(&r);
	make_pipe(p);
	assert_int_equal(lb_loop_add(loop, p[1], LB_LOOP_WRITABLE, on_event, &w), 0);
	assert_int_equal(lb_loop_add(loop, p[0], LB_LOOP_READABLE, on_event, &r), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.events, LB_LOOP_WRITABLE);
	assert_int_equal(r.calls, 0);

	/* The writer goes: the reader hears the hang-up as readable. */
	assert_int_equal(lb_loop_del(loop, p[1]), 0);
	close(p[1]);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.events, LB_LOOP_READABLE);
	assert_int_equal(w.calls, 1);

	lb_loop_destroy(loop);
	close(p[0]);
}

static void
test_loop_del_stops_callbacks(void **state)
{
	struct lb_loop *loop = lb_loop_create();
	struct probe a;
	int p[2];

	(void)state;
	assert_non_null(loop);
	probe_init(&a);
	make_pipe(p);
	poke(p[1]);
	assert_int_equal(lb_loop_add(loop, p[0], LB_LOOP_READABLE, on_event, &a), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(lb_loop_del(loop, p[0]), 0);
	assert_int_equal(lb_loop_run_once(loop, 10), 0);
	assert_int_equal(a.calls, 1);

	/* Deleted, it may be added again (here after its fd was closed and reused). */
	assert_int_equal(lb_loop_del(loop, p[0]), -ENOENT);
	close(p[0]);
	close(p[1]);
	make_pipe(p);
	poke(p[1]);
	assert_int_equal(lb_loop_add(loop, p[0], LB_LOOP_READABLE, on_event, &a), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(a.calls, 2);

	/* Closed before it is deleted: the deletion still succeeds. */
	close(p[0]);
	assert_int_equal(lb_loop_del(loop, p[0]), 0);
	assert_int_equal(lb_loop_run_once(loop, 0), 0);

	lb_loop_destroy(loop);
	close(p[1]);
}

static void
test_loop_stop_ends_run(void **state)
{
	struct lb_loop *loop = lb_loop_create();
	struct probe a, b;
	int pa[2], pb[2];

	(void)state;
	assert_non_null(loop);
	probe_init(&a);
	probe_init(&b);
	make_pipe(pa);
	make_pipe(pb);
	poke(pa[1]);
	a.stop_after = 3;
	assert_int_equal(lb_loop_add(loop, pa[0], LB_LOOP_READABLE, on_event, &a), 0);
	assert_int_equal(lb_loop_run(loop), 0);
	assert_int_equal(a.calls, 3);

	/* A stop ends the dispatch: of two ready fds, the second waits. */
	poke(pb[1]);
	assert_int_equal(lb_loop_add(loop, pb[0], LB_LOOP_READABLE, on_event, &b), 0);
	a.stop_after = a.calls + 1;
	b.stop_after = 1;
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(a.calls + b.calls, 4);
	/* The next dispatch starts afresh and runs both. */
	a.stop_after = 0;
	b.stop_after = 0;
	assert_int_equal(lb_loop_run_once(loop, 1000), 2);
	assert_int_equal(a.calls + b.calls, 6);

	/* A stop asked outside a dispatch is cleared by the next one. */
	lb_loop_stop(loop);
	assert_int_equal(lb_loop_run_once(loop, 1000), 2);

	lb_loop_destroy(loop);
	for (int i = 0; i < 2; i++) {
		close(pa[i]);
		close(pb[i]);
	}
}

static void
test_loop_delete_self_during_dispatch(void **state)
{
	struct lb_loop *loop = lb_loop_create();
	struct probe a;
	int p[2];

	(void)state;
	assert_non_null(loop);
	probe_init(&a);
	make_pipe(p);
	poke(p[1]);
	assert_int_equal(lb_loop_add(loop, p[0], LB_LOOP_READABLE, on_event, &a), 0);
	a.del_fd = p[0];
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(a.del_rc, 0);
	assert_int_equal(lb_loop_run_once(loop, 10), 0);
	assert_int_equal(a.calls, 1);
	assert_int_equal(lb_loop_del(loop, p[0]), -ENOENT);

	lb_loop_destroy(loop);
	close(p[0]);
	close(p[1]);
}

static void
test_loop_delete_other_during_dispatch(void **state)
{
	struct lb_loop *loop = lb_loop_create();
	struct probe a, b, c;
	int pa[2], pb[2], moved;

	(void)state;
	assert_non_null(loop);
	probe_init(&a);
	probe_init(&b);
	probe_init(&c);
	make_pipe(pa);
	make_pipe(pb);
	poke(pa[1]);
	poke(pb[1]);
	/* Both ready in one dispatch, each deletes the other: whichever runs
	 * first, the other's fetched event is dropped. */
	a.del_fd = pb[0];
	b.del_fd = pa[0];
	assert_int_equal(lb_loop_add(loop, pa[0], LB_LOOP_READABLE, on_event, &a), 0);
	assert_int_equal(lb_loop_add(loop, pb[0], LB_LOOP_READABLE, on_event, &b), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(a.calls + b.calls, 1);
	assert_int_equal(a.calls == 1 ? a.del_rc : b.del_rc, 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(a.calls + b.calls, 2);

	/* Deleted and registered again in the same dispatch (same fd number):
	 * the stale event does not reach the new callback in this dispatch,
	 * the new registration fires from the next. */
	lb_loop_destroy(loop);
	loop = lb_loop_create();
	assert_non_null(loop);
	probe_init(&a);
	probe_init(&b);
	assert_int_equal(lb_loop_add(loop, pa[0], LB_LOOP_READABLE, on_event, &a), 0);
	assert_int_equal(lb_loop_add(loop, pb[0], LB_LOOP_READABLE, on_event, &b), 0);
	a.del_fd = pb[0];
	a.other = &c;
	b.del_fd = pa[0];
	b.other = &c;
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(a.calls + b.calls, 1);
	assert_int_equal(c.calls, 0);
	moved = a.calls == 1 ? pb[0] : pa[0];
	assert_int_equal(lb_loop_run_once(loop, 1000), 2);
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.fd, moved);

	lb_loop_destroy(loop);
	for (int i = 0; i < 2; i++) {
		close(pa[i]);
		close(pb[i]);
	}
}

static void
on_alarm(int sig)
{
	(void)sig;
}

static void
test_loop_run_resumes_after_signal(void **state)
{
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	struct itimerval it = {.it_value = {0, 10000}};
	struct itimerspec ts = {.it_value = {0, 100000000}};
	struct lb_loop *loop = lb_loop_create();
	struct probe t;
	int tfd;

	(void)state;
	assert_non_null(loop);
	probe_init(&t);
	t.stop_after = 1;
	t.drain = true;
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	assert_true(tfd >= 0);
	assert_int_equal(lb_loop_add(loop, tfd, LB_LOOP_READABLE, on_event, &t), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);

	/* A signal during a single wait is reported... */
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_int_equal(lb_loop_run_once(loop, 5000), -EINTR);
	assert_int_equal(t.calls, 0);

	/* ...and lb_loop_run waits on through it until the timer's callback stops it. */
	assert_int_equal(timerfd_settime(tfd, 0, &ts, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_int_equal(lb_loop_run(loop), 0);
	assert_int_equal(t.calls, 1);
	assert_int_equal(t.fd, tfd);

	assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
	lb_loop_destroy(loop);
	close(tfd);
}

static void
test_loop_errors(void **state)
{
	struct lb_loop *loop = lb_loop_create();
	struct probe a;
	char path[] = "/tmp/test_loop_XXXXXX";
	int p[2], file;

	(void)state;
	assert_non_null(loop);
	probe_init(&a);
	make_pipe(p);

	assert_int_equal(lb_loop_add(NULL, p[0], LB_LOOP_READABLE, on_event, &a), -EINVAL);
	assert_int_equal(lb_loop_add(loop, -1, LB_LOOP_READABLE, on_event, &a), -EINVAL);
	assert_int_equal(lb_loop_add(loop, p[0], LB_LOOP_READABLE, NULL, &a), -EINVAL);
	assert_int_equal(lb_loop_add(loop, p[0], 0, on_event, &a), -EINVAL);
	assert_int_equal(lb_loop_add(loop, p[0], LB_LOOP_READABLE | 4u, on_event, &a), -EINVAL);

	assert_int_equal(lb_loop_add(loop, p[0], LB_LOOP_READABLE, on_event, &a), 0);
	assert_int_equal(lb_loop_add(loop, p[0], LB_LOOP_WRITABLE, on_event, &a), -EEXIST);

	/* epoll's own refusals come back as its errno. */
	file = mkstemp(path);
	assert_true(file >= 0);
	unlink(path);
	assert_int_equal(lb_loop_add(loop, file, LB_LOOP_READABLE, on_event, &a), -EPERM);
	close(file);
	assert_int_equal(lb_loop_add(loop, file, LB_LOOP_READABLE, on_event, &a), -EBADF);
	/* A refused add leaves nothing registered. */
	assert_int_equal(lb_loop_del(loop, file), -ENOENT);

	assert_int_equal(lb_loop_del(NULL, p[0]), -EINVAL);
	assert_int_equal(lb_loop_del(loop, -1), -EINVAL);
	assert_int_equal(lb_loop_del(loop, p[1]), -ENOENT);

	assert_int_equal(lb_loop_run_once(NULL, 0), -EINVAL);
	assert_int_equal(lb_loop_run(NULL), -EINVAL);
	lb_loop_stop(NULL);
	lb_loop_destroy(NULL);

	assert_int_equal(a.calls, 0);
	lb_loop_destroy(loop);
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_loop_readable_with_arg),
	        cmocka_unit_test(test_loop_writable_and_hangup),
	        cmocka_unit_test(test_loop_del_stops_callbacks),
	        cmocka_unit_test(test_loop_stop_ends_run),
	        cmocka_unit_test(test_loop_delete_self_during_dispatch),
	        cmocka_unit_test(test_loop_delete_other_during_dispatch),
	        cmocka_unit_test(test_loop_run_resumes_after_signal),
	        cmocka_unit_test(test_loop_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
