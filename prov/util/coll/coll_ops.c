/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_ops.c - the reductions: user-defined ops (fi_set_op
 * FI_OVERRIDE_USER_OP, process-wide), which op and datatype pairs a
 * collective takes, and folding a chunk into an accumulator.
 */
#include "coll_priv.h"

/* ------------------------------------------------------------------ */
/* User-defined reductions: process-wide, named by FI_USER_OP_BASE + i. */

static pthread_mutex_t coll_uop_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fi_user_op coll_uops[OFI_COLL_USER_OPS];

int ofi_coll_user_op_set(union fi_override_op *fn, uint64_t flags)
{
	struct fi_user_op *u;
	size_t i;
	int ret = -FI_ENOSPC;

	if (!fn || !fn->user_op || flags)
		return -FI_EINVAL;
	u = fn->user_op;
	pthread_mutex_lock(&coll_uop_lock);
	if (!u->fn) { /* unregister u->op */
		i = (size_t)u->op - FI_USER_OP_BASE;
		ret = -FI_EINVAL;
		if ((size_t)u->op >= FI_USER_OP_BASE && i < OFI_COLL_USER_OPS &&
		    coll_uops[i].fn) {
			memset(&coll_uops[i], 0, sizeof(coll_uops[i]));
			ret = 0;
		}
		goto out;
	}
	for (i = 0; i < OFI_COLL_USER_OPS; i++) {
		if (coll_uops[i].fn)
			continue;
		coll_uops[i] = *u;
		u->op = (enum fi_op)(FI_USER_OP_BASE + i);
		coll_uops[i].op = u->op;
		ret = 0;
		break;
	}
out:
	pthread_mutex_unlock(&coll_uop_lock);
	return ret;
}

const struct fi_user_op *ofi_coll_user_op(enum fi_op op)
{
	size_t i = (size_t)op - FI_USER_OP_BASE;

	if ((size_t)op < FI_USER_OP_BASE || i >= OFI_COLL_USER_OPS ||
	    !coll_uops[i].fn)
		return NULL;
	return &coll_uops[i];
}

int coll_reduce(struct coll_op *op, bool fold, void *acc, void *in, size_t len)
{
	size_t cnt = op->dtsize ? len / op->dtsize : 0;
	int ret;

	if (op->uop.fn) {
		if (fold) { /* acc = acc op in: the op writes its second arg */
			op->uop.fn(acc, in, cnt, op->dt, op->uop.user_ctx);
			memcpy(acc, in, len);
		} else {
			op->uop.fn(in, acc, cnt, op->dt, op->uop.user_ctx);
		}
		return 0;
	}
	ofi_atomic_lock();
	ret = ofi_atomic_apply(op->op, op->dt, acc, in, NULL, NULL, cnt);
	ofi_atomic_unlock();
	return ret;
}

bool coll_op_supported(enum fi_op op, enum fi_datatype dt,
		       struct fi_user_op *uop)
{
	const struct fi_user_op *u = ofi_coll_user_op(op);

	memset(uop, 0, sizeof(*uop));
	if (u) {
		*uop = *u;
		return ofi_datatype_size(dt) != 0;
	}
	if (op >= FI_ATOMIC_READ)
		return false;
	return !ofi_atomic_valid(OFI_ATOMIC_WRITE, dt, op, SIZE_MAX, NULL,
				 NULL);
}
