/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_rma.c - FI_RMA and FI_ATOMIC over tcp, both ends. The initiator
 * sends a request frame (target iovs in the body; the data of a write or
 * the operands of an atomic as payload) and completes on the target's
 * answer, which carries a status and, for reads and fetching atomics, the
 * data. The target checks every iov against the MR map (key, whole range,
 * FI_REMOTE_READ/WRITE) before a byte moves; a bad one is answered
 * FI_EACCES, the payload dropped, and the initiator's completion is an
 * error entry carrying it. Atomics run through prov/util's executor.
 *
 * A write streams from the socket straight into registered memory; the
 * registration is held only for each read into it (rx_hold/rx_release)
 * and, after the read that completes the payload, through the target
 * event, never across a wait for the socket, so fi_close(mr) waits at
 * most one read and no byte lands after it returns: a write whose
 * registration went away mid-way is dropped and answered FI_EACCES. A
 * read's answer is sent from registered memory as it is when the socket
 * takes it.
 *
 * Batched answers. A plain endpoint's writes that ask for no more than
 * their default completion carry TCP_F_BATCH: the target answers the
 * last of those that landed in a progress pass, once per peer, and the
 * initiator completes with it every such write it sent that peer before
 * (tcp_resp_done): the stream kept their order, the target landed them
 * in it. A write that fails is answered at once, alone, so its error
 * comes first. Windowed small writes thus cost the target one answer per
 * pass instead of one per write. Contexts of scalable endpoints (their
 * requests sit in several lists) and FI_COMMIT_COMPLETE writes are
 * answered one by one.
 *
 * Locking: everything here runs under the endpoint lock.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_coll.h"
#include "ofi_plain.h"
#include "tcp.h"

static inline struct ofi_mr_map *tcp_mr_map(struct tcp_ep *ep)
{
	return &ep->util.domain->mr_map;
}

/* ------------------------------------------------------------------ */
/* Target side.                                                         */

/* Checks (without holding) every iov of @f, translating addresses. */
static OFI_HOT int tcp_rma_verify(struct tcp_ep *ep, struct tcp_frame *f,
				  uint64_t access)
{
	uintptr_t a;
	size_t i;

	for (i = 0; i < f->u.rma.count; i++) {
		a = (uintptr_t)f->u.rma.iov[i].addr;
		if ((uint64_t)a != f->u.rma.iov[i].addr ||
		    ofi_mr_map_verify(tcp_mr_map(ep), &a, f->u.rma.iov[i].len,
				      f->u.rma.iov[i].key, access, NULL))
			return FI_EACCES;
		f->u.rma.addr[i] = a;
	}
	return 0;
}

/* Holds every iov's registration; FI_EACCES if one is gone or moved. */
OFI_HOT int tcp_rma_get(struct tcp_ep *ep, struct tcp_frame *f, uint64_t access)
{
	uintptr_t a;
	size_t i;

	for (i = 0; i < f->u.rma.count; i++) {
		a = (uintptr_t)f->u.rma.iov[i].addr;
		if (ofi_mr_map_get(tcp_mr_map(ep), &a, f->u.rma.iov[i].len,
				   f->u.rma.iov[i].key, access,
				   &f->u.rma.ent[i]))
			goto fail;
		if (a != f->u.rma.addr[i]) {
			ofi_mr_map_put(tcp_mr_map(ep), f->u.rma.ent[i]);
			goto fail;
		}
	}
	return 0;
fail:
	while (i--)
		ofi_mr_map_put(tcp_mr_map(ep), f->u.rma.ent[i]);
	return FI_EACCES;
}

OFI_HOT void tcp_rma_put(struct tcp_ep *ep, struct tcp_frame *f)
{
	size_t i;

	for (i = 0; i < f->u.rma.count; i++)
		ofi_mr_map_put(tcp_mr_map(ep), f->u.rma.ent[i]);
}

OFI_HOT int tcp_rma_hold(struct tcp_ep *ep, struct tcp_frame *f)
{
	int ret;

	if (f->err)
		return -1;
	if (f->u.rma.bounce)
		return 0; /* staged: held when copied in (tcp_hmem.c) */
	memset(f->u.rma.ent, 0, sizeof(f->u.rma.ent));
	ret = tcp_rma_get(ep, f, FI_REMOTE_WRITE);
	if (ret)
		f->err = ret;
	f->u.rma.held = !ret;
	return ret;
}

/* After a read, or at the end of tcp_rma_done when the read that
 * completed the payload kept its hold (ofi_sock.h). */
OFI_HOT void tcp_rma_release(struct tcp_ep *ep, struct tcp_frame *f)
{
	if (!f->u.rma.held)
		return;
	f->u.rma.held = false;
	tcp_rma_put(ep, f);
}

static uint64_t tcp_atomic_access(const struct tcp_atomic_view *av)
{
	if (av->kind == TCP_ATOMIC_WRITE)
		return FI_REMOTE_WRITE;
	if (av->kind == TCP_ATOMIC_FETCH && av->op == FI_ATOMIC_READ)
		return FI_REMOTE_READ;
	return FI_REMOTE_READ | FI_REMOTE_WRITE;
}

OFI_HOT int tcp_rma_head(struct tcp_ep *ep, struct tcp_frame *f,
			 const void *head, size_t len, uint64_t payload,
			 struct iovec *iov, size_t *cnt)
{
	const uint8_t *body = (const uint8_t *)head + TCP_HDR_SIZE;
	struct tcp_atomic_view *av = &f->u.atomic.av;
	size_t i;
	int ret;

	*cnt = 0;
	if (f->h.op == TCP_OP_ATOMIC_REQ) {
		ret = tcp_atomic_body_decode(&f->h, body, len - TCP_HDR_SIZE,
					     av);
		if (ret)
			return ret;
		f->kind = TCP_FR_ATOMIC;
		f->u.atomic.ops = malloc(payload ? payload : 1);
		if (!f->u.atomic.ops)
			return -FI_ENOMEM;
		iov[0].iov_base = f->u.atomic.ops;
		iov[0].iov_len = payload;
		*cnt = payload ? 1 : 0;
		return 0;
	}
	ret = tcp_rma_body_decode(&f->h, body, len - TCP_HDR_SIZE, f->u.rma.iov,
				  &f->u.rma.count);
	if (ret)
		return ret;
	f->u.rma.held = false;
	if (f->h.op == TCP_OP_READ_REQ) {
		f->kind = TCP_FR_READ_REQ;
		f->err = tcp_rma_verify(ep, f, FI_REMOTE_READ);
		return 0;
	}
	f->kind = TCP_FR_WRITE;
	f->u.rma.bounce = NULL;
	f->err = tcp_rma_verify(ep, f, FI_REMOTE_WRITE);
	if (f->err)
		return 0; /* the payload is dropped */
	for (i = 0; i < f->u.rma.count; i++) {
		iov[i].iov_base = (void *)f->u.rma.addr[i];
		iov[i].iov_len = f->u.rma.iov[i].len;
	}
	*cnt = f->u.rma.count;
	if (tcp_hmem_on(ep))
		tcp_write_stage(ep, f, iov, cnt);
	return 0;
}

static void tcp_rma_answer(struct tcp_ep *ep, struct tcp_frame *f, uint8_t op,
			   const struct iovec *iov, size_t cnt,
			   uint64_t payload, void *owned)
{
	struct tcp_hdr_view h = {
		.op = op,
		.op_id = f->h.op_id,
		.status = (uint16_t)f->err,
		.payload_len = f->err ? 0 : payload,
	};

	if (f->src == FI_ADDR_NOTAVAIL) {
		/* An initiator not in our AV: no way to answer it. */
		free(owned);
		return;
	}
	(void)tcp_resp_send(ep, f->src, &h, f->err ? NULL : iov,
			    f->err ? 0 : cnt, owned);
}

/* The target side landed: counters and remote CQ data. */
static OFI_HOT void tcp_rma_event(struct tcp_ep *ep, struct tcp_frame *f,
				  uint64_t access, size_t len)
{
	uint64_t flags = access | FI_RMA;
	bool held = f->u.rma.held; /* a write's, from its last read */

	if (f->h.flags & TCP_F_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	if (!ofi_ep_rma_target_wanted(&ep->util, flags))
		return;
	if (!held) {
		memset(f->u.rma.ent, 0, sizeof(f->u.rma.ent));
		if (tcp_rma_get(ep, f, access))
			return;
	}
	ofi_ep_rma_target_complete(&ep->util, flags, len, f->h.data,
				   f->u.rma.ent, f->u.rma.count);
	if (!held)
		tcp_rma_put(ep, f);
}

static void tcp_read_done(struct tcp_ep *ep, struct tcp_frame *f)
{
	struct iovec iov[TCP_IOV_MAX];
	size_t i, cnt = f->u.rma.count;
	uint64_t total = 0;
	void *owned = NULL;

	for (i = 0; i < cnt; i++) {
		iov[i].iov_base = (void *)f->u.rma.addr[i];
		iov[i].iov_len = f->u.rma.iov[i].len;
		total += iov[i].iov_len;
	}
	if (!f->err && tcp_hmem_on(ep)) {
		/* device memory (or an override): answered from a copy */
		owned = tcp_read_stage(ep, f, total);
		if (owned) {
			iov[0].iov_base = owned;
			iov[0].iov_len = total;
			cnt = 1;
		}
	}
	if (!f->err)
		tcp_rma_event(ep, f, FI_REMOTE_READ, total);
	tcp_rma_answer(ep, f, TCP_OP_READ_RESP, iov, cnt, total, owned);
}

/* Runs a decoded atomic on held registrations; 0 or a positive errno. */
static int tcp_atomic_run(struct tcp_ep *ep, struct tcp_frame *f, uint8_t *res)
{
	struct tcp_atomic_view *av = &f->u.atomic.av;
	struct ofi_mr_entry *ent[TCP_IOV_MAX] = {0};
	uintptr_t dst[TCP_IOV_MAX];
	const uint8_t *ops = f->u.atomic.ops, *src, *cmp;
	uint64_t access = tcp_atomic_access(av);
	size_t i, off = 0, n = 0;
	uintptr_t a;
	int ret = 0;

	for (i = 0; i < av->iov_count; i++, n++) {
		a = (uintptr_t)av->iov[i].addr;
		if ((uint64_t)a != av->iov[i].addr ||
		    ofi_mr_map_get(tcp_mr_map(ep), &a, av->iov[i].len,
				   av->iov[i].key, access, &ent[i])) {
			ret = FI_EACCES;
			break;
		}
		dst[i] = a;
	}
	for (i = 0; !ret && i < av->iov_count; i++) {
		a = dst[i];
		src = av->op == FI_ATOMIC_READ ? NULL : ops + off;
		cmp = av->kind == TCP_ATOMIC_COMPARE ? ops + av->total + off
						     : NULL;
		if (OFI_UNLIKELY(ent[i]->iface != FI_HMEM_SYSTEM))
			ret = tcp_atomic_staged(ep, av, ent[i], a,
						av->iov[i].len, src, cmp,
						res ? res + off : NULL);
		else
			ret = -ofi_atomic_exec((enum ofi_atomic_kind)av->kind,
					       (enum fi_op)av->op,
					       (enum fi_datatype)av->datatype,
					       (void *)a, src, cmp,
					       res ? res + off : NULL,
					       av->iov[i].len / av->dt_size);
		off += av->iov[i].len;
	}
	/* FI_COMMIT_COMPLETE: durable before the answer */
	if (!ret && (f->h.flags & TCP_F_COMMIT) && (access & FI_REMOTE_WRITE))
		ret = tcp_atomic_persist(av, ent, dst);
	if (!ret && (ep->util.caps & FI_RMA_EVENT))
		ofi_ep_rma_target_complete(&ep->util,
					   access & FI_REMOTE_WRITE
						   ? FI_REMOTE_WRITE
						   : FI_REMOTE_READ,
					   av->total, 0, ent, n);
	while (n--)
		ofi_mr_map_put(tcp_mr_map(ep), ent[n]);
	return ret;
}

static void tcp_atomic_done(struct tcp_ep *ep, struct tcp_frame *f)
{
	struct tcp_atomic_view *av = &f->u.atomic.av;
	bool fetch = av->kind != TCP_ATOMIC_WRITE;
	uint8_t *res = NULL;
	struct iovec iov;

	if (fetch) {
		res = calloc(1, av->total ? av->total : 1);
		if (!res)
			f->err = FI_ENOMEM;
	}
	if (!f->err)
		f->err = tcp_atomic_run(ep, f, res);
	free(f->u.atomic.ops);
	f->u.atomic.ops = NULL;
	iov.iov_base = res;
	iov.iov_len = fetch ? av->total : 0;
	tcp_rma_answer(ep, f, TCP_OP_ATOMIC_RESP, &iov, fetch ? 1 : 0,
		       iov.iov_len, res);
}

/* Sends (and forgets) the answer owed[@i]. */
static void tcp_owed_send(struct tcp_ep *ep, size_t i)
{
	struct tcp_hdr_view h = {.op = TCP_OP_WRITE_RESP,
				 .flags = TCP_F_BATCH,
				 .op_id = ep->owed[i].op_id};
	fi_addr_t dest = ep->owed[i].dest;

	ep->owed[i] = ep->owed[--ep->nowed];
	(void)tcp_resp_send(ep, dest, &h, NULL, 0, NULL);
}

void tcp_owed_flush(struct tcp_ep *ep)
{
	while (ep->nowed)
		tcp_owed_send(ep, ep->nowed - 1);
}

void tcp_owed_flush_to(struct tcp_ep *ep, fi_addr_t dest)
{
	size_t i;

	for (i = 0; i < ep->nowed; i++) {
		if (ep->owed[i].dest == dest) {
			tcp_owed_send(ep, i);
			return;
		}
	}
}

void tcp_sock_resume(struct tcp_ep *ep)
{
	(void)ofi_sock_resume(ep->set);
	if (ep->nowed)
		tcp_owed_flush(ep);
}

/*
 * A batched write from @dest landed: its answer waits for the end of the
 * pass, replacing the one owed to @dest. False when it must be answered
 * now: a context (its set is its SEP's), or an initiator not in our AV.
 */
static bool tcp_owe(struct tcp_ep *ep, fi_addr_t dest, uint64_t op_id)
{
	size_t i;

	if (ep->engine || dest == FI_ADDR_NOTAVAIL)
		return false;
	for (i = 0; i < ep->nowed; i++) {
		if (ep->owed[i].dest == dest) {
			ep->owed[i].op_id = op_id;
			return true;
		}
	}
	if (ep->nowed == TCP_OWED_MAX)
		tcp_owed_flush(ep);
	ep->owed[ep->nowed].dest = dest;
	ep->owed[ep->nowed++].op_id = op_id;
	return true;
}

OFI_HOT void tcp_rma_done(struct tcp_ep *ep, struct tcp_frame *f)
{
	uint64_t total = 0;
	size_t i;

	switch (f->kind) {
	case TCP_FR_READ_REQ:
		tcp_read_done(ep, f);
		break;
	case TCP_FR_ATOMIC:
		tcp_atomic_done(ep, f);
		break;
	case TCP_FR_WRITE:
		for (i = 0; i < f->u.rma.count; i++)
			total += f->u.rma.iov[i].len;
		/* FI_COMMIT_COMPLETE: durable before the answer */
		if (OFI_UNLIKELY(f->u.rma.bounce))
			tcp_write_unstage(ep, f); /* copied in, or f->err */
		if (!f->err && (f->h.flags & TCP_F_COMMIT))
			f->err = tcp_write_persist(ep, f);
		if (!f->err)
			tcp_rma_event(ep, f, FI_REMOTE_WRITE, total);
		tcp_rma_release(ep, f);
		if (f->h.flags & TCP_F_NO_RESP)
			break; /* an engine write: its CQ data was the answer */
		if ((f->h.flags & TCP_F_BATCH) && !f->err &&
		    tcp_owe(ep, f->src, f->h.op_id))
			break;
		tcp_rma_answer(ep, f, TCP_OP_WRITE_RESP, NULL, 0, 0, NULL);
		break;
	}
}

void tcp_rma_abort(struct tcp_ep *ep, struct tcp_frame *f, int err)
{
	OFI_UNUSED(ep);
	OFI_UNUSED(err);
	if (f->kind == TCP_FR_ATOMIC) {
		free(f->u.atomic.ops);
		f->u.atomic.ops = NULL;
	} else if (f->kind == TCP_FR_WRITE) {
		/* held or not: util_sock released it before (ofi_sock.h) */
		free(f->u.rma.bounce);
		f->u.rma.bounce = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* Answers, at the initiator.                                           */

static bool tcp_resp_fits(const struct tcp_req *req, uint8_t op)
{
	switch (op) {
	case TCP_OP_ACK:
		return req->kind == TCP_REQ_SEND;
	case TCP_OP_WRITE_RESP:
		return req->kind == TCP_REQ_WRITE;
	case TCP_OP_READ_RESP:
		return req->kind == TCP_REQ_READ;
	case TCP_OP_ATOMIC_RESP:
		return req->kind == TCP_REQ_ATOMIC;
	case TCP_OP_COMMIT_RESP:
		return req->kind == TCP_REQ_COMMIT;
	default:
		return false;
	}
}

int tcp_resp_head(struct tcp_ep *ep, struct tcp_frame *f, uint64_t payload,
		  struct iovec *iov, size_t *cnt)
{
	struct tcp_req *req = tcp_req_find(ep, f->h.op_id, f->src);

	*cnt = 0;
	if (!req || !tcp_resp_fits(req, f->h.op))
		return -EPROTO; /* not an answer to anything we asked */
	if ((f->h.flags & TCP_F_BATCH) && !req->batch)
		return -EPROTO; /* we asked it alone */
	if (!f->h.status &&
	    (f->h.op == TCP_OP_READ_RESP ||
	     (f->h.op == TCP_OP_ATOMIC_RESP && req->liov_cnt))) {
		if (payload != req->resp_len)
			return -EPROTO;
		if (OFI_UNLIKELY(req->rbuf)) {
			/* staged: copied out at done (tcp_hmem.c) */
			iov[0].iov_base = req->rbuf;
			iov[0].iov_len = req->resp_len;
			*cnt = 1;
		} else {
			memcpy(iov, req->liov, req->liov_cnt * sizeof(*iov));
			*cnt = req->liov_cnt;
		}
	} else if (payload) {
		return -EPROTO;
	}
	req->answered = true;
	f->kind = TCP_FR_RESP;
	f->u.req = req;
	return 0;
}

/* A batched answer to @last: every batched write sent its peer before it
 * landed too. */
static void tcp_batch_done(struct tcp_ep *ep, struct tcp_req *last)
{
	struct dlist_entry *e, *next;
	struct tcp_req *req;

	for (e = ep->pending.next; e != &last->entry; e = next) {
		next = e->next;
		req = container_of(e, struct tcp_req, entry);
		if (req->batch && req->addr == last->addr && req->written &&
		    !req->answered) {
			req->answered = true;
			tcp_req_complete(ep, req, 0);
		}
	}
}

void tcp_resp_done(struct tcp_ep *ep, struct tcp_frame *f)
{
	struct tcp_req *req = f->u.req;
	int err = f->h.status;

	if (f->h.flags & TCP_F_BATCH)
		tcp_batch_done(ep, req);
	if (OFI_UNLIKELY(req->rbuf) && !err)
		err = tcp_resp_unstage(ep, req);
	tcp_req_complete(ep, req, err);
}

/* ------------------------------------------------------------------ */
/* Initiator: RMA.                                                      */

static OFI_HOT ssize_t tcp_rma(struct fid_ep *ep_fid, bool write,
			       const struct iovec *iov, void **desc,
			       size_t count, const struct fi_rma_iov *rma,
			       size_t rcount, fi_addr_t addr, uint64_t data,
			       void *context, uint64_t flags)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	bool nocomp = flags & OFI_INJECT_NOCOMP;
	uint64_t op_flags = flags & ~OFI_INJECT_NOCOMP;
	struct tcp_rma_iov riov[TCP_IOV_MAX];
	struct tcp_hdr_view h = {0};
	struct tcp_req *req;
	size_t size, rsize = 0, i;
	ssize_t ret;

	if (OFI_UNLIKELY(count > TCP_IOV_LIMIT || (count && !iov) || !rma ||
			 !rcount || rcount > TCP_IOV_MAX))
		return -FI_EINVAL;
	size = ofi_total_iov_len(iov, count);
	for (i = 0; i < rcount; i++) {
		riov[i].addr = rma[i].addr;
		riov[i].len = rma[i].len;
		riov[i].key = rma[i].key;
		rsize += rma[i].len;
	}
	if (rsize != size || size > TCP_MAX_MSG_SIZE)
		return -FI_EINVAL;
	if ((op_flags & FI_INJECT) && (!write || size > TCP_INJECT_SIZE))
		return -FI_EINVAL;
	tcp_ep_lock(ep);
	req = tcp_req_get(ep);
	if (OFI_UNLIKELY(!req)) {
		tcp_progress_locked(ep);
		tcp_ep_unlock(ep);
		return -FI_EAGAIN;
	}
	req->kind = write ? TCP_REQ_WRITE : TCP_REQ_READ;
	req->addr = addr;
	req->context = context;
	req->flags = FI_RMA | (write ? FI_WRITE : FI_READ);
	req->op_flags = op_flags;
	req->comp = !nocomp;
	req->need_resp = true;
	h.op = write ? TCP_OP_WRITE_REQ : TCP_OP_READ_REQ;
	if (write && (op_flags & FI_REMOTE_CQ_DATA)) {
		h.flags = TCP_F_CQ_DATA;
		h.data = data;
	}
	if (write && (op_flags & FI_COMMIT_COMPLETE))
		h.flags |= TCP_F_COMMIT;
	else if (write &&
		 (op_flags & OFI_COLL_NO_ANSWER) == OFI_COLL_NO_ANSWER) {
		/* the engine's: done once on the stream, no WRITE_RESP */
		h.flags |= TCP_F_NO_RESP;
		req->need_resp = false;
	} else if (write && !ep->engine) {
		/* answered together with others (a plain endpoint's list
		 * holds every request it sent) */
		h.flags |= TCP_F_BATCH;
		req->batch = true;
	}
	h.payload_len = write ? size : 0;
	h.body_len = (uint16_t)tcp_rma_body_encode(req->head + TCP_HDR_SIZE,
						   riov, rcount);
	h.op_id = tcp_req_id(req);
	tcp_hdr_encode(req->head, &h);
	req->tx.iov[0].iov_base = req->head;
	req->tx.iov[0].iov_len = TCP_HDR_SIZE + h.body_len;
	req->tx.iov_cnt = 1;
	ret = 0;
	if (!write) {
		memcpy(req->liov, iov, count * sizeof(*iov));
		req->liov_cnt = count;
		req->resp_len = size;
		if (tcp_hmem_on(ep))
			ret = tcp_resp_stage(ep, req, desc);
	} else {
		/* the user's iovs, or a copy (inject, device memory) */
		ret = tcp_tx_payload(ep, req, desc, iov, count, size,
				     op_flags & FI_INJECT);
	}
	if (!ret)
		ret = tcp_req_send(ep, req);
	if (ret)
		tcp_req_put(ep, req);
	tcp_ep_unlock(ep);
	return ret;
}

/* The RMA funnels, and through them every plain RMA call (ofi_plain.h). */
static ssize_t tcp_rma_readmsg(struct fid_ep *ep_fid,
			       const struct fi_msg_rma *msg, uint64_t flags)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct fid_ep *shm;
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	shm = tcp_shm_lock_peer(ep, msg->addr);
	if (shm) {
		ret = fi_readmsg(shm, msg, flags);
		tcp_ep_unlock(ep);
		return ret;
	}
	return tcp_rma(ep_fid, false, msg->msg_iov, msg->desc, msg->iov_count,
		       msg->rma_iov, msg->rma_iov_count, msg->addr, 0,
		       msg->context, flags);
}

static OFI_HOT ssize_t tcp_rma_writemsg(struct fid_ep *ep_fid,
					const struct fi_msg_rma *msg,
					uint64_t flags)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct fid_ep *shm;
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	shm = tcp_shm_lock_peer(ep, msg->addr);
	if (shm) {
		ret = fi_writemsg(shm, msg, flags);
		tcp_ep_unlock(ep);
		return ret;
	}
	return tcp_rma(ep_fid, true, msg->msg_iov, msg->desc, msg->iov_count,
		       msg->rma_iov, msg->rma_iov_count, msg->addr, msg->data,
		       msg->context, flags);
}

const struct fi_ops_rma tcp_rma_ops = {
	OFI_PLAIN_RMA_OPS(tcp_rma_readmsg, tcp_rma_writemsg),
#if OFI_HAVE_EXT_SLOTS
	.commit = tcp_commit,
#endif
};

/* ------------------------------------------------------------------ */
/* Initiator: atomics.                                                  */

static const size_t tcp_atomic_room[OFI_ATOMIC_KINDS] = {
	[OFI_ATOMIC_WRITE] = TCP_ATOMIC_MAX,
	[OFI_ATOMIC_FETCH] = TCP_ATOMIC_MAX,
	[OFI_ATOMIC_COMPARE] = TCP_ATOMIC_MAX,
};

static size_t tcp_ioc_elems(const struct fi_ioc *ioc, size_t count)
{
	size_t n = 0, i;

	for (i = 0; i < count; i++)
		n += ioc[i].count;
	return n;
}

/* Copies @count iocs of @dts-byte elements to @dst; bytes copied. */
static size_t tcp_ioc_copy(uint8_t *dst, const struct fi_ioc *ioc, size_t count,
			   size_t dts)
{
	size_t off = 0, i;

	for (i = 0; i < count; i++) {
		memcpy(dst + off, ioc[i].addr, ioc[i].count * dts);
		off += ioc[i].count * dts;
	}
	return off;
}

struct tcp_atomic_args {
	const struct fi_msg_atomic *msg;
	const struct fi_ioc *cmp;
	void **cmp_desc;
	size_t cmp_cnt;
	struct fi_ioc *res;
	void **res_desc;
	size_t res_cnt;
	enum ofi_atomic_kind kind;
	uint64_t flags;
	bool nocomp;
};

static ssize_t tcp_atomic_do(struct fid_ep *ep_fid,
			     const struct tcp_atomic_args *a)
{
	const struct fi_msg_atomic *msg = a->msg;
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct tcp_rma_iov riov[TCP_IOV_MAX];
	struct tcp_hdr_view h = {.op = TCP_OP_ATOMIC_REQ};
	size_t dts, n, rn = 0, i, total, plen;
	bool fetch = a->kind != OFI_ATOMIC_WRITE;
	bool hmem = tcp_hmem_on(ep);
	struct tcp_req *req;
	uint8_t *buf;
	ssize_t ret;

	if (!msg || !msg->rma_iov || !msg->rma_iov_count ||
	    msg->rma_iov_count > TCP_IOV_MAX ||
	    msg->iov_count > TCP_IOV_LIMIT || (msg->iov_count && !msg->msg_iov))
		return -FI_EINVAL;
	ret = ofi_atomic_valid(a->kind, msg->datatype, msg->op,
			       tcp_atomic_room[a->kind], &dts, NULL);
	if (ret)
		return ret;
	n = tcp_ioc_elems(msg->msg_iov, msg->iov_count);
	for (i = 0; i < msg->rma_iov_count; i++) {
		riov[i].addr = msg->rma_iov[i].addr;
		riov[i].len = msg->rma_iov[i].count * dts;
		riov[i].key = msg->rma_iov[i].key;
		rn += msg->rma_iov[i].count;
	}
	total = rn * dts;
	if ((msg->op != FI_ATOMIC_READ && n != rn) || total > TCP_ATOMIC_MAX ||
	    (fetch && (!a->res || a->res_cnt > TCP_IOV_LIMIT ||
		       tcp_ioc_elems(a->res, a->res_cnt) != rn)) ||
	    (a->kind == OFI_ATOMIC_COMPARE &&
	     (!a->cmp || tcp_ioc_elems(a->cmp, a->cmp_cnt) != rn)))
		return -FI_EINVAL;
	plen = msg->op == FI_ATOMIC_READ ? 0 : total;
	if (a->kind == OFI_ATOMIC_COMPARE)
		plen += total;
	buf = malloc(plen ? plen : 1);
	if (!buf)
		return -FI_ENOMEM;
	if (hmem) {
		/* device memory (or an override): through the copies */
		ret = msg->op == FI_ATOMIC_READ
			      ? 0
			      : tcp_ioc_stage(ep, buf, msg->msg_iov, msg->desc,
					      msg->iov_count, dts);
		if (!ret && a->kind == OFI_ATOMIC_COMPARE)
			ret = tcp_ioc_stage(ep, buf + total, a->cmp,
					    a->cmp_desc, a->cmp_cnt, dts);
		if (ret) {
			free(buf);
			return ret;
		}
	} else {
		if (msg->op != FI_ATOMIC_READ)
			tcp_ioc_copy(buf, msg->msg_iov, msg->iov_count, dts);
		if (a->kind == OFI_ATOMIC_COMPARE)
			tcp_ioc_copy(buf + total, a->cmp, a->cmp_cnt, dts);
	}

	tcp_ep_lock(ep);
	req = tcp_req_get(ep);
	if (OFI_UNLIKELY(!req)) {
		tcp_progress_locked(ep);
		tcp_ep_unlock(ep);
		free(buf);
		return -FI_EAGAIN;
	}
	req->kind = TCP_REQ_ATOMIC;
	req->abuf = buf;
	req->addr = msg->addr;
	req->context = msg->context;
	req->flags = FI_ATOMIC | (fetch ? FI_READ : FI_WRITE);
	req->op_flags = a->flags;
	req->comp = !a->nocomp;
	req->need_resp = true;
	if (fetch) {
		for (i = 0; i < a->res_cnt; i++) {
			req->liov[i].iov_base = a->res[i].addr;
			req->liov[i].iov_len = a->res[i].count * dts;
		}
		req->liov_cnt = a->res_cnt;
		req->resp_len = total;
		ret = hmem ? tcp_resp_stage(ep, req, a->res_desc) : 0;
		if (ret) {
			tcp_req_put(ep, req);
			tcp_ep_unlock(ep);
			return ret;
		}
	}
	if (a->flags & FI_COMMIT_COMPLETE)
		h.flags |= TCP_F_COMMIT;
	h.payload_len = plen;
	h.body_len = (uint16_t)tcp_atomic_body_encode(
		req->head + TCP_HDR_SIZE, (uint8_t)a->kind, (uint8_t)msg->op,
		(uint8_t)msg->datatype, riov, msg->rma_iov_count);
	h.op_id = tcp_req_id(req);
	tcp_hdr_encode(req->head, &h);
	req->tx.iov[0].iov_base = req->head;
	req->tx.iov[0].iov_len = TCP_HDR_SIZE + h.body_len;
	req->tx.iov[1].iov_base = buf;
	req->tx.iov[1].iov_len = plen;
	req->tx.iov_cnt = 2;
	ret = tcp_req_send(ep, req);
	if (ret)
		tcp_req_put(ep, req);
	tcp_ep_unlock(ep);
	return ret;
}

/*
 * The atomic funnels, and through them every plain atomic call
 * (ofi_plain.h). fi_inject_atomic's operands fit the inject size.
 */
static ssize_t tcp_atomic_writemsg(struct fid_ep *ep_fid,
				   const struct fi_msg_atomic *msg,
				   uint64_t flags)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct tcp_atomic_args a = {.msg = msg,
				    .kind = OFI_ATOMIC_WRITE,
				    .flags = flags & ~OFI_INJECT_NOCOMP,
				    .nocomp = flags & OFI_INJECT_NOCOMP};
	struct fid_ep *shm;
	size_t dts, n;
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	shm = tcp_shm_lock_peer(ep, msg->addr);
	if (shm) {
		ret = fi_atomicmsg(shm, msg, flags);
		tcp_ep_unlock(ep);
		return ret;
	}
	if (flags & OFI_INJECT_NOCOMP) {
		dts = ofi_datatype_size(msg->datatype);
		n = msg->msg_iov && msg->iov_count <= TCP_IOV_LIMIT
			    ? tcp_ioc_elems(msg->msg_iov, msg->iov_count)
			    : 0;
		if (!dts || n * dts > TCP_INJECT_SIZE)
			return -FI_EINVAL;
	}
	return tcp_atomic_do(ep_fid, &a);
}

static ssize_t tcp_atomic_readwritemsg(struct fid_ep *ep_fid,
				       const struct fi_msg_atomic *msg,
				       struct fi_ioc *resultv,
				       void **result_desc, size_t result_count,
				       uint64_t flags)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct tcp_atomic_args a = {.msg = msg,
				    .res = resultv,
				    .res_desc = result_desc,
				    .res_cnt = result_count,
				    .kind = OFI_ATOMIC_FETCH,
				    .flags = flags};
	struct fid_ep *shm;
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	shm = tcp_shm_lock_peer(ep, msg->addr);
	if (shm) {
		ret = fi_fetch_atomicmsg(shm, msg, resultv, result_desc,
					 result_count, flags);
		tcp_ep_unlock(ep);
		return ret;
	}
	return tcp_atomic_do(ep_fid, &a);
}

static ssize_t
tcp_atomic_compwritemsg(struct fid_ep *ep_fid, const struct fi_msg_atomic *msg,
			const struct fi_ioc *comparev, void **compare_desc,
			size_t compare_count, struct fi_ioc *resultv,
			void **result_desc, size_t result_count, uint64_t flags)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct tcp_atomic_args a = {.msg = msg,
				    .cmp = comparev,
				    .cmp_desc = compare_desc,
				    .cmp_cnt = compare_count,
				    .res = resultv,
				    .res_desc = result_desc,
				    .res_cnt = result_count,
				    .kind = OFI_ATOMIC_COMPARE,
				    .flags = flags};
	struct fid_ep *shm;
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	shm = tcp_shm_lock_peer(ep, msg->addr);
	if (shm) {
		ret = fi_compare_atomicmsg(shm, msg, comparev, compare_desc,
					   compare_count, resultv, result_desc,
					   result_count, flags);
		tcp_ep_unlock(ep);
		return ret;
	}
	if (compare_count > TCP_IOV_LIMIT)
		return -FI_EINVAL;
	return tcp_atomic_do(ep_fid, &a);
}

static int tcp_valid(struct fid_ep *ep_fid, enum ofi_atomic_kind kind,
		     enum fi_datatype dt, enum fi_op op, size_t *count)
{
	size_t dts;
	int ret;

	if (!ep_fid || !count)
		return -FI_EINVAL;
	ret = ofi_atomic_valid(kind, dt, op, tcp_atomic_room[kind], &dts,
			       count);
	if (!ret)
		tcp_shm_atomic_limit(
			container_of(ep_fid, struct util_ep, ep_fid)->domain,
			kind, dt, op, count);
	return ret;
}

static int tcp_atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype,
				 enum fi_op op, size_t *count)
{
	return tcp_valid(ep, OFI_ATOMIC_WRITE, datatype, op, count);
}

static int tcp_atomic_readwritevalid(struct fid_ep *ep,
				     enum fi_datatype datatype, enum fi_op op,
				     size_t *count)
{
	return tcp_valid(ep, OFI_ATOMIC_FETCH, datatype, op, count);
}

static int tcp_atomic_compwritevalid(struct fid_ep *ep,
				     enum fi_datatype datatype, enum fi_op op,
				     size_t *count)
{
	return tcp_valid(ep, OFI_ATOMIC_COMPARE, datatype, op, count);
}

int tcp_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		     enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	enum ofi_atomic_kind kind =
		flags & FI_COMPARE_ATOMIC ? OFI_ATOMIC_COMPARE
		: flags & FI_FETCH_ATOMIC ? OFI_ATOMIC_FETCH
					  : OFI_ATOMIC_WRITE;
	int ret;

	if (!domain)
		return -FI_EINVAL;
	ret = ofi_query_atomic(datatype, op, attr, flags, tcp_atomic_room);
	if (!ret)
		tcp_shm_atomic_limit(
			container_of(domain, struct util_domain, domain_fid),
			kind, datatype, op, &attr->count);
	return ret;
}

const struct fi_ops_atomic tcp_atomic_ops = {
	OFI_PLAIN_ATOMIC_OPS(tcp_atomic_writemsg, tcp_atomic_readwritemsg,
			     tcp_atomic_compwritemsg),
	.writevalid = tcp_atomic_writevalid,
	.readwritevalid = tcp_atomic_readwritevalid,
	.compwritevalid = tcp_atomic_compwritevalid,
};
