/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * core_param.c - unit tests of fi_param_define / fi_param_get and the
 * fi_getparams listing (src/param.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include "ofi.h"
#include "ofi_prov.h"

static struct fi_provider prov = {.name = "my_prov-x"};

static int setup_all(void **state)
{
	setenv("FI_PROVIDER_PATH", "/nonexistent-dir", 1);
	assert_int_equal(fi_param_define(&prov, "knob", FI_PARAM_INT,
					 "A knob of %d turns", 5),
			 0);
	assert_int_equal(
		fi_param_define(&prov, "flag", FI_PARAM_BOOL, "A flag"), 0);
	assert_int_equal(
		fi_param_define(&prov, "word", FI_PARAM_STRING, "A word"), 0);
	assert_int_equal(
		fi_param_define(&prov, "size", FI_PARAM_SIZE_T, "A size"), 0);
	return 0;
}

static void test_define_errors(void **state)
{
	assert_int_equal(fi_param_define(&prov, NULL, FI_PARAM_INT, "x"),
			 -FI_EINVAL);
	assert_int_equal(fi_param_define(&prov, "e", FI_PARAM_INT, ""),
			 -FI_EINVAL);
	assert_int_equal(fi_param_define(&prov, "e", FI_PARAM_INT, NULL),
			 -FI_EINVAL);
	assert_int_equal(
		fi_param_define(&prov, "e", (enum fi_param_type)9, "x"),
		-FI_EINVAL);
	/* Defining twice is harmless. */
	assert_int_equal(fi_param_define(&prov, "knob", FI_PARAM_INT, "again"),
			 0);
}

static void test_env_name(void **state)
{
	int v = 0;

	unsetenv("FI_MY_PROV_X_KNOB");
	assert_int_equal(fi_param_get_int(&prov, "knob", &v), -FI_ENODATA);
	setenv("FI_MY_PROV_X_KNOB", "42", 1);
	assert_int_equal(fi_param_get_int(&prov, "knob", &v), 0);
	assert_int_equal(v, 42);
	/* The name is case-insensitive. */
	v = 0;
	assert_int_equal(fi_param_get_int(&prov, "KNOB", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(fi_param_get_int(&prov, "nope", &v), -FI_ENOENT);
	assert_int_equal(fi_param_get_int(&prov, "knob", NULL), -FI_EINVAL);
	/* Empty counts as unset. */
	setenv("FI_MY_PROV_X_KNOB", "", 1);
	assert_int_equal(fi_param_get_int(&prov, "knob", &v), -FI_ENODATA);
	unsetenv("FI_MY_PROV_X_KNOB");
}

static void test_int(void **state)
{
	static const struct {
		const char *str;
		int ret, val;
	} cases[] = {
		{"-12", 0, -12},
		{" 7 ", 0, 7},
		{"12x", -FI_EINVAL, 0},
		{"x", -FI_EINVAL, 0},
		{"99999999999", -FI_EINVAL, 0},
	};
	size_t i;
	int v;

	for (i = 0; i < OFI_ARRAY_SIZE(cases); i++) {
		setenv("FI_MY_PROV_X_KNOB", cases[i].str, 1);
		v = 1234;
		assert_int_equal(fi_param_get_int(&prov, "knob", &v),
				 cases[i].ret);
		assert_int_equal(v, cases[i].ret ? 1234 : cases[i].val);
	}
	unsetenv("FI_MY_PROV_X_KNOB");
}

static void test_bool(void **state)
{
	static const struct {
		const char *str;
		int ret, val;
	} cases[] = {
		{"1", 0, 1},	      {"0", 0, 0},
		{"yes", 0, 1},	      {"No", 0, 0},
		{"TRUE", 0, 1},	      {"false", 0, 0},
		{"on", 0, 1},	      {"OFF", 0, 0},
		{"2", -FI_EINVAL, 0}, {"maybe", -FI_EINVAL, 0},
	};
	size_t i;
	int v;

	for (i = 0; i < OFI_ARRAY_SIZE(cases); i++) {
		setenv("FI_MY_PROV_X_FLAG", cases[i].str, 1);
		v = 77;
		assert_int_equal(fi_param_get_bool(&prov, "flag", &v),
				 cases[i].ret);
		assert_int_equal(v, cases[i].ret ? 77 : cases[i].val);
	}
	unsetenv("FI_MY_PROV_X_FLAG");
}

static void test_string_size(void **state)
{
	char *s = NULL;
	size_t z = 5;

	setenv("FI_MY_PROV_X_WORD", "hello world", 1);
	assert_int_equal(fi_param_get_str(&prov, "word", &s), 0);
	assert_string_equal(s, "hello world");

	setenv("FI_MY_PROV_X_SIZE", "18446744073709551615", 1);
	assert_int_equal(fi_param_get_size_t(&prov, "size", &z), 0);
	assert_true(z == SIZE_MAX);
	z = 5;
	setenv("FI_MY_PROV_X_SIZE", "-1", 1);
	assert_int_equal(fi_param_get_size_t(&prov, "size", &z), -FI_EINVAL);
	assert_int_equal(z, 5);
	setenv("FI_MY_PROV_X_SIZE", "4096", 1);
	assert_int_equal(fi_param_get_size_t(&prov, "size", &z), 0);
	assert_int_equal(z, 4096);
}

static void test_core_params(void **state)
{
	char *s = NULL;

	setenv("FI_LOG_PROV", "^foo", 1);
	assert_int_equal(fi_param_get_str(NULL, "log_prov", &s), 0);
	assert_string_equal(s, "^foo");
	s = NULL;
	assert_int_equal(fi_param_get_str(&ofi_core_prov, "log_prov", &s), 0);
	assert_string_equal(s, "^foo");
	unsetenv("FI_LOG_PROV");
}

/* ofi_param_define_range: values outside [min, max] are refused, the
 * caller's default stays, and the listing shows the range. */
static void test_range(void **state)
{
	static const char *const refused[] = {"-3", "101", "2147483648",
					      "-2147483649", "7x"};
	struct fi_param *params = NULL;
	size_t z = 7;
	int count = 0, v, i;

	assert_int_equal(ofi_param_define_range(&prov, "ranged", FI_PARAM_INT,
						-2, 100, "Ranged (default: %d)",
						7),
			 0);
	assert_int_equal(ofi_param_define_range(&prov, "zranged",
						FI_PARAM_SIZE_T, 64, SIZE_MAX,
						"Z"),
			 0);
	/* only integers have ranges, and a range is not empty */
	assert_int_equal(
		ofi_param_define_range(&prov, "e", FI_PARAM_BOOL, 0, 1, "x"),
		-FI_EINVAL);
	assert_int_equal(
		ofi_param_define_range(&prov, "e", FI_PARAM_INT, 5, 4, "x"),
		-FI_EINVAL);
	assert_int_equal(ofi_param_define_range(&prov, "e", FI_PARAM_INT, 0,
						(uint64_t)INT32_MAX + 1, "x"),
			 -FI_EINVAL);
	assert_int_equal(
		ofi_param_define_range(&prov, "e", FI_PARAM_SIZE_T, -1, 4, "x"),
		-FI_EINVAL);

	setenv("FI_MY_PROV_X_RANGED", "-2", 1);
	assert_int_equal(fi_param_get_int(&prov, "ranged", &v), 0);
	assert_int_equal(v, -2);
	setenv("FI_MY_PROV_X_RANGED", "100", 1);
	assert_int_equal(fi_param_get_int(&prov, "ranged", &v), 0);
	assert_int_equal(v, 100);
	for (i = 0; i < (int)OFI_ARRAY_SIZE(refused); i++) {
		v = 7;
		setenv("FI_MY_PROV_X_RANGED", refused[i], 1);
		assert_int_equal(fi_param_get_int(&prov, "ranged", &v),
				 -FI_EINVAL);
		assert_int_equal(v, 7);
	}
	unsetenv("FI_MY_PROV_X_RANGED");

	setenv("FI_MY_PROV_X_ZRANGED", "18446744073709551615", 1);
	assert_int_equal(fi_param_get_size_t(&prov, "zranged", &z), 0);
	assert_true(z == SIZE_MAX);
	z = 7;
	setenv("FI_MY_PROV_X_ZRANGED", "63", 1);
	assert_int_equal(fi_param_get_size_t(&prov, "zranged", &z), -FI_EINVAL);
	setenv("FI_MY_PROV_X_ZRANGED", "-1", 1);
	assert_int_equal(fi_param_get_size_t(&prov, "zranged", &z), -FI_EINVAL);
	setenv("FI_MY_PROV_X_ZRANGED", "18446744073709551616", 1);
	assert_int_equal(fi_param_get_size_t(&prov, "zranged", &z), -FI_EINVAL);
	assert_true(z == 7);
	unsetenv("FI_MY_PROV_X_ZRANGED");

	assert_int_equal(fi_getparams(&params, &count), 0);
	for (i = 0; i < count; i++) {
		if (!strcmp(params[i].name, "FI_MY_PROV_X_RANGED"))
			assert_string_equal(params[i].help_string,
					    "my_prov-x: Ranged (default: 7) "
					    "(range: -2..100)");
		if (!strcmp(params[i].name, "FI_MY_PROV_X_ZRANGED"))
			assert_string_equal(params[i].help_string,
					    "my_prov-x: Z (range: "
					    "64..18446744073709551615)");
		/* every integer of the library lists its range (those of
		 * fi_param_define, as this test's own, do not) */
		if ((params[i].type == FI_PARAM_INT ||
		     params[i].type == FI_PARAM_SIZE_T) &&
		    strncmp(params[i].name, "FI_MY_PROV_X_", 13))
			assert_non_null(
				strstr(params[i].help_string, "(range: "));
	}
	fi_freeparams(params);
}

static const struct fi_param *find(const struct fi_param *p, int n,
				   const char *name)
{
	for (int i = 0; i < n; i++) {
		if (!strcmp(p[i].name, name))
			return &p[i];
	}
	return NULL;
}

static void test_getparams(void **state)
{
	static const char *const core[] = {
		"FI_PROVIDER",	       "FI_PROVIDER_PATH", "FI_LOG_LEVEL",
		"FI_LOG_PROV",	       "FI_LOG_SUBSYS",	   "FI_HMEM",
		"FI_HMEM_DISABLE_P2P",
	};
	struct fi_param *params = NULL;
	const struct fi_param *p;
	int count = 0, n = 0;
	size_t i;

	setenv("FI_MY_PROV_X_KNOB", "3", 1);
	assert_int_equal(fi_getparams(&params, &count), 0);
	for (i = 0; i < OFI_ARRAY_SIZE(core); i++) {
		p = find(params, count, core[i]);
		assert_non_null(p);
		assert_true(strlen(p->help_string) > 10);
	}
	p = find(params, count, "FI_MY_PROV_X_KNOB");
	assert_non_null(p);
	assert_int_equal(p->type, FI_PARAM_INT);
	assert_string_equal(p->value, "3");
	assert_string_equal(p->help_string, "my_prov-x: A knob of 5 turns");
	p = find(params, count, "FI_MY_PROV_X_FLAG");
	assert_non_null(p);
	assert_null(p->value);
	assert_int_equal(find(params, count, "FI_HMEM_DISABLE_P2P")->type,
			 FI_PARAM_BOOL);
	for (int k = 0; k < count; k++)
		n += !strcmp(params[k].name, "FI_MY_PROV_X_KNOB");
	assert_int_equal(n, 1);
	assert_null(params[count].name);
	fi_freeparams(params);
	fi_freeparams(NULL);
	assert_int_equal(fi_getparams(NULL, &count), -FI_EINVAL);
	unsetenv("FI_MY_PROV_X_KNOB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_define_errors),
		cmocka_unit_test(test_env_name),
		cmocka_unit_test(test_int),
		cmocka_unit_test(test_bool),
		cmocka_unit_test(test_string_size),
		cmocka_unit_test(test_core_params),
		cmocka_unit_test(test_getparams),
		cmocka_unit_test(test_range),
	};

	return cmocka_run_group_tests(tests, setup_all, NULL);
}
