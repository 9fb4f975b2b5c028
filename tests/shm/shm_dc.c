/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_dc.c - FI_DELIVERY_COMPLETE on the shm message path, across two
 * processes: a delivery-complete send (per-op flag on fi_tsendmsg, or the
 * endpoint default from tx_attr->op_flags with fi_send, inline and inject
 * sizes) completes only once the receiver processed it; a send without
 * the flag completes at once; a receiver killed before processing fails
 * the waiting send with FI_EIO.
 *
 * The rule checked is fi_cq(3)'s: delivery complete means the target
 * processed the message - placed in the posted buffer if there was one,
 * otherwise buffered by the provider for a later receive. So:
 *  - a receiver that does not touch its endpoint before posting makes the
 *    completion follow the post (the "posted" flag is set when it comes);
 *  - a receiver that progresses with no buffer posted lets it complete
 *    while still nothing is posted.
 *
 * Run by tests/shm/shm_dc.sh, and by tests/tcp/tcp_features.sh with the
 * provider as first argument (default shm; only shm must name a dead
 * receiver FI_EIO, others may name the cause). Exit 0 when all pass.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "shm_check.h"

#define NAME_LEN 64
#define DELAY_MS 300
#define INJ_SIZE 1000 /* above the inline limit, within inject */

/* Shared between the two processes (MAP_SHARED before fork). */
struct shared {
	char name[NAME_LEN];
	_Atomic int ready;
	_Atomic int sent;	 /* round the sender posted */
	_Atomic int mode;	 /* round kind, see rx_round() */
	_Atomic int progressing; /* receiver started to progress */
	_Atomic int posted;	 /* receiver posted its buffer */
	_Atomic int received;	 /* receiver has the data, checked */
	_Atomic int rx_fail;
};

enum { MODE_POST_LATE = 1, MODE_UNEXPECTED, MODE_QUIT };

static const char *prov = "shm"; /* the first argument: tcp too */

struct node {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
};

static struct shared *sh;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int node_open(struct node *n, uint64_t tx_op_flags)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	int ret;

	hints->caps = FI_MSG | FI_TAGGED;
	hints->ep_attr->type = FI_EP_RDM;
	hints->tx_attr->op_flags = tx_op_flags;
	hints->fabric_attr->prov_name = strdup(prov);
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
	       fi_ep_bind(n->ep, &n->av->fid, 0) ?:
	       fi_enable(n->ep);
}

static void node_close(struct node *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->cq->fid);
	fi_close(&n->av->fid);
	fi_close(&n->dom->fid);
	fi_close(&n->fab->fid);
	fi_freeinfo(n->info);
}

static int wait_flag(_Atomic int *f, int want)
{
	double end = now_ms() + 20000;

	while (atomic_load(f) != want) {
		if (now_ms() > end)
			return -1;
		usleep(100);
	}
	return 0;
}

/* One CQ entry or error within @ms; -FI_EAGAIN when none came. */
static ssize_t poll_cq(struct fid_cq *cq, int ms, struct fi_cq_tagged_entry *e,
		       struct fi_cq_err_entry *err)
{
	struct fi_cq_tagged_entry dummy;
	double end = now_ms() + ms;
	ssize_t ret;

	do {
		ret = fi_cq_read(cq, e ? e : &dummy, 1);
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(cq, err, 0);
			return -FI_EAVAIL;
		}
		if (ret != -FI_EAGAIN)
			return ret;
	} while (now_ms() < end);
	return -FI_EAGAIN;
}

/* ------------------------------------------------------------------ */
/* Receiver (child).                                                    */

static void fill(char *b, size_t n, int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (char)(i * 13 + seed);
}

/*
 * MODE_POST_LATE: no libfabric call for DELAY_MS after the send, then post
 * and only then progress. MODE_UNEXPECTED: progress for twice that with
 * nothing posted, then post.
 */
static int rx_round(struct node *n, int round, bool tagged, size_t len)
{
	static char buf[INJ_SIZE], want[INJ_SIZE];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	double end;
	ssize_t ret;

	if (wait_flag(&sh->sent, round))
		return -1;
	if (atomic_load(&sh->mode) == MODE_UNEXPECTED) {
		atomic_store(&sh->progressing, round);
		end = now_ms() + 2 * DELAY_MS;
		while (now_ms() < end)
			fi_cq_read(n->cq, NULL, 0);
	} else {
		sleep_ms(DELAY_MS);
	}
	memset(buf, 0, sizeof(buf));
	ret = tagged ? fi_trecv(n->ep, buf, len, NULL, FI_ADDR_UNSPEC, 7, 0,
				buf)
		     : fi_recv(n->ep, buf, len, NULL, FI_ADDR_UNSPEC, buf);
	if (ret)
		return -1;
	atomic_store(&sh->posted, round);
	atomic_store(&sh->progressing, round);
	if (poll_cq(n->cq, 10000, &e, &err) != 1 || e.op_context != buf ||
	    e.len > len)
		return -1;
	fill(want, e.len, round);
	if (memcmp(buf, want, e.len))
		return -1;
	atomic_store(&sh->received, round);
	return 0;
}

static int receiver(void)
{
	struct node n;
	size_t len = NAME_LEN;
	int round;

	alarm(60);
	if (node_open(&n, 0) || fi_getname(&n.ep->fid, sh->name, &len))
		return 1;
	atomic_store(&sh->ready, 1);
	for (round = 1;; round++) {
		if (wait_flag(&sh->sent, round) ||
		    atomic_load(&sh->mode) == MODE_QUIT)
			break;
		/* round parity picks tagged, the sender knows the sizes */
		if (rx_round(&n, round, round % 2, INJ_SIZE)) {
			atomic_store(&sh->rx_fail, round);
			break;
		}
	}
	node_close(&n);
	return 0;
}

/* A receiver that never looks at its endpoint until it is killed. */
static int idle_receiver(void)
{
	struct node n;
	size_t len = NAME_LEN;

	alarm(60);
	if (node_open(&n, 0) || fi_getname(&n.ep->fid, sh->name, &len))
		return 1;
	atomic_store(&sh->ready, 1);
	pause();
	return 0;
}

static pid_t spawn(int (*fn)(void))
{
	pid_t pid;

	atomic_store(&sh->ready, 0);
	pid = fork();
	if (!pid)
		_exit(fn());
	if (pid > 0 && wait_flag(&sh->ready, 1)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

/* ------------------------------------------------------------------ */
/* Sender (parent).                                                     */

/* wait_flag, progressing @cq meanwhile. */
static int wait_flag_cq(_Atomic int *f, int want, struct fid_cq *cq)
{
	double end = now_ms() + 20000;

	while (atomic_load(f) != want) {
		if (now_ms() > end)
			return -1;
		fi_cq_read(cq, NULL, 0);
		usleep(100);
	}
	return 0;
}

struct tx_case {
	const char *what;
	struct node *n;
	bool sendmsg; /* fi_tsendmsg with FI_DELIVERY_COMPLETE */
	size_t len;
	int mode;
	bool dc; /* completion must wait for the receiver */
};

static ssize_t tx_post(const struct tx_case *c, fi_addr_t to, int round,
		       char *buf)
{
	struct iovec iov = {buf, c->len};
	struct fi_msg_tagged m = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = to,
		.tag = 7,
		.context = buf,
	};
	bool tagged = round % 2;

	if (c->sendmsg && tagged)
		return fi_tsendmsg(c->n->ep, &m, FI_DELIVERY_COMPLETE);
	if (c->sendmsg)
		return fi_sendmsg(c->n->ep, (struct fi_msg *)&m,
				  FI_DELIVERY_COMPLETE);
	if (tagged)
		return fi_tsend(c->n->ep, buf, c->len, NULL, to, 7, buf);
	return fi_send(c->n->ep, buf, c->len, NULL, to, buf);
}

static void tx_round(const struct tx_case *c, fi_addr_t to, int round)
{
	static char buf[INJ_SIZE];
	struct fi_cq_err_entry err;
	int posted, progressing;
	double t0, dt;
	ssize_t ret;

	fill(buf, c->len, round);
	atomic_store(&sh->mode, c->mode);
	t0 = now_ms();
	CHECK(!tx_post(c, to, round, buf), "%s: post", c->what);
	atomic_store(&sh->sent, round);
	ret = poll_cq(c->n->cq, 10000, NULL, &err);
	posted = atomic_load(&sh->posted);
	progressing = atomic_load(&sh->progressing);
	dt = now_ms() - t0;
	CHECK(ret == 1, "%s: completion %zd (err %d)", c->what, ret, err.err);
	if (!c->dc) {
		CHECK(posted != round && dt < DELAY_MS,
		      "%s: waited for the receiver (%.0f ms)", c->what, dt);
	} else if (c->mode == MODE_POST_LATE) {
		/* The receiver processed nothing before posting. */
		CHECK(posted == round && dt >= DELAY_MS - 50,
		      "%s: completed before the receive was posted (%.0f ms)",
		      c->what, dt);
	} else {
		/* Buffered as unexpected: delivered per fi_cq(3). */
		CHECK(progressing == round,
		      "%s: completed before the receiver progressed", c->what);
		CHECK(posted != round,
		      "%s: unexpected message not completed on buffering",
		      c->what);
	}
	/* Manual progress: a provider may need the sender's too (tcp:
	 * the connection is made while the receiver is not looking). */
	CHECK(!wait_flag_cq(&sh->received, round, c->n->cq) &&
		      !atomic_load(&sh->rx_fail),
	      "%s: receiver did not get the data (round %d)", c->what, round);
}

static void t_live(struct node *plain, struct node *dflt)
{
	const struct tx_case cases[] = {
		{"plain inline", plain, false, 8, MODE_POST_LATE, false},
		{"plain inject", plain, false, INJ_SIZE, MODE_POST_LATE, false},
		{"per-op inline", plain, true, 8, MODE_POST_LATE, true},
		{"per-op inline", plain, true, 8, MODE_POST_LATE, true},
		{"per-op inject", plain, true, INJ_SIZE, MODE_POST_LATE, true},
		{"default inline", dflt, false, 8, MODE_POST_LATE, true},
		{"default inject", dflt, false, INJ_SIZE, MODE_POST_LATE, true},
		{"default inline", dflt, false, 8, MODE_POST_LATE, true},
		{"default sendmsg", dflt, true, 8, MODE_POST_LATE, true},
		{"unexpected inline", dflt, false, 8, MODE_UNEXPECTED, true},
		{"unexpected inject", plain, true, INJ_SIZE, MODE_UNEXPECTED,
		 true},
	};
	fi_addr_t a[2];
	size_t i;
	pid_t pid;
	int st, fails = failures;

	atomic_store(&sh->sent, 0);
	pid = spawn(receiver);
	CHECK(pid > 0, "receiver start");
	CHECK(fi_av_insert(plain->av, sh->name, 1, &a[0], 0, NULL) == 1 &&
		      fi_av_insert(dflt->av, sh->name, 1, &a[1], 0, NULL) == 1,
	      "av insert");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]) && fails == failures;
	     i++)
		tx_round(&cases[i], a[cases[i].n == dflt], (int)i + 1);
	atomic_store(&sh->mode, MODE_QUIT);
	atomic_store(&sh->sent, (int)i + 1);
	if (fails != failures)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "receiver exit %x", st);
}

static void t_dead_receiver(struct node *dflt)
{
	static char s8[8], sinj[INJ_SIZE];
	struct fi_cq_err_entry err;
	fi_addr_t a;
	ssize_t ret;
	pid_t pid;
	int i;

	pid = spawn(idle_receiver);
	CHECK(pid > 0, "idle receiver start");
	CHECK(fi_av_insert(dflt->av, sh->name, 1, &a, 0, NULL) == 1, "insert");
	CHECK(!fi_send(dflt->ep, s8, sizeof(s8), NULL, a, s8), "send");
	CHECK(!fi_send(dflt->ep, sinj, sizeof(sinj), NULL, a, sinj), "send");
	ret = poll_cq(dflt->cq, DELAY_MS, NULL, &err);
	CHECK(ret == -FI_EAGAIN, "completed with nobody receiving: %zd", ret);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (i = 0; i < 2; i++) {
		ret = poll_cq(dflt->cq, 10000, NULL, &err);
		CHECK(ret == -FI_EAVAIL &&
			      (strcmp(prov, "shm") ? err.err > 0
						   : err.err == FI_EIO),
		      "dead receiver: %zd err %d", ret, err.err);
		CHECK(err.op_context == s8 || err.op_context == sinj,
		      "error context");
	}
}

int main(int argc, char **argv)
{
	struct node plain, dflt;
	int ret;

	if (argc > 1)
		prov = argv[1];
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	ret = node_open(&plain, 0) ?: node_open(&dflt, FI_DELIVERY_COMPLETE);
	if (ret) {
		fprintf(stderr, "setup: %s\n", fi_strerror(-ret));
		return 1;
	}
	if (!(dflt.info->tx_attr->op_flags & FI_DELIVERY_COMPLETE)) {
		fprintf(stderr, "getinfo dropped FI_DELIVERY_COMPLETE\n");
		return 1;
	}
	t_live(&plain, &dflt);
	t_dead_receiver(&dflt);
	node_close(&plain);
	node_close(&dflt);
	printf("%s: %d failures\n", argv[0], failures);
	return failures ? 1 : 0;
}
