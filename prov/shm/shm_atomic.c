/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_atomic.c - atomics for the shm provider: its transport only. The
 * fi_ops_atomic entry points build commands that travel over shm_rma.c's
 * command/ack path (operands in one inject buffer); the target decodes
 * them and runs prov/util's executor (ofi_atomic.h) under its process-wide
 * lock, so atomics arriving at any endpoint of the process are atomic with
 * respect to each other. Device memory at the target is staged through
 * host memory with the domain's overrides, under the same lock.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_atomic.h"
#include "ofi_plain.h"
#include "shm.h"

/* What one command carries: operands and compare values share a buffer. */
static const size_t shm_atomic_room[OFI_ATOMIC_KINDS] = {
	[OFI_ATOMIC_WRITE] = SHM_INJECT_SIZE,
	[OFI_ATOMIC_FETCH] = SHM_INJECT_SIZE,
	[OFI_ATOMIC_COMPARE] = SHM_INJECT_SIZE / 2,
};

static int shm_atomic_kind(uint8_t shm_op)
{
	switch (shm_op) {
	case SHM_OP_ATOMIC:
		return OFI_ATOMIC_WRITE;
	case SHM_OP_FETCH_ATOMIC:
		return OFI_ATOMIC_FETCH;
	case SHM_OP_COMPARE_ATOMIC:
		return OFI_ATOMIC_COMPARE;
	default:
		return -FI_EOPNOTSUPP;
	}
}

int shm_atomic_check(uint8_t shm_op, enum fi_datatype dt, enum fi_op op,
		     size_t *dt_size, size_t *max_count)
{
	int kind = shm_atomic_kind(shm_op);

	if (kind < 0)
		return kind;
	return ofi_atomic_valid((enum ofi_atomic_kind)kind, dt, op,
				shm_atomic_room[kind], dt_size, max_count);
}

/* ------------------------------------------------------------------ */
/* Target side.                                                         */

static int shm_atomic_staged(struct shm_ep *ep, enum fi_op op,
			     enum fi_datatype dt, const struct iovec *liov,
			     struct util_mr *mr, const uint8_t *src,
			     const uint8_t *cmp, uint8_t *res, size_t cnt)
{
	_Alignas(16) uint8_t tmp[SHM_INJECT_SIZE];
	size_t len = liov->iov_len;
	ssize_t ret;

	if (len > sizeof(tmp))
		return -FI_EINVAL;
	ret = shm_copy_from(ep, tmp, len, mr->iface, mr->device, liov, 1, 0);
	if (ret < 0)
		return (int)ret;
	ret = ofi_atomic_apply(op, dt, tmp, src, cmp, res, cnt);
	if (ret)
		return (int)ret;
	ret = shm_copy_to(ep, mr->iface, mr->device, liov, 1, 0, tmp, len);
	return ret < 0 ? (int)ret : 0;
}

/*
 * Every target is checked (length and alignment) before the first one
 * is touched, so a bad command changes nothing.
 */
static int shm_atomic_targets_ok(const struct shm_cmd *cmd,
				 const struct iovec *liov, size_t dts)
{
	enum fi_datatype dt = cmd->u.rma.datatype;
	size_t i;

	for (i = 0; i < cmd->u.rma.rma_count; i++) {
		if (liov[i].iov_len % dts)
			return -FI_EINVAL;
		if (!ofi_atomic_aligned(dt, liov[i].iov_base))
			return -FI_EINVAL;
	}
	return 0;
}

int shm_atomic_exec(struct shm_ep *ep, const struct shm_cmd *cmd,
		    const struct iovec *liov, struct util_mr **mr,
		    const uint8_t *src, const uint8_t *cmp, uint8_t *res)
{
	enum fi_datatype dt = cmd->u.rma.datatype;
	enum fi_op op = cmd->u.rma.atomic_op;
	size_t dts, i, len;
	int ret;

	if (shm_atomic_check(cmd->op, dt, op, &dts, NULL))
		return -FI_EOPNOTSUPP;
	ret = shm_atomic_targets_ok(cmd, liov, dts);
	if (ret)
		return ret;
	ofi_atomic_lock();
	for (i = 0; i < cmd->u.rma.rma_count && !ret; i++) {
		len = liov[i].iov_len;
		if (mr[i]->iface == FI_HMEM_SYSTEM)
			ret = ofi_atomic_apply(op, dt, liov[i].iov_base, src,
					       cmp, res, len / dts);
		else
			ret = shm_atomic_staged(ep, op, dt, &liov[i], mr[i],
						src, cmp, res, len / dts);
		src += len;
		cmp = cmp ? cmp + len : NULL;
		res = res ? res + len : NULL;
	}
	ofi_atomic_unlock();
	return ret;
}

/* ------------------------------------------------------------------ */
/* Initiator.                                                           */

/* fi_ioc (counts of elements) -> iovec (bytes); the total in elements. */
static int shm_ioc_iov(const struct fi_ioc *ioc, size_t count, size_t dts,
		       struct iovec *iov, size_t *total)
{
	size_t i;

	*total = 0;
	if (count > SHM_IOV_LIMIT || (count && !ioc))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (ioc[i].count > SHM_INJECT_SIZE)
			return -FI_EINVAL;
		iov[i].iov_base = ioc[i].addr;
		iov[i].iov_len = ioc[i].count * dts;
		*total += ioc[i].count;
	}
	return 0;
}

static int shm_rma_ioc_iov(const struct fi_rma_ioc *ioc, size_t count,
			   size_t dts, struct fi_rma_iov *rma, size_t *total)
{
	size_t i;

	*total = 0;
	if (!count || count > SHM_IOV_LIMIT || !ioc)
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (ioc[i].count > SHM_INJECT_SIZE)
			return -FI_EINVAL;
		rma[i].addr = ioc[i].addr;
		rma[i].len = ioc[i].count * dts;
		rma[i].key = ioc[i].key;
		*total += ioc[i].count;
	}
	return 0;
}

struct shm_atomic_bufs {
	const struct fi_ioc *cmp;
	void **cmp_desc;
	size_t cmp_count;
	const struct fi_ioc *res;
	void **res_desc;
	size_t res_count;
};

static ssize_t shm_atomic_do(struct fid_ep *ep_fid, uint8_t op,
			     const struct fi_msg_atomic *msg,
			     const struct shm_atomic_bufs *b, uint64_t flags)
{
	struct iovec iov[SHM_IOV_LIMIT], cmp[SHM_IOV_LIMIT], res[SHM_IOV_LIMIT];
	struct fi_rma_iov rma[SHM_IOV_LIMIT];
	size_t dts, max, n_rma, n_src, n_cmp = 0, n_res = 0;
	struct shm_rma_args a;
	int ret;

	if (!msg)
		return -FI_EINVAL;
	ret = shm_atomic_check(op, msg->datatype, msg->op, &dts, &max);
	if (ret)
		return ret;
	ret = shm_rma_ioc_iov(msg->rma_iov, msg->rma_iov_count, dts, rma,
			      &n_rma);
	if (!ret)
		ret = shm_ioc_iov(msg->msg_iov, msg->iov_count, dts, iov,
				  &n_src);
	if (!ret && b)
		ret = shm_ioc_iov(b->cmp, b->cmp_count, dts, cmp, &n_cmp)
			      ?: shm_ioc_iov(b->res, b->res_count, dts, res,
					     &n_res);
	if (ret)
		return ret;
	if (!n_rma || n_rma > max)
		return -FI_EINVAL;
	if (msg->op != FI_ATOMIC_READ && n_src != n_rma)
		return -FI_EINVAL;
	if (op != SHM_OP_ATOMIC && n_res != n_rma)
		return -FI_EINVAL;
	if (op == SHM_OP_COMPARE_ATOMIC && n_cmp != n_rma)
		return -FI_EINVAL;
	memset(&a, 0, sizeof(a));
	a.op = op;
	a.iov = iov;
	a.desc = msg->desc;
	a.count = msg->op == FI_ATOMIC_READ ? 0 : msg->iov_count;
	a.rma = rma;
	a.rma_count = msg->rma_iov_count;
	a.addr = msg->addr;
	a.data = msg->data;
	a.context = msg->context;
	a.op_flags = flags & ~OFI_INJECT_NOCOMP;
	a.nocomp = flags & OFI_INJECT_NOCOMP;
	a.datatype = msg->datatype;
	a.atomic_op = msg->op;
	if (b) {
		a.cmp = cmp;
		a.cmp_desc = b->cmp_desc;
		a.cmp_count = op == SHM_OP_COMPARE_ATOMIC ? b->cmp_count : 0;
		a.res = res;
		a.res_desc = b->res_desc;
		a.res_count = b->res_count;
	}
	return shm_rma_submit(shm_ep_of(ep_fid), &a);
}

/*
 * The atomic funnels, and through them every plain atomic call
 * (ofi_plain.h).
 */
static ssize_t shm_atomic_writemsg(struct fid_ep *ep,
				   const struct fi_msg_atomic *msg,
				   uint64_t flags)
{
	return shm_atomic_do(ep, SHM_OP_ATOMIC, msg, NULL, flags);
}

static ssize_t shm_atomic_readwritemsg(struct fid_ep *ep,
				       const struct fi_msg_atomic *msg,
				       struct fi_ioc *resultv,
				       void **result_desc, size_t result_count,
				       uint64_t flags)
{
	struct shm_atomic_bufs b = {.res = resultv,
				    .res_desc = result_desc,
				    .res_count = result_count};

	return shm_atomic_do(ep, SHM_OP_FETCH_ATOMIC, msg, &b, flags);
}

static ssize_t
shm_atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			const struct fi_ioc *comparev, void **compare_desc,
			size_t compare_count, struct fi_ioc *resultv,
			void **result_desc, size_t result_count, uint64_t flags)
{
	struct shm_atomic_bufs b = {.cmp = comparev,
				    .cmp_desc = compare_desc,
				    .cmp_count = compare_count,
				    .res = resultv,
				    .res_desc = result_desc,
				    .res_count = result_count};

	return shm_atomic_do(ep, SHM_OP_COMPARE_ATOMIC, msg, &b, flags);
}

static int shm_valid(uint8_t shm_op, enum fi_datatype dt, enum fi_op op,
		     size_t *count)
{
	size_t max;
	int ret;

	if (!count)
		return -FI_EINVAL;
	ret = shm_atomic_check(shm_op, dt, op, NULL, &max);
	if (!ret)
		*count = max;
	return ret;
}

static int shm_atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype,
				 enum fi_op op, size_t *count)
{
	(void)ep;
	return shm_valid(SHM_OP_ATOMIC, datatype, op, count);
}

static int shm_atomic_readwritevalid(struct fid_ep *ep,
				     enum fi_datatype datatype, enum fi_op op,
				     size_t *count)
{
	(void)ep;
	return shm_valid(SHM_OP_FETCH_ATOMIC, datatype, op, count);
}

static int shm_atomic_compwritevalid(struct fid_ep *ep,
				     enum fi_datatype datatype, enum fi_op op,
				     size_t *count)
{
	(void)ep;
	return shm_valid(SHM_OP_COMPARE_ATOMIC, datatype, op, count);
}

int shm_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		     enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	(void)domain;
	return ofi_query_atomic(datatype, op, attr, flags, shm_atomic_room);
}

const struct fi_ops_atomic shm_atomic_ops = {
	OFI_PLAIN_ATOMIC_OPS(shm_atomic_writemsg, shm_atomic_readwritemsg,
			     shm_atomic_compwritemsg),
	.writevalid = shm_atomic_writevalid,
	.readwritevalid = shm_atomic_readwritevalid,
	.compwritevalid = shm_atomic_compwritevalid,
};
