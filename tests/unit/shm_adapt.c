/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_adapt.c - unit tests of shm's per-peer choice between streaming and
 * CMA (prov/shm/shm_adapt.c), driven with a made-up clock: each path is
 * given a throughput, windows of transfers are issued and completed at
 * that rate, and the tests check which path new transfers take; and that
 * a domain with copy overrides never adapts (shm_adapt_wanted in shm.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shm.h"

#define T_WINDOW 64

struct t_link {
	struct shm_adapt a;
	uint64_t now;	   /* ns */
	uint64_t mbps[2];  /* each path's throughput, MB/s */
	uint64_t bytes[2]; /* moved by each path */
	unsigned switches; /* completions that reported a switch */
};

/* Bytes at @mbps take this many ns. */
static uint64_t t_ns(size_t bytes, uint64_t mbps)
{
	return bytes * 1000 / mbps;
}

/*
 * One window: @n transfers of @size issued at once, each on the path the
 * state names at its issue, completed back to back at its path's rate,
 * then an idle gap.
 */
static void t_window(struct t_link *l, size_t size, int n)
{
	struct shm_adapt_tx tx[T_WINDOW];
	int i;

	assert_true(n <= T_WINDOW);
	memset(tx, 0, sizeof(tx));
	for (i = 0; i < n; i++)
		shm_adapt_issue(&l->a, &tx[i], shm_adapt_cma(&l->a), size,
				l->now);
	for (i = 0; i < n; i++) {
		l->now += t_ns(size, l->mbps[tx[i].path]);
		l->bytes[tx[i].path] += size;
		if (shm_adapt_done(&l->a, &tx[i], size, true, l->now))
			l->switches++;
	}
	assert_int_equal(l->a.inflight[0], 0);
	assert_int_equal(l->a.inflight[1], 0);
	l->now += 5000;
}

static void t_run(struct t_link *l, size_t size, uint64_t total)
{
	uint64_t moved = 0;

	while (moved < total) {
		t_window(l, size, T_WINDOW);
		moved += (uint64_t)size * T_WINDOW;
	}
}

/* What the last comparison chose (a run may end inside a probe). */
static bool t_cma(const struct t_link *l)
{
	return l->a.chosen == SHM_ADAPT_CMA;
}

static void t_link_init(struct t_link *l, uint64_t sar, uint64_t cma)
{
	memset(l, 0, sizeof(*l));
	l->now = 1000000;
	l->mbps[SHM_ADAPT_SAR] = sar;
	l->mbps[SHM_ADAPT_CMA] = cma;
}

/* A fresh peer streams. */
static void fresh_peer_streams(void **state)
{
	struct shm_adapt a;

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_false(shm_adapt_cma(&a));
	/* Two classes, measured apart. */
	assert_int_equal(shm_adapt_class(SHM_ADAPT_MIN), 0);
	assert_int_equal(shm_adapt_class(SHM_ADAPT_BIG - 1), 0);
	assert_int_equal(shm_adapt_class(SHM_ADAPT_BIG), 1);
	assert_true(shm_adapt_class(4 << 20) < SHM_ADAPT_CLASSES);
}

/* Streaming is faster: probes of CMA lose, and grow rarer. */
static void sar_faster_stays(void **state)
{
	struct t_link l;

	(void)state;
	t_link_init(&l, 25000, 10000);
	t_run(&l, 64 * 1024, 2ULL << 30);
	assert_false(t_cma(&l));
	assert_int_equal(l.switches, 0);
	/* It did ask: CMA carried some bytes, but under 2% of them. */
	assert_true(l.bytes[SHM_ADAPT_CMA] > 0);
	assert_true(l.bytes[SHM_ADAPT_CMA] * 50 < l.bytes[SHM_ADAPT_SAR]);
	/* Losing probes back off to the cap. */
	assert_int_equal(l.a.exploit, SHM_ADAPT_EXPLOIT_MAX);
}

/* CMA is faster: the peer moves to it after the first probe. */
static void cma_faster_switches(void **state)
{
	struct t_link l;

	(void)state;
	t_link_init(&l, 6000, 10000);
	t_run(&l, 256 * 1024, SHM_ADAPT_EXPLOIT_BASE + (16ULL << 20));
	assert_true(t_cma(&l));
	assert_int_equal(l.switches, 1);
	assert_int_equal(shm_adapt_rate(&l.a), 10000);
	/* And stays there while that holds. */
	t_run(&l, 256 * 1024, 1ULL << 30);
	assert_true(t_cma(&l));
	assert_int_equal(l.switches, 1);
	assert_true(l.bytes[SHM_ADAPT_CMA] > 4 * l.bytes[SHM_ADAPT_SAR]);
}

/* The machine changes: the choice follows, both ways. */
static void follows_the_machine(void **state)
{
	struct t_link l;

	(void)state;
	t_link_init(&l, 25000, 10000);
	t_run(&l, 1024 * 1024, 512ULL << 20);
	assert_false(t_cma(&l));
	l.mbps[SHM_ADAPT_SAR] = 5000; /* the cores' shared path slows */
	t_run(&l, 1024 * 1024, 2ULL << 30);
	assert_true(t_cma(&l));
	l.mbps[SHM_ADAPT_SAR] = 25000;
	t_run(&l, 1024 * 1024, 2ULL << 30);
	assert_false(t_cma(&l));
	assert_int_equal(l.switches, 2);
}

/*
 * A window deeper than a probe: only the probe's share of it takes the
 * probed path, the rest stays on the chosen one.
 */
static void deep_window_probes_little(void **state)
{
	struct t_link l;

	(void)state;
	t_link_init(&l, 21000, 10000);
	t_run(&l, 4 << 20, 2ULL << 30);
	assert_false(t_cma(&l));
	assert_int_equal(l.switches, 0);
	assert_true(l.bytes[SHM_ADAPT_CMA] > 0);
	assert_true(l.bytes[SHM_ADAPT_CMA] * 20 < l.bytes[SHM_ADAPT_SAR]);
}

/*
 * A stream that never drains: @depth transfers always in flight, each
 * completion followed by the next issue. A probe's transfers then share
 * their time with the chosen path's and measure nothing.
 */
static void t_stream(struct t_link *l, size_t size, uint64_t total, int depth)
{
	struct shm_adapt_tx tx[T_WINDOW];
	uint64_t moved = 0;
	int i, head = 0;

	assert_true(depth <= T_WINDOW);
	memset(tx, 0, sizeof(tx));
	for (i = 0; i < depth; i++)
		shm_adapt_issue(&l->a, &tx[i], shm_adapt_cma(&l->a), size,
				l->now);
	while (moved < total) {
		l->now += t_ns(size, l->mbps[tx[head].path]);
		l->bytes[tx[head].path] += size;
		if (shm_adapt_done(&l->a, &tx[head], size, true, l->now))
			l->switches++;
		moved += size;
		shm_adapt_issue(&l->a, &tx[head], shm_adapt_cma(&l->a), size,
				l->now);
		head = (head + 1) % depth;
	}
}

/*
 * In such a stream a probe keeps at most its own share in flight, and is
 * given up after SHM_ADAPT_PROBE_TRIES unmeasured transfers: it costs
 * little and never wedges the choice.
 */
static void endless_stream_gives_up(void **state)
{
	struct t_link l;

	(void)state;
	t_link_init(&l, 25000, 10000);
	t_stream(&l, 1024 * 1024, 2ULL << 30, 16);
	assert_false(t_cma(&l));
	assert_int_equal(l.switches, 0);
	assert_true(l.bytes[SHM_ADAPT_CMA] > 0);
	assert_true(l.bytes[SHM_ADAPT_CMA] * 20 < l.bytes[SHM_ADAPT_SAR]);
	/* Given up as lost: the probes back off like lost ones. */
	assert_true(l.a.exploit > SHM_ADAPT_EXPLOIT_BASE);
}

/* Within the margin, the chosen path stays: no flapping on noise. */
static void margin_keeps_choice(void **state)
{
	struct t_link l;

	(void)state;
	t_link_init(&l, 10000, 10400);
	t_run(&l, 64 * 1024, 1ULL << 30);
	assert_false(t_cma(&l));
	assert_int_equal(l.switches, 0);
}

/*
 * Transfers issued while the other path had some in flight are not
 * measured, and failed ones never are: a probe made only of such
 * transfers decides nothing.
 */
static void unmeasured_transfers(void **state)
{
	struct shm_adapt_tx sar, cma[8];
	struct shm_adapt a;
	uint64_t now = 1000;
	int i;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.path = SHM_ADAPT_CMA; /* a probe of CMA */
	a.recent.bytes = 8 << 20;
	a.recent.ns = 8 << 20; /* SAR at 1000 MB/s: any CMA rate wins */
	a.recent.xfers = 8;
	memset(&sar, 0, sizeof(sar));
	memset(cma, 0, sizeof(cma));
	shm_adapt_issue(&a, &sar, false, 1 << 20, now);
	for (i = 0; i < 8; i++)
		shm_adapt_issue(&a, &cma[i], true, 1 << 20, now);
	for (i = 0; i < 8; i++)
		assert_false(cma[i].measure);
	for (i = 0; i < 8; i++)
		assert_false(shm_adapt_done(&a, &cma[i], 1 << 20, true,
					    now += 1000));
	assert_false(shm_adapt_done(&a, &sar, 1 << 20, true, now += 1000));
	assert_true(shm_adapt_cma(&a));
	assert_int_equal(a.cur.bytes, 0);
	/* Measured now, but failing: still nothing. */
	for (i = 0; i < 8; i++) {
		shm_adapt_issue(&a, &cma[i], true, 1 << 20, now);
		assert_true(cma[i].measure);
		assert_false(shm_adapt_done(&a, &cma[i], 1 << 20, false,
					    now += 1000));
	}
	assert_int_equal(a.cur.bytes, 0);
	/* The failed ones left the probe its budget. */
	assert_int_equal(a.probe_xfers, 0);
	assert_true(shm_adapt_cma(&a));
	/*
	 * Measured and done: the probe decides. Its 2 MiB are issued by the
	 * 4th of 512 KiB; the 5th takes the chosen path again.
	 */
	for (i = 0; i < 4; i++)
		shm_adapt_issue(&a, &cma[i], true, 1 << 19, now);
	assert_false(shm_adapt_cma(&a));
	for (i = 0; i < 3; i++)
		assert_false(shm_adapt_done(&a, &cma[i], 1 << 19, true,
					    now += 1000));
	assert_true(shm_adapt_done(&a, &cma[3], 1 << 19, true, now += 1000));
	assert_true(shm_adapt_cma(&a));
	assert_int_equal(a.chosen, SHM_ADAPT_CMA);
	/* A completion counted twice or never issued changes nothing. */
	assert_false(shm_adapt_done(&a, &cma[3], 1 << 19, true, now += 1000));
	assert_int_equal(a.inflight[0], 0);
	assert_int_equal(a.inflight[1], 0);
}

/* Issues @n transfers of @size one at a time; how many went by CMA. */
static int t_issue_cma(struct t_link *l, size_t size, int n)
{
	struct shm_adapt_tx tx;
	int i, cma = 0;

	for (i = 0; i < n; i++) {
		memset(&tx, 0, sizeof(tx));
		shm_adapt_issue(&l->a, &tx, shm_adapt_cma(&l->a), size, l->now);
		cma += tx.path == SHM_ADAPT_CMA;
		l->now += t_ns(size, l->mbps[tx.path]);
		shm_adapt_done(&l->a, &tx, size, true, l->now);
	}
	return cma;
}

/*
 * A peer that stops draining our streams (it shares our core): from the
 * report on, transfers go by CMA at once, for SHM_ADAPT_CONT_BASE, twice
 * as many after each new report, and none once the peer ran beside us;
 * the measured choice is left as it was.
 */
static void contention_switches_and_back(void **state)
{
	struct t_link l;

	(void)state;
	t_link_init(&l, 25000, 10000);
	t_run(&l, 1024 * 1024, 256ULL << 20);
	assert_false(t_cma(&l));
	assert_false(shm_adapt_cma(&l.a));

	shm_adapt_contended(&l.a);
	assert_true(shm_adapt_cma(&l.a));
	assert_int_equal(t_issue_cma(&l, 1024 * 1024, SHM_ADAPT_CONT_BASE),
			 SHM_ADAPT_CONT_BASE);
	assert_false(shm_adapt_cma(&l.a));
	/* Reports while the run lasts do not stretch it. */
	shm_adapt_contended(&l.a);
	shm_adapt_contended(&l.a);
	assert_int_equal(t_issue_cma(&l, 1024 * 1024, 4 * SHM_ADAPT_CONT_BASE),
			 2 * SHM_ADAPT_CONT_BASE);
	/* Still contended: ever longer runs, up to the cap. */
	while (l.a.cont_len < SHM_ADAPT_CONT_MAX) {
		shm_adapt_contended(&l.a);
		assert_int_equal(t_issue_cma(&l, 1024 * 1024, 1), 1);
		l.a.cont_left = 0;
	}
	shm_adapt_contended(&l.a);
	assert_int_equal(l.a.cont_left, SHM_ADAPT_CONT_MAX);

	/* The peer runs again: back to streaming at the next transfer. */
	shm_adapt_running(&l.a);
	assert_false(shm_adapt_cma(&l.a));
	assert_int_equal(t_issue_cma(&l, 1024 * 1024, 64), 0);
	shm_adapt_contended(&l.a);
	assert_int_equal(l.a.cont_left, SHM_ADAPT_CONT_BASE);
	/* None of this changed what the measurements chose. */
	assert_false(t_cma(&l));
	assert_int_equal(l.switches, 0);
}

static ssize_t t_copy_from(void *dest, size_t size, enum fi_hmem_iface iface,
			   uint64_t device, const struct iovec *iov,
			   size_t iov_count, uint64_t iov_offset)
{
	(void)dest, (void)iface, (void)device, (void)iov, (void)iov_count;
	(void)iov_offset;
	return (ssize_t)size;
}

static ssize_t t_copy_to(enum fi_hmem_iface iface, uint64_t device,
			 const struct iovec *iov, size_t iov_count,
			 uint64_t iov_offset, const void *src, size_t size)
{
	(void)iface, (void)device, (void)iov, (void)iov_count;
	(void)iov_offset, (void)src;
	return (ssize_t)size;
}

/* Whether transfers of 8 KiB and 1 MiB to @p would adapt (shm.h). */
static int t_wanted(const struct shm_ep *ep, const struct shm_tx_peer *p)
{
	return shm_adapt_wanted(ep, p, FI_HMEM_SYSTEM, 1, 8192, false) +
	       shm_adapt_wanted(ep, p, FI_HMEM_SYSTEM, 1, 1 << 20, true);
}

/*
 * A domain with a copy override never adapts, even to a contended peer:
 * CMA would move the bytes past the override, which tcp and sockets
 * promise sees every payload (fi_set_op(3)).
 */
static void overrides_never_adapt(void **state)
{
	static struct util_domain dom;
	static struct shm_ep ep;
	static struct shm_tx_peer p;
	size_t c;

	(void)state;
	ep.util.domain = &dom;
	ep.adapt = true;
	ep.cma_threshold = SIZE_MAX;
	p.cma_ok = true;
	for (c = 0; c < SHM_ADAPT_CLASSES; c++)
		shm_adapt_contended(&p.adapt[c]);
	/* Without overrides both sizes go by CMA now. */
	assert_int_equal(t_wanted(&ep, &p), 2);
	assert_true(shm_adapt_now_cma(&p, 8192));
	assert_true(shm_adapt_now_cma(&p, 1 << 20));

	dom.hmem_override.copy_from_hmem_iov = t_copy_from;
	assert_int_equal(t_wanted(&ep, &p), 0);
	dom.hmem_override.copy_to_hmem_iov = t_copy_to;
	assert_int_equal(t_wanted(&ep, &p), 0);
	dom.hmem_override.copy_from_hmem_iov = NULL;
	assert_int_equal(t_wanted(&ep, &p), 0);
	/* Overrides reset (fi_set_op with NULL): adapting again. */
	dom.hmem_override.copy_to_hmem_iov = NULL;
	assert_int_equal(t_wanted(&ep, &p), 2);
}

/*
 * Past FI_SHM_CMA_THRESHOLD RMA streams, but not to a peer that stopped
 * draining streams: a 32 MiB read to it goes by CMA, where it used to
 * stream on with a handoff of the core every few segments (OpenSHMEM's
 * bigget beside a busy process). A message that size goes by CMA anyway,
 * and nothing past the threshold adapts otherwise.
 */
static void rma_past_threshold(void **state)
{
	static struct util_domain dom;
	static struct shm_ep ep;
	static struct shm_tx_peer p;
	const size_t big = 32 << 20;
	size_t c;

	(void)state;
	ep.util.domain = &dom;
	ep.adapt = true;
	ep.cma_threshold = 4 << 20;
	p.cma_ok = true;
	assert_false(shm_adapt_wanted(&ep, &p, FI_HMEM_SYSTEM, 1, big, true));
	for (c = 0; c < SHM_ADAPT_CLASSES; c++)
		shm_adapt_contended(&p.adapt[c]);
	assert_true(shm_adapt_wanted(&ep, &p, FI_HMEM_SYSTEM, 1, big, true));
	assert_true(shm_adapt_now_cma(&p, big));
	assert_false(shm_adapt_wanted(&ep, &p, FI_HMEM_SYSTEM, 1, big, false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fresh_peer_streams),
		cmocka_unit_test(sar_faster_stays),
		cmocka_unit_test(cma_faster_switches),
		cmocka_unit_test(follows_the_machine),
		cmocka_unit_test(deep_window_probes_little),
		cmocka_unit_test(endless_stream_gives_up),
		cmocka_unit_test(margin_keeps_choice),
		cmocka_unit_test(unmeasured_transfers),
		cmocka_unit_test(contention_switches_and_back),
		cmocka_unit_test(overrides_never_adapt),
		cmocka_unit_test(rma_past_threshold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
