/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_rma_ops.c - shm's fi_ops_rma: the read and write funnels, which
 * every plain RMA call reaches through util's (ofi_plain.h), and
 * fi_commit. What they submit is shm_rma.c's: the protocols, both ends.
 */
#include "ofi_plain.h"
#include "shm.h"

/* The RMA funnels, and through them every plain RMA call (ofi_plain.h). */
static ssize_t shm_rma_do(struct fid_ep *ep_fid, uint8_t op,
			  const struct fi_msg_rma *msg, uint64_t data,
			  uint64_t flags)
{
	struct shm_rma_args a = {
		.op = op,
		.iov = msg->msg_iov,
		.desc = msg->desc,
		.count = msg->iov_count,
		.rma = msg->rma_iov,
		.rma_count = msg->rma_iov_count,
		.addr = msg->addr,
		.data = data,
		.context = msg->context,
		.op_flags = flags & ~OFI_INJECT_NOCOMP,
		.nocomp = flags & OFI_INJECT_NOCOMP,
	};

	return shm_rma_submit(shm_ep_of(ep_fid), &a);
}

static ssize_t shm_rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_rma_do(ep, SHM_OP_READ, msg, 0,
			  flags & ~(uint64_t)FI_REMOTE_CQ_DATA);
}

static ssize_t shm_rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
				uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_rma_do(ep, SHM_OP_WRITE, msg, msg->data, flags);
}

#if OFI_HAVE_EXT_SLOTS
/* fi_commit(3): ordered after earlier writes to @dest_addr (shm_rma_fenced) */
static ssize_t shm_rma_commit_op(struct fid_ep *ep_fid,
				 const struct fi_rma_iov *iov, size_t count,
				 fi_addr_t dest_addr, uint64_t flags,
				 void *context)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);
	struct shm_rma_args a = {
		.op = SHM_OP_COMMIT,
		.rma = iov,
		.rma_count = count,
		.addr = dest_addr,
		.context = context,
		.op_flags = flags,
	};

	if (!count || count > OFI_COMMIT_IOV_MAX || !iov)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_COMPLETION)
		return -FI_EBADFLAGS;
	if (!(ep->util.caps & FI_RMA_PMEM))
		return -FI_EOPNOTSUPP;
	return shm_rma_submit(ep, &a);
}
#endif

const struct fi_ops_rma shm_rma_ops = {
	OFI_PLAIN_RMA_OPS(shm_rma_readmsg, shm_rma_writemsg),
#if OFI_HAVE_EXT_SLOTS
	.commit = shm_rma_commit_op,
#endif
};
