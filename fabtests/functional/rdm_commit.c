/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rdm_commit: two-process test of the persistent-memory extension
 * (fi_commit, FI_COMMIT_MANUAL, FI_COMMIT events and EQ handlers,
 * FI_COMMIT_COMPLETE) over FI_EP_RDM, as fi_commit(3) specifies it.
 *
 * The server is the target: it maps a file (MAP_SHARED, in $FT_PMEM_DIR,
 * $TMPDIR or /tmp), registers it with FI_RMA_PMEM and answers commands on
 * the out-of-band socket while it drives progress.  The client writes into
 * that region, commits, and judges: the completion's flags, length and
 * context, the error code, the bytes at the target and what the target's
 * handler or EQ saw (the server reports it back).  One case per run
 * (-C NAME); runfabtests.sh runs every case.
 *
 * Exits 77 (skip) when no provider offers FI_RMA_PMEM, e.g. a library
 * built without libpmem.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "shared.h"

/*
 * Built against a libfabric without the persistent-memory extension
 * (fi_extensions(7)), e.g. Debian's 1.17 by the standalone Makefile: only
 * a skip.
 */
#ifndef FI_COMMIT_MANUAL
int main(void)
{
	printf("SKIP: rdm_commit: this libfabric does not declare fi_commit\n");
	return FT_EXIT_NOTSUPP;
}
#else

#define RGN_SIZE     (4UL << 20)  /* target file mapping */
#define PLAIN_SIZE   (64UL << 10) /* target, not persistent */
#define MANY_WRITES  1000
#define MANY_SIZE    4096
#define MANY_SEED    17
#define MANY_ASEED   18 /* the atomic after the writes */
#define MANY_ALEN    64 /* 8 uint64, right after the writes */
#define MAX_IOV	     4
#define DIE_LIMIT_S  5 /* the spec's bound on a dead target's answer */
#define TGT_KEY	     0xC033ULL
#define PLAIN_KEY    0xC044ULL
#define SRC_KEY	     0xC055ULL
#define COMMIT_FLAGS (FI_RMA | FI_WRITE | FI_COMMIT_COMPLETE)

/* what the target does with a commit */
enum tgt_kind {
	TGT_AUTO,      /* the provider persists */
	TGT_H_OK,      /* manual, handler answers 0 */
	TGT_H_POS,     /* manual, handler answers a positive value */
	TGT_H_EIO,     /* manual, handler answers -FI_EIO */
	TGT_H_DECLINE, /* manual, handler answers -FI_EAGAIN */
	TGT_H_VERIFY,  /* manual, handler checks the written data */
	TGT_H_DIE,     /* manual, handler calls _exit before answering */
	TGT_EVENT,     /* manual, no handler: events on the EQ */
};

struct commit_case {
	const char *name;
	enum tgt_kind kind;
	int (*run)(void);
	const char *desc;
};

enum ctl_cmd {
	CTL_PREP = 1, /* reset the log; see tgt_command */
	CTL_CHECK,    /* count chunks of size from off, chunk i seed+i */
	CTL_LOG,      /* drain the EQ, answer with the log */
	CTL_CLOSE_EP, /* close the endpoint, stay alive */
	CTL_EXIT,     /* answer, then _exit(0) */
	CTL_DONE,
};

struct wire_iov {
	uint64_t addr, len, key;
};

/* one fixed-width struct both ways: the same binary runs on both ends */
struct ctl {
	uint32_t cmd;
	uint32_t pad;
	uint64_t off, size, count, seed;
	int64_t status;
	/* CTL_LOG reply */
	uint64_t calls;	 /* handler calls */
	uint64_t events; /* FI_COMMIT events read from the EQ */
	uint64_t bad;	 /* malformed calls/events (details on stderr) */
	uint64_t seen_count;
	struct wire_iov seen[MAX_IOV];
	int64_t verdict; /* the verifying handler's last answer */
	uint64_t chunk;	 /* CTL_PREP: the verifying handler's chunk size */
};

/* exchanged once: where the target's regions are */
struct setup_wire {
	uint64_t rgn_addr, rgn_key, plain_addr, plain_key;
	uint32_t name_len;
	uint32_t pad;
	char name[256];
};

static const struct commit_case *cc;
static struct fid_eq *eq;
static struct fid_mr *rgn_mr, *plain_mr;
static uint8_t *rgn, *plain;
static uint64_t rgn_addr, rgn_key, plain_addr, plain_key;
static bool virt_addr;
static struct fi_context2 ctx[MANY_WRITES + 8];
static int handler_ctx_tag;
/* the many cases: writes of many_size; large ones stream (SAR) */
static uint64_t many_n = MANY_WRITES, many_size = MANY_SIZE;

/* the target's record of what reached it since the last CTL_PREP */
static struct {
	uint64_t calls, events, bad, seen_count;
	struct wire_iov seen[MAX_IOV];
	int64_t verdict;
	/* for the verifying handler */
	uint64_t off, size, count, seed;
} tlog;

/* ------------------------------------------------------------------ */
/* helpers                                                              */

static uint64_t chunk_seed(uint64_t seed, uint64_t i)
{
	return seed * 7919 + i + 1;
}

static void fill_chunks(uint8_t *base, uint64_t size, uint64_t count,
			uint64_t seed)
{
	uint64_t i;

	for (i = 0; i < count; i++)
		ft_fill_buf(base + i * size, size, chunk_seed(seed, i));
}

/* 0 or -FI_EIO, with the first wrong byte on stderr when @loud */
static int check_chunks(const uint8_t *base, uint64_t size, uint64_t count,
			uint64_t seed, bool loud)
{
	static uint8_t *ref;
	static uint64_t ref_size;
	uint64_t i, j;

	if (ref_size < size) {
		free(ref);
		ref = malloc(size);
		ref_size = ref ? size : 0;
		if (!ref)
			return -FI_ENOMEM;
	}
	for (i = 0; i < count; i++) {
		ft_fill_buf(ref, size, chunk_seed(seed, i));
		if (!memcmp(base + i * size, ref, size))
			continue;
		for (j = 0; j < size && base[i * size + j] == ref[j]; j++)
			;
		if (loud)
			FT_ERR("chunk %" PRIu64 " of %" PRIu64 ": byte %" PRIu64
			       " is 0x%02x, expected 0x%02x",
			       i, count, j, base[i * size + j], ref[j]);
		return -FI_EIO;
	}
	return 0;
}

static uint64_t rgn_rma_addr(uint64_t off)
{
	return rgn_addr + off;
}

static struct fi_rma_iov mk_iov(uint64_t off, uint64_t len)
{
	struct fi_rma_iov iov = {
		.addr = rgn_rma_addr(off), .len = len, .key = rgn_key};

	return iov;
}

/* a file mapping: the kind of buffer the spec asks a registration over */
static void *map_file(size_t size)
{
	const char *dir = getenv("FT_PMEM_DIR");
	char path[4096];
	void *p;
	int fd;

	if (!dir)
		dir = getenv("TMPDIR");
	if (!dir)
		dir = "/tmp";
	snprintf(path, sizeof(path), "%s/rdm_commit.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		FT_ERR("mkstemp(%s) failed", path);
		return NULL;
	}
	/* nothing is left behind, whatever way the process ends */
	unlink(path);
	if (ftruncate(fd, (off_t)size)) {
		FT_ERR("ftruncate %s failed", path);
		close(fd);
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* ------------------------------------------------------------------ */
/* target side: the handler and the EQ                                  */

static void record_entry(const struct fi_eq_commit_entry *e, uint64_t len,
			 const void *iov_expected_at, const char *what)
{
	size_t i;

	if (e->fid != &ft.ep->fid) {
		FT_ERR("%s: entry fid %p, expected the endpoint %p", what,
		       (void *)e->fid, (void *)&ft.ep->fid);
		tlog.bad++;
	}
	if (!e->count || e->count > MAX_IOV) {
		FT_ERR("%s: count %zu", what, e->count);
		tlog.bad++;
		return;
	}
	if (len != sizeof(*e) + e->count * sizeof(struct fi_rma_iov)) {
		FT_ERR("%s: length %" PRIu64 ", expected %zu", what, len,
		       sizeof(*e) + e->count * sizeof(struct fi_rma_iov));
		tlog.bad++;
	}
	if ((const void *)e->iov != iov_expected_at) {
		FT_ERR("%s: iov at %p, expected right after the entry (%p)",
		       what, (const void *)e->iov, iov_expected_at);
		tlog.bad++;
	}
	if (e->flags) {
		FT_ERR("%s: flags 0x%" PRIx64 ", expected 0", what, e->flags);
		tlog.bad++;
	}
	tlog.seen_count = e->count;
	for (i = 0; i < e->count; i++) {
		tlog.seen[i].addr = e->iov[i].addr;
		tlog.seen[i].len = e->iov[i].len;
		tlog.seen[i].key = e->iov[i].key;
	}
}

static ssize_t commit_handler(struct fid_eq *heq, uint64_t event_type,
			      void *event_data, uint64_t len, void *context)
{
	const struct fi_eq_commit_entry *e = event_data;

	tlog.calls++;
	if (heq != eq || context != &handler_ctx_tag ||
	    event_type != FI_COMMIT || !e) {
		FT_ERR("handler: eq %p (want %p), context %p (want %p), "
		       "event %" PRIu64 " (want %d), data %p",
		       (void *)heq, (void *)eq, context,
		       (void *)&handler_ctx_tag, event_type, FI_COMMIT,
		       event_data);
		tlog.bad++;
		if (!e)
			return -FI_EINVAL;
	}
	record_entry(e, len, e + 1, "handler");
	switch (cc->kind) {
	case TGT_H_OK:
		return 0;
	case TGT_H_POS:
		return 7; /* "0 or positive": success too */
	case TGT_H_EIO:
		return -FI_EIO;
	case TGT_H_DECLINE:
		return -FI_EAGAIN;
	case TGT_H_DIE:
		fflush(NULL);
		_exit(0);
	case TGT_H_VERIFY:
		/* ordering: every earlier write must be here already */
		tlog.verdict = check_chunks(rgn + tlog.off, tlog.size,
					    tlog.count, tlog.seed, true);
		/* and the atomic posted after them */
		if (!tlog.verdict && tlog.seed == MANY_SEED)
			tlog.verdict = check_chunks(
				rgn + tlog.off + tlog.size * tlog.count,
				MANY_ALEN, 1, MANY_ASEED, true);
		return tlog.verdict;
	default:
		FT_ERR("handler called in a case without one");
		tlog.bad++;
		return -FI_EOTHER;
	}
}

/*
 * Reads what is queued.  The first read peeks with the entry's size only:
 * a commit event carries at least one iov, so it must come back cut, with
 * no array to point at, and stay queued.
 */
static void drain_eq(void)
{
	union {
		struct fi_eq_commit_entry e;
		uint8_t raw[sizeof(struct fi_eq_commit_entry) +
			    8 * sizeof(struct fi_rma_iov)];
	} buf;
	uint32_t event;
	ssize_t rd;
	int n;

	if (!eq)
		return;
	for (n = 0; n < 16; n++) {
		rd = fi_eq_read(eq, &event, &buf, sizeof(buf.e), FI_PEEK);
		if (rd == -FI_EAGAIN)
			return;
		if (rd != (ssize_t)sizeof(buf.e) || buf.e.iov) {
			FT_ERR("fi_eq_read peeking %zu bytes returned %zd "
			       "(%s), iov %p, expected a cut entry, no iov",
			       sizeof(buf.e), rd,
			       fi_strerror((int)(rd < 0 ? -rd : 0)),
			       (void *)buf.e.iov);
			tlog.bad++;
			if (rd < 0)
				return;
		}
		rd = fi_eq_read(eq, &event, &buf, sizeof(buf), 0);
		if (rd < 0) {
			FT_ERR("fi_eq_read after a cut peek: %zd (%s): the "
			       "event was lost",
			       rd, fi_strerror((int)-rd));
			tlog.bad++;
			return;
		}
		if (event != FI_COMMIT) {
			FT_ERR("EQ event %u, expected FI_COMMIT", event);
			tlog.bad++;
			continue;
		}
		tlog.events++;
		record_entry(&buf.e, (uint64_t)rd, buf.raw + sizeof(buf.e),
			     "fi_eq_read");
	}
}

static int tgt_progress(void)
{
	struct fi_cq_data_entry e;
	ssize_t n;

	if (!ft.ep)
		return 0;
	n = fi_cq_read(ft.txcq, &e, 1);
	if (n == -FI_EAVAIL)
		return ft_cq_error(ft.txcq, "target tx");
	n = fi_cq_read(ft.rxcq, &e, 1);
	if (n == -FI_EAVAIL)
		return ft_cq_error(ft.rxcq, "target rx");
	return 0;
}

static int ctl_recv(struct ctl *c)
{
	struct pollfd pfd = {.fd = ft.oob_sock, .events = POLLIN};
	uint64_t start = ft_now_us();
	int ret;

	for (;;) {
		ret = tgt_progress();
		if (ret)
			return ret;
		if (poll(&pfd, 1, 0) > 0)
			return ft_oob_recv(c, sizeof(*c));
		if (ft_timed_out(start, 3 * ft_opts.timeout)) {
			FT_ERR("timeout waiting for the peer's command");
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
}

static int tgt_command(struct ctl *c)
{
	switch (c->cmd) {
	case CTL_PREP:
		if (c->off > RGN_SIZE || c->size > RGN_SIZE - c->off)
			return -FI_EINVAL;
		/*
		 * count 0: fill with chunk pattern @seed (0: zero);
		 * else zero it and arm the verifying handler with count
		 * chunks of @chunk bytes and pattern @seed.
		 */
		if (c->seed && !c->count)
			fill_chunks(rgn + c->off, c->size, 1, c->seed);
		else
			memset(rgn + c->off, 0, c->size);
		memset(&tlog, 0, sizeof(tlog));
		tlog.off = c->off;
		tlog.size = c->chunk;
		tlog.count = c->count;
		tlog.seed = c->seed;
		return 0;
	case CTL_CHECK:
		if (c->off > RGN_SIZE || !c->count ||
		    c->size > (RGN_SIZE - c->off) / c->count)
			return -FI_EINVAL;
		return check_chunks(rgn + c->off, c->size, c->count, c->seed,
				    true);
	case CTL_LOG:
		drain_eq();
		c->calls = tlog.calls;
		c->events = tlog.events;
		c->bad = tlog.bad;
		c->seen_count = tlog.seen_count;
		memcpy(c->seen, tlog.seen, sizeof(c->seen));
		c->verdict = tlog.verdict;
		return 0;
	case CTL_CLOSE_EP:
		FT_CLOSE_FID(ft.ep);
		return 0;
	case CTL_EXIT:
	case CTL_DONE:
		return 0;
	default:
		return -FI_EINVAL;
	}
}

static int run_server(void)
{
	struct ctl c;
	int ret;

	for (;;) {
		ret = ctl_recv(&c);
		if (ret)
			return ret;
		c.status = tgt_command(&c);
		ret = ft_oob_send(&c, sizeof(c));
		if (ret)
			return ret;
		if (c.cmd == CTL_EXIT) {
			fflush(NULL);
			_exit(0);
		}
		if (c.cmd == CTL_DONE)
			return 0;
	}
}

/* ------------------------------------------------------------------ */
/* initiator side                                                       */

static int ctl_call(struct ctl *c)
{
	int ret;

	ret = ft_oob_send(c, sizeof(*c));
	if (!ret)
		ret = ft_oob_recv(c, sizeof(*c));
	return ret ? ret : (int)c->status;
}

static int ctl_simple(uint32_t cmd, uint64_t off, uint64_t size, uint64_t count,
		      uint64_t seed)
{
	struct ctl c = {.cmd = cmd,
			.off = off,
			.size = size,
			.count = count,
			.seed = seed};

	return ctl_call(&c);
}

static int ctl_log(struct ctl *c)
{
	memset(c, 0, sizeof(*c));
	c->cmd = CTL_LOG;
	return ctl_call(c);
}

/* one completion of any kind; err 0 for a success */
struct comp {
	void *context;
	uint64_t flags, len;
	int err;
};

static int wait_comp(struct comp *out, int limit_s)
{
	struct fi_cq_err_entry err = {0};
	struct fi_cq_data_entry e;
	uint64_t start = ft_now_us();
	ssize_t n;

	for (;;) {
		n = fi_cq_read(ft.txcq, &e, 1);
		if (n == 1) {
			out->context = e.op_context;
			out->flags = e.flags;
			out->len = e.len;
			out->err = 0;
			return 0;
		}
		if (n == -FI_EAVAIL)
			break;
		if (n != -FI_EAGAIN) {
			FT_PRINTERR("fi_cq_read", n);
			return (int)n;
		}
		if (ft_timed_out(start, limit_s)) {
			FT_ERR("no completion within %d s", limit_s);
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
	n = fi_cq_readerr(ft.txcq, &err, 0);
	if (n != 1) {
		FT_PRINTERR("fi_cq_readerr", n);
		return n < 0 ? (int)n : -FI_EOTHER;
	}
	out->context = err.op_context;
	out->flags = err.flags;
	out->len = err.len;
	out->err = err.err ? err.err : -1;
	return 0;
}

/* a commit completion: context, flags and length as fi_commit(3) says */
static int check_commit_comp(const struct comp *c, void *context, int want_err)
{
	int ret = 0;

	if (c->context != context) {
		FT_ERR("commit completion context %p, expected %p", c->context,
		       context);
		ret = -FI_EIO;
	}
	if (c->flags != COMMIT_FLAGS) {
		FT_ERR("commit completion flags 0x%" PRIx64 " (%s), expected "
		       "FI_RMA|FI_WRITE|FI_COMMIT_COMPLETE (0x%" PRIx64 ")",
		       c->flags, fi_tostr(&c->flags, FI_TYPE_CQ_EVENT_FLAGS),
		       (uint64_t)COMMIT_FLAGS);
		ret = -FI_EIO;
	}
	if (!c->err && c->len) {
		FT_ERR("commit completion len %" PRIu64 ", expected 0", c->len);
		ret = -FI_EIO;
	}
	if (c->err != want_err) {
		FT_ERR("commit completed with err %d (%s), expected %d (%s)",
		       c->err, c->err > 0 ? fi_strerror(c->err) : "-", want_err,
		       want_err ? fi_strerror(want_err) : "success");
		ret = -FI_EIO;
	}
	return ret;
}

static int post_commit(const struct fi_rma_iov *iov, size_t count,
		       void *context)
{
	ssize_t ret;

	FT_POST_RETRY(ret, fi_commit(ft.ep, iov, count, ft.peer, 0, context));
	if (ret)
		FT_PRINTERR("fi_commit", ret);
	return (int)ret;
}

/* posts fi_commit and waits for its completion; checks the answer */
static int commit_expect(const struct fi_rma_iov *iov, size_t count,
			 int want_err)
{
	struct comp c;
	int ret;

	ret = post_commit(iov, count, &ctx[0]);
	if (!ret)
		ret = wait_comp(&c, ft_opts.timeout);
	if (!ret)
		ret = check_commit_comp(&c, &ctx[0], want_err);
	return ret;
}

static ssize_t try_write(uint64_t src_off, uint64_t off, uint64_t size,
			 uint64_t flags, void *context)
{
	struct iovec iov = {.iov_base = ft.buf + src_off, .iov_len = size};
	struct fi_rma_iov rma = mk_iov(off, size);
	void *desc = fi_mr_desc(ft.mr);
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .desc = &desc,
				 .iov_count = 1,
				 .addr = ft.peer,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = context};

	return fi_writemsg(ft.ep, &msg, flags | FI_COMPLETION);
}

static int write_one(uint64_t src_off, uint64_t off, uint64_t size,
		     uint64_t flags, void *context)
{
	ssize_t ret;

	FT_POST_RETRY(ret, try_write(src_off, off, size, flags, context));
	if (ret)
		FT_PRINTERR("fi_writemsg", ret);
	return (int)ret;
}

static int wait_ok(const char *what, void *context)
{
	struct comp c;
	int ret;

	ret = wait_comp(&c, ft_opts.timeout);
	if (ret)
		return ret;
	if (c.err) {
		FT_ERR("%s failed: %s", what, fi_strerror(c.err));
		return -c.err;
	}
	if (context && c.context != context) {
		FT_ERR("%s: completion context %p, expected %p", what,
		       c.context, context);
		return -FI_EIO;
	}
	return 0;
}

/* writes @count chunks of @size from @off (chunk i: seed+i) and waits */
static int write_chunks(uint64_t off, uint64_t size, uint64_t count,
			uint64_t seed, uint64_t flags)
{
	uint64_t i;
	int ret;

	fill_chunks((uint8_t *)ft.buf, size, count, seed);
	for (i = 0; i < count; i++) {
		ret = write_one(i * size, off + i * size, size, flags, &ctx[1]);
		if (!ret)
			ret = wait_ok("write", &ctx[1]);
		if (ret)
			return ret;
	}
	return 0;
}

/* compares what the target saw with what was committed */
static int check_seen(const struct ctl *log, const struct fi_rma_iov *iov,
		      size_t count)
{
	size_t i;

	if (log->bad) {
		FT_ERR("the target saw %" PRIu64 " malformed commit "
		       "call(s)/event(s) (see the server's output)",
		       log->bad);
		return -FI_EIO;
	}
	if (log->seen_count != count) {
		FT_ERR("the target saw %" PRIu64 " iovs, committed %zu",
		       log->seen_count, count);
		return -FI_EIO;
	}
	for (i = 0; i < count; i++) {
		if (log->seen[i].addr == iov[i].addr &&
		    log->seen[i].len == iov[i].len &&
		    log->seen[i].key == iov[i].key)
			continue;
		FT_ERR("iov %zu at the target: addr 0x%" PRIx64 " len %" PRIu64
		       " key 0x%" PRIx64 "; committed addr 0x%" PRIx64
		       " len %" PRIu64 " key 0x%" PRIx64,
		       i, log->seen[i].addr, log->seen[i].len, log->seen[i].key,
		       (uint64_t)iov[i].addr, (uint64_t)iov[i].len,
		       (uint64_t)iov[i].key);
		return -FI_EIO;
	}
	return 0;
}

static int expect_log(uint64_t calls, uint64_t events,
		      const struct fi_rma_iov *iov, size_t count)
{
	struct ctl log;
	int ret;

	ret = ctl_log(&log);
	if (ret)
		return ret;
	if (log.calls != calls || log.events != events) {
		FT_ERR("the target's handler ran %" PRIu64 " time(s) and its "
		       "EQ had %" PRIu64
		       " FI_COMMIT event(s); expected %" PRIu64 " and %" PRIu64,
		       log.calls, log.events, calls, events);
		return -FI_EIO;
	}
	if (!calls && !events) {
		if (!log.bad)
			return 0;
		FT_ERR("target: %" PRIu64 " malformed events", log.bad);
		return -FI_EIO;
	}
	return check_seen(&log, iov, count);
}

static void report(const char *what, int ret)
{
	printf("%s %s %s\n", ret ? "FAIL" : "PASS", cc->name, what);
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* cases                                                                */

/* write, commit it (one to four ranges), check the counter and data */
static int case_auto(void)
{
	struct fi_rma_iov iov[MAX_IOV];
	uint64_t before;
	size_t n;
	int ret = 0;

	for (n = 1; n <= MAX_IOV && !ret; n++) {
		ret = ctl_simple(CTL_PREP, 0, 8192, 0, 0);
		if (!ret)
			ret = write_chunks(0, 4096, 2, n, 0);
		if (ret)
			break;
		/* n ranges covering (parts of) the two chunks */
		iov[0] = mk_iov(0, 4096);
		iov[1] = mk_iov(4096, 4096);
		iov[2] = mk_iov(100, 1000);
		iov[3] = mk_iov(8191, 1);
		before = fi_cntr_read(ft.cntr);
		ret = commit_expect(iov, n, 0);
		if (!ret && fi_cntr_read(ft.cntr) != before + 1) {
			FT_ERR("write counter went %" PRIu64 " -> %" PRIu64
			       ", expected one more for the commit",
			       before, fi_cntr_read(ft.cntr));
			ret = -FI_EIO;
		}
		if (!ret)
			ret = ctl_simple(CTL_CHECK, 0, 4096, 2, n);
		if (!ret)
			ret = expect_log(0, 0, NULL, 0);
		printf("%s auto commit of %zu range(s)\n",
		       ret ? "FAIL" : "PASS", n);
	}
	return ret;
}

/* fi_commit(3): an endpoint opened without FI_PMEM answers -FI_EOPNOTSUPP */
static int no_pmem_ep(void)
{
	struct fi_info *hints, *info = NULL;
	struct fid_domain *dom = NULL;
	struct fid_ep *ep = NULL;
	struct fid_av *av = NULL;
	struct fid_cq *cq = NULL;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_rma_iov iov = mk_iov(0, 64);
	ssize_t r;

	hints = fi_dupinfo(ft.hints);
	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_RMA;
	r = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, NULL,
		       ft_opts.src_addr ? FI_SOURCE : 0, hints, &info);
	if (!r && (info->caps & FI_RMA_PMEM)) {
		/* the provider may add it: then there is nothing to test */
		info->caps &= ~FI_RMA_PMEM;
	}
	if (!r)
		r = fi_domain(ft.fabric, info, &dom, NULL);
	if (!r)
		r = fi_cq_open(dom, &cq_attr, &cq, NULL);
	if (!r)
		r = fi_av_open(dom, &av_attr, &av, NULL);
	if (!r)
		r = fi_endpoint(dom, info, &ep, NULL);
	if (!r)
		r = fi_ep_bind(ep, &av->fid, 0);
	if (!r)
		r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!r)
		r = fi_enable(ep);
	if (r) {
		FT_PRINTERR("endpoint without FI_PMEM", r);
	} else {
		r = fi_commit(ep, &iov, 1, 0, 0, NULL);
		if (r == -FI_EOPNOTSUPP) {
			r = 0;
		} else {
			FT_ERR("fi_commit without FI_PMEM: %zd, expected "
			       "-FI_EOPNOTSUPP",
			       r);
			r = -FI_EIO;
		}
	}
	if (ep)
		fi_close(&ep->fid);
	if (av)
		fi_close(&av->fid);
	if (cq)
		fi_close(&cq->fid);
	if (dom)
		fi_close(&dom->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return (int)r;
}

/* local argument checks; no traffic */
static int case_args(void)
{
	struct fi_rma_iov iov[MAX_IOV + 1];
	struct fi_info *info;
	struct fid_ep *ep2 = NULL;
	ssize_t r;
	int ret = 0, i;

	for (i = 0; i <= MAX_IOV; i++)
		iov[i] = mk_iov(0, 64);
	r = fi_commit(ft.ep, iov, 0, ft.peer, 0, NULL);
	if (r != -FI_EINVAL) {
		FT_ERR("fi_commit count 0: %zd, expected -FI_EINVAL", r);
		ret = -FI_EIO;
	}
	r = fi_commit(ft.ep, iov, MAX_IOV + 1, ft.peer, 0, NULL);
	if (r != -FI_EINVAL) {
		FT_ERR("fi_commit count 5: %zd, expected -FI_EINVAL", r);
		ret = -FI_EIO;
	}
	r = fi_commit(ft.ep, NULL, 1, ft.peer, 0, NULL);
	if (r != -FI_EINVAL) {
		FT_ERR("fi_commit NULL iov: %zd, expected -FI_EINVAL", r);
		ret = -FI_EIO;
	}
	r = fi_commit(ft.ep, iov, 1, ft.peer, FI_INJECT, NULL);
	if (r != -FI_EBADFLAGS) {
		FT_ERR("fi_commit flags FI_INJECT: %zd, expected "
		       "-FI_EBADFLAGS",
		       r);
		ret = -FI_EIO;
	}
	r = fi_commit(ft.ep, iov, 1, ft.peer, 1ULL << 45, NULL);
	if (r != -FI_EBADFLAGS) {
		FT_ERR("fi_commit flags bit 45: %zd, expected -FI_EBADFLAGS",
		       r);
		ret = -FI_EIO;
	}
	report("fi_commit argument checks", ret);

	/* FI_COMMIT_MANUAL without an EQ: fi_enable refuses */
	info = fi_dupinfo(ft.info);
	if (!info)
		return -FI_ENOMEM;
	info->mode |= FI_COMMIT_MANUAL;
	r = fi_endpoint(ft.domain, info, &ep2, NULL);
	if (!r)
		r = fi_ep_bind(ep2, &ft.av->fid, 0);
	if (!r)
		r = fi_ep_bind(ep2, &ft.rxcq->fid, FI_RECV | FI_TRANSMIT);
	if (r) {
		FT_PRINTERR("manual endpoint without EQ: setup", r);
		i = -FI_EIO;
	} else {
		r = fi_enable(ep2);
		i = r == -FI_ENOEQ ? 0 : -FI_EIO;
		if (i)
			FT_ERR("fi_enable of a FI_COMMIT_MANUAL endpoint "
			       "without an EQ: %zd, expected -FI_ENOEQ",
			       r);
	}
	if (ep2)
		fi_close(&ep2->fid);
	fi_freeinfo(info);
	report("FI_COMMIT_MANUAL without an EQ: -FI_ENOEQ", i);
	ret = ret ?: i;
	i = no_pmem_ep();
	report("fi_commit on an endpoint without FI_PMEM: -FI_EOPNOTSUPP", i);
	return ret ?: i;
}

/* waits for the write counter to reach @want, no CQ entry meanwhile */
static int wait_cntr_quiet(uint64_t want)
{
	struct fi_cq_data_entry e;
	uint64_t start = ft_now_us();
	ssize_t n;

	while (fi_cntr_read(ft.cntr) < want) {
		n = fi_cq_read(ft.txcq, &e, 1);
		if (n != -FI_EAGAIN) {
			FT_ERR("fi_cq_read: %zd (context %p): a commit "
			       "without FI_COMPLETION made an entry?",
			       n, n == 1 ? e.op_context : NULL);
			return -FI_EIO;
		}
		if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("write counter at %" PRIu64
			       ", expected %" PRIu64,
			       fi_cntr_read(ft.cntr), want);
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
	return 0;
}

/* FI_SELECTIVE_COMPLETION: flags 0 counts only, FI_COMPLETION reports */
static int case_selective(void)
{
	struct fi_rma_iov iov = mk_iov(0, 4096);
	uint64_t before;
	struct comp c;
	ssize_t r;
	int ret;

	ret = ctl_simple(CTL_PREP, 0, 4096, 0, 0);
	if (!ret)
		ret = write_chunks(0, 4096, 1, 9, 0);
	if (ret)
		return ret;
	before = fi_cntr_read(ft.cntr);
	FT_POST_RETRY(r, fi_commit(ft.ep, &iov, 1, ft.peer, 0, &ctx[5]));
	if (r) {
		FT_PRINTERR("fi_commit", r);
		return (int)r;
	}
	ret = wait_cntr_quiet(before + 1);
	report("commit with flags 0: counted, no CQ entry", ret);
	if (ret)
		return ret;
	FT_POST_RETRY(
		r, fi_commit(ft.ep, &iov, 1, ft.peer, FI_COMPLETION, &ctx[0]));
	if (r) {
		FT_PRINTERR("fi_commit", r);
		return (int)r;
	}
	ret = wait_comp(&c, ft_opts.timeout);
	if (!ret)
		ret = check_commit_comp(&c, &ctx[0], 0);
	report("commit with FI_COMPLETION: a CQ entry", ret);
	return ret ?: ctl_simple(CTL_CHECK, 0, 4096, 1, 9);
}

/* the target's handler decides; optionally declines to the EQ */
static int manual_common(int want_err, uint64_t calls, uint64_t events)
{
	struct fi_rma_iov iov[2];
	int ret;

	ret = ctl_simple(CTL_PREP, 0, 8192, 0, 0);
	if (!ret)
		ret = write_chunks(0, 4096, 2, 5, 0);
	if (ret)
		return ret;
	iov[0] = mk_iov(0, 4096);
	iov[1] = mk_iov(4096 + 10, 100);
	ret = commit_expect(iov, 2, want_err);
	report(want_err ? "initiator sees the handler's error"
			: "initiator completes",
	       ret);
	if (ret)
		return ret;
	ret = expect_log(calls, events, iov, 2);
	report(calls ? "handler called once with the committed ranges"
		     : "event on the EQ carries the committed ranges",
	       ret);
	if (!ret && calls && events)
		report("declined event queued", 0);
	return ret;
}

static int case_manual_ok(void)
{
	return manual_common(0, 1, 0);
}

static int case_manual_pos(void)
{
	return manual_common(0, 1, 0);
}

static int case_manual_eio(void)
{
	return manual_common(FI_EIO, 1, 0);
}

static int case_manual_decline(void)
{
	return manual_common(0, 1, 1);
}

static int case_manual_event(void)
{
	return manual_common(0, 0, 1);
}

/* bad key and ranges: FI_EACCES, and no handler call or event */
static int case_bad(void)
{
	struct fi_rma_iov iov[2], good = mk_iov(0, 4096);
	struct {
		const char *what;
		struct fi_rma_iov iov;
	} bad[] = {
		{"wrong key", {rgn_rma_addr(0), 4096, rgn_key ^ 0x5a5a}},
		{"range past the end", mk_iov(RGN_SIZE - 4096, 8192)},
		{"range before the start",
		 {rgn_rma_addr(0) - 4096, 8192, rgn_key}},
		{"length wraps around",
		 {rgn_rma_addr(4096), UINT64_MAX - 100, rgn_key}},
		{"non-persistent registration", {plain_addr, 4096, plain_key}},
	};
	char what[128];
	size_t i;
	int ret = 0, r;

	r = ctl_simple(CTL_PREP, 0, 4096, 0, 0);
	if (r)
		return r;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(what, sizeof(what), "%s, alone", bad[i].what);
		r = commit_expect(&bad[i].iov, 1, FI_EACCES);
		report(what, r);
		ret = ret ?: r;
		/* the second range is bad: the whole commit fails */
		snprintf(what, sizeof(what), "%s, 2nd of 2 ranges",
			 bad[i].what);
		iov[0] = good;
		iov[1] = bad[i].iov;
		r = commit_expect(iov, 2, FI_EACCES);
		report(what, r);
		ret = ret ?: r;
	}
	r = expect_log(0, 0, NULL, 0);
	report("no handler call and no event for a refused commit", r);
	ret = ret ?: r;
	/* and the endpoint still works */
	r = commit_expect(&good, 1, 0);
	if (!r && cc->kind != TGT_AUTO)
		r = expect_log(1, 0, &good, 1);
	report("a good commit after the refused ones", r);
	return ret ?: r;
}

/* a range nothing was written to: success, contents unchanged */
static int case_unwritten(void)
{
	struct fi_rma_iov iov = mk_iov(RGN_SIZE - 65536, 65536);
	int ret;

	ret = ctl_simple(CTL_PREP, RGN_SIZE - 65536, 65536, 0, 99);
	if (!ret)
		ret = commit_expect(&iov, 1, 0);
	if (!ret)
		ret = ctl_simple(CTL_CHECK, RGN_SIZE - 65536, 65536, 1, 99);
	report("commit of a range never written", ret);
	return ret;
}

/* posts write @i; a full queue is drained into @done, never waited on */
static int post_write_reaping(uint64_t i, uint64_t *done)
{
	struct fi_cq_data_entry e;
	uint64_t start = ft_now_us();
	ssize_t ret;

	for (;;) {
		ret = try_write(i * many_size, i * many_size, many_size, 0,
				&ctx[2]);
		if (ret != -FI_EAGAIN || ft_timed_out(start, ft_opts.timeout)) {
			if (ret)
				FT_PRINTERR("fi_writemsg", ret);
			return (int)ret;
		}
		ret = fi_cq_read(ft.txcq, &e, 1);
		if (ret == 1)
			(*done)++;
		else if (ret == -FI_EAVAIL)
			return ft_cq_error(ft.txcq, "write");
	}
}

/* FI_ATOMIC_WRITE of MANY_ALEN bytes at @off, not waited for */
static int post_atomic(uint64_t off)
{
	void *desc = fi_mr_desc(ft.mr);
	struct fi_ioc ioc = {.addr = ft.buf + off, .count = MANY_ALEN / 8};
	struct fi_rma_ioc rioc = {.addr = rgn_rma_addr(off),
				  .count = MANY_ALEN / 8,
				  .key = rgn_key};
	struct fi_msg_atomic msg = {.msg_iov = &ioc,
				    .desc = &desc,
				    .iov_count = 1,
				    .addr = ft.peer,
				    .rma_iov = &rioc,
				    .rma_iov_count = 1,
				    .datatype = FI_UINT64,
				    .op = FI_ATOMIC_WRITE,
				    .context = &ctx[2]};
	ssize_t ret;

	fill_chunks((uint8_t *)ft.buf + off, MANY_ALEN, 1, MANY_ASEED);
	FT_POST_RETRY(ret, fi_atomicmsg(ft.ep, &msg, FI_COMPLETION));
	if (ret)
		FT_PRINTERR("fi_atomicmsg", ret);
	return (int)ret;
}

/*
 * many_n writes and an atomic posted back to back, then one commit posted before
 * any write completed.  In the verify kind the target's handler checks
 * every byte when the commit arrives: the commit is ordered after them.
 */
static int case_many(void)
{
	uint64_t total = many_n * many_size, done = 0, i;
	struct ctl prep;
	char what[128];
	struct fi_rma_iov iov[MAX_IOV];
	struct comp c;
	bool commit_seen = false;
	int ret;

	memset(&prep, 0, sizeof(prep));
	prep.cmd = CTL_PREP;
	prep.size = total + MANY_ALEN;
	prep.count = many_n;
	prep.seed = MANY_SEED;
	prep.chunk = many_size;
	ret = ctl_call(&prep);
	if (ret)
		return ret;
	fill_chunks((uint8_t *)ft.buf, many_size, many_n, MANY_SEED);
	for (i = 0; i < many_n; i++) {
		ret = post_write_reaping(i, &done);
		if (ret)
			return ret;
	}
	ret = post_atomic(total);
	if (ret)
		return ret;
	/* four ranges covering everything, unequal on purpose */
	iov[0] = mk_iov(0, 4096);
	iov[1] = mk_iov(4096, total / 2 - 4096);
	iov[2] = mk_iov(total / 2, total / 4);
	iov[3] = mk_iov(total / 2 + total / 4,
			total - total / 2 - total / 4 + MANY_ALEN);
	ret = post_commit(iov, MAX_IOV, &ctx[0]);
	if (ret)
		return ret;
	while (!commit_seen || done < many_n + 1) {
		ret = wait_comp(&c, ft_opts.timeout);
		if (ret)
			return ret;
		if (c.context == &ctx[0]) {
			ret = check_commit_comp(&c, &ctx[0], 0);
			if (ret && c.err == FI_EIO && cc->kind == TGT_H_VERIFY)
				FT_ERR("the target's handler found data "
				       "missing: the commit overtook earlier "
				       "writes (see the server's output)");
			if (ret)
				return ret;
			commit_seen = true;
			continue;
		}
		if (c.err) {
			FT_ERR("write failed: %s", fi_strerror(c.err));
			return -c.err;
		}
		done++;
	}
	ret = ctl_simple(CTL_CHECK, 0, many_size, many_n, MANY_SEED);
	if (!ret)
		ret = ctl_simple(CTL_CHECK, total, MANY_ALEN, 1, MANY_ASEED);
	snprintf(what, sizeof(what),
		 "%" PRIu64 " x %" PRIu64 " KiB writes and an atomic, then "
		 "one commit: data at the target",
		 many_n, many_size >> 10);
	report(what, ret);
	if (ret || cc->kind == TGT_AUTO)
		return ret;
	ret = expect_log(1, 0, iov, MAX_IOV);
	report("the handler saw every write and the atomic applied (ordering)",
	       ret);
	return ret;
}

static int case_many_large(void)
{
	many_n = 15;
	many_size = 256 << 10;
	return case_many();
}

/* FI_COMMIT_COMPLETE writes and an atomic, persistent and not */
static int case_commit_complete(void)
{
	struct fi_ioc ioc;
	struct fi_rma_ioc rioc = {
		.addr = rgn_rma_addr(65536), .count = 1, .key = rgn_key};
	struct fi_msg_atomic amsg = {.msg_iov = &ioc,
				     .iov_count = 1,
				     .addr = ft.peer,
				     .rma_iov = &rioc,
				     .rma_iov_count = 1,
				     .datatype = FI_UINT64,
				     .op = FI_ATOMIC_WRITE,
				     .context = &ctx[3]};
	struct fi_rma_iov prma = {
		.addr = plain_addr, .len = 4096, .key = plain_key};
	struct iovec piov;
	void *desc = fi_mr_desc(ft.mr);
	struct fi_msg_rma pmsg = {.msg_iov = &piov,
				  .desc = &desc,
				  .iov_count = 1,
				  .addr = ft.peer,
				  .rma_iov = &prma,
				  .rma_iov_count = 1,
				  .context = &ctx[4]};
	uint64_t *val;
	ssize_t r;
	int ret;

	ret = ctl_simple(CTL_PREP, 0, 65536 + 8, 0, 0);
	if (!ret)
		ret = write_chunks(0, 8192, 8, 31, FI_COMMIT_COMPLETE);
	if (!ret)
		ret = ctl_simple(CTL_CHECK, 0, 8192, 8, 31);
	report("FI_COMMIT_COMPLETE writes to a persistent region", ret);
	if (ret)
		return ret;

	/* the atomic writes chunk_seed-free data: 8 bytes of a pattern */
	val = (uint64_t *)(ft.buf + 1024 * 1024);
	ft_fill_buf(val, 8, chunk_seed(41, 0));
	ioc.addr = val;
	ioc.count = 1;
	amsg.desc = &desc;
	FT_POST_RETRY(r, fi_atomicmsg(ft.ep, &amsg,
				      FI_COMMIT_COMPLETE | FI_COMPLETION));
	if (r) {
		FT_PRINTERR("fi_atomicmsg(FI_COMMIT_COMPLETE)", r);
		ret = (int)r;
	}
	if (!ret)
		ret = wait_ok("atomic", &ctx[3]);
	if (!ret)
		ret = ctl_simple(CTL_CHECK, 65536, 8, 1, 41);
	report("FI_COMMIT_COMPLETE atomic to a persistent region", ret);
	if (ret)
		return ret;

	/* a plain registration: delivery complete, no error */
	piov.iov_base = ft.buf;
	piov.iov_len = 4096;
	FT_POST_RETRY(r, fi_writemsg(ft.ep, &pmsg,
				     FI_COMMIT_COMPLETE | FI_COMPLETION));
	if (r) {
		FT_PRINTERR("fi_writemsg(FI_COMMIT_COMPLETE, plain)", r);
		ret = (int)r;
	}
	if (!ret)
		ret = wait_ok("FI_COMMIT_COMPLETE write to a plain region",
			      &ctx[4]);
	report("FI_COMMIT_COMPLETE write to a non-persistent region", ret);
	return ret;
}

/* the target dies in its handler, before answering */
static int case_die(void)
{
	struct fi_rma_iov iov = mk_iov(0, 4096);
	uint64_t start;
	struct comp c;
	int ret;

	ret = ctl_simple(CTL_PREP, 0, 4096, 0, 0);
	if (!ret)
		ret = write_chunks(0, 4096, 1, 3, 0);
	if (ret)
		return ret;
	start = ft_now_us();
	ret = post_commit(&iov, 1, &ctx[0]);
	if (!ret)
		ret = wait_comp(&c, 2 * DIE_LIMIT_S);
	if (!ret && !c.err) {
		FT_ERR("the commit succeeded though the target died before "
		       "answering");
		ret = -FI_EIO;
	}
	if (!ret && c.err != FI_EIO && c.err != FI_ECANCELED) {
		FT_ERR("the commit failed with %d (%s), expected FI_EIO or "
		       "FI_ECANCELED",
		       c.err, fi_strerror(c.err));
		ret = -FI_EIO;
	}
	if (!ret && c.context != &ctx[0]) {
		FT_ERR("error entry context %p, expected %p", c.context,
		       (void *)&ctx[0]);
		ret = -FI_EIO;
	}
	if (!ret && ft_timed_out(start, DIE_LIMIT_S)) {
		FT_ERR("the error came after %.1f s, more than %d s",
		       (ft_now_us() - start) / 1e6, DIE_LIMIT_S);
		ret = -FI_EIO;
	}
	printf("%s %s error after %.2f s (err %d)\n", ret ? "FAIL" : "PASS",
	       "target died in its handler:", (ft_now_us() - start) / 1e6,
	       ret ? 0 : c.err);
	return ret;
}

/* *_first cases: the commit is the first contact with the target */
static bool first_contact;

/* a write first, so the initiator knows the target when it goes away */
static int prime(void)
{
	int ret;

	if (first_contact)
		return 0;
	ret = ctl_simple(CTL_PREP, 0, 4096, 0, 0);
	return ret ? ret : write_chunks(0, 4096, 1, 3, 0);
}

/*
 * fi_commit(3): the failure is a CQ error entry within 5 s, or, when the
 * target is already known gone (the commit is the first contact, or a
 * progress thread saw the connection go), -FI_EIO from fi_commit itself
 * (1 here); -FI_EAGAIN past 5 s or any other post error is not an answer
 * the spec gives.
 */
static int post_commit_bounded(const struct fi_rma_iov *iov, size_t count,
			       void *context)
{
	uint64_t start = ft_now_us();
	ssize_t ret;

	while ((ret = fi_commit(ft.ep, iov, count, ft.peer, 0, context)) ==
		       -FI_EAGAIN &&
	       !ft_timed_out(start, DIE_LIMIT_S))
		fi_cq_read(ft.txcq, NULL, 0);
	if (ret == -FI_EIO && !ft_timed_out(start, DIE_LIMIT_S))
		return 1;
	if (ret)
		FT_ERR("fi_commit to a gone target: %zd (%s)%s", ret,
		       fi_strerror((int)-ret),
		       ret == -FI_EAGAIN ? " for 5 s" : " at post");
	return (int)ret;
}

/* the target process is gone before the commit is sent */
static int case_dead(void)
{
	struct pollfd pfd = {.fd = ft.oob_sock, .events = POLLIN};
	struct fi_rma_iov iov = mk_iov(0, 4096);
	uint64_t start;
	struct comp c;
	char b;
	int ret;

	ret = prime();
	if (!ret)
		ret = ctl_simple(CTL_EXIT, 0, 0, 0, 0);
	if (ret)
		return ret;
	/* wait for the server's socket to close: it has exited */
	start = ft_now_us();
	while (!ft_timed_out(start, DIE_LIMIT_S)) {
		if (poll(&pfd, 1, 100) > 0 && recv(ft.oob_sock, &b, 1, 0) <= 0)
			break;
	}
	usleep(100000);
	start = ft_now_us();
	memset(&c, 0, sizeof(c));
	ret = post_commit_bounded(&iov, 1, &ctx[0]);
	if (ret == 1) { /* refused at post: the error is FI_EIO */
		c.err = FI_EIO;
		ret = 0;
	} else if (!ret) {
		ret = wait_comp(&c, 2 * DIE_LIMIT_S);
	}
	if (!ret && (c.err != FI_EIO && c.err != FI_ECANCELED)) {
		FT_ERR("commit to a dead target: err %d (%s), expected FI_EIO "
		       "or FI_ECANCELED",
		       c.err, c.err ? fi_strerror(c.err) : "success");
		ret = -FI_EIO;
	}
	if (!ret && ft_timed_out(start, DIE_LIMIT_S)) {
		FT_ERR("the error came after more than %d s", DIE_LIMIT_S);
		ret = -FI_EIO;
	}
	printf("%s commit to a dead target fails in %.2f s\n",
	       ret ? "FAIL" : "PASS", (ft_now_us() - start) / 1e6);
	return ret;
}

/* the target closes its endpoint but lives on */
static int case_closed(void)
{
	struct fi_rma_iov iov = mk_iov(0, 4096);
	uint64_t start;
	struct comp c;
	int ret;

	ret = prime();
	if (!ret)
		ret = ctl_simple(CTL_CLOSE_EP, 0, 0, 0, 0);
	if (ret)
		return ret;
	start = ft_now_us();
	memset(&c, 0, sizeof(c));
	ret = post_commit_bounded(&iov, 1, &ctx[0]);
	if (ret == 1) { /* refused at post: the error is FI_EIO */
		c.err = FI_EIO;
		ret = 0;
	} else if (!ret) {
		ret = wait_comp(&c, 2 * DIE_LIMIT_S);
	}
	if (!ret && (c.err != FI_EIO && c.err != FI_ECANCELED)) {
		FT_ERR("commit to a closed endpoint: err %d (%s), expected "
		       "FI_EIO or FI_ECANCELED",
		       c.err, c.err ? fi_strerror(c.err) : "success");
		ret = -FI_EIO;
	}
	if (!ret && ft_timed_out(start, DIE_LIMIT_S)) {
		FT_ERR("the error came after more than %d s", DIE_LIMIT_S);
		ret = -FI_EIO;
	}
	printf("%s commit to a closed endpoint fails in %.2f s\n",
	       ret ? "FAIL" : "PASS", (ft_now_us() - start) / 1e6);
	return ret;
}

static int case_dead_first(void)
{
	first_contact = true;
	return case_dead();
}

static int case_closed_first(void)
{
	first_contact = true;
	return case_closed();
}

static const struct commit_case cases[] = {
	{"args", TGT_AUTO, case_args, "argument checks, FI_ENOEQ"},
	{"auto", TGT_AUTO, case_auto, "provider persists, 1..4 ranges"},
	{"manual_ok", TGT_H_OK, case_manual_ok, "handler answers 0"},
	{"manual_pos", TGT_H_POS, case_manual_pos,
	 "handler answers 7 (positive: success)"},
	{"manual_eio", TGT_H_EIO, case_manual_eio, "handler answers -FI_EIO"},
	{"manual_decline", TGT_H_DECLINE, case_manual_decline,
	 "handler answers -FI_EAGAIN: event queued"},
	{"manual_event", TGT_EVENT, case_manual_event,
	 "no handler: event on the EQ"},
	{"bad", TGT_AUTO, case_bad, "bad key/ranges: FI_EACCES"},
	{"manual_bad", TGT_H_OK, case_bad,
	 "bad key/ranges, manual: FI_EACCES, no handler call"},
	{"selective", TGT_AUTO, case_selective,
	 "FI_SELECTIVE_COMPLETION: flags 0 / FI_COMPLETION"},
	{"unwritten", TGT_AUTO, case_unwritten, "commit of unwritten range"},
	{"many", TGT_H_VERIFY, case_many,
	 "1000 writes then one commit, handler checks the data"},
	{"many_large", TGT_H_VERIFY, case_many_large,
	 "15 x 256 KiB writes then one commit, handler checks the data"},
	{"many_auto", TGT_AUTO, case_many, "1000 writes then one commit"},
	{"commit_complete", TGT_AUTO, case_commit_complete,
	 "FI_COMMIT_COMPLETE writes and atomic"},
	{"die", TGT_H_DIE, case_die, "target dies before answering"},
	{"dead", TGT_AUTO, case_dead, "target process gone before commit"},
	{"closed", TGT_AUTO, case_closed, "target endpoint closed"},
	{"dead_first", TGT_AUTO, case_dead_first,
	 "target process gone before any traffic, then commit"},
	{"closed_first", TGT_AUTO, case_closed_first,
	 "target endpoint closed before any traffic, then commit"},
};
#define NCASES	     (sizeof(cases) / sizeof(cases[0]))

/* ------------------------------------------------------------------ */
/* setup                                                                */

static bool manual(void)
{
	return cc->kind != TGT_AUTO;
}

static int open_ep(void)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_NONE};
	ssize_t ret;

	ret = ft_open_cq(FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 4096, &ft.txcq);
	if (!ret)
		ret = ft_open_cq(FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, &ft.rxcq);
	if (ret)
		return (int)ret;
	ret = fi_cntr_open(ft.domain, &cntr_attr, &ft.cntr, NULL);
	if (ret) {
		FT_PRINTERR("fi_cntr_open", ret);
		return (int)ret;
	}
	ret = fi_av_open(ft.domain, &av_attr, &ft.av, NULL);
	if (ret) {
		FT_PRINTERR("fi_av_open", ret);
		return (int)ret;
	}
	/* the target of a manual case: its mode, its EQ, maybe a handler */
	if (ft_is_server() && manual())
		ft.info->mode |= FI_COMMIT_MANUAL;
	ret = fi_endpoint(ft.domain, ft.info, &ft.ep, NULL);
	if (ret) {
		FT_PRINTERR("fi_endpoint", ret);
		return (int)ret;
	}
	if (ft_is_server() && manual()) {
		ret = fi_eq_open(ft.fabric, &eq_attr, &eq, NULL);
		if (!ret)
			ret = fi_ep_bind(ft.ep, &eq->fid, 0);
		if (ret) {
			FT_PRINTERR("fi_eq_open/bind", ret);
			return (int)ret;
		}
		if (cc->kind != TGT_EVENT) {
			ret = fi_eq_register_handler(eq, FI_COMMIT,
						     commit_handler,
						     &handler_ctx_tag);
			if (ret) {
				FT_PRINTERR("fi_eq_register_handler", ret);
				return (int)ret;
			}
		}
	}
	ret = fi_ep_bind(ft.ep, &ft.av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(ft.ep, &ft.txcq->fid,
				 FI_TRANSMIT |
					 (cc->run == case_selective
						  ? FI_SELECTIVE_COMPLETION
						  : 0));
	if (!ret)
		ret = fi_ep_bind(ft.ep, &ft.rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_ep_bind(ft.ep, &ft.cntr->fid, FI_WRITE);
	if (ret) {
		FT_PRINTERR("fi_ep_bind", ret);
		return (int)ret;
	}
	ret = fi_enable(ft.ep);
	if (ret)
		FT_PRINTERR("fi_enable", ret);
	return (int)ret;
}

/*
 * Both ends map a file and register it persistent (the client uses its
 * own as the source of its writes); ft.mr is the local source buffer.
 */
static int alloc_regions(void)
{
	uint64_t racc = FI_REMOTE_READ | FI_REMOTE_WRITE;
	int ret;

	rgn = map_file(RGN_SIZE);
	if (!rgn)
		return -FI_ENOMEM;
	ft.buf_size = RGN_SIZE;
	if (posix_memalign((void **)&ft.buf, 4096, RGN_SIZE) ||
	    posix_memalign((void **)&plain, 4096, PLAIN_SIZE))
		return -FI_ENOMEM;
	memset(ft.buf, 0, RGN_SIZE);
	memset(plain, 0, PLAIN_SIZE);
	ret = fi_mr_reg(ft.domain, rgn, RGN_SIZE, racc, 0, TGT_KEY, FI_RMA_PMEM,
			&rgn_mr, NULL);
	if (ret) {
		FT_PRINTERR("fi_mr_reg(FI_RMA_PMEM)", ret);
		return ret;
	}
	ret = fi_mr_reg(ft.domain, plain, PLAIN_SIZE, racc, 0, PLAIN_KEY, 0,
			&plain_mr, NULL);
	if (!ret)
		ret = fi_mr_reg(ft.domain, ft.buf, RGN_SIZE, FI_READ | FI_WRITE,
				0, SRC_KEY, 0, &ft.mr, NULL);
	if (ret)
		FT_PRINTERR("fi_mr_reg", ret);
	return ret;
}

static int exchange(void)
{
	struct setup_wire mine = {0}, theirs = {0};
	size_t len = sizeof(mine.name);
	int ret;

	ret = fi_getname(&ft.ep->fid, mine.name, &len);
	if (ret) {
		FT_PRINTERR("fi_getname", ret);
		return ret;
	}
	mine.name_len = (uint32_t)len;
	mine.rgn_addr = virt_addr ? (uint64_t)(uintptr_t)rgn : 0;
	mine.rgn_key = fi_mr_key(rgn_mr);
	mine.plain_addr = virt_addr ? (uint64_t)(uintptr_t)plain : 0;
	mine.plain_key = fi_mr_key(plain_mr);
	ret = ft_oob_send(&mine, sizeof(mine));
	if (!ret)
		ret = ft_oob_recv(&theirs, sizeof(theirs));
	if (ret)
		return ret;
	if (!theirs.name_len || theirs.name_len > sizeof(theirs.name))
		return -FI_EINVAL;
	rgn_addr = theirs.rgn_addr;
	rgn_key = theirs.rgn_key;
	plain_addr = theirs.plain_addr;
	plain_key = theirs.plain_key;
	ret = fi_av_insert(ft.av, theirs.name, 1, &ft.peer, 0, NULL);
	if (ret != 1) {
		FT_PRINTERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	return 0;
}

static int commit_init(void)
{
	uint64_t flags = ft_opts.src_addr ? FI_SOURCE : 0;
	uint64_t caps = FI_RMA | FI_PMEM;
	int ret;

	/* FI_ATOMIC only where it is used: a missing one is not a skip */
	if (cc->run == case_commit_complete || cc->run == case_many ||
	    cc->run == case_many_large)
		caps |= FI_ATOMIC;
	ret = ft_alloc_hints(caps);
	if (ret)
		return ret;
	ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, NULL, flags, ft.hints,
			 &ft.info);
	if (ret == -FI_ENODATA) {
		printf("SKIP: no provider%s%s offers FI_RMA_PMEM (caps %s); "
		       "is the library built with libpmem?\n",
		       ft_opts.prov ? " named " : "",
		       ft_opts.prov ? ft_opts.prov : "",
		       fi_tostr(&caps, FI_TYPE_CAPS));
		/* the peer must not wait for us */
		return -FI_ENODATA;
	}
	if (ret) {
		FT_PRINTERR("fi_getinfo", ret);
		return ret;
	}
	if (!(ft.info->caps & FI_RMA_PMEM)) {
		FT_ERR("fi_getinfo returned %s without FI_RMA_PMEM",
		       ft.info->fabric_attr->prov_name);
		return -FI_EOTHER;
	}
	virt_addr = ft.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	ret = ft_open_fabric_domain();
	if (!ret)
		ret = open_ep();
	if (!ret)
		ret = alloc_regions();
	if (ret)
		return ret;
	ret = ft_is_server() ? ft_oob_listen_accept(ft_opts.port)
			     : ft_oob_connect(ft_opts.dst_addr, ft_opts.port);
	if (!ret)
		ret = exchange();
	return ret ? ret : ft_oob_sync();
}

static void commit_fini(void)
{
	FT_CLOSE_FID(ft.ep);
	FT_CLOSE_FID(rgn_mr);
	FT_CLOSE_FID(plain_mr);
	FT_CLOSE_FID(eq);
	ft_free_res();
	if (rgn)
		munmap(rgn, RGN_SIZE);
	free(plain);
}

static int commit_opt(int op, const char *arg)
{
	size_t i;

	if (op != 'C')
		return 1;
	for (i = 0; i < NCASES; i++) {
		if (!strcmp(arg, cases[i].name)) {
			cc = &cases[i];
			return 0;
		}
	}
	return -FI_EINVAL;
}

static void usage(void)
{
	char extra[4096];
	size_t i, n;

	n = snprintf(extra, sizeof(extra),
		     "  -C CASE       the case to run (default auto):\n");
	for (i = 0; i < NCASES && n < sizeof(extra); i++)
		n += snprintf(extra + n, sizeof(extra) - n, "      %-16s %s\n",
			      cases[i].name, cases[i].desc);
	ft_usage("fi_commit / FI_COMMIT_MANUAL / FI_COMMIT_COMPLETE over "
		 "FI_EP_RDM (server: target, client: initiator)",
		 extra);
}

int main(int argc, char **argv)
{
	int ret;

	ft_init_opts(argv[0]);
	cc = &cases[1];
	if (ft_parse_args(argc, argv, "C:", commit_opt)) {
		usage();
		return 2;
	}
	if (ft_opts.ep_type != FI_EP_RDM) {
		FT_ERR("rdm_commit runs over FI_EP_RDM only");
		return 2;
	}
	ret = commit_init();
	if (!ret && ft_is_server()) {
		ret = run_server();
	} else if (!ret) {
		printf("# case %s (%s), provider %s\n", cc->name, cc->desc,
		       ft.info->fabric_attr->prov_name);
		ret = cc->run();
		/* die, dead: on success the server is gone already */
		if (ret)
			ctl_simple(CTL_DONE, 0, 0, 0, 0);
		else if (cc->run != case_die && cc->run != case_dead &&
			 cc->run != case_dead_first)
			ret = ctl_simple(CTL_DONE, 0, 0, 0, 0);
	}
	commit_fini();
	if (ret == -FI_ENODATA)
		return FT_EXIT_NOTSUPP;
	return ret ? 1 : 0;
}

#endif /* FI_COMMIT_MANUAL */
