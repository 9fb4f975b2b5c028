/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_sched.c - unit tests of the collective engine's schedules
 * (prov/util/coll/coll_sched.c): for groups of 1 to 17 members and every
 * root, each member's step list is built as the engine builds it, then
 * all lists are run together in rounds, with the data: every send meets
 * a receive of the same length, chunk count and path in its channel's
 * order, no step reads a buffer a step of its phase writes, nobody waits
 * forever, the results are the collective's, and the rounds are what the
 * algorithm promises (log2 for recursive doubling, the tree's depth for
 * a broadcast, 2 (n - 1) for the ring).
 */
#include "coll_priv.h"
#include "util_common.h"

#define MAXN 17

/* A message in flight from one member to another: what its send read. */
struct msg {
	struct msg *next;
	size_t len, nchunks, round;
	bool direct;
	uint8_t data[];
};

struct member {
	struct ofi_coll_ep ce;
	struct coll_group g;
	struct coll_op op;
	uint64_t *in, *res;
	bool entered, done;
	size_t finished; /* the round its last phase completed */
};

struct sim {
	size_t n, count; /* elements of 8 bytes per block */
	bool comm;	 /* sum, else the canonical fold below */
	struct member m[MAXN];
	struct msg *head[MAXN][MAXN], **tail[MAXN][MAXN]; /* [from][to] */
	uint32_t lead[MAXN], leaders[MAXN];
};

/* Not commutative, not associative: any other order gives other bits. */
static uint64_t fold(uint64_t a, uint64_t b)
{
	return a * 3 + b;
}

static uint64_t val(size_t rank, size_t j)
{
	return (uint64_t)rank * 1000003 + j * 7 + 1;
}

static void reduce(struct sim *s, uint8_t *acc, const uint8_t *in, size_t len,
		   bool canonical)
{
	uint64_t a, b;
	size_t i;

	/* a commutative schedule never folds, a canonical one never sums */
	assert_true(canonical == !s->comm);
	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&a, acc + i, 8);
		memcpy(&b, in + i, 8);
		a = canonical ? fold(a, b) : a + b;
		memcpy(acc + i, &a, 8);
	}
}

static bool overlap(const uint8_t *a, size_t alen, const uint8_t *b,
		    size_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* The phase of @m starting at its op's cur: steps cur..*end. */
static size_t phase_end(struct member *m)
{
	size_t end = m->op.cur;

	while (!m->op.steps[end].last) {
		end++;
		assert_true(end < m->op.nsteps);
	}
	return end;
}

/* Entering a phase: its sends leave (their data as it is now), its
 * copies and folds run; receives wait. */
static void enter_phase(struct sim *s, size_t r, size_t round)
{
	struct member *m = &s->m[r];
	struct coll_step *st, *w;
	size_t i, j, end = phase_end(m);
	const uint8_t *wsrc;
	struct msg *msg;

	for (i = m->op.cur; i <= end; i++) {
		st = &m->op.steps[i];
		if (st->kind != ST_SEND)
			continue;
		/* what it reads, nothing else of the phase writes */
		for (j = m->op.cur; j <= end; j++) {
			w = &m->op.steps[j];
			if (w->kind != ST_SEND)
				assert_false(overlap(st->buf, st->len, w->buf,
						     w->len));
		}
		assert_true(st->peer < s->n && st->peer != r);
		msg = malloc(sizeof(*msg) + st->len);
		assert_non_null(msg);
		msg->next = NULL;
		msg->len = st->len;
		msg->nchunks = st->nchunks;
		msg->direct = st->direct;
		msg->round = round;
		/* a barrier's messages are empty, with no buffer */
		if (st->len)
			memcpy(msg->data, st->buf, st->len);
		*s->tail[r][st->peer] = msg;
		s->tail[r][st->peer] = &msg->next;
	}
	for (i = m->op.cur; i <= end; i++) {
		st = &m->op.steps[i];
		wsrc = st->src;
		if (st->kind == ST_COPY && st->len)
			memmove(st->buf, wsrc, st->len);
		else if (st->kind == ST_FOLD)
			reduce(s, st->buf, wsrc, st->len,
			       st->mode != RM_REDUCE);
		if (st->kind == ST_COPY || st->kind == ST_FOLD)
			st->done = true;
		else if (st->kind == ST_SEND)
			st->done = true;
	}
}

/* Receives of the current phase take what was sent in earlier rounds,
 * each from the head of its channel; true once all are done. */
static bool recv_phase(struct sim *s, size_t r, size_t round)
{
	struct member *m = &s->m[r];
	size_t i, end = phase_end(m);
	struct coll_step *st;
	struct msg *msg;
	bool all = true;

	for (i = m->op.cur; i <= end; i++) {
		st = &m->op.steps[i];
		if (st->done)
			continue;
		assert_int_equal(st->kind, ST_RECV);
		assert_true(st->peer < s->n && st->peer != r);
		msg = s->head[st->peer][r];
		if (!msg || msg->round >= round) {
			all = false;
			continue;
		}
		/* the matching send: same length, chunks and path */
		assert_int_equal(msg->len, st->len);
		assert_int_equal(msg->nchunks, st->nchunks);
		assert_int_equal(msg->direct, st->direct);
		s->head[st->peer][r] = msg->next;
		if (!msg->next)
			s->tail[st->peer][r] = &s->head[st->peer][r];
		if (st->mode == RM_COPY && st->len)
			memcpy(st->buf, msg->data, st->len);
		else if (st->mode != RM_COPY)
			reduce(s, st->buf, msg->data, st->len,
			       st->mode == RM_FOLD);
		free(msg);
		st->done = true;
	}
	return all;
}

/* Runs every member's op to its end; returns the rounds it took. */
static size_t run(struct sim *s)
{
	size_t r, t, i, j, rounds = 0, left = s->n;
	struct member *m;

	for (t = 0; left; t++) {
		assert_true(t <= 4 * s->n + 8); /* nobody waits forever */
		for (r = 0; r < s->n; r++) {
			m = &s->m[r];
			while (!m->done) {
				if (m->op.cur == m->op.nsteps) {
					m->done = true;
					m->finished = t;
					left--;
					break;
				}
				if (!m->entered) {
					enter_phase(s, r, t);
					m->entered = true;
				}
				if (!recv_phase(s, r, t))
					break;
				m->op.cur = phase_end(m) + 1;
				m->entered = false;
			}
		}
	}
	/* every send was received */
	for (i = 0; i < s->n; i++) {
		for (j = 0; j < s->n; j++)
			assert_null(s->head[i][j]);
	}
	for (r = 0; r < s->n; r++) {
		if (s->m[r].finished > rounds)
			rounds = s->m[r].finished;
	}
	return rounds;
}

/*
 * Each member's steps for call @kind, as coll_post builds them: @count
 * elements per block, slots of @slot bytes, transfers from @direct_min
 * bytes on direct, members sharing CPUs in runs of @share (0: none).
 */
static void build(struct sim *s, size_t n, enum coll_kind kind, size_t root,
		  size_t count, bool comm, size_t fanout, size_t slot,
		  size_t direct_min, size_t share)
{
	uint64_t place[MAXN];
	size_t r, i, j, in_len, res_len, nlead = n;
	struct coll_args a = {.kind = kind, .count = count};
	struct member *m;

	memset(s, 0, sizeof(*s));
	s->n = n;
	s->count = count;
	s->comm = comm;
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++)
			s->tail[i][j] = &s->head[i][j];
		place[i] = share ? 1 + i / share : 0;
	}
	if (share)
		nlead = ofi_coll_leaders(place, n, s->lead);
	for (i = 0, j = 0; i < n && nlead < n; i++) {
		if (s->lead[i] == i)
			s->leaders[j++] = (uint32_t)i;
	}
	/* reduce-scatter and alltoall read n blocks */
	in_len = count * 8 *
		 (kind == CK_REDUCE_SCATTER || kind == CK_ALLTOALL ||
				  kind == CK_SCATTER
			  ? n
			  : 1);
	res_len = count * 8 *
		  (kind == CK_ALLGATHER || kind == CK_GATHER ||
				   kind == CK_ALLTOALL
			   ? n
			   : 1);
	for (r = 0; r < n; r++) {
		m = &s->m[r];
		m->ce.fanout = fanout;
		m->ce.direct_min = direct_min;
		m->g.ce = &m->ce;
		m->g.n = n;
		m->g.me = r;
		m->g.slot_size = slot;
		if (nlead < n) {
			m->g.lead = s->lead;
			m->g.leaders = s->leaders;
			m->g.nlead = nlead;
			m->g.led = calloc(n, sizeof(*m->g.led));
			assert_non_null(m->g.led);
			for (i = 0; i < n; i++) {
				if (s->lead[i] == i && i == r)
					for (j = 0; j < nlead; j++)
						if (s->leaders[j] == r)
							m->g.lead_idx = j;
				if (s->lead[i] == r && i != r)
					m->g.led[m->g.nled++] = (uint32_t)i;
			}
		}
		m->in = calloc(in_len / 8 + 1, 8);
		m->res = calloc(res_len / 8 + 1, 8);
		assert_true(m->in && m->res);
		for (i = 0; i < in_len / 8; i++)
			m->in[i] = val(r, i);
		m->op.dtsize = 8;
		if (!comm) {
			m->op.uop.fn = (void (*)(const void *, void *, size_t,
						 enum fi_datatype, void *))(
				uintptr_t)1; /* not run */
			m->op.uop.commutative = false;
		}
		a.buf = kind == CK_BCAST ? (void *)m->res : (void *)m->in;
		if (kind == CK_BCAST && r == root && count)
			memcpy(m->res, m->in, count * 8);
		a.result = m->res;
		assert_int_equal(coll_sched_build(&m->op, &m->g, &a, root), 0);
		/* a lone broadcast root has nothing to do */
		assert_true(m->op.nsteps > 0 || kind == CK_BCAST);
		assert_true(!m->op.nsteps ||
			    m->op.steps[m->op.nsteps - 1].last);
	}
}

static void destroy(struct sim *s)
{
	size_t r;

	for (r = 0; r < s->n; r++) {
		coll_op_release(&s->m[r].op);
		free(s->m[r].g.led);
		free(s->m[r].in);
		free(s->m[r].res);
	}
}

/* Element j of everyone's block b reduced, in rank order when folded. */
static uint64_t reduced(struct sim *s, size_t b, size_t j)
{
	uint64_t acc = val(0, b * s->count + j);
	size_t r;

	for (r = 1; r < s->n; r++)
		acc = s->comm ? acc + val(r, b * s->count + j)
			      : fold(acc, val(r, b * s->count + j));
	return acc;
}

/*
 * Recursive doubling among @n: log2 p exchanges over the largest power of
 * two p <= n, exactly when n is p. Otherwise the ranks above p fold in
 * first and learn the result last: at most two hops more (one of them
 * overlaps the first exchange where a partner had nobody to wait for).
 */
static void check_rd_rounds(size_t rounds, size_t n)
{
	size_t k = 0;

	while (((size_t)2 << k) <= n)
		k++;
	if (n < 2)
		assert_int_equal(rounds, 0);
	else if (((size_t)1 << k) == n)
		assert_int_equal(rounds, k);
	else
		assert_true(rounds >= k + 1 && rounds <= k + 2);
}

/* Depth of the @f-ary heap of @n nodes. */
static size_t tree_depth(size_t n, size_t f)
{
	size_t d = 0, level = 1, total = 1;

	while (total < n) {
		level *= f;
		total += level;
		d++;
	}
	return d;
}

/*
 * Members pinned by runs of @share: each leader gathers its members, the
 * leaders exchange, then answer their members: two hops more than the
 * leaders' exchange at most, one at least.
 */
static void check_shared_rounds(size_t rounds, size_t n, size_t share)
{
	size_t nlead = (n + share - 1) / share, k = 0;

	if (nlead == n) {
		check_rd_rounds(rounds, n);
		return;
	}
	while (((size_t)2 << k) <= nlead)
		k++;
	/* at least the exchange and the answer, at most all four parts */
	assert_true(rounds >= k + 1);
	assert_true(rounds <= k + 2 + 2);
}

static void check_allreduce(struct sim *s)
{
	size_t r, j;

	for (r = 0; r < s->n; r++)
		for (j = 0; j < s->count; j++)
			assert_int_equal(s->m[r].res[j], reduced(s, 0, j));
}

static void test_barrier(void **state)
{
	struct sim s;
	size_t n, share;

	for (n = 1; n <= MAXN; n++) {
		build(&s, n, CK_BARRIER, 0, 0, true, 2, 64, SIZE_MAX, 0);
		check_rd_rounds(run(&s), n);
		destroy(&s);
		/* members pinned by twos and threes: leaders exchange */
		for (share = 2; share <= 3; share++) {
			build(&s, n, CK_BARRIER, 0, 0, true, 2, 64, SIZE_MAX,
			      share);
			check_shared_rounds(run(&s), n, share);
			destroy(&s);
		}
	}
}

static void test_allreduce(void **state)
{
	/* small by recursive doubling (one and several chunks, direct),
	 * large by the ring, canonical by reduce then broadcast */
	static const struct {
		size_t count, slot, direct_min, share;
		bool comm;
	} c[] = {
		{1, 64, SIZE_MAX, 0, true},
		{5, 16, SIZE_MAX, 0, true},
		{5, 16, 32, 0, true},
		{3, 64, SIZE_MAX, 2, true},
		{2053, 4096, SIZE_MAX, 0, true},
		{4, 16, SIZE_MAX, 0, false},
	};
	struct sim s;
	size_t n, i, rounds;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		for (n = 1; n <= MAXN; n++) {
			build(&s, n, CK_ALLREDUCE, 0, c[i].count, c[i].comm, 2,
			      c[i].slot, c[i].direct_min, c[i].share);
			rounds = run(&s);
			check_allreduce(&s);
			if (!c[i].comm)
				assert_int_equal(rounds,
						 n < 2 ? 0
						       : 1 + tree_depth(n, 2));
			else if (c[i].count * 8 >= OFI_COLL_RING_MIN)
				assert_int_equal(rounds, 2 * (n - 1));
			else if (c[i].share)
				check_shared_rounds(rounds, n, c[i].share);
			else
				check_rd_rounds(rounds, n);
			destroy(&s);
		}
	}
}

static void test_bcast(void **state)
{
	struct sim s;
	size_t n, root, r, j, f;

	for (f = 1; f <= 3; f++) {
		for (n = 1; n <= MAXN; n++) {
			for (root = 0; root < n; root++) {
				build(&s, n, CK_BCAST, root, 3, true, f, 16,
				      SIZE_MAX, 0);
				assert_int_equal(run(&s), tree_depth(n, f));
				for (r = 0; r < n; r++)
					for (j = 0; j < 3; j++)
						assert_int_equal(s.m[r].res[j],
								 val(root, j));
				destroy(&s);
			}
		}
	}
}

static void test_reduce(void **state)
{
	struct sim s;
	size_t n, root, j, rounds;
	int comm;

	for (comm = 0; comm <= 1; comm++) {
		for (n = 1; n <= MAXN; n++) {
			for (root = 0; root < n; root++) {
				build(&s, n, CK_REDUCE, root, 3, comm, 2, 16,
				      SIZE_MAX, 0);
				rounds = run(&s);
				for (j = 0; j < 3; j++)
					assert_int_equal(s.m[root].res[j],
							 reduced(&s, 0, j));
				/* a tree up, or everyone straight to root */
				assert_int_equal(rounds,
						 comm ? tree_depth(n, 2)
						      : (n > 1 ? 1 : 0));
				destroy(&s);
			}
		}
	}
}

static void test_blocks(void **state)
{
	struct sim s;
	size_t n, root, r, b, j, cnt = 2;

	for (n = 1; n <= MAXN; n++) {
		for (root = 0; root < n; root++) {
			build(&s, n, CK_GATHER, root, cnt, true, 2, 64,
			      SIZE_MAX, 0);
			assert_int_equal(run(&s), n > 1);
			for (b = 0; b < n; b++)
				for (j = 0; j < cnt; j++)
					assert_int_equal(
						s.m[root].res[b * cnt + j],
						val(b, j));
			destroy(&s);

			build(&s, n, CK_SCATTER, root, cnt, true, 2, 64,
			      SIZE_MAX, 0);
			assert_int_equal(run(&s), n > 1);
			for (r = 0; r < n; r++)
				for (j = 0; j < cnt; j++)
					assert_int_equal(
						s.m[r].res[j],
						val(root, r * cnt + j));
			destroy(&s);
		}
		build(&s, n, CK_ALLGATHER, 0, cnt, true, 2, 64, SIZE_MAX, 0);
		run(&s);
		for (r = 0; r < n; r++)
			for (b = 0; b < n; b++)
				for (j = 0; j < cnt; j++)
					assert_int_equal(
						s.m[r].res[b * cnt + j],
						val(b, j));
		destroy(&s);

		build(&s, n, CK_ALLTOALL, 0, cnt, true, 2, 16, SIZE_MAX, 0);
		assert_true(run(&s) <= n);
		for (r = 0; r < n; r++)
			for (b = 0; b < n; b++)
				for (j = 0; j < cnt; j++)
					assert_int_equal(
						s.m[r].res[b * cnt + j],
						val(b, r * cnt + j));
		destroy(&s);

		build(&s, n, CK_REDUCE_SCATTER, 0, cnt, true, 2, 16, SIZE_MAX,
		      0);
		run(&s);
		for (r = 0; r < n; r++)
			for (j = 0; j < cnt; j++)
				assert_int_equal(s.m[r].res[j],
						 reduced(&s, r, j));
		destroy(&s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_barrier),
		cmocka_unit_test(test_allreduce),
		cmocka_unit_test(test_bcast),
		cmocka_unit_test(test_reduce),
		cmocka_unit_test(test_blocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
