/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_recv.c - the receive side of FI_MSG and FI_TAGGED: posting receives
 * (FI_PEEK/FI_CLAIM/FI_DISCARD, fi_cancel) on util's matching queues
 * (ofi_match.h), delivering a matched message by its protocol (copy of an
 * inline or inject payload, CMA or device IPC read, segmented stream),
 * unexpected messages and their bounded drain, and the receive
 * completions.
 *
 * Everything reaching this file from a peer was copied out of shared
 * memory and validated by shm_progress.c; the segmented stream, read here
 * from the sender's channel, is validated segment by segment.
 *
 * Locking: everything here runs under the endpoint lock.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "shm.h"

/* An incoming message, fresh from the ring or from the unexpected queue. */
struct shm_in {
	const struct shm_cmd *cmd; /* validated local copy of the header */
	uint16_t src_id;
	const uint8_t *data; /* payload for inline/inject */
	struct shm_unexp *unexp;
};

/* ------------------------------------------------------------------ */
/* Addresses and completions.                                           */

static fi_addr_t shm_peer_addr(struct shm_ep *ep, uint16_t src_id)
{
	struct shm_rx_peer *p = &ep->rx_peers[src_id];

	if (p->addr != FI_ADDR_NOTAVAIL || !p->rg)
		return p->addr;
	if (ep->owner)
		p->addr = ep->owner->name_addr(ep->owner->ctx, p->name);
	else if (ep->util.av)
		p->addr = ofi_av_reverse_lookup(ep->util.av, p->name);
	return p->addr;
}

static fi_addr_t shm_src_addr(struct shm_ep *ep, uint16_t src_id)
{
	struct shm_rx_peer *p = &ep->rx_peers[src_id];
	fi_addr_t addr;

	if (p->src_addr != FI_ADDR_NOTAVAIL || !p->rg)
		return p->src_addr;
	if (ep->owner) {
		addr = shm_peer_addr(ep, src_id);
		if (addr != FI_ADDR_NOTAVAIL)
			p->src_addr = ep->owner->src_addr(ep->owner->ctx, addr);
	} else {
		p->src_addr = ofi_av_src_addr(ep->util.av, p->name);
	}
	return p->src_addr;
}

static uint64_t shm_rx_flags(const struct shm_cmd *hdr)
{
	return FI_RECV | (hdr->op == SHM_OP_TAGGED ? FI_TAGGED : FI_MSG) |
	       (hdr->flags & SHM_CMD_DATA ? FI_REMOTE_CQ_DATA : 0);
}

/* The slice @sl of @rx landed (or failed with @err). */
static void shm_rx_finish(struct shm_ep *ep, struct ofi_rx_buf *rx,
			  const struct shm_cmd *hdr, uint16_t src_id,
			  const struct ofi_rx_slice *sl, int err)
{
	struct ofi_rx_done d = {
		.flags = shm_rx_flags(hdr),
		.buf = ofi_rx_buf_at(rx, sl->off),
		.data = hdr->flags & SHM_CMD_DATA ? hdr->data : 0,
		.tag = hdr->tag,
		.src_addr = ep->util.caps & FI_SOURCE ? shm_src_addr(ep, src_id)
						      : FI_ADDR_NOTAVAIL,
		.err = err,
	};

	ofi_match_done(ep->mq, &rx->m, sl, &d);
}

/* ------------------------------------------------------------------ */
/* CMA.                                                                 */

/* Reads the sender's buffer straight into ours (one copy). */
static int shm_cma_read(struct shm_ep *ep, struct ofi_rx_buf *rx,
			const struct shm_cmd *hdr, uint16_t src_id, size_t off,
			size_t len)
{
	struct shm_rx_peer *p = &ep->rx_peers[src_id];
	struct iovec local[OFI_RX_IOV_MAX], remote[SHM_IOV_LIMIT];
	size_t i, n;
	ssize_t ret;

	if (!p->cma_ok || rx->iface != FI_HMEM_SYSTEM)
		return SHM_ACK_NEED_SAR;
	if (!len)
		return 0;
	n = ofi_rx_buf_iov(rx, off, len, local, OFI_RX_IOV_MAX);
	/* iov_count was bounded by SHM_IOV_LIMIT at validation. */
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

static struct shm_sar_rx *
shm_sar_rx_start(struct shm_ep *ep, const struct shm_cmd *hdr, uint16_t src_id)
{
	struct shm_sar_rx *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->src_id = src_id;
	s->msg_id = hdr->msg_id;
	s->size = hdr->size;
	s->chan = -1;
	memcpy(&s->cmd, hdr, SHM_CMD_HDR_SIZE);
	dlist_insert_tail(&s->entry, &ep->sar_rx_list);
	return s;
}

static void shm_sar_rx_finish(struct shm_ep *ep, struct shm_sar_rx *s)
{
	dlist_remove(&s->entry);
	if (s->rma) {
		shm_rma_sink_done(ep, s->rma, s->src_id, s->err);
	} else if (s->rx) {
		shm_rx_finish(ep, s->rx, &s->cmd, s->src_id, &s->slice, s->err);
	} else if (s->unexp) {
		s->unexp->sar = NULL;
		s->unexp->err = s->err;
	}
	free(s);
}

bool shm_sar_rx_rma(struct shm_ep *ep, const struct shm_cmd *hdr,
		    struct shm_rma_sink *k)
{
	struct shm_sar_rx *s = shm_sar_rx_start(ep, hdr, hdr->src_id);

	if (!s)
		return false;
	s->rma = k;
	return true;
}

void shm_sar_rx_fail(struct shm_ep *ep, struct shm_sar_rx *s, int err)
{
	if (!s->err)
		s->err = err;
	s->done = s->size;
	shm_sar_rx_finish(ep, s);
}

/*
 * Keeps one segment of an unexpected message. Allocation follows the
 * bytes that really arrived (at most a segment), never the size the
 * sender announced; past SHM_UNEXP_SAR_MAX buffered bytes we stop
 * draining and the rest waits in the sender's channel for a receive.
 */
static bool shm_unexp_keep(struct shm_ep *ep, struct shm_unexp *u,
			   const uint8_t *data, size_t len)
{
	struct shm_unexp_chunk *c;

	if (ep->unexp_sar_bytes + len > SHM_UNEXP_SAR_MAX)
		return false;
	c = malloc(sizeof(*c) + len);
	if (!c)
		return false;
	c->next = NULL;
	c->len = len;
	memcpy(c->data, data, len);
	*u->chunk_tail = c;
	u->chunk_tail = &c->next;
	ep->unexp_sar_bytes += len;
	return true;
}

/* Frees the drained chunks of @u; copies them into @rx first if given. */
static int shm_unexp_drop_chunks(struct shm_ep *ep, struct shm_unexp *u,
				 struct ofi_rx_buf *rx,
				 const struct ofi_rx_slice *sl)
{
	struct shm_unexp_chunk *c, *next;
	size_t pos = 0, n;
	ssize_t ret;
	int err = 0;

	for (c = u->chunks; c; c = next) {
		next = c->next;
		if (rx && pos < sl->len) {
			n = OFI_MIN(c->len, sl->len - pos);
			ret = shm_copy_to(ep, rx->iface, rx->device, rx->iov,
					  rx->iov_count, sl->off + pos, c->data,
					  n);
			if (ret < 0 && !err)
				err = (int)-ret;
		}
		pos += c->len;
		ep->unexp_sar_bytes -= c->len;
		free(c);
	}
	u->chunks = NULL;
	u->chunk_tail = &u->chunks;
	return err;
}

/*
 * Where messages start in the channel sender @id streams to us: the full
 * segments at offset 0, at most one scan per sender and progress pass
 * (stamped), however many of its messages wait for their stream.
 */
static void shm_sar_scan(struct shm_ep *ep, struct shm_rx_peer *p, uint16_t id)
{
	uint32_t stamp = ep->progress_ticks + 1, c, i;
	struct shm_sar_seg *seg;

	if (p->sar_stamp == stamp)
		return;
	p->sar_stamp = stamp;
	p->sar_nstarts = 0;
	/* Written by the sender (or anyone): bounded, read once. */
	c = atomic_load_explicit(&shm_peer_slot(ep->rg, id)->sar_chan,
				 memory_order_acquire);
	if (!c || c > SHM_SAR_CHANS)
		return;
	p->sar_chan = c - 1;
	for (i = 0; i < SHM_SAR_CHAN_SEGS; i++) {
		seg = shm_sar_seg(p->rg, p->sar_chan, i);
		if (!atomic_load_explicit(&seg->full, memory_order_acquire) ||
		    __atomic_load_n(&seg->off, __ATOMIC_RELAXED))
			continue;
		p->sar_starts[p->sar_nstarts].msg_id =
			__atomic_load_n(&seg->msg_id, __ATOMIC_RELAXED);
		p->sar_starts[p->sar_nstarts++].seg = i;
	}
}

/* Whether the stream of @s has started: then its first segment is known. */
static bool shm_sar_rx_find(struct shm_ep *ep, struct shm_sar_rx *s)
{
	struct shm_rx_peer *p = &ep->rx_peers[s->src_id];
	uint32_t i;

	shm_sar_scan(ep, p, s->src_id);
	for (i = 0; i < p->sar_nstarts; i++) {
		if (p->sar_starts[i].msg_id == s->msg_id) {
			s->chan = (int32_t)p->sar_chan;
			s->seg = p->sar_starts[i].seg;
			return true;
		}
	}
	return false;
}

void shm_sar_rx_progress(struct shm_ep *ep, struct shm_sar_rx *s)
{
	struct shm_region *rg =
		s->src_id < SHM_MAX_PEERS ? ep->rx_peers[s->src_id].rg : NULL;
	struct shm_sar_seg *seg;
	uint32_t len, err;
	size_t n;
	ssize_t ret;

	if (rg && s->done < s->size && s->chan < 0 && !shm_sar_rx_find(ep, s))
		return;
	while (rg && s->done < s->size) {
		seg = shm_sar_seg(rg, (uint32_t)s->chan, s->seg);
		if (!atomic_load_explicit(&seg->full, memory_order_acquire))
			break;
		/*
		 * The sender may rewrite these: read each once. Another
		 * message's segment still to be read: ours follows it.
		 */
		if (__atomic_load_n(&seg->msg_id, __ATOMIC_RELAXED) !=
		    s->msg_id)
			break;
		len = __atomic_load_n(&seg->len, __ATOMIC_RELAXED);
		err = __atomic_load_n(&seg->err, __ATOMIC_RELAXED);
		if (OFI_UNLIKELY(__atomic_load_n(&seg->off, __ATOMIC_RELAXED) !=
					 s->done ||
				 !len || len > SHM_SAR_SEG_SIZE ||
				 len > s->size - s->done)) {
			FI_WARN(&shm_prov, FI_LOG_EP_DATA,
				"bad segment (length %u) from peer %u\n", len,
				s->src_id);
			shm_sar_rx_fail(ep, s, FI_EIO);
			return;
		}
		if (OFI_UNLIKELY(err) && !s->err)
			s->err = shm_errno_valid(err) ? (int)err : FI_EIO;
		if (s->rma) {
			if (!s->err)
				shm_rma_sink_write(ep, s->rma, s->done,
						   seg->data, len);
		} else if (s->rx) {
			if (s->done < s->slice.len) {
				n = OFI_MIN(len, s->slice.len - s->done);
				ret = shm_copy_to(
					ep, s->rx->iface, s->rx->device,
					s->rx->iov, s->rx->iov_count,
					s->slice.off + s->done, seg->data, n);
				if (ret < 0 && !s->err)
					s->err = (int)-ret;
			}
		} else if (s->unexp &&
			   !shm_unexp_keep(ep, s->unexp, seg->data, len)) {
			break; /* over budget: wait for a receive */
		}
		atomic_store_explicit(&seg->full, 0, memory_order_release);
		s->done += len;
		ofi_yield_busy(); /* moving a stream is no idle poll */
		s->seg = (s->seg + 1) % SHM_SAR_CHAN_SEGS;
	}
	if (s->done == s->size)
		shm_sar_rx_finish(ep, s);
}

/* ------------------------------------------------------------------ */
/* Delivery into a receive.                                             */

/* A segmented message that met its receive. */
static int shm_deliver_sar(struct shm_ep *ep, struct ofi_rx_buf *rx,
			   const struct ofi_rx_slice *sl,
			   const struct shm_in *in, bool *async)
{
	struct shm_unexp *u = in->unexp;
	struct shm_sar_rx *s;
	int err;

	*async = true;
	if (!u) {
		s = shm_sar_rx_start(ep, in->cmd, in->src_id);
		if (!s)
			goto nomem;
		s->rx = rx;
		s->slice = *sl;
		return 0;
	}
	/* What was drained goes first; a live stream continues into rx. */
	err = shm_unexp_drop_chunks(ep, u, rx, sl);
	s = u->sar;
	if (s) {
		s->unexp = NULL;
		s->rx = rx;
		s->slice = *sl;
		if (err && !s->err)
			s->err = err;
		return 0;
	}
	*async = false;
	return u->err ? u->err : err;
nomem:
	*async = false;
	return FI_ENOMEM;
}

/* CMA or device IPC: read the sender's buffer, or ask it to stream. */
static int shm_deliver_read(struct shm_ep *ep, struct ofi_rx_buf *rx,
			    const struct ofi_rx_slice *sl,
			    const struct shm_in *in, bool *async)
{
	const struct shm_cmd *hdr = in->cmd;
	struct shm_sar_rx *s;
	int ret;

	*async = false;
	/* A closed sender never completed it: its buffer may be gone. */
	if (OFI_UNLIKELY(shm_rx_peer_closed(ep, in->src_id)))
		return FI_EIO;
	ret = hdr->proto == SHM_PROTO_IPC
		      ? shm_ipc_read(ep, rx, hdr, in->src_id, sl->off, sl->len)
		      : shm_cma_read(ep, rx, hdr, in->src_id, sl->off, sl->len);
	if (OFI_UNLIKELY(hdr->flags & SHM_CMD_COMMIT)) {
		/* A stream has no ack to wait for persistence: refuse it. */
		if (ret == SHM_ACK_NEED_SAR)
			ret = -FI_EOPNOTSUPP;
		else if (!ret)
			ret = ofi_rx_buf_persist(rx, sl);
	}
	if (ret == SHM_ACK_NEED_SAR) {
		s = shm_sar_rx_start(ep, hdr, in->src_id);
		if (!s) {
			shm_send_ack(ep, in->src_id, hdr->msg_id, -FI_ENOMEM);
			return FI_ENOMEM;
		}
		s->rx = rx;
		s->slice = *sl;
		*async = true;
		shm_send_ack(ep, in->src_id, hdr->msg_id, SHM_ACK_NEED_SAR);
		return 0;
	}
	/* The sender's transfer fails with our read. */
	shm_send_ack(ep, in->src_id, hdr->msg_id, ret);
	return -ret;
}

/* Moves @in into slice @sl of @rx and completes it unless it streams. */
static void shm_deliver(struct shm_ep *ep, struct ofi_rx_buf *rx,
			const struct ofi_rx_slice *sl, const struct shm_in *in)
{
	const struct shm_cmd *hdr = in->cmd;
	bool async = false;
	ssize_t ret;
	int err;

	switch (hdr->proto) {
	case SHM_PROTO_CMA:
	case SHM_PROTO_IPC:
		err = shm_deliver_read(ep, rx, sl, in, &async);
		break;
	case SHM_PROTO_SAR:
		err = shm_deliver_sar(ep, rx, sl, in, &async);
		break;
	default:
		ret = sl->len ? shm_copy_to(ep, rx->iface, rx->device, rx->iov,
					    rx->iov_count, sl->off, in->data,
					    sl->len)
			      : 0;
		err = ret < 0 ? (int)-ret : 0;
		if (OFI_UNLIKELY(hdr->flags & SHM_CMD_COMMIT))
			shm_send_ack(ep, in->src_id, hdr->msg_id,
				     err ? -err : ofi_rx_buf_persist(rx, sl));
		break;
	}
	if (!async)
		shm_rx_finish(ep, rx, hdr, in->src_id, sl, err);
}

/* ------------------------------------------------------------------ */
/* Unexpected messages.                                                 */

/* The bytes of @hdr an unexpected entry keeps (validated: within a slot). */
static size_t shm_unexp_cmd_len(const struct shm_cmd *hdr)
{
	switch (hdr->proto) {
	case SHM_PROTO_CMA:
		return offsetof(struct shm_cmd, u.cma) + sizeof(hdr->u.cma);
	case SHM_PROTO_IPC:
		return offsetof(struct shm_cmd, u.ipc) + sizeof(hdr->u.ipc);
	case SHM_PROTO_INLINE:
		return SHM_CMD_HDR_SIZE + hdr->size; /* <= SHM_INLINE_MAX */
	default: /* inject, SAR: the header and the inject index */
		return SHM_CMD_HDR_SIZE + sizeof(uint64_t);
	}
}

/*
 * An entry for a command of @len bytes. Only the fields before cmd are
 * cleared: cmd is copied in.
 */
static struct shm_unexp *shm_unexp_alloc(struct shm_ep *ep, size_t len)
{
	enum shm_unexp_size size =
		len <= SHM_UNEXP_SMALL_CMD ? SHM_UNEXP_SMALL : SHM_UNEXP_FULL;
	struct dlist_entry *item = dlist_pop_front(&ep->unexp_cache[size]);
	struct shm_unexp *u;

	if (item) {
		ep->unexp_cached[size]--;
		u = container_of(item, struct shm_unexp, m.entry);
	} else {
		u = malloc(offsetof(struct shm_unexp, cmd) +
			   (size == SHM_UNEXP_SMALL ? SHM_UNEXP_SMALL_CMD
						    : sizeof(struct shm_cmd)));
		if (!u)
			return NULL;
	}
	memset(u, 0, offsetof(struct shm_unexp, cmd));
	u->size = size;
	return u;
}

static void shm_unexp_free(struct shm_ep *ep, struct shm_unexp *u)
{
	shm_unexp_drop_chunks(ep, u, NULL, NULL);
	free(u->data);
	if (ep->unexp_cached[u->size] >= SHM_UNEXP_CACHE) {
		free(u);
		return;
	}
	ep->unexp_cached[u->size]++;
	dlist_insert_head(&u->m.entry, &ep->unexp_cache[u->size]);
}

void shm_unexp_cache_free(struct shm_ep *ep)
{
	struct dlist_entry *item;
	int i;

	for (i = 0; i < SHM_UNEXP_SIZES; i++) {
		while ((item = dlist_pop_front(&ep->unexp_cache[i])))
			free(container_of(item, struct shm_unexp, m.entry));
		ep->unexp_cached[i] = 0;
	}
}

static void shm_unexp_discard(struct shm_ep *ep, struct shm_unexp *u,
			      int status)
{
	if (u->cmd.proto == SHM_PROTO_CMA || u->cmd.proto == SHM_PROTO_IPC ||
	    (u->cmd.flags & SHM_CMD_COMMIT))
		shm_send_ack(ep, u->src_id, u->cmd.msg_id, status);
	/* A live stream keeps draining, into nothing. */
	if (u->sar)
		u->sar->unexp = NULL;
	shm_unexp_free(ep, u);
}

/* Returns false when the message had to be dropped. */
static bool shm_queue_unexp(struct shm_ep *ep, const struct shm_in *in)
{
	const struct shm_cmd *hdr = in->cmd;
	bool tagged = hdr->op == SHM_OP_TAGGED;
	size_t n = shm_unexp_cmd_len(hdr);
	struct shm_unexp *u;

	u = shm_unexp_alloc(ep, n);
	if (!u)
		goto drop;
	u->ep = ep;
	u->src_id = in->src_id;
	u->chunk_tail = &u->chunks;
	u->m.addr = ep->mq->directed ? shm_peer_addr(ep, in->src_id)
				     : FI_ADDR_NOTAVAIL;
	u->m.tag = hdr->tag;
	u->m.data = hdr->flags & SHM_CMD_DATA ? hdr->data : 0;
	u->m.size = hdr->size;
	u->m.cq_flags = (tagged ? FI_TAGGED : FI_MSG) |
			(hdr->flags & SHM_CMD_DATA ? FI_REMOTE_CQ_DATA : 0);
	u->m.tagged = tagged;
	memcpy(&u->cmd, hdr, n);
	if (hdr->proto == SHM_PROTO_INJECT) {
		/* hdr->size <= SHM_INJECT_SIZE, checked at validation */
		u->data = malloc(hdr->size ? hdr->size : 1);
		if (!u->data)
			goto drop_u;
		memcpy(u->data, in->data, hdr->size);
	} else if (hdr->proto == SHM_PROTO_SAR) {
		u->sar = shm_sar_rx_start(ep, hdr, in->src_id);
		if (!u->sar)
			goto drop_u;
		u->sar->unexp = u;
	}
	ofi_match_unexp_add_ops(ep->mq, &u->m, &shm_match_ops);
	return true;
drop_u:
	shm_unexp_free(ep, u);
drop:
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"out of memory: unexpected message dropped\n");
	if (hdr->proto == SHM_PROTO_CMA || hdr->proto == SHM_PROTO_IPC)
		shm_send_ack(ep, in->src_id, hdr->msg_id, -FI_ENOMEM);
	return false;
}

static void shm_match_deliver(struct ofi_match_queue *q, struct ofi_rx_entry *m,
			      struct ofi_unexp_msg *um,
			      const struct ofi_rx_slice *sl)
{
	struct shm_unexp *u = container_of(um, struct shm_unexp, m);
	struct shm_ep *ep = u->ep;
	struct shm_in in = {
		.cmd = &u->cmd,
		.src_id = u->src_id,
		.data = u->cmd.proto == SHM_PROTO_INLINE ? u->cmd.u.inline_data
							 : u->data,
		.unexp = u,
	};

	shm_deliver(ep, ofi_rx_buf_of(m), sl, &in);
	shm_unexp_free(ep, u);
}

static void shm_match_discard(struct ofi_match_queue *q,
			      struct ofi_unexp_msg *um, int status)
{
	struct shm_unexp *u = container_of(um, struct shm_unexp, m);

	shm_unexp_discard(u->ep, u, status);
}

static fi_addr_t shm_match_resolve(struct ofi_match_queue *q,
				   struct ofi_unexp_msg *um)
{
	struct shm_unexp *u = container_of(um, struct shm_unexp, m);

	return shm_peer_addr(u->ep, u->src_id);
}

static fi_addr_t shm_match_src(struct ofi_match_queue *q,
			       struct ofi_unexp_msg *um)
{
	struct shm_unexp *u = container_of(um, struct shm_unexp, m);

	return shm_src_addr(u->ep, u->src_id);
}

const struct ofi_match_ops shm_match_ops = {
	.deliver = shm_match_deliver,
	.discard = shm_match_discard,
	.resolve_addr = shm_match_resolve,
	.src_addr = shm_match_src,
};

struct shm_from_arg {
	struct shm_ep *ep;
	uint16_t id;
};

static bool shm_unexp_is_from(struct ofi_unexp_msg *um, void *arg)
{
	struct shm_from_arg *a = arg;
	struct shm_unexp *u = shm_unexp_of(a->ep, um);

	return u && u->src_id == a->id;
}

bool shm_unexp_from(struct shm_ep *ep, uint16_t id)
{
	struct shm_from_arg a = {.ep = ep, .id = id};

	return ofi_match_unexp_any(ep->mq, shm_unexp_is_from, &a);
}

/* ------------------------------------------------------------------ */
/* An incoming message (from shm_progress.c).                           */

bool shm_recv_cmd(struct shm_ep *ep, const struct shm_cmd *hdr,
		  const uint8_t *data)
{
	struct shm_in in = {
		.cmd = hdr,
		.src_id = hdr->src_id,
		.data = data,
	};
	bool tagged = hdr->op == SHM_OP_TAGGED;
	struct ofi_rx_entry *m;
	struct ofi_rx_slice sl;

	m = ofi_match_posted(ep->mq, tagged,
			     ep->mq->directed ? shm_peer_addr(ep, hdr->src_id)
					      : FI_ADDR_NOTAVAIL,
			     hdr->tag);
	if (!m)
		return shm_queue_unexp(ep, &in);
	ofi_match_take(ep->mq, m, hdr->size, &sl);
	shm_deliver(ep, ofi_rx_buf_of(m), &sl, &in);
	return true;
}

/* ------------------------------------------------------------------ */
/* Posting receives.                                                    */

ssize_t shm_recv_post(struct shm_ep *ep, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t addr, uint64_t tag,
		      uint64_t ignore, void *context, uint64_t flags,
		      bool tagged)
{
	struct ofi_rx_mem mem;
	ssize_t ret;

	if (OFI_UNLIKELY(count > SHM_IOV_LIMIT))
		return -FI_EINVAL;
	ofi_iov_iface(ep->hmem_detect, desc, iov, count, &mem.iface,
		      &mem.device);
	shm_ep_lock(ep);
	ret = ofi_match_recv(ep->mq, iov, desc, count, &mem, addr, tag, ignore,
			     context, flags, tagged);
	if (ret == -FI_EAGAIN)
		shm_progress_locked(ep);
	shm_ep_unlock(ep);
	return ret;
}

ssize_t shm_ep_cancel(fid_t fid, void *context)
{
	struct shm_ep *ep = container_of(fid, struct shm_ep, util.ep_fid.fid);
	ssize_t ret;

	shm_ep_lock(ep);
	ret = ofi_match_cancel(ep->mq, context);
	shm_ep_unlock(ep);
	return ret;
}
