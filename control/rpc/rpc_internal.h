/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the JSON-RPC dispatcher (rpc.c) and the method files share: the
 * transaction, the outcome of a call, the method table row and each file's
 * table, and the helpers of rpc_common.c. Internal to the rpc module; rpc.h
 * is its public API.
 */
#ifndef LB_RPC_INTERNAL_H
#define LB_RPC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"

/* The longest error message (longer ones are cut). */
#define LB_RPC_MSG_LEN 512

/* A VIP reference in usage strings. */
#define LB_RPC_VIP_REF "{address, port, protocol}"

/* What a request or batch works on. */
struct lb_rpc_txn {
	const struct lb_rpc_ops *ops;
	struct lb_config *work; /* private copy, made by the first change; NULL until then */
	size_t reply_left;      /* bytes of LB_RPC_MAX_REPLY the calls so far left */
	uint64_t scan_left;     /* table slots of LB_RPC_MAX_SCAN left */
};

/* The outcome of one call: a result, or an error code and message. */
struct lb_rpc_outcome {
	int code; /* 0: success */
	char msg[LB_RPC_MSG_LEN];
	json_t *result; /* owned; only when code == 0 */
	json_t *data;   /* owned; optional error detail */
};

/* Decode params, call, and either set out->result (return 0) or lb_rpc_fail(). */
typedef int (*lb_rpc_handler_fn)(struct lb_rpc_txn *t, const json_t *params,
                                 struct lb_rpc_outcome *out);

struct lb_rpc_method {
	const char *name;
	lb_rpc_handler_fn handler;
	bool mutates; /* a success leaves the working copy to be applied */
	const char *usage;
	/* Changes runtime state outside the configuration, which a batch could
	 * not roll back: only as a request of its own. */
	bool no_batch;
};

/* The methods of each file; every table ends with a row whose name is NULL. */
extern const struct lb_rpc_method lb_rpc_query_methods[];   /* rpc_query.c */
extern const struct lb_rpc_method lb_rpc_vip_methods[];     /* rpc_vip.c */
extern const struct lb_rpc_method lb_rpc_backend_methods[]; /* rpc_backend.c */
extern const struct lb_rpc_method lb_rpc_hot_methods[];     /* rpc_hot.c */
extern const struct lb_rpc_method lb_rpc_drain_methods[];   /* rpc_drain.c */

/* ---- Outcomes ---- */

/** Set the error code and the printf-style message; @return code. */
int lb_rpc_fail(struct lb_rpc_outcome *o, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/**
 * A config-module rejection with its message: -ENOSPC is LB_RPC_ERR_LIMIT,
 * -ENOMEM LB_RPC_ERR_INTERNAL, anything else LB_RPC_ERR_INVALID_PARAMS.
 * @return the JSON-RPC error code.
 */
int lb_rpc_fail_config(struct lb_rpc_outcome *o, int rc, const char *msg);

/** LB_RPC_ERR_INTERNAL "out of memory"; @return that code. */
int lb_rpc_fail_oom(struct lb_rpc_outcome *o);

/** Success with result, which is stolen; NULL (an allocation failed) is lb_rpc_fail_oom(). */
int lb_rpc_succeed(struct lb_rpc_outcome *o, json_t *result);

/* ---- The transaction ---- */

/** The working copy if there is one, else the running configuration. */
const struct lb_config *lb_rpc_view(const struct lb_rpc_txn *t);

/** The working copy, made on first use; NULL only when out of memory. */
struct lb_config *lb_rpc_edit(struct lb_rpc_txn *t);

/* ---- Params decoding ---- */

/** No params allowed (for lb_rpc_check_keys). */
extern const char *const lb_rpc_no_keys[];

/**
 * Fail with LB_RPC_ERR_INVALID_PARAMS "path.key: unknown field" if obj has a
 * member not in allowed (NULL-terminated). @return 0 or the error code.
 */
int lb_rpc_check_keys(struct lb_rpc_outcome *o, const json_t *obj, const char *path,
                      const char *const *allowed);

/**
 * A VIP reference {address, port, protocol} at path ("" when it is the
 * params) into ref. @return 0 or the error code.
 */
int lb_rpc_decode_vip_ref(const struct lb_rpc_txn *t, const json_t *o, const char *path,
                          struct lb_cfg_vip *ref, struct lb_rpc_outcome *out);

/** The "vip" member of params (required), a VIP reference. @return 0 or the error code. */
int lb_rpc_decode_vip_member(const struct lb_rpc_txn *t, const json_t *params,
                             struct lb_cfg_vip *ref, struct lb_rpc_outcome *out);

/* ---- Lookups ---- */

/** The index of the VIP with ref's address, port and protocol in cfg, or -1. */
int lb_rpc_find_vip(const struct lb_config *cfg, const struct lb_cfg_vip *ref);

/**
 * Give bs[0..n) backend ids unused in cfg (and generation 1).
 * @return 0, -ENOMEM, or -ENOSPC when no id is left.
 */
int lb_rpc_new_backend_ids(const struct lb_config *cfg, struct lb_cfg_backend *bs, uint32_t n);

/** "192.0.2.10:80/tcp", "[2001:db8::1]:80/udp" into buf; @return buf. */
const char *lb_rpc_vip_str(const struct lb_cfg_vip *v, char *buf, size_t len);

/** LB_RPC_ERR_NOT_FOUND "VIP ... not found"; @return that code. */
int lb_rpc_fail_no_vip(struct lb_rpc_outcome *o, const struct lb_cfg_vip *ref);

#endif /* LB_RPC_INTERNAL_H */
