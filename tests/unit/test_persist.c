/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the state file writer: the document reads back, the file is
 * mode 0600 whatever the umask, an existing file is replaced, and every
 * failure (directory missing or not a directory, a write that fails half-way,
 * a rename onto a directory) leaves the old file intact and no temporary file.
 * Runs as root too, so failures are provoked without relying on permissions.
 *
 * Durability is checked on the system calls themselves: the test links with
 * -Wl,--wrap=write,--wrap=fsync,--wrap=rename, so persist.c's calls pass
 * through recorders below (libc's own calls do not) that log each call with
 * the path of its descriptor, and can make the next fsync fail, make the next
 * fsync of a directory fail, or end the process at the rename (a crash that
 * leaves the temporary file behind).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/base/persist.h"

#define ERR_LEN 512

/* ---- system-call recorder (see the file comment) ---- */

enum sys_op { SYS_WRITE, SYS_FSYNC, SYS_RENAME };

struct sys_event {
	enum sys_op op;
	char path[256]; /* the descriptor's file, or rename's source */
	char to[256];   /* rename's destination */
};

#define MAX_EVENTS 64

static struct sys_event g_events[MAX_EVENTS];
static unsigned int g_n_events;
static int g_fsync_fail_errno;     /* the next fsync fails with this, then 0 */
static int g_dir_fsync_fail_errno; /* the next fsync of a directory fails with this, then 0 */
static int g_exit_at_rename;       /* rename ends the process instead (a crash) */

ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_fsync(int fd);
int __real_rename(const char *from, const char *to);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int __wrap_fsync(int fd);
int __wrap_rename(const char *from, const char *to);

static struct sys_event *
record(enum sys_op op)
{
	struct sys_event *e = &g_events[g_n_events < MAX_EVENTS ? g_n_events : MAX_EVENTS - 1];

	if (g_n_events < MAX_EVENTS)
		g_n_events++;
	memset(e, 0, sizeof(*e));
	e->op = op;
	return e;
}

static void
fd_path(int fd, char *out, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	out[n > 0 ? n : 0] = '\0';
}

ssize_t
__wrap_write(int fd, const void *buf, size_t n)
{
	fd_path(fd, record(SYS_WRITE)->path, sizeof(g_events[0].path));
	return __real_write(fd, buf, n);
}

int
__wrap_fsync(int fd)
{
	struct stat st;

	fd_path(fd, record(SYS_FSYNC)->path, sizeof(g_events[0].path));
	if (g_dir_fsync_fail_errno && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		errno = g_dir_fsync_fail_errno;
		g_dir_fsync_fail_errno = 0;
		return -1;
	}
	if (g_fsync_fail_errno) {
		errno = g_fsync_fail_errno;
		g_fsync_fail_errno = 0;
		return -1;
	}
	return __real_fsync(fd);
}

int
__wrap_rename(const char *from, const char *to)
{
	struct sys_event *e = record(SYS_RENAME);
	char *rf;

	if (g_exit_at_rename)
		_exit(0);
	rf = realpath(from, NULL);

	snprintf(e->path, sizeof(e->path), "%s", rf ? rf : from);
	free(rf);
	snprintf(e->to, sizeof(e->to), "%s", to);
	return __real_rename(from, to);
}

/* Index of the first event at or after from with op (and path, if not NULL); -1 if none. */
static int
find_event(unsigned int from, enum sys_op op, const char *path)
{
	for (unsigned int i = from; i < g_n_events; i++)
		if (g_events[i].op == op && (!path || strcmp(g_events[i].path, path) == 0))
			return (int)i;
	return -1;
}

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

static void
make_symlink(const char *dir, const char *name, const char *target)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(symlink(target, p), 0);
}

static bool
exists(const char *dir, const char *name)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

/*
 * The documented temporary-file scheme, checked here character by character:
 * "." + "state.json" + ".spw-tmp." + 6 of [A-Za-z0-9].
 */
static bool
documented_tmp_name(const char *name)
{
	const char *want = ".state.json.spw-tmp.";
	size_t n = strlen(want);

	if (strlen(name) != n + 6 || strncmp(name, want, n) != 0)
		return false;
	for (size_t i = n; i < n + 6; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9')))
			return false;
	return true;
}

/* The one entry of dir that is not "state.json", copied to out. */
static void
only_other_entry(const char *dir, char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	out[0] = '\0';
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    strcmp(e->d_name, "state.json") != 0)
			snprintf(out, len, "%s", e->d_name);
	closedir(d);
}

/*
 * Start-up removes what a crash mid-write leaves, and nothing else: the
 * operator's files beside the state file (whatever their name length) stay,
 * and so do names of the scheme that are not regular files or whose random
 * part is not 6 alphanumeric characters.
 */
static void
test_persist_cleanup_leftovers(void **state)
{
	static const char *const keep[] = {
	        "state.json.backup",          "state.json.old-v1",
	        "state.json.a1B2c3",          "state.json.bak",
	        "other.json.a1B2c3",          ".other.json.spw-tmp.a1B2c3",
	        ".state.json.spw-tmp.a1B2",   ".state.json.spw-tmp.a1B2c3d",
	        ".state.json.spw-tmp.a1-2c3", ".state.json.swp-tmp.a1B2c3",
	        ".state.json.old-copya1B2c3", "x.state.json.spw-tmp.a1B2c3",
	        ".state.json.spw-tmp.Link00",
	};
	struct fixture *f = *state;
	char err[ERR_LEN] = "", crash_left[256];
	json_t *d = doc(3);
	pid_t pid;
	int status;

	/* A crash between creating the temporary file and renaming it. */
	write_file(f->path, "old\n");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		g_exit_at_rename = 1;
		lb_persist_write(f->path, d, err, sizeof(err));
		_exit(1); /* not reached: the rename ends the child */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	only_other_entry(f->dir, crash_left, sizeof(crash_left));
	if (!documented_tmp_name(crash_left))
		fail_msg("leftover \"%s\" is not of the documented scheme", crash_left);
	assert_string_equal(read_file(f->path), "old\n");

	touch(f->dir, ".state.json.spw-tmp.Q7xZ0p"); /* another crash's leftover */
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]) - 1; i++)
		touch(f->dir, keep[i]);
	make_symlink(f->dir, ".state.json.spw-tmp.Link00", "state.json.backup");
	assert_int_equal(lb_persist_cleanup(f->path), 2);
	assert_false(exists(f->dir, crash_left));
	assert_false(exists(f->dir, ".state.json.spw-tmp.Q7xZ0p"));
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (!exists(f->dir, keep[i]))
			fail_msg("cleanup removed \"%s\"", keep[i]);
	assert_int_equal(count_entries(f->dir, "state.json"),
	                 (int)(sizeof(keep) / sizeof(keep[0])));
	assert_string_equal(read_file(f->path), "old\n");
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

/*
 * The durable-replace protocol, judged on the calls persist.c made: every
 * write goes to one temporary file beside the target; that file is fsynced
 * after its last write and before the rename onto the target; then the
 * directory is fsynced, after the rename.
 */
static void
test_persist_syncs_file_then_renames_then_syncs_directory(void **state)
{
	struct fixture *f = *state;
	/* realpath() writes up to PATH_MAX bytes (_FORTIFY_SOURCE checks the size). */
	char err[ERR_LEN] = "", real_dir[PATH_MAX], tmp[PATH_MAX];
	json_t *d = doc(5);
	int last_write = -1, file_sync, ren, dir_sync;

	assert_non_null(realpath(f->dir, real_dir));
	write_file(f->path, "old\n");
	g_n_events = 0;
	assert_int_equal(lb_persist_write(f->path, d, err, sizeof(err)), 0);
	assert_true(g_n_events < MAX_EVENTS);

	assert_true(find_event(0, SYS_WRITE, NULL) >= 0);
	snprintf(tmp, sizeof(tmp), "%s", g_events[find_event(0, SYS_WRITE, NULL)].path);
	/* The temporary file: beside the target, of the documented scheme. */
	assert_int_equal(strncmp(tmp, real_dir, strlen(real_dir)), 0);
	assert_int_equal(tmp[strlen(real_dir)], '/');
	assert_true(documented_tmp_name(tmp + strlen(real_dir) + 1));
	for (unsigned int i = 0; i < g_n_events; i++)
		if (g_events[i].op == SYS_WRITE) {
			assert_string_equal(g_events[i].path, tmp);
			last_write = (int)i;
		}
	file_sync = find_event((unsigned int)last_write, SYS_FSYNC, tmp);
	ren = find_event(0, SYS_RENAME, tmp);
	assert_true(file_sync > last_write);
	assert_true(ren > file_sync);
	assert_string_equal(g_events[ren].to, f->path);
	dir_sync = find_event((unsigned int)ren, SYS_FSYNC, real_dir);
	assert_true(dir_sync > ren);
	assert_non_null(read_file(f->path));
	json_decref(d);
}

/* An fsync of the new file that fails: an error naming it, the old file intact, no leftovers. */
static void
test_persist_fsync_fails(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "";
	json_t *d = doc(2);

	write_file(f->path, "old\n");
	g_fsync_fail_errno = EIO;
	assert_int_equal(lb_persist_write(f->path, d, err, sizeof(err)), -EIO);
	g_fsync_fail_errno = 0;
	assert_msg(err, f->path, "fsync");
	assert_string_equal(read_file(f->path), "old\n");
	assert_int_equal(count_entries(f->dir, "state.json"), 0);
	json_decref(d);
}

/*
 * The rename succeeded, then the directory fsync failed: the new document is
 * in place (the old one is gone), and the return says so distinctly from a
 * failure that left the old file untouched.
 */
static void
test_persist_directory_fsync_fails(void **state)
{
	struct fixture *f = *state;
	char err[ERR_LEN] = "";
	json_t *d = doc(7), *back;
	json_error_t je;

	write_file(f->path, "old\n");
	g_dir_fsync_fail_errno = EIO;
	assert_int_equal(lb_persist_write(f->path, d, err, sizeof(err)), LB_PERSIST_UNSYNCED);
	assert_int_equal(g_dir_fsync_fail_errno, 0); /* the directory fsync did fail */
	assert_msg(err, f->path, "fsync directory");
	assert_non_null(strstr(err, strerror(EIO)));
	back = json_load_file(f->path, 0, &je);
	assert_non_null(back);
	assert_true(json_equal(back, d));
	assert_int_equal(count_entries(f->dir, "state.json"), 0);
	/* The text variant reports it the same way. */
	g_dir_fsync_fail_errno = EIO;
	assert_int_equal(lb_persist_write_text(f->path, "t\n", 2, 0600, err, sizeof(err)),
	                 LB_PERSIST_UNSYNCED);
	assert_string_equal(read_file(f->path), "t\n");
	json_decref(back);
	json_decref(d);
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
	        cmocka_unit_test_setup_teardown(
	                test_persist_syncs_file_then_renames_then_syncs_directory, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_fsync_fails, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_persist_directory_fsync_fails, setup,
	                                        teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
