/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the control socket server, driven in-process: the test is
 * both the clients (plain Unix sockets) and the event loop (it calls
 * lb_server_process/lb_server_tick itself). Covers framing and ordering, and
 * every limit (request size, unsent output, idle time, client count) closing
 * only its offender. The socket file rules are in test_server_file.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_fixture.h"

/* ---- framing ---------------------------------------------------------------- */

static void
test_server_line_gets_reply(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s = start(f, &p);
	int fd = client(f->path);

	send_str(s, fd, "{\"method\":\"version\"}\n");
	expect_reply(s, fd, "echo:{\"method\":\"version\"}\n");
	assert_int_equal(lb_server_clients(s), 1);
	close(fd);
	pump(s, 20);
	assert_int_equal(lb_server_clients(s), 0);
}

static void
test_server_pipelined_in_order(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s = start(f, &p);
	int fd = client(f->path);
	char buf[4096];
	bool eof;

	/* Several lines in one write, a notification among them, a blank line,
	 * and a line split across writes. */
	send_str(s, fd, "a\nb\n#note\n\nc\nd");
	pump(s, 20);
	send_str(s, fd, "d\n");
	read_lines(s, fd, buf, sizeof(buf), 4, &eof);
	assert_false(eof);
	assert_string_equal(buf, "echo:a\necho:b\necho:c\necho:dd\n");
	assert_int_equal(f->calls, 5); /* the blank line is not a request */
	close(fd);
}

static void
test_server_eof_after_request_still_answered(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s = start(f, &p);
	int fd = client(f->path);
	char buf[4096];
	bool eof;

	send_str(s, fd, "x\ny\npartial");
	shutdown(fd, SHUT_WR); /* like `echo ... | nc -U` */
	read_lines(s, fd, buf, sizeof(buf), 3, &eof);
	assert_string_equal(buf, "echo:x\necho:y\n");
	assert_true(eof);
	assert_int_equal(lb_server_clients(s), 0);
	close(fd);
}

/*
 * One client pipelines many requests in one write, another sends one: each
 * process call answers at most LB_SERVER_DEFAULT_PER_TURN requests of a
 * client, so the second client's request is answered before the first
 * client's last; the first client's replies all come, in order, on later
 * calls, and the server's descriptor stays readable while any wait.
 */
static void
test_server_fair_turns(void **state)
{
	enum { N = 100 };
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s = start(f, &p);
	char req[N * 8], want[N * 16], buf[N * 16];
	int a = client(f->path), b = client(f->path);
	size_t rl = 0, wl = 0;
	unsigned int turns = 0;
	uint64_t end;
	bool eof;

	pump(s, 10); /* both accepted */
	for (int i = 0; i < N; i++) {
		rl += (size_t)snprintf(req + rl, sizeof(req) - rl, "a%d\n", i);
		wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "echo:a%d\n", i);
	}
	send_all(s, a, req, rl);
	send_str(s, b, "b\n");
	end = now_ms() + WAIT_MS;
	while (f->a_calls < N && now_ms() < end) {
		unsigned int before = f->a_calls;
		struct pollfd pf = {.fd = lb_server_fd(s), .events = POLLIN};

		/* Work is waiting (requests on the sockets or queued): the
		 * descriptor the control loop polls must say so. */
		assert_int_equal(poll(&pf, 1, WAIT_MS), 1);
		assert_int_equal(lb_server_process(s), 0);
		assert_true(f->a_calls - before <= LB_SERVER_DEFAULT_PER_TURN);
		turns++;
	}
	assert_int_equal(f->a_calls, N);
	assert_true(turns >= N / LB_SERVER_DEFAULT_PER_TURN);
	assert_true(f->b_after_a >= 0);
	assert_true(f->b_after_a < N);
	expect_reply(s, b, "echo:b\n");
	read_lines(s, a, buf, sizeof(buf), N, &eof);
	assert_false(eof);
	assert_string_equal(buf, want);
	close(a);
	close(b);
}

/* ---- limits ----------------------------------------------------------------- */

static void
test_server_request_too_large(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s;
	char big[200], buf[4096];
	int fd1, fd2, ok;
	bool eof;

	p.max_request = 64;
	s = start(f, &p);
	memset(big, 'x', sizeof(big));

	/* No newline at all: detected once more than the limit is buffered. */
	fd1 = client(f->path);
	send_all(s, fd1, big, 100);
	read_lines(s, fd1, buf, sizeof(buf), 2, &eof);
	assert_string_equal(buf, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
	                         "\"message\":\"request too large (limit 64 bytes)\"}}\n");
	assert_true(eof);

	/* A complete line over the limit after a good one: the good one is
	 * answered, then the error, then the close. Exactly 64 is fine. */
	fd2 = client(f->path);
	big[64] = '\n';
	send_all(s, fd2, big, 65);
	big[64] = 'x';
	big[65] = '\n';
	send_all(s, fd2, big, 66);
	read_lines(s, fd2, buf, sizeof(buf), 3, &eof);
	assert_true(eof);
	ok = strncmp(buf, "echo:xxxx", 9) == 0 && strstr(buf, "limit 64 bytes") != NULL;
	assert_true(ok);
	assert_int_equal(f->calls, 1);
	assert_int_equal(lb_server_clients(s), 0);
	close(fd1);
	close(fd2);
}

static void
test_server_idle_closed(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s;
	int half, silent, busy;
	uint64_t t0;

	p.idle_ms = 100;
	s = start(f, &p);
	half = client(f->path);
	silent = client(f->path);
	busy = client(f->path);
	send_str(s, half, "{\"jsonrpc\":");

	/* busy sends a complete request every 30 ms and stays; the others go. */
	t0 = now_ms();
	for (int i = 0; i < 10; i++) {
		send_str(s, busy, "ping\n");
		expect_reply(s, busy, "echo:ping\n");
		pump(s, 30);
	}
	assert_true(now_ms() - t0 >= 200);
	assert_true(wait_closed(s, half, 10));
	assert_true(wait_closed(s, silent, 10));
	assert_false(wait_closed(s, busy, 10));
	assert_int_equal(lb_server_clients(s), 1);
	close(half);
	close(silent);
	close(busy);
}

static void
test_server_slow_reader_closed_others_served(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s;
	char line[101];
	int hog, good;
	bool closed = false;
	uint64_t end;

	p.max_output = 4096;
	p.idle_ms = 60000;
	s = start(f, &p);
	hog = client(f->path);
	good = client(f->path);
	memset(line, 'r', 100);
	line[100] = '\n';

	/* The hog sends requests and never reads its replies. */
	end = now_ms() + 10000;
	while (!closed && now_ms() < end) {
		ssize_t n = send(hog, line, sizeof(line), MSG_NOSIGNAL);

		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			closed = true;
		assert_int_equal(lb_server_process(s), 0);
		if (lb_server_clients(s) == 1)
			closed = true;
	}
	assert_true(closed);
	assert_int_equal(lb_server_clients(s), 1);
	send_str(s, good, "still there?\n");
	expect_reply(s, good, "echo:still there?\n");
	close(hog);
	close(good);
}

/*
 * A reply that could not fit the output limit even on a drained connection
 * is not queued: the client gets an error in its place and stays connected;
 * one of exactly the limit (with its newline) is sent.
 */
static void
test_server_reply_over_cap_refused(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s;
	size_t n = 20000;
	char *req = malloc(n + 1), buf[4096];
	int fd;
	bool eof;

	assert_non_null(req);
	p.max_output = 1024;
	p.max_request = n;
	s = start(f, &p);
	fd = client(f->path);
	memset(req, 'q', n);
	req[n] = '\n';
	send_all(s, fd, req, n + 1);
	read_lines(s, fd, buf, sizeof(buf), 1, &eof);
	assert_false(eof);
	assert_string_equal(buf, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32004,"
	                         "\"message\":\"reply too large (20005 bytes, limit 1024 "
	                         "bytes per client)\"}}\n");
	/* "echo:" + 1018 bytes + '\n' is exactly the limit. */
	req[1018] = '\n';
	send_all(s, fd, req, 1019);
	read_lines(s, fd, buf, sizeof(buf), 1, &eof);
	assert_int_equal(strlen(buf), 1024);
	assert_memory_equal(buf, "echo:qqq", 8);
	assert_int_equal(lb_server_clients(s), 1);
	close(fd);
	free(req);
}

static void
test_server_max_clients(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct lb_server *s;
	int a, b, c;

	p.max_clients = 2;
	s = start(f, &p);
	a = client(f->path);
	b = client(f->path);
	pump(s, 10);
	c = client(f->path);
	assert_true(wait_closed(s, c, WAIT_MS));
	assert_int_equal(lb_server_clients(s), 2);
	send_str(s, a, "a\n");
	expect_reply(s, a, "echo:a\n");
	send_str(s, b, "b\n");
	expect_reply(s, b, "echo:b\n");
	/* A freed place can be taken again. */
	close(a);
	close(c);
	pump(s, 10);
	c = client(f->path);
	send_str(s, c, "c\n");
	expect_reply(s, c, "echo:c\n");
	close(b);
	close(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_server_line_gets_reply, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_pipelined_in_order, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_eof_after_request_still_answered, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_server_fair_turns, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_request_too_large, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_idle_closed, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_slow_reader_closed_others_served, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_server_reply_over_cap_refused, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_server_max_clients, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
