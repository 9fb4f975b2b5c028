/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_poll.c - poll sets (fi_poll_open, fi_poll_add, fi_poll_del,
 * fi_poll) over the util CQs and counters of one domain.
 *
 * fi_poll drives the progress of every member, then reports the context
 * of each CQ that is not empty and of each counter whose success or error
 * value moved since it was last reported (or since the application's own
 * fi_cntr_add/set, util_cntr.c).  It reads nothing: completions stay
 * queued for fi_cq_read.  The set's lock is held across a poll so that a
 * concurrent fi_poll_del cannot let a member close under it.
 */
#include <stdlib.h>

#include "ofi_util.h"

static struct util_poll *to_poll(struct fid_poll *fid)
{
	return container_of(fid, struct util_poll, poll_fid);
}

/* The reference a member holds keeps its CQ or counter from closing. */
static ofi_atomic32_t *poll_member_ref(struct fid *fid)
{
	if (fid->fclass == FI_CLASS_CQ)
		return &container_of(fid, struct util_cq, cq_fid.fid)->ref;
	return &container_of(fid, struct util_cntr, cntr_fid.fid)->ref;
}

static struct util_domain *poll_member_domain(struct fid *fid)
{
	if (fid->fclass == FI_CLASS_CQ)
		return container_of(fid, struct util_cq, cq_fid.fid)->domain;
	return container_of(fid, struct util_cntr, cntr_fid.fid)->domain;
}

static struct util_poll_member *poll_find(struct util_poll *ps,
					  const struct fid *fid)
{
	struct dlist_entry *item;
	struct util_poll_member *m;

	dlist_foreach(&ps->members, item) {
		m = container_of(item, struct util_poll_member, entry);
		if (m->fid == fid)
			return m;
	}
	return NULL;
}

static int poll_add(struct fid_poll *poll_fid, struct fid *fid, uint64_t flags)
{
	struct util_poll *ps = to_poll(poll_fid);
	struct util_poll_member *m;

	if (!fid || flags)
		return -FI_EINVAL;
	if (fid->fclass != FI_CLASS_CQ && fid->fclass != FI_CLASS_CNTR)
		return -FI_EINVAL;
	if (poll_member_domain(fid) != ps->domain)
		return -FI_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->fid = fid;
	ofi_mutex_lock(&ps->lock);
	if (poll_find(ps, fid)) {
		ofi_mutex_unlock(&ps->lock);
		free(m);
		return -FI_EALREADY;
	}
	ofi_atomic_inc32(poll_member_ref(fid));
	dlist_insert_tail(&m->entry, &ps->members);
	ofi_mutex_unlock(&ps->lock);
	return 0;
}

static int poll_del(struct fid_poll *poll_fid, struct fid *fid, uint64_t flags)
{
	struct util_poll *ps = to_poll(poll_fid);
	struct util_poll_member *m;

	if (!fid || flags)
		return -FI_EINVAL;
	ofi_mutex_lock(&ps->lock);
	m = poll_find(ps, fid);
	if (!m) {
		ofi_mutex_unlock(&ps->lock);
		return -FI_ENOENT;
	}
	dlist_remove(&m->entry);
	ofi_atomic_dec32(poll_member_ref(fid));
	ofi_mutex_unlock(&ps->lock);
	free(m);
	return 0;
}

/* Progresses @fid; whether it has something to report. */
static bool poll_member_ready(struct fid *fid)
{
	struct util_cntr *cntr;
	struct util_cq *cq;

	if (fid->fclass == FI_CLASS_CQ) {
		cq = container_of(fid, struct util_cq, cq_fid.fid);
		ofi_cq_progress(cq);
		return ofi_cq_count(cq) > 0;
	}
	cntr = container_of(fid, struct util_cntr, cntr_fid.fid);
	ofi_cntr_progress(cntr);
	return ofi_atomic_get64(&cntr->cnt) !=
		       ofi_atomic_get64(&cntr->poll_cnt) ||
	       ofi_atomic_get64(&cntr->err) !=
		       ofi_atomic_get64(&cntr->poll_err);
}

/* A counter reported is news no more until it moves again. */
static void poll_member_reported(struct fid *fid)
{
	struct util_cntr *cntr;

	if (fid->fclass != FI_CLASS_CNTR)
		return;
	cntr = container_of(fid, struct util_cntr, cntr_fid.fid);
	ofi_atomic_set64(&cntr->poll_cnt, ofi_atomic_get64(&cntr->cnt));
	ofi_atomic_set64(&cntr->poll_err, ofi_atomic_get64(&cntr->err));
}

/*
 * Every member is progressed, even once @count contexts are stored; the
 * members left out keep their news for the next call, and the reported
 * ones then move to the back so that none starves behind the others.
 */
static int poll_poll(struct fid_poll *poll_fid, void **context, int count)
{
	struct util_poll *ps = to_poll(poll_fid);
	struct dlist_entry *item, *tmp, *last;
	struct util_poll_member *m;
	bool full = false;
	int n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	ofi_mutex_lock(&ps->lock);
	dlist_foreach(&ps->members, item) {
		m = container_of(item, struct util_poll_member, entry);
		m->reported = false;
		if (!poll_member_ready(m->fid))
			continue;
		if (n == count) {
			full = true;
			continue;
		}
		poll_member_reported(m->fid);
		m->reported = true;
		context[n++] = m->fid->context;
	}
	last = ps->members.prev;
	for (item = ps->members.next; full && item != &ps->members;
	     item = tmp) {
		tmp = item == last ? &ps->members : item->next;
		m = container_of(item, struct util_poll_member, entry);
		if (!m->reported)
			continue;
		dlist_remove(item);
		dlist_insert_tail(item, &ps->members);
	}
	ofi_mutex_unlock(&ps->lock);
	return n;
}

static int poll_close(struct fid *fid)
{
	struct util_poll *ps =
		container_of(fid, struct util_poll, poll_fid.fid);

	ofi_mutex_lock(&ps->lock);
	if (!dlist_empty(&ps->members)) {
		ofi_mutex_unlock(&ps->lock);
		return -FI_EBUSY;
	}
	ofi_mutex_unlock(&ps->lock);
	ofi_atomic_dec32(&ps->domain->ref);
	ofi_mutex_destroy(&ps->lock);
	free(ps);
	return 0;
}

OFI_CLOSE_ONLY_FI_OPS(poll_fi_ops, poll_close);

static const struct fi_ops_poll poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = poll_poll,
	.poll_add = poll_add,
	.poll_del = poll_del,
};

int ofi_poll_open(struct fid_domain *domain_fid, struct fi_poll_attr *attr,
		  struct fid_poll **pollset)
{
	struct util_domain *domain;
	struct util_poll *ps;
	int ret;

	if (!domain_fid || !pollset || (attr && attr->flags))
		return -FI_EINVAL;
	domain = container_of(domain_fid, struct util_domain, domain_fid);
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ret = ofi_mutex_init(&ps->lock);
	if (ret) {
		free(ps);
		return -FI_ENOMEM;
	}
	dlist_init(&ps->members);
	ps->domain = domain;
	ps->poll_fid.fid.fclass = FI_CLASS_POLL;
	ps->poll_fid.fid.ops = (struct fi_ops *)&poll_fi_ops;
	ps->poll_fid.ops = (struct fi_ops_poll *)&poll_ops;
	ofi_atomic_inc32(&domain->ref);
	*pollset = &ps->poll_fid;
	return 0;
}
