/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal to the control socket server (server.c): checking the socket's
 * path and creating its file (server_file.c). It also holds the checks a
 * daemon runs before it starts: lb_server_check_path, lb_server_resolve_group.
 */
#ifndef LB_SERVER_FILE_H
#define LB_SERVER_FILE_H

#include <stddef.h>
#include <sys/types.h>

/**
 * Check path (length, what is there: a stale socket is removed) and resolve
 * group (NULL: none) into *gid.
 *
 * @return 0, or -errno with "PATH: reason" in err (as lb_server_create()).
 */
int lb_server_file_prepare(const char *path, const char *group, gid_t *gid, char *err,
                           size_t errlen);

/**
 * Bind the listening socket lfd at path: in a private 0700 directory next to
 * it, given group (gid; NULL: left as created) and mode there, then renamed to
 * path without replacing anything; the private directory is removed. *dev and
 * *ino identify the file.
 *
 * @return 0, or -errno with "PATH: reason" in err (-EEXIST: something
 *   appeared at path meanwhile, left alone); nothing of ours is left behind.
 */
int lb_server_file_bind(int lfd, const char *path, mode_t mode, const char *group, gid_t gid,
                        dev_t *dev, ino_t *ino, char *err, size_t errlen);

/**
 * Check that a server could be created at path, without creating anything:
 * nothing there, or a stale socket. Lets a daemon fail before it takes its
 * ports when another instance owns the socket.
 *
 * @return 0, or -errno with "PATH: reason" in err: -EADDRINUSE another
 *   process accepts on it, -EEXIST the path is not a socket, -ENAMETOOLONG.
 */
int lb_server_check_path(const char *path, char *err, size_t errlen);

/**
 * Resolve a group given by name or as a decimal gid.
 *
 * @return 0 with *gid set, or -EINVAL with the reason in err.
 */
int lb_server_resolve_group(const char *group, gid_t *gid, char *err, size_t errlen);

#endif /* LB_SERVER_FILE_H */
