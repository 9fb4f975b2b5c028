/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_yield.c - the idle policy of progress loops (ofi_yield.h): the
 * FI_PROGRESS_SPIN budget, each thread's idle clock, and the spin, yield
 * and sleep steps.
 *
 * Why: a progress loop that spins until the scheduler's tick takes its
 * core away costs a peer on the same core (an oversubscribed MPI job, a
 * busy host, a CPU quota) one tick, 4 ms, per message. Spinning first
 * keeps the split-core latency; yielding after it hands a shared core
 * over in microseconds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ofi.h"
#include "ofi_yield.h"

static pthread_once_t yield_once = PTHREAD_ONCE_INIT;
static bool yield_ready; /* yield_spin_ns is set: no pthread_once call */
static int64_t yield_spin_ns;
static bool yield_migrate = true; /* FI_PROGRESS_MIGRATE */
static long yield_ncpus;	  /* online; <= 0: unknown */
static ofi_atomic64_t yield_handoffs;

/*
 * This thread's idle state, one thread-local object: each thread-local
 * variable of a shared library is a call into ld.so to find, and an idle
 * poll reads several.
 */
struct yield_thread {
	uint64_t since;	    /* ns this idle period began; 0: not idle */
	uint64_t idle;	    /* ns idle at the last clock read */
	int64_t budget;	    /* this period's spin, ns */
	uint64_t here_last; /* its last idle poll, ns (here) */
	uint32_t polls;	    /* idle polls of this period (and before its
			     * clock started) */
	bool here;	    /* this period waits on a task on our CPU
			     * (ofi_yield_peer_here) */
	bool probe;	    /* this period spins to find out */
	bool handed;	    /* this period: a yield ran a task */
	bool alone;	    /* this period: a yield came back */
	uint8_t shared;	    /* the score (yield_period_end) */
	uint8_t probes;
	uint8_t colo;	/* handed periods in a row */
	uint8_t jitter; /* added to YIELD_MOVE_AFTER, + 1 */
	bool pinned;	/* never move this thread */
	bool crowded_now;
	uint64_t moved; /* ns of the last move */
	uint64_t move_gap;
	uint64_t look_ns; /* the last look at the run queue */
};

static __thread struct yield_thread ys;

/* FI_PROGRESS_SPIN is defined by the core (src/param.c), which prov/util
 * cannot call into from a loadable provider except through fi_param_get. */
static void yield_init(void)
{
	int us = OFI_YIELD_SPIN_US, migrate;

	if (fi_param_get_int(NULL, "progress_spin", &us) || us < -1)
		us = OFI_YIELD_SPIN_US;
	yield_spin_ns = us < 0 ? -1 : (int64_t)us * 1000;
	if (!fi_param_get_bool(NULL, "progress_migrate", &migrate))
		yield_migrate = migrate != 0;
	yield_ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	__atomic_store_n(&yield_ready, true, __ATOMIC_RELEASE);
}

/* Once per process; after that one load, not a call, per idle poll. */
static inline void yield_setup(void)
{
	if (!__atomic_load_n(&yield_ready, __ATOMIC_ACQUIRE))
		pthread_once(&yield_once, yield_init);
}

int64_t ofi_yield_spin_ns(void)
{
	yield_setup();
	return yield_spin_ns;
}

/*
 * Whether this thread's peer shares its CPU, learnt from how idle periods
 * end. A period that ended after a sched_yield() of ours had run another
 * task was ended by a task that needed our CPU: it could not run while we
 * spun, so the spin was wasted. Each such period adds one to a score
 * (up to YIELD_SHARED_MAX), and from YIELD_SHARED_AFTER on the thread
 * yields at its second idle poll (see ofi_yield_idle). A period whose
 * yields all came back at once (no task wanted our CPU: the peer runs
 * elsewhere) takes two off;
 * so does a period that ended within the spin when every
 * YIELD_PROBE_EVERY-th period spins the full budget to find out (with a
 * third task on our CPU no yield comes back at once). Not one: the
 * scheduler (EEVDF) lets a fifth of the yields return at once even with a
 * busy task waiting. Other periods that ended within the spin prove
 * nothing: our own progress may have found the work.
 */
#define YIELD_SHARED_AFTER 4
#define YIELD_SHARED_MAX   8
#define YIELD_PROBE_EVERY  16

static uint64_t yield_cpu(void);

/*
 * A thread that may run on other CPUs, whose idle periods keep ending
 * only after its yield ran the peer, has been put on its peer's CPU by
 * the scheduler and is kept there: two tasks that hand a CPU back and
 * forth every few microseconds always look cache-hot to the load
 * balancer, so an unpinned pair pays a context switch per message while
 * the other CPU may idle. After YIELD_MOVE_AFTER such periods in a row
 * (plus a per-thread jitter, so that the peer, counting the same
 * periods, does not follow onto the same CPU) the thread leaves its CPU:
 * its affinity without that CPU for a moment, then the caller's mask
 * back. Where every CPU is taken (more ranks than CPUs) co-location
 * comes back at once; a move that soon after the one before doubles the
 * wait before the next (YIELD_MOVE_MIN_NS up to YIELD_MOVE_MAX_NS).
 *
 * Only a thread nobody pinned moves: one whose mask is every CPU the
 * process may use (its cpuset, else the online CPUs). A mask that is
 * anything else (taskset, mpirun's binding, a core's hyperthreads, a
 * mask set after our first look) is the application's choice, and from
 * the first time this thread is seen with one it never moves again; so
 * neither does a thread where the mask or the cpuset cannot be read, nor
 * any on a machine with one usable CPU, nor with FI_PROGRESS_MIGRATE=0.
 * The caller's mask is back before yield_move returns, with signals
 * blocked in between, so no handler, fork, exit or close ever sees the
 * narrowed one.
 */
#define YIELD_MOVE_AFTER  4
#define YIELD_MOVE_MIN_NS (2 * 1000000ULL)
#define YIELD_MOVE_MAX_NS (1000 * 1000000ULL)

static pthread_once_t yield_cpus_once = PTHREAD_ONCE_INIT;
static bool yield_cpus_ok;   /* yield_cpus was read */
static cpu_set_t yield_cpus; /* the CPUs the process may use */

/* A cpulist ("0-3,8,10-11\n") into @set; -1 if malformed or empty. */
static int yield_parse_cpus(const char *s, cpu_set_t *set)
{
	unsigned long lo, hi;
	char *end;

	CPU_ZERO(set);
	while (*s && *s != '\n') {
		lo = strtoul(s, &end, 10);
		if (end == s)
			return -1;
		hi = lo;
		if (*end == '-') {
			s = end + 1;
			hi = strtoul(s, &end, 10);
			if (end == s || hi < lo)
				return -1;
		}
		if (hi >= CPU_SETSIZE)
			return -1; /* beyond what cpu_set_t holds */
		for (; lo <= hi; lo++)
			CPU_SET(lo, set);
		s = end;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -1;
	}
	return CPU_COUNT(set) ? 0 : -1;
}

static int yield_read_cpus(const char *path, cpu_set_t *set)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return yield_parse_cpus(buf, set);
}

/*
 * The first of @files found in @root@dir or the cgroups above it: a
 * cgroup without the cpuset controller (or outside the namespace's view,
 * as in a container) has the CPUs of the nearest one above that has it.
 */
static int yield_read_cgroup(const char *root, char *dir,
			     const char *const *files, cpu_set_t *set)
{
	char path[PATH_MAX];
	char *slash;
	int i;

	for (;;) {
		for (i = 0; files[i]; i++) {
			if (snprintf(path, sizeof(path), "%s%s/%s", root, dir,
				     files[i]) >= (int)sizeof(path))
				continue;
			if (!yield_read_cpus(path, set))
				return 0;
		}
		slash = strrchr(dir, '/');
		if (!slash || !*dir)
			return -1;
		*slash = '\0';
	}
}

/* cgroup v2, then v1's cpuset hierarchy, then the online CPUs. */
static void yield_cpus_init(void)
{
	static const char *const v2[] = {"cpuset.cpus.effective", NULL};
	static const char *const v1[] = {"cpuset.effective_cpus", "cpuset.cpus",
					 NULL};
	char line[PATH_MAX + 64], *dir, *ctl;
	cpu_set_t v1_set, v2_set;
	bool has_v1 = false, has_v2 = false;
	FILE *f = fopen("/proc/self/cgroup", "r");

	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		ctl = strchr(line, ':');
		dir = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!dir)
			continue;
		*dir++ = '\0';
		ctl++;
		if (!*ctl && !has_v2)
			has_v2 = !yield_read_cgroup("/sys/fs/cgroup", dir, v2,
						    &v2_set);
		else if (!has_v1 && (!strcmp(ctl, "cpuset") ||
				     strstr(ctl, "cpuset,") == ctl ||
				     strstr(ctl, ",cpuset")))
			has_v1 = !yield_read_cgroup("/sys/fs/cgroup/cpuset",
						    dir, v1, &v1_set);
	}
	if (f)
		fclose(f);
	if (has_v2)
		yield_cpus = v2_set;
	else if (has_v1)
		yield_cpus = v1_set;
	else if (yield_read_cpus("/sys/devices/system/cpu/online", &yield_cpus))
		return;
	yield_cpus_ok = true;
}

static void yield_move(void)
{
	cpu_set_t mine, other, now_set;
	sigset_t all_sigs, old_sigs;
	uint64_t now = ofi_gettime_ns();
	int cpu;

	if (ys.pinned)
		return;
	if (!ys.move_gap)
		ys.move_gap = YIELD_MOVE_MIN_NS;
	if (ys.moved && now - ys.moved < ys.move_gap)
		return;
	if (ys.moved && now - ys.moved < 2 * ys.move_gap)
		ys.move_gap = OFI_MIN(2 * ys.move_gap, YIELD_MOVE_MAX_NS);
	else
		ys.move_gap = YIELD_MOVE_MIN_NS;
	ys.moved = now;
	ys.jitter = (uint8_t)(1 + (now >> 10) % 8);

	yield_setup(); /* yield_migrate */
	(void)pthread_once(&yield_cpus_once, yield_cpus_init);
	if (!yield_migrate || !yield_cpus_ok || CPU_COUNT(&yield_cpus) < 2 ||
	    sched_getaffinity(0, sizeof(mine), &mine) ||
	    !CPU_EQUAL(&mine, &yield_cpus)) {
		ys.pinned = true;
		return;
	}
	cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mine))
		return;
	other = mine;
	CPU_CLR(cpu, &other);

	sigfillset(&all_sigs);
	if (pthread_sigmask(SIG_BLOCK, &all_sigs, &old_sigs))
		return;
	if (sched_setaffinity(0, sizeof(other), &other))
		goto out;
	/* Someone (another thread of the application) set a mask of its
	 * own meanwhile: it stays, and this thread is pinned from now. */
	if (sched_getaffinity(0, sizeof(now_set), &now_set) ||
	    !CPU_EQUAL(&now_set, &other)) {
		ys.pinned = true;
		goto out;
	}
	/* Fails only if the cpuset shrank meanwhile: the kernel has set
	 * a mask of its own then, and the move is not tried again. */
	if (sched_setaffinity(0, sizeof(mine), &mine))
		ys.pinned = true;
out:
	(void)pthread_sigmask(SIG_SETMASK, &old_sigs, NULL);
}

static void yield_period_end(void)
{
	if (ys.handed) {
		if (ys.shared < YIELD_SHARED_MAX)
			ys.shared++;
		if (!ys.jitter) /* differs between processes and threads */
			ys.jitter = (uint8_t)(1 + (getpid() ^
						   (uintptr_t)&ys.colo >> 6) %
							  8);
		if (++ys.colo >= YIELD_MOVE_AFTER + ys.jitter) {
			ys.colo = 0;
			yield_move();
		}
	} else if (ys.alone || ys.probe) {
		ys.shared = ys.shared > 2 ? ys.shared - 2 : 0;
		ys.colo = 0;
	}
	ys.handed = ys.alone = ys.probe = false;
}

/* The spin budget of a period starting now. */
static int64_t yield_period_budget(void)
{
	if (yield_spin_ns <= 0 || ys.shared < YIELD_SHARED_AFTER)
		return yield_spin_ns;
	ys.probe = !(++ys.probes % YIELD_PROBE_EVERY);
	return ys.probe ? yield_spin_ns : 0;
}

OFI_HOT void ofi_yield_busy(void)
{
	/* Most calls find the thread busy already: one TLS lookup, no
	 * store (each lookup is a call into ld.so, see OFI_HOT). */
	if (!ys.since && !ys.polls && !ys.here)
		return;
	if (ys.since)
		yield_period_end();
	ys.since = 0;
	ys.idle = 0;
	ys.polls = 0;
	ys.here = false;
	ys.here_last = 0;
}

OFI_HOT void ofi_yield_peer_here(void)
{
	ys.here = true;
}

/*
 * A wait on a task that shares our CPU: yield, unless the CPU was given
 * away since our last poll already. A caller that yields after each
 * empty poll itself (Open MPI's mpi_yield_when_idle) has handed the CPU
 * to that task, and a second yield of ours would only bounce it back
 * and forth; so the period's first poll, which cannot tell, keeps the
 * core, and a later one yields only when it follows the one before at
 * once. The period's clock starts as for any other poll, so that a wait
 * that goes on for long still ends in sleeps (the task may be stopped,
 * or blocked elsewhere).
 */
static enum ofi_yield_step yield_to_peer(void)
{
	uint64_t now, last = ys.here_last;

	yield_setup();
	if (yield_spin_ns < 0)
		return OFI_YIELD_SPIN;
	now = ofi_gettime_ns();
	ys.here_last = now;
	if (!ys.since) {
		ys.since = now;
		ys.budget = 0;
	}
	ys.idle = now - ys.since;
	if (ys.idle >= OFI_YIELD_SLEEP_NS)
		return OFI_YIELD_SLEEP;
	if (!last || now - last >= OFI_YIELD_HANDOFF_NS)
		return OFI_YIELD_SPIN;
	yield_cpu();
	ys.here_last = ofi_gettime_ns();
	return OFI_YIELD_YIELDED;
}

/*
 * How long this thread has been idle, starting the clock if it was not.
 * While it spins the clock is read every YIELD_CLOCK_POLLS idle polls
 * only: a busy-poll loop stays as tight as it was (the budget ends a few
 * polls late). Past the budget each poll yields anyway.
 */
#define YIELD_CLOCK_POLLS 8

/*
 * A period whose budget would be the whole spin starts its clock at its
 * YIELD_CLOCK_POLLS-th idle poll, not its first: most waits (a
 * collective's round trip, a ping-pong) end within a few polls, and the
 * clock read (tens of ns) was a good part of them. The spin then runs a
 * few polls longer than its budget.
 */
static bool yield_defer(void)
{
	yield_setup();
	if (yield_spin_ns <= 0 || ys.shared >= YIELD_SHARED_AFTER)
		return false;
	ys.budget = yield_spin_ns; /* what yield_period_budget says */
	return ++ys.polls % YIELD_CLOCK_POLLS != 0;
}

static uint64_t yield_idle_ns(void)
{
	uint64_t now;

	if (ys.since && (int64_t)ys.idle < ys.budget &&
	    ++ys.polls % YIELD_CLOCK_POLLS)
		return ys.idle;
	if (!ys.since && yield_defer())
		return 0;
	now = ofi_gettime_ns();
	if (!ys.since) {
		yield_setup();
		ys.since = now;
		ys.idle = 0;
		ys.budget = yield_period_budget();
		return 0;
	}
	ys.idle = now - ys.since;
	return ys.idle;
}

static enum ofi_yield_step yield_step(uint64_t idle, int64_t spin)
{
	if (spin < 0 || idle < (uint64_t)spin)
		return OFI_YIELD_SPIN;
	if (idle - (uint64_t)spin < OFI_YIELD_SLEEP_NS)
		return OFI_YIELD_YIELDED;
	return OFI_YIELD_SLEEP;
}

/* Gives the core away; the clock when it is back, ns. */
static uint64_t yield_cpu(void)
{
	uint64_t t0 = ofi_gettime_ns(), t1, took;

	sched_yield();
	t1 = ofi_gettime_ns();
	took = t1 - t0;
	if (took >= OFI_YIELD_HANDOFF_NS) {
		ofi_atomic_add64(&yield_handoffs, 1);
		ys.handed = true;
	} else if (took < OFI_YIELD_ALONE_NS) {
		ys.alone = true;
	}
	return t1;
}

/*
 * The first idle poll of a period never gives the core away, even when
 * the adaptive spin is down to nothing: a thread that just found work
 * often has more at hand that this poll did not look at (a CQ read in
 * batches, the other CQ of a pair, the completions its own progress just
 * wrote to a CQ it reads next), and a yield then hands the core to a
 * peer with nothing to do, which yields it straight back. An explicit
 * FI_PROGRESS_SPIN=0 still yields at once.
 */
enum ofi_yield_step ofi_yield_idle(void)
{
	bool first;
	uint64_t idle, last, ns;
	enum ofi_yield_step step;
	struct timespec ts;

	if (OFI_UNLIKELY(ys.here)) {
		step = yield_to_peer();
		if (step != OFI_YIELD_SLEEP)
			return step;
		idle = ys.idle;
		goto sleep;
	}
	first = !ys.since;
	last = ys.idle;
	idle = yield_idle_ns();
	step = yield_step(idle, ys.budget);
	if (first && yield_spin_ns > 0)
		return OFI_YIELD_SPIN;
	if (step == OFI_YIELD_YIELDED) {
		/* Past the budget each poll reads the clock. A gap since the
		 * read before means the core was away in between: the caller
		 * gave it away itself (Open MPI's idle loop yields after each
		 * empty progress call when oversubscribed) or was preempted.
		 * The peer had its turn; a yield of ours now would hand the
		 * core on to a task with nothing for us, and the completion
		 * the peer left would wait for it. */
		if (!first && idle - last >= OFI_YIELD_HANDOFF_NS)
			return OFI_YIELD_SPIN;
		ys.idle = yield_cpu() - ys.since;
	} else if (step == OFI_YIELD_SLEEP) {
	sleep:
		ns = OFI_MIN(idle / 16, OFI_YIELD_SLEEP_MAX_NS);
		ts.tv_sec = 0;
		ts.tv_nsec = (long)ns;
		nanosleep(&ts, NULL);
		ofi_atomic_add64(&yield_handoffs, 1);
	}
	return step;
}

/*
 * Whether more tasks are runnable now than the machine has CPUs
 * (/proc/loadavg's fourth field counts them, this thread included), looked
 * at most every YIELD_CROWDED_LOOK_NS. Then some task waits for a CPU, and
 * a thread that spins keeps it waiting: the scheduler (EEVDF) charges the
 * spin against the spinner's share, and once that share is used up a
 * request that wakes it is served only after the other task's slice,
 * about a millisecond. A thread that sleeps at once keeps its share and
 * is run at once by the wake-up. With no task waiting, a spin costs no
 * one anything. Where the count cannot be read, the CPUs are taken to be
 * crowded: sleeping at once is the behaviour that is safe everywhere.
 * A look is one pread(2) of a descriptor kept open: opening, reading and
 * closing the file at each look cost as much as a request the thread
 * serves, and delayed a tenth of them.
 */
#define YIELD_CROWDED_LOOK_NS (10 * 1000ULL)

static int yield_loadavg_fd = -1;

/* The running count of @fd's /proc/loadavg; false if it is not that. */
static bool yield_read_running(int fd, unsigned long *running)
{
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	return sscanf(buf, "%*s %*s %*s %lu/", running) == 1;
}

static bool yield_runnable_over(long cpus)
{
	/* acquire/release: a thread reads the file another opened */
	int fd = __atomic_load_n(&yield_loadavg_fd, __ATOMIC_ACQUIRE);
	int none = -1;
	unsigned long running;

	if (fd >= 0 && yield_read_running(fd, &running))
		goto out;
	/* An application that closes every descriptor took ours: that
	 * number is not ours to use, nor to close. */
	if (fd >= 0)
		__atomic_compare_exchange_n(&yield_loadavg_fd, &fd, -1, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	if (!yield_read_running(fd, &running)) {
		close(fd);
		return true;
	}
	if (!__atomic_compare_exchange_n(&yield_loadavg_fd, &none, fd, false,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		close(fd);
out:
	return cpus <= 0 || running > (unsigned long)cpus;
}

static bool yield_crowded(void)
{
	uint64_t now = ofi_gettime_ns();

	if (now - ys.look_ns >= YIELD_CROWDED_LOOK_NS) {
		yield_setup(); /* yield_ncpus */
		ys.crowded_now = yield_runnable_over(yield_ncpus);
		ys.look_ns = now;
	}
	return ys.crowded_now;
}

/*
 * A peer that shares our CPU cannot complete the wait while we spin. A
 * progress thread (@serve) does not yield where it would not spin: one
 * that is runnable but preempted waits out another task's time slice
 * before it sees the next request, where one asleep is run at once by the
 * wake-up that request sends.
 */
static enum ofi_yield_step yield_idle_wait(bool serve)
{
	uint64_t idle;
	enum ofi_yield_step step;

	/* the peer on our CPU runs now; our caller sleeps once it is long */
	if (OFI_UNLIKELY(ys.here))
		return yield_to_peer();
	idle = yield_idle_ns();
	step = yield_step(idle, ys.budget);

	if (step == OFI_YIELD_YIELDED &&
	    (idle >= 2 * (uint64_t)yield_spin_ns || (serve && !ys.budget)))
		return OFI_YIELD_SLEEP;
	if (step == OFI_YIELD_YIELDED)
		yield_cpu();
	return step;
}

enum ofi_yield_step ofi_yield_idle_wait(void)
{
	return yield_idle_wait(false);
}

/*
 * A thread that keeps finding requests (a get loop served back to back)
 * loses nothing to a crowded CPU that it would not lose working, and a
 * look at the run queue costs about as much as a request: it looks only
 * once its idle period has run YIELD_CROWDED_IDLE_NS, where the look
 * decides between a spin and a sleep.
 */
#define YIELD_CROWDED_IDLE_NS (2 * 1000ULL)

enum ofi_yield_step ofi_yield_idle_serve(void)
{
	if (ys.idle >= YIELD_CROWDED_IDLE_NS && yield_crowded())
		return OFI_YIELD_SLEEP;
	return yield_idle_wait(true);
}

uint64_t ofi_yield_handoffs(void)
{
	return (uint64_t)ofi_atomic_get64(&yield_handoffs);
}

bool ofi_yield_overdue(uint64_t since_ns, uint64_t now_ns)
{
	int64_t spin = ofi_yield_spin_ns();

	return spin >= 0 && now_ns - since_ns >= 2 * (uint64_t)spin;
}
