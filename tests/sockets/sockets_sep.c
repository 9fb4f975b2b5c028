/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_sep.c - scalable endpoints of the sockets provider through the
 * public API, two SEPs of one process over loopback (4 transmit and 4
 * receive contexts each, an AV with rx_ctx_bits 2):
 *
 *  routing   every client transmit context sends to every server receive
 *            context (fi_rx_addr): each receive context's own CQ and
 *            counter see exactly its messages, each transmit context's
 *            CQ its sends
 *  named     a send to fi_rx_addr(a, 1, bits) arrives at receive context
 *            1 only: a later one to context 0 on the same connection has
 *            come, and contexts 0, 2 and 3 hold nothing else
 *  threads   four threads, each driving one transmit and one receive
 *            context pair, 200 round trips each (FI_THREAD_SAFE)
 *  missing   a send with FI_DELIVERY_COMPLETE to a receive context that
 *            is closed completes in error (FI_ENOENT), nothing arrives
 *  msg       FI_EP_MSG scalable endpoints (a domain of their own): a
 *            pep listens, a client SEP (whose contexts send nothing
 *            before fi_connect) connects, the server accepts onto a SEP
 *            (FI_CONNECTED naming each SEP); 2 transmit and 2 receive
 *            contexts each with their own CQs: messages and tagged
 *            messages from each transmit context arrive at the receive
 *            context that fi_rx_addr(0, j, 16) names, data checked, both
 *            ways; an RMA write through a context; fi_shutdown with
 *            sends in flight: the server sees FI_SHUTDOWN, its receive
 *            context's posted receive stays until fi_cancel, every send
 *            completes and every close returns 0; a client SEP
 *            without FI_NAMED_RX_CTX reaches the server's context 0
 *            only
 *  churn     200 scalable endpoints opened, given traffic both ways and
 *            closed with it in flight; every close returns 0, every send
 *            of the client completes (maybe in error) and the client's
 *            contexts still work afterwards
 *  refuse    tcp has no scalable endpoints (-FI_ENOSYS, rx_ctx_bits
 *            -FI_ENOSYS); sockets refuses rx_ctx_bits past 16, a context
 *            index past the count, a context opened twice, and an
 *            FI_EP_DGRAM scalable endpoint of 17 contexts (-FI_EINVAL)
 *  trigger   a transmit context's FI_TRIGGER sendmsg and a receive
 *            context's plain fi_recv with FI_TRIGGER in its op flags
 *            wait for their counter thresholds (fi_trigger(3))
 *  dgram *   two FI_EP_DGRAM SEPs (sockets_dgram.c: one UDP socket each,
 *            the receive context index in the datagram header) in the
 *            same domain and AV: routing, named, threads and trigger as
 *            above on them; missing: a datagram for a closed receive
 *            context is dropped, one for context 0 after it arrives
 *
 * One line per case; exit 0 when every case passed, 77 without sockets.
 * Waits have 30 s deadlines: they only end a hang.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "sockets_test.h"

#define NCTX	 4
#define BITS	 2
#define DEADLINE 30000
#define ROUNDS	 200
#define CHURN	 200

struct side {
	struct fid_ep *sep, *tx[NCTX], *rx[NCTX];
	struct fid_cq *txcq[NCTX], *rxcq[NCTX];
	struct fid_cntr *rxcntr[NCTX];
	fi_addr_t addr; /* in the AV */
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct side srv, cli;
/* The pair the shared cases run on: srv and cli (RDM), or the datagram
 * SEPs dsrv and dcli (sockets_dgram.c) with info_dg. */
static struct side dsrv, dcli, *S = &srv, *C = &cli;
static struct fi_info *info_dg;

/* A completion on @cq (its context in *@ctx), or the error's code. */
static int cq_wait(struct fid_cq *cq, void **ctx)
{
	uint64_t end = now_ms() + DEADLINE;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t n;

	do {
		n = fi_cq_read(cq, &e, 1);
		if (n == 1) {
			if (ctx)
				*ctx = e.op_context;
			return 0;
		}
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(cq, &err, 0) == 1)
				return err.err ? err.err : -1;
		}
	} while (n == -FI_EAGAIN && now_ms() < end);
	return -FI_ETIMEDOUT;
}

static int ctx_open(struct side *s, int i, bool tx)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fid_ep **ep = tx ? &s->tx[i] : &s->rx[i];
	struct fid_cq **cq = tx ? &s->txcq[i] : &s->rxcq[i];
	int ret;

	ret = tx ? fi_tx_context(s->sep, i, NULL, ep, NULL)
		 : fi_rx_context(s->sep, i, NULL, ep, NULL);
	if (ret)
		return ret;
	if (!*cq) {
		ret = fi_cq_open(domain, &cq_attr, cq, NULL);
		if (ret)
			return ret;
	}
	ret = fi_ep_bind(*ep, &(*cq)->fid, tx ? FI_TRANSMIT : FI_RECV);
	if (ret)
		return ret;
	if (!tx) {
		if (!s->rxcntr[i]) {
			ret = fi_cntr_open(domain, &cntr_attr, &s->rxcntr[i],
					   NULL);
			if (ret)
				return ret;
		}
		ret = fi_ep_bind(*ep, &s->rxcntr[i]->fid, FI_RECV);
		if (ret)
			return ret;
	}
	return fi_enable(*ep);
}

/* A SEP with NCTX contexts each way, its address in the AV. */
static int side_open(struct side *s)
{
	char name[64];
	size_t len = sizeof(name);
	int i, ret;

	ret = fi_scalable_ep(domain, info, &s->sep, NULL);
	if (ret)
		return ret;
	ret = fi_scalable_ep_bind(s->sep, &av->fid, 0);
	if (ret)
		return ret;
	for (i = 0; i < NCTX; i++) {
		ret = ctx_open(s, i, true) ?: ctx_open(s, i, false);
		if (ret)
			return ret;
	}
	ret = fi_enable(s->sep) ?: fi_getname(&s->sep->fid, name, &len);
	if (ret)
		return ret;
	return fi_av_insert(av, name, 1, &s->addr, 0, NULL) == 1 ? 0 : -1;
}

static void side_close(struct side *s)
{
	int i;

	for (i = 0; i < NCTX; i++) {
		if (s->tx[i])
			fi_close(&s->tx[i]->fid);
		if (s->rx[i])
			fi_close(&s->rx[i]->fid);
	}
	if (s->sep)
		fi_close(&s->sep->fid);
	for (i = 0; i < NCTX; i++) {
		if (s->txcq[i])
			fi_close(&s->txcq[i]->fid);
		if (s->rxcq[i])
			fi_close(&s->rxcq[i]->fid);
		if (s->rxcntr[i])
			fi_close(&s->rxcntr[i]->fid);
	}
	memset(s, 0, sizeof(*s));
}

static ssize_t send_to(struct fid_ep *tx, const void *buf, size_t len,
		       fi_addr_t dest, void *ctx)
{
	uint64_t end = now_ms() + DEADLINE;
	ssize_t ret;

	do {
		ret = fi_send(tx, buf, len, NULL, dest, ctx);
	} while (ret == -FI_EAGAIN && now_ms() < end);
	return ret;
}

/* ------------------------------------------------------------------ */

static int case_routing(void)
{
	uint32_t rbuf[NCTX][NCTX][2], sbuf[NCTX][NCTX][2];
	bool seen[NCTX][NCTX] = {{false}};
	uint64_t before[NCTX];
	void *ctx;
	int i, j, k, ok = 0;
	uint32_t *m;

	for (j = 0; j < NCTX; j++)
		before[j] = fi_cntr_read(S->rxcntr[j]);
	for (j = 0; j < NCTX; j++)
		for (k = 0; k < NCTX; k++)
			CHECK(!fi_recv(S->rx[j], rbuf[j][k], sizeof(rbuf[j][k]),
				       NULL, FI_ADDR_UNSPEC, rbuf[j][k]),
			      "recv");
	for (i = 0; i < NCTX; i++)
		for (j = 0; j < NCTX; j++) {
			sbuf[i][j][0] = (uint32_t)i;
			sbuf[i][j][1] = (uint32_t)j;
			CHECK(!send_to(C->tx[i], sbuf[i][j], 8,
				       fi_rx_addr(S->addr, j, BITS), NULL),
			      "send %d to %d", i, j);
		}
	for (i = 0; i < NCTX; i++)
		for (k = 0; k < NCTX; k++)
			CHECK(!cq_wait(C->txcq[i], NULL), "tx cq %d", i);
	for (j = 0; j < NCTX; j++) {
		for (k = 0; k < NCTX; k++) {
			CHECK(!cq_wait(S->rxcq[j], &ctx), "rx cq %d", j);
			m = ctx;
			CHECK(m[1] == (uint32_t)j, "ctx %d got one for %u", j,
			      m[1]);
			CHECK(m[0] < NCTX && !seen[j][m[0]], "twice");
			seen[j][m[0]] = true;
		}
		CHECK(fi_cntr_read(S->rxcntr[j]) - before[j] == NCTX, "cntr %d",
		      j);
	}
	for (i = 0; i < NCTX; i++)
		CHECK(fi_cq_read(C->txcq[i], &ctx, 0) == -FI_EAGAIN,
		      "extra tx completion");
	ok = 1;
out:
	return ok ? 0 : -1;
}

static int case_named(void)
{
	uint32_t rbuf[NCTX] = {0}, a = 0xa, b = 0xb;
	struct fi_cq_tagged_entry e;
	void *ctx;
	int j, ok = 0;

	for (j = 0; j < NCTX; j++)
		CHECK(!fi_recv(S->rx[j], &rbuf[j], 4, NULL, FI_ADDR_UNSPEC,
			       &rbuf[j]),
		      "recv");
	CHECK(!send_to(C->tx[0], &a, 4, fi_rx_addr(S->addr, 1, BITS), NULL),
	      "send a");
	CHECK(!send_to(C->tx[0], &b, 4, fi_rx_addr(S->addr, 0, BITS), NULL),
	      "send b");
	/* In order on the one connection: once b is in, a was placed. */
	CHECK(!cq_wait(S->rxcq[0], &ctx), "b");
	CHECK(ctx == &rbuf[0] && rbuf[0] == b, "b at ctx 0: %x", rbuf[0]);
	CHECK(!cq_wait(S->rxcq[1], &ctx), "a");
	CHECK(ctx == &rbuf[1] && rbuf[1] == a, "a at ctx 1: %x", rbuf[1]);
	for (j = 0; j < NCTX; j++)
		CHECK(fi_cq_read(S->rxcq[j], &e, 1) == -FI_EAGAIN,
		      "ctx %d has more", j);
	CHECK(!rbuf[2] && !rbuf[3], "ctx 2/3 written");
	CHECK(!cq_wait(C->txcq[0], NULL) && !cq_wait(C->txcq[0], NULL), "tx");
	/* the receives left are cancelled (their entries are errors) */
	for (j = 2; j < NCTX; j++) {
		CHECK(!fi_cancel(&S->rx[j]->fid, &rbuf[j]), "cancel");
		CHECK(cq_wait(S->rxcq[j], NULL) == FI_ECANCELED, "canceled");
	}
	ok = 1;
out:
	return ok ? 0 : -1;
}

struct pair_arg {
	int t;
	int ok;
};

static void *pair_thread(void *p)
{
	struct pair_arg *a = p;
	uint32_t sv, rv;
	void *ctx;
	int k;

	for (k = 0; k < ROUNDS; k++) {
		rv = 0;
		sv = (uint32_t)a->t << 16 | (uint32_t)k;
		CHECK(!fi_recv(S->rx[a->t], &rv, 4, NULL, FI_ADDR_UNSPEC, &rv),
		      "recv");
		CHECK(!send_to(C->tx[a->t], &sv, 4,
			       fi_rx_addr(S->addr, a->t, BITS), &sv),
		      "send");
		CHECK(!cq_wait(C->txcq[a->t], &ctx) && ctx == &sv, "tx");
		CHECK(!cq_wait(S->rxcq[a->t], &ctx) && ctx == &rv, "rx");
		CHECK(rv == sv, "thread %d got %x for %x", a->t, rv, sv);
	}
	a->ok = 1;
out:
	return NULL;
}

static int case_threads(void)
{
	struct pair_arg arg[NCTX];
	pthread_t th[NCTX];
	int t, ok = 0;

	for (t = 0; t < NCTX; t++) {
		arg[t] = (struct pair_arg){.t = t};
		CHECK(!pthread_create(&th[t], NULL, pair_thread, &arg[t]),
		      "create");
	}
	ok = 1;
out:
	while (t-- > 0) {
		pthread_join(th[t], NULL);
		ok = ok && arg[t].ok;
	}
	return ok ? 0 : -1;
}

static int case_missing(void)
{
	uint32_t v = 7;
	struct iovec iov = {&v, 4};
	struct fi_msg msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = fi_rx_addr(srv.addr, 3, BITS),
	};
	struct fi_cq_tagged_entry e;
	int ok = 0, ret;

	CHECK(!fi_close(&srv.rx[3]->fid), "close");
	srv.rx[3] = NULL;
	CHECK(!fi_sendmsg(cli.tx[1], &msg, FI_DELIVERY_COMPLETE), "send");
	ret = cq_wait(cli.txcq[1], NULL);
	CHECK(ret == FI_ENOENT, "not refused: %d", ret);
	CHECK(fi_cq_read(srv.rxcq[3], &e, 1) == -FI_EAGAIN, "arrived");
	/* the index is free again */
	CHECK(!ctx_open(&srv, 3, false), "reopen");
	ok = 1;
out:
	return ok ? 0 : -1;
}

/* Nothing on @cq for a while (30 ms): -FI_EAGAIN all along. */
static bool cq_quiet(struct fid_cq *cq)
{
	uint64_t end = now_ms() + 30;
	struct fi_cq_tagged_entry e;

	while (now_ms() < end)
		if (fi_cq_read(cq, &e, 1) != -FI_EAGAIN)
			return false;
	return true;
}

/* A triggered send of transmit context 2 (FI_TRIGGER in its flags) and
 * a triggered receive of receive context 2 (FI_TRIGGER in its op flags,
 * the plain fi_recv) wait for their thresholds. */
static int case_trigger(void)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_triggered_context tcs = {FI_TRIGGER_THRESHOLD},
				    tcr = {FI_TRIGGER_THRESHOLD};
	uint32_t sv = 0x5e9, rv = 0;
	struct iovec iov = {&sv, 4};
	struct fi_msg msg = {.msg_iov = &iov,
			     .iov_count = 1,
			     .addr = fi_rx_addr(S->addr, 2, BITS),
			     .context = &tcs};
	uint64_t rx = FI_RECV;
	struct fid_cntr *c = NULL;
	void *ctx;
	int ok = 0;

	CHECK(!fi_cntr_open(domain, &attr, &c, NULL), "cntr");
	tcr.trigger.threshold = (struct fi_trigger_threshold){c, 1};
	tcs.trigger.threshold = (struct fi_trigger_threshold){c, 2};
	CHECK(!fi_control(&S->rx[2]->fid, FI_GETOPSFLAG, &rx), "getopsflag");
	rx |= FI_RECV | FI_TRIGGER;
	CHECK(!fi_control(&S->rx[2]->fid, FI_SETOPSFLAG, &rx), "setopsflag");
	CHECK(!fi_recv(S->rx[2], &rv, 4, NULL, FI_ADDR_UNSPEC, &tcr), "recv");
	rx &= ~(uint64_t)FI_TRIGGER;
	CHECK(!fi_control(&S->rx[2]->fid, FI_SETOPSFLAG, &rx), "clear");
	/* a transmit context still receives nothing */
	rx |= FI_TRIGGER;
	CHECK(!fi_control(&C->tx[2]->fid, FI_SETOPSFLAG, &rx) &&
		      fi_recv(C->tx[2], &rv, 4, NULL, FI_ADDR_UNSPEC, &tcr) ==
			      -FI_ENOSYS,
	      "recv on a transmit context");
	rx &= ~(uint64_t)FI_TRIGGER;
	CHECK(!fi_control(&C->tx[2]->fid, FI_SETOPSFLAG, &rx), "clear tx");
	CHECK(!fi_sendmsg(C->tx[2], &msg, FI_TRIGGER), "sendmsg");
	CHECK(cq_quiet(C->txcq[2]) && cq_quiet(S->rxcq[2]),
	      "ran below the threshold");
	fi_cntr_add(c, 1);
	CHECK(cq_quiet(C->txcq[2]) && cq_quiet(S->rxcq[2]), "sent at 1");
	fi_cntr_add(c, 1);
	CHECK(!cq_wait(C->txcq[2], &ctx) && ctx == &tcs, "send completion");
	CHECK(!cq_wait(S->rxcq[2], &ctx) && ctx == &tcr, "recv completion");
	CHECK(rv == sv, "got %x", rv);
	ok = 1;
out:
	if (c)
		fi_close(&c->fid);
	return ok ? 0 : -1;
}

/* One scalable endpoint given traffic both ways and closed with it in
 * flight; @sent counts the client's sends. */
static int churn_one(struct fid_cq *cq, int *sent)
{
	uint8_t rbuf[2][64], sbuf[64] = {1};
	struct fid_ep *sep = NULL, *tx[2] = {NULL}, *rx[2] = {NULL};
	char name[64];
	size_t len = sizeof(name);
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	int i, ok = 0;

	CHECK(!fi_scalable_ep(domain, info, &sep, NULL), "sep");
	CHECK(!fi_scalable_ep_bind(sep, &av->fid, 0), "bind");
	for (i = 0; i < 2; i++) {
		CHECK(!fi_tx_context(sep, i, NULL, &tx[i], NULL) &&
			      !fi_ep_bind(tx[i], &cq->fid, FI_TRANSMIT) &&
			      !fi_enable(tx[i]),
		      "tx ctx");
		CHECK(!fi_rx_context(sep, i, NULL, &rx[i], NULL) &&
			      !fi_ep_bind(rx[i], &cq->fid, FI_RECV) &&
			      !fi_enable(rx[i]),
		      "rx ctx");
	}
	CHECK(!fi_enable(sep) && !fi_getname(&sep->fid, name, &len), "name");
	CHECK(fi_av_insert(av, name, 1, &addr, 0, NULL) == 1, "insert");
	/* rx 0 has a receive, rx 1's messages are unexpected */
	for (i = 0; i < 2; i++)
		CHECK(!fi_recv(rx[0], rbuf[i], sizeof(rbuf[i]), NULL,
			       FI_ADDR_UNSPEC, NULL),
		      "recv");
	for (i = 0; i < 4; i++) {
		CHECK(!send_to(cli.tx[2], sbuf, sizeof(sbuf),
			       fi_rx_addr(addr, i % 2, BITS), NULL),
		      "cli send");
		(*sent)++;
	}
	/* and it sends to the client's unused receive context 3 */
	for (i = 0; i < 2; i++)
		CHECK(!send_to(tx[i], sbuf, sizeof(sbuf),
			       fi_rx_addr(cli.addr, 3, BITS), NULL),
		      "sep send");
	ok = 1;
out:
	for (i = 0; i < 2; i++) {
		if (rx[i] && fi_close(&rx[i]->fid))
			ok = 0;
		if (tx[i] && fi_close(&tx[i]->fid))
			ok = 0;
	}
	if (sep && fi_close(&sep->fid))
		ok = 0;
	if (addr != FI_ADDR_NOTAVAIL && fi_av_remove(av, &addr, 1, 0))
		ok = 0;
	return ok ? 0 : -1;
}

static int case_churn(void)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fid_cq *cq = NULL;
	int n, sent = 0, ok = 0, ret;

	/* client rx 3 drops what the churned endpoints send it */
	fi_close(&cli.rx[3]->fid);
	cli.rx[3] = NULL;
	CHECK(!fi_cq_open(domain, &cq_attr, &cq, NULL), "cq");
	for (n = 0; n < CHURN; n++)
		CHECK(!churn_one(cq, &sent), "round %d", n);
	/* every send of the client completes, maybe in error */
	for (n = 0; n < sent; n++) {
		ret = cq_wait(cli.txcq[2], NULL);
		CHECK(ret != -FI_ETIMEDOUT, "send %d of %d: no completion", n,
		      sent);
	}
	fi_close(&cq->fid);
	cq = NULL;
	CHECK(!ctx_open(&cli, 3, false), "reopen");
	/* and the client still talks to the server */
	CHECK(!case_routing(), "routing after churn");
	ok = 1;
out:
	if (cq)
		fi_close(&cq->fid);
	return ok ? 0 : -1;
}

static int case_refuse(void)
{
	struct fi_av_attr attr = {.type = FI_AV_TABLE, .rx_ctx_bits = 17};
	struct fi_info *hints = fi_allocinfo(), *tcp = NULL;
	struct fid_fabric *tf = NULL;
	struct fid_domain *td = NULL;
	struct fid_ep *ep;
	struct fid_av *bad;
	int ok = 0, ret;

	CHECK(fi_av_open(domain, &attr, &bad, NULL) == -FI_EINVAL, "bits 17");
	CHECK(fi_tx_context(srv.sep, NCTX, NULL, &ep, NULL) == -FI_EINVAL,
	      "index");
	CHECK(fi_rx_context(srv.sep, 0, NULL, &ep, NULL) == -FI_EBUSY, "twice");
	CHECK(fi_close(&srv.sep->fid) == -FI_EBUSY, "sep closed first");
	/* sockets_dgram.c's, up to 16 contexts like RDM's */
	info->ep_attr->type = FI_EP_DGRAM;
	info->ep_attr->rx_ctx_cnt = 17;
	ret = fi_scalable_ep(domain, info, &ep, NULL);
	info->ep_attr->type = FI_EP_RDM;
	info->ep_attr->rx_ctx_cnt = NCTX;
	CHECK(ret == -FI_EINVAL, "dgram sep: %d", ret);
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->ep_attr->type = FI_EP_RDM;
	CHECK(!fi_getinfo(SOCKETS_VER, NULL, NULL, 0, hints, &tcp), "tcp");
	CHECK(!fi_fabric(tcp->fabric_attr, &tf, NULL) &&
		      !fi_domain(tf, tcp, &td, NULL),
	      "tcp domain");
	CHECK(fi_scalable_ep(td, tcp, &ep, NULL) == -FI_ENOSYS, "tcp sep");
	attr.rx_ctx_bits = 2;
	CHECK(fi_av_open(td, &attr, &bad, NULL) == -FI_ENOSYS, "tcp bits");
	ok = 1;
out:
	if (td)
		fi_close(&td->fid);
	if (tf)
		fi_close(&tf->fid);
	fi_freeinfo(tcp);
	fi_freeinfo(hints);
	return ok ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* FI_EP_MSG scalable endpoints (fi_sockets(7): dest_addr names the
 * peer's receive context as fi_rx_addr(0, j, 16)). */

#define MCTX  2
#define MBITS 16
#define MTAG  0x18f00

struct mside {
	struct fid_eq *eq;
	struct fid_ep *sep, *tx[MCTX], *rx[MCTX];
	struct fid_cq *txcq[MCTX], *rxcq[MCTX];
};

static struct fid_fabric *mfabric;
static struct fid_domain *mdomain;

/* The next event of @eq within DEADLINE: its number, <0 on error. */
static int meq_wait(struct fid_eq *eq, struct fi_eq_cm_entry *e, size_t len)
{
	uint64_t end = now_ms() + DEADLINE;
	uint32_t event;
	ssize_t n;

	do {
		n = fi_eq_read(eq, &event, e, len, 0);
		if (n >= 0)
			return (int)event;
		if (n != -FI_EAGAIN)
			return (int)n;
		usleep(1000);
	} while (now_ms() < end);
	return -FI_ETIMEDOUT;
}

static int mside_open(struct mside *s, struct fi_info *fi)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	int i, ret;

	fi->ep_attr->tx_ctx_cnt = MCTX;
	fi->ep_attr->rx_ctx_cnt = MCTX;
	ret = fi_eq_open(mfabric, &eq_attr, &s->eq, NULL) ?:
		      fi_scalable_ep(mdomain, fi, &s->sep, NULL) ?:
		      fi_scalable_ep_bind(s->sep, &s->eq->fid, 0);
	for (i = 0; !ret && i < MCTX; i++)
		ret = fi_cq_open(mdomain, &cq_attr, &s->txcq[i], NULL) ?:
			      fi_cq_open(mdomain, &cq_attr, &s->rxcq[i], NULL) ?:
			      fi_tx_context(s->sep, i, NULL, &s->tx[i], NULL) ?:
			      fi_rx_context(s->sep, i, NULL, &s->rx[i], NULL) ?:
			      fi_ep_bind(s->tx[i], &s->txcq[i]->fid,
					 FI_TRANSMIT) ?:
			      fi_ep_bind(s->rx[i], &s->rxcq[i]->fid, FI_RECV) ?:
			      fi_enable(s->tx[i]) ?:
			      fi_enable(s->rx[i]);
	return ret ?: fi_enable(s->sep);
}

/* Every close returns 0: contexts, then the SEP, then their CQs. */
static int mside_close(struct mside *s)
{
	int i, bad = 0;

	for (i = 0; i < MCTX; i++) {
		if (s->tx[i])
			bad |= fi_close(&s->tx[i]->fid);
		if (s->rx[i])
			bad |= fi_close(&s->rx[i]->fid);
	}
	if (s->sep)
		bad |= fi_close(&s->sep->fid);
	for (i = 0; i < MCTX; i++) {
		if (s->txcq[i])
			fi_close(&s->txcq[i]->fid);
		if (s->rxcq[i])
			fi_close(&s->rxcq[i]->fid);
	}
	if (s->eq)
		fi_close(&s->eq->fid);
	memset(s, 0, sizeof(*s));
	return bad;
}

/* Client and server SEPs connected through @pep. */
static int mconnect(struct fi_info *fi, struct fid_pep *pep, struct fid_eq *peq,
		    struct mside *c, struct mside *s)
{
	struct fi_eq_cm_entry e[4];
	char name[64];
	size_t len = sizeof(name);
	int ok = 0, ev;

	CHECK(!fi_getname(&pep->fid, name, &len), "pep name");
	CHECK(!mside_open(c, fi), "client SEP");
	CHECK(fi_send(c->tx[0], name, 4, NULL, 0, NULL) == -FI_ENOTCONN,
	      "send before fi_connect");
	CHECK(!fi_connect(c->sep, name, NULL, 0), "connect");
	ev = meq_wait(peq, e, sizeof(e));
	CHECK(ev == FI_CONNREQ && e[0].info && e[0].info->handle,
	      "no FI_CONNREQ (%d)", ev);
	ev = mside_open(s, e[0].info);
	fi_freeinfo(e[0].info);
	CHECK(!ev, "server SEP: %d", ev);
	CHECK(!fi_accept(s->sep, NULL, 0), "accept");
	ev = meq_wait(c->eq, e, sizeof(e));
	CHECK(ev == FI_CONNECTED && e[0].fid == &c->sep->fid,
	      "client FI_CONNECTED (%d)", ev);
	ev = meq_wait(s->eq, e, sizeof(e));
	CHECK(ev == FI_CONNECTED && e[0].fid == &s->sep->fid,
	      "server FI_CONNECTED (%d)", ev);
	ok = 1;
out:
	return ok ? 0 : -1;
}

/* From every transmit context of @a to every receive context of @b, a
 * message and a tagged message: each arrives where it was sent. */
static int mtraffic(struct mside *a, struct mside *b)
{
	uint32_t rbuf[MCTX][2 * MCTX][2], sbuf[MCTX][MCTX][2][2];
	bool seen[MCTX][MCTX][2] = {{{false}}};
	uint32_t *m;
	void *ctx;
	int i, j, t, k, ok = 0;

	memset(rbuf, 0, sizeof(rbuf));
	for (j = 0; j < MCTX; j++)
		for (k = 0; k < MCTX; k++) {
			CHECK(!fi_recv(b->rx[j], rbuf[j][k], 8, NULL, 0,
				       rbuf[j][k]),
			      "recv");
			CHECK(!fi_trecv(b->rx[j], rbuf[j][MCTX + k], 8, NULL, 0,
					MTAG + j, 0, rbuf[j][MCTX + k]),
			      "trecv");
		}
	for (i = 0; i < MCTX; i++)
		for (j = 0; j < MCTX; j++)
			for (t = 0; t < 2; t++) {
				m = sbuf[i][j][t];
				m[0] = (uint32_t)(i << 8 | t);
				m[1] = (uint32_t)j;
				CHECK((t ? fi_tsend(a->tx[i], m, 8, NULL,
						    fi_rx_addr(0, j, MBITS),
						    MTAG + j, NULL)
					 : send_to(a->tx[i], m, 8,
						   fi_rx_addr(0, j, MBITS),
						   NULL)) == 0,
				      "send %d to %d", i, j);
			}
	for (i = 0; i < MCTX; i++)
		for (k = 0; k < 2 * MCTX; k++)
			CHECK(!cq_wait(a->txcq[i], NULL), "tx cq %d", i);
	for (j = 0; j < MCTX; j++)
		for (k = 0; k < 2 * MCTX; k++) {
			CHECK(!cq_wait(b->rxcq[j], &ctx), "rx cq %d", j);
			m = ctx;
			t = (int)(m[0] & 0xff);
			i = (int)(m[0] >> 8);
			CHECK(m[1] == (uint32_t)j && i < MCTX &&
				      t == (m >= rbuf[j][MCTX]),
			      "ctx %d got %x/%u", j, m[0], m[1]);
			CHECK(!seen[j][i][t], "twice");
			seen[j][i][t] = true;
		}
	ok = 1;
out:
	return ok ? 0 : -1;
}

/* An RMA write through @c's transmit context 1 into registered memory. */
static int mwrite(struct mside *c)
{
	uint8_t tgt[256] = {0}, src[256];
	struct fid_mr *mr = NULL;
	int i, ok = 0;

	for (i = 0; i < 256; i++)
		src[i] = (uint8_t)(i ^ 0x5a);
	CHECK(!fi_mr_reg(mdomain, tgt, sizeof(tgt), FI_REMOTE_WRITE, 0, 0x18f,
			 0, &mr, NULL),
	      "mr");
	CHECK(!fi_write(c->tx[1], src, sizeof(src), NULL, 0, 0, fi_mr_key(mr),
			NULL),
	      "write");
	CHECK(!cq_wait(c->txcq[1], NULL), "write completion");
	CHECK(!memcmp(tgt, src, sizeof(src)), "written data");
	ok = 1;
out:
	if (mr)
		fi_close(&mr->fid);
	return ok ? 0 : -1;
}

/* Sends in flight (nothing posted for them) when the client shuts down:
 * the server sees FI_SHUTDOWN and its posted receive stays posted until
 * fi_cancel, every send completes, closes return 0. */
static int mshutdown(struct mside *c, struct mside *s)
{
	static uint8_t big[4][1 << 16];
	struct fi_eq_cm_entry e[4];
	struct fi_cq_tagged_entry te;
	uint32_t never;
	int i, ok = 0, ev, ret;

	/* a receive nothing matches */
	CHECK(!fi_trecv(s->rx[1], &never, 4, NULL, 0, 1, 0, &never), "trecv");
	for (i = 0; i < 4; i++)
		CHECK(!send_to(c->tx[i % MCTX], big[i], sizeof(big[i]),
			       fi_rx_addr(0, i % MCTX, MBITS), NULL),
		      "send %d", i);
	CHECK(!fi_shutdown(c->sep, 0), "shutdown");
	ev = meq_wait(s->eq, e, sizeof(e));
	CHECK(ev == FI_SHUTDOWN && e[0].fid == &s->sep->fid,
	      "server FI_SHUTDOWN (%d)", ev);
	for (i = 0; i < 4; i++) {
		ret = cq_wait(c->txcq[i % MCTX], NULL);
		CHECK(ret != -FI_ETIMEDOUT, "send %d: no completion", i);
	}
	/* The peer's shutdown leaves it posted; fi_cancel takes it back. */
	CHECK(fi_cq_read(s->rxcq[1], &te, 1) == -FI_EAGAIN,
	      "posted receive completed by the peer's shutdown");
	CHECK(!fi_cancel(&s->rx[1]->fid, &never), "cancel");
	ret = cq_wait(s->rxcq[1], NULL);
	CHECK(ret == FI_ECANCELED, "posted receive: %d", ret);
	CHECK(send_to(c->tx[0], big[0], 8, 0, NULL) == -FI_ENOTCONN,
	      "send after shutdown");
	ok = 1;
out:
	return ok ? 0 : -1;
}

/* A client SEP without FI_NAMED_RX_CTX: whatever dest_addr says, its
 * messages go to the server's receive context 0. */
static int munnamed(struct fi_info *fi, struct fid_pep *pep, struct fid_eq *peq)
{
	uint32_t sv = 0x18f, rv[MCTX] = {0};
	struct fi_cq_tagged_entry e;
	struct mside c = {0}, s = {0};
	void *ctx;
	int j, ok = 0;

	fi->caps &= ~(uint64_t)FI_NAMED_RX_CTX;
	fi->tx_attr->caps &= ~(uint64_t)FI_NAMED_RX_CTX;
	CHECK(!mconnect(fi, pep, peq, &c, &s), "connect");
	for (j = 0; j < MCTX; j++)
		CHECK(!fi_recv(s.rx[j], &rv[j], 4, NULL, 0, &rv[j]), "recv");
	CHECK(!send_to(c.tx[1], &sv, 4, fi_rx_addr(0, 1, MBITS), NULL), "send");
	CHECK(!cq_wait(c.txcq[1], NULL), "tx");
	CHECK(!cq_wait(s.rxcq[0], &ctx) && ctx == &rv[0] && rv[0] == sv,
	      "not at context 0: %x", rv[0]);
	CHECK(fi_cq_read(s.rxcq[1], &e, 1) == -FI_EAGAIN && !rv[1],
	      "at context 1");
	ok = 1;
out:
	if (mside_close(&c) | mside_close(&s))
		ok = 0;
	return ok ? 0 : -1;
}

static int case_msg(void)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_info *hints = fi_allocinfo(), *fi = NULL;
	struct mside c = {0}, s = {0};
	struct fid_eq *peq = NULL;
	struct fid_pep *pep = NULL;
	int ok = 0;

	hints->ep_attr->type = FI_EP_MSG;
	hints->ep_attr->tx_ctx_cnt = MCTX;
	hints->ep_attr->rx_ctx_cnt = MCTX;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_NAMED_RX_CTX;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->mr_mode = 0;
	CHECK(!sockets_getinfo(hints, &fi), "MSG info");
	CHECK(fi->ep_attr->tx_ctx_cnt >= MCTX &&
		      fi->ep_attr->rx_ctx_cnt >= MCTX,
	      "contexts listed");
	CHECK(!fi_fabric(fi->fabric_attr, &mfabric, NULL) &&
		      !fi_domain(mfabric, fi, &mdomain, NULL),
	      "domain");
	CHECK(!fi_eq_open(mfabric, &eq_attr, &peq, NULL) &&
		      !fi_passive_ep(mfabric, fi, &pep, NULL) &&
		      !fi_pep_bind(pep, &peq->fid, 0) && !fi_listen(pep),
	      "listen");
	CHECK(!mconnect(fi, pep, peq, &c, &s), "connect");
	CHECK(!mtraffic(&c, &s), "client to server");
	CHECK(!mtraffic(&s, &c), "server to client");
	CHECK(!mwrite(&c), "write");
	CHECK(!mshutdown(&c, &s), "shutdown");
	CHECK(!mside_close(&c) && !mside_close(&s), "close");
	CHECK(!munnamed(fi, pep, peq), "without FI_NAMED_RX_CTX");
	ok = 1;
out:
	if (mside_close(&c) | mside_close(&s))
		ok = 0;
	if (pep)
		fi_close(&pep->fid);
	if (peq)
		fi_close(&peq->fid);
	if (mdomain)
		fi_close(&mdomain->fid);
	if (mfabric)
		fi_close(&mfabric->fid);
	mdomain = NULL;
	mfabric = NULL;
	fi_freeinfo(fi);
	return ok ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* Scalable datagram endpoints: the cases above on two DGRAM SEPs.     */

/* Two DGRAM SEPs in the same domain and AV (sockets' domain opens both
 * types), NCTX contexts each way. */
static int case_dgram_open(void)
{
	struct fi_info *hints = fi_allocinfo(), *keep = info;
	int ok = 0;

	hints->ep_attr->type = FI_EP_DGRAM;
	hints->ep_attr->tx_ctx_cnt = NCTX;
	hints->ep_attr->rx_ctx_cnt = NCTX;
	hints->caps = FI_MSG | FI_NAMED_RX_CTX | FI_TRIGGER;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	CHECK(!sockets_getinfo(hints, &info_dg), "FI_EP_DGRAM getinfo");
	CHECK(info_dg->ep_attr->rx_ctx_cnt == NCTX, "rx_ctx_cnt");
	info = info_dg;
	CHECK(!side_open(&dsrv) && !side_open(&dcli), "datagram SEPs");
	ok = 1;
out:
	info = keep;
	return ok ? 0 : -1;
}

/* @fn on the datagram pair. */
static int on_dgram(int (*fn)(void))
{
	int ret;

	if (!dsrv.sep || !dcli.sep)
		return -1;
	S = &dsrv;
	C = &dcli;
	ret = fn();
	S = &srv;
	C = &cli;
	return ret;
}

static int case_dgram_routing(void)
{
	return on_dgram(case_routing);
}

static int case_dgram_named(void)
{
	return on_dgram(case_named);
}

static int case_dgram_threads(void)
{
	return on_dgram(case_threads);
}

static int case_dgram_trigger(void)
{
	return on_dgram(case_trigger);
}

/* A datagram for a receive context that is closed is dropped; one for
 * context 0 sent after it arrives (in order on loopback: by then the
 * first was read). The index opens again. */
static int case_dgram_missing(void)
{
	uint32_t v = 7, w = 8, r0 = 0;
	struct fi_cq_tagged_entry e;
	void *ctx;
	int ok = 0;

	CHECK(dsrv.sep, "no datagram SEPs");
	CHECK(!fi_close(&dsrv.rx[3]->fid), "close");
	dsrv.rx[3] = NULL;
	CHECK(!fi_recv(dsrv.rx[0], &r0, 4, NULL, FI_ADDR_UNSPEC, &r0), "recv");
	CHECK(!send_to(dcli.tx[1], &v, 4, fi_rx_addr(dsrv.addr, 3, BITS), NULL),
	      "send to 3");
	CHECK(!send_to(dcli.tx[1], &w, 4, fi_rx_addr(dsrv.addr, 0, BITS), NULL),
	      "send to 0");
	CHECK(!cq_wait(dcli.txcq[1], NULL) && !cq_wait(dcli.txcq[1], NULL),
	      "sends complete");
	CHECK(!cq_wait(dsrv.rxcq[0], &ctx) && ctx == &r0 && r0 == w,
	      "ctx 0 got %x", r0);
	CHECK(fi_cq_read(dsrv.rxcq[3], &e, 1) == -FI_EAGAIN, "arrived at 3");
	CHECK(!ctx_open(&dsrv, 3, false), "reopen");
	ok = 1;
out:
	return ok ? 0 : -1;
}

static const struct sockets_case cases[] = {
	/* msg before churn: its own domain, untouched by churn's closes */
	{"routing", case_routing},
	{"named", case_named},
	{"threads", case_threads},
	{"missing", case_missing},
	{"msg", case_msg},
	{"churn", case_churn},
	{"refuse", case_refuse},
	{"trigger", case_trigger},
	{"dgram open", case_dgram_open},
	{"dgram routing", case_dgram_routing},
	{"dgram named", case_dgram_named},
	{"dgram threads", case_dgram_threads},
	{"dgram missing", case_dgram_missing},
	{"dgram trigger", case_dgram_trigger},
};

static int setup(void)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .rx_ctx_bits = BITS};
	struct fi_info *hints = fi_allocinfo();
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->ep_attr->tx_ctx_cnt = NCTX;
	hints->ep_attr->rx_ctx_cnt = NCTX;
	hints->caps = FI_MSG | FI_NAMED_RX_CTX | FI_TRIGGER;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->mr_mode = 0;
	ret = sockets_getinfo(hints, &info);
	if (ret)
		return ret;
	if (fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL) ||
	    fi_av_open(domain, &av_attr, &av, NULL) || side_open(&srv) ||
	    side_open(&cli))
		return 1;
	return 0;
}

static void teardown(void)
{
	side_close(&dcli);
	side_close(&dsrv);
	fi_freeinfo(info_dg);
	side_close(&cli);
	side_close(&srv);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

int main(void)
{
	return sockets_main(setup, "fi_scalable_ep and its contexts", cases,
			    sizeof(cases) / sizeof(cases[0]), teardown);
}
