/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_lifecycle.c - lifecycles and liveness of shm transfers across
 * processes: what a sender's pending work becomes
 * when its receiver closes its endpoint while the process lives on (or is
 * killed), whether one slow or closed receiver holds up a sender's
 * transfers to other peers, and whether a sender that dies between
 * claiming and publishing a command-ring slot wedges the receiver's ring.
 *
 * Roles are forked children; the parent never calls into libfabric, so
 * every child loads the provider itself, and the parent sets the provider
 * parameters (FI_SHM_CMA_THRESHOLD, FI_PROGRESS_TARGET) each case needs
 * in the environment before it forks. Children meet through a MAP_SHARED block made before
 * fork, run under alarm(), and whatever outlives its case is killed.
 * Everything goes through the public API except claim_unpublished(),
 * which plays the dying sender on the provider's ring (prov/shm/shm.h),
 * and the pool sizes the checks count against (SHM_INJECT_BUFS ...).
 *
 * Usage: shm_lifecycle [close_rx_pending|kill_rx_pending|slow_rx_no_block|
 * closed_rx_no_block|dead_publish]... (default: all). Prints PASS or FAIL
 * with a reason per case; exits 1 when any selected case failed.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
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

#include "shm.h"

#define NAME_LEN  64
#define CHILD_TMO 30	    /* alarm() in every child, seconds */
#define CASE_TMO  25	    /* the parent kills what outlives a case */
#define ERR_TMO	  5	    /* pending work must be failed within this */
#define FLOW_TMO  5	    /* transfers to a live peer must finish within */
#define SRC_SIZE  (4 << 20) /* largest send */
#define MR_SIZE	  (1 << 20) /* the RMA target's registration */
#define MAXOPS	  2048
#define RX_POSTED 8

/* Roles: sender, the receiver that closes/stalls/dies, a live receiver. */
enum { ROLE_S, ROLE_A, ROLE_B, ROLE_X, NROLES };
static const char *const role_name[NROLES] = {"S", "A", "B", "X"};

enum {
	F_CLOSE,   /* S: A may close its endpoint now */
	F_CLOSED,  /* A: endpoint closed, process still running */
	F_SENT,	   /* S: all its sends are posted */
	F_CLAIMED, /* X: ring slot claimed, about to die */
	F_B_GO,	   /* S (or the parent): B may start receiving */
	F_FINISH,  /* parent: everyone may clean up and exit */
	F_NFLAGS,
};

struct shared {
	char names[NROLES][NAME_LEN];
	uint64_t key;	/* A's registration for RMA */
	uint64_t raddr; /* its address */
	_Atomic int ready[NROLES];
	_Atomic int flag[F_NFLAGS];
	_Atomic int count[NROLES];  /* receives completed */
	_Atomic int rx_err[NROLES]; /* receives failed */
	_Atomic pid_t pid[NROLES];
	_Atomic int why_lock;
	_Atomic int why_taken;
	char why[1024]; /* the failures of the case */
};

struct node {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_mr *mr;
	fi_addr_t addr[NROLES];
};

static struct shared *sh;
/*
 * A's registered memory, shared with S so that it can tell an RMA that
 * really reached A (success allowed) from one that did not. Reads come
 * from RD_OFF on, which holds the pattern.
 */
static uint8_t *amem;
#define RD_OFF (MR_SIZE / 2)
static int role = -1; /* -1 in the parent */
static int fails;

static void fail(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int zero = 0;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The case's reasons, joined in the shared block. */
	while (!atomic_compare_exchange_weak(&sh->why_lock, &zero, 1))
		zero = 0;
	len = strlen(sh->why);
	snprintf(sh->why + len, sizeof(sh->why) - len, "%s%s: %s",
		 len ? "; " : "", role < 0 ? "parent" : role_name[role], msg);
	atomic_store(&sh->why_taken, 1);
	atomic_store(&sh->why_lock, 0);
	fails++;
}

#define DIE(...)                                                               \
	do {                                                                   \
		fail(__VA_ARGS__);                                             \
		_exit(1);                                                      \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool flag_is(int f)
{
	return atomic_load(&sh->flag[f]) != 0;
}

static void flag_set(int f)
{
	atomic_store(&sh->flag[f], 1);
}

/* Waits for flag @f; false after @tmo seconds. */
static bool wait_flag(int f, double tmo)
{
	double end = now() + tmo;

	while (!flag_is(f)) {
		if (now() > end)
			return false;
		usleep(500);
	}
	return true;
}

/* The payload pattern: byte i of every message is pat(i). */
static uint8_t pat(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 10) + 1);
}

static void pat_fill(uint8_t *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pat(i);
}

static long pat_bad(const uint8_t *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (b[i] != pat(i))
			return (long)i;
	}
	return -1;
}

/* Whether this machine lets a process read its own memory with CMA. */
static bool cma_works(void)
{
	char src[8] = "lifecyc", dst[8] = {0};
	struct iovec l = {dst, sizeof(dst)}, r = {src, sizeof(src)};

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == sizeof(src);
}

/* ------------------------------------------------------------------ */
/* Fabric objects of a child.                                           */

static int node_open(struct node *n)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED, .size = 4096};
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	size_t len = NAME_LEN;
	int ret;

	memset(n, 0, sizeof(*n));
	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE |
		      FI_REMOTE_READ | FI_REMOTE_WRITE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->addr_format = FI_ADDR_STR;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("shm");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &n->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	return fi_fabric(n->info->fabric_attr, &n->fab, NULL) ?:
	       fi_domain(n->fab, n->info, &n->dom, NULL) ?:
	       fi_av_open(n->dom, &aa, &n->av, NULL) ?:
	       fi_endpoint(n->dom, n->info, &n->ep, NULL) ?:
	       fi_cq_open(n->dom, &ca, &n->cq, NULL) ?:
	       fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ?:
	       fi_ep_bind(n->ep, &n->av->fid, 0) ?: fi_enable(n->ep) ?:
	       fi_getname(&n->ep->fid, sh->names[role], &len);
}

/* Closes what is still open; @n->ep may have been closed before. */
static void node_close(struct node *n)
{
	if (n->ep && fi_close(&n->ep->fid))
		fail("close ep");
	if (n->mr)
		fi_close(&n->mr->fid);
	if (n->cq)
		fi_close(&n->cq->fid);
	if (n->av)
		fi_close(&n->av->fid);
	if (n->dom)
		fi_close(&n->dom->fid);
	if (n->fab)
		fi_close(&n->fab->fid);
	fi_freeinfo(n->info);
	memset(n, 0, sizeof(*n));
}

/* Opens, publishes our name and says so. */
static void node_start(struct node *n)
{
	int ret = node_open(n);

	if (ret)
		DIE("open: %s", fi_strerror(-ret));
	atomic_store(&sh->ready[role], 1);
}

/* Inserts the published address of @r (its child is ready). */
static void node_peer(struct node *n, int r)
{
	double end = now() + 10;

	while (!atomic_load(&sh->ready[r])) {
		if (now() > end)
			DIE("%s never came up", role_name[r]);
		usleep(500);
	}
	if (fi_av_insert(n->av, sh->names[r], 1, &n->addr[r], 0, NULL) != 1)
		DIE("av insert %s", sh->names[r]);
}

/* ------------------------------------------------------------------ */
/* Receiving side.                                                      */

/*
 * Keeps RX_POSTED tagged receives of @size bytes posted and counts what
 * lands in sh->count[role] (each checked against the pattern) until the
 * parent says finish.
 */
static void rx_loop(struct node *n, size_t size)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t *buf[RX_POSTED];
	ssize_t ret;
	long bad;
	int i;

	for (i = 0; i < RX_POSTED; i++) {
		buf[i] = malloc(size);
		if (!buf[i] || fi_trecv(n->ep, buf[i], size, NULL,
					FI_ADDR_UNSPEC, 0, ~0ULL, &buf[i]))
			DIE("post receive");
	}
	while (!flag_is(F_FINISH)) {
		ret = fi_cq_read(n->cq, &e, 1);
		if (ret == -FI_EAGAIN) {
			sched_yield();
			continue;
		}
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(n->cq, &err, 0);
			atomic_fetch_add(&sh->rx_err[role], 1);
			e.op_context = err.op_context;
		} else if (ret != 1) {
			DIE("cq read: %s", fi_strerror((int)-ret));
		}
		i = (int)((uint8_t **)e.op_context - buf);
		if (i < 0 || i >= RX_POSTED)
			DIE("completion with a foreign context");
		if (ret == 1 && (bad = pat_bad(buf[i], e.len)) >= 0)
			fail("received %zu bytes, wrong at %ld", e.len, bad);
		else if (ret == 1)
			atomic_fetch_add(&sh->count[role], 1);
		if (fi_trecv(n->ep, buf[i], size, NULL, FI_ADDR_UNSPEC, 0,
			     ~0ULL, &buf[i]))
			DIE("repost receive");
	}
	for (i = 0; i < RX_POSTED; i++)
		free(buf[i]);
}

/* B: a live receiver from F_B_GO until the parent says finish. */
static void live_rx(void)
{
	struct node n;

	node_start(&n);
	if (!wait_flag(F_B_GO, CHILD_TMO))
		DIE("never told to go");
	rx_loop(&n, SRC_SIZE);
	node_close(&n);
}

/*
 * A: registers memory for RMA, then never touches libfabric until S says
 * close (close variants) or the parent says finish; closes only its
 * endpoint and lives on.
 */
static void idle_rx(bool close_ep)
{
	struct node n;

	node_start(&n);
	if (fi_mr_reg(n.dom, amem, MR_SIZE, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
		      0, 0, &n.mr, NULL))
		DIE("mr reg");
	sh->key = fi_mr_key(n.mr);
	sh->raddr = (uintptr_t)amem;
	atomic_store(&sh->ready[role], 2); /* key published */
	if (close_ep) {
		if (!wait_flag(F_CLOSE, CHILD_TMO))
			DIE("never told to close");
		if (fi_close(&n.ep->fid))
			fail("fi_close(ep) failed");
		n.ep = NULL;
		flag_set(F_CLOSED);
	}
	wait_flag(F_FINISH, CHILD_TMO);
	node_close(&n);
}

static void idle_rx_close(void)
{
	idle_rx(true);
}

static void idle_rx_stay(void)
{
	idle_rx(false);
}

/* ------------------------------------------------------------------ */
/* Sending side: every operation is tracked by its context.            */

struct op {
	const char *kind;
	int to; /* role */
	/* RMA: where its data must be if it succeeded */
	const uint8_t *verify;
	size_t len;
	bool done;
	int err;       /* of the completion, 0 for success */
	double t_done; /* when it completed */
};

static struct op ops[MAXOPS];
static int nops;
static uint8_t *src;

static struct op *op_new(const char *kind, int to)
{
	struct op *o;

	if (nops == MAXOPS)
		DIE("too many operations");
	o = &ops[nops++];
	*o = (struct op){.kind = kind, .to = to};
	return o;
}

/* Reaps every completion the CQ holds; how many. */
static int s_poll(struct node *n)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct op *o;
	ssize_t ret;
	int got = 0;

	for (;;) {
		ret = fi_cq_read(n->cq, &e, 1);
		if (ret == -FI_EAGAIN)
			return got;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(n->cq, &err, 0) != 1)
				DIE("readerr");
			o = err.op_context;
			if (o < ops || o >= ops + nops)
				DIE("error for a foreign context");
			o->err = err.err ? err.err : -1;
		} else if (ret == 1) {
			o = e.op_context;
			if (o < ops || o >= ops + nops)
				DIE("completion for a foreign context");
			o->err = 0;
		} else {
			DIE("cq read: %s", fi_strerror((int)-ret));
		}
		if (o->done)
			fail("%s to %s completed twice", o->kind,
			     role_name[o->to]);
		o->done = true;
		o->t_done = now();
		got++;
	}
}

/*
 * Posts with retries on -FI_EAGAIN while reaping completions; the
 * post's result, -FI_ETIMEDOUT when it stayed busy for @tmo seconds.
 */
#define POST(n, tmo, call)                                                     \
	({                                                                     \
		double _end = now() + (tmo);                                   \
		ssize_t _r;                                                    \
		while ((_r = (call)) == -FI_EAGAIN && now() < _end)            \
			s_poll(n);                                             \
		_r == -FI_EAGAIN ? -FI_ETIMEDOUT : _r;                         \
	})

static void s_tsend(struct node *n, int to, const char *kind, size_t len)
{
	struct op *o = op_new(kind, to);
	ssize_t ret;

	ret = POST(n, 2, fi_tsend(n->ep, src, len, NULL, n->addr[to], 1, o));
	if (ret)
		DIE("%s to %s: post %s", kind, role_name[to],
		    fi_strerror((int)-ret));
}

static void s_tsend_dc(struct node *n, int to, const char *kind, size_t len)
{
	struct iovec iov = {src, len};
	struct fi_msg_tagged m = {.msg_iov = &iov, .iov_count = 1, .tag = 1};
	ssize_t ret;

	m.addr = n->addr[to];
	m.context = op_new(kind, to);
	ret = POST(n, 2, fi_tsendmsg(n->ep, &m, FI_DELIVERY_COMPLETE));
	if (ret)
		DIE("%s: post %s", kind, fi_strerror((int)-ret));
}

/* An RMA at @off of A's memory; reads land at the same offset of rdst. */
static void s_rma(struct node *n, bool write, const char *kind, size_t len,
		  size_t off)
{
	static uint8_t *rdst;
	uint64_t raddr = sh->raddr + off;
	struct op *o = op_new(kind, ROLE_A);
	fi_addr_t a = n->addr[ROLE_A];
	ssize_t ret;

	if (!rdst && !(rdst = calloc(1, MR_SIZE)))
		DIE("malloc");
	o->verify = write ? amem + off : rdst + off;
	o->len = len;
	if (write)
		ret = POST(
			n, 2,
			fi_write(n->ep, src, len, NULL, a, raddr, sh->key, o));
	else
		ret = POST(n, 2,
			   fi_read(n->ep, rdst + off, len, NULL, a, raddr,
				   sh->key, o));
	if (ret)
		DIE("%s: post %s", kind, fi_strerror((int)-ret));
}

/* Pending operations to @to; with @list, their kinds go there. */
static int s_pending(int to, char *list, size_t len)
{
	int i, n = 0;
	size_t used = 0;

	if (list && len)
		list[0] = '\0';
	for (i = 0; i < nops; i++) {
		if (ops[i].to != to || ops[i].done)
			continue;
		if (list && used < len)
			used += snprintf(list + used, len - used, "%s%s",
					 n ? ", " : "", ops[i].kind);
		n++;
	}
	return n;
}

/* Reaps completions until nothing is pending to @to or @tmo passed. */
static void s_drain(struct node *n, int to, double tmo)
{
	double end = now() + tmo;

	while (s_pending(to, NULL, 0) && now() < end) {
		if (!s_poll(n))
			sched_yield();
	}
}

/*
 * The operations to @to that completed with success though their data
 * never arrived: sends (A never receives), RMA whose bytes are not there.
 */
static int s_successes(int to, char *list, size_t len)
{
	size_t used = 0;
	int i, k = 0;

	list[0] = '\0';
	for (i = 0; i < nops; i++) {
		if (ops[i].to != to || !ops[i].done || ops[i].err)
			continue;
		if (ops[i].verify && pat_bad(ops[i].verify, ops[i].len) < 0)
			continue;
		if (used < len)
			used += snprintf(list + used, len - used, "%s%s",
					 k ? ", " : "", ops[i].kind);
		k++;
	}
	return k;
}

static void s_open(struct node *n, const int *peers, int npeers)
{
	int i;

	node_start(n);
	src = malloc(SRC_SIZE);
	if (!src)
		DIE("malloc");
	pat_fill(src, SRC_SIZE);
	for (i = 0; i < npeers; i++)
		node_peer(n, peers[i]);
}

/* An idle A publishes its RMA key after its name. */
static void s_wait_key(void)
{
	double end = now() + 10;

	while (atomic_load(&sh->ready[ROLE_A]) != 2) {
		if (now() > end)
			DIE("A never published its key");
		usleep(500);
	}
}

/* ------------------------------------------------------------------ */
/* 1. A receiver closes (or dies) with work of every kind pending.      */

static bool rx_killed; /* kill_rx_pending: A is SIGKILLed instead */

/*
 * Fills A's share of our inject buffers and then its command ring with
 * fi_tinject (no completions), until the provider says busy.
 */
static void s_fill(struct node *n, size_t len, int max, int *count)
{
	ssize_t ret;
	int again = 0;

	for (*count = 0; *count < max && again < 200;) {
		ret = fi_tinject(n->ep, src, len, n->addr[ROLE_A], 1);
		if (ret == -FI_EAGAIN) {
			again++;
			continue;
		}
		if (ret)
			DIE("fi_tinject %zu: %s", len, fi_strerror((int)-ret));
		again = 0;
		(*count)++;
	}
}

/*
 * After A is gone: inject-protocol sends (with completions) to the live B
 * while B does not look yet, so each holds one of our inject buffers until
 * B reads it. All of them must be free again: none may stay lost to A.
 * Then B receives, and more sends follow.
 */
static void s_inject_to_b(struct node *n)
{
	const int total = SHM_INJECT_BUFS + 64;
	double end;
	int i, k = nops;
	struct op *o;
	ssize_t ret;

	for (i = 0; i < total; i++) {
		if (i == SHM_INJECT_BUFS)
			flag_set(F_B_GO);
		end = now() + (i < SHM_INJECT_BUFS ? 0.5 : FLOW_TMO);
		o = op_new("inject to B", ROLE_B);
		ret = POST(n, end - now(),
			   fi_tsend(n->ep, src, 2048, NULL, n->addr[ROLE_B], 1,
				    o));
		if (ret == -FI_ETIMEDOUT) {
			nops--;
			break;
		}
		if (ret)
			DIE("send to B: %s", fi_strerror((int)-ret));
	}
	flag_set(F_B_GO);
	if (i < SHM_INJECT_BUFS) {
		fail("inject buffers lost to A: only %d of %d free for sends "
		     "to B",
		     i, SHM_INJECT_BUFS);
		return;
	}
	if (i < total) {
		fail("send %d to B still -FI_EAGAIN after %d s", i + 1,
		     FLOW_TMO);
		return;
	}
	s_drain(n, ROLE_B, FLOW_TMO);
	if (s_pending(ROLE_B, NULL, 0))
		fail("%d sends to B not completed", s_pending(ROLE_B, NULL, 0));
	for (; k < nops; k++) {
		if (ops[k].err) {
			fail("send to B failed: %s", fi_strerror(ops[k].err));
			return;
		}
	}
	end = now() + FLOW_TMO;
	while (atomic_load(&sh->count[ROLE_B]) < total && now() < end)
		usleep(1000);
	if (atomic_load(&sh->count[ROLE_B]) != total)
		fail("B received %d of %d", atomic_load(&sh->count[ROLE_B]),
		     total);
}

static void s_close_rx_pending(void)
{
	static const int peers[] = {ROLE_A, ROLE_B};
	char list[400];
	struct node n;
	int inj, inl, k;
	double t0;

	s_open(&n, peers, 2);
	s_wait_key();
	/* CMA above the 128 KiB threshold the parent set, streamed below. */
	s_tsend(&n, ROLE_A, "CMA-size send 1 MiB", 1 << 20);
	s_tsend(&n, ROLE_A, "CMA-size send 256 KiB", 256 << 10);
	s_tsend(&n, ROLE_A, "SAR-size send 96 KiB", 96 << 10);
	s_tsend(&n, ROLE_A, "SAR-size send 64 KiB", 64 << 10);
	s_tsend_dc(&n, ROLE_A, "DC inline send", 8);
	s_tsend_dc(&n, ROLE_A, "DC inject send", 2048);
	s_rma(&n, true, "RMA write inline", 64, 0);
	s_rma(&n, true, "RMA write inject", 2048, 4096);
	s_rma(&n, true, "RMA write 384 KiB", 384 << 10, 128 << 10);
	s_rma(&n, false, "RMA read inject", 2048, RD_OFF);
	s_rma(&n, false, "RMA read 256 KiB", 256 << 10, RD_OFF + (64 << 10));
	s_fill(&n, 2048, 2 * SHM_INJECT_BUFS, &inj);
	s_fill(&n, 8, 2 * SHM_CMD_SLOTS, &inl);
	printf("  S: %d tracked operations, %d inject and %d inline "
	       "fi_tinject pending to A\n",
	       nops, inj, inl);
	if (inj >= 2 * SHM_INJECT_BUFS || inl >= 2 * SHM_CMD_SLOTS)
		fail("A's ring never filled (%d inject, %d inline)", inj, inl);
	/* Nobody received anything yet: nothing may have completed. */
	t0 = now() + 0.2;
	while (now() < t0)
		s_poll(&n);
	k = s_successes(ROLE_A, list, sizeof(list));
	if (k || nops - s_pending(ROLE_A, NULL, 0))
		DIE("%d operation(s) to A completed before A received "
		    "anything (success: %s)",
		    nops - s_pending(ROLE_A, NULL, 0), list);
	if (rx_killed) {
		kill(atomic_load(&sh->pid[ROLE_A]), SIGKILL);
	} else {
		flag_set(F_CLOSE);
		if (!wait_flag(F_CLOSED, 5))
			DIE("A did not close");
	}
	t0 = now();
	s_drain(&n, ROLE_A, ERR_TMO);
	k = s_pending(ROLE_A, list, sizeof(list));
	if (k)
		fail("%d of %d operations to the %s A still pending after "
		     "%d s: %s",
		     k, nops, rx_killed ? "killed" : "closed", ERR_TMO, list);
	else
		printf("  S: all failed within %.2f s\n", now() - t0);
	if (s_successes(ROLE_A, list, sizeof(list)))
		fail("completed with success though A received nothing: %s",
		     list);
	s_inject_to_b(&n);
	node_close(&n);
}

static void s_kill_rx_pending(void)
{
	rx_killed = true;
	s_close_rx_pending();
}

/* ------------------------------------------------------------------ */
/* 2. A slow or closed receiver must not hold up transfers to others.   */

static bool a_closes;

static void s_rx_no_block(void)
{
	static const int peers[] = {ROLE_A, ROLE_B};
	/* segmented below the 2 MiB threshold the parent set, CMA above */
	static const struct {
		const char *kind;
		size_t len;
	} to_b[] = {
		{"SAR-size 64 KiB to B", 64 << 10},
		{"SAR-size 1 MiB to B", 1 << 20},
		{"SAR-size 256 KiB to B", 256 << 10},
		{"CMA-size 4 MiB to B", 4 << 20},
		{"SAR-size 64 KiB to B", 64 << 10},
		{"SAR-size 96 KiB to B", 96 << 10},
		{"CMA-size 3 MiB to B", 3 << 20},
		{"SAR-size 1 MiB to B", 1 << 20},
	};
	const int nb = sizeof(to_b) / sizeof(to_b[0]);
	char list[400];
	struct node n;
	double t0;
	int i, k;

	s_open(&n, peers, 2);
	s_tsend(&n, ROLE_A, "SAR-size 1 MiB to A", 1 << 20);
	for (i = 0; i < 3; i++)
		s_tsend(&n, ROLE_A, "SAR-size 64 KiB to A", 64 << 10);
	if (a_closes) {
		flag_set(F_CLOSE);
		if (!wait_flag(F_CLOSED, 5))
			DIE("A did not close");
	}
	t0 = now();
	for (i = 0; i < nb; i++)
		s_tsend(&n, ROLE_B, to_b[i].kind, to_b[i].len);
	s_drain(&n, ROLE_B, FLOW_TMO);
	k = s_pending(ROLE_B, list, sizeof(list));
	if (k)
		fail("%d of %d sends to the live B still pending after %d s "
		     "behind the %s A: %s",
		     k, nb, FLOW_TMO, a_closes ? "closed" : "stalled", list);
	for (i = 0; i < nops; i++) {
		if (ops[i].to == ROLE_B && ops[i].done && ops[i].err)
			fail("%s failed: %s", ops[i].kind,
			     fi_strerror(ops[i].err));
	}
	if (!k)
		printf("  S: B's %d sends done in %.2f s\n", nb, now() - t0);
	while (atomic_load(&sh->count[ROLE_B]) < nb && now() < t0 + FLOW_TMO)
		usleep(1000);
	if (atomic_load(&sh->count[ROLE_B]) != nb)
		fail("B received %d of %d", atomic_load(&sh->count[ROLE_B]),
		     nb);
	if (a_closes)
		s_drain(&n, ROLE_A, ERR_TMO);
	else
		s_poll(&n);
	if (s_successes(ROLE_A, list, sizeof(list)))
		fail("completed with success though A received nothing: %s",
		     list);
	k = s_pending(ROLE_A, list, sizeof(list));
	if (a_closes && k)
		fail("%d sends to the closed A still pending after %d s: %s", k,
		     ERR_TMO, list);
	if (!a_closes && k != 4)
		fail("sends to the stalled (live) A completed: %d of 4 pending",
		     k);
	node_close(&n);
}

static void s_closed_rx_no_block(void)
{
	a_closes = true;
	s_rx_no_block();
}

/* ------------------------------------------------------------------ */
/* 3. A sender dies between claiming a ring slot and publishing it.      */

/* "fi_shm://X" lives in /dev/shm/ofi_shm_X, with '/' turned into '_'. */
static void region_path(const char *name, char *path, size_t len)
{
	const char *p = name;
	char *q;

	if (!strncmp(p, SHM_ADDR_PREFIX, strlen(SHM_ADDR_PREFIX)))
		p += strlen(SHM_ADDR_PREFIX);
	snprintf(path, len, "/dev/shm/ofi_shm_%s", p);
	for (q = path + strlen("/dev/shm/"); *q; q++) {
		if (*q == '/')
			*q = '_';
	}
}

/*
 * The only code that knows the provider's ring (prov/shm/shm.h): maps the
 * region of the endpoint @name, and claims one slot of its command ring
 * the way a sender does, never to publish it. Our slot in the region's
 * peer table (we sent to it before) is looked up for a protocol that
 * would want the claimer named. 0 once claimed.
 */
static int claim_unpublished(const char *name)
{
	char path[NAME_LEN + 32];
	struct shm_layout *m;
	struct shm_ring ring;
	struct stat st;
	uint64_t pos;
	uint32_t id;
	int fd;

	region_path(name, path, sizeof(path));
	fd = open(path, O_RDWR);
	if (fd < 0 || fstat(fd, &st)) {
		fail("open %s: %s", path, strerror(errno));
		return -1;
	}
	m = mmap(NULL, SHM_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	close(fd);
	if (m == MAP_FAILED || (size_t)st.st_size != SHM_REGION_SIZE ||
	    m->hdr.magic != SHM_MAGIC || m->hdr.version != SHM_VERSION) {
		fail("%s is no shm region of this version", path);
		return -1;
	}
	for (id = 0; id < SHM_MAX_PEERS; id++) {
		if (m->peers[id].pid == getpid())
			break;
	}
	if (id == SHM_MAX_PEERS)
		fail("our slot in %s not found", path);
	/* A sender's private view of the ring (shm_wire.h). */
	shm_ring_init(&ring, &m->cmd_ctl, m->cmd, SHM_CMD_SLOTS,
		      sizeof(struct shm_cmd));
	if (!shm_ring_claim(&ring, &pos)) {
		fail("command ring of %s full", path);
		return -1;
	}
	printf("  X: claimed slot %llu of %s (peer id %u), dying\n",
	       (unsigned long long)pos, name, id);
	fflush(stdout);
	return 0;
}

/* X: a sender known to A that claims a slot and is SIGKILLed. */
static void dying_tx(void)
{
	static const int peers[] = {ROLE_A};
	struct node n;

	s_open(&n, peers, 1);
	s_tsend(&n, ROLE_A, "hello", 8);
	s_drain(&n, ROLE_A, 5);
	if (s_pending(ROLE_A, NULL, 0) || ops[0].err)
		DIE("hello to A failed");
	while (atomic_load(&sh->count[ROLE_A]) < 1)
		usleep(500); /* A consumed it: X is a peer it knows */
	if (claim_unpublished(sh->names[ROLE_A]))
		_exit(1);
	flag_set(F_CLAIMED);
	raise(SIGKILL);
}

/* A: receives what X and S send until finish. */
static void publish_rx(void)
{
	struct node n;

	node_start(&n);
	rx_loop(&n, 4096);
	node_close(&n);
}

#define DEAD_MSGS 100

/* S: after X died, 100 small messages to A; all must arrive. */
static void s_dead_publish(void)
{
	static const int peers[] = {ROLE_A};
	struct node n;
	double t0;
	int i, got;

	s_open(&n, peers, 1);
	t0 = now();
	for (i = 0; i < DEAD_MSGS; i++)
		s_tsend(&n, ROLE_A, i % 2 ? "8 B" : "2 KiB", i % 2 ? 8 : 2048);
	flag_set(F_SENT);
	s_drain(&n, ROLE_A, FLOW_TMO);
	if (s_pending(ROLE_A, NULL, 0))
		fail("%d sends not completed", s_pending(ROLE_A, NULL, 0));
	while (atomic_load(&sh->count[ROLE_A]) < DEAD_MSGS + 1 &&
	       now() < t0 + FLOW_TMO)
		usleep(1000);
	got = atomic_load(&sh->count[ROLE_A]) - 1;
	if (got != DEAD_MSGS)
		fail("A received %d of %d messages in %d s after a sender "
		     "died holding an unpublished slot of its ring",
		     got, DEAD_MSGS, FLOW_TMO);
	else
		printf("  S: A received all %d in %.2f s\n", DEAD_MSGS,
		       now() - t0);
	node_close(&n);
}

/* ------------------------------------------------------------------ */
/* Parent.                                                               */

static pid_t spawn(int r, void (*fn)(void))
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (!pid) {
		role = r;
		fails = 0;
		alarm(CHILD_TMO);
		fn();
		_exit(fails ? 1 : 0);
	}
	atomic_store(&sh->pid[r], pid);
	return pid;
}

/* Reaps @pid within @tmo s (killing it after); false if it failed. */
static bool reap(int r, double tmo, bool killed_ok)
{
	pid_t pid = atomic_load(&sh->pid[r]);
	double end = now() + tmo;
	int st;

	if (!pid)
		return true;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail("%s hung: killed", role_name[r]);
			return false;
		}
		usleep(2000);
	}
	atomic_store(&sh->pid[r], 0);
	if (WIFSIGNALED(st) && !(killed_ok && WTERMSIG(st) == SIGKILL)) {
		fail("%s died of signal %d%s", role_name[r], WTERMSIG(st),
		     WTERMSIG(st) == SIGALRM ? " (alarm: hang)" : "");
		return false;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st)) {
		if (!fails && !atomic_load(&sh->why_taken))
			fail("%s exited %d", role_name[r], WEXITSTATUS(st));
		return false;
	}
	return true;
}

/* Waits for the sender, then lets everyone go and reaps them all. */
static void finish(bool a_may_be_killed)
{
	int r;

	reap(ROLE_S, CASE_TMO, false);
	flag_set(F_FINISH);
	for (r = 0; r < NROLES; r++)
		reap(r, 5, r == ROLE_A && a_may_be_killed);
}

static void run_close_rx_pending(void)
{
	setenv("FI_SHM_CMA_THRESHOLD", "131072", 1);
	spawn(ROLE_A, idle_rx_close);
	spawn(ROLE_B, live_rx);
	spawn(ROLE_S, s_close_rx_pending);
	finish(false);
}

static void run_kill_rx_pending(void)
{
	setenv("FI_SHM_CMA_THRESHOLD", "131072", 1);
	spawn(ROLE_A, idle_rx_stay);
	spawn(ROLE_B, live_rx);
	spawn(ROLE_S, s_kill_rx_pending);
	finish(true);
}

static void run_rx_no_block(void (*s)(void), void (*a)(void))
{
	setenv("FI_SHM_CMA_THRESHOLD", "2097152", 1);
	flag_set(F_B_GO);
	spawn(ROLE_A, a);
	spawn(ROLE_B, live_rx);
	spawn(ROLE_S, s);
	finish(false);
}

static void run_slow_rx_no_block(void)
{
	run_rx_no_block(s_rx_no_block, idle_rx_stay);
}

static void run_closed_rx_no_block(void)
{
	run_rx_no_block(s_closed_rx_no_block, idle_rx_close);
}

static void run_dead_publish(void)
{
	spawn(ROLE_A, publish_rx);
	spawn(ROLE_X, dying_tx);
	if (!reap(ROLE_X, 10, true) || !flag_is(F_CLAIMED)) {
		fail("X did not claim a slot and die");
		flag_set(F_FINISH);
		reap(ROLE_A, 5, false);
		return;
	}
	spawn(ROLE_S, s_dead_publish);
	finish(false);
}

static const struct {
	const char *name;
	void (*run)(void);
} cases[] = {
	{"close_rx_pending", run_close_rx_pending},
	{"kill_rx_pending", run_kill_rx_pending},
	{"slow_rx_no_block", run_slow_rx_no_block},
	{"closed_rx_no_block", run_closed_rx_no_block},
	{"dead_publish", run_dead_publish},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static int run(size_t i)
{
	double t0 = now();

	memset(sh, 0, sizeof(*sh));
	memset(amem, 0, MR_SIZE);
	pat_fill(amem + RD_OFF, 64 << 10);
	pat_fill(amem + RD_OFF + (64 << 10), 256 << 10);
	fails = 0;
	printf("== %s\n", cases[i].name);
	fflush(stdout);
	cases[i].run();
	if (atomic_load(&sh->why_taken))
		printf("FAIL %s: %s\n", cases[i].name, sh->why);
	else
		printf("PASS %s (%.1f s)\n", cases[i].name, now() - t0);
	fflush(stdout);
	return atomic_load(&sh->why_taken) ? 1 : 0;
}

int main(int argc, char **argv)
{
	int a, failed = 0;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	amem = mmap(NULL, MR_SIZE, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || amem == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (!cma_works())
		printf("note: CMA refused here: CMA-sized transfers stream\n");
	/* A, an RMA target, must stay idle until it closes: no thread of
	 * the provider's may serve it meanwhile (fabric(7)). */
	setenv("FI_PROGRESS_TARGET", "0", 1);
	for (a = 1; a < argc; a++) {
		for (i = 0; i < NCASES && strcmp(argv[a], cases[i].name); i++)
			;
		if (i == NCASES) {
			fprintf(stderr, "unknown case %s\n", argv[a]);
			return 2;
		}
		failed += run(i);
	}
	for (i = 0; argc == 1 && i < NCASES; i++)
		failed += run(i);
	return failed ? 1 : 0;
}
