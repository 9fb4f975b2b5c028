/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_ze.c - the FI_HMEM_ZE interface over oneAPI Level Zero. The loader
 * (libze_loader.so.1, or FI_HMEM_ZE_LIBRARY) is dlopen'ed at init; the
 * first driver's devices get one context and a synchronous immediate
 * command list each, through which every copy goes. Without the Level
 * Zero headers at build time (HAVE_ZE 0) the interface is compiled out.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ofi.h"
#include "ofi_hmem.h"

#if defined(HAVE_ZE) && HAVE_ZE

#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <string.h>

#define OFI_ZE_MAX_DEV 32

#define OFI_ZE_FUNCS(X)                                                        \
	X(init, zeInit)                                                        \
	X(driver_get, zeDriverGet)                                             \
	X(device_get, zeDeviceGet)                                             \
	X(context_create, zeContextCreate)                                     \
	X(context_destroy, zeContextDestroy)                                   \
	X(cmdlist_create_immediate, zeCommandListCreateImmediate)              \
	X(cmdlist_destroy, zeCommandListDestroy)                               \
	X(cmdlist_append_copy, zeCommandListAppendMemoryCopy)                  \
	X(mem_alloc_device, zeMemAllocDevice)                                  \
	X(mem_free, zeMemFree)                                                 \
	X(mem_get_alloc_properties, zeMemGetAllocProperties)                   \
	X(mem_get_address_range, zeMemGetAddressRange)                         \
	X(mem_get_ipc_handle, zeMemGetIpcHandle)                               \
	X(mem_open_ipc_handle, zeMemOpenIpcHandle)                             \
	X(mem_close_ipc_handle, zeMemCloseIpcHandle)

#define OFI_ZE_FIELD(field, fn) __typeof__(fn) *field;

struct ofi_ze_dev {
	ze_device_handle_t handle;
	ze_command_list_handle_t cmdlist;
	pthread_mutex_t lock; /* command lists are not thread-safe */
};

static struct {
	void *lib;
	ze_driver_handle_t driver;
	ze_context_handle_t context;
	uint32_t ndev;
	struct ofi_ze_dev dev[OFI_ZE_MAX_DEV];
	OFI_ZE_FUNCS(OFI_ZE_FIELD)
} ze;

static int ofi_ze_err(const char *call, ze_result_t res)
{
	FI_WARN(&ofi_core_prov, FI_LOG_CORE, "ze: %s failed: 0x%x\n", call,
		(unsigned)res);
	switch (res) {
	case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
	case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
		return -FI_ENOMEM;
	case ZE_RESULT_ERROR_INVALID_ARGUMENT:
	case ZE_RESULT_ERROR_INVALID_NULL_HANDLE:
	case ZE_RESULT_ERROR_INVALID_NULL_POINTER:
		return -FI_EINVAL;
	case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
		return -FI_ENOSYS;
	default:
		return -FI_EIO;
	}
}

#define OFI_ZE_CHECK(call, ...)                                                \
	({                                                                     \
		ze_result_t res_ = ze.call(__VA_ARGS__);                       \
		res_ == ZE_RESULT_SUCCESS ? 0 : ofi_ze_err(#call, res_);       \
	})

static int ofi_ze_copy(uint64_t device, void *dest, const void *src,
		       size_t size)
{
	struct ofi_ze_dev *dev;
	int ret;

	if (device >= ze.ndev)
		return -FI_EINVAL;
	if (!size)
		return 0;
	dev = &ze.dev[device];
	pthread_mutex_lock(&dev->lock);
	ret = OFI_ZE_CHECK(cmdlist_append_copy, dev->cmdlist, dest, src, size,
			   NULL, 0, NULL);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

static bool ofi_ze_dev_index(ze_device_handle_t handle, uint64_t *index)
{
	uint32_t i;

	for (i = 0; i < ze.ndev; i++) {
		if (ze.dev[i].handle == handle) {
			*index = i;
			return true;
		}
	}
	return false;
}

/* Host allocations stay FI_HMEM_SYSTEM, as with CUDA. */
static bool ofi_ze_is_addr_valid(const void *addr, uint64_t *device,
				 uint64_t *flags)
{
	ze_memory_allocation_properties_t props = {
		.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
	};
	ze_device_handle_t handle = NULL;
	uint64_t index = 0;

	if (ze.mem_get_alloc_properties(ze.context, addr, &props, &handle) !=
	    ZE_RESULT_SUCCESS)
		return false;
	if (props.type != ZE_MEMORY_TYPE_DEVICE &&
	    props.type != ZE_MEMORY_TYPE_SHARED)
		return false;
	if (handle)
		ofi_ze_dev_index(handle, &index);
	if (device)
		*device = index;
	if (flags)
		*flags = props.type == ZE_MEMORY_TYPE_DEVICE
				 ? FI_HMEM_DEVICE_ONLY
				 : 0;
	return true;
}

static int ofi_ze_get_base_addr(const void *addr, size_t len, void **base,
				size_t *size)
{
	return OFI_ZE_CHECK(mem_get_address_range, ze.context, addr, base,
			    size);
}

static int ofi_ze_get_handle(void *base, size_t size, void *handle)
{
	ze_ipc_mem_handle_t h;
	int ret;

	ret = OFI_ZE_CHECK(mem_get_ipc_handle, ze.context, base, &h);
	if (!ret)
		memcpy(handle, &h, sizeof(h));
	return ret;
}

/* The fd inside @handle must already be valid in this process. */
static int ofi_ze_open_handle(void *handle, size_t size, uint64_t device,
			      void **mapped)
{
	ze_ipc_mem_handle_t h;

	if (device >= ze.ndev)
		return -FI_EINVAL;
	memcpy(&h, handle, sizeof(h));
	return OFI_ZE_CHECK(mem_open_ipc_handle, ze.context,
			    ze.dev[device].handle, h, 0, mapped);
}

static int ofi_ze_close_handle(void *mapped)
{
	return OFI_ZE_CHECK(mem_close_ipc_handle, ze.context, mapped);
}

static int ofi_ze_get_handle_size(size_t *size)
{
	*size = sizeof(ze_ipc_mem_handle_t);
	return 0;
}

static int ofi_ze_alloc(uint64_t device, void **ptr, size_t size)
{
	ze_device_mem_alloc_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC,
	};

	if (device >= ze.ndev)
		return -FI_EINVAL;
	return OFI_ZE_CHECK(mem_alloc_device, ze.context, &desc, size, 64,
			    ze.dev[device].handle, ptr);
}

static int ofi_ze_free(void *ptr)
{
	return OFI_ZE_CHECK(mem_free, ze.context, ptr);
}

static int ofi_ze_resolve(const char *path)
{
#define OFI_ZE_DLSYM(field, fn)                                                \
	ze.field = (__typeof__(ze.field))dlsym(ze.lib, #fn);                   \
	if (!ze.field) {                                                       \
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,                           \
			"ze: %s lacks %s; ZE unavailable\n", path, #fn);       \
		return -FI_ENOSYS;                                             \
	}
	OFI_ZE_FUNCS(OFI_ZE_DLSYM)
	return 0;
#undef OFI_ZE_DLSYM
}

static int ofi_ze_open_devices(void)
{
	ze_device_handle_t handles[OFI_ZE_MAX_DEV];
	ze_context_desc_t ctx_desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
	ze_command_queue_desc_t cq_desc = {
		.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
		.mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
	};
	uint32_t count = 1, i;
	int ret;

	ret = OFI_ZE_CHECK(driver_get, &count, &ze.driver);
	if (ret || !count)
		return -FI_ENOSYS;
	count = OFI_ZE_MAX_DEV;
	ret = OFI_ZE_CHECK(device_get, ze.driver, &count, handles);
	if (ret || !count)
		return -FI_ENOSYS;
	ret = OFI_ZE_CHECK(context_create, ze.driver, &ctx_desc, &ze.context);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		ze.dev[i].handle = handles[i];
		ret = OFI_ZE_CHECK(cmdlist_create_immediate, ze.context,
				   handles[i], &cq_desc, &ze.dev[i].cmdlist);
		if (ret)
			return ret;
		pthread_mutex_init(&ze.dev[i].lock, NULL);
		ze.ndev = i + 1;
	}
	return 0;
}

static int ofi_ze_cleanup(void);

static int ofi_ze_init(void)
{
	const char *path;
	ze_result_t res;
	int ret;

	if (!ofi_hmem_iface_enabled("hmem_ze_enable", FI_HMEM_ZE))
		return -FI_ENOSYS;
	path = ofi_hmem_library("hmem_ze_library", "libze_loader.so.1");
	ze.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!ze.lib) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,
			"ze: no loader (%s); ZE unavailable\n", dlerror());
		return -FI_ENOSYS;
	}
	ret = ofi_ze_resolve(path);
	if (ret)
		goto err;
	res = ze.init(ZE_INIT_FLAG_GPU_ONLY);
	if (res != ZE_RESULT_SUCCESS) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,
			"ze: no usable driver (0x%x); ZE unavailable\n",
			(unsigned)res);
		ret = -FI_ENOSYS;
		goto err;
	}
	ret = ofi_ze_open_devices();
	if (ret)
		goto err;
	FI_INFO(&ofi_core_prov, FI_LOG_CORE, "ze: %s, %u device(s)\n", path,
		ze.ndev);
	return 0;
err:
	ofi_ze_cleanup();
	return ret;
}

static int ofi_ze_cleanup(void)
{
	uint32_t i;

	for (i = 0; i < ze.ndev; i++) {
		ze.cmdlist_destroy(ze.dev[i].cmdlist);
		pthread_mutex_destroy(&ze.dev[i].lock);
	}
	if (ze.context)
		ze.context_destroy(ze.context);
	if (ze.lib)
		dlclose(ze.lib);
	memset(&ze, 0, sizeof(ze));
	return 0;
}

const struct ofi_hmem_ops ofi_hmem_ze_ops = {
	.name = "ze",
	.init = ofi_ze_init,
	.cleanup = ofi_ze_cleanup,
	.copy_to_hmem = ofi_ze_copy,
	.copy_from_hmem = ofi_ze_copy,
	.copy_dev_to_dev = ofi_ze_copy,
	.is_addr_valid = ofi_ze_is_addr_valid,
	.get_base_addr = ofi_ze_get_base_addr,
	.get_handle = ofi_ze_get_handle,
	.open_handle = ofi_ze_open_handle,
	.close_handle = ofi_ze_close_handle,
	.get_handle_size = ofi_ze_get_handle_size,
	.alloc = ofi_ze_alloc,
	.free = ofi_ze_free,
};

#else /* !HAVE_ZE */

static int ofi_ze_init(void)
{
	FI_INFO(&ofi_core_prov, FI_LOG_CORE,
		"ze: not built in; ZE unavailable\n");
	return -FI_ENOSYS;
}

const struct ofi_hmem_ops ofi_hmem_ze_ops = {
	.name = "ze",
	.init = ofi_ze_init,
};

#endif /* HAVE_ZE */
