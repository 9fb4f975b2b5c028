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

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double run(int kind, size_t bytes, int iters)
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
		if (kind == 0)
			MPI_Barrier(MPI_COMM_WORLD);
		else if (kind == 1)
			MPI_Bcast(in, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
		else
			MPI_Allreduce(in, out, (int)cnt, MPI_DOUBLE, MPI_SUM,
				      MPI_COMM_WORLD);
		if (k >= 0)
			t[k] = (MPI_Wtime() - t0) * 1e6;
	}
	qsort(t, (size_t)iters, sizeof(double), cmp_d);
	med = t[iters / 2];
	free(t);
	free(in);
	free(out);
	return med;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int kind;
		size_t bytes;
	} b[] = {
		/* in rdm_coll -B's order: the 8-byte ones first */
		{"barrier", 0, 0},
		{"bcast 8 B", 1, 8},
		{"allreduce 8 B", 2, 8},
		{"bcast 64 KiB", 1, 65536},
		{"allreduce 64 KiB", 2, 65536},
		{"bcast 1 MiB", 1, 1 << 20},
		{"allreduce 1 MiB", 2, 1 << 20},
	};
	int iters = argc > 1 ? atoi(argv[1]) : 200, rank, i;
	double med, worst;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (i = 0; i < (int)(sizeof(b) / sizeof(b[0])); i++) {
		med = run(b[i].kind, b[i].bytes,
			  b[i].bytes >= (1 << 20) ? iters / 4 : iters);
		MPI_Reduce(&med, &worst, 1, MPI_DOUBLE, MPI_MAX, 0,
			   MPI_COMM_WORLD);
		if (!rank)
			printf("%-18s %10.3f us  (slowest rank's median)\n",
			       b[i].name, worst);
	}
	MPI_Finalize();
	return 0;
}
