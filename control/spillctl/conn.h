/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket as spillctl uses it: connect with a deadline, send one
 * request (or batch) as a line, read one reply line, check that the reply is
 * the JSON-RPC 2.0 response to the request sent. The functions returning
 * int return an exit status (SPILLCTL_EXIT_*), the message already printed.
 */
#ifndef SPILLCTL_CONN_H
#define SPILLCTL_CONN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "shape.h"
#include "spillctl.h"

/* Set by SIGINT/SIGTERM during "top": stop after the current refresh. */
extern volatile sig_atomic_t spillctl_stop;

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t spillctl_now_ns(void);

/* "spillctl: SOCKET: MESSAGE" on stderr (nothing once stopping); returns SPILLCTL_EXIT_IO. */
int __attribute__((format(printf, 2, 3)))
spillctl_io_error(const struct spillctl_cli *cli, const char *fmt, ...);

/* Closes the connection, if open; the next exchange opens a new one. */
void spillctl_conn_close(struct spillctl_conn *c);

/*
 * Sends @req (one request or a batch) and parses the reply line into *reply.
 * A connection kept open from an earlier exchange (top) that turns out to be
 * closed by the server (idle timeout) is reopened once. Returns an exit status.
 */
int spillctl_exchange(struct spillctl_cli *cli, const json_t *req, json_t **reply);

/* A new request object with the next id; @params (stolen) may be NULL. */
json_t *spillctl_request(struct spillctl_cli *cli, const char *method, json_t *params);

/* "spillctl: MESSAGE (code N)" on stderr; with --json, the error object on stdout too. */
void spillctl_report_error(const struct spillctl_cli *cli, const json_t *err);

/*
 * Checks one reply object's envelope: "jsonrpc": "2.0", exactly one of
 * result and error, an error with an integer code and a string message, and
 * the id of @want_id (or null, with an error: a request the server could not
 * read). Sets *result and *error to its members (borrowed); on false, @why
 * says what is wrong.
 */
bool spillctl_reply_valid(const json_t *r, const json_t *want_id, json_t **result, json_t **error,
                          char *why, size_t len);

/*
 * Calls @method with @params (reference stolen; NULL for none). On success
 * *result holds a new reference, a result of the shape @shape. A server
 * error gives SPILLCTL_EXIT_SERVER: with @error NULL it is reported, else
 * *error holds it (a new reference) and nothing is printed. A reply that is
 * not a JSON-RPC 2.0 response to this request, or whose result is not of
 * @shape, is reported as "malformed reply to METHOD: ..." and gives
 * SPILLCTL_EXIT_IO. Returns an exit status.
 */
int spillctl_call_err(struct spillctl_cli *cli, const char *method, json_t *params,
                      const struct spillctl_shape *shape, json_t **result, json_t **error);

/* spillctl_call_err() with server errors reported. Returns an exit status. */
int spillctl_call(struct spillctl_cli *cli, const char *method, json_t *params,
                  const struct spillctl_shape *shape, json_t **result);

/*
 * spillctl_call() that, with --json, prints the result; returns the status and
 * the result for human rendering in *human (NULL in JSON mode or on error).
 */
int spillctl_call_print(struct spillctl_cli *cli, const char *method, json_t *params,
                        const struct spillctl_shape *shape, json_t **human);

/* spillctl_call() that prints the result as JSON, --json or not. Returns an exit status. */
int spillctl_call_json(struct spillctl_cli *cli, const char *method, json_t *params,
                       const struct spillctl_shape *shape);

#endif /* SPILLCTL_CONN_H */
