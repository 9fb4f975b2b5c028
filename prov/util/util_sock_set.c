/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_sock_set.c - the stream-socket connection layer's sets (ofi_sock.h;
 * what the pieces share is in util_sock_priv.h): opening one, with a
 * listening socket or without (connection-oriented use), closing it
 * with every queued frame handed back, a peer leaving the AV (its done
 * frames drained first) or aborted, and the set's accessors.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util_sock_priv.h"

static void sock_set_free(struct ofi_sock_set *set)
{
	if (set->lfd >= 0)
		close(set->lfd);
	if (set->wakefd >= 0)
		close(set->wakefd);
	if (set->epfd >= 0)
		close(set->epfd);
	free(set);
}

/* A set with its epoll fd and wake-up eventfd, no listener yet. */
static int sock_set_alloc(const struct ofi_sock_ops *ops, void *ctx,
			  struct ofi_sock_set **setp)
{
	struct epoll_event ev = sock_no_event;
	struct ofi_sock_set *set;
	int ret;

	set = calloc(1, sizeof(*set));
	if (!set)
		return -FI_ENOMEM;
	set->ops = ops;
	set->ctx = ctx;
	set->lfd = -1;
	set->epoch = 1;
	dlist_init(&set->conns);
	dlist_init(&set->zombies);
	dlist_init(&set->flushq);
	set->epfd = epoll_create1(EPOLL_CLOEXEC);
	set->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev.events = EPOLLIN;
	ev.data.ptr = &set->wakefd;
	if (set->epfd < 0 || set->wakefd < 0 ||
	    epoll_ctl(set->epfd, EPOLL_CTL_ADD, set->wakefd, &ev)) {
		ret = -sock_err();
		sock_set_free(set);
		return ret;
	}
	*setp = set;
	return 0;
}

int ofi_sock_set_open(const struct ofi_sock_ops *ops, void *ctx,
		      const struct sockaddr *addr, socklen_t addrlen,
		      struct ofi_sock_set **setp)
{
	struct epoll_event ev = sock_no_event;
	struct ofi_sock_set *set;
	socklen_t len = sizeof(set->laddr);
	int ret, one = 1;

	if (!ops || !addr || !setp || ops->min_head == 0 ||
	    ops->max_head < ops->min_head || ops->max_head > OFI_SOCK_HS_MAX ||
	    (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return -FI_EINVAL;
	ret = sock_set_alloc(ops, ctx, &set);
	if (ret)
		return ret;
	set->lfd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (set->lfd < 0)
		goto err_errno;
	/* A port of a previous run may linger in TIME_WAIT. */
	(void)setsockopt(set->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sock_setup_fd(set->lfd) || bind(set->lfd, addr, addrlen) ||
	    listen(set->lfd, 128) ||
	    getsockname(set->lfd, (struct sockaddr *)&set->laddr, &len))
		goto err_errno;
	ev.events = EPOLLIN;
	ev.data.ptr = NULL; /* the listener */
	if (epoll_ctl(set->epfd, EPOLL_CTL_ADD, set->lfd, &ev))
		goto err_errno;
	*setp = set;
	return 0;
err_errno:
	ret = -sock_err();
	sock_set_free(set);
	return ret;
}

int ofi_sock_set_open_client(const struct ofi_sock_ops *ops, void *ctx,
			     const struct sockaddr *bind_addr,
			     socklen_t bind_len, struct ofi_sock_set **setp)
{
	struct ofi_sock_set *set;
	int ret;

	if (!ops || !setp || ops->min_head == 0 ||
	    ops->max_head < ops->min_head || ops->max_head > OFI_SOCK_HS_MAX ||
	    bind_len > sizeof(set->bind_sa) || (bind_len && !bind_addr))
		return -FI_EINVAL;
	ret = sock_set_alloc(ops, ctx, &set);
	if (ret)
		return ret;
	ofi_sock_set_bind(set, bind_addr, bind_len);
	*setp = set;
	return 0;
}

void ofi_sock_set_bind(struct ofi_sock_set *set, const struct sockaddr *sa,
		       socklen_t len)
{
	memset(&set->bind_sa, 0, sizeof(set->bind_sa));
	set->bind_len = 0;
	if (!sa || !len || len > sizeof(set->bind_sa))
		return;
	memcpy(&set->bind_sa, sa, len);
	set->bind_len = len;
}

/* ------------------------------------------------------------------ */
/* Peers leaving.                                                     */

/*
 * Cancels what @p queued but the frames marked done, which the
 * application was told were sent, and the first one when it may be
 * partly written (the stream would break). True when some are left.
 */
static bool sock_keep_done(struct ofi_sock_set *set, struct sock_peer *p)
{
	struct dlist_entry *e, *next;
	struct ofi_sock_tx *tx;
	bool started = p->conn->state == SOCK_ACTIVE, kept = false;

	for (e = p->txq.next; e != &p->txq; e = next) {
		next = e->next;
		tx = container_of(e, struct ofi_sock_tx, entry);
		if (tx->done || (started && e == p->txq.next)) {
			kept = true;
			continue;
		}
		dlist_remove(e);
		set->ops->send_done(set->ctx, tx, FI_ECANCELED);
	}
	return kept;
}

/* @p leaves the AV but keeps its connection, as an anonymous peer,
 * until its queue is written (sock_flush closes it then). */
static bool sock_drain(struct ofi_sock_set *set, struct sock_peer *p)
{
	struct sock_peer **na;

	if (set->nanon >= (1U << 20))
		return false;
	na = realloc(set->anon, (set->nanon + 1) * sizeof(*na));
	if (!na)
		return false;
	set->anon = na;
	p->addr = OFI_SOCK_ANON_ADDR + set->nanon;
	p->drain = true;
	set->anon[set->nanon++] = p;
	return true;
}

static void sock_remove(struct ofi_sock_set *set, fi_addr_t addr, bool keep)
{
	struct sock_peer *p;
	struct sock_conn *c;
	size_t i;

	if (addr >= OFI_SOCK_ANON_ADDR)
		return;
	p = sock_peer_get(set, addr, false);
	if (!p)
		return;
	set->peers[addr] = NULL;
	for (i = 0; i < set->nanon; i++) {
		if (set->anon[i] && set->anon[i]->alias == p) {
			free(set->anon[i]);
			set->anon[i] = NULL;
		}
	}
	c = p->conn;
	/* An idle connection drains too: its peer may be writing to it. */
	if (keep && c && (sock_keep_done(set, p) || c->state == SOCK_ACTIVE) &&
	    sock_drain(set, p)) {
		if (dlist_empty(&p->txq))
			sock_conn_shut(set, c);
		return;
	}
	if (c) {
		c->peer = NULL;
		p->conn = NULL;
		sock_conn_close(set, c, 0);
	}
	sock_fail_txq(set, p, FI_ECANCELED);
	free(p);
	sock_reap(set);
}

void ofi_sock_remove_peer(struct ofi_sock_set *set, fi_addr_t addr)
{
	sock_remove(set, addr, true);
}

void ofi_sock_abort_peer(struct ofi_sock_set *set, fi_addr_t addr)
{
	sock_remove(set, addr, false);
}

/* ------------------------------------------------------------------ */
/* Closing, and what a set answers.                                   */

void ofi_sock_set_close(struct ofi_sock_set *set)
{
	struct dlist_entry *e;
	size_t i;

	if (!set)
		return;
	/* Through the usual close, so frames in flight are aborted and the
	 * upper layer gets back every context it handed us. */
	while (!dlist_empty(&set->conns)) {
		e = set->conns.next;
		sock_conn_close(set, container_of(e, struct sock_conn, entry),
				FI_ECANCELED);
	}
	for (i = 0; i < set->npeers; i++) {
		if (!set->peers[i])
			continue;
		sock_fail_txq(set, set->peers[i], FI_ECANCELED);
		free(set->peers[i]);
	}
	for (i = 0; i < set->nanon; i++) {
		if (!set->anon[i])
			continue;
		sock_fail_txq(set, set->anon[i], FI_ECANCELED);
		free(set->anon[i]);
	}
	sock_reap(set);
	free(set->peers);
	free(set->anon);
	sock_set_free(set);
}

int ofi_sock_peer_sa(struct ofi_sock_set *set, fi_addr_t addr,
		     struct sockaddr_storage *sa)
{
	struct sock_peer *p = sock_peer_get(set, addr, false);

	if (!p)
		return -FI_EINVAL;
	*sa = p->sa;
	return 0;
}

int ofi_sock_getname(struct ofi_sock_set *set, struct sockaddr_storage *sa)
{
	*sa = set->laddr;
	return 0;
}

int ofi_sock_fd(struct ofi_sock_set *set)
{
	return set->epfd;
}

size_t ofi_sock_conn_count(struct ofi_sock_set *set)
{
	return set->nconns;
}
