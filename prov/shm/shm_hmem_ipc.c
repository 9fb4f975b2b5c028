/*
 * shm_hmem_ipc.c - device memory (FI_HMEM) in the shm provider: which
 * interface a user buffer lives in, the parameters, and the device IPC
 * protocol for large device messages. The sender puts its buffer's IPC
 * handle into the command and waits for the receiver's ack; the receiver
 * maps the handle through the IPC handle cache of src/hmem (once per peer
 * allocation), copies device to device into the posted buffer (never
 * overridden) and acks. Level Zero handles carry an fd that only means
 * something in the exporting process: it travels over a Unix socket
 * (SCM_RIGHTS) from the sender to a listening socket every endpoint opens,
 * named from its address; connections are made on first use.
 *
 * Small device messages never come here: the inline, inject and segmented
 * paths of shm_msg.c stage them through host buffers with the domain's
 * copy routines (overrides honoured). Whenever IPC cannot be used (P2P
 * disabled, no handle, the peer cannot map it) the transfer falls back to
 * the segmented path, so IPC is an optimisation, never a requirement.
 */
#define _GNU_SOURCE /* SO_PEERCRED, accept4 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

#define SHM_IPC_THRESHOLD  (64 * 1024)
#define SHM_IPC_CACHE_SIZE 256
#define SHM_IPC_WAIT_MS	   2000 /* for a fd the sender sent before its cmd */
#define SHM_IPC_SOCK_FMT   "ofi_shm_ipc:%s"

/* A Level Zero fd that arrived ahead of the command that needs it. */
struct shm_ipc_fd {
	struct dlist_entry entry;
	uint16_t src_id;
	uint64_t msg_id;
	int fd;
};

/* Sent on a new connection: which slot of our peer table the sender has. */
struct shm_ipc_hello {
	uint32_t id;
	uint32_t pad;
};

struct shm_ipc {
	size_t threshold;
	pid_t pid;
	bool enabled[OFI_HMEM_MAX]; /* IPC allowed per interface */
	struct ofi_ipc_cache *cache;
	int listen_fd;		     /* -1 without Level Zero */
	int rx_sock[SHM_MAX_PEERS];  /* from senders, by their slot */
	struct dlist_entry fd_stash; /* struct shm_ipc_fd */
	int *tx_sock;		     /* to receivers, by fi_addr */
	size_t tx_sock_cnt;
};

/* The received fd of the handle being opened (cache open callback). */
static __thread int shm_ipc_open_fd = -1;

void shm_hmem_define_params(void)
{
	fi_param_define(&shm_prov, "ipc_threshold", FI_PARAM_SIZE_T,
			"Device-memory messages of at least this many bytes "
			"(and above the inject size) are passed as device IPC "
			"handles and copied device to device by the "
			"receiver; smaller ones are staged through host "
			"buffers. FI_HMEM_DISABLE_P2P turns IPC off "
			"(default: %d)",
			SHM_IPC_THRESHOLD);
}

void shm_hmem_detect(const struct iovec *iov, enum fi_hmem_iface *iface,
		     uint64_t *device)
{
	*iface = ofi_get_hmem_iface(iov[0].iov_base, device, NULL);
	if (*iface == FI_HMEM_SYSTEM)
		*device = 0;
}

static int shm_ipc_open(enum fi_hmem_iface iface, void *handle, size_t size,
			uint64_t device, void **mapped)
{
	uint8_t h[OFI_HMEM_MAX_HANDLE_SIZE];

	if (iface != FI_HMEM_ZE)
		return ofi_hmem_open_handle(iface, handle, size, device,
					    mapped);
	/* The cached key has no fd; this open uses the one just received. */
	if (shm_ipc_open_fd < 0 || size > sizeof(h))
		return -FI_EINVAL;
	memcpy(h, handle, size);
	ofi_hmem_handle_set_fd(iface, h, shm_ipc_open_fd);
	return ofi_hmem_open_handle(iface, h, size, device, mapped);
}

static const struct ofi_ipc_cache_ops shm_ipc_cache_ops = {
	.open = shm_ipc_open,
};

static void shm_ipc_sock_name(const char *ep_name, struct sockaddr_un *sa,
			      socklen_t *len)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract namespace (leading NUL): nothing to unlink on a crash. */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     SHM_IPC_SOCK_FMT, ep_name);
	*len = offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

static int shm_ipc_listen(struct shm_ep *ep, struct shm_ipc *ipc)
{
	struct sockaddr_un sa;
	socklen_t len;
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	shm_ipc_sock_name(ep->name, &sa, &len);
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 128)) {
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"no IPC socket for %s: %s; Level Zero IPC off\n",
			ep->name, strerror(errno));
		close(fd);
		return 0;
	}
	ipc->listen_fd = fd;
	return 0;
}

int shm_ipc_init(struct shm_ep *ep)
{
	struct shm_ipc *ipc;
	int i, ret, iface;

	ep->hmem_detect = (ep->util.caps & FI_HMEM) && ofi_hmem_any_available();
	if (!(ep->util.caps & FI_HMEM))
		return 0;
	ipc = calloc(1, sizeof(*ipc));
	if (!ipc)
		return -FI_ENOMEM;
	ipc->threshold = SHM_IPC_THRESHOLD;
	fi_param_get_size_t(&shm_prov, "ipc_threshold", &ipc->threshold);
	ipc->pid = getpid();
	ipc->listen_fd = -1;
	for (i = 0; i < SHM_MAX_PEERS; i++)
		ipc->rx_sock[i] = -1;
	dlist_init(&ipc->fd_stash);
	for (iface = FI_HMEM_SYSTEM + 1; iface < OFI_HMEM_MAX; iface++)
		ipc->enabled[iface] = ofi_hmem_is_ipc_enabled(iface);
	ep->ipc = ipc;
	ret = ofi_ipc_cache_open(&ipc->cache, SHM_IPC_CACHE_SIZE,
				 &shm_ipc_cache_ops);
	if (ret)
		return ret;
	if (ipc->enabled[FI_HMEM_ZE])
		ret = shm_ipc_listen(ep, ipc);
	return ret;
}

static void shm_ipc_drop_fds(struct shm_ipc *ipc, int src_id)
{
	struct dlist_entry *item, *tmp;
	struct shm_ipc_fd *f;

	dlist_foreach_safe(&ipc->fd_stash, item, tmp)
	{
		f = container_of(item, struct shm_ipc_fd, entry);
		if (src_id >= 0 && f->src_id != src_id)
			continue;
		dlist_remove(&f->entry);
		close(f->fd);
		free(f);
	}
}

void shm_ipc_fini(struct shm_ep *ep)
{
	struct shm_ipc *ipc = ep->ipc;
	size_t i;

	if (!ipc)
		return;
	ofi_ipc_cache_close(ipc->cache);
	shm_ipc_drop_fds(ipc, -1);
	for (i = 0; i < SHM_MAX_PEERS; i++)
		if (ipc->rx_sock[i] >= 0)
			close(ipc->rx_sock[i]);
	for (i = 0; i < ipc->tx_sock_cnt; i++)
		if (ipc->tx_sock[i] >= 0)
			close(ipc->tx_sock[i]);
	if (ipc->listen_fd >= 0)
		close(ipc->listen_fd);
	free(ipc->tx_sock);
	free(ipc);
	ep->ipc = NULL;
}

static uint64_t shm_ipc_peer_id(uint16_t id, uint32_t gen)
{
	return (uint64_t)gen << 16 | id;
}

/* The slot changed hands: the old sender's mappings and fds go. */
void shm_ipc_peer_gone(struct shm_ep *ep, uint16_t id, uint32_t gen)
{
	struct shm_ipc *ipc = ep->ipc;

	ofi_ipc_cache_remove_peer(ipc->cache, shm_ipc_peer_id(id, gen));
	shm_ipc_drop_fds(ipc, id);
	if (ipc->rx_sock[id] >= 0) {
		close(ipc->rx_sock[id]);
		ipc->rx_sock[id] = -1;
	}
}

/* ------------------------------------------------------------------ */
/* Sender.                                                              */

/* @addr left the AV: its connection may not serve the next owner. */
void shm_ipc_addr_removed(struct shm_ep *ep, fi_addr_t addr)
{
	struct shm_ipc *ipc = ep->ipc;

	if (!ipc || addr >= ipc->tx_sock_cnt || ipc->tx_sock[addr] < 0)
		return;
	close(ipc->tx_sock[addr]);
	ipc->tx_sock[addr] = -1;
}

bool shm_ipc_wanted(struct shm_ep *ep, const struct shm_tx_peer *p,
		    enum fi_hmem_iface iface, size_t count, size_t size)
{
	struct shm_ipc *ipc = ep->ipc;

	/* Drivers refuse to import their own process's handles. */
	return ipc && iface != FI_HMEM_SYSTEM && iface < OFI_HMEM_MAX &&
	       ipc->enabled[iface] && count == 1 && size >= ipc->threshold &&
	       p->pid != ipc->pid;
}

static int *shm_ipc_tx_slot(struct shm_ipc *ipc, fi_addr_t addr)
{
	size_t cnt, i;
	int *s;

	if (addr >= ipc->tx_sock_cnt) {
		cnt = ofi_roundup_pow2(addr + 1);
		s = realloc(ipc->tx_sock, cnt * sizeof(*s));
		if (!s)
			return NULL;
		for (i = ipc->tx_sock_cnt; i < cnt; i++)
			s[i] = -1;
		ipc->tx_sock = s;
		ipc->tx_sock_cnt = cnt;
	}
	return &ipc->tx_sock[addr];
}

/* Our connection to @p's IPC socket, made on first use. */
static int shm_ipc_connect(struct shm_ep *ep, struct shm_tx_peer *p,
			   fi_addr_t addr)
{
	struct shm_ipc_hello hello = {.id = p->id};
	struct sockaddr_un sa;
	socklen_t len;
	int *slot, fd;

	slot = shm_ipc_tx_slot(ep->ipc, addr);
	if (!slot)
		return -FI_ENOMEM;
	if (*slot >= 0)
		return *slot;
	/* Non-blocking: a full socket means "stream it", never a stall. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	shm_ipc_sock_name(p->rg->name, &sa, &len);
	if (connect(fd, (struct sockaddr *)&sa, len) ||
	    send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello)) {
		close(fd);
		return -FI_ECONNREFUSED;
	}
	*slot = fd;
	return fd;
}

/* Level Zero: the handle's fd goes to the receiver ahead of the command. */
static int shm_ipc_send_fd(struct shm_ep *ep, struct shm_tx_peer *p,
			   fi_addr_t addr, const void *handle, uint64_t msg_id)
{
	int sock, fd, ret;

	ret = ofi_hmem_handle_get_fd(FI_HMEM_ZE, handle, &fd);
	if (ret)
		return ret;
	sock = shm_ipc_connect(ep, p, addr);
	if (sock < 0) {
		ret = sock;
		goto out;
	}
	ret = ofi_hmem_send_fd(sock, fd, &msg_id, sizeof(msg_id));
	if (ret) {
		/* The stream may hold half a message now: start afresh. */
		close(sock);
		ep->ipc->tx_sock[addr] = -1;
	}
out:
	close(fd); /* our dup from the export; the peer has its own now */
	return ret;
}

int shm_ipc_send_prep(struct shm_ep *ep, struct shm_tx_peer *p, fi_addr_t addr,
		      struct shm_cmd *cmd, void *buf, enum fi_hmem_iface iface,
		      uint64_t device)
{
	size_t hsize = 0, bsize;
	uintptr_t start;
	void *base;
	int ret;

	ret = ofi_hmem_get_base_addr(iface, buf, cmd->size, &base, &bsize);
	if (ret)
		return ret;
	start = (uintptr_t)buf - (uintptr_t)base;
	if ((uintptr_t)buf < (uintptr_t)base || start > bsize ||
	    cmd->size > bsize - start)
		return -FI_EINVAL;
	ret = ofi_hmem_get_handle_size(iface, &hsize);
	if (ret || hsize > OFI_HMEM_MAX_HANDLE_SIZE)
		return ret ? ret : -FI_EINVAL;
	memset(cmd->u.ipc.handle, 0, sizeof(cmd->u.ipc.handle));
	ret = ofi_hmem_get_handle(iface, base, bsize, cmd->u.ipc.handle);
	if (ret)
		return ret;
	if (iface == FI_HMEM_ZE) {
		ret = shm_ipc_send_fd(ep, p, addr, cmd->u.ipc.handle,
				      cmd->msg_id);
		if (ret)
			return ret;
	}
	cmd->u.ipc.iface = iface;
	cmd->u.ipc.handle_size = (uint32_t)hsize;
	cmd->u.ipc.device = device;
	cmd->u.ipc.base = (uintptr_t)base;
	cmd->u.ipc.alloc_size = bsize;
	cmd->u.ipc.offset = start;
	cmd->proto = SHM_PROTO_IPC;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Receiver.                                                            */

bool shm_ipc_cmd_valid(const struct shm_cmd *hdr)
{
	return hdr->u.ipc.iface > FI_HMEM_SYSTEM &&
	       hdr->u.ipc.iface < OFI_HMEM_MAX &&
	       hdr->u.ipc.handle_size <= OFI_HMEM_MAX_HANDLE_SIZE &&
	       hdr->u.ipc.offset <= hdr->u.ipc.alloc_size &&
	       hdr->size <= hdr->u.ipc.alloc_size - hdr->u.ipc.offset;
}

static int shm_ipc_wait_ms(const struct timespec *end)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (end->tv_sec - now.tv_sec) * 1000 +
	     (end->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? (int)ms : 0;
}

/*
 * Takes one pending connection: a sender that proves (by its credentials)
 * to be the process in the peer slot it names.
 */
static void shm_ipc_accept_one(struct shm_ep *ep, struct shm_ipc *ipc)
{
	struct timeval tv = {.tv_sec = SHM_IPC_WAIT_MS / 1000};
	struct shm_ipc_hello hello;
	struct shm_rx_peer *p;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	fd = accept4(ipc->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    recv(fd, &hello, sizeof(hello), MSG_WAITALL) != sizeof(hello) ||
	    hello.id >= SHM_MAX_PEERS || cred.uid != geteuid())
		goto drop;
	p = shm_rx_peer_get(ep, (uint16_t)hello.id);
	if (!p || p->pid != cred.pid)
		goto drop;
	if (ipc->rx_sock[hello.id] >= 0)
		close(ipc->rx_sock[hello.id]);
	shm_ipc_drop_fds(ipc, hello.id);
	ipc->rx_sock[hello.id] = fd;
	return;
drop:
	FI_WARN(&shm_prov, FI_LOG_EP_DATA, "IPC connection refused\n");
	close(fd);
}

/* The fd sent for message @msg_id of sender @src_id. */
static int shm_ipc_take_fd(struct shm_ep *ep, uint16_t src_id, uint64_t msg_id,
			   int *fd)
{
	struct shm_ipc *ipc = ep->ipc;
	struct dlist_entry *item;
	struct shm_ipc_fd *f;
	struct timespec end;
	struct pollfd pfd;
	uint64_t id;
	int ret;

	dlist_foreach(&ipc->fd_stash, item)
	{
		f = container_of(item, struct shm_ipc_fd, entry);
		if (f->src_id == src_id && f->msg_id == msg_id) {
			*fd = f->fd;
			dlist_remove(&f->entry);
			free(f);
			return 0;
		}
	}
	if (ipc->listen_fd < 0)
		return -FI_ENOSYS;
	/* The sender connected and sent before it posted the command. */
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += SHM_IPC_WAIT_MS / 1000;
	while (ipc->rx_sock[src_id] < 0) {
		pfd.fd = ipc->listen_fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, shm_ipc_wait_ms(&end)) <= 0)
			return -FI_ETIMEDOUT;
		shm_ipc_accept_one(ep, ipc);
	}
	for (;;) {
		ret = ofi_hmem_recv_fd(ipc->rx_sock[src_id], fd, &id,
				       sizeof(id));
		if (ret || *fd < 0) {
			if (!ret)
				ret = -FI_EIO;
			close(ipc->rx_sock[src_id]);
			ipc->rx_sock[src_id] = -1;
			return ret;
		}
		if (id == msg_id)
			return 0;
		/* For a message still ahead of us in the ring. */
		f = calloc(1, sizeof(*f));
		if (!f) {
			close(*fd);
			continue;
		}
		f->src_id = src_id;
		f->msg_id = id;
		f->fd = *fd;
		dlist_insert_tail(&f->entry, &ipc->fd_stash);
	}
}

void shm_ipc_discard(struct shm_ep *ep, const struct shm_cmd *hdr,
		     uint16_t src_id)
{
	int fd;

	if (ep->ipc && hdr->u.ipc.iface == FI_HMEM_ZE &&
	    !shm_ipc_take_fd(ep, src_id, hdr->msg_id, &fd))
		close(fd);
}

/*
 * Maps the sender's buffer (cached) and copies @len bytes of it into the
 * receive at @off. SHM_ACK_NEED_SAR when it cannot be mapped here.
 */
int shm_ipc_read(struct shm_ep *ep, struct shm_rx *rx,
		 const struct shm_cmd *hdr, uint16_t src_id, size_t off,
		 size_t len)
{
	enum fi_hmem_iface iface = (enum fi_hmem_iface)hdr->u.ipc.iface;
	struct shm_ipc *ipc = ep->ipc;
	struct ofi_ipc_entry *entry;
	struct ofi_ipc_key key;
	void *mapped;
	ssize_t ret;
	int fd = -1;

	if (!ipc)
		return SHM_ACK_NEED_SAR;
	if (iface == FI_HMEM_ZE &&
	    shm_ipc_take_fd(ep, src_id, hdr->msg_id, &fd))
		return SHM_ACK_NEED_SAR;
	/* Copies cross one interface's engine: host or the same iface. */
	if (!ipc->enabled[iface] ||
	    (rx->iface != FI_HMEM_SYSTEM && rx->iface != iface)) {
		ret = SHM_ACK_NEED_SAR;
		goto out;
	}
	memset(&key, 0, sizeof(key));
	key.peer_id = shm_ipc_peer_id(src_id, ep->rx_peers[src_id].gen);
	key.iface = iface;
	key.device = rx->iface == iface ? rx->device : hdr->u.ipc.device;
	key.base = hdr->u.ipc.base;
	key.handle_size = hdr->u.ipc.handle_size;
	memcpy(key.handle, hdr->u.ipc.handle, key.handle_size);
	if (iface == FI_HMEM_ZE) /* a per-export fd: not part of the key */
		ofi_hmem_handle_set_fd(iface, key.handle, -1);
	shm_ipc_open_fd = fd;
	ret = ofi_ipc_cache_get(ipc->cache, &key, &mapped, &entry);
	shm_ipc_open_fd = -1;
	if (ret) {
		FI_INFO(&shm_prov, FI_LOG_EP_DATA,
			"IPC handle not mapped (%s): streaming instead\n",
			fi_strerror((int)-ret));
		ret = SHM_ACK_NEED_SAR;
		goto out;
	}
	ret = len ? ofi_copy_hmem_iov_dev_to_dev(
			    iface, key.device, rx->iov, rx->iov_count, off,
			    (char *)mapped + hdr->u.ipc.offset, len, true)
		  : 0;
	ofi_ipc_cache_put(ipc->cache, entry);
	if (ret >= 0)
		ret = (size_t)ret == len ? 0 : -FI_EIO;
out:
	if (fd >= 0)
		close(fd);
	return (int)ret;
}
