/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the hot object's parameter table (control/model/params.c):
 * every hot-key parameter set at and just beyond each of its bounds through
 * the configuration file (lb_config_from_json), the control socket (hot_set
 * on rpc_fixture.c's daemon), a SIGHUP reload (lb_config_load_file of a file
 * on disk, then lb_hot_window_configure on a running controller, as
 * control.c's reload does) and the controller itself (lb_hotkey_set_params)
 * must get one verdict, and a refusal must name the field. The expected
 * verdicts are the ranges docs/operations.md and docs/control-protocol.md
 * state, written here; nothing is read from the table under test. Also: the
 * document form of "auto", and numbers written at their shortest round-trip
 * precision that read back to the same values.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/model/config.h"
#include "control/model/json_text.h"
#include "control/hot/hotkey.h"
#include "control/rpc/rpc.h"
#include "control/runtime/hot_window.h"
#include "rpc_fixture.h"

/*
 * One value of one parameter. sq: the value as single-quoted JSON. ok: the
 * documented verdict. ctl: the value also goes to the controller (whose
 * struct keeps 0 for "auto"/"default" and a negative margin for "none", so
 * those encodings are not values to judge there); ctl_value is what it is
 * given.
 */
struct bound_row {
	const char *name;
	const char *param;
	const char *sq;
	bool ok;
	bool ctl;
	double ctl_value;
};

#define ROW(param, sq, ok)                                                                         \
	{                                                                                          \
		param " " sq, param, sq, ok, false, 0                                              \
	}
#define ROWC(param, sq, ok, v)                                                                     \
	{                                                                                          \
		param " " sq, param, sq, ok, true, v                                               \
	}

/* The documented ranges: docs/operations.md "The hot object", docs/control-protocol.md hot_set. */
static const struct bound_row rows[] = {
        /* window_ms: integer 10-60000 (ms) */
        ROW("window_ms", "10", true),
        ROW("window_ms", "9", false),
        ROW("window_ms", "60000", true),
        ROW("window_ms", "60001", false),
        ROW("window_ms", "100.5", false),
        /* threshold: "auto" or a number in (0, 1] */
        ROW("threshold", "'auto'", true),
        ROWC("threshold", "1e-9", true, 1e-9),
        ROW("threshold", "0", false),
        ROWC("threshold", "-1e-9", false, -1e-9),
        ROWC("threshold", "1", true, 1),
        ROWC("threshold", "1.000001", false, 1.000001),
        ROW("threshold", "'fast'", false),
        /* threshold_low: "auto" or a number in (0, 1] (with threshold "auto": no other bound) */
        ROW("threshold_low", "'auto'", true),
        ROWC("threshold_low", "1e-9", true, 1e-9),
        ROW("threshold_low", "0", false),
        ROWC("threshold_low", "-1e-9", false, -1e-9),
        ROWC("threshold_low", "1", true, 1),
        ROWC("threshold_low", "1.000001", false, 1.000001),
        /* epsilon: 0.001-100 */
        ROWC("epsilon", "0.001", true, 0.001),
        ROWC("epsilon", "0.000999", false, 0.000999),
        ROWC("epsilon", "100", true, 100),
        ROWC("epsilon", "100.001", false, 100.001),
        /* margin: 0-0.5 (0: none) */
        ROW("margin", "0", true),
        ROW("margin", "-0.001", false),
        ROWC("margin", "0.5", true, 0.5),
        ROWC("margin", "0.501", false, 0.501),
        /* ewma_alpha: 0.01-1 */
        ROWC("ewma_alpha", "0.01", true, 0.01),
        ROWC("ewma_alpha", "0.0099", false, 0.0099),
        ROWC("ewma_alpha", "1", true, 1),
        ROWC("ewma_alpha", "1.001", false, 1.001),
        /* demote_windows: integer 1-1000 */
        ROWC("demote_windows", "1", true, 1),
        ROW("demote_windows", "0", false),
        ROWC("demote_windows", "1000", true, 1000),
        ROWC("demote_windows", "1001", false, 1001),
        /* sample: "auto" or a shift 0-8 */
        ROW("sample", "'auto'", true),
        ROW("sample", "0", true),
        ROW("sample", "-1", false),
        ROW("sample", "8", true),
        ROW("sample", "9", false),
        ROW("sample", "'fast'", false),
};

/* Parameters the socket refuses whatever the value: restart-only or the file's alone. */
static const struct bound_row file_only_rows[] = {
        ROW("weight", "'packets'", true), ROW("weight", "'bytes'", true),
        ROW("weight", "'bits'", false),   ROW("enabled", "true", true),
        ROW("enabled", "false", true),    ROW("enabled", "1", false),
};

#define HOT_ENCAP                                                                                  \
	"'encap': {'source_v4': '192.0.2.1', 'next_hop_mac': '02:00:5e:00:53:01'}, "               \
	"'vips': [{'address': '192.0.2.10', 'port': 80, 'protocol': 'tcp', "                       \
	"'backends': [{'address': '10.1.0.1'}]}]"

/* The document {encap, vips, hot: {param: value}} as single-quoted JSON. */
static void
doc_sq(char *buf, size_t len, const struct bound_row *r)
{
	snprintf(buf, len, "{" HOT_ENCAP ", 'hot': {'%s': %s}}", r->param, r->sq);
}

/* The refusal names the field: it starts with "path." param and a colon. */
static void
assert_names(const char *msg, const char *path, const char *param)
{
	char want[128];

	snprintf(want, sizeof(want), "%s%s%s: ", path, *path ? "." : "", param);
	if (strncmp(msg, want, strlen(want)) != 0)
		fail_msg("message \"%s\" does not start with \"%s\"", msg, want);
}

/* Through the file: lb_config_from_json. */
static bool
verdict_file(const struct bound_row *r)
{
	char doc[1024], err[ERR_LEN] = "";
	json_t *j;
	struct lb_config *cfg;

	doc_sq(doc, sizeof(doc), r);
	j = parse_sq(doc);
	cfg = lb_config_from_json(j, err, sizeof(err));
	json_decref(j);
	if (cfg == NULL) {
		assert_names(err, "hot", r->param);
		return false;
	}
	lb_config_free(cfg);
	return true;
}

/* Through SIGHUP: the file on disk loaded, then handed to the running controller. */
static bool
verdict_reload(const struct bound_row *r)
{
	char doc[1024], path[] = "/tmp/spw-params-XXXXXX", err[ERR_LEN] = "";
	struct lb_hot_window hw;
	struct lb_config *cfg;
	char *text;
	json_t *j;
	FILE *fp;
	int fd, rc;

	doc_sq(doc, sizeof(doc), r);
	j = parse_sq(doc);
	text = json_dumps(j, 0);
	json_decref(j);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	free(text);
	cfg = lb_config_load_file(path, err, sizeof(err));
	unlink(path);
	if (cfg == NULL) {
		assert_names(err, "hot", r->param);
		return false;
	}
	memset(&hw, 0, sizeof(hw));
	hw.hot = lb_hotkey_create(NULL);
	assert_non_null(hw.hot);
	rc = lb_hot_window_configure(&hw, cfg);
	lb_hotkey_free(hw.hot);
	lb_config_free(cfg);
	return rc == 0;
}

/* Through the socket: hot_set {param: value}; a refusal is -32602 naming the field. */
static bool
verdict_socket(struct fake *f, const struct bound_row *r)
{
	char line[512];
	json_t *reply, *e;
	bool ok;

	snprintf(line, sizeof(line), REQ("hot_set", "{'%s': %s}"), r->param, r->sq);
	reply = rpc(f, line);
	assert_non_null(reply);
	e = json_object_get(reply, "error");
	ok = e == NULL;
	if (!ok) {
		assert_int_equal(json_integer_value(json_object_get(e, "code")),
		                 LB_RPC_ERR_INVALID_PARAMS);
		assert_names(json_string_value(json_object_get(e, "message")), "", r->param);
	}
	json_decref(reply);
	return ok;
}

/* The controller's own check of a value it holds. */
static bool
verdict_controller(const struct bound_row *r)
{
	struct lb_hot_params p = {0};
	struct lb_hotkey *h = lb_hotkey_create(NULL);
	int rc;

	assert_non_null(h);
	if (strcmp(r->param, "threshold") == 0)
		p.threshold = r->ctl_value;
	else if (strcmp(r->param, "threshold_low") == 0)
		p.threshold_low = r->ctl_value;
	else if (strcmp(r->param, "epsilon") == 0)
		p.epsilon = r->ctl_value;
	else if (strcmp(r->param, "margin") == 0)
		p.margin = r->ctl_value;
	else if (strcmp(r->param, "ewma_alpha") == 0)
		p.ewma_alpha = r->ctl_value;
	else if (strcmp(r->param, "demote_windows") == 0)
		p.demote_windows = (uint32_t)r->ctl_value;
	else
		fail_msg("no controller field for %s", r->param);
	rc = lb_hotkey_set_params(h, &p);
	lb_hotkey_free(h);
	return rc == 0;
}

/* A fake hot_set that takes what the method lets through; hot_list answers {}. */
static int
ok_hot_set(void *arg, const json_t *params, char *err, size_t errlen)
{
	(void)arg;
	(void)params;
	(void)err;
	(void)errlen;
	return 0;
}

static json_t *
ok_hot_list(void *arg)
{
	(void)arg;
	return json_pack("{s:{}}", "params");
}

static struct fake *
fake_hot(void)
{
	struct fake *f = fake_new(base_config);

	f->ops.hot_set = ok_hot_set;
	f->ops.hot_list = ok_hot_list;
	return f;
}

static void
test_params_bounds_agree(void **state)
{
	const struct bound_row *r = *state;
	struct fake *f = fake_hot();
	bool file = verdict_file(r), reload = verdict_reload(r), sock = verdict_socket(f, r);

	fake_free(f);
	if (file != r->ok || reload != r->ok || sock != r->ok)
		fail_msg("%s: want %s; file %s, reload %s, socket %s", r->name,
		         r->ok ? "accepted" : "refused", file ? "accepted" : "refused",
		         reload ? "accepted" : "refused", sock ? "accepted" : "refused");
	if (r->ctl && verdict_controller(r) != r->ok)
		fail_msg("%s: want %s; the controller %s", r->name, r->ok ? "accepted" : "refused",
		         r->ok ? "refused" : "accepted");
}

static void
test_params_file_only(void **state)
{
	const struct bound_row *r = *state;
	struct fake *f = fake_hot();
	bool file = verdict_file(r), reload = verdict_reload(r), sock = verdict_socket(f, r);

	fake_free(f);
	if (file != r->ok || reload != r->ok)
		fail_msg("%s: want %s; file %s, reload %s", r->name, r->ok ? "accepted" : "refused",
		         file ? "accepted" : "refused", reload ? "accepted" : "refused");
	assert_false(sock);
}

/* threshold_low above a numeric threshold: refused on every path, naming threshold_low. */
static void
test_params_low_above_threshold(void **state)
{
	static const char doc[] =
	        "{" HOT_ENCAP ", 'hot': {'threshold': 0.1, 'threshold_low': 0.2}}";
	char err[ERR_LEN] = "";
	struct fake *f = fake_hot();
	json_t *j = parse_sq(doc), *reply;
	struct lb_config *cfg = lb_config_from_json(j, err, sizeof(err));
	struct lb_hot_params p = {.threshold = 0.1, .threshold_low = 0.2};
	struct lb_hotkey *h = lb_hotkey_create(NULL);

	(void)state;
	json_decref(j);
	assert_null(cfg);
	assert_names(err, "hot", "threshold_low");
	reply = rpc(f, REQ("hot_set", "{'threshold': 0.1, 'threshold_low': 0.2}"));
	assert_error(reply, LB_RPC_ERR_INVALID_PARAMS, "threshold_low: ");
	json_decref(reply);
	fake_free(f);
	assert_int_equal(lb_hotkey_set_params(h, &p), -EINVAL);
	/* Under threshold "auto" there is no number to be above. */
	p.threshold = 0;
	assert_int_equal(lb_hotkey_set_params(h, &p), 0);
	lb_hotkey_free(h);
}

/* The hot object of document doc gives "auto" for param. */
static void
assert_auto(const json_t *doc, const char *param)
{
	const json_t *v = json_object_get(json_object_get(doc, "hot"), param);

	if (!json_is_string(v) || strcmp(json_string_value(v), "auto") != 0)
		fail_msg("hot.%s is %s, not \"auto\"", param, show(v));
}

/* The defaults, and what the document gives back: "auto" for auto, numbers that read back equal. */
static void
test_params_document_form(void **state)
{
	static const char doc_auto[] = "{" HOT_ENCAP "}";
	static const char doc_num[] =
	        "{" HOT_ENCAP ", 'hot': {'threshold': 0.3, 'epsilon': 0.1, 'margin': 0.07}}";
	char err[ERR_LEN] = "";
	json_t *j = parse_sq(doc_auto), *out, *back;
	struct lb_config *cfg = lb_config_from_json(j, err, sizeof(err)), *cfg2;
	struct lb_hot_params p;
	struct lb_hotkey *h;
	char *text;

	(void)state;
	json_decref(j);
	assert_non_null(cfg);
	out = lb_config_to_json(cfg);
	assert_auto(out, "threshold");
	assert_auto(out, "threshold_low");
	assert_auto(out, "sample");
	/* The document loads again to the same configuration. */
	cfg2 = lb_config_from_json(out, err, sizeof(err));
	assert_non_null(cfg2);
	assert_true(cfg2->hot.threshold == 0 && cfg2->hot.threshold_low == 0);
	lb_config_free(cfg2);
	json_decref(out);
	lb_config_free(cfg);

	/* A controller with no parameters keeps "auto" (0), and no threshold_low under it. */
	h = lb_hotkey_create(NULL);
	assert_non_null(h);
	lb_hotkey_get_params(h, &p);
	assert_true(p.threshold == 0 && p.threshold_low == 0 && p.epsilon == 0.25 &&
	            p.ewma_alpha == 0.5 && p.demote_windows == 5);
	lb_hotkey_free(h);

	j = parse_sq(doc_num);
	cfg = lb_config_from_json(j, err, sizeof(err));
	json_decref(j);
	assert_non_null(cfg);
	out = lb_config_to_json(cfg);
	/* As the state file and config_get write it: shortest round-trip numbers. */
	text = lb_json_text_dumps(out, JSON_INDENT(2));
	assert_non_null(text);
	assert_non_null(strstr(text, "\"threshold\": 0.3,"));
	assert_non_null(strstr(text, "\"threshold_low\": 0.15\n"));
	assert_non_null(strstr(text, "\"margin\": 0.07,"));
	back = json_loads(text, 0, NULL);
	assert_non_null(back);
	assert_true(json_real_value(json_object_get(json_object_get(back, "hot"), "threshold")) ==
	            0.3);
	assert_true(json_real_value(json_object_get(json_object_get(back, "hot"),
	                                            "threshold_low")) == 0.15);
	assert_true(json_real_value(json_object_get(json_object_get(back, "hot"), "margin")) ==
	            0.07);
	free(text);
	json_decref(back);
	json_decref(out);
	lb_config_free(cfg);
}

int
main(void)
{
	struct CMUnitTest tests[N_ROWS(rows) + N_ROWS(file_only_rows) + 4];
	size_t n = 0;

	for (size_t i = 0; i < N_ROWS(rows); i++)
		tests[n++] = (struct CMUnitTest)cmocka_unit_test_prestate(test_params_bounds_agree,
		                                                          (void *)&rows[i]);
	for (size_t i = 0; i < N_ROWS(file_only_rows); i++)
		tests[n++] = (struct CMUnitTest)cmocka_unit_test_prestate(
		        test_params_file_only, (void *)&file_only_rows[i]);
	for (size_t i = 0; i < n; i++)
		tests[i].name = ((const struct bound_row *)tests[i].initial_state)->name;
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_params_low_above_threshold);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_params_document_form);
	return _cmocka_run_group_tests("params", tests, n, NULL, NULL);
}
