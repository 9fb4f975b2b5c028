/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * errno.c - fi_strerror(): text for every fi_errno code. Codes below
 * FI_ERRNO_OFFSET are plain errno values and take the C library's text;
 * the libfabric-specific ones have their own table.
 */
#define _GNU_SOURCE /* strerrordesc_np */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <limits.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "ofi.h"

static const char *const ofi_errstr[] = {
	[FI_EOTHER - FI_ERRNO_OFFSET] = "Unspecified error",
	[FI_ETOOSMALL - FI_ERRNO_OFFSET] = "Buffer too small",
	[FI_EOPBADSTATE - FI_ERRNO_OFFSET] =
		"Operation not allowed in the current state",
	[FI_EAVAIL - FI_ERRNO_OFFSET] = "Error entry available",
	[FI_EBADFLAGS - FI_ERRNO_OFFSET] = "Unsupported flags",
	[FI_ENOEQ - FI_ERRNO_OFFSET] = "No event queue bound or available",
	[FI_EDOMAIN - FI_ERRNO_OFFSET] = "Invalid resource domain",
	[FI_ENOCQ - FI_ERRNO_OFFSET] = "No completion queue bound or available",
	[FI_ECRC - FI_ERRNO_OFFSET] = "CRC check failed",
	[FI_ETRUNC - FI_ERRNO_OFFSET] = "Data truncated",
	[FI_ENOKEY - FI_ERRNO_OFFSET] = "Required key missing",
	[FI_ENOAV - FI_ERRNO_OFFSET] = "No address vector bound or available",
	[FI_EOVERRUN - FI_ERRNO_OFFSET] = "Queue overrun",
	[FI_ENORX - FI_ERRNO_OFFSET] =
		"Receiver not ready: no posted receive buffers",
};

/*
 * strerror() formats unknown codes into a buffer the next call reuses;
 * the texts handed out here must stay valid.
 */
static const char *ofi_sys_errstr(int code)
{
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
	const char *s = strerrordesc_np(code);

	return s ? s : "Unknown error";
#else
	return strerror(code);
#endif
}

/*
 * Callers pass either sign (fi_* calls return negative codes, CQ error
 * entries carry positive ones). Codes past the table read as FI_EOTHER,
 * as 1.17 does.
 */
const char *fi_strerror(int errnum)
{
	int code;

	if (errnum == INT_MIN)
		return ofi_errstr[0];
	code = errnum < 0 ? -errnum : errnum;
	if (code < FI_ERRNO_OFFSET)
		return ofi_sys_errstr(code);
	if (code >= FI_ERRNO_MAX)
		return ofi_errstr[0];
	return ofi_errstr[code - FI_ERRNO_OFFSET];
}
