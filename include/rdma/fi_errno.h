/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fi_errno.h - libfabric error numbers: the errno values the API passes
 * through unchanged, the fabric-specific codes from FI_ERRNO_OFFSET up, and
 * fi_strerror().  Callers see every error as a negative value of these.
 */
#ifndef FI_ERRNO_H
#define FI_ERRNO_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_SUCCESS 0

/*
 * Only the errno values that a libfabric call may return get an FI_ name;
 * keeping them equal to the host's errno lets providers return -errno from
 * system calls without translation.
 */
#define FI_EPERM	 EPERM
#define FI_ENOENT	 ENOENT
#define FI_EINTR	 EINTR
#define FI_EIO		 EIO
#define FI_E2BIG	 E2BIG
#define FI_EBADF	 EBADF
#define FI_EAGAIN	 EAGAIN
#define FI_ENOMEM	 ENOMEM
#define FI_EACCES	 EACCES
#define FI_EFAULT	 EFAULT
#define FI_EBUSY	 EBUSY
#define FI_ENODEV	 ENODEV
#define FI_EINVAL	 EINVAL
#define FI_EMFILE	 EMFILE
#define FI_ENOSPC	 ENOSPC
#define FI_ENOSYS	 ENOSYS
#define FI_EWOULDBLOCK	 EWOULDBLOCK
#define FI_ENOMSG	 ENOMSG
#define FI_ENODATA	 ENODATA
#define FI_EOVERFLOW	 EOVERFLOW
#define FI_EMSGSIZE	 EMSGSIZE
#define FI_ENOPROTOOPT	 ENOPROTOOPT
#define FI_EOPNOTSUPP	 EOPNOTSUPP
#define FI_EADDRINUSE	 EADDRINUSE
#define FI_EADDRNOTAVAIL EADDRNOTAVAIL
#define FI_ENETDOWN	 ENETDOWN
#define FI_ENETUNREACH	 ENETUNREACH
#define FI_ECONNABORTED	 ECONNABORTED
#define FI_ECONNRESET	 ECONNRESET
#define FI_ENOBUFS	 ENOBUFS
#define FI_EISCONN	 EISCONN
#define FI_ENOTCONN	 ENOTCONN
#define FI_ESHUTDOWN	 ESHUTDOWN
#define FI_ETIMEDOUT	 ETIMEDOUT
#define FI_ECONNREFUSED	 ECONNREFUSED
#define FI_EHOSTDOWN	 EHOSTDOWN
#define FI_EHOSTUNREACH	 EHOSTUNREACH
#define FI_EALREADY	 EALREADY
#define FI_EINPROGRESS	 EINPROGRESS
#define FI_EREMOTEIO	 EREMOTEIO
#define FI_ECANCELED	 ECANCELED
#define FI_EKEYREJECTED	 EKEYREJECTED

/* Fabric-specific codes start above any errno value. */
#define FI_ERRNO_OFFSET 256

enum {
	FI_EOTHER = FI_ERRNO_OFFSET,
	FI_ETOOSMALL,	/* 257 */
	FI_EOPBADSTATE, /* 258 */
	FI_EAVAIL,	/* 259 */
	FI_EBADFLAGS,	/* 260 */
	FI_ENOEQ,	/* 261 */
	FI_EDOMAIN,	/* 262 */
	FI_ENOCQ,	/* 263 */
	FI_ECRC,	/* 264 */
	FI_ETRUNC,	/* 265 */
	FI_ENOKEY,	/* 266 */
	FI_ENOAV,	/* 267 */
	FI_EOVERRUN,	/* 268 */
	FI_ENORX,	/* 269 */
	FI_ERRNO_MAX
};

const char *fi_strerror(int errnum);

#ifdef __cplusplus
}
#endif

#endif /* FI_ERRNO_H */
