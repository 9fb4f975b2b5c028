/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_lock.c - the out-of-line half of ofi_mutex_t (include/ofi.h): a
 * lock's bias, its claim by the first thread and its revocation by the
 * first other one, and the futex mutex it becomes then.
 *
 * Why biased: an FI_THREAD_SAFE CQ read by one thread takes three locks
 * per empty poll (the CQ's, its endpoint list's, the endpoint's), and
 * their atomic instructions weigh on a poll loop that is otherwise a
 * few loads (docs/design.md). A thread that took a lock keeps it cheaply
 * until another thread shows up, which then pays a membarrier once.
 *
 * The revocation is Dekker's: the owner stores held, then loads bias;
 * the revoker stores bias, then loads held. The owner has only a
 * compiler barrier between the two; membarrier(2), called by the revoker
 * between its store and its load, runs a full barrier on every thread
 * of the process, so at least one of them sees the other's store: the
 * owner backs off, or the revoker waits for held to drop.
 */
#include <linux/membarrier.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ofi.h"

/* Looks at the bias's owner before yielding, then napping. */
#define LOCK_SPINS 32

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOCK_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define LOCK_TSAN 1
#endif

static pthread_once_t bias_once = PTHREAD_ONCE_INIT;
static bool bias_ok;

static long lock_membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

static void bias_init(void)
{
#ifndef LOCK_TSAN /* it would see the owner's plain stores as races */
	long cmds = lock_membarrier(MEMBARRIER_CMD_QUERY);

	bias_ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
		  !lock_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
#endif
}

void ofi_mutex_init_bias(ofi_mutex_t *m)
{
	pthread_once(&bias_once, bias_init);
	m->word = OFI_LOCK_FREE;
	m->held = 0;
	m->owner = 0;
	__atomic_store_n(&m->bias, bias_ok ? OFI_BIAS_ON : OFI_BIAS_OFF,
			 __ATOMIC_RELEASE);
}

/* The revoker's half of the fence. Registration worked at bias_init; a
 * child of fork(2) may have to register again. */
static void bias_fence(void)
{
	if (!lock_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return;
	if (!lock_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) &&
	    !lock_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return;
	if (!lock_membarrier(MEMBARRIER_CMD_GLOBAL))
		return;
	/* No fence: going on could let two threads in. bias_init found
	 * membarrier working, so this is not reached. */
	abort();
}

static inline void lock_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Waiting on the bias's owner, which has no futex to wake us with. */
static void lock_backoff(unsigned *n)
{
	struct timespec ts = {0, 20000};

	if (++*n < LOCK_SPINS)
		lock_relax();
	else if (*n < 2 * LOCK_SPINS)
		sched_yield();
	else
		nanosleep(&ts, NULL);
}

/* The first thread to take a biased lock becomes its owner. */
static bool bias_claim(ofi_mutex_t *m, uintptr_t self)
{
	uintptr_t none = 0;

	if (__atomic_load_n(&m->bias, __ATOMIC_RELAXED) != OFI_BIAS_ON ||
	    !__atomic_compare_exchange_n(&m->owner, &none, self, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return false;
	return ofi_mutex_bias_enter(m);
}

/*
 * Ends @m's bias; whether it is off now. The first caller fences; after
 * that, whoever finds the owner outside turns it off. With @wait, waits
 * for the owner to let go.
 */
static bool bias_revoke(ofi_mutex_t *m, bool wait)
{
	uint32_t b = OFI_BIAS_ON;
	unsigned n = 0;

	if (__atomic_compare_exchange_n(&m->bias, &b, OFI_BIAS_REVOKING, false,
					__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
		bias_fence();
		__atomic_store_n(&m->bias, OFI_BIAS_FENCED, __ATOMIC_SEQ_CST);
	}
	for (;;) {
		b = __atomic_load_n(&m->bias, __ATOMIC_ACQUIRE);
		if (b == OFI_BIAS_OFF)
			return true;
		if (b == OFI_BIAS_FENCED &&
		    !__atomic_load_n(&m->held, __ATOMIC_ACQUIRE)) {
			__atomic_compare_exchange_n(&m->bias, &b, OFI_BIAS_OFF,
						    false, __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED);
			return true;
		}
		if (!wait)
			return false;
		lock_backoff(&n);
	}
}

/*
 * No spin before the sleep: a holder that is not running (ranks beyond
 * the CPUs, a progress thread beside its application on one CPU) is
 * kept waiting by a spinner, and a futex wait hands the CPU over.
 */
static void word_lock(ofi_mutex_t *m)
{
	if (ofi_mutex_word_trylock(m))
		return;
	/* From here on the word says a sleeper may be waiting, so the
	 * holder's unlock wakes one, maybe us. */
	while (__atomic_exchange_n(&m->word, OFI_LOCK_SLEEPERS,
				   __ATOMIC_ACQUIRE) != OFI_LOCK_FREE)
		syscall(SYS_futex, &m->word, FUTEX_WAIT_PRIVATE,
			OFI_LOCK_SLEEPERS, NULL, NULL, 0);
}

/*
 * The owner never waits for a revocation to finish: it is not inside by
 * bias while it is here. Any other thread waits for the bias to be off
 * before it uses the word.
 */
void ofi_mutex_lock_slow(ofi_mutex_t *m)
{
	uintptr_t self = ofi_thread_self();

	if (bias_claim(m, self))
		return;
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) != self)
		bias_revoke(m, true);
	word_lock(m);
}

bool ofi_mutex_trylock_slow(ofi_mutex_t *m)
{
	uintptr_t self = ofi_thread_self();

	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == self) {
		if (__atomic_load_n(&m->held, __ATOMIC_RELAXED))
			return false; /* ours already */
		return ofi_mutex_bias_enter(m) || ofi_mutex_word_trylock(m);
	}
	if (bias_claim(m, self))
		return true;
	if (__atomic_load_n(&m->owner, __ATOMIC_RELAXED) == self)
		return ofi_mutex_word_trylock(m);
	return bias_revoke(m, false) && ofi_mutex_word_trylock(m);
}

void ofi_mutex_wake(ofi_mutex_t *m)
{
	syscall(SYS_futex, &m->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
