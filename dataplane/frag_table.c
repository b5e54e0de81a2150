/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fragment table (frag_table.h): a fragment's header reading and the
 * record / find calls the pipeline makes for fragments only (creation is in
 * frag_setup.c), and the sweep that clears aged-out records. Ages are
 * unsigned differences of 32-bit ticks, correct for any age below 2^32 ticks;
 * the sweep keeps every record below that (frag_table.h).
 */
#include <errno.h>
#include <string.h>

#include "dataplane/frag_table.h"

#define IP4_MF 0x2000
#define IP4_OFFSET 0x1FFF
#define IP6_HLEN 40
#define IP6_FRAG_OFFSET 0xFFF8
#define NH_HOPOPTS 0
#define NH_TCP 6
#define NH_UDP 17
#define NH_ROUTING 43
#define NH_FRAGMENT 44
#define NH_DSTOPTS 60
#define MAX_EXT 8

static inline uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void
ports_at(const uint8_t *ip, uint32_t len, uint32_t off, struct lb_frag_meta *fm)
{
	if (off <= len && len - off >= 4) {
		memcpy(&fm->sport, ip + off, 2);
		memcpy(&fm->dport, ip + off + 2, 2);
		fm->has_ports = true;
	}
}

int
lb_frag_inspect(const uint8_t *ip, uint32_t len, uint8_t af, struct lb_frag_meta *fm)
{
	uint32_t off;
	uint8_t nh;
	bool seen = false;

	memset(fm, 0, sizeof(*fm));
	if (af == LB_AF_INET) {
		uint16_t fo;

		if (len < 20)
			return -EINVAL;
		fo = rd16(ip + 6);
		if (!(fo & (IP4_MF | IP4_OFFSET)))
			return -EINVAL;
		fm->id = rd16(ip + 4);
		fm->first = (fo & IP4_OFFSET) == 0;
		if (fm->first)
			ports_at(ip, len, (uint32_t)(ip[0] & 0x0F) * 4, fm);
		return 0;
	}
	if (af != LB_AF_INET6 || len < IP6_HLEN)
		return -EINVAL;
	nh = ip[6];
	off = IP6_HLEN;
	for (int i = 0; i < MAX_EXT; i++) {
		if (nh == NH_FRAGMENT) {
			if (seen || len - off < 8)
				return -EINVAL;
			seen = true;
			memcpy(&fm->id, ip + off + 4, 4);
			fm->first = (rd16(ip + off + 2) & IP6_FRAG_OFFSET) == 0;
			if (!fm->first)
				return 0;
			nh = ip[off];
			off += 8;
		} else if (nh == NH_HOPOPTS || nh == NH_ROUTING || nh == NH_DSTOPTS) {
			uint32_t hl;

			if (len - off < 8)
				return -EINVAL;
			hl = ((uint32_t)ip[off + 1] + 1) * 8;
			if (hl > len - off)
				return -EINVAL;
			nh = ip[off];
			off += hl;
		} else {
			break;
		}
	}
	if (!seen)
		return -EINVAL;
	if (nh == NH_TCP || nh == NH_UDP)
		ports_at(ip, len, off, fm);
	return 0;
}

static inline struct lb_frag_entry *
bucket_of(const struct lb_frag_table *t, const struct lb_hash_key *hk, const struct lb_frag_key *k)
{
	uint64_t h = lb_hash_bytes(hk, k, sizeof(*k));

	return &t->e[(size_t)(h & t->mask) * LB_FRAG_WAYS];
}

static inline bool
live(const struct lb_frag_table *t, const struct lb_frag_entry *e, uint32_t now)
{
	return e->used && (uint32_t)(now - e->born) < t->timeout;
}

int
lb_frag_record(struct lb_frag_table *t, const struct lb_hash_key *hk, const struct lb_frag_key *k,
               uint16_t sport, uint16_t dport, uint32_t now)
{
	struct lb_frag_entry *b = bucket_of(t, hk, k), *victim = NULL, *free_way = NULL;
	struct lb_frag_entry *oldest = &b[0];
	int evicted = 0;

	for (int i = 0; i < LB_FRAG_WAYS; i++) {
		struct lb_frag_entry *e = &b[i];

		if (!live(t, e, now)) {
			if (free_way == NULL)
				free_way = e;
		} else if (memcmp(&e->key, k, sizeof(*k)) == 0) {
			victim = e; /* the same datagram again: refresh it */
			break;
		} else if ((uint32_t)(now - e->born) > (uint32_t)(now - oldest->born)) {
			oldest = e;
		}
	}
	if (victim == NULL)
		victim = free_way;
	if (victim == NULL) {
		victim = oldest;
		evicted = 1;
	}
	victim->key = *k;
	victim->born = now;
	victim->sport = sport;
	victim->dport = dport;
	victim->used = 1;
	return evicted;
}

int
lb_frag_find(const struct lb_frag_table *t, const struct lb_hash_key *hk,
             const struct lb_frag_key *k, uint32_t now, uint16_t *sport, uint16_t *dport)
{
	const struct lb_frag_entry *b = bucket_of(t, hk, k);

	for (int i = 0; i < LB_FRAG_WAYS; i++) {
		const struct lb_frag_entry *e = &b[i];

		if (live(t, e, now) && memcmp(&e->key, k, sizeof(*k)) == 0) {
			*sport = e->sport;
			*dport = e->dport;
			return 0;
		}
	}
	return -ENOENT;
}

void
lb_frag_table_sweep(struct lb_frag_table *t, uint32_t now)
{
	const uint32_t moved = now - t->clock;
	const uint32_t n_buckets = t->mask + 1;
	uint32_t visit = moved < LB_FRAG_SWEEP_MAX ? moved : LB_FRAG_SWEEP_MAX;

	t->clock = now;
	if (moved >= t->timeout) /* every record is older than the move: none is live */
		visit = n_buckets;
	if (visit > n_buckets)
		visit = n_buckets;
	for (uint32_t i = 0; i < visit; i++) {
		struct lb_frag_entry *b = &t->e[(size_t)t->sweep * LB_FRAG_WAYS];

		for (int j = 0; j < LB_FRAG_WAYS; j++)
			if (b[j].used && !live(t, &b[j], now))
				b[j].used = 0;
		t->sweep = (t->sweep + 1) & t->mask;
	}
}
