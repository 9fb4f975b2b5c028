/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_sock.c - the stream-socket connection layer (ofi_sock.h): listening
 * socket, epoll progress, per-peer connection table and send queues,
 * handshake and simultaneous-connect resolution, the receive state
 * machine and failure reporting. The design notes are in ofi_sock.h.
 *
 * Lifetime: a connection that fails or loses a race is unlinked and its
 * fd closed at once, but its memory waits on a zombie list until the end
 * of the progress call, since an event of the same epoll batch may still
 * point at it.
 *
 * Syscalls per frame. Each connection reads ahead into a staging buffer
 * (SOCK_RBUF): one recv() brings in as many heads and small payloads
 * as the socket holds, which are parsed from there, payloads copied to
 * where recv_head says. A payload not yet staged is read straight into
 * its destination (no copy, however large) by one readv() whose last
 * piece is the staging buffer, so whatever follows it comes in with it;
 * after a large payload only SOCK_PEEK bytes are read ahead, so the next
 * large one is not staged either. A read shorter than asked drained the
 * socket: no recv() just to hear EAGAIN (epoll is level-triggered,
 * nothing is missed). Frames the receive path sends (answers, ACKs) are
 * queued and written together when the batch is done, many to a
 * sendmsg(); so are the frames of a burst of application sends (see
 * SOCK_CORK_AFTER), their small pieces copied into one first
 * (sock_tx_coalesce). And a progress poll (timeout 0) that comes soon
 * after the last one reads the connection that had traffic last
 * directly, without epoll_wait(); every few polls, or when it is quiet,
 * epoll_wait() looks at all the others again. Small messages thus cost
 * one send() and one recv(), as over a bare socket. Which connection
 * that is follows the traffic: the one read last (a stream, a tree's
 * parent) or, in exchanges that alternate peers (recursive doubling,
 * requests to several servers), the one written last.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ofi_sock.h"
#include "ofi_yield.h"

enum sock_state {
	SOCK_CONNECTING, /* connect() in progress, request queued */
	SOCK_HS_SENT,	 /* connector: request written, awaiting answer */
	SOCK_HS_WAIT,	 /* acceptor: awaiting the request */
	SOCK_ACTIVE,
	SOCK_CLOSED,
};

/* Read-ahead per connection: a window of small frames in one recv(). */
#define SOCK_RBUF (32 * 1024)
/*
 * After a payload of SOCK_BIG bytes or more, the next frame is likely
 * large too: read ahead only SOCK_PEEK bytes (its head, whatever small
 * frames follow), so its payload goes from the socket to its destination
 * instead of through the staging buffer and a copy.
 */
#define SOCK_BIG  (16 * 1024)
#define SOCK_PEEK 1024
/* iovs one sendmsg() gathers from a peer's queued frames. */
#define SOCK_TX_GATHER 128
/* sock_tx_coalesce: pieces up to this size are copied, into a buffer
 * of that many bytes. */
#define SOCK_COALESCE_PIECE 256
#define SOCK_COALESCE_BUF   8192
/*
 * Corking. The application posts SOCK_CORK_AFTER sends to a connection
 * with no progress call in between: more are likely to follow (a window
 * of non-blocking sends), so the next ones marked may_wait are queued
 * and leave together at the next progress call, or once SOCK_CORK_MAX
 * frames or SOCK_CORK_BYTES bytes wait. A frame larger than that, one
 * not marked may_wait, and every frame of a connection that saw progress
 * since its last send, is written at once (with what waits before it).
 * The set's eventfd wakes a thread asleep on the epoll fd, so it
 * progresses (and flushes) at once. One send is enough to start corking:
 * a lone send (a ping-pong, a request) still leaves at once, and every
 * frame of a burst after its first shares a sendmsg(), where four single
 * writes cost as much CPU as the rest of a window of 64 small writes,
 * which hurts most when the peer waits for this core. The bounds let a
 * window of 64 writes of 1 KiB (two iovs each: SOCK_TX_GATHER) leave in
 * one sendmsg(): a third of the sender's CPU on a shared core went into
 * sendmsg() calls when it took four.
 */
#define SOCK_CORK_AFTER 1
#define SOCK_CORK_MAX	64
#define SOCK_CORK_BYTES (80 * 1024)
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
 * A direct read that finds nothing leaves the next poll to epoll, unless
 * the last SOCK_HOT_SURE reads with bytes were all on the connection
 * guessed (one peer, or exchanges the guess follows): then the wait
 * goes on reading it, epoll only every SOCK_HOT_POLLS polls, so the
 * frame is most likely taken by one recv() when it comes.
 */
#define SOCK_HOT_SURE 4
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

/* STALLED: a head the upper layer cannot place yet (recv_head -EAGAIN):
 * the connection is not read until ofi_sock_resume(). */
enum sock_rx { SOCK_RX_HEAD, SOCK_RX_PAYLOAD, SOCK_RX_STALLED };

struct sock_peer {
	fi_addr_t addr;
	struct sockaddr_storage sa;
	struct sock_conn *conn; /* in use or being made; NULL: none */
	struct dlist_entry txq; /* struct ofi_sock_tx */
	/* Anonymous peers: the AV peer that adopted the connection. */
	struct sock_peer *alias;
	/* Its connection failed (positive fi_errno): sends answer it. */
	int failed;
	/*
	 * Removed from the AV with frames the application was told were
	 * sent: an anonymous peer now, whose connection closes once they
	 * are written (ofi_sock_remove_peer).
	 */
	bool drain;
};

struct sock_conn {
	struct dlist_entry entry; /* set->conns or set->zombies */
	struct sock_peer *peer;	  /* NULL: anonymous or losing */
	fi_addr_t src;		  /* without a peer: what recv_head is told */
	int fd;
	enum sock_state state;
	uint32_t events;
	struct sockaddr_storage sa; /* the peer's listening address */
	bool have_sa;
	/* handshake frame to write first */
	uint8_t hs[OFI_SOCK_HS_MAX];
	size_t hs_len, hs_off;
	bool close_after_hs; /* a reject: close once written */
	bool hs_held;	     /* nothing written until ofi_sock_release */
	/* receive */
	enum sock_rx rx;
	size_t have, need;
	uint64_t left;	  /* payload bytes still to read */
	uint64_t payload; /* of the current (or stalled) frame */
	size_t frame_len; /* handshake: head and payload bytes */
	void *frame;	  /* the upper layer's, from recv_head */
	struct iovec iov[OFI_SOCK_RX_IOV];
	size_t iov_cnt, iov_idx;
	bool discard, hs_frame;
	bool held; /* the read that completed the payload kept its hold */
	bool kick; /* resumed with staged bytes or none left: go on now */
	/* read-ahead: rbuf[rpos, rlen) came from the socket, not parsed yet */
	uint8_t *rbuf;
	size_t rpos, rlen;
	/* frames wait on set->flushq: deferred answers, or corked */
	struct dlist_entry flush_entry;
	bool flush_queued;
	bool big; /* the last payload was SOCK_BIG or more: peek ahead */
	/* sends written at once in progress epoch burst_epoch */
	uint64_t burst_epoch;
	unsigned burst;
	/* corked: frames and bytes queued for the next progress call */
	unsigned cork_n;
	size_t cork_bytes;
	uint8_t head[];
};

struct ofi_sock_set {
	const struct ofi_sock_ops *ops;
	void *ctx;
	int epfd, lfd;
	struct sockaddr_storage laddr;
	struct sock_peer **peers;
	size_t npeers;
	struct sock_peer **anon; /* by addr - OFI_SOCK_ANON_ADDR */
	size_t nanon;
	struct dlist_entry conns, zombies;
	size_t nconns;
	size_t nstalled; /* connections in SOCK_RX_STALLED */
	/* The receive path runs: sends are queued on flushq and written
	 * together at its end. Corked connections wait there too. */
	int defer;
	struct dlist_entry flushq;
	/*
	 * Polled without epoll: the connection that read bytes last, or
	 * the one an application send wrote last while follow_tx (bytes
	 * came there when the other guess missed). nread counts reads
	 * that brought bytes; sure, those in a row the guess named.
	 */
	struct sock_conn *hot, *sent;
	/* out of the epoll set, read at every poll (SOCK_QUIET_POLLS) */
	struct sock_conn *quiet;
	bool quiet_ok;	   /* ofi_sock_set_quiet */
	uint64_t armed_ns; /* the last ofi_sock_arm */
	bool follow_tx;
	unsigned sure;
	unsigned hot_polls;
	uint64_t epoll_ns, nread;
	struct ofi_sock_poll_counts counts;
	/* progress calls so far: a burst of sends is one epoch's */
	uint64_t epoch;
	/* in the epoll set: written when sends are corked */
	int wakefd;
	bool woken;
	/* Without a listener: the address connections are made from. */
	struct sockaddr_storage bind_sa;
	socklen_t bind_len;
	/* sock_flush's iovs and coalescing buffer: not on its stack, where
	 * their 10 KiB put every callback it makes pages deeper (see
	 * OFI_HOT). Written before a send, not read after it (a callback
	 * may flush again). */
	struct iovec gather[SOCK_TX_GATHER];
	char coalesce[SOCK_COALESCE_BUF];
};

static const struct epoll_event sock_no_event;

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

static int sock_err(void)
{
	return errno ? errno : FI_EIO;
}

static int sock_setup_fd(int fd)
{
	int one = 1, fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -sock_err();
	/* Ignored on non-TCP sockets; latency matters more than packets. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* The quiet connection back in the epoll set, with its events. */
static int sock_unquiet(struct ofi_sock_set *set)
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

static OFI_HOT int sock_watch(struct ofi_sock_set *set, struct sock_conn *c,
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

static void sock_fail_txq(struct ofi_sock_set *set, struct sock_peer *p,
			  int err)
{
	struct dlist_entry *e;

	while ((e = dlist_pop_front(&p->txq)))
		set->ops->send_done(set->ctx,
				    container_of(e, struct ofi_sock_tx, entry),
				    err);
}

/* Unlinks and closes @c; reports @err for its peer if it was in use. */
static void sock_conn_close(struct ofi_sock_set *set, struct sock_conn *c,
			    int err)
{
	struct sock_peer *p = c->peer;

	if (c->state == SOCK_CLOSED)
		return;
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

static OFI_HOT void sock_reap(struct ofi_sock_set *set)
{
	struct dlist_entry *e;
	struct sock_conn *c;

	while ((e = dlist_pop_front(&set->zombies))) {
		c = container_of(e, struct sock_conn, entry);
		free(c->rbuf);
		free(c);
	}
}

static OFI_HOT struct sock_peer *sock_peer_get(struct ofi_sock_set *set,
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

/* ------------------------------------------------------------------ */
/* Sending.                                                             */

/*
 * Moves iovs @iov[*idx] to @iov[cnt - 1] past @n bytes: those used up are
 * left empty and *idx at the first with bytes left (or at @cnt). Returns
 * what is left of @n beyond them.
 */
static size_t sock_iov_skip(struct iovec *iov, size_t *idx, size_t cnt,
			    size_t n)
{
	struct iovec *v;

	for (; *idx < cnt; (*idx)++) {
		v = &iov[*idx];
		if (n < v->iov_len) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= n;
			return 0;
		}
		n -= v->iov_len;
		v->iov_len = 0;
	}
	return n;
}

/* Advances @p's queued frames past @n bytes written, in order. */
static void sock_tx_advance(struct sock_peer *p, size_t n)
{
	struct ofi_sock_tx *tx;
	struct dlist_entry *e;

	dlist_foreach(&p->txq, e) {
		tx = container_of(e, struct ofi_sock_tx, entry);
		n = sock_iov_skip(tx->iov, &tx->iov_idx, tx->iov_cnt, n);
		if (!n)
			return;
	}
}

/*
 * Gathers the unwritten iovs of @p's queue, oldest first, into @v (room
 * for SOCK_TX_GATHER); returns the count and the bytes in *@len.
 */
static size_t sock_tx_gather(struct sock_peer *p, struct iovec *v, size_t *len)
{
	struct ofi_sock_tx *tx;
	struct dlist_entry *e;
	size_t i, cnt = 0;

	*len = 0;
	dlist_foreach(&p->txq, e) {
		tx = container_of(e, struct ofi_sock_tx, entry);
		for (i = tx->iov_idx; i < tx->iov_cnt; i++) {
			if (cnt == SOCK_TX_GATHER)
				return cnt;
			if (!tx->iov[i].iov_len)
				continue;
			v[cnt++] = tx->iov[i];
			*len += tx->iov[i].iov_len;
		}
	}
	return cnt;
}

/*
 * Copies runs of small pieces of @v (@cnt of them) into @buf, one piece
 * per run, so that the kernel copies a few large pieces instead of many
 * small ones: a window of small frames (a head, a body and a payload of
 * tens of bytes each) spent more time on the kernel's per-piece work
 * than on its bytes. The bytes sent are the same, so a short write is
 * accounted on the queued frames as before. Returns the new count.
 */
static size_t sock_tx_coalesce(struct iovec *v, size_t cnt, char *buf)
{
	size_t i, out = 0, used = 0, n;
	bool open = false; /* v[out - 1] is the run being filled in buf */

	for (i = 0; i < cnt; i++) {
		n = v[i].iov_len;
		if (n > SOCK_COALESCE_PIECE || used + n > SOCK_COALESCE_BUF) {
			v[out++] = v[i];
			open = false;
			continue;
		}
		memcpy(buf + used, v[i].iov_base, n);
		if (open) {
			v[out - 1].iov_len += n;
		} else {
			v[out].iov_base = buf + used;
			v[out++].iov_len = n;
			open = true;
		}
		used += n;
	}
	return out;
}

/* Writes what the socket takes; 0 when drained or blocked, else error. */
static OFI_HOT int sock_flush(struct ofi_sock_set *set, struct sock_conn *c)
{
	struct iovec *v = set->gather;
	struct sock_peer *p = c->peer;
	struct ofi_sock_tx *tx;
	struct msghdr msg;
	size_t cnt, len;
	ssize_t n;

	if (OFI_UNLIKELY(c->hs_held))
		return sock_watch(set, c, EPOLLIN);
	while (c->hs_off < c->hs_len) {
		n = send(c->fd, c->hs + c->hs_off, c->hs_len - c->hs_off,
			 MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN ? 0 : sock_err();
		c->hs_off += (size_t)n;
	}
	if (c->close_after_hs) {
		sock_conn_close(set, c, 0);
		return 0;
	}
	if (c->state != SOCK_ACTIVE || !p)
		return sock_watch(set, c, EPOLLIN);

	while (!dlist_empty(&p->txq)) {
		/* Several queued frames (answers of one batch, sends that
		 * waited for room) leave in one call. */
		cnt = sock_tx_gather(p, v, &len);
		if (cnt > 1)
			cnt = sock_tx_coalesce(v, cnt, set->coalesce);
		n = 0;
		if (cnt == 1) {
			/* A small frame in one piece: no msghdr to copy in. */
			n = send(c->fd, v[0].iov_base, v[0].iov_len,
				 MSG_NOSIGNAL);
		} else if (cnt) {
			memset(&msg, 0, sizeof(msg));
			msg.msg_iov = v;
			msg.msg_iovlen = cnt;
			n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
		}
		set->counts.sends++;
		set->counts.send_pieces += cnt;
		if (n < 0) {
			if (errno == EAGAIN)
				return sock_watch(set, c, EPOLLIN | EPOLLOUT);
			return sock_err();
		}
		sock_tx_advance(p, (size_t)n);
		/* send_done may queue more: take the written ones off one
		 * at a time from the front. */
		while (!dlist_empty(&p->txq)) {
			tx = container_of(p->txq.next, struct ofi_sock_tx,
					  entry);
			if (tx->iov_idx < tx->iov_cnt)
				break;
			dlist_remove(&tx->entry);
			set->ops->send_done(set->ctx, tx, 0);
		}
		if (c->state == SOCK_CLOSED)
			return 0;
		/* Short: the socket is full; EPOLLOUT says when it is not. */
		if ((size_t)n < len)
			return sock_watch(set, c, EPOLLIN | EPOLLOUT);
	}
	if (p->drain) {
		/* A removed address's last frame is written. */
		sock_conn_close(set, c, 0);
		return 0;
	}
	return sock_watch(set, c, EPOLLIN);
}

/* @c's queued frames leave at the end of the receive batch that runs
 * (answers) or at the next progress call (a corked burst). */
static void sock_flush_later(struct ofi_sock_set *set, struct sock_conn *c)
{
	if (c->flush_queued)
		return;
	c->flush_queued = true;
	dlist_insert_tail(&c->flush_entry, &set->flushq);
}

/* Writes what waits on flushq (see sock_flush_later). */
static OFI_HOT void sock_flush_deferred(struct ofi_sock_set *set)
{
	struct dlist_entry *e;
	struct sock_conn *c;
	int ret;

	while ((e = dlist_pop_front(&set->flushq))) {
		c = container_of(e, struct sock_conn, flush_entry);
		c->flush_queued = false;
		c->cork_n = 0;
		c->cork_bytes = 0;
		if (c->state != SOCK_ACTIVE)
			continue;
		ret = sock_flush(set, c);
		if (ret)
			sock_conn_close(set, c, ret < 0 ? -ret : ret);
	}
}

static int sock_connect(struct ofi_sock_set *set, struct sock_peer *p)
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
static struct sock_conn *sock_adopt(struct ofi_sock_set *set,
				    struct sock_peer *p)
{
	struct sock_peer *a;
	struct sock_conn *c;
	struct dlist_entry *e;
	size_t i;

	for (i = 0; i < set->nanon; i++) {
		a = set->anon[i];
		/* A draining connection is ours: taken in any state, so
		 * its frames and the new ones share it, in order. */
		if (!a || a->alias || !a->conn ||
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

static size_t sock_tx_len(const struct ofi_sock_tx *tx)
{
	size_t i, len = 0;

	for (i = tx->iov_idx; i < tx->iov_cnt; i++)
		len += tx->iov[i].iov_len;
	return len;
}

/* A sleeper on the epoll fd must progress: corked frames wait for it. */
static void sock_wake(struct ofi_sock_set *set)
{
	uint64_t one = 1;

	if (set->woken || set->wakefd < 0)
		return;
	set->woken = true;
	(void)!write(set->wakefd, &one, sizeof(one));
}

static void sock_wake_drain(struct ofi_sock_set *set)
{
	uint64_t n;

	(void)!read(set->wakefd, &n, sizeof(n));
	set->woken = false;
}

/*
 * An application send @tx was queued on @c, active: written now, or
 * corked (see SOCK_CORK_AFTER). @first: the queue held nothing before.
 * 0, or a positive fi_errno when the connection failed.
 */
static int sock_send_now(struct ofi_sock_set *set, struct sock_conn *c,
			 struct ofi_sock_tx *tx, bool first)
{
	size_t len = sock_tx_len(tx);
	int ret;

	if (!first && !c->cork_n)
		return 0; /* behind frames that wait for the socket */
	if (c->cork_n) {
		c->cork_n++;
		c->cork_bytes += len;
		if (tx->may_wait && c->cork_n < SOCK_CORK_MAX &&
		    c->cork_bytes < SOCK_CORK_BYTES)
			return 0;
		/* Enough for one write, or one that must not wait: the
		 * burst leaves now. */
		dlist_remove(&c->flush_entry);
		c->flush_queued = false;
		c->cork_n = 0;
		c->cork_bytes = 0;
	} else if (tx->may_wait && c->burst_epoch == set->epoch &&
		   c->burst >= SOCK_CORK_AFTER && len < SOCK_CORK_BYTES) {
		c->cork_n = 1;
		c->cork_bytes = len;
		sock_flush_later(set, c);
		sock_wake(set);
		return 0;
	}
	if (c->burst_epoch != set->epoch) {
		c->burst_epoch = set->epoch;
		c->burst = 0;
	}
	c->burst++;
	ret = sock_flush(set, c);
	return ret < 0 ? -ret : ret;
}

OFI_HOT int ofi_sock_send(struct ofi_sock_set *set, fi_addr_t dest,
			  struct ofi_sock_tx *tx)
{
	struct sock_peer *p;
	struct sock_conn *c;
	bool first;
	int ret;

	if (!tx || tx->iov_cnt > OFI_SOCK_TX_IOV)
		return -FI_EINVAL;
	p = sock_peer_get(set, dest, true);
	if (!p)
		return -FI_EINVAL;
	if (p->failed)
		return -p->failed;
	tx->iov_idx = 0;
	first = dlist_empty(&p->txq);
	dlist_insert_tail(&tx->entry, &p->txq);
	if (!p->conn) {
		c = p->addr < OFI_SOCK_ANON_ADDR ? sock_adopt(set, p) : NULL;
		if (c) {
			first = true;
		} else {
			ret = sock_connect(set, p);
			if (ret) {
				dlist_remove(&tx->entry);
				return ret;
			}
			return 0;
		}
	}
	if (p->conn->state != SOCK_ACTIVE)
		return 0;
	set->sent = p->conn;
	if (set->defer) {
		if (first)
			sock_flush_later(set, p->conn);
		return 0;
	}
	ret = sock_send_now(set, p->conn, tx, first);
	if (ret)
		sock_conn_close(set, p->conn, ret);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Handshake.                                                           */

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

static int sock_hs_frame(struct ofi_sock_set *set, struct sock_conn *c,
			 size_t len)
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
/* Receiving.                                                           */

static fi_addr_t sock_src(struct sock_conn *c)
{
	return c->peer ? c->peer->addr : c->src;
}

/* A head is complete: set up the payload. */
static OFI_HOT int sock_head_done(struct ofi_sock_set *set, struct sock_conn *c,
				  uint64_t payload, bool retry)
{
	uint64_t room = 0;
	size_t i;
	int ret;

	c->hs_frame = c->state == SOCK_HS_SENT || c->state == SOCK_HS_WAIT;
	c->payload = payload;
	c->left = payload;
	c->iov_idx = 0;
	c->discard = false;
	if (!retry)
		c->frame = NULL;
	if (c->hs_frame) {
		/* A handshake's payload joins its head in the buffer. */
		if (payload > set->ops->max_head - c->have)
			return -EPROTO;
		c->frame_len = c->have + (size_t)payload;
		c->iov[0].iov_base = c->head + c->have;
		c->iov[0].iov_len = payload;
		c->iov_cnt = 1;
	} else {
		c->iov_cnt = 0;
		ret = set->ops->recv_head(set->ctx, sock_src(c), c->head,
					  c->have, payload, c->iov, &c->iov_cnt,
					  &c->frame);
		if (ret)
			return ret;
		if (c->iov_cnt > OFI_SOCK_RX_IOV)
			return -FI_EINVAL;
		/* Less room than payload: the rest is read and dropped. */
		for (i = 0; i < c->iov_cnt; i++)
			room += c->iov[i].iov_len;
		if (room > payload)
			return -EPROTO;
		c->discard = !room;
	}
	c->rx = SOCK_RX_PAYLOAD;
	return 0;
}

static int sock_frame_done(struct ofi_sock_set *set, struct sock_conn *c)
{
	size_t len = c->frame_len;
	int ret = 0;

	c->rx = SOCK_RX_HEAD;
	c->have = 0;
	c->need = set->ops->min_head;
	c->big = c->payload >= SOCK_BIG;
	if (c->hs_frame)
		ret = sock_hs_frame(set, c, len);
	else if (c->state == SOCK_ACTIVE)
		set->ops->recv_done(set->ctx, sock_src(c), c->frame);
	else
		ret = -EPROTO; /* data before the handshake */
	if (c->held && ret)
		set->ops->rx_release(set->ctx, c->frame);
	c->held = false; /* else recv_done released it */
	return ret;
}

/* The payload pieces still to fill; none left: the rest is dropped. */
static void sock_skip_empty(struct sock_conn *c)
{
	if (c->discard)
		return;
	while (c->iov_idx < c->iov_cnt && !c->iov[c->iov_idx].iov_len)
		c->iov_idx++;
	if (c->iov_idx == c->iov_cnt)
		c->discard = true;
}

/* @m bytes went into the payload pieces: move past them (and past
 * empty pieces, so the next byte's piece is current). */
static void sock_iov_advance(struct sock_conn *c, size_t m)
{
	sock_iov_skip(c->iov, &c->iov_idx, c->iov_cnt, m);
}

/*
 * Brackets a write into the payload destination (ops->rx_hold): the
 * destination may have gone since the head; if so, the rest is dropped
 * and the upper layer knows why. True when held (release it after).
 */
static bool sock_hold(struct ofi_sock_set *set, struct sock_conn *c)
{
	if (c->discard || c->hs_frame || !set->ops->rx_hold)
		return false;
	if (!set->ops->rx_hold(set->ctx, c->frame))
		return true;
	c->discard = true;
	return false;
}

/* The read that completes the payload keeps its hold for recv_done,
 * which comes next, without a wait for the socket (ofi_sock.h). */
static void sock_release(struct ofi_sock_set *set, struct sock_conn *c,
			 bool held)
{
	if (!held)
		return;
	if (!c->left) /* held: c->discard was and is false */
		c->held = true;
	else
		set->ops->rx_release(set->ctx, c->frame);
}

/* Payload bytes already staged go to their destination (or are dropped). */
static void sock_take_payload(struct ofi_sock_set *set, struct sock_conn *c)
{
	size_t take = (size_t)OFI_MIN(c->left, (uint64_t)(c->rlen - c->rpos));
	const uint8_t *src = c->rbuf + c->rpos;
	size_t m, done = 0;
	struct iovec *v;
	bool held;

	sock_skip_empty(c);
	held = sock_hold(set, c);
	while (!c->discard && done < take && c->iov_idx < c->iov_cnt) {
		v = &c->iov[c->iov_idx];
		m = OFI_MIN(v->iov_len, take - done);
		memcpy(v->iov_base, src + done, m);
		done += m;
		sock_iov_advance(c, m);
	}
	/* What did not fit is dropped (truncation), as a read would. */
	c->rpos += take;
	c->left -= take;
	sock_release(set, c, held);
}

/*
 * Reads up to @size bytes into the (empty) staging buffer; @c->left
 * payload bytes of it, if any, are the current frame's and still to be
 * taken. >0 bytes read, 0 EOF, -1 with errno.
 */
static ssize_t sock_fill(struct sock_conn *c, size_t size, size_t *asked)
{
	ssize_t n;

	*asked = size;
	n = recv(c->fd, c->rbuf, size, 0);
	c->rpos = 0;
	c->rlen = n > 0 ? (size_t)n : 0;
	return n;
}

/*
 * Nothing staged, payload outstanding: one readv() straight into the
 * destination, the staging buffer behind it for what follows the frame.
 * Returns as sock_fill; *@asked the bytes the call could have taken.
 */
static ssize_t sock_read_payload(struct ofi_sock_set *set, struct sock_conn *c,
				 size_t *asked)
{
	struct iovec v[OFI_SOCK_RX_IOV + 1];
	size_t i, cnt = 0, room = 0, m;
	bool held;
	ssize_t n;
	int e;

	sock_skip_empty(c);
	held = sock_hold(set, c);
	if (c->discard) {
		/* Dropped bytes go through the staging buffer. */
		sock_release(set, c, held);
		return sock_fill(c, SOCK_RBUF, asked);
	}
	/* recv_head gave at most the payload's size in all. */
	for (i = c->iov_idx; i < c->iov_cnt; i++) {
		v[cnt++] = c->iov[i];
		room += c->iov[i].iov_len;
	}
	v[cnt].iov_base = c->rbuf;
	v[cnt].iov_len = c->payload >= SOCK_BIG ? SOCK_PEEK : SOCK_RBUF;
	cnt++;
	n = readv(c->fd, v, (int)cnt);
	e = errno; /* the caller reads it */
	*asked = room + v[cnt - 1].iov_len;
	c->rpos = c->rlen = 0;
	if (n > 0) {
		m = OFI_MIN((size_t)n, room);
		sock_iov_advance(c, m);
		c->left -= m;
		c->rlen = (size_t)n - m;
	}
	sock_release(set, c, held);
	errno = e;
	return n;
}

/* The upper layer cannot take the head now: stop reading @c. */
static int sock_stall(struct ofi_sock_set *set, struct sock_conn *c)
{
	c->rx = SOCK_RX_STALLED;
	set->nstalled++;
	return sock_watch(set, c, c->events & ~(uint32_t)EPOLLIN);
}

/* Staged bytes of a head move to c->head; parses it once whole. */
static int sock_take_head(struct ofi_sock_set *set, struct sock_conn *c)
{
	size_t take = OFI_MIN(c->need - c->have, c->rlen - c->rpos);
	uint64_t payload;
	int ret;

	memcpy(c->head + c->have, c->rbuf + c->rpos, take);
	c->rpos += take;
	c->have += take;
	if (c->have < c->need)
		return 0;
	ret = set->ops->parse(set->ctx, c->head, c->have, &c->need, &payload);
	if (ret == -FI_EAGAIN) {
		if (c->need <= c->have || c->need > set->ops->max_head)
			return EPROTO;
		return 0;
	}
	if (ret)
		return ret < 0 ? -ret : ret;
	ret = sock_head_done(set, c, payload, false);
	if (ret == -FI_EAGAIN && !c->hs_frame) {
		c->payload = payload;
		return -sock_stall(set, c);
	}
	return ret < 0 ? -ret : ret;
}

/* The connection the next hot poll reads (see struct ofi_sock_set). */
static struct sock_conn *sock_hot_pick(struct ofi_sock_set *set)
{
	return set->follow_tx && set->sent ? set->sent : set->hot;
}

/* @c read bytes: the guess that would have named it is followed. */
static void sock_saw_bytes(struct ofi_sock_set *set, struct sock_conn *c)
{
	if (c == sock_hot_pick(set)) {
		if (set->sure < SOCK_HOT_SURE)
			set->sure++;
	} else {
		set->sure = 0;
		if (c == set->sent)
			set->follow_tx = true;
		else if (c == set->hot)
			set->follow_tx = false;
	}
	set->hot = c;
	set->nread++;
}

/*
 * Parses what is staged and reads until the socket is drained (a read
 * shorter than asked), the connection stalls or closes. Staged bytes
 * are never left behind otherwise: nothing would wake a wait for them.
 * 0, or a positive fi_errno to fail the connection.
 */
static OFI_HOT int sock_recv(struct ofi_sock_set *set, struct sock_conn *c)
{
	bool drained = false;
	size_t asked;
	ssize_t n;
	int ret;

	while (c->state != SOCK_CLOSED && c->rx != SOCK_RX_STALLED) {
		if (c->rx == SOCK_RX_PAYLOAD && !c->left) {
			ret = sock_frame_done(set, c);
			if (ret)
				return ret < 0 ? -ret : ret;
			continue;
		}
		if (c->rpos < c->rlen) {
			if (c->rx == SOCK_RX_PAYLOAD) {
				sock_take_payload(set, c);
				continue;
			}
			ret = sock_take_head(set, c);
			if (ret)
				return ret;
			continue;
		}
		if (drained)
			return 0;
		if (c->rx == SOCK_RX_PAYLOAD) {
			n = sock_read_payload(set, c, &asked);
		} else {
			n = sock_fill(c, c->big ? SOCK_PEEK : SOCK_RBUF,
				      &asked);
		}
		if (n == 0)
			return FI_ECONNRESET; /* EOF: the peer is gone */
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0
								 : sock_err();
		sock_saw_bytes(set, c);
		drained = (size_t)n < asked;
	}
	return 0;
}

/* A receive batch is over: what it queued leaves, closed ones go. */
static void sock_batch_end(struct ofi_sock_set *set)
{
	if (!--set->defer)
		sock_flush_deferred(set);
	sock_reap(set);
}

int ofi_sock_resume(struct ofi_sock_set *set)
{
	struct dlist_entry *e, *next;
	struct sock_conn *c;
	int ret, n = 0;

	if (!set->nstalled)
		return 0;
	set->defer++;
	for (e = set->conns.next; e != &set->conns; e = next) {
		next = e->next;
		c = container_of(e, struct sock_conn, entry);
		if (c->rx != SOCK_RX_STALLED)
			continue;
		ret = sock_head_done(set, c, c->payload, true);
		if (ret == -FI_EAGAIN) {
			c->rx = SOCK_RX_STALLED;
			continue;
		}
		if (ret) {
			/* Still STALLED: the close counts it and aborts
			 * the upper layer's frame. */
			sock_conn_close(set, c, ret < 0 ? -ret : ret);
			continue;
		}
		set->nstalled--;
		n++;
		/* c->rx is PAYLOAD now. Level-triggered: bytes in the
		 * socket raise the next event; staged ones, or a frame
		 * without payload, have none to raise it: they go now. */
		(void)sock_watch(set, c, c->events | EPOLLIN);
		c->kick = !c->left || c->rpos < c->rlen;
	}
	/*
	 * Those run now, one at a time from the top: their callbacks may
	 * send, and a failed send closes connections, which would pull
	 * the next entry out from under a walk in progress.
	 */
restart:
	dlist_foreach(&set->conns, e) {
		c = container_of(e, struct sock_conn, entry);
		if (!c->kick)
			continue;
		c->kick = false;
		ret = sock_recv(set, c);
		if (ret)
			sock_conn_close(set, c, ret);
		goto restart;
	}
	sock_batch_end(set);
	return n;
}

/* ------------------------------------------------------------------ */
/* Progress.                                                            */

static void sock_accept(struct ofi_sock_set *set)
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

	if (!dlist_empty(&set->flushq) || !dlist_empty(&set->zombies) ||
	    sock_tx_busy(set))
		return true;
	dlist_foreach(&set->conns, e) {
		if (container_of(e, struct sock_conn, entry)->state !=
		    SOCK_ACTIVE)
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

/* ------------------------------------------------------------------ */
/* Setup.                                                               */

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
	if (keep && p->conn && sock_keep_done(set, p) && sock_drain(set, p))
		return;
	c = p->conn;
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

size_t ofi_sock_conn_count(struct ofi_sock_set *set)
{
	return set->nconns;
}

void ofi_sock_get_poll_counts(struct ofi_sock_set *set,
			      struct ofi_sock_poll_counts *counts)
{
	*counts = set->counts;
}

/* ------------------------------------------------------------------ */
/* Connection-oriented use (one peer per set, made explicitly).         */

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
