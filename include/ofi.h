/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi.h - small building blocks shared by the core, prov/util and every
 * provider: list heads, locks, atomics, clocks and the usual macros.
 * Anything object-shaped lives in ofi_util.h; this file stays dependency-free
 * apart from libc and pthreads so every translation unit can include it.
 */
#ifndef OFI_H
#define OFI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>

#ifndef container_of
#define container_of(ptr, type, field)                                         \
	((type *)((char *)(ptr)-offsetof(type, field)))
#endif

#define OFI_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define OFI_MIN(a, b)	  ((a) < (b) ? (a) : (b))
#define OFI_MAX(a, b)	  ((a) > (b) ? (a) : (b))
#define OFI_UNUSED(x)	  ((void)(x))
#define OFI_LIKELY(x)	  __builtin_expect(!!(x), 1)
#define OFI_UNLIKELY(x)	  __builtin_expect(!!(x), 0)
#define OFI_CACHELINE	  64

/*
 * The functions every small message or collective step runs, kept together
 * (.text.hot) on a few pages. Where the kernel isolates its page tables
 * (PTI) on a CPU without PCID, as in many VMs, each syscall flushes the
 * user TLB, and each page touched after a send() or recv() costs a page
 * walk (5-10 ns on this project's VMs). A 2-process tcp barrier call took
 * ~70 walks for code, scattered over the library; packed, ~43
 * (contrib/footprint.sh counts them).
 */
#define OFI_HOT __attribute__((hot))

/* Symbols of the library that no program may bind to. */
#define OFI_HIDDEN __attribute__((visibility("hidden")))

/* The provider the core logs as ("core"); defined in src/. */
extern struct fi_provider ofi_core_prov;

/* Doubly linked, circular list with an embedded head. */
struct dlist_entry {
	struct dlist_entry *next;
	struct dlist_entry *prev;
};

#define DLIST_HEAD_INIT(name)                                                  \
	{                                                                      \
		&(name), &(name)                                               \
	}

static inline void dlist_init(struct dlist_entry *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool dlist_empty(const struct dlist_entry *head)
{
	return head->next == head;
}

static inline void dlist_insert_after(struct dlist_entry *item,
				      struct dlist_entry *pos)
{
	item->next = pos->next;
	item->prev = pos;
	pos->next->prev = item;
	pos->next = item;
}

static inline void dlist_insert_head(struct dlist_entry *item,
				     struct dlist_entry *head)
{
	dlist_insert_after(item, head);
}

static inline void dlist_insert_tail(struct dlist_entry *item,
				     struct dlist_entry *head)
{
	dlist_insert_after(item, head->prev);
}

static inline void dlist_remove(struct dlist_entry *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	dlist_init(item);
}

static inline struct dlist_entry *dlist_pop_front(struct dlist_entry *head)
{
	struct dlist_entry *item;

	if (dlist_empty(head))
		return NULL;
	item = head->next;
	dlist_remove(item);
	return item;
}

#define dlist_foreach(head, item)                                              \
	for ((item) = (head)->next; (item) != (head); (item) = (item)->next)

/* Safe against removal of the current item. */
#define dlist_foreach_safe(head, item, tmp)                                    \
	for ((item) = (head)->next, (tmp) = (item)->next; (item) != (head);    \
	     (item) = (tmp), (tmp) = (item)->next)

/*
 * Locks (prov/util/util_lock.c). Most locks are only ever taken by one
 * thread: an FI_THREAD_SAFE object that one application thread drives,
 * locked at each step of each poll. So a lock starts biased: the first
 * thread to take it (its owner) takes and drops it with plain stores,
 * no atomic instruction. The first other thread to want it revokes the
 * bias for good (a process-wide memory barrier, membarrier(2), orders
 * the owner's plain stores against it; microseconds, once), and from
 * then on the lock is a futex mutex: one atomic each way uncontended,
 * a sleep at once when held. Without membarrier (or under
 * ThreadSanitizer, which cannot see that barrier) locks start unbiased.
 * Not recursive, released by the thread that took it, not for
 * pthread_cond_wait (the EQ's locks are plain pthread mutexes).
 */
enum { OFI_LOCK_FREE, OFI_LOCK_HELD, OFI_LOCK_SLEEPERS };
/* Zeroed, as by calloc, a lock is free and unbiased. */
enum { OFI_BIAS_OFF, OFI_BIAS_ON, OFI_BIAS_REVOKING, OFI_BIAS_FENCED };

typedef struct {
	uint32_t word;	 /* once unbiased: OFI_LOCK_FREE, _HELD, _SLEEPERS */
	uint32_t bias;	 /* OFI_BIAS_ON until revoked, then _OFF */
	uint32_t held;	 /* the owner holds it by bias; owner writes only */
	uintptr_t owner; /* the thread the bias went to; 0: none yet */
} ofi_mutex_t;

#define OFI_MUTEX_INITIALIZER                                                  \
	{                                                                      \
		OFI_LOCK_FREE, OFI_BIAS_OFF, 0, 0                              \
	}

void ofi_mutex_init_bias(ofi_mutex_t *m);
void ofi_mutex_lock_slow(ofi_mutex_t *m);
bool ofi_mutex_trylock_slow(ofi_mutex_t *m);
void ofi_mutex_wake(ofi_mutex_t *m);

static inline uintptr_t ofi_thread_self(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
	return (uintptr_t)__builtin_thread_pointer();
#else
	return (uintptr_t)pthread_self();
#endif
}

static inline int ofi_mutex_init(ofi_mutex_t *m)
{
	ofi_mutex_init_bias(m);
	return 0;
}

static inline void ofi_mutex_destroy(ofi_mutex_t *m)
{
	(void)m;
}

/* The owner takes it by bias while the bias stands. The compiler barrier
 * is the owner's half of the fence; a revoker's membarrier is the rest. */
static inline bool ofi_mutex_bias_enter(ofi_mutex_t *m)
{
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) != ofi_thread_self())
		return false;
	__atomic_store_n(&m->held, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&m->bias, __ATOMIC_RELAXED) == OFI_BIAS_ON)
		return true;
	__atomic_store_n(&m->held, 0, __ATOMIC_RELEASE);
	return false;
}

static inline bool ofi_mutex_word_trylock(ofi_mutex_t *m)
{
	uint32_t free_ = OFI_LOCK_FREE;

	return __atomic_compare_exchange_n(&m->word, &free_, OFI_LOCK_HELD,
					   false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static inline bool ofi_mutex_unbiased(ofi_mutex_t *m)
{
	return __atomic_load_n(&m->bias, __ATOMIC_ACQUIRE) == OFI_BIAS_OFF;
}

/* Whether it took @m (never waits for a holder, even this thread). */
static inline bool ofi_mutex_trylock(ofi_mutex_t *m)
{
	if (ofi_mutex_unbiased(m))
		return ofi_mutex_word_trylock(m);
	return ofi_mutex_trylock_slow(m);
}

/* A lock that is no longer biased goes to its word at once: the owner
 * would only store and drop held. */
static inline void ofi_mutex_lock(ofi_mutex_t *m)
{
	if (ofi_mutex_unbiased(m)) {
		if (ofi_mutex_word_trylock(m))
			return;
	} else if (ofi_mutex_bias_enter(m)) {
		return;
	}
	ofi_mutex_lock_slow(m);
}

static inline void ofi_mutex_unlock(ofi_mutex_t *m)
{
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == ofi_thread_self() &&
	    __atomic_load_n(&m->held, __ATOMIC_RELAXED)) {
		__atomic_store_n(&m->held, 0, __ATOMIC_RELEASE);
		return;
	}
	if (__atomic_exchange_n(&m->word, OFI_LOCK_FREE, __ATOMIC_RELEASE) ==
	    OFI_LOCK_SLEEPERS)
		ofi_mutex_wake(m);
}

/* Reference counts and flags shared between threads. */
typedef struct {
	int32_t val;
} ofi_atomic32_t;

typedef struct {
	int64_t val;
} ofi_atomic64_t;

static inline void ofi_atomic_init32(ofi_atomic32_t *a, int32_t v)
{
	__atomic_store_n(&a->val, v, __ATOMIC_RELEASE);
}

static inline int32_t ofi_atomic_get32(ofi_atomic32_t *a)
{
	return __atomic_load_n(&a->val, __ATOMIC_ACQUIRE);
}

static inline int32_t ofi_atomic_inc32(ofi_atomic32_t *a)
{
	return __atomic_add_fetch(&a->val, 1, __ATOMIC_ACQ_REL);
}

static inline int32_t ofi_atomic_dec32(ofi_atomic32_t *a)
{
	return __atomic_sub_fetch(&a->val, 1, __ATOMIC_ACQ_REL);
}

static inline void ofi_atomic_init64(ofi_atomic64_t *a, int64_t v)
{
	__atomic_store_n(&a->val, v, __ATOMIC_RELEASE);
}

static inline int64_t ofi_atomic_get64(ofi_atomic64_t *a)
{
	return __atomic_load_n(&a->val, __ATOMIC_ACQUIRE);
}

static inline int64_t ofi_atomic_add64(ofi_atomic64_t *a, int64_t v)
{
	return __atomic_add_fetch(&a->val, v, __ATOMIC_ACQ_REL);
}

static inline void ofi_atomic_set64(ofi_atomic64_t *a, int64_t v)
{
	__atomic_store_n(&a->val, v, __ATOMIC_RELEASE);
}

/*
 * seq_cst: for a change of one variable, then a look at another, against
 * another thread's change of the second, then a look at the first (one
 * of the two always sees the other's change; see ofi_cntr_inc). Where
 * read-modify-writes are full barriers anyway (x86), the same code.
 */
static inline int32_t ofi_atomic_get32_sc(ofi_atomic32_t *a)
{
	return __atomic_load_n(&a->val, __ATOMIC_SEQ_CST);
}

static inline int32_t ofi_atomic_inc32_sc(ofi_atomic32_t *a)
{
	return __atomic_add_fetch(&a->val, 1, __ATOMIC_SEQ_CST);
}

static inline int64_t ofi_atomic_get64_sc(ofi_atomic64_t *a)
{
	return __atomic_load_n(&a->val, __ATOMIC_SEQ_CST);
}

static inline int64_t ofi_atomic_inc64_sc(ofi_atomic64_t *a)
{
	return __atomic_add_fetch(&a->val, 1, __ATOMIC_SEQ_CST);
}

/* Monotonic clocks for timeouts; never the wall clock. */
static inline uint64_t ofi_gettime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ofi_gettime_ms(void)
{
	return ofi_gettime_ns() / 1000000ULL;
}

/* Round up to a power-of-two alignment. */
static inline size_t ofi_align_up(size_t v, size_t align)
{
	return (v + align - 1) & ~(align - 1);
}

static inline uint64_t ofi_roundup_pow2(uint64_t v)
{
	if (v <= 1)
		return 1;
	return 1ULL << (64 - __builtin_clzll(v - 1));
}

#endif /* OFI_H */
