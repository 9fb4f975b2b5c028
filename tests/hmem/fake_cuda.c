/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fake_cuda.c - a test-only stand-in for the CUDA driver (built as
 * libcuda.so.1 in its own folder and loaded through FI_HMEM_CUDA_LIBRARY).
 * "Device memory" is host memory from a shared-memory file per device
 * mapped at 0x7e0000000000 + ordinal GiB; IPC handles name the exporting
 * pid, device and file offset so another process can map the same pages
 * (at 0x7e4000000000 on). Like the real driver it needs a current context
 * for allocations and copies and refuses to import its own handles.
 * Environment: FAKE_CUDA_DEVICES (default 2), FAKE_CUDA_NO_DEVICE=1.
 * Tests read call counts with fake_cuda_calls("cuMemcpyHtoD_v2") and arm a
 * one-shot failure with fake_cuda_fail_next(name, CUresult).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_dev.h"

#define FAKE_CUDA_BASE	   0x7e0000000000ULL
#define FAKE_CUDA_IPC_BASE 0x7e4000000000ULL
#define FAKE_CUDA_MAGIC	   0x46414b4543554441ULL

struct fake_cuda_ipc {
	uint64_t magic;
	int32_t pid;
	int32_t dev;
	uint64_t off;
	uint64_t size;
};

struct fake_ctx {
	int dev;
	int retained;
};

static struct fake_ctx fake_ctxs[FAKE_MAX_DEV];
static __thread struct fake_ctx *fake_cur;
static bool fake_cuda_up;

#define FAKE_ENTER(name)                                                       \
	do {                                                                   \
		int f_ = fake_enter(name);                                     \
		if (f_)                                                        \
			return (CUresult)f_;                                   \
	} while (0)

#define FAKE_NEED_INIT()                                                       \
	do {                                                                   \
		if (!fake_cuda_up)                                             \
			return CUDA_ERROR_NOT_INITIALIZED;                     \
	} while (0)

#define FAKE_NEED_CTX()                                                        \
	do {                                                                   \
		if (!fake_cur)                                                 \
			return CUDA_ERROR_INVALID_CONTEXT;                     \
	} while (0)

unsigned long fake_cuda_calls(const char *name)
{
	return fake_calls(name);
}

void fake_cuda_fail_next(const char *name, int code)
{
	fake_fail_next(name, code);
}

void fake_cuda_reset_calls(void)
{
	fake_reset_calls();
}

static void fake_cuda_shm_name(char *buf, size_t len, int pid, int dev)
{
	snprintf(buf, len, "/ofi_fake_cuda.%d.%d", pid, dev);
}

__attribute__((destructor)) static void fake_cuda_fini(void)
{
	char name[64];
	int i;

	for (i = 0; fake_cuda_up && i < fake.ndev; i++) {
		fake_cuda_shm_name(name, sizeof(name), getpid(), i);
		shm_unlink(name);
		munmap((void *)(FAKE_CUDA_BASE + i * FAKE_DEV_SPAN),
		       FAKE_DEV_SIZE);
		close(fake.fd[i]);
	}
	fake_cuda_up = false;
}

CUresult cuInit(unsigned int flags)
{
	const char *env;
	char name[64];
	int i, fd;

	FAKE_ENTER("cuInit");
	if (fake_cuda_up)
		return CUDA_SUCCESS;
	env = getenv("FAKE_CUDA_NO_DEVICE");
	if (env && *env == '1')
		return CUDA_ERROR_NO_DEVICE;
	env = getenv("FAKE_CUDA_DEVICES");
	fake.ndev = env ? atoi(env) : 2;
	if (fake.ndev < 1 || fake.ndev > FAKE_MAX_DEV)
		return CUDA_ERROR_NO_DEVICE;
	fake.ipc_next = FAKE_CUDA_IPC_BASE;
	for (i = 0; i < fake.ndev; i++) {
		fake_cuda_shm_name(name, sizeof(name), getpid(), i);
		shm_unlink(name); /* a leftover of a crashed run */
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || fake_map_dev(FAKE_CUDA_BASE, i, fd)) {
			perror("fake_cuda: device memory");
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		fake_ctxs[i].dev = i;
	}
	fake_cuda_up = true;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	FAKE_ENTER("cuDeviceGetCount");
	FAKE_NEED_INIT();
	*count = fake.ndev;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	FAKE_ENTER("cuDeviceGet");
	FAKE_NEED_INIT();
	if (ordinal < 0 || ordinal >= fake.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	FAKE_ENTER("cuCtxGetCurrent");
	*pctx = (CUcontext)fake_cur;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	FAKE_ENTER("cuCtxSetCurrent");
	fake_cur = (struct fake_ctx *)ctx;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	FAKE_ENTER("cuDevicePrimaryCtxRetain");
	FAKE_NEED_INIT();
	if (dev < 0 || dev >= fake.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	fake_ctxs[dev].retained++;
	*pctx = (CUcontext)&fake_ctxs[dev];
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	FAKE_ENTER("cuDevicePrimaryCtxRelease_v2");
	if (dev < 0 || dev >= fake.ndev || !fake_ctxs[dev].retained)
		return CUDA_ERROR_INVALID_DEVICE;
	if (--fake_ctxs[dev].retained == 0 && fake_cur == &fake_ctxs[dev])
		fake_cur = NULL;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	uintptr_t p;

	FAKE_ENTER("cuMemAlloc_v2");
	FAKE_NEED_INIT();
	FAKE_NEED_CTX();
	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	p = fake_alloc(FAKE_CUDA_BASE, fake_cur->dev, size);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*dptr = p;
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	FAKE_ENTER("cuMemFree_v2");
	FAKE_NEED_CTX();
	return fake_free(dptr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static bool fake_is_dev(uintptr_t p, size_t len)
{
	struct fake_seg s;

	return fake_lookup(p, len, false, &s);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t size)
{
	FAKE_ENTER("cuMemcpyHtoD_v2");
	FAKE_NEED_CTX();
	if (!fake_is_dev(dst, size) || fake_is_dev((uintptr_t)src, 1))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy((void *)dst, src, size);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t size)
{
	FAKE_ENTER("cuMemcpyDtoH_v2");
	FAKE_NEED_CTX();
	if (!fake_is_dev(src, size) || fake_is_dev((uintptr_t)dst, 1))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(dst, (void *)src, size);
	return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t size)
{
	FAKE_ENTER("cuMemcpy");
	FAKE_NEED_CTX();
	memcpy((void *)dst, (void *)src, size);
	return CUDA_SUCCESS;
}

static void fake_attr(CUpointer_attribute attr, void *data,
		      const struct fake_seg *s)
{
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = !s ? 0
					: s->kind == FAKE_SEG_HOST
						? CU_MEMORYTYPE_HOST
						: CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = s ? s->dev : -2;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned int *)data = 0;
		break;
	default:
		break;
	}
}

CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs,
				void **data, CUdeviceptr ptr)
{
	struct fake_seg s;
	bool found;
	unsigned int i;

	FAKE_ENTER("cuPointerGetAttributes");
	FAKE_NEED_INIT();
	found = fake_lookup(ptr, 1, true, &s);
	for (i = 0; i < n; i++)
		fake_attr(attrs[i], data[i], found ? &s : NULL);
	return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attr,
			       CUdeviceptr ptr)
{
	FAKE_ENTER("cuPointerSetAttribute");
	return fake_is_dev(ptr, 1) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
				 CUdeviceptr ptr)
{
	struct fake_seg s;

	FAKE_ENTER("cuMemGetAddressRange_v2");
	FAKE_NEED_CTX();
	if (!fake_lookup(ptr, 1, false, &s))
		return CUDA_ERROR_NOT_FOUND;
	if (base)
		*base = s.start;
	if (size)
		*size = s.size;
	return CUDA_SUCCESS;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr ptr)
{
	struct fake_cuda_ipc h = {.magic = FAKE_CUDA_MAGIC};
	struct fake_seg s;

	FAKE_ENTER("cuIpcGetMemHandle");
	FAKE_NEED_CTX();
	if (!fake_lookup(ptr, 1, false, &s) || s.kind != FAKE_SEG_ALLOC)
		return CUDA_ERROR_INVALID_VALUE;
	h.pid = getpid();
	h.dev = s.dev;
	h.off = s.file_off;
	h.size = s.size;
	memset(handle, 0, sizeof(*handle));
	memcpy(handle->reserved, &h, sizeof(h));
	return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *dptr, CUipcMemHandle handle,
			       unsigned int flags)
{
	struct fake_cuda_ipc h;
	char name[64];
	uintptr_t p;
	int fd;

	FAKE_ENTER("cuIpcOpenMemHandle_v2");
	FAKE_NEED_CTX();
	memcpy(&h, handle.reserved, sizeof(h));
	if (h.magic != FAKE_CUDA_MAGIC ||
	    flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
		return CUDA_ERROR_INVALID_VALUE;
	if (h.pid == getpid())
		return CUDA_ERROR_INVALID_CONTEXT;
	fake_cuda_shm_name(name, sizeof(name), h.pid, h.dev);
	fd = shm_open(name, O_RDWR, 0);
	if (fd < 0)
		return CUDA_ERROR_INVALID_HANDLE;
	p = fake_map_import(fd, h.off, h.size, fake_cur->dev);
	close(fd);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*dptr = p;
	return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	FAKE_ENTER("cuIpcCloseMemHandle");
	FAKE_NEED_CTX();
	return fake_unmap_import(dptr) ? CUDA_SUCCESS
				       : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
	struct fake_seg *s;
	CUresult ret = CUDA_SUCCESS;

	FAKE_ENTER("cuMemHostRegister_v2");
	FAKE_NEED_CTX();
	pthread_mutex_lock(&fake.lock);
	if (fake_find((uintptr_t)p, 1, true)) {
		ret = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		goto out;
	}
	s = fake_new_seg();
	if (!s) {
		ret = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	s->kind = FAKE_SEG_HOST;
	s->start = (uintptr_t)p;
	s->size = size;
	s->dev = -1;
out:
	pthread_mutex_unlock(&fake.lock);
	return ret;
}

CUresult cuMemHostUnregister(void *p)
{
	struct fake_seg *s;
	CUresult ret = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;

	FAKE_ENTER("cuMemHostUnregister");
	FAKE_NEED_CTX();
	pthread_mutex_lock(&fake.lock);
	s = fake_find((uintptr_t)p, 1, true);
	if (s && s->kind == FAKE_SEG_HOST && s->start == (uintptr_t)p) {
		s->kind = FAKE_SEG_FREE;
		ret = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&fake.lock);
	return ret;
}

CUresult cuGetErrorName(CUresult error, const char **str)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "FAKE_CUDA_ERROR_%d", (int)error);
	*str = buf;
	return CUDA_SUCCESS;
}
