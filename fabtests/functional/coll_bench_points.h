/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_bench_points.h - what the collective benchmark times and how it
 * reports it, shared by rdm_coll -B (ours and Debian's libfabric) and
 * tests/mpi/mpi_coll_bench.c (Open MPI's own collectives), whose tables
 * contrib/coll-bench.sh sets side by side: the same calls in the same
 * order, the same number of iterations, the same median.
 */
#ifndef COLL_BENCH_POINTS_H
#define COLL_BENCH_POINTS_H

#include <stdio.h>
#include <stdlib.h>

enum coll_bench_kind { CB_BARRIER, CB_BCAST, CB_ALLREDUCE };

/* The 8-byte calls first: a run limited to them (-M 8, Debian's) times
 * the same sequence, and none of them comes after bulk transfers. */
static const struct coll_bench_point {
	const char *name;
	enum coll_bench_kind kind;
	size_t bytes;
} coll_bench_points[] = {
	{"barrier", CB_BARRIER, 0},
	{"bcast 8 B", CB_BCAST, 8},
	{"allreduce 8 B", CB_ALLREDUCE, 8},
	{"bcast 64 KiB", CB_BCAST, 65536},
	{"allreduce 64 KiB", CB_ALLREDUCE, 65536},
	{"bcast 1 MiB", CB_BCAST, 1 << 20},
	{"allreduce 1 MiB", CB_ALLREDUCE, 1 << 20},
};

#define COLL_BENCH_NPOINTS                                                     \
	(sizeof(coll_bench_points) / sizeof(coll_bench_points[0]))

/* Calls timed at @bytes when the others take @iters. */
static inline int coll_bench_iters(size_t bytes, int iters)
{
	return bytes >= (1 << 20) ? iters / 4 : iters;
}

static inline int coll_bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n timings (sorted in place). */
static inline double coll_bench_median(double *t, size_t n)
{
	qsort(t, n, sizeof(*t), coll_bench_cmp);
	return t[n / 2];
}

static inline void coll_bench_print(const struct coll_bench_point *p,
				    double worst)
{
	printf("%-18s %10.3f us  (slowest rank's median)\n", p->name, worst);
}

#endif /* COLL_BENCH_POINTS_H */
