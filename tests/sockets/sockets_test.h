/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_test.h - what the sockets provider's test programs share beyond
 * tcp_test.h (CHECK, which leaves a case through its cleanup at out:):
 * the failure flag and REQUIRE (print the failed condition, set the flag,
 * leave the case with -1) for cases with nothing to clean up, a monotonic
 * clock in seconds for deadlines, finding sockets (a missing provider
 * skips, a sockets without the feature under test fails) and running the
 * cases.
 */
#ifndef SOCKETS_TEST_H
#define SOCKETS_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "../tcp/tcp_test.h"

#define SOCKETS_VER FI_VERSION(1, 17)

/* Set by REQUIRE; programs whose cases all use CHECK leave it alone. */
static int failed __attribute__((unused));

#define REQUIRE(cond)                                                          \
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

struct sockets_case {
	const char *name;
	int (*fn)(void); /* 0: passed */
};

/*
 * fi_getinfo of sockets for @hints (prov_name set here, freed here) on
 * 127.0.0.1 as source: 0, 77 when this library has no sockets provider,
 * 1 when sockets lacks what @hints ask.
 */
static inline int sockets_getinfo(struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *any = fi_allocinfo();
	int ret;

	any->fabric_attr->prov_name = strdup("sockets");
	ret = fi_getinfo(SOCKETS_VER, NULL, NULL, 0, any, info);
	fi_freeinfo(any);
	if (ret) {
		fi_freeinfo(hints);
		return 77;
	}
	fi_freeinfo(*info);
	hints->fabric_attr->prov_name = strdup("sockets");
	ret = fi_getinfo(SOCKETS_VER, "127.0.0.1", NULL, FI_SOURCE, hints,
			 info);
	fi_freeinfo(hints);
	return ret ? 1 : 0;
}

/* Cases that printed PASS, of how many; the process that counts; whether
 * the case loop ran to its end. */
static size_t sockets_passed, sockets_cases;
static pid_t sockets_pid;
static int sockets_done;

/* A program that exits before every case ran (a case calling exit, a
 * library calling it) fails, whatever status it exits with. */
static inline void sockets_exit_check(void)
{
	if (getpid() != sockets_pid || sockets_done)
		return;
	printf("FAIL: exit after %zu of %zu cases passed\n", sockets_passed,
	       sockets_cases);
	fflush(stdout);
	_exit(1);
}

/*
 * A case-per-line program: @setup (0, 77 to skip, else it failed: @what
 * says what it opened), one PASS or FAIL line per case, @teardown. The
 * exit status: 0 only when all @n cases printed PASS. A forked child
 * that returns into the case loop instead of calling _exit ends there
 * (status 1), never running its parent's remaining cases.
 */
static inline int sockets_main(int (*setup)(void), const char *what,
			       const struct sockets_case *c, size_t n,
			       void (*teardown)(void))
{
	int ret;
	size_t i;

	unsetenv("FI_PROVIDER");
	sockets_pid = getpid();
	ret = setup();
	if (ret == 77)
		printf("SKIP: no sockets provider\n");
	else if (ret)
		printf("FAIL: setup (%s)\n", what);
	if (ret)
		return ret;
	sockets_cases = n;
	atexit(sockets_exit_check);
	for (i = 0; i < n; i++) {
		ret = c[i].fn();
		if (getpid() != sockets_pid) {
			printf("FAIL: %s: a child returned\n", c[i].name);
			fflush(stdout);
			_exit(1);
		}
		sockets_passed += !ret;
		printf("%s: %s\n", ret ? "FAIL" : "PASS", c[i].name);
		fflush(stdout);
	}
	sockets_done = 1;
	teardown();
	return sockets_passed == n ? 0 : 1;
}

#endif /* SOCKETS_TEST_H */
