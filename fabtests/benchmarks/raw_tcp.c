/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * raw_tcp: the machine's floors for a TCP provider over loopback. Two
 * processes (fork) on a TCP_NODELAY loopback connection, no library in
 * between, reads polling (MSG_DONTWAIT) as a provider's progress does: an
 * 8-byte ping-pong (one-way latency = half a round trip) and a
 * stream of 1 MiB writes the other side reads (bandwidth). A provider's
 * fi_pingpong numbers divided by these say what the software costs.
 * Also an exchange: both sides send 8 bytes, then read the other's, as
 * the two ranks of a barrier do (the floor of a 2-rank collective step).
 * Prints "raw_tcp lat_us=X mbps=Y ... xchg_us=Z" (medians of the rounds).
 *
 *   raw_tcp [-n rounds] [-i iters] [-m MiB per stream round]
 *           [-c cpu_a,cpu_b]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopback_pair.h"

#define MAX_ROUNDS 100
#define CHUNK	   (1u << 20)

struct opts {
	int rounds;
	int iters;
	int mib;
	int cpu[2];
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
	(void)sched_setaffinity(0, sizeof(set), &set);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void xfer(int fd, void *buf, size_t len, bool out)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		/* Reads spin like a provider polling its CQ: no wake-up. */
		n = out ? write(fd, (char *)buf + done, len - done)
			: recv(fd, (char *)buf + done, len - done,
			       MSG_DONTWAIT);
		if (n < 0 && !out && errno == EAGAIN)
			continue;
		if (n <= 0)
			die(out ? "write" : "read");
		done += (size_t)n;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Both sides send first, then read: one barrier step per iteration. */
static void exchange(int fd, int iters)
{
	uint64_t word = 0;
	int i;

	for (i = 0; i < iters; i++) {
		xfer(fd, &word, sizeof(word), true);
		xfer(fd, &word, sizeof(word), false);
	}
}

/* The echoing and sinking side. */
static void child(int fd, const struct opts *o)
{
	uint64_t word;
	char *buf = malloc(CHUNK);
	int r, i;

	if (!buf)
		die("malloc");
	for (r = 0; r < o->rounds; r++) {
		for (i = 0; i < o->iters; i++) {
			xfer(fd, &word, sizeof(word), false);
			xfer(fd, &word, sizeof(word), true);
		}
		for (i = 0; i < o->mib; i++)
			xfer(fd, buf, CHUNK, false);
		xfer(fd, &word, sizeof(word), true); /* stream drained */
		exchange(fd, o->iters);
	}
	exit(0);
}

int main(int argc, char **argv)
{
	struct opts o = {
		.rounds = 5, .iters = 20000, .mib = 512, .cpu = {-1, -1}};
	double lat[MAX_ROUNDS], bw[MAX_ROUNDS], xchg[MAX_ROUNDS], t;
	uint64_t word = 0;
	char *buf;
	int c, a, b, r, i;
	pid_t pid;

	while ((c = getopt(argc, argv, "n:i:m:c:")) != -1) {
		switch (c) {
		case 'n':
			o.rounds = atoi(optarg);
			break;
		case 'i':
			o.iters = atoi(optarg);
			break;
		case 'm':
			o.mib = atoi(optarg);
			break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &o.cpu[0], &o.cpu[1]) != 2)
				o.cpu[0] = o.cpu[1] = -1;
			break;
		default:
			fprintf(stderr, "usage: raw_tcp [-n rounds] [-i iters] "
					"[-m MiB] [-c cpu_a,cpu_b]\n");
			return 2;
		}
	}
	if (o.rounds < 1 || o.rounds > MAX_ROUNDS || o.iters < 1 || o.mib < 1)
		return 2;
	if (loopback_pair(&a, &b))
		die("loopback connection");
	buf = calloc(1, CHUNK);
	if (!buf)
		die("calloc");
	alarm(300);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(a);
		pin(o.cpu[1]);
		child(b, &o);
	}
	close(b);
	pin(o.cpu[0]);
	for (r = 0; r < o.rounds; r++) {
		t = now_us();
		for (i = 0; i < o.iters; i++) {
			xfer(a, &word, sizeof(word), true);
			xfer(a, &word, sizeof(word), false);
		}
		lat[r] = (now_us() - t) / o.iters / 2;
		t = now_us();
		for (i = 0; i < o.mib; i++)
			xfer(a, buf, CHUNK, true);
		xfer(a, &word, sizeof(word), false);
		bw[r] = (double)o.mib * CHUNK / (now_us() - t);
		t = now_us();
		exchange(a, o.iters);
		xchg[r] = (now_us() - t) / o.iters;
	}
	waitpid(pid, NULL, 0);
	printf("raw_tcp lat_us=%.3f mbps=%.0f rounds=%d iters=%d mib=%d "
	       "xchg_us=%.3f\n",
	       median(lat, o.rounds), median(bw, o.rounds), o.rounds, o.iters,
	       o.mib, median(xchg, o.rounds));
	return 0;
}
