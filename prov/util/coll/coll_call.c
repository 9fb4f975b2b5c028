/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_call.c - the collective calls: fi_barrier ... fi_gather and
 * fi_collectivemsg checked (group, root, op, datatype, buffers), staged
 * off device memory, scheduled and started (coll_post; a small broadcast
 * takes bcast_fast), and fi_query_collective's answers.
 */
#include "coll_priv.h"

/* ------------------------------------------------------------------ */
/* The collective calls.                                                */

struct coll_group *coll_group_of(struct ofi_coll_ep *ce, fi_addr_t coll_addr)
{
	struct dlist_entry *item;
	struct coll_group *g;

	dlist_foreach(&ce->groups, item) {
		g = container_of(item, struct coll_group, entry);
		if ((fi_addr_t)(uintptr_t)g == coll_addr)
			return g;
	}
	return NULL;
}

static ssize_t coll_rank_of(struct coll_group *g, fi_addr_t addr)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		if (g->members[i] == addr)
			return (ssize_t)i;
	}
	return -1;
}

static bool coll_reduces(enum coll_kind k)
{
	return k == CK_ALLREDUCE || k == CK_REDUCE_SCATTER || k == CK_REDUCE;
}

static bool coll_needs_result(const struct coll_args *a, bool root)
{
	switch (a->kind) {
	case CK_BARRIER:
	case CK_BCAST:
		return false;
	case CK_REDUCE:
	case CK_GATHER:
		return root;
	default:
		return true;
	}
}

static bool coll_needs_buf(const struct coll_args *a, bool root)
{
	if (a->kind == CK_BARRIER)
		return false;
	if (a->kind == CK_SCATTER)
		return root;
	return true;
}

/*
 * Util's atomic executor reduces into the result in place and refuses
 * one misaligned for the datatype: refused at the post, before a peer
 * waits for this call, never a failure of the whole group.
 */
static bool coll_result_aligned(const struct coll_op *op,
				const struct coll_args *b, bool root)
{
	if (op->uop.fn || !b->count || !b->result)
		return true;
	if (b->kind != CK_ALLREDUCE && !(b->kind == CK_REDUCE && root))
		return true;
	return ofi_atomic_aligned(op->dt, b->result);
}

/*
 * The flags a collective call takes: completion semantics. Other bits
 * are refused: the library's own (OFI_COLL_INTERNAL and the like) would
 * make the completion treat the application's context as the library's.
 */
#define COLL_OP_FLAGS                                                          \
	(FI_COMPLETION | FI_MORE | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | \
	 FI_DELIVERY_COMPLETE)

/* Elements the call writes into its result (0: none). */
static size_t coll_result_need(const struct coll_args *a, size_t n, bool root)
{
	if (!coll_needs_result(a, root))
		return 0;
	switch (a->kind) {
	case CK_ALLGATHER:
	case CK_GATHER:
	case CK_ALLTOALL:
		return a->count > SIZE_MAX / n ? SIZE_MAX : a->count * n;
	default:
		return a->count;
	}
}

/* @b: @a with device buffers replaced by their host copies. */
static int coll_stage_args(struct util_ep *ep, struct coll_op *op, size_t n,
			   const struct coll_args *a, struct coll_args *b)
{
	size_t len = a->count * op->dtsize, blen = len, rlen = len;
	bool bcast = a->kind == CK_BCAST;
	int ret;

	switch (a->kind) {
	case CK_BARRIER:
		blen = rlen = 0;
		break;
	case CK_ALLGATHER:
	case CK_GATHER:
		rlen = n * len;
		break;
	case CK_SCATTER:
	case CK_REDUCE_SCATTER:
		blen = n * len;
		break;
	case CK_ALLTOALL:
		blen = rlen = n * len;
		break;
	default:
		break;
	}
	*b = *a;
	ret = coll_stage(ep, a->desc, a->buf, blen, true, bcast, &op->st_buf);
	if (!ret && !bcast)
		ret = coll_stage(ep, a->result_desc, a->result, rlen, false,
				 true, &op->st_res);
	if (op->st_buf.host)
		b->buf = op->st_buf.host;
	if (op->st_res.host)
		b->result = op->st_res.host;
	return ret;
}

/*
 * Whether channel @ch can take its next chunk as a store now: mapped, no
 * direct write of it in flight, a free slot in its window.
 */
static bool chan_store_ready(struct coll_group *g, size_t peer)
{
	struct coll_chan *ch = &g->chan[peer];
	struct coll_rma *r;
	uint64_t seq = ch->out_seq + 1;

	if (!ch->peer)
		return false;
	r = &ch->data[seq % OFI_COLL_WINDOW];
	if (!coll_rma_poll(r) || r->err)
		return false;
	return coll_chan_room(g, peer, seq);
}

/*
 * A broadcast of up to COLL_INL host bytes, with nothing queued before it
 * on its group, that can finish now: the parent's chunk was stored into
 * our region and landed, each child's channel is mapped and its window
 * has room. It runs here without
 * building an op: what the schedule's steps would do (sched_bcast,
 * coll_step_recv, coll_step_send), and the completion, quiet. 1: done; 0: not
 * possible now, the general path builds the op (it changed nothing).
 */
static int bcast_fast(struct util_ep *ep, struct coll_group *g,
		      const struct coll_args *a, size_t len, size_t root)
{
	struct ofi_coll_ep *ce = g->ce;
	struct util_mr *mr = a->desc;
	size_t n = g->n, v = ofi_coll_vrank(g->me, root, n);
	size_t fan = ce->fanout, child[fan ? fan : 1], k, i, p;
	struct coll_chan *ch = NULL;
	uint8_t *src = NULL, payload[COLL_INL];
	uint64_t seq = 0;

	if (!len || len > COLL_INL || len >= ce->direct_min ||
	    g->state != G_READY || !dlist_empty(&g->ops) || ce->in_step ||
	    (ep->caps & FI_HMEM) || (mr && mr->iface != FI_HMEM_SYSTEM))
		return 0;
	p = ofi_coll_tree_parent(v, fan);
	if (p != OFI_COLL_NONE) {
		p = ofi_coll_rank(p, root, n);
		ch = &g->chan[p];
		seq = ch->in_seq + 1;
		if (!ch->peer || !chunk_landed(g, p, seq, len, &src))
			return 0;
	}
	k = ofi_coll_tree_children(v, n, fan, child);
	for (i = 0; i < k; i++) {
		child[i] = ofi_coll_rank(child[i], root, n);
		if (!chan_store_ready(g, child[i]))
			return 0;
	}
	if (ch) {
		memcpy((void *)a->buf, src, len);
		ch->in_seq = seq;
		slot_prefetch_next(g, p, seq);
		ofi_yield_busy(); /* a stored chunk: work no provider saw */
		coll_chan_flush_ack(g, p);
	}
	coll_chan_flush_owed(g);
	/* Nothing can fail now: the completion first, so that the CQ's
	 * mutex is not the locked instruction that waits for the stores'
	 * lines to come over. Stored from a copy: once the entry is in
	 * the CQ, another thread may reuse the buffer. */
	memcpy(payload, a->buf, len);
	g->quiet++;
	g->fast++;
	ofi_ep_tx_complete(ep, a->context, FI_COLLECTIVE | OFI_CQ_QUIET,
			   a->flags | ep->tx_op_flags, true, 0);
	for (i = 0; i < k; i++) {
		ch = &g->chan[child[i]];
		coll_chunk_store(g, ch, ch->out_seq + 1, payload, len);
	}
	return 1;
}

static OFI_HOT ssize_t coll_post(struct fid_ep *ep_fid,
				 const struct coll_args *a)
{
	struct util_ep *ep = container_of(ep_fid, struct util_ep, ep_fid);
	struct ofi_coll_ep *ce = ep->coll;
	struct fi_user_op uop = {0};
	enum fi_datatype dt = a->kind == CK_BARRIER ? FI_UINT8 : a->dt;
	size_t dtsize = ofi_datatype_size(dt), len, all;
	struct coll_args b;
	struct coll_group *g;
	struct coll_op *op = NULL;
	ssize_t root = 0;
	int ret = -FI_EINVAL;

	if (!ce)
		return -FI_ENOSYS;
	ofi_mutex_lock(&ce->lock);
	g = coll_group_of(ce, a->coll_addr);
	if (!g || g->state == G_JOINING || !dtsize)
		goto err;
	if (g->state == G_FAILED) {
		ret = -g->err;
		goto err;
	}
	if (coll_reduces(a->kind) && !coll_op_supported(a->op, a->dt, &uop)) {
		ret = -FI_EOPNOTSUPP;
		goto err;
	}
	if (a->kind == CK_BCAST || a->kind == CK_REDUCE ||
	    a->kind == CK_SCATTER || a->kind == CK_GATHER) {
		root = coll_rank_of(g, a->root_addr);
		if (root < 0)
			goto err;
	}
	/* past fi_query_collective's datatype_attr.count */
	if (a->count > SIZE_MAX / dtsize / OFI_COLL_MAX_MEMBERS) {
		ret = -FI_EMSGSIZE;
		goto err;
	}
	if (a->flags & ~(uint64_t)COLL_OP_FLAGS)
		goto err;
	if (a->result_counted &&
	    a->result_count < coll_result_need(a, g->n, g->me == (size_t)root))
		goto err;
	if (__builtin_mul_overflow(a->count, dtsize, &len) ||
	    __builtin_mul_overflow(len, g->n, &all) ||
	    (a->count && coll_needs_buf(a, g->me == (size_t)root) && !a->buf) ||
	    (a->count && coll_needs_result(a, g->me == (size_t)root) &&
	     !a->result))
		goto err;
	/* before an op exists: the small broadcast allocates nothing */
	if (a->kind == CK_BCAST && bcast_fast(ep, g, a, len, (size_t)root)) {
		ofi_mutex_unlock(&ce->lock);
		return 0;
	}
	ret = -FI_ENOMEM;
	op = coll_op_alloc(ce);
	if (!op)
		goto err;
	op->context = a->context;
	op->flags = a->flags | ep->tx_op_flags;
	op->dt = dt;
	op->op = a->op;
	op->dtsize = dtsize;
	op->uop = uop;
	ret = coll_stage_args(ep, op, g->n, a, &b);
	if (!ret && !coll_result_aligned(op, &b, g->me == (size_t)root))
		ret = -FI_EINVAL;
	if (!ret)
		ret = coll_sched_build(op, g, &b, (size_t)root);
	if (ret)
		goto err;
	dlist_insert_tail(&op->entry, &g->ops);
	/* Its first writes go out now, not a progress call later: a peer
	 * already waiting for them gains that call's latency. */
	if (!ce->in_step && g->ops.next == &op->entry) {
		ce->in_step = true;
		ce->now_ms = 0;
		ce->posting = op;
		ce->posting_rma = ce->rma_posts;
		coll_group_progress(g);
		ce->posting = NULL;
		ce->in_step = false;
	}
	ofi_mutex_unlock(&ce->lock);
	return 0;
err:
	if (op)
		coll_op_free(ce, op);
	ofi_mutex_unlock(&ce->lock);
	return ret;
}

static ssize_t coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
			     uint64_t flags, void *context)
{
	struct coll_args a = {.kind = CK_BARRIER,
			      .coll_addr = coll_addr,
			      .flags = flags,
			      .context = context};

	return coll_post(ep, &a);
}

static OFI_HOT ssize_t coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
				    void *context)
{
	return coll_barrier2(ep, coll_addr, 0, context);
}

static ssize_t coll_broadcast(struct fid_ep *ep, void *buf, size_t count,
			      void *desc, fi_addr_t coll_addr,
			      fi_addr_t root_addr, enum fi_datatype datatype,
			      uint64_t flags, void *context)
{
	struct coll_args a = {CK_BCAST,	 buf,	    NULL,     count,
			      coll_addr, root_addr, datatype, FI_NOOP,
			      flags,	 context,   desc,     NULL};

	return coll_post(ep, &a);
}

static ssize_t coll_alltoall(struct fid_ep *ep, const void *buf, size_t count,
			     void *desc, void *result, void *result_desc,
			     fi_addr_t coll_addr, enum fi_datatype datatype,
			     uint64_t flags, void *context)
{
	struct coll_args a = {CK_ALLTOALL, buf,	      result,
			      count,	   coll_addr, FI_ADDR_NOTAVAIL,
			      datatype,	   FI_NOOP,   flags,
			      context,	   desc,      result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_allreduce(struct fid_ep *ep, const void *buf, size_t count,
			      void *desc, void *result, void *result_desc,
			      fi_addr_t coll_addr, enum fi_datatype datatype,
			      enum fi_op op, uint64_t flags, void *context)
{
	struct coll_args a = {
		CK_ALLREDUCE, buf, result, count,   coll_addr, FI_ADDR_NOTAVAIL,
		datatype,     op,  flags,  context, desc,      result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_allgather(struct fid_ep *ep, const void *buf, size_t count,
			      void *desc, void *result, void *result_desc,
			      fi_addr_t coll_addr, enum fi_datatype datatype,
			      uint64_t flags, void *context)
{
	struct coll_args a = {CK_ALLGATHER, buf,       result,
			      count,	    coll_addr, FI_ADDR_NOTAVAIL,
			      datatype,	    FI_NOOP,   flags,
			      context,	    desc,      result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_reduce_scatter(struct fid_ep *ep, const void *buf,
				   size_t count, void *desc, void *result,
				   void *result_desc, fi_addr_t coll_addr,
				   enum fi_datatype datatype, enum fi_op op,
				   uint64_t flags, void *context)
{
	struct coll_args a = {CK_REDUCE_SCATTER,
			      buf,
			      result,
			      count,
			      coll_addr,
			      FI_ADDR_NOTAVAIL,
			      datatype,
			      op,
			      flags,
			      context,
			      desc,
			      result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_reduce_op(struct fid_ep *ep, const void *buf, size_t count,
			      void *desc, void *result, void *result_desc,
			      fi_addr_t coll_addr, fi_addr_t root_addr,
			      enum fi_datatype datatype, enum fi_op op,
			      uint64_t flags, void *context)
{
	struct coll_args a = {CK_REDUCE, buf,	    result,   count,
			      coll_addr, root_addr, datatype, op,
			      flags,	 context,   desc,     result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_scatter(struct fid_ep *ep, const void *buf, size_t count,
			    void *desc, void *result, void *result_desc,
			    fi_addr_t coll_addr, fi_addr_t root_addr,
			    enum fi_datatype datatype, uint64_t flags,
			    void *context)
{
	struct coll_args a = {CK_SCATTER, buf,	     result,   count,
			      coll_addr,  root_addr, datatype, FI_NOOP,
			      flags,	  context,   desc,     result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_gather(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, void *result, void *result_desc,
			   fi_addr_t coll_addr, fi_addr_t root_addr,
			   enum fi_datatype datatype, uint64_t flags,
			   void *context)
{
	struct coll_args a = {CK_GATHER, buf,	    result,   count,
			      coll_addr, root_addr, datatype, FI_NOOP,
			      flags,	 context,   desc,     result_desc};

	return coll_post(ep, &a);
}

/* collective->msg: one ioc each way, the fields of the matching call. */
static ssize_t coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
			struct fi_ioc *resultv, void **result_desc,
			size_t result_count, uint64_t flags)
{
	static const enum coll_kind kinds[] = {
		[FI_BARRIER] = CK_BARRIER,
		[FI_BROADCAST] = CK_BCAST,
		[FI_ALLTOALL] = CK_ALLTOALL,
		[FI_ALLREDUCE] = CK_ALLREDUCE,
		[FI_ALLGATHER] = CK_ALLGATHER,
		[FI_REDUCE_SCATTER] = CK_REDUCE_SCATTER,
		[FI_REDUCE] = CK_REDUCE,
		[FI_SCATTER] = CK_SCATTER,
		[FI_GATHER] = CK_GATHER,
	};
	struct coll_args a;

	if (!msg || (unsigned)msg->coll > FI_GATHER || msg->iov_count > 1 ||
	    result_count > 1 || (msg->iov_count && !msg->msg_iov) ||
	    (result_count && !resultv))
		return -FI_EINVAL;
	memset(&a, 0, sizeof(a));
	a.kind = kinds[msg->coll];
	a.buf = msg->iov_count ? msg->msg_iov[0].addr : NULL;
	a.count = msg->iov_count ? msg->msg_iov[0].count : 0;
	a.result = result_count ? resultv[0].addr : NULL;
	/* what the result holds, checked against what the call writes */
	a.result_counted = result_count != 0;
	a.result_count = result_count ? resultv[0].count : 0;
	a.coll_addr = msg->coll_addr;
	a.root_addr = msg->root_addr;
	a.dt = msg->datatype;
	a.op = msg->op;
	a.flags = flags;
	a.context = msg->context;
	a.desc = msg->iov_count && msg->desc ? msg->desc[0] : NULL;
	a.result_desc = result_count && result_desc ? result_desc[0] : NULL;
	if (a.kind == CK_BCAST && result_count)
		return -FI_EINVAL;
	return coll_post(ep, &a);
}

const struct fi_ops_collective coll_call_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = coll_barrier,
	.broadcast = coll_broadcast,
	.alltoall = coll_alltoall,
	.allreduce = coll_allreduce,
	.allgather = coll_allgather,
	.reduce_scatter = coll_reduce_scatter,
	.reduce = coll_reduce_op,
	.scatter = coll_scatter,
	.gather = coll_gather,
	.msg = coll_msg,
	.barrier2 = coll_barrier2,
};

/* ------------------------------------------------------------------ */
/* fi_query_collective.                                                 */

int ofi_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			 struct fi_collective_attr *attr, uint64_t flags)
{
	size_t dtsize;
	struct fi_user_op uop;

	if (!domain || !attr || attr->mode)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_SCATTER)
		return -FI_EINVAL;
	if ((unsigned)coll > FI_GATHER)
		return -FI_EINVAL;
	attr->max_members = OFI_COLL_MAX_MEMBERS;
	if (coll == FI_BARRIER) {
		if (attr->op != FI_NOOP)
			return -FI_EOPNOTSUPP;
		attr->datatype_attr.count = 0;
		attr->datatype_attr.size = 0;
		return 0;
	}
	dtsize = ofi_datatype_size(attr->datatype);
	if (!dtsize)
		return -FI_EOPNOTSUPP;
	if (coll == FI_ALLREDUCE || coll == FI_REDUCE_SCATTER ||
	    coll == FI_REDUCE) {
		if (!coll_op_supported(attr->op, attr->datatype, &uop))
			return -FI_EOPNOTSUPP;
	} else if (attr->op != FI_NOOP && attr->op != FI_ATOMIC_WRITE) {
		return -FI_EOPNOTSUPP;
	}
	attr->datatype_attr.count = SIZE_MAX / dtsize / OFI_COLL_MAX_MEMBERS;
	attr->datatype_attr.size = dtsize;
	return 0;
}
