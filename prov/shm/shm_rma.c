/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_rma.c - RMA for the shm provider, and the command/ack path that
 * atomics share with it. The initiator picks a protocol per operation:
 * data inline in the command, one of its inject buffers, a stream through
 * segmented channels for large system-memory transfers (a write through
 * the initiator's channel to the target, a read from the target into a
 * channel the initiator lends it: both cores copy), Cross Memory Attach
 * run by the target (process_vm_readv/writev on the initiator), or
 * inject-buffer sized chunks when CMA is refused. Every chunk names the
 * whole operation; the target copies each command once out of its ring,
 * validates the copy, checks key, range and access of every target iov of
 * the whole operation and holds the registrations (a close waits) before
 * a byte moves, copies through
 * the domain's HMEM overrides with the MR's iface, raises the remote
 * counters and CQ entries, and acks; the ack completes the operation, so
 * every RMA completion is a delivery completion and carries the target's
 * verdict (FI_EACCES for a bad key or range).
 */
#define _GNU_SOURCE /* process_vm_readv/writev */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ofi_coll.h"
#include "shm.h"

SHM_HOT_PATH_FRAME

/* Ack status: the target cannot use CMA, send the data in chunks. */
#define SHM_RMA_NEED_CHUNK 1
/*
 * Writes and reads past the inject size stream through a segmented
 * channel (SHM_PROTO_SAR): the two copies run in parallel on both cores,
 * where CMA is one copy on the target's core plus a system call that
 * pins pages. At 6-12 KiB streaming was 3x CMA's windowed bandwidth and
 * half its latency; from 16 KiB shm_adapt.c measures the two.
 */
#define SHM_RMA_SAR_MIN (SHM_INJECT_SIZE + 1)
/*
 * A streamed read while other reads hold channels goes in pieces of this
 * size, each through a channel lent for it alone: a window of reads then
 * keeps one segment per lent channel busy, and stays in the caches (64 KiB
 * reads ran at 18-21 GB/s where whole 256 KiB reads, four segments each,
 * fell to 10 GB/s). A read alone streams whole.
 */
#define SHM_RMA_READ_PIECE SHM_SAR_SEG_SIZE

struct shm_rma_tx {
	uint8_t op;
	uint8_t proto; /* of the command in flight */
	bool chunked;
	bool stalled; /* the next chunk waits for a ring slot or buffer */
	/* SHM_PROTO_SAR: the target's ack came before our channel let go. */
	bool acked;
	int ack_status;
	/* A streamed read: our channel its target writes into, or -1. */
	int32_t chan;
	uint32_t rseg;	    /* next segment of it to empty */
	uint64_t piece_end; /* where the piece in flight ends */
	int32_t buf;	    /* our inject buffer held, -1 if none */
	uint64_t seq; /* submission order: a commit waits for older writes */
	size_t chunk; /* bytes covered by the command in flight */
	uint64_t data;
	enum fi_datatype datatype;
	enum fi_op atomic_op;
	size_t rma_count;
	struct fi_rma_iov rma[SHM_IOV_LIMIT];
	/* atomics: compare operands (staged at issue) and fetch results */
	size_t cmp_count;
	enum fi_hmem_iface cmp_iface;
	uint64_t cmp_device;
	struct iovec cmp[SHM_IOV_LIMIT];
	size_t res_count;
	enum fi_hmem_iface res_iface;
	uint64_t res_device;
	struct iovec res[SHM_IOV_LIMIT];
};

static uint64_t shm_msg_id(const struct shm_tx *tx)
{
	return (uint64_t)tx->gen << 32 | tx->idx;
}

static bool shm_op_is_atomic(uint8_t op)
{
	return op >= SHM_OP_ATOMIC && op <= SHM_OP_COMPARE_ATOMIC;
}

/* Ops that change target memory: a later commit is ordered after them. */
static bool shm_op_writes(uint8_t op)
{
	return op == SHM_OP_WRITE || shm_op_is_atomic(op);
}

/* Ops whose target data come back to the initiator. */
static bool shm_op_returns(uint8_t op)
{
	return op == SHM_OP_READ || op == SHM_OP_FETCH_ATOMIC ||
	       op == SHM_OP_COMPARE_ATOMIC;
}

/* ------------------------------------------------------------------ */
/* Initiator.                                                           */

static int shm_rma_buf_get(struct shm_ep *ep)
{
	int idx = shm_inject_find(ep);

	if (idx < 0)
		return -1;
	atomic_store_explicit(&shm_inject_buf(ep->rg, idx)->busy, 1,
			      memory_order_relaxed);
	ep->inject_owner[idx] = 0; /* shm_rma_buf_put frees it */
	return idx;
}

static void shm_rma_buf_put(struct shm_ep *ep, struct shm_rma_tx *r)
{
	if (r->buf < 0)
		return;
	atomic_store_explicit(&shm_inject_buf(ep->rg, r->buf)->busy, 0,
			      memory_order_release);
	r->buf = -1;
}

static void shm_rma_finish(struct shm_ep *ep, struct shm_tx *tx, int err)
{
	shm_adapt_end(ep, tx, err);
	shm_rma_buf_put(ep, tx->rma);
	if (tx->rma->chan >= 0) {
		shm_sar_unlend(ep, (uint32_t)tx->rma->chan);
		tx->rma->chan = -1;
	}
	dlist_remove(&tx->entry);
	tx->state = SHM_TX_FREE;
	dlist_insert_head(&tx->entry, &ep->tx_free);
	ofi_ep_tx_complete(&ep->util, tx->context, tx->flags, tx->op_flags,
			   !tx->nocomp, err);
}

/* Copies what goes out with the command into inject buffer @b. */
static ssize_t shm_rma_stage(struct shm_ep *ep, struct shm_tx *tx, uint8_t *dst,
			     size_t len)
{
	struct shm_rma_tx *r = tx->rma;
	ssize_t ret = 0;

	if (r->op == SHM_OP_READ)
		return 0;
	if (tx->iov_count)
		ret = shm_copy_from(ep, dst, len, tx->iface, tx->device,
				    tx->iov, tx->iov_count, tx->done);
	if (ret >= 0 && r->op == SHM_OP_COMPARE_ATOMIC)
		ret = shm_copy_from(ep, dst + len, len, r->cmp_iface,
				    r->cmp_device, r->cmp, r->cmp_count, 0);
	return ret < 0 ? ret : 0;
}

/* A write or read, not begun, that may take SAR or CMA (shm_adapt.c). */
static bool shm_rma_adapts(struct shm_ep *ep, const struct shm_tx *tx,
			   const struct shm_tx_peer *p)
{
	return tx->rma->op <= SHM_OP_READ && !tx->done &&
	       !(tx->op_flags & FI_COMMIT_COMPLETE) &&
	       shm_adapt_wanted(ep, p, tx->iface, tx->iov_count, tx->size,
				true);
}

/* The next piece of a streamed read: see SHM_RMA_READ_PIECE. */
static size_t shm_rma_read_piece(const struct shm_ep *ep, size_t len)
{
	return ep->sar_lent ? OFI_MIN(len, SHM_RMA_READ_PIECE) : len;
}

static uint8_t shm_rma_proto(struct shm_ep *ep, struct shm_tx *tx,
			     struct shm_tx_peer *p, size_t *len)
{
	struct shm_rma_tx *r = tx->rma;

	*len = tx->size - tx->done;
	if (r->op == SHM_OP_COMMIT)
		return SHM_PROTO_INLINE;
	if (shm_op_is_atomic(r->op))
		return SHM_PROTO_INJECT;
	if (r->chunked) {
		*len = OFI_MIN(*len, SHM_INJECT_SIZE);
		return SHM_PROTO_INJECT;
	}
	if (r->op == SHM_OP_WRITE && *len <= SHM_RMA_INLINE_MAX)
		return SHM_PROTO_INLINE;
	/* The rest of a streamed read, in pieces. */
	if (r->op == SHM_OP_READ && tx->done && r->proto == SHM_PROTO_SAR) {
		*len = shm_rma_read_piece(ep, *len);
		return SHM_PROTO_SAR;
	}
	if (*len <= SHM_INJECT_SIZE)
		return SHM_PROTO_INJECT;
	if (r->op <= SHM_OP_READ && !tx->done && *len >= SHM_RMA_SAR_MIN &&
	    tx->iface == FI_HMEM_SYSTEM &&
	    !(shm_rma_adapts(ep, tx, p) && shm_adapt_now_cma(p, tx->size))) {
		if (r->op == SHM_OP_READ)
			*len = shm_rma_read_piece(ep, *len);
		return SHM_PROTO_SAR;
	}
	if (p->cma_ok && tx->iface == FI_HMEM_SYSTEM &&
	    tx->iov_count <= SHM_IOV_LIMIT)
		return SHM_PROTO_CMA;
	r->chunked = true;
	*len = SHM_INJECT_SIZE;
	(void)ep;
	return SHM_PROTO_INJECT;
}

/*
 * The collective engine's small writes (OFI_COLL_NO_ANSWER): whole and
 * inline, they complete once in the target's ring, which sends no ack.
 */
static bool shm_rma_no_ack(const struct shm_tx *tx, uint8_t proto)
{
	return proto == SHM_PROTO_INLINE && tx->rma->op == SHM_OP_WRITE &&
	       (tx->op_flags & OFI_COLL_NO_ANSWER) == OFI_COLL_NO_ANSWER;
}

static void shm_rma_fill(struct shm_cmd *cmd, struct shm_tx *tx,
			 struct shm_tx_peer *p, uint8_t proto, size_t len)
{
	struct shm_rma_tx *r = tx->rma;
	bool last = tx->done + len == tx->size;
	size_t i;

	cmd->op = r->op;
	cmd->proto = proto;
	cmd->src_id = p->id;
	cmd->flags = last ? 0 : SHM_CMD_RMA_MORE;
	if (last && (tx->op_flags & FI_REMOTE_CQ_DATA))
		cmd->flags |= SHM_CMD_DATA;
	if (tx->op_flags & FI_COMMIT_COMPLETE)
		cmd->flags |= SHM_CMD_COMMIT;
	else if (shm_rma_no_ack(tx, proto))
		cmd->flags |= SHM_CMD_NO_ACK;
	cmd->size = len;
	cmd->tag = tx->size; /* what the target's CQ entry reports */
	cmd->data = r->data;
	cmd->msg_id = shm_msg_id(tx);
	/* Every chunk names the whole operation: the target checks it all. */
	cmd->u.rma.rma_count = (uint8_t)r->rma_count;
	for (i = 0; i < r->rma_count; i++) {
		cmd->u.rma.rma[i].addr = r->rma[i].addr;
		cmd->u.rma.rma[i].len = r->rma[i].len;
		cmd->u.rma.rma[i].key = r->rma[i].key;
	}
	cmd->u.rma.offset = tx->done;
	cmd->u.rma.datatype = r->datatype;
	cmd->u.rma.atomic_op = r->atomic_op;
	cmd->u.rma.buf = r->buf < 0 ? 0 : (uint32_t)r->buf;
	if (r->chan >= 0)
		cmd->u.rma.buf = (uint32_t)r->chan; /* the lent channel */
	cmd->u.rma.iov_count = 0;
	if (proto != SHM_PROTO_CMA)
		return;
	cmd->u.rma.iov_count = tx->iov_count;
	for (i = 0; i < tx->iov_count; i++) {
		cmd->u.rma.iov[i].addr = (uintptr_t)tx->iov[i].iov_base;
		cmd->u.rma.iov[i].len = tx->iov[i].iov_len;
	}
}

/*
 * fi_commit(3): a commit goes out only once every write and atomic this
 * endpoint submitted to the same peer before it was acked, i.e. applied
 * at the target. Commits are rare; a scan of the pool is cheap enough.
 */
static bool shm_rma_fenced(struct shm_ep *ep, const struct shm_tx *tx)
{
	const struct shm_tx *o;
	size_t i;

	for (i = 0; i < SHM_TX_SIZE; i++) {
		o = &ep->tx[i];
		if (o == tx || o->state == SHM_TX_FREE || !o->rma ||
		    o->addr != tx->addr || !(o->flags & (FI_RMA | FI_ATOMIC)))
			continue;
		if (shm_op_writes(o->rma->op) && o->rma->seq < tx->rma->seq)
			return true;
	}
	return false;
}

/* Posts the command for the next piece of @tx; -FI_EAGAIN when full. */
static ssize_t shm_rma_issue(struct shm_ep *ep, struct shm_tx *tx)
{
	struct shm_tx_peer *p = &ep->tx_peers[tx->addr];
	struct shm_rma_tx *r = tx->rma;
	struct shm_cmd *cmd;
	uint8_t proto;
	uint64_t pos;
	bool wake;
	size_t len;
	ssize_t ret;
	int idx;

	if (p->dead)
		return -FI_EIO;
	if (r->op == SHM_OP_COMMIT && shm_rma_fenced(ep, tx))
		return -FI_EBUSY; /* waits like a read for a channel */
	proto = shm_rma_proto(ep, tx, p, &len);
	if (proto == SHM_PROTO_SAR && r->op == SHM_OP_READ) {
		r->chan = shm_sar_lend(ep, tx);
		if (r->chan < 0)
			return -FI_EBUSY; /* waits for a channel */
		r->rseg = 0;
	}
	if (proto == SHM_PROTO_INJECT) {
		idx = shm_rma_buf_get(ep);
		if (idx < 0)
			return -FI_EAGAIN;
		r->buf = idx;
		ret = shm_rma_stage(ep, tx, shm_inject_buf(ep->rg, idx)->data,
				    len);
		if (ret) {
			shm_rma_buf_put(ep, r);
			return ret;
		}
	}
	cmd = shm_ring_claim_wake(shm_cmd_ring(p->rg), &pos, &wake);
	if (!cmd) {
		shm_rma_buf_put(ep, r);
		if (r->chan >= 0) {
			shm_sar_unlend(ep, (uint32_t)r->chan);
			r->chan = -1;
		}
		if (!shm_tx_peer_live(ep, p))
			return -FI_EIO;
		ep->tx_full = true; /* see shm_busy */
		return -FI_EAGAIN;
	}
	shm_rma_fill(cmd, tx, p, proto, len);
	if (proto == SHM_PROTO_INLINE) {
		ret = shm_copy_from(ep, cmd->u.rma.inline_data, len, tx->iface,
				    tx->device, tx->iov, tx->iov_count,
				    tx->done);
		if (ret < 0) {
			cmd->op = 0; /* the slot is taken: the target skips */
			shm_tx_commit(ep, p, cmd, pos, wake);
			return ret;
		}
	}
	if ((proto == SHM_PROTO_SAR || proto == SHM_PROTO_CMA) &&
	    shm_rma_adapts(ep, tx, p))
		shm_adapt_start(ep, tx, proto == SHM_PROTO_CMA);
	shm_tx_commit(ep, p, cmd, pos, wake);
	r->proto = proto;
	r->chunk = len;
	r->piece_end = tx->done + len;
	if (proto == SHM_PROTO_SAR)
		r->acked = false;
	return 0;
}

/*
 * RMA and atomics wait for their acks only, responses on our ring that
 * the targets announce (shm_wake.c): no read streams into a channel we
 * lent, none is stalled by a full ring (they lead the list).
 */
bool shm_rma_acks_only(struct shm_ep *ep)
{
	if (dlist_empty(&ep->rma_list))
		return true;
	return !ep->sar_lent &&
	       !container_of(ep->rma_list.next, struct shm_tx, entry)
			->rma->stalled;
}

/* Next chunk after an ack: a full ring only delays it. */
static void shm_rma_next(struct shm_ep *ep, struct shm_tx *tx)
{
	bool was_stalled = tx->rma->stalled;
	ssize_t ret = shm_rma_issue(ep, tx);

	/* Stalled ones lead the list, so progress finds them first. */
	if (!ret) {
		tx->rma->stalled = false;
		if (was_stalled) {
			dlist_remove(&tx->entry);
			dlist_insert_tail(&tx->entry, &ep->rma_list);
		}
		return;
	}
	if (ret != -FI_EAGAIN && ret != -FI_EBUSY) {
		shm_rma_finish(ep, tx, (int)-ret);
		return;
	}
	if (!tx->rma->stalled) {
		tx->rma->stalled = true;
		dlist_remove(&tx->entry);
		dlist_insert_head(&tx->entry, &ep->rma_list);
	}
}

/* What came back in our inject buffer goes to the user's buffers. */
static int shm_rma_copy_back(struct shm_ep *ep, struct shm_tx *tx)
{
	struct shm_rma_tx *r = tx->rma;
	const uint8_t *src = shm_inject_buf(ep->rg, r->buf)->data;
	ssize_t ret;

	if (r->op == SHM_OP_READ)
		ret = shm_copy_to(ep, tx->iface, tx->device, tx->iov,
				  tx->iov_count, tx->done, src, r->chunk);
	else
		ret = shm_copy_to(ep, r->res_iface, r->res_device, r->res,
				  r->res_count, 0, src, r->chunk);
	return ret < 0 ? (int)-ret : 0;
}

/*
 * Empties the segments the target of streamed read @tx wrote into our
 * lent channel, into the read's own buffer: each names our read, its
 * place in it and a length, all checked against the read, never beyond.
 */
static void shm_rma_drain(struct shm_ep *ep, struct shm_tx *tx)
{
	struct shm_tx_peer *p =
		tx->addr < ep->tx_peer_cnt ? &ep->tx_peers[tx->addr] : NULL;
	struct shm_rma_tx *r = tx->rma;
	struct shm_sar_seg *seg;
	uint64_t off;
	uint32_t len, err;
	ssize_t ret;

	while (tx->done < r->piece_end) {
		seg = shm_sar_seg(ep->rg, (uint32_t)r->chan, r->rseg);
		if (!atomic_load_explicit(&seg->full, memory_order_acquire)) {
			if (p)
				shm_stall_begin(&p->read_stall);
			break;
		}
		if (p)
			shm_stall_end(ep, &p->read_stall, p);
		/* The target may rewrite these: each is read once. */
		len = __atomic_load_n(&seg->len, __ATOMIC_RELAXED);
		off = __atomic_load_n(&seg->off, __ATOMIC_RELAXED);
		err = __atomic_load_n(&seg->err, __ATOMIC_RELAXED);
		if (__atomic_load_n(&seg->msg_id, __ATOMIC_RELAXED) !=
			    shm_msg_id(tx) ||
		    off != tx->done || !len || len > SHM_SAR_SEG_SIZE ||
		    len > r->piece_end - tx->done) {
			shm_rma_finish(ep, tx, FI_EIO);
			return;
		}
		if (err && !tx->err)
			tx->err = shm_errno_valid(err) ? (int)err : FI_EIO;
		if (!tx->err) {
			ret = shm_copy_to(ep, tx->iface, tx->device, tx->iov,
					  tx->iov_count, tx->done, seg->data,
					  len);
			if (ret < 0)
				tx->err = (int)-ret;
		}
		atomic_store_explicit(&seg->full, 0, memory_order_release);
		tx->done += len;
		r->rseg = (r->rseg + 1) % SHM_SAR_CHAN_SEGS;
		ofi_yield_busy(); /* moving a stream is no idle poll */
	}
	if (tx->done < r->piece_end || !r->acked)
		return;
	if (tx->done == tx->size || tx->err) {
		shm_rma_finish(ep, tx, tx->err);
		return;
	}
	/* The next piece lends a channel again, maybe after other reads. */
	shm_sar_unlend(ep, (uint32_t)r->chan);
	r->chan = -1;
	shm_rma_next(ep, tx);
}

/* The target's verdict on a streamed read: it wrote every segment. */
static void shm_rma_read_ack(struct shm_ep *ep, struct shm_tx *tx, int status)
{
	struct shm_rma_tx *r = tx->rma;

	if (status) {
		shm_rma_finish(ep, tx, status < 0 ? -status : FI_EIO);
		return;
	}
	r->acked = true;
	shm_rma_drain(ep, tx);
}

void shm_rma_handle_resp(struct shm_ep *ep, struct shm_tx *tx, int status)
{
	struct shm_rma_tx *r = tx->rma;
	int err;

	if (r->chan >= 0) {
		shm_rma_read_ack(ep, tx, status);
		return;
	}
	if (status == SHM_RMA_NEED_CHUNK && r->proto == SHM_PROTO_CMA) {
		r->chunked = true;
		tx->done = 0;
		shm_rma_next(ep, tx);
		return;
	}
	if (status) {
		shm_rma_finish(ep, tx, status < 0 ? -status : FI_EIO);
		return;
	}
	if (r->proto == SHM_PROTO_INJECT && shm_op_returns(r->op)) {
		err = shm_rma_copy_back(ep, tx);
		if (err) {
			shm_rma_finish(ep, tx, err);
			return;
		}
	}
	shm_rma_buf_put(ep, r);
	tx->done += r->chunk;
	if (tx->done < tx->size)
		shm_rma_next(ep, tx);
	else
		shm_rma_finish(ep, tx, 0);
}

/*
 * A streamed write left our channel (the target emptied its last
 * segment): it waits for the target's verdict like any RMA, unless that
 * came first.
 */
void shm_rma_sar_drained(struct shm_ep *ep, struct shm_tx *tx)
{
	struct shm_rma_tx *r = tx->rma;

	dlist_remove(&tx->entry);
	tx->state = SHM_TX_RMA;
	dlist_insert_tail(&tx->entry, &ep->rma_list);
	if (r->acked)
		shm_rma_handle_resp(ep, tx, r->ack_status);
}

/* Only an honest target's ack after the whole stream; kept till then. */
void shm_rma_early_ack(struct shm_tx *tx, int status)
{
	struct shm_rma_tx *r = tx->rma;

	if (r->acked)
		return;
	r->acked = true;
	r->ack_status =
		status == 0 || (status < 0 && shm_errno_valid(-(int64_t)status))
			? status
			: -FI_EIO;
}

/* Retries stalled chunks; fails operations whose target died or closed. */
void shm_rma_progress(struct shm_ep *ep)
{
	bool check = ep->live_check; /* shm_progress.c decides when */
	struct dlist_entry *item, *tmp;
	struct shm_tx_peer *p;
	struct shm_tx *tx;
	uint32_t i;

	for (i = 0; i < SHM_SAR_CHANS; i++) {
		tx = ep->sar_chan[i].lent;
		if (tx)
			shm_rma_drain(ep, tx);
	}
	dlist_foreach_safe(&ep->rma_list, item, tmp) {
		tx = container_of(item, struct shm_tx, entry);
		if (tx->rma->stalled) {
			shm_rma_next(ep, tx);
			continue;
		}
		if (!check)
			break;
		p = &ep->tx_peers[tx->addr];
		if (!shm_tx_peer_live(ep, p))
			shm_rma_finish(ep, tx, FI_EIO);
	}
}

static uint64_t shm_rma_cq_flags(uint8_t op)
{
	switch (op) {
	case SHM_OP_COMMIT:
		return FI_RMA | FI_WRITE | FI_COMMIT_COMPLETE;
	case SHM_OP_WRITE:
		return FI_RMA | FI_WRITE;
	case SHM_OP_READ:
		return FI_RMA | FI_READ;
	case SHM_OP_ATOMIC:
		return FI_ATOMIC | FI_WRITE;
	default:
		return FI_ATOMIC | FI_READ;
	}
}

static int shm_rma_check_args(const struct shm_rma_args *a, size_t *size)
{
	size_t i, rsize = 0;

	if (a->count > SHM_IOV_LIMIT || (a->count && !a->iov) ||
	    !a->rma_count || a->rma_count > SHM_IOV_LIMIT || !a->rma ||
	    a->cmp_count > SHM_IOV_LIMIT || a->res_count > SHM_IOV_LIMIT)
		return -FI_EINVAL;
	/* Nothing moves: every range is the target's to judge (FI_EACCES). */
	if (a->op == SHM_OP_COMMIT) {
		*size = 0;
		return 0;
	}
	for (i = 0; i < a->rma_count; i++) {
		if (a->rma[i].len > SIZE_MAX - rsize)
			return -FI_EINVAL;
		rsize += a->rma[i].len;
	}
	*size = rsize;
	/* Atomics without a source operand (FI_ATOMIC_READ) pass none. */
	if (a->count && ofi_total_iov_len(a->iov, a->count) != rsize)
		return -FI_EINVAL;
	if (!a->count && !shm_op_is_atomic(a->op) && rsize)
		return -FI_EINVAL;
	if ((a->op_flags & FI_INJECT) && rsize > SHM_INJECT_SIZE)
		return -FI_EINVAL;
	return 0;
}

static void shm_rma_tx_init(struct shm_ep *ep, struct shm_tx *tx,
			    const struct shm_rma_args *a, size_t size)
{
	struct shm_rma_tx *r = tx->rma;
	size_t i;

	tx->gen++;
	tx->state = SHM_TX_RMA;
	tx->addr = a->addr;
	tx->context = a->context;
	tx->flags = shm_rma_cq_flags(a->op);
	tx->op_flags = a->op_flags;
	tx->nocomp = a->nocomp;
	tx->err = 0;
	tx->size = size;
	tx->done = 0;
	ofi_iov_iface(ep->hmem_detect, a->desc, a->iov, a->count, &tx->iface,
		      &tx->device);
	tx->iov_count = a->count;
	for (i = 0; i < a->count; i++)
		tx->iov[i] = a->iov[i];

	memset(r, 0, sizeof(*r));
	r->op = a->op;
	r->seq = ++ep->rma_seq;
	r->buf = -1;
	r->chan = -1;
	r->data = a->data;
	r->datatype = a->datatype;
	r->atomic_op = a->atomic_op;
	r->rma_count = a->rma_count;
	for (i = 0; i < a->rma_count; i++)
		r->rma[i] = a->rma[i];
	r->cmp_count = a->cmp_count;
	for (i = 0; i < a->cmp_count; i++)
		r->cmp[i] = a->cmp[i];
	ofi_iov_iface(ep->hmem_detect, a->cmp_desc, a->cmp, a->cmp_count,
		      &r->cmp_iface, &r->cmp_device);
	r->res_count = a->res_count;
	for (i = 0; i < a->res_count; i++)
		r->res[i] = a->res[i];
	ofi_iov_iface(ep->hmem_detect, a->res_desc, a->res, a->res_count,
		      &r->res_iface, &r->res_device);
}

static struct shm_tx *shm_rma_tx_get(struct shm_ep *ep)
{
	struct dlist_entry *item;
	struct shm_tx *tx;

	if (dlist_empty(&ep->tx_free))
		return NULL;
	tx = container_of(ep->tx_free.next, struct shm_tx, entry);
	if (!tx->rma) {
		tx->rma = calloc(1, sizeof(*tx->rma));
		if (!tx->rma)
			return NULL;
	}
	item = dlist_pop_front(&ep->tx_free);
	(void)item;
	tx->adapt.t = 0;
	return tx;
}

/* A read waits for a channel to lend, behind the ones that wait already. */
static void shm_rma_wait(struct shm_ep *ep, struct shm_tx *tx)
{
	struct dlist_entry *pos = &ep->rma_list;

	while (pos->next != &ep->rma_list &&
	       container_of(pos->next, struct shm_tx, entry)->rma->stalled)
		pos = pos->next;
	tx->rma->stalled = true;
	dlist_insert_after(&tx->entry, pos);
}

ssize_t shm_rma_submit(struct shm_ep *ep, const struct shm_rma_args *a)
{
	struct shm_tx_peer *p;
	struct shm_tx *tx;
	size_t size;
	ssize_t ret;

	ret = shm_rma_check_args(a, &size);
	if (ret)
		return ret;
	shm_ep_lock(ep);
	ret = shm_tx_peer_get(ep, a->addr, &p);
	if (OFI_UNLIKELY(ret)) {
		if (ret == -FI_EAGAIN)
			shm_progress_locked(ep);
		goto out;
	}
	if (OFI_UNLIKELY(p->dead)) {
		ret = -FI_EIO;
		goto out;
	}
	tx = shm_rma_tx_get(ep);
	if (!tx) {
		shm_progress_locked(ep);
		ret = -FI_EAGAIN;
		goto out;
	}
	shm_rma_tx_init(ep, tx, a, size);
	ret = shm_rma_issue(ep, tx);
	if (ret == -FI_EBUSY) {
		shm_rma_wait(ep, tx);
		ret = 0;
		goto out;
	}
	if (ret) {
		tx->state = SHM_TX_FREE;
		dlist_insert_head(&tx->entry, &ep->tx_free);
		if (ret == -FI_EAGAIN)
			shm_progress_locked(ep);
		goto out;
	}
	if (shm_rma_no_ack(tx, tx->rma->proto)) {
		dlist_insert_tail(&tx->entry, &ep->rma_list);
		shm_rma_finish(ep, tx, 0);
	} else if (tx->rma->proto == SHM_PROTO_SAR &&
		   tx->rma->op == SHM_OP_WRITE) {
		/* Streams like a send; completes on the ack (rma_list). */
		tx->state = SHM_TX_SAR_WAIT;
		dlist_insert_tail(&tx->entry, &ep->sar_queue);
		shm_sar_tx_progress(ep);
	} else {
		dlist_insert_tail(&tx->entry, &ep->rma_list);
	}
out:
	shm_ep_unlock(ep);
	return ret;
}

void shm_rma_ep_free(struct shm_ep *ep)
{
	size_t i;

	for (i = 0; i < SHM_TX_SIZE; i++) {
		free(ep->tx[i].rma);
		ep->tx[i].rma = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* Target.                                                              */

/* What the target made of one command: checked, then held. */
struct shm_rma_target {
	struct shm_cmd cmd; /* the one copy out of the ring, validated */
	uint32_t held;	    /* ent[] held: every target iov of the op */
	struct ofi_mr_entry *ent[SHM_IOV_LIMIT];
	uintptr_t base[SHM_IOV_LIMIT]; /* local address of each target iov */
	uint32_t n;		       /* pieces of this chunk */
	struct iovec liov[SHM_IOV_LIMIT];
	struct util_mr *mr[SHM_IOV_LIMIT];
	struct ofi_mr_entry *pent[SHM_IOV_LIMIT]; /* held entry of liov[i] */
};

/* fi_commit names fewer ranges than an RMA op (tcp's wire takes 4) */
_Static_assert(SHM_IOV_LIMIT >= OFI_COMMIT_IOV_MAX, "commit iovs");

static int shm_rma_check_proto(const struct shm_cmd *cmd, bool whole)
{
	uint64_t sum = 0;
	uint32_t i;

	switch (cmd->proto) {
	case SHM_PROTO_INLINE:
		if (cmd->op == SHM_OP_COMMIT)
			return cmd->size ? -FI_EINVAL : 0;
		return cmd->op == SHM_OP_WRITE &&
				       cmd->size <= SHM_RMA_INLINE_MAX
			       ? 0
			       : -FI_EINVAL;
	case SHM_PROTO_INJECT:
		if (cmd->u.rma.buf >= SHM_INJECT_BUFS)
			return -FI_EINVAL;
		if (cmd->op == SHM_OP_COMPARE_ATOMIC)
			return cmd->size <= SHM_INJECT_SIZE / 2 ? 0
								: -FI_EINVAL;
		return cmd->size <= SHM_INJECT_SIZE ? 0 : -FI_EINVAL;
	case SHM_PROTO_SAR:
		/* A read names the initiator's channel it lends us. */
		if (cmd->op == SHM_OP_READ) /* whole or a piece */
			return cmd->u.rma.buf < SHM_SAR_CHANS ? 0 : -FI_EINVAL;
		return cmd->op == SHM_OP_WRITE && whole ? 0 : -FI_EINVAL;
	case SHM_PROTO_CMA:
		if ((cmd->op != SHM_OP_WRITE && cmd->op != SHM_OP_READ) ||
		    !whole || cmd->u.rma.iov_count > SHM_IOV_LIMIT)
			return -FI_EINVAL;
		for (i = 0; i < cmd->u.rma.iov_count; i++) {
			if (cmd->u.rma.iov[i].len > cmd->size - sum)
				return -FI_EINVAL;
			sum += cmd->u.rma.iov[i].len;
		}
		return sum == cmd->size ? 0 : -FI_EINVAL;
	default:
		return -FI_EINVAL;
	}
}

/*
 * Everything in the copy a peer chose is checked here, once: op, flags,
 * the iov counts, that the target iovs add up to the operation's size
 * and the chunk lies inside it, protocol sizes and the inject index, and
 * the atomic datatype and op.
 */
static int shm_rma_cmd_check(const struct shm_cmd *cmd)
{
	const struct shm_wire_rma_iov *rma = cmd->u.rma.rma;
	uint64_t total = 0, off = cmd->u.rma.offset;
	bool whole, more;
	uint32_t i;

	if (cmd->op < SHM_OP_WRITE || cmd->op > SHM_OP_COMMIT ||
	    (cmd->flags & ~(uint32_t)(SHM_CMD_DATA | SHM_CMD_RMA_MORE |
				      SHM_CMD_COMMIT | SHM_CMD_NO_ACK)))
		return -FI_EINVAL;
	/* Unacked: whole inline writes only (shm_rma_no_ack). */
	if ((cmd->flags & SHM_CMD_NO_ACK) &&
	    (cmd->op != SHM_OP_WRITE || cmd->proto != SHM_PROTO_INLINE ||
	     (cmd->flags & (SHM_CMD_RMA_MORE | SHM_CMD_COMMIT))))
		return -FI_EINVAL;
	if (!cmd->u.rma.rma_count || cmd->u.rma.rma_count > SHM_IOV_LIMIT)
		return -FI_EINVAL;
	/* A commit names ranges only; util_commit.c judges each of them. */
	if (cmd->op == SHM_OP_COMMIT)
		return !off && !cmd->size && !cmd->tag &&
				       cmd->u.rma.rma_count <=
					       OFI_COMMIT_IOV_MAX &&
				       cmd->proto == SHM_PROTO_INLINE &&
				       !(cmd->flags & ~(uint32_t)SHM_CMD_COMMIT)
			       ? 0
			       : -FI_EINVAL;
	for (i = 0; i < cmd->u.rma.rma_count; i++) {
		if (rma[i].len > SIZE_MAX - total)
			return -FI_EINVAL;
		total += rma[i].len;
	}
	if (total != cmd->tag || off > total || cmd->size > total - off)
		return -FI_EINVAL;
	whole = !off && cmd->size == total;
	more = off + cmd->size < total;
	if (more != !!(cmd->flags & SHM_CMD_RMA_MORE))
		return -FI_EINVAL;
	if (shm_op_is_atomic(cmd->op)) {
		if (!whole || cmd->proto != SHM_PROTO_INJECT)
			return -FI_EINVAL;
		if (shm_atomic_check(cmd->op, cmd->u.rma.datatype,
				     cmd->u.rma.atomic_op, NULL, NULL))
			return -FI_EOPNOTSUPP;
	}
	return shm_rma_check_proto(cmd, whole);
}

static bool shm_cmd_reads(const struct shm_cmd *cmd)
{
	return cmd->op == SHM_OP_READ ||
	       (cmd->op == SHM_OP_FETCH_ATOMIC &&
		cmd->u.rma.atomic_op == FI_ATOMIC_READ);
}

static uint64_t shm_cmd_access(const struct shm_cmd *cmd)
{
	switch (cmd->op) {
	case SHM_OP_WRITE:
	case SHM_OP_ATOMIC:
		return FI_REMOTE_WRITE;
	case SHM_OP_READ:
		return FI_REMOTE_READ;
	default:
		return shm_cmd_reads(cmd) ? FI_REMOTE_READ
					  : FI_REMOTE_READ | FI_REMOTE_WRITE;
	}
}

static void shm_rma_unhold(struct shm_ep *ep, struct shm_rma_target *t)
{
	while (t->held)
		ofi_mr_map_put(&ep->util.domain->mr_map, t->ent[--t->held]);
}

/*
 * Key, range and access of every target iov of the whole operation are
 * checked, and their registrations held, before any byte of any chunk
 * moves: an operation that runs past its registration fails at once.
 */
static int shm_rma_hold(struct shm_ep *ep, struct shm_rma_target *t)
{
	const struct shm_wire_rma_iov *rma = t->cmd.u.rma.rma;
	uint64_t access = shm_cmd_access(&t->cmd);
	uintptr_t addr;
	uint32_t i;

	for (i = 0; i < t->cmd.u.rma.rma_count; i++) {
		addr = (uintptr_t)rma[i].addr;
		if (ofi_mr_map_get(&ep->util.domain->mr_map, &addr, rma[i].len,
				   rma[i].key, access, &t->ent[i]))
			goto err;
		t->held++;
		if (!t->ent[i]->context)
			goto err;
		t->base[i] = addr;
	}
	return 0;
err:
	shm_rma_unhold(ep, t);
	return -FI_EACCES;
}

/* The local pieces covering this chunk, [offset, offset + size). */
static void shm_rma_slice(struct shm_rma_target *t)
{
	const struct shm_wire_rma_iov *rma = t->cmd.u.rma.rma;
	uint64_t off = t->cmd.u.rma.offset, len = t->cmd.size, take;
	uint32_t i;

	t->n = 0;
	for (i = 0; i < t->held; i++) {
		if (off && off >= rma[i].len) {
			off -= rma[i].len;
			continue;
		}
		if (t->n && !len)
			break;
		take = OFI_MIN(rma[i].len - off, len);
		t->liov[t->n].iov_base = (uint8_t *)t->base[i] + off;
		t->liov[t->n].iov_len = take;
		t->mr[t->n] = t->ent[i]->context;
		t->pent[t->n] = t->ent[i];
		t->n++;
		len -= take;
		off = 0;
	}
}

static int shm_cma_status(ssize_t ret, size_t want, struct shm_rx_peer *p)
{
	if (ret == (ssize_t)want)
		return 0;
	if (ret < 0 && (errno == EPERM || errno == ENOSYS)) {
		p->cma_ok = false;
		return SHM_RMA_NEED_CHUNK;
	}
	return ret < 0 && errno == ESRCH ? -FI_EIO : -FI_EFAULT;
}

/* p->cma_ok only with a pid the kernel confirmed (shm_rx_peer_slow). */
static int shm_rma_cma(const struct shm_rma_target *t, struct shm_rx_peer *p)
{
	const struct shm_cmd *cmd = &t->cmd;
	struct iovec remote[SHM_IOV_LIMIT];
	uint32_t i;
	ssize_t ret;

	if (!p->cma_ok)
		return SHM_RMA_NEED_CHUNK;
	for (i = 0; i < t->n; i++) {
		if (t->mr[i]->iface != FI_HMEM_SYSTEM)
			return SHM_RMA_NEED_CHUNK;
	}
	for (i = 0; i < cmd->u.rma.iov_count; i++) {
		remote[i].iov_base = (void *)(uintptr_t)cmd->u.rma.iov[i].addr;
		remote[i].iov_len = cmd->u.rma.iov[i].len;
	}
	if (cmd->op == SHM_OP_WRITE)
		ret = process_vm_readv(p->pid, t->liov, t->n, remote, i, 0);
	else
		ret = process_vm_writev(p->pid, t->liov, t->n, remote, i, 0);
	return shm_cma_status(ret, cmd->size, p);
}

static int shm_rma_target_copy(struct shm_ep *ep,
			       const struct shm_rma_target *t, uint8_t *buf)
{
	size_t off = 0;
	uint32_t i;
	ssize_t ret;

	for (i = 0; i < t->n; i++) {
		if (t->cmd.op == SHM_OP_WRITE)
			ret = shm_copy_to(ep, t->mr[i]->iface, t->mr[i]->device,
					  &t->liov[i], 1, 0, buf + off,
					  t->liov[i].iov_len);
		else
			ret = shm_copy_from(ep, buf + off, t->liov[i].iov_len,
					    t->mr[i]->iface, t->mr[i]->device,
					    &t->liov[i], 1, 0);
		if (ret < 0)
			return (int)ret;
		off += t->liov[i].iov_len;
	}
	return 0;
}

static int shm_rma_target_atomic(struct shm_ep *ep, struct shm_rma_target *t,
				 uint8_t *buf)
{
	/* Operands are copied first: the initiator owns the buffer. */
	uint8_t opnd[SHM_INJECT_SIZE], res[SHM_INJECT_SIZE];
	struct shm_cmd *cmd = &t->cmd;
	size_t n = cmd->size;
	bool cmp = cmd->op == SHM_OP_COMPARE_ATOMIC;
	int ret;

	memcpy(opnd, buf, cmp ? 2 * n : n);
	/* The executor walks rma_count pieces: this chunk's. */
	cmd->u.rma.rma_count = (uint8_t)t->n;
	ret = shm_atomic_exec(ep, cmd, t->liov, t->mr, opnd,
			      cmp ? opnd + n : NULL,
			      cmd->op == SHM_OP_ATOMIC ? NULL : res);
	cmd->u.rma.rma_count = (uint8_t)t->held;
	if (!ret && cmd->op != SHM_OP_ATOMIC)
		memcpy(buf, res, n);
	return ret;
}

/*
 * Remote events, after the last chunk: counters only where fi_endpoint(3)
 * and fi_mr(3) allow them (an endpoint with FI_RMA_EVENT; an MR counter
 * bound for this direction), each MR counter once per operation.
 */
static void shm_rma_events(struct shm_ep *ep, struct shm_rma_target *t)
{
	const struct shm_cmd *cmd = &t->cmd;
	bool rd = shm_cmd_reads(cmd);
	uint64_t dir = rd ? FI_REMOTE_READ : FI_REMOTE_WRITE;
	uint64_t flags = (cmd->op <= SHM_OP_READ ? FI_RMA : FI_ATOMIC) | dir;

	if (cmd->flags & SHM_CMD_RMA_MORE)
		return;
	/*
	 * CQ entries only carry remote CQ data: the core hands FI_RMA_EVENT
	 * to every endpoint as a secondary cap, and context-less entries
	 * would reach users (btl/ofi) that never asked for them.
	 */
	ofi_ep_rma_target_complete(
		&ep->util,
		flags | (cmd->flags & SHM_CMD_DATA ? FI_REMOTE_CQ_DATA : 0),
		cmd->tag, cmd->data, t->ent, t->held);
}

/* FI_COMMIT_COMPLETE: what this command wrote is durable before the ack. */
static int shm_rma_persist(const struct shm_rma_target *t)
{
	uint32_t i;
	int ret;

	if (!(t->cmd.flags & SHM_CMD_COMMIT) || shm_cmd_reads(&t->cmd))
		return 0;
	for (i = 0; i < t->n; i++) {
		ret = ofi_commit_complete(t->pent[i],
					  (uintptr_t)t->liov[i].iov_base,
					  t->liov[i].iov_len);
		if (ret)
			return ret;
	}
	return 0;
}

/* fi_commit at the target: the ranges are judged and answered in util. */
static int shm_rma_commit(struct shm_ep *ep, const struct shm_cmd *cmd)
{
	struct fi_rma_iov iov[SHM_IOV_LIMIT];
	uint32_t i;
	int ret;

	ret = shm_rma_cmd_check(cmd);
	if (ret)
		return ret;
	for (i = 0; i < cmd->u.rma.rma_count; i++) {
		iov[i].addr = cmd->u.rma.rma[i].addr;
		iov[i].len = cmd->u.rma.rma[i].len;
		iov[i].key = cmd->u.rma.rma[i].key;
	}
	return ofi_commit_target(&ep->util, iov, i, 0);
}

static int shm_rma_execute(struct shm_ep *ep, struct shm_rma_target *t,
			   struct shm_rx_peer *p)
{
	uint8_t *buf;

	switch (t->cmd.proto) {
	case SHM_PROTO_CMA:
		return shm_rma_cma(t, p);
	case SHM_PROTO_INLINE:
		buf = t->cmd.u.rma.inline_data;
		break;
	default:
		buf = shm_inject_buf(p->rg, t->cmd.u.rma.buf)->data;
		break;
	}
	if (shm_op_is_atomic(t->cmd.op))
		return shm_rma_target_atomic(ep, t, buf);
	return shm_rma_target_copy(ep, t, buf);
}

static int shm_rma_target(struct shm_ep *ep, struct shm_rma_target *t,
			  struct shm_rx_peer *p)
{
	int ret;

	ret = shm_rma_cmd_check(&t->cmd);
	if (ret)
		return ret;
	if (!(ep->util.caps &
	      (shm_op_is_atomic(t->cmd.op) ? FI_ATOMIC : FI_RMA)))
		return -FI_EOPNOTSUPP;
	ret = shm_rma_hold(ep, t);
	if (ret)
		return ret;
	shm_rma_slice(t);
	ret = shm_rma_execute(ep, t, p);
	if (!ret)
		ret = shm_rma_persist(t);
	if (!ret)
		shm_rma_events(ep, t);
	shm_rma_unhold(ep, t);
	return ret;
}

/*
 * A write streamed through the initiator's channel: judged whole before
 * its first segment is read; each segment then goes into the
 * registrations, looked up and held again for its copy, so that a close
 * of the MR never waits on a stream (ofi_mr_map_remove). A rejected
 * write is drained into nothing, so that the channel moves on.
 */
struct shm_rma_sink {
	struct shm_rma_target t;
	int status; /* 0, or why nothing more is written (-fi_errno) */
};

/*
 * A streamed operation, judged whole: command, caps, and every
 * registration checked, then let go.
 */
static int shm_rma_stream_check(struct shm_ep *ep, struct shm_rma_target *t)
{
	int ret;

	ret = shm_rma_cmd_check(&t->cmd);
	if (ret)
		return ret;
	if (!(ep->util.caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	ret = shm_rma_hold(ep, t);
	if (ret)
		return ret;
	shm_rma_unhold(ep, t);
	return 0;
}

static void shm_rma_sink_start(struct shm_ep *ep, struct shm_rma_target *t)
{
	struct shm_rma_sink *k = malloc(sizeof(*k));

	if (!k)
		goto nomem;
	k->t = *t;
	k->status = shm_rma_stream_check(ep, &k->t);
	if (shm_sar_rx_rma(ep, &k->t.cmd, k))
		return;
	free(k);
nomem:
	shm_send_ack(ep, t->cmd.src_id, t->cmd.msg_id, -FI_ENOMEM);
}

/* Segment [off, off + len) of a checked write: inside the operation. */
void shm_rma_sink_write(struct shm_ep *ep, struct shm_rma_sink *k, size_t off,
			const uint8_t *data, size_t len)
{
	struct shm_rma_target *t = &k->t;
	int ret;

	if (k->status)
		return;
	t->cmd.u.rma.offset = off;
	t->cmd.size = len;
	ret = shm_rma_hold(ep, t);
	if (!ret) {
		shm_rma_slice(t);
		ret = shm_rma_target_copy(ep, t, (uint8_t *)data);
		shm_rma_unhold(ep, t);
	}
	k->status = ret;
}

/* The stream ended (@err: it failed): remote events, then the verdict. */
void shm_rma_sink_done(struct shm_ep *ep, struct shm_rma_sink *k,
		       uint16_t src_id, int err)
{
	struct shm_rma_target *t = &k->t;
	int status = k->status ? k->status : -err;

	if (!status) {
		t->cmd.u.rma.offset = 0;
		t->cmd.size = t->cmd.tag;
		status = shm_rma_hold(ep, t);
		if (!status) {
			shm_rma_slice(t);
			status = shm_rma_persist(t);
			if (!status)
				shm_rma_events(ep, t);
			shm_rma_unhold(ep, t);
		}
	}
	shm_send_ack(ep, src_id, t->cmd.msg_id, status);
	free(k);
}

/*
 * A read streamed into the channel the initiator lends us: judged whole
 * first, then each segment is copied from the registrations, held again
 * for that copy only; the ack, after the last segment, carries the
 * verdict. The initiator checks every segment against its own read.
 */
struct shm_rma_src {
	struct dlist_entry entry;
	struct shm_rma_target t;
	uint16_t src_id;
	uint32_t wseg; /* next segment to write */
	uint64_t base; /* the piece: its offset in the read, and length */
	uint64_t len;
	uint64_t done;
};

static void shm_rma_src_end(struct shm_ep *ep, struct shm_rma_src *k,
			    int status)
{
	dlist_remove(&k->entry);
	shm_send_ack(ep, k->src_id, k->t.cmd.msg_id, status);
	free(k);
}

/* Fills the free segments in order; false when it ended. */
static bool shm_rma_src_run(struct shm_ep *ep, struct shm_rma_src *k)
{
	struct shm_rma_target *t = &k->t;
	uint64_t total = k->len;
	struct shm_region *rg;
	struct shm_sar_seg *seg;
	size_t len;
	int ret;

	rg = k->src_id < SHM_MAX_PEERS ? ep->rx_peers[k->src_id].rg : NULL;
	while (rg && k->done < total) {
		seg = shm_sar_seg(rg, t->cmd.u.rma.buf, k->wseg);
		if (atomic_load_explicit(&seg->full, memory_order_acquire))
			return true;
		len = OFI_MIN(SHM_SAR_SEG_SIZE, total - k->done);
		t->cmd.u.rma.offset = k->base + k->done;
		t->cmd.size = len;
		ret = shm_rma_hold(ep, t);
		if (ret)
			goto end;
		shm_rma_slice(t);
		ret = shm_rma_target_copy(ep, t, seg->data);
		shm_rma_unhold(ep, t);
		if (ret)
			goto end;
		seg->len = (uint32_t)len;
		seg->msg_id = t->cmd.msg_id;
		seg->off = k->base + k->done;
		seg->err = 0;
		atomic_store_explicit(&seg->full, 1, memory_order_release);
		k->done += len;
		k->wseg = (k->wseg + 1) % SHM_SAR_CHAN_SEGS;
		ofi_yield_busy(); /* moving a stream is no idle poll */
	}
	if (!rg) {
		ret = -FI_EIO;
		goto end;
	}
	ret = 0;
	/* Remote events once, after the last piece, for the whole read. */
	if (!(t->cmd.flags & SHM_CMD_RMA_MORE)) {
		t->cmd.u.rma.offset = 0;
		t->cmd.size = t->cmd.tag;
		ret = shm_rma_hold(ep, t);
		if (!ret) {
			shm_rma_events(ep, t);
			shm_rma_unhold(ep, t);
		}
	}
end:
	shm_rma_src_end(ep, k, ret);
	return false;
}

static void shm_rma_src_start(struct shm_ep *ep, struct shm_rma_target *t)
{
	struct shm_rma_src *k;
	int ret;

	ret = shm_rma_stream_check(ep, t);
	if (ret)
		goto ack;
	k = malloc(sizeof(*k));
	if (!k) {
		ret = -FI_ENOMEM;
		goto ack;
	}
	k->t = *t;
	k->src_id = t->cmd.src_id;
	k->wseg = 0;
	k->base = t->cmd.u.rma.offset;
	k->len = t->cmd.size;
	k->done = 0;
	dlist_insert_tail(&k->entry, &ep->rma_src);
	shm_rma_src_run(ep, k);
	return;
ack:
	shm_send_ack(ep, t->cmd.src_id, t->cmd.msg_id, ret);
}

void shm_rma_src_progress(struct shm_ep *ep)
{
	struct dlist_entry *item, *tmp;

	dlist_foreach_safe(&ep->rma_src, item, tmp)
		shm_rma_src_run(ep,
				container_of(item, struct shm_rma_src, entry));
}

/* Initiators that died or closed read nothing more: drop their reads. */
void shm_rma_src_check(struct shm_ep *ep,
		       bool (*gone)(struct shm_ep *, uint16_t))
{
	struct dlist_entry *item, *tmp;
	struct shm_rma_src *k;

	dlist_foreach_safe(&ep->rma_src, item, tmp) {
		k = container_of(item, struct shm_rma_src, entry);
		if (k->src_id >= SHM_MAX_PEERS || gone(ep, k->src_id))
			shm_rma_src_end(ep, k, -FI_EIO);
	}
}

/* The initiator's slot went to another process: never write there. */
void shm_rma_src_orphan(struct shm_ep *ep, uint16_t id)
{
	struct dlist_entry *item;
	struct shm_rma_src *k;

	dlist_foreach(&ep->rma_src, item) {
		k = container_of(item, struct shm_rma_src, entry);
		if (k->src_id == id)
			k->src_id = SHM_ORPHAN_ID;
	}
}

void shm_rma_src_flush(struct shm_ep *ep)
{
	struct dlist_entry *item;

	while ((item = dlist_pop_front(&ep->rma_src)))
		free(container_of(item, struct shm_rma_src, entry));
}

void shm_rma_handle_cmd(struct shm_ep *ep, const struct shm_cmd *slot)
{
	struct shm_rma_target t;
	struct shm_rx_peer *p;
	int status;

	/* A peer could rewrite the slot under us: one copy, used alone. */
	memcpy(&t.cmd, slot, sizeof(t.cmd));
	t.held = 0;
	p = shm_rx_peer_get(ep, t.cmd.src_id);
	if (OFI_UNLIKELY(!p)) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"RMA command from unknown peer %u dropped\n",
			t.cmd.src_id);
		return;
	}
	/*
	 * An initiator that closed never completed the operation, and its
	 * memory may be in other use now: hands off.
	 */
	if ((t.cmd.proto == SHM_PROTO_CMA ||
	     (t.cmd.proto == SHM_PROTO_SAR && t.cmd.op == SHM_OP_READ)) &&
	    shm_rx_peer_closed(ep, t.cmd.src_id))
		return;
	if (t.cmd.op == SHM_OP_COMMIT) {
		status = shm_rma_commit(ep, &t.cmd);
		shm_send_ack(ep, t.cmd.src_id, t.cmd.msg_id, status);
		return;
	}
	if (t.cmd.proto == SHM_PROTO_SAR && t.cmd.op == SHM_OP_READ) {
		shm_rma_src_start(ep, &t);
		return;
	}
	if (t.cmd.proto == SHM_PROTO_SAR) {
		shm_rma_sink_start(ep, &t);
		return;
	}
	status = shm_rma_target(ep, &t, p);
	/* Its initiator waits for nothing: a failure stays silent (the
	 * engine probes a peer that stalls). */
	if (t.cmd.flags & SHM_CMD_NO_ACK)
		return;
	shm_send_ack(ep, t.cmd.src_id, t.cmd.msg_id, status);
}
