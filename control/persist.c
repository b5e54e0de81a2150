/* SPDX-License-Identifier: BSD-3-Clause */
/* Stub: being written. */
#include <errno.h>
#include "persist.h"

int
lb_persist_write(const char *path, const json_t *doc, char *err, size_t errlen)
{
	(void)path;
	(void)doc;
	(void)err;
	(void)errlen;
	return -ENOSYS;
}
