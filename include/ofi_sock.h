/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_sock.h - the stream-socket connection layer shared by socket based
 * providers (prov/util/util_sock_*.c): one listening socket and one epoll
 * set per endpoint, a table of peers keyed by fi_addr_t, connections made
 * on first use with a two-frame handshake, simultaneous connects resolved
 * the same way on both sides, per-peer FIFO send queues written with
 * sendmsg (header + user iovs, partial writes resumed), a receive state
 * machine that reads a frame head and then the payload straight into
 * memory the upper layer names, and peer-failure reporting.
 *
 * Why in prov/util and not prov/tcp: nothing here knows a frame layout.
 * The upper layer (tcp today, sockets later) brings its codec through
 * struct ofi_sock_ops: how long a head is, how to build and read the
 * handshake, where a payload goes. So the sockets provider reuses this
 * file with its own wire format instead of copying it.
 *
 * Connections. A peer (fi_addr) has at most one connection in use. The
 * connector sends a handshake request carrying its listening address; the
 * acceptor maps that address to an fi_addr (ops->lookup, the AV's reverse
 * lookup) and answers accept or reject. Data frames flow only after the
 * answer, so a lost race never loses data: frames wait on the peer, not
 * on a socket. When both sides connect at once, the connection started
 * by the side with the lower listening address (ofi_sock_addr_cmp) is the
 * one kept: the lower side rejects the higher side's request, the higher
 * side accepts the lower one's and drops its own attempt. A request from a
 * peer that is not (yet) in the AV is accepted under an anonymous fi_addr
 * (OFI_SOCK_ANON_ADDR and up: frames from it report it, sends to it
 * answer on that connection), and the connection is adopted by the AV
 * entry when a send first names that address.
 *
 * Failure. EOF, RST or a frame the codec refuses on the connection a peer
 * uses fails every queued send of that peer (ops->send_done with the
 * error) and reports ops->peer_failed(fi_addr), so the upper layer fails
 * its receives and outstanding requests. The peer entry stays failed:
 * later sends to it answer that error at once (an RDM peer whose
 * connection broke or was refused is gone; sends that queued and
 * "succeeded" for ever would lose data silently) until its address
 * leaves the AV (ofi_sock_remove_peer). Losing connections of a race
 * close silently.
 *
 * Sending. A frame is written at once when its connection is idle,
 * except in a burst: the application posted a few frames to the same
 * connection with no progress call in between, and this one is marked
 * may_wait; it then leaves with the rest of the burst at the next
 * progress call (ofi_sock_fd becomes readable meanwhile, so a thread
 * asleep on it comes to progress). Frames the receive path sends from
 * its callbacks leave together when the batch of frames read is done.
 *
 * Locking: none. The upper layer calls every function under the lock
 * that serialises its endpoint (the progress thread holds it too). An AV
 * removal (struct ofi_av_ep_ops.removed) runs under the AV lock and must
 * not call in here directly: record it, then call ofi_sock_remove_peer()
 * under the endpoint lock.
 */
#ifndef OFI_SOCK_H
#define OFI_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "ofi.h"

#define OFI_SOCK_TX_IOV 12  /* header, body and up to 10 user iovs */
#define OFI_SOCK_RX_IOV 8   /* destination pieces of one payload */
#define OFI_SOCK_HS_MAX 512 /* a handshake frame, head and payload */
/* fi_addrs from here up name peers not in the AV (see above). */
#define OFI_SOCK_ANON_ADDR ((fi_addr_t)1 << 48)

/* One frame to send; the upper layer owns the memory until send_done. */
struct ofi_sock_tx {
	struct dlist_entry entry;
	size_t iov_cnt;
	size_t iov_idx; /* first iov not fully written */
	void *context;	/* the upper layer's */
	/*
	 * The application learns of this frame's operation only through
	 * this set's progress (a completion it has to read): it may wait
	 * for the next progress call, to leave with the frames of the same
	 * burst in one write (corking, util_sock_tx.c).
	 */
	bool may_wait;
	/*
	 * The upper layer completed this frame's operation already (a
	 * buffered send): a removal of its peer from the AV does not
	 * cancel it, the connection stays until it is written.
	 */
	bool done;
	/* last: a small frame's first iov shares the fields' cache line */
	struct iovec iov[OFI_SOCK_TX_IOV]; /* advanced in place */
};

struct ofi_sock_set;

struct ofi_sock_ops {
	size_t min_head; /* bytes read before the first parse call */
	size_t max_head; /* head buffer; handshakes must fit whole */
	/*
	 * @len bytes of a head so far: -EAGAIN with *@need (> @len) total
	 * head bytes wanted, or 0 with the head complete (@len == need) and
	 * *@payload bytes to follow; any other negative value is a protocol
	 * error: the connection is dropped.
	 */
	int (*parse)(void *ctx, const void *head, size_t len, size_t *need,
		     uint64_t *payload);
	/* Writes a handshake request (@resp false) or answer (@status: 0
	 * accept, else a positive fi_errno); returns its length. */
	size_t (*hs_build)(void *ctx, void *buf, size_t max, bool resp,
			   int status);
	/* A whole handshake frame: a request's listening address, or an
	 * answer's status (0: accepted). 0, or a negative error. */
	int (*hs_parse)(void *ctx, const void *frame, size_t len, bool resp,
			struct sockaddr_storage *addr, int *status);
	/* The socket address of @addr (the AV's copy). */
	int (*addr_of)(void *ctx, fi_addr_t addr, struct sockaddr_storage *sa);
	/* Reverse lookup: FI_ADDR_NOTAVAIL when not in the AV. */
	fi_addr_t (*lookup)(void *ctx, const struct sockaddr_storage *sa);
	/*
	 * A data frame's head arrived from @src: fill @iov (room for
	 * OFI_SOCK_RX_IOV) with where its @payload bytes go, at most
	 * @payload bytes in all (what does not fit is read and dropped:
	 * truncation; *@iov_cnt 0 drops it all), and set *@frame to what
	 * recv_done/recv_abort get back (frames of different connections
	 * interleave). -FI_EAGAIN: the frame cannot be placed now; the
	 * connection is not read further (TCP pushes back on the sender)
	 * and recv_head is asked again with the same head on
	 * ofi_sock_resume(), *@frame then holding what the stalled call
	 * stored there (NULL on a first call; recv_abort gets a stalled
	 * frame that is not NULL). Any other negative return drops the
	 * connection (protocol error). A first call comes right after the
	 * parse call that returned 0 for the same @head, on the same
	 * thread, so the codec may keep what parse decoded.
	 */
	int (*recv_head)(void *ctx, fi_addr_t src, const void *head, size_t len,
			 uint64_t payload, struct iovec *iov, size_t *iov_cnt,
			 void **frame);
	/* The payload of @frame is in place (or dropped). */
	void (*recv_done)(void *ctx, fi_addr_t src, void *frame);
	/* Optional: @frame's connection died before its payload was in
	 * (positive fi_errno); recv_done is not called for it. */
	void (*recv_abort)(void *ctx, fi_addr_t src, void *frame, int err);
	/*
	 * Optional, both or neither: bracket every read into @frame's
	 * memory, so a registration can be held only while bytes are
	 * written into it, never across a wait for the socket. A non-zero
	 * rx_hold drops the rest of the payload (recv_done still comes).
	 * The read that completes the payload is not released: recv_done,
	 * which follows it at once, finds the frame still held and
	 * releases it (or rx_release comes before a recv_abort).
	 */
	int (*rx_hold)(void *ctx, void *frame);
	void (*rx_release)(void *ctx, void *frame);
	/* @tx was written whole (@err 0) or failed (positive fi_errno). */
	void (*send_done)(void *ctx, struct ofi_sock_tx *tx, int err);
	/* The connection to @addr failed (positive fi_errno). */
	void (*peer_failed)(void *ctx, fi_addr_t addr, int err);
	/* A connection left the epoll set (ofi_sock_set_quiet): wake every
	 * thread that sleeps on ofi_sock_fd, so that it arms (ofi_sock_arm)
	 * before it sleeps again. Required where quiet is allowed. */
	void (*quiet)(void *ctx);
};

/*
 * Opens the set and its listening socket on @addr (port 0: any); the
 * actual address is ofi_sock_getname's. 0 or a negative fi_errno.
 */
int ofi_sock_set_open(const struct ofi_sock_ops *ops, void *ctx,
		      const struct sockaddr *addr, socklen_t addrlen,
		      struct ofi_sock_set **set);
/*
 * Close, first half: runs I/O until every queued send is written (or has
 * failed), for at most @timeout_ms; 0, or -FI_ETIMEDOUT with sends left
 * (a peer that stopped reading). Sends the upper layer completed early
 * (buffered) are not lost to a close that comes right after them.
 */
int ofi_sock_linger(struct ofi_sock_set *set, int timeout_ms);
/* Closes every connection; queued sends complete with FI_ECANCELED. */
void ofi_sock_set_close(struct ofi_sock_set *set);
int ofi_sock_getname(struct ofi_sock_set *set, struct sockaddr_storage *sa);
/* The epoll fd: readable when progress has work (wait objects). */
int ofi_sock_fd(struct ofi_sock_set *set);
/*
 * A thread is about to sleep on ofi_sock_fd: every connection is in the
 * epoll set again (for at least SOCK_QUIET_ARMED_NS, util_sock_poll.c).
 */
void ofi_sock_arm(struct ofi_sock_set *set);
/*
 * @ok: nobody sleeps on ofi_sock_fd without ofi_sock_arm first, and
 * ops->quiet wakes every sleeper, so a busy poller's lone connection may
 * leave the epoll set, which saves its peer's send() a wake-up. Off by
 * default.
 */
void ofi_sock_set_quiet(struct ofi_sock_set *set, bool ok);

/* Queues @tx to @dest, connecting on first use; 0 or a negative error. */
int ofi_sock_send(struct ofi_sock_set *set, fi_addr_t dest,
		  struct ofi_sock_tx *tx);
/* Runs I/O for up to @timeout_ms (0: poll; <0: until an event). Returns
 * the number of socket events handled, or a negative fi_errno. */
int ofi_sock_progress(struct ofi_sock_set *set, int timeout_ms);
/* Asks recv_head again for every stalled head (after a receive was posted
 * or buffer space freed); returns the connections that moved on. */
int ofi_sock_resume(struct ofi_sock_set *set);
/*
 * @addr left the AV: its queued frames get FI_ECANCELED but those marked
 * done (and one already partly written), which the application was told
 * were sent: its connection stays, as an anonymous peer's, until they
 * are written. Then (at once without such frames) our half of it is
 * shut: the peer reads EOF, and what it wrote before is still read, as
 * the anonymous peer's, until the peer's own EOF closes it.
 */
void ofi_sock_remove_peer(struct ofi_sock_set *set, fi_addr_t addr);
/* @addr's connection closes now and its whole queue gets FI_ECANCELED. */
void ofi_sock_abort_peer(struct ofi_sock_set *set, fi_addr_t addr);

/* The listening address of peer @addr (AV or anonymous). */
int ofi_sock_peer_sa(struct ofi_sock_set *set, fi_addr_t addr,
		     struct sockaddr_storage *sa);
/*
 * Whether frames wait to be written (queued, corked or deferred) or a
 * connection is still being made. Each of those raises an event on
 * ofi_sock_fd when it can move; a progress thread that finds none may
 * sleep on the fd without a timeout.
 */
bool ofi_sock_pending(struct ofi_sock_set *set);
/* Connections open (any state): tests and diagnostics. */
size_t ofi_sock_conn_count(struct ofi_sock_set *set);
/* How progress polls went so far (tests, diagnostics). */
struct ofi_sock_poll_counts {
	uint64_t epolls;      /* epoll_wait() calls */
	uint64_t hot_reads;   /* polls that read one connection instead */
	uint64_t hot_hits;    /* of those, the ones that found bytes */
	uint64_t sends;	      /* send()/sendmsg() calls of queued frames */
	uint64_t send_pieces; /* iovs those calls handed the kernel */
};
void ofi_sock_get_poll_counts(struct ofi_sock_set *set,
			      struct ofi_sock_poll_counts *counts);
/* Total order on addresses (family, address bytes, port). */
int ofi_sock_addr_cmp(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b);

/*
 * Connection-oriented use (FI_EP_MSG): a set with no listening socket,
 * whose one peer is connected explicitly (ofi_sock_connect) or handed an
 * already accepted socket (ofi_sock_attach). ops->addr_of names the
 * peer's address; a lost connection is reported through peer_failed and
 * never made again unless the upper layer asks.
 */
int ofi_sock_set_open_client(const struct ofi_sock_ops *ops, void *ctx,
			     const struct sockaddr *bind_addr,
			     socklen_t bind_len, struct ofi_sock_set **set);
/* Outgoing connections bind to @sa first (NULL: the kernel picks). */
void ofi_sock_set_bind(struct ofi_sock_set *set, const struct sockaddr *sa,
		       socklen_t len);
/* Starts the connection to @addr (handshake request from hs_build). */
int ofi_sock_connect(struct ofi_sock_set *set, fi_addr_t addr);
/*
 * Takes over @fd, accepted elsewhere, whose handshake request was read:
 * @hs (the answer) is written first, then the connection is in use for
 * @addr. The fd belongs to the set once the call succeeds. @held: nothing
 * is written, the answer nor frames sent meanwhile, until
 * ofi_sock_release(@addr), since the peer acts on the answer at once and
 * the upper layer may first have to tell its own application that the
 * connection is up.
 */
int ofi_sock_attach(struct ofi_sock_set *set, int fd, fi_addr_t addr,
		    const void *hs, size_t hs_len, bool held);
/* Lets @addr's held connection (ofi_sock_attach) write; a no-op if none. */
void ofi_sock_release(struct ofi_sock_set *set, fi_addr_t addr);

#endif /* OFI_SOCK_H */
