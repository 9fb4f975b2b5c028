/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shared_core.c - progress when both processes of a transfer share one
 * CPU: a server and a client forked onto the same CPU, each
 * busy-polling fi_cq_read as Debian's fabtests do, over the provider named
 * by argv[1] (shm or tcp):
 *  1. 200 round trips of 8 B (tagged), timed by the client;
 *  2. 64 MiB sent as 1 MiB tagged messages, 16 in flight, until the
 *     server's 8 B answer that it has them all, data checked;
 *  3. 4096 RMA writes of 8 B, then of 4 KiB, 16 in flight, to a server
 *     whose application only polls its empty CQ until an 8 B message says
 *     they are done, data checked.
 * Phases 1 and 2 are bounded by LIMIT_MS (argv[2], default 500): a library
 * whose idle polls do not yield needs a scheduler tick per message (about
 * 3 s for either phase here). Phase 2 is also bounded in the times the
 * client left the CPU, two per message: streaming through 256 KiB of
 * segments needs the receiver scheduled four times per 1 MiB message,
 * where one handoff (CMA) does. Phase 3 is bounded by LIMIT_MS too and
 * in the times the target slept (a sched_yield() is no sleep), one per
 * four windows: a target whose progress counts arriving writes as idle
 * polls (not ofi_yield_busy) goes on sleeping once idle for 2 ms
 * (ofi_yield.h) and drains one window per sleep. A phase over its bounds
 * is run again (up to 3 tries: a third process on the CPU can steal one).
 * Exits 0 when every phase met its bound, 1 otherwise, 77 without the
 * provider.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "test_node.h"
#include "test_proc.h"

#define RTT_ITERS 200
#define BIG_SIZE  (1 << 20)
#define BIG_COUNT 64
#define WINDOW	  16
#define TRIES	  3
#define ADDR_MAX  256
#define TAG_PING  (1ULL << 40)
#define TAG_PONG  (2ULL << 40)
#define TAG_DONE  (3ULL << 40)
/* Phase 2's bound on handoffs: two per message (a stream needs four). */
#define MAX_SWITCHES	 (2 * BIG_COUNT)
#define MAX_SWITCHES_STR "128"
/*
 * Phase 3: writes per run, in flight, and the bound on the times the
 * target slept in a run: a quarter of the windows (one per window when
 * arriving writes do not count as work).
 */
#define WR_COUNT	4096
#define WR_WINDOW	16
#define WR_MAX_NAPS	(WR_COUNT / WR_WINDOW / 4)
#define WR_MAX_NAPS_STR "64"
#define WR_KEY		0x16
#define WR_BIG		4096

enum phase { PH_RTT, PH_STREAM, PH_WRITE_8, PH_WRITE_BIG, PH_COUNT };

static const char *const phase_name[PH_COUNT] = {
	[PH_RTT] = "200 round trips of 8 B",
	[PH_STREAM] = "64 MiB as 1 MiB, window 16",
	[PH_WRITE_8] = "4096 writes of 8 B, window 16",
	[PH_WRITE_BIG] = "4096 writes of 4 KiB, window 16",
};

struct node {
	struct test_node t;
	fi_addr_t peer;
	char *buf;	   /* WINDOW big buffers, then a small one */
	struct fid_mr *mr; /* all of buf, the target of peers' writes */
	uint64_t rkey;	   /* the peer's */
	uint64_t raddr;	   /* the peer's buf as its writes address it */
	uint32_t gen;	   /* write runs so far, in step on both sides */
};

static const char *prov;

static int node_open(struct node *n, char *name, size_t *namelen)
{
	size_t len = (size_t)WINDOW * BIG_SIZE + 64;
	int ret =
		test_node_open(&n->t, prov, FI_TAGGED | FI_RMA, name, namelen);

	if (ret)
		return ret;
	n->buf = calloc(1, len);
	if (!n->buf)
		return -FI_ENOMEM;
	return fi_mr_reg(n->t.domain, n->buf, len, FI_REMOTE_WRITE, 0, WR_KEY,
			 0, &n->mr, NULL);
}

static void node_close(struct node *n)
{
	if (n->mr)
		fi_close(&n->mr->fid);
	test_node_close(&n->t);
	free(n->buf);
}

/* Busy-polls for one completion, as fabtests do. */
static void wait_comp(struct node *n, struct fi_cq_tagged_entry *e)
{
	struct fi_cq_err_entry err = {0};
	ssize_t ret;

	while ((ret = fi_cq_read(n->t.cq, e, 1)) == -FI_EAGAIN)
		;
	if (ret == 1)
		return;
	if (ret == -FI_EAVAIL)
		fi_cq_readerr(n->t.cq, &err, 0);
	die("completion", ret == -FI_EAVAIL ? -err.err : (int)ret);
}

static void post(struct node *n, bool send, void *buf, size_t len, uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	ssize_t ret;

	for (;;) {
		ret = send ? fi_tsend(n->t.ep, buf, len, NULL, n->peer, tag,
				      buf)
			   : fi_trecv(n->t.ep, buf, len, NULL, n->peer, tag, 0,
				      buf);
		if (ret != -FI_EAGAIN)
			break;
		/* Full: a completion makes room (fabtests do the same). */
		if (fi_cq_read(n->t.cq, &e, 1) == 1)
			die("completion while posting", -FI_EOTHER);
	}
	if (ret)
		die(send ? "fi_tsend" : "fi_trecv", (int)ret);
}

static char *slot(struct node *n, int i)
{
	return n->buf + (size_t)(i % WINDOW) * BIG_SIZE;
}

static char *small(struct node *n)
{
	return n->buf + (size_t)WINDOW * BIG_SIZE;
}

static void server_rtt(struct node *n)
{
	struct fi_cq_tagged_entry e;
	int i;

	for (i = 0; i < RTT_ITERS; i++) {
		post(n, false, small(n), 8, TAG_PING);
		wait_comp(n, &e);
		post(n, true, small(n), 8, TAG_PONG);
		wait_comp(n, &e);
	}
}

static double client_rtt(struct node *n)
{
	struct fi_cq_tagged_entry e;
	double t0 = now_ms();
	int i, c;

	for (i = 0; i < RTT_ITERS; i++) {
		post(n, false, small(n) + 32, 8, TAG_PONG);
		post(n, true, small(n), 8, TAG_PING);
		for (c = 0; c < 2; c++)
			wait_comp(n, &e);
	}
	return now_ms() - t0;
}

/* Message @i's pattern, checked at its ends and middle. */
static void mark(char *buf, int i)
{
	buf[0] = buf[BIG_SIZE / 2] = buf[BIG_SIZE - 1] = (char)(i * 7 + 1);
}

static bool marked(const char *buf, int i)
{
	char v = (char)(i * 7 + 1);

	return buf[0] == v && buf[BIG_SIZE / 2] == v && buf[BIG_SIZE - 1] == v;
}

/*
 * Receives the stream WINDOW deep, each message by its tag into the
 * buffer the last completed one freed (large messages may complete out of
 * order); false on bad data.
 */
static bool server_stream(struct node *n)
{
	struct fi_cq_tagged_entry e;
	bool ok = true;
	int i, posted = 0;

	for (; posted < WINDOW; posted++)
		post(n, false, slot(n, posted), BIG_SIZE, posted);
	for (i = 0; i < BIG_COUNT; i++) {
		wait_comp(n, &e);
		if (e.tag >= BIG_COUNT || e.len != BIG_SIZE ||
		    !marked(e.op_context, (int)e.tag)) {
			fprintf(stderr, "message %d: tag %llu, %zu bytes\n", i,
				(unsigned long long)e.tag, e.len);
			ok = false;
		}
		if (posted < BIG_COUNT) {
			post(n, false, e.op_context, BIG_SIZE, posted);
			posted++;
		}
	}
	post(n, true, small(n), 8, TAG_DONE);
	wait_comp(n, &e);
	return ok;
}

/* Sends the stream WINDOW deep, each from a buffer a completion freed. */
static double client_stream(struct node *n)
{
	struct fi_cq_tagged_entry e;
	char *free_buf[WINDOW];
	double t0 = now_ms();
	int posted = 0, done = 0, nfree;

	for (nfree = 0; nfree < WINDOW; nfree++)
		free_buf[nfree] = slot(n, nfree);
	post(n, false, small(n), 8, TAG_DONE);
	while (done < BIG_COUNT + 1) {
		for (; posted < BIG_COUNT && nfree; posted++) {
			mark(free_buf[--nfree], posted);
			post(n, true, free_buf[nfree], BIG_SIZE, posted);
		}
		wait_comp(n, &e);
		if (e.op_context != small(n))
			free_buf[nfree++] = e.op_context;
		done++;
	}
	return now_ms() - t0;
}

/*
 * The value write @i of a run stamps at both ends of its @size bytes: the
 * run's generation too, so that a slot left over from an earlier try
 * never passes for this one's.
 */
static uint64_t wr_stamp(const struct node *n, int i)
{
	return (uint64_t)n->gen << 32 | (uint32_t)(i + 1);
}

static void wr_mark(char *buf, size_t size, uint64_t v)
{
	memcpy(buf, &v, sizeof(v));
	memcpy(buf + size - sizeof(v), &v, sizeof(v));
}

static bool wr_marked(const char *buf, size_t size, uint64_t v)
{
	uint64_t a, b;

	memcpy(&a, buf, sizeof(a));
	memcpy(&b, buf + size - sizeof(b), sizeof(b));
	return a == v && b == v;
}

/*
 * The target of a write run: its application only polls its CQ, empty
 * until the initiator's 8 B message that every write completed, then
 * finds in each slot the last write to it; false on bad data.
 */
static bool server_write(struct node *n, size_t size)
{
	struct fi_cq_tagged_entry e;
	bool ok = true;
	int j;

	n->gen++;
	post(n, false, small(n), 8, TAG_DONE);
	wait_comp(n, &e);
	for (j = 0; j < WR_WINDOW; j++) {
		if (wr_marked(n->buf + (size_t)j * size, size,
			      wr_stamp(n, WR_COUNT - WR_WINDOW + j)))
			continue;
		fprintf(stderr, "write of %zu B: slot %d holds %#llx\n", size,
			j, *(unsigned long long *)(n->buf + (size_t)j * size));
		ok = false;
	}
	return ok;
}

/* Takes one write completion: its slot may be written again. */
static void wr_reap(struct node *n, size_t size, bool *busy)
{
	struct fi_cq_tagged_entry e;

	wait_comp(n, &e);
	busy[((char *)e.op_context - n->buf) / size] = false;
}

/*
 * WR_COUNT writes of @size, WR_WINDOW in flight, write i into slot
 * i % WR_WINDOW from the same slot of our buffer once the slot's last
 * write completed, then the 8 B message that they are done.
 */
static double client_write(struct node *n, size_t size)
{
	bool busy[WR_WINDOW] = {false};
	struct fi_cq_tagged_entry e;
	double t0 = now_ms();
	size_t off;
	ssize_t ret;
	int i, j, left = 0;

	n->gen++;
	for (i = 0; i < WR_COUNT; i++) {
		j = i % WR_WINDOW;
		while (busy[j]) {
			wr_reap(n, size, busy);
			left--;
		}
		off = (size_t)j * size;
		wr_mark(n->buf + off, size, wr_stamp(n, i));
		while ((ret = fi_write(n->t.ep, n->buf + off, size, NULL,
				       n->peer, n->raddr + off, n->rkey,
				       n->buf + off)) == -FI_EAGAIN) {
			if (!left) {
				/* Nothing to reap: progress, try again. */
				if (fi_cq_read(n->t.cq, &e, 1) == 1)
					die("completion", -FI_EOTHER);
				continue;
			}
			wr_reap(n, size, busy);
			left--;
		}
		if (ret)
			die("fi_write", (int)ret);
		busy[j] = true;
		left++;
	}
	for (; left; left--)
		wr_reap(n, size, busy);
	post(n, true, small(n), 8, TAG_DONE);
	wait_comp(n, &e);
	return now_ms() - t0;
}

static int xfer(int fd, void *buf, size_t len, bool out)
{
	ssize_t r = out ? write(fd, buf, len) : read(fd, buf, len);

	return r == (ssize_t)len ? 0 : -1;
}

/*
 * Exchanges names and write targets (key, address: an offset unless the
 * domain uses virtual addresses) through the pipes and inserts the peer.
 */
static void connect_peer(struct node *n, int in, int out, char *name,
			 size_t len)
{
	uint64_t key = fi_mr_key(n->mr), addr = 0;
	char peer[ADDR_MAX];
	size_t plen;

	if (n->t.mr_mode & FI_MR_VIRT_ADDR)
		addr = (uintptr_t)n->buf;
	if (xfer(out, &len, sizeof(len), true) || xfer(out, name, len, true) ||
	    xfer(out, &key, sizeof(key), true) ||
	    xfer(out, &addr, sizeof(addr), true) ||
	    xfer(in, &plen, sizeof(plen), false) || plen > ADDR_MAX ||
	    xfer(in, peer, plen, false) ||
	    xfer(in, &n->rkey, sizeof(n->rkey), false) ||
	    xfer(in, &n->raddr, sizeof(n->raddr), false))
		die("name exchange", -FI_EIO);
	if (fi_av_insert(n->t.av, peer, 1, &n->peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
}

/* One try of @phase on the server: 1 on bad data. */
static int server_phase(struct node *n, enum phase phase)
{
	switch (phase) {
	case PH_RTT:
		server_rtt(n);
		return 0;
	case PH_STREAM:
		return !server_stream(n);
	case PH_WRITE_8:
		return !server_write(n, 8);
	default:
		return !server_write(n, WR_BIG);
	}
}

static double client_run(struct node *n, enum phase phase)
{
	switch (phase) {
	case PH_RTT:
		return client_rtt(n);
	case PH_STREAM:
		return client_stream(n);
	case PH_WRITE_8:
		return client_write(n, 8);
	default:
		return client_write(n, WR_BIG);
	}
}

/* Times this process left its CPU (gave it away or had it taken). */
static long switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

/*
 * Times this process slept: voluntary switches. A sched_yield() that
 * hands the CPU over is an involuntary one (the task stays runnable).
 */
static long naps(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw;
}

/* What the server tells the client after each try. */
struct report {
	int bad;   /* its data was wrong */
	long naps; /* times it slept meanwhile */
};

static void server_try(struct node *n, enum phase phase, int out,
		       struct report *rep)
{
	long slept = naps();

	rep->bad = server_phase(n, phase);
	rep->naps = naps() - slept;
	if (xfer(out, rep, sizeof(*rep), true))
		die("pipe", -FI_EIO);
}

/*
 * One try of @phase on the client, with the server's @rep: 1 when over
 * its bounds (@limit for phases 1 and 2; @limit < 0: none, a warm-up).
 */
static int client_try(struct node *n, enum phase phase, int try, double limit,
		      int in, struct report *rep)
{
	long sw = switches();
	double ms = client_run(n, phase);
	bool stream = phase == PH_STREAM, write = phase >= PH_WRITE_8;

	sw = switches() - sw;
	if (xfer(in, rep, sizeof(*rep), false))
		die("pipe", -FI_EIO);
	printf("%s: %s: %.1f ms, %ld switches", prov, phase_name[phase], ms,
	       sw);
	if (write)
		printf(", target slept %ld times", rep->naps);
	if (limit < 0) {
		printf(" (warm-up)\n");
		return 0;
	}
	printf(" (try %d, limit %.0f ms%s)\n", try, limit,
	       stream  ? ", " MAX_SWITCHES_STR " switches"
	       : write ? ", " WR_MAX_NAPS_STR " sleeps"
		       : "");
	return ms > limit || (stream && sw > MAX_SWITCHES) ||
	       (write && rep->naps > WR_MAX_NAPS);
}

/*
 * Each phase's tries, in step: after each try the server reports, then
 * the client says whether to run again, so that the client never writes
 * into what the server still checks. Bad data ends the run on both sides.
 */
static int run(bool server, struct node *n, int in, int out, double limit)
{
	struct report rep = {0};
	char again = 0;
	int phase, try, over = 0, fail = 0;

	for (phase = 0; phase < PH_COUNT && !rep.bad; phase++) {
		for (try = 1; try <= TRIES; try++) {
			if (server)
				server_try(n, phase, out, &rep);
			else
				over = client_try(n, phase, try, limit, in,
						  &rep);
			again = (char)(!rep.bad && over && try < TRIES);
			if (xfer(server ? in : out, &again, 1, !server))
				die("pipe", -FI_EIO);
			if (!again)
				break;
		}
		fail |= rep.bad || over;
	}
	return fail;
}

int main(int argc, char **argv)
{
	int to_c[2], to_s[2], status, fail, cpu;
	double limit = argc > 2 ? atof(argv[2]) : 500;
	char name[ADDR_MAX];
	size_t len = sizeof(name);
	struct node n = {0};
	bool server;
	pid_t pid;

	prov = argc > 1 ? argv[1] : "shm";
	setvbuf(stdout, NULL, _IONBF, 0);
	cpu = pin_one_cpu();
	if (cpu < 0)
		die("sched_setaffinity", -FI_EOTHER);
	if (pipe(to_c) || pipe(to_s))
		die("pipe", -FI_EIO);
	pid = fork();
	if (pid < 0)
		die("fork", -FI_EOTHER);
	server = pid > 0;
	alarm(120);
	fail = node_open(&n, name, &len);
	if (fail == -FI_ENODATA) {
		if (server)
			printf("SKIP: no %s provider\n", prov);
		return server ? (waitpid(pid, &status, 0), 77) : 77;
	}
	if (fail)
		die("open", fail);
	if (server)
		connect_peer(&n, to_s[0], to_c[1], name, len);
	else
		connect_peer(&n, to_c[0], to_s[1], name, len);
	if (server)
		printf("%s: both processes on cpu %d\n", prov, cpu);
	/* Warm up: connections, first-touch of the buffers. */
	fail = server ? run(true, &n, to_s[0], to_c[1], -1)
		      : run(false, &n, to_c[0], to_s[1], -1);
	if (!fail)
		fail = server ? run(true, &n, to_s[0], to_c[1], limit)
			      : run(false, &n, to_c[0], to_s[1], limit);
	node_close(&n);
	if (!server)
		return fail;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		fail = 1;
	printf("%s\n", fail ? "FAIL" : "PASS");
	return fail;
}
