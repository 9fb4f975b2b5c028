/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * raw_pingpong: the hardware floor for intranode small-message latency.
 * Two processes (fork) bounce one cache line of a MAP_SHARED anonymous
 * mapping: each side spins on a sequence number the other writes, then
 * answers with its own 8-byte payload.  No library is involved, so a
 * provider's one-way latency divided by this number says how much of the
 * cost is software.  Prints "raw_pingpong lat_us=X ..." (median of rounds).
 *
 *   raw_pingpong [-n rounds] [-i iters] [-c cpu_a,cpu_b]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINE_SIZE	   64
#define GUARD_SECS	   120
#define MAX_ROUNDS	   1000
#define SPINS_BEFORE_YIELD 4096

struct line {
	_Alignas(LINE_SIZE) volatile uint64_t seq;
	volatile uint64_t payload;
};

struct opts {
	int rounds;
	int iters;
	int cpu[2];
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Pinning is best effort: an unavailable CPU only costs precision. */
static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "raw_pingpong: cannot pin to cpu %d: %s\n", cpu,
			strerror(errno));
}

/*
 * A peer that is not running (shared CPU, busy machine) cannot answer:
 * after a while of spinning give the CPU away so it can.  The fast path
 * never gets there.
 */
static inline uint64_t wait_seq(struct line *l, uint64_t want)
{
	unsigned int spins = 0;

	while (__atomic_load_n(&l->seq, __ATOMIC_ACQUIRE) != want) {
		cpu_relax();
		if (++spins % SPINS_BEFORE_YIELD == 0)
			sched_yield();
	}
	return l->payload;
}

static inline void post_seq(struct line *l, uint64_t seq, uint64_t val)
{
	l->payload = val;
	__atomic_store_n(&l->seq, seq, __ATOMIC_RELEASE);
}

/*
 * The child answers every odd sequence number with the next even one,
 * echoing the payload, until it has answered the whole run.
 */
static void run_child(struct line *l, const struct opts *o)
{
	uint64_t total = (uint64_t)o->rounds * o->iters + o->iters;
	uint64_t seq;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	pin(o->cpu[1]);
	for (seq = 1; seq < 2 * total; seq += 2)
		post_seq(l, seq + 1, wait_seq(l, seq) + 1);
	_exit(0);
}

/* One round: iters round trips; returns one-way latency in usec. */
static double run_round(struct line *l, uint64_t *seq, int iters)
{
	uint64_t val = 0;
	double start;
	int i;

	start = now_us();
	for (i = 0; i < iters; i++) {
		post_seq(l, *seq + 1, val);
		val = wait_seq(l, *seq + 2);
		*seq += 2;
	}
	return (now_us() - start) / (2.0 * iters);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	if (n % 2)
		return v[n / 2];
	return (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	o->rounds = 11;
	o->iters = 100000;
	o->cpu[0] = o->cpu[1] = -1;
	while ((c = getopt(argc, argv, "n:i:c:h")) != -1) {
		switch (c) {
		case 'n':
			o->rounds = atoi(optarg);
			break;
		case 'i':
			o->iters = atoi(optarg);
			break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &o->cpu[0], &o->cpu[1]) !=
			    2)
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (o->rounds < 1 || o->rounds > MAX_ROUNDS || o->iters < 1)
		return -1;
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-n rounds (11)] [-i iters (100000)] "
		"[-c cpu_a,cpu_b]\n",
		prog);
}

int main(int argc, char **argv)
{
	double lat[MAX_ROUNDS], med;
	uint64_t seq = 0;
	struct opts o;
	struct line *l;
	int status, r;
	pid_t pid;

	if (parse_args(argc, argv, &o)) {
		usage(argv[0]);
		return 2;
	}
	l = mmap(NULL, LINE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (l == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset((void *)l, 0, LINE_SIZE);

	/* A lost peer must end the run, not spin forever. */
	alarm(GUARD_SECS);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		run_child(l, &o);

	pin(o.cpu[0]);
	run_round(l, &seq, o.iters); /* warm-up: faults, caches, clocks */
	for (r = 0; r < o.rounds; r++)
		lat[r] = run_round(l, &seq, o.iters);

	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "raw_pingpong: child failed\n");
		return 1;
	}
	med = median(lat, o.rounds); /* sorts lat: lat[0] is the minimum */
	printf("raw_pingpong lat_us=%.4f min_us=%.4f rounds=%d iters=%d "
	       "cpus=%d,%d\n",
	       med, lat[0], o.rounds, o.iters, o.cpu[0], o.cpu[1]);
	return 0;
}
