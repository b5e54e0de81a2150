/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The vip_* methods of the control socket: list, get, add and remove VIPs in
 * the transaction's working copy. A VIP object is judged by the config
 * module, the same code and messages as the configuration file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "control/rpc/rpc_internal.h"

/*
 * An id unused in cfg for the VIP a call adds, so the working copy stays a
 * runnable configuration by itself (see lb_rpc_new_backend_ids). The
 * daemon's apply then maps it onto its stable id.
 */
static int
new_vip_id(const struct lb_config *cfg, uint16_t *id)
{
	bool used[LB_MAX_VIPS] = {false};

	for (uint32_t i = 0; i < cfg->n_vips; i++)
		if (cfg->vips[i].id < LB_MAX_VIPS)
			used[cfg->vips[i].id] = true;
	for (uint32_t i = 0; i < LB_MAX_VIPS; i++)
		if (!used[i]) {
			*id = (uint16_t)i;
			return 0;
		}
	return -ENOSPC;
}

/* A VIP as vip_list and vip_get show it: its configuration, with the hot_mode
 * in force even when it is its key mode's default (which the state file
 * leaves out). */
static json_t *
vip_view(const struct lb_cfg_vip *v)
{
	json_t *o = lb_config_vip_to_json(v);

	if (o != NULL && json_object_get(o, "hot_mode") == NULL &&
	    json_object_set_new(o, "hot_mode", json_string(lb_config_hot_mode_name(v->hot_mode))) !=
	            0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int
rpc_vip_list(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	const struct lb_config *cfg = lb_rpc_view(t);
	json_t *list;

	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	list = json_array();
	for (uint32_t i = 0; list != NULL && i < cfg->n_vips; i++) {
		if (json_array_append_new(list, vip_view(&cfg->vips[i])) != 0) {
			json_decref(list);
			list = NULL;
		}
	}
	return lb_rpc_succeed(out, list);
}

static int
rpc_vip_get(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	struct lb_cfg_vip ref;
	int vi;

	if (lb_rpc_decode_vip_ref(t, params, "", &ref, out) != 0)
		return out->code;
	vi = lb_rpc_find_vip(lb_rpc_view(t), &ref);
	if (vi < 0)
		return lb_rpc_fail_no_vip(out, &ref);
	return lb_rpc_succeed(out, vip_view(&lb_rpc_view(t)->vips[vi]));
}

static int
rpc_vip_add(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	struct lb_cfg_vip v;
	struct lb_cfg_vip *vips;
	struct lb_config *cfg;
	char err[LB_RPC_MSG_LEN], s[96];
	int rc;

	rc = lb_config_vip_from_json(lb_rpc_view(t), params, "", &v, err, sizeof(err));
	if (rc != 0)
		return lb_rpc_fail_config(out, rc, err);
	if (lb_rpc_find_vip(lb_rpc_view(t), &v) >= 0) {
		rc = lb_rpc_fail(out, LB_RPC_ERR_EXISTS, "VIP %s already exists",
		                 lb_rpc_vip_str(&v, s, sizeof(s)));
		goto cleanup;
	}
	if (lb_rpc_view(t)->n_vips >= LB_MAX_VIPS) {
		rc = lb_rpc_fail(out, LB_RPC_ERR_LIMIT, "too many VIPs (at most %u)", LB_MAX_VIPS);
		goto cleanup;
	}
	if ((uint64_t)(lb_rpc_view(t)->n_vips + 1) * lb_rpc_view(t)->table_size >
	    LB_MAGLEV_MAX_SLOTS) {
		rc = lb_rpc_fail(
		        out, LB_RPC_ERR_LIMIT,
		        "too many VIPs for table_size %u (all Maglev tables together hold at "
		        "most %llu slots)",
		        lb_rpc_view(t)->table_size, (unsigned long long)LB_MAGLEV_MAX_SLOTS);
		goto cleanup;
	}
	cfg = lb_rpc_edit(t);
	if (cfg == NULL) {
		rc = lb_rpc_fail_oom(out);
		goto cleanup;
	}
	rc = new_vip_id(cfg, &v.id);
	if (rc == 0)
		rc = lb_rpc_new_backend_ids(cfg, v.backends, v.n_backends);
	if (rc != 0) {
		rc = rc == -ENOMEM
		             ? lb_rpc_fail_oom(out)
		             : lb_rpc_fail(out, LB_RPC_ERR_LIMIT, "no free VIP or backend id");
		goto cleanup;
	}
	vips = realloc(cfg->vips, (cfg->n_vips + 1) * sizeof(*vips));
	if (vips == NULL) {
		rc = lb_rpc_fail_oom(out);
		goto cleanup;
	}
	cfg->vips = vips;
	vips[cfg->n_vips++] = v;
	return lb_rpc_succeed(out, lb_config_vip_to_json(&vips[cfg->n_vips - 1]));
cleanup:
	lb_cfg_vip_clear(&v);
	return rc;
}

static int
rpc_vip_remove(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	struct lb_cfg_vip ref;
	struct lb_config *cfg;
	int vi;

	if (lb_rpc_decode_vip_ref(t, params, "", &ref, out) != 0)
		return out->code;
	vi = lb_rpc_find_vip(lb_rpc_view(t), &ref);
	if (vi < 0)
		return lb_rpc_fail_no_vip(out, &ref);
	cfg = lb_rpc_edit(t);
	if (cfg == NULL)
		return lb_rpc_fail_oom(out);
	lb_cfg_vip_clear(&cfg->vips[vi]);
	memmove(&cfg->vips[vi], &cfg->vips[vi + 1],
	        (cfg->n_vips - (uint32_t)vi - 1) * sizeof(cfg->vips[0]));
	cfg->n_vips--;
	return lb_rpc_succeed(out, json_object());
}

const struct lb_rpc_method lb_rpc_vip_methods[] = {
        {.name = "vip_list", .handler = rpc_vip_list, .usage = "vip_list"},
        {.name = "vip_get", .handler = rpc_vip_get, .usage = "vip_get " LB_RPC_VIP_REF},
        {.name = "vip_add",
         .handler = rpc_vip_add,
         .mutates = true,
         .usage = "vip_add {address, port, protocol, key?, encap?, health?, backends?: [{address, "
                  "weight?, name?, state?, health?}]}"},
        {.name = "vip_remove",
         .handler = rpc_vip_remove,
         .mutates = true,
         .usage = "vip_remove " LB_RPC_VIP_REF},
        {.name = NULL},
};
