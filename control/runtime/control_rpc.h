/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread's side of the JSON-RPC methods: struct lb_rpc_ops filled
 * with adapters onto the publisher, the hot-key windows and the drain state,
 * and the control socket's request callback that hands lines to rpc.c.
 * Internal to control/.
 */
#ifndef LB_CONTROL_RPC_H
#define LB_CONTROL_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/runtime/hot_window.h"
#include "control/runtime/publish.h"
#include "control/rpc/rpc.h"

struct lb_control_rpc {
	struct lb_rpc_ops ops; /* what rpc.c calls; arg is this struct */
	/* The stats method's document (the control thread renders it). */
	json_t *(*stats)(const void *stats_arg);
	const void *stats_arg;
	struct lb_publisher *pub; /* configuration, snapshot, state file, hooks */
	struct lb_hot_window *hw; /* NULL: the hot-key methods are absent */
	const uint64_t *stop_ms;  /* non-zero once a stop signal is being drained */
	/* Group commit (the socket server holds replies for lb_control_rpc_commit). */
	bool group_commit;         /* set by the owner before the first request */
	bool in_request;           /* inside lb_control_rpc_request with group commit */
	bool deferred;             /* the current request's change waits for the commit */
	void *token;               /* the last request's, for lb_control_rpc_token */
	struct lb_config *durable; /* what the state file holds while changes wait; or NULL */
	int commit_rc;             /* the last commit: 0 or its -errno */
	char commit_err[256];      /* and its message */
};

/**
 * Fill cr->ops: the configuration methods always, the drain methods when a
 * hook has a drain step, the hot-key methods when hw is not NULL.
 */
void lb_control_rpc_init(struct lb_control_rpc *cr, json_t *(*stats)(const void *stats_arg),
                         const void *stats_arg, struct lb_publisher *pub, struct lb_hot_window *hw,
                         const uint64_t *stop_ms);

/**
 * The control socket's request callback (lb_server_request_fn): arg is the
 * struct lb_control_rpc. Returns lb_rpc_handle()'s reply. With group_commit
 * and a state file, a change is applied and published at once but its state
 * file write waits for lb_control_rpc_commit; its reply then has a token
 * (lb_control_rpc_token) and must go through lb_control_rpc_finish.
 */
char *lb_control_rpc_request(void *arg, const char *line, size_t len);

/**
 * The server's reply_token: the token of the reply lb_control_rpc_request just
 * returned (NULL: the reply is final).
 */
void *lb_control_rpc_token(void *arg);

/**
 * The server's commit: if changes wait, write the running configuration to
 * the state file once. If that fails, the configuration the file holds is
 * applied again (the waiting changes are undone) and the failure kept for
 * lb_control_rpc_finish.
 */
void lb_control_rpc_commit(void *arg);

/**
 * The server's finish: reply if its change is durable (or token is NULL);
 * otherwise the reply its request gets for a failed write (-32603 with the
 * write's message, every call of a batch), reply freed. Takes token.
 */
char *lb_control_rpc_finish(void *arg, char *reply, void *token);

#endif /* LB_CONTROL_RPC_H */
