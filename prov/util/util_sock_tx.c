/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_sock_tx.c - the stream-socket connection layer's send engine
 * (ofi_sock.h; what the pieces share is in util_sock_priv.h): each
 * peer's queue of frames, written many to a sendmsg() with their small
 * pieces coalesced, partial writes resumed; frames deferred to the end
 * of a receive batch; corked bursts and the wake-up that flushes them;
 * ofi_sock_send.
 */
#include <string.h>
#include <unistd.h>

#include "util_sock_priv.h"

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

static size_t sock_tx_len(const struct ofi_sock_tx *tx)
{
	size_t i, len = 0;

	for (i = tx->iov_idx; i < tx->iov_cnt; i++)
		len += tx->iov[i].iov_len;
	return len;
}

/* A frame that leaves in one call, however long the call: not begun, and
 * at most SOCK_TX_CALL_SLACK over SOCK_TX_CALL_MAX. */
static bool sock_tx_whole(const struct ofi_sock_tx *tx)
{
	return !tx->iov_idx &&
	       sock_tx_len(tx) <= SOCK_TX_CALL_MAX + SOCK_TX_CALL_SLACK;
}

/*
 * Gathers the unwritten iovs of @p's queue, oldest first, into @v (room
 * for SOCK_TX_GATHER); a longer frame that crosses SOCK_TX_CALL_MAX is
 * cut there, and ends the list. Returns the count and the bytes in *@len.
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
			v[cnt] = tx->iov[i];
			if (OFI_UNLIKELY(*len + v[cnt].iov_len >
					 SOCK_TX_CALL_MAX) &&
			    !sock_tx_whole(tx)) {
				if (*len >= SOCK_TX_CALL_MAX)
					return cnt;
				v[cnt].iov_len = SOCK_TX_CALL_MAX - *len;
				*len = SOCK_TX_CALL_MAX;
				return cnt + 1;
			}
			*len += v[cnt++].iov_len;
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
OFI_HOT int sock_flush(struct ofi_sock_set *set, struct sock_conn *c)
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
		sock_conn_shut(set, c);
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
OFI_HOT void sock_flush_deferred(struct ofi_sock_set *set)
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

/* A sleeper on the epoll fd must progress: corked frames wait for it. */
static void sock_wake(struct ofi_sock_set *set)
{
	uint64_t one = 1;

	if (set->woken || set->wakefd < 0)
		return;
	set->woken = true;
	(void)!write(set->wakefd, &one, sizeof(one));
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
