/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fuzz_api.c - libFuzzer harness over sequences of public API calls on
 * one provider (FUZZ_API_PROV: shm, tcp or sockets): up to three
 * endpoints of one domain in one process, opened, bound, enabled, posted
 * to (messages, tagged messages, RMA, atomics, collectives: join,
 * barrier, allreduce; triggered sends where the provider has FI_TRIGGER),
 * cancelled, polled (CQ, EQ, counters, blocking
 * reads with timeouts mostly 0, now and then a few ms, fi_trywait) and
 * closed in whatever order the input says, closes with work in flight
 * included; a second thread may poll one endpoint's CQ and counter
 * meanwhile (every provider here is FI_THREAD_SAFE). The fabric and
 * domain live across inputs, and so does the second thread, parked
 * between its turns; everything else is opened and closed by the input,
 * and what it leaves open is closed at its end, so no input leaves state
 * behind.
 *
 * Properties checked besides "no crash, no sanitizer report, no leak":
 *  - a completion or an EQ event names an operation that was posted and
 *    has not completed yet (at most one completion each); only a
 *    target's remote CQ data and an injection's error come without a
 *    context (fi_inject and friends complete silently otherwise);
 *  - fi_close answers 0 or -FI_EBUSY, and what is left at the end of an
 *    input closes within a bounded number of progress rounds;
 *  - a blocking read (fi_cq_sread, fi_cntr_wait, fi_eq_sread) returns
 *    within its timeout (plus FUZZ_API_SLACK_MS, default 1000, for a
 *    loaded machine).
 *
 * Pool mode (FUZZ_API_POOL=1): at the end of an input, what it posted is
 * cancelled and its completions read (settle), and where nothing is left
 * in flight the objects it left open stay open for the next input, so
 * that short inputs chain into long sequences over long-lived endpoints,
 * groups and queues, without the cost of opening them each time; where
 * something is (or every POOL_LIFE inputs) everything is closed as
 * above. An input's outcome then depends on the inputs before it: a
 * failure found this way is replayed by the run's own seed and inputs.
 *
 * Input: a byte stream of operations; each opcode byte is followed by the
 * operands it reads (a short input reads zeros). Built by
 * tests/util/fuzz_api.sh; with -DFUZZ_API_MAIN as a plain program that
 * runs the inputs named on its command line (regression inputs).
 */
#define _GNU_SOURCE
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "fuzz_check.h"

#define NEP	      3
#define NOPS	      256
#define BUF_SZ	      16384
#define MAX_IOV	      8
#define CLOSE_ROUNDS  2000
#define SETTLE_ROUNDS 64
#define POOL_LIFE     256

enum op_state { OP_FREE, OP_POSTED, OP_DONE };

/* One posted operation: its context is the address of its entry, which
 * starts with the triggered context a triggered post needs. */
struct op {
	struct fi_triggered_context2 trig;
	int state;
	int ep;
};

struct slot {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_mc *mc;
	int mc_joined;
	int enabled;
	int has_addr;
	fi_addr_t addr;
	char buf[BUF_SZ] __attribute__((aligned(64)));
	char res[BUF_SZ] __attribute__((aligned(64)));
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static int coll_ok, trig_ok;
static long slack_ms = 1000;
/* FUZZ_API_AVOID: the patterns of known, not yet fixed, faults that the
 * harness steers around so that a run can find new ones:
 *   mc-before-ep  close an endpoint's joined groups before the endpoint
 *                 (an endpoint closed first frees them under the
 *                 application's fid_mc);
 *   barrier       no fi_barrier (the engine offsets the NULL buffer of a
 *                 barrier's step, undefined behaviour);
 *   trigger       no triggered operations (an item outlives its endpoint
 *                 and its counter in the process-wide queue). */
static int avoid_ep_mc, avoid_barrier;
/* FUZZ_API_POOL=1: what an input leaves open stays open for the next
 * one, as long as nothing it posted is still in flight (see settle). */
static int pool;
static unsigned pool_age;

/* Per input. */
static struct slot slots[NEP];
static struct fid_av *av;
static struct fid_eq *eq;
static struct fid_mr *mr;
static struct fid_av_set *set;
static fi_addr_t set_addr;
static struct op ops[NOPS];
static char rma_buf[BUF_SZ] __attribute__((aligned(64)));

static const uint8_t *in;
static size_t in_len, in_pos;

/* The poller thread: started once and kept across inputs, so that an
 * input does not pay a thread's start and join; handed a slot to poll
 * (poller_want) and parked again by poller_halt, which returns once the
 * thread is out of the library's calls on that slot. */
static pthread_t poller;
static pthread_mutex_t poller_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t poller_cond = PTHREAD_COND_INITIALIZER;
static int poller_want = -1;  /* the slot polled; -1: parked */
static int poller_parked = 1; /* the thread saw -1 and is parked */

static uint8_t rd8(void)
{
	return in_pos < in_len ? in[in_pos++] : 0;
}

static uint16_t rd16(void)
{
	return (uint16_t)(rd8() | rd8() << 8);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct op *new_op(int ep)
{
	int i;

	for (i = 0; i < NOPS; i++) {
		if (__atomic_load_n(&ops[i].state, __ATOMIC_ACQUIRE) != OP_FREE)
			continue;
		/* Posted before the call: the poller thread may read its
		 * completion before the call returns. */
		__atomic_store_n(&ops[i].ep, ep, __ATOMIC_RELAXED);
		__atomic_store_n(&ops[i].state, OP_POSTED, __ATOMIC_RELEASE);
		return &ops[i];
	}
	return NULL;
}

/* A call that failed posted nothing: the entry is free again. */
static void posted(struct op *op, ssize_t ret)
{
	if (ret)
		__atomic_store_n(&op->state, OP_FREE, __ATOMIC_RELEASE);
}

/* A completion (or join event) for CTX: exactly one per posted op. */
static void completed(void *ctx, uint64_t flags, int err)
{
	struct op *op = ctx;
	int want = OP_POSTED;

	if (!ctx) {
		/* Only a target's remote CQ data carries no context, and the
		 * error of an injection (errors are always reported). */
		if (err)
			return;
		if (!(flags & FI_REMOTE_CQ_DATA))
			fprintf(stderr, "no context, flags %s\n",
				fi_tostr(&flags, FI_TYPE_CQ_EVENT_FLAGS));
		CHECK(flags & FI_REMOTE_CQ_DATA);
		return;
	}
	CHECK(op >= ops && op < ops + NOPS);
	CHECK(__atomic_compare_exchange_n(&op->state, &want, OP_DONE, 0,
					  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
}

/* Reads a few completions; answers what fi_cq_read answered. */
static ssize_t drain_cq(struct fid_cq *cq)
{
	struct fi_cq_data_entry e[4];
	struct fi_cq_err_entry err;
	ssize_t n;
	int i;

	if (!cq)
		return -FI_EAGAIN;
	n = fi_cq_read(cq, e, 4);
	for (i = 0; i < n; i++)
		completed(e[i].op_context, e[i].flags, 0);
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(cq, &err, 0) == 1) {
			CHECK(err.err > 0);
			completed(err.op_context, err.flags, err.err);
		}
		return n;
	}
	CHECK(n >= 0 || n == -FI_EAGAIN);
	return n;
}

/* Reads an event; answers what fi_eq_read answered. */
static ssize_t drain_eq(void)
{
	struct fi_eq_err_entry err;
	struct fi_eq_entry e;
	uint32_t ev;
	ssize_t n;

	if (!eq)
		return -FI_EAGAIN;
	n = fi_eq_read(eq, &ev, &e, sizeof(e), 0);
	if (n > 0 && ev == FI_JOIN_COMPLETE) {
		completed(e.context, 0, 0);
		return n;
	}
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_eq_readerr(eq, &err, 0) > 0) {
			CHECK(err.err > 0);
			completed(err.context, 0, err.err);
		}
		return n;
	}
	CHECK(n > 0 || n == -FI_EAGAIN);
	return n;
}

static void progress_all(void)
{
	int i;

	for (i = 0; i < NEP; i++) {
		drain_cq(slots[i].cq);
		if (slots[i].cntr)
			(void)fi_cntr_read(slots[i].cntr);
	}
	drain_eq();
}

static void *poll_main(void *arg)
{
	struct slot *s;
	int want;

	for (;;) {
		want = __atomic_load_n(&poller_want, __ATOMIC_ACQUIRE);
		if (want < 0) {
			pthread_mutex_lock(&poller_lock);
			poller_parked = 1;
			pthread_cond_broadcast(&poller_cond);
			while (poller_want < 0)
				pthread_cond_wait(&poller_cond, &poller_lock);
			poller_parked = 0;
			pthread_mutex_unlock(&poller_lock);
			continue;
		}
		s = &slots[want];
		drain_cq(s->cq);
		if (s->cntr)
			(void)fi_cntr_read(s->cntr);
		/* A mutex is no queue: polling back to back, this thread
		 * would take the endpoint's and the CQ's locks again before
		 * the input's calls waiting on them ever got them. */
		sched_yield();
	}
	return arg;
}

static void poller_halt(void)
{
	if (poller_want < 0)
		return;
	pthread_mutex_lock(&poller_lock);
	__atomic_store_n(&poller_want, -1, __ATOMIC_RELEASE);
	while (!poller_parked)
		pthread_cond_wait(&poller_cond, &poller_lock);
	pthread_mutex_unlock(&poller_lock);
}

static void poller_start(int i)
{
	static int started;

	pthread_mutex_lock(&poller_lock);
	poller_want = i;
	if (!started) {
		/* Not parked: it polls from its first instruction. */
		poller_parked = 0;
		CHECK(!pthread_create(&poller, NULL, poll_main, NULL));
		started = 1;
	}
	pthread_cond_broadcast(&poller_cond);
	pthread_mutex_unlock(&poller_lock);
}

/* A close answers 0 or -FI_EBUSY; on 0 the handle is gone. */
static int try_close(struct fid *fid)
{
	int ret = fi_close(fid);

	CHECK(ret == 0 || ret == -FI_EBUSY);
	return ret;
}

#define CLOSE(p)                                                               \
	do {                                                                   \
		if ((p) && !try_close(&(p)->fid))                              \
			(p) = NULL;                                            \
	} while (0)

static void close_mc(int i)
{
	if (!slots[i].mc)
		return;
	if (!try_close(&slots[i].mc->fid)) {
		slots[i].mc = NULL;
		slots[i].mc_joined = 0;
	}
}

static void close_ep(int i)
{
	struct slot *s = &slots[i];
	int k;

	if (!s->ep)
		return;
	if (poller_want == i)
		poller_halt();
	if (avoid_ep_mc && s->mc) {
		close_mc(i);
		if (s->mc)
			return;
	}
	if (try_close(&s->ep->fid))
		return;
	s->ep = NULL;
	s->enabled = 0;
	/* What it had posted is dropped by the close; what completed
	 * before may still be read once. */
	for (k = 0; k < NOPS; k++)
		if (__atomic_load_n(&ops[k].ep, __ATOMIC_RELAXED) == i)
			__atomic_store_n(&ops[k].ep, -1, __ATOMIC_RELAXED);
}

static uint64_t rand_wait(void)
{
	static const enum fi_wait_obj w[] = {FI_WAIT_NONE, FI_WAIT_UNSPEC,
					     FI_WAIT_FD, FI_WAIT_MUTEX_COND};

	return w[rd8() % 4];
}

static size_t rand_size(uint8_t v, size_t dflt)
{
	static const size_t sizes[] = {1, 4, 64, 0};

	return sizes[v % 4] ? sizes[v % 4] : dflt;
}

static void op_open_ep(void)
{
	struct slot *s = &slots[rd8() % NEP];
	struct fi_info *i2;
	uint8_t v = rd8();

	if (s->ep)
		return;
	i2 = fi_dupinfo(info);
	CHECK(i2);
	/* Queue sizes: 1, small ones that fill up within an input, the
	 * default (the most). The default pre-allocates its whole queue, the
	 * dearest part of an open: a quarter of the opens only. */
	i2->tx_attr->size = rand_size(v, info->tx_attr->size);
	i2->rx_attr->size = rand_size(v >> 2, info->rx_attr->size);
	if (v & 16)
		i2->tx_attr->inject_size = v & 32 ? 0 : 64;
	if (fi_endpoint(domain, i2, &s->ep, NULL))
		s->ep = NULL;
	fi_freeinfo(i2);
}

static void op_open_cq(void)
{
	struct slot *s = &slots[rd8() % NEP];
	struct fi_cq_attr attr = {0};
	uint8_t v = rd8();

	if (s->cq)
		return;
	attr.format = FI_CQ_FORMAT_DATA;
	attr.wait_obj = rand_wait();
	attr.size = v & 1 ? 1 : v & 2 ? 4 : 0;
	if (fi_cq_open(domain, &attr, &s->cq, NULL))
		s->cq = NULL;
}

static void op_open_cntr(void)
{
	struct slot *s = &slots[rd8() % NEP];
	struct fi_cntr_attr attr = {0};

	if (s->cntr)
		return;
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.wait_obj = rand_wait();
	if (fi_cntr_open(domain, &attr, &s->cntr, NULL))
		s->cntr = NULL;
}

static void op_open_shared(void)
{
	struct fi_eq_attr eattr = {0};
	struct fi_av_attr aattr = {0};
	uint8_t v = rd8();

	if (!av && (v & 1)) {
		aattr.type = v & 2 ? FI_AV_MAP : FI_AV_TABLE;
		if (fi_av_open(domain, &aattr, &av, NULL))
			av = NULL;
	}
	if (!eq && (v & 4)) {
		eattr.wait_obj = rand_wait();
		eattr.size = v & 8 ? 1 : 0;
		if (fi_eq_open(fabric, &eattr, &eq, NULL))
			eq = NULL;
	}
	if (!mr && (v & 16)) {
		if (fi_mr_reg(domain, rma_buf, sizeof(rma_buf),
			      FI_READ | FI_WRITE | FI_REMOTE_READ |
				      FI_REMOTE_WRITE | FI_SEND | FI_RECV,
			      0, 0, 0, &mr, NULL))
			mr = NULL;
	}
}

static void op_bind(void)
{
	static const uint64_t cq_flags[] = {
		FI_TRANSMIT | FI_RECV,
		FI_TRANSMIT,
		FI_RECV,
		FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION,
	};
	static const uint64_t cntr_flags[] = {
		FI_SEND | FI_RECV,
		FI_READ | FI_WRITE,
		FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
			FI_REMOTE_WRITE,
		FI_REMOTE_WRITE,
	};
	struct slot *s = &slots[rd8() % NEP];
	uint8_t v = rd8();

	if (!s->ep)
		return;
	switch (v % 4) {
	case 0:
		if (s->cq)
			(void)fi_ep_bind(s->ep, &s->cq->fid,
					 cq_flags[(v >> 2) % 4]);
		break;
	case 1:
		if (s->cntr)
			(void)fi_ep_bind(s->ep, &s->cntr->fid,
					 cntr_flags[(v >> 2) % 4]);
		break;
	case 2:
		if (av)
			(void)fi_ep_bind(s->ep, &av->fid, 0);
		break;
	default:
		if (eq)
			(void)fi_ep_bind(s->ep, &eq->fid, 0);
		break;
	}
}

static void op_enable(void)
{
	int i = rd8() % NEP;
	struct slot *s = &slots[i];
	char name[256];
	size_t len = sizeof(name);

	if (!s->ep || s->enabled)
		return;
	if (fi_enable(s->ep))
		return;
	s->enabled = 1;
	if (!av || fi_getname(&s->ep->fid, name, &len))
		return;
	s->has_addr = fi_av_insert(av, name, 1, &s->addr, 0, NULL) == 1;
}

/* A destination: a slot's address, or now and then one never inserted. */
static fi_addr_t rand_dest(uint8_t v)
{
	if (v == 0xff)
		return 1000;
	if (v == 0xfe)
		return FI_ADDR_UNSPEC;
	return slots[v % NEP].has_addr ? slots[v % NEP].addr : 0;
}

static size_t rand_iov(struct slot *s, struct iovec *iov, size_t max_len)
{
	size_t cnt = rd8() % (MAX_IOV + 1), i, off, len;

	for (i = 0; i < cnt; i++) {
		off = rd16() % BUF_SZ;
		len = rd16() % (BUF_SZ - off + 1);
		if (len > max_len)
			len = max_len;
		iov[i].iov_base = s->buf + off;
		iov[i].iov_len = len;
	}
	return cnt;
}

static void op_post_msg(void)
{
	int i = rd8() % NEP;
	struct slot *s = &slots[i];
	uint8_t kind = rd8(), dv = rd8(), fv = rd8();
	struct iovec iov[MAX_IOV];
	struct fi_msg_tagged tmsg;
	struct fi_msg msg;
	size_t cnt, len;
	uint64_t tag = rd8() % 4, flags = 0;
	fi_addr_t dest = rand_dest(dv);
	struct op *op;
	ssize_t ret;

	if (!s->ep)
		return;
	op = new_op(i);
	if (!op)
		return;
	len = rd16() % (BUF_SZ + 1);
	if (fv & 1)
		flags |= FI_COMPLETION;
	if (fv & 2)
		flags |= FI_REMOTE_CQ_DATA;
	if (fv & 4)
		flags |= FI_INJECT_COMPLETE;
	if (fv & 8)
		flags |= FI_TRANSMIT_COMPLETE;
	if (fv & 16)
		flags |= FI_DELIVERY_COMPLETE;
	/* FI_INJECT only within inject_size: the call may refuse it. */
	if (fv & 32)
		flags |= FI_INJECT;
	/* Deferred until a counter of this slot (or of another one) reaches
	 * a threshold near its value: fi_cntr_add fires it. */
	if ((fv & 64) && trig_ok && slots[tag % NEP].cntr) {
		flags |= FI_TRIGGER;
		op->trig.event_type = FI_TRIGGER_THRESHOLD;
		op->trig.trigger.threshold.cntr = slots[tag % NEP].cntr;
		op->trig.trigger.threshold.threshold =
			fi_cntr_read(slots[tag % NEP].cntr) + (fv >> 7);
	}
	switch (kind % 10) {
	case 0:
		ret = fi_send(s->ep, s->buf, len, NULL, dest, op);
		break;
	case 1:
		ret = fi_recv(s->ep, s->buf, len, NULL,
			      dv & 1 ? FI_ADDR_UNSPEC : dest, op);
		break;
	case 2:
		ret = fi_tsend(s->ep, s->buf, len, NULL, dest, tag, op);
		break;
	case 3:
		ret = fi_trecv(s->ep, s->buf, len, NULL,
			       dv & 1 ? FI_ADDR_UNSPEC : dest, tag, fv & 3, op);
		break;
	case 4:
		(void)fi_inject(s->ep, s->buf, len % 128, dest);
		posted(op, 1);
		return;
	case 5:
		(void)fi_tinjectdata(s->ep, s->buf, len % 128, 7, dest, tag);
		posted(op, 1);
		return;
	case 6:
		cnt = rand_iov(s, iov, BUF_SZ);
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.iov_count = cnt;
		msg.addr = dest;
		msg.context = op;
		msg.data = 5;
		ret = fi_sendmsg(s->ep, &msg, flags);
		break;
	case 7:
		cnt = rand_iov(s, iov, BUF_SZ);
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.iov_count = cnt;
		msg.addr = FI_ADDR_UNSPEC;
		msg.context = op;
		ret = fi_recvmsg(s->ep, &msg, flags & FI_COMPLETION);
		break;
	case 8:
		cnt = rand_iov(s, iov, BUF_SZ);
		memset(&tmsg, 0, sizeof(tmsg));
		tmsg.msg_iov = iov;
		tmsg.iov_count = cnt;
		tmsg.addr = dest;
		tmsg.tag = tag;
		tmsg.context = op;
		tmsg.data = 9;
		ret = fi_tsendmsg(s->ep, &tmsg, flags);
		break;
	default:
		ret = fi_senddata(s->ep, s->buf, len, NULL, 3, dest, op);
		break;
	}
	/* Under FI_SELECTIVE_COMPLETION an op without FI_COMPLETION completes
	 * silently: the check is "at most once" for every post. */
	posted(op, ret);
}

static void op_post_rma(void)
{
	int i = rd8() % NEP;
	struct slot *s = &slots[i];
	uint8_t kind = rd8(), dv = rd8();
	size_t off = rd16() % BUF_SZ, len = rd16() % (BUF_SZ + 1);
	fi_addr_t dest = rand_dest(dv);
	uint64_t key, raddr;
	struct op *op;
	ssize_t ret;

	if (!s->ep)
		return;
	op = new_op(i);
	if (!op)
		return;
	key = mr ? fi_mr_key(mr) : 0;
	raddr = (uint64_t)(uintptr_t)rma_buf + (dv & 0x80 ? BUF_SZ : off);
	if (!(dv & 0x40) && off + len > BUF_SZ)
		len = BUF_SZ - off;
	if (kind & 0x10)
		key ^= 1;
	switch (kind % 5) {
	case 0:
		ret = fi_write(s->ep, s->buf, len, NULL, dest, raddr, key, op);
		break;
	case 1:
		ret = fi_read(s->ep, s->buf, len, NULL, dest, raddr, key, op);
		break;
	case 2:
		ret = fi_writedata(s->ep, s->buf, len, NULL, 11, dest, raddr,
				   key, op);
		break;
	case 3:
		(void)fi_inject_write(s->ep, s->buf, len % 128, dest, raddr,
				      key);
		posted(op, 1);
		return;
	default: {
		struct iovec iov[MAX_IOV];
		struct fi_rma_iov rma = {raddr, len, key};
		struct fi_msg_rma msg = {0};

		msg.msg_iov = iov;
		msg.iov_count = rand_iov(s, iov, BUF_SZ);
		msg.addr = dest;
		msg.rma_iov = &rma;
		msg.rma_iov_count = 1;
		msg.context = op;
		ret = (kind & 0x20) ? fi_readmsg(s->ep, &msg, 0)
				    : fi_writemsg(s->ep, &msg,
						  kind & 0x40 ? FI_FENCE : 0);
		break;
	}
	}
	posted(op, ret);
}

static void op_post_atomic(void)
{
	int i = rd8() % NEP;
	struct slot *s = &slots[i];
	uint8_t kind = rd8(), dv = rd8();
	enum fi_datatype dt = rd8() % (FI_LONG_DOUBLE_COMPLEX + 1);
	enum fi_op aop = rd8() % (FI_MSWAP + 1);
	size_t cnt = rd8() % 64, off = (rd16() % (BUF_SZ / 2)) & ~(size_t)15;
	fi_addr_t dest = rand_dest(dv);
	uint64_t key = mr ? fi_mr_key(mr) : 0;
	uint64_t raddr = (uint64_t)(uintptr_t)rma_buf + off;
	struct op *op;
	ssize_t ret;

	if (!s->ep)
		return;
	op = new_op(i);
	if (!op)
		return;
	if (kind & 0x80)
		raddr += 1; /* misaligned for the type */
	switch (kind % 4) {
	case 0:
		ret = fi_atomic(s->ep, s->buf, cnt, NULL, dest, raddr, key, dt,
				aop, op);
		break;
	case 1:
		ret = fi_fetch_atomic(s->ep, s->buf, cnt, NULL, s->res, NULL,
				      dest, raddr, key, dt, aop, op);
		break;
	case 2:
		ret = fi_compare_atomic(s->ep, s->buf, cnt, NULL,
					s->buf + BUF_SZ / 2, NULL, s->res, NULL,
					dest, raddr, key, dt, aop, op);
		break;
	default:
		(void)fi_inject_atomic(s->ep, s->buf, cnt % 4, dest, raddr, key,
				       dt, aop);
		posted(op, 1);
		return;
	}
	posted(op, ret);
}

static void op_coll(void)
{
	int i = rd8() % NEP;
	struct slot *s = &slots[i];
	uint8_t kind = rd8(), v = rd8();
	struct fi_av_set_attr attr = {0};
	struct op *op;
	ssize_t ret;
	int k;

	if (!coll_ok)
		return;
	switch (kind % 5) {
	case 0: /* an AV set of the addresses of the endpoints so far */
		if (set || !av)
			return;
		attr.count = NEP;
		attr.start_addr = FI_ADDR_NOTAVAIL;
		attr.end_addr = FI_ADDR_NOTAVAIL;
		attr.stride = 1;
		if (fi_av_set(av, &attr, &set, NULL)) {
			set = NULL;
			return;
		}
		for (k = 0; k < NEP; k++)
			if (slots[k].has_addr && !((v >> k) & 1))
				(void)fi_av_set_insert(set, slots[k].addr);
		if (fi_av_set_addr(set, &set_addr))
			set_addr = FI_ADDR_NOTAVAIL;
		return;
	case 1:
		if (set)
			CLOSE(set);
		return;
	case 2: /* join */
		if (!s->ep || s->mc || !set)
			return;
		op = new_op(i);
		if (!op)
			return;
		ret = fi_join_collective(s->ep, set_addr, set, 0, &s->mc, op);
		if (ret)
			s->mc = NULL;
		posted(op, ret);
		return;
	case 3:
		if (!s->ep || !s->mc || avoid_barrier)
			return;
		op = new_op(i);
		if (!op)
			return;
		ret = fi_barrier(s->ep, fi_mc_addr(s->mc), op);
		posted(op, ret);
		return;
	default: {
		static const enum fi_datatype dts[] = {FI_INT32, FI_UINT64,
						       FI_DOUBLE, FI_INT8};
		static const enum fi_op aops[] = {FI_SUM, FI_MIN, FI_BOR,
						  FI_PROD};
		size_t cnt = rd16() % 1025;

		if (!s->ep || !s->mc)
			return;
		op = new_op(i);
		if (!op)
			return;
		ret = fi_allreduce(s->ep, s->buf, cnt, NULL, s->res, NULL,
				   fi_mc_addr(s->mc), dts[v % 4],
				   aops[(v >> 2) % 4], 0, op);
		posted(op, ret);
		return;
	}
	}
}

static void op_cancel(void)
{
	struct op *op = &ops[rd8() % NOPS];
	int ep = __atomic_load_n(&op->ep, __ATOMIC_RELAXED);

	if (__atomic_load_n(&op->state, __ATOMIC_ACQUIRE) != OP_POSTED ||
	    ep < 0 || !slots[ep].ep)
		return;
	(void)fi_cancel(&slots[ep].ep->fid, op);
}

static void check_time(long t0, int timeout)
{
	long spent = now_ms() - t0;

	if (spent > timeout + slack_ms) {
		fprintf(stderr, "blocked %ld ms, timeout %d ms\n", spent,
			timeout);
		CHECK(spent <= timeout + slack_ms);
	}
}

/* A timeout: mostly 0 (a wait that returns at once still takes the
 * blocking path), now and then a few ms, so that an input spends its
 * time in calls rather than asleep. */
static int rand_timeout(void)
{
	uint8_t v = rd8();

	/* The pool's inputs are short: a sleep would be most of one. */
	if (pool)
		return v < 0xfc ? 0 : v % 4;
	return v < 0xe0 ? 0 : v % 16;
}

static void op_wait(void)
{
	struct slot *s = &slots[rd8() % NEP];
	uint8_t kind = rd8();
	int timeout = rand_timeout();
	struct fi_cq_data_entry e;
	struct fi_eq_entry ee;
	uint32_t ev;
	long t0 = now_ms();
	ssize_t n;

	switch (kind % 4) {
	case 0:
		if (!s->cq || (poller_want >= 0 && &slots[poller_want] == s))
			return;
		n = fi_cq_sread(s->cq, &e, 1, NULL, timeout);
		if (n == 1)
			completed(e.op_context, e.flags, 0);
		else if (n == -FI_EAVAIL)
			drain_cq(s->cq);
		break;
	case 1:
		if (!s->cntr)
			return;
		(void)fi_cntr_wait(s->cntr, fi_cntr_read(s->cntr) + 1, timeout);
		break;
	case 2: /* fires what waits on the counter */
		if (s->cntr)
			(void)fi_cntr_add(s->cntr, (kind >> 2) % 3);
		return;
	default:
		if (!eq)
			return;
		n = fi_eq_sread(eq, &ev, &ee, sizeof(ee), timeout, 0);
		if (n > 0 && ev == FI_JOIN_COMPLETE)
			completed(ee.context, 0, 0);
		else if (n == -FI_EAVAIL)
			drain_eq();
		break;
	}
	check_time(t0, timeout);
}

static void op_trywait(void)
{
	struct slot *s = &slots[rd8() % NEP];
	uint8_t v = rd8();
	struct fid *fids[3];
	enum fi_wait_obj wait_obj;
	struct pollfd pfd;
	int n = 0, fd, ret, timeout;
	long t0;

	if ((v & 1) && s->cq && !(poller_want >= 0 && &slots[poller_want] == s))
		fids[n++] = &s->cq->fid;
	if ((v & 2) && s->cntr)
		fids[n++] = &s->cntr->fid;
	if ((v & 4) && eq)
		fids[n++] = &eq->fid;
	if (!n)
		return;
	ret = fi_trywait(fabric, fids, n);
	if (ret || n != 1 || !(v & 8))
		return;
	/* Armed: sleep on its fd, if it has one, for a short while. */
	if (fi_control(fids[0], FI_GETWAITOBJ, &wait_obj) ||
	    wait_obj != FI_WAIT_FD || fi_control(fids[0], FI_GETWAIT, &fd) ||
	    fd < 0)
		return;
	pfd.fd = fd;
	pfd.events = POLLIN;
	timeout = rand_timeout();
	t0 = now_ms();
	(void)poll(&pfd, 1, timeout);
	check_time(t0, timeout);
}

static void op_close(void)
{
	int i = rd8() % NEP;
	struct slot *s = &slots[i];

	switch (rd8() % 8) {
	case 0:
		close_ep(i);
		break;
	case 1:
		if (poller_want == i)
			poller_halt();
		CLOSE(s->cq);
		break;
	case 2:
		if (poller_want == i)
			poller_halt();
		CLOSE(s->cntr);
		break;
	case 3:
		close_mc(i);
		break;
	case 4:
		CLOSE(av);
		break;
	case 5:
		CLOSE(eq);
		break;
	case 6:
		CLOSE(mr);
		break;
	default:
		CLOSE(set);
		break;
	}
}

static void op_thread(void)
{
	int i = rd8() % NEP;

	if (poller_want >= 0) {
		poller_halt();
		return;
	}
	if (!slots[i].cq && !slots[i].cntr)
		return;
	poller_start(i);
}

static void op_getinfo(void)
{
	struct fi_info *hints = fi_dupinfo(info), *res = NULL;
	uint8_t v = rd8();

	CHECK(hints);
	if (v & 1)
		hints->tx_attr->size = v & 2 ? SIZE_MAX : 0;
	if (v & 4)
		hints->tx_attr->inject_size = v & 8 ? SIZE_MAX : 0;
	if (v & 16)
		hints->ep_attr->max_msg_size = SIZE_MAX;
	if (v & 32)
		hints->tx_attr->iov_limit = v & 64 ? SIZE_MAX : MAX_IOV + 1;
	if (v & 128)
		hints->domain_attr->cq_cnt = SIZE_MAX;
	if (!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &res))
		fi_freeinfo(res);
	fi_freeinfo(hints);
}

/*
 * Pool mode's end of an input: cancels what is still posted and reads
 * completions and events until none is left. True when no operation is
 * in flight and no completion is unread, so that the next input may
 * start on the objects left open: its checks then hold as after a full
 * teardown. An operation that neither completes nor cancels (a send to
 * a peer that never receives, a collective that only one member posted,
 * one without a completion under FI_SELECTIVE_COMPLETION) answers false.
 */
static int settle(void)
{
	int round, k, ep, busy;

	poller_halt();
	for (round = 0; round < SETTLE_ROUNDS; round++) {
		busy = 0;
		for (k = 0; k < NOPS; k++) {
			if (__atomic_load_n(&ops[k].state, __ATOMIC_ACQUIRE) !=
			    OP_POSTED)
				continue;
			ep = __atomic_load_n(&ops[k].ep, __ATOMIC_RELAXED);
			/* Dropped by its endpoint's close. */
			if (ep < 0)
				continue;
			busy++;
			if (!round)
				(void)fi_cancel(&slots[ep].ep->fid, &ops[k]);
		}
		progress_all();
		if (!busy)
			break;
	}
	if (round == SETTLE_ROUNDS)
		return 0;
	/* Completions of operations whose endpoint is closed are read
	 * once; the queues end empty. */
	for (round = 0; round < SETTLE_ROUNDS; round++) {
		busy = drain_eq() != -FI_EAGAIN;
		for (k = 0; k < NEP; k++)
			busy += drain_cq(slots[k].cq) != -FI_EAGAIN;
		if (!busy)
			break;
	}
	return round < SETTLE_ROUNDS;
}

/* Closes what the input left open, children first; each close may need
 * progress before it succeeds. */
static void teardown(void)
{
	int round, i, left;

	poller_halt();
	for (round = 0; round < CLOSE_ROUNDS; round++) {
		left = 0;
		for (i = 0; i < NEP; i++) {
			close_mc(i);
			left += !!slots[i].mc;
		}
		if (!left)
			break;
		progress_all();
	}
	CHECK(round < CLOSE_ROUNDS);
	for (i = 0; i < NEP; i++) {
		close_ep(i);
		CHECK(!slots[i].ep);
	}
	CLOSE(set);
	CHECK(!set);
	CLOSE(mr);
	CHECK(!mr);
	CLOSE(av);
	CHECK(!av);
	for (i = 0; i < NEP; i++) {
		CLOSE(slots[i].cq);
		CHECK(!slots[i].cq);
		CLOSE(slots[i].cntr);
		CHECK(!slots[i].cntr);
		slots[i].has_addr = 0;
		slots[i].mc_joined = 0;
	}
	CLOSE(eq);
	CHECK(!eq);
	memset(ops, 0, sizeof(ops));
}

static void setup(void)
{
	const char *prov = getenv("FUZZ_API_PROV");
	const char *slack = getenv("FUZZ_API_SLACK_MS");
	const char *avoid;
	struct fi_info *hints;

	prov = prov ? prov : "shm";
	if (slack)
		slack_ms = atol(slack);
	avoid = getenv("FUZZ_API_AVOID");
	avoid_ep_mc = avoid && strstr(avoid, "mc-before-ep");
	avoid_barrier = avoid && strstr(avoid, "barrier");
	pool = getenv("FUZZ_API_POOL") && atoi(getenv("FUZZ_API_POOL"));
	hints = fi_allocinfo();
	CHECK(hints);
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_COLLECTIVE;
	trig_ok = !(getenv("FUZZ_API_AVOID") &&
		    strstr(getenv("FUZZ_API_AVOID"), "trigger"));
	hints->domain_attr->threading = FI_THREAD_SAFE;
	/* FUZZ_API_PROGRESS=manual (with FI_PROGRESS_TARGET=0): no progress
	 * thread. Beside the pool's long-lived endpoints one spins
	 * (FI_PROGRESS_SPIN=-1) while any work is in flight, and takes the
	 * CPU and the endpoint's lock from the input's own calls. */
	if (getenv("FUZZ_API_PROGRESS") &&
	    !strcmp(getenv("FUZZ_API_PROGRESS"), "manual")) {
		hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
		hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	}
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	coll_ok = !fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	if (!coll_ok) {
		hints->caps &= ~FI_COLLECTIVE;
		CHECK(!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				  &info));
	}
	/* Triggered operations where the provider has them. */
	if (trig_ok) {
		hints->caps = info->caps | FI_TRIGGER;
		fi_freeinfo(info);
		trig_ok = !fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				      &info);
		if (!trig_ok) {
			hints->caps &= ~FI_TRIGGER;
			CHECK(!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0,
					  hints, &info));
		}
	}
	fi_freeinfo(hints);
	CHECK(!fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(!fi_domain(fabric, info, &domain, NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void (*const table[])(void) = {
		op_open_ep,  op_open_cq,     op_open_cntr, op_open_shared,
		op_bind,     op_enable,	     op_post_msg,  op_post_msg,
		op_post_rma, op_post_atomic, op_coll,	   op_coll,
		op_cancel,   progress_all,   progress_all, op_wait,
		op_trywait,  op_close,	     op_thread,	   op_getinfo,
	};
	int n = 0;

	if (!domain)
		setup();
	in = data;
	in_len = size;
	in_pos = 0;
	while (in_pos < in_len && n++ < 64)
		table[rd8() % (sizeof(table) / sizeof(table[0]))]();
	if (pool && ++pool_age < POOL_LIFE && settle()) {
		memset(ops, 0, sizeof(ops));
		return 0;
	}
	pool_age = 0;
	teardown();
	return 0;
}

#ifdef FUZZ_API_MAIN
/* Runs each file named as one input: the regression corpus. */
int main(int argc, char **argv)
{
	printf("fuzz_api: %d inputs\n",
	       fuzz_run_files(argc, argv, LLVMFuzzerTestOneInput));
	return 0;
}
#endif
