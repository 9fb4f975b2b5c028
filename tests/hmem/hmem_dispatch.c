/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_dispatch.c - cmocka tests of the interface-independent HMEM layer:
 * system dispatch, interfaces that are unavailable (not built, driver
 * missing, disabled, never implemented), the iov walkers' edge cases, the
 * override slots and their set rules, and the fd-passing helper.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hmem_test.h"

static int setup_no_drivers(void **state)
{
	setenv("FI_HMEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
	setenv("FI_HMEM_ZE_LIBRARY", "/nonexistent/libze_loader.so.1", 1);
	ofi_hmem_init();
	return 0;
}

static int teardown_hmem(void **state)
{
	ofi_hmem_cleanup();
	return 0;
}

static void test_system_dispatch(void **state)
{
	char src[64], dst[64];
	uint64_t device = 77, flags = 77;
	void *p = NULL, *base;
	size_t size;

	assert_true(ofi_hmem_is_initialized(FI_HMEM_SYSTEM));
	assert_int_equal(ofi_get_hmem_iface(src, &device, &flags),
			 FI_HMEM_SYSTEM);
	assert_int_equal(device, 0);
	assert_int_equal(flags, 0);

	hmem_test_fill(src, sizeof(src), 3);
	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_to_hmem(FI_HMEM_SYSTEM, 0, dst, src, 64), 0);
	assert_true(hmem_test_check(dst, sizeof(dst), 3));
	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem(FI_HMEM_SYSTEM, 0, dst, src, 64),
			 0);
	assert_true(hmem_test_check(dst, sizeof(dst), 3));
	memset(dst, 0, sizeof(dst));
	assert_int_equal(
		ofi_copy_hmem_dev_to_dev(FI_HMEM_SYSTEM, 0, dst, src, 64), 0);
	assert_true(hmem_test_check(dst, sizeof(dst), 3));

	assert_int_equal(ofi_hmem_alloc(FI_HMEM_SYSTEM, 0, &p, 100), 0);
	assert_non_null(p);
	assert_int_equal(
		ofi_hmem_get_base_addr(FI_HMEM_SYSTEM, p, 100, &base, &size),
		0);
	assert_ptr_equal(base, p);
	assert_int_equal(size, 100);
	assert_int_equal(ofi_hmem_free(FI_HMEM_SYSTEM, p), 0);

	/* Host memory has no IPC handle to export. */
	assert_int_equal(ofi_hmem_get_handle(FI_HMEM_SYSTEM, src, 64, dst),
			 -FI_ENOSYS);
	assert_false(ofi_hmem_is_ipc_enabled(FI_HMEM_SYSTEM));
	assert_int_equal(ofi_hmem_host_register(src, sizeof(src)), 0);
	assert_int_equal(ofi_hmem_host_unregister(src), 0);
}

static void check_unavailable(enum fi_hmem_iface iface)
{
	char buf[8] = {0}, handle[OFI_HMEM_MAX_HANDLE_SIZE];
	void *p = NULL;
	size_t size;

	assert_false(ofi_hmem_is_initialized(iface));
	assert_false(ofi_hmem_is_ipc_enabled(iface));
	assert_int_equal(ofi_copy_to_hmem(iface, 0, buf, buf, 8), -FI_ENOSYS);
	assert_int_equal(ofi_copy_from_hmem(iface, 0, buf, buf, 8), -FI_ENOSYS);
	assert_int_equal(ofi_copy_hmem_dev_to_dev(iface, 0, buf, buf, 8),
			 -FI_ENOSYS);
	assert_int_equal(ofi_hmem_alloc(iface, 0, &p, 8), -FI_ENOSYS);
	assert_null(p);
	assert_int_equal(ofi_hmem_get_handle(iface, buf, 8, handle),
			 -FI_ENOSYS);
	assert_int_equal(ofi_hmem_get_handle_size(iface, &size), -FI_ENOSYS);
	assert_int_equal(ofi_hmem_open_handle(iface, handle, 64, 0, &p),
			 -FI_ENOSYS);
	assert_int_equal(ofi_hmem_close_handle(iface, buf), -FI_ENOSYS);
}

static void test_unavailable_ifaces(void **state)
{
	char host[16];
	struct iovec iov = {host, sizeof(host)};

	/* The drivers named by setup do not exist. */
	check_unavailable(FI_HMEM_CUDA);
	check_unavailable(FI_HMEM_ZE);
	check_unavailable(FI_HMEM_ROCR);
	check_unavailable(FI_HMEM_NEURON);
	check_unavailable(FI_HMEM_SYNAPSEAI);
	check_unavailable((enum fi_hmem_iface)99);
	assert_false(ofi_hmem_any_available());
	assert_string_equal(ofi_hmem_iface_name(FI_HMEM_ROCR), "rocr");

	/* The iov walker reports what the interface answers. */
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, host, 16, FI_HMEM_CUDA, 0,
						&iov, 1, 0),
			 -FI_ENOSYS);
	/* ... unless there is nothing to copy. */
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, host, 16, FI_HMEM_CUDA, 0,
						&iov, 1, 16),
			 0);
}

/* A file that is no library, then a disabled iface: still no crash. */
static void test_driver_missing_variants(void **state)
{
	ofi_hmem_cleanup();
	setenv("FI_HMEM_CUDA_LIBRARY", "/etc/hostname", 1);
	setenv("FI_HMEM_ZE_LIBRARY", "", 1);
	setenv("FI_HMEM_ZE_ENABLE", "0", 1);
	ofi_hmem_init();
	assert_true(ofi_hmem_is_initialized(FI_HMEM_SYSTEM));
	assert_false(ofi_hmem_is_initialized(FI_HMEM_CUDA));
	assert_false(ofi_hmem_is_initialized(FI_HMEM_ZE));
	assert_false(ofi_hmem_any_available());
	ofi_hmem_init(); /* idempotent */
	assert_true(ofi_hmem_is_initialized(FI_HMEM_SYSTEM));
	ofi_hmem_cleanup();
	assert_false(ofi_hmem_is_initialized(FI_HMEM_SYSTEM));
	unsetenv("FI_HMEM_ZE_ENABLE");
	setenv("FI_HMEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
	setenv("FI_HMEM_ZE_LIBRARY", "/nonexistent/libze_loader.so.1", 1);
	ofi_hmem_init();
	assert_true(ofi_hmem_is_initialized(FI_HMEM_SYSTEM));
}

/* Segments of 5, 0, 7 and 4 bytes over one 16-byte buffer. */
static char iov_mem[16];
static struct iovec test_iov[4];

static void iov_reset(void)
{
	memset(iov_mem, '.', sizeof(iov_mem));
	test_iov[0] = (struct iovec){iov_mem, 5};
	test_iov[1] = (struct iovec){iov_mem + 5, 0};
	test_iov[2] = (struct iovec){iov_mem + 5, 7};
	test_iov[3] = (struct iovec){iov_mem + 12, 4};
}

static void test_iov_span(void **state)
{
	iov_reset();
	assert_int_equal(ofi_hmem_iov_span(test_iov, 4, 0, 100), 16);
	assert_int_equal(ofi_hmem_iov_span(test_iov, 4, 7, 100), 9);
	assert_int_equal(ofi_hmem_iov_span(test_iov, 4, 7, 3), 3);
	assert_int_equal(ofi_hmem_iov_span(test_iov, 4, 16, 100), 0);
	assert_int_equal(ofi_hmem_iov_span(test_iov, 4, 1000, 100), 0);
	assert_int_equal(ofi_hmem_iov_span(test_iov, 0, 0, 100), 0);
	assert_int_equal(ofi_hmem_iov_span(test_iov, 4, 0, 0), 0);
}

static void test_iov_to(void **state)
{
	const char *src = "ABCDEFGHIJKLMNOP";

	iov_reset();
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 0, src, 16),
			 16);
	assert_memory_equal(iov_mem, src, 16);

	/* Offset into the middle of the third segment. */
	iov_reset();
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 7, src, 100),
			 9);
	assert_memory_equal(iov_mem, ".......ABCDEFGHI", 16);

	/* Partial: spans the zero-length segment, stops early. */
	iov_reset();
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 4, src, 3),
			 3);
	assert_memory_equal(iov_mem, "....ABC.........", 16);

	/* Into the last segment, then exactly at and past the end. */
	iov_reset();
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 13, src, 16),
			 3);
	assert_memory_equal(iov_mem, ".............ABC", 16);
	iov_reset();
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 16, src, 16),
			 0);
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 99, src, 16),
			 0);
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 0, src, 0),
			 0);
	assert_int_equal(ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, test_iov,
					      0, 0, src, 16),
			 0);
	assert_memory_equal(iov_mem, "................", 16);
}

static void test_iov_from(void **state)
{
	char dst[17];

	iov_reset();
	memcpy(iov_mem, "abcdefghijklmnop", 16);
	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, dst, sizeof(dst),
						FI_HMEM_SYSTEM, 0, test_iov, 4,
						0),
			 16);
	assert_string_equal(dst, "abcdefghijklmnop");

	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, dst, 4, FI_HMEM_SYSTEM, 0,
						test_iov, 4, 3),
			 4);
	assert_string_equal(dst, "defg");

	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, dst, 16, FI_HMEM_SYSTEM,
						0, test_iov, 4, 12),
			 4);
	assert_string_equal(dst, "mnop");

	assert_int_equal(ofi_copy_from_hmem_iov(NULL, dst, 16, FI_HMEM_SYSTEM,
						0, test_iov, 4, 17),
			 0);
	assert_int_equal(ofi_copy_from_hmem_iov(NULL, dst, 0, FI_HMEM_SYSTEM, 0,
						test_iov, 4, 0),
			 0);
}

static void test_iov_dev_to_dev(void **state)
{
	char dev[8] = "01234567";

	iov_reset();
	assert_int_equal(ofi_copy_hmem_iov_dev_to_dev(FI_HMEM_SYSTEM, 0,
						      test_iov, 4, 3, dev, 8,
						      true),
			 8);
	assert_memory_equal(iov_mem, "...01234567.....", 16);
	memset(dev, 0, sizeof(dev));
	assert_int_equal(ofi_copy_hmem_iov_dev_to_dev(FI_HMEM_SYSTEM, 0,
						      test_iov, 4, 14, dev, 8,
						      false),
			 2);
	assert_memory_equal(dev, "..\0\0\0\0\0\0", 8);
}

/* Override mocks: record the call, then behave as told. */
static struct {
	int calls;
	enum fi_hmem_iface iface;
	uint64_t device;
	const struct iovec *iov;
	size_t iov_count;
	uint64_t offset;
	size_t size;
	ssize_t force; /* answer this instead of copying when != 0 */
	ssize_t delta; /* added to the honest count */
} mock;

static ssize_t mock_from(void *dest, size_t size, enum fi_hmem_iface iface,
			 uint64_t device, const struct iovec *iov,
			 size_t iov_count, uint64_t offset)
{
	ssize_t n;

	mock.calls++;
	mock.iface = iface;
	mock.device = device;
	mock.iov = iov;
	mock.iov_count = iov_count;
	mock.offset = offset;
	mock.size = size;
	if (mock.force)
		return mock.force;
	/* Honest copy, upper-cased so the test sees the mock did it. */
	n = ofi_copy_from_hmem_iov(NULL, dest, size, FI_HMEM_SYSTEM, 0, iov,
				   iov_count, offset);
	for (ssize_t i = 0; i < n; i++)
		((char *)dest)[i] &= ~0x20;
	return n + mock.delta;
}

static ssize_t mock_to(enum fi_hmem_iface iface, uint64_t device,
		       const struct iovec *iov, size_t iov_count,
		       uint64_t offset, const void *src, size_t size)
{
	mock.calls++;
	mock.iface = iface;
	mock.device = device;
	mock.iov = iov;
	mock.iov_count = iov_count;
	mock.offset = offset;
	mock.size = size;
	if (mock.force)
		return mock.force;
	return ofi_copy_to_hmem_iov(NULL, FI_HMEM_SYSTEM, 0, iov, iov_count,
				    offset, src, size) +
	       mock.delta;
}

static void test_override_from(void **state)
{
	struct ofi_hmem_override ovr = {0};
	union fi_override_op op = {.copy_from_hmem_iov = mock_from};
	char dst[17];

	memset(&mock, 0, sizeof(mock));
	assert_int_equal(ofi_hmem_override_set(&ovr, false,
					       FI_OVERRIDE_COPY_FROM_HMEM_IOV,
					       &op, 0),
			 0);
	assert_ptr_equal(ovr.copy_from_hmem_iov, mock_from);
	assert_null(ovr.copy_to_hmem_iov);

	iov_reset();
	memcpy(iov_mem, "abcdefghijklmnop", 16);
	memset(dst, 0, sizeof(dst));
	/* FI_HMEM_SYSTEM goes through the override too. */
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 4, FI_HMEM_SYSTEM, 9,
						test_iov, 4, 3),
			 4);
	assert_string_equal(dst, "DEFG");
	assert_int_equal(mock.calls, 1);
	assert_int_equal(mock.iface, FI_HMEM_SYSTEM);
	assert_int_equal(mock.device, 9);
	assert_ptr_equal(mock.iov, test_iov);
	assert_int_equal(mock.iov_count, 4);
	assert_int_equal(mock.offset, 3);
	assert_int_equal(mock.size, 4);

	/* An interface that is not even available: the override decides. */
	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 16, FI_HMEM_CUDA, 1,
						test_iov, 4, 12),
			 4);
	assert_string_equal(dst, "MNOP");
	assert_int_equal(mock.iface, FI_HMEM_CUDA);
	assert_int_equal(mock.calls, 2);

	/* Errors pass through; wrong counts become -FI_EIO. */
	mock.force = -FI_EAGAIN;
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 4, FI_HMEM_SYSTEM, 0,
						test_iov, 4, 0),
			 -FI_EAGAIN);
	mock.force = 0;
	mock.delta = -1;
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 4, FI_HMEM_SYSTEM, 0,
						test_iov, 4, 0),
			 -FI_EIO);
	mock.delta = 1;
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 4, FI_HMEM_SYSTEM, 0,
						test_iov, 4, 0),
			 -FI_EIO);
	mock.delta = 0;
	/* A copy clipped by the iov's end is not short. */
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 16, FI_HMEM_SYSTEM,
						0, test_iov, 4, 14),
			 2);
	assert_int_equal(mock.calls, 6);

	/* NULL function restores the default path. */
	op.copy_from_hmem_iov = NULL;
	assert_int_equal(ofi_hmem_override_set(&ovr, false,
					       FI_OVERRIDE_COPY_FROM_HMEM_IOV,
					       &op, 0),
			 0);
	assert_null(ovr.copy_from_hmem_iov);
	memset(dst, 0, sizeof(dst));
	assert_int_equal(ofi_copy_from_hmem_iov(&ovr, dst, 4, FI_HMEM_SYSTEM, 0,
						test_iov, 4, 0),
			 4);
	assert_string_equal(dst, "abcd");
	assert_int_equal(mock.calls, 6);
}

static void test_override_to(void **state)
{
	struct ofi_hmem_override ovr = {0};
	union fi_override_op op = {.copy_to_hmem_iov = mock_to};

	memset(&mock, 0, sizeof(mock));
	assert_int_equal(ofi_hmem_override_set(&ovr, false,
					       FI_OVERRIDE_COPY_TO_HMEM_IOV,
					       &op, 0),
			 0);
	iov_reset();
	assert_int_equal(ofi_copy_to_hmem_iov(&ovr, FI_HMEM_ZE, 3, test_iov, 4,
					      2, "xyz", 3),
			 3);
	assert_memory_equal(iov_mem, "..xyz...", 8);
	assert_int_equal(mock.calls, 1);
	assert_int_equal(mock.iface, FI_HMEM_ZE);
	assert_int_equal(mock.device, 3);
	assert_int_equal(mock.offset, 2);

	mock.force = -FI_EFAULT;
	assert_int_equal(ofi_copy_to_hmem_iov(&ovr, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 0, "xyz", 3),
			 -FI_EFAULT);
	mock.force = 2;
	assert_int_equal(ofi_copy_to_hmem_iov(&ovr, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 0, "xyz", 3),
			 -FI_EIO);
	mock.force = 0;

	/* NULL fn restores the default too; the other slot is untouched. */
	assert_int_equal(ofi_hmem_override_set(&ovr, false,
					       FI_OVERRIDE_COPY_TO_HMEM_IOV,
					       NULL, 0),
			 0);
	assert_null(ovr.copy_to_hmem_iov);
	iov_reset();
	assert_int_equal(ofi_copy_to_hmem_iov(&ovr, FI_HMEM_SYSTEM, 0, test_iov,
					      4, 0, "xyz", 3),
			 3);
	assert_int_equal(mock.calls, 3);
}

static void test_override_rules(void **state)
{
	struct ofi_hmem_override ovr = {0};
	union fi_override_op from = {.copy_from_hmem_iov = mock_from};
	union fi_override_op to = {.copy_to_hmem_iov = mock_to};

	assert_int_equal(ofi_hmem_override_set(&ovr, false,
					       FI_OVERRIDE_COPY_FROM_HMEM_IOV,
					       &from, 1),
			 -FI_EINVAL);
	assert_null(ovr.copy_from_hmem_iov);
	assert_int_equal(ofi_hmem_override_set(&ovr, false, (enum fi_set_op)42,
					       &from, 0),
			 -FI_ENOSYS);
	assert_null(ovr.copy_from_hmem_iov);
	assert_null(ovr.copy_to_hmem_iov);
	/* flags are checked before the op. */
	assert_int_equal(ofi_hmem_override_set(&ovr, false, (enum fi_set_op)42,
					       &from, 2),
			 -FI_EINVAL);

	assert_int_equal(ofi_hmem_override_set(&ovr, false,
					       FI_OVERRIDE_COPY_TO_HMEM_IOV,
					       &to, 0),
			 0);
	/* Once an endpoint is enabled: busy, nothing changes. */
	assert_int_equal(ofi_hmem_override_set(&ovr, true,
					       FI_OVERRIDE_COPY_FROM_HMEM_IOV,
					       &from, 0),
			 -FI_EBUSY);
	assert_int_equal(ofi_hmem_override_set(&ovr, true,
					       FI_OVERRIDE_COPY_TO_HMEM_IOV,
					       NULL, 0),
			 -FI_EBUSY);
	assert_null(ovr.copy_from_hmem_iov);
	assert_ptr_equal(ovr.copy_to_hmem_iov, mock_to);
}

static void test_override_set_ops(void **state)
{
	struct ofi_hmem_override ovr = {0};
	struct fi_hmem_override_ops ops = {
		.size = sizeof(ops),
		.copy_from_hmem_iov = mock_from,
		.copy_to_hmem_iov = mock_to,
	};

	assert_int_equal(ofi_hmem_override_set_ops(&ovr, false, &ops), 0);
	assert_ptr_equal(ovr.copy_from_hmem_iov, mock_from);
	assert_ptr_equal(ovr.copy_to_hmem_iov, mock_to);

	assert_int_equal(ofi_hmem_override_set_ops(&ovr, true, NULL),
			 -FI_EBUSY);
	assert_ptr_equal(ovr.copy_from_hmem_iov, mock_from);

	/* A table too short for the second slot sets only the first. */
	ops.size = offsetof(struct fi_hmem_override_ops, copy_to_hmem_iov);
	assert_int_equal(ofi_hmem_override_set_ops(&ovr, false, &ops), 0);
	assert_ptr_equal(ovr.copy_from_hmem_iov, mock_from);
	assert_null(ovr.copy_to_hmem_iov);

	ops.size = sizeof(ops);
	ops.copy_from_hmem_iov = NULL;
	assert_int_equal(ofi_hmem_override_set_ops(&ovr, false, &ops), 0);
	assert_null(ovr.copy_from_hmem_iov);
	assert_ptr_equal(ovr.copy_to_hmem_iov, mock_to);

	assert_int_equal(ofi_hmem_override_set_ops(&ovr, false, NULL), 0);
	assert_null(ovr.copy_from_hmem_iov);
	assert_null(ovr.copy_to_hmem_iov);
}

static void test_fd_pass_local(void **state)
{
	int sv[2], pfd[2], fd = -5, fd2;
	char data[8] = "payload", got[8] = {0}, buf[4] = {0};

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(ofi_hmem_send_fd(sv[0], pfd[1], data, sizeof(data)),
			 0);
	assert_int_equal(ofi_hmem_recv_fd(sv[1], &fd, got, sizeof(got)), 0);
	assert_string_equal(got, "payload");
	assert_true(fd >= 0);
	assert_int_not_equal(fd, pfd[1]);
	/* The received fd is the same pipe. */
	assert_int_equal(write(fd, "abc", 3), 3);
	assert_int_equal(read(pfd[0], buf, 3), 3);
	assert_string_equal(buf, "abc");
	close(fd);

	/* Data without an fd. */
	assert_int_equal(ofi_hmem_send_fd(sv[0], -1, data, 4), 0);
	assert_int_equal(ofi_hmem_recv_fd(sv[1], &fd, got, 4), 0);
	assert_int_equal(fd, -1);

	/* Peer gone: an error, no fd. */
	close(sv[0]);
	assert_true(ofi_hmem_recv_fd(sv[1], &fd2, got, 4) < 0);
	assert_int_equal(fd2, -1);
	close(sv[1]);
	close(pfd[0]);
	close(pfd[1]);

	/* Handle patching is a Level Zero matter. */
	assert_int_equal(ofi_hmem_handle_set_fd(FI_HMEM_ZE, got, 42), 0);
	assert_int_equal(ofi_hmem_handle_get_fd(FI_HMEM_ZE, got, &fd), 0);
	assert_int_equal(fd, 42);
	assert_int_equal(ofi_hmem_handle_get_fd(FI_HMEM_CUDA, got, &fd),
			 -FI_ENOSYS);
}

/* Across processes: the child's memfd arrives as a working fd here. */
static void test_fd_pass_fork(void **state)
{
	char buf[16] = {0}, tag[4];
	int sv[2], fd = -1, status;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int mfd = memfd_create("hmem_test", 0);

		close(sv[0]);
		if (mfd < 0 || write(mfd, "from child", 10) != 10)
			_exit(2);
		_exit(ofi_hmem_send_fd(sv[1], mfd, "tag", 4) ? 3 : 0);
	}
	close(sv[1]);
	assert_int_equal(ofi_hmem_recv_fd(sv[0], &fd, tag, sizeof(tag)), 0);
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(tag, "tag");
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 10, 0), 10);
	assert_string_equal(buf, "from child");
	close(fd);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_dispatch),
		cmocka_unit_test(test_unavailable_ifaces),
		cmocka_unit_test(test_driver_missing_variants),
		cmocka_unit_test(test_iov_span),
		cmocka_unit_test(test_iov_to),
		cmocka_unit_test(test_iov_from),
		cmocka_unit_test(test_iov_dev_to_dev),
		cmocka_unit_test(test_override_from),
		cmocka_unit_test(test_override_to),
		cmocka_unit_test(test_override_rules),
		cmocka_unit_test(test_override_set_ops),
		cmocka_unit_test(test_fd_pass_local),
		cmocka_unit_test(test_fd_pass_fork),
	};

	return cmocka_run_group_tests_name("hmem_dispatch", tests,
					   setup_no_drivers, teardown_hmem);
}
