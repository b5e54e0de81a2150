/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-key overrides as workers read them: for a (VIP, flow key) that the
 * hot-key controller promoted, the replicas its new flows spread over.
 *
 * Part of the immutable snapshot. Open addressing on the key hash (the same
 * hash Maglev uses for the key), load at most 1/2; a slot with no replicas is
 * empty. Replica lists live in one shared array of backend ids, each replica
 * repeated in proportion to its weight (control/build/snapshot_build.c), so a
 * uniform pick of a list entry gives replica i about w_i / W of the key. Each
 * list has a pick table of list indices, the jump consistent hash precomputed
 * by the builder for every value of the hash's high bits.
 */
#ifndef LB_OVERRIDE_H
#define LB_OVERRIDE_H

#include <stddef.h>
#include <stdint.h>

/* Distinct replicas of one override the builder lays out; more are left out. */
#define LB_OVERRIDE_REPLICAS_MAX 256
/* List entries of one override at most: the weights over their gcd when they
 * sum to no more, else this many by rounding (each share within 1 / this). */
#define LB_OVERRIDE_SPREAD_MAX 1024
/* Entries of one pick table: 2^14 list indices (32 KiB). A list entry's
 * share is then off its 1 / n by about sqrt(1 / (n * LB_OVERRIDE_LUT_SIZE)),
 * a replica of share p by sqrt(p / LB_OVERRIDE_LUT_SIZE) (p = 1/256: 12%
 * of p). The table depends only on the list's length, so lists of one length
 * share one. */
#define LB_OVERRIDE_LUT_BITS 14
#define LB_OVERRIDE_LUT_SIZE (1u << LB_OVERRIDE_LUT_BITS)

struct lb_override_slot {
	uint64_t key_hash; /* hash of the VIP's flow key (the Maglev hash) */
	uint16_t vip_id;
	uint16_t n_replicas; /* list entries (replicas repeated by weight); 0 = empty slot */
	uint32_t first;      /* index of the first replica in lb_override_table.replicas */
	uint32_t lut;        /* index of its pick table's first entry in lb_override_table.lut */
};

struct lb_override_table {
	uint32_t n;    /* overrides in the table */
	uint32_t mask; /* slots - 1 (power of two); unused when n == 0 */
	const struct lb_override_slot *slots;
	const uint16_t *replicas; /* backend ids */
	const uint16_t *lut;      /* pick tables: LB_OVERRIDE_LUT_SIZE list indices each */
};

static inline uint32_t
lb_override_slot_of(uint64_t key_hash, uint16_t vip_id, uint32_t mask)
{
	/* The key hash is already uniform; fold the VIP in so one source address
	 * hot on two VIPs lands in two slots. */
	return (uint32_t)((key_hash ^ ((uint64_t)vip_id * 0x9E3779B97F4A7C15ULL)) >> 17) & mask;
}

/** The override for (vip, key), or NULL. O(1) expected; nothing when the table is empty. */
static inline const struct lb_override_slot *
lb_override_find(const struct lb_override_table *t, uint16_t vip_id, uint64_t key_hash)
{
	uint32_t i;

	if (t->n == 0)
		return NULL;
	i = lb_override_slot_of(key_hash, vip_id, t->mask);
	for (;;) {
		const struct lb_override_slot *o = &t->slots[i];

		if (o->n_replicas == 0)
			return NULL;
		if (o->key_hash == key_hash && o->vip_id == vip_id)
			return o;
		i = (i + 1) & t->mask;
	}
}

/**
 * The list entry for one flow among n: jump consistent hash (Lamping and
 * Veach) of the flow's hash. Going from n to n + 1 entries moves 1 / (n + 1)
 * of the flows, all to the new entry; from n to n - 1 only the last entry's
 * flows move. About ln n + 1 steps, no table, no allocation. n >= 1.
 */
static inline uint32_t
lb_override_jump(uint64_t flow_hash, uint32_t n)
{
	uint64_t k = flow_hash;
	int64_t b = -1, j = 0;

	while (j < (int64_t)n) {
		b = j;
		k = k * 2862933555777941757ULL + 1;
		j = (int64_t)((double)(b + 1) * ((double)(1LL << 31) / (double)((k >> 33) + 1)));
	}
	return (uint32_t)b;
}

/** The fixed hash entry j of a pick table stands for: SplitMix64 of j. */
static inline uint64_t
lb_override_lut_hash(uint32_t j)
{
	uint64_t x = (uint64_t)j + 0x9E3779B97F4A7C15ULL;

	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/**
 * Fill the pick table of a list of n entries (n >= 1; off the data path):
 * entry j is lb_override_jump(lb_override_lut_hash(j), n). Two lists' tables
 * differ exactly in the entries jump moves between their lengths: about
 * 1 / (n + 1) of them from n to n + 1, all to the new entry.
 */
static inline void
lb_override_lut_fill(uint16_t *lut, uint32_t n)
{
	for (uint32_t j = 0; j < LB_OVERRIDE_LUT_SIZE; j++)
		lut[j] = (uint16_t)lb_override_jump(lb_override_lut_hash(j), n);
}

/**
 * The replica for one flow (or, when spraying, one packet): the list entry
 * the override's pick table holds for the hash's high LB_OVERRIDE_LUT_BITS
 * bits (Maglev took the key's slot from its low 32), two dependent loads and
 * no loop. So a connection always maps to the same replica while the
 * override stands, and a list that grows at its end, shrinks at its end or
 * has one entry's id replaced in place keeps every other flow on its
 * replica (the table is lb_override_jump() of fixed hashes). Entries repeat
 * a replica by its weight, so replica i takes about w_i / W of the hashes,
 * within the table's quantization (LB_OVERRIDE_LUT_SIZE).
 */
static inline uint16_t
lb_override_pick(const struct lb_override_table *t, const struct lb_override_slot *o,
                 uint64_t flow_hash)
{
	return t->replicas[o->first +
	                   t->lut[o->lut + (uint32_t)(flow_hash >> (64 - LB_OVERRIDE_LUT_BITS))]];
}

#endif /* LB_OVERRIDE_H */
