/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * multi_iov.c - every data path of a provider through several iovs, each
 * byte checked: two endpoints of one provider in this process (RDM in one
 * AV, or MSG connected over loopback), driven by polling both CQs.
 *
 * For 1, 2, 3 and iov_limit iovs, and 8 (what every provider accepts)
 * when that is more, and totals around each provider's thresholds (shm's
 * inline command, the inject size, shm's segment and CMA sizes, tcp's
 * buffered sends), the source and the destination are split unevenly and
 * differently (a 1-byte segment, a zero-length one, alignments that
 * vary), with guard bytes around every destination segment:
 *  - fi_sendv/fi_sendmsg/fi_tsendv/fi_tsendmsg into fi_recvv/fi_recvmsg/
 *    fi_trecvv/fi_trecvmsg, the receive posted first or last
 *    (unexpected); the receive's CQ entry carries the sent length;
 *  - fi_writev, fi_writemsg (several rma_iov entries), fi_readv,
 *    fi_readmsg;
 *  - fi_atomicv/fi_atomicmsg (FI_SUM), fi_fetch_atomicmsg and
 *    fi_compare_atomicmsg (FI_CSWAP) with several iocs on both sides;
 *  - fi_sendmsg and fi_writemsg with FI_INJECT and several iovs, the
 *    buffers rewritten before they complete, and fi_inject/fi_tinject.
 * Every destination byte is compared with what it must hold: the pattern
 * of its logical offset and of the round, or, outside what was written,
 * the filler it held before.
 *
 * Usage: multi_iov PROV rdm|msg|rdm-msg. rdm-msg: RDM endpoints with
 * message caps only, so that no RMA target needs a progress thread: on
 * an FI_THREAD_DOMAIN domain (every run's) the endpoint and CQ then take
 * no lock at all, a path of its own. Exits 0 when all matched, 1 when
 * some did not, 77 when PROV offers no such endpoint.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "../shm/shm_check.h"

#define MAX_IOV	  8 /* what every provider accepts */
#define GUARD	  64
#define SLACK	  17 /* receive room beyond the message */
#define MAX_TOTAL ((4u << 20) + 4097)
#define REGION	  (MAX_TOTAL + SLACK + (MAX_IOV + 1) * (GUARD + 8))
#define WAIT_SEC  20
#define STASH	  64
#define AT_MAX	  200 /* atomic elements of one operation */

struct side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_eq *eq;
	fi_addr_t peer;
	struct fi_cq_tagged_entry stash[STASH];
	int nstash;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_pep *pep;
static struct fid_mr *mr;
static bool msg_only; /* rdm-msg */
static struct side side[2];
static uint8_t *txb, *rxb, *tgt, *expect;
static uint64_t tgt_key, tgt_base;
static uint64_t caps;
static unsigned round_no;
static const char *case_name;
static size_t case_n, case_m, case_total;
static int ctx_tx, ctx_rx;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The byte at logical offset @off of round @r's data. */
static uint8_t pat(size_t off, unsigned r)
{
	uint32_t x = (uint32_t)off * 2654435761u + r * 40503u + 0x9e37u;

	return (uint8_t)(x >> 24 ^ x >> 11);
}

static uint8_t filler(unsigned r)
{
	return (uint8_t)(0xa5 + 3 * r);
}

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr,                                                \
			"FAIL %s n=%zu m=%zu total=%zu round %u: ", case_name, \
			case_n, case_m, case_total, round_no);                 \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		failures++;                                                    \
	} while (0)

/*
 * @n uneven lengths adding up to @total: with 3 or more one is 1 byte,
 * with 4 or more one is empty (@zero), where they fall and how the rest
 * is weighed turning with @variant.
 */
static void split(size_t total, size_t n, unsigned variant, bool zero,
		  size_t *len)
{
	static const unsigned w[] = {5, 1, 9, 3, 7, 2, 8, 4};
	size_t one = n >= 3 ? variant % n : n, nul = n;
	size_t i, last = n, left = total, wsum = 0, k = 0;

	if (zero && n >= 4)
		nul = (variant + 2) % n;
	if (one < n)
		left--;
	for (i = 0; i < n; i++)
		if (i != one && i != nul) {
			wsum += w[(i + variant) % 8];
			last = i;
			k++;
		}
	/* Every other segment gets a byte, then its share of the rest. */
	for (i = 0; i < n; i++) {
		if (i == one)
			len[i] = 1;
		else if (i == nul)
			len[i] = 0;
		else
			len[i] = 1 + (left - k) * w[(i + variant) % 8] / wsum;
	}
	for (i = 0; i < n; i++)
		if (i != one && i != nul && i != last)
			left -= len[i];
	len[last] = left;
}

/* Places @n segments of @len in @base, each after a guard gap whose
 * size varies (so do the alignments). Returns the extent used. */
static size_t place(uint8_t *base, const size_t *len, size_t n,
		    struct iovec *iov)
{
	size_t i, off = GUARD;

	for (i = 0; i < n; i++) {
		off += (i * 3 + round_no) % 8;
		iov[i].iov_base = base + off;
		iov[i].iov_len = len[i];
		off += len[i] + GUARD;
	}
	return off;
}

/* Writes round data at logical offsets from 0 into @iov. */
static void fill(const struct iovec *iov, size_t n)
{
	size_t i, j, o = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < iov[i].iov_len; j++)
			((uint8_t *)iov[i].iov_base)[j] = pat(o++, round_no);
}

/*
 * Checks the @extent bytes of @base, segmented as @iov: the first
 * @written logical bytes hold the round's data, all else the filler.
 * Returns 0 or -1 (reported).
 */
static int check(const char *what, uint8_t *base, size_t extent,
		 const struct iovec *iov, size_t n, size_t written)
{
	size_t i, j, o = 0, pos;
	uint8_t *e;

	memset(expect, filler(round_no), extent);
	for (i = 0; i < n; i++) {
		e = expect + ((uint8_t *)iov[i].iov_base - base);
		for (j = 0; j < iov[i].iov_len && o < written; j++)
			e[j] = pat(o++, round_no);
	}
	if (!memcmp(base, expect, extent))
		return 0;
	for (pos = 0; base[pos] == expect[pos]; pos++)
		;
	for (i = 0; i < n; i++) {
		size_t s = (size_t)((uint8_t *)iov[i].iov_base - base);

		if (pos < s) {
			FAIL("%s: guard byte %zu before segment %zu (len %zu) "
			     "is %#x, not %#x",
			     what, s - pos, i, iov[i].iov_len, base[pos],
			     expect[pos]);
			return -1;
		}
		if (pos < s + iov[i].iov_len) {
			FAIL("%s: segment %zu (len %zu) byte %zu is %#x, not "
			     "%#x",
			     what, i, iov[i].iov_len, pos - s, base[pos],
			     expect[pos]);
			return -1;
		}
	}
	FAIL("%s: guard byte %zu after the last segment is %#x, not %#x", what,
	     pos, base[pos], expect[pos]);
	return -1;
}

/* Moves what both CQs hold into the stashes; -1 on an error entry. */
static int poll_cqs(void)
{
	struct fi_cq_err_entry err;
	ssize_t ret;
	int s;

	for (s = 0; s < 2; s++) {
		if (side[s].nstash == STASH)
			continue;
		ret = fi_cq_read(side[s].cq, &side[s].stash[side[s].nstash], 1);
		if (ret == 1) {
			side[s].nstash++;
		} else if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			(void)fi_cq_readerr(side[s].cq, &err, 0);
			FAIL("side %d: error completion %d (%s) len %zu", s,
			     err.err, fi_strerror(err.err), err.len);
			return -1;
		} else if (ret != -FI_EAGAIN) {
			FAIL("side %d: fi_cq_read %zd", s, ret);
			return -1;
		}
	}
	return 0;
}

/* The completion of @ctx on side @s, into *@out. 0 or -1. */
static int wait_comp(int s, void *ctx, struct fi_cq_tagged_entry *out)
{
	double end = now() + WAIT_SEC;
	int i;

	for (;;) {
		for (i = 0; i < side[s].nstash; i++) {
			if (side[s].stash[i].op_context != ctx)
				continue;
			*out = side[s].stash[i];
			side[s].stash[i] = side[s].stash[--side[s].nstash];

			return 0;
		}
		if (poll_cqs())
			return -1;
		if (now() > end) {
			FAIL("side %d: no completion in %d s", s, WAIT_SEC);
			return -1;
		}
	}
}

/* Progresses both sides for a while (an unexpected message lands). */
static int idle(int ms)
{
	double end = now() + ms / 1e3;

	while (now() < end)
		if (poll_cqs())
			return -1;
	return 0;
}

/* Posts @post again while it answers -FI_EAGAIN. */
#define POST(what, post)                                                       \
	({                                                                     \
		double end_ = now() + WAIT_SEC;                                \
		ssize_t r_;                                                    \
		while ((r_ = (post)) == -FI_EAGAIN && now() < end_)            \
			(void)poll_cqs();                                      \
		if (r_)                                                        \
			FAIL("%s: %zd (%s)", what, r_, fi_strerror((int)-r_)); \
		r_;                                                            \
	})

/* ------------------------------------------------------------------ */
/* Messages.                                                            */

enum msg_op { SENDV, SENDMSG, TSENDV, TSENDMSG, MSG_OPS };
static const char *const msg_names[] = {"sendv/recvv", "sendmsg/recvmsg",
					"tsendv/trecvv", "tsendmsg/trecvmsg"};

static ssize_t post_recv(enum msg_op op, struct iovec *iov, size_t n)
{
	struct fid_ep *ep = side[1].ep;
	uint64_t tag = round_no;
	struct fi_msg_tagged tm = {.msg_iov = iov,
				   .iov_count = n,
				   .addr = FI_ADDR_UNSPEC,
				   .tag = tag,
				   .context = &ctx_rx};
	struct fi_msg m = {.msg_iov = iov,
			   .iov_count = n,
			   .addr = FI_ADDR_UNSPEC,
			   .context = &ctx_rx};

	switch (op) {
	case SENDV:
		return fi_recvv(ep, iov, NULL, n, FI_ADDR_UNSPEC, &ctx_rx);
	case SENDMSG:
		return fi_recvmsg(ep, &m, 0);
	case TSENDV:
		return fi_trecvv(ep, iov, NULL, n, FI_ADDR_UNSPEC, tag, 0,
				 &ctx_rx);
	default:
		return fi_trecvmsg(ep, &tm, 0);
	}
}

static ssize_t post_send(enum msg_op op, struct iovec *iov, size_t n,
			 uint64_t flags)
{
	struct fid_ep *ep = side[0].ep;
	fi_addr_t to = side[0].peer;
	uint64_t tag = round_no;
	struct fi_msg_tagged tm = {.msg_iov = iov,
				   .iov_count = n,
				   .addr = to,
				   .tag = tag,
				   .context = &ctx_tx};
	struct fi_msg m = {
		.msg_iov = iov, .iov_count = n, .addr = to, .context = &ctx_tx};

	switch (op) {
	case SENDV:
		return fi_sendv(ep, iov, NULL, n, to, &ctx_tx);
	case SENDMSG:
		return fi_sendmsg(ep, &m, flags);
	case TSENDV:
		return fi_tsendv(ep, iov, NULL, n, to, tag, &ctx_tx);
	default:
		return fi_tsendmsg(ep, &tm, flags);
	}
}

/* The receive's entry: the sent length, the right flags and tag. */
static void check_recv_entry(enum msg_op op, const struct fi_cq_tagged_entry *e,
			     size_t total)
{
	bool tagged = op == TSENDV || op == TSENDMSG;

	if (e->len != total)
		FAIL("receive completion len %zu, sent %zu", e->len, total);
	if (!(e->flags & FI_RECV) ||
	    !(e->flags & (tagged ? FI_TAGGED : FI_MSG)))
		FAIL("receive completion flags %#" PRIx64, e->flags);
	if (tagged && e->tag != round_no)
		FAIL("receive completion tag %" PRIu64 ", sent %u", e->tag,
		     round_no);
}

/*
 * One message of @total bytes from @n source segments into @m receive
 * segments (SLACK more room), posted before the send or, @unexp, after.
 */
static void msg_case(enum msg_op op, size_t n, size_t m, size_t total,
		     bool unexp, uint64_t flags)
{
	struct iovec src[MAX_IOV], dst[MAX_IOV];
	size_t slen[MAX_IOV], dlen[MAX_IOV], ext;
	struct fi_cq_tagged_entry e, te;
	size_t sext;
	char name[64];

	round_no++;
	snprintf(name, sizeof(name), "%s%s%s", msg_names[op],
		 unexp ? " unexpected" : "",
		 flags & FI_INJECT ? " inject" : "");
	case_name = name;
	case_n = n;
	case_m = m;
	case_total = total;
	split(total, n, round_no, true, slen);
	split(total + SLACK, m, round_no + 3, true, dlen);
	sext = place(txb, slen, n, src);
	fill(src, n);
	ext = place(rxb, dlen, m, dst);
	memset(rxb, filler(round_no), ext);
	if (!unexp && POST("post receive", post_recv(op, dst, m)))
		return;
	if (POST("post send", post_send(op, src, n, flags)))
		return;
	if (flags & FI_INJECT)
		memset(txb, 0, sext); /* FI_INJECT: buffered already */
	if (unexp) {
		if (idle(5) || POST("post receive", post_recv(op, dst, m)))
			return;
	}
	if (wait_comp(1, &ctx_rx, &e) || wait_comp(0, &ctx_tx, &te))
		return;
	check_recv_entry(op, &e, total);
	(void)check("received", rxb, ext, dst, m, total);
}

/* ------------------------------------------------------------------ */
/* RMA.                                                                 */

enum rma_op { WRITEV, WRITEMSG, READV, READMSG };
static const char *const rma_names[] = {"writev", "writemsg", "readv",
					"readmsg"};

/*
 * @total bytes between @n local segments and @m target segments (one for
 * the v calls) in the registered region.
 */
static void rma_case(enum rma_op op, size_t n, size_t m, size_t total,
		     uint64_t flags)
{
	struct iovec loc[MAX_IOV], rem[MAX_IOV];
	struct fi_rma_iov rma[MAX_IOV];
	size_t llen[MAX_IOV], rlen[MAX_IOV], lext, rext, i;
	bool write = op == WRITEV || op == WRITEMSG;
	struct fid_ep *ep = side[0].ep;
	struct fi_cq_tagged_entry e;
	struct fi_msg_rma msg;
	ssize_t ret;

	round_no++;
	case_name = flags & FI_INJECT ? "writemsg inject" : rma_names[op];
	if (op == WRITEV || op == READV)
		m = 1;
	case_n = n;
	case_m = m;
	case_total = total;
	split(total, n, round_no, true, llen);
	split(total, m, round_no + 5, false, rlen);
	lext = place(write ? txb : rxb, llen, n, loc);
	rext = place(tgt, rlen, m, rem);
	for (i = 0; i < m; i++) {
		rma[i].addr =
			(uintptr_t)rem[i].iov_base - (uintptr_t)tgt + tgt_base;
		rma[i].len = rem[i].iov_len;
		rma[i].key = tgt_key;
	}
	if (write) {
		fill(loc, n);
		memset(tgt, filler(round_no), rext);
	} else {
		fill(rem, m);
		memset(rxb, filler(round_no), lext);
	}
	msg = (struct fi_msg_rma){.msg_iov = loc,
				  .iov_count = n,
				  .addr = side[0].peer,
				  .rma_iov = rma,
				  .rma_iov_count = m,
				  .context = &ctx_tx};
	switch (op) {
	case WRITEV:
		ret = POST("fi_writev",
			   fi_writev(ep, loc, NULL, n, side[0].peer,
				     rma[0].addr, tgt_key, &ctx_tx));
		break;
	case WRITEMSG:
		ret = POST("fi_writemsg", fi_writemsg(ep, &msg, flags));
		if (!ret && flags & FI_INJECT)
			memset(txb, 0, lext); /* buffered already */
		break;
	case READV:
		ret = POST("fi_readv", fi_readv(ep, loc, NULL, n, side[0].peer,
						rma[0].addr, tgt_key, &ctx_tx));
		break;
	default:
		ret = POST("fi_readmsg", fi_readmsg(ep, &msg, 0));
		break;
	}
	if (ret || wait_comp(0, &ctx_tx, &e))
		return;
	if (write)
		(void)check("target", tgt, rext, rem, m, total);
	else
		(void)check("read into", rxb, lext, loc, n, total);
}

/* ------------------------------------------------------------------ */
/* Atomics (uint64_t elements).                                         */

enum at_op { AT_SUM, AT_FETCH, AT_CSWAP };
static const char *const at_names[] = {"atomicmsg sum", "fetch_atomicmsg sum",
				       "compare_atomicmsg cswap"};

static uint64_t at_init(size_t k)
{
	return (uint64_t)k * 0x9e3779b97f4a7c15ull + round_no;
}

static uint64_t at_opnd(size_t k)
{
	return (uint64_t)k * 1000003u + 7u * round_no + 1;
}

/* Splits @total elements into @n iocs over @base (element aligned, a
 * guard element around each); the element pointers land in @p. */
static void at_place(uint64_t *base, size_t total, size_t n, unsigned var,
		     struct fi_ioc *ioc, uint64_t **p)
{
	size_t len[MAX_IOV], i, k, off = 1;

	split(total, n, var, false, len);
	for (i = 0; i < n; i++) {
		ioc[i].addr = base + off;
		ioc[i].count = len[i];
		for (k = 0; k < len[i]; k++)
			*p++ = base + off + k;
		off += len[i] + 1 + i % 2;
	}
}

/*
 * @total elements: @n origin iocs (operands), @m target iocs, and for
 * fetch and compare result and compare iocs split yet otherwise.
 */
static void atomic_case(enum at_op op, size_t n, size_t m, size_t total)
{
	static uint64_t *to[AT_MAX], *ro[AT_MAX], *co[AT_MAX], *oo[AT_MAX];
	uint64_t *t = (uint64_t *)tgt, *o = (uint64_t *)txb,
		 *r = (uint64_t *)rxb, *c = (uint64_t *)(txb + (1 << 20));
	struct fi_ioc oi[MAX_IOV], ri[MAX_IOV], ci[MAX_IOV], ti[MAX_IOV];
	struct fi_rma_ioc rma[MAX_IOV];
	const size_t words = AT_MAX + 3 * MAX_IOV;
	struct fi_msg_atomic msg;
	struct fi_cq_tagged_entry e;
	uint64_t want, init, fill_v;
	size_t i, k;
	ssize_t ret;

	round_no++;
	case_name = at_names[op];
	case_n = n;
	case_m = m;
	case_total = total * 8;
	fill_v = 0x0101010101010101ull * filler(round_no);
	for (k = 0; k < words; k++)
		t[k] = r[k] = o[k] = c[k] = fill_v;
	at_place(o, total, n, round_no, oi, oo);
	at_place(t, total, m, round_no + 1, ti, to);
	at_place(r, total, n == 1 ? 1 : n - 1, round_no + 2, ri, ro);
	at_place(c, total, m, round_no + 3, ci, co);
	for (k = 0; k < total; k++) {
		*oo[k] = at_opnd(k);
		*to[k] = at_init(k);
		*co[k] = k % 3 ? at_init(k) : ~at_init(k);
	}
	for (i = 0; i < m; i++) {
		rma[i].addr = (uintptr_t)ti[i].addr - (uintptr_t)tgt + tgt_base;
		rma[i].count = ti[i].count;
		rma[i].key = tgt_key;
	}
	msg = (struct fi_msg_atomic){.msg_iov = oi,
				     .iov_count = n,
				     .addr = side[0].peer,
				     .rma_iov = rma,
				     .rma_iov_count = m,
				     .datatype = FI_UINT64,
				     .op = op == AT_CSWAP ? FI_CSWAP : FI_SUM,
				     .context = &ctx_tx};
	if (op == AT_SUM)
		ret = POST("fi_atomicmsg", fi_atomicmsg(side[0].ep, &msg, 0));
	else if (op == AT_FETCH)
		ret = POST("fi_fetch_atomicmsg",
			   fi_fetch_atomicmsg(side[0].ep, &msg, ri, NULL,
					      n == 1 ? 1 : n - 1, 0));
	else
		ret = POST("fi_compare_atomicmsg",
			   fi_compare_atomicmsg(side[0].ep, &msg, ci, NULL, m,
						ri, NULL, n == 1 ? 1 : n - 1,
						0));
	if (ret || wait_comp(0, &ctx_tx, &e))
		return;
	for (k = 0; k < total; k++) {
		init = at_init(k);
		if (op == AT_CSWAP)
			want = k % 3 ? at_opnd(k) : init;
		else
			want = init + at_opnd(k);
		if (*to[k] != want) {
			FAIL("target element %zu is %#" PRIx64
			     ", not %#" PRIx64,
			     k, *to[k], want);
			return;
		}
		if (op != AT_SUM && *ro[k] != init) {
			FAIL("result element %zu is %#" PRIx64
			     ", not %#" PRIx64,
			     k, *ro[k], init);
			return;
		}
		*to[k] = *ro[k] = fill_v; /* what the guard check expects */
	}
	for (k = 0; k < words; k++) {
		if (t[k] != fill_v || (op != AT_SUM && r[k] != fill_v)) {
			FAIL("guard element %zu changed", k);
			return;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Inject.                                                              */

/* fi_inject and fi_tinject from one buffer, rewritten at once. */
static void inject_case(bool tagged, size_t total)
{
	struct iovec dst[1];
	size_t len = total + SLACK, ext;
	struct fi_cq_tagged_entry e;

	round_no++;
	case_name = tagged ? "tinject" : "inject";
	case_n = case_m = 1;
	case_total = total;
	dst[0].iov_base = rxb + GUARD;
	dst[0].iov_len = len;
	ext = GUARD * 2 + len;
	memset(rxb, filler(round_no), ext);
	{
		struct iovec src = {.iov_base = txb, .iov_len = total};

		fill(&src, 1);
	}
	if (POST("post receive", post_recv(tagged ? TSENDV : SENDV, dst, 1)))
		return;
	if (tagged) {
		if (POST("fi_tinject", fi_tinject(side[0].ep, txb, total,
						  side[0].peer, round_no)))
			return;
	} else if (POST("fi_inject",
			fi_inject(side[0].ep, txb, total, side[0].peer))) {
		return;
	}
	memset(txb, 0, total);
	if (wait_comp(1, &ctx_rx, &e))
		return;
	check_recv_entry(tagged ? TSENDV : SENDV, &e, total);
	(void)check("received", rxb, ext, dst, 1, total);
}

/* ------------------------------------------------------------------ */
/* Setup.                                                               */

static int open_side(struct side *s, struct fi_info *fi)
{
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED, .size = 256};
	struct fi_eq_attr eqa = {.wait_obj = FI_WAIT_UNSPEC};
	int ret;

	ret = fi_endpoint(domain, fi, &s->ep, NULL) ?:
	      fi_cq_open(domain, &cqa, &s->cq, NULL) ?:
	      fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		return ret;
	if (av)
		return fi_ep_bind(s->ep, &av->fid, 0) ?: fi_enable(s->ep);
	return fi_eq_open(fabric, &eqa, &s->eq, NULL) ?:
	       fi_ep_bind(s->ep, &s->eq->fid, 0) ?: fi_enable(s->ep);
}

static struct fi_info *get_info(const char *prov, enum fi_ep_type type,
				uint64_t want)
{
	struct fi_info *hints = fi_allocinfo(), *fi = NULL;
	int ret;

	DIE_IF(!hints, "fi_allocinfo");
	hints->caps = want;
	hints->ep_attr->type = type;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	if (!strcmp(prov, "shm"))
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi);
	else
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE,
				 hints, &fi);
	fi_freeinfo(hints);
	return ret ? NULL : fi;
}

/*
 * Waits for @event on @eq; the CM entry lands in *@e. The endpoints' EQs
 * are peeked meanwhile: that progresses their connection work
 * (FI_PROGRESS_MANUAL).
 */
static int eq_wait(struct fid_eq *eq, uint32_t event, struct fi_eq_cm_entry *e)
{
	double end = now() + WAIT_SEC;
	struct fi_eq_err_entry err;
	uint8_t buf[sizeof(*e) + 64];
	uint32_t ev;
	ssize_t ret;
	int s;

	do {
		for (s = 0; s < 2; s++)
			if (side[s].eq && side[s].eq != eq)
				(void)fi_eq_read(side[s].eq, &ev, buf,
						 sizeof(buf), FI_PEEK);
		ret = fi_eq_read(eq, &ev, e, sizeof(*e) + 64, 0);
		if (ret >= 0 && ev != event)
			fprintf(stderr, "setup: event %u, not %u\n", ev, event);
		if (ret >= 0)
			return ev == event ? 0 : -FI_EOTHER;
		if (ret == -FI_EAVAIL) {
			(void)fi_eq_readerr(eq, &err, 0);
			fprintf(stderr, "setup: eq error %d\n", err.err);
			return -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN)
			return (int)ret;
		usleep(100);
	} while (now() < end);
	return -FI_ETIMEDOUT;
}

/* Side 0 connects to a passive endpoint, side 1 is the accepted one. */
static void msg_connect(void)
{
	struct fi_eq_attr eqa = {.wait_obj = FI_WAIT_UNSPEC};
	union {
		struct fi_eq_cm_entry e;
		uint8_t buf[sizeof(struct fi_eq_cm_entry) + 64];
	} ev;
	struct fid_eq *peq;
	struct fi_info *ci;
	char addr[128];
	size_t len = sizeof(addr);

	DIE_IF(fi_eq_open(fabric, &eqa, &peq, NULL), "pep eq");
	DIE_IF(fi_passive_ep(fabric, info, &pep, NULL), "fi_passive_ep");
	DIE_IF(fi_pep_bind(pep, &peq->fid, 0) || fi_listen(pep), "listen");
	DIE_IF(fi_getname(&pep->fid, addr, &len), "pep name");
	ci = fi_dupinfo(info);
	DIE_IF(!ci, "fi_dupinfo");
	free(ci->src_addr);
	ci->src_addr = NULL;
	ci->src_addrlen = 0;
	DIE_IF(open_side(&side[0], ci), "connector");
	fi_freeinfo(ci);
	DIE_IF(fi_connect(side[0].ep, addr, NULL, 0), "fi_connect");
	DIE_IF(eq_wait(peq, FI_CONNREQ, &ev.e), "FI_CONNREQ");
	DIE_IF(open_side(&side[1], ev.e.info), "acceptor");
	fi_freeinfo(ev.e.info);
	DIE_IF(fi_accept(side[1].ep, NULL, 0), "fi_accept");
	DIE_IF(eq_wait(side[0].eq, FI_CONNECTED, &ev.e), "connected (0)");
	DIE_IF(eq_wait(side[1].eq, FI_CONNECTED, &ev.e), "connected (1)");
	side[0].peer = side[1].peer = FI_ADDR_UNSPEC;
	fi_close(&pep->fid);
	pep = NULL;
	fi_close(&peq->fid);
}

static void rdm_connect(void)
{
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	char name[2][128];
	fi_addr_t a[2];
	size_t len;
	int s;

	DIE_IF(fi_av_open(domain, &ava, &av, NULL), "fi_av_open");
	for (s = 0; s < 2; s++) {
		DIE_IF(open_side(&side[s], info), "endpoint");
		len = sizeof(name[s]);
		DIE_IF(fi_getname(&side[s].ep->fid, name[s], &len), "getname");
	}
	for (s = 0; s < 2; s++)
		DIE_IF(fi_av_insert(av, name[s], 1, &a[s], 0, NULL) != 1,
		       "fi_av_insert");
	side[0].peer = a[1];
	side[1].peer = a[0];
}

static void open_all(const char *prov, enum fi_ep_type type)
{
	static const uint64_t base = FI_MSG | FI_RMA | FI_READ | FI_WRITE |
				     FI_REMOTE_READ | FI_REMOTE_WRITE |
				     FI_SEND | FI_RECV;
	static const uint64_t extra[] = {FI_TAGGED | FI_ATOMIC, FI_TAGGED,
					 FI_ATOMIC, 0};
	static const uint64_t msg_base = FI_MSG | FI_SEND | FI_RECV;
	static const uint64_t msg_extra[] = {FI_TAGGED, 0};
	size_t i;

	for (i = 0; !msg_only && i < 4 && !info; i++) {
		info = get_info(prov, type, base | extra[i]);
		caps = base | extra[i];
	}
	for (i = 0; msg_only && i < 2 && !info; i++) {
		info = get_info(prov, type, msg_base | msg_extra[i]);
		caps = msg_base | msg_extra[i];
	}
	if (!info) {
		printf("SKIP: %s offers no %s endpoint\n", prov,
		       type == FI_EP_MSG ? "MSG" : "RDM");
		exit(77);
	}
	DIE_IF(fi_fabric(info->fabric_attr, &fabric, NULL), "fi_fabric");
	DIE_IF(fi_domain(fabric, info, &domain, NULL), "fi_domain");
	if (!msg_only) {
		DIE_IF(fi_mr_reg(domain, tgt, REGION,
				 FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x1d, 0,
				 &mr, NULL),
		       "fi_mr_reg");
		tgt_key = fi_mr_key(mr);
	}
	tgt_base = info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uintptr_t)tgt
								: 0;
	if (type == FI_EP_MSG)
		msg_connect();
	else
		rdm_connect();
}

static void close_all(void)
{
	int s;

	for (s = 0; s < 2; s++) {
		fi_close(&side[s].ep->fid);
		fi_close(&side[s].cq->fid);
		if (side[s].eq)
			fi_close(&side[s].eq->fid);
	}
	if (mr)
		fi_close(&mr->fid);
	if (av)
		fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

/* Iov counts to try: 1, 2, 3, @limit and MAX_IOV, once each. */
static size_t counts(size_t limit, size_t *c)
{
	size_t k = 0, v[] = {1, 2, 3, limit, MAX_IOV}, i, j;

	for (i = 0; i < 5; i++) {
		if (v[i] > MAX_IOV || !v[i])
			continue;
		for (j = 0; j < k && c[j] != v[i]; j++)
			;
		if (j == k)
			c[k++] = v[i];
	}
	return k;
}

int main(int argc, char **argv)
{
	size_t cnt[5], nc, ci, ti, inj, i, limit;
	size_t totals[8], nt = 0;
	enum fi_ep_type type;
	int op;
	double t0 = now();

	if (argc != 3 || (strcmp(argv[2], "rdm") && strcmp(argv[2], "msg") &&
			  strcmp(argv[2], "rdm-msg"))) {
		fprintf(stderr, "usage: %s PROV rdm|msg|rdm-msg\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	type = strcmp(argv[2], "msg") ? FI_EP_RDM : FI_EP_MSG;
	msg_only = !strcmp(argv[2], "rdm-msg");
	txb = calloc(1, REGION);
	rxb = calloc(1, REGION);
	tgt = calloc(1, REGION);
	expect = calloc(1, REGION);
	DIE_IF(!txb || !rxb || !tgt || !expect, "calloc");
	open_all(argv[1], type);
	inj = info->tx_attr->inject_size;
	printf("%s %s: iov_limit %zu/%zu rma_iov_limit %zu inject %zu "
	       "caps%s%s\n",
	       argv[1], argv[2], info->tx_attr->iov_limit,
	       info->rx_attr->iov_limit, info->tx_attr->rma_iov_limit, inj,
	       caps & FI_TAGGED ? " tagged" : "",
	       caps & FI_ATOMIC ? " atomic" : "");
	/* Around shm's inline command (464), the inject size, shm's 64 KiB
	 * segments and its 4 MiB CMA threshold; tcp's 128 B inline inject
	 * and 4 KiB buffered send. */
	totals[nt++] = 17;
	totals[nt++] = 300;
	totals[nt++] = 1500;
	totals[nt++] = inj;
	totals[nt++] = inj + 1000;
	totals[nt++] = 3 * 65536 + 777;
	totals[nt++] = MAX_TOTAL;
	limit = info->tx_attr->iov_limit;
	if (info->rx_attr->iov_limit < limit)
		limit = info->rx_attr->iov_limit;
	if (!msg_only && info->tx_attr->rma_iov_limit < limit)
		limit = info->tx_attr->rma_iov_limit;
	nc = counts(limit, cnt);
	for (ci = 0; ci < nc; ci++) {
		size_t n = cnt[ci], m = cnt[(ci + 1) % nc];

		for (ti = 0; ti < nt; ti++) {
			for (op = 0; op < MSG_OPS; op++) {
				if ((op == TSENDV || op == TSENDMSG) &&
				    !(caps & FI_TAGGED))
					continue;
				msg_case(op, n, m, totals[ti], false, 0);
				msg_case(op, n, m, totals[ti], true, 0);
			}
			for (op = WRITEV; !msg_only && op <= READMSG; op++)
				rma_case(op, n, m, totals[ti], 0);
		}
		if (n >= 2) {
			msg_case(SENDMSG, n, m, 1000, false, FI_INJECT);
			msg_case(SENDMSG, n, m, inj, true, FI_INJECT);
			if (caps & FI_TAGGED)
				msg_case(TSENDMSG, n, m, inj, false, FI_INJECT);
			if (!msg_only) {
				rma_case(WRITEMSG, n, m, 1000, FI_INJECT);
				rma_case(WRITEMSG, n, m, inj, FI_INJECT);
			}
		}
		if (caps & FI_ATOMIC)
			for (op = AT_SUM; op <= AT_CSWAP; op++)
				for (i = 0; i < 2; i++)
					atomic_case(op, n, m, i ? AT_MAX : 40);
	}
	inject_case(false, 100);
	inject_case(false, inj);
	if (caps & FI_TAGGED)
		inject_case(true, inj);
	close_all();
	printf("%s %s: %u cases, %d failures, %.1f s\n", argv[1], argv[2],
	       round_no, failures, now() - t0);
	return failures ? 1 : 0;
}
