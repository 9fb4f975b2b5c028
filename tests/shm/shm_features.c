/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_features.c - functional checks of the shm provider through the public
 * API only: every protocol size (inline, inject, CMA, segmented), tagged
 * matching with ignore masks, directed receive, FI_SOURCE (also of a
 * sender inserted into the AV after its message came), unexpected
 * messages, round trips that reuse their inject buffers,
 * FI_PEEK/FI_CLAIM/FI_DISCARD, fi_cancel, truncation,
 * FI_MULTI_RECV, injectdata, rounds of unexpected messages whose
 * entries the provider recycles, what a backlog of unexpected small
 * messages costs in memory, windows of large messages in order across
 * shm's SAR/CMA probes, and a peer killed while a transfer waits on
 * it. Exit 0 when all pass; each failure names its check.
 *
 * Run by tests/shm/shm_features.sh once per protocol configuration, and
 * by tests/tcp/tcp_features.sh for the tcp provider: the provider is the
 * first argument (default shm). Only the shm provider must report a dead
 * peer as FI_EIO; others may name the cause (e.g. FI_ECONNRESET).
 * FEATURES_IPV6 set asks for FI_SOCKADDR_IN6 addresses.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "shm_check.h"
#include "test_proc.h"

#define NEP 3
static struct fi_info *info;
static struct fid_fabric *fab;
static struct fid_domain *dom;
static const char *prov = "shm"; /* the first argument: tcp too */
static struct fid_av *av;
static struct fid_ep *ep[NEP];
static struct fid_cq *cq[NEP];
static fi_addr_t addr[NEP];

/* Polls every CQ (progress for all) until @c has an entry or error. */
static ssize_t wait_cq(int c, struct fi_cq_tagged_entry *e, fi_addr_t *src,
		       struct fi_cq_err_entry *err)
{
	time_t end = time(NULL) + 10;
	ssize_t ret;
	int i;

	while (time(NULL) < end) {
		for (i = 0; i < NEP; i++) {
			if (i == c)
				continue;
			fi_cq_read(cq[i], NULL, 0);
		}
		ret = fi_cq_readfrom(cq[c], e, 1, src);
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(cq[c], err, 0);
			return -FI_EAVAIL;
		}
		if (ret != -FI_EAGAIN)
			return ret;
	}
	return -FI_ETIMEDOUT;
}

static ssize_t expect(int c, void *ctx, size_t len, uint64_t flags)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	ssize_t ret = wait_cq(c, &e, &src, &err);

	if (ret != 1) {
		fprintf(stderr, "  cq %d: ret %zd err %d\n", c, ret, err.err);
		return ret;
	}
	if (e.op_context != ctx || (len != (size_t)-1 && e.len != len) ||
	    (e.flags & flags) != flags) {
		fprintf(stderr, "  cq %d: ctx %p/%p len %zu/%zu flags %lx\n", c,
			e.op_context, ctx, e.len, len, (unsigned long)e.flags);
		return -FI_EOTHER;
	}
	return 0;
}

/*
 * Reaps the send completions of @c, whatever they are. This loop and the
 * others that wait on the provider are bounded by time (now_ms), not by a
 * count of calls alone: an idle fi_cq_read may sleep up to a millisecond
 * (fabric(7), FI_PROGRESS_SPIN), so a count that passes in a blink while
 * busy takes minutes once the thread is idle.
 */
static void drain(int c)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	double end = now_ms() + 50;
	int i;

	for (i = 0; i < 1000 && now_ms() < end; i++) {
		if (fi_cq_read(cq[c], &e, 1) == -FI_EAVAIL)
			fi_cq_readerr(cq[c], &err, 0);
	}
}

static ssize_t send_retry(int from, const void *buf, size_t len, int to,
			  uint64_t tag, bool tagged, void *ctx)
{
	double end = now_ms() + 10000;
	ssize_t ret;

	do {
		ret = tagged ? fi_tsend(ep[from], buf, len, NULL, addr[to], tag,
					ctx)
			     : fi_send(ep[from], buf, len, NULL, addr[to], ctx);
		if (ret != -FI_EAGAIN)
			return ret;
		fi_cq_read(cq[from], NULL, 0);
		fi_cq_read(cq[to], NULL, 0);
	} while (now_ms() < end);
	return ret;
}

static void fill(char *b, size_t n, int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (char)(i * 7 + seed);
}

/* The process's resident set, KiB; -1 if it cannot be read. */
static long resident_kib(void)
{
	long size, res = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

/*
 * Round trips of messages past the inline size and within one inject
 * buffer: each side's next send has its last buffer back, so the round
 * trips touch a few buffers, not the whole pool (shm's is 256 buffers of
 * a page, both ends mapped in this process, 2 MiB at least). Run first,
 * before other checks have touched the pool.
 */
static void t_inject_reuse(void)
{
	enum { ROUNDS = 600, LEN = 1000 };
	char s[LEN], r[LEN + 1];
	struct iovec iov[3];
	struct fi_msg_tagged m;
	struct fi_context ctx;
	long before = -1, grew;
	int i, from, to, bad = 0;

	for (i = 0; i < 2 * ROUNDS && !bad; i++) {
		if (i == 2) /* connected both ways: counted from here */
			before = resident_kib();
		from = i % 2;
		to = !from;
		fill(s, LEN, i);
		memset(r, 0x5a, sizeof(r));
		iov[0] = (struct iovec){r, 7};
		iov[1] = (struct iovec){r + 7, 500};
		iov[2] = (struct iovec){r + 507, sizeof(r) - 507};
		m = (struct fi_msg_tagged){.msg_iov = iov,
					   .iov_count = 3,
					   .addr = FI_ADDR_UNSPEC,
					   .tag = (uint64_t)i,
					   .context = &ctx};
		bad = fi_trecvmsg(ep[to], &m, 0) ?:
		      send_retry(from, s, LEN, to, (uint64_t)i, true, NULL) ?:
		      expect(to, &ctx, LEN, FI_RECV);
		drain(from);
		CHECK(!bad && !memcmp(r, s, LEN) && r[LEN] == 0x5a,
		      "inject reuse round trip %d", i);
		bad |= memcmp(r, s, LEN);
	}
	grew = resident_kib() - before;
	CHECK(before < 0 || grew < 512,
	      "inject reuse: resident set grew %ld KiB over %d round trips",
	      grew, ROUNDS);
}

static void t_sizes(void)
{
	static const size_t sizes[] = {
		0, 1, 8, 208, 209, 4096, 4097, 65536, 100000, 1 << 20, 3 << 20};
	size_t i, n;
	char *s = malloc(3 << 20), *r = malloc(3 << 20);

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		n = sizes[i];
		fill(s, n, (int)i);
		memset(r, 0, n);
		CHECK(!fi_recv(ep[1], r, n, NULL, FI_ADDR_UNSPEC, r), "recv");
		CHECK(!send_retry(0, s, n, 1, 0, false, s), "send %zu", n);
		CHECK(!expect(1, r, n, FI_RECV | FI_MSG), "rx %zu", n);
		CHECK(!expect(0, s, (size_t)-1, FI_SEND), "tx %zu", n);
		CHECK(!memcmp(s, r, n), "data %zu", n);
	}
	/* unexpected: send first, then receive */
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		n = sizes[i];
		fill(s, n, (int)i + 3);
		CHECK(!send_retry(0, s, n, 1, 0, false, s), "send %zu", n);
		if (n <= 4096)
			CHECK(!expect(0, s, (size_t)-1, FI_SEND), "tx %zu", n);
		fi_cq_read(cq[1], NULL, 0);
		CHECK(!fi_recv(ep[1], r, n, NULL, FI_ADDR_UNSPEC, r), "recv");
		CHECK(!expect(1, r, n, FI_RECV), "unexp rx %zu", n);
		if (n > 4096)
			CHECK(!expect(0, s, (size_t)-1, FI_SEND), "tx %zu", n);
		CHECK(!memcmp(s, r, n), "unexp data %zu", n);
	}
	free(s);
	free(r);
}

/*
 * The receive completions of a window of @win receives of @n bytes each,
 * @slice apart from @base, on cq 1: in posting order where the provider
 * promises it (FI_ORDER_STRICT in rx_attr.comp_order, shm's), else in any
 * order (sockets promises none: a message streamed through the same-host
 * path may complete after a later one read by CMA), each exactly once.
 */
static int expect_window(char *base, size_t slice, int win, size_t n)
{
	bool strict = info->rx_attr->comp_order & FI_ORDER_STRICT;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t seen = 0;
	fi_addr_t src;
	size_t k;
	int i;

	for (i = 0; i < win; i++) {
		if (strict) {
			if (expect(1, base + (size_t)i * slice, n, FI_RECV))
				return -1;
			continue;
		}
		if (wait_cq(1, &e, &src, &err) != 1)
			return -1;
		k = (char *)e.op_context < base
			    ? (size_t)win
			    : (size_t)((char *)e.op_context - base) / slice;
		if (k >= (size_t)win ||
		    (char *)e.op_context != base + k * slice ||
		    (seen & (1ULL << k)) || e.len != n ||
		    !(e.flags & FI_RECV)) {
			fprintf(stderr, "  cq 1: ctx %p len %zu/%zu\n",
				e.op_context, e.len, n);
			return -1;
		}
		seen |= 1ULL << k;
	}
	return 0;
}

/*
 * Windows of large tagged messages to one receiver, 40 MiB and more of
 * each of @sizes' FI_SHM_ADAPT classes: shm tries CMA against streaming
 * after 32 MiB of a class, so messages of both paths are in flight
 * together at least once. Every message lands in its own receive, in
 * order, intact.
 */
static void window_stream(const size_t *sizes, int nsizes, size_t total)
{
	enum { WIN = 16, SLICE = 1 << 20 };
	char *s = malloc((size_t)WIN * SLICE), *r = malloc((size_t)WIN * SLICE);
	size_t moved = 0, n;
	int w, i, seq = 0, bad = 0;

	for (w = 0; moved < total && !bad; w++) {
		n = sizes[w % nsizes];
		for (i = 0; i < WIN; i++) {
			fill(s + (size_t)i * SLICE, n, seq + i);
			memset(r + (size_t)i * SLICE, 0, n);
			CHECK(!fi_trecv(ep[1], r + (size_t)i * SLICE, n, NULL,
					FI_ADDR_UNSPEC, 0x77, 0,
					r + (size_t)i * SLICE),
			      "trecv");
		}
		for (i = 0; i < WIN; i++)
			CHECK(!send_retry(0, s + (size_t)i * SLICE, n, 1, 0x77,
					  true, NULL),
			      "tsend %zu", n);
		for (i = 0; i < WIN; i++)
			CHECK(!expect(0, NULL, (size_t)-1, FI_SEND), "tx %zu",
			      n);
		CHECK(!expect_window(r, SLICE, WIN, n), "rx %zu", n);
		for (i = 0; i < WIN; i++) {
			fill(s, n, seq + i);
			if (memcmp(s, r + (size_t)i * SLICE, n))
				bad++;
		}
		CHECK(!bad, "window %d: %d messages wrong or out of order", w,
		      bad);
		seq += WIN;
		moved += n * WIN;
	}
	free(s);
	free(r);
}

static void t_window_stream(void)
{
	static const size_t small[] = {16384, 24576, 40000};
	static const size_t big[] = {65536, 200000, 1 << 20};

	window_stream(small, 3, 40UL << 20);
	window_stream(big, 3, 48UL << 20);
}

static void t_tagged(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	uint64_t v[4] = {0}, out[4] = {11, 22, 33, 44};
	int i;

	/* posted out of order with an ignore mask on the last */
	CHECK(!fi_trecv(ep[1], &v[0], 8, NULL, FI_ADDR_UNSPEC, 0x30, 0, &v[0]),
	      "trecv");
	CHECK(!fi_trecv(ep[1], &v[1], 8, NULL, FI_ADDR_UNSPEC, 0x10, 0, &v[1]),
	      "trecv");
	CHECK(!fi_trecv(ep[1], &v[2], 8, NULL, FI_ADDR_UNSPEC, 0x200, 0xff,
			&v[2]),
	      "trecv");
	CHECK(!send_retry(0, &out[0], 8, 1, 0x10, true, NULL), "tsend");
	CHECK(!send_retry(0, &out[1], 8, 1, 0x2ab, true, NULL), "tsend");
	CHECK(!send_retry(0, &out[2], 8, 1, 0x30, true, NULL), "tsend");
	for (i = 0; i < 3; i++)
		CHECK(!expect(0, NULL, (size_t)-1, FI_SEND | FI_TAGGED), "tx");
	for (i = 0; i < 3; i++)
		CHECK(wait_cq(1, &e, &src, &err) == 1, "rx");
	CHECK(v[1] == 11 && v[2] == 22 && v[0] == 33, "tag match %lu %lu %lu",
	      (unsigned long)v[0], (unsigned long)v[1], (unsigned long)v[2]);
}

/*
 * A sender not in the receiver's AV yet (Open MPI adds peers on first
 * contact): its message waits as unexpected; after fi_av_insert, a
 * receive directed at the new fi_addr takes it and FI_SOURCE names it.
 */
static void t_late_insert(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_ep *late = NULL;
	struct fid_cq *lcq = NULL;
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED};
	uint64_t v = 77, r = 0;
	fi_addr_t la = FI_ADDR_NOTAVAIL, src = FI_ADDR_NOTAVAIL;
	char name[256];
	size_t len = sizeof(name);
	double end;
	ssize_t ret;
	int i;

	CHECK(!fi_endpoint(dom, info, &late, NULL) &&
		      !fi_cq_open(dom, &ca, &lcq, NULL) &&
		      !fi_ep_bind(late, &lcq->fid, FI_TRANSMIT | FI_RECV) &&
		      !fi_ep_bind(late, &av->fid, 0) && !fi_enable(late) &&
		      !fi_getname(&late->fid, name, &len),
	      "late endpoint");
	end = now_ms() + 10000;
	do {
		ret = fi_tsend(late, &v, 8, NULL, addr[1], 0x1a7e, NULL);
		if (ret != -FI_EAGAIN)
			break;
		fi_cq_read(lcq, NULL, 0);
		fi_cq_read(cq[1], NULL, 0);
	} while (now_ms() < end);
	CHECK(!ret, "tsend from the late endpoint: %zd", ret);
	/* It arrives (unexpected) before its sender is in the AV. */
	end = now_ms() + 500;
	for (i = 0; i < 20000 && now_ms() < end; i++) {
		fi_cq_read(lcq, &e, 1);
		fi_cq_read(cq[1], NULL, 0);
	}
	CHECK(fi_av_insert(av, name, 1, &la, 0, NULL) == 1, "insert");
	CHECK(!fi_trecv(ep[1], &r, 8, NULL, la, 0x1a7e, 0, &r), "trecv");
	ret = wait_cq(1, &e, &src, &err);
	CHECK(ret == 1 && r == 77,
	      "directed receive after the insert: ret %zd data %lu", ret,
	      (unsigned long)r);
	CHECK(src == la, "source %lu, want %lu", (unsigned long)src,
	      (unsigned long)la);
	fi_av_remove(av, &la, 1, 0);
	fi_close(&late->fid);
	fi_close(&lcq->fid);
}

static void t_directed_source(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t a = 1, c = 2, r = 0;
	fi_addr_t src = FI_ADDR_NOTAVAIL;

	CHECK(!send_retry(0, &a, 8, 1, 5, true, NULL), "tsend a");
	CHECK(!send_retry(2, &c, 8, 1, 5, true, NULL), "tsend c");
	drain(0);
	drain(2);
	fi_cq_read(cq[1], NULL, 0);
	CHECK(!fi_trecv(ep[1], &r, 8, NULL, addr[2], 5, 0, &r), "trecv");
	CHECK(wait_cq(1, &e, &src, &err) == 1, "directed rx");
	CHECK(r == 2 && src == addr[2], "directed got %lu from %lu",
	      (unsigned long)r, (unsigned long)src);
	CHECK(!fi_trecv(ep[1], &r, 8, NULL, FI_ADDR_UNSPEC, 5, 0, &r), "trecv");
	CHECK(wait_cq(1, &e, &src, &err) == 1 && r == 1 && src == addr[0],
	      "source %lu", (unsigned long)src);
}

static void t_peek_claim(void)
{
	struct fi_context ctx;
	struct fi_msg_tagged m = {0};
	struct iovec iov;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	uint64_t a = 77, r = 0;

	m.tag = 9;
	m.addr = FI_ADDR_UNSPEC;
	m.context = &ctx;
	CHECK(!fi_trecvmsg(ep[1], &m, FI_PEEK), "peek");
	CHECK(wait_cq(1, &e, &src, &err) == -FI_EAVAIL && err.err == FI_ENOMSG,
	      "peek on empty: %d", err.err);
	CHECK(!send_retry(0, &a, 8, 1, 9, true, NULL), "tsend");
	drain(0);
	fi_cq_read(cq[1], NULL, 0);
	CHECK(!fi_trecvmsg(ep[1], &m, FI_PEEK | FI_CLAIM), "peek claim");
	CHECK(wait_cq(1, &e, &src, &err) == 1 && e.len == 8 && e.tag == 9,
	      "peek result");
	iov.iov_base = &r;
	iov.iov_len = 8;
	m.msg_iov = &iov;
	m.iov_count = 1;
	CHECK(!fi_trecvmsg(ep[1], &m, FI_CLAIM), "claim");
	CHECK(wait_cq(1, &e, &src, &err) == 1 && r == 77, "claimed data");
	CHECK(!send_retry(0, &a, 8, 1, 10, true, NULL), "tsend");
	drain(0);
	fi_cq_read(cq[1], NULL, 0);
	m.tag = 10;
	CHECK(!fi_trecvmsg(ep[1], &m, FI_PEEK | FI_DISCARD), "discard");
	CHECK(wait_cq(1, &e, &src, &err) == 1, "discard comp");
	CHECK(!fi_trecvmsg(ep[1], &m, FI_PEEK), "peek after discard");
	CHECK(wait_cq(1, &e, &src, &err) == -FI_EAVAIL && err.err == FI_ENOMSG,
	      "discarded message still there");
}

static void t_cancel_trunc(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	char big[300], small[100];

	CHECK(!fi_recv(ep[1], small, sizeof(small), NULL, FI_ADDR_UNSPEC,
		       small),
	      "recv");
	CHECK(!fi_cancel(&ep[1]->fid, small), "cancel");
	CHECK(wait_cq(1, &e, &src, &err) == -FI_EAVAIL &&
		      err.err == FI_ECANCELED && err.op_context == small,
	      "cancel comp %d", err.err);
	CHECK(fi_cancel(&ep[1]->fid, small) == -FI_ENOENT, "cancel twice");
	fill(big, sizeof(big), 1);
	CHECK(!fi_recv(ep[1], small, sizeof(small), NULL, FI_ADDR_UNSPEC,
		       small),
	      "recv");
	CHECK(!send_retry(0, big, sizeof(big), 1, 0, false, NULL), "send");
	drain(0);
	CHECK(wait_cq(1, &e, &src, &err) == -FI_EAVAIL &&
		      err.err == FI_ETRUNC && err.olen == 200 && err.len == 100,
	      "trunc %d olen %zu", err.err, err.olen);
	CHECK(!memcmp(big, small, sizeof(small)), "trunc data");
}

static void t_multi_recv(void)
{
	struct fi_msg m = {0};
	struct iovec iov;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	char buf[1000], s[300];
	int i, got = 0, released = 0;
	size_t min = 200;

	CHECK(!fi_setopt(&ep[1]->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			 &min, sizeof(min)),
	      "setopt");
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	m.msg_iov = &iov;
	m.iov_count = 1;
	m.addr = FI_ADDR_UNSPEC;
	m.context = buf;
	CHECK(!fi_recvmsg(ep[1], &m, FI_MULTI_RECV), "recvmsg");
	for (i = 0; i < 4; i++) {
		fill(s, sizeof(s), i);
		CHECK(!send_retry(0, s, sizeof(s), 1, 0, false, NULL), "send");
	}
	drain(0);
	while (!released && wait_cq(1, &e, &src, &err) == 1) {
		CHECK((char *)e.buf == buf + got * 300, "multi buf");
		got++;
		released = !!(e.flags & FI_MULTI_RECV);
	}
	CHECK(got == 3 && released, "multi recv got %d released %d", got,
	      released);
	CHECK(!fi_recv(ep[1], buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf),
	      "recv");
	CHECK(!expect(1, buf, 300, FI_RECV), "4th message");
}

static void t_injectdata(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	uint64_t v = 5, r = 0;

	CHECK(!fi_recv(ep[1], &r, 8, NULL, FI_ADDR_UNSPEC, &r), "recv");
	CHECK(!fi_injectdata(ep[0], &v, 8, 0xabc, addr[1]), "injectdata");
	CHECK(wait_cq(1, &e, &src, &err) == 1 && r == 5 && e.data == 0xabc &&
		      (e.flags & FI_REMOTE_CQ_DATA),
	      "injectdata rx");
	CHECK(fi_cq_read(cq[0], &e, 1) == -FI_EAGAIN, "inject completed");
	CHECK(fi_inject(ep[0], &v, 5000, addr[1]) == -FI_EINVAL,
	      "oversized inject");
}

/*
 * Rounds of unexpected messages of every protocol, some with remote CQ
 * data, some FI_CLAIMed, all sent before the first is received, each
 * into three iovs. The provider recycles the entries of earlier rounds:
 * nothing of a former message (payload, CQ data, claim, stream) may show
 * in a later one. In order: a provider that stops reading a connection
 * at its unexpected bound (tcp's FI_TCP_MAX_UNEXP) serves the oldest.
 */
static void t_unexp_reuse(void)
{
	enum { N = 300, BIG = 20000 };
	static const size_t sizes[] = {0, 8, 200, 1000, 4096, 64};
	char *s = malloc((size_t)N * BIG), r[BIG + 1];
	struct fi_msg_tagged m = {0};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context ctx;
	struct iovec iov[3];
	fi_addr_t src;
	size_t n, k;
	ssize_t ret;
	int round, i, j;

	for (round = 0; round < 3; round++) {
		for (i = 0; i < N; i++) {
			n = i % 50 == 49 ? BIG : sizes[(i + round) % 6];
			fill(s + (size_t)i * BIG, n, i + round);
			for (j = 0; j < 100000; j++) {
				ret = i % 3 ? fi_tsend(ep[0],
						       s + (size_t)i * BIG, n,
						       NULL, addr[1], i, NULL)
					    : fi_tsenddata(ep[0],
							   s + (size_t)i * BIG,
							   n, NULL, i + round,
							   addr[1], i, NULL);
				if (ret != -FI_EAGAIN)
					break;
				fi_cq_read(cq[0], NULL, 0);
				fi_cq_read(cq[1], NULL, 0);
			}
			CHECK(!ret, "unexp reuse send %d", i);
		}
		for (i = 0; i < N; i++) {
			n = i % 50 == 49 ? BIG : sizes[(i + round) % 6];
			memset(r, 0x5a, sizeof(r));
			k = n / 3;
			iov[0] = (struct iovec){r, k};
			iov[1] = (struct iovec){r + k, k};
			iov[2] = (struct iovec){r + 2 * k, BIG - 2 * k};
			m = (struct fi_msg_tagged){.msg_iov = iov,
						   .iov_count = 3,
						   .addr = FI_ADDR_UNSPEC,
						   .tag = (uint64_t)i,
						   .context = &ctx};
			if (round == 1 && i % 7 == 0) {
				/* FI_ENOMSG until progress has seen it */
				for (j = 0; j < 1000; j++) {
					CHECK(!fi_trecvmsg(ep[1], &m,
							   FI_PEEK | FI_CLAIM),
					      "unexp reuse peek %d", i);
					ret = wait_cq(1, &e, &src, &err);
					if (ret != -FI_EAVAIL ||
					    err.err != FI_ENOMSG)
						break;
				}
				CHECK(ret == 1 && e.len == n,
				      "unexp reuse peek result %d: %zd", i,
				      ret);
				CHECK(!fi_trecvmsg(ep[1], &m, FI_CLAIM),
				      "unexp reuse claim %d", i);
			} else {
				CHECK(!fi_trecvmsg(ep[1], &m, 0),
				      "unexp reuse recv %d", i);
			}
			ret = wait_cq(1, &e, &src, &err);
			if (ret != 1)
				fprintf(stderr, "  ret %zd err %d\n", ret,
					err.err);
			CHECK(ret == 1 && e.len == n && e.tag == (uint64_t)i &&
				      !memcmp(r, s + (size_t)i * BIG, n) &&
				      (uint8_t)r[n] == 0x5a,
			      "unexp reuse data %d (round %d, %zu B)", i, round,
			      n);
			CHECK(ret == 1 &&
				      !!(e.flags & FI_REMOTE_CQ_DATA) ==
					      !(i % 3) &&
				      (i % 3 ||
				       e.data == (uint64_t)(i + round)),
			      "unexp reuse cq data %d (round %d)", i, round);
		}
		for (i = 0; i < N; i++)
			CHECK(expect(0, NULL, (size_t)-1, FI_SEND) == 0,
			      "unexp reuse tx %d", i);
	}
	free(s);
}

/*
 * A receiver that trails a streaming sender keeps every small message it
 * was not asked for yet (a broadcast loop's last rank): each may cost
 * about what it carries, not a whole command slot, or such a laggard
 * grows by hundreds of megabytes. Heap bytes per queued 8-byte message,
 * from glibc's own count (an allocator that keeps none reports 0).
 */
static void t_unexp_footprint(void)
{
	enum { N = 4000, MAX_PER_MSG = 400 };
	struct fi_cq_tagged_entry e[64];
	struct fi_context ctx;
	struct mallinfo2 m0, m1;
	uint64_t v, got;
	size_t per, done = 0;
	ssize_t ret;
	int i, j;

	m0 = mallinfo2();
	for (i = 0; i < N; i++) {
		v = (uint64_t)i * 0x9e3779b97f4a7c15ULL;
		ret = send_retry(0, &v, sizeof(v), 1, (1ULL << 40) + i, true,
				 NULL);
		CHECK(!ret, "footprint send %d", i);
		/* the receiver's progress queues what its ring holds */
		if (i % 32 == 31)
			fi_cq_read(cq[1], NULL, 0);
		ret = fi_cq_read(cq[0], e, 64);
		if (ret > 0)
			done += (size_t)ret;
	}
	for (j = 0; j < 200; j++)
		fi_cq_read(cq[1], NULL, 0);
	m1 = mallinfo2();
	per = m1.uordblks > m0.uordblks ? (m1.uordblks - m0.uordblks) / N : 0;
	CHECK(per <= MAX_PER_MSG,
	      "an unexpected 8 B message costs %zu heap bytes (> %d)", per,
	      MAX_PER_MSG);
	for (i = 0; i < N; i++) {
		CHECK(!fi_trecv(ep[1], &got, sizeof(got), NULL, FI_ADDR_UNSPEC,
				(1ULL << 40) + i, 0, &ctx),
		      "footprint recv %d", i);
		CHECK(!expect(1, &ctx, sizeof(got), FI_RECV) &&
			      got == (uint64_t)i * 0x9e3779b97f4a7c15ULL,
		      "footprint data %d", i);
	}
	while (done < N && !expect(0, NULL, (size_t)-1, FI_SEND))
		done++;
	CHECK(done == N, "footprint tx %zu of %d", done, N);
}

/* A child owns the receiver and dies; the sender must get an error. */
static void t_dead_peer(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char name[64] = {0};
	size_t len = sizeof(name);
	fi_addr_t a, src;
	int fds[2], st;
	ssize_t ret;
	pid_t pid;
	char *big = calloc(1, 1 << 20);

	CHECK(!pipe(fds), "pipe");
	pid = fork();
	if (!pid) {
		struct fid_ep *cep;
		struct fid_cq *ccq;
		struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED};

		if (fi_endpoint(dom, info, &cep, NULL) ||
		    fi_cq_open(dom, &ca, &ccq, NULL) ||
		    fi_ep_bind(cep, &ccq->fid, FI_TRANSMIT | FI_RECV) ||
		    fi_ep_bind(cep, &av->fid, 0) || fi_enable(cep) ||
		    fi_getname(&cep->fid, name, &len))
			_exit(1);
		if (write(fds[1], name, sizeof(name)) != sizeof(name))
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(fds[0], name, sizeof(name)) == sizeof(name), "child name");
	CHECK(fi_av_insert(av, name, 1, &a, 0, NULL) == 1, "insert child");
	CHECK(!fi_send(ep[0], big, 1 << 20, NULL, a, big), "send to child");
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK(wait_cq(0, &e, &src, &err) == -FI_EAVAIL &&
		      (strcmp(prov, "shm") ? err.err > 0 : err.err == FI_EIO),
	      "dead peer error %d", err.err);
	/* shm: -FI_EIO; tcp: the connection's error, kept for the peer */
	ret = fi_send(ep[0], big, 8, NULL, a, NULL);
	CHECK(ret == -FI_EIO || (!strcmp(prov, "shm") && !ret) ||
		      (strcmp(prov, "shm") && ret < 0 && ret != -FI_EAGAIN),
	      "send after death: %zd", ret);
	free(big);
}

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	char name[64];
	size_t len;
	int i, ret;

	hints->caps = FI_MSG | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV |
		      FI_MULTI_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	/* tcp_features.sh: the same checks over IPv6 addresses */
	if (getenv("FEATURES_IPV6"))
		hints->addr_format = FI_SOCKADDR_IN6;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(info->fabric_attr, &fab, NULL) ?:
	      fi_domain(fab, info, &dom, NULL) ?:
	      fi_av_open(dom, &aa, &av, NULL);
	for (i = 0; !ret && i < NEP; i++) {
		len = sizeof(name);
		ret = fi_endpoint(dom, info, &ep[i], NULL) ?:
		      fi_cq_open(dom, &ca, &cq[i], NULL) ?:
		      fi_ep_bind(ep[i], &cq[i]->fid, FI_TRANSMIT | FI_RECV) ?:
		      fi_ep_bind(ep[i], &av->fid, 0) ?: fi_enable(ep[i]) ?:
		      fi_getname(&ep[i]->fid, name, &len);
		if (!ret)
			ret = fi_av_insert(av, name, 1, &addr[i], 0, NULL) == 1
				      ? 0
				      : -FI_EINVAL;
	}
	return ret;
}

int main(int argc, char **argv)
{
	int ret, i;

	if (argc > 1)
		prov = argv[1];
	ret = setup();
	if (ret) {
		fprintf(stderr, "setup: %s\n", fi_strerror(-ret));
		return 1;
	}
	t_inject_reuse();
	t_sizes();
	t_window_stream();
	t_tagged();
	t_directed_source();
	t_late_insert();
	t_peek_claim();
	t_cancel_trunc();
	t_multi_recv();
	t_injectdata();
	t_unexp_reuse();
	t_unexp_footprint();
	t_dead_peer();
	for (i = 0; i < NEP; i++) {
		fi_close(&ep[i]->fid);
		fi_close(&cq[i]->fid);
	}
	fi_close(&av->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	printf("%s: %d failures\n", argv[0], failures);
	return failures ? 1 : 0;
}
