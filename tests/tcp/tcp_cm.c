/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_cm.c - connection management of the tcp provider's FI_EP_MSG
 * endpoints, over loopback: a passive endpoint, connect/accept with data
 * both ways (then messages, tagged, RMA and an atomic over the one
 * connection; the acceptor's FI_CONNECTED read blocking into a bare
 * struct fi_eq_cm_entry), reject with data (fi_eq_readerr:
 * FI_ECONNREFUSED and the data), FI_OPT_CM_DATA_SIZE bytes of data each
 * way, fi_shutdown (FI_SHUTDOWN on both sides, once; the side's own posted
 * receive canceled, the peer's left posted until fi_cancel), a peer
 * SIGKILLed mid-transfer (FI_SHUTDOWN and the pending send failed within
 * 5 s; each receive failed, completed or still posted), a connect to a
 * port nobody listens on (error event), hostile handshakes to the
 * passive endpoint and from a fake acceptor (no event or an error event,
 * never a crash), and bad arguments (the man pages' error codes).
 *
 * One line per case; exit status 0 when every case passed.
 * TCP_CM_ONLY=name runs one case.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "tcp_wire.h"

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "  %s:%d: ", __func__, __LINE__);      \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			return -1;                                             \
		}                                                              \
	} while (0)

#define EVBUF (sizeof(struct fi_eq_cm_entry) + 512)

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

struct side {
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

struct listener {
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct sockaddr_storage ss; /* what fi_getname said */
	struct sockaddr_in name;    /* the same, for IPv4 cases */
};

/*
 * Every open EQ: a wait on one also peeks at the others, so that every
 * endpoint's connection work progresses (FI_PROGRESS_MANUAL) as it would
 * in separate processes each waiting on its own EQ.
 */
static struct fid_eq *eqs[16];

static void eq_track(struct fid_eq *eq, bool add)
{
	size_t i;

	for (i = 0; i < 16; i++) {
		if (add && !eqs[i]) {
			eqs[i] = eq;
			return;
		}
		if (!add && eqs[i] == eq)
			eqs[i] = NULL;
	}
}

static void eq_poke(struct fid_eq *self)
{
	uint8_t buf[EVBUF];
	uint32_t event;
	size_t i;

	for (i = 0; i < 16; i++)
		if (eqs[i] && eqs[i] != self)
			(void)fi_eq_read(eqs[i], &event, buf, sizeof(buf),
					 FI_PEEK);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int open_eq(struct fid_eq **eq)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC};
	int ret;

	ret = fi_eq_open(fabric, &attr, eq, NULL);
	if (!ret)
		eq_track(*eq, true);
	return ret;
}

static int listener_open(struct listener *l)
{
	size_t len = sizeof(l->ss);
	int ret;

	memset(l, 0, sizeof(*l));
	ret = open_eq(&l->eq);
	ret = ret ? ret : fi_passive_ep(fabric, info, &l->pep, NULL);
	ret = ret ? ret : fi_pep_bind(l->pep, &l->eq->fid, 0);
	ret = ret ? ret : fi_listen(l->pep);
	ret = ret ? ret : fi_getname(&l->pep->fid, &l->ss, &len);
	memcpy(&l->name, &l->ss, sizeof(l->name));
	return ret;
}

static void listener_close(struct listener *l)
{
	if (l->pep)
		fi_close(&l->pep->fid);
	if (l->eq) {
		eq_track(l->eq, false);
		fi_close(&l->eq->fid);
	}
}

/* An MSG endpoint with its EQ and CQ; @ci: a FI_CONNREQ's info or NULL. */
static int side_open(struct side *s, struct fi_info *ci)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .wait_obj = FI_WAIT_NONE};
	int ret;

	memset(s, 0, sizeof(*s));
	ret = open_eq(&s->eq);
	ret = ret ? ret : fi_cq_open(domain, &cq_attr, &s->cq, NULL);
	ret = ret ? ret : fi_endpoint(domain, ci ? ci : info, &s->ep, s);
	ret = ret ? ret : fi_ep_bind(s->ep, &s->eq->fid, 0);
	ret = ret ? ret : fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_enable(s->ep);
	return ret;
}

static void side_close(struct side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	if (s->eq) {
		eq_track(s->eq, false);
		fi_close(&s->eq->fid);
	}
}

/*
 * Reads @eq (and progresses @cqs) until an event or error comes or
 * @ms pass: the event, -FI_EAVAIL (error entry in *@err), -FI_EAGAIN.
 */
static int eq_wait(struct fid_eq *eq, void *buf, struct fi_eq_err_entry *err,
		   int ms, struct fid_cq *cq)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct fi_cq_tagged_entry c;
	uint32_t event;
	ssize_t n;

	do {
		n = fi_eq_read(eq, &event, buf, EVBUF, 0);
		if (n >= 0)
			return (int)event;
		if (n == -FI_EAVAIL) {
			if (err && fi_eq_readerr(eq, err, 0) != sizeof(*err))
				return -FI_EOTHER;
			return -FI_EAVAIL;
		}
		if (n != -FI_EAGAIN)
			return (int)n;
		if (cq)
			(void)fi_cq_read(cq, &c, 0);
		eq_poke(eq);
		usleep(1000);
	} while (now_ms() < end);
	return -FI_EAGAIN;
}

/* One CQ entry of @cq within @ms: 1, or -FI_EAVAIL with *@err, or <0. */
static int cq_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		   struct fi_cq_err_entry *err, int ms, struct fid_cq *other)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct fi_cq_tagged_entry x;
	ssize_t n;

	do {
		n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			return fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL
							      : -FI_EOTHER;
		}
		if (n != -FI_EAGAIN)
			return (int)n;
		if (other)
			(void)fi_cq_read(other, &x, 0);
	} while (now_ms() < end);
	return -FI_EAGAIN;
}

/*
 * Connects @c to @l with @cdata, accepts into @a with @adata, and checks
 * that every side saw the other's data. 0 or -1.
 */
static int connect_pair(struct listener *l, struct side *c, struct side *a,
			const char *cdata, const char *adata)
{
	uint8_t buf[EVBUF];
	struct fi_eq_cm_entry *e = (void *)buf, ae;
	uint32_t event = 0;
	ssize_t n;
	int ev;

	CHECK(!side_open(c, NULL), "connector open");
	CHECK(!fi_connect(c->ep, &l->ss, cdata, strlen(cdata)), "connect");
	ev = eq_wait(l->eq, buf, NULL, 5000, NULL);
	CHECK(ev == FI_CONNREQ, "no FI_CONNREQ (%d)", ev);
	CHECK(e->fid == &l->pep->fid && e->info && e->info->handle,
	      "CONNREQ entry");
	CHECK(!memcmp(e->data, cdata, strlen(cdata)), "CONNREQ data");
	CHECK(!side_open(a, e->info), "acceptor open");
	fi_freeinfo(e->info);
	CHECK(!fi_accept(a->ep, adata, strlen(adata)), "accept");
	ev = eq_wait(c->eq, buf, NULL, 5000, NULL);
	CHECK(ev == FI_CONNECTED, "connector: no FI_CONNECTED (%d)", ev);
	CHECK(e->fid == &c->ep->fid, "connector fid");
	CHECK(!memcmp(e->data, adata, strlen(adata)), "FI_CONNECTED data");
	/* The acceptor's event carries no data: an application reads it
	 * into a bare entry, blocking (main's alarm ends a hang). */
	memset(&ae, 0, sizeof(ae));
	n = fi_eq_sread(a->eq, &event, &ae, sizeof(ae), -1, 0);
	CHECK(n == (ssize_t)sizeof(ae) && event == FI_CONNECTED,
	      "acceptor: sread %zd event %u", n, event);
	CHECK(ae.fid == &a->ep->fid, "acceptor fid");
	return 0;
}

/* ------------------------------------------------------------------ */

static int c_connect_accept(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct listener l = {0};
	struct side c = {0}, a = {0};
	char in[64] = {0}, out[64] = "payload over msg";
	uint64_t tgt = 5, add = 37, key;
	struct sockaddr_in peer, me;
	struct fid_mr *mr = NULL;
	size_t len;
	int ret = -1;

	CHECK(!listener_open(&l), "listen");
	if (connect_pair(&l, &c, &a, "from connector", "from acceptor"))
		goto out;
	len = sizeof(peer);
	CHECK(!fi_getpeer(c.ep, &peer, &len) &&
		      peer.sin_port == l.name.sin_port,
	      "getpeer");
	len = sizeof(me);
	CHECK(!fi_getname(&a.ep->fid, &me, &len) && len == sizeof(me),
	      "getname");
	/* untagged, dest_addr ignored */
	CHECK(!fi_recv(a.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, in), "recv");
	CHECK(!fi_send(c.ep, out, sizeof(out), NULL, 12345, out), "send");
	CHECK(cq_wait(a.cq, &e, &err, 5000, c.cq) == 1 && e.op_context == in,
	      "recv completion");
	CHECK(!memcmp(in, out, sizeof(out)), "recv data");
	CHECK(cq_wait(c.cq, &e, &err, 5000, a.cq) == 1, "send completion");
	/* tagged, the other way */
	memset(in, 0, sizeof(in));
	CHECK(!fi_trecv(c.ep, in, sizeof(in), NULL, 0, 7, 0, in), "trecv");
	CHECK(!fi_tsend(a.ep, out, sizeof(out), NULL, 0, 7, out), "tsend");
	CHECK(cq_wait(c.cq, &e, &err, 5000, a.cq) == 1 && e.tag == 7,
	      "trecv completion");
	CHECK(!memcmp(in, out, sizeof(out)), "trecv data");
	CHECK(cq_wait(a.cq, &e, &err, 5000, c.cq) == 1, "tsend completion");
	/* RMA write and an atomic add at the acceptor */
	CHECK(!fi_mr_reg(domain, &tgt, sizeof(tgt),
			 FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr, NULL),
	      "mr_reg");
	key = fi_mr_key(mr);
	CHECK(!fi_write(c.ep, &add, sizeof(add), NULL, 0, (uintptr_t)&tgt, key,
			NULL),
	      "write");
	CHECK(cq_wait(c.cq, &e, &err, 5000, a.cq) == 1 && tgt == 37,
	      "write: %llu", (unsigned long long)tgt);
	CHECK(!fi_atomic(c.ep, &add, 1, NULL, 0, (uintptr_t)&tgt, key,
			 FI_UINT64, FI_SUM, NULL),
	      "atomic");
	CHECK(cq_wait(c.cq, &e, &err, 5000, a.cq) == 1 && tgt == 74,
	      "atomic: %llu", (unsigned long long)tgt);
	ret = 0;
out:
	if (mr)
		fi_close(&mr->fid);
	side_close(&c);
	side_close(&a);
	listener_close(&l);
	return ret;
}

static int c_reject(void)
{
	struct fi_eq_err_entry err = {0};
	uint8_t buf[EVBUF];
	struct fi_eq_cm_entry *e = (void *)buf;
	char edata[64] = {0};
	struct listener l = {0};
	struct side c = {0};
	int ev;

	CHECK(!listener_open(&l), "listen");
	CHECK(!side_open(&c, NULL), "open");
	CHECK(!fi_connect(c.ep, &l.name, "let me in", 9), "connect");
	ev = eq_wait(l.eq, buf, NULL, 5000, NULL);
	CHECK(ev == FI_CONNREQ, "no FI_CONNREQ (%d)", ev);
	CHECK(!fi_reject(l.pep, e->info->handle, "go away", 7), "reject");
	fi_freeinfo(e->info);
	err.err_data = edata;
	err.err_data_size = sizeof(edata);
	ev = eq_wait(c.eq, buf, &err, 5000, NULL);
	CHECK(ev == -FI_EAVAIL, "no error entry (%d)", ev);
	CHECK(err.err == FI_ECONNREFUSED, "err %d", err.err);
	CHECK(err.fid == &c.ep->fid, "err fid");
	CHECK(err.err_data_size == 7 && !memcmp(err.err_data, "go away", 7),
	      "reject data (%zu)", err.err_data_size);
	CHECK(fi_send(c.ep, "x", 1, NULL, 0, NULL) == -FI_ENOTCONN,
	      "send after reject");
	side_close(&c);
	listener_close(&l);
	return 0;
}

/* FI_OPT_CM_DATA_SIZE bytes each way: the request's, reject's, accept's. */
static int c_max_data(void)
{
	char cdata[TCP_CONN_DATA_MAX + 1], adata[TCP_CONN_DATA_MAX + 1];
	struct fi_eq_err_entry err = {0};
	uint8_t buf[EVBUF], edata[TCP_CONN_DATA_MAX];
	struct fi_eq_cm_entry *e = (void *)buf;
	size_t max = 0, len = sizeof(max);
	struct listener l = {0};
	struct side c = {0}, a = {0};
	int i, ev;

	for (i = 0; i < TCP_CONN_DATA_MAX; i++) {
		cdata[i] = (char)('a' + i % 26);
		adata[i] = (char)('A' + i % 26);
	}
	cdata[i] = adata[i] = '\0';
	CHECK(!listener_open(&l), "listen");
	CHECK(!fi_getopt(&l.pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE,
			 &max, &len) &&
		      max == TCP_CONN_DATA_MAX,
	      "FI_OPT_CM_DATA_SIZE %zu", max);
	CHECK(!side_open(&c, NULL), "open");
	/* More than that is refused, as 1.17 does. */
	CHECK(fi_connect(c.ep, &l.name, cdata, max + 1) == -FI_EINVAL,
	      "connect with too much data");
	CHECK(!fi_connect(c.ep, &l.name, cdata, max), "connect");
	ev = eq_wait(l.eq, buf, NULL, 5000, NULL);
	CHECK(ev == FI_CONNREQ, "no FI_CONNREQ (%d)", ev);
	CHECK(!memcmp(e->data, cdata, max), "FI_CONNREQ data");
	CHECK(!fi_reject(l.pep, e->info->handle, adata, max), "reject");
	fi_freeinfo(e->info);
	err.err_data = edata;
	err.err_data_size = sizeof(edata);
	ev = eq_wait(c.eq, buf, &err, 5000, NULL);
	CHECK(ev == -FI_EAVAIL && err.err == FI_ECONNREFUSED,
	      "not refused (%d, err %d)", ev, err.err);
	CHECK(err.err_data_size == max && !memcmp(err.err_data, adata, max),
	      "reject data (%zu)", err.err_data_size);
	side_close(&c);
	CHECK(!side_open(&c, NULL), "open again");
	CHECK(!fi_connect(c.ep, &l.name, cdata, max), "connect again");
	ev = eq_wait(l.eq, buf, NULL, 5000, NULL);
	CHECK(ev == FI_CONNREQ, "no second FI_CONNREQ (%d)", ev);
	CHECK(!side_open(&a, e->info), "acceptor open");
	fi_freeinfo(e->info);
	CHECK(fi_accept(a.ep, adata, max + 1) == -FI_EINVAL,
	      "accept with too much data");
	CHECK(!fi_accept(a.ep, adata, max), "accept");
	ev = eq_wait(c.eq, buf, NULL, 5000, a.cq);
	CHECK(ev == FI_CONNECTED, "no FI_CONNECTED (%d)", ev);
	CHECK(!memcmp(e->data, adata, max), "FI_CONNECTED data");
	side_close(&c);
	side_close(&a);
	listener_close(&l);
	return 0;
}

static int c_shutdown(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t buf[EVBUF];
	struct listener l = {0};
	struct side c = {0}, a = {0};
	char in[16], mine[16];
	int ev, ret = -1;

	CHECK(!listener_open(&l), "listen");
	if (connect_pair(&l, &c, &a, "c", "a"))
		goto out;
	CHECK(!fi_recv(a.ep, in, sizeof(in), NULL, 0, in), "recv");
	CHECK(!fi_recv(c.ep, mine, sizeof(mine), NULL, 0, mine), "own recv");
	CHECK(!fi_shutdown(c.ep, 0), "shutdown");
	CHECK(cq_wait(c.cq, &e, &err, 5000, NULL) == -FI_EAVAIL &&
		      err.op_context == mine && err.err == FI_ECANCELED,
	      "own posted receive not canceled");
	ev = eq_wait(a.eq, buf, NULL, 5000, a.cq);
	CHECK(ev == FI_SHUTDOWN, "no FI_SHUTDOWN (%d)", ev);
	CHECK(((struct fi_eq_cm_entry *)buf)->fid == &a.ep->fid, "fid");
	/* The peer's shutdown leaves the receive with the application (no
	 * error entry on a CQ other connections may share), which takes it
	 * back with fi_cancel. */
	CHECK(cq_wait(a.cq, &e, &err, 200, NULL) == -FI_EAGAIN,
	      "posted receive completed by the peer's shutdown");
	CHECK(!fi_cancel(&a.ep->fid, in), "cancel");
	CHECK(cq_wait(a.cq, &e, &err, 5000, NULL) == -FI_EAVAIL &&
		      err.op_context == in && err.err == FI_ECANCELED,
	      "posted receive not canceled");
	CHECK(fi_send(c.ep, "x", 1, NULL, 0, NULL) == -FI_ENOTCONN,
	      "send after shutdown");
	CHECK(fi_send(a.ep, "x", 1, NULL, 0, NULL) == -FI_ENOTCONN,
	      "send after peer's shutdown");
	/* The side that shut down gets its FI_SHUTDOWN too (1.17 does). */
	ev = eq_wait(c.eq, buf, NULL, 5000, c.cq);
	CHECK(ev == FI_SHUTDOWN, "no local FI_SHUTDOWN (%d)", ev);
	CHECK(((struct fi_eq_cm_entry *)buf)->fid == &c.ep->fid, "local fid");
	/* One each: shutting down what is already down adds none. */
	CHECK(!fi_shutdown(a.ep, 0), "shutdown of the closed side");
	CHECK(!fi_shutdown(c.ep, 0), "second shutdown");
	CHECK(eq_wait(c.eq, buf, NULL, 100, c.cq) == -FI_EAGAIN,
	      "a second local FI_SHUTDOWN");
	CHECK(eq_wait(a.eq, buf, NULL, 100, a.cq) == -FI_EAGAIN,
	      "a second FI_SHUTDOWN at the peer");
	ret = 0;
out:
	side_close(&c);
	side_close(&a);
	listener_close(&l);
	return ret;
}

#define BIG (32u << 20)

/* The child: connects to @name and streams big messages until killed. */
static void child_run(const struct sockaddr_in *name)
{
	uint8_t buf[EVBUF];
	struct fi_cq_tagged_entry e;
	struct side c = {0};
	char *data = malloc(BIG);

	/* the parent's EQs (its pep's listening socket is inherited): not
	 * ours to progress */
	memset(eqs, 0, sizeof(eqs));
	if (!data || side_open(&c, NULL) || fi_connect(c.ep, name, "k", 1) ||
	    eq_wait(c.eq, buf, NULL, 5000, NULL) != FI_CONNECTED)
		_exit(2);
	memset(data, 0x5a, BIG);
	for (;;) {
		while (fi_send(c.ep, data, BIG, NULL, 0, NULL) == -FI_EAGAIN)
			(void)fi_cq_read(c.cq, &e, 1);
		(void)fi_cq_read(c.cq, &e, 1);
	}
}

static int c_peer_killed(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t buf[EVBUF];
	struct fi_eq_cm_entry *ce = (void *)buf;
	struct listener l = {0};
	struct side a = {0};
	/* two receives, each re-posted as it completes before the kill: the
	 * one the child's last message is filling fails with the
	 * connection */
	char *in = NULL, *in2 = NULL, *out = NULL;
	bool got_shutdown = false, send_failed = false, recv_done[2] = {0};
	void *ctx;
	int i;
	uint64_t t0;
	pid_t pid;
	int ev, st, ret = -1;

	CHECK(!listener_open(&l), "listen");
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (!pid) {
		/* the child reads nothing it does not have to: our send
		 * below stays pending at its unexpected-buffer bound */
		setenv("FI_TCP_MAX_UNEXP", "4096", 1);
		child_run(&l.name);
	}
	in = malloc(BIG);
	in2 = malloc(BIG);
	out = calloc(1, BIG);
	ev = eq_wait(l.eq, buf, NULL, 5000, NULL);
	if (ev != FI_CONNREQ || side_open(&a, ce->info) ||
	    fi_accept(a.ep, NULL, 0)) {
		fprintf(stderr, "  accept failed (%d)\n", ev);
		goto kill;
	}
	fi_freeinfo(ce->info);
	ev = eq_wait(a.eq, buf, NULL, 5000, NULL);
	if (ev != FI_CONNECTED || fi_recv(a.ep, in, BIG, NULL, 0, in) ||
	    fi_recv(a.ep, in2, BIG, NULL, 0, in2) ||
	    fi_send(a.ep, out, BIG, NULL, 0, out)) {
		fprintf(stderr, "  connect/post failed (%d)\n", ev);
		goto kill;
	}
	/* let the child's messages stream in, then kill it mid-way */
	t0 = now_ms();
	while (now_ms() - t0 < 200) {
		ret = cq_wait(a.cq, &e, &err, 1, NULL);
		if (ret == -FI_EAVAIL) {
			fprintf(stderr, "  error before the kill (%d)\n",
				err.err);
			goto kill;
		}
		if (ret == 1 && (e.op_context == in || e.op_context == in2) &&
		    fi_recv(a.ep, e.op_context, BIG, NULL, 0, e.op_context))
			goto kill;
	}
	/* drain: every completed receive re-posted, both posted now (no
	 * progress runs between this and the kill) */
	while ((ret = (int)fi_cq_read(a.cq, &e, 1)) == 1)
		if ((e.op_context == in || e.op_context == in2) &&
		    fi_recv(a.ep, e.op_context, BIG, NULL, 0, e.op_context))
			goto kill;
	if (ret != -FI_EAGAIN)
		goto kill;
	ret = 0;
kill:
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (ret) {
		ret = -1;
		goto out;
	}
	t0 = now_ms();
	while (now_ms() - t0 < 5000 && !(got_shutdown && send_failed)) {
		ev = eq_wait(a.eq, buf, NULL, 1, NULL);
		if (ev == FI_SHUTDOWN)
			got_shutdown = true;
		ret = cq_wait(a.cq, &e, &err, 1, NULL);
		ctx = ret == 1 ? e.op_context : err.op_context;
		if (ret == 1 || ret == -FI_EAVAIL)
			recv_done[ctx == in2] |= ctx == in || ctx == in2;
		if (ret == -FI_EAVAIL && err.op_context == out)
			send_failed = true;
		if (getenv("TCP_CM_DEBUG") && ret != -FI_EAGAIN)
			fprintf(stderr, "  event %d, cq %d, ctx %p, err %d\n",
				ev, ret, ctx, ret == 1 ? 0 : err.err);
	}
	ret = -1;
	if (getenv("TCP_CM_DEBUG"))
		fprintf(stderr, "  shutdown %d recv %d %d send %d\n",
			got_shutdown, recv_done[0], recv_done[1], send_failed);
	CHECK(got_shutdown, "no FI_SHUTDOWN within 5 s");
	CHECK(send_failed, "send not failed within 5 s");
	/* A receive the connection was filling failed with it (or a whole
	 * message completed it); one it never reached stays posted, for
	 * fi_cancel. */
	for (i = 0; i < 2; i++) {
		if (recv_done[i])
			continue;
		ctx = i ? in2 : in;
		CHECK(!fi_cancel(&a.ep->fid, ctx), "cancel");
		CHECK(cq_wait(a.cq, &e, &err, 5000, NULL) == -FI_EAVAIL &&
			      err.op_context == ctx && err.err == FI_ECANCELED,
		      "receive %d neither completed nor posted", i);
	}
	ret = 0;
out:
	side_close(&a);
	listener_close(&l);
	free(in);
	free(in2);
	free(out);
	return ret;
}

static int c_no_listener(void)
{
	struct fi_eq_err_entry err = {0};
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	uint8_t buf[EVBUF];
	struct side c = {0};
	int fd, ev;

	/* a port that was just free: bound, never listened on, closed */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
		      !getsockname(fd, (struct sockaddr *)&sa, &len),
	      "bind");
	close(fd);
	CHECK(!side_open(&c, NULL), "open");
	CHECK(!fi_connect(c.ep, &sa, NULL, 0), "connect");
	ev = eq_wait(c.eq, buf, &err, 5000, NULL);
	CHECK(ev == -FI_EAVAIL, "no error event (%d)", ev);
	CHECK(err.err == FI_ECONNREFUSED, "err %d", err.err);
	side_close(&c);
	return 0;
}

static int raw_connect(const struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && connect(fd, (const struct sockaddr *)to, sizeof(*to))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A request frame of ours, @ep_type, @data_len bytes of data. */
static size_t raw_request(uint8_t *buf, uint8_t ep_type, size_t data_len)
{
	struct tcp_hdr_view h = {.op = TCP_OP_CONN_REQ,
				 .body_len = TCP_CONN_BODY_SIZE,
				 .payload_len = data_len};
	struct tcp_conn_body c = {.magic = TCP_CONN_MAGIC,
				  .ep_type = ep_type,
				  .family = TCP_FAMILY_INET,
				  .port = 1};

	tcp_hdr_encode(buf, &h);
	tcp_conn_body_encode(buf + TCP_HDR_SIZE, &c);
	memset(buf + TCP_HDR_SIZE + TCP_CONN_BODY_SIZE, 'd', data_len);
	return TCP_HDR_SIZE + TCP_CONN_BODY_SIZE + data_len;
}

/* Hostile requests to a pep: no FI_CONNREQ, no crash, a good one after. */
static int c_hostile_request(void)
{
	uint8_t frame[TCP_HDR_SIZE + TCP_CONN_BODY_SIZE + 512];
	struct tcp_hdr_view h;
	uint8_t buf[EVBUF];
	struct fi_eq_cm_entry *e = (void *)buf;
	struct listener l = {0};
	struct side c = {0}, a = {0};
	int fd[6], i, ev;
	size_t n;

	CHECK(!listener_open(&l), "listen");
	/* garbage header */
	fd[0] = raw_connect(&l.name);
	memset(frame, 0xee, TCP_HDR_SIZE);
	CHECK(write(fd[0], frame, TCP_HDR_SIZE) == TCP_HDR_SIZE, "write");
	/* an RDM request to a pep */
	fd[1] = raw_connect(&l.name);
	n = raw_request(frame, TCP_CONN_EP_RDM, 0);
	CHECK(write(fd[1], frame, n) == (ssize_t)n, "write");
	/* data length past the limit */
	fd[2] = raw_connect(&l.name);
	n = raw_request(frame, TCP_CONN_EP_MSG, 0);
	tcp_hdr_decode(frame, n, &h);
	h.payload_len = 1u << 30;
	tcp_hdr_encode(frame, &h);
	CHECK(write(fd[2], frame, n) == (ssize_t)n, "write");
	/* a data frame instead of a request */
	fd[3] = raw_connect(&l.name);
	memset(&h, 0, sizeof(h));
	h.op = TCP_OP_MSG;
	h.payload_len = 4;
	tcp_hdr_encode(frame, &h);
	CHECK(write(fd[3], frame, TCP_HDR_SIZE + 4) == TCP_HDR_SIZE + 4,
	      "write");
	/* a request cut short, then closed */
	fd[4] = raw_connect(&l.name);
	n = raw_request(frame, TCP_CONN_EP_MSG, 100);
	CHECK(write(fd[4], frame, n - 50) == (ssize_t)(n - 50), "write");
	close(fd[4]);
	/* bad magic */
	fd[5] = raw_connect(&l.name);
	n = raw_request(frame, TCP_CONN_EP_MSG, 0);
	frame[TCP_HDR_SIZE] ^= 1;
	CHECK(write(fd[5], frame, n) == (ssize_t)n, "write");
	ev = eq_wait(l.eq, buf, NULL, 300, NULL);
	CHECK(ev == -FI_EAGAIN, "event for a hostile request (%d)", ev);
	/* each one was closed by the pep: EOF */
	for (i = 0; i < 6; i++) {
		if (i == 4)
			continue;
		CHECK(read(fd[i], frame, sizeof(frame)) <= 0,
		      "socket %d still open", i);
		close(fd[i]);
	}
	/* and a real one still gets through */
	CHECK(!connect_pair(&l, &c, &a, "ok", "ok"), "good connect");
	(void)e;
	side_close(&c);
	side_close(&a);
	listener_close(&l);
	return 0;
}

/* A fake acceptor answering garbage: the connector gets an error. */
static int c_hostile_answer(void)
{
	struct fi_eq_err_entry err = {0};
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	uint8_t buf[EVBUF], frame[512];
	struct side c = {0};
	int lfd, fd, ev;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(!bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) &&
		      !listen(lfd, 4) &&
		      !getsockname(lfd, (struct sockaddr *)&sa, &len),
	      "listen");
	CHECK(!side_open(&c, NULL), "open");
	CHECK(!fi_connect(c.ep, &sa, "q", 1), "connect");
	/* progress the connector until its request is out */
	(void)eq_wait(c.eq, buf, NULL, 50, NULL);
	fd = accept(lfd, NULL, NULL);
	CHECK(fd >= 0, "accept");
	CHECK(read(fd, frame, sizeof(frame)) ==
		      TCP_HDR_SIZE + TCP_CONN_BODY_SIZE + 1,
	      "request size");
	/* an answer with a data length past the limit */
	raw_request(frame, TCP_CONN_EP_MSG, 0);
	frame[1] = TCP_OP_CONN_RESP;
	frame[8] = 0xff;
	frame[9] = 0xff;
	CHECK(write(fd, frame, TCP_HDR_SIZE + TCP_CONN_BODY_SIZE) > 0, "write");
	ev = eq_wait(c.eq, buf, &err, 5000, NULL);
	CHECK(ev == -FI_EAVAIL, "no error event (%d)", ev);
	CHECK(err.err != 0, "err 0");
	CHECK(fi_send(c.ep, "x", 1, NULL, 0, NULL) == -FI_ENOTCONN, "send");
	close(fd);
	close(lfd);
	side_close(&c);
	return 0;
}

static int c_bad_args(void)
{
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr_in sa;
	size_t len, val;
	struct listener l = {0};
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct side c = {0};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	char small[4];
	int fake[8] = {0};

	/* pep: listen before an EQ, bind to a non-EQ */
	CHECK(!fi_passive_ep(fabric, info, &pep, NULL), "pep");
	CHECK(fi_listen(pep) == -FI_ENOEQ, "listen without EQ");
	CHECK(!fi_cq_open(domain, &cq_attr, &cq, NULL), "cq");
	CHECK(fi_pep_bind(pep, &cq->fid, 0) == -FI_EINVAL, "bind a CQ");
	CHECK(fi_setname(&pep->fid, &s6, sizeof(s6)) == -FI_EINVAL,
	      "setname of another family");
	CHECK(fi_setname(&pep->fid, NULL, 0) == -FI_EINVAL, "setname NULL");
	len = sizeof(small);
	CHECK(fi_getname(&pep->fid, small, &len) == -FI_ETOOSMALL &&
		      len == sizeof(sa),
	      "getname too small");
	len = sizeof(val);
	CHECK(!fi_getopt(&pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &val,
			 &len) &&
		      val == TCP_CONN_DATA_MAX,
	      "pep CM data size");
	fi_close(&pep->fid);
	fi_close(&cq->fid);

	/* an MSG endpoint without an EQ cannot be enabled */
	CHECK(!fi_endpoint(domain, info, &ep, NULL), "endpoint");
	CHECK(!fi_cq_open(domain, &cq_attr, &cq, NULL), "cq");
	CHECK(!fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), "bind");
	CHECK(fi_enable(ep) == -FI_ENOEQ, "enable without EQ");
	fi_close(&ep->fid);
	fi_close(&cq->fid);

	CHECK(!listener_open(&l), "listen");
	CHECK(!side_open(&c, NULL), "open");
	len = sizeof(val);
	CHECK(!fi_getopt(&c.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &val,
			 &len) &&
		      val == TCP_CONN_DATA_MAX,
	      "ep CM data size");
	len = sizeof(sa);
	CHECK(fi_getpeer(c.ep, &sa, &len) == -FI_ENOTCONN, "getpeer idle");
	CHECK(fi_send(c.ep, "x", 1, NULL, 0, NULL) == -FI_ENOTCONN,
	      "send before connect");
	CHECK(fi_accept(c.ep, NULL, 0) == -FI_EINVAL, "accept without handle");
	CHECK(fi_connect(c.ep, NULL, NULL, 0) == -FI_EINVAL, "connect NULL");
	CHECK(fi_connect(c.ep, &s6, NULL, 0) == -FI_EINVAL,
	      "connect to another family");
	CHECK(fi_connect(c.ep, &l.name, NULL, 5) == -FI_EINVAL,
	      "connect NULL param with length");
	CHECK(fi_reject(l.pep, (fid_t)fake, NULL, 0) == -FI_EINVAL,
	      "reject a foreign handle");
	CHECK(fi_reject(l.pep, NULL, NULL, 0) == -FI_EINVAL, "reject NULL");
	CHECK(fi_shutdown(c.ep, 1) == -FI_EINVAL, "shutdown flags");
	CHECK(!fi_connect(c.ep, &l.name, NULL, 0), "connect");
	CHECK(fi_connect(c.ep, &l.name, NULL, 0) == -FI_EISCONN,
	      "second connect");
	side_close(&c);
	listener_close(&l);
	return 0;
}

/* The same over ::1 (FI_SOCKADDR_IN6), where the host has IPv6. */
static int c_ipv6(void)
{
	struct fi_info *hints = fi_allocinfo(), *i6 = NULL, *i4 = info;
	struct fid_fabric *f4 = fabric;
	struct fid_domain *d4 = domain;
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct listener l = {0};
	struct side c = {0}, a = {0};
	char in[8] = {0};
	int fd, ret = -1;

	sa.sin6_addr = in6addr_loopback;
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		fi_freeinfo(hints);
		printf("  (no IPv6 loopback here: not tried)\n");
		return 0;
	}
	close(fd);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN6;
	hints->fabric_attr->prov_name = strdup("tcp");
	ret = fi_getinfo(FI_VERSION(1, 17), "::1", NULL, FI_SOURCE, hints, &i6);
	fi_freeinfo(hints);
	CHECK(!ret && i6->addr_format == FI_SOCKADDR_IN6, "getinfo ::1");
	info = i6;
	ret = fi_fabric(i6->fabric_attr, &fabric, NULL);
	ret = ret ? ret : fi_domain(fabric, i6, &domain, NULL);
	ret = ret ? ret : listener_open(&l);
	if (ret || l.ss.ss_family != AF_INET6 ||
	    connect_pair(&l, &c, &a, "six", "VI")) {
		ret = -1;
		goto out;
	}
	ret = -1;
	if (fi_recv(a.ep, in, sizeof(in), NULL, 0, in) ||
	    fi_send(c.ep, "v6", 3, NULL, 0, NULL) ||
	    cq_wait(a.cq, &e, &err, 5000, c.cq) != 1 || strcmp(in, "v6")) {
		fprintf(stderr, "  no message over ::1\n");
		goto out;
	}
	ret = 0;
out:
	side_close(&c);
	side_close(&a);
	listener_close(&l);
	if (domain != d4)
		fi_close(&domain->fid);
	if (fabric != f4)
		fi_close(&fabric->fid);
	fi_freeinfo(i6);
	info = i4;
	fabric = f4;
	domain = d4;
	return ret;
}

/*
 * Handlers (fi_eq_register_handler): one for FI_CONNREQ opens, enables
 * and accepts an endpoint from inside the pep's progress; one for that
 * endpoint's FI_CONNECTED sends on it. Neither may deadlock.
 */
static struct side h_acc;
static int h_connected_calls, h_send_ret = 1;

static ssize_t h_connected(struct fid_eq *eq, uint64_t type, void *data,
			   uint64_t len, void *ctx)
{
	(void)eq;
	(void)type;
	(void)data;
	(void)len;
	(void)ctx;
	h_connected_calls++;
	h_send_ret = (int)fi_send(h_acc.ep, "hi", 3, NULL, 0, NULL);
	return 0;
}

static ssize_t h_connreq(struct fid_eq *eq, uint64_t type, void *data,
			 uint64_t len, void *ctx)
{
	struct fi_eq_cm_entry *e = data;
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};

	(void)eq;
	(void)type;
	(void)len;
	(void)ctx;
	if (fi_eq_open(fabric, &attr, &h_acc.eq, NULL) ||
	    fi_eq_register_handler(h_acc.eq, FI_CONNECTED, h_connected, NULL) ||
	    fi_cq_open(domain, &cq_attr, &h_acc.cq, NULL) ||
	    fi_endpoint(domain, e->info, &h_acc.ep, NULL) ||
	    fi_ep_bind(h_acc.ep, &h_acc.eq->fid, 0) ||
	    fi_ep_bind(h_acc.ep, &h_acc.cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(h_acc.ep) || fi_accept(h_acc.ep, NULL, 0))
		h_send_ret = -2;
	fi_freeinfo(e->info);
	return 0;
}

static int c_handlers(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t buf[EVBUF];
	struct listener l = {0};
	struct side c = {0};
	char in[8] = {0};
	int ev, ret = -1;

	memset(&h_acc, 0, sizeof(h_acc));
	CHECK(!listener_open(&l), "listen");
	CHECK(!fi_eq_register_handler(l.eq, FI_CONNREQ, h_connreq, NULL),
	      "register");
	if (side_open(&c, NULL) || fi_recv(c.ep, in, sizeof(in), NULL, 0, in) ||
	    fi_connect(c.ep, &l.ss, NULL, 0))
		goto out;
	ev = eq_wait(c.eq, buf, NULL, 5000, NULL);
	if (ev != FI_CONNECTED) {
		fprintf(stderr, "  no FI_CONNECTED (%d)\n", ev);
		goto out;
	}
	if (h_send_ret || h_connected_calls != 1) {
		fprintf(stderr, "  handlers: send %d, calls %d\n", h_send_ret,
			h_connected_calls);
		goto out;
	}
	if (cq_wait(c.cq, &e, &err, 5000, h_acc.cq) != 1 || strcmp(in, "hi")) {
		fprintf(stderr, "  no message from the handler's send\n");
		goto out;
	}
	/* consumed by the handlers: nothing queued */
	if (eq_wait(l.eq, buf, NULL, 50, NULL) != -FI_EAGAIN ||
	    eq_wait(h_acc.eq, buf, NULL, 50, NULL) != -FI_EAGAIN) {
		fprintf(stderr, "  handled events queued too\n");
		goto out;
	}
	ret = 0;
out:
	side_close(&c);
	side_close(&h_acc);
	listener_close(&l);
	return ret;
}

/*
 * A connector that connects its next endpoint as soon as the last one is
 * connected (fabtests' fi_multi_ep), both sides with automatic control
 * progress: the acceptor's EQ, shared by its pep and its endpoints, must
 * show each FI_CONNECTED before the next FI_CONNREQ. A handler on the
 * acceptor's FI_CONNECTED stands for the acceptor being preempted
 * between its answer and its event: it waits while the connector, had
 * the answer left, could connect again, then passes the event on.
 */
#define ORDER_EPS 3

struct order_run {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_info *info;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep[ORDER_EPS];
	struct sockaddr_storage ss;
	int accepting; /* index of the endpoint being accepted */
	int connected; /* connector endpoints connected so far */
	int err;
};

static ssize_t o_connected(struct fid_eq *eq, uint64_t type, void *data,
			   uint64_t len, void *ctx)
{
	struct order_run *o = ctx;
	int seen = __atomic_load_n(&o->accepting, __ATOMIC_ACQUIRE);
	uint8_t buf[EVBUF];
	uint32_t event;
	uint64_t end;

	(void)type;
	(void)data;
	(void)len;
	/* The connector learns of this accept only from its answer. */
	end = now_ms() + 300;
	while (__atomic_load_n(&o->connected, __ATOMIC_ACQUIRE) <= seen &&
	       now_ms() < end)
		usleep(1000);
	if (__atomic_load_n(&o->connected, __ATOMIC_ACQUIRE) > seen &&
	    seen + 1 < ORDER_EPS) {
		/* It did: give its next request time to come. */
		end = now_ms() + 3000;
		while (fi_eq_read(eq, &event, buf, sizeof(buf), FI_PEEK) ==
			       -FI_EAGAIN &&
		       now_ms() < end)
			usleep(1000);
	}
	return -FI_EAGAIN; /* onto the EQ */
}

static void *o_connector(void *arg)
{
	struct order_run *o = arg;
	uint8_t buf[EVBUF];
	struct fi_eq_cm_entry *e = (void *)buf;
	uint32_t event;
	ssize_t n;
	int i;

	for (i = 0; i < ORDER_EPS; i++) {
		if (fi_endpoint(o->domain, o->info, &o->ep[i], NULL) ||
		    fi_ep_bind(o->ep[i], &o->eq->fid, 0) ||
		    fi_ep_bind(o->ep[i], &o->cq->fid, FI_TRANSMIT | FI_RECV) ||
		    fi_enable(o->ep[i]) ||
		    fi_connect(o->ep[i], &o->ss, NULL, 0)) {
			o->err = -1;
			break;
		}
		n = fi_eq_sread(o->eq, &event, buf, sizeof(buf), 5000, 0);
		if (n < 0 || event != FI_CONNECTED ||
		    e->fid != &o->ep[i]->fid) {
			o->err = n < 0 ? (int)n : (int)event;
			break;
		}
		__atomic_store_n(&o->connected, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* One provider's run; 1 when it is not there to test. */
static int order_run(const char *prov, enum fi_progress progress)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fid_ep *acc[ORDER_EPS] = {0};
	struct order_run c = {0}, *o = &c;
	struct fi_info *hints = fi_allocinfo();
	struct fid_eq *eq = NULL;
	struct fid_cq *cq = NULL;
	struct fid_pep *pep = NULL;
	uint8_t buf[EVBUF];
	struct fi_eq_cm_entry *e = (void *)buf;
	size_t len = sizeof(o->ss);
	bool started = false;
	pthread_t th;
	uint32_t event = 0;
	ssize_t n;
	int i, ret = -1;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->control_progress = progress;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, hints,
			 &o->info);
	fi_freeinfo(hints);
	if (ret == -FI_ENODATA) {
		printf("  %s: not built, not tested\n", prov);
		return 1;
	}
	ret = -1;
	if (!o->info ||
	    o->info->domain_attr->control_progress != FI_PROGRESS_AUTO) {
		fprintf(stderr, "  %s: no FI_EP_MSG info with auto progress\n",
			prov);
		goto out;
	}
	if (fi_fabric(o->info->fabric_attr, &o->fabric, NULL) ||
	    fi_domain(o->fabric, o->info, &o->domain, NULL) ||
	    fi_eq_open(o->fabric, &eq_attr, &o->eq, NULL) ||
	    fi_cq_open(o->domain, &cq_attr, &o->cq, NULL) ||
	    fi_eq_open(o->fabric, &eq_attr, &eq, NULL) ||
	    fi_cq_open(o->domain, &cq_attr, &cq, NULL) ||
	    fi_eq_register_handler(eq, FI_CONNECTED, o_connected, o) ||
	    fi_passive_ep(o->fabric, o->info, &pep, NULL) ||
	    fi_pep_bind(pep, &eq->fid, 0) || fi_listen(pep) ||
	    fi_getname(&pep->fid, &o->ss, &len)) {
		fprintf(stderr, "  %s: setup\n", prov);
		goto out;
	}
	if (pthread_create(&th, NULL, o_connector, o))
		goto out;
	started = true;
	for (i = 0; i < ORDER_EPS; i++) {
		n = fi_eq_sread(eq, &event, buf, sizeof(buf), 5000, 0);
		if (n < 0 || event != FI_CONNREQ) {
			fprintf(stderr,
				"  %s: endpoint %d: no FI_CONNREQ (%zd, "
				"event %u)\n",
				prov, i, n, event);
			goto out;
		}
		__atomic_store_n(&o->accepting, i, __ATOMIC_RELEASE);
		ret = fi_endpoint(o->domain, e->info, &acc[i], NULL);
		fi_freeinfo(e->info);
		if (ret || fi_ep_bind(acc[i], &eq->fid, 0) ||
		    fi_ep_bind(acc[i], &cq->fid, FI_TRANSMIT | FI_RECV) ||
		    fi_enable(acc[i]) || fi_accept(acc[i], NULL, 0)) {
			fprintf(stderr, "  %s: accept %d\n", prov, i);
			ret = -1;
			goto out;
		}
		ret = -1;
		n = fi_eq_sread(eq, &event, buf, sizeof(buf), 5000, 0);
		if (n < 0 || event != FI_CONNECTED || e->fid != &acc[i]->fid) {
			fprintf(stderr,
				"  %s: endpoint %d: event %u before "
				"its FI_CONNECTED (%zd)\n",
				prov, i, event, n);
			if (n > 0 && event == FI_CONNREQ)
				fi_freeinfo(e->info);
			goto out;
		}
	}
	ret = 0;
out:
	if (started) {
		pthread_join(th, NULL);
		if (!ret && o->err) {
			fprintf(stderr, "  %s: connector: %d\n", prov, o->err);
			ret = -1;
		}
	}
	for (i = 0; i < ORDER_EPS; i++) {
		if (o->ep[i])
			fi_close(&o->ep[i]->fid);
		if (acc[i])
			fi_close(&acc[i]->fid);
	}
	if (pep)
		fi_close(&pep->fid);
	if (cq)
		fi_close(&cq->fid);
	if (eq)
		fi_close(&eq->fid);
	if (o->cq)
		fi_close(&o->cq->fid);
	if (o->eq)
		fi_close(&o->eq->fid);
	if (o->domain)
		fi_close(&o->domain->fid);
	if (o->fabric)
		fi_close(&o->fabric->fid);
	fi_freeinfo(o->info);
	return ret;
}

static int c_accept_order(void)
{
	int t = order_run("tcp", FI_PROGRESS_AUTO);
	int s = order_run("sockets", FI_PROGRESS_UNSPEC);

	return t || s < 0 ? -1 : 0;
}

struct tcase {
	const char *name;
	int (*fn)(void);
};

static const struct tcase cases[] = {
	{"connect_accept", c_connect_accept},
	{"reject", c_reject},
	{"max_data", c_max_data},
	{"shutdown", c_shutdown},
	{"peer_killed", c_peer_killed},
	{"no_listener", c_no_listener},
	{"hostile_request", c_hostile_request},
	{"hostile_answer", c_hostile_answer},
	{"bad_args", c_bad_args},
	{"ipv6", c_ipv6},
	{"handlers", c_handlers},
	{"accept_order", c_accept_order},
};

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp");
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, hints,
			 &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	if (info->ep_attr->type != FI_EP_MSG)
		return -FI_ENODATA;
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	return ret ? ret : fi_domain(fabric, info, &domain, NULL);
}

int main(void)
{
	const char *only = getenv("TCP_CM_ONLY");
	int failures = 0;
	size_t i;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	ret = setup();
	if (ret) {
		fprintf(stderr, "setup: %s\n", fi_strerror(-ret));
		return 1;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		alarm(60); /* a case that hangs fails the test */
		ret = cases[i].fn();
		alarm(0);
		if (ret)
			failures++;
		printf("%s %s\n", ret ? "FAIL" : "PASS", cases[i].name);
		fflush(stdout);
	}
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
