/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_progress.c - the progress engine: drains our response ring (acks of
 * our transfers) and command ring (messages, RMA and atomics sent to us),
 * drives the segmented streams, sends acks, notices dead or closed peers,
 * skips ring slots a dead sender claimed and never published, and flushes
 * an endpoint on close.
 *
 * Trust boundary: any process that maps our region can write anything
 * into its rings at any time. Each ring entry is copied out of its slot
 * once, into a local struct, and only that copy is validated and used:
 * op, protocol, sizes against the protocol's limits, buffer indices,
 * iov counts, flags, the sender's slot; responses name a live transfer
 * and carry 0 or a negative fi_errno. What fails is dropped with a
 * warning (and, where the sender waits for it, a -FI_EINVAL ack).
 *
 * Locking: everything here runs under the endpoint lock.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shm.h"

SHM_HOT_PATH_FRAME

#define SHM_PROGRESS_BATCH 64
/*
 * Peers are checked every SHM_LIVENESS_TICKS progress passes, and at least
 * every SHM_LIVENESS_NS while progress runs: on a loaded machine a pass
 * can take milliseconds (the caller yields its CPU between polls), and a
 * count of passes alone let a dead peer block a ring for seconds. The
 * clock is read every SHM_CLOCK_TICKS passes only.
 */
#define SHM_LIVENESS_TICKS 1024
#define SHM_CLOCK_TICKS	   16
#define SHM_LIVENESS_NS	   (50 * 1000000ULL)

/* ------------------------------------------------------------------ */
/* Acks.                                                                */

/*
 * An ack that found its sender's response ring full. The ring has a slot
 * for every transfer an honest sender can have in flight, so this only
 * happens with a sender that stopped reading or writes its own ring: keep
 * the ack (bounded) and retry from progress instead of spinning on it.
 */
struct shm_ack_pending {
	struct dlist_entry entry;
	uint16_t src_id;
	uint32_t gen; /* of the sender's slot when the ack was owed */
	int32_t status;
	uint64_t msg_id;
};

#define SHM_ACK_BACKLOG_MAX 4096

static bool shm_ack_post(struct shm_ep *ep, struct shm_rx_peer *p,
			 uint64_t msg_id, int status)
{
	struct shm_resp *resp;
	uint64_t pos;
	bool wake;

	resp = shm_ring_claim_wake(shm_resp_ring(p->rg), &pos, &wake);
	if (!resp)
		return false;
	resp->op = SHM_RESP_ACK;
	resp->status = status;
	resp->msg_id = msg_id;
	shm_ring_commit(resp, pos);
	if (OFI_UNLIKELY(wake))
		shm_wake_send(ep, p->rg);
	return true;
}

void shm_send_ack(struct shm_ep *ep, uint16_t src_id, uint64_t msg_id,
		  int status)
{
	struct shm_rx_peer *p = &ep->rx_peers[src_id];
	struct shm_ack_pending *a;

	/* A closed sender waits for nothing. */
	if (!p->rg || shm_rx_peer_closed(ep, src_id))
		return;
	if (OFI_LIKELY(dlist_empty(&ep->ack_backlog) &&
		       shm_ack_post(ep, p, msg_id, status)))
		return;
	if (ep->ack_backlog_cnt >= SHM_ACK_BACKLOG_MAX ||
	    !(a = malloc(sizeof(*a)))) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"response ring of peer %u full, ack dropped\n", src_id);
		return;
	}
	a->src_id = src_id;
	a->gen = p->gen;
	a->status = status;
	a->msg_id = msg_id;
	dlist_insert_tail(&a->entry, &ep->ack_backlog);
	ep->ack_backlog_cnt++;
}

/* Retries the acks that found a full ring, in order; drops stale ones. */
static void shm_ack_backlog_progress(struct shm_ep *ep)
{
	struct dlist_entry *item, *tmp;
	struct shm_ack_pending *a;
	struct shm_rx_peer *p;

	dlist_foreach_safe(&ep->ack_backlog, item, tmp) {
		a = container_of(item, struct shm_ack_pending, entry);
		p = &ep->rx_peers[a->src_id];
		if (p->rg && p->gen == a->gen &&
		    !shm_rx_peer_closed(ep, a->src_id) &&
		    shm_pid_alive(p->pid) &&
		    !shm_ack_post(ep, p, a->msg_id, a->status))
			return;
		dlist_remove(&a->entry);
		ep->ack_backlog_cnt--;
		free(a);
	}
}

void shm_ack_backlog_free(struct shm_ep *ep)
{
	struct dlist_entry *item;

	while ((item = dlist_pop_front(&ep->ack_backlog)))
		free(container_of(item, struct shm_ack_pending, entry));
	ep->ack_backlog_cnt = 0;
}

/* ------------------------------------------------------------------ */
/* Commands: copy once, validate the copy.                              */

static bool shm_op_is_msg(uint8_t op)
{
	return op == SHM_OP_MSG || op == SHM_OP_TAGGED;
}

static bool shm_op_is_rma(uint8_t op)
{
	return op >= SHM_OP_WRITE && op <= SHM_OP_COMMIT;
}

/*
 * Copies what the command's (copied) op and protocol say it carries;
 * false when the header alone is already invalid.
 */
static bool shm_cmd_copy(struct shm_cmd *cmd, const struct shm_cmd *slot)
{
	memcpy(cmd, slot, SHM_CMD_HDR_SIZE);
	if (shm_op_is_rma(cmd->op)) {
		/* shm_rma.c validates the body of its own copy. */
		memcpy(&cmd->u, &slot->u, sizeof(cmd->u));
		return true;
	}
	if (!shm_op_is_msg(cmd->op))
		return false;
	switch (cmd->proto) {
	case SHM_PROTO_INLINE:
		if (cmd->size > SHM_INLINE_MAX)
			return false;
		memcpy(cmd->u.inline_data, slot->u.inline_data, cmd->size);
		return true;
	case SHM_PROTO_INJECT:
		memcpy(&cmd->u.inject, &slot->u.inject, sizeof(cmd->u.inject));
		return true;
	case SHM_PROTO_CMA:
		memcpy(&cmd->u.cma, &slot->u.cma, sizeof(cmd->u.cma));
		return true;
	case SHM_PROTO_IPC:
		memcpy(&cmd->u.ipc, &slot->u.ipc, sizeof(cmd->u.ipc));
		return true;
	case SHM_PROTO_SAR:
		return true;
	default:
		return false;
	}
}

/* Bounds every field of a copied message command (header is copied). */
static bool shm_msg_cmd_valid(const struct shm_cmd *hdr)
{
	uint64_t sum = 0;
	uint32_t i;

	if (hdr->flags &
	    ~(uint32_t)(SHM_CMD_DATA | SHM_CMD_ACK | SHM_CMD_COMMIT))
		return false;
	if ((hdr->flags & SHM_CMD_ACK) && hdr->proto != SHM_PROTO_INLINE &&
	    hdr->proto != SHM_PROTO_INJECT)
		return false;
	if ((hdr->flags & SHM_CMD_COMMIT) && !(hdr->flags & SHM_CMD_ACK) &&
	    hdr->proto != SHM_PROTO_CMA && hdr->proto != SHM_PROTO_IPC)
		return false;
	switch (hdr->proto) {
	case SHM_PROTO_INLINE:
		return hdr->size <= SHM_INLINE_MAX;
	case SHM_PROTO_INJECT:
		return hdr->size <= SHM_INJECT_SIZE &&
		       hdr->u.inject.buf < SHM_INJECT_BUFS;
	case SHM_PROTO_CMA:
		if (!hdr->u.cma.iov_count ||
		    hdr->u.cma.iov_count > SHM_IOV_LIMIT)
			return false;
		for (i = 0; i < hdr->u.cma.iov_count; i++) {
			if (hdr->u.cma.iov[i].len > hdr->size - sum)
				return false;
			sum += hdr->u.cma.iov[i].len;
		}
		return sum == hdr->size;
	case SHM_PROTO_SAR:
		/* Never allocated from: see shm_unexp_keep(). */
		return true;
	case SHM_PROTO_IPC:
		return shm_ipc_cmd_valid(hdr);
	default:
		return false;
	}
}

/* A message command we cannot use: the sender learns if it waits. */
static void shm_msg_cmd_drop(struct shm_ep *ep, const struct shm_cmd *hdr,
			     struct shm_rx_peer *p)
{
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"invalid command (op %u proto %u size %llu) from peer %u "
		"dropped\n",
		hdr->op, hdr->proto, (unsigned long long)hdr->size,
		hdr->src_id);
	if (!p)
		return;
	if (hdr->proto == SHM_PROTO_INJECT &&
	    hdr->u.inject.buf < SHM_INJECT_BUFS)
		atomic_store_explicit(
			&shm_inject_buf(p->rg, hdr->u.inject.buf)->busy, 0,
			memory_order_release);
	if (hdr->proto == SHM_PROTO_CMA || hdr->proto == SHM_PROTO_IPC ||
	    (hdr->flags & SHM_CMD_ACK))
		shm_send_ack(ep, hdr->src_id, hdr->msg_id, -FI_EINVAL);
}

static void shm_handle_msg(struct shm_ep *ep, const struct shm_cmd *hdr)
{
	struct shm_inject_buf *ib = NULL;
	const uint8_t *data = NULL;
	struct shm_rx_peer *p;
	bool ok;

	p = shm_rx_peer_get(ep, hdr->src_id);
	if (OFI_UNLIKELY(!p)) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"command from unknown peer %u dropped\n", hdr->src_id);
		return;
	}
	if (OFI_UNLIKELY(!shm_msg_cmd_valid(hdr))) {
		shm_msg_cmd_drop(ep, hdr, p);
		return;
	}
	if (hdr->proto == SHM_PROTO_INLINE) {
		data = hdr->u.inline_data;
	} else if (hdr->proto == SHM_PROTO_INJECT) {
		/* Payload bytes only: read once into the receive buffer. */
		ib = shm_inject_buf(p->rg, hdr->u.inject.buf);
		data = ib->data;
	}
	ok = shm_recv_cmd(ep, hdr, data);
	if (ib)
		atomic_store_explicit(&ib->busy, 0, memory_order_release);
	/*
	 * Delivery complete (fi_cq(3)): the message sits in the receive
	 * buffer or, unexpected, in our copy that a receive will be served
	 * from. Either way it is processed: the sender may complete. Commit
	 * complete waits for the receive (shm_recv.c acks).
	 */
	if (OFI_UNLIKELY(hdr->flags & SHM_CMD_ACK) &&
	    (!(hdr->flags & SHM_CMD_COMMIT) || !ok))
		shm_send_ack(ep, hdr->src_id, hdr->msg_id, ok ? 0 : -FI_ENOMEM);
}

static void shm_handle_cmd(struct shm_ep *ep, const struct shm_cmd *slot)
{
	struct shm_cmd cmd; /* a peer could rewrite the slot under us */

	if (OFI_UNLIKELY(!shm_cmd_copy(&cmd, slot))) {
		/* op 0: a sender gave up a claimed slot (failed copy). */
		if (cmd.op)
			FI_WARN(&shm_prov, FI_LOG_EP_DATA,
				"invalid command (op %u proto %u) dropped\n",
				cmd.op, cmd.proto);
		return;
	}
	if (shm_op_is_rma(cmd.op))
		shm_rma_handle_cmd(ep, &cmd);
	else
		shm_handle_msg(ep, &cmd);
}

/* ------------------------------------------------------------------ */
/* Responses.                                                           */

/* 0, SHM_ACK_NEED_SAR or a negative fi_errno (INT_MIN is none). */
static bool shm_resp_status_valid(int32_t status)
{
	return status == 0 || status == SHM_ACK_NEED_SAR ||
	       (status < 0 && shm_errno_valid(-(int64_t)status));
}

static void shm_handle_resp(struct shm_ep *ep, const struct shm_resp *slot)
{
	struct shm_resp r;
	uint32_t idx;
	struct shm_tx *tx;

	/* Copy once: the peer may rewrite the slot. */
	memcpy(&r, slot, sizeof(r));
	idx = (uint32_t)r.msg_id;
	if (r.op != SHM_RESP_ACK || idx >= SHM_TX_SIZE) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"invalid response (op %u) dropped\n", r.op);
		return;
	}
	tx = &ep->tx[idx];
	if (tx->gen == (uint32_t)(r.msg_id >> 32) && (tx->flags & FI_RMA) &&
	    (tx->state == SHM_TX_SAR || tx->state == SHM_TX_SAR_WAIT)) {
		/* A streamed write acked before it left our channel. */
		shm_rma_early_ack(tx, r.status);
		return;
	}
	if (tx->gen != (uint32_t)(r.msg_id >> 32) ||
	    (tx->state != SHM_TX_RMA && tx->state != SHM_TX_CMA &&
	     tx->state != SHM_TX_DC))
		return; /* stale: the transfer finished before */
	if (OFI_UNLIKELY(!shm_resp_status_valid(r.status) ||
			 (r.status == SHM_ACK_NEED_SAR &&
			  tx->state != SHM_TX_CMA))) {
		/* The data went with the command: nothing to stream. */
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"invalid response status %d\n", r.status);
		r.status = -FI_EIO;
	}
	if (tx->state == SHM_TX_RMA) {
		shm_rma_handle_resp(ep, tx, r.status);
		return;
	}
	if (r.status == SHM_ACK_NEED_SAR) {
		dlist_remove(&tx->entry);
		tx->state = SHM_TX_SAR_WAIT;
		dlist_insert_tail(&tx->entry, &ep->sar_queue);
		return;
	}
	shm_tx_done(ep, tx, -r.status);
}

/* ------------------------------------------------------------------ */
/* Liveness.                                                            */

static bool shm_tx_peer_alive(struct shm_ep *ep, fi_addr_t addr)
{
	return shm_tx_peer_live(ep, &ep->tx_peers[addr]);
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

/*
 * Fails every transfer whose peer died or closed its endpoint; nothing
 * may wait forever.
 */
static void shm_check_peers(struct shm_ep *ep)
{
	struct dlist_entry *item, *tmp;
	struct shm_sar_rx *s;
	struct shm_tx *tx;

	dlist_foreach_safe(&ep->cma_list, item, tmp) {
		tx = container_of(item, struct shm_tx, entry);
		if (!shm_tx_peer_alive(ep, tx->addr))
			shm_tx_done(ep, tx, FI_EIO);
	}
	if (ep->sar_bound || !dlist_empty(&ep->sar_queue))
		shm_sar_tx_check(ep);
	if (ep->inject_starved)
		shm_tx_peers_check(ep);
	dlist_foreach_safe(&ep->sar_rx_list, item, tmp) {
		s = container_of(item, struct shm_sar_rx, entry);
		if (shm_sender_gone(ep, s->src_id))
			shm_sar_rx_fail(ep, s, FI_EIO);
	}
	shm_rma_src_check(ep, shm_sender_gone);
	if (atomic_load_explicit(&shm_hdr(ep->rg)->closed,
				 memory_order_relaxed) != ep->closed_done)
		shm_release_closed(ep);
}

/*
 * A sender that dies between claiming a slot of our command ring and
 * publishing it would stop our ring for good: the consumer takes slots in
 * order. So a head slot that stays claimed but unpublished (the tail is
 * past it) for SHM_STUCK_NS, while a sender in our table is dead and
 * could have claimed it (its last command lies before the slot), is
 * skipped (shm_ring_skip: CAS from the claimed to the released sequence,
 * so a commit that lands meanwhile is consumed, not lost).
 *
 * Residual risk, accepted: a live sender stalled between claim and
 * publish for longer than the bound (stopped, swapped out) while such a
 * dead sender exists would have its slot skipped. Its late command is
 * then lost: it names a lap that is over and is never consumed, or it
 * garbles a newer command in the slot's next lap (validation drops what
 * makes no sense, and the newer command's slot is stuck and skipped in
 * turn). A stuck slot with no dead sender is left alone: a slow live
 * producer loses nothing.
 */
#define SHM_STUCK_NS (500 * 1000000ULL)

/*
 * Whether a dead sender may hold the slot at @pos: one in our table whose
 * last command lies before it, or one we mapped whose slot another
 * sender has since taken over (it may: the ring consumed all the dead
 * one had published), which we still know from our own copy.
 */
static bool shm_dead_claimer(struct shm_ep *ep, uint64_t pos)
{
	struct shm_peer_slot *s;
	uint32_t state;
	uint16_t id;
	int32_t pid;

	for (id = 0; id < SHM_MAX_PEERS; id++) {
		s = shm_peer_slot(ep->rg, id);
		state = atomic_load_explicit(&s->state, memory_order_acquire);
		pid = __atomic_load_n(&s->pid, __ATOMIC_RELAXED);
		if (state == SHM_PEER_READY &&
		    (int64_t)(__atomic_load_n(&s->last_pos, __ATOMIC_RELAXED) -
			      pos) <= 0 &&
		    !shm_pid_alive(pid))
			return true;
		if (ep->rx_peers[id].rg && ep->rx_peers[id].pid != pid &&
		    !shm_pid_alive(ep->rx_peers[id].pid))
			return true;
	}
	return false;
}

static void shm_ring_unwedge(struct shm_ep *ep)
{
	struct shm_ring *ring = shm_cmd_ring(ep->rg);
	uint64_t now;

	if (OFI_UNLIKELY(shm_ring_repair(ring) |
			 shm_ring_repair(shm_resp_ring(ep->rg))))
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"a ring's published head was overwritten, restored\n");
	if (OFI_LIKELY(!shm_ring_stuck(ring))) {
		ep->stuck_since = 0;
		return;
	}
	now = shm_now_ns();
	if (!ep->stuck_since || ep->stuck_head != ring->head) {
		ep->stuck_head = ring->head;
		ep->stuck_since = now;
		return;
	}
	if (now - ep->stuck_since < SHM_STUCK_NS)
		return;
	/* Looked at most once per bound: it asks the kernel per sender. */
	ep->stuck_since = now;
	if (!shm_dead_claimer(ep, ring->head))
		return;
	if (shm_ring_skip(ring))
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"command slot %llu claimed by a dead sender, skipped\n",
			(unsigned long long)ep->stuck_head);
	ep->stuck_since = 0;
}

static bool shm_liveness_due(struct shm_ep *ep)
{
	uint32_t pass = ep->progress_ticks + 1;
	uint64_t now;

	if (OFI_LIKELY(pass % SHM_CLOCK_TICKS))
		return false;
	now = shm_now_ns();
	if (pass % SHM_LIVENESS_TICKS && now - ep->live_at < SHM_LIVENESS_NS)
		return false;
	ep->live_at = now;
	return true;
}

/* See SHM_LIVENESS_TICKS. */
static void shm_liveness(struct shm_ep *ep)
{
	if (!dlist_empty(&ep->cma_list) || ep->sar_bound ||
	    !dlist_empty(&ep->sar_queue) || !dlist_empty(&ep->sar_rx_list) ||
	    ep->inject_starved ||
	    atomic_load_explicit(&shm_hdr(ep->rg)->closed,
				 memory_order_relaxed) != ep->closed_done)
		shm_check_peers(ep);
	shm_ring_unwedge(ep);
}

/* ------------------------------------------------------------------ */
/* The engine.                                                          */

void shm_progress_locked(struct shm_ep *ep)
{
	struct shm_ring *ring = shm_resp_ring(ep->rg);
	struct dlist_entry *item, *tmp;
	struct shm_resp *resp;
	struct shm_cmd *cmd;
	int n;

	if (OFI_UNLIKELY(ep->armed))
		shm_wake_progress(ep);
	ep->live_check = shm_liveness_due(ep);
	while ((resp = shm_ring_peek(ring))) {
		shm_handle_resp(ep, resp);
		shm_ring_release(ring, resp);
		ofi_yield_busy();
	}
	if (OFI_UNLIKELY(!dlist_empty(&ep->ack_backlog)))
		shm_ack_backlog_progress(ep);
	ring = shm_cmd_ring(ep->rg);
	for (n = 0; n < SHM_PROGRESS_BATCH && (cmd = shm_ring_peek(ring));
	     n++) {
		shm_handle_cmd(ep, cmd);
		shm_ring_release(ring, cmd);
	}
	if (n)
		ofi_yield_busy(); /* see ofi_yield.h */
	if (OFI_UNLIKELY(ep->sar_bound || !dlist_empty(&ep->sar_queue)))
		shm_sar_tx_progress(ep);
	if (OFI_UNLIKELY(!dlist_empty(&ep->rma_list)))
		shm_rma_progress(ep);
	dlist_foreach_safe(&ep->sar_rx_list, item, tmp)
		shm_sar_rx_progress(
			ep, container_of(item, struct shm_sar_rx, entry));
	if (OFI_UNLIKELY(!dlist_empty(&ep->rma_src)))
		shm_rma_src_progress(ep);
	ep->progress_ticks++;
	if (OFI_UNLIKELY(ep->live_check))
		shm_liveness(ep);
}

void shm_ep_progress(struct util_ep *util_ep)
{
	struct shm_ep *ep = container_of(util_ep, struct shm_ep, util);

	if (OFI_UNLIKELY(util_ep->auto_progress))
		ofi_progress_mark(&ep->app_driven);
	shm_ep_lock(ep);
	shm_progress_locked(ep);
	shm_ep_unlock(ep);
}

/* Close: no completions are owed, but senders must not wait on us. */
void shm_ep_flush(struct shm_ep *ep)
{
	struct dlist_entry *item;
	struct shm_sar_rx *s;

	ofi_match_flush_ops(ep->mq, &shm_match_ops, -FI_ECANCELED);
	shm_ack_backlog_free(ep);
	while ((item = dlist_pop_front(&ep->sar_rx_list))) {
		s = container_of(item, struct shm_sar_rx, entry);
		free(s->rma); /* holds nothing between segments */
		free(s);
	}
	shm_rma_src_flush(ep);
	shm_sar_reset(ep);
}
