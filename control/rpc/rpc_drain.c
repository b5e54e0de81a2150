/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drain and undrain methods of the control socket: runtime state of the
 * route announcer (ops->drain), not configuration, so each only comes as a
 * request of its own.
 */
#include <stdbool.h>
#include <stddef.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "control/rpc/rpc_internal.h"

static int
drain_common(struct lb_rpc_txn *t, const json_t *params, bool on, struct lb_rpc_outcome *out)
{
	if (t->ops->drain == NULL)
		return lb_rpc_fail(
		        out, LB_RPC_ERR_INTERNAL,
		        "no route announcer configured (start spillwayd with --bird-include "
		        "and --bird-socket)");
	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	return lb_rpc_succeed(out, t->ops->drain(t->ops->arg, on));
}

static int
rpc_drain(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	return drain_common(t, params, true, out);
}

static int
rpc_undrain(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	return drain_common(t, params, false, out);
}

const struct lb_rpc_method lb_rpc_drain_methods[] = {
        {.name = "drain", .handler = rpc_drain, .no_batch = true, .usage = "drain"},
        {.name = "undrain", .handler = rpc_undrain, .no_batch = true, .usage = "undrain"},
        {.name = NULL},
};
