/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mpi_bench.c - point-to-point performance between ranks 0 and 1 of an MPI
 * job, for contrib/mpi-bench.sh (our libfabric against Debian's under
 * Open MPI's mtl/ofi). Two measurements per size:
 *  - lat: ping-pong, rank 0 sends, rank 1 answers with the same size; the
 *    median, mean and minimum of the per-iteration half round trip in
 *    microseconds, after a warm-up;
 *  - bw: windowed bandwidth, rank 0 posts WINDOW MPI_Isend of the size to
 *    distinct buffers, rank 1 as many MPI_Irecv, then a zero-byte ack from
 *    rank 1 closes the window; MB/s (10^6 B/s) over the timed windows,
 *    the median of BATCHES batches and the best batch.
 * Data is checked so that a transport which drops or garbles messages
 * cannot look fast: one untimed round per size whose every byte is checked,
 * and in every timed message a stamp (message number, size) in its first
 * and last 8 bytes that the receiver checks.
 *
 * Rank 0 prints one line per measurement:
 *   lat size=8 iters=10000 median_us=5.1 mean_us=5.3 min_us=4.8 check=ok
 *   bw size=1048576 window=64 iters=40 mbps=5123.4 best_mbps=5301.2 check=ok
 * then "mpi_bench: N errors"; the exit status is non-zero on any error.
 * Ranks past 1 wait in the final barrier.
 *
 * usage: mpi_bench [-i LAT_ITERS] [-w WARMUP] [-n BW_WINDOWS] [-W WINDOW]
 *                  [-l LAT_SIZES] [-b BW_SIZES] [-c CPU0,CPU1]
 *   sizes are comma lists with k/m suffixes (default -l 8,1k,64k
 *   -b 64k,1m); -c pins rank 0 to CPU0 and rank 1 to CPU1.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <limits.h>
#include <link.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SIZES  16
#define BW_BATCHES 5
#define TAG_DATA   1
#define TAG_ACK	   2

struct opts {
	int lat_iters, warmup, bw_windows, window;
	size_t lat_sizes[MAX_SIZES], bw_sizes[MAX_SIZES];
	int n_lat, n_bw;
	int cpu[2];
};

static int rank, nranks, errors;
static MPI_Comm comm; /* ranks 0 and 1 */

static void fail(const char *what, size_t size, long at)
{
	if (errors++ < 10)
		fprintf(stderr, "mpi_bench: rank %d: %s (size %zu, at %ld)\n",
			rank, what, size, at);
}

/* The full pattern of the checked round: differs per size and direction. */
static uint8_t pat(size_t size, int dir, size_t msg, size_t i)
{
	return (uint8_t)(size * 7 + dir * 101 + msg * 29 + i * 13 + (i >> 9));
}

static void fill(uint8_t *b, size_t size, int dir, size_t msg)
{
	size_t i;

	for (i = 0; i < size; i++)
		b[i] = pat(size, dir, msg, i);
}

static int bad(const uint8_t *b, size_t size, int dir, size_t msg)
{
	size_t i;

	for (i = 0; i < size; i++)
		if (b[i] != pat(size, dir, msg, i))
			return 1;
	return 0;
}

/* A timed message's stamp: number, size and direction, never 0. */
static uint64_t stamp_of(size_t size, int dir, uint64_t n)
{
	return (n << 24) ^ ((uint64_t)size << 2) ^ (uint64_t)dir ^
	       0x5a5a000000000001ull;
}

/* Messages under 8 bytes carry the stamp's low bytes only. */
static void stamp(uint8_t *b, size_t size, uint64_t v)
{
	size_t n = size < 8 ? size : 8;

	memcpy(b, &v, n);
	if (size >= 16)
		memcpy(b + size - 8, &v, 8);
}

static int stamp_bad(const uint8_t *b, size_t size, uint64_t v)
{
	size_t n = size < 8 ? size : 8;

	if (memcmp(b, &v, n))
		return 1;
	return size >= 16 && memcmp(b + size - 8, &v, 8);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One round trip of SIZE; rank 0 returns its duration in seconds. */
static double round_trip(uint8_t *sbuf, uint8_t *rbuf, size_t size, long iter,
			 int check)
{
	MPI_Status st;
	double t0 = MPI_Wtime();
	int peer = !rank;

	if (check)
		fill(sbuf, size, rank, 0);
	else
		stamp(sbuf, size, stamp_of(size, rank, (uint64_t)iter));
	if (rank == 0) {
		MPI_Send(sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, comm);
		MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, comm, &st);
	} else {
		MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, comm, &st);
		MPI_Send(sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, comm);
	}
	t0 = MPI_Wtime() - t0;
	if (check ? bad(rbuf, size, peer, 0)
		  : stamp_bad(rbuf, size, stamp_of(size, peer, (uint64_t)iter)))
		fail(check ? "ping-pong data differs"
			   : "ping-pong stamp differs",
		     size, iter);
	return t0;
}

static void latency(const struct opts *o, size_t size, uint8_t *sbuf,
		    uint8_t *rbuf, double *t)
{
	double sum = 0;
	long i;
	int before = errors;

	memset(rbuf, 0, size);
	round_trip(sbuf, rbuf, size, -1, 1);
	for (i = 0; i < o->warmup; i++)
		round_trip(sbuf, rbuf, size, i, 0);
	for (i = 0; i < o->lat_iters; i++) {
		t[i] = round_trip(sbuf, rbuf, size, o->warmup + i, 0) / 2 * 1e6;
		sum += t[i];
	}
	if (rank)
		return;
	qsort(t, (size_t)o->lat_iters, sizeof(*t), cmp_double);
	printf("lat size=%zu iters=%d median_us=%.3f mean_us=%.3f "
	       "min_us=%.3f check=%s\n",
	       size, o->lat_iters, t[o->lat_iters / 2], sum / o->lat_iters,
	       t[0], errors == before ? "ok" : "BAD");
	fflush(stdout);
}

/*
 * One window: WINDOW messages of SIZE in flight, each to its own buffer,
 * closed by an ack. CHECK: full patterns instead of stamps.
 */
static void window(const struct opts *o, size_t size, uint8_t **bufs,
		   MPI_Request *req, long w, int check)
{
	uint64_t n;
	int k;

	for (k = 0; k < o->window; k++) {
		n = (uint64_t)w * (uint64_t)o->window + (uint64_t)k;
		if (rank == 0) {
			if (check)
				fill(bufs[k], size, 0, (size_t)k);
			else
				stamp(bufs[k], size, stamp_of(size, 0, n));
			MPI_Isend(bufs[k], (int)size, MPI_BYTE, 1, TAG_DATA,
				  comm, &req[k]);
		} else {
			if (check)
				memset(bufs[k], 0, size);
			MPI_Irecv(bufs[k], (int)size, MPI_BYTE, 0, TAG_DATA,
				  comm, &req[k]);
		}
	}
	MPI_Waitall(o->window, req, MPI_STATUSES_IGNORE);
	if (rank == 0) {
		MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, comm,
			 MPI_STATUS_IGNORE);
		return;
	}
	for (k = 0; k < o->window; k++) {
		n = (uint64_t)w * (uint64_t)o->window + (uint64_t)k;
		if (check ? bad(bufs[k], size, 0, (size_t)k)
			  : stamp_bad(bufs[k], size, stamp_of(size, 0, n)))
			fail(check ? "window data differs"
				   : "window stamp differs",
			     size, (long)n);
	}
	MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, comm);
}

static void bandwidth(const struct opts *o, size_t size, uint8_t **bufs,
		      MPI_Request *req)
{
	double rate[BW_BATCHES], t0;
	int b, per = (o->bw_windows + BW_BATCHES - 1) / BW_BATCHES;
	long w = 0, i;
	int bad_here, before = errors;

	window(o, size, bufs, req, w++, 1);
	window(o, size, bufs, req, w++, 0); /* warm-up */
	for (b = 0; b < BW_BATCHES; b++) {
		t0 = MPI_Wtime();
		for (i = 0; i < per; i++)
			window(o, size, bufs, req, w++, 0);
		t0 = MPI_Wtime() - t0;
		rate[b] = (double)size * o->window * per / t0 / 1e6;
	}
	/* rank 1 saw the data: its verdict goes to rank 0 */
	bad_here = errors - before;
	MPI_Allreduce(MPI_IN_PLACE, &bad_here, 1, MPI_INT, MPI_SUM, comm);
	if (rank)
		return;
	qsort(rate, BW_BATCHES, sizeof(*rate), cmp_double);
	printf("bw size=%zu window=%d iters=%d mbps=%.1f best_mbps=%.1f "
	       "check=%s\n",
	       size, o->window, per * BW_BATCHES, rate[BW_BATCHES / 2],
	       rate[BW_BATCHES - 1], bad_here ? "BAD" : "ok");
	fflush(stdout);
}

/* "8,1k,64k" -> sizes; 0 on a bad list */
static int parse_sizes(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	int n = 0;

	for (;;) {
		if (n == MAX_SIZES)
			return 0;
		v = strtoull(s, &end, 10);
		if (end == s)
			return 0;
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		if (!v || v > (1ull << 30))
			return 0;
		out[n++] = (size_t)v;
		if (!*end)
			return n;
		if (*end != ',')
			return 0;
		s = end + 1;
	}
}

static int pos_int(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < 1 || v > 100000000)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int c, bad_arg = 0;

	o->lat_iters = 10000;
	o->warmup = 1000;
	o->bw_windows = 40;
	o->window = 64;
	o->n_lat = parse_sizes("8,1k,64k", o->lat_sizes);
	o->n_bw = parse_sizes("64k,1m", o->bw_sizes);
	o->cpu[0] = o->cpu[1] = -1;
	while ((c = getopt(argc, argv, "i:w:n:W:l:b:c:")) != -1) {
		switch (c) {
		case 'i':
			bad_arg |= pos_int(optarg, &o->lat_iters);
			break;
		case 'w':
			bad_arg |= pos_int(optarg, &o->warmup);
			break;
		case 'n':
			bad_arg |= pos_int(optarg, &o->bw_windows);
			break;
		case 'W':
			bad_arg |= pos_int(optarg, &o->window);
			break;
		case 'l':
			o->n_lat = parse_sizes(optarg, o->lat_sizes);
			bad_arg |= !o->n_lat;
			break;
		case 'b':
			o->n_bw = parse_sizes(optarg, o->bw_sizes);
			bad_arg |= !o->n_bw;
			break;
		case 'c':
			bad_arg |= sscanf(optarg, "%d,%d", &o->cpu[0],
					  &o->cpu[1]) != 2 ||
				   o->cpu[0] < 0 || o->cpu[1] < 0;
			break;
		default:
			bad_arg = 1;
		}
	}
	return bad_arg || optind != argc ? -1 : 0;
}

/* Pins this rank; returns "cpuN", or "none" when not asked or refused. */
static const char *pin(const struct opts *o, char *buf, size_t len)
{
	cpu_set_t set;

	if (o->cpu[0] < 0 || rank > 1 || o->cpu[rank] >= CPU_SETSIZE)
		return "none";
	CPU_ZERO(&set);
	CPU_SET(o->cpu[rank], &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return "refused";
	snprintf(buf, len, "cpu%d", o->cpu[rank]);
	return buf;
}

static size_t max_of(const size_t *s, int n)
{
	size_t m = 0;
	int i;

	for (i = 0; i < n; i++)
		m = s[i] > m ? s[i] : m;
	return m;
}

static int run(const struct opts *o)
{
	size_t lmax = max_of(o->lat_sizes, o->n_lat);
	size_t bmax = max_of(o->bw_sizes, o->n_bw);
	uint8_t *sbuf = malloc(lmax), *rbuf = malloc(lmax);
	uint8_t **bufs = calloc((size_t)o->window, sizeof(*bufs));
	MPI_Request *req = calloc((size_t)o->window, sizeof(*req));
	double *t = malloc((size_t)o->lat_iters * sizeof(*t));
	int i, ok, ret = -1;

	ok = sbuf && rbuf && bufs && req && t;
	for (i = 0; ok && i < o->window; i++) {
		bufs[i] = malloc(bmax);
		ok = bufs[i] != NULL;
		if (ok)
			memset(bufs[i], 0, bmax); /* fault pages in, untimed */
	}
	/* both ranks run, or neither: a lone rank would wait forever */
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm);
	if (!ok)
		goto out;
	for (i = 0; i < o->n_lat; i++)
		latency(o, o->lat_sizes[i], sbuf, rbuf, t);
	for (i = 0; i < o->n_bw; i++)
		bandwidth(o, o->bw_sizes[i], bufs, req);
	ret = 0;
out:
	for (i = 0; bufs && i < o->window; i++)
		free(bufs[i]);
	free(bufs);
	free(req);
	free(t);
	free(sbuf);
	free(rbuf);
	return ret;
}

/* dl_iterate_phdr callback: the path of the libfabric this rank loaded */
static int find_fabric(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libfabric.so"))
		return 0;
	snprintf(arg, PATH_MAX, "%s", info->dlpi_name);
	return 1;
}

/*
 * "# rankN host=H pid=P cpu=C libfabric=PATH" for ranks 0 and 1, printed
 * by rank 0: where each rank ran and which library Open MPI loaded (the
 * script checks that a run measured the library it meant to).
 */
static void describe(const struct opts *o)
{
	static char line[PATH_MAX + MPI_MAX_PROCESSOR_NAME + 128];
	static char all[2][sizeof(line)];
	char name[MPI_MAX_PROCESSOR_NAME], cpu[32], lib[PATH_MAX] = "none";
	int len;

	MPI_Get_processor_name(name, &len);
	dl_iterate_phdr(find_fabric, lib);
	snprintf(line, sizeof(line), "host=%s pid=%d cpu=%s libfabric=%s", name,
		 (int)getpid(), pin(o, cpu, sizeof(cpu)), lib);
	MPI_Gather(line, sizeof(line), MPI_CHAR, all, sizeof(line), MPI_CHAR, 0,
		   comm);
	if (!rank) {
		printf("# mpi_bench ranks=%d\n# rank0 %s\n# rank1 %s\n", nranks,
		       all[0], all[1]);
		fflush(stdout); /* a run that hangs later still says this */
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (parse(argc, argv, &o) || nranks < 2) {
		if (!rank)
			fprintf(stderr,
				"usage: mpirun -np 2 mpi_bench "
				"[-i LAT_ITERS] [-w WARMUP] "
				"[-n BW_WINDOWS] [-W WINDOW] "
				"[-l SIZES] [-b SIZES] [-c CPU0,CPU1]\n");
		MPI_Finalize();
		return 2;
	}
	MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank,
		       &comm);
	if (rank < 2) {
		describe(&o);
		if (run(&o))
			fail("out of memory", 0, 0);
		MPI_Comm_free(&comm);
	}
	MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_bench: %d errors\n", total);
	MPI_Finalize();
	return total ? 1 : 0;
}
