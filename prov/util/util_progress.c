/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_progress.c - progress threads for FI_PROGRESS_AUTO (ofi_progress.h):
 * start, the poll loop over the provider's fd and an eventfd, wake,
 * period changes and stop; and whether a manual-progress endpoint gets a
 * thread all the same (FI_PROGRESS_TARGET).
 *
 * The eventfd carries every request from other threads (stop, wake, a new
 * period), so the thread never needs a lock of its own: the stop flag and
 * the period are atomics read after each poll. While the application
 * drives progress itself the thread polls the eventfd alone (stand-down).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ofi_progress.h"
#include "ofi_yield.h"

/* prov/util links into loadable providers too: no core symbols here. */
#define PROG_WARN(p, ...)                                                      \
	do {                                                                   \
		if ((p)->prov)                                                 \
			FI_WARN((p)->prov, FI_LOG_CORE, __VA_ARGS__);          \
	} while (0)

struct ofi_progress {
	pthread_t thread;
	const struct fi_provider *prov;
	int fd;
	int efd;
	ofi_atomic32_t period_ms;
	ofi_atomic32_t stop;
	bool self_stop; /* stopped from its own callback: frees itself */
	ofi_progress_fn fn;
	void *arg;
	ofi_atomic64_t *driven;
	/* Set while the thread stands down (its poll watches the eventfd
	 * alone): ofi_progress_rouse kicks it then. */
	int down;
	ofi_progress_fn arm;
	char name[16];
};

/* The progress thread's own object, on that thread (ofi_progress_self). */
static __thread struct ofi_progress *progress_current;

static void progress_free(struct ofi_progress *p)
{
	close(p->efd);
	free(p);
}

static void progress_kick(struct ofi_progress *p)
{
	uint64_t one = 1;

	/* Only fails when the counter is near overflow: awake anyway. */
	(void)!write(p->efd, &one, sizeof(one));
}

/*
 * ms the thread stands down for now (see ofi_progress.h), 0: it works.
 * Rounded up: a poll(2) that returns early would only stand down again.
 * p->down is raised before the stamp is read, and a reader about to sleep
 * clears the stamp before it looks at p->down (ofi_progress_rouse), both
 * seq_cst: either the thread sees the cleared stamp and works, or the
 * reader sees it standing down and kicks it.
 */
static int progress_standdown_ms(struct ofi_progress *p)
{
	uint64_t now, last;

	if (!p->driven)
		return 0;
	__atomic_store_n(&p->down, 1, __ATOMIC_SEQ_CST);
	last = (uint64_t)__atomic_load_n(&p->driven->val, __ATOMIC_SEQ_CST);
	now = ofi_gettime_ns();
	if (!last || now - last >= OFI_PROGRESS_STANDDOWN_NS) {
		__atomic_store_n(&p->down, 0, __ATOMIC_RELAXED);
		return 0;
	}
	return (int)((OFI_PROGRESS_STANDDOWN_NS - (now - last) + 999999) /
		     1000000);
}

/*
 * Arms the fd and gives the timeout of the next poll that watches it.
 *
 * A positive period after the provider's arm means work in flight that
 * the fd does not announce (a peer filling or emptying stream segments):
 * the thread arms at every pass and spins and yields the idle budget
 * before it naps, as a blocking read does (ofi_yield_idle_wait), since its
 * own next pass finds that work. Napping at once made every step of such
 * a transfer wait a period for the pass that serves it.
 *
 * A negative one means the fd announces everything, but the thread's own
 * passes find a new request sooner than the fd's wake-up delivers it.
 * Sleeping at once cost every request served this way two wake-ups, the
 * thread's and its peer's (an RMA target that makes no call). So the
 * thread spins the same budget unarmed (an armed shm ring makes every
 * producer poke the wake socket), then arms and sleeps; while more tasks
 * are runnable than the host has CPUs it sleeps at once
 * (ofi_yield_idle_serve). A stream that starts meanwhile is seen at that
 * arm, and the positive rule takes over from there.
 *
 * The budget restarts whenever the callback moves data (ofi_yield_busy);
 * a thread without an arm keeps its period.
 */
static int progress_arm(struct ofi_progress *p)
{
	int period = ofi_atomic_get32(&p->period_ms);

	if (!p->arm)
		return period;
	if (period < 0 && ofi_yield_idle_serve() != OFI_YIELD_SLEEP)
		return 0;
	p->arm(p->arg);
	period = ofi_atomic_get32(&p->period_ms);
	if (period <= 0)
		return period;
	return ofi_yield_idle_wait() == OFI_YIELD_SLEEP ? period : 0;
}

static void *progress_thread(void *arg)
{
	struct ofi_progress *p = arg;
	struct pollfd fds[2] = {
		{.fd = p->efd, .events = POLLIN},
		{.fd = p->fd, .events = POLLIN},
	};
	uint64_t val;
	int n, down, timeout;

	progress_current = p;
	if (p->name[0])
		(void)pthread_setname_np(pthread_self(), p->name);
	while (!ofi_atomic_get32(&p->stop)) {
		down = progress_standdown_ms(p);
		fds[1].revents = 0;
		timeout = down ? down : progress_arm(p);
		/*
		 * A pass that spins makes no poll(2): the callback looks for
		 * its work itself, stop and the period are atomics read at
		 * every pass, and a kick left in the eventfd is read by the
		 * next poll that sleeps. A poll(2) per pass made an RMA
		 * target served by this thread answer a syscall late.
		 */
		if (!timeout)
			n = 0;
		else
			n = poll(fds, down ? 1 : 2, timeout);
		__atomic_store_n(&p->down, 0, __ATOMIC_RELAXED);
		/* Stood down and not woken: the application still works. */
		if (down && n == 0)
			continue;
		if (ofi_atomic_get32(&p->stop))
			break;
		if (n < 0 && errno != EINTR) {
			/* Cannot sleep on the fds: do not spin either. */
			PROG_WARN(p, "progress thread: poll: %s\n",
				  strerror(errno));
			usleep(10000);
		}
		if (n > 0 && (fds[0].revents & POLLIN))
			(void)!read(p->efd, &val, sizeof(val));
		if (n > 0 && (fds[1].revents & POLLNVAL)) {
			PROG_WARN(p,
				  "progress thread: fd %d is not open; "
				  "only the period wakes the thread now\n",
				  fds[1].fd);
			fds[1].fd = -1;
		}
		p->fn(p->arg);
	}
	if (p->self_stop)
		progress_free(p);
	return NULL;
}

int ofi_progress_start(const struct ofi_progress_attr *attr,
		       struct ofi_progress **prog)
{
	struct ofi_progress *p;
	sigset_t all, old;
	int ret;

	if (!attr || !attr->fn || !prog)
		return -FI_EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd < 0) {
		ret = errno == EMFILE || errno == ENFILE ? -FI_EMFILE
							 : -FI_ENOMEM;
		free(p);
		return ret;
	}
	p->prov = attr->prov;
	p->fd = attr->fd;
	p->fn = attr->fn;
	p->arg = attr->arg;
	p->driven = attr->driven;
	p->arm = attr->arm;
	ofi_atomic_init32(&p->period_ms, attr->period_ms);
	ofi_atomic_init32(&p->stop, 0);
	if (attr->name)
		strncpy(p->name, attr->name, sizeof(p->name) - 1);

	/* Set before the thread runs: its first callback may stop it, and
	 * from then on @p is the thread's to free. */
	*prog = p;
	/* Signals belong to the application's threads, not to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&p->thread, NULL, progress_thread, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		PROG_WARN(p, "progress thread: %s\n", strerror(ret));
		*prog = NULL;
		progress_free(p);
		return ret == EAGAIN ? -FI_EAGAIN : -FI_ENOMEM;
	}
	return 0;
}

bool ofi_progress_self(const struct ofi_progress *prog)
{
	return prog && progress_current == prog;
}

void ofi_progress_stop(struct ofi_progress *prog)
{
	if (!prog)
		return;
	ofi_atomic_init32(&prog->stop, 1);
	if (ofi_progress_self(prog)) {
		/* Inside our own callback: joining would wait for ever. */
		prog->self_stop = true;
		pthread_detach(prog->thread);
		return;
	}
	progress_kick(prog);
	pthread_join(prog->thread, NULL);
	progress_free(prog);
}

void ofi_progress_wake(struct ofi_progress *prog)
{
	if (prog)
		progress_kick(prog);
}

void ofi_progress_rouse(struct ofi_progress *prog)
{
	if (!prog || !prog->driven ||
	    !__atomic_load_n(&prog->driven->val, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&prog->driven->val, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&prog->down, __ATOMIC_SEQ_CST))
		progress_kick(prog);
}

void ofi_progress_set_period(struct ofi_progress *prog, int period_ms)
{
	if (!prog || ofi_atomic_get32(&prog->period_ms) == period_ms)
		return;
	ofi_atomic_init32(&prog->period_ms, period_ms);
	/* From its own callback: the next poll reads it anyway. */
	if (!ofi_progress_self(prog))
		progress_kick(prog);
}

static pthread_once_t progress_target_once = PTHREAD_ONCE_INIT;
static bool progress_target_on = true; /* FI_PROGRESS_TARGET */

/* A core parameter (src/param.c), read through fi_param_get as a
 * loadable provider must. */
static void progress_target_init(void)
{
	int on;

	if (!fi_param_get_bool(NULL, "progress_target", &on))
		progress_target_on = on != 0;
}

bool ofi_progress_target(uint64_t caps)
{
	const uint64_t dirs =
		FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

	if (!(caps & (FI_RMA | FI_ATOMIC)))
		return false;
	if ((caps & dirs) && !(caps & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return false;
	pthread_once(&progress_target_once, progress_target_init);
	return progress_target_on;
}
