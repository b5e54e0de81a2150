/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Request ids Jansson cannot hold: an integer beyond 64 bits (or a number
 * beyond double range) is valid JSON and a valid JSON-RPC id, but makes
 * json_loadb fail. These find such ids in the text, so the dispatcher parses
 * the line with a placeholder and echoes each id exactly as the client sent it.
 */
#ifndef LB_RPC_ID_H
#define LB_RPC_ID_H

#include <stddef.h>

/* One id found in a line: its call (0 for a single request), its bytes in the line. */
struct lb_rpc_big_id {
	size_t call;
	size_t off, len;
};

/**
 * Find the "id" members whose number Jansson refuses (numeric overflow): of
 * the top-level object, or of each object element of a top-level array
 * (element index = call). Members spelled with escapes are not recognised.
 * On success *out is a malloc'd copy of the line (NUL-terminated, *outlen
 * bytes) with each such number replaced by 0, for the caller to parse and free.
 *
 * @return how many were found and recorded in ids (at most max; none: *out is
 *   NULL), or -ENOMEM.
 */
int lb_rpc_big_ids(const char *line, size_t len, struct lb_rpc_big_id *ids, size_t max, char **out,
                   size_t *outlen);

/**
 * A copy of the line with every number token (outside strings, anywhere in
 * the document) that is a well-formed JSON number Jansson refuses replaced by
 * 0: whether the line is valid JSON then depends on Jansson's reading of the
 * copy alone. *out is malloc'd and NUL-terminated (*outlen bytes), for the
 * caller to free.
 *
 * @return how many numbers were replaced (none: *out is NULL), or -ENOMEM.
 */
int lb_rpc_without_big_numbers(const char *line, size_t len, char **out, size_t *outlen);

/**
 * Text of reply (a compact dump beginning {"jsonrpc":"2.0","id":null,) with
 * the null id replaced by the len bytes of raw.
 *
 * @return a malloc'd string, or NULL (out of memory, or reply not of that form).
 */
char *lb_rpc_splice_id(const char *reply, const char *raw, size_t len);

#endif /* LB_RPC_ID_H */
