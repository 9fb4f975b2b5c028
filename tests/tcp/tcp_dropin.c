/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_dropin.c - what applications written against libfabric 1.17 expect
 * of tcp (and of shm where it applies). In-process, loopback.
 *
 * Cases, each able to fail:
 *  op_flags     every tx op flag a provider honours (FI_INJECT,
 *               FI_INJECT_COMPLETE ...) and the rx ones, asked in the
 *               hints of tcp RDM, tcp MSG and shm RDM: fi_getinfo answers,
 *               with them as the defaults
 *  inject_dflt  tcp and shm RDM endpoints with FI_INJECT as a default
 *               flag: a small send's buffer is the caller's on return
 *               (overwritten at once, the receiver gets the original), a
 *               send larger than inject_size still goes
 *  pep_handle   fi_endpoint with info->handle a bound (listening) passive
 *               endpoint takes its address: fi_getname says it, a
 *               connection comes from it, the passive endpoint closes
 *  srx_msg      two accepted MSG endpoints bound to one fi_srx_context
 *               (their connectors to one fi_stx_context): receives
 *               posted to it take either connection's messages, each
 *               completing on its own endpoint's CQ; an early message
 *               waits in it; a receive posted on one endpoint serves the
 *               other; cancel; it closes after its endpoints
 *  srx_rdm      the same with two RDM endpoints (one AV) and tagged
 *               receives
 *  opsflag_samehost  FI_SETOPSFLAG on a tcp RDM endpoint holds for a
 *               peer on this host too (its same-host path): under
 *               FI_SELECTIVE_COMPLETION a send completes only while the
 *               op flags say FI_COMPLETION
 *  trywait_epoll  an application sleeping in its own epoll set on a CQ's
 *               FI_GETWAIT fd after fi_trywait returned FI_SUCCESS is
 *               woken by a receive on its MSG endpoint (a sender thread
 *               on its own domain sends while it sleeps)
 *
 * One line per case; exit status 0 when every case passed, 77 when tcp is
 * missing. DROPIN_ONLY=name runs one case. Every case runs under an
 * alarm: a hang fails the test instead of hanging make check.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "tcp_net.h"
#include "tcp_test.h"

#define WAIT_MS 5000
#define EVBUF	(sizeof(struct fi_eq_cm_entry) + 256)

/* One completion of @cq, reading @other too: 1, 0 on timeout, -1. */
static int cq_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		   struct fid_cq *other)
{
	struct fid_cq *all[2] = {other, NULL};
	int ret = cq_wait_all(cq, e, all);

	if (ret >= 0)
		return ret;
	fprintf(stderr, "  completion error: %s\n", fi_strerror(-ret));
	return -1;
}

/* ------------------------------------------------------------------ */

static const uint64_t tx_flags[] = {
	FI_INJECT,
	FI_INJECT_COMPLETE,
	FI_TRANSMIT_COMPLETE,
	FI_DELIVERY_COMPLETE,
	FI_COMPLETION,
	FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE,
};

static int op_flags_of(const char *prov, enum fi_ep_type type)
{
	struct fi_info *hints = hints_for(prov, type), *info = NULL;
	size_t i;
	int ret;

	if (!hints)
		return -1;
	for (i = 0; i < sizeof(tx_flags) / sizeof(tx_flags[0]); i++) {
		hints->tx_attr->op_flags = tx_flags[i];
		ret = getinfo(hints, &info);
		CHECK(!ret, "%s type %d tx op_flags %#llx: %s", prov, type,
		      (unsigned long long)tx_flags[i], fi_strerror(-ret));
		CHECK(info->tx_attr->op_flags == tx_flags[i],
		      "%s: defaults %#llx", prov,
		      (unsigned long long)info->tx_attr->op_flags);
		fi_freeinfo(info);
		info = NULL;
	}
	hints->tx_attr->op_flags = 0;
	hints->rx_attr->op_flags = FI_COMPLETION | FI_MULTI_RECV;
	ret = getinfo(hints, &info);
	CHECK(!ret, "%s type %d rx op_flags: %s", prov, type,
	      fi_strerror(-ret));
	fi_freeinfo(info);
	info = NULL;
	/* not a receive flag */
	hints->rx_attr->op_flags = FI_INJECT;
	CHECK(getinfo(hints, &info) == -FI_ENODATA, "%s: rx FI_INJECT", prov);
	fi_freeinfo(hints);
	return 0;
out:
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return -1;
}

static int c_op_flags(void)
{
	if (op_flags_of("tcp", FI_EP_RDM) || op_flags_of("tcp", FI_EP_MSG))
		return -1;
	return have_prov("shm") ? op_flags_of("shm", FI_EP_RDM) : 0;
}

#define BIG_LEN (256 * 1024)

static int inject_dflt_of(const char *prov)
{
	struct fi_info *hints = hints_for(prov, FI_EP_RDM);
	struct fi_cq_tagged_entry e;
	struct rdm a = {0}, b = {0};
	struct net n = {0};
	char *big = NULL, *in = NULL, small[64];
	fi_addr_t to_b;
	size_t inj;
	int ret = -1;

	CHECK(hints, "hints");
	hints->tx_attr->op_flags = FI_INJECT;
	CHECK(!net_open(&n, hints), "%s: open", prov);
	inj = n.info->tx_attr->inject_size;
	CHECK(inj >= sizeof(small), "%s: inject_size %zu", prov, inj);
	CHECK(n.info->tx_attr->op_flags & FI_INJECT, "%s: default", prov);
	CHECK(!rdm_open(&n, &a) && !rdm_open(&n, &b), "%s: endpoints", prov);
	CHECK(fi_av_insert(a.av, b.addr, 1, &to_b, 0, NULL) == 1, "av");
	big = malloc(BIG_LEN);
	in = calloc(1, BIG_LEN);
	CHECK(big && in, "malloc");

	/* small: the buffer is ours again on return */
	memset(small, 'a', sizeof(small));
	CHECK(!fi_trecv(b.ep, in, BIG_LEN, NULL, FI_ADDR_UNSPEC, 1, 0, in),
	      "trecv");
	CHECK(!fi_tsend(a.ep, small, sizeof(small), NULL, to_b, 1, small),
	      "%s: small send", prov);
	memset(small, 'z', sizeof(small));
	CHECK(cq_wait(b.cq, &e, a.cq) == 1 && e.len == sizeof(small),
	      "%s: small recv", prov);
	CHECK(in[0] == 'a' && in[sizeof(small) - 1] == 'a',
	      "%s: the receiver got the overwritten buffer", prov);
	CHECK(cq_wait(a.cq, &e, b.cq) == 1, "%s: small send completion", prov);

	/* larger than inject_size: still sent (Debian's does) */
	memset(big, 'b', BIG_LEN);
	CHECK(!fi_trecv(b.ep, in, BIG_LEN, NULL, FI_ADDR_UNSPEC, 2, 0, in),
	      "trecv");
	ret = (int)fi_tsend(a.ep, big, BIG_LEN, NULL, to_b, 2, big);
	CHECK(!ret, "%s: send of %d bytes: %s", prov, BIG_LEN,
	      fi_strerror(-ret));
	ret = -1;
	CHECK(cq_wait(b.cq, &e, a.cq) == 1 && e.len == BIG_LEN, "%s: big recv",
	      prov);
	CHECK(!memcmp(in, big, BIG_LEN), "%s: big data", prov);
	CHECK(cq_wait(a.cq, &e, b.cq) == 1, "%s: big send completion", prov);
	ret = 0;
out:
	free(big);
	free(in);
	rdm_close(&a);
	rdm_close(&b);
	net_close(&n);
	fi_freeinfo(hints);
	return ret;
}

static int c_inject_dflt(void)
{
	if (inject_dflt_of("tcp"))
		return -1;
	return have_prov("shm") ? inject_dflt_of("shm") : 0;
}

/*
 * FI_SETOPSFLAG on a tcp RDM endpoint holds for every peer, same-host
 * ones (reached through shm) too: with FI_SELECTIVE_COMPLETION, a plain
 * send completes exactly when the endpoint's op flags say FI_COMPLETION.
 */
static int c_opsflag_samehost(void)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_info *hints = hints_for("tcp", FI_EP_RDM);
	struct fi_cq_tagged_entry e;
	struct rdm a = {0}, b = {0};
	struct net n = {0};
	char in[64], out[64] = "x";
	uint64_t f;
	fi_addr_t to_b;
	int i, ret = -1;

	CHECK(hints, "hints");
	hints->tx_attr->op_flags = FI_COMPLETION;
	CHECK(!net_open(&n, hints), "open");
	CHECK(!rdm_open(&n, &b), "receiver");
	CHECK(!fi_av_open(n.domain, &av_attr, &a.av, NULL) &&
		      !fi_cq_open(n.domain, &cq_attr, &a.cq, NULL) &&
		      !fi_endpoint(n.domain, n.info, &a.ep, NULL) &&
		      !fi_ep_bind(a.ep, &a.av->fid, 0) &&
		      !fi_ep_bind(a.ep, &a.cq->fid,
				  FI_TRANSMIT | FI_RECV |
					  FI_SELECTIVE_COMPLETION) &&
		      !fi_enable(a.ep),
	      "sender");
	CHECK(fi_av_insert(a.av, b.addr, 1, &to_b, 0, NULL) == 1, "av");
	for (i = 0; i < 2; i++) {
		/* first without FI_COMPLETION, then with it again */
		f = FI_TRANSMIT | (i ? FI_COMPLETION : 0);
		CHECK(!fi_control(&a.ep->fid, FI_SETOPSFLAG, &f), "setopsflag");
		CHECK(!fi_trecv(b.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, i,
				0, in),
		      "trecv");
		do {
			ret = (int)fi_tsend(a.ep, out, sizeof(out), NULL, to_b,
					    i, out);
			if (ret == -FI_EAGAIN)
				(void)fi_cq_read(a.cq, &e, 0);
		} while (ret == -FI_EAGAIN);
		CHECK(!ret, "tsend: %s", fi_strerror(-ret));
		ret = -1;
		CHECK(cq_wait(b.cq, &e, a.cq) == 1, "recv %d", i);
		if (i) {
			CHECK(cq_wait(a.cq, &e, b.cq) == 1 &&
				      e.op_context == out,
			      "no send completion with FI_COMPLETION");
			continue;
		}
		usleep(20000); /* the sender has written all it will */
		CHECK(fi_cq_read(a.cq, &e, 1) == -FI_EAGAIN,
		      "a send completion without FI_COMPLETION");
	}
	ret = 0;
out:
	rdm_close(&a);
	rdm_close(&b);
	net_close(&n);
	fi_freeinfo(hints);
	return ret;
}

/* ------------------------------------------------------------------ */
/* FI_EP_MSG.                                                           */

struct msg_side {
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static int eq_open(struct net *n, struct fid_eq **eq)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC};

	return fi_eq_open(n->fabric, &attr, eq, NULL);
}

/* The wait object of the CQs msg_open opens, and the shared contexts
 * it binds the endpoint to (when set). */
static enum fi_wait_obj msg_cq_wait = FI_WAIT_NONE;
static struct fid_ep *msg_srx;
static struct fid_stx *msg_stx;

/* An MSG endpoint of @info (a FI_CONNREQ's, or one naming a pep). */
static int msg_open(struct net *n, struct fi_info *info, struct msg_side *s)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
				     .wait_obj = msg_cq_wait};
	int ret;

	memset(s, 0, sizeof(*s));
	ret = eq_open(n, &s->eq);
	ret = ret ? ret : fi_cq_open(n->domain, &cq_attr, &s->cq, NULL);
	ret = ret ? ret : fi_endpoint(n->domain, info, &s->ep, NULL);
	ret = ret ? ret : fi_ep_bind(s->ep, &s->eq->fid, 0);
	ret = ret ? ret : fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret && msg_srx)
		ret = fi_ep_bind(s->ep, &msg_srx->fid, 0);
	if (!ret && msg_stx)
		ret = fi_ep_bind(s->ep, &msg_stx->fid, 0);
	return ret ? ret : fi_enable(s->ep);
}

static void msg_close(struct msg_side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	if (s->eq)
		fi_close(&s->eq->fid);
	memset(s, 0, sizeof(*s));
}

struct msg_listener {
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct sockaddr_in name;
};

static int listener_open(struct net *n, struct msg_listener *l)
{
	size_t len = sizeof(l->name);
	int ret;

	memset(l, 0, sizeof(*l));
	ret = eq_open(n, &l->eq);
	ret = ret ? ret : fi_passive_ep(n->fabric, n->info, &l->pep, NULL);
	ret = ret ? ret : fi_pep_bind(l->pep, &l->eq->fid, 0);
	ret = ret ? ret : fi_listen(l->pep);
	return ret ? ret : fi_getname(&l->pep->fid, &l->name, &len);
}

static void listener_close(struct msg_listener *l)
{
	if (l->pep)
		fi_close(&l->pep->fid);
	if (l->eq)
		fi_close(&l->eq->fid);
	memset(l, 0, sizeof(*l));
}

/* One event of @eq within WAIT_MS, progressing the others' EQs. */
static int eq_wait(struct fid_eq *eq, void *buf, struct fid_eq *o1,
		   struct fid_eq *o2)
{
	uint64_t end = now_ms() + WAIT_MS;
	uint8_t x[EVBUF];
	uint32_t event;
	ssize_t n;

	do {
		n = fi_eq_read(eq, &event, buf, EVBUF, 0);
		if (n >= 0)
			return (int)event;
		if (n != -FI_EAGAIN)
			return (int)n;
		if (o1)
			(void)fi_eq_read(o1, &event, x, EVBUF, FI_PEEK);
		if (o2)
			(void)fi_eq_read(o2, &event, x, EVBUF, FI_PEEK);
		usleep(1000);
	} while (now_ms() < end);
	return -FI_EAGAIN;
}

/*
 * Connects @c (open) to @l and accepts into @a: 0 or -1. The connector's
 * source address in *@from when not NULL.
 */
static int msg_connect(struct net *n, struct msg_listener *l,
		       struct msg_side *c, struct msg_side *a,
		       struct sockaddr_in *from)
{
	uint8_t buf[EVBUF];
	struct fi_eq_cm_entry *e = (void *)buf;
	int ev;

	CHECK(!fi_connect(c->ep, &l->name, NULL, 0), "connect");
	ev = eq_wait(l->eq, buf, c->eq, NULL);
	CHECK(ev == FI_CONNREQ, "no FI_CONNREQ (%d)", ev);
	if (from)
		memcpy(from, e->info->dest_addr, sizeof(*from));
	ev = msg_open(n, e->info, a);
	fi_freeinfo(e->info);
	CHECK(!ev, "acceptor open");
	CHECK(!fi_accept(a->ep, NULL, 0), "accept");
	ev = eq_wait(c->eq, buf, a->eq, l->eq);
	CHECK(ev == FI_CONNECTED, "connector: no FI_CONNECTED (%d)", ev);
	ev = eq_wait(a->eq, buf, c->eq, l->eq);
	CHECK(ev == FI_CONNECTED, "acceptor: no FI_CONNECTED (%d)", ev);
	return 0;
out:
	return -1;
}

static int c_pep_handle(void)
{
	struct fi_info *hints = hints_for("tcp", FI_EP_MSG), *ainfo = NULL;
	struct sockaddr_in name, got, from;
	struct msg_listener srv = {0};
	struct msg_side c = {0}, a = {0};
	struct fi_cq_tagged_entry e;
	struct fid_eq *peq = NULL;
	struct fid_pep *pep = NULL;
	struct net n = {0};
	char in[16] = {0};
	size_t len;
	int ret = -1;

	CHECK(hints && !net_open(&n, hints), "open");
	CHECK(!listener_open(&n, &srv), "server listens");
	/* the reserved address: a pep listening on a kernel-chosen port */
	CHECK(!eq_open(&n, &peq), "eq");
	CHECK(!fi_passive_ep(n.fabric, n.info, &pep, NULL), "pep");
	CHECK(!fi_pep_bind(pep, &peq->fid, 0) && !fi_listen(pep), "listen");
	len = sizeof(name);
	CHECK(!fi_getname(&pep->fid, &name, &len) && name.sin_port, "name");
	ainfo = fi_dupinfo(n.info);
	CHECK(ainfo, "dupinfo");
	ainfo->handle = &pep->fid;
	ret = msg_open(&n, ainfo, &c);
	CHECK(!ret, "fi_endpoint with a pep handle: %s", fi_strerror(-ret));
	ret = -1;
	len = sizeof(got);
	CHECK(!fi_getname(&c.ep->fid, &got, &len) &&
		      got.sin_port == name.sin_port,
	      "getname: port %u, the pep's %u", ntohs(got.sin_port),
	      ntohs(name.sin_port));
	/* the pep gave its address up (once); closing it leaves the
	 * endpoint */
	CHECK(fi_listen(pep) == -FI_EOPBADSTATE, "pep still listens");
	CHECK(fi_endpoint(n.domain, ainfo, &a.ep, NULL) == -FI_EINVAL,
	      "the address given twice");
	CHECK(!fi_close(&pep->fid), "pep close");
	pep = NULL;
	CHECK(!msg_connect(&n, &srv, &c, &a, &from), "connect");
	CHECK(from.sin_port == name.sin_port,
	      "connection from port %u, not the pep's %u", ntohs(from.sin_port),
	      ntohs(name.sin_port));
	CHECK(!fi_recv(a.ep, in, sizeof(in), NULL, 0, in), "recv");
	CHECK(!fi_send(c.ep, "hello", 6, NULL, 0, NULL), "send");
	CHECK(cq_wait(a.cq, &e, c.cq) == 1 && !strcmp(in, "hello"), "data");
	ret = 0;
out:
	if (ainfo)
		ainfo->handle = NULL;
	fi_freeinfo(ainfo);
	msg_close(&c);
	msg_close(&a);
	if (pep)
		fi_close(&pep->fid);
	if (peq)
		fi_close(&peq->fid);
	listener_close(&srv);
	net_close(&n);
	fi_freeinfo(hints);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Shared receive (and transmit) contexts.                              */

/* Nothing on @cq for a while (progressing @all). */
static bool cq_quiet(struct fid_cq *cq, struct fid_cq **all)
{
	struct fi_cq_tagged_entry x;
	uint64_t end = now_ms() + 100;
	size_t i;

	do {
		if (fi_cq_read(cq, &x, 1) != -FI_EAGAIN)
			return false;
		for (i = 0; all[i]; i++)
			if (all[i] != cq)
				(void)fi_cq_read(all[i], &x, 0);
	} while (now_ms() < end);
	return true;
}

static struct fi_info *srx_hints(enum fi_ep_type type)
{
	struct fi_info *hints = hints_for("tcp", type);

	if (hints) {
		hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
		hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
		hints->domain_attr->max_ep_srx_ctx = 1;
		hints->domain_attr->max_ep_stx_ctx = 1;
	}
	return hints;
}

/*
 * Two MSG connections accepted into endpoints bound to one srx (the
 * connectors bound to one stx): receives posted to the srx take either
 * connection's messages, each completing on the CQ of the endpoint it
 * came on; a message before any receive waits in the srx and a later
 * receive takes it; a receive posted on one endpoint takes the other's
 * message; cancel; the srx closes after its endpoints.
 */
static int c_srx_msg(void)
{
	struct fi_info *hints = srx_hints(FI_EP_MSG);
	struct fi_rx_attr rx_attr = {.size = 16};
	struct msg_side c1 = {0}, c2 = {0}, a1 = {0}, a2 = {0};
	struct fid_cq *all[5] = {NULL};
	struct fi_cq_tagged_entry e;
	struct msg_listener l = {0};
	struct fid_stx *stx = NULL;
	struct fid_ep *srx = NULL;
	struct net ns = {0}, nc = {0};
	char buf[4][16];
	int ret = -1, r;

	memset(buf, 0, sizeof(buf));
	CHECK(hints, "hints");
	r = net_open(&ns, hints);
	CHECK(!r, "getinfo with shared contexts: %s", fi_strerror(-r));
	CHECK(!net_open(&nc, hints), "open");
	r = fi_srx_context(ns.domain, &rx_attr, &srx, NULL);
	CHECK(!r, "fi_srx_context: %s", fi_strerror(-r));
	r = fi_stx_context(nc.domain, NULL, &stx, NULL);
	CHECK(!r, "fi_stx_context: %s", fi_strerror(-r));
	CHECK(!listener_open(&ns, &l), "listen");
	msg_stx = stx;
	r = msg_open(&nc, nc.info, &c1) || msg_open(&nc, nc.info, &c2);
	msg_stx = NULL;
	CHECK(!r, "connectors on the stx");
	msg_srx = srx;
	r = msg_connect(&ns, &l, &c1, &a1, NULL) ||
	    msg_connect(&ns, &l, &c2, &a2, NULL);
	msg_srx = NULL;
	CHECK(!r, "acceptors on the srx");
	all[0] = a1.cq;
	all[1] = a2.cq;
	all[2] = c1.cq;
	all[3] = c2.cq;

	/* two receives on the srx, one message on each connection */
	CHECK(!fi_recv(srx, buf[0], 16, NULL, 0, buf[0]) &&
		      !fi_recv(srx, buf[1], 16, NULL, 0, buf[1]),
	      "srx recv");
	CHECK(!fi_send(c2.ep, "to two", 7, NULL, 0, NULL), "send c2");
	CHECK(cq_wait_all(a2.cq, &e, all) == 1 && e.op_context == buf[0] &&
		      !strcmp(buf[0], "to two"),
	      "c2's message: not in the first srx receive on a2's CQ");
	CHECK(!fi_send(c1.ep, "to one", 7, NULL, 0, NULL), "send c1");
	CHECK(cq_wait_all(a1.cq, &e, all) == 1 && e.op_context == buf[1] &&
		      !strcmp(buf[1], "to one"),
	      "c1's message: not in the second srx receive on a1's CQ");
	CHECK(cq_wait_all(c1.cq, &e, all) == 1 &&
		      cq_wait_all(c2.cq, &e, all) == 1,
	      "send completions");

	/* unexpected at a2, taken by a receive posted to the srx */
	CHECK(!fi_send(c2.ep, "early", 6, NULL, 0, NULL), "send early");
	CHECK(cq_wait_all(c2.cq, &e, all) == 1, "early send completion");
	CHECK(!fi_recv(srx, buf[2], 16, NULL, 0, buf[2]), "srx recv");
	CHECK(cq_wait_all(a2.cq, &e, all) == 1 && e.op_context == buf[2] &&
		      !strcmp(buf[2], "early"),
	      "the early message");

	/* a receive posted on a1 is the srx's: c2's message takes it */
	CHECK(!fi_recv(a1.ep, buf[3], 16, NULL, 0, buf[3]), "recv on a1");
	CHECK(!fi_send(c2.ep, "via a1", 7, NULL, 0, NULL), "send");
	CHECK(cq_wait_all(a2.cq, &e, all) == 1 && e.op_context == buf[3] &&
		      !strcmp(buf[3], "via a1"),
	      "a1's receive not shared");
	CHECK(cq_quiet(a1.cq, all), "a1 completed another's message");

	/* cancel: the first bound endpoint's CQ reports it */
	CHECK(!fi_recv(srx, buf[0], 16, NULL, 0, buf[0]), "srx recv");
	CHECK(!fi_cancel(&srx->fid, buf[0]), "cancel");
	CHECK(cq_wait_all(a1.cq, &e, all) == -FI_ECANCELED &&
		      e.op_context == buf[0],
	      "no FI_ECANCELED");
	CHECK(fi_cancel(&srx->fid, buf[0]) == -FI_ENOENT, "cancel twice");
	CHECK(fi_close(&srx->fid) == -FI_EBUSY, "srx closed while bound");
	CHECK(fi_close(&stx->fid) == -FI_EBUSY, "stx closed while bound");
	ret = 0;
out:
	msg_close(&c1);
	msg_close(&c2);
	msg_close(&a1);
	msg_close(&a2);
	if (srx && fi_close(&srx->fid))
		ret = -1;
	if (stx && fi_close(&stx->fid))
		ret = -1;
	listener_close(&l);
	net_close(&nc);
	net_close(&ns);
	fi_freeinfo(hints);
	return ret;
}

/*
 * RDM: two endpoints sharing an AV and an srx, two senders; tagged
 * receives on the srx take messages from either, each completing on its
 * endpoint's CQ, in post order.
 */
static int c_srx_rdm(void)
{
	struct fi_info *hints = srx_hints(FI_EP_RDM);
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_rx_attr rx_attr = {.size = 16};
	struct fid_ep *r[2] = {NULL}, *srx = NULL;
	struct fid_cq *rcq[2] = {NULL}, *all[5] = {NULL};
	struct rdm s1 = {0}, s2 = {0};
	struct fi_cq_tagged_entry e;
	uint8_t addr[2][128];
	struct fid_av *av = NULL;
	struct net n = {0};
	fi_addr_t to[2];
	char buf[3][16];
	size_t len;
	int i, ret = -1;

	memset(buf, 0, sizeof(buf));
	CHECK(hints && !net_open(&n, hints), "open");
	CHECK(!fi_srx_context(n.domain, &rx_attr, &srx, NULL), "srx");
	CHECK(!fi_av_open(n.domain, &av_attr, &av, NULL), "av");
	for (i = 0; i < 2; i++) {
		len = sizeof(addr[i]);
		CHECK(!fi_cq_open(n.domain, &cq_attr, &rcq[i], NULL) &&
			      !fi_endpoint(n.domain, n.info, &r[i], NULL) &&
			      !fi_ep_bind(r[i], &av->fid, 0) &&
			      !fi_ep_bind(r[i], &rcq[i]->fid,
					  FI_TRANSMIT | FI_RECV) &&
			      !fi_ep_bind(r[i], &srx->fid, 0) &&
			      !fi_enable(r[i]) &&
			      !fi_getname(&r[i]->fid, addr[i], &len),
		      "receiver %d", i);
	}
	CHECK(fi_ep_bind(r[0], &srx->fid, 0) == -FI_EINVAL, "bound twice");
	CHECK(!rdm_open(&n, &s1) && !rdm_open(&n, &s2), "senders");
	CHECK(fi_av_insert(s1.av, addr[0], 1, &to[0], 0, NULL) == 1 &&
		      fi_av_insert(s2.av, addr[1], 1, &to[1], 0, NULL) == 1,
	      "av");
	all[0] = rcq[0];
	all[1] = rcq[1];
	all[2] = s1.cq;
	all[3] = s2.cq;
	for (i = 0; i < 3; i++)
		CHECK(!fi_trecv(srx, buf[i], 16, NULL, FI_ADDR_UNSPEC, 9, 0,
				buf[i]),
		      "srx trecv");
	CHECK(!fi_tsend(s2.ep, "s2", 3, NULL, to[1], 9, NULL), "tsend s2");
	CHECK(cq_wait_all(rcq[1], &e, all) == 1 && e.op_context == buf[0] &&
		      e.tag == 9 && !strcmp(buf[0], "s2"),
	      "s2's message not in the first receive on r1's CQ");
	CHECK(!fi_tsend(s1.ep, "s1", 3, NULL, to[0], 9, NULL), "tsend s1");
	CHECK(cq_wait_all(rcq[0], &e, all) == 1 && e.op_context == buf[1] &&
		      !strcmp(buf[1], "s1"),
	      "s1's message not in the second receive on r0's CQ");
	CHECK(!fi_tsend(s1.ep, "s1b", 4, NULL, to[0], 9, NULL), "tsend s1");
	CHECK(cq_wait_all(rcq[0], &e, all) == 1 && e.op_context == buf[2] &&
		      !strcmp(buf[2], "s1b"),
	      "third receive");
	CHECK(cq_quiet(rcq[1], all), "r1 completed another's message");
	ret = 0;
out:
	rdm_close(&s1);
	rdm_close(&s2);
	for (i = 0; i < 2; i++) {
		if (r[i])
			fi_close(&r[i]->fid);
		if (rcq[i])
			fi_close(&rcq[i]->fid);
	}
	if (srx && fi_close(&srx->fid))
		ret = -1;
	if (av)
		fi_close(&av->fid);
	net_close(&n);
	fi_freeinfo(hints);
	return ret;
}

/* ------------------------------------------------------------------ */

/* The sender of trywait_epoll: sends once the receiver sleeps. */
struct epoll_sender {
	struct msg_side *c;
	int ret;
};

static void *epoll_send(void *arg)
{
	struct epoll_sender *s = arg;
	struct fi_cq_tagged_entry e;

	usleep(300 * 1000);
	s->ret = (int)fi_send(s->c->ep, "wake up", 8, NULL, 0, NULL);
	if (!s->ret && cq_wait(s->c->cq, &e, NULL) != 1)
		s->ret = -FI_ETIMEDOUT;
	return NULL;
}

/*
 * An application with its own epoll set holding the receiving CQ's
 * FI_GETWAIT fd sleeps there once fi_trywait said it may; a send from
 * another thread (its own domain) must wake it.
 */
static int c_trywait_epoll(void)
{
	struct fi_info *hints = hints_for("tcp", FI_EP_MSG);
	struct epoll_event ev = {.events = EPOLLIN};
	struct epoll_sender snd = {0};
	struct msg_listener l = {0};
	struct msg_side c = {0}, a = {0};
	struct fi_cq_tagged_entry e;
	struct net ns = {0}, nc = {0};
	bool started = false;
	char in[16] = {0};
	pthread_t th;
	int fd = -1, epfd = -1, tries, n, ret = -1;
	ssize_t rd = 0;

	CHECK(hints && !net_open(&ns, hints) && !net_open(&nc, hints), "open");
	CHECK(!listener_open(&ns, &l), "listen");
	CHECK(!msg_open(&nc, nc.info, &c), "connector");
	msg_cq_wait = FI_WAIT_FD;
	ret = msg_connect(&ns, &l, &c, &a, NULL);
	msg_cq_wait = FI_WAIT_NONE;
	CHECK(!ret, "connect");
	ret = -1;
	CHECK(!fi_control(&a.cq->fid, FI_GETWAIT, &fd) && fd >= 0, "getwait");
	epfd = epoll_create1(0);
	CHECK(epfd >= 0 && !epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev), "epoll");
	CHECK(!fi_recv(a.ep, in, sizeof(in), NULL, 0, in), "recv");
	snd.c = &c;
	CHECK(!pthread_create(&th, NULL, epoll_send, &snd), "thread");
	started = true;
	for (tries = 0; tries < 100; tries++) {
		struct fid *fids[1] = {&a.cq->fid};

		n = fi_trywait(ns.fabric, fids, 1);
		CHECK(!n || n == -FI_EAGAIN, "trywait: %d", n);
		if (!n) {
			n = epoll_wait(epfd, &ev, 1, 10000);
			CHECK(n == 1, "not woken (%d)", n);
		}
		rd = fi_cq_read(a.cq, &e, 1);
		if (rd == 1)
			break;
		CHECK(rd == -FI_EAGAIN, "cq_read: %zd", rd);
	}
	CHECK(rd == 1 && e.op_context == in && !strcmp(in, "wake up"),
	      "no receive completion");
	ret = 0;
out:
	if (started) {
		pthread_join(th, NULL);
		if (snd.ret) {
			fprintf(stderr, "  sender: %s\n",
				fi_strerror(-snd.ret));
			ret = -1;
		}
	}
	if (epfd >= 0)
		close(epfd);
	msg_close(&c);
	msg_close(&a);
	listener_close(&l);
	net_close(&nc);
	net_close(&ns);
	fi_freeinfo(hints);
	return ret;
}

/* ------------------------------------------------------------------ */

struct tcase {
	const char *name;
	int (*fn)(void);
};

static const struct tcase cases[] = {
	{"op_flags", c_op_flags},
	{"inject_dflt", c_inject_dflt},
	{"pep_handle", c_pep_handle},
	{"trywait_epoll", c_trywait_epoll},
	{"srx_msg", c_srx_msg},
	{"srx_rdm", c_srx_rdm},
	{"opsflag_samehost", c_opsflag_samehost},
};

int main(void)
{
	const char *only = getenv("DROPIN_ONLY");
	int failures = 0;
	size_t i;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	if (!have_prov("tcp")) {
		printf("SKIP: no tcp provider\n");
		return 77;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		alarm(60); /* a hang fails the test */
		ret = cases[i].fn();
		alarm(0);
		if (ret)
			failures++;
		printf("%s %s\n", ret ? "FAIL" : "PASS", cases[i].name);
		fflush(stdout);
	}
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
