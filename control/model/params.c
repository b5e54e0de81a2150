/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The table of the hot object's parameters (params.h has each bound with its
 * unit and reason) and the checks every reader of a value shares.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "control/model/params.h"

static const char *const weight_names[] = {"packets", "bytes", NULL};

const struct lb_param lb_hot_param_table[LB_HOT_P_N] = {
        [LB_HOT_P_ENABLED] = {.name = "enabled",
                              .type = LB_PARAM_BOOL,
                              .min = 0,
                              .max = 1,
                              .def = LB_HOT_ENABLED_DEFAULT,
                              .where = LB_PARAM_FILE,
                              .unit = "on/off"},
        [LB_HOT_P_WINDOW_MS] = {.name = "window_ms",
                                .type = LB_PARAM_INT,
                                .min = LB_HOT_WINDOW_MS_MIN,
                                .max = LB_HOT_WINDOW_MS_MAX,
                                .def = LB_HOT_WINDOW_MS_DEFAULT,
                                .where = LB_PARAM_SOCKET,
                                .unit = "ms"},
        [LB_HOT_P_THRESHOLD] = {.name = "threshold",
                                .type = LB_PARAM_REAL,
                                .min = LB_HOT_THRESHOLD_MIN,
                                .max = LB_HOT_THRESHOLD_MAX,
                                .min_open = true,
                                .auto_ok = true,
                                .auto_value = LB_HOT_THRESHOLD_AUTO,
                                .def = LB_HOT_THRESHOLD_AUTO,
                                .where = LB_PARAM_SOCKET,
                                .unit = "share of the VIP"},
        [LB_HOT_P_EPSILON] = {.name = "epsilon",
                              .type = LB_PARAM_REAL,
                              .min = LB_HOT_EPSILON_MIN,
                              .max = LB_HOT_EPSILON_MAX,
                              .def = LB_HOT_EPSILON_DEFAULT,
                              .where = LB_PARAM_SOCKET,
                              .unit = "fraction of the fair share"},
        [LB_HOT_P_WEIGHT] = {.name = "weight",
                             .type = LB_PARAM_ENUM,
                             .min = 0,
                             .max = LB_HOT_WEIGHT_BYTES,
                             .def = LB_HOT_WEIGHT_PACKETS,
                             .names = weight_names,
                             .where = LB_PARAM_RESTART,
                             .unit = "packets or bytes"},
        [LB_HOT_P_SAMPLE] = {.name = "sample",
                             .type = LB_PARAM_INT,
                             .min = 0,
                             .max = LB_HOT_SAMPLE_MAX,
                             .auto_ok = true,
                             .auto_value = LB_HOT_SAMPLE_AUTO,
                             .def = LB_HOT_SAMPLE_AUTO,
                             .where = LB_PARAM_SOCKET,
                             .unit = "shift: 1 packet in 2^shift"},
        [LB_HOT_P_MARGIN] = {.name = "margin",
                             .type = LB_PARAM_REAL,
                             .min = 0,
                             .max = LB_HOT_MARGIN_MAX,
                             .def = LB_HOT_MARGIN_DEFAULT,
                             .where = LB_PARAM_SOCKET,
                             .unit = "fraction of the cap"},
        [LB_HOT_P_EWMA_ALPHA] = {.name = "ewma_alpha",
                                 .type = LB_PARAM_REAL,
                                 .min = LB_HOT_EWMA_ALPHA_MIN,
                                 .max = 1,
                                 .def = LB_HOT_EWMA_ALPHA_DEFAULT,
                                 .where = LB_PARAM_SOCKET,
                                 .unit = "weight of the newest window"},
        [LB_HOT_P_DEMOTE_WINDOWS] = {.name = "demote_windows",
                                     .type = LB_PARAM_INT,
                                     .min = LB_HOT_DEMOTE_WINDOWS_MIN,
                                     .max = LB_HOT_DEMOTE_WINDOWS_MAX,
                                     .def = LB_HOT_DEMOTE_WINDOWS_DEFAULT,
                                     .where = LB_PARAM_SOCKET,
                                     .unit = "windows"},
        [LB_HOT_P_THRESHOLD_LOW] = {.name = "threshold_low",
                                    .type = LB_PARAM_REAL,
                                    .min = LB_HOT_THRESHOLD_MIN,
                                    .max = LB_HOT_THRESHOLD_MAX,
                                    .min_open = true,
                                    .auto_ok = true,
                                    .auto_value = LB_HOT_THRESHOLD_LOW_AUTO,
                                    .def = LB_HOT_THRESHOLD_LOW_AUTO,
                                    .where = LB_PARAM_SOCKET,
                                    .unit = "share of the VIP"},
};

const struct lb_param *
lb_param_find(const char *name)
{
	for (size_t i = 0; i < LB_HOT_P_N; i++)
		if (strcmp(lb_hot_param_table[i].name, name) == 0)
			return &lb_hot_param_table[i];
	return NULL;
}

bool
lb_param_ok(const struct lb_param *p, double x)
{
	if (p->auto_ok && x == p->auto_value)
		return true;
	/* Written so that NaN fails. */
	if (!(p->min_open ? x > p->min : x >= p->min) || !(x <= p->max))
		return false;
	return p->type == LB_PARAM_REAL || x == floor(x);
}

const char *
lb_param_range(const struct lb_param *p, char *buf, size_t len)
{
	snprintf(buf, len, "%c%g, %g]", p->min_open ? '(' : '[', p->min, p->max);
	return buf;
}
