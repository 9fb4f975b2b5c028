/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_thread.c - FI_PROGRESS_AUTO on tcp's endpoints: one thread per
 * endpoint (ofi_progress.h), woken by its epoll set (incoming data,
 * connections, and EPOLLOUT of sockets whose sends wait for room) and
 * by shm's wake socket, running the same progress pass under the
 * endpoint lock; started at fi_enable, stopped first thing at fi_close.
 * And under FI_PROGRESS_MANUAL, the flusher: a thread that writes what
 * sends completed early left queued, if the application stops calling.
 */
#include "tcp.h"

/* Asked for, or a target of RMA and atomics (ofi_progress_target). */
bool tcp_auto_wanted(struct tcp_ep *ep)
{
	return tcp_attr_auto(ep->util.info->domain_attr, true, true) ||
	       tcp_attr_auto(ep->util.domain->attr, true, true) ||
	       ofi_progress_target(ep->util.info->caps);
}

/*
 * The thread's next period: everything TCP has to do raises an event on
 * the epoll set (bytes in, room to write, corked frames, a connection
 * made), so with nothing in flight the thread sleeps until one comes.
 * Frames still waiting keep TCP_AUTO_PERIOD_MS as a safety net. The
 * same-host path has its say when the thread arms (tcp_shm_auto_period).
 */
static int tcp_auto_period(struct tcp_ep *ep)
{
	return ofi_sock_pending(ep->set) ? TCP_AUTO_PERIOD_MS : -1;
}

static void tcp_auto_progress(void *arg)
{
	struct tcp_ep *ep = arg;

	tcp_ep_lock(ep);
	tcp_progress_locked(ep);
	ofi_progress_set_period(ep->auto_prog, tcp_auto_period(ep));
	tcp_ep_unlock(ep);
}

/* Before the thread sleeps on the endpoint's fd (ofi_progress_attr.arm):
 * the sockets and shm's wake socket announce what comes from then on. */
static void tcp_auto_arm(void *arg)
{
	struct tcp_ep *ep = arg;

	tcp_ep_lock(ep);
	ofi_sock_arm(ep->set);
	if (ep->shm && ep->auto_prog)
		ofi_progress_set_period(
			ep->auto_prog,
			tcp_shm_auto_period(ep, tcp_auto_period(ep)));
	tcp_ep_unlock(ep);
}

/* Under the endpoint lock: whoever sleeps on the endpoint's fd wakes
 * and arms again; the progress thread stands down while the application
 * polls. */
void tcp_wake_sleepers(struct tcp_ep *ep)
{
	ofi_ep_wake_waits(&ep->util);
	if (ep->auto_prog)
		ofi_progress_wake(ep->auto_prog);
}

void tcp_sock_quiet(void *ctx)
{
	tcp_wake_sleepers(tcp_ctx(ctx));
}

int tcp_auto_start(struct tcp_ep *ep)
{
	char name[16];
	struct ofi_progress_attr attr = {
		.prov = tcp_ep_prov(ep),
		.name = name,
		.fd = tcp_wait_fd(&ep->util),
		.period_ms = TCP_AUTO_PERIOD_MS,
		.fn = tcp_auto_progress,
		.arg = ep,
		.driven = &ep->app_driven,
		.arm = tcp_auto_arm,
	};
	int ret;

	if (!ep->util.auto_progress || ep->auto_prog)
		return 0;
	tcp_thread_name(name, sizeof(name), attr.prov, "prog");
	ret = ofi_progress_start(&attr, &ep->auto_prog);
	if (!ret)
		ofi_ep_set_progress(&ep->util, ep->auto_prog);
	return ret;
}

void tcp_auto_stop(struct tcp_ep *ep)
{
	struct ofi_progress *prog, *flusher;

	/* No reader rouses it (ofi_ep_refs_rouse; they take the CQ's and
	 * counters' list locks before ours), no AV callback wakes it once
	 * it is gone (tcp_av_removed), and its own pass
	 * (tcp_auto_progress, under our lock) sees NULL; nor does the
	 * flusher's, and none starts again (close still flushes). */
	ofi_ep_set_progress(&ep->util, NULL);
	tcp_ep_lock(ep);
	ofi_mutex_lock(&ep->av_lock);
	prog = ep->auto_prog;
	ep->auto_prog = NULL;
	ofi_mutex_unlock(&ep->av_lock);
	flusher = ep->flusher;
	ep->flusher = NULL;
	ep->flusher_off = true;
	tcp_ep_unlock(ep);
	ofi_progress_stop(prog);
	ofi_progress_stop(flusher);
}

/*
 * The flusher (manual progress). A small send completes at once when its
 * frame cannot be written yet (tcp_req_buffer): its connection is being
 * made, it joined a corked burst, or the socket has no room. The next
 * progress call writes it, but an application that saw its send complete
 * may make none for a while, waiting outside the library on something
 * the frame's receiver is to do (Open MPI's MPI_Comm_spawn waits so in
 * PMIx): the message would never leave. So the first such send starts
 * this thread, and each one after wakes it: it runs a progress pass once
 * a whole period went by without the application's progress calls and
 * such sends, and goes back to sleep, without a timeout, once nothing
 * waits. It never watches the sockets: data that comes in, and larger
 * sends, which complete only once written, still wait for the
 * application's calls.
 */
static void tcp_flush_pass(void *arg)
{
	struct tcp_ep *ep = arg;
	uint64_t calls = __atomic_load_n(&ep->app_calls, __ATOMIC_RELAXED);

	if (calls != ep->flusher_seen) {
		/* The application is at it: its own calls write them. */
		ep->flusher_seen = calls;
		return;
	}
	tcp_ep_lock(ep);
	tcp_progress_locked(ep);
	ofi_progress_set_period(ep->flusher, ofi_sock_pending(ep->set)
						     ? TCP_AUTO_PERIOD_MS
						     : -1);
	tcp_ep_unlock(ep);
}

static void tcp_flusher_start(struct tcp_ep *ep)
{
	char name[16];
	struct ofi_progress_attr attr = {
		.prov = tcp_ep_prov(ep),
		.name = name,
		.fd = -1, /* the sockets are the application's to watch */
		.period_ms = TCP_AUTO_PERIOD_MS,
		.fn = tcp_flush_pass,
		.arg = ep,
	};

	tcp_thread_name(name, sizeof(name), attr.prov, "flush");
	if (ofi_progress_start(&attr, &ep->flusher))
		FI_WARN(attr.prov, FI_LOG_EP_DATA,
			"no flusher thread: sends that completed early wait "
			"for progress calls\n");
}

void tcp_flusher_kick(struct tcp_ep *ep)
{
	if (!ep->util.side_thread || ep->flusher_off)
		return;
	tcp_app_call(ep);
	if (!ep->flusher)
		tcp_flusher_start(ep);
	else
		ofi_progress_set_period(ep->flusher, TCP_AUTO_PERIOD_MS);
}
