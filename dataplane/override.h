/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hot-key overrides as workers read them: for a (VIP, flow key) that the
 * hot-key controller promoted, the replicas its new flows spread over.
 *
 * Part of the immutable snapshot. Open addressing on the key hash (the same
 * hash Maglev uses for the key), load at most 1/2; a slot with no replicas is
 * empty. Replica lists live in one shared array of backend ids, each replica
 * repeated in proportion to its weight (control/snapshot_build.c), so a
 * uniform pick of a list entry gives replica i about w_i / W of the key.
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

struct lb_override_slot {
	uint64_t key_hash; /* hash of the VIP's flow key (the Maglev hash) */
	uint16_t vip_id;
	uint16_t n_replicas; /* list entries (replicas repeated by weight); 0 = empty slot */
	uint32_t first;      /* index of the first replica in lb_override_table.replicas */
};

struct lb_override_table {
	uint32_t n;    /* overrides in the table */
	uint32_t mask; /* slots - 1 (power of two); unused when n == 0 */
	const struct lb_override_slot *slots;
	const uint16_t *replicas; /* backend ids */
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
 * The replica for one flow: chosen by the flow's 5-tuple hash (its high 32
 * bits, independent of the low bits that picked the key's Maglev slot), so a
 * connection always maps to the same replica while the override stands.
 */
static inline uint16_t
lb_override_pick(const struct lb_override_table *t, const struct lb_override_slot *o,
                 uint64_t flow_hash)
{
	uint32_t r = (uint32_t)(((flow_hash >> 32) * (uint64_t)o->n_replicas) >> 32);

	return t->replicas[o->first + r];
}

#endif /* LB_OVERRIDE_H */
