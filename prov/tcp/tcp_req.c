/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_req.c - the requests of tcp's endpoints: the pool every operation
 * takes its struct tcp_req from (tx_attr.size per endpoint, ids of pool
 * index and generation that answers name), queueing a request's frame on
 * its peer's connection, completing it at the initiator (or early, as a
 * buffered send), failing those a lost peer owed an answer, and the
 * answer frames a target sends back (struct tcp_resp).
 */
#include <stdlib.h>
#include <string.h>

#include "tcp.h"

OFI_HOT struct tcp_req *tcp_req_get(struct tcp_ep *ep)
{
	struct dlist_entry *e = dlist_pop_front(&ep->req_free);
	struct tcp_req *req;

	if (!e)
		return NULL;
	req = container_of(e, struct tcp_req, entry);
	req->in_use = true;
	req->written = req->need_resp = req->answered = req->early = false;
	req->owned = req->batch = false;
	req->comp = true;
	req->err = 0;
	req->liov_cnt = 0;
	req->resp_len = 0;
	req->rbuf = NULL;
	req->abuf = NULL;
	req->gen++;
	/* not a memset: its iovs are the senders' to fill (iov_cnt) */
	req->tx.iov_cnt = 0;
	req->tx.iov_idx = 0;
	req->tx.may_wait = false;
	req->tx.done = false;
	req->tx.context = req;
	return req;
}

OFI_HOT void tcp_req_put(struct tcp_ep *ep, struct tcp_req *req)
{
	/* No free(NULL): a libc call, and a page, per message (OFI_HOT). */
	if (req->abuf) {
		free(req->abuf);
		req->abuf = NULL;
	}
	if (req->rbuf) {
		free(req->rbuf);
		req->rbuf = NULL;
	}
	req->in_use = false;
	/* Last in, first out: a window reuses the requests still in cache,
	 * not the coldest of a pool of tx_size (each ~800 bytes). */
	dlist_insert_head(&req->entry, &ep->req_free);
}

OFI_HOT void tcp_req_complete(struct tcp_ep *ep, struct tcp_req *req, int err)
{
	dlist_remove(&req->entry); /* from ep->pending */
	/* fi_commit(3): a target gone before answering is FI_EIO. */
	if (OFI_UNLIKELY(req->kind == TCP_REQ_COMMIT) && err &&
	    !req->answered && err != FI_ECANCELED)
		err = FI_EIO;
	if (req->early) {
		/* The user had its completion when the frame was copied. */
		if (err && err != FI_ECANCELED)
			FI_WARN(tcp_ep_prov(ep), FI_LOG_EP_DATA,
				"a buffered send failed after completing: "
				"%s\n",
				fi_strerror(err));
	} else if (!ep->util.detached)
		ofi_ep_tx_complete(&ep->util, req->context, req->flags,
				   req->op_flags, req->comp, err);
	tcp_req_put(ep, req);
}

OFI_HOT int tcp_req_send(struct tcp_ep *ep, struct tcp_req *req)
{
	struct tcp_ep *own = ep->engine ? ep->engine : ep; /* the AV's */
	int ret;

	/* An address removed (and maybe reused) since our last progress
	 * must not reach its old peer's connection. */
	if (OFI_UNLIKELY(tcp_av_removals(own)))
		tcp_av_sync(own);
	if (own->msg) {
		/* One peer, whatever dest_addr says (but a SEP context's
		 * receive context index); data only once the connection
		 * is up (fi_cm(3)) and never after it went. */
		if (own->cm_state == TCP_CM_CONNECTING)
			return -FI_EAGAIN;
		if (own->cm_state != TCP_CM_CONNECTED)
			return -FI_ENOTCONN;
		if (ep != own)
			tcp_msg_rx_ctx(ep, req);
		req->addr = TCP_MSG_PEER;
	} else if (OFI_UNLIKELY(ep->util.av && ep->util.av->rx_ctx_bits)) {
		ret = tcp_req_rx_ctx(ep, req);
		if (ret)
			return ret;
	}

	dlist_insert_tail(&req->entry, &ep->pending);
	/* Its completion is read through our progress, which writes it
	 * if it was corked; fi_inject's is never read: no corking. */
	req->tx.may_wait = req->comp;
	ret = ofi_sock_send(ep->set, req->addr, &req->tx);
	if (ret)
		dlist_remove(&req->entry);
	return ret;
}

void tcp_req_buffer(struct tcp_ep *ep, struct tcp_req *req)
{
	struct ofi_sock_tx *tx = &req->tx;
	size_t i, left = 0, off = 0;
	uint8_t *buf;

	if (req->owned)
		goto complete;

	for (i = tx->iov_idx; i < tx->iov_cnt; i++)
		left += tx->iov[i].iov_len;
	buf = malloc(left ? left : 1);
	if (!buf)
		return; /* it completes when written, as larger ones do */
	for (i = tx->iov_idx; i < tx->iov_cnt; i++) {
		memcpy(buf + off, tx->iov[i].iov_base, tx->iov[i].iov_len);
		off += tx->iov[i].iov_len;
	}
	/* ofi_sock only looks at the queued tx under our lock. */
	tx->iov[0].iov_base = buf;
	tx->iov[0].iov_len = left;
	tx->iov_cnt = 1;
	tx->iov_idx = 0;
	req->abuf = buf;
	req->owned = true;
complete:
	ofi_ep_tx_complete(&ep->util, req->context, req->flags, req->op_flags,
			   req->comp, 0);
	req->early = true;
	/* The application saw it sent: an AV removal must not drop it. */
	tx->done = true;
	tcp_flusher_kick(ep);
}

/* The request @op_id names, if it is one of ours waiting on @src. */
struct tcp_req *tcp_req_find(struct tcp_ep *ep, uint64_t op_id, fi_addr_t src)
{
	uint32_t idx = (uint32_t)op_id - ep->req_base;
	struct tcp_req *req;

	if (idx >= ep->req_cnt)
		return NULL;
	req = &ep->req_pool[idx];
	if (!req->in_use || req->gen != (uint32_t)(op_id >> 32) ||
	    req->addr != src || !req->need_resp || req->answered ||
	    !req->written)
		return NULL;
	return req;
}

void tcp_fail_pending(struct tcp_ep *ep, fi_addr_t addr, int err)
{
	struct dlist_entry *e, *next;
	struct tcp_req *req;

	for (e = ep->pending.next; e != &ep->pending; e = next) {
		next = e->next;
		req = container_of(e, struct tcp_req, entry);
		if (req->addr == addr && req->written)
			tcp_req_complete(ep, req, err);
	}
}

int tcp_resp_send(struct tcp_ep *ep, fi_addr_t dest,
		  const struct tcp_hdr_view *h, const struct iovec *iov,
		  size_t cnt, void *owned)
{
	struct tcp_resp *r;
	size_t i;
	int ret;

	/* Answers leave in the order of their requests: a batched one
	 * owed to @dest goes first (tcp_rma.c). */
	if (OFI_UNLIKELY(ep->nowed))
		tcp_owed_flush_to(ep, dest);
	r = calloc(1, sizeof(*r));
	if (!r) {
		free(owned);
		return -FI_ENOMEM;
	}
	r->obj = TCP_OBJ_RESP;
	r->buf = owned;
	tcp_hdr_encode(r->head, h);
	r->tx.context = r;
	r->tx.iov[0].iov_base = r->head;
	r->tx.iov[0].iov_len = TCP_HDR_SIZE;
	for (i = 0; i < cnt && i + 1 < OFI_SOCK_TX_IOV; i++)
		r->tx.iov[i + 1] = iov[i];
	r->tx.iov_cnt = i + 1;
	ret = ofi_sock_send(ep->set, dest, &r->tx);
	if (ret) {
		free(r->buf);
		free(r);
	}
	return ret;
}

fi_addr_t tcp_src_addr(struct tcp_ep *ep, fi_addr_t src)
{
	struct sockaddr_storage sa;

	if (src == FI_ADDR_NOTAVAIL || src >= OFI_SOCK_ANON_ADDR ||
	    !ep->util.av)
		return FI_ADDR_NOTAVAIL;
	if (!(ep->util.av->flags & FI_AV_USER_ID))
		return src;
	if (ofi_av_get_addr(ep->util.av, src, &sa))
		return FI_ADDR_NOTAVAIL;
	return ofi_av_src_addr(ep->util.av, &sa);
}
