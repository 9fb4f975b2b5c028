/*
 * shm.h - private definitions of the shm provider: the layout of the shared
 * region every endpoint owns (command ring, response ring, inject pool,
 * segmented-transfer channel, peer table), the wire format of commands and
 * responses, and the provider's fabric/domain/endpoint objects.
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

#include "ofi_util.h"

#define SHM_PROV_NAME	 "shm"
#define SHM_PROV_VERSION FI_VERSION(1, 0)
#define SHM_MAGIC	 0x6f666973686d3031ULL /* "ofishm01" */
#define SHM_VERSION	 3

#define SHM_ADDR_PREFIX "fi_shm://"
#define SHM_NAME_MAX	64 /* address string incl. NUL */

/* Sizes of one region; the ring sizes must be powers of two. */
#define SHM_CMD_SLOTS	 1024
#define SHM_CMD_SIZE	 256
#define SHM_RESP_SLOTS	 1024
#define SHM_INJECT_BUFS	 256
#define SHM_INJECT_SIZE	 4096
#define SHM_SAR_SEGS	 16
#define SHM_SAR_SEG_SIZE (64 * 1024)
#define SHM_MAX_PEERS	 256
#define SHM_IOV_LIMIT	 4
#define SHM_TX_SIZE	 1024 /* == SHM_RESP_SLOTS: acks never overflow */
#define SHM_RX_SIZE	 1024
/* Default for FI_SHM_CMA_THRESHOLD, see shm_init.c. */
#define SHM_CMA_THRESHOLD (4 * 1024 * 1024)

/* ------------------------------------------------------------------ */
/* Wire format.                                                         */

enum shm_op {
	SHM_OP_MSG = 1,
	SHM_OP_TAGGED,
	SHM_OP_WRITE, /* RMA and atomics: shm_rma.c, shm_atomic.c */
	SHM_OP_READ,
	SHM_OP_ATOMIC,
	SHM_OP_FETCH_ATOMIC,
	SHM_OP_COMPARE_ATOMIC,
	SHM_OP_MAX,
};

enum shm_proto {
	SHM_PROTO_INLINE = 1, /* data inside the command */
	SHM_PROTO_INJECT,     /* data in one of the sender's inject buffers */
	SHM_PROTO_CMA,	      /* receiver reads the sender's iov */
	SHM_PROTO_SAR,	      /* data streamed through the sender's channel */
	SHM_PROTO_IPC,	      /* receiver maps the sender's device buffer */
	SHM_PROTO_MAX,
};

/* Command flags (wire). */
#define SHM_CMD_DATA (1U << 0) /* cmd.data carries remote CQ data */
/*
 * Inline/inject only: the sender waits for delivery complete, so the
 * receiver acks msg_id once the message is in a receive buffer or queued
 * as unexpected (the larger protocols ack or drain anyway).
 */
#define SHM_CMD_ACK (1U << 1)
/* Ack status asking the sender to stream the message instead (CMA, IPC). */
#define SHM_ACK_NEED_SAR 1

#define SHM_CMD_HDR_SIZE 48
#define SHM_INLINE_MAX	 (SHM_CMD_SIZE - SHM_CMD_HDR_SIZE)

struct shm_wire_iov {
	uint64_t addr;
	uint64_t len;
};

struct shm_wire_rma_iov {
	uint64_t addr;
	uint64_t len;
	uint64_t key;
};

/* RMA/atomic command body: header, target iovs, then data or our iovs. */
#define SHM_RMA_HDR_SIZE   (8 + SHM_IOV_LIMIT * sizeof(struct shm_wire_rma_iov))
#define SHM_RMA_INLINE_MAX (SHM_INLINE_MAX - SHM_RMA_HDR_SIZE)

/*
 * One command ring slot. The first cache line holds the ring sequence,
 * the header and the first 16 inline bytes, so a small message costs the
 * receiver one line.
 */
struct shm_cmd {
	_Atomic uint64_t seq; /* ring sequence, owned by the ring */
	uint8_t op;
	uint8_t proto;
	uint16_t src_id; /* sender's slot in our peer table */
	uint32_t flags;
	uint64_t size; /* payload bytes */
	uint64_t tag;
	uint64_t data;
	uint64_t msg_id; /* sender cookie echoed in responses */
	union {
		uint8_t inline_data[SHM_INLINE_MAX];
		struct {
			uint32_t buf; /* inject buffer index */
		} inject;
		struct {
			uint32_t iov_count;
			uint32_t pad;
			struct shm_wire_iov iov[SHM_IOV_LIMIT];
		} cma;
		struct {
			uint32_t iface; /* enum fi_hmem_iface of the buffer */
			uint32_t handle_size;
			uint64_t device;
			uint64_t base;	     /* sender's allocation base */
			uint64_t alloc_size; /* its size */
			uint64_t offset;     /* payload start from base */
			uint8_t handle[OFI_HMEM_MAX_HANDLE_SIZE];
		} ipc;
		struct {
			uint8_t rma_count;
			uint8_t iov_count; /* CMA: the initiator's iovs */
			uint8_t datatype;  /* atomics */
			uint8_t atomic_op;
			uint32_t buf; /* SHM_PROTO_INJECT: initiator's buffer */
			struct shm_wire_rma_iov rma[SHM_IOV_LIMIT];
			union {
				uint8_t inline_data[SHM_RMA_INLINE_MAX];
				struct shm_wire_iov iov[SHM_IOV_LIMIT];
			};
		} rma;
	} u;
};

_Static_assert(sizeof(struct shm_cmd) == SHM_CMD_SIZE, "cmd slot size");
_Static_assert(offsetof(struct shm_cmd, u) == SHM_CMD_HDR_SIZE, "cmd hdr");

enum shm_resp_op {
	SHM_RESP_ACK = 1, /* a CMA transfer finished: status says how */
};

struct shm_resp {
	_Atomic uint64_t seq;
	uint32_t op;
	int32_t status; /* 0 or a negative fi_errno */
	uint64_t msg_id;
	uint8_t pad[40];
};

_Static_assert(sizeof(struct shm_resp) == OFI_CACHELINE, "resp slot size");

/*
 * Bounded MPSC ring (Vyukov): producers CAS tail, the owner consumes.
 * Constants, tail and head sit on separate lines so producers never read
 * a line the consumer writes on every message.
 */
struct shm_ring {
	uint32_t mask;
	uint32_t slot_size;
	uint64_t slots_off; /* from the ring */
	_Alignas(OFI_CACHELINE) _Atomic uint64_t tail;
	_Alignas(OFI_CACHELINE) uint64_t head; /* consumer only */
	_Alignas(OFI_CACHELINE) uint8_t end[];
};

/* Inject buffers: the sender allocates, the receiver frees after copying. */
struct shm_inject_buf {
	_Alignas(OFI_CACHELINE) _Atomic uint32_t busy;
	_Alignas(OFI_CACHELINE) uint8_t data[SHM_INJECT_SIZE];
};

/*
 * Segmented transfers: one active stream per sender endpoint; a segment
 * is filled by the sender (full = 1) and emptied by the receiver.
 */
struct shm_sar_seg {
	_Alignas(OFI_CACHELINE) _Atomic uint32_t full;
	uint32_t len;
	uint64_t msg_id;
	/* The sender's copy failed (an fi_errno): the receive fails too. */
	uint32_t err;
	_Alignas(OFI_CACHELINE) uint8_t data[SHM_SAR_SEG_SIZE];
};

enum shm_peer_state {
	SHM_PEER_FREE = 0,
	SHM_PEER_BUSY, /* being claimed */
	SHM_PEER_READY,
	/*
	 * The sender closed with commands still in our ring: its region
	 * lingers under slot.linger until we consumed them and free the slot.
	 */
	SHM_PEER_CLOSED,
};

#define SHM_LINGER_NAME_MAX 40

/*
 * Who sends to us: slot claimed by the sender on first contact. The
 * receiver's fast path reads only the first cache line (gen); the sender
 * stores last_pos, in the second, with every command it posts.
 */
struct shm_peer_slot {
	_Atomic uint32_t state;
	_Atomic uint32_t gen;
	int32_t pid;
	uint32_t pad;
	char name[SHM_NAME_MAX];
	/* Our ring position after the sender's last command. */
	uint64_t last_pos;
	/*
	 * SHM_PEER_CLOSED: the shm object the sender's region lingers as;
	 * empty: under its address.
	 */
	char linger[SHM_LINGER_NAME_MAX];
};

_Static_assert(sizeof(struct shm_peer_slot) == 2 * OFI_CACHELINE, "slot");

struct shm_region {
	uint64_t magic;
	uint32_t version;
	int32_t pid;
	uint64_t size;
	uint32_t cma_ok; /* the owner's syscall probe succeeded */
	_Atomic uint32_t ready;
	char name[SHM_NAME_MAX];
	uint64_t cmd_off;
	uint64_t resp_off;
	uint64_t inject_off;
	uint64_t sar_off;
	uint64_t peers_off;
	/* Senders that closed with commands queued here (they add). */
	_Alignas(OFI_CACHELINE) _Atomic uint32_t closed;
	/* The owner closed; linger receivers still have to read us. */
	uint32_t gone;
	_Atomic uint32_t linger;
	uint32_t linger_cnt; /* of linger_pid, for reclaim */
	int32_t linger_pid[SHM_MAX_PEERS];
};

/* ------------------------------------------------------------------ */
/* Ring operations (inline: they are the fast path).                    */

static inline void *shm_ring_slot(struct shm_ring *r, uint64_t pos)
{
	return (uint8_t *)r + r->slots_off + (pos & r->mask) * r->slot_size;
}

/* Claims a slot; NULL when full. Commit with shm_ring_commit(). */
static inline void *shm_ring_claim(struct shm_ring *r, uint64_t *pos_out)
{
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
	_Atomic uint64_t *seq;
	int64_t dif;

	for (;;) {
		seq = shm_ring_slot(r, pos);
		dif = (int64_t)(atomic_load_explicit(seq,
						     memory_order_acquire) -
				pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &r->tail, &pos, pos + 1,
				    memory_order_relaxed, memory_order_relaxed))
				break;
		} else if (dif < 0) {
			return NULL;
		} else {
			pos = atomic_load_explicit(&r->tail,
						   memory_order_relaxed);
		}
	}
	*pos_out = pos;
	return seq;
}

static inline void shm_ring_commit(void *slot, uint64_t pos)
{
	atomic_store_explicit((_Atomic uint64_t *)slot, pos + 1,
			      memory_order_release);
}

/* The next filled slot or NULL; release it with shm_ring_release(). */
static inline void *shm_ring_peek(struct shm_ring *r)
{
	_Atomic uint64_t *seq = shm_ring_slot(r, r->head);

	if (atomic_load_explicit(seq, memory_order_acquire) != r->head + 1)
		return NULL;
	return seq;
}

/* Whether the consumer has handled every command before @pos. */
static inline bool shm_ring_consumed(struct shm_ring *r, uint64_t pos)
{
	return (int64_t)(__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - pos) >=
	       0;
}

static inline void shm_ring_release(struct shm_ring *r, void *slot)
{
	atomic_store_explicit((_Atomic uint64_t *)slot, r->head + r->mask + 1,
			      memory_order_release);
	r->head++;
}

static inline struct shm_ring *shm_cmd_ring(struct shm_region *rg)
{
	return (struct shm_ring *)((uint8_t *)rg + rg->cmd_off);
}

static inline struct shm_ring *shm_resp_ring(struct shm_region *rg)
{
	return (struct shm_ring *)((uint8_t *)rg + rg->resp_off);
}

static inline struct shm_inject_buf *shm_inject_buf(struct shm_region *rg,
						    uint32_t i)
{
	return (struct shm_inject_buf *)((uint8_t *)rg + rg->inject_off) + i;
}

static inline struct shm_sar_seg *shm_sar_seg(struct shm_region *rg, uint32_t i)
{
	return (struct shm_sar_seg *)((uint8_t *)rg + rg->sar_off) + i;
}

static inline struct shm_peer_slot *shm_peer_slot(struct shm_region *rg,
						  uint32_t i)
{
	return (struct shm_peer_slot *)((uint8_t *)rg + rg->peers_off) + i;
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

/* A peer we send to (indexed by fi_addr). */
struct shm_tx_peer {
	struct shm_region *rg;	    /* NULL until first contact */
	struct shm_peer_slot *slot; /* ours in its table */
	uint16_t id;		    /* our slot in its peer table */
	uint32_t gen;
	pid_t pid;
	bool cma_ok;
	bool dead;
	bool unread; /* close: it has yet to read commands of ours */
	/*
	 * Its fi_addr was removed from the AV while transfers to it were in
	 * flight: they finish with this peer, new sends wait (-FI_EAGAIN).
	 */
	bool stale;
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
};

enum shm_tx_state {
	SHM_TX_FREE = 0,
	SHM_TX_CMA,	 /* waiting for the receiver's ack */
	SHM_TX_SAR_WAIT, /* queued behind another stream */
	SHM_TX_SAR,	 /* streaming through our channel */
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
	size_t done;  /* SAR: bytes written to the channel */
	uint32_t seg; /* SAR: next segment to fill */
	enum fi_hmem_iface iface;
	uint64_t device;
	size_t iov_count;
	struct iovec iov[SHM_IOV_LIMIT];
	struct shm_rma_tx *rma; /* RMA/atomic state, allocated once */
};

/* A posted receive. */
struct shm_rx {
	struct dlist_entry entry;
	void *context;
	uint64_t flags; /* op flags */
	fi_addr_t addr;
	uint64_t tag;
	uint64_t ignore;
	bool tagged;
	bool multi;
	size_t used;	/* FI_MULTI_RECV: bytes handed out */
	size_t pending; /* FI_MULTI_RECV: transfers still landing */
	bool released;
	enum fi_hmem_iface iface;
	uint64_t device;
	size_t iov_count;
	struct iovec iov[SHM_IOV_LIMIT];
};

/* Where an in-flight receive (CMA/SAR) writes. */
struct shm_sar_rx;

/* A message that arrived before its receive. */
struct shm_unexp {
	struct dlist_entry entry;
	uint16_t src_id;
	fi_addr_t addr;
	void *claim_ctx;	/* FI_CLAIM: the context that claimed it */
	uint8_t *data;		/* inline/inject copy or drained SAR bytes */
	struct shm_sar_rx *sar; /* SAR still draining into data */
	int err;		/* the drain failed (an fi_errno) */
	struct shm_cmd cmd;	/* header (+ CMA iovs) as received */
};

/* A receive whose data is still being pulled from the sender. */
struct shm_sar_rx {
	struct dlist_entry entry;
	uint16_t src_id;
	uint64_t msg_id;
	size_t size;
	size_t done;
	uint32_t seg;
	struct shm_rx *rx;	 /* matched receive, or NULL */
	struct shm_unexp *unexp; /* draining an unexpected message */
	size_t offset;		 /* into the receive buffer (multi-recv) */
	size_t cap;		 /* bytes the receive can take */
	int err;
	bool discard;
	void *claim_ctx;
	struct shm_cmd cmd; /* header for the completion */
};

struct shm_ep {
	struct util_ep util;
	ofi_mutex_t lock;
	bool need_lock;
	bool cma_ok;
	bool hmem_detect;    /* FI_HMEM without desc: ask src/hmem */
	struct shm_ipc *ipc; /* device IPC state (shm_hmem_ipc.c) */
	size_t cma_threshold;
	struct shm_region *rg;
	char name[SHM_NAME_MAX];

	/* transmit */
	struct shm_tx_peer *tx_peers;
	size_t tx_peer_cnt;
	struct shm_tx *tx;
	struct dlist_entry tx_free;
	struct dlist_entry sar_queue; /* SAR sends, first one is streaming */
	struct dlist_entry cma_list;  /* CMA, IPC and DC sends awaiting acks */
	struct dlist_entry rma_list;  /* RMA/atomics awaiting an ack */
	uint32_t inject_next;
	size_t inject_used;

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
	struct shm_rx *rx;
	struct dlist_entry rx_free;
	struct dlist_entry recv_list;
	struct dlist_entry trecv_list;
	struct dlist_entry unexp_list;
	struct dlist_entry unexp_tlist;
	struct dlist_entry claimed_list;
	struct dlist_entry sar_rx_list;
	uint32_t progress_ticks;
	uint32_t closed_done; /* closed senders' slots we freed */
};

void shm_av_sync(struct shm_ep *ep);

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
int shm_tx_peer_connect(struct shm_ep *ep, fi_addr_t addr,
			struct shm_tx_peer **out);
struct shm_rx_peer *shm_rx_peer_slow(struct shm_ep *ep, uint16_t id);
void shm_rx_peer_release(struct shm_ep *ep, uint16_t id);

static inline bool shm_rx_peer_closed(struct shm_ep *ep, uint16_t id)
{
	if (OFI_UNLIKELY(id >= SHM_MAX_PEERS))
		return true; /* SHM_ORPHAN_ID */
	return atomic_load_explicit(&shm_peer_slot(ep->rg, id)->state,
				    memory_order_acquire) == SHM_PEER_CLOSED;
}

/*
 * Posts a command to @p's ring. The position it records lets a close
 * tell whether the peer still has to read us, and keeps the slot from
 * being taken over while our commands are queued.
 */
static inline void shm_tx_commit(struct shm_tx_peer *p, void *cmd, uint64_t pos)
{
	p->slot->last_pos = pos + 1;
	shm_ring_commit(cmd, pos);
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

/* shm_msg.c */
extern const struct fi_ops_msg shm_msg_ops;
extern const struct fi_ops_tagged shm_tagged_ops;
void shm_ep_progress(struct util_ep *util_ep);
void shm_progress_locked(struct shm_ep *ep);
ssize_t shm_ep_cancel(fid_t fid, void *context);
void shm_ep_flush(struct shm_ep *ep);
void shm_send_ack(struct shm_ep *ep, uint16_t src_id, uint64_t msg_id,
		  int status);

/* shm_rma.c: RMA, and the command/ack path atomics share */
extern const struct fi_ops_rma shm_rma_ops;
void shm_rma_handle_cmd(struct shm_ep *ep, const struct shm_cmd *slot);
void shm_rma_handle_resp(struct shm_ep *ep, struct shm_tx *tx, int status);
void shm_rma_progress(struct shm_ep *ep);
void shm_rma_ep_free(struct shm_ep *ep);

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

/* shm_hmem_ipc.c: device memory (FI_HMEM) and the device IPC protocol */
struct shm_ipc;
void shm_hmem_define_params(void);
int shm_ipc_init(struct shm_ep *ep);
void shm_ipc_fini(struct shm_ep *ep);
void shm_hmem_detect(const struct iovec *iov, enum fi_hmem_iface *iface,
		     uint64_t *device);
bool shm_ipc_wanted(struct shm_ep *ep, const struct shm_tx_peer *p,
		    enum fi_hmem_iface iface, size_t count, size_t size);
int shm_ipc_send_prep(struct shm_ep *ep, struct shm_tx_peer *p, fi_addr_t addr,
		      struct shm_cmd *cmd, void *buf, enum fi_hmem_iface iface,
		      uint64_t device);
bool shm_ipc_cmd_valid(const struct shm_cmd *hdr);
int shm_ipc_read(struct shm_ep *ep, struct shm_rx *rx,
		 const struct shm_cmd *hdr, uint16_t src_id, size_t off,
		 size_t len);
void shm_ipc_discard(struct shm_ep *ep, const struct shm_cmd *hdr,
		     uint16_t src_id);
void shm_ipc_peer_gone(struct shm_ep *ep, uint16_t id, uint32_t gen);
void shm_ipc_addr_removed(struct shm_ep *ep, fi_addr_t addr);

/*
 * The memory interface of a user iov: from the MR descriptor of its first
 * element; without one, system memory unless the endpoint has FI_HMEM and
 * a device interface is up (we do not require FI_MR_HMEM).
 */
static inline void shm_iov_iface(struct shm_ep *ep, void **desc,
				 const struct iovec *iov, size_t count,
				 enum fi_hmem_iface *iface, uint64_t *device)
{
	struct util_mr *mr;

	*iface = FI_HMEM_SYSTEM;
	*device = 0;
	if (desc && count && desc[0]) {
		mr = ofi_mr_from_desc(desc[0]);
		*iface = mr->iface;
		*device = mr->device;
	} else if (OFI_UNLIKELY(ep->hmem_detect) && count) {
		shm_hmem_detect(iov, iface, device);
	}
}

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
