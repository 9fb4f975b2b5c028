/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * test_proc.h - what the two-process timing tests share
 * (tests/shm/shared_core.c, tests/shm/shm_wake.c): dying with an fi_errno,
 * a millisecond clock (also shm_features' time bounds), and pinning to one
 * CPU. Include it after defining _GNU_SOURCE (sched_setaffinity).
 */
#ifndef TEST_PROC_H
#define TEST_PROC_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rdma/fi_errno.h>

static inline void die(const char *what, int ret)
{
	fprintf(stderr, "%s: %s (%d)\n", what, fi_strerror(-ret), ret);
	exit(1);
}

static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Both processes on the first CPU we may use (inherited by the child). */
static inline int pin_one_cpu(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
		;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -1 : cpu;
}

#endif /* TEST_PROC_H */
