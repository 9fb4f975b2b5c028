/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_test.h - what the tcp provider's case-per-line test programs share:
 * CHECK (report where a case failed, then its cleanup at out:) and a
 * monotonic clock in milliseconds for their deadlines.
 */
#ifndef TCP_TEST_H
#define TCP_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "  %s:%d: ", __func__, __LINE__);      \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			goto out;                                              \
		}                                                              \
	} while (0)

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif /* TCP_TEST_H */
