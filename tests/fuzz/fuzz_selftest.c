/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A harness that crashes on purpose: any input that begins with "crash"
 * aborts. check_run_fuzz.sh runs it through run_fuzz.sh to show that a
 * fuzzer's crash is reported as a failure, never as a skip.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 5 && memcmp(data, "crash", 5) == 0)
		abort();
	return 0;
}
