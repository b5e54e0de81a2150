/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_xdp: one input is one Ethernet frame, run through the XDP steering program
 * (bpf/xsk_steer.bpf.c) in the kernel with BPF_PROG_TEST_RUN, and cross-checked against the data
 * path's own parser (dataplane/parse.c).
 *
 * Set up once per process: the program loaded through bpf/xsk_steer_loader.h in test mode (a VIP
 * hit returns XDP_REDIRECT without an AF_XDP socket), with the VIPs of fuzz_packet.c's first
 * snapshot and of tests/unit/test_xsk_steer.c in its map. Needs root (CAP_BPF, or CAP_SYS_ADMIN on
 * older kernels): if the kernel refuses the load the process exits 77 (meson: skipped).
 *
 * For each input (frames shorter than an Ethernet header are refused by the kernel, longer ones
 * are cut at FRAME_MAX):
 *
 * 1. the verdict is XDP_PASS or XDP_REDIRECT, and exactly one of the program's counters went up,
 *    by one: LB_XSK_CNT_REDIRECT for a redirect, one of the PASS reasons for a pass (never
 *    PASS_NO_XSK in test mode);
 * 2. the same frame gives the same verdict and counter a second time (no state in the program);
 * 3. against lb_parse() on the same bytes, with the same VIP table:
 *    - a TCP/UDP packet the parser accepts (not a fragment, not an ICMP error) whose destination
 *      is a VIP (exact port, or port 0 on the address and protocol) is redirected; one that is no
 *      VIP passes as PASS_NOT_VIP;
 *    - a fragment the parser accepts is redirected exactly when its address and protocol have a
 *      port-agnostic VIP, else passes as PASS_FRAGMENT (documented: docs/xdp.md, fragments to a
 *      port-specific VIP go to the kernel);
 *    - what the parser calls not for the balancer (LB_PARSE_NOT_LB) is passed, ICMP errors whose
 *      quote names no TCP/UDP flow within the outer IP packet included;
 *    - a frame the parser rejects as malformed may go either way (a redirected one is dropped and
 *      counted by the data path; a passed one is the kernel's to judge), but never as an ICMP
 *      drop reason (icmp_trunc, icmp_malformed: the parser no longer gives them);
 *    the known differences are checked as such (they are not silently allowed): see
 *    KNOWN DIFFERENCES below and docs/fuzzing.md.
 *
 * libFuzzer cannot see coverage inside the kernel; it is guided by the user-space parser's
 * coverage, and by one extra feature per (XDP counter, reference outcome) pair.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fuzz.h"
#include "dataplane/parse.h"
#include "bpf/xsk_steer_loader.h"

#define ETH_HLEN_MIN 14 /* BPF_PROG_TEST_RUN refuses shorter XDP input */
#define FRAME_MAX 1514  /* a standard frame: well inside what XDP test runs accept */
#define SKIP_RC 77

#define P_TCP 6
#define P_UDP 17

/*
 * KNOWN DIFFERENCES between the XDP program and lb_parse (a difference that is not one of these
 * fails the run). Three earlier ones were fixed in the program and are now checked as agreement:
 * ICMP errors about a VIP flow are redirected, exactly 8 IPv6 extension headers are walked, AH is
 * not walked (docs/fuzzing.md, findings 3-5).
 *
 * K_FRAG_PORT_VIP: a fragment to an address whose VIPs all have ports passes (PASS_FRAGMENT)
 *   here, because this harness's map has no fragments-only entry (spillwayd adds one per such
 *   address, control/hooks/xdp_sync.c); the data path would take it (fragment index).
 */
enum known { K_NONE, K_FRAG_PORT_VIP, K_MAX };
static const char *const known_name[K_MAX] = {"none", "frag_port_vip"};

struct vip {
	int af; /* AF_INET / AF_INET6 */
	const char *addr;
	uint8_t proto;
	uint16_t port; /* host order; 0 = any port */
};

/* fuzz_packet.c's snapshot A, then test_xsk_steer.c's VIPs. */
static const struct vip vips[] = {
        {AF_INET, "192.0.2.10", P_TCP, 80},       {AF_INET, "192.0.2.10", P_UDP, 0},
        {AF_INET, "192.0.2.10", P_TCP, 443},      {AF_INET, "192.0.2.30", P_TCP, 80},
        {AF_INET, "192.0.2.40", P_UDP, 53},       {AF_INET6, "2001:db8::10", P_TCP, 443},
        {AF_INET6, "2001:db8::10", P_UDP, 0},     {AF_INET6, "2001:db8::10", P_TCP, 80},
        {AF_INET6, "2001:db8::20", P_TCP, 80},    {AF_INET, "203.0.113.10", P_TCP, 443},
        {AF_INET, "203.0.113.10", P_UDP, 53},     {AF_INET, "203.0.113.20", P_TCP, 0},
        {AF_INET6, "2001:db8:1::10", P_TCP, 443}, {AF_INET6, "2001:db8:1::10", P_UDP, 53},
        {AF_INET6, "2001:db8:1::20", P_UDP, 0},
};
#define N_VIPS (sizeof(vips) / sizeof(vips[0]))

static struct lb_xsk_steer *g_prog;
static int g_prog_fd = -1, g_stats_fd = -1;
static uint8_t g_addr[N_VIPS][16];

/*
 * libFuzzer's extra counters: one feature per (XDP counter, reference class, known difference),
 * so inputs that reach a new combination in the kernel are kept even though the kernel's own
 * coverage is invisible. An ordinary array in the replay build.
 */
enum ref_class { R_OK, R_FRAG, R_ICMP_ERR, R_NOT_LB, R_MALFORMED, R_MAX };
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t
        g_extra[LB_XSK_CNT_MAX * R_MAX * K_MAX];

static void
teardown(void)
{
	lb_xsk_steer_close(g_prog);
	g_prog = NULL;
}

static void
setup(void)
{
	struct lb_xsk_steer_opts o = {.test_mode = true};
	int vfd;

	g_prog = lb_xsk_steer_open(&o);
	if (g_prog == NULL) {
		fprintf(stderr,
		        "fuzz_xdp: cannot load the XDP program (%s): needs root / CAP_BPF; "
		        "skipped\n",
		        strerror(errno));
		exit(SKIP_RC);
	}
	atexit(teardown);
	g_prog_fd = lb_xsk_steer_prog_fd(g_prog);
	g_stats_fd = lb_xsk_steer_stats_map_fd(g_prog);
	vfd = lb_xsk_steer_vip_map_fd(g_prog);
	for (size_t i = 0; i < N_VIPS; i++) {
		struct lb_xsk_vip_key key;

		FUZZ_CHECK(inet_pton(vips[i].af, vips[i].addr, g_addr[i]) == 1, "%s", vips[i].addr);
		FUZZ_CHECK(lb_xsk_vip_key_make(&key, vips[i].af, g_addr[i], vips[i].proto,
		                               htons(vips[i].port)) == 0,
		           "key %s", vips[i].addr);
		FUZZ_CHECK(lb_xsk_vip_add(vfd, &key, (uint32_t)i) == 0, "vip_add %s", vips[i].addr);
	}
}

/* The reference VIP table: exact port, or port 0 on the same address and protocol. */
static bool
ref_vip(const struct lb_flow_key *k, bool any_port_only)
{
	int af = k->af == LB_AF_INET ? AF_INET : AF_INET6;
	size_t alen = af == AF_INET ? 4 : 16;

	for (size_t i = 0; i < N_VIPS; i++) {
		if (vips[i].af != af || vips[i].proto != k->proto ||
		    memcmp(g_addr[i], k->dst.b, alen) != 0)
			continue;
		if (vips[i].port == 0 || (!any_port_only && htons(vips[i].port) == k->dport))
			return true;
	}
	return false;
}

/* Runs the frame; returns the verdict and which counter moved (-1: none or several). */
static void
run(const uint8_t *frame, uint32_t len, uint32_t *verdict, int *cnt)
{
	uint64_t before[LB_XSK_CNT_MAX], after[LB_XSK_CNT_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .repeat = 1);
	int moved = 0;

	FUZZ_CHECK(lb_xsk_counters_read(g_stats_fd, before) == 0, "counters_read");
	FUZZ_CHECK(bpf_prog_test_run_opts(g_prog_fd, &o) == 0, "test run of %u bytes: %s", len,
	           strerror(errno));
	FUZZ_CHECK(lb_xsk_counters_read(g_stats_fd, after) == 0, "counters_read");
	*verdict = o.retval;
	*cnt = -1;
	for (int i = 0; i < LB_XSK_CNT_MAX; i++) {
		uint64_t d = after[i] - before[i];

		FUZZ_CHECK(d <= 1, "counter %d moved by %llu", i, (unsigned long long)d);
		if (d == 1) {
			moved++;
			*cnt = i;
		}
	}
	FUZZ_CHECK(moved == 1, "%d counters moved (verdict %u)", moved, o.retval);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[FRAME_MAX];
	struct lb_pkt_info info;
	uint32_t len, verdict, verdict2;
	int cnt, cnt2, rc;
	enum ref_class rclass;
	enum known known = K_NONE;
	bool ok;

	if (g_prog == NULL)
		setup();
	if (size < ETH_HLEN_MIN)
		return 0;
	len = size > FRAME_MAX ? FRAME_MAX : (uint32_t)size;
	memcpy(frame, data, len);

	run(frame, len, &verdict, &cnt);
	FUZZ_CHECK(verdict == XDP_PASS || verdict == XDP_REDIRECT, "verdict %u", verdict);
	FUZZ_CHECK((verdict == XDP_REDIRECT) == (cnt == LB_XSK_CNT_REDIRECT),
	           "verdict %u with counter %d", verdict, cnt);
	FUZZ_CHECK(cnt != LB_XSK_CNT_PASS_NO_XSK, "PASS_NO_XSK in test mode");
	run(frame, len, &verdict2, &cnt2);
	FUZZ_CHECK(verdict2 == verdict && cnt2 == cnt, "second run: %u/%d, first %u/%d", verdict2,
	           cnt2, verdict, cnt);

	/* The reference: the data path's parser on the same bytes (a heap copy of exactly len). */
	{
		uint8_t *copy = malloc(len);

		FUZZ_CHECK(copy != NULL, "malloc");
		memcpy(copy, frame, len);
		memset(&info, 0, sizeof(info));
		rc = lb_parse(copy, len, &info);
		free(copy);
	}
	if (rc == LB_PARSE_OK && (info.flags & LB_PKT_ICMP_ERROR))
		rclass = R_ICMP_ERR;
	else if (rc == LB_PARSE_OK && (info.flags & LB_PKT_FRAGMENT))
		rclass = R_FRAG;
	else if (rc == LB_PARSE_OK)
		rclass = R_OK;
	else if (rc == LB_PARSE_NOT_LB)
		rclass = R_NOT_LB;
	else
		rclass = R_MALFORMED;

	switch (rclass) {
	case R_OK: {
		bool hit = ref_vip(&info.key, false);

		ok = hit ? verdict == XDP_REDIRECT : cnt == LB_XSK_CNT_PASS_NOT_VIP;
		FUZZ_CHECK(ok,
		           "parser: %s VIP (af %u proto %u dport %u), XDP verdict %u counter %d",
		           hit ? "a" : "no", info.key.af, info.key.proto, ntohs(info.key.dport),
		           verdict, cnt);
		break;
	}
	case R_FRAG: {
		bool any = ref_vip(&info.key, true);

		ok = any ? verdict == XDP_REDIRECT : cnt == LB_XSK_CNT_PASS_FRAGMENT;
		if (ok && !any) {
			for (size_t i = 0; i < N_VIPS; i++)
				if (vips[i].proto == info.key.proto &&
				    memcmp(g_addr[i], info.key.dst.b,
				           info.key.af == LB_AF_INET ? 4 : 16) == 0)
					known = K_FRAG_PORT_VIP;
		}
		FUZZ_CHECK(ok, "parser: fragment, %s port-agnostic VIP; XDP verdict %u counter %d",
		           any ? "a" : "no", verdict, cnt);
		break;
	}
	case R_ICMP_ERR: {
		/* The quoted flow's VIP (a quoted later fragment: the port-0 entry only). */
		bool hit = ref_vip(&info.key, (info.flags & LB_PKT_FRAGMENT) != 0);

		ok = hit ? verdict == XDP_REDIRECT : cnt == LB_XSK_CNT_PASS_NOT_L4;
		FUZZ_CHECK(ok, "parser: ICMP error about %s VIP flow; XDP verdict %u counter %d",
		           hit ? "a" : "no", verdict, cnt);
		break;
	}
	case R_NOT_LB:
		FUZZ_CHECK(verdict == XDP_PASS, "parser: not for the balancer; XDP redirected it");
		break;
	default:
		/*
		 * Malformed for the data path: either verdict is acceptable, but an ICMP
		 * error is never judged malformed (its quote names a VIP flow, or it is
		 * not ours and passes, in both).
		 */
		FUZZ_CHECK(rc != LB_DROP_ICMP_TRUNC && rc != LB_DROP_ICMP_MALFORMED,
		           "parser: ICMP error dropped as %d; XDP verdict %u counter %d", rc,
		           verdict, cnt);
		break;
	}
	g_extra[((unsigned int)cnt * R_MAX + rclass) * K_MAX + known]++;
	if (known != K_NONE && getenv("SPW_FUZZ_XDP_VERBOSE") != NULL)
		fprintf(stderr, "fuzz_xdp: known difference %s\n", known_name[known]);
	return 0;
}
