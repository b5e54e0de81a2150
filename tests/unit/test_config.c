/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the configuration loader: a full document parsed to the values
 * it states and round-tripped through lb_config_to_json, the defaults, id
 * assignment, one row per rejection asserting the path the message names and
 * its reason, file loading errors, and the address helpers.
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

#include "../../control/config.h"

#define ERR_LEN 512

/* JSON written with single quotes so the tables stay readable; swapped here. */
static json_t *
parse_sq(const char *sq)
{
	char *s = strdup(sq);
	json_error_t je;
	json_t *root;

	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	root = json_loads(s, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL)
		fail_msg("test JSON does not parse (line %d): %s\n%s", je.line, je.text, s);
	free(s);
	return root;
}

static struct lb_config *
load_sq(const char *sq, char *err)
{
	json_t *root = parse_sq(sq);
	struct lb_config *cfg;

	err[0] = '\0';
	cfg = lb_config_from_json(root, err, ERR_LEN);
	json_decref(root);
	return cfg;
}

static struct lb_config *
load_ok(const char *sq)
{
	char err[ERR_LEN];
	struct lb_config *cfg = load_sq(sq, err);

	if (cfg == NULL)
		fail_msg("config rejected: %s", err);
	return cfg;
}

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
	assert_string_equal(a->seed, b->seed);
	assert_int_equal(a->table_size, b->table_size);
	assert_int_equal(a->flows.capacity, b->flows.capacity);
	assert_int_equal(a->flows.tcp_idle_ms, b->flows.tcp_idle_ms);
	assert_int_equal(a->flows.udp_idle_ms, b->flows.udp_idle_ms);
	assert_int_equal(a->hot.enabled, b->hot.enabled);
	assert_int_equal(a->hot.window_ms, b->hot.window_ms);
	assert_true(a->hot.threshold == b->hot.threshold);
	assert_true(a->hot.epsilon == b->hot.epsilon);
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
        "           'too_big': 'drop'},"
        " 'maglev': {'table_size': 251, 'seed': 's3cret seed'},"
        " 'flows': {'capacity': 4096, 'tcp_idle_ms': 1000, 'udp_idle_ms': 500},"
        " 'hot': {'enabled': false, 'window_ms': 250, 'threshold': 0.05, 'epsilon': 0.5},"
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
	assert_int_equal(c->table_size, 251);
	assert_string_equal(c->seed, "s3cret seed");
	assert_int_equal(c->flows.capacity, 4096);
	assert_int_equal(c->flows.tcp_idle_ms, 1000);
	assert_int_equal(c->flows.udp_idle_ms, 500);
	assert_false(c->hot.enabled);
	assert_int_equal(c->hot.window_ms, 250);
	assert_true(c->hot.threshold == 0.05);
	assert_true(c->hot.epsilon == 0.5);
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
	assert_int_equal(c->table_size, 65537);
	assert_string_equal(c->seed, "spillway");
	assert_int_equal(c->flows.capacity, 1u << 20);
	assert_int_equal(c->flows.tcp_idle_ms, 300000);
	assert_int_equal(c->flows.udp_idle_ms, 30000);
	assert_true(c->hot.enabled);
	assert_int_equal(c->hot.window_ms, 100);
	assert_true(c->hot.threshold == 0.01);
	assert_true(c->hot.epsilon == 0.25);
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

/* ---- Rejections: each row names the field path and the reason. ---- */

#define ENC "'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'}"
#define ENC46                                                                                      \
	"'encap': {'source_v4': '192.0.2.1', 'source_v6': '2001:db8::1', "                         \
	"'next_hop_mac': '02:00:5e:00:53:01'}"
#define VIP_HEAD "'address': '203.0.113.1', 'port': 80, 'protocol': 'tcp'"
#define BE1 "{'address': '10.0.0.1'}"
#define ONE_VIP(fields) "{" ENC ", 'vips': [{" fields "}]}"
#define ONE_BE(fields) ONE_VIP(VIP_HEAD ", 'backends': [" BE1 ", {" fields "}]")

struct bad_case {
	const char *name;
	const char *json;
	const char *path;   /* the message starts with "path: " */
	const char *reason; /* and contains this */
};

static const struct bad_case bad_cases[] = {
        {"test_config_rejects unknown top-level field", "{" ENC ", 'colour': 1}", "colour",
         "unknown field"},
        {"test_config_rejects unknown encap field",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01', 'ttl': 3}}",
         "encap.ttl", "unknown field"},
        {"test_config_rejects unknown maglev field", "{" ENC ", 'maglev': {'size': 251}}",
         "maglev.size", "unknown field"},
        {"test_config_rejects unknown vip field", ONE_VIP(VIP_HEAD ", 'colour': 'red'"),
         "vips[0].colour", "unknown field"},
        {"test_config_rejects unknown backend field", ONE_BE("'address': '10.0.0.2', 'colour': 1"),
         "vips[0].backends[1].colour", "unknown field"},
        {"test_config_rejects document not an object", "[1]", "(document)",
         "expected an object, got an array"},
        {"test_config_rejects port as string",
         ONE_VIP("'address': '203.0.113.1', 'port': '80', 'protocol': 'tcp'"), "vips[0].port",
         "expected an integer, got a string"},
        {"test_config_rejects port too big",
         ONE_VIP("'address': '203.0.113.1', 'port': 65536, 'protocol': 'tcp'"), "vips[0].port",
         "65536 out of range [0, 65535]"},
        {"test_config_rejects weight negative", ONE_BE("'address': '10.0.0.2', 'weight': -1"),
         "vips[0].backends[1].weight", "-1 out of range"},
        {"test_config_rejects weight real", ONE_BE("'address': '10.0.0.2', 'weight': 1.5"),
         "vips[0].backends[1].weight", "expected an integer, got a number"},
        {"test_config_rejects backends not an array", ONE_VIP(VIP_HEAD ", 'backends': {}"),
         "vips[0].backends", "expected an array, got an object"},
        {"test_config_rejects backend not an object", ONE_VIP(VIP_HEAD ", 'backends': ['x']"),
         "vips[0].backends[0]", "expected an object, got a string"},
        {"test_config_rejects vips not an array", "{" ENC ", 'vips': {}}", "vips",
         "expected an array, got an object"},
        {"test_config_rejects vip not an object", "{" ENC ", 'vips': [3]}", "vips[0]",
         "expected an object, got an integer"},
        {"test_config_rejects encap not an object", "{'encap': 'ipip'}", "encap",
         "expected an object, got a string"},
        {"test_config_rejects bad vip address",
         ONE_VIP("'address': '203.0.113.256', 'port': 80, 'protocol': 'tcp'"), "vips[0].address",
         "not an IPv4 or IPv6 address"},
        {"test_config_rejects bad backend address", ONE_BE("'address': 'backend.example'"),
         "vips[0].backends[1].address", "not an IPv4 or IPv6 address"},
        {"test_config_rejects address not a string",
         ONE_VIP("'address': 3405803777, 'port': 80, 'protocol': 'tcp'"), "vips[0].address",
         "expected a string, got an integer"},
        {"test_config_rejects mac too short",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53'}}",
         "encap.next_hop_mac", "not a MAC address"},
        {"test_config_rejects mac with sign",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '+2:00:5e:00:53:01'}}",
         "encap.next_hop_mac", "not a MAC address"},
        {"test_config_rejects mac with negative octet",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '-1:00:5e:00:53:01'}}",
         "encap.next_hop_mac", "not a MAC address"},
        {"test_config_rejects mac with space",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': ' 2: 0:5e:00:53:01'}}",
         "encap.next_hop_mac", "not a MAC address"},
        {"test_config_rejects mac bad digit",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:0g'}}",
         "encap.next_hop_mac", "not a MAC address"},
        {"test_config_rejects mac trailing junk",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01:'}}",
         "encap.next_hop_mac", "not a MAC address"},
        {"test_config_rejects mac without leading zeros",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '2:0:5e:0:53:1'}}",
         "encap.next_hop_mac", "not a MAC address"},
        {"test_config_rejects mac dashes",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02-00-5e-00-53-01'}}",
         "encap.next_hop_mac", "not a MAC address"},
        {"test_config_rejects mac missing", "{'encap': {'source_v4': '192.0.2.1'}}",
         "encap.next_hop_mac", "missing"},
        {"test_config_rejects duplicate vip",
         "{" ENC ", 'vips': [{" VIP_HEAD "}, {'address': '203.0.113.2', 'port': 80, "
         "'protocol': 'tcp'}, {" VIP_HEAD "}]}",
         "vips[2]", "duplicate VIP"},
        {"test_config_rejects duplicate backend address", ONE_BE("'address': '10.0.0.1'"),
         "vips[0].backends[1]", "duplicate backend address"},
        {"test_config_rejects duplicate backend address v6 spelling",
         "{" ENC46 ", 'vips': [{" VIP_HEAD ", 'backends': [{'address': '2001:db8::a'}, "
         "{'address': '2001:DB8:0::A'}]}]}",
         "vips[0].backends[1]", "duplicate backend address"},
        {"test_config_rejects duplicate backend name",
         ONE_VIP(VIP_HEAD ", 'backends': [{'address': '10.0.0.1', 'name': 'web'}, "
                          "{'address': '10.0.0.2', 'name': 'web'}]"),
         "vips[0].backends[1]", "duplicate backend identity \"web\""},
        {"test_config_rejects table_size not prime", "{" ENC ", 'maglev': {'table_size': 65536}}",
         "maglev.table_size", "65536 is not prime"},
        {"test_config_rejects table_size too big", "{" ENC ", 'maglev': {'table_size': 1048583}}",
         "maglev.table_size", "1048583 out of range [3, 1048573]"},
        {"test_config_rejects table_size 0", "{" ENC ", 'maglev': {'table_size': 0}}",
         "maglev.table_size", "0 out of range"},
        {"test_config_rejects mtu too small",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01', "
         "'mtu': 1279}}",
         "encap.mtu", "1279 out of range [1280, 9000]"},
        {"test_config_rejects mtu too big",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01', "
         "'mtu': 9001}}",
         "encap.mtu", "out of range"},
        {"test_config_rejects gue_port 0",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01', "
         "'gue_port': 0}}",
         "encap.gue_port", "out of range"},
        {"test_config_rejects unknown protocol",
         ONE_VIP("'address': '203.0.113.1', 'port': 80, 'protocol': 'sctp'"), "vips[0].protocol",
         "\"sctp\" is not one of: tcp, udp"},
        {"test_config_rejects unknown key", ONE_VIP(VIP_HEAD ", 'key': 'dst_ip'"), "vips[0].key",
         "\"dst_ip\" is not one of: 5tuple, src_ip, src_ip_dport"},
        {"test_config_rejects unknown encap", ONE_VIP(VIP_HEAD ", 'encap': 'vxlan'"),
         "vips[0].encap", "\"vxlan\" is not one of: ipip, gue"},
        {"test_config_rejects unknown state", ONE_BE("'address': '10.0.0.2', 'state': 'up'"),
         "vips[0].backends[1].state", "\"up\" is not one of: active, draining, down"},
        {"test_config_rejects unknown too_big",
         "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01', "
         "'too_big': 'fragment'}}",
         "encap.too_big", "is not one of: icmp, drop"},
        {"test_config_rejects ipv6 backend without source_v6", ONE_BE("'address': '2001:db8::2'"),
         "vips[0].backends[1]", "IPv6 backend needs encap.source_v6"},
        {"test_config_rejects ipv4 backend without source_v4",
         "{'encap': {'source_v6': '2001:db8::1', 'next_hop_mac': '02:00:5e:00:53:01'}, "
         "'vips': [{" VIP_HEAD ", 'backends': [" BE1 "]}]}",
         "vips[0].backends[0]", "IPv4 backend needs encap.source_v4"},
        {"test_config_rejects source_v4 given v6",
         "{'encap': {'source_v4': '2001:db8::1', 'next_hop_mac': '02:00:5e:00:53:01'}}",
         "encap.source_v4", "not an IPv4 address"},
        {"test_config_rejects no outer source", "{'encap': {'next_hop_mac': '02:00:5e:00:53:01'}}",
         "encap", "needs source_v4 or source_v6"},
        {"test_config_rejects missing encap", "{'vips': []}", "encap", "missing"},
        {"test_config_rejects missing vip port",
         ONE_VIP("'address': '203.0.113.1', 'protocol': 'tcp'"), "vips[0].port",
         "missing (required)"},
        {"test_config_rejects missing vip address", ONE_VIP("'port': 80, 'protocol': 'tcp'"),
         "vips[0].address", "missing (required)"},
        {"test_config_rejects missing vip protocol",
         ONE_VIP("'address': '203.0.113.1', 'port': 80"), "vips[0].protocol", "missing"},
        {"test_config_rejects missing backend address", ONE_BE("'weight': 2"),
         "vips[0].backends[1].address", "missing (required)"},
        {"test_config_rejects seed empty", "{" ENC ", 'maglev': {'seed': ''}}", "maglev.seed",
         "must be 1 to 255 characters"},
        {"test_config_rejects backend name empty", ONE_BE("'address': '10.0.0.2', 'name': ''"),
         "vips[0].backends[1].name", "must be 1 to 63 characters"},
        {"test_config_rejects flows capacity too small", "{" ENC ", 'flows': {'capacity': 63}}",
         "flows.capacity", "63 out of range"},
        {"test_config_rejects flows capacity too big",
         "{" ENC ", 'flows': {'capacity': 134217729}}", "flows.capacity", "134217729 out of range"},
        {"test_config_rejects tcp_idle_ms above a day",
         "{" ENC ", 'flows': {'tcp_idle_ms': 86400001}}", "flows.tcp_idle_ms", "out of range"},
        {"test_config_rejects weight above 65535", ONE_BE("'address': '10.0.0.2', 'weight': 65536"),
         "vips[0].backends[1].weight", "65536 out of range"},
        /* 2^32 + 80 and 2^32 + 1: no silent truncation to 32 bits. */
        {"test_config_rejects port past 32 bits",
         ONE_VIP("'address': '203.0.113.1', 'port': "
                 "4294967376, 'protocol': 'udp'"),
         "vips[0].port", "4294967376 out of range"},
        {"test_config_rejects weight past 32 bits",
         ONE_BE("'address': '10.0.0.2', 'weight': 4294967297"), "vips[0].backends[1].weight",
         "4294967297 out of range"},
        {"test_config_rejects capacity past 32 bits",
         "{" ENC ", 'flows': {'capacity': 4294967360}}", "flows.capacity",
         "4294967360 out of range"},
        {"test_config_rejects hot threshold above 1", "{" ENC ", 'hot': {'threshold': 2.0}}",
         "hot.threshold", "out of range"},
        {"test_config_rejects hot enabled not a boolean", "{" ENC ", 'hot': {'enabled': 1}}",
         "hot.enabled", "expected a boolean, got an integer"},
};

#define N_BAD_CASES (sizeof(bad_cases) / sizeof(bad_cases[0]))

static void
assert_error(const char *err, const char *path, const char *reason)
{
	size_t n = strlen(path);

	if (strncmp(err, path, n) != 0 || strncmp(err + n, ": ", 2) != 0)
		fail_msg("message \"%s\" does not start with \"%s: \"", err, path);
	if (strstr(err + n + 2, reason) == NULL)
		fail_msg("message \"%s\" does not say \"%s\"", err, reason);
	if (strchr(err, '\n') != NULL)
		fail_msg("message \"%s\" is not one line", err);
}

static void
test_config_rejects(void **state)
{
	const struct bad_case *c = *state;
	char err[ERR_LEN];
	struct lb_config *cfg = load_sq(c->json, err);

	if (cfg != NULL) {
		lb_config_free(cfg);
		fail_msg("accepted; want \"%s: ...%s...\"", c->path, c->reason);
	}
	assert_error(err, c->path, c->reason);
}

/* The good twins of the rows above: the boundaries themselves are accepted. */
static void
test_config_accepts_boundaries(void **state)
{
	static const char *const good[] = {
	        "{" ENC ", 'maglev': {'table_size': 1048573}}",
	        "{" ENC ", 'maglev': {'table_size': 3}}",
	        "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01', "
	        "'mtu': 1280, 'gue_port': 65535}}",
	        "{'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01', "
	        "'mtu': 9000, 'gue_port': 1}}",
	        ONE_VIP("'address': '203.0.113.1', 'port': 65535, 'protocol': 'udp'"),
	        ONE_BE("'address': '10.0.0.2', 'weight': 0"),
	        /* Same address and port, other protocol: a different VIP. */
	        "{" ENC ", 'vips': [{" VIP_HEAD "}, {'address': '203.0.113.1', 'port': 80, "
	        "'protocol': 'udp'}]}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		lb_config_free(load_ok(good[i]));
}

/* LB_MAX_VIPS VIPs load; one more is rejected naming "vips". */
static void
test_config_too_many_vips(void **state)
{
	char err[ERR_LEN];
	json_t *root = parse_sq("{" ENC "}");
	json_t *vips = json_array();
	struct lb_config *cfg;

	(void)state;
	for (int i = 0; i < LB_MAX_VIPS; i++)
		json_array_append_new(vips,
		                      json_pack("{s:s, s:i, s:s}", "address", "203.0.113.1", "port",
		                                (json_int_t)(i + 1), "protocol", "tcp"));
	json_object_set_new(root, "vips", vips);
	cfg = lb_config_from_json(root, err, sizeof(err));
	if (cfg == NULL)
		fail_msg("%d VIPs rejected: %s", LB_MAX_VIPS, err);
	assert_int_equal(cfg->n_vips, LB_MAX_VIPS);
	assert_int_equal(cfg->vips[LB_MAX_VIPS - 1].id, LB_MAX_VIPS - 1);
	lb_config_free(cfg);

	json_array_append_new(vips, json_pack("{s:s, s:i, s:s}", "address", "203.0.113.2", "port",
	                                      (json_int_t)80, "protocol", "tcp"));
	assert_null(lb_config_from_json(root, err, sizeof(err)));
	assert_error(err, "vips", "too many VIPs");
	json_decref(root);
}

/* All tables together: VIPs x table_size <= LB_MAGLEV_MAX_SLOTS. At the largest
 * table size (1048573) 256 VIPs fit and 257 are refused, naming the field. */
static void
test_config_table_budget(void **state)
{
	char err[ERR_LEN];
	json_t *root = parse_sq("{" ENC ", 'maglev': {'table_size': 1048573}}");
	json_t *vips = json_array();
	struct lb_config *cfg;
	uint32_t fit = (uint32_t)(LB_MAGLEV_MAX_SLOTS / 1048573);

	(void)state;
	assert_int_equal(fit, 256);
	for (uint32_t i = 0; i < fit; i++)
		json_array_append_new(vips,
		                      json_pack("{s:s, s:i, s:s}", "address", "203.0.113.1", "port",
		                                (json_int_t)(i + 1), "protocol", "tcp"));
	json_object_set_new(root, "vips", vips);
	cfg = lb_config_from_json(root, err, sizeof(err));
	if (cfg == NULL)
		fail_msg("%u VIPs at the largest table size rejected: %s", fit, err);
	lb_config_free(cfg);
	json_array_append_new(vips, json_pack("{s:s, s:i, s:s}", "address", "203.0.113.2", "port",
	                                      (json_int_t)80, "protocol", "tcp"));
	assert_null(lb_config_from_json(root, err, sizeof(err)));
	assert_error(err, "maglev.table_size", "over the budget");
	json_decref(root);
}

/*
 * Backend limits: LB_MAX_BACKENDS memberships over all VIPs load, one more is
 * rejected naming the VIP's backends; a VIP with more than
 * LB_CFG_MAX_BACKENDS_PER_VIP backends is rejected before any is parsed.
 */
static void
test_config_too_many_backends(void **state)
{
	const unsigned int per_vip = 1024, n_vips = LB_MAX_BACKENDS / per_vip;
	char err[ERR_LEN], path[64];
	json_t *root = parse_sq("{" ENC "}");
	json_t *vips = json_array(), *bes;
	struct lb_config *cfg;

	(void)state;
	assert_int_equal(n_vips * per_vip, LB_MAX_BACKENDS);
	for (unsigned int i = 0; i < n_vips; i++) {
		bes = json_array();
		for (unsigned int j = 0; j < per_vip; j++) {
			char a[32];

			snprintf(a, sizeof(a), "10.%u.%u.%u", i, j / 250, 1 + j % 250);
			json_array_append_new(bes, json_pack("{s:s}", "address", a));
		}
		json_array_append_new(vips, json_pack("{s:s, s:i, s:s, s:o}", "address",
		                                      "203.0.113.1", "port", (json_int_t)(i + 1),
		                                      "protocol", "tcp", "backends", bes));
	}
	json_object_set_new(root, "vips", vips);
	cfg = lb_config_from_json(root, err, sizeof(err));
	if (cfg == NULL)
		fail_msg("%u backends rejected: %s", LB_MAX_BACKENDS, err);
	assert_int_equal(lb_config_backend_count(cfg), LB_MAX_BACKENDS);
	lb_config_free(cfg);

	/* One more membership, on a new VIP. */
	json_array_append_new(vips, json_pack("{s:s, s:i, s:s, s:[{s:s}]}", "address",
	                                      "203.0.113.2", "port", (json_int_t)80, "protocol",
	                                      "tcp", "backends", "address", "10.200.0.1"));
	assert_null(lb_config_from_json(root, err, sizeof(err)));
	snprintf(path, sizeof(path), "vips[%u].backends", n_vips);
	assert_error(err, path, "too many backends in all (at most 16384)");
	json_decref(root);

	/* One VIP over the per-VIP limit: refused on the array's size alone. */
	root = parse_sq("{" ENC "}");
	bes = json_array();
	for (uint32_t j = 0; j < LB_CFG_MAX_BACKENDS_PER_VIP + 1; j++)
		json_array_append_new(bes, json_object());
	json_object_set_new(root, "vips",
	                    json_pack("[{s:s, s:i, s:s, s:o}]", "address", "203.0.113.1", "port",
	                              (json_int_t)80, "protocol", "tcp", "backends", bes));
	assert_null(lb_config_from_json(root, err, sizeof(err)));
	assert_error(err, "vips[0].backends", "too many backends (at most 65534 per VIP)");
	json_decref(root);
}

/* A message longer than the buffer is cut, not overrun (run under ASan). */
static void
test_config_error_truncated(void **state)
{
	json_t *root = parse_sq(ONE_BE("'address': '10.0.0.2', 'colour': 1"));
	char err[24];

	(void)state;
	memset(err, 'X', sizeof(err));
	assert_null(lb_config_from_json(root, err, 16));
	assert_int_equal(strnlen(err, 16), 15);
	assert_int_equal(err[16], 'X');
	json_decref(root);
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
	struct CMUnitTest tests[N_BAD_CASES + N_IP_CASES + 16];
	size_t n = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_full_round_trip);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_defaults);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_no_vips);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_ids);
	/* Table rows: one test per row, named after the row so a failure says which. */
	for (size_t i = 0; i < N_BAD_CASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_config_rejects,
		                                                        (void *)&bad_cases[i]);
		tests[n++].name = bad_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_accepts_boundaries);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_too_many_vips);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_table_budget);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_too_many_backends);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_error_truncated);
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
