/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key tests' fixture: JSON configurations of numbered backends turned
 * into snapshots as control does, and the simulated VIP of hotkey_fixture.h,
 * whose loads each window come from the assignment the controller made.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/model/config.h"
#include "control/hot/hotkey.h"
#include "control/build/snapshot_build.h"
#include "../support/rng.h"
#include "hotkey_fixture.h"

#define M_TABLE 65537u
#define K_OTHER 1000000u /* other keys in the Maglev-hashed ("realistic") mode */

/* --- configurations -------------------------------------------------------- */

struct lb_config *
cfg_make(uint32_t n_vips, const uint32_t *n)
{
	size_t cap = 4096, len = 0;
	char *doc = malloc(cap), err[256];
	struct lb_config *cfg;
	json_error_t je;
	json_t *root;

	assert_non_null(doc);
#define APPEND(...)                                                                                \
	do {                                                                                       \
		int k_;                                                                            \
		while ((k_ = snprintf(doc + len, cap - len, __VA_ARGS__)) >= (int)(cap - len)) {   \
			cap *= 2;                                                                  \
			doc = realloc(doc, cap);                                                   \
			assert_non_null(doc);                                                      \
		}                                                                                  \
		len += (size_t)k_;                                                                 \
	} while (0)
	APPEND("{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": "
	       "\"02:00:00:00:00:01\"}, \"maglev\": {\"table_size\": %u, \"seed\": "
	       "\"test-hotkey\"}, \"vips\": [",
	       M_TABLE);
	for (uint32_t i = 0; i < n_vips; i++) {
		APPEND("%s{\"address\": \"192.0.2.%u\", \"port\": 80, \"protocol\": \"tcp\", "
		       "\"key\": \"src_ip\", \"hot_mode\": \"spread\", "
		       "\"backends\": [",
		       i ? ", " : "", 10 + i);
		for (uint32_t j = 0; j < n[i]; j++)
			APPEND("%s{\"address\": \"10.%u.%u.%u\"}", j ? ", " : "", 1 + i, j / 250,
			       j % 250 + 1);
		APPEND("]}");
	}
	APPEND("]}");
#undef APPEND
	root = json_loads(doc, 0, &je);
	if (root == NULL)
		fail_msg("test config is not JSON: %s", je.text);
	cfg = lb_config_from_json(root, err, sizeof(err));
	json_decref(root);
	free(doc);
	if (cfg == NULL)
		fail_msg("test config rejected: %s", err);
	return cfg;
}

struct lb_snapshot *
snap_make(const struct lb_config *cfg, uint64_t generation)
{
	char err[256];
	struct lb_snapshot *s = lb_snapshot_build(cfg, generation, err, sizeof(err));

	if (s == NULL)
		fail_msg("snapshot: %s", err);
	return s;
}

bool
active(const struct lb_snapshot *s, uint16_t id)
{
	return id < s->n_backends && s->backends[id].state == LB_BACKEND_ACTIVE &&
	       s->backends[id].weight > 0;
}

uint32_t
ref_rung(double x)
{
	static const uint32_t ladder[] = {1,  2,  3,  4,  6,  8,   12,  16,
	                                  24, 32, 48, 64, 96, 128, 192, 256};

	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++)
		if ((double)ladder[i] >= x - 1e-9)
			return ladder[i];
	return ladder[sizeof(ladder) / sizeof(ladder[0]) - 1];
}

const struct lb_hot_override *
find_ov(const struct lb_hotkey *h, uint16_t vip, uint64_t key_hash)
{
	const struct lb_hot_override *o;
	uint32_t n = lb_hotkey_overrides(h, &o);

	for (uint32_t i = 0; i < n; i++)
		if (o[i].vip_id == vip && o[i].key_hash == key_hash)
			return &o[i];
	return NULL;
}

/* --- the simulation ---------------------------------------------------------- */

void
sim_publish(struct sim *m)
{
	uint32_t n = 0;

	lb_snapshot_free(m->s);
	m->s = snap_make(m->cfg, ++m->generation);
	memset(m->w, 0, sizeof(m->w));
	for (uint32_t id = 0; id < m->s->n_backends; id++)
		n += active(m->s, (uint16_t)id);
	if (!m->realistic) {
		for (uint32_t id = 0; id < m->s->n_backends; id++)
			m->w[id] = active(m->s, (uint16_t)id) ? 1.0 / n : 0;
		m->other_dev = 0;
		return;
	}
	uint64_t rng = 42;

	for (uint32_t k = 0; k < K_OTHER; k++)
		m->w[lb_maglev_pick(m->s, &m->s->vips[0], rng_next(&rng))] += 1.0 / K_OTHER;
	m->other_dev = 0;
	for (uint32_t id = 0; id < m->s->n_backends; id++)
		if (active(m->s, (uint16_t)id)) {
			double d = m->w[id] * n - 1;

			if (d < 0)
				d = -d;
			if (d > m->other_dev)
				m->other_dev = d;
		}
}

struct sim *
sim_new(bool realistic, uint32_t n, const struct lb_hot_params *p)
{
	struct sim *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->realistic = realistic;
	m->cfg = cfg_make(1, &n);
	m->h = lb_hotkey_create(p);
	assert_non_null(m->h);
	m->hot_reported = true;
	sim_publish(m);
	return m;
}

void
sim_free(struct sim *m)
{
	lb_hotkey_free(m->h);
	lb_snapshot_free(m->s);
	lb_config_free(m->cfg);
	free(m);
}

/* This window's per-backend load from the current assignment. */
static void
sim_loads(struct sim *m)
{
	const struct lb_hot_override *o = find_ov(m->h, 0, HOT_HASH);
	uint16_t act[LB_HOT_MAX_REPLICAS];
	uint32_t n_act = 0;
	uint64_t other = m->T - m->hot;

	memset(m->load, 0, sizeof(m->load));
	for (uint32_t id = 0; id < m->s->n_backends; id++)
		m->load[id] = (uint64_t)((double)other * m->w[id] + 0.5) + m->extra[id];
	for (uint16_t i = 0; o != NULL && i < o->n_replicas; i++)
		if (active(m->s, o->replicas[i]))
			act[n_act++] = o->replicas[i];
	if (n_act == 0) {
		uint16_t home = lb_maglev_pick(m->s, &m->s->vips[0], HOT_HASH);

		assert_int_not_equal(home, LB_BACKEND_NONE);
		m->load[home] += m->hot;
	} else {
		for (uint32_t i = 0; i < n_act; i++)
			m->load[act[i]] += m->hot / n_act + (i < m->hot % n_act);
	}
	m->vip_total[0] = m->T;
}

/* Peak / average over the usable backends of this window's loads. */
static double
sim_ratio(const struct sim *m)
{
	uint64_t peak = 0, sum = 0;
	uint32_t n = 0;

	for (uint32_t id = 0; id < m->s->n_backends; id++)
		if (active(m->s, (uint16_t)id)) {
			sum += m->load[id];
			n++;
			if (m->load[id] > peak)
				peak = m->load[id];
		}
	return (double)peak * n / (double)sum;
}

bool
sim_step(struct sim *m, double *ratio)
{
	struct lb_hot_candidate c[4];
	uint32_t n_c = 0;

	sim_loads(m);
	if (ratio != NULL)
		*ratio = sim_ratio(m);
	memset(c, 0, sizeof(c));
	if (m->hot_reported && m->hot > 0)
		c[n_c++] = (struct lb_hot_candidate){
		        .vip_id = 0, .key_hash = HOT_HASH, .count = m->hot};
	/* Cold keys the sketch also names: below φ, never promoted. */
	for (uint64_t k = 1; k <= 3; k++)
		c[n_c++] = (struct lb_hot_candidate){
		        .vip_id = 0, .key_hash = k * 0x1234567ULL, .count = m->T / 1000};
	return lb_hotkey_window(m->h, m->s, m->load, m->vip_total, c, n_c, ++m->window);
}
