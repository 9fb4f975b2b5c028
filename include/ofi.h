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

/* Locks: thin wrappers so FI_THREAD_DOMAIN paths can skip them cheaply. */
typedef pthread_mutex_t ofi_mutex_t;

static inline int ofi_mutex_init(ofi_mutex_t *m)
{
	return pthread_mutex_init(m, NULL) ? -FI_ENOMEM : 0;
}

static inline void ofi_mutex_destroy(ofi_mutex_t *m)
{
	pthread_mutex_destroy(m);
}

static inline void ofi_mutex_lock(ofi_mutex_t *m)
{
	pthread_mutex_lock(m);
}

static inline void ofi_mutex_unlock(ofi_mutex_t *m)
{
	pthread_mutex_unlock(m);
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
