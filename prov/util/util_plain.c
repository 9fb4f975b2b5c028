/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_plain.c - the plain data calls of every provider (ofi_plain.h):
 * each builds its struct fi_msg, fi_msg_tagged, fi_msg_rma or
 * fi_msg_atomic on the stack, with the op flags the endpoint's
 * defaults give it, and calls the *msg entry of the fid it was called on
 * (the provider's funnel, or util_trigger.c's wrapper of it). What a
 * provider does beyond that lives in its funnel, not here.
 */
#include "ofi_plain.h"
#include "ofi_util.h"

static struct util_ep *plain_ep(struct fid_ep *ep)
{
	return container_of(ep, struct util_ep, ep_fid);
}

/* A send or write of @len bytes: FI_INJECT holds within inject_size. */
static uint64_t plain_txf(struct fid_ep *ep, size_t len)
{
	struct util_ep *u = plain_ep(ep);

	return ofi_ep_tx_dflags(u, len, u->inject_size);
}

static uint64_t plain_txfv(struct fid_ep *ep, const struct iovec *iov,
			   size_t count)
{
	struct util_ep *u = plain_ep(ep);

	return ofi_ep_tx_dflagsv(u, iov, count, u->iov_limit, u->inject_size);
}

/* Reads and atomics never inject (their operands are copied or fetched). */
static uint64_t plain_txf_noinject(struct fid_ep *ep)
{
	return plain_ep(ep)->tx_op_flags & ~(uint64_t)FI_INJECT;
}

static uint64_t plain_rxf(struct fid_ep *ep)
{
	return plain_ep(ep)->rx_op_flags;
}

#define PLAIN_INJECT (FI_INJECT | OFI_INJECT_NOCOMP)

/* ------------------------------------------------------------------ */
/* fi_ops_msg                                                           */

static ssize_t plain_recvmsg(struct fid_ep *ep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t addr,
			     void *context)
{
	struct fi_msg m = {iov, desc, count, addr, context, 0};

	return ep->msg->recvmsg(ep, &m, plain_rxf(ep));
}

OFI_HOT ssize_t ofi_plain_recv(struct fid_ep *ep, void *buf, size_t len,
			       void *desc, fi_addr_t src_addr, void *context)
{
	struct iovec iov = {buf, len};

	return plain_recvmsg(ep, &iov, &desc, 1, src_addr, context);
}

ssize_t ofi_plain_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src_addr, void *context)
{
	return plain_recvmsg(ep, iov, desc, count, src_addr, context);
}

static ssize_t plain_sendmsg(struct fid_ep *ep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t addr,
			     void *context, uint64_t data, uint64_t flags)
{
	struct fi_msg m = {iov, desc, count, addr, context, data};

	return ep->msg->sendmsg(ep, &m, flags);
}

OFI_HOT ssize_t ofi_plain_send(struct fid_ep *ep, const void *buf, size_t len,
			       void *desc, fi_addr_t dest_addr, void *context)
{
	struct iovec iov = {(void *)buf, len};

	return plain_sendmsg(ep, &iov, &desc, 1, dest_addr, context, 0,
			     plain_txf(ep, len));
}

ssize_t ofi_plain_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t dest_addr, void *context)
{
	return plain_sendmsg(ep, iov, desc, count, dest_addr, context, 0,
			     plain_txfv(ep, iov, count));
}

OFI_HOT ssize_t ofi_plain_inject(struct fid_ep *ep, const void *buf, size_t len,
				 fi_addr_t dest_addr)
{
	struct iovec iov = {(void *)buf, len};

	return plain_sendmsg(ep, &iov, NULL, 1, dest_addr, NULL, 0,
			     PLAIN_INJECT);
}

ssize_t ofi_plain_senddata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest_addr,
			   void *context)
{
	struct iovec iov = {(void *)buf, len};

	return plain_sendmsg(ep, &iov, &desc, 1, dest_addr, context, data,
			     plain_txf(ep, len) | FI_REMOTE_CQ_DATA);
}

ssize_t ofi_plain_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest_addr)
{
	struct iovec iov = {(void *)buf, len};

	return plain_sendmsg(ep, &iov, NULL, 1, dest_addr, NULL, data,
			     PLAIN_INJECT | FI_REMOTE_CQ_DATA);
}

/* ------------------------------------------------------------------ */
/* fi_ops_tagged                                                        */

static ssize_t plain_trecvmsg(struct fid_ep *ep, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t addr,
			      uint64_t tag, uint64_t ignore, void *context)
{
	struct fi_msg_tagged m = {iov, desc,   count,	addr,
				  tag, ignore, context, 0};

	return ep->tagged->recvmsg(ep, &m, plain_rxf(ep));
}

OFI_HOT ssize_t ofi_plain_trecv(struct fid_ep *ep, void *buf, size_t len,
				void *desc, fi_addr_t src_addr, uint64_t tag,
				uint64_t ignore, void *context)
{
	struct iovec iov = {buf, len};

	return plain_trecvmsg(ep, &iov, &desc, 1, src_addr, tag, ignore,
			      context);
}

ssize_t ofi_plain_trecvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 uint64_t tag, uint64_t ignore, void *context)
{
	return plain_trecvmsg(ep, iov, desc, count, src_addr, tag, ignore,
			      context);
}

static ssize_t plain_tsendmsg(struct fid_ep *ep, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t addr,
			      uint64_t tag, void *context, uint64_t data,
			      uint64_t flags)
{
	struct fi_msg_tagged m = {iov, desc, count,   addr,
				  tag, 0,    context, data};

	return ep->tagged->sendmsg(ep, &m, flags);
}

OFI_HOT ssize_t ofi_plain_tsend(struct fid_ep *ep, const void *buf, size_t len,
				void *desc, fi_addr_t dest_addr, uint64_t tag,
				void *context)
{
	struct iovec iov = {(void *)buf, len};

	return plain_tsendmsg(ep, &iov, &desc, 1, dest_addr, tag, context, 0,
			      plain_txf(ep, len));
}

ssize_t ofi_plain_tsendv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t tag, void *context)
{
	return plain_tsendmsg(ep, iov, desc, count, dest_addr, tag, context, 0,
			      plain_txfv(ep, iov, count));
}

OFI_HOT ssize_t ofi_plain_tinject(struct fid_ep *ep, const void *buf,
				  size_t len, fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};

	return plain_tsendmsg(ep, &iov, NULL, 1, dest_addr, tag, NULL, 0,
			      PLAIN_INJECT);
}

ssize_t ofi_plain_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t tag, void *context)
{
	struct iovec iov = {(void *)buf, len};

	return plain_tsendmsg(ep, &iov, &desc, 1, dest_addr, tag, context, data,
			      plain_txf(ep, len) | FI_REMOTE_CQ_DATA);
}

ssize_t ofi_plain_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};

	return plain_tsendmsg(ep, &iov, NULL, 1, dest_addr, tag, NULL, data,
			      PLAIN_INJECT | FI_REMOTE_CQ_DATA);
}

/* ------------------------------------------------------------------ */
/* fi_ops_rma: one remote iov covering the local ones.                  */

static ssize_t plain_rma(struct fid_ep *ep, bool write, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t addr,
			 uint64_t raddr, size_t len, uint64_t key,
			 void *context, uint64_t data, uint64_t flags)
{
	struct fi_rma_iov rma = {raddr, len, key};
	struct fi_msg_rma m = {iov, desc, count, addr, &rma, 1, context, data};

	return write ? ep->rma->writemsg(ep, &m, flags)
		     : ep->rma->readmsg(ep, &m, flags);
}

/* The remote length is the local iovs' total: refuse what cannot be read. */
static bool plain_iov_bad(struct fid_ep *ep, const struct iovec *iov,
			  size_t count)
{
	return count > plain_ep(ep)->iov_limit || (count && !iov);
}

OFI_HOT ssize_t ofi_plain_read(struct fid_ep *ep, void *buf, size_t len,
			       void *desc, fi_addr_t src_addr, uint64_t addr,
			       uint64_t key, void *context)
{
	struct iovec iov = {buf, len};

	return plain_rma(ep, false, &iov, &desc, 1, src_addr, addr, len, key,
			 context, 0, plain_txf_noinject(ep));
}

ssize_t ofi_plain_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src_addr, uint64_t addr,
			uint64_t key, void *context)
{
	if (plain_iov_bad(ep, iov, count))
		return -FI_EINVAL;
	return plain_rma(ep, false, iov, desc, count, src_addr, addr,
			 ofi_total_iov_len(iov, count), key, context, 0,
			 plain_txf_noinject(ep));
}

OFI_HOT ssize_t ofi_plain_write(struct fid_ep *ep, const void *buf, size_t len,
				void *desc, fi_addr_t dest_addr, uint64_t addr,
				uint64_t key, void *context)
{
	struct iovec iov = {(void *)buf, len};

	return plain_rma(ep, true, &iov, &desc, 1, dest_addr, addr, len, key,
			 context, 0, plain_txf(ep, len));
}

ssize_t ofi_plain_writev(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t addr, uint64_t key, void *context)
{
	size_t len;

	if (plain_iov_bad(ep, iov, count))
		return -FI_EINVAL;
	len = ofi_total_iov_len(iov, count);
	return plain_rma(ep, true, iov, desc, count, dest_addr, addr, len, key,
			 context, 0, plain_txf(ep, len));
}

OFI_HOT ssize_t ofi_plain_inject_write(struct fid_ep *ep, const void *buf,
				       size_t len, fi_addr_t dest_addr,
				       uint64_t addr, uint64_t key)
{
	struct iovec iov = {(void *)buf, len};

	return plain_rma(ep, true, &iov, NULL, 1, dest_addr, addr, len, key,
			 NULL, 0, PLAIN_INJECT);
}

ssize_t ofi_plain_writedata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = {(void *)buf, len};

	return plain_rma(ep, true, &iov, &desc, 1, dest_addr, addr, len, key,
			 context, data, plain_txf(ep, len) | FI_REMOTE_CQ_DATA);
}

ssize_t ofi_plain_inject_writedata(struct fid_ep *ep, const void *buf,
				   size_t len, uint64_t data,
				   fi_addr_t dest_addr, uint64_t addr,
				   uint64_t key)
{
	struct iovec iov = {(void *)buf, len};

	return plain_rma(ep, true, &iov, NULL, 1, dest_addr, addr, len, key,
			 NULL, data, PLAIN_INJECT | FI_REMOTE_CQ_DATA);
}

/* ------------------------------------------------------------------ */
/* fi_ops_atomic: one remote ioc of as many elements as the operands.   */

static size_t plain_ioc_total(const struct fi_ioc *ioc, size_t count)
{
	size_t i, n = 0;

	for (i = 0; ioc && i < count; i++)
		n += ioc[i].count;
	return n;
}

static void plain_atomic_msg(struct fi_msg_atomic *m, struct fi_rma_ioc *rma,
			     const struct fi_ioc *iov, void **desc,
			     size_t count, fi_addr_t addr, uint64_t raddr,
			     size_t n, uint64_t key, enum fi_datatype datatype,
			     enum fi_op op, void *context)
{
	*rma = (struct fi_rma_ioc){raddr, n, key};
	*m = (struct fi_msg_atomic){.msg_iov = iov,
				    .desc = desc,
				    .iov_count = count,
				    .addr = addr,
				    .rma_iov = rma,
				    .rma_iov_count = 1,
				    .datatype = datatype,
				    .op = op,
				    .context = context};
}

static ssize_t plain_atomic(struct fid_ep *ep, const struct fi_ioc *iov,
			    void **desc, size_t count, fi_addr_t dest_addr,
			    uint64_t addr, size_t n, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op,
			    void *context, uint64_t flags)
{
	struct fi_msg_atomic m;
	struct fi_rma_ioc rma;

	plain_atomic_msg(&m, &rma, iov, desc, count, dest_addr, addr, n, key,
			 datatype, op, context);
	return ep->atomic->writemsg(ep, &m, flags);
}

ssize_t ofi_plain_atomic(struct fid_ep *ep, const void *buf, size_t count,
			 void *desc, fi_addr_t dest_addr, uint64_t addr,
			 uint64_t key, enum fi_datatype datatype, enum fi_op op,
			 void *context)
{
	struct fi_ioc ioc = {(void *)buf, count};

	return plain_atomic(ep, &ioc, &desc, 1, dest_addr, addr, count, key,
			    datatype, op, context, plain_txf_noinject(ep));
}

ssize_t ofi_plain_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
			  void **desc, size_t count, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op,
			  void *context)
{
	return plain_atomic(ep, iov, desc, count, dest_addr, addr,
			    plain_ioc_total(iov, count), key, datatype, op,
			    context, plain_txf_noinject(ep));
}

ssize_t ofi_plain_inject_atomic(struct fid_ep *ep, const void *buf,
				size_t count, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op)
{
	struct fi_ioc ioc = {(void *)buf, count};

	return plain_atomic(ep, &ioc, NULL, 1, dest_addr, addr, count, key,
			    datatype, op, NULL, PLAIN_INJECT);
}

/*
 * The rma element count of a fetch is the results' (an FI_ATOMIC_READ
 * has no operand); an operand without a buffer is none, which only an
 * FI_ATOMIC_READ may have.
 */
static ssize_t plain_fetch(struct fid_ep *ep, const struct fi_ioc *iov,
			   void **desc, size_t count, struct fi_ioc *resultv,
			   void **result_desc, size_t result_count,
			   fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op,
			   void *context)
{
	struct fi_msg_atomic m;
	struct fi_rma_ioc rma;

	plain_atomic_msg(&m, &rma, iov, desc, count, dest_addr, addr,
			 plain_ioc_total(resultv, result_count), key, datatype,
			 op, context);
	return ep->atomic->readwritemsg(ep, &m, resultv, result_desc,
					result_count, plain_txf_noinject(ep));
}

ssize_t ofi_plain_fetch_atomic(struct fid_ep *ep, const void *buf, size_t count,
			       void *desc, void *result, void *result_desc,
			       fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			       enum fi_datatype datatype, enum fi_op op,
			       void *context)
{
	struct fi_ioc ioc = {(void *)buf, count}, res = {result, count};

	return plain_fetch(ep, &ioc, &desc, buf || op == FI_ATOMIC_READ ? 1 : 0,
			   &res, &result_desc, 1, dest_addr, addr, key,
			   datatype, op, context);
}

ssize_t ofi_plain_fetch_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
				void **desc, size_t count,
				struct fi_ioc *resultv, void **result_desc,
				size_t result_count, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	return plain_fetch(ep, iov, desc, count, resultv, result_desc,
			   result_count, dest_addr, addr, key, datatype, op,
			   context);
}

ssize_t ofi_plain_compare_atomicv(
	struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
	const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct fi_msg_atomic m;
	struct fi_rma_ioc rma;

	plain_atomic_msg(&m, &rma, iov, desc, count, dest_addr, addr,
			 plain_ioc_total(iov, count), key, datatype, op,
			 context);
	return ep->atomic->compwritemsg(ep, &m, comparev, compare_desc,
					compare_count, resultv, result_desc,
					result_count, plain_txf_noinject(ep));
}

ssize_t ofi_plain_compare_atomic(struct fid_ep *ep, const void *buf,
				 size_t count, void *desc, const void *compare,
				 void *compare_desc, void *result,
				 void *result_desc, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	struct fi_ioc ioc = {(void *)buf, count},
		      cmp = {(void *)compare, count}, res = {result, count};

	return ofi_plain_compare_atomicv(
		ep, &ioc, &desc, 1, &cmp, &compare_desc, 1, &res, &result_desc,
		1, dest_addr, addr, key, datatype, op, context);
}
