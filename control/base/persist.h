/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Durable state: the configuration document written atomically (temporary
 * file ".NAME.spw-tmp.XXXXXX" in the same directory, write, fsync, rename over
 * the old file, fsync of the directory), mode 0600, so a crash at any moment
 * leaves either the old or the new file, complete.
 */
#ifndef LB_PERSIST_H
#define LB_PERSIST_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/*
 * lb_persist_write's return when the rename succeeded but the directory fsync
 * that makes it durable failed: path holds the new document (every reader
 * sees it) but a power loss may bring the old file back. err says why.
 */
#define LB_PERSIST_UNSYNCED 1

/**
 * Replace path with doc, atomically and durably.
 *
 * @return 0: path holds doc, durably. -errno with "path: what failed: why" in
 *   err: failed before the rename, the old file is untouched and no temporary
 *   file is left behind. LB_PERSIST_UNSYNCED: path holds doc, but the
 *   directory fsync failed ("path: fsync directory: why" in err).
 */
int lb_persist_write(const char *path, const json_t *doc, char *err, size_t errlen);

/**
 * Replace path with len bytes of text the same way, with the given mode
 * (whatever the umask), with the same returns. lb_persist_write is this with
 * mode 0600.
 */
int lb_persist_write_text(const char *path, const char *text, size_t len, mode_t mode, char *err,
                          size_t errlen);

/**
 * Remove the temporary files a crash between creating and renaming one left
 * next to path: regular files named exactly "." + basename + ".spw-tmp." + 6
 * characters of [A-Za-z0-9], the names lb_persist_write makes. Nothing else is
 * touched (an operator's "state.json.backup" or "state.json.a1B2c3" stays);
 * in particular not "basename.XXXXXX" files of earlier versions, which cannot
 * be told apart from an operator's. Call at start-up, before any write.
 *
 * @return how many were removed, or -errno if the directory cannot be read.
 */
int lb_persist_cleanup(const char *path);

#endif /* LB_PERSIST_H */
