/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every JSON-RPC method handler uses (rpc_internal.h): the outcome of a
 * call (failure or success), the transaction's view of the configuration and
 * its working copy, the decoding of params and VIP references, VIP lookups
 * and free backend ids for what a call adds.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "control/rpc/rpc_internal.h"

const char *const lb_rpc_no_keys[] = {NULL};

int
lb_rpc_fail(struct lb_rpc_outcome *o, int code, const char *fmt, ...)
{
	va_list ap;

	o->code = code;
	va_start(ap, fmt);
	vsnprintf(o->msg, sizeof(o->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* A config-module rejection: its -errno says which JSON-RPC error it is. */
int
lb_rpc_fail_config(struct lb_rpc_outcome *o, int rc, const char *msg)
{
	int code = LB_RPC_ERR_INVALID_PARAMS;

	if (rc == -ENOSPC)
		code = LB_RPC_ERR_LIMIT;
	else if (rc == -ENOMEM)
		code = LB_RPC_ERR_INTERNAL;
	return lb_rpc_fail(o, code, "%s", msg);
}

int
lb_rpc_fail_oom(struct lb_rpc_outcome *o)
{
	return lb_rpc_fail(o, LB_RPC_ERR_INTERNAL, "out of memory");
}

/* Success; result is stolen (NULL means an allocation failed). */
int
lb_rpc_succeed(struct lb_rpc_outcome *o, json_t *result)
{
	if (result == NULL)
		return lb_rpc_fail_oom(o);
	o->result = result;
	return 0;
}

const struct lb_config *
lb_rpc_view(const struct lb_rpc_txn *t)
{
	return t->work != NULL ? t->work : t->ops->config(t->ops->arg);
}

/* The working copy, made on first use; NULL only when out of memory. */
struct lb_config *
lb_rpc_edit(struct lb_rpc_txn *t)
{
	if (t->work == NULL)
		t->work = lb_config_clone(t->ops->config(t->ops->arg));
	return t->work;
}

/* ---- Params decoding ---- */

/* Unknown params are invalid: a typo must not be silently ignored. */
int
lb_rpc_check_keys(struct lb_rpc_outcome *o, const json_t *obj, const char *path,
                  const char *const *allowed)
{
	const char *k = lb_config_unknown_key(obj, allowed);

	if (k == NULL)
		return 0;
	return lb_rpc_fail(o, LB_RPC_ERR_INVALID_PARAMS, "%s%s%s: unknown field", path,
	                   *path ? "." : "", k);
}

/* A VIP reference {address, port, protocol} at path ("" when it is the params). */
int
lb_rpc_decode_vip_ref(const struct lb_rpc_txn *t, const json_t *o, const char *path,
                      struct lb_cfg_vip *ref, struct lb_rpc_outcome *out)
{
	static const char *const keys[] = {"address", "port", "protocol", NULL};
	char err[LB_RPC_MSG_LEN];
	int rc;

	if (json_is_object(o) && lb_rpc_check_keys(out, o, path, keys) != 0)
		return out->code;
	rc = lb_config_vip_from_json(lb_rpc_view(t), o, path, ref, err, sizeof(err));
	if (rc != 0)
		return lb_rpc_fail_config(out, rc, err);
	return 0;
}

/* The "vip" member of params, a VIP reference. */
int
lb_rpc_decode_vip_member(const struct lb_rpc_txn *t, const json_t *params, struct lb_cfg_vip *ref,
                         struct lb_rpc_outcome *out)
{
	const json_t *o = json_object_get(params, "vip");

	if (o == NULL)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS, "vip: missing (required)");
	return lb_rpc_decode_vip_ref(t, o, "vip", ref, out);
}

/* ---- Lookups ---- */

int
lb_rpc_find_vip(const struct lb_config *cfg, const struct lb_cfg_vip *ref)
{
	return lb_config_find_vip(cfg, ref);
}

/*
 * Ids for what a call adds: unused in cfg, so the working copy is a runnable
 * configuration by itself (unique VIP ids, unique backend ids with a non-zero
 * generation). The daemon's apply then maps them onto its stable ids.
 */
int
lb_rpc_new_backend_ids(const struct lb_config *cfg, struct lb_cfg_backend *bs, uint32_t n)
{
	bool *used = calloc(LB_MAX_BACKENDS, sizeof(*used));
	uint32_t next = 0;

	if (used == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < cfg->n_vips; i++)
		for (uint32_t j = 0; j < cfg->vips[i].n_backends; j++)
			if (cfg->vips[i].backends[j].id < LB_MAX_BACKENDS)
				used[cfg->vips[i].backends[j].id] = true;
	for (uint32_t k = 0; k < n; k++) {
		while (next < LB_MAX_BACKENDS && used[next])
			next++;
		if (next == LB_MAX_BACKENDS) {
			free(used);
			return -ENOSPC;
		}
		bs[k].id = (uint16_t)next++;
		bs[k].gen = 1;
	}
	free(used);
	return 0;
}

/* "192.0.2.10:80/tcp", "[2001:db8::1]:80/udp" */
const char *
lb_rpc_vip_str(const struct lb_cfg_vip *v, char *buf, size_t len)
{
	char a[64];

	lb_ip_to_str(v->af, &v->addr, a, sizeof(a));
	snprintf(buf, len, v->af == LB_AF_INET6 ? "[%s]:%u/%s" : "%s:%u/%s", a, v->port,
	         v->proto == IPPROTO_TCP ? "tcp" : "udp");
	return buf;
}

int
lb_rpc_fail_no_vip(struct lb_rpc_outcome *o, const struct lb_cfg_vip *ref)
{
	char v[96];

	return lb_rpc_fail(o, LB_RPC_ERR_NOT_FOUND, "VIP %s not found",
	                   lb_rpc_vip_str(ref, v, sizeof(v)));
}
