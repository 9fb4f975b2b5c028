/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm.h - private definitions of the shm provider: its fabric, domain and
 * endpoint objects and the calls between its files. The shared region,
 * wire format and rings are in shm_wire.h.
 *
 * Wire rules: everything a peer wrote is bounds-checked before use; the
 * region header carries SHM_VERSION and a peer with another version is
 * refused at first contact.
 */
#ifndef SHM_H
#define SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "ofi_match.h"
#include "ofi_progress.h"
#include "ofi_util.h"
#include "ofi_yield.h"
#include "shm_adapt.h"
#include "shm_peer.h"
#include "shm_wire.h"

/* What shm's fi_info offers, as Debian's shm (4); the wire and the peer
 * interface carry SHM_IOV_LIMIT, for tcp's and sockets' same-host path. */
#define SHM_IOV_ATTR 4

_Static_assert(SHM_IPC_HANDLE_SIZE == OFI_HMEM_MAX_HANDLE_SIZE, "ipc handle");
_Static_assert(SHM_CACHELINE == OFI_CACHELINE, "cache line");

#define SHM_PROV_NAME	 "shm"
#define SHM_PROV_VERSION OFI_PROV_VERSION
#define SHM_TX_SIZE	 1024 /* == SHM_RESP_SLOTS: acks never overflow */
#define SHM_RX_SIZE	 1024
#define SHM_SAR_LEND_MAX (SHM_SAR_CHANS / 2) /* see shm_sar_lend() */
/* Default for FI_SHM_CMA_THRESHOLD, see shm_init.c. */
#define SHM_CMA_THRESHOLD (4 * 1024 * 1024)

/* shm_coll.c: the collective engine's shared group memory */
#define SHM_COLL_PREFIX "ofi_coll_" /* in /dev/shm; shm_region.c reclaims */
extern const struct ofi_coll_shared shm_coll_shared;

/*
 * The files of the ring fast paths (shm_rma.c, shm_send.c,
 * shm_progress.c) keep a frame pointer, so that %rbp never holds a slot
 * pointer: with a wake check after the publishing store GCC put the
 * command slot in %rbp in shm_rma_issue, and 8 B windowed RMA reads ran
 * 14-21% slower on this host's cores (Xeon, family 6 model 207) than
 * with it in any other register, wake check or not (A/B of otherwise
 * equal builds). The likely cause is the cores' prediction of store-to-load
 * forwarding for %rbp-based accesses (the same base and offset, a slot
 * apart, from one command to the next). Measured, not explained.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define SHM_HOT_PATH_FRAME _Pragma("GCC optimize(\"no-omit-frame-pointer\")")
#else
#define SHM_HOT_PATH_FRAME
#endif

/* shm_wake.c */
struct shm_ep;
void shm_wake_init(struct shm_ep *ep);
void shm_wake_open(struct shm_ep *ep);
void shm_wake_close(struct shm_ep *ep);
void shm_wake_progress(struct shm_ep *ep);
void shm_wake_check(struct shm_ep *ep);
int shm_auto_start(struct util_ep *util);
void shm_auto_stop(struct shm_ep *ep);
void shm_wake_send(struct shm_ep *ep, struct shm_region *rg);

/*
 * After a store into @rg's owner's memory that no ring command announces
 * (the collective engine's, shm_coll.c): pokes the owner if it sleeps.
 * The fence pairs with the sleeper's (shm_wait_arm); only the sender that
 * clears the word pokes. Ring producers learn of a sleeper from the tail
 * they claim instead (SHM_RING_SLEEPING), at no cost.
 */
static inline void shm_wake_peer(struct shm_ep *ep, struct shm_region *rg)
{
	_Atomic uint32_t *w = &shm_hdr(rg)->sleeping;

	atomic_thread_fence(memory_order_seq_cst);
	if (OFI_LIKELY(!atomic_load_explicit(w, memory_order_relaxed)))
		return;
	if (atomic_exchange_explicit(w, 0, memory_order_relaxed))
		shm_wake_send(ep, rg);
}

/* shm_region.c */
int shm_region_create(const char *name, bool cma_ok, struct shm_region **rg);
void shm_region_destroy(struct shm_region *rg);
int shm_region_map(const char *name, struct shm_region **rg);
int shm_region_map_linger(const char *obj, const char *name,
			  struct shm_region **rg);
int shm_region_linger(struct shm_region *rg, char *obj, size_t len);
void shm_region_unlink_linger(const char *obj, const char *name);
void shm_region_unmap(struct shm_region *rg);
pid_t shm_region_cma_pid(struct shm_region *rg);
void shm_region_reclaim(void);
bool shm_pid_alive(pid_t pid);
bool shm_cma_probe(void);
int shm_name_valid(const char *name);

/* ------------------------------------------------------------------ */
/* Provider objects.                                                    */

extern struct fi_provider shm_prov;
extern const struct fi_info shm_info_template;

struct shm_fabric {
	struct util_fabric util;
};

struct shm_domain {
	struct util_domain util;
};

/*
 * A stream waiting on its peer (our segments full, or a read's empty):
 * since when (ns, 0: not waiting), and how many waits in a row outlasted
 * the spin budget. See shm_stall_end (shm_send.c).
 */
struct shm_stall {
	uint64_t since;
	uint32_t streak;
};

/* A peer we send to (indexed by fi_addr). */
struct shm_tx_peer {
	struct shm_region *rg;	    /* NULL until first contact */
	struct shm_peer_slot *slot; /* ours in its table */
	uint16_t id;		    /* our slot in its peer table */
	uint32_t gen;
	pid_t pid;
	uint32_t conn; /* this connection, for the inject buffers it holds */
	bool cma_ok;
	/* It died or closed its endpoint: it reads nothing of ours again. */
	bool dead;
	bool unread; /* close: it has yet to read commands of ours */
	/*
	 * Its fi_addr was removed from the AV while transfers to it were in
	 * flight: they finish with this peer, new sends wait (-FI_EAGAIN).
	 */
	bool stale;
	/* First contact: since when (ns) its region was not found. */
	uint64_t missing_since;
	/* Streaming or CMA, per size class (shm_adapt.c). */
	struct shm_adapt adapt[SHM_ADAPT_CLASSES];
	/* Our streamed reads from it wait for its segments. */
	struct shm_stall read_stall;
};

/*
 * Messages still queued here from a sender whose slot has since been
 * taken by another process are relabelled to this pseudo sender: no
 * region, no address, so they never reach (or are reported as) the new
 * owner, and transfers needing the gone sender fail.
 */
#define SHM_ORPHAN_ID SHM_MAX_PEERS

/* A peer that sends to us (indexed by its slot in our peer table). */
struct shm_rx_peer {
	struct shm_region *rg;
	uint32_t gen;
	pid_t pid;
	bool cma_ok;
	fi_addr_t addr;	    /* cached AV index, FI_ADDR_NOTAVAIL if none */
	fi_addr_t src_addr; /* what FI_SOURCE reports (FI_AV_USER_ID) */
	char name[SHM_NAME_MAX];
	/*
	 * First segments of messages seen in its channel at the last scan
	 * (shm_recv.c), valid for the progress pass stamped sar_stamp.
	 */
	uint32_t sar_stamp;
	uint32_t sar_chan;
	uint32_t sar_nstarts;
	struct {
		uint64_t msg_id;
		uint32_t seg;
	} sar_starts[SHM_SAR_CHAN_SEGS];
};

enum shm_tx_state {
	SHM_TX_FREE = 0,
	SHM_TX_CMA,	 /* waiting for the receiver's ack */
	SHM_TX_SAR_WAIT, /* waiting for a channel (sar_queue) */
	SHM_TX_SAR,	 /* in a channel: streaming or being drained */
	SHM_TX_RMA,	 /* RMA/atomic waiting for the target's ack */
	SHM_TX_DC,	 /* inline/inject waiting for delivery (SHM_CMD_ACK) */
};

struct shm_rma_tx;

struct shm_tx {
	struct dlist_entry entry;
	enum shm_tx_state state;
	uint32_t idx;
	uint32_t gen; /* msg_id = gen << 32 | idx: stale acks are ignored */
	fi_addr_t addr;
	void *context;
	uint64_t flags; /* completion flags (FI_SEND | FI_MSG ...) */
	uint64_t op_flags;
	bool nocomp; /* fi_inject: counters only */
	int err;
	size_t size;
	size_t done; /* SAR: bytes written to the channel */
	enum fi_hmem_iface iface;
	uint64_t device;
	size_t iov_count;
	struct iovec iov[SHM_IOV_LIMIT];
	struct shm_rma_tx *rma; /* RMA/atomic state, allocated once */
	/* SHM_PROTO_IPC: pool entry + 1 and bounce slot + 1 held (0: none) */
	uint32_t ipc_entry;
	uint32_t ipc_slot;
	struct shm_adapt_tx adapt; /* measured for its peer's path choice */
};

/* Where an in-flight receive (CMA/SAR) writes. */
struct shm_sar_rx;
struct shm_rma_sink;

/* Unexpected segmented bytes, drained one segment per chunk. */
struct shm_unexp_chunk {
	struct shm_unexp_chunk *next;
	size_t len;
	uint8_t data[];
};

/*
 * A message that arrived before its receive. Inline payloads stay in cmd,
 * inject payloads are copied to data (at most SHM_INJECT_SIZE bytes) and
 * segmented ones are drained chunk by chunk as the segments really arrive,
 * never allocated from the size the sender announced (shm_recv.c).
 */
struct shm_unexp {
	struct ofi_unexp_msg m;
	struct shm_ep *ep; /* whose it is: the queue may be an owner's */
	uint16_t src_id;
	uint8_t *data;			/* inject copy */
	struct shm_unexp_chunk *chunks; /* SAR bytes drained so far */
	struct shm_unexp_chunk **chunk_tail;
	struct shm_sar_rx *sar; /* SAR still draining into chunks */
	int err;		/* the drain failed (an fi_errno) */
	uint8_t size;		/* an enum shm_unexp_size */
	/*
	 * The validated command, as far as its protocol needs (header,
	 * inline bytes, CMA/IPC part): the entry ends there.
	 */
	struct shm_cmd cmd;
};

/* A receive whose data is still being pulled from the sender. */
struct shm_sar_rx {
	struct dlist_entry entry;
	uint16_t src_id;
	uint64_t msg_id;
	size_t size; /* bytes the sender announced */
	size_t done;
	int32_t chan;		   /* the sender's channel, -1 until found */
	uint32_t seg;		   /* next segment in it */
	struct ofi_rx_buf *rx;	   /* matched receive, or NULL */
	struct ofi_rx_slice slice; /* where in rx */
	struct shm_unexp *unexp;   /* draining an unexpected message */
	int err;
	/* An RMA write streamed to us: the bytes go to its registrations. */
	struct shm_rma_sink *rma;
	struct shm_cmd cmd; /* header for the completion */
};

/*
 * Unexpected segmented bytes one endpoint buffers before it stops
 * draining senders' channels (they wait until a receive is posted).
 */
#define SHM_UNEXP_SAR_MAX (128UL * 1024 * 1024)
#define SHM_UNEXP_CACHE	  256 /* per size, see shm_unexp_size */

/*
 * The sizes of unexpected entries: a receiver that trails a streaming
 * sender keeps one per message, so an entry holds only the part of the
 * command its protocol needs; a small one, that of a small inline
 * message or of any other protocol but CMA, not the whole slot.
 */
#define SHM_UNEXP_SMALL_CMD (SHM_CMD_HDR_SIZE + 64)
enum shm_unexp_size {
	SHM_UNEXP_SMALL,
	SHM_UNEXP_FULL,
	SHM_UNEXP_SIZES,
};

/*
 * One of our segmented channels as we, its sender, see it (shm_send.c):
 * bound to one receiver while it has messages for it, free otherwise.
 */
struct shm_sar_chan {
	struct shm_peer_slot *slot; /* ours at the receiver; NULL: free */
	fi_addr_t addr;		    /* the receiver */
	uint32_t conn;
	uint32_t wseg;		  /* next segment to write */
	struct dlist_entry queue; /* messages still to write, in order */
	struct dlist_entry drain; /* written, the receiver still reads */
	/* The message whose last segment is segment i, until emptied. */
	struct shm_tx *last[SHM_SAR_CHAN_SEGS];
	/* An RMA read whose target streams into this channel (shm_rma.c). */
	struct shm_tx *lent;
	/* Every segment full with more to write (shm_stall_end). */
	struct shm_stall stall;
};

struct shm_ep {
	struct util_ep util;
	ofi_mutex_t lock;
	bool need_lock;
	bool cma_ok;
	bool hmem_detect;    /* FI_HMEM without desc: ask src/hmem */
	struct shm_ipc *ipc; /* device IPC state (shm_hmem_ipc.c) */
	size_t cma_threshold;
	bool adapt; /* FI_SHM_ADAPT: large transfers pick SAR or CMA */
	struct shm_region *rg;
	char name[SHM_NAME_MAX];

	/* transmit */
	struct shm_tx_peer *tx_peers;
	size_t tx_peer_cnt;
	struct shm_tx *tx;
	struct dlist_entry tx_free;
	struct dlist_entry sar_queue; /* SAR sends waiting for a channel */
	struct dlist_entry cma_list;  /* CMA, IPC and DC sends awaiting acks */
	struct dlist_entry rma_list;  /* RMA/atomics awaiting an ack */
	uint64_t rma_seq; /* RMA submissions so far (shm_rma_fenced) */
	/* Reads we stream into initiators' lent channels (shm_rma.c). */
	struct dlist_entry rma_src;
	struct dlist_entry ack_backlog; /* acks that found a full ring */
	size_t ack_backlog_cnt;
	/* Our segmented channels; sar_bound of them stream to a receiver. */
	struct shm_sar_chan sar_chan[SHM_SAR_CHANS];
	uint32_t sar_bound;
	uint32_t sar_lent;    /* lent to reads, at most SHM_SAR_LEND_MAX */
	uint32_t inject_next; /* where shm_inject_find looks first */
	/*
	 * The connection (shm_tx_peer.conn) each inject buffer was handed
	 * to, 0 for none: those of a receiver that died or closed are ours
	 * to take back, it frees them no more.
	 */
	uint32_t inject_owner[SHM_INJECT_BUFS];
	uint32_t conn_next;
	bool inject_starved; /* all were busy: check who holds them */

	/*
	 * AV removals, recorded by the AV's callback (under its lock, where
	 * ours may not be taken) and applied by shm_av_sync() under ours.
	 */
	ofi_mutex_t av_lock; /* leaf: guards av_removed only */
	_Atomic uint32_t av_dirty;
	bool av_overflow; /* a removal could not be recorded: forget all */
	fi_addr_t *av_removed;
	size_t av_removed_cnt;
	size_t av_removed_cap;
	/* Connections of removed addresses whose peer has yet to read us. */
	struct shm_tx_peer *retired;
	size_t retired_cnt;

	/* receive */
	struct shm_rx_peer rx_peers[SHM_MAX_PEERS + 1]; /* + SHM_ORPHAN_ID */
	/*
	 * The queues incoming messages are matched in: mq_own, or the
	 * owner's when another provider's endpoint drives this one
	 * (shm_peer.h); then only the messages of ours in it are ours.
	 */
	struct ofi_match_queue *mq;
	struct ofi_match_queue mq_own;
	const struct shm_owner *owner;
	struct dlist_entry sar_rx_list;
	size_t unexp_sar_bytes; /* buffered, see SHM_UNEXP_SAR_MAX */
	/*
	 * Freed unexpected messages kept for the next ones (at most
	 * SHM_UNEXP_CACHE): a receiver that trails a streaming sender takes
	 * one per message, and would pay malloc, free and the zeroing of a
	 * whole command each time.
	 */
	struct dlist_entry unexp_cache[SHM_UNEXP_SIZES];
	uint32_t unexp_cached[SHM_UNEXP_SIZES];
	uint32_t progress_ticks;
	/* This pass checks peers (shm_progress.c): by passes and by time. */
	bool live_check;
	uint64_t live_at;     /* ns of the last check */
	uint32_t closed_done; /* closed senders' slots we freed */
	/* Our ring's head slot claimed, never published: since when (ns). */
	uint64_t stuck_head;
	uint64_t stuck_since;
	/* Wakeups (shm_wake.c): our socket, bound under our name or not. */
	int wake_fd;
	bool wake_ok;
	bool armed;	 /* hdr.sleeping set by us since the last progress */
	bool armed_more; /* by more than one thread since (shm_wake.c) */
	pthread_t armer; /* the thread that armed last, and when (ns) */
	uint64_t armed_ns;
	/* FI_PROGRESS_AUTO (not under an owner): the thread driving our
	 * progress, from fi_enable until the first thing fi_close does,
	 * and when the application last drove it (ofi_progress.h). */
	struct ofi_progress *auto_prog;
	ofi_atomic64_t app_driven;
	bool tx_full; /* a send found a peer's ring full: nap, not sleep */
};

static inline struct shm_ep *shm_ep_of(struct fid_ep *ep_fid)
{
	return container_of(ep_fid, struct shm_ep, util.ep_fid);
}

void shm_av_sync(struct shm_ep *ep);
void shm_av_removed(struct util_ep *util_ep, fi_addr_t addr);

static inline uint64_t shm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Every entry point takes it: AV removals take effect before anything. */
static inline void shm_ep_lock(struct shm_ep *ep)
{
	if (ep->need_lock)
		ofi_mutex_lock(&ep->lock);
	if (OFI_UNLIKELY(
		    atomic_load_explicit(&ep->av_dirty, memory_order_acquire)))
		shm_av_sync(ep);
}

static inline void shm_ep_unlock(struct shm_ep *ep)
{
	if (OFI_UNLIKELY(ep->armed))
		shm_wake_check(ep);
	if (ep->need_lock)
		ofi_mutex_unlock(&ep->lock);
}

/* shm_init.c / shm_domain.c */
int shm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);
int shm_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);
int shm_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av, void *context);
int shm_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep, void *context);
int shm_make_name(char *buf, size_t len);
int shm_ep_create(struct util_domain *dom, const struct fi_info *info,
		  const char *name, size_t rx_size, void *context,
		  struct shm_ep **out);
int shm_tx_peer_connect(struct shm_ep *ep, fi_addr_t addr,
			struct shm_tx_peer **out);
struct shm_rx_peer *shm_rx_peer_slow(struct shm_ep *ep, uint16_t id);
bool shm_tx_peer_live(struct shm_ep *ep, struct shm_tx_peer *p);
void shm_tx_peers_check(struct shm_ep *ep);
void shm_rx_peer_release(struct shm_ep *ep, uint16_t id);

static inline bool shm_rx_peer_closed(struct shm_ep *ep, uint16_t id)
{
	if (OFI_UNLIKELY(id >= SHM_MAX_PEERS))
		return true; /* SHM_ORPHAN_ID */
	return atomic_load_explicit(&shm_peer_slot(ep->rg, id)->state,
				    memory_order_acquire) == SHM_PEER_CLOSED;
}

/*
 * Posts a command to @p's ring, claimed with shm_ring_claim_wake (@wake:
 * the claim cleared the owner's sleeping mark, so we poke it). The
 * position it records lets a close tell whether the peer still has to
 * read us, and keeps the slot from being taken over while our commands
 * are queued.
 */
static inline void shm_tx_commit(struct shm_ep *ep, struct shm_tx_peer *p,
				 void *cmd, uint64_t pos, bool wake)
{
	p->slot->last_pos = pos + 1;
	shm_ring_commit(cmd, pos);
	if (OFI_UNLIKELY(wake))
		shm_wake_send(ep, p->rg);
}

/* The sender of a command; NULL for an id that names no live slot. */
static inline struct shm_rx_peer *shm_rx_peer_get(struct shm_ep *ep,
						  uint16_t id)
{
	struct shm_rx_peer *p;

	if (OFI_UNLIKELY(id >= SHM_MAX_PEERS))
		return NULL;
	p = &ep->rx_peers[id];
	if (OFI_LIKELY(p->rg &&
		       p->gen == atomic_load_explicit(
					 &shm_peer_slot(ep->rg, id)->gen,
					 memory_order_relaxed)))
		return p;
	return shm_rx_peer_slow(ep, id);
}

static inline int shm_tx_peer_get(struct shm_ep *ep, fi_addr_t addr,
				  struct shm_tx_peer **out)
{
	if (OFI_LIKELY(addr < ep->tx_peer_cnt && ep->tx_peers[addr].rg &&
		       !ep->tx_peers[addr].stale)) {
		*out = &ep->tx_peers[addr];
		return 0;
	}
	return shm_tx_peer_connect(ep, addr, out);
}

/*
 * One of our inject buffers that no receiver or read holds, -1 if every
 * one is held. The search starts at the one found last, which a
 * request-response pattern (a ping-pong, an RMA read) has back by its
 * next call: one buffer serves it, its page mapped and in the TLB. A
 * search that went round all of them cost both processes a page fault
 * for each buffer's first use, and a TLB miss for each use after.
 */
static inline int shm_inject_find(struct shm_ep *ep)
{
	uint32_t i, idx;

	for (i = 0; i < SHM_INJECT_BUFS; i++) {
		idx = (ep->inject_next + i) % SHM_INJECT_BUFS;
		if (!atomic_load_explicit(&shm_inject_buf(ep->rg, idx)->busy,
					  memory_order_acquire)) {
			ep->inject_next = idx;
			return (int)idx;
		}
	}
	return -1;
}

/* shm_send.c: send protocols and the fi_ops_msg/fi_ops_tagged tables */
extern const struct fi_ops_msg shm_msg_ops;
extern const struct fi_ops_tagged shm_tagged_ops;
void shm_sar_tx_progress(struct shm_ep *ep);
void shm_sar_tx_check(struct shm_ep *ep);
bool shm_sar_tx_busy(struct shm_ep *ep, fi_addr_t addr);
void shm_sar_reset(struct shm_ep *ep);
void shm_sar_init(struct shm_ep *ep);
void shm_tx_done(struct shm_ep *ep, struct shm_tx *tx, int err);
int shm_sar_lend(struct shm_ep *ep, struct shm_tx *tx);
void shm_sar_unlend(struct shm_ep *ep, uint32_t chan);

/*
 * A transfer of @size that may take either SAR or CMA (shm_adapt.c);
 * smaller ones that would stream too while @p does not drain streams.
 * Past the CMA threshold a message goes by CMA anyway, and RMA (@rma)
 * streams, but not to a peer that does not drain streams: there every
 * few segments cost a handoff of the core.
 */
static inline bool shm_adapt_wanted(const struct shm_ep *ep,
				    const struct shm_tx_peer *p,
				    enum fi_hmem_iface iface, size_t count,
				    size_t size, bool rma)
{
	const struct ofi_hmem_override *o = &ep->util.domain->hmem_override;

	/* Copy overrides see every streamed byte; CMA would skip them, so
	 * a domain with overrides never adapts (fi_set_op(3)). */
	if (o->copy_from_hmem_iov || o->copy_to_hmem_iov)
		return false;
	if (!ep->adapt || !p->cma_ok || iface != FI_HMEM_SYSTEM ||
	    count > SHM_IOV_LIMIT)
		return false;
	if (size > ep->cma_threshold)
		return rma && p->adapt[shm_adapt_class(size)].cont_left;
	return size >= SHM_ADAPT_MIN || p->adapt[0].cont_left;
}

/* Whether a transfer of @size to @p that adapts goes by CMA now. */
static inline bool shm_adapt_now_cma(const struct shm_tx_peer *p, size_t size)
{
	return shm_adapt_cma(&p->adapt[shm_adapt_class(size)]);
}

void shm_adapt_start(struct shm_ep *ep, struct shm_tx *tx, bool cma);
void shm_adapt_end(struct shm_ep *ep, struct shm_tx *tx, int err);

static inline void shm_stall_begin(struct shm_stall *s)
{
	if (!s->since)
		s->since = shm_now_ns();
}

void shm_stall_end(struct shm_ep *ep, struct shm_stall *s,
		   struct shm_tx_peer *p);

/* shm_recv.c: receive posting, delivery, unexpected messages, SAR rx */
extern const struct ofi_match_ops shm_match_ops;

/* @um as ours, NULL when it is the owner's or another endpoint's. */
static inline struct shm_unexp *shm_unexp_of(struct shm_ep *ep,
					     struct ofi_unexp_msg *um)
{
	struct shm_unexp *u = container_of(um, struct shm_unexp, m);

	return um->ops == &shm_match_ops && u->ep == ep ? u : NULL;
}
ssize_t shm_recv_post(struct shm_ep *ep, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t addr, uint64_t tag,
		      uint64_t ignore, void *context, uint64_t flags,
		      bool tagged);
ssize_t shm_ep_cancel(fid_t fid, void *context);
/* A validated message command from @src_id; @data: its payload if local. */
bool shm_recv_cmd(struct shm_ep *ep, const struct shm_cmd *hdr,
		  const uint8_t *data);
void shm_sar_rx_progress(struct shm_ep *ep, struct shm_sar_rx *s);
void shm_sar_rx_fail(struct shm_ep *ep, struct shm_sar_rx *s, int err);
bool shm_unexp_from(struct shm_ep *ep, uint16_t id);
void shm_unexp_cache_free(struct shm_ep *ep);
/* Drains the stream of RMA write @hdr into @k (shm_rma.c); false: ENOMEM. */
bool shm_sar_rx_rma(struct shm_ep *ep, const struct shm_cmd *hdr,
		    struct shm_rma_sink *k);

/* shm_progress.c: the rings, validation of what peers wrote, liveness */
void shm_ep_progress(struct util_ep *util_ep);
void shm_progress_locked(struct shm_ep *ep);
void shm_ep_flush(struct shm_ep *ep);
void shm_ack_backlog_free(struct shm_ep *ep);
void shm_send_ack(struct shm_ep *ep, uint16_t src_id, uint64_t msg_id,
		  int status);
/* 0 < @err < FI_ERRNO_MAX: a code a peer may hand us. */
static inline bool shm_errno_valid(int64_t err)
{
	return err > 0 && err < FI_ERRNO_MAX;
}

/* shm_rma.c: RMA, and the command/ack path atomics share (the fi_ops_rma
 * table is shm_rma_ops.c's) */
extern const struct fi_ops_rma shm_rma_ops;
void shm_rma_handle_cmd(struct shm_ep *ep, const struct shm_cmd *slot);
void shm_rma_handle_resp(struct shm_ep *ep, struct shm_tx *tx, int status);
void shm_rma_progress(struct shm_ep *ep);
void shm_rma_ep_free(struct shm_ep *ep);
/* Streamed writes (SHM_PROTO_SAR), see shm_rma.c. */
void shm_rma_sink_write(struct shm_ep *ep, struct shm_rma_sink *k, size_t off,
			const uint8_t *data, size_t len);
void shm_rma_sink_done(struct shm_ep *ep, struct shm_rma_sink *k,
		       uint16_t src_id, int err);
void shm_rma_sar_drained(struct shm_ep *ep, struct shm_tx *tx);
void shm_rma_early_ack(struct shm_tx *tx, int status);
bool shm_rma_acks_only(struct shm_ep *ep);
void shm_rma_src_progress(struct shm_ep *ep);
void shm_rma_src_check(struct shm_ep *ep,
		       bool (*gone)(struct shm_ep *, uint16_t));
void shm_rma_src_orphan(struct shm_ep *ep, uint16_t id);
void shm_rma_src_flush(struct shm_ep *ep);

struct shm_rma_args {
	uint8_t op;		 /* SHM_OP_WRITE ... SHM_OP_COMPARE_ATOMIC */
	const struct iovec *iov; /* source (write) or destination (read) */
	void **desc;
	size_t count;
	const struct fi_rma_iov *rma;
	size_t rma_count;
	fi_addr_t addr;
	uint64_t data;
	void *context;
	uint64_t op_flags;
	bool nocomp;
	/* atomics */
	enum fi_datatype datatype;
	enum fi_op atomic_op;
	const struct iovec *cmp;
	void **cmp_desc;
	size_t cmp_count;
	const struct iovec *res;
	void **res_desc;
	size_t res_count;
};
ssize_t shm_rma_submit(struct shm_ep *ep, const struct shm_rma_args *a);

/* shm_atomic.c */
extern const struct fi_ops_atomic shm_atomic_ops;
int shm_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		     enum fi_op op, struct fi_atomic_attr *attr,
		     uint64_t flags);
/* Executes an atomic on verified local memory; a negative fi_errno. */
int shm_atomic_exec(struct shm_ep *ep, const struct shm_cmd *cmd,
		    const struct iovec *liov, struct util_mr **mr,
		    const uint8_t *src, const uint8_t *cmp, uint8_t *res);
/* 0 when @op on @dt is supported by the command kind @shm_op. */
int shm_atomic_check(uint8_t shm_op, enum fi_datatype dt, enum fi_op op,
		     size_t *dt_size, size_t *max_count);

/*
 * shm_hmem_ipc.c: device memory (FI_HMEM), the IPC-handle pool, device IPC
 * and device bounce buffers
 */
struct shm_ipc;
void shm_hmem_define_params(void);
int shm_ipc_init(struct shm_ep *ep);
void shm_ipc_fini(struct shm_ep *ep);
bool shm_ipc_wanted(struct shm_ep *ep, const struct shm_tx_peer *p,
		    enum fi_hmem_iface iface, size_t count, size_t size);
bool shm_ipc_bounce_wanted(struct shm_ep *ep, const struct shm_tx_peer *p,
			   enum fi_hmem_iface iface, uint64_t device,
			   size_t size, uint64_t op_flags, bool nocomp);
int shm_ipc_send_prep(struct shm_ep *ep, struct shm_tx_peer *p, fi_addr_t addr,
		      struct shm_cmd *cmd, struct shm_tx *tx);
void shm_ipc_tx_release(struct shm_ep *ep, struct shm_tx *tx);
bool shm_ipc_cmd_valid(const struct shm_cmd *hdr);
int shm_ipc_read(struct shm_ep *ep, struct ofi_rx_buf *rx,
		 const struct shm_cmd *hdr, uint16_t src_id, size_t off,
		 size_t len);
void shm_ipc_peer_gone(struct shm_ep *ep, uint16_t id, uint32_t gen);
void shm_ipc_addr_removed(struct shm_ep *ep, fi_addr_t addr);

/* Every copy between a user iov and a shared buffer: overrides first. */
static inline ssize_t shm_copy_from(struct shm_ep *ep, void *dst, size_t size,
				    enum fi_hmem_iface iface, uint64_t device,
				    const struct iovec *iov, size_t count,
				    size_t off)
{
	return ofi_copy_from_hmem_iov(&ep->util.domain->hmem_override, dst,
				      size, iface, device, iov, count, off);
}

static inline ssize_t shm_copy_to(struct shm_ep *ep, enum fi_hmem_iface iface,
				  uint64_t device, const struct iovec *iov,
				  size_t count, size_t off, const void *src,
				  size_t size)
{
	return ofi_copy_to_hmem_iov(&ep->util.domain->hmem_override, iface,
				    device, iov, count, off, src, size);
}

#endif /* SHM_H */
