/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mr_test: memory registration with fi_mr_reg/regv/regattr, access and
 * flag validation, key uniqueness (provider or requested keys) and
 * fi_mr_desc/fi_mr_key, FI_MR_ENDPOINT (honoured, or not claimed and not
 * needed), an MR's remote-write counter, against the domain of the provider
 * given with -p.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "shared.h"
#include <rdma/fi_rma.h>

#define NREGS	64
#define REGSIZE 4096

static char *mem;
static struct fid_mr *mrs[NREGS];

static const uint64_t rma_access =
	FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

static int setup(uint64_t caps)
{
	int ret;

	ret = ft_unit_open(caps);
	if (ret)
		return ret;
	mem = calloc(NREGS, REGSIZE);
	return mem ? 0 : -FI_ENOMEM;
}

static void cleanup(void)
{
	int i;

	for (i = 0; i < NREGS; i++)
		FT_CLOSE_FID(mrs[i]);
	free(mem);
	mem = NULL;
	ft_free_res();
}

static enum ft_result t_reg_close(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = setup(FI_MSG);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_mr_reg(ft.domain, mem, REGSIZE, FI_SEND | FI_RECV, 0,
				1, 0, &mrs[0], NULL),
		      0);
	UT_CHECK(mrs[0] != NULL, "no mr");
	(void)fi_mr_desc(mrs[0]);
	UT_EXPECT_RET(fi_close(&mrs[0]->fid), 0);
	mrs[0] = NULL;
out:
	cleanup();
	return res;
}

static enum ft_result t_reg_rma(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = setup(FI_RMA);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_mr_reg(ft.domain, mem, REGSIZE, rma_access, 0, 2, 0,
				&mrs[0], NULL),
		      0);
	UT_CHECK(fi_mr_key(mrs[0]) != FI_KEY_NOTAVAIL, "no key");
out:
	cleanup();
	return res;
}

static enum ft_result t_bad_access(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = setup(FI_MSG);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	ret = fi_mr_reg(ft.domain, mem, REGSIZE, 1ULL << 62, 0, 3, 0, &mrs[0],
			NULL);
	UT_CHECK(ret < 0, "access bit 62 accepted");
	UT_CHECK(mrs[0] == NULL || ret == 0, "mr handle set on failure");
	mrs[0] = NULL;
out:
	cleanup();
	return res;
}

static enum ft_result t_bad_flags(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = setup(FI_MSG);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	ret = fi_mr_reg(ft.domain, mem, REGSIZE, FI_SEND | FI_RECV, 0, 4,
			1ULL << 62, &mrs[0], NULL);
	UT_CHECK(ret == -FI_EBADFLAGS || ret == -FI_EINVAL,
		 "unknown flag: ret %d", ret);
	mrs[0] = NULL;
out:
	cleanup();
	return res;
}

static enum ft_result t_regv(void)
{
	enum ft_result res = FT_PASS;
	struct iovec iov[2] = {
		{.iov_len = 128},
		{.iov_len = 256},
	};
	int ret;

	ret = setup(FI_MSG);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	iov[0].iov_base = mem;
	iov[1].iov_base = mem + 2 * REGSIZE;
	if (ft.info->domain_attr->mr_iov_limit < 2) {
		iov[1] = iov[0];
		UT_EXPECT_RET(fi_mr_regv(ft.domain, iov, 1, FI_SEND, 0, 5, 0,
					 &mrs[0], NULL),
			      0);
		goto out;
	}
	UT_EXPECT_RET(fi_mr_regv(ft.domain, iov, 2, FI_SEND | FI_RECV, 0, 5, 0,
				 &mrs[0], NULL),
		      0);
out:
	cleanup();
	return res;
}

static enum ft_result t_regattr(void)
{
	enum ft_result res = FT_PASS;
	struct iovec iov = {.iov_len = REGSIZE};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV,
		.requested_key = 6,
		.context = &attr,
	};
	int ret;

	ret = setup(FI_MSG);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	iov.iov_base = mem;
	UT_EXPECT_RET(fi_mr_regattr(ft.domain, &attr, 0, &mrs[0]), 0);
	UT_CHECK(mrs[0]->fid.context == &attr, "context not kept");
out:
	cleanup();
	return res;
}

/* provider keys never collide; a reused requested key is -FI_ENOKEY */
static enum ft_result t_keys(void)
{
	enum ft_result res = FT_PASS;
	bool prov_key;
	int i, j, ret;

	ret = setup(FI_RMA);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	prov_key = ft.info->domain_attr->mr_mode & FI_MR_PROV_KEY;
	for (i = 0; i < NREGS; i++)
		UT_EXPECT_RET(fi_mr_reg(ft.domain, mem + i * REGSIZE, REGSIZE,
					rma_access, 0, 100 + i, 0, &mrs[i],
					NULL),
			      0);
	for (i = 0; i < NREGS; i++) {
		if (!prov_key)
			UT_CHECK(fi_mr_key(mrs[i]) == 100 + (uint64_t)i,
				 "requested key %d not used", 100 + i);
		for (j = 0; j < i; j++)
			UT_CHECK(fi_mr_key(mrs[i]) != fi_mr_key(mrs[j]),
				 "mr %d and %d share key", i, j);
	}
	if (prov_key)
		goto out;
	FT_CLOSE_FID(mrs[NREGS - 1]);
	ret = fi_mr_reg(ft.domain, mem, REGSIZE, rma_access, 0, 100, 0,
			&mrs[NREGS - 1], NULL);
	UT_CHECK(ret == -FI_ENOKEY, "duplicate key: ret %d", ret);
	if (ret)
		mrs[NREGS - 1] = NULL;
out:
	cleanup();
	return res;
}

/* the same buffer may be registered more than once */
static enum ft_result t_overlap(void)
{
	enum ft_result res = FT_PASS;
	int ret;

	ret = setup(FI_MSG);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_mr_reg(ft.domain, mem, 2 * REGSIZE, FI_SEND, 0, 7, 0,
				&mrs[0], NULL),
		      0);
	UT_EXPECT_RET(fi_mr_reg(ft.domain, mem + 100, REGSIZE, FI_RECV, 0, 8, 0,
				&mrs[1], NULL),
		      0);
	UT_EXPECT_RET(fi_close(&mrs[0]->fid), 0);
	mrs[0] = NULL;
out:
	cleanup();
	return res;
}

/* An RMA write to self through @mr's key completes without error. */
static enum ft_result write_self(struct fid_mr *mr)
{
	enum ft_result res = FT_PASS;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = {0};
	char addr[256];
	size_t len = sizeof(addr);
	uint64_t start, base;
	ssize_t pret;

	base = ft.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR
		       ? (uint64_t)(uintptr_t)mem
		       : 0;
	memset(mem, 0x5a, 64);
	UT_EXPECT_RET(fi_getname(&ft.ep->fid, addr, &len), 0);
	UT_EXPECT_RET(fi_av_insert(ft.av, addr, 1, &ft.peer, 0, NULL), 1);
	FT_POST_RETRY(pret,
		      fi_write(ft.ep, mem, 64, fi_mr_desc(mr), ft.peer,
			       base + REGSIZE, fi_mr_key(mr), &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	start = ft_now_us();
	do {
		pret = fi_cq_read(ft.txcq, &e, 1);
	} while (pret == -FI_EAGAIN && !ft_timed_out(start, ft_opts.timeout));
	if (pret == -FI_EAVAIL) {
		fi_cq_readerr(ft.txcq, &err, 0);
		UT_CHECK(0, "write failed: %s", fi_strerror(err.err));
	}
	UT_EXPECT_RET(pret, 1);
	UT_CHECK(mem[REGSIZE] == 0x5a && mem[REGSIZE + 63] == 0x5a,
		 "data not written");
out:
	return res;
}

/*
 * FI_MR_ENDPOINT is accepted in the hints. A provider that keeps it must
 * honour it (an MR enables only once bound to an endpoint); one that
 * drops it must take keys of unbound MRs.
 */
static enum ft_result t_mr_endpoint(void)
{
	enum ft_result res = FT_PASS;
	struct fid_mr *mr = NULL;
	int ret;

	ret = ft_alloc_hints(FI_RMA);
	if (!ret) {
		ft.hints->domain_attr->mr_mode |= FI_MR_ENDPOINT;
		ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, ft.hints,
				 &ft.info);
	}
	if (!ret && ft.info->ep_attr->type == FI_EP_MSG)
		ret = -FI_EOPNOTSUPP;
	if (!ret)
		ret = ft_open_fabric_domain();
	if (!ret)
		ret = ft_open_ep_res_fmt(FI_CQ_FORMAT_TAGGED);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	mem = calloc(NREGS, REGSIZE);
	UT_CHECK(mem != NULL, "no memory");
	UT_EXPECT_RET(fi_mr_reg(ft.domain, mem, 2 * REGSIZE,
				rma_access | FI_SEND | FI_RECV, 0, 7, 0, &mr,
				NULL),
		      0);
	if (ft.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		UT_CHECK(fi_mr_enable(mr) < 0, "enabled without a binding");
		UT_EXPECT_RET(fi_mr_bind(mr, &ft.ep->fid, 0), 0);
		UT_EXPECT_RET(fi_mr_enable(mr), 0);
	}
	res = write_self(mr);
out:
	FT_CLOSE_FID(ft.ep);
	FT_CLOSE_FID(mr);
	free(mem);
	mem = NULL;
	ft_free_res();
	return res;
}

/*
 * Where mr_mode lacks FI_MR_RMA_EVENT, a counter binds to an MR registered
 * without the FI_RMA_EVENT flag (OpenSHMEM's target counter does so) and
 * counts the remote writes that land in it.
 */
static enum ft_result t_mr_cntr(void)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP};
	enum ft_result res = FT_PASS;
	struct fid_cntr *cntr = NULL;
	struct fid_mr *mr = NULL;
	uint64_t start;
	int ret;

	ret = ft_unit_open_ep(FI_RMA | FI_RMA_EVENT);
	if (!ret && (ft.info->domain_attr->mr_mode &
		     (FI_MR_RMA_EVENT | FI_MR_ENDPOINT)))
		ret = -FI_EOPNOTSUPP;
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	mem = calloc(NREGS, REGSIZE);
	UT_CHECK(mem != NULL, "no memory");
	UT_EXPECT_RET(fi_cntr_open(ft.domain, &attr, &cntr, NULL), 0);
	UT_EXPECT_RET(fi_mr_reg(ft.domain, mem, 2 * REGSIZE, rma_access, 0, 7,
				0, &mr, NULL),
		      0);
	UT_EXPECT_RET(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE), 0);
	res = write_self(mr);
	if (res != FT_PASS)
		goto out;
	start = ft_now_us();
	while (fi_cntr_read(cntr) < 1 && !ft_timed_out(start, ft_opts.timeout))
		;
	UT_CHECK(fi_cntr_read(cntr) == 1, "counter %lu after one write",
		 (unsigned long)fi_cntr_read(cntr));
out:
	FT_CLOSE_FID(ft.ep);
	FT_CLOSE_FID(cntr);
	FT_CLOSE_FID(mr);
	free(mem);
	mem = NULL;
	ft_free_res();
	return res;
}

static const struct ft_unit_test tests[] = {
	{"reg_close", t_reg_close, "register and close a buffer"},
	{"reg_rma", t_reg_rma, "register with all RMA access bits"},
	{"bad_access", t_bad_access, "unknown access bit rejected", true},
	{"bad_flags", t_bad_flags, "unknown flag -> EBADFLAGS/EINVAL", true},
	{"regv", t_regv, "fi_mr_regv up to mr_iov_limit"},
	{"regattr", t_regattr, "fi_mr_regattr keeps the context"},
	{"keys", t_keys, "distinct keys; duplicate requested -> ENOKEY"},
	{"overlap", t_overlap, "overlapping registrations"},
	{"mr_endpoint", t_mr_endpoint, "FI_MR_ENDPOINT honoured or dropped"},
	{"mr_cntr", t_mr_cntr, "MR counter without FI_RMA_EVENT counts"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return ft_run_unit("mr_test", tests, argc, argv);
}
