/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * test_iov.h - a plain iov copy, as a copy override would do it, for the
 * tests that count overrides (shm_hmem, shm_commit, tcp_hmem).
 */
#ifndef TEST_IOV_H
#define TEST_IOV_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Copies between @buf and @iov from @off with @copy, as an override would. */
static inline ssize_t
shm_test_iov_copy_with(const struct iovec *iov, size_t cnt, uint64_t off,
		       void *buf, size_t size, bool to_iov,
		       void (*copy)(void *dst, const void *src, size_t n))
{
	size_t i, n, done = 0;

	for (i = 0; i < cnt && done < size; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		n = iov[i].iov_len - off;
		if (n > size - done)
			n = size - done;
		if (to_iov)
			copy((char *)iov[i].iov_base + off, (char *)buf + done,
			     n);
		else
			copy((char *)buf + done, (char *)iov[i].iov_base + off,
			     n);
		done += n;
		off = 0;
	}
	return (ssize_t)done;
}

static inline void shm_test_memcpy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

/* Copies between @buf and @iov from @off, as an override would. */
static inline ssize_t shm_test_iov_copy(const struct iovec *iov, size_t cnt,
					uint64_t off, void *buf, size_t size,
					bool to_iov)
{
	return shm_test_iov_copy_with(iov, cnt, off, buf, size, to_iov,
				      shm_test_memcpy);
}

#endif /* TEST_IOV_H */
