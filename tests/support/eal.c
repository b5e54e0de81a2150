/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL start-up for unit tests and benchmarks: no hugepages, no PCI, one lcore
 * on the first CPU the process may run on, so `taskset -c N` places it (EAL
 * would otherwise move the thread to CPU 0).
 */
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>

#include "eal.h"

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
	snprintf(name, sizeof(name), "%s", prog);
	snprintf(file_prefix, sizeof(file_prefix), "%s-%d", prefix, (int)getpid());
	return rte_eal_init(argc, argv);
}
