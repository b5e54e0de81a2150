/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Route announcement through BIRD 2 (docs/scale-out.md): a publication hook
 * that keeps a BIRD include file equal to the set of prefixes this instance
 * should announce, a /32 or /128 for every VIP address with at least one VIP
 * that has a usable backend (lb_vip.n_active > 0), and asks BIRD to reload
 * ("configure" on its control socket) whenever the file changes. Withdrawals
 * are written before a snapshot goes live, announcements after every worker
 * runs it; the exchange with BIRD then runs on the control thread's event loop
 * without blocking it. Draining empties the set and keeps it empty while
 * forwarding goes on.
 */
#ifndef LB_BIRD_H
#define LB_BIRD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "dataplane/snapshot.h"
#include "control/runtime/publish.h"

#define LB_BIRD_TIMEOUT_MS 2000      /* default bound on one exchange with BIRD */
#define LB_BIRD_RETRY_MIN_MS 100u    /* backoff after the first failure, doubling... */
#define LB_BIRD_RETRY_MAX_MS 5000u   /* ...up to this */
#define LB_BIRD_PROTO_V4 "spillway4" /* static protocol names in the include file */
#define LB_BIRD_PROTO_V6 "spillway6"

struct lb_bird;
struct lb_loop;

struct lb_bird_params {
	const char *include_path; /* the file BIRD's configuration includes */
	const char *socket_path;  /* BIRD's control socket (bird -s, default /run/bird/bird.ctl) */
	uint32_t timeout_ms;      /* per exchange with BIRD; 0: LB_BIRD_TIMEOUT_MS */
	uint64_t (*now_ms)(void); /* monotonic ms for deadlines and backoff; NULL: lb_now_ms */
};

/* One announced prefix: a VIP address (host route). */
struct lb_bird_prefix {
	uint8_t af; /* LB_AF_INET or LB_AF_INET6 */
	union lb_ip addr;
};

/**
 * The announcer. Nothing is written or sent until the first publication.
 *
 * @return the object, or NULL with errno set (EINVAL: a path is missing or
 *   too long; ENOMEM).
 */
struct lb_bird *lb_bird_create(const struct lb_bird_params *p);

/** Free it (the include file stays as it is). NULL is allowed. */
void lb_bird_free(struct lb_bird *b);

/**
 * The publication hook ("bird") that drives b; b must outlive the control
 * thread. Its before/after/drain steps write the include file and return: they
 * fail (-errno, "path: step: why") only if the file cannot be written. The
 * exchange with BIRD that follows is driven by the loop b is attached to and
 * by the tick (which enforces its deadline and schedules the retries); its
 * outcome is in lb_bird_stats.
 */
struct lb_publish_hook lb_bird_hook(struct lb_bird *b);

/**
 * Register b's socket with loop while an exchange is under way (loop != NULL),
 * or drop the registration (NULL; call before the loop is destroyed). Without
 * a loop only the tick drives the exchange.
 *
 * @return 0.
 */
int lb_bird_attach(struct lb_bird *b, struct lb_loop *loop);

/** Whether an exchange with BIRD is under way (it ends by its deadline). */
bool lb_bird_busy(const struct lb_bird *b);

/**
 * Drain (on = true): withdraw everything now and keep it withdrawn across
 * publications; undrain (on = false): announce what live serves.
 *
 * @return 0 once the include file holds the set and BIRD is asked (the reply
 *   follows asynchronously: stats "pending", "last_withdraw_ms"), or -errno
 *   with "what: why" in err if the file cannot be written (the state is
 *   changed anyway and the tick retries).
 */
int lb_bird_drain(struct lb_bird *b, bool on, const struct lb_snapshot *live, char *err,
                  size_t errlen);

/** Whether b is drained. */
bool lb_bird_drained(const struct lb_bird *b);

/**
 * {"drained", "announced", "prefixes": [...], "pending", "in_flight",
 *  "writes", "attempts", "reloads", "errors", "timeouts", "last_result",
 *  "last_error", "backoff_ms", "retry_in_ms", "last_withdraw_ms",
 *  "timeout_ms", "include", "socket"} (caller owns; docs/scale-out.md).
 */
json_t *lb_bird_stats(const struct lb_bird *b);

/**
 * The prefixes a snapshot asks to announce: one per VIP address that has a VIP
 * with n_active > 0 or a draining backend (its established flows still need
 * the route), sorted (IPv4 first, then by address), without duplicates.
 *
 * @return how many were written to out (at most max).
 */
uint32_t lb_bird_prefixes(const struct lb_snapshot *s, struct lb_bird_prefix *out, uint32_t max);

/**
 * The include file's text for a sorted prefix set.
 *
 * @return the length (as snprintf: may exceed len, then the text is cut).
 */
size_t lb_bird_render(const struct lb_bird_prefix *p, uint32_t n, char *buf, size_t len);

/**
 * Withdraw everything without a running announcer: write the include file
 * with no prefix (the text a drained announcer writes), then ask BIRD to
 * load it ("configure") and wait for its answer, at most timeout_ms (0:
 * LB_BIRD_TIMEOUT_MS). Blocking; for a stop after the daemon is gone
 * (spillwayd --bird-withdraw, the unit's ExecStopPost).
 *
 * @return 0 once BIRD has accepted the reload (reply 0003, 0004, 0005 or 0017),
 *   or -errno with "what: why" in err: the file cannot be written (BIRD is
 *   not asked), BIRD cannot be reached or does not answer in time, or
 *   -EPROTO for a refusal (its reply code and text in err).
 */
int lb_bird_withdraw(const char *include_path, const char *socket_path, uint32_t timeout_ms,
                     char *err, size_t errlen);

/**
 * Send one command on BIRD's control socket and wait, at most timeout_ms in
 * all, for the welcome and the command's final reply line. Blocking (poll):
 * for tools and tests; the announcer itself never waits.
 *
 * @return the final reply code (0..9999), or -errno with "what: why" in err
 *   (-ETIMEDOUT, -ECONNREFUSED, -ENOENT, -EPROTO for a reply that is not
 *   BIRD's).
 */
int lb_bird_command(const char *socket_path, const char *cmd, uint32_t timeout_ms, char *msg,
                    size_t msglen);

#endif /* LB_BIRD_H */
