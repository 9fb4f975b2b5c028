/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_match.h - provider-neutral receive matching (prov/util/util_match.c):
 * posted receive queues (msg and tagged), unexpected queues, tag/ignore
 * matching, directed receive, FI_PEEK/FI_CLAIM/FI_DISCARD, FI_MULTI_RECV
 * slice accounting, fi_cancel and the receive completion with truncation.
 *
 * A provider embeds struct ofi_rx_entry first-or-anywhere in its posted
 * receive (which also holds its iovs) and struct ofi_unexp_msg in its
 * unexpected message (which holds the payload or a pending drain), and
 * finds its own struct with container_of. Moving data is the provider's:
 * util decides which receive takes a message and at what offset, the
 * provider copies and then reports the slice done.
 *
 * Nothing here allocates: receive entries come from a free list the
 * provider fills once; unexpected messages are the provider's. Locking is
 * the provider's too (one endpoint lock around every call).
 */
#ifndef OFI_MATCH_H
#define OFI_MATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "ofi_util.h"

/* A posted receive; the provider's struct embeds it. */
struct ofi_rx_entry {
	struct dlist_entry entry; /* posted queue or free list */
	void *context;
	uint64_t flags; /* the post's op flags (FI_COMPLETION ...) */
	fi_addr_t addr; /* FI_ADDR_UNSPEC: from anyone */
	uint64_t tag;
	uint64_t ignore;
	size_t size;	/* bytes the buffer holds */
	size_t used;	/* FI_MULTI_RECV: bytes handed out */
	size_t pending; /* slices taken but not yet done */
	bool tagged;
	bool multi;    /* FI_MULTI_RECV (untagged only) */
	bool released; /* multi: takes no more messages */
	bool posted;   /* on a posted queue */
};

/* A message that arrived before its receive; the provider's embeds it. */
struct ofi_unexp_msg {
	struct dlist_entry entry;
	fi_addr_t addr; /* sender, FI_ADDR_NOTAVAIL if not in the AV */
	uint64_t tag;
	uint64_t data; /* remote CQ data, with FI_REMOTE_CQ_DATA in cq_flags */
	size_t size;   /* payload bytes the sender announced */
	uint64_t cq_flags; /* FI_MSG or FI_TAGGED, FI_REMOTE_CQ_DATA */
	void *claim_ctx;   /* FI_CLAIM: the context that claimed it */
	/*
	 * Who delivers it: the queue's ops, or a peer provider's whose
	 * messages share this queue (ofi_match_unexp_add_ops).
	 */
	const struct ofi_match_ops *ops;
	bool tagged;
};

/* Where one message lands in a receive (ofi_match_take). */
struct ofi_rx_slice {
	size_t off;    /* into the receive buffer */
	size_t len;    /* bytes that fit */
	size_t olen;   /* bytes that do not: FI_ETRUNC when non-zero */
	bool consumed; /* the receive left its posted queue */
};

/*
 * A posted receive's buffer, the same for every provider, so that a peer
 * provider driven by another's endpoint (tcp's same-host path through
 * shm) delivers into the owner's receives: up to OFI_RX_IOV_MAX iovs of
 * one memory interface, and per iov how it is made durable (FI_PMEM).
 */
#define OFI_RX_IOV_MAX 8
struct ofi_rx_buf {
	struct ofi_rx_entry m;
	enum fi_hmem_iface iface;
	uint64_t device;
	size_t iov_count;
	struct iovec iov[OFI_RX_IOV_MAX];
	uint8_t pmem[OFI_RX_IOV_MAX];
};

static inline struct ofi_rx_buf *ofi_rx_buf_of(struct ofi_rx_entry *m)
{
	return container_of(m, struct ofi_rx_buf, m);
}

/* @len bytes of @rx from @off as at most @max iovs; returns how many. */
size_t ofi_rx_buf_iov(const struct ofi_rx_buf *rx, size_t off, size_t len,
		      struct iovec *iov, size_t max);
/* Where byte @off of @rx is, NULL past its end. */
void *ofi_rx_buf_at(const struct ofi_rx_buf *rx, size_t off);
/*
 * FI_COMMIT_COMPLETE: what landed in slice @sl is made durable where the
 * receive is a persistent registration. 0 or a negative fi_errno.
 */
int ofi_rx_buf_persist(const struct ofi_rx_buf *rx,
		       const struct ofi_rx_slice *sl);

struct ofi_match_queue;

/* The provider's half of the slow paths. */
struct ofi_match_ops {
	/*
	 * Deliver unexpected @u (already unlinked) into @rx at @s, then
	 * free @u. The provider reports the slice with ofi_match_done()
	 * now or when an asynchronous transfer lands.
	 */
	void (*deliver)(struct ofi_match_queue *q, struct ofi_rx_entry *rx,
			struct ofi_unexp_msg *u, const struct ofi_rx_slice *s);
	/*
	 * Drop @u (already unlinked; FI_DISCARD, close): release what it
	 * holds, tell its sender @status (0 or a negative fi_errno), free it.
	 */
	void (*discard)(struct ofi_match_queue *q, struct ofi_unexp_msg *u,
			int status);
	/*
	 * Optional: the sender of @u, which arrived from an address not yet
	 * in the AV, asked again when a directed receive meets it.
	 */
	fi_addr_t (*resolve_addr)(struct ofi_match_queue *q,
				  struct ofi_unexp_msg *u);
	/* Optional: what FI_SOURCE reports for @u (default: u->addr). */
	fi_addr_t (*src_addr)(struct ofi_match_queue *q,
			      struct ofi_unexp_msg *u);
};

struct ofi_match_queue {
	struct util_ep *ep; /* CQ, counters, caps, min_multi_recv */
	const struct ofi_match_ops *ops;
	struct dlist_entry posted[2]; /* [tagged] */
	struct dlist_entry unexp[2];  /* [tagged] */
	struct dlist_entry claimed;
	struct dlist_entry rx_free;
	struct ofi_rx_buf *pool; /* ofi_match_pool */
	bool directed; /* FI_DIRECTED_RECV: receives keep their address */
};

void ofi_match_init(struct ofi_match_queue *q, struct util_ep *ep,
		    const struct ofi_match_ops *ops);
/*
 * Allocates @count receive buffers onto the free list (endpoint setup);
 * ofi_match_pool_free() releases them (after ofi_match_flush).
 */
int ofi_match_pool(struct ofi_match_queue *q, size_t count);
void ofi_match_pool_free(struct ofi_match_queue *q);

/* The memory interface of a receive's iovs (ofi_iov_iface). */
struct ofi_rx_mem {
	enum fi_hmem_iface iface;
	uint64_t device;
};

/*
 * fi_recv/fi_trecv and their msg forms (FI_PEEK, FI_CLAIM, FI_DISCARD
 * included) on a queue whose receives are ofi_match_pool's: 0,
 * -FI_EAGAIN when every receive is in use (the caller progresses), or
 * -FI_EINVAL. The caller checks @count against its own limit first.
 */
ssize_t ofi_match_recv(struct ofi_match_queue *q, const struct iovec *iov,
		       void **desc, size_t count, const struct ofi_rx_mem *mem,
		       fi_addr_t addr, uint64_t tag, uint64_t ignore,
		       void *context, uint64_t flags, bool tagged);

/* Adds a receive entry to the free list (endpoint setup). */
static inline void ofi_match_rx_add(struct ofi_match_queue *q,
				    struct ofi_rx_entry *rx)
{
	rx->posted = false;
	dlist_insert_tail(&rx->entry, &q->rx_free);
}

/*
 * Takes a free receive entry and fills the matching half; NULL when the
 * receive queue is full (-FI_EAGAIN). @size is the buffer's total bytes.
 */
struct ofi_rx_entry *ofi_match_rx_get(struct ofi_match_queue *q, void *context,
				      uint64_t flags, fi_addr_t addr,
				      uint64_t tag, uint64_t ignore,
				      bool tagged, size_t size);
/* Returns an entry that never got posted (or finished) to the free list. */
void ofi_match_rx_put(struct ofi_match_queue *q, struct ofi_rx_entry *rx);

/*
 * Posts @rx: serves it from matching unexpected messages first (through
 * ops->deliver), queues it if it still takes messages.
 */
void ofi_match_post(struct ofi_match_queue *q, struct ofi_rx_entry *rx);

/* Tag and source tests (inline: the per-message path). */
static inline bool ofi_match_tag(uint64_t want, uint64_t ignore, uint64_t tag)
{
	return ((want ^ tag) & ~ignore) == 0;
}

static inline bool ofi_match_addr(fi_addr_t want, fi_addr_t addr)
{
	return want == FI_ADDR_UNSPEC || want == addr;
}

struct ofi_rx_entry *ofi_match_posted_slow(struct ofi_match_queue *q,
					   bool tagged, fi_addr_t addr,
					   uint64_t tag);

/*
 * The posted receive an incoming message goes to, NULL when unexpected.
 * @addr: the sender's fi_addr; only read with FI_DIRECTED_RECV, so a
 * provider may pass FI_ADDR_NOTAVAIL when !q->directed.
 */
static inline struct ofi_rx_entry *ofi_match_posted(struct ofi_match_queue *q,
						    bool tagged, fi_addr_t addr,
						    uint64_t tag)
{
	struct dlist_entry *head = &q->posted[tagged];
	struct ofi_rx_entry *rx;

	if (dlist_empty(head))
		return NULL;
	rx = container_of(head->next, struct ofi_rx_entry, entry);
	if ((!tagged || ofi_match_tag(rx->tag, rx->ignore, tag)) &&
	    ofi_match_addr(rx->addr, addr))
		return rx;
	return ofi_match_posted_slow(q, tagged, addr, tag);
}

/*
 * Hands the next slice of @rx to a message of @msg_size bytes: offset and
 * length (FI_MULTI_RECV: the unused tail), the truncated rest, and whether
 * @rx left its queue (always, unless a multi-receive buffer keeps more
 * than min_multi_recv bytes). Every slice is reported once with
 * ofi_match_done().
 */
void ofi_match_take(struct ofi_match_queue *q, struct ofi_rx_entry *rx,
		    size_t msg_size, struct ofi_rx_slice *s);

/*
 * A slice of @rx landed (or failed): writes the receive completion
 * (FI_ETRUNC error entry with olen when truncated, @err when failed),
 * bumps the receive counter and frees @rx when it is finished. A
 * multi-receive buffer's last completion carries FI_MULTI_RECV.
 * Returns true when @rx was freed.
 */
struct ofi_rx_done {
	uint64_t flags; /* FI_RECV | FI_MSG/FI_TAGGED | FI_REMOTE_CQ_DATA */
	void *buf;	/* where the slice starts, NULL if unknown */
	uint64_t data;
	uint64_t tag;
	fi_addr_t src_addr; /* reported with FI_SOURCE */
	/* FI_SOURCE_ERR: the sender's raw address when src_addr is
	 * FI_ADDR_NOTAVAIL (read during the call only), else NULL. */
	const void *src_raw;
	size_t src_rawlen;
	int err; /* positive fi_errno */
	/* Completes there (CQ, counters, FI_SOURCE): the endpoint the
	 * message came on, for a shared receive context; NULL: q->ep. */
	struct util_ep *ep;
};
bool ofi_match_done(struct ofi_match_queue *q, struct ofi_rx_entry *rx,
		    const struct ofi_rx_slice *s, const struct ofi_rx_done *d);

/* Unexpected messages. */
static inline void ofi_match_unexp_add_ops(struct ofi_match_queue *q,
					   struct ofi_unexp_msg *u,
					   const struct ofi_match_ops *ops)
{
	u->claim_ctx = NULL;
	u->ops = ops;
	dlist_insert_tail(&u->entry, &q->unexp[u->tagged]);
}

static inline void ofi_match_unexp_add(struct ofi_match_queue *q,
				       struct ofi_unexp_msg *u)
{
	ofi_match_unexp_add_ops(q, u, q->ops);
}

/* The first unexpected message @rx would take, or NULL. */
struct ofi_unexp_msg *ofi_match_unexp(struct ofi_match_queue *q, bool tagged,
				      fi_addr_t addr, uint64_t tag,
				      uint64_t ignore);

/* Whether any unexpected or claimed message satisfies @pred. */
/* Calls @fn on every queued unexpected and claimed message. */
void ofi_match_unexp_foreach(struct ofi_match_queue *q,
			     void (*fn)(struct ofi_unexp_msg *u, void *arg),
			     void *arg);

bool ofi_match_unexp_any(struct ofi_match_queue *q,
			 bool (*pred)(struct ofi_unexp_msg *u, void *arg),
			 void *arg);

/*
 * An address left the AV: messages queued from it match directed
 * receives only after ops->resolve_addr names their sender again.
 */
void ofi_match_addr_removed(struct ofi_match_queue *q, fi_addr_t addr);

/*
 * fi_trecvmsg with FI_PEEK (and FI_CLAIM or FI_DISCARD): a completion
 * describing the first matching unexpected message, or an FI_ENOMSG
 * error entry. FI_CLAIM keeps the message for a later FI_CLAIM receive
 * with the same context; FI_DISCARD drops it. Returns 0.
 */
ssize_t ofi_match_peek(struct ofi_match_queue *q, void *context, uint64_t flags,
		       fi_addr_t addr, uint64_t tag, uint64_t ignore);
/* The message claimed with @context, NULL if none. */
struct ofi_unexp_msg *ofi_match_claimed(struct ofi_match_queue *q,
					void *context);
/* FI_CLAIM | FI_DISCARD: completes the receive and drops the message. */
void ofi_match_discard_claimed(struct ofi_match_queue *q,
			       struct ofi_unexp_msg *u, void *context,
			       uint64_t flags);
/* Delivers unexpected (or claimed) @u into fresh @rx (FI_CLAIM receive). */
void ofi_match_deliver(struct ofi_match_queue *q, struct ofi_rx_entry *rx,
		       struct ofi_unexp_msg *u);

/*
 * fi_cancel: fails the posted receive with @context with FI_ECANCELED.
 * A multi-receive buffer with slices still landing stops taking messages
 * and is released by its last slice. -FI_ENOENT when nothing matches.
 */
ssize_t ofi_match_cancel(struct ofi_match_queue *q, void *context);

/* Endpoint close: drops every unexpected and claimed message. */
void ofi_match_flush(struct ofi_match_queue *q, int status);
/* Drops those for which @pred holds (one endpoint's, in a shared queue). */
void ofi_match_flush_if(struct ofi_match_queue *q,
			bool (*pred)(struct ofi_unexp_msg *u, void *arg),
			void *arg, int status);
/* A peer provider's close: drops those delivered by @ops only. */
void ofi_match_flush_ops(struct ofi_match_queue *q,
			 const struct ofi_match_ops *ops, int status);
/* Every posted receive completes with error @err (positive fi_errno): a
 * connection-oriented endpoint lost its only peer. */
void ofi_match_fail_posted(struct ofi_match_queue *q, int err);

/* ------------------------------------------------------------------ */
/*
 * Shared receive contexts (fi_srx_context, fi_endpoint(3)): one queue of
 * posted receives and unexpected messages that every endpoint bound to it
 * (fi_ep_bind before fi_enable) matches its incoming messages against; a
 * message's completion goes to the CQ and counters of the endpoint it
 * came on (ofi_rx_done.ep). Posting, cancel and peek on the context are
 * util's; completions not tied to an arrival (cancel, a peek that finds
 * nothing) go to the first endpoint bound, which is also the queue's
 * q->ep. The provider supplies the queue's match ops (its unexpected
 * messages name the endpoint that holds them) and, bound endpoints
 * sharing the context's lock, serializes their progress with it.
 */
struct util_srx;

struct ofi_srx_ops {
	/* Optional: a receive was posted, so what bound endpoints held
	 * back (stalled unexpected messages) may go on. Under srx->lock. */
	void (*posted)(struct util_srx *srx);
	/* Optional: every receive entry is in use; progress the bound
	 * endpoints so some complete. Under srx->lock. */
	void (*progress)(struct util_srx *srx);
	/* Optional: the memory interface of a receive's buffers (device
	 * memory); host memory when absent. Under srx->lock. */
	void (*rx_mem)(struct util_srx *srx, void **desc,
		       const struct iovec *iov, size_t count,
		       struct ofi_rx_mem *mem);
};

struct util_srx {
	struct fid_ep ep_fid; /* FI_CLASS_SRX_CTX */
	struct util_domain *domain;
	struct ofi_match_queue q;
	/* The queue's lock, and the lock of every endpoint bound (the
	 * provider takes it as theirs): matching and delivery into any of
	 * them happen under it. */
	ofi_mutex_t lock;
	ofi_atomic32_t ref;	    /* endpoints bound */
	struct dlist_entry ep_list; /* struct util_ep.srx_entry */
	uint64_t caps;		    /* rx_attr caps */
	uint64_t op_flags;	    /* rx_attr op_flags: fi_recv's */
	const struct ofi_srx_ops *ops;
};

/*
 * fi_srx_context for a provider: @attr's size receive entries, matching
 * with @mops. The context's fid ops, receive ops and fi_cancel are util's.
 */
int ofi_srx_open(struct util_domain *domain, const struct fi_rx_attr *attr,
		 const struct ofi_match_ops *mops,
		 const struct ofi_srx_ops *sops, struct util_srx **srx,
		 void *context);
/*
 * A receive posted to @srx (its fi_recv/fi_trecv and their forms, or a
 * bound endpoint's): 0, -FI_EAGAIN, -FI_EINVAL, or -FI_EOPBADSTATE while
 * no endpoint is bound. Takes srx->lock.
 */
ssize_t ofi_srx_post_recv(struct util_srx *srx, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t addr,
			  uint64_t tag, uint64_t ignore, void *context,
			  uint64_t flags, bool tagged);
/* fi_ep_bind(ep, srx) (util_ep.c) and the endpoint's close. */
int ofi_srx_bind(struct util_srx *srx, struct util_ep *ep);
void ofi_srx_unbind(struct util_srx *srx, struct util_ep *ep);

#endif /* OFI_MATCH_H */
