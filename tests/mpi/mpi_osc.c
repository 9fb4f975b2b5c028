/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mpi_osc.c - one-sided MPI (osc/rdma over btl/ofi, see tests/mpi/mpi.sh):
 * every rank exposes a window and, in fence epochs and passive-target
 * lock epochs, puts to and gets from every other rank (1 B to 1 MiB, data
 * checked on both sides), accumulates with MPI_SUM into a shared counter
 * block, and takes tickets from a counter on rank 0 with
 * MPI_Fetch_and_op, which must hand out each ticket exactly once. Prints
 * "mpi_osc: N errors" on rank 0 and exits non-zero on any error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN_SIZE (4u << 20)
#define TICKETS	 200

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

static uint8_t pat(int src, int dst, size_t size, size_t i)
{
	return (uint8_t)(src * 37 + dst * 5 + size + i * 7 + (i >> 9));
}

/* Slot of the window written by @src: one MiB each, ranks < 4. */
static size_t slot(int src)
{
	return (size_t)(src % 4) * (1u << 20);
}

static void put_get_fence(uint8_t *win_mem, MPI_Win win, uint8_t *buf)
{
	size_t size, i, bad;
	int peer;

	for (size = 1; size <= (1u << 20); size *= 8) {
		memset(win_mem, 0, WIN_SIZE);
		MPI_Win_fence(0, win);
		for (peer = 0; peer < nranks; peer++) {
			if (peer == rank)
				continue;
			for (i = 0; i < size; i++)
				buf[peer * size + i] = pat(rank, peer, size, i);
			MPI_Put(buf + peer * size, (int)size, MPI_BYTE, peer,
				slot(rank), (int)size, MPI_BYTE, win);
		}
		MPI_Win_fence(0, win);
		for (peer = 0; peer < nranks; peer++) {
			if (peer == rank || peer >= 4)
				continue;
			for (i = 0, bad = 0; i < size; i++)
				bad += win_mem[slot(peer) + i] !=
				       pat(peer, rank, size, i);
			CHECK(!bad, "put %zu B from %d: %zu bad", size, peer,
			      bad);
		}
		/* Get back what we put, from each peer. */
		memset(buf, 0, (size_t)(unsigned)nranks * size);
		for (peer = 0; peer < nranks; peer++) {
			if (peer != rank)
				MPI_Get(buf + peer * size, (int)size, MPI_BYTE,
					peer, slot(rank), (int)size, MPI_BYTE,
					win);
		}
		MPI_Win_fence(0, win);
		for (peer = 0; peer < nranks; peer++) {
			if (peer == rank || rank >= 4)
				continue;
			for (i = 0, bad = 0; i < size; i++)
				bad += buf[peer * size + i] !=
				       pat(rank, peer, size, i);
			CHECK(!bad, "get %zu B from %d: %zu bad", size, peer,
			      bad);
		}
	}
}

/* Passive target: lock, put, unlock; then the owner checks. */
static void put_lock(uint8_t *win_mem, MPI_Win win, uint8_t *buf)
{
	const size_t size = 300000;
	int peer = (rank + 1) % nranks, src = (rank + nranks - 1) % nranks;
	size_t i, bad = 0;

	memset(win_mem, 0, WIN_SIZE);
	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < size; i++)
		buf[i] = pat(rank, peer, size, i);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win);
	MPI_Put(buf, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win);
	MPI_Win_unlock(peer, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
	for (i = 0; i < size; i++)
		bad += win_mem[i] != pat(src, rank, size, i);
	MPI_Win_unlock(rank, win);
	CHECK(!bad, "locked put from %d: %zu bad", src, bad);
}

static void accumulate(int64_t *win64, MPI_Win win)
{
	const int n = 512;
	int64_t *v = malloc(n * sizeof(*v));
	int i, bad = 0, round;

	MPI_Win_fence(0, win);
	if (!rank)
		memset(win64, 0, n * sizeof(*win64));
	MPI_Win_fence(0, win);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < n; i++)
			v[i] = (int64_t)(rank + 1) * (i + round);
		MPI_Accumulate(v, n, MPI_INT64_T, 0, 0, n, MPI_INT64_T, MPI_SUM,
			       win);
		MPI_Win_fence(0, win);
	}
	if (!rank) {
		for (i = 0; i < n; i++) {
			int64_t want = 0;

			for (round = 0; round < 4; round++)
				want += (int64_t)nranks * (nranks + 1) / 2 *
					(i + round);
			bad += win64[i] != want;
		}
		CHECK(!bad, "accumulate: %d wrong", bad);
	}
	free(v);
}

static void fetch_and_op(int64_t *win64, MPI_Win win)
{
	int64_t one = 1, got, *all;
	int64_t mine[TICKETS];
	int i, bad = 0, dup = 0;
	char *seen;

	MPI_Win_fence(0, win);
	if (!rank)
		win64[1024] = 0;
	MPI_Win_fence(0, win);
	MPI_Win_lock_all(0, win);
	for (i = 0; i < TICKETS; i++) {
		/* displacement unit 1: byte offset of win64[1024] */
		MPI_Fetch_and_op(&one, &got, MPI_INT64_T, 0,
				 1024 * sizeof(int64_t), MPI_SUM, win);
		MPI_Win_flush(0, win);
		mine[i] = got;
	}
	MPI_Win_unlock_all(win);
	all = rank ? NULL : malloc((size_t)nranks * TICKETS * sizeof(*all));
	MPI_Gather(mine, TICKETS, MPI_INT64_T, all, TICKETS, MPI_INT64_T, 0,
		   MPI_COMM_WORLD);
	MPI_Win_fence(0, win);
	if (rank)
		return;
	seen = calloc((size_t)nranks * TICKETS, 1);
	for (i = 0; i < nranks * TICKETS; i++) {
		if (all[i] < 0 || all[i] >= nranks * TICKETS)
			bad++;
		else if (seen[all[i]]++)
			dup++;
	}
	CHECK(!bad && !dup, "fetch_and_op: %d out of range, %d twice", bad,
	      dup);
	CHECK(win64[1024] == (int64_t)nranks * TICKETS, "counter %lld",
	      (long long)win64[1024]);
	free(seen);
	free(all);
}

int main(int argc, char **argv)
{
	uint8_t *win_mem, *buf;
	MPI_Win win;
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	buf = malloc((size_t)nranks * (1u << 20));
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Win_allocate(WIN_SIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem,
			 &win);

	put_get_fence(win_mem, win, buf);
	put_lock(win_mem, win, buf);
	accumulate((int64_t *)win_mem, win);
	fetch_and_op((int64_t *)win_mem, win);

	MPI_Win_free(&win);
	MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_osc: %d ranks, %d errors\n", nranks, total);
	MPI_Bcast(&total, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return total ? 1 : 0;
}
