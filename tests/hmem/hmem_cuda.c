/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_cuda.c - cmocka tests of the CUDA interface, against the fake
 * driver (tests/hmem/fake_cuda.c) by default or against the real
 * libcuda.so.1 when FI_HMEM_CUDA_LIBRARY names it (contrib/gpu-check.sh).
 * Checks that only make sense with the fake (fixed addresses, call
 * counts, injected failures) are skipped on a real driver.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hmem_test.h"

#define LIBVAR	  "FI_HMEM_CUDA_LIBRARY"
#define FAKE_BASE 0x7e0000000000ULL
#define FAKE_END  0x7f0000000000ULL
#define FAKE_FAIL 999 /* any CUresult the layer does not special-case */

static hmem_fake_calls_fn calls;
static hmem_fake_fail_fn fail_next;
static const char *self_exe;

static int setup(void **state)
{
	if (!hmem_test_pick_lib(LIBVAR, "libcuda.so.1"))
		return -1;
	setenv("FI_HMEM_ZE_ENABLE", "0", 1);
	ofi_hmem_init();
	calls = hmem_test_fake_calls(LIBVAR, "fake_cuda_calls");
	fail_next = hmem_test_fake_fail(LIBVAR, "fake_cuda_fail_next");
	return 0;
}

static int teardown(void **state)
{
	ofi_hmem_cleanup();
	return 0;
}

#define FAKE_ONLY()                                                            \
	do {                                                                   \
		if (!calls) {                                                  \
			print_message("real driver: "                          \
				      "fake-only check skipped\n");            \
			skip();                                                \
		}                                                              \
	} while (0)

static void test_cuda_up(void **state)
{
	if (!ofi_hmem_is_initialized(FI_HMEM_CUDA))
		fail_msg("CUDA did not come up with %s", getenv(LIBVAR));
	assert_true(ofi_hmem_any_available());
	assert_true(ofi_hmem_is_ipc_enabled(FI_HMEM_CUDA));
	if (calls) {
		assert_int_equal(calls("cuInit"), 1);
		assert_int_equal(calls("cuDeviceGetCount"), 1);
	}
}

static void test_cuda_alloc_query(void **state)
{
	uint64_t device = 99, flags = 0;
	char host[64];
	void *p = NULL, *base = NULL;
	size_t size = 0, hsize = 0;

	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &p, 10000), 0);
	assert_non_null(p);
	assert_int_equal(ofi_get_hmem_iface(p, &device, &flags), FI_HMEM_CUDA);
	assert_int_equal(device, 0);
	assert_int_equal(flags, FI_HMEM_DEVICE_ONLY);
	assert_int_equal(ofi_get_hmem_iface((char *)p + 9999, NULL, NULL),
			 FI_HMEM_CUDA);
	assert_int_equal(ofi_get_hmem_iface(host, &device, &flags),
			 FI_HMEM_SYSTEM);
	assert_int_equal(device, 0);
	assert_int_equal(flags, 0);

	assert_int_equal(ofi_hmem_get_base_addr(FI_HMEM_CUDA, (char *)p + 100,
						10, &base, &size),
			 0);
	assert_ptr_equal(base, p);
	assert_true(size >= 10000);
	assert_int_equal(ofi_hmem_get_handle_size(FI_HMEM_CUDA, &hsize), 0);
	assert_int_equal(hsize, 64);

	if (calls) {
		assert_true((uintptr_t)p >= FAKE_BASE &&
			    (uintptr_t)p < FAKE_END);
		assert_int_equal(size, 10000);
	}
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, p), 0);
}

/* Allocations land on the device asked for, whatever the thread's
 * current context is. */
static void test_cuda_second_device(void **state)
{
	uint64_t device = 0;
	void *p = NULL, *q = NULL;

	FAKE_ONLY();
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &q, 64), 0);
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 1, &p, 64), 0);
	assert_int_equal(ofi_get_hmem_iface(p, &device, NULL), FI_HMEM_CUDA);
	assert_int_equal(device, 1);
	assert_int_equal(ofi_get_hmem_iface(q, &device, NULL), FI_HMEM_CUDA);
	assert_int_equal(device, 0);
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, p), 0);
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, q), 0);
	p = NULL;
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 7, &p, 64), -FI_EINVAL);
	assert_null(p);
}

static void test_cuda_copies(void **state)
{
	const size_t len = 70000;
	char *src = malloc(len), *dst = malloc(len);
	void *d1 = NULL, *d2 = NULL;
	unsigned long htod = 0, dtoh = 0, dtod = 0;

	assert_non_null(src);
	assert_non_null(dst);
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &d1, len), 0);
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &d2, len), 0);
	if (calls) {
		htod = calls("cuMemcpyHtoD_v2");
		dtoh = calls("cuMemcpyDtoH_v2");
		dtod = calls("cuMemcpy");
	}
	hmem_test_fill(src, len, 11);
	assert_int_equal(ofi_copy_to_hmem(FI_HMEM_CUDA, 0, d1, src, len), 0);
	assert_int_equal(ofi_copy_hmem_dev_to_dev(FI_HMEM_CUDA, 0, d2, d1, len),
			 0);
	memset(dst, 0, len);
	assert_int_equal(ofi_copy_from_hmem(FI_HMEM_CUDA, 0, dst, d2, len), 0);
	assert_true(hmem_test_check(dst, len, 11));
	if (calls) {
		assert_int_equal(calls("cuMemcpyHtoD_v2"), htod + 1);
		assert_int_equal(calls("cuMemcpyDtoH_v2"), dtoh + 1);
		assert_int_equal(calls("cuMemcpy"), dtod + 1);
	}
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, d1), 0);
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, d2), 0);
	free(src);
	free(dst);
}

/* Host iov <-> device iov: three device segments, one walk, per-segment
 * driver calls. */
static void test_cuda_iov(void **state)
{
	char src[300], dst[300];
	struct iovec iov[3];
	void *d = NULL;
	unsigned long htod = 0;

	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &d, 300), 0);
	iov[0] = (struct iovec){d, 100};
	iov[1] = (struct iovec){(char *)d + 100, 100};
	iov[2] = (struct iovec){(char *)d + 200, 100};
	hmem_test_fill(src, sizeof(src), 5);
	if (calls)
		htod = calls("cuMemcpyHtoD_v2");
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_CUDA, 0, iov, 3, 50,
					      src, 300),
			 250);
	if (calls)
		assert_int_equal(calls("cuMemcpyHtoD_v2"), htod + 3);
	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, dst, 250, FI_HMEM_CUDA, 0,
						iov, 3, 50),
			 250);
	assert_true(hmem_test_check(dst, 250, 5));
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, d), 0);
}

/* An override replaces the driver copy entirely. */
static ssize_t ovr_from(void *dest, size_t size, enum fi_hmem_iface iface,
			uint64_t device, const struct iovec *iov,
			size_t iov_count, uint64_t offset)
{
	memset(dest, 'O', size);
	return (ssize_t)ofi_hmem_iov_span(iov, iov_count, offset, size);
}

static void test_cuda_override(void **state)
{
	struct ofi_hmem_override ovr = {0};
	union fi_override_op op = {.copy_from_hmem_iov = ovr_from};
	char dst[16];
	struct iovec iov;
	void *d = NULL;
	unsigned long dtoh;

	FAKE_ONLY();
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &d, 16), 0);
	iov = (struct iovec){d, 16};
	assert_int_equal(ofi_hmem_override_set(&ovr, false,
					       FI_OVERRIDE_COPY_FROM_HMEM_IOV,
					       &op, 0),
			 0);
	dtoh = calls("cuMemcpyDtoH_v2");
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 16, FI_HMEM_CUDA, 0,
						&iov, 1, 0),
			 16);
	assert_int_equal(dst[0], 'O');
	assert_int_equal(calls("cuMemcpyDtoH_v2"), dtoh);
	assert_int_equal(ofi_hmem_override_set(&ovr, false,
					       FI_OVERRIDE_COPY_FROM_HMEM_IOV,
					       NULL, 0),
			 0);
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 16, FI_HMEM_CUDA, 0,
						&iov, 1, 0),
			 16);
	assert_int_equal(calls("cuMemcpyDtoH_v2"), dtoh + 1);
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, d), 0);
}

/* Driver errors come back as fi_errno values, through the iov walk too. */
static void test_cuda_errors(void **state)
{
	char buf[64] = {0};
	struct iovec iov[2];
	void *d = NULL, *p = NULL, *base;
	size_t size;

	FAKE_ONLY();
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &d, 64), 0);
	fail_next("cuMemcpyHtoD_v2", FAKE_FAIL);
	assert_int_equal(ofi_copy_to_hmem(FI_HMEM_CUDA, 0, d, buf, 64),
			 -FI_EIO);
	fail_next("cuMemAlloc_v2", 2 /* CUDA_ERROR_OUT_OF_MEMORY */);
	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &p, 64), -FI_ENOMEM);

	iov[0] = (struct iovec){d, 32};
	iov[1] = (struct iovec){(char *)d + 32, 32};
	fail_next("cuMemcpyDtoH_v2", FAKE_FAIL);
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, buf, 64, FI_HMEM_CUDA, 0,
						iov, 2, 0),
			 -FI_EIO);
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, buf, 64, FI_HMEM_CUDA, 0,
						iov, 2, 0),
			 64);
	/* Host memory handed to the device-to-host copy is refused. */
	assert_int_equal(ofi_copy_from_hmem(FI_HMEM_CUDA, 0, buf, buf, 8),
			 -FI_EINVAL);
	/* Not a device pointer: no base address. */
	assert_int_equal(
		ofi_hmem_get_base_addr(FI_HMEM_CUDA, buf, 8, &base, &size),
		-FI_ENOENT);
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, d), 0);
}

static void test_cuda_host_register(void **state)
{
	size_t len = 8192;
	void *host = aligned_alloc(4096, len);

	assert_non_null(host);
	assert_int_equal(ofi_hmem_host_register(host, len), 0);
	/* Pinned host memory stays system memory for the layer. */
	assert_int_equal(ofi_get_hmem_iface(host, NULL, NULL), FI_HMEM_SYSTEM);
	if (calls)
		assert_int_equal(ofi_hmem_host_register(host, len),
				 -FI_EALREADY);
	assert_int_equal(ofi_hmem_host_unregister(host), 0);
	free(host);
}

/* The same handle in the same process is refused by CUDA itself. */
static void test_cuda_ipc_same_process(void **state)
{
	uint8_t handle[64];
	void *d = NULL, *mapped = NULL;

	assert_int_equal(ofi_hmem_alloc(FI_HMEM_CUDA, 0, &d, 4096), 0);
	assert_int_equal(ofi_hmem_get_handle(FI_HMEM_CUDA, d, 4096, handle), 0);
	assert_true(ofi_hmem_open_handle(FI_HMEM_CUDA, handle, 64, 0, &mapped) <
		    0);
	assert_int_equal(ofi_hmem_free(FI_HMEM_CUDA, d), 0);
}

static void test_cuda_ipc_two_processes(void **state)
{
	unsigned long opens = 0;

	if (calls)
		opens = calls("cuIpcGetMemHandle");
	assert_int_equal(hmem_test_ipc_parent(FI_HMEM_CUDA, self_exe), 0);
	if (calls)
		assert_int_equal(calls("cuIpcGetMemHandle"), opens + 1);
}

/* FI_HMEM_DISABLE_P2P turns IPC off without turning CUDA off. */
static void test_cuda_p2p_param(void **state)
{
	setenv("FI_HMEM_DISABLE_P2P", "1", 1);
	assert_false(ofi_hmem_is_ipc_enabled(FI_HMEM_CUDA));
	assert_true(ofi_hmem_is_initialized(FI_HMEM_CUDA));
	unsetenv("FI_HMEM_DISABLE_P2P");
	assert_true(ofi_hmem_is_ipc_enabled(FI_HMEM_CUDA));
}

/* Enable switches: FI_HMEM_CUDA_ENABLE=0 and FI_HMEM=^cuda. */
static void test_cuda_disabled(void **state)
{
	ofi_hmem_cleanup();
	setenv("FI_HMEM_CUDA_ENABLE", "0", 1);
	ofi_hmem_init();
	assert_false(ofi_hmem_is_initialized(FI_HMEM_CUDA));
	ofi_hmem_cleanup();
	unsetenv("FI_HMEM_CUDA_ENABLE");
	setenv("FI_HMEM", "^cuda", 1);
	ofi_hmem_init();
	assert_false(ofi_hmem_is_initialized(FI_HMEM_CUDA));
	assert_true(ofi_hmem_is_initialized(FI_HMEM_SYSTEM));
	ofi_hmem_cleanup();
	setenv("FI_HMEM", "system,cuda", 1);
	ofi_hmem_init();
	assert_true(ofi_hmem_is_initialized(FI_HMEM_CUDA));
	ofi_hmem_cleanup();
	unsetenv("FI_HMEM");
	ofi_hmem_init();
	assert_true(ofi_hmem_is_initialized(FI_HMEM_CUDA));
}

/* A driver without GPUs is "unavailable", quietly. */
static void test_cuda_no_device(void **state)
{
	FAKE_ONLY();
	ofi_hmem_cleanup();
	setenv("FAKE_CUDA_NO_DEVICE", "1", 1);
	ofi_hmem_init();
	assert_false(ofi_hmem_is_initialized(FI_HMEM_CUDA));
	assert_false(ofi_hmem_any_available());
	ofi_hmem_cleanup();
	unsetenv("FAKE_CUDA_NO_DEVICE");
	ofi_hmem_init();
	assert_true(ofi_hmem_is_initialized(FI_HMEM_CUDA));
	/* dlclose'd and reopened: look the counters up again. */
	calls = hmem_test_fake_calls(LIBVAR, "fake_cuda_calls");
	fail_next = hmem_test_fake_fail(LIBVAR, "fake_cuda_fail_next");
	assert_non_null(calls);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cuda_up),
		cmocka_unit_test(test_cuda_alloc_query),
		cmocka_unit_test(test_cuda_second_device),
		cmocka_unit_test(test_cuda_copies),
		cmocka_unit_test(test_cuda_iov),
		cmocka_unit_test(test_cuda_override),
		cmocka_unit_test(test_cuda_errors),
		cmocka_unit_test(test_cuda_host_register),
		cmocka_unit_test(test_cuda_ipc_same_process),
		cmocka_unit_test(test_cuda_ipc_two_processes),
		cmocka_unit_test(test_cuda_p2p_param),
		cmocka_unit_test(test_cuda_disabled),
		cmocka_unit_test(test_cuda_no_device),
	};
	int ret = hmem_test_ipc_child(argc, argv);

	if (ret >= 0)
		return ret;
#if !defined(HAVE_CUDA) || !HAVE_CUDA
	printf("hmem_cuda: built without CUDA support, skipped\n");
	return 77;
#endif
	if (!hmem_test_pick_lib(LIBVAR, "libcuda.so.1")) {
		printf("hmem_cuda: no driver to test against, skipped\n");
		return 77;
	}
	self_exe = "/proc/self/exe";
	return cmocka_run_group_tests_name("hmem_cuda", tests, setup, teardown);
}
