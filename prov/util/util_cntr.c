/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_cntr.c - the util_cntr base object: success and error counts, their
 * read/add/set calls, fi_cntr_wait with threshold and timeout, and the
 * ofi_cntr_inc calls providers make.  Reads and waits drive the progress of
 * endpoints bound to the counter.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_trigger.h"
#include "ofi_util.h"
#include "ofi_yield.h"

/*
 * Remote accesses an MR counts (fi_mr_bind) are completed by whichever of
 * the domain's endpoints the peer's request reaches: a counter fed so
 * has every endpoint of its domain progressed by its readers, besides
 * those bound to it. A reader that spins on such a counter (OpenSHMEM's
 * wait on its target counter) then serves the request itself, and the
 * acks of its own last requests too, which a progress thread sharing
 * its CPU would otherwise be woken for: under FI_PROGRESS_MANUAL with
 * no thread nothing served the request at all, and under
 * FI_PROGRESS_AUTO each one waited for the reader's spin to give a
 * shared CPU away.
 */
static bool cntr_mr_fed(struct util_cntr *cntr)
{
	return __atomic_load_n(&cntr->mr_fed, __ATOMIC_RELAXED);
}

void ofi_cntr_mr_bound(struct util_cntr *cntr)
{
	__atomic_store_n(&cntr->mr_fed, true, __ATOMIC_RELAXED);
}

void ofi_cntr_progress(struct util_cntr *cntr)
{
	ofi_ep_refs_progress(&cntr->ep_lock, &cntr->ep_list);
	if (cntr_mr_fed(cntr))
		ofi_ep_refs_progress(&cntr->domain->ep_lock,
				     &cntr->domain->ep_list);
}

/* Whether an endpoint whose progress completes our counts is manual. */
static bool cntr_manual(struct util_cntr *cntr)
{
	return ofi_ep_refs_manual(&cntr->ep_lock, &cntr->ep_list) ||
	       (cntr_mr_fed(cntr) &&
		ofi_ep_refs_manual(&cntr->domain->ep_lock,
				   &cntr->domain->ep_list));
}

int ofi_cntr_fds(struct util_cntr *cntr, struct pollfd *fds, nfds_t *n, int st)
{
	st = ofi_ep_refs_fds(&cntr->ep_lock, &cntr->ep_list, fds, n, st);
	if (cntr_mr_fed(cntr))
		st = ofi_ep_refs_fds(&cntr->domain->ep_lock,
				     &cntr->domain->ep_list, fds, n, st);
	return st;
}

int ofi_cntr_arm(struct util_cntr *cntr)
{
	ofi_mutex_t *locks[2] = {&cntr->ep_lock, &cntr->domain->ep_lock};
	struct dlist_entry *lists[2] = {&cntr->ep_list, &cntr->domain->ep_list};

	return ofi_wait_arm_lists(cntr->wait, cntr_mr_fed(cntr) ? 2 : 1, locks,
				  lists);
}

/* ofi_ep_refs_poll over both sets of endpoints. */
static bool cntr_poll(struct util_cntr *cntr, uint64_t seq, int left)
{
	struct pollfd fds[OFI_EP_POLL_MAX + 1];
	nfds_t n = 0;
	int st = ofi_cntr_fds(cntr, fds, &n, OFI_EP_WAIT_SOUND);

	return ofi_ep_fds_sleep(cntr->wait, seq, fds, n, st, left);
}

static void cntr_rouse(struct util_cntr *cntr)
{
	ofi_ep_refs_rouse(&cntr->ep_lock, &cntr->ep_list);
	if (cntr_mr_fed(cntr))
		ofi_ep_refs_rouse(&cntr->domain->ep_lock,
				  &cntr->domain->ep_list);
}

/*
 * Providers count under their locks: what a change makes ready starts at
 * their unlock (ofi_trig_run), not here.
 *
 * A count, then a look at trig_cnt (ofi_trig_cntr_changed), against
 * trig_queue's add to trig_cnt, then a look at the count: seq_cst on
 * both sides, so that one of them always sees the other and no triggered
 * operation waits for a later change.
 */
void ofi_cntr_inc(struct util_cntr *cntr)
{
	ofi_atomic_inc64_sc(&cntr->cnt);
	ofi_trig_cntr_changed(cntr);
	ofi_wait_signal(cntr->wait);
}

void ofi_cntr_inc_err(struct util_cntr *cntr)
{
	ofi_atomic_inc64_sc(&cntr->err);
	ofi_trig_cntr_changed(cntr);
	ofi_wait_signal(cntr->wait);
}

static struct util_cntr *to_cntr(struct fid_cntr *fid)
{
	return container_of(fid, struct util_cntr, cntr_fid);
}

/*
 * The application's own updates are no news for a poll set (fi_poll(3)
 * counts changes since the last fi_poll, fi_cntr_add or fi_cntr_set).
 */
static void cntr_poll_mark(struct util_cntr *cntr)
{
	ofi_atomic_set64(&cntr->poll_cnt, ofi_atomic_get64(&cntr->cnt));
	ofi_atomic_set64(&cntr->poll_err, ofi_atomic_get64(&cntr->err));
}

/* After the application's own change: triggered operations it satisfied
 * start now, in this thread, which holds no provider lock. */
static void cntr_changed(struct util_cntr *cntr)
{
	/* a set is a plain store: order it before reading trig_cnt */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	cntr_poll_mark(cntr);
	ofi_trig_cntr_changed(cntr);
	ofi_wait_signal(cntr->wait);
	ofi_trig_run();
}

/*
 * A read that sees the value of the last one found nothing new. True if
 * it gave the core away (not on a @second look): the caller progresses
 * and reads again, as fi_cq_read does (util_cq.c).
 */
static bool cntr_read_idle(struct util_cntr *cntr, uint64_t val, bool second)
{
	if ((uint64_t)ofi_atomic_get64(&cntr->read_seen) != val) {
		ofi_atomic_set64(&cntr->read_seen, val);
		ofi_yield_busy();
		return false;
	}
	return !second && ofi_yield_idle() != OFI_YIELD_SPIN;
}

static uint64_t cntr_read(struct fid_cntr *cntr_fid)
{
	struct util_cntr *cntr = to_cntr(cntr_fid);
	bool second = false;
	uint64_t val;

	for (;;) {
		ofi_cntr_progress(cntr);
		ofi_trig_run();
		val = ofi_atomic_get64(&cntr->cnt);
		if (!cntr_read_idle(cntr, val, second))
			return val;
		second = true;
	}
}

static uint64_t cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct util_cntr *cntr = to_cntr(cntr_fid);

	ofi_cntr_progress(cntr);
	ofi_trig_run();
	return ofi_atomic_get64(&cntr->err);
}

static int cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct util_cntr *cntr = to_cntr(cntr_fid);

	ofi_atomic_add64(&cntr->cnt, value);
	cntr_changed(cntr);
	return 0;
}

static int cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct util_cntr *cntr = to_cntr(cntr_fid);

	ofi_atomic_set64(&cntr->cnt, value);
	cntr_changed(cntr);
	return 0;
}

static int cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct util_cntr *cntr = to_cntr(cntr_fid);

	ofi_atomic_add64(&cntr->err, value);
	cntr_changed(cntr);
	return 0;
}

static int cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct util_cntr *cntr = to_cntr(cntr_fid);

	ofi_atomic_set64(&cntr->err, value);
	cntr_changed(cntr);
	return 0;
}

#define OFI_CNTR_NAP_MS 1

/*
 * An error count that moves while waiting ends the wait with -FI_EAVAIL, so
 * a failed operation cannot leave the caller waiting for the full timeout.
 */
static int cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold, int timeout)
{
	struct util_cntr *cntr = to_cntr(cntr_fid);
	uint64_t start = ofi_gettime_ms(), seq = 0;
	uint64_t err = ofi_atomic_get64(&cntr->err);
	int left, nap, ret;

	for (;;) {
		if (cntr->wait)
			seq = ofi_wait_seq(cntr->wait);
		ofi_cntr_progress(cntr);
		ofi_trig_run();
		if ((uint64_t)ofi_atomic_get64(&cntr->cnt) >= threshold)
			ret = 0;
		else if ((uint64_t)ofi_atomic_get64(&cntr->err) != err)
			ret = -FI_EAVAIL;
		else
			ret = 1;
		if (ret <= 0) {
			/* what it waited for came, whoever progressed it: the
			 * next wait spins its whole budget again */
			ofi_yield_busy();
			return ret;
		}
		left = ofi_timeout_left(timeout, start);
		if (!left)
			return -FI_ETIMEDOUT;
		if (!cntr->wait) {
			ofi_yield_idle();
			continue;
		}
		if (ofi_wait_seq(cntr->wait) != seq)
			continue;
		nap = left;
		/* Our own passes find the work as soon as a thread's would:
		 * spin and yield the budget first, whoever progresses. */
		if (ofi_yield_idle_wait() != OFI_YIELD_SLEEP)
			continue;
		if (cntr_manual(cntr)) {
			if (cntr_poll(cntr, seq, left))
				continue;
			nap = left < 0 ? OFI_CNTR_NAP_MS
				       : OFI_MIN(left, OFI_CNTR_NAP_MS);
		} else {
			/* the provider's threads complete what we wait for */
			cntr_rouse(cntr);
		}
		ofi_wait_sleep(cntr->wait, seq, nap);
	}
}

static int cntr_close_fid(struct fid *fid)
{
	struct util_cntr *cntr =
		container_of(fid, struct util_cntr, cntr_fid.fid);
	int ret;

	ret = ofi_cntr_close(cntr);
	if (ret)
		return ret;
	free(cntr);
	return 0;
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	struct util_cntr *cntr =
		container_of(fid, struct util_cntr, cntr_fid.fid);

	return ofi_wait_control(cntr->wait, command, arg);
}

const struct fi_ops ofi_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close_fid,
	.bind = fi_no_bind,
	.control = cntr_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

const struct fi_ops_cntr ofi_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

static void cntr_wait_progress(struct fid *fid)
{
	ofi_cntr_progress(container_of(fid, struct util_cntr, cntr_fid.fid));
}

int ofi_cntr_init(struct util_domain *domain, struct fi_cntr_attr *attr,
		  struct util_cntr *cntr, void *context)
{
	struct fi_cntr_attr def = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	int ret;

	if (!domain || !cntr)
		return -FI_EINVAL;
	if (!attr)
		attr = &def;
	if (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)
		return -FI_EINVAL;
	memset(cntr, 0, sizeof(*cntr));
	cntr->domain = domain;
	ret = ofi_wait_get(domain->fabric, attr->wait_obj, attr->wait_set,
			   &cntr->wait);
	if (ret)
		return ret;
	ret = ofi_wait_attach(cntr->wait, &cntr->cntr_fid.fid,
			      cntr_wait_progress, NULL);
	if (ret) {
		ofi_wait_put(cntr->wait);
		return ret;
	}
	ofi_atomic_init64(&cntr->cnt, 0);
	ofi_atomic_init64(&cntr->err, 0);
	ofi_atomic_init64(&cntr->poll_cnt, 0);
	ofi_atomic_init64(&cntr->poll_err, 0);
	ofi_atomic_init64(&cntr->read_seen, 0);
	ofi_atomic_init32(&cntr->trig_cnt, 0);
	ofi_atomic_init32(&cntr->ref, 0);
	ofi_mutex_init(&cntr->ep_lock);
	dlist_init(&cntr->ep_list);
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = (struct fi_ops *)&ofi_cntr_fi_ops;
	cntr->cntr_fid.ops = (struct fi_ops_cntr *)&ofi_cntr_ops;
	ofi_atomic_inc32(&domain->ref);
	return 0;
}

int ofi_cntr_close(struct util_cntr *cntr)
{
	if (ofi_atomic_get32(&cntr->ref))
		return -FI_EBUSY;
	ofi_trig_cntr_close(cntr);
	ofi_mr_map_unbind_cntr(&cntr->domain->mr_map, cntr);
	ofi_wait_detach(cntr->wait, &cntr->cntr_fid.fid);
	ofi_wait_put(cntr->wait);
	ofi_mutex_destroy(&cntr->ep_lock);
	ofi_atomic_dec32(&cntr->domain->ref);
	return 0;
}

int ofi_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr_fid, void *context)
{
	struct util_cntr *cntr;
	int ret;

	if (!domain_fid || !cntr_fid)
		return -FI_EINVAL;
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	ret = ofi_cntr_init(
		container_of(domain_fid, struct util_domain, domain_fid), attr,
		cntr, context);
	if (ret) {
		free(cntr);
		return ret;
	}
	*cntr_fid = &cntr->cntr_fid;
	return 0;
}
