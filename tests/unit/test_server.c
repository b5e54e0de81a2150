/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the control socket server, driven in-process: the test is
 * both the clients (plain Unix sockets) and the event loop (it calls
 * lb_server_process/lb_server_tick itself). Covers framing and ordering, every
 * limit (request size, unsent output, idle time, client count) closing only
 * its offender, and the socket file rules (mode, group, stale, live, not a
 * socket, removal).
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

#include "../../control/server.h"

#define ERR_LEN 512

/*
 * bind() is wrapped (-Wl,--wrap=bind): once it succeeds and swap_path is
 * set, whatever is at swap_path is replaced by a symlink to swap_target, as
 * another user with write access to the directory could do between bind()
 * and the chown()/chmod() that follow it.
 */
int __real_bind(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_bind(int fd, const struct sockaddr *sa, socklen_t len);
static const char *swap_path, *swap_target;

int
__wrap_bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	int rc = __real_bind(fd, sa, len);

	if (rc == 0 && swap_path != NULL) {
		unlink(swap_path);
		if (symlink(swap_target, swap_path) != 0)
			abort();
	}
	return rc;
}
#define WAIT_MS 3000 /* generous bound for anything that should be immediate */

struct fixture {
	char dir[64];
	char path[128];
	struct lb_server *srv;
	unsigned int calls;
	unsigned int a_calls; /* lines starting with 'a' answered so far */
	int b_after_a;        /* a_calls when the line "b" was answered; -1: not yet */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "echo:LINE"; a line starting with '#' is a notification (no reply). */
static char *
echo(void *arg, const char *line, size_t len)
{
	struct fixture *f = arg;
	char *r;

	f->calls++;
	if (len > 0 && line[0] == 'a')
		f->a_calls++;
	if (len == 1 && line[0] == 'b')
		f->b_after_a = (int)f->a_calls;
	if (len > 0 && line[0] == '#')
		return NULL;
	r = malloc(len + 6);
	if (r == NULL)
		return NULL;
	memcpy(r, "echo:", 5);
	memcpy(r + 5, line, len);
	r[len + 5] = '\0';
	return r;
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/spw-srv.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/ctl.sock", f->dir);
	f->b_after_a = -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	lb_server_destroy(f->srv);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static struct lb_server_params
params(struct fixture *f)
{
	struct lb_server_params p = {
	        .path = f->path,
	        .on_request = echo,
	        .arg = f,
	};

	return p;
}

static struct lb_server *
start(struct fixture *f, const struct lb_server_params *p)
{
	char err[ERR_LEN] = "";

	f->srv = lb_server_create(p, err, sizeof(err));
	if (f->srv == NULL)
		fail_msg("lb_server_create: %s", err);
	return f->srv;
}

static int
client(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	strcpy(sa.sun_path, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void
send_all(struct lb_server *s, int fd, const char *data, size_t len)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (len > 0) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

		if (n < 0) {
			assert_true(errno == EAGAIN);
			assert_true(now_ms() < end);
			assert_int_equal(lb_server_process(s), 0);
			continue;
		}
		data += n;
		len -= (size_t)n;
	}
}

static void
send_str(struct lb_server *s, int fd, const char *str)
{
	send_all(s, fd, str, strlen(str));
}

/* Read n lines (or up to EOF) into buf, driving the server meanwhile. */
static size_t
read_lines(struct lb_server *s, int fd, char *buf, size_t cap, unsigned int n, bool *eof)
{
	uint64_t end = now_ms() + WAIT_MS;
	unsigned int lines = 0;
	size_t len = 0;

	*eof = false;
	while (lines < n && now_ms() < end) {
		ssize_t r;

		assert_int_equal(lb_server_process(s), 0);
		r = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno == ECONNRESET)) {
			*eof = true;
			break;
		}
		if (r < 0) {
			assert_true(errno == EAGAIN);
			continue;
		}
		for (ssize_t i = 0; i < r; i++)
			lines += buf[len + (size_t)i] == '\n';
		len += (size_t)r;
		assert_true(len < cap - 1);
	}
	buf[len] = '\0';
	return len;
}

static void
expect_reply(struct lb_server *s, int fd, const char *want)
{
	char buf[4096];
	bool eof;

	read_lines(s, fd, buf, sizeof(buf), 1, &eof);
	assert_string_equal(buf, want);
}

/* Drive the server (and its ticks) until fd sees EOF; false on timeout. */
static bool
wait_closed(struct lb_server *s, int fd, unsigned int ms)
{
	uint64_t end = now_ms() + ms;
	char buf[65536];

	while (now_ms() < end) {
		ssize_t r;

		assert_int_equal(lb_server_process(s), 0);
		lb_server_tick(s);
		r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return true;
		if (r < 0 && errno == EAGAIN)
			usleep(1000);
	}
	return false;
}

static void
pump(struct lb_server *s, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		assert_int_equal(lb_server_process(s), 0);
		lb_server_tick(s);
		usleep(1000);
	}
}

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

/* ---- the socket file --------------------------------------------------------- */

static void
test_server_mode_whatever_umask(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct stat st;
	mode_t old = umask(0);

	start(f, &p);
	umask(old);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	lb_server_destroy(f->srv);

	old = umask(0077);
	p.mode = 0666;
	f->srv = NULL;
	start(f, &p);
	umask(old);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0666);
}

static void
test_server_group(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char gid[32], err[ERR_LEN];
	struct stat st;

	snprintf(gid, sizeof(gid), "%u", (unsigned int)getgid());
	p.group = gid;
	start(f, &p);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_int_equal(st.st_gid, getgid());
	lb_server_destroy(f->srv);
	f->srv = NULL;

	p.group = "no-such-group-spw";
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "no-such-group-spw"));
	assert_int_equal(access(f->path, F_OK), -1); /* nothing created */
}

/*
 * A symlink swapped in at the socket path right after bind() must not carry
 * the group and mode to the file it points to: the file keeps its mode and
 * group, and the server is not created over the symlink.
 */
static void
test_server_symlink_swap_not_followed(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char victim[192], gid[32], err[ERR_LEN] = "";
	gid_t want_gid = geteuid() == 0 ? 1 : getgid();
	struct lb_server *s;
	struct stat st, before;
	int fd;

	snprintf(victim, sizeof(victim), "%s/victim", f->dir);
	fd = open(victim, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(victim, 0600), 0);
	assert_int_equal(lstat(victim, &before), 0);
	snprintf(gid, sizeof(gid), "%u", (unsigned int)want_gid);
	p.group = gid;
	p.mode = 0666;
	swap_path = f->path;
	swap_target = victim;
	s = lb_server_create(&p, err, sizeof(err));
	swap_path = NULL;
	assert_int_equal(lstat(victim, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_gid, before.st_gid);
	assert_null(s);
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(err, f->path));
	/* The symlink is left alone, and nothing of ours is left behind. */
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(unlink(victim), 0);
	assert_int_equal(rmdir(f->dir), 0);
	assert_int_equal(mkdir(f->dir, 0700), 0);
}

/* A path of 107 bytes whose temporary neighbour would be longer still works. */
static void
test_server_longest_path(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char dir[128], path[128];
	struct stat st;
	struct lb_server *s;
	int fd;

	snprintf(dir, sizeof(dir), "%s/", f->dir);
	memset(dir + strlen(dir), 'd', 104 - strlen(dir));
	dir[104] = '\0';
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/ab", dir);
	assert_int_equal(strlen(path), 107);
	p.path = path;
	s = start(f, &p);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	fd = client(path);
	send_str(s, fd, "long\n");
	expect_reply(s, fd, "echo:long\n");
	close(fd);
}

static void
test_server_stale_socket_replaced(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char err[ERR_LEN];
	struct lb_server *s;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	/* What a crash leaves: a bound socket file nobody listens on. */
	strcpy(sa.sun_path, f->path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(lb_server_check_path(f->path, err, sizeof(err)), 0);
	s = start(f, &p);
	fd = client(f->path);
	send_str(s, fd, "hi\n");
	expect_reply(s, fd, "echo:hi\n");
	close(fd);
}

static void
test_server_live_socket_refused(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char err[ERR_LEN], want[256];
	struct lb_server *s = start(f, &p);
	int fd;

	snprintf(want, sizeof(want), "%s: another spillwayd is listening", f->path);
	assert_int_equal(lb_server_check_path(f->path, err, sizeof(err)), -EADDRINUSE);
	assert_string_equal(err, want);
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, EADDRINUSE);
	assert_string_equal(err, want);
	/* The first one is untouched. */
	fd = client(f->path);
	send_str(s, fd, "alive\n");
	expect_reply(s, fd, "echo:alive\n");
	close(fd);
}

static void
test_server_not_a_socket_kept(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char err[ERR_LEN], buf[16] = "";
	FILE *fp = fopen(f->path, "w");

	assert_non_null(fp);
	fputs("precious", fp);
	fclose(fp);
	assert_int_equal(lb_server_check_path(f->path, err, sizeof(err)), -EEXIST);
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(err, "not a socket"));
	fp = fopen(f->path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(buf, sizeof(buf), fp));
	fclose(fp);
	assert_string_equal(buf, "precious");
}

static void
test_server_bad_path(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char err[ERR_LEN], longp[200];

	memset(longp, 'p', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	p.path = longp;
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, ENAMETOOLONG);
	p.path = "/nonexistent-dir-spw/ctl.sock";
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "/nonexistent-dir-spw/ctl.sock: "));
}

static void
test_server_destroy_removes_socket(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	int fd;

	start(f, &p);
	fd = client(f->path);
	pump(f->srv, 10);
	lb_server_destroy(f->srv);
	f->srv = NULL;
	assert_int_equal(access(f->path, F_OK), -1);
	assert_int_equal(recv(fd, &p, 1, MSG_DONTWAIT), 0); /* the server closed it */
	close(fd);

	/* A file that replaced ours is not ours to remove. */
	start(f, &p);
	assert_int_equal(unlink(f->path), 0);
	close(open(f->path, O_CREAT | O_WRONLY, 0600));
	lb_server_destroy(f->srv);
	f->srv = NULL;
	assert_int_equal(access(f->path, F_OK), 0);
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
	        cmocka_unit_test_setup_teardown(test_server_mode_whatever_umask, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_group, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_symlink_swap_not_followed, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_server_longest_path, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_stale_socket_replaced, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_live_socket_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_not_a_socket_kept, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_bad_path, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_destroy_removes_socket, setup,
	                                        teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
