/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BIRD 2 announcer (bird.h). The coupling is one generated include file with
 * two static protocols (LB_BIRD_PROTO_V4/V6, blackhole host routes) and one
 * "configure" command on BIRD's control socket: BIRD re-reads its
 * configuration, sees only the static protocols change, and updates them in
 * place (BGP sessions stay up; the peers get the withdrawals and
 * announcements as UPDATEs).
 *
 * The hook writes the file (atomically) and returns; the exchange with BIRD
 * (bird_ctl.c) runs on the control thread's event loop and tick, never
 * blocking them. Each file generation BIRD has not confirmed yet gets one
 * exchange, bounded by the timeout; a failed one is counted and retried with
 * a backoff; changes made while an exchange is under way are sent in the
 * next one as soon as it ends.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "control/hooks/bird.h"
#include "control/hooks/bird_ctl.h"
#include "control/base/clock.h"
#include "control/base/loop.h"
#include "control/base/persist.h"

#define ERR_LEN 256

enum last_result { RES_NONE, RES_OK, RES_REFUSED, RES_TIMEOUT, RES_ERROR };

struct lb_bird {
	char *include_path;
	char *socket_path;
	uint32_t timeout_ms;
	uint64_t (*now_ms)(void);
	bool drained;
	/* What the include file holds (file_valid: known, i.e. written by us),
	 * its generation (one per write) and the one BIRD confirmed loading. */
	struct lb_bird_prefix *file;
	uint32_t n_file;
	bool file_valid;
	uint64_t file_gen, bird_gen;
	struct lb_bird_prefix *scratch;
	/* The exchange under way (ctl.fd >= 0), for file generation sent_gen;
	 * registered with loop (if any) for reg_events. */
	struct lb_bird_ctl ctl;
	uint64_t sent_gen;
	struct lb_loop *loop;
	int reg_fd;
	uint32_t reg_events; /* 0: not registered */
	/* Retry of a failed write or exchange (0: nothing scheduled). */
	uint64_t retry_at_ms;
	uint32_t retry_ms;
	/* Drain request -> BIRD confirmed the withdrawal, for stats. */
	uint64_t drain_req_ms;
	bool drain_pending;
	int64_t last_withdraw_ms;
	uint64_t writes, attempts, reloads, failures, timeouts;
	enum last_result last_result;
	char last_error[ERR_LEN];
};

static uint64_t
now(const struct lb_bird *b)
{
	return b->now_ms != NULL ? b->now_ms() : lb_now_ms();
}

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

/* Replace the include file with the text of p (control/base/persist.c: tmp, fsync, rename, fsync of
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

int
lb_bird_command(const char *socket_path, const char *cmd, uint32_t timeout_ms, char *msg,
                size_t msglen)
{
	struct lb_bird_ctl x;
	int rc;

	lb_bird_ctl_init(&x);
	rc = lb_bird_ctl_start(&x, socket_path, cmd, lb_now_ms() + timeout_ms);
	while (rc == 0 || rc == -EINPROGRESS) {
		uint64_t t = lb_now_ms();
		struct pollfd p = {.fd = x.fd,
		                   .events = lb_bird_ctl_events(&x) == LB_LOOP_WRITABLE ? POLLOUT
		                                                                        : POLLIN};

		if (t < x.deadline_ms && poll(&p, 1, (int)(x.deadline_ms - t)) < 0 &&
		    errno != EINTR) {
			rc = -errno;
			snprintf(x.msg, sizeof(x.msg), "%s: poll: %s", socket_path,
			         strerror(errno));
			lb_bird_ctl_abort(&x);
			break;
		}
		rc = lb_bird_ctl_step(&x, lb_now_ms());
	}
	snprintf(msg, msglen, "%s", x.msg);
	return rc;
}

/* Whether a reply code to "configure" means BIRD takes the file: 0003
 * Reconfigured, 0004 in progress, 0005 queued after the one in progress,
 * 0017 queued, replacing an earlier queued one. */
static bool
reload_accepted(int code)
{
	return code == 3 || code == 4 || code == 5 || code == 17;
}

int
lb_bird_withdraw(const char *include_path, const char *socket_path, uint32_t timeout_ms, char *err,
                 size_t errlen)
{
	char text[512], msg[ERR_LEN];
	size_t len = lb_bird_render(NULL, 0, text, sizeof(text));
	int rc;

	if (len >= sizeof(text)) {
		snprintf(err, errlen, "%s: the empty include file does not fit", include_path);
		return -ENOMEM;
	}
	rc = lb_persist_write_text(include_path, text, len, 0644, err, errlen);
	if (rc != 0)
		return rc;
	rc = lb_bird_command(socket_path, "configure", timeout_ms ? timeout_ms : LB_BIRD_TIMEOUT_MS,
	                     msg, sizeof(msg));
	if (rc < 0) {
		snprintf(err, errlen, "%s", msg);
		return rc;
	}
	if (!reload_accepted(rc)) {
		snprintf(err, errlen, "%s: configure: BIRD answered %04d %s", socket_path, rc, msg);
		return -EPROTO;
	}
	return 0;
}

/* ---- the exchange on the loop ---- */

static void on_ready(struct lb_loop *loop, int fd, uint32_t events, void *arg);

/* Keep the loop's registration equal to what the exchange waits for. Called
 * as soon as an exchange ends, before anything can reuse its descriptor. */
static void
update_registration(struct lb_bird *b)
{
	uint32_t want = lb_bird_ctl_events(&b->ctl);

	if (b->loop == NULL)
		return;
	if (b->reg_events != 0 && (want != b->reg_events || b->ctl.fd != b->reg_fd)) {
		lb_loop_del(b->loop, b->reg_fd);
		b->reg_events = 0;
	}
	/* Not registered (ENOMEM): the tick still drives the exchange. */
	if (want != 0 && b->reg_events == 0 &&
	    lb_loop_add(b->loop, b->ctl.fd, want, on_ready, b) == 0) {
		b->reg_fd = b->ctl.fd;
		b->reg_events = want;
	}
}

static bool
in_step(const struct lb_bird *b)
{
	return b->file_valid && b->bird_gen == b->file_gen;
}

/* A failed write or exchange: counted, remembered, retried after the backoff. */
static void
note_failure(struct lb_bird *b, enum last_result res, const char *err)
{
	b->failures++;
	b->last_result = res;
	snprintf(b->last_error, sizeof(b->last_error), "%s", err);
	b->retry_ms = b->retry_ms == 0
	                      ? LB_BIRD_RETRY_MIN_MS
	                      : (b->retry_ms * 2 > LB_BIRD_RETRY_MAX_MS ? LB_BIRD_RETRY_MAX_MS
	                                                                : b->retry_ms * 2);
	b->retry_at_ms = now(b) + b->retry_ms;
}

/* BIRD has loaded the empty set asked for by a drain. */
static void
confirm_drain(struct lb_bird *b)
{
	if (b->drain_pending && in_step(b) && b->n_file == 0) {
		b->last_withdraw_ms = (int64_t)(now(b) - b->drain_req_ms);
		b->drain_pending = false;
	}
}

static void start_exchange(struct lb_bird *b);

/* The exchange ended with code (a reply code or -errno). */
static void
finish(struct lb_bird *b, int code)
{
	char err[ERR_LEN];
	enum last_result res = RES_ERROR;

	update_registration(b);
	if (code >= 0 && reload_accepted(code)) {
		if (b->retry_ms != 0)
			fprintf(stderr, "spillwayd: bird: in step again (%u prefix(es))\n",
			        b->n_file);
		b->reloads++;
		b->bird_gen = b->sent_gen;
		b->retry_at_ms = 0;
		b->retry_ms = 0;
		b->last_result = RES_OK;
		confirm_drain(b);
		if (b->file_valid && !in_step(b))
			start_exchange(b); /* the file changed meanwhile */
		return;
	}
	if (code < 0) {
		snprintf(err, sizeof(err), "%s", b->ctl.msg);
		if (code == -ETIMEDOUT) {
			res = RES_TIMEOUT;
			b->timeouts++;
		}
	} else {
		snprintf(err, sizeof(err), "configure refused (%04d): %s", code, b->ctl.msg);
		res = RES_REFUSED;
	}
	note_failure(b, res, err);
	fprintf(stderr, "spillwayd: bird: %s (retry in %u ms)\n", err, b->retry_ms);
}

/* Go on with the exchange under way as far as the socket allows. */
static void
advance(struct lb_bird *b)
{
	int rc;

	if (b->ctl.fd < 0)
		return;
	rc = lb_bird_ctl_step(&b->ctl, now(b));
	if (rc == -EINPROGRESS)
		update_registration(b);
	else
		finish(b, rc);
}

static void
on_ready(struct lb_loop *loop, int fd, uint32_t events, void *arg)
{
	(void)loop;
	(void)fd;
	(void)events;
	advance(arg);
}

/* Ask BIRD to load the file as it is now. */
static void
start_exchange(struct lb_bird *b)
{
	int rc;

	b->attempts++;
	b->sent_gen = b->file_gen;
	rc = lb_bird_ctl_start(&b->ctl, b->socket_path, "configure", now(b) + b->timeout_ms);
	if (rc != 0)
		finish(b, rc);
	else
		update_registration(b);
}

/* BIRD lags the file: start an exchange unless one is under way (which sends
 * the newer file when it ends) or, the file unchanged, a retry is scheduled. */
static void
kick(struct lb_bird *b, bool changed)
{
	if (in_step(b) || b->ctl.fd >= 0 || (!changed && b->retry_at_ms != 0))
		return;
	start_exchange(b);
}

/* ---- keeping file and BIRD in step ---- */

static bool
same_set(const struct lb_bird_prefix *a, uint32_t na, const struct lb_bird_prefix *c, uint32_t nc)
{
	return na == nc && (na == 0 || memcmp(a, c, na * sizeof(*a)) == 0);
}

/* Make the file hold want (n), then have BIRD load it, without waiting for BIRD. */
static int
sync_to(struct lb_bird *b, const struct lb_bird_prefix *want, uint32_t n, char *err, size_t errlen)
{
	bool changed = false;
	int rc;

	if (!b->file_valid || !same_set(b->file, b->n_file, want, n)) {
		rc = write_file(b, want, n, err, errlen);
		if (rc != 0) {
			note_failure(b, RES_ERROR, err);
			return rc;
		}
		b->writes++;
		if (want != b->file)
			memmove(b->file, want, n * sizeof(*want));
		b->n_file = n;
		b->file_valid = true;
		b->file_gen++;
		changed = true;
	}
	kick(b, changed);
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

/* The exchange's deadline (and its progress where no loop drives it), and
 * the retry of a failed write or exchange once its backoff is over. */
static void
hook_tick(void *arg, const struct lb_snapshot *live)
{
	struct lb_bird *b = arg;
	char err[ERR_LEN];
	uint32_t n;

	if (b->ctl.fd >= 0) {
		advance(b);
		return;
	}
	if (b->retry_at_ms == 0 || now(b) < b->retry_at_ms)
		return;
	b->retry_at_ms = 0;
	n = wanted(b, live);
	if (sync_to(b, b->scratch, n, err, sizeof(err)) != 0)
		fprintf(stderr, "spillwayd: bird: retry failed: %s (retry in %u ms)\n", err,
		        b->retry_ms);
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

static int
hook_attach(void *arg, struct lb_loop *loop)
{
	return lb_bird_attach(arg, loop);
}

static bool
hook_busy(void *arg)
{
	return lb_bird_busy(arg);
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
	        .attach = hook_attach,
	        .busy = hook_busy,
	};
}

int
lb_bird_attach(struct lb_bird *b, struct lb_loop *loop)
{
	if (b->loop != NULL && b->reg_events != 0)
		lb_loop_del(b->loop, b->reg_fd);
	b->reg_events = 0;
	b->loop = loop;
	update_registration(b);
	return 0;
}

bool
lb_bird_busy(const struct lb_bird *b)
{
	return b->ctl.fd >= 0;
}

int
lb_bird_drain(struct lb_bird *b, bool on, const struct lb_snapshot *live, char *err, size_t errlen)
{
	uint32_t n;
	int rc;

	if (on && !b->drained) {
		b->drain_req_ms = now(b);
		b->drain_pending = true;
	}
	b->drained = on;
	if (!on)
		b->drain_pending = false;
	n = wanted(b, live);
	rc = sync_to(b, b->scratch, n, err, errlen);
	confirm_drain(b); /* BIRD had the empty set already */
	return rc;
}

bool
lb_bird_drained(const struct lb_bird *b)
{
	return b->drained;
}

static const char *
result_name(enum last_result r)
{
	static const char *const names[] = {[RES_OK] = "ok",
	                                    [RES_REFUSED] = "refused",
	                                    [RES_TIMEOUT] = "timeout",
	                                    [RES_ERROR] = "error"};

	return r == RES_NONE ? NULL : names[r];
}

json_t *
lb_bird_stats(const struct lb_bird *b)
{
	json_t *o = json_object(), *list = json_array();
	bool step = in_step(b);
	uint64_t t = now(b);
	const char *res = result_name(b->last_result);
	char pfx[64];

	for (uint32_t i = 0; step && i < b->n_file; i++)
		json_array_append_new(list, json_string(prefix_str(&b->file[i], pfx, sizeof(pfx))));
	json_object_set_new(o, "drained", json_boolean(b->drained));
	/* What BIRD has loaded from us; while pending, unknown (it may lag the file). */
	json_object_set_new(o, "announced", json_integer(step ? (json_int_t)b->n_file : 0));
	json_object_set_new(o, "prefixes", list);
	json_object_set_new(o, "pending", json_boolean(!step && (b->file_valid || b->retry_at_ms)));
	json_object_set_new(o, "in_flight", json_boolean(b->ctl.fd >= 0));
	json_object_set_new(o, "writes", json_integer((json_int_t)b->writes));
	json_object_set_new(o, "attempts", json_integer((json_int_t)b->attempts));
	json_object_set_new(o, "reloads", json_integer((json_int_t)b->reloads));
	json_object_set_new(o, "errors", json_integer((json_int_t)b->failures));
	json_object_set_new(o, "timeouts", json_integer((json_int_t)b->timeouts));
	json_object_set_new(o, "last_result", res != NULL ? json_string(res) : json_null());
	json_object_set_new(o, "last_error",
	                    b->last_error[0] ? json_string(b->last_error) : json_null());
	json_object_set_new(o, "backoff_ms", json_integer(b->retry_ms));
	json_object_set_new(
	        o, "retry_in_ms",
	        b->retry_at_ms == 0
	                ? json_null()
	                : json_integer(b->retry_at_ms > t ? (json_int_t)(b->retry_at_ms - t) : 0));
	json_object_set_new(o, "last_withdraw_ms",
	                    b->last_withdraw_ms >= 0 ? json_integer(b->last_withdraw_ms)
	                                             : json_null());
	json_object_set_new(o, "timeout_ms", json_integer(b->timeout_ms));
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
	lb_bird_ctl_init(&b->ctl);
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
	b->now_ms = p->now_ms;
	b->last_withdraw_ms = -1;
	return b;
}

void
lb_bird_free(struct lb_bird *b)
{
	if (b == NULL)
		return;
	lb_bird_attach(b, NULL);
	lb_bird_ctl_abort(&b->ctl);
	free(b->include_path);
	free(b->socket_path);
	free(b->file);
	free(b->scratch);
	free(b);
}
