/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_coll.c - unit tests of AV sets (prov/util/util_av_set.c: initial
 * ranges and their holes, order rules of union/intersect/diff/insert/
 * remove, errors, two threads combining two sets both ways) and
 * of the collective engine's schedules (tree shapes, canonical order,
 * recursive doubling and ring allreduce, for group sizes 1 to 64), plus
 * fi_query_collective's answers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_timedjoin_np */
#endif
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "util_common.h"
#include "coll_priv.h" /* the schedules */

/* Addresses are 8 opaque bytes: member i is i + 1000. */
static const struct util_av_attr bin_attr = {.addrlen = sizeof(uint64_t)};

static struct fid_av *av_with(struct util_env *env, enum fi_av_type type,
			      size_t n)
{
	struct fi_av_attr attr = {.type = type, .count = n};
	struct fid_av *av;
	uint64_t a;
	fi_addr_t fa;
	size_t i;

	util_env_open(env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	assert_int_equal(ofi_av_open(&env->domain->domain_fid, &attr, &bin_attr,
				     &av, NULL),
			 0);
	for (i = 0; i < n; i++) {
		a = 1000 + i;
		assert_int_equal(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
		assert_int_equal(fa, i);
	}
	return av;
}

static struct fid_av_set *set_range(struct fid_av *av, fi_addr_t start,
				    fi_addr_t end, uint64_t stride)
{
	struct fi_av_set_attr attr = {
		.start_addr = start, .end_addr = end, .stride = stride};
	struct fid_av_set *set;

	assert_int_equal(fi_av_set(av, &attr, &set, NULL), 0);
	return set;
}

/* The set's members, in order, as a string "a,b,c". */
static const char *members(struct fid_av_set *set)
{
	static char buf[256];
	struct util_av *av;
	fi_addr_t *a;
	size_t n, i, off = 0;

	assert_int_equal(ofi_av_set_members(set, &av, &a, &n), 0);
	buf[0] = 0;
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%llu",
					i ? "," : "", (unsigned long long)a[i]);
	free(a);
	return buf;
}

static void test_av_set_ranges(void **state)
{
	struct fi_av_set_attr attr = {0};
	struct util_env env;
	struct fid_av_set *s;
	struct fid_av *av = av_with(&env, FI_AV_TABLE, 8);

	s = set_range(av, 1, 7, 3);
	assert_string_equal(members(s), "1,4,7");
	assert_int_equal(fi_close(&s->fid), 0);
	s = set_range(av, 0, 7, 1);
	assert_string_equal(members(s), "0,1,2,3,4,5,6,7");
	assert_int_equal(fi_close(&s->fid), 0);
	/* empty, and everything */
	s = set_range(av, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0);
	assert_string_equal(members(s), "");
	assert_int_equal(fi_close(&s->fid), 0);
	attr.flags = FI_UNIVERSE;
	assert_int_equal(fi_av_set(av, &attr, &s, NULL), 0);
	assert_string_equal(members(s), "0,1,2,3,4,5,6,7");
	/* the AV is busy while a set uses it */
	assert_int_equal(fi_close(&av->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&s->fid), 0);
	/* errors: past the AV, count too small, stride 0, bad flags */
	attr.flags = 0;
	attr.start_addr = 0;
	attr.end_addr = 8;
	attr.stride = 1;
	assert_int_equal(fi_av_set(av, &attr, &s, NULL), -FI_EINVAL);
	attr.end_addr = 7;
	attr.count = 4;
	assert_int_equal(fi_av_set(av, &attr, &s, NULL), -FI_EINVAL);
	attr.count = 0;
	attr.stride = 0;
	assert_int_equal(fi_av_set(av, &attr, &s, NULL), -FI_EINVAL);
	attr.stride = 1;
	attr.flags = FI_SEND;
	assert_int_equal(fi_av_set(av, &attr, &s, NULL), -FI_EINVAL);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

static void test_av_set_map(void **state)
{
	struct util_env env;
	struct fid_av_set *s;
	struct fid_av *av = av_with(&env, FI_AV_MAP, 4);
	struct fi_av_set_attr attr = {
		.start_addr = 0, .end_addr = 3, .stride = 1};

	/* ranges need FI_AV_TABLE; inserts work on any AV */
	assert_int_equal(fi_av_set(av, &attr, &s, NULL), -FI_EINVAL);
	s = set_range(av, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0);
	assert_int_equal(fi_av_set_insert(s, 3), 0);
	assert_int_equal(fi_av_set_insert(s, 1), 0);
	assert_int_equal(fi_av_set_insert(s, 1), -FI_EALREADY);
	assert_int_equal(fi_av_set_insert(s, 9), -FI_EINVAL);
	assert_string_equal(members(s), "3,1");
	assert_int_equal(fi_close(&s->fid), 0);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

static void test_av_set_arith(void **state)
{
	struct util_env env;
	struct fid_av *av = av_with(&env, FI_AV_TABLE, 10);
	struct fid_av_set *a, *b, *c;
	fi_addr_t ca;

	a = set_range(av, 0, 9, 2); /* 0,2,4,6,8 */
	b = set_range(av, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0);
	assert_int_equal(fi_av_set_insert(b, 9), 0);
	assert_int_equal(fi_av_set_insert(b, 4), 0);
	assert_int_equal(fi_av_set_insert(b, 3), 0);
	assert_int_equal(fi_av_set_insert(b, 0), 0);
	/* union appends what is new, in the source's order */
	c = set_range(av, 0, 9, 2);
	assert_int_equal(fi_av_set_union(c, b), 0);
	assert_string_equal(members(c), "0,2,4,6,8,9,3");
	/* intersect and diff keep the destination's order, whatever the
	 * source's order */
	assert_int_equal(fi_av_set_intersect(c, b), 0);
	assert_string_equal(members(c), "0,4,9,3");
	assert_int_equal(fi_av_set_diff(c, a), 0);
	assert_string_equal(members(c), "9,3");
	assert_int_equal(fi_av_set_intersect(a, b), 0);
	assert_string_equal(members(a), "0,4");
	/* remove keeps the order of the rest */
	assert_int_equal(fi_av_set_remove(b, 4), 0);
	assert_int_equal(fi_av_set_remove(b, 4), -FI_EINVAL);
	assert_string_equal(members(b), "9,3,0");
	/* a set with itself */
	assert_int_equal(fi_av_set_union(b, b), 0);
	assert_string_equal(members(b), "9,3,0");
	assert_int_equal(fi_av_set_diff(b, b), 0);
	assert_string_equal(members(b), "");
	assert_int_equal(fi_av_set_addr(a, &ca), 0);
	assert_true(ca != FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_av_set_addr(a, NULL), -FI_EINVAL);
	assert_int_equal(fi_close(&a->fid), 0);
	assert_int_equal(fi_close(&b->fid), 0);
	assert_int_equal(fi_close(&c->fid), 0);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

/* fi_av_set(3): a range's valid addresses are members, its holes not. */
static void test_av_set_holes(void **state)
{
	struct util_env env;
	struct fid_av *av = av_with(&env, FI_AV_TABLE, 8);
	struct fid_av_set *s;
	fi_addr_t gone[] = {3, 6};

	assert_int_equal(fi_av_remove(av, gone, 2, 0), 0);
	s = set_range(av, 0, 7, 1);
	assert_string_equal(members(s), "0,1,2,4,5,7");
	assert_int_equal(fi_close(&s->fid), 0);
	s = set_range(av, 0, 6, 3);
	assert_string_equal(members(s), "0");
	assert_int_equal(fi_close(&s->fid), 0);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

struct set_pair {
	struct fid_av_set *dst, *src;
	int rounds, ret;
};

static void *set_unions(void *p)
{
	struct set_pair *sp = p;
	int i;

	for (i = 0; i < sp->rounds && !sp->ret; i++) {
		sp->ret = fi_av_set_union(sp->dst, sp->src);
		if (!sp->ret)
			sp->ret = fi_av_set_intersect(sp->dst, sp->src);
	}
	return NULL;
}

/* A u B and B u A on two threads: neither waits for the other forever. */
static void test_av_set_lock_order(void **state)
{
	struct util_env env;
	struct fid_av *av = av_with(&env, FI_AV_TABLE, 4);
	struct fid_av_set *a = set_range(av, 0, 3, 1),
			  *b = set_range(av, 0, 3, 2);
	struct set_pair ab = {a, b, 200000, 0}, ba = {b, a, 200000, 0};
	struct timespec until;
	pthread_t t1, t2;

	assert_int_equal(pthread_create(&t1, NULL, set_unions, &ab), 0);
	assert_int_equal(pthread_create(&t2, NULL, set_unions, &ba), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	assert_int_equal(pthread_timedjoin_np(t1, NULL, &until), 0);
	assert_int_equal(pthread_timedjoin_np(t2, NULL, &until), 0);
	assert_int_equal(ab.ret, 0);
	assert_int_equal(ba.ret, 0);
	assert_int_equal(fi_close(&a->fid), 0);
	assert_int_equal(fi_close(&b->fid), 0);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

/* Every member is reached once from the root; parent/child agree. */
static void test_tree_shapes(void **state)
{
	size_t n, f, v, k, i, child[8], seen[64], depth, u;

	for (f = 1; f <= 4; f++) {
		for (n = 1; n <= 64; n++) {
			memset(seen, 0, sizeof(seen));
			assert_int_equal(ofi_coll_tree_parent(0, f),
					 OFI_COLL_NONE);
			for (v = 0; v < n; v++) {
				k = ofi_coll_tree_children(v, n, f, child);
				assert_true(k <= f);
				for (i = 0; i < k; i++) {
					assert_true(child[i] < n);
					assert_true(child[i] > v);
					assert_int_equal(ofi_coll_tree_parent(
								 child[i], f),
							 v);
					seen[child[i]]++;
				}
				/* depth is logarithmic in n */
				for (depth = 0, u = v; u; depth++)
					u = ofi_coll_tree_parent(u, f);
				assert_true(depth <= n);
				if (f >= 2)
					assert_true((1u << depth) <= 2 * n);
			}
			assert_int_equal(seen[0], 0);
			for (v = 1; v < n; v++)
				assert_int_equal(seen[v], 1);
		}
	}
	/* the binary tree of 7 */
	k = ofi_coll_tree_children(2, 7, 2, child);
	assert_int_equal(k, 2);
	assert_int_equal(child[0], 5);
	assert_int_equal(child[1], 6);
	assert_int_equal(ofi_coll_tree_children(3, 7, 2, child), 0);
}

static void test_rank_mapping(void **state)
{
	size_t n, root, r;

	for (n = 1; n <= 64; n++) {
		for (root = 0; root < n; root++) {
			assert_int_equal(ofi_coll_vrank(root, root, n), 0);
			for (r = 0; r < n; r++)
				assert_int_equal(
					ofi_coll_rank(
						ofi_coll_vrank(r, root, n),
						root, n),
					r);
		}
		/* canonical order visits members 0..n-1 */
		for (r = 0; r < n; r++)
			assert_int_equal(ofi_coll_canon_member(r), r);
	}
}

/*
 * The allreduce schedules, simulated on sets of contributors (bit i:
 * member i's input) for n = 1..64: every member must end with every
 * contribution exactly once (a fold of two overlapping sets counts one
 * twice).
 */
static uint64_t fold_sets(uint64_t acc, uint64_t in)
{
	assert_int_equal(acc & in, 0);
	return acc | in;
}

static void test_allreduce_rd(void **state)
{
	uint64_t have[64], next[64], all;
	size_t n, p, r, mask;

	(void)state;
	for (n = 1; n <= 64; n++) {
		p = ofi_coll_pow2_floor(n);
		assert_true(p <= n && 2 * p > n && !(p & (p - 1)));
		all = n == 64 ? ~0ULL : (1ULL << n) - 1;
		for (r = 0; r < n; r++)
			have[r] = 1ULL << r;
		for (r = p; r < n; r++) /* the extra ones fold in */
			have[r - p] = fold_sets(have[r - p], have[r]);
		for (mask = 1; mask < p; mask <<= 1) {
			for (r = 0; r < p; r++)
				next[r] = fold_sets(have[r], have[r ^ mask]);
			memcpy(have, next, p * sizeof(have[0]));
		}
		for (r = p; r < n; r++) /* and take the result back */
			have[r] = have[r - p];
		for (r = 0; r < n; r++)
			assert_true(have[r] == all);
	}
}

/*
 * Members sharing CPUs (ofi_coll_leaders) for n = 1..64 under placements
 * pinned round-robin over 1..5 CPUs, partly unpinned, or all apart: a
 * member is led by the lowest rank of its placement, unpinned ones by
 * themselves; then sched_allreduce_rd's shape over them (members fold
 * into their leader, recursive doubling among the leaders, the leaders
 * answer) must leave every member with every contribution once.
 */
static void test_leaders(void **state)
{
	uint64_t place[64], have[64], next[64], all;
	uint32_t lead[64], leaders[64];
	size_t n, i, j, nl, p, k, mask, pat;

	(void)state;
	for (n = 1; n <= 64; n++) {
		for (pat = 0; pat < 8; pat++) {
			for (i = 0; i < n; i++) {
				place[i] = pat < 5    ? 100 + i % (pat + 1)
					   : pat == 5 ? (i % 3 ? 7 : 0)
					   : pat == 6 ? i + 1
						      : 0;
				if (pat == 4 && i % 4 == 3)
					place[i] = 0; /* unpinned among them */
			}
			nl = ofi_coll_leaders(place, n, lead);
			for (i = 0, k = 0; i < n; i++) {
				for (j = 0; j < i; j++)
					if (place[i] && place[j] == place[i])
						break;
				assert_int_equal(lead[i], j < i ? j : i);
				if (lead[i] == i)
					leaders[k++] = (uint32_t)i;
			}
			assert_int_equal(nl, k);
			all = n == 64 ? ~0ULL : (1ULL << n) - 1;
			for (i = 0; i < n; i++)
				have[i] = 1ULL << i;
			for (i = 0; i < n; i++)
				if (lead[i] != i)
					have[lead[i]] = fold_sets(have[lead[i]],
								  have[i]);
			p = ofi_coll_pow2_floor(nl);
			for (k = p; k < nl; k++)
				have[leaders[k - p]] = fold_sets(
					have[leaders[k - p]], have[leaders[k]]);
			for (mask = 1; mask < p; mask <<= 1) {
				for (k = 0; k < p; k++)
					next[k] = fold_sets(
						have[leaders[k]],
						have[leaders[k ^ mask]]);
				for (k = 0; k < p; k++)
					have[leaders[k]] = next[k];
			}
			for (k = p; k < nl; k++)
				have[leaders[k]] = have[leaders[k - p]];
			for (i = 0; i < n; i++)
				assert_true(have[lead[i]] == all);
		}
	}
}

static void test_allreduce_ring(void **state)
{
	static uint64_t blk[64][64], sent[64];
	static const size_t counts[] = {0, 1, 5, 63, 64, 65, 1000, 4099};
	size_t n, r, k, b, c, first, cnt, next;
	uint64_t all;

	(void)state;
	for (n = 1; n <= 64; n++) {
		/* blocks tile the buffer, sizes within one of each other */
		for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			for (next = 0, b = 0; b < n; b++) {
				ofi_coll_block(counts[c], n, b, &first, &cnt);
				assert_int_equal(first, next);
				assert_true(cnt == counts[c] / n ||
					    cnt == counts[c] / n + 1);
				next = first + cnt;
			}
			assert_int_equal(next, counts[c]);
		}
		all = n == 64 ? ~0ULL : (1ULL << n) - 1;
		for (r = 0; r < n; r++)
			for (b = 0; b < n; b++)
				blk[r][b] = 1ULL << r;
		/* reduce-scatter: r sends to r + 1, which folds it in */
		for (k = 0; k + 1 < n; k++) {
			for (r = 0; r < n; r++)
				sent[r] =
					blk[r][ofi_coll_ring_rs_send(r, k, n)];
			for (r = 0; r < n; r++) {
				b = ofi_coll_ring_rs_send(r, k, n);
				blk[(r + 1) % n][b] =
					fold_sets(blk[(r + 1) % n][b], sent[r]);
			}
		}
		for (r = 0; r < n; r++)
			assert_true(blk[r][(r + 1) % n] == all);
		/* allgather: only complete blocks travel */
		for (k = 0; k + 1 < n; k++) {
			for (r = 0; r < n; r++) {
				sent[r] =
					blk[r][ofi_coll_ring_ag_send(r, k, n)];
				assert_true(sent[r] == all);
			}
			for (r = 0; r < n; r++)
				blk[(r + 1) % n]
				   [ofi_coll_ring_ag_send(r, k, n)] = sent[r];
		}
		for (r = 0; r < n; r++)
			for (b = 0; b < n; b++)
				assert_true(blk[r][b] == all);
	}
}

static void test_query(void **state)
{
	struct fi_collective_attr attr = {0};
	struct util_env env;
	struct fid_domain *dom;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	dom = &env.domain->domain_fid;
	attr.op = FI_NOOP;
	attr.datatype = FI_VOID;
	assert_int_equal(ofi_query_collective(dom, FI_BARRIER, &attr, 0), 0);
	attr.op = FI_SUM;
	attr.datatype = FI_DOUBLE;
	assert_int_equal(ofi_query_collective(dom, FI_ALLREDUCE, &attr, 0), 0);
	assert_int_equal(attr.datatype_attr.size, sizeof(double));
	assert_true(attr.max_members >= 64);
	/* bitwise on floating point, min on complex: not offered */
	attr.op = FI_BOR;
	assert_int_equal(ofi_query_collective(dom, FI_ALLREDUCE, &attr, 0),
			 -FI_EOPNOTSUPP);
	attr.op = FI_MIN;
	attr.datatype = FI_DOUBLE_COMPLEX;
	assert_int_equal(ofi_query_collective(dom, FI_REDUCE, &attr, 0),
			 -FI_EOPNOTSUPP);
	attr.op = FI_CSWAP;
	attr.datatype = FI_INT32;
	assert_int_equal(ofi_query_collective(dom, FI_ALLREDUCE, &attr, 0),
			 -FI_EOPNOTSUPP);
	attr.op = FI_NOOP;
	assert_int_equal(ofi_query_collective(dom, FI_BROADCAST, &attr, 0), 0);
	attr.mode = 1;
	assert_int_equal(ofi_query_collective(dom, FI_BROADCAST, &attr, 0),
			 -FI_EINVAL);
	util_env_close(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_av_set_ranges),
		cmocka_unit_test(test_av_set_map),
		cmocka_unit_test(test_av_set_arith),
		cmocka_unit_test(test_av_set_holes),
		cmocka_unit_test(test_av_set_lock_order),
		cmocka_unit_test(test_tree_shapes),
		cmocka_unit_test(test_allreduce_rd),
		cmocka_unit_test(test_leaders),
		cmocka_unit_test(test_allreduce_ring),
		cmocka_unit_test(test_rank_mapping),
		cmocka_unit_test(test_query),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
