/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_plain.h - the plain data calls (fi_send, fi_tinject, fi_read,
 * fi_compare_atomic, ...) written once for every provider
 * (prov/util/util_plain.c). A provider supplies its *msg calls, the
 * funnels every operation family goes through, and sets util_ep's
 * inject_size and iov_limit; each plain call builds its struct fi_msg*
 * on the stack and calls the *msg entry of the fid it was called on,
 * with the op flags the man pages give it:
 *  - receives: the endpoint's rx_op_flags;
 *  - sends and writes: its tx_op_flags, FI_INJECT dropped above
 *    inject_size (ofi_ep_tx_dflags), FI_REMOTE_CQ_DATA added by the
 *    *data calls; reads and atomics: tx_op_flags without FI_INJECT;
 *  - fi_inject*: FI_INJECT | OFI_INJECT_NOCOMP, no desc, no context.
 * Since the *msg entry is the fid's, an endpoint whose *msg calls are
 * wrapped (util_trigger.c) gets its plain calls wrapped too.
 *
 * A provider's table is then its funnels and these:
 *	static const struct fi_ops_msg x_msg_ops = {
 *		OFI_PLAIN_MSG_OPS(x_recvmsg, x_sendmsg),
 *	};
 */
#ifndef OFI_PLAIN_H
#define OFI_PLAIN_H

#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

/*
 * Op flag the fi_inject* calls add to FI_INJECT: the operation raises no
 * completion at all, not even an error entry (fi_msg(3)). Only *msg
 * funnels see it; they take it off before the flags go anywhere else.
 * (Bits 60 to 62 are OFI_COLL_INTERNAL, OFI_MR_INTERNAL / OFI_CQ_QUIET
 * and OFI_TRIG_WORK.)
 */
#define OFI_INJECT_NOCOMP (1ULL << 63)

#define OFI_COMP_LEVELS                                                        \
	(FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |    \
	 FI_COMMIT_COMPLETE)

/*
 * The op flags a send funnel goes by: an fi_inject* call's are its own
 * (OFI_INJECT_NOCOMP taken off); fi_sendmsg's override the endpoint's,
 * but a call that names no completion level keeps the endpoint's (Open
 * MPI sets delivery complete there).
 */
static inline uint64_t ofi_send_op_flags(uint64_t ep_tx_op_flags,
					 uint64_t flags)
{
	if (flags & OFI_INJECT_NOCOMP)
		return flags & ~OFI_INJECT_NOCOMP;
	if (flags & OFI_COMP_LEVELS)
		return flags;
	return flags | (ep_tx_op_flags & OFI_COMP_LEVELS);
}

/* fi_ops_msg */
ssize_t ofi_plain_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src_addr, void *context);
ssize_t ofi_plain_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src_addr, void *context);
ssize_t ofi_plain_send(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest_addr, void *context);
ssize_t ofi_plain_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t dest_addr, void *context);
ssize_t ofi_plain_inject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest_addr);
ssize_t ofi_plain_senddata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest_addr,
			   void *context);
ssize_t ofi_plain_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest_addr);

#define OFI_PLAIN_MSG_OPS(recvmsg_fn, sendmsg_fn)                              \
	.size = sizeof(struct fi_ops_msg), .recv = ofi_plain_recv,             \
	.recvv = ofi_plain_recvv, .recvmsg = (recvmsg_fn),                     \
	.send = ofi_plain_send, .sendv = ofi_plain_sendv,                      \
	.sendmsg = (sendmsg_fn), .inject = ofi_plain_inject,                   \
	.senddata = ofi_plain_senddata, .injectdata = ofi_plain_injectdata

/* fi_ops_tagged */
ssize_t ofi_plain_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			void *context);
ssize_t ofi_plain_trecvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 uint64_t tag, uint64_t ignore, void *context);
ssize_t ofi_plain_tsend(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, uint64_t tag,
			void *context);
ssize_t ofi_plain_tsendv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t tag, void *context);
ssize_t ofi_plain_tinject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr, uint64_t tag);
ssize_t ofi_plain_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t tag, void *context);
ssize_t ofi_plain_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr, uint64_t tag);

#define OFI_PLAIN_TAGGED_OPS(recvmsg_fn, sendmsg_fn)                           \
	.size = sizeof(struct fi_ops_tagged), .recv = ofi_plain_trecv,         \
	.recvv = ofi_plain_trecvv, .recvmsg = (recvmsg_fn),                    \
	.send = ofi_plain_tsend, .sendv = ofi_plain_tsendv,                    \
	.sendmsg = (sendmsg_fn), .inject = ofi_plain_tinject,                  \
	.senddata = ofi_plain_tsenddata, .injectdata = ofi_plain_tinjectdata

/* fi_ops_rma (a provider with fi_commit sets .commit itself) */
ssize_t ofi_plain_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src_addr, uint64_t addr, uint64_t key,
		       void *context);
ssize_t ofi_plain_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src_addr, uint64_t addr,
			uint64_t key, void *context);
ssize_t ofi_plain_write(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, uint64_t addr,
			uint64_t key, void *context);
ssize_t ofi_plain_writev(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t addr, uint64_t key, void *context);
ssize_t ofi_plain_inject_write(struct fid_ep *ep, const void *buf, size_t len,
			       fi_addr_t dest_addr, uint64_t addr,
			       uint64_t key);
ssize_t ofi_plain_writedata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, void *context);
ssize_t ofi_plain_inject_writedata(struct fid_ep *ep, const void *buf,
				   size_t len, uint64_t data,
				   fi_addr_t dest_addr, uint64_t addr,
				   uint64_t key);

#define OFI_PLAIN_RMA_OPS(readmsg_fn, writemsg_fn)                             \
	.size = sizeof(struct fi_ops_rma), .read = ofi_plain_read,             \
	.readv = ofi_plain_readv, .readmsg = (readmsg_fn),                     \
	.write = ofi_plain_write, .writev = ofi_plain_writev,                  \
	.writemsg = (writemsg_fn), .inject = ofi_plain_inject_write,           \
	.writedata = ofi_plain_writedata,                                      \
	.injectdata = ofi_plain_inject_writedata

/* fi_ops_atomic (the *valid calls are the provider's) */
ssize_t ofi_plain_atomic(struct fid_ep *ep, const void *buf, size_t count,
			 void *desc, fi_addr_t dest_addr, uint64_t addr,
			 uint64_t key, enum fi_datatype datatype, enum fi_op op,
			 void *context);
ssize_t ofi_plain_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
			  void **desc, size_t count, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op,
			  void *context);
ssize_t ofi_plain_inject_atomic(struct fid_ep *ep, const void *buf,
				size_t count, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op);
ssize_t ofi_plain_fetch_atomic(struct fid_ep *ep, const void *buf, size_t count,
			       void *desc, void *result, void *result_desc,
			       fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			       enum fi_datatype datatype, enum fi_op op,
			       void *context);
ssize_t ofi_plain_fetch_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
				void **desc, size_t count,
				struct fi_ioc *resultv, void **result_desc,
				size_t result_count, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context);
ssize_t ofi_plain_compare_atomic(struct fid_ep *ep, const void *buf,
				 size_t count, void *desc, const void *compare,
				 void *compare_desc, void *result,
				 void *result_desc, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op,
				 void *context);
ssize_t ofi_plain_compare_atomicv(
	struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
	const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	enum fi_datatype datatype, enum fi_op op, void *context);

#define OFI_PLAIN_ATOMIC_OPS(writemsg_fn, readwritemsg_fn, compwritemsg_fn)    \
	.size = sizeof(struct fi_ops_atomic), .write = ofi_plain_atomic,       \
	.writev = ofi_plain_atomicv, .writemsg = (writemsg_fn),                \
	.inject = ofi_plain_inject_atomic,                                     \
	.readwrite = ofi_plain_fetch_atomic,                                   \
	.readwritev = ofi_plain_fetch_atomicv,                                 \
	.readwritemsg = (readwritemsg_fn),                                     \
	.compwrite = ofi_plain_compare_atomic,                                 \
	.compwritev = ofi_plain_compare_atomicv,                               \
	.compwritemsg = (compwritemsg_fn)

#endif /* OFI_PLAIN_H */
