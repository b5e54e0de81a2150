/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC 2.0 request handling for the control socket (docs/control-protocol.md):
 * parse a request line, validate it, run the method against the running
 * configuration, and produce the reply line. Socket I/O lives in server.c; the
 * daemon's state is reached only through struct lb_rpc_ops, so handlers are
 * tested without a daemon.
 */
#ifndef LB_RPC_H
#define LB_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "dataplane/snapshot.h"
#include "control/model/config.h"

#define LB_RPC_ERR_PARSE (-32700)
#define LB_RPC_ERR_INVALID_REQUEST (-32600)
#define LB_RPC_ERR_METHOD_NOT_FOUND (-32601)
#define LB_RPC_ERR_INVALID_PARAMS (-32602)
#define LB_RPC_ERR_INTERNAL (-32603)
#define LB_RPC_ERR_NOT_FOUND (-32001)
#define LB_RPC_ERR_EXISTS (-32002)
#define LB_RPC_ERR_LIMIT (-32003)
#define LB_RPC_ERR_TOO_LARGE (-32004) /* over a request's reply or scan budget */
#define LB_RPC_ERR_ABORTED (-32010)
#define LB_RPC_ERR_STALLED (-32020) /* a worker is stalled: changes refused (apply -EBUSY) */

#define LB_RPC_MAX_BATCH 1024

/*
 * The most bytes one reply line may take (a batch's array included), so that
 * it and its newline fit the server's per-client output cap
 * (LB_SERVER_DEFAULT_MAX_OUTPUT) with room to spare: 4 MiB less 4 KiB.
 */
#define LB_RPC_MAX_REPLY ((size_t)(4u << 20) - 4096)
/* The most Maglev table slots one request (a batch's calls together) may scan. */
#define LB_RPC_MAX_SCAN (1u << 24)

/* What the handlers may do to the daemon. All called on the control thread. */
struct lb_rpc_ops {
	void *arg;
	/** The running configuration (never NULL). */
	const struct lb_config *(*config)(void *arg);
	/**
	 * Make next the running configuration: persist it, build and publish its
	 * snapshot. Takes ownership of next in every case. 0, or -errno with a
	 * message in err (then nothing changed); -EBUSY: a worker is stalled
	 * (answered with LB_RPC_ERR_STALLED).
	 */
	int (*apply)(void *arg, struct lb_config *next, char *err, size_t errlen);
	/** The stats document (caller owns the reference). */
	json_t *(*stats)(void *arg);
	/** The published snapshot (valid until the next apply). */
	const struct lb_snapshot *(*snapshot)(void *arg);
	/** Write the state file now; 0 or -errno with err (-ENOENT: none configured). */
	int (*save)(void *arg, char *err, size_t errlen);

	/*
	 * Hot keys (NULL when the daemon runs without them: the methods then
	 * answer -32603 "hot keys are disabled").
	 */
	/** {"params": {...}, "counters": {...}, "window": W, "overrides": [...]} (caller owns). */
	json_t *(*hot_list)(void *arg);
	/** Recent promotion/demotion/re-plan/pin events, oldest first (caller owns). */
	json_t *(*hot_events)(void *arg);
	/**
	 * Change hot-key parameters; params is the object hot_set validated
	 * (lb_config_hot_params_from_json with socket: any parameter of
	 * params.h's table that the socket may set). 0 or -errno with err.
	 */
	int (*hot_set)(void *arg, const json_t *params, char *err, size_t errlen);
	/**
	 * Pin (r replicas, 0 = from the share) or unpin the override of one key of
	 * a VIP; key is a flow key whose fields the VIP's key mode uses (src; plus
	 * dport for src_ip_dport; plus dst, sport, dport, proto for 5tuple).
	 * 0, -ENOENT (no such VIP / override to unpin), -ENOSPC, -EBUSY (a worker
	 * is stalled), or -errno.
	 */
	int (*hot_pin)(void *arg, uint16_t vip_id, const struct lb_flow_key *key, uint16_t r,
	               bool pin, char *err, size_t errlen);

	/*
	 * Route announcement (NULL when no announcer is configured: drain and
	 * undrain then answer -32603). Drain (on) withdraws every route and keeps
	 * them withdrawn while forwarding goes on; undrain announces again. The
	 * state changes even if the announcer cannot follow at once (it retries).
	 * @return {"drained": bool, "hooks": {name: stats}} (caller owns), NULL
	 *   when out of memory.
	 */
	json_t *(*drain)(void *arg, bool on);
	/*
	 * Health checks (NULL: health_list answers -32603). Every backend's
	 * health record (health_run.h's list) and recent health events, oldest
	 * first; caller owns, NULL when out of memory.
	 */
	json_t *(*health_list)(void *arg);
	json_t *(*health_events)(void *arg);
};

/**
 * Handle one request line (an object or a batch array, without the newline).
 *
 * @return the reply (a JSON text without newline; caller frees with free()),
 *   or NULL when nothing is to be sent (only notifications).
 */
char *lb_rpc_handle(const struct lb_rpc_ops *ops, const char *line, size_t len);

/**
 * The reply line would get had the apply of its changes failed with code and
 * msg: every call of a valid request (or batch) answered with that error, as
 * lb_rpc_handle answers an apply that fails. For a line lb_rpc_handle
 * answered successfully before (group commit: the change's write failed).
 *
 * @return the reply (caller frees), or NULL (notifications only).
 */
char *lb_rpc_fail_request(const char *line, size_t len, int code, const char *msg);

/** The reply to a request that exceeded the size limit (caller frees). */
char *lb_rpc_error_reply(int code, const char *message);

#endif /* LB_RPC_H */
