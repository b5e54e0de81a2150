/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket's file: what is at its path (nothing, a stale socket, a
 * live one, something else), the control group, and binding the listener so
 * that the file appears at its path only with its group and mode set, never
 * through a symlink. server.c's internal helpers; no state of their own.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/io/server_file.h"

static int
make_addr(const char *path, struct sockaddr_un *sa, char *err, size_t errlen)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (path == NULL || path[0] == '\0') {
		snprintf(err, errlen, "control socket: empty path");
		return -EINVAL;
	}
	if (strlen(path) >= sizeof(sa->sun_path)) {
		snprintf(err, errlen, "%s: socket path too long (at most %zu bytes)", path,
		         sizeof(sa->sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

/*
 * What is at path: 0 nothing, 1 a stale socket (nobody accepts), or -errno
 * with the reason in err (a live socket, something else, no access).
 */
static int
probe(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, rc;

	rc = make_addr(path, &sa, err, errlen);
	if (rc != 0)
		return rc;
	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s: exists and is not a socket (not replacing it)", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: socket: %s", path, strerror(-rc));
		return rc;
	}
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
	close(fd);
	switch (rc) {
	case 0:
	case EAGAIN: /* its backlog is full: still somebody's listener */
	case EINPROGRESS:
		snprintf(err, errlen, "%s: another spillwayd is listening", path);
		return -EADDRINUSE;
	case ECONNREFUSED:
		return 1;
	case ENOENT:
		return 0; /* removed meanwhile */
	default:
		snprintf(err, errlen, "%s: cannot probe the existing socket: %s", path,
		         strerror(rc));
		return -rc;
	}
}

/*
 * A directory of our own next to path (mode 0700, so nobody else can put a
 * symlink in it) and the name to bind in it: "DIR/.spw-XXXXXX/s", or, when
 * that is too long for sun_path, the same reached through
 * /proc/self/fd/DIRFD/s. 0, or -errno with the reason in err.
 */
static int
private_dir(const char *path, char *dir, size_t dlen, int *dfd, struct sockaddr_un *sa, char *err,
            size_t errlen)
{
	const char *slash = strrchr(path, '/');
	int n = slash == NULL ? snprintf(dir, dlen, ".spw-XXXXXX")
	                      : snprintf(dir, dlen, "%.*s/.spw-XXXXXX", (int)(slash - path), path);

	*dfd = -1;
	if (n < 0 || (size_t)n >= dlen) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	if (mkdtemp(dir) == NULL) {
		int rc = -errno;

		snprintf(err, errlen, "%s: cannot create a private directory next to it: %s", path,
		         strerror(-rc));
		return rc;
	}
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/s", dir);
	if (n > 0 && (size_t)n < sizeof(sa->sun_path))
		return 0;
	*dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dfd < 0) {
		int rc = -errno;

		rmdir(dir);
		snprintf(err, errlen, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/s", *dfd);
	return 0;
}

int
lb_server_check_path(const char *path, char *err, size_t errlen)
{
	int rc = probe(path, err, errlen);

	return rc > 0 ? 0 : rc;
}

int
lb_server_resolve_group(const char *group, gid_t *gid, char *err, size_t errlen)
{
	struct group gr, *res = NULL;
	char buf[4096], *end;
	unsigned long v;
	int rc;

	errno = 0;
	v = strtoul(group, &end, 10);
	if (group[0] >= '0' && group[0] <= '9' && *end == '\0') {
		if (errno != 0 || v >= (gid_t)-1) {
			snprintf(err, errlen, "control group %s: not a valid gid", group);
			return -EINVAL;
		}
		*gid = (gid_t)v;
		return 0;
	}
	rc = getgrnam_r(group, &gr, buf, sizeof(buf), &res);
	if (res == NULL) {
		snprintf(err, errlen, "control group %s: %s", group,
		         rc != 0 ? strerror(rc) : "no such group");
		return -EINVAL;
	}
	*gid = gr.gr_gid;
	return 0;
}

int
lb_server_file_prepare(const char *path, const char *group, gid_t *gid, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	int rc = make_addr(path, &sa, err, errlen);

	if (rc == 0 && group != NULL)
		rc = lb_server_resolve_group(group, gid, err, errlen);
	if (rc == 0) {
		rc = probe(path, err, errlen);
		if (rc == 1 && unlink(path) != 0 && errno != ENOENT) {
			rc = -errno;
			snprintf(err, errlen, "%s: cannot remove the stale socket: %s", path,
			         strerror(-rc));
		}
	}
	return rc < 0 ? rc : 0;
}

int
lb_server_file_bind(int lfd, const char *path, mode_t mode, const char *group, gid_t gid,
                    dev_t *dev, ino_t *ino, char *err, size_t errlen)
{
	struct sockaddr_un tmp;
	char dir[sizeof(tmp.sun_path) + 16] = "";
	bool bound = false;
	struct stat st;
	int rc, dfd = -1;

	/* Bound, given its group and mode, and checked in a directory of our
	 * own (0700: no symlink can be swapped in there, nobody can connect
	 * yet), then renamed into place without replacing anything that
	 * appeared at the path meanwhile. The file is visible only complete. */
	rc = private_dir(path, dir, sizeof(dir), &dfd, &tmp, err, errlen);
	if (rc != 0)
		return rc;
	/* Owner-only whatever the umask in any case: Linux creates the node
	 * with the socket inode's mode masked by the umask. */
	if (fchmod(lfd, 0600) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: fchmod: %s", path, strerror(-rc));
		goto out;
	}
	rc = bind(lfd, (struct sockaddr *)&tmp, sizeof(tmp)) == 0 ? 0 : -errno;
	if (rc != 0) {
		snprintf(err, errlen, "%s: cannot bind: %s", path, strerror(-rc));
		goto out;
	}
	bound = true;
	if (group != NULL && chown(tmp.sun_path, (uid_t)-1, gid) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot give it group %s: %s", path, group,
		         strerror(-rc));
		goto out;
	}
	if (chmod(tmp.sun_path, mode) != 0 || lstat(tmp.sun_path, &st) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot set mode %04o: %s", path, (unsigned int)mode,
		         strerror(-rc));
		goto out;
	}
	if (renameat2(AT_FDCWD, tmp.sun_path, AT_FDCWD, path, RENAME_NOREPLACE) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path,
		         rc == -EEXIST ? "something appeared at the path while the socket was "
		                         "being created (not replacing it)"
		                       : strerror(-rc));
		goto out;
	}
	bound = false;
	*dev = st.st_dev;
	*ino = st.st_ino;
out:
	if (bound)
		unlink(tmp.sun_path);
	rmdir(dir);
	if (dfd >= 0)
		close(dfd);
	return rc;
}
