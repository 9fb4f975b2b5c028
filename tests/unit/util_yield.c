/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_yield.c - unit tests of the idle policy (ofi_yield.h): an idle
 * thread spins within FI_PROGRESS_SPIN, yields after it, sleeps (a bounded
 * nap) once idle long, starts over after ofi_yield_busy; waits on a peer
 * are overdue past the budget; FI_PROGRESS_SPIN=-1 never yields and
 * FI_PROGRESS_SPIN=0 yields at once, but not after its caller gave the
 * core away between polls; a thread whose peer shares its CPU
 * stops spinning, and spins again once the CPU is its own; one whose
 * caller knows its peer shares its CPU yields at once; the move off a
 * shared CPU never touches a mask the application chose, nor any with
 * FI_PROGRESS_MIGRATE=0; the run-queue look's descriptor, taken by an
 * application that closed it, is left alone. Each budget is read once
 * per process, so the settings other than the default run in children.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "ofi.h"
#include "ofi_yield.h"

/*
 * The library's affinity calls land here (this program links libofi
 * statically): passed to the kernel, or, while fake_on, answered from
 * fake_mask and counted, so that a test can show the library any mask
 * while the thread really stays beside its busy peer.
 */
static bool fake_on;
static cpu_set_t fake_mask;
static int fake_sets;
static int real_sets; /* passed to the kernel, the test's own too */

int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
	long n;

	if (fake_on) {
		memset(set, 0, size);
		memcpy(set, &fake_mask, OFI_MIN(size, sizeof(fake_mask)));
		return 0;
	}
	n = syscall(SYS_sched_getaffinity, pid, size, set);
	if (n < 0)
		return -1;
	memset((char *)set + n, 0, size - (size_t)n);
	return 0;
}

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	if (fake_on) {
		fake_sets++;
		memcpy(&fake_mask, set, OFI_MIN(size, sizeof(fake_mask)));
		return 0;
	}
	real_sets++;
	return syscall(SYS_sched_setaffinity, pid, size, set) ? -1 : 0;
}

/* The mask this program started with (main): all CPUs when unpinned. */
static cpu_set_t start_mask;

/* How long a step may lag the wall clock on a loaded machine. */
#define LAG_NS (200 * 1000000ULL)

/*
 * Idle polls until @ns passed since the first, then until one's step is
 * @want or a later one (for at most LAG_NS more), and that step. The
 * policy starts its clock a few polls into a period and, while spinning,
 * reads it every few polls only: a preemption on a loaded machine (make
 * check runs a 33-process fabtest beside this) leaves it behind the wall
 * clock for a while.
 */
static enum ofi_yield_step idle_for(uint64_t ns, enum ofi_yield_step want)
{
	uint64_t start = ofi_gettime_ns();
	enum ofi_yield_step step;

	do
		(void)ofi_yield_idle();
	while (ofi_gettime_ns() - start < ns);
	do
		step = ofi_yield_idle();
	while (step < want && ofi_gettime_ns() - start < ns + LAG_NS);
	return step;
}

static void test_steps(void **state)
{
	enum ofi_yield_step step;
	uint64_t spin, t0;

	(void)state;
	unsetenv("FI_PROGRESS_SPIN");
	assert_int_equal(ofi_yield_spin_ns(), OFI_YIELD_SPIN_US * 1000);
	spin = OFI_YIELD_SPIN_US * 1000;

	ofi_yield_busy();
	assert_int_equal(ofi_yield_idle(), OFI_YIELD_SPIN);
	/* Past the budget it yields (or, when a yield took the core away
	 * for milliseconds on a loaded machine, already sleeps). */
	assert_int_not_equal(idle_for(spin + 20000, OFI_YIELD_YIELDED),
			     OFI_YIELD_SPIN);
	assert_int_equal(idle_for(OFI_YIELD_SLEEP_NS + 50000, OFI_YIELD_SLEEP),
			 OFI_YIELD_SLEEP);

	/* The sleep is a nap bounded by the cap, not the whole wait. */
	t0 = ofi_gettime_ns();
	assert_int_equal(ofi_yield_idle(), OFI_YIELD_SLEEP);
	assert_true(ofi_gettime_ns() - t0 < 50 * OFI_YIELD_SLEEP_MAX_NS);

	ofi_yield_busy();
	assert_int_equal(ofi_yield_idle(), OFI_YIELD_SPIN);

	/* A blocking wait spins a budget, yields another, then sleeps:
	 * never before the two budgets passed, later on a loaded machine. */
	ofi_yield_busy();
	t0 = ofi_gettime_ns();
	assert_int_equal(ofi_yield_idle_wait(), OFI_YIELD_SPIN);
	do
		step = ofi_yield_idle_wait();
	while (step != OFI_YIELD_SLEEP &&
	       ofi_gettime_ns() - t0 < 2 * spin + LAG_NS);
	assert_int_equal(step, OFI_YIELD_SLEEP);
	assert_true(ofi_gettime_ns() - t0 >= 2 * spin);

	/* A peer on our core answers after two spins at the most. */
	assert_false(ofi_yield_overdue(1000, 1000 + 2 * spin - 1));
	assert_true(ofi_yield_overdue(1000, 1000 + 2 * spin));
}

/* Runs @fn in a child with FI_PROGRESS_SPIN=@val; its exit status. */
static int in_child(const char *val, int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		setenv("FI_PROGRESS_SPIN", val, 1);
		_exit(fn());
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static int never_yields(void)
{
	if (ofi_yield_spin_ns() >= 0)
		return 1;
	ofi_yield_busy();
	if (idle_for(OFI_YIELD_SLEEP_NS + 1000000, OFI_YIELD_YIELDED) !=
	    OFI_YIELD_SPIN)
		return 2;
	return ofi_yield_overdue(0, UINT64_MAX / 2) ? 3 : 0;
}

/* The same when an idle poll is the process's first call: it reads the
 * budget too (it is read once, outside the polls of a period). */
static int idle_reads_budget(void)
{
	if (idle_for(OFI_YIELD_SLEEP_NS + 1000000, OFI_YIELD_YIELDED) !=
	    OFI_YIELD_SPIN)
		return 1;
	return ofi_yield_spin_ns() >= 0 ? 2 : 0;
}

static int yields_at_once(void)
{
	if (ofi_yield_spin_ns())
		return 1;
	ofi_yield_busy();
	if (ofi_yield_idle() == OFI_YIELD_SPIN)
		return 2;
	return ofi_yield_idle() == OFI_YIELD_SPIN ? 3 : 0;
}

/*
 * A caller that gives the core away between its polls itself (Open MPI's
 * idle loop does when oversubscribed) is not given a second yield of
 * ours; polls that follow at once yield again.
 */
static int caller_yields(void)
{
	enum ofi_yield_step step = OFI_YIELD_SPIN;
	int i;

	if (ofi_yield_spin_ns())
		return 1;
	ofi_yield_busy();
	if (ofi_yield_idle() == OFI_YIELD_SPIN)
		return 2;
	for (i = 0; i < 4; i++) {
		usleep(100);
		if (ofi_yield_idle() == OFI_YIELD_YIELDED)
			return 3; /* a nap if kept away for long */
	}
	for (i = 0; i < 8 && (step = ofi_yield_idle()) == OFI_YIELD_SPIN; i++)
		;
	return step != OFI_YIELD_SPIN ? 0 : 4;
}

/* One idle period that a yield handing the CPU to another task ended. */
static void handed_period(void)
{
	uint64_t h;

	ofi_yield_busy();
	h = ofi_yield_handoffs();
	while (ofi_yield_handoffs() == h)
		(void)ofi_yield_idle();
}

/*
 * A busy task on our only CPU: after idle periods that each ended only
 * once a yield ran it, the second idle poll of a period yields (the task
 * could not run while we spun; the first keeps the core, as work is often
 * at hand right after work), and a blocking wait yields at its first;
 * with the task gone, the spin is back within a few periods (a yield
 * comes back at once, or a probe's spin ends idle).
 */
static int shares_cpu(void)
{
	enum ofi_yield_step first, step, wait;
	cpu_set_t set;
	pid_t pid;
	int i;

	alarm(60);
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return 0; /* no affinity here: nothing to show */
	pid = fork();
	if (!pid)
		for (;;)
			;
	if (pid < 0)
		return 1;
	for (i = 0; i < 12; i++)
		handed_period();
	/* The first idle poll after work keeps the core (more work is
	 * often at hand), the second gives it away. */
	ofi_yield_busy();
	first = ofi_yield_idle();
	step = ofi_yield_idle();
	/* A blocking wait gives it away at its first: spinning would only
	 * keep the task that completes the wait from running. */
	ofi_yield_busy();
	wait = ofi_yield_idle_wait();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (first != OFI_YIELD_SPIN)
		return 4;
	if (step != OFI_YIELD_YIELDED)
		return 2;
	if (wait != OFI_YIELD_YIELDED)
		return 5;
	for (i = 0; i < 64; i++) {
		ofi_yield_busy();
		(void)ofi_yield_idle();
		if (ofi_yield_idle() == OFI_YIELD_SPIN)
			return 0;
	}
	return 3;
}

/* Whether this program started on every CPU there is: unpinned. */
static bool all_cpus(void)
{
	return CPU_COUNT(&start_mask) >= 2 &&
	       CPU_COUNT(&start_mask) == sysconf(_SC_NPROCESSORS_ONLN);
}

/*
 * The same busy task on our CPU, but we may run on every CPU (unpinned,
 * put beside it by the scheduler): after a few periods ended by our
 * yields running it, we leave its CPU, and our affinity is the one we
 * started with again.
 */
static int leaves_shared_cpu(void)
{
	cpu_set_t one, now;
	uint64_t t0;
	int cpu, sets;
	pid_t pid;

	alarm(60);
	if (!all_cpus())
		return 0; /* one CPU, or pinned by whoever started us */
	cpu = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return 0;
	pid = fork();
	if (!pid)
		for (;;)
			;
	if (pid < 0)
		return 1;
	/* beside it, and free to go: as the scheduler leaves a pair */
	if (sched_setaffinity(0, sizeof(start_mask), &start_mask))
		return 2;
	/* moves are spaced out up to 1 s (the parent's may count); on a
	 * loaded host the scheduler may put us back at once, so the move
	 * is seen by the library's masks, not by where we run after it */
	t0 = ofi_gettime_ns();
	sets = real_sets;
	while (real_sets - sets < 2 && ofi_gettime_ns() - t0 < 3000000000ULL)
		handed_period();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (real_sets - sets < 2)
		return 3;
	if (sched_getaffinity(0, sizeof(now), &now) ||
	    !CPU_EQUAL(&now, &start_mask))
		return 4;
	return 0;
}

static void test_shared_cpu(void **state)
{
	(void)state;
	assert_int_equal(in_child("20", shares_cpu), 0);
	assert_int_equal(in_child("20", leaves_shared_cpu), 0);
}

/* Pins us and a busy task to our CPU, @cpu; the task's pid, or -1. */
static pid_t busy_beside(int *cpu)
{
	cpu_set_t one;
	pid_t pid;

	*cpu = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(*cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -1;
	pid = fork();
	if (!pid)
		for (;;)
			;
	return pid;
}

static void busy_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Periods ended by our yields running the busy task, with the library
 * shown @shown as our mask, until @ns passed or (@until_set) it set a
 * mask; how many masks it set. We stay beside the task whatever it sets.
 */
static int periods_shown(const cpu_set_t *shown, uint64_t ns, bool until_set)
{
	uint64_t t0 = ofi_gettime_ns();
	int sets;

	fake_mask = *shown;
	fake_sets = 0;
	fake_on = true;
	while (ofi_gettime_ns() - t0 < ns && !(until_set && fake_sets))
		handed_period();
	sets = fake_sets;
	fake_on = false;
	return sets;
}

/* A mask of two CPUs, ours and one more, that is not all of them: a
 * CPU we started with where there are three, else one beyond them. */
static void app_mask(int cpu, cpu_set_t *set)
{
	int other;

	for (other = 0; other < CPU_SETSIZE; other++)
		if (other != cpu && CPU_ISSET(other, &start_mask))
			break;
	if (CPU_COUNT(&start_mask) < 3 || other == CPU_SETSIZE)
		other = CPU_SETSIZE - 1;
	CPU_ZERO(set);
	CPU_SET(cpu, set);
	CPU_SET(other, set);
}

/* How long a run of periods goes: the first move comes after 12 of
 * them at the most, the next ones at least 2 ms apart. */
#define MOVE_WAIT_NS (300 * 1000000ULL)

/* FI_PROGRESS_MIGRATE=0: an unpinned thread beside its peer stays. */
static int opted_out(void)
{
	int cpu, sets;
	pid_t pid;

	alarm(60);
	setenv("FI_PROGRESS_MIGRATE", "0", 1);
	if (CPU_COUNT(&start_mask) < 2)
		return 0;
	pid = busy_beside(&cpu);
	if (pid < 0)
		return 0;
	sets = periods_shown(&start_mask, MOVE_WAIT_NS, false);
	busy_end(pid);
	return sets ? 1 : 0;
}

/* A thread the application pinned to some CPUs, not all: never moved,
 * though it may run on another one. */
static int pinned_stays(void)
{
	cpu_set_t app;
	int cpu, sets;
	pid_t pid;

	alarm(60);
	if (CPU_COUNT(&start_mask) < 2)
		return 0;
	pid = busy_beside(&cpu);
	if (pid < 0)
		return 0;
	app_mask(cpu, &app);
	sets = periods_shown(&app, MOVE_WAIT_NS, false);
	busy_end(pid);
	if (sets)
		return 1;
	return CPU_EQUAL(&fake_mask, &app) ? 0 : 2;
}

/* An unpinned thread moves and gets its mask back; once the application
 * pins it (after our first look), it stays. */
static int repinned_stays(void)
{
	cpu_set_t app;
	int cpu, sets;
	pid_t pid;

	alarm(60);
	if (!all_cpus())
		return 0;
	pid = busy_beside(&cpu);
	if (pid < 0)
		return 0;
	sets = periods_shown(&start_mask, 5 * MOVE_WAIT_NS, true);
	if (sets != 2 || !CPU_EQUAL(&fake_mask, &start_mask)) {
		busy_end(pid);
		return sets != 2 ? 1 : 2; /* away and straight back */
	}
	app_mask(cpu, &app);
	sets = periods_shown(&app, MOVE_WAIT_NS, false);
	busy_end(pid);
	if (sets)
		return 3;
	return CPU_EQUAL(&fake_mask, &app) ? 0 : 4;
}

/* Before any other test: FI_PROGRESS_MIGRATE is read once per process,
 * and a child inherits what its parent read. */
static void test_migrate(void **state)
{
	(void)state;
	assert_int_equal(in_child("20", opted_out), 0);
	assert_int_equal(in_child("20", pinned_stays), 0);
	assert_int_equal(in_child("20", repinned_stays), 0);
}

/*
 * A wait its caller knows to be on a task of its own CPU yields from its
 * first idle poll, blocking waits too, until the period ends; with
 * FI_PROGRESS_SPIN=-1 it never yields.
 */
static int peer_here(void)
{
	enum ofi_yield_step step;

	int i;

	ofi_yield_busy();
	ofi_yield_peer_here();
	if (ofi_yield_spin_ns() < 0) {
		(void)ofi_yield_idle();
		return ofi_yield_idle() == OFI_YIELD_SPIN ? 0 : 5;
	}
	/* The first poll keeps the core; the next, at once, yields (a
	 * preemption in between may make it keep the core once more;
	 * a yield kept away for long may end in a nap). */
	if (ofi_yield_idle() != OFI_YIELD_SPIN)
		return 1;
	for (i = 0; i < 8 && (step = ofi_yield_idle()) == OFI_YIELD_SPIN; i++)
		;
	if (step == OFI_YIELD_SPIN)
		return 2;
	/* the next period is on its own again: it spins */
	ofi_yield_busy();
	(void)ofi_yield_idle();
	if (ofi_yield_idle() != OFI_YIELD_SPIN)
		return 3;
	/* a caller that gave the CPU away between polls: no yield */
	ofi_yield_busy();
	ofi_yield_peer_here();
	(void)ofi_yield_idle();
	usleep(100);
	if (ofi_yield_idle() == OFI_YIELD_YIELDED) /* a nap if kept long */
		return 6;
	ofi_yield_busy();
	ofi_yield_peer_here();
	(void)ofi_yield_idle_wait();
	for (i = 0; i < 8 && (step = ofi_yield_idle_wait()) == OFI_YIELD_SPIN;
	     i++)
		;
	ofi_yield_busy();
	return step != OFI_YIELD_SPIN ? 0 : 4;
}

static void test_peer_here(void **state)
{
	(void)state;
	assert_int_equal(in_child("20", peer_here), 0);
	assert_int_equal(in_child("-1", peer_here), 0);
}

static void test_param(void **state)
{
	(void)state;
	assert_int_equal(in_child("-1", never_yields), 0);
	assert_int_equal(in_child("-1", idle_reads_budget), 0);
	assert_int_equal(in_child("0", yields_at_once), 0);
	assert_int_equal(in_child("0", caller_yields), 0);
	/* Nonsense falls back to the default. */
	assert_int_equal(in_child("-7", yields_at_once), 1);
}

/* The descriptor this process has open on @path, or -1. */
static int fd_of(const char *path, int skip)
{
	char link[64], target[256];
	ssize_t n;
	int fd;

	for (fd = 0; fd < 1024; fd++) {
		if (fd == skip)
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (!strcmp(target, path))
			return fd;
	}
	return -1;
}

/* Idle serving passes for @us: past the idle a run-queue look waits for. */
static void serve_idle(unsigned us)
{
	uint64_t end = ofi_gettime_ns() + us * 1000ULL;

	while (ofi_gettime_ns() < end)
		(void)ofi_yield_idle_serve();
	ofi_yield_busy();
}

/*
 * A serving thread that finds a request at every few passes (a get loop
 * served back to back) never looks at the run queue, which would cost as
 * much as a request; one that stays idle looks. Runs before any other
 * test opens /proc/loadavg.
 */
static void *serve_busy(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 10000; i++) {
		(void)ofi_yield_idle_serve();
		(void)ofi_yield_idle_serve();
		ofi_yield_busy();
	}
	return NULL;
}

static void test_serve_busy(void **state)
{
	pthread_t t;

	(void)state;
	assert_true(fd_of("/proc/loadavg", -1) < 0);
	/* a thread of its own: the earlier tests taught ours to share */
	assert_int_equal(pthread_create(&t, NULL, serve_busy, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(fd_of("/proc/loadavg", -1) < 0);
	serve_idle(100);
	assert_true(fd_of("/proc/loadavg", -1) >= 0);
}

/*
 * The run-queue look keeps /proc/loadavg open. An application that closes
 * every descriptor and reuses that number keeps its file: the library
 * neither reads it at the application's offset nor closes it, and opens
 * its own again.
 */
static void test_loadavg_fd(void **state)
{
	char tmpl[] = "/tmp/util_yield_XXXXXX";
	int fd, app, mine;

	(void)state;
	serve_idle(100);
	fd = fd_of("/proc/loadavg", -1);
	assert_true(fd >= 0);
	assert_int_equal(close(fd), 0);
	app = mkstemp(tmpl);
	assert_true(app >= 0);
	unlink(tmpl);
	assert_int_equal(write(app, "not a load average", 18), 18);
	assert_int_equal(lseek(app, 4, SEEK_SET), 4);
	if (app != fd) {
		assert_int_equal(dup2(app, fd), fd);
		close(app);
	}
	serve_idle(100);
	assert_int_not_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 4);
	mine = fd_of("/proc/loadavg", fd);
	assert_true(mine >= 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: a child inherits a budget its parent read. */
		cmocka_unit_test(test_migrate),
		cmocka_unit_test(test_param),
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_shared_cpu),
		cmocka_unit_test(test_peer_here),
		cmocka_unit_test(test_serve_busy),
		cmocka_unit_test(test_loadavg_fd),
	};

	if (sched_getaffinity(0, sizeof(start_mask), &start_mask))
		CPU_ZERO(&start_mask);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
