/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * copy_ring: the two-core streaming ceiling, without libfabric.  A writer
 * process copies a 64 KiB source into the segments of a ring in shared
 * memory while a reader process copies each filled segment out, the way
 * a shared-memory provider streams a large message (the default is shm's
 * SAR channel: 4 segments of 64 KiB).  Every byte crosses from one
 * core's caches to the other's, so the rate is what the machine's
 * core-to-core path gives at the moment; on a shared or virtual host it
 * moves by 2x or more between runs as the vCPUs land elsewhere, and a
 * provider's streaming bandwidth moves with it.  A message (-z, 64 KiB)
 * is streamed segment by segment from one source buffer into one
 * destination buffer, over and over, as windowed benchmarks reuse theirs.
 * Prints "copy_ring seg=65536 segs=4 msg=65536 mbps=X ..." (MB = 10^6
 * bytes), median of rounds.
 *
 *   copy_ring [-n rounds] [-m ms_per_round] [-a cpu] [-b cpu] [-k segs]
 *             [-s seg_bytes] [-z msg_bytes]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEG	   (1 << 20)
#define MAX_SEGS   64
#define MAX_ROUNDS 100
#define LINE	   64

/* A segment: a line of header, then seg_size bytes. */
struct seg {
	_Alignas(LINE) _Atomic long seq; /* filled with this number, 0: empty */
	_Alignas(LINE) char data[];
};

struct ring {
	_Alignas(LINE) _Atomic int go;
	_Atomic int stop;
	_Alignas(LINE) _Atomic long copied; /* segments the reader emptied */
	_Alignas(LINE) char segs[];
};

static size_t seg_size = 64 * 1024, msg_size = 64 * 1024;

static struct seg *ring_seg(struct ring *r, long n, int nsegs)
{
	return (struct seg *)(r->segs +
			      (size_t)((n - 1) % nsegs) * (LINE + seg_size));
}

/* Segment @n carries these bytes of the message, as a stream would. */
static size_t msg_off(long n)
{
	size_t per_msg = (msg_size + seg_size - 1) / seg_size;

	return (size_t)((n - 1) % (long)per_msg) * seg_size;
}

static size_t seg_len(long n)
{
	size_t off = msg_off(n);

	return msg_size - off < seg_size ? msg_size - off : seg_size;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Empties segments in ring order until told to stop. */
static void reader(struct ring *r, int nsegs)
{
	char *dst = aligned_alloc(LINE, msg_size);
	long n;
	struct seg *s;

	memset(dst, 0, msg_size);
	while (!atomic_load(&r->go))
		;
	for (n = 1;; n++) {
		s = ring_seg(r, n, nsegs);
		while (atomic_load_explicit(&s->seq, memory_order_acquire) !=
		       n) {
			if (atomic_load_explicit(&r->stop,
						 memory_order_relaxed))
				_exit(0);
		}
		memcpy(dst + msg_off(n), s->data, seg_len(n));
		atomic_store_explicit(&s->seq, 0, memory_order_release);
		atomic_store_explicit(&r->copied, n, memory_order_release);
	}
}

/* One round: fills segments for about @ms, the reader's rate in MB/s. */
static double round_mbps(struct ring *r, int nsegs, const char *src, double ms,
			 long *next)
{
	long first = atomic_load(&r->copied), n = *next;
	double t0 = now_us(), t1, bytes = 0;
	struct seg *s;

	do {
		s = ring_seg(r, n, nsegs);
		while (atomic_load_explicit(&s->seq, memory_order_acquire))
			;
		memcpy(s->data, src + msg_off(n), seg_len(n));
		bytes += seg_len(n);
		atomic_store_explicit(&s->seq, n, memory_order_release);
		n++;
		t1 = now_us();
	} while (t1 - t0 < ms * 1e3);
	/* the segments in flight count once the reader emptied them */
	while (atomic_load(&r->copied) != n - 1)
		;
	t1 = now_us();
	*next = n;
	(void)first;
	return bytes / (t1 - t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = 5, nsegs = 4, cpu_a = 0, cpu_b = 1, opt, i;
	double ms = 100, v[MAX_ROUNDS];
	struct ring *r;
	long next = 1;
	char *src;
	pid_t pid;
	size_t len;

	while ((opt = getopt(argc, argv, "n:m:a:b:k:s:z:")) != -1) {
		switch (opt) {
		case 'n':
			rounds = atoi(optarg);
			break;
		case 'm':
			ms = atof(optarg);
			break;
		case 'a':
			cpu_a = atoi(optarg);
			break;
		case 'b':
			cpu_b = atoi(optarg);
			break;
		case 'k':
			nsegs = atoi(optarg);
			break;
		case 's':
			seg_size = strtoul(optarg, NULL, 0);
			break;
		case 'z':
			msg_size = strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || nsegs < 1 ||
	    nsegs > MAX_SEGS || ms <= 0 || seg_size < LINE ||
	    seg_size > MAX_SEG || seg_size % LINE || msg_size < 1 ||
	    msg_size > (64UL << 20))
		goto usage;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		cpu_a = cpu_b = -1; /* one cpu: it measures the scheduler */
	len = sizeof(*r) + (size_t)nsegs * (LINE + seg_size);
	r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	if (r == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(r, 0, len);
	src = aligned_alloc(LINE, msg_size);
	memset(src, 0x5a, msg_size);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (!pid) {
		pin(cpu_b);
		reader(r, nsegs);
	}
	pin(cpu_a);
	atomic_store(&r->go, 1);
	round_mbps(r, nsegs, src, ms / 4, &next); /* warm-up */
	for (i = 0; i < rounds; i++)
		v[i] = round_mbps(r, nsegs, src, ms, &next);
	atomic_store(&r->stop, 1);
	waitpid(pid, NULL, 0);
	qsort(v, rounds, sizeof(v[0]), cmp_double);
	printf("copy_ring seg=%zu segs=%d msg=%zu mbps=%.0f min=%.0f "
	       "max=%.0f rounds=%d\n",
	       seg_size, nsegs, msg_size, v[rounds / 2], v[0], v[rounds - 1],
	       rounds);
	return 0;
usage:
	fprintf(stderr,
		"usage: %s [-n rounds(1-%d)] [-m ms] [-a cpu] "
		"[-b cpu] [-k segs(1-%d)] [-s seg_bytes] "
		"[-z msg_bytes]\n",
		argv[0], MAX_ROUNDS, MAX_SEGS);
	return 2;
}
