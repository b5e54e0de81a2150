/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL start-up for unit tests and benchmarks: no hugepages, no PCI, one lcore
 * on the first CPU the process may run on, so `taskset -c N` places it (EAL
 * would otherwise move the thread to CPU 0). The EAL runtime folder this
 * process created (/var/run/dpdk/<prefix>-<pid>) is removed at exit.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include "eal.h"

static char g_runtime_dir[PATH_MAX];

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Only the folder named after this process's own file prefix. */
static void
remove_runtime_dir(void)
{
	if (g_runtime_dir[0] != '\0')
		nftw(g_runtime_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int
test_eal_init(const char *prog, const char *prefix)
{
	char name[64], file_prefix[64], lcore[32];
	char *argv[] = {name,        "--no-huge", "-m",  "256",         "--no-pci", "--file-prefix",
	                file_prefix, "--lcores",  lcore, "--log-level", "error",    NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	cpu_set_t set;
	int cpu = 0;

	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	}
	/* Lcore 0 on that CPU. */
	snprintf(lcore, sizeof(lcore), "0@%d", cpu);
	int rc;

	snprintf(name, sizeof(name), "%s", prog);
	snprintf(file_prefix, sizeof(file_prefix), "%s-%d", prefix, (int)getpid());
	rc = rte_eal_init(argc, argv);
	if (rc >= 0) {
		const char *dir = rte_eal_get_runtime_dir();

		/* The folder must end in our own prefix: never remove another's. */
		if (dir && strlen(dir) > strlen(file_prefix) &&
		    strcmp(dir + strlen(dir) - strlen(file_prefix), file_prefix) == 0) {
			snprintf(g_runtime_dir, sizeof(g_runtime_dir), "%s", dir);
			atexit(remove_runtime_dir);
		}
	}
	return rc;
}
