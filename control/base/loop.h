/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small event loop: file descriptors registered with the events they wait
 * for, a callback and its argument; one epoll set underneath. The control
 * thread runs its signalfd, timerfd and control socket on it. Single-threaded:
 * every call is made from the thread that runs the loop.
 */
#ifndef LB_LOOP_H
#define LB_LOOP_H

#include <stdint.h>

/* Events a registration waits for, and that a callback is given. */
#define LB_LOOP_READABLE 1u
#define LB_LOOP_WRITABLE 2u

struct lb_loop;

/**
 * Called when fd is ready: events holds LB_LOOP_READABLE and/or
 * LB_LOOP_WRITABLE, of those registered (an error or hang-up on fd is
 * reported as every registered event, so the callback's read or write sees
 * it). The callback may add and delete registrations, its own included, and
 * call lb_loop_stop().
 */
typedef void (*lb_loop_fn)(struct lb_loop *loop, int fd, uint32_t events, void *arg);

/**
 * An empty loop.
 *
 * @return the loop, or NULL with errno set (from epoll_create1 or ENOMEM).
 */
struct lb_loop *lb_loop_create(void);

/**
 * Call cb(loop, fd, events, arg) whenever fd is ready for one of events.
 *
 * @return 0; -EINVAL if loop or cb is NULL, fd is negative or events is 0 or
 *   has bits other than LB_LOOP_READABLE | LB_LOOP_WRITABLE; -EEXIST if fd is
 *   registered already; -ENOMEM; or -errno from epoll_ctl (-EBADF: fd is not
 *   open, -EPERM: fd cannot be polled, such as a regular file).
 */
int lb_loop_add(struct lb_loop *loop, int fd, uint32_t events, lb_loop_fn cb, void *arg);

/**
 * Forget fd's registration: its callback is not called again, not even for an
 * event already fetched by the dispatch under way. fd itself stays open (it
 * may be closed before or after this call).
 *
 * @return 0; -EINVAL if loop is NULL or fd negative; -ENOENT if fd is not
 *   registered.
 */
int lb_loop_del(struct lb_loop *loop, int fd);

/**
 * Wait up to timeout_ms (-1: without limit, 0: not at all) for ready
 * descriptors and call their callbacks, in the order epoll reports them. Once
 * a callback calls lb_loop_stop(), no further callback of this dispatch runs.
 * Clears a stop requested before the call.
 *
 * @return the number of callbacks called, or -errno if epoll_wait failed
 *   (-EINTR: a signal interrupted the wait; -EINVAL if loop is NULL).
 */
int lb_loop_run_once(struct lb_loop *loop, int timeout_ms);

/**
 * Dispatch (lb_loop_run_once without a timeout, waits interrupted by a signal
 * resumed) until a callback calls lb_loop_stop().
 *
 * @return 0 once stopped, -errno if epoll_wait failed (-EINVAL if loop is
 *   NULL).
 */
int lb_loop_run(struct lb_loop *loop);

/** End the dispatch under way, and lb_loop_run() with it, after the current callback. */
void lb_loop_stop(struct lb_loop *loop);

/** Free the loop and its registrations; the registered descriptors stay open. NULL: no-op. */
void lb_loop_destroy(struct lb_loop *loop);

#endif /* LB_LOOP_H */
