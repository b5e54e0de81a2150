/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The probe transports by "via" (health_probe.h), and the direct transport:
 * non-blocking sockets to the backend's own address. tcp completes when the
 * connect does; http sends "GET path" and reads the status line; udp sends
 * the request and compares the reply's first bytes with the response.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control/health/health_probe.h"
#include "control/base/loop.h"

static const struct lb_probe_transport *transports[LB_HEALTH_VIA_N] = {
        [LB_HEALTH_VIA_DIRECT] = &lb_health_probe_direct,
};

int
lb_health_probe_register(enum lb_health_via via, const struct lb_probe_transport *t)
{
	if ((unsigned int)via >= LB_HEALTH_VIA_N)
		return -EINVAL;
	transports[via] = t;
	return 0;
}

const struct lb_probe_transport *
lb_health_probe_transport(enum lb_health_via via)
{
	return (unsigned int)via < LB_HEALTH_VIA_N ? transports[via] : NULL;
}

static enum lb_probe_status
failed(struct lb_probe *p, const char *what, int err)
{
	if (err != 0)
		snprintf(p->why, sizeof(p->why), "%s: %s", what, strerror(err));
	else
		snprintf(p->why, sizeof(p->why), "%s", what);
	return LB_PROBE_FAIL;
}

static socklen_t
sockaddr_of(const struct lb_probe *p, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (p->af == LB_AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(p->port);
		memcpy(&sin->sin_addr, &p->addr, 4);
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(p->port);
	memcpy(&sin6->sin6_addr, &p->addr, 16);
	return sizeof(*sin6);
}

/* The http request, in p->buf from p->off = 0. */
static void
http_request(struct lb_probe *p, char *host, size_t len)
{
	char a[64];

	inet_ntop(p->af == LB_AF_INET ? AF_INET : AF_INET6, &p->addr, a, sizeof(a));
	snprintf(host, len, p->af == LB_AF_INET ? "%s" : "[%s]", a);
}

static enum lb_probe_status
direct_start(void *arg, struct lb_probe *p)
{
	const struct lb_health_conf *h = p->conf;
	struct sockaddr_storage ss;
	socklen_t sl = sockaddr_of(p, &ss);
	bool udp = h->type == LB_HEALTH_TYPE_UDP;

	(void)arg;
	p->fd = -1;
	p->off = 0;
	p->why[0] = '\0';
	if (p->port == 0)
		return failed(p, "no port", 0);
	p->fd = socket(p->af == LB_AF_INET ? AF_INET : AF_INET6,
	               (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd < 0)
		return failed(p, "socket", errno);
	if (connect(p->fd, (struct sockaddr *)&ss, sl) != 0 && errno != EINPROGRESS)
		return failed(p, "connect", errno);
	if (udp) {
		if (send(p->fd, h->request, h->request_len, 0) != (ssize_t)h->request_len)
			return failed(p, "send", errno);
		p->events = LB_LOOP_READABLE;
		return LB_PROBE_PENDING;
	}
	p->events = LB_LOOP_WRITABLE; /* the connect's completion */
	return LB_PROBE_PENDING;
}

/* A status line "HTTP/1.x NNN" once buf holds its first 12 bytes: NNN, else -1. */
static int
http_status(const char *buf, size_t n)
{
	if (n < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
		return -1;
	for (int i = 9; i < 12; i++)
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
	return (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
}

static enum lb_probe_status
http_poll(struct lb_probe *p, uint32_t events)
{
	const struct lb_health_conf *h = p->conf;

	if (p->events == LB_LOOP_WRITABLE) {
		/* Connected: write the whole request (small; one send suffices
		 * on a fresh socket, anything else is a failure). */
		char host[72], req[LB_HEALTH_PATH_MAX + 160];
		int n;

		(void)events;
		http_request(p, host, sizeof(host));
		n = snprintf(req, sizeof(req),
		             "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: spillway-health\r\n"
		             "Connection: close\r\n\r\n",
		             h->path, host);
		if (send(p->fd, req, (size_t)n, MSG_NOSIGNAL) != n)
			return failed(p, "send", errno);
		p->events = LB_LOOP_READABLE;
		return LB_PROBE_PENDING;
	}
	for (;;) {
		ssize_t r = recv(p->fd, p->buf + p->off, 12 - p->off, 0);
		int st;

		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? LB_PROBE_PENDING
			                                         : failed(p, "recv", errno);
		if (r == 0)
			return failed(p, "closed before a status line", 0);
		p->off += (size_t)r;
		if (p->off < 12)
			continue;
		st = http_status(p->buf, p->off);
		if (st < 0)
			return failed(p, "not an HTTP/1 status line", 0);
		if (st != h->expect) {
			snprintf(p->why, sizeof(p->why), "status %d, expected %u", st, h->expect);
			return LB_PROBE_FAIL;
		}
		return LB_PROBE_OK;
	}
}

static enum lb_probe_status
direct_poll(void *arg, struct lb_probe *p, uint32_t events)
{
	const struct lb_health_conf *h = p->conf;

	(void)arg;
	if (h->type == LB_HEALTH_TYPE_UDP) {
		ssize_t r = recv(p->fd, p->buf, sizeof(p->buf), 0);

		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? LB_PROBE_PENDING
			                                         : failed(p, "recv", errno);
		if ((size_t)r < h->response_len ||
		    memcmp(p->buf, h->response, h->response_len) != 0)
			return failed(p, "reply does not match the response", 0);
		return LB_PROBE_OK;
	}
	if (p->events == LB_LOOP_WRITABLE) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
			err = errno;
		if (err != 0)
			return failed(p, "connect", err);
		if (h->type == LB_HEALTH_TYPE_TCP)
			return LB_PROBE_OK;
	}
	return http_poll(p, events);
}

static void
direct_stop(void *arg, struct lb_probe *p)
{
	(void)arg;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

const struct lb_probe_transport lb_health_probe_direct = {
        .name = "direct",
        .start = direct_start,
        .poll = direct_poll,
        .stop = direct_stop,
};
