/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_pmem.c - the libpmem calls behind persistent registrations
 * (FI_RMA_PMEM): deciding at registration how a region is made durable
 * (pmem_persist on real persistent memory, pmem_msync on any other file
 * mapping) and doing it for a range when a commit names it. Built without
 * libpmem (HAVE_LIBPMEM 0), a persistent registration is refused rather
 * than accepted and never made durable.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "ofi_util.h"

#if HAVE_LIBPMEM
#include <libpmem.h>
#endif

/* Tests watch the ranges handed to libpmem; NULL in production. */
static ofi_pmem_hook_t pmem_test_hook;

void ofi_pmem_set_test_hook(ofi_pmem_hook_t hook)
{
	pmem_test_hook = hook;
}

#if HAVE_LIBPMEM

/*
 * One kind per registration: pmem_persist is only valid when every byte is
 * real persistent memory; pmem_msync is correct (if slower) for all of it
 * otherwise, DAX mappings included.
 */
int ofi_pmem_classify(const struct iovec *iov, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (iov[i].iov_len &&
		    !pmem_is_pmem(iov[i].iov_base, iov[i].iov_len))
			return OFI_PMEM_MSYNC;
	}
	return OFI_PMEM_FLUSH;
}

int ofi_pmem_persist(enum ofi_pmem_kind kind, const void *addr, size_t len)
{
	static size_t page;
	uintptr_t start, end;

	if (!len)
		return 0;
	switch (kind) {
	case OFI_PMEM_FLUSH:
		if (pmem_test_hook)
			pmem_test_hook(kind, addr, len);
		pmem_persist(addr, len);
		return 0;
	case OFI_PMEM_MSYNC:
		/* msync(2) wants a page-aligned start; cover whole pages. */
		if (!page)
			page = (size_t)sysconf(_SC_PAGESIZE);
		start = (uintptr_t)addr & ~(uintptr_t)(page - 1);
		end = ((uintptr_t)addr + len + page - 1) &
		      ~(uintptr_t)(page - 1);
		if (pmem_test_hook)
			pmem_test_hook(kind, (void *)start, end - start);
		if (pmem_msync((void *)start, end - start))
			return errno ? -errno : -FI_EIO;
		return 0;
	default:
		return -FI_EINVAL;
	}
}

#else /* !HAVE_LIBPMEM */

int ofi_pmem_classify(const struct iovec *iov, size_t count)
{
	return -FI_EBADFLAGS;
}

int ofi_pmem_persist(enum ofi_pmem_kind kind, const void *addr, size_t len)
{
	return -FI_EOPNOTSUPP;
}

#endif /* HAVE_LIBPMEM */
