/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lb_state_text_encode against Jansson's encoding of the whole document
 * (lb_json_text_dumps(lb_config_to_json(cfg), JSON_INDENT(2)) + "\n", the state
 * file's format): equal byte for byte over a seeded sequence of changes the
 * test applies to its own document, with exactly the VIPs it changed encoded
 * anew each time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "control/model/json_text.h"
#include "control/model/state_text.h"

#include "config_fixture.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33) % n;
}

static unsigned int vip_serial;

/* A VIP document with a fresh address (IPv4 or IPv6) and 1 to 4 backends. */
static json_t *
new_vip(void)
{
	unsigned int k = vip_serial++;
	char addr[64];
	json_t *bes = json_array();
	json_t *v;

	if (k % 5 == 4)
		snprintf(addr, sizeof(addr), "2001:db8::%x", k + 1);
	else
		snprintf(addr, sizeof(addr), "198.51.%u.%u", k / 250, 1 + k % 250);
	for (uint32_t j = 0, n = 1 + rnd(4); j < n; j++) {
		char b[64];
		json_t *be;

		snprintf(b, sizeof(b), k % 5 == 4 ? "2001:db8:1::%x" : "10.1.%u.%u",
		         k % 5 == 4 ? k * 8 + j + 1 : k, k % 5 == 4 ? 0 : j + 1);
		be = json_pack("{s:s, s:i}", "address", b, "weight", (json_int_t)(1 + rnd(9)));
		if (j == 1) {
			snprintf(b, sizeof(b), "web-%u", k);
			json_object_set_new(be, "name", json_string(b));
		}
		json_array_append_new(bes, be);
	}
	v = json_pack("{s:s, s:i, s:s, s:o}", "address", addr, "port", (json_int_t)(80 + k % 3),
	              "protocol", k % 2 ? "udp" : "tcp", "backends", bes);
	if (k % 7 == 3)
		json_object_set_new(v, "key", json_string("src_ip"));
	return v;
}

/* One change to one VIP of doc; returns how many VIPs it leaves changed (0 or 1). */
static unsigned int
change(json_t *vips)
{
	size_t n = json_array_size(vips);
	uint32_t what = n == 0 ? 0 : rnd(6);
	json_t *v, *bes, *be;

	if (what == 0) {
		json_array_append_new(vips, new_vip());
		return 1;
	}
	v = json_array_get(vips, rnd((uint32_t)n));
	bes = json_object_get(v, "backends");
	be = json_array_get(bes, rnd((uint32_t)json_array_size(bes)));
	switch (what) {
	case 1: /* remove a VIP: the others only move */
		json_array_remove(vips, (size_t)rnd((uint32_t)n));
		return 0;
	case 2: /* another weight */
		json_object_set_new(
		        be, "weight",
		        json_integer(json_integer_value(json_object_get(be, "weight")) % 9 + 10));
		return 1;
	case 3: /* draining <-> active */
		json_object_set_new(
		        be, "state",
		        json_string(json_object_get(be, "state") ? "active" : "draining"));
		if (json_object_get(be, "state") &&
		    strcmp(json_string_value(json_object_get(be, "state")), "active") == 0)
			json_object_del(be, "state");
		return 1;
	case 4: { /* a new name, unique in the document */
		char name[32];

		snprintf(name, sizeof(name), "renamed-%u", vip_serial++);
		json_object_set_new(be, "name", json_string(name));
		return 1;
	}
	default: /* a backend fewer, or one more */
		if (json_array_size(bes) > 1) {
			json_array_remove(bes, json_array_size(bes) - 1);
		} else {
			char b[64];

			snprintf(b, sizeof(b), "%s",
			         json_string_value(json_object_get(be, "address")));
			json_array_append_new(
			        bes, json_pack("{s:s}", "address",
			                       strchr(b, ':') ? "2001:db8:2::1" : "10.2.0.1"));
		}
		return 1;
	}
}

static void
check_equal(struct lb_state_text *st, const json_t *doc, unsigned int expect_encoded)
{
	char err[ERR_LEN];
	struct lb_config *cfg = lb_config_from_json(doc, err, sizeof(err)), *clone;
	json_t *ref_doc;
	char *ref, *text = NULL;
	size_t len = 0;
	unsigned int encoded = 99;

	if (cfg == NULL)
		fail_msg("config rejected: %s", err);
	ref_doc = lb_config_to_json(cfg);
	assert_non_null(ref_doc);
	ref = lb_json_text_dumps(ref_doc, JSON_INDENT(2));
	assert_non_null(ref);
	/*
	 * The daemon encodes clones (lb_config_clone), which hold no backend
	 * array at all for a VIP without backends.
	 */
	clone = lb_config_clone(cfg);
	assert_non_null(clone);
	assert_int_equal(lb_state_text_encode(st, clone, &text, &len, &encoded), 0);
	lb_config_free(clone);
	assert_int_equal(len, strlen(ref) + 1);
	assert_memory_equal(text, ref, strlen(ref));
	assert_int_equal(text[len - 1], '\n');
	assert_int_equal(text[len], '\0');
	assert_int_equal(encoded, expect_encoded);
	free(text);
	free(ref);
	json_decref(ref_doc);
	lb_config_free(cfg);
}

static json_t *
base_doc(void)
{
	return parse_sq("{'encap': {'source_v4': '192.0.2.1', 'source_v6': '2001:db8::1',"
	                " 'next_hop_mac': '02:00:5e:00:53:01'},"
	                " 'maglev': {'table_size': 251, 'seed': 's1'}, 'vips': []}");
}

/* No VIPs, then one: the empty array and the first element's indentation. */
static void
test_empty_and_one(void **state)
{
	struct lb_state_text *st = lb_state_text_new();
	json_t *doc = base_doc();

	(void)state;
	assert_non_null(st);
	check_equal(st, doc, 0);
	json_array_append_new(json_object_get(doc, "vips"), new_vip());
	check_equal(st, doc, 1);
	check_equal(st, doc, 0); /* nothing changed: nothing encoded */
	json_array_clear(json_object_get(doc, "vips"));
	check_equal(st, doc, 0);
	lb_state_text_free(st);
	json_decref(doc);
}

/*
 * A VIP whose last backend was removed: no backend array at all
 * (backends NULL, n_backends 0), encoded as "backends": [] and cached like
 * any other; adding a backend back encodes it anew.
 */
static void
test_vip_without_backends(void **state)
{
	struct lb_state_text *st = lb_state_text_new();
	json_t *doc = base_doc(), *vips = json_object_get(doc, "vips");
	json_t *v = new_vip();

	(void)state;
	assert_non_null(st);
	json_object_set_new(v, "backends", json_array());
	json_array_append_new(vips, v);
	json_array_append_new(vips, new_vip());
	check_equal(st, doc, 2);
	check_equal(st, doc, 0);
	json_array_append_new(json_object_get(v, "backends"),
	                      json_pack("{s:s}", "address", "10.3.0.1"));
	check_equal(st, doc, 1);
	json_array_clear(json_object_get(v, "backends"));
	check_equal(st, doc, 1);
	lb_state_text_free(st);
	json_decref(doc);
}

/* 400 seeded changes on up to ~60 VIPs: always Jansson's bytes, only changed VIPs encoded. */
static void
test_changes_match_jansson(void **state)
{
	struct lb_state_text *st = lb_state_text_new();
	json_t *doc = base_doc(), *vips = json_object_get(doc, "vips");

	(void)state;
	for (int i = 0; i < 40; i++)
		json_array_append_new(vips, new_vip());
	check_equal(st, doc, 40);
	for (int step = 0; step < 400; step++) {
		unsigned int changed = change(vips);

		check_equal(st, doc, changed);
	}
	/* A change of the document's other fields: every VIP's text stays. */
	json_object_set_new(json_object_get(doc, "maglev"), "seed", json_string("s2"));
	check_equal(st, doc, 0);
	lb_state_text_free(st);
	json_decref(doc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_empty_and_one),
	        cmocka_unit_test(test_vip_without_backends),
	        cmocka_unit_test(test_changes_match_jansson),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
