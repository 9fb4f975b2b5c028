/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fuzz_check.h - the property check of the libFuzzer harnesses (the
 * fuzz_*.c programs under tests): a broken property aborts, so that
 * libFuzzer keeps the input and reports it like a crash.
 */
#ifndef FUZZ_CHECK_H
#define FUZZ_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#c);                                           \
			abort();                                               \
		}                                                              \
	} while (0)

/* The harness as a plain program: runs each file named on the command
 * line as one input (the regression corpus, no fuzzing); the count run. */
static inline int fuzz_run_files(int argc, char **argv,
				 int (*one)(const uint8_t *, size_t))
{
	static uint8_t buf[1 << 16];
	size_t n;
	FILE *f;
	int i;

	for (i = 1; i < argc; i++) {
		f = fopen(argv[i], "rb");
		CHECK(f);
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		one(buf, n);
	}
	return argc - 1;
}

#endif /* FUZZ_CHECK_H */
