/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_region.c - the engine's internal writes into peers' regions
 * (their completion, the provider's RMA with CQ data) and the target
 * side: a write landing in our region (ofi_coll_rma_landed).
 */
#include "coll_priv.h"

/*
 * Something the engine waits for happened, maybe on a provider's progress
 * thread: a reader asleep in fi_cq_sread or fi_eq_sread wakes up and
 * drives the engine (FI_PROGRESS_AUTO runs nothing else of it).
 */
static void coll_wake(struct ofi_coll_ep *ce)
{
	struct util_ep *ep = ce->ep;

	if (ep->tx_cq)
		ofi_wait_signal(ep->tx_cq->wait);
	/* where a collective's completion is counted: fi_cntr_wait there */
	if (ep->cntrs[OFI_CNTR_TX])
		ofi_wait_signal(ep->cntrs[OFI_CNTR_TX]->wait);
	if (ep->eq)
		ofi_wait_signal(ep->eq->wait);
}

OFI_HOT void ofi_coll_rma_done(void *context, int err)
{
	struct coll_rma *r = context;
	struct ofi_coll_ep *ce = r->ce;

	r->err = err;
	__atomic_store_n(&r->state, CR_DONE, __ATOMIC_RELEASE);
	coll_wake(ce);
}

/*
 * @data: 0, or the remote CQ data (coll_cq_data*): the target's
 * provider hands it to ofi_coll_rma_landed once the bytes are in place.
 */
OFI_HOT ssize_t coll_rma_write_key(struct coll_group *g, size_t peer,
				   struct coll_rma *r, const void *buf,
				   size_t len, uint64_t key, size_t off,
				   uint64_t data, bool answer)
{
	struct coll_chan *ch = &g->chan[peer];
	struct iovec iov = {(void *)buf, len};
	struct fi_rma_iov rma = {off, len, key};
	struct fi_msg_rma msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = ch->addr,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = r,
		.data = data,
	};
	struct fid_ep *ep = &g->ce->ep->ep_fid;
	uint64_t flags = OFI_COLL_INTERNAL | FI_COMPLETION;
	ssize_t ret;

	r->err = 0;
	r->ce = g->ce;
	r->state = CR_BUSY;
	if (data)
		flags |= FI_REMOTE_CQ_DATA;
	if (!answer)
		flags |= OFI_COLL_NO_ANSWER;
	ret = ep->rma->writemsg(ep, &msg, flags);
	if (ret)
		r->state = CR_IDLE;
	else
		g->ce->rma_posts++;
	return ret;
}

/* A write into the peer's group region at @off. */
ssize_t coll_rma_write(struct coll_group *g, size_t peer, struct coll_rma *r,
		       const void *buf, size_t len, size_t off, uint64_t data,
		       bool answer)
{
	return coll_rma_write_key(g, peer, r, buf, len, g->chan[peer].key, off,
				  data, answer);
}

/*
 * @answer: the write's completion must say whether it landed (a hello,
 * a probe); otherwise (chunks, acks) it may complete once sent.
 */
ssize_t coll_rma_write_word(struct coll_group *g, size_t peer,
			    struct coll_rma *r, uint64_t val, size_t word,
			    bool answer)
{
	r->val = val;
	return coll_rma_write(g, peer, r, &r->val, sizeof(r->val),
			      word * sizeof(uint64_t), coll_cq_data_wake(g->me),
			      answer);
}

static void pack_raise(volatile uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (cur < v &&
	       !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

/*
 * Called by the target's provider (ofi_ep_rma_target_complete) with the
 * region's registration held, so the group outlives the call. The data
 * is the peer's: a rank out of range is ignored; a wrong sequence number
 * can only confuse the group the peer belongs to, as any write could.
 */
OFI_HOT void ofi_coll_rma_landed(void *mr_context, uint64_t data)
{
	struct coll_group *g = container_of(mr_context, struct coll_group, mr);
	size_t from = (size_t)(data >> COLL_RANK_SHIFT);
	uint64_t seq = data & COLL_SEQ_MASK;

	if (from >= g->n || from == g->me)
		return;
	if (data & COLL_RDV) {
		__atomic_store_n(group_word(g, region_rdv_seq_word(g->n, from)),
				 seq, __ATOMIC_RELEASE);
	} else if (!(data & COLL_WAKE)) {
		/* the trailer's ack (stale after a chunk that had none, so
		 * never above what the peer consumed): only ever raised */
		pack_raise(group_word(g, region_pack_word(g->n, from)),
			   *(volatile uint64_t *)(group_slot(g, from, seq) +
						  COLL_ACK_OFF));
		__atomic_store_n(
			group_word(g, region_flag_word(g->n, from, seq)), seq,
			__ATOMIC_RELEASE);
	}
	coll_wake(g->ce);
}
