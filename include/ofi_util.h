/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_util.h - the provider utility layer (prov/util): base objects every
 * provider embeds first in its own fabric, domain, endpoint, CQ, EQ, counter,
 * AV, MR and wait objects, the shared fi_no_* stubs, and the internal calls
 * providers use to post completions, events and to resolve addresses.
 *
 * prov/util only uses public libfabric symbols (fi_log*, fi_dupinfo,
 * fi_freeinfo), so it can be compiled into loadable providers as well.
 */
#ifndef OFI_UTIL_H
#define OFI_UTIL_H

#include <poll.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "ofi.h"
#include "ofi_hmem.h"

/*
 * Our headers carry the extension slots of DESIGN.md section 2 (op_set in
 * fi_ops, register_handler in fi_ops_eq, commit in fi_ops_rma); the reference
 * headers do not. Building against either keeps the layer testable.
 */
#if defined(FI_PMEM) || defined(FI_COMMIT_MANUAL)
#define OFI_HAVE_EXT_SLOTS 1
#else
#define OFI_HAVE_EXT_SLOTS 0
#endif

#define OFI_API_1_5 FI_VERSION(1, 5)

/* ------------------------------------------------------------------ */
/* Shared stubs: every unsupported call answers -FI_ENOSYS.            */

int fi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int fi_no_control(struct fid *fid, int command, void *arg);
int fi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		   void **ops, void *context);
int fi_no_tostr(const struct fid *fid, char *buf, size_t len);
int fi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
		  void *context);
#if OFI_HAVE_EXT_SLOTS
int fi_no_op_set(struct fid *fid, enum fi_set_op op, union fi_override_op *fn,
		 uint64_t flags);
#endif

#if OFI_HAVE_EXT_SLOTS
#define OFI_NO_OP_SET .op_set = fi_no_op_set,
#else
#define OFI_NO_OP_SET
#endif

/* The fi_ops of an object whose only call is close (most util objects). */
#define OFI_CLOSE_ONLY_FI_OPS(name, close_fn)                                  \
	static const struct fi_ops name = {.size = sizeof(struct fi_ops),      \
					   .close = close_fn,                  \
					   .bind = fi_no_bind,                 \
					   .control = fi_no_control,           \
					   .ops_open = fi_no_ops_open,         \
					   .tostr = fi_no_tostr,               \
					   .ops_set = fi_no_ops_set,           \
					   OFI_NO_OP_SET}

/* The fi_ops of an endpoint on util_ep: util's bind and control. */
#define OFI_EP_FI_OPS(name, close_fn)                                          \
	static const struct fi_ops name = {.size = sizeof(struct fi_ops),      \
					   .close = close_fn,                  \
					   .bind = ofi_ep_bind,                \
					   .control = ofi_ep_control,          \
					   .ops_open = fi_no_ops_open,         \
					   .tostr = fi_no_tostr,               \
					   .ops_set = fi_no_ops_set,           \
					   OFI_NO_OP_SET}

/* The fi_ops_cm of an unconnected endpoint: fi_getname only. */
#define OFI_GETNAME_CM_OPS(name, getname_fn)                                   \
	static const struct fi_ops_cm name = {                                 \
		.size = sizeof(struct fi_ops_cm),                              \
		.setname = fi_no_setname,                                      \
		.getname = getname_fn,                                         \
		.getpeer = fi_no_getpeer,                                      \
		.connect = fi_no_connect,                                      \
		.listen = fi_no_listen,                                        \
		.accept = fi_no_accept,                                        \
		.reject = fi_no_reject,                                        \
		.shutdown = fi_no_shutdown,                                    \
		.join = fi_no_join,                                            \
	}

int fi_no_domain(struct fid_fabric *fabric, struct fi_info *info,
		 struct fid_domain **dom, void *context);
int fi_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_pep **pep, void *context);
int fi_no_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq, void *context);
int fi_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		    struct fid_wait **waitset);
int fi_no_trywait(struct fid_fabric *fabric, struct fid **fids, int count);
int fi_no_domain2(struct fid_fabric *fabric, struct fi_info *info,
		  struct fid_domain **dom, uint64_t flags, void *context);

int fi_no_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av, void *context);
int fi_no_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq, void *context);
int fi_no_endpoint(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context);
int fi_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **sep, void *context);
int fi_no_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr, void *context);
int fi_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		    struct fid_poll **pollset);
int fi_no_stx_context(struct fid_domain *domain, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context);
int fi_no_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context);
int fi_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		       enum fi_op op, struct fi_atomic_attr *attr,
		       uint64_t flags);
int fi_no_query_collective(struct fid_domain *domain,
			   enum fi_collective_op coll,
			   struct fi_collective_attr *attr, uint64_t flags);
int fi_no_endpoint2(struct fid_domain *domain, struct fi_info *info,
		    struct fid_ep **ep, uint64_t flags, void *context);

int fi_no_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr, void *context);
int fi_no_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context);
int fi_no_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr);

ssize_t fi_no_cancel(fid_t fid, void *context);
int fi_no_getopt(fid_t fid, int level, int optname, void *optval,
		 size_t *optlen);
int fi_no_setopt(fid_t fid, int level, int optname, const void *optval,
		 size_t optlen);
int fi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		 struct fid_ep **tx_ep, void *context);
int fi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		 struct fid_ep **rx_ep, void *context);
ssize_t fi_no_rx_size_left(struct fid_ep *ep);
ssize_t fi_no_tx_size_left(struct fid_ep *ep);

int fi_no_setname(fid_t fid, void *addr, size_t addrlen);
int fi_no_getname(fid_t fid, void *addr, size_t *addrlen);
int fi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int fi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		  size_t paramlen);
int fi_no_listen(struct fid_pep *pep);
int fi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int fi_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		 size_t paramlen);
int fi_no_shutdown(struct fid_ep *ep, uint64_t flags);
int fi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
	       struct fid_mc **mc, void *context);

ssize_t fi_no_msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src_addr, void *context);
ssize_t fi_no_msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src_addr, void *context);
ssize_t fi_no_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			  uint64_t flags);
ssize_t fi_no_msg_send(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest_addr, void *context);
ssize_t fi_no_msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t dest_addr, void *context);
ssize_t fi_no_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			  uint64_t flags);
ssize_t fi_no_msg_inject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest_addr);
ssize_t fi_no_msg_senddata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest_addr,
			   void *context);
ssize_t fi_no_msg_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest_addr);

ssize_t fi_no_tagged_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			  fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			  void *context);
ssize_t fi_no_tagged_recvv(struct fid_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src_addr,
			   uint64_t tag, uint64_t ignore, void *context);
ssize_t fi_no_tagged_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			     uint64_t flags);
ssize_t fi_no_tagged_send(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, fi_addr_t dest_addr, uint64_t tag,
			  void *context);
ssize_t fi_no_tagged_sendv(struct fid_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest_addr,
			   uint64_t tag, void *context);
ssize_t fi_no_tagged_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			     uint64_t flags);
ssize_t fi_no_tagged_inject(struct fid_ep *ep, const void *buf, size_t len,
			    fi_addr_t dest_addr, uint64_t tag);
ssize_t fi_no_tagged_senddata(struct fid_ep *ep, const void *buf, size_t len,
			      void *desc, uint64_t data, fi_addr_t dest_addr,
			      uint64_t tag, void *context);
ssize_t fi_no_tagged_injectdata(struct fid_ep *ep, const void *buf, size_t len,
				uint64_t data, fi_addr_t dest_addr,
				uint64_t tag);

ssize_t fi_no_rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src_addr, uint64_t addr, uint64_t key,
		       void *context);
ssize_t fi_no_rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t src_addr, uint64_t addr,
			uint64_t key, void *context);
ssize_t fi_no_rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags);
ssize_t fi_no_rma_write(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, uint64_t addr,
			uint64_t key, void *context);
ssize_t fi_no_rma_writev(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t addr, uint64_t key, void *context);
ssize_t fi_no_rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags);
ssize_t fi_no_rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key);
ssize_t fi_no_rma_writedata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, void *context);
ssize_t fi_no_rma_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key);
ssize_t fi_no_rma_commit(struct fid_ep *ep, const struct fi_rma_iov *iov,
			 size_t count, fi_addr_t dest_addr, uint64_t flags,
			 void *context);

ssize_t fi_no_atomic_write(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, fi_addr_t dest_addr, uint64_t addr,
			   uint64_t key, enum fi_datatype datatype,
			   enum fi_op op, void *context);
ssize_t fi_no_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov,
			    void **desc, size_t count, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op,
			    void *context);
ssize_t fi_no_atomic_writemsg(struct fid_ep *ep,
			      const struct fi_msg_atomic *msg, uint64_t flags);
ssize_t fi_no_atomic_inject(struct fid_ep *ep, const void *buf, size_t count,
			    fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op);
ssize_t fi_no_atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count,
			       void *desc, void *result, void *result_desc,
			       fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			       enum fi_datatype datatype, enum fi_op op,
			       void *context);
ssize_t fi_no_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
				void **desc, size_t count,
				struct fi_ioc *resultv, void **result_desc,
				size_t result_count, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context);
ssize_t fi_no_atomic_readwritemsg(struct fid_ep *ep,
				  const struct fi_msg_atomic *msg,
				  struct fi_ioc *resultv, void **result_desc,
				  size_t result_count, uint64_t flags);
ssize_t fi_no_atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count,
			       void *desc, const void *compare,
			       void *compare_desc, void *result,
			       void *result_desc, fi_addr_t dest_addr,
			       uint64_t addr, uint64_t key,
			       enum fi_datatype datatype, enum fi_op op,
			       void *context);
ssize_t fi_no_atomic_compwritev(
	struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
	const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	enum fi_datatype datatype, enum fi_op op, void *context);
ssize_t fi_no_atomic_compwritemsg(struct fid_ep *ep,
				  const struct fi_msg_atomic *msg,
				  const struct fi_ioc *comparev,
				  void **compare_desc, size_t compare_count,
				  struct fi_ioc *resultv, void **result_desc,
				  size_t result_count, uint64_t flags);
int fi_no_atomic_valid(struct fid_ep *ep, enum fi_datatype datatype,
		       enum fi_op op, size_t *count);

int fi_no_av_insert(struct fid_av *av, const void *addr, size_t count,
		    fi_addr_t *fi_addr, uint64_t flags, void *context);
int fi_no_av_insertsvc(struct fid_av *av, const char *node, const char *service,
		       fi_addr_t *fi_addr, uint64_t flags, void *context);
int fi_no_av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
		       const char *service, size_t svccnt, fi_addr_t *fi_addr,
		       uint64_t flags, void *context);
int fi_no_av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count,
		    uint64_t flags);
int fi_no_av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr,
		    size_t *addrlen);
int fi_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		 struct fid_av_set **av_set, void *context);

ssize_t fi_no_cq_sread(struct fid_cq *cq, void *buf, size_t count,
		       const void *cond, int timeout);
ssize_t fi_no_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
			   fi_addr_t *src_addr, const void *cond, int timeout);
int fi_no_cq_signal(struct fid_cq *cq);
ssize_t fi_no_eq_write(struct fid_eq *eq, uint32_t event, const void *buf,
		       size_t len, uint64_t flags);
ssize_t fi_no_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
		       size_t len, int timeout, uint64_t flags);
#if OFI_HAVE_EXT_SLOTS
ssize_t fi_no_eq_register_handler(struct fid_eq *eq, uint64_t event_type,
				  fi_eq_event_handler_t handler, void *context);
#endif
int fi_no_wait(struct fid_wait *waitset, int timeout);
int fi_no_poll(struct fid_poll *pollset, void **context, int count);
int fi_no_poll_add(struct fid_poll *pollset, struct fid *event_fid,
		   uint64_t flags);
int fi_no_poll_del(struct fid_poll *pollset, struct fid *event_fid,
		   uint64_t flags);

/* Complete tables of stubs for endpoints without a given interface. */
extern const struct fi_ops_cm ofi_no_cm_ops;
extern const struct fi_ops_msg ofi_no_msg_ops;
extern const struct fi_ops_tagged ofi_no_tagged_ops;
extern const struct fi_ops_rma ofi_no_rma_ops;
extern const struct fi_ops_atomic ofi_no_atomic_ops;
extern const struct fi_ops_collective ofi_no_collective_ops;

/* ------------------------------------------------------------------ */
/* Wait objects (util_wait.c).                                         */

struct util_fabric;
struct ofi_progress; /* ofi_progress.h */

/*
 * One wait object serves a CQ/EQ/counter of its own or, as a wait set, all
 * objects attached to it.  Sleepers compare a sequence number taken before
 * checking their condition, so a signal between check and sleep is not lost.
 */
struct util_wait {
	struct fid_wait wait_fid;
	struct util_fabric *fabric;
	enum fi_wait_obj type; /* FD, MUTEX_COND or YIELD after resolution */
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint64_t seq;
	uint64_t seen_seq; /* wait sets: last seq fi_wait returned on */
	int efd;	   /* FD, MUTEX_COND: signalled; -1 if none */
	int epfd;	   /* FI_WAIT_FD: FI_GETWAIT, efd + armed fds */
	int tfd;	   /* FI_WAIT_FD: in epfd, naps (ofi_wait_arm) */
	bool is_set;	   /* opened by the user through fi_wait_open */
	/* Blocking reads in poll() on efd (ofi_ep_refs_poll), under mutex:
	 * only then does a signal of a non-FD object write efd. */
	int sleepers;
	ofi_atomic32_t ref;	 /* objects using it */
	struct dlist_entry fids; /* struct util_wait_fid, under mutex */
};

/* An object attached to a wait set: how to drive and test it. */
struct util_wait_fid {
	struct dlist_entry entry;
	struct fid *fid;
	void (*progress)(struct fid *fid);
	bool (*ready)(struct fid *fid);
};

int ofi_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset);
int ofi_trywait(struct fid_fabric *fabric, struct fid **fids, int count);

/*
 * Resolves the wait object of a new CQ/EQ/counter: NULL for FI_WAIT_NONE,
 * the user's set for FI_WAIT_SET, else a private one.
 */
int ofi_wait_get(struct util_fabric *fabric, enum fi_wait_obj type,
		 struct fid_wait *set, struct util_wait **wait);
void ofi_wait_put(struct util_wait *wait);
int ofi_wait_attach(struct util_wait *wait, struct fid *fid,
		    void (*progress)(struct fid *),
		    bool (*ready)(struct fid *));
void ofi_wait_detach(struct util_wait *wait, struct fid *fid);
uint64_t ofi_wait_seq(struct util_wait *wait);
void ofi_wait_signal(struct util_wait *wait);
/* Sleeps until seq moves past @seen or @timeout_ms (<0: forever) passes. */
int ofi_wait_sleep(struct util_wait *wait, uint64_t seen, int timeout_ms);
void ofi_wait_drain(struct util_wait *wait);
/*
 * fi_trywait on an FI_WAIT_FD object: arms the wait_fd of every endpoint
 * on @list (struct util_ep_ref, under @lock) in @wait's epoll set, one
 * shot, so that their incoming traffic wakes an application sleeping on
 * the FI_GETWAIT fd; when a manual endpoint has no fd, or one that
 * misses some of its work (wait_nap), a timer wakes it after
 * OFI_EP_POLL_NAP_MS instead. 0, or -FI_EAGAIN if the timer fails.
 */
int ofi_wait_arm(struct util_wait *wait, ofi_mutex_t *lock,
		 struct dlist_entry *list);
/* The same over @n lists, @lists[i] under @locks[i]. */
int ofi_wait_arm_lists(struct util_wait *wait, size_t n, ofi_mutex_t **locks,
		       struct dlist_entry **lists);
int ofi_wait_control(struct util_wait *wait, int command, void *arg);

/* Remaining ms of a timeout started at @start_ms; <0 means forever. */
static inline int ofi_timeout_left(int timeout, uint64_t start_ms)
{
	uint64_t now;

	if (timeout < 0)
		return -1;
	now = ofi_gettime_ms();
	if (now - start_ms >= (uint64_t)timeout)
		return 0;
	return timeout - (int)(now - start_ms);
}

/* ------------------------------------------------------------------ */
/* Fabric.                                                              */

struct util_fabric {
	struct fid_fabric fabric_fid;
	const struct fi_provider *prov;
	char *name;
	uint32_t api_version;
	ofi_atomic32_t ref; /* domains, EQs, wait sets */
	ofi_mutex_t lock;
	struct dlist_entry domain_list;
};

/*
 * The default ops close the object and free() the base pointer: the provider
 * struct must embed the util object first.
 */
extern const struct fi_ops_fabric ofi_fabric_ops;

int ofi_fabric_init(const struct fi_provider *prov,
		    const struct fi_fabric_attr *attr,
		    struct util_fabric *fabric, void *context);
int ofi_fabric_close(struct util_fabric *fabric);
/* Allocates and initialises a bare util_fabric with ofi_fabric_ops. */
int ofi_fabric_create(const struct fi_provider *prov,
		      struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context,
		      const struct fi_ops_fabric *ops /* NULL: defaults */);

/* ------------------------------------------------------------------ */
/* MR map (util_mr.c).                                                 */

struct util_cntr;

/*
 * How a persistent registration (FI_RMA_PMEM) is made durable, decided once
 * at registration (util_pmem.c).
 */
enum ofi_pmem_kind {
	OFI_PMEM_NONE,	/* not a persistent registration */
	OFI_PMEM_FLUSH, /* real pmem: pmem_persist, exact range */
	OFI_PMEM_MSYNC, /* file mapping: pmem_msync, whole pages */
};

struct ofi_mr_entry {
	struct ofi_mr_entry *next; /* hash chain */
	uint32_t ref;		   /* holders (ofi_mr_map_get), under lock */
	struct util_cntr *cntr;	   /* fi_mr_bind counter, under lock */
	uint64_t cntr_flags;	   /* FI_REMOTE_WRITE / FI_REMOTE_READ */
	uint64_t key;
	uint64_t access;
	uint64_t offset; /* base of offset addressing */
	uint64_t flags;
	void *context;
	enum fi_hmem_iface iface;
	uint64_t device;
	enum ofi_pmem_kind pmem; /* set at insert, never changes */
	size_t iov_count;
	struct iovec iov[];
};

#define OFI_MR_MAP_BUCKETS 256

struct ofi_mr_map {
	const struct fi_provider *prov;
	int mode; /* FI_MR_* bits, FI_MR_BASIC/SCALABLE normalised */
	uint64_t next_key;
	size_t count;
	size_t bound; /* entries with a counter bound (ofi_mr_map_counted) */
	ofi_mutex_t lock;
	struct ofi_mr_entry *buckets[OFI_MR_MAP_BUCKETS];
};

int ofi_mr_map_init(const struct fi_provider *prov, int mode,
		    struct ofi_mr_map *map);
void ofi_mr_map_close(struct ofi_mr_map *map);
/*
 * Insert flag of the collective engine's regions: the requested key even
 * under FI_MR_PROV_KEY (the engine's keys lie above any the map picks)
 * and offset addressing even under FI_MR_VIRT_ADDR, so peers can compute
 * both without an exchange.
 */
#define OFI_MR_INTERNAL (1ULL << 61)
/*
 * The engine's keys: top 16 bits 0xc011. The map picks none there and an
 * application may not request one (-FI_EKEYREJECTED), so a join never
 * meets an application's registration under its key.
 */
#define OFI_MR_KEY_ENGINE      0xc011000000000000ULL
#define OFI_MR_KEY_ENGINE_MASK 0xffff000000000000ULL
static inline bool ofi_mr_key_engine(uint64_t key)
{
	return (key & OFI_MR_KEY_ENGINE_MASK) == OFI_MR_KEY_ENGINE;
}
/* @key: in the requested key, out the key used (FI_MR_PROV_KEY picks). */
int ofi_mr_map_insert(struct ofi_mr_map *map, const struct fi_mr_attr *attr,
		      uint64_t flags, uint64_t *key, void *context);
/* Unlinks @key, then waits until no holder (ofi_mr_map_get) is left. */
int ofi_mr_map_remove(struct ofi_mr_map *map, uint64_t key);
/*
 * Sets the access of @key; when that drops a right, waits until no holder
 * (ofi_mr_map_get) is left, like ofi_mr_map_remove.  -FI_ENOKEY if unknown.
 */
int ofi_mr_map_set_access(struct ofi_mr_map *map, uint64_t key,
			  uint64_t access);
/* Copies the iface/device of @key; -FI_ENOKEY when unknown. */
int ofi_mr_map_query(struct ofi_mr_map *map, uint64_t key,
		     enum fi_hmem_iface *iface, uint64_t *device);
int ofi_mr_map_verify(struct ofi_mr_map *map, uintptr_t *io_addr, size_t len,
		      uint64_t key, uint64_t access, void **context);
/*
 * ofi_mr_map_verify that also holds the entry, so the registration (and
 * its context) outlives a concurrent close until ofi_mr_map_put: the
 * target of a remote operation uses this, never a pointer it read under
 * the lock and kept after dropping it.
 */
int ofi_mr_map_get(struct ofi_mr_map *map, uintptr_t *io_addr, size_t len,
		   uint64_t key, uint64_t access, struct ofi_mr_entry **entry);
void ofi_mr_map_put(struct ofi_mr_map *map, struct ofi_mr_entry *entry);
/* A remote @access (FI_REMOTE_WRITE/READ) on a held entry: its counter. */
void ofi_mr_map_event(struct ofi_mr_map *map, struct ofi_mr_entry *entry,
		      uint64_t access);
int ofi_mr_map_bind_cntr(struct ofi_mr_map *map, uint64_t key,
			 struct util_cntr *cntr, uint64_t flags);
/* A closing counter leaves every registration it was bound to. */
void ofi_mr_map_unbind_cntr(struct ofi_mr_map *map, struct util_cntr *cntr);
/* Whether some registration has a counter bound; without the lock, so
 * only a hint (a counter bound while a write lands may miss it). */
static inline bool ofi_mr_map_counted(struct ofi_mr_map *map)
{
	return __atomic_load_n(&map->bound, __ATOMIC_RELAXED) != 0;
}
/*
 * Makes [addr, addr + len) of persistent registration @key durable: the key
 * and range are checked as for RMA (map's addressing mode), a bad key, a
 * range outside the registration or a registration made without
 * FI_RMA_PMEM answer -FI_EACCES; the entry is held (ofi_mr_map_get) while
 * libpmem runs, so a concurrent close waits. 0 or a negative fi_errno.
 * This is the target side of fi_commit.
 */
int ofi_mr_map_persist(struct ofi_mr_map *map, uint64_t key, uint64_t addr,
		       size_t len);
/* The same on an entry held with ofi_mr_map_get; @addr already translated. */
int ofi_mr_entry_persist(const struct ofi_mr_entry *entry, uintptr_t addr,
			 size_t len);

/*
 * Target side of fi_commit (util_commit.c): checks every range (a bad key,
 * range or a registration without FI_RMA_PMEM: -FI_EACCES), then persists
 * them, or on an FI_COMMIT_MANUAL endpoint delivers an FI_COMMIT event to
 * its EQ and returns the application's answer. 0 or a negative fi_errno.
 */
struct util_ep;
struct fi_rma_iov;
#define OFI_COMMIT_IOV_MAX 4
int ofi_commit_target(struct util_ep *ep, const struct fi_rma_iov *iov,
		      size_t count, uint64_t flags);
/*
 * FI_COMMIT_COMPLETE into a receive buffer: ofi_iov_pmem records, from
 * their descriptors, how each of @count iovs is made durable
 * (OFI_PMEM_NONE without a persistent registration); ofi_iov_persist makes
 * [@off, @off + @len) of them durable where they are persistent. 0 or a
 * negative fi_errno.
 */
void ofi_iov_pmem(uint8_t *pmem, void **desc, size_t count);
int ofi_iov_persist(const struct iovec *iov, const uint8_t *pmem, size_t count,
		    size_t off, size_t len);
/* FI_COMMIT_COMPLETE on bytes written into a held entry: durable if it is
 * a persistent registration, nothing to do otherwise. */
int ofi_commit_complete(const struct ofi_mr_entry *entry, uintptr_t addr,
			size_t len);

/* libpmem behind the MR map (util_pmem.c). */
/* OFI_PMEM_FLUSH/MSYNC for @iov, or -FI_EBADFLAGS when built without it. */
int ofi_pmem_classify(const struct iovec *iov, size_t count);
int ofi_pmem_persist(enum ofi_pmem_kind kind, const void *addr, size_t len);
/* Tests only: called with every range handed to libpmem, after alignment. */
typedef void (*ofi_pmem_hook_t)(enum ofi_pmem_kind kind, const void *addr,
				size_t len);
void ofi_pmem_set_test_hook(ofi_pmem_hook_t hook);
int ofi_mr_mode_normalize(int mode);

/* ------------------------------------------------------------------ */
/* Domain.                                                              */

struct util_eq;

struct util_domain {
	struct fid_domain domain_fid;
	struct util_fabric *fabric;
	const struct fi_provider *prov;
	struct fi_info *info;	     /* private copy of the opening info */
	struct fi_domain_attr *attr; /* == info->domain_attr */
	enum fi_threading threading;
	int mr_mode;
	uint32_t addr_format;
	ofi_atomic32_t ref; /* endpoints, CQs, cntrs, AVs, MRs */
	ofi_mutex_t lock;
	struct dlist_entry list_entry; /* in fabric->domain_list */
	struct util_eq *eq;
	uint64_t eq_flags;
	struct ofi_mr_map mr_map;
	struct ofi_hmem_override hmem_override;
	/* Set once the first endpoint is enabled: overrides are frozen. */
	bool override_locked;
	/* The provider offers triggered operations and deferred work
	 * (ofi_trigger.h): FI_QUEUE_WORK answered, FI_TRIGGER honoured. */
	bool trig;
	/* Its enabled endpoints (struct util_ep_ref): what completes the
	 * remote accesses an MR counts into a counter, and the
	 * completions those need (ofi_cntr_progress). */
	ofi_mutex_t ep_lock;
	struct dlist_entry ep_list;
};

extern const struct fi_ops ofi_domain_fi_ops;
extern const struct fi_ops_mr ofi_domain_mr_ops;

int ofi_domain_init(struct util_fabric *fabric, const struct fi_info *info,
		    struct util_domain *domain, void *context);
int ofi_domain_close(struct util_domain *domain);
int ofi_domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int ofi_domain_ops_set(struct fid *fid, const char *name, uint64_t flags,
		       void *ops, void *context);
/* Copy overrides: fi_set_op / FI_SET_OPS_HMEM_OVERRIDE on the domain. */
#if OFI_HAVE_EXT_SLOTS
int ofi_domain_op_set(struct fid *fid, enum fi_set_op op,
		      union fi_override_op *fn, uint64_t flags);
#endif

static inline void ofi_domain_lock(struct util_domain *d)
{
	ofi_mutex_lock(&d->lock);
}

static inline void ofi_domain_unlock(struct util_domain *d)
{
	ofi_mutex_unlock(&d->lock);
}

/* ------------------------------------------------------------------ */
/* Memory regions.                                                      */

struct util_mr {
	struct fid_mr mr_fid;
	struct util_domain *domain;
	uint64_t access;
	uint64_t flags;
	enum fi_hmem_iface iface;
	uint64_t device;
	struct fid_ep *ep;	 /* FI_MR_ENDPOINT binding */
	enum ofi_pmem_kind pmem; /* FI_RMA_PMEM: how it is made durable */
};

int ofi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		   uint64_t flags, struct fid_mr **mr);
int ofi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		uint64_t access, uint64_t offset, uint64_t requested_key,
		uint64_t flags, struct fid_mr **mr, void *context);
int ofi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
	       uint64_t offset, uint64_t requested_key, uint64_t flags,
	       struct fid_mr **mr, void *context);

/* The desc handed out by fi_mr_desc() is the util_mr itself. */
static inline struct util_mr *ofi_mr_from_desc(void *desc)
{
	return (struct util_mr *)desc;
}

/*
 * The memory interface of a user iov: from the MR descriptor of its first
 * element; without one, system memory unless @detect (FI_HMEM with a
 * device interface up: we do not require FI_MR_HMEM) and src/hmem finds
 * the address on a device.
 */
static inline void ofi_iov_iface(bool detect, void **desc,
				 const struct iovec *iov, size_t count,
				 enum fi_hmem_iface *iface, uint64_t *device)
{
	struct util_mr *mr;

	*iface = FI_HMEM_SYSTEM;
	*device = 0;
	if (desc && count && desc[0]) {
		mr = ofi_mr_from_desc(desc[0]);
		*iface = mr->iface;
		*device = mr->device;
	} else if (OFI_UNLIKELY(detect) && count) {
		*iface = ofi_get_hmem_iface(iov[0].iov_base, device, NULL);
		if (*iface == FI_HMEM_SYSTEM)
			*device = 0;
	}
}

/* ------------------------------------------------------------------ */
/* Completion queues.                                                   */

struct util_ep;

struct util_cq_err {
	struct fi_cq_err_entry entry;
	fi_addr_t src_addr;
};

struct util_cq_slot {
	struct fi_cq_tagged_entry comp;
	fi_addr_t src_addr;
	struct util_cq_err *err; /* non-NULL: this slot is an error */
	bool quiet;		 /* written with OFI_CQ_QUIET */
};

/*
 * In the flags of a CQ write (never reported): the op finished within
 * the call that posted it and left the provider nothing to do, so a read
 * may return the entry without a progress pass first.
 */
#define OFI_CQ_QUIET (1ULL << 61)

/* An endpoint bound to a CQ or counter; drives manual progress. */
struct util_ep_ref {
	struct dlist_entry entry;
	struct util_ep *ep;
};

struct util_cq {
	struct fid_cq cq_fid;
	struct util_domain *domain;
	struct util_wait *wait;
	enum fi_cq_format format;
	enum fi_cq_wait_cond wait_cond;
	size_t entry_size;
	size_t size; /* attr size, grows past it on overrun */
	ofi_mutex_t lock;
	/*
	 * lock and ep_lock are not taken: the domain is FI_THREAD_DOMAIN,
	 * so the application serializes every call that reaches the CQ,
	 * and no thread of ours reaches it either (cleared for good once
	 * a bound endpoint has a progress thread or an EQ, whose reader
	 * may drive it from another thread: ofi_cq_shared).
	 */
	bool serial;
	ofi_atomic32_t ref; /* endpoints bound */
	bool overrun_logged;
	bool signaled;
	/* FIFO ring: capacity cap, count entries from head */
	struct util_cq_slot *ring;
	size_t cap;
	size_t head;
	size_t count;
	size_t quiet; /* entries queued with OFI_CQ_QUIET */
	/* err_data of the last error read with err_data_size 0 */
	void *err_data;
	ofi_mutex_t ep_lock;
	struct dlist_entry ep_list;
};

extern const struct fi_ops ofi_cq_fi_ops;
extern const struct fi_ops_cq ofi_cq_ops;

int ofi_cq_init(struct util_domain *domain, struct fi_cq_attr *attr,
		struct util_cq *cq, void *context);
int ofi_cq_close(struct util_cq *cq);
/* Allocates a util_cq with the default ops (what most providers need). */
int ofi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq, void *context);

int ofi_cq_write(struct util_cq *cq, void *context, uint64_t flags, size_t len,
		 void *buf, uint64_t data, uint64_t tag);
int ofi_cq_write_src(struct util_cq *cq, void *context, uint64_t flags,
		     size_t len, void *buf, uint64_t data, uint64_t tag,
		     fi_addr_t src_addr);
int ofi_cq_write_error(struct util_cq *cq, const struct fi_cq_err_entry *err);
/* Shorthand for an error with just a code (positive fi_errno). */
int ofi_cq_write_error_code(struct util_cq *cq, void *context, uint64_t flags,
			    int err, int prov_errno, size_t olen);
void ofi_cq_progress(struct util_cq *cq);
size_t ofi_cq_count(struct util_cq *cq);
/* A thread other than the application's may reach @cq from now on. */
void ofi_cq_shared(struct util_cq *cq);

/* ------------------------------------------------------------------ */
/* Event queues.                                                        */

struct util_eq_event {
	struct dlist_entry entry;
	uint32_t event;
	bool is_err;
	size_t size;
	void *err_data; /* error events: owned copy */
	uint8_t data[];
};

/*
 * Event handlers (fi_eq_register_handler, an extension): one slot per event
 * type, FI_NOTIFY .. FI_COMMIT. The type mirrors fi_eq_event_handler_t so the
 * layer also builds against headers without the extension.
 */
#define OFI_EQ_MAX_HANDLERS 8

typedef ssize_t (*ofi_eq_handler_t)(struct fid_eq *eq, uint64_t event_type,
				    void *event_data, uint64_t len,
				    void *context);

struct util_eq_handler {
	ofi_eq_handler_t fn;
	void *context;
	uint64_t gen;	/* bumped by every registration */
	uint32_t busy;	/* calls running the current registration */
	uint32_t stale; /* calls running a replaced registration */
};

struct util_eq {
	struct fid_eq eq_fid;
	struct util_fabric *fabric;
	struct util_wait *wait;
	uint64_t flags; /* attr flags (FI_WRITE) */
	size_t size;
	size_t count;
	/* Queues and handler table; a pthread mutex for the idle wait. */
	pthread_mutex_t lock;
	ofi_atomic32_t ref; /* objects bound */
	struct dlist_entry list;
	struct dlist_entry err_list;
	void *err_data; /* err_data of the last readerr with size 0 */
	/* Handlers run without lock held; these let close and re-registration
	 * wait for the calls in flight. */
	struct util_eq_handler handlers[OFI_EQ_MAX_HANDLERS];
	uint32_t inflight;   /* handler calls running, all types */
	bool closing;	     /* close started: no new handler calls */
	pthread_cond_t idle; /* signalled when a handler call ends */
	/* Objects whose connection progress reads of this EQ drive. */
	pthread_mutex_t prog_lock;    /* recursive */
	struct dlist_entry prog_list; /* struct util_eq_prog */
};

/*
 * Connection management progress (FI_PROGRESS_MANUAL control): a provider
 * object (passive or connection-oriented endpoint) on an EQ's list is
 * progressed by every fi_eq_read, fi_eq_readerr and fi_eq_sread of that
 * EQ, without the EQ lock held (it may write events). An object takes
 * itself off before it is freed; add and del take prog_lock, so must not
 * be called from a progress callback.
 */
struct util_eq_prog {
	struct dlist_entry entry;
	void (*progress)(struct util_eq_prog *prog);
	/* The endpoint whose fds announce its work, armed by fi_trywait on
	 * the EQ; NULL: none does, a sleeper on the EQ's fd naps, unless a
	 * thread of the object's own drives it (auto_progress, atomic). */
	struct util_ep *ep;
	bool auto_progress;
};

void ofi_eq_prog_add(struct util_eq *eq, struct util_eq_prog *prog);
void ofi_eq_prog_del(struct util_eq *eq, struct util_eq_prog *prog);
/* The progress an EQ read drives, without reading (fi_trywait). */
void ofi_eq_progress(struct util_eq *eq);

extern const struct fi_ops ofi_eq_fi_ops;
extern const struct fi_ops_eq ofi_eq_ops;

int ofi_eq_init(struct util_fabric *fabric, struct fi_eq_attr *attr,
		struct util_eq *eq, void *context);
int ofi_eq_close(struct util_eq *eq);
int ofi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq, void *context);
/* Provider events bypass the FI_WRITE check and the size limit. */
ssize_t ofi_eq_write(struct util_eq *eq, uint32_t event, const void *buf,
		     size_t len);
/*
 * Provider events go through the handler registered for their type, if any.
 * ofi_eq_deliver answers OFI_EQ_HANDLED with the handler's return value in
 * *answer (which may be NULL), OFI_EQ_QUEUED when the event was queued for
 * fi_eq_read, or a negative fi_errno when it could do neither. flags must be
 * 0. ofi_eq_write is ofi_eq_deliver without the answer.
 */
enum { OFI_EQ_QUEUED = 0, OFI_EQ_HANDLED = 1 };
ssize_t ofi_eq_deliver(struct util_eq *eq, uint32_t event, const void *buf,
		       size_t len, uint64_t flags, ssize_t *answer);
int ofi_eq_set_handler(struct util_eq *eq, uint64_t event_type,
		       ofi_eq_handler_t handler, void *context);
ssize_t ofi_eq_write_error(struct util_eq *eq, fid_t fid, void *context,
			   uint64_t data, int err, int prov_errno,
			   const void *err_data, size_t err_data_size);

/* ------------------------------------------------------------------ */
/* Counters.                                                            */

struct util_cntr {
	struct fid_cntr cntr_fid;
	struct util_domain *domain;
	struct util_wait *wait;
	ofi_atomic64_t cnt;
	ofi_atomic64_t err;
	ofi_atomic32_t ref;
	ofi_mutex_t ep_lock;
	struct dlist_entry ep_list;
	/* Values at the last fi_poll report or fi_cntr_add/set (poll sets). */
	ofi_atomic64_t poll_cnt;
	ofi_atomic64_t poll_err;
	/* Value the last fi_cntr_read saw: the same again is an idle poll. */
	ofi_atomic64_t read_seen;
	/* Triggered operations and deferred work waiting on this counter
	 * (ofi_trigger.h): nonzero makes each change look at them. */
	ofi_atomic32_t trig_cnt;
	/* An MR counts remote accesses into it (fi_mr_bind): its readers
	 * progress the domain's endpoints too. Never cleared. */
	bool mr_fed;
};

extern const struct fi_ops ofi_cntr_fi_ops;
extern const struct fi_ops_cntr ofi_cntr_ops;

int ofi_cntr_init(struct util_domain *domain, struct fi_cntr_attr *attr,
		  struct util_cntr *cntr, void *context);
int ofi_cntr_close(struct util_cntr *cntr);
int ofi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context);
void ofi_cntr_inc(struct util_cntr *cntr);
void ofi_cntr_inc_err(struct util_cntr *cntr);
void ofi_cntr_progress(struct util_cntr *cntr);
/* An MR counts remote accesses into @cntr (see ofi_cntr_progress). */
void ofi_cntr_mr_bound(struct util_cntr *cntr);
/* ofi_ep_refs_fds and ofi_wait_arm over the endpoints that complete what
 * @cntr counts: those bound to it, and those ofi_cntr_progress adds. */
int ofi_cntr_fds(struct util_cntr *cntr, struct pollfd *fds, nfds_t *n, int st);
int ofi_cntr_arm(struct util_cntr *cntr);

/* ------------------------------------------------------------------ */
/* Address vectors.                                                     */

struct util_av;

/*
 * What an endpoint caches per address is invalidated through these, in
 * one place: util_av calls them for every endpoint bound to it, under the
 * AV lock, so they must not take locks the data path holds while calling
 * into the AV (an endpoint's own lock); record the event and act on it
 * under that lock later. Either pointer may be NULL.
 */
struct ofi_av_ep_ops {
	/* fi_av_remove took @addr out; it may soon name another peer. */
	void (*removed)(struct util_ep *ep, fi_addr_t addr);
	/* An insert filled @addr; @reused: a removed address held it. */
	void (*inserted)(struct util_ep *ep, fi_addr_t addr, bool reused);
};

/*
 * What a provider tells the AV about its addresses.  Every slot stores
 * addrlen bytes; FI_ADDR_STR AVs store the NUL-padded string.
 */
struct util_av_attr {
	size_t addrlen;
	/* 0 if @addr is acceptable, else a negative fi_errno. */
	int (*validate)(struct util_av *av, const void *addr);
	/* insertsvc/insertsym: build an address from node and service. */
	int (*svc_to_addr)(struct util_av *av, const char *node,
			   const char *service, void *addr);
	/* NULL: hex dump (binary) or the string itself (FI_ADDR_STR). */
	const char *(*straddr)(struct util_av *av, const void *addr, char *buf,
			       size_t *len);
	/* Scalable endpoints: the most fi_av_attr.rx_ctx_bits taken (the
	 * provider strips them off fi_rx_addr's addresses); 0: none. */
	int max_rx_ctx_bits;
	/* Named AVs shared between processes (FI_SHARED_AV) taken. */
	bool shared;
};

struct util_av {
	struct fid_av av_fid;
	struct util_domain *domain;
	struct util_av_attr prov_attr;
	enum fi_av_type type;
	uint64_t flags;
	uint32_t addr_format;
	int rx_ctx_bits;	      /* fi_rx_addr's: top bits of an fi_addr */
	struct ofi_av_shared *shared; /* a named AV's object, or NULL */
	struct util_eq *eq;
	ofi_mutex_t lock;
	ofi_atomic32_t ref; /* endpoints bound */
	size_t stride;	    /* bytes per slot */
	size_t cap;
	size_t count;	  /* live entries */
	size_t free_hint; /* no free slot below this */
	uint8_t *slots;
	/* reverse lookup: hash chains of slot indices, -1 terminated */
	int64_t *buckets;
	size_t nbuckets;
	/* Bound endpoints with ofi_av_ep_ops (struct util_ep.av_entry). */
	struct dlist_entry ep_list;
};

extern const struct fi_ops ofi_av_fi_ops;
extern const struct fi_ops_av ofi_av_ops;

int ofi_av_init(struct util_domain *domain, struct fi_av_attr *attr,
		const struct util_av_attr *prov_attr, struct util_av *av,
		void *context);
int ofi_av_close(struct util_av *av);

/*
 * util_av_shared.c: a named AV's shared memory object (FI_SHARED_AV).
 * util_av.c writes a writer's changes through (ofi_av_shared_set, NULL
 * for a removal) and brings a reader's slots up to date before it reads
 * one (ofi_av_shared_changed, _get per slot, then _synced).
 */
int ofi_av_shared_open(struct util_av *av, const char *name, bool readonly,
		       size_t cap);
void ofi_av_shared_close(struct util_av *av);
size_t ofi_av_shared_cap(const struct util_av *av);
/* The object's fi_addr_t per slot, returned as fi_av_attr.map_addr. */
void *ofi_av_shared_map_addr(const struct util_av *av);
bool ofi_av_shared_readonly(const struct util_av *av);
void ofi_av_shared_set(struct util_av *av, size_t i, const void *addr);
bool ofi_av_shared_changed(const struct util_av *av, uint64_t *gen);
bool ofi_av_shared_get(const struct util_av *av, size_t i, void *addr);
void ofi_av_shared_synced(struct util_av *av, uint64_t gen);
int ofi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		const struct util_av_attr *prov_attr, struct fid_av **av,
		void *context);
/* Copies the address of @fi_addr into @addr (addrlen bytes); data path. */
int ofi_av_get_addr(struct util_av *av, fi_addr_t fi_addr, void *addr);
/* Address (stored format) -> fi_addr; FI_ADDR_NOTAVAIL if not inserted. */
fi_addr_t ofi_av_reverse_lookup(struct util_av *av, const void *addr);
/* What a completion reports as source: the FI_AV_USER_ID id if one. */
fi_addr_t ofi_av_src_addr(struct util_av *av, const void *addr);
int ofi_av_insert_addr(struct util_av *av, const void *addr,
		       fi_addr_t *fi_addr);
/* fi_query_collective(3) of the collective engine (ofi_coll.h). */
int ofi_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			 struct fi_collective_attr *attr, uint64_t flags);
/* fi_av_set(3) on a util_av (prov/util/util_av_set.c). */
int ofi_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
	       struct fid_av_set **set, void *context);

/* ------------------------------------------------------------------ */
/* Endpoints.                                                           */

enum ofi_cntr_index {
	OFI_CNTR_TX,
	OFI_CNTR_RX,
	OFI_CNTR_RD,
	OFI_CNTR_WR,
	OFI_CNTR_REM_RD,
	OFI_CNTR_REM_WR,
	OFI_CNTR_CNT
};

typedef void (*ofi_ep_progress_t)(struct util_ep *ep);

struct util_ep {
	struct fid_ep ep_fid;
	struct util_domain *domain;
	struct fi_info *info; /* private copy */
	enum fi_ep_type type;
	uint64_t caps;
	uint64_t tx_op_flags;
	uint64_t rx_op_flags;
	/* What the plain calls need beyond the op flags (ofi_plain.h): a
	 * default FI_INJECT holds for up to inject_size bytes, and a call
	 * with more than iov_limit iovs is not read. ofi_ep_init takes them
	 * from the info; a provider sets its own limits after it. */
	size_t inject_size;
	size_t iov_limit;
	size_t min_multi_recv;
	struct util_av *av;
	struct util_eq *eq;
	struct util_cq *tx_cq;
	struct util_cq *rx_cq;
	uint64_t tx_cq_flags; /* FI_SELECTIVE_COMPLETION */
	uint64_t rx_cq_flags;
	struct util_cntr *cntrs[OFI_CNTR_CNT];
	struct util_ep_ref cq_refs[2];
	struct util_ep_ref cntr_refs[OFI_CNTR_CNT];
	struct util_ep_ref dom_ref; /* on domain->ep_list, once enabled */
	/* Written under @lock by fi_enable, read by progress threads under
	 * a provider's own lock: through ofi_ep_enabled/ofi_ep_set_enabled */
	bool enabled;
	/*
	 * A scalable endpoint's context enables with no CQ or counter bound:
	 * its completions are not reported (Open MPI's btl/ofi opens receive
	 * contexts it never uses that way, as Debian's sockets allows).
	 */
	bool comp_optional;
	ofi_mutex_t lock;
	ofi_ep_progress_t progress;
	/* Optional provider hook run by FI_ENABLE after util's checks. */
	int (*enable)(struct util_ep *ep);
	/* Set before fi_ep_bind(av): the AV reports removals and reuse. */
	const struct ofi_av_ep_ops *av_ops;
	struct dlist_entry av_entry; /* in av->ep_list while bound */
	bool detached;
	/* Bindings borrowed from an owner (ofi_ep_share): no references;
	 * events name the owner's fid. */
	bool shared;
	struct util_ep *owner;
	/* Optional: an fd readable when progress has work (a socket
	 * provider's epoll set), so blocking reads sleep on it; negative
	 * when some of its work wakes no fd (they poll then). */
	int (*wait_fd)(struct util_ep *ep);
	/* wait_fd misses some of its work (tcp's same-host path): an
	 * application asleep on a CQ's fd naps (ofi_wait_arm). */
	bool wait_nap;
	/*
	 * Optional, with wait_fd: its reader is about to sleep on wait_fd
	 * (a blocking read, or fi_trywait), called under the CQ's or
	 * counter's ep_lock. The endpoint arms what makes wait_fd readable
	 * and answers an enum ofi_ep_wait. Without it the fd naps
	 * (OFI_EP_POLL_NAP_MS slices) as wait_nap says.
	 */
	int (*wait_arm)(struct util_ep *ep);
	/* A provider thread progresses it (FI_PROGRESS_AUTO): blocking
	 * reads sleep on their wait object, which its completions signal,
	 * instead of polling its fd or napping to drive it. */
	bool auto_progress;
	/* That thread (ofi_progress.h), which they rouse before they sleep
	 * (ofi_ep_refs_rouse); set by ofi_ep_set_progress only. */
	struct ofi_progress *auto_prog;
	/* Under manual progress, a provider thread may still drive it now
	 * and then (tcp's flusher): set before fi_enable, it keeps the
	 * locks FI_THREAD_DOMAIN would drop (ofi_ep_shared). */
	bool side_thread;
	/* Shared contexts bound (fi_srx_context, fi_stx_context): the
	 * srx's queue takes this endpoint's messages (ofi_match.h). */
	struct util_srx *srx;
	struct dlist_entry srx_entry; /* in srx->ep_list, under srx->lock */
	struct util_stx *stx;
	/* The collective engine's state (FI_COLLECTIVE, ofi_coll.h). */
	struct ofi_coll_ep *coll;
	/* Optional: a group's memory shared with peers (ofi_coll.h). */
	const struct ofi_coll_shared *coll_shared;
	/* Every write to a peer is a socket's send and receive: members
	 * pinned to one CPU fold into one (ofi_coll_leaders). */
	bool coll_fold_cpus;
	/* Wrapped data calls for FI_TRIGGER and FI_FENCE (ofi_trigger.h). */
	struct ofi_trig_ep *trig;
	/* Optional, for FI_FENCE: whether transmits are still in flight;
	 * takes the provider's lock itself. */
	bool (*tx_busy)(struct util_ep *ep);
};

extern const struct fi_ops ofi_ep_fi_ops;
extern const struct fi_ops_ep ofi_ep_ops;

/*
 * A thread other than the application's may drive @ep once enabled: its
 * progress thread or side thread, or an EQ's reader (tcp's connection
 * work and the collective engine progress from fi_eq_read).
 * FI_THREAD_DOMAIN serializes none of them with the domain's calls, so
 * what @ep touches keeps its locks. Providers add the sharing only they
 * know of.
 */
static inline bool ofi_ep_shared(const struct util_ep *ep)
{
	return ep->auto_progress || ep->side_thread || ep->eq;
}

int ofi_ep_init(struct util_domain *domain, const struct fi_info *info,
		struct util_ep *ep, ofi_ep_progress_t progress, void *context);
/* An endpoint-like fid (endpoint, shared context) with @ops and every
 * data-transfer interface answering -FI_ENOSYS. */
void ofi_ep_fid_init(struct fid_ep *fid, size_t fclass, void *context,
		     const struct fi_ops *fi_ops, const struct fi_ops_ep *ops);

/*
 * A shared transmit context (fi_stx_context): endpoints bound to it keep
 * transmitting through their own queues and completing to their own CQs
 * (what fi_endpoint(3) allows); it counts them, so it closes last.
 */
struct util_stx {
	struct fid_stx stx_fid;
	struct util_domain *domain;
	ofi_atomic32_t ref; /* endpoints bound */
};

int ofi_stx_context(struct fid_domain *domain, struct fi_tx_attr *attr,
		    struct fid_stx **stx, void *context);
/*
 * Close, first half: takes @ep off its CQs', counters' and AV's lists
 * under the locks their progress and callbacks run under, so once it
 * returns no fi_cq_read / fi_cntr_read in another thread reaches @ep and
 * the provider may tear it down. Idempotent; ofi_ep_close() calls it.
 */
void ofi_ep_detach(struct util_ep *ep);
/*
 * Blocking reads of a CQ or counter: when every endpoint on @list (struct
 * util_ep_ref, under @lock) names a wait_fd, sleeps in poll() on them for
 * at most @left ms (<0: no limit), in slices of OFI_EP_POLL_NAP_MS so
 * that completions another thread writes and signals are still seen, and
 * returns true; false when it cannot (an endpoint without one, too many)
 * or need not (every endpoint has auto_progress; those are skipped).
 */
#define OFI_EP_POLL_NAP_MS 10
/*
 * What an endpoint's wait_arm answers: work is there (do not sleep); its
 * work needs polling now (nap, no fd); its fd fires for most of its work
 * (sleep on it in naps of OFI_EP_POLL_NAP_MS); the fd fires for all its
 * work, so the reader sleeps until it does (slices of
 * OFI_EP_POLL_LONG_MS bound what a lost wakeup could cost).
 */
enum ofi_ep_wait {
	OFI_EP_WAIT_BUSY,
	OFI_EP_WAIT_POLL,
	OFI_EP_WAIT_NAP,
	OFI_EP_WAIT_SOUND,
};
#define OFI_EP_POLL_LONG_MS 1000
/*
 * Also polls @wait's eventfd, and returns at once (true) when @wait's
 * sequence moved past @seen, so that a completion another thread signals
 * ends the sleep. Only endpoints whose wait_arm answers
 * OFI_EP_WAIT_SOUND, on an object with an eventfd, sleep past the nap.
 */
bool ofi_ep_refs_poll(struct util_wait *wait, uint64_t seen, ofi_mutex_t *lock,
		      struct dlist_entry *list, int left);
/* Most endpoint fds one blocking read or fi_wait sleeps on. */
#define OFI_EP_POLL_MAX 64
/*
 * Appends to @fds (*@n entries so far, room for OFI_EP_POLL_MAX) the fd
 * of each manual endpoint on @list, armed (wait_arm; without one an fd
 * naps), and returns @st lowered to the enum ofi_ep_wait of the list:
 * POLL as soon as one has no fd or there is no room, BUSY as soon as one
 * has work, NAP if one naps, else @st.
 */
int ofi_ep_refs_fds(ofi_mutex_t *lock, struct dlist_entry *list,
		    struct pollfd *fds, nfds_t *n, int st);
/*
 * The sleep of ofi_ep_refs_poll on @n gathered @fds (room for one more:
 * @wait's eventfd) whose merged answer is @st.
 */
bool ofi_ep_fds_sleep(struct util_wait *wait, uint64_t seen, struct pollfd *fds,
		      nfds_t n, int st, int left);
/*
 * Wakes every blocking read, fi_wait and fi_trywait sleeper of @ep's CQs
 * and counters (their wait objects' sequence moves, so one about to sleep
 * does not): its fd stopped announcing something it armed it for (a
 * socket set's quiet connection), so they progress and arm again.
 */
void ofi_ep_wake_waits(struct util_ep *ep);
/* A blocking read enters (@delta 1; false: @seen is stale) or leaves
 * (-1) its poll() on @wait's eventfd. */
bool ofi_wait_sleeper(struct util_wait *wait, uint64_t seen, int delta);
/*
 * A provider driven by another's endpoint (shm under tcp) completes
 * through @owner's CQs, counters and EQ: copies them into @ep, enabled,
 * without references or progress registration; @ep closes before @owner.
 */
void ofi_ep_share(struct util_ep *ep, const struct util_ep *owner);
/*
 * Scalable endpoints (fi_scalable_ep(3)), what every provider's share:
 * the SEP's table of contexts by index (ofi_sep_slots, under the SEP's
 * lock: init takes ep_attr's counts, 0 meaning 1, past OFI_SEP_CTX_MAX
 * -FI_EINVAL; check refuses an index past the count; take puts @c at
 * its index or answers -FI_EBUSY; drop takes @c out; next walks the
 * contexts, transmit ones first); ofi_ctx_info is a context's fi_info,
 * the SEP's @sep with the fi_tx_attr / fi_rx_attr @attr's caps (a
 * subset, else NULL), op flags and size; ofi_ctx_msg_ops /
 * ofi_ctx_tagged_ops fill @out with @all's calls of one direction (@tx:
 * the sends), the other direction's -FI_ENOSYS.
 */
#define OFI_SEP_CTX_MAX 16
struct ofi_sep_slots {
	struct util_ep *tx[OFI_SEP_CTX_MAX];
	struct util_ep *rx[OFI_SEP_CTX_MAX];
	size_t tx_cnt, rx_cnt; /* ep_attr's counts */
	size_t open;	       /* contexts open */
};
int ofi_sep_slots_init(struct ofi_sep_slots *s, const struct fi_info *info);
int ofi_sep_slot_check(const struct ofi_sep_slots *s, int index, bool tx);
int ofi_sep_slot_take(struct ofi_sep_slots *s, int index, bool tx,
		      struct util_ep *c);
void ofi_sep_slot_drop(struct ofi_sep_slots *s, const struct util_ep *c);
struct util_ep *ofi_sep_slot_next(const struct ofi_sep_slots *s, size_t *i);
struct fi_info *ofi_ctx_info(const struct fi_info *sep, bool tx,
			     const void *attr);
void ofi_ctx_msg_ops(const struct fi_ops_msg *all, bool tx,
		     struct fi_ops_msg *out);
void ofi_ctx_tagged_ops(const struct fi_ops_tagged *all, bool tx,
			struct fi_ops_tagged *out);
/* FI_ENABLE of a SEP (its own or a context's): @sep->enable once, when
 * @ready (it has what its type needs, -FI_ENOAV otherwise). */
int ofi_sep_enable(struct util_ep *sep, bool ready);
/* Context @c takes its SEP's AV, held but not on the AV's endpoint list
 * (removals reach the SEP), unless it has one or is enabled. */
void ofi_ctx_take_av(struct util_ep *c, const struct util_ep *sep);
/* The same for every context in @s (under the SEP's lock). */
void ofi_sep_share_av(const struct ofi_sep_slots *s, const struct util_ep *sep);
/* One progress pass of every endpoint on @list (under @lock). */
void ofi_ep_refs_progress(ofi_mutex_t *lock, struct dlist_entry *list);
/* Whether an endpoint on @list needs its reader to drive its progress
 * (not auto_progress): blocking reads then sleep in short naps. */
bool ofi_ep_refs_manual(ofi_mutex_t *lock, struct dlist_entry *list);
/*
 * A reader of the CQ or counter whose endpoints are @list is about to
 * sleep: the progress threads of those with one stop standing down
 * (ofi_progress_rouse), so that they complete what it waits for as soon
 * as it arrives. (ofi_ep_refs_fds does the same for a reader that sleeps
 * on manual endpoints' fds beside them.)
 */
void ofi_ep_refs_rouse(ofi_mutex_t *lock, struct dlist_entry *list);
/*
 * Names @prog as @ep's progress thread (NULL: none any more). Readers
 * use ep->auto_prog under the ep_lock of a CQ or counter @ep is bound
 * to: clearing it passes every such lock, so that once it returns no
 * reader uses the thread and the provider may stop it.
 */
void ofi_ep_set_progress(struct util_ep *ep, struct ofi_progress *prog);
/* Rouses @ep's progress thread, if it has one (same locking as above). */
void ofi_ep_rouse(struct util_ep *ep);
/* Close, second half: drops the references the bindings hold. */
int ofi_ep_close(struct util_ep *ep);
int ofi_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int ofi_ep_control(struct fid *fid, int command, void *arg);
int ofi_ep_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen);
int ofi_ep_setopt(fid_t fid, int level, int optname, const void *optval,
		  size_t optlen);

/* Whether an op with @op_flags asks for a CQ entry on @cq_flags' side. */
static inline bool ofi_ep_wants_comp(uint64_t cq_flags, uint64_t op_flags)
{
	if (!(cq_flags & FI_SELECTIVE_COMPLETION))
		return true;
	return (op_flags & FI_COMPLETION) != 0;
}

/*
 * The default tx flags (fi_endpoint(3) op_flags) for a call moving @len
 * bytes: a default FI_INJECT holds for what fits @inject_size (the buffer
 * is the caller's again on return); a larger transfer, or a read
 * (@len SIZE_MAX), takes the ordinary path, as an explicit FI_INJECT on
 * it would be -FI_EINVAL.
 */
static inline uint64_t ofi_ep_tx_dflags(const struct util_ep *ep, size_t len,
					size_t inject_size)
{
	return len > inject_size ? ep->tx_op_flags & ~(uint64_t)FI_INJECT
				 : ep->tx_op_flags;
}

/* ep->enabled for readers that do not hold ep->lock (progress). */
static inline bool ofi_ep_enabled(const struct util_ep *ep)
{
	return __atomic_load_n(&ep->enabled, __ATOMIC_ACQUIRE);
}

static inline void ofi_ep_set_enabled(struct util_ep *ep, bool enabled)
{
	__atomic_store_n(&ep->enabled, enabled, __ATOMIC_RELEASE);
}

static inline void ofi_ep_cntr_inc(struct util_ep *ep, enum ofi_cntr_index i)
{
	if (ep->cntrs[i])
		ofi_cntr_inc(ep->cntrs[i]);
}

static inline void ofi_ep_cntr_inc_err(struct util_ep *ep,
				       enum ofi_cntr_index i)
{
	if (ep->cntrs[i])
		ofi_cntr_inc_err(ep->cntrs[i]);
}

/* Buffer copies between iovecs; return the bytes copied. */
/*
 * fi_getname(3)'s buffer rules for a provider whose address is @len bytes
 * at @name: -FI_ETOOSMALL with the needed size when the buffer is short.
 */
static inline int ofi_getname_copy(void *addr, size_t *addrlen,
				   const void *name, size_t len)
{
	if (!addrlen)
		return -FI_EINVAL;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, name, len);
	*addrlen = len;
	return 0;
}

size_t ofi_copy_to_iov(const struct iovec *iov, size_t count, size_t offset,
		       const void *buf, size_t len);
size_t ofi_copy_from_iov(void *buf, size_t len, const struct iovec *iov,
			 size_t count, size_t offset);
size_t ofi_total_iov_len(const struct iovec *iov, size_t count);

/* ofi_ep_tx_dflags for @count iovs (a bad @iov is the caller's to refuse). */
static inline uint64_t ofi_ep_tx_dflagsv(const struct util_ep *ep,
					 const struct iovec *iov, size_t count,
					 size_t iov_limit, size_t inject_size)
{
	return ofi_ep_tx_dflags(ep,
				iov && count <= iov_limit
					? ofi_total_iov_len(iov, count)
					: SIZE_MAX,
				inject_size);
}

/* err_data hand-over shared by CQ and EQ readerr (API >= 1.5 rules). */
void ofi_copy_err_data(uint32_t api_version, void **keep, void *src,
		       size_t src_size, void **user_data, size_t *user_size);

/* ================================================================== */
/* Poll sets (util_poll.c) and default source addresses (util_info.c). */
/* Poll sets and default source addresses. */

/*
 * A poll set over CQs and counters of one domain (fi_poll(3)). Members
 * hold a reference on their CQ or counter, and the set one on the domain,
 * so neither closes under the other.
 */
struct util_poll {
	struct fid_poll poll_fid;
	struct util_domain *domain;
	ofi_mutex_t lock;	    /* members, and fi_poll against del */
	struct dlist_entry members; /* struct util_poll_member */
};

struct util_poll_member {
	struct dlist_entry entry;
	struct fid *fid;
	bool reported; /* by the current fi_poll */
};

/* The fi_ops_domain poll_open of every util-based domain. */
int ofi_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset);

/*
 * fi_getinfo(3) results carry a source address even when the caller gave
 * neither node nor FI_SOURCE: the provider's default for that entry (shm:
 * a name endpoints derive theirs from; tcp: the interface, port 0).
 * @make allocates one with malloc for @fi; entries that already have a
 * source address keep it.
 */
typedef int (*ofi_src_addr_fn)(const struct fi_info *fi, void **addr,
			       size_t *addrlen, void *arg);
int ofi_info_default_src(struct fi_info *list, ofi_src_addr_fn make, void *arg);
/* Echoes the hints' mr_mode bits the provider honours, FI_COMMIT_MANUAL
 * with persistent memory, FI_COLLECTIVE on an RDM candidate with RMA when
 * asked for (util_info.c). */
void ofi_info_hint_modes(uint32_t version, const struct fi_info *hints,
			 struct fi_info *fi, int honoured, bool pmem);

/*
 * Capability sets every full-featured provider of this tree offers (shm,
 * tcp, sockets), so their candidate tables name them once. FI_RMA_PMEM
 * needs libpmem: a file using these includes config.h first.
 */
#if defined(HAVE_LIBPMEM) && HAVE_LIBPMEM
#define OFI_PMEM_CAPS FI_RMA_PMEM
#else
#define OFI_PMEM_CAPS 0
#endif
#define OFI_FULL_RMA_CAPS                                                      \
	(FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |            \
	 FI_REMOTE_WRITE | FI_RMA_EVENT | OFI_PMEM_CAPS)
/* FI_FENCE: util_trigger.c's, over the provider's util_ep.tx_busy. */
#define OFI_FULL_CAPS                                                          \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE |                  \
	 FI_DIRECTED_RECV | FI_MULTI_RECV | FI_REMOTE_CQ_DATA |                \
	 FI_LOCAL_COMM | FI_FENCE | OFI_FULL_RMA_CAPS)
#define OFI_FULL_TX_CAPS                                                       \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_ATOMIC | FI_READ |         \
	 FI_WRITE | FI_FENCE | OFI_PMEM_CAPS)
#define OFI_FULL_RX_CAPS                                                       \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV |         \
	 FI_MULTI_RECV | FI_RMA | FI_ATOMIC | FI_REMOTE_READ |                 \
	 FI_REMOTE_WRITE | FI_RMA_EVENT | OFI_PMEM_CAPS)
/* Default op flags an application may ask for in the hints. */
#define OFI_FULL_TX_OP_FLAGS                                                   \
	(FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |           \
	 FI_DELIVERY_COMPLETE | (OFI_PMEM_CAPS ? FI_COMMIT_COMPLETE : 0))
#define OFI_FULL_RX_OP_FLAGS (FI_COMPLETION | FI_MULTI_RECV)

/*
 * What a provider's getinfo brings to ofi_info_build: how node/service
 * and the hints' addresses become addresses of a candidate's format, its
 * default source address, the mr_mode bits it honours when asked, whether
 * it offers persistent memory, whether it runs either progress model
 * (then the hints' explicit choice is answered as asked), and the
 * capabilities it reports only to hints that ask for them.
 */
struct ofi_info_addr_ops {
	/* node and/or service (either may be NULL) for @fi's format */
	int (*resolve)(const struct fi_info *fi, const char *node,
		       const char *service, void **addr, size_t *len);
	/* a hint's address (given in @hint_format) checked and copied */
	int (*hint)(const struct fi_info *fi, uint32_t hint_format,
		    const void *src, size_t src_len, void **addr, size_t *len);
	ofi_src_addr_fn default_src;
	void *arg; /* default_src's */
	int mr_honoured;
	bool pmem;
	bool any_progress;
	/* Secondary caps that cost on the data path (FI_FENCE wraps the
	 * endpoint's calls, util_trigger.c) or change what completions say
	 * (FI_SOURCE_ERR): dropped unless the hints' caps, tx or rx caps
	 * ask for them. */
	uint64_t on_request;
};

/*
 * Fills candidate @fi (a copy of the provider's template, already trimmed
 * to its endpoint type) from the hints and node/service: modes, progress,
 * src/dest addresses (node/service go to src_addr with FI_SOURCE, else to
 * dest_addr), then the default source. On error the caller frees @fi.
 */
int ofi_info_build(uint32_t version, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints,
		   const struct ofi_info_addr_ops *ops, struct fi_info *fi);

/*
 * ofi_info_addr_ops for FI_SOCKADDR_IN/IN6 providers (tcp, sockets): names
 * resolved with getaddrinfo (no node: the family's loopback; no service:
 * port 0), hint addresses checked for family, and the default source an
 * address of the interface the provider's "iface" parameter names, else
 * of the first interface up and not loopback, else loopback, port 0
 * (@arg: the struct fi_provider whose parameter is read).
 */
size_t ofi_sockaddr_len(uint32_t addr_format);
int ofi_sockaddr_resolve(const struct fi_info *fi, const char *node,
			 const char *service, void **addr, size_t *len);
int ofi_sockaddr_hint(const struct fi_info *fi, uint32_t hint_format,
		      const void *src, size_t src_len, void **addr,
		      size_t *len);
int ofi_sockaddr_default_src(const struct fi_info *fi, void **addr, size_t *len,
			     void *arg);

/* ================================================================== */
/* Completion and counter writers (util_comp.c): the one way every    */
/* provider reports a finished transfer, so CQ entries, error entries */
/* and counters agree across providers.                               */

/*
 * An initiator's send, RMA or atomic finished. Success: a CQ entry unless
 * the op asked for none (@comp false: fi_inject; FI_SELECTIVE_COMPLETION
 * without FI_COMPLETION in @op_flags), then the counter @flags name:
 * FI_READ -> read, FI_WRITE -> write, otherwise send. Failure (@err, a
 * positive fi_errno): always an error entry, and the counter's error count.
 */
void ofi_ep_tx_complete(struct util_ep *ep, void *context, uint64_t flags,
			uint64_t op_flags, bool comp, int err);

/* A receive finished (ofi_ep_rx_complete). */
struct ofi_rx_comp {
	void *context;
	uint64_t op_flags; /* the post's flags: FI_COMPLETION */
	uint64_t flags;	   /* FI_RECV | FI_MSG/FI_TAGGED ... FI_MULTI_RECV */
	void *buf;
	size_t len;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src_addr; /* written with FI_SOURCE */
	/* FI_SOURCE_ERR: a sender not in the AV (src_addr FI_ADDR_NOTAVAIL)
	 * by its raw address, the error entry's err_data; else NULL. */
	const void *src_raw;
	size_t src_rawlen;
	size_t olen; /* truncated bytes: FI_ETRUNC */
	int err;     /* positive fi_errno, 0 on success */
};

/*
 * Writes the receive's CQ entry (FI_SOURCE aware; always when it releases
 * an FI_MULTI_RECV buffer) or error entry (FI_ETRUNC with olen when
 * truncated; FI_EADDRNOTAVAIL with the sender's address in err_data for
 * an unknown sender under FI_SOURCE_ERR, the data received) and bumps the
 * receive counter or its error count.
 */
void ofi_ep_rx_complete(struct util_ep *ep, const struct ofi_rx_comp *c);

/*
 * The target side of an RMA or atomic of @len bytes landed: the remote
 * read/write counter (@flags: FI_REMOTE_READ or FI_REMOTE_WRITE) and the
 * counter bound to each distinct MR entry in @ent once, both only when the
 * endpoint has FI_RMA_EVENT; a receive CQ entry when @flags carries
 * FI_REMOTE_CQ_DATA (@data). A write into a collective engine region
 * (OFI_MR_INTERNAL) raises no event: its CQ data goes to the engine.
 */
void ofi_ep_rma_target_complete(struct util_ep *ep, uint64_t flags, size_t len,
				uint64_t data, struct ofi_mr_entry **ent,
				size_t count);
/*
 * Whether ofi_ep_rma_target_complete would do anything for a landing
 * with @flags: a target that must look its registrations up again to
 * call it skips that when nothing counts or reports the landing.
 */
bool ofi_ep_rma_target_wanted(struct util_ep *ep, uint64_t flags);

#endif /* OFI_UTIL_H */
