/*
 * shm_wake.c - waking an endpoint whose reader sleeps: each endpoint owns
 * a datagram socket in the abstract AF_UNIX namespace, named from its
 * region (util's wait_fd: blocking reads poll it, fi_trywait arms it in
 * the CQ's epoll set), and a word in its region header, hdr.sleeping.
 *
 * A reader about to sleep sets the word, fences, and looks at its rings
 * once more (shm_wait_arm); a peer that published a command or a
 * response fences and reads the word, and the one that clears it sends a
 * byte to the socket (shm_wake_peer). Either the sleeper sees the
 * command or the peer sees the word (Dekker), so the busy path costs a
 * fence and a load. An endpoint with transfers in flight, whose peers'
 * progress shows in places no command announces (streamed segments,
 * credits, a peer's death), is not armed: its reader naps as before.
 *
 * The word is a hint any peer can write: a bad value costs a spurious
 * poke or a nap. A socket that cannot be bound (the name taken) leaves
 * the endpoint napping; a peer that finds no socket to poke (another
 * network namespace) sets hdr.wake_fail, and the owner naps from then on.
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
 * no ack, no read, no queued send, no closed sender to release, no
 * sender in the middle of a command.
 */
static bool shm_wake_idle(struct shm_ep *ep)
{
	bool tx_full = ep->tx_full;

	ep->tx_full = false;
	return !tx_full && !ep->sar_bound && !ep->inject_starved &&
	       dlist_empty(&ep->cma_list) && dlist_empty(&ep->rma_list) &&
	       dlist_empty(&ep->sar_queue) && dlist_empty(&ep->sar_rx_list) &&
	       dlist_empty(&ep->rma_src) && dlist_empty(&ep->ack_backlog) &&
	       atomic_load_explicit(&shm_hdr(ep->rg)->closed,
				    memory_order_relaxed) == ep->closed_done &&
	       !shm_ring_stuck(shm_cmd_ring(ep->rg));
}

static int shm_wait_arm(struct util_ep *util)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);
	struct shm_hdr *hdr;
	int st = OFI_EP_WAIT_POLL;

	shm_ep_lock(ep);
	if (!shm_wake_usable(ep) || !shm_wake_idle(ep))
		goto out;
	hdr = shm_hdr(ep->rg);
	ep->armed = true;
	atomic_store_explicit(&hdr->sleeping, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (shm_ring_peek(shm_resp_ring(ep->rg)) ||
	    shm_ring_peek(shm_cmd_ring(ep->rg)) ||
	    ofi_coll_wait_ready(&ep->util))
		st = OFI_EP_WAIT_BUSY;
	else
		st = OFI_EP_WAIT_SOUND;
out:
	shm_ep_unlock(ep);
	return st;
}

void shm_wake_disarm(struct shm_ep *ep)
{
	char buf[64];

	ep->armed = false;
	atomic_store_explicit(&shm_hdr(ep->rg)->sleeping, 0,
			      memory_order_relaxed);
	while (recv(ep->wake_fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

void shm_wake_init(struct shm_ep *ep)
{
	ep->util.wait_fd = shm_wait_fd;
	ep->util.wait_arm = shm_wait_arm;
}
