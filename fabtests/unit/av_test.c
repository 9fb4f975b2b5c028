/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * av_test: address vector open for FI_AV_MAP and FI_AV_TABLE, insert of
 * endpoint names, lookup (including a short buffer), remove, straddr and
 * insertsvc, using real endpoint names so any address format works.
 */
#include <stdlib.h>
#include <string.h>

#include "shared.h"

#define NEPS 3

static struct fid_av *av;
static struct fid_ep *eps[NEPS];
static char names[NEPS][256];
static size_t namelen[NEPS];

static void cleanup(void)
{
	int i;

	for (i = 0; i < NEPS; i++)
		FT_CLOSE_FID(eps[i]);
	FT_CLOSE_FID(av);
	ft_free_res();
}

/* opens the domain, NEPS extra endpoints, and an av of the given type */
static int setup(enum fi_av_type type)
{
	struct fi_av_attr attr = {.type = type};
	int i, ret;

	ret = ft_unit_open_ep(FI_MSG);
	if (ret)
		return ret;
	for (i = 0; i < NEPS; i++) {
		ret = fi_endpoint(ft.domain, ft.info, &eps[i], NULL);
		if (!ret)
			ret = fi_ep_bind(eps[i], &ft.av->fid, 0);
		if (!ret)
			ret = fi_ep_bind(eps[i], &ft.txcq->fid,
					 FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_enable(eps[i]);
		if (ret)
			return ret;
		namelen[i] = sizeof(names[i]);
		ret = fi_getname(&eps[i]->fid, names[i], &namelen[i]);
		if (ret)
			return ret;
	}
	return type == FI_AV_UNSPEC ? 0
				    : fi_av_open(ft.domain, &attr, &av, NULL);
}

static enum ft_result run_insert_lookup(enum fi_av_type type)
{
	enum ft_result res = FT_PASS;
	fi_addr_t addrs[NEPS];
	char buf[256];
	size_t len;
	int i, ret;

	ret = setup(type);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	for (i = 0; i < NEPS; i++) {
		addrs[i] = FI_ADDR_NOTAVAIL;
		UT_EXPECT_RET(fi_av_insert(av, names[i], 1, &addrs[i], 0, NULL),
			      1);
		UT_CHECK(addrs[i] != FI_ADDR_NOTAVAIL, "no fi_addr");
		if (type == FI_AV_TABLE)
			UT_CHECK(addrs[i] == (fi_addr_t)i,
				 "table index %llu for insert %d",
				 (unsigned long long)addrs[i], i);
	}
	for (i = 0; i < NEPS; i++) {
		len = sizeof(buf);
		memset(buf, 0, sizeof(buf));
		UT_EXPECT_RET(fi_av_lookup(av, addrs[i], buf, &len), 0);
		UT_CHECK(len == namelen[i], "lookup len %zu want %zu", len,
			 namelen[i]);
		UT_CHECK(!memcmp(buf, names[i], len), "lookup %d differs", i);
	}
out:
	cleanup();
	return res;
}

static enum ft_result t_map(void)
{
	return run_insert_lookup(FI_AV_MAP);
}

static enum ft_result t_table(void)
{
	return run_insert_lookup(FI_AV_TABLE);
}

static enum ft_result t_lookup_short(void)
{
	enum ft_result res = FT_PASS;
	fi_addr_t addr;
	char buf[256];
	size_t len = 1;
	int ret;

	ret = setup(FI_AV_TABLE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	if (namelen[0] < 2) {
		res = FT_SKIP;
		goto out;
	}
	UT_EXPECT_RET(fi_av_insert(av, names[0], 1, &addr, 0, NULL), 1);
	memset(buf, 0x5a, sizeof(buf));
	ret = fi_av_lookup(av, addr, buf, &len);
	UT_CHECK(ret == 0 || ret == -FI_ETOOSMALL, "lookup ret %d", ret);
	UT_CHECK(len == namelen[0], "needed len %zu want %zu", len, namelen[0]);
	UT_CHECK((unsigned char)buf[1] == 0x5a, "wrote past the buffer");
out:
	cleanup();
	return res;
}

static enum ft_result t_remove(void)
{
	enum ft_result res = FT_PASS;
	fi_addr_t addrs[2];
	char buf[256];
	size_t len = sizeof(buf);
	int ret;

	ret = setup(FI_AV_TABLE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(fi_av_insert(av, names[0], 1, &addrs[0], 0, NULL), 1);
	UT_EXPECT_RET(fi_av_insert(av, names[1], 1, &addrs[1], 0, NULL), 1);
	UT_EXPECT_RET(fi_av_remove(av, &addrs[0], 1, 0), 0);
	/* lookup of a removed fi_addr is undefined: only check survivors */
	UT_EXPECT_RET(fi_av_lookup(av, addrs[1], buf, &len), 0);
	UT_CHECK(len == namelen[1] && !memcmp(buf, names[1], len),
		 "remaining entry damaged");
	UT_EXPECT_RET(fi_av_insert(av, names[0], 1, &addrs[0], 0, NULL), 1);
	len = sizeof(buf);
	UT_EXPECT_RET(fi_av_lookup(av, addrs[0], buf, &len), 0);
	UT_CHECK(len == namelen[0] && !memcmp(buf, names[0], len),
		 "re-inserted entry differs");
out:
	cleanup();
	return res;
}

static enum ft_result t_insert_batch(void)
{
	enum ft_result res = FT_PASS;
	char all[NEPS * 256];
	fi_addr_t addrs[NEPS];
	size_t len = namelen[0];
	int i, ret;

	ret = setup(FI_AV_TABLE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	len = namelen[0];
	for (i = 0; i < NEPS; i++) {
		if (namelen[i] != len) {
			res = FT_SKIP;
			goto out;
		}
		memcpy(all + i * len, names[i], len);
	}
	UT_EXPECT_RET(fi_av_insert(av, all, NEPS, addrs, 0, NULL), NEPS);
	for (i = 0; i < NEPS; i++)
		UT_CHECK(addrs[i] == (fi_addr_t)i, "index %d -> %llu", i,
			 (unsigned long long)addrs[i]);
out:
	cleanup();
	return res;
}

static enum ft_result t_straddr(void)
{
	enum ft_result res = FT_PASS;
	char buf[256];
	size_t len = sizeof(buf);
	const char *s;
	int ret;

	ret = setup(FI_AV_TABLE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	memset(buf, 0, sizeof(buf));
	s = fi_av_straddr(av, names[0], buf, &len);
	UT_CHECK(s == buf, "straddr did not return buf");
	UT_CHECK(strlen(buf) > 0, "empty string");
	UT_CHECK(len > 0 && len >= strlen(buf), "len %zu for '%s'", len, buf);
	if (ft_opts.verbose)
		printf("  straddr: %s\n", buf);
out:
	cleanup();
	return res;
}

static enum ft_result t_insertsvc(void)
{
	enum ft_result res = FT_PASS;
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	int ret;

	ret = setup(FI_AV_TABLE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	if (ft.info->addr_format != FI_SOCKADDR_IN &&
	    ft.info->addr_format != FI_SOCKADDR) {
		res = FT_NOTSUPP;
		goto out;
	}
	ret = fi_av_insertsvc(av, "127.0.0.1", "9229", &addr, 0, NULL);
	if (ret == -FI_ENOSYS) {
		res = FT_NOTSUPP;
		goto out;
	}
	UT_EXPECT_RET(ret, 1);
	UT_CHECK(addr != FI_ADDR_NOTAVAIL, "no fi_addr");
out:
	cleanup();
	return res;
}

static enum ft_result t_bad_type(void)
{
	struct fi_av_attr attr = {.type = (enum fi_av_type)42};
	enum ft_result res = FT_PASS;
	int ret;

	ret = setup(FI_AV_UNSPEC);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	ret = fi_av_open(ft.domain, &attr, &av, NULL);
	UT_CHECK(ret < 0, "av type 42 accepted");
out:
	cleanup();
	return res;
}

static enum ft_result t_bad_flags(void)
{
	enum ft_result res = FT_PASS;
	fi_addr_t addr;
	int ret;

	ret = setup(FI_AV_TABLE);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	ret = fi_av_insert(av, names[0], 1, &addr, 1ULL << 61, NULL);
	UT_CHECK(ret < 0, "unknown insert flag accepted (ret %d)", ret);
out:
	cleanup();
	return res;
}

static const struct ft_unit_test tests[] = {
	{"av_map", t_map, "FI_AV_MAP insert + lookup"},
	{"av_table", t_table, "FI_AV_TABLE insert gives 0,1,2 + lookup"},
	{"lookup_short", t_lookup_short,
	 "short lookup buffer: len, no overrun"},
	{"remove", t_remove, "remove keeps others; re-insert works"},
	{"insert_batch", t_insert_batch, "one call inserts several"},
	{"straddr", t_straddr, "straddr prints an address"},
	{"insertsvc", t_insertsvc, "insertsvc of 127.0.0.1:port"},
	{"bad_type", t_bad_type, "invalid av type rejected"},
	{"bad_flags", t_bad_flags, "unknown insert flag rejected", true},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return ft_run_unit("av_test", tests, argc, argv);
}
