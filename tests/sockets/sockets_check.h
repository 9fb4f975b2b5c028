/*
 * sockets_check.h - what the sockets test programs share: the failure
 * flag and CHECK (print the failed condition, set the flag, leave the
 * case with -1), and a monotonic clock in seconds for their deadlines.
 */
#ifndef SOCKETS_CHECK_H
#define SOCKETS_CHECK_H

#include <stdio.h>
#include <time.h>

static int failed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("  %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
			failed = 1;                                            \
			return -1;                                             \
		}                                                              \
	} while (0)

static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* SOCKETS_CHECK_H */
