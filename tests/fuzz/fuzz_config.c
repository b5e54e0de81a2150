/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness for the configuration loader: any bytes -> json_loadb ->
 * lb_config_from_json. An accepted configuration must
 *   - build a snapshot (a failure other than "out of memory" means the loader
 *     accepted something the builder cannot take), whose VIP index finds every
 *     VIP and whose Maglev tables hold only that VIP's active backends;
 *   - survive lb_config_to_json -> lb_config_from_json (as a json_t and through
 *     its text form) with every field equal, and to_json of the copy equal to
 *     the first document.
 * A rejection must come with a "path: reason" message. Everything is freed
 * (LeakSanitizer is on under libFuzzer and in the ASan build).
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <jansson.h>

#include "control/model/config.h"
#include "fuzz.h"
#include "control/build/snapshot_build.h"

/*
 * Maglev tables cost 2 bytes per slot per VIP and time linear in that; the
 * loader allows 1024 VIPs x 1048573 slots (2 GiB). Beyond this many slots in
 * all the snapshot is not built (a fuzzer's memory limit is not a finding).
 */
#define MAX_SNAPSHOT_SLOTS (4u << 20)

static bool
backend_eq(const struct lb_cfg_backend *a, const struct lb_cfg_backend *b)
{
	return strcmp(a->name, b->name) == 0 && memcmp(&a->addr, &b->addr, sizeof(a->addr)) == 0 &&
	       a->af == b->af && a->state == b->state && a->id == b->id && a->gen == b->gen &&
	       a->weight == b->weight;
}

static bool
vip_eq(const struct lb_cfg_vip *a, const struct lb_cfg_vip *b)
{
	if (memcmp(&a->addr, &b->addr, sizeof(a->addr)) != 0 || a->af != b->af ||
	    a->proto != b->proto || a->port != b->port || a->key_mode != b->key_mode ||
	    a->encap != b->encap || a->id != b->id || a->n_backends != b->n_backends)
		return false;
	for (uint32_t i = 0; i < a->n_backends; i++)
		if (!backend_eq(&a->backends[i], &b->backends[i]))
			return false;
	return true;
}

static bool
encap_eq(const struct lb_encap_conf *a, const struct lb_encap_conf *b)
{
	return a->has_src4 == b->has_src4 && a->has_src6 == b->has_src6 &&
	       (!a->has_src4 || memcmp(&a->src4, &b->src4, sizeof(a->src4)) == 0) &&
	       (!a->has_src6 || memcmp(&a->src6, &b->src6, sizeof(a->src6)) == 0) &&
	       memcmp(a->next_hop_mac, b->next_hop_mac, 6) == 0 && a->mtu == b->mtu &&
	       a->gue_port == b->gue_port && a->too_big == b->too_big;
}

static void
check_config_eq(const struct lb_config *a, const struct lb_config *b)
{
	FUZZ_CHECK(encap_eq(&a->encap, &b->encap), "encap differs after the round trip");
	FUZZ_CHECK(strcmp(a->seed, b->seed) == 0, "seed \"%s\" became \"%s\"", a->seed, b->seed);
	FUZZ_CHECK(a->table_size == b->table_size, "table_size %u became %u", a->table_size,
	           b->table_size);
	FUZZ_CHECK(a->flows.capacity == b->flows.capacity &&
	                   a->flows.tcp_idle_ms == b->flows.tcp_idle_ms &&
	                   a->flows.udp_idle_ms == b->flows.udp_idle_ms,
	           "flows differ after the round trip");
	FUZZ_CHECK(a->hot.enabled == b->hot.enabled && a->hot.window_ms == b->hot.window_ms &&
	                   a->hot.threshold == b->hot.threshold && a->hot.epsilon == b->hot.epsilon,
	           "hot differs after the round trip (%.17g/%.17g, %.17g/%.17g)", a->hot.threshold,
	           b->hot.threshold, a->hot.epsilon, b->hot.epsilon);
	FUZZ_CHECK(a->n_vips == b->n_vips, "%u VIPs became %u", a->n_vips, b->n_vips);
	for (uint32_t i = 0; i < a->n_vips; i++)
		FUZZ_CHECK(vip_eq(&a->vips[i], &b->vips[i]),
		           "vips[%u] differs after the round trip", i);
}

static void
check_snapshot(const struct lb_config *cfg, const struct lb_snapshot *s)
{
	FUZZ_CHECK(s->n_vips == cfg->n_vips, "snapshot has %u VIPs, config %u", s->n_vips,
	           cfg->n_vips);
	FUZZ_CHECK(s->table_size == cfg->table_size, "table size");
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *cv = &cfg->vips[i];
		const struct lb_vip *v, *fv;

		v = lb_vip_lookup(s, cv->af, &cv->addr, cv->proto, htons(cv->port));
		FUZZ_CHECK(v != NULL && v->id == cv->id, "vips[%u] not found by lb_vip_lookup", i);
		/* A fragment finds a VIP of the same address and protocol. */
		fv = lb_vip_lookup_frag(s, cv->af, &cv->addr, cv->proto);
		FUZZ_CHECK(fv != NULL && fv->af == cv->af && fv->proto == cv->proto &&
		                   memcmp(&fv->addr, &cv->addr, sizeof(cv->addr)) == 0,
		           "vips[%u] not found by lb_vip_lookup_frag", i);
		FUZZ_CHECK(cv->port == 0 ? fv->port == 0
		                         : fv->port == 0 || ntohs(fv->port) <= cv->port,
		           "fragment index chose port %u over %u", ntohs(fv->port), cv->port);
		for (uint32_t j = 0; j < s->table_size; j++) {
			uint16_t id = v->table[j];
			const struct lb_backend *b;

			if (id == LB_BACKEND_NONE) {
				FUZZ_CHECK(v->n_active == 0, "vips[%u] slot %u empty", i, j);
				continue;
			}
			FUZZ_CHECK(id < s->n_backends, "vips[%u] slot %u: id %u", i, j, id);
			b = &s->backends[id];
			FUZZ_CHECK(b->vip_id == v->id && b->state == LB_BACKEND_ACTIVE &&
			                   b->weight > 0 && b->gen != 0,
			           "vips[%u] slot %u: backend %u is not an active member", i, j,
			           id);
		}
	}
}

/* to_json -> from_json (tree and text) must give the same configuration. */
static void
check_round_trip(const struct lb_config *cfg)
{
	char err[512];
	struct lb_config *c2, *c3;
	json_t *doc, *doc2, *parsed;
	json_error_t je;
	char *text;

	doc = lb_config_to_json(cfg);
	FUZZ_CHECK(doc != NULL, "lb_config_to_json returned NULL");
	err[0] = '\0';
	c2 = lb_config_from_json(doc, err, sizeof(err));
	FUZZ_CHECK(c2 != NULL, "own document rejected: %s", err);
	check_config_eq(cfg, c2);

	doc2 = lb_config_to_json(c2);
	FUZZ_CHECK(doc2 != NULL && json_equal(doc, doc2), "to_json(from_json(to_json(c))) differs");

	text = json_dumps(doc, JSON_COMPACT);
	FUZZ_CHECK(text != NULL, "json_dumps failed");
	parsed = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	FUZZ_CHECK(parsed != NULL, "own document text is not JSON: %s", je.text);
	c3 = lb_config_from_json(parsed, err, sizeof(err));
	FUZZ_CHECK(c3 != NULL, "own document text rejected: %s (%s)", err, text);
	check_config_eq(cfg, c3);

	lb_config_free(c3);
	json_decref(parsed);
	free(text);
	json_decref(doc2);
	lb_config_free(c2);
	json_decref(doc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct lb_config *cfg;
	json_error_t je;
	json_t *root;

	/* What lb_config_load_file() does, plus any top-level value. */
	root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (root == NULL)
		return 0;
	err[0] = '\0';
	cfg = lb_config_from_json(root, err, sizeof(err));
	json_decref(root);
	if (cfg == NULL) {
		/*
		 * Normally "path: reason"; a field named "" has an empty path, and
		 * config.c prints an empty path without the ": ".
		 */
		FUZZ_CHECK(err[0] != '\0', "rejection without a message");
		return 0;
	}

	if ((uint64_t)cfg->table_size * (cfg->n_vips ? cfg->n_vips : 1) <= MAX_SNAPSHOT_SLOTS) {
		struct lb_snapshot *s = lb_snapshot_build(cfg, 1, err, sizeof(err));

		FUZZ_CHECK(s != NULL || strstr(err, "out of memory") != NULL,
		           "accepted configuration does not build: %s", err);
		if (s != NULL)
			check_snapshot(cfg, s);
		lb_snapshot_free(s);
	}
	check_round_trip(cfg);
	lb_config_free(cfg);
	return 0;
}
