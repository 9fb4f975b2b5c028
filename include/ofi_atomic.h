/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_atomic.h - the provider-neutral atomic executor (prov/util/
 * util_atomic.c): which operation applies to which datatype for each of
 * the three atomic families of fi_atomic(3), fi_query_atomic's flag
 * rules, and the code that applies an operation to local memory.
 *
 * Providers keep only their transport: they validate what arrives with
 * ofi_atomic_valid() and execute it with ofi_atomic_exec() (or, for
 * memory they must stage, ofi_atomic_apply() between ofi_atomic_lock()
 * and ofi_atomic_unlock()). All atomics of a process run under one lock,
 * so atomics arriving at any endpoint of it are atomic with respect to
 * each other, whichever process issued them.
 */
#ifndef OFI_ATOMIC_H
#define OFI_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_atomic.h>

/* The three families of fi_atomic(3), each with its own valid call. */
enum ofi_atomic_kind {
	OFI_ATOMIC_WRITE,   /* fi_atomic: no result, no compare */
	OFI_ATOMIC_FETCH,   /* fi_fetch_atomic: old value returned */
	OFI_ATOMIC_COMPARE, /* fi_compare_atomic: compare operand too */
	OFI_ATOMIC_KINDS,
};

/* Datatypes the executor knows: FI_INT8 .. FI_UINT128. */
#define OFI_DATATYPE_CNT (FI_UINT128 + 1)

/* Bytes of one element of @dt; 0 for a value that names no datatype. */
size_t ofi_datatype_size(enum fi_datatype dt);

/* Whether @op is one of the compare family (FI_CSWAP .. FI_MSWAP). */
bool ofi_atomic_is_compare(enum fi_op op);

/* The kind fi_query_atomic's @flags select, or a negative fi_errno. */
int ofi_atomic_kind_of(uint64_t flags);

/*
 * 0 when @op on @dt belongs to the family @kind, else -FI_EOPNOTSUPP.
 * @max_bytes is what one operation of the provider carries: *max_count
 * becomes the elements that fit (either output may be NULL).
 */
int ofi_atomic_valid(enum ofi_atomic_kind kind, enum fi_datatype dt,
		     enum fi_op op, size_t max_bytes, size_t *dt_size,
		     size_t *max_count);

/*
 * fi_query_atomic(3): flags 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC pick
 * the family (not both: -FI_EINVAL), FI_TAGGED asks for atomics to
 * tagged receive buffers, which the executor does not target
 * (-FI_EOPNOTSUPP); other bits and a NULL @attr are -FI_EINVAL.
 * @max_bytes[kind] as for ofi_atomic_valid().
 */
int ofi_query_atomic(enum fi_datatype dt, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags,
		     const size_t max_bytes[OFI_ATOMIC_KINDS]);

/* The process-wide lock every atomic runs under. */
void ofi_atomic_lock(void);
void ofi_atomic_unlock(void);

/* Whether @dst is aligned for elements of @dt (a valid datatype). */
bool ofi_atomic_aligned(enum fi_datatype dt, const void *dst);

/*
 * Applies @op to @count elements at @dst; the caller holds the lock and
 * validated @op and @dt. @src and @cmp are read and @res (may be NULL)
 * written element by element at any alignment; @dst must be aligned for
 * @dt: -FI_EINVAL and nothing touched otherwise.
 */
int ofi_atomic_apply(enum fi_op op, enum fi_datatype dt, void *dst,
		     const void *src, const void *cmp, void *res, size_t count);

/*
 * Validates @op/@dt for @kind (-FI_EOPNOTSUPP) and @dst's alignment
 * (-FI_EINVAL), then applies the operation under the lock. @src is
 * unused by FI_ATOMIC_READ, @cmp only read by the compare family, @res
 * written by the fetch and compare families (ignored for
 * OFI_ATOMIC_WRITE).
 */
int ofi_atomic_exec(enum ofi_atomic_kind kind, enum fi_op op,
		    enum fi_datatype dt, void *dst, const void *src,
		    const void *cmp, void *res, size_t count);

#endif /* OFI_ATOMIC_H */
