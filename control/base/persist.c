/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Atomic, durable replacement of the state file: the document goes to a
 * hidden temporary file beside it (same file system, so rename is atomic),
 * is synced, renamed over the old file, and the directory is synced so the
 * rename itself survives a crash. Any failure before the rename leaves the old
 * file as it was; start-up cleanup removes only names of the temporary scheme.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/base/persist.h"

/* Temporary file of "DIR/NAME": "DIR/" TMP_LEAD "NAME" TMP_MARK + 6 mkostemp characters. */
#define TMP_LEAD "."
#define TMP_MARK ".spw-tmp."
#define TMP_RAND 6

static int
fail(char *err, size_t errlen, const char *path, const char *step, int e)
{
	snprintf(err, errlen, "%s: %s: %s", path, step, strerror(e));
	return -e;
}

static int
write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The directory holding path, opened for fsync; -errno on failure. */
static int
open_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (slash == NULL)
		dir = strdup(".");
	else
		dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (dir == NULL)
		return -ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	free(dir);
	return fd;
}

/* Write a then b (either may be empty) to path atomically and durably, with mode. */
static int
write_atomic(const char *path, const char *a, size_t alen, const char *b, size_t blen, mode_t mode,
             char *err, size_t errlen)
{
	char *tmp = NULL;
	int fd = -1, dfd = -1, rc;

	/* Opened first: a directory that cannot be synced fails before the rename. */
	dfd = open_dir(path);
	if (dfd < 0) {
		rc = fail(err, errlen, path, "open directory", -dfd);
		goto cleanup;
	}
	{
		const char *slash = strrchr(path, '/');
		int dlen = slash == NULL ? 0 : (int)(slash - path + 1);

		if (asprintf(&tmp, "%.*s" TMP_LEAD "%s" TMP_MARK "XXXXXX", dlen, path,
		             path + dlen) < 0)
			tmp = NULL;
	}
	if (tmp == NULL) {
		tmp = NULL;
		rc = fail(err, errlen, path, "create temporary file", ENOMEM);
		goto cleanup;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = fail(err, errlen, path, "create temporary file", errno);
		free(tmp);
		tmp = NULL; /* nothing to unlink */
		goto cleanup;
	}
	/* The mode whatever the umask. */
	if (fchmod(fd, mode) != 0) {
		rc = fail(err, errlen, path, "chmod", errno);
		goto cleanup;
	}
	rc = write_all(fd, a, alen);
	if (rc == 0)
		rc = write_all(fd, b, blen);
	if (rc != 0) {
		rc = fail(err, errlen, path, "write", -rc);
		goto cleanup;
	}
	if (fsync(fd) != 0) {
		rc = fail(err, errlen, path, "fsync", errno);
		goto cleanup;
	}
	rc = close(fd);
	fd = -1;
	if (rc != 0) {
		rc = fail(err, errlen, path, "close", errno);
		goto cleanup;
	}
	if (rename(tmp, path) != 0) {
		rc = fail(err, errlen, path, "rename", errno);
		goto cleanup;
	}
	free(tmp);
	tmp = NULL; /* renamed: nothing left to unlink */
	/*
	 * The new file is in place; without this sync the rename may not survive a
	 * crash. Some file systems cannot sync a directory (EINVAL): nothing more
	 * can be done there. A failure here cannot undo the rename: it is reported
	 * as LB_PERSIST_UNSYNCED, never as "old file untouched".
	 */
	if (fsync(dfd) != 0 && errno != EINVAL) {
		fail(err, errlen, path, "fsync directory", errno);
		rc = LB_PERSIST_UNSYNCED;
		goto cleanup;
	}
	rc = 0;
cleanup:
	if (fd >= 0)
		close(fd);
	if (tmp != NULL) {
		unlink(tmp);
		free(tmp);
	}
	if (dfd >= 0)
		close(dfd);
	return rc;
}

int
lb_persist_write_text(const char *path, const char *text, size_t len, mode_t mode, char *err,
                      size_t errlen)
{
	return write_atomic(path, text, len, NULL, 0, mode, err, errlen);
}

int
lb_persist_write(const char *path, const json_t *doc, char *err, size_t errlen)
{
	char *text = json_dumps(doc, JSON_INDENT(2));
	int rc;

	if (text == NULL)
		return fail(err, errlen, path, "encode", doc == NULL ? EINVAL : ENOMEM);
	rc = write_atomic(path, text, strlen(text), "\n", 1, 0600, err, errlen);
	free(text);
	return rc;
}

/* Exactly a name write_atomic makes for base: TMP_LEAD base TMP_MARK + TMP_RAND of [A-Za-z0-9]. */
static bool
is_tmp_name(const char *name, const char *base, size_t blen)
{
	const size_t lead = strlen(TMP_LEAD), mark = strlen(TMP_MARK);

	if (strlen(name) != lead + blen + mark + TMP_RAND || strncmp(name, TMP_LEAD, lead) != 0 ||
	    strncmp(name + lead, base, blen) != 0 ||
	    strncmp(name + lead + blen, TMP_MARK, mark) != 0)
		return false;
	for (const char *c = name + lead + blen + mark; *c != '\0'; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	return true;
}

int
lb_persist_cleanup(const char *path)
{
	char *copy = strdup(path), *copy2 = strdup(path);
	const char *dir, *base;
	struct dirent *de;
	size_t blen;
	DIR *d;
	int n = 0;

	if (copy == NULL || copy2 == NULL) {
		free(copy);
		free(copy2);
		return -ENOMEM;
	}
	dir = dirname(copy);
	base = basename(copy2);
	blen = strlen(base);
	d = opendir(dir);
	if (d == NULL) {
		n = -errno;
		goto out;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (is_tmp_name(de->d_name, base, blen) &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
out:
	free(copy);
	free(copy2);
	return n;
}
