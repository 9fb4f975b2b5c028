/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_cuda.c - the FI_HMEM_CUDA interface over the CUDA driver API. The
 * driver (libcuda.so.1, or FI_HMEM_CUDA_LIBRARY) is dlopen'ed at init and
 * its versioned entry points resolved by name, so the library neither
 * links against nor requires CUDA; without cuda.h at build time
 * (HAVE_CUDA 0) the interface is compiled out and never comes up.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ofi.h"
#include "ofi_hmem.h"

#if defined(HAVE_CUDA) && HAVE_CUDA

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* field, prototype from cuda.h, exported (versioned) symbol name */
#define OFI_CUDA_REQUIRED(X)                                                   \
	X(init, cuInit, "cuInit")                                              \
	X(device_get_count, cuDeviceGetCount, "cuDeviceGetCount")              \
	X(device_get, cuDeviceGet, "cuDeviceGet")                              \
	X(ctx_get_current, cuCtxGetCurrent, "cuCtxGetCurrent")                 \
	X(ctx_set_current, cuCtxSetCurrent, "cuCtxSetCurrent")                 \
	X(primary_ctx_retain, cuDevicePrimaryCtxRetain,                        \
	  "cuDevicePrimaryCtxRetain")                                          \
	X(primary_ctx_release, cuDevicePrimaryCtxRelease,                      \
	  "cuDevicePrimaryCtxRelease_v2")                                      \
	X(mem_alloc, cuMemAlloc, "cuMemAlloc_v2")                              \
	X(mem_free, cuMemFree, "cuMemFree_v2")                                 \
	X(memcpy_htod, cuMemcpyHtoD, "cuMemcpyHtoD_v2")                        \
	X(memcpy_dtoh, cuMemcpyDtoH, "cuMemcpyDtoH_v2")                        \
	X(memcpy_any, cuMemcpy, "cuMemcpy")                                    \
	X(pointer_get_attributes, cuPointerGetAttributes,                      \
	  "cuPointerGetAttributes")                                            \
	X(mem_get_address_range, cuMemGetAddressRange,                         \
	  "cuMemGetAddressRange_v2")                                           \
	X(ipc_get_mem_handle, cuIpcGetMemHandle, "cuIpcGetMemHandle")          \
	X(ipc_open_mem_handle, cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2")    \
	X(ipc_close_mem_handle, cuIpcCloseMemHandle, "cuIpcCloseMemHandle")    \
	X(mem_host_register, cuMemHostRegister, "cuMemHostRegister_v2")        \
	X(mem_host_unregister, cuMemHostUnregister, "cuMemHostUnregister")

/* Nice to have: their absence only loses a log detail or a sync hint. */
#define OFI_CUDA_OPTIONAL(X)                                                   \
	X(pointer_set_attribute, cuPointerSetAttribute,                        \
	  "cuPointerSetAttribute")                                             \
	X(get_error_name, cuGetErrorName, "cuGetErrorName")

#define OFI_CUDA_FIELD(field, proto, sym) __typeof__(proto) *field;

static struct {
	void *lib;
	int ndev;
	CUcontext *ctx; /* primary contexts we retained, per ordinal */
	pthread_mutex_t lock;
	OFI_CUDA_REQUIRED(OFI_CUDA_FIELD)
	OFI_CUDA_OPTIONAL(OFI_CUDA_FIELD)
} cu = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int ofi_cuda_err(const char *call, CUresult res)
{
	const char *name = NULL;

	if (cu.get_error_name)
		cu.get_error_name(res, &name);
	FI_WARN(&ofi_core_prov, FI_LOG_CORE, "cuda: %s failed: %s (%d)\n", call,
		name ? name : "unknown error", (int)res);
	switch (res) {
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -FI_ENOMEM;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_DEVICE:
	case CUDA_ERROR_INVALID_HANDLE:
		return -FI_EINVAL;
	case CUDA_ERROR_NOT_FOUND:
		return -FI_ENOENT;
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
		return -FI_EALREADY;
	default:
		return -FI_EIO;
	}
}

#define OFI_CUDA_CHECK(call, ...)                                              \
	({                                                                     \
		CUresult res_ = cu.call(__VA_ARGS__);                          \
		res_ == CUDA_SUCCESS ? 0 : ofi_cuda_err(#call, res_);          \
	})

/* The primary context of @device, retained once for the library. */
static int ofi_cuda_dev_ctx(uint64_t device, CUcontext *ctx)
{
	CUdevice dev;
	int ret = 0;

	if (device >= (uint64_t)cu.ndev)
		return -FI_EINVAL;
	pthread_mutex_lock(&cu.lock);
	if (!cu.ctx[device]) {
		ret = OFI_CUDA_CHECK(device_get, &dev, (int)device);
		if (!ret)
			ret = OFI_CUDA_CHECK(primary_ctx_retain,
					     &cu.ctx[device], dev);
	}
	*ctx = cu.ctx[device];
	pthread_mutex_unlock(&cu.lock);
	return ret;
}

/*
 * The driver API works on the calling thread's current context. Copies
 * and queries need just some context (addressing is unified); a thread
 * that has none (the usual case in a progress thread) gets @device's
 * primary context, which it shares with the CUDA runtime.
 */
static int ofi_cuda_set_ctx(uint64_t device)
{
	CUcontext cur = NULL;
	int ret;

	if (cu.ctx_get_current(&cur) == CUDA_SUCCESS && cur)
		return 0;
	ret = ofi_cuda_dev_ctx(device, &cur);
	if (ret)
		return ret;
	return OFI_CUDA_CHECK(ctx_set_current, cur);
}

/*
 * Allocations and IPC imports belong to a device: switch to its context
 * for the call and give the thread its own back afterwards.
 */
static int ofi_cuda_enter_dev(uint64_t device, CUcontext *prev)
{
	CUcontext ctx;
	int ret;

	*prev = NULL;
	ret = ofi_cuda_dev_ctx(device, &ctx);
	if (ret)
		return ret;
	cu.ctx_get_current(prev);
	if (*prev == ctx)
		return 0;
	return OFI_CUDA_CHECK(ctx_set_current, ctx);
}

static void ofi_cuda_leave_dev(CUcontext prev)
{
	if (prev)
		cu.ctx_set_current(prev);
}

static bool ofi_cuda_query(const void *addr, CUmemorytype *type, int *ordinal,
			   int *managed)
{
	CUpointer_attribute attrs[] = {
		CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
		CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
		CU_POINTER_ATTRIBUTE_IS_MANAGED,
	};
	void *data[] = {type, ordinal, managed};

	*type = 0;
	*ordinal = -1;
	*managed = 0;
	return cu.pointer_get_attributes(OFI_ARRAY_SIZE(attrs), attrs, data,
					 (CUdeviceptr)(uintptr_t)addr) ==
	       CUDA_SUCCESS;
}

/* The device that owns @ptr, or 0 when the driver does not say. */
static uint64_t ofi_cuda_ptr_device(const void *ptr)
{
	CUmemorytype type;
	int ordinal, managed;

	if (ofi_cuda_query(ptr, &type, &ordinal, &managed) && ordinal >= 0)
		return (uint64_t)ordinal;
	return 0;
}

/*
 * Only device (and managed) memory is claimed: host memory pinned through
 * the driver stays FI_HMEM_SYSTEM so bounce buffers are plain memcpy.
 */
static bool ofi_cuda_is_addr_valid(const void *addr, uint64_t *device,
				   uint64_t *flags)
{
	CUmemorytype type;
	int ordinal, managed;

	if (!ofi_cuda_query(addr, &type, &ordinal, &managed) ||
	    type != CU_MEMORYTYPE_DEVICE)
		return false;
	if (device)
		*device = ordinal < 0 ? 0 : (uint64_t)ordinal;
	if (flags)
		*flags = managed ? 0 : FI_HMEM_DEVICE_ONLY;
	return true;
}

/*
 * Synchronous copies into device memory may otherwise return before the
 * data lands; memory a peer maps must see every completed copy.
 */
static void ofi_cuda_sync_memops(void *ptr)
{
	unsigned int on = 1;

	if (cu.pointer_set_attribute)
		cu.pointer_set_attribute(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
					 (CUdeviceptr)(uintptr_t)ptr);
}

static int ofi_cuda_copy_to(uint64_t device, void *dest, const void *src,
			    size_t size)
{
	int ret = ofi_cuda_set_ctx(device);

	if (ret || !size)
		return ret;
	return OFI_CUDA_CHECK(memcpy_htod, (CUdeviceptr)(uintptr_t)dest, src,
			      size);
}

static int ofi_cuda_copy_from(uint64_t device, void *dest, const void *src,
			      size_t size)
{
	int ret = ofi_cuda_set_ctx(device);

	if (ret || !size)
		return ret;
	return OFI_CUDA_CHECK(memcpy_dtoh, dest, (CUdeviceptr)(uintptr_t)src,
			      size);
}

static int ofi_cuda_copy_dev(uint64_t device, void *dest, const void *src,
			     size_t size)
{
	int ret = ofi_cuda_set_ctx(device);

	if (ret || !size)
		return ret;
	return OFI_CUDA_CHECK(memcpy_any, (CUdeviceptr)(uintptr_t)dest,
			      (CUdeviceptr)(uintptr_t)src, size);
}

static int ofi_cuda_get_base_addr(const void *addr, size_t len, void **base,
				  size_t *size)
{
	CUdeviceptr b;
	size_t s;
	int ret;

	ret = ofi_cuda_set_ctx(ofi_cuda_ptr_device(addr));
	if (ret)
		return ret;
	ret = OFI_CUDA_CHECK(mem_get_address_range, &b, &s,
			     (CUdeviceptr)(uintptr_t)addr);
	if (ret)
		return ret;
	*base = (void *)(uintptr_t)b;
	*size = s;
	return 0;
}

static int ofi_cuda_get_handle(void *base, size_t size, void *handle)
{
	CUipcMemHandle h;
	int ret;

	ret = ofi_cuda_set_ctx(ofi_cuda_ptr_device(base));
	if (ret)
		return ret;
	ofi_cuda_sync_memops(base);
	ret = OFI_CUDA_CHECK(ipc_get_mem_handle, &h,
			     (CUdeviceptr)(uintptr_t)base);
	if (!ret)
		memcpy(handle, &h, sizeof(h));
	return ret;
}

static int ofi_cuda_open_handle(void *handle, size_t size, uint64_t device,
				void **mapped)
{
	CUipcMemHandle h;
	CUdeviceptr ptr;
	CUcontext prev;
	int ret;

	ret = ofi_cuda_enter_dev(device, &prev);
	if (ret)
		return ret;
	memcpy(&h, handle, sizeof(h));
	ret = OFI_CUDA_CHECK(ipc_open_mem_handle, &ptr, h,
			     CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	ofi_cuda_leave_dev(prev);
	if (!ret)
		*mapped = (void *)(uintptr_t)ptr;
	return ret;
}

static int ofi_cuda_close_handle(void *mapped)
{
	int ret = ofi_cuda_set_ctx(ofi_cuda_ptr_device(mapped));

	if (ret)
		return ret;
	return OFI_CUDA_CHECK(ipc_close_mem_handle,
			      (CUdeviceptr)(uintptr_t)mapped);
}

static int ofi_cuda_get_handle_size(size_t *size)
{
	*size = sizeof(CUipcMemHandle);
	return 0;
}

static int ofi_cuda_alloc(uint64_t device, void **ptr, size_t size)
{
	CUdeviceptr p;
	CUcontext prev;
	int ret;

	ret = ofi_cuda_enter_dev(device, &prev);
	if (ret)
		return ret;
	ret = OFI_CUDA_CHECK(mem_alloc, &p, size);
	ofi_cuda_leave_dev(prev);
	if (ret)
		return ret;
	*ptr = (void *)(uintptr_t)p;
	ofi_cuda_sync_memops(*ptr);
	return 0;
}

static int ofi_cuda_free(void *ptr)
{
	int ret = ofi_cuda_set_ctx(ofi_cuda_ptr_device(ptr));

	if (ret)
		return ret;
	return OFI_CUDA_CHECK(mem_free, (CUdeviceptr)(uintptr_t)ptr);
}

static int ofi_cuda_host_register(void *addr, size_t size)
{
	int ret = ofi_cuda_set_ctx(0);

	if (ret)
		return ret;
	return OFI_CUDA_CHECK(mem_host_register, addr, size,
			      CU_MEMHOSTREGISTER_PORTABLE);
}

static int ofi_cuda_host_unregister(void *addr)
{
	int ret = ofi_cuda_set_ctx(0);

	if (ret)
		return ret;
	return OFI_CUDA_CHECK(mem_host_unregister, addr);
}

static int ofi_cuda_resolve(const char *path)
{
#define OFI_CUDA_DLSYM(field, proto, sym)                                      \
	cu.field = (__typeof__(cu.field))dlsym(cu.lib, sym);                   \
	if (!cu.field) {                                                       \
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,                           \
			"cuda: %s lacks %s; CUDA unavailable\n", path, sym);   \
		return -FI_ENOSYS;                                             \
	}
#define OFI_CUDA_DLSYM_OPT(field, proto, sym)                                  \
	cu.field = (__typeof__(cu.field))dlsym(cu.lib, sym);

	OFI_CUDA_REQUIRED(OFI_CUDA_DLSYM)
	OFI_CUDA_OPTIONAL(OFI_CUDA_DLSYM_OPT)
	return 0;
#undef OFI_CUDA_DLSYM
#undef OFI_CUDA_DLSYM_OPT
}

static int ofi_cuda_cleanup(void);

static int ofi_cuda_init(void)
{
	const char *path;
	CUresult res;
	int ret;

	if (!ofi_hmem_iface_enabled("hmem_cuda_enable", FI_HMEM_CUDA))
		return -FI_ENOSYS;
	path = ofi_hmem_library("hmem_cuda_library", "libcuda.so.1");
	cu.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!cu.lib) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,
			"cuda: no driver (%s); CUDA unavailable\n", dlerror());
		return -FI_ENOSYS;
	}
	ret = ofi_cuda_resolve(path);
	if (ret)
		goto err;

	/* A driver on a machine without a GPU is not an error either. */
	res = cu.init(0);
	if (res == CUDA_SUCCESS)
		res = cu.device_get_count(&cu.ndev);
	if (res != CUDA_SUCCESS || cu.ndev <= 0) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,
			"cuda: no usable device (%d); CUDA unavailable\n",
			(int)res);
		ret = -FI_ENOSYS;
		goto err;
	}
	cu.ctx = calloc((size_t)cu.ndev, sizeof(*cu.ctx));
	if (!cu.ctx) {
		ret = -FI_ENOMEM;
		goto err;
	}
	FI_INFO(&ofi_core_prov, FI_LOG_CORE, "cuda: %s, %d device(s)\n", path,
		cu.ndev);
	return 0;
err:
	ofi_cuda_cleanup();
	return ret;
}

static int ofi_cuda_cleanup(void)
{
	CUcontext cur = NULL;
	CUdevice dev;
	int i;

	if (cu.ctx)
		cu.ctx_get_current(&cur);
	for (i = 0; cu.ctx && i < cu.ndev; i++) {
		if (!cu.ctx[i])
			continue;
		/* Leave no thread of ours on a context about to go. */
		if (cur == cu.ctx[i])
			cu.ctx_set_current(NULL);
		if (cu.device_get(&dev, i) == CUDA_SUCCESS)
			cu.primary_ctx_release(dev);
	}
	free(cu.ctx);
	cu.ctx = NULL;
	cu.ndev = 0;
	if (cu.lib)
		dlclose(cu.lib);
	cu.lib = NULL;
	return 0;
}

const struct ofi_hmem_ops ofi_hmem_cuda_ops = {
	.name = "cuda",
	.init = ofi_cuda_init,
	.cleanup = ofi_cuda_cleanup,
	.copy_to_hmem = ofi_cuda_copy_to,
	.copy_from_hmem = ofi_cuda_copy_from,
	.copy_dev_to_dev = ofi_cuda_copy_dev,
	.is_addr_valid = ofi_cuda_is_addr_valid,
	.get_base_addr = ofi_cuda_get_base_addr,
	.get_handle = ofi_cuda_get_handle,
	.open_handle = ofi_cuda_open_handle,
	.close_handle = ofi_cuda_close_handle,
	.get_handle_size = ofi_cuda_get_handle_size,
	.alloc = ofi_cuda_alloc,
	.free = ofi_cuda_free,
	.host_register = ofi_cuda_host_register,
	.host_unregister = ofi_cuda_host_unregister,
};

#else /* !HAVE_CUDA */

static int ofi_cuda_init(void)
{
	FI_INFO(&ofi_core_prov, FI_LOG_CORE,
		"cuda: not built in; CUDA unavailable\n");
	return -FI_ENOSYS;
}

const struct ofi_hmem_ops ofi_hmem_cuda_ops = {
	.name = "cuda",
	.init = ofi_cuda_init,
};

#endif /* HAVE_CUDA */
