/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_frame.c - the codec and callbacks tcp gives the socket connection
 * layer (ofi_sock.h): frame parsing and the handshake, mapping addresses
 * to fi_addrs, the struct tcp_frame each incoming data frame is read
 * with, and its dispatch to tcp_msg.c, tcp_rma.c and tcp_commit.c; the
 * end of a written frame, and a lost peer.
 *
 * Every frame from a peer is decoded by tcp_wire.c before anything else
 * looks at it; a frame it refuses, or a response naming no request of
 * ours to that peer, drops the connection (ofi_sock fails the peer's
 * queued sends and reports peer_failed, which fails its requests).
 */
#include <stdlib.h>
#include <string.h>

#include "tcp.h"

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
