/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp.h - the tcp provider's objects: its native FI_EP_RDM endpoint over
 * the socket connection layer (ofi_sock.h) speaking the wire format of
 * tcp_wire.h, with prov/util's matcher, atomic executor, completion
 * writers and AV callbacks.
 *
 * Requests. Every operation the application starts takes a struct tcp_req
 * from the endpoint's pool (tx_attr.size of them): its frame (header and
 * body, iovs naming the user's memory) is queued on the peer's connection.
 * A send completes when its frame is written (or on the peer's ACK with
 * FI_DELIVERY_COMPLETE / FI_TRANSMIT_COMPLETE); RMA and atomics complete on
 * the target's response, which names the request by op_id (pool index and
 * generation, checked against the peer it was sent to).
 *
 * Incoming frames. Each data frame gets a struct tcp_frame while its
 * payload streams in: into a posted receive (matched at the head), into an
 * unexpected buffer (bounded per endpoint; past the bound the connection
 * stalls, the message stays visible to FI_PEEK, and its payload is read
 * straight into the receive that later matches it), into registered
 * memory (RMA write, checked against the MR map, held per read), or into
 * the initiator's buffers (read and atomic responses).
 *
 * Locking: one mutex per endpoint around everything, the progress called
 * from fi_cq_read / fi_cntr_read included, and the progress thread of an
 * FI_PROGRESS_AUTO endpoint too (whatever the threading model: the
 * application and the thread share the endpoint). AV removals arrive
 * under the AV lock and are recorded under av_lock, then applied under
 * the endpoint lock.
 */
#ifndef TCP_H
#define TCP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ofi_atomic.h"
#include "ofi_match.h"
#include "ofi_progress.h"
#include "ofi_sock.h"
#include "ofi_trigger.h"
#include "ofi_util.h"
#include "tcp_engine.h"
#include "tcp_wire.h"

#define TCP_PROV_NAME	 "tcp"
#define TCP_PROV_VERSION OFI_PROV_VERSION
#define TCP_TX_SIZE	 1024
#define TCP_RX_SIZE	 1024
#define TCP_INJECT_SIZE	 4096
/* Inject data up to this size sits in the request, beyond in a malloc. */
#define TCP_INJECT_INLINE 128
/*
 * What tcp's fi_info offers: Debian's tcp offers 4, and clients tuned on
 * it break beyond (fabtests' ubertest rounds 6- and 8-iov layouts to a
 * total that is not the message size). A provider built on the engine
 * may offer TCP_IOV_LIMIT (tcp_engine.h).
 */
#define TCP_IOV_ATTR 4
/* A send up to this size that cannot be written at once is copied and
 * completes at once (it must not wait for the peer's progress). */
#define TCP_BUFFERED_MAX 4096
/* How long fi_close keeps writing queued sends (ofi_sock_linger). */
#define TCP_LINGER_MS 2000
/* FI_PROGRESS_AUTO: the progress thread runs at least this often even
 * when no socket wakes it (connection request timeouts). */
#define TCP_AUTO_PERIOD_MS 10
/* ... and while the same-host path has work its wake socket does not
 * announce (streams, full rings), or has no wake socket */
#define TCP_AUTO_SHM_PERIOD_MS 1

extern struct fi_provider tcp_prov;

struct tcp_domain {
	struct util_domain util;
	/* what the domain's provider offers beyond tcp(7) */
	const struct tcp_engine_desc *desc;
};

static inline const struct tcp_engine_desc *
tcp_domain_desc(const struct util_domain *dom)
{
	return container_of(dom, struct tcp_domain, util)->desc;
}

enum tcp_obj { TCP_OBJ_REQ = 1, TCP_OBJ_RESP };

enum tcp_req_kind {
	TCP_REQ_SEND,
	TCP_REQ_WRITE,
	TCP_REQ_READ,
	TCP_REQ_ATOMIC,
	TCP_REQ_COMMIT, /* fi_commit: answered by TCP_OP_COMMIT_RESP */
};

/* What every request touches comes first and the frame's head last, so
 * that a small write's request spans as few cache lines as it can. */
struct tcp_req {
	uint8_t obj; /* TCP_OBJ_REQ: first, send_done tells apart */
	uint8_t kind;
	bool in_use;
	bool written;	/* the frame left for the socket */
	bool need_resp; /* completes on the peer's answer */
	bool answered;
	bool comp;  /* CQ entry wanted (not fi_inject) */
	bool early; /* completed to the user, frame still queued */
	bool owned; /* the payload is a copy the request owns */
	bool batch; /* a write whose answer may cover others (TCP_F_BATCH) */
	int err;
	uint32_t idx, gen;
	struct dlist_entry entry; /* free list or ep->pending */
	struct tcp_ep *ep;	  /* whose pool: a context's, on a SEP */
	fi_addr_t addr;
	void *context;
	uint64_t flags;	   /* CQ flags: FI_SEND | FI_MSG ... */
	uint64_t op_flags; /* FI_COMPLETION ... */
	size_t liov_cnt;
	size_t resp_len;
	void *rbuf;
	void *abuf; /* atomic operands, staged payloads (malloc'd) */
	struct ofi_sock_tx tx;
	/* read / fetching atomic: where the answer's payload goes */
	struct iovec liov[TCP_IOV_LIMIT];
	/* the answer's payload staged in host memory (tcp_hmem.c, rbuf):
	 * a device buffer, or a domain with a copy override (malloc'd) */
	enum fi_hmem_iface riface;
	uint64_t rdevice;
	uint8_t head[TCP_HDR_SIZE + TCP_BODY_MAX];
	uint8_t inject[TCP_INJECT_INLINE];
};

/* A frame the target answers with (write/read/atomic status, ACK). */
struct tcp_resp {
	uint8_t obj; /* TCP_OBJ_RESP */
	struct ofi_sock_tx tx;
	uint8_t head[TCP_HDR_SIZE];
	void *buf; /* atomic results, freed with it */
};

struct tcp_frame;

struct tcp_unexp {
	struct ofi_unexp_msg m;
	struct tcp_ep *ep; /* whose connection it came on (a shared queue) */
	fi_addr_t src;
	uint64_t op_id; /* for the ACK, with ack set */
	bool ack;
	bool commit;	       /* TCP_F_COMMIT: ACK once received, persisted */
	bool arrived;	       /* payload whole in buf */
	bool stalled;	       /* payload not read yet: its connection waits */
	bool dropped;	       /* FI_DISCARD while arriving or stalled */
	struct ofi_rx_buf *rx; /* matched while arriving or stalled */
	struct ofi_rx_slice sl;
	uint8_t *buf;
	size_t buffered; /* bytes counted against the endpoint's bound */
};

enum tcp_frame_kind {
	TCP_FR_RECV,	 /* into a posted receive */
	TCP_FR_UNEXP,	 /* into an unexpected buffer, or stalled */
	TCP_FR_WRITE,	 /* RMA write into registered memory */
	TCP_FR_READ_REQ, /* no payload: answered at done */
	TCP_FR_ATOMIC,	 /* operands into a buffer, run at done */
	TCP_FR_RESP,	 /* an answer to one of our requests */
	TCP_FR_DROP,	 /* payload read and dropped */
	TCP_FR_COMMIT,	 /* fi_commit ranges (u.rma), run at done */
};

struct tcp_frame {
	struct dlist_entry entry; /* free list, or ep->busy while read */
	uint8_t kind;
	/* What it is for: the endpoint whose connection it came on, or
	 * one of its scalable endpoint's contexts (tcp_frame_ep). */
	struct tcp_ep *ep;
	fi_addr_t conn; /* the connection layer's name of the sender */
	fi_addr_t src;
	struct tcp_hdr_view h;
	int err; /* positive fi_errno found at the head or while reading */
	union {
		struct {
			struct ofi_rx_buf *rx;
			struct ofi_rx_slice sl;
			struct tcp_unexp *u; /* delivered from a stalled one */
			bool staged;	     /* read into bounce (tcp_hmem.c) */
			uint8_t *bounce;
		} recv;
		struct tcp_unexp *unexp;
		struct {
			size_t count;
			struct tcp_rma_iov iov[TCP_IOV_MAX];
			uintptr_t addr[TCP_IOV_MAX]; /* translated */
			struct ofi_mr_entry *ent[TCP_IOV_MAX];
			uint8_t *bounce; /* a write staged (tcp_hmem.c) */
			bool held;	 /* ent[] held past the last read */
		} rma;
		struct {
			struct tcp_atomic_view av;
			uint8_t *ops;
		} atomic;
		struct tcp_req *req;
	} u;
};

/* FI_EP_MSG connection state (tcp_cm.c). */
enum tcp_cm_state {
	TCP_CM_IDLE,	   /* not connected yet */
	TCP_CM_CONNECTING, /* fi_connect: awaiting the answer */
	TCP_CM_CONNECTED,
	TCP_CM_DOWN, /* shut down, refused or lost: for good */
};

/* The one peer of an FI_EP_MSG endpoint, as the connection layer names it. */
#define TCP_MSG_PEER ((fi_addr_t)0)

struct tcp_conn_req;
struct shm_owner;

/* How an RDM endpoint reaches an fi_addr (tcp_shm.c), decided once. */
enum tcp_route { TCP_ROUTE_NONE, TCP_ROUTE_TCP, TCP_ROUTE_SHM };

/*
 * The batched answer (TCP_F_BATCH) a target owes a peer: the last write
 * that landed; sent by the end of the progress pass (tcp_owed_flush).
 */
struct tcp_owed {
	fi_addr_t dest;
	uint64_t op_id;
};

#define TCP_OWED_MAX 16

struct tcp_ep {
	struct util_ep util;
	ofi_mutex_t lock;
	/* What tcp_ep_lock takes: lock, or the shared receive context's
	 * once the endpoint bound to one is enabled (tcp_srx_enable). */
	ofi_mutex_t *lockp;
	/*
	 * tcp_ep_lock takes nothing: an FI_THREAD_DOMAIN endpoint with no
	 * progress thread, EQ, shared receive context or scalable parent.
	 * Only the application's calls, which it serializes, reach it.
	 * Set in fi_enable before a progress thread could start, never
	 * cleared.
	 */
	bool serial;
	ofi_mutex_t av_lock;
	struct ofi_sock_set *set;
	struct sockaddr_storage name;
	size_t namelen;
	struct ofi_match_queue mq;
	/* Where receives are matched: mq, or the srx's queue. */
	struct ofi_match_queue *rxq;
	bool srx_on; /* matching in the srx's queue, under its lock */
	struct tcp_req *req_pool;
	size_t req_cnt;
	struct dlist_entry req_free;
	struct dlist_entry pending; /* requests sent, not yet complete */
	struct dlist_entry frame_free;
	size_t unexp_bytes;
	size_t unexp_max;
	/* AV removals recorded by the callback, applied under lock */
	fi_addr_t *removed;
	size_t removed_cnt, removed_cap;
	/* FI_EP_MSG only (tcp_cm.c) */
	bool msg;
	bool on_eq;	  /* on the EQ's progress list */
	bool named;	  /* fi_setname: connect from that address */
	uint8_t cm_state; /* enum tcp_cm_state */
	struct sockaddr_storage peer_sa;
	struct tcp_conn_req *creq; /* acceptor: the request, until accepted */
	uint8_t cm_data[TCP_CONN_DATA_MAX]; /* our handshake's payload */
	size_t cm_len;
	struct util_eq_prog eq_prog;
	/* CM events raised under the lock, delivered after it (a handler
	 * registered for them may call this endpoint) */
	struct dlist_entry cm_events;
	bool cm_queued;
	bool cm_delivering; /* a thread is in tcp_cm_flush's delivery */
	/* RDM: same-host peers through shm (tcp_shm.c), NULL if off */
	struct fid_ep *shm;
	struct shm_owner *shm_owner;
	/* Blocking reads sleep on it: the set's epoll fd and shm's wake
	 * socket (tcp_shm_wait_fd); -1 without them. */
	int shm_wait_epfd;
	/* The head tcp_parse accepted last and its view, for the
	 * recv_head call that follows (NULL: none) */
	const void *parsed_head;
	struct tcp_hdr_view parsed;
	/* batched write answers owed (tcp_rma.c), under the lock */
	struct tcp_owed owed[TCP_OWED_MAX];
	size_t nowed;
	uint64_t netns;
	uint8_t *route; /* enum tcp_route by fi_addr */
	size_t route_cnt;
	size_t shm_peers; /* addresses routed through shm */
	/* FI_PROGRESS_AUTO: the thread driving progress, from fi_enable
	 * until the first thing fi_close does */
	struct ofi_progress *auto_prog;
	/* When the application last drove our progress: the thread stands
	 * down meanwhile (ofi_progress.h). */
	ofi_atomic64_t app_driven;
	/*
	 * Manual progress (util.side_thread): the thread that writes the
	 * frames of sends that completed before they were written, once
	 * the application stops calling (tcp_thread.c), started by the
	 * first such send; the application's progress calls and such
	 * sends, counted (relaxed atomics), and the thread's last look at
	 * that count (its own). flusher_off (under the lock): closing,
	 * start none.
	 */
	struct ofi_progress *flusher;
	uint64_t app_calls;
	uint64_t flusher_seen;
	bool flusher_off;
	/* Frames being read for this endpoint (tcp_frame.ep). */
	struct dlist_entry busy;
	/* Scalable endpoints (tcp_sep.c): a SEP is an endpoint whose
	 * connections its contexts share (sep set); a context names its
	 * SEP (engine) and runs under its lock. Requests' ids carry
	 * req_base: which pool an answer is for. */
	struct tcp_sep *sep;
	struct tcp_ep *engine;
	uint32_t req_base;
};

void tcp_cm_flush(struct tcp_ep *ep);

static inline void tcp_ep_lock(struct tcp_ep *ep)
{
	ofi_mutex_t *m;

	if (ep->serial)
		return;
	/* lockp changes once, at enable: a taker that raced it retries. */
	for (;;) {
		m = __atomic_load_n(&ep->lockp, __ATOMIC_ACQUIRE);
		ofi_mutex_lock(m);
		if (m == __atomic_load_n(&ep->lockp, __ATOMIC_ACQUIRE))
			return;
		ofi_mutex_unlock(m);
	}
}

/* tcp_ep_lock's undoing, and nothing else. */
static inline void tcp_ep_release(struct tcp_ep *ep)
{
	if (!ep->serial)
		ofi_mutex_unlock(ep->lockp);
}

static inline void tcp_ep_unlock(struct tcp_ep *ep)
{
	tcp_ep_release(ep);
	/* Read outside the lock: another thread (the progress thread) may
	 * queue meanwhile, and flushes what it queued at its own unlock. */
	if (OFI_UNLIKELY(__atomic_load_n(&ep->cm_queued, __ATOMIC_RELAXED)))
		tcp_cm_flush(ep);
	/* Triggered operations our completions made ready start here,
	 * where no lock of ours is held (ofi_trigger.h). */
	ofi_trig_run();
}

/* Who logs for @ep: tcp, or the provider built on its engine. */
static inline const struct fi_provider *tcp_ep_prov(const struct tcp_ep *ep)
{
	return ep->util.domain->prov;
}

/* A progress thread's name for @prov: "<prov>-<what>" (15 chars kept). */
static inline void tcp_thread_name(char *buf, size_t len,
				   const struct fi_provider *prov,
				   const char *what)
{
	snprintf(buf, len, "%s-%s", prov->name, what);
}

/* What answers name a request by: pool index and generation. */
static inline uint64_t tcp_req_id(const struct tcp_req *req)
{
	return (uint64_t)req->gen << 32 | req->idx;
}

static inline struct tcp_ep *tcp_ep_of(struct fid_ep *ep_fid)
{
	return container_of(ep_fid, struct tcp_ep, util.ep_fid);
}

/* The endpoint a connection layer callback's context names. */
static inline struct tcp_ep *tcp_ctx(void *ctx)
{
	return ctx;
}

/* tcp_domain.c: tcp's own domains (tcp_engine.h: another provider's) */
int tcp_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);

/* tcp_req.c: the request pool, sending requests and answers */
struct tcp_req *tcp_req_get(struct tcp_ep *ep);
void tcp_req_put(struct tcp_ep *ep, struct tcp_req *req);
/* Queues @req's frame (tx.iov set) to req->addr; 0 or negative. */
int tcp_req_send(struct tcp_ep *ep, struct tcp_req *req);
/* The request @op_id names, if one of ours waits on @src's answer. */
struct tcp_req *tcp_req_find(struct tcp_ep *ep, uint64_t op_id, fi_addr_t src);
/* A send still queued: copy what is left of it and complete it now. */
void tcp_req_buffer(struct tcp_ep *ep, struct tcp_req *req);
/* Completes @req at the initiator (CQ entry/error, counters), frees it. */
void tcp_req_complete(struct tcp_ep *ep, struct tcp_req *req, int err);
/* Every request of @ep written to @addr and not complete fails. */
void tcp_fail_pending(struct tcp_ep *ep, fi_addr_t addr, int err);
/* Sends a response frame (@h) with an optional payload. */
int tcp_resp_send(struct tcp_ep *ep, fi_addr_t dest,
		  const struct tcp_hdr_view *h, const struct iovec *iov,
		  size_t cnt, void *owned);
fi_addr_t tcp_src_addr(struct tcp_ep *ep, fi_addr_t src);

/* tcp_frame.c: the codec and callbacks tcp gives the connection layer */
/* What every endpoint's connection set runs on (an MSG endpoint's set
 * has no listening socket). */
extern const struct ofi_sock_ops tcp_sock_ops;
/* An anonymous peer's (OFI_SOCK_ANON_ADDR and up) fi_addr once it is in
 * the AV, @src itself until then. */
fi_addr_t tcp_anon_src(struct tcp_ep *ep, fi_addr_t src);
void tcp_cm_fail_all(struct tcp_ep *ep, int err);

/* tcp_progress.c: progress passes, waits and AV removals */
void tcp_progress_locked(struct tcp_ep *ep);
void tcp_ep_progress(struct util_ep *util);
int tcp_wait_fd(struct util_ep *util);
int tcp_wait_arm(struct util_ep *util);
void tcp_av_sync(struct tcp_ep *ep);
extern const struct ofi_av_ep_ops tcp_av_ep_ops;

/* tcp_thread.c: FI_PROGRESS_AUTO's progress thread */
/* Whether @ep's info or domain asks for automatic progress. */
bool tcp_auto_wanted(struct tcp_ep *ep);
/* Under the endpoint lock: a send completed with its frame still queued
 * (tcp_req_buffer): the flusher sees that it leaves. */
void tcp_flusher_kick(struct tcp_ep *ep);
/* The application is at work on @ep (the flusher leaves it alone). */
static inline void tcp_app_call(struct tcp_ep *ep)
{
	__atomic_store_n(&ep->app_calls,
			 __atomic_load_n(&ep->app_calls, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}
int tcp_auto_start(struct tcp_ep *ep);
/* First in close: nothing below may run under the thread's feet. */
void tcp_auto_stop(struct tcp_ep *ep);
/* A connection left the set's epoll set (ofi_sock_ops.quiet). */
void tcp_sock_quiet(void *ctx);
/* Under the endpoint lock: whoever sleeps on the endpoint's fd wakes
 * and arms again (blocking reads, the progress thread). */
void tcp_wake_sleepers(struct tcp_ep *ep);

/* tcp_ep.c: the endpoint object */
int tcp_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep, void *context);
/* Fills the common part of an endpoint or context (util init, locks,
 * lists, pools with ids from @req_base); tcp_ep_fini undoes it. */
int tcp_ep_init(struct tcp_ep *ep, struct util_domain *dom,
		const struct fi_info *info, uint32_t req_base, void *context);
void tcp_ep_fini(struct tcp_ep *ep);
int tcp_ep_close(struct fid *fid);

/*
 * tcp_sep.c: scalable endpoints (fi_scalable_ep(3)), where the domain's
 * provider offers them (tcp_engine_desc.scalable_ep). Contexts share the
 * SEP's connections; a request names the target's receive context in
 * hdr.rx_ctx (fi_rx_addr's index), an answer its transmit context through
 * the id's req_base.
 */
int tcp_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		    struct fid_ep **sep, void *context);
/* Which endpoint a decoded frame that came on @ep's connections is for:
 * @ep, one of its contexts, or NULL: a receive context it has not. */
struct tcp_ep *tcp_frame_ep(struct tcp_ep *ep, const struct tcp_hdr_view *h);
/* Every context of @ep's SEP (and @ep), for what concerns them all. */
#define tcp_sep_foreach(ep, ctx, i)                                            \
	for ((i) = 0, (ctx) = (ep); (ctx); (ctx) = tcp_sep_next((ep), &(i)))
struct tcp_ep *tcp_sep_next(struct tcp_ep *ep, size_t *i);
/* Strips fi_rx_addr's bits off req->addr into its header's rx_ctx. */
int tcp_req_rx_ctx(struct tcp_ep *ep, struct tcp_req *req);
/* The same on an MSG SEP's context: fi_rx_addr(0, i, TCP_RX_CTX_BITS)
 * with FI_NAMED_RX_CTX, else receive context 0. */
void tcp_msg_rx_ctx(struct tcp_ep *ep, struct tcp_req *req);

/* tcp_cm.c: passive endpoints and FI_EP_MSG connection management */
extern const struct fi_ops_cm tcp_msg_cm_ops;
int tcp_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep, void *context);
/* Builds a CONN_REQ/CONN_RESP frame with @len bytes of connection data. */
size_t tcp_cm_frame(void *buf, size_t max, bool resp, int status,
		    uint8_t ep_type, const struct sockaddr_storage *name,
		    const void *data, size_t len);
/* ep_open of FI_EP_MSG: takes info->handle (a FI_CONNREQ's) if set. */
int tcp_cm_ep_init(struct tcp_ep *ep, const struct fi_info *info);
void tcp_cm_ep_fini(struct tcp_ep *ep);
int tcp_cm_ep_enable(struct util_ep *util);
/* The connector got the acceptor's answer (whole frame validated). */
void tcp_cm_answered(struct tcp_ep *ep, int status, const void *data,
		     size_t len);
void tcp_cm_peer_failed(struct tcp_ep *ep, int err);
int tcp_cm_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen);

/* tcp_msg.c */
extern const struct fi_ops_msg tcp_msg_ops;
extern const struct fi_ops_tagged tcp_tagged_ops;
extern const struct ofi_match_ops tcp_match_ops;
/* Shared receive contexts (tcp_msg.c): fi_srx_context, and a bound
 * endpoint's switch to the context's queue and lock at fi_enable. */
int tcp_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context);
void tcp_srx_enable(struct tcp_ep *ep);
/* Closing: drops what @ep holds in the context's queue. */
void tcp_srx_close(struct tcp_ep *ep);
int tcp_msg_head(struct tcp_ep *ep, struct tcp_frame *f, uint64_t payload,
		 struct iovec *iov, size_t *cnt);
void tcp_msg_done(struct tcp_ep *ep, struct tcp_frame *f);
void tcp_msg_abort(struct tcp_ep *ep, struct tcp_frame *f, int err);
ssize_t tcp_ep_cancel(fid_t fid, void *context);
/* FI_FENCE (util_ep.tx_busy): requests of @util not yet complete. */
bool tcp_tx_busy(struct util_ep *util);

/* tcp_rma.c */
extern const struct fi_ops_rma tcp_rma_ops;
extern const struct fi_ops_atomic tcp_atomic_ops;
int tcp_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		     enum fi_op op, struct fi_atomic_attr *attr,
		     uint64_t flags);
int tcp_rma_head(struct tcp_ep *ep, struct tcp_frame *f, const void *head,
		 size_t len, uint64_t payload, struct iovec *iov, size_t *cnt);
void tcp_rma_done(struct tcp_ep *ep, struct tcp_frame *f);
/* Sends the batched write answers @ep owes (end of a progress pass). */
void tcp_owed_flush(struct tcp_ep *ep);
/* The one @ep owes @dest, if any, before another answer to @dest. */
void tcp_owed_flush_to(struct tcp_ep *ep, fi_addr_t dest);
/* ofi_sock_resume, then the answers the frames it ran owe. */
void tcp_sock_resume(struct tcp_ep *ep);
void tcp_rma_abort(struct tcp_ep *ep, struct tcp_frame *f, int err);
int tcp_rma_hold(struct tcp_ep *ep, struct tcp_frame *f);
void tcp_rma_release(struct tcp_ep *ep, struct tcp_frame *f);
int tcp_resp_head(struct tcp_ep *ep, struct tcp_frame *f, uint64_t payload,
		  struct iovec *iov, size_t *cnt);
void tcp_resp_done(struct tcp_ep *ep, struct tcp_frame *f);
/* Holds every iov's registration of @f (FI_EACCES if one is gone or
 * moved since the head); tcp_rma_put releases them. */
int tcp_rma_get(struct tcp_ep *ep, struct tcp_frame *f, uint64_t access);
void tcp_rma_put(struct tcp_ep *ep, struct tcp_frame *f);

/*
 * tcp_hmem.c: device memory (FI_HMEM) and the domain's copy overrides.
 * A payload is staged in host memory and moved with src/hmem's copies
 * when its memory is a device's or the domain has an override.
 */
static inline bool tcp_hmem_ovr(const struct tcp_ep *ep)
{
	const struct ofi_hmem_override *o = &ep->util.domain->hmem_override;

	return o->copy_from_hmem_iov || o->copy_to_hmem_iov;
}

/* Whether an operation must look further (the one check per operation):
 * FI_HMEM on the endpoint or its domain (device MRs), or an override. */
static inline bool tcp_hmem_on(const struct tcp_ep *ep)
{
	return OFI_UNLIKELY(
		((ep->util.caps | ep->util.domain->info->caps) & FI_HMEM) ||
		tcp_hmem_ovr(ep));
}

/* Whether a receive's slices land through a bounce buffer. */
static inline bool tcp_rx_staged(const struct tcp_ep *ep,
				 const struct ofi_rx_buf *rx)
{
	return OFI_UNLIKELY(rx->iface != FI_HMEM_SYSTEM || tcp_hmem_ovr(ep));
}

/* FI_HMEM in @fi's caps when src/hmem has a device interface up. */
void tcp_hmem_caps(struct fi_info *fi);
/* The interface of a user iov (ofi_iov_iface with tcp's detect rule). */
void tcp_hmem_iface(struct tcp_ep *ep, void **desc, const struct iovec *iov,
		    size_t count, enum fi_hmem_iface *iface, uint64_t *device);
/*
 * Sets @req's payload (tx.iov from 1): the user's iovs, or a copy the
 * request owns when @copy (inject) or the memory is staged. 0 or a
 * negative fi_errno (the copy's: the call fails with it).
 */
int tcp_tx_payload(struct tcp_ep *ep, struct tcp_req *req, void **desc,
		   const struct iovec *iov, size_t count, size_t size,
		   bool copy);
/* Atomic operands or compare values into @dst through the copies. */
int tcp_ioc_stage(struct tcp_ep *ep, uint8_t *dst, const struct fi_ioc *ioc,
		  void **desc, size_t count, size_t dts);
/* A read's or fetch's answer (req->liov) staged in req->rbuf when its
 * memory wants it; tcp_resp_unstage copies it out (0 or positive). */
int tcp_resp_stage(struct tcp_ep *ep, struct tcp_req *req, void **desc);
int tcp_resp_unstage(struct tcp_ep *ep, struct tcp_req *req);
/* A matched receive slice read into a bounce; tcp_rx_unstage copies it
 * into the receive at frame done (0 or a positive fi_errno). */
void tcp_rx_stage(struct tcp_frame *f, struct iovec *iov, size_t *cnt);
int tcp_rx_unstage(struct tcp_ep *ep, struct tcp_frame *f);
void tcp_rx_unstage_drop(struct tcp_frame *f);
/* @len bytes at @src into @rx from @off (0 or a positive fi_errno). */
int tcp_rx_copy(struct tcp_ep *ep, const struct ofi_rx_buf *rx, size_t off,
		const void *src, size_t len);
/* RMA write target: reads the payload into a bounce when a registration
 * is a device's (or with an override); unstage copies it in at done and
 * sets f->err. */
void tcp_write_stage(struct tcp_ep *ep, struct tcp_frame *f, struct iovec *iov,
		     size_t *cnt);
void tcp_write_unstage(struct tcp_ep *ep, struct tcp_frame *f);
/* RMA read target: the answer copied out of the registrations, or NULL
 * to send straight from them (f->err set on failure). */
void *tcp_read_stage(struct tcp_ep *ep, struct tcp_frame *f, size_t total);
/* One atomic target iov in device memory: copied out, executed, copied
 * back under the executor's lock. 0 or a positive fi_errno. */
int tcp_atomic_staged(struct tcp_ep *ep, const struct tcp_atomic_view *av,
		      const struct ofi_mr_entry *ent, uintptr_t dst, size_t len,
		      const uint8_t *src, const uint8_t *cmp, uint8_t *res);

/* tcp_shm.c: the same-host path of RDM endpoints */
int tcp_shm_open(struct tcp_ep *ep);
void tcp_shm_enable(struct tcp_ep *ep);
void tcp_shm_close(struct tcp_ep *ep);
struct fid_ep *tcp_shm_route_slow(struct tcp_ep *ep, fi_addr_t addr);
void tcp_shm_progress(struct tcp_ep *ep);
/* Whether the same-host path has a transfer in flight; under lock. */
bool tcp_shm_tx_busy(struct tcp_ep *ep);
int tcp_shm_wait_fd(struct tcp_ep *ep);
int tcp_shm_wait_arm(struct tcp_ep *ep);
/* The progress thread's next period, @period for the sockets alone,
 * with shm's wake socket armed (ofi_progress_attr.arm). */
int tcp_shm_auto_period(struct tcp_ep *ep, int period);
void tcp_shm_removed(struct tcp_ep *ep, fi_addr_t addr);
void tcp_shm_atomic_limit(const struct util_domain *dom,
			  enum ofi_atomic_kind kind, enum fi_datatype dt,
			  enum fi_op op, size_t *count);

/* AV removals not applied yet: checked without av_lock by every op and
 * progress pass, while the AV callback records them under it. */
static inline bool tcp_av_removals(const struct tcp_ep *ep)
{
	return __atomic_load_n(&ep->removed_cnt, __ATOMIC_ACQUIRE) != 0;
}

/* The shm endpoint @addr is reached through, NULL for TCP; under lock. */
static inline struct fid_ep *tcp_shm_route(struct tcp_ep *ep, fi_addr_t addr)
{
	if (OFI_UNLIKELY(tcp_av_removals(ep)))
		tcp_av_sync(ep);
	if (addr < ep->route_cnt && ep->route[addr] != TCP_ROUTE_NONE)
		return ep->route[addr] == TCP_ROUTE_SHM ? ep->shm : NULL;
	return tcp_shm_route_slow(ep, addr);
}

/*
 * First thing in every *msg funnel and fi_commit: the shm endpoint @addr
 * is routed through, NULL for TCP. When it answers one, our lock is held:
 * the caller makes the same call on it (shm_peer.h wants our lock held),
 * then tcp_ep_unlock()s and returns what it answered.
 */
static inline struct fid_ep *tcp_shm_lock_peer(struct tcp_ep *ep,
					       fi_addr_t addr)
{
	struct fid_ep *shm;

	if (!ep->shm)
		return NULL;
	tcp_ep_lock(ep);
	shm = tcp_shm_route(ep, addr);
	if (!shm)
		tcp_ep_unlock(ep);
	return shm;
}

/* tcp_commit.c: persistent memory (fi_commit(3)) over tcp */
ssize_t tcp_commit(struct fid_ep *ep_fid, const struct fi_rma_iov *iov,
		   size_t count, fi_addr_t dest_addr, uint64_t flags,
		   void *context);
int tcp_commit_head(struct tcp_ep *ep, struct tcp_frame *f, const void *head,
		    size_t len);
void tcp_commit_done(struct tcp_ep *ep, struct tcp_frame *f);
/* FI_COMMIT_COMPLETE at the target: 0 or a positive fi_errno. */
int tcp_write_persist(struct tcp_ep *ep, struct tcp_frame *f);
int tcp_atomic_persist(const struct tcp_atomic_view *av,
		       struct ofi_mr_entry *const *ent, const uintptr_t *dst);
int tcp_rx_persist(const struct ofi_rx_buf *rx, const struct ofi_rx_slice *sl);

#endif /* TCP_H */
