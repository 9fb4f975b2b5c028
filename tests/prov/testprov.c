/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * testprov.c - "testprov", a test-only loadable provider (libtestprov-fi.so)
 * built entirely on prov/util: FI_EP_RDM endpoints named "testprov://<n>"
 * that exchange messages and tagged messages with other endpoints of the
 * same process through a process-wide endpoint table.  Data is copied at
 * send time, so every operation completes before the call returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_util.h"

#define TP_NAME	     "testprov"
#define TP_PREFIX    "testprov://"
#define TP_ADDRLEN   32
#define TP_MAX_MSG   (64 * 1024)
#define TP_INJECT    256
#define TP_IOV_LIMIT 4
#define TP_CAPS                                                                \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE |                  \
	 FI_DIRECTED_RECV | FI_LOCAL_COMM)

static struct fi_provider tp_prov;

struct tp_ep {
	struct util_ep util;
	uint32_t id;
	char name[TP_ADDRLEN];
	ofi_mutex_t lock;	      /* the queues below */
	struct dlist_entry entry;     /* in tp_eps */
	struct dlist_entry posted[2]; /* [0] msg, [1] tagged receives */
	struct dlist_entry unexp[2];
};

struct tp_rx {
	struct dlist_entry entry;
	struct iovec iov[TP_IOV_LIMIT];
	size_t count;
	fi_addr_t src;
	uint64_t tag;
	uint64_t ignore;
	uint64_t flags;
	void *context;
};

struct tp_unexp {
	struct dlist_entry entry;
	char from[TP_ADDRLEN];
	uint64_t tag;
	uint64_t data;
	uint64_t flags;
	size_t len;
	uint8_t buf[];
};

static pthread_mutex_t tp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dlist_entry tp_eps = DLIST_HEAD_INIT(tp_eps);
static uint32_t tp_next_id;

/* Addresses ------------------------------------------------------------ */

static int tp_parse(const char *addr, uint32_t *id)
{
	const char *p;
	char *end;
	unsigned long v;

	if (strncmp(addr, TP_PREFIX, strlen(TP_PREFIX)))
		return -FI_EINVAL;
	p = addr + strlen(TP_PREFIX);
	if (*p < '0' || *p > '9')
		return -FI_EINVAL;
	v = strtoul(p, &end, 10);
	if (*end || v > UINT32_MAX)
		return -FI_EINVAL;
	*id = (uint32_t)v;
	return 0;
}

static int tp_av_validate(struct util_av *av, const void *addr)
{
	uint32_t id;

	return tp_parse(addr, &id);
}

static int tp_av_svc(struct util_av *av, const char *node, const char *service,
		     void *addr)
{
	uint32_t id;

	if (!service)
		return -FI_EINVAL;
	snprintf(addr, TP_ADDRLEN, TP_PREFIX "%s", service);
	return tp_parse(addr, &id);
}

static const struct util_av_attr tp_av_attr = {
	.addrlen = TP_ADDRLEN,
	.validate = tp_av_validate,
	.svc_to_addr = tp_av_svc,
};

static int tp_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		      struct fid_av **av, void *context)
{
	return ofi_av_open(domain, attr, &tp_av_attr, av, context);
}

/* Data path ------------------------------------------------------------ */

static bool tp_match(struct tp_ep *ep, const struct tp_rx *rx, const char *from,
		     uint64_t tag, bool tagged)
{
	if (tagged && ((rx->tag | rx->ignore) != (tag | rx->ignore)))
		return false;
	if (rx->src == FI_ADDR_UNSPEC || !ep->util.av ||
	    !(ep->util.caps & FI_DIRECTED_RECV))
		return true;
	return ofi_av_reverse_lookup(ep->util.av, from) == rx->src;
}

/* Completes @rx with a message; the receiver's lock is held. */
static void tp_deliver(struct tp_ep *ep, struct tp_rx *rx, const char *from,
		       const void *buf, size_t len, uint64_t tag, uint64_t data,
		       uint64_t sflags, bool tagged)
{
	uint64_t flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	size_t cap = ofi_total_iov_len(rx->iov, rx->count);
	size_t n = ofi_copy_to_iov(rx->iov, rx->count, 0, buf, len);
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	struct fi_cq_err_entry err;

	if (sflags & FI_REMOTE_CQ_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	if (ep->util.av && (ep->util.caps & FI_SOURCE))
		src = ofi_av_src_addr(ep->util.av, from);
	if (len > cap) {
		memset(&err, 0, sizeof(err));
		err.op_context = rx->context;
		err.flags = flags;
		err.len = n;
		err.data = data;
		err.tag = tag;
		err.olen = len - cap;
		err.err = FI_ETRUNC;
		if (ep->util.rx_cq)
			ofi_cq_write_error(ep->util.rx_cq, &err);
		ofi_ep_cntr_inc_err(&ep->util, OFI_CNTR_RX);
		return;
	}
	if (ep->util.rx_cq &&
	    ofi_ep_wants_comp(ep->util.rx_cq_flags, rx->flags))
		ofi_cq_write_src(ep->util.rx_cq, rx->context, flags, n, NULL,
				 data, tag, src);
	ofi_ep_cntr_inc(&ep->util, OFI_CNTR_RX);
}

static struct tp_ep *tp_find_locked(uint32_t id)
{
	struct dlist_entry *item;
	struct tp_ep *ep;

	dlist_foreach(&tp_eps, item) {
		ep = container_of(item, struct tp_ep, entry);
		if (ep->id == id)
			return ep;
	}
	return NULL;
}

static ssize_t tp_send(struct tp_ep *ep, const struct iovec *iov, size_t count,
		       fi_addr_t dest, uint64_t tag, uint64_t data,
		       uint64_t flags, void *context, bool tagged)
{
	char addr[TP_ADDRLEN];
	struct dlist_entry *item;
	struct tp_unexp *ux;
	struct tp_rx *rx;
	struct tp_ep *peer;
	size_t len;
	uint32_t id;
	int t = tagged;

	if (!ep->util.enabled)
		return -FI_EOPBADSTATE;
	if (count > TP_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	len = ofi_total_iov_len(iov, count);
	if (len > TP_MAX_MSG || ((flags & FI_INJECT) && len > TP_INJECT))
		return -FI_EINVAL;
	if (ofi_av_get_addr(ep->util.av, dest, addr) || tp_parse(addr, &id))
		return -FI_EINVAL;

	ux = malloc(sizeof(*ux) + len);
	if (!ux)
		return -FI_ENOMEM;
	ofi_copy_from_iov(ux->buf, len, iov, count, 0);
	memcpy(ux->from, ep->name, TP_ADDRLEN);
	ux->tag = tag;
	ux->data = data;
	ux->flags = flags;
	ux->len = len;

	pthread_mutex_lock(&tp_lock);
	peer = tp_find_locked(id);
	if (!peer) {
		pthread_mutex_unlock(&tp_lock);
		free(ux);
		return -FI_EHOSTUNREACH;
	}
	ofi_mutex_lock(&peer->lock);
	rx = NULL;
	dlist_foreach(&peer->posted[t], item) {
		rx = container_of(item, struct tp_rx, entry);
		if (tp_match(peer, rx, ux->from, tag, tagged))
			break;
		rx = NULL;
	}
	if (rx) {
		dlist_remove(&rx->entry);
		tp_deliver(peer, rx, ux->from, ux->buf, len, tag, data, flags,
			   tagged);
		free(rx);
		free(ux);
	} else {
		dlist_insert_tail(&ux->entry, &peer->unexp[t]);
	}
	ofi_mutex_unlock(&peer->lock);
	pthread_mutex_unlock(&tp_lock);

	if (!(flags & FI_INJECT) && ep->util.tx_cq &&
	    ofi_ep_wants_comp(ep->util.tx_cq_flags, flags))
		ofi_cq_write(ep->util.tx_cq, context,
			     FI_SEND | (tagged ? FI_TAGGED : FI_MSG), 0, NULL,
			     0, 0);
	ofi_ep_cntr_inc(&ep->util, OFI_CNTR_TX);
	return 0;
}

static ssize_t tp_recv(struct tp_ep *ep, const struct iovec *iov, size_t count,
		       fi_addr_t src, uint64_t tag, uint64_t ignore,
		       uint64_t flags, void *context, bool tagged)
{
	struct dlist_entry *item;
	struct tp_unexp *ux;
	struct tp_rx *rx;
	int t = tagged;

	if (!ep->util.enabled)
		return -FI_EOPBADSTATE;
	if (count > TP_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return -FI_ENOMEM;
	memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->count = count;
	rx->src = (ep->util.caps & FI_DIRECTED_RECV) ? src : FI_ADDR_UNSPEC;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->flags = flags;
	rx->context = context;

	ofi_mutex_lock(&ep->lock);
	dlist_foreach(&ep->unexp[t], item) {
		ux = container_of(item, struct tp_unexp, entry);
		if (!tp_match(ep, rx, ux->from, ux->tag, tagged))
			continue;
		dlist_remove(&ux->entry);
		tp_deliver(ep, rx, ux->from, ux->buf, ux->len, ux->tag,
			   ux->data, ux->flags, tagged);
		ofi_mutex_unlock(&ep->lock);
		free(ux);
		free(rx);
		return 0;
	}
	dlist_insert_tail(&rx->entry, &ep->posted[t]);
	ofi_mutex_unlock(&ep->lock);
	return 0;
}

static struct tp_ep *to_tp(struct fid_ep *fid)
{
	return container_of(fid, struct tp_ep, util.ep_fid);
}

static uint64_t tp_txf(struct fid_ep *fid, uint64_t flags)
{
	return flags | to_tp(fid)->util.tx_op_flags;
}

/* fi_ops_msg */

static ssize_t tp_msg_recv(struct fid_ep *fid, void *buf, size_t len,
			   void *desc, fi_addr_t src, void *context)
{
	struct iovec iov = {buf, len};

	return tp_recv(to_tp(fid), &iov, 1, src, 0, 0,
		       to_tp(fid)->util.rx_op_flags, context, false);
}

static ssize_t tp_msg_recvv(struct fid_ep *fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t src,
			    void *context)
{
	return tp_recv(to_tp(fid), iov, count, src, 0, 0,
		       to_tp(fid)->util.rx_op_flags, context, false);
}

static ssize_t tp_msg_recvmsg(struct fid_ep *fid, const struct fi_msg *msg,
			      uint64_t flags)
{
	return tp_recv(to_tp(fid), msg->msg_iov, msg->iov_count, msg->addr, 0,
		       0, flags, msg->context, false);
}

static ssize_t tp_msg_send(struct fid_ep *fid, const void *buf, size_t len,
			   void *desc, fi_addr_t dest, void *context)
{
	struct iovec iov = {(void *)buf, len};

	return tp_send(to_tp(fid), &iov, 1, dest, 0, 0, tp_txf(fid, 0), context,
		       false);
}

static ssize_t tp_msg_sendv(struct fid_ep *fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest,
			    void *context)
{
	return tp_send(to_tp(fid), iov, count, dest, 0, 0, tp_txf(fid, 0),
		       context, false);
}

static ssize_t tp_msg_sendmsg(struct fid_ep *fid, const struct fi_msg *msg,
			      uint64_t flags)
{
	return tp_send(to_tp(fid), msg->msg_iov, msg->iov_count, msg->addr, 0,
		       msg->data, flags, msg->context, false);
}

static ssize_t tp_msg_inject(struct fid_ep *fid, const void *buf, size_t len,
			     fi_addr_t dest)
{
	struct iovec iov = {(void *)buf, len};

	return tp_send(to_tp(fid), &iov, 1, dest, 0, 0, FI_INJECT, NULL, false);
}

static ssize_t tp_msg_senddata(struct fid_ep *fid, const void *buf, size_t len,
			       void *desc, uint64_t data, fi_addr_t dest,
			       void *context)
{
	struct iovec iov = {(void *)buf, len};

	return tp_send(to_tp(fid), &iov, 1, dest, 0, data,
		       tp_txf(fid, FI_REMOTE_CQ_DATA), context, false);
}

static ssize_t tp_msg_injectdata(struct fid_ep *fid, const void *buf,
				 size_t len, uint64_t data, fi_addr_t dest)
{
	struct iovec iov = {(void *)buf, len};

	return tp_send(to_tp(fid), &iov, 1, dest, 0, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA, NULL, false);
}

static const struct fi_ops_msg tp_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = tp_msg_recv,
	.recvv = tp_msg_recvv,
	.recvmsg = tp_msg_recvmsg,
	.send = tp_msg_send,
	.sendv = tp_msg_sendv,
	.sendmsg = tp_msg_sendmsg,
	.inject = tp_msg_inject,
	.senddata = tp_msg_senddata,
	.injectdata = tp_msg_injectdata,
};

/* fi_ops_tagged */

static ssize_t tp_t_recv(struct fid_ep *fid, void *buf, size_t len, void *desc,
			 fi_addr_t src, uint64_t tag, uint64_t ignore,
			 void *context)
{
	struct iovec iov = {buf, len};

	return tp_recv(to_tp(fid), &iov, 1, src, tag, ignore,
		       to_tp(fid)->util.rx_op_flags, context, true);
}

static ssize_t tp_t_recvv(struct fid_ep *fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, void *context)
{
	return tp_recv(to_tp(fid), iov, count, src, tag, ignore,
		       to_tp(fid)->util.rx_op_flags, context, true);
}

static ssize_t tp_t_recvmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	return tp_recv(to_tp(fid), msg->msg_iov, msg->iov_count, msg->addr,
		       msg->tag, msg->ignore, flags, msg->context, true);
}

static ssize_t tp_t_send(struct fid_ep *fid, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t tag,
			 void *context)
{
	struct iovec iov = {(void *)buf, len};

	return tp_send(to_tp(fid), &iov, 1, dest, tag, 0, tp_txf(fid, 0),
		       context, true);
}

static ssize_t tp_t_sendv(struct fid_ep *fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t tag, void *context)
{
	return tp_send(to_tp(fid), iov, count, dest, tag, 0, tp_txf(fid, 0),
		       context, true);
}

static ssize_t tp_t_sendmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	return tp_send(to_tp(fid), msg->msg_iov, msg->iov_count, msg->addr,
		       msg->tag, msg->data, flags, msg->context, true);
}

static ssize_t tp_t_inject(struct fid_ep *fid, const void *buf, size_t len,
			   fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};

	return tp_send(to_tp(fid), &iov, 1, dest, tag, 0, FI_INJECT, NULL,
		       true);
}

static ssize_t tp_t_senddata(struct fid_ep *fid, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t tag, void *context)
{
	struct iovec iov = {(void *)buf, len};

	return tp_send(to_tp(fid), &iov, 1, dest, tag, data,
		       tp_txf(fid, FI_REMOTE_CQ_DATA), context, true);
}

static ssize_t tp_t_injectdata(struct fid_ep *fid, const void *buf, size_t len,
			       uint64_t data, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = {(void *)buf, len};

	return tp_send(to_tp(fid), &iov, 1, dest, tag, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA, NULL, true);
}

static const struct fi_ops_tagged tp_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tp_t_recv,
	.recvv = tp_t_recvv,
	.recvmsg = tp_t_recvmsg,
	.send = tp_t_send,
	.sendv = tp_t_sendv,
	.sendmsg = tp_t_sendmsg,
	.inject = tp_t_inject,
	.senddata = tp_t_senddata,
	.injectdata = tp_t_injectdata,
};

/* Endpoint ------------------------------------------------------------- */

static int tp_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct tp_ep *ep = container_of(fid, struct tp_ep, util.ep_fid.fid);

	return ofi_getname_copy(addr, addrlen, ep->name, strlen(ep->name) + 1);
}

OFI_GETNAME_CM_OPS(tp_cm_ops, tp_getname);

static void tp_free_list(struct dlist_entry *list)
{
	struct dlist_entry *item;

	while ((item = dlist_pop_front(list)))
		free(item); /* entry is the first member of both kinds */
}

static int tp_ep_close(struct fid *fid)
{
	struct tp_ep *ep = container_of(fid, struct tp_ep, util.ep_fid.fid);
	int i, ret;

	pthread_mutex_lock(&tp_lock);
	dlist_remove(&ep->entry);
	pthread_mutex_unlock(&tp_lock);
	ret = ofi_ep_close(&ep->util);
	if (ret)
		return ret;
	for (i = 0; i < 2; i++) {
		tp_free_list(&ep->posted[i]);
		tp_free_list(&ep->unexp[i]);
	}
	ofi_mutex_destroy(&ep->lock);
	free(ep);
	return 0;
}

OFI_EP_FI_OPS(tp_ep_fi_ops, tp_ep_close);

static int tp_endpoint(struct fid_domain *domain_fid, struct fi_info *info,
		       struct fid_ep **ep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct tp_ep *ep;
	int i, ret;

	if (!info || !ep_fid)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	if (info->caps & ~TP_CAPS)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ret = ofi_ep_init(domain, info, &ep->util, NULL, context);
	if (ret) {
		free(ep);
		return ret;
	}
	ofi_mutex_init(&ep->lock);
	for (i = 0; i < 2; i++) {
		dlist_init(&ep->posted[i]);
		dlist_init(&ep->unexp[i]);
	}
	ep->util.ep_fid.fid.ops = (struct fi_ops *)&tp_ep_fi_ops;
	ep->util.ep_fid.cm = (struct fi_ops_cm *)&tp_cm_ops;
	ep->util.ep_fid.msg = (struct fi_ops_msg *)&tp_msg_ops;
	ep->util.ep_fid.tagged = (struct fi_ops_tagged *)&tp_tagged_ops;

	pthread_mutex_lock(&tp_lock);
	ep->id = tp_next_id++;
	snprintf(ep->name, sizeof(ep->name), TP_PREFIX "%u", ep->id);
	dlist_insert_tail(&ep->entry, &tp_eps);
	pthread_mutex_unlock(&tp_lock);
	*ep_fid = &ep->util.ep_fid;
	return 0;
}

/* Domain, fabric, getinfo -------------------------------------------- */

static const struct fi_ops_domain tp_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = tp_av_open,
	.cq_open = ofi_cq_open,
	.endpoint = tp_endpoint,
	.scalable_ep = fi_no_scalable_ep,
	.cntr_open = ofi_cntr_open,
	.poll_open = ofi_poll_open,
	.stx_ctx = fi_no_stx_context,
	.srx_ctx = fi_no_srx_context,
	.query_atomic = fi_no_query_atomic,
	.query_collective = fi_no_query_collective,
	.endpoint2 = fi_no_endpoint2,
};

/*
 * The test provider moves host memory inside one process and does not route
 * its copies through src/hmem (a loadable provider cannot reach it), so its
 * domains take no copy overrides: fi_set_op answers -FI_ENOSYS, as
 * fi_set_op(3) allows.
 */
static struct fi_ops tp_domain_fi_ops;

static int tp_domain(struct fid_fabric *fabric_fid, struct fi_info *info,
		     struct fid_domain **domain_fid, void *context)
{
	struct util_domain *domain;
	int ret;

	if (!info || !domain_fid)
		return -FI_EINVAL;
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		return -FI_ENOMEM;
	ret = ofi_domain_init(
		container_of(fabric_fid, struct util_fabric, fabric_fid), info,
		domain, context);
	if (ret) {
		free(domain);
		return ret;
	}
	tp_domain_fi_ops = ofi_domain_fi_ops;
	tp_domain_fi_ops.ops_set = fi_no_ops_set;
#if OFI_HAVE_EXT_SLOTS
	tp_domain_fi_ops.op_set = fi_no_op_set;
#endif
	domain->domain_fid.fid.ops = &tp_domain_fi_ops;
	domain->domain_fid.ops = (struct fi_ops_domain *)&tp_domain_ops;
	*domain_fid = &domain->domain_fid;
	return 0;
}

static const struct fi_ops_fabric tp_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = tp_domain,
	.passive_ep = fi_no_passive_ep,
	.eq_open = ofi_eq_open,
	.wait_open = ofi_wait_open,
	.trywait = ofi_trywait,
	.domain2 = fi_no_domain2,
};

static int tp_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context)
{
	return ofi_fabric_create(&tp_prov, attr, fabric, context,
				 &tp_fabric_ops);
}

static int tp_set_addr(void **dst, size_t *len, const char *node,
		       const char *service)
{
	char buf[TP_ADDRLEN];
	uint32_t id;

	if (node && !strncmp(node, TP_PREFIX, strlen(TP_PREFIX)))
		snprintf(buf, sizeof(buf), "%s", node);
	else if (service)
		snprintf(buf, sizeof(buf), TP_PREFIX "%s", service);
	else
		return 0;
	if (tp_parse(buf, &id))
		return -FI_ENODATA;
	*dst = strdup(buf);
	if (!*dst)
		return -FI_ENOMEM;
	*len = strlen(buf) + 1;
	return 0;
}

/*
 * Endpoints always number themselves, so the default source (fi_getinfo
 * without node or FI_SOURCE) is the name the next endpoint will take.
 */
static int tp_default_src(const struct fi_info *fi, void **addr, size_t *len,
			  void *arg)
{
	char buf[TP_ADDRLEN];

	(void)fi;
	(void)arg;
	pthread_mutex_lock(&tp_lock);
	snprintf(buf, sizeof(buf), TP_PREFIX "%u", tp_next_id);
	pthread_mutex_unlock(&tp_lock);
	*addr = strdup(buf);
	if (!*addr)
		return -FI_ENOMEM;
	*len = strlen(buf) + 1;
	return 0;
}

static int tp_getinfo(uint32_t version, const char *node, const char *service,
		      uint64_t flags, const struct fi_info *hints,
		      struct fi_info **info)
{
	struct fi_info *fi;
	int ret;

	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	fi->caps = TP_CAPS;
	fi->addr_format = FI_ADDR_STR;
	fi->tx_attr->caps = FI_MSG | FI_TAGGED | FI_SEND;
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->comp_order = FI_ORDER_STRICT;
	fi->tx_attr->inject_size = TP_INJECT;
	fi->tx_attr->size = 1024;
	fi->tx_attr->iov_limit = TP_IOV_LIMIT;
	fi->rx_attr->caps =
		FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV;
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->comp_order = FI_ORDER_STRICT;
	fi->rx_attr->size = 1024;
	fi->rx_attr->iov_limit = TP_IOV_LIMIT;
	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->max_msg_size = TP_MAX_MSG;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	fi->domain_attr->name = strdup(TP_NAME);
	fi->domain_attr->threading = FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = 0;
	fi->domain_attr->mr_key_size = sizeof(uint64_t);
	fi->domain_attr->cq_data_size = sizeof(uint64_t);
	fi->domain_attr->cq_cnt = 64;
	fi->domain_attr->ep_cnt = 64;
	fi->domain_attr->tx_ctx_cnt = 64;
	fi->domain_attr->rx_ctx_cnt = 64;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = TP_IOV_LIMIT;
	fi->domain_attr->mr_cnt = 1024;
	fi->fabric_attr->name = strdup(TP_NAME);
	fi->fabric_attr->prov_version = tp_prov.version;
	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		ret = -FI_ENOMEM;
		goto err;
	}
	ret = (flags & FI_SOURCE)
		      ? tp_set_addr(&fi->src_addr, &fi->src_addrlen, node,
				    service)
		      : tp_set_addr(&fi->dest_addr, &fi->dest_addrlen, node,
				    service);
	if (!ret)
		ret = ofi_info_default_src(fi, tp_default_src, NULL);
	if (ret)
		goto err;
	*info = fi;
	return 0;
err:
	fi_freeinfo(fi);
	return ret;
}

static void tp_cleanup(void)
{
}

static struct fi_provider tp_prov = {
	.version = FI_VERSION(1, 0),
	.fi_version = FI_VERSION(1, 17),
	.name = TP_NAME,
	.getinfo = tp_getinfo,
	.fabric = tp_fabric,
	.cleanup = tp_cleanup,
};

FI_EXT_INI
{
	return &tp_prov;
}
