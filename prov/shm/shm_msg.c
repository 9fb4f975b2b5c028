/*
 * shm_msg.c - the shm data path for FI_MSG and FI_TAGGED: protocol choice
 * per send (inline, inject, CMA, segmented), the progress engine that
 * drains the command and response rings, matching against posted and
 * unexpected messages (ignore masks, directed receive, FI_PEEK/FI_CLAIM/
 * FI_DISCARD, FI_MULTI_RECV), cancel, truncation and dead peers.
 *
 * Locking: everything here runs under the endpoint lock (skipped under
 * FI_THREAD_DOMAIN); peers are only touched through the lock-free rings and
 * the per-buffer flags of their regions.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "shm.h"

#define SHM_PROGRESS_BATCH 64
#define SHM_LIVENESS_TICKS 1024

/* An incoming message, fresh from the ring or from the unexpected queue. */
struct shm_in {
	const struct shm_cmd *cmd; /* validated local copy of the header */
	uint16_t src_id;
	const uint8_t *data; /* payload for inline/inject/drained SAR */
	struct shm_unexp *unexp;
};

/* ------------------------------------------------------------------ */
/* Completions.                                                         */

static void shm_tx_comp(struct shm_ep *ep, void *context, uint64_t flags,
			uint64_t op_flags, bool nocomp, int err)
{
	if (OFI_UNLIKELY(err)) {
		if (ep->util.tx_cq)
			ofi_cq_write_error_code(ep->util.tx_cq, context, flags,
						err, -err, 0);
		ofi_ep_cntr_inc_err(&ep->util, OFI_CNTR_TX);
		return;
	}
	if (!nocomp && ep->util.tx_cq &&
	    ofi_ep_wants_comp(ep->util.tx_cq_flags, op_flags))
		ofi_cq_write(ep->util.tx_cq, context, flags, 0, NULL, 0, 0);
	ofi_ep_cntr_inc(&ep->util, OFI_CNTR_TX);
}

static fi_addr_t shm_src_addr(struct shm_ep *ep, uint16_t src_id)
{
	struct shm_rx_peer *p = &ep->rx_peers[src_id];

	if (p->src_addr == FI_ADDR_NOTAVAIL && p->rg)
		p->src_addr = ofi_av_src_addr(ep->util.av, p->name);
	return p->src_addr;
}

static fi_addr_t shm_peer_addr(struct shm_ep *ep, uint16_t src_id)
{
	struct shm_rx_peer *p = &ep->rx_peers[src_id];

	if (p->addr == FI_ADDR_NOTAVAIL && p->rg && ep->util.av)
		p->addr = ofi_av_reverse_lookup(ep->util.av, p->name);
	return p->addr;
}

static uint64_t shm_rx_flags(const struct shm_cmd *hdr)
{
	return FI_RECV | (hdr->op == SHM_OP_TAGGED ? FI_TAGGED : FI_MSG) |
	       (hdr->flags & SHM_CMD_DATA ? FI_REMOTE_CQ_DATA : 0);
}

static void shm_rx_comp(struct shm_ep *ep, void *context, uint64_t op_flags,
			uint64_t flags, const struct shm_cmd *hdr,
			uint16_t src_id, void *buf, size_t len, size_t olen,
			int err)
{
	struct util_cq *cq = ep->util.rx_cq;
	uint64_t data = hdr->flags & SHM_CMD_DATA ? hdr->data : 0;
	struct fi_cq_err_entry e;

	if (!err && olen)
		err = FI_ETRUNC;
	if (OFI_UNLIKELY(err)) {
		if (cq) {
			memset(&e, 0, sizeof(e));
			e.op_context = context;
			e.flags = flags;
			e.len = len;
			e.buf = buf;
			e.data = data;
			e.tag = hdr->tag;
			e.olen = olen;
			e.err = err;
			e.prov_errno = -err;
			ofi_cq_write_error(cq, &e);
		}
		ofi_ep_cntr_inc_err(&ep->util, OFI_CNTR_RX);
		return;
	}
	if (cq && (ofi_ep_wants_comp(ep->util.rx_cq_flags, op_flags) ||
		   (flags & FI_MULTI_RECV))) {
		if (ep->util.caps & FI_SOURCE)
			ofi_cq_write_src(cq, context, flags, len, buf, data,
					 hdr->tag, shm_src_addr(ep, src_id));
		else
			ofi_cq_write(cq, context, flags, len, buf, data,
				     hdr->tag);
	}
	ofi_ep_cntr_inc(&ep->util, OFI_CNTR_RX);
}

static void shm_rx_free(struct shm_ep *ep, struct shm_rx *rx)
{
	dlist_remove(&rx->entry);
	dlist_insert_head(&rx->entry, &ep->rx_free);
}

/*
 * One message landed in @rx (at @off, @len of @size bytes). Multi-receive
 * buffers report FI_MULTI_RECV on the completion that releases them.
 */
static void shm_rx_finish(struct shm_ep *ep, struct shm_rx *rx,
			  const struct shm_cmd *hdr, uint16_t src_id,
			  size_t off, size_t len, int err)
{
	uint64_t flags = shm_rx_flags(hdr);
	void *buf = rx->iov_count ? (char *)rx->iov[0].iov_base + off : NULL;
	bool free_rx = !rx->multi;

	if (rx->multi && rx->released && !rx->pending) {
		flags |= FI_MULTI_RECV;
		free_rx = true;
	}
	shm_rx_comp(ep, rx->context, rx->flags, flags, hdr, src_id, buf, len,
		    hdr->size > len ? hdr->size - len : 0, err);
	if (free_rx)
		shm_rx_free(ep, rx);
}

/* ------------------------------------------------------------------ */
/* Acks and CMA.                                                        */

void shm_send_ack(struct shm_ep *ep, uint16_t src_id, uint64_t msg_id,
		  int status)
{
	struct shm_rx_peer *p = &ep->rx_peers[src_id];
	struct shm_resp *resp;
	uint64_t pos;
	int tries;

	/* A closed sender waits for nothing. */
	if (!p->rg || shm_rx_peer_closed(ep, src_id))
		return;
	/* The ring holds as many slots as the sender has transfers. */
	for (tries = 0; tries < 1000000; tries++) {
		resp = shm_ring_claim(shm_resp_ring(p->rg), &pos);
		if (resp)
			break;
		if (!shm_pid_alive(p->pid) || shm_rx_peer_closed(ep, src_id))
			return;
	}
	if (!resp) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA, "response ring full\n");
		return;
	}
	resp->op = SHM_RESP_ACK;
	resp->status = status;
	resp->msg_id = msg_id;
	shm_ring_commit(resp, pos);
}

/* Reads the sender's buffer straight into ours (one copy). */
static int shm_cma_read(struct shm_ep *ep, struct shm_rx *rx,
			const struct shm_cmd *hdr, uint16_t src_id, size_t off,
			size_t len)
{
	struct shm_rx_peer *p = &ep->rx_peers[src_id];
	struct iovec local[SHM_IOV_LIMIT], remote[SHM_IOV_LIMIT];
	size_t i, n = 0, skip = off, want = len;
	ssize_t ret;

	if (!p->cma_ok || rx->iface != FI_HMEM_SYSTEM)
		return SHM_ACK_NEED_SAR;
	if (!len)
		return 0;
	for (i = 0; i < rx->iov_count && want; i++) {
		if (skip >= rx->iov[i].iov_len) {
			skip -= rx->iov[i].iov_len;
			continue;
		}
		local[n].iov_base = (char *)rx->iov[i].iov_base + skip;
		local[n].iov_len = OFI_MIN(rx->iov[i].iov_len - skip, want);
		want -= local[n].iov_len;
		skip = 0;
		n++;
	}
	for (i = 0; i < hdr->u.cma.iov_count; i++) {
		remote[i].iov_base = (void *)(uintptr_t)hdr->u.cma.iov[i].addr;
		remote[i].iov_len = hdr->u.cma.iov[i].len;
	}
	ret = process_vm_readv(p->pid, local, n, remote, i, 0);
	if (ret == (ssize_t)len)
		return 0;
	if (ret < 0 && (errno == EPERM || errno == ENOSYS)) {
		p->cma_ok = false;
		return SHM_ACK_NEED_SAR;
	}
	return ret < 0 && errno == ESRCH ? -FI_EIO : -FI_EFAULT;
}

/* ------------------------------------------------------------------ */
/* Segmented transfers, receive side.                                   */

static struct shm_sar_rx *shm_sar_rx_start(struct shm_ep *ep, struct shm_rx *rx,
					   const struct shm_cmd *hdr,
					   uint16_t src_id, size_t off,
					   size_t cap)
{
	struct shm_sar_rx *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->src_id = src_id;
	s->msg_id = hdr->msg_id;
	s->size = hdr->size;
	s->rx = rx;
	s->offset = off;
	s->cap = cap;
	memcpy(&s->cmd, hdr, SHM_CMD_HDR_SIZE);
	if (rx)
		rx->pending++;
	dlist_insert_tail(&s->entry, &ep->sar_rx_list);
	return s;
}

static void shm_sar_rx_finish(struct shm_ep *ep, struct shm_sar_rx *s)
{
	struct shm_rx *rx = s->rx;

	dlist_remove(&s->entry);
	if (rx) {
		rx->pending--;
		shm_rx_finish(ep, rx, &s->cmd, s->src_id, s->offset,
			      OFI_MIN(s->size, s->cap), s->err);
	} else if (s->unexp) {
		s->unexp->sar = NULL;
		s->unexp->err = s->err;
	}
	free(s);
}

static void shm_sar_rx_progress(struct shm_ep *ep, struct shm_sar_rx *s)
{
	struct shm_region *rg = ep->rx_peers[s->src_id].rg;
	struct shm_sar_seg *seg;
	size_t len, n;
	ssize_t ret;

	while (rg && s->done < s->size) {
		seg = shm_sar_seg(rg, s->seg);
		if (!atomic_load_explicit(&seg->full, memory_order_acquire) ||
		    seg->msg_id != s->msg_id)
			break;
		len = seg->len;
		if (len > SHM_SAR_SEG_SIZE || len > s->size - s->done || !len) {
			s->err = FI_EIO;
			s->done = s->size;
			break;
		}
		if (seg->err && !s->err)
			s->err = (int)seg->err;
		if (s->rx && s->done < s->cap) {
			n = OFI_MIN(len, s->cap - s->done);
			ret = shm_copy_to(ep, s->rx->iface, s->rx->device,
					  s->rx->iov, s->rx->iov_count,
					  s->offset + s->done, seg->data, n);
			if (ret < 0 && !s->err)
				s->err = (int)-ret;
		} else if (s->unexp) {
			memcpy(s->unexp->data + s->done, seg->data, len);
		}
		atomic_store_explicit(&seg->full, 0, memory_order_release);
		s->done += len;
		s->seg = (s->seg + 1) % SHM_SAR_SEGS;
	}
	if (s->done == s->size)
		shm_sar_rx_finish(ep, s);
}

/* ------------------------------------------------------------------ */
/* Delivery into a posted receive.                                      */

static size_t shm_rx_total(const struct shm_rx *rx)
{
	size_t i, n = 0;

	for (i = 0; i < rx->iov_count; i++)
		n += rx->iov[i].iov_len;
	return n;
}

/* Returns true when @rx takes no more messages. */
static bool shm_deliver(struct shm_ep *ep, struct shm_rx *rx,
			const struct shm_in *in)
{
	const struct shm_cmd *hdr = in->cmd;
	size_t off = rx->multi ? rx->used : 0;
	size_t total =
		rx->iov_count == 1 ? rx->iov[0].iov_len : shm_rx_total(rx);
	size_t cap = total > off ? total - off : 0;
	size_t len = OFI_MIN(hdr->size, cap);
	struct shm_sar_rx *s;
	bool consumed = true;
	ssize_t ret;
	int err = 0;

	if (rx->multi) {
		rx->used += len;
		if (total - rx->used < ep->util.min_multi_recv)
			rx->released = true;
		consumed = rx->released;
	}
	if (consumed)
		dlist_remove(&rx->entry);

	switch (hdr->proto) {
	case SHM_PROTO_CMA:
	case SHM_PROTO_IPC:
		/* A closed sender never completed it: its buffer may be gone. */
		if (OFI_UNLIKELY(shm_rx_peer_closed(ep, in->src_id))) {
			err = FI_EIO;
			break;
		}
		ret = hdr->proto == SHM_PROTO_IPC
			      ? shm_ipc_read(ep, rx, hdr, in->src_id, off, len)
			      : shm_cma_read(ep, rx, hdr, in->src_id, off, len);
		if (ret == SHM_ACK_NEED_SAR) {
			if (!shm_sar_rx_start(ep, rx, hdr, in->src_id, off,
					      len)) {
				err = FI_ENOMEM;
				shm_send_ack(ep, in->src_id, hdr->msg_id,
					     -FI_ENOMEM);
				break;
			}
			shm_send_ack(ep, in->src_id, hdr->msg_id,
				     SHM_ACK_NEED_SAR);
			return consumed;
		}
		err = (int)-ret;
		shm_send_ack(ep, in->src_id, hdr->msg_id, 0);
		break;
	case SHM_PROTO_SAR:
		if (in->unexp && in->unexp->sar) {
			/* Still draining: keep what came, stream the rest. */
			s = in->unexp->sar;
			ret = shm_copy_to(ep, rx->iface, rx->device, rx->iov,
					  rx->iov_count, off, in->unexp->data,
					  OFI_MIN(s->done, len));
			s->unexp = NULL;
			s->rx = rx;
			s->offset = off;
			s->cap = len;
			s->err = ret < 0 ? (int)-ret : s->err;
			rx->pending++;
			return consumed;
		}
		if (!in->data) {
			if (!shm_sar_rx_start(ep, rx, hdr, in->src_id, off,
					      len)) {
				err = FI_ENOMEM;
				break;
			}
			return consumed;
		}
		/* fully drained unexpected data */
		if (in->unexp->err) {
			err = in->unexp->err;
			break;
		}
		__attribute__((fallthrough));
	default:
		ret = shm_copy_to(ep, rx->iface, rx->device, rx->iov,
				  rx->iov_count, off, in->data, len);
		err = ret < 0 ? (int)-ret : 0;
		break;
	}
	shm_rx_finish(ep, rx, hdr, in->src_id, off, len, err);
	return consumed;
}

/* ------------------------------------------------------------------ */
/* Matching and the unexpected queue.                                   */

static bool shm_match(struct shm_ep *ep, fi_addr_t want, uint64_t tag,
		      uint64_t ignore, bool tagged, const struct shm_cmd *hdr,
		      uint16_t src_id)
{
	if (tagged && ((hdr->tag | ignore) != (tag | ignore)))
		return false;
	if (want != FI_ADDR_UNSPEC && want != shm_peer_addr(ep, src_id))
		return false;
	return true;
}

static struct shm_rx *shm_match_posted(struct shm_ep *ep,
				       struct dlist_entry *list,
				       const struct shm_cmd *hdr,
				       uint16_t src_id)
{
	struct dlist_entry *item;
	struct shm_rx *rx;

	dlist_foreach(list, item)
	{
		rx = container_of(item, struct shm_rx, entry);
		if (shm_match(ep, rx->addr, rx->tag, rx->ignore, rx->tagged,
			      hdr, src_id))
			return rx;
	}
	return NULL;
}

static struct shm_unexp *shm_match_unexp(struct shm_ep *ep,
					 struct dlist_entry *list,
					 fi_addr_t addr, uint64_t tag,
					 uint64_t ignore, bool tagged)
{
	struct dlist_entry *item;
	struct shm_unexp *u;

	dlist_foreach(list, item)
	{
		u = container_of(item, struct shm_unexp, entry);
		if (shm_match(ep, addr, tag, ignore, tagged, &u->cmd,
			      u->src_id))
			return u;
	}
	return NULL;
}

static void shm_unexp_free(struct shm_unexp *u)
{
	free(u->data);
	free(u);
}

/* Drops an unexpected message without delivering it (FI_DISCARD). */
static void shm_unexp_discard(struct shm_ep *ep, struct shm_unexp *u,
			      int status)
{
	dlist_remove(&u->entry);
	if (u->cmd.proto == SHM_PROTO_IPC)
		shm_ipc_discard(ep, &u->cmd, u->src_id);
	if (u->cmd.proto == SHM_PROTO_CMA || u->cmd.proto == SHM_PROTO_IPC)
		shm_send_ack(ep, u->src_id, u->cmd.msg_id, status);
	if (u->sar) {
		u->sar->unexp = NULL;
		u->sar->discard = true;
	}
	shm_unexp_free(u);
}

/* Returns false when the message had to be dropped. */
static bool shm_queue_unexp(struct shm_ep *ep, const struct shm_in *in,
			    const struct shm_cmd *slot)
{
	const struct shm_cmd *hdr = in->cmd;
	struct shm_unexp *u;

	u = calloc(1, sizeof(*u));
	if (!u)
		goto drop;
	u->src_id = in->src_id;
	memcpy(&u->cmd, hdr,
	       hdr->proto == SHM_PROTO_CMA || hdr->proto == SHM_PROTO_IPC
		       ? sizeof(*hdr)
		       : SHM_CMD_HDR_SIZE + sizeof(uint64_t));
	switch (hdr->proto) {
	case SHM_PROTO_INLINE:
		memcpy(u->cmd.u.inline_data, slot->u.inline_data, hdr->size);
		u->data = NULL;
		break;
	case SHM_PROTO_INJECT:
		u->data = malloc(hdr->size ? hdr->size : 1);
		if (!u->data)
			goto drop_u;
		memcpy(u->data, in->data, hdr->size);
		break;
	case SHM_PROTO_SAR:
		u->data = malloc(hdr->size);
		if (!u->data)
			goto drop_u;
		u->sar = shm_sar_rx_start(ep, NULL, hdr, in->src_id, 0, 0);
		if (!u->sar)
			goto drop_u;
		u->sar->unexp = u;
		break;
	default:
		break;
	}
	dlist_insert_tail(&u->entry, hdr->op == SHM_OP_TAGGED
					     ? &ep->unexp_tlist
					     : &ep->unexp_list);
	return true;
drop_u:
	shm_unexp_free(u);
drop:
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"out of memory: unexpected message dropped\n");
	if (hdr->proto == SHM_PROTO_IPC)
		shm_ipc_discard(ep, hdr, in->src_id);
	if (hdr->proto == SHM_PROTO_CMA || hdr->proto == SHM_PROTO_IPC)
		shm_send_ack(ep, in->src_id, hdr->msg_id, -FI_ENOMEM);
	return false;
}

/* Inline payloads are read from the slot or the unexpected copy. */
static const uint8_t *shm_unexp_data(struct shm_unexp *u)
{
	return u->cmd.proto == SHM_PROTO_INLINE ? u->cmd.u.inline_data
						: u->data;
}

static bool shm_deliver_unexp(struct shm_ep *ep, struct shm_rx *rx,
			      struct shm_unexp *u)
{
	struct shm_in in = {
		.cmd = &u->cmd,
		.src_id = u->src_id,
		.data = shm_unexp_data(u),
		.unexp = u,
	};
	bool consumed;

	dlist_remove(&u->entry);
	if (u->sar)
		in.data = NULL;
	consumed = shm_deliver(ep, rx, &in);
	shm_unexp_free(u);
	return consumed;
}

/* ------------------------------------------------------------------ */
/* Progress.                                                            */

static bool shm_cmd_valid(const struct shm_cmd *hdr)
{
	uint64_t sum = 0;
	uint32_t i;

	if (hdr->op != SHM_OP_MSG && hdr->op != SHM_OP_TAGGED)
		return false;
	switch (hdr->proto) {
	case SHM_PROTO_INLINE:
		return hdr->size <= SHM_INLINE_MAX;
	case SHM_PROTO_INJECT:
		return hdr->size <= SHM_INJECT_SIZE &&
		       hdr->u.inject.buf < SHM_INJECT_BUFS;
	case SHM_PROTO_CMA:
		if (hdr->u.cma.iov_count > SHM_IOV_LIMIT)
			return false;
		for (i = 0; i < hdr->u.cma.iov_count; i++)
			sum += hdr->u.cma.iov[i].len;
		return sum == hdr->size;
	case SHM_PROTO_SAR:
		return true;
	case SHM_PROTO_IPC:
		return shm_ipc_cmd_valid(hdr);
	default:
		return false;
	}
}

static void shm_handle_cmd(struct shm_ep *ep, const struct shm_cmd *slot)
{
	struct shm_cmd hdr; /* a peer could rewrite the slot under us */
	struct shm_inject_buf *ib = NULL;
	struct shm_rx_peer *p;
	struct shm_rx *rx;
	struct shm_in in;
	bool ok = true;

	if (slot->op >= SHM_OP_WRITE && slot->op <= SHM_OP_COMPARE_ATOMIC) {
		shm_rma_handle_cmd(ep, slot);
		return;
	}
	memcpy(&hdr, slot,
	       slot->proto == SHM_PROTO_CMA || slot->proto == SHM_PROTO_IPC
		       ? sizeof(hdr)
		       : SHM_CMD_HDR_SIZE + sizeof(uint64_t));
	if (OFI_UNLIKELY(!shm_cmd_valid(&hdr)))
		return;
	p = shm_rx_peer_get(ep, hdr.src_id);
	if (OFI_UNLIKELY(!p)) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"command from unknown peer %u dropped\n", hdr.src_id);
		return;
	}
	in.cmd = &hdr;
	in.src_id = hdr.src_id;
	in.unexp = NULL;
	in.data = NULL;
	if (hdr.proto == SHM_PROTO_INLINE) {
		in.data = slot->u.inline_data;
	} else if (hdr.proto == SHM_PROTO_INJECT) {
		ib = shm_inject_buf(p->rg, hdr.u.inject.buf);
		in.data = ib->data;
	}
	rx = shm_match_posted(
		ep, hdr.op == SHM_OP_TAGGED ? &ep->trecv_list : &ep->recv_list,
		&hdr, hdr.src_id);
	if (rx)
		shm_deliver(ep, rx, &in);
	else
		ok = shm_queue_unexp(ep, &in, slot);
	if (ib)
		atomic_store_explicit(&ib->busy, 0, memory_order_release);
	/*
	 * Delivery complete (fi_cq(3)): the message sits in the receive
	 * buffer or, unexpected, in our copy that a receive will be served
	 * from. Either way it is processed: the sender may complete.
	 */
	if (OFI_UNLIKELY(hdr.flags & SHM_CMD_ACK) &&
	    (hdr.proto == SHM_PROTO_INLINE || hdr.proto == SHM_PROTO_INJECT))
		shm_send_ack(ep, hdr.src_id, hdr.msg_id, ok ? 0 : -FI_ENOMEM);
}

static void shm_tx_release(struct shm_ep *ep, struct shm_tx *tx)
{
	dlist_remove(&tx->entry);
	tx->state = SHM_TX_FREE;
	dlist_insert_head(&tx->entry, &ep->tx_free);
}

static void shm_tx_done(struct shm_ep *ep, struct shm_tx *tx, int err)
{
	shm_tx_comp(ep, tx->context, tx->flags, tx->op_flags, tx->nocomp, err);
	shm_tx_release(ep, tx);
}

static void shm_handle_resp(struct shm_ep *ep, const struct shm_resp *r)
{
	uint32_t idx = (uint32_t)r->msg_id;
	struct shm_tx *tx;

	if (r->op != SHM_RESP_ACK || idx >= SHM_TX_SIZE)
		return;
	tx = &ep->tx[idx];
	if (tx->state == SHM_TX_RMA) {
		if (tx->gen == (uint32_t)(r->msg_id >> 32))
			shm_rma_handle_resp(ep, tx, r->status);
		return;
	}
	if ((tx->state != SHM_TX_CMA && tx->state != SHM_TX_DC) ||
	    tx->gen != (uint32_t)(r->msg_id >> 32))
		return;
	/* The data went with the command: there is nothing to stream. */
	if (OFI_UNLIKELY(tx->state == SHM_TX_DC && r->status > 0)) {
		shm_tx_done(ep, tx, FI_EIO);
		return;
	}
	if (r->status == SHM_ACK_NEED_SAR) {
		dlist_remove(&tx->entry);
		tx->state = SHM_TX_SAR_WAIT;
		dlist_insert_tail(&tx->entry, &ep->sar_queue);
		return;
	}
	shm_tx_done(ep, tx, r->status < 0 ? -r->status : 0);
}

static uint64_t shm_msg_id(const struct shm_tx *tx)
{
	return (uint64_t)tx->gen << 32 | tx->idx;
}

static void shm_sar_reset(struct shm_ep *ep)
{
	uint32_t i;

	for (i = 0; i < SHM_SAR_SEGS; i++)
		atomic_store(&shm_sar_seg(ep->rg, i)->full, 0);
}

static void shm_sar_tx_progress(struct shm_ep *ep)
{
	struct shm_sar_seg *seg;
	struct shm_tx *tx;
	size_t len;
	ssize_t ret;

	while (!dlist_empty(&ep->sar_queue)) {
		tx = container_of(ep->sar_queue.next, struct shm_tx, entry);
		if (tx->state == SHM_TX_SAR_WAIT) {
			tx->state = SHM_TX_SAR;
			tx->seg = 0;
			tx->done = 0;
		}
		while (tx->done < tx->size) {
			seg = shm_sar_seg(ep->rg, tx->seg);
			if (atomic_load_explicit(&seg->full,
						 memory_order_acquire))
				break;
			len = OFI_MIN(SHM_SAR_SEG_SIZE, tx->size - tx->done);
			ret = shm_copy_from(ep, seg->data, len, tx->iface,
					    tx->device, tx->iov, tx->iov_count,
					    tx->done);
			if (ret < 0 && !tx->err)
				tx->err = (int)-ret;
			seg->err = (uint32_t)tx->err;
			seg->len = len;
			seg->msg_id = shm_msg_id(tx);
			atomic_store_explicit(&seg->full, 1,
					      memory_order_release);
			tx->done += len;
			tx->seg = (tx->seg + 1) % SHM_SAR_SEGS;
		}
		if (tx->done < tx->size)
			return;
		/* The receiver empties in order: the last one closes it. */
		seg = shm_sar_seg(ep->rg,
				  (tx->seg + SHM_SAR_SEGS - 1) % SHM_SAR_SEGS);
		if (atomic_load_explicit(&seg->full, memory_order_acquire))
			return;
		shm_tx_done(ep, tx, tx->err);
	}
}

static bool shm_tx_peer_alive(struct shm_ep *ep, fi_addr_t addr)
{
	struct shm_tx_peer *p = &ep->tx_peers[addr];

	if (p->dead)
		return false;
	if (shm_pid_alive(p->pid))
		return true;
	p->dead = true;
	return false;
}

static bool shm_unexp_from(struct shm_ep *ep, uint16_t id)
{
	struct dlist_entry *lists[] = {&ep->unexp_list, &ep->unexp_tlist,
				       &ep->claimed_list};
	struct dlist_entry *item;
	size_t i;

	for (i = 0; i < OFI_ARRAY_SIZE(lists); i++) {
		dlist_foreach(lists[i], item)
		{
			if (container_of(item, struct shm_unexp, entry)
				    ->src_id == id)
				return true;
		}
	}
	return false;
}

/*
 * Frees the slots of closed senders we have nothing more of: their
 * commands consumed, no message of theirs waiting for a receive (it
 * names them by slot). Their streams were failed before.
 */
static void shm_release_closed(struct shm_ep *ep)
{
	struct shm_ring *ring = shm_cmd_ring(ep->rg);
	struct shm_peer_slot *s;
	uint16_t id;

	for (id = 0; id < SHM_MAX_PEERS; id++) {
		s = shm_peer_slot(ep->rg, id);
		if (atomic_load_explicit(&s->state, memory_order_acquire) !=
		    SHM_PEER_CLOSED)
			continue;
		if ((int64_t)(ring->head - s->last_pos) < 0 ||
		    shm_unexp_from(ep, id))
			continue;
		shm_rx_peer_release(ep, id);
		ep->closed_done++;
	}
}

static bool shm_sender_gone(struct shm_ep *ep, uint16_t id)
{
	return shm_rx_peer_closed(ep, id) ||
	       !shm_pid_alive(ep->rx_peers[id].pid);
}

/* Fails every transfer whose peer has died; nothing may wait forever. */
static void shm_check_peers(struct shm_ep *ep)
{
	struct dlist_entry *item, *tmp;
	struct shm_sar_rx *s;
	struct shm_tx *tx;
	bool head = true;

	dlist_foreach_safe(&ep->cma_list, item, tmp)
	{
		tx = container_of(item, struct shm_tx, entry);
		if (!shm_tx_peer_alive(ep, tx->addr))
			shm_tx_done(ep, tx, FI_EIO);
	}
	dlist_foreach_safe(&ep->sar_queue, item, tmp)
	{
		tx = container_of(item, struct shm_tx, entry);
		if (!shm_tx_peer_alive(ep, tx->addr)) {
			if (head && tx->state == SHM_TX_SAR)
				shm_sar_reset(ep);
			shm_tx_done(ep, tx, FI_EIO);
		}
		head = false;
	}
	dlist_foreach_safe(&ep->sar_rx_list, item, tmp)
	{
		s = container_of(item, struct shm_sar_rx, entry);
		if (!shm_sender_gone(ep, s->src_id))
			continue;
		s->err = FI_EIO;
		s->done = s->size;
		shm_sar_rx_finish(ep, s);
	}
	if (atomic_load_explicit(&shm_hdr(ep->rg)->closed, memory_order_relaxed) !=
	    ep->closed_done)
		shm_release_closed(ep);
}

void shm_progress_locked(struct shm_ep *ep)
{
	struct shm_ring *ring = shm_resp_ring(ep->rg);
	struct dlist_entry *item, *tmp;
	struct shm_resp *resp;
	struct shm_cmd *cmd;
	int n;

	while ((resp = shm_ring_peek(ring))) {
		shm_handle_resp(ep, resp);
		shm_ring_release(ring, resp);
	}
	ring = shm_cmd_ring(ep->rg);
	for (n = 0; n < SHM_PROGRESS_BATCH && (cmd = shm_ring_peek(ring));
	     n++) {
		shm_handle_cmd(ep, cmd);
		shm_ring_release(ring, cmd);
	}
	if (OFI_UNLIKELY(!dlist_empty(&ep->sar_queue)))
		shm_sar_tx_progress(ep);
	if (OFI_UNLIKELY(!dlist_empty(&ep->rma_list)))
		shm_rma_progress(ep);
	dlist_foreach_safe(&ep->sar_rx_list, item, tmp) shm_sar_rx_progress(
		ep, container_of(item, struct shm_sar_rx, entry));
	if (OFI_UNLIKELY(!(++ep->progress_ticks % SHM_LIVENESS_TICKS)) &&
	    (!dlist_empty(&ep->cma_list) || !dlist_empty(&ep->sar_queue) ||
	     !dlist_empty(&ep->sar_rx_list) ||
	     atomic_load_explicit(&shm_hdr(ep->rg)->closed, memory_order_relaxed) !=
		     ep->closed_done))
		shm_check_peers(ep);
}

void shm_ep_progress(struct util_ep *util_ep)
{
	struct shm_ep *ep = container_of(util_ep, struct shm_ep, util);

	shm_ep_lock(ep);
	shm_progress_locked(ep);
	shm_ep_unlock(ep);
}

/* Close: no completions are owed, but senders must not wait on us. */
void shm_ep_flush(struct shm_ep *ep)
{
	struct dlist_entry *lists[] = {&ep->unexp_list, &ep->unexp_tlist,
				       &ep->claimed_list};
	struct dlist_entry *item;
	struct shm_sar_rx *s;
	size_t i;

	for (i = 0; i < OFI_ARRAY_SIZE(lists); i++) {
		while ((item = lists[i]->next) != lists[i])
			shm_unexp_discard(
				ep, container_of(item, struct shm_unexp, entry),
				-FI_ECANCELED);
	}
	while ((item = dlist_pop_front(&ep->sar_rx_list))) {
		s = container_of(item, struct shm_sar_rx, entry);
		free(s);
	}
	if (!dlist_empty(&ep->sar_queue))
		shm_sar_reset(ep);
}

/* ------------------------------------------------------------------ */
/* Sending.                                                             */

struct shm_send_args {
	const struct iovec *iov;
	size_t count;
	size_t size;
	enum fi_hmem_iface iface;
	uint64_t device;
	fi_addr_t addr;
	uint64_t tag;
	uint64_t data;
	void *context;
	uint64_t op_flags;
	uint8_t op;
	bool nocomp;
};

static uint64_t shm_tx_flags(const struct shm_send_args *a)
{
	return FI_SEND | (a->op == SHM_OP_TAGGED ? FI_TAGGED : FI_MSG);
}

static void shm_fill_hdr(struct shm_cmd *cmd, const struct shm_send_args *a,
			 uint8_t proto, uint16_t src_id)
{
	cmd->op = a->op;
	cmd->proto = proto;
	cmd->src_id = src_id;
	cmd->flags = a->op_flags & FI_REMOTE_CQ_DATA ? SHM_CMD_DATA : 0;
	cmd->size = a->size;
	cmd->tag = a->tag;
	cmd->data = a->data;
	cmd->msg_id = 0;
}

/* A full ring: drain what we can and tell a dead peer apart. */
static ssize_t shm_busy(struct shm_ep *ep, struct shm_tx_peer *p)
{
	shm_progress_locked(ep);
	if (p && !shm_pid_alive(p->pid)) {
		p->dead = true;
		return -FI_EIO;
	}
	return -FI_EAGAIN;
}

/* Takes the first free transfer entry for the send @a. */
static struct shm_tx *shm_tx_take(struct shm_ep *ep,
				  const struct shm_send_args *a)
{
	struct shm_tx *tx;

	tx = container_of(dlist_pop_front(&ep->tx_free), struct shm_tx, entry);
	tx->gen++;
	tx->addr = a->addr;
	tx->context = a->context;
	tx->flags = shm_tx_flags(a);
	tx->op_flags = a->op_flags;
	tx->nocomp = a->nocomp;
	tx->size = a->size;
	tx->err = 0;
	tx->iface = a->iface;
	tx->device = a->device;
	tx->iov_count = a->count;
	memcpy(tx->iov, a->iov, a->count * sizeof(*a->iov));
	return tx;
}

/*
 * Delivery complete for a command that carries its data: it completes on
 * the receiver's ack, which the liveness check fails with FI_EIO should
 * the receiver die first (cma_list).
 */
static void shm_dc_arm(struct shm_ep *ep, struct shm_cmd *cmd,
		       const struct shm_send_args *a)
{
	struct shm_tx *tx = shm_tx_take(ep, a);

	tx->state = SHM_TX_DC;
	dlist_insert_tail(&tx->entry, &ep->cma_list);
	cmd->flags |= SHM_CMD_ACK;
	cmd->msg_id = shm_msg_id(tx);
}

/*
 * The small protocols. @dc is a constant at each call site so that the
 * usual path is compiled without any delivery-complete work.
 */
static inline __attribute__((always_inline)) ssize_t
shm_send_inline(struct shm_ep *ep, struct shm_tx_peer *p,
		const struct shm_send_args *a, bool dc)
{
	struct shm_cmd *cmd;
	uint64_t pos;
	ssize_t ret;

	cmd = shm_ring_claim(shm_cmd_ring(p->rg), &pos);
	if (OFI_UNLIKELY(!cmd))
		return shm_busy(ep, p);
	shm_fill_hdr(cmd, a, SHM_PROTO_INLINE, p->id);
	ret = shm_copy_from(ep, cmd->u.inline_data, a->size, a->iface,
			    a->device, a->iov, a->count, 0);
	if (OFI_UNLIKELY(ret < 0))
		cmd->op = 0; /* the slot is taken: the receiver skips it */
	else if (dc)
		shm_dc_arm(ep, cmd, a);
	shm_tx_commit(p, cmd, pos);
	if (ret < 0)
		return ret;
	if (!dc)
		shm_tx_comp(ep, a->context, shm_tx_flags(a), a->op_flags,
			    a->nocomp, 0);
	return 0;
}

static inline __attribute__((always_inline)) ssize_t
shm_send_inject(struct shm_ep *ep, struct shm_tx_peer *p,
		const struct shm_send_args *a, bool dc)
{
	struct shm_inject_buf *b = NULL;
	struct shm_cmd *cmd;
	uint32_t i, idx = 0;
	uint64_t pos;
	ssize_t ret;

	for (i = 0; i < SHM_INJECT_BUFS; i++) {
		idx = (ep->inject_next + i) % SHM_INJECT_BUFS;
		b = shm_inject_buf(ep->rg, idx);
		if (!atomic_load_explicit(&b->busy, memory_order_acquire))
			break;
	}
	if (i == SHM_INJECT_BUFS)
		return shm_busy(ep, p);
	ret = shm_copy_from(ep, b->data, a->size, a->iface, a->device, a->iov,
			    a->count, 0);
	if (ret < 0)
		return ret;
	cmd = shm_ring_claim(shm_cmd_ring(p->rg), &pos);
	if (!cmd)
		return shm_busy(ep, p);
	atomic_store_explicit(&b->busy, 1, memory_order_relaxed);
	ep->inject_next = idx + 1;
	shm_fill_hdr(cmd, a, SHM_PROTO_INJECT, p->id);
	cmd->u.inject.buf = idx;
	if (dc)
		shm_dc_arm(ep, cmd, a);
	shm_tx_commit(p, cmd, pos);
	if (!dc)
		shm_tx_comp(ep, a->context, shm_tx_flags(a), a->op_flags,
			    a->nocomp, 0);
	return 0;
}

/* Inline or inject, completing on the receiver's ack. */
static ssize_t shm_send_dc(struct shm_ep *ep, struct shm_tx_peer *p,
			   const struct shm_send_args *a)
{
	if (dlist_empty(&ep->tx_free))
		return shm_busy(ep, p);
	if (a->size <= SHM_INLINE_MAX)
		return shm_send_inline(ep, p, a, true);
	return shm_send_inject(ep, p, a, true);
}

static ssize_t shm_send_large(struct shm_ep *ep, struct shm_tx_peer *p,
			      const struct shm_send_args *a)
{
	struct shm_cmd *cmd;
	struct shm_tx *tx;
	bool cma = p->cma_ok && a->iface == FI_HMEM_SYSTEM &&
		   a->size > ep->cma_threshold;
	bool ipc = shm_ipc_wanted(ep, p, a->iface, a->count, a->size);
	uint64_t pos;
	size_t i;

	if (dlist_empty(&ep->tx_free))
		return shm_busy(ep, p);
	cmd = shm_ring_claim(shm_cmd_ring(p->rg), &pos);
	if (!cmd)
		return shm_busy(ep, p);
	tx = shm_tx_take(ep, a);

	shm_fill_hdr(cmd, a, cma ? SHM_PROTO_CMA : SHM_PROTO_SAR, p->id);
	cmd->msg_id = shm_msg_id(tx);
	/* Device IPC when the buffer exports; it streams otherwise. */
	if (ipc && shm_ipc_send_prep(ep, p, a->addr, cmd, a->iov[0].iov_base,
				     a->iface, a->device))
		ipc = false;
	if (ipc) {
		tx->state = SHM_TX_CMA;
		dlist_insert_tail(&tx->entry, &ep->cma_list);
	} else if (cma) {
		cmd->u.cma.iov_count = a->count;
		for (i = 0; i < a->count; i++) {
			cmd->u.cma.iov[i].addr = (uintptr_t)a->iov[i].iov_base;
			cmd->u.cma.iov[i].len = a->iov[i].iov_len;
		}
		tx->state = SHM_TX_CMA;
		dlist_insert_tail(&tx->entry, &ep->cma_list);
	} else {
		tx->state = SHM_TX_SAR_WAIT;
		dlist_insert_tail(&tx->entry, &ep->sar_queue);
	}
	shm_tx_commit(p, cmd, pos);
	if (!cma && !ipc)
		shm_sar_tx_progress(ep);
	return 0;
}

static ssize_t shm_send(struct shm_ep *ep, struct shm_send_args *a, void **desc)
{
	struct shm_tx_peer *p;
	ssize_t ret;

	if (OFI_UNLIKELY(a->count > SHM_IOV_LIMIT || (a->count && !a->iov)))
		return -FI_EINVAL;
	a->size = a->count == 1 ? a->iov[0].iov_len
				: ofi_total_iov_len(a->iov, a->count);
	if ((a->op_flags & FI_INJECT) && a->size > SHM_INJECT_SIZE)
		return -FI_EINVAL;
	shm_iov_iface(ep, desc, a->iov, a->count, &a->iface, &a->device);
	shm_ep_lock(ep);
	ret = shm_tx_peer_get(ep, a->addr, &p);
	if (OFI_UNLIKELY(ret)) {
		if (ret == -FI_EAGAIN)
			shm_progress_locked(ep);
	} else if (OFI_UNLIKELY(p->dead)) {
		ret = -FI_EIO;
	} else if (OFI_UNLIKELY(a->op_flags & FI_DELIVERY_COMPLETE) &&
		   a->size <= SHM_INJECT_SIZE && !a->nocomp) {
		ret = shm_send_dc(ep, p, a);
	} else if (a->size <= SHM_INLINE_MAX) {
		ret = shm_send_inline(ep, p, a, false);
	} else if (a->size <= SHM_INJECT_SIZE) {
		ret = shm_send_inject(ep, p, a, false);
	} else {
		ret = shm_send_large(ep, p, a);
	}
	shm_ep_unlock(ep);
	return ret;
}

static inline struct shm_ep *shm_ep_of(struct fid_ep *ep_fid)
{
	return container_of(ep_fid, struct shm_ep, util.ep_fid);
}

#define SHM_COMP_LEVELS                                                        \
	(FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)

/*
 * fi_sendmsg flags override the endpoint's; one that names no completion
 * level keeps the endpoint's (Open MPI sets delivery complete there).
 */
static uint64_t shm_sendmsg_flags(struct fid_ep *ep, uint64_t flags)
{
	if (flags & SHM_COMP_LEVELS)
		return flags;
	return flags | (shm_ep_of(ep)->util.tx_op_flags & SHM_COMP_LEVELS);
}

static ssize_t shm_do_send(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t addr,
			   uint64_t tag, uint64_t data, void *context,
			   uint64_t flags, uint8_t op, bool nocomp)
{
	struct shm_send_args a = {
		.iov = iov,
		.count = count,
		.addr = addr,
		.tag = tag,
		.data = data,
		.context = context,
		.op_flags = flags,
		.op = op,
		.nocomp = nocomp,
	};

	return shm_send(shm_ep_of(ep_fid), &a, desc);
}

/* ------------------------------------------------------------------ */
/* Receiving.                                                           */

struct shm_recv_args {
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t addr;
	uint64_t tag;
	uint64_t ignore;
	void *context;
	uint64_t flags;
	bool tagged;
};

static struct shm_rx *shm_rx_get(struct shm_ep *ep,
				 const struct shm_recv_args *a)
{
	struct dlist_entry *item = dlist_pop_front(&ep->rx_free);
	struct shm_rx *rx;

	if (!item)
		return NULL;
	rx = container_of(item, struct shm_rx, entry);
	rx->context = a->context;
	rx->flags = a->flags;
	rx->addr = a->addr;
	rx->tag = a->tag;
	rx->ignore = a->ignore;
	rx->tagged = a->tagged;
	rx->multi = !a->tagged && (a->flags & FI_MULTI_RECV);
	rx->used = 0;
	rx->pending = 0;
	rx->released = false;
	shm_iov_iface(ep, a->desc, a->iov, a->count, &rx->iface, &rx->device);
	rx->iov_count = a->count;
	memcpy(rx->iov, a->iov, a->count * sizeof(*a->iov));
	return rx;
}

static struct shm_unexp *shm_find_claimed(struct shm_ep *ep, void *context)
{
	struct dlist_entry *item;
	struct shm_unexp *u;

	dlist_foreach(&ep->claimed_list, item)
	{
		u = container_of(item, struct shm_unexp, entry);
		if (u->claim_ctx == context)
			return u;
	}
	return NULL;
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD on the tagged unexpected queue. */
static ssize_t shm_peek(struct shm_ep *ep, const struct shm_recv_args *a)
{
	struct shm_unexp *u;
	struct shm_rx *rx;
	struct fi_cq_tagged_entry *none = NULL;

	if (!(a->flags & FI_PEEK)) {
		u = shm_find_claimed(ep, a->context);
		if (!u)
			return -FI_EINVAL;
		if (a->flags & FI_DISCARD) {
			shm_rx_comp(ep, a->context, a->flags | FI_COMPLETION,
				    shm_rx_flags(&u->cmd), &u->cmd, u->src_id,
				    NULL, 0, 0, 0);
			shm_unexp_discard(ep, u, 0);
			return 0;
		}
		rx = shm_rx_get(ep, a);
		if (!rx)
			return -FI_EAGAIN;
		shm_deliver_unexp(ep, rx, u);
		return 0;
	}
	u = shm_match_unexp(ep, &ep->unexp_tlist, a->addr, a->tag, a->ignore,
			    true);
	if (!u) {
		if (ep->util.rx_cq)
			ofi_cq_write_error_code(ep->util.rx_cq, a->context,
						FI_RECV | FI_TAGGED, FI_ENOMSG,
						0, 0);
		(void)none;
		return 0;
	}
	shm_rx_comp(ep, a->context, a->flags | FI_COMPLETION,
		    shm_rx_flags(&u->cmd), &u->cmd, u->src_id, NULL,
		    u->cmd.size, 0, 0);
	if (a->flags & FI_CLAIM) {
		dlist_remove(&u->entry);
		u->claim_ctx = a->context;
		dlist_insert_tail(&u->entry, &ep->claimed_list);
	} else if (a->flags & FI_DISCARD) {
		shm_unexp_discard(ep, u, 0);
	}
	return 0;
}

static ssize_t shm_recv(struct shm_ep *ep, struct shm_recv_args *a)
{
	struct dlist_entry *ulist, *plist;
	struct shm_unexp *u;
	struct shm_rx *rx;
	ssize_t ret = 0;

	if (OFI_UNLIKELY(a->count > SHM_IOV_LIMIT || (a->count && !a->iov)))
		return -FI_EINVAL;
	if (!(ep->util.caps & FI_DIRECTED_RECV))
		a->addr = FI_ADDR_UNSPEC;
	if (a->tagged) {
		ulist = &ep->unexp_tlist;
		plist = &ep->trecv_list;
	} else {
		ulist = &ep->unexp_list;
		plist = &ep->recv_list;
	}
	shm_ep_lock(ep);
	if (a->tagged && (a->flags & (FI_PEEK | FI_CLAIM))) {
		ret = shm_peek(ep, a);
		goto out;
	}
	rx = shm_rx_get(ep, a);
	if (!rx) {
		shm_progress_locked(ep);
		ret = -FI_EAGAIN;
		goto out;
	}
	while ((u = shm_match_unexp(ep, ulist, rx->addr, rx->tag, rx->ignore,
				    rx->tagged))) {
		if (shm_deliver_unexp(ep, rx, u))
			goto out;
	}
	dlist_insert_tail(&rx->entry, plist);
out:
	shm_ep_unlock(ep);
	return ret;
}

static ssize_t shm_do_recv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t addr,
			   uint64_t tag, uint64_t ignore, void *context,
			   uint64_t flags, bool tagged)
{
	struct shm_recv_args a = {
		.iov = iov,
		.desc = desc,
		.count = count,
		.addr = addr,
		.tag = tag,
		.ignore = ignore,
		.context = context,
		.flags = flags,
		.tagged = tagged,
	};

	return shm_recv(shm_ep_of(ep_fid), &a);
}

ssize_t shm_ep_cancel(fid_t fid, void *context)
{
	struct shm_ep *ep = container_of(fid, struct shm_ep, util.ep_fid.fid);
	struct dlist_entry *lists[] = {&ep->recv_list, &ep->trecv_list};
	struct dlist_entry *item;
	struct shm_rx *rx;
	size_t i;

	shm_ep_lock(ep);
	for (i = 0; i < OFI_ARRAY_SIZE(lists); i++) {
		dlist_foreach(lists[i], item)
		{
			rx = container_of(item, struct shm_rx, entry);
			if (rx->context != context || rx->pending)
				continue;
			if (ep->util.rx_cq)
				ofi_cq_write_error_code(
					ep->util.rx_cq, context,
					FI_RECV |
						(rx->tagged ? FI_TAGGED
							    : FI_MSG) |
						(rx->multi ? FI_MULTI_RECV : 0),
					FI_ECANCELED, 0, 0);
			ofi_ep_cntr_inc_err(&ep->util, OFI_CNTR_RX);
			shm_rx_free(ep, rx);
			shm_ep_unlock(ep);
			return 0;
		}
	}
	shm_ep_unlock(ep);
	return -FI_ENOENT;
}

/* ------------------------------------------------------------------ */
/* fi_ops_msg / fi_ops_tagged.                                          */

static ssize_t shm_msg_recv(struct fid_ep *ep, void *buf, size_t len,
			    void *desc, fi_addr_t src_addr, void *context)
{
	struct iovec iov = {buf, len};

	return shm_do_recv(ep, &iov, &desc, 1, src_addr, 0, 0, context,
			   shm_ep_of(ep)->util.rx_op_flags, false);
}

static ssize_t shm_msg_recvv(struct fid_ep *ep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t src_addr,
			     void *context)
{
	return shm_do_recv(ep, iov, desc, count, src_addr, 0, 0, context,
			   shm_ep_of(ep)->util.rx_op_flags, false);
}

static ssize_t shm_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_do_recv(ep, msg->msg_iov, msg->desc, msg->iov_count,
			   msg->addr, 0, 0, msg->context, flags, false);
}

static ssize_t shm_msg_send(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, fi_addr_t dest_addr, void *context)
{
	struct iovec iov = {(void *)buf, len};

	return shm_do_send(ep, &iov, &desc, 1, dest_addr, 0, 0, context,
			   shm_ep_of(ep)->util.tx_op_flags, SHM_OP_MSG, false);
}

static ssize_t shm_msg_sendv(struct fid_ep *ep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t dest_addr,
			     void *context)
{
	return shm_do_send(ep, iov, desc, count, dest_addr, 0, 0, context,
			   shm_ep_of(ep)->util.tx_op_flags, SHM_OP_MSG, false);
}

static ssize_t shm_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_do_send(ep, msg->msg_iov, msg->desc, msg->iov_count,
			   msg->addr, 0, msg->data, msg->context,
			   shm_sendmsg_flags(ep, flags), SHM_OP_MSG, false);
}

static ssize_t shm_msg_inject(struct fid_ep *ep, const void *buf, size_t len,
			      fi_addr_t dest_addr)
{
	struct iovec iov = {(void *)buf, len};

	return shm_do_send(ep, &iov, NULL, 1, dest_addr, 0, 0, NULL, FI_INJECT,
			   SHM_OP_MSG, true);
}

static ssize_t shm_msg_senddata(struct fid_ep *ep, const void *buf, size_t len,
				void *desc, uint64_t data, fi_addr_t dest_addr,
				void *context)
{
	struct iovec iov = {(void *)buf, len};

	return shm_do_send(ep, &iov, &desc, 1, dest_addr, 0, data, context,
			   shm_ep_of(ep)->util.tx_op_flags | FI_REMOTE_CQ_DATA,
			   SHM_OP_MSG, false);
}

static ssize_t shm_msg_injectdata(struct fid_ep *ep, const void *buf,
				  size_t len, uint64_t data,
				  fi_addr_t dest_addr)
{
	struct iovec iov = {(void *)buf, len};

	return shm_do_send(ep, &iov, NULL, 1, dest_addr, 0, data, NULL,
			   FI_INJECT | FI_REMOTE_CQ_DATA, SHM_OP_MSG, true);
}

const struct fi_ops_msg shm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = shm_msg_recv,
	.recvv = shm_msg_recvv,
	.recvmsg = shm_msg_recvmsg,
	.send = shm_msg_send,
	.sendv = shm_msg_sendv,
	.sendmsg = shm_msg_sendmsg,
	.inject = shm_msg_inject,
	.senddata = shm_msg_senddata,
	.injectdata = shm_msg_injectdata,
};

static ssize_t shm_tagged_recv(struct fid_ep *ep, void *buf, size_t len,
			       void *desc, fi_addr_t src_addr, uint64_t tag,
			       uint64_t ignore, void *context)
{
	struct iovec iov = {buf, len};

	return shm_do_recv(ep, &iov, &desc, 1, src_addr, tag, ignore, context,
			   shm_ep_of(ep)->util.rx_op_flags, true);
}

static ssize_t shm_tagged_recvv(struct fid_ep *ep, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src_addr,
				uint64_t tag, uint64_t ignore, void *context)
{
	return shm_do_recv(ep, iov, desc, count, src_addr, tag, ignore, context,
			   shm_ep_of(ep)->util.rx_op_flags, true);
}

static ssize_t shm_tagged_recvmsg(struct fid_ep *ep,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_do_recv(ep, msg->msg_iov, msg->desc, msg->iov_count,
			   msg->addr, msg->tag, msg->ignore, msg->context,
			   flags, true);
}

static ssize_t shm_tagged_send(struct fid_ep *ep, const void *buf, size_t len,
			       void *desc, fi_addr_t dest_addr, uint64_t tag,
			       void *context)
{
	struct iovec iov = {(void *)buf, len};

	return shm_do_send(ep, &iov, &desc, 1, dest_addr, tag, 0, context,
			   shm_ep_of(ep)->util.tx_op_flags, SHM_OP_TAGGED,
			   false);
}

static ssize_t shm_tagged_sendv(struct fid_ep *ep, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest_addr,
				uint64_t tag, void *context)
{
	return shm_do_send(ep, iov, desc, count, dest_addr, tag, 0, context,
			   shm_ep_of(ep)->util.tx_op_flags, SHM_OP_TAGGED,
			   false);
}

static ssize_t shm_tagged_sendmsg(struct fid_ep *ep,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_do_send(ep, msg->msg_iov, msg->desc, msg->iov_count,
			   msg->addr, msg->tag, msg->data, msg->context,
			   shm_sendmsg_flags(ep, flags), SHM_OP_TAGGED, false);
}

static ssize_t shm_tagged_inject(struct fid_ep *ep, const void *buf, size_t len,
				 fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};

	return shm_do_send(ep, &iov, NULL, 1, dest_addr, tag, 0, NULL,
			   FI_INJECT, SHM_OP_TAGGED, true);
}

static ssize_t shm_tagged_senddata(struct fid_ep *ep, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest_addr, uint64_t tag,
				   void *context)
{
	struct iovec iov = {(void *)buf, len};

	return shm_do_send(ep, &iov, &desc, 1, dest_addr, tag, data, context,
			   shm_ep_of(ep)->util.tx_op_flags | FI_REMOTE_CQ_DATA,
			   SHM_OP_TAGGED, false);
}

static ssize_t shm_tagged_injectdata(struct fid_ep *ep, const void *buf,
				     size_t len, uint64_t data,
				     fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};

	return shm_do_send(ep, &iov, NULL, 1, dest_addr, tag, data, NULL,
			   FI_INJECT | FI_REMOTE_CQ_DATA, SHM_OP_TAGGED, true);
}

const struct fi_ops_tagged shm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = shm_tagged_recv,
	.recvv = shm_tagged_recvv,
	.recvmsg = shm_tagged_recvmsg,
	.send = shm_tagged_send,
	.sendv = shm_tagged_sendv,
	.sendmsg = shm_tagged_sendmsg,
	.inject = shm_tagged_inject,
	.senddata = shm_tagged_senddata,
	.injectdata = shm_tagged_injectdata,
};
