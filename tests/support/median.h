/* SPDX-License-Identifier: BSD-3-Clause */
/* The median of timed rounds, for benchmarks. */
#ifndef SPW_TEST_MEDIAN_H
#define SPW_TEST_MEDIAN_H

#include <stdint.h>

/* Sorts r[0..n) in place (ascending) and returns r[n / 2]. */
double median(double *r, uint32_t n);

#endif /* SPW_TEST_MEDIAN_H */
