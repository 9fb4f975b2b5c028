/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_comp.c - the completion and counter writers every provider reports
 * finished transfers through: initiator side (send, RMA, atomic), receive
 * side (with truncation and FI_MULTI_RECV) and the RMA target's remote
 * events. One copy, so FI_SELECTIVE_COMPLETION, error entries and counter
 * selection behave the same in every provider.
 */
#include <string.h>

#include "ofi_coll.h"
#include "ofi_trigger.h"

static enum ofi_cntr_index ofi_tx_cntr(uint64_t flags)
{
	if (flags & FI_READ)
		return OFI_CNTR_RD;
	if (flags & FI_WRITE)
		return OFI_CNTR_WR;
	return OFI_CNTR_TX;
}

/* A started deferred work item's counter: fi_trigger(3) reports it there,
 * not to the endpoint's counters. */
static struct util_cntr *ofi_work_cntr(const struct fi_deferred_work *work)
{
	if (!work->completion_cntr)
		return NULL;
	return container_of(work->completion_cntr, struct util_cntr, cntr_fid);
}

/* ... and to the endpoint's CQ only when its flags ask FI_COMPLETION. */
static void ofi_work_tx_complete(struct util_ep *ep,
				 const struct fi_deferred_work *work,
				 uint64_t flags, int err)
{
	struct util_cntr *cntr = ofi_work_cntr(work);
	bool comp = ep->tx_cq && (ofi_trig_work_flags(work) & FI_COMPLETION);
	void *context = ofi_trig_work_context(work);

	if (err) {
		if (comp)
			ofi_cq_write_error_code(ep->tx_cq, context, flags, err,
						-err, 0);
		if (cntr)
			ofi_cntr_inc_err(cntr);
		return;
	}
	if (comp)
		ofi_cq_write(ep->tx_cq, context, flags, 0, NULL, 0, 0);
	if (cntr)
		ofi_cntr_inc(cntr);
}

OFI_HOT void ofi_ep_tx_complete(struct util_ep *ep, void *context,
				uint64_t flags, uint64_t op_flags, bool comp,
				int err)
{
	enum ofi_cntr_index c = ofi_tx_cntr(flags);

	if (OFI_UNLIKELY(op_flags & (OFI_COLL_INTERNAL | OFI_TRIG_WORK))) {
		/* The collective engine's own writes are its business. */
		if (op_flags & OFI_COLL_INTERNAL)
			ofi_coll_rma_done(context, err);
		else
			ofi_work_tx_complete(ep, context, flags, err);
		return;
	}
	if (OFI_UNLIKELY(err)) {
		if (ep->tx_cq)
			ofi_cq_write_error_code(ep->tx_cq, context, flags, err,
						-err, 0);
		ofi_ep_cntr_inc_err(ep, c);
		return;
	}
	if (comp && ep->tx_cq && ofi_ep_wants_comp(ep->tx_cq_flags, op_flags))
		ofi_cq_write(ep->tx_cq, context, flags, 0, NULL, 0, 0);
	ofi_ep_cntr_inc(ep, c);
}

static void ofi_rx_error(struct util_cq *cq, const struct ofi_rx_comp *c,
			 int err)
{
	struct fi_cq_err_entry e;

	memset(&e, 0, sizeof(e));
	e.op_context = c->context;
	e.flags = c->flags;
	e.len = c->len;
	e.buf = c->buf;
	e.data = c->data;
	e.tag = c->tag;
	e.olen = c->olen;
	e.err = err;
	e.prov_errno = -err;
	if (err == FI_EADDRNOTAVAIL) {
		/* fi_cq(3): the address, ready for fi_av_insert */
		e.err_data = (void *)c->src_raw;
		e.err_data_size = c->src_rawlen;
	}
	ofi_cq_write_error(cq, &e);
}

/*
 * A receive's report: to @cq (NULL: none) when @comp or on error, to
 * @cntr. A deferred receive passes its own CQ choice and counter.
 */
static void ofi_rx_report(struct util_ep *ep, struct util_cq *cq,
			  struct util_cntr *cntr, const struct ofi_rx_comp *c,
			  bool comp)
{
	int err = c->err;

	if (!err && c->olen)
		err = FI_ETRUNC;
	if (OFI_UNLIKELY(!err && c->src_raw && (ep->caps & FI_SOURCE_ERR))) {
		/* received whole: an error entry only for the address */
		if (cq && (ofi_ep_wants_comp(ep->rx_cq_flags, c->op_flags) ||
			   (c->flags & FI_MULTI_RECV)))
			ofi_rx_error(cq, c, FI_EADDRNOTAVAIL);
		ofi_ep_cntr_inc(ep, OFI_CNTR_RX);
		return;
	}
	if (OFI_UNLIKELY(err)) {
		if (cq)
			ofi_rx_error(cq, c, err);
		if (cntr)
			ofi_cntr_inc_err(cntr);
		return;
	}
	if (cq && comp) {
		if (ep->caps & FI_SOURCE)
			ofi_cq_write_src(cq, c->context, c->flags, c->len,
					 c->buf, c->data, c->tag, c->src_addr);
		else
			ofi_cq_write(cq, c->context, c->flags, c->len, c->buf,
				     c->data, c->tag);
	}
	if (cntr)
		ofi_cntr_inc(cntr);
}

static void ofi_work_rx_complete(struct util_ep *ep,
				 const struct ofi_rx_comp *c)
{
	const struct fi_deferred_work *work = c->context;
	struct ofi_rx_comp wc = *c;
	bool comp = ofi_trig_work_flags(work) & FI_COMPLETION;

	wc.context = ofi_trig_work_context(work);
	ofi_rx_report(ep, comp ? ep->rx_cq : NULL, ofi_work_cntr(work), &wc,
		      comp);
}

void ofi_ep_rx_complete(struct util_ep *ep, const struct ofi_rx_comp *c)
{
	if (OFI_UNLIKELY(c->op_flags & OFI_TRIG_WORK)) {
		ofi_work_rx_complete(ep, c);
		return;
	}
	/* A released multi-receive buffer is reported whatever the flags. */
	ofi_rx_report(ep, ep->rx_cq, ep->cntrs[OFI_CNTR_RX], c,
		      ofi_ep_wants_comp(ep->rx_cq_flags, c->op_flags) ||
			      (c->flags & FI_MULTI_RECV));
}

OFI_HOT bool ofi_ep_rma_target_wanted(struct util_ep *ep, uint64_t flags)
{
	enum ofi_cntr_index i =
		flags & FI_REMOTE_READ ? OFI_CNTR_REM_RD : OFI_CNTR_REM_WR;

	if (flags & FI_REMOTE_CQ_DATA)
		return true;
	return (ep->caps & FI_RMA_EVENT) &&
	       (ep->cntrs[i] || ofi_mr_map_counted(&ep->domain->mr_map));
}

OFI_HOT void ofi_ep_rma_target_complete(struct util_ep *ep, uint64_t flags,
					size_t len, uint64_t data,
					struct ofi_mr_entry **ent, size_t count)
{
	uint64_t dir =
		flags & FI_REMOTE_READ ? FI_REMOTE_READ : FI_REMOTE_WRITE;
	size_t i, j;

	/* The collective engine's own regions: its signal, no user event. */
	if (count && (ent[0]->flags & OFI_MR_INTERNAL)) {
		if (flags & FI_REMOTE_CQ_DATA)
			ofi_coll_rma_landed(ent[0]->context, data);
		return;
	}
	/* fi_endpoint(3), fi_mr(3): remote counters need FI_RMA_EVENT. */
	if (ep->caps & FI_RMA_EVENT) {
		ofi_ep_cntr_inc(ep, dir == FI_REMOTE_READ ? OFI_CNTR_REM_RD
							  : OFI_CNTR_REM_WR);
		for (i = 0; i < count; i++) {
			for (j = 0; j < i && ent[j] != ent[i]; j++)
				;
			if (j == i)
				ofi_mr_map_event(&ep->domain->mr_map, ent[i],
						 dir);
		}
	}
	if (ep->rx_cq && (flags & FI_REMOTE_CQ_DATA))
		ofi_cq_write(ep->rx_cq, NULL, flags, len, NULL, data, 0);
}
