/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_sock_poll.c - the stream-socket connection layer's progress
 * (ofi_sock.h; what the pieces share is in util_sock_priv.h): the epoll
 * set and what each connection asks of it, socket events, the direct
 * read of the likeliest connection in place of epoll_wait() (hot
 * polls), the lone connection that leaves the epoll set while it is
 * read directly (quiet) and comes back before anyone sleeps, the end of
 * a receive batch, ofi_sock_progress, and whether work is left
 * (ofi_sock_pending, ofi_sock_linger).
 */
#include <unistd.h>

#include "ofi_yield.h"
#include "util_sock_priv.h"

/*
 * The direct read of the likeliest connection stands in for epoll_wait()
 * in at most this many polls in a row while it finds bytes (one in two
 * while it finds none), and, when the set has other connections, only
 * within SOCK_HOT_NS of the last epoll_wait(): they, blocked writers and
 * the listener wait at most that long. A poller slower than that (one
 * that polls now and then, or yields a shared core between polls) asks
 * epoll every time.
 */
#define SOCK_HOT_POLLS 8
#define SOCK_HOT_NS    100000
/*
 * A set with one connection (two ranks, a client and its server) has no
 * other to miss: the direct read is the whole answer for it, and epoll
 * is needed only for the listener and the wake fd, which can wait. Its
 * direct reads go on whether they find bytes or not, epoll_wait() only
 * every SOCK_HOT_LONE_POLLS polls however slow the poller: a two-rank
 * barrier took one epoll_wait() every other call, and reading the clock
 * for SOCK_HOT_NS at each poll cost it up to 0.18 us of its 9.9. A wake
 * of the set's own fd (a corked burst) stays until that epoll_wait():
 * epoll at the next poll instead cost windowed small writes on a shared
 * core 7%.
 */
#define SOCK_HOT_LONE_POLLS 64
/*
 * A set with no connection at all (tcp's peers all on its same-host
 * path) has only the listener and the wake fd to watch: a spinning poll
 * asks epoll every SOCK_HOT_LONE_POLLS polls, or at a poll that finds
 * SOCK_HOT_NS gone since the last epoll_wait() (the clock read at the
 * first poll after it and every SOCK_EMPTY_CLOCK_POLLS after that, so a
 * slow poller still asks every time). An epoll_wait() per poll was a
 * quarter of an MPI rank's CPU in a loop of broadcasts over tcp's
 * same-host path.
 */
#define SOCK_EMPTY_CLOCK_POLLS 8
/*
 * Quiet. A socket in an epoll set costs every frame that comes to it a
 * wake-up of that set, run by the sender's send() (over loopback the
 * receiving half of TCP runs there), even while nobody waits on the set:
 * a bare socket's 8-byte round of a barrier took 7.9-8.05 us here, one
 * in an epoll set 8.15-8.3. So the lone connection of a set that its
 * poller reads directly (SOCK_HOT_LONE_POLLS) leaves the epoll set
 * (EPOLL_CTL_DEL) at the SOCK_QUIET_POLLS-th poll of such a run: every
 * poll reads it anyway, epoll_wait's turns too (sock_progress_poll). It
 * comes back (EPOLL_CTL_ADD) before anyone sleeps on the set (a blocking
 * poll, ofi_sock_arm), and when a second connection, a blocked write or
 * a stall needs epoll again. Only where the owner allows it
 * (ofi_sock_set_quiet: nobody sleeps on the fd without ofi_sock_arm
 * first), and ops->quiet then wakes whoever sleeps on the fd already (a
 * thread asleep while another one polls), so that it arms again. Not
 * within SOCK_QUIET_ARMED_NS of the last arm: such a sleeper and poller
 * would otherwise trade the connection every few polls, a wake-up and
 * two epoll_ctl() calls each time.
 */
#define SOCK_QUIET_POLLS    16
#define SOCK_QUIET_ARMED_NS (10 * 1000000ULL)

/* The quiet connection back in the epoll set, with its events. */
int sock_unquiet(struct ofi_sock_set *set)
{
	struct epoll_event ev = sock_no_event;
	struct sock_conn *c = set->quiet;

	if (!c)
		return 0;
	set->quiet = NULL;
	ev.events = c->events;
	ev.data.ptr = c;
	return epoll_ctl(set->epfd, EPOLL_CTL_ADD, c->fd, &ev) ? -sock_err()
							       : 0;
}

OFI_HOT int sock_watch(struct ofi_sock_set *set, struct sock_conn *c,
		       uint32_t events)
{
	struct epoll_event ev = sock_no_event;

	if (c->rx == SOCK_RX_STALLED)
		events &= ~(uint32_t)EPOLLIN;
	if (events == c->events)
		return 0;
	if (c == set->quiet) {
		c->events = events;
		return sock_unquiet(set);
	}
	ev.events = events;
	ev.data.ptr = c;
	if (epoll_ctl(set->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		return -sock_err();
	c->events = events;
	return 0;
}

static void sock_wake_drain(struct ofi_sock_set *set)
{
	uint64_t n;

	(void)!read(set->wakefd, &n, sizeof(n));
	set->woken = false;
}

static void sock_event(struct ofi_sock_set *set, struct sock_conn *c,
		       uint32_t ev)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (c->state == SOCK_CLOSED)
		return;
	if (c->state == SOCK_CONNECTING && (ev & (EPOLLOUT | EPOLLERR))) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) ||
		    err) {
			sock_conn_close(set, c, err ? err : FI_ECONNREFUSED);
			return;
		}
		c->state = SOCK_HS_SENT;
	}
	if (c->rx == SOCK_RX_STALLED && (ev & (EPOLLERR | EPOLLHUP))) {
		sock_conn_close(set, c, FI_ECONNRESET);
		return;
	}
	if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		err = sock_recv(set, c);
		if (err) {
			sock_conn_close(set, c, err);
			return;
		}
	}
	if (c->state != SOCK_CLOSED && (ev & EPOLLOUT)) {
		err = sock_flush(set, c);
		if (err)
			sock_conn_close(set, c, err < 0 ? -err : err);
	}
}

/* The set's only connection is @c (SOCK_HOT_LONE_POLLS). */
static bool sock_hot_lone(struct ofi_sock_set *set, struct sock_conn *c)
{
	return set->nconns == 1 && set->conns.next == &c->entry;
}

/* @c may stay out of the epoll set (SOCK_QUIET_POLLS). */
static bool sock_quiet_fits(struct ofi_sock_set *set, struct sock_conn *c)
{
	return c->state == SOCK_ACTIVE && c->rx != SOCK_RX_STALLED &&
	       c->events == EPOLLIN && sock_hot_lone(set, c);
}

/* At the SOCK_QUIET_POLLS-th direct read of @c in a run: quiet. */
static void sock_go_quiet(struct ofi_sock_set *set, struct sock_conn *c)
{
	if (!set->quiet_ok || !set->ops->quiet || set->quiet ||
	    !sock_quiet_fits(set, c) ||
	    (set->armed_ns &&
	     ofi_gettime_ns() - set->armed_ns < SOCK_QUIET_ARMED_NS))
		return;
	if (epoll_ctl(set->epfd, EPOLL_CTL_DEL, c->fd, NULL))
		return;
	set->quiet = c;
	set->ops->quiet(set->ctx);
}

/* Back in the epoll set, or closed if it cannot be. */
static void sock_unquiet_or_close(struct ofi_sock_set *set)
{
	struct sock_conn *c = set->quiet;
	int err = sock_unquiet(set);

	if (err)
		sock_conn_close(set, c, -err);
}

/*
 * The connection this poll may read instead of asking epoll, or NULL:
 * a spinning poll (timeout 0) soon after the last epoll_wait(), not too
 * many in a row, and the connection only waits to read (a blocked writer
 * needs EPOLLOUT).
 */
static struct sock_conn *sock_hot_turn(struct ofi_sock_set *set, int timeout_ms)
{
	struct sock_conn *c = sock_hot_pick(set);
	bool lone;

	if (timeout_ms || !c || c->state != SOCK_ACTIVE ||
	    c->rx == SOCK_RX_STALLED || c->events != EPOLLIN)
		return NULL;
	lone = sock_hot_lone(set, c);
	if (set->hot_polls >= (lone ? SOCK_HOT_LONE_POLLS : SOCK_HOT_POLLS) ||
	    (!lone && ofi_gettime_ns() - set->epoll_ns > SOCK_HOT_NS))
		return NULL;
	set->hot_polls++;
	return c;
}

/* Reads @c; 1 when it had bytes, else 0. */
static int sock_poll_hot(struct ofi_sock_set *set, struct sock_conn *c)
{
	uint64_t nread = set->nread;
	int err;

	set->defer++;
	set->counts.hot_reads++;
	err = sock_recv(set, c);
	if (err)
		sock_conn_close(set, c, err);
	if (set->nread != nread)
		set->counts.hot_hits++;
	/* Nothing there: epoll's turn next, so while all is quiet the two
	 * alternate and other connections wait at most one poll; unless
	 * the guess has been right lately (SOCK_HOT_SURE) or has no other
	 * connection to miss (SOCK_HOT_LONE_POLLS). */
	if (set->nread == nread && set->sure < SOCK_HOT_SURE &&
	    !sock_hot_lone(set, c))
		set->hot_polls = SOCK_HOT_POLLS;
	if (set->hot_polls == SOCK_QUIET_POLLS && !err)
		sock_go_quiet(set, c);
	sock_batch_end(set);
	return set->nread != nread || err;
}

/* Whether this poll of a set without connections skips epoll. */
static bool sock_empty_skip(struct ofi_sock_set *set)
{
	if (++set->hot_polls >= SOCK_HOT_LONE_POLLS)
		return false;
	if (set->hot_polls % SOCK_EMPTY_CLOCK_POLLS != 1)
		return true;
	return ofi_gettime_ns() - set->epoll_ns <= SOCK_HOT_NS;
}

static OFI_HOT int sock_progress_poll(struct ofi_sock_set *set, int timeout_ms)
{
	struct epoll_event ev[32];
	struct sock_conn *c, *quiet;
	int n, i, err;

	/* A new epoch: sends from here on start a new burst; the last
	 * burst's corked frames leave now. */
	set->epoch++;
	if (!set->defer && !dlist_empty(&set->flushq)) {
		sock_flush_deferred(set);
		sock_reap(set);
	}
	c = sock_hot_turn(set, timeout_ms);
	if (c)
		return sock_poll_hot(set, c);
	if (!timeout_ms && !set->nconns && sock_empty_skip(set))
		return 0;
	quiet = set->quiet;
	if (quiet && (timeout_ms || !sock_quiet_fits(set, quiet))) {
		sock_unquiet_or_close(set);
		quiet = NULL;
	}
	set->hot_polls = 0;
	n = epoll_wait(set->epfd, ev, OFI_ARRAY_SIZE(ev), timeout_ms);
	set->epoll_ns = ofi_gettime_ns();
	set->counts.epolls++;
	if (n < 0)
		return errno == EINTR ? 0 : -sock_err();
	set->defer++;
	for (i = 0; i < n; i++) {
		if (!ev[i].data.ptr)
			sock_accept(set);
		else if (ev[i].data.ptr == &set->wakefd)
			sock_wake_drain(set);
		else
			sock_event(set, ev[i].data.ptr, ev[i].events);
	}
	/* epoll could not say it: read as a hot poll would */
	if (quiet && set->quiet == quiet) {
		err = sock_recv(set, quiet);
		if (err)
			sock_conn_close(set, quiet, err);
	}
	sock_batch_end(set);
	return n;
}

OFI_HOT int ofi_sock_progress(struct ofi_sock_set *set, int timeout_ms)
{
	int ret = sock_progress_poll(set, timeout_ms);

	/* Frames moved are work, not an idle poll: an RMA target whose
	 * application only polls an empty CQ must not nap while writes
	 * keep arriving (ofi_yield.h). */
	if (ret > 0)
		ofi_yield_busy();
	return ret;
}

static bool sock_tx_busy(struct ofi_sock_set *set)
{
	size_t i;

	for (i = 0; i < set->npeers; i++) {
		if (set->peers[i] && !dlist_empty(&set->peers[i]->txq))
			return true;
	}
	for (i = 0; i < set->nanon; i++) {
		if (set->anon[i] && !dlist_empty(&set->anon[i]->txq))
			return true;
	}
	return false;
}

bool ofi_sock_pending(struct ofi_sock_set *set)
{
	struct dlist_entry *e;
	struct sock_conn *c;

	if (!dlist_empty(&set->flushq) || !dlist_empty(&set->zombies) ||
	    sock_tx_busy(set))
		return true;
	dlist_foreach(&set->conns, e) {
		c = container_of(e, struct sock_conn, entry);
		/* A shut one waits for an EOF, which epoll announces. */
		if (c->state != SOCK_ACTIVE && c->state != SOCK_SHUT)
			return true;
	}
	return false;
}

int ofi_sock_linger(struct ofi_sock_set *set, int timeout_ms)
{
	uint64_t end = ofi_gettime_ms() + (uint64_t)timeout_ms;

	while (sock_tx_busy(set)) {
		if (ofi_gettime_ms() >= end)
			return -FI_ETIMEDOUT;
		if (ofi_sock_progress(set, 10) < 0)
			return -FI_EIO;
	}
	return 0;
}

void ofi_sock_arm(struct ofi_sock_set *set)
{
	set->armed_ns = ofi_gettime_ns();
	sock_unquiet_or_close(set);
}

void ofi_sock_set_quiet(struct ofi_sock_set *set, bool ok)
{
	set->quiet_ok = ok;
	if (!ok)
		sock_unquiet_or_close(set);
}

void ofi_sock_get_poll_counts(struct ofi_sock_set *set,
			      struct ofi_sock_poll_counts *counts)
{
	*counts = set->counts;
}
