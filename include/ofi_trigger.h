/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_trigger.h - triggered operations and deferred work
 * (prov/util/util_trigger.c) for any provider whose endpoints embed
 * struct util_ep and whose counters are util counters (fi_trigger(3)).
 *
 * One queue per process holds every operation waiting on a counter
 * threshold, whether an FI_TRIGGER data call copied it or the
 * application queued a struct fi_deferred_work (FI_QUEUE_WORK). A
 * counter change moves the operations it satisfies, in threshold order,
 * to a ready list; they are started by ofi_trig_run at a point where the
 * caller holds no provider lock: the application's counter calls, and
 * the provider's own unlock (tcp_ep_unlock). Started operations are
 * ordinary calls on the endpoint; deferred ones carry OFI_TRIG_WORK so
 * util_comp.c reports them to their completion counter instead of the
 * endpoint's CQ and counters.
 */
#ifndef OFI_TRIGGER_H
#define OFI_TRIGGER_H

#include <rdma/fi_trigger.h>

#include "ofi_util.h"

/* Op flag of a started deferred work item: its context is the struct
 * fi_deferred_work (bits 60 and 61 are OFI_COLL_INTERNAL and
 * OFI_MR_INTERNAL). */
#define OFI_TRIG_WORK (1ULL << 62)

/* Per-array limit of an FI_TRIGGER call's copied descriptors. */
#define OFI_TRIG_IOV_MAX 16

/* An endpoint's wrapped calls: the provider's tables with the *msg calls
 * (fi_trigger(3), FI_FENCE) and fi_cancel replaced. Its plain calls are
 * util's (ofi_plain.h), which call the *msg entry of their fid: with the
 * endpoint's op flags, so FI_TRIGGER or FI_FENCE there pass the gate. */
struct ofi_trig_ep {
	struct fi_ops_ep ops; /* fi_cancel of a triggered call */
	struct fi_ops_msg msg;
	struct fi_ops_tagged tagged;
	struct fi_ops_rma rma;
	struct fi_ops_atomic atomic;
	const struct fi_ops_ep *iops;
	const struct fi_ops_msg *imsg;
	const struct fi_ops_tagged *itagged;
	const struct fi_ops_rma *irma;
	const struct fi_ops_atomic *iatomic;
	ofi_atomic32_t aliases; /* fi_ep_alias's, open */
};

extern ofi_atomic32_t ofi_trig_ready;

void ofi_trig_drain(void);

/* Starts what counter changes made ready; call holding no provider lock. */
static inline void ofi_trig_run(void)
{
	if (OFI_UNLIKELY(ofi_atomic_get32(&ofi_trig_ready)))
		ofi_trig_drain();
}

/* A counter changed: moves what it satisfied to the ready list. */
void ofi_trig_cntr_check(struct util_cntr *cntr);

static inline void ofi_trig_cntr_changed(struct util_cntr *cntr)
{
	/* seq_cst: see ofi_cntr_inc */
	if (OFI_UNLIKELY(ofi_atomic_get32_sc(&cntr->trig_cnt)))
		ofi_trig_cntr_check(cntr);
}

/* Counter or endpoint closing: drops every operation naming it. */
void ofi_trig_cntr_close(struct util_cntr *cntr);
void ofi_trig_ep_close(struct util_ep *ep);

/*
 * Installs the wrapped data calls on @ep (after the provider set its
 * tables, whose plain calls are ofi_plain.h's) when its caps ask
 * FI_TRIGGER and its domain offers triggers (domain->trig), or ask
 * FI_FENCE and the domain offers triggers or the provider set tx_busy
 * (fences without triggers). 0 or -FI_ENOMEM.
 */
int ofi_trig_ep_wrap(struct util_ep *ep);

/* fi_ep_alias (FI_ALIAS) of a wrapped @ep: -FI_ENOSYS when not wrapped. */
int ofi_trig_ep_alias(struct util_ep *ep, struct fi_alias *arg);

/* fi_control on a domain: FI_QUEUE_WORK, FI_CANCEL_WORK, FI_FLUSH_WORK
 * where domain->trig, -FI_ENOSYS otherwise and for other commands. */
int ofi_trig_domain_control(struct fid *fid, int command, void *arg);

/* A started deferred item completed (util_comp.c): its op context and
 * flags, and the counter it reports to. */
void *ofi_trig_work_context(const struct fi_deferred_work *work);
uint64_t ofi_trig_work_flags(const struct fi_deferred_work *work);

#endif /* OFI_TRIGGER_H */
