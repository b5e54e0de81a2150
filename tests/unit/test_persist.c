/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the state file writer: the document reads back, the file is
 * mode 0600 whatever the umask, an existing file is replaced, and every
 * failure (directory missing or not a directory, a write that fails half-way,
 * a rename onto a directory) leaves the old file intact and no temporary file.
 * Runs as root too, so failures are provoked without relying on permissions.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../control/persist.h"

#define ERR_LEN 512

struct fixture {
	char dir[64];
	char path[128];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_persist.XXXXXX");
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/state.json", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static void
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

static char *
read_file(const char *path)
{
	static char buf[4096];
	FILE *fp = fopen(path, "r");
	size_t n;

	assert_non_null(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

/* Entries of dir other than . and .., and other than keep. */
static int
count_entries(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (keep != NULL && strcmp(e->d_name, keep) == 0)
			continue;
		n++;
	}
	closedir(d);
	return n;
}

static json_t *
doc(int n)
{
	json_t *d = json_pack("{s:i, s:[s, s], s:{s:b}}", "n", (json_int_t)n, "list", "a", "b", "o",
	                      "x", 1);

	assert_non_null(d);
	return d;
}

static void
test_persist_round_trip(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "";
	json_t *d = doc(1), *back;
	json_error_t je;
	struct stat st;
	mode_t old = umask(0);

	assert_int_equal(lb_persist_write(f->path, d, err, sizeof(err)), 0);
	umask(old);
	back = json_load_file(f->path, 0, &je);
	assert_non_null(back);
	assert_true(json_equal(back, d));
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(S_ISREG(st.st_mode));
	/* A complete text file: ends in a newline. */
	assert_int_equal(read_file(f->path)[strlen(read_file(f->path)) - 1], '\n');
	assert_int_equal(count_entries(f->dir, "state.json"), 0);
	json_decref(back);
	json_decref(d);
}

/* An existing file (even one with looser permissions) is replaced, not appended to. */
static void
test_persist_replaces(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "";
	json_t *d = doc(2), *back;
	json_error_t je;
	struct stat st;

	write_file(f->path,
	           "{\"old\": \"a much longer document than the new one, padding....\"}\n");
	assert_int_equal(chmod(f->path, 0644), 0);
	assert_int_equal(lb_persist_write(f->path, d, err, sizeof(err)), 0);
	back = json_load_file(f->path, 0, &je);
	assert_non_null(back);
	assert_true(json_equal(back, d));
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(count_entries(f->dir, "state.json"), 0);
	json_decref(back);
	json_decref(d);
}

/* A bare file name is written in the working directory. */
static void
test_persist_relative_path(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "", cwd[256];
	json_t *d = doc(3);

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(f->dir), 0);
	assert_int_equal(lb_persist_write("rel.json", d, err, sizeof(err)), 0);
	assert_int_equal(access("rel.json", R_OK), 0);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(count_entries(f->dir, "rel.json"), 0);
	json_decref(d);
}

static void
assert_msg(const char *err, const char *path, const char *step)
{
	char want[256];

	snprintf(want, sizeof(want), "%s: %s: ", path, step);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("message \"%s\" does not start with \"%s\"", err, want);
}

static void
test_persist_missing_directory(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "", path[192];
	json_t *d = doc(4);

	snprintf(path, sizeof(path), "%s/nonexistent/state.json", f->dir);
	assert_int_equal(lb_persist_write(path, d, err, sizeof(err)), -ENOENT);
	assert_msg(err, path, "open directory");
	assert_int_equal(count_entries(f->dir, NULL), 0);
	json_decref(d);
}

/* The "directory" is a regular file: ENOTDIR, and that file is untouched. */
static void
test_persist_directory_is_a_file(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "", path[192];
	json_t *d = doc(5);

	write_file(f->path, "old\n");
	snprintf(path, sizeof(path), "%s/state.json", f->path);
	assert_int_equal(lb_persist_write(path, d, err, sizeof(err)), -ENOTDIR);
	assert_msg(err, path, "open directory");
	assert_string_equal(read_file(f->path), "old\n");
	assert_int_equal(count_entries(f->dir, "state.json"), 0);
	json_decref(d);
}

/* The rename fails (the target is a directory): the temporary file is removed. */
static void
test_persist_rename_fails(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "", inner[192];
	json_t *d = doc(6);

	assert_int_equal(mkdir(f->path, 0700), 0);
	snprintf(inner, sizeof(inner), "%s/keep", f->path);
	write_file(inner, "old\n");
	assert_int_equal(lb_persist_write(f->path, d, err, sizeof(err)), -EISDIR);
	assert_msg(err, f->path, "rename");
	assert_string_equal(read_file(inner), "old\n");
	assert_int_equal(count_entries(f->dir, "state.json"), 0);
	json_decref(d);
}

/*
 * A write that fails half-way (RLIMIT_FSIZE applies to root as well): the old
 * file keeps its content and the partial temporary file is gone.
 */
static void
test_persist_write_fails(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "", big[8192];
	struct rlimit saved, small;
	json_t *d;
	int rc;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	d = json_pack("{s:s}", "big", big);
	assert_non_null(d);
	write_file(f->path, "old\n");
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
	small = saved;
	small.rlim_cur = 1024;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	rc = lb_persist_write(f->path, d, err, sizeof(err));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, -EFBIG);
	assert_msg(err, f->path, "write");
	assert_string_equal(read_file(f->path), "old\n");
	assert_int_equal(count_entries(f->dir, "state.json"), 0);
	json_decref(d);
}

static void
touch(const char *dir, const char *name)
{
	char p[256];
	FILE *fp;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fclose(fp);
}

/* Start-up removes what a crash mid-write leaves, and nothing else. */
static void
test_persist_cleanup_leftovers(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "";
	json_t *d = doc(3);

	assert_int_equal(lb_persist_write(f->path, d, err, sizeof(err)), 0);
	touch(f->dir, "state.json.a1B2c3"); /* mkostemp leftovers */
	touch(f->dir, "state.json.XyZ789");
	touch(f->dir, "state.json.bak");    /* not ours: wrong length */
	touch(f->dir, "other.json.a1B2c3"); /* another file's */
	assert_int_equal(lb_persist_cleanup(f->path), 2);
	assert_int_equal(count_entries(f->dir, "state.json"), 2);
	assert_non_null(read_file(f->path));
	assert_int_equal(lb_persist_cleanup(f->path), 0);
	json_decref(d);
}

static void
test_persist_null_doc(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "";

	assert_int_equal(lb_persist_write(f->path, NULL, err, sizeof(err)), -EINVAL);
	assert_msg(err, f->path, "encode");
	assert_int_equal(count_entries(f->dir, NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_persist_round_trip, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_replaces, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_relative_path, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_missing_directory, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_directory_is_a_file, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_rename_fails, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_write_fails, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_cleanup_leftovers, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_null_doc, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
