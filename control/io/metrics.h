/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus text exposition format (version 0.0.4) of the daemon's
 * reports: the stats document, the hot_list document and the metrics
 * endpoint's own request counts become spillway_* metric families. Pure: JSON
 * in, text out, no I/O, so it is tested on fixed documents.
 */
#ifndef LB_METRICS_H
#define LB_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* HTTP statuses the metrics endpoint counts, in the order of its counters. */
#define LB_METRICS_CODES 8
extern const unsigned int lb_metrics_codes[LB_METRICS_CODES]; /* 200 400 404 405 408 431 500 503 */

struct lb_metrics_input {
	const json_t *stats; /* lb_control_stats()'s document (required) */
	const json_t *hot;   /* the hot_list result, or NULL (hot keys off) */
	const char *version; /* spillway_build_info's version label */
	/* Requests answered per status, indexed like lb_metrics_codes (NULL: none). */
	const uint64_t *http;
};

/**
 * Render in as text: every family with its # HELP and # TYPE lines, then its
 * samples; label values escaped as the format asks (backslash, double quote,
 * line feed).
 *
 * @return 0 with a NUL-terminated text in *out (caller frees) of *len bytes;
 *   -EINVAL if in, in->stats, out or len is NULL, or stats is not an object;
 *   -E2BIG if the text would exceed max bytes; -ENOMEM.
 */
int lb_metrics_render(const struct lb_metrics_input *in, size_t max, char **out, size_t *len);

#endif /* LB_METRICS_H */
