/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot-key policy fields of the configuration: a VIP's hot_mode (what the
 * controller may do with its hot keys) and the hot object's weight and sample
 * (what the sketch counts and how densely it samples). Shared by the file
 * loader and the control socket, so both refuse the same values the same way.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "control/model/config.h"
#include "control/model/config_internal.h"

const char *const lb_config_hot_mode_names[] = {"spread", "report", "off", "per_packet", NULL};
const char *const lb_config_hot_weight_names[] = {"packets", "bytes", NULL};

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

int
lb_config_hot_policy_from_json(const json_t *hot, struct lb_config *cfg, char *err, size_t errlen)
{
	const json_t *w = json_object_get(hot, "weight");
	const json_t *s = json_object_get(hot, "sample");

	if (w != NULL) {
		const char *ws = json_is_string(w) ? json_string_value(w) : NULL;

		if (ws == NULL) {
			snprintf(err, errlen, "hot.weight: expected a string, got %s",
			         lb_config_json_type(w));
			return -EINVAL;
		}
		if (strcmp(ws, "packets") == 0)
			cfg->hot.weight = LB_HOT_WEIGHT_PACKETS;
		else if (strcmp(ws, "bytes") == 0)
			cfg->hot.weight = LB_HOT_WEIGHT_BYTES;
		else {
			snprintf(err, errlen, "hot.weight: \"%s\" is not one of: packets, bytes",
			         ws);
			return -EINVAL;
		}
	}
	if (s == NULL)
		return 0;
	if (json_is_string(s) && strcmp(json_string_value(s), "auto") == 0) {
		cfg->hot.sample = LB_HOT_SAMPLE_AUTO;
		return 0;
	}
	if (!json_is_integer(s) || json_integer_value(s) < 0 ||
	    json_integer_value(s) > LB_HOT_SAMPLE_MAX) {
		snprintf(err, errlen,
		         "hot.sample: expected \"auto\" or a shift 0-%d (1 packet in 2^shift), got "
		         "%s",
		         LB_HOT_SAMPLE_MAX,
		         json_is_integer(s) ? "an integer out of range" : lb_config_json_type(s));
		return -EINVAL;
	}
	cfg->hot.sample = (int8_t)json_integer_value(s);
	return 0;
}

json_t *
lb_config_hot_sample_json(int8_t sample)
{
	return sample == LB_HOT_SAMPLE_AUTO ? json_string("auto") : json_integer(sample);
}
