/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_ep.c - the shm endpoint object: opening it creates the endpoint's
 * shared region and its pools of transmit and receive entries; getname,
 * enable, close and the mapping of peers on first contact in either
 * direction.
 *
 * Close keeps what it sent deliverable: a send completes when its command
 * is in the peer's ring, so for every live peer that has not yet consumed
 * our last command we leave our slot in its table SHM_PEER_CLOSED and our
 * region behind under a linger name; that receiver frees the slot once its
 * ring is past our commands (shm_rx_peer_release) and the last one unlinks
 * the region. Peers that consumed everything get their slot back at once.
 *
 * Address reuse: per-address state (tx_peers by fi_addr, the AV indices
 * cached per sender) is invalidated in one place, shm_av_sync(), fed by
 * the AV's removal callback. A removed address's connection is retired
 * like a closed one: its slot in the peer's table is freed once the peer
 * read what we posted, so our commands are never taken for the next
 * owner's. Symmetrically, when a sender's slot in our table changes hands,
 * what the old sender left queued here is relabelled SHM_ORPHAN_ID.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ofi_coll.h"
#include "ofi_trigger.h"
#include "shm.h"

static _Atomic uint32_t shm_ep_counter;

int shm_make_name(char *buf, size_t len)
{
	int n = snprintf(buf, len, SHM_ADDR_PREFIX "%d:%u", (int)getpid(),
			 atomic_fetch_add(&shm_ep_counter, 1));

	return n < 0 || (size_t)n >= len ? -FI_EINVAL : 0;
}

/*
 * fi_shm://<our pid>, the source fi_getinfo gives by default (shm_init.c):
 * an endpoint opened with it picks its own name under it.
 */
static bool shm_default_src(const char *name)
{
	char def[SHM_NAME_MAX];

	snprintf(def, sizeof(def), SHM_ADDR_PREFIX "%d", (int)getpid());
	return !strcmp(name, def);
}

/*
 * Our slot in a peer's table: free ones first, then ones of senders that
 * died without closing, once the peer has consumed all they posted (their
 * commands must not be taken for ours).
 */
static int shm_claim_slot(struct shm_region *rg, const char *name, uint16_t *id,
			  uint32_t *gen)
{
	struct shm_peer_slot *s;
	uint32_t i, exp, pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < SHM_MAX_PEERS; i++) {
			s = shm_peer_slot(rg, i);
			exp = pass ? SHM_PEER_READY : SHM_PEER_FREE;
			if (atomic_load(&s->state) != exp)
				continue;
			if (pass &&
			    (shm_pid_alive(s->pid) ||
			     !shm_ring_consumed(shm_cmd_ring(rg), s->last_pos)))
				continue;
			if (!atomic_compare_exchange_strong(&s->state, &exp,
							    SHM_PEER_BUSY))
				continue;
			s->pid = getpid();
			snprintf(s->name, sizeof(s->name), "%s", name);
			s->last_pos = 0;
			s->linger[0] = '\0';
			atomic_store(&s->sar_chan, 0);
			*gen = atomic_fetch_add(&s->gen, 1) + 1;
			atomic_store_explicit(&s->state, SHM_PEER_READY,
					      memory_order_release);
			*id = i;
			return 0;
		}
	}
	return -FI_ENOSPC;
}

/* Whether a transfer still in flight names @addr (FI_ADDR_UNSPEC: any
 * peer). */
static bool shm_tx_busy(struct shm_ep *ep, fi_addr_t addr)
{
	struct dlist_entry *lists[] = {&ep->cma_list, &ep->sar_queue,
				       &ep->rma_list};
	struct dlist_entry *item;
	size_t i;

	if (shm_sar_tx_busy(ep, addr))
		return true;
	for (i = 0; i < OFI_ARRAY_SIZE(lists); i++) {
		dlist_foreach(lists[i], item) {
			if (addr == FI_ADDR_UNSPEC ||
			    container_of(item, struct shm_tx, entry)->addr ==
				    addr)
				return true;
		}
	}
	return false;
}

/* FI_FENCE (util_trigger.c, and a tcp owner's fence): any transfer of
 * the endpoint not yet complete. */
static bool shm_util_tx_busy(struct util_ep *util)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);
	bool busy;

	shm_ep_lock(ep);
	busy = shm_tx_busy(ep, FI_ADDR_UNSPEC);
	shm_ep_unlock(ep);
	return busy;
}

/* Whether the slot @p names in its peer's table is still this endpoint's. */
static bool shm_slot_ours(struct shm_ep *ep, struct shm_tx_peer *p)
{
	struct shm_peer_slot *s = p->slot;

	return s && s->pid == getpid() &&
	       !strncmp(s->name, ep->name, SHM_NAME_MAX) &&
	       atomic_load(&s->state) == SHM_PEER_READY;
}

/* Whether @p still has to read commands we posted to it. */
static bool shm_tx_peer_unread(struct shm_ep *ep, struct shm_tx_peer *p)
{
	return p->rg && !p->dead && shm_slot_ours(ep, p) &&
	       !shm_ring_consumed(shm_cmd_ring(p->rg), p->slot->last_pos) &&
	       shm_pid_alive(p->pid);
}

/*
 * Takes back the inject buffers connection @conn was handed: its receiver
 * died or closed, after its last look at them, and frees them no more.
 */
static void shm_inject_reclaim(struct shm_ep *ep, uint32_t conn)
{
	uint32_t i;

	for (i = 0; i < SHM_INJECT_BUFS; i++) {
		if (ep->inject_owner[i] != conn)
			continue;
		ep->inject_owner[i] = 0;
		atomic_store_explicit(&shm_inject_buf(ep->rg, i)->busy, 0,
				      memory_order_release);
	}
}

/*
 * Whether receiver @p may still read what we send it. Not when its
 * process died, nor when it closed its endpoint (rx_closed in its header,
 * set after its last progress): then it is marked dead, for good, and the
 * inject buffers it held are ours again. The flag is the peer's word: one
 * that fakes it only fails our transfers to it.
 */
bool shm_tx_peer_live(struct shm_ep *ep, struct shm_tx_peer *p)
{
	if (!p->rg || p->dead)
		return !p->dead;
	if (!atomic_load_explicit(&shm_hdr(p->rg)->rx_closed,
				  memory_order_acquire) &&
	    shm_pid_alive(p->pid))
		return true;
	p->dead = true;
	if (p->conn)
		shm_inject_reclaim(ep, p->conn);
	return false;
}

/*
 * Our inject buffers ran out: those held by receivers that are gone come
 * back. Only connections holding some are looked at.
 */
void shm_tx_peers_check(struct shm_ep *ep)
{
	uint32_t held[SHM_INJECT_BUFS], n = 0, i, k;
	struct shm_tx_peer *p;
	size_t j;

	ep->inject_starved = false;
	for (i = 0; i < SHM_INJECT_BUFS; i++) {
		if (!ep->inject_owner[i] ||
		    !atomic_load_explicit(&shm_inject_buf(ep->rg, i)->busy,
					  memory_order_relaxed))
			continue;
		for (k = 0; k < n && held[k] != ep->inject_owner[i]; k++)
			;
		if (k == n)
			held[n++] = ep->inject_owner[i];
	}
	for (j = 0; n && j < ep->tx_peer_cnt + ep->retired_cnt; j++) {
		p = j < ep->tx_peer_cnt ? &ep->tx_peers[j]
					: &ep->retired[j - ep->tx_peer_cnt];
		for (k = 0; k < n && held[k] != p->conn; k++)
			;
		if (k < n && p->rg)
			shm_tx_peer_live(ep, p);
	}
}

/* Gives our slot in @p's table back and drops the mapping. */
static void shm_tx_peer_drop(struct shm_ep *ep, struct shm_tx_peer *p)
{
	/* A receiver that is gone leaves our buffers to us. */
	shm_tx_peer_live(ep, p);
	if (shm_slot_ours(ep, p))
		atomic_store(&p->slot->state, SHM_PEER_FREE);
	shm_region_unmap(p->rg);
	memset(p, 0, sizeof(*p));
}

/* Retired connections whose peer read everything are let go. */
static void shm_reap_retired(struct shm_ep *ep)
{
	size_t i = 0;

	while (i < ep->retired_cnt) {
		if (shm_tx_peer_unread(ep, &ep->retired[i])) {
			i++;
			continue;
		}
		shm_tx_peer_drop(ep, &ep->retired[i]);
		ep->retired[i] = ep->retired[--ep->retired_cnt];
	}
}

/*
 * @addr left the AV: its connection must not serve the next owner of the
 * fi_addr. In-flight transfers keep it until they finish (-FI_EAGAIN for
 * new sends meanwhile); a peer still to read us keeps our slot, retired.
 */
static int shm_tx_peer_forget(struct shm_ep *ep, fi_addr_t addr)
{
	struct shm_tx_peer *p, *r;

	if (addr >= ep->tx_peer_cnt)
		return 0;
	p = &ep->tx_peers[addr];
	if (!p->rg) {
		memset(p, 0, sizeof(*p));
		return 0;
	}
	if (shm_tx_busy(ep, addr)) {
		p->stale = true;
		return -FI_EAGAIN;
	}
	shm_ipc_addr_removed(ep, addr);
	if (shm_tx_peer_unread(ep, p)) {
		r = realloc(ep->retired, (ep->retired_cnt + 1) * sizeof(*r));
		if (r) {
			ep->retired = r;
			r[ep->retired_cnt++] = *p;
			r[ep->retired_cnt - 1].stale = false;
			memset(p, 0, sizeof(*p));
			return 0;
		}
		/* Untracked, our slot stays taken: never reused under us. */
		shm_region_unmap(p->rg);
		memset(p, 0, sizeof(*p));
		return 0;
	}
	shm_tx_peer_drop(ep, p);
	return 0;
}

/*
 * The AV's removal callback: runs under the AV lock, where our endpoint
 * lock may not be taken (the data path holds it while calling the AV).
 */
void shm_av_removed(struct util_ep *util_ep, fi_addr_t addr)
{
	struct shm_ep *ep = container_of(util_ep, struct shm_ep, util);
	size_t cap;
	fi_addr_t *a;

	ofi_mutex_lock(&ep->av_lock);
	if (ep->av_removed_cnt == ep->av_removed_cap) {
		cap = ep->av_removed_cap ? 2 * ep->av_removed_cap : 16;
		a = realloc(ep->av_removed, cap * sizeof(*a));
		if (a) {
			ep->av_removed = a;
			ep->av_removed_cap = cap;
		}
	}
	if (ep->av_removed_cnt < ep->av_removed_cap)
		ep->av_removed[ep->av_removed_cnt++] = addr;
	else
		ep->av_overflow = true;
	atomic_store_explicit(&ep->av_dirty, 1, memory_order_release);
	ofi_mutex_unlock(&ep->av_lock);
}

static const struct ofi_av_ep_ops shm_av_ep_ops = {
	.removed = shm_av_removed,
};

/* Applies recorded AV removals; under the endpoint lock. */
/* Forgets the sender address an unexpected message had cached. */
static void shm_unexp_unresolve(struct ofi_unexp_msg *um, void *arg)
{
	if (shm_unexp_of(arg, um))
		um->addr = FI_ADDR_NOTAVAIL;
}

void shm_av_sync(struct shm_ep *ep)
{
	bool all;
	fi_addr_t *list;
	size_t i, n;

	ofi_mutex_lock(&ep->av_lock);
	atomic_store_explicit(&ep->av_dirty, 0, memory_order_relaxed);
	list = ep->av_removed;
	n = ep->av_removed_cnt;
	all = ep->av_overflow;
	ep->av_removed = NULL;
	ep->av_removed_cnt = ep->av_removed_cap = 0;
	ep->av_overflow = false;
	ofi_mutex_unlock(&ep->av_lock);

	/* Senders' cached AV indices are looked up again when needed. */
	for (i = 0; i <= SHM_MAX_PEERS; i++) {
		ep->rx_peers[i].addr = FI_ADDR_NOTAVAIL;
		ep->rx_peers[i].src_addr = FI_ADDR_NOTAVAIL;
	}
	if (all) {
		for (i = 0; i < ep->tx_peer_cnt; i++)
			shm_tx_peer_forget(ep, i);
		ofi_match_unexp_foreach(ep->mq, shm_unexp_unresolve, ep)
			;
	}
	for (i = 0; i < n; i++) {
		shm_tx_peer_forget(ep, list[i]);
		ofi_match_addr_removed(ep->mq, list[i]);
	}
	free(list);
	if (ep->retired_cnt)
		shm_reap_retired(ep);
}

/* First contact with @addr: map its region and register with it. */
/*
 * First contact with a name whose region is not there while its owner
 * lives: being created, or closed for good, and nothing tells them apart.
 * Addresses reach peers after their endpoint was enabled, so a region
 * still missing after SHM_CONNECT_WAIT_NS is taken as closed: -FI_EIO
 * rather than -FI_EAGAIN for ever. Found later, it is used.
 */
#define SHM_CONNECT_WAIT_NS (3000 * 1000000ULL)

static int shm_tx_peer_missing(struct shm_tx_peer *p)
{
	uint64_t now = shm_now_ns();

	if (!p->missing_since) {
		p->missing_since = now;
		return -FI_EAGAIN;
	}
	return now - p->missing_since < SHM_CONNECT_WAIT_NS ? -FI_EAGAIN
							    : -FI_EIO;
}

int shm_tx_peer_connect(struct shm_ep *ep, fi_addr_t addr,
			struct shm_tx_peer **out)
{
	char name[SHM_NAME_MAX];
	struct shm_tx_peer *p;
	size_t cnt;
	int ret;

	if (!ep->util.av && !ep->owner)
		return -FI_EINVAL;
	if (addr >= ep->tx_peer_cnt) {
		if (addr >= (1ULL << 24))
			return -FI_EINVAL;
		cnt = ofi_roundup_pow2(addr + 1);
		if (cnt < 64)
			cnt = 64;
		p = realloc(ep->tx_peers, cnt * sizeof(*p));
		if (!p)
			return -FI_ENOMEM;
		memset(p + ep->tx_peer_cnt, 0,
		       (cnt - ep->tx_peer_cnt) * sizeof(*p));
		ep->tx_peers = p;
		ep->tx_peer_cnt = cnt;
	}
	p = &ep->tx_peers[addr];
	if (OFI_UNLIKELY(p->stale)) {
		ret = shm_tx_peer_forget(ep, addr);
		if (ret)
			return ret;
	}
	if (p->rg) {
		*out = p;
		return 0;
	}
	if (p->dead)
		return -FI_EIO;
	if (ep->retired_cnt)
		shm_reap_retired(ep);
	ret = ep->owner ? ep->owner->addr_name(ep->owner->ctx, addr, name)
			: ofi_av_get_addr(ep->util.av, addr, name);
	if (ret)
		return -FI_EINVAL;
	name[SHM_NAME_MAX - 1] = '\0';
	ret = shm_region_map(name, &p->rg);
	if (ret == -FI_EAGAIN)
		return shm_tx_peer_missing(p);
	if (ret)
		return ret;
	p->missing_since = 0;
	/* A closed endpoint's region lingering under its address. */
	if (!shm_pid_alive(p->rg->pid) ||
	    atomic_load(&shm_hdr(p->rg)->rx_closed)) {
		/* Not cached as dead: a new owner may take the name later. */
		shm_region_unmap(p->rg);
		p->rg = NULL;
		return -FI_EIO;
	}
	ret = shm_claim_slot(p->rg, ep->name, &p->id, &p->gen);
	if (ret) {
		shm_region_unmap(p->rg);
		p->rg = NULL;
		return ret;
	}
	p->slot = shm_peer_slot(p->rg, p->id);
	p->pid = p->rg->pid; /* liveness only: CMA targets the receiver */
	p->cma_ok = ep->cma_ok && p->rg->cma_ok;
	if (!++ep->conn_next)
		ep->conn_next = 1;
	p->conn = ep->conn_next;
	*out = p;
	return 0;
}

/*
 * Maps a sender's region: by its address while it is open; under its
 * linger name once it closed, which may happen while we look.
 */
static int shm_rx_peer_map(struct shm_peer_slot *s, uint32_t state,
			   const char *name, struct shm_region **rg)
{
	char obj[SHM_LINGER_NAME_MAX];

	if (state == SHM_PEER_READY) {
		if (!shm_region_map(name, rg))
			return 0;
		state = atomic_load_explicit(&s->state, memory_order_acquire);
		if (state != SHM_PEER_CLOSED)
			return -FI_EAGAIN;
	}
	if (!shm_copy_str(obj, s->linger, sizeof(obj)))
		return -FI_EINVAL;
	return shm_region_map_linger(obj, name, rg);
}

/*
 * Slot @id of our table has a new owner: what its previous one left here
 * (unexpected messages, FI_CLAIMed ones, streams still draining) is
 * relabelled SHM_ORPHAN_ID, so it is neither matched by a directed
 * receive for nor reported as the new owner, and whatever still needs the
 * gone sender's memory fails (shm_rx_peer_closed() is true for it).
 */
struct shm_orphan_arg {
	struct shm_ep *ep;
	uint16_t id;
};

static void shm_unexp_orphan(struct ofi_unexp_msg *um, void *arg)
{
	struct shm_orphan_arg *a = arg;
	struct shm_unexp *u = shm_unexp_of(a->ep, um);

	if (!u || u->src_id != a->id)
		return;
	u->src_id = SHM_ORPHAN_ID;
	u->m.addr = FI_ADDR_NOTAVAIL;
	/*
	 * A CMA or IPC message keeps its protocol: delivery fails with
	 * FI_EIO before its body is looked at (shm_rx_peer_closed()), and
	 * an IPC body only names the gone sender's pool, which the orphan
	 * pseudo sender has none of (no region, no fds).
	 */
}

static void shm_rx_peer_orphan(struct shm_ep *ep, uint16_t id)
{
	struct dlist_entry *item;
	struct shm_sar_rx *sar;

	struct shm_orphan_arg a = {.ep = ep, .id = id};

	ofi_match_unexp_foreach(ep->mq, shm_unexp_orphan, &a)
		;
	dlist_foreach(&ep->sar_rx_list, item) {
		sar = container_of(item, struct shm_sar_rx, entry);
		if (sar->src_id == id)
			sar->src_id = SHM_ORPHAN_ID;
	}
	shm_rma_src_orphan(ep, id);
}

/* A sender we have not seen (or whose slot was reused) maps here. */
struct shm_rx_peer *shm_rx_peer_slow(struct shm_ep *ep, uint16_t id)
{
	struct shm_rx_peer *p = &ep->rx_peers[id];
	struct shm_peer_slot *s = shm_peer_slot(ep->rg, id);
	char name[SHM_NAME_MAX];
	struct shm_region *rg;
	uint32_t state, gen;

	state = atomic_load_explicit(&s->state, memory_order_acquire);
	if (state != SHM_PEER_READY && state != SHM_PEER_CLOSED)
		return NULL;
	gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	/* Nothing changes until the new owner is mapped. */
	if (!shm_copy_str(name, s->name, sizeof(name)) ||
	    shm_rx_peer_map(s, state, name, &rg))
		return NULL;
	if (p->rg) {
		if (ep->ipc)
			shm_ipc_peer_gone(ep, id, p->gen);
		shm_rx_peer_orphan(ep, id);
	}
	p->gen = gen;
	memcpy(p->name, name, SHM_NAME_MAX);
	shm_region_unmap(p->rg);
	p->rg = rg;
	/* CMA only with a pid the kernel confirmed (shm_region_cma_pid). */
	p->cma_ok = ep->cma_ok && shm_region_cma_pid(rg);
	p->pid = p->cma_ok ? rg->cma_pid : rg->pid;
	p->addr = FI_ADDR_NOTAVAIL;
	p->src_addr = FI_ADDR_NOTAVAIL;
	p->sar_stamp = 0;
	return p;
}

/* One receiver less for a closed sender's region; the last unlinks it. */
static void shm_linger_put(struct shm_region *rg, const char *obj,
			   const char *name)
{
	_Atomic uint32_t *linger = &shm_hdr(rg)->linger;
	uint32_t v = atomic_load(linger);

	do {
		if (!v)
			return;
	} while (!atomic_compare_exchange_weak(linger, &v, v - 1));
	if (v == 1)
		shm_region_unlink_linger(obj, name);
}

/*
 * Frees the slot of closed sender @id (SHM_PEER_CLOSED): the caller made
 * sure nothing of it is queued or in flight here any more.
 */
void shm_rx_peer_release(struct shm_ep *ep, uint16_t id)
{
	struct shm_rx_peer *p = &ep->rx_peers[id];
	struct shm_peer_slot *s = shm_peer_slot(ep->rg, id);
	uint32_t gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	char obj[SHM_LINGER_NAME_MAX], name[SHM_NAME_MAX];
	struct shm_region *rg = NULL;

	if (!shm_copy_str(obj, s->linger, sizeof(obj)) ||
	    !shm_copy_str(name, s->name, sizeof(name)))
		obj[0] = name[0] = '\0'; /* maps nothing */
	if (p->rg && p->gen == gen)
		rg = p->rg;
	else if (shm_region_map_linger(obj, name, &rg))
		rg = NULL;
	if (rg && shm_hdr(rg)->gone && rg->pid == s->pid)
		shm_linger_put(rg, obj, name);
	if (p->rg && ep->ipc)
		shm_ipc_peer_gone(ep, id, p->gen);
	if (rg != p->rg)
		shm_region_unmap(rg);
	shm_region_unmap(p->rg);
	p->rg = NULL;
	atomic_store_explicit(&s->state, SHM_PEER_FREE, memory_order_release);
}

static int shm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct shm_ep *ep = container_of(fid, struct shm_ep, util.ep_fid.fid);

	return ofi_getname_copy(addr, addrlen, ep->name, strlen(ep->name) + 1);
}

OFI_GETNAME_CM_OPS(shm_cm_ops, shm_getname);

/* Close walks live and retired connections alike. */
static size_t shm_peer_total(struct shm_ep *ep)
{
	return ep->tx_peer_cnt + ep->retired_cnt;
}

static struct shm_tx_peer *shm_peer_at(struct shm_ep *ep, size_t i)
{
	return i < ep->tx_peer_cnt ? &ep->tx_peers[i]
				   : &ep->retired[i - ep->tx_peer_cnt];
}

/* Marks the peers still to read from us; how many. */
static size_t shm_count_unread(struct shm_ep *ep, uint64_t *heads)
{
	struct shm_tx_peer *p;
	size_t i, n = 0;

	*heads = 0;
	for (i = 0; i < shm_peer_total(ep); i++) {
		p = shm_peer_at(ep, i);
		if (!p->unread)
			continue;
		if (shm_ring_consumed(shm_cmd_ring(p->rg), p->slot->last_pos)) {
			p->unread = false;
			continue;
		}
		*heads += shm_ring_published_head(shm_cmd_ring(p->rg));
		n++;
	}
	return n;
}

/*
 * A short grace while those peers are consuming, so that the usual close
 * leaves nothing behind. Delivery does not depend on it: a peer may not
 * look at its ring before we are gone.
 */
static size_t shm_unread_peers(struct shm_ep *ep)
{
	uint64_t heads, last = 0;
	struct shm_tx_peer *p;
	int ms, still = 0;
	size_t i, n;

	for (i = 0; i < shm_peer_total(ep); i++) {
		p = shm_peer_at(ep, i);
		p->unread = shm_tx_peer_unread(ep, p);
	}
	for (ms = 0;; ms++) {
		n = shm_count_unread(ep, &heads);
		if (!n || ms >= 100)
			return n;
		still = ms && heads == last ? still + 1 : 0;
		if (still >= 10)
			return n;
		last = heads;
		usleep(1000);
	}
}

/*
 * Sets our region up to linger for @n receivers. Its address is free
 * again at close where it can take a second name; false where it lingers
 * under the address itself.
 */
static bool shm_linger_setup(struct shm_ep *ep, size_t n, char *obj)
{
	struct shm_region *rg = ep->rg;
	size_t i, k = 0;
	bool linked;

	linked = !shm_region_linger(rg, obj, SHM_LINGER_NAME_MAX);
	FI_INFO(&shm_prov, FI_LOG_EP_CTRL,
		"%s closes with %zu peer(s) still to read it, lingering as "
		"%s\n",
		ep->name, n, linked ? obj : ep->name);
	for (i = 0; i < shm_peer_total(ep) && k < SHM_MAX_PEERS; i++) {
		if (shm_peer_at(ep, i)->unread)
			shm_hdr(rg)->linger_pid[k++] = shm_peer_at(ep, i)->pid;
	}
	shm_hdr(rg)->linger_cnt = k;
	shm_hdr(rg)->gone = 1;
	atomic_store(&shm_hdr(rg)->linger, (uint32_t)n);
	return linked;
}

/* Gives our slots back, or leaves them to the peers still to read us. */
static void shm_ep_release_peers(struct shm_ep *ep)
{
	char obj[SHM_LINGER_NAME_MAX] = "";
	struct shm_tx_peer *p;
	bool linked = false;
	size_t i, n;

	n = ep->rg ? shm_unread_peers(ep) : 0;
	if (n)
		linked = shm_linger_setup(ep, n, obj);
	for (i = 0; i < shm_peer_total(ep); i++) {
		p = shm_peer_at(ep, i);
		if (!p->rg)
			continue;
		if (p->unread) {
			memcpy(p->slot->linger, obj, sizeof(obj));
			atomic_store_explicit(&p->slot->state, SHM_PEER_CLOSED,
					      memory_order_release);
			atomic_fetch_add(&shm_hdr(p->rg)->closed, 1);
		} else if (shm_slot_ours(ep, p)) {
			atomic_store(&p->slot->state, SHM_PEER_FREE);
		}
		shm_region_unmap(p->rg);
	}
	if (!n || linked)
		shm_region_destroy(ep->rg); /* the linger name keeps it */
	else
		shm_region_unmap(ep->rg);
	ep->rg = NULL;
}

static void shm_ep_free(struct shm_ep *ep)
{
	size_t i;

	/* Closed senders waiting on us: we read nothing more. */
	for (i = 0; ep->rg && i < SHM_MAX_PEERS; i++) {
		if (shm_rx_peer_closed(ep, (uint16_t)i))
			shm_rx_peer_release(ep, (uint16_t)i);
	}
	shm_ep_release_peers(ep);
	for (i = 0; i < SHM_MAX_PEERS; i++)
		shm_region_unmap(ep->rx_peers[i].rg);
	shm_ipc_fini(ep);
	shm_wake_close(ep);
	free(ep->tx_peers);
	free(ep->retired);
	free(ep->av_removed);
	if (ep->tx)
		shm_rma_ep_free(ep);
	free(ep->tx);
	ofi_match_pool_free(&ep->mq_own);
	shm_unexp_cache_free(ep);
	ofi_mutex_destroy(&ep->lock);
	ofi_mutex_destroy(&ep->av_lock);
}

static int shm_ep_close(struct fid *fid)
{
	struct shm_ep *ep = container_of(fid, struct shm_ep, util.ep_fid.fid);

	if (ofi_coll_ep_busy(&ep->util))
		return -FI_EBUSY; /* its groups' fid_mc are the app's */
	/*
	 * Off the CQs, counters and AV first: from here no fi_cq_read or
	 * fi_cntr_read of another thread runs our progress, and no AV
	 * callback reaches us, while we tear down.
	 */
	shm_auto_stop(ep);
	ofi_ep_detach(&ep->util);
	shm_ep_lock(ep);
	shm_ep_flush(ep);
	/*
	 * After our last progress: senders fail what waits on us and take
	 * back the inject buffers we hold (shm_tx_peer_live).
	 */
	atomic_store_explicit(&shm_hdr(ep->rg)->rx_closed, 1,
			      memory_order_release);
	shm_ep_unlock(ep);
	shm_ep_free(ep);
	ofi_ep_close(&ep->util);
	free(ep);
	return 0;
}

OFI_EP_FI_OPS(shm_ep_fi_ops, shm_ep_close);

/* Free entries on @list (under the endpoint lock); needs fi_enable. */
static ssize_t shm_size_left(struct shm_ep *ep, const struct dlist_entry *list)
{
	const struct dlist_entry *item;
	ssize_t n = 0;

	if (!ofi_ep_enabled(&ep->util))
		return -FI_EOPBADSTATE;
	shm_ep_lock(ep);
	for (item = list->next; item != list; item = item->next)
		n++;
	shm_ep_unlock(ep);
	return n;
}

/*
 * fi_tx_size_left(3): the free transmit entries. Each send that waits on
 * its receiver (streamed, CMA, IPC, delivery complete) and each RMA or
 * atomic holds one until it completes; inline and inject sends take none.
 */
static ssize_t shm_tx_size_left(struct fid_ep *ep_fid)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);

	return shm_size_left(ep, &ep->tx_free);
}

/* fi_rx_size_left(3): receives that can still be posted (rx_attr size). */
static ssize_t shm_rx_size_left(struct fid_ep *ep_fid)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);

	return shm_size_left(ep, &ep->mq->rx_free);
}

static const struct fi_ops_ep shm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = shm_ep_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = shm_rx_size_left,
	.tx_size_left = shm_tx_size_left,
};

static int shm_ep_pools(struct shm_ep *ep, size_t rx_size)
{
	size_t i;

	ep->tx = calloc(SHM_TX_SIZE, sizeof(*ep->tx));
	if (!ep->tx)
		return -FI_ENOMEM;
	dlist_init(&ep->tx_free);
	dlist_init(&ep->sar_queue);
	shm_sar_init(ep);
	dlist_init(&ep->cma_list);
	dlist_init(&ep->rma_list);
	dlist_init(&ep->rma_src);
	dlist_init(&ep->ack_backlog);
	for (i = 0; i < SHM_TX_SIZE; i++) {
		ep->tx[i].idx = i;
		dlist_insert_tail(&ep->tx[i].entry, &ep->tx_free);
	}
	ep->mq = &ep->mq_own;
	ofi_match_init(ep->mq, &ep->util, &shm_match_ops);
	dlist_init(&ep->sar_rx_list);
	/* Driven by an owner: its receives are the ones posted. */
	return rx_size ? ofi_match_pool(ep->mq, rx_size) : 0;
}

static bool shm_cma_allowed(void)
{
	int off = 0;

	if (!fi_param_get_bool(&shm_prov, "disable_cma", &off) && off)
		return false;
	return shm_cma_probe();
}

/*
 * An endpoint of @dom named @name (NULL: a fresh fi_shm://<pid>:<n>) with
 * @rx_size receives (0: it matches in an owner's queues, shm_peer.c).
 */
int shm_ep_create(struct util_domain *dom, const struct fi_info *info,
		  const char *name, size_t rx_size, void *context,
		  struct shm_ep **out)
{
	struct shm_ep *ep;
	int adapt, ret, i;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->wake_fd = -1;
	ret = ofi_ep_init(dom, info, &ep->util, shm_ep_progress, context);
	if (ret) {
		free(ep);
		return ret;
	}
	ofi_mutex_init(&ep->lock);
	ofi_mutex_init(&ep->av_lock);
	for (i = 0; i < SHM_UNEXP_SIZES; i++)
		dlist_init(&ep->unexp_cache[i]);
	ep->util.inject_size = SHM_INJECT_SIZE;
	ep->util.iov_limit = SHM_IOV_LIMIT;
	ep->util.av_ops = &shm_av_ep_ops;
	ep->rx_peers[SHM_ORPHAN_ID].addr = FI_ADDR_NOTAVAIL;
	ep->rx_peers[SHM_ORPHAN_ID].src_addr = FI_ADDR_NOTAVAIL;
	ep->need_lock = dom->threading != FI_THREAD_DOMAIN;
	ep->util.min_multi_recv = 64;
	ep->util.tx_busy = shm_util_tx_busy;
	ep->cma_ok = shm_cma_allowed();
	ep->cma_threshold = SHM_CMA_THRESHOLD;
	fi_param_get_size_t(&shm_prov, "cma_threshold", &ep->cma_threshold);
	adapt = 1;
	fi_param_get_bool(&shm_prov, "adapt", &adapt);
	ep->adapt = adapt;
	if (name)
		snprintf(ep->name, sizeof(ep->name), "%s", name);
	else
		shm_make_name(ep->name, sizeof(ep->name));
	ret = shm_ep_pools(ep, rx_size);
	if (ret)
		goto err;
	ret = shm_region_create(ep->name, ep->cma_ok, &ep->rg);
	if (ret)
		goto err;
	shm_wake_open(ep);
	shm_wake_init(ep);
	ep->util.coll_shared = &shm_coll_shared;
	ret = shm_ipc_init(ep);
	if (ret)
		goto err;

	ep->util.ep_fid.fid.ops = (struct fi_ops *)&shm_ep_fi_ops;
	ep->util.ep_fid.ops = (struct fi_ops_ep *)&shm_ep_ops;
	ep->util.ep_fid.cm = (struct fi_ops_cm *)&shm_cm_ops;
	ep->util.ep_fid.msg = (struct fi_ops_msg *)&shm_msg_ops;
	ep->util.ep_fid.tagged = (struct fi_ops_tagged *)&shm_tagged_ops;
	ep->util.ep_fid.rma = (struct fi_ops_rma *)&shm_rma_ops;
	ep->util.ep_fid.atomic = (struct fi_ops_atomic *)&shm_atomic_ops;
	*out = ep;
	return 0;
err:
	shm_ep_free(ep);
	ofi_ep_close(&ep->util);
	free(ep);
	return ret;
}

static bool shm_attr_auto(const struct fi_domain_attr *attr)
{
	return attr && (attr->data_progress == FI_PROGRESS_AUTO);
}

/* fi_enable: we lock whatever the threading model once another thread
 * may drive our progress. */
static int shm_ep_enable(struct util_ep *util)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);

	if (ofi_ep_shared(util))
		ep->need_lock = true;
	return util->auto_progress ? shm_auto_start(util) : 0;
}

int shm_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep_fid, void *context)
{
	struct shm_ep *ep;
	size_t rx_size;
	int ret;

	if (!domain || !info || !ep_fid)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	if (info->src_addr && (info->addr_format != FI_ADDR_STR ||
			       shm_name_valid(info->src_addr)))
		return -FI_EINVAL;
	rx_size = info->rx_attr && info->rx_attr->size ? info->rx_attr->size
						       : SHM_RX_SIZE;
	if (rx_size > SHM_RX_SIZE * 64)
		return -FI_EINVAL;
	ret = shm_ep_create(
		container_of(domain, struct util_domain, domain_fid), info,
		info->src_addr && !shm_default_src(info->src_addr)
			? info->src_addr
			: NULL,
		rx_size, context, &ep);
	if (ret)
		return ret;
	/* Hints asked for FI_PROGRESS_AUTO, or we serve RMA and atomics
	 * (ofi_progress_target): a thread drives us from fi_enable on,
	 * beside the application's calls (shm_ep_enable locks for it). */
	if (shm_attr_auto(info->domain_attr) ||
	    shm_attr_auto(ep->util.domain->attr) ||
	    ofi_progress_target(info->caps))
		ep->util.auto_progress = true;
	ep->util.enable = shm_ep_enable;
	ret = ofi_trig_ep_wrap(&ep->util);
	if (ret) {
		fi_close(&ep->util.ep_fid.fid);
		return ret;
	}
	*ep_fid = &ep->util.ep_fid;
	return 0;
}
