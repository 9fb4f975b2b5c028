/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem.c - the HMEM interface table and its dispatch: library-wide
 * init/cleanup of every interface, the hmem parameters, the address query
 * that finds which interface owns a pointer, and the flat per-iface calls.
 * The iov walkers and the override rules are in hmem_iov.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pthread.h>
#include <string.h>

#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "ofi.h"
#include "ofi_hmem.h"
#include "ofi_prov.h"

static int ofi_hmem_no_init(void)
{
	return -FI_ENOSYS;
}

/* ROCR, Neuron and SynapseAI are known by name but never come up. */
#define OFI_HMEM_UNAVAILABLE(iface_name)                                       \
	{                                                                      \
		.name = iface_name, .init = ofi_hmem_no_init,                  \
	}

struct ofi_hmem_ops ofi_hmem_ops[OFI_HMEM_MAX] = {
	[FI_HMEM_ROCR] = OFI_HMEM_UNAVAILABLE("rocr"),
	[FI_HMEM_NEURON] = OFI_HMEM_UNAVAILABLE("neuron"),
	[FI_HMEM_SYNAPSEAI] = OFI_HMEM_UNAVAILABLE("synapseai"),
};

static pthread_mutex_t ofi_hmem_lock = PTHREAD_MUTEX_INITIALIZER;
static bool ofi_hmem_up;

static void ofi_hmem_define_params(void)
{
	const struct fi_provider *core = &ofi_core_prov;

	fi_param_define(core, "hmem_cuda_enable", FI_PARAM_BOOL,
			"Use CUDA device memory when a driver is found "
			"(default: yes)");
	fi_param_define(core, "hmem_cuda_library", FI_PARAM_STRING,
			"CUDA driver library to dlopen "
			"(default: libcuda.so.1)");
	fi_param_define(core, "hmem_ze_enable", FI_PARAM_BOOL,
			"Use Level Zero device memory when a loader is found "
			"(default: yes)");
	fi_param_define(core, "hmem_ze_library", FI_PARAM_STRING,
			"Level Zero loader library to dlopen "
			"(default: libze_loader.so.1)");
	fi_param_define(core, "hmem", FI_PARAM_STRING,
			"Comma-separated device memory interfaces to enable "
			"(system, cuda, ze), or '^' followed by interfaces "
			"to disable (default: all that are found)");
	fi_param_define(core, "hmem_disable_p2p", FI_PARAM_BOOL,
			"Never map a peer's device memory (IPC); device data "
			"is staged through host memory (default: no)");
}

/* FI_HMEM lists or excludes interfaces by name. */
static bool ofi_hmem_listed(enum fi_hmem_iface iface)
{
	struct ofi_name_filter filter = {0};
	char *spec = NULL;
	bool pass;

	if (fi_param_get_str(&ofi_core_prov, "hmem", &spec) || !spec)
		return true;
	if (ofi_name_filter_init(&filter, spec))
		return true;
	pass = ofi_name_filter_pass(&filter, ofi_hmem_iface_name(iface));
	ofi_name_filter_free(&filter);
	return pass;
}

bool ofi_hmem_iface_enabled(const char *param, enum fi_hmem_iface iface)
{
	int val = 1;

	if (!ofi_hmem_listed(iface)) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,
			"hmem %s left out by FI_HMEM\n",
			ofi_hmem_iface_name(iface));
		return false;
	}
	if (fi_param_get_bool(&ofi_core_prov, param, &val))
		return true;
	if (!val)
		FI_INFO(&ofi_core_prov, FI_LOG_CORE, "hmem %s disabled by %s\n",
			ofi_hmem_iface_name(iface), param);
	return val != 0;
}

const char *ofi_hmem_library(const char *param, const char *dflt)
{
	char *path = NULL;

	if (fi_param_get_str(&ofi_core_prov, param, &path) || !path || !*path)
		return dflt;
	return path;
}

static void ofi_hmem_install(enum fi_hmem_iface iface,
			     const struct ofi_hmem_ops *ops)
{
	ofi_hmem_ops[iface] = *ops;
	ofi_hmem_ops[iface].initialized = false;
}

void ofi_hmem_init(void)
{
	int iface, ret;

	/*
	 * The core's init calls us; called first, let it run before the
	 * lock is taken, as the parameter reads below would start it.
	 */
	ofi_init();
	pthread_mutex_lock(&ofi_hmem_lock);
	if (ofi_hmem_up)
		goto out;
	ofi_hmem_define_params();
	ofi_hmem_install(FI_HMEM_SYSTEM, &ofi_hmem_system_ops);
	ofi_hmem_install(FI_HMEM_CUDA, &ofi_hmem_cuda_ops);
	ofi_hmem_install(FI_HMEM_ZE, &ofi_hmem_ze_ops);

	for (iface = 0; iface < OFI_HMEM_MAX; iface++) {
		ret = ofi_hmem_ops[iface].init();
		ofi_hmem_ops[iface].initialized = !ret;
		if (ret && iface != FI_HMEM_SYSTEM)
			FI_DBG(&ofi_core_prov, FI_LOG_CORE,
			       "hmem %s not available: %s\n",
			       ofi_hmem_iface_name(iface), fi_strerror(-ret));
		else if (!ret)
			FI_INFO(&ofi_core_prov, FI_LOG_CORE,
				"hmem %s initialized\n",
				ofi_hmem_iface_name(iface));
	}
	ofi_hmem_up = true;
out:
	pthread_mutex_unlock(&ofi_hmem_lock);
}

void ofi_hmem_cleanup(void)
{
	int iface;

	pthread_mutex_lock(&ofi_hmem_lock);
	for (iface = 0; iface < OFI_HMEM_MAX && ofi_hmem_up; iface++) {
		if (!ofi_hmem_ops[iface].initialized)
			continue;
		if (ofi_hmem_ops[iface].cleanup)
			ofi_hmem_ops[iface].cleanup();
		ofi_hmem_ops[iface].initialized = false;
	}
	ofi_hmem_up = false;
	pthread_mutex_unlock(&ofi_hmem_lock);
}

static inline bool ofi_hmem_valid_iface(enum fi_hmem_iface iface)
{
	return (unsigned)iface < OFI_HMEM_MAX;
}

bool ofi_hmem_is_initialized(enum fi_hmem_iface iface)
{
	return ofi_hmem_valid_iface(iface) && ofi_hmem_ops[iface].initialized;
}

bool ofi_hmem_any_available(void)
{
	int iface;

	for (iface = FI_HMEM_SYSTEM + 1; iface < OFI_HMEM_MAX; iface++)
		if (ofi_hmem_ops[iface].initialized)
			return true;
	return false;
}

bool ofi_hmem_is_ipc_enabled(enum fi_hmem_iface iface)
{
	int disabled = 0;

	if (!ofi_hmem_is_initialized(iface) || iface == FI_HMEM_SYSTEM ||
	    !ofi_hmem_ops[iface].get_handle)
		return false;
	fi_param_get_bool(&ofi_core_prov, "hmem_disable_p2p", &disabled);
	return !disabled;
}

const char *ofi_hmem_iface_name(enum fi_hmem_iface iface)
{
	static const char *const names[OFI_HMEM_MAX] = {
		[FI_HMEM_SYSTEM] = "system", [FI_HMEM_CUDA] = "cuda",
		[FI_HMEM_ROCR] = "rocr",     [FI_HMEM_ZE] = "ze",
		[FI_HMEM_NEURON] = "neuron", [FI_HMEM_SYNAPSEAI] = "synapseai",
	};

	return ofi_hmem_valid_iface(iface) ? names[iface] : "unknown";
}

enum fi_hmem_iface ofi_get_hmem_iface(const void *addr, uint64_t *device,
				      uint64_t *flags)
{
	uint64_t dev = 0, fl = 0;
	int iface;

	for (iface = FI_HMEM_SYSTEM + 1; addr && iface < OFI_HMEM_MAX;
	     iface++) {
		if (!ofi_hmem_ops[iface].initialized ||
		    !ofi_hmem_ops[iface].is_addr_valid)
			continue;
		if (ofi_hmem_ops[iface].is_addr_valid(addr, &dev, &fl))
			goto found;
	}
	iface = FI_HMEM_SYSTEM;
	dev = 0;
	fl = 0;
found:
	if (device)
		*device = dev;
	if (flags)
		*flags = fl;
	return (enum fi_hmem_iface)iface;
}

/*
 * The table of an interface that can serve a call, or NULL: everything
 * below answers -FI_ENOSYS for a bad, uninitialised or incapable iface.
 */
static const struct ofi_hmem_ops *ofi_hmem_get_ops(enum fi_hmem_iface iface)
{
	if (!ofi_hmem_valid_iface(iface) || !ofi_hmem_ops[iface].initialized)
		return NULL;
	return &ofi_hmem_ops[iface];
}

#define OFI_HMEM_CALL(iface, fn, ...)                                          \
	({                                                                     \
		const struct ofi_hmem_ops *ops_ = ofi_hmem_get_ops(iface);     \
		(ops_ && ops_->fn) ? ops_->fn(__VA_ARGS__) : -FI_ENOSYS;       \
	})

int ofi_copy_to_hmem(enum fi_hmem_iface iface, uint64_t device, void *dest,
		     const void *src, size_t size)
{
	if (iface == FI_HMEM_SYSTEM) {
		memcpy(dest, src, size);
		return 0;
	}
	return OFI_HMEM_CALL(iface, copy_to_hmem, device, dest, src, size);
}

int ofi_copy_from_hmem(enum fi_hmem_iface iface, uint64_t device, void *dest,
		       const void *src, size_t size)
{
	if (iface == FI_HMEM_SYSTEM) {
		memcpy(dest, src, size);
		return 0;
	}
	return OFI_HMEM_CALL(iface, copy_from_hmem, device, dest, src, size);
}

int ofi_copy_hmem_dev_to_dev(enum fi_hmem_iface iface, uint64_t device,
			     void *dest, const void *src, size_t size)
{
	return OFI_HMEM_CALL(iface, copy_dev_to_dev, device, dest, src, size);
}

int ofi_hmem_get_base_addr(enum fi_hmem_iface iface, const void *addr,
			   size_t len, void **base, size_t *size)
{
	return OFI_HMEM_CALL(iface, get_base_addr, addr, len, base, size);
}

int ofi_hmem_get_handle(enum fi_hmem_iface iface, void *base, size_t size,
			void *handle)
{
	return OFI_HMEM_CALL(iface, get_handle, base, size, handle);
}

int ofi_hmem_open_handle(enum fi_hmem_iface iface, void *handle, size_t size,
			 uint64_t device, void **mapped)
{
	return OFI_HMEM_CALL(iface, open_handle, handle, size, device, mapped);
}

int ofi_hmem_close_handle(enum fi_hmem_iface iface, void *mapped)
{
	return OFI_HMEM_CALL(iface, close_handle, mapped);
}

int ofi_hmem_get_handle_size(enum fi_hmem_iface iface, size_t *size)
{
	return OFI_HMEM_CALL(iface, get_handle_size, size);
}

int ofi_hmem_alloc(enum fi_hmem_iface iface, uint64_t device, void **ptr,
		   size_t size)
{
	return OFI_HMEM_CALL(iface, alloc, device, ptr, size);
}

int ofi_hmem_free(enum fi_hmem_iface iface, void *ptr)
{
	return OFI_HMEM_CALL(iface, free, ptr);
}

/*
 * Host memory is pinned with every interface that can pin it, so a
 * bounce buffer serves whichever device the data comes from. Unwinds on
 * failure.
 */
int ofi_hmem_host_register(void *addr, size_t size)
{
	int iface, ret;

	for (iface = FI_HMEM_SYSTEM + 1; iface < OFI_HMEM_MAX; iface++) {
		if (!ofi_hmem_ops[iface].initialized ||
		    !ofi_hmem_ops[iface].host_register)
			continue;
		ret = ofi_hmem_ops[iface].host_register(addr, size);
		if (ret)
			goto err;
	}
	return 0;
err:
	FI_WARN(&ofi_core_prov, FI_LOG_CORE,
		"hmem %s: cannot register host memory %p: %s\n",
		ofi_hmem_iface_name(iface), addr, fi_strerror(-ret));
	while (--iface > FI_HMEM_SYSTEM)
		if (ofi_hmem_ops[iface].initialized &&
		    ofi_hmem_ops[iface].host_unregister)
			ofi_hmem_ops[iface].host_unregister(addr);
	return ret;
}

int ofi_hmem_host_unregister(void *addr)
{
	int iface, ret, first = 0;

	for (iface = FI_HMEM_SYSTEM + 1; iface < OFI_HMEM_MAX; iface++) {
		if (!ofi_hmem_ops[iface].initialized ||
		    !ofi_hmem_ops[iface].host_unregister)
			continue;
		ret = ofi_hmem_ops[iface].host_unregister(addr);
		if (ret && !first)
			first = ret;
	}
	return first;
}
