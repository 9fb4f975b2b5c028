/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_cm.c - FI_EP_MSG connection management for tcp: the passive
 * endpoint (listening socket, reading connection requests, FI_CONNREQ,
 * fi_reject), and the connection calls of an MSG endpoint (fi_connect,
 * fi_accept, fi_shutdown, fi_getname/fi_setname/fi_getpeer) with the
 * events they lead to (FI_CONNECTED, FI_SHUTDOWN, error entries).
 *
 * An MSG endpoint is the RDM endpoint of tcp_ep.c with one peer
 * (TCP_MSG_PEER) in a connection set that has no listening socket: its
 * messages, tagged messages, RMA and atomics take the same data path.
 * The connector's set makes the connection and sends the CONN_REQ with
 * the fi_connect data (tcp_ep.c's hs_build); the passive endpoint reads
 * that request itself, and the accepting endpoint's set takes the socket
 * over with its CONN_RESP (ofi_sock_attach). The answer carries the
 * fi_accept or fi_reject data.
 *
 * Trust: a request is read into a fixed buffer (header, then exactly the
 * body and payload the header announces, which tcp_hdr_decode bounds),
 * and must be a CONN_REQ of an MSG endpoint of our wire version; anything
 * else, an EOF, or a request not whole within TCP_CM_TIMEOUT_MS closes
 * the socket without an event. At most TCP_CM_PENDING_MAX requests are
 * read at a time.
 *
 * Progress: connection management progresses when the EQ is read
 * (util_eq's progress list) or, for endpoints, when their CQs are. With
 * FI_PROGRESS_AUTO control progress, a passive endpoint also has a
 * progress thread from fi_listen on, sleeping on an epoll set of its
 * listening socket and the sockets whose requests are being read (an
 * active endpoint's thread is tcp_ep.c's).
 * A FI_CONNREQ handle is the request: fi_endpoint takes it (once), then
 * fi_accept; or fi_reject answers and frees it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"

#define TCP_CM_TIMEOUT_MS  10000
#define TCP_CM_PENDING_MAX 128
/* The largest request: header, connection body, data. */
#define TCP_CM_REQ_MAX (TCP_HDR_SIZE + TCP_CONN_BODY_SIZE + TCP_CONN_DATA_MAX)

struct tcp_pep;

/* An accepted socket whose request is read; then a FI_CONNREQ handle. */
struct tcp_conn_req {
	struct fid fid; /* FI_CLASS_CONNREQ */
	struct dlist_entry entry;
	int fd;
	bool delivered; /* handed out in a FI_CONNREQ event */
	bool taken;	/* an endpoint took it (fi_endpoint) */
	uint64_t start_ms;
	size_t have, need;
	struct sockaddr_storage peer;
	size_t data_len;
	uint8_t buf[TCP_CM_REQ_MAX];
};

struct tcp_pep {
	struct fid_pep pep_fid;
	struct util_fabric *fabric;
	struct fi_info *info;
	struct util_eq *eq;
	ofi_mutex_t lock;
	int lfd;    /* -1 until fi_listen */
	bool given; /* an active endpoint took its address (tcp_pep_give) */
	struct sockaddr_storage name;
	size_t namelen;
	struct dlist_entry reqs; /* being read */
	size_t nreqs;
	struct util_eq_prog prog;
	/* FI_PROGRESS_AUTO: lfd and the reqs' sockets, and the thread */
	int epfd;
	struct ofi_progress *auto_prog;
};

static size_t tcp_sa_len(const struct sockaddr_storage *sa)
{
	return sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

/* ------------------------------------------------------------------ */
/* Requests.                                                            */

static int tcp_creq_close(struct fid *fid)
{
	struct tcp_conn_req *r = container_of(fid, struct tcp_conn_req, fid);

	if (r->taken)
		return -FI_EBUSY;
	if (r->fd >= 0)
		close(r->fd);
	free(r);
	return 0;
}

static const struct fi_ops tcp_creq_ops = {
	.size = sizeof(struct fi_ops),
	.close = tcp_creq_close,
	.bind = fi_no_bind,
	.control = fi_no_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

/* @fid, if it is one of our FI_CONNREQ handles still to be answered. */
static struct tcp_conn_req *tcp_creq_of(fid_t fid)
{
	struct tcp_conn_req *r;

	if (!fid || fid->fclass != FI_CLASS_CONNREQ ||
	    fid->ops != &tcp_creq_ops)
		return NULL;
	r = container_of(fid, struct tcp_conn_req, fid);
	return r->delivered && !r->taken ? r : NULL;
}

static void tcp_creq_free(struct tcp_conn_req *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

/* Reads what has come of @r's request: 1 whole, 0 more to come, <0 drop. */
static int tcp_creq_read(struct tcp_conn_req *r)
{
	struct tcp_hdr_view h;
	struct tcp_conn_body c;
	ssize_t n;
	int ret;

	while (r->have < r->need) {
		n = recv(r->fd, r->buf + r->have, r->need - r->have, 0);
		if (n == 0)
			return -FI_ECONNRESET;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -FI_EIO;
		r->have += (size_t)n;
		if (r->have < TCP_HDR_SIZE || r->need != TCP_HDR_SIZE)
			continue;
		ret = tcp_hdr_decode(r->buf, r->have, &h);
		if (ret)
			return ret;
		if (h.op != TCP_OP_CONN_REQ || h.status ||
		    h.body_len != TCP_CONN_BODY_SIZE ||
		    h.payload_len > TCP_CONN_DATA_MAX)
			return -EPROTO;
		r->data_len = (size_t)h.payload_len;
		r->need = TCP_HDR_SIZE + TCP_CONN_BODY_SIZE + r->data_len;
	}
	ret = tcp_hdr_decode(r->buf, r->have, &h);
	if (ret)
		return ret;
	ret = tcp_conn_body_decode(&h, r->buf + TCP_HDR_SIZE,
				   r->have - TCP_HDR_SIZE, &c);
	if (ret)
		return ret;
	return c.ep_type == TCP_CONN_EP_MSG ? 1 : -EPROTO;
}

/* A whole request: FI_CONNREQ with an info naming it as the handle. */
static int tcp_creq_deliver(struct tcp_pep *pep, struct tcp_conn_req *r)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + TCP_CONN_DATA_MAX];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	size_t len = tcp_sa_len(&r->peer);
	struct fi_info *info;
	ssize_t ret;

	info = fi_dupinfo(pep->info);
	if (!info)
		return -FI_ENOMEM;
	free(info->dest_addr);
	info->dest_addr = calloc(1, len);
	if (!info->dest_addr) {
		fi_freeinfo(info);
		return -FI_ENOMEM;
	}
	memcpy(info->dest_addr, &r->peer, len);
	info->dest_addrlen = len;
	free(info->src_addr);
	info->src_addr = calloc(1, pep->namelen);
	if (info->src_addr)
		memcpy(info->src_addr, &pep->name, pep->namelen);
	info->src_addrlen = info->src_addr ? pep->namelen : 0;
	info->handle = &r->fid;
	r->delivered = true;
	e->fid = &pep->pep_fid.fid;
	e->info = info;
	memcpy(e->data, r->buf + TCP_HDR_SIZE + TCP_CONN_BODY_SIZE,
	       r->data_len);
	ret = ofi_eq_write(pep->eq, FI_CONNREQ, e, sizeof(*e) + r->data_len);
	if (ret < 0) {
		r->delivered = false;
		fi_freeinfo(info);
		return (int)ret;
	}
	return 0;
}

/* Auto progress: the thread wakes when a request's socket has bytes.
 * A socket leaves the set before it is handed to an endpoint, whose own
 * set then watches it (the file stays open, so closing would not). */
static void tcp_pep_watch(struct tcp_pep *pep, int fd, bool add)
{
	struct epoll_event ev = {.events = EPOLLIN};

	if (pep->epfd < 0)
		return;
	ev.data.fd = fd;
	/* A socket not watched is still read at the next period. */
	(void)epoll_ctl(pep->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd,
			&ev);
}

static void tcp_pep_accept(struct tcp_pep *pep)
{
	struct tcp_conn_req *r;
	socklen_t len;
	int fd;

	for (;;) {
		fd = accept4(pep->lfd, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		r = pep->nreqs < TCP_CM_PENDING_MAX ? calloc(1, sizeof(*r))
						    : NULL;
		if (!r) {
			close(fd);
			continue;
		}
		r->fid.fclass = FI_CLASS_CONNREQ;
		r->fid.ops = (struct fi_ops *)&tcp_creq_ops;
		r->fd = fd;
		r->need = TCP_HDR_SIZE;
		r->start_ms = ofi_gettime_ms();
		len = sizeof(r->peer);
		if (getpeername(fd, (struct sockaddr *)&r->peer, &len)) {
			tcp_creq_free(r);
			continue;
		}
		dlist_insert_tail(&r->entry, &pep->reqs);
		pep->nreqs++;
		tcp_pep_watch(pep, r->fd, true);
	}
}

static void tcp_pep_progress(struct util_eq_prog *prog)
{
	struct tcp_pep *pep = container_of(prog, struct tcp_pep, prog);
	struct dlist_entry *e, *next, ready;
	struct tcp_conn_req *r;
	uint64_t now;
	int ret;

	dlist_init(&ready);
	ofi_mutex_lock(&pep->lock);
	if (pep->lfd < 0)
		goto out;
	tcp_pep_accept(pep);
	now = ofi_gettime_ms();
	for (e = pep->reqs.next; e != &pep->reqs; e = next) {
		next = e->next;
		r = container_of(e, struct tcp_conn_req, entry);
		ret = tcp_creq_read(r);
		if (!ret && now - r->start_ms < TCP_CM_TIMEOUT_MS)
			continue;
		dlist_remove(&r->entry);
		pep->nreqs--;
		tcp_pep_watch(pep, r->fd, false);
		if (ret == 1) {
			dlist_insert_tail(&r->entry, &ready);
			continue;
		}
		FI_INFO(pep->fabric->prov, FI_LOG_EP_CTRL,
			"connection request dropped: %s\n",
			fi_strerror(ret < 0 ? -ret : FI_ETIMEDOUT));
		tcp_creq_free(r);
	}
out:
	ofi_mutex_unlock(&pep->lock);
	/* Outside the lock: a FI_CONNREQ handler may call fi_reject. */
	while ((e = dlist_pop_front(&ready))) {
		r = container_of(e, struct tcp_conn_req, entry);
		if (tcp_creq_deliver(pep, r))
			tcp_creq_free(r);
	}
}

/* ------------------------------------------------------------------ */
/* The passive endpoint.                                                */

static int tcp_pep_close(struct fid *fid)
{
	struct tcp_pep *pep = container_of(fid, struct tcp_pep, pep_fid.fid);
	struct dlist_entry *e;

	/* The thread first: it may be reading requests right now. */
	ofi_progress_stop(pep->auto_prog);
	pep->auto_prog = NULL;
	if (pep->eq) {
		ofi_eq_prog_del(pep->eq, &pep->prog);
		ofi_atomic_dec32(&pep->eq->ref);
	}
	while ((e = dlist_pop_front(&pep->reqs)))
		tcp_creq_free(container_of(e, struct tcp_conn_req, entry));
	if (pep->lfd >= 0)
		close(pep->lfd);
	if (pep->epfd >= 0)
		close(pep->epfd);
	ofi_atomic_dec32(&pep->fabric->ref);
	fi_freeinfo(pep->info);
	ofi_mutex_destroy(&pep->lock);
	free(pep);
	return 0;
}

static int tcp_pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct tcp_pep *pep = container_of(fid, struct tcp_pep, pep_fid.fid);
	struct util_eq *eq;

	if (!bfid || flags)
		return -FI_EINVAL;
	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	eq = container_of(bfid, struct util_eq, eq_fid.fid);
	if (pep->eq || eq->fabric != pep->fabric)
		return -FI_EINVAL;
	pep->eq = eq;
	ofi_atomic_inc32(&eq->ref);
	ofi_eq_prog_add(eq, &pep->prog);
	return 0;
}

static const struct fi_ops tcp_pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = tcp_pep_close,
	.bind = tcp_pep_bind,
	.control = fi_no_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

static int tcp_cm_data_size(int level, int optname, void *optval,
			    size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen)
		return -FI_EINVAL;
	if (*optlen < sizeof(size_t)) {
		*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = TCP_CONN_DATA_MAX;
	*optlen = sizeof(size_t);
	return 0;
}

static int tcp_pep_getopt(fid_t fid, int level, int optname, void *optval,
			  size_t *optlen)
{
	OFI_UNUSED(fid);
	return tcp_cm_data_size(level, optname, optval, optlen);
}

int tcp_cm_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen)
{
	struct tcp_ep *ep = container_of(fid, struct tcp_ep, util.ep_fid.fid);

	if (ep->msg && level == FI_OPT_ENDPOINT &&
	    optname == FI_OPT_CM_DATA_SIZE)
		return tcp_cm_data_size(level, optname, optval, optlen);
	return ofi_ep_getopt(fid, level, optname, optval, optlen);
}

static const struct fi_ops_ep tcp_pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = fi_no_cancel,
	.getopt = tcp_pep_getopt,
	.setopt = fi_no_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

/* @addr as an address of @format: its length, or 0 when it is not one. */
static size_t tcp_addr_ok(uint32_t format, const void *addr, size_t len)
{
	const struct sockaddr *sa = addr;
	size_t want = ofi_sockaddr_len(format);

	if (!addr || len < want ||
	    sa->sa_family != (format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET))
		return 0;
	return want;
}

static int tcp_pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct tcp_pep *pep = container_of(fid, struct tcp_pep, pep_fid.fid);
	size_t len = tcp_addr_ok(pep->info->addr_format, addr, addrlen);
	int ret = 0;

	if (!len)
		return -FI_EINVAL;
	ofi_mutex_lock(&pep->lock);
	if (pep->given) {
		ret = -FI_EOPBADSTATE;
	} else if (pep->lfd >= 0) {
		ret = -FI_EBUSY; /* already listening there */
	} else {
		memset(&pep->name, 0, sizeof(pep->name));
		memcpy(&pep->name, addr, len);
		pep->namelen = len;
	}
	ofi_mutex_unlock(&pep->lock);
	return ret;
}

static int tcp_pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct tcp_pep *pep = container_of(fid, struct tcp_pep, pep_fid.fid);
	int ret;

	ofi_mutex_lock(&pep->lock);
	ret = ofi_getname_copy(addr, addrlen, &pep->name, pep->namelen);
	ofi_mutex_unlock(&pep->lock);
	return ret;
}

static void tcp_pep_auto_progress(void *arg)
{
	tcp_pep_progress(&((struct tcp_pep *)arg)->prog);
}

/* FI_PROGRESS_AUTO control progress: the thread, once @pep listens. */
static int tcp_pep_auto_start(struct tcp_pep *pep)
{
	struct epoll_event ev = {.events = EPOLLIN};
	char name[16];
	struct ofi_progress_attr attr = {
		.prov = pep->fabric->prov,
		.name = name,
		.period_ms = TCP_AUTO_PERIOD_MS,
		.fn = tcp_pep_auto_progress,
		.arg = pep,
	};
	int ret;

	if (!tcp_attr_auto(pep->info->domain_attr, false, true))
		return 0;
	pep->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (pep->epfd < 0)
		return -FI_EMFILE;
	ev.data.fd = pep->lfd;
	if (epoll_ctl(pep->epfd, EPOLL_CTL_ADD, pep->lfd, &ev)) {
		ret = -errno;
		goto err;
	}
	attr.fd = pep->epfd;
	tcp_thread_name(name, sizeof(name), attr.prov, "listen");
	ret = ofi_progress_start(&attr, &pep->auto_prog);
	if (!ret) {
		/* fi_trywait on the EQ leaves it to the thread */
		__atomic_store_n(&pep->prog.auto_progress, true,
				 __ATOMIC_RELAXED);
		return 0;
	}
err:
	close(pep->epfd);
	pep->epfd = -1;
	return ret;
}

static int tcp_pep_listen(struct fid_pep *pep_fid)
{
	struct tcp_pep *pep = container_of(pep_fid, struct tcp_pep, pep_fid);
	socklen_t len = (socklen_t)pep->namelen;
	int fd, one = 1, ret = 0;

	if (!pep->eq)
		return -FI_ENOEQ;
	ofi_mutex_lock(&pep->lock);
	if (pep->given) {
		ret = -FI_EOPBADSTATE; /* fi_endpoint(3): no longer usable */
		goto out;
	}
	if (pep->lfd >= 0)
		goto out;
	fd = socket(pep->name.ss_family,
		    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&pep->name, len) || listen(fd, 128) ||
	    getsockname(fd, (struct sockaddr *)&pep->name, &len)) {
		ret = errno == EADDRINUSE ? -FI_EADDRINUSE : -errno;
		close(fd);
		goto out;
	}
	if (pep->name.ss_family == AF_INET)
		memset(((struct sockaddr_in *)&pep->name)->sin_zero, 0, 8);
	pep->lfd = fd;
	ret = tcp_pep_auto_start(pep);
	if (ret) {
		close(fd);
		pep->lfd = -1;
	}
out:
	ofi_mutex_unlock(&pep->lock);
	return ret;
}

static int tcp_pep_reject(struct fid_pep *pep_fid, fid_t handle,
			  const void *param, size_t paramlen)
{
	struct tcp_pep *pep = container_of(pep_fid, struct tcp_pep, pep_fid);
	struct tcp_conn_req *r;
	uint8_t frame[TCP_CM_REQ_MAX];
	size_t len;

	if (paramlen && !param)
		return -FI_EINVAL;
	ofi_mutex_lock(&pep->lock);
	r = tcp_creq_of(handle);
	if (!r) {
		ofi_mutex_unlock(&pep->lock);
		return -FI_EINVAL;
	}
	r->taken = true;
	ofi_mutex_unlock(&pep->lock);
	/* fi_cm(3): data that does not fit is silently truncated. */
	paramlen = OFI_MIN(paramlen, (size_t)TCP_CONN_DATA_MAX);
	len = tcp_cm_frame(frame, sizeof(frame), true, FI_ECONNREFUSED,
			   TCP_CONN_EP_MSG, &pep->name, param, paramlen);
	/* A fresh socket takes a few hundred bytes at once; if it cannot,
	 * the connector sees the connection close: refused all the same. */
	(void)send(r->fd, frame, len, MSG_NOSIGNAL);
	tcp_creq_free(r);
	return 0;
}

/* @fid, if it is one of our passive endpoints. */
static struct tcp_pep *tcp_pep_of(fid_t fid)
{
	if (!fid || fid->fclass != FI_CLASS_PEP || fid->ops != &tcp_pep_fi_ops)
		return NULL;
	return container_of(fid, struct tcp_pep, pep_fid.fid);
}

/*
 * fi_endpoint(3) with info->handle a passive endpoint: the active
 * endpoint takes its address, and the pep lets go of what it holds (its
 * listening socket, the requests being read, its thread) so that the
 * address is free for the endpoint to bind; the pep only closes then.
 * Once; -FI_EINVAL after.
 */
static int tcp_pep_give(struct tcp_pep *pep, struct sockaddr_storage *name,
			size_t *len)
{
	struct dlist_entry *e;

	/* The thread first: it takes the lock. */
	ofi_progress_stop(pep->auto_prog);
	pep->auto_prog = NULL;
	ofi_mutex_lock(&pep->lock);
	if (pep->given) {
		ofi_mutex_unlock(&pep->lock);
		return -FI_EINVAL;
	}
	pep->given = true;
	while ((e = dlist_pop_front(&pep->reqs)))
		tcp_creq_free(container_of(e, struct tcp_conn_req, entry));
	pep->nreqs = 0;
	if (pep->lfd >= 0)
		close(pep->lfd);
	if (pep->epfd >= 0)
		close(pep->epfd);
	pep->lfd = pep->epfd = -1;
	*name = pep->name;
	*len = pep->namelen;
	ofi_mutex_unlock(&pep->lock);
	return 0;
}

static const struct fi_ops_cm tcp_pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = tcp_pep_setname,
	.getname = tcp_pep_getname,
	.getpeer = fi_no_getpeer,
	.connect = fi_no_connect,
	.listen = tcp_pep_listen,
	.accept = fi_no_accept,
	.reject = tcp_pep_reject,
	.shutdown = fi_no_shutdown,
	.join = fi_no_join,
};

int tcp_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep_fid, void *context)
{
	struct util_fabric *uf;
	struct tcp_pep *pep;
	size_t len;

	if (!fabric || !info || !pep_fid)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	if (info->addr_format != FI_SOCKADDR_IN6 &&
	    info->addr_format != FI_SOCKADDR_IN &&
	    info->addr_format != FI_FORMAT_UNSPEC)
		return -FI_EINVAL;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->info = fi_dupinfo(info);
	if (!pep->info) {
		free(pep);
		return -FI_ENOMEM;
	}
	if (pep->info->addr_format != FI_SOCKADDR_IN6)
		pep->info->addr_format = FI_SOCKADDR_IN;
	if (pep->info->ep_attr)
		pep->info->ep_attr->type = FI_EP_MSG;
	len = tcp_addr_ok(pep->info->addr_format, info->src_addr,
			  info->src_addrlen);
	if (info->src_addr && !len) {
		fi_freeinfo(pep->info);
		free(pep);
		return -FI_EINVAL;
	}
	if (len) {
		memcpy(&pep->name, info->src_addr, len);
	} else if (pep->info->addr_format == FI_SOCKADDR_IN6) {
		((struct sockaddr_in6 *)&pep->name)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&pep->name)->sin6_addr =
			in6addr_loopback;
	} else {
		((struct sockaddr_in *)&pep->name)->sin_family = AF_INET;
		((struct sockaddr_in *)&pep->name)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
	}
	pep->namelen = ofi_sockaddr_len(pep->info->addr_format);
	uf = container_of(fabric, struct util_fabric, fabric_fid);
	pep->fabric = uf;
	ofi_atomic_inc32(&uf->ref);
	ofi_mutex_init(&pep->lock);
	dlist_init(&pep->reqs);
	pep->lfd = -1;
	pep->epfd = -1;
	pep->prog.progress = tcp_pep_progress;
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = (struct fi_ops *)&tcp_pep_fi_ops;
	pep->pep_fid.ops = (struct fi_ops_ep *)&tcp_pep_ops;
	pep->pep_fid.cm = (struct fi_ops_cm *)&tcp_pep_cm_ops;
	*pep_fid = &pep->pep_fid;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Events of an MSG endpoint.                                           */

/*
 * Events are raised under the endpoint lock and queued; tcp_ep_unlock
 * delivers them (tcp_cm_flush), so that a handler registered for them
 * (fi_eq_register_handler) may call this endpoint.
 */
struct tcp_cm_ev {
	struct dlist_entry entry;
	uint32_t event; /* 0: an error entry with err */
	int err;
	bool release; /* then the accept's held answer leaves */
	size_t len;
	uint8_t data[TCP_CONN_DATA_MAX];
};

static struct tcp_cm_ev *tcp_cm_queue(struct tcp_ep *ep, uint32_t event,
				      int err, const void *data, size_t len)
{
	struct tcp_cm_ev *ev;

	if (!ep->util.eq)
		return NULL;
	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		FI_WARN(tcp_ep_prov(ep), FI_LOG_EP_CTRL, "CM event lost\n");
		return NULL;
	}
	ev->event = event;
	ev->err = err;
	ev->len = OFI_MIN(len, (size_t)TCP_CONN_DATA_MAX);
	if (ev->len)
		memcpy(ev->data, data, ev->len);
	dlist_insert_tail(&ev->entry, &ep->cm_events);
	__atomic_store_n(&ep->cm_queued, true, __ATOMIC_RELAXED);
	return ev;
}

static void tcp_cm_event(struct tcp_ep *ep, uint32_t event, const void *data,
			 size_t len)
{
	(void)tcp_cm_queue(ep, event, 0, data, len);
}

static void tcp_cm_error(struct tcp_ep *ep, int err, const void *data,
			 size_t len)
{
	(void)tcp_cm_queue(ep, 0, err, data, len);
}

static void tcp_cm_deliver(struct tcp_ep *ep, struct tcp_cm_ev *ev)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + TCP_CONN_DATA_MAX];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	ssize_t ret;

	if (!ev->event) {
		ret = ofi_eq_write_error(ep->util.eq, &ep->util.ep_fid.fid,
					 ep->util.ep_fid.fid.context, 0,
					 ev->err, -ev->err, ev->data, ev->len);
	} else {
		memset(e, 0, sizeof(*e));
		e->fid = &ep->util.ep_fid.fid;
		memcpy(e->data, ev->data, ev->len);
		ret = ofi_eq_write(ep->util.eq, ev->event, e,
				   sizeof(*e) + ev->len);
	}
	if (ret < 0)
		FI_WARN(tcp_ep_prov(ep), FI_LOG_EP_CTRL, "CM event lost\n");
}

/*
 * One thread delivers at a time, in the order the events were raised: the
 * application's (an accept's FI_CONNECTED) and the progress thread's (the
 * peer's close, FI_SHUTDOWN) would otherwise race to the EQ outside the
 * lock and the later event could land first. A thread that finds another
 * delivering leaves its events to it. An accept's answer leaves only once
 * its FI_CONNECTED is delivered, by whichever thread delivers it.
 */
void tcp_cm_flush(struct tcp_ep *ep)
{
	struct dlist_entry *e;
	struct tcp_cm_ev *ev;

	tcp_ep_lock(ep);
	if (ep->cm_delivering) {
		tcp_ep_release(ep);
		return;
	}
	ep->cm_delivering = true;
	while ((e = dlist_pop_front(&ep->cm_events))) {
		ev = container_of(e, struct tcp_cm_ev, entry);
		tcp_ep_release(ep);
		tcp_cm_deliver(ep, ev);
		tcp_ep_lock(ep);
		if (ev->release)
			ofi_sock_release(ep->set, TCP_MSG_PEER);
		free(ev);
	}
	__atomic_store_n(&ep->cm_queued, false, __ATOMIC_RELAXED);
	ep->cm_delivering = false;
	tcp_ep_release(ep);
}

/*
 * The connection is gone for good: what waits on it fails. Posted
 * receives fail only when @recvs says so: when this side ends it or never
 * had it. The peer's close gives FI_SHUTDOWN and nothing else, as
 * libfabric 1.17 does: on a CQ that other endpoints share, errors for
 * receives the application still holds would come before those
 * endpoints' data and read as a failure of theirs.
 */
static void tcp_cm_down(struct tcp_ep *ep, int err, bool recvs)
{
	struct tcp_ep *c;
	size_t i;

	ep->cm_state = TCP_CM_DOWN;
	/* the endpoint, or a scalable one's contexts (tcp_sep.c) */
	tcp_sep_foreach(ep, c, i) {
		tcp_cm_fail_all(c, err);
		/* A shared receive context's receives serve other
		 * connections. */
		if (recvs && !c->srx_on)
			ofi_match_fail_posted(c->rxq, err);
	}
}

void tcp_cm_answered(struct tcp_ep *ep, int status, const void *data,
		     size_t len)
{
	if (ep->cm_state != TCP_CM_CONNECTING)
		return;
	if (status) {
		/* Refused (or any answer but yes): the data is the
		 * reject's, in the error entry (fi_cm(3)). */
		tcp_cm_down(ep, FI_ECONNREFUSED, true);
		tcp_cm_error(ep, FI_ECONNREFUSED, data, len);
		return;
	}
	ep->cm_state = TCP_CM_CONNECTED;
	tcp_cm_event(ep, FI_CONNECTED, data, len);
}

void tcp_cm_peer_failed(struct tcp_ep *ep, int err)
{
	switch (ep->cm_state) {
	case TCP_CM_CONNECTING:
		tcp_cm_down(ep, err, true);
		tcp_cm_error(ep, err == FI_ECONNRESET ? FI_ECONNREFUSED : err,
			     NULL, 0);
		break;
	case TCP_CM_CONNECTED:
		tcp_cm_down(ep, err, false);
		tcp_cm_event(ep, FI_SHUTDOWN, NULL, 0);
		break;
	default:
		break;
	}
}

static void tcp_cm_progress(struct util_eq_prog *prog)
{
	struct tcp_ep *ep = container_of(prog, struct tcp_ep, eq_prog);

	tcp_ep_lock(ep);
	tcp_progress_locked(ep);
	tcp_ep_unlock(ep);
}

int tcp_cm_ep_enable(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);

	if (!util->eq)
		return -FI_ENOEQ;
	if (!ep->on_eq) {
		ep->eq_prog.ep = util;
		ofi_eq_prog_add(util->eq, &ep->eq_prog);
		ep->on_eq = true;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Connection calls of an MSG endpoint.                                 */

int tcp_cm_ep_init(struct tcp_ep *ep, const struct fi_info *info)
{
	uint32_t format = ep->util.domain->addr_format;
	int family = format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
	struct tcp_conn_req *r = NULL;
	struct tcp_pep *pep = NULL;
	size_t len;
	int ret;

	if (info->handle) {
		/* a FI_CONNREQ's request, or a pep whose address we take */
		r = tcp_creq_of(info->handle);
		pep = r ? NULL : tcp_pep_of(info->handle);
		if (!r && !pep)
			return -FI_EINVAL;
		if ((r ? r->peer.ss_family : pep->name.ss_family) != family)
			return -FI_EINVAL;
	}
	ep->msg = true;
	ep->cm_state = TCP_CM_IDLE;
	ep->eq_prog.progress = tcp_cm_progress;
	len = tcp_addr_ok(format, info->src_addr, info->src_addrlen);
	if (len) {
		memcpy(&ep->name, info->src_addr, len);
		ep->namelen = len;
	} else {
		ep->name.ss_family =
			format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
		ep->namelen = ofi_sockaddr_len(format);
	}
	ret = ofi_sock_set_open_client(&tcp_sock_ops, ep, NULL, 0, &ep->set);
	if (ret)
		return ret;
	if (pep) {
		ret = tcp_pep_give(pep, &ep->name, &ep->namelen);
		if (ret) {
			ofi_sock_set_close(ep->set);
			ep->set = NULL;
			return ret;
		}
		/* connects from there (fi_setname's way) */
		ep->named = true;
		ofi_sock_set_bind(ep->set, (struct sockaddr *)&ep->name,
				  (socklen_t)ep->namelen);
	}
	if (r) {
		r->taken = true;
		ep->creq = r;
		ep->peer_sa = r->peer;
	}
	return 0;
}

void tcp_cm_ep_fini(struct tcp_ep *ep)
{
	struct dlist_entry *e;

	ep->cm_state = TCP_CM_DOWN; /* closing: no more events */
	while ((e = dlist_pop_front(&ep->cm_events)))
		free(container_of(e, struct tcp_cm_ev, entry));
	__atomic_store_n(&ep->cm_queued, false, __ATOMIC_RELAXED);
	if (ep->on_eq) {
		ofi_eq_prog_del(ep->util.eq, &ep->eq_prog);
		ep->on_eq = false;
	}
	if (ep->creq) {
		ep->creq->taken = false;
		tcp_creq_free(ep->creq);
		ep->creq = NULL;
	}
}

static struct tcp_ep *tcp_msg_ep(struct fid_ep *ep_fid)
{
	struct tcp_ep *ep;

	if (!ep_fid || (ep_fid->fid.fclass != FI_CLASS_EP &&
			ep_fid->fid.fclass != FI_CLASS_SEP))
		return NULL;
	ep = tcp_ep_of(ep_fid);
	return ep->msg ? ep : NULL;
}

static int tcp_msg_connect(struct fid_ep *ep_fid, const void *addr,
			   const void *param, size_t paramlen)
{
	struct tcp_ep *ep = tcp_msg_ep(ep_fid);
	size_t len;
	int ret;

	/* Data past FI_OPT_CM_DATA_SIZE is refused here, as 1.17 does (a
	 * reject's alone is truncated). */
	if (!ep || (paramlen && !param) || paramlen > TCP_CONN_DATA_MAX)
		return -FI_EINVAL;
	len = tcp_addr_ok(ep->util.domain->addr_format, addr,
			  ofi_sockaddr_len(ep->util.domain->addr_format));
	if (!len)
		return -FI_EINVAL;
	if (!ofi_ep_enabled(&ep->util))
		return -FI_EOPBADSTATE;
	tcp_ep_lock(ep);
	if (ep->cm_state != TCP_CM_IDLE || ep->creq) {
		ret = -FI_EISCONN; /* fi_connect: once in a lifetime */
		goto out;
	}
	memset(&ep->peer_sa, 0, sizeof(ep->peer_sa));
	memcpy(&ep->peer_sa, addr, len);
	ep->cm_len = paramlen;
	if (ep->cm_len)
		memcpy(ep->cm_data, param, ep->cm_len);
	ep->cm_state = TCP_CM_CONNECTING;
	ret = ofi_sock_connect(ep->set, TCP_MSG_PEER);
	if (ret) {
		/* Refused at once (loopback): an event like a later
		 * refusal, so callers handle one path. */
		tcp_cm_down(ep, -ret, true);
		tcp_cm_error(ep, -ret, NULL, 0);
		ret = 0;
	}
out:
	tcp_ep_unlock(ep);
	return ret;
}

static int tcp_msg_accept(struct fid_ep *ep_fid, const void *param,
			  size_t paramlen)
{
	struct tcp_ep *ep = tcp_msg_ep(ep_fid);
	uint8_t frame[TCP_CM_REQ_MAX];
	struct tcp_conn_req *r;
	struct tcp_cm_ev *ev;
	size_t len;
	int fd, ret = 0;

	if (!ep || (paramlen && !param) || paramlen > TCP_CONN_DATA_MAX)
		return -FI_EINVAL;
	if (!ofi_ep_enabled(&ep->util))
		return -FI_EOPBADSTATE;
	tcp_ep_lock(ep);
	r = ep->creq;
	if (!r || ep->cm_state != TCP_CM_IDLE) {
		ret = r ? -FI_EISCONN : -FI_EINVAL;
		goto out;
	}
	len = tcp_cm_frame(frame, sizeof(frame), true, 0, TCP_CONN_EP_MSG,
			   &ep->name, param, paramlen);
	/* The acceptor's FI_CONNECTED carries no data (the connector's
	 * came with FI_CONNREQ): a plain struct fi_eq_cm_entry reads it. */
	ep->cm_state = TCP_CM_CONNECTED;
	ev = tcp_cm_queue(ep, FI_CONNECTED, 0, NULL, 0);
	fd = r->fd;
	r->fd = -1;
	r->taken = false;
	ep->creq = NULL;
	tcp_creq_free(r);
	/*
	 * The answer is held until FI_CONNECTED is in the EQ (tcp_cm_flush):
	 * the connector acts on it at once, and what follows from that on
	 * our side (its next connection's FI_CONNREQ on a pep sharing the
	 * EQ, written by another thread) must not reach the EQ first. Sends
	 * meanwhile queue behind it. A socket that fails from here is
	 * reported as FI_SHUTDOWN.
	 */
	ret = ofi_sock_attach(ep->set, fd, TCP_MSG_PEER, frame, len, !!ev);
	if (ret) {
		close(fd);
		tcp_cm_peer_failed(ep, -ret);
		ret = 0;
		goto out;
	}
	if (ev)
		ev->release = true;
out:
	tcp_ep_unlock(ep);
	return ret;
}

static int tcp_msg_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct tcp_ep *ep = tcp_msg_ep(ep_fid);

	if (!ep || flags)
		return -FI_EINVAL;
	tcp_ep_lock(ep);
	if (ep->cm_state == TCP_CM_CONNECTED ||
	    ep->cm_state == TCP_CM_CONNECTING) {
		/* Closes the socket: the peer reads EOF, its FI_SHUTDOWN.
		 * The local side gets one too, as with libfabric 1.17:
		 * applications wait for it before closing. */
		ofi_sock_remove_peer(ep->set, TCP_MSG_PEER);
		tcp_cm_down(ep, FI_ECANCELED, true);
		tcp_cm_event(ep, FI_SHUTDOWN, NULL, 0);
	}
	tcp_ep_unlock(ep);
	return 0;
}

static int tcp_msg_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct tcp_ep *ep = container_of(fid, struct tcp_ep, util.ep_fid.fid);
	size_t len = tcp_addr_ok(ep->util.domain->addr_format, addr, addrlen);
	int ret = 0;

	if (!len)
		return -FI_EINVAL;
	tcp_ep_lock(ep);
	if (ep->cm_state != TCP_CM_IDLE || ep->creq) {
		ret = -FI_EOPBADSTATE;
	} else {
		memset(&ep->name, 0, sizeof(ep->name));
		memcpy(&ep->name, addr, len);
		ep->namelen = len;
		ep->named = true;
		ofi_sock_set_bind(ep->set, (struct sockaddr *)&ep->name,
				  (socklen_t)len);
	}
	tcp_ep_unlock(ep);
	return ret;
}

static int tcp_msg_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct tcp_ep *ep = container_of(fid, struct tcp_ep, util.ep_fid.fid);

	return ofi_getname_copy(addr, addrlen, &ep->name, ep->namelen);
}

static int tcp_msg_getpeer(struct fid_ep *ep_fid, void *addr, size_t *addrlen)
{
	struct tcp_ep *ep = tcp_msg_ep(ep_fid);
	int ret;

	if (!ep)
		return -FI_EINVAL;
	tcp_ep_lock(ep);
	if (ep->cm_state == TCP_CM_IDLE && !ep->creq)
		ret = -FI_ENOTCONN;
	else
		ret = ofi_getname_copy(addr, addrlen, &ep->peer_sa,
				       tcp_sa_len(&ep->peer_sa));
	tcp_ep_unlock(ep);
	return ret;
}

const struct fi_ops_cm tcp_msg_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = tcp_msg_setname,
	.getname = tcp_msg_getname,
	.getpeer = tcp_msg_getpeer,
	.connect = tcp_msg_connect,
	.listen = fi_no_listen,
	.accept = tcp_msg_accept,
	.reject = fi_no_reject,
	.shutdown = tcp_msg_shutdown,
	.join = fi_no_join,
};
