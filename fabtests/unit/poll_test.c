/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * poll_test: poll sets (fi_poll_open, fi_poll_add/del, fi_poll) over CQs
 * and counters: membership and bad objects, fi_poll returning exactly the
 * contexts of the members with something new (non-empty CQs, counters
 * whose value moved since the last fi_poll), the count limit, and close
 * ordering between a poll set, its members and the domain.
 */
#include <string.h>

#include "shared.h"

static struct fid_poll *ps;
static struct fid_cq *cq_a, *cq_b;
static struct fid_cntr *cntr;
/* their contexts: what fi_poll hands back */
static char ctx_a, ctx_b, ctx_cntr;

static int open_set(void)
{
	struct fi_poll_attr attr = {0};
	int ret;

	ret = ft_unit_open(FI_MSG);
	if (ret)
		return ret;
	return fi_poll_open(ft.domain, &attr, &ps);
}

static int open_cq(struct fid_cq **cq, void *ctx)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT,
				  .wait_obj = FI_WAIT_NONE};

	return fi_cq_open(ft.domain, &attr, cq, ctx);
}

static int open_cntr(void)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = FI_WAIT_NONE};

	return fi_cntr_open(ft.domain, &attr, &cntr, &ctx_cntr);
}

/* Membership as the test made it, so cleanup removes only members. */
static bool in_a, in_b, in_cntr;

static int add(struct fid *fid, bool *member)
{
	int ret = fi_poll_add(ps, fid, 0);

	if (!ret)
		*member = true;
	return ret;
}

static int del(struct fid *fid, bool *member)
{
	int ret = fi_poll_del(ps, fid, 0);

	if (!ret)
		*member = false;
	return ret;
}

static void cleanup(void)
{
	if (ps) {
		if (in_a)
			del(&cq_a->fid, &in_a);
		if (in_b)
			del(&cq_b->fid, &in_b);
		if (in_cntr)
			del(&cntr->fid, &in_cntr);
	}
	in_a = in_b = in_cntr = false;
	FT_CLOSE_FID(ft.ep);
	FT_CLOSE_FID(ps);
	FT_CLOSE_FID(cq_a);
	FT_CLOSE_FID(cq_b);
	FT_CLOSE_FID(cntr);
	ft_free_res();
}

/* The contexts fi_poll returns within a few tries, as a bit set. */
#define HAS_A	 1
#define HAS_B	 2
#define HAS_CNTR 4

static int poll_mask(int tries, int *mask)
{
	void *ctx[8];
	int i, n, m = 0;

	do {
		n = fi_poll(ps, ctx, 8);
		if (n < 0)
			return n;
	} while (!n && --tries > 0);
	for (i = 0; i < n; i++) {
		if (ctx[i] == &ctx_a)
			m |= HAS_A;
		else if (ctx[i] == &ctx_b)
			m |= HAS_B;
		else if (ctx[i] == &ctx_cntr)
			m |= HAS_CNTR;
		else
			return -FI_EOTHER; /* a context we never gave */
	}
	*mask = m;
	return n;
}

static enum ft_result t_open_close(void)
{
	enum ft_result res = FT_PASS;
	void *ctx[4];
	int ret;

	ret = open_set();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_CHECK(ps && ps->fid.fclass == FI_CLASS_POLL, "not a poll set");
	UT_EXPECT_RET(fi_poll(ps, ctx, 4), 0);
	UT_EXPECT_RET(fi_close(&ps->fid), 0);
	ps = NULL;
out:
	cleanup();
	return res;
}

static enum ft_result t_bad_attr(void)
{
	struct fi_poll_attr attr = {.flags = 1};
	enum ft_result res = FT_PASS;
	struct fid_poll *bad = NULL;
	int ret;

	ret = open_set();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_poll_open(ft.domain, &attr, &bad), -FI_EINVAL);
	UT_CHECK(!bad, "poll set handed out on failure");
out:
	cleanup();
	return res;
}

static enum ft_result t_add_del(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = open_set();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(open_cq(&cq_a, &ctx_a), 0);
	UT_EXPECT_RET(open_cntr(), 0);
	UT_EXPECT_RET(add(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(add(&cntr->fid, &in_cntr), 0);
	UT_EXPECT_RET(del(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(del(&cntr->fid, &in_cntr), 0);
	/* added again after removal */
	UT_EXPECT_RET(add(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(del(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(fi_close(&ps->fid), 0);
	ps = NULL;
out:
	cleanup();
	return res;
}

/* Not a CQ or counter, not a member: refused, nothing changes. */
static enum ft_result t_bad_fids(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = open_set();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(open_cq(&cq_a, &ctx_a), 0);
	UT_CHECK(fi_poll_add(ps, &ft.domain->fid, 0) < 0, "domain added");
	UT_CHECK(fi_poll_add(ps, &ps->fid, 0) < 0, "poll set added to itself");
	UT_EXPECT_RET(add(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(del(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(fi_close(&ps->fid), 0);
	ps = NULL;
out:
	cleanup();
	return res;
}

/* Exact error codes and argument checks: the design's, beyond Debian. */
static enum ft_result t_bad_args(void)
{
	enum ft_result res = FT_PASS;
	void *ctx[2];
	int ret;

	ret = open_set();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(open_cq(&cq_a, &ctx_a), 0);
	UT_EXPECT_RET(fi_poll_add(ps, &ft.domain->fid, 0), -FI_EINVAL);
	UT_EXPECT_RET(fi_poll_add(ps, &cq_a->fid, 1ULL << 40), -FI_EINVAL);
	UT_EXPECT_RET(del(&cq_a->fid, &in_a), -FI_ENOENT);
	UT_EXPECT_RET(add(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(add(&cq_a->fid, &in_a), -FI_EALREADY);
	UT_EXPECT_RET(fi_poll(ps, NULL, 2), -FI_EINVAL);
	UT_EXPECT_RET(fi_poll(ps, ctx, -1), -FI_EINVAL);
	UT_EXPECT_RET(del(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(del(&cq_a->fid, &in_a), -FI_ENOENT);
out:
	cleanup();
	return res;
}

/* Opens an endpoint sending to itself: tx completions on cq_a, rx on
 * cq_b, sends counted by cntr. */
static int open_loop_ep(void)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_poll_attr attr = {0};
	char addr[256];
	size_t len = sizeof(addr);
	int ret;

	ret = ft_unit_open(FI_MSG);
	if (ret)
		return ret;
	if (ft.info->ep_attr->type == FI_EP_MSG)
		return -FI_EOPNOTSUPP;
	ret = fi_poll_open(ft.domain, &attr, &ps);
	if (ret)
		return ret;
	ret = open_cq(&cq_a, &ctx_a) ?: open_cq(&cq_b, &ctx_b) ?: open_cntr();
	if (ret)
		return ret;
	ret = fi_endpoint(ft.domain, ft.info, &ft.ep, NULL);
	if (ret)
		return ret;
	ret = fi_av_open(ft.domain, &av_attr, &ft.av, NULL) ?:
	      fi_ep_bind(ft.ep, &ft.av->fid, 0) ?:
	      fi_ep_bind(ft.ep, &cq_a->fid, FI_TRANSMIT) ?:
	      fi_ep_bind(ft.ep, &cq_b->fid, FI_RECV) ?:
	      fi_ep_bind(ft.ep, &cntr->fid, FI_SEND) ?: fi_enable(ft.ep);
	if (ret)
		return ret;
	ret = ft_alloc_msgs(64) ?: fi_getname(&ft.ep->fid, addr, &len);
	if (ret)
		return ret;
	ret = fi_av_insert(ft.av, addr, 1, &ft.peer, 0, NULL);
	return ret == 1 ? 0 : -FI_EOTHER;
}

/* Posts, driving progress through cq_a (reading nothing) on -FI_EAGAIN. */
#define POST(ret, expr)                                                        \
	do {                                                                   \
		uint64_t _start = ft_now_us();                                 \
		while (((ret) = (expr)) == -FI_EAGAIN &&                       \
		       !ft_timed_out(_start, ft_opts.timeout))                 \
			fi_cq_read(cq_a, NULL, 0);                             \
	} while (0)

static int drain(struct fid_cq *cq, int want)
{
	struct fi_cq_entry e;
	uint64_t start = ft_now_us();
	int got = 0;
	ssize_t n;

	while (got < want && !ft_timed_out(start, ft_opts.timeout)) {
		n = fi_cq_read(cq, &e, 1);
		if (n > 0)
			got++;
		else if (n != -FI_EAGAIN)
			return (int)n;
	}
	return got == want ? 0 : -FI_ETIMEDOUT;
}

/* Polls until @want shows up or the timeout passes; the last mask seen. */
static int poll_until(int want, int *mask)
{
	uint64_t start = ft_now_us();
	int n;

	do {
		n = poll_mask(1, mask);
		if (n < 0)
			return n;
	} while (*mask != want && !ft_timed_out(start, ft_opts.timeout));
	return n;
}

/*
 * A send to self with no receive posted: its tx completion makes cq_a
 * and the counter report, cq_b stays quiet; posting the receive moves the
 * report to cq_b alone once cq_a was read.
 */
static enum ft_result t_events(void)
{
	enum ft_result res = FT_PASS;
	int mask = 0, n;
	ssize_t pret;
	int ret;

	ret = open_loop_ep();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(add(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(add(&cq_b->fid, &in_b), 0);
	UT_EXPECT_RET(add(&cntr->fid, &in_cntr), 0);
	UT_EXPECT_RET(poll_mask(3, &mask), 0);

	POST(pret, fi_send(ft.ep, ft.tx_buf, 16, ft.desc, ft.peer, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	n = poll_until(HAS_A | HAS_CNTR, &mask);
	UT_CHECK(mask == (HAS_A | HAS_CNTR), "got mask %#x (n %d)", mask, n);
	UT_EXPECT_RET(n, 2);
	/* the CQ stays reported until read; the counter did not move */
	UT_EXPECT_RET(poll_mask(1, &mask), 1);
	UT_CHECK(mask == HAS_A, "got mask %#x", mask);
	UT_EXPECT_RET(drain(cq_a, 1), 0);
	UT_EXPECT_RET(poll_mask(3, &mask), 0);

	POST(pret, fi_recv(ft.ep, ft.rx_buf, 64, ft.desc, FI_ADDR_UNSPEC,
			   &ft.rx_ctx));
	UT_EXPECT_RET(pret, 0);
	n = poll_until(HAS_B, &mask);
	UT_CHECK(mask == HAS_B, "got mask %#x (n %d)", mask, n);
	UT_EXPECT_RET(drain(cq_b, 1), 0);
	UT_EXPECT_RET(poll_mask(3, &mask), 0);
	UT_EXPECT_RET(fi_cntr_read(cntr), 1);

	/* a member removed is no longer reported */
	UT_EXPECT_RET(del(&cq_a->fid, &in_a), 0);
	POST(pret, fi_recv(ft.ep, ft.rx_buf, 64, ft.desc, FI_ADDR_UNSPEC,
			   &ft.rx_ctx));
	UT_EXPECT_RET(pret, 0);
	POST(pret, fi_send(ft.ep, ft.tx_buf, 16, ft.desc, ft.peer, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	n = poll_until(HAS_B | HAS_CNTR, &mask);
	UT_CHECK(mask == (HAS_B | HAS_CNTR), "got mask %#x (n %d)", mask, n);
	UT_EXPECT_RET(drain(cq_a, 1), 0);
	UT_EXPECT_RET(drain(cq_b, 1), 0);
out:
	cleanup();
	return res;
}

/*
 * fi_poll stores at most count contexts; with @carry, the members left
 * out are reported by the next call (Debian 1.17 forgets a counter then).
 */
static enum ft_result count_limit(bool carry)
{
	enum ft_result res = FT_PASS;
	uint64_t start;
	void *ctx[4];
	int mask = 0;
	ssize_t pret;
	int ret;

	ret = open_loop_ep();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(add(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(add(&cntr->fid, &in_cntr), 0);
	POST(pret, fi_send(ft.ep, ft.tx_buf, 16, ft.desc, ft.peer, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	UT_EXPECT_RET(drain(cq_a, 1), 0);
	UT_EXPECT_RET(fi_cntr_read(cntr), 1);
	POST(pret, fi_send(ft.ep, ft.tx_buf, 16, ft.desc, ft.peer, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	UT_EXPECT_RET(poll_until(HAS_A | HAS_CNTR, &mask), 2);
	/* both again: cq_a is still not empty, the counter moved */
	POST(pret, fi_send(ft.ep, ft.tx_buf, 16, ft.desc, ft.peer, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	start = ft_now_us();
	while (fi_cntr_read(cntr) < 3 && !ft_timed_out(start, ft_opts.timeout))
		;
	UT_EXPECT_RET(fi_cntr_read(cntr), 3);
	UT_EXPECT_RET(fi_poll(ps, ctx, 1), 1);
	UT_CHECK(ctx[0] == &ctx_a || ctx[0] == &ctx_cntr, "foreign context");
	if (carry) {
		UT_EXPECT_RET(poll_mask(1, &mask), ctx[0] == &ctx_cntr ? 1 : 2);
		UT_CHECK(mask == (HAS_A | HAS_CNTR) ||
				 (mask == HAS_A && ctx[0] == &ctx_cntr),
			 "got mask %#x", mask);
	}
	UT_EXPECT_RET(drain(cq_a, 2), 0);
out:
	cleanup();
	return res;
}

static enum ft_result t_count_limit(void)
{
	return count_limit(false);
}

static enum ft_result t_count_carry(void)
{
	return count_limit(true);
}

/*
 * Counters report a change of the success or the error value since the
 * last fi_poll; fi_cntr_add / fi_cntr_set (and, here, their error-value
 * forms) move that mark themselves: the application's own updates are
 * not news (fi_poll(3)). Completions are.
 */
static enum ft_result t_cntr(void)
{
	enum ft_result res = FT_PASS;
	uint64_t start;
	int mask = 0;
	ssize_t pret;
	int ret;

	ret = open_loop_ep();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(add(&cntr->fid, &in_cntr), 0);
	UT_EXPECT_RET(poll_mask(1, &mask), 0);
	UT_EXPECT_RET(fi_cntr_add(cntr, 2), 0);
	UT_EXPECT_RET(poll_mask(1, &mask), 0);
	UT_EXPECT_RET(fi_cntr_set(cntr, 7), 0);
	UT_EXPECT_RET(poll_mask(1, &mask), 0);
	UT_EXPECT_RET(fi_cntr_adderr(cntr, 1), 0);
	UT_EXPECT_RET(poll_mask(1, &mask), 0);
	UT_EXPECT_RET(fi_cntr_seterr(cntr, 0), 0);
	UT_EXPECT_RET(poll_mask(1, &mask), 0);
	POST(pret, fi_send(ft.ep, ft.tx_buf, 16, ft.desc, ft.peer, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	start = ft_now_us();
	while (fi_cntr_read(cntr) < 8 && !ft_timed_out(start, ft_opts.timeout))
		;
	UT_EXPECT_RET(fi_cntr_read(cntr), 8);
	UT_EXPECT_RET(poll_mask(1, &mask), 1);
	UT_CHECK(mask == HAS_CNTR, "got mask %#x", mask);
	UT_EXPECT_RET(poll_mask(1, &mask), 0);
	UT_EXPECT_RET(drain(cq_a, 1), 0);
out:
	cleanup();
	return res;
}

/* A poll set with members refuses to close; members wait for it too. */
static enum ft_result t_close_order(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = open_set();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(open_cq(&cq_a, &ctx_a), 0);
	UT_EXPECT_RET(open_cntr(), 0);
	UT_EXPECT_RET(add(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(add(&cntr->fid, &in_cntr), 0);
	UT_EXPECT_RET(fi_close(&ps->fid), -FI_EBUSY);
	UT_EXPECT_RET(fi_close(&cq_a->fid), -FI_EBUSY);
	UT_EXPECT_RET(fi_close(&cntr->fid), -FI_EBUSY);
	UT_EXPECT_RET(fi_close(&ft.domain->fid), -FI_EBUSY);
	UT_EXPECT_RET(del(&cq_a->fid, &in_a), 0);
	UT_EXPECT_RET(fi_close(&ps->fid), -FI_EBUSY);
	UT_EXPECT_RET(del(&cntr->fid, &in_cntr), 0);
	UT_EXPECT_RET(fi_close(&ps->fid), 0);
	ps = NULL;
	UT_EXPECT_RET(fi_close(&cq_a->fid), 0);
	cq_a = NULL;
	UT_EXPECT_RET(fi_close(&cntr->fid), 0);
	cntr = NULL;
out:
	cleanup();
	return res;
}

static const struct ft_unit_test tests[] = {
	{"open_close", t_open_close, "empty poll set polls 0 and closes"},
	{"bad_attr", t_bad_attr, "attr flags must be 0", true},
	{"add_del", t_add_del, "CQ and counter added and removed"},
	{"bad_fids", t_bad_fids, "objects other than CQs/counters refused"},
	{"bad_args", t_bad_args, "bad args, duplicates, non-members", true},
	{"events", t_events, "fi_poll returns exactly the members with news"},
	{"count_limit", t_count_limit, "at most count contexts per call"},
	{"count_carry", t_count_carry, "members left out come next", true},
	/* fi_poll(3) semantics; Debian 1.17 reports fi_cntr_add as news */
	{"cntr", t_cntr, "counter news: changes since last poll/add/set", true},
	{"close_order", t_close_order, "EBUSY while members remain", true},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return ft_run_unit("poll_test", tests, argc, argv);
}
