/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_progress.c - unit tests of the progress thread (ofi_progress.h),
 * provider-free: the callback runs when the watched fd is readable and
 * not again once it is drained, at the period, on a wake and after a
 * period change; stop waits for a callback in flight; a callback may
 * stop its own thread; a watched fd closed by mistake does not make the
 * thread spin; no thread outlives its stop; while the application drives
 * progress itself the thread stands down (neither a readable fd nor the
 * period runs it, a wake does) and takes over soon after it stops; with
 * work in flight its provider's arm announces (a positive period) a pass
 * that moved data runs the next at once, without the period, and an idle
 * one naps the period after the spin budget, not spinning on.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "ofi_progress.h"
#include "ofi_yield.h"

struct ctx {
	int fd; /* drained by the callback when >= 0 */
	atomic_int calls;
	int sleep_ms;	 /* the callback takes this long */
	atomic_int done; /* a slow callback finished */
	int stop_at;	 /* stop our own thread at this call */
	struct ofi_progress *self;
	atomic_int stopped;
};

static void cb(void *arg)
{
	struct ctx *c = arg;
	char buf[64];
	int n = atomic_fetch_add(&c->calls, 1) + 1;

	if (c->fd >= 0)
		while (read(c->fd, buf, sizeof(buf)) > 0)
			;
	if (c->sleep_ms) {
		usleep((useconds_t)c->sleep_ms * 1000);
		atomic_store(&c->done, 1);
	}
	if (c->stop_at && n == c->stop_at) {
		ofi_progress_stop(c->self);
		atomic_store(&c->stopped, 1);
	}
}

static int tasks(void)
{
	struct dirent *d;
	DIR *p = opendir("/proc/self/task");
	int n = 0;

	assert_non_null(p);
	while ((d = readdir(p)))
		n += d->d_name[0] != '.';
	closedir(p);
	return n;
}

/* Waits up to @ms for the thread count to be @want. */
static bool tasks_become(int want, int ms)
{
	while (tasks() != want && ms-- > 0)
		usleep(1000);
	return tasks() == want;
}

static bool calls_reach(struct ctx *c, int want, int ms)
{
	while (atomic_load(&c->calls) < want && ms-- > 0)
		usleep(1000);
	return atomic_load(&c->calls) >= want;
}

static struct ofi_progress *start(struct ctx *c, int fd, int period)
{
	struct ofi_progress_attr attr = {
		.name = "test-progress",
		.fd = fd,
		.period_ms = period,
		.fn = cb,
		.arg = c,
	};

	/* Into c->self, stored before the thread runs: its callback may
	 * use it at once. */
	assert_int_equal(ofi_progress_start(&attr, &c->self), 0);
	assert_non_null(c->self);
	return c->self;
}

static void test_args(void **state)
{
	struct ofi_progress_attr attr = {.fd = -1, .period_ms = -1};
	struct ofi_progress *p = NULL;

	(void)state;
	assert_int_equal(ofi_progress_start(NULL, &p), -FI_EINVAL);
	assert_int_equal(ofi_progress_start(&attr, &p), -FI_EINVAL); /* no fn */
	attr.fn = cb;
	assert_int_equal(ofi_progress_start(&attr, NULL), -FI_EINVAL);
	ofi_progress_stop(NULL);
	ofi_progress_wake(NULL);
	ofi_progress_set_period(NULL, 5);
	assert_false(ofi_progress_self(NULL));
}

static void test_fd(void **state)
{
	struct ctx c = {0};
	struct ofi_progress *p;
	int fds[2], base = tasks(), running, n;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	c.fd = fds[0];
	assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	p = start(&c, fds[0], -1);
	/* (a sanitizer's own thread may come with the first one) */
	running = tasks();
	assert_true(running > base);
	assert_false(ofi_progress_self(p));
	usleep(50 * 1000);
	assert_int_equal(atomic_load(&c.calls), 0); /* quiet fd, no period */
	assert_int_equal(write(fds[1], "x", 1), 1);
	assert_true(calls_reach(&c, 1, 2000));
	/* Drained: the thread sleeps again. */
	n = atomic_load(&c.calls);
	usleep(100 * 1000);
	assert_int_equal(atomic_load(&c.calls), n);
	assert_int_equal(write(fds[1], "yy", 2), 2);
	assert_true(calls_reach(&c, n + 1, 2000));
	ofi_progress_stop(p);
	assert_int_equal(tasks(), running - 1);
	close(fds[0]);
	close(fds[1]);
}

/* The call count once @quiet_ms passed without a call, or -1 if none
 * did within @max_ms. */
static int quiet_calls(struct ctx *c, int quiet_ms, int max_ms)
{
	int n, waited;

	for (waited = 0; waited < max_ms; waited += quiet_ms) {
		n = atomic_load(&c->calls);
		usleep((useconds_t)quiet_ms * 1000);
		if (atomic_load(&c->calls) == n)
			return n;
	}
	return -1;
}

static void test_period_wake(void **state)
{
	struct ctx c = {.fd = -1};
	struct ofi_progress *p;
	int n;

	(void)state;
	p = start(&c, -1, 10);
	usleep(200 * 1000);
	n = atomic_load(&c.calls);
	assert_true(n >= 5 && n <= 40);
	ofi_progress_set_period(p, -1);
	/* A call already due may still come (the thread may be preempted
	 * past its old timeout on a loaded machine): wait, for up to 2 s,
	 * for 50 ms without one; a period still running never gives it. */
	n = quiet_calls(&c, 50, 2000);
	assert_true(n >= 0);
	usleep(100 * 1000);
	assert_int_equal(atomic_load(&c.calls), n);
	ofi_progress_wake(p);
	assert_true(calls_reach(&c, n + 1, 2000));
	ofi_progress_set_period(p, 5);
	assert_true(calls_reach(&c, n + 6, 2000));
	ofi_progress_stop(p);
}

static void test_stop_waits(void **state)
{
	struct ctx c = {.fd = -1, .sleep_ms = 100};
	struct ofi_progress *p;

	(void)state;
	p = start(&c, -1, -1);
	ofi_progress_wake(p);
	assert_true(calls_reach(&c, 1, 2000));
	ofi_progress_stop(p); /* the callback in flight ends first */
	assert_int_equal(atomic_load(&c.done), 1);
}

static void test_self_stop(void **state)
{
	struct ctx c = {.fd = -1, .stop_at = 3};
	int base = tasks();

	(void)state;
	(void)start(&c, -1, 1);
	assert_true(calls_reach(&c, 3, 2000));
	while (!atomic_load(&c.stopped))
		usleep(1000);
	/* It ends and frees itself; never called again. */
	assert_true(tasks_become(base, 2000));
	assert_int_equal(atomic_load(&c.calls), 3);
}

static void test_closed_fd(void **state)
{
	struct ctx c = {.fd = -1};
	struct ofi_progress *p;
	int fds[2], n;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	p = start(&c, fds[0], -1);
	close(fds[0]); /* misuse: closed while watched */
	close(fds[1]);
	ofi_progress_wake(p); /* poll sees POLLNVAL now */
	usleep(100 * 1000);
	n = atomic_load(&c.calls);
	assert_true(n >= 1 && n <= 3);
	usleep(100 * 1000);
	assert_int_equal(atomic_load(&c.calls), n);
	ofi_progress_stop(p);
}

/*
 * Stamps @driven for @ms as a busy-polling application would; the longest
 * gap between two stamps (ns): a loaded machine may preempt us for longer
 * than the stand-down, and the thread rightly takes over meanwhile.
 */
static uint64_t drive_for(ofi_atomic64_t *driven, int ms)
{
	uint64_t now = ofi_gettime_ns(), end = now + (uint64_t)ms * 1000000;
	uint64_t last = now, gap = 0;

	while (now < end) {
		ofi_progress_mark(driven);
		usleep(100);
		now = ofi_gettime_ns();
		gap = OFI_MAX(gap, now - last);
		last = now;
	}
	return gap;
}

/*
 * Whether 20 ms of stamps without a gap of half the stand-down, after 2 ms
 * of stamps for the thread to see, let at most a few calls through (the
 * call in flight, or one where the thread was preempted between reading
 * the stamp and the clock); without the stand-down the undrained fd runs
 * the callback without pause, thousands of times. Tried until such 20 ms
 * come.
 */
static bool quiet_while_driven(struct ctx *c, ofi_atomic64_t *driven)
{
	int n, tries;

	for (tries = 0; tries < 100; tries++) {
		/*
		 * Stamps first: until the thread has seen one, a readable fd
		 * runs it without pause, and those calls are not the test's.
		 */
		(void)drive_for(driven, 2);
		n = atomic_load(&c->calls);
		if (drive_for(driven, 20) < OFI_PROGRESS_STANDDOWN_NS / 2)
			return atomic_load(&c->calls) <= n + 4;
	}
	return true; /* never quiet enough to tell: no verdict */
}

static void test_standdown(void **state)
{
	struct ctx c = {0};
	struct ofi_progress_attr attr = {
		.fd = -1,
		.period_ms = 1,
		.fn = cb,
		.arg = &c,
	};
	ofi_atomic64_t driven;
	int fds[2], n;

	(void)state;
	ofi_atomic_init64(&driven, 0);
	assert_int_equal(pipe(fds), 0);
	c.fd = -1; /* the fd stays readable: only a stand-down quiets it */
	attr.fd = fds[0];
	attr.driven = &driven;
	ofi_progress_mark(&driven);
	assert_int_equal(ofi_progress_start(&attr, &c.self), 0);
	assert_int_equal(write(fds[1], "x", 1), 1);
	assert_true(quiet_while_driven(&c, &driven));
	/* A wake is the application asking: it runs. */
	n = atomic_load(&c.calls);
	ofi_progress_wake(c.self);
	assert_true(calls_reach(&c, n + 1, 2000));
	assert_true(quiet_while_driven(&c, &driven));
	/* The application stopped: the readable fd runs the thread again. */
	n = atomic_load(&c.calls);
	assert_true(calls_reach(&c, n + 10, 2000));
	ofi_progress_stop(c.self);
	close(fds[0]);
	close(fds[1]);
}

/*
 * A stream in flight: every pass of the first @busy_calls moves data
 * (ofi_yield_busy), as a pass that fills or empties a segment does; the
 * arm keeps the period long (the fd announces none of that work).
 */
struct inflight {
	atomic_int calls;
	int busy_calls;
};

static void inflight_cb(void *arg)
{
	struct inflight *f = arg;

	if (atomic_fetch_add(&f->calls, 1) < f->busy_calls)
		ofi_yield_busy();
}

static void inflight_arm(void *arg)
{
	(void)arg;
}

static void test_inflight(void **state)
{
	struct inflight f = {.busy_calls = 2000};
	struct ofi_progress_attr attr = {
		.fd = -1,
		.period_ms = 60000,
		.fn = inflight_cb,
		.arg = &f,
		.arm = inflight_arm,
	};
	struct ofi_progress *p;
	int i, n;

	(void)state;
	assert_int_equal(ofi_progress_start(&attr, &p), 0);
	/* A pass that napped its period would stall this for a minute. */
	for (i = 0; i < 20000 && atomic_load(&f.calls) <= f.busy_calls; i++)
		usleep(1000);
	assert_true(atomic_load(&f.calls) > f.busy_calls);
	/* Idle now: after the spin budget it naps, and does not spin on. */
	for (i = 0; i < 40; i++) {
		n = atomic_load(&f.calls);
		usleep(50 * 1000);
		if (atomic_load(&f.calls) == n)
			break;
	}
	assert_true(i < 40);
	usleep(100 * 1000);
	assert_int_equal(atomic_load(&f.calls), n);
	ofi_progress_stop(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_fd),
		cmocka_unit_test(test_period_wake),
		cmocka_unit_test(test_stop_waits),
		cmocka_unit_test(test_self_stop),
		cmocka_unit_test(test_closed_fd),
		cmocka_unit_test(test_standdown),
		cmocka_unit_test(test_inflight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
