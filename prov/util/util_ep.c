/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_ep.c - the util_ep base object: bindings to CQs (per direction, with
 * FI_SELECTIVE_COMPLETION), counters (one per fi_cntr_bind flag), AV and EQ;
 * FI_ENABLE with its checks, FI_GETOPSFLAG/FI_SETOPSFLAG, the basic
 * fi_getopt/fi_setopt options, the progress callback CQs and counters
 * call on read, and close in two halves: detach from everything that can
 * call into the endpoint from another thread, then drop references.
 * Also the shared transmit context (fi_stx_context), and the binding to a
 * shared receive context (util_match.c), and what scalable endpoints'
 * contexts of every provider share (their fi_info, their one-way calls).
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_coll.h"
#include "ofi_match.h"
#include "ofi_progress.h"
#include "ofi_prov.h"
#include "ofi_trigger.h"
#include "ofi_util.h"

static const uint64_t cntr_flags[OFI_CNTR_CNT] = {
	[OFI_CNTR_TX] = FI_SEND,
	[OFI_CNTR_RX] = FI_RECV,
	[OFI_CNTR_RD] = FI_READ,
	[OFI_CNTR_WR] = FI_WRITE,
	[OFI_CNTR_REM_RD] = FI_REMOTE_READ,
	[OFI_CNTR_REM_WR] = FI_REMOTE_WRITE,
};

static void ep_ref_add(struct util_ep_ref *ref, struct util_ep *ep,
		       ofi_mutex_t *lock, struct dlist_entry *list)
{
	ref->ep = ep;
	ofi_mutex_lock(lock);
	dlist_insert_tail(&ref->entry, list);
	ofi_mutex_unlock(lock);
}

static void ep_ref_del(struct util_ep_ref *ref, ofi_mutex_t *lock)
{
	if (!ref->ep)
		return;
	ofi_mutex_lock(lock);
	dlist_remove(&ref->entry);
	ofi_mutex_unlock(lock);
	ref->ep = NULL;
}

static int ep_bind_cq(struct util_ep *ep, struct util_cq *cq, uint64_t flags)
{
	if (flags &
	    ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EINVAL;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;

	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_cq_flags = flags & FI_SELECTIVE_COMPLETION;
		ofi_atomic_inc32(&cq->ref);
		ep_ref_add(&ep->cq_refs[0], ep, &cq->ep_lock, &cq->ep_list);
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_cq_flags = flags & FI_SELECTIVE_COMPLETION;
		ofi_atomic_inc32(&cq->ref);
		/* One progress entry per CQ even when bound both ways. */
		if (ep->tx_cq != cq)
			ep_ref_add(&ep->cq_refs[1], ep, &cq->ep_lock,
				   &cq->ep_list);
	}
	return 0;
}

static int ep_bind_cntr(struct util_ep *ep, struct util_cntr *cntr,
			uint64_t flags)
{
	uint64_t all = 0;
	bool listed = false;
	int i;

	for (i = 0; i < OFI_CNTR_CNT; i++)
		all |= cntr_flags[i];
	if (!flags || (flags & ~all))
		return -FI_EINVAL;
	for (i = 0; i < OFI_CNTR_CNT; i++) {
		if ((flags & cntr_flags[i]) && ep->cntrs[i])
			return -FI_EINVAL;
	}
	for (i = 0; i < OFI_CNTR_CNT; i++) {
		if (ep->cntrs[i] == cntr)
			listed = true;
	}
	for (i = 0; i < OFI_CNTR_CNT; i++) {
		if (!(flags & cntr_flags[i]))
			continue;
		ep->cntrs[i] = cntr;
		ofi_atomic_inc32(&cntr->ref);
		if (!listed) {
			ep_ref_add(&ep->cntr_refs[i], ep, &cntr->ep_lock,
				   &cntr->ep_list);
			listed = true;
		}
	}
	return 0;
}

static int stx_close(struct fid *fid)
{
	struct util_stx *stx = container_of(fid, struct util_stx, stx_fid.fid);

	if (ofi_atomic_get32(&stx->ref))
		return -FI_EBUSY;
	ofi_atomic_dec32(&stx->domain->ref);
	free(stx);
	return 0;
}

OFI_CLOSE_ONLY_FI_OPS(stx_fi_ops, stx_close);

static const struct fi_ops_ep stx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = fi_no_cancel,
	.getopt = fi_no_getopt,
	.setopt = fi_no_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

int ofi_stx_context(struct fid_domain *domain_fid, struct fi_tx_attr *attr,
		    struct fid_stx **stx_fid, void *context)
{
	struct util_domain *domain;
	struct util_stx *stx;

	if (!domain_fid || !stx_fid)
		return -FI_EINVAL;
	domain = container_of(domain_fid, struct util_domain, domain_fid);
	if (attr && attr->caps & ~domain->info->caps)
		return -FI_ENODATA;
	stx = calloc(1, sizeof(*stx));
	if (!stx)
		return -FI_ENOMEM;
	stx->domain = domain;
	ofi_atomic_init32(&stx->ref, 0);
	stx->stx_fid.fid.fclass = FI_CLASS_STX_CTX;
	stx->stx_fid.fid.context = context;
	stx->stx_fid.fid.ops = (struct fi_ops *)&stx_fi_ops;
	stx->stx_fid.ops = (struct fi_ops_ep *)&stx_ep_ops;
	ofi_atomic_inc32(&domain->ref);
	*stx_fid = &stx->stx_fid;
	return 0;
}

static int ep_bind_stx(struct util_ep *ep, struct fid *bfid, uint64_t flags)
{
	struct util_stx *stx;

	if (bfid->ops != &stx_fi_ops)
		return -FI_ENOSYS; /* not one of util's */
	stx = container_of(bfid, struct util_stx, stx_fid.fid);
	if (flags || ep->stx || stx->domain != ep->domain)
		return -FI_EINVAL;
	ep->stx = stx;
	ofi_atomic_inc32(&stx->ref);
	return 0;
}

int ofi_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_ep *ep = container_of(fid, struct util_ep, ep_fid.fid);
	struct util_cq *cq;
	struct util_cntr *cntr;
	struct util_av *av;
	struct util_eq *eq;
	int ret = 0;

	if (!bfid)
		return -FI_EINVAL;
	ofi_mutex_lock(&ep->lock);
	if (ep->enabled) {
		ret = -FI_EINVAL;
		goto out;
	}
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		cq = container_of(bfid, struct util_cq, cq_fid.fid);
		ret = cq->domain != ep->domain ? -FI_EINVAL
					       : ep_bind_cq(ep, cq, flags);
		break;
	case FI_CLASS_CNTR:
		cntr = container_of(bfid, struct util_cntr, cntr_fid.fid);
		ret = cntr->domain != ep->domain
			      ? -FI_EINVAL
			      : ep_bind_cntr(ep, cntr, flags);
		break;
	case FI_CLASS_AV:
		av = container_of(bfid, struct util_av, av_fid.fid);
		if (flags || ep->av || av->domain != ep->domain) {
			ret = -FI_EINVAL;
			break;
		}
		ep->av = av;
		ofi_atomic_inc32(&av->ref);
		ofi_mutex_lock(&av->lock);
		dlist_insert_tail(&ep->av_entry, &av->ep_list);
		ofi_mutex_unlock(&av->lock);
		break;
	case FI_CLASS_EQ:
		eq = container_of(bfid, struct util_eq, eq_fid.fid);
		if (flags || ep->eq) {
			ret = -FI_EINVAL;
			break;
		}
		ep->eq = eq;
		ofi_atomic_inc32(&eq->ref);
		break;
	case FI_CLASS_SRX_CTX:
		/* A provider without shared receive contexts has none of
		 * util's to bind (its fi_srx_context answers -FI_ENOSYS). */
		ret = flags ? -FI_EINVAL
			    : ofi_srx_bind(container_of(bfid, struct util_srx,
							ep_fid.fid),
					   ep);
		break;
	case FI_CLASS_STX_CTX:
		ret = ep_bind_stx(ep, bfid, flags);
		break;
	default:
		ret = -FI_EINVAL;
		break;
	}
out:
	ofi_mutex_unlock(&ep->lock);
	return ret;
}

static int ep_enable(struct util_ep *ep)
{
	bool have_comp = ep->tx_cq || ep->rx_cq;
	int i, ret;

	if (ep->enabled)
		return 0;
	for (i = 0; i < OFI_CNTR_CNT; i++)
		have_comp = have_comp || ep->cntrs[i];
	if ((ep->type == FI_EP_RDM || ep->type == FI_EP_DGRAM) && !ep->av)
		return -FI_ENOAV;
	if (!have_comp && !ep->comp_optional)
		return -FI_ENOCQ;
	/* fi_commit(3): FI_COMMIT events need an EQ to go to. */
	if ((ep->info->mode & FI_COMMIT_MANUAL) && !ep->eq)
		return -FI_ENOEQ;
	/* Before a progress thread starts. */
	if (ofi_ep_shared(ep)) {
		ofi_cq_shared(ep->tx_cq);
		ofi_cq_shared(ep->rx_cq);
	}
	if (ep->enable) {
		ret = ep->enable(ep);
		if (ret)
			return ret;
	}
	ret = ofi_coll_ep_enable(ep);
	if (ret)
		return ret;
	ofi_ep_set_enabled(ep, true);
	ofi_domain_lock(ep->domain);
	ep->domain->override_locked = true;
	ofi_domain_unlock(ep->domain);
	return 0;
}

static int ep_opsflag(struct util_ep *ep, uint64_t *arg, bool set)
{
	uint64_t dir;

	if (!arg)
		return -FI_EINVAL;
	dir = *arg & (FI_TRANSMIT | FI_RECV);
	if (dir != FI_TRANSMIT && dir != FI_RECV)
		return -FI_EINVAL;
	if (!set) {
		*arg = dir == FI_TRANSMIT ? ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	}
	if (dir == FI_TRANSMIT)
		ep->tx_op_flags = *arg & ~(uint64_t)FI_TRANSMIT;
	else
		ep->rx_op_flags = *arg & ~(uint64_t)FI_RECV;
	return 0;
}

/*
 * An enabled endpoint joins its domain's list, which the readers of a
 * counter an MR counts into progress (ofi_cntr_progress). Not under
 * ep->lock: their progress takes that lock under the list's.
 */
static void ep_list_domain(struct util_ep *ep)
{
	struct util_domain *d = ep->domain;

	if (ep->shared)
		return;
	ofi_mutex_lock(&d->ep_lock);
	if (!ep->dom_ref.ep && !ep->detached) {
		ep->dom_ref.ep = ep;
		dlist_insert_tail(&ep->dom_ref.entry, &d->ep_list);
	}
	ofi_mutex_unlock(&d->ep_lock);
}

int ofi_ep_control(struct fid *fid, int command, void *arg)
{
	struct util_ep *ep = container_of(fid, struct util_ep, ep_fid.fid);
	int ret;

	ofi_mutex_lock(&ep->lock);
	switch (command) {
	case FI_ENABLE:
		ret = ep_enable(ep);
		break;
	case FI_GETOPSFLAG:
		ret = ep_opsflag(ep, arg, false);
		break;
	case FI_SETOPSFLAG:
		ret = ep_opsflag(ep, arg, true);
		break;
	case FI_ALIAS:
		ret = ofi_trig_ep_alias(ep, arg);
		break;
	default:
		ret = -FI_ENOSYS;
		break;
	}
	ofi_mutex_unlock(&ep->lock);
	if (command == FI_ENABLE && !ret)
		ep_list_domain(ep);
	return ret;
}

int ofi_ep_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen)
{
	struct util_ep *ep = container_of(fid, struct util_ep, ep_fid.fid);
	size_t val;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		val = ep->min_multi_recv;
		break;
	case FI_OPT_CM_DATA_SIZE:
		val = 0;
		break;
	default:
		return -FI_ENOPROTOOPT;
	}
	if (!optval || !optlen)
		return -FI_EINVAL;
	if (*optlen < sizeof(size_t)) {
		*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = val;
	*optlen = sizeof(size_t);
	return 0;
}

int ofi_ep_setopt(fid_t fid, int level, int optname, const void *optval,
		  size_t optlen)
{
	struct util_ep *ep = container_of(fid, struct util_ep, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	ep->min_multi_recv = *(const size_t *)optval;
	return 0;
}

static int ep_close_fid(struct fid *fid)
{
	struct util_ep *ep = container_of(fid, struct util_ep, ep_fid.fid);
	int ret;

	if (ofi_coll_ep_busy(ep))
		return -FI_EBUSY;
	ret = ofi_ep_close(ep);
	if (ret)
		return ret;
	free(ep);
	return 0;
}

const struct fi_ops ofi_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close_fid,
	.bind = ofi_ep_bind,
	.control = ofi_ep_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

const struct fi_ops_ep ofi_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = fi_no_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

int ofi_ep_init(struct util_domain *domain, const struct fi_info *info,
		struct util_ep *ep, ofi_ep_progress_t progress, void *context)
{
	int ret;

	if (!domain || !info || !ep)
		return -FI_EINVAL;
	memset(ep, 0, sizeof(*ep));
	ep->info = fi_dupinfo(info);
	if (!ep->info)
		return -FI_ENOMEM;
	ret = ofi_mutex_init(&ep->lock);
	if (ret) {
		fi_freeinfo(ep->info);
		return ret;
	}
	ep->domain = domain;
	ep->caps = info->caps;
	ep->type = info->ep_attr ? info->ep_attr->type : FI_EP_RDM;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->inject_size = info->tx_attr ? info->tx_attr->inject_size : 0;
	ep->iov_limit = info->tx_attr ? info->tx_attr->iov_limit : 0;
	ep->progress = progress;
	ofi_ep_fid_init(&ep->ep_fid, FI_CLASS_EP, context, &ofi_ep_fi_ops,
			&ofi_ep_ops);
	ofi_coll_ep_init(ep);
	ofi_atomic_inc32(&domain->ref);
	return 0;
}

void ofi_ep_fid_init(struct fid_ep *fid, size_t fclass, void *context,
		     const struct fi_ops *fi_ops, const struct fi_ops_ep *ops)
{
	fid->fid.fclass = fclass;
	fid->fid.context = context;
	fid->fid.ops = (struct fi_ops *)fi_ops;
	fid->ops = (struct fi_ops_ep *)ops;
	fid->cm = (struct fi_ops_cm *)&ofi_no_cm_ops;
	fid->msg = (struct fi_ops_msg *)&ofi_no_msg_ops;
	fid->tagged = (struct fi_ops_tagged *)&ofi_no_tagged_ops;
	fid->rma = (struct fi_ops_rma *)&ofi_no_rma_ops;
	fid->atomic = (struct fi_ops_atomic *)&ofi_no_atomic_ops;
	fid->collective = (struct fi_ops_collective *)&ofi_no_collective_ops;
}

void ofi_ep_share(struct util_ep *ep, const struct util_ep *owner)
{
	int i;

	ep->shared = true;
	ep->owner = (struct util_ep *)owner;
	ep->detached = true; /* on no list */
	ep->tx_cq = owner->tx_cq;
	ep->rx_cq = owner->rx_cq;
	ep->tx_cq_flags = owner->tx_cq_flags;
	ep->rx_cq_flags = owner->rx_cq_flags;
	for (i = 0; i < OFI_CNTR_CNT; i++)
		ep->cntrs[i] = owner->cntrs[i];
	ep->eq = owner->eq;
	ep->tx_op_flags = owner->tx_op_flags;
	ep->rx_op_flags = owner->rx_op_flags;
	ofi_ep_set_enabled(ep, true);
}

/*
 * ofi_cq_progress and ofi_cntr_progress call ep->progress holding the
 * list lock: once our entry is off the list, no call is running or can
 * start.
 */
void ofi_ep_detach(struct util_ep *ep)
{
	int i;

	if (ep->detached)
		return;
	ep->detached = true;
	ofi_coll_ep_detach(ep);
	/* no triggered operation may start on it any more */
	ofi_trig_ep_close(ep);
	if (ep->tx_cq)
		ep_ref_del(&ep->cq_refs[0], &ep->tx_cq->ep_lock);
	if (ep->rx_cq)
		ep_ref_del(&ep->cq_refs[1], &ep->rx_cq->ep_lock);
	for (i = 0; i < OFI_CNTR_CNT; i++) {
		if (ep->cntrs[i])
			ep_ref_del(&ep->cntr_refs[i], &ep->cntrs[i]->ep_lock);
	}
	ep_ref_del(&ep->dom_ref, &ep->domain->ep_lock);
	if (ep->av) {
		ofi_mutex_lock(&ep->av->lock);
		dlist_remove(&ep->av_entry);
		ofi_mutex_unlock(&ep->av->lock);
	}
	if (ep->srx)
		ofi_srx_unbind(ep->srx, ep);
}

int ofi_ep_close(struct util_ep *ep)
{
	int i;

	ofi_ep_detach(ep);
	ofi_coll_ep_close(ep);
	if (ep->shared)
		goto out;
	if (ep->tx_cq)
		ofi_atomic_dec32(&ep->tx_cq->ref);
	if (ep->rx_cq)
		ofi_atomic_dec32(&ep->rx_cq->ref);
	for (i = 0; i < OFI_CNTR_CNT; i++) {
		if (ep->cntrs[i])
			ofi_atomic_dec32(&ep->cntrs[i]->ref);
	}
	if (ep->av)
		ofi_atomic_dec32(&ep->av->ref);
	if (ep->eq)
		ofi_atomic_dec32(&ep->eq->ref);
	if (ep->srx)
		ofi_atomic_dec32(&ep->srx->ref);
	if (ep->stx)
		ofi_atomic_dec32(&ep->stx->ref);
out:
	ofi_atomic_dec32(&ep->domain->ref);
	ofi_mutex_destroy(&ep->lock);
	fi_freeinfo(ep->info);
	ep->info = NULL;
	return 0;
}

int ofi_ep_refs_fds(ofi_mutex_t *lock, struct dlist_entry *list,
		    struct pollfd *fds, nfds_t *n, int st)
{
	struct dlist_entry *item;
	struct util_ep *ep;
	int one;

	ofi_mutex_lock(lock);
	dlist_foreach(list, item) {
		if (st <= OFI_EP_WAIT_POLL)
			break;
		ep = container_of(item, struct util_ep_ref, entry)->ep;
		if (ep->auto_progress) {
			ofi_ep_rouse(ep);
			continue;
		}
		if (!ep->wait_fd || *n == OFI_EP_POLL_MAX ||
		    (fds[*n].fd = ep->wait_fd(ep)) < 0) {
			st = OFI_EP_WAIT_POLL;
			break;
		}
		fds[(*n)++].events = POLLIN;
		one = ep->wait_arm ? ep->wait_arm(ep) : OFI_EP_WAIT_NAP;
		st = OFI_MIN(st, one);
	}
	ofi_mutex_unlock(lock);
	return st;
}

void ofi_ep_wake_waits(struct util_ep *ep)
{
	int i;

	if (ep->tx_cq)
		ofi_wait_signal(ep->tx_cq->wait);
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		ofi_wait_signal(ep->rx_cq->wait);
	for (i = 0; i < OFI_CNTR_CNT; i++) {
		if (ep->cntrs[i])
			ofi_wait_signal(ep->cntrs[i]->wait);
	}
}

bool ofi_ep_fds_sleep(struct util_wait *wait, uint64_t seen, struct pollfd *fds,
		      nfds_t n, int st, int left)
{
	int ms;

	if (st == OFI_EP_WAIT_BUSY)
		return true;
	if (st == OFI_EP_WAIT_POLL || !n)
		return false;
	/*
	 * Endpoints whose fd misses nothing, on an object whose eventfd
	 * tells of completions other threads write: no nap needed. An fd
	 * of an endpoint closed meanwhile only wakes us early.
	 */
	ms = st == OFI_EP_WAIT_SOUND && wait->efd >= 0 ? OFI_EP_POLL_LONG_MS
						       : OFI_EP_POLL_NAP_MS;
	if (left >= 0 && left < ms)
		ms = left;
	if (wait->efd >= 0) {
		fds[n].fd = wait->efd;
		fds[n++].events = POLLIN;
	}
	if (!ofi_wait_sleeper(wait, seen, 1))
		return true;
	(void)poll(fds, n, ms);
	ofi_wait_sleeper(wait, seen, -1);
	if (wait->efd >= 0 && fds[n - 1].revents)
		ofi_wait_drain(wait);
	return true;
}

/* @fn on every endpoint on @list (struct util_ep_ref), under @lock. */
static void ep_refs_each(ofi_mutex_t *lock, struct dlist_entry *list,
			 void (*fn)(struct util_ep *ep))
{
	struct dlist_entry *item;

	ofi_mutex_lock(lock);
	dlist_foreach(list, item)
		fn(container_of(item, struct util_ep_ref, entry)->ep);
	ofi_mutex_unlock(lock);
}

static void ep_progress_one(struct util_ep *ep)
{
	if (ep->progress)
		ep->progress(ep);
}

void ofi_ep_refs_progress(ofi_mutex_t *lock, struct dlist_entry *list)
{
	ep_refs_each(lock, list, ep_progress_one);
}

bool ofi_ep_refs_poll(struct util_wait *wait, uint64_t seen, ofi_mutex_t *lock,
		      struct dlist_entry *list, int left)
{
	struct pollfd fds[OFI_EP_POLL_MAX + 1];
	nfds_t n = 0;
	int st;

	st = ofi_ep_refs_fds(lock, list, fds, &n, OFI_EP_WAIT_SOUND);
	return ofi_ep_fds_sleep(wait, seen, fds, n, st, left);
}

static void ep_rouse_one(struct util_ep *ep)
{
	if (ep->auto_progress)
		ofi_ep_rouse(ep);
}

void ofi_ep_refs_rouse(ofi_mutex_t *lock, struct dlist_entry *list)
{
	ep_refs_each(lock, list, ep_rouse_one);
}

static void ep_lock_pass(ofi_mutex_t *lock)
{
	ofi_mutex_lock(lock);
	ofi_mutex_unlock(lock);
}

void ofi_ep_rouse(struct util_ep *ep)
{
	struct ofi_progress *prog;

	prog = __atomic_load_n(&ep->auto_prog, __ATOMIC_ACQUIRE);
	ofi_progress_rouse(prog);
}

void ofi_ep_set_progress(struct util_ep *ep, struct ofi_progress *prog)
{
	int i;

	__atomic_store_n(&ep->auto_prog, prog, __ATOMIC_RELEASE);
	if (prog)
		return;
	/* A reader that still saw the thread holds one of these. */
	if (ep->tx_cq)
		ep_lock_pass(&ep->tx_cq->ep_lock);
	if (ep->rx_cq)
		ep_lock_pass(&ep->rx_cq->ep_lock);
	for (i = 0; i < OFI_CNTR_CNT; i++) {
		if (ep->cntrs[i])
			ep_lock_pass(&ep->cntrs[i]->ep_lock);
	}
	if (ep->eq) {
		pthread_mutex_lock(&ep->eq->prog_lock);
		pthread_mutex_unlock(&ep->eq->prog_lock);
	}
}

bool ofi_ep_refs_manual(ofi_mutex_t *lock, struct dlist_entry *list)
{
	struct dlist_entry *item;
	bool manual = false;

	ofi_mutex_lock(lock);
	dlist_foreach(list, item) {
		if (!container_of(item, struct util_ep_ref, entry)
			     ->ep->auto_progress) {
			manual = true;
			break;
		}
	}
	ofi_mutex_unlock(lock);
	return manual;
}

/* ------------------------------------------------------------------ */
/* Scalable endpoints' contexts (ofi_util.h).                          */

static int sep_count(size_t want, size_t *cnt)
{
	if (want > OFI_SEP_CTX_MAX) /* FI_SHARED_CONTEXT too */
		return -FI_EINVAL;
	*cnt = want ? want : 1;
	return 0;
}

int ofi_sep_slots_init(struct ofi_sep_slots *s, const struct fi_info *info)
{
	const struct fi_ep_attr *ea = info ? info->ep_attr : NULL;

	memset(s, 0, sizeof(*s));
	return sep_count(ea ? ea->tx_ctx_cnt : 0, &s->tx_cnt)
		       ?: sep_count(ea ? ea->rx_ctx_cnt : 0, &s->rx_cnt);
}

int ofi_sep_slot_check(const struct ofi_sep_slots *s, int index, bool tx)
{
	return index < 0 || (size_t)index >= (tx ? s->tx_cnt : s->rx_cnt)
		       ? -FI_EINVAL
		       : 0;
}

int ofi_sep_slot_take(struct ofi_sep_slots *s, int index, bool tx,
		      struct util_ep *c)
{
	struct util_ep **slot = tx ? &s->tx[index] : &s->rx[index];

	if (*slot)
		return -FI_EBUSY;
	*slot = c;
	s->open++;
	return 0;
}

void ofi_sep_slot_drop(struct ofi_sep_slots *s, const struct util_ep *c)
{
	size_t i;

	for (i = 0; i < OFI_SEP_CTX_MAX; i++) {
		if (s->tx[i] == c)
			s->tx[i] = NULL;
		if (s->rx[i] == c)
			s->rx[i] = NULL;
	}
	s->open--;
}

struct util_ep *ofi_sep_slot_next(const struct ofi_sep_slots *s, size_t *i)
{
	struct util_ep *c;

	while (*i < 2 * OFI_SEP_CTX_MAX) {
		c = *i < OFI_SEP_CTX_MAX ? s->tx[*i]
					 : s->rx[*i - OFI_SEP_CTX_MAX];
		(*i)++;
		if (c)
			return c;
	}
	return NULL;
}

struct fi_info *ofi_ctx_info(const struct fi_info *sep, bool tx,
			     const void *attr)
{
	const struct fi_tx_attr *ta = attr;
	const struct fi_rx_attr *ra = attr;
	struct fi_info *info = fi_dupinfo(sep);

	if (!info || !attr)
		return info;
	if (tx && info->tx_attr) {
		if (ta->caps & ~info->caps)
			goto inval;
		if (ta->caps)
			info->caps = (info->caps & ~OFI_TX_CAPS) | ta->caps;
		info->tx_attr->op_flags = ta->op_flags;
		if (ta->size)
			info->tx_attr->size = ta->size;
	} else if (!tx && info->rx_attr) {
		if (ra->caps & ~info->caps)
			goto inval;
		if (ra->caps)
			info->caps = (info->caps & ~OFI_RX_CAPS) | ra->caps;
		info->rx_attr->op_flags = ra->op_flags;
		if (ra->size)
			info->rx_attr->size = ra->size;
	}
	return info;
inval:
	fi_freeinfo(info);
	return NULL;
}

int ofi_sep_enable(struct util_ep *sep, bool ready)
{
	int ret = 0;

	ofi_mutex_lock(&sep->lock);
	if (!sep->enabled) {
		ret = ready ? sep->enable(sep) : -FI_ENOAV;
		ofi_ep_set_enabled(sep, !ret);
	}
	ofi_mutex_unlock(&sep->lock);
	return ret;
}

void ofi_ctx_take_av(struct util_ep *c, const struct util_ep *sep)
{
	if (c->av || !sep->av || ofi_ep_enabled(c))
		return;
	c->av = sep->av;
	ofi_atomic_inc32(&sep->av->ref);
}

void ofi_sep_share_av(const struct ofi_sep_slots *s, const struct util_ep *sep)
{
	struct util_ep *c;
	size_t i = 0;

	while ((c = ofi_sep_slot_next(s, &i)))
		ofi_ctx_take_av(c, sep);
}

void ofi_ctx_msg_ops(const struct fi_ops_msg *all, bool tx,
		     struct fi_ops_msg *out)
{
	const struct fi_ops_msg *rx = tx ? &ofi_no_msg_ops : all;

	*out = tx ? *all : ofi_no_msg_ops;
	out->recv = rx->recv;
	out->recvv = rx->recvv;
	out->recvmsg = rx->recvmsg;
}

void ofi_ctx_tagged_ops(const struct fi_ops_tagged *all, bool tx,
			struct fi_ops_tagged *out)
{
	const struct fi_ops_tagged *rx = tx ? &ofi_no_tagged_ops : all;

	*out = tx ? *all : ofi_no_tagged_ops;
	out->recv = rx->recv;
	out->recvv = rx->recvv;
	out->recvmsg = rx->recvmsg;
}
