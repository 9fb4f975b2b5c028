/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * memcpy_bw: single-core memcpy bandwidth, the ceiling a shared-memory
 * provider's large-message bandwidth is measured against.  Two variants:
 * "warm" copies one 1 MiB source into one 1 MiB destination over and
 * over (both stay in cache); "cold" walks 1 MiB chunks through source and
 * destination arenas several times larger than the last-level cache, so
 * every copy comes from and goes to memory.  Prints one line per variant,
 * "memcpy_bw size=1048576 mode=warm mbps=X ..." (MB = 10^6 bytes, as
 * fi_pingpong counts), median of rounds.
 *
 *   memcpy_bw [-s size] [-n rounds] [-m min_ms_per_round] [-c cpu]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS  1000
#define MIN_ARENA   (64UL << 20)
#define MAX_ARENA   (512UL << 20)
#define LLC_FACTOR  4
#define DEFAULT_LLC (32UL << 20)

struct opts {
	size_t size;
	int rounds;
	double min_us;
	int cpu;
};

struct arena {
	char *src;
	char *dst;
	size_t len; /* bytes of each of src and dst, a multiple of size */
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "memcpy_bw: cannot pin to cpu %d: %s\n", cpu,
			strerror(errno));
}

/* Size of the highest cache level of cpu0 per sysfs, 0 if unknown. */
static size_t sysfs_llc_size(void)
{
	char path[96], unit;
	size_t best = 0, size;
	int idx, level, best_level = 0;
	FILE *f;

	for (idx = 0; idx < 16; idx++) {
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/level",
			 idx);
		f = fopen(path, "r");
		if (!f)
			break;
		if (fscanf(f, "%d", &level) != 1)
			level = 0;
		fclose(f);
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/size",
			 idx);
		f = fopen(path, "r");
		if (!f)
			continue;
		unit = 0;
		if (fscanf(f, "%zu%c", &size, &unit) < 1)
			size = 0;
		fclose(f);
		if (unit == 'K')
			size <<= 10;
		else if (unit == 'M')
			size <<= 20;
		if (level > best_level) {
			best_level = level;
			best = size;
		}
	}
	return best;
}

/*
 * sysfs first: in VMs glibc's CPUID-based answer can be the whole
 * package's cache (hundreds of MiB), which would only make the cold
 * arena needlessly huge.
 */
static size_t llc_size(void)
{
	size_t size = sysfs_llc_size();
	long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);

	if (size)
		return size;
	if (l3 > 0)
		return l3;
	return DEFAULT_LLC;
}

/* Touching every page first keeps page faults out of the timed loop. */
static int arena_init(struct arena *a, size_t len)
{
	a->len = len;
	a->src = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->src == MAP_FAILED)
		return -1;
	a->dst = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->dst == MAP_FAILED)
		goto err;
	memset(a->src, 0x5a, len);
	memset(a->dst, 0xa5, len);
	return 0;
err:
	munmap(a->src, len);
	return -1;
}

static void arena_fini(struct arena *a)
{
	munmap(a->src, a->len);
	munmap(a->dst, a->len);
}

/*
 * Copies size-byte chunks, cycling through the arena, until at least
 * min_us have passed; the barrier keeps the compiler from dropping or
 * merging copies whose results are never read.  Returns MB/s.
 */
static double run_round(struct arena *a, size_t size, double min_us)
{
	size_t off = 0, bytes = 0;
	double start, elapsed;

	start = now_us();
	do {
		for (int i = 0; i < 16; i++) {
			memcpy(a->dst + off, a->src + off, size);
			__asm__ volatile("" : : "r"(a->dst) : "memory");
			bytes += size;
			off += size;
			if (off >= a->len)
				off = 0;
		}
		elapsed = now_us() - start;
	} while (elapsed < min_us);
	return bytes / elapsed;
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

static int measure(const char *mode, size_t len, const struct opts *o)
{
	double mbps[MAX_ROUNDS], med;
	struct arena a;
	int r;

	if (arena_init(&a, len)) {
		fprintf(stderr, "memcpy_bw: cannot map 2 x %zu bytes\n", len);
		return -1;
	}
	run_round(&a, o->size, o->min_us); /* warm-up */
	for (r = 0; r < o->rounds; r++)
		mbps[r] = run_round(&a, o->size, o->min_us);
	arena_fini(&a);

	med = median(mbps, o->rounds); /* sorts mbps */
	printf("memcpy_bw size=%zu mode=%s mbps=%.0f min_mbps=%.0f "
	       "max_mbps=%.0f arena=%zu rounds=%d\n",
	       o->size, mode, med, mbps[0], mbps[o->rounds - 1], len,
	       o->rounds);
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	o->size = 1UL << 20;
	o->rounds = 9;
	o->min_us = 50000;
	o->cpu = -1;
	while ((c = getopt(argc, argv, "s:n:m:c:h")) != -1) {
		switch (c) {
		case 's':
			o->size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			o->rounds = atoi(optarg);
			break;
		case 'm':
			o->min_us = atof(optarg) * 1000;
			break;
		case 'c':
			o->cpu = atoi(optarg);
			break;
		default:
			return -1;
		}
	}
	if (!o->size || o->rounds < 1 || o->rounds > MAX_ROUNDS ||
	    o->min_us <= 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	size_t cold_len;
	struct opts o;

	if (parse_args(argc, argv, &o)) {
		fprintf(stderr,
			"usage: %s [-s size (1048576)] [-n rounds (9)] "
			"[-m min_ms_per_round (50)] [-c cpu]\n",
			argv[0]);
		return 2;
	}
	pin(o.cpu);
	cold_len = LLC_FACTOR * llc_size();
	if (cold_len < MIN_ARENA)
		cold_len = MIN_ARENA;
	if (cold_len > MAX_ARENA)
		cold_len = MAX_ARENA;
	cold_len -= cold_len % o.size;
	if (cold_len < o.size)
		cold_len = o.size;

	if (measure("warm", o.size, &o) || measure("cold", cold_len, &o))
		return 1;
	return 0;
}
