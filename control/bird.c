/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BIRD 2 announcer (bird.h). The coupling is one generated include file with
 * two static protocols (LB_BIRD_PROTO_V4/V6, blackhole host routes) and one
 * "configure" command on BIRD's control socket: BIRD re-reads its
 * configuration, sees only the static protocols change, and updates them in
 * place (BGP sessions stay up; the peers get the withdrawals and
 * announcements as UPDATEs).
 *
 * Every exchange with BIRD is bounded by a deadline (non-blocking socket,
 * poll), so the control thread never waits longer than the timeout. A failed
 * write or reload is counted, reported by the hook, and retried from the tick
 * with a backoff until the file and BIRD agree with the wanted set again.
 *
 * BIRD's control protocol (doc/reply_codes in BIRD's sources): each reply line
 * is a 4-digit code followed by '-' (more lines follow) or ' ' (last line), or
 * starts with ' ' (continuation of the previous code) or '+' (spontaneous
 * output). 0001 is the welcome; "configure" answers 0002- (reading the
 * file), then 0003 Reconfigured, 0004 Reconfiguration in progress, 0005
 * queued, 0006 ignored (shutting down), or an 8xxx/9xxx error such as
 * "8002 FILE:LINE:COL message" for a configuration BIRD rejects.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bird.h"
#include "clock.h"
#include "persist.h"

#define RETRY_MIN_MS 100u
#define RETRY_MAX_MS 5000u
#define LINE_MAX_LEN 1024 /* longer reply lines are cut (only their code matters) */
#define ERR_LEN 256

struct lb_bird {
	char *include_path;
	char *socket_path;
	uint32_t timeout_ms;
	bool drained;
	/* What the include file holds (file_valid: known, i.e. written by us). */
	struct lb_bird_prefix *file;
	uint32_t n_file;
	bool file_valid;
	bool bird_ok; /* BIRD has loaded the file as it is now */
	struct lb_bird_prefix *scratch;
	/* Retry of a failed write or reload (0: nothing pending). */
	uint64_t retry_at_ms;
	uint32_t retry_ms;
	/* Drain request -> BIRD confirmed the withdrawal, for stats. */
	uint64_t drain_req_ms;
	bool drain_pending;
	int64_t last_withdraw_ms;
	uint64_t writes, reloads, failures;
	char last_error[ERR_LEN];
};

/* ---- the prefix set ---- */

static int
cmp_prefix(const void *a, const void *b)
{
	const struct lb_bird_prefix *x = a, *y = b;

	if (x->af != y->af)
		return x->af == LB_AF_INET ? -1 : 1;
	return memcmp(&x->addr, &y->addr, sizeof(x->addr));
}

uint32_t
lb_bird_prefixes(const struct lb_snapshot *s, struct lb_bird_prefix *out, uint32_t max)
{
	uint32_t n = 0, k = 0;
	/* VIPs with a draining backend: it still serves its established flows,
	 * which a withdrawal would cut off (the router would have no route). */
	uint8_t draining[LB_MAX_VIPS] = {0};

	for (uint32_t b = 0; s != NULL && b < s->n_backends; b++)
		if (s->backends[b].gen != 0 && s->backends[b].state == LB_BACKEND_DRAINING &&
		    s->backends[b].vip_id < LB_MAX_VIPS)
			draining[s->backends[b].vip_id] = 1;
	for (uint32_t i = 0; s != NULL && i < s->n_vips && n < max; i++) {
		const struct lb_vip *v = &s->vips[i];

		/* n_active counts the backends in the table: active, weight > 0. */
		if (v->n_active == 0 && !(v->id < LB_MAX_VIPS && draining[v->id]))
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].af = v->af;
		out[n].addr = v->addr;
		n++;
	}
	qsort(out, n, sizeof(*out), cmp_prefix);
	for (uint32_t i = 0; i < n; i++)
		if (k == 0 || cmp_prefix(&out[k - 1], &out[i]) != 0)
			out[k++] = out[i];
	return k;
}

static const char *
prefix_str(const struct lb_bird_prefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	lb_ip_to_str(p->af, &p->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, p->af == LB_AF_INET ? 32 : 128);
	return buf;
}

static size_t
render_proto(const char *name, const char *channel, uint8_t af, const struct lb_bird_prefix *p,
             uint32_t n, char *buf, size_t len)
{
	size_t off = 0;
	char pfx[64];

#define EMIT(...)                                                                                  \
	do {                                                                                       \
		int w_ = snprintf(buf + (off < len ? off : len), off < len ? len - off : 0,        \
		                  __VA_ARGS__);                                                    \
		off += w_ > 0 ? (size_t)w_ : 0;                                                    \
	} while (0)
	EMIT("protocol static %s {\n\t%s;\n", name, channel);
	for (uint32_t i = 0; i < n; i++)
		if (p[i].af == af)
			EMIT("\troute %s blackhole;\n", prefix_str(&p[i], pfx, sizeof(pfx)));
	EMIT("}\n");
#undef EMIT
	return off;
}

size_t
lb_bird_render(const struct lb_bird_prefix *p, uint32_t n, char *buf, size_t len)
{
	char dummy;
	size_t off;
	int w;

	if (len == 0) { /* measuring only: still give snprintf somewhere to point */
		buf = &dummy;
		len = 1;
	}
	w = snprintf(buf, len,
	             "# Generated by spillwayd (--bird-include): the VIP addresses this instance\n"
	             "# announces. Rewritten on every change; do not edit. %u prefix(es).\n",
	             n);
	off = w > 0 ? (size_t)w : 0;
	off += render_proto(LB_BIRD_PROTO_V4, "ipv4", LB_AF_INET, p, n,
	                    buf + (off < len ? off : len), off < len ? len - off : 0);
	off += render_proto(LB_BIRD_PROTO_V6, "ipv6", LB_AF_INET6, p, n,
	                    buf + (off < len ? off : len), off < len ? len - off : 0);
	return off;
}

/* ---- the include file ---- */

/* Replace the include file with the text of p (control/persist.c: tmp, fsync, rename, fsync of
 * the directory), mode 0644 whatever the umask: BIRD may run as another user. */
static int
write_file(struct lb_bird *b, const struct lb_bird_prefix *p, uint32_t n, char *err, size_t errlen)
{
	size_t len = lb_bird_render(p, n, NULL, 0) + 1;
	char *text = malloc(len);
	int rc;

	if (text == NULL) {
		snprintf(err, errlen, "%s: out of memory", b->include_path);
		return -ENOMEM;
	}
	lb_bird_render(p, n, text, len);
	rc = lb_persist_write_text(b->include_path, text, len - 1, 0644, err, errlen);
	free(text);
	return rc;
}

/* ---- BIRD's control socket ---- */

struct reader {
	int fd;
	uint64_t deadline;
	char buf[LINE_MAX_LEN + 1];
	size_t len;
	bool overflow; /* the current line was cut: skip to its end */
};

static int
wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		uint64_t now = lb_now_ms();
		struct pollfd pfd = {.fd = fd, .events = events};
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(deadline - now));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n > 0)
			return 0;
	}
}

/* The next line (without '\n') in r->buf, NUL-terminated; -errno on timeout/EOF. */
static int
read_line(struct reader *r, char *line, size_t linelen)
{
	for (;;) {
		char *nl = memchr(r->buf, '\n', r->len);

		if (nl != NULL) {
			size_t n = (size_t)(nl - r->buf);
			bool skip = r->overflow;

			snprintf(line, linelen, "%.*s", (int)n, r->buf);
			memmove(r->buf, nl + 1, r->len - n - 1);
			r->len -= n + 1;
			r->overflow = false;
			if (!skip)
				return 0;
			continue;
		}
		if (r->len == LINE_MAX_LEN) {
			/* Keep the start (the code), drop the rest of the line. */
			if (!r->overflow) {
				snprintf(line, linelen, "%.*s", (int)r->len, r->buf);
				r->overflow = true;
				r->len = 0;
				return 0;
			}
			r->len = 0;
		}
		int rc = wait_fd(r->fd, POLLIN, r->deadline);
		ssize_t got;

		if (rc != 0)
			return rc;
		got = read(r->fd, r->buf + r->len, LINE_MAX_LEN - r->len);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -ECONNRESET;
		r->len += (size_t)got;
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

/* Read one whole reply; its final code, with its text (or the first error's) in msg. */
static int
read_reply(struct reader *r, char *msg, size_t msglen, const char *path)
{
	char line[LINE_MAX_LEN + 1];
	bool have_err = false;

	for (;;) {
		bool final = false;
		int rc = read_line(r, line, sizeof(line)), code;

		if (rc == -ETIMEDOUT) {
			snprintf(msg, msglen, "%s: no reply from BIRD in time", path);
			return rc;
		}
		if (rc != 0) {
			snprintf(msg, msglen, "%s: %s", path,
			         rc == -ECONNRESET ? "BIRD closed the connection" : strerror(-rc));
			return rc;
		}
		if (line[0] == ' ' || line[0] == '+')
			continue; /* continuation, spontaneous printout */
		code = line_code(line, &final);
		if (code < 0) {
			snprintf(msg, msglen, "%s: not a BIRD reply: \"%.60s\"", path, line);
			return -EPROTO;
		}
		if (code >= 8000 && !have_err) {
			snprintf(msg, msglen, "%s", line[4] ? line + 5 : "");
			have_err = true;
		}
		if (final) {
			if (!have_err)
				snprintf(msg, msglen, "%s", line[4] ? line + 5 : "");
			return code;
		}
	}
}

int
lb_bird_command(const char *socket_path, const char *cmd, uint32_t timeout_ms, char *msg,
                size_t msglen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct reader *r = NULL;
	size_t cmdlen = strlen(cmd), sent = 0;
	char out[256];
	int fd, rc;

	if (strlen(socket_path) >= sizeof(sa.sun_path) || cmdlen + 2 > sizeof(out)) {
		snprintf(msg, msglen, "%s: path or command too long", socket_path);
		return -EINVAL;
	}
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	snprintf(out, sizeof(out), "%s\n", cmd);
	cmdlen++;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(msg, msglen, "%s: socket: %s", socket_path, strerror(errno));
		return rc;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		close(fd);
		snprintf(msg, msglen, "%s: out of memory", socket_path);
		return -ENOMEM;
	}
	r->fd = fd;
	r->deadline = lb_now_ms() + timeout_ms;
	/* A Unix socket connects at once or fails (EAGAIN: BIRD's backlog is full). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = -errno;
		snprintf(msg, msglen, "%s: connect: %s", socket_path, strerror(errno));
		goto out;
	}
	rc = read_reply(r, msg, msglen, socket_path);
	if (rc < 0)
		goto out;
	if (rc != 1) {
		snprintf(msg, msglen, "%s: unexpected welcome (code %04d)", socket_path, rc);
		rc = -EPROTO;
		goto out;
	}
	while (sent < cmdlen) {
		ssize_t n = send(fd, out + sent, cmdlen - sent, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			rc = wait_fd(fd, POLLOUT, r->deadline);
			if (rc != 0) {
				snprintf(msg, msglen, "%s: BIRD does not read its socket",
				         socket_path);
				goto out;
			}
			continue;
		}
		if (n < 0) {
			rc = -errno;
			snprintf(msg, msglen, "%s: send: %s", socket_path, strerror(errno));
			goto out;
		}
		sent += (size_t)n;
	}
	rc = read_reply(r, msg, msglen, socket_path);
out:
	free(r);
	close(fd);
	return rc;
}

/* Ask BIRD to re-read its configuration; 0 once it accepted the new one. */
static int
reload(struct lb_bird *b, char *err, size_t errlen)
{
	char msg[ERR_LEN];
	int code = lb_bird_command(b->socket_path, "configure", b->timeout_ms, msg, sizeof(msg));

	switch (code) {
	case 3:  /* Reconfigured */
	case 4:  /* Reconfiguration in progress */
	case 5:  /* already in progress: queued, BIRD applies ours next */
	case 17: /* in progress, queued config replaced by ours */
		return 0;
	default:
		break;
	}
	if (code < 0)
		snprintf(err, errlen, "bird: %s", msg);
	else
		snprintf(err, errlen, "bird: configure refused (%04d): %s", code, msg);
	return code < 0 ? code : -EIO;
}

/* ---- keeping file and BIRD in step ---- */

static bool
same_set(const struct lb_bird_prefix *a, uint32_t na, const struct lb_bird_prefix *c, uint32_t nc)
{
	return na == nc && (na == 0 || memcmp(a, c, na * sizeof(*a)) == 0);
}

static void
note_failure(struct lb_bird *b, const char *err)
{
	b->failures++;
	snprintf(b->last_error, sizeof(b->last_error), "%s", err);
	b->retry_ms = b->retry_ms == 0
	                      ? RETRY_MIN_MS
	                      : (b->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : b->retry_ms * 2);
	b->retry_at_ms = lb_now_ms() + b->retry_ms;
}

/* Make the file hold want (n) and BIRD load it; a no-op when both are already so. */
static int
sync_to(struct lb_bird *b, const struct lb_bird_prefix *want, uint32_t n, char *err, size_t errlen)
{
	int rc;

	if (!b->file_valid || !same_set(b->file, b->n_file, want, n)) {
		rc = write_file(b, want, n, err, errlen);
		if (rc != 0) {
			note_failure(b, err);
			return rc;
		}
		b->writes++;
		if (want != b->file)
			memmove(b->file, want, n * sizeof(*want));
		b->n_file = n;
		b->file_valid = true;
		b->bird_ok = false;
	}
	if (b->bird_ok)
		return 0;
	rc = reload(b, err, errlen);
	if (rc != 0) {
		note_failure(b, err);
		return rc;
	}
	b->reloads++;
	b->bird_ok = true;
	b->retry_at_ms = 0;
	b->retry_ms = 0;
	if (b->drain_pending && b->n_file == 0) {
		b->last_withdraw_ms = (int64_t)(lb_now_ms() - b->drain_req_ms);
		b->drain_pending = false;
	}
	return 0;
}

/* The set live asks for, or none when drained, in b->scratch. */
static uint32_t
wanted(struct lb_bird *b, const struct lb_snapshot *s)
{
	return b->drained ? 0 : lb_bird_prefixes(s, b->scratch, LB_MAX_VIPS);
}

/* Before next goes live: withdraw what it no longer serves, announce nothing new. */
static int
hook_before(void *arg, const struct lb_snapshot *next, const struct lb_snapshot *prev, char *err,
            size_t errlen)
{
	struct lb_bird *b = arg;
	uint32_t n, k = 0;

	(void)prev;
	if (!b->file_valid)
		return 0; /* nothing of ours announced yet: after() writes the first file */
	n = wanted(b, next);
	/* file ∩ wanted(next): both sorted. */
	for (uint32_t i = 0, j = 0; i < b->n_file && j < n;) {
		int d = cmp_prefix(&b->file[i], &b->scratch[j]);

		if (d == 0) {
			b->scratch[k++] = b->file[i];
			i++;
			j++;
		} else if (d < 0) {
			i++;
		} else {
			j++;
		}
	}
	return sync_to(b, b->scratch, k, err, errlen);
}

/* Every worker serves next: announce what it serves. */
static int
hook_after(void *arg, const struct lb_snapshot *next, const struct lb_snapshot *prev, char *err,
           size_t errlen)
{
	struct lb_bird *b = arg;
	uint32_t n = wanted(b, next);

	(void)prev;
	return sync_to(b, b->scratch, n, err, errlen);
}

/* Retry a failed write or reload, with backoff. */
static void
hook_tick(void *arg, const struct lb_snapshot *live)
{
	struct lb_bird *b = arg;
	char err[ERR_LEN];
	uint32_t n;

	if (b->retry_at_ms == 0 || lb_now_ms() < b->retry_at_ms)
		return;
	n = wanted(b, live);
	if (sync_to(b, b->scratch, n, err, sizeof(err)) != 0)
		fprintf(stderr, "spillwayd: bird: retry failed: %s\n", err);
	else
		fprintf(stderr, "spillwayd: bird: in step again (%u prefix(es))\n", b->n_file);
}

static json_t *
hook_stats(void *arg)
{
	return lb_bird_stats(arg);
}

static int
hook_drain(void *arg, bool on, const struct lb_snapshot *live, char *err, size_t errlen)
{
	return lb_bird_drain(arg, on, live, err, errlen);
}

struct lb_publish_hook
lb_bird_hook(struct lb_bird *b)
{
	return (struct lb_publish_hook){
	        .name = "bird",
	        .arg = b,
	        .before = hook_before,
	        .after = hook_after,
	        .tick = hook_tick,
	        .stats = hook_stats,
	        .drain = hook_drain,
	};
}

int
lb_bird_drain(struct lb_bird *b, bool on, const struct lb_snapshot *live, char *err, size_t errlen)
{
	uint32_t n;

	if (on && !b->drained) {
		b->drain_req_ms = lb_now_ms();
		b->drain_pending = true;
	}
	b->drained = on;
	if (!on)
		b->drain_pending = false;
	n = wanted(b, live);
	return sync_to(b, b->scratch, n, err, errlen);
}

bool
lb_bird_drained(const struct lb_bird *b)
{
	return b->drained;
}

json_t *
lb_bird_stats(const struct lb_bird *b)
{
	json_t *o = json_object(), *list = json_array();
	bool in_step = b->file_valid && b->bird_ok;
	char pfx[64];

	for (uint32_t i = 0; in_step && i < b->n_file; i++)
		json_array_append_new(list, json_string(prefix_str(&b->file[i], pfx, sizeof(pfx))));
	json_object_set_new(o, "drained", json_boolean(b->drained));
	/* What BIRD has loaded from us; while pending, unknown (it may lag the file). */
	json_object_set_new(o, "announced", json_integer(in_step ? (json_int_t)b->n_file : 0));
	json_object_set_new(o, "prefixes", list);
	json_object_set_new(o, "pending", json_boolean(b->retry_at_ms != 0));
	json_object_set_new(o, "writes", json_integer((json_int_t)b->writes));
	json_object_set_new(o, "reloads", json_integer((json_int_t)b->reloads));
	json_object_set_new(o, "errors", json_integer((json_int_t)b->failures));
	json_object_set_new(o, "last_error",
	                    b->last_error[0] ? json_string(b->last_error) : json_null());
	json_object_set_new(o, "last_withdraw_ms",
	                    b->last_withdraw_ms >= 0 ? json_integer(b->last_withdraw_ms)
	                                             : json_null());
	json_object_set_new(o, "include", json_string(b->include_path));
	json_object_set_new(o, "socket", json_string(b->socket_path));
	return o;
}

struct lb_bird *
lb_bird_create(const struct lb_bird_params *p)
{
	struct lb_bird *b;

	if (p == NULL || p->include_path == NULL || p->socket_path == NULL ||
	    p->include_path[0] == '\0' || p->socket_path[0] == '\0' ||
	    strlen(p->socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	b->include_path = strdup(p->include_path);
	b->socket_path = strdup(p->socket_path);
	b->file = calloc(LB_MAX_VIPS, sizeof(*b->file));
	b->scratch = calloc(LB_MAX_VIPS, sizeof(*b->scratch));
	if (b->include_path == NULL || b->socket_path == NULL || b->file == NULL ||
	    b->scratch == NULL) {
		lb_bird_free(b);
		errno = ENOMEM;
		return NULL;
	}
	b->timeout_ms = p->timeout_ms ? p->timeout_ms : LB_BIRD_TIMEOUT_MS;
	b->last_withdraw_ms = -1;
	return b;
}

void
lb_bird_free(struct lb_bird *b)
{
	if (b == NULL)
		return;
	free(b->include_path);
	free(b->socket_path);
	free(b->file);
	free(b->scratch);
	free(b);
}
