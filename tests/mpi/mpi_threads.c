/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mpi_threads.c - MPI_THREAD_MULTIPLE over Open MPI's mtl/ofi (run by
 * tests/mpi/mpi.sh): THREADS threads per rank, each on a communicator of
 * its own (MPI_Comm_dup), exchange messages of 0 B to 1 MiB around the
 * ring of ranks at the same time, by MPI_Sendrecv, by MPI_Irecv +
 * MPI_Isend + MPI_Waitall, and by MPI_Isend + MPI_Mprobe + MPI_Mrecv,
 * each byte checked against a pattern of (sender, thread, size, round).
 * The provider sees one endpoint driven by all the threads at once.
 * Prints "mpi_threads: N ranks, T threads, E errors" on rank 0 and exits
 * non-zero on any error (or when Open MPI cannot give THREAD_MULTIPLE).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS	 4
#define ROUNDS	 8
#define MAX_SIZE (1u << 20)

static int rank, nranks;
static MPI_Comm comm[THREADS];
static int errors[THREADS];

static const size_t sizes[] = {0,    1,	    8,	    100,     4000,
			       9000, 65536, 300000, MAX_SIZE};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pat(int src, int t, size_t size, int round, size_t i)
{
	return (uint8_t)(src * 31 + t * 7 + size * 3 + round * 11 + i * 13 +
			 (i >> 8));
}

static void fail(int t, const char *what, size_t size, int round, size_t at)
{
	if (errors[t]++ < 4)
		fprintf(stderr,
			"rank %d thread %d FAIL %s: %zu B, round %d, at %zu\n",
			rank, t, what, size, round, at);
}

/* One message each way around the ring, the way @round picks. */
static void exchange(int t, uint8_t *out, uint8_t *in, size_t n, int round,
		     int tag)
{
	int to = (rank + 1) % nranks, from = (rank + nranks - 1) % nranks;
	MPI_Request rq[2];
	MPI_Message msg;
	MPI_Status st;
	int count = -1;
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = pat(rank, t, n, round, i);
	memset(in, 0xee, n);
	switch ((round + tag) % 3) {
	case 0:
		MPI_Sendrecv(out, (int)n, MPI_BYTE, to, tag, in, (int)n,
			     MPI_BYTE, from, tag, comm[t], &st);
		break;
	case 1:
		MPI_Irecv(in, (int)n, MPI_BYTE, from, tag, comm[t], &rq[0]);
		MPI_Isend(out, (int)n, MPI_BYTE, to, tag, comm[t], &rq[1]);
		MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
		break;
	default:
		MPI_Isend(out, (int)n, MPI_BYTE, to, tag, comm[t], &rq[0]);
		MPI_Mprobe(from, tag, comm[t], &msg, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		if (count != (int)n)
			fail(t, "probed count", n, round, (size_t)count);
		MPI_Mrecv(in, (int)n, MPI_BYTE, &msg, &st);
		MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
		break;
	}
	for (i = 0; i < n; i++) {
		if (in[i] != pat(from, t, n, round, i)) {
			fail(t, "data", n, round, i);
			break;
		}
	}
}

static void *thread_main(void *arg)
{
	int t = (int)(intptr_t)arg, round;
	uint8_t *out = malloc(MAX_SIZE), *in = malloc(MAX_SIZE);
	size_t k;

	if (!out || !in) {
		fail(t, "malloc", MAX_SIZE, 0, 0);
		goto out;
	}
	for (round = 0; round < ROUNDS; round++)
		for (k = 0; k < NSIZES; k++)
			exchange(t, out, in, sizes[(k + round + t) % NSIZES],
				 round, (int)k);
out:
	free(out);
	free(in);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	int provided, t, mine = 0, total = 0;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (provided != MPI_THREAD_MULTIPLE) {
		if (!rank)
			printf("mpi_threads: THREAD_MULTIPLE not given (%d)\n",
			       provided);
		MPI_Finalize();
		return 1;
	}
	for (t = 0; t < THREADS; t++)
		MPI_Comm_dup(MPI_COMM_WORLD, &comm[t]);
	for (t = 0; t < THREADS; t++) {
		/* the peers' threads would wait for this one forever */
		if (pthread_create(&th[t], NULL, thread_main,
				   (void *)(intptr_t)t)) {
			fprintf(stderr, "rank %d: pthread_create failed\n",
				rank);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	for (t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
		mine += errors[t];
	}
	for (t = 0; t < THREADS; t++)
		MPI_Comm_free(&comm[t]);
	MPI_Reduce(&mine, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_threads: %d ranks, %d threads, %d errors\n", nranks,
		       THREADS, total);
	MPI_Finalize();
	return total != 0;
}
