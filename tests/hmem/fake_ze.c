/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fake_ze.c - a test-only stand-in for the Level Zero loader (built as
 * libze_loader.so.1 in its own folder and loaded through
 * FI_HMEM_ZE_LIBRARY). One driver, FAKE_ZE_DEVICES (default 2) devices;
 * "device memory" comes from a memfd per device mapped at 0x7d0000000000 +
 * ordinal GiB. An IPC handle carries a fresh dup of that memfd in its
 * first four bytes, as real dma-buf handles do, so a peer can only map it
 * after receiving the fd over a Unix socket. FAKE_ZE_NO_DEVICE=1 makes
 * zeInit fail. Tests read call counts with fake_ze_calls(name) and arm a
 * one-shot failure with fake_ze_fail_next(name, ze_result_t).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_dev.h"

#define FAKE_ZE_BASE	 0x7d0000000000ULL
#define FAKE_ZE_IPC_BASE 0x7d4000000000ULL
#define FAKE_ZE_MAGIC	 0x46414b455a45ULL

struct fake_ze_ipc {
	int32_t fd; /* first, where importers look for it */
	int32_t dev;
	uint64_t magic;
	uint64_t off;
	uint64_t size;
};

struct fake_ze_obj {
	int dev;
	int live;
};

static struct fake_ze_obj fake_driver, fake_context;
static struct fake_ze_obj fake_devices[FAKE_MAX_DEV];
static struct fake_ze_obj fake_lists[FAKE_MAX_DEV];
static bool fake_ze_up;

#define FAKE_ENTER(name)                                                       \
	do {                                                                   \
		int f_ = fake_enter(name);                                     \
		if (f_)                                                        \
			return (ze_result_t)f_;                                \
	} while (0)

#define FAKE_NEED_INIT()                                                       \
	do {                                                                   \
		if (!fake_ze_up)                                               \
			return ZE_RESULT_ERROR_UNINITIALIZED;                  \
	} while (0)

unsigned long fake_ze_calls(const char *name)
{
	return fake_calls(name);
}

void fake_ze_fail_next(const char *name, int code)
{
	fake_fail_next(name, code);
}

void fake_ze_reset_calls(void)
{
	fake_reset_calls();
}

static int fake_ze_dev_of(ze_device_handle_t h)
{
	struct fake_ze_obj *o = (struct fake_ze_obj *)h;

	if (o < fake_devices || o >= fake_devices + fake.ndev)
		return -1;
	return (int)(o - fake_devices);
}

__attribute__((destructor)) static void fake_ze_fini(void)
{
	int i;

	for (i = 0; fake_ze_up && i < fake.ndev; i++) {
		munmap((void *)(FAKE_ZE_BASE + i * FAKE_DEV_SPAN),
		       FAKE_DEV_SIZE);
		close(fake.fd[i]);
	}
	fake_ze_up = false;
}

ze_result_t zeInit(ze_init_flags_t flags)
{
	const char *env;
	char name[32];
	int i, fd;

	FAKE_ENTER("zeInit");
	if (fake_ze_up)
		return ZE_RESULT_SUCCESS;
	env = getenv("FAKE_ZE_NO_DEVICE");
	if (env && *env == '1')
		return ZE_RESULT_ERROR_UNINITIALIZED;
	env = getenv("FAKE_ZE_DEVICES");
	fake.ndev = env ? atoi(env) : 2;
	if (fake.ndev < 1 || fake.ndev > FAKE_MAX_DEV)
		return ZE_RESULT_ERROR_UNINITIALIZED;
	fake.ipc_next = FAKE_ZE_IPC_BASE;
	for (i = 0; i < fake.ndev; i++) {
		snprintf(name, sizeof(name), "fake_ze.%d", i);
		fd = memfd_create(name, MFD_CLOEXEC);
		if (fd < 0 || fake_map_dev(FAKE_ZE_BASE, i, fd)) {
			perror("fake_ze: device memory");
			return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
		}
		fake_devices[i].dev = i;
	}
	fake_ze_up = true;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeDriverGet(uint32_t *count, ze_driver_handle_t *drivers)
{
	FAKE_ENTER("zeDriverGet");
	FAKE_NEED_INIT();
	if (*count && drivers)
		drivers[0] = (ze_driver_handle_t)&fake_driver;
	*count = 1;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGet(ze_driver_handle_t driver, uint32_t *count,
			ze_device_handle_t *devices)
{
	uint32_t i;

	FAKE_ENTER("zeDeviceGet");
	FAKE_NEED_INIT();
	if (driver != (ze_driver_handle_t)&fake_driver)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	if (!*count || !devices) {
		*count = (uint32_t)fake.ndev;
		return ZE_RESULT_SUCCESS;
	}
	for (i = 0; i < *count && i < (uint32_t)fake.ndev; i++)
		devices[i] = (ze_device_handle_t)&fake_devices[i];
	*count = i;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextCreate(ze_driver_handle_t driver,
			    const ze_context_desc_t *desc,
			    ze_context_handle_t *ctx)
{
	FAKE_ENTER("zeContextCreate");
	FAKE_NEED_INIT();
	if (!desc || desc->stype != ZE_STRUCTURE_TYPE_CONTEXT_DESC)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	fake_context.live++;
	*ctx = (ze_context_handle_t)&fake_context;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextDestroy(ze_context_handle_t ctx)
{
	FAKE_ENTER("zeContextDestroy");
	if (ctx != (ze_context_handle_t)&fake_context || !fake_context.live)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	fake_context.live--;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListCreateImmediate(ze_context_handle_t ctx,
					 ze_device_handle_t device,
					 const ze_command_queue_desc_t *desc,
					 ze_command_list_handle_t *list)
{
	int dev = fake_ze_dev_of(device);

	FAKE_ENTER("zeCommandListCreateImmediate");
	FAKE_NEED_INIT();
	if (dev < 0 || !desc ||
	    desc->stype != ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	/* Copies here complete in the call; only a synchronous list may
	 * promise that. */
	if (desc->mode != ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS)
		return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
	fake_lists[dev].dev = dev;
	fake_lists[dev].live++;
	*list = (ze_command_list_handle_t)&fake_lists[dev];
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListDestroy(ze_command_list_handle_t list)
{
	struct fake_ze_obj *o = (struct fake_ze_obj *)list;

	FAKE_ENTER("zeCommandListDestroy");
	if (!o || !o->live)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	o->live--;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t list,
					  void *dst, const void *src,
					  size_t size, ze_event_handle_t signal,
					  uint32_t nwait,
					  ze_event_handle_t *wait)
{
	struct fake_ze_obj *o = (struct fake_ze_obj *)list;
	struct fake_seg s;

	FAKE_ENTER("zeCommandListAppendMemoryCopy");
	if (!o || !o->live)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	/* A device engine copies device memory on at least one side. */
	if (!fake_lookup((uintptr_t)dst, size, false, &s) &&
	    !fake_lookup((uintptr_t)src, size, false, &s))
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	memcpy(dst, src, size);
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemAllocDevice(ze_context_handle_t ctx,
			     const ze_device_mem_alloc_desc_t *desc,
			     size_t size, size_t alignment,
			     ze_device_handle_t device, void **ptr)
{
	int dev = fake_ze_dev_of(device);
	uintptr_t p;

	FAKE_ENTER("zeMemAllocDevice");
	FAKE_NEED_INIT();
	if (dev < 0 || !desc ||
	    desc->stype != ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC || !size)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	p = fake_alloc(FAKE_ZE_BASE, dev, size);
	if (!p)
		return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
	*ptr = (void *)p;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemFree(ze_context_handle_t ctx, void *ptr)
{
	FAKE_ENTER("zeMemFree");
	return fake_free((uintptr_t)ptr) ? ZE_RESULT_SUCCESS
					 : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

ze_result_t zeMemGetAllocProperties(ze_context_handle_t ctx, const void *ptr,
				    ze_memory_allocation_properties_t *props,
				    ze_device_handle_t *device)
{
	struct fake_seg s;

	FAKE_ENTER("zeMemGetAllocProperties");
	FAKE_NEED_INIT();
	if (!props ||
	    props->stype != ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if (!fake_lookup((uintptr_t)ptr, 1, false, &s)) {
		props->type = ZE_MEMORY_TYPE_UNKNOWN;
		if (device)
			*device = NULL;
		return ZE_RESULT_SUCCESS;
	}
	props->type = ZE_MEMORY_TYPE_DEVICE;
	props->id = s.start;
	props->pageSize = FAKE_PAGE;
	if (device)
		*device = (ze_device_handle_t)&fake_devices[s.dev];
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemGetAddressRange(ze_context_handle_t ctx, const void *ptr,
				 void **base, size_t *size)
{
	struct fake_seg s;

	FAKE_ENTER("zeMemGetAddressRange");
	if (!fake_lookup((uintptr_t)ptr, 1, false, &s))
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if (base)
		*base = (void *)s.start;
	if (size)
		*size = s.size;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemGetIpcHandle(ze_context_handle_t ctx, const void *ptr,
			      ze_ipc_mem_handle_t *handle)
{
	struct fake_ze_ipc h = {.magic = FAKE_ZE_MAGIC};
	struct fake_seg s;

	FAKE_ENTER("zeMemGetIpcHandle");
	if (!fake_lookup((uintptr_t)ptr, 1, false, &s) ||
	    s.kind != FAKE_SEG_ALLOC)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	h.fd = fcntl(fake.fd[s.dev], F_DUPFD_CLOEXEC, 0);
	if (h.fd < 0)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	h.dev = s.dev;
	h.off = s.file_off;
	h.size = s.size;
	memset(handle, 0, sizeof(*handle));
	memcpy(handle->data, &h, sizeof(h));
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemOpenIpcHandle(ze_context_handle_t ctx,
			       ze_device_handle_t device,
			       ze_ipc_mem_handle_t handle,
			       ze_ipc_memory_flags_t flags, void **ptr)
{
	int dev = fake_ze_dev_of(device);
	struct fake_ze_ipc h;
	uintptr_t p;

	FAKE_ENTER("zeMemOpenIpcHandle");
	FAKE_NEED_INIT();
	memcpy(&h, handle.data, sizeof(h));
	if (dev < 0 || h.magic != FAKE_ZE_MAGIC)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	p = fake_map_import(h.fd, h.off, h.size, dev);
	if (!p)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	*ptr = (void *)p;
	return ZE_RESULT_SUCCESS;
}

ze_result_t zeMemCloseIpcHandle(ze_context_handle_t ctx, const void *ptr)
{
	FAKE_ENTER("zeMemCloseIpcHandle");
	return fake_unmap_import((uintptr_t)ptr)
		       ? ZE_RESULT_SUCCESS
		       : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}
