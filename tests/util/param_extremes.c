/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * param_extremes.c - every parameter fi_getparams lists (the table `fi_info
 * -e` prints), set to its extremes, each in a fresh process of its own so
 * that parameters read once at start-up are read with the value:
 *
 *  integers   0, -1, MIN, MAX, MIN - 1, MAX + 1, 2^64, 10^30, "garbage"
 *             and "12abc", MIN and MAX read from the "(range: MIN..MAX)"
 *             every integer parameter of ours ends its help with
 *  booleans   yes, 0, 2 and "garbage"
 *  strings    "garbage", a 4 KiB one, ","
 *
 * A value in range is read as given (fi_param_get answers it); any other
 * is refused (fi_param_get answers an error, so every reader keeps its
 * default). Either way, two RDM endpoints of the provider the parameter
 * belongs to (tcp and shm for core parameters) open, exchange a message,
 * and, for the collective engine's parameters, join and run a barrier,
 * without crashing or hanging (60 s). A string may make fi_getinfo find
 * nothing (FI_PROVIDER=garbage does), nothing else. Without the range
 * check a slot size of 2^63 crashed the join, SIZE_MAX hung it.
 *
 * Exit 0 when every case passed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/providers/fi_prov.h>

#include "pair.h"

enum expect { EXPECT_READ, EXPECT_REFUSED, EXPECT_ANY };

static const char *const provs[] = {"tcp", "shm", "sockets"};

/* The provider whose prefix @env carries ("FI_TCP_..."), else NULL. */
static const char *env_prov(const char *env)
{
	char prefix[32];
	size_t i, k;

	for (i = 0; i < sizeof(provs) / sizeof(provs[0]); i++) {
		strcpy(prefix, "FI_");
		for (k = 0; provs[i][k]; k++)
			prefix[3 + k] = (char)toupper(provs[i][k]);
		strcpy(prefix + 3 + k, "_");
		if (!strncmp(env, prefix, strlen(prefix)))
			return provs[i];
	}
	return NULL;
}

/* Reads @env through fi_param_get as its definer would. */
static int read_param(const char *env, enum fi_param_type type, void *value)
{
	struct fi_provider prov = {0};
	const char *pname = env_prov(env);
	char name[128];
	size_t i, skip = 3 + (pname ? strlen(pname) + 1 : 0);

	for (i = 0; env[skip + i] && i < sizeof(name) - 1; i++)
		name[i] = (char)tolower((unsigned char)env[skip + i]);
	name[i] = '\0';
	prov.name = (char *)pname;
	(void)type;
	return fi_param_get(pname ? &prov : NULL, name, value);
}

/* The child: the environment holds the value; checks the read, then runs
 * the endpoints. */
static int child(const char *env, int type, const char *value,
		 enum expect expect, const char *prov)
{
	union {
		int i;
		size_t z;
		char *s;
	} v;
	struct pair p;
	int ret;

	alarm(60);
	/* the library's warnings about the value are expected */
	if (!freopen("/dev/null", "w", stderr))
		return 1;
	memset(&v, 0, sizeof(v));
	ret = read_param(env, (enum fi_param_type)type, &v);
	if (expect == EXPECT_REFUSED && !ret) {
		printf("  %s=%s was not refused\n", env, value);
		return 1;
	}
	if (expect == EXPECT_READ) {
		if (ret) {
			printf("  %s=%s was refused: %d\n", env, value, ret);
			return 1;
		}
		if ((type == FI_PARAM_INT && v.i != atoi(value)) ||
		    (type == FI_PARAM_SIZE_T &&
		     v.z != (size_t)strtoull(value, NULL, 10))) {
			printf("  %s=%s read wrong\n", env, value);
			return 1;
		}
	}
	ret = pair_open(&p, prov, FI_PROGRESS_UNSPEC, FI_WAIT_UNSPEC);
	if (ret == -FI_ENODATA && type == FI_PARAM_STRING) {
		pair_close(&p);
		return 0;
	}
	if (!ret)
		ret = pair_msg(&p, 100);
	if (!ret && !strncmp(env, "FI_COLL_", 8))
		ret = pair_coll(&p);
	pair_close(&p);
	if (ret)
		printf("  %s=%s over %s: %d\n", env, value, prov, ret);
	return ret ? 1 : 0;
}

static int failed, cases;

static void run_case(const char *self, const struct fi_param *param,
		     const char *value, enum expect expect, const char *prov)
{
	char type[16], exp[16];
	int status;
	pid_t pid;

	cases++;
	snprintf(type, sizeof(type), "%d", (int)param->type);
	snprintf(exp, sizeof(exp), "%d", (int)expect);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid) {
		setenv(param->name, value, 1);
		execl("/proc/self/exe", self, "--case", param->name, type,
		      value, exp, prov, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		printf("FAIL: %s=%.40s over %s: %s %d\n", param->name, value,
		       prov, WIFSIGNALED(status) ? "signal" : "exit",
		       WIFSIGNALED(status) ? WTERMSIG(status)
					   : WEXITSTATUS(status));
		failed = 1;
	}
}

/* "(range: MIN..MAX)" at the end of @help. */
static int parse_range(const char *help, long long *min,
		       unsigned long long *max)
{
	const char *r = strstr(help, "(range: ");

	if (!r || sscanf(r, "(range: %lld..%llu)", min, max) != 2)
		return -1;
	return 0;
}

static void run_int(const char *self, const struct fi_param *param,
		    const char *prov)
{
	long long tmin = param->type == FI_PARAM_INT ? INT32_MIN : 0;
	unsigned long long tmax =
		param->type == FI_PARAM_INT ? INT32_MAX : SIZE_MAX;
	static const char *const bad[] = {"18446744073709551616",
					  "1000000000000000000000000000000",
					  "garbage", "12abc"};
	unsigned long long max;
	long long min;
	char buf[32];
	size_t i;

	if (parse_range(param->help_string, &min, &max)) {
		printf("FAIL: %s lists no range: %s\n", param->name,
		       param->help_string);
		failed = 1;
		return;
	}
	snprintf(buf, sizeof(buf), "%lld", min);
	run_case(self, param, buf, EXPECT_READ, prov);
	snprintf(buf, sizeof(buf), "%llu", max);
	run_case(self, param, buf, EXPECT_READ, prov);
	if (min > tmin) {
		snprintf(buf, sizeof(buf), "%lld", min - 1);
		run_case(self, param, buf, EXPECT_REFUSED, prov);
	}
	if (max < tmax) {
		snprintf(buf, sizeof(buf), "%llu", max + 1);
		run_case(self, param, buf, EXPECT_REFUSED, prov);
	}
	run_case(self, param, "0", min <= 0 ? EXPECT_READ : EXPECT_REFUSED,
		 prov);
	run_case(self, param, "-1", min <= -1 ? EXPECT_READ : EXPECT_REFUSED,
		 prov);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		run_case(self, param, bad[i], EXPECT_REFUSED, prov);
}

static void run_param(const char *self, const struct fi_param *param,
		      const char *prov)
{
	static char big[4097];

	switch (param->type) {
	case FI_PARAM_INT:
	case FI_PARAM_SIZE_T:
		run_int(self, param, prov);
		break;
	case FI_PARAM_BOOL:
		run_case(self, param, "yes", EXPECT_READ, prov);
		run_case(self, param, "0", EXPECT_READ, prov);
		run_case(self, param, "2", EXPECT_REFUSED, prov);
		run_case(self, param, "garbage", EXPECT_REFUSED, prov);
		break;
	default:
		memset(big, 'x', sizeof(big) - 1);
		run_case(self, param, "garbage", EXPECT_ANY, prov);
		run_case(self, param, big, EXPECT_ANY, prov);
		run_case(self, param, ",", EXPECT_ANY, prov);
		break;
	}
}

int main(int argc, char **argv)
{
	struct fi_param *params = NULL;
	const char *prov;
	int count = 0, i;

	if (argc == 7 && !strcmp(argv[1], "--case"))
		return child(argv[2], atoi(argv[3]), argv[4],
			     (enum expect)atoi(argv[5]), argv[6]);
	setvbuf(stdout, NULL, _IONBF, 0);
	if (fi_getparams(&params, &count) || count <= 0) {
		printf("FAIL: fi_getparams\n");
		return 1;
	}
	for (i = 0; i < count; i++) {
		prov = env_prov(params[i].name);
		if (prov) {
			run_param(argv[0], &params[i], prov);
			continue;
		}
		run_param(argv[0], &params[i], "tcp");
		if (!strncmp(params[i].name, "FI_COLL_", 8))
			run_param(argv[0], &params[i], "shm");
	}
	fi_freeparams(params);
	printf("%s: %d cases\n", failed ? "FAIL" : "PASS", cases);
	return failed;
}
