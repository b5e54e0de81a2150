/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lb_pipeline_burst(): hand-built frames in real mbufs (EAL
 * without hugepages), configurations from JSON through lb_config_from_json and
 * lb_snapshot_build, as control makes them. Covers flow pinning across
 * membership changes, backend states, the exact output bytes, ICMP errors,
 * fragments, the drop and exception paths, too-big handling and multi-segment
 * frames. Every test ends by checking that the counters conserve packets and
 * that every mbuf went back to the pool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <jansson.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "config.h"
#include "encap.h"
#include "flow_table.h"
#include "parse.h"
#include "pipeline.h"
#include "sketch.h"
#include "snapshot_build.h"

#include "eal.h"

#define POOL_SIZE 4095
#define FRAME_MAX 9100
#define SEG_MAX 2048 /* data room of a default mbuf */
#define FLOW_CAPACITY (1u << 16)
#define NOW 1000u
#define IDLE 100000u
#define N_FLOWS 400

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD
#define ETHERTYPE_ARP 0x0806
#define ETHERTYPE_VLAN 0x8100
#define PROTO_ICMP 1
#define PROTO_IPIP 4
#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_IPV6 41
#define PROTO_FRAG 44
#define PROTO_ICMPV6 58
#define IP4_DF 0x4000
#define IP4_MF 0x2000
#define TCP_HLEN 20
#define UDP_HLEN 8

static struct rte_mempool *g_pool;

static const uint8_t g_lb_mac[6] = {0x02, 0x1b, 0, 0, 0, 0x01};     /* the worker's port */
static const uint8_t g_client_mac[6] = {0x02, 0xcc, 0, 0, 0, 0x07}; /* previous hop */
static const uint8_t g_next_hop[6] = {0x02, 0, 0, 0, 0, 0x01};      /* from the config */
static const uint8_t g_src4[4] = {10, 0, 0, 1};                     /* encap.source_v4 */

/*
 * The default configuration: VIP 0 IPv4 TCP over IPIP with four backends
 * (ids 0-3), VIP 1 IPv6 TCP over GUE with two IPv6 backends (ids 4-5), VIP 2 a
 * port-agnostic IPv4 UDP VIP over GUE (ids 6-7), VIP 3 with no backend.
 */
#define ENCAP_JSON                                                                                 \
	"\"encap\": {\"source_v4\": \"10.0.0.1\", \"source_v6\": \"fd00::1\", "                    \
	"\"next_hop_mac\": \"02:00:00:00:00:01\", \"mtu\": %u, \"too_big\": \"%s\"}, "             \
	"\"maglev\": {\"table_size\": 65537, \"seed\": \"test-pipeline\"}"

#define VIP0_BACKENDS                                                                              \
	"{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\"}, {\"address\": \"10.1.0.3\"}, "  \
	"{\"address\": \"10.1.0.4\"}"

static const char *const g_base_vips =
        "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": "
        "[" VIP0_BACKENDS "]},"
        "{\"address\": \"2001:db8::10\", \"port\": 443, \"protocol\": \"tcp\", \"encap\": "
        "\"gue\", \"backends\": [{\"address\": \"fd01::1\"}, {\"address\": \"fd01::2\"}]},"
        "{\"address\": \"192.0.2.20\", \"port\": 0, \"protocol\": \"udp\", \"encap\": \"gue\", "
        "\"backends\": [{\"address\": \"10.2.0.1\"}, {\"address\": \"10.2.0.2\"}]},"
        "{\"address\": \"192.0.2.30\", \"port\": 80, \"protocol\": \"tcp\"}";

struct fixture {
	struct lb_worker *w;
	struct lb_config *cfg;
	struct lb_snapshot *snap;
	uint64_t generation;
	/* What lb_pipeline_burst handed back, summed over the test. */
	uint64_t n_fwd, n_back, n_exc, n_drop;
	unsigned int pool_avail; /* free mbufs before the test */
};

/* --- configuration ------------------------------------------------------- */

static struct lb_config *
cfg_load(unsigned int mtu, const char *too_big, const char *vips)
{
	char doc[4096], err[256];
	struct lb_config *cfg;
	json_error_t je;
	json_t *root;
	int n;

	n = snprintf(doc, sizeof(doc), "{" ENCAP_JSON ", \"vips\": [%s]}", mtu, too_big, vips);
	assert_true(n > 0 && (size_t)n < sizeof(doc));
	root = json_loads(doc, 0, &je);
	if (root == NULL)
		fail_msg("test config is not JSON: %s: %s", je.text, doc);
	cfg = lb_config_from_json(root, err, sizeof(err));
	json_decref(root);
	if (cfg == NULL)
		fail_msg("test config rejected: %s", err);
	return cfg;
}

/* Publish fx->cfg as the next snapshot (what control does on every change). */
static void
fx_publish(struct fixture *fx)
{
	char err[256];

	lb_snapshot_free(fx->snap);
	fx->snap = lb_snapshot_build(fx->cfg, ++fx->generation, err, sizeof(err));
	if (fx->snap == NULL)
		fail_msg("snapshot: %s", err);
}

static void
fx_config(struct fixture *fx, struct lb_config *cfg)
{
	lb_config_free(fx->cfg);
	fx->cfg = cfg;
	fx_publish(fx);
}

/* --- fixtures ------------------------------------------------------------ */

static int
group_setup(void **state)
{
	(void)state;
	if (test_eal_init("test", "test-pipeline") < 0) {
		fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	/* No per-lcore cache, so the free count is exact when a test ends. */
	g_pool = rte_pktmbuf_pool_create("test_pipeline", POOL_SIZE, 0, 0,
	                                 RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (g_pool == NULL) {
		fprintf(stderr, "mbuf pool: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	rte_mempool_free(g_pool);
	rte_eal_cleanup();
	return 0;
}

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	fx->w = aligned_alloc(64, sizeof(*fx->w));
	assert_non_null(fx->w);
	memset(fx->w, 0, sizeof(*fx->w));
	fx->w->ft = lb_flow_table_create(FLOW_CAPACITY);
	assert_non_null(fx->w->ft);
	fx->w->cnt = aligned_alloc(64, sizeof(*fx->w->cnt));
	assert_non_null(fx->w->cnt);
	memset(fx->w->cnt, 0, sizeof(*fx->w->cnt));
	fx->w->now = NOW;
	fx->w->tcp_idle = IDLE;
	fx->w->udp_idle = IDLE;
	memcpy(fx->w->src_mac, g_lb_mac, 6);
	fx->pool_avail = rte_mempool_avail_count(g_pool);
	fx_config(fx, cfg_load(1500, "icmp", g_base_vips));
	*state = fx;
	return 0;
}

/* Every packet ended in exactly one place, and every mbuf is back in the pool. */
static int
teardown(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	uint64_t drops = 0;

	for (unsigned int r = 0; r < LB_DROP__COUNT; r++)
		drops += c->drops[r];
	assert_int_equal(drops, fx->n_drop);
	assert_int_equal(c->rx_packets, fx->n_fwd + fx->n_back + fx->n_exc + drops);
	assert_int_equal(rte_mempool_avail_count(g_pool), fx->pool_avail);
	lb_snapshot_free(fx->snap);
	lb_config_free(fx->cfg);
	lb_flow_table_free(fx->w->ft);
	free(fx->w->cnt);
	free(fx->w);
	free(fx);
	return 0;
}

/* --- frame builders ------------------------------------------------------ */

struct flow {
	uint8_t af; /* LB_AF_INET / LB_AF_INET6 */
	uint8_t proto;
	uint8_t tos;
	union lb_ip src;
	union lb_ip dst;
	uint16_t sport; /* host byte order */
	uint16_t dport;
};

struct frame {
	uint8_t b[FRAME_MAX];
	uint32_t len; /* whole frame */
	uint32_t l2;  /* where the IP packet starts */
	uint32_t l3;  /* IP packet length */
};

static void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t)(v >> 16));
	wr16(p + 2, (uint16_t)v);
}

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) << 16 | rd16(p + 2);
}

/* Ones'-complement sum (RFC 1071), not complemented, folded to 16 bits. */
static uint32_t
sum16(uint32_t sum, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (n & 1)
		sum += (uint32_t)b[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return sum;
}

/* An IPv6 upper-layer checksum over a datagram that includes its checksum: 0xFFFF if right. */
static uint32_t
ip6_l4_sum(const uint8_t *ip6, const uint8_t *l4, uint32_t len, uint8_t proto)
{
	uint8_t ph[8];

	wr32(ph, len);
	ph[4] = ph[5] = ph[6] = 0;
	ph[7] = proto;
	return sum16(sum16(sum16(0, ip6 + 8, 32), ph, sizeof(ph)), l4, len);
}

static union lb_ip
ip4_addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	union lb_ip ip = {{0}};

	ip.b[0] = a;
	ip.b[1] = b;
	ip.b[2] = c;
	ip.b[3] = d;
	return ip;
}

static union lb_ip
ip6_addr(const char *s)
{
	union lb_ip ip;

	assert_int_equal(inet_pton(AF_INET6, s, ip.b), 1);
	return ip;
}

static const union lb_ip *
vip0(void)
{
	static union lb_ip a;

	a = ip4_addr(192, 0, 2, 10);
	return &a;
}

/* The i-th client flow to VIP 0 (or to VIP 1 for IPv6); distinct for distinct i. */
static struct flow
flow4(uint32_t i)
{
	struct flow f = {.af = LB_AF_INET, .proto = PROTO_TCP, .tos = 0x28, .dport = 80};

	f.src = ip4_addr(100, (uint8_t)(64 + (i >> 16)), (uint8_t)(i >> 8), (uint8_t)i);
	f.dst = *vip0();
	f.sport = (uint16_t)(1024 + i % 50000);
	return f;
}

static struct flow
flow6(uint32_t i)
{
	struct flow f = {.af = LB_AF_INET6, .proto = PROTO_TCP, .tos = 0xB8, .dport = 443};

	f.src = ip6_addr("2001:db8:c::");
	f.src.b[12] = (uint8_t)(i >> 24);
	f.src.b[13] = (uint8_t)(i >> 16);
	f.src.b[14] = (uint8_t)(i >> 8);
	f.src.b[15] = (uint8_t)i;
	f.dst = ip6_addr("2001:db8::10");
	f.sport = (uint16_t)(1024 + i % 50000);
	return f;
}

static void
put_eth(struct frame *f, uint16_t type, bool vlan)
{
	memcpy(f->b, g_lb_mac, 6);
	memcpy(f->b + 6, g_client_mac, 6);
	f->len = 12;
	if (vlan) {
		wr16(f->b + f->len, ETHERTYPE_VLAN);
		wr16(f->b + f->len + 2, 100);
		f->len += 4;
	}
	wr16(f->b + f->len, type);
	f->len += 2;
	f->l2 = f->len;
}

/* IP header from src to dst carrying l4_len bytes of proto; ip4_frag is the IPv4 flags field. */
static void
put_ip(struct frame *f, uint8_t af, uint8_t tos, const union lb_ip *src, const union lb_ip *dst,
       uint8_t proto, uint32_t l4_len, uint16_t ip4_frag)
{
	uint8_t *ip = f->b + f->len;

	if (af == LB_AF_INET) {
		ip[0] = 0x45;
		ip[1] = tos;
		wr16(ip + 2, (uint16_t)(20 + l4_len));
		wr16(ip + 4, 0x4242);
		wr16(ip + 6, ip4_frag);
		ip[8] = 64;
		ip[9] = proto;
		wr16(ip + 10, 0);
		memcpy(ip + 12, src->b, 4);
		memcpy(ip + 16, dst->b, 4);
		wr16(ip + 10, (uint16_t)~sum16(0, ip, 20));
		f->len += 20;
	} else {
		wr32(ip, 0x60000000u | (uint32_t)tos << 20 | 0xBEEF);
		wr16(ip + 4, (uint16_t)l4_len);
		ip[6] = proto;
		ip[7] = 64;
		memcpy(ip + 8, src->b, 16);
		memcpy(ip + 24, dst->b, 16);
		f->len += 40;
	}
}

/* TCP (ACK|PSH) or UDP header plus payload bytes of a recognisable pattern. */
static void
put_l4(struct frame *f, uint8_t proto, uint16_t sport, uint16_t dport, uint32_t payload)
{
	uint8_t *l4 = f->b + f->len;
	uint32_t hl = proto == PROTO_TCP ? TCP_HLEN : UDP_HLEN;

	assert_true(f->len + hl + payload <= FRAME_MAX);
	memset(l4, 0, hl);
	wr16(l4, sport);
	wr16(l4 + 2, dport);
	if (proto == PROTO_TCP) {
		wr32(l4 + 4, 1000);
		l4[12] = 5 << 4;
		l4[13] = 0x18;
		wr16(l4 + 14, 65535);
	} else {
		wr16(l4 + 4, (uint16_t)(UDP_HLEN + payload));
	}
	for (uint32_t i = 0; i < payload; i++)
		l4[hl + i] = (uint8_t)(i * 7 + sport);
	f->len += hl + payload;
}

/* A whole packet of flow fl with payload bytes after the L4 header. */
static void
build(struct frame *f, const struct flow *fl, uint32_t payload, uint16_t ip4_frag, bool vlan)
{
	uint32_t l4 = (fl->proto == PROTO_TCP ? TCP_HLEN : UDP_HLEN) + payload;

	put_eth(f, fl->af == LB_AF_INET ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6, vlan);
	put_ip(f, fl->af, fl->tos, &fl->src, &fl->dst, fl->proto, l4, ip4_frag);
	put_l4(f, fl->proto, fl->sport, fl->dport, payload);
	f->l3 = f->len - f->l2;
}

/* An IP packet of exactly l3 bytes (payload filled in), for the MTU tests. */
static void
build_sized(struct frame *f, const struct flow *fl, uint32_t l3, bool df)
{
	uint32_t hl =
	        (fl->af == LB_AF_INET ? 20 : 40) + (fl->proto == PROTO_TCP ? TCP_HLEN : UDP_HLEN);

	build(f, fl, l3 - hl, df ? IP4_DF : 0, false);
	assert_int_equal(f->l3, l3);
}

/*
 * One fragment of a datagram of fl: offset in 8-byte units, more = MF / M set;
 * the first fragment carries the L4 header, the others only payload bytes.
 */
static void
build_frag(struct frame *f, const struct flow *fl, uint16_t offset, bool more, uint32_t bytes)
{
	if (fl->af == LB_AF_INET) {
		uint16_t frag = (uint16_t)((more ? IP4_MF : 0) | offset);

		put_eth(f, ETHERTYPE_IPV4, false);
		put_ip(f, fl->af, fl->tos, &fl->src, &fl->dst, fl->proto, bytes, frag);
	} else {
		uint8_t *fh;

		put_eth(f, ETHERTYPE_IPV6, false);
		put_ip(f, fl->af, fl->tos, &fl->src, &fl->dst, PROTO_FRAG, 8 + bytes, 0);
		fh = f->b + f->len;
		fh[0] = fl->proto;
		fh[1] = 0;
		wr16(fh + 2, (uint16_t)(offset << 3 | (more ? 1 : 0)));
		wr32(fh + 4, 0xF00D);
		f->len += 8;
	}
	if (offset == 0) {
		put_l4(f, fl->proto, fl->sport, fl->dport,
		       bytes - (fl->proto == PROTO_TCP ? 20 : 8));
	} else {
		memset(f->b + f->len, 0x77, bytes);
		f->len += bytes;
	}
	f->l3 = f->len - f->l2;
}

/*
 * An ICMP "fragmentation needed" (IPv4) or "packet too big" (IPv6) from a
 * router on the path, quoting a packet the backend sent for flow fl (from the
 * VIP to the client) with the first 8 bytes of its L4 header.
 */
static void
build_icmp_error(struct frame *f, const struct flow *fl)
{
	union lb_ip router = fl->af == LB_AF_INET ? ip4_addr(198, 18, 0, 1) : ip6_addr("fd99::1");
	uint32_t qhl = fl->af == LB_AF_INET ? 20 : 40;
	uint8_t *icmp;
	struct frame q;

	/* The quoted packet, built as a frame of its own. */
	put_eth(&q, fl->af == LB_AF_INET ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6, false);
	put_ip(&q, fl->af, 0, &fl->dst, &fl->src, fl->proto, 1400, IP4_DF);
	put_l4(&q, fl->proto, fl->dport, fl->sport, 0);

	put_eth(f, fl->af == LB_AF_INET ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6, false);
	put_ip(f, fl->af, 0, &router, &fl->dst, fl->af == LB_AF_INET ? PROTO_ICMP : PROTO_ICMPV6,
	       8 + qhl + 8, 0);
	icmp = f->b + f->len;
	memset(icmp, 0, 8);
	if (fl->af == LB_AF_INET) {
		icmp[0] = 3;
		icmp[1] = 4;
		wr16(icmp + 6, 1400);
	} else {
		icmp[0] = 2;
		wr32(icmp + 4, 1400);
	}
	memcpy(icmp + 8, q.b + q.l2, qhl + 8);
	f->len += 8 + qhl + 8;
	f->l3 = f->len - f->l2;
}

/* --- mbufs and runs ------------------------------------------------------ */

/* The frame in a chain: first bytes in the first segment, then rest per segment. */
static struct rte_mbuf *
mk_chain(const struct frame *f, uint32_t first, uint32_t rest)
{
	struct rte_mbuf *head = NULL;
	uint32_t off = 0;

	while (off < f->len) {
		uint32_t n = off == 0 ? first : rest;
		struct rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
		char *d;

		assert_non_null(m);
		if (n > f->len - off)
			n = f->len - off;
		assert_true(n <= SEG_MAX);
		d = rte_pktmbuf_append(m, (uint16_t)n);
		assert_non_null(d);
		memcpy(d, f->b + off, n);
		off += n;
		if (head == NULL)
			head = m;
		else
			assert_int_equal(rte_pktmbuf_chain(head, m), 0);
	}
	return head;
}

static struct rte_mbuf *
mk_mbuf(const struct frame *f)
{
	assert_true(f->len <= SEG_MAX);
	return mk_chain(f, f->len, 0);
}

static void
run(struct fixture *fx, struct rte_mbuf **pkts, uint16_t n, struct lb_burst_out *out)
{
	lb_pipeline_burst(fx->w, fx->snap, pkts, n, out);
	assert_int_equal(out->n_fwd + out->n_back + out->n_exc + out->n_drop, n);
	fx->n_fwd += out->n_fwd;
	fx->n_back += out->n_back;
	fx->n_exc += out->n_exc;
	fx->n_drop += out->n_drop;
}

static void
out_free(struct lb_burst_out *out)
{
	rte_pktmbuf_free_bulk(out->fwd, out->n_fwd);
	rte_pktmbuf_free_bulk(out->back, out->n_back);
	rte_pktmbuf_free_bulk(out->exc, out->n_exc);
	rte_pktmbuf_free_bulk(out->drop, out->n_drop);
}

/* The backend id an encapsulated frame is addressed to, -1 if none matches. */
static int
out_backend(const struct lb_snapshot *s, const struct rte_mbuf *m)
{
	uint8_t hdr[LB_ETH_HLEN + LB_IP6_HLEN];
	const uint8_t *p = rte_pktmbuf_read(m, 0, sizeof(hdr), hdr);
	union lb_ip dst = {{0}};
	uint8_t af;

	assert_non_null(p);
	if (rd16(p + 12) == ETHERTYPE_IPV4) {
		af = LB_AF_INET;
		memcpy(dst.b, p + LB_ETH_HLEN + 16, 4);
	} else {
		af = LB_AF_INET6;
		memcpy(dst.b, p + LB_ETH_HLEN + 24, 16);
	}
	for (uint32_t i = 0; i < s->n_backends; i++)
		if (s->backends[i].gen != 0 && s->backends[i].af == af &&
		    memcmp(s->backends[i].addr.b, dst.b, 16) == 0)
			return (int)i;
	return -1;
}

enum fate { FATE_FWD, FATE_BACK, FATE_EXC, FATE_DROP };

/* Where each packet of a burst went (same order as pkts) and its backend if forwarded. */
static void
fates(const struct fixture *fx, struct rte_mbuf **pkts, uint16_t n, const struct lb_burst_out *out,
      int *fate, int *bid)
{
	for (uint16_t i = 0; i < n; i++) {
		fate[i] = -1;
		bid[i] = -1;
		for (uint16_t k = 0; k < out->n_fwd; k++)
			if (out->fwd[k] == pkts[i]) {
				fate[i] = FATE_FWD;
				bid[i] = out_backend(fx->snap, pkts[i]);
			}
		for (uint16_t k = 0; k < out->n_back; k++)
			if (out->back[k] == pkts[i])
				fate[i] = FATE_BACK;
		for (uint16_t k = 0; k < out->n_exc; k++)
			if (out->exc[k] == pkts[i])
				fate[i] = FATE_EXC;
		for (uint16_t k = 0; k < out->n_drop; k++)
			if (out->drop[k] == pkts[i])
				fate[i] = FATE_DROP;
		assert_int_not_equal(fate[i], -1);
	}
}

/* Run frames (bursts of LB_BURST) and record each one's fate and backend. */
static void
run_frames(struct fixture *fx, const struct frame *const *f, uint32_t n, int *fate, int *bid)
{
	for (uint32_t i = 0; i < n; i += LB_BURST) {
		uint16_t k = (uint16_t)(n - i < LB_BURST ? n - i : LB_BURST);
		struct rte_mbuf *pkts[LB_BURST];
		struct lb_burst_out out;

		for (uint16_t j = 0; j < k; j++)
			pkts[j] = mk_mbuf(f[i + j]);
		run(fx, pkts, k, &out);
		fates(fx, pkts, k, &out, fate + i, bid + i);
		out_free(&out);
	}
}

/* One packet; returns its fate and sets *bid for a forwarded one. */
static int
run_one(struct fixture *fx, const struct frame *f, int *bid)
{
	const struct frame *const fp[1] = {f};
	int fate;
	int b;

	run_frames(fx, fp, 1, &fate, &b);
	if (bid != NULL)
		*bid = b;
	return fate;
}

/*
 * Send one packet of each of n flows (flow4(base + i)), all of which must be
 * forwarded; bid[i] is the backend each went to.
 */
static void
send_flows(struct fixture *fx, uint32_t base, uint32_t n, int *bid)
{
	struct frame **f = calloc(LB_BURST, sizeof(*f));
	int fate[LB_BURST];

	assert_non_null(f);
	for (uint32_t j = 0; j < LB_BURST; j++) {
		f[j] = malloc(sizeof(**f));
		assert_non_null(f[j]);
	}
	for (uint32_t i = 0; i < n; i += LB_BURST) {
		uint32_t k = n - i < LB_BURST ? n - i : LB_BURST;

		for (uint32_t j = 0; j < k; j++) {
			struct flow fl = flow4(base + i + j);

			build(f[j], &fl, 32, IP4_DF, false);
		}
		run_frames(fx, (const struct frame *const *)f, k, fate, bid + i);
		for (uint32_t j = 0; j < k; j++) {
			assert_int_equal(fate[j], FATE_FWD);
			assert_true(bid[i + j] >= 0);
		}
	}
	for (uint32_t j = 0; j < LB_BURST; j++)
		free(f[j]);
	free(f);
}

static unsigned int
count_eq(const int *v, uint32_t n, int x)
{
	unsigned int c = 0;

	for (uint32_t i = 0; i < n; i++)
		c += v[i] == x;
	return c;
}

/* --- tests --------------------------------------------------------------- */

/* Every packet of a flow goes to the backend its first packet chose. */
static void
test_pipeline_flow_sticks_to_backend(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	int first[64], again[64];
	uint64_t new_flows = 0;

	send_flows(fx, 0, 64, first);
	for (int round = 0; round < 4; round++) {
		send_flows(fx, 0, 64, again);
		assert_memory_equal(again, first, sizeof(first));
	}
	assert_int_equal(c->flow_misses, 64);
	assert_int_equal(c->flow_hits, 4 * 64);
	assert_int_equal(c->vip[0].new_flows, 64);
	assert_int_equal(c->vip[0].packets, 5 * 64);
	for (int b = 0; b < 4; b++) {
		new_flows += c->backend[b].new_flows;
		/* 64 flows over 4 equal backends: each gets some. */
		assert_true(count_eq(first, 64, b) > 0);
	}
	assert_int_equal(new_flows, 64);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 64);
}

/*
 * IPIP 4in4: Ethernet to the next hop from our MAC, an outer IPv4 header with
 * DF, TTL 64, the inner DSCP/ECN and a valid checksum, and then exactly the
 * client's IP packet (the VLAN tag and the Ethernet padding gone).
 */
static void
test_pipeline_output_ipip4_byte_exact(void **state)
{
	struct fixture *fx = *state;
	struct flow fl = flow4(7);
	struct rte_mbuf *pkts[2];
	struct lb_burst_out out;
	struct frame f[2];

	build(&f[0], &fl, 100, IP4_DF, true);
	/* A bare SYN-sized packet padded to the 60-byte Ethernet minimum. */
	fl = flow4(8);
	build(&f[1], &fl, 0, IP4_DF, false);
	memset(f[1].b + f[1].len, 0xEE, 60 - f[1].len);
	f[1].len = 60;
	for (int i = 0; i < 2; i++)
		pkts[i] = mk_mbuf(&f[i]);
	run(fx, pkts, 2, &out);
	assert_int_equal(out.n_fwd, 2);
	for (int i = 0; i < 2; i++) {
		const struct rte_mbuf *m = out.fwd[i];
		const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
		const uint8_t *ip = p + LB_ETH_HLEN;
		int bid = out_backend(fx->snap, m);

		assert_ptr_equal(m, pkts[i]);
		assert_true(bid >= 0 && bid < 4);
		assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + 20 + f[i].l3);
		assert_memory_equal(p, g_next_hop, 6);
		assert_memory_equal(p + 6, g_lb_mac, 6);
		assert_int_equal(rd16(p + 12), ETHERTYPE_IPV4);
		assert_int_equal(ip[0], 0x45);
		assert_int_equal(ip[1], 0x28);
		assert_int_equal(rd16(ip + 2), 20 + f[i].l3);
		assert_int_equal(rd16(ip + 6), IP4_DF);
		assert_int_equal(ip[8], 64);
		assert_int_equal(ip[9], PROTO_IPIP);
		assert_int_equal(sum16(0, ip, 20), 0xFFFF);
		assert_memory_equal(ip + 12, g_src4, 4);
		assert_memory_equal(ip + 16, fx->snap->backends[bid].addr.b, 4);
		assert_memory_equal(ip + 20, f[i].b + f[i].l2, f[i].l3);
		assert_true(fx->w->cnt->backend[bid].bytes >= f[i].l3);
	}
	assert_int_equal(fx->w->cnt->vip[0].bytes, f[0].l3 + f[1].l3);
	out_free(&out);
}

/*
 * GUE over IPv6 (6in6): outer IPv6 with the inner traffic class, UDP from the
 * ephemeral range to the GUE port with a checksum that verifies, then the
 * client's packet.
 */
static void
test_pipeline_output_gue6_byte_exact(void **state)
{
	struct fixture *fx = *state;
	struct flow fl = flow6(3);
	struct lb_burst_out out;
	struct rte_mbuf *m;
	const uint8_t *p, *ip, *udp;
	struct frame f;
	int bid;

	build(&f, &fl, 333, 0, false);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	bid = out_backend(fx->snap, m);
	assert_true(bid == 4 || bid == 5);
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	ip = p + LB_ETH_HLEN;
	udp = ip + LB_IP6_HLEN;
	assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + 40 + 8 + f.l3);
	assert_memory_equal(p, g_next_hop, 6);
	assert_memory_equal(p + 6, g_lb_mac, 6);
	assert_int_equal(rd16(p + 12), ETHERTYPE_IPV6);
	assert_int_equal(ip[0] >> 4, 6);
	assert_int_equal((rd32(ip) >> 20) & 0xFF, 0xB8);
	assert_int_equal(rd16(ip + 4), 8 + f.l3);
	assert_int_equal(ip[6], PROTO_UDP);
	assert_int_equal(ip[7], 64);
	assert_memory_equal(ip + 8, ip6_addr("fd00::1").b, 16);
	assert_memory_equal(ip + 24, fx->snap->backends[bid].addr.b, 16);
	assert_true(rd16(udp) >= 0xC000);
	assert_int_equal(rd16(udp + 2), LB_GUE_DEFAULT_PORT);
	assert_int_equal(rd16(udp + 4), 8 + f.l3);
	assert_int_equal(ip6_l4_sum(ip, udp, 8 + f.l3, PROTO_UDP), 0xFFFF);
	assert_memory_equal(udp + 8, f.b + f.l2, f.l3);
	out_free(&out);
}

/* GUE over IPv4: UDP checksum 0 (RFC 768 allows it), IPv4 outer. */
static void
test_pipeline_output_gue4_byte_exact(void **state)
{
	struct fixture *fx = *state;
	struct flow fl = flow4(9);
	struct lb_burst_out out;
	struct rte_mbuf *m;
	const uint8_t *ip, *udp;
	struct frame f;
	int bid;

	fl.proto = PROTO_UDP;
	fl.dst = ip4_addr(192, 0, 2, 20);
	fl.dport = 5353; /* port-agnostic VIP */
	build(&f, &fl, 64, 0, false);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	bid = out_backend(fx->snap, m);
	assert_true(bid == 6 || bid == 7);
	ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, LB_ETH_HLEN);
	udp = ip + 20;
	assert_int_equal(rd16(ip + 2), 20 + 8 + f.l3);
	assert_int_equal(ip[9], PROTO_UDP);
	assert_int_equal(sum16(0, ip, 20), 0xFFFF);
	assert_int_equal(rd16(udp + 2), LB_GUE_DEFAULT_PORT);
	assert_int_equal(rd16(udp + 4), 8 + f.l3);
	assert_int_equal(rd16(udp + 6), 0);
	assert_memory_equal(udp + 8, f.b + f.l2, f.l3);
	assert_int_equal(fx->w->cnt->vip[2].packets, 1);
	out_free(&out);
}

/*
 * A backend added to the VIP: established flows stay where they are (the
 * flow table pins them, although Maglev now sends some of them to the new
 * backend), while new flows spread onto it.
 */
static void
test_pipeline_add_backend_keeps_established(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS], fresh[N_FLOWS], unpinned[N_FLOWS];
	struct lb_flow_table *pinned = fx->w->ft;
	uint64_t hits;

	send_flows(fx, 0, N_FLOWS, before);
	fx_config(fx, cfg_load(1500, "icmp",
	                       "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": "
	                       "\"tcp\", \"backends\": [" VIP0_BACKENDS
	                       ", {\"address\": \"10.1.0.5\"}]}"));
	/* Document order keeps ids 0-3 for the old four; the new one is id 4. */
	assert_int_equal(fx->cfg->vips[0].backends[4].id, 4);
	hits = c->flow_hits;
	send_flows(fx, 0, N_FLOWS, after);
	assert_memory_equal(after, before, sizeof(before));
	assert_int_equal(c->flow_hits - hits, N_FLOWS);
	assert_int_equal(c->flow_rechosen, 0);

	send_flows(fx, 100000, N_FLOWS, fresh);
	/* 1/5 of 400 expected; far from 0 whatever the seed. */
	assert_true(count_eq(fresh, N_FLOWS, 4) > N_FLOWS / 10);
	assert_int_equal(c->backend[4].new_flows, count_eq(fresh, N_FLOWS, 4));

	/* Without the flow table the same established flows would have moved. */
	fx->w->ft = lb_flow_table_create(FLOW_CAPACITY);
	assert_non_null(fx->w->ft);
	send_flows(fx, 0, N_FLOWS, unpinned);
	assert_true(count_eq(unpinned, N_FLOWS, 4) > 0);
	lb_flow_table_free(fx->w->ft);
	fx->w->ft = pinned;
}

/*
 * A backend removed: the configuration is rebuilt without it and the others
 * keep their ids (as control's reload does), so its id is gone from the
 * registry. Only its flows move, each counted as re-chosen once.
 */
static void
test_pipeline_remove_backend_moves_only_its_flows(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS], again[N_FLOWS];
	unsigned int on1;
	uint64_t new_flows;

	send_flows(fx, 0, N_FLOWS, before);
	on1 = count_eq(before, N_FLOWS, 1);
	assert_true(on1 > 0);
	fx_config(fx, cfg_load(1500, "icmp",
	                       "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": "
	                       "\"tcp\", \"backends\": [{\"address\": \"10.1.0.1\"}, "
	                       "{\"address\": \"10.1.0.3\"}, {\"address\": \"10.1.0.4\"}]}"));
	/* Document order would renumber 10.1.0.3 and .4 to 1 and 2: keep them at 2 and 3. */
	fx->cfg->vips[0].backends[1].id = 2;
	fx->cfg->vips[0].backends[2].id = 3;
	fx_publish(fx);
	assert_int_equal(fx->snap->backends[1].gen, 0);

	new_flows = c->vip[0].new_flows;
	send_flows(fx, 0, N_FLOWS, after);
	for (uint32_t i = 0; i < N_FLOWS; i++) {
		if (before[i] == 1)
			assert_true(after[i] == 0 || after[i] == 2 || after[i] == 3);
		else
			assert_int_equal(after[i], before[i]);
	}
	assert_int_equal(c->flow_rechosen, on1);
	assert_int_equal(c->vip[0].new_flows - new_flows, on1);
	/* Re-pinned: the next packets are plain hits. */
	send_flows(fx, 0, N_FLOWS, again);
	assert_memory_equal(again, after, sizeof(after));
	assert_int_equal(c->flow_rechosen, on1);
}

/*
 * The same id reused for another backend with a new generation: flows pinned
 * to the old membership are recognised as stale and re-chosen; the others stay.
 */
static void
test_pipeline_reused_id_new_gen_rechooses(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS];
	unsigned int on1;

	send_flows(fx, 0, N_FLOWS, before);
	on1 = count_eq(before, N_FLOWS, 1);
	fx_config(fx, cfg_load(1500, "icmp",
	                       "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": "
	                       "\"tcp\", \"backends\": [{\"address\": \"10.1.0.1\"}, "
	                       "{\"address\": \"10.1.0.9\"}, {\"address\": \"10.1.0.3\"}, "
	                       "{\"address\": \"10.1.0.4\"}]}"));
	fx->cfg->vips[0].backends[1].gen = 2;
	fx_publish(fx);
	assert_int_equal(fx->snap->backends[1].gen, 2);

	send_flows(fx, 0, N_FLOWS, after);
	for (uint32_t i = 0; i < N_FLOWS; i++)
		if (before[i] != 1)
			assert_int_equal(after[i], before[i]);
	assert_int_equal(c->flow_rechosen, on1);
}

/* Set backend j of VIP 0 to a state / weight and publish. */
static void
set_backend(struct fixture *fx, uint32_t j, uint8_t st, uint32_t weight)
{
	fx->cfg->vips[0].backends[j].state = st;
	fx->cfg->vips[0].backends[j].weight = weight;
	fx_publish(fx);
}

/* Draining, or weight 0: established flows stay, no new flow goes there. */
static void
check_keeps_established_no_new(struct fixture *fx, uint8_t st, uint32_t weight)
{
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS], fresh[N_FLOWS];

	send_flows(fx, 0, N_FLOWS, before);
	assert_true(count_eq(before, N_FLOWS, 1) > 0);
	set_backend(fx, 1, st, weight);
	send_flows(fx, 0, N_FLOWS, after);
	assert_memory_equal(after, before, sizeof(before));
	assert_int_equal(c->flow_rechosen, 0);
	send_flows(fx, 100000, N_FLOWS, fresh);
	assert_int_equal(count_eq(fresh, N_FLOWS, 1), 0);
	assert_int_equal(c->flow_rechosen, 0);
}

static void
test_pipeline_draining_keeps_flows_gets_no_new(void **state)
{
	check_keeps_established_no_new(*state, LB_BACKEND_DRAINING, 1);
}

static void
test_pipeline_weight_zero_keeps_flows_gets_no_new(void **state)
{
	check_keeps_established_no_new(*state, LB_BACKEND_ACTIVE, 0);
}

/* Down: its flows are re-chosen onto the others, nothing else moves. */
static void
test_pipeline_down_moves_its_flows(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	static int before[N_FLOWS], after[N_FLOWS];
	unsigned int on1;

	send_flows(fx, 0, N_FLOWS, before);
	on1 = count_eq(before, N_FLOWS, 1);
	assert_true(on1 > 0);
	set_backend(fx, 1, LB_BACKEND_DOWN, 1);
	send_flows(fx, 0, N_FLOWS, after);
	for (uint32_t i = 0; i < N_FLOWS; i++) {
		if (before[i] == 1)
			assert_int_not_equal(after[i], 1);
		else
			assert_int_equal(after[i], before[i]);
	}
	assert_int_equal(c->flow_rechosen, on1);
	assert_int_equal(c->backend[1].packets, on1); /* only the first round */
}

/*
 * An ICMP error about a flow goes to that flow's backend, does not refresh
 * its entry and creates none for an unknown flow; IPv4 and IPv6.
 */
static void
test_pipeline_icmp_error_follows_flow(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow flows[2] = {flow4(42), flow6(42)};
	int bid_flow, bid_err;
	struct frame f;

	for (int i = 0; i < 2; i++) {
		struct flow fl = flows[i];
		struct lb_flow_key key;
		struct lb_flow_entry *e;
		uint32_t count;

		build(&f, &fl, 10, IP4_DF, false);
		assert_int_equal(run_one(fx, &f, &bid_flow), FATE_FWD);
		count = lb_flow_table_count(fx->w->ft, fx->w->now);

		/* The entry's expiry must not move when the error is steered. */
		memset(&key, 0, sizeof(key));
		key.src = fl.src;
		key.dst = fl.dst;
		key.sport = htons(fl.sport);
		key.dport = htons(fl.dport);
		key.proto = fl.proto;
		key.af = fl.af;
		e = lb_flow_lookup(fx->w->ft, lb_flow_sig(lb_hash_flow(&fx->snap->hkey, &key)),
		                   fx->w->now);
		assert_non_null(e);
		assert_int_equal(e->expires, NOW + IDLE);
		fx->w->now = NOW + 500;

		build_icmp_error(&f, &fl);
		assert_int_equal(run_one(fx, &f, &bid_err), FATE_FWD);
		assert_int_equal(bid_err, bid_flow);
		assert_int_equal(e->expires, NOW + IDLE);
		assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), count);

		/* An error about a flow we have not seen: steered by Maglev, no entry. */
		fl.sport = (uint16_t)(fl.sport + 1);
		build_icmp_error(&f, &fl);
		assert_int_equal(run_one(fx, &f, &bid_err), FATE_FWD);
		assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), count);
		/* ... and the flow, when it comes, agrees with it. */
		build(&f, &fl, 10, IP4_DF, false);
		assert_int_equal(run_one(fx, &f, &bid_flow), FATE_FWD);
		assert_int_equal(bid_flow, bid_err);
		fx->w->now = NOW;
	}
	assert_int_equal(c->icmp_errors, 4);
}

/* All fragments of a datagram (first, middle, last) reach one backend, statelessly. */
static void
test_pipeline_fragments_of_datagram_one_backend(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	bool used[8] = {false};
	struct frame f;

	for (uint32_t d = 0; d < 64; d++) {
		struct flow fl = d & 1 ? flow6(d) : flow4(d);
		int bid[3];

		build_frag(&f, &fl, 0, true, 504);
		assert_int_equal(run_one(fx, &f, &bid[0]), FATE_FWD);
		build_frag(&f, &fl, 63, true, 504);
		assert_int_equal(run_one(fx, &f, &bid[1]), FATE_FWD);
		build_frag(&f, &fl, 126, false, 100);
		assert_int_equal(run_one(fx, &f, &bid[2]), FATE_FWD);
		assert_int_equal(bid[1], bid[0]);
		assert_int_equal(bid[2], bid[0]);
		assert_true(bid[0] >= 0 && bid[0] < 8);
		used[bid[0]] = true;
	}
	assert_int_equal(c->fragments, 3 * 64);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 0);
	/* Different datagrams still spread over the backends. */
	assert_true(used[0] + used[1] + used[2] + used[3] >= 2);
	assert_true(used[4] && used[5]);
}

/* Not for a VIP (no VIP address, or not TCP/UDP at all): dropped, or to the exception list. */
static void
test_pipeline_no_vip_dropped_or_exception(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl = flow4(1);
	struct frame f[3];
	const struct frame *fp[3] = {&f[0], &f[1], &f[2]};
	int fate[3], bid[3];

	fl.dst = ip4_addr(192, 0, 2, 99);
	build(&f[0], &fl, 10, IP4_DF, false);
	fl = flow4(1);
	fl.dport = 8080; /* VIP address, other port: no port-agnostic VIP there */
	build(&f[1], &fl, 10, IP4_DF, false);
	put_eth(&f[2], ETHERTYPE_ARP, false);
	memset(f[2].b + f[2].len, 0, 46);
	f[2].len += 46;

	run_frames(fx, fp, 3, fate, bid);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fate[i], FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_NO_VIP], 3);

	fx->w->has_exception = true;
	run_frames(fx, fp, 3, fate, bid);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fate[i], FATE_EXC);
	assert_int_equal(c->drops[LB_DROP_NO_VIP], 3);
}

/* A VIP with no usable backend drops, counted no_backend, and creates no flow. */
static void
test_pipeline_vip_without_backend_dropped(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl = flow4(5);
	struct frame f;

	fl.dst = ip4_addr(192, 0, 2, 30);
	build(&f, &fl, 10, IP4_DF, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_NO_BACKEND], 1);

	/* Every backend of VIP 0 down: its established flow has nowhere to go. */
	fl = flow4(5);
	build(&f, &fl, 10, IP4_DF, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);
	for (uint32_t j = 0; j < 4; j++)
		fx->cfg->vips[0].backends[j].state = LB_BACKEND_DOWN;
	fx_publish(fx);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_NO_BACKEND], 2);
	assert_int_equal(c->flow_rechosen, 1);
	assert_int_equal(lb_flow_table_count(fx->w->ft, fx->w->now), 1);
}

/* Check an ICMP too-big built in place from frame f (single segment). */
static void
check_too_big_reply(const struct fixture *fx, const struct rte_mbuf *m, const struct frame *f,
                    uint8_t af, uint32_t mtu)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *ip = p + LB_ETH_HLEN;
	uint32_t ihl = af == LB_AF_INET ? 20 : 40;
	uint32_t qmax = af == LB_AF_INET ? 576 - 28 : 1280 - 48;
	uint32_t qlen = f->l3 < qmax ? f->l3 : qmax;
	const uint8_t *icmp = ip + ihl;

	(void)fx;
	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + ihl + 8 + qlen);
	assert_int_equal(rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m));
	assert_memory_equal(p, g_client_mac, 6); /* back where it came from */
	assert_memory_equal(p + 6, g_lb_mac, 6);
	if (af == LB_AF_INET) {
		assert_int_equal(rd16(p + 12), ETHERTYPE_IPV4);
		assert_int_equal(rd16(ip + 2), 20 + 8 + qlen);
		assert_int_equal(ip[9], PROTO_ICMP);
		assert_int_equal(sum16(0, ip, 20), 0xFFFF);
		assert_memory_equal(ip + 12, g_src4, 4);
		assert_memory_equal(ip + 16, f->b + f->l2 + 12, 4); /* the client */
		assert_int_equal(icmp[0], 3);
		assert_int_equal(icmp[1], 4);
		assert_int_equal(rd16(icmp + 6), mtu);
		assert_int_equal(sum16(0, icmp, 8 + qlen), 0xFFFF);
	} else {
		assert_int_equal(rd16(p + 12), ETHERTYPE_IPV6);
		assert_int_equal(rd16(ip + 4), 8 + qlen);
		assert_int_equal(ip[6], PROTO_ICMPV6);
		assert_memory_equal(ip + 24, f->b + f->l2 + 8, 16);
		assert_int_equal(icmp[0], 2);
		assert_int_equal(rd32(icmp + 4), mtu);
		assert_int_equal(ip6_l4_sum(ip, icmp, 8 + qlen, PROTO_ICMPV6), 0xFFFF);
	}
	assert_memory_equal(icmp + 8, f->b + f->l2, qlen);
}

/*
 * Over the MTU once encapsulated: ICMP back to the client (IPv4 with DF,
 * IPv6), a policy drop for IPv4 without DF, or a drop when so configured.
 * A packet that just fits is forwarded.
 */
static void
test_pipeline_too_big_icmp_or_drop(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl4 = flow4(11), fl6 = flow6(11);
	struct lb_burst_out out;
	struct rte_mbuf *m;
	struct frame f;

	build_sized(&f, &fl4, 1480, true); /* 1480 + 20 = 1500: fits */
	assert_int_equal(run_one(fx, &f, NULL), FATE_FWD);

	build_sized(&f, &fl4, 1481, true);
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	check_too_big_reply(fx, m, &f, LB_AF_INET, 1480);
	out_free(&out);

	build_sized(&f, &fl4, 1481, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 1);

	build_sized(&f, &fl6, 1500, false); /* GUE over IPv6: 48 bytes of overhead */
	m = mk_mbuf(&f);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_back, 1);
	check_too_big_reply(fx, m, &f, LB_AF_INET6, 1452);
	out_free(&out);

	fx->cfg->encap.too_big = LB_TOO_BIG_DROP;
	fx_publish(fx);
	build_sized(&f, &fl4, 1481, true);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	build_sized(&f, &fl6, 1500, false);
	assert_int_equal(run_one(fx, &f, NULL), FATE_DROP);
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 3);
	assert_int_equal(c->flow_misses, 2); /* the too-big packets still pinned their flows */
}

/*
 * A jumbo frame arriving as a chain and too big for the tunnel: the ICMP
 * quote is in the first segment, the rest of the chain is freed (the pool
 * check in teardown sees a leak) and the reply is one segment.
 */
static void
test_pipeline_too_big_chain_icmp_frees_tail(void **state)
{
	struct fixture *fx = *state;
	struct flow fl4 = flow4(12), fl6 = flow6(12);
	struct lb_burst_out out;
	struct rte_mbuf *m[2];
	struct frame *f = malloc(2 * sizeof(*f));

	assert_non_null(f);
	build_sized(&f[0], &fl4, 4000, true);
	build_sized(&f[1], &fl6, 9000, false);
	m[0] = mk_chain(&f[0], SEG_MAX, SEG_MAX);
	m[1] = mk_chain(&f[1], 1500, 1000);
	assert_int_equal(m[0]->nb_segs, 2);
	assert_int_equal(m[1]->nb_segs, 9);
	run(fx, m, 2, &out);
	assert_int_equal(out.n_back, 2);
	check_too_big_reply(fx, m[0], &f[0], LB_AF_INET, 1480);
	check_too_big_reply(fx, m[1], &f[1], LB_AF_INET6, 1452);
	out_free(&out);

	/* IPv4 without DF in a chain: dropped whole. */
	build_sized(&f[0], &fl4, 3000, false);
	m[0] = mk_chain(&f[0], SEG_MAX, SEG_MAX);
	run(fx, m, 1, &out);
	assert_int_equal(out.n_drop, 1);
	assert_int_equal(fx->w->cnt->drops[LB_DROP_TOO_BIG], 1);
	out_free(&out);
	free(f);
}

/* A 9000-byte MTU: chains are forwarded as they are, headers prepended to the first segment. */
static void
test_pipeline_jumbo_chain_forwarded(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct flow fl4 = flow4(13), fl6 = flow6(13);
	uint8_t *lin = malloc(FRAME_MAX + 100);
	struct frame *f = malloc(sizeof(*f));
	struct lb_burst_out out;
	struct rte_mbuf *m;
	const uint8_t *ip, *udp;

	assert_non_null(lin);
	assert_non_null(f);
	fx_config(fx, cfg_load(9000, "icmp", g_base_vips));

	/* IPIP, two segments. */
	build_sized(f, &fl4, 4000, true);
	m = mk_chain(f, SEG_MAX, SEG_MAX);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	assert_int_equal(m->nb_segs, 2);
	assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + 20 + 4000);
	ip = rte_pktmbuf_read(m, 0, rte_pktmbuf_pkt_len(m), lin);
	assert_int_equal(rd16(ip + LB_ETH_HLEN + 2), 20 + 4000);
	assert_memory_equal(ip + LB_ETH_HLEN + 20, f->b + f->l2, 4000);
	out_free(&out);

	/*
	 * GUE over IPv6, odd segment sizes so the checksum crosses boundaries at
	 * odd offsets, and 4 bytes of trailing padding trimmed from the last one.
	 */
	build_sized(f, &fl6, 8000, false);
	memset(f->b + f->len, 0xEE, 4);
	f->len += 4;
	m = mk_chain(f, 1001, 777);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_fwd, 1);
	assert_int_equal(rte_pktmbuf_pkt_len(m), LB_ETH_HLEN + 40 + 8 + 8000);
	ip = (const uint8_t *)rte_pktmbuf_read(m, 0, rte_pktmbuf_pkt_len(m), lin) + LB_ETH_HLEN;
	udp = ip + 40;
	assert_int_equal(rd16(ip + 4), 8 + 8000);
	assert_int_equal(rd16(udp + 4), 8 + 8000);
	assert_int_not_equal(rd16(udp + 6), 0);
	assert_int_equal(ip6_l4_sum(ip, udp, 8 + 8000, PROTO_UDP), 0xFFFF);
	assert_memory_equal(udp + 8, f->b + f->l2, 8000);
	out_free(&out);

	/* Padding longer than the last segment cannot be trimmed there: no_headroom. */
	build_sized(f, &fl4, 3000, true);
	memset(f->b + f->len, 0xEE, 10);
	f->len += 10;
	m = mk_chain(f, SEG_MAX, 970); /* segments 2048, 970, 6 */
	assert_int_equal(m->nb_segs, 3);
	run(fx, &m, 1, &out);
	assert_int_equal(out.n_drop, 1);
	assert_int_equal(c->drops[LB_DROP_NO_HEADROOM], 1);
	out_free(&out);
	free(f);
	free(lin);
}

/*
 * A mixed burst, one packet of every kind: each ends in exactly one place,
 * and rx_packets equals forwarded + back + exception + drops.
 */
static void
test_pipeline_counters_conserve(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	struct frame *f = calloc(LB_BURST, sizeof(*f));
	const struct frame *fp[LB_BURST];
	int fate[LB_BURST], bid[LB_BURST];
	uint32_t n = 0;
	uint64_t drops = 0;

	assert_non_null(f);
	for (uint32_t i = 0; i < 12; i++) {
		struct flow fl = i & 1 ? flow6(i) : flow4(i);

		build(&f[n++], &fl, 20, IP4_DF, false);
	}
	{
		struct flow fl = flow4(100);

		build_sized(&f[n++], &fl, 1481, true);  /* ICMP back */
		build_sized(&f[n++], &fl, 1481, false); /* too_big */
		build_frag(&f[n++], &fl, 0, true, 64);
		build_icmp_error(&f[n++], &fl);
		build(&f[n], &fl, 20, IP4_DF, false); /* total length beyond the frame */
		f[n].len -= 10;
		n++;
		build(&f[n], &fl, 20, IP4_DF, false); /* TCP header cut */
		wr16(f[n].b + f[n].l2 + 2, 20 + 12);
		wr16(f[n].b + f[n].l2 + 10, 0);
		f[n].len = f[n].l2 + 32;
		n++;
		fl.dst = ip4_addr(192, 0, 2, 30); /* no backend */
		build(&f[n++], &fl, 20, IP4_DF, false);
		fl.dst = ip4_addr(192, 0, 2, 99); /* no VIP */
		build(&f[n++], &fl, 20, IP4_DF, false);
		put_eth(&f[n], ETHERTYPE_ARP, false);
		memset(f[n].b + f[n].len, 0, 46);
		f[n].len += 46;
		n++;
		f[n].len = 10; /* runt */
		memset(f[n].b, 0, 10);
		n++;
	}
	for (uint32_t i = 0; i < n; i++)
		fp[i] = &f[i];
	run_frames(fx, fp, n, fate, bid);
	assert_int_equal(c->rx_packets, n);
	assert_int_equal(count_eq(fate, n, FATE_FWD), 12 + 2); /* + fragment, ICMP error */
	assert_int_equal(count_eq(fate, n, FATE_BACK), 1);
	assert_int_equal(count_eq(fate, n, FATE_EXC), 0);
	for (unsigned int r = 0; r < LB_DROP__COUNT; r++)
		drops += c->drops[r];
	assert_int_equal(drops, count_eq(fate, n, FATE_DROP));
	assert_int_equal(c->drops[LB_DROP_TOO_BIG], 1);
	assert_int_equal(c->drops[LB_DROP_IP4_TRUNC], 1);
	assert_int_equal(c->drops[LB_DROP_L4_TRUNC], 1);
	assert_int_equal(c->drops[LB_DROP_NO_BACKEND], 1);
	assert_int_equal(c->drops[LB_DROP_NO_VIP], 2);
	assert_int_equal(c->drops[LB_DROP_ETH_TRUNC], 1);
	assert_int_equal(c->rx_packets, count_eq(fate, n, FATE_FWD) + count_eq(fate, n, FATE_BACK) +
	                                        count_eq(fate, n, FATE_EXC) + drops);
	free(f);
}

/*
 * Frames for the sketch and counter tests: bursts of one VIP (the pipeline's
 * batched paths), bursts mixing VIPs, non-VIP packets, fragments, ICMP errors
 * and parse drops (its packet-by-packet paths), and short bursts. Flows repeat
 * (flow i % 40, so some keys become sketch candidates).
 */
static uint32_t
mixed_frames(struct frame *f, uint32_t max)
{
	uint32_t n = 0, round = 0;

	while (n + LB_BURST <= max) {
		uint32_t kind = round % 4, len = kind == 3 ? 1 + round % 31 : LB_BURST;

		for (uint32_t j = 0; j < len; j++, n++) {
			uint32_t i = (round * 7 + j * 13) % 40 + (j % 5 == 0 ? 1000 : 0);
			struct flow fl = flow4(i);

			if (kind == 1 && j % 3 == 1)
				fl = flow6(i);
			else if (kind == 1 && j % 3 == 2)
				fl.dst = ip4_addr(192, 0, 2, 20), fl.proto = PROTO_UDP,
				fl.dport = 53;
			build(&f[n], &fl, 20 + j, IP4_DF, false);
			if (kind == 2 && j == 5)
				build_frag(&f[n], &fl, 0, true, 64);
			if (kind == 2 && j == 9)
				build_icmp_error(&f[n], &fl);
			if (kind == 2 && j == 11)
				f[n].len -= 10; /* IPv4 total length beyond the frame */
			if (kind == 2 && j == 17) {
				fl.dst = ip4_addr(192, 0, 2, 99); /* no VIP */
				build(&f[n], &fl, 20, IP4_DF, false);
			}
		}
		round++;
	}
	return n;
}

/* The reference: one lb_sketch_add() per VIP packet, under its VIP's key mode. */
static void
sketch_ref_add(const struct lb_snapshot *s, struct lb_sketch *ref, const struct frame *f)
{
	struct lb_pkt_info info;
	const struct lb_vip *v;
	struct lb_flow_key k;

	if (lb_parse_frame(f->b, f->len, f->len, &info) != LB_PARSE_OK)
		return;
	if (info.flags & LB_PKT_FRAGMENT)
		v = lb_vip_lookup_frag(s, info.key.af, &info.key.dst, info.key.proto);
	else
		v = lb_vip_lookup(s, info.key.af, &info.key.dst, info.key.proto, info.key.dport);
	if (v == NULL)
		return;
	if (v->key_mode == LB_KEY_5TUPLE) {
		lb_sketch_add(ref, v->id, lb_hash_flow(&s->hkey, &info.key), &info.key, 1);
		return;
	}
	memset(&k, 0, sizeof(k));
	k.src = info.key.src;
	k.af = info.key.af;
	if (v->key_mode == LB_KEY_SRC_IP_DPORT)
		k.dport = info.key.dport;
	lb_sketch_add(ref, v->id, lb_hash_flow(&s->hkey, &k), &k, 1);
}

/*
 * The pipeline feeds the sketch a burst at a time (the VIP's total once, only
 * the sampled packets visited): the sketch must end up exactly as with one
 * lb_sketch_add() per packet, at every sampling rate and key mode.
 */
static void
test_pipeline_sketch_matches_per_packet(void **state)
{
	static const char *const key_vips[] = {
	        NULL, /* the default VIPs, all 5-tuple */
	        "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\", \"key\": "
	        "\"src_ip\", \"backends\": [" VIP0_BACKENDS "]},"
	        "{\"address\": \"2001:db8::10\", \"port\": 443, \"protocol\": \"tcp\", \"encap\": "
	        "\"gue\", \"key\": \"src_ip_dport\", \"backends\": [{\"address\": \"fd01::1\"}]},"
	        "{\"address\": \"192.0.2.20\", \"port\": 0, \"protocol\": \"udp\", \"encap\": "
	        "\"gue\", \"backends\": [{\"address\": \"10.2.0.1\"}]}"};
	static const unsigned int shifts[] = {0, 2, 4};
	struct fixture *fx = *state;
	const uint32_t max = 160 * LB_BURST;
	struct frame *f = calloc(max, sizeof(*f));
	const struct frame **fp = calloc(max, sizeof(*fp));
	int *fate = calloc(max, sizeof(int)), *bid = calloc(max, sizeof(int));
	uint32_t n;

	assert_true(f != NULL && fp != NULL && fate != NULL && bid != NULL);
	n = mixed_frames(f, max);
	for (uint32_t i = 0; i < n; i++)
		fp[i] = &f[i];
	for (size_t kv = 0; kv < 2; kv++) {
		if (key_vips[kv] != NULL)
			fx_config(fx, cfg_load(1500, "icmp", key_vips[kv]));
		for (size_t si = 0; si < 3 * 3; si++) {
			struct lb_sketch *sk = lb_sketch_create(shifts[si % 3]);
			struct lb_sketch *ref = lb_sketch_create(shifts[si % 3]);
			/* A VIP total carried in from earlier in the window moves the
			 * candidate gate (total >> 9) across these keys' counts, so
			 * the running total each sampled packet sees is checked too. */
			uint64_t t0 = (uint64_t)(si / 3) * (25000u >> shifts[si % 3]);
			uint32_t cands = 0;

			assert_true(sk != NULL && ref != NULL);
			for (int v = 0; v < 3; v++)
				sk->buf[0].vip_total[v] = ref->buf[0].vip_total[v] = t0;
			fx->w->sketch = sk;
			/* Burst by burst as mixed_frames() laid them out. */
			for (uint32_t i = 0, round = 0; i < n; round++) {
				uint32_t len = round % 4 == 3 ? 1 + round % 31 : LB_BURST;

				run_frames(fx, fp + i, len, fate + i, bid + i);
				for (uint32_t j = i; j < i + len; j++)
					sketch_ref_add(fx->snap, ref, &f[j]);
				i += len;
			}
			fx->w->sketch = NULL;
			assert_int_equal(sk->countdown, ref->countdown);
			assert_int_equal(sk->rng, ref->rng);
			assert_int_equal(sk->evictions, ref->evictions);
			assert_memory_equal(sk->buf[0].vip_total, ref->buf[0].vip_total,
			                    sizeof(ref->buf[0].vip_total));
			assert_memory_equal(sk->buf[0].cm, ref->buf[0].cm, sizeof(ref->buf[0].cm));
			assert_memory_equal(sk->buf[0].tag, ref->buf[0].tag,
			                    sizeof(ref->buf[0].tag));
			assert_memory_equal(sk->buf[0].key, ref->buf[0].key,
			                    sizeof(ref->buf[0].key));
			for (uint32_t t = 0; t < LB_SKETCH_CANDS; t++)
				cands += ref->buf[0].tag[t].count != 0;
			print_message("keys %s, 1 in %u, totals from %llu: %llu VIP packets, %u "
			              "candidates, same\n",
			              kv ? "src_ip" : "5tuple", 1u << shifts[si % 3],
			              (unsigned long long)t0,
			              (unsigned long long)(ref->buf[0].vip_total[0] +
			                                   ref->buf[0].vip_total[1] +
			                                   ref->buf[0].vip_total[2] - 3 * t0),
			              cands);
			if (t0 == 0)
				assert_true(cands > 0);
			lb_sketch_free(sk);
			lb_sketch_free(ref);
		}
	}
	free(f);
	free(fp);
	free(fate);
	free(bid);
}

/*
 * Per-VIP and per-backend packets and bytes are kept in registers across a
 * run of one VIP and added at VIP changes and at the end of the burst: they
 * must still count every forwarded packet and its inner bytes exactly.
 */
static void
test_pipeline_vip_backend_counters_exact(void **state)
{
	struct fixture *fx = *state;
	const struct lb_core_counters *c = fx->w->cnt;
	const uint32_t max = 40 * LB_BURST;
	struct frame *f = calloc(max, sizeof(*f));
	const struct frame **fp = calloc(max, sizeof(*fp));
	int *fate = calloc(max, sizeof(int)), *bid = calloc(max, sizeof(int));
	uint64_t vp[LB_MAX_VIPS] = {0}, vb[LB_MAX_VIPS] = {0};
	uint64_t bp[LB_MAX_BACKENDS] = {0}, bb[LB_MAX_BACKENDS] = {0};
	uint64_t fwd = 0;
	uint32_t n;

	assert_true(f != NULL && fp != NULL && fate != NULL && bid != NULL);
	n = mixed_frames(f, max);
	for (uint32_t i = 0, round = 0; i < n; round++) {
		uint32_t len = round % 4 == 3 ? 1 + round % 31 : LB_BURST;

		for (uint32_t j = i; j < i + len; j++)
			fp[j] = &f[j];
		run_frames(fx, fp + i, len, fate + i, bid + i);
		i += len;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct lb_pkt_info info;
		const struct lb_vip *v;

		if (fate[i] != FATE_FWD)
			continue;
		assert_true(bid[i] >= 0);
		assert_int_equal(lb_parse_frame(f[i].b, f[i].len, f[i].len, &info), LB_PARSE_OK);
		if (info.flags & LB_PKT_FRAGMENT)
			v = lb_vip_lookup_frag(fx->snap, info.key.af, &info.key.dst,
			                       info.key.proto);
		else
			v = lb_vip_lookup(fx->snap, info.key.af, &info.key.dst, info.key.proto,
			                  info.key.dport);
		assert_non_null(v);
		vp[v->id]++;
		vb[v->id] += info.l3_len;
		bp[bid[i]]++;
		bb[bid[i]] += info.l3_len;
		fwd++;
	}
	assert_true(fwd > n / 2);
	for (uint32_t i = 0; i < LB_MAX_VIPS; i++) {
		assert_int_equal(c->vip[i].packets, vp[i]);
		assert_int_equal(c->vip[i].bytes, vb[i]);
	}
	for (uint32_t i = 0; i < LB_MAX_BACKENDS; i++) {
		assert_int_equal(c->backend[i].packets, bp[i]);
		assert_int_equal(c->backend[i].bytes, bb[i]);
	}
	assert_int_equal(c->rx_packets, n);
	free(f);
	free(fp);
	free(fate);
	free(bid);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_pipeline_flow_sticks_to_backend),
	        T(test_pipeline_output_ipip4_byte_exact),
	        T(test_pipeline_output_gue6_byte_exact),
	        T(test_pipeline_output_gue4_byte_exact),
	        T(test_pipeline_add_backend_keeps_established),
	        T(test_pipeline_remove_backend_moves_only_its_flows),
	        T(test_pipeline_reused_id_new_gen_rechooses),
	        T(test_pipeline_draining_keeps_flows_gets_no_new),
	        T(test_pipeline_weight_zero_keeps_flows_gets_no_new),
	        T(test_pipeline_down_moves_its_flows),
	        T(test_pipeline_icmp_error_follows_flow),
	        T(test_pipeline_fragments_of_datagram_one_backend),
	        T(test_pipeline_no_vip_dropped_or_exception),
	        T(test_pipeline_vip_without_backend_dropped),
	        T(test_pipeline_too_big_icmp_or_drop),
	        T(test_pipeline_too_big_chain_icmp_frees_tail),
	        T(test_pipeline_jumbo_chain_forwarded),
	        T(test_pipeline_counters_conserve),
	        T(test_pipeline_sketch_matches_per_packet),
	        T(test_pipeline_vip_backend_counters_exact),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
