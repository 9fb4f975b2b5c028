/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_peer.h - shm driven by another provider's endpoint: the same-host
 * path of tcp's RDM endpoint. The owner opens one shm endpoint
 * inside its own, in its own domain (MR keys, HMEM overrides and
 * threading are the owner's), and then:
 *  - sends, RMA, atomics and commits to a peer it routes through shm go
 *    to that endpoint's fid_ep ops, with the owner's fi_addr_t;
 *  - messages shm receives are matched in the owner's receive queues
 *    (struct ofi_match_queue, struct ofi_rx_buf), so one posted receive
 *    takes a message from either path, in arrival order per path;
 *  - completions and counters go to the owner's CQs and counters, and
 *    FI_SOURCE reports the owner's fi_addr_t for either path.
 * The owner serialises everything: every call below and every op of the
 * fid_ep is made under the owner's endpoint lock (shm takes none), and
 * the owner's progress calls shm_peer_progress().
 *
 * Addresses: the owner names each peer's shm region (addr_name) and maps
 * a region name back to its fi_addr (name_addr); shm never sees the
 * owner's address format.
 */
#ifndef SHM_PEER_H
#define SHM_PEER_H

#include <stdbool.h>

#include "ofi_match.h"
#include "ofi_util.h"

#define SHM_PEER_NAME_MAX  64 /* a region name, NUL included */
#define SHM_PEER_IOV_LIMIT 8  /* iovs of one op (fi_shm(7)) */

struct shm_owner {
	void *ctx;
	/* The region name of owner address @addr: 0 or a negative fi_errno. */
	int (*addr_name)(void *ctx, fi_addr_t addr, char *name);
	/* The owner's fi_addr of region @name (a peer's word: validate it),
	 * FI_ADDR_NOTAVAIL when it names no address of the owner's AV. */
	fi_addr_t (*name_addr)(void *ctx, const char *name);
	/* What FI_SOURCE reports for owner address @addr (FI_AV_USER_ID). */
	fi_addr_t (*src_addr)(void *ctx, fi_addr_t addr);
	/* Called under the owner's lock: shm's wake socket stopped
	 * announcing what a sleeper armed it for (shm_peer_wait_arm), so
	 * wake whoever sleeps on it (blocking reads, a progress thread),
	 * to arm again before they sleep on. */
	void (*wake)(void *ctx);
};

/*
 * Opens the shm endpoint of @owner_ep (whose info gives caps and
 * attributes) with region @name, matching in @mq. Call it once @owner_ep
 * has its address; the region exists from here on.
 */
int shm_peer_open(struct util_ep *owner_ep, struct ofi_match_queue *mq,
		  const struct shm_owner *owner, const char *name,
		  struct fid_ep **ep);
/* At the owner's fi_enable: completions go where the owner's do. */
void shm_peer_enable(struct fid_ep *ep, struct util_ep *owner_ep);
/*
 * Whether @addr is reached through shm: its region exists now, its owner
 * lives and took us as a sender. The owner decides once per address.
 */
bool shm_peer_connect(struct fid_ep *ep, fi_addr_t addr);
void shm_peer_progress(struct fid_ep *ep);
/* FI_FENCE of the owner: whether a transfer is still in flight. */
bool shm_peer_tx_busy(struct fid_ep *ep);
/*
 * Blocking reads of the owner: the fd a peer's traffic makes readable
 * (-1: none, poll instead), and its arming before a sleep on it, as
 * util_ep's wait_fd and wait_arm (an enum ofi_ep_wait).
 */
int shm_peer_wait_fd(struct fid_ep *ep);
int shm_peer_wait_arm(struct fid_ep *ep);
/* @addr left the owner's AV (applied at shm's next call). */
void shm_peer_addr_removed(struct fid_ep *ep, fi_addr_t addr);
/* fi_close(&ep->fid) closes it, before the owner's queues go. */

/* fi_query_atomic(3) of shm, so the owner can keep to its limits. */
int shm_peer_query_atomic(enum fi_datatype datatype, enum fi_op op,
			  struct fi_atomic_attr *attr, uint64_t flags);

#endif /* SHM_PEER_H */
