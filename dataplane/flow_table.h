/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-core flow table: a set-associative cache of connections, one 64-byte
 * bucket per set holding four 16-byte entries.
 *
 * An entry is a 64-bit keyed fingerprint of the 5-tuple (the SipHash the
 * pipeline computes anyway; the low bits also pick the bucket), an expiry time,
 * the backend (id, generation) the flow is pinned to and the flow's state (new,
 * established, closing: see flow_state.h). Memory is fixed at creation; a
 * lookup touches one cache line; an insert into a full bucket replaces the
 * entry closest to expiry, entries not yet established first. The worker's
 * clock call sweeps expired entries away so no expiry is ever compared across
 * more than half the tick range. Used by one worker only: no locks, no atomics.
 */
#ifndef LB_FLOW_TABLE_H
#define LB_FLOW_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LB_FLOW_WAYS 4
#define LB_FLOW_BACKEND_BITS 14 /* backend ids 0 .. 2^14 - 1 (LB_MAX_BACKENDS) */

/* lb_flow_entry.state */
enum lb_flow_state {
	LB_FLOW_ESTABLISHED = 0, /* confirmed by a second packet of the flow */
	LB_FLOW_NEW = 1,         /* one packet seen so far: short lifetime, evicted second */
	LB_FLOW_CLOSING = 2,     /* a FIN or RST seen: short lifetime, evicted first */
};

struct lb_flow_entry {
	uint64_t sig;     /* fingerprint; 0 = empty */
	uint32_t expires; /* in table ticks; wrap-safe comparison (see advance) */
	uint16_t backend : LB_FLOW_BACKEND_BITS; /* lb_snapshot.backends id */
	uint16_t state : 2;                      /* enum lb_flow_state */
	uint16_t gen;                            /* that backend's generation when pinned */
};

struct lb_flow_bucket {
	struct lb_flow_entry e[LB_FLOW_WAYS];
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct lb_flow_bucket) == 64, "bucket must be one cache line");

struct lb_flow_table {
	uint32_t mask; /* n_buckets - 1 */
	uint32_t n_buckets;
	struct lb_flow_bucket *buckets;
	uint32_t clock; /* the tick of the last lb_flow_table_advance() */
	uint32_t sweep; /* the next bucket the sweep visits */
};

/*
 * Expiry is compared as a signed 32-bit difference, right while an entry is
 * at most 2^31 - 1 ticks past its expiry. The sweep keeps every entry inside
 * that range: it visits at least one bucket per tick the clock moves and
 * clears the expired entries it finds, so an entry is gone at most n_buckets
 * ticks after it expires (at most 2^25 buckets: about 9 hours of 1 ms ticks);
 * a clock that moved LB_FLOW_CLOCK_JUMP ticks or more since the last call
 * (a worker that did not run) finds every entry expired and empties the table.
 * Lifetimes must stay below LB_FLOW_CLOCK_JUMP.
 */
#define LB_FLOW_CLOCK_JUMP (1u << 30)
#define LB_FLOW_SWEEP_MAX 64u /* buckets per call at most */

/**
 * Create a table for at least capacity entries (rounded up to a power-of-two
 * number of buckets). Memory: 16 bytes per entry, allocated here once.
 *
 * @return the table, or NULL with errno set (EINVAL, ENOMEM).
 */
struct lb_flow_table *lb_flow_table_create(uint32_t capacity);

void lb_flow_table_free(struct lb_flow_table *ft);

/** The out-of-line part of lb_flow_table_advance(): sweep, or empty on a jump. */
void lb_flow_table_sweep(struct lb_flow_table *ft, uint32_t now);

/**
 * Tell the table the time: the worker calls it once per loop pass, before the
 * pass's lookups, with or without traffic. Costs a compare unless the tick
 * moved (about once per millisecond).
 */
static inline void
lb_flow_table_advance(struct lb_flow_table *ft, uint32_t now)
{
	if (now != ft->clock)
		lb_flow_table_sweep(ft, now);
}

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

/* Which entry a full bucket gives up first: closing (2), new (1), then
 * established (0). */
static inline unsigned int
lb_flow_evict_rank(unsigned int state)
{
	return state == LB_FLOW_CLOSING ? 2 : state == LB_FLOW_NEW ? 1 : 0;
}

/* lb_flow_insert_state() results */
#define LB_FLOW_INS_OK 0      /* into its own, an empty or an expired way */
#define LB_FLOW_INS_EVICTED 1 /* a live entry of another flow was replaced */
#define LB_FLOW_INS_FULL 2    /* nothing written: every way holds a live established flow */

/**
 * Insert or overwrite the entry for sig with the given state: reuse its own
 * way if present, else an empty or expired way, else evict the live entry
 * that expires first among the closing ones, else among the new ones; if
 * every way is established, evict the soonest of them only if
 * evict_established.
 *
 * @return LB_FLOW_INS_OK, LB_FLOW_INS_EVICTED or LB_FLOW_INS_FULL.
 */
static inline int
lb_flow_insert_state(struct lb_flow_table *ft, uint64_t sig, uint32_t now, uint32_t idle,
                     uint16_t backend, uint16_t gen, enum lb_flow_state state,
                     bool evict_established)
{
	struct lb_flow_bucket *b = lb_flow_bucket_of(ft, sig);
	struct lb_flow_entry *victim = NULL;
	int rc = LB_FLOW_INS_OK;

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
		/* Closing before new before established (enum lb_flow_state's
		 * values, ranked by lb_flow_evict_rank), then the soonest to
		 * expire: a closing entry guards only a finished connection's
		 * last packets, a new one keeps an opening connection on the
		 * backend its first packet went to. */
		unsigned int vrank = 0;

		for (int i = 0; i < LB_FLOW_WAYS; i++) {
			struct lb_flow_entry *e = &b->e[i];
			unsigned int rank = lb_flow_evict_rank(e->state);

			if (rank == 0 && !evict_established)
				continue;
			if (victim == NULL || rank > vrank ||
			    (rank == vrank && (int32_t)(e->expires - victim->expires) < 0)) {
				victim = e;
				vrank = rank;
			}
		}
		if (victim == NULL)
			return LB_FLOW_INS_FULL;
		rc = LB_FLOW_INS_EVICTED;
	}
	victim->sig = sig;
	victim->expires = now + idle;
	victim->backend = backend & ((1u << LB_FLOW_BACKEND_BITS) - 1);
	victim->state = state;
	victim->gen = gen;
	return rc;
}

/**
 * Insert or overwrite an established entry for sig, evicting the entry that
 * expires first (not established first) from a full bucket.
 *
 * @return true if a live entry of another flow was evicted.
 */
static inline bool
lb_flow_insert(struct lb_flow_table *ft, uint64_t sig, uint32_t now, uint32_t idle,
               uint16_t backend, uint16_t gen)
{
	return lb_flow_insert_state(ft, sig, now, idle, backend, gen, LB_FLOW_ESTABLISHED, true) ==
	       LB_FLOW_INS_EVICTED;
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
