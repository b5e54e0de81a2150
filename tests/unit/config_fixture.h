/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the configuration loader tests (test_config*.c) share: documents
 * written with single quotes (readable in C strings) loaded through
 * lb_config_from_json, and the check that an error message names its field
 * path and its reason on one line.
 */
#ifndef SPW_TEST_CONFIG_FIXTURE_H
#define SPW_TEST_CONFIG_FIXTURE_H

#include <jansson.h>

#include "control/model/config.h"

#define ERR_LEN 512

/*
 * The document sq, written with single quotes so that the tables stay readable
 * (each swapped for a double quote here); fails the test if it does not parse.
 */
json_t *parse_sq(const char *sq);

/* lb_config_from_json of the single-quoted document; NULL with err (ERR_LEN) set if rejected. */
struct lb_config *load_sq(const char *sq, char *err);

/* The loaded configuration; fails the test if it is rejected. */
struct lb_config *load_ok(const char *sq);

/* err is "path: ..." on one line and says reason after the path; fails the test otherwise. */
void assert_error(const char *err, const char *path, const char *reason);

#endif /* SPW_TEST_CONFIG_FIXTURE_H */
