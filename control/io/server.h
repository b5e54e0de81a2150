/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket's transport: a non-blocking Unix stream server that
 * frames '\n'-terminated request lines, hands each to a callback and queues the
 * reply, and defends itself against clients that send too much, read too
 * little or say nothing (docs/control-protocol.md, "Limits"). It has its own
 * epoll set, so the control loop polls one descriptor for all clients. No
 * DPDK, no Jansson: the JSON-RPC layer is reached only through the callback.
 */
#ifndef LB_SERVER_H
#define LB_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control/io/server_file.h"

#define LB_SERVER_DEFAULT_MODE 0660
#define LB_SERVER_DEFAULT_MAX_REQUEST (1u << 20) /* bytes per request line */
#define LB_SERVER_DEFAULT_MAX_OUTPUT (4u << 20)  /* unsent reply bytes per client */
#define LB_SERVER_DEFAULT_IDLE_MS 60000u         /* without a complete request */
#define LB_SERVER_DEFAULT_MAX_CLIENTS 1024u
#define LB_SERVER_DEFAULT_PER_TURN 8u /* requests answered per client per process call */

/* JSON-RPC "invalid request", the code of the too-large request. */
#define LB_SERVER_ERR_TOO_LARGE (-32600)
/* The code of the error sent in place of a reply over max_output (rpc.h's LB_RPC_ERR_TOO_LARGE). */
#define LB_SERVER_ERR_REPLY_TOO_LARGE (-32004)

struct lb_server;

/**
 * Answer one request line (without its '\n'; not NUL-terminated). Returns a
 * malloc'd NUL-terminated reply without the '\n' (the server adds it and frees
 * the reply), or NULL when nothing is to be sent.
 */
typedef char *(*lb_server_request_fn)(void *arg, const char *line, size_t len);

/** Build an error reply (malloc'd, no '\n'); the signature of lb_rpc_error_reply(). */
typedef char *(*lb_server_error_fn)(int code, const char *message);

struct lb_server_params {
	const char *path;         /* socket file; at most 107 bytes */
	mode_t mode;              /* file mode; 0: LB_SERVER_DEFAULT_MODE */
	const char *group;        /* group name or numeric gid; NULL: leave as created */
	size_t max_request;       /* 0: LB_SERVER_DEFAULT_MAX_REQUEST */
	size_t max_output;        /* unsent bytes per client, a reply never more; 0: the default */
	uint32_t idle_ms;         /* 0: LB_SERVER_DEFAULT_IDLE_MS */
	unsigned int max_clients; /* 0: LB_SERVER_DEFAULT_MAX_CLIENTS */
	unsigned int per_turn;    /* requests per client per process call; 0: the default */
	lb_server_request_fn on_request;
	lb_server_error_fn error_reply; /* NULL: a built-in JSON-RPC error object */
	void *arg;                      /* passed to on_request and the group commit callbacks */
	/*
	 * Group commit (optional; commit set needs the other two). Every reply of
	 * a process call is held; once every request of the call is answered,
	 * commit runs once, then each held reply is finished and sent, in order.
	 * reply_token, called right after each on_request: an opaque token for
	 * its reply (NULL: the reply is final). finish(reply, token): the reply
	 * to send instead of reply (takes both; NULL: nothing), also called for a
	 * client that goes away before its replies were sent, after or before commit.
	 */
	void *(*reply_token)(void *arg);
	void (*commit)(void *arg);
	char *(*finish)(void *arg, char *reply, void *token);
};

/**
 * Create the socket file (replacing a stale socket; mode and group set before
 * anyone can connect) and start listening.
 *
 * @return the server, or NULL with errno set and "PATH: reason" in err
 *   (EADDRINUSE: "another spillwayd is listening"; EEXIST: not a socket, left
 *   alone; EINVAL: bad params or unknown group).
 */
struct lb_server *lb_server_create(const struct lb_server_params *p, char *err, size_t errlen);

/** The server's epoll descriptor: readable whenever lb_server_process() has work. */
int lb_server_fd(const struct lb_server *s);

/**
 * Accept, read, answer and write whatever is ready, without blocking. Each
 * readable client gets one read of at most 64 KiB per call and at most
 * per_turn of its requests answered; the rest of its complete lines stay
 * queued, in order, and get the next share on the next call (the server's
 * descriptor stays readable until every one is answered), so one busy client
 * cannot starve the others. With group commit, the replies are sent after
 * the call's one commit (struct lb_server_params).
 *
 * @return 0, or -errno if epoll itself failed.
 */
int lb_server_process(struct lb_server *s);

/** Time-based work: close idle clients, resume accepting after EMFILE. */
void lb_server_tick(struct lb_server *s);

/** Number of connected clients. */
unsigned int lb_server_clients(const struct lb_server *s);

/** Close every client and the listener, and remove the socket file if it is still ours. */
void lb_server_destroy(struct lb_server *s);

#endif /* LB_SERVER_H */
