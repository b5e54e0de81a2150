/* SPDX-License-Identifier: BSD-3-Clause */
/* DPDK EAL start-up for tests and benchmarks. */
#ifndef SPW_TEST_EAL_H
#define SPW_TEST_EAL_H

/*
 * rte_eal_init() on one lcore, without hugepages (256 MB) or PCI, logging
 * errors only, as program prog with the file prefix "<prefix>-<pid>", so that
 * runs side by side do not collide. Returns rte_eal_init()'s result.
 */
int test_eal_init(const char *prog, const char *prefix);

#endif /* SPW_TEST_EAL_H */
