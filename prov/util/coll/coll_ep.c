/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_ep.c - the engine's hooks into an endpoint (ofi_coll.h):
 * fi_getinfo's FI_COLLECTIVE, init, enable (ops, fi_join, progress),
 * close, and ofi_coll_wait_ready for a provider about to sleep.
 */
#include "coll_priv.h"

/* ------------------------------------------------------------------ */
/* Endpoint hooks.                                                      */

void ofi_coll_info(const struct fi_info *hints, struct fi_info *fi)
{
	if (!hints || !(hints->caps & FI_COLLECTIVE) || !fi->ep_attr ||
	    fi->ep_attr->type != FI_EP_RDM || !(fi->caps & FI_RMA))
		return;
	fi->caps |= FI_COLLECTIVE;
	if (fi->tx_attr)
		fi->tx_attr->caps |= FI_COLLECTIVE;
	if (fi->rx_attr)
		fi->rx_attr->caps |= FI_COLLECTIVE;
}

void ofi_coll_ep_init(struct util_ep *ep)
{
	/* The engine writes into peers, and they into us. */
	if ((ep->caps & FI_COLLECTIVE) && ep->type == FI_EP_RDM)
		ep->caps |= FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
}

int ofi_coll_ep_enable(struct util_ep *ep)
{
	struct ofi_coll_ep *ce;
	size_t v;
	int b;

	if (!(ep->caps & FI_COLLECTIVE) || ep->type != FI_EP_RDM ||
	    ep->shared || ep->coll || !ep->progress)
		return 0;
	ce = calloc(1, sizeof(*ce));
	if (!ce)
		return -FI_ENOMEM;
	ce->ep = ep;
	ofi_mutex_init(&ce->lock);
	dlist_init(&ce->groups);
	dlist_init(&ce->closing);
	ce->fanout = 2;
	if (!fi_param_get_size_t(NULL, "coll_fanout", &v) && v)
		ce->fanout = v;
	ce->slot_size = 0; /* by group size, at join */
	if (!fi_param_get_size_t(NULL, "coll_slot_size", &v) && v)
		ce->slot_size = v < 64 ? 64 : v & ~(size_t)63;
	ce->probe_timeout = 4000;
	if (!fi_param_get_size_t(NULL, "coll_probe_timeout", &v))
		ce->probe_timeout = v;
	ce->direct_min = OFI_COLL_DIRECT_MIN;
	if (!fi_param_get_size_t(NULL, "coll_direct_min", &v))
		ce->direct_min = v ? v : SIZE_MAX;
	if (ep->coll_shared &&
	    (fi_param_get_bool(NULL, "coll_shared", &b) || b))
		ce->shared = ep->coll_shared;
	ce->fold = ep->coll_fold_cpus &&
		   (fi_param_get_bool(NULL, "coll_fold", &b) || b);
	ce->cm = *ep->ep_fid.cm;
	ce->cm.join = coll_join;
	ep->ep_fid.cm = &ce->cm;
	ep->ep_fid.collective = (struct fi_ops_collective *)&coll_call_ops;
	ce->prov_progress = ep->progress;
	ep->progress = coll_progress;
	ep->coll = ce;
	if (ep->eq) {
		ce->eq_prog.progress = coll_eq_progress;
		ce->eq_prog.ep = ep;
		ofi_eq_prog_add(ep->eq, &ce->eq_prog);
		ce->on_eq = true;
	}
	return 0;
}

void ofi_coll_ep_detach(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;

	if (ce && ce->on_eq) {
		ofi_eq_prog_del(ep->eq, &ce->eq_prog);
		ce->on_eq = false;
	}
}

bool ofi_coll_ep_busy(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;
	bool busy;

	if (!ce)
		return false;
	ofi_mutex_lock(&ce->lock);
	busy = !dlist_empty(&ce->groups);
	ofi_mutex_unlock(&ce->lock);
	return busy;
}

void ofi_coll_ep_close(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;
	struct coll_group *g;
	struct coll_gen *gen;

	if (!ce)
		return;
	ofi_coll_ep_detach(ep);
	/* The provider has let go of every write: closed groups go too.
	 * Joined ones are left only by a failed open or enable (a close
	 * answers -FI_EBUSY while there are: ofi_coll_ep_busy). */
	while (!dlist_empty(&ce->closing)) {
		g = container_of(ce->closing.next, struct coll_group, entry);
		dlist_remove(&g->entry);
		coll_group_free(g);
	}
	while (!dlist_empty(&ce->groups)) {
		g = container_of(ce->groups.next, struct coll_group, entry);
		dlist_remove(&g->entry);
		coll_group_free(g);
	}
	while ((gen = ce->gens)) {
		ce->gens = gen->next;
		free(gen);
	}
	ep->progress = ce->prov_progress;
	ofi_mutex_destroy(&ce->lock);
	free(ce->spare);
	free(ce);
	ep->coll = NULL;
}

/*
 * A peer's stores gave @g work: a chunk, or the acks a send waits for;
 * or the group announced a sleeper less than OFI_COLL_SLEEPER_NS ago,
 * which peers that stored without a fence may not have seen yet.
 */
static bool group_ready(struct coll_group *g)
{
	struct coll_chan *ch;
	uint8_t *src;
	uint64_t seq, now;
	size_t i;

	if (g->state != G_READY)
		return false;
	if (g->shared && g->sleeper_ns != UINT64_MAX) {
		now = ofi_gettime_ns();
		if (!g->sleeper_ns) {
			g->sleeper_ns = now;
			__atomic_store_n(
				group_word(g, region_sleeper_word(g->n)), 1,
				__ATOMIC_SEQ_CST);
		}
		if (now - g->sleeper_ns < OFI_COLL_SLEEPER_NS)
			return true;
		g->sleeper_ns = UINT64_MAX; /* announced long enough */
	}
	if (dlist_empty(&g->ops))
		return false;
	for (i = 0; i < g->n; i++) {
		ch = &g->chan[i];
		if (i == g->me)
			continue;
		seq = ch->in_seq + 1;
		if (chunk_landed(g, i, seq, 0, &src))
			return true;
		if (ch->ack_wait &&
		    coll_chan_acked(g, i) + OFI_COLL_WINDOW >= ch->out_seq + 1)
			return true;
	}
	return false;
}

bool ofi_coll_wait_ready(struct util_ep *ep)
{
	struct ofi_coll_ep *ce = ep->coll;
	struct dlist_entry *item;
	bool ready = false;

	if (!ce)
		return false;
	/* The caller holds its provider's lock, which the engine takes
	 * inside its own: never wait for ours. */
	if (!ofi_mutex_trylock(&ce->lock))
		return true;
	dlist_foreach(&ce->groups, item) {
		ready = group_ready(
			container_of(item, struct coll_group, entry));
		if (ready)
			break;
	}
	ofi_mutex_unlock(&ce->lock);
	return ready;
}
