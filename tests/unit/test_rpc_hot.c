/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the hot_* methods of the control socket
 * (control/rpc/rpc_hot.c) against the fake daemon of rpc_fixture.c with fake
 * hot-key ops that record each call: one row per rejection, per valid pin
 * and its flow key, and per daemon errno; the results of hot_list,
 * hot_events and hot_set; the methods without the ops; and batches.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "control/rpc/rpc.h"
#include "rpc_fixture.h"

/* ---- Hot-key fakes: record each call, answer canned JSON or the rc set. ---- */

static json_t *
fake_hot_list(void *arg)
{
	struct fake *f = arg;

	f->hot.list_calls++;
	if (f->hot.list_fails)
		return NULL;
	return json_pack("{s:O, s:i, s:{s:i, s:i, s:i, s:i, s:i}, s:[{s:{s:s, s:i, s:s}, "
	                 "s:{s:s}, s:s, s:f, s:[s, s], s:i, s:b}]}",
	                 "params", f->hot.params, "window", (json_int_t)1234, "counters",
	                 "promotions", 3, "demotions", 1, "replans", 2, "active", 1, "pinned", 0,
	                 "overrides", "vip", "address", "2001:db8::10", "port", 443, "protocol",
	                 "udp", "key", "src", "2001:db8:5::7", "key_hash", "0x1234abcd", "share",
	                 0.08, "replicas", "10.1.0.1", "10.1.0.2", "since_window", (json_int_t)1200,
	                 "pinned", 0);
}

static json_t *
fake_hot_events(void *arg)
{
	struct fake *f = arg;

	f->hot.events_calls++;
	return json_pack("[{s:i, s:s, s:{s:s, s:i, s:s}, s:{s:s}, s:f, s:i}]", "window",
	                 (json_int_t)1200, "event", "promote", "vip", "address", "2001:db8::10",
	                 "port", 443, "protocol", "udp", "key", "src", "2001:db8:5::7", "share",
	                 0.08, "replicas", 2);
}

static int
fake_hot_set(void *arg, const json_t *params, char *err, size_t errlen)
{
	struct fake *f = arg;

	f->hot.set_calls++;
	json_decref(f->hot.set_seen);
	f->hot.set_seen = json_deep_copy(params);
	if (f->hot.set_rc != 0) {
		if (f->hot.set_err != NULL)
			snprintf(err, errlen, "%s", f->hot.set_err);
		return f->hot.set_rc;
	}
	json_object_update(f->hot.params, (json_t *)params);
	return 0;
}

static int
fake_hot_pin(void *arg, uint16_t vip_id, const struct lb_flow_key *key, uint16_t r, bool pin,
             char *err, size_t errlen)
{
	struct fake *f = arg;

	f->hot.pin_calls++;
	f->hot.vip_id = vip_id;
	f->hot.key = *key;
	f->hot.r = r;
	f->hot.pin = pin;
	if (f->hot.pin_rc != 0 && f->hot.pin_err != NULL)
		snprintf(err, errlen, "%s", f->hot.pin_err);
	return f->hot.pin_rc;
}

/* base_config plus src_ip_dport VIPs of every port and of one port. */
static const char hot_config[] =
        "{" ENCAP ", 'vips': ["
        " {'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp', 'backends': ["
        "   {'address': '10.1.0.1'}, {'address': '10.1.0.2', 'weight': 2, 'name': 'web2'}]},"
        " {'address': '2001:db8::10', 'port': 443, 'protocol': 'udp', 'key': 'src_ip',"
        "  'encap': 'gue'},"
        " {'address': '192.0.2.20', 'port': 0, 'protocol': 'udp', 'key': 'src_ip_dport'},"
        " {'address': '192.0.2.30', 'port': 53, 'protocol': 'udp', 'key': 'src_ip_dport'}]}";

#define V6REF "{'address': '2001:db8::10', 'port': 443, 'protocol': 'udp'}"
#define V20REF "{'address': '192.0.2.20', 'port': 0, 'protocol': 'udp'}"
#define V30REF "{'address': '192.0.2.30', 'port': 53, 'protocol': 'udp'}"
#define HOT_PARAMS                                                                                 \
	"{'threshold': 0.01, 'threshold_low': 0.005, 'epsilon': 0.25, 'demote_windows': 5, "       \
	"'window_ms': 100}"

/* A fake daemon with the hot-key ops; VIP ids are not their indexes. */
static struct fake *
fake_new_hot(void)
{
	struct fake *f = fake_new(hot_config);

	f->ops.hot_list = fake_hot_list;
	f->ops.hot_events = fake_hot_events;
	f->ops.hot_set = fake_hot_set;
	f->ops.hot_pin = fake_hot_pin;
	f->hot.params = parse_sq(HOT_PARAMS);
	for (uint32_t i = 0; i < f->cfg->n_vips; i++)
		f->cfg->vips[i].id = (uint16_t)(700 + i);
	return f;
}

static int
hot_setup(void **state)
{
	*state = fake_new_hot();
	return 0;
}

static int
hot_row_setup(void **state)
{
	return row_setup_with(state, fake_new_hot());
}

/* Rejected before the daemon is asked: nothing changes, no op runs. */
static const struct err_case hot_err_cases[] = {
        /* hot_list, hot_events */
        {"hot_list unknown param", REQ("hot_list", "{'vip': " VREF "}"), P, "vip: unknown field",
         "1"},
        {"hot_events unknown param", REQ("hot_events", "{'since': 3}"), P, "since: unknown field",
         "1"},

        /* hot_set */
        {"hot_set nothing", REQ("hot_set", "{}"), P,
         "window_ms, threshold, epsilon, sample, margin, ewma_alpha, demote_windows, "
         "threshold_low: missing",
         "1"},
        {"hot_set no params", REQ0("hot_set"), P,
         "window_ms, threshold, epsilon, sample, margin, ewma_alpha, demote_windows, "
         "threshold_low: missing",
         "1"},
        {"hot_set sample negative", REQ("hot_set", "{'sample': -1}"), P,
         "sample: -1 out of range [0, 8]", "1"},
        {"hot_set sample too big", REQ("hot_set", "{'sample': 9}"), P,
         "sample: 9 out of range [0, 8]", "1"},
        {"hot_set sample real", REQ("hot_set", "{'sample': 2.5}"), P,
         "sample: expected \"auto\" or an integer, got a number", "1"},
        {"hot_set sample other string", REQ("hot_set", "{'sample': 'fast'}"), P,
         "sample: expected \"auto\" or an integer, got \"fast\"", "1"},
        {"hot_set sample null", REQ("hot_set", "{'sample': null}"), P,
         "sample: expected \"auto\" or an integer, got null", "1"},
        {"hot_set sample bad among good", REQ("hot_set", "{'threshold': 0.1, 'sample': 16}"), P,
         "sample: 16 out of range", "1"},
        /* What the sketches count is fixed for the process. */
        {"hot_set weight", REQ("hot_set", "{'weight': 'bytes'}"), P, "weight: restart-only", "1"},
        {"hot_set weight among good", REQ("hot_set", "{'threshold': 0.1, 'weight': 'packets'}"), P,
         "weight: restart-only", "1"},
        {"hot_set unknown field", REQ("hot_set", "{'threshold': 0.1, 'alpha': 0.5}"), P,
         "alpha: unknown field", "1"},
        {"hot_set threshold 0", REQ("hot_set", "{'threshold': 0}"), P,
         "threshold: 0 out of range (0, 1]", "1"},
        {"hot_set threshold above 1", REQ("hot_set", "{'threshold': 1.5}"), P,
         "threshold: 1.5 out of range (0, 1]", "1"},
        {"hot_set threshold negative", REQ("hot_set", "{'threshold': -0.1}"), P,
         "threshold: -0.1 out of range", "1"},
        {"hot_set threshold string", REQ("hot_set", "{'threshold': '0.1'}"), P,
         "threshold: expected \"auto\" or a number, got \"0.1\"", "1"},
        {"hot_set threshold null", REQ("hot_set", "{'threshold': null}"), P,
         "threshold: expected \"auto\" or a number, got null", "1"},
        {"hot_set threshold_low 0", REQ("hot_set", "{'threshold_low': 0}"), P,
         "threshold_low: 0 out of range (0, 1]", "1"},
        {"hot_set threshold_low above 1", REQ("hot_set", "{'threshold_low': 2}"), P,
         "threshold_low: 2 out of range (0, 1]", "1"},
        {"hot_set threshold_low above threshold",
         REQ("hot_set", "{'threshold': 0.1, 'threshold_low': 0.2}"), P,
         "threshold_low: 0.2 is above threshold 0.1", "1"},
        {"hot_set epsilon too small", REQ("hot_set", "{'epsilon': 0.0005}"), P,
         "epsilon: 0.0005 out of range [0.001, 100]", "1"},
        {"hot_set epsilon too big", REQ("hot_set", "{'epsilon': 101}"), P,
         "epsilon: 101 out of range [0.001, 100]", "1"},
        {"hot_set epsilon bool", REQ("hot_set", "{'epsilon': true}"), P,
         "epsilon: expected a number, got a boolean", "1"},
        {"hot_set demote_windows 0", REQ("hot_set", "{'demote_windows': 0}"), P,
         "demote_windows: 0 out of range [1, 1000]", "1"},
        {"hot_set demote_windows too big", REQ("hot_set", "{'demote_windows': 1001}"), P,
         "demote_windows: 1001 out of range [1, 1000]", "1"},
        {"hot_set demote_windows real", REQ("hot_set", "{'demote_windows': 2.5}"), P,
         "demote_windows: expected an integer, got a number", "1"},
        {"hot_set window_ms too small", REQ("hot_set", "{'window_ms': 9}"), P,
         "window_ms: 9 out of range [10, 60000]", "1"},
        {"hot_set window_ms too big", REQ("hot_set", "{'window_ms': 60001}"), P,
         "window_ms: 60001 out of range [10, 60000]", "1"},
        {"hot_set window_ms string", REQ("hot_set", "{'window_ms': '100'}"), P,
         "window_ms: expected an integer, got a string", "1"},
        {"hot_set margin negative", REQ("hot_set", "{'margin': -0.01}"), P,
         "margin: -0.01 out of range [0, 0.5]", "1"},
        {"hot_set margin too big", REQ("hot_set", "{'margin': 0.51}"), P,
         "margin: 0.51 out of range [0, 0.5]", "1"},
        {"hot_set margin string", REQ("hot_set", "{'margin': '0.1'}"), P,
         "margin: expected a number, got a string", "1"},
        {"hot_set margin null", REQ("hot_set", "{'margin': null}"), P,
         "margin: expected a number, got null", "1"},
        {"hot_set ewma_alpha 0", REQ("hot_set", "{'ewma_alpha': 0}"), P,
         "ewma_alpha: 0 out of range [0.01, 1]", "1"},
        {"hot_set ewma_alpha too small", REQ("hot_set", "{'ewma_alpha': 0.005}"), P,
         "ewma_alpha: 0.005 out of range [0.01, 1]", "1"},
        {"hot_set ewma_alpha above 1", REQ("hot_set", "{'ewma_alpha': 1.5}"), P,
         "ewma_alpha: 1.5 out of range [0.01, 1]", "1"},
        {"hot_set ewma_alpha bool", REQ("hot_set", "{'ewma_alpha': false}"), P,
         "ewma_alpha: expected a number, got a boolean", "1"},
        {"hot_set margin bad among good",
         REQ("hot_set", "{'threshold': 0.1, 'ewma_alpha': 0.5, 'margin': 1}"), P,
         "margin: 1 out of range", "1"},
        {"hot_set one bad among good",
         REQ("hot_set", "{'threshold': 0.1, 'epsilon': 0.5, 'window_ms': 5}"), P,
         "window_ms: 5 out of range", "1"},

        /* hot_pin: the envelope of the params */
        {"hot_pin no params", REQ0("hot_pin"), P, "vip: missing", "1"},
        {"hot_pin no vip", REQ("hot_pin", "{'key': {'src': '198.51.100.7'}}"), P, "vip: missing",
         "1"},
        {"hot_pin bad vip",
         REQ("hot_pin", "{'vip': {'address': '192.0.2.300', 'port': 80, "
                        "'protocol': 'tcp'}, 'key': {'src': '1.2.3.4'}}"),
         P, "vip.address: ", "1"},
        {"hot_pin vip unknown field",
         REQ("hot_pin", "{'vip': {'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp', "
                        "'key': '5tuple'}, 'key': {'src': '1.2.3.4'}}"),
         P, "vip.key: unknown field", "1"},
        {"hot_pin no key", REQ("hot_pin", "{'vip': " VREF "}"), P, "key: missing (required)", "1"},
        {"hot_pin key not an object", REQ("hot_pin", "{'vip': " VREF ", 'key': '198.51.100.7'}"), P,
         "key: expected an object, got a string", "1"},
        {"hot_pin unknown field",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, 'pin': true}"), P,
         "pin: unknown field", "1"},
        {"hot_pin key unknown field",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1, 'port': 80}}"), P,
         "key.port: unknown field", "1"},
        {"hot_pin replicas too many",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, "
                        "'replicas': 257}"),
         P, "replicas: 257 out of range [0, 256]", "1"},
        {"hot_pin replicas negative",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, "
                        "'replicas': -1}"),
         P, "replicas: -1 out of range [0, 256]", "1"},
        {"hot_pin replicas real",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, "
                        "'replicas': 2.5}"),
         P, "replicas: expected an integer, got a number", "1"},
        {"hot_pin replicas string",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4', 'sport': 1}, "
                        "'replicas': '3'}"),
         P, "replicas: expected an integer, got a string", "1"},
        {"hot_pin no such VIP",
         REQ("hot_pin", "{'vip': {'address': '192.0.2.99', 'port': 80, 'protocol': 'tcp'}, "
                        "'key': {'src': '1.2.3.4'}}"),
         NF, "VIP 192.0.2.99:80/tcp not found", "1"},
        {"hot_pin VIP of another protocol",
         REQ("hot_pin", "{'vip': {'address': '192.0.2.10', 'port': 80, 'protocol': 'udp'}, "
                        "'key': {'src': '1.2.3.4'}}"),
         NF, "VIP 192.0.2.10:80/udp not found", "1"},

        /* hot_pin: the key's fields */
        {"hot_pin key.src missing", REQ("hot_pin", "{'vip': " VREF ", 'key': {'sport': 1}}"), P,
         "key.src: missing (required)", "1"},
        {"hot_pin key.src not a string",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': 5, 'sport': 1}}"), P,
         "key.src: expected a string, got an integer", "1"},
        {"hot_pin key.src not an address",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': 'gateway', 'sport': 1}}"), P,
         "key.src: not an IPv4 or IPv6 address: \"gateway\"", "1"},
        {"hot_pin key.src with a port",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '1.2.3.4:80', 'sport': 1}}"), P,
         "key.src: not an IPv4 or IPv6 address", "1"},
        {"hot_pin key.src IPv6 for an IPv4 VIP",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '2001:db8::7', 'sport': 1}}"), P,
         "key.src: an IPv6 address, but VIP 192.0.2.10:80/tcp is IPv4", "1"},
        {"hot_pin key.src IPv4 for an IPv6 VIP",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '198.51.100.7'}}"), P,
         "key.src: an IPv4 address, but VIP [2001:db8::10]:443/udp is IPv6", "1"},
        {"hot_pin 5tuple key.sport missing",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'dport': 80}}"), P,
         "key.sport: missing (required by key mode 5tuple)", "1"},
        {"hot_pin key.sport too big",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 65536}}"), P,
         "key.sport: 65536 out of range [0, 65535]", "1"},
        {"hot_pin key.sport string",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': '1'}}"), P,
         "key.sport: expected an integer, got a string", "1"},
        {"hot_pin key.dport negative",
         REQ("hot_pin",
             "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, 'dport': -1}}"),
         P, "key.dport: -1 out of range [0, 65535]", "1"},
        {"hot_pin key.dport not the VIP's port",
         REQ("hot_pin",
             "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, 'dport': 8080}}"),
         P, "key.dport: 8080 is not the port of VIP 192.0.2.10:80/tcp", "1"},
        {"hot_pin key.dst not the VIP",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'dst': '192.0.2.11'}}"),
         P, "key.dst: not the address of VIP 192.0.2.10:80/tcp", "1"},
        {"hot_pin key.dst of the other family",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'dst': '2001:db8::10'}}"),
         P, "key.dst: an IPv6 address", "1"},
        {"hot_pin key.dst not an address",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'dst': 7}}"),
         P, "key.dst: expected a string, got an integer", "1"},
        {"hot_pin key.protocol not the VIP's",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'protocol': 'udp'}}"),
         P, "key.protocol: not the protocol of VIP 192.0.2.10:80/tcp", "1"},
        {"hot_pin key.protocol unknown",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'protocol': 'sctp'}}"),
         P, "key.protocol: expected \"tcp\" or \"udp\", got \"sctp\"", "1"},
        {"hot_pin key.protocol number",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1, "
                        "'protocol': 6}}"),
         P, "key.protocol: expected a string, got an integer", "1"},
        {"hot_pin src_ip key.sport not used",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7', 'sport': 1}}"), P,
         "key.sport: not used by the VIP's key mode src_ip", "1"},
        {"hot_pin src_ip key.dport not used",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7', 'dport': 443}}"), P,
         "key.dport: not used by the VIP's key mode src_ip", "1"},
        {"hot_pin src_ip key.dst not used",
         REQ("hot_pin",
             "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7', 'dst': '2001:db8::10'}}"),
         P, "key.dst: not used by the VIP's key mode src_ip", "1"},
        {"hot_pin src_ip key.protocol not used",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7', 'protocol': 'udp'}}"),
         P, "key.protocol: not used by the VIP's key mode src_ip", "1"},
        {"hot_pin src_ip_dport key.sport not used",
         REQ("hot_pin",
             "{'vip': " V20REF ", 'key': {'src': '203.0.113.9', 'sport': 5, 'dport': 53}}"),
         P, "key.sport: not used by the VIP's key mode src_ip_dport", "1"},
        {"hot_pin src_ip_dport key.dport missing on a VIP of every port",
         REQ("hot_pin", "{'vip': " V20REF ", 'key': {'src': '203.0.113.9'}}"), P,
         "key.dport: missing (required by key mode src_ip_dport on a VIP of every port)", "1"},
        {"hot_pin src_ip_dport key.dport not the VIP's port",
         REQ("hot_pin", "{'vip': " V30REF ", 'key': {'src': '203.0.113.9', 'dport': 54}}"), P,
         "key.dport: 54 is not the port of VIP 192.0.2.30:53/udp", "1"},

        /* hot_unpin */
        {"hot_unpin replicas",
         REQ("hot_unpin", "{'vip': " V6REF ", 'key': {'src': '2001:db8::7'}, "
                          "'replicas': 2}"),
         P, "replicas: unknown field", "1"},
        {"hot_unpin no key", REQ("hot_unpin", "{'vip': " V6REF "}"), P, "key: missing", "1"},
        {"hot_unpin key.sport not used",
         REQ("hot_unpin", "{'vip': " V6REF ", 'key': {'src': '2001:db8::7', 'sport': 9}}"), P,
         "key.sport: not used by the VIP's key mode src_ip", "1"},
        {"hot_unpin no such VIP",
         REQ("hot_unpin", "{'vip': {'address': '2001:db8::11', 'port': 443, 'protocol': 'udp'}, "
                          "'key': {'src': '2001:db8::7'}}"),
         NF, "VIP [2001:db8::11]:443/udp not found", "1"},
};

static void
test_rpc_hot_rejects(void **state)
{
	struct row_fixture *rf = *state;
	struct fake *f = rf->f;

	test_rpc_rejects(state);
	assert_int_equal(f->hot.set_calls, 0);
	assert_int_equal(f->hot.pin_calls, 0);
}

/* A valid hot_pin / hot_unpin and the flow key the op must see. */
struct hot_pin_case {
	const char *name;
	const char *line;
	uint32_t vip;    /* index in hot_config (its id is 700 + index) */
	const char *src; /* the key's addresses as text; dst NULL: zero */
	const char *dst;
	uint16_t sport, dport; /* host byte order; the op must see network order */
	uint8_t proto;
	uint16_t r;
	bool pin;
};

static const struct hot_pin_case hot_pin_cases[] = {
        {"hot_pin 5tuple, dport from the VIP",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 40000}}"), 0,
         "198.51.100.7", "192.0.2.10", 40000, 80, IPPROTO_TCP, 0, true},
        {"hot_pin 5tuple, every field",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'dst': '192.0.2.10', "
                        "'sport': 1, 'dport': 80, 'protocol': 'tcp'}, 'replicas': 25}"),
         0, "198.51.100.7", "192.0.2.10", 1, 80, IPPROTO_TCP, 25, true},
        {"hot_pin 5tuple, sport 65535, replicas 0",
         REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '0.0.0.0', 'sport': 65535}, "
                        "'replicas': 0}"),
         0, "0.0.0.0", "192.0.2.10", 65535, 80, IPPROTO_TCP, 0, true},
        {"hot_pin src_ip IPv6",
         REQ("hot_pin", "{'vip': " V6REF ", 'key': {'src': '2001:DB8:5:0::7'}, 'replicas': 256}"),
         1, "2001:db8:5::7", NULL, 0, 0, 0, 256, true},
        {"hot_pin src_ip_dport, VIP of every port",
         REQ("hot_pin", "{'vip': " V20REF ", 'key': {'src': '203.0.113.9', 'dport': 8443}, "
                        "'replicas': 3}"),
         2, "203.0.113.9", NULL, 0, 8443, 0, 3, true},
        {"hot_pin src_ip_dport, dport from the VIP",
         REQ("hot_pin", "{'vip': " V30REF ", 'key': {'src': '203.0.113.9'}}"), 3, "203.0.113.9",
         NULL, 0, 53, 0, 0, true},
        {"hot_pin src_ip_dport, dport given",
         REQ("hot_pin", "{'vip': " V30REF ", 'key': {'src': '203.0.113.9', 'dport': 53}}"), 3,
         "203.0.113.9", NULL, 0, 53, 0, 0, true},
        {"hot_unpin 5tuple",
         REQ("hot_unpin",
             "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 40000, 'dport': 80}}"),
         0, "198.51.100.7", "192.0.2.10", 40000, 80, IPPROTO_TCP, 0, false},
        {"hot_unpin src_ip",
         REQ("hot_unpin", "{'vip': " V6REF ", 'key': {'src': '2001:db8:5::7'}}"), 1,
         "2001:db8:5::7", NULL, 0, 0, 0, 0, false},
};

static void
test_rpc_hot_pin(void **state)
{
	struct row_fixture *rf = *state;
	const struct hot_pin_case *c = rf->row;
	struct fake *f = rf->f;
	struct lb_flow_key want;
	json_t *before = config_doc(f), *after, *r;
	uint8_t af;

	r = rpc(f, c->line);
	assert_true(json_is_object(result_of(r)) && json_object_size(result_of(r)) == 0);
	json_decref(r);
	assert_int_equal(f->hot.pin_calls, 1);
	assert_int_equal(f->hot.vip_id, 700 + c->vip);
	assert_int_equal(f->hot.r, c->r);
	assert_int_equal(f->hot.pin, c->pin);

	memset(&want, 0, sizeof(want));
	assert_int_equal(lb_ip_from_str(c->src, &af, &want.src), 0);
	want.af = af;
	if (c->dst != NULL)
		assert_int_equal(lb_ip_from_str(c->dst, &af, &want.dst), 0);
	want.sport = htons(c->sport);
	want.dport = htons(c->dport);
	want.proto = c->proto;
	if (memcmp(&want, &f->hot.key, sizeof(want)) != 0) {
		char got[2 * sizeof(want) + 1], exp[2 * sizeof(want) + 1];

		for (size_t i = 0; i < sizeof(want); i++) {
			sprintf(got + 2 * i, "%02x", ((const uint8_t *)&f->hot.key)[i]);
			sprintf(exp + 2 * i, "%02x", ((const uint8_t *)&want)[i]);
		}
		fail_msg("flow key\n got  %s\n want %s", got, exp);
	}
	/* Runtime state only: the configuration is not touched. */
	assert_int_equal(f->apply_calls, 0);
	after = config_doc(f);
	assert_true(json_equal(before, after));
	json_decref(before);
	json_decref(after);
}

/* The daemon's answer mapped to an error code. */
struct hot_errno_case {
	const char *name;
	const char *line;
	int set_rc, pin_rc;
	const char *err; /* what the op writes to err */
	bool list_fails;
	int code;
	const char *msg;
};

#define PIN_LINE REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}")
#define UNPIN_LINE REQ("hot_unpin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}")
#define SET_LINE REQ("hot_set", "{'threshold_low': 0.3}")

static const struct hot_errno_case hot_errno_cases[] = {
        {"hot_pin ENOENT with a message", PIN_LINE, 0, -ENOENT,
         "VIP 192.0.2.10:80/tcp: not in the snapshot", false, NF,
         "VIP 192.0.2.10:80/tcp: not in the snapshot"},
        {"hot_pin ENOENT", PIN_LINE, 0, -ENOENT, NULL, false, NF,
         "VIP 192.0.2.10:80/tcp is not running"},
        {"hot_unpin ENOENT", UNPIN_LINE, 0, -ENOENT, NULL, false, NF,
         "no override of this key in VIP 192.0.2.10:80/tcp"},
        {"hot_unpin ENOENT with a message", UNPIN_LINE, 0, -ENOENT, "no such override", false, NF,
         "no such override"},
        {"hot_pin ENOSPC with a message", PIN_LINE, 0, -ENOSPC, "override table full (1024)", false,
         LB_RPC_ERR_LIMIT, "override table full (1024)"},
        {"hot_pin ENOSPC", PIN_LINE, 0, -ENOSPC, NULL, false, LB_RPC_ERR_LIMIT,
         "too many hot-key overrides"},
        {"hot_pin EINVAL", PIN_LINE, 0, -EINVAL, "key: the VIP has no backend", false, P,
         "key: the VIP has no backend"},
        {"hot_pin EIO", PIN_LINE, 0, -EIO, NULL, false, LB_RPC_ERR_INTERNAL, "Input/output error"},
        {"hot_pin ENOMEM with a message", PIN_LINE, 0, -ENOMEM, "out of memory", false,
         LB_RPC_ERR_INTERNAL, "out of memory"},
        {"hot_set EINVAL", SET_LINE, -EINVAL, 0, "threshold_low: 0.3 is above threshold 0.01",
         false, P, "threshold_low: 0.3 is above threshold 0.01"},
        {"hot_set EINVAL without a message", SET_LINE, -EINVAL, 0, NULL, false, P,
         "invalid hot-key parameters"},
        {"hot_set ENOMEM", SET_LINE, -ENOMEM, 0, NULL, false, LB_RPC_ERR_INTERNAL,
         "Cannot allocate memory"},
        {"hot_set then hot_list fails", SET_LINE, 0, 0, NULL, true, LB_RPC_ERR_INTERNAL,
         "parameters changed, but reading them back failed"},
        {"hot_list fails", REQ0("hot_list"), 0, 0, NULL, true, LB_RPC_ERR_INTERNAL,
         "out of memory"},
};

static void
test_rpc_hot_errno(void **state)
{
	struct row_fixture *rf = *state;
	const struct hot_errno_case *c = rf->row;
	struct fake *f = rf->f;
	json_t *r;

	f->hot.set_rc = c->set_rc;
	f->hot.set_err = c->err;
	f->hot.pin_rc = c->pin_rc;
	f->hot.pin_err = c->err;
	f->hot.list_fails = c->list_fails;
	r = rpc(f, c->line);
	assert_error(r, c->code, c->msg);
	assert_id(r, "1");
	if (c->code == P) {
		json_t *data = json_object_get(json_object_get(r, "error"), "data");

		assert_true(json_is_string(json_object_get(data, "usage")));
	}
	json_decref(r);
	assert_int_equal(f->hot.pin_calls + f->hot.set_calls + f->hot.list_calls > 0, 1);
	assert_int_equal(f->apply_calls, 0);
}

static void
test_rpc_hot_list_events(void **state)
{
	struct fake *f = *state;
	json_t *r, *res, *want;

	res = call_ok(f, REQ0("hot_list"), &r);
	want = fake_hot_list(f);
	assert_true(json_equal(res, want));
	json_decref(want);
	json_decref(r);
	res = call_ok(f, REQ("hot_list", "{}"), &r);
	assert_int_equal(json_integer_value(json_object_get(res, "window")), 1234);
	json_decref(r);
	assert_int_equal(f->hot.list_calls, 3);

	res = call_ok(f, REQ0("hot_events"), &r);
	want = fake_hot_events(f);
	assert_true(json_equal(res, want));
	json_decref(want);
	json_decref(r);
	assert_int_equal(f->hot.events_calls, 2);
	assert_int_equal(f->apply_calls, 0);
}

static void
test_rpc_hot_set(void **state)
{
	static const struct {
		const char *params;
		const char *want; /* the params object after the change */
	} cases[] = {
	        {"{'threshold': 0.05}",
	         "{'threshold': 0.05, 'threshold_low': 0.005, 'epsilon': 0.25, "
	         "'demote_windows': 5, 'window_ms': 100}"},
	        {"{'threshold': 1, 'threshold_low': 1}",
	         "{'threshold': 1, 'threshold_low': 1, 'epsilon': 0.25, 'demote_windows': 5, "
	         "'window_ms': 100}"},
	        {"{'threshold': 0.2, 'threshold_low': 0.1, 'epsilon': 0.001, 'demote_windows': 1, "
	         "'window_ms': 10}",
	         "{'threshold': 0.2, 'threshold_low': 0.1, 'epsilon': 0.001, 'demote_windows': 1, "
	         "'window_ms': 10}"},
	        {"{'epsilon': 100, 'demote_windows': 1000, 'window_ms': 60000}",
	         "{'threshold': 0.2, 'threshold_low': 0.1, 'epsilon': 100, 'demote_windows': 1000, "
	         "'window_ms': 60000}"},
	        /* Alone, threshold_low is judged against the current threshold by the daemon. */
	        {"{'threshold_low': 0.15}",
	         "{'threshold': 0.2, 'threshold_low': 0.15, 'epsilon': 100, 'demote_windows': "
	         "1000, 'window_ms': 60000}"},
	        /* The bounds of margin and ewma_alpha are accepted. */
	        {"{'margin': 0, 'ewma_alpha': 1}",
	         "{'threshold': 0.2, 'threshold_low': 0.15, 'epsilon': 100, 'demote_windows': "
	         "1000, 'window_ms': 60000, 'margin': 0, 'ewma_alpha': 1}"},
	        {"{'margin': 0.5, 'ewma_alpha': 0.01}",
	         "{'threshold': 0.2, 'threshold_low': 0.15, 'epsilon': 100, 'demote_windows': "
	         "1000, 'window_ms': 60000, 'margin': 0.5, 'ewma_alpha': 0.01}"},
	        /* sample: a shift at either bound, or "auto". */
	        {"{'sample': 0}",
	         "{'threshold': 0.2, 'threshold_low': 0.15, 'epsilon': 100, 'demote_windows': "
	         "1000, 'window_ms': 60000, 'margin': 0.5, 'ewma_alpha': 0.01, 'sample': 0}"},
	        {"{'sample': 8, 'threshold': 0.3}",
	         "{'threshold': 0.3, 'threshold_low': 0.15, 'epsilon': 100, 'demote_windows': "
	         "1000, 'window_ms': 60000, 'margin': 0.5, 'ewma_alpha': 0.01, 'sample': 8}"},
	        {"{'sample': 'auto'}",
	         "{'threshold': 0.3, 'threshold_low': 0.15, 'epsilon': 100, 'demote_windows': "
	         "1000, 'window_ms': 60000, 'margin': 0.5, 'ewma_alpha': 0.01, 'sample': 'auto'}"},
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[512];
		json_t *r, *res, *sent = parse_sq(cases[i].params), *want = parse_sq(cases[i].want);

		snprintf(line, sizeof(line), REQ("hot_set", "%s"), cases[i].params);
		res = call_ok(f, line, &r);
		if (!json_equal(res, want))
			fail_msg("hot_set %s: result %s, want %s", cases[i].params, show(res),
			         show(want));
		/* The op saw exactly the params sent. */
		assert_true(json_equal(f->hot.set_seen, sent));
		assert_int_equal(f->hot.set_calls, (int)i + 1);
		json_decref(r);
		json_decref(sent);
		json_decref(want);
	}
	assert_int_equal(f->apply_calls, 0);
	/* A notification is executed, not answered. */
	assert_null(rpc(f, "{'jsonrpc': '2.0', 'method': 'hot_set', 'params': {'window_ms': 50}}"));
	assert_int_equal(f->hot.set_calls, (int)(sizeof(cases) / sizeof(cases[0])) + 1);
	assert_int_equal(json_integer_value(json_object_get(f->hot.params, "window_ms")), 50);
}

/* Without the hot-key ops every hot_* method says so, whatever its params. */
static void
test_rpc_hot_disabled(void **state)
{
	static const char *const lines[] = {
	        REQ0("hot_list"),
	        REQ("hot_list", "{'x': 1}"),
	        REQ0("hot_events"),
	        REQ("hot_set", "{'threshold': 0.1}"),
	        REQ("hot_set", "{'threshold': 7}"),
	        REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}"),
	        REQ("hot_unpin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}"),
	        REQ0("hot_pin"),
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		json_t *r = rpc(f, lines[i]);

		assert_error(r, LB_RPC_ERR_INTERNAL,
		             "hot keys are disabled (hot.enabled is false)");
		json_decref(r);
	}
	assert_int_equal(f->apply_calls, 0);
}

/* One op missing is enough for its methods to say so; hot_set also needs hot_list. */
static void
test_rpc_hot_partly_disabled(void **state)
{
	struct fake *f = *state;
	json_t *r;

	f->ops.hot_list = NULL;
	r = rpc(f, REQ("hot_set", "{'threshold': 0.1}"));
	assert_error(r, LB_RPC_ERR_INTERNAL, "hot keys are disabled");
	json_decref(r);
	assert_int_equal(f->hot.set_calls, 0);
	r = rpc(f, REQ0("hot_events"));
	result_of(r);
	json_decref(r);
}

/* Reads may join a batch; changes to runtime state may not (nothing could roll them back). */
static void
test_rpc_hot_batch(void **state)
{
	static const char *const reads[] = {REQ0("hot_list"), REQ0("version"), REQ0("hot_events"),
	                                    NULL};
	static const char *const changes[] = {
	        REQ("hot_set", "{'threshold': 0.1}"),
	        REQ("hot_pin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}"),
	        REQ("hot_unpin", "{'vip': " VREF ", 'key': {'src': '198.51.100.7', 'sport': 1}}"),
	};
	struct fake *f = *state;
	json_t *r = rpc_batch(f, reads);

	assert_int_equal(json_array_size(r), 3);
	for (size_t i = 0; i < 3; i++)
		result_of(json_array_get(r, i));
	json_decref(r);
	assert_int_equal(f->hot.list_calls, 1);
	assert_int_equal(f->hot.events_calls, 1);

	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		const char *calls[] = {REQ("vip_add", ADD_VIP), changes[i], NULL};
		const char *alone[] = {changes[i], NULL};
		json_t *before = config_doc(f), *after;

		r = rpc_batch(f, calls);
		assert_int_equal(json_array_size(r), 2);
		assert_error(json_array_get(r, 0), LB_RPC_ERR_ABORTED, "transaction aborted");
		assert_error(json_array_get(r, 1), IR, "invalid request: hot_");
		assert_id(json_array_get(r, 1), "1");
		json_decref(r);
		/* Even alone in an array. */
		r = rpc_batch(f, alone);
		assert_error(json_array_get(r, 0), IR, "invalid request: hot_");
		json_decref(r);
		after = config_doc(f);
		assert_true(json_equal(before, after));
		json_decref(before);
		json_decref(after);
	}
	assert_int_equal(f->hot.set_calls, 0);
	assert_int_equal(f->hot.pin_calls, 0);
	assert_int_equal(f->apply_calls, 0);
}

int
main(void)
{
	struct CMUnitTest
	        tests[N_ROWS(hot_err_cases) + N_ROWS(hot_pin_cases) + N_ROWS(hot_errno_cases) + 8];
	size_t n = 0;

	n = ADD_ROWS(tests, n, test_rpc_hot_rejects, hot_row_setup, hot_err_cases);
	n = ADD_ROWS(tests, n, test_rpc_hot_pin, hot_row_setup, hot_pin_cases);
	n = ADD_ROWS(tests, n, test_rpc_hot_errno, hot_row_setup, hot_errno_cases);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_rpc_hot_list_events,
	                                                                hot_setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_rpc_hot_set, hot_setup,
	                                                                teardown);
	tests[n++] = (struct CMUnitTest)RPC_TEST(test_rpc_hot_disabled);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(
	        test_rpc_hot_partly_disabled, hot_setup, teardown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_setup_teardown(test_rpc_hot_batch,
	                                                                hot_setup, teardown);
	return _cmocka_run_group_tests("rpc_hot", tests, n, NULL, NULL);
}
