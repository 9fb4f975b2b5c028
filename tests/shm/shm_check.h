/*
 * shm_check.h - what the shm test programs share: the failure counter and
 * its CHECK (record and leave the test function) and DIE_IF (setup cannot
 * go on) macros, and a plain iov copy for counting copy overrides.
 */
#ifndef SHM_CHECK_H
#define SHM_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			failures++;                                            \
			return;                                                \
		}                                                              \
	} while (0)

#define DIE_IF(cond, what)                                                     \
	do {                                                                   \
		if (cond) {                                                    \
			fprintf(stderr, "setup: %s failed\n", what);           \
			exit(2);                                               \
		}                                                              \
	} while (0)

/* Copies between @buf and @iov from @off, as an override would. */
static inline ssize_t shm_test_iov_copy(const struct iovec *iov, size_t cnt,
					uint64_t off, void *buf, size_t size,
					bool to_iov)
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
			memcpy((char *)iov[i].iov_base + off,
			       (char *)buf + done, n);
		else
			memcpy((char *)buf + done,
			       (char *)iov[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return (ssize_t)done;
}

#endif /* SHM_CHECK_H */
