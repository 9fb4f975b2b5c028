/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_hmem_ipc.c - device memory (FI_HMEM) in the shm provider: which
 * interface a user buffer lives in, the parameters, the IPC-handle pool of
 * the region and the two device protocols built on it. Both send an
 * SHM_PROTO_IPC command that names (pool entry, generation, offset); the
 * receiver copies straight out of the sender's device memory and acks.
 *
 * The pool. Every region ends in SHM_IPC_POOL_SIZE entries, each the IPC
 * handle of one device allocation of the region's owner with its
 * interface, device, base and size. The owner publishes an entry once
 * (seqlock on its gen) and rewrites it only when no transfer in flight
 * names it; a receiver opens a handle once through the IPC handle cache
 * of src/hmem (key: sender, iface, device, base, claimed size, handle)
 * and keeps the mapping for later messages. Everything in an entry is
 * hostile: the receiver copies it out, checks the generation the command
 * names before and after the copy, the interface, the handle size against
 * its own driver's, and that [offset, offset + size) of the command lies
 * inside the claimed size; when it opens a handle it checks the claimed
 * size against the allocation the driver really mapped (a larger claim is
 * never cached). A failed check fails the receive with FI_EIO and acks
 * the error; no byte is copied.
 *
 * Direct IPC (device buffer, one iov, at least FI_SHM_IPC_THRESHOLD
 * bytes): the sender publishes the user buffer's allocation (found again
 * by base, size and handle bytes, so a freed and reused address is
 * republished, not mistaken) and the receiver copies from it.
 *
 * Device bounce buffers (device memory below the threshold, up to
 * SHM_BOUNCE_SLOT_SIZE): per endpoint and interface one device allocation
 * of SHM_BOUNCE_SLOTS slots, made with the HMEM alloc op on the first such
 * send and published in the pool. The sender copies device to device into
 * a free slot and posts the command; the receiver, which opened the
 * bounce buffer's handle once, copies device to device into the receive
 * buffer. No host memory is touched. A slot belongs to the transfer until
 * the receiver's ack: it is freed with the transfer, so a receiver that
 * dies or closes (its transfers fail with FI_EIO, unexpected messages are
 * discarded with an ack) never keeps one. FI_INJECT sends (the buffer is
 * the caller's again on return, the fallback below must not read it) and
 * sends finding no free slot take the host-staged paths.
 *
 * Copies: device to device (same interface) is never overridden. When the
 * receive buffer is host memory, the copy out of the mapped device memory
 * is a host<->device copy and goes through ofi_copy_from_hmem_iov() with
 * the domain's override, like every other.
 *
 * Lifetimes: the receiver copies only from a mapping it holds a cache
 * reference on, so a sender that frees, dies or closes never leaves it
 * reading unmapped memory (drivers keep an imported allocation alive
 * while it is mapped); a closed sender's commands are failed with FI_EIO
 * before any read (shm_recv.c). A sender's slot of our peer table that
 * changes hands drops its mappings and fds.
 *
 * Level Zero handles carry an fd that only means something in the
 * exporting process: the sender passes it over a Unix socket (SCM_RIGHTS)
 * to a listening socket every endpoint opens, named from its address,
 * once per receiver and pool entry generation; the receiver keeps it
 * until the sender goes and uses it whenever it (re)opens that entry.
 *
 * Fallback: whenever IPC cannot be used (FI_HMEM_DISABLE_P2P, no handle,
 * no bounce buffer, a peer in our own process, a receive buffer of
 * another interface, a handle the receiver cannot open) the host-staged
 * inline, inject and segmented paths of shm_send.c carry the message, with
 * the domain's copy routines.
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

#include "ofi_prov.h"
#include "shm.h"

#define SHM_IPC_THRESHOLD  (64 * 1024)
#define SHM_IPC_CACHE_SIZE 256
#define SHM_IPC_WAIT_MS	   2000 /* for a fd the sender sent before its cmd */
#define SHM_IPC_SOCK_FMT   "ofi_shm_ipc:%s"

/* A Level Zero fd a sender passed for pool entry (key >> 32), gen key. */
struct shm_ipc_fd {
	struct dlist_entry entry;
	uint16_t src_id;
	uint64_t key;
	int fd;
};

/* Sent on a new connection: which slot of our peer table the sender has. */
struct shm_ipc_hello {
	uint32_t id;
	uint32_t pad;
};

/* Our private copy of a pool entry we published. */
struct shm_ipc_pub {
	uint32_t gen;  /* as published, 0: free */
	uint32_t refs; /* transfers in flight that name it */
	bool bounce;   /* a bounce buffer: stays for the endpoint's life */
	enum fi_hmem_iface iface;
	uint64_t device;
	uintptr_t base;
	size_t size;
	size_t handle_size;
	uint8_t handle[OFI_HMEM_MAX_HANDLE_SIZE]; /* Level Zero: fd -1 */
	int fd;		/* Level Zero: ours, else -1 */
	uint64_t stamp; /* last use */
};

struct shm_bounce {
	void *buf;
	uint64_t device;
	uint32_t entry; /* in the pool */
	uint64_t free;	/* a bit per free slot */
	bool up;
	bool failed; /* allocation or export failed: host staging */
};

/* A receiver we send to (by fi_addr): socket, entry fds it holds. */
struct shm_ipc_tx {
	int sock;
	uint32_t fd_gen[SHM_IPC_POOL_SIZE];
};

struct shm_ipc {
	size_t threshold;
	pid_t pid;
	bool enabled[OFI_HMEM_MAX]; /* IPC allowed per interface */
	struct ofi_ipc_cache *cache;
	int listen_fd;		     /* -1 without Level Zero */
	int rx_sock[SHM_MAX_PEERS];  /* from senders, by their slot */
	struct dlist_entry fd_stash; /* struct shm_ipc_fd */
	struct shm_ipc_tx *tx;	     /* to receivers, by fi_addr */
	size_t tx_cnt;
	struct shm_region *rg; /* ours, where the pool lives */
	struct shm_ipc_pub pub[SHM_IPC_POOL_SIZE];
	uint64_t stamp;
	struct shm_bounce bounce[OFI_HMEM_MAX];
};

/* What the handle cache's open callback needs to know (receiver). */
struct shm_ipc_open_ctx {
	struct shm_ep *ep;
	uint16_t src_id;
	uint64_t fd_key;
	uint64_t want_size; /* the sender's claim, checked on open */
	bool lied;	    /* the claim exceeds the real mapping */
};

static __thread struct shm_ipc_open_ctx *shm_ipc_open_ctx;

static int shm_ipc_entry_fd(struct shm_ep *ep, uint16_t src_id, uint64_t key,
			    int *fd);

void shm_hmem_define_params(void)
{
	ofi_param_define_range(
		&shm_prov, "ipc_threshold", FI_PARAM_SIZE_T, 0, SIZE_MAX,
		"Device-memory messages of at least this many bytes "
		"are passed by device IPC: the receiver maps the "
		"sender's buffer and copies device to device; "
		"smaller ones (up to 64 KiB) go through the sender's "
		"device bounce buffers, device to device on both "
		"sides. FI_HMEM_DISABLE_P2P turns both off and stages "
		"device data through host buffers (default: %d)",
		SHM_IPC_THRESHOLD);
}

/*
 * Cache miss: maps a pool entry's handle (Level Zero: with the fd its
 * sender passed), then holds the sender's size claim against what the
 * driver mapped; a mapping smaller than claimed is closed, never cached.
 */
static int shm_ipc_open(enum fi_hmem_iface iface, void *handle, size_t size,
			uint64_t device, void **mapped)
{
	struct shm_ipc_open_ctx *c = shm_ipc_open_ctx;
	uint8_t h[OFI_HMEM_MAX_HANDLE_SIZE];
	size_t real_size = 0;
	void *real_base = NULL;
	int ret, fd = -1;

	if (!c || size > sizeof(h))
		return -FI_EINVAL;
	memcpy(h, handle, size);
	if (iface == FI_HMEM_ZE) {
		ret = shm_ipc_entry_fd(c->ep, c->src_id, c->fd_key, &fd);
		if (ret)
			return ret;
		ofi_hmem_handle_set_fd(iface, h, fd);
	}
	ret = ofi_hmem_open_handle(iface, h, size, device, mapped);
	if (fd >= 0)
		close(fd);
	if (ret)
		return ret;
	ret = ofi_hmem_get_base_addr(iface, *mapped, 1, &real_base, &real_size);
	if (ret || real_base != *mapped || real_size < c->want_size) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"peer claims %llu bytes for a mapping of %zu\n",
			(unsigned long long)c->want_size, real_size);
		ofi_hmem_close_handle(iface, *mapped);
		c->lied = true;
		return -FI_EINVAL;
	}
	return 0;
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
	ipc->rg = ep->rg;
	for (i = 0; i < SHM_MAX_PEERS; i++)
		ipc->rx_sock[i] = -1;
	for (i = 0; i < SHM_IPC_POOL_SIZE; i++)
		ipc->pub[i].fd = -1;
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

	dlist_foreach_safe(&ipc->fd_stash, item, tmp) {
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
	for (i = 0; i < ipc->tx_cnt; i++)
		if (ipc->tx[i].sock >= 0)
			close(ipc->tx[i].sock);
	if (ipc->listen_fd >= 0)
		close(ipc->listen_fd);
	for (i = 0; i < SHM_IPC_POOL_SIZE; i++)
		if (ipc->pub[i].fd >= 0)
			close(ipc->pub[i].fd);
	for (i = 0; i < OFI_HMEM_MAX; i++)
		if (ipc->bounce[i].up)
			ofi_hmem_free((enum fi_hmem_iface)i,
				      ipc->bounce[i].buf);
	free(ipc->tx);
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
/* Sender: the pool.                                                    */

/*
 * @addr left the AV: its connection may not serve the next owner, and the
 * fds it was given went with it.
 */
void shm_ipc_addr_removed(struct shm_ep *ep, fi_addr_t addr)
{
	struct shm_ipc *ipc = ep->ipc;
	struct shm_ipc_tx *t;

	if (!ipc || addr >= ipc->tx_cnt)
		return;
	t = &ipc->tx[addr];
	if (t->sock >= 0)
		close(t->sock);
	t->sock = -1;
	memset(t->fd_gen, 0, sizeof(t->fd_gen));
}

/* Writes entry @idx of our region's pool from our copy (seqlock). */
static void shm_ipc_publish(struct shm_ipc *ipc, uint32_t idx)
{
	struct shm_ipc_pool_entry *e = shm_ipc_pool(ipc->rg, idx);
	struct shm_ipc_pub *pub = &ipc->pub[idx];
	uint32_t gen = atomic_load_explicit(&e->gen, memory_order_relaxed);

	/* Never 0 (unpublished); even when stable. */
	gen = (gen | 1) + 1;
	atomic_store_explicit(&e->gen, gen - 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	e->iface = pub->iface;
	e->handle_size = (uint32_t)pub->handle_size;
	e->device = pub->device;
	e->base = pub->base;
	e->size = pub->size;
	memset(e->handle, 0, sizeof(e->handle));
	memcpy(e->handle, pub->handle, pub->handle_size);
	atomic_store_explicit(&e->gen, gen, memory_order_release);
	pub->gen = gen;
}

/* A pool entry to (re)use: a free one, else the least recently used. */
static int shm_ipc_pub_victim(struct shm_ipc *ipc)
{
	int i, best = -1;

	for (i = 0; i < SHM_IPC_POOL_SIZE; i++) {
		if (!ipc->pub[i].gen)
			return i;
		if (ipc->pub[i].bounce || ipc->pub[i].refs)
			continue;
		if (best < 0 || ipc->pub[i].stamp < ipc->pub[best].stamp)
			best = i;
	}
	return best;
}

/*
 * Publishes allocation [base, base + size) of @iface with handle @h (as
 * the driver gave it: Level Zero's carries a fresh fd we now own).
 */
static int shm_ipc_pub_add(struct shm_ipc *ipc, enum fi_hmem_iface iface,
			   uint64_t device, void *base, size_t size, uint8_t *h,
			   size_t hsize, bool bounce)
{
	struct shm_ipc_pub *pub;
	int idx, fd = -1;

	idx = shm_ipc_pub_victim(ipc);
	if (idx < 0)
		return -FI_EAGAIN;
	if (iface == FI_HMEM_ZE) {
		ofi_hmem_handle_get_fd(iface, h, &fd);
		ofi_hmem_handle_set_fd(iface, h, -1);
	}
	pub = &ipc->pub[idx];
	if (pub->fd >= 0)
		close(pub->fd);
	pub->fd = fd;
	pub->refs = 0;
	pub->bounce = bounce;
	pub->iface = iface;
	pub->device = device;
	pub->base = (uintptr_t)base;
	pub->size = size;
	pub->handle_size = hsize;
	memcpy(pub->handle, h, hsize);
	pub->stamp = ++ipc->stamp;
	shm_ipc_publish(ipc, (uint32_t)idx);
	return idx;
}

static int shm_ipc_export(enum fi_hmem_iface iface, void *base, size_t size,
			  uint8_t *h, size_t *hsize)
{
	int ret;

	ret = ofi_hmem_get_handle_size(iface, hsize);
	if (ret || *hsize > OFI_HMEM_MAX_HANDLE_SIZE)
		return ret ? ret : -FI_EINVAL;
	memset(h, 0, OFI_HMEM_MAX_HANDLE_SIZE);
	return ofi_hmem_get_handle(iface, base, size, h);
}

/*
 * The pool entry of the allocation holding [buf, buf + len). The handle is
 * asked for on every send: an address freed and allocated again gets
 * another handle, and so another entry, never the stale one.
 */
static int shm_ipc_pub_find(struct shm_ipc *ipc, enum fi_hmem_iface iface,
			    uint64_t device, void *buf, size_t len,
			    uint64_t *off)
{
	uint8_t h[OFI_HMEM_MAX_HANDLE_SIZE], key[OFI_HMEM_MAX_HANDLE_SIZE];
	struct shm_ipc_pub *pub;
	size_t bsize, hsize;
	void *base;
	int i, ret, fd = -1;

	ret = ofi_hmem_get_base_addr(iface, buf, len, &base, &bsize);
	if (ret)
		return ret;
	if ((uintptr_t)buf < (uintptr_t)base ||
	    (uintptr_t)buf - (uintptr_t)base > bsize ||
	    len > bsize - ((uintptr_t)buf - (uintptr_t)base))
		return -FI_EINVAL;
	*off = (uintptr_t)buf - (uintptr_t)base;
	ret = shm_ipc_export(iface, base, bsize, h, &hsize);
	if (ret)
		return ret;
	memcpy(key, h, hsize);
	if (iface == FI_HMEM_ZE) {
		ofi_hmem_handle_get_fd(iface, h, &fd);
		ofi_hmem_handle_set_fd(iface, key, -1);
	}
	for (i = 0; i < SHM_IPC_POOL_SIZE; i++) {
		pub = &ipc->pub[i];
		if (!pub->gen || pub->bounce || pub->iface != iface ||
		    pub->base != (uintptr_t)base || pub->size != bsize ||
		    pub->handle_size != hsize ||
		    memcmp(pub->handle, key, hsize))
			continue;
		if (fd >= 0)
			close(fd);
		pub->stamp = ++ipc->stamp;
		return i;
	}
	ret = shm_ipc_pub_add(ipc, iface, device, base, bsize, h, hsize, false);
	if (ret < 0 && fd >= 0)
		close(fd);
	return ret;
}

static struct shm_ipc_tx *shm_ipc_tx_slot(struct shm_ipc *ipc, fi_addr_t addr)
{
	struct shm_ipc_tx *t;
	size_t cnt, i;

	if (addr >= ipc->tx_cnt) {
		cnt = ofi_roundup_pow2(addr + 1);
		t = realloc(ipc->tx, cnt * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + ipc->tx_cnt, 0, (cnt - ipc->tx_cnt) * sizeof(*t));
		for (i = ipc->tx_cnt; i < cnt; i++)
			t[i].sock = -1;
		ipc->tx = t;
		ipc->tx_cnt = cnt;
	}
	return &ipc->tx[addr];
}

/* Our connection to @p's IPC socket, made on first use. */
static int shm_ipc_connect(struct shm_tx_peer *p, struct shm_ipc_tx *t)
{
	struct shm_ipc_hello hello = {.id = p->id};
	struct sockaddr_un sa;
	socklen_t len;
	int fd;

	if (t->sock >= 0)
		return t->sock;
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
	/* A new connection: the receiver holds none of our fds. */
	memset(t->fd_gen, 0, sizeof(t->fd_gen));
	t->sock = fd;
	return fd;
}

/* Level Zero: the receiver gets entry @idx's fd once per generation. */
static int shm_ipc_pass_fd(struct shm_ep *ep, struct shm_tx_peer *p,
			   fi_addr_t addr, uint32_t idx)
{
	struct shm_ipc_pub *pub = &ep->ipc->pub[idx];
	uint64_t key = (uint64_t)idx << 32 | pub->gen;
	struct shm_ipc_tx *t;
	int sock, ret;

	if (pub->iface != FI_HMEM_ZE)
		return 0;
	t = shm_ipc_tx_slot(ep->ipc, addr);
	if (!t)
		return -FI_ENOMEM;
	if (t->sock >= 0 && t->fd_gen[idx] == pub->gen)
		return 0;
	sock = shm_ipc_connect(p, t);
	if (sock < 0)
		return sock;
	ret = ofi_hmem_send_fd(sock, pub->fd, &key, sizeof(key));
	if (ret) {
		/* The stream may hold half a message now: start afresh. */
		close(sock);
		t->sock = -1;
		return ret;
	}
	t->fd_gen[idx] = pub->gen;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sender: protocol choice and preparation.                             */

static bool shm_ipc_usable(struct shm_ipc *ipc, const struct shm_tx_peer *p,
			   enum fi_hmem_iface iface)
{
	/* Drivers refuse to import their own process's handles. */
	return ipc && iface != FI_HMEM_SYSTEM &&
	       (unsigned)iface < OFI_HMEM_MAX && ipc->enabled[iface] &&
	       p->pid != ipc->pid;
}

bool shm_ipc_wanted(struct shm_ep *ep, const struct shm_tx_peer *p,
		    enum fi_hmem_iface iface, size_t count, size_t size)
{
	return shm_ipc_usable(ep->ipc, p, iface) && count == 1 &&
	       size >= ep->ipc->threshold;
}

/* Allocates and publishes @iface's bounce buffer on its first use. */
static bool shm_ipc_bounce_up(struct shm_ipc *ipc, enum fi_hmem_iface iface,
			      uint64_t device)
{
	struct shm_bounce *b = &ipc->bounce[iface];
	size_t size = (size_t)SHM_BOUNCE_SLOTS * SHM_BOUNCE_SLOT_SIZE, hsize;
	uint8_t h[OFI_HMEM_MAX_HANDLE_SIZE];
	int ret, idx;

	if (b->up || b->failed)
		return b->up;
	ret = ofi_hmem_alloc(iface, device, &b->buf, size);
	if (ret)
		goto fail;
	ret = shm_ipc_export(iface, b->buf, size, h, &hsize);
	idx = ret ? ret
		  : shm_ipc_pub_add(ipc, iface, device, b->buf, size, h, hsize,
				    true);
	if (idx < 0) {
		ret = idx;
		ofi_hmem_free(iface, b->buf);
		goto fail;
	}
	b->entry = (uint32_t)idx;
	b->device = device;
	b->free =
		SHM_BOUNCE_SLOTS == 64 ? ~0ULL : (1ULL << SHM_BOUNCE_SLOTS) - 1;
	b->up = true;
	return true;
fail:
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"no %s bounce buffer (%s): device messages below the IPC "
		"threshold are staged through host memory\n",
		ofi_hmem_iface_name(iface), fi_strerror(-ret));
	b->failed = true;
	return false;
}

bool shm_ipc_bounce_wanted(struct shm_ep *ep, const struct shm_tx_peer *p,
			   enum fi_hmem_iface iface, uint64_t device,
			   size_t size, uint64_t op_flags, bool nocomp)
{
	struct shm_ipc *ipc = ep->ipc;

	if (!shm_ipc_usable(ipc, p, iface) || size >= ipc->threshold ||
	    size > SHM_BOUNCE_SLOT_SIZE || nocomp || (op_flags & FI_INJECT))
		return false;
	return shm_ipc_bounce_up(ipc, iface, device) && ipc->bounce[iface].free;
}

/* Copies the message device to device into a free bounce slot. */
static int shm_ipc_bounce_fill(struct shm_ipc *ipc, struct shm_tx *tx,
			       uint64_t *off)
{
	struct shm_bounce *b = &ipc->bounce[tx->iface];
	uint32_t slot;
	uint8_t *dst;
	ssize_t ret;

	if (!b->up || !b->free || tx->size > SHM_BOUNCE_SLOT_SIZE)
		return -FI_EAGAIN;
	slot = (uint32_t)__builtin_ctzll(b->free);
	dst = (uint8_t *)b->buf + (size_t)slot * SHM_BOUNCE_SLOT_SIZE;
	ret = tx->size ? ofi_copy_hmem_iov_dev_to_dev(tx->iface, tx->device,
						      tx->iov, tx->iov_count, 0,
						      dst, tx->size, false)
		       : 0;
	if (ret < 0)
		return (int)ret;
	if ((size_t)ret != tx->size)
		return -FI_EIO;
	b->free &= ~(1ULL << slot);
	tx->ipc_slot = slot + 1;
	/* Should the receiver ask us to stream, we stream from the slot. */
	tx->iov[0].iov_base = dst;
	tx->iov[0].iov_len = tx->size;
	tx->iov_count = 1;
	tx->device = b->device;
	*off = (uint64_t)slot * SHM_BOUNCE_SLOT_SIZE;
	return (int)b->entry;
}

int shm_ipc_send_prep(struct shm_ep *ep, struct shm_tx_peer *p, fi_addr_t addr,
		      struct shm_cmd *cmd, struct shm_tx *tx)
{
	struct shm_ipc *ipc = ep->ipc;
	uint64_t off = 0;
	int idx, ret;

	if (shm_ipc_wanted(ep, p, tx->iface, tx->iov_count, tx->size))
		idx = shm_ipc_pub_find(ipc, tx->iface, tx->device,
				       tx->iov[0].iov_base, tx->size, &off);
	else
		idx = shm_ipc_bounce_fill(ipc, tx, &off);
	if (idx < 0)
		return idx;
	/* On failure a filled slot stays the transfer's: it streams from it. */
	ret = shm_ipc_pass_fd(ep, p, addr, (uint32_t)idx);
	if (ret)
		return ret;
	ipc->pub[idx].refs++;
	tx->ipc_entry = (uint32_t)idx + 1;
	cmd->u.ipc.entry = (uint32_t)idx;
	cmd->u.ipc.gen = ipc->pub[idx].gen;
	cmd->u.ipc.offset = off;
	cmd->proto = SHM_PROTO_IPC;
	return 0;
}

/* The transfer is over (acked, streamed or failed): slot and entry go. */
void shm_ipc_tx_release(struct shm_ep *ep, struct shm_tx *tx)
{
	struct shm_ipc *ipc = ep->ipc;
	struct shm_ipc_pub *pub;

	if (tx->ipc_slot && ipc && ipc->bounce[tx->iface].up)
		ipc->bounce[tx->iface].free |= 1ULL << (tx->ipc_slot - 1);
	if (tx->ipc_entry && ipc) {
		pub = &ipc->pub[tx->ipc_entry - 1];
		if (pub->refs)
			pub->refs--;
	}
	tx->ipc_slot = 0;
	tx->ipc_entry = 0;
}

/* ------------------------------------------------------------------ */
/* Receiver.                                                            */

/* What can be checked before the pool entry is read. */
bool shm_ipc_cmd_valid(const struct shm_cmd *hdr)
{
	return hdr->u.ipc.entry < SHM_IPC_POOL_SIZE && hdr->u.ipc.gen &&
	       !(hdr->u.ipc.gen & 1) &&
	       hdr->u.ipc.offset <= UINT64_MAX - hdr->size;
}

/*
 * Copies entry @idx of a peer's pool into @e, stable and of generation
 * @gen; false for a torn, rewritten or never published entry.
 */
static bool shm_ipc_entry_read(struct shm_region *rg, uint32_t idx,
			       uint32_t gen, struct shm_ipc_pool_entry *e)
{
	struct shm_ipc_pool_entry *src = shm_ipc_pool(rg, idx);
	uint32_t g1, g2;

	g1 = atomic_load_explicit(&src->gen, memory_order_acquire);
	memcpy((uint8_t *)e + sizeof(e->gen), (uint8_t *)src + sizeof(e->gen),
	       sizeof(*e) - sizeof(e->gen));
	atomic_thread_fence(memory_order_acquire);
	g2 = atomic_load_explicit(&src->gen, memory_order_relaxed);
	return g1 == gen && g2 == gen;
}

/* Every field of a copied entry, and the command's range inside it. */
static int shm_ipc_entry_valid(const struct shm_ipc_pool_entry *e,
			       const struct shm_cmd *hdr)
{
	size_t hsize = 0;

	if (e->iface <= FI_HMEM_SYSTEM || e->iface >= OFI_HMEM_MAX)
		return -FI_EIO;
	if (ofi_hmem_get_handle_size((enum fi_hmem_iface)e->iface, &hsize))
		return SHM_ACK_NEED_SAR; /* not an interface we can map */
	if (e->handle_size != hsize || hsize > OFI_HMEM_MAX_HANDLE_SIZE ||
	    !e->size || hdr->u.ipc.offset > e->size ||
	    hdr->size > e->size - hdr->u.ipc.offset)
		return -FI_EIO;
	return 0;
}

/* Device memory @src (mapped) into a host receive: through the override. */
static ssize_t shm_ipc_copy_to_host(struct shm_ep *ep, struct ofi_rx_buf *rx,
				    enum fi_hmem_iface iface, uint64_t device,
				    size_t off, uint8_t *src, size_t len)
{
	struct iovec host[OFI_RX_IOV_MAX], dev;
	size_t i, n, done = 0;
	ssize_t ret;

	n = ofi_rx_buf_iov(rx, off, len, host, OFI_RX_IOV_MAX);
	for (i = 0; i < n; i++) {
		dev.iov_base = src + done;
		dev.iov_len = host[i].iov_len;
		ret = shm_copy_from(ep, host[i].iov_base, host[i].iov_len,
				    iface, device, &dev, 1, 0);
		if (ret < 0)
			return ret;
		done += host[i].iov_len;
	}
	return (ssize_t)done;
}

/*
 * Maps the sender's pool entry (cached) and copies @len bytes of the
 * message into the receive at @off. SHM_ACK_NEED_SAR when it cannot be
 * mapped here; -FI_EIO for an entry or range that does not hold.
 */
int shm_ipc_read(struct shm_ep *ep, struct ofi_rx_buf *rx,
		 const struct shm_cmd *hdr, uint16_t src_id, size_t off,
		 size_t len)
{
	struct shm_ipc_open_ctx ctx = {.ep = ep, .src_id = src_id};
	struct shm_rx_peer *p = &ep->rx_peers[src_id];
	struct shm_ipc *ipc = ep->ipc;
	struct shm_ipc_pool_entry e;
	struct ofi_ipc_entry *entry;
	enum fi_hmem_iface iface;
	struct ofi_ipc_key key;
	uint8_t *src;
	void *mapped;
	ssize_t ret;

	if (!ipc)
		return SHM_ACK_NEED_SAR;
	if (!p->rg ||
	    !shm_ipc_entry_read(p->rg, hdr->u.ipc.entry, hdr->u.ipc.gen, &e))
		return -FI_EIO;
	ret = shm_ipc_entry_valid(&e, hdr);
	if (ret)
		return (int)ret;
	iface = (enum fi_hmem_iface)e.iface;
	/* Copies cross one interface's engine: host or the same iface. */
	if (!ipc->enabled[iface] ||
	    (rx->iface != FI_HMEM_SYSTEM && rx->iface != iface))
		return SHM_ACK_NEED_SAR;
	memset(&key, 0, sizeof(key));
	key.peer_id = shm_ipc_peer_id(src_id, p->gen);
	key.iface = iface;
	key.device = rx->iface == iface ? rx->device : e.device;
	key.base = e.base;
	key.size = e.size;
	key.handle_size = e.handle_size;
	memcpy(key.handle, e.handle, key.handle_size);
	ctx.fd_key = (uint64_t)hdr->u.ipc.entry << 32 | hdr->u.ipc.gen;
	ctx.want_size = e.size;
	shm_ipc_open_ctx = &ctx;
	ret = ofi_ipc_cache_get(ipc->cache, &key, &mapped, &entry);
	shm_ipc_open_ctx = NULL;
	if (ctx.lied)
		return -FI_EIO;
	if (ret) {
		FI_INFO(&shm_prov, FI_LOG_EP_DATA,
			"IPC handle not mapped (%s): streaming instead\n",
			fi_strerror((int)-ret));
		return SHM_ACK_NEED_SAR;
	}
	src = (uint8_t *)mapped + hdr->u.ipc.offset;
	if (!len)
		ret = 0;
	else if (rx->iface == iface)
		ret = ofi_copy_hmem_iov_dev_to_dev(iface, key.device, rx->iov,
						   rx->iov_count, off, src, len,
						   true);
	else
		ret = shm_ipc_copy_to_host(ep, rx, iface, key.device, off, src,
					   len);
	ofi_ipc_cache_put(ipc->cache, entry);
	if (ret >= 0)
		ret = (size_t)ret == len ? 0 : -FI_EIO;
	return (int)ret;
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

/* Keeps @fd for entry (key >> 32) of @src_id, replacing an older gen. */
static struct shm_ipc_fd *shm_ipc_stash(struct shm_ipc *ipc, uint16_t src_id,
					uint64_t key, int fd)
{
	struct dlist_entry *item, *tmp;
	struct shm_ipc_fd *f;

	dlist_foreach_safe(&ipc->fd_stash, item, tmp) {
		f = container_of(item, struct shm_ipc_fd, entry);
		if (f->src_id == src_id && f->key >> 32 == key >> 32) {
			dlist_remove(&f->entry);
			close(f->fd);
			free(f);
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return NULL;
	}
	f->src_id = src_id;
	f->key = key;
	f->fd = fd;
	dlist_insert_tail(&f->entry, &ipc->fd_stash);
	return f;
}

static int shm_ipc_dup(int fd, int *out)
{
	*out = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return *out < 0 ? -errno : 0;
}

/*
 * A copy of the fd sender @src_id passed for pool entry and generation
 * @key, read from its socket when it is not here yet (it was sent before
 * the command that needs it).
 */
static int shm_ipc_entry_fd(struct shm_ep *ep, uint16_t src_id, uint64_t key,
			    int *fd)
{
	struct shm_ipc *ipc = ep->ipc;
	struct dlist_entry *item;
	struct shm_ipc_fd *f;
	struct timespec end;
	struct pollfd pfd;
	uint64_t id;
	int ret, nfd;

	dlist_foreach(&ipc->fd_stash, item) {
		f = container_of(item, struct shm_ipc_fd, entry);
		if (f->src_id == src_id && f->key == key)
			return shm_ipc_dup(f->fd, fd);
	}
	if (ipc->listen_fd < 0)
		return -FI_ENOSYS;
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
		ret = ofi_hmem_recv_fd(ipc->rx_sock[src_id], &nfd, &id,
				       sizeof(id));
		if (ret || nfd < 0) {
			if (!ret)
				ret = -FI_EIO;
			close(ipc->rx_sock[src_id]);
			ipc->rx_sock[src_id] = -1;
			return ret;
		}
		if (id >> 32 >= SHM_IPC_POOL_SIZE) {
			close(nfd);
			continue;
		}
		f = shm_ipc_stash(ipc, src_id, id, nfd);
		if (f && id == key)
			return shm_ipc_dup(f->fd, fd);
	}
}
