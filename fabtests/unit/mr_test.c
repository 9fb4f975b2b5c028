/*
 * mr_test: memory registration with fi_mr_reg/regv/regattr, access and
 * flag validation, key uniqueness (provider or requested keys) and
 * fi_mr_desc/fi_mr_key, against the domain of the provider given with -p.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "shared.h"

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

static const struct ft_unit_test tests[] = {
	{"reg_close", t_reg_close, "register and close a buffer"},
	{"reg_rma", t_reg_rma, "register with all RMA access bits"},
	{"bad_access", t_bad_access, "unknown access bit rejected", true},
	{"bad_flags", t_bad_flags, "unknown flag -> EBADFLAGS/EINVAL", true},
	{"regv", t_regv, "fi_mr_regv up to mr_iov_limit"},
	{"regattr", t_regattr, "fi_mr_regattr keeps the context"},
	{"keys", t_keys, "distinct keys; duplicate requested -> ENOKEY"},
	{"overlap", t_overlap, "overlapping registrations"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return ft_run_unit("mr_test", tests, argc, argv);
}
