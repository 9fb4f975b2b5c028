/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_wire.h - the shm provider's shared-memory ABI: the wire format of
 * commands and responses, the layout of the region every endpoint owns
 * (fixed at build time), and the bounded MPSC rings over it, with the
 * private handles through which this process reaches a mapped region.
 *
 * Standalone on purpose (standard headers only), so that a unit test or a
 * fuzzer can include it without the provider.
 *
 * Trust rules: every byte of a region may be rewritten at any time by any
 * process that maps it. Nothing here derives a pointer, a size or a ring
 * mask from shared memory: the layout is `struct shm_layout`, the pointers
 * and masks live in `struct shm_region` / `struct shm_ring`, made privately
 * at map time, and the ring consumer's head is private (it only publishes
 * it for senders). Accessors mask their index, so even an unchecked index
 * stays inside the region; callers still reject out-of-range indices.
 */
#ifndef SHM_WIRE_H
#define SHM_WIRE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SHM_MAGIC 0x6f666973686d3031ULL /* "ofishm01" */
/* 5: the IPC-handle pool (device2); 6: SAR channels; 7: streamed RMA;
 * 10: 8 iovs per op (512-byte command slots: an RMA command carries 8
 * target and 8 initiator iovs); 11: SHM_CMD_NO_ACK; 12: the owner's
 * sleeping and wake_fail words (shm_wake.c); 13: the sleeping mark in
 * ring tails (SHM_RING_SLEEPING), the two words back in the header's
 * spare bytes; 14: producers claim against the published head, and a
 * consumed slot keeps its sequence (shm_ring_claim_wake) */
#define SHM_VERSION 14

#define SHM_ADDR_PREFIX "fi_shm://"
#define SHM_NAME_MAX	64 /* address string incl. NUL */

#define SHM_CACHELINE 64
#define SHM_PAGE      4096

/* Sizes of one region; every count is a power of two (accessors mask). */
#define SHM_CMD_SLOTS	    1024
#define SHM_CMD_SIZE	    512
#define SHM_RESP_SLOTS	    1024
#define SHM_INJECT_BUFS	    256
#define SHM_INJECT_SIZE	    4096
#define SHM_MAX_PEERS	    256
#define SHM_IOV_LIMIT	    8
#define SHM_IPC_HANDLE_SIZE 64 /* == OFI_HMEM_MAX_HANDLE_SIZE (shm.h) */
#define SHM_IPC_POOL_SIZE   64 /* IPC-handle pool entries */
/*
 * Device bounce buffers: per endpoint and device interface one device
 * allocation of SHM_BOUNCE_SLOTS slots, published in the pool. A slot is
 * the sender's until the receiver's ack for the command naming it.
 */
#define SHM_BOUNCE_SLOTS     64
#define SHM_BOUNCE_SLOT_SIZE (64 * 1024)

/* Segmented transfers: channels of segments, see struct shm_sar_seg. */
#define SHM_SAR_CHANS	  8
#define SHM_SAR_CHAN_SEGS 4
#define SHM_SAR_SEG_SIZE  (64 * 1024)

#define SHM_IS_POW2(x) ((x) && !((x) & ((x)-1)))
_Static_assert(SHM_IS_POW2(SHM_CMD_SLOTS), "cmd slots");
_Static_assert(SHM_IS_POW2(SHM_RESP_SLOTS), "resp slots");
_Static_assert(SHM_IS_POW2(SHM_INJECT_BUFS), "inject bufs");
_Static_assert(SHM_IS_POW2(SHM_SAR_CHANS), "sar channels");
_Static_assert(SHM_IS_POW2(SHM_SAR_CHAN_SEGS), "sar segs");
_Static_assert(SHM_IS_POW2(SHM_MAX_PEERS), "peers");
_Static_assert(SHM_IS_POW2(SHM_IPC_POOL_SIZE), "ipc pool");
_Static_assert(SHM_BOUNCE_SLOTS <= 64, "bounce slots fit a mask");

/* ------------------------------------------------------------------ */
/* Commands and responses.                                              */

enum shm_op {
	SHM_OP_MSG = 1,
	SHM_OP_TAGGED,
	SHM_OP_WRITE, /* RMA and atomics: shm_rma.c, shm_atomic.c */
	SHM_OP_READ,
	SHM_OP_ATOMIC,
	SHM_OP_FETCH_ATOMIC,
	SHM_OP_COMPARE_ATOMIC,
	/*
	 * fi_commit: the target iovs name the ranges, no payload (size 0,
	 * SHM_PROTO_INLINE); the ack carries the target's answer.
	 */
	SHM_OP_COMMIT,
	SHM_OP_MAX,
};

enum shm_proto {
	SHM_PROTO_INLINE = 1, /* data inside the command */
	SHM_PROTO_INJECT,     /* data in one of the sender's inject buffers */
	SHM_PROTO_CMA,	      /* receiver reads the sender's iov */
	/*
	 * Data streamed through the sender's channel; an RMA read streams
	 * the other way, into a channel the initiator lends (u.rma.buf).
	 */
	SHM_PROTO_SAR,
	SHM_PROTO_IPC, /* receiver maps the sender's device buffer */
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
/*
 * FI_COMMIT_COMPLETE: the target makes what this command wrote durable
 * (persistent registrations, or a receive buffer registered so) before it
 * acks. Messages: with SHM_CMD_ACK (inline, inject) or CMA/IPC, whose ack
 * then waits for the receive; never streamed.
 */
#define SHM_CMD_COMMIT (1U << 2)
/*
 * RMA: a whole write with its data inline that the target does not ack
 * (the collective engine's, whose landing its remote CQ data signals):
 * the initiator completed it once the command was in the ring.
 */
#define SHM_CMD_NO_ACK (1U << 3)
/* RMA: a chunk that is not the last one (no remote events yet). */
#define SHM_CMD_RMA_MORE (1U << 16)
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

/*
 * SHM_PROTO_IPC body: cmd.size bytes at @offset of pool entry @entry
 * (generation @gen) of the sender's region. Direct IPC (a user buffer)
 * and bounce slots look alike to the receiver; the handle itself is in
 * the pool, never in the command.
 */
struct shm_wire_ipc {
	uint32_t entry;
	uint32_t gen;
	uint64_t offset;
};

/*
 * RMA/atomic command body: header, the operation's target iovs (all of
 * them, in every chunk, so the target verifies the whole operation before
 * the first byte moves), then data or the initiator's iovs.
 */
#define SHM_RMA_HDR_SIZE   (16 + SHM_IOV_LIMIT * sizeof(struct shm_wire_rma_iov))
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
	uint64_t size; /* payload bytes (RMA: of this chunk) */
	uint64_t tag;  /* RMA: bytes of the whole operation */
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
		struct shm_wire_ipc ipc; /* SHM_PROTO_IPC */
		struct {
			uint8_t rma_count;
			uint8_t iov_count; /* CMA: the initiator's iovs */
			uint8_t datatype;  /* atomics */
			uint8_t atomic_op;
			/*
			 * SHM_PROTO_INJECT: the initiator's inject buffer;
			 * SHM_PROTO_SAR read: its channel lent to the target
			 */
			uint32_t buf;
			uint64_t offset; /* of this chunk in the operation */
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
_Static_assert(offsetof(struct shm_cmd, u.rma.inline_data) ==
		       SHM_CMD_HDR_SIZE + SHM_RMA_HDR_SIZE,
	       "rma command layout");
_Static_assert(sizeof(((struct shm_cmd *)0)->u.rma) <= SHM_INLINE_MAX,
	       "rma command size");

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

_Static_assert(sizeof(struct shm_resp) == SHM_CACHELINE, "resp slot size");

/* Inject buffers: the sender allocates, the receiver frees after copying. */
struct shm_inject_buf {
	_Alignas(SHM_CACHELINE) _Atomic uint32_t busy;
	_Alignas(SHM_CACHELINE) uint8_t data[SHM_INJECT_SIZE];
};

/*
 * Segmented transfers. A sender's region holds SHM_SAR_CHANS channels of
 * SHM_SAR_CHAN_SEGS segments each. A channel streams to one receiver at a
 * time (the sender names it in its slot of that receiver's peer table,
 * shm_peer_slot.sar_chan), and a receiver has at most one channel of a
 * sender: a slow or closed receiver holds up only its own channel. The
 * sender writes a channel's segments in ring order, messages to that
 * receiver back to back; each segment names its message (msg_id, the
 * sender's cookie from the command) and the offset of its bytes, so the
 * receiver finds a message's first segment (off 0) in the channel and
 * follows it segment by segment, checking both. A segment is filled by
 * the sender (full = 1) and emptied by the receiver (full = 0).
 */
struct shm_sar_seg {
	_Alignas(SHM_CACHELINE) _Atomic uint32_t full;
	uint32_t len;
	uint64_t msg_id;
	uint64_t off; /* of these bytes in the message */
	/* The sender's copy failed (an fi_errno): the receive fails too. */
	uint32_t err;
	_Alignas(SHM_CACHELINE) uint8_t data[SHM_SAR_SEG_SIZE];
};

_Static_assert(offsetof(struct shm_sar_seg, data) == SHM_CACHELINE,
	       "segment header: one line");

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
 * stores last_pos, in the second, with every command it posts, and
 * sar_chan, in the first, when a segmented channel starts or stops
 * streaming to us. Strings
 * here are read with NUL-bounded copies only.
 */
struct shm_peer_slot {
	_Atomic uint32_t state;
	_Atomic uint32_t gen;
	int32_t pid;
	/*
	 * 1 + the sender's segmented channel streaming to us, 0 for none
	 * (bounded by the receiver before use).
	 */
	_Atomic uint32_t sar_chan;
	char name[SHM_NAME_MAX];
	/* Our ring position after the sender's last command. */
	uint64_t last_pos;
	/*
	 * SHM_PEER_CLOSED: the shm object the sender's region lingers as;
	 * empty: under its address.
	 */
	char linger[SHM_LINGER_NAME_MAX];
};

_Static_assert(sizeof(struct shm_peer_slot) == 2 * SHM_CACHELINE, "slot");
_Static_assert(offsetof(struct shm_peer_slot, sar_chan) < SHM_CACHELINE,
	       "sar_chan in the line the receiver reads anyway");

/*
 * The IPC-handle pool (shm_hmem_ipc.c): the last section of every region,
 * written only by the region's owner (the sender) and read by its
 * receivers. An entry names one device allocation of the owner: its
 * bounce buffers and user buffers sent by direct IPC. It is published
 * once (seqlock on gen: odd while being written, even and non-zero when
 * valid) and rewritten only when no transfer in flight names it. A reader
 * copies the entry out, checks gen before and after the copy, and
 * validates every field of its copy.
 */
struct shm_ipc_pool_entry {
	_Atomic uint32_t gen;
	uint32_t iface; /* enum fi_hmem_iface */
	uint32_t handle_size;
	uint32_t pad;
	uint64_t device; /* the owner's device ordinal */
	uint64_t base;	 /* the owner's address: part of the cache key */
	uint64_t size;	 /* bytes of the allocation */
	uint8_t handle[SHM_IPC_HANDLE_SIZE];
	uint8_t pad2[24];
};

_Static_assert(sizeof(struct shm_ipc_pool_entry) == 2 * SHM_CACHELINE,
	       "pool entry");

/* The device section of a region: constant size, page aligned. */
struct shm_dev_area {
	struct shm_ipc_pool_entry pool[SHM_IPC_POOL_SIZE];
};

_Static_assert(sizeof(struct shm_dev_area) % SHM_PAGE == 0, "device area");

/* ------------------------------------------------------------------ */
/* The region.                                                          */

/*
 * Region header. magic, version and pid come first in every version, so
 * reclaim can judge regions of other layouts. pid and cma_ok are the
 * owner's claims: hints, never the target of process_vm_readv/writev
 * before the kernel confirmed them (shm_region.c).
 */
struct shm_hdr {
	uint64_t magic;
	uint32_t version;
	int32_t pid;
	uint64_t size;	 /* SHM_REGION_SIZE, for tools */
	uint32_t cma_ok; /* the owner's syscall probe succeeded */
	_Atomic uint32_t ready;
	char name[SHM_NAME_MAX];
	/* Senders that closed with commands queued here (they add). */
	_Alignas(SHM_CACHELINE) _Atomic uint32_t closed;
	/* The owner closed; linger receivers still have to read us. */
	uint32_t gone;
	/*
	 * The owner closed its endpoint and reads its rings and our buffers
	 * no more: senders fail what waits on it (set after its last
	 * progress). A peer faking it only fails its own transfers.
	 */
	_Atomic uint32_t rx_closed;
	_Atomic uint32_t linger;
	uint32_t linger_cnt; /* of linger_pid, for reclaim */
	int32_t linger_pid[SHM_MAX_PEERS];
	/*
	 * The owner's reader sleeps on its wake socket: a peer that stored
	 * into the owner's memory without a ring command (the collective
	 * engine) clears it and pokes the socket (shm_wake.c; ring
	 * producers go by SHM_RING_SLEEPING). Hints both: a wrong value
	 * costs a poke or a nap. Rarely written, so in the spare end of
	 * this line rather than a line of its own: the rings keep the
	 * offsets they had before these words (with the extra line, 8 B
	 * windowed RMA reads were a few percent slower).
	 */
	_Atomic uint32_t sleeping;
	/* A sender found no wake socket to poke: the owner naps instead. */
	_Atomic uint32_t wake_fail;
};

/*
 * The shared part of a ring: producers CAS tail; the consumer publishes
 * its head (shm_ring_release), which bounds the producers' claims, and
 * never reads it back but to repair it. On separate lines: producers
 * write the tail, the consumer the head on every message, and producers
 * load the head only when the one they saw last says full.
 */
struct shm_ring_ctl {
	_Alignas(SHM_CACHELINE) _Atomic uint64_t tail;
	_Alignas(SHM_CACHELINE) _Atomic uint64_t head;
};

/* Every byte of a region, in order; its size is the mapped size. */
struct shm_layout {
	struct shm_hdr hdr;
	struct shm_ring_ctl cmd_ctl;
	struct shm_cmd cmd[SHM_CMD_SLOTS];
	struct shm_ring_ctl resp_ctl;
	struct shm_resp resp[SHM_RESP_SLOTS];
	_Alignas(SHM_PAGE) struct shm_inject_buf inject[SHM_INJECT_BUFS];
	_Alignas(SHM_PAGE) struct shm_sar_seg
		sar[SHM_SAR_CHANS][SHM_SAR_CHAN_SEGS];
	struct shm_peer_slot peers[SHM_MAX_PEERS];
	_Alignas(SHM_PAGE) struct shm_dev_area dev;
};

#define SHM_REGION_SIZE sizeof(struct shm_layout)
_Static_assert(SHM_REGION_SIZE % SHM_PAGE == 0, "region size");
_Static_assert(offsetof(struct shm_layout, hdr.magic) == 0, "magic first");
_Static_assert(sizeof(struct shm_hdr) == 19 * SHM_CACHELINE, "header size");
_Static_assert(offsetof(struct shm_layout, hdr.pid) == 12, "pid");
_Static_assert(offsetof(struct shm_layout, cmd) % SHM_CACHELINE == 0, "cmd");
_Static_assert(offsetof(struct shm_layout, resp) % SHM_CACHELINE == 0, "resp");
_Static_assert(offsetof(struct shm_layout, inject) % SHM_PAGE == 0, "inject");

/* ------------------------------------------------------------------ */
/* Private handles.                                                     */

/* A ring as this process sees it: everything but ctl is private. */
struct shm_ring {
	struct shm_ring_ctl *ctl;
	uint8_t *slots;
	uint64_t mask;
	uint32_t slot_size;
	uint64_t head; /* consumer only: the truth, published to ctl->head */
	/* Producers: ctl->head as last loaded, a lower bound of the truth. */
	_Atomic uint64_t seen_head;
};

/*
 * A mapped region: the mapping (SHM_REGION_SIZE bytes) and what this
 * process made of it when mapping it.
 */
struct shm_region {
	struct shm_layout *map;
	struct shm_ring cmd, resp;
	char name[SHM_NAME_MAX]; /* its address, checked at map time */
	pid_t pid;		 /* owner: the header's claim (liveness only) */
	pid_t cma_pid;		 /* owner confirmed by the kernel, or 0 */
	bool cma_ok;		 /* the owner says it can do CMA */
	int fd;			 /* ours: kept open, see shm_region.c */
	dev_t dev;		 /* peers': the file we mapped */
	ino_t ino;
};

static inline struct shm_hdr *shm_hdr(struct shm_region *rg)
{
	return &rg->map->hdr;
}

static inline void shm_ring_init(struct shm_ring *r, struct shm_ring_ctl *ctl,
				 void *slots, uint64_t nslots,
				 uint32_t slot_size)
{
	r->ctl = ctl;
	r->slots = slots;
	r->mask = nslots - 1;
	r->slot_size = slot_size;
	r->head = 0;
	atomic_init(&r->seen_head, 0);
}

/* Private handles of a mapping; the consumer head starts at 0. */
static inline void shm_region_handles(struct shm_region *rg)
{
	shm_ring_init(&rg->cmd, &rg->map->cmd_ctl, rg->map->cmd, SHM_CMD_SLOTS,
		      sizeof(struct shm_cmd));
	shm_ring_init(&rg->resp, &rg->map->resp_ctl, rg->map->resp,
		      SHM_RESP_SLOTS, sizeof(struct shm_resp));
}

/* ------------------------------------------------------------------ */
/* Ring operations (inline: they are the fast path).                    */

static inline void *shm_ring_slot(const struct shm_ring *r, uint64_t pos)
{
	return r->slots + (pos & r->mask) * r->slot_size;
}

/*
 * A slot's sequence is one past the position of the last command
 * published in it; a new ring's slots look as if a lap before the first
 * had filled them. Owner only, before the region is announced.
 */
static inline void shm_ring_format(struct shm_ring *r)
{
	uint64_t i;

	for (i = 0; i <= r->mask; i++)
		atomic_store_explicit((_Atomic uint64_t *)shm_ring_slot(r, i),
				      i - r->mask, memory_order_relaxed);
}

/*
 * The owner's mark in a ring's tail (shm_wake.c): its reader is about to
 * sleep. The producer whose claim moves the tail past the mark clears it
 * with the same compare-and-swap, and so learns, from a value it loaded
 * anyway, that it must poke the owner once it has published: the busy
 * path costs no fence and no load of its own (a fence and a load of the
 * owner's header after each command made 8 B RMA reads 15% slower).
 * Positions never reach bit 63.
 */
#define SHM_RING_SLEEPING (1ULL << 63)

/*
 * Claims a slot; NULL when full, or when the published head makes no
 * sense (a hostile owner can write it: we never spin on it). Commit with
 * shm_ring_commit(). With @wake, the claim clears the owner's mark and
 * *@wake says whether it was set (the caller pokes, see
 * SHM_RING_SLEEPING); without, it keeps the mark for the next producer.
 *
 * The slot at @pos is free once the consumer's head passed its previous
 * lap. The producer checks that against the head it last loaded and only
 * loads the published one when that looks full: a claim reads no line
 * the consumer wrote since, and the slot's line goes from the consumer to
 * the producer as one ownership request (reading a sequence the consumer
 * had written cost a second transfer per command, and most of a send).
 */
static inline void *shm_ring_claim_wake(struct shm_ring *r, uint64_t *pos_out,
					bool *wake)
{
	uint64_t raw =
		atomic_load_explicit(&r->ctl->tail, memory_order_relaxed);
	uint64_t seen =
		atomic_load_explicit(&r->seen_head, memory_order_acquire);
	uint64_t pos, now;
	unsigned tries;

	for (tries = 0; tries < 4096; tries++) {
		pos = raw & ~SHM_RING_SLEEPING;
		if (pos - seen > r->mask) {
			seen = atomic_load_explicit(&r->ctl->head,
						    memory_order_acquire);
			if (pos - seen > r->mask)
				return NULL;
			atomic_store_explicit(&r->seen_head, seen,
					      memory_order_release);
		}
		now = pos + 1;
		if (!wake)
			now |= raw & SHM_RING_SLEEPING;
		if (atomic_compare_exchange_weak_explicit(
			    &r->ctl->tail, &raw, now, memory_order_relaxed,
			    memory_order_relaxed))
			goto out;
	}
	return NULL;
out:
	*pos_out = pos;
	if (wake)
		*wake = raw & SHM_RING_SLEEPING;
	return shm_ring_slot(r, pos);
}

static inline void *shm_ring_claim(struct shm_ring *r, uint64_t *pos_out)
{
	return shm_ring_claim_wake(r, pos_out, NULL);
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

/*
 * Whether the consumer has handled every command before @pos, from the
 * head it published (senders only: the consumer knows its own).
 */
static inline bool shm_ring_consumed(struct shm_ring *r, uint64_t pos)
{
	return (int64_t)(atomic_load_explicit(&r->ctl->head,
					      memory_order_acquire) -
			 pos) >= 0;
}

/* The head the consumer published (senders: progress of a peer). */
static inline uint64_t shm_ring_published_head(struct shm_ring *r)
{
	return atomic_load_explicit(&r->ctl->head, memory_order_relaxed);
}

/*
 * The slot keeps its sequence: the next lap's is another. Publishing the
 * head, with release, hands the slot back to producers.
 */
static inline void shm_ring_release(struct shm_ring *r, void *slot)
{
	(void)slot; /* always the slot at head: peek handed it out */
	r->head++;
	atomic_store_explicit(&r->ctl->head, r->head, memory_order_release);
}

/*
 * Whether the slot at our head was claimed by a producer (the tail moved
 * past it) but is not published. Consumer only; the tail is a hint.
 */
static inline bool shm_ring_stuck(struct shm_ring *r)
{
	uint64_t tail =
		atomic_load_explicit(&r->ctl->tail, memory_order_relaxed) &
		~SHM_RING_SLEEPING;

	return (int64_t)(tail - r->head) > 0 && !shm_ring_peek(r);
}

/*
 * Gives up the claimed, unpublished slot at head, for good. The sequence
 * is compared and swapped for itself, so a commit that landed meanwhile
 * wins (false: consume it instead); one that lands later names a lap
 * that is over and is never consumed. Only for a slot whose producer can
 * never commit (see shm_progress.c).
 */
static inline bool shm_ring_skip(struct shm_ring *r)
{
	_Atomic uint64_t *seq = shm_ring_slot(r, r->head);
	uint64_t v = atomic_load_explicit(seq, memory_order_acquire);

	if (v == r->head + 1 ||
	    !atomic_compare_exchange_strong_explicit(
		    seq, &v, v, memory_order_acq_rel, memory_order_acquire))
		return false;
	r->head++;
	atomic_store_explicit(&r->ctl->head, r->head, memory_order_release);
	return true;
}

/*
 * Publishes the head again when the shared word lost it (anyone who maps
 * the region can write it, and producers would take the ring for full
 * until the next command, which then never comes). True if repaired.
 */
static inline bool shm_ring_repair(struct shm_ring *r)
{
	if (atomic_load_explicit(&r->ctl->head, memory_order_relaxed) ==
	    r->head)
		return false;
	atomic_store_explicit(&r->ctl->head, r->head, memory_order_release);
	return true;
}

/* ------------------------------------------------------------------ */
/* Region accessors: private base + build-time layout, index masked.    */

static inline struct shm_ring *shm_cmd_ring(struct shm_region *rg)
{
	return &rg->cmd;
}

static inline struct shm_ring *shm_resp_ring(struct shm_region *rg)
{
	return &rg->resp;
}

static inline struct shm_inject_buf *shm_inject_buf(struct shm_region *rg,
						    uint32_t i)
{
	return &rg->map->inject[i & (SHM_INJECT_BUFS - 1)];
}

static inline struct shm_sar_seg *shm_sar_seg(struct shm_region *rg,
					      uint32_t chan, uint32_t i)
{
	return &rg->map->sar[chan & (SHM_SAR_CHANS - 1)]
			    [i & (SHM_SAR_CHAN_SEGS - 1)];
}

static inline struct shm_peer_slot *shm_peer_slot(struct shm_region *rg,
						  uint32_t i)
{
	return &rg->map->peers[i & (SHM_MAX_PEERS - 1)];
}

static inline struct shm_ipc_pool_entry *shm_ipc_pool(struct shm_region *rg,
						      uint32_t i)
{
	return &rg->map->dev.pool[i & (SHM_IPC_POOL_SIZE - 1)];
}

/*
 * A NUL-terminated private copy of a string a peer wrote (@len bytes of
 * room, @len >= 1); false when it did not fit, i.e. was not terminated.
 */
static inline bool shm_copy_str(char *dst, const volatile char *src, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		dst[i] = src[i];
		if (!dst[i])
			return true;
	}
	dst[len - 1] = '\0';
	return false;
}

#endif /* SHM_WIRE_H */
