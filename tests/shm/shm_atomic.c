/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_atomic.c - atomics through the shm provider between processes,
 * public API only: every op x datatype that fi_atomic(3) allows, as base,
 * fetch and compare operations, against a reference computed here; the
 * answers of fi_query_atomic and fi_atomicvalid/fi_fetch_atomicvalid/
 * fi_compare_atomicvalid for every combination (supported ones and
 * refused ones); count limits; FI_EACCES for a bad key or missing access
 * with the target memory untouched; and 4 processes adding to one counter
 * at once (the sum is exact and every fetched value is seen once).
 */
#include <complex.h>

#include "shm_rma_common.h"

#define N	 6
#define OPS	 FI_ATOMIC_OP_LAST
#define NPROC	 4
#define PER_PROC 400
#define SHM_BIG	 8200 /* above any provider's limit: shm 2048, tcp 8192 */

typedef long double ldbl;
typedef float complex fcplx;
typedef double complex dcplx;
typedef long double complex ldcplx;
typedef __int128 i128;
typedef unsigned __int128 u128;

enum cls { C_INT, C_REAL, C_CPLX };
enum kind { K_BASE, K_FETCH, K_CMP, K_CNT };

static const int dvals[N] = {3, 5, 7, -2, 0, 4};
static const int svals[N] = {5, 5, 2, 9, 0, 1};
static const int cvals[N] = {3, 4, 7, 1, 0, 4};

/* Reference semantics, written out per group of types. */
#define CASES_ALL                                                              \
	case FI_SUM:                                                           \
		d[i] = old + s[i];                                             \
		break;                                                         \
	case FI_PROD:                                                          \
		d[i] = old * s[i];                                             \
		break;                                                         \
	case FI_ATOMIC_READ:                                                   \
		break;                                                         \
	case FI_ATOMIC_WRITE:                                                  \
		d[i] = s[i];                                                   \
		break;                                                         \
	case FI_CSWAP:                                                         \
		if (c[i] == old)                                               \
			d[i] = s[i];                                           \
		break;                                                         \
	case FI_CSWAP_NE:                                                      \
		if (c[i] != old)                                               \
			d[i] = s[i];                                           \
		break;
#define CASES_ORDERED                                                          \
	case FI_MIN:                                                           \
		d[i] = s[i] < old ? s[i] : old;                                \
		break;                                                         \
	case FI_MAX:                                                           \
		d[i] = s[i] > old ? s[i] : old;                                \
		break;                                                         \
	case FI_LOR:                                                           \
		d[i] = (old || s[i]);                                          \
		break;                                                         \
	case FI_LAND:                                                          \
		d[i] = (old && s[i]);                                          \
		break;                                                         \
	case FI_LXOR:                                                          \
		d[i] = ((old && !s[i]) || (!old && s[i]));                     \
		break;                                                         \
	case FI_CSWAP_LE:                                                      \
		if (c[i] <= old)                                               \
			d[i] = s[i];                                           \
		break;                                                         \
	case FI_CSWAP_LT:                                                      \
		if (c[i] < old)                                                \
			d[i] = s[i];                                           \
		break;                                                         \
	case FI_CSWAP_GE:                                                      \
		if (c[i] >= old)                                               \
			d[i] = s[i];                                           \
		break;                                                         \
	case FI_CSWAP_GT:                                                      \
		if (c[i] > old)                                                \
			d[i] = s[i];                                           \
		break;
#define CASES_INT                                                              \
	case FI_BOR:                                                           \
		d[i] = old | s[i];                                             \
		break;                                                         \
	case FI_BAND:                                                          \
		d[i] = old & s[i];                                             \
		break;                                                         \
	case FI_BXOR:                                                          \
		d[i] = old ^ s[i];                                             \
		break;                                                         \
	case FI_MSWAP:                                                         \
		d[i] = (s[i] & c[i]) | (old & ~c[i]);                          \
		break;

#define DEFINE_TYPE(T, CASES)                                                  \
	static void set_##T(void *dst, const int *v)                           \
	{                                                                      \
		T *p = dst;                                                    \
		int i;                                                         \
		for (i = 0; i < N; i++)                                        \
			p[i] = (T)v[i];                                        \
	}                                                                      \
	static bool eq_##T(const void *a, const void *b)                       \
	{                                                                      \
		const T *x = a, *y = b;                                        \
		int i;                                                         \
		for (i = 0; i < N; i++)                                        \
			if (x[i] != y[i])                                      \
				return false;                                  \
		return true;                                                   \
	}                                                                      \
	static void ref_##T(enum fi_op op, void *dv, const void *sv,           \
			    const void *cv, void *rv)                          \
	{                                                                      \
		T *d = dv, *r = rv;                                            \
		const T *s = sv, *c = cv;                                      \
		int i;                                                         \
		for (i = 0; i < N; i++) {                                      \
			T old = d[i];                                          \
			r[i] = old;                                            \
			switch (op) {                                          \
				CASES                                          \
			default:                                               \
				break;                                         \
			}                                                      \
		}                                                              \
	}

#define INT_CASES  CASES_ALL CASES_ORDERED CASES_INT
#define REAL_CASES CASES_ALL CASES_ORDERED
DEFINE_TYPE(int8_t, INT_CASES)
DEFINE_TYPE(uint8_t, INT_CASES)
DEFINE_TYPE(int16_t, INT_CASES)
DEFINE_TYPE(uint16_t, INT_CASES)
DEFINE_TYPE(int32_t, INT_CASES)
DEFINE_TYPE(uint32_t, INT_CASES)
DEFINE_TYPE(int64_t, INT_CASES)
DEFINE_TYPE(uint64_t, INT_CASES)
DEFINE_TYPE(i128, INT_CASES)
DEFINE_TYPE(u128, INT_CASES)
DEFINE_TYPE(float, REAL_CASES)
DEFINE_TYPE(double, REAL_CASES)
DEFINE_TYPE(ldbl, REAL_CASES)
DEFINE_TYPE(fcplx, CASES_ALL)
DEFINE_TYPE(dcplx, CASES_ALL)
DEFINE_TYPE(ldcplx, CASES_ALL)

struct dtype {
	enum fi_datatype dt;
	size_t size;
	enum cls cls;
	const char *name;
	void (*set)(void *dst, const int *v);
	bool (*eq)(const void *a, const void *b);
	void (*ref)(enum fi_op op, void *d, const void *s, const void *c,
		    void *r);
};

#define DT(E, T, C)                                                            \
	{                                                                      \
		E, sizeof(T), C, #T, set_##T, eq_##T, ref_##T                  \
	}
static const struct dtype types[] = {
	DT(FI_INT8, int8_t, C_INT),
	DT(FI_UINT8, uint8_t, C_INT),
	DT(FI_INT16, int16_t, C_INT),
	DT(FI_UINT16, uint16_t, C_INT),
	DT(FI_INT32, int32_t, C_INT),
	DT(FI_UINT32, uint32_t, C_INT),
	DT(FI_INT64, int64_t, C_INT),
	DT(FI_UINT64, uint64_t, C_INT),
	DT(FI_INT128, i128, C_INT),
	DT(FI_UINT128, u128, C_INT),
	DT(FI_FLOAT, float, C_REAL),
	DT(FI_DOUBLE, double, C_REAL),
	DT(FI_LONG_DOUBLE, ldbl, C_REAL),
	DT(FI_FLOAT_COMPLEX, fcplx, C_CPLX),
	DT(FI_DOUBLE_COMPLEX, dcplx, C_CPLX),
	DT(FI_LONG_DOUBLE_COMPLEX, ldcplx, C_CPLX),
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static struct node n;

/* What this test expects the provider to support (fi_atomic(3)). */
static bool expect_valid(enum cls c, enum fi_op op, enum kind k)
{
	bool cmp = op >= FI_CSWAP && op <= FI_MSWAP;

	if (k == K_BASE && (cmp || op == FI_ATOMIC_READ))
		return false;
	if (k == K_FETCH && cmp)
		return false;
	if (k == K_CMP && !cmp)
		return false;
	switch (op) {
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
	case FI_MSWAP:
		return c == C_INT;
	case FI_MIN:
	case FI_MAX:
	case FI_LOR:
	case FI_LAND:
	case FI_LXOR:
	case FI_CSWAP_LE:
	case FI_CSWAP_LT:
	case FI_CSWAP_GE:
	case FI_CSWAP_GT:
		return c != C_CPLX;
	default:
		return true;
	}
}

static int valid_call(enum kind k, enum fi_datatype dt, enum fi_op op,
		      size_t *cnt)
{
	switch (k) {
	case K_BASE:
		return fi_atomicvalid(n.ep, dt, op, cnt);
	case K_FETCH:
		return fi_fetch_atomicvalid(n.ep, dt, op, cnt);
	default:
		return fi_compare_atomicvalid(n.ep, dt, op, cnt);
	}
}

static void test_query(void)
{
	static const uint64_t qflags[K_CNT] = {0, FI_FETCH_ATOMIC,
					       FI_COMPARE_ATOMIC};
	struct fi_atomic_attr attr;
	size_t t, cnt;
	int op, k, ret, vret;
	bool want;

	for (t = 0; t < NTYPES; t++) {
		for (op = 0; op < OPS; op++) {
			for (k = 0; k < K_CNT; k++) {
				want = expect_valid(types[t].cls, op, k);
				memset(&attr, 0, sizeof(attr));
				ret = fi_query_atomic(n.dom, types[t].dt, op,
						      &attr, qflags[k]);
				cnt = 0;
				vret = valid_call(k, types[t].dt, op, &cnt);
				CHECK(want ? !ret : ret == -FI_EOPNOTSUPP,
				      "query %s op %d kind %d: %d",
				      types[t].name, op, k, ret);
				CHECK(ret == vret,
				      "query %d but valid %d (%s op %d)", ret,
				      vret, types[t].name, op);
				if (!want)
					continue;
				CHECK(attr.size == types[t].size &&
					      attr.count >= 1 &&
					      attr.count == cnt,
				      "%s op %d: size %zu count %zu/%zu",
				      types[t].name, op, attr.size, attr.count,
				      cnt);
			}
		}
	}
	CHECK(fi_query_atomic(n.dom, FI_INT32, FI_SUM, &attr,
			      FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC) ==
		      -FI_EINVAL,
	      "fetch|compare query accepted");
	CHECK(fi_query_atomic(n.dom, FI_VOID, FI_SUM, &attr, 0) ==
		      -FI_EOPNOTSUPP,
	      "FI_VOID accepted");
	CHECK(fi_atomicvalid(n.ep, FI_INT32, FI_ATOMIC_OP_LAST, &cnt) ==
		      -FI_EOPNOTSUPP,
	      "bad op accepted");
}

static int run_op(enum kind k, const struct dtype *t, enum fi_op op, void *s,
		  void *c, void *r, size_t cnt, int mr, size_t off)
{
	uint64_t a = ctl->base[mr] + off, key = ctl->key[mr];
	ssize_t ret;
	int ctx;

	switch (k) {
	case K_BASE:
		ret = POST(&n, fi_atomic(n.ep, s, cnt, NULL, n.peer, a, key,
					 t->dt, op, &ctx));
		break;
	case K_FETCH:
		ret = POST(&n,
			   fi_fetch_atomic(n.ep, s, cnt, NULL, r, NULL, n.peer,
					   a, key, t->dt, op, &ctx));
		break;
	default:
		ret = POST(&n, fi_compare_atomic(n.ep, s, cnt, NULL, c, NULL, r,
						 NULL, n.peer, a, key, t->dt,
						 op, &ctx));
		break;
	}
	if (ret)
		return (int)ret;
	return wait_comp(&n, &ctx);
}

static void test_all_ops(void)
{
	_Alignas(16) uint8_t s[N * 32], c[N * 32], r[N * 32];
	_Alignas(16) uint8_t dref[N * 32], rref[N * 32];
	uint8_t *target = tmem + 4096; /* 16-byte aligned */
	size_t t, done = 0;
	int op, k, ret;

	for (t = 0; t < NTYPES; t++) {
		for (op = 0; op < OPS; op++) {
			for (k = 0; k < K_CNT; k++) {
				if (!expect_valid(types[t].cls, op, k))
					continue;
				types[t].set(target, dvals);
				types[t].set(dref, dvals);
				types[t].set(s, svals);
				types[t].set(c, cvals);
				memset(r, 0, sizeof(r));
				types[t].ref(op, dref, s, c, rref);
				ret = run_op(k, &types[t], op, s, c, r, N,
					     MR_RW, 4096);
				CHECK(!ret, "%s op %d kind %d: %d",
				      types[t].name, op, k, ret);
				CHECK(types[t].eq(target, dref),
				      "%s op %d kind %d: target differs",
				      types[t].name, op, k);
				CHECK(k == K_BASE || types[t].eq(r, rref),
				      "%s op %d kind %d: fetched differs",
				      types[t].name, op, k);
				done++;
			}
		}
	}
	CHECK(done == 396, "%zu combinations ran, not 396", done);
	printf("shm_atomic: %zu op/type/kind combinations checked\n", done);
}

static void test_limits_and_access(void)
{
	static int64_t big[SHM_BIG];
	uint64_t sum, sum_ro, sum_wo;
	size_t max = 0;
	int64_t one = 1, res = 0;
	int ret;

	CHECK(!fi_atomicvalid(n.ep, FI_INT64, FI_SUM, &max) && max >= 1 &&
		      max <= SHM_BIG,
	      "max count %zu", max);
	memset(tmem, 0, max * 8 + 8);
	for (size_t i = 0; i < max + 1; i++)
		big[i] = (int64_t)i;
	ret = run_op(K_BASE, &types[6], FI_SUM, big, NULL, NULL, max, MR_RW, 0);
	CHECK(!ret, "max count: %d", ret);
	CHECK(((int64_t *)tmem)[max - 1] == (int64_t)max - 1, "max count data");
	ret = (int)fi_atomic(n.ep, big, max + 1, NULL, n.peer, ctl->base[MR_RW],
			     ctl->key[MR_RW], FI_INT64, FI_SUM, NULL);
	CHECK(ret == -FI_EINVAL, "count above the limit: %d", ret);
	ret = (int)fi_atomic(n.ep, big, 1, NULL, n.peer, ctl->base[MR_RW],
			     ctl->key[MR_RW], FI_DOUBLE, FI_BOR, NULL);
	CHECK(ret == -FI_EOPNOTSUPP, "BOR on double: %d", ret);

	sum = 0;
	for (size_t i = 0; i < 4096; i++)
		sum = sum * 31 + tmem[i];
	sum_ro = tro[0] + ((uint64_t)tro[1] << 8);
	sum_wo = two[0] + ((uint64_t)two[1] << 8);
	ret = run_op(K_BASE, &types[6], FI_SUM, &one, NULL, NULL, 1, MR_RW, 0);
	CHECK(!ret, "good key: %d", ret);
	((int64_t *)tmem)[0] -= 1;
	ret = (int)POST(&n,
			fi_atomic(n.ep, &one, 1, NULL, n.peer, ctl->base[MR_RW],
				  ctl->key[MR_RW] + 5, FI_INT64, FI_SUM, &res));
	CHECK(!ret && wait_comp(&n, &res) == FI_EACCES, "bad key");
	ret = run_op(K_BASE, &types[6], FI_SUM, &one, NULL, NULL, 1, MR_RO, 0);
	CHECK(ret == FI_EACCES, "atomic on read-only: %d", ret);
	ret = run_op(K_FETCH, &types[6], FI_SUM, &one, NULL, &res, 1, MR_WO, 0);
	CHECK(ret == FI_EACCES, "fetch on write-only: %d", ret);
	ret = run_op(K_FETCH, &types[6], FI_ATOMIC_READ, NULL, NULL, &res, 1,
		     MR_RO, 0);
	CHECK(!ret, "atomic read of read-only: %d", ret);
	ret = run_op(K_BASE, &types[6], FI_SUM, &one, NULL, NULL, 1, MR_RW,
		     TMEM_SIZE - 4);
	CHECK(ret == FI_EACCES, "past the end: %d", ret);
	uint64_t after = 0;
	for (size_t i = 0; i < 4096; i++)
		after = after * 31 + tmem[i];
	CHECK(after == sum, "target memory touched by refused atomics");
	CHECK(sum_ro == tro[0] + ((uint64_t)tro[1] << 8) &&
		      sum_wo == two[0] + ((uint64_t)two[1] << 8),
	      "read-only/write-only memory touched");
}

static int functional(int rank)
{
	(void)rank;
	initiator_open(&n);
	test_query();
	test_all_ops();
	test_limits_and_access();
	node_close(&n);
	return failures ? 1 : 0;
}

/* tmem layout for the concurrent run: two counters, then a seen table. */
#define SEEN_OFF 4096

static int concurrent(int rank)
{
	uint64_t one = 1, old;
	uint8_t *seen = tmem + SEEN_OFF;
	int i, ret;

	initiator_open(&n);
	for (i = 0; i < PER_PROC; i++) {
		ret = run_op(K_BASE, &types[6], FI_SUM, &one, NULL, NULL, 1,
			     MR_RW, 0);
		if (ret) {
			fprintf(stderr, "rank %d atomic %d: %d\n", rank, i,
				ret);
			return 1;
		}
		old = ~0ULL;
		ret = run_op(K_FETCH, &types[7], FI_SUM, &one, NULL, &old, 1,
			     MR_RW, 8);
		if (ret || old >= NPROC * PER_PROC) {
			fprintf(stderr, "rank %d fetch %d: %d old %lu\n", rank,
				i, ret, (unsigned long)old);
			return 1;
		}
		__atomic_add_fetch(&seen[old], 1, __ATOMIC_RELAXED);
	}
	node_close(&n);
	return 0;
}

int main(void)
{
	uint8_t *seen;
	int bad, i;

	harness_init();
	bad = run_test(1, functional);
	memset(tmem, 0, SEEN_OFF + NPROC * PER_PROC);
	bad += run_test(NPROC, concurrent);
	seen = tmem + SEEN_OFF;
	if (((int64_t *)tmem)[0] != NPROC * PER_PROC ||
	    ((int64_t *)tmem)[1] != NPROC * PER_PROC) {
		fprintf(stderr, "FAIL concurrent sums %ld %ld, want %d\n",
			(long)((int64_t *)tmem)[0], (long)((int64_t *)tmem)[1],
			NPROC * PER_PROC);
		bad++;
	}
	for (i = 0; i < NPROC * PER_PROC; i++) {
		if (seen[i] != 1) {
			fprintf(stderr, "FAIL fetched value %d seen %d times\n",
				i, seen[i]);
			bad++;
			break;
		}
	}
	printf("shm_atomic (%s addressing): %s\n",
	       offset_mode ? "offset" : "virtual", bad ? "FAILED" : "passed");
	return bad ? 1 : 0;
}
