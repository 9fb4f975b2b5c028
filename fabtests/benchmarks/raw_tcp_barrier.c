/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * raw_tcp_barrier: the floor of an N-process barrier over loopback TCP,
 * no library in between: a TCP_NODELAY connection per pair of processes
 * (fork), and the collective engine's schedule for a barrier (recursive doubling
 * among the largest power of two, the others folded in before and
 * answered after), one 8-byte write per step. Placed and polled as
 * fabtests/functional/rdm_coll.c -B places and polls: rank i on the i-th
 * allowed CPU, reads with MSG_DONTWAIT on the socket the step waits on,
 * and a sched_yield() after an empty one when the ranks outnumber the
 * CPUs (as Open MPI's mpi_yield_when_idle); -Y: never yield. A
 * provider's rdm_coll barrier divided by this says what the software
 * costs; with more ranks than CPUs the figure is mostly the scheduler's.
 * Prints "raw_tcp_barrier n=N us=X" (the slowest rank's median).
 *
 *   raw_tcp_barrier [-N procs] [-I iters] [-Y]
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopback_pair.h"

#define MAX_PROCS 64
#define WARMUP	  200

static int nprocs = 4, iters = 5000, me; /* me -1: the parent */
static bool never_yield, yields;
/* fd[i][j]: process i's end of the i-j connection */
static int fd[MAX_PROCS][MAX_PROCS];

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void send_to(int peer)
{
	uint64_t w = 0;

	if (send(fd[me][peer], &w, sizeof(w), 0) != sizeof(w))
		die("send");
}

static void recv_from(int peer)
{
	uint64_t w;
	ssize_t n;

	for (;;) {
		n = recv(fd[me][peer], &w, sizeof(w), MSG_DONTWAIT);
		if (n == sizeof(w))
			return;
		if (n > 0) { /* 8 bytes never split on loopback; be exact */
			if (recv(fd[me][peer], (char *)&w + n, sizeof(w) - n,
				 MSG_WAITALL) != (ssize_t)sizeof(w) - n)
				die("recv");
			return;
		}
		if (n == 0 || errno != EAGAIN)
			die("recv");
		if (yields)
			sched_yield();
	}
}

/* prov/util/coll/coll_sched.c's sched_allreduce_rd with no payload. */
static void barrier(void)
{
	int p = 1, mask;

	while (p * 2 <= nprocs)
		p *= 2;
	if (me >= p) {
		send_to(me - p);
		recv_from(me - p);
		return;
	}
	if (me + p < nprocs)
		recv_from(me + p);
	for (mask = 1; mask < p; mask <<= 1) {
		send_to(me ^ mask);
		recv_from(me ^ mask);
	}
	if (me + p < nprocs)
		send_to(me + p);
}

static void place(void)
{
	cpu_set_t allowed, one;
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) ||
		    n++ != me % CPU_COUNT(&allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		(void)sched_setaffinity(0, sizeof(one), &one);
		break;
	}
	yields = nprocs > CPU_COUNT(&allowed) && !never_yield;
}

/* Only our own ends stay open, so a rank that dies is an EOF to its
 * peers rather than a wait for ever. */
static void close_others(void)
{
	int i, j;

	for (i = 0; i < nprocs; i++)
		for (j = 0; j < nprocs; j++)
			if (i != j && (i != me || me < 0))
				close(fd[i][j]);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double run_rank(void)
{
	double *t = calloc((size_t)iters, sizeof(double)), t0, med;
	int k;

	if (!t)
		die("calloc");
	place();
	for (k = -WARMUP; k < iters; k++) {
		t0 = now_us();
		barrier();
		if (k >= 0)
			t[k] = now_us() - t0;
	}
	qsort(t, (size_t)iters, sizeof(double), cmp_d);
	med = t[iters / 2];
	free(t);
	return med;
}

int main(int argc, char **argv)
{
	double *med, worst = 0;
	int opt, i, j, st, bad = 0;
	pid_t pid[MAX_PROCS];

	while ((opt = getopt(argc, argv, "N:I:Y")) != -1) {
		switch (opt) {
		case 'N':
			nprocs = atoi(optarg);
			break;
		case 'I':
			iters = atoi(optarg);
			break;
		case 'Y':
			never_yield = true;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-N procs] [-I iters] [-Y]\n",
				argv[0]);
			return 2;
		}
	}
	if (nprocs < 2 || nprocs > MAX_PROCS || iters < 1) {
		fprintf(stderr, "need 2 <= N <= %d and I >= 1\n", MAX_PROCS);
		return 2;
	}
	med = mmap(NULL, sizeof(double) * MAX_PROCS, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (med == MAP_FAILED)
		die("mmap");
	for (i = 0; i < nprocs; i++)
		for (j = i + 1; j < nprocs; j++)
			if (loopback_pair(&fd[i][j], &fd[j][i]))
				die("loopback_pair");
	for (i = 0; i < nprocs; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			die("fork");
		if (!pid[i]) {
			/* a rank left alone would spin forever */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			me = i;
			close_others();
			med[i] = run_rank();
			_exit(0);
		}
	}
	me = -1;
	close_others();
	for (i = 0; i < nprocs; i++) {
		if (waitpid(pid[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			bad = 1;
			continue;
		}
		worst = med[i] > worst ? med[i] : worst;
	}
	if (bad) {
		fprintf(stderr, "a rank failed\n");
		return 1;
	}
	printf("raw_tcp_barrier n=%d us=%.3f\n", nprocs, worst);
	return 0;
}
