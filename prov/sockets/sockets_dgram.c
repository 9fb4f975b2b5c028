/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_dgram.c - the sockets provider's FI_EP_DGRAM endpoint: one UDP
 * socket (IPv4 or IPv6, the domain's format) per endpoint, one message
 * per datagram (sockets_dgram_wire.h), so message boundaries hold and a
 * message may be lost or duplicated as the network does. Everything else
 * is prov/util's: the matcher (tagged, FI_MULTI_RECV, FI_PEEK/FI_CLAIM,
 * directed receive, truncation), the CQ and counter writers, the AV, the
 * progress thread. No connection, no tcp engine.
 *
 * Sending is one sendmsg(2) of header and the user's iovs: the kernel has
 * a copy when it returns, so every send completes at once (inject and
 * transmit complete; an unreliable endpoint promises no delivery), and
 * takes no endpoint lock. A full socket buffer is -FI_EAGAIN.
 *
 * Receiving happens in progress (the application's CQ or counter reads
 * with FI_PROGRESS_MANUAL, the progress thread with FI_PROGRESS_AUTO),
 * under the endpoint lock: each datagram is read whole into a bounce
 * buffer, decoded, then copied into the receive it matches, or kept as an
 * unexpected message (the bytes FI_SOCKETS_MAX_UNEXP allows, each entry
 * counted with its own overhead; past them datagrams are dropped, as a
 * full socket buffer would). A datagram the decoder refuses is counted
 * and dropped.
 *
 * Scalable endpoints (fi_scalable_ep(3)): the SEP owns the one socket,
 * its lock, bounce buffer and progress (its "engine"); each transmit and
 * receive context is an endpoint of its own (CQ and counter bindings,
 * match queue) that names the SEP as engine, so contexts driven from
 * several threads are serialised on the SEP's lock as an endpoint's
 * calls are. A send to fi_rx_addr(a, i, rx_ctx_bits) carries i in the
 * header's rx_ctx (sockets_dgram_wire.h); the SEP hands the datagram to
 * receive context i, and drops one for a context that is not open (as
 * the network may). A plain endpoint is its own engine and takes only
 * index 0.
 *
 * FI_TRIGGER and FI_FENCE are util_trigger.c's wrapped calls: a counter
 * change made here starts what it released at our next unlock. A fence
 * waits for nothing (every earlier send completed at its sendmsg); a
 * triggered fenced send starts in the trigger queue's order.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ofi_match.h"
#include "ofi_plain.h"
#include "ofi_progress.h"
#include "ofi_trigger.h"
#include "sockets.h"
#include "sockets_dgram_wire.h"

#define SOCK_DG_IOV_LIMIT OFI_RX_IOV_MAX
#define SOCK_DG_SIZE	  1024 /* tx and rx queue depth advertised */
#define SOCK_DG_BATCH	  64   /* datagrams one progress call reads */
/* Socket buffers asked for (the kernel caps them at its rmem/wmem_max):
 * bursts of datagrams wait there for progress instead of being lost. */
#define SOCK_DG_SOCKBUF (4 << 20)

/* The domain's max_ep_tx_ctx / max_ep_rx_ctx are the engine's. */
_Static_assert(SOCK_DG_CTX_MAX == OFI_SEP_CTX_MAX, "context count");

struct sock_dg_ep {
	struct util_ep util;
	/* Who owns the socket: the endpoint itself, a context's SEP. The
	 * fields below up to q are the engine's only. */
	struct sock_dg_ep *engine;
	struct ofi_sep_slots *sep; /* a SEP's contexts, under its lock */
	ofi_mutex_t lock; /* receive side: matchers, bounce, counters */
	int fd;
	struct sockaddr_storage name;
	socklen_t namelen;
	uint8_t *bounce;  /* one datagram, SOCK_DG_UDP_MAX bytes */
	uint64_t garbage; /* datagrams the decoder refused */
	uint64_t no_ctx;  /* valid ones for no open receive context */
	struct ofi_progress *auto_prog;
	ofi_atomic64_t app_driven;
	/* Each receiving endpoint's (an endpoint, a receive context). */
	struct ofi_match_queue q;
	/* Where its messages match: q, or a shared receive context's queue
	 * (under that context's lock, taken inside the engine's). */
	struct ofi_match_queue *rxq;
	size_t unexp_bytes, unexp_max;
	uint64_t overflow; /* valid ones dropped: unexpected bound full */
};

struct sock_dg_unexp {
	struct ofi_unexp_msg m;
	struct sock_dg_ep *ep;
	fi_addr_t src; /* what FI_SOURCE reports */
	uint8_t buf[];
};

static struct sock_dg_ep *sock_dg_ep(struct fid_ep *fid)
{
	return container_of(fid, struct sock_dg_ep, util.ep_fid);
}

static struct sock_dg_ep *sock_dg_of(struct fid *fid)
{
	return container_of(fid, struct sock_dg_ep, util.ep_fid.fid);
}

/* The engine's lock: what a counter change released starts after it
 * (ofi_trigger.h), when no lock of ours is held. */
static void sock_dg_unlock(struct sock_dg_ep *eng)
{
	ofi_mutex_unlock(&eng->lock);
	ofi_trig_run();
}

/* ------------------------------------------------------------------ */
/* Receive side.                                                        */

static uint64_t sock_dg_rx_flags(bool tagged, uint64_t wire_flags)
{
	return FI_RECV | (tagged ? FI_TAGGED : FI_MSG) |
	       (wire_flags & SOCK_DG_F_CQ_DATA ? FI_REMOTE_CQ_DATA : 0);
}

/* Copies @len payload bytes into @m's slice @sl and completes it. */
static void sock_dg_land(struct sock_dg_ep *ep, struct ofi_rx_entry *m,
			 const struct ofi_rx_slice *sl, const void *payload,
			 const struct ofi_unexp_msg *hdr, fi_addr_t src)
{
	struct ofi_rx_buf *rx = ofi_rx_buf_of(m);
	struct ofi_rx_done d = {
		.flags = FI_RECV | (hdr->cq_flags & ~(uint64_t)FI_RECV),
		.buf = ofi_rx_buf_at(rx, sl->off),
		.data = hdr->data,
		.tag = hdr->tag,
		.src_addr = src,
		.ep = &ep->util,
	};

	(void)ofi_copy_to_iov(rx->iov, rx->iov_count, sl->off, payload,
			      sl->len);
	ofi_match_done(ep->rxq, m, sl, &d);
}

/* What an unexpected message costs against the bound: its entry as well
 * as its payload, so that empty datagrams are not free to keep. */
static size_t sock_dg_unexp_cost(size_t len)
{
	return sizeof(struct sock_dg_unexp) + len;
}

static void sock_dg_unexp_free(struct sock_dg_ep *ep, struct sock_dg_unexp *u)
{
	ep->unexp_bytes -= sock_dg_unexp_cost(u->m.size);
	free(u);
}

static void sock_dg_deliver(struct ofi_match_queue *q, struct ofi_rx_entry *m,
			    struct ofi_unexp_msg *um,
			    const struct ofi_rx_slice *sl)
{
	struct sock_dg_unexp *u = container_of(um, struct sock_dg_unexp, m);

	OFI_UNUSED(q);
	sock_dg_land(u->ep, m, sl, u->buf, &u->m, u->src);
	sock_dg_unexp_free(u->ep, u);
}

static void sock_dg_discard(struct ofi_match_queue *q, struct ofi_unexp_msg *um,
			    int status)
{
	struct sock_dg_unexp *u = container_of(um, struct sock_dg_unexp, m);

	OFI_UNUSED(q);
	OFI_UNUSED(status); /* nobody to tell: datagrams are not answered */
	sock_dg_unexp_free(u->ep, u);
}

static fi_addr_t sock_dg_unexp_src(struct ofi_match_queue *q,
				   struct ofi_unexp_msg *um)
{
	OFI_UNUSED(q);
	return container_of(um, struct sock_dg_unexp, m)->src;
}

static const struct ofi_match_ops sock_dg_match_ops = {
	.deliver = sock_dg_deliver,
	.discard = sock_dg_discard,
	.src_addr = sock_dg_unexp_src,
};

/* Keeps a message no receive waits for, within the endpoint's bound. */
static void sock_dg_unexp(struct sock_dg_ep *ep, const struct ofi_unexp_msg *h,
			  fi_addr_t src, const void *payload)
{
	size_t cost = sock_dg_unexp_cost(h->size);
	struct sock_dg_unexp *u;

	if (ep->unexp_bytes + cost > ep->unexp_max || !(u = malloc(cost))) {
		if (!ep->overflow++)
			FI_INFO(ep->util.domain->prov, FI_LOG_EP_DATA,
				"unexpected datagrams past %zu bytes dropped\n",
				ep->unexp_max);
		return;
	}
	u->m = *h;
	u->ep = ep;
	u->src = src;
	memcpy(u->buf, payload, h->size);
	ep->unexp_bytes += cost;
	ofi_match_unexp_add(ep->rxq, &u->m);
}

/* The receiving endpoint of @eng's receive context @idx, NULL if none
 * is open (a plain endpoint is its own context 0). */
static struct sock_dg_ep *sock_dg_target(struct sock_dg_ep *eng, uint16_t idx)
{
	struct util_ep *c;

	if (!eng->sep)
		return idx ? NULL : eng;
	c = eng->sep->rx[idx]; /* the decoder bounds idx */
	return c && ofi_ep_enabled(c) ? container_of(c, struct sock_dg_ep, util)
				      : NULL;
}

/* One datagram of @n bytes from @sa, decoded and matched. */
static void sock_dg_input(struct sock_dg_ep *eng, size_t n,
			  const struct sockaddr_storage *sa)
{
	struct ofi_unexp_msg h = {.addr = FI_ADDR_NOTAVAIL};
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	struct sock_dg_view v;
	struct sock_dg_ep *ep;
	struct ofi_rx_entry *m;
	struct ofi_rx_slice sl;
	const uint8_t *payload = eng->bounce + SOCK_DG_HDR_SIZE;

	if (sock_dg_decode(eng->bounce, n, &v)) {
		if (!eng->garbage++)
			FI_INFO(eng->util.domain->prov, FI_LOG_EP_DATA,
				"dropping datagrams that are not ours\n");
		return;
	}
	ep = sock_dg_target(eng, v.rx_ctx);
	if (!ep) {
		eng->no_ctx++;
		return;
	}
	if (ep->util.srx)
		ofi_mutex_lock(&ep->util.srx->lock);
	if (ep->util.av && (ep->rxq->directed || (ep->util.caps & FI_SOURCE))) {
		h.addr = ofi_av_reverse_lookup(ep->util.av, sa);
		if (ep->util.caps & FI_SOURCE)
			src = ofi_av_src_addr(ep->util.av, sa);
	}
	h.tagged = v.op == SOCK_DG_OP_TAGGED;
	h.tag = v.tag;
	h.data = v.data;
	h.size = v.len;
	h.cq_flags = sock_dg_rx_flags(h.tagged, v.flags);
	m = ofi_match_posted(ep->rxq, h.tagged, h.addr, h.tag);
	if (!m) {
		sock_dg_unexp(ep, &h, src, payload);
	} else {
		ofi_match_take(ep->rxq, m, v.len, &sl);
		sock_dg_land(ep, m, &sl, payload, &h, src);
	}
	if (ep->util.srx)
		ofi_mutex_unlock(&ep->util.srx->lock);
}

static void sock_dg_progress_locked(struct sock_dg_ep *ep)
{
	struct sockaddr_storage sa;
	socklen_t len;
	ssize_t n;
	int i;

	for (i = 0; i < SOCK_DG_BATCH; i++) {
		len = sizeof(sa);
		n = recvfrom(ep->fd, ep->bounce, SOCK_DG_UDP_MAX,
			     MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&sa,
			     &len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return; /* EAGAIN, or an ICMP error for a send */
		}
		if ((size_t)n > SOCK_DG_UDP_MAX) { /* cut: not a message */
			ep->garbage++;
			continue;
		}
		/* The AV compares whole structs: padding zero, as inserted. */
		if (sa.ss_family == AF_INET)
			memset(((struct sockaddr_in *)&sa)->sin_zero, 0, 8);
		sock_dg_input(ep, (size_t)n, &sa);
	}
}

static void sock_dg_progress_thread(void *arg)
{
	struct sock_dg_ep *eng = arg;

	ofi_mutex_lock(&eng->lock);
	sock_dg_progress_locked(eng);
	sock_dg_unlock(eng);
}

/* CQ and counter reads: the application drives progress. */
static void sock_dg_progress(struct util_ep *util)
{
	struct sock_dg_ep *eng =
		container_of(util, struct sock_dg_ep, util)->engine;

	if (eng->util.auto_progress)
		ofi_progress_mark(&eng->app_driven);
	sock_dg_progress_thread(eng);
}

static int sock_dg_wait_fd(struct util_ep *util)
{
	return container_of(util, struct sock_dg_ep, util)->engine->fd;
}

static ssize_t sock_dg_recv(struct fid_ep *ep_fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t addr,
			    uint64_t tag, uint64_t ignore, void *context,
			    uint64_t flags, bool tagged)
{
	struct sock_dg_ep *ep = sock_dg_ep(ep_fid), *eng = ep->engine;
	const struct ofi_rx_mem mem = {.iface = FI_HMEM_SYSTEM};
	ssize_t ret;

	if (OFI_UNLIKELY(count > SOCK_DG_IOV_LIMIT))
		return -FI_EINVAL;
	if (ep->util.srx && ep->rxq != &ep->q)
		return ofi_srx_post_recv(ep->util.srx, iov, desc, count, addr,
					 tag, ignore, context, flags, tagged);
	ofi_mutex_lock(&eng->lock);
	ret = ofi_match_recv(&ep->q, iov, desc, count, &mem, addr, tag, ignore,
			     context, flags, tagged);
	if (ret == -FI_EAGAIN)
		sock_dg_progress_locked(eng);
	sock_dg_unlock(eng);
	return ret;
}

static ssize_t sock_dg_cancel(fid_t fid, void *context)
{
	struct sock_dg_ep *ep = sock_dg_of(fid);
	ssize_t ret;

	ofi_mutex_lock(&ep->engine->lock);
	ret = ofi_match_cancel(&ep->q, context);
	ofi_mutex_unlock(&ep->engine->lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Send side: no lock; one sendmsg(2) is one datagram.                  */

/* What a datagram endpoint cannot promise: delivery, persistence. */
#define SOCK_DG_BAD_TX_FLAGS (FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE)

/* @dest's address into @sa, and its receive context (fi_rx_addr's index,
 * when the AV has rx_ctx_bits) into @v: 0 or -FI_EINVAL. */
static int sock_dg_dest(struct util_av *av, fi_addr_t dest,
			struct sockaddr_storage *sa, struct sock_dg_view *v)
{
	int bits;

	if (OFI_UNLIKELY(!av))
		return -FI_EINVAL;
	bits = av->rx_ctx_bits;
	if (bits && dest != FI_ADDR_NOTAVAIL) {
		if ((dest >> (64 - bits)) >= SOCK_DG_CTX_MAX)
			return -FI_EINVAL;
		v->rx_ctx = (uint16_t)(dest >> (64 - bits));
		dest &= UINT64_MAX >> bits;
	}
	return ofi_av_get_addr(av, dest, sa) ? -FI_EINVAL : 0;
}

static ssize_t sock_dg_send(struct fid_ep *ep_fid, const struct iovec *iov,
			    size_t count, fi_addr_t dest, uint64_t tag,
			    uint64_t data, void *context, uint64_t flags,
			    bool tagged)
{
	/* an fi_inject* call's completion is none */
	bool comp = !(flags & OFI_INJECT_NOCOMP);
	uint64_t op_flags = flags & ~OFI_INJECT_NOCOMP;
	struct sock_dg_ep *ep = sock_dg_ep(ep_fid), *eng = ep->engine;
	struct sock_dg_view v = {
		.op = tagged ? SOCK_DG_OP_TAGGED : SOCK_DG_OP_MSG,
		.tag = tagged ? tag : 0,
	};
	uint8_t hdr[SOCK_DG_HDR_SIZE];
	struct iovec wiov[SOCK_DG_IOV_LIMIT + 1];
	struct sockaddr_storage sa;
	struct msghdr msg = {
		.msg_name = &sa,
		.msg_iov = wiov,
		.msg_iovlen = count + 1,
	};
	size_t size;
	int err = 0;

	if (OFI_UNLIKELY(count > SOCK_DG_IOV_LIMIT || (count && !iov) ||
			 (op_flags & SOCK_DG_BAD_TX_FLAGS)))
		return -FI_EINVAL;
	size = ofi_total_iov_len(iov, count);
	if (OFI_UNLIKELY(size > SOCK_DG_MAX_MSG))
		return -FI_EMSGSIZE;
	if (OFI_UNLIKELY(!ofi_ep_enabled(&ep->util)))
		return -FI_EOPBADSTATE;
	if (OFI_UNLIKELY(sock_dg_dest(ep->util.av, dest, &sa, &v)))
		return -FI_EINVAL;
	msg.msg_namelen = eng->namelen;
	if (op_flags & FI_REMOTE_CQ_DATA) {
		v.flags = SOCK_DG_F_CQ_DATA;
		v.data = data;
	}
	v.len = (uint32_t)size;
	sock_dg_encode(hdr, &v);
	wiov[0].iov_base = hdr;
	wiov[0].iov_len = sizeof(hdr);
	if (count)
		memcpy(&wiov[1], iov, count * sizeof(*iov));
	while (sendmsg(eng->fd, &msg, MSG_DONTWAIT) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == ENOBUFS) {
			/* the peer may be waiting for our progress */
			sock_dg_progress_thread(eng);
			return -FI_EAGAIN;
		}
		err = errno; /* not sent (unreachable, refused): it fails */
		break;
	}
	ofi_ep_tx_complete(&ep->util, context,
			   FI_SEND | (tagged ? FI_TAGGED : FI_MSG), op_flags,
			   comp, err);
	ofi_trig_run(); /* what our counter released */
	return 0;
}

/* ------------------------------------------------------------------ */
/* fi_ops_msg / fi_ops_tagged: the funnels, and util's plain calls.     */

static ssize_t sock_dg_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
				   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return sock_dg_recv(ep, msg->msg_iov, msg->desc, msg->iov_count,
			    msg->addr, 0, 0, msg->context, flags, false);
}

static ssize_t sock_dg_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
				   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return sock_dg_send(ep, msg->msg_iov, msg->iov_count, msg->addr, 0,
			    msg->data, msg->context, flags, false);
}

static const struct fi_ops_msg sock_dg_msg_ops = {
	OFI_PLAIN_MSG_OPS(sock_dg_msg_recvmsg, sock_dg_msg_sendmsg),
};

static ssize_t sock_dg_tagged_recvmsg(struct fid_ep *ep,
				      const struct fi_msg_tagged *msg,
				      uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return sock_dg_recv(ep, msg->msg_iov, msg->desc, msg->iov_count,
			    msg->addr, msg->tag, msg->ignore, msg->context,
			    flags, true);
}

static ssize_t sock_dg_tagged_sendmsg(struct fid_ep *ep,
				      const struct fi_msg_tagged *msg,
				      uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return sock_dg_send(ep, msg->msg_iov, msg->iov_count, msg->addr,
			    msg->tag, msg->data, msg->context, flags, true);
}

static const struct fi_ops_tagged sock_dg_tagged_ops = {
	OFI_PLAIN_TAGGED_OPS(sock_dg_tagged_recvmsg, sock_dg_tagged_sendmsg),
};

/* ------------------------------------------------------------------ */
/* The endpoint object.                                                 */

/* An engine's (an endpoint's, a SEP's): its progress thread. */
static int sock_dg_enable(struct util_ep *util)
{
	struct sock_dg_ep *ep = container_of(util, struct sock_dg_ep, util);
	struct ofi_progress_attr attr = {
		.prov = util->domain->prov,
		.name = "sockets-dgram",
		.fd = ep->fd,
		.period_ms = -1, /* nothing here is time-based */
		.fn = sock_dg_progress_thread,
		.arg = ep,
		.driven = &ep->app_driven,
	};
	int ret;

	/* Receives match in the shared receive context's queue from now on
	 * (one of ours: sockets_dgram_srx_context). */
	if (util->srx) {
		if (util->srx->q.ops != &sock_dg_match_ops)
			return -FI_EINVAL;
		ep->rxq = &util->srx->q;
	}
	if (!util->auto_progress || ep->auto_prog)
		return 0;
	ret = ofi_progress_start(&attr, &ep->auto_prog);
	if (!ret)
		ofi_ep_set_progress(util, ep->auto_prog);
	return ret;
}

static bool sock_dg_unexp_of(struct ofi_unexp_msg *um, void *ep)
{
	return container_of(um, struct sock_dg_unexp, m)->ep == ep;
}

/* Bound endpoints match and deliver under the context's lock, taken in
 * their engine's progress; posting on the context needs nothing more. */
static const struct ofi_srx_ops sock_dg_srx_ops;

int sockets_dgram_srx_context(struct fid_domain *domain,
			      struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			      void *context)
{
	struct util_srx *srx;
	int ret;

	if (!domain || !rx_ep)
		return -FI_EINVAL;
	if (attr && attr->iov_limit > SOCK_DG_IOV_LIMIT)
		return -FI_EINVAL;
	ret = ofi_srx_open(container_of(domain, struct util_domain, domain_fid),
			   attr, &sock_dg_match_ops, &sock_dg_srx_ops, &srx,
			   context);
	if (ret)
		return ret;
	*rx_ep = &srx->ep_fid;
	return 0;
}

static void sock_dg_free(struct sock_dg_ep *ep)
{
	struct util_srx *srx = ep->util.srx;

	/* what we hold in a shared context's queue goes with us */
	if (srx && ep->rxq == &srx->q) {
		ofi_mutex_lock(&srx->lock);
		ofi_match_flush_if(&srx->q, sock_dg_unexp_of, ep,
				   -FI_ECANCELED);
		ofi_mutex_unlock(&srx->lock);
	}
	if (ep->q.pool)
		ofi_match_flush(&ep->q, -FI_ECANCELED);
	ofi_match_pool_free(&ep->q);
	if (ep->garbage || ep->overflow || ep->no_ctx)
		FI_INFO(ep->util.domain->prov, FI_LOG_EP_CTRL,
			"close: %llu foreign datagrams, %llu for no open "
			"context and %llu past the unexpected bound were "
			"dropped\n",
			(unsigned long long)ep->garbage,
			(unsigned long long)ep->no_ctx,
			(unsigned long long)ep->overflow);
	if (ep->fd >= 0)
		close(ep->fd);
	free(ep->bounce);
	ofi_mutex_destroy(&ep->lock);
	ofi_ep_close(&ep->util);
	free(ep);
}

static int sock_dg_close(struct fid *fid)
{
	struct sock_dg_ep *ep = sock_dg_of(fid);

	/* The thread first (it waits for a call in flight), then off the
	 * CQs, counters and AV: nothing calls into us while we tear down. */
	ofi_ep_set_progress(&ep->util, NULL);
	ofi_progress_stop(ep->auto_prog);
	ep->auto_prog = NULL;
	ofi_ep_detach(&ep->util);
	sock_dg_free(ep);
	return 0;
}

OFI_EP_FI_OPS(sock_dg_fi_ops, sock_dg_close);

static ssize_t sock_dg_rx_size_left(struct fid_ep *ep_fid)
{
	struct sock_dg_ep *ep = sock_dg_ep(ep_fid);
	struct dlist_entry *e;
	ssize_t n = 0;

	if (!ofi_ep_enabled(&ep->util))
		return -FI_EOPBADSTATE;
	ofi_mutex_lock(&ep->engine->lock);
	dlist_foreach(&ep->q.rx_free, e)
		n++;
	ofi_mutex_unlock(&ep->engine->lock);
	return n;
}

/* Sends hold nothing once posted. */
static ssize_t sock_dg_tx_size_left(struct fid_ep *ep_fid)
{
	struct sock_dg_ep *ep = sock_dg_ep(ep_fid);

	if (!ofi_ep_enabled(&ep->util))
		return -FI_EOPBADSTATE;
	return ep->util.info->tx_attr ? (ssize_t)ep->util.info->tx_attr->size
				      : SOCK_DG_SIZE;
}

static const struct fi_ops_ep sock_dg_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = sock_dg_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = sock_dg_rx_size_left,
	.tx_size_left = sock_dg_tx_size_left,
};

static int sock_dg_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct sock_dg_ep *ep = sock_dg_of(fid)->engine;

	return ofi_getname_copy(addr, addrlen, &ep->name, ep->namelen);
}

OFI_GETNAME_CM_OPS(sock_dg_cm_ops, sock_dg_getname);

/* The socket, bound to the info's source address or loopback, port 0. */
static int sock_dg_bind(struct sock_dg_ep *ep, const struct fi_info *info)
{
	bool v6 = ep->util.domain->addr_format == FI_SOCKADDR_IN6;
	int family = v6 ? AF_INET6 : AF_INET, size = SOCK_DG_SOCKBUF;
	struct sockaddr_storage *sa = &ep->name;
	socklen_t len;

	ep->namelen = (socklen_t)ofi_sockaddr_len(ep->util.domain->addr_format);
	if (info->src_addr) {
		if (info->src_addrlen < ep->namelen ||
		    ((const struct sockaddr *)info->src_addr)->sa_family !=
			    family)
			return -FI_EINVAL;
		memcpy(sa, info->src_addr, ep->namelen);
	} else if (v6) {
		((struct sockaddr_in6 *)sa)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)sa)->sin6_addr = in6addr_loopback;
	} else {
		((struct sockaddr_in *)sa)->sin_family = AF_INET;
		((struct sockaddr_in *)sa)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
	}
	ep->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ep->fd < 0)
		return -errno;
	(void)setsockopt(ep->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	(void)setsockopt(ep->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (bind(ep->fd, (struct sockaddr *)sa, ep->namelen))
		return -errno;
	len = sizeof(*sa);
	if (getsockname(ep->fd, (struct sockaddr *)sa, &len))
		return -errno;
	if (!v6) /* the AV compares whole structs */
		memset(((struct sockaddr_in *)sa)->sin_zero, 0, 8);
	return 0;
}

static int sock_dg_sizes(const struct fi_info *info, size_t *rx_size)
{
	*rx_size = info->rx_attr && info->rx_attr->size ? info->rx_attr->size
							: SOCK_DG_SIZE;
	if (*rx_size > SOCK_DG_SIZE * 64)
		return -FI_EINVAL;
	if (info->tx_attr && info->tx_attr->size > SOCK_DG_SIZE * 64)
		return -FI_EINVAL;
	return 0;
}

/*
 * What endpoints, SEPs and contexts share: the util endpoint, a match
 * queue of @rx_size receives (none for 0), its own engine. Frees @ep on
 * failure.
 */
static int sock_dg_init(struct sock_dg_ep *ep, struct util_domain *dom,
			const struct fi_info *info, size_t rx_size,
			void *context)
{
	int ret;

	ep->fd = -1;
	ep->engine = ep;
	ret = ofi_ep_init(dom, info, &ep->util, sock_dg_progress, context);
	if (ret) {
		free(ep);
		return ret;
	}
	ofi_mutex_init(&ep->lock);
	/* every datagram is copied by sendmsg: FI_INJECT holds at any size */
	ep->util.inject_size = SIZE_MAX;
	ep->util.iov_limit = SOCK_DG_IOV_LIMIT;
	ofi_match_init(&ep->q, &ep->util, &sock_dg_match_ops);
	ep->rxq = &ep->q;
	ep->util.wait_fd = sock_dg_wait_fd;
	ep->util.min_multi_recv = 64;
	ep->util.enable = sock_dg_enable;
	ep->util.auto_progress =
		tcp_attr_auto(info->domain_attr, true, false) ||
		tcp_attr_auto(dom->attr, true, false);
	ep->unexp_max = TCP_UNEXP_MAX;
	fi_param_get_size_t((struct fi_provider *)dom->prov, "max_unexp",
			    &ep->unexp_max);
	ret = rx_size ? ofi_match_pool(&ep->q, rx_size) : 0;
	if (ret)
		sock_dg_free(ep);
	return ret;
}

/* An endpoint or a SEP: the socket's owner. */
static int sock_dg_engine_open(struct fid_domain *domain, struct fi_info *info,
			       bool sep, struct sock_dg_ep **out, void *context)
{
	struct sock_dg_ep *ep;
	size_t rx_size;
	int ret;

	if (!domain || !info || !out || info->handle)
		return -FI_EINVAL;
	ret = sock_dg_sizes(info, &rx_size);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ret = sock_dg_init(ep,
			   container_of(domain, struct util_domain, domain_fid),
			   info, sep ? 0 : rx_size, context);
	if (ret)
		return ret;
	ep->bounce = malloc(SOCK_DG_UDP_MAX);
	ret = ep->bounce ? sock_dg_bind(ep, info) : -FI_ENOMEM;
	if (ret) {
		sock_dg_free(ep);
		return ret;
	}
	ep->util.ep_fid.fid.ops = (struct fi_ops *)&sock_dg_fi_ops;
	ep->util.ep_fid.cm = (struct fi_ops_cm *)&sock_dg_cm_ops;
	*out = ep;
	return 0;
}

int sockets_dgram_ep_open(struct fid_domain *domain, struct fi_info *info,
			  struct fid_ep **ep_fid, void *context)
{
	struct sock_dg_ep *ep;
	int ret;

	if (!ep_fid)
		return -FI_EINVAL;
	ret = sock_dg_engine_open(domain, info, false, &ep, context);
	if (ret)
		return ret;
	ep->util.ep_fid.ops = (struct fi_ops_ep *)&sock_dg_ep_ops;
	ep->util.ep_fid.msg = (struct fi_ops_msg *)&sock_dg_msg_ops;
	ep->util.ep_fid.tagged = (struct fi_ops_tagged *)&sock_dg_tagged_ops;
	/* FI_TRIGGER and FI_FENCE (util_trigger.c) */
	ret = ofi_trig_ep_wrap(&ep->util);
	if (ret) {
		sock_dg_close(&ep->util.ep_fid.fid);
		return ret;
	}
	*ep_fid = &ep->util.ep_fid;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Scalable endpoints and their contexts.                               */

static int sock_dg_sep_enable(struct sock_dg_ep *eng)
{
	return ofi_sep_enable(&eng->util, eng->util.av != NULL);
}

/* A context's enable starts its SEP (the socket's progress). */
static int sock_dg_ctx_enable(struct util_ep *util)
{
	return sock_dg_sep_enable(
		container_of(util, struct sock_dg_ep, util)->engine);
}

static int sock_dg_ctx_close(struct fid *fid)
{
	struct sock_dg_ep *c = sock_dg_of(fid), *eng = c->engine;

	/* off the SEP's tables first: no datagram reaches it after this */
	ofi_mutex_lock(&eng->lock);
	ofi_sep_slot_drop(eng->sep, &c->util);
	ofi_mutex_unlock(&eng->lock);
	ofi_ep_detach(&c->util);
	sock_dg_free(c);
	return 0;
}

OFI_EP_FI_OPS(sock_dg_ctx_fi_ops, sock_dg_ctx_close);

static const struct fi_ops_ep sock_dg_tx_ctx_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = fi_no_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = sock_dg_tx_size_left,
};

static const struct fi_ops_ep sock_dg_rx_ctx_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = sock_dg_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = sock_dg_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

/* Our data calls, one direction each (ofi_ctx_msg_ops). */
static struct fi_ops_msg sock_dg_tx_msg, sock_dg_rx_msg;
static struct fi_ops_tagged sock_dg_tx_tagged, sock_dg_rx_tagged;
static pthread_once_t sock_dg_ctx_once = PTHREAD_ONCE_INIT;

static void sock_dg_ctx_ops_init(void)
{
	ofi_ctx_msg_ops(&sock_dg_msg_ops, true, &sock_dg_tx_msg);
	ofi_ctx_msg_ops(&sock_dg_msg_ops, false, &sock_dg_rx_msg);
	ofi_ctx_tagged_ops(&sock_dg_tagged_ops, true, &sock_dg_tx_tagged);
	ofi_ctx_tagged_ops(&sock_dg_tagged_ops, false, &sock_dg_rx_tagged);
}

/* Under the SEP's lock: @c runs on @eng's socket, with its AV. */
static void sock_dg_ctx_setup(struct sock_dg_ep *c, struct sock_dg_ep *eng,
			      bool tx)
{
	struct fid_ep *fid = &c->util.ep_fid;

	c->engine = eng;
	c->util.enable = sock_dg_ctx_enable;
	c->util.auto_progress = eng->util.auto_progress;
	dlist_init(&c->util.av_entry);
	ofi_ctx_take_av(&c->util, &eng->util);
	fid->fid.fclass = tx ? FI_CLASS_TX_CTX : FI_CLASS_RX_CTX;
	fid->fid.ops = (struct fi_ops *)&sock_dg_ctx_fi_ops;
	fid->ops = (struct fi_ops_ep *)(tx ? &sock_dg_tx_ctx_ops
					   : &sock_dg_rx_ctx_ops);
	fid->msg = tx ? &sock_dg_tx_msg : &sock_dg_rx_msg;
	fid->tagged = tx ? &sock_dg_tx_tagged : &sock_dg_rx_tagged;
}

static int sock_dg_ctx(struct fid_ep *sep_fid, int index, const void *attr,
		       struct fid_ep **ctx_fid, void *context, bool tx)
{
	struct sock_dg_ep *eng = sock_dg_ep(sep_fid), *c;
	struct fi_info *info;
	size_t rx_size;
	int ret;

	if (!ctx_fid || ofi_sep_slot_check(eng->sep, index, tx))
		return -FI_EINVAL;
	pthread_once(&sock_dg_ctx_once, sock_dg_ctx_ops_init);
	info = ofi_ctx_info(eng->util.info, tx, attr);
	if (!info)
		return -FI_EINVAL;
	ret = sock_dg_sizes(info, &rx_size);
	c = ret ? NULL : calloc(1, sizeof(*c));
	if (!c) {
		fi_freeinfo(info);
		return ret ? ret : -FI_ENOMEM;
	}
	ret = sock_dg_init(c, eng->util.domain, info, tx ? 0 : rx_size,
			   context);
	fi_freeinfo(info);
	if (ret)
		return ret;
	ofi_mutex_lock(&eng->lock);
	ret = ofi_sep_slot_take(eng->sep, index, tx, &c->util);
	if (ret) {
		ofi_mutex_unlock(&eng->lock);
		sock_dg_free(c);
		return ret;
	}
	sock_dg_ctx_setup(c, eng, tx);
	ofi_mutex_unlock(&eng->lock);
	/* FI_TRIGGER and FI_FENCE, as on an endpoint */
	ret = ofi_trig_ep_wrap(&c->util);
	if (ret) {
		sock_dg_ctx_close(&c->util.ep_fid.fid);
		return ret;
	}
	*ctx_fid = &c->util.ep_fid;
	return 0;
}

static int sock_dg_tx_ctx(struct fid_ep *sep, int index,
			  struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			  void *context)
{
	return sock_dg_ctx(sep, index, attr, tx_ep, context, true);
}

static int sock_dg_rx_ctx(struct fid_ep *sep, int index,
			  struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			  void *context)
{
	return sock_dg_ctx(sep, index, attr, rx_ep, context, false);
}

static int sock_dg_sep_control(struct fid *fid, int command, void *arg)
{
	if (command == FI_ENABLE)
		return sock_dg_sep_enable(sock_dg_of(fid));
	return ofi_ep_control(fid, command, arg);
}

/* An AV (and an EQ); contexts take the SEP's AV as they open, or now. */
static int sock_dg_sep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct sock_dg_ep *eng = sock_dg_of(fid);
	int ret;

	if (!bfid ||
	    (bfid->fclass != FI_CLASS_AV && bfid->fclass != FI_CLASS_EQ))
		return -FI_EINVAL;
	ret = ofi_ep_bind(fid, bfid, flags);
	if (ret || bfid->fclass != FI_CLASS_AV)
		return ret;
	ofi_mutex_lock(&eng->lock);
	ofi_sep_share_av(eng->sep, &eng->util);
	ofi_mutex_unlock(&eng->lock);
	return 0;
}

static int sock_dg_sep_close(struct fid *fid)
{
	struct sock_dg_ep *eng = sock_dg_of(fid);
	struct ofi_sep_slots *sep = eng->sep;

	if (sep->open)
		return -FI_EBUSY;
	sock_dg_close(fid);
	free(sep);
	return 0;
}

static const struct fi_ops sock_dg_sep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sock_dg_sep_close,
	.bind = sock_dg_sep_bind,
	.control = sock_dg_sep_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

static const struct fi_ops_ep sock_dg_sep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = fi_no_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = sock_dg_tx_ctx,
	.rx_ctx = sock_dg_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

int sockets_dgram_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **sep_fid, void *context)
{
	struct ofi_sep_slots *sep;
	struct sock_dg_ep *eng;
	int ret;

	if (!sep_fid)
		return -FI_EINVAL;
	sep = malloc(sizeof(*sep));
	if (!sep)
		return -FI_ENOMEM;
	ret = ofi_sep_slots_init(sep, info)
		      ?: sock_dg_engine_open(domain, info, true, &eng, context);
	if (ret) {
		free(sep);
		return ret;
	}
	eng->sep = sep;
	eng->util.ep_fid.fid.fclass = FI_CLASS_SEP;
	eng->util.ep_fid.fid.ops = (struct fi_ops *)&sock_dg_sep_fi_ops;
	eng->util.ep_fid.ops = (struct fi_ops_ep *)&sock_dg_sep_ops;
	*sep_fid = &eng->util.ep_fid;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The candidate fi_info.                                               */

#define SOCK_DG_TX_CAPS                                                        \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_TRIGGER | FI_FENCE | FI_NAMED_RX_CTX)
#define SOCK_DG_RX_CAPS                                                        \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_MULTI_RECV | FI_SOURCE |            \
	 FI_DIRECTED_RECV | FI_TRIGGER | FI_NAMED_RX_CTX)
#define SOCK_DG_CAPS                                                           \
	(SOCK_DG_TX_CAPS | SOCK_DG_RX_CAPS | FI_REMOTE_CQ_DATA |               \
	 FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV)

struct fi_info *sockets_dgram_template(const struct fi_info *base)
{
	struct fi_info *fi = fi_dupinfo(base);

	if (!fi)
		return NULL;
	fi->caps = SOCK_DG_CAPS;
	fi->tx_attr->caps = SOCK_DG_TX_CAPS;
	fi->tx_attr->op_flags =
		FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE;
	fi->tx_attr->msg_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = SOCK_DG_MAX_MSG;
	fi->tx_attr->size = SOCK_DG_SIZE;
	fi->tx_attr->iov_limit = SOCK_DG_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = 0;
	fi->rx_attr->caps = SOCK_DG_RX_CAPS;
	fi->rx_attr->op_flags = FI_COMPLETION | FI_MULTI_RECV;
	fi->rx_attr->msg_order = FI_ORDER_NONE;
	fi->rx_attr->size = SOCK_DG_SIZE;
	fi->rx_attr->iov_limit = SOCK_DG_IOV_LIMIT;
	fi->ep_attr->type = FI_EP_DGRAM;
	fi->ep_attr->protocol = FI_PROTO_UDP;
	fi->ep_attr->protocol_version = SOCK_DG_VERSION;
	fi->ep_attr->max_msg_size = SOCK_DG_MAX_MSG;
	fi->ep_attr->tx_ctx_cnt = SOCK_DG_CTX_MAX; /* scalable endpoints */
	fi->ep_attr->rx_ctx_cnt = SOCK_DG_CTX_MAX;
	return fi;
}
