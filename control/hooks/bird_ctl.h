/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One exchange with BIRD's control socket as a non-blocking state machine:
 * connect, the welcome, one command, the command's final reply line. The
 * owner drives it from an event loop (lb_bird_ctl_step whenever the socket is
 * ready for lb_bird_ctl_events) and from a timer (the same call ends it once
 * its deadline has passed); it never waits itself. Internal to control/.
 */
#ifndef LB_BIRD_CTL_H
#define LB_BIRD_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LB_BIRD_CTL_LINE_MAX 1024 /* longer reply lines are cut (only their code matters) */
#define LB_BIRD_CTL_MSG_LEN 256

struct lb_bird_ctl {
	int fd; /* -1: no exchange */
	int phase;
	uint64_t deadline_ms;
	const char *path; /* the caller's, for messages; must outlive the exchange */
	char out[256];
	size_t outlen, sent;
	char buf[LB_BIRD_CTL_LINE_MAX + 1];
	size_t len;
	bool overflow; /* the current line was cut: skip to its end */
	bool have_err; /* msg holds the reply's first error line */
	char msg[LB_BIRD_CTL_MSG_LEN];
};

/** An idle exchange (fd -1). */
void lb_bird_ctl_init(struct lb_bird_ctl *x);

/**
 * Connect to socket_path (without waiting: a Unix socket connects at once or
 * fails) and queue cmd, to be over by deadline_ms (lb_now_ms's clock, or the
 * caller's own as long as it passes the same one to lb_bird_ctl_step).
 *
 * @return 0 (x->fd is open), or -errno with "path: step: why" in x->msg and
 *   x idle: -EINVAL (path or command too long), -ENOENT, -ECONNREFUSED,
 *   -EAGAIN (BIRD's backlog is full), -EMFILE...
 */
int lb_bird_ctl_start(struct lb_bird_ctl *x, const char *socket_path, const char *cmd,
                      uint64_t deadline_ms);

/**
 * Go as far as the socket allows without blocking.
 *
 * @return -EINPROGRESS while the exchange waits (for lb_bird_ctl_events);
 *   otherwise it is over, x idle again, and the value is the command's final
 *   reply code (0..9999, its text or the first 8xxx/9xxx line's in x->msg),
 *   or -errno with "path: why" in x->msg: -ETIMEDOUT (now_ms reached the
 *   deadline), -ECONNRESET (BIRD closed the connection), -EPROTO (not
 *   BIRD's protocol, or a welcome other than 0001), or a socket error.
 */
int lb_bird_ctl_step(struct lb_bird_ctl *x, uint64_t now_ms);

/** What the exchange waits for: LB_LOOP_READABLE or LB_LOOP_WRITABLE (0 when idle). */
uint32_t lb_bird_ctl_events(const struct lb_bird_ctl *x);

/** End the exchange now (the socket is closed); idle: no-op. */
void lb_bird_ctl_abort(struct lb_bird_ctl *x);

#endif /* LB_BIRD_CTL_H */
