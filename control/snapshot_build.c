/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Snapshot construction. Everything a worker reads lives in one cache-aligned
 * block, laid out as: header, VIPs, VIP index, fragment index, backend registry,
 * then the Maglev tables, each table starting on its own cache line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maglev_build.h"
#include "snapshot_build.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

static void
index_insert(struct lb_vip_slot *index, uint32_t mask, const struct lb_vip *v, uint16_t port,
             uint16_t vip_pos, int keep_lowest_port, const struct lb_vip *vips)
{
	uint32_t i = lb_vip_slot_hash(v->af, &v->addr, v->proto, port) & mask;

	for (;; i = (i + 1) & mask) {
		struct lb_vip_slot *e = &index[i];

		if (e->vip == 0) {
			e->addr = v->addr;
			e->af = v->af;
			e->proto = v->proto;
			e->port = port;
			e->vip = (uint16_t)(vip_pos + 1);
			return;
		}
		if (e->af == v->af && e->proto == v->proto && e->port == port &&
		    memcmp(&e->addr, &v->addr, 16) == 0) {
			/* Fragment index: the port-agnostic VIP wins, else the lowest port. */
			const struct lb_vip *cur = &vips[e->vip - 1];

			if (keep_lowest_port && cur->port != 0 &&
			    (v->port == 0 || ntohs(v->port) < ntohs(cur->port)))
				e->vip = (uint16_t)(vip_pos + 1);
			return;
		}
	}
}

/* Digest of the Maglev build inputs of one VIP: equal digests, equal tables. */
static uint64_t
table_digest(const struct lb_snapshot *s, const struct lb_maglev_backend *mb, uint32_t n)
{
	uint64_t d = lb_hash_bytes(&s->hkey, &s->table_size, sizeof(s->table_size));

	for (uint32_t i = 0; i < n; i++) {
		uint64_t w[3] = {d, ((uint64_t)mb[i].weight << 16) | mb[i].id, mb[i].identity_len};

		d = lb_hash_bytes(&s->hkey, w, sizeof(w));
		d ^= lb_hash_bytes(&s->hkey, mb[i].identity, mb[i].identity_len) *
		     0x9E3779B97F4A7C15ULL;
	}
	return d;
}

static const struct lb_vip *
prev_vip(const struct lb_snapshot *prev, uint16_t id)
{
	for (uint32_t i = 0; prev != NULL && i < prev->n_vips; i++)
		if (prev->vips[i].id == id)
			return &prev->vips[i];
	return NULL;
}

static void
place_overrides(struct lb_snapshot *s, struct lb_override_slot *slots, uint32_t mask,
                uint16_t *replicas, const struct lb_snapshot_override *ov, uint32_t n_ov)
{
	uint32_t next = 0, n = 0;

	for (uint32_t k = 0; k < n_ov; k++) {
		uint32_t first = next, i;

		for (uint16_t r = 0; r < ov[k].n_replicas; r++) {
			uint16_t id = ov[k].replicas[r];

			if (id < s->n_backends && s->backends[id].gen != 0 &&
			    s->backends[id].vip_id == ov[k].vip_id)
				replicas[next++] = id;
		}
		if (next == first)
			continue;
		i = lb_override_slot_of(ov[k].key_hash, ov[k].vip_id, mask);
		while (slots[i].n_replicas != 0 &&
		       !(slots[i].key_hash == ov[k].key_hash && slots[i].vip_id == ov[k].vip_id))
			i = (i + 1) & mask;
		if (slots[i].n_replicas == 0)
			n++;
		slots[i].key_hash = ov[k].key_hash;
		slots[i].vip_id = ov[k].vip_id;
		slots[i].first = first;
		slots[i].n_replicas = (uint16_t)(next - first);
	}
	s->overrides.n = n;
	s->overrides.mask = mask;
	s->overrides.slots = slots;
	s->overrides.replicas = replicas;
}

struct lb_snapshot *
lb_snapshot_build(const struct lb_config *cfg, uint64_t generation, char *err, size_t errlen)
{
	return lb_snapshot_build_ext(cfg, generation, NULL, NULL, 0, err, errlen);
}

struct lb_snapshot *
lb_snapshot_build_ext(const struct lb_config *cfg, uint64_t generation,
                      const struct lb_snapshot *prev, const struct lb_snapshot_override *ov,
                      uint32_t n_ov, char *err, size_t errlen)
{
	uint32_t n_vips = cfg->n_vips, n_ids = 0, index_size = 16, max_be = 0;
	uint32_t ov_slots = 1, n_rep = 0;
	size_t off_vips, off_index, off_frag, off_backends, off_ovs, off_reps, off_tables, total;
	struct lb_maglev_backend *mb = NULL;
	struct lb_snapshot *s;
	char(*idents)[LB_NAME_MAX + 48] = NULL;
	uint8_t *base;

	for (uint32_t i = 0; i < n_vips; i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];

		for (uint32_t j = 0; j < v->n_backends; j++)
			if ((uint32_t)v->backends[j].id + 1 > n_ids)
				n_ids = v->backends[j].id + 1u;
		if (v->n_backends > max_be)
			max_be = v->n_backends;
	}
	while (index_size < 2 * n_vips)
		index_size <<= 1;

	off_vips = ALIGN64(sizeof(*s));
	off_index = ALIGN64(off_vips + n_vips * sizeof(struct lb_vip));
	off_frag = ALIGN64(off_index + index_size * sizeof(struct lb_vip_slot));
	off_backends = ALIGN64(off_frag + index_size * sizeof(struct lb_vip_slot));
	for (uint32_t k = 0; k < n_ov; k++)
		n_rep += ov[k].n_replicas;
	while (ov_slots < 2 * n_ov)
		ov_slots <<= 1;
	off_ovs = ALIGN64(off_backends + (n_ids ? n_ids : 1) * sizeof(struct lb_backend));
	off_reps = ALIGN64(off_ovs + ov_slots * sizeof(struct lb_override_slot));
	off_tables = ALIGN64(off_reps + (n_rep ? n_rep : 1) * sizeof(uint16_t));
	total = off_tables + (size_t)n_vips * ALIGN64((size_t)cfg->table_size * sizeof(uint16_t));

	base = aligned_alloc(64, ALIGN64(total));
	mb = calloc(max_be ? max_be : 1, sizeof(*mb));
	idents = calloc(max_be ? max_be : 1, sizeof(*idents));
	if (base == NULL || mb == NULL || idents == NULL) {
		snprintf(err, errlen, "out of memory building a snapshot (%zu bytes)", total);
		free(base);
		free(mb);
		free(idents);
		return NULL;
	}
	memset(base, 0, off_tables);
	s = (struct lb_snapshot *)base;
	s->generation = generation;
	lb_hash_key_from_seed(&s->hkey, cfg->seed, strlen(cfg->seed));
	s->table_size = cfg->table_size;
	s->table_fastmod = lb_fastmod_init(cfg->table_size);
	s->encap = cfg->encap;
	s->n_vips = n_vips;
	s->vip_index_mask = index_size - 1;
	s->n_backends = n_ids;

	struct lb_vip *vips = (struct lb_vip *)(base + off_vips);
	struct lb_vip_slot *index = (struct lb_vip_slot *)(base + off_index);
	struct lb_vip_slot *frag = (struct lb_vip_slot *)(base + off_frag);
	struct lb_backend *backends = (struct lb_backend *)(base + off_backends);

	s->vips = vips;
	s->vip_index = index;
	s->frag_index = frag;
	s->backends = backends;

	for (uint32_t i = 0; i < n_vips; i++) {
		const struct lb_cfg_vip *cv = &cfg->vips[i];
		struct lb_vip *v = &vips[i];
		uint16_t *table = (uint16_t *)(base + off_tables +
		                               (size_t)i * ALIGN64((size_t)cfg->table_size * 2));
		const struct lb_vip *pv;
		uint32_t n = 0;
		int rc;

		v->addr = cv->addr;
		v->af = cv->af;
		v->proto = cv->proto;
		v->port = htons(cv->port);
		v->key_mode = cv->key_mode;
		v->encap = cv->encap;
		v->id = cv->id;
		v->table = table;
		for (uint32_t j = 0; j < cv->n_backends; j++) {
			const struct lb_cfg_backend *cb = &cv->backends[j];
			struct lb_backend *b = &backends[cb->id];

			b->addr = cb->addr;
			b->af = cb->af;
			b->state = cb->state;
			b->gen = cb->gen;
			b->vip_id = cv->id;
			b->weight = cb->weight;
			if (cb->state != LB_BACKEND_ACTIVE || cb->weight == 0)
				continue;
			lb_cfg_backend_identity(cb, idents[n], sizeof(idents[n]));
			mb[n].identity = idents[n];
			mb[n].identity_len = strlen(idents[n]);
			mb[n].weight = cb->weight;
			mb[n].id = cb->id;
			n++;
		}
		v->n_active = n;
		v->table_digest = table_digest(s, mb, n);
		pv = prev_vip(prev, v->id);
		if (pv != NULL && pv->table_digest == v->table_digest &&
		    prev->table_size == s->table_size &&
		    memcmp(&prev->hkey, &s->hkey, sizeof(s->hkey)) == 0) {
			/* Same inputs, same table (the build is deterministic): copy. */
			memcpy(table, pv->table, (size_t)s->table_size * sizeof(*table));
			rc = 0;
		} else {
			rc = lb_maglev_build(&s->hkey, mb, n, cfg->table_size, table);
		}
		if (rc != 0) {
			snprintf(err, errlen, "vips[%u]: Maglev build failed: %s", i,
			         strerror(-rc));
			free(base);
			free(mb);
			free(idents);
			return NULL;
		}
		index_insert(index, s->vip_index_mask, v, v->port, (uint16_t)i, 0, vips);
		index_insert(frag, s->vip_index_mask, v, 0, (uint16_t)i, 1, vips);
	}
	place_overrides(s, (struct lb_override_slot *)(base + off_ovs), ov_slots - 1,
	                (uint16_t *)(base + off_reps), ov, n_ov);
	free(mb);
	free(idents);
	return s;
}

void
lb_snapshot_free(struct lb_snapshot *s)
{
	free(s);
}
