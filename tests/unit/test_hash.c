/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the keyed flow hash: lb_hash_bytes against an independent
 * SipHash-c-d reference written from the paper (itself checked against the
 * published SipHash-2-4 vectors and the Linux kernel's SipHash-1-3 vectors),
 * the 40-byte specialisation, seed-to-key derivation, pinned values that must
 * not change between machines or releases, and the spread over buckets.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dataplane/hash.h"
#include "../support/isa.h"
#include "../support/rng.h"

static void
rng_fill(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng_next(s);
}

/*
 * Reference SipHash-c-d, written from Aumasson and Bernstein, "SipHash: a fast
 * short-input PRF" (2012), section 2, deliberately unlike the module's code:
 * the message is first padded into whole little-endian words (zero fill, last
 * byte = len mod 256), words are assembled byte by byte, and the round counts
 * are parameters so the same code can be checked against the 2-4 vectors.
 */
static uint64_t
ref_rotl(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

static void
ref_sipround(uint64_t v[4])
{
	v[0] += v[1];
	v[2] += v[3];
	v[1] = ref_rotl(v[1], 13);
	v[3] = ref_rotl(v[3], 16);
	v[1] ^= v[0];
	v[3] ^= v[2];
	v[0] = ref_rotl(v[0], 32);
	v[2] += v[1];
	v[0] += v[3];
	v[1] = ref_rotl(v[1], 17);
	v[3] = ref_rotl(v[3], 21);
	v[1] ^= v[2];
	v[3] ^= v[0];
	v[2] = ref_rotl(v[2], 32);
}

static uint64_t
ref_le64(const uint8_t *p)
{
	uint64_t r = 0;

	for (int i = 7; i >= 0; i--)
		r = (r << 8) | p[i];
	return r;
}

#define REF_MAX_LEN 128

static uint64_t
ref_siphash(unsigned int c, unsigned int d, uint64_t k0, uint64_t k1, const uint8_t *m, size_t len)
{
	uint8_t padded[REF_MAX_LEN + 8] = {0};
	size_t words = len / 8 + 1;
	uint64_t v[4] = {
	        k0 ^ 0x736f6d6570736575ULL, /* "somepseu" */
	        k1 ^ 0x646f72616e646f6dULL, /* "dorandom" */
	        k0 ^ 0x6c7967656e657261ULL, /* "lygenera" */
	        k1 ^ 0x7465646279746573ULL, /* "tedbytes" */
	};

	assert_true(len <= REF_MAX_LEN);
	if (len > 0)
		memcpy(padded, m, len);
	padded[words * 8 - 1] = (uint8_t)len;
	for (size_t w = 0; w < words; w++) {
		uint64_t mw = ref_le64(padded + 8 * w);

		v[3] ^= mw;
		for (unsigned int r = 0; r < c; r++)
			ref_sipround(v);
		v[0] ^= mw;
	}
	v[2] ^= 0xff;
	for (unsigned int r = 0; r < d; r++)
		ref_sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* The paper's test key 00 01 .. 0f, as the module's two words. */
static const struct lb_hash_key vec_key = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};

/* SipHash-2-4, key 00..0f, message 00 01 .. (n-1): the reference implementation's vectors. */
static const uint64_t vec_siphash24[64] = {
        0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL, 0x85676696d7fb7e2dULL,
        0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL, 0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL,
        0x93f5f5799a932462ULL, 0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
        0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL, 0xa129ca6149be45e5ULL,
        0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL, 0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL,
        0xbed65cf21aa2ee98ULL, 0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
        0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL, 0x2f2e6163076bcfadULL,
        0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL, 0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL,
        0x7127512f72f27cceULL, 0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
        0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL, 0x9abfd8766a33735cULL,
        0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL, 0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL,
        0xf935451de4f21df2ULL, 0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
        0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL, 0xa192d576b245165aULL,
        0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL, 0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL,
        0xb78dbfaf3a8d83bdULL, 0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
        0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL, 0x958a324ceb064572ULL,
};

/*
 * SipHash-1-3, same key and messages, low 32 bits: Linux lib/siphash_kunit.c
 * test_vectors_hsiphash for BITS_PER_LONG == 64, where hsiphash() is
 * SipHash-1-3 truncated to u32. No official 64-bit 1-3 vector set exists.
 */
static const uint32_t vec_siphash13_lo32[64] = {
        0x050fc4dc, 0x7d57ca93, 0x4dc7d44d, 0xe7ddf7fb, 0x88d38328, 0x49533b67, 0xc59f22a7,
        0x9bb11140, 0x8d299a8e, 0x6c063de4, 0x92ff097f, 0xf94dc352, 0x57b4d9a2, 0x1229ffa7,
        0xc0f95d34, 0x2a519956, 0x7d908b66, 0x63dbd80c, 0xb473e63e, 0x8d297d1c, 0xa6cce040,
        0x2b45f844, 0xa320872e, 0xdae6c123, 0x67349c8c, 0x705b0979, 0xca9913a5, 0x4ade3b35,
        0xef6cd00d, 0x4ab1e1f4, 0x43c5e663, 0x8c21d1bc, 0x16a7b60d, 0x7a8ff9bf, 0x1f2a753e,
        0xbf186b91, 0xada26206, 0xa3c33057, 0xae3a36a1, 0x7b108392, 0x99e41531, 0x3f1ad944,
        0xc8138825, 0xc28949a6, 0xfaf8876b, 0x9f042196, 0x68b1d623, 0x8b5114fd, 0xdf074c46,
        0x12cc86b3, 0x0a52098f, 0x9d292f9a, 0xa2f41f12, 0x43a71ed0, 0x73f0bce6, 0x70a7e980,
        0x243c6d75, 0xfdb71513, 0xa67d8a08, 0xb7e8f148, 0xf7a644ee, 0x0f1837f2, 0x4b6694e0,
        0xb7bbb3a8,
};

/* The oracle itself: c=2, d=4 reproduces the published 2-4 vectors. */
static void
test_hash_reference_matches_siphash24_vectors(void **state)
{
	uint8_t m[64];

	(void)state;
	for (int i = 0; i < 64; i++)
		m[i] = (uint8_t)i;
	for (size_t n = 0; n < 64; n++) {
		uint64_t got = ref_siphash(2, 4, vec_key.k0, vec_key.k1, m, n);

		if (got != vec_siphash24[n])
			fail_msg("reference SipHash-2-4 len %zu: %016llx, want %016llx", n,
			         (unsigned long long)got, (unsigned long long)vec_siphash24[n]);
	}
}

/* The module against the kernel's SipHash-1-3 vectors, and the oracle likewise. */
static void
test_hash_bytes_matches_siphash13_vectors(void **state)
{
	uint8_t m[64 + 1];

	(void)state;
	for (int i = 0; i < 64; i++)
		m[i] = (uint8_t)i;
	for (size_t n = 0; n < 64; n++) {
		uint64_t ref = ref_siphash(1, 3, vec_key.k0, vec_key.k1, m, n);
		uint64_t got = lb_hash_bytes(&vec_key, m, n);

		if ((uint32_t)ref != vec_siphash13_lo32[n])
			fail_msg("reference SipHash-1-3 len %zu: %08x, want %08x", n, (uint32_t)ref,
			         vec_siphash13_lo32[n]);
		if (got != ref)
			fail_msg("lb_hash_bytes len %zu: %016llx, want %016llx", n,
			         (unsigned long long)got, (unsigned long long)ref);
	}
}

/* Random keys, random messages of every length 0..64, random (unaligned) offsets. */
static void
test_hash_bytes_matches_reference_random(void **state)
{
	uint64_t rng = 0x5157u;
	uint8_t buf[64 + 8];

	(void)state;
	for (int iter = 0; iter < 200; iter++) {
		struct lb_hash_key k = {rng_next(&rng), rng_next(&rng)};

		for (size_t n = 0; n <= 64; n++) {
			size_t off = (size_t)(rng_next(&rng) & 7);
			uint64_t got, want;

			rng_fill(&rng, buf, sizeof(buf));
			got = lb_hash_bytes(&k, buf + off, n);
			want = ref_siphash(1, 3, k.k0, k.k1, buf + off, n);
			if (got != want)
				fail_msg("key %016llx:%016llx len %zu off %zu: %016llx, want "
				         "%016llx",
				         (unsigned long long)k.k0, (unsigned long long)k.k1, n, off,
				         (unsigned long long)got, (unsigned long long)want);
		}
	}
}

/* Bytes past len must not leak into the hash (tail handling). */
static void
test_hash_bytes_ignores_bytes_past_len(void **state)
{
	struct lb_hash_key k = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};
	uint8_t a[72], b[72];
	uint64_t rng = 77;

	(void)state;
	for (size_t n = 0; n < 64; n++) {
		rng_fill(&rng, a, sizeof(a));
		memcpy(b, a, sizeof(b));
		for (size_t i = n; i < sizeof(b); i++)
			b[i] = (uint8_t)~b[i];
		assert_int_equal(lb_hash_bytes(&k, a, n), lb_hash_bytes(&k, b, n));
	}
}

static void
random_flow_key(uint64_t *rng, struct lb_flow_key *fk)
{
	memset(fk, 0, sizeof(*fk));
	fk->af = (rng_next(rng) & 1) ? LB_AF_INET : LB_AF_INET6;
	if (fk->af == LB_AF_INET) {
		fk->src.w[0] = (uint32_t)rng_next(rng);
		fk->dst.w[0] = (uint32_t)rng_next(rng);
	} else {
		fk->src.q[0] = rng_next(rng);
		fk->src.q[1] = rng_next(rng);
		fk->dst.q[0] = rng_next(rng);
		fk->dst.q[1] = rng_next(rng);
	}
	fk->sport = (uint16_t)rng_next(rng);
	fk->dport = (uint16_t)rng_next(rng);
	fk->proto = (rng_next(rng) & 1) ? 6 : 17;
}

static void
test_hash_flow_equals_bytes(void **state)
{
	uint64_t rng = 0xf10f;

	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct lb_hash_key k = {rng_next(&rng), rng_next(&rng)};
		struct lb_flow_key fk;
		uint64_t want;

		random_flow_key(&rng, &fk);
		/* Every byte matters, padding included: hash random padding too. */
		if (i % 2)
			rng_fill(&rng, &fk, sizeof(fk));
		want = lb_hash_bytes(&k, &fk, sizeof(fk));
		assert_int_equal(lb_hash_flow(&k, &fk), want);
		assert_int_equal(want, ref_siphash(1, 3, k.k0, k.k1, (const uint8_t *)&fk, 40));
	}
}

static void
test_hash_key_from_seed_deterministic(void **state)
{
	static const char *const seeds[] = {"",
	                                    "a",
	                                    "b",
	                                    "spillway",
	                                    "spillwaY",
	                                    "spillway ",
	                                    "0123456789abcdef0123456789abcdef0123456789"};
	struct lb_hash_key k[sizeof(seeds) / sizeof(seeds[0])];
	size_t n = sizeof(seeds) / sizeof(seeds[0]);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		struct lb_hash_key again;

		memset(&k[i], 0xA5, sizeof(k[i]));
		lb_hash_key_from_seed(&k[i], seeds[i], strlen(seeds[i]));
		memset(&again, 0x5A, sizeof(again));
		lb_hash_key_from_seed(&again, seeds[i], strlen(seeds[i]));
		assert_memory_equal(&k[i], &again, sizeof(again));
		/* The two halves come from distinct domain keys. */
		assert_int_not_equal(k[i].k0, k[i].k1);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			if (k[i].k0 == k[j].k0 || k[i].k1 == k[j].k1)
				fail_msg("seeds \"%s\" and \"%s\" share a key half", seeds[i],
				         seeds[j]);
		}
}

/* Only len bytes of the seed count (seeds need not be NUL-terminated). */
static void
test_hash_key_from_seed_uses_len(void **state)
{
	struct lb_hash_key a, b;

	(void)state;
	lb_hash_key_from_seed(&a, "spillway-and-more", 8);
	lb_hash_key_from_seed(&b, "spillway", 8);
	assert_memory_equal(&a, &b, sizeof(a));
	lb_hash_key_from_seed(&b, "spillway-and-more", 9);
	assert_memory_not_equal(&a, &b, sizeof(a));
}

/*
 * Known answers. These pin cross-machine (and cross-release) determinism: every
 * instance sharing a seed must pick the same backend for the same flow, so these
 * values may never change. They were computed with the independent reference
 * above from the literal bytes (flow key laid out by hand, ports big-endian).
 */
static void
test_hash_known_answers_pinned(void **state)
{
	static const char msg[] = "spillway known answer";
	const struct lb_hash_key k = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
	struct lb_hash_key seeded;
	struct lb_flow_key fk;

	(void)state;
	assert_int_equal(lb_hash_bytes(&k, msg, sizeof(msg) - 1), 0x6143ddc525c67da9ULL);

	lb_hash_key_from_seed(&seeded, "spillway", 8); /* the configured default seed */
	assert_int_equal(seeded.k0, 0x52dd15b1602d8622ULL);
	assert_int_equal(seeded.k1, 0x2587277dc48b7a91ULL);

	/* 198.51.100.7:40000 -> 203.0.113.10:443 TCP, ports in network byte order. */
	memset(&fk, 0, sizeof(fk));
	fk.src.b[0] = 198, fk.src.b[1] = 51, fk.src.b[2] = 100, fk.src.b[3] = 7;
	fk.dst.b[0] = 203, fk.dst.b[1] = 0, fk.dst.b[2] = 113, fk.dst.b[3] = 10;
	fk.sport = htons(40000);
	fk.dport = htons(443);
	fk.proto = 6;
	fk.af = LB_AF_INET;
	assert_int_equal(lb_hash_flow(&seeded, &fk), 0x44a2ff5d318e8ae1ULL);
}

/*
 * Pearson chi-square of n hashes mod 100 buckets. 99 degrees of freedom: mean
 * 99, sd 14; the 1e-9 upper tail starts near 190, so 200 fails only a broken hash.
 */
#define CHI_BUCKETS 100
#define CHI_N 100000
#define CHI_BOUND 200.0

static double
chi_square(const uint32_t *count)
{
	double expect = (double)CHI_N / CHI_BUCKETS, chi = 0;

	for (int i = 0; i < CHI_BUCKETS; i++) {
		double d = count[i] - expect;

		chi += d * d / expect;
	}
	return chi;
}

static void
test_hash_flow_spreads_random_keys(void **state)
{
	uint32_t count[CHI_BUCKETS] = {0};
	struct lb_hash_key k;
	uint64_t rng = 0xc41;
	double chi;

	(void)state;
	lb_hash_key_from_seed(&k, "spread", 6);
	for (int i = 0; i < CHI_N; i++) {
		struct lb_flow_key fk;

		random_flow_key(&rng, &fk);
		count[lb_hash_flow(&k, &fk) % CHI_BUCKETS]++;
	}
	chi = chi_square(count);
	print_message("random keys: chi-square %.1f (99 df)\n", chi);
	assert_true(chi < CHI_BOUND);
}

/* Structured keys (one client, sequential source ports) must spread as well. */
static void
test_hash_flow_spreads_sequential_ports(void **state)
{
	uint32_t count[CHI_BUCKETS] = {0};
	struct lb_hash_key k;
	double chi;

	(void)state;
	lb_hash_key_from_seed(&k, "spread", 6);
	for (int i = 0; i < CHI_N; i++) {
		struct lb_flow_key fk;

		memset(&fk, 0, sizeof(fk));
		fk.af = LB_AF_INET;
		fk.proto = 6;
		fk.src.w[0] = 0x0a000000u + (uint32_t)(i >> 16);
		fk.dst.w[0] = 0x0a7100cbu;
		fk.sport = (uint16_t)i;
		fk.dport = 0xbb01;
		count[lb_hash_flow(&k, &fk) % CHI_BUCKETS]++;
	}
	chi = chi_square(count);
	print_message("sequential ports: chi-square %.1f (99 df)\n", chi);
	assert_true(chi < CHI_BOUND);
}

/* The key matters: the same flows under two seeds land in unrelated buckets. */
static void
test_hash_flow_depends_on_key(void **state)
{
	struct lb_hash_key a, b;
	uint64_t rng = 9;
	int same = 0;

	(void)state;
	lb_hash_key_from_seed(&a, "one", 3);
	lb_hash_key_from_seed(&b, "two", 3);
	for (int i = 0; i < 10000; i++) {
		struct lb_flow_key fk;

		random_flow_key(&rng, &fk);
		same += lb_hash_flow(&a, &fk) % 100 == lb_hash_flow(&b, &fk) % 100;
	}
	/* Expected 100 (1 in 100); binomial sd 10. */
	assert_in_range(same, 40, 160);
}

/*
 * The vector variants the pipeline runs (x4: AVX2, x8: AVX-512F) against
 * lb_hash_flow() on random keys of both families, random keys and random
 * padding, each only where the CPU has it (said so when skipped). The keys
 * are in an array with a stride, as the pipeline's per-packet state has them.
 */
struct strided_key {
	struct lb_flow_key key;
	uint64_t other[3];
};

static void
random_vector_keys(uint64_t *rng, struct strided_key *k, int n, int i)
{
	for (int j = 0; j < n; j++) {
		random_flow_key(rng, &k[j].key);
		if ((i + j) % 3 == 0)
			rng_fill(rng, &k[j].key, sizeof(k[j].key)); /* padding too */
		k[j].other[0] = rng_next(rng);
	}
}

static void
test_hash_flow_x4_equals_scalar(void **state)
{
	(void)state;
#ifdef LB_HASH_HAVE_X4
	uint64_t rng = 0x4444;

	assert_true(isa_present("avx2"));

	for (int i = 0; i < 50000; i++) {
		struct lb_hash_key k = {rng_next(&rng), rng_next(&rng)};
		struct strided_key keys[4];
		const struct lb_flow_key *kp[4];
		uint64_t h[4];

		random_vector_keys(&rng, keys, 4, i);
		for (int j = 0; j < 4; j++)
			kp[j] = &keys[j].key;
		lb_hash_flow_x4(&k, kp, h);
		for (int j = 0; j < 4; j++)
			assert_int_equal(h[j], lb_hash_flow(&k, kp[j]));
	}
	print_message("lb_hash_flow_x4: 200000 keys checked\n");
#else
	fail_msg("lb_hash_flow_x4: not built on this target");
#endif
}

static void
test_hash_flow_x8_equals_scalar(void **state)
{
	(void)state;
#ifdef LB_HASH_HAVE_X8
	uint64_t rng = 0x8888;

	assert_true(isa_present("avx512f"));

	for (int i = 0; i < 50000; i++) {
		struct lb_hash_key k = {rng_next(&rng), rng_next(&rng)};
		struct strided_key keys[8];
		const struct lb_flow_key *kp[8];
		uint64_t h[8];

		random_vector_keys(&rng, keys, 8, i);
		/* Any eight keys, in any order, the same one twice included. */
		for (int j = 0; j < 8; j++)
			kp[j] = &keys[(i % 5 == 0) ? (j * 3 + i) % 8 : j].key;
		if (i % 7 == 0)
			kp[5] = kp[2];
		lb_hash_flow_x8(&k, kp, h);
		for (int j = 0; j < 8; j++)
			assert_int_equal(h[j], lb_hash_flow(&k, kp[j]));
		/* The strided form (word 4 by a gather), as the pipeline calls it. */
		lb_hash_flow_x8s(&k, &keys[0].key, sizeof(keys[0]), h);
		for (int j = 0; j < 8; j++)
			assert_int_equal(h[j], lb_hash_flow(&k, &keys[j].key));
	}
	print_message("lb_hash_flow_x8 and _x8s: 400000 keys each checked\n");
#else
	fail_msg("lb_hash_flow_x8: not built on this target");
#endif
}

/*
 * Without arguments: the portable cases. --isa=avx2 and --isa=avx512f: the
 * vector hashes against the scalar one, each a meson test of its own that is
 * reported as skipped (77) on a CPU without the instructions.
 */
int
main(int argc, char **argv)
{
	const char *isa = isa_arg(argc, argv);
	const struct CMUnitTest portable[] = {
	        cmocka_unit_test(test_hash_reference_matches_siphash24_vectors),
	        cmocka_unit_test(test_hash_bytes_matches_siphash13_vectors),
	        cmocka_unit_test(test_hash_bytes_matches_reference_random),
	        cmocka_unit_test(test_hash_bytes_ignores_bytes_past_len),
	        cmocka_unit_test(test_hash_flow_equals_bytes),
	        cmocka_unit_test(test_hash_key_from_seed_deterministic),
	        cmocka_unit_test(test_hash_key_from_seed_uses_len),
	        cmocka_unit_test(test_hash_known_answers_pinned),
	        cmocka_unit_test(test_hash_flow_spreads_random_keys),
	        cmocka_unit_test(test_hash_flow_spreads_sequential_ports),
	        cmocka_unit_test(test_hash_flow_depends_on_key),
	};
	const struct CMUnitTest avx2[] = {
	        cmocka_unit_test(test_hash_flow_x4_equals_scalar),
	};
	const struct CMUnitTest avx512f[] = {
	        cmocka_unit_test(test_hash_flow_x8_equals_scalar),
	};

	if (!isa)
		return cmocka_run_group_tests(portable, NULL, NULL);
	if (strcmp(isa, "avx2") == 0) {
		if (isa_skip(isa, "lb_hash_flow_x4 (the four-lane hash)"))
			return SPW_TEST_SKIP;
		return cmocka_run_group_tests(avx2, NULL, NULL);
	}
	if (strcmp(isa, "avx512f") == 0) {
		if (isa_skip(isa, "lb_hash_flow_x8 and _x8s (the eight-lane hash)"))
			return SPW_TEST_SKIP;
		return cmocka_run_group_tests(avx512f, NULL, NULL);
	}
	fprintf(stderr, "test_hash: unknown --isa=%s\n", isa);
	return 2;
}
