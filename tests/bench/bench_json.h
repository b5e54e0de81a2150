/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Machine-readable output of the C benchmarks (--json FILE): one document
 *   {"bench": NAME, "tsc_hz": HZ or null, "results": [{"name": ..., ...}, ...]}
 * written when the benchmark ends. Each result carries its own figures under
 * fixed keys (ns_per_pkt, cycles_per_pkt, ms, ...); scripts/bench.py reads them.
 * Header-only: each benchmark is one translation unit.
 */
#ifndef SPW_BENCH_JSON_H
#define SPW_BENCH_JSON_H

#include <stdio.h>
#include <string.h>

#include <jansson.h>

static json_t *g_bj_results; /* NULL unless --json was given */
static const char *g_bj_path;

/*
 * Take "--json FILE" out of argv (anywhere after argv[0]); returns the new
 * argc. The other arguments keep their order.
 */
static inline int
bj_args(int argc, char **argv)
{
	int out = 1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
			g_bj_path = argv[++i];
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	if (g_bj_path != NULL)
		g_bj_results = json_array();
	return out;
}

/* Append a result (steals the reference); no-op without --json. */
static inline void
bj_add(json_t *result)
{
	if (g_bj_results == NULL || result == NULL) {
		json_decref(result);
		return;
	}
	json_array_append_new(g_bj_results, result);
}

/* Write the document; 0, or -1 if it could not be written. */
static inline int
bj_write(const char *bench, double tsc_hz)
{
	json_t *doc;
	int rc;

	if (g_bj_results == NULL)
		return 0;
	doc = json_pack("{s:s, s:o, s:O}", "bench", bench, "tsc_hz",
	                tsc_hz > 0 ? json_real(tsc_hz) : json_null(), "results", g_bj_results);
	rc = doc != NULL ? json_dump_file(doc, g_bj_path, JSON_INDENT(1)) : -1;
	if (rc != 0)
		fprintf(stderr, "%s: cannot write %s\n", bench, g_bj_path);
	json_decref(doc);
	json_decref(g_bj_results);
	g_bj_results = NULL;
	return rc;
}

#endif /* SPW_BENCH_JSON_H */
