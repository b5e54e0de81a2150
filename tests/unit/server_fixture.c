/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared part of the control socket server's unit tests (server_fixture.h):
 * the echo server in a temporary directory, its clients, and the loops that
 * drive it with bounded waits.
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

uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "echo:LINE"; a line starting with '#' is a notification (no reply). */
char *
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

int
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

int
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

struct lb_server_params
params(struct fixture *f)
{
	struct lb_server_params p = {
	        .path = f->path,
	        .on_request = echo,
	        .arg = f,
	};

	return p;
}

struct lb_server *
start(struct fixture *f, const struct lb_server_params *p)
{
	char err[ERR_LEN] = "";

	f->srv = lb_server_create(p, err, sizeof(err));
	if (f->srv == NULL)
		fail_msg("lb_server_create: %s", err);
	return f->srv;
}

int
client(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	strcpy(sa.sun_path, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

void
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

void
send_str(struct lb_server *s, int fd, const char *str)
{
	send_all(s, fd, str, strlen(str));
}

/* Read n lines (or up to EOF) into buf, driving the server meanwhile. */
size_t
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

void
expect_reply(struct lb_server *s, int fd, const char *want)
{
	char buf[4096];
	bool eof;

	read_lines(s, fd, buf, sizeof(buf), 1, &eof);
	assert_string_equal(buf, want);
}

/* Drive the server (and its ticks) until fd sees EOF; false on timeout. */
bool
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

void
pump(struct lb_server *s, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		assert_int_equal(lb_server_process(s), 0);
		lb_server_tick(s);
		usleep(1000);
	}
}
