/*
 * fuzz_check.h - the property check of the libFuzzer harnesses (the
 * fuzz_*.c programs under tests): a broken property aborts, so that
 * libFuzzer keeps the input and reports it like a crash.
 */
#ifndef FUZZ_CHECK_H
#define FUZZ_CHECK_H

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

#endif /* FUZZ_CHECK_H */
