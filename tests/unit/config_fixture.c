/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared part of the configuration loader tests (config_fixture.h):
 * loading single-quoted documents and checking error messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "control/model/config.h"

#include "config_fixture.h"

json_t *
parse_sq(const char *sq)
{
	char *s = strdup(sq);
	json_error_t je;
	json_t *root;

	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	root = json_loads(s, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL)
		fail_msg("test JSON does not parse (line %d): %s\n%s", je.line, je.text, s);
	free(s);
	return root;
}

struct lb_config *
load_sq(const char *sq, char *err)
{
	json_t *root = parse_sq(sq);
	struct lb_config *cfg;

	err[0] = '\0';
	cfg = lb_config_from_json(root, err, ERR_LEN);
	json_decref(root);
	return cfg;
}

struct lb_config *
load_ok(const char *sq)
{
	char err[ERR_LEN];
	struct lb_config *cfg = load_sq(sq, err);

	if (cfg == NULL)
		fail_msg("config rejected: %s", err);
	return cfg;
}

void
assert_error(const char *err, const char *path, const char *reason)
{
	size_t n = strlen(path);

	if (strncmp(err, path, n) != 0 || strncmp(err + n, ": ", 2) != 0)
		fail_msg("message \"%s\" does not start with \"%s: \"", err, path);
	if (strstr(err + n + 2, reason) == NULL)
		fail_msg("message \"%s\" does not say \"%s\"", err, reason);
	if (strchr(err, '\n') != NULL)
		fail_msg("message \"%s\" is not one line", err);
}
