/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replay driver: the main() a harness gets when it is not linked with
 * libFuzzer (gcc builds, sanitizer builds). Every argument is a file or a
 * directory; every regular file in a directory (not recursive, dot files
 * skipped, in name order) is passed once to LLVMFuzzerTestOneInput(). A
 * harness signals a bug by crashing or calling abort(), so getting to the end
 * is the pass. A missing directory is reported and skipped (the regression
 * directories exist only once a bug has been found); no input at all fails.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static unsigned long g_inputs;

static int
run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t n;
	FILE *f;

	f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) != 0 || st.st_size < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		fclose(f);
		return -1;
	}
	/* Exactly st_size bytes on the heap, so ASan sees any read past the input. */
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (buf == NULL) {
		fclose(f);
		return -1;
	}
	n = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	if (n != (size_t)st.st_size) {
		fprintf(stderr, "replay: %s: short read\n", path);
		free(buf);
		return -1;
	}
	if (getenv("SPW_REPLAY_VERBOSE") != NULL)
		fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	g_inputs++;
	return 0;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
run_dir(const char *dir)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	DIR *d;

	d = opendir(dir);
	if (d == NULL) {
		if (errno == ENOENT) {
			fprintf(stderr, "replay: %s: absent, skipped\n", dir);
			return 0;
		}
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn;

			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*names));
			if (nn == NULL) {
				rc = -1;
				break;
			}
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (names[n] == NULL) {
			rc = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
			rc = run_file(path);
		free(names[i]);
	}
	free(names);
	return rc;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		int rc;

		if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
			rc = run_file(argv[i]);
		else
			rc = run_dir(argv[i]);
		if (rc != 0)
			return 1;
	}
	if (g_inputs == 0) {
		fprintf(stderr, "replay: no input found\n");
		return 1;
	}
	printf("replay: %lu inputs, no failure\n", g_inputs);
	return 0;
}
