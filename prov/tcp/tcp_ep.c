/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_ep.c - the tcp endpoint object (RDM and MSG): open, enable, close,
 * getname, size_left, its pools and listening socket, and the ops tables
 * that lead to tcp_msg.c, tcp_rma.c and tcp_cm.c. The jobs it starts are
 * other files': requests (tcp_req.c), frames (tcp_frame.c), progress
 * (tcp_progress.c) and its thread (tcp_thread.c).
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_coll.h"
#include "tcp.h"

static int tcp_ep_enable(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);
	int ret;

	if (ep->msg) {
		ret = tcp_cm_ep_enable(util);
		if (ret)
			return ret;
	}
	if (util->srx)
		tcp_srx_enable(ep);
	else if (!ep->msg)
		tcp_shm_enable(ep);
	/* Every sleep on the set's fd arms it first (tcp_wait_arm, the
	 * progress thread's tcp_auto_arm) but for a scalable endpoint's
	 * contexts' (they have no arm of their own). */
	if (!ep->msg && !ep->sep)
		ofi_sock_set_quiet(ep->set, true);
	/* Before a progress thread starts that would read it. */
	ep->serial = util->domain->threading == FI_THREAD_DOMAIN &&
		     !ofi_ep_shared(util) && !util->srx && !ep->msg && !ep->sep;
	return tcp_auto_start(ep);
}

void tcp_ep_fini(struct tcp_ep *ep)
{
	struct dlist_entry *e;

	if (ep->mq.pool)
		ofi_match_flush(&ep->mq, -FI_ECANCELED);
	while ((e = dlist_pop_front(&ep->frame_free)))
		free(container_of(e, struct tcp_frame, entry));
	ofi_match_pool_free(&ep->mq);
	free(ep->req_pool);
	free(ep->removed);
	ofi_mutex_destroy(&ep->lock);
	ofi_mutex_destroy(&ep->av_lock);
	ofi_ep_close(&ep->util);
}

static void tcp_ep_free(struct tcp_ep *ep)
{
	/* Before our queues go: shm's messages in them are its own. */
	tcp_shm_close(ep);
	if (ep->msg)
		tcp_cm_ep_fini(ep);
	if (ep->srx_on) {
		tcp_srx_close(ep);
	} else if (ep->set) {
		ofi_sock_set_close(ep->set);
	}
	ep->set = NULL;
	tcp_ep_fini(ep);
}

int tcp_ep_close(struct fid *fid)
{
	struct tcp_ep *ep = container_of(fid, struct tcp_ep, util.ep_fid.fid);

	if (ofi_coll_ep_busy(&ep->util))
		return -FI_EBUSY; /* its groups' fid_mc are the app's */
	/* Our progress thread first (it waits for a call in flight), then
	 * off the CQs, counters and AV: no progress of another thread and
	 * no AV callback reaches us while we tear down. */
	tcp_auto_stop(ep);
	ofi_ep_detach(&ep->util);
	tcp_ep_lock(ep);
	/* What was queued still goes out (fi_tcp(7): close lingers), the
	 * batched answers owed too. */
	if (ep->nowed)
		tcp_owed_flush(ep);
	if (ep->set && ofi_sock_linger(ep->set, TCP_LINGER_MS))
		FI_WARN(tcp_ep_prov(ep), FI_LOG_EP_CTRL,
			"close: sends still queued after %d ms dropped\n",
			TCP_LINGER_MS);
	tcp_ep_unlock(ep);
	tcp_ep_free(ep);
	free(ep);
	return 0;
}

OFI_EP_FI_OPS(tcp_ep_fi_ops, tcp_ep_close);

static ssize_t tcp_size_left(struct tcp_ep *ep, struct dlist_entry *list)
{
	struct dlist_entry *e;
	ssize_t n = 0;

	if (!ofi_ep_enabled(&ep->util))
		return -FI_EOPBADSTATE;
	tcp_ep_lock(ep);
	dlist_foreach(list, e)
		n++;
	tcp_ep_unlock(ep);
	return n;
}

/*
 * Sends to peers on the same-host path hold the shm endpoint's transmit
 * entries, not tcp's: the endpoint can take as many more as the fuller of
 * the two allows. Asked outside tcp's lock, which shm's ops run under.
 */
static ssize_t tcp_tx_size_left(struct fid_ep *ep_fid)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);
	ssize_t n = tcp_size_left(ep, &ep->req_free), shm;

	if (n < 0 || !ep->shm)
		return n;
	shm = ep->shm->ops->tx_size_left(ep->shm);
	return shm >= 0 ? OFI_MIN(n, shm) : n;
}

static ssize_t tcp_rx_size_left(struct fid_ep *ep_fid)
{
	struct tcp_ep *ep = tcp_ep_of(ep_fid);

	return tcp_size_left(ep, &ep->rxq->rx_free);
}

static const struct fi_ops_ep tcp_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = tcp_ep_cancel,
	.getopt = tcp_cm_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = tcp_rx_size_left,
	.tx_size_left = tcp_tx_size_left,
};

static int tcp_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct tcp_ep *ep = container_of(fid, struct tcp_ep, util.ep_fid.fid);

	return ofi_getname_copy(addr, addrlen, &ep->name, ep->namelen);
}

OFI_GETNAME_CM_OPS(tcp_cm_ops, tcp_getname);

static int tcp_ep_pools(struct tcp_ep *ep, size_t rx_size, size_t tx_size,
			uint32_t req_base)
{
	size_t i;

	ep->req_pool = calloc(tx_size, sizeof(*ep->req_pool));
	if (!ep->req_pool)
		return -FI_ENOMEM;
	ofi_match_init(&ep->mq, &ep->util, &tcp_match_ops);
	if (ofi_match_pool(&ep->mq, rx_size))
		return -FI_ENOMEM;
	ep->req_cnt = tx_size;
	for (i = 0; i < tx_size; i++) {
		ep->req_pool[i].obj = TCP_OBJ_REQ;
		ep->req_pool[i].ep = ep;
		ep->req_pool[i].idx = req_base + (uint32_t)i;
		dlist_insert_tail(&ep->req_pool[i].entry, &ep->req_free);
	}
	return 0;
}

/* The listening address: the info's source, else loopback, port 0. */
static int tcp_ep_listen(struct tcp_ep *ep, const struct fi_info *info)
{
	struct sockaddr_storage sa = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
	uint32_t format = ep->util.domain->addr_format;
	socklen_t len = (socklen_t)ofi_sockaddr_len(format);
	int ret;

	if (info->src_addr) {
		if (info->src_addrlen < len ||
		    ((const struct sockaddr *)info->src_addr)->sa_family !=
			    (format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET))
			return -FI_EINVAL;
		memcpy(&sa, info->src_addr, len);
	} else if (format == FI_SOCKADDR_IN6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
	} else {
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	ret = ofi_sock_set_open(&tcp_sock_ops, ep, (struct sockaddr *)&sa, len,
				&ep->set);
	if (ret)
		return ret;
	ofi_sock_getname(ep->set, &ep->name);
	ep->namelen = len;
	/* The AV compares whole structs: keep the padding zero. */
	if (format != FI_SOCKADDR_IN6)
		memset(((struct sockaddr_in *)&ep->name)->sin_zero, 0, 8);
	return 0;
}

/* FI_FENCE (util_trigger.c): requests not yet complete, on either
 * path. */
bool tcp_tx_busy(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);
	bool busy;

	tcp_ep_lock(ep);
	busy = !dlist_empty(&ep->pending) || tcp_shm_tx_busy(ep);
	tcp_ep_unlock(ep);
	return busy;
}

int tcp_ep_init(struct tcp_ep *ep, struct util_domain *dom,
		const struct fi_info *info, uint32_t req_base, void *context)
{
	size_t rx_size, tx_size;
	int ret;

	ep->shm_wait_epfd = -1;
	rx_size = info->rx_attr && info->rx_attr->size ? info->rx_attr->size
						       : TCP_RX_SIZE;
	tx_size = info->tx_attr && info->tx_attr->size ? info->tx_attr->size
						       : TCP_TX_SIZE;
	/* request ids hold a pool index in their low 16 bits */
	if (rx_size > TCP_RX_SIZE * 64 || tx_size > TCP_TX_SIZE * 64)
		return -FI_EINVAL;
	ret = ofi_ep_init(dom, info, &ep->util, tcp_ep_progress, context);
	if (ret)
		return ret;
	ofi_mutex_init(&ep->lock);
	ep->util.inject_size = TCP_INJECT_SIZE;
	ep->util.iov_limit = TCP_IOV_LIMIT;
	ep->lockp = &ep->lock;
	ep->rxq = &ep->mq;
	ofi_mutex_init(&ep->av_lock);
	dlist_init(&ep->req_free);
	dlist_init(&ep->pending);
	dlist_init(&ep->frame_free);
	dlist_init(&ep->cm_events);
	dlist_init(&ep->busy);
	ep->util.av_ops = &tcp_av_ep_ops;
	ep->util.wait_fd = tcp_wait_fd;
	ep->util.min_multi_recv = 64;
	ep->unexp_max = TCP_UNEXP_MAX;
	fi_param_get_size_t((struct fi_provider *)dom->prov, "max_unexp",
			    &ep->unexp_max);
	ep->req_base = req_base;
	ret = tcp_ep_pools(ep, rx_size, tx_size, req_base);
	if (ret)
		tcp_ep_fini(ep);
	return ret;
}

int tcp_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep_fid, void *context)
{
	struct util_domain *dom;
	struct tcp_ep *ep;
	int ret;

	if (!domain || !info || !ep_fid)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_MSG &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	if (info->handle &&
	    (!info->ep_attr || info->ep_attr->type != FI_EP_MSG))
		return -FI_EINVAL;
	dom = container_of(domain, struct util_domain, domain_fid);
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ret = tcp_ep_init(ep, dom, info, 0, context);
	if (ret) {
		free(ep);
		return ret;
	}
	if (info->ep_attr && info->ep_attr->type == FI_EP_MSG) {
		ret = tcp_cm_ep_init(ep, info);
	} else {
		ret = tcp_ep_listen(ep, info) ?: tcp_shm_open(ep);
		/* same-host peers write to our region: shm's wake socket
		 * says so, when it has one (tcp_wait_arm) */
		ep->util.wait_nap = ep->shm != NULL;
		ep->util.coll_fold_cpus = !ep->shm;
	}
	ep->util.wait_arm = tcp_wait_arm;
	if (ret)
		goto err;
	ep->util.enable = tcp_ep_enable;
	ep->util.auto_progress = tcp_auto_wanted(ep);
	ep->util.side_thread = !ep->util.auto_progress && !ep->msg;

	ep->util.ep_fid.fid.ops = (struct fi_ops *)&tcp_ep_fi_ops;
	ep->util.ep_fid.ops = (struct fi_ops_ep *)&tcp_ep_ops;
	ep->util.ep_fid.cm =
		(struct fi_ops_cm *)(ep->msg ? &tcp_msg_cm_ops : &tcp_cm_ops);
	ep->util.ep_fid.msg = (struct fi_ops_msg *)&tcp_msg_ops;
	ep->util.ep_fid.tagged = (struct fi_ops_tagged *)&tcp_tagged_ops;
	ep->util.ep_fid.rma = (struct fi_ops_rma *)&tcp_rma_ops;
	ep->util.ep_fid.atomic = (struct fi_ops_atomic *)&tcp_atomic_ops;
	ep->util.tx_busy = tcp_tx_busy;
	ret = ofi_trig_ep_wrap(&ep->util);
	if (ret)
		goto err;
	*ep_fid = &ep->util.ep_fid;
	return 0;
err:
	tcp_ep_free(ep);
	free(ep);
	return ret;
}
