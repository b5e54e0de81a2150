/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Snapshot construction. A snapshot is one cache-aligned block (header, VIPs,
 * VIP index, fragment index, backend registry, overrides) plus one Maglev table
 * block per VIP. Table blocks are immutable and reference-counted: a VIP whose
 * table inputs are unchanged since the previous snapshot points at the same
 * block, so a change costs its own VIPs' tables plus the metadata.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/build/maglev_build.h"
#include "control/build/snapshot_build.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

/* One Maglev table: a 64-byte header, then the slots on their own cache lines.
 * refs counts the snapshots whose VIPs point at slots; the block is freed with
 * the last of them. Only the control thread builds and frees snapshots, the
 * atomics keep that true for any thread that does. */
struct lb_table_block {
	uint32_t refs;
	uint32_t size;   /* slots */
	uint64_t digest; /* of the build inputs (table_digest) */
	uint8_t pad[48];
	uint16_t slots[];
};

_Static_assert(offsetof(struct lb_table_block, slots) == 64, "slots start on a cache line");

static uint64_t live_blocks, live_bytes;

static struct lb_table_block *
block_of(const uint16_t *table)
{
	return (struct lb_table_block *)(void *)((uint8_t *)(uintptr_t)table -
	                                         offsetof(struct lb_table_block, slots));
}

static struct lb_table_block *
block_new(uint32_t size, uint64_t digest)
{
	size_t bytes = sizeof(struct lb_table_block) + ALIGN64((size_t)size * sizeof(uint16_t));
	struct lb_table_block *b = aligned_alloc(64, bytes);

	if (b == NULL)
		return NULL;
	b->refs = 1;
	b->size = size;
	b->digest = digest;
	__atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&live_bytes, bytes, __ATOMIC_RELAXED);
	return b;
}

static void
block_put(struct lb_table_block *b)
{
	if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	__atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&live_bytes, sizeof(*b) + ALIGN64((size_t)b->size * sizeof(uint16_t)),
	                   __ATOMIC_RELAXED);
	free(b);
}

void
lb_snapshot_tables_live(uint64_t *blocks, uint64_t *bytes)
{
	if (blocks != NULL)
		*blocks = __atomic_load_n(&live_blocks, __ATOMIC_RELAXED);
	if (bytes != NULL)
		*bytes = __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}

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

/* The table block of prev's VIP with this id if its inputs were d (same seed
 * and table size too), or NULL. pos maps VIP ids to prev's positions + 1. */
static struct lb_table_block *
shareable(const struct lb_snapshot *prev, const uint16_t *pos, const struct lb_snapshot *s,
          uint16_t id, uint64_t d)
{
	const struct lb_vip *pv = NULL;

	if (prev == NULL || prev->table_size != s->table_size ||
	    memcmp(&prev->hkey, &s->hkey, sizeof(s->hkey)) != 0)
		return NULL;
	if (id < LB_MAX_VIPS) {
		if (pos[id] != 0)
			pv = &prev->vips[pos[id] - 1];
	} else {
		for (uint32_t i = 0; i < prev->n_vips && pv == NULL; i++)
			if (prev->vips[i].id == id)
				pv = &prev->vips[i];
	}
	if (pv == NULL || pv->id != id || pv->table_digest != d || pv->table == NULL)
		return NULL;
	return block_of(pv->table);
}

static uint64_t
gcd64(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* Slots an override of these replica weights takes: each weight over g, the
 * gcd of every weight of the VIP's memberships (exact shares), when that sums
 * to at most LB_OVERRIDE_SPREAD_MAX, else LB_OVERRIDE_SPREAD_MAX. With g fixed
 * by the VIP, a replica added at the end of the list only appends slots, so
 * the pick's jump hash keeps every other flow. Never more for a subset. */
static uint32_t
spread_slots(const uint32_t *w, uint32_t n, uint64_t g)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (g == 0 || w[i] % g != 0)
			g = gcd64(g, w[i]);
		sum += w[i];
	}
	if (g == 0)
		return 0;
	return sum / g < LB_OVERRIDE_SPREAD_MAX ? (uint32_t)(sum / g) : LB_OVERRIDE_SPREAD_MAX;
}

/* Lay n replicas of weights w into slots slots, replica i taking the slots
 * between round-down(slots * W_i / W) of its cumulative weights: within one
 * slot of slots * w_i / W each, slots in all. @return the ids written. */
static uint32_t
spread_fill(uint16_t *out, const uint16_t *id, const uint32_t *w, uint32_t n, uint32_t slots)
{
	uint64_t sum = 0, cum = 0, at = 0;

	for (uint32_t i = 0; i < n; i++)
		sum += w[i];
	for (uint32_t i = 0; i < n && sum > 0; i++) {
		uint64_t end;

		cum += w[i];
		end = (uint64_t)slots * cum / sum;
		while (at < end)
			out[at++] = id[i];
	}
	return (uint32_t)at;
}

/* Upper bound of the replica slots of the overrides, from cfg's weights. */
static uint32_t
override_slots_bound(const struct lb_config *cfg, uint32_t n_ids,
                     const struct lb_snapshot_override *ov, uint32_t n_ov)
{
	uint32_t *wid = calloc(n_ids ? n_ids : 1, sizeof(*wid));
	uint64_t *g = calloc(LB_MAX_VIPS, sizeof(*g));
	uint32_t w[LB_OVERRIDE_REPLICAS_MAX], total = 0;

	if (wid == NULL || g == NULL) {
		free(wid);
		free(g);
		return UINT32_MAX;
	}
	for (uint32_t i = 0; i < cfg->n_vips; i++)
		for (uint32_t j = 0; j < cfg->vips[i].n_backends; j++) {
			wid[cfg->vips[i].backends[j].id] = cfg->vips[i].backends[j].weight;
			if (cfg->vips[i].id < LB_MAX_VIPS)
				g[cfg->vips[i].id] =
				        gcd64(g[cfg->vips[i].id], cfg->vips[i].backends[j].weight);
		}
	for (uint32_t k = 0; k < n_ov; k++) {
		uint32_t n = 0;

		for (uint16_t r = 0; r < ov[k].n_replicas && n < LB_OVERRIDE_REPLICAS_MAX; r++)
			if (ov[k].replicas[r] < n_ids)
				w[n++] = wid[ov[k].replicas[r]];
		total += spread_slots(w, n, ov[k].vip_id < LB_MAX_VIPS ? g[ov[k].vip_id] : 0);
	}
	free(wid);
	free(g);
	return total;
}

/* The gcd of the weights of every membership of VIP vip_id in s (any state). */
static uint64_t
vip_gcd(const struct lb_snapshot *s, uint16_t vip_id)
{
	uint64_t g = 0;

	for (uint32_t id = 0; id < s->n_backends; id++)
		if (s->backends[id].gen != 0 && s->backends[id].vip_id == vip_id)
			g = gcd64(g, s->backends[id].weight);
	return g;
}

/* The pick table of lists of n entries at lut[*at...], filled once per length
 * (copied from prev's when it has one, else computed): @return its offset. */
static uint32_t
lut_for(uint16_t *lut, uint32_t *at, uint32_t *of_len, uint32_t n, const struct lb_snapshot *prev)
{
	const struct lb_override_table *pt = prev != NULL ? &prev->overrides : NULL;

	if (of_len[n] != 0)
		return of_len[n] - 1;
	of_len[n] = *at + 1;
	*at += LB_OVERRIDE_LUT_SIZE;
	for (uint32_t i = 0; pt != NULL && pt->n != 0 && i <= pt->mask; i++)
		if (pt->slots[i].n_replicas == n) {
			memcpy(lut + of_len[n] - 1, pt->lut + pt->slots[i].lut,
			       LB_OVERRIDE_LUT_SIZE * sizeof(*lut));
			return of_len[n] - 1;
		}
	lb_override_lut_fill(lut + of_len[n] - 1, n);
	return of_len[n] - 1;
}

/* Lay the overrides out: slots, replica lists (up to cap entries) and their
 * pick tables (up to n_lut, one per distinct list length). */
static void
place_overrides(struct lb_snapshot *s, struct lb_vip *vips, struct lb_override_slot *slots,
                uint32_t mask, uint16_t *replicas, uint32_t cap, uint16_t *lut, uint32_t n_lut,
                const struct lb_snapshot *prev, const struct lb_snapshot_override *ov,
                uint32_t n_ov)
{
	uint32_t next = 0, n = 0, lut_at = 0;
	uint32_t of_len[LB_OVERRIDE_SPREAD_MAX + 1] = {0}; /* offset + 1 of a length's table */

	for (uint32_t k = 0; k < n_ov; k++) {
		uint16_t id[LB_OVERRIDE_REPLICAS_MAX];
		uint32_t w[LB_OVERRIDE_REPLICAS_MAX], nu = 0, want, i;

		for (uint16_t r = 0; r < ov[k].n_replicas && nu < LB_OVERRIDE_REPLICAS_MAX; r++) {
			uint16_t b = ov[k].replicas[r];

			/* Only what the VIP's Maglev table could pick: a replica
			 * down, draining or of weight 0 gets no new flow either. */
			if (b < s->n_backends && s->backends[b].gen != 0 &&
			    s->backends[b].vip_id == ov[k].vip_id &&
			    s->backends[b].state == LB_BACKEND_ACTIVE &&
			    s->backends[b].weight > 0) {
				id[nu] = b;
				w[nu++] = s->backends[b].weight;
			}
		}
		/* Each replica's slots in proportion to its weight, so the pick's
		 * uniform choice of a slot gives it w_i / W of the key. */
		want = spread_slots(w, nu, vip_gcd(s, ov[k].vip_id));
		if (want == 0 || want > cap - next ||
		    (of_len[want] == 0 && lut_at / LB_OVERRIDE_LUT_SIZE >= n_lut))
			continue;
		want = spread_fill(replicas + next, id, w, nu, want);
		i = lb_override_slot_of(ov[k].key_hash, ov[k].vip_id, mask);
		while (slots[i].n_replicas != 0 &&
		       !(slots[i].key_hash == ov[k].key_hash && slots[i].vip_id == ov[k].vip_id))
			i = (i + 1) & mask;
		if (slots[i].n_replicas == 0)
			n++;
		slots[i].key_hash = ov[k].key_hash;
		slots[i].vip_id = ov[k].vip_id;
		slots[i].first = next;
		slots[i].n_replicas = (uint16_t)want;
		slots[i].lut = lut_for(lut, &lut_at, of_len, want, prev);
		next += want;
		/* A per_packet VIP's packets look for their key's override first. */
		for (uint32_t j = 0; j < s->n_vips; j++)
			if (vips[j].id == ov[k].vip_id && vips[j].hot_mode == LB_HOT_PER_PACKET)
				vips[j].spray = 1;
	}
	s->overrides.n = n;
	s->overrides.mask = mask;
	s->overrides.slots = slots;
	s->overrides.replicas = replicas;
	s->overrides.lut = lut;
}

/* The Maglev inputs of cv: its active backends of non-zero weight. */
static uint32_t
table_inputs(const struct lb_cfg_vip *cv, struct lb_maglev_backend *mb,
             char (*idents)[LB_NAME_MAX + 48])
{
	uint32_t n = 0;

	for (uint32_t j = 0; j < cv->n_backends; j++) {
		const struct lb_cfg_backend *cb = &cv->backends[j];

		if (lb_cfg_backend_effective_state(cb) != LB_BACKEND_ACTIVE || cb->weight == 0)
			continue;
		lb_cfg_backend_identity(cb, idents[n], sizeof(idents[n]));
		mb[n].identity = idents[n];
		mb[n].identity_len = strlen(idents[n]);
		mb[n].weight = cb->weight;
		mb[n].id = cb->id;
		n++;
	}
	return n;
}

/* Tables to fill: VIP positions in cfg and their fresh blocks. */
struct build_jobs {
	const struct lb_snapshot *s;
	const struct lb_config *cfg;
	uint32_t n;
	uint32_t *vip;
	struct lb_table_block **block;
	int *rc;
	uint32_t max_be;
	uint32_t next; /* the next job to take (threads take them in turn) */
};

static void *
run_jobs(void *arg)
{
	struct build_jobs *j = arg;
	struct lb_maglev_backend *mb = calloc(j->max_be ? j->max_be : 1, sizeof(*mb));
	char(*idents)[LB_NAME_MAX + 48] = calloc(j->max_be ? j->max_be : 1, sizeof(*idents));

	for (;;) {
		uint32_t k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED), n;

		if (k >= j->n)
			break;

		if (mb == NULL || idents == NULL) {
			j->rc[k] = -ENOMEM;
			continue;
		}
		n = table_inputs(&j->cfg->vips[j->vip[k]], mb, idents);
		j->rc[k] =
		        lb_maglev_build(&j->s->hkey, mb, n, j->s->table_size, j->block[k]->slots);
	}
	free(mb);
	free(idents);
	return NULL;
}

/* Fill every job's table, on up to threads threads (the calling one included),
 * each taking the next unfilled table; each table depends only on its own
 * inputs, so the result does not depend on the number of threads or their
 * timing. */
static void
fill_tables(struct build_jobs *jobs, unsigned int threads)
{
	pthread_t tid[LB_SNAPSHOT_BUILD_THREADS_MAX];
	bool started[LB_SNAPSHOT_BUILD_THREADS_MAX] = {false};
	unsigned int t;

	if (threads > LB_SNAPSHOT_BUILD_THREADS_MAX)
		threads = LB_SNAPSHOT_BUILD_THREADS_MAX;
	if (threads > jobs->n / 4) /* a few tables: not worth a thread */
		threads = jobs->n / 4;
	if (threads < 1)
		threads = 1;
	jobs->next = 0;
	for (t = 1; t < threads; t++) {
		pthread_attr_t attr;
		cpu_set_t any;

		/* Not pinned to the caller's core: any the process may use (the
		 * kernel keeps only those of its cpuset). */
		CPU_ZERO(&any);
		for (int c = 0; c < CPU_SETSIZE; c++)
			CPU_SET(c, &any);
		if (pthread_attr_init(&attr) != 0)
			continue;
		pthread_attr_setaffinity_np(&attr, sizeof(any), &any);
		started[t] = pthread_create(&tid[t], &attr, run_jobs, jobs) == 0;
		pthread_attr_destroy(&attr);
	}
	run_jobs(jobs); /* returns when every job is taken (by a thread that started) */
	for (t = 1; t < threads; t++)
		if (started[t])
			pthread_join(tid[t], NULL);
}

struct lb_snapshot *
lb_snapshot_build(const struct lb_config *cfg, uint64_t generation, char *err, size_t errlen)
{
	return lb_snapshot_build_par(cfg, generation, NULL, NULL, 0, 1, err, errlen);
}

struct lb_snapshot *
lb_snapshot_build_ext(const struct lb_config *cfg, uint64_t generation,
                      const struct lb_snapshot *prev, const struct lb_snapshot_override *ov,
                      uint32_t n_ov, char *err, size_t errlen)
{
	return lb_snapshot_build_par(cfg, generation, prev, ov, n_ov, 1, err, errlen);
}

struct lb_snapshot *
lb_snapshot_build_par(const struct lb_config *cfg, uint64_t generation,
                      const struct lb_snapshot *prev, const struct lb_snapshot_override *ov,
                      uint32_t n_ov, unsigned int threads, char *err, size_t errlen)
{
	uint32_t n_vips = cfg->n_vips, n_ids = 0, index_size = 16, max_be = 0;
	uint32_t ov_slots = 1, n_rep = 0;
	size_t off_vips, off_index, off_frag, off_backends, off_ovs, off_reps, off_lut, total;
	uint32_t n_lut; /* pick tables: one per distinct list length at most */
	struct lb_maglev_backend *mb = NULL;
	struct lb_snapshot *s;
	char(*idents)[LB_NAME_MAX + 48] = NULL;
	uint16_t *prev_pos = NULL;
	struct build_jobs jobs = {.cfg = cfg};
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
	n_rep = override_slots_bound(cfg, n_ids, ov, n_ov);
	if (n_rep == UINT32_MAX) {
		snprintf(err, errlen, "out of memory building a snapshot");
		return NULL;
	}
	while (ov_slots < 2 * n_ov)
		ov_slots <<= 1;
	off_ovs = ALIGN64(off_backends + (n_ids ? n_ids : 1) * sizeof(struct lb_backend));
	off_reps = ALIGN64(off_ovs + ov_slots * sizeof(struct lb_override_slot));
	off_lut = ALIGN64(off_reps + (n_rep ? n_rep : 1) * sizeof(uint16_t));
	n_lut = n_ov < LB_OVERRIDE_SPREAD_MAX ? n_ov : LB_OVERRIDE_SPREAD_MAX;
	total = ALIGN64(off_lut + (size_t)n_lut * LB_OVERRIDE_LUT_SIZE * sizeof(uint16_t));

	base = aligned_alloc(64, total);
	mb = calloc(max_be ? max_be : 1, sizeof(*mb));
	idents = calloc(max_be ? max_be : 1, sizeof(*idents));
	prev_pos = calloc(LB_MAX_VIPS, sizeof(*prev_pos));
	jobs.vip = calloc(n_vips ? n_vips : 1, sizeof(*jobs.vip));
	jobs.block = calloc(n_vips ? n_vips : 1, sizeof(*jobs.block));
	jobs.rc = calloc(n_vips ? n_vips : 1, sizeof(*jobs.rc));
	if (base == NULL || mb == NULL || idents == NULL || prev_pos == NULL || jobs.vip == NULL ||
	    jobs.block == NULL || jobs.rc == NULL) {
		snprintf(err, errlen, "out of memory building a snapshot (%zu bytes)", total);
		free(base);
		base = NULL;
		goto out;
	}
	memset(base, 0, total);
	s = (struct lb_snapshot *)base;
	s->generation = generation;
	lb_hash_key_from_seed(&s->hkey, cfg->seed, strlen(cfg->seed));
	s->table_size = cfg->table_size;
	s->table_fastmod = lb_fastmod_init(cfg->table_size);
	s->encap = cfg->encap;
	s->n_vips = n_vips;
	s->vip_index_mask = index_size - 1;
	s->n_backends = n_ids;
	jobs.s = s;
	jobs.max_be = max_be;
	for (uint32_t i = 0; prev != NULL && i < prev->n_vips; i++)
		if (prev->vips[i].id < LB_MAX_VIPS && prev_pos[prev->vips[i].id] == 0)
			prev_pos[prev->vips[i].id] = (uint16_t)(i + 1);

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
		struct lb_table_block *blk;

		v->addr = cv->addr;
		v->af = cv->af;
		v->proto = cv->proto;
		v->port = htons(cv->port);
		v->key_mode = cv->key_mode;
		v->hot_mode = cv->hot_mode;
		v->spray = 0; /* set by place_overrides() */
		v->encap = cv->encap;
		v->id = cv->id;
		for (uint32_t j = 0; j < cv->n_backends; j++) {
			const struct lb_cfg_backend *cb = &cv->backends[j];
			struct lb_backend *b = &backends[cb->id];

			b->addr = cb->addr;
			b->af = cb->af;
			b->state = lb_cfg_backend_effective_state(cb);
			b->gen = cb->gen;
			b->vip_id = cv->id;
			b->weight = cb->weight;
		}
		v->n_active = table_inputs(cv, mb, idents);
		v->table_digest = table_digest(s, mb, v->n_active);
		blk = shareable(prev, prev_pos, s, v->id, v->table_digest);
		if (blk != NULL) {
			/* Same inputs, same table (the build is deterministic): share it. */
			__atomic_add_fetch(&blk->refs, 1, __ATOMIC_RELAXED);
		} else {
			blk = block_new(s->table_size, v->table_digest);
			if (blk == NULL) {
				snprintf(err, errlen,
				         "vips[%u]: out of memory for its Maglev table", i);
				goto fail;
			}
			jobs.vip[jobs.n] = i;
			jobs.block[jobs.n++] = blk;
		}
		v->table = blk->slots;
		index_insert(index, s->vip_index_mask, v, v->port, (uint16_t)i, 0, vips);
		index_insert(frag, s->vip_index_mask, v, 0, (uint16_t)i, 1, vips);
	}
	fill_tables(&jobs, threads);
	for (uint32_t k = 0; k < jobs.n; k++)
		if (jobs.rc[k] != 0) {
			snprintf(err, errlen, "vips[%u]: Maglev build failed: %s", jobs.vip[k],
			         strerror(-jobs.rc[k]));
			goto fail;
		}
	place_overrides(s, vips, (struct lb_override_slot *)(base + off_ovs), ov_slots - 1,
	                (uint16_t *)(base + off_reps), n_rep, (uint16_t *)(base + off_lut), n_lut,
	                prev, ov, n_ov);
	goto out;
fail:
	lb_snapshot_free(s);
	base = NULL;
out:
	free(mb);
	free(idents);
	free(prev_pos);
	free(jobs.vip);
	free(jobs.block);
	free(jobs.rc);
	return (struct lb_snapshot *)base;
}

void
lb_snapshot_free(struct lb_snapshot *s)
{
	if (s == NULL)
		return;
	/* VIPs not reached by a failed build have no table yet. */
	for (uint32_t i = 0; i < s->n_vips; i++)
		if (s->vips[i].table != NULL)
			block_put(block_of(s->vips[i].table));
	free(s);
}
