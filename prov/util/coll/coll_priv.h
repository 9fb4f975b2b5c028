/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_priv.h - the collective engine's private header: what the files
 * of prov/util/coll/ share (layout constants, state, the region's
 * accessors, the pure schedule functions, each file's entry points).
 * Providers include ofi_coll.h only.
 *
 * The engine: fi_join_collective, the collective
 * ops of an endpoint (barrier ... gather, msg) and fi_query_collective,
 * implemented once over the endpoint's own RMA writes, so every provider
 * built on util_ep with RMA lends it by offering FI_COLLECTIVE.
 *
 * Each member of a group registers one region (its memory cache) in the
 * domain's MR map under a key every member can compute (group hash,
 * generation, rank), with offset addressing, so nothing has to be
 * exchanged before the first write: joining writes a hello into every
 * peer's region and completes once all were accepted (a peer not yet
 * registered refuses, and the write is retried).
 *
 *   region: flag[n][W] | ack[n] | hello[n] | rdv_key[n] | rdv_seq[n] |
 *           pack[n] | slot[n][W] (a head, then slot_size bytes)
 *
 * On top, a channel of W slots per ordered pair of members: the sender
 * writes chunk number s into the receiver's slot[sender][s % W] with s
 * as remote CQ data, which the receiver's provider hands to
 * ofi_coll_rma_landed once the bytes are in place: it stores s into
 * flag[sender][s % W] (one write per chunk, whatever the provider's write
 * ordering); the receiver consumes the slot (copy, or reduce through
 * util's atomic executor or a user op) and writes the count consumed back
 * into the sender's ack[receiver] every W/2 chunks: up to W chunks are
 * in flight, so acks and write completions overlap the next chunks.
 * A chunk's slot starts with a trailer (COLL_TRAILER bytes) whose first
 * word, in chunks sent from a copy, is what the sender consumed of the
 * receiver's chunks: the landing raises pack[sender] to it, an ack that
 * costs no write, so exchanges both ways (barrier, small allreduce) send
 * no acks at all. A collective is a list of
 * phases of such sends and receives (the schedule), all members deriving
 * the same list, so the channels' sequence numbers match without any
 * header on the wire. Transfers of direct_min bytes or more skip the
 * slots: the receiver registers their destination (its own buffer, or a
 * scratch buffer it folds from) and writes its key into the sender's
 * rdv_key[receiver] (the landing stores the sequence number into
 * rdv_seq), and the sender writes the whole payload there from the
 * user's buffer as one chunk: one copy instead of two, and one write.
 * A member that stalls for OFI_COLL_PROBE_MS has its
 * peers probe it with a write: a dead one fails the operation.
 */
#ifndef COLL_PRIV_H
#define COLL_PRIV_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ofi_atomic.h"
#include "ofi_coll.h"
#include "ofi_yield.h"

#define OFI_COLL_MAX_MEMBERS 4096
#define OFI_COLL_PROBE_MS    1000
#define OFI_COLL_JOIN_MS     30000
/* Slots per channel: 16 keep a small broadcast's sender from waiting
 * for the receiver's acknowledgement (shm 2-rank 8 B: 8 slots, 0.31 us;
 * 16, 0.24 us; 32, no better). */
#define OFI_COLL_WINDOW 16
_Static_assert(OFI_COLL_WINDOW <= 32, "coll_chan.posted: a bit per slot");
/* Chunks up to this size are sent from a copy: the step is done once the
 * write is posted, not a round trip later when the provider completes it */
#define OFI_COLL_BOUNCE 256
/* Allreduce payloads from here on take the ring, below recursive doubling
 * (measured on shm and tcp, 2 and 4 ranks: the crossing lies near 16 KiB) */
#define OFI_COLL_RING_MIN 16384
/* Steps and scratch bytes an op holds in itself (a 2..8-rank barrier or
 * small allreduce); more are allocated. */
#define OFI_COLL_STEPS_INL 8
#define OFI_COLL_TMP_INL   64
/* Default of FI_COLL_DIRECT_MIN: transfers from this size on are written
 * straight into the receiver's registered destination (shm and tcp, 2
 * and 4 ranks: tcp loses below 256 KiB, where the rendezvous round trip
 * costs more than the copy it saves; shm is even from 64 KiB) */
#define OFI_COLL_DIRECT_MIN 262144
/* Direct receive registrations a group keeps for its next calls: a
 * broadcast or reduce repeated on the same buffers registers them once
 * (scratch plus user buffer per channel of a small tree or ring). */
#define OFI_COLL_DREG_CACHE 8
/* Default of FI_COLL_SLOT_SIZE, halved in groups of more members than
 * OFI_COLL_SLOT_BIG_N: a region (n * OFI_COLL_WINDOW slots) stays within
 * 32 MiB up to 64 members. Smaller slots cost tcp: a 64 KiB broadcast
 * in two chunks took 20% longer. */
#define OFI_COLL_SLOT_SIZE  65536
#define OFI_COLL_SLOT_BIG_N 32
/* Groups up to this size share their regions (ofi_coll_shared): each
 * member maps n - 1 regions of n slots. */
#define OFI_COLL_SHARED_MAX 64
/* A reader's first sleep on a group with shared memory is put off this
 * long (it polls) after it announced itself: peers' unfenced loads of
 * the announcement see it by then. */
#define OFI_COLL_SLEEPER_NS 2000000

/* ------------------------------------------------------------------ */
/* Schedules: pure functions of (rank, group size, root, fan-out).      */

#define OFI_COLL_NONE SIZE_MAX

/* Rank relative to @root and back (both below @n): a compare, not a
 * division, on the path of every small collective. */
static inline size_t ofi_coll_vrank(size_t rank, size_t root, size_t n)
{
	return rank >= root ? rank - root : rank + n - root;
}

static inline size_t ofi_coll_rank(size_t vrank, size_t root, size_t n)
{
	return vrank + root >= n ? vrank + root - n : vrank + root;
}

/*
 * The @fanout-ary tree over relative ranks 0..n-1 rooted at 0 (children
 * of v are fanout*v+1 .. fanout*v+fanout): parent of @vrank (OFI_COLL_NONE
 * for the root), and its children written to @child (at most @fanout),
 * their number returned.
 */
size_t ofi_coll_tree_parent(size_t vrank, size_t fanout);
size_t ofi_coll_tree_children(size_t vrank, size_t n, size_t fanout,
			      size_t *child);

/*
 * Canonical (non-commutative) order: the root folds member i's
 * contribution at step i, i = 0..n-1, so the result is
 * ((x0 op x1) op x2) ... whoever the root is. Which member step @i reads.
 */
static inline size_t ofi_coll_canon_member(size_t i)
{
	return i;
}

/*
 * Recursive doubling (small commutative allreduce, barrier) runs over the
 * largest power of two p <= n; each of the n - p ranks above p first
 * folds into rank - p and takes the result back from it at the end.
 */
static inline size_t ofi_coll_pow2_floor(size_t n)
{
	size_t p = 1;

	while (p <= n / 2)
		p <<= 1;
	return p;
}

/*
 * Members that share a CPU: @place[i] is member i's placement (the host
 * and the one CPU it is pinned to, 0: not pinned). Each member with a
 * nonzero placement is led by the lowest-ranked member of the same
 * placement, every other member by itself: @lead[i] gets its leader's
 * rank. Returns the number of leaders (n: nobody shares). Recursive
 * doubling then runs among the leaders only, each gathering its members
 * first and answering them last: ranks that take turns on one CPU
 * exchange with one another only while their turns alternate anyway.
 */
size_t ofi_coll_leaders(const uint64_t *place, size_t n, uint32_t *lead);

/*
 * Ring reduce-scatter + allgather (large commutative allreduce): @count
 * elements cut into n blocks whose bounds fall on elements; block @i is
 * elements [*first, *first + *cnt). At reduce-scatter step k (0..n-2) a
 * rank sends block rank - k to rank + 1 and folds block rank - k - 1 from
 * rank - 1, ending with block rank + 1 complete; at allgather step k it
 * sends block rank + 1 - k and receives block rank - k (all mod n).
 */
static inline void ofi_coll_block(size_t count, size_t n, size_t i,
				  size_t *first, size_t *cnt)
{
	size_t q = count / n, r = count % n;

	*first = i * q + (i < r ? i : r);
	*cnt = q + (i < r);
}

static inline size_t ofi_coll_ring_rs_send(size_t rank, size_t k, size_t n)
{
	return (rank + n - k % n) % n;
}

static inline size_t ofi_coll_ring_ag_send(size_t rank, size_t k, size_t n)
{
	return (rank + 1 + n - k % n) % n;
}

size_t ofi_coll_leaders(const uint64_t *place, size_t n, uint32_t *lead);

/* ------------------------------------------------------------------ */
/* State.                                                               */

enum { CR_IDLE, CR_BUSY, CR_DONE };

/* An internal write; providers may use the context as scratch. */
struct coll_rma {
	struct fi_context2 ctx;
	int state; /* CR_*, set by ofi_coll_rma_done from any thread */
	int err;
	struct ofi_coll_ep *ce; /* woken when it completes */
	bool copied;  /* a chunk sent from bounce[]: nobody waits for it */
	uint64_t val; /* the 8-byte value a flag/ack/hello write carries */
	uint8_t bounce[OFI_COLL_BOUNCE];
};

/* The scalars first, then the writes, the 5 KiB window last: a step
 * touches the head and one slot, not pages apart (see OFI_HOT). */
struct coll_chan {
	fi_addr_t addr; /* the peer in the endpoint's AV */
	uint64_t key;	/* its region's key */
	/* me -> peer */
	uint64_t out_seq;   /* chunks posted */
	uint64_t out_acked; /* what coll_chan_acked last said */
	uint32_t posted;    /* data[] slots written, not yet seen done */
	uint32_t stalls;    /* chan_stalled's passes */
	bool ack_wait;	    /* a send waits for the peer's acks (window full) */
	bool joined;	    /* its region took our hello */
	/* peer -> me */
	uint64_t in_seq;
	uint64_t acked;	  /* the last in_seq acked */
	uint8_t *scratch; /* direct chunks to fold land here */
	size_t scratch_len;
	uint64_t probe_ms;
	/* At join: since when the provider fails our hellos (0: it does
	 * not), rather than the peer refusing them (not joined yet). */
	uint64_t unreach_ms;
	/* Its region mapped here (ofi_coll_shared): slot chunks and acks
	 * are stores, not writes. */
	uint8_t *peer;
	struct coll_rma ack;
	struct coll_rma rdv;   /* our key for a direct chunk from the peer */
	struct coll_rma probe; /* hello at join, liveness later */
	struct coll_rma data[OFI_COLL_WINDOW]; /* chunk s in data[s % W] */
};

enum step_kind { ST_SEND, ST_RECV, ST_COPY, ST_FOLD };
enum step_mode { RM_COPY, RM_REDUCE, RM_FOLD };

struct coll_step {
	uint8_t kind, mode;
	bool last; /* last step of its phase */
	uint32_t peer;
	uint8_t *buf;	    /* send: source; others: destination */
	const uint8_t *src; /* ST_COPY / ST_FOLD source */
	size_t len;
	size_t chunk, nchunks; /* send: chunks posted */
	bool done;	       /* and, for a send, their writes completed */
	bool direct;	       /* one chunk, into the receiver's buffer */
	bool reg, asked;       /* direct receive: registered, key sent */
	uint8_t dreg;	       /* its registration: dreg[dreg - 1], or 0 */
	uint64_t key;	       /* direct receive: the registration's key */
};

/*
 * A user buffer in device memory (FI_HMEM): the collective runs on a host
 * copy, filled before (in) and copied back after (out) through src/hmem
 * and the domain's copy overrides.
 */
struct coll_stage {
	void *user;
	uint8_t *host; /* NULL: host memory, used in place */
	size_t len;
	enum fi_hmem_iface iface;
	uint64_t device;
	bool out;
};

struct coll_op {
	struct dlist_entry entry;
	struct coll_stage st_buf, st_res;
	void *context;
	uint64_t flags;
	enum fi_op op;
	enum fi_datatype dt;
	size_t dtsize;
	struct fi_user_op uop; /* fn NULL: built-in op */
	struct coll_step *steps;
	size_t nsteps, cap, cur;
	uint8_t *tmp;
	/* Small collectives allocate nothing more than the op itself. */
	struct coll_step steps_inl[OFI_COLL_STEPS_INL];
	uint64_t tmp_inl[OFI_COLL_TMP_INL / sizeof(uint64_t)];
};

enum { G_JOINING, G_READY, G_FAILED };

/*
 * A cached registration of a direct receive's destination: kept in the
 * MR map between calls, its access taken away (FI_EACCES to any write),
 * given back to the call that lands in the same range again.
 */
struct coll_dreg {
	uint8_t *addr;
	size_t len;
	uint64_t key;
	uint64_t used; /* LRU stamp; 0: free */
	uint32_t refs; /* steps it is open for (enabled while > 0) */
};

struct coll_group {
	struct fid_mc mc_fid;
	struct ofi_coll_ep *ce;
	struct dlist_entry entry;
	size_t n, me;
	int state;
	int err;
	void *join_context;
	uint64_t join_start_ms; /* its first coll_join_progress (0: none yet) */
	uint64_t key;
	uint8_t *region;
	size_t region_len;
	size_t slot_size;
	bool registered;
	bool shared;	/* region from ofi_coll_shared's create */
	bool unlinked;	/* and its name gone */
	bool acks_owed; /* an ack due, not written: coll_chan_flush_owed */
	uint64_t stores, writes; /* chunks sent each way (logged at close) */
	uint64_t inl;		 /* stored ones whose payload was in the head */
	uint64_t quiet;		 /* ops completed OFI_CQ_QUIET */
	uint64_t ahead;		 /* next slots' lines prefetched */
	uint64_t fast;		 /* broadcasts run by bcast_fast */
	uint64_t
		sleeper_ns; /* when we announced a sleeper (region_sleeper_word) */
	uint64_t dregs, dhits; /* direct receives, those from dreg[] */
	uint64_t dclock;       /* dreg[]'s LRU clock */
	struct util_mr mr;     /* what targets find as the entry's context */
	fi_addr_t *members;
	/* Members sharing CPUs (ofi_coll_leaders), NULL if none do: each
	 * one's leader; the leaders in rank order, this one the
	 * lead_idx-th if it leads; and then the nled members it leads
	 * (one allocation with leaders). place: this one's placement. */
	uint32_t *lead, *leaders, *led;
	size_t nlead, lead_idx, nled;
	uint64_t place;
	/* here[i]: member i is pinned to our CPU, so it runs only while we
	 * do not (NULL: none is) */
	uint8_t *here;
	struct coll_chan *chan;
	struct dlist_entry ops;
	/* last: the fields every op touches keep their cache lines */
	struct coll_dreg dreg[OFI_COLL_DREG_CACHE];
};

struct coll_gen {
	struct coll_gen *next;
	uint64_t hash, count;
};

struct ofi_coll_ep {
	struct util_ep *ep;
	ofi_mutex_t lock;
	bool in_step;
	ofi_ep_progress_t prov_progress;
	struct fi_ops_cm cm;
	struct util_eq_prog eq_prog;
	bool on_eq;
	struct dlist_entry groups;
	/* Groups closed while writes of theirs were in flight: freed once
	 * those completed (coll_step_all), or with the endpoint. */
	struct dlist_entry closing;
	struct coll_gen *gens;
	size_t fanout, slot_size, probe_timeout, direct_min;
	const struct ofi_coll_shared *shared; /* NULL: RMA only */
	bool fold;	 /* members pinned to one CPU fold (ofi_coll_leaders) */
	size_t leading;	 /* groups this member leads (atomic: read unlocked) */
	uint64_t now_ms; /* read once per pass, when needed (0: not yet) */
	struct coll_op *spare; /* coll_op_alloc's cache of one */
	uint64_t rma_posts;    /* internal writes posted */
	/* The op coll_post runs, and rma_posts then: if it completes
	 * there with no write posted, its entry is OFI_CQ_QUIET. */
	struct coll_op *posting;
	uint64_t posting_rma;
};

static inline uint64_t coll_now_ms(void)
{
	struct timespec ts;

	/* A stalled pass reads it: the coarse clock costs no counter
	 * read, and ms (its tick or better) is all the probes need. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The pass's clock: read by the first stalled channel only, so that a
 * call whose transfers all went through reads none. */
static inline uint64_t coll_pass_ms(struct ofi_coll_ep *ce)
{
	if (!ce->now_ms)
		ce->now_ms = coll_now_ms();
	return ce->now_ms;
}

/* ------------------------------------------------------------------ */
/* The region: layout and accessors.                                     */

/* Word indexes of the region's header, and the slots' offsets. */
static inline size_t region_flag_word(size_t n, size_t i, uint64_t seq)
{
	(void)n;
	return i * OFI_COLL_WINDOW + seq % OFI_COLL_WINDOW;
}

static inline size_t region_ack_word(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + i;
}

static inline size_t region_hello_word(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + n + i;
}

static inline size_t region_rdv_key_word(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + 2 * n + i;
}

static inline size_t region_rdv_seq_word(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + 3 * n + i;
}

static inline size_t region_pack_word(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + 4 * n + i;
}

/* Nonzero once the owner's reader may sleep (ofi_coll_wait_ready):
 * only then do stores into its region look for a sleeper to wake. */
static inline size_t region_sleeper_word(size_t n)
{
	return n * OFI_COLL_WINDOW + 5 * n;
}

/*
 * A slot is a head of COLL_HEAD bytes, then slot_size payload bytes (64-
 * byte aligned, for the reductions); the head ends with the trailer
 * (COLL_TRAILER bytes: an ack word and padding), written with the
 * payload of chunks sent from a copy.
 */
#define COLL_HEAD    64
#define COLL_TRAILER 16
#define COLL_ACK_OFF (COLL_HEAD - COLL_TRAILER)
/*
 * A chunk stored by a peer (coll_chunk_store) says it landed in its slot's
 * head, at COLL_SFLAG_OFF, instead of in flag[]: the receiver polls the
 * line the chunk is in, and a chunk of up to COLL_INL bytes is in the
 * head too (at its start, 64-byte aligned), so one cache line crosses
 * per small chunk, not two. Writes never touch these head bytes.
 */
#define COLL_INL       40
#define COLL_SFLAG_OFF COLL_INL

static inline size_t region_slot_offset(size_t n, size_t slot_size, size_t i,
					uint64_t seq)
{
	size_t hdr = (region_sleeper_word(n) + 1) * sizeof(uint64_t);

	return ((hdr + 63) & ~(size_t)63) +
	       (i * OFI_COLL_WINDOW + seq % OFI_COLL_WINDOW) *
		       (COLL_HEAD + slot_size);
}

static inline volatile uint64_t *group_word(struct coll_group *g, size_t w)
{
	return (volatile uint64_t *)g->region + w;
}

static inline uint8_t *group_slot(struct coll_group *g, size_t i, uint64_t seq)
{
	return g->region + region_slot_offset(g->n, g->slot_size, i, seq);
}

/* Payload bytes a slot carries. */
static inline size_t group_chunk_size(struct coll_group *g)
{
	return g->slot_size;
}

static inline uint64_t load_acquire(volatile uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Chunk @seq from peer @i landed: stored (head flag) or written (flag[]);
 * *src says where its payload is (a small stored one: in the head). */
static inline OFI_HOT bool chunk_landed(struct coll_group *g, size_t i,
					uint64_t seq, size_t len, uint8_t **src)
{
	uint8_t *slot = group_slot(g, i, seq);

	if (__atomic_load_n((uint64_t *)(slot + COLL_SFLAG_OFF),
			    __ATOMIC_ACQUIRE) >= seq) {
		*src = len <= COLL_INL ? slot : slot + COLL_HEAD;
		return true;
	}
	*src = slot + COLL_HEAD;
	return load_acquire(group_word(g, region_flag_word(g->n, i, seq))) >=
	       seq;
}

/*
 * The head line of the slot a peer stores our next chunk into, asked for
 * in advance (non-blocking): the receiver's next call finds it in its
 * cache instead of missing on it; the sender's next store finds it owned
 * and does not stall its next locked instruction (a mutex, the CQ's) on
 * the line's transfer. Measured on shm's 2-rank 8-byte broadcast.
 */
static inline void line_prefetch(const void *p, bool write)
{
#if defined(__x86_64__) || defined(__i386__)
	if (write) { /* PREFETCHW: __builtin_prefetch needs -mprfchw */
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
		return;
	}
#endif
	if (write)
		__builtin_prefetch(p, 1);
	else
		__builtin_prefetch(p, 0);
}

/* After consuming chunk @seq from @peer: the line of its next one. */
static inline void slot_prefetch_next(struct coll_group *g, size_t peer,
				      uint64_t seq)
{
	line_prefetch(group_slot(g, peer, seq + 1), false);
	g->ahead++;
}

/* An internal write: 1: done (r->err says how), 0: in flight. */
static inline int coll_rma_poll(struct coll_rma *r)
{
	if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == CR_DONE) {
		r->state = CR_IDLE;
		return 1;
	}
	/* the provider's thread may be storing CR_DONE meanwhile */
	return __atomic_load_n(&r->state, __ATOMIC_RELAXED) == CR_IDLE;
}

/* ------------------------------------------------------------------ */
/* What the engine's writes carry.                                      */

/*
 * A chunk's CQ data: the sender's rank and the chunk's sequence number,
 * which the target stores into flag[rank] when the chunk landed.
 */
#define COLL_SEQ_BITS	46
#define COLL_SEQ_MASK	((1ULL << COLL_SEQ_BITS) - 1)
#define COLL_RDV	(1ULL << 46) /* a direct chunk's key: rdv_seq */
#define COLL_WAKE	(1ULL << 47) /* an ack or hello: no flag */
#define COLL_RANK_SHIFT 48

/* What a hello or probe writes into the peer's hello[me]: one of these,
 * our placement (coll_place) above COLL_PLACE_SHIFT. */
#define COLL_HELLO	  1
#define COLL_HELLO_MAPPED 2 /* and we mapped the peer's region */
#define COLL_HELLO_KIND	  0x7fULL
#define COLL_HELLO_FOLD	  0x80ULL /* we fold (ofi_coll_leaders) */
#define COLL_PLACE_SHIFT  8

/* Whether members of @g that share a CPU fold into one. */
static inline bool group_folds(const struct coll_group *g)
{
	return g->ce->fold && !g->shared;
}

static inline uint64_t coll_hello_value(const struct coll_group *g,
					uint64_t kind)
{
	return kind | (group_folds(g) ? COLL_HELLO_FOLD : 0) |
	       g->place << COLL_PLACE_SHIFT;
}

/* Registrations of direct receives: keys with this bit, counted. */
#define COLL_KEY_DIRECT	     (1ULL << 47)
#define COLL_KEY_DIRECT_MASK (COLL_KEY_DIRECT - 1)

static inline uint64_t coll_cq_data(size_t rank, uint64_t seq)
{
	return (uint64_t)rank << COLL_RANK_SHIFT | (seq & COLL_SEQ_MASK);
}

static inline uint64_t coll_cq_data_wake(size_t rank)
{
	return (uint64_t)rank << COLL_RANK_SHIFT | COLL_WAKE;
}

/* A collective call as the schedule builder sees it. */
enum coll_kind {
	CK_BARRIER,
	CK_BCAST,
	CK_ALLTOALL,
	CK_ALLREDUCE,
	CK_ALLGATHER,
	CK_REDUCE_SCATTER,
	CK_REDUCE,
	CK_SCATTER,
	CK_GATHER,
};

struct coll_args {
	enum coll_kind kind;
	const void *buf;
	void *result;
	size_t count;
	fi_addr_t coll_addr, root_addr;
	enum fi_datatype dt;
	enum fi_op op;
	uint64_t flags;
	void *context;
	void *desc, *result_desc; /* fi_mr_desc of device buffers, or NULL */
	/* fi_collectivemsg: the elements resultv[0] holds */
	bool result_counted;
	size_t result_count;
};

/* ------------------------------------------------------------------ */
/* Entry points of each file, for the others.                           */

/* coll_region.c: internal writes into peers' regions and their landing */
OFI_HOT ssize_t coll_rma_write_key(struct coll_group *g, size_t peer,
				   struct coll_rma *r, const void *buf,
				   size_t len, uint64_t key, size_t off,
				   uint64_t data, bool answer);
ssize_t coll_rma_write(struct coll_group *g, size_t peer, struct coll_rma *r,
		       const void *buf, size_t len, size_t off, uint64_t data,
		       bool answer);
ssize_t coll_rma_write_word(struct coll_group *g, size_t peer,
			    struct coll_rma *r, uint64_t val, size_t word,
			    bool answer);

/* coll_chan.c: the channels (sends and receives of a step) */
int coll_fail_peer(struct coll_group *g, int err);
OFI_HOT int coll_chan_drain(struct coll_group *g, struct coll_chan *ch,
			    bool all);
void coll_chunk_store(struct coll_group *g, struct coll_chan *ch, uint64_t seq,
		      const void *src, size_t len);
uint64_t coll_chan_acked(struct coll_group *g, size_t peer);
bool coll_chan_room(struct coll_group *g, size_t peer, uint64_t seq);
int coll_step_send(struct coll_group *g, struct coll_op *op,
		   struct coll_step *s);
OFI_HOT void coll_chan_flush_ack(struct coll_group *g, size_t peer);
void coll_chan_flush_owed(struct coll_group *g);
void coll_dreg_drop(struct coll_group *g, struct coll_dreg *d);
void coll_direct_unregister(struct coll_group *g, struct coll_step *s);
int coll_step_recv(struct coll_group *g, struct coll_op *op,
		   struct coll_step *s);
int coll_step_fold(struct coll_op *op, struct coll_step *s);

/* coll_ops.c: reductions (built-in and user-defined ops) */
const struct fi_user_op *ofi_coll_user_op(enum fi_op op);
int coll_reduce(struct coll_op *op, bool fold, void *acc, void *in, size_t len);
bool coll_op_supported(enum fi_op op, enum fi_datatype dt,
		       struct fi_user_op *uop);

/* coll_sched.c: schedule building (step lists from the group's shape) */
int coll_sched_build(struct coll_op *op, struct coll_group *g,
		     const struct coll_args *a, size_t root);

/* coll_progress.c: ops in flight and the engine's progress */
struct coll_op *coll_op_alloc(struct ofi_coll_ep *ce);
void coll_op_release(struct coll_op *op);
void coll_op_free(struct ofi_coll_ep *ce, struct coll_op *op);
OFI_HOT int coll_stage(struct util_ep *ep, void *desc, const void *user,
		       size_t len, bool in, bool out, struct coll_stage *st);
void coll_op_unregister(struct coll_group *g, struct coll_op *op);
OFI_HOT void coll_group_progress(struct coll_group *g);
OFI_HOT void coll_progress(struct util_ep *ep);
void coll_eq_progress(struct util_eq_prog *prog);

/* coll_call.c: the collective calls and fi_query_collective */
extern const struct fi_ops_collective coll_call_ops;
struct coll_group *coll_group_of(struct ofi_coll_ep *ce, fi_addr_t coll_addr);

/* coll_group.c: groups (join, close) */
bool coll_group_leads(const struct coll_group *g);
void coll_join_progress(struct coll_group *g);
void coll_group_free(struct coll_group *g);
bool coll_group_busy(struct coll_group *g);
uint64_t coll_place(void);
int coll_join(struct fid_ep *ep_fid, const void *addr, uint64_t flags,
	      struct fid_mc **mc, void *context);

#endif /* COLL_PRIV_H */
