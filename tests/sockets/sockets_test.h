/*
 * sockets_test.h - what the sockets provider's case-per-line test programs
 * share beyond tcp_test.h: finding sockets (a missing provider skips, a
 * sockets without the feature under test fails) and running the cases.
 */
#ifndef SOCKETS_TEST_H
#define SOCKETS_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "../tcp/tcp_test.h"

#define SOCKETS_VER FI_VERSION(1, 17)

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

/*
 * A case-per-line program: @setup (0, 77 to skip, else it failed: @what
 * says what it opened), one PASS or FAIL line per case, @teardown. The
 * exit status: 0 when every case passed.
 */
static inline int sockets_main(int (*setup)(void), const char *what,
			       const struct sockets_case *c, size_t n,
			       void (*teardown)(void))
{
	int failed = 0, ret;
	size_t i;

	unsetenv("FI_PROVIDER");
	ret = setup();
	if (ret == 77)
		printf("SKIP: no sockets provider\n");
	else if (ret)
		printf("FAIL: setup (%s)\n", what);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		ret = c[i].fn();
		failed |= ret != 0;
		printf("%s: %s\n", ret ? "FAIL" : "PASS", c[i].name);
		fflush(stdout);
	}
	teardown();
	return failed;
}

#endif /* SOCKETS_TEST_H */
