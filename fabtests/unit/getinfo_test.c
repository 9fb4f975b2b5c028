/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * getinfo_test: fi_getinfo hint matching and rejection, fi_allocinfo,
 * fi_dupinfo deep-copy and fi_freeinfo behaviour for one provider (-p).
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "shared.h"

/* hints limited to the provider/ep type/domain under test */
static struct fi_info *base_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->mode = ~0ULL;
	h->ep_attr->type = ft_opts.ep_type;
	if (ft_opts.prov)
		h->fabric_attr->prov_name = strdup(ft_opts.prov);
	if (ft_opts.domain)
		h->domain_attr->name = strdup(ft_opts.domain);
	return h;
}

/* "tcp" also names layered results such as "tcp;ofi_rxm" */
static bool prov_matches(const char *name)
{
	size_t len;

	if (!ft_opts.prov)
		return true;
	len = strlen(ft_opts.prov);
	return name && !strncmp(name, ft_opts.prov, len) &&
	       (name[len] == '\0' || name[len] == ';');
}

static enum ft_result t_prov_filter(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *h = base_hints(), *info = NULL, *cur;
	int n = 0, ret;

	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, h, &info);
	if (ret == -FI_ENODATA) {
		res = FT_NOTSUPP;
		goto out;
	}
	UT_EXPECT_RET(ret, 0);
	UT_CHECK(info != NULL, "no info returned");
	for (cur = info; cur; cur = cur->next, n++) {
		UT_CHECK(prov_matches(cur->fabric_attr->prov_name),
			 "entry %d from provider %s", n,
			 cur->fabric_attr->prov_name);
		UT_CHECK(cur->domain_attr && cur->ep_attr && cur->tx_attr &&
				 cur->rx_attr && cur->fabric_attr,
			 "entry %d lacks attributes", n);
		UT_CHECK(!ft_opts.ep_type ||
				 cur->ep_attr->type == ft_opts.ep_type,
			 "entry %d has ep type %d", n, cur->ep_attr->type);
		UT_CHECK(cur->fabric_attr->name && cur->domain_attr->name,
			 "entry %d lacks fabric/domain name", n);
	}
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

static enum ft_result t_bad_version(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *h = base_hints(), *info = NULL;

	UT_EXPECT_RET(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION + 1, 0), NULL,
				 NULL, 0, h, &info),
		      -FI_ENOSYS);
	UT_CHECK(info == NULL, "info set on failure");
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

static enum ft_result expect_nodata(struct fi_info *h)
{
	enum ft_result res = FT_PASS;
	struct fi_info *info = NULL;

	UT_EXPECT_RET(fi_getinfo(FT_FIVERSION, NULL, NULL, 0, h, &info),
		      -FI_ENODATA);
	UT_CHECK(info == NULL, "info set on failure");
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

static enum ft_result t_bad_caps(void)
{
	struct fi_info *h = base_hints();

	h->caps = FI_MSG | (1ULL << 62);
	return expect_nodata(h);
}

static enum ft_result t_bad_prov(void)
{
	struct fi_info *h = base_hints();

	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("no_such_provider");
	return expect_nodata(h);
}

static enum ft_result t_bad_domain(void)
{
	struct fi_info *h = base_hints();

	free(h->domain_attr->name);
	h->domain_attr->name = strdup("no_such_domain_xyz");
	return expect_nodata(h);
}

static enum ft_result t_bad_fabric(void)
{
	struct fi_info *h = base_hints();

	h->fabric_attr->name = strdup("no_such_fabric_xyz");
	return expect_nodata(h);
}

static enum ft_result t_bad_ep_type(void)
{
	struct fi_info *h = base_hints();

	h->ep_attr->type = (enum fi_ep_type)77;
	return expect_nodata(h);
}

/* every returned entry must grant at least the requested caps */
static enum ft_result t_caps_superset(void)
{
	const uint64_t want[] = {FI_MSG, FI_TAGGED, FI_RMA, FI_MSG | FI_SEND};
	enum ft_result res = FT_PASS;
	struct fi_info *h = NULL, *info = NULL, *cur;
	int i, ret, found = 0;

	for (i = 0; i < 4; i++) {
		h = base_hints();
		h->caps = want[i];
		ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, h, &info);
		if (ret != -FI_ENODATA)
			UT_EXPECT_RET(ret, 0);
		for (cur = info; cur; cur = cur->next, found++)
			UT_CHECK((cur->caps & want[i]) == want[i],
				 "caps 0x%llx lack 0x%llx",
				 (unsigned long long)cur->caps,
				 (unsigned long long)want[i]);
		fi_freeinfo(info);
		fi_freeinfo(h);
		info = h = NULL;
	}
	if (!found)
		res = FT_NOTSUPP;
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

/* each ep type either matches exactly or answers -FI_ENODATA */
static enum ft_result t_ep_types(void)
{
	const enum fi_ep_type types[] = {FI_EP_MSG, FI_EP_RDM, FI_EP_DGRAM};
	enum ft_result res = FT_PASS;
	struct fi_info *h = NULL, *info = NULL, *cur;
	int i, ret, found = 0;

	for (i = 0; i < 3; i++) {
		h = base_hints();
		h->ep_attr->type = types[i];
		ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, h, &info);
		if (ret != -FI_ENODATA)
			UT_EXPECT_RET(ret, 0);
		for (cur = info; cur; cur = cur->next, found++)
			UT_CHECK(cur->ep_attr->type == types[i],
				 "asked type %d got %d", types[i],
				 cur->ep_attr->type);
		fi_freeinfo(info);
		fi_freeinfo(h);
		info = h = NULL;
	}
	UT_CHECK(found > 0, "no ep type matched at all");
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

static enum ft_result t_allocinfo(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *i = fi_allocinfo();

	UT_CHECK(i != NULL, "allocinfo failed");
	UT_CHECK(i->tx_attr && i->rx_attr && i->ep_attr && i->domain_attr &&
			 i->fabric_attr,
		 "substructure missing");
	UT_CHECK(i->caps == 0 && i->mode == 0 && i->next == NULL &&
			 i->ep_attr->type == FI_EP_UNSPEC &&
			 i->domain_attr->name == NULL &&
			 i->fabric_attr->prov_name == NULL &&
			 i->tx_attr->size == 0 && i->src_addr == NULL,
		 "fields not zeroed");
out:
	fi_freeinfo(i);
	return res;
}

static bool str_copied(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return a != b && !strcmp(a, b);
}

static enum ft_result t_dupinfo(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *h = base_hints(), *info = NULL, *dup = NULL;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, h, &info);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	dup = fi_dupinfo(info);
	UT_CHECK(dup != NULL, "dupinfo failed");
	UT_CHECK(dup->next == NULL, "dup copied the list link");
	UT_CHECK(dup->tx_attr != info->tx_attr &&
			 dup->rx_attr != info->rx_attr &&
			 dup->ep_attr != info->ep_attr &&
			 dup->domain_attr != info->domain_attr &&
			 dup->fabric_attr != info->fabric_attr,
		 "substructures shared");
	UT_CHECK(!memcmp(dup->tx_attr, info->tx_attr, sizeof(*dup->tx_attr)),
		 "tx_attr differs");
	UT_CHECK(dup->caps == info->caps && dup->mode == info->mode &&
			 dup->addr_format == info->addr_format &&
			 dup->ep_attr->type == info->ep_attr->type &&
			 dup->domain_attr->mr_mode ==
				 info->domain_attr->mr_mode,
		 "scalar fields differ");
	UT_CHECK(str_copied(dup->fabric_attr->name, info->fabric_attr->name) &&
			 str_copied(dup->fabric_attr->prov_name,
				    info->fabric_attr->prov_name) &&
			 str_copied(dup->domain_attr->name,
				    info->domain_attr->name),
		 "strings not deep-copied");
	UT_CHECK(dup->src_addrlen == info->src_addrlen, "src_addrlen differs");
	if (info->src_addr) {
		UT_CHECK(dup->src_addr && dup->src_addr != info->src_addr &&
				 !memcmp(dup->src_addr, info->src_addr,
					 info->src_addrlen),
			 "src_addr not deep-copied");
	}
	/* writing the copy must leave the original alone */
	dup->domain_attr->name[0] ^= 0x20;
	dup->tx_attr->size++;
	UT_CHECK(info->domain_attr->name[0] != dup->domain_attr->name[0] &&
			 info->tx_attr->size + 1 == dup->tx_attr->size,
		 "original changed through the copy");
out:
	fi_freeinfo(dup);
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

/* fi_dupinfo(NULL) behaves like fi_allocinfo() */
static enum ft_result t_dupinfo_null(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *i = fi_dupinfo(NULL);

	UT_CHECK(i != NULL, "dupinfo(NULL) returned NULL");
	UT_CHECK(i->ep_attr && i->domain_attr && i->caps == 0,
		 "not an allocinfo-style struct");
out:
	fi_freeinfo(i);
	return res;
}

static enum ft_result t_freeinfo_null(void)
{
	fi_freeinfo(NULL);
	return FT_PASS;
}

/* inet providers must honour node + service + FI_SOURCE */
static enum ft_result t_source_addr(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *h = base_hints(), *info = NULL, *cur;
	struct sockaddr_in *sin;
	int ret;

	h->addr_format = FI_SOCKADDR_IN;
	ret = fi_getinfo(FT_FIVERSION, "127.0.0.1", "9123", FI_SOURCE, h,
			 &info);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	for (cur = info; cur; cur = cur->next) {
		UT_CHECK(cur->addr_format == FI_SOCKADDR_IN, "addr_format %u",
			 cur->addr_format);
		UT_CHECK(cur->src_addr &&
				 cur->src_addrlen == sizeof(struct sockaddr_in),
			 "src_addrlen %zu", cur->src_addrlen);
		sin = cur->src_addr;
		UT_CHECK(sin->sin_family == AF_INET &&
				 sin->sin_addr.s_addr ==
					 htonl(INADDR_LOOPBACK) &&
				 sin->sin_port == htons(9123),
			 "src_addr not 127.0.0.1:9123");
	}
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

/* @addr is a well-formed address of @format, @len bytes long. */
static bool addr_fits(uint32_t format, const void *addr, size_t len)
{
	const struct sockaddr *sa = addr;

	if (!addr || !len)
		return false;
	switch (format) {
	case FI_SOCKADDR_IN:
		return len == sizeof(struct sockaddr_in) &&
		       sa->sa_family == AF_INET;
	case FI_SOCKADDR_IN6:
		return len == sizeof(struct sockaddr_in6) &&
		       sa->sa_family == AF_INET6;
	case FI_SOCKADDR:
		return len >= sizeof(sa->sa_family) &&
		       (sa->sa_family == AF_INET
				? len == sizeof(struct sockaddr_in)
				: sa->sa_family != AF_INET6 ||
					  len == sizeof(struct sockaddr_in6));
	case FI_ADDR_STR:
		/* the string and its NUL, nothing after */
		return strnlen(addr, len) == len - 1;
	default:
		return true;
	}
}

/*
 * fi_getinfo(3): "On output a provider shall return an address that
 * corresponds to the indicated fabric, domain, node, and/or service" --
 * with neither node nor FI_SOURCE that is the provider's default source,
 * in every entry, in the entry's own addr_format.
 */
static enum ft_result t_default_src(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *h = base_hints(), *info = NULL, *cur;
	int n = 0, ret;

	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, h, &info);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	for (cur = info; cur; cur = cur->next, n++) {
		UT_CHECK(cur->src_addr && cur->src_addrlen,
			 "entry %d (%s) has no source address", n,
			 cur->fabric_attr->prov_name);
		UT_CHECK(addr_fits(cur->addr_format, cur->src_addr,
				   cur->src_addrlen),
			 "entry %d: src_addr of %zu bytes is not a %s", n,
			 cur->src_addrlen,
			 fi_tostr(&cur->addr_format, FI_TYPE_ADDR_FORMAT));
	}
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

/* The default source is usable: two endpoints open from one info. */
static enum ft_result t_default_src_ep(void)
{
	enum ft_result res = FT_PASS;
	struct fid_ep *ep2 = NULL;
	char a1[256], a2[256];
	size_t l1 = sizeof(a1), l2 = sizeof(a2);
	fi_addr_t to;
	ssize_t pret;
	uint64_t start;
	int ret;

	ret = ft_unit_open_ep(FI_MSG);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_CHECK(ft.info->src_addr != NULL, "no default source address");
	UT_EXPECT_RET(fi_endpoint(ft.domain, ft.info, &ep2, NULL), 0);
	UT_EXPECT_RET(fi_ep_bind(ep2, &ft.av->fid, 0), 0);
	UT_EXPECT_RET(fi_ep_bind(ep2, &ft.txcq->fid, FI_TRANSMIT), 0);
	UT_EXPECT_RET(fi_ep_bind(ep2, &ft.rxcq->fid, FI_RECV), 0);
	UT_EXPECT_RET(fi_enable(ep2), 0);
	UT_EXPECT_RET(fi_getname(&ft.ep->fid, a1, &l1), 0);
	UT_EXPECT_RET(fi_getname(&ep2->fid, a2, &l2), 0);
	UT_CHECK(l1 != l2 || memcmp(a1, a2, l1), "both endpoints share a name");
	/* ep2 -> ft.ep */
	UT_EXPECT_RET(ft_alloc_msgs(64), 0);
	UT_EXPECT_RET(fi_av_insert(ft.av, a1, 1, &to, 0, NULL), 1);
	FT_POST_RETRY(pret, fi_recv(ft.ep, ft.rx_buf, 64, ft.desc,
				    FI_ADDR_UNSPEC, &ft.rx_ctx));
	UT_EXPECT_RET(pret, 0);
	FT_POST_RETRY(pret,
		      fi_send(ep2, ft.tx_buf, 32, ft.desc, to, &ft.tx_ctx));
	UT_EXPECT_RET(pret, 0);
	start = ft_now_us();
	while (ft.rx_done < 1 && !ft_timed_out(start, ft_opts.timeout)) {
		struct fi_cq_tagged_entry e;

		if (fi_cq_read(ft.rxcq, &e, 1) == 1)
			ft.rx_done++;
		fi_cq_read(ft.txcq, &e, 1);
	}
	UT_CHECK(ft.rx_done == 1, "message between the two never arrived");
out:
	FT_CLOSE_FID(ep2);
	ft_free_res();
	return res;
}

static enum ft_result t_attr_sanity(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *h = base_hints(), *info = NULL, *cur;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, h, &info);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	for (cur = info; cur; cur = cur->next) {
		UT_CHECK(cur->ep_attr->max_msg_size > 0, "max_msg_size 0");
		UT_CHECK(cur->tx_attr->size > 0 && cur->rx_attr->size > 0,
			 "queue size 0");
		UT_CHECK(cur->tx_attr->iov_limit > 0 &&
				 cur->rx_attr->iov_limit > 0,
			 "iov_limit 0");
		UT_CHECK(cur->domain_attr->cq_cnt > 0 &&
				 cur->domain_attr->ep_cnt > 0,
			 "cq_cnt/ep_cnt 0");
		UT_CHECK(cur->fabric_attr->prov_version != 0, "prov_version 0");
		UT_CHECK(FI_MAJOR(cur->fabric_attr->api_version) ==
				 FI_MAJOR_VERSION,
			 "api_version 0x%x", cur->fabric_attr->api_version);
		UT_CHECK((cur->tx_attr->caps & ~cur->caps) == 0,
			 "tx caps beyond info caps");
	}
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

static enum ft_result t_tostr(void)
{
	enum ft_result res = FT_PASS;
	struct fi_info *h = base_hints(), *info = NULL;
	const char *s;
	int ret;

	ret = fi_getinfo(FT_FIVERSION, NULL, NULL, 0, h, &info);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	s = fi_tostr(info, FI_TYPE_INFO);
	UT_CHECK(s && strstr(s, "fi_info") &&
			 strstr(s, info->fabric_attr->prov_name),
		 "fi_tostr output lacks fi_info/provider");
	s = fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE);
	UT_CHECK(s && strstr(s, "FI_EP_"), "ep type string '%s'", s);
out:
	fi_freeinfo(info);
	fi_freeinfo(h);
	return res;
}

static const struct ft_unit_test tests[] = {
	{"prov_filter", t_prov_filter, "results come from -p provider"},
	{"bad_version", t_bad_version, "newer major version -> -FI_ENOSYS"},
	{"bad_caps", t_bad_caps, "unknown capability bit -> -FI_ENODATA"},
	{"bad_prov_name", t_bad_prov, "unknown provider -> -FI_ENODATA"},
	/* man fi_getinfo: non-zero hints must match; Debian ignores names */
	{"bad_domain_name", t_bad_domain, "unknown domain -> ENODATA", true},
	{"bad_fabric_name", t_bad_fabric, "unknown fabric -> ENODATA", true},
	{"bad_ep_type", t_bad_ep_type, "invalid ep type -> -FI_ENODATA"},
	{"caps_superset", t_caps_superset, "results grant requested caps"},
	{"ep_type_match", t_ep_types, "ep type hint honoured"},
	{"allocinfo", t_allocinfo, "allocinfo zeroes all substructures"},
	{"dupinfo", t_dupinfo, "dupinfo deep copy"},
	{"dupinfo_null", t_dupinfo_null, "dupinfo(NULL) allocates"},
	{"freeinfo_null", t_freeinfo_null, "freeinfo(NULL) is a no-op"},
	{"source_addr", t_source_addr, "node/service/FI_SOURCE -> src_addr"},
	{"default_src", t_default_src, "every entry has a source address"},
	{"default_src_ep", t_default_src_ep, "endpoints open from it"},
	{"attr_sanity", t_attr_sanity, "returned attributes are sane"},
	{"tostr", t_tostr, "fi_tostr of info and ep type"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return ft_run_unit("getinfo_test", tests, argc, argv);
}
