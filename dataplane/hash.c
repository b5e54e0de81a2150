/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SipHash-1-3 (Aumasson and Bernstein) over byte strings, and the derivation of
 * the 128-bit key from the operator's seed string.
 */
#include <stdint.h>
#include <string.h>

#include "dataplane/hash.h"

static uint64_t
load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

uint64_t
lb_hash_bytes(const struct lb_hash_key *key, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t v0 = key->k0 ^ LB_SIP_INIT0;
	uint64_t v1 = key->k1 ^ LB_SIP_INIT1;
	uint64_t v2 = key->k0 ^ LB_SIP_INIT2;
	uint64_t v3 = key->k1 ^ LB_SIP_INIT3;
	size_t full = len & ~(size_t)7;
	uint64_t b = (uint64_t)len << 56;

	for (size_t i = 0; i < full; i += 8) {
		uint64_t m = load_le64(p + i);

		v3 ^= m;
		LB_SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (size_t i = 0; i < (len & 7); i++)
		b |= (uint64_t)p[full + i] << (8 * i);
	v3 ^= b;
	LB_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	LB_SIPROUND(v0, v1, v2, v3);
	LB_SIPROUND(v0, v1, v2, v3);
	LB_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

void
lb_hash_key_from_seed(struct lb_hash_key *key, const char *seed, size_t len)
{
	/* A fixed public key turns the seed into the secret key: two SipHash
	 * passes with distinct domain keys give 128 bits. */
	static const struct lb_hash_key k_lo = {0x7370696c6c776179ULL, 0x6b65792d6c6f0000ULL};
	static const struct lb_hash_key k_hi = {0x7370696c6c776179ULL, 0x6b65792d68690000ULL};

	key->k0 = lb_hash_bytes(&k_lo, seed, len);
	key->k1 = lb_hash_bytes(&k_hi, seed, len);
}
