/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mpi_coll_bench.c - Open MPI's own MPI_Barrier, MPI_Bcast (8 B, 64 KiB,
 * 1 MiB) and MPI_Allreduce (MPI_SUM on doubles, same sizes) timed the way
 * fabtests' rdm_coll -B times ours: the median of N calls per rank, and
 * the slowest rank's median printed. A benchmark, never a test
 * (contrib/coll-bench.sh runs it).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fabtests/functional/coll_bench_points.h"

static double run(enum coll_bench_kind kind, size_t bytes, int iters)
{
	size_t cnt = bytes / 8;
	double *in = malloc((cnt + 1) * 8), *out = malloc((cnt + 1) * 8);
	double *t = calloc((size_t)iters, sizeof(double)), t0, med;
	size_t i;
	int k, rank;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	/* Values in every page, as rdm_coll -B has: calloc's untouched
	 * pages all map the one zero page, which a broadcast's root then
	 * sends from its cache (vader's CMA read 1 MiB in 45-55 us from
	 * it, in 93-104 us from the root's own pages). */
	for (i = 0; i <= cnt; i++) {
		in[i] = (double)(rank + i);
		out[i] = 0;
	}
	for (k = -10; k < iters; k++) {
		t0 = MPI_Wtime();
		if (kind == CB_BARRIER)
			MPI_Barrier(MPI_COMM_WORLD);
		else if (kind == CB_BCAST)
			MPI_Bcast(in, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
		else
			MPI_Allreduce(in, out, (int)cnt, MPI_DOUBLE, MPI_SUM,
				      MPI_COMM_WORLD);
		if (k >= 0)
			t[k] = (MPI_Wtime() - t0) * 1e6;
	}
	med = coll_bench_median(t, (size_t)iters);
	free(t);
	free(in);
	free(out);
	return med;
}

int main(int argc, char **argv)
{
	const struct coll_bench_point *b = coll_bench_points;
	int iters = argc > 1 ? atoi(argv[1]) : 200, rank;
	size_t i;
	double med, worst;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (i = 0; i < COLL_BENCH_NPOINTS; i++) {
		med = run(b[i].kind, b[i].bytes,
			  coll_bench_iters(b[i].bytes, iters));
		MPI_Reduce(&med, &worst, 1, MPI_DOUBLE, MPI_MAX, 0,
			   MPI_COMM_WORLD);
		if (!rank)
			coll_bench_print(&b[i], worst);
	}
	MPI_Finalize();
	return 0;
}
