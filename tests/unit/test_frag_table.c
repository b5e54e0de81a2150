/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the per-core fragment table: a recorded datagram's ports are
 * found until the timeout and not after (also across the tick counter's
 * wrap), a full bucket replaces its oldest entry and says so, the table never
 * holds more than its capacity, and lb_frag_inspect() reads identification,
 * offset and ports of IPv4 and IPv6 fragments built here byte by byte.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>

#include <cmocka.h>

#include "dataplane/frag_table.h"

static const struct lb_hash_key hk = {0x0123456789abcdefull, 0xfedcba9876543210ull};

static struct lb_frag_key
key4(uint32_t src, uint32_t id)
{
	struct lb_frag_key k;

	memset(&k, 0, sizeof(k));
	memcpy(k.src.b, &src, 4);
	k.dst.b[0] = 192, k.dst.b[1] = 0, k.dst.b[2] = 2, k.dst.b[3] = 60;
	k.id = id;
	k.proto = 17;
	k.af = LB_AF_INET;
	return k;
}

static void
test_frag_find_until_timeout(void **state)
{
	struct lb_frag_table *t = lb_frag_table_create(64, 100);
	struct lb_frag_key k = key4(1, 77);
	uint16_t sp = 0, dp = 0;

	(void)state;
	assert_non_null(t);
	assert_int_equal(lb_frag_find(t, &hk, &k, 5, &sp, &dp), -ENOENT);
	assert_int_equal(lb_frag_record(t, &hk, &k, 1111, 5353, 10), 0);
	assert_int_equal(lb_frag_find(t, &hk, &k, 10, &sp, &dp), 0);
	assert_int_equal(sp, 1111);
	assert_int_equal(dp, 5353);
	/* 99 ticks old: live; 100: gone */
	assert_int_equal(lb_frag_find(t, &hk, &k, 109, &sp, &dp), 0);
	assert_int_equal(lb_frag_find(t, &hk, &k, 110, &sp, &dp), -ENOENT);
	/* another id of the same addresses is another datagram */
	k.id = 78;
	assert_int_equal(lb_frag_find(t, &hk, &k, 20, &sp, &dp), -ENOENT);
	lb_frag_table_free(t);
}

static void
test_frag_timeout_across_wrap(void **state)
{
	struct lb_frag_table *t = lb_frag_table_create(16, 1000);
	struct lb_frag_key k = key4(2, 9);
	uint16_t sp, dp;

	(void)state;
	assert_non_null(t);
	lb_frag_record(t, &hk, &k, 1, 2, UINT32_MAX - 10);
	assert_int_equal(lb_frag_find(t, &hk, &k, 500, &sp, &dp), 0);
	assert_int_equal(lb_frag_find(t, &hk, &k, 988, &sp, &dp), 0);
	assert_int_equal(lb_frag_find(t, &hk, &k, 989, &sp, &dp), -ENOENT);
	lb_frag_table_free(t);
}

/* The same datagram again refreshes its one entry instead of taking another. */
static void
test_frag_record_again(void **state)
{
	struct lb_frag_table *t = lb_frag_table_create(4, 100); /* one bucket */
	struct lb_frag_key k = key4(3, 1);
	uint16_t sp, dp;

	(void)state;
	assert_non_null(t);
	for (int i = 0; i < 10; i++)
		assert_int_equal(lb_frag_record(t, &hk, &k, (uint16_t)i, 53, (uint32_t)i), 0);
	assert_int_equal(lb_frag_find(t, &hk, &k, 50, &sp, &dp), 0);
	assert_int_equal(sp, 9);
	/* three more datagrams fit without evicting it */
	for (uint32_t id = 2; id <= 4; id++) {
		struct lb_frag_key o = key4(3, id);

		assert_int_equal(lb_frag_record(t, &hk, &o, 1, 1, 20), 0);
	}
	assert_int_equal(lb_frag_find(t, &hk, &k, 50, &sp, &dp), 0);
	lb_frag_table_free(t);
}

/* A full bucket: the oldest entry goes, counted; an aged one is reused silently. */
static void
test_frag_bound_evicts_oldest(void **state)
{
	struct lb_frag_table *t = lb_frag_table_create(4, 1000); /* one 4-way bucket */
	struct lb_frag_key k[6];
	uint16_t sp, dp;

	(void)state;
	assert_non_null(t);
	for (uint32_t i = 0; i < 6; i++)
		k[i] = key4(4, i);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(lb_frag_record(t, &hk, &k[i], (uint16_t)i, 1, 10 + i), 0);
	assert_int_equal(lb_frag_record(t, &hk, &k[4], 4, 1, 20), 1);
	assert_int_equal(lb_frag_find(t, &hk, &k[0], 21, &sp, &dp), -ENOENT);
	for (uint32_t i = 1; i < 5; i++) {
		assert_int_equal(lb_frag_find(t, &hk, &k[i], 21, &sp, &dp), 0);
		assert_int_equal(sp, i);
	}
	/* at 1011 the entry of tick 11 has aged out: its way is reused, no eviction */
	assert_int_equal(lb_frag_record(t, &hk, &k[5], 5, 1, 1011), 0);
	assert_int_equal(lb_frag_find(t, &hk, &k[5], 1011, &sp, &dp), 0);
	assert_int_equal(lb_frag_find(t, &hk, &k[2], 1011, &sp, &dp), 0);
	lb_frag_table_free(t);
}

/* Many datagrams into a small table: never more live entries than capacity. */
static void
test_frag_capacity_bound(void **state)
{
	struct lb_frag_table *t = lb_frag_table_create(64, LB_FRAG_MAX_TIMEOUT);
	unsigned int live = 0, evicted = 0;
	uint16_t sp, dp;

	(void)state;
	assert_non_null(t);
	for (uint32_t i = 0; i < 1000; i++) {
		struct lb_frag_key k = key4(5, i);

		evicted += (unsigned int)lb_frag_record(t, &hk, &k, 1, 1, i);
	}
	for (uint32_t i = 0; i < 1000; i++) {
		struct lb_frag_key k = key4(5, i);

		live += lb_frag_find(t, &hk, &k, 1000, &sp, &dp) == 0;
	}
	assert_true(live <= 64);
	assert_int_equal(live + evicted, 1000);
	/* the most recent datagram is always there */
	struct lb_frag_key last = key4(5, 999);

	assert_int_equal(lb_frag_find(t, &hk, &last, 1000, &sp, &dp), 0);
	lb_frag_table_free(t);
}

static void
test_frag_create_rejects(void **state)
{
	(void)state;
	errno = 0;
	assert_null(lb_frag_table_create(0, 10));
	assert_int_equal(errno, EINVAL);
	assert_null(lb_frag_table_create(16, 0));
	assert_null(lb_frag_table_create((1u << 24) + 1, 10));
	assert_null(lb_frag_table_create(16, LB_FRAG_MAX_TIMEOUT + 1));
	lb_frag_table_free(NULL);
}

/* IPv4 (RFC 791): id at byte 4, flags/offset at 6, ports after IHL * 4 bytes. */
static void
test_frag_inspect_ip4(void **state)
{
	uint8_t ip[40] = {0x46, 0, 0, 40, 0xab, 0xcd, 0x20, 0x00, 64, 17};
	struct lb_frag_meta fm;

	(void)state;
	/* IHL 6: one option word, ports at 24 */
	ip[24] = 0x12, ip[25] = 0x34, ip[26] = 0x14, ip[27] = 0xe9;
	assert_int_equal(lb_frag_inspect(ip, sizeof(ip), LB_AF_INET, &fm), 0);
	assert_int_equal(fm.id, 0xabcd);
	assert_true(fm.first);
	assert_true(fm.has_ports);
	assert_int_equal(fm.sport, htons(0x1234));
	assert_int_equal(fm.dport, htons(5353));
	/* a cut first fragment: no ports */
	assert_int_equal(lb_frag_inspect(ip, 26, LB_AF_INET, &fm), 0);
	assert_true(fm.first);
	assert_false(fm.has_ports);
	/* offset 185 * 8, MF clear: a last fragment */
	ip[6] = 0x00, ip[7] = 185;
	assert_int_equal(lb_frag_inspect(ip, sizeof(ip), LB_AF_INET, &fm), 0);
	assert_false(fm.first);
	assert_false(fm.has_ports);
	/* neither MF nor offset: not a fragment */
	ip[7] = 0;
	assert_int_equal(lb_frag_inspect(ip, sizeof(ip), LB_AF_INET, &fm), -EINVAL);
}

/* IPv6 (RFC 8200 §4.5): hop-by-hop, then the fragment header, then UDP. */
static void
test_frag_inspect_ip6(void **state)
{
	uint8_t ip[40 + 8 + 8 + 8];
	struct lb_frag_meta fm;

	(void)state;
	memset(ip, 0, sizeof(ip));
	ip[0] = 0x60;
	ip[6] = 0;     /* hop-by-hop */
	ip[40] = 44;   /* next: fragment */
	ip[41] = 0;    /* 8 bytes */
	ip[48] = 17;   /* fragment header: next UDP */
	ip[50] = 0x00; /* offset 0 */
	ip[51] = 0x01; /* M */
	ip[52] = 0xde, ip[53] = 0xad, ip[54] = 0xbe, ip[55] = 0xef;
	ip[56] = 0x00, ip[57] = 0x35, ip[58] = 0x14, ip[59] = 0xe9;
	assert_int_equal(lb_frag_inspect(ip, sizeof(ip), LB_AF_INET6, &fm), 0);
	assert_true(fm.first);
	assert_true(fm.has_ports);
	assert_memory_equal(&fm.id, ip + 52, 4);
	assert_int_equal(fm.sport, htons(53));
	assert_int_equal(fm.dport, htons(5353));
	/* a later fragment: offset 8 * 8 */
	ip[50] = 0x00, ip[51] = 0x40;
	assert_int_equal(lb_frag_inspect(ip, sizeof(ip), LB_AF_INET6, &fm), 0);
	assert_false(fm.first);
	assert_false(fm.has_ports);
	/* no fragment header at all */
	ip[40] = 17;
	assert_int_equal(lb_frag_inspect(ip, sizeof(ip), LB_AF_INET6, &fm), -EINVAL);
	/* an extension header running past the bytes given */
	ip[40] = 44, ip[41] = 9;
	assert_int_equal(lb_frag_inspect(ip, sizeof(ip), LB_AF_INET6, &fm), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_frag_find_until_timeout),
	        cmocka_unit_test(test_frag_timeout_across_wrap),
	        cmocka_unit_test(test_frag_record_again),
	        cmocka_unit_test(test_frag_bound_evicts_oldest),
	        cmocka_unit_test(test_frag_capacity_bound),
	        cmocka_unit_test(test_frag_create_rejects),
	        cmocka_unit_test(test_frag_inspect_ip4),
	        cmocka_unit_test(test_frag_inspect_ip6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
