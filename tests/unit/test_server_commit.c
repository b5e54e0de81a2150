/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket server's group commit, driven in-process: replies of a
 * process call are held until its one commit, then finished and sent in
 * order; a failed commit's finish replaces the tokened replies only; every
 * token is finished exactly once, also for a client that hangs up.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/io/server.h"

#define WAIT_MS 5000

struct fixture {
	char dir[64], path[96];
	struct lb_server *srv;
	int fd;             /* the client */
	bool fail;          /* commits fail */
	bool pending_token; /* the last request made one */
	unsigned int tokens, finished, commits;
	unsigned int bad_commits; /* commits that found a reply of their turn sent already */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "ok:LINE"; a line starting with 'm' is a change (its reply gets a token). */
static char *
on_request(void *arg, const char *line, size_t len)
{
	struct fixture *f = arg;
	char *r = malloc(len + 4);

	f->pending_token = len > 0 && line[0] == 'm';
	assert_non_null(r);
	memcpy(r, "ok:", 3);
	memcpy(r + 3, line, len);
	r[len + 3] = '\0';
	return r;
}

static void *
reply_token(void *arg)
{
	struct fixture *f = arg;

	if (!f->pending_token)
		return NULL;
	f->pending_token = false;
	f->tokens++;
	return malloc(1);
}

/* Lines the client could read now. */
static unsigned int
readable_lines(int fd)
{
	char buf[65536];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	unsigned int lines = 0;

	for (ssize_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	return lines;
}

static void
commit(void *arg)
{
	struct fixture *f = arg;

	f->commits++;
	/* Only replies of earlier turns (all finished already) may be out. */
	if (f->fd >= 0 && readable_lines(f->fd) > f->finished)
		f->bad_commits++;
}

static char *
finish(void *arg, char *reply, void *token)
{
	struct fixture *f = arg;
	char *r;

	assert_non_null(token);
	free(token);
	f->finished++;
	if (!f->fail)
		return reply;
	r = malloc(strlen(reply) + 8);
	assert_non_null(r);
	sprintf(r, "failed:%s", reply + 3);
	free(reply);
	return r;
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct lb_server_params p = {.on_request = on_request,
	                             .reply_token = reply_token,
	                             .commit = commit,
	                             .finish = finish};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char err[256];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/spw-srvc.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/ctl.sock", f->dir);
	p.path = f->path;
	p.arg = f;
	f->fd = -1;
	f->srv = lb_server_create(&p, err, sizeof(err));
	if (f->srv == NULL)
		fail_msg("lb_server_create: %s", err);
	f->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(f->fd >= 0);
	strcpy(sa.sun_path, f->path);
	assert_int_equal(connect(f->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	if (f->fd >= 0)
		close(f->fd);
	lb_server_destroy(f->srv);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Drive the server until n lines arrived (or EOF); they are returned in buf. */
static void
read_lines(struct fixture *f, char *buf, size_t cap, unsigned int n)
{
	uint64_t end = now_ms() + WAIT_MS;
	unsigned int lines = 0;
	size_t len = 0;

	while (lines < n && now_ms() < end) {
		ssize_t r;

		assert_int_equal(lb_server_process(f->srv), 0);
		if (readable_lines(f->fd) < n)
			continue; /* read all at once, so commit() sees what was sent */
		r = recv(f->fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r; i++)
			lines += buf[len + (size_t)i] == '\n';
		len += (size_t)r;
	}
	buf[len] = '\0';
}

/* 20 pipelined changes: one commit per turn of 8, nothing sent before its commit, in order. */
static void
test_commit_per_turn(void **state)
{
	struct fixture *f = *state;
	char want[1024] = "", buf[4096], line[16];
	unsigned int n = 20;

	for (unsigned int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "m%u\n", i);
		assert_int_equal(send(f->fd, line, strlen(line), 0), (ssize_t)strlen(line));
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "ok:m%u\n", i);
	}
	read_lines(f, buf, sizeof(buf), n);
	assert_string_equal(buf, want);
	assert_int_equal(f->commits,
	                 (n + LB_SERVER_DEFAULT_PER_TURN - 1) / LB_SERVER_DEFAULT_PER_TURN);
	assert_int_equal(f->bad_commits, 0);
	assert_int_equal(f->tokens, n);
	assert_int_equal(f->finished, n);
}

/* A failed commit: the changes' replies replaced, the reads' kept, order kept. */
static void
test_commit_failed(void **state)
{
	struct fixture *f = *state;
	const char *in = "r1\nm1\nr2\nm2\n";
	char buf[4096];

	f->fail = true;
	assert_int_equal(send(f->fd, in, strlen(in), 0), (ssize_t)strlen(in));
	read_lines(f, buf, sizeof(buf), 4);
	assert_string_equal(buf, "ok:r1\nfailed:m1\nok:r2\nfailed:m2\n");
	assert_int_equal(f->commits, 1);
	assert_int_equal(f->finished, 2);
}

/* A client that hangs up: its tokens are finished all the same (ASan: nothing leaks). */
static void
test_commit_client_gone(void **state)
{
	struct fixture *f = *state;
	uint64_t end = now_ms() + WAIT_MS;

	assert_int_equal(send(f->fd, "m1\nm2\nm3\n", 9, 0), 9);
	close(f->fd);
	f->fd = -1;
	while (lb_server_clients(f->srv) > 0 && now_ms() < end)
		assert_int_equal(lb_server_process(f->srv), 0);
	assert_int_equal(lb_server_clients(f->srv), 0);
	assert_int_equal(f->finished, f->tokens);
}

/* commit without finish or reply_token is refused. */
static void
test_commit_needs_callbacks(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = {
	        .path = "/tmp/spw-srvc-unused.sock", .on_request = on_request, .commit = commit};
	char err[256];

	(void)f;
	errno = 0;
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_commit_per_turn, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_commit_failed, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_commit_client_gone, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_commit_needs_callbacks, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
