/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key fields of the configuration: a VIP's hot_mode (what the
 * controller may do with its hot keys) and the hot object's parameters,
 * decoded from JSON against params.h's table and written back. Shared by the
 * file loader and the control socket, so both refuse the same values the same
 * way.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "control/model/config.h"
#include "control/model/config_internal.h"

const char *const lb_config_hot_mode_names[] = {"spread", "report", "off", "per_packet", NULL};

/* "path.key" into buf; "key" alone for an empty path. */
static const char *
field(char *buf, size_t len, const char *path, const char *key)
{
	snprintf(buf, len, "%s%s%s", path, *path ? "." : "", key);
	return buf;
}

uint8_t
lb_config_hot_mode_default(uint8_t key_mode)
{
	return key_mode == LB_KEY_5TUPLE ? LB_HOT_SPREAD : LB_HOT_REPORT;
}

const char *
lb_config_hot_mode_name(uint8_t hot_mode)
{
	return hot_mode <= LB_HOT_PER_PACKET ? lb_config_hot_mode_names[hot_mode] : "?";
}

int
lb_config_hot_mode_from_json(const json_t *v, uint8_t proto, const char *path, uint8_t *out,
                             char *err, size_t errlen)
{
	char p[256];
	const char *s;

	field(p, sizeof(p), path, "hot_mode");
	if (!json_is_string(v)) {
		snprintf(err, errlen, "%s: expected a string, got %s", p, lb_config_json_type(v));
		return -EINVAL;
	}
	s = json_string_value(v);
	for (uint8_t i = 0; lb_config_hot_mode_names[i] != NULL; i++) {
		if (strcmp(s, lb_config_hot_mode_names[i]) != 0)
			continue;
		if (i == LB_HOT_PER_PACKET && proto != IPPROTO_UDP) {
			snprintf(err, errlen,
			         "%s: \"per_packet\" is for UDP VIPs only (a TCP connection must "
			         "stay on one backend)",
			         p);
			return -EINVAL;
		}
		*out = i;
		return 0;
	}
	snprintf(err, errlen, "%s: \"%s\" is not one of: spread, report, off, per_packet", p, s);
	return -EINVAL;
}

/* What p takes, for "expected ..., got x": "a number", "\"auto\" or an integer". */
static const char *
expected(const struct lb_param *p)
{
	switch (p->type) {
	case LB_PARAM_BOOL:
		return "a boolean";
	case LB_PARAM_INT:
		return p->auto_ok ? "\"auto\" or an integer" : "an integer";
	case LB_PARAM_REAL:
		return p->auto_ok ? "\"auto\" or a number" : "a number";
	default:
		return "a string";
	}
}

static int
enum_from_json(const struct lb_param *p, const char *s, const char *name, double *out, char *err,
               size_t errlen)
{
	char list[128] = "";

	for (int i = 0; p->names[i] != NULL; i++) {
		if (strcmp(p->names[i], s) == 0) {
			*out = i;
			return 0;
		}
		strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
		strncat(list, p->names[i], sizeof(list) - strlen(list) - 1);
	}
	snprintf(err, errlen, "%s: \"%s\" is not one of: %s", name, s, list);
	return -EINVAL;
}

int
lb_config_hot_param_from_json(const struct lb_param *p, const json_t *v, const char *path,
                              double *out, char *err, size_t errlen)
{
	char name[256], range[64];
	double x;

	field(name, sizeof(name), path, p->name);
	if (p->type == LB_PARAM_ENUM && json_is_string(v))
		return enum_from_json(p, json_string_value(v), name, out, err, errlen);
	if (p->auto_ok && json_is_string(v) && strcmp(json_string_value(v), "auto") == 0) {
		*out = p->auto_value;
		return 0;
	}
	if (p->type == LB_PARAM_BOOL && json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (!(p->type == LB_PARAM_INT && json_is_integer(v)) &&
	    !(p->type == LB_PARAM_REAL && json_is_number(v))) {
		if (json_is_string(v) && p->auto_ok)
			snprintf(err, errlen, "%s: expected %s, got \"%s\"", name, expected(p),
			         json_string_value(v));
		else
			snprintf(err, errlen, "%s: expected %s, got %s", name, expected(p),
			         lb_config_json_type(v));
		return -EINVAL;
	}
	x = json_number_value(v);
	if (!lb_param_ok(p, x) || (p->auto_ok && x == p->auto_value)) {
		lb_param_range(p, range, sizeof(range));
		if (json_is_integer(v))
			snprintf(err, errlen, "%s: %lld out of range %s%s", name,
			         (long long)json_integer_value(v), range,
			         p->auto_ok ? " or \"auto\"" : "");
		else
			snprintf(err, errlen, "%s: %g out of range %s%s", name, x, range,
			         p->auto_ok ? " or \"auto\"" : "");
		return -EINVAL;
	}
	*out = x;
	return 0;
}

int
lb_config_hot_check_low(double threshold, double low, const char *path, char *err, size_t errlen)
{
	char lname[256], tname[256];

	if (!(threshold > 0 && low > threshold))
		return 0;
	snprintf(err, errlen, "%s: %g is above %s %g",
	         field(lname, sizeof(lname), path, "threshold_low"), low,
	         field(tname, sizeof(tname), path, "threshold"), threshold);
	return -EINVAL;
}

int
lb_config_hot_params_from_json(const json_t *obj, const char *path, bool socket,
                               double val[LB_HOT_P_N], bool given[LB_HOT_P_N], char *err,
                               size_t errlen)
{
	char name[256];
	const char *k;
	json_t *v;
	int rc;

	json_object_foreach ((json_t *)obj, k, v) {
		const struct lb_param *p = lb_param_find(k);

		if (p == NULL) {
			snprintf(err, errlen, "%s: unknown field",
			         field(name, sizeof(name), path, k));
			return -EINVAL;
		}
		if (socket && p->where == LB_PARAM_RESTART) {
			snprintf(
			        err, errlen,
			        "%s: restart-only (hot.%s in the configuration file), not settable "
			        "through hot_set",
			        field(name, sizeof(name), path, k), k);
			return -EINVAL;
		}
		if (socket && p->where == LB_PARAM_FILE) {
			snprintf(err, errlen,
			         "%s: set in the configuration file only (hot.%s, applied by "
			         "SIGHUP), not through hot_set",
			         field(name, sizeof(name), path, k), k);
			return -EINVAL;
		}
	}
	for (int i = 0; i < LB_HOT_P_N; i++) {
		const struct lb_param *p = &lb_hot_param_table[i];

		v = json_object_get(obj, p->name);
		given[i] = v != NULL;
		if (v != NULL &&
		    (rc = lb_config_hot_param_from_json(p, v, path, &val[i], err, errlen)) != 0)
			return rc;
	}
	if (given[LB_HOT_P_THRESHOLD] && given[LB_HOT_P_THRESHOLD_LOW])
		return lb_config_hot_check_low(val[LB_HOT_P_THRESHOLD], val[LB_HOT_P_THRESHOLD_LOW],
		                               path, err, errlen);
	return 0;
}

json_t *
lb_config_hot_param_json(const struct lb_param *p, double x)
{
	if (p->auto_ok && x == p->auto_value)
		return json_string("auto");
	switch (p->type) {
	case LB_PARAM_BOOL:
		return json_boolean(x != 0);
	case LB_PARAM_INT:
		return json_integer((json_int_t)x);
	case LB_PARAM_ENUM:
		return json_string(p->names[(int)x]);
	default:
		return json_real(x);
	}
}

double
lb_config_hot_get(const struct lb_config *cfg, enum lb_hot_param id)
{
	switch (id) {
	case LB_HOT_P_ENABLED:
		return cfg->hot.enabled;
	case LB_HOT_P_WINDOW_MS:
		return cfg->hot.window_ms;
	case LB_HOT_P_THRESHOLD:
		return cfg->hot.threshold;
	case LB_HOT_P_EPSILON:
		return cfg->hot.epsilon;
	case LB_HOT_P_WEIGHT:
		return cfg->hot.weight;
	case LB_HOT_P_SAMPLE:
		return cfg->hot.sample;
	case LB_HOT_P_MARGIN:
		return cfg->hot.margin;
	case LB_HOT_P_EWMA_ALPHA:
		return cfg->hot.ewma_alpha;
	case LB_HOT_P_DEMOTE_WINDOWS:
		return cfg->hot.demote_windows;
	case LB_HOT_P_THRESHOLD_LOW:
		return cfg->hot.threshold_low;
	default:
		return NAN;
	}
}

void
lb_config_hot_set(struct lb_config *cfg, enum lb_hot_param id, double x)
{
	switch (id) {
	case LB_HOT_P_ENABLED:
		cfg->hot.enabled = x != 0;
		break;
	case LB_HOT_P_WINDOW_MS:
		cfg->hot.window_ms = (uint32_t)x;
		break;
	case LB_HOT_P_THRESHOLD:
		cfg->hot.threshold = x;
		break;
	case LB_HOT_P_EPSILON:
		cfg->hot.epsilon = x;
		break;
	case LB_HOT_P_WEIGHT:
		cfg->hot.weight = (uint8_t)x;
		break;
	case LB_HOT_P_SAMPLE:
		cfg->hot.sample = (int8_t)x;
		break;
	case LB_HOT_P_MARGIN:
		cfg->hot.margin = x;
		break;
	case LB_HOT_P_EWMA_ALPHA:
		cfg->hot.ewma_alpha = x;
		break;
	case LB_HOT_P_DEMOTE_WINDOWS:
		cfg->hot.demote_windows = (uint32_t)x;
		break;
	case LB_HOT_P_THRESHOLD_LOW:
		cfg->hot.threshold_low = x;
		break;
	default:
		break;
	}
}
