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

#include "control/base/loop.h"

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

/* A loop, three probes and two pipes (pa, pb), none registered yet. */
struct fixture {
	struct lb_loop *loop;
	struct probe a, b, c;
	int pa[2], pb[2];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	f->loop = lb_loop_create();
	probe_init(&f->a);
	probe_init(&f->b);
	probe_init(&f->c);
	if (f->loop == NULL || pipe2(f->pa, O_NONBLOCK | O_CLOEXEC) != 0 ||
	    pipe2(f->pb, O_NONBLOCK | O_CLOEXEC) != 0)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	lb_loop_destroy(f->loop);
	for (int i = 0; i < 2; i++) {
		if (f->pa[i] >= 0)
			close(f->pa[i]);
		if (f->pb[i] >= 0)
			close(f->pb[i]);
	}
	free(f);
	return 0;
}

static void
test_loop_readable_with_arg(void **state)
{
	struct fixture *f = *state;
	struct lb_loop *loop = f->loop;

	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, &f->a), 0);
	assert_int_equal(lb_loop_add(loop, f->pb[0], LB_LOOP_READABLE, on_event, &f->b), 0);

	/* Nothing ready: nothing called, the timeout is honoured. */
	assert_int_equal(lb_loop_run_once(loop, 0), 0);
	assert_int_equal(lb_loop_run_once(loop, 10), 0);
	assert_int_equal(f->a.calls + f->b.calls, 0);

	/* Only the ready one, with its own argument, fd and events. */
	poke(f->pb[1]);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->a.calls, 0);
	assert_int_equal(f->b.calls, 1);
	assert_int_equal(f->b.fd, f->pb[0]);
	assert_int_equal(f->b.events, LB_LOOP_READABLE);
	assert_ptr_equal(f->b.loop, loop);

	/* Level-triggered: still readable, called again; both when both are. */
	poke(f->pa[1]);
	assert_int_equal(lb_loop_run_once(loop, 1000), 2);
	assert_int_equal(f->a.calls, 1);
	assert_int_equal(f->a.fd, f->pa[0]);
	assert_int_equal(f->b.calls, 2);

	/* Destroying the loop leaves the descriptors open. */
	lb_loop_destroy(loop);
	f->loop = NULL;
	assert_int_equal(fcntl(f->pa[0], F_GETFD), FD_CLOEXEC);
}

static void
test_loop_writable_and_hangup(void **state)
{
	struct fixture *f = *state;
	struct lb_loop *loop = f->loop;

	assert_int_equal(lb_loop_add(loop, f->pa[1], LB_LOOP_WRITABLE, on_event, &f->a), 0);
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, &f->b), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->a.calls, 1);
	assert_int_equal(f->a.events, LB_LOOP_WRITABLE);
	assert_int_equal(f->b.calls, 0);

	/* The writer goes: the reader hears the hang-up as readable. */
	assert_int_equal(lb_loop_del(loop, f->pa[1]), 0);
	close(f->pa[1]);
	f->pa[1] = -1;
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->b.calls, 1);
	assert_int_equal(f->b.events, LB_LOOP_READABLE);
	assert_int_equal(f->a.calls, 1);
}

static void
test_loop_del_stops_callbacks(void **state)
{
	struct fixture *f = *state;
	struct lb_loop *loop = f->loop;

	poke(f->pa[1]);
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, &f->a), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(lb_loop_del(loop, f->pa[0]), 0);
	assert_int_equal(lb_loop_run_once(loop, 10), 0);
	assert_int_equal(f->a.calls, 1);
	assert_int_equal(lb_loop_del(loop, f->pa[0]), -ENOENT);

	/* Deleted, an fd may be added again (here the next pipe's, after the
	 * first was closed, so likely the same number). */
	close(f->pa[0]);
	close(f->pa[1]);
	make_pipe(f->pa);
	poke(f->pa[1]);
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, &f->a), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->a.calls, 2);

	/* Closed before it is deleted: the deletion still succeeds. */
	close(f->pa[0]);
	assert_int_equal(lb_loop_del(loop, f->pa[0]), 0);
	f->pa[0] = -1;
	assert_int_equal(lb_loop_run_once(loop, 0), 0);
}

static void
test_loop_stop_ends_run(void **state)
{
	struct fixture *f = *state;
	struct lb_loop *loop = f->loop;

	poke(f->pa[1]);
	f->a.stop_after = 3;
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, &f->a), 0);
	assert_int_equal(lb_loop_run(loop), 0);
	assert_int_equal(f->a.calls, 3);

	/* A stop ends the dispatch: of two ready fds, the second waits. */
	poke(f->pb[1]);
	assert_int_equal(lb_loop_add(loop, f->pb[0], LB_LOOP_READABLE, on_event, &f->b), 0);
	f->a.stop_after = f->a.calls + 1;
	f->b.stop_after = 1;
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->a.calls + f->b.calls, 4);
	/* The next dispatch starts afresh and runs both. */
	f->a.stop_after = 0;
	f->b.stop_after = 0;
	assert_int_equal(lb_loop_run_once(loop, 1000), 2);
	assert_int_equal(f->a.calls + f->b.calls, 6);

	/* A stop asked outside a dispatch is cleared by the next one. */
	lb_loop_stop(loop);
	assert_int_equal(lb_loop_run_once(loop, 1000), 2);
}

static void
test_loop_delete_self_during_dispatch(void **state)
{
	struct fixture *f = *state;
	struct lb_loop *loop = f->loop;

	poke(f->pa[1]);
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, &f->a), 0);
	f->a.del_fd = f->pa[0];
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->a.del_rc, 0);
	assert_int_equal(lb_loop_run_once(loop, 10), 0);
	assert_int_equal(f->a.calls, 1);
	assert_int_equal(lb_loop_del(loop, f->pa[0]), -ENOENT);
}

static void
test_loop_delete_other_during_dispatch(void **state)
{
	struct fixture *f = *state;
	struct lb_loop *loop = f->loop;

	poke(f->pa[1]);
	poke(f->pb[1]);
	/* Both ready in one dispatch, each deletes the other: whichever runs
	 * first, the other's fetched event is dropped. */
	f->a.del_fd = f->pb[0];
	f->b.del_fd = f->pa[0];
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, &f->a), 0);
	assert_int_equal(lb_loop_add(loop, f->pb[0], LB_LOOP_READABLE, on_event, &f->b), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->a.calls + f->b.calls, 1);
	assert_int_equal(f->a.calls == 1 ? f->a.del_rc : f->b.del_rc, 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->a.calls + f->b.calls, 2);
}

static void
test_loop_readd_during_dispatch(void **state)
{
	struct fixture *f = *state;
	struct lb_loop *loop = f->loop;
	int moved;

	poke(f->pa[1]);
	poke(f->pb[1]);
	/* Deleted and registered again in the same dispatch (same fd number,
	 * probe c): the stale event does not reach the new callback in this
	 * dispatch, the new registration fires from the next. */
	f->a.del_fd = f->pb[0];
	f->a.other = &f->c;
	f->b.del_fd = f->pa[0];
	f->b.other = &f->c;
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, &f->a), 0);
	assert_int_equal(lb_loop_add(loop, f->pb[0], LB_LOOP_READABLE, on_event, &f->b), 0);
	assert_int_equal(lb_loop_run_once(loop, 1000), 1);
	assert_int_equal(f->a.calls + f->b.calls, 1);
	assert_int_equal(f->c.calls, 0);
	moved = f->a.calls == 1 ? f->pb[0] : f->pa[0];
	assert_int_equal(lb_loop_run_once(loop, 1000), 2);
	assert_int_equal(f->c.calls, 1);
	assert_int_equal(f->c.fd, moved);
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
	struct fixture *f = *state;
	struct lb_loop *loop = f->loop;
	struct probe *a = &f->a;
	char path[] = "/tmp/test_loop_XXXXXX";
	int file;

	assert_int_equal(lb_loop_add(NULL, f->pa[0], LB_LOOP_READABLE, on_event, a), -EINVAL);
	assert_int_equal(lb_loop_add(loop, -1, LB_LOOP_READABLE, on_event, a), -EINVAL);
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, NULL, a), -EINVAL);
	assert_int_equal(lb_loop_add(loop, f->pa[0], 0, on_event, a), -EINVAL);
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE | 4u, on_event, a), -EINVAL);

	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_READABLE, on_event, a), 0);
	assert_int_equal(lb_loop_add(loop, f->pa[0], LB_LOOP_WRITABLE, on_event, a), -EEXIST);

	/* epoll's own refusals come back as its errno. */
	file = mkstemp(path);
	assert_true(file >= 0);
	unlink(path);
	assert_int_equal(lb_loop_add(loop, file, LB_LOOP_READABLE, on_event, a), -EPERM);
	close(file);
	assert_int_equal(lb_loop_add(loop, file, LB_LOOP_READABLE, on_event, a), -EBADF);
	/* A refused add leaves nothing registered. */
	assert_int_equal(lb_loop_del(loop, file), -ENOENT);

	assert_int_equal(lb_loop_del(NULL, f->pa[0]), -EINVAL);
	assert_int_equal(lb_loop_del(loop, -1), -EINVAL);
	assert_int_equal(lb_loop_del(loop, f->pa[1]), -ENOENT);

	assert_int_equal(lb_loop_run_once(NULL, 0), -EINVAL);
	assert_int_equal(lb_loop_run(NULL), -EINVAL);
	lb_loop_stop(NULL);
	lb_loop_destroy(NULL);
	assert_int_equal(a->calls, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_loop_readable_with_arg, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_loop_writable_and_hangup, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_loop_del_stops_callbacks, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_loop_stop_ends_run, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_loop_delete_self_during_dispatch, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_loop_delete_other_during_dispatch, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_loop_readd_during_dispatch, setup, teardown),
	        cmocka_unit_test(test_loop_run_resumes_after_signal),
	        cmocka_unit_test_setup_teardown(test_loop_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
