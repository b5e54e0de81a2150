/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * control/hooks/xdp_sync.c: the XDP VIP map follows the published snapshots. The
 * steering program is loaded (test mode) and attached to lo in a private
 * network namespace, as DPDK's af_xdp PMD would attach it to a NIC; the hooks
 * are driven with snapshots built from configurations, and after every step
 * both the map's contents and the program's verdicts are checked: a VIP is in
 * the map before its snapshot is published, and stays until after the
 * snapshot without it is live; a failed update is repaired by the tick.
 * Needs root (exits 77 otherwise).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdbool.h>
#include <sched.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "control/model/config.h"
#include "control/build/snapshot_build.h"
#include "control/hooks/xdp_sync.h"
#include "bpf/xsk_steer_loader.h"

static struct lb_xsk_steer *g_prog;
static int g_lo;

static const char *const CFG_HEAD =
        "{\"encap\": {\"source_v4\": \"192.0.2.1\", \"source_v6\": \"2001:db8::1\","
        " \"next_hop_mac\": \"02:00:00:00:00:01\"}, \"maglev\": {\"table_size\": 251},"
        " \"vips\": [";

/* A snapshot of the VIPs in vips_json (a JSON array body). */
static struct lb_snapshot *
snap(const char *vips_json, uint64_t gen)
{
	char buf[4096], err[256];
	json_error_t je;
	json_t *root;
	struct lb_config *c;
	struct lb_snapshot *s;

	snprintf(buf, sizeof(buf), "%s%s]}", CFG_HEAD, vips_json);
	root = json_loads(buf, 0, &je);
	assert_non_null(root);
	c = lb_config_from_json(root, err, sizeof(err));
	if (c == NULL)
		fail_msg("config: %s", err);
	json_decref(root);
	s = lb_snapshot_build(c, gen, err, sizeof(err));
	if (s == NULL)
		fail_msg("snapshot: %s", err);
	lb_config_free(c);
	return s;
}

/* Number of keys in the attached program's VIP map. */
static unsigned int
map_count(void)
{
	struct lb_xsk_vip_key k, prev;
	void *p = NULL;
	unsigned int n = 0;

	while (bpf_map_get_next_key(lb_xsk_steer_vip_map_fd(g_prog), p, &k) == 0) {
		n++;
		prev = k;
		p = &prev;
	}
	return n;
}

static bool
map_has(int family, const char *addr, uint8_t proto, uint16_t port)
{
	struct lb_xsk_vip_key k;
	struct lb_xsk_vip_value v;
	uint8_t a[16];

	assert_int_equal(inet_pton(family, addr, a), 1);
	assert_int_equal(lb_xsk_vip_key_make(&k, family, a, proto, htons(port)), 0);
	return bpf_map_lookup_elem(lb_xsk_steer_vip_map_fd(g_prog), &k, &v) == 0;
}

/* The program's verdict for a minimal IPv4 TCP/UDP frame to addr:port (a first fragment if mf). */
static int
verdict4f(const char *addr, uint8_t proto, uint16_t port, bool mf)
{
	uint8_t f[14 + 20 + 20];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f, .data_size_in = sizeof(f));

	memset(f, 0, sizeof(f));
	f[12] = 0x08;
	f[14] = 0x45;
	f[14 + 2] = 0;
	f[14 + 3] = 40;
	f[14 + 6] = mf ? 0x20 : 0;
	f[14 + 8] = 64;
	f[14 + 9] = proto;
	f[14 + 12] = 198, f[14 + 13] = 51, f[14 + 14] = 100, f[14 + 15] = 7;
	assert_int_equal(inet_pton(AF_INET, addr, f + 14 + 16), 1);
	f[34] = 0x30, f[35] = 0x39;
	f[36] = (uint8_t)(port >> 8), f[37] = (uint8_t)port;
	f[34 + 12] = 0x50;
	assert_int_equal(bpf_prog_test_run_opts(lb_xsk_steer_prog_fd(g_prog), &o), 0);
	return (int)o.retval;
}

static int
verdict4(const char *addr, uint8_t proto, uint16_t port)
{
	return verdict4f(addr, proto, port, false);
}

static int
setup(void **state)
{
	struct lb_xsk_steer_opts o = {.test_mode = true};

	(void)state;
	if (unshare(CLONE_NEWNET) != 0)
		return -1;
	g_lo = (int)if_nametoindex("lo");
	g_prog = lb_xsk_steer_open(&o);
	if (g_prog == NULL || g_lo <= 0)
		return -1;
	if (bpf_xdp_attach(g_lo, lb_xsk_steer_prog_fd(g_prog), XDP_FLAGS_SKB_MODE, NULL) != 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	bpf_xdp_detach(g_lo, XDP_FLAGS_SKB_MODE, NULL);
	lb_xsk_steer_close(g_prog);
	return 0;
}

#define V_WEB                                                                                      \
	"{\"address\": \"10.0.0.1\", \"port\": 80, \"protocol\": \"tcp\","                         \
	" \"backends\": [{\"address\": \"10.1.0.1\"}]}"
#define V_DNS "{\"address\": \"10.0.0.2\", \"port\": 53, \"protocol\": \"udp\", \"encap\": \"gue\"}"
#define V_ANY "{\"address\": \"10.0.0.3\", \"port\": 0, \"protocol\": \"tcp\"}"
#define V_V6 "{\"address\": \"2001:db8::10\", \"port\": 443, \"protocol\": \"tcp\"}"

static void
test_sync_follows_publications(void **state)
{
	struct lb_xdp_sync *x = lb_xdp_sync_create();
	struct lb_publish_hook h;
	struct lb_snapshot *s1, *s2, *s3, *s4, *s5;
	char err[256];
	struct lb_xsk_vip_key junk;
	uint8_t a[4] = {10, 9, 9, 9};

	(void)state;
	assert_non_null(x);
	/* A key left over from an earlier run: the first publication removes it. */
	assert_int_equal(lb_xsk_vip_key_make(&junk, AF_INET, a, IPPROTO_TCP, htons(1)), 0);
	assert_int_equal(lb_xsk_vip_add(lb_xsk_steer_vip_map_fd(g_prog), &junk, 99), 0);

	assert_int_equal(lb_xdp_sync_add_port(x, 0, g_lo, err, sizeof(err)), 0);
	assert_int_equal(lb_xdp_sync_n_ports(x), 1);
	lb_xdp_sync_hook(x, &h);
	assert_string_equal(h.name, "xdp");

	/* Start-up: everything in before(), the stale key gone after(). Each
	 * address with only port-specific VIPs also gets a fragments-only entry. */
	s1 = snap(V_WEB "," V_DNS, 1);
	assert_int_equal(h.before(h.arg, s1, NULL, err, sizeof(err)), 0);
	assert_true(map_has(AF_INET, "10.0.0.1", IPPROTO_TCP, 80));
	assert_true(map_has(AF_INET, "10.0.0.2", IPPROTO_UDP, 53));
	assert_true(map_has(AF_INET, "10.9.9.9", IPPROTO_TCP, 1));
	assert_int_equal(h.after(h.arg, s1, NULL, err, sizeof(err)), 0);
	assert_int_equal(map_count(), 4);
	assert_true(map_has(AF_INET, "10.0.0.1", IPPROTO_TCP, 0));
	assert_int_equal(verdict4f("10.0.0.1", IPPROTO_TCP, 80, true), XDP_REDIRECT);
	assert_false(map_has(AF_INET, "10.9.9.9", IPPROTO_TCP, 1));
	assert_int_equal(verdict4("10.0.0.1", IPPROTO_TCP, 80), XDP_REDIRECT);
	assert_int_equal(verdict4("10.0.0.1", IPPROTO_TCP, 81), XDP_PASS);
	assert_int_equal(verdict4("10.0.0.3", IPPROTO_TCP, 5000), XDP_PASS);

	/* s2 drops DNS, adds a port-agnostic VIP and an IPv6 one. Before the
	 * switch both DNS and the new VIPs are steered; after it DNS is gone. */
	s2 = snap(V_WEB "," V_ANY "," V_V6, 2);
	assert_int_equal(h.before(h.arg, s2, s1, err, sizeof(err)), 0);
	assert_int_equal(map_count(), 7);
	assert_int_equal(verdict4("10.0.0.2", IPPROTO_UDP, 53), XDP_REDIRECT);
	assert_int_equal(verdict4("10.0.0.3", IPPROTO_TCP, 5000), XDP_REDIRECT);
	assert_int_equal(h.after(h.arg, s2, s1, err, sizeof(err)), 0);
	assert_int_equal(map_count(), 5);
	assert_int_equal(verdict4("10.0.0.2", IPPROTO_UDP, 53), XDP_PASS);
	assert_true(map_has(AF_INET6, "2001:db8::10", IPPROTO_TCP, 443));

	/* The stats: VIPs synced, no map error, the verdicts counted. */
	{
		json_t *st = h.stats(h.arg);

		assert_int_equal(json_integer_value(json_object_get(st, "entries")), 5);
		assert_int_equal(json_integer_value(json_object_get(st, "map_errors")), 0);
		assert_true(json_integer_value(json_object_get(st, "redirect")) >= 3);
		json_decref(st);
	}
	s3 = snap(V_WEB, 3);
	assert_int_equal(h.before(h.arg, s3, s2, err, sizeof(err)), 0);
	assert_int_equal(h.after(h.arg, s3, s2, err, sizeof(err)), 0);
	assert_int_equal(map_count(), 2);
	assert_true(map_has(AF_INET, "10.0.0.1", IPPROTO_TCP, 80));
	assert_int_equal(verdict4("10.0.0.3", IPPROTO_TCP, 5000), XDP_PASS);

	/* Widening: a port-agnostic VIP on 10.0.0.1 turns its fragments-only
	 * entry into a whole VIP before the switch; narrowing back waits until
	 * after it, so port 5000 is steered as long as a worker may serve it. */
	s4 = snap(V_WEB ", {\"address\": \"10.0.0.1\", \"port\": 0, \"protocol\": \"tcp\"}", 4);
	assert_int_equal(verdict4("10.0.0.1", IPPROTO_TCP, 5000), XDP_PASS);
	assert_int_equal(h.before(h.arg, s4, s3, err, sizeof(err)), 0);
	assert_int_equal(verdict4("10.0.0.1", IPPROTO_TCP, 5000), XDP_REDIRECT);
	assert_int_equal(h.after(h.arg, s4, s3, err, sizeof(err)), 0);
	assert_int_equal(map_count(), 2);
	s5 = snap(V_WEB, 5);
	assert_int_equal(h.before(h.arg, s5, s4, err, sizeof(err)), 0);
	assert_int_equal(verdict4("10.0.0.1", IPPROTO_TCP, 5000), XDP_REDIRECT);
	assert_int_equal(h.after(h.arg, s5, s4, err, sizeof(err)), 0);
	assert_int_equal(verdict4("10.0.0.1", IPPROTO_TCP, 5000), XDP_PASS);
	assert_int_equal(verdict4f("10.0.0.1", IPPROTO_TCP, 5000, true), XDP_REDIRECT);
	assert_int_equal(map_count(), 2);
	lb_snapshot_free(s4);
	lb_snapshot_free(s5);

	lb_snapshot_free(s1);
	lb_snapshot_free(s2);
	lb_snapshot_free(s3);
	lb_xdp_sync_destroy(x);
}

static json_t *
stat_of(const struct lb_publish_hook *h, const char *key)
{
	static json_t *st;

	json_decref(st);
	st = h->stats(h->arg);
	return json_object_get(st, key);
}

/*
 * A map update that fails (the map is full of stale keys) is repaired by the
 * tick, without another publication: within one check interval (100 ticks,
 * about a second, xdp_sync.h) the stale keys are gone and the missing VIP is
 * steered.
 */
static void
test_sync_tick_repairs_failed_update(void **state)
{
	struct lb_xdp_sync *x = lb_xdp_sync_create();
	struct lb_publish_hook h;
	struct lb_snapshot *s1, *s2;
	char err[256];
	unsigned int junk = 0;
	int fd = lb_xsk_steer_vip_map_fd(g_prog);

	(void)state;
	assert_non_null(x);
	assert_int_equal(lb_xdp_sync_add_port(x, 0, g_lo, err, sizeof(err)), 0);
	lb_xdp_sync_hook(x, &h);
	s1 = snap(V_WEB, 1);
	assert_int_equal(h.before(h.arg, s1, NULL, err, sizeof(err)), 0);
	assert_int_equal(h.after(h.arg, s1, NULL, err, sizeof(err)), 0);
	assert_int_equal(map_count(), 2);

	/* Someone fills the map behind spillwayd's back (10.200.x.y, TCP port 1). */
	for (;;) {
		struct lb_xsk_vip_key k;
		uint8_t a[4] = {10, 200, (uint8_t)(junk >> 8), (uint8_t)junk};

		assert_int_equal(lb_xsk_vip_key_make(&k, AF_INET, a, IPPROTO_TCP, htons(1)), 0);
		if (lb_xsk_vip_add(fd, &k, 99) != 0)
			break;
		junk++;
		assert_true(junk < 70000);
	}
	assert_true(junk > 0);
	assert_int_equal(map_count(), 2 + junk);

	/* Publishing DNS fails: no room for its entries. */
	s2 = snap(V_WEB "," V_DNS, 2);
	assert_int_not_equal(h.before(h.arg, s2, s1, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "VIP map add"));
	assert_non_null(strstr(err, "tick"));
	h.after(h.arg, s2, s1, err, sizeof(err));
	assert_false(map_has(AF_INET, "10.0.0.2", IPPROTO_UDP, 53));
	assert_true(json_is_true(stat_of(&h, "reconcile_pending")));

	/* The ticks, with s2 live: one check interval repairs the map. */
	for (int t = 0; t < 100; t++)
		h.tick(h.arg, s2);
	assert_true(map_has(AF_INET, "10.0.0.2", IPPROTO_UDP, 53));
	assert_true(map_has(AF_INET, "10.0.0.2", IPPROTO_UDP, 0));
	assert_true(map_has(AF_INET, "10.0.0.1", IPPROTO_TCP, 80));
	assert_true(map_has(AF_INET, "10.0.0.1", IPPROTO_TCP, 0));
	assert_int_equal(map_count(), 4);
	assert_int_equal(verdict4("10.0.0.2", IPPROTO_UDP, 53), XDP_REDIRECT);
	assert_int_equal(verdict4("10.200.0.0", IPPROTO_TCP, 1), XDP_PASS);
	assert_true(json_is_false(stat_of(&h, "reconcile_pending")));
	assert_int_equal(json_integer_value(stat_of(&h, "tick_reconciles")), 1);
	assert_int_equal(json_integer_value(stat_of(&h, "entries")), 4);

	/* Nothing more to repair: later checks leave the map alone. */
	for (int t = 0; t < 200; t++)
		h.tick(h.arg, s2);
	assert_int_equal(json_integer_value(stat_of(&h, "tick_reconciles")), 1);
	assert_int_equal(map_count(), 4);
	lb_snapshot_free(s1);
	lb_snapshot_free(s2);
	lb_xdp_sync_destroy(x);
}

/* Ports without spillway's program are refused with a reason. */
static void
test_sync_refuses_foreign_ports(void **state)
{
	struct lb_xdp_sync *x = lb_xdp_sync_create();
	char err[256];

	(void)state;
	assert_non_null(x);
	/* lo has our program; ifindex 999999 does not exist. */
	assert_int_not_equal(lb_xdp_sync_add_port(x, 1, 999999, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "port 1"));
	assert_int_equal(lb_xdp_sync_n_ports(x), 0);
	lb_xdp_sync_destroy(x);
}

static void
test_vdev_arg(void **state)
{
	char *s;

	(void)state;
	s = lb_xdp_vdev_arg("--vdev=net_af_xdp0,iface=eth1,queue_count=2", "/o.bpf.o");
	assert_non_null(s);
	assert_string_equal(s, "--vdev=net_af_xdp0,iface=eth1,queue_count=2,xdp_prog=/o.bpf.o");
	free(s);
	s = lb_xdp_vdev_arg("net_af_xdp1,iface=eth2", "/o.bpf.o");
	assert_non_null(s);
	assert_string_equal(s, "net_af_xdp1,iface=eth2,xdp_prog=/o.bpf.o");
	free(s);
	assert_null(lb_xdp_vdev_arg("--vdev=net_af_xdp0,iface=e,xdp_prog=/mine.o", "/o.bpf.o"));
	assert_null(lb_xdp_vdev_arg("--vdev=net_memif0,role=client", "/o.bpf.o"));
	assert_null(lb_xdp_vdev_arg("-l", "/o.bpf.o"));
	assert_null(lb_xdp_vdev_arg("0-1", "/o.bpf.o"));
}

int
main(void)
{
	const struct CMUnitTest plain[] = {
	        cmocka_unit_test(test_vdev_arg),
	};
	const struct CMUnitTest kernel[] = {
	        cmocka_unit_test(test_sync_follows_publications),
	        cmocka_unit_test(test_sync_refuses_foreign_ports),
	        cmocka_unit_test(test_sync_tick_repairs_failed_update),
	};
	int rc = cmocka_run_group_tests_name("xdp_sync", plain, NULL, NULL);

	if (rc != 0)
		return rc;
	if (setup(NULL) != 0) {
		fprintf(stderr,
		        "xdp_sync: skipping the kernel cases: cannot load or attach BPF "
		        "here (%s; needs root)\n",
		        strerror(errno));
		lb_xsk_steer_close(g_prog);
		return 77;
	}
	rc = cmocka_run_group_tests_name("xdp_sync_kernel", kernel, NULL, teardown);
	return rc;
}
