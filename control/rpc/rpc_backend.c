/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The backend_* methods of the control socket: add, remove and change the
 * backends of a VIP in the transaction's working copy. Backend fields are
 * judged by the config module as a backend object of the configuration file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "control/rpc/rpc_internal.h"

/* The backend fields of params (all but "vip"), judged as a backend object. */
static int
decode_backend_fields(const struct lb_rpc_txn *t, const json_t *params, struct lb_cfg_backend *b,
                      struct lb_rpc_outcome *out)
{
	json_t *fields = json_copy((json_t *)params);
	char err[LB_RPC_MSG_LEN];
	int rc;

	if (fields == NULL)
		return lb_rpc_fail_oom(out);
	json_object_del(fields, "vip");
	rc = lb_config_backend_from_json(lb_rpc_view(t), fields, "", b, err, sizeof(err));
	json_decref(fields);
	/* A rejection of the object as a whole ("IPv6 backend needs
	 * encap.source_v6") names no field; here it is about the address. */
	if (rc == -EINVAL && strstr(err, ": ") == NULL)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS, "address: %s", err);
	if (rc != 0)
		return lb_rpc_fail_config(out, rc, err);
	return 0;
}

static int
find_backend(const struct lb_cfg_vip *v, const struct lb_cfg_backend *b)
{
	for (uint32_t i = 0; i < v->n_backends; i++)
		if (v->backends[i].af == b->af &&
		    memcmp(&v->backends[i].addr, &b->addr, sizeof(b->addr)) == 0)
			return (int)i;
	return -1;
}

/* Resolve params' "vip" and backend "address": indexes into lb_rpc_view(t). */
static int
find_vip_backend(const struct lb_rpc_txn *t, const json_t *params, struct lb_cfg_backend *b,
                 int *vi, int *bi, struct lb_rpc_outcome *out)
{
	const struct lb_config *cfg = lb_rpc_view(t);
	struct lb_cfg_vip ref;
	char v[96], a[64];

	if (lb_rpc_decode_vip_member(t, params, &ref, out) != 0 ||
	    decode_backend_fields(t, params, b, out) != 0)
		return out->code;
	*vi = lb_rpc_find_vip(cfg, &ref);
	if (*vi < 0)
		return lb_rpc_fail_no_vip(out, &ref);
	*bi = find_backend(&cfg->vips[*vi], b);
	if (*bi < 0)
		return lb_rpc_fail(out, LB_RPC_ERR_NOT_FOUND, "backend %s not found in VIP %s",
		                   lb_ip_to_str(b->af, &b->addr, a, sizeof(a)),
		                   lb_rpc_vip_str(&ref, v, sizeof(v)));
	return 0;
}

/* backend_add into *bp, which the configuration owns once *kept is set. */
static int
backend_add(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out,
            struct lb_cfg_backend *bp, bool *kept)
{
	static const char *const keys[] = {"vip",   "address", "weight", "name",
	                                   "state", "health",  NULL};
	const struct lb_cfg_vip *ov;
	struct lb_cfg_backend *bes;
	struct lb_cfg_vip ref, *v;
	struct lb_config *cfg;
	char s[96], a[64], id[LB_NAME_MAX + 48], oid[LB_NAME_MAX + 48];
	int vi, rc;

	if (lb_rpc_check_keys(out, params, "", keys) != 0 ||
	    lb_rpc_decode_vip_member(t, params, &ref, out) != 0 ||
	    decode_backend_fields(t, params, bp, out) != 0)
		return out->code;
	vi = lb_rpc_find_vip(lb_rpc_view(t), &ref);
	if (vi < 0)
		return lb_rpc_fail_no_vip(out, &ref);
	ov = &lb_rpc_view(t)->vips[vi];
	lb_ip_to_str(bp->af, &bp->addr, a, sizeof(a));
	if (find_backend(ov, bp) >= 0)
		return lb_rpc_fail(out, LB_RPC_ERR_EXISTS, "backend %s already in VIP %s", a,
		                   lb_rpc_vip_str(&ref, s, sizeof(s)));
	/* The Maglev permutation derives from the identity: it must be unique too. */
	lb_cfg_backend_identity(bp, id, sizeof(id));
	for (uint32_t j = 0; j < ov->n_backends; j++)
		if (strcmp(lb_cfg_backend_identity(&ov->backends[j], oid, sizeof(oid)), id) == 0)
			return lb_rpc_fail(out, LB_RPC_ERR_EXISTS,
			                   "a backend with identity \"%s\" is already in VIP %s",
			                   id, lb_rpc_vip_str(&ref, s, sizeof(s)));
	if (lb_config_backend_count(lb_rpc_view(t)) >= LB_MAX_BACKENDS)
		return lb_rpc_fail(out, LB_RPC_ERR_LIMIT, "too many backends in all (at most %u)",
		                   LB_MAX_BACKENDS);
	cfg = lb_rpc_edit(t);
	if (cfg == NULL)
		return lb_rpc_fail_oom(out);
	rc = lb_rpc_new_backend_ids(cfg, bp, 1);
	if (rc != 0)
		return rc == -ENOMEM ? lb_rpc_fail_oom(out)
		                     : lb_rpc_fail(out, LB_RPC_ERR_LIMIT, "no free backend id");
	v = &cfg->vips[vi];
	bes = realloc(v->backends, (v->n_backends + 1) * sizeof(*bes));
	if (bes == NULL)
		return lb_rpc_fail_oom(out);
	v->backends = bes;
	bes[v->n_backends++] = *bp;
	*kept = true;
	return lb_rpc_succeed(out, lb_config_backend_to_json(&bes[v->n_backends - 1]));
}

static int
rpc_backend_add(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	struct lb_cfg_backend b = {0};
	bool kept = false;
	int rc = backend_add(t, params, out, &b, &kept);

	if (!kept)
		lb_cfg_backend_clear(&b);
	return rc;
}

static int
rpc_backend_remove(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	static const char *const keys[] = {"vip", "address", NULL};
	struct lb_cfg_backend b;
	struct lb_config *cfg;
	struct lb_cfg_vip *v;
	int vi, bi;

	if (lb_rpc_check_keys(out, params, "", keys) != 0 ||
	    find_vip_backend(t, params, &b, &vi, &bi, out) != 0)
		return out->code;
	cfg = lb_rpc_edit(t);
	if (cfg == NULL)
		return lb_rpc_fail_oom(out);
	v = &cfg->vips[vi];
	lb_cfg_backend_clear(&v->backends[bi]);
	memmove(&v->backends[bi], &v->backends[bi + 1],
	        (v->n_backends - (uint32_t)bi - 1) * sizeof(v->backends[0]));
	v->n_backends--;
	return lb_rpc_succeed(out, json_object());
}

static int
rpc_backend_set(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	static const char *const keys[] = {"vip", "address", "weight", "state", "health", NULL};
	struct lb_cfg_backend b = {0}, *cur;
	struct lb_config *cfg;
	json_t *h = json_object_get(params, "health"), *p;
	int vi, bi, rc;

	if (lb_rpc_check_keys(out, params, "", keys) != 0)
		return out->code;
	if (json_object_get(params, "weight") == NULL && json_object_get(params, "state") == NULL &&
	    h == NULL)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS,
		                   "weight, state, health: missing (at least one is required)");
	/* "health": null drops the backend's own object (the VIP's applies again). */
	p = json_copy((json_t *)params);
	if (p == NULL)
		return lb_rpc_fail_oom(out);
	if (json_is_null(h))
		json_object_del(p, "health");
	rc = find_vip_backend(t, p, &b, &vi, &bi, out);
	json_decref(p);
	if (rc != 0) {
		lb_cfg_backend_clear(&b);
		return out->code;
	}
	cfg = lb_rpc_edit(t);
	if (cfg == NULL) {
		lb_cfg_backend_clear(&b);
		return lb_rpc_fail_oom(out);
	}
	cur = &cfg->vips[vi].backends[bi];
	if (json_object_get(params, "weight") != NULL)
		cur->weight = b.weight;
	if (json_object_get(params, "state") != NULL)
		cur->state = b.state;
	if (h != NULL) {
		lb_cfg_backend_clear(cur);
		cur->health = b.health; /* NULL for "health": null */
		cur->health_digest = b.health_digest;
		b.health = NULL;
	}
	lb_cfg_backend_clear(&b);
	return lb_rpc_succeed(out, lb_config_backend_to_json(cur));
}

const struct lb_rpc_method lb_rpc_backend_methods[] = {
        {.name = "backend_add",
         .handler = rpc_backend_add,
         .mutates = true,
         .usage =
                 "backend_add {vip: " LB_RPC_VIP_REF ", address, weight?, name?, state?, health?}"},
        {.name = "backend_remove",
         .handler = rpc_backend_remove,
         .mutates = true,
         .usage = "backend_remove {vip: " LB_RPC_VIP_REF ", address}"},
        {.name = "backend_set",
         .handler = rpc_backend_set,
         .mutates = true,
         .usage = "backend_set {vip: " LB_RPC_VIP_REF
                  ", address, weight?, state?, health?} (at least one)"},
        {.name = NULL},
};
