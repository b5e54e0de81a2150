/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>

#include "eal.h"

int
test_eal_init(const char *prog, const char *prefix)
{
	char name[64], file_prefix[64];
	char *argv[] = {name,        "--no-huge", "-m", "256",         "--no-pci", "--file-prefix",
	                file_prefix, "-l",        "0",  "--log-level", "error",    NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;

	snprintf(name, sizeof(name), "%s", prog);
	snprintf(file_prefix, sizeof(file_prefix), "%s-%d", prefix, (int)getpid());
	return rte_eal_init(argc, argv);
}
