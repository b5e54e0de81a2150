/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The read-only methods of the control socket and config_save: version,
 * stats, the published Maglev table of a VIP (its raw slots by range, within
 * the request's reply and scan budgets), and the configuration (as a
 * document, or written to the state file). SPILLWAY_VERSION comes from the
 * build (meson's project version).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "control/rpc/rpc_internal.h"

#define PROTOCOL_VERSION 1

static int
rpc_version(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	(void)t;
	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	return lb_rpc_succeed(out, json_pack("{s:s, s:i}", "version", SPILLWAY_VERSION, "protocol",
	                                     PROTOCOL_VERSION));
}

static int
rpc_stats(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	const struct lb_snapshot *s;
	json_t *st;

	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	st = t->ops->stats(t->ops->arg);
	if (st == NULL || !json_is_object(st)) {
		json_decref(st);
		return lb_rpc_fail(out, LB_RPC_ERR_INTERNAL, "stats unavailable");
	}
	s = t->ops->snapshot(t->ops->arg);
	if (json_object_set_new(st, "generation",
	                        json_integer(s != NULL ? (json_int_t)s->generation : 0)) != 0) {
		json_decref(st);
		return lb_rpc_fail_oom(out);
	}
	return lb_rpc_succeed(out, st);
}

static const struct lb_vip *
find_snapshot_vip(const struct lb_snapshot *s, const struct lb_cfg_vip *ref)
{
	for (uint32_t i = 0; s != NULL && i < s->n_vips; i++) {
		const struct lb_vip *v = &s->vips[i];
		const struct lb_cfg_vip id = {
		        .addr = v->addr, .af = v->af, .proto = v->proto, .port = ntohs(v->port)};

		if (lb_cfg_vip_same(&id, ref))
			return v;
	}
	return NULL;
}

/* The backend address of slots [from, from + count); one shared string per backend id. */
static json_t *
raw_table(const struct lb_snapshot *s, const struct lb_vip *sv, uint32_t from, uint32_t count)
{
	json_t **names = calloc(s->n_backends ? s->n_backends : 1, sizeof(*names));
	json_t *table = json_array();
	char a[64];

	if (names == NULL || table == NULL)
		goto error;
	for (uint32_t i = from; i < from + count; i++) {
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
 * The bytes of slots [from, from + count) as a compact JSON array of address
 * strings and nulls, as raw_table() and json_dumps() make it (addresses need
 * no escaping).
 */
static size_t
raw_table_bytes(const struct lb_snapshot *s, const struct lb_vip *sv, uint32_t from, uint32_t count)
{
	uint8_t *len = calloc(s->n_backends ? s->n_backends : 1, 1);
	size_t bytes = 2 + (count > 0 ? count - 1 : 0);
	char a[64];

	if (len == NULL)
		return SIZE_MAX;
	for (uint32_t i = from; i < from + count; i++) {
		uint16_t id = sv->table[i];

		if (id == LB_BACKEND_NONE || id >= s->n_backends) {
			bytes += 4; /* null */
			continue;
		}
		if (len[id] == 0)
			len[id] = (uint8_t)(strlen(lb_ip_to_str(s->backends[id].af,
			                                        &s->backends[id].addr, a,
			                                        sizeof(a))) +
			                    2);
		bytes += len[id];
	}
	free(len);
	return bytes;
}

/* An optional integer member in [lo, hi]; 0 (with *v set when present) or the error code. */
static int
opt_uint(struct lb_rpc_outcome *out, const json_t *params, const char *key, uint32_t lo,
         uint32_t hi, uint32_t *v)
{
	const json_t *j = json_object_get(params, key);
	json_int_t x;

	if (j == NULL)
		return 0;
	if (!json_is_integer(j))
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS,
		                   "%s: expected an integer, got %s", key, lb_config_json_type(j));
	x = json_integer_value(j);
	if (x < (json_int_t)lo || x > (json_int_t)hi)
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS, "%s: %lld out of range [%u, %u]",
		                   key, (long long)x, lo, hi);
	*v = (uint32_t)x;
	return 0;
}

/*
 * Which raw slots to answer: from (default 0) and count (default: to the
 * end; cut at the end), only with raw: true. Charges the slots scanned to
 * the request and refuses a table text over what is left of the reply
 * budget. 0 or the error code.
 */
static int
raw_range(struct lb_rpc_txn *t, const json_t *params, const struct lb_snapshot *s,
          const struct lb_vip *sv, bool raw, uint32_t *from, uint32_t *count,
          struct lb_rpc_outcome *out)
{
	uint64_t scan;
	size_t bytes;

	*from = 0;
	*count = s->table_size;
	if (!raw) {
		if (json_object_get(params, "from") != NULL)
			return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS,
			                   "from: only with raw: true");
		if (json_object_get(params, "count") != NULL)
			return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS,
			                   "count: only with raw: true");
	} else if (opt_uint(out, params, "from", 0, s->table_size - 1, from) != 0 ||
	           opt_uint(out, params, "count", 1, LB_MAGLEV_MAX_SIZE, count) != 0) {
		return out->code;
	}
	if (*count > s->table_size - *from)
		*count = s->table_size - *from;
	scan = (uint64_t)s->table_size + (raw ? *count : 0);
	if (scan > t->scan_left)
		return lb_rpc_fail(out, LB_RPC_ERR_TOO_LARGE,
		                   "request too costly: this call scans %llu table slots, %llu are "
		                   "left of the %u one request may scan; send fewer maglev_table "
		                   "calls per batch",
		                   (unsigned long long)scan, (unsigned long long)t->scan_left,
		                   LB_RPC_MAX_SCAN);
	t->scan_left -= scan;
	if (!raw)
		return 0;
	bytes = raw_table_bytes(s, sv, *from, *count);
	if (bytes > t->reply_left) {
		/* A count that fits, from the mean bytes per slot of this range. */
		uint64_t fit = (uint64_t)*count * (t->reply_left / 2) / bytes;

		return lb_rpc_fail(
		        out, LB_RPC_ERR_TOO_LARGE,
		        "reply too large: slots [%u, %u) of the raw table take %zu bytes, "
		        "%zu are left of the %zu one reply may take; ask for a slot range "
		        "with from and count (about %llu slots per call here)",
		        *from, *from + *count, bytes, t->reply_left, LB_RPC_MAX_REPLY,
		        (unsigned long long)(fit > 0 ? fit : 1));
	}
	return 0;
}

/*
 * The published table (what workers use now), so the running configuration,
 * not the batch's working copy, maps its backend ids to addresses and names.
 */
static int
rpc_maglev_table(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	static const char *const keys[] = {"vip", "raw", "from", "count", NULL};
	const struct lb_config *cfg = t->ops->config(t->ops->arg);
	const struct lb_snapshot *s = t->ops->snapshot(t->ops->arg);
	const json_t *raw = json_object_get(params, "raw");
	const struct lb_cfg_vip *cv;
	const struct lb_vip *sv;
	struct lb_cfg_vip ref;
	uint32_t *slots = NULL, from, count;
	json_t *res = NULL, *bes;
	char a[64];
	int vi;

	if (lb_rpc_check_keys(out, params, "", keys) != 0 ||
	    lb_rpc_decode_vip_member(t, params, &ref, out) != 0)
		return out->code;
	if (raw != NULL && !json_is_boolean(raw))
		return lb_rpc_fail(out, LB_RPC_ERR_INVALID_PARAMS,
		                   "raw: expected a boolean, got %s", lb_config_json_type(raw));
	vi = lb_rpc_find_vip(cfg, &ref);
	sv = find_snapshot_vip(s, &ref);
	if (vi < 0 || sv == NULL)
		return lb_rpc_fail_no_vip(out, &ref);
	cv = &cfg->vips[vi];
	if (raw_range(t, params, s, sv, json_is_true(raw), &from, &count, out) != 0)
		return out->code;

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
	if (json_is_true(raw) &&
	    (json_object_set_new(res, "from", json_integer(from)) != 0 ||
	     json_object_set_new(res, "table", raw_table(s, sv, from, count)) != 0))
		goto oom;
	free(slots);
	return lb_rpc_succeed(out, res);
oom:
	free(slots);
	json_decref(res);
	return lb_rpc_fail_oom(out);
}

static int
rpc_config_get(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	return lb_rpc_succeed(out, lb_config_to_json(lb_rpc_view(t)));
}

/* Every backend's health record and the recent health events. */
static int
rpc_health_list(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	const struct lb_rpc_ops *ops = t->ops;
	json_t *b, *e;

	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	if (ops->health_list == NULL || ops->health_events == NULL)
		return lb_rpc_fail(out, LB_RPC_ERR_INTERNAL, "health checks are not running");
	b = ops->health_list(ops->arg);
	e = ops->health_events(ops->arg);
	if (b == NULL || e == NULL) {
		json_decref(b);
		json_decref(e);
		return lb_rpc_fail_oom(out);
	}
	return lb_rpc_succeed(out, json_pack("{s:o, s:o}", "backends", b, "events", e));
}

/*
 * Writes the running configuration; a batch's own changes reach the file
 * through ops->apply. On success ops->save may leave the path it wrote in err.
 */
static int
rpc_config_save(struct lb_rpc_txn *t, const json_t *params, struct lb_rpc_outcome *out)
{
	char err[LB_RPC_MSG_LEN] = "";
	int rc;

	if (lb_rpc_check_keys(out, params, "", lb_rpc_no_keys) != 0)
		return out->code;
	rc = t->ops->save(t->ops->arg, err, sizeof(err));
	if (rc == -ENOENT)
		return lb_rpc_fail(out, LB_RPC_ERR_INTERNAL, "no state file configured (--state)");
	if (rc != 0)
		return lb_rpc_fail(out, LB_RPC_ERR_INTERNAL, "%s", err[0] ? err : strerror(-rc));
	if (err[0] == '\0')
		return lb_rpc_succeed(out, json_object());
	return lb_rpc_succeed(out, json_pack("{s:s}", "path", err));
}

const struct lb_rpc_method lb_rpc_query_methods[] = {
        {.name = "version", .handler = rpc_version, .usage = "version"},
        {.name = "stats", .handler = rpc_stats, .usage = "stats"},
        {.name = "maglev_table",
         .handler = rpc_maglev_table,
         .usage = "maglev_table {vip: " LB_RPC_VIP_REF ", raw?, from?, count?}"},
        {.name = "config_get", .handler = rpc_config_get, .usage = "config_get"},
        {.name = "config_save", .handler = rpc_config_save, .usage = "config_save"},
        {.name = "health_list", .handler = rpc_health_list, .usage = "health_list"},
        {.name = NULL},
};
