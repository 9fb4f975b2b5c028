/*
 * mpi_tcp.c - an MPI program run by tests/tcp/mpi_tcp.sh under Debian's
 * unmodified Open MPI with the cm PML and the ofi MTL, the provider forced
 * to our tcp: blocking ping-pong between ranks 0 and 1 of 0 B to 4 MiB
 * (the answer received with MPI_ANY_SOURCE / MPI_ANY_TAG), a non-blocking
 * ring over all ranks at every size, and an allreduce, every byte
 * checked. Prints "rank N bad 0" per rank and exits non-zero on any error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char pat(int i, int n, int who)
{
	return (char)(i * 7 + n + who * 13);
}

static int check(const char *b, int n, int who)
{
	int i;

	for (i = 0; i < n; i++) {
		if (b[i] != pat(i, n, who))
			return 1;
	}
	return 0;
}

static int pingpong(int rank, int n)
{
	char *b = malloc(n + 1);
	MPI_Status st;
	int i, bad = 0;

	for (i = 0; i < n; i++)
		b[i] = pat(i, n, 0);
	if (rank == 0) {
		MPI_Send(b, n, MPI_CHAR, 1, n & 0x7fff, MPI_COMM_WORLD);
		memset(b, 0, n);
		MPI_Recv(b, n, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG,
			 MPI_COMM_WORLD, &st);
		bad = check(b, n, 0) || st.MPI_SOURCE != 1 || st.MPI_TAG != 1;
	} else if (rank == 1) {
		memset(b, 0, n);
		MPI_Recv(b, n, MPI_CHAR, 0, n & 0x7fff, MPI_COMM_WORLD, &st);
		bad = check(b, n, 0);
		MPI_Send(b, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
	}
	free(b);
	return bad;
}

static MPI_Comm ring_comm; /* apart from the ping-pong's wildcards */

static int ring(int rank, int size, int n)
{
	char *out = malloc(n + 1), *in = malloc(n + 1);
	int i, prev = (rank + size - 1) % size, bad;
	MPI_Request r[2];
	MPI_Status st[2];

	for (i = 0; i < n; i++)
		out[i] = pat(i, n, rank);
	memset(in, 0, n);
	MPI_Irecv(in, n, MPI_CHAR, MPI_ANY_SOURCE, 5, ring_comm, &r[0]);
	MPI_Isend(out, n, MPI_CHAR, (rank + 1) % size, 5, ring_comm, &r[1]);
	MPI_Waitall(2, r, st);
	bad = check(in, n, prev) || st[0].MPI_SOURCE != prev;
	free(out);
	free(in);
	return bad;
}

int main(int argc, char **argv)
{
	int rank, size, n, bad = 0, sum = 0, one;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_dup(MPI_COMM_WORLD, &ring_comm);
	for (n = 0; n <= (4 << 20); n = n ? n * 4 : 1) {
		bad += pingpong(rank, n);
		bad += ring(rank, size, n);
	}
	one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (sum != size * (size + 1) / 2)
		bad++;
	printf("rank %d bad %d\n", rank, bad);
	MPI_Comm_free(&ring_comm);
	MPI_Finalize();
	return bad != 0;
}
