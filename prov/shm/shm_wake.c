/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_wake.c - waking an endpoint whose reader sleeps: each endpoint owns
 * a datagram socket in the abstract AF_UNIX namespace, named from its
 * region (util's wait_fd: blocking reads poll it, fi_trywait arms it in
 * the CQ's epoll set), and a word in its region header, hdr.sleeping.
 *
 * A reader about to sleep marks the tails of its two rings
 * (SHM_RING_SLEEPING, by fetch-or) and looks at what the tails held
 * (shm_wait_arm); a producer's claim of a slot is a compare-and-swap on
 * the same tail, which clears the mark, and the producer that cleared it
 * sends a byte to the socket after publishing. The tail's order decides:
 * either the claim came first and the sleeper sees the tail past its
 * head (work: no sleep), or the mark came first and the claim sees it.
 * So the busy path pays nothing: no fence, no load it did not make
 * anyway (a fence and a load of the header word after each command cost
 * 8 B RMA reads 15%). Stores no command announces (the collective
 * engine's) still go by hdr.sleeping: the sleeper sets it and fences, the
 * storer fences and reads it (shm_wake_peer). An endpoint with transfers
 * in flight, whose peers' progress shows in places no command announces
 * (streamed segments, credits, a peer's death), is not armed: its reader
 * naps as before.
 *
 * The marks and the word are hints any peer can write: a bad value costs
 * a spurious poke or a sleep until the next slice (OFI_EP_POLL_LONG_MS).
 * The thread that armed disarms at its next progress pass; a pass of
 * another thread (one polling while this one sleeps) may not leave the
 * sleeper deaf: see shm_wake_progress.
 *
 * A socket that cannot be bound (the name taken) leaves the endpoint
 * napping; a peer that finds no socket to poke (another
 * network namespace) sets hdr.wake_fail, and the owner naps from then on.
 *
 * FI_PROGRESS_AUTO (asked in the hints) is a progress thread per
 * endpoint (util_progress.c) that sleeps on the same socket, armed as a
 * blocking read arms it, and polls while the endpoint is not idle.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ofi_coll.h"
#include "shm.h"

#define SHM_WAKE_PREFIX "ofi_shm_wake:"
/*
 * How long another thread's progress leaves a sleeper's marks alone
 * (shm_wake_progress): a sleeper and a poller would otherwise trade them
 * at every poll, a wake-up each time.
 */
#define SHM_WAKE_HOLD_NS (10 * 1000000ULL)

static socklen_t shm_wake_addr(const char *name, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract: sun_path[0] is NUL, the name is not terminated. */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     SHM_WAKE_PREFIX "%s", name);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path) - 1)
		n = sizeof(sa->sun_path) - 1;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

void shm_wake_open(struct shm_ep *ep)
{
	struct sockaddr_un sa;
	socklen_t len;

	ep->wake_fd =
		socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ep->wake_fd < 0)
		return;
	len = shm_wake_addr(ep->name, &sa);
	ep->wake_ok = !bind(ep->wake_fd, (struct sockaddr *)&sa, len);
	if (!ep->wake_ok)
		FI_INFO(&shm_prov, FI_LOG_EP_CTRL,
			"no wake socket for %s (%s): blocking reads nap\n",
			ep->name, strerror(errno));
}

void shm_wake_close(struct shm_ep *ep)
{
	if (ep->wake_fd >= 0)
		close(ep->wake_fd);
	ep->wake_fd = -1;
	ep->wake_ok = false;
}

void shm_wake_send(struct shm_ep *ep, struct shm_region *rg)
{
	struct sockaddr_un sa;
	socklen_t len;
	char b = 0;

	if (ep->wake_fd < 0)
		goto fail;
	len = shm_wake_addr(rg->name, &sa);
	if (sendto(ep->wake_fd, &b, 1, MSG_DONTWAIT, (struct sockaddr *)&sa,
		   len) == 1 ||
	    errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
		return; /* a full queue is a readable socket */
fail:
	/* Nobody to poke: the owner must nap (it re-reads this word). */
	atomic_store_explicit(&shm_hdr(rg)->wake_fail, 1, memory_order_relaxed);
}

/* The endpoint has a socket its peers can reach. */
static bool shm_wake_usable(struct shm_ep *ep)
{
	return ep->wake_ok && ep->rg &&
	       !atomic_load_explicit(&shm_hdr(ep->rg)->wake_fail,
				     memory_order_relaxed);
}

static int shm_wait_fd(struct util_ep *util)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);

	return shm_wake_usable(ep) ? ep->wake_fd : -1;
}

/*
 * Nothing in flight waits on a peer but through our rings: no stream,
 * no ack but a response's, no streamed read, no queued send, no closed
 * sender to release, no sender in the middle of a command.
 */
static bool shm_wake_quiet(struct shm_ep *ep)
{
	return !ep->tx_full && !ep->sar_bound && !ep->inject_starved &&
	       dlist_empty(&ep->cma_list) && shm_rma_acks_only(ep) &&
	       dlist_empty(&ep->sar_queue) && dlist_empty(&ep->sar_rx_list) &&
	       dlist_empty(&ep->rma_src) && dlist_empty(&ep->ack_backlog) &&
	       atomic_load_explicit(&shm_hdr(ep->rg)->closed,
				    memory_order_relaxed) == ep->closed_done &&
	       !shm_ring_stuck(shm_cmd_ring(ep->rg));
}

/* Before a sleep: a full ring found since the last one is forgotten. */
static bool shm_wake_idle(struct shm_ep *ep)
{
	bool quiet = shm_wake_quiet(ep);

	ep->tx_full = false;
	return quiet;
}

/*
 * Marks @r's tail: what a sleeper on it may expect. A tail at our head:
 * nothing claimed, the next claim sees the mark. Past it: a command is
 * there (busy), or a producer claimed a slot and has not published it
 * yet (poll: it may have died there, see shm_ring_unwedge).
 */
static int shm_wake_mark(struct shm_ring *r)
{
	uint64_t tail = atomic_fetch_or_explicit(
		&r->ctl->tail, SHM_RING_SLEEPING, memory_order_relaxed);

	if ((tail & ~SHM_RING_SLEEPING) == r->head)
		return OFI_EP_WAIT_SOUND;
	return shm_ring_peek(r) ? OFI_EP_WAIT_BUSY : OFI_EP_WAIT_POLL;
}

static int shm_wait_arm(struct util_ep *util)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);
	int st = OFI_EP_WAIT_POLL, cmd;

	shm_ep_lock(ep);
	if (!shm_wake_usable(ep) || !shm_wake_idle(ep))
		goto out;
	if (ep->armed && !pthread_equal(ep->armer, pthread_self()))
		ep->armed_more = true;
	ep->armed = true;
	ep->armer = pthread_self();
	ep->armed_ns = shm_now_ns();
	atomic_store_explicit(&shm_hdr(ep->rg)->sleeping, 1,
			      memory_order_relaxed);
	st = shm_wake_mark(shm_resp_ring(ep->rg));
	cmd = shm_wake_mark(shm_cmd_ring(ep->rg));
	if (cmd != OFI_EP_WAIT_SOUND && st != OFI_EP_WAIT_BUSY)
		st = cmd;
	/* Pairs with shm_wake_peer's (stores no command announces). */
	atomic_thread_fence(memory_order_seq_cst);
	if (st == OFI_EP_WAIT_SOUND && ofi_coll_wait_ready(&ep->util))
		st = OFI_EP_WAIT_BUSY;
out:
	shm_ep_unlock(ep);
	return st;
}

static void shm_wake_disarm(struct shm_ep *ep)
{
	char buf[64];

	ep->armed = false;
	ep->armed_more = false;
	atomic_store_explicit(&shm_hdr(ep->rg)->sleeping, 0,
			      memory_order_relaxed);
	atomic_fetch_and_explicit(&ep->rg->map->cmd_ctl.tail,
				  ~SHM_RING_SLEEPING, memory_order_relaxed);
	atomic_fetch_and_explicit(&ep->rg->map->resp_ctl.tail,
				  ~SHM_RING_SLEEPING, memory_order_relaxed);
	while (recv(ep->wake_fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* Whoever sleeps on our wake socket wakes, to arm again (or poll). */
static void shm_wake_sleepers(struct shm_ep *ep)
{
	if (ep->owner) {
		ep->owner->wake(ep->owner->ctx);
		return;
	}
	ofi_ep_wake_waits(&ep->util);
	ofi_progress_wake(ep->auto_prog);
}

/*
 * A progress pass found the endpoint armed. The thread that armed it is
 * awake now: it disarms, so that producers stop poking. Another thread's
 * pass (a poller beside a sleeper) leaves the marks to the sleeper for
 * SHM_WAKE_HOLD_NS, and then disarms and wakes every sleeper, who arms
 * again before it sleeps on: without the marks it would be deaf.
 */
void shm_wake_progress(struct shm_ep *ep)
{
	bool mine = pthread_equal(ep->armer, pthread_self());

	if (!mine && shm_now_ns() - ep->armed_ns < SHM_WAKE_HOLD_NS)
		return;
	mine = mine && !ep->armed_more;
	shm_wake_disarm(ep);
	if (!mine)
		shm_wake_sleepers(ep);
}

/*
 * Leaving an entry point, armed: another thread (the application, while
 * a blocking read or the progress thread sleeps) may have started work
 * that no poke announces (a stream, a full ring): the sleeper must wake
 * to drive it, as it would not have slept had the work been there.
 */
void shm_wake_check(struct shm_ep *ep)
{
	if (pthread_equal(ep->armer, pthread_self()) || shm_wake_quiet(ep))
		return;
	shm_wake_disarm(ep);
	shm_wake_sleepers(ep);
}

void shm_wake_init(struct shm_ep *ep)
{
	ep->util.wait_fd = shm_wait_fd;
	ep->util.wait_arm = shm_wait_arm;
}

/* ------------------------------------------------------------------ */
/* FI_PROGRESS_AUTO: a thread per endpoint that sleeps on the wake      */
/* socket, armed as a blocking read arms it, and runs our progress.    */

/* Polled this often while work no poke announces is in flight. */
#define SHM_AUTO_PERIOD_MS 1

static void shm_auto_progress(void *arg)
{
	struct shm_ep *ep = arg;

	shm_ep_lock(ep);
	shm_progress_locked(ep);
	shm_ep_unlock(ep);
	/*
	 * The collective engine's peers store into our memory and poke the
	 * socket we sleep on, not the reader's wait object: the engine runs
	 * in the reader's progress, so the reader must wake to run it.
	 */
	if (ep->util.coll && ofi_coll_wait_ready(&ep->util))
		ofi_ep_wake_waits(&ep->util);
}

/* Before the thread sleeps on the socket (ofi_progress_attr.arm). */
static void shm_auto_arm(void *arg)
{
	struct shm_ep *ep = arg;
	int period = SHM_AUTO_PERIOD_MS;

	if (shm_wait_fd(&ep->util) >= 0) {
		switch (shm_wait_arm(&ep->util)) {
		case OFI_EP_WAIT_BUSY:
			period = 0;
			break;
		case OFI_EP_WAIT_SOUND:
			/* an ack owed by a peer that died comes from no
			 * poke: its liveness is looked at now and then */
			shm_ep_lock(ep);
			if (!dlist_empty(&ep->rma_list))
				period = OFI_EP_POLL_LONG_MS;
			else
				period = -1;
			shm_ep_unlock(ep);
			/* a collective peer's stores poke only a reader it
			 * saw asleep, which this thread is not: look at the
			 * groups now and then rather than sleep past them */
			if (ep->util.coll)
				period = SHM_AUTO_PERIOD_MS;
			break;
		default:
			break;
		}
	}
	/* under our lock: close clears auto_prog before it stops us */
	shm_ep_lock(ep);
	ofi_progress_set_period(ep->auto_prog, period);
	shm_ep_unlock(ep);
}

int shm_auto_start(struct util_ep *util)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);
	struct ofi_progress_attr attr = {
		.prov = &shm_prov,
		.name = "shm_prog",
		.fd = shm_wait_fd(util),
		.period_ms = SHM_AUTO_PERIOD_MS,
		.fn = shm_auto_progress,
		.arg = ep,
		.driven = &ep->app_driven,
		.arm = shm_auto_arm,
	};

	int ret;

	if (ep->auto_prog)
		return 0;
	ofi_atomic_init64(&ep->app_driven, 0);
	ret = ofi_progress_start(&attr, &ep->auto_prog);
	if (!ret)
		ofi_ep_set_progress(util, ep->auto_prog);
	return ret;
}

/* First in close, without our lock: the thread's pass takes it. */
void shm_auto_stop(struct shm_ep *ep)
{
	struct ofi_progress *prog;

	/* No reader rouses it from now on (without our lock: they take
	 * the CQ's and counters' list locks first). */
	ofi_ep_set_progress(&ep->util, NULL);
	shm_ep_lock(ep);
	prog = ep->auto_prog;
	ep->auto_prog = NULL;
	shm_ep_unlock(ep);
	ofi_progress_stop(prog);
}
