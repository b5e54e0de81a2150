/* SPDX-License-Identifier: BSD-3-Clause */
/* The --isa=NAME convention of the unit tests (see isa.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa.h"

const char *
isa_arg(int argc, char **argv)
{
	if (argc < 2)
		return NULL;
	if (argc == 2 && strncmp(argv[1], "--isa=", 6) == 0 && argv[1][6] != '\0')
		return argv[1] + 6;
	fprintf(stderr, "usage: %s [--isa=avx2|avx512f]\n", argv[0]);
	exit(2);
}

bool
isa_present(const char *name)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (strcmp(name, "avx2") == 0)
		return __builtin_cpu_supports("avx2");
	if (strcmp(name, "avx512f") == 0)
		return __builtin_cpu_supports("avx512f");
	if (strcmp(name, "avx512dq") == 0)
		return __builtin_cpu_supports("avx512dq");
#endif
	(void)name;
	return false;
}

bool
isa_skip(const char *name, const char *what)
{
	if (!name || isa_present(name))
		return false;
	printf("SKIP: this CPU has no %s: %s not exercised\n", name, what);
	return true;
}
