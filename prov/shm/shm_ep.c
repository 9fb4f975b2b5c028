/*
 * shm_ep.c - the shm endpoint object: opening it creates the endpoint's
 * shared region and its pools of transmit and receive entries; getname,
 * enable, close (which releases our slots in peers' tables and unmaps
 * them) and the mapping of peers on first contact in either direction.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm.h"

static _Atomic uint32_t shm_ep_counter;

int shm_make_name(char *buf, size_t len)
{
	int n = snprintf(buf, len, SHM_ADDR_PREFIX "%d:%u", (int)getpid(),
			 atomic_fetch_add(&shm_ep_counter, 1));

	return n < 0 || (size_t)n >= len ? -FI_EINVAL : 0;
}

/* Our slot in a peer's table: free ones first, then ones of dead senders. */
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
			if (pass && shm_pid_alive(s->pid))
				continue;
			if (!atomic_compare_exchange_strong(&s->state, &exp,
							    SHM_PEER_BUSY))
				continue;
			s->pid = getpid();
			snprintf(s->name, sizeof(s->name), "%s", name);
			*gen = atomic_fetch_add(&s->gen, 1) + 1;
			atomic_store_explicit(&s->state, SHM_PEER_READY,
					      memory_order_release);
			*id = i;
			return 0;
		}
	}
	return -FI_ENOSPC;
}

/* First contact with @addr: map its region and register with it. */
int shm_tx_peer_connect(struct shm_ep *ep, fi_addr_t addr,
			struct shm_tx_peer **out)
{
	char name[SHM_NAME_MAX];
	struct shm_tx_peer *p;
	size_t cnt;
	int ret;

	if (!ep->util.av)
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
	if (p->rg) {
		*out = p;
		return 0;
	}
	if (p->dead)
		return -FI_EIO;
	ret = ofi_av_get_addr(ep->util.av, addr, name);
	if (ret)
		return -FI_EINVAL;
	name[SHM_NAME_MAX - 1] = '\0';
	ret = shm_region_map(name, &p->rg);
	if (ret)
		return ret;
	if (!shm_pid_alive(p->rg->pid)) {
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
	p->pid = p->rg->pid;
	p->cma_ok = ep->cma_ok && p->rg->cma_ok;
	*out = p;
	return 0;
}

/* A sender we have not seen (or whose slot was reused) maps here. */
struct shm_rx_peer *shm_rx_peer_slow(struct shm_ep *ep, uint16_t id)
{
	struct shm_rx_peer *p = &ep->rx_peers[id];
	struct shm_peer_slot *s = shm_peer_slot(ep->rg, id);
	struct shm_region *rg;

	if (atomic_load_explicit(&s->state, memory_order_acquire) !=
	    SHM_PEER_READY)
		return NULL;
	if (p->rg && ep->ipc)
		shm_ipc_peer_gone(ep, id, p->gen);
	p->gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	memcpy(p->name, s->name, SHM_NAME_MAX);
	p->name[SHM_NAME_MAX - 1] = '\0';
	if (shm_region_map(p->name, &rg))
		return NULL;
	shm_region_unmap(p->rg);
	p->rg = rg;
	p->pid = rg->pid;
	p->cma_ok = ep->cma_ok && rg->cma_ok;
	p->addr = FI_ADDR_NOTAVAIL;
	p->src_addr = FI_ADDR_NOTAVAIL;
	return p;
}

static int shm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct shm_ep *ep = container_of(fid, struct shm_ep, util.ep_fid.fid);
	size_t len = strlen(ep->name) + 1;

	if (!addrlen)
		return -FI_EINVAL;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, ep->name, len);
	*addrlen = len;
	return 0;
}

static const struct fi_ops_cm shm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = fi_no_setname,
	.getname = shm_getname,
	.getpeer = fi_no_getpeer,
	.connect = fi_no_connect,
	.listen = fi_no_listen,
	.accept = fi_no_accept,
	.reject = fi_no_reject,
	.shutdown = fi_no_shutdown,
	.join = fi_no_join,
};

static void shm_ep_free(struct shm_ep *ep)
{
	struct shm_peer_slot *s;
	size_t i;

	for (i = 0; i < ep->tx_peer_cnt; i++) {
		if (!ep->tx_peers[i].rg)
			continue;
		s = shm_peer_slot(ep->tx_peers[i].rg, ep->tx_peers[i].id);
		if (s->pid == getpid() && !strcmp(s->name, ep->name))
			atomic_store(&s->state, SHM_PEER_FREE);
		shm_region_unmap(ep->tx_peers[i].rg);
	}
	for (i = 0; i < SHM_MAX_PEERS; i++)
		shm_region_unmap(ep->rx_peers[i].rg);
	shm_ipc_fini(ep);
	shm_region_destroy(ep->rg);
	free(ep->tx_peers);
	if (ep->tx)
		shm_rma_ep_free(ep);
	free(ep->tx);
	free(ep->rx);
	ofi_mutex_destroy(&ep->lock);
}

static int shm_ep_close(struct fid *fid)
{
	struct shm_ep *ep = container_of(fid, struct shm_ep, util.ep_fid.fid);

	shm_ep_lock(ep);
	shm_ep_flush(ep);
	shm_ep_unlock(ep);
	shm_ep_free(ep);
	ofi_ep_close(&ep->util);
	free(ep);
	return 0;
}

static const struct fi_ops shm_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shm_ep_close,
	.bind = ofi_ep_bind,
	.control = ofi_ep_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

static const struct fi_ops_ep shm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = shm_ep_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

static int shm_ep_pools(struct shm_ep *ep, size_t rx_size)
{
	size_t i;

	ep->tx = calloc(SHM_TX_SIZE, sizeof(*ep->tx));
	ep->rx = calloc(rx_size, sizeof(*ep->rx));
	if (!ep->tx || !ep->rx)
		return -FI_ENOMEM;
	dlist_init(&ep->tx_free);
	dlist_init(&ep->sar_queue);
	dlist_init(&ep->cma_list);
	dlist_init(&ep->rma_list);
	for (i = 0; i < SHM_TX_SIZE; i++) {
		ep->tx[i].idx = i;
		dlist_insert_tail(&ep->tx[i].entry, &ep->tx_free);
	}
	dlist_init(&ep->rx_free);
	dlist_init(&ep->recv_list);
	dlist_init(&ep->trecv_list);
	dlist_init(&ep->unexp_list);
	dlist_init(&ep->unexp_tlist);
	dlist_init(&ep->claimed_list);
	dlist_init(&ep->sar_rx_list);
	for (i = 0; i < rx_size; i++)
		dlist_insert_tail(&ep->rx[i].entry, &ep->rx_free);
	return 0;
}

static bool shm_cma_allowed(void)
{
	int off = 0;

	if (!fi_param_get_bool(&shm_prov, "disable_cma", &off) && off)
		return false;
	return shm_cma_probe();
}

int shm_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep_fid, void *context)
{
	struct util_domain *dom;
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
	dom = container_of(domain, struct util_domain, domain_fid);
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ret = ofi_ep_init(dom, info, &ep->util, shm_ep_progress, context);
	if (ret) {
		free(ep);
		return ret;
	}
	ofi_mutex_init(&ep->lock);
	ep->need_lock = dom->threading != FI_THREAD_DOMAIN;
	ep->util.min_multi_recv = 64;
	ep->cma_ok = shm_cma_allowed();
	ep->cma_threshold = SHM_CMA_THRESHOLD;
	fi_param_get_size_t(&shm_prov, "cma_threshold", &ep->cma_threshold);
	if (info->src_addr)
		snprintf(ep->name, sizeof(ep->name), "%s",
			 (const char *)info->src_addr);
	else
		shm_make_name(ep->name, sizeof(ep->name));
	ret = shm_ep_pools(ep, rx_size);
	if (ret)
		goto err;
	ret = shm_region_create(ep->name, ep->cma_ok, &ep->rg);
	if (ret)
		goto err;
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
	*ep_fid = &ep->util.ep_fid;
	return 0;
err:
	shm_ep_free(ep);
	ofi_ep_close(&ep->util);
	free(ep);
	return ret;
}
