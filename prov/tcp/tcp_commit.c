/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_commit.c - persistent memory over tcp (fi_commit(3)): the initiator
 * of fi_commit (a TCP_OP_COMMIT frame naming the ranges, completed by the
 * target's TCP_OP_COMMIT_RESP), the target side of that frame (handed to
 * prov/util's ofi_commit_target, which checks the ranges and persists them
 * or asks an FI_COMMIT_MANUAL application), and FI_COMMIT_COMPLETE at the
 * target: what a write, an atomic or a message wrote into a persistent
 * registration is made durable before the frame is answered.
 *
 * Ordering. A commit must take effect after every write and atomic the
 * initiator issued earlier to the same peer. tcp gives that without a
 * fence: all frames to one peer leave in submission order from one FIFO
 * queue over the one connection in use (ofi_sock.h: frames wait on the
 * peer, never on a socket, so a lost connect race or an adopted anonymous
 * connection does not reorder them), and the target handles a
 * connection's frames strictly one after the other: a write's payload is
 * in registered memory and an atomic has run (tcp_rma_done) before the
 * next frame's head is even parsed. A frame that stalls the connection
 * (an unexpected message past the buffering bound) holds everything after
 * it, the commit included.
 *
 * Locking: everything here runs under the endpoint lock.
 */
#include <string.h>

#include "tcp.h"

/* A status for the wire: 0 or a positive fi_errno within its range. */
static int tcp_errno_of(int ret)
{
	if (!ret)
		return 0;
	ret = ret < 0 ? -ret : ret;
	return ret <= TCP_STATUS_MAX ? ret : FI_EIO;
}

/* ------------------------------------------------------------------ */
/* Initiator.                                                           */

#if OFI_HAVE_EXT_SLOTS
ssize_t tcp_commit(struct fid_ep *ep_fid, const struct fi_rma_iov *iov,
		   size_t count, fi_addr_t dest_addr, uint64_t flags,
		   void *context)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	struct tcp_rma_iov riov[TCP_COMMIT_IOV_MAX];
	struct tcp_hdr_view h = {.op = TCP_OP_COMMIT};
	struct fid_ep *shm;
	struct tcp_req *req;
	size_t i;
	ssize_t ret;

	if (!iov || !count || count > TCP_COMMIT_IOV_MAX)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_COMPLETION)
		return -FI_EBADFLAGS;
	shm = tcp_shm_lock_peer(ep, dest_addr);
	if (shm) {
		ret = fi_commit(shm, iov, count, dest_addr, flags, context);
		tcp_ep_unlock(ep);
		return ret;
	}
	if (!(ep->util.caps & FI_RMA_PMEM))
		return -FI_EOPNOTSUPP;
	for (i = 0; i < count; i++) {
		riov[i].addr = iov[i].addr;
		riov[i].len = iov[i].len;
		riov[i].key = iov[i].key;
	}
	tcp_ep_lock(ep);
	req = tcp_req_get(ep);
	if (OFI_UNLIKELY(!req)) {
		tcp_progress_locked(ep);
		tcp_ep_unlock(ep);
		return -FI_EAGAIN;
	}
	req->kind = TCP_REQ_COMMIT;
	req->addr = dest_addr;
	req->context = context;
	req->flags = FI_RMA | FI_WRITE | FI_COMMIT_COMPLETE;
	req->op_flags = flags;
	req->need_resp = true;
	h.body_len = (uint16_t)tcp_commit_body_encode(req->head + TCP_HDR_SIZE,
						      riov, count);
	h.op_id = tcp_req_id(req);
	tcp_hdr_encode(req->head, &h);
	req->tx.iov[0].iov_base = req->head;
	req->tx.iov[0].iov_len = TCP_HDR_SIZE + h.body_len;
	req->tx.iov_cnt = 1;
	ret = tcp_req_send(ep, req);
	if (ret)
		tcp_req_put(ep, req);
	tcp_ep_unlock(ep);
	/* fi_commit(3): a target already known to be gone (its connection
	 * failed: reset, refused) is -FI_EIO */
	if (ret && ret != -FI_EAGAIN && ret != -FI_EINVAL &&
	    ret != -FI_ENOTCONN)
		ret = -FI_EIO;
	return ret;
}
#endif

/* ------------------------------------------------------------------ */
/* Target: fi_commit.                                                   */

int tcp_commit_head(struct tcp_ep *ep, struct tcp_frame *f, const void *head,
		    size_t len)
{
	int ret;

	OFI_UNUSED(ep);
	ret = tcp_commit_body_decode(
		&f->h, (const uint8_t *)head + TCP_HDR_SIZE, len - TCP_HDR_SIZE,
		f->u.rma.iov, &f->u.rma.count);
	if (ret)
		return ret;
	f->kind = TCP_FR_COMMIT;
	return 0;
}

/* Every earlier frame of this connection has been applied (see above). */
void tcp_commit_done(struct tcp_ep *ep, struct tcp_frame *f)
{
	struct fi_rma_iov iov[TCP_COMMIT_IOV_MAX];
	struct tcp_hdr_view h = {.op = TCP_OP_COMMIT_RESP, .op_id = f->h.op_id};
	size_t i;
	int ret;

	for (i = 0; i < f->u.rma.count; i++) {
		iov[i].addr = f->u.rma.iov[i].addr;
		iov[i].len = f->u.rma.iov[i].len;
		iov[i].key = f->u.rma.iov[i].key;
	}
	ret = ofi_commit_target(&ep->util, iov, f->u.rma.count, 0);
	h.status = (uint16_t)(ret > 0 ? 0 : tcp_errno_of(ret));
	if (f->src == FI_ADDR_NOTAVAIL)
		return; /* an initiator not in our AV: no way to answer */
	(void)tcp_resp_send(ep, f->src, &h, NULL, 0, NULL);
}

/* ------------------------------------------------------------------ */
/* Target: FI_COMMIT_COMPLETE.                                          */

/*
 * A write with TCP_F_COMMIT landed: persist each range. The registrations
 * are held for reads into them, not for this (a staged write's never
 * were); hold them again (one closed meanwhile: FI_EACCES, the bytes can
 * no longer be vouched for).
 */
int tcp_write_persist(struct tcp_ep *ep, struct tcp_frame *f)
{
	struct ofi_mr_map *map = &ep->util.domain->mr_map;
	struct ofi_mr_entry *ent;
	uintptr_t a;
	size_t i;
	int ret = 0;

	for (i = 0; i < f->u.rma.count && !ret; i++) {
		a = (uintptr_t)f->u.rma.iov[i].addr;
		if (ofi_mr_map_get(map, &a, f->u.rma.iov[i].len,
				   f->u.rma.iov[i].key, FI_REMOTE_WRITE, &ent))
			return FI_EACCES;
		ret = a == f->u.rma.addr[i]
			      ? tcp_errno_of(ofi_commit_complete(
					ent, a, f->u.rma.iov[i].len))
			      : FI_EACCES;
		ofi_mr_map_put(map, ent);
	}
	return ret;
}

/* An atomic with TCP_F_COMMIT ran on held entries @ent at @dst. */
int tcp_atomic_persist(const struct tcp_atomic_view *av,
		       struct ofi_mr_entry *const *ent, const uintptr_t *dst)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < av->iov_count && !ret; i++)
		ret = tcp_errno_of(
			ofi_commit_complete(ent[i], dst[i], av->iov[i].len));
	return ret;
}

/*
 * A message with TCP_F_COMMIT filled slice @sl of @rx: what landed in a
 * persistent registration is made durable; other memory is delivery
 * complete. 0 or a positive fi_errno, for the ACK.
 */
int tcp_rx_persist(const struct ofi_rx_buf *rx, const struct ofi_rx_slice *sl)
{
	return tcp_errno_of(ofi_rx_buf_persist(rx, sl));
}
