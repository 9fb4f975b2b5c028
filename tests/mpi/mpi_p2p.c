/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mpi_p2p.c - two-sided MPI over whatever libfabric provider Open MPI's
 * mtl/ofi picked (tests/mpi/mpi.sh forces ours and tcp): blocking and
 * non-blocking point-to-point of 0 B to 4 MiB between every pair of ranks,
 * each byte checked against a pattern of (sender, receiver, size, round);
 * receives with MPI_ANY_SOURCE and MPI_ANY_TAG that must report the real
 * source, tag and count; then collectives on top (barrier, bcast,
 * allreduce, alltoall), each checked. Prints "mpi_p2p: N errors" on rank 0
 * and exits non-zero on any error. Each rank also prints which
 * libfabric.so it loaded ("mpi_p2p: rank R libfabric PATH", from
 * /proc/self/maps), so that a test can tell ours from Debian's.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE (4u << 20)

static int rank, nranks, errors;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "rank %d FAIL %s:%d: ", rank,          \
				__func__, __LINE__);                           \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			errors++;                                              \
		}                                                              \
	} while (0)

static uint8_t pat(int src, int dst, size_t size, int round, size_t i)
{
	return (uint8_t)(src * 31 + dst * 7 + size * 3 + round * 11 + i * 13 +
			 (i >> 8));
}

static void fill(uint8_t *b, int src, int dst, size_t size, int round)
{
	size_t i;

	for (i = 0; i < size; i++)
		b[i] = pat(src, dst, size, round, i);
}

static size_t bad_bytes(const uint8_t *b, int src, int dst, size_t size,
			int round)
{
	size_t i, bad = 0;

	for (i = 0; i < size; i++)
		bad += b[i] != pat(src, dst, size, round, i);
	return bad;
}

static size_t next_size(size_t s)
{
	if (!s)
		return 1;
	if (s < 64)
		return s * 2 + 1; /* odd sizes too */
	return s * 4;
}

/* Blocking: each pair exchanges in both directions, ordered by rank. */
static void blocking(uint8_t *sbuf, uint8_t *rbuf)
{
	MPI_Status st;
	size_t size;
	int peer, round = 0, count;

	for (size = 0; size <= MAX_SIZE; size = next_size(size), round++) {
		for (peer = 0; peer < nranks; peer++) {
			if (peer == rank)
				continue;
			fill(sbuf, rank, peer, size, round);
			memset(rbuf, 0, size);
			if (rank < peer) {
				MPI_Send(sbuf, (int)size, MPI_BYTE, peer, round,
					 MPI_COMM_WORLD);
				MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, round,
					 MPI_COMM_WORLD, &st);
			} else {
				MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, round,
					 MPI_COMM_WORLD, &st);
				MPI_Send(sbuf, (int)size, MPI_BYTE, peer, round,
					 MPI_COMM_WORLD);
			}
			MPI_Get_count(&st, MPI_BYTE, &count);
			CHECK((size_t)count == size, "count %d want %zu", count,
			      size);
			CHECK(!bad_bytes(rbuf, peer, rank, size, round),
			      "blocking %zu B from %d corrupt", size, peer);
		}
	}
}

/* Non-blocking: all receives posted, then all sends, one waitall. */
static void nonblocking(uint8_t *sbufs, uint8_t *rbufs, size_t size, int round)
{
	MPI_Request *req = calloc(2 * nranks, sizeof(*req));
	MPI_Status *st = calloc(2 * nranks, sizeof(*st));
	int peer, n = 0;

	for (peer = 0; peer < nranks; peer++) {
		if (peer == rank)
			continue;
		memset(rbufs + peer * size, 0, size);
		MPI_Irecv(rbufs + peer * size, (int)size, MPI_BYTE, peer,
			  1000 + round, MPI_COMM_WORLD, &req[n++]);
	}
	for (peer = 0; peer < nranks; peer++) {
		if (peer == rank)
			continue;
		fill(sbufs + peer * size, rank, peer, size, round);
		MPI_Isend(sbufs + peer * size, (int)size, MPI_BYTE, peer,
			  1000 + round, MPI_COMM_WORLD, &req[n++]);
	}
	MPI_Waitall(n, req, st);
	for (peer = 0; peer < nranks; peer++) {
		if (peer != rank)
			CHECK(!bad_bytes(rbufs + peer * size, peer, rank, size,
					 round),
			      "non-blocking %zu B from %d corrupt", size, peer);
	}
	free(req);
	free(st);
}

/* Wildcards: rank 0 receives one message from every other rank. */
static void wildcards(uint8_t *sbuf, uint8_t *rbuf)
{
	const size_t size = 70000;
	int seen[64] = {0};
	MPI_Status st;
	int i, count;

	if (rank) {
		fill(sbuf, rank, 0, size, rank);
		MPI_Send(sbuf, (int)size, MPI_BYTE, 0, 500 + rank,
			 MPI_COMM_WORLD);
		return;
	}
	for (i = 1; i < nranks; i++) {
		memset(rbuf, 0, size);
		MPI_Recv(rbuf, (int)size, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
			 MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < nranks &&
			      st.MPI_SOURCE < 64,
		      "source %d", st.MPI_SOURCE);
		if (st.MPI_SOURCE <= 0 || st.MPI_SOURCE >= 64)
			continue;
		CHECK(st.MPI_TAG == 500 + st.MPI_SOURCE, "tag %d from %d",
		      st.MPI_TAG, st.MPI_SOURCE);
		CHECK((size_t)count == size, "count %d", count);
		CHECK(!bad_bytes(rbuf, st.MPI_SOURCE, 0, size, st.MPI_SOURCE),
		      "wildcard data from %d", st.MPI_SOURCE);
		seen[st.MPI_SOURCE]++;
	}
	for (i = 1; i < nranks && i < 64; i++)
		CHECK(seen[i] == 1, "rank %d seen %d times", i, seen[i]);
}

static void collectives(void)
{
	int n = 1 << 16, i, bad = 0;
	long *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
	int *s = malloc(nranks * 1024 * sizeof(int));
	int *r = malloc(nranks * 1024 * sizeof(int));

	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < n; i++)
		a[i] = rank == nranks - 1 ? i * 3 + 1 : -1;
	MPI_Bcast(a, n, MPI_LONG, nranks - 1, MPI_COMM_WORLD);
	for (i = 0; i < n; i++)
		bad += a[i] != i * 3 + 1;
	CHECK(!bad, "bcast: %d wrong", bad);
	for (i = 0; i < n; i++)
		a[i] = (long)rank * i;
	MPI_Allreduce(a, b, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0, bad = 0; i < n; i++)
		bad += b[i] != (long)i * nranks * (nranks - 1) / 2;
	CHECK(!bad, "allreduce: %d wrong", bad);
	for (i = 0; i < nranks * 1024; i++)
		s[i] = rank * 100000 + i;
	MPI_Alltoall(s, 1024, MPI_INT, r, 1024, MPI_INT, MPI_COMM_WORLD);
	for (i = 0, bad = 0; i < nranks * 1024; i++)
		bad += r[i] != (i / 1024) * 100000 + rank * 1024 + i % 1024;
	CHECK(!bad, "alltoall: %d wrong", bad);
	free(a);
	free(b);
	free(s);
	free(r);
}

/* The path of the libfabric.so this process mapped (mtl/ofi loads it). */
static void show_libfabric(void)
{
	char line[4096], *path;
	FILE *maps = fopen("/proc/self/maps", "r");

	while (maps && fgets(line, sizeof(line), maps)) {
		path = strchr(line, '/');
		if (!path || !strstr(path, "/libfabric.so"))
			continue;
		printf("mpi_p2p: rank %d libfabric %s", rank, path);
		break;
	}
	if (maps)
		fclose(maps);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	uint8_t *sbuf, *rbuf, *sbufs, *rbufs;
	int total, round = 0;
	size_t size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	show_libfabric();
	sbuf = malloc(MAX_SIZE);
	rbuf = malloc(MAX_SIZE);
	sbufs = malloc((size_t)nranks * (1u << 20));
	rbufs = malloc((size_t)nranks * (1u << 20));
	if (!sbuf || !rbuf || !sbufs || !rbufs)
		MPI_Abort(MPI_COMM_WORLD, 2);

	blocking(sbuf, rbuf);
	for (size = 0; size <= (1u << 20); size = next_size(size), round++)
		nonblocking(sbufs, rbufs, size, round);
	wildcards(sbuf, rbuf);
	collectives();

	MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_p2p: %d ranks, %d errors\n", nranks, total);
	MPI_Bcast(&total, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return total ? 1 : 0;
}
