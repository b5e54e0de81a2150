/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The exchange with BIRD's control socket (bird_ctl.h), step by step on a
 * non-blocking socket: every call reads or writes what is ready and returns.
 *
 * BIRD's control protocol (doc/reply_codes in BIRD's sources): each reply line
 * is a 4-digit code followed by '-' (more lines follow) or ' ' (last line), or
 * starts with ' ' (continuation of the previous code) or '+' (spontaneous
 * output). 0001 is the welcome; "configure" answers 0002- (reading the
 * file), then 0003 Reconfigured, 0004 Reconfiguration in progress, 0005
 * queued, 0006 ignored (shutting down), or an 8xxx/9xxx error such as
 * "8002 FILE:LINE:COL message" for a configuration BIRD rejects.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/hooks/bird_ctl.h"
#include "control/base/loop.h"

enum { PH_IDLE, PH_WELCOME, PH_SEND, PH_REPLY };

void
lb_bird_ctl_init(struct lb_bird_ctl *x)
{
	memset(x, 0, sizeof(*x));
	x->fd = -1;
}

void
lb_bird_ctl_abort(struct lb_bird_ctl *x)
{
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
	x->phase = PH_IDLE;
}

/* The end of an exchange: x idle, rc returned. */
static int
over(struct lb_bird_ctl *x, int rc)
{
	lb_bird_ctl_abort(x);
	return rc;
}

int
lb_bird_ctl_start(struct lb_bird_ctl *x, const char *socket_path, const char *cmd,
                  uint64_t deadline_ms)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t plen = strlen(socket_path), clen = strlen(cmd);
	int rc;

	lb_bird_ctl_abort(x);
	lb_bird_ctl_init(x);
	x->path = socket_path;
	if (plen >= sizeof(sa.sun_path) || clen + 2 > sizeof(x->out)) {
		snprintf(x->msg, sizeof(x->msg), "%s: path or command too long", socket_path);
		return -EINVAL;
	}
	memcpy(sa.sun_path, socket_path, plen + 1);
	x->outlen = (size_t)snprintf(x->out, sizeof(x->out), "%s\n", cmd);
	x->deadline_ms = deadline_ms;
	x->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (x->fd < 0) {
		rc = -errno;
		snprintf(x->msg, sizeof(x->msg), "%s: socket: %s", socket_path, strerror(errno));
		return over(x, rc);
	}
	/* A Unix socket connects at once or fails (EAGAIN: BIRD's backlog is full). */
	if (connect(x->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = -errno;
		snprintf(x->msg, sizeof(x->msg), "%s: connect: %s", socket_path, strerror(errno));
		return over(x, rc);
	}
	x->phase = PH_WELCOME;
	return 0;
}

uint32_t
lb_bird_ctl_events(const struct lb_bird_ctl *x)
{
	if (x->fd < 0)
		return 0;
	return x->phase == PH_SEND ? LB_LOOP_WRITABLE : LB_LOOP_READABLE;
}

/* The next whole line of x->buf (without '\n') into line: 1; 0 if none is complete. */
static int
take_line(struct lb_bird_ctl *x, char *line, size_t linelen)
{
	for (;;) {
		char *nl = memchr(x->buf, '\n', x->len);

		if (nl != NULL) {
			size_t n = (size_t)(nl - x->buf);
			bool skip = x->overflow;

			snprintf(line, linelen, "%.*s", (int)n, x->buf);
			memmove(x->buf, nl + 1, x->len - n - 1);
			x->len -= n + 1;
			x->overflow = false;
			if (!skip)
				return 1;
			continue;
		}
		if (x->len < LB_BIRD_CTL_LINE_MAX)
			return 0;
		/* A full buffer without '\n': keep the start (the code), drop the rest. */
		x->len = 0;
		if (!x->overflow) {
			snprintf(line, linelen, "%.*s", LB_BIRD_CTL_LINE_MAX, x->buf);
			x->overflow = true;
			return 1;
		}
	}
}

/* A reply's final line: "dddd text"; a code line "dddd-..." is not final. */
static int
line_code(const char *line, bool *final)
{
	int code = 0;

	for (int i = 0; i < 4; i++) {
		if (line[i] < '0' || line[i] > '9')
			return -1;
		code = code * 10 + (line[i] - '0');
	}
	if (line[4] != ' ' && line[4] != '-' && line[4] != '\0')
		return -1;
	*final = line[4] != '-';
	return code;
}

/* Consume the complete lines read so far: the final code once a reply is whole,
 * -EINPROGRESS if it is not yet, -EPROTO for a line that is not BIRD's. */
static int
parse_reply(struct lb_bird_ctl *x)
{
	char line[LB_BIRD_CTL_LINE_MAX + 1];

	while (take_line(x, line, sizeof(line))) {
		bool final = false;
		int code;

		if (line[0] == ' ' || line[0] == '+')
			continue; /* continuation, spontaneous printout */
		code = line_code(line, &final);
		if (code < 0) {
			snprintf(x->msg, sizeof(x->msg), "%s: not a BIRD reply: \"%.60s\"", x->path,
			         line);
			return -EPROTO;
		}
		if (code >= 8000 && !x->have_err) {
			snprintf(x->msg, sizeof(x->msg), "%s", line[4] ? line + 5 : "");
			x->have_err = true;
		}
		if (final) {
			if (!x->have_err)
				snprintf(x->msg, sizeof(x->msg), "%s", line[4] ? line + 5 : "");
			x->have_err = false;
			return code;
		}
	}
	return -EINPROGRESS;
}

/* Read what is there, then parse: as parse_reply, or -errno of the socket. */
static int
read_reply(struct lb_bird_ctl *x)
{
	for (;;) {
		int rc = parse_reply(x);
		ssize_t got;

		if (rc != -EINPROGRESS)
			return rc;
		got = read(x->fd, x->buf + x->len, LB_BIRD_CTL_LINE_MAX - x->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -EINPROGRESS;
		if (got < 0) {
			rc = -errno;
			snprintf(x->msg, sizeof(x->msg), "%s: read: %s", x->path, strerror(errno));
			return rc;
		}
		if (got == 0) {
			snprintf(x->msg, sizeof(x->msg), "%s: BIRD closed the connection", x->path);
			return -ECONNRESET;
		}
		x->len += (size_t)got;
	}
}

int
lb_bird_ctl_step(struct lb_bird_ctl *x, uint64_t now_ms)
{
	int rc;

	if (x->fd < 0)
		return -EBADF;
	if (x->phase == PH_WELCOME) {
		rc = read_reply(x);
		if (rc == -EINPROGRESS)
			goto wait;
		if (rc < 0)
			return over(x, rc);
		if (rc != 1) {
			snprintf(x->msg, sizeof(x->msg), "%s: unexpected welcome (code %04d)",
			         x->path, rc);
			return over(x, -EPROTO);
		}
		x->phase = PH_SEND;
	}
	while (x->phase == PH_SEND) {
		ssize_t n = send(x->fd, x->out + x->sent, x->outlen - x->sent, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			goto wait;
		if (n < 0) {
			rc = -errno;
			snprintf(x->msg, sizeof(x->msg), "%s: send: %s", x->path, strerror(errno));
			return over(x, rc);
		}
		x->sent += (size_t)n;
		if (x->sent == x->outlen)
			x->phase = PH_REPLY;
	}
	rc = read_reply(x);
	if (rc != -EINPROGRESS)
		return over(x, rc);
wait:
	if (now_ms >= x->deadline_ms) {
		snprintf(x->msg, sizeof(x->msg), "%s: %s", x->path,
		         x->phase == PH_SEND ? "BIRD does not read its socket"
		                             : "no reply from BIRD in time");
		return over(x, -ETIMEDOUT);
	}
	return -EINPROGRESS;
}
