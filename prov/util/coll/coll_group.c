/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_coll.c - the collective engine: fi_join_collective, the collective
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
/* Schedules.                                                           */

size_t ofi_coll_tree_parent(size_t vrank, size_t fanout)
{
	if (!vrank || !fanout)
		return OFI_COLL_NONE;
	if (fanout == 2) /* the default: a shift, not a division */
		return (vrank - 1) >> 1;
	return (vrank - 1) / fanout;
}

size_t ofi_coll_tree_children(size_t vrank, size_t n, size_t fanout,
			      size_t *child)
{
	size_t i, c, k = 0;

	for (i = 1; i <= fanout; i++) {
		c = vrank * fanout + i;
		if (c >= n || c <= vrank)
			break;
		child[k++] = c;
	}
	return k;
}

size_t ofi_coll_leaders(const uint64_t *place, size_t n, uint32_t *lead)
{
	size_t i, j, nlead = 0;

	for (i = 0; i < n; i++) {
		lead[i] = (uint32_t)i;
		/* once per join, and only pinned ranks scan: quadratic
		 * at worst (4096 pinned members: milliseconds) */
		for (j = 0; place[i] && j < i; j++) {
			if (lead[j] == j && place[j] == place[i]) {
				lead[i] = (uint32_t)j;
				break;
			}
		}
		nlead += lead[i] == i;
	}
	return nlead;
}

/* ------------------------------------------------------------------ */
/* User-defined reductions: process-wide, named by FI_USER_OP_BASE + i. */

static pthread_mutex_t coll_uop_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fi_user_op coll_uops[OFI_COLL_USER_OPS];

int ofi_coll_user_op_set(union fi_override_op *fn, uint64_t flags)
{
	struct fi_user_op *u;
	size_t i;
	int ret = -FI_ENOSPC;

	if (!fn || !fn->user_op || flags)
		return -FI_EINVAL;
	u = fn->user_op;
	pthread_mutex_lock(&coll_uop_lock);
	if (!u->fn) { /* unregister u->op */
		i = (size_t)u->op - FI_USER_OP_BASE;
		ret = -FI_EINVAL;
		if ((size_t)u->op >= FI_USER_OP_BASE && i < OFI_COLL_USER_OPS &&
		    coll_uops[i].fn) {
			memset(&coll_uops[i], 0, sizeof(coll_uops[i]));
			ret = 0;
		}
		goto out;
	}
	for (i = 0; i < OFI_COLL_USER_OPS; i++) {
		if (coll_uops[i].fn)
			continue;
		coll_uops[i] = *u;
		u->op = (enum fi_op)(FI_USER_OP_BASE + i);
		coll_uops[i].op = u->op;
		ret = 0;
		break;
	}
out:
	pthread_mutex_unlock(&coll_uop_lock);
	return ret;
}

const struct fi_user_op *ofi_coll_user_op(enum fi_op op)
{
	size_t i = (size_t)op - FI_USER_OP_BASE;

	if ((size_t)op < FI_USER_OP_BASE || i >= OFI_COLL_USER_OPS ||
	    !coll_uops[i].fn)
		return NULL;
	return &coll_uops[i];
}

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
	uint64_t out_acked; /* what chan_acked last said */
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
	uint64_t join_start_ms; /* its first join_progress (0: none yet) */
	uint64_t key;
	uint8_t *region;
	size_t region_len;
	size_t slot_size;
	bool registered;
	bool shared;		 /* region from ofi_coll_shared's create */
	bool unlinked;		 /* and its name gone */
	bool acks_owed;		 /* an ack due, not written: chan_flush_owed */
	uint64_t stores, writes; /* chunks sent each way (logged at close) */
	uint64_t inl;		 /* stored ones whose payload was in the head */
	uint64_t quiet;		 /* ops completed OFI_CQ_QUIET */
	uint64_t ahead;		 /* next slots' lines prefetched */
	uint64_t fast;		 /* broadcasts run by bcast_fast */
	uint64_t sleeper_ns;	 /* when we announced a sleeper (w_sleeper) */
	uint64_t dregs, dhits;	 /* direct receives, those from dreg[] */
	uint64_t dclock;	 /* dreg[]'s LRU clock */
	struct util_mr mr;	 /* what targets find as the entry's context */
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
	struct coll_op *spare; /* op_alloc's cache of one */
	uint64_t rma_posts;    /* internal writes posted */
	/* The op coll_post runs, and rma_posts then: if it completes
	 * there with no write posted, its entry is OFI_CQ_QUIET. */
	struct coll_op *posting;
	uint64_t posting_rma;
};

static uint64_t coll_now_ms(void)
{
	struct timespec ts;

	/* A stalled pass reads it: the coarse clock costs no counter
	 * read, and ms (its tick or better) is all the probes need. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The pass's clock: read by the first stalled channel only, so that a
 * call whose transfers all went through reads none. */
static uint64_t coll_pass_ms(struct ofi_coll_ep *ce)
{
	if (!ce->now_ms)
		ce->now_ms = coll_now_ms();
	return ce->now_ms;
}

/* Word indexes of the region's header, and the slots' offsets. */
static size_t w_flag(size_t n, size_t i, uint64_t seq)
{
	(void)n;
	return i * OFI_COLL_WINDOW + seq % OFI_COLL_WINDOW;
}

static size_t w_ack(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + i;
}

static size_t w_hello(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + n + i;
}

static size_t w_rdv_key(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + 2 * n + i;
}

static size_t w_rdv_seq(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + 3 * n + i;
}

static size_t w_pack(size_t n, size_t i)
{
	return n * OFI_COLL_WINDOW + 4 * n + i;
}

/* Nonzero once the owner's reader may sleep (ofi_coll_wait_ready):
 * only then do stores into its region look for a sleeper to wake. */
static size_t w_sleeper(size_t n)
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
 * A chunk stored by a peer (chunk_store) says it landed in its slot's
 * head, at COLL_SFLAG_OFF, instead of in flag[]: the receiver polls the
 * line the chunk is in, and a chunk of up to COLL_INL bytes is in the
 * head too (at its start, 64-byte aligned), so one cache line crosses
 * per small chunk, not two. Writes never touch these head bytes.
 */
#define COLL_INL       40
#define COLL_SFLAG_OFF COLL_INL

static size_t slot_off(size_t n, size_t slot_size, size_t i, uint64_t seq)
{
	size_t hdr = (w_sleeper(n) + 1) * sizeof(uint64_t);

	return ((hdr + 63) & ~(size_t)63) +
	       (i * OFI_COLL_WINDOW + seq % OFI_COLL_WINDOW) *
		       (COLL_HEAD + slot_size);
}

static volatile uint64_t *g_word(struct coll_group *g, size_t w)
{
	return (volatile uint64_t *)g->region + w;
}

static uint8_t *g_slot(struct coll_group *g, size_t i, uint64_t seq)
{
	return g->region + slot_off(g->n, g->slot_size, i, seq);
}

/* Payload bytes a slot carries. */
static size_t g_chunk(struct coll_group *g)
{
	return g->slot_size;
}

static uint64_t load_acq(volatile uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Chunk @seq from peer @i landed: stored (head flag) or written (flag[]);
 * *src says where its payload is (a small stored one: in the head). */
static OFI_HOT bool chunk_landed(struct coll_group *g, size_t i, uint64_t seq,
				 size_t len, uint8_t **src)
{
	uint8_t *slot = g_slot(g, i, seq);

	if (__atomic_load_n((uint64_t *)(slot + COLL_SFLAG_OFF),
			    __ATOMIC_ACQUIRE) >= seq) {
		*src = len <= COLL_INL ? slot : slot + COLL_HEAD;
		return true;
	}
	*src = slot + COLL_HEAD;
	return load_acq(g_word(g, w_flag(g->n, i, seq))) >= seq;
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
static void slot_ahead(struct coll_group *g, size_t peer, uint64_t seq)
{
	line_prefetch(g_slot(g, peer, seq + 1), false);
	g->ahead++;
}

/*
 * Something the engine waits for happened, maybe on a provider's progress
 * thread: a reader asleep in fi_cq_sread or fi_eq_sread wakes up and
 * drives the engine (FI_PROGRESS_AUTO runs nothing else of it).
 */
static void coll_wake(struct ofi_coll_ep *ce)
{
	struct util_ep *ep = ce->ep;

	if (ep->tx_cq)
		ofi_wait_signal(ep->tx_cq->wait);
	/* where a collective's completion is counted: fi_cntr_wait there */
	if (ep->cntrs[OFI_CNTR_TX])
		ofi_wait_signal(ep->cntrs[OFI_CNTR_TX]->wait);
	if (ep->eq)
		ofi_wait_signal(ep->eq->wait);
}

OFI_HOT void ofi_coll_rma_done(void *context, int err)
{
	struct coll_rma *r = context;
	struct ofi_coll_ep *ce = r->ce;

	r->err = err;
	__atomic_store_n(&r->state, CR_DONE, __ATOMIC_RELEASE);
	coll_wake(ce);
}

/* 1: done (r->err says how), 0: in flight. */
static int rma_poll(struct coll_rma *r)
{
	if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == CR_DONE) {
		r->state = CR_IDLE;
		return 1;
	}
	/* the provider's thread may be storing CR_DONE meanwhile */
	return __atomic_load_n(&r->state, __ATOMIC_RELAXED) == CR_IDLE;
}

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
static bool group_folds(const struct coll_group *g)
{
	return g->ce->fold && !g->shared;
}

static uint64_t coll_hello(const struct coll_group *g, uint64_t kind)
{
	return kind | (group_folds(g) ? COLL_HELLO_FOLD : 0) |
	       g->place << COLL_PLACE_SHIFT;
}

/* Registrations of direct receives: keys with this bit, counted. */
#define COLL_KEY_DIRECT	     (1ULL << 47)
#define COLL_KEY_DIRECT_MASK (COLL_KEY_DIRECT - 1)

static uint64_t coll_signal(size_t rank, uint64_t seq)
{
	return (uint64_t)rank << COLL_RANK_SHIFT | (seq & COLL_SEQ_MASK);
}

static uint64_t coll_signal_wake(size_t rank)
{
	return (uint64_t)rank << COLL_RANK_SHIFT | COLL_WAKE;
}

/*
 * @data: 0, or the remote CQ data (coll_signal*): the target's
 * provider hands it to ofi_coll_rma_landed once the bytes are in place.
 */
static OFI_HOT ssize_t rma_write_key(struct coll_group *g, size_t peer,
				     struct coll_rma *r, const void *buf,
				     size_t len, uint64_t key, size_t off,
				     uint64_t data, bool answer)
{
	struct coll_chan *ch = &g->chan[peer];
	struct iovec iov = {(void *)buf, len};
	struct fi_rma_iov rma = {off, len, key};
	struct fi_msg_rma msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = ch->addr,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = r,
		.data = data,
	};
	struct fid_ep *ep = &g->ce->ep->ep_fid;
	uint64_t flags = OFI_COLL_INTERNAL | FI_COMPLETION;
	ssize_t ret;

	r->err = 0;
	r->ce = g->ce;
	r->state = CR_BUSY;
	if (data)
		flags |= FI_REMOTE_CQ_DATA;
	if (!answer)
		flags |= OFI_COLL_NO_ANSWER;
	ret = ep->rma->writemsg(ep, &msg, flags);
	if (ret)
		r->state = CR_IDLE;
	else
		g->ce->rma_posts++;
	return ret;
}

/* A write into the peer's group region at @off. */
static ssize_t rma_write(struct coll_group *g, size_t peer, struct coll_rma *r,
			 const void *buf, size_t len, size_t off, uint64_t data,
			 bool answer)
{
	return rma_write_key(g, peer, r, buf, len, g->chan[peer].key, off, data,
			     answer);
}

/*
 * @answer: the write's completion must say whether it landed (a hello,
 * a probe); otherwise (chunks, acks) it may complete once sent.
 */
static ssize_t rma_word(struct coll_group *g, size_t peer, struct coll_rma *r,
			uint64_t val, size_t word, bool answer)
{
	r->val = val;
	return rma_write(g, peer, r, &r->val, sizeof(r->val),
			 word * sizeof(uint64_t), coll_signal_wake(g->me),
			 answer);
}

static void pack_raise(volatile uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (cur < v &&
	       !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

/*
 * Called by the target's provider (ofi_ep_rma_target_complete) with the
 * region's registration held, so the group outlives the call. The data
 * is the peer's: a rank out of range is ignored; a wrong sequence number
 * can only confuse the group the peer belongs to, as any write could.
 */
OFI_HOT void ofi_coll_rma_landed(void *mr_context, uint64_t data)
{
	struct coll_group *g = container_of(mr_context, struct coll_group, mr);
	size_t from = (size_t)(data >> COLL_RANK_SHIFT);
	uint64_t seq = data & COLL_SEQ_MASK;

	if (from >= g->n || from == g->me)
		return;
	if (data & COLL_RDV) {
		__atomic_store_n(g_word(g, w_rdv_seq(g->n, from)), seq,
				 __ATOMIC_RELEASE);
	} else if (!(data & COLL_WAKE)) {
		/* the trailer's ack (stale after a chunk that had none, so
		 * never above what the peer consumed): only ever raised */
		pack_raise(g_word(g, w_pack(g->n, from)),
			   *(volatile uint64_t *)(g_slot(g, from, seq) +
						  COLL_ACK_OFF));
		__atomic_store_n(g_word(g, w_flag(g->n, from, seq)), seq,
				 __ATOMIC_RELEASE);
	}
	coll_wake(g->ce);
}

/* ------------------------------------------------------------------ */
/* Channels.                                                            */

static size_t step_chunk_len(struct coll_group *g, struct coll_step *s)
{
	size_t off = s->chunk * g_chunk(g);

	if (s->direct)
		return s->len;
	return s->len - off < g_chunk(g) ? s->len - off : g_chunk(g);
}

static int coll_fail_peer(struct coll_group *g, int err)
{
	g->state = G_FAILED;
	g->err = err ? err : FI_EIO;
	return -g->err;
}

#define CHAN_STALL_PASSES 8

/*
 * A stalled channel probes its peer once per period: a write the provider
 * fails (peer dead) fails the group, and so does a probe left unanswered
 * for probe_timeout ms (a provider that never notices; 0: never).
 */
static OFI_HOT int chan_stalled(struct coll_group *g, size_t peer)
{
	struct coll_chan *ch = &g->chan[peer];
	size_t limit = g->ce->probe_timeout;
	uint64_t now;
	ssize_t ret;

	/* Most stalls end within a pass or two (a round trip's wait): the
	 * probe is looked at, and the clock read, every CHAN_STALL_PASSES-th
	 * stalled pass only (the clock's pages are a cost of their own,
	 * see OFI_HOT). */
	if (++ch->stalls % CHAN_STALL_PASSES)
		return 0;
	now = coll_pass_ms(g->ce);
	if (!rma_poll(&ch->probe)) {
		if (limit && now - ch->probe_ms > limit)
			return coll_fail_peer(g, FI_ETIMEDOUT);
		return 0;
	}
	if (ch->probe.err && ch->probe.err != FI_EAGAIN)
		return coll_fail_peer(g, FI_EIO);
	if (now - ch->probe_ms < OFI_COLL_PROBE_MS)
		return 0;
	ch->probe_ms = now;
	ret = rma_word(g, peer, &ch->probe, coll_hello(g, COLL_HELLO),
		       w_hello(g->n, g->me), true);
	if (ret && ret != -FI_EAGAIN)
		return coll_fail_peer(g, FI_EIO);
	return 0;
}

/*
 * 1 when no chunk write of @ch is still in flight, except those sent from
 * a copy (any write: @all), 0 if one is, <0 if one failed.
 */
static OFI_HOT int chan_drain(struct coll_group *g, struct coll_chan *ch,
			      bool all)
{
	struct coll_rma *r;
	uint32_t left;
	int done = 1, j;

	/* Only the slots written since they were last seen done: a small
	 * collective's send touches its own slot, not the whole window. */
	for (left = ch->posted; left; left &= left - 1) {
		j = __builtin_ctz(left);
		r = &ch->data[j];
		if (!rma_poll(r)) {
			if (all || !r->copied)
				done = 0;
			continue;
		}
		ch->posted &= ~(1U << j);
		if (r->err)
			return coll_fail_peer(g, r->err);
	}
	return done;
}

/* What posting chunk @seq answered: 1 posted, 0 to retry, <0 failed. */
static int chunk_posted(struct coll_group *g, struct coll_chan *ch, ssize_t ret,
			uint64_t seq)
{
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret)
		return coll_fail_peer(g, (int)-ret);
	ch->out_seq = seq;
	ch->posted |= 1U << (seq % OFI_COLL_WINDOW);
	return 1;
}

/*
 * The whole of a direct send step as chunk @seq, once the receiver asked
 * for it (its key landed with rdv_seq = @seq): 1 when posted, 0 to come
 * back, <0 on failure.
 */
static int step_send_direct(struct coll_group *g, struct coll_step *s,
			    struct coll_rma *r, uint64_t seq)
{
	struct coll_chan *ch = &g->chan[s->peer];
	uint64_t key;
	ssize_t ret;

	if (load_acq(g_word(g, w_rdv_seq(g->n, s->peer))) <
	    (seq & COLL_SEQ_MASK))
		return chan_stalled(g, s->peer);
	key = *g_word(g, w_rdv_key(g->n, s->peer));
	r->copied = false;
	ret = rma_write_key(g, s->peer, r, s->buf, s->len, key, 0,
			    coll_signal(g->me, seq), false);
	return chunk_posted(g, ch, ret, seq);
}

/*
 * After stores into @ch's peer: its reader, if it ever sleeps, is woken
 * (the provider fences and looks at its sleeping word). One that never
 * sleeps costs a load, no fence: it announced sleeping a while before
 * its first sound sleep (ofi_coll_wait_ready), so the load sees it.
 */
static void chan_wake(struct coll_group *g, struct coll_chan *ch)
{
	if (__atomic_load_n((uint64_t *)ch->peer + w_sleeper(g->n),
			    __ATOMIC_RELAXED))
		g->ce->shared->wake(g->ce->ep, ch->addr);
}

/*
 * Chunk @seq to a peer whose region is mapped here: the payload stored
 * into our slot there, then our ack of its chunks (pack[me]: only we
 * write it now), then the flag, released, so the receiver that sees the
 * flag sees the bytes; its reader woken if it sleeps.
 */
static void chunk_store(struct coll_group *g, struct coll_chan *ch,
			uint64_t seq, const void *src, size_t len)
{
	volatile uint64_t *w = (volatile uint64_t *)ch->peer;
	uint8_t *slot = ch->peer + slot_off(g->n, g->slot_size, g->me, seq);

	if (len)
		memcpy(len <= COLL_INL ? slot : slot + COLL_HEAD, src, len);
	g->inl += len <= COLL_INL;
	__atomic_store_n(w + w_pack(g->n, g->me), ch->in_seq, __ATOMIC_RELAXED);
	if (ch->acked < ch->in_seq)
		ch->acked = ch->in_seq;
	__atomic_store_n((uint64_t *)(slot + COLL_SFLAG_OFF), seq,
			 __ATOMIC_RELEASE);
	ch->out_seq = seq;
	g->stores++;
	chan_wake(g, ch);
	line_prefetch(ch->peer + slot_off(g->n, g->slot_size, g->me, seq + 1),
		      true);
	g->ahead++;
}

/* What the peer consumed of our chunks: its acks and trailers. */
static uint64_t chan_acked(struct coll_group *g, size_t peer)
{
	uint64_t a = load_acq(g_word(g, w_ack(g->n, peer)));
	uint64_t b = load_acq(g_word(g, w_pack(g->n, peer)));

	return a > b ? a : b;
}

/*
 * Whether slot seq % W of the channel to @peer is free: the peer consumed
 * seq - W (the words the peer writes are read only when the last value
 * read says no: their cache lines stay put).
 */
static bool chan_room(struct coll_group *g, size_t peer, uint64_t seq)
{
	struct coll_chan *ch = &g->chan[peer];

	if (ch->out_acked + OFI_COLL_WINDOW < seq)
		ch->out_acked = chan_acked(g, peer);
	return ch->out_acked + OFI_COLL_WINDOW >= seq;
}

/* Returns 1 when the step is done, 0 to come back, <0 on failure. */
static int step_send(struct coll_group *g, struct coll_op *op,
		     struct coll_step *s)
{
	struct coll_chan *ch = &g->chan[s->peer];
	struct coll_rma *r;
	const void *src;
	uint64_t seq;
	size_t len, off;
	ssize_t ret;

	for (; s->chunk < s->nchunks; s->chunk++) {
		seq = ch->out_seq + 1;
		r = &ch->data[seq % OFI_COLL_WINDOW];
		if (!rma_poll(r))
			return chan_stalled(g, s->peer);
		if (r->err)
			return coll_fail_peer(g, r->err);
		if (s->direct) {
			ret = step_send_direct(g, s, r, seq);
			if (ret <= 0)
				return (int)ret;
			continue;
		}
		ch->ack_wait = !chan_room(g, s->peer, seq);
		if (ch->ack_wait)
			return chan_stalled(g, s->peer);
		len = step_chunk_len(g, s);
		/* a barrier's steps carry no buffer: no offset from NULL */
		src = s->buf ? s->buf + s->chunk * g_chunk(g) : NULL;
		if (ch->peer) {
			chunk_store(g, ch, seq, src, len);
			continue;
		}
		g->writes++;
		off = slot_off(g->n, g->slot_size, g->me, seq);
		r->copied = len + COLL_TRAILER <= OFI_COLL_BOUNCE;
		if (r->copied) {
			/* with the trailer: our ack of the peer's chunks */
			memset(r->bounce, 0, COLL_TRAILER);
			memcpy(r->bounce, &ch->in_seq, sizeof(ch->in_seq));
			if (len) /* a barrier's chunks are empty */
				memcpy(r->bounce + COLL_TRAILER, src, len);
			ret = rma_write(g, s->peer, r, r->bounce,
					COLL_TRAILER + len, off + COLL_ACK_OFF,
					coll_signal(g->me, seq), false);
		} else {
			ret = rma_write(g, s->peer, r, src, len,
					off + COLL_HEAD,
					coll_signal(g->me, seq), false);
		}
		ret = chunk_posted(g, ch, ret, seq);
		if (ret <= 0)
			return (int)ret;
		if (r->copied && ch->acked < ch->in_seq)
			ch->acked = ch->in_seq;
	}
	ret = chan_drain(g, ch, false);
	return ret ? (int)ret : chan_stalled(g, s->peer);
}

static int coll_reduce(struct coll_op *op, bool fold, void *acc, void *in,
		       size_t len)
{
	size_t cnt = op->dtsize ? len / op->dtsize : 0;
	int ret;

	if (op->uop.fn) {
		if (fold) { /* acc = acc op in: the op writes its second arg */
			op->uop.fn(acc, in, cnt, op->dt, op->uop.user_ctx);
			memcpy(acc, in, len);
		} else {
			op->uop.fn(in, acc, cnt, op->dt, op->uop.user_ctx);
		}
		return 0;
	}
	ofi_atomic_lock();
	ret = ofi_atomic_apply(op->op, op->dt, acc, in, NULL, NULL, cnt);
	ofi_atomic_unlock();
	return ret;
}

static OFI_HOT void chan_flush_ack(struct coll_group *g, size_t peer)
{
	struct coll_chan *ch = &g->chan[peer];

	/* Every W/2 chunks: the sender still has W/2 slots meanwhile. */
	if (ch->in_seq - ch->acked < OFI_COLL_WINDOW / 2)
		return;
	if (!rma_poll(&ch->ack)) {
		g->acks_owed = true;
		return;
	}
	if (ch->peer) {
		__atomic_store_n((volatile uint64_t *)ch->peer +
					 w_ack(g->n, g->me),
				 ch->in_seq, __ATOMIC_RELEASE);
		ch->acked = ch->in_seq;
		chan_wake(g, ch);
		return;
	}
	/* A failed ack is the peer's problem: it probes us if it stalls. */
	if (!rma_word(g, peer, &ch->ack, ch->in_seq, w_ack(g->n, g->me), false))
		ch->acked = ch->in_seq;
	else
		g->acks_owed = true;
}

/*
 * The acks chan_flush_ack could not write when they fell due, retried:
 * every other ack is written by the receive that makes it due, so a
 * progress pass or a small broadcast looks at the channels only then,
 * not at all n of them each time.
 */
static void chan_flush_owed(struct coll_group *g)
{
	size_t i;

	if (!g->acks_owed)
		return;
	g->acks_owed = false;
	for (i = 0; i < g->n; i++)
		chan_flush_ack(g, i);
}

/*
 * Where a direct chunk lands: the step's destination when it is copied,
 * else the channel's scratch buffer (one receive per channel at a time),
 * which the chunk is folded from.
 */
static uint8_t *direct_dest(struct coll_chan *ch, struct coll_step *s)
{
	uint8_t *p;

	if (s->mode == RM_COPY)
		return s->buf;
	if (ch->scratch_len < s->len) {
		p = realloc(ch->scratch, s->len);
		if (!p)
			return NULL;
		ch->scratch = p;
		ch->scratch_len = s->len;
	}
	return ch->scratch;
}

/* [@addr, @addr + @len) open to remote writes under a fresh direct key. */
static int direct_insert(struct coll_group *g, uint8_t *addr, size_t len,
			 uint64_t *key)
{
	struct ofi_mr_map *map = &g->ce->ep->domain->mr_map;
	struct iovec iov = {addr, len};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE,
		.iface = FI_HMEM_SYSTEM,
	};
	static uint64_t next_key; /* process-wide: endpoints share domains */
	int ret, tries;

	/* Keys with COLL_KEY_DIRECT set, which group keys never have; one
	 * still in use is skipped. */
	for (tries = 0; tries < 16; tries++) {
		attr.requested_key =
			OFI_MR_KEY_ENGINE | COLL_KEY_DIRECT |
			(__atomic_fetch_add(&next_key, 1, __ATOMIC_RELAXED) &
			 COLL_KEY_DIRECT_MASK);
		ret = ofi_mr_map_insert(map, &attr, OFI_MR_INTERNAL, key,
					&g->mr);
		if (ret != -FI_ENOKEY)
			break;
	}
	return ret;
}

/* A free entry of the cache, else the least recently used idle one. */
static struct coll_dreg *dreg_victim(struct coll_group *g)
{
	struct coll_dreg *d, *v = NULL;
	size_t i;

	for (i = 0; i < OFI_COLL_DREG_CACHE; i++) {
		d = &g->dreg[i];
		if (!d->used)
			return d;
		if (!d->refs && (!v || d->used < v->used))
			v = d;
	}
	return v;
}

static void dreg_drop(struct coll_group *g, struct coll_dreg *d)
{
	if (d->used)
		(void)ofi_mr_map_remove(&g->ce->ep->domain->mr_map, d->key);
	memset(d, 0, sizeof(*d));
}

/* A new cache entry for [@addr, @addr + @len), open; NULL if all busy. */
static int dreg_add(struct coll_group *g, uint8_t *addr, size_t len,
		    struct coll_dreg **out)
{
	struct coll_dreg *d = dreg_victim(g);
	int ret;

	*out = NULL;
	if (!d)
		return 0;
	dreg_drop(g, d);
	ret = direct_insert(g, addr, len, &d->key);
	if (ret)
		return ret;
	d->addr = addr;
	d->len = len;
	*out = d;
	return 0;
}

/*
 * A direct receive's destination, registered for the step: from the
 * cache when a call registered the same range before (its access given
 * back), else a new entry, else (every entry busy) a registration of
 * the step's own.
 */
static int direct_register(struct coll_group *g, struct coll_step *s)
{
	struct ofi_mr_map *map = &g->ce->ep->domain->mr_map;
	uint8_t *addr = direct_dest(&g->chan[s->peer], s);
	struct coll_dreg *d = NULL;
	size_t i;
	int ret;

	if (!addr)
		return -FI_ENOMEM;
	g->dregs++;
	for (i = 0; i < OFI_COLL_DREG_CACHE && !d; i++) {
		if (g->dreg[i].used && g->dreg[i].addr == addr &&
		    g->dreg[i].len == s->len)
			d = &g->dreg[i];
	}
	if (d) {
		g->dhits++;
		if (!d->refs)
			(void)ofi_mr_map_set_access(map, d->key,
						    FI_REMOTE_WRITE);
	} else {
		ret = dreg_add(g, addr, s->len, &d);
		if (ret)
			return ret;
	}
	if (!d) {
		ret = direct_insert(g, addr, s->len, &s->key);
		s->reg = !ret;
		return ret;
	}
	d->refs++;
	d->used = ++g->dclock;
	s->key = d->key;
	s->dreg = (uint8_t)(d - g->dreg + 1);
	s->reg = true;
	return 0;
}

static void direct_unregister(struct coll_group *g, struct coll_step *s)
{
	struct ofi_mr_map *map = &g->ce->ep->domain->mr_map;
	struct coll_dreg *d;

	if (!s->reg)
		return;
	s->reg = false;
	if (!s->dreg) {
		(void)ofi_mr_map_remove(map, s->key);
		return;
	}
	d = &g->dreg[s->dreg - 1];
	s->dreg = 0;
	/* Access taken away, once writes validated before let go: nothing
	 * lands once the call that asked ended. */
	if (!--d->refs)
		(void)ofi_mr_map_set_access(map, d->key, 0);
}

/*
 * A direct receive step: register the destination, write its key into
 * the sender's rdv_key[me] (signalling chunk @seq), then wait for the
 * chunk as for any other. 1 when done, 0 to come back, <0 on failure.
 */
static int step_recv_direct(struct coll_group *g, struct coll_op *op,
			    struct coll_step *s)
{
	struct coll_chan *ch = &g->chan[s->peer];
	uint64_t seq = ch->in_seq + 1;
	ssize_t ret;

	if (!s->reg && (ret = direct_register(g, s)))
		return (int)ret;
	if (!s->asked) {
		if (!rma_poll(&ch->rdv))
			return chan_stalled(g, s->peer);
		ch->rdv.val = s->key;
		ret = rma_write(g, s->peer, &ch->rdv, &ch->rdv.val,
				sizeof(ch->rdv.val),
				w_rdv_key(g->n, g->me) * sizeof(uint64_t),
				coll_signal(g->me, seq) | COLL_RDV, false);
		if (ret == -FI_EAGAIN)
			return 0;
		if (ret)
			return coll_fail_peer(g, (int)-ret);
		s->asked = true;
	}
	if (load_acq(g_word(g, w_flag(g->n, s->peer, seq))) < seq) {
		chan_flush_ack(g, s->peer);
		return chan_stalled(g, s->peer);
	}
	direct_unregister(g, s);
	if (s->mode != RM_COPY) {
		ret = coll_reduce(op, s->mode == RM_FOLD, s->buf, ch->scratch,
				  s->len);
		if (ret)
			return (int)ret;
	}
	ch->in_seq = seq;
	s->chunk = s->nchunks;
	chan_flush_ack(g, s->peer);
	return 1;
}

static int step_recv(struct coll_group *g, struct coll_op *op,
		     struct coll_step *s)
{
	struct coll_chan *ch = &g->chan[s->peer];
	uint64_t seq;
	uint8_t *dst, *src;
	size_t len;
	int ret;

	if (s->direct)
		return step_recv_direct(g, op, s);
	while (s->chunk < s->nchunks) {
		seq = ch->in_seq + 1;
		len = step_chunk_len(g, s);
		if (!chunk_landed(g, s->peer, seq, len, &src)) {
			chan_flush_ack(g, s->peer);
			/* a peer pinned to our CPU runs only once we
			 * stop: no spin can bring its chunk */
			if (g->here && g->here[s->peer])
				ofi_yield_peer_here();
			return chan_stalled(g, s->peer);
		}
		dst = s->buf ? s->buf + s->chunk * g_chunk(g) : NULL;
		if (len && s->mode == RM_COPY) {
			memcpy(dst, src, len);
		} else if (len) {
			ret = coll_reduce(op, s->mode == RM_FOLD, dst, src,
					  len);
			if (ret)
				return ret;
		}
		ch->in_seq = seq;
		s->chunk++;
		/* A one-way stream (a broadcast's): the sender runs ahead.
		 * Not in an exchange (barrier, reduction), where the peer
		 * is about to store into that line itself. */
		if (g->shared && s->mode == RM_COPY && len)
			slot_ahead(g, s->peer, seq);
		chan_flush_ack(g, s->peer);
		/* a chunk stored by a peer is work no provider saw */
		if (g->shared)
			ofi_yield_busy();
	}
	return 1;
}

/* Our own contribution folded into the accumulator (canonical order). */
static int step_fold(struct coll_op *op, struct coll_step *s)
{
	uint8_t *in;
	int ret;

	s->chunk = s->nchunks;
	if (!s->len)
		return 1;
	if (s->mode == RM_REDUCE) { /* commutative, from our own tmp */
		ret = coll_reduce(op, false, s->buf, (void *)s->src, s->len);
		return ret ? ret : 1;
	}
	/* The source is the caller's const buffer: fold a copy. */
	in = malloc(s->len);
	if (!in)
		return -FI_ENOMEM;
	memcpy(in, s->src, s->len);
	ret = coll_reduce(op, true, s->buf, in, s->len);
	free(in);
	return ret ? ret : 1;
}

static int step_run(struct coll_group *g, struct coll_op *op,
		    struct coll_step *s)
{
	switch (s->kind) {
	case ST_SEND:
		return step_send(g, op, s);
	case ST_RECV:
		return step_recv(g, op, s);
	case ST_COPY:
		if (s->chunk < s->nchunks && s->len)
			memmove(s->buf, s->src, s->len);
		s->chunk = s->nchunks;
		return 1;
	default:
		return step_fold(op, s);
	}
}

/* ------------------------------------------------------------------ */
/* Operations.                                                          */

/*
 * An op for a new call, under the engine's lock: the endpoint's spare one
 * if it has it (a loop of small collectives allocates nothing), with what
 * a call reads before setting cleared (op_add clears each step it takes;
 * coll_stage sets the stages' iface and all else only for device memory).
 */
static struct coll_op *op_alloc(struct ofi_coll_ep *ce)
{
	struct coll_op *op = ce->spare;

	ce->spare = NULL;
	if (!op)
		op = malloc(sizeof(*op));
	if (!op)
		return NULL;
	op->st_buf.host = NULL;
	op->st_res.host = NULL;
	op->uop.fn = NULL;
	op->steps = NULL;
	op->nsteps = op->cap = op->cur = 0;
	op->tmp = NULL;
	return op;
}

/* What an op holds besides itself. */
static void op_release(struct coll_op *op)
{
	/* Tested first: a free(NULL) is a call into libc, whose page an op
	 * of host memory touches for nothing (see OFI_HOT). */
	if (op->st_buf.host)
		free(op->st_buf.host);
	if (op->st_res.host)
		free(op->st_res.host);
	if (op->steps && op->steps != op->steps_inl)
		free(op->steps);
	if (op->tmp && op->tmp != (uint8_t *)op->tmp_inl)
		free(op->tmp);
}

/* Under the engine's lock: the op kept as the spare, or freed. */
static void op_free(struct ofi_coll_ep *ce, struct coll_op *op)
{
	op_release(op);
	if (ce->spare) {
		free(op);
		return;
	}
	ce->spare = op;
}

/*
 * src/hmem belongs to the core: a loadable provider that links prov/util
 * alone (tests/prov) has none, and no FI_HMEM; weak references let it
 * load, and a device buffer there is refused.
 */
#pragma weak ofi_get_hmem_iface
#pragma weak ofi_copy_from_hmem_iov
#pragma weak ofi_copy_to_hmem_iov

/* Device memory of @ep (an MR's iface in @desc, else the pointer's own). */
static OFI_HOT int coll_stage(struct util_ep *ep, void *desc, const void *user,
			      size_t len, bool in, bool out,
			      struct coll_stage *st)
{
	struct util_mr *mr = desc;
	struct iovec iov = {(void *)user, len};
	ssize_t n;

	st->iface = FI_HMEM_SYSTEM;
	if (!user || !len)
		return 0;
	if (mr) {
		st->iface = mr->iface;
		st->device = mr->device;
	} else if ((ep->caps & FI_HMEM) && ofi_get_hmem_iface) {
		st->iface = ofi_get_hmem_iface(user, &st->device, NULL);
	}
	if (st->iface == FI_HMEM_SYSTEM)
		return 0;
	if (!ofi_copy_from_hmem_iov || !ofi_copy_to_hmem_iov)
		return -FI_ENOSYS;
	st->host = malloc(len);
	if (!st->host)
		return -FI_ENOMEM;
	st->user = (void *)user;
	st->len = len;
	st->out = out;
	if (!in)
		return 0;
	n = ofi_copy_from_hmem_iov(&ep->domain->hmem_override, st->host, len,
				   st->iface, st->device, &iov, 1, 0);
	return n == (ssize_t)len ? 0 : n < 0 ? (int)n : -FI_EIO;
}

static OFI_HOT int coll_unstage(struct util_ep *ep, struct coll_stage *st)
{
	struct iovec iov = {st->user, st->len};
	ssize_t n;

	if (!st->host || !st->out)
		return 0;
	n = ofi_copy_to_hmem_iov(&ep->domain->hmem_override, st->iface,
				 st->device, &iov, 1, 0, st->host, st->len);
	return n == (ssize_t)st->len ? 0 : n < 0 ? (int)-n : FI_EIO;
}

/* What direct receives of @op still hold registered (a failed op). */
static void op_unregister(struct coll_group *g, struct coll_op *op)
{
	size_t i;

	for (i = 0; i < op->nsteps; i++)
		direct_unregister(g, &op->steps[i]);
}

static OFI_HOT void op_complete(struct coll_group *g, struct coll_op *op,
				int err)
{
	struct ofi_coll_ep *ce = g->ce;
	uint64_t flags = FI_COLLECTIVE;

	op_unregister(g, op);
	if (!err)
		err = coll_unstage(ce->ep, &op->st_buf);
	if (!err)
		err = coll_unstage(ce->ep, &op->st_res);
	dlist_remove(&op->entry);
	/* Done by its post with stores only: nothing left to progress */
	if (!err && op == ce->posting && ce->rma_posts == ce->posting_rma) {
		flags |= OFI_CQ_QUIET;
		g->quiet++;
	}
	ofi_ep_tx_complete(ce->ep, op->context, flags, op->flags, true, err);
	op_free(ce, op);
}

/* Runs the head op's current phase; 1 when the op finished. */
static int op_progress(struct coll_group *g, struct coll_op *op)
{
	size_t i, end;
	bool all;
	int ret;

	while (op->cur < op->nsteps) {
		for (end = op->cur; !op->steps[end].last; end++)
			;
		all = true;
		for (i = op->cur; i <= end; i++) {
			if (op->steps[i].done)
				continue;
			ret = step_run(g, op, &op->steps[i]);
			if (ret < 0)
				return ret;
			op->steps[i].done = ret;
			all = all && ret;
		}
		if (!all)
			return 0;
		op->cur = end + 1;
	}
	return 1;
}

static OFI_HOT void group_progress(struct coll_group *g)
{
	struct coll_op *op;
	int ret;

	chan_flush_owed(g);
	while (!dlist_empty(&g->ops)) {
		op = container_of(g->ops.next, struct coll_op, entry);
		if (g->state == G_FAILED) {
			op_complete(g, op, g->err);
			continue;
		}
		ret = op_progress(g, op);
		if (ret < 0) {
			if (g->state != G_FAILED)
				coll_fail_peer(g, -ret);
			op_complete(g, op, -ret);
			continue;
		}
		if (!ret)
			return;
		op_complete(g, op, 0);
	}
}

static void join_report(struct coll_group *g, int err)
{
	struct util_eq *eq = g->ce->ep->eq;
	struct fi_eq_entry e = {
		.fid = &g->mc_fid.fid,
		.context = g->join_context,
	};

	if (err) {
		g->state = G_FAILED;
		g->err = err;
		if (eq)
			ofi_eq_write_error(eq, &g->mc_fid.fid, g->join_context,
					   0, err, -err, NULL, 0);
		return;
	}
	g->state = G_READY;
	if (eq)
		ofi_eq_write(eq, FI_JOIN_COMPLETE, &e, sizeof(e));
}

static int rma_state(struct coll_rma *r)
{
	return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
}

static void group_unlink(struct coll_group *g)
{
	if (g->shared && !g->unlinked)
		g->ce->shared->unlink(g->ce->ep, g->key);
	g->unlinked = true;
}

/*
 * Peer @i's region mapped if it shares memory, then a hello that says
 * whether: a member whose peers all said "mapped" removes its region's
 * name at once. @accepted: our hello landed (unmapped: mapping failed
 * before the peer registered, so try again and tell it).
 */
static ssize_t join_map(struct coll_group *g, size_t i, bool accepted)
{
	struct coll_chan *ch = &g->chan[i];

	if (accepted && (ch->peer || !g->shared))
		return 0; /* it knows */
	if (g->shared && !ch->peer)
		ch->peer = g->ce->shared->map(g->ce->ep, ch->addr, ch->key,
					      g->region_len);
	if (accepted && !ch->peer)
		return 0;
	return rma_word(
		g, i, &ch->probe,
		coll_hello(g, ch->peer ? COLL_HELLO_MAPPED : COLL_HELLO),
		w_hello(g->n, g->me), true);
}

/*
 * A hello to @ch failed with @err (0: did not fail). A member that has
 * not joined yet refuses it (FI_EACCES: no region under the key) or is
 * slow to take it (FI_EAGAIN); any other error is the provider's word
 * that the member cannot be reached (its process or endpoint is gone).
 * Unreachable for probe_timeout ms, it fails the join (fi_collective(3):
 * the FI_EIO of a failed probe, not a wait for OFI_COLL_JOIN_MS).
 */
static bool join_unreachable(struct coll_group *g, struct coll_chan *ch,
			     int err, uint64_t now)
{
	size_t limit = g->ce->probe_timeout;

	if (!err || err == FI_EACCES || err == FI_EAGAIN) {
		ch->unreach_ms = 0;
		return false;
	}
	if (!ch->unreach_ms)
		ch->unreach_ms = now;
	return limit && now - ch->unreach_ms >= limit;
}

/* This member leads a folding group (ofi_coll_leaders): counted in
 * ofi_coll_ep.leading while the group lives. */
static bool group_leads(const struct coll_group *g)
{
	return g->lead && g->lead[g->me] == g->me;
}

/* The leaders in rank order and the members this one leads. */
static int join_lead_lists(struct coll_group *g)
{
	size_t i, k = 0;

	/* nlead leaders, then at most the n - nlead others */
	g->leaders = malloc(g->n * sizeof(*g->leaders));
	if (!g->leaders)
		return FI_ENOMEM;
	g->led = g->leaders + g->nlead;
	for (i = 0; i < g->n; i++) {
		if (g->lead[i] == i) {
			if (i == g->me)
				g->lead_idx = k;
			g->leaders[k++] = (uint32_t)i;
		} else if (g->lead[i] == g->me) {
			g->led[g->nled++] = (uint32_t)i;
		}
	}
	if (group_leads(g))
		__atomic_add_fetch(&g->ce->leading, 1, __ATOMIC_RELAXED);
	return 0;
}

/* The members pinned to our CPU (g->here), from the placements. */
static void join_here(struct coll_group *g, const uint64_t *place)
{
	size_t i;

	for (i = 0; g->place && i < g->n; i++) {
		if (i == g->me || place[i] != g->place)
			continue;
		if (!g->here)
			g->here = calloc(g->n, 1);
		if (!g->here)
			return; /* only a hint: waits spin first */
		g->here[i] = 1;
	}
}

/*
 * Every hello landed: members that share a CPU (their placements in the
 * hellos) are grouped, the same way by every member, where the endpoint
 * folds. Any error fails the join: a member left without the grouping
 * would run another schedule.
 */
static int join_leaders(struct coll_group *g)
{
	uint64_t *place, hello;
	size_t i;
	int ret = 0;

	place = malloc(g->n * sizeof(*place));
	if (!place)
		return FI_ENOMEM;
	for (i = 0; i < g->n; i++)
		place[i] = i == g->me ? g->place
				      : load_acq(g_word(g, w_hello(g->n, i))) >>
						COLL_PLACE_SHIFT;
	join_here(g, place);
	if (g->n < 3)
		goto out; /* the same two messages either way */
	/* Only members that fold count as placed: every member derives
	 * the same grouping from the same hellos. */
	for (i = 0; i < g->n; i++) {
		hello = i == g->me ? coll_hello(g, 0)
				   : load_acq(g_word(g, w_hello(g->n, i)));
		if (!(hello & COLL_HELLO_FOLD))
			place[i] = 0;
	}
	g->lead = malloc(g->n * sizeof(*g->lead));
	if (!g->lead) {
		ret = FI_ENOMEM;
		goto out;
	}
	g->nlead = ofi_coll_leaders(place, g->n, g->lead);
	if (g->nlead < g->n)
		ret = join_lead_lists(g);
out:
	free(place);
	if (ret || g->nlead == g->n) { /* NULL: nobody shares a CPU */
		free(g->lead);
		g->lead = NULL;
	}
	return ret;
}

/* Hello to every peer until each accepted (its region exists). */
static void join_progress(struct coll_group *g)
{
	struct coll_chan *ch;
	size_t i, left = 0, unmapped = 0;
	uint64_t now = coll_now_ms(), hello;
	bool gone = false;
	ssize_t ret;

	/* The limit counts from the first progress, not from the call: an
	 * application may join, then compute before it looks at the EQ. */
	if (!g->join_start_ms)
		g->join_start_ms = now;
	for (i = 0; i < g->n; i++) {
		ch = &g->chan[i];
		if (i == g->me)
			continue;
		/* Symmetric: its hello reached us too, so neither side can
		 * leave while the other still waits for a hello to land. */
		hello = load_acq(g_word(g, w_hello(g->n, i)));
		left += !hello;
		unmapped += (hello & COLL_HELLO_KIND) != COLL_HELLO_MAPPED;
		if (ch->joined)
			continue;
		if (rma_state(&ch->probe) == CR_DONE) {
			ch->probe.state = CR_IDLE;
			if (join_unreachable(g, ch, ch->probe.err, now))
				gone = true;
			if (!ch->probe.err) {
				ch->joined = true;
				join_map(g, i, true);
				continue;
			}
		}
		left++;
		/* A refused hello is retried at once (each try waits for
		 * the peer's answer) for a second, then every 10 ms. */
		if (rma_state(&ch->probe) != CR_IDLE ||
		    (now - g->join_start_ms > 1000 && now - ch->probe_ms < 10))
			continue;
		ch->probe_ms = now;
		ret = join_map(g, i, false);
		if (ret && join_unreachable(g, ch, (int)-ret, now))
			gone = true;
	}
	if (gone) {
		join_report(g, FI_EIO);
	} else if (!left) {
		for (i = 0; i < g->n; i++)
			g->chan[i].probe_ms = now;
		if (!unmapped) /* else at close: a late mapper may need it */
			group_unlink(g);
		join_report(g, join_leaders(g));
	} else if (now - g->join_start_ms > OFI_COLL_JOIN_MS) {
		join_report(g, FI_ETIMEDOUT);
	}
}

static bool group_busy(struct coll_group *g);
static void group_free(struct coll_group *g);

/* Under the engine's lock: the closed groups whose writes all completed,
 * moved to @done. */
static void coll_reap(struct ofi_coll_ep *ce, struct dlist_entry *done)
{
	struct dlist_entry *item, *next;
	struct coll_group *g;

	dlist_foreach_safe(&ce->closing, item, next)
	{
		g = container_of(item, struct coll_group, entry);
		if (group_busy(g))
			continue;
		dlist_remove(&g->entry);
		dlist_insert_tail(&g->entry, done);
	}
}

static OFI_HOT void coll_step_all(struct ofi_coll_ep *ce)
{
	struct dlist_entry *item, *next;
	struct dlist_entry done;
	struct coll_group *g;

	dlist_init(&done);
	ofi_mutex_lock(&ce->lock);
	if (ce->in_step)
		goto out;
	ce->in_step = true;
	ce->now_ms = 0;
	dlist_foreach_safe(&ce->groups, item, next)
	{
		g = container_of(item, struct coll_group, entry);
		if (g->state == G_JOINING)
			join_progress(g);
		else
			group_progress(g);
	}
	if (OFI_UNLIKELY(!dlist_empty(&ce->closing)))
		coll_reap(ce, &done);
	ce->in_step = false;
out:
	ofi_mutex_unlock(&ce->lock);
	while (OFI_UNLIKELY(!dlist_empty(&done))) {
		g = container_of(done.next, struct coll_group, entry);
		dlist_remove(&g->entry);
		group_free(g);
	}
}

/* A group this member leads (ofi_coll_leaders) has an op waiting. */
static bool coll_leader_waits(struct ofi_coll_ep *ce)
{
	struct dlist_entry *item;
	struct coll_group *g;
	bool waits = false;

	if (!__atomic_load_n(&ce->leading, __ATOMIC_RELAXED))
		return false;
	ofi_mutex_lock(&ce->lock); /* another thread may close a group */
	dlist_foreach(&ce->groups, item)
	{
		g = container_of(item, struct coll_group, entry);
		if (group_leads(g) && g->state == G_READY &&
		    !dlist_empty(&g->ops)) {
			waits = true;
			break;
		}
	}
	ofi_mutex_unlock(&ce->lock);
	return waits;
}

/*
 * A leader that has just written to another leader looks for its answer
 * once more before the caller gives the CPU away: that leader runs on
 * another CPU, while the members next on ours wait for us (tcp, 4 ranks
 * on 2 CPUs, barrier: 60 to 49 us).
 */
static OFI_HOT void coll_progress(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;
	uint64_t posts = ce->rma_posts;

	ce->prov_progress(ep);
	coll_step_all(ce);
	if (ce->rma_posts == posts || !ce->fold || !coll_leader_waits(ce))
		return;
	ce->prov_progress(ep);
	coll_step_all(ce);
}

static void coll_eq_progress(struct util_eq_prog *prog)
{
	struct ofi_coll_ep *ce =
		container_of(prog, struct ofi_coll_ep, eq_prog);

	coll_progress(ce->ep);
}

/* ------------------------------------------------------------------ */
/* Schedule building.                                                   */

static OFI_HOT int op_add(struct coll_op *op, struct coll_group *g,
			  uint8_t kind, uint8_t mode, size_t peer, void *buf,
			  const void *src, size_t len)
{
	struct coll_step *s;

	if (!op->cap) {
		op->steps = op->steps_inl;
		op->cap = OFI_COLL_STEPS_INL;
	} else if (op->nsteps == op->cap) {
		s = malloc(op->cap * 2 * sizeof(*s));
		if (!s)
			return -FI_ENOMEM;
		memcpy(s, op->steps, op->nsteps * sizeof(*s));
		if (op->steps != op->steps_inl)
			free(op->steps);
		op->steps = s;
		op->cap *= 2;
	}
	s = &op->steps[op->nsteps++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->mode = mode;
	s->peer = (uint32_t)peer;
	s->buf = buf;
	s->src = src;
	s->len = len;
	s->direct = (kind == ST_SEND || kind == ST_RECV) &&
		    len >= g->ce->direct_min;
	s->nchunks =
		len && !s->direct ? (len + g_chunk(g) - 1) / g_chunk(g) : 1;
	s->last = true;
	return 0;
}

/* The next step joins the phase of the previous one. */
static void op_same_phase(struct coll_op *op)
{
	if (op->nsteps)
		op->steps[op->nsteps - 1].last = false;
}

/* Broadcast of @len bytes at @buf from @root down the fan-out tree. */
static int sched_bcast(struct coll_op *op, struct coll_group *g, void *buf,
		       size_t len, size_t root)
{
	size_t n = g->n, v = ofi_coll_vrank(g->me, root, n);
	size_t fan = g->ce->fanout, child[fan ? fan : 1], k, i, p;
	int ret = 0;

	p = ofi_coll_tree_parent(v, fan);
	if (p != OFI_COLL_NONE)
		ret = op_add(op, g, ST_RECV, RM_COPY, ofi_coll_rank(p, root, n),
			     buf, NULL, len);
	k = ofi_coll_tree_children(v, n, fan, child);
	for (i = 0; i < k && !ret; i++) {
		if (i)
			op_same_phase(op);
		ret = op_add(op, g, ST_SEND, 0,
			     ofi_coll_rank(child[i], root, n), buf, NULL, len);
	}
	return ret;
}

/*
 * Reduction of everyone's @in into @acc at @root (acc may alias in only
 * when it is the root's). Commutative: binary tree, children folded as
 * they arrive. Otherwise canonical order: the root folds member 0, 1, ..
 * in turn, each step its own phase.
 */
static int sched_reduce(struct coll_op *op, struct coll_group *g,
			const void *in, uint8_t *acc, size_t len, size_t root,
			bool commutative)
{
	size_t n = g->n, v = ofi_coll_vrank(g->me, root, n);
	size_t child[2], k, i, m, p;
	int ret;

	if (!commutative) {
		if (g->me != root)
			return op_add(op, g, ST_SEND, 0, root, (void *)in, NULL,
				      len);
		for (i = 0; i < n; i++) {
			m = ofi_coll_canon_member(i);
			if (!i && m == g->me)
				ret = op_add(op, g, ST_COPY, 0, 0, acc, in,
					     len);
			else if (!i)
				ret = op_add(op, g, ST_RECV, RM_COPY, m, acc,
					     NULL, len);
			else if (m == g->me)
				ret = op_add(op, g, ST_FOLD, 0, 0, acc, in,
					     len);
			else
				ret = op_add(op, g, ST_RECV, RM_FOLD, m, acc,
					     NULL, len);
			if (ret)
				return ret;
		}
		return 0;
	}
	ret = op_add(op, g, ST_COPY, 0, 0, acc, in, len);
	k = ofi_coll_tree_children(v, n, 2, child);
	for (i = 0; i < k && !ret; i++) {
		if (i)
			op_same_phase(op);
		ret = op_add(op, g, ST_RECV, RM_REDUCE,
			     ofi_coll_rank(child[i], root, n), acc, NULL, len);
	}
	p = ofi_coll_tree_parent(v, 2);
	if (!ret && p != OFI_COLL_NONE)
		ret = op_add(op, g, ST_SEND, 0, ofi_coll_rank(p, root, n), acc,
			     NULL, len);
	return ret;
}

/*
 * Recursive doubling of @acc among @n members, this one the @me-th:
 * member i is group rank @map[i] (NULL: i).
 */
static OFI_HOT int sched_rd(struct coll_op *op, struct coll_group *g,
			    const uint32_t *map, size_t n, size_t me,
			    uint8_t *acc, size_t len)
{
	size_t p = ofi_coll_pow2_floor(n), mask;
	int ret = 0;

#define RD_RANK(i) (map ? (size_t)map[i] : (i))
	if (me >= p) {
		ret = op_add(op, g, ST_SEND, 0, RD_RANK(me - p), acc, NULL,
			     len);
		return ret ? ret
			   : op_add(op, g, ST_RECV, RM_COPY, RD_RANK(me - p),
				    acc, NULL, len);
	}
	if (me + p < n)
		ret = op_add(op, g, ST_RECV, RM_REDUCE, RD_RANK(me + p), acc,
			     NULL, len);
	for (mask = 1; mask < p && !ret; mask <<= 1) {
		/* acc is being sent: the partner's lands in tmp first */
		ret = op_add(op, g, ST_SEND, 0, RD_RANK(me ^ mask), acc, NULL,
			     len);
		if (!ret) {
			op_same_phase(op);
			ret = op_add(op, g, ST_RECV, RM_COPY,
				     RD_RANK(me ^ mask), op->tmp, NULL, len);
		}
		if (!ret)
			ret = op_add(op, g, ST_FOLD, RM_REDUCE, 0, acc, op->tmp,
				     len);
	}
	if (!ret && me + p < n)
		ret = op_add(op, g, ST_SEND, 0, RD_RANK(me + p), acc, NULL,
			     len);
#undef RD_RANK
	return ret;
}

/* A leader's members (ofi_coll_leaders): their values folded into @acc
 * as they come (@gather), or the result sent to them all. */
static int sched_members(struct coll_op *op, struct coll_group *g, uint8_t *acc,
			 size_t len, bool gather)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < g->nled && !ret; i++) {
		if (i)
			op_same_phase(op);
		ret = gather ? op_add(op, g, ST_RECV, RM_REDUCE, g->led[i], acc,
				      NULL, len)
			     : op_add(op, g, ST_SEND, 0, g->led[i], acc, NULL,
				      len);
	}
	return ret;
}

/*
 * Small commutative allreduce of @len bytes (and barrier, @len 0) by
 * recursive doubling: log2(p) exchanges instead of a reduce up and a
 * broadcast down the tree. Partners fold the same two partial values, so
 * every rank ends with the same bits. Where members share CPUs (g->lead),
 * among their leaders only (see ofi_coll_leaders).
 */
static OFI_HOT int sched_allreduce_rd(struct coll_op *op, struct coll_group *g,
				      const void *in, uint8_t *acc, size_t len)
{
	size_t lead;
	int ret;

	if (len) {
		op->tmp = len <= sizeof(op->tmp_inl) ? (uint8_t *)op->tmp_inl
						     : malloc(len);
		if (!op->tmp)
			return -FI_ENOMEM;
	}
	ret = op_add(op, g, ST_COPY, 0, 0, acc, in, len);
	if (ret || !g->lead)
		return ret ? ret : sched_rd(op, g, NULL, g->n, g->me, acc, len);
	lead = g->lead[g->me];
	if (lead != g->me) {
		ret = op_add(op, g, ST_SEND, 0, lead, acc, NULL, len);
		return ret ? ret
			   : op_add(op, g, ST_RECV, RM_COPY, lead, acc, NULL,
				    len);
	}
	ret = sched_members(op, g, acc, len, true);
	if (!ret)
		ret = sched_rd(op, g, g->leaders, g->nlead, g->lead_idx, acc,
			       len);
	return ret ? ret : sched_members(op, g, acc, len, false);
}

/*
 * Large commutative allreduce of @count elements: ring reduce-scatter,
 * then ring allgather (ofi_coll_ring_*), each rank moving about
 * 2 (n - 1) / n of the buffer instead of the tree's whole buffer per
 * level both ways; each block is reduced along one chain, so every rank
 * ends with the same bits. The input is never copied whole: a rank's own
 * block leaves from it at the first step (the allgather brings the
 * result back), and every other block is copied just before the step
 * that folds into it.
 */
/* Step @k of the ring's reduce-scatter (@rs) or allgather. */
static int ring_step(struct coll_op *op, struct coll_group *g,
		     const uint8_t *in, uint8_t *acc, size_t count, size_t k,
		     bool rs)
{
	size_t n = g->n, sz = op->dtsize, left = (g->me + n - 1) % n;
	size_t b, first, cnt;
	int ret;

	b = rs ? ofi_coll_ring_rs_send(g->me, k, n)
	       : ofi_coll_ring_ag_send(g->me, k, n);
	ofi_coll_block(count, n, b, &first, &cnt);
	ret = op_add(op, g, ST_SEND, 0, (g->me + 1) % n,
		     (uint8_t *)(rs && !k ? in : acc) + first * sz, NULL,
		     cnt * sz);
	if (ret)
		return ret;
	op_same_phase(op);
	b = rs ? ofi_coll_ring_rs_send(left, k, n)
	       : ofi_coll_ring_ag_send(left, k, n);
	ofi_coll_block(count, n, b, &first, &cnt);
	if (rs) {
		ret = op_add(op, g, ST_COPY, 0, 0, acc + first * sz,
			     in + first * sz, cnt * sz);
		if (ret)
			return ret;
		op_same_phase(op);
	}
	return op_add(op, g, ST_RECV, rs ? RM_REDUCE : RM_COPY, left,
		      acc + first * sz, NULL, cnt * sz);
}

static int sched_allreduce_ring(struct coll_op *op, struct coll_group *g,
				const void *in, uint8_t *acc, size_t count)
{
	size_t k;
	int ret = 0;

	if (g->n == 1)
		return op_add(op, g, ST_COPY, 0, 0, acc, in,
			      count * op->dtsize);
	for (k = 0; k + 1 < g->n && !ret; k++)
		ret = ring_step(op, g, in, acc, count, k, true);
	for (k = 0; k + 1 < g->n && !ret; k++)
		ret = ring_step(op, g, in, acc, count, k, false);
	return ret;
}

/* Root sends block i to member i (scatter) or receives it (gather). */
static int sched_blocks(struct coll_op *op, struct coll_group *g, bool out,
			uint8_t *all, uint8_t *mine, size_t blk, size_t root)
{
	size_t i;
	int ret = 0;

	if (g->me != root)
		return op_add(op, g, out ? ST_RECV : ST_SEND, RM_COPY, root,
			      mine, NULL, blk);
	for (i = 0; i < g->n && !ret; i++) {
		if (i)
			op_same_phase(op);
		if (i == g->me)
			ret = out ? op_add(op, g, ST_COPY, 0, 0, mine,
					   all + i * blk, blk)
				  : op_add(op, g, ST_COPY, 0, 0, all + i * blk,
					   mine, blk);
		else
			ret = op_add(op, g, out ? ST_SEND : ST_RECV, RM_COPY, i,
				     all + i * blk, NULL, blk);
	}
	return ret;
}

static int sched_alltoall(struct coll_op *op, struct coll_group *g,
			  const uint8_t *in, uint8_t *out, size_t blk)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < g->n && !ret; i++) {
		if (i)
			op_same_phase(op);
		if (i == g->me) {
			ret = op_add(op, g, ST_COPY, 0, 0, out + i * blk,
				     in + i * blk, blk);
			continue;
		}
		ret = op_add(op, g, ST_SEND, 0, i, (void *)(in + i * blk), NULL,
			     blk);
		if (!ret) {
			op_same_phase(op);
			ret = op_add(op, g, ST_RECV, RM_COPY, i, out + i * blk,
				     NULL, blk);
		}
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* The collective calls.                                                */

static struct coll_group *coll_group_of(struct ofi_coll_ep *ce,
					fi_addr_t coll_addr)
{
	struct dlist_entry *item;
	struct coll_group *g;

	dlist_foreach(&ce->groups, item)
	{
		g = container_of(item, struct coll_group, entry);
		if ((fi_addr_t)(uintptr_t)g == coll_addr)
			return g;
	}
	return NULL;
}

static ssize_t coll_rank_of(struct coll_group *g, fi_addr_t addr)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		if (g->members[i] == addr)
			return (ssize_t)i;
	}
	return -1;
}

static bool coll_op_ok(enum fi_op op, enum fi_datatype dt,
		       struct fi_user_op *uop)
{
	const struct fi_user_op *u = ofi_coll_user_op(op);

	memset(uop, 0, sizeof(*uop));
	if (u) {
		*uop = *u;
		return ofi_datatype_size(dt) != 0;
	}
	if (op >= FI_ATOMIC_READ)
		return false;
	return !ofi_atomic_valid(OFI_ATOMIC_WRITE, dt, op, SIZE_MAX, NULL,
				 NULL);
}

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

static bool coll_reduces(enum coll_kind k)
{
	return k == CK_ALLREDUCE || k == CK_REDUCE_SCATTER || k == CK_REDUCE;
}

static int coll_build(struct coll_op *op, struct coll_group *g,
		      const struct coll_args *a, size_t root)
{
	size_t len = a->count * op->dtsize, n = g->n;
	bool comm = !op->uop.fn || op->uop.commutative;
	uint8_t *res = a->result;
	int ret;

	switch (a->kind) {
	case CK_BARRIER:
		return sched_allreduce_rd(op, g, NULL, NULL, 0);
	case CK_BCAST:
		return sched_bcast(op, g, (void *)a->buf, len, root);
	case CK_REDUCE:
		if (g->me != root) {
			op->tmp = malloc(len ? len : 1);
			if (!op->tmp)
				return -FI_ENOMEM;
			res = op->tmp;
		}
		return sched_reduce(op, g, a->buf, res, len, root, comm);
	case CK_ALLREDUCE:
		if (comm && len >= OFI_COLL_RING_MIN && a->count >= n)
			return sched_allreduce_ring(op, g, a->buf, res,
						    a->count);
		if (comm)
			return sched_allreduce_rd(op, g, a->buf, res, len);
		ret = sched_reduce(op, g, a->buf, res, len, 0, comm);
		return ret ? ret : sched_bcast(op, g, res, len, 0);
	case CK_ALLGATHER:
		ret = sched_blocks(op, g, false, res, (uint8_t *)a->buf, len,
				   0);
		return ret ? ret : sched_bcast(op, g, res, len * n, 0);
	case CK_GATHER:
		return sched_blocks(op, g, false, res, (uint8_t *)a->buf, len,
				    root);
	case CK_SCATTER:
		return sched_blocks(op, g, true, (uint8_t *)a->buf, res, len,
				    root);
	case CK_ALLTOALL:
		return sched_alltoall(op, g, a->buf, res, len);
	default: /* CK_REDUCE_SCATTER: reduce n blocks at 0, scatter */
		op->tmp = malloc(len > 0 ? len * n : 1);
		if (!op->tmp)
			return -FI_ENOMEM;
		ret = sched_reduce(op, g, a->buf, op->tmp, len * n, 0, comm);
		return ret ? ret
			   : sched_blocks(op, g, true, op->tmp, res, len, 0);
	}
}

static bool coll_needs_result(const struct coll_args *a, bool root)
{
	switch (a->kind) {
	case CK_BARRIER:
	case CK_BCAST:
		return false;
	case CK_REDUCE:
	case CK_GATHER:
		return root;
	default:
		return true;
	}
}

static bool coll_needs_buf(const struct coll_args *a, bool root)
{
	if (a->kind == CK_BARRIER)
		return false;
	if (a->kind == CK_SCATTER)
		return root;
	return true;
}

/*
 * Util's atomic executor reduces into the result in place and refuses
 * one misaligned for the datatype: refused at the post, before a peer
 * waits for this call, never a failure of the whole group.
 */
static bool coll_result_aligned(const struct coll_op *op,
				const struct coll_args *b, bool root)
{
	if (op->uop.fn || !b->count || !b->result)
		return true;
	if (b->kind != CK_ALLREDUCE && !(b->kind == CK_REDUCE && root))
		return true;
	return ofi_atomic_aligned(op->dt, b->result);
}

/*
 * The flags a collective call takes: completion semantics. Other bits
 * are refused: the library's own (OFI_COLL_INTERNAL and the like) would
 * make the completion treat the application's context as the library's.
 */
#define COLL_OP_FLAGS                                                          \
	(FI_COMPLETION | FI_MORE | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | \
	 FI_DELIVERY_COMPLETE)

/* Elements the call writes into its result (0: none). */
static size_t coll_result_need(const struct coll_args *a, size_t n, bool root)
{
	if (!coll_needs_result(a, root))
		return 0;
	switch (a->kind) {
	case CK_ALLGATHER:
	case CK_GATHER:
	case CK_ALLTOALL:
		return a->count > SIZE_MAX / n ? SIZE_MAX : a->count * n;
	default:
		return a->count;
	}
}

/* @b: @a with device buffers replaced by their host copies. */
static int coll_stage_args(struct util_ep *ep, struct coll_op *op, size_t n,
			   const struct coll_args *a, struct coll_args *b)
{
	size_t len = a->count * op->dtsize, blen = len, rlen = len;
	bool bcast = a->kind == CK_BCAST;
	int ret;

	switch (a->kind) {
	case CK_BARRIER:
		blen = rlen = 0;
		break;
	case CK_ALLGATHER:
	case CK_GATHER:
		rlen = n * len;
		break;
	case CK_SCATTER:
	case CK_REDUCE_SCATTER:
		blen = n * len;
		break;
	case CK_ALLTOALL:
		blen = rlen = n * len;
		break;
	default:
		break;
	}
	*b = *a;
	ret = coll_stage(ep, a->desc, a->buf, blen, true, bcast, &op->st_buf);
	if (!ret && !bcast)
		ret = coll_stage(ep, a->result_desc, a->result, rlen, false,
				 true, &op->st_res);
	if (op->st_buf.host)
		b->buf = op->st_buf.host;
	if (op->st_res.host)
		b->result = op->st_res.host;
	return ret;
}

/*
 * Whether channel @ch can take its next chunk as a store now: mapped, no
 * direct write of it in flight, a free slot in its window.
 */
static bool chan_store_ready(struct coll_group *g, size_t peer)
{
	struct coll_chan *ch = &g->chan[peer];
	struct coll_rma *r;
	uint64_t seq = ch->out_seq + 1;

	if (!ch->peer)
		return false;
	r = &ch->data[seq % OFI_COLL_WINDOW];
	if (!rma_poll(r) || r->err)
		return false;
	return chan_room(g, peer, seq);
}

/*
 * A broadcast of up to COLL_INL host bytes, with nothing queued before it
 * on its group, that can finish now: the parent's chunk was stored into
 * our region and landed, each child's channel is mapped and its window
 * has room. It runs here without
 * building an op: what the schedule's steps would do (sched_bcast,
 * step_recv, step_send), and the completion, quiet. 1: done; 0: not
 * possible now, the general path builds the op (it changed nothing).
 */
static int bcast_fast(struct util_ep *ep, struct coll_group *g,
		      const struct coll_args *a, size_t len, size_t root)
{
	struct ofi_coll_ep *ce = g->ce;
	struct util_mr *mr = a->desc;
	size_t n = g->n, v = ofi_coll_vrank(g->me, root, n);
	size_t fan = ce->fanout, child[fan ? fan : 1], k, i, p;
	struct coll_chan *ch = NULL;
	uint8_t *src = NULL, payload[COLL_INL];
	uint64_t seq = 0;

	if (!len || len > COLL_INL || len >= ce->direct_min ||
	    g->state != G_READY || !dlist_empty(&g->ops) || ce->in_step ||
	    (ep->caps & FI_HMEM) || (mr && mr->iface != FI_HMEM_SYSTEM))
		return 0;
	p = ofi_coll_tree_parent(v, fan);
	if (p != OFI_COLL_NONE) {
		p = ofi_coll_rank(p, root, n);
		ch = &g->chan[p];
		seq = ch->in_seq + 1;
		if (!ch->peer || !chunk_landed(g, p, seq, len, &src))
			return 0;
	}
	k = ofi_coll_tree_children(v, n, fan, child);
	for (i = 0; i < k; i++) {
		child[i] = ofi_coll_rank(child[i], root, n);
		if (!chan_store_ready(g, child[i]))
			return 0;
	}
	if (ch) {
		memcpy((void *)a->buf, src, len);
		ch->in_seq = seq;
		slot_ahead(g, p, seq);
		ofi_yield_busy(); /* a stored chunk: work no provider saw */
		chan_flush_ack(g, p);
	}
	chan_flush_owed(g);
	/* Nothing can fail now: the completion first, so that the CQ's
	 * mutex is not the locked instruction that waits for the stores'
	 * lines to come over. Stored from a copy: once the entry is in
	 * the CQ, another thread may reuse the buffer. */
	memcpy(payload, a->buf, len);
	g->quiet++;
	g->fast++;
	ofi_ep_tx_complete(ep, a->context, FI_COLLECTIVE | OFI_CQ_QUIET,
			   a->flags | ep->tx_op_flags, true, 0);
	for (i = 0; i < k; i++) {
		ch = &g->chan[child[i]];
		chunk_store(g, ch, ch->out_seq + 1, payload, len);
	}
	return 1;
}

static OFI_HOT ssize_t coll_post(struct fid_ep *ep_fid,
				 const struct coll_args *a)
{
	struct util_ep *ep = container_of(ep_fid, struct util_ep, ep_fid);
	struct ofi_coll_ep *ce = ep->coll;
	struct fi_user_op uop = {0};
	enum fi_datatype dt = a->kind == CK_BARRIER ? FI_UINT8 : a->dt;
	size_t dtsize = ofi_datatype_size(dt), len, all;
	struct coll_args b;
	struct coll_group *g;
	struct coll_op *op = NULL;
	ssize_t root = 0;
	int ret = -FI_EINVAL;

	if (!ce)
		return -FI_ENOSYS;
	ofi_mutex_lock(&ce->lock);
	g = coll_group_of(ce, a->coll_addr);
	if (!g || g->state == G_JOINING || !dtsize)
		goto err;
	if (g->state == G_FAILED) {
		ret = -g->err;
		goto err;
	}
	if (coll_reduces(a->kind) && !coll_op_ok(a->op, a->dt, &uop)) {
		ret = -FI_EOPNOTSUPP;
		goto err;
	}
	if (a->kind == CK_BCAST || a->kind == CK_REDUCE ||
	    a->kind == CK_SCATTER || a->kind == CK_GATHER) {
		root = coll_rank_of(g, a->root_addr);
		if (root < 0)
			goto err;
	}
	/* past fi_query_collective's datatype_attr.count */
	if (a->count > SIZE_MAX / dtsize / OFI_COLL_MAX_MEMBERS) {
		ret = -FI_EMSGSIZE;
		goto err;
	}
	if (a->flags & ~(uint64_t)COLL_OP_FLAGS)
		goto err;
	if (a->result_counted &&
	    a->result_count < coll_result_need(a, g->n, g->me == (size_t)root))
		goto err;
	if (__builtin_mul_overflow(a->count, dtsize, &len) ||
	    __builtin_mul_overflow(len, g->n, &all) ||
	    (a->count && coll_needs_buf(a, g->me == (size_t)root) && !a->buf) ||
	    (a->count && coll_needs_result(a, g->me == (size_t)root) &&
	     !a->result))
		goto err;
	/* before an op exists: the small broadcast allocates nothing */
	if (a->kind == CK_BCAST && bcast_fast(ep, g, a, len, (size_t)root)) {
		ofi_mutex_unlock(&ce->lock);
		return 0;
	}
	ret = -FI_ENOMEM;
	op = op_alloc(ce);
	if (!op)
		goto err;
	op->context = a->context;
	op->flags = a->flags | ep->tx_op_flags;
	op->dt = dt;
	op->op = a->op;
	op->dtsize = dtsize;
	op->uop = uop;
	ret = coll_stage_args(ep, op, g->n, a, &b);
	if (!ret && !coll_result_aligned(op, &b, g->me == (size_t)root))
		ret = -FI_EINVAL;
	if (!ret)
		ret = coll_build(op, g, &b, (size_t)root);
	if (ret)
		goto err;
	dlist_insert_tail(&op->entry, &g->ops);
	/* Its first writes go out now, not a progress call later: a peer
	 * already waiting for them gains that call's latency. */
	if (!ce->in_step && g->ops.next == &op->entry) {
		ce->in_step = true;
		ce->now_ms = 0;
		ce->posting = op;
		ce->posting_rma = ce->rma_posts;
		group_progress(g);
		ce->posting = NULL;
		ce->in_step = false;
	}
	ofi_mutex_unlock(&ce->lock);
	return 0;
err:
	if (op)
		op_free(ce, op);
	ofi_mutex_unlock(&ce->lock);
	return ret;
}

static ssize_t coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
			     uint64_t flags, void *context)
{
	struct coll_args a = {.kind = CK_BARRIER,
			      .coll_addr = coll_addr,
			      .flags = flags,
			      .context = context};

	return coll_post(ep, &a);
}

static OFI_HOT ssize_t coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
				    void *context)
{
	return coll_barrier2(ep, coll_addr, 0, context);
}

static ssize_t coll_broadcast(struct fid_ep *ep, void *buf, size_t count,
			      void *desc, fi_addr_t coll_addr,
			      fi_addr_t root_addr, enum fi_datatype datatype,
			      uint64_t flags, void *context)
{
	struct coll_args a = {CK_BCAST,	 buf,	    NULL,     count,
			      coll_addr, root_addr, datatype, FI_NOOP,
			      flags,	 context,   desc,     NULL};

	return coll_post(ep, &a);
}

static ssize_t coll_alltoall(struct fid_ep *ep, const void *buf, size_t count,
			     void *desc, void *result, void *result_desc,
			     fi_addr_t coll_addr, enum fi_datatype datatype,
			     uint64_t flags, void *context)
{
	struct coll_args a = {CK_ALLTOALL, buf,	      result,
			      count,	   coll_addr, FI_ADDR_NOTAVAIL,
			      datatype,	   FI_NOOP,   flags,
			      context,	   desc,      result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_allreduce(struct fid_ep *ep, const void *buf, size_t count,
			      void *desc, void *result, void *result_desc,
			      fi_addr_t coll_addr, enum fi_datatype datatype,
			      enum fi_op op, uint64_t flags, void *context)
{
	struct coll_args a = {
		CK_ALLREDUCE, buf, result, count,   coll_addr, FI_ADDR_NOTAVAIL,
		datatype,     op,  flags,  context, desc,      result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_allgather(struct fid_ep *ep, const void *buf, size_t count,
			      void *desc, void *result, void *result_desc,
			      fi_addr_t coll_addr, enum fi_datatype datatype,
			      uint64_t flags, void *context)
{
	struct coll_args a = {CK_ALLGATHER, buf,       result,
			      count,	    coll_addr, FI_ADDR_NOTAVAIL,
			      datatype,	    FI_NOOP,   flags,
			      context,	    desc,      result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_reduce_scatter(struct fid_ep *ep, const void *buf,
				   size_t count, void *desc, void *result,
				   void *result_desc, fi_addr_t coll_addr,
				   enum fi_datatype datatype, enum fi_op op,
				   uint64_t flags, void *context)
{
	struct coll_args a = {CK_REDUCE_SCATTER,
			      buf,
			      result,
			      count,
			      coll_addr,
			      FI_ADDR_NOTAVAIL,
			      datatype,
			      op,
			      flags,
			      context,
			      desc,
			      result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_reduce_op(struct fid_ep *ep, const void *buf, size_t count,
			      void *desc, void *result, void *result_desc,
			      fi_addr_t coll_addr, fi_addr_t root_addr,
			      enum fi_datatype datatype, enum fi_op op,
			      uint64_t flags, void *context)
{
	struct coll_args a = {CK_REDUCE, buf,	    result,   count,
			      coll_addr, root_addr, datatype, op,
			      flags,	 context,   desc,     result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_scatter(struct fid_ep *ep, const void *buf, size_t count,
			    void *desc, void *result, void *result_desc,
			    fi_addr_t coll_addr, fi_addr_t root_addr,
			    enum fi_datatype datatype, uint64_t flags,
			    void *context)
{
	struct coll_args a = {CK_SCATTER, buf,	     result,   count,
			      coll_addr,  root_addr, datatype, FI_NOOP,
			      flags,	  context,   desc,     result_desc};

	return coll_post(ep, &a);
}

static ssize_t coll_gather(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, void *result, void *result_desc,
			   fi_addr_t coll_addr, fi_addr_t root_addr,
			   enum fi_datatype datatype, uint64_t flags,
			   void *context)
{
	struct coll_args a = {CK_GATHER, buf,	    result,   count,
			      coll_addr, root_addr, datatype, FI_NOOP,
			      flags,	 context,   desc,     result_desc};

	return coll_post(ep, &a);
}

/* collective->msg: one ioc each way, the fields of the matching call. */
static ssize_t coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
			struct fi_ioc *resultv, void **result_desc,
			size_t result_count, uint64_t flags)
{
	static const enum coll_kind kinds[] = {
		[FI_BARRIER] = CK_BARRIER,
		[FI_BROADCAST] = CK_BCAST,
		[FI_ALLTOALL] = CK_ALLTOALL,
		[FI_ALLREDUCE] = CK_ALLREDUCE,
		[FI_ALLGATHER] = CK_ALLGATHER,
		[FI_REDUCE_SCATTER] = CK_REDUCE_SCATTER,
		[FI_REDUCE] = CK_REDUCE,
		[FI_SCATTER] = CK_SCATTER,
		[FI_GATHER] = CK_GATHER,
	};
	struct coll_args a;

	if (!msg || (unsigned)msg->coll > FI_GATHER || msg->iov_count > 1 ||
	    result_count > 1 || (msg->iov_count && !msg->msg_iov) ||
	    (result_count && !resultv))
		return -FI_EINVAL;
	memset(&a, 0, sizeof(a));
	a.kind = kinds[msg->coll];
	a.buf = msg->iov_count ? msg->msg_iov[0].addr : NULL;
	a.count = msg->iov_count ? msg->msg_iov[0].count : 0;
	a.result = result_count ? resultv[0].addr : NULL;
	/* what the result holds, checked against what the call writes */
	a.result_counted = result_count != 0;
	a.result_count = result_count ? resultv[0].count : 0;
	a.coll_addr = msg->coll_addr;
	a.root_addr = msg->root_addr;
	a.dt = msg->datatype;
	a.op = msg->op;
	a.flags = flags;
	a.context = msg->context;
	a.desc = msg->iov_count && msg->desc ? msg->desc[0] : NULL;
	a.result_desc = result_count && result_desc ? result_desc[0] : NULL;
	if (a.kind == CK_BCAST && result_count)
		return -FI_EINVAL;
	return coll_post(ep, &a);
}

static const struct fi_ops_collective ofi_coll_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = coll_barrier,
	.broadcast = coll_broadcast,
	.alltoall = coll_alltoall,
	.allreduce = coll_allreduce,
	.allgather = coll_allgather,
	.reduce_scatter = coll_reduce_scatter,
	.reduce = coll_reduce_op,
	.scatter = coll_scatter,
	.gather = coll_gather,
	.msg = coll_msg,
	.barrier2 = coll_barrier2,
};

/* ------------------------------------------------------------------ */
/* Groups: join and close.                                              */

static void group_free(struct coll_group *g)
{
	struct coll_op *op;
	size_t i;

	while (!dlist_empty(&g->ops)) {
		op = container_of(g->ops.next, struct coll_op, entry);
		dlist_remove(&op->entry);
		op_unregister(g, op);
		op_release(op); /* off the engine's lock: no spare */
		free(op);
	}
	/* before the scratch buffers some of them name */
	for (i = 0; i < OFI_COLL_DREG_CACHE; i++)
		dreg_drop(g, &g->dreg[i]);
	for (i = 0; g->chan && i < g->n; i++) {
		free(g->chan[i].scratch);
		if (g->chan[i].peer)
			g->ce->shared->unmap(g->chan[i].peer, g->region_len);
	}
	if (g->registered)
		(void)ofi_mr_map_remove(&g->ce->ep->domain->mr_map, g->key);
	FI_INFO(g->ce->ep->domain->prov, FI_LOG_EP_DATA,
		"collective group of %zu closed: %" PRIu64
		" chunks stored into peers (%" PRIu64
		" in a slot head), %" PRIu64 " written; %" PRIu64
		" ops done by their post (%" PRIu64 " small broadcasts"
		" without an op); %" PRIu64
		" next slot lines prefetched; %" PRIu64
		" direct receives, %" PRIu64 " through a cached registration;"
		" %zu members lead (ofi_coll_leaders), ours is rank %zu\n",
		g->n, g->stores, g->inl, g->writes, g->quiet, g->fast, g->ahead,
		g->dregs, g->dhits, g->lead ? g->nlead : g->n,
		g->lead ? (size_t)g->lead[g->me] : g->me);
	if (g->shared) {
		group_unlink(g);
		g->ce->shared->unmap(g->region, g->region_len);
	} else {
		free(g->region);
	}
	free(g->chan);
	free(g->members);
	if (group_leads(g))
		__atomic_sub_fetch(&g->ce->leading, 1, __ATOMIC_RELAXED);
	free(g->lead);
	free(g->leaders);
	free(g->here);
	free(g);
}

/* Whether internal writes of the group are still in flight: they name
 * its memory, which the provider writes when they complete. */
static bool group_busy(struct coll_group *g)
{
	struct coll_chan *ch;
	size_t i;

	for (i = 0; i < g->n; i++) {
		ch = &g->chan[i];
		if (chan_drain(g, ch, true) == 0 || !rma_poll(&ch->ack) ||
		    !rma_poll(&ch->rdv) || !rma_poll(&ch->probe))
			return true;
	}
	return false;
}

/*
 * A group with writes in flight is parked on the closing list until the
 * provider completed (or, closing the endpoint, dropped) them: freed
 * now, their late completions would write freed memory. Its operations
 * not completed are dropped (fi_collective(3) leaves them undefined).
 */
static int mc_close(struct fid *fid)
{
	struct coll_group *g = container_of(fid, struct coll_group, mc_fid.fid);
	struct ofi_coll_ep *ce = g->ce;
	bool busy;

	ofi_mutex_lock(&ce->lock);
	dlist_remove(&g->entry);
	busy = group_busy(g);
	if (busy)
		dlist_insert_tail(&g->entry, &ce->closing);
	ofi_mutex_unlock(&ce->lock);
	if (!busy)
		group_free(g);
	return 0;
}

static struct fi_ops mc_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mc_close,
	.bind = fi_no_bind,
	.control = fi_no_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
};

static uint64_t coll_hash(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* How many groups of these members this endpoint joined before. */
static uint64_t coll_generation(struct ofi_coll_ep *ce, uint64_t hash)
{
	struct coll_gen *gen;

	for (gen = ce->gens; gen; gen = gen->next) {
		if (gen->hash == hash)
			return gen->count++;
	}
	gen = calloc(1, sizeof(*gen));
	if (!gen)
		return 0;
	gen->hash = hash;
	gen->count = 1;
	gen->next = ce->gens;
	ce->gens = gen;
	return 0;
}

static uint64_t coll_key(uint64_t hash, uint64_t gen, size_t rank)
{
	uint64_t h = coll_hash(hash, &gen, sizeof(gen));

	return OFI_MR_KEY_ENGINE |
	       ((h << 12) & ~(OFI_MR_KEY_ENGINE_MASK | COLL_KEY_DIRECT)) | rank;
}

/* The members of a join: a set, a group's address or the whole AV. */
static int join_members(struct ofi_coll_ep *ce,
			const struct fi_collective_addr *ca, fi_addr_t **addrs,
			size_t *n)
{
	struct util_av *av = ce->ep->av, *sav;
	struct coll_group *g;
	uint8_t buf[av->prov_attr.addrlen];
	size_t i;
	int ret;

	if (ca->set) {
		ret = ofi_av_set_members(ca->set, &sav, addrs, n);
		if (!ret && sav != av) {
			free(*addrs);
			ret = -FI_EINVAL;
		}
		return ret;
	}
	if (ca->coll_addr != FI_ADDR_NOTAVAIL) {
		g = coll_group_of(ce, ca->coll_addr);
		if (!g)
			return -FI_EINVAL;
		*addrs = malloc(g->n * sizeof(**addrs));
		if (!*addrs)
			return -FI_ENOMEM;
		memcpy(*addrs, g->members, g->n * sizeof(**addrs));
		*n = g->n;
		return 0;
	}
	*addrs = malloc((av->cap ? av->cap : 1) * sizeof(**addrs));
	if (!*addrs)
		return -FI_ENOMEM;
	for (*n = 0, i = 0; i < av->cap; i++) {
		if (!ofi_av_get_addr(av, i, buf))
			(*addrs)[(*n)++] = i;
	}
	return 0;
}

static int join_addr_cmp(const void *a, const void *b, void *len)
{
	return memcmp(a, b, *(size_t *)len);
}

/*
 * Whether two of the @n addresses of @len bytes at @all are one endpoint
 * (two fi_addrs of the AV for one address): such a member would hold two
 * ranks, and the join would wait for a hello it cannot answer twice.
 */
static bool join_dup(uint8_t *all, size_t n, size_t len)
{
	size_t i;

	qsort_r(all, n, len, join_addr_cmp, &len);
	for (i = 1; i < n; i++) {
		if (!memcmp(all + (i - 1) * len, all + i * len, len))
			return true;
	}
	return false;
}

/* Our rank, and the group hash over the members' addresses in order. */
static int join_identity(struct coll_group *g, uint64_t *hash)
{
	struct util_ep *ep = g->ce->ep;
	size_t len = ep->av->prov_attr.addrlen, nlen = len, i;
	uint8_t name[len], *all;
	fi_addr_t self;
	int ret;

	ret = fi_getname(&ep->ep_fid.fid, name, &nlen);
	if (ret)
		return ret;
	all = malloc(g->n * len);
	if (!all)
		return -FI_ENOMEM;
	self = ofi_av_reverse_lookup(ep->av, name);
	*hash = 0xcbf29ce484222325ULL;
	g->me = SIZE_MAX;
	ret = -FI_EINVAL;
	for (i = 0; i < g->n; i++) {
		if (ofi_av_get_addr(ep->av, g->members[i], all + i * len))
			goto out;
		*hash = coll_hash(*hash, all + i * len, len);
		if (g->members[i] == self && g->me == SIZE_MAX)
			g->me = i;
	}
	if (g->me != SIZE_MAX && !join_dup(all, g->n, len))
		ret = 0;
out:
	free(all);
	return ret;
}

static int join_register(struct coll_group *g, uint64_t hash, uint64_t gen)
{
	struct ofi_mr_map *map = &g->ce->ep->domain->mr_map;
	struct iovec iov;
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE | FI_REMOTE_READ,
		.iface = FI_HMEM_SYSTEM,
	};
	size_t i;
	uint64_t key;
	int ret;

	g->region_len = slot_off(g->n, g->slot_size, g->n, 0);
	g->key = coll_key(hash, gen, g->me);
	/* Shared memory: every member maps every other's region. */
	if (g->ce->shared && g->n <= OFI_COLL_SHARED_MAX)
		g->region =
			g->ce->shared->create(g->ce->ep, g->key, g->region_len);
	g->shared = g->region != NULL;
	if (!g->region)
		g->region = calloc(1, g->region_len);
	g->chan = calloc(g->n, sizeof(*g->chan));
	if (!g->region || !g->chan)
		return -FI_ENOMEM;
	for (i = 0; i < g->n; i++) {
		g->chan[i].addr = g->members[i];
		g->chan[i].key = coll_key(hash, gen, i);
	}
	iov.iov_base = g->region;
	iov.iov_len = g->region_len;
	attr.requested_key = g->key;
	g->mr.domain = g->ce->ep->domain;
	g->mr.access = attr.access;
	g->mr.iface = FI_HMEM_SYSTEM;
	ret = ofi_mr_map_insert(map, &attr, OFI_MR_INTERNAL, &key, &g->mr);
	g->registered = !ret;
	return ret;
}

/* This host: its boot id hashed (FNV-1a), never 0; 0 if unreadable. */
static uint32_t coll_host(void)
{
	static uint32_t host;
	uint32_t h = __atomic_load_n(&host, __ATOMIC_RELAXED);
	char id[64];
	ssize_t len, i;
	int fd;

	if (h)
		return h;
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, id, sizeof(id));
	close(fd);
	if (len <= 0)
		return 0;
	for (h = 2166136261u, i = 0; i < len; i++)
		h = (h ^ (uint8_t)id[i]) * 16777619u;
	h |= 1;
	__atomic_store_n(&host, h, __ATOMIC_RELAXED);
	return h;
}

/*
 * This member's placement for ofi_coll_leaders: the host and the one CPU
 * the joining thread is pinned to, or 0 when it may run on several.
 */
static uint64_t coll_place(void)
{
	cpu_set_t set;
	uint32_t host;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) != 1)
		return 0;
	for (cpu = 0; !CPU_ISSET(cpu, &set); cpu++)
		;
	host = coll_host();
	if (!host || cpu >= (1 << 24) - 1)
		return 0;
	return (uint64_t)host << 24 | (uint64_t)(cpu + 1);
}

static int coll_join(struct fid_ep *ep_fid, const void *addr, uint64_t flags,
		     struct fid_mc **mc, void *context)
{
	struct util_ep *ep = container_of(ep_fid, struct util_ep, ep_fid);
	struct ofi_coll_ep *ce = ep->coll;
	struct coll_group *g;
	uint64_t hash;
	int ret;

	if (!(flags & FI_COLLECTIVE))
		return -FI_ENOSYS; /* multicast: not offered */
	if (!addr || !mc || (flags & ~(uint64_t)FI_COLLECTIVE))
		return -FI_EINVAL;
	if (!ep->eq)
		return -FI_ENOEQ;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -FI_ENOMEM;
	dlist_init(&g->ops);
	g->ce = ce;
	g->join_context = context;
	ofi_mutex_lock(&ce->lock);
	ret = join_members(ce, addr, &g->members, &g->n);
	if (ret)
		goto err;
	if (!g->n || g->n > OFI_COLL_MAX_MEMBERS) {
		ret = -FI_EINVAL;
		goto err;
	}
	g->slot_size = ce->slot_size;
	if (!g->slot_size)
		g->slot_size = g->n > OFI_COLL_SLOT_BIG_N
				       ? OFI_COLL_SLOT_SIZE / 2
				       : OFI_COLL_SLOT_SIZE;
	ret = join_identity(g, &hash);
	if (!ret)
		ret = join_register(g, hash, coll_generation(ce, hash));
	if (ret)
		goto err;
	/* Published in our hellos (join_leaders): who shares our CPU */
	g->place = coll_place();
	g->mc_fid.fid.fclass = FI_CLASS_MC;
	g->mc_fid.fid.context = context;
	g->mc_fid.fid.ops = &mc_fi_ops;
	g->mc_fid.fi_addr = (fi_addr_t)(uintptr_t)g;
	g->state = G_JOINING;
	dlist_insert_tail(&g->entry, &ce->groups);
	*mc = &g->mc_fid;
	ofi_mutex_unlock(&ce->lock);
	return 0;
err:
	ofi_mutex_unlock(&ce->lock);
	group_free(g);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Endpoint hooks.                                                      */

void ofi_coll_info(const struct fi_info *hints, struct fi_info *fi)
{
	if (!hints || !(hints->caps & FI_COLLECTIVE) || !fi->ep_attr ||
	    fi->ep_attr->type != FI_EP_RDM || !(fi->caps & FI_RMA))
		return;
	fi->caps |= FI_COLLECTIVE;
	if (fi->tx_attr)
		fi->tx_attr->caps |= FI_COLLECTIVE;
	if (fi->rx_attr)
		fi->rx_attr->caps |= FI_COLLECTIVE;
}

void ofi_coll_ep_init(struct util_ep *ep)
{
	/* The engine writes into peers, and they into us. */
	if ((ep->caps & FI_COLLECTIVE) && ep->type == FI_EP_RDM)
		ep->caps |= FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
}

int ofi_coll_ep_enable(struct util_ep *ep)
{
	struct ofi_coll_ep *ce;
	size_t v;
	int b;

	if (!(ep->caps & FI_COLLECTIVE) || ep->type != FI_EP_RDM ||
	    ep->shared || ep->coll || !ep->progress)
		return 0;
	ce = calloc(1, sizeof(*ce));
	if (!ce)
		return -FI_ENOMEM;
	ce->ep = ep;
	ofi_mutex_init(&ce->lock);
	dlist_init(&ce->groups);
	dlist_init(&ce->closing);
	ce->fanout = 2;
	if (!fi_param_get_size_t(NULL, "coll_fanout", &v) && v)
		ce->fanout = v;
	ce->slot_size = 0; /* by group size, at join */
	if (!fi_param_get_size_t(NULL, "coll_slot_size", &v) && v)
		ce->slot_size = v < 64 ? 64 : v & ~(size_t)63;
	ce->probe_timeout = 4000;
	if (!fi_param_get_size_t(NULL, "coll_probe_timeout", &v))
		ce->probe_timeout = v;
	ce->direct_min = OFI_COLL_DIRECT_MIN;
	if (!fi_param_get_size_t(NULL, "coll_direct_min", &v))
		ce->direct_min = v ? v : SIZE_MAX;
	if (ep->coll_shared &&
	    (fi_param_get_bool(NULL, "coll_shared", &b) || b))
		ce->shared = ep->coll_shared;
	ce->fold = ep->coll_fold_cpus &&
		   (fi_param_get_bool(NULL, "coll_fold", &b) || b);
	ce->cm = *ep->ep_fid.cm;
	ce->cm.join = coll_join;
	ep->ep_fid.cm = &ce->cm;
	ep->ep_fid.collective = (struct fi_ops_collective *)&ofi_coll_ops;
	ce->prov_progress = ep->progress;
	ep->progress = coll_progress;
	ep->coll = ce;
	if (ep->eq) {
		ce->eq_prog.progress = coll_eq_progress;
		ce->eq_prog.ep = ep;
		ofi_eq_prog_add(ep->eq, &ce->eq_prog);
		ce->on_eq = true;
	}
	return 0;
}

void ofi_coll_ep_detach(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;

	if (ce && ce->on_eq) {
		ofi_eq_prog_del(ep->eq, &ce->eq_prog);
		ce->on_eq = false;
	}
}

bool ofi_coll_ep_busy(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;
	bool busy;

	if (!ce)
		return false;
	ofi_mutex_lock(&ce->lock);
	busy = !dlist_empty(&ce->groups);
	ofi_mutex_unlock(&ce->lock);
	return busy;
}

void ofi_coll_ep_close(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;
	struct coll_group *g;
	struct coll_gen *gen;

	if (!ce)
		return;
	ofi_coll_ep_detach(ep);
	/* The provider has let go of every write: closed groups go too.
	 * Joined ones are left only by a failed open or enable (a close
	 * answers -FI_EBUSY while there are: ofi_coll_ep_busy). */
	while (!dlist_empty(&ce->closing)) {
		g = container_of(ce->closing.next, struct coll_group, entry);
		dlist_remove(&g->entry);
		group_free(g);
	}
	while (!dlist_empty(&ce->groups)) {
		g = container_of(ce->groups.next, struct coll_group, entry);
		dlist_remove(&g->entry);
		group_free(g);
	}
	while ((gen = ce->gens)) {
		ce->gens = gen->next;
		free(gen);
	}
	ep->progress = ce->prov_progress;
	ofi_mutex_destroy(&ce->lock);
	free(ce->spare);
	free(ce);
	ep->coll = NULL;
}

/*
 * A peer's stores gave @g work: a chunk, or the acks a send waits for;
 * or the group announced a sleeper less than OFI_COLL_SLEEPER_NS ago,
 * which peers that stored without a fence may not have seen yet.
 */
static bool group_ready(struct coll_group *g)
{
	struct coll_chan *ch;
	uint8_t *src;
	uint64_t seq, now;
	size_t i;

	if (g->state != G_READY)
		return false;
	if (g->shared && g->sleeper_ns != UINT64_MAX) {
		now = ofi_gettime_ns();
		if (!g->sleeper_ns) {
			g->sleeper_ns = now;
			__atomic_store_n(g_word(g, w_sleeper(g->n)), 1,
					 __ATOMIC_SEQ_CST);
		}
		if (now - g->sleeper_ns < OFI_COLL_SLEEPER_NS)
			return true;
		g->sleeper_ns = UINT64_MAX; /* announced long enough */
	}
	if (dlist_empty(&g->ops))
		return false;
	for (i = 0; i < g->n; i++) {
		ch = &g->chan[i];
		if (i == g->me)
			continue;
		seq = ch->in_seq + 1;
		if (chunk_landed(g, i, seq, 0, &src))
			return true;
		if (ch->ack_wait &&
		    chan_acked(g, i) + OFI_COLL_WINDOW >= ch->out_seq + 1)
			return true;
	}
	return false;
}

bool ofi_coll_wait_ready(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;
	struct dlist_entry *item;
	bool ready = false;

	if (!ce)
		return false;
	/* The caller holds its provider's lock, which the engine takes
	 * inside its own: never wait for ours. */
	if (pthread_mutex_trylock(&ce->lock))
		return true;
	dlist_foreach(&ce->groups, item)
	{
		ready = group_ready(
			container_of(item, struct coll_group, entry));
		if (ready)
			break;
	}
	ofi_mutex_unlock(&ce->lock);
	return ready;
}

/* ------------------------------------------------------------------ */
/* fi_query_collective.                                                 */

int ofi_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			 struct fi_collective_attr *attr, uint64_t flags)
{
	size_t dtsize;
	struct fi_user_op uop;

	if (!domain || !attr || attr->mode)
		return -FI_EINVAL;
	if (flags & ~(uint64_t)FI_SCATTER)
		return -FI_EINVAL;
	if ((unsigned)coll > FI_GATHER)
		return -FI_EINVAL;
	attr->max_members = OFI_COLL_MAX_MEMBERS;
	if (coll == FI_BARRIER) {
		if (attr->op != FI_NOOP)
			return -FI_EOPNOTSUPP;
		attr->datatype_attr.count = 0;
		attr->datatype_attr.size = 0;
		return 0;
	}
	dtsize = ofi_datatype_size(attr->datatype);
	if (!dtsize)
		return -FI_EOPNOTSUPP;
	if (coll == FI_ALLREDUCE || coll == FI_REDUCE_SCATTER ||
	    coll == FI_REDUCE) {
		if (!coll_op_ok(attr->op, attr->datatype, &uop))
			return -FI_EOPNOTSUPP;
	} else if (attr->op != FI_NOOP && attr->op != FI_ATOMIC_WRITE) {
		return -FI_EOPNOTSUPP;
	}
	attr->datatype_attr.count = SIZE_MAX / dtsize / OFI_COLL_MAX_MEMBERS;
	attr->datatype_attr.size = dtsize;
	return 0;
}
