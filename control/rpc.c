/* SPDX-License-Identifier: BSD-3-Clause */
/* Stub: being written. */
#include <stdlib.h>
#include "rpc.h"

char *
lb_rpc_handle(const struct lb_rpc_ops *ops, const char *line, size_t len)
{
	(void)ops;
	(void)line;
	(void)len;
	return lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "not implemented");
}

char *
lb_rpc_error_reply(int code, const char *message)
{
	json_t *r = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code",
			      code, "message", message);
	char *s = json_dumps(r, JSON_COMPACT);

	json_decref(r);
	return s;
}
