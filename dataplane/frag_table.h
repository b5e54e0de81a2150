/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-core fragment table: (source, destination, protocol, IP identification)
 * -> the ports of the datagram, recorded from its first fragment, so that the
 * later fragments, which carry no ports, are steered as the datagram's flow.
 * A fixed array of 4-way buckets made at start-up; entries age out after a
 * timeout and the oldest of a full bucket is replaced. No allocation per packet.
 */
#ifndef LB_FRAG_TABLE_H
#define LB_FRAG_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/hash.h"

#define LB_FRAG_WAYS 4
#define LB_FRAG_DEFAULT_CAPACITY 4096
#define LB_FRAG_DEFAULT_TIMEOUT_MS 1000

/* A datagram's identity (RFC 791 §3.2, RFC 8200 §4.5). Hashed as 40 bytes. */
struct lb_frag_key {
	union lb_ip src;
	union lb_ip dst;
	uint32_t id; /* IPv4: the 16-bit identification; IPv6: the fragment header's */
	uint8_t proto;
	uint8_t af;
	uint8_t pad[2];
};

_Static_assert(sizeof(struct lb_frag_key) == 40, "fragment key must be 5 words");

struct lb_frag_entry {
	struct lb_frag_key key;
	uint32_t born;  /* table ticks when recorded */
	uint16_t sport; /* network byte order */
	uint16_t dport;
	uint8_t used;
	uint8_t pad[7];
};

struct lb_frag_table {
	struct lb_frag_entry *e; /* n_buckets * LB_FRAG_WAYS */
	uint32_t mask;           /* n_buckets - 1 */
	uint32_t timeout;        /* ticks an entry lives */
	uint32_t clock;          /* the tick of the last lb_frag_table_advance() */
	uint32_t sweep;          /* the next bucket the sweep visits */
};

/*
 * Ages are unsigned 32-bit differences, so a record left alone for 2^32
 * ticks (about 50 days of 1 ms ticks) would look young again. The sweep
 * keeps that from happening: each clock move visits one bucket per tick
 * moved (at most LB_FRAG_SWEEP_MAX per call) and clears the records that
 * aged out, and a move of at least the timeout clears every record (none
 * can be live). A bucket is visited at least once every
 * n_buckets * timeout / LB_FRAG_SWEEP_MAX ticks: at most 2^22 buckets and
 * a timeout of at most LB_FRAG_MAX_TIMEOUT keep that under 2^31, so no
 * record reaches an age of 2^32 ticks.
 */
#define LB_FRAG_SWEEP_MAX 64u
#define LB_FRAG_MAX_TIMEOUT (1u << 15)

/* What a fragment's own headers say (filled by lb_frag_inspect()). */
struct lb_frag_meta {
	uint32_t id;
	bool first;     /* fragment offset 0 */
	bool has_ports; /* first fragment whose TCP/UDP ports lie within the bytes given */
	uint16_t sport; /* network byte order */
	uint16_t dport;
};

/**
 * Make a table of at least capacity entries (rounded up to a power of two
 * number of 4-way buckets) whose entries live timeout ticks.
 *
 * @return the table; NULL with errno EINVAL (capacity 0 or over 2^24, timeout
 *   0 or over LB_FRAG_MAX_TIMEOUT) or ENOMEM.
 */
struct lb_frag_table *lb_frag_table_create(uint32_t capacity, uint32_t timeout);

/** Free a table made by lb_frag_table_create() (NULL is ignored). */
void lb_frag_table_free(struct lb_frag_table *t);

/** The out-of-line part of lb_frag_table_advance(). */
void lb_frag_table_sweep(struct lb_frag_table *t, uint32_t now);

/**
 * Tell the table the time: the worker calls it once per loop pass, with or
 * without fragments. Costs a compare unless the tick moved.
 */
static inline void
lb_frag_table_advance(struct lb_frag_table *t, uint32_t now)
{
	if (now != t->clock)
		lb_frag_table_sweep(t, now);
}

/**
 * Read the identification, the offset and (first fragment) the ports of a
 * fragment whose IP header starts at ip, with len readable bytes (at most the
 * IP packet). af: LB_AF_INET or LB_AF_INET6. Never reads outside [ip, ip + len).
 *
 * @return 0 with *fm filled; -EINVAL if the headers are not a fragment's (or
 *   are cut).
 */
int lb_frag_inspect(const uint8_t *ip, uint32_t len, uint8_t af, struct lb_frag_meta *fm);

/**
 * Record the ports of datagram k at tick now, replacing its earlier entry, an
 * empty or aged way, or else the bucket's oldest entry.
 *
 * @return 1 if a live entry of another datagram was replaced, else 0.
 */
int lb_frag_record(struct lb_frag_table *t, const struct lb_hash_key *hk,
                   const struct lb_frag_key *k, uint16_t sport, uint16_t dport, uint32_t now);

/**
 * The ports recorded for datagram k, if its entry is younger than the timeout
 * at tick now.
 *
 * @return 0 with *sport, *dport set; -ENOENT if there is no live entry.
 */
int lb_frag_find(const struct lb_frag_table *t, const struct lb_hash_key *hk,
                 const struct lb_frag_key *k, uint32_t now, uint16_t *sport, uint16_t *dport);

#endif /* LB_FRAG_TABLE_H */
