/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_progress.h - progress threads (prov/util/util_progress.c): what a
 * provider starts for an object whose application asked for
 * FI_PROGRESS_AUTO. The thread sleeps in poll(2) on one fd the provider
 * names (an epoll set, a listening socket) and on an internal eventfd, and
 * calls the provider's callback whenever the fd is readable, when someone
 * wakes it, and at least every period_ms (time-based work: retries,
 * timeouts, queues that no fd reports).
 *
 * Nothing here knows a provider: the callback takes the provider's own
 * lock. An epoll set reports EPOLLOUT of its sockets as readability of
 * the set, so sends blocked on a full socket buffer wake the thread too.
 *
 * Rules for the provider:
 * - ofi_progress_stop() before the watched fd is closed and before
 *   anything the callback touches is torn down, and without holding a
 *   lock the callback takes (it waits for a callback in flight).
 * - The callback may call ofi_progress_stop() on its own thread object
 *   (an event handler closing the object): the thread then ends and frees
 *   itself after the callback returns, and must not be stopped again.
 * - The watched fd must stay open while the thread runs; one that is not
 *   open (POLLNVAL) is dropped from the poll set with a warning, so the
 *   thread never spins on it.
 * - Readiness the callback does not consume makes the thread call it
 *   again at once: the fd must become quiet when the work is done.
 *
 * An application that drives progress itself (busy-polling fi_cq_read)
 * does the thread's work already: the provider stamps @driven
 * (ofi_progress_mark) on those calls, and while the last stamp is under
 * OFI_PROGRESS_STANDDOWN_NS old the thread neither watches the fd nor
 * keeps its period, so it never takes the core, or the lock, from such
 * an application; only wakes run it then. A reader about to sleep on
 * what the thread completes (fi_cntr_wait, fi_cq_sread, fi_wait, an fd
 * after fi_trywait) drives nothing from then on: it rouses the thread
 * (ofi_progress_rouse), which ends the stand-down at once, so that the
 * completion that ends the sleep is made as soon as its data arrives.
 */
#ifndef OFI_PROGRESS_H
#define OFI_PROGRESS_H

#include <stdbool.h>

#include "ofi.h"

/* See above: how long a progress call of the application's counts. */
#define OFI_PROGRESS_STANDDOWN_NS (1000000ULL)

struct ofi_progress;

typedef void (*ofi_progress_fn)(void *arg);

struct ofi_progress_attr {
	const struct fi_provider *prov; /* logs as; NULL: silent */
	const char *name; /* thread name (15 chars kept), or NULL */
	int fd;		  /* watched for POLLIN; -1: none */
	/* The callback runs at least this often: poll(2)'s timeout, so -1
	 * means only on events and wakes, 0 means never sleep. With an
	 * @arm, the thread spins and yields the idle budget before it
	 * sleeps, the budget restarting whenever the callback moves data
	 * (ofi_yield_busy): armed at every pass while a positive period
	 * says work is in flight that the fd does not announce
	 * (ofi_yield_idle_wait), unarmed while the period is -1 and
	 * sleeping at once while more tasks are runnable than the host
	 * has CPUs (ofi_yield_idle_serve). */
	int period_ms;
	ofi_progress_fn fn;
	void *arg;
	/* When the application last drove progress (ns); NULL: never
	 * looked at. Lives as long as the thread. */
	ofi_atomic64_t *driven;
	/* Optional: runs (with @arg) before each sleep that watches @fd,
	 * not while standing down: what the provider took out of what the
	 * fd reports goes back (util_sock's quiet connection). */
	ofi_progress_fn arm;
};

/* The application drove progress now (see above). */
static inline void ofi_progress_mark(ofi_atomic64_t *driven)
{
	ofi_atomic_set64(driven, (int64_t)ofi_gettime_ns());
}

/* Starts the thread; 0 or a negative fi_errno (nothing started). */
int ofi_progress_start(const struct ofi_progress_attr *attr,
		       struct ofi_progress **prog);
/* Stops and joins the thread and frees @prog (NULL: nothing). */
void ofi_progress_stop(struct ofi_progress *prog);
/* Makes the thread run the callback soon, even if the fd is quiet. */
void ofi_progress_wake(struct ofi_progress *prog);
/*
 * A reader is about to sleep on the thread's completions: the stamp is
 * cleared and a thread standing down is woken to watch its fd (above).
 * Cheap when the thread does not stand down (no stamp: one load).
 */
void ofi_progress_rouse(struct ofi_progress *prog);
/* Changes the period (see ofi_progress_attr); takes effect at once. The
 * callback may set its own thread's next period. */
void ofi_progress_set_period(struct ofi_progress *prog, int period_ms);
/* Whether the caller runs on @prog's thread (inside its callback). */
bool ofi_progress_self(const struct ofi_progress *prog);
/*
 * Whether an endpoint with @caps gets a progress thread under
 * FI_PROGRESS_MANUAL too: it can be the target of RMA or atomics (FI_RMA
 * or FI_ATOMIC with FI_REMOTE_READ or FI_REMOTE_WRITE, or with no
 * direction named), and FI_PROGRESS_TARGET is not 0. A target that waits
 * on its own memory (OpenSHMEM) makes no call that could serve its peers.
 */
bool ofi_progress_target(uint64_t caps);

#endif /* OFI_PROGRESS_H */
