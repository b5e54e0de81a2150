/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spillctl's connection to spillwayd: a non-blocking Unix stream socket, each
 * request bounded by one deadline (--timeout), one JSON value per line both
 * ways; then JSON-RPC 2.0 on top: requests numbered from 1, and the check that
 * a reply answers the request sent before any command reads it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "control/model/json_text.h"
#include "conn.h"
#include "render.h"
#include "shape.h"

/* Largest reply line accepted: a raw Maglev table of 1048573 slots of IPv6
 * addresses is about 45 MiB, a full configuration a few MiB. */
#define REPLY_MAX (256u << 20)

/* Receive buffer: first size, then doubled up to REPLY_MAX. */
#define RECV_CHUNK 65536

volatile sig_atomic_t spillctl_stop;

int __attribute__((format(printf, 2, 3)))
spillctl_io_error(const struct spillctl_cli *cli, const char *fmt, ...)
{
	va_list ap;

	if (spillctl_stop)
		return SPILLCTL_EXIT_IO;
	fprintf(stderr, "spillctl: %s: ", cli->socket_path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return SPILLCTL_EXIT_IO;
}

int64_t
spillctl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Absolute deadline for one request; INT64_MAX means none. */
static int64_t
deadline_after(double seconds)
{
	if (seconds <= 0)
		return INT64_MAX;
	return spillctl_now_ns() + (int64_t)(seconds * 1e9);
}

/* Waits for @events on @fd. Returns 0, -ETIMEDOUT, -EINTR (stop requested) or -errno. */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		int ms = -1;
		int n;

		if (deadline != INT64_MAX) {
			int64_t left = deadline - spillctl_now_ns();

			if (left <= 0)
				return -ETIMEDOUT;
			ms = (int)((left + 999999) / 1000000);
		}
		n = poll(&p, 1, ms);
		if (n > 0)
			return 0;
		if (n == 0)
			continue; /* re-check the deadline */
		if (errno != EINTR)
			return -errno;
		if (spillctl_stop)
			return -EINTR;
	}
}

void
spillctl_conn_close(struct spillctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->used = false;
	c->len = 0;
	c->scan = 0;
}

static int
conn_open(struct spillctl_cli *cli, int64_t deadline)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct spillctl_conn *c = &cli->conn;
	int fd;
	int rc;

	if (strlen(cli->socket_path) >= sizeof(sa.sun_path))
		return spillctl_io_error(cli, "cannot connect: socket path longer than %zu bytes",
		                         sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, cli->socket_path, strlen(cli->socket_path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return spillctl_io_error(cli, "cannot create socket: %s", strerror(errno));

	/* A Unix stream connect either completes, or fails with EAGAIN when the
	 * listen backlog is full: retry that until the deadline. */
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno == EINPROGRESS) {
			int err = 0;
			socklen_t el = sizeof(err);

			rc = wait_fd(fd, POLLOUT, deadline);
			if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
			    err != 0)
				rc = -err;
			if (rc == 0)
				break;
			errno = -rc;
		} else if (errno == EAGAIN || errno == EINTR) {
			struct timespec ts = {.tv_nsec = 10 * 1000000};

			if (spillctl_stop) {
				errno = EINTR;
			} else if (spillctl_now_ns() >= deadline) {
				errno = ETIMEDOUT;
			} else {
				nanosleep(&ts, NULL);
				continue;
			}
		}
		rc = errno;
		close(fd);
		if (rc == ETIMEDOUT)
			return spillctl_io_error(cli, "cannot connect: timed out");
		return spillctl_io_error(
		        cli, "cannot connect: %s%s", strerror(rc),
		        rc == ENOENT || rc == ECONNREFUSED
		                ? " (is spillwayd running with --control on this path?)"
		                : "");
	}
	c->fd = fd;
	c->used = false;
	c->len = 0;
	c->scan = 0;
	return SPILLCTL_EXIT_OK;
}

/* Sends all of @text; returns 0 or -errno. */
static int
conn_send(struct spillctl_conn *c, const char *text, size_t len, int64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			int rc = wait_fd(c->fd, POLLOUT, deadline);

			if (rc < 0)
				return rc;
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/*
 * Receives one '\n'-terminated line into c->buf; returns its length (without
 * the newline, which is replaced by '\0'), -ECONNRESET on EOF, -EMSGSIZE
 * above REPLY_MAX, -ETIMEDOUT or -errno. The caller drops it with conn_consume().
 */
static ssize_t
conn_recv_line(struct spillctl_conn *c, int64_t deadline)
{
	for (;;) {
		char *nl =
		        c->len > c->scan ? memchr(c->buf + c->scan, '\n', c->len - c->scan) : NULL;
		ssize_t n;

		if (nl != NULL) {
			*nl = '\0';
			return nl - c->buf;
		}
		c->scan = c->len;
		if (c->len == c->cap) {
			size_t ncap = c->cap != 0 ? c->cap * 2 : RECV_CHUNK;
			char *nb;

			if (c->cap >= (size_t)REPLY_MAX + 1)
				return -EMSGSIZE;
			if (ncap > (size_t)REPLY_MAX + 1)
				ncap = (size_t)REPLY_MAX + 1;
			nb = realloc(c->buf, ncap);
			if (nb == NULL)
				return -ENOMEM;
			c->buf = nb;
			c->cap = ncap;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
			int rc = wait_fd(c->fd, POLLIN, deadline);

			if (rc < 0)
				return rc;
			continue;
		}
		return -errno;
	}
}

/* Drops the line of @n bytes (plus its newline) returned by conn_recv_line(). */
static void
conn_consume(struct spillctl_conn *c, size_t n)
{
	size_t rest = c->len - (n + 1);

	memmove(c->buf, c->buf + n + 1, rest);
	c->len = rest;
	c->scan = 0;
}

static const char *
io_reason(int err)
{
	switch (err) {
	case ETIMEDOUT:
		return "timed out waiting for the server (see --timeout)";
	case ECONNRESET:
		return "connection closed by the server";
	case EMSGSIZE:
		return "reply larger than 256 MiB";
	default:
		return strerror(err);
	}
}

int
spillctl_exchange(struct spillctl_cli *cli, const json_t *req, json_t **reply)
{
	int64_t deadline = deadline_after(cli->timeout_s);
	struct spillctl_conn *c = &cli->conn;
	json_error_t jerr;
	char *text;
	size_t tlen;
	ssize_t n;
	int rc;

	*reply = NULL;
	text = lb_json_text_dumps(req, JSON_COMPACT);
	if (text == NULL)
		return spillctl_io_error(cli, "cannot encode the request: out of memory");
	tlen = strlen(text);
	text[tlen] = '\n'; /* json_dumps' terminator becomes the line end */

	for (int attempt = 0;; attempt++) {
		bool reused = c->fd >= 0 && c->used;

		if (c->fd < 0) {
			rc = conn_open(cli, deadline);
			if (rc != SPILLCTL_EXIT_OK) {
				free(text);
				return rc;
			}
		}
		rc = conn_send(c, text, tlen + 1, deadline);
		n = rc < 0 ? rc : conn_recv_line(c, deadline);
		if (n >= 0)
			break;
		spillctl_conn_close(c);
		if (reused && attempt == 0 && (n == -ECONNRESET || n == -EPIPE))
			continue;
		free(text);
		if (n == -EINTR && spillctl_stop)
			return SPILLCTL_EXIT_IO;
		return spillctl_io_error(cli, "%s", io_reason((int)-n));
	}
	free(text);

	*reply = json_loadb(c->buf, (size_t)n, 0, &jerr);
	conn_consume(c, (size_t)n);
	if (*reply == NULL) {
		spillctl_conn_close(c);
		return spillctl_io_error(cli, "malformed reply: not JSON: %s",
		                         spillctl_esc(jerr.text));
	}
	c->used = true;
	return SPILLCTL_EXIT_OK;
}

json_t *
spillctl_request(struct spillctl_cli *cli, const char *method, json_t *params)
{
	json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", cli->next_id++, "method",
	                        method);

	if (params != NULL)
		json_object_set_new(req, "params", params);
	return req;
}

void
spillctl_report_error(const struct spillctl_cli *cli, const json_t *err)
{
	fprintf(stderr, "spillctl: %s (code %lld)\n",
	        spillctl_jtext(err, "message", "unknown error"),
	        (long long)spillctl_jint(err, "code"));
	if (cli->json)
		spillctl_print_json(err);
}

/* A JSON-RPC 2.0 error object: an integer code and a string message. */
static const struct spillctl_member error_m[] = {
        {"code", true, &(const struct spillctl_shape){SPILLCTL_K_INT, NULL, NULL}},
        {"message", true, &(const struct spillctl_shape){SPILLCTL_K_STR, NULL, NULL}},
        {NULL, false, NULL},
};
static const struct spillctl_shape error_shape = {SPILLCTL_K_OBJ, error_m, NULL};

/* A request or reply id, short and escaped, for a message. */
static void
id_text(const json_t *id, char *buf, size_t len)
{
	char *t = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);

	snprintf(buf, len, "%.40s%s", t != NULL ? spillctl_esc(t) : "?",
	         t != NULL && strlen(t) > 40 ? "..." : "");
	free(t);
}

bool
spillctl_reply_valid(const json_t *r, const json_t *want_id, json_t **result, json_t **error,
                     char *why, size_t len)
{
	const json_t *id = json_object_get(r, "id");
	const json_t *ver = json_object_get(r, "jsonrpc");
	char got[64], want[64];

	*result = json_object_get(r, "result");
	*error = json_object_get(r, "error");
	if (!json_is_object(r)) {
		snprintf(why, len, "expected a JSON-RPC 2.0 response object, got %s",
		         json_is_array(r) ? "an array" : "a JSON scalar");
		return false;
	}
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
		snprintf(why, len, "jsonrpc: %s, expected \"2.0\"",
		         ver == NULL ? "missing" : "not \"2.0\"");
		return false;
	}
	if ((*result == NULL) == (*error == NULL)) {
		snprintf(why, len, "%s",
		         *result == NULL ? "neither result nor error" : "both result and error");
		return false;
	}
	if (*error != NULL && !spillctl_shape_check(*error, &error_shape, "error", why, len))
		return false;
	if (id == NULL) {
		snprintf(why, len, "id: missing");
		return false;
	}
	/* A request the server could not read is answered with id null. */
	if (json_equal(id, want_id) || (json_is_null(id) && *error != NULL))
		return true;
	id_text(id, got, sizeof(got));
	id_text(want_id, want, sizeof(want));
	snprintf(why, len, "id: %s does not answer request %s", got, want);
	return false;
}

int
spillctl_call_err(struct spillctl_cli *cli, const char *method, json_t *params,
                  const struct spillctl_shape *shape, json_t **result, json_t **error)
{
	json_t *req = spillctl_request(cli, method, params);
	json_t *reply;
	json_t *res;
	json_t *err;
	char why[512];
	int rc;

	*result = NULL;
	if (error != NULL)
		*error = NULL;
	rc = spillctl_exchange(cli, req, &reply);
	if (rc != SPILLCTL_EXIT_OK) {
		json_decref(req);
		return rc;
	}
	if (!spillctl_reply_valid(reply, json_object_get(req, "id"), &res, &err, why,
	                          sizeof(why)) ||
	    (err == NULL && !spillctl_shape_check(res, shape, "result", why, sizeof(why)))) {
		json_decref(req);
		json_decref(reply);
		spillctl_conn_close(&cli->conn);
		return spillctl_io_error(cli, "malformed reply to %s: %s", method, why);
	}
	json_decref(req);
	if (err != NULL) {
		if (error != NULL)
			*error = json_incref(err);
		else
			spillctl_report_error(cli, err);
		json_decref(reply);
		return SPILLCTL_EXIT_SERVER;
	}
	*result = json_incref(res);
	json_decref(reply);
	return SPILLCTL_EXIT_OK;
}

int
spillctl_call(struct spillctl_cli *cli, const char *method, json_t *params,
              const struct spillctl_shape *shape, json_t **result)
{
	return spillctl_call_err(cli, method, params, shape, result, NULL);
}

int
spillctl_call_print(struct spillctl_cli *cli, const char *method, json_t *params,
                    const struct spillctl_shape *shape, json_t **human)
{
	json_t *res;
	int rc = spillctl_call(cli, method, params, shape, &res);

	*human = NULL;
	if (rc != SPILLCTL_EXIT_OK)
		return rc;
	if (cli->json) {
		spillctl_print_json(res);
		json_decref(res);
	} else {
		*human = res;
	}
	return SPILLCTL_EXIT_OK;
}

int
spillctl_call_json(struct spillctl_cli *cli, const char *method, json_t *params,
                   const struct spillctl_shape *shape)
{
	json_t *res;
	int rc = spillctl_call(cli, method, params, shape, &res);

	if (rc == SPILLCTL_EXIT_OK) {
		spillctl_print_json(res);
		json_decref(res);
	}
	return rc;
}
