/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_sock_rx.c - the stream-socket connection layer's receive engine
 * (ofi_sock.h; what the pieces share is in util_sock_priv.h): reading
 * ahead into a connection's staging buffer, heads parsed by the codec,
 * payloads read or copied into the memory recv_head names (held while
 * they are written, truncated where it is short), handshake frames
 * handed to util_sock_conn.c, heads the upper layer cannot place yet
 * (stalls) and ofi_sock_resume.
 */
#include <string.h>
#include <sys/uio.h>

#include "util_sock_priv.h"

/*
 * After a payload of SOCK_BIG bytes or more, the next frame is likely
 * large too: read ahead only SOCK_PEEK bytes (its head, whatever small
 * frames follow), so its payload goes from the socket to its destination
 * instead of through the staging buffer and a copy.
 */
#define SOCK_BIG  (16 * 1024)
#define SOCK_PEEK 1024

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
	else if (c->state == SOCK_ACTIVE || c->state == SOCK_SHUT)
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

/*
 * Parses what is staged and reads until the socket is drained (a read
 * shorter than asked), the connection stalls or closes. Staged bytes
 * are never left behind otherwise: nothing would wake a wait for them.
 * 0, or a positive fi_errno to fail the connection.
 */
OFI_HOT int sock_recv(struct ofi_sock_set *set, struct sock_conn *c)
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
