/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-core flow table: a set-associative cache of connections, one 64-byte
 * bucket per set holding four 16-byte entries.
 *
 * An entry is a 64-bit keyed fingerprint of the 5-tuple (the SipHash the
 * pipeline computes anyway; the low bits also pick the bucket), an expiry time,
 * and the backend (id, generation) the flow is pinned to. Memory is fixed at
 * creation; a lookup touches one cache line; an insert into a full bucket
 * replaces the entry closest to expiry, so the table evicts rather than fails.
 * Used by one worker only: no locks, no atomics.
 */
#ifndef LB_FLOW_TABLE_H
#define LB_FLOW_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LB_FLOW_WAYS 4

struct lb_flow_entry {
	uint64_t sig;     /* fingerprint; 0 = empty */
	uint32_t expires; /* in table ticks; wrap-safe comparison */
	uint16_t backend; /* lb_snapshot.backends id */
	uint16_t gen;     /* that backend's generation when pinned */
};

struct lb_flow_bucket {
	struct lb_flow_entry e[LB_FLOW_WAYS];
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct lb_flow_bucket) == 64, "bucket must be one cache line");

struct lb_flow_table {
	uint32_t mask; /* n_buckets - 1 */
	uint32_t n_buckets;
	struct lb_flow_bucket *buckets;
};

/**
 * Create a table for at least capacity entries (rounded up to a power-of-two
 * number of buckets). Memory: 16 bytes per entry, allocated here once.
 *
 * @return the table, or NULL with errno set (EINVAL, ENOMEM).
 */
struct lb_flow_table *lb_flow_table_create(uint32_t capacity);

void lb_flow_table_free(struct lb_flow_table *ft);

/** Entries the table can hold. */
static inline uint32_t
lb_flow_table_capacity(const struct lb_flow_table *ft)
{
	return ft->n_buckets * LB_FLOW_WAYS;
}

/* Fingerprints are never 0 (0 marks an empty entry). */
static inline uint64_t
lb_flow_sig(uint64_t hash)
{
	return hash | (hash == 0);
}

static inline bool
lb_flow_expired(const struct lb_flow_entry *e, uint32_t now)
{
	return (int32_t)(now - e->expires) >= 0;
}

static inline struct lb_flow_bucket *
lb_flow_bucket_of(const struct lb_flow_table *ft, uint64_t sig)
{
	return &ft->buckets[sig & ft->mask];
}

/** Live entry for sig, or NULL. Does not refresh it. */
static inline struct lb_flow_entry *
lb_flow_lookup(const struct lb_flow_table *ft, uint64_t sig, uint32_t now)
{
	struct lb_flow_bucket *b = lb_flow_bucket_of(ft, sig);

	for (int i = 0; i < LB_FLOW_WAYS; i++) {
		struct lb_flow_entry *e = &b->e[i];

		if (e->sig == sig)
			return lb_flow_expired(e, now) ? NULL : e;
	}
	return NULL;
}

/**
 * Insert or overwrite the entry for sig: reuse its own slot if present, else an
 * empty or expired slot, else evict the live entry that expires first.
 *
 * @return true if a live entry of another flow was evicted.
 */
static inline bool
lb_flow_insert(struct lb_flow_table *ft, uint64_t sig, uint32_t now, uint32_t idle,
               uint16_t backend, uint16_t gen)
{
	struct lb_flow_bucket *b = lb_flow_bucket_of(ft, sig);
	struct lb_flow_entry *victim = NULL;
	bool evicted = false;

	/* Its own way first (a re-chosen flow must not leave a stale twin), then
	 * an empty or expired one. */
	for (int i = 0; i < LB_FLOW_WAYS; i++) {
		if (b->e[i].sig == sig) {
			victim = &b->e[i];
			break;
		}
	}
	for (int i = 0; victim == NULL && i < LB_FLOW_WAYS; i++) {
		struct lb_flow_entry *e = &b->e[i];

		if (e->sig == 0 || lb_flow_expired(e, now))
			victim = e;
	}
	if (victim == NULL) {
		victim = &b->e[0];
		for (int i = 1; i < LB_FLOW_WAYS; i++)
			if ((int32_t)(b->e[i].expires - victim->expires) < 0)
				victim = &b->e[i];
		evicted = true;
	}
	victim->sig = sig;
	victim->expires = now + idle;
	victim->backend = backend;
	victim->gen = gen;
	return evicted;
}

/** Push a live entry's expiry out by idle ticks (on every packet of the flow). */
static inline void
lb_flow_touch(struct lb_flow_entry *e, uint32_t now, uint32_t idle)
{
	e->expires = now + idle;
}

/** Live entries (walks the whole table: for stats and tests, not per packet). */
uint32_t lb_flow_table_count(const struct lb_flow_table *ft, uint32_t now);

#endif /* LB_FLOW_TABLE_H */
