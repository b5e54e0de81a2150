/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON text as the daemon writes it (control socket replies, the state file):
 * Jansson's encoding with every real number at its shortest round-trip
 * precision (0.3, not Jansson's 17 digits 0.29999999999999999), still a
 * real (1.0 stays 1.0), and reading back to the same double.
 */
#ifndef LB_JSON_TEXT_H
#define LB_JSON_TEXT_H

#include <stddef.h>

#include <jansson.h>

/**
 * json_dumps(j, flags) with each real number shortened in place.
 * @return a malloc'd text, or NULL (out of memory, or j NULL).
 */
char *lb_json_text_dumps(const json_t *j, size_t flags);

/**
 * Shorten every real number of JSON text s (NUL-ended) in place, strings left
 * as they are; a number is never made longer. @return the new length.
 */
size_t lb_json_text_shorten(char *s);

#endif /* LB_JSON_TEXT_H */
