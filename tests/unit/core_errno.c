/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * core_errno.c - unit tests of fi_strerror (src/errno.c): every code of
 * rdma/fi_errno.h, either sign, and codes outside the table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <rdma/fi_errno.h>

static const int errno_codes[] = {
	FI_EPERM,	  FI_ENOENT,	   FI_EINTR,	    FI_EIO,
	FI_E2BIG,	  FI_EBADF,	   FI_EAGAIN,	    FI_ENOMEM,
	FI_EACCES,	  FI_EFAULT,	   FI_EBUSY,	    FI_ENODEV,
	FI_EINVAL,	  FI_EMFILE,	   FI_ENOSPC,	    FI_ENOSYS,
	FI_EWOULDBLOCK,	  FI_ENOMSG,	   FI_ENODATA,	    FI_EOVERFLOW,
	FI_EMSGSIZE,	  FI_ENOPROTOOPT,  FI_EOPNOTSUPP,   FI_EADDRINUSE,
	FI_EADDRNOTAVAIL, FI_ENETDOWN,	   FI_ENETUNREACH,  FI_ECONNABORTED,
	FI_ECONNRESET,	  FI_ENOBUFS,	   FI_EISCONN,	    FI_ENOTCONN,
	FI_ESHUTDOWN,	  FI_ETIMEDOUT,	   FI_ECONNREFUSED, FI_EHOSTDOWN,
	FI_EHOSTUNREACH,  FI_EALREADY,	   FI_EINPROGRESS,  FI_EREMOTEIO,
	FI_ECANCELED,	  FI_EKEYREJECTED,
};

static void test_errno_codes(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(errno_codes) / sizeof(errno_codes[0]); i++) {
		int c = errno_codes[i];

		assert_string_equal(fi_strerror(c), strerror(c));
		assert_string_equal(fi_strerror(-c), strerror(c));
		assert_null(strstr(fi_strerror(c), "Unknown"));
	}
	assert_string_equal(fi_strerror(FI_SUCCESS), strerror(0));
}

static void test_fi_codes(void **state)
{
	const char *seen[FI_ERRNO_MAX - FI_ERRNO_OFFSET];
	int c, j;

	for (c = FI_ERRNO_OFFSET; c < FI_ERRNO_MAX; c++) {
		const char *s = fi_strerror(c);

		assert_non_null(s);
		assert_true(strlen(s) > 3);
		assert_string_equal(fi_strerror(-c), s);
		assert_null(strstr(s, "Unknown"));
		/* Every code reads differently. */
		for (j = 0; j < c - FI_ERRNO_OFFSET; j++)
			assert_string_not_equal(seen[j], s);
		seen[c - FI_ERRNO_OFFSET] = s;
	}
	assert_string_equal(fi_strerror(FI_ETRUNC), "Data truncated");
}

static void test_out_of_range(void **state)
{
	const char *other = fi_strerror(FI_EOTHER);

	assert_string_equal(fi_strerror(FI_ERRNO_MAX), other);
	assert_string_equal(fi_strerror(-1000), other);
	assert_string_equal(fi_strerror(0x7fffffff), other);
	assert_string_equal(fi_strerror(-0x7fffffff - 1), other);
	/* Unknown system codes: a text that later calls do not overwrite. */
	const char *s255 = fi_strerror(255);
	char copy[64];

	assert_non_null(s255);
	snprintf(copy, sizeof(copy), "%s", s255);
	(void)strerror(254);
	(void)fi_strerror(-254);
	assert_string_equal(s255, copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errno_codes),
		cmocka_unit_test(test_fi_codes),
		cmocka_unit_test(test_out_of_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
