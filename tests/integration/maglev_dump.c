/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglev_dump: the daemon's own Maglev builder and flow pick, as a filter, for
 * test_maglev_ref.sh to compare tests/integration/maglev_ref.py against.
 *
 * Reads one JSON request per line on stdin:
 *   {"seed": S, "table_size": M, "width": W (optional probe width cap),
 *    "backends": [{"identity": HEX, "weight": N}, ...],
 *    "flows": [{"mode": "5tuple"|"src_ip"|"src_ip_dport", "src": A, "dst": A,
 *               "sport": P, "dport": P, "proto": N}, ...]}
 * and writes one JSON line per request:
 *   {"k0": HEX64, "k1": HEX64, "rc": lb_maglev_build's return,
 *    "table": [id per slot (index in backends), 65535 if empty] (if rc is 0),
 *    "flows": [{"hash": HEX64, "backend": id}] (if rc is 0)}
 * The key comes from lb_hash_key_from_seed, the table from lb_maglev_build,
 * each flow's key hash from lb_vip_key_hash and its backend from
 * lb_maglev_pick: the same functions spillwayd runs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "control/build/maglev_build.h"
#include "dataplane/hash.h"
#include "dataplane/snapshot.h"

static void
die(const char *msg)
{
	fprintf(stderr, "maglev_dump: %s\n", msg);
	exit(2);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes hex into a new buffer; *len gets its length. */
static unsigned char *
unhex(const char *hex, size_t *len)
{
	size_t n = strlen(hex);
	unsigned char *out = malloc(n / 2 + 1);

	if (out == NULL || n % 2)
		die("bad identity hex");
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			die("bad identity hex");
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	*len = n / 2;
	return out;
}

static json_t *
hex64(uint64_t v)
{
	char buf[17];

	snprintf(buf, sizeof(buf), "%016" PRIx64, v);
	return json_string(buf);
}

/* The data path's flow key: addresses, ports in network order, protocol, family. */
static void
flow_key(const json_t *f, struct lb_flow_key *k, uint8_t *mode)
{
	const char *src = json_string_value(json_object_get(f, "src"));
	const char *dst = json_string_value(json_object_get(f, "dst"));
	const char *m = json_string_value(json_object_get(f, "mode"));
	int af;

	if (src == NULL || dst == NULL || m == NULL)
		die("flow needs src, dst and mode");
	memset(k, 0, sizeof(*k));
	af = strchr(src, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(af, src, k->src.b) != 1 || inet_pton(af, dst, k->dst.b) != 1)
		die("bad flow address");
	k->af = af == AF_INET6 ? LB_AF_INET6 : LB_AF_INET;
	k->sport = htons((uint16_t)json_integer_value(json_object_get(f, "sport")));
	k->dport = htons((uint16_t)json_integer_value(json_object_get(f, "dport")));
	k->proto = (uint8_t)json_integer_value(json_object_get(f, "proto"));
	if (strcmp(m, "5tuple") == 0)
		*mode = LB_KEY_5TUPLE;
	else if (strcmp(m, "src_ip") == 0)
		*mode = LB_KEY_SRC_IP;
	else if (strcmp(m, "src_ip_dport") == 0)
		*mode = LB_KEY_SRC_IP_DPORT;
	else
		die("bad key mode");
}

static json_t *
answer(const json_t *req)
{
	const json_t *seed = json_object_get(req, "seed");
	const json_t *bs = json_object_get(req, "backends");
	const json_t *flows = json_object_get(req, "flows");
	uint32_t m = (uint32_t)json_integer_value(json_object_get(req, "table_size"));
	uint32_t n = (uint32_t)json_array_size(bs);
	struct lb_maglev_backend *mb = calloc(n ? n : 1, sizeof(*mb));
	uint16_t *table = malloc(sizeof(*table) * (m ? m : 1));
	struct lb_hash_key key;
	json_t *res = json_object(), *arr;
	int rc;

	if (!json_is_string(seed) || mb == NULL || table == NULL || res == NULL)
		die("bad request (seed) or out of memory");
	lb_hash_key_from_seed(&key, json_string_value(seed), json_string_length(seed));
	for (uint32_t i = 0; i < n; i++) {
		const json_t *b = json_array_get(bs, i);
		const char *hex = json_string_value(json_object_get(b, "identity"));

		if (hex == NULL)
			die("backend without identity");
		mb[i].identity = unhex(hex, &mb[i].identity_len);
		mb[i].weight = (uint32_t)json_integer_value(json_object_get(b, "weight"));
		mb[i].id = (uint16_t)i;
	}
	lb_maglev_probe_width_cap((unsigned int)json_integer_value(json_object_get(req, "width")));
	rc = lb_maglev_build(&key, mb, n, m, table);
	lb_maglev_probe_width_cap(0);
	json_object_set_new(res, "k0", hex64(key.k0));
	json_object_set_new(res, "k1", hex64(key.k1));
	json_object_set_new(res, "rc", json_integer(rc));
	if (rc == 0) {
		struct lb_snapshot s;
		struct lb_vip v;

		arr = json_array();
		for (uint32_t i = 0; i < m; i++)
			json_array_append_new(arr, json_integer(table[i]));
		json_object_set_new(res, "table", arr);

		memset(&s, 0, sizeof(s));
		memset(&v, 0, sizeof(v));
		s.hkey = key;
		s.table_size = m;
		s.table_fastmod = lb_fastmod_init(m);
		v.table = table;
		arr = json_array();
		for (size_t i = 0; i < json_array_size(flows); i++) {
			struct lb_flow_key k;
			uint64_t h;
			json_t *o;

			flow_key(json_array_get(flows, i), &k, &v.key_mode);
			h = lb_vip_key_hash(&s, &v, &k, lb_hash_flow(&s.hkey, &k));
			o = json_pack("{s:o, s:i}", "hash", hex64(h), "backend",
			              (json_int_t)lb_maglev_pick(&s, &v, h));
			json_array_append_new(arr, o);
		}
		json_object_set_new(res, "flows", arr);
	}
	for (uint32_t i = 0; i < n; i++)
		free((void *)mb[i].identity);
	free(mb);
	free(table);
	return res;
}

int
main(void)
{
	char *line = NULL;
	size_t cap = 0;

	while (getline(&line, &cap, stdin) > 0) {
		json_error_t jerr;
		json_t *req = json_loads(line, 0, &jerr), *res;

		if (req == NULL)
			die(jerr.text);
		res = answer(req);
		if (json_dumpf(res, stdout, JSON_COMPACT) != 0 || fputc('\n', stdout) == EOF ||
		    fflush(stdout) != 0)
			die("write failed");
		json_decref(res);
		json_decref(req);
	}
	free(line);
	return 0;
}
