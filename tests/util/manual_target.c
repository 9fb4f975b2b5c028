/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * manual_target.c - under FI_PROGRESS_MANUAL an endpoint that can be the
 * target of RMA and atomics is still served while its application calls
 * nothing (OpenSHMEM built for manual progress waits on its own memory
 * that way), and one that cannot starts no thread. Over the provider of
 * argv[1]; the caller sets FI_TCP_SHM / FI_SOCKETS_SHM (auto_paths.sh).
 *
 * Cases, each able to fail:
 *  target    an initiator that polls its own CQ writes three iovs (the
 *            last 64 KiB), reads them back into two, and runs a fetching
 *            atomic add, on a target that makes no call after its setup:
 *            each completes within WAIT_MS, data checked at both ends
 *  nothread  endpoints with FI_MSG | FI_TAGGED, and with FI_RMA |
 *            FI_READ | FI_WRITE (an initiator only), start no thread;
 *            one with FI_RMA (every direction) starts one
 *  mrcntr    the target's application waits only on a counter bound to
 *            its MR (fi_mr_bind, FI_REMOTE_WRITE), as OpenSHMEM waits on
 *            its target counter, first in fi_cntr_read, then in
 *            fi_cntr_wait: reading the counter progresses the target,
 *            so three writes of two iovs each (posted and completed by
 *            an initiator thread) are counted and land within WAIT_MS,
 *            with or without the target's thread
 * With FI_PROGRESS_TARGET=0 in the environment (manual_target.sh runs it
 * so too), the target is left to its application's calls: the write must
 * not complete within OFF_WAIT_MS, and no endpoint starts a thread.
 *
 * One line per case; exit 0 when all passed, 77 when the provider has
 * no manual progress.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>

#include "auto_node.h"

#define WAIT_MS	    10000
#define OFF_WAIT_MS 1000
#define TGT_LEN	    (128 * 1024)
#define WORD_OFF    (96 * 1024)

static const char *prov;
static bool target_off; /* FI_PROGRESS_TARGET=0 */
static const size_t wlen[3] = {100, 5000, 65536};

static struct fi_info *manual_info(uint64_t caps)
{
	return auto_node_getinfo(prov, caps, FI_EP_RDM, FI_PROGRESS_MANUAL,
				 strcmp(prov, "shm") != 0, NULL);
}

static uint64_t deadline(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 13 + (i >> 9) + 1);
}

/* One completion on @a's CQ, polled (which progresses @a only). */
static int await(struct auto_node *a, const char *what)
{
	int got = auto_node_cq_wait(a->cq, deadline(WAIT_MS), 0);

	if (got != 1)
		printf("FAIL %s target: %s: %s\n", prov, what,
		       got ? "completion error" : "no completion");
	return got == 1 ? 0 : -1;
}

static int write_three(struct auto_node *a, struct auto_node *b, fi_addr_t dest,
		       uint8_t *src)
{
	struct iovec iov[3];
	struct fi_rma_iov rma = {.addr = auto_node_rma_addr(b),
				 .len = wlen[0] + wlen[1] + wlen[2],
				 .key = fi_mr_key(b->mr)};
	struct fi_msg_rma msg = {.msg_iov = iov,
				 .iov_count = 3,
				 .addr = dest,
				 .rma_iov = &rma,
				 .rma_iov_count = 1};
	size_t i, off = 0;
	ssize_t ret;

	/* the three pieces lie apart in @src, each its own iov */
	for (i = 0; i < 3; i++) {
		iov[i].iov_base = src + off + i * 64;
		iov[i].iov_len = wlen[i];
		off += wlen[i];
	}
	ret = fi_writemsg(a->ep, &msg, FI_COMPLETION);
	if (ret) {
		printf("FAIL %s target: writemsg: %s\n", prov,
		       fi_strerror((int)-ret));
		return -1;
	}
	return target_off ? 0 : await(a, "write");
}

/* FI_PROGRESS_TARGET=0: nobody serves the write (closed while pending). */
static int write_waits(struct auto_node *a, struct auto_node *b, fi_addr_t dest,
		       uint8_t *src)
{
	int got;

	if (write_three(a, b, dest, src))
		return -1;
	got = auto_node_cq_wait(a->cq, deadline(OFF_WAIT_MS), 0);
	printf("%s %s target (off): %s\n", got ? "FAIL" : "PASS", prov,
	       got ? "the write completed" : "the write waits");
	return got ? -1 : 0;
}

static int read_two(struct auto_node *a, struct auto_node *b, fi_addr_t dest,
		    uint8_t *dst, size_t len)
{
	struct iovec iov[2] = {{dst, len / 3},
			       {dst + len / 3 + 32, len - len / 3}};
	struct fi_rma_iov rma = {.addr = auto_node_rma_addr(b),
				 .len = len,
				 .key = fi_mr_key(b->mr)};
	struct fi_msg_rma msg = {.msg_iov = iov,
				 .iov_count = 2,
				 .addr = dest,
				 .rma_iov = &rma,
				 .rma_iov_count = 1};
	ssize_t ret;

	ret = fi_readmsg(a->ep, &msg, FI_COMPLETION);
	if (ret) {
		printf("FAIL %s target: readmsg: %s\n", prov,
		       fi_strerror((int)-ret));
		return -1;
	}
	if (await(a, "read"))
		return -1;
	/* back together as written */
	memmove(dst + len / 3, dst + len / 3 + 32, len - len / 3);
	return 0;
}

static int fetch_add(struct auto_node *a, struct auto_node *b, fi_addr_t dest,
		     uint64_t *old)
{
	static uint64_t operand = 2;
	ssize_t ret;

	ret = fi_fetch_atomic(a->ep, &operand, 1, NULL, old, NULL, dest,
			      auto_node_rma_addr(b) + WORD_OFF,
			      fi_mr_key(b->mr), FI_UINT64, FI_SUM, NULL);
	if (ret) {
		printf("FAIL %s target: fetch_atomic: %s\n", prov,
		       fi_strerror((int)-ret));
		return -1;
	}
	return await(a, "atomic");
}

static int case_target(void)
{
	static uint8_t tbuf[TGT_LEN], src[TGT_LEN], back[TGT_LEN];
	static const struct auto_node_attr tattr = {
		.cq_format = FI_CQ_FORMAT_CONTEXT,
		.cq_flags = FI_TRANSMIT | FI_RECV,
		.mr_access = FI_REMOTE_READ | FI_REMOTE_WRITE,
	};
	static const struct auto_node_attr iattr = {
		.cq_format = FI_CQ_FORMAT_CONTEXT,
		.cq_flags = FI_TRANSMIT | FI_RECV,
	};
	const size_t len = wlen[0] + wlen[1] + wlen[2];
	struct auto_node a = {0}, b = {0};
	uint64_t old = 0, word = 40;
	size_t i, off;
	fi_addr_t dest;
	int ret = -1;

	memcpy(tbuf + WORD_OFF, &word, sizeof(word));
	for (i = 0, off = 0; i < len; i++) {
		if (i == wlen[0] || i == wlen[0] + wlen[1])
			off += 64;
		src[i + off] = pattern(i);
	}
	b.buf = tbuf;
	b.len = TGT_LEN;
	if (auto_node_open_info(&b, manual_info(FI_RMA | FI_ATOMIC), &tattr) ||
	    auto_node_open_info(&a, manual_info(FI_RMA | FI_ATOMIC), &iattr) ||
	    fi_av_insert(a.av, b.addr, 1, &dest, 0, NULL) != 1) {
		printf("FAIL %s target: setup\n", prov);
		goto out;
	}
	/* From here the target b makes no call until it closes. */
	if (target_off) {
		ret = write_waits(&a, &b, dest, src);
		goto out;
	}
	if (write_three(&a, &b, dest, src) ||
	    read_two(&a, &b, dest, back, len) || fetch_add(&a, &b, dest, &old))
		goto out;
	/* All done; a read of b's CQ takes the lock its thread wrote under
	 * (an order race checkers see). */
	(void)fi_cq_read(b.cq, NULL, 0);
	for (i = 0; i < len; i++) {
		if (tbuf[i] != pattern(i) || back[i] != pattern(i)) {
			printf("FAIL %s target: byte %zu: written %u, read "
			       "%u, want %u\n",
			       prov, i, tbuf[i], back[i], pattern(i));
			goto out;
		}
	}
	memcpy(&word, tbuf + WORD_OFF, sizeof(word));
	if (old != 40 || word != 42) {
		printf("FAIL %s target: atomic fetched %llu (want 40), left "
		       "%llu (want 42)\n",
		       prov, (unsigned long long)old, (unsigned long long)word);
		goto out;
	}
	printf("PASS %s target\n", prov);
	ret = 0;
out:
	auto_node_close(&a);
	auto_node_close(&b);
	return ret;
}

static int tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Threads an endpoint with @caps adds to the process while open. */
static int tasks_with(uint64_t caps)
{
	static const struct auto_node_attr attr = {
		.cq_format = FI_CQ_FORMAT_CONTEXT,
		.cq_flags = FI_TRANSMIT | FI_RECV,
	};
	struct auto_node n = {0};
	int before, t = -1;

	before = tasks();
	if (!auto_node_open_info(&n, manual_info(caps), &attr)) {
		usleep(100000); /* a thread started at enable is listed */
		t = tasks();
	}
	auto_node_close(&n);
	return before < 0 || t < 0 ? -1 : t - before;
}

static int case_nothread(void)
{
	int msg, init, rma;

	msg = tasks_with(FI_MSG | FI_TAGGED);
	init = tasks_with(FI_RMA | FI_READ | FI_WRITE);
	rma = tasks_with(FI_RMA);
	if (msg != 0 || init != 0 || rma != !target_off) {
		printf("FAIL %s nothread: threads added by a message endpoint "
		       "%d, an RMA initiator %d, an RMA target %d (want 0, "
		       "0, %d)\n",
		       prov, msg, init, rma, !target_off);
		return -1;
	}
	printf("PASS %s nothread\n", prov);
	return 0;
}

#define MRC_WRITES 3
#define MRC_LEN	   64

/* The initiator of mrcntr: each write posted, then its completion. */
struct mrc_init {
	struct auto_node *a, *b;
	fi_addr_t dest;
	uint8_t src[MRC_WRITES][MRC_LEN + 32];
	int done; /* writes completed; read after the join */
};

static void *mrc_writes(void *arg)
{
	struct mrc_init *w = arg;
	struct fi_rma_iov rma = {.len = MRC_LEN, .key = fi_mr_key(w->b->mr)};
	struct fi_msg_rma msg = {.iov_count = 2,
				 .addr = w->dest,
				 .rma_iov = &rma,
				 .rma_iov_count = 1};
	struct iovec iov[2];
	int k;

	msg.msg_iov = iov;
	for (k = 0; k < MRC_WRITES; k++) {
		/* two pieces apart in src, one run at the target */
		iov[0] = (struct iovec){w->src[k], 24};
		iov[1] = (struct iovec){w->src[k] + 24 + 32, MRC_LEN - 24};
		rma.addr = auto_node_rma_addr(w->b) + (uint64_t)k * MRC_LEN;
		if (fi_writemsg(w->a->ep, &msg, FI_COMPLETION) ||
		    auto_node_cq_wait(w->a->cq, deadline(WAIT_MS), 0) != 1)
			break;
		w->done++;
	}
	return NULL;
}

/* Polls @c with fi_cntr_read, the target's only call, up to WAIT_MS. */
static uint64_t mrc_read_until(struct fid_cntr *c, uint64_t want)
{
	uint64_t end = deadline(WAIT_MS), v;

	while ((v = fi_cntr_read(c)) < want && deadline(0) < end)
		;
	return v;
}

static int case_mrcntr(void)
{
	static uint8_t tbuf[MRC_WRITES * MRC_LEN];
	static const struct auto_node_attr tattr = {
		.cq_format = FI_CQ_FORMAT_CONTEXT,
		.cq_flags = FI_TRANSMIT | FI_RECV,
		.mr_access = FI_REMOTE_WRITE,
	};
	static const struct auto_node_attr iattr = {
		.cq_format = FI_CQ_FORMAT_CONTEXT,
		.cq_flags = FI_TRANSMIT | FI_RECV,
	};
	struct fi_cntr_attr cattr = {.events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC};
	struct auto_node a = {0}, b = {0};
	static struct mrc_init w;
	struct fid_cntr *c = NULL;
	struct fi_info *ti = manual_info(FI_RMA | FI_RMA_EVENT);
	uint64_t first, last = 0;
	pthread_t t;
	int i, k, wret = -1, ret = -1;

	if (!ti) {
		printf("SKIP %s mrcntr: no FI_RMA_EVENT\n", prov);
		return 0;
	}
	b.buf = tbuf;
	b.len = sizeof(tbuf);
	if (auto_node_open_info(&b, ti, &tattr) ||
	    auto_node_open_info(&a, manual_info(FI_RMA), &iattr) ||
	    fi_cntr_open(b.domain, &cattr, &c, NULL) ||
	    fi_mr_bind(b.mr, &c->fid, FI_REMOTE_WRITE) ||
	    fi_av_insert(a.av, b.addr, 1, &w.dest, 0, NULL) != 1) {
		printf("FAIL %s mrcntr: setup\n", prov);
		goto out;
	}
	w.a = &a;
	w.b = &b;
	for (k = 0; k < MRC_WRITES; k++)
		for (i = 0; i < MRC_LEN + 32; i++)
			w.src[k][i] = pattern((size_t)(k * 1000 + i));
	if (pthread_create(&t, NULL, mrc_writes, &w)) {
		printf("FAIL %s mrcntr: thread\n", prov);
		goto out;
	}
	first = mrc_read_until(c, 1);
	wret = fi_cntr_wait(c, MRC_WRITES, WAIT_MS);
	last = fi_cntr_read(c);
	pthread_join(t, NULL);
	if (first < 1 || wret || last != MRC_WRITES || w.done != MRC_WRITES) {
		printf("FAIL %s mrcntr: fi_cntr_read saw %llu (want >= 1), "
		       "fi_cntr_wait %s, count %llu, writes completed %d "
		       "(want %d)\n",
		       prov, (unsigned long long)first, fi_strerror(-wret),
		       (unsigned long long)last, w.done, MRC_WRITES);
		goto out;
	}
	for (k = 0; k < MRC_WRITES; k++) {
		for (i = 0; i < MRC_LEN; i++) {
			uint8_t want = w.src[k][i < 24 ? i : i + 32];

			if (tbuf[k * MRC_LEN + i] != want) {
				printf("FAIL %s mrcntr: write %d byte %d: %u, "
				       "want %u\n",
				       prov, k, i, tbuf[k * MRC_LEN + i], want);
				goto out;
			}
		}
	}
	printf("PASS %s mrcntr\n", prov);
	ret = 0;
out:
	auto_node_close(&a);
	if (c && b.mr) {
		fi_close(&b.mr->fid);
		b.mr = NULL;
	}
	if (c)
		fi_close(&c->fid);
	auto_node_close(&b);
	return ret;
}

int main(int argc, char **argv)
{
	struct fi_info *info;
	int fail = 0;

	prov = argc > 1 ? argv[1] : "shm";
	target_off = getenv("FI_PROGRESS_TARGET") &&
		     !strcmp(getenv("FI_PROGRESS_TARGET"), "0");
	setenv("FI_TCP_IFACE", "lo", 0);
	setenv("FI_SOCKETS_IFACE", "lo", 0);
	info = manual_info(FI_RMA | FI_ATOMIC);
	if (!info) {
		printf("SKIP: no %s with FI_PROGRESS_MANUAL\n", prov);
		return 77;
	}
	fi_freeinfo(info);
	alarm(120);
	fail |= case_target() != 0;
	fail |= case_nothread() != 0;
	fail |= case_mrcntr() != 0;
	return fail;
}
