/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The flow key and the keyed hash every instance agrees on.
 *
 * A flow key is a fixed 40-byte record so it hashes as five 64-bit words with no
 * length-dependent branches. The hash is SipHash-1-3 keyed from the configured
 * seed: instances that share a seed choose the same backend for the same key,
 * and a client that does not know the seed cannot aim flows at one backend.
 */
#ifndef LB_HASH_H
#define LB_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Address family tags kept in flow keys and addresses (not AF_* values). */
#define LB_AF_INET 4
#define LB_AF_INET6 6

/* An IPv4 or IPv6 address; IPv4 lives in the first 4 bytes, the rest zero. */
union lb_ip {
	uint8_t b[16];
	uint32_t w[4];
	uint64_t q[2];
};

/*
 * What the balancer keys on. Ports are in network byte order; for key modes that
 * ignore a field it is zero. Padding is zero so the struct hashes as bytes.
 */
struct lb_flow_key {
	union lb_ip src;
	union lb_ip dst;
	uint16_t sport;
	uint16_t dport;
	uint8_t proto;
	uint8_t af;
	uint8_t pad[2];
};

_Static_assert(sizeof(struct lb_flow_key) == 40, "flow key must be 5 words");

/* SipHash key (128 bits). */
struct lb_hash_key {
	uint64_t k0;
	uint64_t k1;
};

/**
 * Derive the hash key from a seed string (any length). Deterministic: the same
 * seed gives the same key on every machine and in every process.
 */
void lb_hash_key_from_seed(struct lb_hash_key *key, const char *seed, size_t len);

/** SipHash-1-3 of an arbitrary byte string. */
uint64_t lb_hash_bytes(const struct lb_hash_key *key, const void *data, size_t len);

#define LB_SIPROUND(v0, v1, v2, v3)                                                                \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = (v1 << 13) | (v1 >> 51);                                                      \
		v1 ^= v0;                                                                          \
		v0 = (v0 << 32) | (v0 >> 32);                                                      \
		v2 += v3;                                                                          \
		v3 = (v3 << 16) | (v3 >> 48);                                                      \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = (v3 << 21) | (v3 >> 43);                                                      \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = (v1 << 17) | (v1 >> 47);                                                      \
		v1 ^= v2;                                                                          \
		v2 = (v2 << 32) | (v2 >> 32);                                                      \
	} while (0)

/**
 * SipHash-1-3 of a flow key, specialised for its fixed 40 bytes; equal to
 * lb_hash_bytes(key, fk, sizeof(*fk)).
 */
static inline uint64_t
lb_hash_flow(const struct lb_hash_key *key, const struct lb_flow_key *fk)
{
	uint64_t v0 = key->k0 ^ 0x736f6d6570736575ULL;
	uint64_t v1 = key->k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = key->k0 ^ 0x6c7967656e657261ULL;
	uint64_t v3 = key->k1 ^ 0x7465646279746573ULL;
	uint64_t m[5];

	memcpy(m, fk, sizeof(m));
	for (int i = 0; i < 5; i++) {
		v3 ^= m[i];
		LB_SIPROUND(v0, v1, v2, v3);
		v0 ^= m[i];
	}
	/* Final block: length 40 in the top byte, no tail bytes. */
	uint64_t b = (uint64_t)40 << 56;
	v3 ^= b;
	LB_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	LB_SIPROUND(v0, v1, v2, v3);
	LB_SIPROUND(v0, v1, v2, v3);
	LB_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

#endif /* LB_HASH_H */
