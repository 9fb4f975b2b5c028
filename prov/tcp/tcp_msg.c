/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_msg.c - FI_MSG and FI_TAGGED over tcp: sends (header and the user's
 * iovs in one writev, inject copies, remote CQ data, delivery complete on
 * the receiver's ACK), receives on util's matching queues (ofi_match.h:
 * FI_PEEK/FI_CLAIM/FI_DISCARD, directed receive, multi-receive, cancel,
 * truncation), and the receive side of incoming message frames.
 *
 * A matched frame is read straight into the posted buffer (what does not
 * fit is dropped: FI_ETRUNC). An unmatched one is queued as unexpected at
 * once, so FI_PEEK and ordering see it, and its payload is buffered while
 * the endpoint's bound (tcp_max_unexp) allows; past it, the connection
 * stalls with the head read and the payload goes straight into whichever
 * receive later takes the message.
 *
 * Locking: everything here runs under the endpoint lock.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_plain.h"
#include "tcp.h"

/* ------------------------------------------------------------------ */
/* Receive side.                                                        */

static uint64_t tcp_rx_flags(bool tagged, bool data)
{
	return FI_RECV | (tagged ? FI_TAGGED : FI_MSG) |
	       (data ? FI_REMOTE_CQ_DATA : 0);
}

/*
 * A slice of @rx landed (@err 0) or failed. @src is the sender's fi_addr
 * (FI_ADDR_NOTAVAIL or anonymous when not in the AV), @conn its name in
 * the connection layer: FI_SOURCE_ERR reports the address it listens on.
 */
static void tcp_rx_finish(struct tcp_ep *ep, struct ofi_rx_buf *rx,
			  const struct ofi_rx_slice *sl, bool tagged,
			  uint64_t cq_flags, uint64_t data, uint64_t tag,
			  fi_addr_t src, fi_addr_t conn, int err)
{
	struct sockaddr_storage sa;
	struct ofi_rx_done d = {
		.flags = tcp_rx_flags(tagged, cq_flags & FI_REMOTE_CQ_DATA),
		.buf = ofi_rx_buf_at(rx, sl->off),
		.data = data,
		.tag = tag,
		.src_addr = ep->util.caps & FI_SOURCE ? tcp_src_addr(ep, src)
						      : FI_ADDR_NOTAVAIL,
		.err = err,
		.ep = &ep->util, /* a shared queue's message completes here */
	};

	if (OFI_UNLIKELY(d.src_addr == FI_ADDR_NOTAVAIL &&
			 (ep->util.caps & FI_SOURCE_ERR) && !err &&
			 !ofi_sock_peer_sa(ep->set, conn, &sa))) {
		d.src_raw = &sa;
		d.src_rawlen = ep->namelen;
	}
	ofi_match_done(ep->rxq, &rx->m, sl, &d);
}

static void tcp_send_ack(struct tcp_ep *ep, fi_addr_t src, uint64_t op_id,
			 int status)
{
	struct tcp_hdr_view h = {
		.op = TCP_OP_ACK,
		.op_id = op_id,
		.status = (uint16_t)(status < 0 ? -status : status),
	};

	if (src != FI_ADDR_NOTAVAIL)
		(void)tcp_resp_send(ep, src, &h, NULL, 0, NULL);
}

static void tcp_unexp_free(struct tcp_ep *ep, struct tcp_unexp *u)
{
	ep->unexp_bytes -= u->buffered;
	free(u->buf);
	free(u);
}

static fi_addr_t tcp_match_resolve(struct ofi_match_queue *q,
				   struct ofi_unexp_msg *um);

/* @um's sender as an fi_addr, resolved once it entered the AV. */
static fi_addr_t tcp_unexp_addr(struct ofi_match_queue *q,
				struct ofi_unexp_msg *um)
{
	if (um->addr == FI_ADDR_NOTAVAIL)
		um->addr = tcp_match_resolve(q, um);
	return um->addr;
}

/*
 * Whether @u's sender may still get an answer: not when its address left
 * the AV meanwhile (it may name another peer now); an anonymous sender's
 * connection is its own.
 */
static bool tcp_unexp_ackable(const struct tcp_unexp *u)
{
	return u->m.addr != FI_ADDR_NOTAVAIL || u->src >= OFI_SOCK_ANON_ADDR;
}

static void tcp_unexp_finish(struct tcp_ep *ep, struct tcp_unexp *u, int err)
{
	/* FI_COMMIT_COMPLETE: durable before the receive completes. */
	int status = u->commit && !err ? tcp_rx_persist(u->rx, &u->sl) : 0;

	/* FI_SOURCE: the sender's fi_addr, also if it came in anonymously */
	tcp_rx_finish(ep, u->rx, &u->sl, u->m.tagged, u->m.cq_flags, u->m.data,
		      u->m.tag, tcp_unexp_addr(ep->rxq, &u->m), u->src, err);
	/* Only a commit's ACK waits this long: not to an address the AV
	 * dropped meanwhile (it may name another peer now). */
	if (u->ack && !err && tcp_unexp_ackable(u))
		tcp_send_ack(ep, u->src, u->op_id, status);
	tcp_unexp_free(ep, u);
}

/* Copies an arrived unexpected message into its receive. */
static void tcp_unexp_copy(struct tcp_ep *ep, struct tcp_unexp *u)
{
	struct iovec iov[OFI_SOCK_RX_IOV];
	size_t cnt;
	int err;

	if (tcp_rx_staged(ep, u->rx)) {
		err = tcp_rx_copy(ep, u->rx, u->sl.off, u->buf, u->sl.len);
		/* A commit's sender waits for its ACK: it gets the error. */
		if (err && u->ack && tcp_unexp_ackable(u)) {
			tcp_send_ack(ep, u->src, u->op_id, err);
			u->ack = false;
		}
		tcp_unexp_finish(ep, u, err);
		return;
	}
	cnt = ofi_rx_buf_iov(u->rx, u->sl.off, u->sl.len, iov, OFI_SOCK_RX_IOV);
	ofi_copy_to_iov(iov, cnt, 0, u->buf, u->sl.len);
	tcp_unexp_finish(ep, u, 0);
}

/*
 * Whether @u may be buffered: its payload and its own entry count against
 * the bound, so a flood of empty messages is bounded too.
 */
static bool tcp_unexp_room(struct tcp_ep *ep, const struct tcp_unexp *u)
{
	uint64_t need = u->m.size + sizeof(*u);

	return need <= ep->unexp_max && ep->unexp_bytes + need <= ep->unexp_max;
}

/* Buffers @u's payload; false while the bound does not allow it. */
static bool tcp_unexp_buffer(struct tcp_ep *ep, struct tcp_unexp *u,
			     struct iovec *iov, size_t *cnt)
{
	if (!tcp_unexp_room(ep, u))
		return false;
	u->buf = malloc(u->m.size ? u->m.size : 1);
	if (!u->buf)
		return false;
	u->buffered = u->m.size + sizeof(*u);
	ep->unexp_bytes += u->buffered;
	u->stalled = false;
	iov[0].iov_base = u->buf;
	iov[0].iov_len = u->m.size;
	*cnt = u->m.size ? 1 : 0;
	return true;
}

/* Where a matched frame's slice is read: the receive, or a bounce. */
static void tcp_recv_iov(struct tcp_ep *ep, struct tcp_frame *f,
			 struct iovec *iov, size_t *cnt)
{
	f->u.recv.staged = false;
	if (tcp_rx_staged(ep, f->u.recv.rx)) {
		tcp_rx_stage(f, iov, cnt);
		return;
	}
	*cnt = ofi_rx_buf_iov(f->u.recv.rx, f->u.recv.sl.off, f->u.recv.sl.len,
			      iov, OFI_SOCK_RX_IOV);
}

/* A stalled unexpected message asked again (ofi_sock_resume). */
static int tcp_unexp_retry(struct tcp_ep *ep, struct tcp_frame *f,
			   struct iovec *iov, size_t *cnt)
{
	struct tcp_unexp *u = f->u.unexp;

	if (u->dropped) {
		tcp_unexp_free(ep, u);
		f->kind = TCP_FR_DROP;
		*cnt = 0;
		return 0;
	}
	if (u->rx) {
		/* Matched meanwhile: straight into the receive. */
		f->kind = TCP_FR_RECV;
		f->u.recv.rx = u->rx;
		f->u.recv.sl = u->sl;
		f->u.recv.u = u;
		tcp_recv_iov(ep, f, iov, cnt);
		return 0;
	}
	return tcp_unexp_buffer(ep, u, iov, cnt) ? 0 : -FI_EAGAIN;
}

int tcp_msg_head(struct tcp_ep *ep, struct tcp_frame *f, uint64_t payload,
		 struct iovec *iov, size_t *cnt)
{
	bool tagged = f->h.op == TCP_OP_TAGGED;
	bool data = f->h.flags & TCP_F_CQ_DATA;
	struct ofi_rx_entry *m;
	struct tcp_unexp *u;

	if (f->kind == TCP_FR_UNEXP && f->u.unexp && f->u.unexp->stalled)
		return tcp_unexp_retry(ep, f, iov, cnt);

	m = ofi_match_posted(ep->rxq, tagged,
			     ep->rxq->directed ? f->src : FI_ADDR_NOTAVAIL,
			     f->h.tag);
	if (m) {
		f->kind = TCP_FR_RECV;
		f->u.recv.rx = ofi_rx_buf_of(m);
		f->u.recv.u = NULL;
		ofi_match_take(ep->rxq, m, payload, &f->u.recv.sl);
		tcp_recv_iov(ep, f, iov, cnt);
		return 0;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return -FI_ENOMEM;
	u->ep = ep;
	u->src = f->src;
	/* Not in the AV yet: matched by address once it is (resolve). */
	u->m.addr = f->src >= OFI_SOCK_ANON_ADDR ? FI_ADDR_NOTAVAIL : f->src;
	u->m.tag = f->h.tag;
	u->m.data = data ? f->h.data : 0;
	u->m.size = payload;
	u->m.cq_flags =
		(tagged ? FI_TAGGED : FI_MSG) | (data ? FI_REMOTE_CQ_DATA : 0);
	u->m.tagged = tagged;
	u->op_id = f->h.op_id;
	u->ack = f->h.flags & TCP_F_ACK_REQ;
	u->commit = f->h.flags & TCP_F_COMMIT;
	ofi_match_unexp_add(ep->rxq, &u->m);
	f->kind = TCP_FR_UNEXP;
	f->u.unexp = u;
	if (tcp_unexp_buffer(ep, u, iov, cnt))
		return 0;
	u->stalled = true;
	return -FI_EAGAIN;
}

/* FI_SOURCE of a frame read into a receive: a stalled message's sender
 * may have entered the AV since its head came (tcp_match_resolve). */
static fi_addr_t tcp_recv_src(struct tcp_ep *ep, struct tcp_frame *f)
{
	struct tcp_unexp *u = f->u.recv.u;

	return u ? tcp_unexp_addr(ep->rxq, &u->m) : f->src;
}

void tcp_msg_done(struct tcp_ep *ep, struct tcp_frame *f)
{
	struct tcp_unexp *u;
	int status, err = 0;

	if (f->kind == TCP_FR_RECV) {
		if (f->u.recv.staged)
			err = tcp_rx_unstage(ep, f);
		/* FI_COMMIT_COMPLETE: durable before the receive completes */
		status = !err && f->h.flags & TCP_F_COMMIT
				 ? tcp_rx_persist(f->u.recv.rx, &f->u.recv.sl)
				 : err;
		tcp_rx_finish(ep, f->u.recv.rx, &f->u.recv.sl,
			      f->h.op == TCP_OP_TAGGED,
			      f->h.flags & TCP_F_CQ_DATA ? FI_REMOTE_CQ_DATA
							 : 0,
			      f->h.data, f->h.tag, tcp_recv_src(ep, f),
			      f->u.recv.u ? f->u.recv.u->src : f->src, err);
		if (f->h.flags & TCP_F_ACK_REQ)
			tcp_send_ack(ep, f->src, f->h.op_id, status);
		if (f->u.recv.u)
			tcp_unexp_free(ep, f->u.recv.u);
		return;
	}
	if (f->kind == TCP_FR_DROP) {
		/* A stalled message discarded before its payload came, or
		 * one for a receive context not there (f->err). */
		if (f->h.flags & TCP_F_ACK_REQ)
			tcp_send_ack(ep, f->src, f->h.op_id, f->err);
		return;
	}
	u = f->u.unexp;
	u->arrived = true;
	/* Buffered counts as delivered (fi_cq(3)): answer now. Commit
	 * complete needs the receive buffer (tcp_unexp_finish), unless the
	 * message was discarded: nothing is left to persist. */
	if (u->ack && (!u->commit || u->dropped)) {
		tcp_send_ack(ep, u->src, u->op_id, 0);
		u->ack = false;
	}
	if (u->dropped)
		tcp_unexp_free(ep, u);
	else if (u->rx)
		tcp_unexp_copy(ep, u);
}

void tcp_msg_abort(struct tcp_ep *ep, struct tcp_frame *f, int err)
{
	struct tcp_unexp *u;

	if (f->kind == TCP_FR_RECV) {
		if (f->u.recv.staged)
			tcp_rx_unstage_drop(f);
		tcp_rx_finish(ep, f->u.recv.rx, &f->u.recv.sl,
			      f->h.op == TCP_OP_TAGGED, 0, 0, f->h.tag, f->src,
			      f->src, err);
		if (f->u.recv.u)
			tcp_unexp_free(ep, f->u.recv.u);
		return;
	}
	u = f->u.unexp;
	if (u->rx) {
		tcp_unexp_finish(ep, u, err);
	} else if (u->dropped) {
		tcp_unexp_free(ep, u);
	} else {
		dlist_remove(&u->m.entry); /* unexpected or claimed list */
		tcp_unexp_free(ep, u);
	}
}

static void tcp_match_deliver(struct ofi_match_queue *q, struct ofi_rx_entry *m,
			      struct ofi_unexp_msg *um,
			      const struct ofi_rx_slice *sl)
{
	struct tcp_unexp *u = container_of(um, struct tcp_unexp, m);
	struct tcp_ep *ep = u->ep;

	OFI_UNUSED(q);
	u->rx = ofi_rx_buf_of(m);
	u->sl = *sl;
	if (u->arrived)
		tcp_unexp_copy(ep, u);
	/* else the frame still arriving (or stalled) finishes it */
}

static void tcp_match_discard(struct ofi_match_queue *q,
			      struct ofi_unexp_msg *um, int status)
{
	struct tcp_unexp *u = container_of(um, struct tcp_unexp, m);

	if (!u->arrived) {
		u->dropped = true; /* its frame frees it (and answers) */
		return;
	}
	/* Answered when it arrived, but for a commit: FI_DISCARD answers
	 * now; a closing endpoint (status set) cannot. */
	OFI_UNUSED(q);
	if (u->ack && !status && tcp_unexp_ackable(u))
		tcp_send_ack(u->ep, u->src, u->op_id, 0);
	tcp_unexp_free(u->ep, u);
}

/*
 * A message queued from an anonymous peer: its fi_addr once the peer is
 * in the AV (a directed receive posted after fi_av_insert takes it).
 * One whose address was removed meanwhile stays unresolved.
 */
static fi_addr_t tcp_match_resolve(struct ofi_match_queue *q,
				   struct ofi_unexp_msg *um)
{
	struct tcp_unexp *u = container_of(um, struct tcp_unexp, m);
	fi_addr_t addr;

	if (u->src < OFI_SOCK_ANON_ADDR)
		return FI_ADDR_NOTAVAIL;
	OFI_UNUSED(q);
	addr = tcp_anon_src(u->ep, u->src);
	return addr >= OFI_SOCK_ANON_ADDR ? FI_ADDR_NOTAVAIL : addr;
}

static fi_addr_t tcp_match_src(struct ofi_match_queue *q,
			       struct ofi_unexp_msg *um)
{
	struct tcp_unexp *u = container_of(um, struct tcp_unexp, m);
	fi_addr_t addr = tcp_unexp_addr(q, um);

	return addr == FI_ADDR_NOTAVAIL ? FI_ADDR_NOTAVAIL
					: tcp_src_addr(u->ep, addr);
}

const struct ofi_match_ops tcp_match_ops = {
	.deliver = tcp_match_deliver,
	.discard = tcp_match_discard,
	.resolve_addr = tcp_match_resolve,
	.src_addr = tcp_match_src,
};

/* ------------------------------------------------------------------ */
/* Shared receive contexts: util's queue and posting (ofi_match.h); the
 * endpoints bound to one match in its queue under its lock, and their
 * unexpected messages name them (tcp_unexp.ep).                        */

static struct tcp_ep *tcp_srx_ep(struct dlist_entry *item)
{
	return container_of(item, struct tcp_ep, util.srx_entry);
}

/* A receive was posted: every bound endpoint's stalled message may be
 * what it takes. */
static void tcp_srx_posted(struct util_srx *srx)
{
	struct dlist_entry *item;

	dlist_foreach(&srx->ep_list, item) {
		if (tcp_srx_ep(item)->srx_on)
			tcp_sock_resume(tcp_srx_ep(item));
	}
}

static void tcp_srx_progress(struct util_srx *srx)
{
	struct dlist_entry *item;

	dlist_foreach(&srx->ep_list, item) {
		if (tcp_srx_ep(item)->srx_on)
			tcp_progress_locked(tcp_srx_ep(item));
	}
}

/* A receive's memory, as the first bound endpoint sees it (they share
 * the domain, which decides). */
static void tcp_srx_rx_mem(struct util_srx *srx, void **desc,
			   const struct iovec *iov, size_t count,
			   struct ofi_rx_mem *mem)
{
	struct tcp_ep *ep = container_of(srx->q.ep, struct tcp_ep, util);

	if (tcp_hmem_on(ep))
		tcp_hmem_iface(ep, desc, iov, count, &mem->iface, &mem->device);
}

static const struct ofi_srx_ops tcp_srx_ops = {
	.posted = tcp_srx_posted,
	.progress = tcp_srx_progress,
	.rx_mem = tcp_srx_rx_mem,
};

int tcp_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context)
{
	struct util_domain *dom;
	struct util_srx *srx;
	uint64_t caps;
	int ret;

	if (!domain || !rx_ep)
		return -FI_EINVAL;
	dom = container_of(domain, struct util_domain, domain_fid);
	/* what the engine receives, and what the domain's provider added
	 * on top (FI_TRIGGER, FI_NAMED_RX_CTX, FI_SOURCE_ERR, say) */
	caps = tcp_info_template.rx_attr->caps;
	if (dom->info && dom->info->rx_attr)
		caps |= dom->info->rx_attr->caps;
	if (attr && (attr->iov_limit > TCP_IOV_LIMIT || attr->caps & ~caps))
		return -FI_EINVAL;
	ret = ofi_srx_open(dom, attr, &tcp_match_ops, &tcp_srx_ops, &srx,
			   context);
	if (ret)
		return ret;
	*rx_ep = &srx->ep_fid;
	return 0;
}

/*
 * fi_enable of an endpoint bound to @ep->util.srx: from now on it matches
 * in the context's queue, under the context's lock. Its same-host path
 * through shm closes (shm's messages would match in its own queue), so
 * every peer goes by TCP.
 */
void tcp_srx_enable(struct tcp_ep *ep)
{
	struct util_srx *srx = ep->util.srx;

	tcp_shm_close(ep);
	ep->util.wait_nap = false;
	ofi_mutex_lock(&ep->lock);
	ofi_mutex_lock(&srx->lock);
	ep->rxq = &srx->q;
	ep->srx_on = true;
	__atomic_store_n(&ep->lockp, &srx->lock, __ATOMIC_RELEASE);
	ofi_mutex_unlock(&srx->lock);
	ofi_mutex_unlock(&ep->lock);
}

static bool tcp_unexp_of(struct ofi_unexp_msg *um, void *ep)
{
	return container_of(um, struct tcp_unexp, m)->ep == ep;
}

void tcp_srx_close(struct tcp_ep *ep)
{
	tcp_ep_lock(ep);
	/* frames being read fail into their receives, on our CQ */
	if (ep->set)
		ofi_sock_set_close(ep->set);
	ep->set = NULL;
	ofi_match_flush_if(ep->rxq, tcp_unexp_of, ep, -FI_ECANCELED);
	tcp_ep_release(ep);
}

/* ------------------------------------------------------------------ */
/* Posting receives.                                                    */

static ssize_t tcp_recv_post(struct fid_ep *ep_fid, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t addr,
			     uint64_t tag, uint64_t ignore, void *context,
			     uint64_t flags, bool tagged)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct ofi_rx_mem mem = {.iface = FI_HMEM_SYSTEM};
	ssize_t ret;

	if (OFI_UNLIKELY(count > TCP_IOV_LIMIT))
		return -FI_EINVAL;
	/* Bound to a shared context: posted to it, as through it. */
	if (ep->srx_on)
		return ofi_srx_post_recv(ep->util.srx, iov, desc, count, addr,
					 tag, ignore, context, flags, tagged);
	if (tcp_hmem_on(ep))
		tcp_hmem_iface(ep, desc, iov, count, &mem.iface, &mem.device);
	tcp_ep_lock(ep);
	ret = ofi_match_recv(ep->rxq, iov, desc, count, &mem, addr, tag, ignore,
			     context, flags, tagged);
	if (ret == -FI_EAGAIN)
		tcp_progress_locked(ep);
	/* A stalled message may be what this receive takes. */
	tcp_sock_resume(ep);
	tcp_ep_unlock(ep);
	return ret;
}

ssize_t tcp_ep_cancel(fid_t fid, void *context)
{
	struct tcp_ep *ep = container_of(fid, struct tcp_ep, util.ep_fid.fid);
	ssize_t ret;

	tcp_ep_lock(ep);
	ret = ofi_match_cancel(ep->rxq, context);
	tcp_ep_unlock(ep);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Sending.                                                             */

static ssize_t tcp_send(struct tcp_ep *ep, const struct iovec *iov, void **desc,
			size_t count, fi_addr_t addr, uint64_t tag,
			uint64_t data, void *context, uint64_t flags,
			bool tagged)
{
	struct tcp_hdr_view h = {.op = tagged ? TCP_OP_TAGGED : TCP_OP_MSG};
	bool nocomp = flags & OFI_INJECT_NOCOMP;
	uint64_t op_flags = ofi_send_op_flags(ep->util.tx_op_flags, flags);
	struct tcp_req *req;
	size_t size;
	ssize_t ret;

	if (OFI_UNLIKELY(count > TCP_IOV_LIMIT || (count && !iov)))
		return -FI_EINVAL;
	size = ofi_total_iov_len(iov, count);
	if (OFI_UNLIKELY(size > TCP_MAX_MSG_SIZE))
		return -FI_EMSGSIZE;
	if ((op_flags & FI_INJECT) && size > TCP_INJECT_SIZE)
		return -FI_EINVAL;
	tcp_ep_lock(ep);
	req = tcp_req_get(ep);
	if (OFI_UNLIKELY(!req)) {
		tcp_progress_locked(ep);
		tcp_ep_unlock(ep);
		return -FI_EAGAIN;
	}
	req->kind = TCP_REQ_SEND;
	req->addr = addr;
	req->context = context;
	req->flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	req->op_flags = op_flags;
	req->comp = !nocomp;
	h.tag = tagged ? tag : 0;
	if (op_flags & FI_REMOTE_CQ_DATA) {
		h.flags |= TCP_F_CQ_DATA;
		h.data = data;
	}
	if (!nocomp &&
	    (op_flags & (FI_DELIVERY_COMPLETE | FI_TRANSMIT_COMPLETE |
			 FI_COMMIT_COMPLETE))) {
		h.flags |= TCP_F_ACK_REQ;
		req->need_resp = true;
	}
	/* fi_commit(3): the receiver persists, then ACKs */
	if (!nocomp && (op_flags & FI_COMMIT_COMPLETE))
		h.flags |= TCP_F_COMMIT;
	h.payload_len = size;
	h.op_id = tcp_req_id(req);
	tcp_hdr_encode(req->head, &h);
	req->tx.iov[0].iov_base = req->head;
	req->tx.iov[0].iov_len = TCP_HDR_SIZE;
	if (size <= sizeof(req->head) - TCP_HDR_SIZE && !tcp_hmem_on(ep)) {
		/* Small: right behind the header, one piece to write. */
		ofi_copy_from_iov(req->head + TCP_HDR_SIZE, size, iov, count,
				  0);
		req->tx.iov[0].iov_len += size;
		req->tx.iov_cnt = 1;
		req->owned = true;
	} else {
		/* the user's iovs, or a copy (inject, device memory) */
		ret = tcp_tx_payload(ep, req, desc, iov, count, size,
				     op_flags & FI_INJECT);
		if (ret) {
			tcp_req_put(ep, req);
			tcp_ep_unlock(ep);
			return ret;
		}
	}
	ret = tcp_req_send(ep, req);
	if (ret)
		tcp_req_put(ep, req);
	else if (!req->written && !req->need_resp &&
		 (req->owned || size <= TCP_BUFFERED_MAX))
		tcp_req_buffer(ep, req);
	tcp_ep_unlock(ep);
	return ret;
}

/* ------------------------------------------------------------------ */
/* fi_ops_msg / fi_ops_tagged: the funnels, and util's plain calls.     */

static ssize_t tcp_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return tcp_recv_post(ep, msg->msg_iov, msg->desc, msg->iov_count,
			     msg->addr, 0, 0, msg->context, flags, false);
}

static ssize_t tcp_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			       uint64_t flags)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct fid_ep *shm;
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	shm = tcp_shm_lock_peer(ep, msg->addr);
	if (shm) {
		ret = fi_sendmsg(shm, msg, flags);
		tcp_ep_unlock(ep);
		return ret;
	}
	return tcp_send(ep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			0, msg->data, msg->context, flags, false);
}

const struct fi_ops_msg tcp_msg_ops = {
	OFI_PLAIN_MSG_OPS(tcp_msg_recvmsg, tcp_msg_sendmsg),
};

static ssize_t tcp_tagged_recvmsg(struct fid_ep *ep,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return tcp_recv_post(ep, msg->msg_iov, msg->desc, msg->iov_count,
			     msg->addr, msg->tag, msg->ignore, msg->context,
			     flags, true);
}

static ssize_t tcp_tagged_sendmsg(struct fid_ep *ep_fid,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct fid_ep *shm;
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	shm = tcp_shm_lock_peer(ep, msg->addr);
	if (shm) {
		ret = fi_tsendmsg(shm, msg, flags);
		tcp_ep_unlock(ep);
		return ret;
	}
	return tcp_send(ep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			msg->tag, msg->data, msg->context, flags, true);
}

const struct fi_ops_tagged tcp_tagged_ops = {
	OFI_PLAIN_TAGGED_OPS(tcp_tagged_recvmsg, tcp_tagged_sendmsg),
};
