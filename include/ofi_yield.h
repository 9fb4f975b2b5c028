/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_yield.h - the one idle policy of every progress loop
 * (prov/util/util_yield.c): what a thread does when a progress call finds
 * nothing to do, and how long a wait for something only another process
 * can change may go on before that process is taken to be off the CPU.
 *
 * A thread that keeps finding nothing spins for FI_PROGRESS_SPIN
 * microseconds (a peer on another core answers well within that), then
 * gives its core away with sched_yield() at every idle call (a peer on the
 * same core runs at once), and once idle for OFI_YIELD_SLEEP_NS sleeps a
 * sixteenth of the time it has been idle, up to OFI_YIELD_SLEEP_MAX_NS
 * (a peer that sched_yield() cannot reach, in another cgroup or at lower
 * weight, runs too; the wake-up costs at most 1/16 of the wait).
 *
 * The state is per thread: one idle period spans every CQ, counter and EQ
 * a thread polls, and ends when any of them returns something or when a
 * provider's progress reports that it moved data (ofi_yield_busy).
 *
 * A caller that knows its awaited peer shares its CPU says so
 * (ofi_yield_peer_here): that period yields from its second idle poll.
 *
 * A thread whose idle periods keep ending only after its yield ran
 * another task (its peer shares its CPU and cannot run while it spins)
 * skips the spin of ofi_yield_idle (all but the period's first poll,
 * which never yields), until its yields come back at once or a periodic
 * full spin is answered (util_yield.c); and one nobody pinned (its mask
 * is every CPU the process may use) leaves the one it shares with its
 * peer (the load balancer keeps such a pair together), its mask back
 * before the call returns; FI_PROGRESS_MIGRATE=0 turns that off.
 */
#ifndef OFI_YIELD_H
#define OFI_YIELD_H

#include <stdbool.h>
#include <stdint.h>

/* Default of FI_PROGRESS_SPIN, microseconds. */
#define OFI_YIELD_SPIN_US 20
/* Idle this long (after the spin), a thread sleeps instead of yielding. */
#define OFI_YIELD_SLEEP_NS     (2 * 1000000ULL)
#define OFI_YIELD_SLEEP_MAX_NS (1000000ULL)
/* A sched_yield() that took this long ran someone else meanwhile. */
#define OFI_YIELD_HANDOFF_NS (5 * 1000ULL)
/* One that came back this soon found no other task wanting the CPU. */
#define OFI_YIELD_ALONE_NS (1000ULL)

enum ofi_yield_step {
	OFI_YIELD_SPIN,	   /* within the spin budget: try again at once */
	OFI_YIELD_YIELDED, /* gave the core away once */
	OFI_YIELD_SLEEP,   /* idle long: sleep (ofi_yield_idle slept) */
};

/* The spin budget in ns; negative: never yield (FI_PROGRESS_SPIN=-1). */
int64_t ofi_yield_spin_ns(void);
/* This thread found work: its next idle period starts spinning again. */
void ofi_yield_busy(void);
/* This thread found nothing: spins, yields or sleeps by how long. */
enum ofi_yield_step ofi_yield_idle(void);
/*
 * What this thread waits for can only come from a task placed on its own
 * CPU (a collective's member pinned beside us): that task cannot run
 * while we spin, so the idle polls of this period (ofi_yield_idle or
 * ofi_yield_idle_wait) skip the spin budget: each one that follows the
 * one before at once yields (one after a gap finds the CPU handed over
 * already, by a caller that yields itself, and keeps it). Ends with the
 * period (ofi_yield_busy). Never with FI_PROGRESS_SPIN=-1.
 */
void ofi_yield_peer_here(void);
/*
 * The same for a blocking wait, which sleeps on its own wait object: it
 * spins this period's budget (none once the peer is known to share our
 * CPU) and yields until two full budgets have passed, then
 * OFI_YIELD_SLEEP tells the caller to sleep (nothing slept here), so a
 * blocking read never keeps a CPU busy for longer than that.
 */
enum ofi_yield_step ofi_yield_idle_wait(void);
/*
 * The same for a progress thread before it arms and sleeps on its fd,
 * except that it sleeps at once instead of yielding where its period has
 * no spin budget, and whenever more tasks are runnable than the machine
 * has CPUs: a crowded CPU runs a sleeper woken by a request at once, and
 * a spinner only after the other task's slice. It looks at the run queue
 * only once its idle period has lasted a couple of microseconds: a thread
 * that finds a request every few passes pays no look per request.
 */
enum ofi_yield_step ofi_yield_idle_serve(void);
/*
 * Whether a wait on another process that began at @since_ns (and is not
 * over at @now_ns) has outlasted two spin budgets: that process is not
 * running beside us (one on our core answers only after our spin and its
 * own), and a protocol that needs it once per step should finish in one
 * step instead. Never with FI_PROGRESS_SPIN=-1.
 */
bool ofi_yield_overdue(uint64_t since_ns, uint64_t now_ns);
/*
 * Times a thread of this process gave its core to another task: a yield
 * that came back after OFI_YIELD_HANDOFF_NS, or a sleep. A wait on a peer
 * that ended with no handoff since it began was ended by a peer running
 * on another core.
 */
uint64_t ofi_yield_handoffs(void);

#endif /* OFI_YIELD_H */
