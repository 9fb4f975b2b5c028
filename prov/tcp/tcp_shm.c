/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_shm.c - the RDM endpoint's same-host path: peers on this
 * host are reached through an shm endpoint that tcp's endpoint drives
 * (prov/shm/shm_peer.h), behind tcp's one fi_addr_t space, CQs and
 * receive queues. fi_tcp(7) describes it; FI_TCP_SHM=0 turns it off.
 *
 * Naming. An endpoint's shm region is named from its tcp address and its
 * network namespace: fi_shm://t<netns>.<ip hex>.<port hex>. A peer whose
 * region exists under the name its address gives is on this host and in
 * this namespace (two namespaces may both use 127.0.0.1:port, never the
 * same namespace inode), so the route is decided by one lookup at first
 * use of an address and kept until the address leaves the AV: all of
 * one peer's traffic takes one path, in order.
 *
 * Trust. A region name read from a peer's slot is parsed strictly and
 * only ever mapped back to an fi_addr of our own AV; regions are opened
 * only when owned by our uid (shm_region.c).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ofi_progress.h"
#include "tcp.h"

#if HAVE_SHM
#include "../shm/shm_peer.h"

_Static_assert(TCP_IOV_LIMIT <= SHM_PEER_IOV_LIMIT, "an op fits both paths");

/* Our network namespace's inode, 0 if unknown (then no shm path). */
static uint64_t tcp_netns(void)
{
	char buf[64];
	ssize_t n;
	uint64_t ino = 0;

	n = readlink("/proc/self/ns/net", buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "net:[%" SCNu64 "]", &ino) != 1)
		return 0;
	return ino;
}

static size_t tcp_sa_ip(const struct sockaddr_storage *sa, const uint8_t **ip,
			uint16_t *port)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->ss_family == AF_INET6) {
		*ip = s6->sin6_addr.s6_addr;
		*port = ntohs(s6->sin6_port);
		return sizeof(s6->sin6_addr);
	}
	*ip = (const uint8_t *)&s4->sin_addr;
	*port = ntohs(s4->sin_port);
	return sizeof(s4->sin_addr);
}

/* The region name of the endpoint listening at @sa in our namespace. */
static int tcp_shm_name(uint64_t ns, const struct sockaddr_storage *sa,
			char *name)
{
	char buf[2 * SHM_PEER_NAME_MAX]; /* room for the longest form */
	const uint8_t *ip;
	uint16_t port;
	size_t len, i, n;

	len = tcp_sa_ip(sa, &ip, &port);
	n = (size_t)snprintf(buf, sizeof(buf), "fi_shm://t%" PRIx64 ".", ns);
	for (i = 0; i < len; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%02x", ip[i]);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".%04x", port);
	if (n >= SHM_PEER_NAME_MAX)
		return -FI_EINVAL;
	memcpy(name, buf, n + 1);
	return 0;
}

static int tcp_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* @n bytes of lower-case hex at @s into @out; false on anything else. */
static bool tcp_unhex(const char *s, uint8_t *out, size_t n)
{
	int hi, lo;
	size_t i;

	for (i = 0; i < n; i++) {
		hi = tcp_hex(s[2 * i]);
		lo = hi < 0 ? -1 : tcp_hex(s[2 * i + 1]);
		if (lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/*
 * A region name back to the tcp address it was made from: only names of
 * our namespace and our address family, in exactly tcp_shm_name's form.
 */
static bool tcp_shm_parse(struct tcp_ep *ep, const char *name,
			  struct sockaddr_storage *sa)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
	char prefix[SHM_PEER_NAME_MAX];
	uint8_t port[2], *ip;
	size_t plen, len;

	plen = (size_t)snprintf(prefix, sizeof(prefix),
				"fi_shm://t%" PRIx64 ".", ep->netns);
	if (strncmp(name, prefix, plen))
		return false;
	name += plen;
	memset(sa, 0, sizeof(*sa));
	if (ep->name.ss_family == AF_INET6) {
		s6->sin6_family = AF_INET6;
		ip = s6->sin6_addr.s6_addr;
		len = sizeof(s6->sin6_addr);
	} else {
		s4->sin_family = AF_INET;
		ip = (uint8_t *)&s4->sin_addr;
		len = sizeof(s4->sin_addr);
	}
	if (strnlen(name, 2 * len + 6) != 2 * len + 5 || name[2 * len] != '.' ||
	    !tcp_unhex(name, ip, len) ||
	    !tcp_unhex(name + 2 * len + 1, port, 2))
		return false;
	if (ep->name.ss_family == AF_INET6)
		memcpy(&s6->sin6_port, port, 2);
	else
		memcpy(&s4->sin_port, port, 2);
	return true;
}

static int tcp_shm_addr_name(void *ctx, fi_addr_t addr, char *name)
{
	struct tcp_ep *ep = ctx;
	struct sockaddr_storage sa = {0};

	if (!ep->util.av || ofi_av_get_addr(ep->util.av, addr, &sa))
		return -FI_EINVAL;
	if (sa.ss_family != ep->name.ss_family)
		return -FI_EINVAL;
	return tcp_shm_name(ep->netns, &sa, name);
}

static fi_addr_t tcp_shm_name_addr(void *ctx, const char *name)
{
	struct tcp_ep *ep = ctx;
	struct sockaddr_storage sa;

	if (!ep->util.av || !tcp_shm_parse(ep, name, &sa))
		return FI_ADDR_NOTAVAIL;
	return ofi_av_reverse_lookup(ep->util.av, &sa);
}

static fi_addr_t tcp_shm_src_addr(void *ctx, fi_addr_t addr)
{
	return tcp_src_addr(ctx, addr);
}

static void tcp_shm_wake(void *ctx)
{
	tcp_wake_sleepers(ctx);
}

static const struct shm_owner tcp_shm_owner = {
	.addr_name = tcp_shm_addr_name,
	.name_addr = tcp_shm_name_addr,
	.src_addr = tcp_shm_src_addr,
	.wake = tcp_shm_wake,
};

/* FI_<PROV>_SHM of the domain's provider (FI_TCP_SHM), on by default. */
static bool tcp_shm_on(const struct util_domain *dom)
{
	int on = 1;

	fi_param_get_bool((struct fi_provider *)dom->prov, "shm", &on);
	return on;
}

/*
 * An epoll set of the socket set's fd and shm's wake socket, so that a
 * blocking read (and fi_trywait) sleeps on both paths at once.
 */
static void tcp_shm_wait_open(struct tcp_ep *ep)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int fd = ep->shm ? shm_peer_wait_fd(ep->shm) : -1;

	if (fd < 0)
		return;
	ep->shm_wait_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ep->shm_wait_epfd < 0)
		return;
	if (!epoll_ctl(ep->shm_wait_epfd, EPOLL_CTL_ADD, fd, &ev) &&
	    !epoll_ctl(ep->shm_wait_epfd, EPOLL_CTL_ADD, ofi_sock_fd(ep->set),
		       &ev))
		return;
	close(ep->shm_wait_epfd);
	ep->shm_wait_epfd = -1;
}

int tcp_shm_open(struct tcp_ep *ep)
{
	char name[SHM_PEER_NAME_MAX];
	int ret;

	/* FI_SOURCE_ERR reports an unknown sender's socket address, which
	 * only a connection carries: its peers all come by TCP. */
	if (!tcp_shm_on(ep->util.domain) || ep->msg ||
	    (ep->util.caps & FI_SOURCE_ERR))
		return 0;
	ep->netns = tcp_netns();
	if (!ep->netns || tcp_shm_name(ep->netns, &ep->name, name))
		return 0;
	ep->shm_owner = malloc(sizeof(*ep->shm_owner));
	if (!ep->shm_owner)
		return 0;
	*ep->shm_owner = tcp_shm_owner;
	ep->shm_owner->ctx = ep;
	ret = shm_peer_open(&ep->util, &ep->mq, ep->shm_owner, name, &ep->shm);
	if (ret) {
		/* No same-host path: every peer goes by TCP. */
		FI_INFO(tcp_ep_prov(ep), FI_LOG_EP_CTRL,
			"no shm path (%s): %s\n", name, fi_strerror(-ret));
		ep->shm = NULL;
	}
	tcp_shm_wait_open(ep);
	return 0;
}

void tcp_shm_enable(struct tcp_ep *ep)
{
	if (ep->shm)
		shm_peer_enable(ep->shm, &ep->util);
}

void tcp_shm_close(struct tcp_ep *ep)
{
	if (ep->shm)
		fi_close(&ep->shm->fid);
	ep->shm = NULL;
	if (ep->shm_wait_epfd >= 0)
		close(ep->shm_wait_epfd);
	ep->shm_wait_epfd = -1;
	free(ep->shm_owner);
	ep->shm_owner = NULL;
	free(ep->route);
	ep->route = NULL;
	ep->route_cnt = 0;
}

/* tcp_shm_route's first sight of @addr: its route is still undecided. */
struct fid_ep *tcp_shm_route_slow(struct tcp_ep *ep, fi_addr_t addr)
{
	struct sockaddr_storage sa;
	size_t cnt;
	uint8_t *r;

	if (addr >= OFI_SOCK_ANON_ADDR || addr >= (1ULL << 24))
		return NULL;
	if (addr >= ep->route_cnt) {
		cnt = ofi_roundup_pow2(addr + 1);
		if (cnt < 64)
			cnt = 64;
		r = realloc(ep->route, cnt);
		if (!r)
			return NULL; /* decided later */
		memset(r + ep->route_cnt, TCP_ROUTE_NONE, cnt - ep->route_cnt);
		ep->route = r;
		ep->route_cnt = cnt;
	}
	/* Not an address (yet): TCP answers it, nothing is decided. */
	if (!ep->util.av || ofi_av_get_addr(ep->util.av, addr, &sa))
		return NULL;
	ep->route[addr] =
		shm_peer_connect(ep->shm, addr) ? TCP_ROUTE_SHM : TCP_ROUTE_TCP;
	FI_INFO(tcp_ep_prov(ep), FI_LOG_EP_DATA, "fi_addr %" PRIu64 " by %s\n",
		(uint64_t)addr,
		ep->route[addr] == TCP_ROUTE_SHM ? "shm" : "tcp");
	if (ep->route[addr] != TCP_ROUTE_SHM)
		return NULL;
	ep->shm_peers++;
	return ep->shm;
}

void tcp_shm_progress(struct tcp_ep *ep)
{
	shm_peer_progress(ep->shm);
}

bool tcp_shm_tx_busy(struct tcp_ep *ep)
{
	return ep->shm && shm_peer_tx_busy(ep->shm);
}

/*
 * What a blocking read sleeps on: the sockets, and shm's wake socket
 * beside them when there is a same-host path (same-host peers may write
 * to us before we ever sent to them); -1 when shm's traffic wakes no fd
 * and same-host peers are routed: it polls then.
 */
int tcp_shm_wait_fd(struct tcp_ep *ep)
{
	if (ep->shm_wait_epfd >= 0)
		return ep->shm_wait_epfd;
	return ep->shm_peers ? -1 : ofi_sock_fd(ep->set);
}

/*
 * Called with the endpoint locked. See util_ep's wait_arm. The sockets
 * alone: every frame that comes makes the set's fd readable; frames
 * waiting to leave, or connections being made, raise their events too
 * but are safer napped.
 */
int tcp_shm_wait_arm(struct tcp_ep *ep)
{
	int st =
		ofi_sock_pending(ep->set) ? OFI_EP_WAIT_NAP : OFI_EP_WAIT_SOUND;

	if (!ep->shm)
		return st;
	if (ep->shm_wait_epfd < 0)
		return ep->shm_peers ? OFI_EP_WAIT_POLL : OFI_EP_WAIT_NAP;
	switch (shm_peer_wait_arm(ep->shm)) {
	case OFI_EP_WAIT_BUSY:
		return OFI_EP_WAIT_BUSY;
	case OFI_EP_WAIT_SOUND:
		return st;
	default:
		/* shm streams or waits on a peer: poll as before. */
		return ep->shm_peers ? OFI_EP_WAIT_POLL : OFI_EP_WAIT_NAP;
	}
}

/*
 * The progress thread sleeps on the same fd as blocking reads: shm's
 * traffic pokes it when armed here, as it pokes a blocking read, since
 * same-host peers reach us whether the application calls us or not
 * (FI_PROGRESS_AUTO). Work shm's socket does not announce is polled.
 */
int tcp_shm_auto_period(struct tcp_ep *ep, int period)
{
	if (ep->shm_wait_epfd < 0)
		return TCP_AUTO_SHM_PERIOD_MS;
	switch (shm_peer_wait_arm(ep->shm)) {
	case OFI_EP_WAIT_BUSY:
		return 0;
	case OFI_EP_WAIT_SOUND:
		return period;
	default:
		return TCP_AUTO_SHM_PERIOD_MS;
	}
}

void tcp_shm_removed(struct tcp_ep *ep, fi_addr_t addr)
{
	if (!ep->shm)
		return;
	shm_peer_addr_removed(ep->shm, addr);
	if (addr < ep->route_cnt) {
		if (ep->route[addr] == TCP_ROUTE_SHM)
			ep->shm_peers--;
		ep->route[addr] = TCP_ROUTE_NONE;
	}
}

/*
 * Which peer an atomic goes to is not known when its limits are asked:
 * with the same-host path on, they are the smaller of tcp's and shm's.
 */
void tcp_shm_atomic_limit(const struct util_domain *dom,
			  enum ofi_atomic_kind kind, enum fi_datatype dt,
			  enum fi_op op, size_t *count)
{
	static const uint64_t flags[OFI_ATOMIC_KINDS] = {
		[OFI_ATOMIC_FETCH] = FI_FETCH_ATOMIC,
		[OFI_ATOMIC_COMPARE] = FI_COMPARE_ATOMIC,
	};
	struct fi_atomic_attr attr;

	if (tcp_shm_on(dom) &&
	    !shm_peer_query_atomic(dt, op, &attr, flags[kind]) &&
	    attr.count < *count)
		*count = attr.count;
}

#else /* !HAVE_SHM */

void tcp_shm_atomic_limit(const struct util_domain *dom,
			  enum ofi_atomic_kind kind, enum fi_datatype dt,
			  enum fi_op op, size_t *count)
{
}

int tcp_shm_open(struct tcp_ep *ep)
{
	return 0;
}

void tcp_shm_enable(struct tcp_ep *ep)
{
}

void tcp_shm_close(struct tcp_ep *ep)
{
}

int tcp_shm_wait_fd(struct tcp_ep *ep)
{
	return ofi_sock_fd(ep->set);
}

int tcp_shm_wait_arm(struct tcp_ep *ep)
{
	return ofi_sock_pending(ep->set) ? OFI_EP_WAIT_NAP : OFI_EP_WAIT_SOUND;
}

struct fid_ep *tcp_shm_route_slow(struct tcp_ep *ep, fi_addr_t addr)
{
	return NULL;
}

void tcp_shm_progress(struct tcp_ep *ep)
{
}

bool tcp_shm_tx_busy(struct tcp_ep *ep)
{
	return false;
}

void tcp_shm_removed(struct tcp_ep *ep, fi_addr_t addr)
{
}

int tcp_shm_auto_period(struct tcp_ep *ep, int period)
{
	return period;
}
#endif
