/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * cntr_test: counter open/close, add/set/read, the error value
 * (adderr/seterr/readerr), fi_cntr_wait timeout and wake-up, and a counter
 * bound to an endpoint counting its own sends and receives.
 */
#include <string.h>

#include "shared.h"

static struct fid_cntr *cntr;

static int open_cntr(enum fi_wait_obj wait)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = wait};
	int ret;

	ret = ft_unit_open(0);
	if (ret)
		return ret;
	return fi_cntr_open(ft.domain, &attr, &cntr, NULL);
}

static void cleanup(void)
{
	FT_CLOSE_FID(ft.ep);
	FT_CLOSE_FID(cntr);
	ft_free_res();
}

static enum ft_result t_open_close(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = open_cntr(FI_WAIT_NONE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_cntr_read(cntr), 0);
	UT_EXPECT_RET(fi_cntr_readerr(cntr), 0);
	UT_EXPECT_RET(fi_close(&cntr->fid), 0);
	cntr = NULL;
out:
	cleanup();
	return res;
}

static enum ft_result t_add_set(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = open_cntr(FI_WAIT_NONE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_cntr_add(cntr, 5), 0);
	UT_EXPECT_RET(fi_cntr_read(cntr), 5);
	UT_EXPECT_RET(fi_cntr_add(cntr, 7), 0);
	UT_EXPECT_RET(fi_cntr_read(cntr), 12);
	UT_EXPECT_RET(fi_cntr_set(cntr, 100), 0);
	UT_EXPECT_RET(fi_cntr_read(cntr), 100);
	UT_EXPECT_RET(fi_cntr_set(cntr, 0), 0);
	UT_EXPECT_RET(fi_cntr_read(cntr), 0);
	UT_EXPECT_RET(fi_cntr_readerr(cntr), 0);
out:
	cleanup();
	return res;
}

static enum ft_result t_err(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = open_cntr(FI_WAIT_NONE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	ret = fi_cntr_adderr(cntr, 2);
	if (ret == -FI_ENOSYS) {
		res = FT_NOTSUPP;
		goto out;
	}
	UT_EXPECT_RET(ret, 0);
	UT_EXPECT_RET(fi_cntr_readerr(cntr), 2);
	UT_EXPECT_RET(fi_cntr_adderr(cntr, 3), 0);
	UT_EXPECT_RET(fi_cntr_readerr(cntr), 5);
	UT_EXPECT_RET(fi_cntr_seterr(cntr, 1), 0);
	UT_EXPECT_RET(fi_cntr_readerr(cntr), 1);
	/* the success value is independent of the error value */
	UT_EXPECT_RET(fi_cntr_read(cntr), 0);
out:
	cleanup();
	return res;
}

static enum ft_result t_wait_timeout(void)
{
	enum ft_result res = FT_PASS;
	uint64_t start, el;
	int ret;

	ret = open_cntr(FI_WAIT_UNSPEC);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_cntr_add(cntr, 1), 0);
	start = ft_now_us();
	ret = fi_cntr_wait(cntr, 2, 200);
	el = ft_now_us() - start;
	/*
	 * Debian 1.17 sockets returns +FI_ETIMEDOUT at once; tolerate that
	 * known quirk with a warning, hold every other answer to the man page.
	 */
	if (ret == FI_ETIMEDOUT) {
		fprintf(stderr, "  warning: immediate positive FI_ETIMEDOUT "
				"(known sockets quirk)\n");
	} else {
		UT_EXPECT_RET(ret, -FI_ETIMEDOUT);
		UT_CHECK(el >= 150000 && el < 3000000,
			 "waited %llu us for 200 ms", (unsigned long long)el);
	}
	UT_EXPECT_RET(fi_cntr_read(cntr), 1);
	UT_EXPECT_RET(fi_cntr_readerr(cntr), 0);
out:
	cleanup();
	return res;
}

static enum ft_result t_wait_reached(void)
{
	enum ft_result res = FT_PASS;
	uint64_t start;
	int ret;

	ret = open_cntr(FI_WAIT_UNSPEC);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_cntr_set(cntr, 10), 0);
	start = ft_now_us();
	UT_EXPECT_RET(fi_cntr_wait(cntr, 10, 2000), 0);
	UT_EXPECT_RET(fi_cntr_wait(cntr, 3, 2000), 0);
	UT_CHECK(ft_now_us() - start < 1000000, "wait blocked at threshold");
out:
	cleanup();
	return res;
}

/* a send and a receive to self bump the bound counter twice */
static enum ft_result t_ep_bound(void)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = FI_WAIT_UNSPEC};
	enum ft_result res = FT_PASS;
	char addr[256];
	size_t len = sizeof(addr);
	uint64_t start;
	ssize_t pret;
	int ret;

	ret = ft_unit_open_ep(FI_MSG);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	/* counters bind before enable: reopen the ep with the counter */
	FT_CLOSE_FID(ft.ep);
	UT_EXPECT_RET(fi_cntr_open(ft.domain, &attr, &cntr, NULL), 0);
	UT_EXPECT_RET(fi_endpoint(ft.domain, ft.info, &ft.ep, NULL), 0);
	UT_EXPECT_RET(fi_ep_bind(ft.ep, &ft.av->fid, 0), 0);
	UT_EXPECT_RET(fi_ep_bind(ft.ep, &ft.txcq->fid, FI_TRANSMIT), 0);
	UT_EXPECT_RET(fi_ep_bind(ft.ep, &ft.rxcq->fid, FI_RECV), 0);
	UT_EXPECT_RET(fi_ep_bind(ft.ep, &cntr->fid, FI_SEND | FI_RECV), 0);
	UT_EXPECT_RET(fi_enable(ft.ep), 0);
	UT_EXPECT_RET(ft_alloc_msgs(64), 0);
	UT_EXPECT_RET(fi_getname(&ft.ep->fid, addr, &len), 0);
	UT_EXPECT_RET(fi_av_insert(ft.av, addr, 1, &ft.peer, 0, NULL), 1);
	FT_POST_RETRY(pret, fi_recv(ft.ep, ft.rx_buf, 64, ft.desc,
				    FI_ADDR_UNSPEC, &ft.rx_ctx));
	UT_EXPECT_RET(pret, 0);
	FT_POST_RETRY(pret, fi_send(ft.ep, ft.tx_buf, 32, ft.desc, ft.peer,
				    &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	start = ft_now_us();
	while (fi_cntr_read(cntr) < 2 && !ft_timed_out(start, ft_opts.timeout))
		fi_cq_read(ft.txcq, NULL, 0);
	UT_EXPECT_RET(fi_cntr_read(cntr), 2);
	UT_EXPECT_RET(fi_cntr_readerr(cntr), 0);
out:
	cleanup();
	return res;
}

static const struct ft_unit_test tests[] = {
	{"open_close", t_open_close, "new counter reads 0/0"},
	{"add_set", t_add_set, "add and set change the value"},
	{"err", t_err, "adderr/seterr/readerr"},
	{"wait_timeout", t_wait_timeout, "wait below threshold -> ETIMEDOUT"},
	{"wait_reached", t_wait_reached, "wait at threshold returns 0"},
	{"ep_bound", t_ep_bound, "bound counter counts send + recv"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return ft_run_unit("cntr_test", tests, argc, argv);
}
