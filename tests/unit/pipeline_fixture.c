/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared part of the lb_pipeline_burst() tests (pipeline_fixture.h): the
 * EAL and mbuf pool, the per-test worker and its end-of-test conservation
 * check, the frame builders, and bursts run with each packet's fate recorded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <jansson.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "control/model/config.h"
#include "dataplane/encap.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "control/build/snapshot_build.h"

#include "eal.h"
#include "pipeline_fixture.h"

#define POOL_SIZE 4095

static struct rte_mempool *g_pool;

const uint8_t g_lb_mac[6] = {0x02, 0x1b, 0, 0, 0, 0x01};     /* the worker's port */
const uint8_t g_client_mac[6] = {0x02, 0xcc, 0, 0, 0, 0x07}; /* previous hop */
const uint8_t g_next_hop[6] = {0x02, 0, 0, 0, 0, 0x01};      /* from the config */
const uint8_t g_src4[4] = {10, 0, 0, 1};                     /* encap.source_v4 */

/* The encap and maglev sections of every test configuration (cfg_load). */
#define ENCAP_JSON                                                                                 \
	"\"encap\": {\"source_v4\": \"10.0.0.1\", \"source_v6\": \"fd00::1\", "                    \
	"\"next_hop_mac\": \"02:00:00:00:00:01\", \"mtu\": %u, \"too_big\": \"%s\"}, "             \
	"\"maglev\": {\"table_size\": 65537, \"seed\": \"test-pipeline\"}"

const char *const g_base_vips =
        "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": "
        "[" VIP0_BACKENDS "]},"
        "{\"address\": \"2001:db8::10\", \"port\": 443, \"protocol\": \"tcp\", \"encap\": "
        "\"gue\", \"backends\": [{\"address\": \"fd01::1\"}, {\"address\": \"fd01::2\"}]},"
        "{\"address\": \"192.0.2.20\", \"port\": 0, \"protocol\": \"udp\", \"encap\": \"gue\", "
        "\"backends\": [{\"address\": \"10.2.0.1\"}, {\"address\": \"10.2.0.2\"}]},"
        "{\"address\": \"192.0.2.30\", \"port\": 80, \"protocol\": \"tcp\"}";

/* --- configuration ------------------------------------------------------- */

struct lb_config *
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

void
fx_publish(struct fixture *fx)
{
	char err[256];

	lb_snapshot_free(fx->snap);
	fx->snap = lb_snapshot_build(fx->cfg, ++fx->generation, err, sizeof(err));
	if (fx->snap == NULL)
		fail_msg("snapshot: %s", err);
}

void
fx_config(struct fixture *fx, struct lb_config *cfg)
{
	lb_config_free(fx->cfg);
	fx->cfg = cfg;
	fx_publish(fx);
}

/* --- fixtures ------------------------------------------------------------ */

int
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

int
group_teardown(void **state)
{
	(void)state;
	rte_mempool_free(g_pool);
	rte_eal_cleanup();
	return 0;
}

int
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
	fx->w->syn_idle = IDLE;
	fx->w->closing_idle = IDLE;
	memcpy(fx->w->src_mac, g_lb_mac, 6);
	memcpy(fx->w->rx_mac, g_lb_mac, 6);
	fx->w->check_dst_mac = true; /* as spillwayd runs by default */
	fx->pool_avail = rte_mempool_avail_count(g_pool);
	fx_config(fx, cfg_load(1500, "icmp", g_base_vips));
	*state = fx;
	return 0;
}

int
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

void
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

uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) << 16 | rd16(p + 2);
}

uint32_t
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

uint32_t
ip6_l4_sum(const uint8_t *ip6, const uint8_t *l4, uint32_t len, uint8_t proto)
{
	uint8_t ph[8];

	wr32(ph, len);
	ph[4] = ph[5] = ph[6] = 0;
	ph[7] = proto;
	return sum16(sum16(sum16(0, ip6 + 8, 32), ph, sizeof(ph)), l4, len);
}

union lb_ip
ip4_addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	union lb_ip ip = {{0}};

	ip.b[0] = a;
	ip.b[1] = b;
	ip.b[2] = c;
	ip.b[3] = d;
	return ip;
}

union lb_ip
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

struct flow
flow4(uint32_t i)
{
	struct flow f = {.af = LB_AF_INET, .proto = PROTO_TCP, .tos = 0x28, .dport = 80};

	f.src = ip4_addr(100, (uint8_t)(64 + (i >> 16)), (uint8_t)(i >> 8), (uint8_t)i);
	f.dst = *vip0();
	f.sport = (uint16_t)(1024 + i % 50000);
	return f;
}

struct flow
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

void
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

void
build(struct frame *f, const struct flow *fl, uint32_t payload, uint16_t ip4_frag, bool vlan)
{
	uint32_t l4 = (fl->proto == PROTO_TCP ? TCP_HLEN : UDP_HLEN) + payload;

	put_eth(f, fl->af == LB_AF_INET ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6, vlan);
	put_ip(f, fl->af, fl->tos, &fl->src, &fl->dst, fl->proto, l4, ip4_frag);
	put_l4(f, fl->proto, fl->sport, fl->dport, payload);
	f->l3 = f->len - f->l2;
}

void
build_sized(struct frame *f, const struct flow *fl, uint32_t l3, bool df)
{
	uint32_t hl =
	        (fl->af == LB_AF_INET ? 20 : 40) + (fl->proto == PROTO_TCP ? TCP_HLEN : UDP_HLEN);

	build(f, fl, l3 - hl, df ? IP4_DF : 0, false);
	assert_int_equal(f->l3, l3);
}

void
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

void
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

struct rte_mbuf *
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

struct rte_mbuf *
mk_mbuf(const struct frame *f)
{
	assert_true(f->len <= SEG_MAX);
	return mk_chain(f, f->len, 0);
}

void
run(struct fixture *fx, struct rte_mbuf **pkts, uint16_t n, struct lb_burst_out *out)
{
	lb_pipeline_burst(fx->w, fx->snap, pkts, n, out);
	/* A packet sent as outer fragments is in none of the lists (its mbuf is freed). */
	assert_int_equal(out->n_fwd + out->n_fragmented + out->n_back + out->n_exc + out->n_drop,
	                 n);
	assert_true(out->n_frag >= 2 * out->n_fragmented);
	fx->n_fwd += out->n_fwd + out->n_fragmented;
	fx->n_back += out->n_back;
	fx->n_exc += out->n_exc;
	fx->n_drop += out->n_drop;
}

void
out_free(struct lb_burst_out *out)
{
	rte_pktmbuf_free_bulk(out->fwd, out->n_fwd);
	rte_pktmbuf_free_bulk(out->back, out->n_back);
	rte_pktmbuf_free_bulk(out->exc, out->n_exc);
	rte_pktmbuf_free_bulk(out->drop, out->n_drop);
	rte_pktmbuf_free_bulk(out->frag, out->n_frag);
}

int
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
		if (fate[i] == -1) /* in no list: freed after being sent as fragments */
			fate[i] = FATE_FRAG;
	}
	assert_int_equal(count_eq(fate, n, FATE_FRAG), out->n_fragmented);
}

void
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

int
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

void
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

unsigned int
count_eq(const int *v, uint32_t n, int x)
{
	unsigned int c = 0;

	for (uint32_t i = 0; i < n; i++)
		c += v[i] == x;
	return c;
}
