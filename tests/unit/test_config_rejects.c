/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for what the configuration loader refuses: one row per rejection
 * (each its own cmocka test) asserting the field path the message names and
 * its reason, the boundaries themselves accepted, the VIP, backend and Maglev
 * table limits, and a message cut to the buffer (config_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/model/config.h"

#include "config_fixture.h"

/* ---- Rejections: each row names the field path and the reason. ---- */

#define ENC "'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'}"
#define ENC46                                                                                      \
	"'encap': {'source_v4': '192.0.2.1', 'source_v6': '2001:db8::1', "                         \
	"'next_hop_mac': '02:00:5e:00:53:01'}"
#define VIP_HEAD "'address': '203.0.113.1', 'port': 80, 'protocol': 'tcp'"
#define BE1 "{'address': '10.0.0.1'}"
#define ONE_VIP(fields) "{" ENC ", 'vips': [{" fields "}]}"
#define ONE_BE(fields) ONE_VIP(VIP_HEAD ", 'backends': [" BE1 ", {" fields "}]")
/* 63 bytes, every byte a backend name may hold; and 32 two-byte characters. */
#define NAME63 "_:-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
#define E4 "\u00e9\u00e9\u00e9\u00e9"
#define E32 E4 E4 E4 E4 E4 E4 E4 E4

struct bad_case {
	const char *name;
	const char *json;
	const char *path;   /* the message starts with "path: " */
	const char *reason; /* and contains this */
};

static const struct bad_case bad_cases[] = {
        {"test_config_rejects health without type", ONE_VIP(VIP_HEAD ", 'health': {'port': 80}"),
         "vips[0].health.type", "missing"},
        {"test_config_rejects health bad type", ONE_VIP(VIP_HEAD ", 'health': {'type': 'icmp'}"),
         "vips[0].health.type", "is not one of: none, tcp, http, udp"},
        {"test_config_rejects health unknown field",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'tcp', 'retries': 2}"), "vips[0].health.retries",
         "unknown field"},
        {"test_config_rejects health interval too small",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'tcp', 'interval_ms': 99}"),
         "vips[0].health.interval_ms", "out of range [100, 3600000]"},
        {"test_config_rejects health timeout over interval",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'tcp', 'interval_ms': 500, 'timeout_ms': 501}"),
         "vips[0].health.timeout_ms", "out of range [1, 500]"},
        {"test_config_rejects health rise 0",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'tcp', 'rise': 0}"), "vips[0].health.rise",
         "out of range [1, 100]"},
        {"test_config_rejects health fall 101",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'tcp', 'fall': 101}"), "vips[0].health.fall",
         "out of range [1, 100]"},
        {"test_config_rejects health fail_open over 1",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'tcp', 'fail_open': 1.5}"),
         "vips[0].health.fail_open", "out of range [0, 1]"},
        {"test_config_rejects health fail_open on a backend",
         ONE_BE("'address': '10.0.0.2', 'health': {'type': 'tcp', 'fail_open': 0.5}"),
         "vips[0].backends[1].health.fail_open", "only a VIP's"},
        {"test_config_rejects health path without http",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'tcp', 'path': '/'}"), "vips[0].health.path",
         "only for type \"http\""},
        {"test_config_rejects health path not absolute",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'http', 'path': 'x'}"), "vips[0].health.path",
         "must begin with '/'"},
        {"test_config_rejects health expect 600",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'http', 'expect': 600}"), "vips[0].health.expect",
         "out of range [100, 599]"},
        {"test_config_rejects health udp without request",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'udp'}"), "vips[0].health.request", "missing"},
        {"test_config_rejects health odd hex",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'udp', 'request': 'abc'}"),
         "vips[0].health.request", "even number of hex digits"},
        {"test_config_rejects health not hex",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'udp', 'request': 'zz'}"), "vips[0].health.request",
         "not a hex digit"},
        {"test_config_rejects health http via encap",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'http', 'via': 'encap'}"), "vips[0].health.via",
         "encap: not offered for type \"http\""},
        {"test_config_rejects health bad on_down",
         ONE_VIP(VIP_HEAD ", 'health': {'type': 'tcp', 'on_down': 'drain'}"),
         "vips[0].health.on_down", "move_flows, keep_flows"},
        {"test_config_rejects health port needed",
         ONE_VIP("'address': '203.0.113.1', 'port': 0, 'protocol': 'tcp', 'health': "
                 "{'type': 'tcp'}"),
         "vips[0]", "health.port: required when the VIP's port is 0"},
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
        {"test_config_rejects vlan 0",
         "{'encap': {'source_v4': '10.0.0.1', 'next_hop_mac': '02:00:00:00:00:01', "
         "'vlan': 0}}",
         "encap.vlan", "is not one of: strip, keep, or a VLAN id 1-4094"},
        {"test_config_rejects vlan 4095",
         "{'encap': {'source_v4': '10.0.0.1', 'next_hop_mac': '02:00:00:00:00:01', "
         "'vlan': 4095}}",
         "encap.vlan", "is not one of: strip, keep, or a VLAN id 1-4094"},
        {"test_config_rejects vlan name",
         "{'encap': {'source_v4': '10.0.0.1', 'next_hop_mac': '02:00:00:00:00:01', "
         "'vlan': 'trunk'}}",
         "encap.vlan", "is not one of: strip, keep, or a VLAN id 1-4094"},
        {"test_config_rejects vlan bool",
         "{'encap': {'source_v4': '10.0.0.1', 'next_hop_mac': '02:00:00:00:00:01', "
         "'vlan': true}}",
         "encap.vlan", "is not one of: strip, keep, or a VLAN id 1-4094"},
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
         "must be 1 to 255 bytes"},
        {"test_config_rejects backend name empty", ONE_BE("'address': '10.0.0.2', 'name': ''"),
         "vips[0].backends[1].name", "must be 1 to 63 bytes"},
        /* Names: 1 to 63 bytes of A-Z a-z 0-9 . _ : - (docs/control-protocol.md). */
        {"test_config_rejects backend name 64 bytes",
         ONE_BE("'address': '10.0.0.2', 'name': '" NAME63 "x'"), "vips[0].backends[1].name",
         "must be 1 to 63 bytes (got 64)"},
        /* 32 characters, 64 bytes: the limit counts bytes. */
        {"test_config_rejects backend name 32 two-byte characters",
         ONE_BE("'address': '10.0.0.2', 'name': '" E32 "'"), "vips[0].backends[1].name",
         "must be 1 to 63 bytes (got 64)"},
        {"test_config_rejects backend name with tab",
         ONE_BE("'address': '10.0.0.2', 'name': 'web\\tweight\\t999'"), "vips[0].backends[1].name",
         "byte 4 (0x09) is not allowed"},
        {"test_config_rejects backend name with ESC",
         ONE_BE("'address': '10.0.0.2', 'name': '\\u001b[2J'"), "vips[0].backends[1].name",
         "byte 1 (0x1b) is not allowed"},
        {"test_config_rejects backend name with newline",
         ONE_BE("'address': '10.0.0.2', 'name': 'a\\nb'"), "vips[0].backends[1].name",
         "byte 2 (0x0a) is not allowed"},
        {"test_config_rejects backend name with space",
         ONE_BE("'address': '10.0.0.2', 'name': 'web 1'"), "vips[0].backends[1].name",
         "byte 4 (0x20) is not allowed"},
        {"test_config_rejects backend name with slash",
         ONE_BE("'address': '10.0.0.2', 'name': 'web/1'"), "vips[0].backends[1].name",
         "byte 4 (0x2f) is not allowed"},
        {"test_config_rejects backend name non-ASCII",
         ONE_BE("'address': '10.0.0.2', 'name': 'w\\u00e9b'"), "vips[0].backends[1].name",
         "byte 2 (0xc3) is not allowed"},
        {"test_config_rejects backend name with DEL",
         ONE_BE("'address': '10.0.0.2', 'name': 'a\\u007f'"), "vips[0].backends[1].name",
         "byte 2 (0x7f) is not allowed"},
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
        {"test_config_rejects icmp rate 0", "{" ENC ", 'icmp': {'rate_per_sec': 0}}",
         "icmp.rate_per_sec", "0 out of range"},
        {"test_config_rejects icmp burst above 10^6", "{" ENC ", 'icmp': {'burst': 1000001}}",
         "icmp.burst", "1000001 out of range"},
        {"test_config_rejects icmp unknown field", "{" ENC ", 'icmp': {'rate': 5}}", "icmp.rate",
         "unknown field"},
        /* flows.* and icmp.*: the ranges of docs/operations.md's configuration
         * table, one past each end, the wrong JSON types, unknown subfields. */
        {"test_config_rejects flows not an object", "{" ENC ", 'flows': 5}", "flows",
         "expected an object, got an integer"},
        {"test_config_rejects flows unknown field", "{" ENC ", 'flows': {'syn_idle': 5}}",
         "flows.syn_idle", "unknown field"},
        {"test_config_rejects syn_idle_ms 0", "{" ENC ", 'flows': {'syn_idle_ms': 0}}",
         "flows.syn_idle_ms", "0 out of range [1, 86400000]"},
        {"test_config_rejects syn_idle_ms above a day",
         "{" ENC ", 'flows': {'syn_idle_ms': 86400001}}", "flows.syn_idle_ms",
         "86400001 out of range [1, 86400000]"},
        {"test_config_rejects syn_idle_ms as string", "{" ENC ", 'flows': {'syn_idle_ms': '5000'}}",
         "flows.syn_idle_ms", "expected an integer, got a string"},
        {"test_config_rejects syn_idle_ms real", "{" ENC ", 'flows': {'syn_idle_ms': 1.5}}",
         "flows.syn_idle_ms", "expected an integer, got a number"},
        {"test_config_rejects closing_idle_ms 0", "{" ENC ", 'flows': {'closing_idle_ms': 0}}",
         "flows.closing_idle_ms", "0 out of range [1, 86400000]"},
        {"test_config_rejects closing_idle_ms above a day",
         "{" ENC ", 'flows': {'closing_idle_ms': 86400001}}", "flows.closing_idle_ms",
         "86400001 out of range [1, 86400000]"},
        {"test_config_rejects closing_idle_ms negative",
         "{" ENC ", 'flows': {'closing_idle_ms': -1}}", "flows.closing_idle_ms", "-1 out of range"},
        {"test_config_rejects closing_idle_ms boolean",
         "{" ENC ", 'flows': {'closing_idle_ms': true}}", "flows.closing_idle_ms",
         "expected an integer, got a boolean"},
        {"test_config_rejects new_flow_rate negative", "{" ENC ", 'flows': {'new_flow_rate': -1}}",
         "flows.new_flow_rate", "-1 out of range [0, 100000000]"},
        {"test_config_rejects new_flow_rate above 10^8",
         "{" ENC ", 'flows': {'new_flow_rate': 100000001}}", "flows.new_flow_rate",
         "100000001 out of range [0, 100000000]"},
        {"test_config_rejects new_flow_rate past 32 bits",
         "{" ENC ", 'flows': {'new_flow_rate': 4294967297}}", "flows.new_flow_rate",
         "4294967297 out of range"},
        {"test_config_rejects new_flow_rate as string",
         "{" ENC ", 'flows': {'new_flow_rate': 'fast'}}", "flows.new_flow_rate",
         "expected an integer, got a string"},
        {"test_config_rejects new_flow_burst 0", "{" ENC ", 'flows': {'new_flow_burst': 0}}",
         "flows.new_flow_burst", "0 out of range [1, 100000000]"},
        {"test_config_rejects new_flow_burst above 10^8",
         "{" ENC ", 'flows': {'new_flow_burst': 100000001}}", "flows.new_flow_burst",
         "100000001 out of range [1, 100000000]"},
        {"test_config_rejects new_flow_burst null", "{" ENC ", 'flows': {'new_flow_burst': null}}",
         "flows.new_flow_burst", "expected an integer, got null"},
        {"test_config_rejects icmp not an object", "{" ENC ", 'icmp': []}", "icmp",
         "expected an object, got an array"},
        {"test_config_rejects icmp rate above 10^6", "{" ENC ", 'icmp': {'rate_per_sec': 1000001}}",
         "icmp.rate_per_sec", "1000001 out of range [1, 1000000]"},
        {"test_config_rejects icmp rate as string", "{" ENC ", 'icmp': {'rate_per_sec': '1000'}}",
         "icmp.rate_per_sec", "expected an integer, got a string"},
        {"test_config_rejects icmp rate real", "{" ENC ", 'icmp': {'rate_per_sec': 10.0}}",
         "icmp.rate_per_sec", "expected an integer, got a number"},
        {"test_config_rejects icmp burst 0", "{" ENC ", 'icmp': {'burst': 0}}", "icmp.burst",
         "0 out of range [1, 1000000]"},
        {"test_config_rejects icmp burst negative", "{" ENC ", 'icmp': {'burst': -5}}",
         "icmp.burst", "-5 out of range"},
        {"test_config_rejects icmp burst object", "{" ENC ", 'icmp': {'burst': {}}}", "icmp.burst",
         "expected an integer, got an object"},
        {"test_config_rejects icmp unknown field after good ones",
         "{" ENC ", 'icmp': {'rate_per_sec': 5, 'burst': 2, 'bucket': 1}}", "icmp.bucket",
         "unknown field"},
        {"test_config_rejects hot threshold above 1", "{" ENC ", 'hot': {'threshold': 2.0}}",
         "hot.threshold", "out of range"},
        {"test_config_rejects hot enabled not a boolean", "{" ENC ", 'hot': {'enabled': 1}}",
         "hot.enabled", "expected a boolean, got an integer"},
        /* The planner's knobs: the ranges of docs/operations.md, one past
         * each end, the wrong JSON types. */
        {"test_config_rejects hot margin negative", "{" ENC ", 'hot': {'margin': -0.01}}",
         "hot.margin", "-0.01 out of range [0, 0.5]"},
        {"test_config_rejects hot margin above 0.5", "{" ENC ", 'hot': {'margin': 0.51}}",
         "hot.margin", "0.51 out of range [0, 0.5]"},
        {"test_config_rejects hot margin string", "{" ENC ", 'hot': {'margin': '0.1'}}",
         "hot.margin", "expected a number, got a string"},
        {"test_config_rejects hot ewma_alpha 0", "{" ENC ", 'hot': {'ewma_alpha': 0}}",
         "hot.ewma_alpha", "0 out of range [0.01, 1]"},
        {"test_config_rejects hot ewma_alpha above 1", "{" ENC ", 'hot': {'ewma_alpha': 1.01}}",
         "hot.ewma_alpha", "1.01 out of range [0.01, 1]"},
        {"test_config_rejects hot ewma_alpha null", "{" ENC ", 'hot': {'ewma_alpha': null}}",
         "hot.ewma_alpha", "expected a number, got null"},
        {"test_config_rejects hot demote_windows 0", "{" ENC ", 'hot': {'demote_windows': 0}}",
         "hot.demote_windows", "0 out of range [1, 1000]"},
        {"test_config_rejects hot demote_windows above 1000",
         "{" ENC ", 'hot': {'demote_windows': 1001}}", "hot.demote_windows",
         "1001 out of range [1, 1000]"},
        {"test_config_rejects hot demote_windows real", "{" ENC ", 'hot': {'demote_windows': 2.5}}",
         "hot.demote_windows", "expected an integer, got a number"},
        {"test_config_rejects hot threshold_low 0", "{" ENC ", 'hot': {'threshold_low': 0}}",
         "hot.threshold_low", "0 out of range"},
        {"test_config_rejects hot threshold_low above threshold",
         "{" ENC ", 'hot': {'threshold': 0.1, 'threshold_low': 0.2}}", "hot.threshold_low",
         "0.2 is above hot.threshold 0.1"},
        {"test_config_rejects hot threshold 0 (auto is spelt \"auto\")",
         "{" ENC ", 'hot': {'threshold': 0}}", "hot.threshold",
         "0 out of range (0, 1] or \"auto\""},
        {"test_config_rejects hot threshold other string", "{" ENC ", 'hot': {'threshold': 'off'}}",
         "hot.threshold", "expected \"auto\" or a number, got \"off\""},
        {"test_config_rejects hot threshold_low boolean",
         "{" ENC ", 'hot': {'threshold_low': true}}", "hot.threshold_low",
         "expected \"auto\" or a number, got a boolean"},
};

#define N_BAD_CASES (sizeof(bad_cases) / sizeof(bad_cases[0]))

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
	        ONE_BE("'address': '10.0.0.2', 'name': '" NAME63 "'"),
	        ONE_BE("'address': '10.0.0.2', 'name': 'a'"),
	        ONE_BE("'address': '10.0.0.2', 'name': 'web-1.rack_2:a'"),
	        /* Both ends of each flows.* and icmp.* range (docs/operations.md). */
	        "{" ENC ", 'flows': {'syn_idle_ms': 1, 'closing_idle_ms': 1, 'new_flow_rate': 0, "
	        "'new_flow_burst': 1}, 'icmp': {'rate_per_sec': 1, 'burst': 1}}",
	        "{" ENC ", 'flows': {'syn_idle_ms': 86400000, 'closing_idle_ms': 86400000, "
	        "'new_flow_rate': 100000000, 'new_flow_burst': 100000000}, "
	        "'icmp': {'rate_per_sec': 1000000, 'burst': 1000000}}",
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

	/* A full document with one duplicate: the earlier VIP it repeats is named. */
	json_array_set_new(vips, LB_MAX_VIPS - 1,
	                   json_pack("{s:s, s:i, s:s}", "address", "203.0.113.1", "port",
	                             (json_int_t)518, "protocol", "tcp"));
	assert_null(lb_config_from_json(root, err, sizeof(err)));
	assert_error(err, "vips[1023]",
	             "duplicate VIP (same address, port and protocol as vips[517])");
	json_array_set_new(vips, LB_MAX_VIPS - 1,
	                   json_pack("{s:s, s:i, s:s}", "address", "203.0.113.1", "port",
	                             (json_int_t)LB_MAX_VIPS, "protocol", "tcp"));

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
 * rejected naming the VIP's backends; a VIP with more than LB_MAX_BACKENDS
 * backends is rejected on the array's size, before any is parsed.
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

	/* One VIP over the limit alone: refused on the array's size (its entries
	 * are empty objects, which parsing would refuse). */
	root = parse_sq("{" ENC "}");
	bes = json_array();
	for (uint32_t j = 0; j < LB_MAX_BACKENDS + 1; j++)
		json_array_append_new(bes, json_object());
	json_object_set_new(root, "vips",
	                    json_pack("[{s:s, s:i, s:s, s:o}]", "address", "203.0.113.1", "port",
	                              (json_int_t)80, "protocol", "tcp", "backends", bes));
	assert_null(lb_config_from_json(root, err, sizeof(err)));
	assert_error(err, "vips[0].backends", "too many backends in all (at most 16384)");
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

int
main(void)
{
	struct CMUnitTest tests[N_BAD_CASES + 5];
	size_t n = 0;

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
	return _cmocka_run_group_tests("config_rejects", tests, n, NULL, NULL);
}
