/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread's side of the JSON-RPC methods: struct lb_rpc_ops filled
 * with adapters onto the publisher, the hot-key windows and the drain state,
 * and the control socket's request callback that hands lines to rpc.c.
 * Internal to control/.
 */
#ifndef LB_CONTROL_RPC_H
#define LB_CONTROL_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "control.h"
#include "hot_window.h"
#include "publish.h"
#include "rpc.h"

struct lb_control_rpc {
	struct lb_rpc_ops ops;      /* what rpc.c calls; arg is this struct */
	struct lb_control *control; /* the stats method's document */
	struct lb_publisher *pub;   /* configuration, snapshot, state file, hooks */
	struct lb_hot_window *hw;   /* NULL: the hot-key methods are absent */
	const uint64_t *stop_ms;    /* non-zero once a stop signal is being drained */
};

/**
 * Fill cr->ops: the configuration methods always, the drain methods when a
 * hook has a drain step, the hot-key methods when hw is not NULL.
 */
void lb_control_rpc_init(struct lb_control_rpc *cr, struct lb_control *control,
                         struct lb_publisher *pub, struct lb_hot_window *hw,
                         const uint64_t *stop_ms);

/**
 * The control socket's request callback (lb_server_request_fn): arg is the
 * struct lb_control_rpc. Returns lb_rpc_handle()'s reply.
 */
char *lb_control_rpc_request(void *arg, const char *line, size_t len);

#endif /* LB_CONTROL_RPC_H */
