/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_sched.c - schedules: the step list each member runs for a
 * collective, built from the group's shape only (size, rank, root,
 * fan-out, slot size, direct threshold, CPU leaders), never from its
 * state: all members derive matching lists, and the unit test
 * (tests/unit/coll_sched.c) runs them together without a network.
 */
#include "coll_priv.h"

/* ------------------------------------------------------------------ */
/* Schedules.                                                           */

size_t ofi_coll_tree_parent(size_t vrank, size_t fanout)
{
	if (!vrank || !fanout)
		return OFI_COLL_NONE;
	if (fanout == 2) /* the default: a shift, not a division */
		return (vrank - 1) >> 1;
	return (vrank - 1) / fanout;
}

size_t ofi_coll_tree_children(size_t vrank, size_t n, size_t fanout,
			      size_t *child)
{
	size_t i, c, k = 0;

	for (i = 1; i <= fanout; i++) {
		c = vrank * fanout + i;
		if (c >= n || c <= vrank)
			break;
		child[k++] = c;
	}
	return k;
}

size_t ofi_coll_leaders(const uint64_t *place, size_t n, uint32_t *lead)
{
	size_t i, j, nlead = 0;

	for (i = 0; i < n; i++) {
		lead[i] = (uint32_t)i;
		/* once per join, and only pinned ranks scan: quadratic
		 * at worst (4096 pinned members: milliseconds) */
		for (j = 0; place[i] && j < i; j++) {
			if (lead[j] == j && place[j] == place[i]) {
				lead[i] = (uint32_t)j;
				break;
			}
		}
		nlead += lead[i] == i;
	}
	return nlead;
}

/* ------------------------------------------------------------------ */
/* Schedule building.                                                   */

static OFI_HOT int sched_step_add(struct coll_op *op, struct coll_group *g,
				  uint8_t kind, uint8_t mode, size_t peer,
				  void *buf, const void *src, size_t len)
{
	struct coll_step *s;

	if (!op->cap) {
		op->steps = op->steps_inl;
		op->cap = OFI_COLL_STEPS_INL;
	} else if (op->nsteps == op->cap) {
		s = malloc(op->cap * 2 * sizeof(*s));
		if (!s)
			return -FI_ENOMEM;
		memcpy(s, op->steps, op->nsteps * sizeof(*s));
		if (op->steps != op->steps_inl)
			free(op->steps);
		op->steps = s;
		op->cap *= 2;
	}
	s = &op->steps[op->nsteps++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->mode = mode;
	s->peer = (uint32_t)peer;
	s->buf = buf;
	s->src = src;
	s->len = len;
	s->direct = (kind == ST_SEND || kind == ST_RECV) &&
		    len >= g->ce->direct_min;
	s->nchunks = len && !s->direct ? (len + group_chunk_size(g) - 1) /
						 group_chunk_size(g)
				       : 1;
	s->last = true;
	return 0;
}

/* The next step joins the phase of the previous one. */
static void sched_same_phase(struct coll_op *op)
{
	if (op->nsteps)
		op->steps[op->nsteps - 1].last = false;
}

/* Broadcast of @len bytes at @buf from @root down the fan-out tree. */
static int sched_bcast(struct coll_op *op, struct coll_group *g, void *buf,
		       size_t len, size_t root)
{
	size_t n = g->n, v = ofi_coll_vrank(g->me, root, n);
	size_t fan = g->ce->fanout, child[fan ? fan : 1], k, i, p;
	int ret = 0;

	p = ofi_coll_tree_parent(v, fan);
	if (p != OFI_COLL_NONE)
		ret = sched_step_add(op, g, ST_RECV, RM_COPY,
				     ofi_coll_rank(p, root, n), buf, NULL, len);
	k = ofi_coll_tree_children(v, n, fan, child);
	for (i = 0; i < k && !ret; i++) {
		if (i)
			sched_same_phase(op);
		ret = sched_step_add(op, g, ST_SEND, 0,
				     ofi_coll_rank(child[i], root, n), buf,
				     NULL, len);
	}
	return ret;
}

/*
 * Reduction of everyone's @in into @acc at @root (acc may alias in only
 * when it is the root's). Commutative: binary tree, children folded as
 * they arrive. Otherwise canonical order: the root folds member 0, 1, ..
 * in turn, each step its own phase.
 */
static int sched_reduce(struct coll_op *op, struct coll_group *g,
			const void *in, uint8_t *acc, size_t len, size_t root,
			bool commutative)
{
	size_t n = g->n, v = ofi_coll_vrank(g->me, root, n);
	size_t child[2], k, i, m, p;
	int ret;

	if (!commutative) {
		if (g->me != root)
			return sched_step_add(op, g, ST_SEND, 0, root,
					      (void *)in, NULL, len);
		for (i = 0; i < n; i++) {
			m = ofi_coll_canon_member(i);
			if (!i && m == g->me)
				ret = sched_step_add(op, g, ST_COPY, 0, 0, acc,
						     in, len);
			else if (!i)
				ret = sched_step_add(op, g, ST_RECV, RM_COPY, m,
						     acc, NULL, len);
			else if (m == g->me)
				ret = sched_step_add(op, g, ST_FOLD, 0, 0, acc,
						     in, len);
			else
				ret = sched_step_add(op, g, ST_RECV, RM_FOLD, m,
						     acc, NULL, len);
			if (ret)
				return ret;
		}
		return 0;
	}
	ret = sched_step_add(op, g, ST_COPY, 0, 0, acc, in, len);
	k = ofi_coll_tree_children(v, n, 2, child);
	for (i = 0; i < k && !ret; i++) {
		if (i)
			sched_same_phase(op);
		ret = sched_step_add(op, g, ST_RECV, RM_REDUCE,
				     ofi_coll_rank(child[i], root, n), acc,
				     NULL, len);
	}
	p = ofi_coll_tree_parent(v, 2);
	if (!ret && p != OFI_COLL_NONE)
		ret = sched_step_add(op, g, ST_SEND, 0,
				     ofi_coll_rank(p, root, n), acc, NULL, len);
	return ret;
}

/*
 * Recursive doubling of @acc among @n members, this one the @me-th:
 * member i is group rank @map[i] (NULL: i).
 */
static OFI_HOT int sched_rd(struct coll_op *op, struct coll_group *g,
			    const uint32_t *map, size_t n, size_t me,
			    uint8_t *acc, size_t len)
{
	size_t p = ofi_coll_pow2_floor(n), mask;
	int ret = 0;

#define RD_RANK(i) (map ? (size_t)map[i] : (i))
	if (me >= p) {
		ret = sched_step_add(op, g, ST_SEND, 0, RD_RANK(me - p), acc,
				     NULL, len);
		return ret ? ret
			   : sched_step_add(op, g, ST_RECV, RM_COPY,
					    RD_RANK(me - p), acc, NULL, len);
	}
	if (me + p < n)
		ret = sched_step_add(op, g, ST_RECV, RM_REDUCE, RD_RANK(me + p),
				     acc, NULL, len);
	for (mask = 1; mask < p && !ret; mask <<= 1) {
		/* acc is being sent: the partner's lands in tmp first */
		ret = sched_step_add(op, g, ST_SEND, 0, RD_RANK(me ^ mask), acc,
				     NULL, len);
		if (!ret) {
			sched_same_phase(op);
			ret = sched_step_add(op, g, ST_RECV, RM_COPY,
					     RD_RANK(me ^ mask), op->tmp, NULL,
					     len);
		}
		if (!ret)
			ret = sched_step_add(op, g, ST_FOLD, RM_REDUCE, 0, acc,
					     op->tmp, len);
	}
	if (!ret && me + p < n)
		ret = sched_step_add(op, g, ST_SEND, 0, RD_RANK(me + p), acc,
				     NULL, len);
#undef RD_RANK
	return ret;
}

/* A leader's members (ofi_coll_leaders): their values folded into @acc
 * as they come (@gather), or the result sent to them all. */
static int sched_members(struct coll_op *op, struct coll_group *g, uint8_t *acc,
			 size_t len, bool gather)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < g->nled && !ret; i++) {
		if (i)
			sched_same_phase(op);
		ret = gather ? sched_step_add(op, g, ST_RECV, RM_REDUCE,
					      g->led[i], acc, NULL, len)
			     : sched_step_add(op, g, ST_SEND, 0, g->led[i], acc,
					      NULL, len);
	}
	return ret;
}

/*
 * Small commutative allreduce of @len bytes (and barrier, @len 0) by
 * recursive doubling: log2(p) exchanges instead of a reduce up and a
 * broadcast down the tree. Partners fold the same two partial values, so
 * every rank ends with the same bits. Where members share CPUs (g->lead),
 * among their leaders only (see ofi_coll_leaders).
 */
static OFI_HOT int sched_allreduce_rd(struct coll_op *op, struct coll_group *g,
				      const void *in, uint8_t *acc, size_t len)
{
	size_t lead;
	int ret;

	if (len) {
		op->tmp = len <= sizeof(op->tmp_inl) ? (uint8_t *)op->tmp_inl
						     : malloc(len);
		if (!op->tmp)
			return -FI_ENOMEM;
	}
	ret = sched_step_add(op, g, ST_COPY, 0, 0, acc, in, len);
	if (ret || !g->lead)
		return ret ? ret : sched_rd(op, g, NULL, g->n, g->me, acc, len);
	lead = g->lead[g->me];
	if (lead != g->me) {
		ret = sched_step_add(op, g, ST_SEND, 0, lead, acc, NULL, len);
		return ret ? ret
			   : sched_step_add(op, g, ST_RECV, RM_COPY, lead, acc,
					    NULL, len);
	}
	ret = sched_members(op, g, acc, len, true);
	if (!ret)
		ret = sched_rd(op, g, g->leaders, g->nlead, g->lead_idx, acc,
			       len);
	return ret ? ret : sched_members(op, g, acc, len, false);
}

/*
 * Large commutative allreduce of @count elements: ring reduce-scatter,
 * then ring allgather (ofi_coll_ring_*), each rank moving about
 * 2 (n - 1) / n of the buffer instead of the tree's whole buffer per
 * level both ways; each block is reduced along one chain, so every rank
 * ends with the same bits. The input is never copied whole: a rank's own
 * block leaves from it at the first step (the allgather brings the
 * result back), and every other block is copied just before the step
 * that folds into it.
 */
/* Step @k of the ring's reduce-scatter (@rs) or allgather. */
static int ring_step(struct coll_op *op, struct coll_group *g,
		     const uint8_t *in, uint8_t *acc, size_t count, size_t k,
		     bool rs)
{
	size_t n = g->n, sz = op->dtsize, left = (g->me + n - 1) % n;
	size_t b, first, cnt;
	int ret;

	b = rs ? ofi_coll_ring_rs_send(g->me, k, n)
	       : ofi_coll_ring_ag_send(g->me, k, n);
	ofi_coll_block(count, n, b, &first, &cnt);
	ret = sched_step_add(op, g, ST_SEND, 0, (g->me + 1) % n,
			     (uint8_t *)(rs && !k ? in : acc) + first * sz,
			     NULL, cnt * sz);
	if (ret)
		return ret;
	sched_same_phase(op);
	b = rs ? ofi_coll_ring_rs_send(left, k, n)
	       : ofi_coll_ring_ag_send(left, k, n);
	ofi_coll_block(count, n, b, &first, &cnt);
	if (rs) {
		ret = sched_step_add(op, g, ST_COPY, 0, 0, acc + first * sz,
				     in + first * sz, cnt * sz);
		if (ret)
			return ret;
		sched_same_phase(op);
	}
	return sched_step_add(op, g, ST_RECV, rs ? RM_REDUCE : RM_COPY, left,
			      acc + first * sz, NULL, cnt * sz);
}

static int sched_allreduce_ring(struct coll_op *op, struct coll_group *g,
				const void *in, uint8_t *acc, size_t count)
{
	size_t k;
	int ret = 0;

	if (g->n == 1)
		return sched_step_add(op, g, ST_COPY, 0, 0, acc, in,
				      count * op->dtsize);
	for (k = 0; k + 1 < g->n && !ret; k++)
		ret = ring_step(op, g, in, acc, count, k, true);
	for (k = 0; k + 1 < g->n && !ret; k++)
		ret = ring_step(op, g, in, acc, count, k, false);
	return ret;
}

/* Root sends block i to member i (scatter) or receives it (gather). */
static int sched_blocks(struct coll_op *op, struct coll_group *g, bool out,
			uint8_t *all, uint8_t *mine, size_t blk, size_t root)
{
	size_t i;
	int ret = 0;

	if (g->me != root)
		return sched_step_add(op, g, out ? ST_RECV : ST_SEND, RM_COPY,
				      root, mine, NULL, blk);
	for (i = 0; i < g->n && !ret; i++) {
		if (i)
			sched_same_phase(op);
		if (i == g->me)
			ret = out ? sched_step_add(op, g, ST_COPY, 0, 0, mine,
						   all + i * blk, blk)
				  : sched_step_add(op, g, ST_COPY, 0, 0,
						   all + i * blk, mine, blk);
		else
			ret = sched_step_add(op, g, out ? ST_SEND : ST_RECV,
					     RM_COPY, i, all + i * blk, NULL,
					     blk);
	}
	return ret;
}

static int sched_alltoall(struct coll_op *op, struct coll_group *g,
			  const uint8_t *in, uint8_t *out, size_t blk)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < g->n && !ret; i++) {
		if (i)
			sched_same_phase(op);
		if (i == g->me) {
			ret = sched_step_add(op, g, ST_COPY, 0, 0,
					     out + i * blk, in + i * blk, blk);
			continue;
		}
		ret = sched_step_add(op, g, ST_SEND, 0, i,
				     (void *)(in + i * blk), NULL, blk);
		if (!ret) {
			sched_same_phase(op);
			ret = sched_step_add(op, g, ST_RECV, RM_COPY, i,
					     out + i * blk, NULL, blk);
		}
	}
	return ret;
}

/*
 * The whole schedule of call @a on this member of @g, @root its group
 * rank (0 where the call has none): the one place that picks the
 * algorithm for each collective.
 */
int coll_sched_build(struct coll_op *op, struct coll_group *g,
		     const struct coll_args *a, size_t root)
{
	size_t len = a->count * op->dtsize, n = g->n;
	bool comm = !op->uop.fn || op->uop.commutative;
	uint8_t *res = a->result;
	int ret;

	switch (a->kind) {
	case CK_BARRIER:
		return sched_allreduce_rd(op, g, NULL, NULL, 0);
	case CK_BCAST:
		return sched_bcast(op, g, (void *)a->buf, len, root);
	case CK_REDUCE:
		if (g->me != root) {
			op->tmp = malloc(len ? len : 1);
			if (!op->tmp)
				return -FI_ENOMEM;
			res = op->tmp;
		}
		return sched_reduce(op, g, a->buf, res, len, root, comm);
	case CK_ALLREDUCE:
		if (comm && len >= OFI_COLL_RING_MIN && a->count >= n)
			return sched_allreduce_ring(op, g, a->buf, res,
						    a->count);
		if (comm)
			return sched_allreduce_rd(op, g, a->buf, res, len);
		ret = sched_reduce(op, g, a->buf, res, len, 0, comm);
		return ret ? ret : sched_bcast(op, g, res, len, 0);
	case CK_ALLGATHER:
		ret = sched_blocks(op, g, false, res, (uint8_t *)a->buf, len,
				   0);
		return ret ? ret : sched_bcast(op, g, res, len * n, 0);
	case CK_GATHER:
		return sched_blocks(op, g, false, res, (uint8_t *)a->buf, len,
				    root);
	case CK_SCATTER:
		return sched_blocks(op, g, true, (uint8_t *)a->buf, res, len,
				    root);
	case CK_ALLTOALL:
		return sched_alltoall(op, g, a->buf, res, len);
	default: /* CK_REDUCE_SCATTER: reduce n blocks at 0, scatter */
		op->tmp = malloc(len > 0 ? len * n : 1);
		if (!op->tmp)
			return -FI_ENOMEM;
		ret = sched_reduce(op, g, a->buf, op->tmp, len * n, 0, comm);
		return ret ? ret
			   : sched_blocks(op, g, true, op->tmp, res, len, 0);
	}
}
