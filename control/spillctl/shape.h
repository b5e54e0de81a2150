/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shapes of the results spillctl reads, one per method, and the check of
 * a reply against one: the JSON type of every member a command prints, and
 * which of them must be there. Members a shape does not list are ignored, so
 * a server that adds fields still passes; a wrong type never prints as 0.
 */
#ifndef SPILLCTL_SHAPE_H
#define SPILLCTL_SHAPE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* JSON types a value may have, or-ed. */
#define SPILLCTL_K_STR 0x01u
#define SPILLCTL_K_INT 0x02u
#define SPILLCTL_K_REAL 0x04u
#define SPILLCTL_K_BOOL 0x08u
#define SPILLCTL_K_NULL 0x10u
#define SPILLCTL_K_OBJ 0x20u
#define SPILLCTL_K_ARR 0x40u
#define SPILLCTL_K_NUM (SPILLCTL_K_INT | SPILLCTL_K_REAL)
#define SPILLCTL_K_ANY 0x7fu

struct spillctl_member;

struct spillctl_shape {
	unsigned int kinds;                    /* SPILLCTL_K_* */
	const struct spillctl_member *members; /* an object's checked members; NULL key ends */
	const struct spillctl_shape *each;     /* every array element, or every member value */
};

struct spillctl_member {
	const char *key;
	bool required;
	const struct spillctl_shape *shape;
};

/*
 * Checks @v against @s. On a mismatch returns false with "PATH: expected
 * ..., got ..." or "PATH: missing" in @why, PATH starting at @root (e.g.
 * "result[0].backends[1].weight"); server keys in it are escaped.
 */
bool spillctl_shape_check(const json_t *v, const struct spillctl_shape *s, const char *root,
                          char *why, size_t len);

/* Results by method: anything (raw "call"), an object (results not read). */
extern const struct spillctl_shape spillctl_shape_any;
extern const struct spillctl_shape spillctl_shape_object;
extern const struct spillctl_shape spillctl_shape_version;
extern const struct spillctl_shape spillctl_shape_vip_list;
extern const struct spillctl_shape spillctl_shape_vip;     /* vip_get, vip_add */
extern const struct spillctl_shape spillctl_shape_backend; /* backend_add, backend_set */
extern const struct spillctl_shape spillctl_shape_stats;
extern const struct spillctl_shape spillctl_shape_maglev_table;
extern const struct spillctl_shape spillctl_shape_config_save;
extern const struct spillctl_shape spillctl_shape_drain; /* drain, undrain */
extern const struct spillctl_shape spillctl_shape_hot_list;
extern const struct spillctl_shape spillctl_shape_hot_events;
extern const struct spillctl_shape spillctl_shape_hot_set;

#endif /* SPILLCTL_SHAPE_H */
