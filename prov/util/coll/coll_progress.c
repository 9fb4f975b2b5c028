/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_progress.c - ops in flight: their allocation and staging of
 * device buffers, running a step and an op's phases, completion, and
 * the engine's progress (per group, per endpoint, from the EQ).
 */
#include "coll_priv.h"

static int step_run(struct coll_group *g, struct coll_op *op,
		    struct coll_step *s)
{
	switch (s->kind) {
	case ST_SEND:
		return coll_step_send(g, op, s);
	case ST_RECV:
		return coll_step_recv(g, op, s);
	case ST_COPY:
		if (s->chunk < s->nchunks && s->len)
			memmove(s->buf, s->src, s->len);
		s->chunk = s->nchunks;
		return 1;
	default:
		return coll_step_fold(op, s);
	}
}

/* ------------------------------------------------------------------ */
/* Operations.                                                          */

/*
 * An op for a new call, under the engine's lock: the endpoint's spare one
 * if it has it (a loop of small collectives allocates nothing), with what
 * a call reads before setting cleared (sched_step_add clears each step it takes;
 * coll_stage sets the stages' iface and all else only for device memory).
 */
struct coll_op *coll_op_alloc(struct ofi_coll_ep *ce)
{
	struct coll_op *op = ce->spare;

	ce->spare = NULL;
	if (!op)
		op = malloc(sizeof(*op));
	if (!op)
		return NULL;
	op->st_buf.host = NULL;
	op->st_res.host = NULL;
	op->uop.fn = NULL;
	op->steps = NULL;
	op->nsteps = op->cap = op->cur = 0;
	op->tmp = NULL;
	return op;
}

/* What an op holds besides itself. */
void coll_op_release(struct coll_op *op)
{
	/* Tested first: a free(NULL) is a call into libc, whose page an op
	 * of host memory touches for nothing (see OFI_HOT). */
	if (op->st_buf.host)
		free(op->st_buf.host);
	if (op->st_res.host)
		free(op->st_res.host);
	if (op->steps && op->steps != op->steps_inl)
		free(op->steps);
	if (op->tmp && op->tmp != (uint8_t *)op->tmp_inl)
		free(op->tmp);
}

/* Under the engine's lock: the op kept as the spare, or freed. */
void coll_op_free(struct ofi_coll_ep *ce, struct coll_op *op)
{
	coll_op_release(op);
	if (ce->spare) {
		free(op);
		return;
	}
	ce->spare = op;
}

/*
 * src/hmem belongs to the core: a loadable provider that links prov/util
 * alone (tests/prov) has none, and no FI_HMEM; weak references let it
 * load, and a device buffer there is refused.
 */
#pragma weak ofi_get_hmem_iface
#pragma weak ofi_copy_from_hmem_iov
#pragma weak ofi_copy_to_hmem_iov

/* Device memory of @ep (an MR's iface in @desc, else the pointer's own). */
OFI_HOT int coll_stage(struct util_ep *ep, void *desc, const void *user,
		       size_t len, bool in, bool out, struct coll_stage *st)
{
	struct util_mr *mr = desc;
	struct iovec iov = {(void *)user, len};
	ssize_t n;

	st->iface = FI_HMEM_SYSTEM;
	if (!user || !len)
		return 0;
	if (mr) {
		st->iface = mr->iface;
		st->device = mr->device;
	} else if ((ep->caps & FI_HMEM) && ofi_get_hmem_iface) {
		st->iface = ofi_get_hmem_iface(user, &st->device, NULL);
	}
	if (st->iface == FI_HMEM_SYSTEM)
		return 0;
	if (!ofi_copy_from_hmem_iov || !ofi_copy_to_hmem_iov)
		return -FI_ENOSYS;
	st->host = malloc(len);
	if (!st->host)
		return -FI_ENOMEM;
	st->user = (void *)user;
	st->len = len;
	st->out = out;
	if (!in)
		return 0;
	n = ofi_copy_from_hmem_iov(&ep->domain->hmem_override, st->host, len,
				   st->iface, st->device, &iov, 1, 0);
	return n == (ssize_t)len ? 0 : n < 0 ? (int)n : -FI_EIO;
}

static OFI_HOT int coll_unstage(struct util_ep *ep, struct coll_stage *st)
{
	struct iovec iov = {st->user, st->len};
	ssize_t n;

	if (!st->host || !st->out)
		return 0;
	n = ofi_copy_to_hmem_iov(&ep->domain->hmem_override, st->iface,
				 st->device, &iov, 1, 0, st->host, st->len);
	return n == (ssize_t)st->len ? 0 : n < 0 ? (int)-n : FI_EIO;
}

/* What direct receives of @op still hold registered (a failed op). */
void coll_op_unregister(struct coll_group *g, struct coll_op *op)
{
	size_t i;

	for (i = 0; i < op->nsteps; i++)
		coll_direct_unregister(g, &op->steps[i]);
}

static OFI_HOT void op_complete(struct coll_group *g, struct coll_op *op,
				int err)
{
	struct ofi_coll_ep *ce = g->ce;
	uint64_t flags = FI_COLLECTIVE;

	coll_op_unregister(g, op);
	if (!err)
		err = coll_unstage(ce->ep, &op->st_buf);
	if (!err)
		err = coll_unstage(ce->ep, &op->st_res);
	dlist_remove(&op->entry);
	/* Done by its post with stores only: nothing left to progress */
	if (!err && op == ce->posting && ce->rma_posts == ce->posting_rma) {
		flags |= OFI_CQ_QUIET;
		g->quiet++;
	}
	ofi_ep_tx_complete(ce->ep, op->context, flags, op->flags, true, err);
	coll_op_free(ce, op);
}

/* Runs the head op's current phase; 1 when the op finished. */
static int op_progress(struct coll_group *g, struct coll_op *op)
{
	size_t i, end;
	bool all;
	int ret;

	while (op->cur < op->nsteps) {
		for (end = op->cur; !op->steps[end].last; end++)
			;
		all = true;
		for (i = op->cur; i <= end; i++) {
			if (op->steps[i].done)
				continue;
			ret = step_run(g, op, &op->steps[i]);
			if (ret < 0)
				return ret;
			op->steps[i].done = ret;
			all = all && ret;
		}
		if (!all)
			return 0;
		op->cur = end + 1;
	}
	return 1;
}

OFI_HOT void coll_group_progress(struct coll_group *g)
{
	struct coll_op *op;
	int ret;

	coll_chan_flush_owed(g);
	while (!dlist_empty(&g->ops)) {
		op = container_of(g->ops.next, struct coll_op, entry);
		if (g->state == G_FAILED) {
			op_complete(g, op, g->err);
			continue;
		}
		ret = op_progress(g, op);
		if (ret < 0) {
			if (g->state != G_FAILED)
				coll_fail_peer(g, -ret);
			op_complete(g, op, -ret);
			continue;
		}
		if (!ret)
			return;
		op_complete(g, op, 0);
	}
}

/* Under the engine's lock: the closed groups whose writes all completed,
 * moved to @done. */
static void coll_reap(struct ofi_coll_ep *ce, struct dlist_entry *done)
{
	struct dlist_entry *item, *next;
	struct coll_group *g;

	dlist_foreach_safe(&ce->closing, item, next) {
		g = container_of(item, struct coll_group, entry);
		if (coll_group_busy(g))
			continue;
		dlist_remove(&g->entry);
		dlist_insert_tail(&g->entry, done);
	}
}

static OFI_HOT void coll_step_all(struct ofi_coll_ep *ce)
{
	struct dlist_entry *item, *next;
	struct dlist_entry done;
	struct coll_group *g;

	dlist_init(&done);
	ofi_mutex_lock(&ce->lock);
	if (ce->in_step)
		goto out;
	ce->in_step = true;
	ce->now_ms = 0;
	dlist_foreach_safe(&ce->groups, item, next) {
		g = container_of(item, struct coll_group, entry);
		if (g->state == G_JOINING)
			coll_join_progress(g);
		else
			coll_group_progress(g);
	}
	if (OFI_UNLIKELY(!dlist_empty(&ce->closing)))
		coll_reap(ce, &done);
	ce->in_step = false;
out:
	ofi_mutex_unlock(&ce->lock);
	while (OFI_UNLIKELY(!dlist_empty(&done))) {
		g = container_of(done.next, struct coll_group, entry);
		dlist_remove(&g->entry);
		coll_group_free(g);
	}
}

/* A group this member leads (ofi_coll_leaders) has an op waiting. */
static bool coll_leader_waits(struct ofi_coll_ep *ce)
{
	struct dlist_entry *item;
	struct coll_group *g;
	bool waits = false;

	if (!__atomic_load_n(&ce->leading, __ATOMIC_RELAXED))
		return false;
	ofi_mutex_lock(&ce->lock); /* another thread may close a group */
	dlist_foreach(&ce->groups, item) {
		g = container_of(item, struct coll_group, entry);
		if (coll_group_leads(g) && g->state == G_READY &&
		    !dlist_empty(&g->ops)) {
			waits = true;
			break;
		}
	}
	ofi_mutex_unlock(&ce->lock);
	return waits;
}

/*
 * A leader that has just written to another leader looks for its answer
 * once more before the caller gives the CPU away: that leader runs on
 * another CPU, while the members next on ours wait for us (tcp, 4 ranks
 * on 2 CPUs, barrier: 60 to 49 us).
 */
OFI_HOT void coll_progress(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;
	uint64_t posts = ce->rma_posts;

	ce->prov_progress(ep);
	coll_step_all(ce);
	if (ce->rma_posts == posts || !ce->fold || !coll_leader_waits(ce))
		return;
	ce->prov_progress(ep);
	coll_step_all(ce);
}

void coll_eq_progress(struct util_eq_prog *prog)
{
	struct ofi_coll_ep *ce =
		container_of(prog, struct ofi_coll_ep, eq_prog);

	coll_progress(ce->ep);
}
