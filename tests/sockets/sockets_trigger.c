/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_trigger.c - triggered operations, deferred work, FI_FENCE and
 * counters of the sockets provider, through the public API in-process:
 * two FI_THREAD_SAFE RDM endpoints A (initiator) and B (target) on
 * loopback, B's memory registered with key 7 (offsets, mr_mode 0).
 *
 *  trig     FI_TRIGGER on sendmsg, trecvmsg, writemsg, readmsg, atomicmsg,
 *           fetch and compare: nothing happens below the threshold, the
 *           operation runs (its completion names the triggered context)
 *           once the counter reaches it; an XPU trigger -FI_ENOSYS;
 *           fi_cancel of one not started (FI_ECANCELED)
 *  opflags  FI_TRIGGER in the op flags (FI_SETOPSFLAG, tx_attr's
 *           op_flags): fi_send, fi_write, fi_atomic, fi_fetch_atomic and
 *           fi_trecv take a struct fi_triggered_context and wait for it
 *  order    triggered sends with thresholds 3, 1, 2, 2 arrive in the
 *           order 1, 2, 2, 3 when the counter jumps to 3
 *  work     FI_QUEUE_WORK of every op type fi_trigger(3) lists: not
 *           before the threshold (success plus error count), then one
 *           completion counter increment and no CQ entry or endpoint
 *           counter increment (a CQ entry with FI_COMPLETION); counter
 *           set/add; a tcp domain answers -FI_ENOSYS
 *  cancel   FI_CANCEL_WORK drops one request (-FI_ENOENT the second
 *           time), FI_FLUSH_WORK those of one counter, then all; closing
 *           a counter or an endpoint drops the work that names it
 *  fence    (tcp route, manual progress) a fenced write waits with
 *           -FI_EAGAIN while an earlier read is unanswered, an unfenced
 *           one does not; the fenced one goes once the read completed
 *  threads  4 threads queue triggered tagged sends and deferred counter
 *           adds while 2 others step the counter: every message arrives,
 *           each thread's in threshold order, every add done
 *  features what tcp's engine gives sockets: FI_MULTI_RECV with
 *           FI_OPT_MIN_MULTI_RECV, FI_RMA_EVENT (remote write counter,
 *           writedata's CQ entry at the target), FI_INT128/FI_UINT128
 *           fetch and compare atomics; 8 iovs (iov_limit and
 *           rma_iov_limit): sendv into recvv, writemsg, writev, readv
 *  cntr     each counter wait object (UNSPEC, MUTEX_COND, YIELD, FD):
 *           -FI_ETIMEDOUT, a wake by another thread, 64-bit values; an
 *           FD counter's fd in the application's epoll set wakes for a
 *           receive
 *
 * The data cases run with manual and automatic progress, through TCP
 * and through the same-host path (FI_SOCKETS_SHM). One line per case;
 * exit 0 when all passed, 77 when sockets is not built.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
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
#include <rdma/fi_trigger.h>

#include "../tcp/tcp_test.h"

#define VER	 FI_VERSION(1, 17)
#define KEY	 7
#define MEMSZ	 4096
#define NSTASH	 256
#define WAIT_MS	 20000 /* what a completion may take on a loaded host */
#define QUIET_MS 30    /* how long "nothing happened" is watched */

struct side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *cntr;	/* A: transmits, B: receives */
	struct fid_cntr *rcntr; /* B: remote writes (FI_RMA_EVENT) */
	struct fi_cq_tagged_entry got[NSTASH];
	int ngot, nerr;
	struct fi_cq_err_entry last_err;
	pthread_mutex_t lock;
};

static struct {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_mr *mr;
	struct side a, b;
	fi_addr_t ba;					 /* B as A names it */
	uint8_t mem[MEMSZ] __attribute__((aligned(16))); /* B's, registered */
	uint8_t lbuf[MEMSZ];				 /* A's buffers */
	bool manual, shm;
} t;

static void stash(struct side *s)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t n;

	pthread_mutex_lock(&s->lock);
	while ((n = fi_cq_read(s->cq, &e, 1)) == 1) {
		if (s->ngot < NSTASH)
			s->got[s->ngot++] = e;
	}
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(s->cq, &err, 0) == 1) {
			s->nerr++;
			s->last_err = err;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

static void pump(void)
{
	stash(&t.a);
	stash(&t.b);
	fi_cntr_read(t.a.cntr);
	fi_cntr_read(t.b.cntr);
}

/* Whether @s got a completion naming @ctx (taken off the stash). */
static bool took(struct side *s, void *ctx, struct fi_cq_tagged_entry *out)
{
	bool found = false;
	int i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->ngot; i++) {
		if (s->got[i].op_context != ctx)
			continue;
		if (out)
			*out = s->got[i];
		memmove(&s->got[i], &s->got[i + 1],
			(s->ngot - i - 1) * sizeof(s->got[0]));
		s->ngot--;
		found = true;
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

static bool wait_comp(struct side *s, void *ctx, struct fi_cq_tagged_entry *e)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (now_ms() < end) {
		pump();
		if (took(s, ctx, e))
			return true;
	}
	return false;
}

static void quiet(void)
{
	uint64_t end = now_ms() + QUIET_MS;

	while (now_ms() < end) {
		pump();
		usleep(1000);
	}
}

static bool wait_value(struct fid_cntr *c, uint64_t v)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (now_ms() < end) {
		pump();
		if (fi_cntr_read(c) >= v)
			return true;
	}
	return false;
}

static struct fid_cntr *cntr_new(enum fi_wait_obj obj)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = obj};
	struct fid_cntr *c = NULL;

	if (fi_cntr_open(t.dom, &attr, &c, NULL))
		return NULL;
	return c;
}

static void cntr_free(struct fid_cntr *c)
{
	if (c)
		fi_close(&c->fid);
}

static struct fi_info *hints_new(const char *prov, bool manual)
{
	struct fi_info *h = fi_allocinfo();

	h->fabric_attr->prov_name = strdup(prov);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_TRIGGER |
		  FI_FENCE | FI_MULTI_RECV | FI_RMA_EVENT;
	h->domain_attr->mr_mode = 0;
	h->domain_attr->threading = FI_THREAD_SAFE;
	if (manual) {
		h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
		h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	}
	return h;
}

static int side_open(struct side *s, uint64_t cntr_flags, enum fi_wait_obj obj)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};

	pthread_mutex_init(&s->lock, NULL);
	s->ngot = s->nerr = 0;
	if (fi_endpoint(t.dom, t.info, &s->ep, NULL) ||
	    fi_cq_open(t.dom, &cq_attr, &s->cq, NULL))
		return -1;
	s->cntr = cntr_new(obj);
	if (!s->cntr || fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(s->ep, &t.av->fid, 0) ||
	    fi_ep_bind(s->ep, &s->cntr->fid, cntr_flags))
		return -1;
	if (cntr_flags & FI_RECV) {
		size_t min = 100;

		s->rcntr = cntr_new(FI_WAIT_UNSPEC);
		if (!s->rcntr ||
		    fi_ep_bind(s->ep, &s->rcntr->fid, FI_REMOTE_WRITE) ||
		    fi_setopt(&s->ep->fid, FI_OPT_ENDPOINT,
			      FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)))
			return -1;
	}
	return fi_enable(s->ep);
}

static void side_close(struct side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	if (s->cntr)
		fi_close(&s->cntr->fid);
	if (s->rcntr)
		fi_close(&s->rcntr->fid);
	pthread_mutex_destroy(&s->lock);
	memset(s, 0, sizeof(*s));
}

static int setup(bool manual, bool shm)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_info *h = hints_new("sockets", manual);
	char name[64];
	size_t len = sizeof(name);
	fi_addr_t self;
	int ret;

	t.manual = manual;
	t.shm = shm;
	setenv("FI_SOCKETS_SHM", shm ? "1" : "0", 1);
	ret = fi_getinfo(VER, "127.0.0.1", NULL, 0, h, &t.info);
	fi_freeinfo(h);
	if (ret)
		return ret;
	if (fi_fabric(t.info->fabric_attr, &t.fab, NULL) ||
	    fi_domain(t.fab, t.info, &t.dom, NULL) ||
	    fi_av_open(t.dom, &av_attr, &t.av, NULL))
		return -1;
	if (side_open(&t.a, FI_SEND | FI_WRITE | FI_READ, FI_WAIT_UNSPEC) ||
	    side_open(&t.b, FI_RECV, FI_WAIT_FD))
		return -1;
	if (fi_getname(&t.b.ep->fid, name, &len) ||
	    fi_av_insert(t.av, name, 1, &t.ba, 0, NULL) != 1)
		return -1;
	len = sizeof(name);
	if (fi_getname(&t.a.ep->fid, name, &len) ||
	    fi_av_insert(t.av, name, 1, &self, 0, NULL) != 1)
		return -1;
	return fi_mr_reg(t.dom, t.mem, MEMSZ, FI_REMOTE_READ | FI_REMOTE_WRITE,
			 0, KEY, 0, &t.mr, NULL);
}

static void teardown(void)
{
	side_close(&t.a);
	side_close(&t.b);
	if (t.mr)
		fi_close(&t.mr->fid);
	if (t.av)
		fi_close(&t.av->fid);
	if (t.dom)
		fi_close(&t.dom->fid);
	if (t.fab)
		fi_close(&t.fab->fid);
	fi_freeinfo(t.info);
	t.mr = NULL;
	t.av = NULL;
	t.dom = NULL;
	t.fab = NULL;
	t.info = NULL;
}

static void trig_ctx(struct fi_triggered_context *tc, struct fid_cntr *c,
		     size_t threshold)
{
	memset(tc, 0, sizeof(*tc));
	tc->event_type = FI_TRIGGER_THRESHOLD;
	tc->trigger.threshold.cntr = c;
	tc->trigger.threshold.threshold = threshold;
}

/* ------------------------------------------------------------------ */
/* trig: one triggered operation of each kind.                         */

static int trig_send(struct fid_cntr *c)
{
	struct fi_triggered_context tc;
	char rbuf[32] = "", sbuf[32] = "triggered send";
	struct iovec iov = {sbuf, sizeof(sbuf)};
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = 1, .addr = t.ba, .context = &tc};
	int rc = -1;

	CHECK(!fi_recv(t.b.ep, rbuf, sizeof(rbuf), NULL, 0, rbuf), "recv");
	trig_ctx(&tc, c, 2);
	CHECK(!fi_sendmsg(t.a.ep, &msg, FI_TRIGGER), "sendmsg");
	memset(sbuf, 'x', 4); /* the queued op names the buffer, not a copy */
	quiet();
	CHECK(!took(&t.b, rbuf, NULL), "received below the threshold (0)");
	fi_cntr_add(c, 1);
	quiet();
	CHECK(!took(&t.b, rbuf, NULL), "received below the threshold (1)");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.a, &tc, NULL), "no send completion");
	CHECK(wait_comp(&t.b, rbuf, NULL), "no receive");
	CHECK(!memcmp(rbuf, "xxxxgered send", 14), "data: %.14s", rbuf);
	rc = 0;
out:
	return rc;
}

static int trig_trecv(struct fid_cntr *c)
{
	struct fi_triggered_context tc;
	char rbuf[32] = "", sbuf[32] = "triggered trecv";
	struct iovec iov = {rbuf, sizeof(rbuf)};
	struct fi_msg_tagged msg = {.msg_iov = &iov,
				    .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC,
				    .tag = 0x55,
				    .context = &tc};
	struct fi_cq_tagged_entry e;
	int rc = -1;

	trig_ctx(&tc, c, 1);
	CHECK(!fi_trecvmsg(t.b.ep, &msg, FI_TRIGGER), "trecvmsg");
	CHECK(!fi_tsend(t.a.ep, sbuf, sizeof(sbuf), NULL, t.ba, 0x55, sbuf),
	      "tsend");
	CHECK(wait_comp(&t.a, sbuf, NULL), "no send completion");
	quiet();
	CHECK(!took(&t.b, &tc, NULL), "matched below the threshold");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.b, &tc, &e), "no receive");
	CHECK(e.tag == 0x55 && !strcmp(rbuf, sbuf), "tag %lx data %s",
	      (unsigned long)e.tag, rbuf);
	rc = 0;
out:
	return rc;
}

static int trig_rma(struct fid_cntr *c, bool write)
{
	struct fi_triggered_context tc;
	struct iovec iov = {t.lbuf, 64};
	struct fi_rma_iov rma = {.addr = 256, .len = 64, .key = KEY};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .iov_count = 1,
				 .addr = t.ba,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = &tc};
	int rc = -1;

	memset(t.mem + 256, write ? 'm' : 'r', 64);
	memset(t.lbuf, 'l', 64);
	trig_ctx(&tc, c, 1);
	CHECK(!(write ? fi_writemsg(t.a.ep, &msg, FI_TRIGGER)
		      : fi_readmsg(t.a.ep, &msg, FI_TRIGGER)),
	      "rma");
	quiet();
	CHECK(t.mem[256] == (write ? 'm' : 'r') && t.lbuf[0] == 'l',
	      "moved below the threshold");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.a, &tc, NULL), "no completion");
	if (write)
		CHECK(t.mem[256] == 'l' && t.mem[319] == 'l', "not written");
	else
		CHECK(t.lbuf[0] == 'r' && t.lbuf[63] == 'r', "not read");
	rc = 0;
out:
	return rc;
}

/* @kind: 0 atomic (sum 5), 1 fetch (sum 5), 2 compare (swap 99 for 10) */
static int trig_atomic(struct fid_cntr *c, int kind)
{
	struct fi_triggered_context tc;
	uint64_t *tgt = (uint64_t *)(t.mem + 512), op = 5, cmp = 10, res = 0;
	struct fi_ioc ioc = {&op, 1}, cioc = {&cmp, 1}, rioc = {&res, 1};
	struct fi_rma_ioc rma = {.addr = 512, .count = 1, .key = KEY};
	struct fi_msg_atomic msg = {.msg_iov = &ioc,
				    .iov_count = 1,
				    .addr = t.ba,
				    .rma_iov = &rma,
				    .rma_iov_count = 1,
				    .datatype = FI_UINT64,
				    .op = kind == 2 ? FI_CSWAP : FI_SUM,
				    .context = &tc};
	ssize_t ret;
	int rc = -1;

	*tgt = 10;
	if (kind == 2)
		op = 99;
	trig_ctx(&tc, c, 1);
	if (kind == 0)
		ret = fi_atomicmsg(t.a.ep, &msg, FI_TRIGGER);
	else if (kind == 1)
		ret = fi_fetch_atomicmsg(t.a.ep, &msg, &rioc, NULL, 1,
					 FI_TRIGGER);
	else
		ret = fi_compare_atomicmsg(t.a.ep, &msg, &cioc, NULL, 1, &rioc,
					   NULL, 1, FI_TRIGGER);
	CHECK(!ret, "atomic %d: %zd", kind, ret);
	quiet();
	CHECK(*tgt == 10 && !res, "ran below the threshold");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.a, &tc, NULL), "no completion");
	CHECK(*tgt == (kind == 2 ? 99u : 15u), "target %lu",
	      (unsigned long)*tgt);
	CHECK(kind == 0 || res == 10, "result %lu", (unsigned long)res);
	rc = 0;
out:
	return rc;
}

static int trig_bad(struct fid_cntr *c)
{
	struct fi_triggered_context tc;
	char buf[8] = "";
	struct iovec iov = {buf, sizeof(buf)};
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = 1, .addr = t.ba, .context = &tc};
	int rc = -1;

	trig_ctx(&tc, c, 1);
	tc.event_type = FI_TRIGGER_XPU;
	CHECK(fi_sendmsg(t.a.ep, &msg, FI_TRIGGER) == -FI_ENOSYS, "xpu");
	trig_ctx(&tc, NULL, 1);
	CHECK(fi_sendmsg(t.a.ep, &msg, FI_TRIGGER) == -FI_EINVAL, "no cntr");
	rc = 0;
out:
	return rc;
}

/* fi_cancel of a triggered receive not started: FI_ECANCELED, and the
 * threshold reached later posts nothing. */
static int trig_cancel(struct fid_cntr *c)
{
	struct fi_triggered_context tc;
	char rbuf[16] = "", r2[16] = "", sbuf[16] = "cancel";
	struct iovec iov = {rbuf, sizeof(rbuf)};
	struct fi_msg_tagged msg = {.msg_iov = &iov,
				    .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC,
				    .tag = 0x66,
				    .context = &tc};
	uint64_t end = now_ms() + WAIT_MS;
	int nerr = t.b.nerr, rc = -1;

	trig_ctx(&tc, c, 1);
	CHECK(!fi_trecvmsg(t.b.ep, &msg, FI_TRIGGER), "trecvmsg");
	CHECK(!fi_cancel(&t.b.ep->fid, &tc), "cancel");
	while (t.b.nerr == nerr && now_ms() < end)
		pump();
	CHECK(t.b.nerr == nerr + 1 && t.b.last_err.op_context == &tc &&
		      t.b.last_err.err == FI_ECANCELED,
	      "cancel entry: %d errors, err %d", t.b.nerr - nerr,
	      t.b.last_err.err);
	CHECK(fi_cancel(&t.b.ep->fid, &tc) == -FI_ENOENT, "cancelled twice");
	fi_cntr_add(c, 1);
	CHECK(!fi_tsend(t.a.ep, sbuf, sizeof(sbuf), NULL, t.ba, 0x66, sbuf),
	      "tsend");
	CHECK(wait_comp(&t.a, sbuf, NULL), "send completion");
	CHECK(!fi_trecv(t.b.ep, r2, sizeof(r2), NULL, FI_ADDR_UNSPEC, 0x66, 0,
			r2),
	      "trecv");
	CHECK(wait_comp(&t.b, r2, NULL) && !strcmp(r2, sbuf),
	      "the cancelled receive took the message");
	CHECK(!rbuf[0], "cancelled buffer written");
	rc = 0;
out:
	return rc;
}

static int case_trig(void)
{
	struct fid_cntr *c[9] = {0};
	int i, rc = -1;

	for (i = 0; i < 9; i++)
		CHECK((c[i] = cntr_new(FI_WAIT_UNSPEC)), "cntr");
	CHECK(!trig_send(c[0]), "send");
	CHECK(!trig_trecv(c[1]), "trecv");
	CHECK(!trig_rma(c[2], true), "write");
	CHECK(!trig_rma(c[3], false), "read");
	for (i = 0; i < 3; i++)
		CHECK(!trig_atomic(c[4 + i], i), "atomic %d", i);
	CHECK(!trig_bad(c[7]), "bad");
	CHECK(!trig_cancel(c[8]), "cancel");
	rc = 0;
out:
	for (i = 0; i < 9; i++)
		cntr_free(c[i]);
	return rc;
}

/* ------------------------------------------------------------------ */
/* opflags: FI_TRIGGER in the op flags makes the plain calls triggered. */

/* Sets @ep's op flags of @dir (FI_TRANSMIT or FI_RECV) to @flags. */
static int opsflag(struct fid_ep *ep, uint64_t dir, uint64_t flags)
{
	uint64_t f = dir | flags;

	return fi_control(&ep->fid, FI_SETOPSFLAG, &f);
}

/* fi_send, fi_write, fi_atomic and fi_fetch_atomic of @ep (FI_TRIGGER in
 * its transmit op flags) wait for @c to reach 1, 2, 3, 4. */
static int opf_tx(struct fid_ep *ep, struct fid_cntr *c)
{
	struct fi_triggered_context tc[4];
	char rbuf[16] = "", sbuf[16] = "opflags send";
	uint64_t *tgt = (uint64_t *)(t.mem + 512), op = 5, res = 0;
	int i, rc = -1;

	for (i = 0; i < 4; i++)
		trig_ctx(&tc[i], c, i + 1);
	*tgt = 10;
	memset(t.mem + 256, 'm', 64);
	memset(t.lbuf, 'l', 64);
	CHECK(!fi_recv(t.b.ep, rbuf, sizeof(rbuf), NULL, 0, rbuf), "recv");
	CHECK(!fi_send(ep, sbuf, sizeof(sbuf), NULL, t.ba, &tc[0]), "send");
	CHECK(!fi_write(ep, t.lbuf, 64, NULL, t.ba, 256, KEY, &tc[1]), "write");
	CHECK(!fi_atomic(ep, &op, 1, NULL, t.ba, 512, KEY, FI_UINT64, FI_SUM,
			 &tc[2]),
	      "atomic");
	CHECK(!fi_fetch_atomic(ep, &op, 1, NULL, &res, NULL, t.ba, 512, KEY,
			       FI_UINT64, FI_SUM, &tc[3]),
	      "fetch");
	quiet();
	CHECK(!took(&t.b, rbuf, NULL) && t.mem[256] == 'm' && *tgt == 10,
	      "ran below the threshold");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.a, &tc[0], NULL) && wait_comp(&t.b, rbuf, NULL),
	      "send");
	CHECK(!strcmp(rbuf, sbuf), "data %s", rbuf);
	quiet();
	CHECK(t.mem[256] == 'm', "write below the threshold");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.a, &tc[1], NULL) && t.mem[319] == 'l', "write");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.a, &tc[2], NULL) && *tgt == 15, "atomic");
	quiet();
	CHECK(!res, "fetch below the threshold");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.a, &tc[3], NULL), "fetch");
	CHECK(*tgt == 20 && res == 15, "fetch %lu %lu", (unsigned long)*tgt,
	      (unsigned long)res);
	rc = 0;
out:
	return rc;
}

/* fi_trecv of B (FI_TRIGGER in its receive op flags) waits for @c. */
static int opf_rx(struct fid_cntr *c)
{
	struct fi_triggered_context tc;
	char rbuf[16] = "", sbuf[16] = "opflags trecv";
	int rc = -1;

	trig_ctx(&tc, c, 1);
	CHECK(!fi_trecv(t.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, 0x77,
			0, &tc),
	      "trecv");
	CHECK(!fi_tsend(t.a.ep, sbuf, sizeof(sbuf), NULL, t.ba, 0x77, sbuf),
	      "tsend");
	CHECK(wait_comp(&t.a, sbuf, NULL), "send completion");
	quiet();
	CHECK(!took(&t.b, &tc, NULL) && !rbuf[0], "matched below threshold");
	fi_cntr_add(c, 1);
	CHECK(wait_comp(&t.b, &tc, NULL) && !strcmp(rbuf, sbuf), "trecv");
	rc = 0;
out:
	return rc;
}

/* An endpoint opened with FI_TRIGGER in tx_attr->op_flags, on A's CQ. */
static int opf_open(struct fid_cntr *c)
{
	struct fi_info *info = fi_dupinfo(t.info);
	struct fid_ep *ep = NULL;
	int rc = -1;

	CHECK(info, "dupinfo");
	info->tx_attr->op_flags = FI_TRIGGER;
	CHECK(!fi_endpoint(t.dom, info, &ep, NULL), "endpoint");
	CHECK(!fi_ep_bind(ep, &t.a.cq->fid, FI_TRANSMIT | FI_RECV) &&
		      !fi_ep_bind(ep, &t.av->fid, 0) && !fi_enable(ep),
	      "bind");
	CHECK(!opf_tx(ep, c), "tx_attr op_flags");
	rc = 0;
out:
	if (ep)
		fi_close(&ep->fid);
	fi_freeinfo(info);
	return rc;
}

static int case_opflags(void)
{
	struct fid_cntr *c[3] = {0};
	uint64_t tx = FI_TRANSMIT, rx = FI_RECV;
	int i, rc = -1;

	for (i = 0; i < 3; i++)
		CHECK((c[i] = cntr_new(FI_WAIT_UNSPEC)), "cntr");
	CHECK(!fi_control(&t.a.ep->fid, FI_GETOPSFLAG, &tx) &&
		      !fi_control(&t.b.ep->fid, FI_GETOPSFLAG, &rx),
	      "getopsflag");
	CHECK(!opsflag(t.a.ep, FI_TRANSMIT, tx | FI_TRIGGER), "set tx");
	CHECK(!opf_tx(t.a.ep, c[0]), "FI_SETOPSFLAG tx");
	CHECK(!opsflag(t.a.ep, FI_TRANSMIT, tx), "clear tx");
	CHECK(!opsflag(t.b.ep, FI_RECV, rx | FI_TRIGGER), "set rx");
	CHECK(!opf_rx(c[1]), "FI_SETOPSFLAG rx");
	CHECK(!opsflag(t.b.ep, FI_RECV, rx), "clear rx");
	CHECK(!opf_open(c[2]), "open");
	rc = 0;
out:
	opsflag(t.a.ep, FI_TRANSMIT, tx);
	opsflag(t.b.ep, FI_RECV, rx);
	for (i = 0; i < 3; i++)
		cntr_free(c[i]);
	return rc;
}

static int case_order(void)
{
	static const size_t thr[4] = {3, 1, 2, 2};
	static const char want[4] = {'b', 'c', 'd', 'a'};
	struct fi_triggered_context tc[4];
	char sbuf[4][8], rbuf[4][8];
	struct fi_cq_tagged_entry e;
	struct fid_cntr *c;
	int i, rc = -1;

	CHECK((c = cntr_new(FI_WAIT_UNSPEC)), "cntr");
	for (i = 0; i < 4; i++)
		CHECK(!fi_recv(t.b.ep, rbuf[i], 8, NULL, 0, rbuf[i]), "recv");
	for (i = 0; i < 4; i++) {
		struct iovec iov = {sbuf[i], 8};
		struct fi_msg msg = {.msg_iov = &iov,
				     .iov_count = 1,
				     .addr = t.ba,
				     .context = &tc[i]};

		memset(sbuf[i], 'a' + i, 8);
		trig_ctx(&tc[i], c, thr[i]);
		CHECK(!fi_sendmsg(t.a.ep, &msg, FI_TRIGGER), "send %d", i);
	}
	quiet();
	CHECK(!took(&t.b, rbuf[0], NULL), "received below the thresholds");
	fi_cntr_add(c, 3);
	for (i = 0; i < 4; i++) {
		CHECK(wait_comp(&t.b, rbuf[i], &e), "receive %d missing", i);
		CHECK(rbuf[i][0] == want[i], "receive %d got %c", i,
		      rbuf[i][0]);
	}
	for (i = 0; i < 4; i++)
		CHECK(wait_comp(&t.a, &tc[i], NULL), "send %d", i);
	rc = 0;
out:
	cntr_free(c);
	return rc;
}

/* ------------------------------------------------------------------ */
/* work: fi_control(FI_QUEUE_WORK) of every op type.                   */

struct work_ops {
	struct fi_op_msg msg;
	struct fi_op_tagged tagged;
	struct fi_op_rma rma;
	struct fi_op_atomic atomic;
	struct fi_op_fetch_atomic fetch;
	struct fi_op_compare_atomic compare;
	struct fi_op_cntr cntr;
	struct iovec iov;
	struct fi_rma_iov rma_iov;
	struct fi_ioc ioc, cioc, rioc;
	struct fi_rma_ioc rma_ioc;
	uint64_t op, cmp, res;
	char buf[32];
};

static void work_init(struct fi_deferred_work *w, struct fid_cntr *trig,
		      uint64_t threshold, struct fid_cntr *comp,
		      enum fi_op_type type)
{
	memset(w, 0, sizeof(*w));
	w->threshold = threshold;
	w->triggering_cntr = trig;
	w->completion_cntr = comp;
	w->op_type = type;
}

/* Fills @o for @type (A's side, or B's for receives) and points @w. */
static void work_fill(struct fi_deferred_work *w, struct work_ops *o,
		      enum fi_op_type type, uint64_t flags)
{
	memset(o, 0, sizeof(*o));
	o->iov.iov_base = o->buf;
	o->iov.iov_len = sizeof(o->buf);
	o->rma_iov = (struct fi_rma_iov){.addr = 768, .len = 32, .key = KEY};
	o->rma_ioc = (struct fi_rma_ioc){.addr = 1024, .count = 1, .key = KEY};
	o->ioc = (struct fi_ioc){&o->op, 1};
	o->cioc = (struct fi_ioc){&o->cmp, 1};
	o->rioc = (struct fi_ioc){&o->res, 1};
	switch (type) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		o->msg = (struct fi_op_msg){
			.ep = type == FI_OP_RECV ? t.b.ep : t.a.ep,
			.msg = {.msg_iov = &o->iov,
				.iov_count = 1,
				.addr = type == FI_OP_RECV ? FI_ADDR_UNSPEC
							   : t.ba,
				.context = o},
			.flags = flags};
		w->op.msg = &o->msg;
		break;
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		o->tagged = (struct fi_op_tagged){
			.ep = type == FI_OP_TRECV ? t.b.ep : t.a.ep,
			.msg = {.msg_iov = &o->iov,
				.iov_count = 1,
				.addr = type == FI_OP_TRECV ? FI_ADDR_UNSPEC
							    : t.ba,
				.tag = 0x77,
				.context = o},
			.flags = flags};
		w->op.tagged = &o->tagged;
		break;
	case FI_OP_READ:
	case FI_OP_WRITE:
		o->rma = (struct fi_op_rma){.ep = t.a.ep,
					    .msg = {.msg_iov = &o->iov,
						    .iov_count = 1,
						    .addr = t.ba,
						    .rma_iov = &o->rma_iov,
						    .rma_iov_count = 1,
						    .context = o},
					    .flags = flags};
		w->op.rma = &o->rma;
		break;
	case FI_OP_ATOMIC:
	case FI_OP_FETCH_ATOMIC:
	case FI_OP_COMPARE_ATOMIC: {
		struct fi_msg_atomic m = {
			.msg_iov = &o->ioc,
			.iov_count = 1,
			.addr = t.ba,
			.rma_iov = &o->rma_ioc,
			.rma_iov_count = 1,
			.datatype = FI_UINT64,
			.op = type == FI_OP_COMPARE_ATOMIC ? FI_CSWAP : FI_SUM,
			.context = o};
		struct fi_msg_fetch r = {&o->rioc, NULL, 1};

		if (type == FI_OP_ATOMIC) {
			o->atomic = (struct fi_op_atomic){t.a.ep, m, flags};
			w->op.atomic = &o->atomic;
		} else if (type == FI_OP_FETCH_ATOMIC) {
			o->fetch = (struct fi_op_fetch_atomic){t.a.ep, m, r,
							       flags};
			w->op.fetch_atomic = &o->fetch;
		} else {
			o->compare = (struct fi_op_compare_atomic){
				t.a.ep, m, r, {&o->cioc, NULL, 1}, flags};
			w->op.compare_atomic = &o->compare;
		}
		break;
	}
	default:
		break;
	}
}

/* What a data work item left behind once done: 0 when right. */
static int work_effect(enum fi_op_type type, struct work_ops *o, uint64_t *tgt)
{
	switch (type) {
	case FI_OP_RECV:
	case FI_OP_TRECV:
		return strcmp(o->buf, "work payload");
	case FI_OP_WRITE:
		return memcmp(t.mem + 768, "work write", 10);
	case FI_OP_READ:
		return memcmp(o->buf, "work read", 9);
	case FI_OP_ATOMIC:
		return *tgt != 15;
	case FI_OP_FETCH_ATOMIC:
		return *tgt != 15 || o->res != 10;
	case FI_OP_COMPARE_ATOMIC:
		return *tgt != 99 || o->res != 10;
	default:
		return 0;
	}
}

static int work_one(enum fi_op_type type, uint64_t flags)
{
	struct fid_cntr *trig = cntr_new(FI_WAIT_UNSPEC),
			*comp = cntr_new(FI_WAIT_UNSPEC);
	uint64_t *tgt = (uint64_t *)(t.mem + 1024), before;
	bool rx = type == FI_OP_RECV || type == FI_OP_TRECV;
	bool tx_msg = type == FI_OP_SEND || type == FI_OP_TSEND;
	char sbuf[32] = "work payload", rbuf[32] = "";
	struct fi_deferred_work w;
	struct work_ops o;
	int rc = -1;

	CHECK(trig && comp, "cntr");
	work_init(&w, trig, 2, comp, type);
	work_fill(&w, &o, type, flags);
	*tgt = 10;
	o.op = type == FI_OP_COMPARE_ATOMIC ? 99 : 5;
	o.cmp = 10;
	memcpy(t.mem + 768, "work read", 10);
	if (type == FI_OP_WRITE || tx_msg)
		strcpy(o.buf, type == FI_OP_WRITE ? "work write" : sbuf);
	if (tx_msg)
		CHECK(!(type == FI_OP_TSEND
				? fi_trecv(t.b.ep, rbuf, sizeof(rbuf), NULL,
					   FI_ADDR_UNSPEC, 0x77, 0, rbuf)
				: fi_recv(t.b.ep, rbuf, sizeof(rbuf), NULL,
					  FI_ADDR_UNSPEC, rbuf)),
		      "recv");
	CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &w), "queue");
	if (rx) {
		CHECK(!(type == FI_OP_TRECV
				? fi_tsend(t.a.ep, sbuf, sizeof(sbuf), NULL,
					   t.ba, 0x77, sbuf)
				: fi_send(t.a.ep, sbuf, sizeof(sbuf), NULL,
					  t.ba, sbuf)),
		      "send");
		CHECK(wait_comp(&t.a, sbuf, NULL), "send completion");
	}
	before = fi_cntr_read(rx ? t.b.cntr : t.a.cntr);
	/* deferred work counts errors toward its threshold */
	fi_cntr_adderr(trig, 1);
	quiet();
	CHECK(!fi_cntr_read(comp) && !fi_cntr_readerr(comp),
	      "done below the threshold");
	if (tx_msg)
		CHECK(!took(&t.b, rbuf, NULL), "received below the threshold");
	else if (type == FI_OP_WRITE)
		CHECK(t.mem[773] == 'r', "written below the threshold");
	else
		CHECK(work_effect(type, &o, tgt), "effect below the threshold");
	fi_cntr_add(trig, 1);
	CHECK(wait_value(comp, 1), "completion counter %lu err %lu",
	      (unsigned long)fi_cntr_read(comp),
	      (unsigned long)fi_cntr_readerr(comp));
	CHECK(!work_effect(type, &o, tgt), "effect");
	if (tx_msg) {
		CHECK(wait_comp(&t.b, rbuf, NULL), "not received");
		CHECK(!strcmp(rbuf, sbuf), "received %s", rbuf);
	}
	quiet();
	CHECK(fi_cntr_read(comp) == 1, "counted twice");
	if (flags & FI_COMPLETION) {
		CHECK(wait_comp(rx ? &t.b : &t.a, &o, NULL), "no CQ entry");
	} else {
		CHECK(!took(rx ? &t.b : &t.a, &o, NULL), "a CQ entry");
		CHECK(!took(rx ? &t.b : &t.a, &w, NULL), "a CQ entry (work)");
	}
	CHECK(fi_cntr_read(rx ? t.b.cntr : t.a.cntr) == before,
	      "endpoint counter moved");
	rc = 0;
out:
	cntr_free(trig);
	cntr_free(comp);
	return rc;
}

static int work_cntr(void)
{
	struct fid_cntr *trig = cntr_new(FI_WAIT_UNSPEC),
			*x = cntr_new(FI_WAIT_UNSPEC);
	struct fi_op_cntr set = {x, 42}, add = {x, 8};
	struct fi_deferred_work ws, wa;
	int rc = -1;

	CHECK(trig && x, "cntr");
	work_init(&ws, trig, 2, NULL, FI_OP_CNTR_SET);
	ws.op.cntr = &set;
	work_init(&wa, trig, 3, NULL, FI_OP_CNTR_ADD);
	wa.op.cntr = &add;
	/* fi_trigger(3): counter work has no completion counter */
	wa.completion_cntr = x;
	CHECK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &wa) == -FI_EINVAL,
	      "completion counter taken");
	wa.completion_cntr = NULL;
	/* queued out of threshold order */
	CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &wa), "queue add");
	CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &ws), "queue set");
	fi_cntr_add(trig, 1);
	CHECK(fi_cntr_read(x) == 0, "early: %lu",
	      (unsigned long)fi_cntr_read(x));
	fi_cntr_add(trig, 1);
	CHECK(fi_cntr_read(x) == 42, "set: %lu",
	      (unsigned long)fi_cntr_read(x));
	fi_cntr_set(trig, 3);
	CHECK(fi_cntr_read(x) == 50, "add: %lu",
	      (unsigned long)fi_cntr_read(x));
	/* already met when queued: runs at once */
	CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &wa), "queue met");
	CHECK(fi_cntr_read(x) == 58, "met: %lu",
	      (unsigned long)fi_cntr_read(x));
	rc = 0;
out:
	cntr_free(trig);
	cntr_free(x);
	return rc;
}

static int work_tcp(void)
{
	struct fi_info *h = hints_new("tcp", true), *info = NULL;
	struct fid_fabric *fab = NULL;
	struct fid_domain *dom = NULL;
	struct fi_deferred_work w;
	int rc = -1;

	h->caps &= ~(FI_TRIGGER | FI_FENCE);
	CHECK(!fi_getinfo(VER, "127.0.0.1", NULL, 0, h, &info), "tcp info");
	CHECK(!fi_fabric(info->fabric_attr, &fab, NULL) &&
		      !fi_domain(fab, info, &dom, NULL),
	      "tcp domain");
	work_init(&w, t.a.cntr, 1, NULL, FI_OP_CNTR_ADD);
	CHECK(fi_control(&dom->fid, FI_QUEUE_WORK, &w) == -FI_ENOSYS,
	      "tcp queued work");
	rc = 0;
out:
	if (dom)
		fi_close(&dom->fid);
	if (fab)
		fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(h);
	return rc;
}

static int case_work(void)
{
	static const enum fi_op_type types[] = {
		FI_OP_SEND,   FI_OP_RECV,	  FI_OP_TSEND,
		FI_OP_TRECV,  FI_OP_READ,	  FI_OP_WRITE,
		FI_OP_ATOMIC, FI_OP_FETCH_ATOMIC, FI_OP_COMPARE_ATOMIC};
	size_t i;
	int rc = -1;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		CHECK(!work_one(types[i], 0), "op type %d", types[i]);
	CHECK(!work_one(FI_OP_SEND, FI_COMPLETION), "send FI_COMPLETION");
	CHECK(!work_one(FI_OP_RECV, FI_COMPLETION), "recv FI_COMPLETION");
	CHECK(!work_cntr(), "counter work");
	CHECK(!work_tcp(), "tcp");
	rc = 0;
out:
	return rc;
}

/* Closing an endpoint drops the triggered calls and work that name it. */
static int cancel_ep_close(struct fid_cntr *trig)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_triggered_context tc;
	struct fi_deferred_work w;
	struct fid_ep *ep = NULL;
	struct fid_cq *cq = NULL;
	char buf[8] = "closed";
	struct iovec iov = {buf, sizeof(buf)};
	struct fi_op_msg op = {
		.msg = {.msg_iov = &iov, .iov_count = 1, .addr = t.ba}};
	int rc = -1;

	CHECK(!fi_endpoint(t.dom, t.info, &ep, NULL) &&
		      !fi_cq_open(t.dom, &cq_attr, &cq, NULL) &&
		      !fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) &&
		      !fi_ep_bind(ep, &t.av->fid, 0) && !fi_enable(ep),
	      "endpoint");
	op.ep = ep;
	op.msg.context = &tc;
	trig_ctx(&tc, trig, 1000);
	CHECK(!fi_sendmsg(ep, &op.msg, FI_TRIGGER), "triggered send");
	work_init(&w, trig, 1000, NULL, FI_OP_SEND);
	w.op.msg = &op;
	CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &w), "queue");
	fi_close(&ep->fid);
	ep = NULL;
	CHECK(fi_control(&t.dom->fid, FI_CANCEL_WORK, &w) == -FI_ENOENT,
	      "work on a closed endpoint still queued");
	/* under ASan, a start on the closed endpoint would be caught */
	fi_cntr_add(trig, 1000);
	rc = 0;
out:
	if (ep)
		fi_close(&ep->fid);
	if (cq)
		fi_close(&cq->fid);
	return rc;
}

static int case_cancel(void)
{
	struct fid_cntr *trig = cntr_new(FI_WAIT_UNSPEC),
			*other = cntr_new(FI_WAIT_UNSPEC),
			*x = cntr_new(FI_WAIT_UNSPEC),
			*y = cntr_new(FI_WAIT_UNSPEC);
	struct fi_op_cntr add = {x, 1};
	struct fi_deferred_work w[4];
	int i, rc = -1;

	CHECK(trig && other && x && y, "cntr");
	for (i = 0; i < 4; i++) {
		work_init(&w[i], i == 3 ? other : trig, 1, NULL,
			  FI_OP_CNTR_ADD);
		w[i].op.cntr = &add;
		CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &w[i]), "queue");
	}
	CHECK(!fi_control(&t.dom->fid, FI_CANCEL_WORK, &w[0]), "cancel");
	CHECK(fi_control(&t.dom->fid, FI_CANCEL_WORK, &w[0]) == -FI_ENOENT,
	      "cancelled twice");
	/* those waiting on one counter */
	CHECK(!fi_control(&t.dom->fid, FI_FLUSH_WORK, &w[1]), "flush trig");
	fi_cntr_add(trig, 1);
	CHECK(fi_cntr_read(x) == 0, "cancelled work ran: %lu",
	      (unsigned long)fi_cntr_read(x));
	fi_cntr_add(other, 1);
	CHECK(fi_cntr_read(x) == 1, "other's work: %lu",
	      (unsigned long)fi_cntr_read(x));
	/* all of them */
	for (i = 0; i < 3; i++)
		CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &w[i]), "queue");
	w[3].triggering_cntr = trig;
	w[3].threshold = 5;
	CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &w[3]), "queue");
	CHECK(fi_cntr_read(x) == 4, "met work: %lu",
	      (unsigned long)fi_cntr_read(x));
	CHECK(!fi_control(&t.dom->fid, FI_FLUSH_WORK, NULL), "flush all");
	fi_cntr_add(trig, 10);
	CHECK(fi_cntr_read(x) == 4, "flushed work ran: %lu",
	      (unsigned long)fi_cntr_read(x));
	CHECK(fi_control(&t.dom->fid, FI_CANCEL_WORK, &w[3]) == -FI_ENOENT,
	      "flushed work still queued");
	/* closing a counter drops the work naming it, though that work
	 * waits on another counter */
	add.cntr = y;
	w[3].threshold = 100;
	CHECK(!fi_control(&t.dom->fid, FI_QUEUE_WORK, &w[3]), "queue");
	fi_close(&y->fid);
	y = NULL;
	CHECK(fi_control(&t.dom->fid, FI_CANCEL_WORK, &w[3]) == -FI_ENOENT,
	      "work on a closed counter still queued");
	fi_cntr_add(trig, 100);
	CHECK(!cancel_ep_close(trig), "endpoint close");
	rc = 0;
out:
	cntr_free(trig);
	cntr_free(other);
	cntr_free(x);
	cntr_free(y);
	return rc;
}

/* ------------------------------------------------------------------ */
/* features: what tcp's engine already gives sockets, checked on it.   */

/* FI_MULTI_RECV with FI_OPT_MIN_MULTI_RECV 100 (set at setup): three
 * 64-byte messages, the third releases the 256-byte buffer. */
static int feat_multi_recv(void)
{
	static char mbuf[256], sbuf[3][64];
	struct iovec iov = {mbuf, sizeof(mbuf)};
	struct fi_msg msg = {.msg_iov = &iov,
			     .iov_count = 1,
			     .addr = FI_ADDR_UNSPEC,
			     .context = mbuf};
	struct fi_cq_tagged_entry e;
	int i, rc = -1;

	CHECK(!fi_recvmsg(t.b.ep, &msg, FI_MULTI_RECV), "recvmsg");
	for (i = 0; i < 3; i++) {
		memset(sbuf[i], '0' + i, 64);
		CHECK(!fi_send(t.a.ep, sbuf[i], 64, NULL, t.ba, sbuf[i]),
		      "send");
		CHECK(wait_comp(&t.a, sbuf[i], NULL), "send completion");
		CHECK(wait_comp(&t.b, mbuf, &e), "receive %d", i);
		CHECK(e.buf == mbuf + 64 * i && e.len == 64 &&
			      mbuf[64 * i] == '0' + i,
		      "receive %d placed at %td", i, (char *)e.buf - mbuf);
		CHECK(!(e.flags & FI_MULTI_RECV) == (i < 2),
		      "receive %d: released %d", i,
		      !!(e.flags & FI_MULTI_RECV));
	}
	rc = 0;
out:
	return rc;
}

/* FI_RMA_EVENT: B's remote-write counter; writedata's CQ entry at B. */
static int feat_rma_event(void)
{
	uint64_t before = fi_cntr_read(t.b.rcntr);
	struct fi_cq_tagged_entry e;
	int rc = -1;

	memset(t.lbuf, 'e', 16);
	CHECK(!fi_writedata(t.a.ep, t.lbuf, 16, NULL, 0xd00d, t.ba, 1280, KEY,
			    t.lbuf),
	      "writedata");
	CHECK(wait_comp(&t.a, t.lbuf, NULL), "write completion");
	CHECK(wait_comp(&t.b, NULL, &e), "no CQ entry at the target");
	CHECK(e.data == 0xd00d && (e.flags & FI_REMOTE_CQ_DATA) &&
		      (e.flags & FI_REMOTE_WRITE),
	      "entry flags %lx data %lx", (unsigned long)e.flags,
	      (unsigned long)e.data);
	CHECK(wait_value(t.b.rcntr, before + 1), "remote write counter");
	CHECK(t.mem[1280] == 'e', "data");
	rc = 0;
out:
	return rc;
}

/* FI_UINT128 fetch-add and FI_INT128 compare-swap. */
static int feat_int128(void)
{
	unsigned __int128 *tgt = (unsigned __int128 *)(t.mem + 1536);
	unsigned __int128 one = ((unsigned __int128)1 << 64) | 2, res = 0,
			  old = ((unsigned __int128)7 << 100) | 9, cmp, swp;
	char ctx;
	int rc = -1;

	*tgt = old;
	CHECK(!fi_fetch_atomic(t.a.ep, &one, 1, NULL, &res, NULL, t.ba, 1536,
			       KEY, FI_UINT128, FI_SUM, &ctx),
	      "fetch");
	CHECK(wait_comp(&t.a, &ctx, NULL), "fetch completion");
	CHECK(res == old && *tgt == old + one, "fetch-add 128");
	cmp = old + one;
	swp = (unsigned __int128)-5;
	CHECK(!fi_compare_atomic(t.a.ep, &swp, 1, NULL, &cmp, NULL, &res, NULL,
				 t.ba, 1536, KEY, FI_INT128, FI_CSWAP, &ctx),
	      "compare");
	CHECK(wait_comp(&t.a, &ctx, NULL), "compare completion");
	CHECK(res == old + one && *tgt == swp, "compare-swap 128");
	rc = 0;
out:
	return rc;
}

/* 8 iovs (Debian's iov_limit): fi_sendv into fi_recvv, fi_writev and
 * fi_readv, and a writemsg with 8 remote iovs. */
#define NIOV 8
static int feat_iov8(void)
{
	struct iovec siov[NIOV], riov[NIOV];
	struct fi_rma_iov rma[NIOV];
	struct fi_msg_rma msg = {.msg_iov = siov,
				 .iov_count = NIOV,
				 .addr = t.ba,
				 .rma_iov = rma,
				 .rma_iov_count = NIOV,
				 .context = rma};
	char rbuf[NIOV * 8] = "";
	int i, rc = -1;

	CHECK(t.info->tx_attr->iov_limit == NIOV &&
		      t.info->tx_attr->rma_iov_limit == NIOV &&
		      t.info->rx_attr->iov_limit == NIOV,
	      "iov limits %zu %zu %zu", t.info->tx_attr->iov_limit,
	      t.info->tx_attr->rma_iov_limit, t.info->rx_attr->iov_limit);
	for (i = 0; i < NIOV; i++) {
		memset(t.lbuf + 16 * i, 'a' + i, 16);
		siov[i] = (struct iovec){t.lbuf + 16 * i, 3 + i};
		riov[i] = (struct iovec){rbuf + 8 * i, 8};
		rma[i] = (struct fi_rma_iov){1024 + 64 * i, 3 + i, KEY};
	}
	CHECK(!fi_recvv(t.b.ep, riov, NULL, NIOV, 0, rbuf), "recvv");
	CHECK(!fi_sendv(t.a.ep, siov, NULL, NIOV, t.ba, siov), "sendv");
	CHECK(wait_comp(&t.a, siov, NULL) && wait_comp(&t.b, rbuf, NULL),
	      "send");
	/* 3+4+...+10 = 52 bytes fill the 8-byte pieces in order */
	CHECK(rbuf[0] == 'a' && rbuf[3] == 'b' && rbuf[51] == 'h' && !rbuf[52],
	      "received %.52s", rbuf);
	memset(t.mem + 1024, 0, 512);
	CHECK(!fi_writemsg(t.a.ep, &msg, 0), "writemsg");
	CHECK(wait_comp(&t.a, rma, NULL), "writemsg completion");
	for (i = 0; i < NIOV; i++)
		CHECK(t.mem[1024 + 64 * i] == 'a' + i &&
			      t.mem[1024 + 64 * i + 2 + i] == 'a' + i &&
			      !t.mem[1024 + 64 * i + 3 + i],
		      "remote iov %d", i);
	CHECK(!fi_writev(t.a.ep, siov, NULL, NIOV, t.ba, 2048, KEY, siov),
	      "writev");
	CHECK(wait_comp(&t.a, siov, NULL), "writev completion");
	CHECK(t.mem[2048] == 'a' && t.mem[2048 + 51] == 'h', "writev data");
	memset(t.lbuf, 0, 16 * NIOV);
	CHECK(!fi_readv(t.a.ep, siov, NULL, NIOV, t.ba, 2048, KEY, siov),
	      "readv");
	CHECK(wait_comp(&t.a, siov, NULL), "readv completion");
	CHECK(t.lbuf[0] == 'a' && t.lbuf[16 * 7 + 9] == 'h', "readv data");
	rc = 0;
out:
	return rc;
}

static int case_features(void)
{
	int rc = -1;

	CHECK(!feat_multi_recv(), "multi-recv");
	CHECK(!feat_rma_event(), "rma event");
	CHECK(!feat_int128(), "int128");
	CHECK(!feat_iov8(), "8 iovs");
	rc = 0;
out:
	return rc;
}

/* ------------------------------------------------------------------ */
/* fence: a fenced transmit waits for the earlier ones.                 */

static int case_fence(void)
{
	char rctx, wctx, uctx;
	struct iovec iov = {t.lbuf + 128, 8};
	struct fi_rma_iov rma = {.addr = 2048, .len = 8, .key = KEY};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .iov_count = 1,
				 .addr = t.ba,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = &wctx};
	uint64_t end;
	ssize_t ret;
	int i, rc = -1;

	memset(t.mem, 'f', 64);
	memset(t.lbuf + 128, 'w', 8);
	/* B makes no progress until pumped: the read stays unanswered */
	CHECK(!fi_read(t.a.ep, t.lbuf, 64, NULL, t.ba, 0, KEY, &rctx), "read");
	for (i = 0; i < 3; i++) {
		stash(&t.a);
		CHECK((ret = fi_writemsg(t.a.ep, &msg, FI_FENCE)) == -FI_EAGAIN,
		      "fenced write went with a read in flight: %zd", ret);
	}
	msg.context = &uctx;
	CHECK(!fi_writemsg(t.a.ep, &msg, 0), "unfenced write");
	msg.context = &wctx;
	end = now_ms() + WAIT_MS;
	do {
		pump();
		ret = fi_writemsg(t.a.ep, &msg, FI_FENCE);
	} while (ret == -FI_EAGAIN && now_ms() < end);
	CHECK(!ret, "fenced write: %zd", ret);
	CHECK(wait_comp(&t.a, &rctx, NULL), "read completion");
	CHECK(wait_comp(&t.a, &uctx, NULL), "unfenced write completion");
	CHECK(wait_comp(&t.a, &wctx, NULL), "fenced write completion");
	CHECK(t.lbuf[0] == 'f' && t.mem[2048] == 'w', "data");
	rc = 0;
out:
	return rc;
}

/* ------------------------------------------------------------------ */
/* threads: triggers queued and counters stepped from several threads. */

#define NTHR 4
#define NPER 25

struct worker {
	pthread_t tid;
	int id;
	struct fid_cntr *trig, *x;
	struct fi_triggered_context tc[NPER];
	struct fi_deferred_work w[NPER];
	struct fi_op_cntr add;
	uint32_t sbuf[NPER];
	int err;
};

static void *worker_run(void *p)
{
	struct worker *wk = p;
	int i;

	wk->add = (struct fi_op_cntr){wk->x, 1};
	for (i = 0; i < NPER; i++) {
		struct iovec iov = {&wk->sbuf[i], sizeof(wk->sbuf[i])};
		struct fi_msg_tagged msg = {.msg_iov = &iov,
					    .iov_count = 1,
					    .addr = t.ba,
					    .tag = (uint64_t)wk->id,
					    .context = &wk->tc[i]};

		wk->sbuf[i] = (uint32_t)i;
		trig_ctx(&wk->tc[i], wk->trig, (size_t)i + 1);
		if (fi_tsendmsg(t.a.ep, &msg, FI_TRIGGER))
			wk->err++;
		work_init(&wk->w[i], wk->trig, (uint64_t)i + 1, NULL,
			  FI_OP_CNTR_ADD);
		wk->w[i].op.cntr = &wk->add;
		if (fi_control(&t.dom->fid, FI_QUEUE_WORK, &wk->w[i]))
			wk->err++;
		if (!(i % 5))
			usleep(500);
	}
	return NULL;
}

static void *stepper_run(void *p)
{
	int i;

	for (i = 0; i < NPER / 2 + 1; i++) {
		fi_cntr_add(p, 1);
		usleep(300);
	}
	return NULL;
}

static int case_threads(void)
{
	static struct worker wk[NTHR];
	static uint32_t rbuf[NTHR][NPER];
	pthread_t step[2];
	struct fid_cntr *trig = cntr_new(FI_WAIT_UNSPEC),
			*x = cntr_new(FI_WAIT_MUTEX_COND);
	int i, j, rc = -1;

	CHECK(trig && x, "cntr");
	for (i = 0; i < NTHR; i++)
		for (j = 0; j < NPER; j++)
			CHECK(!fi_trecv(t.b.ep, &rbuf[i][j], 4, NULL,
					FI_ADDR_UNSPEC, (uint64_t)i, 0,
					&rbuf[i][j]),
			      "trecv");
	for (i = 0; i < NTHR; i++) {
		wk[i] = (struct worker){.id = i, .trig = trig, .x = x};
		pthread_create(&wk[i].tid, NULL, worker_run, &wk[i]);
	}
	for (i = 0; i < 2; i++)
		pthread_create(&step[i], NULL, stepper_run, trig);
	for (i = 0; i < 2; i++)
		pthread_join(step[i], NULL);
	for (i = 0; i < NTHR; i++) {
		pthread_join(wk[i].tid, NULL);
		CHECK(!wk[i].err, "thread %d: %d calls failed", i, wk[i].err);
	}
	for (i = 0; i < NTHR; i++) {
		for (j = 0; j < NPER; j++) {
			CHECK(wait_comp(&t.b, &rbuf[i][j], NULL),
			      "thread %d message %d missing", i, j);
			CHECK(rbuf[i][j] == (uint32_t)j,
			      "thread %d: message %u arrived %dth", i,
			      rbuf[i][j], j);
			CHECK(wait_comp(&t.a, &wk[i].tc[j], NULL),
			      "thread %d send %d", i, j);
		}
	}
	CHECK(fi_cntr_wait(x, NTHR * NPER, WAIT_MS) == 0 &&
		      fi_cntr_read(x) == NTHR * NPER,
	      "counter work: %lu", (unsigned long)fi_cntr_read(x));
	rc = 0;
out:
	cntr_free(trig);
	cntr_free(x);
	return rc;
}

/* ------------------------------------------------------------------ */
/* cntr: wait objects, timeouts, 64-bit values.                        */

static void *add_later(void *p)
{
	usleep(50000);
	fi_cntr_add(p, 1);
	return NULL;
}

static int cntr_obj(enum fi_wait_obj obj)
{
	const uint64_t big = 1ULL << 40;
	struct fid_cntr *c = cntr_new(obj);
	pthread_t tid;
	int ret, rc = -1;

	CHECK(c, "open");
	CHECK((ret = fi_cntr_wait(c, 1, 20)) == -FI_ETIMEDOUT, "timeout %d",
	      ret);
	pthread_create(&tid, NULL, add_later, c);
	ret = fi_cntr_wait(c, 1, WAIT_MS);
	pthread_join(tid, NULL);
	CHECK(!ret, "woken: %d", ret);
	CHECK(!fi_cntr_set(c, big) && !fi_cntr_add(c, 3), "set, add");
	CHECK(fi_cntr_read(c) == big + 3, "64-bit value");
	CHECK(!fi_cntr_wait(c, big + 3, 0), "64-bit threshold met");
	CHECK(fi_cntr_wait(c, big + 4, 10) == -FI_ETIMEDOUT, "not met");
	CHECK(!fi_cntr_adderr(c, big) && fi_cntr_readerr(c) == big,
	      "64-bit error");
	rc = 0;
out:
	cntr_free(c);
	return rc;
}

static void *send_later(void *p)
{
	usleep(50000);
	if (!fi_send(t.a.ep, p, 8, NULL, t.ba, p))
		wait_comp(&t.a, p, NULL);
	return NULL;
}

/* B's receive counter (FI_WAIT_FD) in an epoll set of ours. */
static int cntr_epoll(void)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct fid *f = &t.b.cntr->fid;
	char sbuf[8] = "epoll", rbuf[8];
	uint64_t before = fi_cntr_read(t.b.cntr), end;
	int fd = -1, efd = -1, n = 0, rc = -1;
	pthread_t tid;
	bool started = false;

	CHECK(!fi_control(f, FI_GETWAIT, &fd) && fd >= 0, "FI_GETWAIT");
	CHECK((efd = epoll_create1(0)) >= 0, "epoll");
	CHECK(!epoll_ctl(efd, EPOLL_CTL_ADD, fd, &ev), "epoll_ctl");
	CHECK(!fi_recv(t.b.ep, rbuf, sizeof(rbuf), NULL, 0, rbuf), "recv");
	CHECK(!fi_trywait(t.fab, &f, 1), "trywait with nothing to do");
	pthread_create(&tid, NULL, send_later, sbuf);
	started = true;
	n = epoll_wait(efd, &ev, 1, WAIT_MS);
	CHECK(n == 1, "epoll_wait: %d", n);
	end = now_ms() + WAIT_MS;
	while (fi_cntr_read(t.b.cntr) == before && now_ms() < end) {
		if (!fi_trywait(t.fab, &f, 1))
			epoll_wait(efd, &ev, 1, 100);
	}
	CHECK(fi_cntr_read(t.b.cntr) == before + 1, "counter");
	CHECK(wait_comp(&t.b, rbuf, NULL) && !strcmp(rbuf, "epoll"), "data");
	rc = 0;
out:
	if (started)
		pthread_join(tid, NULL);
	if (efd >= 0)
		close(efd);
	return rc;
}

static int case_cntr(void)
{
	static const enum fi_wait_obj objs[] = {
		FI_WAIT_UNSPEC, FI_WAIT_MUTEX_COND, FI_WAIT_YIELD, FI_WAIT_FD};
	size_t i;
	int rc = -1;

	for (i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
		CHECK(!cntr_obj(objs[i]), "wait object %d", objs[i]);
	CHECK(!cntr_epoll(), "epoll");
	rc = 0;
out:
	return rc;
}

static int failed;

static void run(const char *name, int (*fn)(void))
{
	int ret = fn();

	printf("%s %s (%s progress, %s)\n", ret ? "FAIL" : "ok  ", name,
	       t.manual ? "manual" : "auto", t.shm ? "shm" : "tcp");
	fflush(stdout);
	if (ret)
		failed = 1;
}

int main(void)
{
	static const struct {
		bool manual, shm;
	} runs[] = {{true, false}, {false, false}, {true, true}, {false, true}};
	size_t i;
	int ret;

	/* fence needs B idle under manual progress: no thread of the
	 * provider's may serve it (fabric(7)). */
	setenv("FI_PROGRESS_TARGET", "0", 1);
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		ret = setup(runs[i].manual, runs[i].shm);
		if (ret == -FI_ENODATA && !i) {
			printf("SKIP: no sockets provider\n");
			return 77;
		}
		if (ret) {
			printf("FAIL setup (%zu): %d\n", i, ret);
			teardown();
			return 1;
		}
		run("trig", case_trig);
		run("opflags", case_opflags);
		run("order", case_order);
		run("work", case_work);
		run("cancel", case_cancel);
		if (runs[i].manual && !runs[i].shm)
			run("fence", case_fence);
		run("threads", case_threads);
		run("features", case_features);
		if (!i)
			run("cntr", case_cntr);
		teardown();
	}
	return failed;
}
