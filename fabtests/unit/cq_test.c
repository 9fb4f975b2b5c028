/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cq_test: completion queue open with every format, empty reads, sread
 * timeout, the FD wait object, and completions produced by an endpoint
 * sending to itself (entry fields, tagged entries, truncation errors).
 */
#include <poll.h>
#include <string.h>

#include "shared.h"

static struct fid_cq *cq;

static void cleanup(void)
{
	FT_CLOSE_FID(cq);
	ft_free_res();
}

static enum ft_result t_open_formats(void)
{
	const enum fi_cq_format fmts[] = {
		FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED};
	enum ft_result res = FT_PASS;
	int i, ret;

	ret = ft_unit_open(0);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	for (i = 0; i < 5; i++) {
		UT_EXPECT_RET(ft_open_cq(fmts[i], FI_WAIT_NONE, 0, &cq), 0);
		UT_EXPECT_RET(fi_close(&cq->fid), 0);
		cq = NULL;
	}
out:
	cleanup();
	return res;
}

static enum ft_result t_bad_format(void)
{
	struct fi_cq_attr attr = {.format = (enum fi_cq_format)99};
	enum ft_result res = FT_PASS;
	int ret;

	ret = ft_unit_open(0);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	ret = fi_cq_open(ft.domain, &attr, &cq, NULL);
	UT_CHECK(ret < 0, "format 99 accepted (ret %d)", ret);
out:
	cleanup();
	return res;
}

static enum ft_result t_read_empty(void)
{
	enum ft_result res = FT_PASS;
	struct fi_cq_err_entry err = {0};
	struct fi_cq_tagged_entry e[4];
	int ret;

	ret = ft_unit_open(0);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(ft_open_cq(FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, &cq), 0);
	UT_EXPECT_RET(fi_cq_read(cq, e, 4), -FI_EAGAIN);
	UT_EXPECT_RET(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
out:
	cleanup();
	return res;
}

static enum ft_result t_sread_timeout(void)
{
	enum ft_result res = FT_PASS;
	struct fi_cq_entry e;
	uint64_t start, el;
	int ret;

	ret = ft_unit_open(0);
	if (!ret)
		ret = ft_open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0, &cq);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	start = ft_now_us();
	UT_EXPECT_RET(fi_cq_sread(cq, &e, 1, NULL, 200), -FI_EAGAIN);
	el = ft_now_us() - start;
	UT_CHECK(el >= 150000 && el < 3000000, "waited %llu us for 200 ms",
		 (unsigned long long)el);
out:
	cleanup();
	return res;
}

static enum ft_result t_wait_fd(void)
{
	enum ft_result res = FT_PASS;
	int fd = -1, ret;

	ret = ft_unit_open(0);
	if (!ret)
		ret = ft_open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 0, &cq);
	if (!ret)
		ret = fi_control(&cq->fid, FI_GETWAIT, &fd);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_CHECK(fd >= 0, "fd %d", fd);
out:
	cleanup();
	return res;
}

static enum ft_result t_sizes(void)
{
	const size_t sizes[] = {0, 1, 16, 4096};
	enum ft_result res = FT_PASS;
	int i, ret;

	ret = ft_unit_open(0);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	for (i = 0; i < 4; i++) {
		UT_EXPECT_RET(ft_open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_NONE,
					 sizes[i], &cq),
			      0);
		UT_EXPECT_RET(fi_close(&cq->fid), 0);
		cq = NULL;
	}
out:
	cleanup();
	return res;
}

/* bounded poll for one entry; returns 1, -FI_EAVAIL or an error */
static ssize_t poll_one(struct fid_cq *q, void *entry)
{
	uint64_t start = ft_now_us();
	ssize_t ret;

	do {
		ret = fi_cq_read(q, entry, 1);
		if (ret != -FI_EAGAIN)
			return ret;
		/* the other queue may need progress too */
		fi_cq_read(q == ft.txcq ? ft.rxcq : ft.txcq, NULL, 0);
	} while (!ft_timed_out(start, ft_opts.timeout));
	return -FI_ETIMEDOUT;
}

static int self_connect(uint64_t caps, size_t bufsize)
{
	char addr[256];
	size_t len = sizeof(addr);
	int ret;

	ret = ft_unit_open_ep(caps);
	if (ret)
		return ret;
	ret = ft_alloc_msgs(bufsize);
	if (ret)
		return ret;
	ret = fi_getname(&ft.ep->fid, addr, &len);
	if (ret)
		return ret;
	ret = fi_av_insert(ft.av, addr, 1, &ft.peer, 0, NULL);
	return ret == 1 ? 0 : -FI_EOTHER;
}

/* an ep sends to itself: both entries carry context, flags and length */
static enum ft_result t_self_msg(void)
{
	enum ft_result res = FT_PASS;
	/* ft opens its CQs with FI_CQ_FORMAT_TAGGED */
	struct fi_cq_tagged_entry tx = {0}, rx = {0};
	ssize_t pret;
	int ret;

	ret = self_connect(FI_MSG, 256);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	FT_POST_RETRY(pret, fi_recv(ft.ep, ft.rx_buf, 256, ft.desc,
				    FI_ADDR_UNSPEC, &ft.rx_ctx));
	UT_EXPECT_RET(pret, 0);
	ft_fill_buf(ft.tx_buf, 100, 5);
	FT_POST_RETRY(pret, fi_send(ft.ep, ft.tx_buf, 100, ft.desc, ft.peer,
				    &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	UT_EXPECT_RET(poll_one(ft.txcq, &tx), 1);
	UT_EXPECT_RET(poll_one(ft.rxcq, &rx), 1);
	UT_CHECK(tx.op_context == &ft.tx_ctx, "tx context %p", tx.op_context);
	UT_CHECK((tx.flags & (FI_SEND | FI_MSG)) == (FI_SEND | FI_MSG),
		 "tx flags 0x%llx", (unsigned long long)tx.flags);
	UT_CHECK(rx.op_context == &ft.rx_ctx, "rx context %p", rx.op_context);
	UT_CHECK((rx.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG),
		 "rx flags 0x%llx", (unsigned long long)rx.flags);
	UT_CHECK(rx.len == 100, "rx len %zu", rx.len);
	UT_CHECK(ft_check_buf(ft.rx_buf, 100, 5) == 0, "payload corrupted");
	UT_EXPECT_RET(fi_cq_read(ft.rxcq, &rx, 1), -FI_EAGAIN);
out:
	cleanup();
	return res;
}

static enum ft_result t_self_tagged(void)
{
	enum ft_result res = FT_PASS;
	struct fi_cq_tagged_entry rx = {0};
	struct fi_cq_tagged_entry tx;
	ssize_t pret;
	int ret;

	ret = self_connect(FI_TAGGED, 64);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	FT_POST_RETRY(pret, fi_trecv(ft.ep, ft.rx_buf, 64, ft.desc,
				     FI_ADDR_UNSPEC, 0x1200, 0xff, &ft.rx_ctx));
	UT_EXPECT_RET(pret, 0);
	/* a non-matching tag must not complete the receive */
	FT_POST_RETRY(pret, fi_tsend(ft.ep, ft.tx_buf, 8, ft.desc, ft.peer,
				     0x3400, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	UT_EXPECT_RET(poll_one(ft.txcq, &tx), 1);
	FT_POST_RETRY(pret, fi_tsend(ft.ep, ft.tx_buf, 16, ft.desc, ft.peer,
				     0x1234, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	UT_EXPECT_RET(poll_one(ft.txcq, &tx), 1);
	UT_EXPECT_RET(poll_one(ft.rxcq, &rx), 1);
	UT_CHECK(rx.len == 16, "matched the wrong message (len %zu)", rx.len);
	UT_CHECK(rx.tag == 0x1234, "tag 0x%llx", (unsigned long long)rx.tag);
	UT_CHECK((rx.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
		 "rx flags 0x%llx", (unsigned long long)rx.flags);
out:
	cleanup();
	return res;
}

/* a message larger than the posted buffer completes with -FI_ETRUNC */
static enum ft_result t_truncation(void)
{
	enum ft_result res = FT_PASS;
	struct fi_cq_err_entry err = {0};
	struct fi_cq_msg_entry e;
	ssize_t pret;
	int ret;

	ret = self_connect(FI_MSG, 128);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	/* datagram providers may drop or silently cut oversized messages */
	if (ft.info->ep_attr->type == FI_EP_DGRAM) {
		res = FT_NOTSUPP;
		goto out;
	}
	FT_POST_RETRY(pret, fi_recv(ft.ep, ft.rx_buf, 16, ft.desc,
				    FI_ADDR_UNSPEC, &ft.rx_ctx));
	UT_EXPECT_RET(pret, 0);
	FT_POST_RETRY(pret, fi_send(ft.ep, ft.tx_buf, 100, ft.desc, ft.peer,
				    &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	UT_EXPECT_RET(poll_one(ft.rxcq, &e), -FI_EAVAIL);
	UT_EXPECT_RET(fi_cq_readerr(ft.rxcq, &err, 0), 1);
	UT_CHECK(err.err == FI_ETRUNC, "err %d (%s)", err.err,
		 fi_strerror(err.err));
	UT_CHECK(err.op_context == &ft.rx_ctx, "err context %p",
		 err.op_context);
	/* Debian 1.17's rxm leaves olen 0; a value, if given, must be exact */
	UT_CHECK(err.olen == 100 - 16 || err.olen == 0, "olen %zu", err.olen);
	if (!err.olen)
		fprintf(stderr, "  warning: olen not reported (expected 84)\n");
	UT_CHECK(fi_cq_strerror(ft.rxcq, err.prov_errno, err.err_data, NULL,
				0) != NULL,
		 "no cq strerror");
out:
	cleanup();
	return res;
}

static const struct ft_unit_test tests[] = {
	{"open_formats", t_open_formats, "open with each cq format"},
	{"bad_format", t_bad_format, "invalid format rejected"},
	{"read_empty", t_read_empty, "read/readerr empty -> -FI_EAGAIN"},
	{"sread_timeout", t_sread_timeout, "sread 200ms -> -FI_EAGAIN"},
	{"wait_fd", t_wait_fd, "FI_GETWAIT returns an fd"},
	{"sizes", t_sizes, "open with sizes 0, 1, 16, 4096"},
	{"self_msg", t_self_msg, "send-to-self entry fields"},
	{"self_tagged", t_self_tagged, "tagged matching and entry flags"},
	{"truncation", t_truncation, "short buffer -> FI_ETRUNC error"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return ft_run_unit("cq_test", tests, argc, argv);
}
