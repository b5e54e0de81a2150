/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the lb_pipeline_burst() tests (test_pipeline*.c) share: the default
 * configuration and the per-test fixture (a worker with its own flow table and
 * counters, snapshots built from JSON as control builds them), hand-built
 * frames in real mbufs, and bursts run with the fate of every packet recorded.
 */
#ifndef SPW_TEST_PIPELINE_FIXTURE_H
#define SPW_TEST_PIPELINE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "control/model/config.h"
#include "dataplane/hash.h"
#include "dataplane/pipeline.h"
#include "dataplane/snapshot.h"

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

extern const uint8_t g_lb_mac[6];     /* the worker's port */
extern const uint8_t g_client_mac[6]; /* previous hop */
extern const uint8_t g_next_hop[6];   /* from the config */
extern const uint8_t g_src4[4];       /* encap.source_v4 */

/* The four backends of VIP 0 (ids 0-3), as members of a JSON array. */
#define VIP0_BACKENDS                                                                              \
	"{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\"}, {\"address\": \"10.1.0.3\"}, "  \
	"{\"address\": \"10.1.0.4\"}"

/*
 * The default configuration: VIP 0 IPv4 TCP over IPIP with four backends
 * (ids 0-3), VIP 1 IPv6 TCP over GUE with two IPv6 backends (ids 4-5), VIP 2 a
 * port-agnostic IPv4 UDP VIP over GUE (ids 6-7), VIP 3 with no backend.
 */
extern const char *const g_base_vips;

struct fixture {
	struct lb_worker *w;
	struct lb_config *cfg;
	struct lb_snapshot *snap;
	uint64_t generation;
	/* What lb_pipeline_burst handed back, summed over the test (n_fwd with
	 * the packets sent as outer fragments). */
	uint64_t n_fwd, n_back, n_exc, n_drop;
	unsigned int pool_avail; /* free mbufs before the test */
};

/* --- configuration ------------------------------------------------------- */

/*
 * The default encap (MTU mtu, too_big "icmp" or "drop") with the VIPs in vips
 * (the members of the "vips" array); fails the test if it is rejected.
 */
struct lb_config *cfg_load(unsigned int mtu, const char *too_big, const char *vips);

/* Publish fx->cfg as the next snapshot (what control does on every change). */
void fx_publish(struct fixture *fx);

/* Replace fx->cfg by cfg and publish it. */
void fx_config(struct fixture *fx, struct lb_config *cfg);

/* --- fixtures ------------------------------------------------------------ */

/* Group set-up: EAL without hugepages and an mbuf pool without per-lcore cache. */
int group_setup(void **state);

int group_teardown(void **state);

/* Per test: a fresh worker at time NOW and the default configuration (MTU 1500, ICMP). */
int setup(void **state);

/* Every packet ended in exactly one place, and every mbuf is back in the pool. */
int teardown(void **state);

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

void wr16(uint8_t *p, uint16_t v);
uint16_t rd16(const uint8_t *p);
uint32_t rd32(const uint8_t *p);

/* Ones'-complement sum (RFC 1071), not complemented, folded to 16 bits. */
uint32_t sum16(uint32_t sum, const uint8_t *b, size_t n);

/* An IPv6 upper-layer checksum over a datagram that includes its checksum: 0xFFFF if right. */
uint32_t ip6_l4_sum(const uint8_t *ip6, const uint8_t *l4, uint32_t len, uint8_t proto);

union lb_ip ip4_addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d);

/* An IPv6 address from its text form (the test fails if it does not parse). */
union lb_ip ip6_addr(const char *s);

/* The i-th client flow to VIP 0 (or to VIP 1 for IPv6); distinct for distinct i. */
struct flow flow4(uint32_t i);
struct flow flow6(uint32_t i);

/* Ethernet from the client's router to us, optionally with a VLAN tag, then type. */
void put_eth(struct frame *f, uint16_t type, bool vlan);

/* A whole packet of flow fl with payload bytes after the L4 header. */
void build(struct frame *f, const struct flow *fl, uint32_t payload, uint16_t ip4_frag, bool vlan);

/* An IP packet of exactly l3 bytes (payload filled in), for the MTU tests. */
void build_sized(struct frame *f, const struct flow *fl, uint32_t l3, bool df);

/*
 * One fragment of a datagram of fl: offset in 8-byte units, more = MF / M set;
 * the first fragment carries the L4 header, the others only payload bytes.
 */
void build_frag(struct frame *f, const struct flow *fl, uint16_t offset, bool more, uint32_t bytes);

/*
 * An ICMP "fragmentation needed" (IPv4) or "packet too big" (IPv6) from a
 * router on the path, quoting a packet the backend sent for flow fl (from the
 * VIP to the client) with the first 8 bytes of its L4 header.
 */
void build_icmp_error(struct frame *f, const struct flow *fl);

/* --- mbufs and runs ------------------------------------------------------ */

/* The frame in a chain: first bytes in the first segment, then rest per segment. */
struct rte_mbuf *mk_chain(const struct frame *f, uint32_t first, uint32_t rest);

/* The frame in one mbuf (it must fit one segment). */
struct rte_mbuf *mk_mbuf(const struct frame *f);

/* One lb_pipeline_burst() call, its outcome added to the fixture's totals. */
void run(struct fixture *fx, struct rte_mbuf **pkts, uint16_t n, struct lb_burst_out *out);

/* Free every mbuf the burst handed back. */
void out_free(struct lb_burst_out *out);

/* The backend id an encapsulated frame is addressed to, -1 if none matches. */
int out_backend(const struct lb_snapshot *s, const struct rte_mbuf *m);

/* FATE_FRAG: sent as outer fragments (out->frag; the packet's own mbuf freed). */
enum fate { FATE_FWD, FATE_BACK, FATE_EXC, FATE_DROP, FATE_FRAG };

/* Run frames (bursts of LB_BURST) and record each one's fate and backend. */
void run_frames(struct fixture *fx, const struct frame *const *f, uint32_t n, int *fate, int *bid);

/* One packet; returns its fate and sets *bid for a forwarded one. */
int run_one(struct fixture *fx, const struct frame *f, int *bid);

/*
 * Send one packet of each of n flows (flow4(base + i)), all of which must be
 * forwarded; bid[i] is the backend each went to.
 */
void send_flows(struct fixture *fx, uint32_t base, uint32_t n, int *bid);

/* How many of v[0..n) equal x. */
unsigned int count_eq(const int *v, uint32_t n, int x);

#endif /* SPW_TEST_PIPELINE_FIXTURE_H */
