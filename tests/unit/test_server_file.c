/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the control socket's file (control/io/server_file.c, through
 * lb_server_create/destroy and lb_server_check_path): mode whatever the
 * umask, group, a symlink swapped in after bind(), the longest path, stale,
 * live and not-a-socket files at the path, bad paths, removal on destroy.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_fixture.h"

/*
 * bind() is wrapped (-Wl,--wrap=bind): once it succeeds and swap_path is
 * set, whatever is at swap_path is replaced by a symlink to swap_target, as
 * another user with write access to the directory could do between bind()
 * and the chown()/chmod() that follow it.
 */
int __real_bind(int fd, const struct sockaddr *sa, socklen_t len);
int __wrap_bind(int fd, const struct sockaddr *sa, socklen_t len);
static const char *swap_path, *swap_target;

int
__wrap_bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	int rc = __real_bind(fd, sa, len);

	if (rc == 0 && swap_path != NULL) {
		unlink(swap_path);
		if (symlink(swap_target, swap_path) != 0)
			abort();
	}
	return rc;
}

/* ---- the socket file --------------------------------------------------------- */

static void
test_server_mode_whatever_umask(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct stat st;
	mode_t old = umask(0);

	start(f, &p);
	umask(old);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	lb_server_destroy(f->srv);

	old = umask(0077);
	p.mode = 0666;
	f->srv = NULL;
	start(f, &p);
	umask(old);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0666);
}

static void
test_server_group(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char gid[32], err[ERR_LEN];
	struct stat st;

	snprintf(gid, sizeof(gid), "%u", (unsigned int)getgid());
	p.group = gid;
	start(f, &p);
	assert_int_equal(lstat(f->path, &st), 0);
	assert_int_equal(st.st_gid, getgid());
	lb_server_destroy(f->srv);
	f->srv = NULL;

	p.group = "no-such-group-spw";
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "no-such-group-spw"));
	assert_int_equal(access(f->path, F_OK), -1); /* nothing created */
}

/*
 * A symlink swapped in at the socket path right after bind() must not carry
 * the group and mode to the file it points to: the file keeps its mode and
 * group, and the server is not created over the symlink.
 */
static void
test_server_symlink_swap_not_followed(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char victim[192], gid[32], err[ERR_LEN] = "";
	gid_t want_gid = geteuid() == 0 ? 1 : getgid();
	struct lb_server *s;
	struct stat st, before;
	int fd;

	snprintf(victim, sizeof(victim), "%s/victim", f->dir);
	fd = open(victim, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(victim, 0600), 0);
	assert_int_equal(lstat(victim, &before), 0);
	snprintf(gid, sizeof(gid), "%u", (unsigned int)want_gid);
	p.group = gid;
	p.mode = 0666;
	swap_path = f->path;
	swap_target = victim;
	s = lb_server_create(&p, err, sizeof(err));
	swap_path = NULL;
	assert_int_equal(lstat(victim, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_gid, before.st_gid);
	assert_null(s);
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(err, f->path));
	/* The symlink is left alone, and nothing of ours is left behind. */
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(unlink(victim), 0);
	assert_int_equal(rmdir(f->dir), 0);
	assert_int_equal(mkdir(f->dir, 0700), 0);
}

/* A path of 107 bytes whose temporary neighbour would be longer still works. */
static void
test_server_longest_path(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char dir[128], path[128];
	struct stat st;
	struct lb_server *s;
	int fd;

	snprintf(dir, sizeof(dir), "%s/", f->dir);
	memset(dir + strlen(dir), 'd', 104 - strlen(dir));
	dir[104] = '\0';
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/ab", dir);
	assert_int_equal(strlen(path), 107);
	p.path = path;
	s = start(f, &p);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	fd = client(path);
	send_str(s, fd, "long\n");
	expect_reply(s, fd, "echo:long\n");
	close(fd);
}

static void
test_server_stale_socket_replaced(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char err[ERR_LEN];
	struct lb_server *s;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	/* What a crash leaves: a bound socket file nobody listens on. */
	strcpy(sa.sun_path, f->path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(lb_server_check_path(f->path, err, sizeof(err)), 0);
	s = start(f, &p);
	fd = client(f->path);
	send_str(s, fd, "hi\n");
	expect_reply(s, fd, "echo:hi\n");
	close(fd);
}

static void
test_server_live_socket_refused(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char err[ERR_LEN], want[256];
	struct lb_server *s = start(f, &p);
	int fd;

	snprintf(want, sizeof(want), "%s: another spillwayd is listening", f->path);
	assert_int_equal(lb_server_check_path(f->path, err, sizeof(err)), -EADDRINUSE);
	assert_string_equal(err, want);
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, EADDRINUSE);
	assert_string_equal(err, want);
	/* The first one is untouched. */
	fd = client(f->path);
	send_str(s, fd, "alive\n");
	expect_reply(s, fd, "echo:alive\n");
	close(fd);
}

static void
test_server_not_a_socket_kept(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char err[ERR_LEN], buf[16] = "";
	FILE *fp = fopen(f->path, "w");

	assert_non_null(fp);
	fputs("precious", fp);
	fclose(fp);
	assert_int_equal(lb_server_check_path(f->path, err, sizeof(err)), -EEXIST);
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(err, "not a socket"));
	fp = fopen(f->path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(buf, sizeof(buf), fp));
	fclose(fp);
	assert_string_equal(buf, "precious");
}

static void
test_server_bad_path(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	char err[ERR_LEN], longp[200];

	memset(longp, 'p', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	p.path = longp;
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, ENAMETOOLONG);
	p.path = "/nonexistent-dir-spw/ctl.sock";
	assert_null(lb_server_create(&p, err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "/nonexistent-dir-spw/ctl.sock: "));
}

static void
test_server_destroy_removes_socket(void **state)
{
	struct fixture *f = *state;
	struct lb_server_params p = params(f);
	int fd;

	start(f, &p);
	fd = client(f->path);
	pump(f->srv, 10);
	lb_server_destroy(f->srv);
	f->srv = NULL;
	assert_int_equal(access(f->path, F_OK), -1);
	assert_int_equal(recv(fd, &p, 1, MSG_DONTWAIT), 0); /* the server closed it */
	close(fd);

	/* A file that replaced ours is not ours to remove. */
	start(f, &p);
	assert_int_equal(unlink(f->path), 0);
	close(open(f->path, O_CREAT | O_WRONLY, 0600));
	lb_server_destroy(f->srv);
	f->srv = NULL;
	assert_int_equal(access(f->path, F_OK), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_server_mode_whatever_umask, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_group, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_symlink_swap_not_followed, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_server_longest_path, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_stale_socket_replaced, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_live_socket_refused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_not_a_socket_kept, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_bad_path, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_destroy_removes_socket, setup,
	                                        teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
