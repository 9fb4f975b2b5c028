/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rdm_coll.c - every collective of fi_collective(3) over N processes that
 * this program forks itself (-N, up to 64), results checked against a local
 * sequential computation: barrier, broadcast, (all)reduce and
 * reduce_scatter for every op/datatype fi_query_collective claims,
 * allgather, gather, scatter, alltoall, counts 0, 1, odd and large, a
 * non-commutative user op (2x2 matrix product, bit-exact canonical
 * order), sub-groups from AV-set arithmetic, two groups in flight,
 * join/close cycles, and (-K) a member killed mid-collective, which must
 * make the others fail within 5 s, or (-J) before it joins, which must
 * make the others' join fail within 5 s; (-H, shm) a hostile member that
 * scribbles over the other members' group regions it maps
 * (/dev/shm/ofi_coll_*), which must not crash them (results and
 * completion are then anyone's). One "PASS name" line per check.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <complex.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "coll_bench_points.h"

#define MAXP 64
/* Members past this many multiply by 1 and add 0 in check_reductions:
 * its exact products and sums then fit an 8-bit type at any size. */
#define EXACT_MAXP 16
#define NAMELEN	   256
#define TIMEOUT_S  60

struct shared {
	/* -B: each rank's median per call, us */
	double med[MAXP][COLL_BENCH_NPOINTS];
	int ready;
	size_t len[MAXP];
	char name[MAXP][NAMELEN];
};

static struct shared *sh;
static int nprocs = 2, rank, cycles = 200, kill_test, kill_join, bench,
	   bench_iters = 200;
/* -H: the last rank scribbles; waits time out softly (wait_ctx) */
static int hostile;
/* -R: the last rank writes through receivers' stale direct keys */
static int stale_keys;
static size_t bench_max = SIZE_MAX;
static const char *prov = "shm";
static bool av_map;
/* -S: FI_PROGRESS_AUTO, and completions awaited in fi_cq_sread */
static bool use_sread;
#define SREAD_MS 10000
/* Empty polls give the core away: always in the checks; in -B only when
 * the ranks outnumber the CPUs, as Open MPI's mpi_yield_when_idle does,
 * and never with -Y (a busy-polling caller, as fabtests' pingpongs) */
static bool poll_yields = true, never_yield;
/* -P: the checks with ranks pinned as -B pins them */
static bool pinned;
/* -U: -B with the ranks left where the scheduler puts them */
static bool unpinned;
/* -K: the rank killed (-k; default the last) */
static int victim = -1;

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *ep;
static fi_addr_t addrs[MAXP];

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "rank %d: %s:%d: ", rank, __func__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		exit(1);                                                       \
	} while (0)

#define CHK(call)                                                              \
	do {                                                                   \
		ssize_t _r = (call);                                           \
		if (_r)                                                        \
			FAIL("%s: %zd (%s)", #call, _r,                        \
			     fi_strerror((int)-_r));                           \
	} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pass(const char *what)
{
	static double last;
	double t = now_s();

	if (!rank)
		printf("PASS %s (%.2f s)\n", what, last ? t - last : 0.0);
	last = t;
}

/* Waits for the completion of @ctx: 0, or the error it failed with. */
static int wait_ctx(void *ctx, double limit)
{
	struct fi_cq_err_entry err;
	struct fi_cq_entry e;
	double start = 0;
	unsigned polls = 0;
	ssize_t r;

	for (;;) {
		/* Nothing else drives the engine meanwhile: one sleep must
		 * see the collective through (the op takes microseconds). */
		r = use_sread ? fi_cq_sread(cq, &e, 1, NULL, SREAD_MS)
			      : fi_cq_read(cq, &e, 1);
		if (use_sread && r == -FI_EAGAIN)
			FAIL("fi_cq_sread: nothing in %d ms", SREAD_MS);
		if (r == 1) {
			if (e.op_context != ctx)
				FAIL("completion of %p, expected %p",
				     e.op_context, ctx);
			return 0;
		}
		if (r == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			if (err.op_context != ctx)
				FAIL("error of another op");
			if (!(err.flags & FI_COLLECTIVE))
				FAIL("error flags %llx",
				     (unsigned long long)err.flags);
			return err.err ? err.err : -1;
		}
		if (r != -FI_EAGAIN)
			FAIL("fi_cq_read %zd", r);
		/* From the first empty poll: -B times each call, and an op
		 * done at its first poll would pay a clock read that Open
		 * MPI's timing loop does not make. */
		if (!polls)
			start = now_s();
		if (!(++polls % 1024) && now_s() - start > limit) {
			if (hostile)
				return -FI_ETIMEDOUT;
			FAIL("timed out waiting for a collective");
		}
		if (poll_yields)
			sched_yield();
	}
}

static void wait_ok(void *ctx)
{
	int r = wait_ctx(ctx, TIMEOUT_S);

	if (r)
		FAIL("collective failed: %s", fi_strerror(r));
}

/* Posts with retries on -FI_EAGAIN. */
#define POST(call)                                                             \
	do {                                                                   \
		ssize_t _r;                                                    \
		while ((_r = (call)) == -FI_EAGAIN)                            \
			(void)fi_cq_read(cq, NULL, 0);                         \
		if (_r)                                                        \
			FAIL("%s: %s", #call, fi_strerror((int)-_r));          \
	} while (0)

static struct fid_mc *join(struct fid_av_set *set, fi_addr_t coll_addr)
{
	struct fi_eq_entry e;
	struct fid_mc *mc;
	uint32_t ev;
	int ctx;
	double start = now_s();
	ssize_t r;

	CHK(fi_join_collective(ep, coll_addr, set, 0, &mc, &ctx));
	for (;;) {
		r = fi_eq_read(eq, &ev, &e, sizeof(e), 0);
		if (r == sizeof(e)) {
			/* Debian's names other fids: -B only asks the event */
			if (ev != FI_JOIN_COMPLETE ||
			    (!bench &&
			     (e.fid != &mc->fid || e.context != &ctx)))
				FAIL("bad join event %u", ev);
			return mc;
		}
		if (r != -FI_EAGAIN)
			FAIL("fi_eq_read %zd", r);
		/* other libfabrics progress joins through the CQ only */
		if (bench)
			(void)fi_cq_read(cq, NULL, 0);
		sched_yield();
		if (now_s() - start > TIMEOUT_S)
			FAIL("join timed out");
	}
}

/* ------------------------------------------------------------------ */
/* Values of every datatype, kept small so every result is exact.      */

typedef long double ld;

static size_t dt_size(enum fi_datatype dt)
{
	static const size_t s[] = {1,
				   1,
				   2,
				   2,
				   4,
				   4,
				   8,
				   8,
				   4,
				   8,
				   8,
				   16,
				   sizeof(long double),
				   sizeof(long double complex),
				   16,
				   16};

	return dt < sizeof(s) / sizeof(s[0]) ? s[dt] : 0;
}

static void put(enum fi_datatype dt, void *b, size_t i, ld v)
{
	switch (dt) {
	case FI_INT8:
		((int8_t *)b)[i] = (int8_t)v;
		break;
	case FI_UINT8:
		((uint8_t *)b)[i] = (uint8_t)v;
		break;
	case FI_INT16:
		((int16_t *)b)[i] = (int16_t)v;
		break;
	case FI_UINT16:
		((uint16_t *)b)[i] = (uint16_t)v;
		break;
	case FI_INT32:
		((int32_t *)b)[i] = (int32_t)v;
		break;
	case FI_UINT32:
		((uint32_t *)b)[i] = (uint32_t)v;
		break;
	case FI_INT64:
		((int64_t *)b)[i] = (int64_t)v;
		break;
	case FI_UINT64:
		((uint64_t *)b)[i] = (uint64_t)v;
		break;
	case FI_FLOAT:
		((float *)b)[i] = (float)v;
		break;
	case FI_DOUBLE:
		((double *)b)[i] = (double)v;
		break;
	case FI_FLOAT_COMPLEX:
		((float complex *)b)[i] = (float)v;
		break;
	case FI_DOUBLE_COMPLEX:
		((double complex *)b)[i] = (double)v;
		break;
	case FI_LONG_DOUBLE:
		((long double *)b)[i] = v;
		break;
	case FI_LONG_DOUBLE_COMPLEX:
		((long double complex *)b)[i] = v;
		break;
	case FI_INT128:
		((__int128 *)b)[i] = (__int128)v;
		break;
	default:
		((unsigned __int128 *)b)[i] = (unsigned __int128)v;
		break;
	}
}

static ld get(enum fi_datatype dt, const void *b, size_t i)
{
	switch (dt) {
	case FI_INT8:
		return ((const int8_t *)b)[i];
	case FI_UINT8:
		return ((const uint8_t *)b)[i];
	case FI_INT16:
		return ((const int16_t *)b)[i];
	case FI_UINT16:
		return ((const uint16_t *)b)[i];
	case FI_INT32:
		return ((const int32_t *)b)[i];
	case FI_UINT32:
		return ((const uint32_t *)b)[i];
	case FI_INT64:
		return ((const int64_t *)b)[i];
	case FI_UINT64:
		return ((const uint64_t *)b)[i];
	case FI_FLOAT:
		return ((const float *)b)[i];
	case FI_DOUBLE:
		return ((const double *)b)[i];
	case FI_FLOAT_COMPLEX:
		return crealf(((const float complex *)b)[i]);
	case FI_DOUBLE_COMPLEX:
		return creal(((const double complex *)b)[i]);
	case FI_LONG_DOUBLE:
		return ((const long double *)b)[i];
	case FI_LONG_DOUBLE_COMPLEX:
		return creall(((const long double complex *)b)[i]);
	case FI_INT128:
		return (ld)((const __int128 *)b)[i];
	default:
		return (ld)((const unsigned __int128 *)b)[i];
	}
}

/* Member @r's element @i for @op: small, exact in every type. */
static ld val(enum fi_op op, int r, size_t i)
{
	switch (op) {
	case FI_PROD:
		return (r + i) % 3 == 0 && r < EXACT_MAXP ? 2 : 1;
	case FI_SUM:
		return r < EXACT_MAXP ? (r * 5 + i) % 13 : 0;
	case FI_LOR:
	case FI_LAND:
	case FI_LXOR:
		return (r * 3 + i) % 2;
	case FI_MIN:
	case FI_MAX:
		return (r * 7 + i * 3) % 11;
	default:
		return (r * 5 + i) % 13;
	}
}

static ld apply(enum fi_op op, ld a, ld b)
{
	int64_t x = (int64_t)a, y = (int64_t)b;

	switch (op) {
	case FI_MIN:
		return a < b ? a : b;
	case FI_MAX:
		return a > b ? a : b;
	case FI_SUM:
		return a + b;
	case FI_PROD:
		return a * b;
	case FI_LOR:
		return (a != 0) || (b != 0);
	case FI_LAND:
		return (a != 0) && (b != 0);
	case FI_LXOR:
		return (a != 0) != (b != 0);
	case FI_BOR:
		return (ld)(x | y);
	case FI_BAND:
		return (ld)(x & y);
	default:
		return (ld)(x ^ y);
	}
}

static ld expect_red(enum fi_op op, size_t i, int n)
{
	ld acc = val(op, 0, i);
	int r;

	for (r = 1; r < n; r++)
		acc = apply(op, acc, val(op, r, i));
	return acc;
}

static void *xalloc(size_t len)
{
	void *p = aligned_alloc(64, len ? (len + 63) / 64 * 64 : 64);

	if (!p)
		FAIL("out of memory");
	memset(p, 0xee, len ? len : 1);
	return p;
}

/* ------------------------------------------------------------------ */
/* Checks.                                                              */

static void check_reductions(struct fid_mc *mc)
{
	static const enum fi_op ops[] = {FI_MIN,  FI_MAX,  FI_SUM, FI_PROD,
					 FI_LOR,  FI_LAND, FI_BOR, FI_BAND,
					 FI_LXOR, FI_BXOR};
	static const size_t counts[] = {0, 1, 13};
	fi_addr_t ca = fi_mc_addr(mc);
	struct fi_collective_attr attr;
	size_t o, t, c, i, cnt, sz, tested = 0;
	enum fi_datatype dt;
	uint8_t *in, *out;
	ssize_t r;
	int ctx, q;

	for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (t = 0; t <= FI_UINT128; t++) {
			dt = (enum fi_datatype)t;
			memset(&attr, 0, sizeof(attr));
			attr.op = ops[o];
			attr.datatype = dt;
			q = fi_query_collective(domain, FI_ALLREDUCE, &attr, 0);
			sz = dt_size(dt);
			in = xalloc(13 * sz * nprocs);
			out = xalloc(13 * sz * nprocs);
			if (q) {
				r = fi_allreduce(ep, in, 1, NULL, out, NULL, ca,
						 dt, ops[o], 0, &ctx);
				if (r != -FI_EOPNOTSUPP)
					FAIL("query refused op %zu dt %zu "
					     "but allreduce said %zd",
					     o, t, r);
				free(in);
				free(out);
				continue;
			}
			if (attr.datatype_attr.size != sz ||
			    attr.max_members < (size_t)nprocs)
				FAIL("query attr wrong");
			for (c = 0; c < 3; c++) {
				cnt = counts[c];
				for (i = 0; i < cnt * nprocs; i++)
					put(dt, in, i, val(ops[o], rank, i));
				memset(out, 0xee, 13 * sz * nprocs);
				POST(fi_allreduce(ep, in, cnt, NULL, out, NULL,
						  ca, dt, ops[o], 0, &ctx));
				wait_ok(&ctx);
				for (i = 0; i < cnt; i++)
					if (get(dt, out, i) !=
					    expect_red(ops[o], i, nprocs))
						FAIL("allreduce op %zu dt %zu "
						     "count %zu elem %zu",
						     o, t, cnt, i);
				/* reduce at the last member */
				memset(out, 0xee, 13 * sz * nprocs);
				POST(fi_reduce(ep, in, cnt, NULL,
					       rank == nprocs - 1 ? out : NULL,
					       NULL, ca, addrs[nprocs - 1], dt,
					       ops[o], 0, &ctx));
				wait_ok(&ctx);
				for (i = 0; rank == nprocs - 1 && i < cnt; i++)
					if (get(dt, out, i) !=
					    expect_red(ops[o], i, nprocs))
						FAIL("reduce op %zu dt %zu", o,
						     t);
				/* block reduce_scatter: count each */
				POST(fi_reduce_scatter(ep, in, cnt, NULL, out,
						       NULL, ca, dt, ops[o], 0,
						       &ctx));
				wait_ok(&ctx);
				for (i = 0; i < cnt; i++)
					if (get(dt, out, i) !=
					    expect_red(ops[o], rank * cnt + i,
						       nprocs))
						FAIL("reduce_scatter op %zu dt "
						     "%zu",
						     o, t);
			}
			tested++;
			free(in);
			free(out);
		}
	}
	if (tested < 100)
		FAIL("only %zu op/datatype pairs claimed", tested);
	pass("reductions_all_ops_types");
}

static void check_bcast(struct fid_mc *mc)
{
	static const size_t counts[] = {0, 1, 7, 1000, 70001, 4 << 20};
	fi_addr_t ca = fi_mc_addr(mc);
	size_t c, i;
	int root, ctx;
	uint8_t *b;

	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (root = 0; root < nprocs; root += nprocs - 1) {
			b = xalloc(counts[c]);
			for (i = 0; rank == root && i < counts[c]; i++)
				b[i] = (uint8_t)(i * 7 + root + c);
			POST(fi_broadcast(ep, b, counts[c], NULL, ca,
					  addrs[root], FI_UINT8, 0, &ctx));
			wait_ok(&ctx);
			for (i = 0; i < counts[c]; i++)
				if (b[i] != (uint8_t)(i * 7 + root + c))
					FAIL("bcast count %zu root %d byte %zu",
					     counts[c], root, i);
			free(b);
			if (nprocs == 1)
				break;
		}
	}
	pass("broadcast");
}

/*
 * Broadcasts large enough to be written straight into the receivers'
 * buffers (FI_COLL_DIRECT_MIN), on two buffers in turn, each root twice
 * in a row, and the last rounds on buffers freed and allocated again
 * (often at the same address): the registrations receivers keep for
 * their next calls must land each call's bytes in that call's buffer,
 * never in the other one.
 */
static void check_bcast_reuse(struct fid_mc *mc)
{
	const size_t len = 512 << 10, rounds = 16;
	fi_addr_t ca = fi_mc_addr(mc);
	uint8_t *b[2] = {xalloc(len), xalloc(len)}, *p, *o;
	size_t k, i;
	int root, ctx;

	for (k = 0; k < rounds; k++) {
		root = (int)(k / 2 % (size_t)nprocs);
		if (k >= rounds - 4) {
			free(b[k % 2]);
			b[k % 2] = xalloc(len);
		}
		p = b[k % 2];
		o = b[(k + 1) % 2];
		for (i = 0; i < len; i++)
			p[i] = rank == root ? (uint8_t)(i * 13 + k) : 0xee;
		POST(fi_broadcast(ep, p, len, NULL, ca, addrs[root], FI_UINT8,
				  0, &ctx));
		wait_ok(&ctx);
		for (i = 0; i < len; i++) {
			if (p[i] != (uint8_t)(i * 13 + k))
				FAIL("bcast reuse round %zu byte %zu", k, i);
			/* the other buffer: still the previous round's */
			if (k && o[i] != (uint8_t)(i * 13 + k - 1))
				FAIL("bcast reuse round %zu: other buffer "
				     "byte %zu changed",
				     k, i);
		}
	}
	free(b[0]);
	free(b[1]);
	pass("broadcast_buffer_reuse");
}

static void check_large_allreduce(struct fid_mc *mc)
{
	size_t cnt = (4 << 20) / sizeof(double), i;
	double *in = xalloc(cnt * 8), *out = xalloc(cnt * 8);
	int ctx;

	for (i = 0; i < cnt; i++)
		in[i] = (double)((rank + 1) * (i % 1000));
	POST(fi_allreduce(ep, in, cnt, NULL, out, NULL, fi_mc_addr(mc),
			  FI_DOUBLE, FI_SUM, 0, &ctx));
	wait_ok(&ctx);
	for (i = 0; i < cnt; i++)
		if (out[i] != (double)(nprocs * (nprocs + 1) / 2 * (i % 1000)))
			FAIL("large allreduce elem %zu", i);
	free(in);
	free(out);
	pass("allreduce_4MiB_double_sum");
}

static void check_blocks(struct fid_mc *mc)
{
	static const size_t counts[] = {0, 1, 5, 20001};
	fi_addr_t ca = fi_mc_addr(mc);
	uint32_t *in, *out;
	size_t c, i, j, cnt;
	int ctx, root;

	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		cnt = counts[c];
		in = xalloc(cnt * nprocs * 4);
		out = xalloc(cnt * nprocs * 4);
		/* allgather: block r holds r's */
		for (i = 0; i < cnt; i++)
			in[i] = (uint32_t)(rank * 100000 + i);
		POST(fi_allgather(ep, in, cnt, NULL, out, NULL, ca, FI_UINT32,
				  0, &ctx));
		wait_ok(&ctx);
		for (j = 0; j < (size_t)nprocs; j++)
			for (i = 0; i < cnt; i++)
				if (out[j * cnt + i] != j * 100000 + i)
					FAIL("allgather count %zu", cnt);
		/* gather at 1 % n */
		root = 1 % nprocs;
		memset(out, 0, cnt * nprocs * 4);
		POST(fi_gather(ep, in, cnt, NULL, rank == root ? out : NULL,
			       NULL, ca, addrs[root], FI_UINT32, 0, &ctx));
		wait_ok(&ctx);
		for (j = 0; rank == root && j < (size_t)nprocs; j++)
			for (i = 0; i < cnt; i++)
				if (out[j * cnt + i] != j * 100000 + i)
					FAIL("gather count %zu", cnt);
		/* scatter from the last member */
		root = nprocs - 1;
		for (i = 0; i < cnt * nprocs; i++)
			in[i] = (uint32_t)(i * 3 + 1);
		memset(out, 0, cnt * nprocs * 4);
		POST(fi_scatter(ep, rank == root ? in : NULL, cnt, NULL, out,
				NULL, ca, addrs[root], FI_UINT32, 0, &ctx));
		wait_ok(&ctx);
		for (i = 0; i < cnt; i++)
			if (out[i] != (uint32_t)((rank * cnt + i) * 3 + 1))
				FAIL("scatter count %zu", cnt);
		/* alltoall: block j of member r is r*1000+j */
		for (j = 0; j < (size_t)nprocs; j++)
			for (i = 0; i < cnt; i++)
				in[j * cnt + i] =
					(uint32_t)(rank * 1000 + j + i * 7);
		POST(fi_alltoall(ep, in, cnt, NULL, out, NULL, ca, FI_UINT32, 0,
				 &ctx));
		wait_ok(&ctx);
		for (j = 0; j < (size_t)nprocs; j++)
			for (i = 0; i < cnt; i++)
				if (out[j * cnt + i] !=
				    (uint32_t)(j * 1000 + rank + i * 7))
					FAIL("alltoall count %zu", cnt);
		free(in);
		free(out);
	}
	pass("allgather_gather_scatter_alltoall");
}

static void check_msg(struct fid_mc *mc)
{
	uint64_t v = (uint64_t)rank + 1, res = 0;
	struct fi_ioc in = {&v, 1}, out = {&res, 1};
	struct fi_msg_collective msg = {
		.msg_iov = &in,
		.iov_count = 1,
		.coll_addr = fi_mc_addr(mc),
		.root_addr = FI_ADDR_NOTAVAIL,
		.coll = FI_ALLREDUCE,
		.datatype = FI_UINT64,
		.op = FI_SUM,
	};
	int ctx;

	msg.context = &ctx;
	POST(ep->collective->msg(ep, &msg, &out, NULL, 1, 0));
	wait_ok(&ctx);
	if (res != (uint64_t)nprocs * (nprocs + 1) / 2)
		FAIL("msg allreduce %llu", (unsigned long long)res);
	pass("collective_msg");
}

#ifdef FI_USER_OP_BASE
/* 2x2 matrices of uint64: inout = in x inout (not commutative). */
static void mat_mul(const void *in, void *inout, size_t count,
		    enum fi_datatype dt, void *ctx)
{
	const uint64_t *a = in;
	uint64_t *b = inout, r[4];
	size_t m;

	(void)dt;
	++*(int *)ctx;
	for (m = 0; m + 4 <= count; m += 4, a += 4, b += 4) {
		r[0] = a[0] * b[0] + a[1] * b[2];
		r[1] = a[0] * b[1] + a[1] * b[3];
		r[2] = a[2] * b[0] + a[3] * b[2];
		r[3] = a[2] * b[1] + a[3] * b[3];
		memcpy(b, r, sizeof(r));
	}
}

static void mat_of(int r, size_t k, uint64_t *m)
{
	m[0] = (uint64_t)r * 3 + k + 1;
	m[1] = (uint64_t)r + 2 * k;
	m[2] = 7 * (uint64_t)r + 5;
	m[3] = (uint64_t)r * r + k + 3;
}

static void check_user_op(struct fid_mc *mc)
{
	size_t nm = 3, k, i;
	int calls = 0, ctx, r;
	struct fi_user_op u = {mat_mul, &calls, 0, 0};
	union fi_override_op fn = {.user_op = &u};
	uint64_t in[12], out[12], exp[12], m[4], tmp[4];

	CHK(fi_set_op(&domain->fid, FI_OVERRIDE_USER_OP, &fn, 0));
	if ((int)u.op < FI_USER_OP_BASE)
		FAIL("user op value %d", u.op);
	for (k = 0; k < nm; k++) {
		mat_of(rank, k, in + 4 * k);
		mat_of(0, k, exp + 4 * k);
		for (r = 1; r < nprocs; r++) {
			mat_of(r, k, m);
			memcpy(tmp, exp + 4 * k, sizeof(tmp));
			mat_mul(tmp, m, 4, FI_UINT64, &(int){0});
			memcpy(exp + 4 * k, m, sizeof(m));
		}
	}
	POST(fi_allreduce(ep, in, 4 * nm, NULL, out, NULL, fi_mc_addr(mc),
			  FI_UINT64, u.op, 0, &ctx));
	wait_ok(&ctx);
	for (i = 0; i < 4 * nm; i++)
		if (out[i] != exp[i])
			FAIL("user op allreduce elem %zu", i);
	memset(out, 0, sizeof(out));
	POST(fi_reduce(ep, in, 4 * nm, NULL, out, NULL, fi_mc_addr(mc),
		       addrs[nprocs / 2], FI_UINT64, u.op, 0, &ctx));
	wait_ok(&ctx);
	for (i = 0; rank == nprocs / 2 && i < 4 * nm; i++)
		if (out[i] != exp[i])
			FAIL("user op reduce elem %zu", i);
	if (nprocs > 1 && rank == 0 && !calls)
		FAIL("user op never called");
	u.fn = NULL;
	CHK(fi_set_op(&domain->fid, FI_OVERRIDE_USER_OP, &fn, 0));
	r = (int)fi_allreduce(ep, in, 4, NULL, out, NULL, fi_mc_addr(mc),
			      FI_UINT64, (enum fi_op)u.op, 0, &ctx);
	if (r != -FI_EOPNOTSUPP)
		FAIL("unregistered user op accepted: %d", r);
	pass("user_op_noncommutative_matrix");
}
#endif

/* Evens (strided), odds (universe minus evens), and their union. */
static void check_subgroups(void)
{
	struct fi_av_set_attr attr = {0};
	struct fid_av_set *all, *even, *odd;
	struct fid_mc *mc;
	fi_addr_t ca;
	uint64_t v = (uint64_t)rank + 1, res[2];
	uint64_t want;
	int ctx[2], r;

	attr.count = 0;
	attr.start_addr = FI_ADDR_NOTAVAIL;
	attr.end_addr = FI_ADDR_NOTAVAIL;
	attr.flags = FI_UNIVERSE;
	CHK(fi_av_set(av, &attr, &all, NULL));
	attr.flags = 0;
	if (av_map) {
		CHK(fi_av_set(av, &attr, &even, NULL));
		for (r = 0; r < nprocs; r += 2)
			CHK(fi_av_set_insert(even, addrs[r]));
	} else {
		attr.start_addr = 0;
		attr.end_addr = (fi_addr_t)nprocs - 1;
		attr.stride = 2;
		attr.count = (size_t)nprocs;
		CHK(fi_av_set(av, &attr, &even, NULL));
	}
	attr.start_addr = attr.end_addr = FI_ADDR_NOTAVAIL;
	attr.stride = 0;
	CHK(fi_av_set(av, &attr, &odd, NULL));
	CHK(fi_av_set_union(odd, all));
	CHK(fi_av_set_diff(odd, even));
	/* my half, then everyone in the order evens, odds */
	CHK(fi_av_set_addr(rank % 2 ? odd : even, &ca));
	mc = join(rank % 2 ? odd : even, ca);
	want = 0;
	for (r = rank % 2; r < nprocs; r += 2)
		want += (uint64_t)r + 1;
	POST(fi_allreduce(ep, &v, 1, NULL, &res[0], NULL, fi_mc_addr(mc),
			  FI_UINT64, FI_SUM, 0, &ctx[0]));
	wait_ok(&ctx[0]);
	if (res[0] != want)
		FAIL("subgroup sum %llu want %llu", (unsigned long long)res[0],
		     (unsigned long long)want);
	CHK(fi_close(&mc->fid));
	CHK(fi_av_set_union(even, odd));
	CHK(fi_av_set_addr(even, &ca));
	mc = join(even, ca);
	/* rank order is evens then odds: gather shows it */
	{
		uint64_t got[MAXP];
		int k = 0;

		POST(fi_allgather(ep, &v, 1, NULL, got, NULL, fi_mc_addr(mc),
				  FI_UINT64, 0, &ctx[0]));
		wait_ok(&ctx[0]);
		for (r = 0; r < nprocs; r += 2)
			if (got[k++] != (uint64_t)r + 1)
				FAIL("union order");
		for (r = 1; r < nprocs; r += 2)
			if (got[k++] != (uint64_t)r + 1)
				FAIL("union order");
	}
	CHK(fi_close(&mc->fid));
	CHK(fi_close(&odd->fid));
	CHK(fi_close(&even->fid));
	CHK(fi_close(&all->fid));
	pass("subgroups_av_set_arithmetic");
}

static void check_two_groups(struct fid_mc *world)
{
	struct fid_mc *dup = join(NULL, fi_mc_addr(world));
	uint64_t a = 1, b = (uint64_t)rank, ra = 0, rb = 0;
	int ca, cb;

	POST(fi_allreduce(ep, &a, 1, NULL, &ra, NULL, fi_mc_addr(world),
			  FI_UINT64, FI_SUM, 0, &ca));
	POST(fi_allreduce(ep, &b, 1, NULL, &rb, NULL, fi_mc_addr(dup),
			  FI_UINT64, FI_MAX, 0, &cb));
	{ /* completions in any order */
		struct fi_cq_entry e[2];
		int got = 0;
		double start = now_s();
		ssize_t r;

		while (got < 2) {
			r = fi_cq_read(cq, &e[got], 1);
			if (r == 1)
				got++;
			else if (r != -FI_EAGAIN)
				FAIL("two groups: %zd", r);
			sched_yield();
			if (now_s() - start > TIMEOUT_S)
				FAIL("two groups timed out");
		}
	}
	if (ra != (uint64_t)nprocs || rb != (uint64_t)nprocs - 1)
		FAIL("two groups results");
	CHK(fi_close(&dup->fid));
	pass("two_groups_in_flight");
}

static void check_cycles(void)
{
	struct fid_mc *mc;
	int i, ctx;

	for (i = 0; i < cycles; i++) {
		mc = join(NULL, FI_ADDR_NOTAVAIL);
		if (i % 50 == 0) {
			POST(fi_barrier(ep, fi_mc_addr(mc), &ctx));
			wait_ok(&ctx);
		}
		CHK(fi_close(&mc->fid));
	}
	pass("join_close_cycles");
}

/* The last member dies; the others must see an error within 5 s. */
static void check_kill(struct fid_mc *mc)
{
	uint64_t v = 1, res;
	double start;
	int ctx, r, i;

	POST(fi_barrier(ep, fi_mc_addr(mc), &ctx));
	wait_ok(&ctx);
	if (rank == victim)
		raise(SIGKILL);
	usleep(100000);
	start = now_s();
	for (i = 0; i < 1000; i++) {
		r = (int)fi_allreduce(ep, &v, 1, NULL, &res, NULL,
				      fi_mc_addr(mc), FI_UINT64, FI_SUM, 0,
				      &ctx);
		if (!r)
			r = wait_ctx(&ctx, 20);
		if (r)
			break;
	}
	if (!r)
		FAIL("no error with a member dead");
	if (now_s() - start > 5.0)
		FAIL("error after %.1f s", now_s() - start);
	pass("killed_member_fails_others");
}

/*
 * -J: the last member dies before it joins; the others' join must end
 * within 5 s with an error event for their group and context (a dead
 * member fails it, fi_collective(3)), and the group must still close.
 */
static void check_kill_join(void)
{
	struct fi_eq_err_entry ee = {0};
	struct fi_eq_entry e;
	struct fid_mc *mc;
	double start;
	uint32_t ev;
	ssize_t r;
	int ctx;

	if (rank == victim)
		raise(SIGKILL);
	usleep(100000);
	start = now_s();
	CHK(fi_join_collective(ep, FI_ADDR_NOTAVAIL, NULL, 0, &mc, &ctx));
	while ((r = fi_eq_read(eq, &ev, &e, sizeof(e), 0)) == -FI_EAGAIN) {
		if (now_s() - start > 5.0)
			FAIL("join still waiting %.1f s after a member died",
			     now_s() - start);
		sched_yield();
	}
	if (r != -FI_EAVAIL)
		FAIL("join with a member dead: fi_eq_read %zd", r);
	r = fi_eq_readerr(eq, &ee, 0);
	if (r < 0 || ee.fid != &mc->fid || ee.context != &ctx ||
	    ee.err != FI_EIO)
		FAIL("join error event: %zd, err %d", r, ee.err);
	if (now_s() - start > 5.0)
		FAIL("join failed after %.1f s", now_s() - start);
	CHK(fi_close(&mc->fid));
	pass("killed_member_fails_join");
}

/*
 * -H: the objects of every other rank's regions of the groups we are in
 * (ofi_coll_<address without fi_shm://, '/' as '_'>_<key>), mapped.
 */
static size_t map_victims(void **map, size_t *len, size_t max)
{
	char pre[NAMELEN + 16], path[NAMELEN + 300];
	const char *a;
	struct dirent *de;
	struct stat st;
	size_t k = 0, i;
	DIR *d;
	int r, fd;

	for (r = 0; r < nprocs; r++) {
		if (r == rank)
			continue;
		a = strstr(sh->name[r], "://");
		snprintf(pre, sizeof(pre), "ofi_coll_%s_", a ? a + 3 : "?");
		for (i = 0; pre[i]; i++)
			pre[i] = pre[i] == '/' ? '_' : pre[i];
		d = opendir("/dev/shm");
		while (d && (de = readdir(d)) && k < max) {
			if (strncmp(de->d_name, pre, strlen(pre)))
				continue;
			snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
			fd = open(path, O_RDWR);
			if (fd < 0 || fstat(fd, &st) || !st.st_size) {
				if (fd >= 0)
					close(fd);
				continue;
			}
			map[k] =
				mmap(NULL, (size_t)st.st_size,
				     PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			close(fd);
			if (map[k] != MAP_FAILED)
				len[k++] = (size_t)st.st_size;
		}
		if (d)
			closedir(d);
	}
	return k;
}

/* Random bytes over the header and the first slots of each victim. */
static void scribble(void **map, size_t *len, size_t k, unsigned *seed)
{
	size_t i, j, n;

	for (i = 0; i < k; i++) {
		n = len[i] < 16384 ? len[i] : 16384;
		for (j = 0; j + 4 <= n; j += 4)
			*(volatile uint32_t *)((char *)map[i] + j) =
				(uint32_t)rand_r(seed) *
				(rand_r(seed) % 4 ? 1u : 0xffffffffu);
	}
}

/*
 * Every rank runs small collectives; the last one first maps the
 * others' group regions (its own FI_COLL_SHARED=0 keeps their names
 * alive: it never says it mapped them) and scribbles over them between
 * its calls. The others must neither crash nor hang past their soft
 * timeouts, and close the group and endpoint cleanly.
 */
static void check_hostile(struct fid_mc *mc)
{
	void *map[64];
	size_t len[64], k = 0, i, j;
	unsigned seed = 1234;
	uint64_t v = (uint64_t)rank, res;
	int ctx, r, ok = 0, failed = 0;

	if (rank == nprocs - 1) {
		k = map_victims(map, len, 64);
		if (!k)
			FAIL("no region of another rank to scribble on");
	}
	for (i = 0; i < 200; i++) {
		scribble(map, len, k, &seed);
		r = (int)(i % 2 ? fi_barrier(ep, fi_mc_addr(mc), &ctx)
				: fi_allreduce(ep, &v, 1, NULL, &res, NULL,
					       fi_mc_addr(mc), FI_UINT64,
					       FI_SUM, 0, &ctx));
		if (!r)
			r = wait_ctx(&ctx, 2);
		if (r == -FI_ETIMEDOUT)
			break; /* a peer may stall us; the close must cope */
		r ? failed++ : ok++;
	}
	for (j = 0; j < k; j++)
		munmap(map[j], len[j]);
	printf("rank %d: %zu regions scribbled, %d ok, %d failed, %s\n", rank,
	       k, ok, failed, i < 200 ? "then stalled" : "no stall");
	pass("hostile_member_survived");
}

/* Writes @len bytes through @key at offset 0 of @dest: its completion. */
static int write_key(fi_addr_t dest, uint64_t key, const void *buf, size_t len)
{
	struct fi_cq_err_entry err;
	struct fi_cq_entry e;
	double start = now_s();
	int ctx;
	ssize_t r;

	do {
		r = fi_write(ep, buf, len, NULL, dest, 0, key, &ctx);
	} while (r == -FI_EAGAIN && now_s() - start < TIMEOUT_S);
	if (r)
		FAIL("fi_write: %zd", r);
	for (;;) {
		r = fi_cq_read(cq, &e, 1);
		if (r == 1)
			return e.op_context == &ctx ? 0 : -1;
		if (r == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			return err.op_context == &ctx ? err.err : -1;
		}
		if (r != -FI_EAGAIN)
			FAIL("fi_cq_read %zd", r);
		if (now_s() - start > TIMEOUT_S)
			FAIL("timed out waiting for a write");
		sched_yield();
	}
}

/*
 * -R: the others receive two large broadcasts from the last rank into
 * one buffer (written straight into it, the second time through the
 * registration they kept from the first); then, while they wait in a
 * barrier, the last rank writes through every key the engine may have
 * given them (its direct keys: 0xc011 tag, bit 47, a small counter):
 * each write must be refused (FI_EACCES), the buffers left alone.
 */
static void check_stale_keys(struct fid_mc *mc)
{
	const size_t len = 512 << 10;
	const int root = nprocs - 1;
	const uint64_t junk = 0x5a5a5a5a5a5a5a5aULL;
	uint8_t *b = xalloc(len);
	int k, r, ctx, refused = 0;
	uint64_t key;
	size_t i;

	for (k = 0; k < 2; k++) {
		for (i = 0; rank == root && i < len; i++)
			b[i] = (uint8_t)(i * 13 + k);
		POST(fi_broadcast(ep, b, len, NULL, fi_mc_addr(mc), addrs[root],
				  FI_UINT8, 0, &ctx));
		wait_ok(&ctx);
	}
	POST(fi_barrier(ep, fi_mc_addr(mc), &ctx));
	wait_ok(&ctx);
	for (r = 0; rank == root && r < root; r++) {
		for (k = 0; k < 64; k++) {
			key = 0xc011000000000000ULL | 1ULL << 47 | (uint64_t)k;
			if (write_key(addrs[r], key, &junk, sizeof(junk)) !=
			    FI_EACCES)
				FAIL("a write through rank %d's key %#llx "
				     "was not refused",
				     r, (unsigned long long)key);
			refused++;
		}
	}
	POST(fi_barrier(ep, fi_mc_addr(mc), &ctx));
	wait_ok(&ctx);
	for (i = 0; i < len; i++)
		if (b[i] != (uint8_t)(i * 13 + 1))
			FAIL("byte %zu of the broadcast buffer changed", i);
	free(b);
	if (rank == root)
		printf("rank %d: %d writes through stale keys refused\n", rank,
		       refused);
	pass("stale_direct_keys_refused");
}

/* ------------------------------------------------------------------ */

static void setup(void)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fi_eq_attr eqa = {.wait_obj = FI_WAIT_NONE};
	struct fi_cq_attr cqa = {
		.format = FI_CQ_FORMAT_CONTEXT,
		.wait_obj = use_sread ? FI_WAIT_UNSPEC : FI_WAIT_NONE,
	};
	struct fi_av_attr ava = {.type = av_map ? FI_AV_MAP : FI_AV_TABLE};
	size_t len = NAMELEN;
	int i, ret;

	hints->caps = FI_MSG | FI_COLLECTIVE | (stale_keys ? FI_RMA : 0);
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (use_sread)
		hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	if (strncmp(prov, "tcp", 3))
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &info);
	else
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE,
				 hints, &info);
	if (ret == -FI_ENODATA && use_sread &&
	    hints->domain_attr->data_progress == FI_PROGRESS_AUTO) {
		/* manual data progress only (shm): sread must work too */
		hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &info);
	}
	if (ret == -FI_ENODATA)
		exit(77); /* no FI_COLLECTIVE here */
	CHK(ret);
	if (!(info->caps & FI_COLLECTIVE))
		FAIL("FI_COLLECTIVE not offered");
	CHK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHK(fi_domain(fabric, info, &domain, NULL));
	CHK(fi_eq_open(fabric, &eqa, &eq, NULL));
	CHK(fi_cq_open(domain, &cqa, &cq, NULL));
	CHK(fi_av_open(domain, &ava, &av, NULL));
	CHK(fi_endpoint(domain, info, &ep, NULL));
	CHK(fi_ep_bind(ep, &eq->fid, 0));
	CHK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHK(fi_ep_bind(ep, &av->fid, 0));
	CHK(fi_enable(ep));
	CHK(fi_getname(&ep->fid, sh->name[rank], &len));
	sh->len[rank] = len;
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < nprocs)
		usleep(1000);
	for (i = 0; i < nprocs; i++)
		if (fi_av_insert(av, sh->name[i], 1, &addrs[i], 0, NULL) != 1)
			FAIL("av insert %d", i);
	fi_freeinfo(hints);
	fi_freeinfo(info);
}

static void teardown(void)
{
	CHK(fi_close(&ep->fid));
	CHK(fi_close(&av->fid));
	CHK(fi_close(&cq->fid));
	CHK(fi_close(&eq->fid));
	CHK(fi_close(&domain->fid));
	CHK(fi_close(&fabric->fid));
}

/* ------------------------------------------------------------------ */
/* -B: barrier, broadcast and allreduce (FI_SUM, double) timings.       */

static double bench_one(struct fid_mc *mc, enum coll_bench_kind kind,
			size_t bytes)
{
	size_t cnt = bytes / 8, i;
	double *in = xalloc(bytes ? bytes : 8),
	       *out = xalloc(bytes ? bytes : 8);
	int iters = coll_bench_iters(bytes, bench_iters), k;
	double *t = calloc((size_t)iters, sizeof(double)), t0, med;
	fi_addr_t ca = fi_mc_addr(mc);
	int ctx;

	for (i = 0; i < cnt; i++)
		in[i] = (double)(rank + i);
	for (k = -10; k < iters; k++) {
		t0 = now_s();
		if (kind == CB_BARRIER)
			POST(fi_barrier(ep, ca, &ctx));
		else if (kind == CB_BCAST)
			POST(fi_broadcast(ep, in, bytes, NULL, ca, addrs[0],
					  FI_UINT8, 0, &ctx));
		else
			POST(fi_allreduce(ep, in, cnt, NULL, out, NULL, ca,
					  FI_DOUBLE, FI_SUM, 0, &ctx));
		wait_ok(&ctx);
		if (k >= 0)
			t[k] = (now_s() - t0) * 1e6;
	}
	med = coll_bench_median(t, (size_t)iters);
	free(t);
	free(in);
	free(out);
	return med;
}

static void run_bench(void)
{
	const struct coll_bench_point *b = coll_bench_points;
	struct fi_av_set_attr attr = {.start_addr = 0, .stride = 1};
	struct fid_av_set *set;
	struct fid_mc *mc;
	fi_addr_t ca;
	double worst;
	int i, r, ctx;

	attr.count = (size_t)nprocs; /* Debian's takes 0 as no room */
	attr.end_addr = (fi_addr_t)nprocs - 1;
	/* contrib/footprint.sh: where each barrier call enters the provider */
	if (getenv("RDM_COLL_MARK") && !rank)
		printf("mark barrier %p\n", (void *)ep->collective->barrier);
	CHK(fi_av_set(av, &attr, &set, NULL));
	CHK(fi_av_set_addr(set, &ca));
	mc = join(set, ca);
	for (i = 0; i < (int)COLL_BENCH_NPOINTS; i++) {
		if (b[i].bytes > bench_max)
			continue;
		sh->med[rank][i] = bench_one(mc, b[i].kind, b[i].bytes);
		POST(fi_barrier(ep, fi_mc_addr(mc), &ctx));
		wait_ok(&ctx);
		if (rank)
			continue;
		for (worst = 0, r = 0; r < nprocs; r++)
			worst = sh->med[r][i] > worst ? sh->med[r][i] : worst;
		coll_bench_print(&b[i], worst);
	}
	CHK(fi_close(&mc->fid));
	CHK(fi_close(&set->fid));
}

/* -B and -P: rank i runs on the i-th allowed CPU (modulo their number),
 * as mpirun binds ranks, so that a run's figures do not depend on where
 * the scheduler happened to put the ranks, and so that the engine sees
 * ranks that share a CPU (ofi_coll_leaders); -B polls spin unless
 * oversubscribed. */
static void place_rank(void)
{
	cpu_set_t allowed, one;
	int cpu, n = 0, want;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	if (bench)
		poll_yields = nprocs > CPU_COUNT(&allowed) && !never_yield;
	if (unpinned)
		return;
	want = rank % CPU_COUNT(&allowed);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || n++ != want)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		(void)sched_setaffinity(0, sizeof(one), &one);
		break;
	}
}

static int rank_main(void)
{
	struct fid_mc *world;
	int ctx, i;

	if (bench || pinned)
		place_rank();
	setup();
	if (bench) {
		run_bench();
		teardown();
		return 0;
	}
	if (kill_join) {
		check_kill_join();
		teardown();
		return 0;
	}
	world = join(NULL, FI_ADDR_NOTAVAIL);
	if (hostile) {
		check_hostile(world);
		CHK(fi_close(&world->fid));
		teardown();
		return 0;
	}
	if (stale_keys) {
		check_stale_keys(world);
		CHK(fi_close(&world->fid));
		teardown();
		return 0;
	}
	if (kill_test) {
		check_kill(world);
		_exit(0); /* a dead peer: nothing to tear down politely */
	}
	for (i = 0; i < 3; i++) {
		POST(fi_barrier(ep, fi_mc_addr(world), &ctx));
		wait_ok(&ctx);
	}
	pass("barrier");
	check_bcast(world);
	check_bcast_reuse(world);
	check_reductions(world);
	check_large_allreduce(world);
	check_blocks(world);
	check_msg(world);
#ifdef FI_USER_OP_BASE
	check_user_op(world);
#endif
	check_subgroups();
	check_two_groups(world);
	check_cycles();
	POST(fi_barrier(ep, fi_mc_addr(world), &ctx));
	wait_ok(&ctx);
	CHK(fi_close(&world->fid));
	teardown();
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p provider] [-N procs] [-c cycles] [-m] [-P] [-S] "
		"[-K|-J [-k rank]] [-H]"
		" [-B [-I iters] [-M bytes] [-Y] [-U]]\n"
		"  -m  FI_AV_MAP (default FI_AV_TABLE)\n"
		"  -P  rank i pinned to the i-th allowed CPU, as -B does\n"
		"  -S  FI_PROGRESS_AUTO, waiting in fi_cq_sread\n"
		"  -B  benchmark barrier, broadcast, allreduce instead\n"
		"      (-I iterations, -M largest size in bytes); ranks are\n"
		"      pinned, and empty polls yield only when oversubscribed\n"
		"      (-Y: never, the caller busy-polls; -U: unpinned)\n"
		"  -K  kill the last member mid-run: others must fail in 5 s\n"
		"      (-k: kill member RANK instead)\n"
		"  -J  kill the last member before it joins: others' join\n"
		"      must fail in 5 s (-k as for -K)\n"
		"  -H  the last member scribbles the others' shared regions\n"
		"  -R  the last member writes through others' stale keys\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	pid_t pid[MAXP];
	int op, i, st, fail = 0, notsupp = 0;

	while ((op = getopt(argc, argv, "p:N:c:mPSKJk:HRBI:M:YUs:h")) != -1) {
		switch (op) {
		case 'p':
			prov = optarg;
			break;
		case 'N':
			nprocs = atoi(optarg);
			break;
		case 'c':
			cycles = atoi(optarg);
			break;
		case 'm':
			av_map = true;
			break;
		case 'P':
			pinned = true;
			break;
		case 'S':
			use_sread = true;
			break;
		case 'K':
			kill_test = 1;
			break;
		case 'J':
			kill_join = 1;
			break;
		case 'k':
			victim = atoi(optarg);
			break;
		case 'H':
			hostile = 1;
			break;
		case 'R':
			stale_keys = 1;
			break;
		case 'B':
			bench = 1;
			break;
		case 'I':
			bench_iters = atoi(optarg);
			break;
		case 'M':
			bench_max = strtoul(optarg, NULL, 0);
			break;
		case 'U':
			unpinned = true;
			break;
		case 'Y':
			never_yield = true;
			break;
		case 's':
			break; /* runfabtests' source address: unused */
		default:
			usage(argv[0]);
		}
	}
	if (victim < 0)
		victim = nprocs - 1;
	if (nprocs < 1 || nprocs > MAXP || victim >= nprocs ||
	    ((kill_test || kill_join || hostile || stale_keys) && nprocs < 2))
		usage(argv[0]);
	setvbuf(stdout, NULL, _IONBF, 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	for (i = 0; i < nprocs; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			return 1;
		if (!pid[i]) {
			rank = i;
			if (hostile && i == nprocs - 1)
				setenv("FI_COLL_SHARED", "0", 1);
			alarm(300);
			exit(rank_main());
		}
	}
	for (i = 0; i < nprocs; i++) {
		if (waitpid(pid[i], &st, 0) < 0)
			return 1;
		if ((kill_test || kill_join) && i == victim && WIFSIGNALED(st))
			continue;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			notsupp++;
			continue;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "rank %d failed (status %#x)\n", i, st);
			fail = 1;
		}
	}
	if (bench)
		return fail;
	if (!fail && notsupp)
		printf("NOTSUPP rdm_coll (FI_COLLECTIVE not offered)\n");
	else if (!fail)
		printf("PASS all %d ranks\n", nprocs);
	return fail;
}
