/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_ops.c - the shared fi_no_* stubs that ops tables point at for calls a
 * provider does not support, ready-made all-stub tables, and iovec helpers.
 * Every stub answers -FI_ENOSYS, which callers treat as "not supported".
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_util.h"

int fi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int fi_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int fi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		   void **ops, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int fi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
		  void *context)
{
	return -FI_ENOSYS;
}

#if OFI_HAVE_EXT_SLOTS
int fi_no_op_set(struct fid *fid, enum fi_set_op op, union fi_override_op *fn,
		 uint64_t flags)
{
	return -FI_ENOSYS;
}
#endif

int fi_no_domain(struct fid_fabric *fabric, struct fi_info *info,
		 struct fid_domain **dom, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		    struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

int fi_no_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	return -FI_ENOSYS;
}

int fi_no_domain2(struct fid_fabric *fabric, struct fi_info *info,
		  struct fid_domain **dom, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_endpoint(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		    struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

int fi_no_stx_context(struct fid_domain *domain, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		       enum fi_op op, struct fi_atomic_attr *attr,
		       uint64_t flags)
{
	return -FI_ENOSYS;
}

int fi_no_query_collective(struct fid_domain *domain,
			   enum fi_collective_op coll,
			   struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

int fi_no_endpoint2(struct fid_domain *domain, struct fi_info *info,
		    struct fid_ep **ep, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_getopt(fid_t fid, int level, int optname, void *optval,
		 size_t *optlen)
{
	return -FI_ENOSYS;
}

int fi_no_setopt(fid_t fid, int level, int optname, const void *optval,
		 size_t optlen)
{
	return -FI_ENOSYS;
}

int fi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		 struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		 struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rx_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tx_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

int fi_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

int fi_no_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int fi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int fi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		  size_t paramlen)
{
	return -FI_ENOSYS;
}

int fi_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int fi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int fi_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		 size_t paramlen)
{
	return -FI_ENOSYS;
}

int fi_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int fi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
	       struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src_addr, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src_addr, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			  uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_send(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest_addr, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t dest_addr, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			  uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_inject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest_addr)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_senddata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest_addr,
			   void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_msg_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest_addr)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			  fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			  void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_recvv(struct fid_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src_addr,
			   uint64_t tag, uint64_t ignore, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			     uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_send(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, fi_addr_t dest_addr, uint64_t tag,
			  void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_sendv(struct fid_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest_addr,
			   uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			     uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_inject(struct fid_ep *ep, const void *buf, size_t len,
			    fi_addr_t dest_addr, uint64_t tag)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_senddata(struct fid_ep *ep, const void *buf, size_t len,
			      void *desc, uint64_t data, fi_addr_t dest_addr,
			      uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_tagged_injectdata(struct fid_ep *ep, const void *buf, size_t len,
				uint64_t data, fi_addr_t dest_addr,
				uint64_t tag)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src_addr, uint64_t addr, uint64_t key,
		       void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src_addr, uint64_t addr,
			uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_write(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, uint64_t addr,
			uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_writev(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_writedata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_rma_commit(struct fid_ep *ep, const struct fi_rma_iov *iov,
			 size_t count, fi_addr_t dest_addr, uint64_t flags,
			 void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_write(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, fi_addr_t dest_addr, uint64_t addr,
			   uint64_t key, enum fi_datatype datatype,
			   enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov,
			    void **desc, size_t count, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op,
			    void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_writemsg(struct fid_ep *ep,
			      const struct fi_msg_atomic *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_inject(struct fid_ep *ep, const void *buf, size_t count,
			    fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count,
			       void *desc, void *result, void *result_desc,
			       fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			       enum fi_datatype datatype, enum fi_op op,
			       void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
				void **desc, size_t count,
				struct fi_ioc *resultv, void **result_desc,
				size_t result_count, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_readwritemsg(struct fid_ep *ep,
				  const struct fi_msg_atomic *msg,
				  struct fi_ioc *resultv, void **result_desc,
				  size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count,
			       void *desc, const void *compare,
			       void *compare_desc, void *result,
			       void *result_desc, fi_addr_t dest_addr,
			       uint64_t addr, uint64_t key,
			       enum fi_datatype datatype, enum fi_op op,
			       void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_compwritev(
	struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
	const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	enum fi_datatype datatype, enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_atomic_compwritemsg(struct fid_ep *ep,
				  const struct fi_msg_atomic *msg,
				  const struct fi_ioc *comparev,
				  void **compare_desc, size_t compare_count,
				  struct fi_ioc *resultv, void **result_desc,
				  size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

int fi_no_atomic_valid(struct fid_ep *ep, enum fi_datatype datatype,
		       enum fi_op op, size_t *count)
{
	return -FI_ENOSYS;
}

int fi_no_av_insert(struct fid_av *av, const void *addr, size_t count,
		    fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_av_insertsvc(struct fid_av *av, const char *node, const char *service,
		       fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
		       const char *service, size_t svccnt, fi_addr_t *fi_addr,
		       uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int fi_no_av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count,
		    uint64_t flags)
{
	return -FI_ENOSYS;
}

int fi_no_av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr,
		    size_t *addrlen)
{
	return -FI_ENOSYS;
}

int fi_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		 struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_cq_sread(struct fid_cq *cq, void *buf, size_t count,
		       const void *cond, int timeout)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
			   fi_addr_t *src_addr, const void *cond, int timeout)
{
	return -FI_ENOSYS;
}

int fi_no_cq_signal(struct fid_cq *cq)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_eq_write(struct fid_eq *eq, uint32_t event, const void *buf,
		       size_t len, uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t fi_no_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
		       size_t len, int timeout, uint64_t flags)
{
	return -FI_ENOSYS;
}

#if OFI_HAVE_EXT_SLOTS
ssize_t fi_no_eq_register_handler(struct fid_eq *eq, uint64_t event_type,
				  fi_eq_event_handler_t handler, void *context)
{
	return -FI_ENOSYS;
}
#endif

int fi_no_wait(struct fid_wait *waitset, int timeout)
{
	return -FI_ENOSYS;
}

int fi_no_poll(struct fid_poll *pollset, void **context, int count)
{
	return -FI_ENOSYS;
}

int fi_no_poll_add(struct fid_poll *pollset, struct fid *event_fid,
		   uint64_t flags)
{
	return -FI_ENOSYS;
}

int fi_no_poll_del(struct fid_poll *pollset, struct fid *event_fid,
		   uint64_t flags)
{
	return -FI_ENOSYS;
}

const struct fi_ops_cm ofi_no_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = fi_no_setname,
	.getname = fi_no_getname,
	.getpeer = fi_no_getpeer,
	.connect = fi_no_connect,
	.listen = fi_no_listen,
	.accept = fi_no_accept,
	.reject = fi_no_reject,
	.shutdown = fi_no_shutdown,
	.join = fi_no_join,
};

const struct fi_ops_msg ofi_no_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = fi_no_msg_recv,
	.recvv = fi_no_msg_recvv,
	.recvmsg = fi_no_msg_recvmsg,
	.send = fi_no_msg_send,
	.sendv = fi_no_msg_sendv,
	.sendmsg = fi_no_msg_sendmsg,
	.inject = fi_no_msg_inject,
	.senddata = fi_no_msg_senddata,
	.injectdata = fi_no_msg_injectdata,
};

const struct fi_ops_tagged ofi_no_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = fi_no_tagged_recv,
	.recvv = fi_no_tagged_recvv,
	.recvmsg = fi_no_tagged_recvmsg,
	.send = fi_no_tagged_send,
	.sendv = fi_no_tagged_sendv,
	.sendmsg = fi_no_tagged_sendmsg,
	.inject = fi_no_tagged_inject,
	.senddata = fi_no_tagged_senddata,
	.injectdata = fi_no_tagged_injectdata,
};

const struct fi_ops_rma ofi_no_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = fi_no_rma_read,
	.readv = fi_no_rma_readv,
	.readmsg = fi_no_rma_readmsg,
	.write = fi_no_rma_write,
	.writev = fi_no_rma_writev,
	.writemsg = fi_no_rma_writemsg,
	.inject = fi_no_rma_inject,
	.writedata = fi_no_rma_writedata,
	.injectdata = fi_no_rma_injectdata,
#if OFI_HAVE_EXT_SLOTS
	.commit = fi_no_rma_commit,
#endif
};

const struct fi_ops_atomic ofi_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = fi_no_atomic_write,
	.writev = fi_no_atomic_writev,
	.writemsg = fi_no_atomic_writemsg,
	.inject = fi_no_atomic_inject,
	.readwrite = fi_no_atomic_readwrite,
	.readwritev = fi_no_atomic_readwritev,
	.readwritemsg = fi_no_atomic_readwritemsg,
	.compwrite = fi_no_atomic_compwrite,
	.compwritev = fi_no_atomic_compwritev,
	.compwritemsg = fi_no_atomic_compwritemsg,
	.writevalid = fi_no_atomic_valid,
	.readwritevalid = fi_no_atomic_valid,
	.compwritevalid = fi_no_atomic_valid,
};

static ssize_t no_coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
			       void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_coll_bcast(struct fid_ep *ep, void *buf, size_t count,
			     void *desc, fi_addr_t coll_addr,
			     fi_addr_t root_addr, enum fi_datatype datatype,
			     uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_coll_xfer(struct fid_ep *ep, const void *buf, size_t count,
			    void *desc, void *result, void *result_desc,
			    fi_addr_t coll_addr, enum fi_datatype datatype,
			    uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_coll_reduce_all(struct fid_ep *ep, const void *buf,
				  size_t count, void *desc, void *result,
				  void *result_desc, fi_addr_t coll_addr,
				  enum fi_datatype datatype, enum fi_op op,
				  uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_coll_reduce(struct fid_ep *ep, const void *buf, size_t count,
			      void *desc, void *result, void *result_desc,
			      fi_addr_t coll_addr, fi_addr_t root_addr,
			      enum fi_datatype datatype, enum fi_op op,
			      uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_coll_rooted(struct fid_ep *ep, const void *buf, size_t count,
			      void *desc, void *result, void *result_desc,
			      fi_addr_t coll_addr, fi_addr_t root_addr,
			      enum fi_datatype datatype, uint64_t flags,
			      void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_coll_msg(struct fid_ep *ep,
			   const struct fi_msg_collective *msg,
			   struct fi_ioc *resultv, void **result_desc,
			   size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
				uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

const struct fi_ops_collective ofi_no_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = no_coll_barrier,
	.broadcast = no_coll_bcast,
	.alltoall = no_coll_xfer,
	.allreduce = no_coll_reduce_all,
	.allgather = no_coll_xfer,
	.reduce_scatter = no_coll_reduce_all,
	.reduce = no_coll_reduce,
	.scatter = no_coll_rooted,
	.gather = no_coll_rooted,
	.msg = no_coll_msg,
	.barrier2 = no_coll_barrier2,
};

OFI_HOT size_t ofi_total_iov_len(const struct iovec *iov, size_t count)
{
	size_t i, len = 0;

	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

size_t ofi_copy_to_iov(const struct iovec *iov, size_t count, size_t offset,
		       const void *buf, size_t len)
{
	const char *src = buf;
	size_t i, n, done = 0;

	for (i = 0; i < count && done < len; i++) {
		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		n = OFI_MIN(iov[i].iov_len - offset, len - done);
		memcpy((char *)iov[i].iov_base + offset, src + done, n);
		done += n;
		offset = 0;
	}
	return done;
}

size_t ofi_copy_from_iov(void *buf, size_t len, const struct iovec *iov,
			 size_t count, size_t offset)
{
	char *dst = buf;
	size_t i, n, done = 0;

	for (i = 0; i < count && done < len; i++) {
		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		n = OFI_MIN(iov[i].iov_len - offset, len - done);
		memcpy(dst + done, (char *)iov[i].iov_base + offset, n);
		done += n;
		offset = 0;
	}
	return done;
}

/*
 * Before API 1.5, and whenever the caller offers no buffer, err_data points
 * at a copy the object keeps until the next read; otherwise we copy into the
 * caller's buffer and report how much fit.
 */
void ofi_copy_err_data(uint32_t api_version, void **keep, void *src,
		       size_t src_size, void **user_data, size_t *user_size)
{
	free(*keep);
	*keep = NULL;
	if (api_version >= OFI_API_1_5 && *user_size) {
		*user_size = OFI_MIN(*user_size, src_size);
		if (*user_size && *user_data)
			memcpy(*user_data, src, *user_size);
		free(src);
		return;
	}
	*keep = src;
	*user_data = src;
	if (api_version >= OFI_API_1_5)
		*user_size = src_size;
}
