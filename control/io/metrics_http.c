/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metrics endpoint's sockets: a listener and a fixed table of
 * connections, each reading its request into a bounded buffer, answering
 * once, writing the reply as the socket takes it, then half-closing and
 * reading until the client closes so that an early error reply is not lost
 * to a reset. Everything runs from callbacks of the control thread's loop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control/base/loop.h"
#include "control/io/metrics_http.h"

#define ACCEPT_BATCH 16 /* connections accepted per listener event */

enum conn_state { CONN_FREE, CONN_READ, CONN_WRITE, CONN_DRAIN };

struct conn {
	struct lb_metrics_http *m;
	int fd;
	enum conn_state state;
	unsigned int idle; /* ticks without progress */
	size_t in_len;
	char in[LB_METRICS_HTTP_MAX_REQUEST];
	char *out; /* the whole reply */
	size_t out_len, out_off;
};

struct lb_metrics_http {
	int fd;
	struct lb_loop *loop;
	lb_metrics_render_fn render;
	void *arg;
	uint64_t codes[LB_METRICS_CODES];
	struct conn conns[LB_METRICS_HTTP_MAX_CONNS];
};

int
lb_metrics_http_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64];
	const char *colon, *h = s, *port;
	size_t hl;
	char *end;
	unsigned long p;

	if (s == NULL || ss == NULL || len == NULL)
		return -EINVAL;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (close == NULL || close[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(close - h);
		port = close + 2;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || strchr(s, ':') != colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
		port = colon + 1;
	}
	if (hl == 0 || hl >= sizeof(host) || port[0] < '0' || port[0] > '9')
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	p = strtoul(port, &end, 10);
	if (errno != 0 || *end != '\0' || p == 0 || p > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)p);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)p);
		*len = sizeof(*a);
	}
	return 0;
}

static void
conn_close(struct conn *c)
{
	if (c->state == CONN_FREE)
		return;
	if (c->m->loop != NULL)
		lb_loop_del(c->m->loop, c->fd);
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->fd = -1;
	c->state = CONN_FREE;
}

static void on_conn(struct lb_loop *loop, int fd, uint32_t events, void *arg);

/* Wait for events instead of the ones registered; closes c if that fails. */
static void
conn_wait(struct conn *c, uint32_t events)
{
	lb_loop_del(c->m->loop, c->fd);
	if (lb_loop_add(c->m->loop, c->fd, events, on_conn, c) != 0)
		conn_close(c);
}

static void
count(struct lb_metrics_http *m, unsigned int code)
{
	for (unsigned int i = 0; i < LB_METRICS_CODES; i++)
		if (lb_metrics_codes[i] == code)
			m->codes[i]++;
}

static const char *
reason(unsigned int code)
{
	switch (code) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	default:
		return "Internal Server Error";
	}
}

/*
 * Compose the reply (status line, headers, and the body unless head) into
 * c->out; body is NULL for a short text of the status. 0 or -ENOMEM.
 */
static int
compose(struct conn *c, unsigned int code, const char *body, size_t body_len, bool head)
{
	char hdr[256], msg[64];
	int n;

	if (body == NULL) {
		snprintf(msg, sizeof(msg), "%u %s\n", code, reason(code));
		body = msg;
		body_len = strlen(msg);
	}
	n = snprintf(hdr, sizeof(hdr),
	             "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
	             "Connection: close\r\n\r\n",
	             code, reason(code),
	             code == 200 ? "text/plain; version=0.0.4; charset=utf-8"
	                         : "text/plain; charset=utf-8",
	             body_len, code == 405 ? "Allow: GET, HEAD\r\n" : "");
	c->out = malloc((size_t)n + (head ? 0 : body_len));
	if (c->out == NULL)
		return -ENOMEM;
	memcpy(c->out, hdr, (size_t)n);
	if (!head)
		memcpy(c->out + n, body, body_len);
	c->out_len = (size_t)n + (head ? 0 : body_len);
	c->out_off = 0;
	count(c->m, code);
	return 0;
}

/* RFC 9110 tchar: what a method token may hold. */
static bool
is_token(const char *s, size_t n)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (!((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= 'a' && ch <= 'z') || (ch != '\0' && strchr(extra, ch) != NULL)))
			return false;
	}
	return true;
}

/*
 * The status for the request line at line (len bytes, no line end): 200 for
 * GET or HEAD of /metrics (a query string is ignored), else 400, 404 or 405.
 */
static unsigned int
classify(const char *line, size_t len, bool *head)
{
	const char *sp1 = memchr(line, ' ', len), *sp2, *target, *ver;
	size_t ml, tl, vl, pl;

	*head = false;
	if (sp1 == NULL)
		return 400;
	sp2 = memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - line));
	if (sp2 == NULL)
		return 400;
	ml = (size_t)(sp1 - line);
	target = sp1 + 1;
	tl = (size_t)(sp2 - target);
	ver = sp2 + 1;
	vl = len - (size_t)(ver - line);
	if (!is_token(line, ml) || tl == 0 || target[0] != '/' ||
	    !(vl == 8 && (memcmp(ver, "HTTP/1.1", 8) == 0 || memcmp(ver, "HTTP/1.0", 8) == 0)))
		return 400;
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)target[i] <= ' ' || target[i] == 0x7f)
			return 400;
	if (!((ml == 3 && memcmp(line, "GET", 3) == 0) ||
	      (ml == 4 && memcmp(line, "HEAD", 4) == 0)))
		return 405;
	*head = ml == 4;
	pl = tl;
	for (size_t i = 0; i < tl; i++)
		if (target[i] == '?') {
			pl = i;
			break;
		}
	if (pl != 8 || memcmp(target, "/metrics", 8) != 0)
		return 404;
	return 200;
}

/* Write what the socket takes; at the end, half-close and drain. */
static void
conn_flush(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (c->state != CONN_WRITE) {
				c->state = CONN_WRITE;
				conn_wait(c, LB_LOOP_WRITABLE);
			}
			return;
		}
		if (n <= 0) {
			conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
		c->idle = 0;
	}
	free(c->out);
	c->out = NULL;
	shutdown(c->fd, SHUT_WR);
	if (c->state == CONN_WRITE)
		conn_wait(c, LB_LOOP_READABLE);
	c->state = CONN_DRAIN;
}

/* Answer with code (and the rendered text for a 200). */
static void
answer(struct conn *c, unsigned int code, bool head)
{
	char *text = NULL;
	size_t len = 0;
	int rc = 0;

	if (code == 200 && c->m->render(c->m->arg, c->m->codes, &text, &len) != 0)
		code = 500;
	rc = compose(c, code, text, len, head);
	free(text);
	if (rc != 0) {
		conn_close(c);
		return;
	}
	conn_flush(c);
}

/* Where the request's header section ends (past its empty line), or NULL. */
static const char *
header_end(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] == '\n' && s[i + 1] == '\n')
			return s + i + 2;
		if (i + 3 < n && memcmp(s + i, "\r\n\r\n", 4) == 0)
			return s + i + 4;
	}
	return NULL;
}

static void
conn_read(struct conn *c)
{
	for (;;) {
		char sink[512];
		char *dst = c->state == CONN_READ ? c->in + c->in_len : sink;
		size_t room = c->state == CONN_READ ? sizeof(c->in) - c->in_len : sizeof(sink);
		ssize_t n = recv(c->fd, dst, room, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			/* EOF or error: nothing more to say to this client. */
			conn_close(c);
			return;
		}
		c->idle = 0;
		if (c->state != CONN_READ)
			continue;
		c->in_len += (size_t)n;
		if (header_end(c->in, c->in_len) != NULL) {
			const char *eol = memchr(c->in, '\n', c->in_len);
			size_t ll = (size_t)(eol - c->in);
			bool head;
			unsigned int code;

			if (ll > 0 && c->in[ll - 1] == '\r')
				ll--;
			code = classify(c->in, ll, &head);
			answer(c, code, head);
			return;
		}
		if (c->in_len == sizeof(c->in)) {
			answer(c, 431, false);
			return;
		}
	}
}

static void
on_conn(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	struct conn *c = arg;

	(void)loop;
	(void)fd;
	if (c->state == CONN_WRITE && (events & LB_LOOP_WRITABLE))
		conn_flush(c);
	else if (c->state == CONN_READ || c->state == CONN_DRAIN)
		conn_read(c);
}

static void
on_listen(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	struct lb_metrics_http *m = arg;

	(void)events;
	for (int k = 0; k < ACCEPT_BATCH; k++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c = NULL;

		if (cfd < 0)
			return;
		for (unsigned int i = 0; i < LB_METRICS_HTTP_MAX_CONNS && c == NULL; i++)
			if (m->conns[i].state == CONN_FREE)
				c = &m->conns[i];
		if (c == NULL) {
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
			                           "Content-Length: 0\r\nConnection: close\r\n\r\n";

			/* Best effort: one non-blocking send into an empty buffer. */
			if (send(cfd, busy, sizeof(busy) - 1, MSG_NOSIGNAL) < 0)
				(void)0;
			count(m, 503);
			close(cfd);
			continue;
		}
		c->fd = cfd;
		c->state = CONN_READ;
		c->idle = 0;
		c->in_len = 0;
		if (lb_loop_add(loop, cfd, LB_LOOP_READABLE, on_conn, c) != 0) {
			close(cfd);
			c->fd = -1;
			c->state = CONN_FREE;
		}
	}
}

struct lb_metrics_http *
lb_metrics_http_create(const char *addr, lb_metrics_render_fn render, void *arg, char *err,
                       size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct lb_metrics_http *m;
	int one = 1;

	if (render == NULL || lb_metrics_http_parse_addr(addr, &ss, &len) != 0) {
		snprintf(err, errlen, "--metrics: not ADDR:PORT (numeric, [IPv6]:PORT): %s",
		         addr != NULL ? addr : "(null)");
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		snprintf(err, errlen, "--metrics: out of memory");
		return NULL;
	}
	m->render = render;
	m->arg = arg;
	for (unsigned int i = 0; i < LB_METRICS_HTTP_MAX_CONNS; i++) {
		m->conns[i].m = m;
		m->conns[i].fd = -1;
	}
	m->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->fd < 0 || setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(m->fd, (struct sockaddr *)&ss, len) != 0 || listen(m->fd, 64) != 0) {
		snprintf(err, errlen, "--metrics %s: %s", addr, strerror(errno));
		if (m->fd >= 0)
			close(m->fd);
		free(m);
		return NULL;
	}
	return m;
}

int
lb_metrics_http_attach(struct lb_metrics_http *m, struct lb_loop *loop)
{
	int rc = 0;

	if (loop == NULL) {
		for (unsigned int i = 0; i < LB_METRICS_HTTP_MAX_CONNS; i++)
			conn_close(&m->conns[i]);
		if (m->loop != NULL)
			lb_loop_del(m->loop, m->fd);
		m->loop = NULL;
		return 0;
	}
	rc = lb_loop_add(loop, m->fd, LB_LOOP_READABLE, on_listen, m);
	if (rc == 0)
		m->loop = loop;
	return rc;
}

void
lb_metrics_http_tick(struct lb_metrics_http *m)
{
	for (unsigned int i = 0; i < LB_METRICS_HTTP_MAX_CONNS; i++) {
		struct conn *c = &m->conns[i];

		if (c->state == CONN_FREE || ++c->idle < LB_METRICS_HTTP_IDLE_TICKS)
			continue;
		if (c->state == CONN_READ) {
			/* A request that never completed: say so once, then go. */
			c->idle = 0;
			answer(c, 408, false);
			if (c->state != CONN_FREE)
				c->idle = LB_METRICS_HTTP_IDLE_TICKS / 2;
			continue;
		}
		conn_close(c);
	}
}

const uint64_t *
lb_metrics_http_codes(const struct lb_metrics_http *m)
{
	return m->codes;
}

void
lb_metrics_http_destroy(struct lb_metrics_http *m)
{
	if (m == NULL)
		return;
	lb_metrics_http_attach(m, NULL);
	close(m->fd);
	free(m);
}
