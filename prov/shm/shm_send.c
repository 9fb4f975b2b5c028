/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_send.c - the send side of FI_MSG and FI_TAGGED: protocol choice per
 * send (inline in the command, inject buffer, CMA or device IPC read by
 * the receiver, segmented stream through one of our channels), delivery-
 * complete arming, the segmented channels' producer, transmit completions,
 * and the fi_ops_msg / fi_ops_tagged tables (receives go to shm_recv.c).
 *
 * Locking: everything here runs under the endpoint lock (skipped under
 * FI_THREAD_DOMAIN); peers are only touched through the lock-free rings and
 * the per-buffer flags of their regions.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_plain.h"
#include "shm.h"

SHM_HOT_PATH_FRAME

/* ------------------------------------------------------------------ */
/* Transmit entries and the segmented channels.                        */

static uint64_t shm_msg_id(const struct shm_tx *tx)
{
	return (uint64_t)tx->gen << 32 | tx->idx;
}

static void shm_tx_release(struct shm_ep *ep, struct shm_tx *tx)
{
	if (OFI_UNLIKELY(tx->ipc_entry || tx->ipc_slot))
		shm_ipc_tx_release(ep, tx); /* device pool entry, bounce slot */
	dlist_remove(&tx->entry);
	tx->state = SHM_TX_FREE;
	dlist_insert_head(&tx->entry, &ep->tx_free);
}

/* A large transfer whose path adapts (shm_adapt.c) was issued. */
void shm_adapt_start(struct shm_ep *ep, struct shm_tx *tx, bool cma)
{
	struct shm_tx_peer *p = &ep->tx_peers[tx->addr];

	tx->adapt.conn = p->conn;
	shm_adapt_issue(&p->adapt[shm_adapt_class(tx->size)], &tx->adapt, cma,
			tx->size, shm_now_ns());
	tx->adapt.handoffs = ofi_yield_handoffs();
}

/* ... and ended: its peer learns how long it took, if still the same. */
void shm_adapt_end(struct shm_ep *ep, struct shm_tx *tx, int err)
{
	unsigned c = shm_adapt_class(tx->size);
	struct shm_tx_peer *p;

	if (OFI_LIKELY(!tx->adapt.t))
		return;
	p = tx->addr < ep->tx_peer_cnt ? &ep->tx_peers[tx->addr] : NULL;
	if (p && p->conn == tx->adapt.conn && tx->adapt.cont && !err &&
	    tx->adapt.handoffs == ofi_yield_handoffs()) {
		shm_adapt_running(&p->adapt[0]);
		shm_adapt_running(&p->adapt[1]);
	}
	if (p && p->conn == tx->adapt.conn &&
	    shm_adapt_done(&p->adapt[c], &tx->adapt, tx->size, !err,
			   shm_now_ns()))
		FI_INFO(&shm_prov, FI_LOG_EP_DATA,
			"fi_addr %" PRIu64 ": transfers %s %d KiB now go by "
			"%s (%" PRIu64 " MB/s measured)\n",
			tx->addr, c ? "from" : "below", SHM_ADAPT_BIG / 1024,
			p->adapt[c].chosen == SHM_ADAPT_CMA ? "CMA" : "SAR",
			shm_adapt_rate(&p->adapt[c]));
	tx->adapt.t = 0;
}

void shm_tx_done(struct shm_ep *ep, struct shm_tx *tx, int err)
{
	shm_adapt_end(ep, tx, err);
	ofi_ep_tx_complete(&ep->util, tx->context, tx->flags, tx->op_flags,
			   !tx->nocomp, err);
	shm_tx_release(ep, tx);
}

/*
 * Segmented streams, sender side. Sends wait in sar_queue, in order, for
 * the channel of their receiver: the one already streaming to it, else a
 * free one. A receiver never holds more than one channel, so the others
 * stay for other receivers however slow it is. In its channel a message
 * follows the previous one at once, segment after segment, so a window of
 * messages to one receiver streams back to back; a message completes when
 * the receiver emptied its last segment (it empties each message's
 * segments in order), and the channel is let go when it has nothing left.
 */
void shm_sar_init(struct shm_ep *ep)
{
	uint32_t i;

	for (i = 0; i < SHM_SAR_CHANS; i++) {
		dlist_init(&ep->sar_chan[i].queue);
		dlist_init(&ep->sar_chan[i].drain);
	}
}

static uint32_t shm_sar_chan_idx(struct shm_ep *ep, struct shm_sar_chan *c)
{
	return (uint32_t)(c - ep->sar_chan);
}

static void shm_sar_unbind(struct shm_ep *ep, struct shm_sar_chan *c)
{
	atomic_store_explicit(&c->slot->sar_chan, 0, memory_order_release);
	c->slot = NULL;
	ep->sar_bound--;
}

/* Empties @c's segments and forgets its messages: nobody reads them. */
static void shm_sar_chan_clear(struct shm_ep *ep, struct shm_sar_chan *c)
{
	uint32_t i, ci = shm_sar_chan_idx(ep, c);

	for (i = 0; i < SHM_SAR_CHAN_SEGS; i++) {
		atomic_store_explicit(&shm_sar_seg(ep->rg, ci, i)->full, 0,
				      memory_order_release);
		c->last[i] = NULL;
	}
	shm_sar_unbind(ep, c);
}

/* Close: our streams end here, no completions are owed. */
void shm_sar_reset(struct shm_ep *ep)
{
	uint32_t i;

	for (i = 0; i < SHM_SAR_CHANS; i++) {
		if (ep->sar_chan[i].slot)
			shm_sar_chan_clear(ep, &ep->sar_chan[i]);
	}
}

/* The receiver is gone: every message of @c fails. */
static void shm_sar_chan_fail(struct shm_ep *ep, struct shm_sar_chan *c,
			      int err)
{
	while (!dlist_empty(&c->queue))
		shm_tx_done(ep,
			    container_of(c->queue.next, struct shm_tx, entry),
			    err);
	while (!dlist_empty(&c->drain))
		shm_tx_done(ep,
			    container_of(c->drain.next, struct shm_tx, entry),
			    err);
	shm_sar_chan_clear(ep, c);
}

/* The channel streaming to @addr, binding a free one; NULL if none. */
static struct shm_sar_chan *shm_sar_chan_for(struct shm_ep *ep, fi_addr_t addr)
{
	struct shm_tx_peer *p = &ep->tx_peers[addr];
	struct shm_sar_chan *c, *free_c = NULL;
	uint32_t i;

	for (i = 0; i < SHM_SAR_CHANS; i++) {
		c = &ep->sar_chan[i];
		if (!c->slot) {
			if (!free_c && !c->lent)
				free_c = c;
		} else if (c->addr == addr && c->conn == p->conn) {
			return c;
		}
	}
	if (!free_c || !p->rg)
		return NULL;
	free_c->slot = p->slot;
	free_c->addr = addr;
	free_c->conn = p->conn;
	free_c->wseg = 0;
	memset(&free_c->stall, 0, sizeof(free_c->stall));
	ep->sar_bound++;
	/* Before its first segment: the receiver looks here to find it. */
	atomic_store_explicit(&p->slot->sar_chan,
			      shm_sar_chan_idx(ep, free_c) + 1,
			      memory_order_release);
	return free_c;
}

/*
 * An RMA read borrows a free channel: its target writes the segments and
 * we empty them (shm_rma.c). A free channel's segments are all empty.
 * The channel index, or -1 when none is free or SHM_SAR_LEND_MAX are
 * lent already: half the channels stay for sends, and a window of reads
 * keeps to 1 MiB of segments, which stays in the caches (with all 8,
 * 64 KiB reads ran at 12.6 GB/s median, with 4 at 17.9).
 */
int shm_sar_lend(struct shm_ep *ep, struct shm_tx *tx)
{
	uint32_t i;

	if (ep->sar_lent >= SHM_SAR_LEND_MAX)
		return -1;
	for (i = 0; i < SHM_SAR_CHANS; i++) {
		if (!ep->sar_chan[i].slot && !ep->sar_chan[i].lent) {
			ep->sar_chan[i].lent = tx;
			ep->sar_lent++;
			return (int)i;
		}
	}
	return -1;
}

/* Back from a read, emptied whatever its target left there. */
void shm_sar_unlend(struct shm_ep *ep, uint32_t chan)
{
	uint32_t i;

	for (i = 0; i < SHM_SAR_CHAN_SEGS; i++)
		atomic_store_explicit(&shm_sar_seg(ep->rg, chan, i)->full, 0,
				      memory_order_release);
	if (ep->sar_chan[chan].lent)
		ep->sar_lent--;
	ep->sar_chan[chan].lent = NULL;
}

/* Waiting sends join their receiver's channel, in order. */
static void shm_sar_assign(struct shm_ep *ep)
{
	struct dlist_entry *item, *tmp;
	struct shm_sar_chan *c;
	struct shm_tx *tx;

	dlist_foreach_safe(&ep->sar_queue, item, tmp) {
		tx = container_of(item, struct shm_tx, entry);
		if (OFI_UNLIKELY(ep->tx_peers[tx->addr].dead)) {
			shm_tx_done(ep, tx, FI_EIO);
			continue;
		}
		c = shm_sar_chan_for(ep, tx->addr);
		if (!c)
			continue; /* no free channel: its receiver waits */
		dlist_remove(&tx->entry);
		tx->state = SHM_TX_SAR;
		tx->done = 0;
		dlist_insert_tail(&tx->entry, &c->queue);
	}
}

/*
 * Waits in a row that outlast the spin budget before a peer counts as
 * not running (one alone can be a peer busy elsewhere).
 */
#define SHM_STALLS 2

/*
 * The stream moves again (@s ends, if it was on): was @p away too long?
 * Then it is not running, and its next transfers go by CMA, one handoff
 * each (shm_adapt.c).
 */
void shm_stall_end(struct shm_ep *ep, struct shm_stall *s,
		   struct shm_tx_peer *p)
{
	ofi_yield_busy();
	if (OFI_LIKELY(!s->since))
		return;
	if (!ofi_yield_overdue(s->since, shm_now_ns())) {
		s->streak = 0;
	} else if (++s->streak >= SHM_STALLS && ep->adapt) {
		shm_adapt_contended(&p->adapt[0]);
		shm_adapt_contended(&p->adapt[1]);
	}
	s->since = 0;
}

/* The message whose last segment is @i of @c was read: it completes. */
static void shm_sar_drained(struct shm_ep *ep, struct shm_sar_chan *c,
			    uint32_t i)
{
	struct shm_tx *tx = c->last[i];

	c->last[i] = NULL;
	/* An RMA write completes on the target's ack, not here. */
	if (tx->flags & FI_RMA)
		shm_rma_sar_drained(ep, tx);
	else
		shm_tx_done(ep, tx, tx->err);
}

static void shm_sar_chan_progress(struct shm_ep *ep, struct shm_sar_chan *c)
{
	uint32_t i, ci = shm_sar_chan_idx(ep, c);
	struct shm_sar_seg *seg;
	struct shm_tx *tx;
	size_t len;
	ssize_t ret;

	for (i = 0; !dlist_empty(&c->drain) && i < SHM_SAR_CHAN_SEGS; i++) {
		if (c->last[i] &&
		    !atomic_load_explicit(&shm_sar_seg(ep->rg, ci, i)->full,
					  memory_order_acquire))
			shm_sar_drained(ep, c, i);
	}
	while (!dlist_empty(&c->queue)) {
		tx = container_of(c->queue.next, struct shm_tx, entry);
		if (OFI_UNLIKELY(tx->done == tx->size)) {
			shm_tx_done(ep, tx, tx->err); /* nothing to stream */
			continue;
		}
		seg = shm_sar_seg(ep->rg, ci, c->wseg);
		if (atomic_load_explicit(&seg->full, memory_order_acquire)) {
			shm_stall_begin(&c->stall);
			break;
		}
		shm_stall_end(ep, &c->stall, &ep->tx_peers[c->addr]);
		/* Emptied since the loop above: its message is done. */
		if (c->last[c->wseg])
			shm_sar_drained(ep, c, c->wseg);
		len = OFI_MIN(SHM_SAR_SEG_SIZE, tx->size - tx->done);
		ret = shm_copy_from(ep, seg->data, len, tx->iface, tx->device,
				    tx->iov, tx->iov_count, tx->done);
		if (ret < 0 && !tx->err)
			tx->err = (int)-ret;
		seg->err = (uint32_t)tx->err;
		seg->len = len;
		seg->msg_id = shm_msg_id(tx);
		seg->off = tx->done;
		atomic_store_explicit(&seg->full, 1, memory_order_release);
		tx->done += len;
		if (tx->done == tx->size) {
			c->last[c->wseg] = tx;
			dlist_remove(&tx->entry);
			dlist_insert_tail(&tx->entry, &c->drain);
		}
		c->wseg = (c->wseg + 1) % SHM_SAR_CHAN_SEGS;
	}
	if (dlist_empty(&c->queue) && dlist_empty(&c->drain))
		shm_sar_unbind(ep, c);
}

void shm_sar_tx_progress(struct shm_ep *ep)
{
	uint32_t i;

	if (!dlist_empty(&ep->sar_queue))
		shm_sar_assign(ep);
	for (i = 0; ep->sar_bound && i < SHM_SAR_CHANS; i++) {
		if (ep->sar_chan[i].slot)
			shm_sar_chan_progress(ep, &ep->sar_chan[i]);
	}
}

/* Liveness: streams to receivers that died or closed fail. */
void shm_sar_tx_check(struct shm_ep *ep)
{
	struct dlist_entry *item, *tmp;
	struct shm_sar_chan *c;
	struct shm_tx *tx;
	uint32_t i;

	for (i = 0; i < SHM_SAR_CHANS; i++) {
		c = &ep->sar_chan[i];
		if (c->slot && c->addr < ep->tx_peer_cnt &&
		    ep->tx_peers[c->addr].conn == c->conn &&
		    !shm_tx_peer_live(ep, &ep->tx_peers[c->addr]))
			shm_sar_chan_fail(ep, c, FI_EIO);
	}
	dlist_foreach_safe(&ep->sar_queue, item, tmp) {
		tx = container_of(item, struct shm_tx, entry);
		if (!shm_tx_peer_live(ep, &ep->tx_peers[tx->addr]))
			shm_tx_done(ep, tx, FI_EIO);
	}
}

/* Whether a channel streams to @addr (its connection must stay), or to
 * any peer for FI_ADDR_UNSPEC. */
bool shm_sar_tx_busy(struct shm_ep *ep, fi_addr_t addr)
{
	uint32_t i;

	for (i = 0; i < SHM_SAR_CHANS; i++) {
		if (ep->sar_chan[i].slot &&
		    (addr == FI_ADDR_UNSPEC || ep->sar_chan[i].addr == addr))
			return true;
	}
	return false;
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
	ep->tx_full = true; /* its reader naps until it retried */
	shm_progress_locked(ep);
	if (p && !shm_tx_peer_live(ep, p))
		return -FI_EIO;
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
	tx->adapt.t = 0;
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
	if (a->op_flags & FI_COMMIT_COMPLETE)
		cmd->flags |= SHM_CMD_COMMIT;
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
	bool wake;
	ssize_t ret;

	cmd = shm_ring_claim_wake(shm_cmd_ring(p->rg), &pos, &wake);
	if (OFI_UNLIKELY(!cmd))
		return shm_busy(ep, p);
	shm_fill_hdr(cmd, a, SHM_PROTO_INLINE, p->id);
	ret = shm_copy_from(ep, cmd->u.inline_data, a->size, a->iface,
			    a->device, a->iov, a->count, 0);
	if (OFI_UNLIKELY(ret < 0))
		cmd->op = 0; /* the slot is taken: the receiver skips it */
	else if (dc)
		shm_dc_arm(ep, cmd, a);
	shm_tx_commit(ep, p, cmd, pos, wake);
	if (ret < 0)
		return ret;
	if (!dc)
		ofi_ep_tx_complete(&ep->util, a->context, shm_tx_flags(a),
				   a->op_flags, !a->nocomp, 0);
	return 0;
}

static inline __attribute__((always_inline)) ssize_t
shm_send_inject(struct shm_ep *ep, struct shm_tx_peer *p,
		const struct shm_send_args *a, bool dc)
{
	struct shm_inject_buf *b;
	struct shm_cmd *cmd;
	uint64_t pos;
	bool wake;
	ssize_t ret;
	int idx = shm_inject_find(ep);

	if (idx < 0) {
		/* Some may be held by receivers that are gone: look. */
		ep->inject_starved = true;
		return shm_busy(ep, p);
	}
	b = shm_inject_buf(ep->rg, idx);
	ret = shm_copy_from(ep, b->data, a->size, a->iface, a->device, a->iov,
			    a->count, 0);
	if (ret < 0)
		return ret;
	cmd = shm_ring_claim_wake(shm_cmd_ring(p->rg), &pos, &wake);
	if (!cmd)
		return shm_busy(ep, p);
	atomic_store_explicit(&b->busy, 1, memory_order_relaxed);
	ep->inject_owner[idx] = p->conn;
	shm_fill_hdr(cmd, a, SHM_PROTO_INJECT, p->id);
	cmd->u.inject.buf = idx;
	if (dc)
		shm_dc_arm(ep, cmd, a);
	shm_tx_commit(ep, p, cmd, pos, wake);
	if (!dc)
		ofi_ep_tx_complete(&ep->util, a->context, shm_tx_flags(a),
				   a->op_flags, !a->nocomp, 0);
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
	bool commit = a->op_flags & FI_COMMIT_COMPLETE && !a->nocomp;
	bool adapt = !commit && shm_adapt_wanted(ep, p, a->iface, a->count,
						 a->size, false);
	bool cma = p->cma_ok && a->iface == FI_HMEM_SYSTEM &&
		   (a->size > ep->cma_threshold || commit ||
		    (adapt && shm_adapt_now_cma(p, a->size)));
	bool ipc = shm_ipc_wanted(ep, p, a->iface, a->count, a->size) ||
		   shm_ipc_bounce_wanted(ep, p, a->iface, a->device, a->size,
					 a->op_flags, a->nocomp);
	uint64_t pos;
	bool wake;
	size_t i;

	if (dlist_empty(&ep->tx_free))
		return shm_busy(ep, p);
	cmd = shm_ring_claim_wake(shm_cmd_ring(p->rg), &pos, &wake);
	if (!cmd)
		return shm_busy(ep, p);
	tx = shm_tx_take(ep, a);

	shm_fill_hdr(cmd, a, cma ? SHM_PROTO_CMA : SHM_PROTO_SAR, p->id);
	cmd->msg_id = shm_msg_id(tx);
	/* Device IPC or bounce (shm_hmem_ipc.c); it streams otherwise. */
	if (ipc && shm_ipc_send_prep(ep, p, a->addr, cmd, tx))
		ipc = false;
	/* Commit complete needs the receiver's ack: CMA and IPC have one. */
	if (OFI_UNLIKELY(commit)) {
		if (!cma && !ipc) {
			cmd->op = 0; /* the slot is taken: the receiver skips */
			shm_tx_commit(ep, p, cmd, pos, wake);
			tx->state = SHM_TX_FREE;
			dlist_insert_head(&tx->entry, &ep->tx_free);
			return -FI_EOPNOTSUPP;
		}
		cmd->flags |= SHM_CMD_COMMIT;
	}
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
	if (adapt && !ipc)
		shm_adapt_start(ep, tx, cma);
	shm_tx_commit(ep, p, cmd, pos, wake);
	if (!cma && !ipc)
		shm_sar_tx_progress(ep);
	return 0;
}

/*
 * FI_COMMIT_COMPLETE (fi_commit(3)) needs an ack after the receive: small
 * sends ask for one, large ones must go by CMA or device IPC; a send that
 * would stream cannot be made commit complete.
 */
static bool shm_commit_send_ok(struct shm_ep *ep, struct shm_tx_peer *p,
			       const struct shm_send_args *a)
{
	if (a->size <= SHM_INJECT_SIZE)
		return true;
	if (a->iface == FI_HMEM_SYSTEM)
		return p->cma_ok && a->count <= SHM_IOV_LIMIT;
	return shm_ipc_wanted(ep, p, a->iface, a->count, a->size);
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
	ofi_iov_iface(ep->hmem_detect, desc, a->iov, a->count, &a->iface,
		      &a->device);
	shm_ep_lock(ep);
	ret = shm_tx_peer_get(ep, a->addr, &p);
	if (OFI_UNLIKELY(ret)) {
		if (ret == -FI_EAGAIN)
			shm_progress_locked(ep);
	} else if (OFI_UNLIKELY(p->dead)) {
		ret = -FI_EIO;
	} else if (OFI_UNLIKELY(a->iface != FI_HMEM_SYSTEM) &&
		   shm_ipc_bounce_wanted(ep, p, a->iface, a->device, a->size,
					 a->op_flags, a->nocomp)) {
		/* Device bounce buffers: shm_send_large, SHM_PROTO_IPC. */
		ret = shm_send_large(ep, p, a);
	} else if (OFI_UNLIKELY(a->op_flags & FI_COMMIT_COMPLETE) &&
		   !a->nocomp && !shm_commit_send_ok(ep, p, a)) {
		ret = -FI_EOPNOTSUPP;
	} else if (OFI_UNLIKELY(a->op_flags &
				(FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE)) &&
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

/*
 * The send funnel of fi_sendmsg and fi_tsendmsg, and through them of every
 * plain send (ofi_plain.h): the flags of an fi_inject* call are its own
 * (OFI_INJECT_NOCOMP), the others take the endpoint's completion level
 * when they name none.
 */
static ssize_t shm_sendmsg(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t addr,
			   uint64_t tag, uint64_t data, void *context,
			   uint64_t flags, uint8_t op)
{
	bool nocomp = flags & OFI_INJECT_NOCOMP;
	struct shm_send_args a = {
		.iov = iov,
		.count = count,
		.addr = addr,
		.tag = tag,
		.data = data,
		.context = context,
		.op_flags = ofi_send_op_flags(
			shm_ep_of(ep_fid)->util.tx_op_flags, flags),
		.op = op,
		.nocomp = nocomp,
	};

	return shm_send(shm_ep_of(ep_fid), &a, desc);
}

/* ------------------------------------------------------------------ */
/* fi_ops_msg / fi_ops_tagged: funnels, direct entries, plain calls.  */

static ssize_t shm_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_recv_post(shm_ep_of(ep), msg->msg_iov, msg->desc,
			     msg->iov_count, msg->addr, 0, 0, msg->context,
			     flags, false);
}

static ssize_t shm_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_sendmsg(ep, msg->msg_iov, msg->desc, msg->iov_count,
			   msg->addr, 0, msg->data, msg->context, flags,
			   SHM_OP_MSG);
}

static ssize_t shm_tagged_recvmsg(struct fid_ep *ep,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_recv_post(shm_ep_of(ep), msg->msg_iov, msg->desc,
			     msg->iov_count, msg->addr, msg->tag, msg->ignore,
			     msg->context, flags, true);
}

static ssize_t shm_tagged_sendmsg(struct fid_ep *ep,
				  const struct fi_msg_tagged *msg,
				  uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return shm_sendmsg(ep, msg->msg_iov, msg->desc, msg->iov_count,
			   msg->addr, msg->tag, msg->data, msg->context, flags,
			   SHM_OP_TAGGED);
}

/*
 * Direct entries for the calls MPI and SHMEM clients post per message
 * (send, inject, recv and their tagged forms). Through util's plain calls
 * each message would build a struct fi_msg*, take one more indirect call
 * and unpack it again, on both sides; the windowed small-message rate
 * shows that cost on shm, where a message is otherwise a few hundred
 * instructions. Every other plain call goes through util (ofi_plain.h).
 */
static ssize_t shm_send_one(struct fid_ep *ep_fid, const void *buf, size_t len,
			    void **desc, fi_addr_t addr, uint64_t tag,
			    void *context, uint8_t op, bool nocomp)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);
	struct iovec iov = {(void *)buf, len};
	struct shm_send_args a = {
		.iov = &iov,
		.count = 1,
		.addr = addr,
		.tag = tag,
		.context = context,
		.op_flags = nocomp ? FI_INJECT
				   : ofi_ep_tx_dflags(&ep->util, len,
						      SHM_INJECT_SIZE),
		.op = op,
		.nocomp = nocomp,
	};

	return shm_send(ep, &a, desc);
}

static ssize_t shm_recv_one(struct fid_ep *ep_fid, void *buf, size_t len,
			    void *desc, fi_addr_t addr, uint64_t tag,
			    uint64_t ignore, void *context, bool tagged)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);
	struct iovec iov = {buf, len};

	return shm_recv_post(ep, &iov, &desc, 1, addr, tag, ignore, context,
			     ep->util.rx_op_flags, tagged);
}

static OFI_HOT ssize_t shm_msg_send(struct fid_ep *ep, const void *buf,
				    size_t len, void *desc, fi_addr_t dest_addr,
				    void *context)
{
	return shm_send_one(ep, buf, len, &desc, dest_addr, 0, context,
			    SHM_OP_MSG, false);
}

static OFI_HOT ssize_t shm_msg_inject(struct fid_ep *ep, const void *buf,
				      size_t len, fi_addr_t dest_addr)
{
	return shm_send_one(ep, buf, len, NULL, dest_addr, 0, NULL, SHM_OP_MSG,
			    true);
}

static OFI_HOT ssize_t shm_msg_recv(struct fid_ep *ep, void *buf, size_t len,
				    void *desc, fi_addr_t src_addr,
				    void *context)
{
	return shm_recv_one(ep, buf, len, desc, src_addr, 0, 0, context, false);
}

static OFI_HOT ssize_t shm_tagged_send(struct fid_ep *ep, const void *buf,
				       size_t len, void *desc,
				       fi_addr_t dest_addr, uint64_t tag,
				       void *context)
{
	return shm_send_one(ep, buf, len, &desc, dest_addr, tag, context,
			    SHM_OP_TAGGED, false);
}

static OFI_HOT ssize_t shm_tagged_inject(struct fid_ep *ep, const void *buf,
					 size_t len, fi_addr_t dest_addr,
					 uint64_t tag)
{
	return shm_send_one(ep, buf, len, NULL, dest_addr, tag, NULL,
			    SHM_OP_TAGGED, true);
}

static OFI_HOT ssize_t shm_tagged_recv(struct fid_ep *ep, void *buf, size_t len,
				       void *desc, fi_addr_t src_addr,
				       uint64_t tag, uint64_t ignore,
				       void *context)
{
	return shm_recv_one(ep, buf, len, desc, src_addr, tag, ignore, context,
			    true);
}

const struct fi_ops_msg shm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = shm_msg_recv,
	.recvv = ofi_plain_recvv,
	.recvmsg = shm_msg_recvmsg,
	.send = shm_msg_send,
	.sendv = ofi_plain_sendv,
	.sendmsg = shm_msg_sendmsg,
	.inject = shm_msg_inject,
	.senddata = ofi_plain_senddata,
	.injectdata = ofi_plain_injectdata,
};

const struct fi_ops_tagged shm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = shm_tagged_recv,
	.recvv = ofi_plain_trecvv,
	.recvmsg = shm_tagged_recvmsg,
	.send = shm_tagged_send,
	.sendv = ofi_plain_tsendv,
	.sendmsg = shm_tagged_sendmsg,
	.inject = shm_tagged_inject,
	.senddata = ofi_plain_tsenddata,
	.injectdata = ofi_plain_tinjectdata,
};
