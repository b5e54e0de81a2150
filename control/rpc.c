/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC 2.0 dispatcher and method handlers of the control socket
 * (docs/control-protocol.md). Every call of a request or batch runs against
 * one private copy of the running configuration; the copy goes to ops->apply
 * only if every call succeeded, so a batch is one transaction with one
 * rebuild. VIP and backend objects are judged by the config module, the same
 * code and messages as the configuration file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotkey.h"
#include "rpc.h"

#define MSG_LEN 512
#define PROTOCOL_VERSION 1

/* What a request or batch works on. */
struct txn {
	const struct lb_rpc_ops *ops;
	struct lb_config *work; /* private copy, made by the first change; NULL until then */
};

/* The outcome of one call: a result, or an error code and message. */
struct outcome {
	int code; /* 0: success */
	char msg[MSG_LEN];
	json_t *result; /* owned; only when code == 0 */
	json_t *data;   /* owned; optional error detail */
};

/* Decode params, call, and either set out->result (return 0) or fail(). */
typedef int (*rpc_handler_fn)(struct txn *t, const json_t *params, struct outcome *out);

struct method {
	const char *name;
	rpc_handler_fn handler;
	bool mutates; /* a success leaves the working copy to be applied */
	const char *usage;
	/* Changes runtime state outside the configuration, which a batch could
	 * not roll back: only as a request of its own. */
	bool no_batch;
};

/* One element of a request line. */
struct call {
	const struct method *m;
	const json_t *params; /* borrowed from the parsed line */
	const json_t *id;     /* borrowed; NULL: none or invalid (replied to as null) */
	bool notification;    /* a valid request without "id": no reply */
	struct outcome out;
};

static int
fail(struct outcome *o, int code, const char *fmt, ...)
{
	va_list ap;

	o->code = code;
	va_start(ap, fmt);
	vsnprintf(o->msg, sizeof(o->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* A config-module rejection: its -errno says which JSON-RPC error it is. */
static int
fail_config(struct outcome *o, int rc, const char *msg)
{
	int code = LB_RPC_ERR_INVALID_PARAMS;

	if (rc == -ENOSPC)
		code = LB_RPC_ERR_LIMIT;
	else if (rc == -ENOMEM)
		code = LB_RPC_ERR_INTERNAL;
	return fail(o, code, "%s", msg);
}

static int
fail_oom(struct outcome *o)
{
	return fail(o, LB_RPC_ERR_INTERNAL, "out of memory");
}

/* Success; result is stolen (NULL means an allocation failed). */
static int
succeed(struct outcome *o, json_t *result)
{
	if (result == NULL)
		return fail_oom(o);
	o->result = result;
	return 0;
}

static const struct lb_config *
view(const struct txn *t)
{
	return t->work != NULL ? t->work : t->ops->config(t->ops->arg);
}

/* The working copy, made on first use; NULL only when out of memory. */
static struct lb_config *
edit(struct txn *t)
{
	if (t->work == NULL)
		t->work = lb_config_clone(t->ops->config(t->ops->arg));
	return t->work;
}

/* ---- Params decoding ---- */

/* Unknown params are invalid: a typo must not be silently ignored. */
static int
check_keys(struct outcome *o, const json_t *obj, const char *path, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)obj, k, v) {
		const char *const *a;

		for (a = allowed; *a != NULL; a++)
			if (strcmp(*a, k) == 0)
				break;
		if (*a == NULL)
			return fail(o, LB_RPC_ERR_INVALID_PARAMS, "%s%s%s: unknown field", path,
			            *path ? "." : "", k);
	}
	return 0;
}

/* A VIP reference {address, port, protocol} at path ("" when it is the params). */
static int
decode_vip_ref(const struct txn *t, const json_t *o, const char *path, struct lb_cfg_vip *ref,
               struct outcome *out)
{
	static const char *const keys[] = {"address", "port", "protocol", NULL};
	char err[MSG_LEN];
	int rc;

	if (json_is_object(o) && check_keys(out, o, path, keys) != 0)
		return out->code;
	rc = lb_config_vip_from_json(view(t), o, path, ref, err, sizeof(err));
	if (rc != 0)
		return fail_config(out, rc, err);
	return 0;
}

/* The "vip" member of params, a VIP reference. */
static int
decode_vip_member(const struct txn *t, const json_t *params, struct lb_cfg_vip *ref,
                  struct outcome *out)
{
	const json_t *o = json_object_get(params, "vip");

	if (o == NULL)
		return fail(out, LB_RPC_ERR_INVALID_PARAMS, "vip: missing (required)");
	return decode_vip_ref(t, o, "vip", ref, out);
}

/* The backend fields of params (all but "vip"), judged as a backend object. */
static int
decode_backend_fields(const struct txn *t, const json_t *params, struct lb_cfg_backend *b,
                      struct outcome *out)
{
	json_t *fields = json_copy((json_t *)params);
	char err[MSG_LEN];
	int rc;

	if (fields == NULL)
		return fail_oom(out);
	json_object_del(fields, "vip");
	rc = lb_config_backend_from_json(view(t), fields, "", b, err, sizeof(err));
	json_decref(fields);
	/* A rejection of the object as a whole ("IPv6 backend needs
	 * encap.source_v6") names no field; here it is about the address. */
	if (rc == -EINVAL && strstr(err, ": ") == NULL)
		return fail(out, LB_RPC_ERR_INVALID_PARAMS, "address: %s", err);
	if (rc != 0)
		return fail_config(out, rc, err);
	return 0;
}

/* ---- Lookups ---- */

static bool
same_vip(const struct lb_cfg_vip *a, const struct lb_cfg_vip *b)
{
	return a->af == b->af && a->proto == b->proto && a->port == b->port &&
	       memcmp(&a->addr, &b->addr, sizeof(a->addr)) == 0;
}

static int
find_vip(const struct lb_config *cfg, const struct lb_cfg_vip *ref)
{
	for (uint32_t i = 0; i < cfg->n_vips; i++)
		if (same_vip(&cfg->vips[i], ref))
			return (int)i;
	return -1;
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

/*
 * Ids for what a call adds: unused in cfg, so the working copy is a runnable
 * configuration by itself (unique VIP ids, unique backend ids with a non-zero
 * generation). The daemon's apply then maps them onto its stable ids.
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

static int
new_backend_ids(const struct lb_config *cfg, struct lb_cfg_backend *bs, uint32_t n)
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
static const char *
vip_str(const struct lb_cfg_vip *v, char *buf, size_t len)
{
	char a[64];

	lb_ip_to_str(v->af, &v->addr, a, sizeof(a));
	snprintf(buf, len, v->af == LB_AF_INET6 ? "[%s]:%u/%s" : "%s:%u/%s", a, v->port,
	         v->proto == IPPROTO_TCP ? "tcp" : "udp");
	return buf;
}

static int
fail_no_vip(struct outcome *o, const struct lb_cfg_vip *ref)
{
	char v[96];

	return fail(o, LB_RPC_ERR_NOT_FOUND, "VIP %s not found", vip_str(ref, v, sizeof(v)));
}

/* Resolve params' "vip" and backend "address": indexes into view(t). */
static int
find_vip_backend(const struct txn *t, const json_t *params, struct lb_cfg_backend *b, int *vi,
                 int *bi, struct outcome *out)
{
	const struct lb_config *cfg = view(t);
	struct lb_cfg_vip ref;
	char v[96], a[64];

	if (decode_vip_member(t, params, &ref, out) != 0 ||
	    decode_backend_fields(t, params, b, out) != 0)
		return out->code;
	*vi = find_vip(cfg, &ref);
	if (*vi < 0)
		return fail_no_vip(out, &ref);
	*bi = find_backend(&cfg->vips[*vi], b);
	if (*bi < 0)
		return fail(out, LB_RPC_ERR_NOT_FOUND, "backend %s not found in VIP %s",
		            lb_ip_to_str(b->af, &b->addr, a, sizeof(a)),
		            vip_str(&ref, v, sizeof(v)));
	return 0;
}

/* ---- Methods ---- */

static const char *const no_keys[] = {NULL};

static int
rpc_version(struct txn *t, const json_t *params, struct outcome *out)
{
	(void)t;
	if (check_keys(out, params, "", no_keys) != 0)
		return out->code;
	return succeed(out, json_pack("{s:s, s:i}", "version", SPILLWAY_VERSION, "protocol",
	                              PROTOCOL_VERSION));
}

static int
rpc_vip_list(struct txn *t, const json_t *params, struct outcome *out)
{
	const struct lb_config *cfg = view(t);
	json_t *list;

	if (check_keys(out, params, "", no_keys) != 0)
		return out->code;
	list = json_array();
	for (uint32_t i = 0; list != NULL && i < cfg->n_vips; i++) {
		if (json_array_append_new(list, lb_config_vip_to_json(&cfg->vips[i])) != 0) {
			json_decref(list);
			list = NULL;
		}
	}
	return succeed(out, list);
}

static int
rpc_vip_get(struct txn *t, const json_t *params, struct outcome *out)
{
	struct lb_cfg_vip ref;
	int vi;

	if (decode_vip_ref(t, params, "", &ref, out) != 0)
		return out->code;
	vi = find_vip(view(t), &ref);
	if (vi < 0)
		return fail_no_vip(out, &ref);
	return succeed(out, lb_config_vip_to_json(&view(t)->vips[vi]));
}

static int
rpc_vip_add(struct txn *t, const json_t *params, struct outcome *out)
{
	struct lb_cfg_vip v;
	struct lb_cfg_vip *vips;
	struct lb_config *cfg;
	char err[MSG_LEN], s[96];
	int rc;

	rc = lb_config_vip_from_json(view(t), params, "", &v, err, sizeof(err));
	if (rc != 0)
		return fail_config(out, rc, err);
	if (find_vip(view(t), &v) >= 0) {
		rc = fail(out, LB_RPC_ERR_EXISTS, "VIP %s already exists",
		          vip_str(&v, s, sizeof(s)));
		goto cleanup;
	}
	if (view(t)->n_vips >= LB_MAX_VIPS) {
		rc = fail(out, LB_RPC_ERR_LIMIT, "too many VIPs (at most %u)", LB_MAX_VIPS);
		goto cleanup;
	}
	if ((uint64_t)(view(t)->n_vips + 1) * view(t)->table_size > LB_MAGLEV_MAX_SLOTS) {
		rc = fail(out, LB_RPC_ERR_LIMIT,
		          "too many VIPs for table_size %u (all Maglev tables together hold at "
		          "most %llu slots)",
		          view(t)->table_size, (unsigned long long)LB_MAGLEV_MAX_SLOTS);
		goto cleanup;
	}
	cfg = edit(t);
	if (cfg == NULL) {
		rc = fail_oom(out);
		goto cleanup;
	}
	rc = new_vip_id(cfg, &v.id);
	if (rc == 0)
		rc = new_backend_ids(cfg, v.backends, v.n_backends);
	if (rc != 0) {
		rc = rc == -ENOMEM ? fail_oom(out)
		                   : fail(out, LB_RPC_ERR_LIMIT, "no free VIP or backend id");
		goto cleanup;
	}
	vips = realloc(cfg->vips, (cfg->n_vips + 1) * sizeof(*vips));
	if (vips == NULL) {
		rc = fail_oom(out);
		goto cleanup;
	}
	cfg->vips = vips;
	vips[cfg->n_vips++] = v;
	return succeed(out, lb_config_vip_to_json(&vips[cfg->n_vips - 1]));
cleanup:
	free(v.backends);
	return rc;
}

static int
rpc_vip_remove(struct txn *t, const json_t *params, struct outcome *out)
{
	struct lb_cfg_vip ref;
	struct lb_config *cfg;
	int vi;

	if (decode_vip_ref(t, params, "", &ref, out) != 0)
		return out->code;
	vi = find_vip(view(t), &ref);
	if (vi < 0)
		return fail_no_vip(out, &ref);
	cfg = edit(t);
	if (cfg == NULL)
		return fail_oom(out);
	free(cfg->vips[vi].backends);
	memmove(&cfg->vips[vi], &cfg->vips[vi + 1],
	        (cfg->n_vips - (uint32_t)vi - 1) * sizeof(cfg->vips[0]));
	cfg->n_vips--;
	return succeed(out, json_object());
}

static int
rpc_backend_add(struct txn *t, const json_t *params, struct outcome *out)
{
	static const char *const keys[] = {"vip", "address", "weight", "name", "state", NULL};
	const struct lb_cfg_vip *ov;
	struct lb_cfg_backend b, *bes;
	struct lb_cfg_vip ref, *v;
	struct lb_config *cfg;
	char s[96], a[64], id[LB_NAME_MAX + 48], oid[LB_NAME_MAX + 48];
	int vi, rc;

	if (check_keys(out, params, "", keys) != 0 ||
	    decode_vip_member(t, params, &ref, out) != 0 ||
	    decode_backend_fields(t, params, &b, out) != 0)
		return out->code;
	vi = find_vip(view(t), &ref);
	if (vi < 0)
		return fail_no_vip(out, &ref);
	ov = &view(t)->vips[vi];
	lb_ip_to_str(b.af, &b.addr, a, sizeof(a));
	if (find_backend(ov, &b) >= 0)
		return fail(out, LB_RPC_ERR_EXISTS, "backend %s already in VIP %s", a,
		            vip_str(&ref, s, sizeof(s)));
	/* The Maglev permutation derives from the identity: it must be unique too. */
	lb_cfg_backend_identity(&b, id, sizeof(id));
	for (uint32_t j = 0; j < ov->n_backends; j++)
		if (strcmp(lb_cfg_backend_identity(&ov->backends[j], oid, sizeof(oid)), id) == 0)
			return fail(out, LB_RPC_ERR_EXISTS,
			            "a backend with identity \"%s\" is already in VIP %s", id,
			            vip_str(&ref, s, sizeof(s)));
	if (ov->n_backends >= LB_CFG_MAX_BACKENDS_PER_VIP)
		return fail(out, LB_RPC_ERR_LIMIT, "too many backends (at most %u per VIP)",
		            LB_CFG_MAX_BACKENDS_PER_VIP);
	if (lb_config_backend_count(view(t)) >= LB_MAX_BACKENDS)
		return fail(out, LB_RPC_ERR_LIMIT, "too many backends in all (at most %u)",
		            LB_MAX_BACKENDS);
	cfg = edit(t);
	if (cfg == NULL)
		return fail_oom(out);
	rc = new_backend_ids(cfg, &b, 1);
	if (rc != 0)
		return rc == -ENOMEM ? fail_oom(out)
		                     : fail(out, LB_RPC_ERR_LIMIT, "no free backend id");
	v = &cfg->vips[vi];
	bes = realloc(v->backends, (v->n_backends + 1) * sizeof(*bes));
	if (bes == NULL)
		return fail_oom(out);
	v->backends = bes;
	bes[v->n_backends++] = b;
	return succeed(out, lb_config_backend_to_json(&bes[v->n_backends - 1]));
}

static int
rpc_backend_remove(struct txn *t, const json_t *params, struct outcome *out)
{
	static const char *const keys[] = {"vip", "address", NULL};
	struct lb_cfg_backend b;
	struct lb_config *cfg;
	struct lb_cfg_vip *v;
	int vi, bi;

	if (check_keys(out, params, "", keys) != 0 ||
	    find_vip_backend(t, params, &b, &vi, &bi, out) != 0)
		return out->code;
	cfg = edit(t);
	if (cfg == NULL)
		return fail_oom(out);
	v = &cfg->vips[vi];
	memmove(&v->backends[bi], &v->backends[bi + 1],
	        (v->n_backends - (uint32_t)bi - 1) * sizeof(v->backends[0]));
	v->n_backends--;
	return succeed(out, json_object());
}

static int
rpc_backend_set(struct txn *t, const json_t *params, struct outcome *out)
{
	static const char *const keys[] = {"vip", "address", "weight", "state", NULL};
	struct lb_cfg_backend b, *cur;
	struct lb_config *cfg;
	int vi, bi;

	if (check_keys(out, params, "", keys) != 0)
		return out->code;
	if (json_object_get(params, "weight") == NULL && json_object_get(params, "state") == NULL)
		return fail(out, LB_RPC_ERR_INVALID_PARAMS,
		            "weight, state: missing (at least one is required)");
	if (find_vip_backend(t, params, &b, &vi, &bi, out) != 0)
		return out->code;
	cfg = edit(t);
	if (cfg == NULL)
		return fail_oom(out);
	cur = &cfg->vips[vi].backends[bi];
	if (json_object_get(params, "weight") != NULL)
		cur->weight = b.weight;
	if (json_object_get(params, "state") != NULL)
		cur->state = b.state;
	return succeed(out, lb_config_backend_to_json(cur));
}

static int
rpc_stats(struct txn *t, const json_t *params, struct outcome *out)
{
	const struct lb_snapshot *s;
	json_t *st;

	if (check_keys(out, params, "", no_keys) != 0)
		return out->code;
	st = t->ops->stats(t->ops->arg);
	if (st == NULL || !json_is_object(st)) {
		json_decref(st);
		return fail(out, LB_RPC_ERR_INTERNAL, "stats unavailable");
	}
	s = t->ops->snapshot(t->ops->arg);
	if (json_object_set_new(st, "generation",
	                        json_integer(s != NULL ? (json_int_t)s->generation : 0)) != 0) {
		json_decref(st);
		return fail_oom(out);
	}
	return succeed(out, st);
}

static const struct lb_vip *
find_snapshot_vip(const struct lb_snapshot *s, const struct lb_cfg_vip *ref)
{
	for (uint32_t i = 0; s != NULL && i < s->n_vips; i++) {
		const struct lb_vip *v = &s->vips[i];

		if (v->af == ref->af && v->proto == ref->proto && v->port == htons(ref->port) &&
		    memcmp(&v->addr, &ref->addr, sizeof(v->addr)) == 0)
			return v;
	}
	return NULL;
}

/* The backend address of every slot; one shared string per backend id. */
static json_t *
raw_table(const struct lb_snapshot *s, const struct lb_vip *sv)
{
	json_t **names = calloc(s->n_backends ? s->n_backends : 1, sizeof(*names));
	json_t *table = json_array();
	char a[64];

	if (names == NULL || table == NULL)
		goto error;
	for (uint32_t i = 0; i < s->table_size; i++) {
		uint16_t id = sv->table[i];
		json_t *e = json_null();

		if (id != LB_BACKEND_NONE && id < s->n_backends) {
			if (names[id] == NULL)
				names[id] = json_string(lb_ip_to_str(
				        s->backends[id].af, &s->backends[id].addr, a, sizeof(a)));
			e = names[id];
		}
		if (json_array_append(table, e) != 0)
			goto error;
	}
	goto cleanup;
error:
	json_decref(table);
	table = NULL;
cleanup:
	for (uint32_t i = 0; names != NULL && i < s->n_backends; i++)
		json_decref(names[i]);
	free(names);
	return table;
}

/*
 * The published table (what workers use now), so the running configuration,
 * not the batch's working copy, maps its backend ids to addresses and names.
 */
static int
rpc_maglev_table(struct txn *t, const json_t *params, struct outcome *out)
{
	static const char *const keys[] = {"vip", "raw", NULL};
	const struct lb_config *cfg = t->ops->config(t->ops->arg);
	const struct lb_snapshot *s = t->ops->snapshot(t->ops->arg);
	const json_t *raw = json_object_get(params, "raw");
	const struct lb_cfg_vip *cv;
	const struct lb_vip *sv;
	struct lb_cfg_vip ref;
	uint32_t *slots = NULL;
	json_t *res = NULL, *bes;
	char a[64];
	int vi;

	if (check_keys(out, params, "", keys) != 0 || decode_vip_member(t, params, &ref, out) != 0)
		return out->code;
	if (raw != NULL && !json_is_boolean(raw))
		return fail(out, LB_RPC_ERR_INVALID_PARAMS, "raw: expected a boolean, got %s",
		            lb_config_json_type(raw));
	vi = find_vip(cfg, &ref);
	sv = find_snapshot_vip(s, &ref);
	if (vi < 0 || sv == NULL)
		return fail_no_vip(out, &ref);
	cv = &cfg->vips[vi];

	slots = calloc(s->n_backends ? s->n_backends : 1, sizeof(*slots));
	bes = json_array();
	res = json_pack("{s:i, s:i, s:o}", "table_size", (json_int_t)s->table_size, "generation",
	                (json_int_t)s->generation, "backends", bes);
	if (slots == NULL || res == NULL)
		goto oom;
	for (uint32_t i = 0; i < s->table_size; i++)
		if (sv->table[i] < s->n_backends)
			slots[sv->table[i]]++;
	for (uint32_t j = 0; j < cv->n_backends; j++) {
		const struct lb_cfg_backend *b = &cv->backends[j];
		uint32_t n = b->id < s->n_backends && s->backends[b->id].vip_id == sv->id
		                     ? slots[b->id]
		                     : 0;
		json_t *o = json_pack("{s:s, s:i}", "address",
		                      lb_ip_to_str(b->af, &b->addr, a, sizeof(a)), "slots",
		                      (json_int_t)n);

		if (o != NULL && b->name[0] != '\0' &&
		    json_object_set_new(o, "name", json_string(b->name)) != 0) {
			json_decref(o);
			o = NULL;
		}
		if (json_array_append_new(bes, o) != 0)
			goto oom;
	}
	if (raw != NULL && json_is_true(raw) &&
	    json_object_set_new(res, "table", raw_table(s, sv)) != 0)
		goto oom;
	free(slots);
	return succeed(out, res);
oom:
	free(slots);
	json_decref(res);
	return fail_oom(out);
}

static int
rpc_config_get(struct txn *t, const json_t *params, struct outcome *out)
{
	if (check_keys(out, params, "", no_keys) != 0)
		return out->code;
	return succeed(out, lb_config_to_json(view(t)));
}

/*
 * Writes the running configuration; a batch's own changes reach the file
 * through ops->apply. On success ops->save may leave the path it wrote in err.
 */
static int
rpc_config_save(struct txn *t, const json_t *params, struct outcome *out)
{
	char err[MSG_LEN] = "";
	int rc;

	if (check_keys(out, params, "", no_keys) != 0)
		return out->code;
	rc = t->ops->save(t->ops->arg, err, sizeof(err));
	if (rc == -ENOENT)
		return fail(out, LB_RPC_ERR_INTERNAL, "no state file configured (--state)");
	if (rc != 0)
		return fail(out, LB_RPC_ERR_INTERNAL, "%s", err[0] ? err : strerror(-rc));
	if (err[0] == '\0')
		return succeed(out, json_object());
	return succeed(out, json_pack("{s:s}", "path", err));
}

/* ---- Hot keys (runtime state of the hot-key controller, not configuration) ---- */

static const char *const key_mode_names[] = {"5tuple", "src_ip", "src_ip_dport"};

static int
fail_hot_disabled(struct outcome *o)
{
	return fail(o, LB_RPC_ERR_INTERNAL, "hot keys are disabled (hot.enabled is false)");
}

/* A number (integer or real) at params.name within lo..hi; lo excluded if lo_open. */
static int
decode_real(struct outcome *o, const json_t *params, const char *name, double lo, bool lo_open,
            double hi, double *v)
{
	const json_t *j = json_object_get(params, name);

	if (!json_is_number(j))
		return fail(o, LB_RPC_ERR_INVALID_PARAMS, "%s: expected a number, got %s", name,
		            lb_config_json_type(j));
	*v = json_number_value(j);
	if ((lo_open ? *v <= lo : *v < lo) || *v > hi)
		return fail(o, LB_RPC_ERR_INVALID_PARAMS, "%s: %g out of range %c%g, %g]", name, *v,
		            lo_open ? '(' : '[', lo, hi);
	return 0;
}

/* An integer member at path.name (path "" for params) within lo..hi. */
static int
decode_int(struct outcome *o, const json_t *obj, const char *path, const char *name, json_int_t lo,
           json_int_t hi, json_int_t *v)
{
	const json_t *j = json_object_get(obj, name);

	if (!json_is_integer(j))
		return fail(o, LB_RPC_ERR_INVALID_PARAMS, "%s%s%s: expected an integer, got %s",
		            path, *path ? "." : "", name, lb_config_json_type(j));
	*v = json_integer_value(j);
	if (*v < lo || *v > hi)
		return fail(o, LB_RPC_ERR_INVALID_PARAMS, "%s%s%s: %lld out of range [%lld, %lld]",
		            path, *path ? "." : "", name, (long long)*v, (long long)lo,
		            (long long)hi);
	return 0;
}

static int
rpc_hot_list(struct txn *t, const json_t *params, struct outcome *out)
{
	if (t->ops->hot_list == NULL)
		return fail_hot_disabled(out);
	if (check_keys(out, params, "", no_keys) != 0)
		return out->code;
	return succeed(out, t->ops->hot_list(t->ops->arg));
}

static int
rpc_hot_events(struct txn *t, const json_t *params, struct outcome *out)
{
	if (t->ops->hot_events == NULL)
		return fail_hot_disabled(out);
	if (check_keys(out, params, "", no_keys) != 0)
		return out->code;
	return succeed(out, t->ops->hot_events(t->ops->arg));
}

static int
rpc_hot_set(struct txn *t, const json_t *params, struct outcome *out)
{
	static const char *const keys[] = {"threshold",      "threshold_low", "epsilon",
	                                   "demote_windows", "window_ms",     NULL};
	char err[MSG_LEN] = "";
	double th = 0, low = 0, eps;
	json_int_t n;
	json_t *list, *p;
	int rc;

	if (t->ops->hot_set == NULL || t->ops->hot_list == NULL)
		return fail_hot_disabled(out);
	if (check_keys(out, params, "", keys) != 0)
		return out->code;
	if (json_object_size(params) == 0)
		return fail(out, LB_RPC_ERR_INVALID_PARAMS,
		            "threshold, threshold_low, epsilon, demote_windows, window_ms: missing "
		            "(at least one is required)");
	if ((json_object_get(params, "threshold") != NULL &&
	     decode_real(out, params, "threshold", 0, true, 1, &th) != 0) ||
	    (json_object_get(params, "threshold_low") != NULL &&
	     decode_real(out, params, "threshold_low", 0, true, 1, &low) != 0) ||
	    (json_object_get(params, "epsilon") != NULL &&
	     decode_real(out, params, "epsilon", 0.001, false, 100, &eps) != 0) ||
	    (json_object_get(params, "demote_windows") != NULL &&
	     decode_int(out, params, "", "demote_windows", 1, 1000, &n) != 0) ||
	    (json_object_get(params, "window_ms") != NULL &&
	     decode_int(out, params, "", "window_ms", 10, 60000, &n) != 0))
		return out->code;
	if (json_object_get(params, "threshold") != NULL &&
	    json_object_get(params, "threshold_low") != NULL && low > th)
		return fail(out, LB_RPC_ERR_INVALID_PARAMS,
		            "threshold_low: %g is above threshold %g", low, th);
	rc = t->ops->hot_set(t->ops->arg, params, err, sizeof(err));
	if (rc == -EINVAL)
		return fail(out, LB_RPC_ERR_INVALID_PARAMS, "%s",
		            err[0] ? err : "invalid hot-key parameters");
	if (rc != 0)
		return fail(out, LB_RPC_ERR_INTERNAL, "%s", err[0] ? err : strerror(-rc));
	/* The parameters as they now are (what the controller kept). */
	list = t->ops->hot_list(t->ops->arg);
	p = json_object_get(list, "params");
	if (!json_is_object(p)) {
		json_decref(list);
		return fail(out, LB_RPC_ERR_INTERNAL,
		            "parameters changed, but reading them back failed");
	}
	json_incref(p);
	json_decref(list);
	return succeed(out, p);
}

/* key.name, an address of the VIP's family. */
static int
decode_key_addr(struct outcome *o, const json_t *key, const char *name, const struct lb_cfg_vip *v,
                union lb_ip *ip)
{
	const json_t *j = json_object_get(key, name);
	char vs[96];
	uint8_t af;

	if (!json_is_string(j))
		return fail(o, LB_RPC_ERR_INVALID_PARAMS, "key.%s: expected a string, got %s", name,
		            lb_config_json_type(j));
	if (lb_ip_from_str(json_string_value(j), &af, ip) != 0)
		return fail(o, LB_RPC_ERR_INVALID_PARAMS,
		            "key.%s: not an IPv4 or IPv6 address: \"%s\"", name,
		            json_string_value(j));
	if (af != v->af)
		return fail(o, LB_RPC_ERR_INVALID_PARAMS, "key.%s: an %s address, but VIP %s is %s",
		            name, af == LB_AF_INET ? "IPv4" : "IPv6", vip_str(v, vs, sizeof(vs)),
		            v->af == LB_AF_INET ? "IPv4" : "IPv6");
	return 0;
}

/*
 * params.key as the flow key the data path builds for the VIP's key mode
 * (dataplane/parse.c, lb_vip_key_hash): zeroed, then src and af; plus dport
 * for src_ip_dport; plus dst (the VIP), sport, dport and proto for 5tuple.
 * Ports in network byte order. A field the mode does not use is rejected, so
 * an operator never believes a key is narrower than it is.
 */
static int
decode_flow_key(struct outcome *o, const json_t *params, const struct lb_cfg_vip *v,
                struct lb_flow_key *fk)
{
	static const char *const keys[] = {"src", "dst", "sport", "dport", "protocol", NULL};
	const json_t *key = json_object_get(params, "key");
	const char *mode = v->key_mode < 3 ? key_mode_names[v->key_mode] : "?";
	bool use_dport = v->key_mode != LB_KEY_SRC_IP;
	bool use_5 = v->key_mode == LB_KEY_5TUPLE;
	const char *used[] = {"src", "dst", "sport", "dport", "protocol"};
	bool allowed[] = {true, use_5, use_5, use_dport, use_5};
	char vs[96];
	json_int_t port;
	union lb_ip ip;

	if (check_keys(o, key, "key", keys) != 0)
		return o->code;
	for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
		if (!allowed[i] && json_object_get(key, used[i]) != NULL)
			return fail(o, LB_RPC_ERR_INVALID_PARAMS,
			            "key.%s: not used by the VIP's key mode %s", used[i], mode);

	memset(fk, 0, sizeof(*fk));
	fk->af = v->af;
	if (json_object_get(key, "src") == NULL)
		return fail(o, LB_RPC_ERR_INVALID_PARAMS, "key.src: missing (required)");
	if (decode_key_addr(o, key, "src", v, &fk->src) != 0)
		return o->code;
	if (use_dport) {
		/* A VIP with a port sees only that port: it is the default and the only value. */
		if (json_object_get(key, "dport") == NULL) {
			if (v->port == 0)
				return fail(o, LB_RPC_ERR_INVALID_PARAMS,
				            "key.dport: missing (required by key mode %s on a VIP "
				            "of every port)",
				            mode);
			port = v->port;
		} else if (decode_int(o, key, "key", "dport", 0, 65535, &port) != 0) {
			return o->code;
		} else if (v->port != 0 && port != v->port) {
			return fail(o, LB_RPC_ERR_INVALID_PARAMS,
			            "key.dport: %lld is not the port of VIP %s", (long long)port,
			            vip_str(v, vs, sizeof(vs)));
		}
		fk->dport = htons((uint16_t)port);
	}
	if (!use_5)
		return 0;
	if (json_object_get(key, "sport") == NULL)
		return fail(o, LB_RPC_ERR_INVALID_PARAMS,
		            "key.sport: missing (required by key mode 5tuple)");
	if (decode_int(o, key, "key", "sport", 0, 65535, &port) != 0)
		return o->code;
	fk->sport = htons((uint16_t)port);
	fk->dst = v->addr;
	if (json_object_get(key, "dst") != NULL) {
		if (decode_key_addr(o, key, "dst", v, &ip) != 0)
			return o->code;
		if (memcmp(&ip, &v->addr, sizeof(ip)) != 0)
			return fail(o, LB_RPC_ERR_INVALID_PARAMS,
			            "key.dst: not the address of VIP %s",
			            vip_str(v, vs, sizeof(vs)));
	}
	fk->proto = v->proto;
	if (json_object_get(key, "protocol") != NULL) {
		const json_t *p = json_object_get(key, "protocol");
		const char *s = json_string_value(p);

		if (!json_is_string(p))
			return fail(o, LB_RPC_ERR_INVALID_PARAMS,
			            "key.protocol: expected a string, got %s",
			            lb_config_json_type(p));
		if (strcmp(s, "tcp") != 0 && strcmp(s, "udp") != 0)
			return fail(o, LB_RPC_ERR_INVALID_PARAMS,
			            "key.protocol: expected \"tcp\" or \"udp\", got \"%s\"", s);
		if ((strcmp(s, "tcp") == 0 ? IPPROTO_TCP : IPPROTO_UDP) != v->proto)
			return fail(o, LB_RPC_ERR_INVALID_PARAMS,
			            "key.protocol: not the protocol of VIP %s",
			            vip_str(v, vs, sizeof(vs)));
	}
	return 0;
}

static int
hot_pin_common(struct txn *t, const json_t *params, bool pin, struct outcome *out)
{
	static const char *const pin_keys[] = {"vip", "key", "replicas", NULL};
	static const char *const unpin_keys[] = {"vip", "key", NULL};
	const struct lb_cfg_vip *v;
	struct lb_flow_key fk;
	struct lb_cfg_vip ref;
	char err[MSG_LEN] = "", vs[96];
	const json_t *key;
	json_int_t r = 0;
	int vi, rc;

	if (t->ops->hot_pin == NULL)
		return fail_hot_disabled(out);
	if (check_keys(out, params, "", pin ? pin_keys : unpin_keys) != 0 ||
	    decode_vip_member(t, params, &ref, out) != 0)
		return out->code;
	if (pin && json_object_get(params, "replicas") != NULL &&
	    decode_int(out, params, "", "replicas", 0, LB_HOT_MAX_REPLICAS, &r) != 0)
		return out->code;
	key = json_object_get(params, "key");
	if (key == NULL)
		return fail(out, LB_RPC_ERR_INVALID_PARAMS, "key: missing (required)");
	if (!json_is_object(key))
		return fail(out, LB_RPC_ERR_INVALID_PARAMS, "key: expected an object, got %s",
		            lb_config_json_type(key));
	vi = find_vip(view(t), &ref);
	if (vi < 0)
		return fail_no_vip(out, &ref);
	v = &view(t)->vips[vi];
	if (decode_flow_key(out, params, v, &fk) != 0)
		return out->code;
	rc = t->ops->hot_pin(t->ops->arg, v->id, &fk, (uint16_t)r, pin, err, sizeof(err));
	if (rc == 0)
		return succeed(out, json_object());
	if (rc == -ENOENT && err[0] != '\0')
		return fail(out, LB_RPC_ERR_NOT_FOUND, "%s", err);
	if (rc == -ENOENT)
		return fail(out, LB_RPC_ERR_NOT_FOUND,
		            pin ? "VIP %s is not running (not in the published snapshot)"
		                : "no override of this key in VIP %s",
		            vip_str(v, vs, sizeof(vs)));
	if (rc == -ENOSPC)
		return fail(out, LB_RPC_ERR_LIMIT, "%s",
		            err[0] ? err : "too many hot-key overrides");
	if (rc == -EINVAL)
		return fail(out, LB_RPC_ERR_INVALID_PARAMS, "%s", err[0] ? err : "invalid key");
	return fail(out, LB_RPC_ERR_INTERNAL, "%s", err[0] ? err : strerror(-rc));
}

static int
rpc_hot_pin(struct txn *t, const json_t *params, struct outcome *out)
{
	return hot_pin_common(t, params, true, out);
}

static int
rpc_hot_unpin(struct txn *t, const json_t *params, struct outcome *out)
{
	return hot_pin_common(t, params, false, out);
}

/* ---- Drain (runtime state of the route announcer, not configuration) ---- */

static int
drain_common(struct txn *t, const json_t *params, bool on, struct outcome *out)
{
	if (t->ops->drain == NULL)
		return fail(out, LB_RPC_ERR_INTERNAL,
		            "no route announcer configured (start spillwayd with --bird-include "
		            "and --bird-socket)");
	if (check_keys(out, params, "", no_keys) != 0)
		return out->code;
	return succeed(out, t->ops->drain(t->ops->arg, on));
}

static int
rpc_drain(struct txn *t, const json_t *params, struct outcome *out)
{
	return drain_common(t, params, true, out);
}

static int
rpc_undrain(struct txn *t, const json_t *params, struct outcome *out)
{
	return drain_common(t, params, false, out);
}

#define VIP_REF "{address, port, protocol}"
#define HOT_KEY "{src, dport? (src_ip_dport, 5tuple), sport? dst? protocol? (5tuple)}"

static const struct method methods[] = {
        {"version", rpc_version, false, "version", false},
        {"vip_list", rpc_vip_list, false, "vip_list", false},
        {"vip_get", rpc_vip_get, false, "vip_get " VIP_REF, false},
        {"vip_add", rpc_vip_add, true,
         "vip_add {address, port, protocol, key?, encap?, backends?: [{address, weight?, name?, "
         "state?}]}",
         false},
        {"vip_remove", rpc_vip_remove, true, "vip_remove " VIP_REF, false},
        {"backend_add", rpc_backend_add, true,
         "backend_add {vip: " VIP_REF ", address, weight?, name?, state?}", false},
        {"backend_remove", rpc_backend_remove, true, "backend_remove {vip: " VIP_REF ", address}",
         false},
        {"backend_set", rpc_backend_set, true,
         "backend_set {vip: " VIP_REF ", address, weight?, state?} (weight or state)", false},
        {"stats", rpc_stats, false, "stats", false},
        {"maglev_table", rpc_maglev_table, false, "maglev_table {vip: " VIP_REF ", raw?}", false},
        {"config_get", rpc_config_get, false, "config_get", false},
        {"config_save", rpc_config_save, false, "config_save", false},
        {"hot_list", rpc_hot_list, false, "hot_list", false},
        {"hot_events", rpc_hot_events, false, "hot_events", false},
        {"hot_set", rpc_hot_set, false,
         "hot_set {threshold?, threshold_low?, epsilon?, demote_windows?, window_ms?} (at least "
         "one)",
         true},
        {"hot_pin", rpc_hot_pin, false, "hot_pin {vip: " VIP_REF ", key: " HOT_KEY ", replicas?}",
         true},
        {"hot_unpin", rpc_hot_unpin, false, "hot_unpin {vip: " VIP_REF ", key: " HOT_KEY "}", true},
        {"drain", rpc_drain, false, "drain", true},
        {"undrain", rpc_undrain, false, "undrain", true},
};

static const struct method *
find_method(const char *name)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(methods[i].name, name) == 0)
			return &methods[i];
	return NULL;
}

/* ---- Envelope, execution, replies ---- */

/* Check one request object; on failure out holds the error (replied to even without id). */
static int
decode_request(const json_t *req, struct call *c)
{
	static const char *const members[] = {"jsonrpc", "method", "params", "id", NULL};
	const json_t *id, *v, *p;
	const char *k;
	json_t *val;

	if (!json_is_object(req))
		return fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		            "invalid request: expected a request object, got %s",
		            lb_config_json_type(req));
	id = json_object_get(req, "id");
	if (id != NULL && !json_is_string(id) && !json_is_number(id) && !json_is_null(id))
		return fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		            "invalid request: id must be a string, a number or null, got %s",
		            lb_config_json_type(id));
	c->id = id;
	json_object_foreach ((json_t *)req, k, val) {
		const char *const *m;

		for (m = members; *m != NULL && strcmp(*m, k) != 0; m++)
			;
		if (*m == NULL)
			return fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
			            "invalid request: unknown member \"%s\"", k);
	}
	v = json_object_get(req, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		return fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		            "invalid request: jsonrpc must be \"2.0\"");
	v = json_object_get(req, "method");
	if (!json_is_string(v))
		return fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		            "invalid request: method must be a string");
	p = json_object_get(req, "params");
	if (p != NULL && !json_is_object(p))
		return fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
		            "invalid request: params must be an object, got %s",
		            lb_config_json_type(p));
	c->params = p;
	c->notification = id == NULL;
	c->m = find_method(json_string_value(v));
	if (c->m == NULL)
		return fail(&c->out, LB_RPC_ERR_METHOD_NOT_FOUND, "method not found: %s",
		            json_string_value(v));
	return 0;
}

/* Replace a call's outcome by an error (its result, if any, is dropped). */
static void
override(struct outcome *o, int code, const char *msg)
{
	json_decref(o->result);
	o->result = NULL;
	json_decref(o->data);
	o->data = NULL;
	fail(o, code, "%s", msg);
}

/* {"field": the path the message starts with, "usage": the method's params}. */
static json_t *
params_error_data(const struct outcome *o, const struct method *m)
{
	const char *end = strstr(o->msg, ": ");
	json_t *d = json_object();

	if (d == NULL ||
	    (end != NULL &&
	     json_object_set_new(d, "field", json_stringn(o->msg, (size_t)(end - o->msg))) != 0) ||
	    json_object_set_new(d, "usage", json_string(m->usage)) != 0) {
		json_decref(d);
		return NULL;
	}
	return d;
}

/*
 * Run calls in order against one working copy. The first failure aborts the
 * rest and discards the copy; if everything succeeded and something changed,
 * one ops->apply makes it the running configuration.
 */
static void
run_calls(const struct lb_rpc_ops *ops, struct call *calls, size_t n, const json_t *no_params)
{
	struct txn t = {ops, NULL};
	bool changed = false;
	char err[MSG_LEN];
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		struct call *c = &calls[i];

		if (c->m->handler(&t, c->params ? c->params : no_params, &c->out) != 0) {
			if (c->out.code == LB_RPC_ERR_INVALID_PARAMS)
				c->out.data = params_error_data(&c->out, c->m);
			break;
		}
		changed = changed || c->m->mutates;
	}
	if (i < n) {
		for (size_t j = 0; j < n; j++)
			if (j != i)
				override(&calls[j].out, LB_RPC_ERR_ABORTED, "transaction aborted");
		lb_config_free(t.work);
		return;
	}
	if (!changed) {
		lb_config_free(t.work);
		return;
	}
	err[0] = '\0';
	rc = ops->apply(ops->arg, t.work, err, sizeof(err));
	if (rc != 0)
		for (size_t j = 0; j < n; j++)
			override(&calls[j].out, LB_RPC_ERR_INTERNAL,
			         err[0] ? err : "cannot apply the configuration");
}

/*
 * A message as a JSON string. Messages are cut to MSG_LEN bytes and may end
 * in part of a UTF-8 sequence (at most 3 bytes), which Jansson refuses.
 */
static json_t *
message(const char *msg)
{
	char buf[MSG_LEN];
	json_t *s = json_string(msg);
	size_t n;

	snprintf(buf, sizeof(buf), "%s", msg);
	n = strlen(buf);
	for (int cut = 0; s == NULL && cut < 4 && n > 0; cut++) {
		buf[--n] = '\0';
		s = json_string(buf);
	}
	return s != NULL ? s : json_string("(message is not valid UTF-8)");
}

static json_t *
error_object(int code, const char *msg, json_t *data)
{
	json_t *e = json_pack("{s:i, s:o}", "code", code, "message", message(msg));

	if (e != NULL && data != NULL && json_object_set(e, "data", data) != 0) {
		json_decref(e);
		return NULL;
	}
	return e;
}

static json_t *
reply(const json_t *id, const struct outcome *o)
{
	json_t *idv = id != NULL ? json_incref((json_t *)id) : json_null();

	if (o->code == 0)
		return json_pack("{s:s, s:o, s:O}", "jsonrpc", "2.0", "id", idv, "result",
		                 o->result);
	return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id", idv, "error",
	                 error_object(o->code, o->msg, o->data));
}

static char *
dump(json_t *r)
{
	char *s;

	if (r == NULL)
		return lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
	s = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	if (s == NULL)
		return lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
	return s;
}

char *
lb_rpc_handle(const struct lb_rpc_ops *ops, const char *line, size_t len)
{
	struct call *calls = NULL;
	json_t *root, *no_params = NULL, *replies = NULL;
	bool batch, valid = true, oom = false;
	json_error_t je;
	char *text = NULL;
	size_t n;

	root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (root == NULL) {
		char msg[MSG_LEN];

		snprintf(msg, sizeof(msg), "parse error: %s (at byte %d)", je.text, je.position);
		return lb_rpc_error_reply(LB_RPC_ERR_PARSE, msg);
	}
	batch = json_is_array(root);
	n = batch ? json_array_size(root) : 1;
	if (batch && n == 0) {
		json_decref(root);
		return lb_rpc_error_reply(LB_RPC_ERR_INVALID_REQUEST,
		                          "invalid request: empty batch");
	}
	if (batch && n > LB_RPC_MAX_BATCH) {
		char msg[MSG_LEN];

		snprintf(msg, sizeof(msg), "invalid request: batch of %zu calls (at most %d)", n,
		         LB_RPC_MAX_BATCH);
		json_decref(root);
		return lb_rpc_error_reply(LB_RPC_ERR_INVALID_REQUEST, msg);
	}
	calls = calloc(n, sizeof(*calls));
	no_params = json_object();
	if (calls == NULL || no_params == NULL) {
		text = lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
		goto cleanup;
	}

	/* Every envelope is checked before anything runs: one bad one aborts all. */
	for (size_t i = 0; i < n; i++) {
		struct call *c = &calls[i];

		if (decode_request(batch ? json_array_get(root, i) : root, c) != 0)
			valid = false;
		else if (batch && c->m->no_batch) {
			fail(&c->out, LB_RPC_ERR_INVALID_REQUEST,
			     "invalid request: %s cannot be part of a batch (it changes runtime "
			     "state, which a transaction cannot roll back)",
			     c->m->name);
			valid = false;
		}
	}
	if (valid)
		run_calls(ops, calls, n, no_params);
	else
		for (size_t i = 0; i < n; i++)
			if (calls[i].out.code == 0)
				override(&calls[i].out, LB_RPC_ERR_ABORTED, "transaction aborted");

	if (!batch) {
		if (!calls[0].notification)
			text = dump(reply(calls[0].id, &calls[0].out));
		goto cleanup;
	}
	replies = json_array();
	for (size_t i = 0; replies != NULL && i < n; i++)
		if (!calls[i].notification &&
		    json_array_append_new(replies, reply(calls[i].id, &calls[i].out)) != 0)
			oom = true;
	if (replies == NULL || oom)
		text = lb_rpc_error_reply(LB_RPC_ERR_INTERNAL, "out of memory");
	else if (json_array_size(replies) > 0)
		text = dump(json_incref(replies));
cleanup:
	for (size_t i = 0; calls != NULL && i < n; i++) {
		json_decref(calls[i].out.result);
		json_decref(calls[i].out.data);
	}
	free(calls);
	json_decref(replies);
	json_decref(no_params);
	json_decref(root);
	return text;
}

char *
lb_rpc_error_reply(int code, const char *message_text)
{
	json_t *r =
	        json_pack("{s:s, s:n, s:o}", "jsonrpc", "2.0", "id", "error",
	                  error_object(code, message_text != NULL ? message_text : "error", NULL));
	char *s;

	if (r == NULL)
		return NULL;
	s = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	return s;
}
