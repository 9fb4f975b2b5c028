/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_peer.c - shm driven by another provider's endpoint (shm_peer.h):
 * opening it in the owner's domain with the owner's receive queues,
 * sharing the owner's completion bindings, and the calls the owner makes
 * under its lock (first contact, progress, AV removals).
 */
#include "shm.h"
#include "shm_peer.h"

_Static_assert(SHM_PEER_NAME_MAX == SHM_NAME_MAX, "region name size");
_Static_assert(SHM_PEER_IOV_LIMIT == SHM_IOV_LIMIT, "iov limit");

int shm_peer_open(struct util_ep *owner_ep, struct ofi_match_queue *mq,
		  const struct shm_owner *owner, const char *name,
		  struct fid_ep **ep_fid)
{
	struct shm_ep *ep;
	int ret;

	if (shm_name_valid(name))
		return -FI_EINVAL;
	ret = shm_ep_create(owner_ep->domain, owner_ep->info, name, 0, NULL,
			    &ep);
	if (ret)
		return ret;
	ep->owner = owner;
	ep->mq = mq;
	ep->need_lock = false; /* the owner's lock is held around us */
	*ep_fid = &ep->util.ep_fid;
	return 0;
}

void shm_peer_enable(struct fid_ep *ep_fid, struct util_ep *owner_ep)
{
	ofi_ep_share(&shm_ep_of(ep_fid)->util, owner_ep);
}

bool shm_peer_connect(struct fid_ep *ep_fid, fi_addr_t addr)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);
	struct shm_tx_peer *p;
	bool ok;

	shm_ep_lock(ep);
	ok = !shm_tx_peer_get(ep, addr, &p) && !p->dead;
	shm_ep_unlock(ep);
	return ok;
}

void shm_peer_progress(struct fid_ep *ep_fid)
{
	shm_ep_progress(&shm_ep_of(ep_fid)->util);
}

bool shm_peer_tx_busy(struct fid_ep *ep_fid)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);

	return ep->util.tx_busy(&ep->util);
}

int shm_peer_wait_fd(struct fid_ep *ep_fid)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);

	return ep->util.wait_fd(&ep->util);
}

int shm_peer_wait_arm(struct fid_ep *ep_fid)
{
	struct shm_ep *ep = shm_ep_of(ep_fid);

	if (ep->util.wait_fd(&ep->util) < 0)
		return OFI_EP_WAIT_POLL;
	return ep->util.wait_arm(&ep->util);
}

void shm_peer_addr_removed(struct fid_ep *ep_fid, fi_addr_t addr)
{
	shm_av_removed(&shm_ep_of(ep_fid)->util, addr);
}

int shm_peer_query_atomic(enum fi_datatype datatype, enum fi_op op,
			  struct fi_atomic_attr *attr, uint64_t flags)
{
	return shm_query_atomic(NULL, datatype, op, attr, flags);
}
