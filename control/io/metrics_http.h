/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metrics endpoint (--metrics ADDR:PORT): a small HTTP/1.1 server on the
 * control thread's event loop that answers GET and HEAD of /metrics with the
 * text its render callback makes, and refuses everything else. Non-blocking
 * and bounded: connections, request size, reply size, and idle time counted
 * in ticks of the control timer; one request per connection.
 */
#ifndef LB_METRICS_HTTP_H
#define LB_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "control/io/metrics.h"

#define LB_METRICS_HTTP_MAX_CONNS 16          /* open connections; the next get a 503 */
#define LB_METRICS_HTTP_MAX_REQUEST 8192      /* request line and headers; over it: 431 */
#define LB_METRICS_HTTP_MAX_REPLY (32u << 20) /* rendered text; over it: 500 */
#define LB_METRICS_HTTP_IDLE_TICKS 500        /* ticks without progress (5 s at 10 ms) */

struct lb_loop;
struct lb_metrics_http;

/*
 * Make the body of a 200 reply. codes: the endpoint's counts per status
 * (indexed like lb_metrics_codes), for the text to include. 0 with a
 * malloc'd text of *len bytes in *text, or -errno (answered 500).
 */
typedef int (*lb_metrics_render_fn)(void *arg, const uint64_t *codes, char **text, size_t *len);

/**
 * Parse "A.B.C.D:PORT" or "[IPV6]:PORT" (numeric only, port 1-65535).
 *
 * @return 0 with the address in *ss and its length in *len; -EINVAL.
 */
int lb_metrics_http_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/**
 * Listen on addr (lb_metrics_http_parse_addr's form).
 *
 * @return the server, or NULL with a reason in err (bad address, bind or
 *   listen failure such as the port being taken, out of memory).
 */
struct lb_metrics_http *lb_metrics_http_create(const char *addr, lb_metrics_render_fn render,
                                               void *arg, char *err, size_t errlen);

/**
 * Register the listener with loop (connections register themselves as they
 * come); NULL drops every registration of the server.
 *
 * @return 0 or lb_loop_add's -errno.
 */
int lb_metrics_http_attach(struct lb_metrics_http *m, struct lb_loop *loop);

/** Count one tick against every connection's idle time; close those past the limit. */
void lb_metrics_http_tick(struct lb_metrics_http *m);

/** Requests answered per status, indexed like lb_metrics_codes. */
const uint64_t *lb_metrics_http_codes(const struct lb_metrics_http *m);

/** Close the listener and every connection (detaching them first). NULL: no-op. */
void lb_metrics_http_destroy(struct lb_metrics_http *m);

#endif /* LB_METRICS_HTTP_H */
