/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_system.c - the FI_HMEM_SYSTEM interface: ordinary host memory.
 * Copies are memcpy; there is no device, no IPC handle and nothing to pin.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "ofi.h"
#include "ofi_hmem.h"

static int ofi_system_init(void)
{
	return 0;
}

static int ofi_system_cleanup(void)
{
	return 0;
}

static int ofi_system_copy(uint64_t device, void *dest, const void *src,
			   size_t size)
{
	memcpy(dest, src, size);
	return 0;
}

static bool ofi_system_is_addr_valid(const void *addr, uint64_t *device,
				     uint64_t *flags)
{
	if (device)
		*device = 0;
	if (flags)
		*flags = 0;
	return true;
}

/* Without an allocator to ask, the range given is the whole region. */
static int ofi_system_get_base_addr(const void *addr, size_t len, void **base,
				    size_t *size)
{
	*base = (void *)addr;
	*size = len;
	return 0;
}

static int ofi_system_alloc(uint64_t device, void **ptr, size_t size)
{
	*ptr = malloc(size ? size : 1);
	return *ptr ? 0 : -FI_ENOMEM;
}

static int ofi_system_free(void *ptr)
{
	free(ptr);
	return 0;
}

const struct ofi_hmem_ops ofi_hmem_system_ops = {
	.name = "system",
	.init = ofi_system_init,
	.cleanup = ofi_system_cleanup,
	.copy_to_hmem = ofi_system_copy,
	.copy_from_hmem = ofi_system_copy,
	.copy_dev_to_dev = ofi_system_copy,
	.is_addr_valid = ofi_system_is_addr_valid,
	.get_base_addr = ofi_system_get_base_addr,
	.alloc = ofi_system_alloc,
	.free = ofi_system_free,
};
