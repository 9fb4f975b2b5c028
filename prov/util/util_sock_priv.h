/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_sock_priv.h - what the pieces of the stream-socket connection
 * layer (ofi_sock.h, where its design notes are) share: the set, its
 * peers and connections, the guess its hot polls follow, and each
 * piece's entry points. Providers include ofi_sock.h only.
 *
 *   util_sock_conn.c  connections: the peer table, connecting, accepting,
 *                     the handshake and its races, closing
 *   util_sock_tx.c    the send engine: queues, gathered and coalesced
 *                     writes, corking
 *   util_sock_rx.c    the receive engine: read-ahead, heads, payloads
 *                     into the upper layer's memory, stalls
 *   util_sock_poll.c  progress: the epoll set, hot and quiet polls,
 *                     whether work is left
 *   util_sock_set.c   the set's life: open, close, peers leaving the AV
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
#ifndef UTIL_SOCK_PRIV_H
#define UTIL_SOCK_PRIV_H

#include <errno.h>
#include <sys/epoll.h>

#include "ofi_sock.h"

enum sock_state {
	SOCK_CONNECTING, /* connect() in progress, request queued */
	SOCK_HS_SENT,	 /* connector: request written, awaiting answer */
	SOCK_HS_WAIT,	 /* acceptor: awaiting the request */
	SOCK_ACTIVE,
	/* A removed address's, its frames written: our half is shut, the
	 * peer's read until its EOF (sock_conn_shut). */
	SOCK_SHUT,
	SOCK_CLOSED,
};

/* Read-ahead per connection: a window of small frames in one recv(). */
#define SOCK_RBUF (32 * 1024)
/* iovs one sendmsg() gathers from a peer's queued frames. */
#define SOCK_TX_GATHER 128
/*
 * A frame longer than SOCK_TX_CALL_MAX + SOCK_TX_CALL_SLACK leaves in
 * calls of SOCK_TX_CALL_MAX bytes. Written whole, a large payload is
 * copied into the socket before the peer reads much of it: in pieces, the
 * receiver copies one out while the next goes in, each still in the cache
 * it was written from (1 MiB ping-pong over loopback 1.7x faster,
 * docs/performance.md). A 64 KiB payload and its head still leave in one
 * call, and so does a window of smaller frames.
 */
#define SOCK_TX_CALL_MAX   (64 * 1024)
#define SOCK_TX_CALL_SLACK 1024
/* sock_tx_coalesce: pieces up to this size are copied, into a buffer
 * of that many bytes. */
#define SOCK_COALESCE_PIECE 256
#define SOCK_COALESCE_BUF   8192
/*
 * A direct read that finds nothing leaves the next poll to epoll, unless
 * the last SOCK_HOT_SURE reads with bytes were all on the connection
 * guessed (one peer, or exchanges the guess follows): then the wait
 * goes on reading it, epoll only every SOCK_HOT_POLLS polls, so the
 * frame is most likely taken by one recv() when it comes.
 */
#define SOCK_HOT_SURE 4

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

/* util_sock_conn.c */
int sock_setup_fd(int fd);
void sock_fail_txq(struct ofi_sock_set *set, struct sock_peer *p, int err);
void sock_conn_close(struct ofi_sock_set *set, struct sock_conn *c, int err);
void sock_conn_shut(struct ofi_sock_set *set, struct sock_conn *c);
OFI_HOT void sock_reap(struct ofi_sock_set *set);
OFI_HOT struct sock_peer *sock_peer_get(struct ofi_sock_set *set,
					fi_addr_t addr, bool create);
int sock_connect(struct ofi_sock_set *set, struct sock_peer *p);
struct sock_conn *sock_adopt(struct ofi_sock_set *set, struct sock_peer *p);
int sock_hs_frame(struct ofi_sock_set *set, struct sock_conn *c, size_t len);
void sock_accept(struct ofi_sock_set *set);

/* util_sock_tx.c */
OFI_HOT int sock_flush(struct ofi_sock_set *set, struct sock_conn *c);
OFI_HOT void sock_flush_deferred(struct ofi_sock_set *set);

/* util_sock_rx.c */
OFI_HOT int sock_recv(struct ofi_sock_set *set, struct sock_conn *c);

/* util_sock_poll.c */
OFI_HOT int sock_watch(struct ofi_sock_set *set, struct sock_conn *c,
		       uint32_t events);
int sock_unquiet(struct ofi_sock_set *set);

/* Helpers on every frame's path, inlined into each piece that runs them. */

static inline int sock_err(void)
{
	return errno ? errno : FI_EIO;
}

/*
 * Moves iovs @iov[*idx] to @iov[cnt - 1] past @n bytes: those used up are
 * left empty and *idx at the first with bytes left (or at @cnt). Returns
 * what is left of @n beyond them.
 */
static inline size_t sock_iov_skip(struct iovec *iov, size_t *idx, size_t cnt,
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

/* The connection the next hot poll reads (see struct ofi_sock_set). */
static inline struct sock_conn *sock_hot_pick(struct ofi_sock_set *set)
{
	return set->follow_tx && set->sent ? set->sent : set->hot;
}

/* @c read bytes: the guess that would have named it is followed. */
static inline void sock_saw_bytes(struct ofi_sock_set *set, struct sock_conn *c)
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

/* A receive batch is over: what it queued leaves, closed ones go. */
static inline void sock_batch_end(struct ofi_sock_set *set)
{
	if (!--set->defer)
		sock_flush_deferred(set);
	sock_reap(set);
}

#endif /* UTIL_SOCK_PRIV_H */
