/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_adapt.c - which path a large transfer to a peer takes: a stream
 * through our channels (SHM_PROTO_SAR: we copy in while the peer copies
 * out, in parallel) or CMA (the peer copies alone, in the kernel).
 *
 * Neither is always faster. Streaming moves every byte from one core's
 * caches to the other's; where the two cores share a fast path it runs at
 * 25+ GB/s, but on a shared host that path can fall to 5-6 GB/s for
 * seconds at a time (a two-thread copy ring without libfabric shows the
 * same). CMA costs a system call and page pinning per transfer and runs
 * at the kernel's 10-11 GB/s, less when its source is not in the copying
 * core's caches. So each peer measures: it takes one path (a fresh peer
 * streams) for a while, tries the other for SHM_ADAPT_PROBE_BYTES, and
 * keeps whichever moved its bytes faster. A probe that loses is tried
 * again after twice as many bytes, up to SHM_ADAPT_EXPLOIT_MAX, so a
 * stable machine pays little for asking.
 *
 * A transfer's service time runs from its issue, or from the previous
 * completion to that peer when that came later, to its own completion:
 * with many in flight, completions come at the path's throughput; a lone
 * transfer counts its whole latency. Transfers issued while the other
 * path still had some in flight are not measured, as the two would share
 * the time.
 *
 * Measuring takes many transfers; a peer that shares our core, or is not
 * scheduled for another reason, needs an answer within a few: a stream
 * makes it run once per few segments, each time a handoff of the core,
 * where CMA needs one per transfer. So a stream the peer leaves full past
 * the spin budget (shm_send.c) is reported here and sends the next
 * SHM_ADAPT_CONT_BASE transfers by CMA, twice as many each time the
 * stream stalls again, and none as soon as a CMA transfer completes while
 * we kept our core (the peer ran beside us).
 * Everything here runs under the endpoint lock.
 */
#include <string.h>

#include "shm_adapt.h"

void shm_adapt_issue(struct shm_adapt *a, struct shm_adapt_tx *t, bool cma,
		     size_t bytes, uint64_t now)
{
	t->path = cma ? SHM_ADAPT_CMA : SHM_ADAPT_SAR;
	t->t = now ? now : 1;
	t->measure = !a->inflight[!t->path];
	t->probe = a->path != a->chosen && t->path == a->path;
	t->phase = a->phase;
	t->cont = cma && a->cont_left;
	if (t->cont)
		a->cont_left--;
	if (t->probe) {
		a->probe_bytes += bytes;
		a->probe_xfers++;
	}
	a->inflight[t->path]++;
}

static void shm_adapt_acc_add(struct shm_adapt_acc *acc, size_t bytes,
			      uint64_t ns)
{
	acc->bytes += bytes;
	acc->ns += ns ? ns : 1;
	acc->xfers++;
}

/* Whether @fast moved its bytes SHM_ADAPT_MARGIN percent faster. */
static bool shm_adapt_faster(const struct shm_adapt_acc *fast,
			     const struct shm_adapt_acc *slow)
{
	double f = (double)fast->bytes * (double)slow->ns * 100.0;
	double s = (double)slow->bytes * (double)fast->ns *
		   (100.0 + SHM_ADAPT_MARGIN);

	return f > s;
}

static void shm_adapt_phase(struct shm_adapt *a, uint8_t path)
{
	a->path = path;
	a->phase++;
	a->used = 0;
	a->probe_bytes = 0;
	a->probe_xfers = 0;
	a->probe_tries = 0;
	memset(&a->cur, 0, sizeof(a->cur));
}

/* On the chosen path: keep its recent rate, probe when it is time. */
static void shm_adapt_exploit(struct shm_adapt *a)
{
	uint64_t limit = a->exploit ? a->exploit : SHM_ADAPT_EXPLOIT_BASE;

	if (a->cur.bytes >= SHM_ADAPT_RECENT_BYTES) {
		a->used += a->cur.bytes;
		a->recent = a->cur;
		memset(&a->cur, 0, sizeof(a->cur));
	}
	if (a->used >= limit)
		shm_adapt_phase(a, !a->chosen);
}

/* The probe lost (or could not be measured): ask again later. */
static void shm_adapt_keep(struct shm_adapt *a)
{
	uint64_t limit = a->exploit ? a->exploit : SHM_ADAPT_EXPLOIT_BASE;

	a->exploit = limit * 2 < SHM_ADAPT_EXPLOIT_MAX ? limit * 2
						       : SHM_ADAPT_EXPLOIT_MAX;
	shm_adapt_phase(a, a->chosen);
}

/* On the other path: once measured, keep the faster. True: it won. */
static bool shm_adapt_probe(struct shm_adapt *a)
{
	if (a->cur.bytes < SHM_ADAPT_PROBE_BYTES ||
	    a->cur.xfers < SHM_ADAPT_PROBE_XFERS)
		return false;
	if (!shm_adapt_faster(&a->cur, &a->recent)) {
		shm_adapt_keep(a);
		return false;
	}
	a->chosen = a->path;
	a->recent = a->cur;
	a->exploit = SHM_ADAPT_EXPLOIT_BASE;
	a->switches++;
	shm_adapt_phase(a, a->chosen);
	return true;
}

/*
 * A probe transfer that failed, or shared its time with the other path,
 * measured nothing: it leaves room for another. A probe that cannot get
 * SHM_ADAPT_PROBE_TRIES clean transfers (the other path never drains) is
 * given up, as if it lost.
 */
static void shm_adapt_give_back(struct shm_adapt *a, size_t bytes, bool ok)
{
	a->probe_bytes -= a->probe_bytes < bytes ? a->probe_bytes : bytes;
	if (a->probe_xfers)
		a->probe_xfers--;
	if (ok && ++a->probe_tries > SHM_ADAPT_PROBE_TRIES)
		shm_adapt_keep(a);
}

bool shm_adapt_done(struct shm_adapt *a, struct shm_adapt_tx *t, size_t bytes,
		    bool ok, uint64_t now)
{
	uint64_t start;

	if (!t->t)
		return false;
	if (a->inflight[t->path])
		a->inflight[t->path]--;
	start = t->t > a->last_done ? t->t : a->last_done;
	t->t = 0;
	if (t->probe && t->phase == a->phase && (!ok || !t->measure))
		shm_adapt_give_back(a, bytes, ok);
	if (now < start)
		return false;
	a->last_done = now;
	/* Issued in another phase, or sharing time with the other path. */
	if (!ok || !t->measure || t->path != a->path)
		return false;
	shm_adapt_acc_add(&a->cur, bytes, now - start);
	if (a->path != a->chosen)
		return shm_adapt_probe(a);
	shm_adapt_exploit(a);
	return false;
}

void shm_adapt_contended(struct shm_adapt *a)
{
	if (a->cont_left)
		return;
	a->cont_len = a->cont_len ? a->cont_len * 2 : SHM_ADAPT_CONT_BASE;
	if (a->cont_len > SHM_ADAPT_CONT_MAX)
		a->cont_len = SHM_ADAPT_CONT_MAX;
	a->cont_left = a->cont_len;
}

void shm_adapt_running(struct shm_adapt *a)
{
	a->cont_left = 0;
	a->cont_len = 0;
}

uint64_t shm_adapt_rate(const struct shm_adapt *a)
{
	return a->recent.ns ? a->recent.bytes * 1000 / a->recent.ns : 0;
}
