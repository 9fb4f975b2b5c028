/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_rma.c - RMA through the shm provider between two processes, public
 * API only: fi_write/fi_read at every protocol size (inline, inject
 * buffer, CMA or chunks), writev/readv/writemsg/readmsg with several local
 * and target iovs, windows of writes and reads across shm's SAR/CMA
 * probes, fi_writedata with remote CQ data, fi_inject_write(data),
 * FI_RMA_EVENT counters (endpoint and MR) at the target, CQ entries there
 * only for remote CQ data, and bad key/range/access answered with
 * FI_EACCES while the target memory stays untouched, also amid a window
 * of good writes. Exit 0 when all pass; each failure names its check.
 *
 * Run by tests/shm/shm_rma.sh in each protocol and MR configuration.
 */
#include "shm_rma_common.h"

#define MAX_SIZE ((8u << 20) + 5)

static struct node n;
static uint64_t writes, reads; /* expected initiator counter values */

static uint64_t raddr(int mr, size_t off)
{
	return ctl->base[mr] + off;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed + (i >> 12));
}

static uint64_t cksum(const uint8_t *p, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/* Waits until a value the target publishes reaches @want. */
static bool wait_ctl(volatile uint64_t *v, uint64_t want)
{
	time_t end = time(NULL) + 10;

	while (*v < want && time(NULL) < end)
		fi_cq_read(n.cq, NULL, 0);
	return *v >= want;
}

static bool wait_cntr(struct fid_cntr *c, uint64_t want)
{
	time_t end = time(NULL) + 10;

	while (fi_cntr_read(c) < want && time(NULL) < end)
		fi_cq_read(n.cq, NULL, 0);
	return fi_cntr_read(c) >= want;
}

static void test_sizes(void)
{
	static const size_t sizes[] = {0,     1,     8,	    63,	      104,
				       105,   1000,  4095,  4096,     4097,
				       20000, 65536, 65537, 1u << 20, MAX_SIZE};
	uint8_t *src = malloc(MAX_SIZE), *dst = malloc(MAX_SIZE);
	size_t i, sz;
	int ctx, ret;

	CHECK(src && dst, "malloc");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		sz = sizes[i];
		fill(src, sz, (unsigned)i);
		memset(tmem + 7, 0, sz + 1);
		ret = POST(&n,
			   fi_write(n.ep, src, sz, NULL, n.peer,
				    raddr(MR_RW, 7), ctl->key[MR_RW], &ctx));
		CHECK(!ret, "fi_write %zu: %d", sz, ret);
		ret = wait_comp(&n, &ctx);
		CHECK(!ret, "fi_write %zu completion %d", sz, ret);
		writes++;
		CHECK(!memcmp(tmem + 7, src, sz) && !tmem[7 + sz],
		      "fi_write %zu: target data differ", sz);

		fill(tmem + 7, sz, (unsigned)i + 77);
		memset(dst, 0, sz);
		ret = POST(&n, fi_read(n.ep, dst, sz, NULL, n.peer,
				       raddr(MR_RW, 7), ctl->key[MR_RW], &ctx));
		CHECK(!ret, "fi_read %zu: %d", sz, ret);
		ret = wait_comp(&n, &ctx);
		CHECK(!ret, "fi_read %zu completion %d", sz, ret);
		reads++;
		CHECK(!memcmp(dst, tmem + 7, sz), "fi_read %zu: data differ",
		      sz);
	}
	CHECK(fi_cntr_read(n.wcntr) == writes, "write counter %lu",
	      (unsigned long)fi_cntr_read(n.wcntr));
	CHECK(fi_cntr_read(n.rcntr) == reads, "read counter %lu",
	      (unsigned long)fi_cntr_read(n.rcntr));
	free(src);
	free(dst);
}

/* Waits for @count successful completions, whichever comes first. */
static int wait_many(struct node *nd, int count)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	time_t end = time(NULL) + 20;
	ssize_t ret;

	while (count && time(NULL) < end) {
		ret = fi_cq_read(nd->cq, &e, 1);
		if (ret == 1) {
			count--;
		} else if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(nd->cq, &err, 0);
			return err.err ? err.err : -1;
		} else if (ret != -FI_EAGAIN) {
			return -1;
		}
	}
	return count ? -2 : 0;
}

/*
 * Windows of writes, then of reads, 40 MiB and more of each of @sizes'
 * FI_SHM_ADAPT classes: shm tries CMA against streaming after 32 MiB of
 * a class, so both paths carry RMA, in flight together at least once.
 */
static void stream(const size_t *sizes, int nsizes, size_t total, bool rd)
{
	enum { WIN = 8, SLICE = 1 << 20 };
	uint8_t *buf = malloc((size_t)WIN * SLICE), *loc;
	size_t moved = 0, sz;
	int w, i, ret, ctx[WIN], bad = 0;

	CHECK(buf, "malloc");
	for (w = 0; buf && moved < total && !bad; w++) {
		sz = sizes[w % nsizes];
		for (i = 0; i < WIN; i++) {
			loc = buf + (size_t)i * SLICE;
			/* the side the data comes from gets the pattern */
			fill(rd ? tmem + (size_t)i * SLICE : loc, sz,
			     w * WIN + i);
			if (rd)
				memset(loc, 0, sz);
			ret = POST(&n,
				   rd ? fi_read(n.ep, loc, sz, NULL, n.peer,
						raddr(MR_RW, i * SLICE),
						ctl->key[MR_RW], &ctx[i])
				      : fi_write(n.ep, loc, sz, NULL, n.peer,
						 raddr(MR_RW, i * SLICE),
						 ctl->key[MR_RW], &ctx[i]));
			CHECK(!ret, "%s %zu: %d", rd ? "read" : "write", sz,
			      ret);
			if (rd)
				reads++;
			else
				writes++;
		}
		ret = wait_many(&n, WIN);
		CHECK(!ret, "%s %zu window %d: %d", rd ? "read" : "write", sz,
		      w, ret);
		for (i = 0; i < WIN; i++)
			bad += !!memcmp(buf + (size_t)i * SLICE,
					tmem + (size_t)i * SLICE, sz);
		CHECK(!bad, "%s %zu window %d: %d differ",
		      rd ? "read" : "write", sz, w, bad);
		moved += sz * WIN;
	}
	free(buf);
}

/*
 * ... and the target counts each of them once (FI_RMA_EVENT), also a
 * read that went in pieces.
 */
static void test_stream(void)
{
	static const size_t small[] = {20000, 40000};
	static const size_t big[] = {65536, 300000, 1u << 20};
	uint64_t wr, rd, nw = writes, nr = reads;

	usleep(50 * 1000); /* see test_rma_event */
	wr = ctl->rem_wr;
	rd = ctl->rem_rd;
	stream(small, 2, 40u << 20, false);
	stream(big, 3, 48u << 20, false);
	stream(small, 2, 40u << 20, true);
	stream(big, 3, 48u << 20, true);
	nw = writes - nw;
	nr = reads - nr;
	CHECK(wait_ctl(&ctl->rem_wr, wr + nw) && ctl->rem_wr == wr + nw,
	      "remote write counter %lu, want %lu", (unsigned long)ctl->rem_wr,
	      (unsigned long)(wr + nw));
	CHECK(wait_ctl(&ctl->rem_rd, rd + nr) && ctl->rem_rd == rd + nr,
	      "remote read counter %lu, want %lu", (unsigned long)ctl->rem_rd,
	      (unsigned long)(rd + nr));
	CHECK(fi_cntr_read(n.wcntr) == writes, "write counter %lu",
	      (unsigned long)fi_cntr_read(n.wcntr));
	CHECK(fi_cntr_read(n.rcntr) == reads, "read counter %lu",
	      (unsigned long)fi_cntr_read(n.rcntr));
}

static void test_vectors(void)
{
	static uint8_t a[3][50000], b[3][50000];
	struct iovec iov[3];
	struct fi_rma_iov rma[2];
	struct fi_msg_rma msg;
	size_t i, total = sizeof(a);
	int ctx, ret;

	for (i = 0; i < 3; i++) {
		fill(a[i], sizeof(a[i]), 11 + i);
		iov[i].iov_base = a[i];
		iov[i].iov_len = sizeof(a[i]);
	}
	memset(tmem, 0, total);
	ret = POST(&n, fi_writev(n.ep, iov, NULL, 3, n.peer, raddr(MR_RW, 0),
				 ctl->key[MR_RW], &ctx));
	CHECK(!ret && !wait_comp(&n, &ctx), "fi_writev");
	writes++;
	CHECK(!memcmp(tmem, a, total), "fi_writev data");

	/* two local iovs into two separate target ranges */
	rma[0] = (struct fi_rma_iov){raddr(MR_RW, 100000), 70000,
				     ctl->key[MR_RW]};
	rma[1] = (struct fi_rma_iov){raddr(MR_RW, 300001), 30000,
				     ctl->key[MR_RW]};
	iov[0].iov_len = 60000 > sizeof(a[0]) ? sizeof(a[0]) : 60000;
	iov[1].iov_len = 100000 - iov[0].iov_len;
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.iov_count = 2;
	msg.addr = n.peer;
	msg.rma_iov = rma;
	msg.rma_iov_count = 2;
	msg.context = &ctx;
	ret = POST(&n, fi_writemsg(n.ep, &msg, 0));
	CHECK(!ret && !wait_comp(&n, &ctx), "fi_writemsg");
	writes++;
	CHECK(!memcmp(tmem + 100000, a, 50000) &&
		      !memcmp(tmem + 150000, a[1], 20000) &&
		      !memcmp(tmem + 300001, a[1] + 20000, 30000),
	      "fi_writemsg data");

	fill(tmem + 100000, 70000, 5);
	fill(tmem + 300001, 30000, 6);
	for (i = 0; i < 3; i++) {
		memset(b[i], 0, sizeof(b[i]));
		iov[i].iov_base = b[i];
	}
	iov[0].iov_len = 50000;
	iov[1].iov_len = 50000;
	msg.msg_iov = iov;
	ret = POST(&n, fi_readmsg(n.ep, &msg, 0));
	CHECK(!ret && !wait_comp(&n, &ctx), "fi_readmsg");
	reads++;
	CHECK(!memcmp(b[0], tmem + 100000, 50000) &&
		      !memcmp(b[1], tmem + 150000, 20000) &&
		      !memcmp(b[1] + 20000, tmem + 300001, 30000),
	      "fi_readmsg data");

	iov[0].iov_len = iov[1].iov_len = iov[2].iov_len = 1000;
	ret = POST(&n, fi_readv(n.ep, iov, NULL, 3, n.peer,
				raddr(MR_RW, 100000), ctl->key[MR_RW], &ctx));
	CHECK(!ret && !wait_comp(&n, &ctx), "fi_readv");
	reads++;
	CHECK(!memcmp(b[0], tmem + 100000, 1000) &&
		      !memcmp(b[2], tmem + 102000, 1000),
	      "fi_readv data");
}

static void test_writedata(void)
{
	static const size_t sizes[] = {16, 3000, 300000};
	static uint8_t src[300000];
	uint64_t before;
	size_t i;
	int ctx, ret;

	for (i = 0; i < 3; i++) {
		fill(src, sizes[i], 40 + i);
		before = ctl->cq_count;
		ret = POST(&n,
			   fi_writedata(n.ep, src, sizes[i], NULL, 0xabc000 + i,
					n.peer, raddr(MR_RW, 64),
					ctl->key[MR_RW], &ctx));
		CHECK(!ret && !wait_comp(&n, &ctx), "fi_writedata %zu",
		      sizes[i]);
		writes++;
		CHECK(wait_ctl(&ctl->cq_count, before + 1),
		      "no target CQ entry");
		CHECK(ctl->cq_data == 0xabc000 + i, "remote data %#lx",
		      (unsigned long)ctl->cq_data);
		CHECK((ctl->cq_flags &
		       (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE | FI_RMA)) ==
			      (FI_REMOTE_CQ_DATA | FI_REMOTE_WRITE | FI_RMA),
		      "remote flags %#lx", (unsigned long)ctl->cq_flags);
		CHECK(ctl->cq_len == sizes[i], "remote len %lu",
		      (unsigned long)ctl->cq_len);
		CHECK(!memcmp(tmem + 64, src, sizes[i]), "writedata data");
	}
}

static void test_inject(void)
{
	uint8_t src[4096];
	uint64_t before;
	ssize_t ret;

	fill(src, sizeof(src), 99);
	ret = POST(&n, fi_inject_write(n.ep, src, 64, n.peer,
				       raddr(MR_RW, 5000), ctl->key[MR_RW]));
	CHECK(!ret, "fi_inject_write: %zd", ret);
	memset(src, 0, 64); /* the buffer is ours again at once */
	writes++;
	CHECK(wait_cntr(n.wcntr, writes), "inject counter");
	fill(src, 64, 99);
	CHECK(!memcmp(tmem + 5000, src, 64), "inject data");

	fill(src, sizeof(src), 98);
	ret = POST(&n, fi_inject_write(n.ep, src, sizeof(src), n.peer,
				       raddr(MR_RW, 9000), ctl->key[MR_RW]));
	CHECK(!ret, "fi_inject_write 4096: %zd", ret);
	writes++;
	CHECK(wait_cntr(n.wcntr, writes), "inject counter");
	CHECK(!memcmp(tmem + 9000, src, sizeof(src)), "inject 4096 data");

	before = ctl->cq_count;
	ret = POST(&n, fi_inject_writedata(n.ep, src, 32, 0x5eed, n.peer,
					   raddr(MR_RW, 100), ctl->key[MR_RW]));
	CHECK(!ret, "fi_inject_writedata: %zd", ret);
	writes++;
	CHECK(wait_cntr(n.wcntr, writes), "injectdata counter");
	CHECK(wait_ctl(&ctl->cq_count, before + 1) && ctl->cq_data == 0x5eed,
	      "injectdata remote data");
	CHECK(fi_cq_read(n.cq, NULL, 0) == -FI_EAGAIN,
	      "inject produced a completion");
	CHECK(fi_inject_write(n.ep, src, 4097, n.peer, raddr(MR_RW, 0),
			      ctl->key[MR_RW]) == -FI_EINVAL,
	      "inject above inject_size accepted");
	/* fi_rma(3): bad iov arguments are -FI_EINVAL, never a crash. */
	CHECK(fi_writev(n.ep, NULL, NULL, 1, n.peer, raddr(MR_RW, 0),
			ctl->key[MR_RW], NULL) == -FI_EINVAL,
	      "fi_writev with a NULL iov");
	CHECK(fi_readv(n.ep, NULL, NULL, 1, n.peer, raddr(MR_RW, 0),
		       ctl->key[MR_RW], NULL) == -FI_EINVAL,
	      "fi_readv with a NULL iov");
}

static void test_rma_event(void)
{
	uint64_t wr, rd, mrc, cq;
	uint8_t buf[256];
	int ctx, ret;

	/*
	 * The target copies its counters into ctl after each progress
	 * call, so the answer to an earlier write can reach us before its
	 * count does: let the copy catch up before taking the baseline.
	 */
	usleep(50 * 1000);
	wr = ctl->rem_wr;
	rd = ctl->rem_rd;
	mrc = ctl->mr_events;
	cq = ctl->cq_count;

	fill(buf, sizeof(buf), 3);
	ret = POST(&n, fi_write(n.ep, buf, sizeof(buf), NULL, n.peer,
				raddr(MR_RW, 0), ctl->key[MR_RW], &ctx));
	CHECK(!ret && !wait_comp(&n, &ctx), "write");
	writes++;
	CHECK(wait_ctl(&ctl->rem_wr, wr + 1) && ctl->rem_wr == wr + 1,
	      "remote write counter %lu", (unsigned long)ctl->rem_wr);
	CHECK(wait_ctl(&ctl->mr_events, mrc + 1), "MR counter");
	CHECK(ctl->cq_count == cq, "CQ entry without remote CQ data");
	ret = POST(&n, fi_read(n.ep, buf, sizeof(buf), NULL, n.peer,
			       raddr(MR_RO, 0), ctl->key[MR_RO], &ctx));
	CHECK(!ret && !wait_comp(&n, &ctx), "read");
	reads++;
	CHECK(wait_ctl(&ctl->rem_rd, rd + 1) && ctl->rem_rd == rd + 1,
	      "remote read counter");
	CHECK(ctl->rem_wr == wr + 1, "read counted as write");
	CHECK(ctl->mr_events == mrc + 1, "MR counter counted a read");
}

/* One operation that must fail with FI_EACCES. */
static int bad_op(bool write, void *buf, size_t len, int mr, size_t off,
		  uint64_t key)
{
	int ctx;
	ssize_t ret;

	if (write)
		ret = POST(&n, fi_write(n.ep, buf, len, NULL, n.peer,
					raddr(mr, off), key, &ctx));
	else
		ret = POST(&n, fi_read(n.ep, buf, len, NULL, n.peer,
				       raddr(mr, off), key, &ctx));
	if (ret)
		return (int)ret;
	return wait_comp(&n, &ctx);
}

static void test_eacces(void)
{
	static const size_t sizes[] = {40, 4000, 200000, 2u << 20};
	uint8_t *buf = malloc(2u << 20);
	uint64_t c_rw, c_ro, c_wo, werr = fi_cntr_readerr(n.wcntr);
	uint64_t rem = ctl->rem_wr;
	size_t i;
	int ret;

	CHECK(buf, "malloc");
	/* All of it: a chunked write past the end must not land early. */
	fill(tmem, TMEM_SIZE, 1);
	fill(tro, SMALL_SIZE, 2);
	fill(two, SMALL_SIZE, 3);
	c_rw = cksum(tmem, TMEM_SIZE);
	c_ro = cksum(tro, SMALL_SIZE);
	c_wo = cksum(two, SMALL_SIZE);
	memset(buf, 0x5a, 2u << 20);
	for (i = 0; i < 4; i++) {
		ret = bad_op(true, buf, sizes[i], MR_RW, 0,
			     ctl->key[MR_RW] + 977);
		CHECK(ret == FI_EACCES, "bad key %zu: %d", sizes[i], ret);
		ret = bad_op(true, buf, sizes[i], MR_RW,
			     TMEM_SIZE - sizes[i] + 1, ctl->key[MR_RW]);
		CHECK(ret == FI_EACCES, "past the end %zu: %d", sizes[i], ret);
		ret = bad_op(false, buf, sizes[i], MR_RW, 0,
			     ctl->key[MR_RW] + 977);
		CHECK(ret == FI_EACCES, "read, bad key %zu: %d", sizes[i], ret);
		ret = bad_op(false, buf, sizes[i], MR_RW,
			     TMEM_SIZE - sizes[i] + 1, ctl->key[MR_RW]);
		CHECK(ret == FI_EACCES, "read past the end %zu: %d", sizes[i],
		      ret);
		if (sizes[i] > SMALL_SIZE)
			continue;
		ret = bad_op(true, buf, sizes[i], MR_RO, 0, ctl->key[MR_RO]);
		CHECK(ret == FI_EACCES, "write to read-only %zu: %d", sizes[i],
		      ret);
		ret = bad_op(false, buf, sizes[i], MR_WO, 0, ctl->key[MR_WO]);
		CHECK(ret == FI_EACCES, "read of write-only %zu: %d", sizes[i],
		      ret);
	}
	if (!offset_mode) {
		/* below the registration */
		ret = bad_op(true, buf, 8, MR_RO, (size_t)-8, ctl->key[MR_RO]);
		CHECK(ret == FI_EACCES, "below the start: %d", ret);
	}
	CHECK(cksum(tmem, TMEM_SIZE) == c_rw, "target memory touched");
	CHECK(cksum(tro, SMALL_SIZE) == c_ro, "read-only memory touched");
	CHECK(cksum(two, SMALL_SIZE) == c_wo, "write-only memory touched");
	CHECK(fi_cntr_readerr(n.wcntr) > werr, "no write error counted");
	CHECK(ctl->rem_wr == rem, "failed writes counted at the target");
	free(buf);
}

/*
 * A window of small writes with one bad key among them (first, middle,
 * last): that one, and only it, completes with FI_EACCES under its own
 * context, every other one succeeds once and lands (tcp answers such
 * windows with one batched answer, the failed write alone).
 */
static void test_window_eacces(void)
{
	enum { WIN = 32 };
	static const int bad_at[] = {0, WIN / 2, WIN - 1};
	uint64_t src[WIN], seen, errs;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	int ctx[WIN], r, i, got, ret;
	time_t end;

	for (r = 0; r < 3; r++) {
		memset(tmem, 0, WIN * sizeof(src[0]));
		for (i = 0; i < WIN; i++) {
			src[i] = 0x1000 * (r + 1) + i;
			ret = POST(&n,
				   fi_write(n.ep, &src[i], sizeof(src[i]), NULL,
					    n.peer,
					    raddr(MR_RW, i * sizeof(src[i])),
					    ctl->key[MR_RW] +
						    (i == bad_at[r] ? 977 : 0),
					    &ctx[i]));
			CHECK(!ret, "window write %d: %d", i, ret);
		}
		seen = errs = 0;
		end = time(NULL) + 20;
		for (got = 0; got < WIN && time(NULL) < end;) {
			ret = (int)fi_cq_read(n.cq, &e, 1);
			if (ret == -FI_EAGAIN)
				continue;
			if (ret == -FI_EAVAIL) {
				memset(&err, 0, sizeof(err));
				fi_cq_readerr(n.cq, &err, 0);
				CHECK(err.err == FI_EACCES &&
					      err.op_context == &ctx[bad_at[r]],
				      "window %d: error %d on write %ld", r,
				      err.err,
				      (long)((int *)err.op_context - ctx));
				errs++;
				got++;
				continue;
			}
			CHECK(ret == 1, "window %d: cq read %d", r, ret);
			if (ret != 1)
				break;
			i = (int)((int *)e.op_context - ctx);
			CHECK(i >= 0 && i < WIN && i != bad_at[r] &&
				      !(seen & (1ULL << i)),
			      "window %d: completion of write %d", r, i);
			if (i >= 0 && i < WIN)
				seen |= 1ULL << i;
			got++;
			writes++;
		}
		CHECK(got == WIN && errs == 1,
		      "window %d: %d completions, "
		      "%lu errors",
		      r, got, (unsigned long)errs);
		for (i = 0; i < WIN; i++)
			CHECK(((uint64_t *)tmem)[i] ==
				      (i == bad_at[r] ? 0 : src[i]),
			      "window %d: write %d landed wrong", r, i);
	}
}

static int initiator(int rank)
{
	(void)rank;
	initiator_open(&n);
	test_sizes();
	test_stream();
	test_vectors();
	test_writedata();
	test_inject();
	test_rma_event();
	test_eacces();
	test_window_eacces();
	node_close(&n);
	return failures ? 1 : 0;
}

int main(void)
{
	int bad;

	harness_init();
	bad = run_test(1, initiator);
	printf("shm_rma (%s addressing): %s\n",
	       offset_mode ? "offset" : "virtual", bad ? "FAILED" : "passed");
	return bad ? 1 : 0;
}
