/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_ep.c - the tcp RDM endpoint object: open/close/enable/getname, the
 * request pool, the codec and callbacks tcp gives the socket connection
 * layer (frame parsing, handshake, address mapping, dispatch of incoming
 * frames to tcp_msg.c and tcp_rma.c), progress (and its thread under
 * FI_PROGRESS_AUTO), and the AV callbacks.
 *
 * Every frame from a peer is decoded by tcp_wire.c before anything else
 * looks at it; a frame it refuses, or a response naming no request of
 * ours to that peer, drops the connection (ofi_sock fails the peer's
 * queued sends and reports peer_failed, which fails its requests).
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_coll.h"
#include "tcp.h"

static inline struct tcp_ep *tcp_ctx(void *ctx)
{
	return ctx;
}

/* ------------------------------------------------------------------ */
/* Requests.                                                            */

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

static void tcp_fail_pending(struct tcp_ep *ep, fi_addr_t addr, int err)
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

/* ------------------------------------------------------------------ */
/* Codec and callbacks of the connection layer.                         */

/*
 * Validates a head as it arrives. The view of a whole one is kept for
 * the recv_head call that follows it (ofi_sock.h), which then need not
 * decode it again.
 */
static OFI_HOT int tcp_parse(void *ctx, const void *head, size_t len,
			     size_t *need, uint64_t *payload)
{
	struct tcp_ep *ep = tcp_ctx(ctx);
	struct tcp_hdr_view *h = &ep->parsed;
	int ret;

	ep->parsed_head = NULL;
	ret = tcp_hdr_decode(head, len, h);
	if (ret)
		return ret;
	*need = TCP_HDR_SIZE + h->body_len;
	if (len < *need)
		return -FI_EAGAIN;
	/* Without a body the header decode above was the whole check (an
	 * op that needs a body refuses body_len 0 there). */
	if (h->body_len) {
		ret = tcp_body_check(head, len, h);
		if (ret)
			return ret == -EAGAIN ? -EPROTO : ret;
	}
	ep->parsed_head = head;
	*payload = h->payload_len;
	return 0;
}

static void tcp_conn_body_of(const struct sockaddr_storage *sa, uint8_t ep_type,
			     struct tcp_conn_body *c)
{
	const struct sockaddr_in *s4 = (const void *)sa;
	const struct sockaddr_in6 *s6 = (const void *)sa;

	memset(c, 0, sizeof(*c));
	c->ep_type = ep_type;
	if (sa->ss_family == AF_INET6) {
		c->family = TCP_FAMILY_INET6;
		c->port = ntohs(s6->sin6_port);
		memcpy(c->addr, &s6->sin6_addr, 16);
		c->scope_id = s6->sin6_scope_id;
	} else {
		c->family = TCP_FAMILY_INET;
		c->port = ntohs(s4->sin_port);
		memcpy(c->addr, &s4->sin_addr, 4);
	}
}

size_t tcp_cm_frame(void *buf, size_t max, bool resp, int status,
		    uint8_t ep_type, const struct sockaddr_storage *name,
		    const void *data, size_t len)
{
	struct tcp_hdr_view h = {
		.op = resp ? TCP_OP_CONN_RESP : TCP_OP_CONN_REQ,
		.status = (uint16_t)status,
		.body_len = TCP_CONN_BODY_SIZE,
		.payload_len = len,
	};
	struct tcp_conn_body c;

	if (len > TCP_CONN_DATA_MAX ||
	    max < TCP_HDR_SIZE + TCP_CONN_BODY_SIZE + len)
		return 0;
	tcp_conn_body_of(name, ep_type, &c);
	tcp_hdr_encode(buf, &h);
	tcp_conn_body_encode((uint8_t *)buf + TCP_HDR_SIZE, &c);
	if (len)
		memcpy((uint8_t *)buf + TCP_HDR_SIZE + TCP_CONN_BODY_SIZE, data,
		       len);
	return TCP_HDR_SIZE + TCP_CONN_BODY_SIZE + len;
}

static size_t tcp_hs_build(void *ctx, void *buf, size_t max, bool resp,
			   int status)
{
	struct tcp_ep *ep = tcp_ctx(ctx);

	if (ep->msg) /* a request: an MSG endpoint never answers here */
		return tcp_cm_frame(buf, max, resp, status, TCP_CONN_EP_MSG,
				    &ep->name, ep->cm_data, ep->cm_len);
	return tcp_cm_frame(buf, max, resp, status, TCP_CONN_EP_RDM, &ep->name,
			    NULL, 0);
}

static int tcp_hs_parse(void *ctx, const void *frame, size_t len, bool resp,
			struct sockaddr_storage *addr, int *status)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)addr;
	struct sockaddr_in *s4 = (struct sockaddr_in *)addr;
	struct tcp_conn_body c;
	struct tcp_hdr_view h;
	int ret;

	struct tcp_ep *ep = tcp_ctx(ctx);

	ret = tcp_hdr_decode(frame, len, &h);
	if (ret)
		return ret;
	/* MSG: only a connector reads an answer here (a pep takes
	 * requests); RDM handshakes carry no data. */
	if (h.op != (resp ? TCP_OP_CONN_RESP : TCP_OP_CONN_REQ) ||
	    (ep->msg && !resp) || (!ep->msg && h.payload_len) ||
	    h.body_len != TCP_CONN_BODY_SIZE ||
	    len != TCP_HDR_SIZE + TCP_CONN_BODY_SIZE + h.payload_len)
		return -EPROTO;
	ret = tcp_conn_body_decode(&h, (const uint8_t *)frame + TCP_HDR_SIZE,
				   len - TCP_HDR_SIZE, &c);
	if (ret)
		return ret;
	if (c.ep_type != (ep->msg ? TCP_CONN_EP_MSG : TCP_CONN_EP_RDM))
		return -EPROTO;
	*status = h.status;
	if (ep->msg) {
		tcp_cm_answered(ep, h.status,
				(const uint8_t *)frame + TCP_HDR_SIZE +
					TCP_CONN_BODY_SIZE,
				(size_t)h.payload_len);
		return 0;
	}
	if (resp)
		return 0;
	memset(addr, 0, sizeof(*addr));
	if (c.family == TCP_FAMILY_INET6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(c.port);
		memcpy(&s6->sin6_addr, c.addr, 16);
		s6->sin6_scope_id = c.scope_id;
	} else {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(c.port);
		memcpy(&s4->sin_addr, c.addr, 4);
	}
	return 0;
}

static int tcp_addr_of(void *ctx, fi_addr_t addr, struct sockaddr_storage *sa)
{
	struct tcp_ep *ep = tcp_ctx(ctx);

	memset(sa, 0, sizeof(*sa));
	if (ep->msg) {
		if (addr != TCP_MSG_PEER)
			return -FI_EINVAL;
		*sa = ep->peer_sa;
		return 0;
	}
	if (!ep->util.av)
		return -FI_EINVAL;
	return ofi_av_get_addr(ep->util.av, addr, sa);
}

static fi_addr_t tcp_lookup(void *ctx, const struct sockaddr_storage *sa)
{
	struct tcp_ep *ep = tcp_ctx(ctx);

	if (ep->msg || !ep->util.av || sa->ss_family != ep->name.ss_family)
		return FI_ADDR_NOTAVAIL;
	/* Stored entries are the exact struct, sin_zero included. */
	return ofi_av_reverse_lookup(ep->util.av, sa);
}

/*
 * A frame from a connection accepted before its peer was in our AV: if
 * the address is there now, the frame is that fi_addr's (matching,
 * FI_SOURCE, and answers, which then adopt the connection).
 */
fi_addr_t tcp_anon_src(struct tcp_ep *ep, fi_addr_t src)
{
	struct sockaddr_storage sa;
	fi_addr_t addr;

	if (ofi_sock_peer_sa(ep->set, src, &sa))
		return src;
	addr = tcp_lookup(ep, &sa);
	return addr == FI_ADDR_NOTAVAIL ? src : addr;
}

static struct tcp_frame *tcp_frame_get(struct tcp_ep *ep)
{
	struct dlist_entry *e = dlist_pop_front(&ep->frame_free);
	struct tcp_frame *f;

	f = e ? container_of(e, struct tcp_frame, entry) : malloc(sizeof(*f));
	if (f) {
		f->err = 0;
		f->kind = TCP_FR_DROP;
	}
	return f;
}

static void tcp_frame_put(struct tcp_ep *ep, struct tcp_frame *f)
{
	dlist_insert_head(&f->entry, &ep->frame_free);
}

/* A decoded head for @ep (f->ep: NULL for a receive context not
 * there, whose messages are read and dropped). */
static int tcp_frame_head(struct tcp_ep *ep, struct tcp_frame *f,
			  const void *head, size_t len, uint64_t payload,
			  struct iovec *iov, size_t *cnt)
{
	bool lost = !f->ep;

	f->ep = ep;
	switch (f->h.op) {
	case TCP_OP_MSG:
	case TCP_OP_TAGGED:
		if (OFI_UNLIKELY(lost)) {
			f->kind = TCP_FR_DROP;
			f->err = FI_ENOENT; /* a delivery ACK says so */
			*cnt = 0;
			return 0;
		}
		return tcp_msg_head(ep, f, payload, iov, cnt);
	case TCP_OP_WRITE_REQ:
	case TCP_OP_READ_REQ:
	case TCP_OP_ATOMIC_REQ:
		return tcp_rma_head(ep, f, head, len, payload, iov, cnt);
	case TCP_OP_COMMIT:
		*cnt = 0;
		return tcp_commit_head(ep, f, head, len);
	case TCP_OP_COMMIT_RESP:
	case TCP_OP_WRITE_RESP:
	case TCP_OP_READ_RESP:
	case TCP_OP_ATOMIC_RESP:
	case TCP_OP_ACK:
		return tcp_resp_head(ep, f, payload, iov, cnt);
	default:
		return -EPROTO; /* a handshake on a connection in use */
	}
}

static OFI_HOT int tcp_recv_head(void *ctx, fi_addr_t src, const void *head,
				 size_t len, uint64_t payload,
				 struct iovec *iov, size_t *cnt, void **frame)
{
	struct tcp_ep *ep = tcp_ctx(ctx);
	struct tcp_frame *f = *frame;
	int ret;

	if (f) /* a stalled head, asked again */
		return tcp_msg_head(f->ep, f, payload, iov, cnt);
	f = tcp_frame_get(ep);
	if (!f)
		return -FI_ENOMEM;
	if (head == ep->parsed_head) {
		f->h = ep->parsed;
		ep->parsed_head = NULL;
	} else {
		ret = tcp_hdr_decode(head, len, &f->h);
		if (ret) {
			tcp_frame_put(ep, f);
			return ret;
		}
	}
	f->conn = src;
	f->src = OFI_UNLIKELY(src >= OFI_SOCK_ANON_ADDR) ? tcp_anon_src(ep, src)
							 : src;
	f->ep = tcp_frame_ep(ep, &f->h);
	ret = tcp_frame_head(f->ep ? f->ep : ep, f, head, len, payload, iov,
			     cnt);
	if (ret && ret != -FI_EAGAIN) {
		tcp_frame_put(ep, f);
		return ret;
	}
	dlist_insert_tail(&f->entry, &f->ep->busy);
	*frame = f;
	return ret;
}

static OFI_HOT void tcp_recv_done(void *ctx, fi_addr_t src, void *frame)
{
	struct tcp_frame *f = frame;
	struct tcp_ep *ep = f->ep;

	OFI_UNUSED(src);
	dlist_remove(&f->entry); /* from ep->busy */
	switch (f->kind) {
	case TCP_FR_RECV:
	case TCP_FR_UNEXP:
	case TCP_FR_DROP:
		tcp_msg_done(ep, f);
		break;
	case TCP_FR_RESP:
		tcp_resp_done(ep, f);
		break;
	case TCP_FR_COMMIT:
		tcp_commit_done(ep, f);
		break;
	default:
		tcp_rma_done(ep, f);
		break;
	}
	tcp_frame_put(tcp_ctx(ctx), f);
}

static void tcp_recv_abort(void *ctx, fi_addr_t src, void *frame, int err)
{
	struct tcp_frame *f = frame;
	struct tcp_ep *ep = f->ep;

	OFI_UNUSED(src);
	dlist_remove(&f->entry); /* from ep->busy */
	switch (f->kind) {
	case TCP_FR_RECV:
	case TCP_FR_UNEXP:
		tcp_msg_abort(ep, f, err);
		break;
	case TCP_FR_RESP:
		/* answered, but the answer's payload never came whole */
		tcp_req_complete(ep, f->u.req, err);
		break;
	case TCP_FR_DROP:
		break;
	default:
		tcp_rma_abort(ep, f, err);
		break;
	}
	tcp_frame_put(tcp_ctx(ctx), f);
}

static OFI_HOT int tcp_rx_hold(void *ctx, void *frame)
{
	struct tcp_frame *f = frame;

	OFI_UNUSED(ctx);
	return f->kind == TCP_FR_WRITE ? tcp_rma_hold(f->ep, f) : 0;
}

static void tcp_rx_release(void *ctx, void *frame)
{
	struct tcp_frame *f = frame;

	OFI_UNUSED(ctx);
	if (f->kind == TCP_FR_WRITE)
		tcp_rma_release(f->ep, f);
}

static OFI_HOT void tcp_send_done(void *ctx, struct ofi_sock_tx *tx, int err)
{
	uint8_t obj = *(uint8_t *)tx->context;
	struct tcp_resp *r;
	struct tcp_req *req;

	if (obj == TCP_OBJ_RESP) {
		r = tx->context;
		free(r->buf);
		free(r);
		return;
	}
	OFI_UNUSED(ctx);
	req = tx->context;
	req->written = true;
	if (err || !req->need_resp || req->answered)
		tcp_req_complete(req->ep, req, err);
}

static void tcp_peer_failed(void *ctx, fi_addr_t addr, int err)
{
	struct tcp_ep *ep = tcp_ctx(ctx), *c;
	size_t i;

	FI_INFO(tcp_ep_prov(ep), FI_LOG_EP_DATA,
		"connection to fi_addr %llu failed: %s\n",
		(unsigned long long)addr, fi_strerror(err));
	tcp_sep_foreach(ep, c, i)
		tcp_fail_pending(c, addr, err);
	if (ep->msg)
		tcp_cm_peer_failed(ep, err);
}

/* Every request still waiting on the MSG peer fails (shutdown, loss). */
void tcp_cm_fail_all(struct tcp_ep *ep, int err)
{
	tcp_fail_pending(ep, TCP_MSG_PEER, err);
}

static void tcp_sock_quiet(void *ctx);

/* A head, or a handshake: that is read whole, its CM data included. */
#define TCP_HEAD_MAX                                                           \
	(TCP_HDR_SIZE +                                                        \
	 OFI_MAX(TCP_BODY_MAX, TCP_CONN_BODY_SIZE + TCP_CONN_DATA_MAX))

const struct ofi_sock_ops tcp_sock_ops = {
	.min_head = TCP_HDR_SIZE,
	.max_head = TCP_HEAD_MAX,
	.parse = tcp_parse,
	.hs_build = tcp_hs_build,
	.hs_parse = tcp_hs_parse,
	.addr_of = tcp_addr_of,
	.lookup = tcp_lookup,
	.recv_head = tcp_recv_head,
	.recv_done = tcp_recv_done,
	.recv_abort = tcp_recv_abort,
	.rx_hold = tcp_rx_hold,
	.rx_release = tcp_rx_release,
	.send_done = tcp_send_done,
	.peer_failed = tcp_peer_failed,
	.quiet = tcp_sock_quiet,
};

/* ------------------------------------------------------------------ */
/* Progress and AV callbacks.                                           */

void tcp_av_sync(struct tcp_ep *ep)
{
	struct tcp_ep *c;
	fi_addr_t addr;
	size_t i;

	ofi_mutex_lock(&ep->av_lock);
	while (ep->removed_cnt) {
		addr = ep->removed[ep->removed_cnt - 1];
		__atomic_store_n(&ep->removed_cnt, ep->removed_cnt - 1,
				 __ATOMIC_RELEASE);
		ofi_mutex_unlock(&ep->av_lock);
		ofi_sock_remove_peer(ep->set, addr);
		tcp_sep_foreach(ep, c, i) {
			tcp_fail_pending(c, addr, FI_ECANCELED);
			ofi_match_addr_removed(c->rxq, addr);
		}
		tcp_shm_removed(ep, addr);
		ofi_mutex_lock(&ep->av_lock);
	}
	ofi_mutex_unlock(&ep->av_lock);
}

OFI_HOT void tcp_progress_locked(struct tcp_ep *ep)
{
	if (ep->engine) /* a context: its SEP's connections */
		ep = ep->engine;
	if (OFI_UNLIKELY(tcp_av_removals(ep)))
		tcp_av_sync(ep);
	(void)ofi_sock_progress(ep->set, 0);
	if (ep->nowed)
		tcp_owed_flush(ep);
	if (ep->shm && ofi_ep_enabled(&ep->util))
		tcp_shm_progress(ep);
}

OFI_HOT void tcp_ep_progress(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);

	if (ep->util.auto_progress)
		ofi_progress_mark(&ep->app_driven);
	tcp_ep_lock(ep);
	tcp_progress_locked(ep);
	tcp_ep_unlock(ep);
}

static int tcp_wait_fd(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);

	return ep->shm ? tcp_shm_wait_fd(ep) : ofi_sock_fd(ep->set);
}

/*
 * Whether the sockets' fd announces all of the endpoint's work (nothing
 * queued to send, no connection being made); with a same-host path shm
 * arms its wake socket too (tcp_shm.c).
 */
static int tcp_wait_arm(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);
	int st;

	tcp_ep_lock(ep);
	ofi_sock_arm(ep->set);
	st = tcp_shm_wait_arm(ep);
	tcp_ep_unlock(ep);
	return st;
}

/* ------------------------------------------------------------------ */
/* FI_PROGRESS_AUTO: one thread per endpoint, woken by its epoll set    */
/* (incoming data, connections, and EPOLLOUT of sockets whose sends     */
/* wait for room), running the same progress under the endpoint lock.   */

static bool tcp_ep_wants_auto(struct tcp_ep *ep)
{
	return tcp_attr_auto(ep->util.info->domain_attr, true, true) ||
	       tcp_attr_auto(ep->util.domain->attr, true, true);
}

/*
 * The thread's next period: everything TCP has to do raises an event on
 * the epoll set (bytes in, room to write, corked frames, a connection
 * made), so with nothing in flight the thread sleeps until one comes.
 * Frames still waiting keep TCP_AUTO_PERIOD_MS as a safety net. The
 * same-host path has its say when the thread arms (tcp_shm_auto_period).
 */
static int tcp_auto_period(struct tcp_ep *ep)
{
	return ofi_sock_pending(ep->set) ? TCP_AUTO_PERIOD_MS : -1;
}

static void tcp_auto_progress(void *arg)
{
	struct tcp_ep *ep = arg;

	tcp_ep_lock(ep);
	tcp_progress_locked(ep);
	ofi_progress_set_period(ep->auto_prog, tcp_auto_period(ep));
	tcp_ep_unlock(ep);
}

/* Before the thread sleeps on the endpoint's fd (ofi_progress_attr.arm):
 * the sockets and shm's wake socket announce what comes from then on. */
static void tcp_auto_arm(void *arg)
{
	struct tcp_ep *ep = arg;

	tcp_ep_lock(ep);
	ofi_sock_arm(ep->set);
	if (ep->shm && ep->auto_prog)
		ofi_progress_set_period(
			ep->auto_prog,
			tcp_shm_auto_period(ep, tcp_auto_period(ep)));
	tcp_ep_unlock(ep);
}

/* Under the endpoint lock: whoever sleeps on the endpoint's fd wakes
 * and arms again; the progress thread stands down while the application
 * polls. */
void tcp_wake_sleepers(struct tcp_ep *ep)
{
	ofi_ep_wake_waits(&ep->util);
	if (ep->auto_prog)
		ofi_progress_wake(ep->auto_prog);
}

/* A connection left the set's epoll set (ofi_sock_ops.quiet). */
static void tcp_sock_quiet(void *ctx)
{
	tcp_wake_sleepers(tcp_ctx(ctx));
}

static int tcp_auto_start(struct tcp_ep *ep)
{
	char name[16];
	struct ofi_progress_attr attr = {
		.prov = tcp_ep_prov(ep),
		.name = name,
		.fd = tcp_wait_fd(&ep->util),
		.period_ms = TCP_AUTO_PERIOD_MS,
		.fn = tcp_auto_progress,
		.arg = ep,
		.driven = &ep->app_driven,
		.arm = tcp_auto_arm,
	};
	int ret;

	if (!ep->util.auto_progress || ep->auto_prog)
		return 0;
	tcp_thread_name(name, sizeof(name), attr.prov, "prog");
	ret = ofi_progress_start(&attr, &ep->auto_prog);
	if (!ret)
		ofi_ep_set_progress(&ep->util, ep->auto_prog);
	return ret;
}

/* First in close: nothing below may run under the thread's feet. */
static void tcp_auto_stop(struct tcp_ep *ep)
{
	struct ofi_progress *prog;

	/* No reader rouses it (ofi_ep_refs_rouse; they take the CQ's and
	 * counters' list locks before ours), no AV callback wakes it once
	 * it is gone (tcp_av_removed), and its own pass
	 * (tcp_auto_progress, under our lock) sees NULL. */
	ofi_ep_set_progress(&ep->util, NULL);
	tcp_ep_lock(ep);
	ofi_mutex_lock(&ep->av_lock);
	prog = ep->auto_prog;
	ep->auto_prog = NULL;
	ofi_mutex_unlock(&ep->av_lock);
	tcp_ep_unlock(ep);
	ofi_progress_stop(prog);
}

static int tcp_ep_enable(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);
	int ret;

	if (ep->msg) {
		ret = tcp_cm_ep_enable(util);
		if (ret)
			return ret;
	}
	if (util->srx)
		tcp_srx_enable(ep);
	else if (!ep->msg)
		tcp_shm_enable(ep);
	/* Every sleep on the set's fd arms it first (tcp_wait_arm, the
	 * progress thread's tcp_auto_arm) but for a scalable endpoint's
	 * contexts' (they have no arm of their own). */
	if (!ep->msg && !ep->sep)
		ofi_sock_set_quiet(ep->set, true);
	return tcp_auto_start(ep);
}

static void tcp_av_removed(struct util_ep *util, fi_addr_t addr)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);
	fi_addr_t *n;
	size_t cap;

	ofi_mutex_lock(&ep->av_lock);
	if (ep->removed_cnt == ep->removed_cap) {
		cap = ep->removed_cap ? ep->removed_cap * 2 : 16;
		n = realloc(ep->removed, cap * sizeof(*n));
		if (!n) {
			ofi_mutex_unlock(&ep->av_lock);
			return;
		}
		ep->removed = n;
		ep->removed_cap = cap;
	}
	ep->removed[ep->removed_cnt] = addr;
	__atomic_store_n(&ep->removed_cnt, ep->removed_cnt + 1,
			 __ATOMIC_RELEASE);
	/* Its pending operations fail at the next progress: now, not when
	 * some event comes (the thread may sleep without a period). Under
	 * av_lock: tcp_auto_stop takes the thread away under it. */
	ofi_progress_wake(ep->auto_prog);
	ofi_mutex_unlock(&ep->av_lock);
}

static const struct ofi_av_ep_ops tcp_av_ep_ops = {
	.removed = tcp_av_removed,
};

/* ------------------------------------------------------------------ */
/* The endpoint object.                                                 */

void tcp_ep_fini(struct tcp_ep *ep)
{
	struct dlist_entry *e;

	if (ep->mq.pool)
		ofi_match_flush(&ep->mq, -FI_ECANCELED);
	while ((e = dlist_pop_front(&ep->frame_free)))
		free(container_of(e, struct tcp_frame, entry));
	ofi_match_pool_free(&ep->mq);
	free(ep->req_pool);
	free(ep->removed);
	ofi_mutex_destroy(&ep->lock);
	ofi_mutex_destroy(&ep->av_lock);
	ofi_ep_close(&ep->util);
}

static void tcp_ep_free(struct tcp_ep *ep)
{
	/* Before our queues go: shm's messages in them are its own. */
	tcp_shm_close(ep);
	if (ep->msg)
		tcp_cm_ep_fini(ep);
	if (ep->srx_on) {
		tcp_srx_close(ep);
	} else if (ep->set) {
		ofi_sock_set_close(ep->set);
	}
	ep->set = NULL;
	tcp_ep_fini(ep);
}

int tcp_ep_close(struct fid *fid)
{
	struct tcp_ep *ep = container_of(fid, struct tcp_ep, util.ep_fid.fid);

	if (ofi_coll_ep_busy(&ep->util))
		return -FI_EBUSY; /* its groups' fid_mc are the app's */
	/* Our progress thread first (it waits for a call in flight), then
	 * off the CQs, counters and AV: no progress of another thread and
	 * no AV callback reaches us while we tear down. */
	tcp_auto_stop(ep);
	ofi_ep_detach(&ep->util);
	tcp_ep_lock(ep);
	/* What was queued still goes out (fi_tcp(7): close lingers), the
	 * batched answers owed too. */
	if (ep->nowed)
		tcp_owed_flush(ep);
	if (ep->set && ofi_sock_linger(ep->set, TCP_LINGER_MS))
		FI_WARN(tcp_ep_prov(ep), FI_LOG_EP_CTRL,
			"close: sends still queued after %d ms dropped\n",
			TCP_LINGER_MS);
	tcp_ep_unlock(ep);
	tcp_ep_free(ep);
	free(ep);
	return 0;
}

OFI_EP_FI_OPS(tcp_ep_fi_ops, tcp_ep_close);

static ssize_t tcp_size_left(struct tcp_ep *ep, struct dlist_entry *list)
{
	struct dlist_entry *e;
	ssize_t n = 0;

	if (!ofi_ep_enabled(&ep->util))
		return -FI_EOPBADSTATE;
	tcp_ep_lock(ep);
	dlist_foreach(list, e)
		n++;
	tcp_ep_unlock(ep);
	return n;
}

/*
 * Sends to peers on the same-host path hold the shm endpoint's transmit
 * entries, not tcp's: the endpoint can take as many more as the fuller of
 * the two allows. Asked outside tcp's lock, which shm's ops run under.
 */
static ssize_t tcp_tx_size_left(struct fid_ep *ep_fid)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	ssize_t n = tcp_size_left(ep, &ep->req_free), shm;

	if (n < 0 || !ep->shm)
		return n;
	shm = ep->shm->ops->tx_size_left(ep->shm);
	return shm >= 0 ? OFI_MIN(n, shm) : n;
}

static ssize_t tcp_rx_size_left(struct fid_ep *ep_fid)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);

	return tcp_size_left(ep, &ep->rxq->rx_free);
}

static const struct fi_ops_ep tcp_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = tcp_ep_cancel,
	.getopt = tcp_cm_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = tcp_rx_size_left,
	.tx_size_left = tcp_tx_size_left,
};

static int tcp_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct tcp_ep *ep = container_of(fid, struct tcp_ep, util.ep_fid.fid);

	return ofi_getname_copy(addr, addrlen, &ep->name, ep->namelen);
}

OFI_GETNAME_CM_OPS(tcp_cm_ops, tcp_getname);

static int tcp_ep_pools(struct tcp_ep *ep, size_t rx_size, size_t tx_size,
			uint32_t req_base)
{
	size_t i;

	ep->req_pool = calloc(tx_size, sizeof(*ep->req_pool));
	if (!ep->req_pool)
		return -FI_ENOMEM;
	ofi_match_init(&ep->mq, &ep->util, &tcp_match_ops);
	if (ofi_match_pool(&ep->mq, rx_size))
		return -FI_ENOMEM;
	ep->req_cnt = tx_size;
	for (i = 0; i < tx_size; i++) {
		ep->req_pool[i].obj = TCP_OBJ_REQ;
		ep->req_pool[i].ep = ep;
		ep->req_pool[i].idx = req_base + (uint32_t)i;
		dlist_insert_tail(&ep->req_pool[i].entry, &ep->req_free);
	}
	return 0;
}

/* The listening address: the info's source, else loopback, port 0. */
static int tcp_ep_listen(struct tcp_ep *ep, const struct fi_info *info)
{
	struct sockaddr_storage sa = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
	uint32_t format = ep->util.domain->addr_format;
	socklen_t len = (socklen_t)ofi_sockaddr_len(format);
	int ret;

	if (info->src_addr) {
		if (info->src_addrlen < len ||
		    ((const struct sockaddr *)info->src_addr)->sa_family !=
			    (format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET))
			return -FI_EINVAL;
		memcpy(&sa, info->src_addr, len);
	} else if (format == FI_SOCKADDR_IN6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
	} else {
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	ret = ofi_sock_set_open(&tcp_sock_ops, ep, (struct sockaddr *)&sa, len,
				&ep->set);
	if (ret)
		return ret;
	ofi_sock_getname(ep->set, &ep->name);
	ep->namelen = len;
	/* The AV compares whole structs: keep the padding zero. */
	if (format != FI_SOCKADDR_IN6)
		memset(((struct sockaddr_in *)&ep->name)->sin_zero, 0, 8);
	return 0;
}

/* FI_FENCE (util_trigger.c): requests not yet complete. The same-host
 * path keeps its own; a fence does not wait for those. */
bool tcp_tx_busy(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);
	bool busy;

	tcp_ep_lock(ep);
	busy = !dlist_empty(&ep->pending);
	tcp_ep_unlock(ep);
	return busy;
}

int tcp_ep_init(struct tcp_ep *ep, struct util_domain *dom,
		const struct fi_info *info, uint32_t req_base, void *context)
{
	size_t rx_size, tx_size;
	int ret;

	ep->shm_wait_epfd = -1;
	rx_size = info->rx_attr && info->rx_attr->size ? info->rx_attr->size
						       : TCP_RX_SIZE;
	tx_size = info->tx_attr && info->tx_attr->size ? info->tx_attr->size
						       : TCP_TX_SIZE;
	/* request ids hold a pool index in their low 16 bits */
	if (rx_size > TCP_RX_SIZE * 64 || tx_size > TCP_TX_SIZE * 64)
		return -FI_EINVAL;
	ret = ofi_ep_init(dom, info, &ep->util, tcp_ep_progress, context);
	if (ret)
		return ret;
	ofi_mutex_init(&ep->lock);
	ep->lockp = &ep->lock;
	ep->rxq = &ep->mq;
	ofi_mutex_init(&ep->av_lock);
	dlist_init(&ep->req_free);
	dlist_init(&ep->pending);
	dlist_init(&ep->frame_free);
	dlist_init(&ep->cm_events);
	dlist_init(&ep->busy);
	ep->util.av_ops = &tcp_av_ep_ops;
	ep->util.wait_fd = tcp_wait_fd;
	ep->util.min_multi_recv = 64;
	ep->unexp_max = TCP_UNEXP_MAX;
	fi_param_get_size_t((struct fi_provider *)dom->prov, "max_unexp",
			    &ep->unexp_max);
	ep->req_base = req_base;
	ret = tcp_ep_pools(ep, rx_size, tx_size, req_base);
	if (ret)
		tcp_ep_fini(ep);
	return ret;
}

int tcp_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep_fid, void *context)
{
	struct util_domain *dom;
	struct tcp_ep *ep;
	int ret;

	if (!domain || !info || !ep_fid)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_MSG &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	if (info->handle &&
	    (!info->ep_attr || info->ep_attr->type != FI_EP_MSG))
		return -FI_EINVAL;
	dom = container_of(domain, struct util_domain, domain_fid);
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ret = tcp_ep_init(ep, dom, info, 0, context);
	if (ret) {
		free(ep);
		return ret;
	}
	if (info->ep_attr && info->ep_attr->type == FI_EP_MSG) {
		ret = tcp_cm_ep_init(ep, info);
	} else {
		ret = tcp_ep_listen(ep, info) ?: tcp_shm_open(ep);
		/* same-host peers write to our region: shm's wake socket
		 * says so, when it has one (tcp_wait_arm) */
		ep->util.wait_nap = ep->shm != NULL;
		ep->util.coll_fold_cpus = !ep->shm;
	}
	ep->util.wait_arm = tcp_wait_arm;
	if (ret)
		goto err;
	ep->util.enable = tcp_ep_enable;
	ep->util.auto_progress = tcp_ep_wants_auto(ep);

	ep->util.ep_fid.fid.ops = (struct fi_ops *)&tcp_ep_fi_ops;
	ep->util.ep_fid.ops = (struct fi_ops_ep *)&tcp_ep_ops;
	ep->util.ep_fid.cm =
		(struct fi_ops_cm *)(ep->msg ? &tcp_msg_cm_ops : &tcp_cm_ops);
	ep->util.ep_fid.msg = (struct fi_ops_msg *)&tcp_msg_ops;
	ep->util.ep_fid.tagged = (struct fi_ops_tagged *)&tcp_tagged_ops;
	ep->util.ep_fid.rma = (struct fi_ops_rma *)&tcp_rma_ops;
	ep->util.ep_fid.atomic = (struct fi_ops_atomic *)&tcp_atomic_ops;
	ep->util.tx_busy = tcp_tx_busy;
	ret = ofi_trig_ep_wrap(&ep->util);
	if (ret)
		goto err;
	*ep_fid = &ep->util.ep_fid;
	return 0;
err:
	tcp_ep_free(ep);
	free(ep);
	return ret;
}
