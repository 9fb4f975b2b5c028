/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_coll.h - the collective engine's one interface (prov/util/coll/, the
 * 1.17 collective API implemented once over a provider's own RMA writes,
 * for every provider whose endpoints embed struct util_ep): all a
 * provider, util_ep/util_comp and the core may use of it. AV sets
 * (prov/util/util_av_set.c), which groups are joined from, live here
 * too. The engine's internals (state, schedules) are in
 * prov/util/coll/coll_priv.h, for its own files and its unit tests only.
 */
#ifndef OFI_COLL_H
#define OFI_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ofi_util.h"

/* ------------------------------------------------------------------ */
/* AV sets.                                                             */

struct util_av_set {
	struct fid_av_set set_fid;
	struct util_av *av;
	ofi_mutex_t lock;
	fi_addr_t *addrs; /* members in set order */
	size_t count;
	size_t cap;
};

/* A copy of @set's members (caller frees *addrs); -FI_EINVAL if @set is
 * not a util AV set. */
int ofi_av_set_members(const struct fid_av_set *set, struct util_av **av,
		       fi_addr_t **addrs, size_t *count);

/* ------------------------------------------------------------------ */
/* Bounds of the engine's parameters.                                  */

/*
 * Bounds of FI_COLL_FANOUT and FI_COLL_SLOT_SIZE (src/param.c): a fan-out
 * sizes arrays on the stack, and a slot size times the group's slots sizes
 * its region, which must neither wrap nor ask for more than a host has.
 */
#define OFI_COLL_FANOUT_MAX    256
#define OFI_COLL_SLOT_SIZE_MAX (4 * 1024 * 1024)

/* ------------------------------------------------------------------ */
/* User-defined reductions (fi_set_op FI_OVERRIDE_USER_OP).             */

/* Registered ops take values FI_USER_OP_BASE .. + OFI_COLL_USER_OPS - 1. */
#define OFI_COLL_USER_OPS 256

/* fi_set_op(FI_OVERRIDE_USER_OP), from util_override.c. */
int ofi_coll_user_op_set(union fi_override_op *fn, uint64_t flags);

/* ------------------------------------------------------------------ */
/* Engine hooks into util_ep / util_comp / providers.                   */

/*
 * Op flag of the engine's own RMA writes: their completions go to the
 * engine (ofi_coll_rma_done), never to the application's CQ or counters.
 * Bit 60 lies in the range 1.17 leaves to providers.
 */
#define OFI_COLL_INTERNAL (1ULL << 60)

/*
 * An internal write that also carries FI_INJECT_COMPLETE needs no answer
 * from the target: the engine learns of its landing from the remote CQ
 * data and its own acks, and only wants its buffer back. A provider may
 * complete it once the bytes left (tcp: TCP_F_NO_RESP); a target-side
 * failure then goes unreported, which the engine's probes cover.
 */
#define OFI_COLL_NO_ANSWER (OFI_COLL_INTERNAL | FI_INJECT_COMPLETE)

/* The context of every internal write starts with this. */
void ofi_coll_rma_done(void *context, int err);

/*
 * Target side: a remote write with CQ data into an engine region (an
 * OFI_MR_INTERNAL registration, whose context is @mr_context) landed;
 * called by ofi_ep_rma_target_complete with the registration held.
 */
void ofi_coll_rma_landed(void *mr_context, uint64_t data);

/*
 * Optional, lent by a provider whose peers share this host's memory (shm,
 * util_ep.coll_shared): a group's region is placed in memory its members
 * map, and the engine's slot chunks, acks and flags to a peer whose
 * region it mapped become plain stores there followed by a release store
 * of the flag: no command, no progress on the target's side. Everything
 * else (hellos, probes, large direct chunks, peers not mapped) stays on
 * the provider's RMA. A peer may write anything into our region, as it
 * may by RMA: we read from it only our own slots, for lengths we compute.
 */
struct ofi_coll_shared {
	/* Our region @key of @len bytes, zeroed and mappable by peers;
	 * NULL: none (the engine's private one takes RMA only). */
	void *(*create)(struct util_ep *ep, uint64_t key, size_t len);
	/* Its name removed: every peer mapped it, or the group closes. */
	void (*unlink)(struct util_ep *ep, uint64_t key);
	/* Peer @addr's region @key of @len bytes mapped here, NULL if not
	 * (not yet created, or not reachable so). */
	void *(*map)(struct util_ep *ep, fi_addr_t addr, uint64_t key,
		     size_t len);
	/* A mapping from create or map undone. */
	void (*unmap)(void *p, size_t len);
	/* After stores into @addr's region: its reader woken if it sleeps
	 * (pairs with the sleeper's ofi_coll_wait_ready). */
	void (*wake)(struct util_ep *ep, fi_addr_t addr);
};

/*
 * For a provider's wait_arm, after it announced it sleeps and fenced:
 * whether stores a peer made already give the engine work (a chunk or
 * an ack landed), so the reader must not sleep. Never blocks (true when
 * the engine is busy in another thread).
 */
bool ofi_coll_wait_ready(struct util_ep *ep);

/* fi_getinfo: offer FI_COLLECTIVE on FI_EP_RDM when @hints ask for it. */
void ofi_coll_info(const struct fi_info *hints, struct fi_info *fi);

/* ofi_ep_init: an endpoint with FI_COLLECTIVE lends its RMA to the engine. */
void ofi_coll_ep_init(struct util_ep *ep);
/* FI_ENABLE: collective ops, fi_join, progress wrapper (0 or fi_errno). */
int ofi_coll_ep_enable(struct util_ep *ep);
/* First half of close: off the EQ's progress list. */
void ofi_coll_ep_detach(struct util_ep *ep);
/* Groups still joined: closing the endpoint answers -FI_EBUSY. */
bool ofi_coll_ep_busy(struct util_ep *ep);
/* Last half of close: closed groups still parked are freed. */
void ofi_coll_ep_close(struct util_ep *ep);

#endif /* OFI_COLL_H */
