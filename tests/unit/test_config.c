/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the configuration loader: a full document parsed to the values
 * it states and round-tripped through lb_config_to_json, the defaults, id
 * assignment, file loading errors, and the address helpers. The rejections and
 * limits are in test_config_rejects.c; both load through config_fixture.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/model/config.h"

#include "config_fixture.h"

static void
assert_ip(const union lb_ip *ip, uint8_t af, uint8_t want_af, const char *want)
{
	union lb_ip w;

	memset(&w, 0, sizeof(w));
	assert_int_equal(inet_pton(want_af == LB_AF_INET ? AF_INET : AF_INET6, want, w.b), 1);
	assert_int_equal(af, want_af);
	assert_memory_equal(ip->b, w.b, 16);
}

/* Every field of two configs, so a round trip that loses anything fails. */
static void
assert_config_equal(const struct lb_config *a, const struct lb_config *b)
{
	assert_int_equal(a->encap.has_src4, b->encap.has_src4);
	assert_int_equal(a->encap.has_src6, b->encap.has_src6);
	assert_memory_equal(a->encap.src4.b, b->encap.src4.b, 16);
	assert_memory_equal(a->encap.src6.b, b->encap.src6.b, 16);
	assert_memory_equal(a->encap.next_hop_mac, b->encap.next_hop_mac, 6);
	assert_int_equal(a->encap.mtu, b->encap.mtu);
	assert_int_equal(a->encap.gue_port, b->encap.gue_port);
	assert_int_equal(a->encap.too_big, b->encap.too_big);
	assert_int_equal(a->encap.vlan, b->encap.vlan);
	assert_int_equal(a->encap.vlan_id, b->encap.vlan_id);
	assert_string_equal(a->seed, b->seed);
	assert_int_equal(a->table_size, b->table_size);
	assert_int_equal(a->flows.capacity, b->flows.capacity);
	assert_int_equal(a->flows.tcp_idle_ms, b->flows.tcp_idle_ms);
	assert_int_equal(a->flows.udp_idle_ms, b->flows.udp_idle_ms);
	assert_int_equal(a->icmp.rate_per_sec, b->icmp.rate_per_sec);
	assert_int_equal(a->icmp.burst, b->icmp.burst);
	assert_int_equal(a->hot.enabled, b->hot.enabled);
	assert_int_equal(a->hot.window_ms, b->hot.window_ms);
	assert_true(a->hot.threshold == b->hot.threshold);
	assert_true(a->hot.epsilon == b->hot.epsilon);
	assert_true(a->hot.margin == b->hot.margin);
	assert_true(a->hot.ewma_alpha == b->hot.ewma_alpha);
	assert_int_equal(a->hot.demote_windows, b->hot.demote_windows);
	assert_true(a->hot.threshold_low == b->hot.threshold_low);
	assert_int_equal(a->n_vips, b->n_vips);
	for (uint32_t i = 0; i < a->n_vips; i++) {
		const struct lb_cfg_vip *va = &a->vips[i], *vb = &b->vips[i];

		assert_memory_equal(va->addr.b, vb->addr.b, 16);
		assert_int_equal(va->af, vb->af);
		assert_int_equal(va->proto, vb->proto);
		assert_int_equal(va->port, vb->port);
		assert_int_equal(va->key_mode, vb->key_mode);
		assert_int_equal(va->encap, vb->encap);
		assert_int_equal(va->id, vb->id);
		assert_int_equal(va->n_backends, vb->n_backends);
		for (uint32_t j = 0; j < va->n_backends; j++) {
			const struct lb_cfg_backend *ba = &va->backends[j], *bb = &vb->backends[j];

			assert_string_equal(ba->name, bb->name);
			assert_memory_equal(ba->addr.b, bb->addr.b, 16);
			assert_int_equal(ba->af, bb->af);
			assert_int_equal(ba->state, bb->state);
			assert_int_equal(ba->id, bb->id);
			assert_int_equal(ba->gen, bb->gen);
			assert_int_equal(ba->weight, bb->weight);
		}
	}
}

/* Every field set away from its default. */
static const char full_config[] =
        "{'encap': {'source_v4': '192.0.2.1', 'source_v6': '2001:db8:ffff::1',"
        "           'next_hop_mac': '02:00:5E:00:53:aB', 'mtu': 9000, 'gue_port': 5555,"
        "           'too_big': 'drop', 'vlan': 4094},"
        " 'maglev': {'table_size': 251, 'seed': 's3cret seed'},"
        " 'flows': {'capacity': 4096, 'tcp_idle_ms': 1000, 'udp_idle_ms': 500},"
        " 'icmp': {'rate_per_sec': 7, 'burst': 3},"
        " 'hot': {'enabled': false, 'window_ms': 250, 'threshold': 0.05, 'epsilon': 0.5,"
        "  'margin': 0.1, 'ewma_alpha': 0.3, 'demote_windows': 7, 'threshold_low': 0.02},"
        " 'vips': ["
        "  {'address': '203.0.113.10', 'port': 443, 'protocol': 'tcp', 'key': 'src_ip',"
        "   'encap': 'gue', 'backends': ["
        "    {'address': '10.0.0.1', 'weight': 3, 'name': 'alpha', 'state': 'draining'},"
        "    {'address': '2001:db8:b::10', 'weight': 0, 'state': 'down'}]},"
        "  {'address': '2001:db8::100', 'port': 0, 'protocol': 'udp', 'key': 'src_ip_dport',"
        "   'encap': 'ipip', 'backends': [{'address': '10.0.0.1', 'weight': 65535}]}]}";

static void
assert_full_config_values(const struct lb_config *c)
{
	static const uint8_t mac[6] = {0x02, 0x00, 0x5e, 0x00, 0x53, 0xab};
	const struct lb_cfg_vip *v;

	assert_true(c->encap.has_src4);
	assert_true(c->encap.has_src6);
	assert_ip(&c->encap.src4, LB_AF_INET, LB_AF_INET, "192.0.2.1");
	assert_ip(&c->encap.src6, LB_AF_INET6, LB_AF_INET6, "2001:db8:ffff::1");
	assert_memory_equal(c->encap.next_hop_mac, mac, 6);
	assert_int_equal(c->encap.mtu, 9000);
	assert_int_equal(c->encap.gue_port, htons(5555));
	assert_int_equal(c->encap.too_big, LB_TOO_BIG_DROP);
	assert_int_equal(c->encap.vlan, LB_VLAN_FIXED);
	assert_int_equal(c->encap.vlan_id, 4094);
	assert_int_equal(c->table_size, 251);
	assert_string_equal(c->seed, "s3cret seed");
	assert_int_equal(c->flows.capacity, 4096);
	assert_int_equal(c->flows.tcp_idle_ms, 1000);
	assert_int_equal(c->flows.udp_idle_ms, 500);
	assert_int_equal(c->icmp.rate_per_sec, 7);
	assert_int_equal(c->icmp.burst, 3);
	assert_false(c->hot.enabled);
	assert_int_equal(c->hot.window_ms, 250);
	assert_true(c->hot.threshold == 0.05);
	assert_true(c->hot.epsilon == 0.5);
	assert_true(c->hot.margin == 0.1);
	assert_true(c->hot.ewma_alpha == 0.3);
	assert_int_equal(c->hot.demote_windows, 7);
	assert_true(c->hot.threshold_low == 0.02);
	assert_int_equal(c->n_vips, 2);

	v = &c->vips[0];
	assert_ip(&v->addr, v->af, LB_AF_INET, "203.0.113.10");
	assert_int_equal(v->port, 443);
	assert_int_equal(v->proto, IPPROTO_TCP);
	assert_int_equal(v->key_mode, LB_KEY_SRC_IP);
	assert_int_equal(v->encap, LB_ENCAP_GUE);
	assert_int_equal(v->n_backends, 2);
	assert_string_equal(v->backends[0].name, "alpha");
	assert_ip(&v->backends[0].addr, v->backends[0].af, LB_AF_INET, "10.0.0.1");
	assert_int_equal(v->backends[0].weight, 3);
	assert_int_equal(v->backends[0].state, LB_BACKEND_DRAINING);
	assert_string_equal(v->backends[1].name, "");
	assert_ip(&v->backends[1].addr, v->backends[1].af, LB_AF_INET6, "2001:db8:b::10");
	assert_int_equal(v->backends[1].weight, 0);
	assert_int_equal(v->backends[1].state, LB_BACKEND_DOWN);

	v = &c->vips[1];
	assert_ip(&v->addr, v->af, LB_AF_INET6, "2001:db8::100");
	assert_int_equal(v->port, 0);
	assert_int_equal(v->proto, IPPROTO_UDP);
	assert_int_equal(v->key_mode, LB_KEY_SRC_IP_DPORT);
	assert_int_equal(v->encap, LB_ENCAP_IPIP);
	assert_int_equal(v->n_backends, 1);
	/* The same backend address in another VIP is another membership. */
	assert_ip(&v->backends[0].addr, v->backends[0].af, LB_AF_INET, "10.0.0.1");
	assert_int_equal(v->backends[0].weight, 65535);
	assert_int_equal(v->backends[0].state, LB_BACKEND_ACTIVE);
}

static void
test_config_full_round_trip(void **state)
{
	struct lb_config *a, *b;
	char err[ERR_LEN];
	json_t *ja, *jb;

	(void)state;
	a = load_ok(full_config);
	assert_full_config_values(a);
	ja = lb_config_to_json(a);
	assert_non_null(ja);
	b = lb_config_from_json(ja, err, sizeof(err));
	if (b == NULL)
		fail_msg("to_json output rejected: %s", err);
	assert_full_config_values(b);
	assert_config_equal(a, b);
	/* And the document form is a fixed point. */
	jb = lb_config_to_json(b);
	assert_true(json_equal(ja, jb));
	json_decref(ja);
	json_decref(jb);
	lb_config_free(a);
	lb_config_free(b);
}

static const char minimal_config[] =
        "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'},"
        " 'vips': [{'address': '203.0.113.1', 'port': 80, 'protocol': 'tcp',"
        "           'backends': [{'address': '10.0.0.1'}]}]}";

static void
test_config_defaults(void **state)
{
	struct lb_config *c = load_ok(minimal_config), *d;
	char err[ERR_LEN];
	json_t *j;

	(void)state;
	assert_true(c->encap.has_src4);
	assert_false(c->encap.has_src6);
	assert_int_equal(c->encap.mtu, 1500);
	assert_int_equal(c->encap.gue_port, htons(6080));
	assert_int_equal(c->encap.too_big, LB_TOO_BIG_ICMP);
	assert_int_equal(c->encap.vlan, LB_VLAN_STRIP);
	assert_int_equal(c->table_size, 65537);
	assert_string_equal(c->seed, "spillway");
	assert_int_equal(c->flows.capacity, 1u << 20);
	assert_int_equal(c->flows.tcp_idle_ms, 300000);
	assert_int_equal(c->flows.udp_idle_ms, 30000);
	/* The defaults of the ICMP bucket, as docs/operations.md gives them. */
	assert_int_equal(c->icmp.rate_per_sec, 1000);
	assert_int_equal(c->icmp.burst, 50);
	assert_true(c->hot.enabled);
	assert_int_equal(c->hot.window_ms, 100);
	assert_true(c->hot.threshold == 0); /* "auto" */
	assert_true(c->hot.epsilon == 0.25);
	/* docs/operations.md's defaults; threshold_low "auto" (0) under an "auto" threshold. */
	assert_true(c->hot.margin == 0.05);
	assert_true(c->hot.ewma_alpha == 0.5);
	assert_int_equal(c->hot.demote_windows, 5);
	assert_true(c->hot.threshold_low == 0);
	assert_int_equal(c->n_vips, 1);
	assert_int_equal(c->vips[0].key_mode, LB_KEY_5TUPLE);
	assert_int_equal(c->vips[0].encap, LB_ENCAP_IPIP);
	assert_int_equal(c->vips[0].proto, IPPROTO_TCP);
	assert_int_equal(c->vips[0].n_backends, 1);
	assert_int_equal(c->vips[0].backends[0].weight, 1);
	assert_int_equal(c->vips[0].backends[0].state, LB_BACKEND_ACTIVE);
	assert_string_equal(c->vips[0].backends[0].name, "");
	/* Defaults survive the round trip too. */
	j = lb_config_to_json(c);
	d = lb_config_from_json(j, err, sizeof(err));
	if (d == NULL)
		fail_msg("to_json output rejected: %s", err);
	assert_config_equal(c, d);
	json_decref(j);
	lb_config_free(c);
	lb_config_free(d);
}

/* No VIPs at all is a valid (idle) configuration. */
static void
test_config_no_vips(void **state)
{
	struct lb_config *c;

	(void)state;
	c = load_ok("{'encap': {'source_v6': '2001:db8::1', 'next_hop_mac': '02:00:5e:00:53:01'}}");
	assert_int_equal(c->n_vips, 0);
	lb_config_free(c);
	c = load_ok("{'encap': {'source_v6': '2001:db8::1', 'next_hop_mac': '02:00:5e:00:53:01'},"
	            " 'vips': []}");
	assert_int_equal(c->n_vips, 0);
	lb_config_free(c);
}

static void
test_config_ids(void **state)
{
	static const uint32_t n_be[] = {2, 0, 3, 1};
	struct lb_config *c;
	uint16_t next = 0;

	(void)state;
	c = load_ok(
	        "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'},"
	        " 'vips': ["
	        "  {'address': '203.0.113.1', 'port': 80, 'protocol': 'tcp', 'backends': ["
	        "    {'address': '10.0.0.1'}, {'address': '10.0.0.2'}]},"
	        "  {'address': '203.0.113.1', 'port': 443, 'protocol': 'tcp', 'backends': []},"
	        "  {'address': '203.0.113.1', 'port': 80, 'protocol': 'udp', 'backends': ["
	        "    {'address': '10.0.0.1'}, {'address': '10.0.0.2'}, {'address': '10.0.0.3'}]},"
	        "  {'address': '203.0.113.2', 'port': 0, 'protocol': 'tcp', 'backends': ["
	        "    {'address': '10.0.0.9'}]}]}");
	assert_int_equal(c->n_vips, 4);
	for (uint32_t i = 0; i < c->n_vips; i++) {
		assert_int_equal(c->vips[i].id, i);
		assert_int_equal(c->vips[i].n_backends, n_be[i]);
		for (uint32_t j = 0; j < c->vips[i].n_backends; j++) {
			assert_int_equal(c->vips[i].backends[j].id, next++);
			assert_int_equal(c->vips[i].backends[j].gen, 1);
		}
	}
	assert_int_equal(next, 6);
	lb_config_free(c);
}

/* ---- Files ---- */

static char *
write_temp(const char *text)
{
	char *path = strdup("/tmp/test_config_XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void
test_config_load_file_missing(void **state)
{
	static const char path[] = "/nonexistent/spillway.json";
	char err[ERR_LEN] = "";

	(void)state;
	assert_null(lb_config_load_file(path, err, sizeof(err)));
	assert_error(err, path, "unable to open");
}

static void
test_config_load_file_invalid_json(void **state)
{
	char *path = write_temp("{\n  \"encap\": {\n    \"mtu\": 1500,,\n  }\n}\n");
	char err[ERR_LEN] = "", want[300];

	(void)state;
	assert_null(lb_config_load_file(path, err, sizeof(err)));
	/* "FILE:LINE:COLUMN: invalid JSON: ..." with the line of the stray comma. */
	snprintf(want, sizeof(want), "%s:3:", path);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("message \"%s\" does not start with \"%s\"", err, want);
	assert_non_null(strstr(err, "invalid JSON"));
	unlink(path);
	free(path);
}

static void
test_config_load_file_duplicate_keys(void **state)
{
	char *path = write_temp("{\"encap\": {\"source_v4\": \"192.0.2.1\",\n"
	                        "            \"next_hop_mac\": \"02:00:5e:00:53:01\",\n"
	                        "            \"mtu\": 1500, \"mtu\": 9000}}\n");
	char err[ERR_LEN] = "", want[300];

	(void)state;
	assert_null(lb_config_load_file(path, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:3:", path);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("message \"%s\" does not start with \"%s\"", err, want);
	assert_non_null(strstr(err, "duplicate"));
	unlink(path);
	free(path);
}

static void
test_config_load_file_ok_and_semantic_error(void **state)
{
	char *good = write_temp("{\"encap\": {\"source_v4\": \"192.0.2.1\", "
	                        "\"next_hop_mac\": \"02:00:5e:00:53:01\", \"mtu\": 1400}}\n");
	char *bad = write_temp("{\"encap\": {\"source_v4\": \"192.0.2.1\", "
	                       "\"next_hop_mac\": \"02:00:5e:00:53:01\", \"mtu\": 1}}\n");
	char err[ERR_LEN] = "";
	struct lb_config *cfg;

	(void)state;
	cfg = lb_config_load_file(good, err, sizeof(err));
	if (cfg == NULL)
		fail_msg("rejected: %s", err);
	assert_int_equal(cfg->encap.mtu, 1400);
	lb_config_free(cfg);
	/* Valid JSON, invalid config: the field path, as from lb_config_from_json. */
	assert_null(lb_config_load_file(bad, err, sizeof(err)));
	assert_error(err, "encap.mtu", "out of range");
	unlink(good);
	unlink(bad);
	free(good);
	free(bad);
}

/* ---- Address helpers ---- */

struct ip_case {
	const char *name;
	const char *in;
	int rc;
	uint8_t af;
	uint8_t bytes[16];
	const char *canonical; /* lb_ip_to_str of the result; NULL = same as in */
};

static const struct ip_case ip_cases[] = {
        {"test_config_ip v4", "192.0.2.1", 0, LB_AF_INET, {192, 0, 2, 1}, NULL},
        {"test_config_ip v4 zero", "0.0.0.0", 0, LB_AF_INET, {0}, NULL},
        {"test_config_ip v4 broadcast",
         "255.255.255.255",
         0,
         LB_AF_INET,
         {255, 255, 255, 255},
         NULL},
        {"test_config_ip v6 any", "::", 0, LB_AF_INET6, {0}, NULL},
        {"test_config_ip v6 loopback", "::1", 0, LB_AF_INET6, {[15] = 1}, NULL},
        {"test_config_ip v6 doc",
         "2001:db8::1",
         0,
         LB_AF_INET6,
         {0x20, 0x01, 0x0d, 0xb8, [15] = 1},
         NULL},
        {"test_config_ip v6 non-canonical",
         "2001:DB8:0:0::0:1",
         0,
         LB_AF_INET6,
         {0x20, 0x01, 0x0d, 0xb8, [15] = 1},
         "2001:db8::1"},
        {"test_config_ip v6 full",
         "fe80:1:2:3:4:5:6:7",
         0,
         LB_AF_INET6,
         {0xfe, 0x80, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7},
         NULL},
        {"test_config_ip v4-mapped v6",
         "::ffff:192.0.2.1",
         0,
         LB_AF_INET6,
         {[10] = 0xff, [11] = 0xff, [12] = 192, [13] = 0, [14] = 2, [15] = 1},
         NULL},
        {"test_config_ip empty", "", -EINVAL, 0, {0}, NULL},
        {"test_config_ip v4 short", "192.0.2", -EINVAL, 0, {0}, NULL},
        {"test_config_ip v4 long", "192.0.2.1.5", -EINVAL, 0, {0}, NULL},
        {"test_config_ip v4 octet 256", "192.0.2.256", -EINVAL, 0, {0}, NULL},
        {"test_config_ip v4 trailing space", "192.0.2.1 ", -EINVAL, 0, {0}, NULL},
        {"test_config_ip v6 bad digit", "2001:db8::g", -EINVAL, 0, {0}, NULL},
        {"test_config_ip v6 two gaps", "2001::db8::1", -EINVAL, 0, {0}, NULL},
        {"test_config_ip v6 zone", "fe80::1%eth0", -EINVAL, 0, {0}, NULL},
        {"test_config_ip cidr", "10.0.0.0/8", -EINVAL, 0, {0}, NULL},
};

#define N_IP_CASES (sizeof(ip_cases) / sizeof(ip_cases[0]))

static void
test_config_ip(void **state)
{
	const struct ip_case *c = *state;
	char buf[64];
	union lb_ip ip, again;
	uint8_t af = 0xAA, af2;

	memset(&ip, 0xFF, sizeof(ip)); /* the unused bytes must come back zero */
	assert_int_equal(lb_ip_from_str(c->in, &af, &ip), c->rc);
	if (c->rc != 0)
		return;
	assert_int_equal(af, c->af);
	assert_memory_equal(ip.b, c->bytes, 16);
	assert_string_equal(lb_ip_to_str(af, &ip, buf, sizeof(buf)),
	                    c->canonical ? c->canonical : c->in);
	assert_int_equal(lb_ip_from_str(buf, &af2, &again), 0);
	assert_int_equal(af2, af);
	assert_memory_equal(again.b, ip.b, 16);
}

int
main(void)
{
	struct CMUnitTest tests[N_IP_CASES + 8];
	size_t n = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_full_round_trip);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_defaults);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_no_vips);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_ids);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_load_file_missing);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_load_file_invalid_json);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_load_file_duplicate_keys);
	tests[n++] =
	        (struct CMUnitTest)cmocka_unit_test(test_config_load_file_ok_and_semantic_error);
	for (size_t i = 0; i < N_IP_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_config_ip,
		                                                        (void *)&ip_cases[i]);
		tests[n++].name = ip_cases[i].name;
	}
	return _cmocka_run_group_tests("config", tests, n, NULL, NULL);
}
