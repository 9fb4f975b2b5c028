/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mpi_spawn.c - MPI_Comm_spawn over Open MPI's mtl/ofi (run by
 * tests/mpi/mpi.sh): the ranks spawn CHILDREN more processes of this
 * program, merge the intercommunicator, pass 100,000-byte messages around
 * the ring of all of them, data checked, and sum their ranks. Open MPI
 * connects the two jobs with the new processes' own sends: each side's
 * root broadcasts the other job's addresses to its ranks and then waits
 * in PMIx, calling nothing, so those sends must leave while their sender
 * makes no progress call. Prints "mpi_spawn: N ranks, E errors" on rank 0
 * of the merged communicator and exits non-zero on any error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHILDREN 2
#define ROUNDS	 4
#define LEN	 100000

static uint8_t pat(int src, int round, size_t i)
{
	return (uint8_t)(src * 31 + round * 11 + i * 13 + (i >> 8));
}

int main(int argc, char **argv)
{
	MPI_Comm parent, inter, all;
	int rank, n, to, from, round, errors = 0, total = 0;
	long sum = 0, me;
	uint8_t *out, *in;
	size_t i;

	MPI_Init(&argc, &argv);
	MPI_Comm_get_parent(&parent);
	if (parent == MPI_COMM_NULL) {
		MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, CHILDREN, MPI_INFO_NULL,
			       0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
		MPI_Intercomm_merge(inter, 0, &all);
	} else {
		inter = parent;
		MPI_Intercomm_merge(inter, 1, &all);
	}
	MPI_Comm_rank(all, &rank);
	MPI_Comm_size(all, &n);
	out = malloc(LEN);
	in = malloc(LEN);
	if (!out || !in)
		MPI_Abort(MPI_COMM_WORLD, 1);
	to = (rank + 1) % n;
	from = (rank + n - 1) % n;
	for (round = 0; round < ROUNDS; round++) {
		for (i = 0; i < LEN; i++)
			out[i] = pat(rank, round, i);
		MPI_Sendrecv(out, LEN, MPI_BYTE, to, round, in, LEN, MPI_BYTE,
			     from, round, all, MPI_STATUS_IGNORE);
		for (i = 0; i < LEN; i++) {
			if (in[i] != pat(from, round, i)) {
				fprintf(stderr,
					"rank %d FAIL: round %d, byte %zu\n",
					rank, round, i);
				errors++;
				break;
			}
		}
	}
	me = rank;
	MPI_Allreduce(&me, &sum, 1, MPI_LONG, MPI_SUM, all);
	if (sum != (long)n * (n - 1) / 2) {
		fprintf(stderr, "rank %d FAIL: rank sum %ld\n", rank, sum);
		errors++;
	}
	MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, all);
	if (!rank)
		printf("mpi_spawn: %d ranks, %d errors\n", n, total);
	free(out);
	free(in);
	MPI_Comm_free(&all);
	MPI_Comm_disconnect(&inter);
	MPI_Finalize();
	return total != 0;
}
