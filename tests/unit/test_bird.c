/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BIRD announcer, the synchronous part: which prefixes a snapshot announces
 * (usable backends only, one per address, IPv4 and IPv6), the include file's
 * text, the blocking exchange with BIRD's control socket against a fake BIRD
 * (bird_fixture.c) that accepts, refuses, stays silent, is not BIRD or is not
 * there, an include file that cannot be written, the withdrawal without an
 * announcer (lb_bird_withdraw), and rejected parameters.
 * The exchange on an event loop is test_bird_async.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "control/hooks/bird.h"
#include "bird_fixture.h"
#include "control/model/config.h"

static const char *
pfx(const struct lb_bird_prefix *p, char *buf)
{
	char a[64];

	lb_ip_to_str(p->af, &p->addr, a, sizeof(a));
	snprintf(buf, 80, "%s/%s", a, p->af == LB_AF_INET ? "32" : "128");
	return buf;
}

/* ---- tests ---- */

static void
test_bird_prefixes_usable_only(void **state)
{
	struct lb_snapshot *s = snap_of(CFG_MIXED);
	struct lb_bird_prefix p[16];
	char b[80];
	uint32_t n;

	(void)state;
	n = lb_bird_prefixes(s, p, 16);
	/* .1 once (port 80 usable, 443 draining), .3 (one active); not .2 (weight
	 * 0), .4 (no backend), fd00::11 (down); fd00::10 after every IPv4. */
	assert_int_equal(n, 3);
	assert_string_equal(pfx(&p[0], b), "10.100.0.1/32");
	assert_string_equal(pfx(&p[1], b), "10.100.0.3/32");
	assert_string_equal(pfx(&p[2], b), "fd00::10/128");
	/* max bounds the output. */
	assert_true(lb_bird_prefixes(s, p, 1) <= 1);
	assert_int_equal(lb_bird_prefixes(NULL, p, 16), 0);
	lb_snapshot_free(s);
}

/* An address whose backends are all draining stays announced: its established
 * flows still need the route. Down-only and weight-0-only addresses do not. */
static void
test_bird_prefixes_draining_only(void **state)
{
	struct lb_snapshot *s = snap_of(
	        "{" ENCAP " \"vips\": ["
	        "{\"address\": \"10.100.0.7\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["
	        "  {\"address\": \"10.1.0.1\", \"state\": \"draining\"},"
	        "  {\"address\": \"10.1.0.2\", \"state\": \"down\"}]},"
	        "{\"address\": \"10.100.0.8\", \"port\": 80, \"protocol\": \"tcp\", \"backends\": ["
	        "  {\"address\": \"10.1.0.1\", \"state\": \"down\"}]}]}");
	struct lb_bird_prefix p[4];
	char b[80];

	(void)state;
	assert_int_equal(lb_bird_prefixes(s, p, 4), 1);
	assert_string_equal(pfx(&p[0], b), "10.100.0.7/32");
	lb_snapshot_free(s);
}

static void
test_bird_render_text(void **state)
{
	struct lb_snapshot *s = snap_of(CFG_MIXED);
	struct lb_bird_prefix p[16];
	uint32_t n = lb_bird_prefixes(s, p, 16);
	char text[1024], small[40];
	size_t len;

	(void)state;
	len = lb_bird_render(p, n, text, sizeof(text));
	assert_int_equal(len, strlen(text));
	assert_non_null(strstr(text, "protocol static spillway4 {\n\tipv4;\n"
	                             "\troute 10.100.0.1/32 blackhole;\n"
	                             "\troute 10.100.0.3/32 blackhole;\n}\n"));
	assert_non_null(strstr(text, "protocol static spillway6 {\n\tipv6;\n"
	                             "\troute fd00::10/128 blackhole;\n}\n"));
	/* Too small a buffer: cut, NUL-terminated, same length reported. */
	assert_int_equal(lb_bird_render(p, n, small, sizeof(small)), len);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	/* The empty set still defines both protocols (BIRD then removes the routes). */
	lb_bird_render(p, 0, text, sizeof(text));
	assert_non_null(strstr(text, "protocol static spillway4 {\n\tipv4;\n}\n"));
	assert_non_null(strstr(text, "protocol static spillway6 {\n\tipv6;\n}\n"));
	lb_snapshot_free(s);
}

static void
test_bird_command_ok(void **state)
{
	struct fake *f = *state;
	char msg[ERR_LEN];

	f->mode = FAKE_OK;
	assert_int_equal(lb_bird_command(f->sock, "configure", 5000, msg, sizeof(msg)), 3);
	assert_string_equal(msg, "Reconfigured");
	assert_string_equal(f->last_cmd, "configure");
	f->mode = FAKE_IN_PROGRESS;
	assert_int_equal(lb_bird_command(f->sock, "configure", 5000, msg, sizeof(msg)), 4);
}

static void
test_bird_command_refused(void **state)
{
	struct fake *f = *state;
	char msg[ERR_LEN];

	f->mode = FAKE_REFUSE;
	assert_int_equal(lb_bird_command(f->sock, "configure", 5000, msg, sizeof(msg)), 8002);
	assert_string_equal(msg, "/run/spw.conf:3:9 syntax error, unexpected CF_SYM");
}

static void
test_bird_command_timeout(void **state)
{
	struct fake *f = *state;
	char msg[ERR_LEN];

	f->mode = FAKE_SILENT;
	assert_int_equal(lb_bird_command(f->sock, "configure", 100, msg, sizeof(msg)), -ETIMEDOUT);
	assert_non_null(strstr(msg, "no reply from BIRD in time"));
}

static void
test_bird_command_not_bird(void **state)
{
	struct fake *f = *state;
	char msg[ERR_LEN];

	f->mode = FAKE_NOT_BIRD;
	assert_int_equal(lb_bird_command(f->sock, "configure", 5000, msg, sizeof(msg)), -EPROTO);
	assert_non_null(strstr(msg, "not a BIRD reply"));
}

static void
test_bird_command_no_socket(void **state)
{
	struct fake *f = *state;
	char msg[ERR_LEN], path[160];
	int rc;

	snprintf(path, sizeof(path), "%s/nobody.ctl", f->dir);
	rc = lb_bird_command(path, "configure", 1000, msg, sizeof(msg));
	assert_int_equal(rc, -ENOENT);
	assert_non_null(strstr(msg, "connect"));
}

/* A file that cannot be written (no such directory): -errno, "path: step: why". */
static void
test_bird_unwritable_include(void **state)
{
	struct fake *f = *state;
	char path[160], err[ERR_LEN] = "";
	struct lb_bird_params p = {.include_path = path, .socket_path = f->sock};
	struct lb_snapshot *ab = snap_of(CFG_AB);
	struct lb_bird *b;
	struct lb_publish_hook h;

	snprintf(path, sizeof(path), "%s/missing/spillway.conf", f->dir);
	b = lb_bird_create(&p);
	assert_non_null(b);
	h = lb_bird_hook(b);
	f->mode = FAKE_OK;
	assert_int_equal(h.after(h.arg, ab, NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "missing/spillway.conf: open directory: "));
	assert_int_equal(fake_commands(f), 0);
	lb_snapshot_free(ab);
	lb_bird_free(b);
}

/* lb_bird_withdraw: the empty include file written, then one "configure". */
static void
test_bird_withdraw_now(void **state)
{
	struct fake *f = *state;
	char err[ERR_LEN] = "", text[1024], want[1024], path[160];
	FILE *fp;
	size_t n;

	f->mode = FAKE_OK;
	assert_int_equal(lb_bird_withdraw(f->include, f->sock, 5000, err, sizeof(err)), 0);
	assert_int_equal(fake_commands(f), 1);
	assert_string_equal(f->last_cmd, "configure");
	fp = fopen(f->include, "r");
	assert_non_null(fp);
	n = fread(text, 1, sizeof(text) - 1, fp);
	fclose(fp);
	text[n] = '\0';
	lb_bird_render(NULL, 0, want, sizeof(want));
	assert_string_equal(text, want);
	assert_null(strstr(text, "route"));

	f->mode = FAKE_REFUSE;
	assert_int_equal(lb_bird_withdraw(f->include, f->sock, 5000, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "BIRD answered 8002"));

	/* The file cannot be written: BIRD is not asked. */
	snprintf(path, sizeof(path), "%s/missing/spillway.conf", f->dir);
	f->mode = FAKE_OK;
	assert_int_equal(lb_bird_withdraw(path, f->sock, 5000, err, sizeof(err)), -ENOENT);
	assert_int_equal(fake_commands(f), 2);

	snprintf(path, sizeof(path), "%s/nobody.ctl", f->dir);
	assert_int_equal(lb_bird_withdraw(f->include, path, 1000, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "connect"));
}

static void
test_bird_create_rejects_bad_params(void **state)
{
	struct lb_bird_params p = {.include_path = "/tmp/x.conf"};
	char longp[200];

	(void)state;
	errno = 0;
	assert_null(lb_bird_create(&p));
	assert_int_equal(errno, EINVAL);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	p.socket_path = longp;
	assert_null(lb_bird_create(&p));
	lb_bird_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_bird_prefixes_usable_only),
	        cmocka_unit_test(test_bird_prefixes_draining_only),
	        cmocka_unit_test(test_bird_render_text),
	        cmocka_unit_test_setup_teardown(test_bird_command_ok, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bird_command_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bird_command_timeout, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bird_command_not_bird, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bird_command_no_socket, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bird_unwritable_include, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bird_withdraw_now, setup, teardown),
	        cmocka_unit_test(test_bird_create_rejects_bad_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
