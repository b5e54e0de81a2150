/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness for the control request handler: any bytes are one request
 * line for lb_rpc_handle(), against a fake daemon (struct lb_rpc_ops) that
 * keeps its configuration in memory: apply adopts the new configuration once
 * lb_snapshot_build() succeeds on it, stats is {}, save has no state file
 * (-ENOENT). Every input starts from the same configuration.
 *
 * Checks: a reply, when there is one, is one line of valid JSON made of
 * JSON-RPC 2.0 responses (an object, or an array of them for a batch), each
 * with exactly one of result and error; and whatever the handler applied is
 * still a configuration the daemon can run and reload: VIP and backend ids
 * unique and inside the counter arrays, and lb_config_to_json (what the state
 * file holds) accepted by lb_config_from_json with the same VIPs and
 * backends. Everything is freed (LeakSanitizer).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "control/model/config.h"
#include "fuzz.h"
#include "control/rpc/rpc.h"
#include "control/build/snapshot_build.h"

/* Small tables: every applied change rebuilds the snapshot. */
static const char g_initial[] =
        "{\"encap\": {\"source_v4\": \"10.0.0.1\", \"source_v6\": \"fd00::1\", "
        "\"next_hop_mac\": \"02:00:00:00:00:01\"}, \"maglev\": {\"table_size\": 251, \"seed\": "
        "\"fuzz-rpc\"}, \"vips\": ["
        "{\"address\": \"192.0.2.10\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["
        "{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\", \"weight\": 2, \"name\": "
        "\"b2\"}, {\"address\": \"10.1.0.3\", \"state\": \"draining\"}]},"
        "{\"address\": \"2001:db8::10\", \"port\": 443, \"protocol\": \"tcp\", \"encap\": "
        "\"gue\", \"key\": \"src_ip\", \"backends\": [{\"address\": \"fd01::1\"}, {\"address\": "
        "\"10.4.0.1\", \"state\": \"down\"}]},"
        "{\"address\": \"192.0.2.20\", \"port\": 0, \"protocol\": \"udp\"}]}";

struct fake {
	struct lb_config *cfg;
	struct lb_snapshot *snap;
	uint64_t generation;
	unsigned int applied; /* since the last reset */
};

static struct fake g_fake;

static const struct lb_config *
fake_config(void *arg)
{
	return ((struct fake *)arg)->cfg;
}

static int
fake_apply(void *arg, struct lb_config *next, char *err, size_t errlen)
{
	struct fake *f = arg;
	struct lb_snapshot *s;

	FUZZ_CHECK(next != NULL, "apply(NULL)");
	FUZZ_CHECK(next != f->cfg, "apply of the running configuration itself");
	s = lb_snapshot_build(next, f->generation + 1, err, errlen);
	if (s == NULL) {
		lb_config_free(next);
		return -ENOMEM;
	}
	lb_snapshot_free(f->snap);
	lb_config_free(f->cfg);
	f->snap = s;
	f->cfg = next;
	f->generation++;
	f->applied++;
	return 0;
}

static json_t *
fake_stats(void *arg)
{
	(void)arg;
	return json_object();
}

static const struct lb_snapshot *
fake_snapshot(void *arg)
{
	return ((struct fake *)arg)->snap;
}

static int
fake_save(void *arg, char *err, size_t errlen)
{
	(void)arg;
	snprintf(err, errlen, "no state file configured");
	return -ENOENT;
}

static const struct lb_rpc_ops g_ops = {
        .arg = &g_fake,
        .config = fake_config,
        .apply = fake_apply,
        .stats = fake_stats,
        .snapshot = fake_snapshot,
        .save = fake_save,
};

static void
fake_reset(void)
{
	char err[256];
	json_error_t je;
	json_t *root;

	lb_snapshot_free(g_fake.snap);
	lb_config_free(g_fake.cfg);
	root = json_loads(g_initial, 0, &je);
	FUZZ_CHECK(root != NULL, "initial config: %s", je.text);
	g_fake.cfg = lb_config_from_json(root, err, sizeof(err));
	json_decref(root);
	FUZZ_CHECK(g_fake.cfg != NULL, "initial config: %s", err);
	g_fake.generation = 1;
	g_fake.snap = lb_snapshot_build(g_fake.cfg, g_fake.generation, err, sizeof(err));
	FUZZ_CHECK(g_fake.snap != NULL, "initial snapshot: %s", err);
	g_fake.applied = 0;
}

static void
check_response(const json_t *r)
{
	const json_t *res, *error, *id;

	FUZZ_CHECK(json_is_object(r), "a reply element is not an object");
	FUZZ_CHECK(json_is_string(json_object_get(r, "jsonrpc")) &&
	                   strcmp(json_string_value(json_object_get(r, "jsonrpc")), "2.0") == 0,
	           "reply without \"jsonrpc\": \"2.0\"");
	id = json_object_get(r, "id");
	FUZZ_CHECK(id != NULL && (json_is_string(id) || json_is_number(id) || json_is_null(id)),
	           "reply without a valid id");
	res = json_object_get(r, "result");
	error = json_object_get(r, "error");
	FUZZ_CHECK((res == NULL) != (error == NULL), "reply needs exactly one of result and error");
	if (error != NULL) {
		FUZZ_CHECK(json_is_object(error) &&
		                   json_is_integer(json_object_get(error, "code")) &&
		                   json_is_string(json_object_get(error, "message")),
		           "error without an integer code and a message");
	}
}

/*
 * RFC 8259, 6, as a state machine: 1 sign seen, 2 zero, 3 int digits, 4 point,
 * 5 frac digits, 6 e, 7 exponent sign, 8 exponent digits; 2, 3, 5, 8 accept.
 */
static bool
is_json_number(const char *p, size_t n)
{
	int st = 0;

	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		bool digit = c >= '0' && c <= '9';

		if ((st == 0 && c == '-'))
			st = 1;
		else if ((st == 0 || st == 1) && c == '0')
			st = 2;
		else if ((st == 0 || st == 1) && digit)
			st = 3;
		else if (st == 3 && digit)
			st = 3;
		else if ((st == 2 || st == 3) && c == '.')
			st = 4;
		else if ((st == 4 || st == 5) && digit)
			st = 5;
		else if ((st == 2 || st == 3 || st == 5) && (c == 'e' || c == 'E'))
			st = 6;
		else if (st == 6 && (c == '+' || c == '-'))
			st = 7;
		else if ((st == 6 || st == 7 || st == 8) && digit)
			st = 8;
		else
			return false;
	}
	return st == 2 || st == 3 || st == 5 || st == 8;
}

/*
 * The reply with every number jansson cannot hold (an id beyond int64 or
 * double, echoed verbatim: valid JSON) replaced by 0; a number token that is
 * not a JSON number fails the check. NULL when there is none.
 */
static char *
without_big_numbers(const char *reply)
{
	size_t len = strlen(reply), o = 0;
	char *s = malloc(len + 1);
	bool any = false;

	FUZZ_CHECK(s != NULL, "out of memory");
	for (size_t i = 0; i < len;) {
		size_t j = i;

		if (reply[i] == '"') {
			for (j++; j < len && reply[j] != '"'; j++)
				if (reply[j] == '\\')
					j++;
			j = j < len ? j + 1 : len;
		} else if (reply[i] == '-' || (reply[i] >= '0' && reply[i] <= '9')) {
			json_error_t je;
			json_t *v;

			while (j < len && strchr("0123456789+-.eE", reply[j]) != NULL)
				j++;
			FUZZ_CHECK(is_json_number(reply + i, j - i),
			           "reply holds a number that is not JSON: %.*s", (int)(j - i),
			           reply + i);
			v = json_loadb(reply + i, j - i, JSON_DECODE_ANY, &je);
			if (v == NULL) {
				s[o++] = '0';
				any = true;
				i = j;
				continue;
			}
			json_decref(v);
		} else {
			j++;
		}
		memcpy(s + o, reply + i, j - i);
		o += j - i;
		i = j;
	}
	s[o] = '\0';
	if (!any) {
		free(s);
		return NULL;
	}
	return s;
}

static void
check_reply(const char *reply)
{
	json_error_t je;
	char *copy = NULL;
	json_t *r;

	FUZZ_CHECK(strchr(reply, '\n') == NULL, "reply spans lines: %s", reply);
	r = json_loads(reply, 0, &je);
	if (r == NULL && json_error_code(&je) == json_error_numeric_overflow) {
		copy = without_big_numbers(reply);
		if (copy != NULL)
			r = json_loads(copy, 0, &je);
	}
	FUZZ_CHECK(r != NULL, "reply is not JSON (%s): %s", je.text, reply);
	if (json_is_array(r)) {
		size_t i;
		json_t *e;

		FUZZ_CHECK(json_array_size(r) > 0, "empty batch reply");
		json_array_foreach (r, i, e)
			check_response(e);
	} else {
		check_response(r);
	}
	json_decref(r);
	free(copy);
}

/* What the daemon runs after the handler: ids fit the counters, the state file reloads. */
static void
check_config(const struct lb_config *cfg)
{
	static uint8_t seen_be[LB_MAX_BACKENDS];
	static uint8_t seen_vip[LB_MAX_VIPS];
	struct lb_config *back;
	char err[512];
	json_t *doc;

	FUZZ_CHECK(cfg->n_vips <= LB_MAX_VIPS, "%u VIPs", cfg->n_vips);
	memset(seen_be, 0, sizeof(seen_be));
	memset(seen_vip, 0, sizeof(seen_vip));
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *v = &cfg->vips[i];

		FUZZ_CHECK(v->id < LB_MAX_VIPS && !seen_vip[v->id],
		           "vips[%u]: id %u reused or too big", i, v->id);
		seen_vip[v->id] = 1;
		for (uint32_t j = 0; j < v->n_backends; j++) {
			const struct lb_cfg_backend *b = &v->backends[j];

			FUZZ_CHECK(b->id < LB_MAX_BACKENDS && !seen_be[b->id] && b->gen != 0,
			           "vips[%u].backends[%u]: id %u gen %u reused, too big or unset",
			           i, j, b->id, b->gen);
			seen_be[b->id] = 1;
		}
	}

	doc = lb_config_to_json(cfg);
	FUZZ_CHECK(doc != NULL, "lb_config_to_json");
	err[0] = '\0';
	back = lb_config_from_json(doc, err, sizeof(err));
	FUZZ_CHECK(back != NULL, "applied configuration does not reload: %s", err);
	FUZZ_CHECK(back->n_vips == cfg->n_vips, "reload: %u VIPs, was %u", back->n_vips,
	           cfg->n_vips);
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct lb_cfg_vip *a = &cfg->vips[i], *b = &back->vips[i];

		FUZZ_CHECK(a->af == b->af && memcmp(&a->addr, &b->addr, 16) == 0 &&
		                   a->port == b->port && a->proto == b->proto &&
		                   a->key_mode == b->key_mode && a->encap == b->encap &&
		                   a->n_backends == b->n_backends,
		           "reload: vips[%u] differs", i);
		for (uint32_t j = 0; j < a->n_backends; j++) {
			const struct lb_cfg_backend *x = &a->backends[j], *y = &b->backends[j];

			FUZZ_CHECK(x->af == y->af && memcmp(&x->addr, &y->addr, 16) == 0 &&
			                   x->weight == y->weight && x->state == y->state &&
			                   strcmp(x->name, y->name) == 0,
			           "reload: vips[%u].backends[%u] differs", i, j);
		}
	}
	lb_config_free(back);
	json_decref(doc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *reply;

	if (g_fake.cfg == NULL || g_fake.applied > 0)
		fake_reset();
	reply = lb_rpc_handle(&g_ops, (const char *)data, size);
	if (reply != NULL)
		check_reply(reply);
	free(reply);
	if (g_fake.applied > 0)
		check_config(g_fake.cfg);
	return 0;
}
