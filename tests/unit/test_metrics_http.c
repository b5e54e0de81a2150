/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the metrics endpoint's sockets (control/io/metrics_http.c) on
 * loopback, driven by the control loop (control/base/loop.c) in this thread: GET
 * and HEAD of /metrics get the render callback's text, everything else its
 * error status (and the count of it); an oversized request gets 431, a
 * silent one 408 after the idle ticks, connections past the limit 503; the
 * server keeps answering after each. Also the ADDR:PORT parser's cases.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/base/loop.h"
#include "control/io/metrics_http.h"

static const char body[] = "spillway_build_info{version=\"t\"} 1\n";

static int
render(void *arg, const uint64_t *codes, char **text, size_t *len)
{
	int *calls = arg;

	(void)codes;
	(*calls)++;
	*text = strdup(body);
	*len = strlen(body);
	return *text != NULL ? 0 : -ENOMEM;
}

struct fixture {
	struct lb_loop *loop;
	struct lb_metrics_http *m;
	int calls;
	uint16_t port;
};

/* A free loopback port: bound to 0, read back, released. */
static uint16_t
free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char addr[32], err[128];

	f->loop = lb_loop_create();
	f->port = free_port();
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", f->port);
	f->m = lb_metrics_http_create(addr, render, &f->calls, err, sizeof(err));
	if (f->m == NULL)
		fail_msg("create: %s", err);
	assert_int_equal(lb_metrics_http_attach(f->m, f->loop), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	lb_metrics_http_destroy(f->m);
	lb_loop_destroy(f->loop);
	free(f);
	return 0;
}

static int
client(const struct fixture *f)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(f->port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Run the loop until the server closes its side of fd; the reply in buf. */
static size_t
reply(const struct fixture *f, int fd, char *buf, size_t len)
{
	size_t got = 0;

	for (int i = 0; i < 2000; i++) {
		ssize_t n;

		lb_loop_run_once(f->loop, 5);
		n = recv(fd, buf + got, len - 1 - got, MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n > 0)
			got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

static void
exchange(const struct fixture *f, const char *req, size_t req_len, char *buf, size_t len)
{
	int fd = client(f);

	assert_int_equal(send(fd, req, req_len, 0), (ssize_t)req_len);
	reply(f, fd, buf, len);
	close(fd);
}

static unsigned int
status(const char *buf)
{
	unsigned int code = 0;

	if (sscanf(buf, "HTTP/1.1 %u ", &code) != 1)
		return 0;
	return code;
}

static uint64_t
counted(const struct fixture *f, unsigned int code)
{
	for (unsigned int i = 0; i < LB_METRICS_CODES; i++)
		if (lb_metrics_codes[i] == code)
			return lb_metrics_http_codes(f->m)[i];
	return UINT64_MAX;
}

static void
test_metrics_http_get(void **state)
{
	struct fixture *f = *state;
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[4096], want[256];

	exchange(f, req, strlen(req), buf, sizeof(buf));
	assert_int_equal(status(buf), 200);
	assert_non_null(strstr(buf, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	snprintf(want, sizeof(want), "Content-Length: %zu\r\n", strlen(body));
	assert_non_null(strstr(buf, want));
	assert_string_equal(strstr(buf, "\r\n\r\n") + 4, body);
	assert_int_equal(f->calls, 1);
	assert_int_equal(counted(f, 200), 1);
}

static void
test_metrics_http_head_query_http10(void **state)
{
	struct fixture *f = *state;
	static const char head[] = "HEAD /metrics HTTP/1.1\r\n\r\n";
	static const char q[] = "GET /metrics?x=1 HTTP/1.0\n\n";
	char buf[4096];

	exchange(f, head, strlen(head), buf, sizeof(buf));
	assert_int_equal(status(buf), 200);
	assert_string_equal(strstr(buf, "\r\n\r\n") + 4, ""); /* no body */
	exchange(f, q, strlen(q), buf, sizeof(buf));
	assert_int_equal(status(buf), 200);
	assert_int_equal(counted(f, 200), 2);
}

struct bad_case {
	const char *req;
	unsigned int code;
};

static const struct bad_case bad_cases[] = {
        {"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405},
        {"DELETE /metrics HTTP/1.1\r\n\r\n", 405},
        {"GET / HTTP/1.1\r\n\r\n", 404},
        {"GET /metricsx HTTP/1.1\r\n\r\n", 404},
        {"GET /metrics/ HTTP/1.1\r\n\r\n", 404},
        {"garbage\r\n\r\n", 400},
        {"GET /metrics\r\n\r\n", 400},
        {"GET /metrics HTTP/2.0\r\n\r\n", 400},
        {"GET metrics HTTP/1.1\r\n\r\n", 400},
        {"G(T /metrics HTTP/1.1\r\n\r\n", 400},
        {"GET /met\x01rics HTTP/1.1\r\n\r\n", 400},
};

static void
test_metrics_http_refuses(void **state)
{
	struct fixture *f = *state;
	static const char ok[] = "GET /metrics HTTP/1.1\r\n\r\n";
	char buf[4096];

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		uint64_t before = counted(f, bad_cases[i].code);

		exchange(f, bad_cases[i].req, strlen(bad_cases[i].req), buf, sizeof(buf));
		if (status(buf) != bad_cases[i].code)
			fail_msg("case %zu (%s): status %u, want %u", i, bad_cases[i].req,
			         status(buf), bad_cases[i].code);
		if (bad_cases[i].code == 405)
			assert_non_null(strstr(buf, "Allow: GET, HEAD\r\n"));
		assert_int_equal(counted(f, bad_cases[i].code), before + 1);
	}
	assert_int_equal(f->calls, 0); /* nothing refused was rendered */
	exchange(f, ok, strlen(ok), buf, sizeof(buf));
	assert_int_equal(status(buf), 200);
}

/* A request line and headers past the limit: 431, read to the end, no reset. */
static void
test_metrics_http_oversized(void **state)
{
	struct fixture *f = *state;
	size_t n = LB_METRICS_HTTP_MAX_REQUEST + 100;
	char *req = malloc(n), buf[4096];

	memset(req, 'a', n);
	memcpy(req, "GET /metrics HTTP/1.1\r\nX: ", 26);
	exchange(f, req, n, buf, sizeof(buf));
	free(req);
	assert_int_equal(status(buf), 431);
	assert_int_equal(counted(f, 431), 1);
	exchange(f, "GET /metrics HTTP/1.1\r\n\r\n", 25, buf, sizeof(buf));
	assert_int_equal(status(buf), 200);
}

/* A client that sends half a request: 408 after the idle ticks, not before. */
static void
test_metrics_http_idle(void **state)
{
	struct fixture *f = *state;
	int fd = client(f);
	char buf[512];

	assert_int_equal(send(fd, "GET /met", 8, 0), 8);
	for (int i = 0; i < 50; i++)
		lb_loop_run_once(f->loop, 1);
	for (unsigned int t = 0; t + 1 < LB_METRICS_HTTP_IDLE_TICKS; t++)
		lb_metrics_http_tick(f->m);
	assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), -1);
	lb_metrics_http_tick(f->m);
	reply(f, fd, buf, sizeof(buf));
	assert_int_equal(status(buf), 408);
	close(fd);
	assert_int_equal(counted(f, 408), 1);
}

/* Past LB_METRICS_HTTP_MAX_CONNS open connections, the next one gets 503. */
static void
test_metrics_http_conn_limit(void **state)
{
	struct fixture *f = *state;
	int fds[LB_METRICS_HTTP_MAX_CONNS], extra;
	char buf[512];

	for (int i = 0; i < LB_METRICS_HTTP_MAX_CONNS; i++)
		fds[i] = client(f);
	for (int i = 0; i < 50; i++)
		lb_loop_run_once(f->loop, 1);
	extra = client(f);
	reply(f, extra, buf, sizeof(buf));
	assert_int_equal(status(buf), 503);
	close(extra);
	assert_int_equal(counted(f, 503), 1);
	for (int i = 0; i < LB_METRICS_HTTP_MAX_CONNS; i++)
		close(fds[i]);
	for (int i = 0; i < 50; i++)
		lb_loop_run_once(f->loop, 1);
	exchange(f, "GET /metrics HTTP/1.1\r\n\r\n", 25, buf, sizeof(buf));
	assert_int_equal(status(buf), 200);
}

struct addr_case {
	const char *s;
	int rc;
	int af;
	uint16_t port;
};

static const struct addr_case addr_cases[] = {
        {"127.0.0.1:9100", 0, AF_INET, 9100},
        {"0.0.0.0:1", 0, AF_INET, 1},
        {"[::1]:65535", 0, AF_INET6, 65535},
        {"[2001:db8::1]:80", 0, AF_INET6, 80},
        {"127.0.0.1:0", -EINVAL, 0, 0},
        {"127.0.0.1:65536", -EINVAL, 0, 0},
        {"127.0.0.1:", -EINVAL, 0, 0},
        {"127.0.0.1:+80", -EINVAL, 0, 0},
        {"127.0.0.1:80x", -EINVAL, 0, 0},
        {"127.0.0.1", -EINVAL, 0, 0},
        {"localhost:80", -EINVAL, 0, 0},
        {"::1:80", -EINVAL, 0, 0},
        {"[::1]80", -EINVAL, 0, 0},
        {"[127.0.0.1]:80", -EINVAL, 0, 0},
        {":80", -EINVAL, 0, 0},
        {"", -EINVAL, 0, 0},
};

static void
test_metrics_http_parse_addr(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(addr_cases) / sizeof(addr_cases[0]); i++) {
		const struct addr_case *c = &addr_cases[i];
		struct sockaddr_storage ss;
		socklen_t len;
		int rc = lb_metrics_http_parse_addr(c->s, &ss, &len);

		if (rc != c->rc)
			fail_msg("\"%s\": %d, want %d", c->s, rc, c->rc);
		if (rc != 0)
			continue;
		assert_int_equal(ss.ss_family, c->af);
		assert_int_equal(ntohs(c->af == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
		                                        : ((struct sockaddr_in6 *)&ss)->sin6_port),
		                 c->port);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_metrics_http_get, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_metrics_http_head_query_http10, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_metrics_http_refuses, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_metrics_http_oversized, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_metrics_http_idle, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_metrics_http_conn_limit, setup, teardown),
	        cmocka_unit_test(test_metrics_http_parse_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
