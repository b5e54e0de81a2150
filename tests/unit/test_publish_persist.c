/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Publication with a state file whose fsyncs fail: fsync is wrapped so the
 * test can fail the directory's (the rename is then in place, not durable)
 * or the file's (nothing replaced). Judged by reading the file back with
 * Jansson, the publisher's counters and the log line on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <rte_rcu_qsbr.h>

#include "control/model/config.h"
#include "config_fixture.h"
#include "eal.h"
#include "control/runtime/publish.h"

#define CFG                                                                                        \
	"{\"encap\": {\"source_v4\": \"10.0.0.1\", \"next_hop_mac\": \"02:00:00:00:00:01\"},"      \
	" \"maglev\": {\"table_size\": 251},"                                                      \
	" \"vips\": [{\"address\": \"192.0.2.1\", \"port\": 80, \"protocol\": \"tcp\","            \
	"             \"backends\": [{\"address\": \"10.1.0.1\"}, {\"address\": \"10.1.0.2\"}]}]}"

int __real_fsync(int fd);
int __wrap_fsync(int fd);

/* The errno the next fsync of a directory (or of a regular file) fails with. */
static int g_fail_dir_errno;
static int g_fail_file_errno;

int
__wrap_fsync(int fd)
{
	struct stat st;
	int *fail;

	if (fstat(fd, &st) == 0) {
		fail = S_ISDIR(st.st_mode) ? &g_fail_dir_errno : &g_fail_file_errno;
		if (*fail != 0) {
			errno = *fail;
			*fail = 0;
			return -1;
		}
	}
	return __real_fsync(fd);
}

struct fixture {
	char dir[64];
	char path[96];
	char log[96];
	int saved_stderr;
	struct rte_rcu_qsbr *qsv;
	struct lb_core_counters *counters;
	const struct lb_core_counters *cores[1];
	unsigned int lcores[1];
	struct lb_snapshot *live;
	struct lb_publisher pub;
};

static struct lb_config *
config(void)
{
	return load_ok(CFG);
}

/* The running configuration with the first backend's weight set to w. */
static struct lb_config *
change(struct fixture *f, uint32_t w)
{
	struct lb_config *c = lb_config_clone(f->pub.cfg);

	assert_non_null(c);
	c->vips[0].backends[0].weight = w;
	return c;
}

/* The first backend's weight as the state file on disk says, read by Jansson. */
static json_int_t
weight_on_disk(const struct fixture *f)
{
	json_error_t je;
	json_t *doc = json_load_file(f->path, 0, &je);
	json_t *w;
	json_int_t v;

	assert_non_null(doc);
	w = json_object_get(
	        json_array_get(json_object_get(json_array_get(json_object_get(doc, "vips"), 0),
	                                       "backends"),
	                       0),
	        "weight");
	v = json_is_integer(w) ? json_integer_value(w) : 1; /* weight 1 may be left out */
	json_decref(doc);
	return v;
}

static json_int_t
unsynced_reported(const struct fixture *f)
{
	json_t *o = lb_publish_json(&f->pub);
	json_int_t v;

	assert_non_null(o);
	assert_true(json_is_integer(json_object_get(o, "state_unsynced")));
	v = json_integer_value(json_object_get(o, "state_unsynced"));
	json_decref(o);
	return v;
}

/* What was written to stderr since setup. */
static char *
log_text(const struct fixture *f)
{
	static char buf[4096];
	FILE *fp;
	size_t n;

	fflush(stderr);
	fp = fopen(f->log, "r");
	assert_non_null(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct lb_publish_params p = {0};
	size_t sz = rte_rcu_qsbr_get_memsize(1);
	char err[256];
	int fd;

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/spw-pubpersist.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/state.json", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/stderr", f->dir);
	f->qsv = aligned_alloc(RTE_CACHE_LINE_SIZE,
	                       (sz + RTE_CACHE_LINE_SIZE - 1) & ~(size_t)(RTE_CACHE_LINE_SIZE - 1));
	assert_non_null(f->qsv);
	assert_int_equal(rte_rcu_qsbr_init(f->qsv, 1), 0);
	f->counters = calloc(1, sizeof(*f->counters));
	assert_non_null(f->counters);
	/* A worker that is always on the newest snapshot: publication never waits. */
	f->counters->snapshot_gen = UINT64_MAX;
	f->cores[0] = f->counters;
	f->lcores[0] = 3;
	p.qsv = f->qsv;
	p.snap = &f->live;
	p.cores = f->cores;
	p.lcores = f->lcores;
	p.n_cores = 1;
	p.state_path = f->path;
	lb_publish_init(&f->pub, &p);
	assert_int_equal(lb_publish_apply(&f->pub, config(), true, err, sizeof(err)), 0);
	assert_int_equal(weight_on_disk(f), 1);

	fflush(stderr);
	f->saved_stderr = dup(2);
	fd = open(f->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(f->saved_stderr >= 0 && fd >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	fflush(stderr);
	dup2(f->saved_stderr, 2);
	close(f->saved_stderr);
	g_fail_dir_errno = g_fail_file_errno = 0;
	lb_publish_fini(&f->pub);
	free(f->counters);
	free(f->qsv);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->dir);
	free(f);
	return 0;
}

/*
 * The rename is in place but the directory's fsync fails: the change is in
 * force and in the file (the reply says applied), counted once in
 * state_unsynced, and logged as not yet durable.
 */
static void
test_publish_dir_fsync_failure_is_applied_and_counted(void **state)
{
	struct fixture *f = *state;
	char err[512];

	g_fail_dir_errno = EIO;
	assert_int_equal(lb_publish_apply(&f->pub, change(f, 7), true, err, sizeof(err)), 0);
	assert_int_equal(g_fail_dir_errno, 0); /* the directory's fsync did run */
	assert_int_equal(f->pub.cfg->vips[0].backends[0].weight, 7);
	assert_int_equal(weight_on_disk(f), 7);
	assert_int_equal(unsynced_reported(f), 1);
	assert_non_null(strstr(log_text(f), "not yet durable"));

	/* The next write succeeds and is not counted. */
	assert_int_equal(lb_publish_apply(&f->pub, change(f, 8), true, err, sizeof(err)), 0);
	assert_int_equal(weight_on_disk(f), 8);
	assert_int_equal(unsynced_reported(f), 1);
}

/*
 * The file's own fsync fails before the rename: the change is refused with
 * the write's error, the running configuration and the file keep the old
 * weight, and nothing is counted as unsynced.
 */
static void
test_publish_file_fsync_failure_changes_nothing(void **state)
{
	struct fixture *f = *state;
	char err[512];

	g_fail_file_errno = EIO;
	assert_int_equal(lb_publish_apply(&f->pub, change(f, 9), true, err, sizeof(err)), -EIO);
	assert_int_equal(g_fail_file_errno, 0);
	assert_true(err[0] != '\0');
	assert_int_equal(f->pub.cfg->vips[0].backends[0].weight, 1);
	assert_int_equal(weight_on_disk(f), 1);
	assert_int_equal(unsynced_reported(f), 0);
	assert_null(strstr(log_text(f), "not yet durable"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(
	                test_publish_dir_fsync_failure_is_applied_and_counted, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_publish_file_fsync_failure_changes_nothing,
	                                        setup, teardown),
	};

	if (test_eal_init("test_publish_persist", "spw-pubpersist") < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
