/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every harness provides and the helpers they share. A harness is
 * linked either with libFuzzer (-fsanitize=fuzzer) or with replay.c; it
 * reports a bug by crashing or through FUZZ_CHECK (message, then abort()).
 */
#ifndef SPW_FUZZ_H
#define SPW_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif /* SPW_FUZZ_H */
