/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_sock_conn.c - the stream-socket connection layer's connections
 * (ofi_sock.h; what the pieces share is in util_sock_priv.h): the peer
 * table by fi_addr and the anonymous peers, connecting and accepting,
 * the handshake and simultaneous-connect resolution, an anonymous
 * connection adopted by its AV entry, closing a connection and
 * reporting its peer's failure, and the connection-oriented entry
 * points (ofi_sock_connect, ofi_sock_attach).
 *
 * Lifetime: a connection that fails or loses a race is unlinked and its
 * fd closed at once, but its memory waits on a zombie list until the end
 * of the progress call, since an event of the same epoll batch may still
 * point at it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util_sock_priv.h"

int ofi_sock_addr_cmp(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;
	int c;

	if (a->ss_family != b->ss_family)
		return a->ss_family < b->ss_family ? -1 : 1;
	if (a->ss_family == AF_INET) {
		c = memcmp(&a4->sin_addr, &b4->sin_addr, 4);
		if (!c)
			c = memcmp(&a4->sin_port, &b4->sin_port, 2);
	} else {
		c = memcmp(&a6->sin6_addr, &b6->sin6_addr, 16);
		if (!c)
			c = memcmp(&a6->sin6_port, &b6->sin6_port, 2);
	}
	return c < 0 ? -1 : c > 0;
}

int sock_setup_fd(int fd)
{
	int one = 1, fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -sock_err();
	/* Ignored on non-TCP sockets; latency matters more than packets. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

static struct sock_conn *sock_conn_new(struct ofi_sock_set *set, int fd,
				       enum sock_state state)
{
	struct epoll_event ev = sock_no_event;
	struct sock_conn *c;

	c = calloc(1, sizeof(*c) + set->ops->max_head);
	if (!c)
		return NULL;
	c->rbuf = malloc(SOCK_RBUF);
	if (!c->rbuf) {
		free(c);
		return NULL;
	}
	c->fd = fd;
	c->src = FI_ADDR_NOTAVAIL;
	c->state = state;
	c->need = set->ops->min_head;
	c->events = EPOLLIN | (state == SOCK_CONNECTING ? EPOLLOUT : 0);
	ev.events = c->events;
	ev.data.ptr = c;
	if (epoll_ctl(set->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		free(c->rbuf);
		free(c);
		return NULL;
	}
	dlist_insert_tail(&c->entry, &set->conns);
	set->nconns++;
	return c;
}

void sock_fail_txq(struct ofi_sock_set *set, struct sock_peer *p, int err)
{
	struct dlist_entry *e;

	while ((e = dlist_pop_front(&p->txq)))
		set->ops->send_done(set->ctx,
				    container_of(e, struct ofi_sock_tx, entry),
				    err);
}

/* Unlinks and closes @c; reports @err for its peer if it was in use. */
void sock_conn_close(struct ofi_sock_set *set, struct sock_conn *c, int err)
{
	struct sock_peer *p = c->peer;

	if (c->state == SOCK_CLOSED)
		return;
	if (c->state == SOCK_SHUT)
		err = 0; /* the EOF it waited for, or a reset: nothing lost */
	c->state = SOCK_CLOSED;
	if (c->rx == SOCK_RX_STALLED)
		set->nstalled--;
	if (c->held) {
		c->held = false;
		set->ops->rx_release(set->ctx, c->frame);
	}
	/* A data frame cut short: the upper layer releases its target. */
	if ((c->rx == SOCK_RX_PAYLOAD ||
	     (c->rx == SOCK_RX_STALLED && c->frame)) &&
	    !c->hs_frame && set->ops->recv_abort)
		set->ops->recv_abort(set->ctx,
				     c->peer ? c->peer->addr : FI_ADDR_NOTAVAIL,
				     c->frame, err ? err : FI_ECONNABORTED);
	c->rx = SOCK_RX_HEAD;
	c->rpos = c->rlen = 0;
	if (c->flush_queued) {
		dlist_remove(&c->flush_entry);
		c->flush_queued = false;
	}
	if (set->hot == c)
		set->hot = NULL;
	if (set->sent == c)
		set->sent = NULL;
	if (set->quiet == c)
		set->quiet = NULL; /* not in the epoll set */
	else
		epoll_ctl(set->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	dlist_remove(&c->entry);
	dlist_insert_tail(&c->entry, &set->zombies);
	set->nconns--;
	c->peer = NULL;
	if (!p || p->conn != c)
		return;
	p->conn = NULL;
	if (!err)
		return;
	p->failed = err;
	sock_fail_txq(set, p, err);
	set->ops->peer_failed(set->ctx, p->addr, err);
}

/*
 * @c's peer left the AV and its last frame is written. Closing the socket
 * would lose what the peer wrote before it read our EOF (it may have
 * inserted us again and sent at once): our half is shut instead, and the
 * peer's frames are read, from the anonymous address, until its EOF
 * closes @c. Nothing can be sent to that address any more.
 */
void sock_conn_shut(struct ofi_sock_set *set, struct sock_conn *c)
{
	if (c->state != SOCK_ACTIVE || !c->peer ||
	    (set->quiet == c && sock_unquiet(set)) ||
	    shutdown(c->fd, SHUT_WR)) {
		sock_conn_close(set, c, 0);
		return;
	}
	c->state = SOCK_SHUT;
	c->peer->failed = FI_ECONNRESET;
	if (set->hot == c)
		set->hot = NULL;
	if (set->sent == c)
		set->sent = NULL;
	(void)sock_watch(set, c, EPOLLIN);
}

OFI_HOT void sock_reap(struct ofi_sock_set *set)
{
	struct dlist_entry *e;
	struct sock_conn *c;

	while ((e = dlist_pop_front(&set->zombies))) {
		c = container_of(e, struct sock_conn, entry);
		free(c->rbuf);
		free(c);
	}
}

OFI_HOT struct sock_peer *sock_peer_get(struct ofi_sock_set *set,
					fi_addr_t addr, bool create)
{
	struct sock_peer **np, *p;
	size_t n;

	if (addr == FI_ADDR_NOTAVAIL || addr == FI_ADDR_UNSPEC)
		return NULL;
	if (addr >= OFI_SOCK_ANON_ADDR) {
		n = (size_t)(addr - OFI_SOCK_ANON_ADDR);
		if (n >= set->nanon || !set->anon[n])
			return NULL;
		p = set->anon[n];
		return p->alias ? p->alias : p;
	}
	if (addr < set->npeers && set->peers[addr])
		return set->peers[addr];
	if (!create || addr >= (1ULL << 30))
		return NULL;
	if (addr >= set->npeers) {
		n = OFI_MAX((size_t)addr + 1, set->npeers * 2);
		np = realloc(set->peers, n * sizeof(*np));
		if (!np)
			return NULL;
		memset(np + set->npeers, 0, (n - set->npeers) * sizeof(*np));
		set->peers = np;
		set->npeers = n;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->addr = addr;
	dlist_init(&p->txq);
	if (set->ops->addr_of(set->ctx, addr, &p->sa)) {
		free(p);
		return NULL;
	}
	set->peers[addr] = p;
	return p;
}

int sock_connect(struct ofi_sock_set *set, struct sock_peer *p)
{
	socklen_t len = p->sa.ss_family == AF_INET6
				? sizeof(struct sockaddr_in6)
				: sizeof(struct sockaddr_in);
	struct sock_conn *c;
	int fd, ret;

	fd = socket(p->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -sock_err();
	ret = sock_setup_fd(fd);
	if (ret)
		goto err;
	if (set->bind_len &&
	    bind(fd, (struct sockaddr *)&set->bind_sa, set->bind_len)) {
		ret = -sock_err();
		goto err;
	}
	if (connect(fd, (struct sockaddr *)&p->sa, len) &&
	    errno != EINPROGRESS) {
		ret = -sock_err();
		goto err;
	}
	c = sock_conn_new(set, fd, SOCK_CONNECTING);
	if (!c) {
		ret = -FI_ENOMEM;
		goto err;
	}
	c->peer = p;
	c->sa = p->sa;
	c->have_sa = true;
	c->hs_len =
		set->ops->hs_build(set->ctx, c->hs, sizeof(c->hs), false, 0);
	p->conn = c;
	return 0;
err:
	close(fd);
	return ret;
}

/*
 * The peer entry of a connection from an address not in the AV: an
 * fi_addr from OFI_SOCK_ANON_ADDR up, so frames from it can be answered
 * on that connection. One entry per listening address, reused when that
 * peer connects again.
 */
static struct sock_peer *sock_anon_get(struct ofi_sock_set *set,
				       const struct sockaddr_storage *sa)
{
	struct sock_peer **na, *p;
	size_t i, n;

	for (i = 0; i < set->nanon; i++) {
		p = set->anon[i];
		/* A connection draining to a removed address is ours, not
		 * the peer's: its new one gets an entry of its own. */
		if (!p || p->alias || (p->drain && p->conn) ||
		    ofi_sock_addr_cmp(&p->sa, sa))
			continue;
		/* Frames that waited for a connection take the peer's. */
		p->drain = false;
		return p;
	}
	if (set->nanon >= (1U << 20))
		return NULL;
	n = set->nanon + 1;
	na = realloc(set->anon, n * sizeof(*na));
	if (!na)
		return NULL;
	set->anon = na;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->addr = OFI_SOCK_ANON_ADDR + set->nanon;
	p->sa = *sa;
	dlist_init(&p->txq);
	set->anon[set->nanon++] = p;
	return p;
}

/*
 * @p (in the AV) has no connection: take over an anonymous peer's, made
 * by the same address before it was inserted. The anonymous entry then
 * stands for @p, and what it had queued goes first.
 */
struct sock_conn *sock_adopt(struct ofi_sock_set *set, struct sock_peer *p)
{
	struct sock_peer *a;
	struct sock_conn *c;
	struct dlist_entry *e;
	size_t i;

	for (i = 0; i < set->nanon; i++) {
		a = set->anon[i];
		/* A draining connection is ours: taken in any state, so
		 * its frames and the new ones share it, in order. */
		if (!a || a->alias || !a->conn || a->conn->state == SOCK_SHUT ||
		    (a->conn->state != SOCK_ACTIVE && !a->drain) ||
		    ofi_sock_addr_cmp(&a->sa, &p->sa))
			continue;
		c = a->conn;
		a->conn = NULL;
		a->alias = p;
		a->drain = false;
		c->peer = p;
		p->conn = c;
		while ((e = a->txq.prev) != &a->txq) {
			dlist_remove(e);
			dlist_insert_head(e, &p->txq);
		}
		return c;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Handshake.                                                         */

static void sock_answer(struct ofi_sock_set *set, struct sock_conn *c,
			int status)
{
	c->hs_len = set->ops->hs_build(set->ctx, c->hs, sizeof(c->hs), true,
				       status);
	c->hs_off = 0;
	c->close_after_hs = status != 0;
	if (!status)
		c->state = SOCK_ACTIVE;
	(void)sock_watch(set, c, EPOLLIN | EPOLLOUT);
}

/* The acceptor got a request: keep it, or keep the connection we made. */
static int sock_hs_request(struct ofi_sock_set *set, struct sock_conn *c)
{
	struct sock_peer *p;
	struct sock_conn *old;
	fi_addr_t addr;

	addr = set->ops->lookup(set->ctx, &c->sa);
	if (!ofi_sock_addr_cmp(&c->sa, &set->laddr)) {
		/* Our own connection to ourselves (a send to our own
		 * address): the connecting end carries the data, this end
		 * only receives it, as coming from our own fi_addr. */
		c->src = addr;
		sock_answer(set, c, 0);
		return 0;
	}
	p = sock_peer_get(set, addr, true);
	if (!p) {
		/* Not in the AV: answered through an anonymous entry,
		 * until a send to its address adopts the connection. */
		p = sock_anon_get(set, &c->sa);
		if (!p) {
			sock_answer(set, c, FI_ENOMEM);
			return 0;
		}
		if (p->conn) /* it connects again: the old one is stale */
			sock_conn_close(set, p->conn, 0);
		/* A new endpoint may listen where a failed one did (ports
		 * are reused): it has no AV entry to be removed from, so
		 * its new connection starts it afresh. */
		p->failed = 0;
		c->peer = p;
		p->conn = c;
		sock_answer(set, c, 0);
		return 0;
	}
	old = p->conn;
	if (old && old->state == SOCK_ACTIVE) {
		sock_answer(set, c, FI_EALREADY);
		return 0;
	}
	if (old && ofi_sock_addr_cmp(&set->laddr, &c->sa) < 0) {
		/* We are lower: our own attempt wins. */
		sock_answer(set, c, FI_EALREADY);
		return 0;
	}
	if (old) {
		old->peer = NULL; /* it loses: no failure to report */
		sock_conn_close(set, old, 0);
	}
	c->peer = p;
	p->conn = c;
	sock_answer(set, c, 0);
	return 0;
}

/*
 * @p, draining, lost its connection to a race: the peer's own connection
 * to us, if we accepted it already, carries its frames. Otherwise they
 * wait for it (sock_anon_get hands it to @p).
 */
static void sock_drain_move(struct ofi_sock_set *set, struct sock_peer *p)
{
	struct sock_peer *a;
	struct dlist_entry *e;
	size_t i;
	int ret;

	for (i = 0; i < set->nanon; i++) {
		a = set->anon[i];
		if (!a || a == p || a->alias || a->drain || !a->conn ||
		    a->conn->state != SOCK_ACTIVE ||
		    ofi_sock_addr_cmp(&a->sa, &p->sa))
			continue;
		while ((e = dlist_pop_front(&p->txq)))
			dlist_insert_tail(e, &a->txq);
		p->drain = false;
		ret = sock_flush(set, a->conn);
		if (ret)
			sock_conn_close(set, a->conn, ret < 0 ? -ret : ret);
		return;
	}
}

int sock_hs_frame(struct ofi_sock_set *set, struct sock_conn *c, size_t len)
{
	struct sock_peer *p;
	int status = 0, ret;
	bool resp = c->state == SOCK_HS_SENT;

	ret = set->ops->hs_parse(set->ctx, c->head, len, resp, &c->sa, &status);
	if (ret)
		return ret;
	if (!resp) {
		c->have_sa = true;
		return sock_hs_request(set, c);
	}
	if (status || !c->peer) {
		/* Rejected: the peer keeps the connection it made to us. */
		p = c->peer;
		sock_conn_close(set, c, 0);
		if (p && p->drain)
			sock_drain_move(set, p);
		return 0;
	}
	c->state = SOCK_ACTIVE;
	return sock_flush(set, c);
}

/* ------------------------------------------------------------------ */
/* Accepting.                                                         */

void sock_accept(struct ofi_sock_set *set)
{
	struct sock_conn *c;
	int fd;

	for (;;) {
		fd = accept4(set->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or nothing we can act on */
		if (sock_setup_fd(fd) ||
		    !(c = sock_conn_new(set, fd, SOCK_HS_WAIT)))
			close(fd);
	}
}

/* ------------------------------------------------------------------ */
/* Connection-oriented use (one peer per set, made explicitly).       */

int ofi_sock_connect(struct ofi_sock_set *set, fi_addr_t addr)
{
	struct sock_peer *p = sock_peer_get(set, addr, true);

	if (!p)
		return -FI_EINVAL;
	return p->conn ? 0 : sock_connect(set, p);
}

int ofi_sock_attach(struct ofi_sock_set *set, int fd, fi_addr_t addr,
		    const void *hs, size_t hs_len, bool held)
{
	struct sock_peer *p;
	struct sock_conn *c;
	int ret;

	if (fd < 0 || hs_len > OFI_SOCK_HS_MAX || (hs_len && !hs))
		return -FI_EINVAL;
	p = sock_peer_get(set, addr, true);
	if (!p || p->conn)
		return -FI_EINVAL;
	ret = sock_setup_fd(fd);
	if (ret)
		return ret;
	c = sock_conn_new(set, fd, SOCK_ACTIVE);
	if (!c)
		return -FI_ENOMEM;
	c->peer = p;
	c->sa = p->sa;
	c->have_sa = true;
	memcpy(c->hs, hs, hs_len);
	c->hs_len = hs_len;
	c->hs_held = held;
	p->conn = c;
	(void)sock_watch(set, c, EPOLLIN | EPOLLOUT);
	ret = sock_flush(set, c);
	if (ret) {
		/* The fd is ours now: the close reports it like any loss. */
		sock_conn_close(set, c, ret < 0 ? -ret : ret);
		sock_reap(set);
	}
	return 0;
}

void ofi_sock_release(struct ofi_sock_set *set, fi_addr_t addr)
{
	struct sock_peer *p = sock_peer_get(set, addr, false);
	struct sock_conn *c = p ? p->conn : NULL;
	int ret;

	if (!c || !c->hs_held)
		return;
	c->hs_held = false;
	ret = sock_flush(set, c);
	if (ret) {
		sock_conn_close(set, c, ret < 0 ? -ret : ret);
		sock_reap(set);
	}
}
