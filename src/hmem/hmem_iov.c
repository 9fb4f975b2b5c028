/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_iov.c - copies between host buffers and iovs of device memory, the
 * one path every provider's host<->device copy takes, and the rules of
 * the per-domain overrides that may replace it (fi_set_op and the
 * upstream fi_set_ops(FI_SET_OPS_HMEM_OVERRIDE) form).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "ofi.h"
#include "ofi_hmem.h"

size_t ofi_hmem_iov_span(const struct iovec *iov, size_t iov_count,
			 uint64_t iov_offset, size_t size)
{
	size_t i, total = 0;

	for (i = 0; i < iov_count && total < size; i++) {
		if (iov_offset >= iov[i].iov_len) {
			iov_offset -= iov[i].iov_len;
			continue;
		}
		total += iov[i].iov_len - iov_offset;
		iov_offset = 0;
	}
	return OFI_MIN(total, size);
}

/* Segment copy with the iov side described by @dir. */
enum ofi_hmem_dir {
	OFI_HMEM_FROM_IOV,
	OFI_HMEM_TO_IOV,
	OFI_HMEM_DEV_FROM_IOV,
	OFI_HMEM_DEV_TO_IOV,
};

static int ofi_hmem_copy_seg(enum ofi_hmem_dir dir, enum fi_hmem_iface iface,
			     uint64_t device, void *iov_buf, void *buf,
			     size_t len)
{
	/* Host memory is the common case: no table lookup for it. */
	if (iface == FI_HMEM_SYSTEM &&
	    (dir == OFI_HMEM_FROM_IOV || dir == OFI_HMEM_TO_IOV)) {
		if (dir == OFI_HMEM_FROM_IOV)
			memcpy(buf, iov_buf, len);
		else
			memcpy(iov_buf, buf, len);
		return 0;
	}
	switch (dir) {
	case OFI_HMEM_FROM_IOV:
		return ofi_copy_from_hmem(iface, device, buf, iov_buf, len);
	case OFI_HMEM_TO_IOV:
		return ofi_copy_to_hmem(iface, device, iov_buf, buf, len);
	case OFI_HMEM_DEV_FROM_IOV:
		return ofi_copy_hmem_dev_to_dev(iface, device, buf, iov_buf,
						len);
	case OFI_HMEM_DEV_TO_IOV:
		return ofi_copy_hmem_dev_to_dev(iface, device, iov_buf, buf,
						len);
	}
	return -FI_EINVAL;
}

static ssize_t ofi_hmem_iov_walk(enum ofi_hmem_dir dir,
				 enum fi_hmem_iface iface, uint64_t device,
				 const struct iovec *iov, size_t iov_count,
				 uint64_t iov_offset, void *buf, size_t size)
{
	size_t i, len, done = 0;
	int ret;

	for (i = 0; i < iov_count && done < size; i++) {
		if (iov_offset >= iov[i].iov_len) {
			iov_offset -= iov[i].iov_len;
			continue;
		}
		len = OFI_MIN(iov[i].iov_len - iov_offset, size - done);
		ret = ofi_hmem_copy_seg(dir, iface, device,
					(char *)iov[i].iov_base + iov_offset,
					(char *)buf + done, len);
		if (ret)
			return ret;
		done += len;
		iov_offset = 0;
	}
	return (ssize_t)done;
}

/* What a copy that did not move exactly @want bytes answers. */
static ssize_t ofi_hmem_override_result(ssize_t ret, size_t want)
{
	if (ret < 0)
		return ret;
	return (size_t)ret == want ? ret : -FI_EIO;
}

ssize_t ofi_copy_from_hmem_iov(const struct ofi_hmem_override *ovr, void *dest,
			       size_t size, enum fi_hmem_iface iface,
			       uint64_t device, const struct iovec *iov,
			       size_t iov_count, uint64_t iov_offset)
{
	ssize_t ret;

	if (ovr && ovr->copy_from_hmem_iov) {
		ret = ovr->copy_from_hmem_iov(dest, size, iface, device, iov,
					      iov_count, iov_offset);
		return ofi_hmem_override_result(
			ret,
			ofi_hmem_iov_span(iov, iov_count, iov_offset, size));
	}
	return ofi_hmem_iov_walk(OFI_HMEM_FROM_IOV, iface, device, iov,
				 iov_count, iov_offset, dest, size);
}

ssize_t ofi_copy_to_hmem_iov(const struct ofi_hmem_override *ovr,
			     enum fi_hmem_iface iface, uint64_t device,
			     const struct iovec *iov, size_t iov_count,
			     uint64_t iov_offset, const void *src, size_t size)
{
	ssize_t ret;

	if (ovr && ovr->copy_to_hmem_iov) {
		ret = ovr->copy_to_hmem_iov(iface, device, iov, iov_count,
					    iov_offset, src, size);
		return ofi_hmem_override_result(
			ret,
			ofi_hmem_iov_span(iov, iov_count, iov_offset, size));
	}
	return ofi_hmem_iov_walk(OFI_HMEM_TO_IOV, iface, device, iov, iov_count,
				 iov_offset, (void *)src, size);
}

ssize_t ofi_copy_hmem_iov_dev_to_dev(enum fi_hmem_iface iface, uint64_t device,
				     const struct iovec *iov, size_t iov_count,
				     uint64_t iov_offset, void *dev_buf,
				     size_t size, bool to_iov)
{
	return ofi_hmem_iov_walk(
		to_iov ? OFI_HMEM_DEV_TO_IOV : OFI_HMEM_DEV_FROM_IOV, iface,
		device, iov, iov_count, iov_offset, dev_buf, size);
}
