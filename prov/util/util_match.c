/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_match.c - provider-neutral receive matching: which posted receive
 * takes an incoming message, which unexpected message a new receive
 * takes, FI_PEEK/FI_CLAIM/FI_DISCARD, FI_MULTI_RECV slices, fi_cancel and
 * the receive completions. The provider moves the bytes (see ofi_match.h).
 *
 * Order: messages are matched in arrival order against receives in post
 * order, per queue (msg and tagged), as fi_msg(3)/fi_tagged(3) require.
 *
 * Also the shared receive context (fi_srx_context): one such queue that
 * several endpoints match against (ofi_match.h, struct util_srx).
 */
#include <stdlib.h>

#include "ofi_match.h"

void ofi_match_init(struct ofi_match_queue *q, struct util_ep *ep,
		    const struct ofi_match_ops *ops)
{
	dlist_init(&q->posted[0]);
	dlist_init(&q->posted[1]);
	dlist_init(&q->unexp[0]);
	dlist_init(&q->unexp[1]);
	dlist_init(&q->claimed);
	dlist_init(&q->rx_free);
	q->ep = ep;
	q->ops = ops;
	q->directed = ep && (ep->caps & FI_DIRECTED_RECV);
}

int ofi_match_pool(struct ofi_match_queue *q, size_t count)
{
	size_t i;

	q->pool = calloc(count, sizeof(*q->pool));
	if (!q->pool)
		return -FI_ENOMEM;
	for (i = 0; i < count; i++)
		ofi_match_rx_add(q, &q->pool[i].m);
	return 0;
}

void ofi_match_pool_free(struct ofi_match_queue *q)
{
	free(q->pool);
	q->pool = NULL;
	dlist_init(&q->rx_free);
}

/* ------------------------------------------------------------------ */
/* Receive buffers.                                                     */

size_t ofi_rx_buf_iov(const struct ofi_rx_buf *rx, size_t off, size_t len,
		      struct iovec *iov, size_t max)
{
	size_t i, n = 0, take;

	for (i = 0; i < rx->iov_count && len && n < max; i++) {
		if (off >= rx->iov[i].iov_len) {
			off -= rx->iov[i].iov_len;
			continue;
		}
		take = OFI_MIN(rx->iov[i].iov_len - off, len);
		iov[n].iov_base = (char *)rx->iov[i].iov_base + off;
		iov[n].iov_len = take;
		n++;
		len -= take;
		off = 0;
	}
	return n;
}

void *ofi_rx_buf_at(const struct ofi_rx_buf *rx, size_t off)
{
	size_t i;

	for (i = 0; i < rx->iov_count; i++) {
		if (off < rx->iov[i].iov_len)
			return (char *)rx->iov[i].iov_base + off;
		off -= rx->iov[i].iov_len;
	}
	return NULL;
}

int ofi_rx_buf_persist(const struct ofi_rx_buf *rx,
		       const struct ofi_rx_slice *sl)
{
	return ofi_iov_persist(rx->iov, rx->pmem, rx->iov_count, sl->off,
			       sl->len);
}

static struct ofi_rx_buf *
ofi_rx_buf_get(struct ofi_match_queue *q, const struct iovec *iov, void **desc,
	       size_t count, const struct ofi_rx_mem *mem, fi_addr_t addr,
	       uint64_t tag, uint64_t ignore, void *context, uint64_t flags,
	       bool tagged)
{
	size_t size =
		count == 1 ? iov[0].iov_len : ofi_total_iov_len(iov, count);
	struct ofi_rx_entry *m;
	struct ofi_rx_buf *rx;

	m = ofi_match_rx_get(q, context, flags, addr, tag, ignore, tagged,
			     size);
	if (!m)
		return NULL;
	rx = ofi_rx_buf_of(m);
	rx->iface = mem->iface;
	rx->device = mem->device;
	rx->iov_count = count;
	if (count)
		memcpy(rx->iov, iov, count * sizeof(*iov));
	if (OFI_UNLIKELY(q->ep->caps & FI_RMA_PMEM))
		ofi_iov_pmem(rx->pmem, desc, count);
	return rx;
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD on the tagged unexpected queue. */
static ssize_t ofi_match_claim(struct ofi_match_queue *q,
			       const struct iovec *iov, void **desc,
			       size_t count, const struct ofi_rx_mem *mem,
			       fi_addr_t addr, uint64_t tag, uint64_t ignore,
			       void *context, uint64_t flags)
{
	struct ofi_unexp_msg *u;
	struct ofi_rx_buf *rx;

	if (flags & FI_PEEK)
		return ofi_match_peek(q, context, flags, addr, tag, ignore);
	u = ofi_match_claimed(q, context);
	if (!u)
		return -FI_EINVAL;
	if (flags & FI_DISCARD) {
		ofi_match_discard_claimed(q, u, context, flags);
		return 0;
	}
	rx = ofi_rx_buf_get(q, iov, desc, count, mem, addr, tag, ignore,
			    context, flags, true);
	if (!rx)
		return -FI_EAGAIN;
	ofi_match_deliver(q, &rx->m, u);
	return 0;
}

ssize_t ofi_match_recv(struct ofi_match_queue *q, const struct iovec *iov,
		       void **desc, size_t count, const struct ofi_rx_mem *mem,
		       fi_addr_t addr, uint64_t tag, uint64_t ignore,
		       void *context, uint64_t flags, bool tagged)
{
	struct ofi_rx_buf *rx;

	if (OFI_UNLIKELY(count > OFI_RX_IOV_MAX || (count && !iov)))
		return -FI_EINVAL;
	if (tagged && (flags & (FI_PEEK | FI_CLAIM)))
		return ofi_match_claim(q, iov, desc, count, mem, addr, tag,
				       ignore, context, flags);
	rx = ofi_rx_buf_get(q, iov, desc, count, mem, addr, tag, ignore,
			    context, flags, tagged);
	if (!rx)
		return -FI_EAGAIN;
	ofi_match_post(q, &rx->m);
	return 0;
}

struct ofi_rx_entry *ofi_match_rx_get(struct ofi_match_queue *q, void *context,
				      uint64_t flags, fi_addr_t addr,
				      uint64_t tag, uint64_t ignore,
				      bool tagged, size_t size)
{
	struct dlist_entry *item = dlist_pop_front(&q->rx_free);
	struct ofi_rx_entry *rx;

	if (!item)
		return NULL;
	rx = container_of(item, struct ofi_rx_entry, entry);
	rx->context = context;
	rx->flags = flags;
	rx->addr = q->directed ? addr : FI_ADDR_UNSPEC;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->size = size;
	rx->used = 0;
	rx->pending = 0;
	rx->tagged = tagged;
	rx->multi = !tagged && (flags & FI_MULTI_RECV);
	rx->released = false;
	rx->posted = false;
	return rx;
}

void ofi_match_rx_put(struct ofi_match_queue *q, struct ofi_rx_entry *rx)
{
	if (rx->posted)
		dlist_remove(&rx->entry);
	rx->posted = false;
	dlist_insert_head(&rx->entry, &q->rx_free);
}

/* Unlinks @rx from its posted queue. */
static void ofi_match_unpost(struct ofi_rx_entry *rx)
{
	if (!rx->posted)
		return;
	dlist_remove(&rx->entry);
	dlist_init(&rx->entry);
	rx->posted = false;
}

struct ofi_rx_entry *ofi_match_posted_slow(struct ofi_match_queue *q,
					   bool tagged, fi_addr_t addr,
					   uint64_t tag)
{
	struct dlist_entry *head = &q->posted[tagged];
	struct dlist_entry *item;
	struct ofi_rx_entry *rx;

	/* The inline fast path already tried the first entry. */
	for (item = head->next->next; item != head; item = item->next) {
		rx = container_of(item, struct ofi_rx_entry, entry);
		if ((!tagged || ofi_match_tag(rx->tag, rx->ignore, tag)) &&
		    ofi_match_addr(rx->addr, addr))
			return rx;
	}
	return NULL;
}

void ofi_match_take(struct ofi_match_queue *q, struct ofi_rx_entry *rx,
		    size_t msg_size, struct ofi_rx_slice *s)
{
	size_t off = rx->multi ? rx->used : 0;
	size_t cap = rx->size > off ? rx->size - off : 0;

	s->off = off;
	s->len = msg_size < cap ? msg_size : cap;
	s->olen = msg_size - s->len;
	rx->pending++;
	if (rx->multi) {
		rx->used += s->len;
		if (rx->size - rx->used < q->ep->min_multi_recv)
			rx->released = true;
		s->consumed = rx->released;
	} else {
		s->consumed = true;
	}
	if (s->consumed)
		ofi_match_unpost(rx);
}

bool ofi_match_done(struct ofi_match_queue *q, struct ofi_rx_entry *rx,
		    const struct ofi_rx_slice *s, const struct ofi_rx_done *d)
{
	struct ofi_rx_comp c = {
		.context = rx->context,
		.op_flags = rx->flags,
		.flags = d->flags,
		.buf = d->buf,
		.len = s->len,
		.data = d->data,
		.tag = d->tag,
		.src_addr = d->src_addr,
		.src_raw = d->src_raw,
		.src_rawlen = d->src_rawlen,
		.olen = s->olen,
		.err = d->err,
	};
	bool finished = true;

	rx->pending--;
	if (rx->multi) {
		finished = rx->released && !rx->pending;
		if (finished)
			c.flags |= FI_MULTI_RECV;
	}
	ofi_ep_rx_complete(d->ep ? d->ep : q->ep, &c);
	if (finished)
		ofi_match_rx_put(q, rx);
	return finished;
}

static bool ofi_unexp_matches(struct ofi_match_queue *q,
			      struct ofi_unexp_msg *u, fi_addr_t addr,
			      uint64_t tag, uint64_t ignore)
{
	if (u->tagged && !ofi_match_tag(tag, ignore, u->tag))
		return false;
	if (addr == FI_ADDR_UNSPEC || addr == u->addr)
		return true;
	/* Queued before its sender was in the AV: ask again. */
	if (u->addr != FI_ADDR_NOTAVAIL || !u->ops->resolve_addr)
		return false;
	u->addr = u->ops->resolve_addr(q, u);
	return addr == u->addr;
}

struct ofi_unexp_msg *ofi_match_unexp(struct ofi_match_queue *q, bool tagged,
				      fi_addr_t addr, uint64_t tag,
				      uint64_t ignore)
{
	struct dlist_entry *item;
	struct ofi_unexp_msg *u;

	if (!q->directed)
		addr = FI_ADDR_UNSPEC;
	dlist_foreach(&q->unexp[tagged], item) {
		u = container_of(item, struct ofi_unexp_msg, entry);
		if (ofi_unexp_matches(q, u, addr, tag, ignore))
			return u;
	}
	return NULL;
}

void ofi_match_deliver(struct ofi_match_queue *q, struct ofi_rx_entry *rx,
		       struct ofi_unexp_msg *u)
{
	struct ofi_rx_slice s;

	dlist_remove(&u->entry);
	ofi_match_take(q, rx, u->size, &s);
	u->ops->deliver(q, rx, u, &s);
}

void ofi_match_post(struct ofi_match_queue *q, struct ofi_rx_entry *rx)
{
	struct ofi_unexp_msg *u;

	/* Queued first: ofi_match_take unlinks it once it is consumed. */
	dlist_insert_tail(&rx->entry, &q->posted[rx->tagged]);
	rx->posted = true;
	while (rx->posted && (u = ofi_match_unexp(q, rx->tagged, rx->addr,
						  rx->tag, rx->ignore)))
		ofi_match_deliver(q, rx, u);
}

bool ofi_match_unexp_any(struct ofi_match_queue *q,
			 bool (*pred)(struct ofi_unexp_msg *u, void *arg),
			 void *arg)
{
	struct dlist_entry *lists[] = {&q->unexp[0], &q->unexp[1], &q->claimed};
	struct dlist_entry *item;
	size_t i;

	for (i = 0; i < OFI_ARRAY_SIZE(lists); i++) {
		dlist_foreach(lists[i], item) {
			if (pred(container_of(item, struct ofi_unexp_msg,
					      entry),
				 arg))
				return true;
		}
	}
	return false;
}

struct ofi_unexp_apply {
	void (*fn)(struct ofi_unexp_msg *u, void *arg);
	void *arg;
};

static bool ofi_unexp_apply(struct ofi_unexp_msg *u, void *arg)
{
	struct ofi_unexp_apply *a = arg;

	a->fn(u, a->arg);
	return false;
}

void ofi_match_unexp_foreach(struct ofi_match_queue *q,
			     void (*fn)(struct ofi_unexp_msg *u, void *arg),
			     void *arg)
{
	struct ofi_unexp_apply a = {fn, arg};

	ofi_match_unexp_any(q, ofi_unexp_apply, &a);
}

static void ofi_unexp_forget(struct ofi_unexp_msg *u, void *arg)
{
	if (u->addr == *(fi_addr_t *)arg)
		u->addr = FI_ADDR_NOTAVAIL;
}

void ofi_match_addr_removed(struct ofi_match_queue *q, fi_addr_t addr)
{
	ofi_match_unexp_foreach(q, ofi_unexp_forget, &addr)
		;
}

static fi_addr_t ofi_unexp_src(struct ofi_match_queue *q,
			       struct ofi_unexp_msg *u)
{
	if (!(q->ep->caps & FI_SOURCE))
		return FI_ADDR_NOTAVAIL;
	return u->ops->src_addr ? u->ops->src_addr(q, u) : u->addr;
}

/* The completion of a peek or claim: describes @u, moves no data. */
static void ofi_match_peek_comp(struct ofi_match_queue *q,
				struct ofi_unexp_msg *u, void *context,
				uint64_t flags, size_t len)
{
	struct ofi_rx_comp c = {
		.context = context,
		.op_flags = flags | FI_COMPLETION,
		.flags = FI_RECV | u->cq_flags,
		.len = len,
		.data = u->data,
		.tag = u->tag,
		.src_addr = ofi_unexp_src(q, u),
	};

	ofi_ep_rx_complete(q->ep, &c);
}

ssize_t ofi_match_peek(struct ofi_match_queue *q, void *context, uint64_t flags,
		       fi_addr_t addr, uint64_t tag, uint64_t ignore)
{
	struct ofi_unexp_msg *u;

	u = ofi_match_unexp(q, true, addr, tag, ignore);
	if (!u) {
		if (q->ep->rx_cq)
			ofi_cq_write_error_code(q->ep->rx_cq, context,
						FI_RECV | FI_TAGGED, FI_ENOMSG,
						0, 0);
		return 0;
	}
	ofi_match_peek_comp(q, u, context, flags, u->size);
	if (flags & FI_CLAIM) {
		dlist_remove(&u->entry);
		u->claim_ctx = context;
		dlist_insert_tail(&u->entry, &q->claimed);
	} else if (flags & FI_DISCARD) {
		dlist_remove(&u->entry);
		u->ops->discard(q, u, 0);
	}
	return 0;
}

struct ofi_unexp_msg *ofi_match_claimed(struct ofi_match_queue *q,
					void *context)
{
	struct dlist_entry *item;
	struct ofi_unexp_msg *u;

	dlist_foreach(&q->claimed, item) {
		u = container_of(item, struct ofi_unexp_msg, entry);
		if (u->claim_ctx == context)
			return u;
	}
	return NULL;
}

void ofi_match_discard_claimed(struct ofi_match_queue *q,
			       struct ofi_unexp_msg *u, void *context,
			       uint64_t flags)
{
	ofi_match_peek_comp(q, u, context, flags, 0);
	dlist_remove(&u->entry);
	u->ops->discard(q, u, 0);
}

static uint64_t ofi_rx_cancel_flags(const struct ofi_rx_entry *rx)
{
	return FI_RECV | (rx->tagged ? FI_TAGGED : FI_MSG) |
	       (rx->multi ? FI_MULTI_RECV : 0);
}

ssize_t ofi_match_cancel(struct ofi_match_queue *q, void *context)
{
	struct dlist_entry *item;
	struct ofi_rx_entry *rx;
	int i;

	for (i = 0; i < 2; i++) {
		dlist_foreach(&q->posted[i], item) {
			rx = container_of(item, struct ofi_rx_entry, entry);
			if (rx->context != context)
				continue;
			if (rx->pending) {
				/* Its last slice releases it. */
				rx->released = true;
				ofi_match_unpost(rx);
				return 0;
			}
			if (q->ep->rx_cq)
				ofi_cq_write_error_code(q->ep->rx_cq, context,
							ofi_rx_cancel_flags(rx),
							FI_ECANCELED, 0, 0);
			ofi_ep_cntr_inc_err(q->ep, OFI_CNTR_RX);
			ofi_match_rx_put(q, rx);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void ofi_match_fail_posted(struct ofi_match_queue *q, int err)
{
	struct dlist_entry *item;
	struct ofi_rx_entry *rx;
	int i;

	for (i = 0; i < 2; i++) {
		while (!dlist_empty(&q->posted[i])) {
			item = q->posted[i].next;
			rx = container_of(item, struct ofi_rx_entry, entry);
			if (rx->pending) {
				/* Its last slice (aborted too) releases it. */
				rx->released = true;
				ofi_match_unpost(rx);
				continue;
			}
			if (q->ep->rx_cq)
				ofi_cq_write_error_code(
					q->ep->rx_cq, rx->context,
					ofi_rx_cancel_flags(rx), err, 0, 0);
			ofi_ep_cntr_inc_err(q->ep, OFI_CNTR_RX);
			ofi_match_rx_put(q, rx);
		}
	}
}

void ofi_match_flush_if(struct ofi_match_queue *q,
			bool (*pred)(struct ofi_unexp_msg *u, void *arg),
			void *arg, int status)
{
	struct dlist_entry *lists[] = {&q->unexp[0], &q->unexp[1], &q->claimed};
	struct dlist_entry *item, *next;
	struct ofi_unexp_msg *u;
	size_t i;

	for (i = 0; i < OFI_ARRAY_SIZE(lists); i++) {
		for (item = lists[i]->next; item != lists[i]; item = next) {
			next = item->next;
			u = container_of(item, struct ofi_unexp_msg, entry);
			if (pred && !pred(u, arg))
				continue;
			dlist_remove(item);
			u->ops->discard(q, u, status);
		}
	}
}

static bool ofi_unexp_of_ops(struct ofi_unexp_msg *u, void *arg)
{
	return u->ops == arg;
}

void ofi_match_flush_ops(struct ofi_match_queue *q,
			 const struct ofi_match_ops *ops, int status)
{
	ofi_match_flush_if(q, ops ? ofi_unexp_of_ops : NULL, (void *)ops,
			   status);
}

void ofi_match_flush(struct ofi_match_queue *q, int status)
{
	ofi_match_flush_if(q, NULL, NULL, status);
}

/* ------------------------------------------------------------------ */
/* Shared receive contexts.                                             */

static struct util_srx *ofi_srx_of(struct fid_ep *ep_fid)
{
	return container_of(ep_fid, struct util_srx, ep_fid);
}

ssize_t ofi_srx_post_recv(struct util_srx *srx, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t addr,
			  uint64_t tag, uint64_t ignore, void *context,
			  uint64_t flags, bool tagged)
{
	struct ofi_rx_mem mem = {.iface = FI_HMEM_SYSTEM};
	ssize_t ret;

	if (OFI_UNLIKELY(count > OFI_RX_IOV_MAX || (count && !iov)))
		return -FI_EINVAL;
	ofi_mutex_lock(&srx->lock);
	if (!srx->q.ep) {
		/* Completions need an endpoint: bind one first. */
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (srx->ops->rx_mem)
		srx->ops->rx_mem(srx, desc, iov, count, &mem);
	ret = ofi_match_recv(&srx->q, iov, desc, count, &mem, addr, tag, ignore,
			     context, flags, tagged);
	if (ret == -FI_EAGAIN && srx->ops->progress)
		srx->ops->progress(srx);
	if (srx->ops->posted)
		srx->ops->posted(srx);
out:
	ofi_mutex_unlock(&srx->lock);
	return ret;
}

static ssize_t ofi_srx_recv(struct fid_ep *ep, void *buf, size_t len,
			    void *desc, fi_addr_t src_addr, void *context)
{
	struct iovec iov = {buf, len};

	return ofi_srx_post_recv(ofi_srx_of(ep), &iov, &desc, 1, src_addr, 0, 0,
				 context, ofi_srx_of(ep)->op_flags, false);
}

static ssize_t ofi_srx_recvv(struct fid_ep *ep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t src_addr,
			     void *context)
{
	return ofi_srx_post_recv(ofi_srx_of(ep), iov, desc, count, src_addr, 0,
				 0, context, ofi_srx_of(ep)->op_flags, false);
}

static ssize_t ofi_srx_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ofi_srx_post_recv(ofi_srx_of(ep), msg->msg_iov, msg->desc,
				 msg->iov_count, msg->addr, 0, 0, msg->context,
				 flags, false);
}

static ssize_t ofi_srx_trecv(struct fid_ep *ep, void *buf, size_t len,
			     void *desc, fi_addr_t src_addr, uint64_t tag,
			     uint64_t ignore, void *context)
{
	struct iovec iov = {buf, len};

	return ofi_srx_post_recv(ofi_srx_of(ep), &iov, &desc, 1, src_addr, tag,
				 ignore, context, ofi_srx_of(ep)->op_flags,
				 true);
}

static ssize_t ofi_srx_trecvv(struct fid_ep *ep, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src_addr,
			      uint64_t tag, uint64_t ignore, void *context)
{
	return ofi_srx_post_recv(ofi_srx_of(ep), iov, desc, count, src_addr,
				 tag, ignore, context, ofi_srx_of(ep)->op_flags,
				 true);
}

static ssize_t ofi_srx_trecvmsg(struct fid_ep *ep,
				const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return ofi_srx_post_recv(ofi_srx_of(ep), msg->msg_iov, msg->desc,
				 msg->iov_count, msg->addr, msg->tag,
				 msg->ignore, msg->context, flags, true);
}

static ssize_t ofi_srx_cancel(struct fid *fid, void *context)
{
	struct util_srx *srx = container_of(fid, struct util_srx, ep_fid.fid);
	ssize_t ret = -FI_ENOENT;

	ofi_mutex_lock(&srx->lock);
	if (srx->q.ep)
		ret = ofi_match_cancel(&srx->q, context);
	ofi_mutex_unlock(&srx->lock);
	return ret;
}

static ssize_t ofi_srx_size_left(struct fid_ep *ep)
{
	struct util_srx *srx = ofi_srx_of(ep);
	struct dlist_entry *item;
	ssize_t n = 0;

	ofi_mutex_lock(&srx->lock);
	dlist_foreach(&srx->q.rx_free, item)
		n++;
	ofi_mutex_unlock(&srx->lock);
	return n;
}

static int ofi_srx_close(struct fid *fid)
{
	struct util_srx *srx = container_of(fid, struct util_srx, ep_fid.fid);

	if (ofi_atomic_get32(&srx->ref))
		return -FI_EBUSY;
	/* No endpoint is left to hold an unexpected message. */
	ofi_match_pool_free(&srx->q);
	ofi_atomic_dec32(&srx->domain->ref);
	ofi_mutex_destroy(&srx->lock);
	free(srx);
	return 0;
}

OFI_CLOSE_ONLY_FI_OPS(ofi_srx_fi_ops, ofi_srx_close);

static const struct fi_ops_ep ofi_srx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ofi_srx_cancel,
	.getopt = fi_no_getopt,
	.setopt = fi_no_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = ofi_srx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

static const struct fi_ops_msg ofi_srx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = ofi_srx_recv,
	.recvv = ofi_srx_recvv,
	.recvmsg = ofi_srx_recvmsg,
	.send = fi_no_msg_send,
	.sendv = fi_no_msg_sendv,
	.sendmsg = fi_no_msg_sendmsg,
	.inject = fi_no_msg_inject,
	.senddata = fi_no_msg_senddata,
	.injectdata = fi_no_msg_injectdata,
};

static const struct fi_ops_tagged ofi_srx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = ofi_srx_trecv,
	.recvv = ofi_srx_trecvv,
	.recvmsg = ofi_srx_trecvmsg,
	.send = fi_no_tagged_send,
	.sendv = fi_no_tagged_sendv,
	.sendmsg = fi_no_tagged_sendmsg,
	.inject = fi_no_tagged_inject,
	.senddata = fi_no_tagged_senddata,
	.injectdata = fi_no_tagged_injectdata,
};

/* The receive queue size when the attributes leave it to us. */
#define OFI_SRX_SIZE 1024

int ofi_srx_open(struct util_domain *domain, const struct fi_rx_attr *attr,
		 const struct ofi_match_ops *mops,
		 const struct ofi_srx_ops *sops, struct util_srx **srxp,
		 void *context)
{
	size_t size = attr && attr->size ? attr->size : OFI_SRX_SIZE;
	struct util_srx *srx;
	int ret;

	if (!srxp || (attr && attr->iov_limit > OFI_RX_IOV_MAX) ||
	    size > 64 * OFI_SRX_SIZE)
		return -FI_EINVAL;
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	srx->domain = domain;
	srx->caps = attr ? attr->caps : 0;
	srx->op_flags = attr ? attr->op_flags : 0;
	srx->ops = sops;
	ofi_match_init(&srx->q, NULL, mops);
	srx->q.directed = srx->caps & FI_DIRECTED_RECV;
	ret = ofi_match_pool(&srx->q, size);
	if (ret) {
		free(srx);
		return ret;
	}
	ofi_mutex_init(&srx->lock);
	ofi_atomic_init32(&srx->ref, 0);
	dlist_init(&srx->ep_list);
	ofi_ep_fid_init(&srx->ep_fid, FI_CLASS_SRX_CTX, context,
			&ofi_srx_fi_ops, &ofi_srx_ep_ops);
	srx->ep_fid.msg = (struct fi_ops_msg *)&ofi_srx_msg_ops;
	srx->ep_fid.tagged = (struct fi_ops_tagged *)&ofi_srx_tagged_ops;
	ofi_atomic_inc32(&domain->ref);
	*srxp = srx;
	return 0;
}

int ofi_srx_bind(struct util_srx *srx, struct util_ep *ep)
{
	if (srx->ep_fid.fid.ops != &ofi_srx_fi_ops ||
	    srx->domain != ep->domain || ep->srx)
		return -FI_EINVAL;
	ofi_mutex_lock(&srx->lock);
	dlist_insert_tail(&ep->srx_entry, &srx->ep_list);
	if (!srx->q.ep)
		srx->q.ep = ep;
	ofi_mutex_unlock(&srx->lock);
	ep->srx = srx;
	ofi_atomic_inc32(&srx->ref);
	return 0;
}

void ofi_srx_unbind(struct util_srx *srx, struct util_ep *ep)
{
	ofi_mutex_lock(&srx->lock);
	dlist_remove(&ep->srx_entry);
	/* Completions without an arrival go to the next endpoint. */
	if (srx->q.ep == ep)
		srx->q.ep = dlist_empty(&srx->ep_list)
				    ? NULL
				    : container_of(srx->ep_list.next,
						   struct util_ep, srx_entry);
	ofi_mutex_unlock(&srx->lock);
}
