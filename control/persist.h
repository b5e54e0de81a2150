/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Durable state: the configuration document written atomically (temporary
 * file in the same directory, write, fsync, rename over the old file, fsync of
 * the directory), mode 0600, so a crash at any moment leaves either the old or
 * the new file, complete.
 */
#ifndef LB_PERSIST_H
#define LB_PERSIST_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/**
 * Replace path with doc, atomically and durably.
 *
 * @return 0, or -errno with "path: what failed: why" in err; on failure the
 *   old file is untouched and no temporary file is left behind.
 */
int lb_persist_write(const char *path, const json_t *doc, char *err, size_t errlen);

/**
 * Replace path with len bytes of text the same way, with the given mode
 * (whatever the umask). lb_persist_write is this with mode 0600.
 */
int lb_persist_write_text(const char *path, const char *text, size_t len, mode_t mode, char *err,
                          size_t errlen);

/**
 * Remove temporary files ("path.XXXXXX") that a crash between creating and
 * renaming one left next to path. Call at start-up, before any write.
 *
 * @return how many were removed, or -errno if the directory cannot be read.
 */
int lb_persist_cleanup(const char *path);

#endif /* LB_PERSIST_H */
