/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_override.c - the rules of a domain's host<->device copy override
 * slots (fi_set_op(3)): which calls may change them and when. The copies
 * that consult the slots live in src/hmem/hmem_iov.c. Kept in prov/util,
 * free of any hmem dependency, so loadable providers built on util link it.
 */
#include <stddef.h>

#include "ofi_coll.h"

int ofi_hmem_override_set(struct ofi_hmem_override *ovr, bool locked,
			  enum fi_set_op op, union fi_override_op *fn,
			  uint64_t flags)
{
	if (!ovr)
		return -FI_EINVAL;
	if (op == FI_OVERRIDE_USER_OP) /* any time: MPI_Op_create */
		return ofi_coll_user_op_set(fn, flags);
	if (flags)
		return -FI_EINVAL;
	if (op != FI_OVERRIDE_COPY_FROM_HMEM_IOV &&
	    op != FI_OVERRIDE_COPY_TO_HMEM_IOV)
		return -FI_ENOSYS;
	if (locked)
		return -FI_EBUSY;

	if (op == FI_OVERRIDE_COPY_FROM_HMEM_IOV)
		ovr->copy_from_hmem_iov = fn ? fn->copy_from_hmem_iov : NULL;
	else
		ovr->copy_to_hmem_iov = fn ? fn->copy_to_hmem_iov : NULL;
	return 0;
}

/*
 * A table whose size is too small to hold a slot leaves that slot at its
 * default, as such a caller cannot have meant to set it; size 0 (callers
 * that never fill it in, as upstream does not check it) means the whole
 * table. A NULL table restores both.
 */
#define OFI_HMEM_OPS_END(field)                                                \
	(offsetof(struct fi_hmem_override_ops, field) +                        \
	 sizeof(((struct fi_hmem_override_ops *)0)->field))

static bool ofi_hmem_ops_has(const struct fi_hmem_override_ops *ops, size_t end)
{
	return !ops->size || ops->size >= end;
}

int ofi_hmem_override_set_ops(struct ofi_hmem_override *ovr, bool locked,
			      const struct fi_hmem_override_ops *ops)
{
	union fi_override_op from = {0}, to = {0};
	int ret;

	if (!ovr)
		return -FI_EINVAL;
	if (locked)
		return -FI_EBUSY;
	if (ops) {
		if (ofi_hmem_ops_has(ops, OFI_HMEM_OPS_END(copy_from_hmem_iov)))
			from.copy_from_hmem_iov = ops->copy_from_hmem_iov;
		if (ofi_hmem_ops_has(ops, OFI_HMEM_OPS_END(copy_to_hmem_iov)))
			to.copy_to_hmem_iov = ops->copy_to_hmem_iov;
	}
	ret = ofi_hmem_override_set(ovr, locked, FI_OVERRIDE_COPY_FROM_HMEM_IOV,
				    &from, 0);
	if (ret)
		return ret;
	return ofi_hmem_override_set(ovr, locked, FI_OVERRIDE_COPY_TO_HMEM_IOV,
				     &to, 0);
}
