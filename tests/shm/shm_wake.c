/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_wake.c - a reader asleep on an shm endpoint wakes when its peer
 * sends, not when a nap ends: a receiver sleeps in
 * fi_cq_sread (timeout 10 s), or in epoll on the CQ's FI_GETWAIT fd after
 * fi_trywait, or in fi_cntr_wait, or (argv[2] "polled") in fi_cq_sread
 * while another thread of it polls the endpoint a while; its peer
 * (another process) sends an 8 B message carrying the CLOCK_MONOTONIC
 * time just before the send, 300 ms after the receiver said it was going
 * to sleep. The receiver's latency, from that time to its wakeup, must
 * have a median under LIMIT_MS over ROUNDS rounds: a reader that only
 * wakes when a nap ends (a lost poke: OFI_EP_POLL_LONG_MS, 1 s) takes
 * about 700 ms. And the times it slept meanwhile (voluntary context
 * switches) must have a median of at most MAX_SLEEPS: a reader that naps
 * (1 ms in blocking reads, 10 ms in epoll, as before wake sockets) wakes
 * 30-300 times. Each mode runs with the processes on any CPUs, then both
 * on one CPU. The receiver spins on its CQ before each sleep (SPIN_POLLS
 * empty reads), as a busy poller would. Over the provider of argv[1]
 * (shm, tcp over TCP or its same-host path, sockets). With argv[2]
 * "set-fd" or "set-mc" the CQ is bound to a user wait set of that kind
 * (fi_wait_open) and the receiver sleeps in fi_wait on the set instead
 * (naps of 1 ms before). Exits 0 when every mode met its bound, 1
 * otherwise, 77 without the provider.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "test_proc.h"

#define ROUNDS	   5
#define DELAY_US   300000
#define LIMIT_MS   150.0
#define MAX_SLEEPS 10
#define SPIN_POLLS 200
#define ADDR_MAX   256
#define LOOP	   "127.0.0.1"

enum mode { M_SREAD, M_EPOLL, M_CNTR, M_POLLED, M_WAIT, M_COUNT };

static const char *const mode_name[M_COUNT] = {
	[M_SREAD] = "fi_cq_sread",
	[M_EPOLL] = "fi_trywait + epoll",
	[M_CNTR] = "fi_cntr_wait",
	[M_POLLED] = "fi_cq_sread, another thread polling",
	[M_WAIT] = "fi_wait",
};

/*
 * M_POLLED (argv[2] "polled"): while the receiver sleeps, a second thread
 * of it polls the endpoint (fi_cntr_read) for POLL_MS, then stops, before
 * the send: its polls may take the connection out of the sockets' epoll
 * set the sleeper armed (util_sock's quiet), which must wake the sleeper
 * to arm again; over shm, its polls must not take the sleeper's marks
 * away unannounced (shm_wake_progress). Its sleeps are not bounded (the
 * poller's yields count).
 */
#define POLL_MS 40

struct node {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_wait *set;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t peer;
	int cq_fd;
	uint64_t buf[2];
};

static const char *prov;
static bool inet;   /* tcp or sockets */
static bool polled; /* M_POLLED too (argv[2] "polled") */
/* FI_WAIT_NONE: the CQ waits on an fd; else on a wait set of this kind. */
static enum fi_wait_obj set_obj = FI_WAIT_NONE;

/* The CQ waits on an fd (FI_GETWAIT) or a wait set, the counter on
 * anything. */
static int node_open(struct node *n, char *name, size_t *namelen)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .wait_obj = FI_WAIT_FD};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_UNSPEC};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_wait_attr set_attr = {.wait_obj = set_obj};
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->fabric_attr->prov_name = strdup(prov);
	if (inet)
		hints->addr_format = FI_SOCKADDR_IN;
	/* Loopback: an interface another test adds or moves meanwhile
	 * (tests/tcp/netns.sh) is never ours. */
	ret = fi_getinfo(FI_VERSION(1, 17), inet ? LOOP : NULL, NULL,
			 inet ? FI_SOURCE : 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(info->fabric_attr, &n->fabric, NULL);
	if (!ret && set_obj != FI_WAIT_NONE) {
		ret = fi_wait_open(n->fabric, &set_attr, &n->set);
		cq_attr.wait_obj = FI_WAIT_SET;
		cq_attr.wait_set = n->set;
	}
	ret = ret ?: fi_domain(n->fabric, info, &n->domain, NULL) ?:
	      fi_cq_open(n->domain, &cq_attr, &n->cq, NULL) ?:
	      fi_cntr_open(n->domain, &cntr_attr, &n->cntr, NULL) ?:
	      fi_av_open(n->domain, &av_attr, &n->av, NULL) ?:
	      fi_endpoint(n->domain, info, &n->ep, NULL) ?:
	      fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ?:
	      fi_ep_bind(n->ep, &n->cntr->fid, FI_RECV) ?:
	      fi_ep_bind(n->ep, &n->av->fid, 0) ?: fi_enable(n->ep) ?:
	      (n->set ? 0 : fi_control(&n->cq->fid, FI_GETWAIT, &n->cq_fd));
	fi_freeinfo(info);
	return ret ? ret : fi_getname(&n->ep->fid, name, namelen);
}

static void node_close(struct node *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->av->fid);
	fi_close(&n->cntr->fid);
	fi_close(&n->cq->fid);
	if (n->set)
		fi_close(&n->set->fid);
	fi_close(&n->domain->fid);
	fi_close(&n->fabric->fid);
}

static void xfer(int fd, void *buf, size_t len, bool out)
{
	ssize_t r = out ? write(fd, buf, len) : read(fd, buf, len);

	if (r != (ssize_t)len)
		die("pipe", -FI_EIO);
}

static void connect_peer(struct node *n, int in, int out, char *name,
			 size_t len)
{
	char peer[ADDR_MAX];
	size_t plen;

	xfer(out, &len, sizeof(len), true);
	xfer(out, name, len, true);
	xfer(in, &plen, sizeof(plen), false);
	if (plen > ADDR_MAX)
		die("name exchange", -FI_EIO);
	xfer(in, peer, plen, false);
	if (fi_av_insert(n->av, peer, 1, &n->peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
}

static void check_comp(struct node *n, ssize_t ret, const char *what)
{
	struct fi_cq_err_entry err = {0};

	if (ret == 1)
		return;
	if (ret == -FI_EAVAIL)
		fi_cq_readerr(n->cq, &err, 0);
	die(what, ret == -FI_EAVAIL ? -err.err : (int)ret);
}

/* Sleeps on the CQ's fd until the message is there (fi_cq(3) rules). */
static void wait_epoll(struct node *n, struct fi_cq_tagged_entry *e)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct fid *fids[1] = {&n->cq->fid};
	int ep = epoll_create1(0);
	ssize_t ret;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, n->cq_fd, &ev))
		die("epoll", -FI_EIO);
	for (;;) {
		ret = fi_cq_read(n->cq, e, 1);
		if (ret != -FI_EAGAIN)
			break;
		if (fi_trywait(n->fabric, fids, 1) == FI_SUCCESS &&
		    epoll_wait(ep, &ev, 1, 10000) == 0)
			die("epoll_wait", -FI_ETIMEDOUT);
	}
	close(ep);
	check_comp(n, ret, "fi_cq_read");
}

/* Sleeps in fi_wait on the CQ's wait set until the message is there. */
static void wait_set(struct node *n, struct fi_cq_tagged_entry *e)
{
	ssize_t ret;
	int w;

	while ((ret = fi_cq_read(n->cq, e, 1)) == -FI_EAGAIN) {
		w = fi_wait(n->set, 10000);
		if (w)
			die("fi_wait", w);
	}
	check_comp(n, ret, "fi_cq_read");
}

/* Times this process slept (voluntary context switches). */
static long sleeps(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw;
}

static void *poll_thread(void *arg)
{
	struct node *n = arg;
	double end;

	usleep(5000); /* the receiver sleeps by then */
	end = now_ms() + POLL_MS;
	while (now_ms() < end)
		(void)fi_cntr_read(n->cntr);
	return NULL;
}

/*
 * One receive, slept for by @mode: ms from the peer's send to waking;
 * *@slept: the times it slept meanwhile.
 */
static double receive(struct node *n, enum mode mode, int out, uint64_t r,
		      long *slept)
{
	struct fi_cq_tagged_entry e;
	uint64_t cnt = fi_cntr_read(n->cntr);
	double sent, woke;
	pthread_t poller;
	ssize_t ret;
	int i;

	ret = fi_trecv(n->ep, n->buf, sizeof(n->buf[0]), NULL, FI_ADDR_UNSPEC,
		       r, 0, n->buf);
	if (ret)
		die("fi_trecv", (int)ret);
	/* Spun first, as a busy poller would: a socket provider's lone
	 * connection may leave its epoll set (util_sock's quiet), which
	 * the sleep must put back. */
	for (i = 0; i < SPIN_POLLS; i++)
		if (fi_cq_read(n->cq, &e, 1) != -FI_EAGAIN)
			die("fi_cq_read before the send", -FI_EOTHER);
	xfer(out, &r, sizeof(r), true); /* going to sleep */
	*slept = sleeps();
	if (mode == M_SREAD) {
		check_comp(n, fi_cq_sread(n->cq, &e, 1, NULL, 10000),
			   "fi_cq_sread");
	} else if (mode == M_POLLED) {
		if (pthread_create(&poller, NULL, poll_thread, n))
			die("pthread_create", -FI_EOTHER);
		check_comp(n, fi_cq_sread(n->cq, &e, 1, NULL, 10000),
			   "fi_cq_sread");
		pthread_join(poller, NULL);
	} else if (mode == M_EPOLL) {
		wait_epoll(n, &e);
	} else if (mode == M_WAIT) {
		wait_set(n, &e);
	} else {
		ret = fi_cntr_wait(n->cntr, cnt + 1, 10000);
		if (ret)
			die("fi_cntr_wait", (int)ret);
	}
	woke = now_ms();
	*slept = sleeps() - *slept;
	if (mode == M_CNTR)
		check_comp(n, fi_cq_read(n->cq, &e, 1), "fi_cq_read");
	xfer(out, &r, sizeof(r), true); /* received */
	memcpy(&sent, n->buf, sizeof(sent));
	return woke - sent;
}

/*
 * The send of round @r, DELAY_US after the receiver went to sleep; then
 * progress until it says it has the message (manual progress: a send
 * over TCP may complete before its connection is made).
 */
static void send_one(struct node *n, int in)
{
	struct pollfd pfd = {.fd = in, .events = POLLIN};
	struct fi_cq_tagged_entry e;
	uint64_t r;
	double t;
	ssize_t ret;

	xfer(in, &r, sizeof(r), false);
	usleep(DELAY_US);
	t = now_ms();
	memcpy(&n->buf[1], &t, sizeof(t));
	while ((ret = fi_tsend(n->ep, &n->buf[1], sizeof(n->buf[1]), NULL,
			       n->peer, r, NULL)) == -FI_EAGAIN)
		(void)fi_cq_read(n->cq, &e, 1);
	if (ret)
		die("fi_tsend", (int)ret);
	while ((ret = fi_cq_read(n->cq, &e, 1)) == -FI_EAGAIN)
		;
	check_comp(n, ret, "send completion");
	while (poll(&pfd, 1, 0) == 0)
		if ((ret = fi_cq_read(n->cq, &e, 1)) != -FI_EAGAIN)
			check_comp(n, ret, "fi_cq_read");
	xfer(in, &r, sizeof(r), false);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* The modes of this run: fi_wait alone with a wait set; M_POLLED when
 * asked. */
static bool mode_on(enum mode m)
{
	if (set_obj != FI_WAIT_NONE)
		return m == M_WAIT;
	return m == M_POLLED ? polled : m != M_WAIT;
}

/* The receiver's part: every mode, ROUNDS rounds each; 1 if over. */
static int serve(struct node *n, int out, const char *where)
{
	double lat[ROUNDS];
	long slept[ROUNDS];
	uint64_t r = 0;
	int m, i, fail = 0;

	for (m = 0; m < M_COUNT; m++) {
		if (!mode_on(m))
			continue;
		for (i = 0; i < ROUNDS; i++)
			lat[i] = receive(n, m, out, r++, &slept[i]);
		qsort(lat, ROUNDS, sizeof(lat[0]), cmp);
		qsort(slept, ROUNDS, sizeof(slept[0]), cmp_long);
		printf("%s: %s%s (%s): woke %.2f ms after the send (median, "
		       "max %.2f, limit %.0f), slept %ld times (median, max "
		       "%ld, limit %d)\n",
		       prov, mode_name[m],
		       set_obj == FI_WAIT_FD	       ? " FI_WAIT_FD"
		       : set_obj == FI_WAIT_MUTEX_COND ? " FI_WAIT_MUTEX_COND"
						       : "",
		       where, lat[ROUNDS / 2], lat[ROUNDS - 1], LIMIT_MS,
		       slept[ROUNDS / 2], slept[ROUNDS - 1], MAX_SLEEPS);
		fail |= lat[ROUNDS / 2] > LIMIT_MS ||
			(m != M_POLLED && slept[ROUNDS / 2] > MAX_SLEEPS);
	}
	return fail;
}

/* One run (@pin: both on one CPU): the child receives, the parent sends. */
static int run(bool pin)
{
	int to_c[2], to_s[2], status, fail = 0, m, i;
	char name[ADDR_MAX];
	size_t len = sizeof(name);
	struct node n = {0};
	pid_t pid;

	if (pin && pin_one_cpu() < 0)
		die("sched_setaffinity", -FI_EINVAL);
	if (pipe(to_c) || pipe(to_s))
		die("pipe", -FI_EIO);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork", -FI_EIO);
	if (node_open(&n, name, &len))
		die("open", -FI_EIO);
	if (!pid) {
		connect_peer(&n, to_c[0], to_s[1], name, len);
		fail = serve(&n, to_s[1], pin ? "one CPU" : "any CPUs");
		node_close(&n);
		fflush(stdout);
		_exit(fail);
	}
	connect_peer(&n, to_s[0], to_c[1], name, len);
	for (m = 0; m < M_COUNT; m++)
		for (i = 0; mode_on(m) && i < ROUNDS; i++)
			send_one(&n, to_s[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		fail = 1;
	node_close(&n);
	close(to_c[0]);
	close(to_c[1]);
	close(to_s[0]);
	close(to_s[1]);
	return fail;
}

int main(int argc, char **argv)
{
	struct fi_info *hints, *info = NULL;
	int fail;

	prov = argc > 1 ? argv[1] : "shm";
	inet = !strcmp(prov, "tcp") || !strcmp(prov, "sockets");
	if (argc > 2 && !strcmp(argv[2], "polled"))
		polled = true;
	else if (argc > 2)
		set_obj = !strcmp(argv[2], "set-fd") ? FI_WAIT_FD
						     : FI_WAIT_MUTEX_COND;
	hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info)) {
		fi_freeinfo(hints);
		return 77;
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
	fail = run(false);
	fail |= run(true);
	printf("%s\n", fail ? "FAIL" : "PASS");
	return fail;
}
