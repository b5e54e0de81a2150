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

struct lb_snapshot *
lb_snapshot_build(const struct lb_config *cfg, uint64_t generation, char *err, size_t errlen)
{
	uint32_t n_vips = cfg->n_vips, n_ids = 0, index_size = 16, max_be = 0;
	size_t off_vips, off_index, off_frag, off_backends, off_tables, total;
	struct lb_maglev_backend *mb = NULL;
	struct lb_snapshot *s;
	char (*idents)[LB_NAME_MAX + 48] = NULL;
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
	off_tables = ALIGN64(off_backends + (n_ids ? n_ids : 1) * sizeof(struct lb_backend));
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
		rc = lb_maglev_build(&s->hkey, mb, n, cfg->table_size, table);
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
	free(mb);
	free(idents);
	return s;
}

void
lb_snapshot_free(struct lb_snapshot *s)
{
	free(s);
}
