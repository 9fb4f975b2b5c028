/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_progress.c - the progress of tcp's endpoints: a pass (AV removals
 * applied, the connection layer's progress, batched answers owed, the
 * same-host path), what blocking reads sleep on and arm, and AV removals,
 * recorded by the AV's callback and applied under the endpoint lock.
 */
#include <stdlib.h>

#include "tcp.h"

void tcp_av_sync(struct tcp_ep *ep)
{
	struct tcp_ep *c;
	fi_addr_t addr;
	size_t i;

	ofi_mutex_lock(&ep->av_lock);
	while (ep->removed_cnt) {
		addr = ep->removed[ep->removed_cnt - 1];
		__atomic_store_n(&ep->removed_cnt, ep->removed_cnt - 1,
				 __ATOMIC_RELEASE);
		ofi_mutex_unlock(&ep->av_lock);
		ofi_sock_remove_peer(ep->set, addr);
		tcp_sep_foreach(ep, c, i) {
			tcp_fail_pending(c, addr, FI_ECANCELED);
			ofi_match_addr_removed(c->rxq, addr);
		}
		tcp_shm_removed(ep, addr);
		ofi_mutex_lock(&ep->av_lock);
	}
	ofi_mutex_unlock(&ep->av_lock);
}

OFI_HOT void tcp_progress_locked(struct tcp_ep *ep)
{
	if (ep->engine) /* a context: its SEP's connections */
		ep = ep->engine;
	if (OFI_UNLIKELY(tcp_av_removals(ep)))
		tcp_av_sync(ep);
	(void)ofi_sock_progress(ep->set, 0);
	if (ep->nowed)
		tcp_owed_flush(ep);
	if (ep->shm && ofi_ep_enabled(&ep->util))
		tcp_shm_progress(ep);
}

OFI_HOT void tcp_ep_progress(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);

	if (ep->util.auto_progress)
		ofi_progress_mark(&ep->app_driven);
	else if (ep->util.side_thread)
		tcp_app_call(ep);
	tcp_ep_lock(ep);
	tcp_progress_locked(ep);
	tcp_ep_unlock(ep);
}

int tcp_wait_fd(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);

	return ep->shm ? tcp_shm_wait_fd(ep) : ofi_sock_fd(ep->set);
}

/*
 * Whether the sockets' fd announces all of the endpoint's work (nothing
 * queued to send, no connection being made); with a same-host path shm
 * arms its wake socket too (tcp_shm.c).
 */
int tcp_wait_arm(struct util_ep *util)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);
	int st;

	tcp_ep_lock(ep);
	ofi_sock_arm(ep->set);
	st = tcp_shm_wait_arm(ep);
	tcp_ep_unlock(ep);
	return st;
}

static void tcp_av_removed(struct util_ep *util, fi_addr_t addr)
{
	struct tcp_ep *ep = container_of(util, struct tcp_ep, util);
	fi_addr_t *n;
	size_t cap;

	ofi_mutex_lock(&ep->av_lock);
	if (ep->removed_cnt == ep->removed_cap) {
		cap = ep->removed_cap ? ep->removed_cap * 2 : 16;
		n = realloc(ep->removed, cap * sizeof(*n));
		if (!n) {
			ofi_mutex_unlock(&ep->av_lock);
			return;
		}
		ep->removed = n;
		ep->removed_cap = cap;
	}
	ep->removed[ep->removed_cnt] = addr;
	__atomic_store_n(&ep->removed_cnt, ep->removed_cnt + 1,
			 __ATOMIC_RELEASE);
	/* Its pending operations fail at the next progress: now, not when
	 * some event comes (the thread may sleep without a period). Under
	 * av_lock: tcp_auto_stop takes the thread away under it. */
	ofi_progress_wake(ep->auto_prog);
	ofi_mutex_unlock(&ep->av_lock);
}

const struct ofi_av_ep_ops tcp_av_ep_ops = {
	.removed = tcp_av_removed,
};
