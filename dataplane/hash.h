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

/*
 * SipHash-1-3 is written once, over an abstract lane type: the round and the
 * whole 40-byte schedule below take the lane operations as macro arguments
 * (ADD, XOR, ROTL(x, bits), SET1(u64)). The scalar hash, the four-lane AVX2
 * and the eight-lane AVX-512 hashes instantiate the same text, so the round
 * constants, the number of rounds and the finalisation cannot differ between
 * them; what is specific to an ISA is only its few lane operations and how it
 * loads and transposes the keys. tests/unit/test_hash.c checks the scalar
 * instance against the published SipHash vectors and every vector instance
 * against the scalar one on the CPUs that have it.
 */
#define LB_SIPROUND_OPS(v0, v1, v2, v3, ADD, XOR, ROTL)                                            \
	do {                                                                                       \
		v0 = ADD(v0, v1);                                                                  \
		v1 = ROTL(v1, 13);                                                                 \
		v1 = XOR(v1, v0);                                                                  \
		v0 = ROTL(v0, 32);                                                                 \
		v2 = ADD(v2, v3);                                                                  \
		v3 = ROTL(v3, 16);                                                                 \
		v3 = XOR(v3, v2);                                                                  \
		v0 = ADD(v0, v3);                                                                  \
		v3 = ROTL(v3, 21);                                                                 \
		v3 = XOR(v3, v0);                                                                  \
		v2 = ADD(v2, v1);                                                                  \
		v1 = ROTL(v1, 17);                                                                 \
		v1 = XOR(v1, v2);                                                                  \
		v2 = ROTL(v2, 32);                                                                 \
	} while (0)

/* The initial state from the key (SipHash's "somepseudorandomlygeneratedbytes"). */
#define LB_SIP_INIT0 0x736f6d6570736575ULL
#define LB_SIP_INIT1 0x646f72616e646f6dULL
#define LB_SIP_INIT2 0x6c7967656e657261ULL
#define LB_SIP_INIT3 0x7465646279746573ULL

/*
 * SipHash-1-3 of 40-byte keys given as five message words m[0..4] of lane type
 * T: one compression round per word, the final block (length 40 in the top
 * byte, no tail bytes), three finalisation rounds. Leaves the result in res.
 */
#define LB_SIP13_40(T, key, m, res, ADD, XOR, ROTL, SET1)                                          \
	do {                                                                                       \
		T v0_ = SET1((key)->k0 ^ LB_SIP_INIT0);                                            \
		T v1_ = SET1((key)->k1 ^ LB_SIP_INIT1);                                            \
		T v2_ = SET1((key)->k0 ^ LB_SIP_INIT2);                                            \
		T v3_ = SET1((key)->k1 ^ LB_SIP_INIT3);                                            \
		T b_ = SET1((uint64_t)40 << 56);                                                   \
		for (int i_ = 0; i_ < 5; i_++) {                                                   \
			v3_ = XOR(v3_, (m)[i_]);                                                   \
			LB_SIPROUND_OPS(v0_, v1_, v2_, v3_, ADD, XOR, ROTL);                       \
			v0_ = XOR(v0_, (m)[i_]);                                                   \
		}                                                                                  \
		v3_ = XOR(v3_, b_);                                                                \
		LB_SIPROUND_OPS(v0_, v1_, v2_, v3_, ADD, XOR, ROTL);                               \
		v0_ = XOR(v0_, b_);                                                                \
		v2_ = XOR(v2_, SET1(0xffULL));                                                     \
		LB_SIPROUND_OPS(v0_, v1_, v2_, v3_, ADD, XOR, ROTL);                               \
		LB_SIPROUND_OPS(v0_, v1_, v2_, v3_, ADD, XOR, ROTL);                               \
		LB_SIPROUND_OPS(v0_, v1_, v2_, v3_, ADD, XOR, ROTL);                               \
		res = XOR(XOR(v0_, v1_), XOR(v2_, v3_));                                           \
	} while (0)

/* The scalar lane: one uint64_t. */
#define LB_SIP_ADD1(a, b) ((a) + (b))
#define LB_SIP_XOR1(a, b) ((a) ^ (b))
#define LB_SIP_ROTL1(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define LB_SIP_SET1(x) ((uint64_t)(x))

/* One scalar SipRound (lb_hash_bytes uses it for keys of any length). */
#define LB_SIPROUND(v0, v1, v2, v3)                                                                \
	LB_SIPROUND_OPS(v0, v1, v2, v3, LB_SIP_ADD1, LB_SIP_XOR1, LB_SIP_ROTL1)

/**
 * SipHash-1-3 of a flow key, specialised for its fixed 40 bytes; equal to
 * lb_hash_bytes(key, fk, sizeof(*fk)).
 */
static inline uint64_t
lb_hash_flow(const struct lb_hash_key *key, const struct lb_flow_key *fk)
{
	uint64_t m[5], h;

	memcpy(m, fk, sizeof(m));
	LB_SIP13_40(uint64_t, key, m, h, LB_SIP_ADD1, LB_SIP_XOR1, LB_SIP_ROTL1, LB_SIP_SET1);
	return h;
}

/**
 * splitmix64 (the seeding generator of xoshiro): advance the state *x and
 * return its next value. Unkeyed and invertible, so never a flow hash: for
 * spreading small integers (probe phases, test cases) and seeding generators.
 */
static inline uint64_t
lb_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define LB_HASH_HAVE_X4 1

/* 64-bit lane rotations for the four-lane SipRound: by 16 and 32 as byte shuffles. */
#define LB_ROTL4(x, b) _mm256_or_si256(_mm256_slli_epi64(x, b), _mm256_srli_epi64(x, 64 - (b)))
#define LB_ROTL4_32(x) _mm256_shuffle_epi32(x, 0xB1)
#define LB_ROTL4_16(x)                                                                             \
	_mm256_shuffle_epi8(x, _mm256_setr_epi8(6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12,  \
	                                        13, 6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11,  \
	                                        12, 13))

/* The four-lane AVX2 lane operations; rotations by 16 and 32 as byte shuffles. */
#define LB_SIP_ROTL4(x, b)                                                                         \
	((b) == 32 ? LB_ROTL4_32(x) : (b) == 16 ? LB_ROTL4_16(x) : LB_ROTL4(x, b))
#define LB_SIP_SET4(x) _mm256_set1_epi64x((long long)(x))

/**
 * lb_hash_flow() of four keys at once, one per 64-bit lane of AVX2 registers:
 * the same SipHash-1-3, bit for bit, in about a third of the instructions. The
 * caller must check that the CPU has AVX2 (and that DPDK's SIMD width allows
 * 256 bits); out[i] is the hash of fk[i].
 */
__attribute__((target("avx2"))) static inline void
lb_hash_flow_x4(const struct lb_hash_key *key, const struct lb_flow_key *const fk[4],
                uint64_t out[4])
{
	__m256i a = _mm256_loadu_si256((const __m256i *)(const void *)fk[0]);
	__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)fk[1]);
	__m256i c = _mm256_loadu_si256((const __m256i *)(const void *)fk[2]);
	__m256i d = _mm256_loadu_si256((const __m256i *)(const void *)fk[3]);
	__m256i t0 = _mm256_unpacklo_epi64(a, b); /* a0 b0 a2 b2 */
	__m256i t1 = _mm256_unpackhi_epi64(a, b); /* a1 b1 a3 b3 */
	__m256i t2 = _mm256_unpacklo_epi64(c, d);
	__m256i t3 = _mm256_unpackhi_epi64(c, d);
	__m256i m[5];
	uint64_t w4[4];

	/* Word 4 by scalar loads: a vector load of four just-stored words would
	 * wait for them to reach the cache (no store-to-load forwarding). */
	for (int i = 0; i < 4; i++)
		memcpy(&w4[i], (const uint8_t *)fk[i] + 32, 8);
	m[0] = _mm256_permute2x128_si256(t0, t2, 0x20); /* word 0 of keys 0-3 */
	m[1] = _mm256_permute2x128_si256(t1, t3, 0x20);
	m[2] = _mm256_permute2x128_si256(t0, t2, 0x31);
	m[3] = _mm256_permute2x128_si256(t1, t3, 0x31);
	m[4] = _mm256_set_epi64x((long long)w4[3], (long long)w4[2], (long long)w4[1],
	                         (long long)w4[0]);
	LB_SIP13_40(__m256i, key, m, a, _mm256_add_epi64, _mm256_xor_si256, LB_SIP_ROTL4,
	            LB_SIP_SET4);
	_mm256_storeu_si256((__m256i *)(void *)out, a);
}

#define LB_HASH_HAVE_X8 1

/* The eight-lane AVX-512 lane operations: native 64-bit rotates (vprolq). */
#define LB_SIP_SET8(x) _mm512_set1_epi64((long long)(x))

/*
 * SipHash-1-3 of eight 40-byte keys given as their five words, transposed (m[w]
 * lane j = word w of key j): the core of lb_hash_flow_x8() and _x8s().
 */
__attribute__((target("avx512f"))) static inline void
lb_sip13_x8(const struct lb_hash_key *key, const __m512i m[5], uint64_t out[8])
{
	__m512i h;

	LB_SIP13_40(__m512i, key, m, h, _mm512_add_epi64, _mm512_xor_si512, _mm512_rol_epi64,
	            LB_SIP_SET8);
	_mm512_storeu_si512((void *)out, h);
}

/*
 * Words 0-3 of eight keys, transposed into m[0..3]: each key's first 32 bytes
 * by one 256-bit load, keys j and j + 4 in one register, then unpacks and
 * two-source permutes.
 */
__attribute__((target("avx512f"))) static inline void
lb_x8_words0_3(const void *const p[8], __m512i m[4])
{
#define LB_X8_LOAD(j)                                                                              \
	_mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p[j])),      \
	                   _mm256_loadu_si256((const __m256i *)p[(j) + 4]), 1)
	__m512i a = LB_X8_LOAD(0), b = LB_X8_LOAD(1), c = LB_X8_LOAD(2), d = LB_X8_LOAD(3);
#undef LB_X8_LOAD
	/* Per 128-bit lane: (a.w0, b.w0), (a.w2, b.w2), ... for keys 0/1 and 4/5. */
	__m512i ab0 = _mm512_unpacklo_epi64(a, b), ab1 = _mm512_unpackhi_epi64(a, b);
	__m512i cd0 = _mm512_unpacklo_epi64(c, d), cd1 = _mm512_unpackhi_epi64(c, d);
	/* Lanes of ab0: k0w0 k1w0 k0w2 k1w2 k4w0 k5w0 k4w2 k5w2; cd0 the same for 2/3, 6/7. */
	const __m512i ix_lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
	const __m512i ix_hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);

	m[0] = _mm512_permutex2var_epi64(ab0, ix_lo, cd0);
	m[1] = _mm512_permutex2var_epi64(ab1, ix_lo, cd1);
	m[2] = _mm512_permutex2var_epi64(ab0, ix_hi, cd0);
	m[3] = _mm512_permutex2var_epi64(ab1, ix_hi, cd1);
}

/**
 * lb_hash_flow() of eight keys at once, one per 64-bit lane of AVX-512
 * registers, with native 64-bit rotates (vprolq): the same SipHash-1-3, bit for
 * bit. The caller must check that the CPU has AVX-512F; out[i] is the hash of
 * fk[i].
 */
__attribute__((target("avx512f"))) static inline void
lb_hash_flow_x8(const struct lb_hash_key *key, const struct lb_flow_key *const fk[8],
                uint64_t out[8])
{
	const void *p[8];
	uint64_t w4[8];
	__m512i m[5];

	for (int i = 0; i < 8; i++)
		p[i] = fk[i];
	lb_x8_words0_3(p, m);
	/* Word 4 by scalar loads, as in lb_hash_flow_x4(). */
	for (int i = 0; i < 8; i++)
		memcpy(&w4[i], (const uint8_t *)fk[i] + 32, 8);
	m[4] = _mm512_setr_epi64((long long)w4[0], (long long)w4[1], (long long)w4[2],
	                         (long long)w4[3], (long long)w4[4], (long long)w4[5],
	                         (long long)w4[6], (long long)w4[7]);
	lb_sip13_x8(key, m, out);
}

/**
 * lb_hash_flow_x8() of eight keys laid out stride bytes apart from first (as in
 * an array of per-packet records): word 4 of all eight comes in one gather.
 * Same result, same CPU requirement.
 */
__attribute__((target("avx512f"))) static inline void
lb_hash_flow_x8s(const struct lb_hash_key *key, const struct lb_flow_key *first, size_t stride,
                 uint64_t out[8])
{
	const uint8_t *b = (const uint8_t *)first;
	const void *p[8];
	__m512i m[5];

	for (int i = 0; i < 8; i++)
		p[i] = b + (size_t)i * stride;
	lb_x8_words0_3(p, m);
	m[4] = _mm512_i64gather_epi64(
	        _mm512_setr_epi64(0, (long long)stride, 2 * (long long)stride,
	                          3 * (long long)stride, 4 * (long long)stride,
	                          5 * (long long)stride, 6 * (long long)stride,
	                          7 * (long long)stride),
	        (const void *)(b + 32), 1);
	lb_sip13_x8(key, m, out);
}
#endif /* x86-64 */

#endif /* LB_HASH_H */
