/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * core_log.c - unit tests of logging (src/log.c): FI_LOG_LEVEL,
 * FI_LOG_PROV, FI_LOG_SUBSYS filters, fi_log_ready rate limiting, the
 * default line format, and fi_import_log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rdma/fabric.h>
#include <rdma/fi_ext.h>
#include <rdma/providers/fi_log.h>

#include "ofi.h"
#include "ofi_prov.h"

static struct fi_provider prov_a = {.name = "alpha"};
static struct fi_provider prov_b = {.name = "beta"};

static void set_env(const char *level, const char *prov, const char *subsys)
{
	if (level)
		setenv("FI_LOG_LEVEL", level, 1);
	else
		unsetenv("FI_LOG_LEVEL");
	if (prov)
		setenv("FI_LOG_PROV", prov, 1);
	else
		unsetenv("FI_LOG_PROV");
	if (subsys)
		setenv("FI_LOG_SUBSYS", subsys, 1);
	else
		unsetenv("FI_LOG_SUBSYS");
	ofi_log_init();
}

static int setup_all(void **state)
{
	setenv("FI_PROVIDER_PATH", "/nonexistent-dir", 1);
	ofi_init();
	return 0;
}

static int teardown(void **state)
{
	set_env(NULL, NULL, NULL);
	return 0;
}

static void test_level(void **state)
{
	/* Unset, nothing: libfabric 1.17 logs nothing either. */
	set_env(NULL, NULL, NULL);
	assert_false(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));
	assert_false(fi_log_enabled(&prov_a, FI_LOG_TRACE, FI_LOG_CORE));

	set_env("warn", NULL, NULL);
	assert_true(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));
	assert_false(fi_log_enabled(&prov_a, FI_LOG_TRACE, FI_LOG_CORE));

	set_env("info", NULL, NULL);
	assert_true(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));
	assert_true(fi_log_enabled(&prov_a, FI_LOG_TRACE, FI_LOG_CORE));
	assert_true(fi_log_enabled(&prov_a, FI_LOG_INFO, FI_LOG_CORE));
	assert_false(fi_log_enabled(&prov_a, FI_LOG_DEBUG, FI_LOG_CORE));

	set_env("DEBUG", NULL, NULL);
	assert_true(fi_log_enabled(&prov_a, FI_LOG_DEBUG, FI_LOG_MR));

	set_env("trace", NULL, NULL);
	assert_true(fi_log_enabled(&prov_a, FI_LOG_TRACE, FI_LOG_CORE));
	assert_false(fi_log_enabled(&prov_a, FI_LOG_INFO, FI_LOG_CORE));

	/* Nonsense keeps warnings on. */
	set_env("loud", NULL, NULL);
	assert_true(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));
	assert_false(fi_log_enabled(&prov_a, FI_LOG_TRACE, FI_LOG_CORE));
}

static void test_prov_filter(void **state)
{
	set_env("warn", "alpha", NULL);
	assert_true(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));
	assert_false(fi_log_enabled(&prov_b, FI_LOG_WARN, FI_LOG_CORE));

	set_env("warn", "^alpha", NULL);
	assert_false(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));
	assert_true(fi_log_enabled(&prov_b, FI_LOG_WARN, FI_LOG_CORE));

	set_env("warn", "beta,core", NULL);
	assert_false(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));
	assert_true(fi_log_enabled(&prov_b, FI_LOG_WARN, FI_LOG_CORE));
	assert_true(fi_log_enabled(&ofi_core_prov, FI_LOG_WARN, FI_LOG_CORE));
}

static void test_subsys_filter(void **state)
{
	set_env("warn", NULL, "mr,cq");
	assert_true(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_MR));
	assert_true(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CQ));
	assert_false(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));

	set_env("warn", NULL, "^ep_data");
	assert_false(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_EP_DATA));
	assert_true(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_EP_CTRL));
	assert_false(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_SUBSYS_MAX));
}

static void test_ready(void **state)
{
	uint64_t showtime = 0;

	setenv("FI_LOG_INTERVAL", "100000", 1);
	set_env("warn", NULL, NULL);
	assert_true(fi_log_ready(&prov_a, FI_LOG_WARN, FI_LOG_CORE, &showtime));
	assert_true(showtime > 0);
	/* Within the interval: suppressed. */
	assert_false(
		fi_log_ready(&prov_a, FI_LOG_WARN, FI_LOG_CORE, &showtime));
	showtime = 0;
	assert_false(
		fi_log_ready(&prov_a, FI_LOG_INFO, FI_LOG_CORE, &showtime));
	setenv("FI_LOG_INTERVAL", "0", 1);
	set_env("warn", NULL, NULL);
	showtime = 0;
	assert_true(fi_log_ready(&prov_a, FI_LOG_WARN, FI_LOG_CORE, &showtime));
	assert_true(fi_log_ready(&prov_a, FI_LOG_WARN, FI_LOG_CORE, &showtime));
	unsetenv("FI_LOG_INTERVAL");
}

/* Runs one FI_WARN with stderr sent to a file, returns what was written. */
static char *capture_warn(const struct fi_provider *prov,
			  enum fi_log_subsys subsys, const char *text)
{
	static char buf[1024];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	FI_WARN(prov, subsys, "%s", text);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return buf;
}

static void test_format(void **state)
{
	char expect[64];
	char *out;

	set_env("warn", NULL, NULL);
	out = capture_warn(&prov_a, FI_LOG_DOMAIN, "hello 42\n");
	snprintf(expect, sizeof(expect), "libfabric:%d:", (int)getpid());
	assert_true(!strncmp(out, expect, strlen(expect)));
	assert_non_null(strstr(out, "::alpha:domain:capture_warn():"));
	assert_non_null(strstr(out, "<warn> hello 42\n"));
	assert_int_equal(out[strlen(out) - 1], '\n');
	assert_null(strstr(out, "\n\n"));

	/* A message without a newline still ends the line. */
	out = capture_warn(&prov_a, FI_LOG_CQ, "no newline");
	assert_non_null(strstr(out, "<warn> no newline\n"));

	set_env("warn", "^alpha", NULL);
	out = capture_warn(&prov_a, FI_LOG_CQ, "hidden");
	assert_string_equal(out, "");
}

static int seen_level = -1;
static uint64_t seen_flags;
static char seen_msg[128];

static int my_enabled(const struct fi_provider *prov, enum fi_log_level level,
		      enum fi_log_subsys subsys, uint64_t flags)
{
	seen_flags = flags;
	return level <= FI_LOG_INFO;
}

static int my_ready(const struct fi_provider *prov, enum fi_log_level level,
		    enum fi_log_subsys subsys, uint64_t flags,
		    uint64_t *showtime)
{
	return 1;
}

static void my_log(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys, const char *func, int line,
		   const char *msg)
{
	seen_level = level;
	snprintf(seen_msg, sizeof(seen_msg), "%s", msg);
}

static void test_import(void **state)
{
	struct fi_ops_log ops = {
		.enabled = my_enabled, .ready = my_ready, .log = my_log};
	struct fid_logging log = {.ops = &ops};

	set_env("warn", "^alpha", NULL);
	assert_int_equal(fi_import_log(FI_VERSION(1, 17), 0, &log), 0);
	assert_true(fi_log_enabled(&prov_b, FI_LOG_INFO, FI_LOG_CORE));
	assert_int_equal(seen_flags, 0);
	fi_log_enabled(&prov_a, FI_LOG_INFO, FI_LOG_CORE);
	assert_int_equal(seen_flags, FI_LOG_PROV_FILTERED);
	FI_INFO(&prov_b, FI_LOG_CORE, "value %d", 7);
	assert_int_equal(seen_level, FI_LOG_INFO);
	assert_string_equal(seen_msg, "value 7");
	ofi_log_fini(); /* restores the built-in output */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_level, teardown),
		cmocka_unit_test_teardown(test_prov_filter, teardown),
		cmocka_unit_test_teardown(test_subsys_filter, teardown),
		cmocka_unit_test_teardown(test_ready, teardown),
		cmocka_unit_test_teardown(test_format, teardown),
		cmocka_unit_test_teardown(test_import, teardown),
	};

	return cmocka_run_group_tests(tests, setup_all, NULL);
}
