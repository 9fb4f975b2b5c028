/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_check.h - what the shm test programs share: the failure counter and
 * its CHECK (record and leave the test function) and DIE_IF (setup cannot
 * go on) macros, and (test_iov.h) a plain iov copy for counting copy
 * overrides.
 */
#ifndef SHM_CHECK_H
#define SHM_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			failures++;                                            \
			return;                                                \
		}                                                              \
	} while (0)

#define DIE_IF(cond, what)                                                     \
	do {                                                                   \
		if (cond) {                                                    \
			fprintf(stderr, "setup: %s failed\n", what);           \
			exit(2);                                               \
		}                                                              \
	} while (0)

#include "test_iov.h"

#endif /* SHM_CHECK_H */
