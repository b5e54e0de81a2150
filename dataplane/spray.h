/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-packet spraying of a per_packet VIP's hot keys: the hash a sprayed
 * packet's replica is picked by. A plain packet's mixes its flow hash with the
 * worker's packet sequence (each packet its own draw); a fragment's mixes it
 * with the datagram's IP identification, so every fragment of one datagram
 * draws the same replica while the override stands.
 */
#ifndef LB_SPRAY_H
#define LB_SPRAY_H

#include <stdint.h>

/** A uniform 64-bit hash of (flow_hash, salt): the SplitMix64 finaliser of their mix. */
static inline uint64_t
lb_spray_hash(uint64_t flow_hash, uint64_t salt)
{
	uint64_t x = flow_hash ^ (salt * 0x9E3779B97F4A7C15ULL);

	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

/** The salt of a fragment of datagram id: apart from any packet sequence number. */
static inline uint64_t
lb_spray_frag_salt(uint32_t id)
{
	return (1ULL << 63) | id;
}

#endif /* LB_SPRAY_H */
