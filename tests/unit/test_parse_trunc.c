/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_parse() and lb_parse_frame() on cut frames: sweeps that cut
 * sample frames (parse_fixture.h) at every offset into heap buffers of exactly
 * that size so the sanitizers see any read past the end, with the IP length
 * left as it was or made to agree, and jumbo frames whose first segment ends
 * before the frame does, at every offset inside the headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "dataplane/hash.h"
#include "dataplane/parse.h"

#include "parse_fixture.h"

/* Samples for the truncation sweeps. */
struct trunc_step {
	uint32_t below; /* an IP packet shorter than this ... */
	int rc;         /* ... gives this */
};

struct trunc_case {
	const char *name;
	void (*build)(struct pkt *p);
	uint8_t af;
	uint16_t l2_len;
	uint32_t l3_hdr; /* the IP header with options: the shortest packet tried */
	struct trunc_step steps[3];
};

static const struct trunc_case trunc_cases[] = {
        {"qinq_ip4_tcp_options", b_qinq, 4, 22, 24, {{24 + 32, LB_DROP_L4_TRUNC}}},
        {"ip4_udp", b_ip4_udp, 4, 14, 20, {{28, LB_DROP_L4_TRUNC}}},
        {"ip6_tcp", b_ip6_tcp, 6, 14, 40, {{80, LB_DROP_L4_TRUNC}}},
        {"ip6_ext_udp",
         b_ip6_ext,
         6,
         14,
         40,
         {{40 + 8 + 24 + 16, LB_DROP_IP6_TRUNC}, {40 + 48 + 8, LB_DROP_L4_TRUNC}}},
        {"icmp_frag_needed", b_icmp_frag_needed, 4, 14, 20, {{20 + 8 + 28 + 4, LB_PARSE_NOT_LB}}},
        {"icmp6_too_big", b_icmp6_too_big, 6, 14, 40, {{40 + 8 + 48 + 4, LB_PARSE_NOT_LB}}},
        {"ip6_frag_first_dstopts",
         b_ip6_frag_first_dstopts,
         6,
         14,
         40,
         {{40 + 8 + 8 + 8, LB_DROP_IP6_TRUNC}}},
};

#define N_TRUNC (sizeof(trunc_cases) / sizeof(trunc_cases[0]))

/*
 * The frame cut at every length: the IP header then claims more than is there,
 * so the result is always the Ethernet or IP truncation reason, never OK.
 */
static void
test_parse_truncated_frames(void **state)
{
	struct pkt *p = calloc(1, sizeof(*p));

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < N_TRUNC; i++) {
		const struct trunc_case *c = &trunc_cases[i];
		int ip_trunc = c->af == 4 ? LB_DROP_IP4_TRUNC : LB_DROP_IP6_TRUNC;
		struct lb_pkt_info info;

		memset(p, 0, sizeof(*p));
		c->build(p);
		assert_int_equal(lb_parse(p->b, p->len, &info), LB_PARSE_OK);
		for (uint32_t k = 0; k < p->len; k++) {
			/* Exactly k bytes on the heap, so ASan sees byte k being read. */
			uint8_t *buf = malloc(k);
			int rc;

			assert_true(k == 0 || buf != NULL);
			if (k > 0)
				memcpy(buf, p->b, k);
			rc = lb_parse(buf, k, &info);
			free(buf);
			if (rc != (k < c->l2_len ? LB_DROP_ETH_TRUNC : ip_trunc))
				fail_msg("%s cut to %u bytes: got %d", c->name, k, rc);
		}
	}
	free(p);
}

/*
 * The IP packet cut at every length from its header up, with its length field
 * (and checksum) made to agree: the cut then lands in an extension header, the
 * L4 header or the ICMP quote, and each gives its own reason. Once the needed
 * headers are whole the result is OK with the full packet's key.
 */
static void
test_parse_truncated_ip_packets(void **state)
{
	struct pkt *p = calloc(1, sizeof(*p));

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < N_TRUNC; i++) {
		const struct trunc_case *c = &trunc_cases[i];
		struct lb_pkt_info full;
		struct lb_pkt_info info;
		uint32_t l3_full;

		memset(p, 0, sizeof(*p));
		c->build(p);
		assert_int_equal(lb_parse(p->b, p->len, &full), LB_PARSE_OK);
		l3_full = p->len - c->l2_len;
		for (uint32_t l3 = c->l3_hdr; l3 < l3_full; l3++) {
			uint32_t k = c->l2_len + l3;
			uint8_t *buf = malloc(k);
			int want = LB_PARSE_OK;
			int rc;

			assert_non_null(buf);
			memcpy(buf, p->b, k);
			if (c->af == 4)
				ip4_set_len(buf + c->l2_len, (uint16_t)l3);
			else
				set16(buf + c->l2_len + 4, (uint16_t)(l3 - 40));
			rc = lb_parse(buf, k, &info);
			free(buf);
			for (size_t s = 0; s < 3 && c->steps[s].below != 0; s++) {
				if (l3 < c->steps[s].below) {
					want = c->steps[s].rc;
					break;
				}
			}
			if (rc != want)
				fail_msg("%s with %u bytes of IP: got %d, want %d", c->name, l3, rc,
				         want);
			if (rc == LB_PARSE_OK) {
				assert_memory_equal(&info.key, &full.key, sizeof(full.key));
				assert_int_equal(info.l3_len, l3);
			}
		}
	}
	free(p);
}

/*
 * A jumbo frame as a chain: only the first segment (seg bytes, exactly that
 * much on the heap) is given, the IP length is checked against the frame.
 */
static int
parse_seg_heap(const uint8_t *src, uint32_t seg, uint32_t frame, struct lb_pkt_info *info)
{
	uint8_t *buf = malloc(seg > 0 ? seg : 1);
	int rc;

	assert_non_null(buf);
	memcpy(buf, src, seg);
	memset(info, 0xA5, sizeof(*info));
	rc = lb_parse_frame(buf, seg, frame, info);
	free(buf);
	return rc;
}

/* 4000 bytes of IPv4 TCP in a 4014-byte frame whose first segment holds 2048. */
static void
test_parse_frame_jumbo_ip4_ok(void **state)
{
	uint8_t *frame = calloc(1, 4014);
	struct pkt *p = calloc(1, sizeof(*p));
	struct lb_pkt_info info;

	(void)state;
	assert_non_null(frame);
	assert_non_null(p);
	b_ip4_tcp(p);
	memcpy(frame, p->b, p->len);
	ip4_set_len(frame + 14, 4000);
	assert_int_equal(parse_seg_heap(frame, 2048, 4014, &info), LB_PARSE_OK);
	assert_int_equal(info.l2_len, 14);
	assert_int_equal(info.l3_len, 4000);
	assert_int_equal(info.key.af, LB_AF_INET);
	assert_int_equal(info.key.proto, IP_TCP);
	assert_int_equal(ntohs(info.key.sport), CPORT);
	assert_int_equal(ntohs(info.key.dport), VPORT);
	assert_memory_equal(info.key.dst.b, vip4, 4);
	assert_true(info.flags & LB_PKT_DF);
	/* The whole frame contiguous gives the same answer. */
	assert_int_equal(lb_parse_frame(frame, 4014, 4014, &info), LB_PARSE_OK);
	assert_int_equal(info.l3_len, 4000);
	/* Only the first segment as the whole frame: the total length is beyond it. */
	assert_int_equal(parse_seg_heap(frame, 2048, 2048, &info), LB_DROP_IP4_TRUNC);
	/* A frame one byte short of the total length is still truncated. */
	assert_int_equal(parse_seg_heap(frame, 2048, 4013, &info), LB_DROP_IP4_TRUNC);
	free(p);
	free(frame);
}

static void
test_parse_frame_jumbo_ip6_ok(void **state)
{
	uint8_t *frame = calloc(1, 9014);
	struct pkt *p = calloc(1, sizeof(*p));
	struct lb_pkt_info info;

	(void)state;
	assert_non_null(frame);
	assert_non_null(p);
	b_ip6_ext(p);
	memcpy(frame, p->b, p->len);
	set16(frame + 14 + 4, 9000 - 40);
	assert_int_equal(parse_seg_heap(frame, 1500, 9014, &info), LB_PARSE_OK);
	assert_int_equal(info.l3_len, 9000);
	assert_int_equal(info.key.af, LB_AF_INET6);
	assert_int_equal(info.key.proto, IP_UDP);
	assert_int_equal(ntohs(info.key.sport), CPORT);
	assert_int_equal(ntohs(info.key.dport), VPORT);
	assert_int_equal(parse_seg_heap(frame, 1500, 9013, &info), LB_DROP_IP6_TRUNC);
	assert_int_equal(parse_seg_heap(frame, 1500, 1500, &info), LB_DROP_IP6_TRUNC);
	free(p);
	free(frame);
}

/* A first segment longer than the frame is clamped to it. */
static void
test_parse_frame_seg_beyond_frame_clamped(void **state)
{
	struct pkt *p = calloc(1, sizeof(*p));
	struct lb_pkt_info info;

	(void)state;
	assert_non_null(p);
	b_ip4_udp(p);
	assert_int_equal(lb_parse_frame(p->b, p->len + 100, p->len, &info), LB_PARSE_OK);
	assert_int_equal(lb_parse_frame(p->b, p->len, p->len - 1, &info), LB_DROP_IP4_TRUNC);
	free(p);
}

/*
 * Every sample with the segment boundary at every offset inside its headers
 * while the frame is whole: a header that crosses the boundary gives the trunc
 * reason of that header (as when the packet itself ends there), and once the
 * needed headers are in the first segment the result is OK with the full key
 * and the full l3_len.
 */
static void
test_parse_frame_split_headers_trunc(void **state)
{
	struct pkt *p = calloc(1, sizeof(*p));

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < N_TRUNC; i++) {
		const struct trunc_case *c = &trunc_cases[i];
		int ip_trunc = c->af == 4 ? LB_DROP_IP4_TRUNC : LB_DROP_IP6_TRUNC;
		struct lb_pkt_info full;
		struct lb_pkt_info info;

		memset(p, 0, sizeof(*p));
		c->build(p);
		assert_int_equal(lb_parse(p->b, p->len, &full), LB_PARSE_OK);
		for (uint32_t seg = 0; seg <= p->len; seg++) {
			int want = LB_PARSE_OK;
			int rc;

			if (seg < c->l2_len) {
				want = LB_DROP_ETH_TRUNC;
			} else if (seg - c->l2_len < c->l3_hdr) {
				want = ip_trunc;
			} else {
				for (size_t s = 0; s < 3 && c->steps[s].below != 0; s++) {
					if (seg - c->l2_len < c->steps[s].below) {
						want = c->steps[s].rc;
						break;
					}
				}
			}
			rc = parse_seg_heap(p->b, seg, p->len, &info);
			if (rc != want)
				fail_msg("%s split at %u of %u: got %d, want %d", c->name, seg,
				         p->len, rc, want);
			if (rc == LB_PARSE_OK) {
				assert_memory_equal(&info.key, &full.key, sizeof(full.key));
				assert_int_equal(info.l3_len, full.l3_len);
				assert_int_equal(info.l2_len, full.l2_len);
			}
		}
	}
	free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_truncated_frames),
	        cmocka_unit_test(test_parse_truncated_ip_packets),
	        cmocka_unit_test(test_parse_frame_jumbo_ip4_ok),
	        cmocka_unit_test(test_parse_frame_jumbo_ip6_ok),
	        cmocka_unit_test(test_parse_frame_seg_beyond_frame_clamped),
	        cmocka_unit_test(test_parse_frame_split_headers_trunc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
