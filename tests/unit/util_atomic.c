/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_atomic.c - unit tests of prov/util's atomic executor: every
 * operation on every datatype against reference arithmetic written here
 * (a plain switch per type family, independent of the executor's macro
 * table), which op/datatype pairs each family accepts, fi_query_atomic's
 * flag rules, misaligned targets and unaligned operands, and atomicity
 * between threads.
 */
#include <complex.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ofi_atomic.h"
#include "rdma/fi_errno.h"

#define N	  6
#define MAX_BYTES 4096

enum family { F_INT, F_REAL, F_CPLX };

/* Which operations fi_atomic(3) defines for each family of datatypes. */
static bool op_defined(enum family f, enum fi_op op)
{
	switch (op) {
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
	case FI_MSWAP:
		return f == F_INT;
	case FI_SUM:
	case FI_PROD:
	case FI_ATOMIC_READ:
	case FI_ATOMIC_WRITE:
	case FI_CSWAP:
	case FI_CSWAP_NE:
		return true;
	default:
		return f != F_CPLX;
	}
}

static bool in_family(enum ofi_atomic_kind k, enum fi_op op)
{
	bool cmp = op >= FI_CSWAP && op <= FI_MSWAP;

	if (k == OFI_ATOMIC_COMPARE)
		return cmp;
	if (k == OFI_ATOMIC_FETCH)
		return !cmp;
	return !cmp && op != FI_ATOMIC_READ;
}

/*
 * Reference results. Integers wrap: they are computed in a wide unsigned
 * type and truncated. Returns the new target value.
 */
#define REF_ORDERED_CASES                                                      \
	case FI_MIN:                                                           \
		return s < old ? s : old;                                      \
	case FI_MAX:                                                           \
		return s > old ? s : old;                                      \
	case FI_LOR:                                                           \
		return (old != 0 || s != 0) ? 1 : 0;                           \
	case FI_LAND:                                                          \
		return (old != 0 && s != 0) ? 1 : 0;                           \
	case FI_LXOR:                                                          \
		return ((old != 0) != (s != 0)) ? 1 : 0;                       \
	case FI_CSWAP_LE:                                                      \
		return c <= old ? s : old;                                     \
	case FI_CSWAP_LT:                                                      \
		return c < old ? s : old;                                      \
	case FI_CSWAP_GE:                                                      \
		return c >= old ? s : old;                                     \
	case FI_CSWAP_GT:                                                      \
		return c > old ? s : old;
#define REF_COMMON_CASES                                                       \
	case FI_ATOMIC_READ:                                                   \
		return old;                                                    \
	case FI_ATOMIC_WRITE:                                                  \
		return s;                                                      \
	case FI_CSWAP:                                                         \
		return c == old ? s : old;                                     \
	case FI_CSWAP_NE:                                                      \
		return c != old ? s : old;

#define DEF_REF_INT(T, W)                                                      \
	static T ref_##T(enum fi_op op, T old, T s, T c)                       \
	{                                                                      \
		switch (op) {                                                  \
			REF_ORDERED_CASES                                      \
			REF_COMMON_CASES                                       \
		case FI_SUM:                                                   \
			return (T)((W)old + (W)s);                             \
		case FI_PROD:                                                  \
			return (T)((W)old * (W)s);                             \
		case FI_BOR:                                                   \
			return (T)((W)old | (W)s);                             \
		case FI_BAND:                                                  \
			return (T)((W)old & (W)s);                             \
		case FI_BXOR:                                                  \
			return (T)((W)old ^ (W)s);                             \
		case FI_MSWAP:                                                 \
			return (T)(((W)s & (W)c) | ((W)old & ~(W)c));          \
		default:                                                       \
			fail_msg("no reference for op %d", op);                \
			return old;                                            \
		}                                                              \
	}

#define DEF_REF_REAL(T)                                                        \
	static T ref_##T(enum fi_op op, T old, T s, T c)                       \
	{                                                                      \
		switch (op) {                                                  \
			REF_ORDERED_CASES                                      \
			REF_COMMON_CASES                                       \
		case FI_SUM:                                                   \
			return old + s;                                        \
		case FI_PROD:                                                  \
			return old * s;                                        \
		default:                                                       \
			fail_msg("no reference for op %d", op);                \
			return old;                                            \
		}                                                              \
	}

#define DEF_REF_CPLX(T)                                                        \
	static T ref_##T(enum fi_op op, T old, T s, T c)                       \
	{                                                                      \
		switch (op) {                                                  \
			REF_COMMON_CASES                                       \
		case FI_SUM:                                                   \
			return old + s;                                        \
		case FI_PROD:                                                  \
			return old * s;                                        \
		default:                                                       \
			fail_msg("no reference for op %d", op);                \
			return old;                                            \
		}                                                              \
	}

typedef unsigned __int128 u128;
typedef __int128 i128;
typedef long double ldouble;
typedef float complex fcplx;
typedef double complex dcplx;
typedef long double complex ldcplx;

DEF_REF_INT(int8_t, uint64_t)
DEF_REF_INT(uint8_t, uint64_t)
DEF_REF_INT(int16_t, uint64_t)
DEF_REF_INT(uint16_t, uint64_t)
DEF_REF_INT(int32_t, uint64_t)
DEF_REF_INT(uint32_t, uint64_t)
DEF_REF_INT(int64_t, uint64_t)
DEF_REF_INT(uint64_t, uint64_t)
DEF_REF_INT(i128, u128)
DEF_REF_INT(u128, u128)
DEF_REF_REAL(float)
DEF_REF_REAL(double)
DEF_REF_REAL(ldouble)
DEF_REF_CPLX(fcplx)
DEF_REF_CPLX(dcplx)
DEF_REF_CPLX(ldcplx)

/*
 * Values per family: zero, one, all ones / negative, the sign bit (the
 * minimum of a signed type), the maximum of a signed type, a small odd
 * one. Operands and compare values are the targets rotated, with one
 * compare value equal to its target so the swaps both fire and do not.
 */
#define INT_VALS(T, W)                                                         \
	{                                                                      \
		(T)0, (T)1, (T)-1, (T)((W)1 << (sizeof(T) * 8 - 1)),           \
			(T) ~((W)1 << (sizeof(T) * 8 - 1)), (T)7               \
	}
#define REAL_VALS(T)                                                           \
	{                                                                      \
		(T)0, (T)1.5, (T)-2.25, (T)3, (T)1024, (T)-0.5                 \
	}
#define CPLX_VALS(T)                                                           \
	{                                                                      \
		(T)(1 + 2 * I), (T)0, (T)(-1.5 + 0.5 * I), (T)(2 - 1 * I),     \
			(T)3, (T)(0.25 * I)                                    \
	}

#define DEF_CHECK(T, DT, FAM, VALS)                                            \
	static void check_##T(void)                                            \
	{                                                                      \
		const T vals[N] = VALS;                                        \
		T dst[N], src[N], cmp[N], res[N], want[N], sentinel;           \
		size_t i, dts, cnt;                                            \
		int k, op, ret, want_ret;                                      \
                                                                               \
		memset(&sentinel, 0x5a, sizeof(sentinel));                     \
		assert_int_equal(ofi_datatype_size(DT), sizeof(T));            \
		for (op = 0; op < FI_ATOMIC_OP_LAST; op++) {                   \
			for (k = 0; k < OFI_ATOMIC_KINDS; k++) {               \
				want_ret = op_defined(FAM, op) &&              \
							   in_family(k, op)    \
						   ? 0                         \
						   : -FI_EOPNOTSUPP;           \
				dts = cnt = 0;                                 \
				ret = ofi_atomic_valid(k, DT, op, MAX_BYTES,   \
						       &dts, &cnt);            \
				if (ret != want_ret)                           \
					fail_msg(#DT " op %d kind %d: %d", op, \
						 k, ret);                      \
				if (!ret) {                                    \
					assert_int_equal(dts, sizeof(T));      \
					assert_int_equal(                      \
						cnt, MAX_BYTES / sizeof(T));   \
				}                                              \
				for (i = 0; i < N; i++) {                      \
					dst[i] = vals[i];                      \
					src[i] = vals[(i + 1) % N];            \
					cmp[i] = vals[(i + 2) % N];            \
				}                                              \
				cmp[0] = dst[0];                               \
				memset(res, 0x5a, sizeof(res));                \
				ret = ofi_atomic_exec(k, op, DT, dst, src,     \
						      cmp, res, N);            \
				if (ret != want_ret)                           \
					fail_msg(#DT " exec op %d kind %d: "   \
						     "%d",                     \
						 op, k, ret);                  \
				for (i = 0; i < N; i++) {                      \
					want[i] =                              \
						ret ? vals[i]                  \
						    : ref_##T(op, vals[i],     \
							      src[i], cmp[i]); \
					if (dst[i] != want[i])                 \
						fail_msg(#DT " op %d kind %d " \
							     "element %zu",    \
							 op, k, i);            \
					if (ret || k == OFI_ATOMIC_WRITE) {    \
						assert_memory_equal(           \
							&res[i], &sentinel,    \
							sizeof(T));            \
					} else if (res[i] != vals[i]) {        \
						fail_msg(#DT " op %d kind %d " \
							     "fetched %zu",    \
							 op, k, i);            \
					}                                      \
				}                                              \
			}                                                      \
		}                                                              \
	}

DEF_CHECK(int8_t, FI_INT8, F_INT, INT_VALS(int8_t, uint64_t))
DEF_CHECK(uint8_t, FI_UINT8, F_INT, INT_VALS(uint8_t, uint64_t))
DEF_CHECK(int16_t, FI_INT16, F_INT, INT_VALS(int16_t, uint64_t))
DEF_CHECK(uint16_t, FI_UINT16, F_INT, INT_VALS(uint16_t, uint64_t))
DEF_CHECK(int32_t, FI_INT32, F_INT, INT_VALS(int32_t, uint64_t))
DEF_CHECK(uint32_t, FI_UINT32, F_INT, INT_VALS(uint32_t, uint64_t))
DEF_CHECK(int64_t, FI_INT64, F_INT, INT_VALS(int64_t, uint64_t))
DEF_CHECK(uint64_t, FI_UINT64, F_INT, INT_VALS(uint64_t, uint64_t))
DEF_CHECK(i128, FI_INT128, F_INT, INT_VALS(i128, u128))
DEF_CHECK(u128, FI_UINT128, F_INT, INT_VALS(u128, u128))
DEF_CHECK(float, FI_FLOAT, F_REAL, REAL_VALS(float))
DEF_CHECK(double, FI_DOUBLE, F_REAL, REAL_VALS(double))
DEF_CHECK(ldouble, FI_LONG_DOUBLE, F_REAL, REAL_VALS(ldouble))
DEF_CHECK(fcplx, FI_FLOAT_COMPLEX, F_CPLX, CPLX_VALS(fcplx))
DEF_CHECK(dcplx, FI_DOUBLE_COMPLEX, F_CPLX, CPLX_VALS(dcplx))
DEF_CHECK(ldcplx, FI_LONG_DOUBLE_COMPLEX, F_CPLX, CPLX_VALS(ldcplx))

static void test_ops_integers(void **state)
{
	(void)state;
	check_int8_t();
	check_uint8_t();
	check_int16_t();
	check_uint16_t();
	check_int32_t();
	check_uint32_t();
	check_int64_t();
	check_uint64_t();
	check_i128();
	check_u128();
}

static void test_ops_reals(void **state)
{
	(void)state;
	check_float();
	check_double();
	check_ldouble();
}

static void test_ops_complex(void **state)
{
	(void)state;
	check_fcplx();
	check_dcplx();
	check_ldcplx();
}

/* A few hand-checked results, so a wrong reference cannot hide a bug. */
static void test_known_values(void **state)
{
	int8_t i8 = 127, s8 = 1;
	uint16_t u16 = 0xf0f0, s16 = 0x00ff, c16 = 0x0f0f, r16;
	double d = 2.5, sd = 4;
	int32_t i32 = 5, s32 = 9, c32 = 6, r32;

	(void)state;
	assert_int_equal(ofi_atomic_exec(OFI_ATOMIC_WRITE, FI_SUM, FI_INT8, &i8,
					 &s8, NULL, NULL, 1),
			 0);
	assert_int_equal(i8, -128);
	assert_int_equal(ofi_atomic_exec(OFI_ATOMIC_COMPARE, FI_MSWAP,
					 FI_UINT16, &u16, &s16, &c16, &r16, 1),
			 0);
	assert_int_equal(r16, 0xf0f0);
	assert_int_equal(u16, 0xf0ff);
	assert_int_equal(ofi_atomic_exec(OFI_ATOMIC_WRITE, FI_PROD, FI_DOUBLE,
					 &d, &sd, NULL, NULL, 1),
			 0);
	assert_true(d == 10.0);
	/* CSWAP_GT swaps when the compare value exceeds the target. */
	assert_int_equal(ofi_atomic_exec(OFI_ATOMIC_COMPARE, FI_CSWAP_GT,
					 FI_INT32, &i32, &s32, &c32, &r32, 1),
			 0);
	assert_int_equal(r32, 5);
	assert_int_equal(i32, 9);
}

static void test_query_rules(void **state)
{
	const size_t room[OFI_ATOMIC_KINDS] = {4096, 2048, 1024};
	struct fi_atomic_attr attr;

	(void)state;
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(ofi_query_atomic(FI_UINT64, FI_SUM, &attr, 0, room),
			 0);
	assert_int_equal(attr.size, 8);
	assert_int_equal(attr.count, 512);
	/* FI_ATOMIC_READ is fetch-only. */
	assert_int_equal(
		ofi_query_atomic(FI_UINT64, FI_ATOMIC_READ, &attr, 0, room),
		-FI_EOPNOTSUPP);
	assert_int_equal(ofi_query_atomic(FI_UINT64, FI_ATOMIC_READ, &attr,
					  FI_FETCH_ATOMIC, room),
			 0);
	assert_int_equal(attr.count, 256);
	assert_int_equal(ofi_query_atomic(FI_UINT32, FI_CSWAP, &attr,
					  FI_COMPARE_ATOMIC, room),
			 0);
	assert_int_equal(attr.size, 4);
	assert_int_equal(attr.count, 256);
	assert_int_equal(ofi_query_atomic(FI_UINT32, FI_CSWAP, &attr, 0, room),
			 -FI_EOPNOTSUPP);
	assert_int_equal(ofi_query_atomic(FI_UINT32, FI_SUM, &attr,
					  FI_COMPARE_ATOMIC, room),
			 -FI_EOPNOTSUPP);
	assert_int_equal(
		ofi_query_atomic(FI_LONG_DOUBLE, FI_MIN, &attr, 0, room), 0);
	assert_int_equal(attr.size, sizeof(long double));
	assert_int_equal(ofi_query_atomic(FI_UINT32, FI_SUM, &attr,
					  FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC,
					  room),
			 -FI_EINVAL);
	assert_int_equal(
		ofi_query_atomic(FI_UINT32, FI_SUM, &attr, FI_TAGGED, room),
		-FI_EOPNOTSUPP);
	assert_int_equal(ofi_query_atomic(FI_UINT32, FI_SUM, &attr,
					  FI_TAGGED | FI_FETCH_ATOMIC, room),
			 -FI_EOPNOTSUPP);
	assert_int_equal(
		ofi_query_atomic(FI_UINT32, FI_SUM, &attr, FI_SEND, room),
		-FI_EINVAL);
	assert_int_equal(ofi_query_atomic(FI_UINT32, FI_SUM, NULL, 0, room),
			 -FI_EINVAL);
	assert_int_equal(
		ofi_query_atomic((enum fi_datatype)99, FI_SUM, &attr, 0, room),
		-FI_EOPNOTSUPP);
	assert_int_equal(ofi_query_atomic(FI_VOID, FI_SUM, &attr, 0, room),
			 -FI_EOPNOTSUPP);
	assert_int_equal(
		ofi_query_atomic(FI_UINT32, FI_ATOMIC_OP_LAST, &attr, 0, room),
		-FI_EOPNOTSUPP);
	assert_int_equal(
		ofi_query_atomic(FI_UINT32, (enum fi_op) - 1, &attr, 0, room),
		-FI_EOPNOTSUPP);
	assert_int_equal(ofi_datatype_size((enum fi_datatype) - 1), 0);
}

/* Misaligned targets are refused untouched; operands may be anywhere. */
static void test_alignment(void **state)
{
	_Alignas(16) uint8_t buf[64], ops[64], res[64], before[64];
	enum fi_datatype dt;
	uint64_t v, want;
	int ret;

	(void)state;
	for (dt = FI_INT8; dt <= FI_UINT128; dt++) {
		memset(buf, 0x11, sizeof(buf));
		memset(ops, 0x01, sizeof(ops));
		memcpy(before, buf, sizeof(buf));
		ret = ofi_atomic_exec(OFI_ATOMIC_FETCH, FI_ATOMIC_WRITE, dt,
				      buf + 1, ops, NULL, res, 2);
		if (ofi_datatype_size(dt) == 1) {
			assert_int_equal(ret, 0);
			continue;
		}
		if (ret != -FI_EINVAL)
			fail_msg("datatype %d misaligned: %d", dt, ret);
		assert_memory_equal(buf, before, sizeof(buf));
		assert_false(ofi_atomic_aligned(dt, buf + 1));
		assert_true(ofi_atomic_aligned(dt, buf));
	}
	/* Operand and result at odd addresses. */
	v = 40;
	want = 42;
	memcpy(ops + 3, &(uint64_t){2}, 8);
	assert_int_equal(ofi_atomic_exec(OFI_ATOMIC_FETCH, FI_SUM, FI_UINT64,
					 &v, ops + 3, NULL, res + 5, 1),
			 0);
	assert_int_equal(v, want);
	memcpy(&want, res + 5, 8);
	assert_int_equal(want, 40);
	/* Missing operands are an error, not a crash. */
	assert_int_equal(ofi_atomic_exec(OFI_ATOMIC_WRITE, FI_SUM, FI_UINT64,
					 &v, NULL, NULL, NULL, 1),
			 -FI_EINVAL);
	assert_int_equal(ofi_atomic_exec(OFI_ATOMIC_COMPARE, FI_CSWAP,
					 FI_UINT64, &v, ops, NULL, res, 1),
			 -FI_EINVAL);
	assert_int_equal(ofi_atomic_exec(OFI_ATOMIC_WRITE, FI_SUM, FI_UINT64,
					 NULL, ops, NULL, NULL, 1),
			 -FI_EINVAL);
	assert_int_equal(v, 42);
}

#define THREADS 4
#define ITERS	20000

static uint64_t shared_counter;

static void *adder(void *arg)
{
	const uint64_t one = 1;
	int i;

	(void)arg;
	for (i = 0; i < ITERS; i++)
		ofi_atomic_exec(OFI_ATOMIC_WRITE, FI_SUM, FI_UINT64,
				&shared_counter, &one, NULL, NULL, 1);
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];
	int i;

	(void)state;
	shared_counter = 0;
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, adder, NULL), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(shared_counter, (uint64_t)THREADS * ITERS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_integers),
		cmocka_unit_test(test_ops_reals),
		cmocka_unit_test(test_ops_complex),
		cmocka_unit_test(test_known_values),
		cmocka_unit_test(test_query_rules),
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests_name("util_atomic", tests, NULL, NULL);
}
