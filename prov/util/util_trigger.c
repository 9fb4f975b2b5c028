/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_trigger.c - triggered operations (FI_TRIGGER with struct
 * fi_triggered_context), deferred work (FI_QUEUE_WORK, FI_CANCEL_WORK,
 * FI_FLUSH_WORK) and FI_FENCE for util endpoints; see ofi_trigger.h.
 *
 * Every waiting operation is an item on one process-wide pending list,
 * kept in threshold order (equal thresholds in submission order), so the
 * items a counter change satisfies move to the ready list in the order
 * fi_trigger(3) asks. One thread at a time starts ready items (the
 * trylock of trig_run), outside every provider lock: an item started
 * while its endpoint's queue is full (-FI_EAGAIN) stays first and is
 * retried at the next ofi_trig_run.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_plain.h"
#include "ofi_trigger.h"

/* An FI_TRIGGER call's own copy of its descriptors: the application's
 * fi_msg* need not outlive the call, only the buffers they name. */
struct trig_store {
	union {
		struct fi_op_msg msg;
		struct fi_op_tagged tagged;
		struct fi_op_rma rma;
		struct fi_op_atomic atomic;
		struct fi_op_fetch_atomic fetch;
		struct fi_op_compare_atomic compare;
	} op;
	struct iovec iov[OFI_TRIG_IOV_MAX];
	struct fi_ioc ioc[OFI_TRIG_IOV_MAX];
	void *desc[OFI_TRIG_IOV_MAX];
	struct fi_rma_iov rma_iov[OFI_TRIG_IOV_MAX];
	struct fi_rma_ioc rma_ioc[OFI_TRIG_IOV_MAX];
	struct fi_ioc res[OFI_TRIG_IOV_MAX];
	void *res_desc[OFI_TRIG_IOV_MAX];
	struct fi_ioc cmp[OFI_TRIG_IOV_MAX];
	void *cmp_desc[OFI_TRIG_IOV_MAX];
};

struct trig_item {
	struct dlist_entry entry; /* trig_pending or trig_ready_list */
	struct util_cntr *cntr;
	uint64_t threshold;
	bool pending;
	/* The application's request (FI_QUEUE_WORK), NULL for FI_TRIGGER */
	struct fi_deferred_work *work;
	struct util_domain *domain;
	enum fi_op_type type;
	struct fid_ep *ep; /* the endpoint it runs on, NULL for counters */
	union {
		struct fi_op_msg *msg;
		struct fi_op_tagged *tagged;
		struct fi_op_rma *rma;
		struct fi_op_atomic *atomic;
		struct fi_op_fetch_atomic *fetch;
		struct fi_op_compare_atomic *compare;
		struct fi_op_cntr *cntr;
	} op;
	struct trig_store st[]; /* FI_TRIGGER only */
};

static ofi_mutex_t trig_lock = OFI_MUTEX_INITIALIZER;
static ofi_mutex_t trig_run = OFI_MUTEX_INITIALIZER;
static struct dlist_entry trig_pending = {&trig_pending, &trig_pending};
static struct dlist_entry trig_ready_list = {&trig_ready_list,
					     &trig_ready_list};
/* The item being started (not to be freed by a cancel meanwhile). */
static struct trig_item *trig_running;
/* Items queued, pending or ready: closing objects looks only then. */
static ofi_atomic32_t trig_total;
/* Read by every tcp send and progress call: kept in .data, on the page
 * of the GOT that those calls touch anyway, not alone on one of .bss
 * (see OFI_HOT). */
ofi_atomic32_t ofi_trig_ready __attribute__((section(".data")));

static struct trig_item *trig_of(struct dlist_entry *e)
{
	return container_of(e, struct trig_item, entry);
}

/* Whether @it's threshold is met by its counter's @cnt and @err. */
static bool trig_met(const struct trig_item *it, uint64_t cnt, uint64_t err)
{
	/* fi_trigger(3): deferred work counts successes plus errors */
	return (it->work ? cnt + err : cnt) >= it->threshold;
}

/* Under trig_lock. */
static void trig_unlink(struct trig_item *it)
{
	dlist_remove(&it->entry);
	ofi_atomic_dec32(&trig_total);
	if (it->pending)
		ofi_atomic_dec32(&it->cntr->trig_cnt);
	else
		ofi_atomic_dec32(&ofi_trig_ready);
}

void ofi_trig_cntr_check(struct util_cntr *cntr)
{
	struct dlist_entry *e, *tmp;
	struct trig_item *it;
	uint64_t cnt, err;

	ofi_mutex_lock(&trig_lock);
	/* One reading for the whole pass: read per item, a counter that
	 * other threads move meanwhile could make it skip an item of
	 * threshold n, then move one of n + 1 to the ready list ahead of
	 * it. The pass each such change runs after us moves the skipped. */
	cnt = ofi_atomic_get64_sc(&cntr->cnt);
	err = ofi_atomic_get64_sc(&cntr->err);
	dlist_foreach_safe(&trig_pending, e, tmp) {
		it = trig_of(e);
		if (it->cntr != cntr || !trig_met(it, cnt, err))
			continue;
		/* still queued: trig_total stays, its start unlinks it */
		dlist_remove(&it->entry);
		ofi_atomic_dec32(&it->cntr->trig_cnt);
		it->pending = false;
		dlist_insert_tail(&it->entry, &trig_ready_list);
		ofi_atomic_inc32(&ofi_trig_ready);
	}
	ofi_mutex_unlock(&trig_lock);
}

static uint64_t trig_flags(const struct trig_item *it, uint64_t flags)
{
	return (flags & ~FI_TRIGGER) | (it->work ? OFI_TRIG_WORK : 0);
}

static ssize_t trig_fire_msg(struct trig_item *it)
{
	struct fi_msg m = it->op.msg->msg;
	uint64_t f = trig_flags(it, it->op.msg->flags);

	if (it->work)
		m.context = it->work;
	if (it->type == FI_OP_SEND)
		return fi_sendmsg(it->ep, &m, f);
	return fi_recvmsg(it->ep, &m, f);
}

static ssize_t trig_fire_tagged(struct trig_item *it)
{
	struct fi_msg_tagged m = it->op.tagged->msg;
	uint64_t f = trig_flags(it, it->op.tagged->flags);

	if (it->work)
		m.context = it->work;
	if (it->type == FI_OP_TSEND)
		return fi_tsendmsg(it->ep, &m, f);
	return fi_trecvmsg(it->ep, &m, f);
}

static ssize_t trig_fire_rma(struct trig_item *it)
{
	struct fi_msg_rma m = it->op.rma->msg;
	uint64_t f = trig_flags(it, it->op.rma->flags);

	if (it->work)
		m.context = it->work;
	if (it->type == FI_OP_WRITE)
		return fi_writemsg(it->ep, &m, f);
	return fi_readmsg(it->ep, &m, f);
}

static ssize_t trig_fire_atomic(struct trig_item *it)
{
	const struct fi_msg_fetch *r;
	struct fi_msg_atomic m;
	uint64_t f;

	switch (it->type) {
	case FI_OP_ATOMIC:
		m = it->op.atomic->msg;
		f = it->op.atomic->flags;
		break;
	case FI_OP_FETCH_ATOMIC:
		m = it->op.fetch->msg;
		f = it->op.fetch->flags;
		break;
	default:
		m = it->op.compare->msg;
		f = it->op.compare->flags;
		break;
	}
	if (it->work)
		m.context = it->work;
	f = trig_flags(it, f);
	if (it->type == FI_OP_ATOMIC)
		return fi_atomicmsg(it->ep, &m, f);
	if (it->type == FI_OP_FETCH_ATOMIC) {
		r = &it->op.fetch->fetch;
		return fi_fetch_atomicmsg(it->ep, &m, r->msg_iov, r->desc,
					  r->iov_count, f);
	}
	r = &it->op.compare->fetch;
	return fi_compare_atomicmsg(it->ep, &m, it->op.compare->compare.msg_iov,
				    it->op.compare->compare.desc,
				    it->op.compare->compare.iov_count,
				    r->msg_iov, r->desc, r->iov_count, f);
}

static ssize_t trig_fire(struct trig_item *it)
{
	switch (it->type) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		return trig_fire_msg(it);
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		return trig_fire_tagged(it);
	case FI_OP_READ:
	case FI_OP_WRITE:
		return trig_fire_rma(it);
	case FI_OP_ATOMIC:
	case FI_OP_FETCH_ATOMIC:
	case FI_OP_COMPARE_ATOMIC:
		return trig_fire_atomic(it);
	case FI_OP_CNTR_SET:
		return fi_cntr_set(it->op.cntr->cntr, it->op.cntr->value);
	case FI_OP_CNTR_ADD:
		return fi_cntr_add(it->op.cntr->cntr, it->op.cntr->value);
	}
	return -FI_ENOSYS;
}

static void *trig_item_context(const struct trig_item *it)
{
	switch (it->type) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		return it->op.msg->msg.context;
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		return it->op.tagged->msg.context;
	case FI_OP_READ:
	case FI_OP_WRITE:
		return it->op.rma->msg.context;
	case FI_OP_ATOMIC:
		return it->op.atomic->msg.context;
	case FI_OP_FETCH_ATOMIC:
		return it->op.fetch->msg.context;
	case FI_OP_COMPARE_ATOMIC:
		return it->op.compare->msg.context;
	default:
		return NULL;
	}
}

/* The CQ flags of an operation of @type. */
static uint64_t trig_cq_flags(enum fi_op_type type)
{
	static const uint64_t f[] = {
		[FI_OP_RECV] = FI_RECV | FI_MSG,
		[FI_OP_SEND] = FI_SEND | FI_MSG,
		[FI_OP_TRECV] = FI_RECV | FI_TAGGED,
		[FI_OP_TSEND] = FI_SEND | FI_TAGGED,
		[FI_OP_READ] = FI_RMA | FI_READ,
		[FI_OP_WRITE] = FI_RMA | FI_WRITE,
		[FI_OP_ATOMIC] = FI_ATOMIC | FI_WRITE,
		[FI_OP_FETCH_ATOMIC] = FI_ATOMIC | FI_READ,
		[FI_OP_COMPARE_ATOMIC] = FI_ATOMIC | FI_READ,
	};

	return (unsigned)type < sizeof(f) / sizeof(f[0]) ? f[type] : 0;
}

/*
 * What a failed start (or a cancel) reports: an FI_TRIGGER call's error
 * entry and error count on the endpoint, through util_comp.c's writers;
 * a deferred item's error on its completion counter.
 */
static void trig_failed(struct trig_item *it, int err)
{
	struct ofi_rx_comp c = {.err = err};
	struct util_ep *ep;

	if (it->work) {
		if (it->work->completion_cntr)
			ofi_cntr_inc_err(container_of(it->work->completion_cntr,
						      struct util_cntr,
						      cntr_fid));
		return;
	}
	ep = container_of(it->ep, struct util_ep, ep_fid);
	c.context = trig_item_context(it);
	c.flags = trig_cq_flags(it->type);
	if (c.flags & FI_RECV)
		ofi_ep_rx_complete(ep, &c);
	else
		ofi_ep_tx_complete(ep, c.context, c.flags, 0, true, err);
}

/* Starts ready items in order until none is left or one must wait. */
static bool trig_drain_once(void)
{
	struct trig_item *it;
	ssize_t ret;

	for (;;) {
		ofi_mutex_lock(&trig_lock);
		if (dlist_empty(&trig_ready_list)) {
			ofi_mutex_unlock(&trig_lock);
			return true;
		}
		it = trig_of(trig_ready_list.next);
		trig_running = it;
		ofi_mutex_unlock(&trig_lock);

		ret = trig_fire(it);

		if (ret == -FI_EAGAIN) {
			ofi_mutex_lock(&trig_lock);
			trig_running = NULL;
			ofi_mutex_unlock(&trig_lock);
			return false;
		}
		/* Still queued and running while its failure is reported:
		 * closing its endpoint or counter waits for that too. */
		if (ret)
			trig_failed(it, (int)-ret);
		ofi_mutex_lock(&trig_lock);
		trig_unlink(it);
		trig_running = NULL;
		ofi_mutex_unlock(&trig_lock);
		free(it);
	}
}

void ofi_trig_drain(void)
{
	bool all;

	do {
		/* Another thread starting them (or this one, from inside a
		 * start) takes what is queued meanwhile too. */
		if (!ofi_mutex_trylock(&trig_run))
			return;
		all = trig_drain_once();
		ofi_mutex_unlock(&trig_run);
	} while (all && ofi_atomic_get32(&ofi_trig_ready));
}

/* Queues @it after every item of lower or equal threshold, then lets
 * the counter decide: an item already satisfied starts now. */
static void trig_queue(struct trig_item *it)
{
	/* Once queued, @it may be started and freed by another thread. */
	struct util_cntr *cntr = it->cntr;
	struct dlist_entry *e;

	ofi_mutex_lock(&trig_lock);
	e = trig_pending.prev;
	while (e != &trig_pending && trig_of(e)->threshold > it->threshold)
		e = e->prev;
	it->pending = true;
	dlist_insert_after(&it->entry, e);
	ofi_atomic_inc32(&trig_total);
	/* seq_cst, then the check's reading: see ofi_cntr_inc */
	ofi_atomic_inc32_sc(&cntr->trig_cnt);
	ofi_mutex_unlock(&trig_lock);
	ofi_trig_cntr_check(cntr);
	ofi_trig_run();
}

/* Drops, under trig_lock, every item @match selects (not the one being
 * started: see trig_settle); returns how many. */
static size_t trig_purge(bool (*match)(struct trig_item *, const void *),
			 const void *arg)
{
	struct dlist_entry *lists[] = {&trig_pending, &trig_ready_list};
	struct dlist_entry *e, *tmp;
	struct trig_item *it;
	size_t i, n = 0;

	ofi_mutex_lock(&trig_lock);
	for (i = 0; i < 2; i++) {
		dlist_foreach_safe(lists[i], e, tmp) {
			it = trig_of(e);
			if (it == trig_running || !match(it, arg))
				continue;
			trig_unlink(it);
			free(it);
			n++;
		}
	}
	ofi_mutex_unlock(&trig_lock);
	return n;
}

static bool trig_names_cntr(struct trig_item *it, const void *arg)
{
	const struct util_cntr *c = arg;

	if (it->cntr == c)
		return true;
	if (it->work && it->work->completion_cntr == &c->cntr_fid)
		return true;
	return (it->type == FI_OP_CNTR_SET || it->type == FI_OP_CNTR_ADD) &&
	       it->op.cntr->cntr == &c->cntr_fid;
}

static bool trig_names_ep(struct trig_item *it, const void *arg)
{
	return it->ep == &((const struct util_ep *)arg)->ep_fid;
}

/* Unlinks, under trig_lock, the first item @match selects (not the one
 * being started); the caller frees it. */
static struct trig_item *
trig_take(bool (*match)(struct trig_item *, const void *), const void *arg)
{
	struct dlist_entry *lists[] = {&trig_pending, &trig_ready_list};
	struct dlist_entry *e;
	struct trig_item *it;
	size_t i;

	ofi_mutex_lock(&trig_lock);
	for (i = 0; i < 2; i++) {
		dlist_foreach(lists[i], e) {
			it = trig_of(e);
			if (it == trig_running || !match(it, arg))
				continue;
			trig_unlink(it);
			ofi_mutex_unlock(&trig_lock);
			return it;
		}
	}
	ofi_mutex_unlock(&trig_lock);
	return NULL;
}

/*
 * Closing: drops what names the object, then waits while the item being
 * started names it (another thread's ofi_trig_run; it reports its
 * failure before it lets go). That thread holds no lock of ours: a start
 * runs outside every provider lock, and the object's owner is closing
 * it, not calling into it.
 */
static void trig_settle(bool (*match)(struct trig_item *, const void *),
			const void *arg)
{
	bool busy;

	if (!ofi_atomic_get32(&trig_total))
		return;
	trig_purge(match, arg);
	for (;;) {
		ofi_mutex_lock(&trig_lock);
		busy = trig_running && match(trig_running, arg);
		ofi_mutex_unlock(&trig_lock);
		if (!busy)
			return;
		sched_yield();
	}
}

/* A counter may be named by work waiting on another one: any queued item
 * makes closing look. */
void ofi_trig_cntr_close(struct util_cntr *cntr)
{
	trig_settle(trig_names_cntr, cntr);
}

/* Deferred work may name an endpoint that has no wrapped calls. */
void ofi_trig_ep_close(struct util_ep *ep)
{
	trig_settle(trig_names_ep, ep);
	free(ep->trig);
	ep->trig = NULL;
}

/* ------------------------------------------------------------------ */
/* Deferred work: fi_control(domain, FI_QUEUE_WORK...).               */

static bool trig_is_work(struct trig_item *it, const void *arg)
{
	return it->work == arg;
}

struct trig_flush {
	struct util_domain *domain;
	struct fid_cntr *cntr;
};

static bool trig_flushed(struct trig_item *it, const void *arg)
{
	const struct trig_flush *f = arg;

	return it->work && it->domain == f->domain &&
	       (!f->cntr || it->work->triggering_cntr == f->cntr);
}

static bool trig_is_cntr(const struct fid_cntr *c)
{
	return c && c->fid.fclass == FI_CLASS_CNTR;
}

/* The endpoint a data item runs on (NULL if the op is missing). */
static struct fid_ep *trig_work_ep(const struct fi_deferred_work *w)
{
	switch (w->op_type) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		return w->op.msg ? w->op.msg->ep : NULL;
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		return w->op.tagged ? w->op.tagged->ep : NULL;
	case FI_OP_READ:
	case FI_OP_WRITE:
		return w->op.rma ? w->op.rma->ep : NULL;
	case FI_OP_ATOMIC:
		return w->op.atomic ? w->op.atomic->ep : NULL;
	case FI_OP_FETCH_ATOMIC:
		return w->op.fetch_atomic ? w->op.fetch_atomic->ep : NULL;
	case FI_OP_COMPARE_ATOMIC:
		return w->op.compare_atomic ? w->op.compare_atomic->ep : NULL;
	default:
		return NULL;
	}
}

static int trig_work_check(const struct fi_deferred_work *w)
{
	struct fid_ep *ep;

	if (!trig_is_cntr(w->triggering_cntr))
		return -FI_EINVAL;
	if (w->op_type == FI_OP_CNTR_SET || w->op_type == FI_OP_CNTR_ADD) {
		/* fi_trigger(3): counter work has no completion counter */
		if (w->completion_cntr || !w->op.cntr ||
		    !trig_is_cntr(w->op.cntr->cntr))
			return -FI_EINVAL;
		return 0;
	}
	if ((unsigned)w->op_type > FI_OP_CNTR_ADD)
		return -FI_ENOSYS;
	if (w->completion_cntr && !trig_is_cntr(w->completion_cntr))
		return -FI_EINVAL;
	ep = trig_work_ep(w);
	if (!ep || ep->fid.fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	return 0;
}

static int trig_queue_work(struct util_domain *dom, struct fi_deferred_work *w)
{
	struct trig_item *it;
	int ret;

	ret = trig_work_check(w);
	if (ret)
		return ret;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -FI_ENOMEM;
	it->cntr = container_of(w->triggering_cntr, struct util_cntr, cntr_fid);
	it->threshold = w->threshold;
	it->work = w;
	it->domain = dom;
	it->type = w->op_type;
	it->ep = trig_work_ep(w);
	it->op.msg = w->op.msg; /* the union's members are all pointers */
	trig_queue(it);
	return 0;
}

int ofi_trig_domain_control(struct fid *fid, int command, void *arg)
{
	struct util_domain *dom =
		container_of(fid, struct util_domain, domain_fid.fid);
	struct fi_deferred_work *w = arg;
	struct trig_flush f = {.domain = dom};

	if (!dom->trig)
		return -FI_ENOSYS;
	switch (command) {
	case FI_QUEUE_WORK:
		return w ? trig_queue_work(dom, w) : -FI_EINVAL;
	case FI_CANCEL_WORK:
		if (!w)
			return -FI_EINVAL;
		return trig_purge(trig_is_work, w) ? 0 : -FI_ENOENT;
	case FI_FLUSH_WORK:
		/* all of the domain's, or those waiting on one counter */
		f.cntr = w ? w->triggering_cntr : NULL;
		trig_purge(trig_flushed, &f);
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

void *ofi_trig_work_context(const struct fi_deferred_work *work)
{
	struct trig_item it = {.type = work->op_type};

	it.op.msg = work->op.msg;
	return trig_item_context(&it);
}

uint64_t ofi_trig_work_flags(const struct fi_deferred_work *work)
{
	switch (work->op_type) {
	case FI_OP_SEND:
	case FI_OP_RECV:
		return work->op.msg->flags;
	case FI_OP_TSEND:
	case FI_OP_TRECV:
		return work->op.tagged->flags;
	case FI_OP_READ:
	case FI_OP_WRITE:
		return work->op.rma->flags;
	case FI_OP_ATOMIC:
		return work->op.atomic->flags;
	case FI_OP_FETCH_ATOMIC:
		return work->op.fetch_atomic->flags;
	case FI_OP_COMPARE_ATOMIC:
		return work->op.compare_atomic->flags;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------ */
/* FI_TRIGGER and FI_FENCE on an endpoint's *msg calls.                */

/*
 * An alias (fi_ep_alias): its parent's calls with its own default op
 * flags. It is a util_ep of its own only for those flags (and the
 * parent's plain-call limits), so util's plain calls (ofi_plain.h) read
 * them from it; its *msg entries are the wrappers below, which find the
 * parent and pass the parent's fid to the provider, so only wrapped
 * endpoints (ones that may trigger or fence) have aliases.
 */
struct trig_alias {
	struct util_ep util;
	struct util_ep *ep;
};

static const struct fi_ops trig_alias_fi_ops;

static struct trig_alias *trig_alias_of(struct fid_ep *ep_fid)
{
	if (ep_fid->fid.ops != &trig_alias_fi_ops)
		return NULL;
	return container_of(ep_fid, struct trig_alias, util.ep_fid);
}

/* The endpoint a call runs on: an alias's parent, or itself. */
static struct util_ep *trig_ep(struct fid_ep *ep_fid)
{
	struct trig_alias *a = trig_alias_of(ep_fid);

	return a ? a->ep : container_of(ep_fid, struct util_ep, ep_fid);
}

/* FI_FENCE: the fenced transmit waits (-FI_EAGAIN, retried by the
 * caller) until the endpoint's earlier transmits have completed. */
static bool trig_fenced(struct util_ep *ep)
{
	if (!ep->tx_busy || !ep->tx_busy(ep))
		return false;
	if (ep->progress)
		ep->progress(ep);
	return ep->tx_busy(ep);
}

static void *trig_dup(void *dst, const void *src, size_t cnt, size_t size)
{
	if (!src)
		return NULL;
	memcpy(dst, src, cnt * size);
	return dst;
}

/* A new FI_TRIGGER item from the call's fi_triggered_context. */
static struct trig_item *trig_new(struct util_ep *ep, enum fi_op_type type,
				  void *context, size_t cnt, ssize_t *ret)
{
	struct fi_triggered_context *tc = context;
	struct trig_item *it;

	*ret = -FI_EINVAL;
	if (!tc || cnt > OFI_TRIG_IOV_MAX)
		return NULL;
	if (tc->event_type != FI_TRIGGER_THRESHOLD) {
		*ret = -FI_ENOSYS; /* FI_TRIGGER_XPU: no FI_XPU here */
		return NULL;
	}
	if (!trig_is_cntr(tc->trigger.threshold.cntr))
		return NULL;
	it = calloc(1, sizeof(*it) + sizeof(struct trig_store));
	if (!it) {
		*ret = -FI_ENOMEM;
		return NULL;
	}
	it->cntr = container_of(tc->trigger.threshold.cntr, struct util_cntr,
				cntr_fid);
	it->threshold = tc->trigger.threshold.threshold;
	it->domain = ep->domain;
	it->type = type;
	it->ep = &ep->ep_fid;
	*ret = 0;
	return it;
}

/* The iov and desc arrays of an FI_TRIGGER call into its store, then on
 * the queue: the call has succeeded. */
static ssize_t trig_queue_iov(struct trig_item *it, const struct iovec **iov,
			      void ***desc, size_t cnt)
{
	*iov = trig_dup(it->st->iov, *iov, cnt, sizeof(**iov));
	*desc = trig_dup(it->st->desc, *desc, cnt, sizeof(void *));
	trig_queue(it);
	return 0;
}

static ssize_t trig_msg(struct util_ep *ep, enum fi_op_type type,
			const struct fi_msg *msg, uint64_t flags)
{
	struct trig_item *it;
	ssize_t ret = -FI_EINVAL;

	if (!msg ||
	    !(it = trig_new(ep, type, msg->context, msg->iov_count, &ret)))
		return ret;
	it->op.msg = &it->st->op.msg;
	*it->op.msg = (struct fi_op_msg){it->ep, *msg, flags};
	return trig_queue_iov(it, &it->op.msg->msg.msg_iov,
			      &it->op.msg->msg.desc, msg->iov_count);
}

static ssize_t trig_tagged(struct util_ep *ep, enum fi_op_type type,
			   const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct trig_item *it;
	ssize_t ret = -FI_EINVAL;

	if (!msg ||
	    !(it = trig_new(ep, type, msg->context, msg->iov_count, &ret)))
		return ret;
	it->op.tagged = &it->st->op.tagged;
	*it->op.tagged = (struct fi_op_tagged){it->ep, *msg, flags};
	return trig_queue_iov(it, &it->op.tagged->msg.msg_iov,
			      &it->op.tagged->msg.desc, msg->iov_count);
}

static ssize_t trig_rma(struct util_ep *ep, enum fi_op_type type,
			const struct fi_msg_rma *msg, uint64_t flags)
{
	struct fi_msg_rma *m;
	struct trig_item *it;
	ssize_t ret = -FI_EINVAL;

	if (!msg || msg->rma_iov_count > OFI_TRIG_IOV_MAX ||
	    !(it = trig_new(ep, type, msg->context, msg->iov_count, &ret)))
		return ret;
	it->op.rma = &it->st->op.rma;
	*it->op.rma = (struct fi_op_rma){it->ep, *msg, flags};
	m = &it->op.rma->msg;
	m->rma_iov = trig_dup(it->st->rma_iov, msg->rma_iov, msg->rma_iov_count,
			      sizeof(*msg->rma_iov));
	return trig_queue_iov(it, &m->msg_iov, &m->desc, msg->iov_count);
}

static void trig_atomic_copy(struct trig_item *it, struct fi_msg_atomic *dst,
			     const struct fi_msg_atomic *msg)
{
	*dst = *msg;
	dst->msg_iov = trig_dup(it->st->ioc, msg->msg_iov, msg->iov_count,
				sizeof(*msg->msg_iov));
	dst->desc = trig_dup(it->st->desc, msg->desc, msg->iov_count,
			     sizeof(void *));
	dst->rma_iov = trig_dup(it->st->rma_ioc, msg->rma_iov,
				msg->rma_iov_count, sizeof(*msg->rma_iov));
}

/* @res/@cmp: the fetch and compare arrays of fetch and compare calls. */
static ssize_t trig_atomic(struct util_ep *ep, enum fi_op_type type,
			   const struct fi_msg_atomic *msg,
			   const struct fi_msg_fetch *res,
			   const struct fi_msg_compare *cmp, uint64_t flags)
{
	struct trig_store *st;
	struct fi_msg_fetch *rdst = NULL;
	struct trig_item *it;
	ssize_t ret;

	if (!msg || msg->rma_iov_count > OFI_TRIG_IOV_MAX ||
	    (res && res->iov_count > OFI_TRIG_IOV_MAX) ||
	    (cmp && cmp->iov_count > OFI_TRIG_IOV_MAX))
		return -FI_EINVAL;
	it = trig_new(ep, type, msg->context, msg->iov_count, &ret);
	if (!it)
		return ret;
	st = it->st;
	if (type == FI_OP_ATOMIC) {
		st->op.atomic.ep = it->ep;
		st->op.atomic.flags = flags;
		trig_atomic_copy(it, &st->op.atomic.msg, msg);
	} else if (type == FI_OP_FETCH_ATOMIC) {
		st->op.fetch.ep = it->ep;
		st->op.fetch.flags = flags;
		trig_atomic_copy(it, &st->op.fetch.msg, msg);
		rdst = &st->op.fetch.fetch;
	} else {
		st->op.compare.ep = it->ep;
		st->op.compare.flags = flags;
		trig_atomic_copy(it, &st->op.compare.msg, msg);
		rdst = &st->op.compare.fetch;
		st->op.compare.compare.iov_count = cmp->iov_count;
		st->op.compare.compare.msg_iov =
			trig_dup(st->cmp, cmp->msg_iov, cmp->iov_count,
				 sizeof(*cmp->msg_iov));
		st->op.compare.compare.desc =
			trig_dup(st->cmp_desc, cmp->desc, cmp->iov_count,
				 sizeof(void *));
	}
	if (rdst) {
		rdst->iov_count = res->iov_count;
		rdst->msg_iov = trig_dup(st->res, res->msg_iov, res->iov_count,
					 sizeof(*res->msg_iov));
		rdst->desc = trig_dup(st->res_desc, res->desc, res->iov_count,
				      sizeof(void *));
	}
	it->op.atomic = &st->op.atomic; /* the union's members share it */
	trig_queue(it);
	return 0;
}

/* The gate of every wrapped call: FI_TRIGGER queues, FI_FENCE waits on
 * a transmit (@tx), anything else goes straight to the provider. */
#define TRIG_GATE(ep, flags, tx, queue)                                        \
	do {                                                                   \
		uint64_t _f = (flags);                                         \
                                                                               \
		if (OFI_LIKELY(!(_f & (FI_TRIGGER | FI_FENCE))))               \
			break;                                                 \
		if (_f & FI_TRIGGER)                                           \
			return (queue);                                        \
		if ((tx) && trig_fenced(ep))                                   \
			return -FI_EAGAIN;                                     \
	} while (0)

static ssize_t trig_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			    uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);

	TRIG_GATE(ep, flags, true, trig_msg(ep, FI_OP_SEND, msg, flags));
	return ep->trig->imsg->sendmsg(&ep->ep_fid, msg, flags);
}

static ssize_t trig_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			    uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);

	TRIG_GATE(ep, flags, false, trig_msg(ep, FI_OP_RECV, msg, flags));
	return ep->trig->imsg->recvmsg(&ep->ep_fid, msg, flags);
}

static ssize_t trig_tsendmsg(struct fid_ep *ep_fid,
			     const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);

	TRIG_GATE(ep, flags, true, trig_tagged(ep, FI_OP_TSEND, msg, flags));
	return ep->trig->itagged->sendmsg(&ep->ep_fid, msg, flags);
}

static ssize_t trig_trecvmsg(struct fid_ep *ep_fid,
			     const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);

	TRIG_GATE(ep, flags, false, trig_tagged(ep, FI_OP_TRECV, msg, flags));
	return ep->trig->itagged->recvmsg(&ep->ep_fid, msg, flags);
}

static ssize_t trig_readmsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);

	TRIG_GATE(ep, flags, true, trig_rma(ep, FI_OP_READ, msg, flags));
	return ep->trig->irma->readmsg(&ep->ep_fid, msg, flags);
}

static ssize_t trig_writemsg(struct fid_ep *ep_fid,
			     const struct fi_msg_rma *msg, uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);

	TRIG_GATE(ep, flags, true, trig_rma(ep, FI_OP_WRITE, msg, flags));
	return ep->trig->irma->writemsg(&ep->ep_fid, msg, flags);
}

static ssize_t trig_atomicmsg(struct fid_ep *ep_fid,
			      const struct fi_msg_atomic *msg, uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);

	TRIG_GATE(ep, flags, true,
		  trig_atomic(ep, FI_OP_ATOMIC, msg, NULL, NULL, flags));
	return ep->trig->iatomic->writemsg(&ep->ep_fid, msg, flags);
}

static ssize_t trig_fetchmsg(struct fid_ep *ep_fid,
			     const struct fi_msg_atomic *msg,
			     struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);
	struct fi_msg_fetch res = {resultv, result_desc, result_count};

	TRIG_GATE(ep, flags, true,
		  trig_atomic(ep, FI_OP_FETCH_ATOMIC, msg, &res, NULL, flags));
	return ep->trig->iatomic->readwritemsg(
		&ep->ep_fid, msg, resultv, result_desc, result_count, flags);
}

static ssize_t trig_comparemsg(struct fid_ep *ep_fid,
			       const struct fi_msg_atomic *msg,
			       const struct fi_ioc *comparev,
			       void **compare_desc, size_t compare_count,
			       struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, uint64_t flags)
{
	struct util_ep *ep = trig_ep(ep_fid);
	struct fi_msg_fetch res = {resultv, result_desc, result_count};
	struct fi_msg_compare cmp = {comparev, compare_desc, compare_count};

	TRIG_GATE(
		ep, flags, true,
		trig_atomic(ep, FI_OP_COMPARE_ATOMIC, msg, &res, &cmp, flags));
	return ep->trig->iatomic->compwritemsg(
		&ep->ep_fid, msg, comparev, compare_desc, compare_count,
		resultv, result_desc, result_count, flags);
}

struct trig_call {
	const struct fid_ep *ep;
	const void *context;
};

static bool trig_is_call(struct trig_item *it, const void *arg)
{
	const struct trig_call *c = arg;

	return !it->work && it->ep == c->ep &&
	       trig_item_context(it) == c->context;
}

/* fi_cancel(3): a triggered call not started yet is dropped with an
 * FI_ECANCELED error entry, as the provider reports its own. */
static ssize_t trig_cancel(fid_t fid, void *context)
{
	struct util_ep *ep = trig_ep(container_of(fid, struct fid_ep, fid));
	struct trig_call c = {&ep->ep_fid, context};
	struct trig_item *it = trig_take(trig_is_call, &c);

	if (!it)
		return ep->trig->iops->cancel(&ep->ep_fid.fid, context);
	trig_failed(it, FI_ECANCELED);
	free(it);
	return 0;
}

/*
 * A wrapped endpoint's plain calls are util's (ofi_plain.h), which reach
 * the gate through the fid's *msg entries: a provider's direct entries
 * would pass it by. What the provider refuses stays refused.
 */
#define TRIG_PLAIN(tbl, no, field, plain)                                      \
	do {                                                                   \
		if ((tbl)->field != (no)->field)                               \
			(tbl)->field = (plain);                                \
	} while (0)

static void trig_plain_msg(struct fi_ops_msg *m)
{
	const struct fi_ops_msg *no = &ofi_no_msg_ops;

	TRIG_PLAIN(m, no, recv, ofi_plain_recv);
	TRIG_PLAIN(m, no, recvv, ofi_plain_recvv);
	TRIG_PLAIN(m, no, send, ofi_plain_send);
	TRIG_PLAIN(m, no, sendv, ofi_plain_sendv);
	TRIG_PLAIN(m, no, inject, ofi_plain_inject);
	TRIG_PLAIN(m, no, senddata, ofi_plain_senddata);
	TRIG_PLAIN(m, no, injectdata, ofi_plain_injectdata);
}

static void trig_plain_tagged(struct fi_ops_tagged *m)
{
	const struct fi_ops_tagged *no = &ofi_no_tagged_ops;

	TRIG_PLAIN(m, no, recv, ofi_plain_trecv);
	TRIG_PLAIN(m, no, recvv, ofi_plain_trecvv);
	TRIG_PLAIN(m, no, send, ofi_plain_tsend);
	TRIG_PLAIN(m, no, sendv, ofi_plain_tsendv);
	TRIG_PLAIN(m, no, inject, ofi_plain_tinject);
	TRIG_PLAIN(m, no, senddata, ofi_plain_tsenddata);
	TRIG_PLAIN(m, no, injectdata, ofi_plain_tinjectdata);
}

int ofi_trig_ep_wrap(struct util_ep *ep)
{
	bool trigger = ep->domain->trig && (ep->caps & FI_TRIGGER);
	bool fence = (ep->caps & FI_FENCE) && (ep->domain->trig || ep->tx_busy);
	struct ofi_trig_ep *t;

	if (!trigger && !fence)
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -FI_ENOMEM;
	t->iops = ep->ep_fid.ops;
	t->ops = *t->iops;
	t->ops.cancel = trig_cancel;
	t->imsg = ep->ep_fid.msg;
	t->itagged = ep->ep_fid.tagged;
	t->irma = ep->ep_fid.rma;
	t->iatomic = ep->ep_fid.atomic;
	t->msg = *t->imsg;
	trig_plain_msg(&t->msg);
	t->msg.sendmsg = trig_sendmsg;
	t->msg.recvmsg = trig_recvmsg;
	t->tagged = *t->itagged;
	trig_plain_tagged(&t->tagged);
	t->tagged.sendmsg = trig_tsendmsg;
	t->tagged.recvmsg = trig_trecvmsg;
	/* a receive context has no RMA or atomic calls */
	if (t->irma) {
		t->rma = *t->irma;
		t->rma.readmsg = trig_readmsg;
		t->rma.writemsg = trig_writemsg;
		ep->ep_fid.rma = &t->rma;
	}
	if (t->iatomic) {
		t->atomic = *t->iatomic;
		t->atomic.writemsg = trig_atomicmsg;
		t->atomic.readwritemsg = trig_fetchmsg;
		t->atomic.compwritemsg = trig_comparemsg;
		ep->ep_fid.atomic = &t->atomic;
	}
	ep->trig = t;
	ep->ep_fid.ops = &t->ops;
	ep->ep_fid.msg = &t->msg;
	ep->ep_fid.tagged = &t->tagged;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Aliases (fi_ep_alias): util's plain calls and the wrappers above
 * under other op flags; the calls that take no flags go straight to the
 * parent's.                                                            */

static int alias_writevalid(struct fid_ep *ep_fid, enum fi_datatype datatype,
			    enum fi_op op, size_t *count)
{
	struct util_ep *ep = trig_ep(ep_fid);

	return ep->ep_fid.atomic->writevalid(&ep->ep_fid, datatype, op, count);
}

static int alias_readwritevalid(struct fid_ep *ep_fid,
				enum fi_datatype datatype, enum fi_op op,
				size_t *count)
{
	struct util_ep *ep = trig_ep(ep_fid);

	return ep->ep_fid.atomic->readwritevalid(&ep->ep_fid, datatype, op,
						 count);
}

static int alias_compwritevalid(struct fid_ep *ep_fid,
				enum fi_datatype datatype, enum fi_op op,
				size_t *count)
{
	struct util_ep *ep = trig_ep(ep_fid);

	return ep->ep_fid.atomic->compwritevalid(&ep->ep_fid, datatype, op,
						 count);
}

static const struct fi_ops_msg alias_msg_ops = {
	OFI_PLAIN_MSG_OPS(trig_recvmsg, trig_sendmsg),
};

static const struct fi_ops_tagged alias_tagged_ops = {
	OFI_PLAIN_TAGGED_OPS(trig_trecvmsg, trig_tsendmsg),
};

static const struct fi_ops_rma alias_rma_ops = {
	OFI_PLAIN_RMA_OPS(trig_readmsg, trig_writemsg),
};

static const struct fi_ops_atomic alias_atomic_ops = {
	OFI_PLAIN_ATOMIC_OPS(trig_atomicmsg, trig_fetchmsg, trig_comparemsg),
	.writevalid = alias_writevalid,
	.readwritevalid = alias_readwritevalid,
	.compwritevalid = alias_compwritevalid,
};

static const struct fi_ops_ep alias_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = trig_cancel,
	.getopt = fi_no_getopt,
	.setopt = fi_no_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

static int alias_close(struct fid *fid)
{
	struct trig_alias *a =
		container_of(fid, struct trig_alias, util.ep_fid.fid);

	ofi_atomic_dec32(&a->ep->trig->aliases);
	free(a);
	return 0;
}

/* FI_TRANSMIT or FI_RECV (one of them) with the flags to set: 0 and
 * @dir, or -FI_EINVAL. */
static int alias_dir(uint64_t flags, uint64_t *dir)
{
	*dir = flags & (FI_TRANSMIT | FI_RECV);
	return *dir == FI_TRANSMIT || *dir == FI_RECV ? 0 : -FI_EINVAL;
}

static void alias_set(struct trig_alias *a, uint64_t flags, uint64_t dir)
{
	if (dir == FI_TRANSMIT)
		a->util.tx_op_flags = flags & ~(uint64_t)FI_TRANSMIT;
	else
		a->util.rx_op_flags = flags & ~(uint64_t)FI_RECV;
}

static int alias_control(struct fid *fid, int command, void *arg)
{
	struct trig_alias *a =
		container_of(fid, struct trig_alias, util.ep_fid.fid);
	uint64_t *flags = arg, dir;

	if (command != FI_GETOPSFLAG && command != FI_SETOPSFLAG)
		return -FI_ENOSYS;
	if (!flags || alias_dir(*flags, &dir))
		return -FI_EINVAL;
	if (command == FI_SETOPSFLAG)
		alias_set(a, *flags, dir);
	else
		*flags = dir == FI_TRANSMIT ? a->util.tx_op_flags
					    : a->util.rx_op_flags;
	return 0;
}

static const struct fi_ops trig_alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = alias_close,
	.bind = fi_no_bind,
	.control = alias_control,
	.ops_open = fi_no_ops_open,
};

int ofi_trig_ep_alias(struct util_ep *ep, struct fi_alias *arg)
{
	struct trig_alias *a;
	uint64_t dir;

	if (!ep->trig)
		return -FI_ENOSYS;
	if (!arg || !arg->fid || alias_dir(arg->flags, &dir))
		return -FI_EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	a->ep = ep;
	a->util.tx_op_flags = ep->tx_op_flags;
	a->util.rx_op_flags = ep->rx_op_flags;
	a->util.inject_size = ep->inject_size;
	a->util.iov_limit = ep->iov_limit;
	alias_set(a, arg->flags, dir);
	a->util.ep_fid.fid.fclass = FI_CLASS_EP;
	a->util.ep_fid.fid.context = ep->ep_fid.fid.context;
	a->util.ep_fid.fid.ops = (struct fi_ops *)&trig_alias_fi_ops;
	a->util.ep_fid.ops = (struct fi_ops_ep *)&alias_ep_ops;
	/* names and peers are the parent's */
	a->util.ep_fid.cm = ep->ep_fid.cm;
	a->util.ep_fid.msg = (struct fi_ops_msg *)&alias_msg_ops;
	a->util.ep_fid.tagged = (struct fi_ops_tagged *)&alias_tagged_ops;
	if (ep->trig->irma)
		a->util.ep_fid.rma = (struct fi_ops_rma *)&alias_rma_ops;
	if (ep->trig->iatomic)
		a->util.ep_fid.atomic =
			(struct fi_ops_atomic *)&alias_atomic_ops;
	ofi_atomic_inc32(&ep->trig->aliases);
	*arg->fid = &a->util.ep_fid.fid;
	return 0;
}
