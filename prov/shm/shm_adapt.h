/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_adapt.h - the per-peer choice between streaming (SHM_PROTO_SAR) and
 * CMA for large transfers: state and calls, kept free of the provider's
 * objects so that tests/unit/shm_adapt.c drives it with a made-up clock.
 * Why and how: shm_adapt.c.
 */
#ifndef SHM_ADAPT_H
#define SHM_ADAPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Transfers from SHM_ADAPT_MIN up (to FI_SHM_CMA_THRESHOLD) adapt, in two
 * classes each peer measures apart (CMA's fixed cost weighs more on the
 * smaller): below SHM_ADAPT_BIG, and from it up.
 */
#define SHM_ADAPT_MIN	  (16 * 1024)
#define SHM_ADAPT_BIG	  (64 * 1024)
#define SHM_ADAPT_CLASSES 2
/* A probe measures at least this many bytes and transfers. */
#define SHM_ADAPT_PROBE_BYTES (2ULL << 20)
#define SHM_ADAPT_PROBE_XFERS 2
/* Unmeasured probe transfers before a probe is given up. */
#define SHM_ADAPT_PROBE_TRIES 8
/* Bytes on the chosen path before the next probe: doubles while probes
 * lose, up to the cap, and starts again at the base after a switch. */
#define SHM_ADAPT_EXPLOIT_BASE (32ULL << 20)
#define SHM_ADAPT_EXPLOIT_MAX  (512ULL << 20)
/* The chosen path's rate is that of its most recent bytes, about this
 * many (so that the comparison sees the machine as it is now). */
#define SHM_ADAPT_RECENT_BYTES (8ULL << 20)
/* A probe wins when it is this much faster (percent). */
#define SHM_ADAPT_MARGIN 5
/* A peer that stops draining our stream gets this many transfers by CMA,
 * twice as many each time it happens again, up to the cap. */
#define SHM_ADAPT_CONT_BASE 8
#define SHM_ADAPT_CONT_MAX  1024

enum shm_adapt_path {
	SHM_ADAPT_SAR = 0, /* what a fresh peer starts with */
	SHM_ADAPT_CMA,
};

struct shm_adapt_acc {
	uint64_t bytes;
	uint64_t ns;
	uint32_t xfers;
};

/* One per peer we send to; all zero is a fresh peer. */
struct shm_adapt {
	uint8_t path;	/* what new transfers take */
	uint8_t chosen; /* the last comparison's winner */
	uint32_t inflight[2];
	uint64_t last_done; /* ns of the last measured-path completion */
	uint64_t exploit;   /* bytes before the next probe (0: the base) */
	uint64_t used;	    /* bytes measured since the choice */
	struct shm_adapt_acc cur;    /* path's bytes since the phase began */
	struct shm_adapt_acc recent; /* chosen path: last complete chunk */
	uint32_t switches;	     /* times the chosen path changed */
	/*
	 * Transfers issued in this probe and not given back: once they
	 * cover it, new transfers take the chosen path again, so a deep
	 * window does not all go the probed way while the probe's first
	 * ones are measured.
	 */
	uint64_t probe_bytes;
	uint32_t probe_xfers;
	uint32_t probe_tries; /* given back unmeasured, this probe */
	uint32_t phase;	      /* changes with path */
	/* Contention (shm_adapt_contended): transfers still to go by CMA
	 * whatever was chosen, and the length of the last such run. */
	uint32_t cont_left;
	uint32_t cont_len;
};

/* One per transfer that adapts; t == 0: the transfer does not count. */
struct shm_adapt_tx {
	uint64_t t; /* issued, ns */
	uint32_t conn;
	uint8_t path;
	bool measure;	   /* the other path had nothing in flight at issue */
	bool probe;	   /* counted in its peer's probe_bytes */
	bool cont;	   /* sent by CMA because its peer was not draining */
	uint32_t phase;	   /* its peer's at issue */
	uint64_t handoffs; /* the caller's: ofi_yield_handoffs() at issue */
};

static inline unsigned shm_adapt_class(size_t size)
{
	return size >= SHM_ADAPT_BIG;
}

/* Whether a new transfer goes by CMA: the probed path until the probe
 * has issued enough, the chosen one otherwise. */
static inline bool shm_adapt_cma(const struct shm_adapt *a)
{
	if (a->cont_left)
		return true;
	if (a->path != a->chosen && a->probe_bytes >= SHM_ADAPT_PROBE_BYTES &&
	    a->probe_xfers >= SHM_ADAPT_PROBE_XFERS)
		return a->chosen == SHM_ADAPT_CMA;
	return a->path == SHM_ADAPT_CMA;
}

void shm_adapt_issue(struct shm_adapt *a, struct shm_adapt_tx *t, bool cma,
		     size_t bytes, uint64_t now);
/* True when this completion ended a probe that changed the path. */
bool shm_adapt_done(struct shm_adapt *a, struct shm_adapt_tx *t, size_t bytes,
		    bool ok, uint64_t now);
/*
 * The peer left a stream of ours full past the spin budget (it is not
 * running): the next transfers go by CMA, one handoff each.
 */
void shm_adapt_contended(struct shm_adapt *a);
/* A transfer sent by CMA for contention completed while we kept our core:
 * the peer runs again, and new transfers take the chosen path. */
void shm_adapt_running(struct shm_adapt *a);
/* The chosen path's recent rate, MB/s (10^6 B/s). */
uint64_t shm_adapt_rate(const struct shm_adapt *a);

#endif /* SHM_ADAPT_H */
