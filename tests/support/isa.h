/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests whose cases need an instruction set the CPU may lack run them as
 * a separate meson test (the same program with --isa=NAME), which exits 77
 * (meson: SKIP) with a "SKIP:" line on a CPU without it. A skipped vector path
 * is then reported as skipped, never as passed.
 */
#ifndef SPW_TEST_ISA_H
#define SPW_TEST_ISA_H

#include <stdbool.h>

/* Exit status meson reports as a skipped test. */
#define SPW_TEST_SKIP 77

/*
 * The NAME of a --isa=NAME argument ("avx2", "avx512f"), or NULL without one.
 * An argument that is not --isa=NAME is an error: prints usage, exits 2.
 */
const char *isa_arg(int argc, char **argv);

/* True if this CPU runs NAME ("avx2", "avx512f", "avx512dq"); false for unknown names. */
bool isa_present(const char *name);

/*
 * For a test program's main(): if NAME is set and this CPU lacks it, prints
 * "SKIP: this CPU has no NAME: WHAT not exercised" and returns true (the caller
 * returns SPW_TEST_SKIP).
 */
bool isa_skip(const char *name, const char *what);

#endif /* SPW_TEST_ISA_H */
