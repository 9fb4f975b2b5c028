/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_ze.c - cmocka tests of the Level Zero interface against the fake
 * loader (tests/hmem/fake_ze.c): device discovery, allocation and pointer
 * queries, copies through the immediate command lists, error mapping, IPC
 * handles whose fd must travel over a Unix socket to a second process.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hmem_test.h"

#define LIBVAR	  "FI_HMEM_ZE_LIBRARY"
#define FAKE_BASE 0x7d0000000000ULL
#define FAKE_END  0x7e0000000000ULL
#define ZE_LOST	  0x70000001 /* ZE_RESULT_ERROR_DEVICE_LOST */
#define ZE_OOM	  0x70000003 /* ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY */
#define COPY	  "zeCommandListAppendMemoryCopy"

static hmem_fake_calls_fn calls;
static hmem_fake_fail_fn fail_next;

static void lookup_fake(void)
{
	calls = hmem_test_fake_calls(LIBVAR, "fake_ze_calls");
	fail_next = hmem_test_fake_fail(LIBVAR, "fake_ze_fail_next");
}

static int setup(void **state)
{
	setenv("FI_HMEM_CUDA_ENABLE", "0", 1);
	ofi_hmem_init();
	lookup_fake();
	return calls ? 0 : -1;
}

static int teardown(void **state)
{
	ofi_hmem_cleanup();
	return 0;
}

static void test_ze_up(void **state)
{
	assert_true(ofi_hmem_is_initialized(FI_HMEM_ZE));
	assert_false(ofi_hmem_is_initialized(FI_HMEM_CUDA));
	assert_true(ofi_hmem_any_available());
	assert_true(ofi_hmem_is_ipc_enabled(FI_HMEM_ZE));
	assert_int_equal(calls("zeInit"), 1);
	assert_int_equal(calls("zeContextCreate"), 1);
	/* One immediate list per device (the fake has two). */
	assert_int_equal(calls("zeCommandListCreateImmediate"), 2);
}

static void test_ze_alloc_query(void **state)
{
	uint64_t device = 9, flags = 0;
	void *p = NULL, *q = NULL, *base;
	size_t size, hsize;
	char host[8];

	assert_int_equal(ofi_hmem_alloc(FI_HMEM_ZE, 0, &p, 5000), 0);
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_ZE, 1, &q, 100), 0);
	assert_true((uintptr_t)p >= FAKE_BASE && (uintptr_t)p < FAKE_END);
	assert_int_equal(ofi_get_hmem_iface((char *)p + 4999, &device, &flags),
			 FI_HMEM_ZE);
	assert_int_equal(device, 0);
	assert_int_equal(flags, FI_HMEM_DEVICE_ONLY);
	assert_int_equal(ofi_get_hmem_iface(q, &device, NULL), FI_HMEM_ZE);
	assert_int_equal(device, 1);
	assert_int_equal(ofi_get_hmem_iface(host, &device, NULL),
			 FI_HMEM_SYSTEM);

	assert_int_equal(ofi_hmem_get_base_addr(FI_HMEM_ZE, (char *)p + 10, 1,
						&base, &size),
			 0);
	assert_ptr_equal(base, p);
	assert_int_equal(size, 5000);
	assert_int_equal(ofi_hmem_get_handle_size(FI_HMEM_ZE, &hsize), 0);
	assert_int_equal(hsize, 64);
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_ZE, 5, &base, 100), -FI_EINVAL);
	assert_int_equal(ofi_hmem_free(FI_HMEM_ZE, p), 0);
	assert_int_equal(ofi_hmem_free(FI_HMEM_ZE, q), 0);
}

static void test_ze_copies(void **state)
{
	char src[3000], dst[3000];
	struct iovec iov[2];
	void *d1 = NULL, *d2 = NULL;
	unsigned long n;

	assert_int_equal(ofi_hmem_alloc(FI_HMEM_ZE, 0, &d1, 3000), 0);
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_ZE, 0, &d2, 3000), 0);
	hmem_test_fill(src, sizeof(src), 21);
	n = calls(COPY);
	assert_int_equal(ofi_copy_to_hmem(FI_HMEM_ZE, 0, d1, src, 3000), 0);
	assert_int_equal(ofi_copy_hmem_dev_to_dev(FI_HMEM_ZE, 0, d2, d1, 3000),
			 0);
	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem(FI_HMEM_ZE, 0, dst, d2, 3000), 0);
	assert_true(hmem_test_check(dst, sizeof(dst), 21));
	assert_int_equal(calls(COPY), n + 3);

	/* Two device segments, offset into the first. */
	iov[0] = (struct iovec){d1, 1000};
	iov[1] = (struct iovec){(char *)d1 + 1000, 2000};
	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, dst, 3000, FI_HMEM_ZE, 0,
						iov, 2, 500),
			 2500);
	assert_memory_equal(dst, src + 500, 2500);
	assert_int_equal(calls(COPY), n + 5);
	assert_int_equal(ofi_hmem_free(FI_HMEM_ZE, d1), 0);
	assert_int_equal(ofi_hmem_free(FI_HMEM_ZE, d2), 0);
}

static void test_ze_errors(void **state)
{
	char buf[16] = {0};
	void *d = NULL, *p = NULL;

	assert_int_equal(ofi_hmem_alloc(FI_HMEM_ZE, 0, &d, 16), 0);
	fail_next(COPY, ZE_LOST);
	assert_int_equal(ofi_copy_to_hmem(FI_HMEM_ZE, 0, d, buf, 16), -FI_EIO);
	fail_next("zeMemAllocDevice", ZE_OOM);
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_ZE, 0, &p, 16), -FI_ENOMEM);
	/* Host to host is no device copy. */
	assert_int_equal(ofi_copy_to_hmem(FI_HMEM_ZE, 0, buf, buf + 8, 8),
			 -FI_EINVAL);
	assert_int_equal(ofi_copy_to_hmem(FI_HMEM_ZE, 0, d, buf, 16), 0);
	assert_int_equal(ofi_hmem_free(FI_HMEM_ZE, d), 0);
	assert_int_equal(ofi_hmem_free(FI_HMEM_ZE, d), -FI_EINVAL);
}

/* The handle's fd is live here; in this process it maps directly. */
static void test_ze_handle_fd(void **state)
{
	uint8_t handle[64];
	char in[64], out[64];
	void *d = NULL, *mapped = NULL;
	int fd = -1;

	assert_int_equal(ofi_hmem_alloc(FI_HMEM_ZE, 0, &d, 64), 0);
	hmem_test_fill(in, sizeof(in), 9);
	assert_int_equal(ofi_copy_to_hmem(FI_HMEM_ZE, 0, d, in, 64), 0);
	assert_int_equal(ofi_hmem_get_handle(FI_HMEM_ZE, d, 64, handle), 0);
	assert_int_equal(ofi_hmem_handle_get_fd(FI_HMEM_ZE, handle, &fd), 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) >= 0);
	assert_int_equal(
		ofi_hmem_open_handle(FI_HMEM_ZE, handle, 64, 1, &mapped), 0);
	assert_ptr_not_equal(mapped, d);
	assert_int_equal(ofi_copy_from_hmem(FI_HMEM_ZE, 1, out, mapped, 64), 0);
	assert_true(hmem_test_check(out, sizeof(out), 9));
	assert_int_equal(ofi_hmem_close_handle(FI_HMEM_ZE, mapped), 0);
	assert_int_equal(ofi_hmem_close_handle(FI_HMEM_ZE, mapped), -FI_EINVAL);
	close(fd);
	assert_int_equal(ofi_hmem_free(FI_HMEM_ZE, d), 0);
}

static void test_ze_ipc_two_processes(void **state)
{
	unsigned long n = calls("zeMemGetIpcHandle");

	assert_int_equal(hmem_test_ipc_parent(FI_HMEM_ZE, "/proc/self/exe"), 0);
	assert_int_equal(calls("zeMemGetIpcHandle"), n + 1);
}

static void test_ze_unavailable(void **state)
{
	ofi_hmem_cleanup();
	setenv("FAKE_ZE_NO_DEVICE", "1", 1);
	ofi_hmem_init();
	assert_false(ofi_hmem_is_initialized(FI_HMEM_ZE));
	ofi_hmem_cleanup();
	unsetenv("FAKE_ZE_NO_DEVICE");
	setenv("FI_HMEM", "^ze", 1);
	ofi_hmem_init();
	assert_false(ofi_hmem_is_initialized(FI_HMEM_ZE));
	ofi_hmem_cleanup();
	unsetenv("FI_HMEM");
	ofi_hmem_init();
	assert_true(ofi_hmem_is_initialized(FI_HMEM_ZE));
	lookup_fake();
	assert_non_null(calls);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ze_up),
		cmocka_unit_test(test_ze_alloc_query),
		cmocka_unit_test(test_ze_copies),
		cmocka_unit_test(test_ze_errors),
		cmocka_unit_test(test_ze_handle_fd),
		cmocka_unit_test(test_ze_ipc_two_processes),
		cmocka_unit_test(test_ze_unavailable),
	};
	int ret = hmem_test_ipc_child(argc, argv);

	if (ret >= 0)
		return ret;
#if !defined(HAVE_ZE) || !HAVE_ZE
	printf("hmem_ze: built without Level Zero support, skipped\n");
	return 77;
#endif
	/* Only the fake: a real loader would need real Intel GPUs. */
	unsetenv(LIBVAR);
	if (!hmem_test_pick_lib(LIBVAR, "libze_loader.so.1")) {
		printf("hmem_ze: fake loader not found, skipped\n");
		return 77;
	}
	return cmocka_run_group_tests_name("hmem_ze", tests, setup, teardown);
}
