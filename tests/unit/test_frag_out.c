/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the outer-packet fragmenter: encapsulated IPv4 and IPv6
 * frames (one mbuf or a chain) are cut into fragments whose lengths, offsets,
 * MF / M flags, identification and checksums the test computes itself from
 * RFC 791 §3.2 (NFB = (MTU - IHL*4) / 8) and RFC 8200 §4.5, and whose
 * reassembly gives back the outer payload byte for byte; the limits (fits
 * already, too many fragments, pool empty) leave nothing allocated.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "eal.h"
#include "dataplane/frag_out.h"

#define POOL_SIZE 256
#define SEG 2048 /* the pool's data room after the headroom: the test's own figure */
#define BIG 9200

static struct rte_mempool *g_pool, *g_tiny;

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* RFC 1071 over a header that includes its checksum: 0xFFFF when right. */
static uint32_t
sum16(const uint8_t *b, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return s;
}

/*
 * An encapsulated frame: Ethernet, outer header (IPv4 with DF, id 0, TTL 64,
 * protocol 4; or IPv6 with next header 41), then payload bytes of a pattern.
 */
static uint32_t
frame(uint8_t *b, bool v6, uint32_t payload)
{
	uint32_t ihl = v6 ? 40 : 20;

	memset(b, 0, 14 + ihl);
	memset(b, 0x02, 12);
	b[12] = v6 ? 0x86 : 0x08;
	b[13] = v6 ? 0xDD : 0x00;
	if (!v6) {
		uint8_t *ip = b + 14;
		uint32_t s;

		ip[0] = 0x45;
		ip[1] = 0x28;
		ip[2] = (uint8_t)((20 + payload) >> 8);
		ip[3] = (uint8_t)(20 + payload);
		ip[6] = 0x40; /* DF */
		ip[8] = 64;
		ip[9] = 4;
		memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x01\x00\x07", 8);
		s = sum16(ip, 20);
		ip[10] = (uint8_t)(~s >> 8);
		ip[11] = (uint8_t)~s;
	} else {
		uint8_t *ip = b + 14;

		ip[0] = 0x60;
		ip[4] = (uint8_t)(payload >> 8);
		ip[5] = (uint8_t)payload;
		ip[6] = 41;
		ip[7] = 64;
		for (int i = 8; i < 40; i++)
			ip[i] = (uint8_t)(0x20 + i);
	}
	for (uint32_t i = 0; i < payload; i++)
		b[14 + ihl + i] = (uint8_t)(i * 7 + (i >> 8));
	return 14 + ihl + payload;
}

static struct rte_mbuf *
mk(const uint8_t *b, uint32_t len, uint32_t seg)
{
	struct rte_mbuf *head = NULL;

	for (uint32_t off = 0; off < len; off += seg) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
		uint32_t n = len - off < seg ? len - off : seg;

		assert_non_null(m);
		memcpy(rte_pktmbuf_append(m, (uint16_t)n), b + off, n);
		if (head == NULL)
			head = m;
		else
			assert_int_equal(rte_pktmbuf_chain(head, m), 0);
	}
	return head;
}

/*
 * Split a frame of payload bytes at mtu and check every fragment against the
 * RFC's rules: unit is the test's own figure for the bytes of all but the last.
 */
static void
check_split(bool v6, uint32_t payload, uint16_t mtu, uint32_t seg, uint32_t unit)
{
	static uint8_t b[BIG], re[BIG];
	uint32_t len = frame(b, v6, payload), ihl = v6 ? 40 : 20, fh = v6 ? 8 : 0;
	uint32_t n_exp = (payload + unit - 1) / unit, got = 0;
	unsigned int avail = rte_mempool_avail_count(g_pool);
	struct rte_mbuf *m = mk(b, len, seg), *fr[LB_FRAG_OUT_MAX];
	int n = lb_frag_out_split(m, mtu, 0x1234ABCD, fr, LB_FRAG_OUT_MAX);

	assert_int_equal(n, n_exp);
	assert_int_equal(rte_pktmbuf_pkt_len(m), len); /* the input is untouched */
	for (int i = 0; i < n; i++) {
		const uint8_t *p = rte_pktmbuf_mtod(fr[i], const uint8_t *);
		const uint8_t *ip = p + 14;
		uint32_t flen = i + 1 < n ? unit : payload - (uint32_t)i * unit;
		bool last = i + 1 == n;

		assert_int_equal(fr[i]->nb_segs, 1);
		assert_int_equal(rte_pktmbuf_pkt_len(fr[i]), 14 + ihl + fh + flen);
		assert_true(ihl + fh + flen <= mtu);
		assert_memory_equal(p, b, 14);
		if (!v6) {
			/* RFC 791: total length, same id, DF clear, MF on all but the
			 * last, offset in 8-byte units, a valid header checksum */
			assert_int_equal(rd16(ip + 2), 20 + flen);
			assert_int_equal(rd16(ip + 4), 0xABCD);
			assert_int_equal(rd16(ip + 6), (last ? 0 : 0x2000) | (i * unit / 8));
			assert_int_equal(sum16(ip, 20), 0xFFFF);
			assert_memory_equal(ip + 8, b + 14 + 8, 2); /* TTL, protocol */
			assert_memory_equal(ip + 12, b + 14 + 12, 8);
			assert_int_equal(ip[1], b[15]);
		} else {
			/* RFC 8200 §4.5: payload length, next header 44, then the
			 * fragment header with the original next header, offset,
			 * M on all but the last, and the identification */
			const uint8_t *f = ip + 40;

			assert_int_equal(rd16(ip + 4), 8 + flen);
			assert_int_equal(ip[6], 44);
			assert_memory_equal(ip + 7, b + 14 + 7, 33);
			assert_int_equal(f[0], 41);
			assert_int_equal(f[1], 0);
			assert_int_equal(rd16(f + 2), ((i * unit / 8) << 3) | (last ? 0 : 1));
			assert_int_equal(rd32(f + 4), 0x1234ABCD);
		}
		if (!last)
			assert_int_equal(flen % 8, 0);
		memcpy(re + i * unit, p + 14 + ihl + fh, flen);
		got += flen;
	}
	assert_int_equal(got, payload);
	assert_memory_equal(re, b + 14 + ihl, payload);
	rte_pktmbuf_free_bulk(fr, (unsigned int)n);
	rte_pktmbuf_free(m);
	assert_int_equal(rte_mempool_avail_count(g_pool), avail);
}

/* RFC 791: NFB = (MTU - IHL*4) / 8; all but the last fragment carry NFB*8 bytes. */
static uint32_t
nfb8(uint16_t mtu)
{
	return (uint32_t)(mtu - 20) / 8 * 8;
}

/* RFC 8200 §4.5: per fragment, the fragmentable part in multiples of 8 after 40 + 8 bytes. */
static uint32_t
unit6(uint16_t mtu)
{
	return (uint32_t)(mtu - 48) / 8 * 8;
}

static void
test_frag_out_ipv4(void **state)
{
	(void)state;
	check_split(false, 1480 + 1, 1500, SEG, nfb8(1500)); /* one byte over: 2 fragments */
	check_split(false, 1500, 1300, SEG, nfb8(1300));
	check_split(false, 1283, 1283, SEG, nfb8(1283)); /* MTU not a multiple of 8 after 20 */
	check_split(false, 4000, 1280, 700, nfb8(1280)); /* a chain, cut off the 8-byte grid */
	check_split(false, 1281, 1300, SEG, nfb8(1300)); /* the last fragment is 1 byte */
}

static void
test_frag_out_ipv6(void **state)
{
	(void)state;
	check_split(true, 1280 + 8, 1300, SEG, unit6(1300)); /* 1328 bytes at MTU 1300 */
	check_split(true, 1300, 1289, SEG, unit6(1289));     /* MTU - 48 not a multiple of 8 */
	check_split(true, 6000, 1500, 999, unit6(1500));
}

/* An MTU above the mbuf's room: fragments are made to fit one mbuf each. */
static void
test_frag_out_room(void **state)
{
	(void)state;
	/* room 2048 - 14 for the frame: IPv4 2034 → 2014 / 8 * 8 bytes */
	check_split(false, 9100, 9000, 1500, (SEG - 14 - 20) / 8 * 8);
	check_split(true, 9100, 9000, 1500, (SEG - 14 - 48) / 8 * 8);
}

static void
test_frag_out_limits(void **state)
{
	static uint8_t b[BIG];
	struct rte_mbuf *m, *fr[LB_FRAG_OUT_MAX];
	unsigned int avail;
	uint32_t len;

	(void)state;
	/* fits: nothing to do */
	len = frame(b, false, 1480);
	m = mk(b, len, SEG);
	avail = rte_mempool_avail_count(g_pool);
	assert_int_equal(lb_frag_out_split(m, 1500, 1, fr, LB_FRAG_OUT_MAX), -EINVAL);
	/* 3 fragments needed, 2 allowed */
	len = frame(b, false, 3000);
	rte_pktmbuf_free(m);
	m = mk(b, len, SEG);
	avail = rte_mempool_avail_count(g_pool);
	assert_int_equal(lb_frag_out_split(m, 1300, 1, fr, 2), -ENOSPC);
	assert_int_equal(rte_mempool_avail_count(g_pool), avail);
	/* not IP */
	rte_pktmbuf_mtod(m, uint8_t *)[12] = 0x08;
	rte_pktmbuf_mtod(m, uint8_t *)[13] = 0x06;
	assert_int_equal(lb_frag_out_split(m, 1300, 1, fr, LB_FRAG_OUT_MAX), -EINVAL);
	rte_pktmbuf_free(m);

	/* a pool with 2 mbufs left: 3 fragments cannot be had, none is kept */
	{
		struct rte_mbuf *hold[8], *t;
		unsigned int k = 0;

		t = rte_pktmbuf_alloc(g_tiny);
		assert_non_null(t);
		memcpy(rte_pktmbuf_append(t, (uint16_t)(14 + 20 + 1600)), b, 14 + 20 + 1600);
		while (rte_mempool_avail_count(g_tiny) > 2) {
			hold[k] = rte_pktmbuf_alloc(g_tiny);
			assert_non_null(hold[k]);
			k++;
		}
		assert_int_equal(lb_frag_out_split(t, 600 + 20, 1, fr, LB_FRAG_OUT_MAX), -ENOMEM);
		assert_int_equal(rte_mempool_avail_count(g_tiny), 2);
		rte_pktmbuf_free_bulk(hold, k);
		rte_pktmbuf_free(t);
	}
}

static int
group_setup(void **state)
{
	(void)state;
	if (test_eal_init("test", "test-frag-out") < 0) {
		fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	g_pool = rte_pktmbuf_pool_create("frag_out", POOL_SIZE, 0, 0, SEG + RTE_PKTMBUF_HEADROOM,
	                                 SOCKET_ID_ANY);
	g_tiny = rte_pktmbuf_pool_create("frag_out_tiny", 8, 0, 0, SEG + RTE_PKTMBUF_HEADROOM,
	                                 SOCKET_ID_ANY);
	return g_pool != NULL && g_tiny != NULL ? 0 : -1;
}

static int
group_teardown(void **state)
{
	(void)state;
	rte_mempool_free(g_pool);
	rte_mempool_free(g_tiny);
	rte_eal_cleanup();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_frag_out_ipv4),
	        cmocka_unit_test(test_frag_out_ipv6),
	        cmocka_unit_test(test_frag_out_room),
	        cmocka_unit_test(test_frag_out_limits),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
