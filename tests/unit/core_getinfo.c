/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * core_getinfo.c - unit tests of the provider registry, fi_getinfo hint
 * matching (src/getinfo_match.c), fi_dupinfo/fi_freeinfo, fi_fabric,
 * fi_open and the old-ABI entry points, using fake providers registered
 * with ofi_register_provider().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_ext.h>

#include "ofi.h"
#include "ofi_prov.h"

/* Old-ABI entry points from src/abi_compat.c. */
int ofi_getinfo_1_0(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info);
struct fi_info *ofi_dupinfo_1_0(const struct fi_info *info);
int ofi_fabric_1_0(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		   void *context);

#define V(maj, min) FI_VERSION(maj, min)
#define API	    V(1, 17)

/* What the fake provider "fakea" offers; tests edit it before asking. */
static struct fi_info *tmpl;
static int fakea_calls;
static int fakeb_calls;
static int fakea_ret;

static int fake_getinfo(struct fi_info *src, uint32_t version,
			struct fi_info **info)
{
	if (fakea_ret)
		return fakea_ret;
	*info = fi_dupinfo(src);
	return *info ? 0 : -FI_ENOMEM;
}

static int fakea_getinfo(uint32_t version, const char *node,
			 const char *service, uint64_t flags,
			 const struct fi_info *hints, struct fi_info **info)
{
	fakea_calls++;
	return fake_getinfo(tmpl, version, info);
}

static int fakeb_getinfo(uint32_t version, const char *node,
			 const char *service, uint64_t flags,
			 const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *b;

	fakeb_calls++;
	b = fi_allocinfo();
	if (!b)
		return -FI_ENOMEM;
	b->caps = FI_MSG | FI_SEND | FI_RECV;
	b->ep_attr->type = FI_EP_RDM;
	b->fabric_attr->name = strdup("fabb");
	b->domain_attr->name = strdup("domb");
	*info = b;
	return 0;
}

static struct fid_fabric fake_fabric_obj;
static struct fi_fabric_attr *fabric_seen;

static int fake_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		       void *context)
{
	fabric_seen = attr;
	memset(&fake_fabric_obj, 0, sizeof(fake_fabric_obj));
	fake_fabric_obj.fid.fclass = FI_CLASS_FABRIC;
	fake_fabric_obj.fid.context = context;
	*fabric = &fake_fabric_obj;
	return 0;
}

static int cleanup_calls;

static void fake_cleanup(void)
{
	cleanup_calls++;
}

static struct fi_provider fakea = {
	.version = V(3, 2),
	.fi_version = API,
	.name = "fakea",
	.getinfo = fakea_getinfo,
	.fabric = fake_fabric,
	.cleanup = fake_cleanup,
};

static struct fi_provider fakeb = {
	.version = V(1, 0),
	.fi_version = API,
	.name = "fakeb",
	.getinfo = fakeb_getinfo,
	.fabric = fake_fabric,
};

/* Registered only for the version tests. */
static struct fi_provider fakeold = {
	.version = V(1, 0),
	.fi_version = V(1, 5),
	.name = "fakeold",
	.getinfo = fakeb_getinfo,
	.fabric = fake_fabric,
};

static void reset_tmpl(void)
{
	fi_freeinfo(tmpl);
	tmpl = fi_allocinfo();
	assert_non_null(tmpl);
	tmpl->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | FI_READ |
		     FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
		     FI_MULTI_RECV | FI_SOURCE | FI_LOCAL_COMM |
		     FI_REMOTE_COMM | FI_HMEM;
	tmpl->mode = 0;
	tmpl->addr_format = FI_SOCKADDR_IN;
	tmpl->tx_attr->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_READ |
			      FI_WRITE | FI_HMEM;
	tmpl->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
	tmpl->tx_attr->comp_order = FI_ORDER_NONE;
	tmpl->tx_attr->inject_size = 64;
	tmpl->tx_attr->size = 1024;
	tmpl->tx_attr->iov_limit = 4;
	tmpl->tx_attr->rma_iov_limit = 4;
	tmpl->rx_attr->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_RECV |
			      FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV |
			      FI_SOURCE | FI_HMEM;
	tmpl->rx_attr->size = 1024;
	tmpl->rx_attr->iov_limit = 4;
	tmpl->rx_attr->total_buffered_recv = 4096;
	tmpl->ep_attr->type = FI_EP_RDM;
	tmpl->ep_attr->protocol = FI_PROTO_SOCK_TCP;
	tmpl->ep_attr->protocol_version = 2;
	tmpl->ep_attr->max_msg_size = 1 << 20;
	tmpl->ep_attr->mem_tag_format = 0xffffffffULL;
	tmpl->ep_attr->tx_ctx_cnt = 1;
	tmpl->ep_attr->rx_ctx_cnt = 1;
	tmpl->domain_attr->name = strdup("doma");
	tmpl->domain_attr->threading = FI_THREAD_DOMAIN;
	tmpl->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	tmpl->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	tmpl->domain_attr->resource_mgmt = FI_RM_ENABLED;
	tmpl->domain_attr->av_type = FI_AV_UNSPEC;
	tmpl->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_HMEM;
	tmpl->domain_attr->mr_key_size = 8;
	tmpl->domain_attr->cq_data_size = 8;
	tmpl->domain_attr->cq_cnt = 16;
	tmpl->domain_attr->ep_cnt = 16;
	tmpl->domain_attr->tx_ctx_cnt = 16;
	tmpl->domain_attr->rx_ctx_cnt = 16;
	tmpl->domain_attr->max_ep_tx_ctx = 1;
	tmpl->domain_attr->max_ep_rx_ctx = 1;
	tmpl->domain_attr->cntr_cnt = 8;
	tmpl->domain_attr->mr_iov_limit = 1;
	tmpl->domain_attr->mr_cnt = 100;
	tmpl->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	tmpl->fabric_attr->name = strdup("faba");
	fakea_ret = 0;
}

static int setup_all(void **state)
{
	setenv("FI_PROVIDER_PATH", "/nonexistent-dir", 1);
	unsetenv("FI_PROVIDER");
	/* Only the fakes: built-in providers would answer too. */
	ofi_init();
	ofi_unregister_provider("shm");
	ofi_unregister_provider("tcp");
	ofi_unregister_provider("sockets");
	assert_int_equal(ofi_register_provider(&fakea, NULL), 0);
	assert_int_equal(ofi_register_provider(&fakeb, NULL), 0);
	return 0;
}

static int teardown_all(void **state)
{
	fi_freeinfo(tmpl);
	tmpl = NULL;
	return 0;
}

static int setup(void **state)
{
	struct fi_info *hints;

	reset_tmpl();
	ofi_set_provider_filter(NULL);
	fakea_calls = fakeb_calls = 0;
	hints = fi_allocinfo();
	if (!hints)
		return -1;
	/* Like most applications: local MRs are fine, nothing else. */
	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	*state = hints;
	return 0;
}

static int teardown(void **state)
{
	fi_freeinfo(*state);
	return 0;
}

/* Runs fi_getinfo and returns fakea's first answer (or NULL). */
static struct fi_info *ask_v(uint32_t version, const struct fi_info *hints,
			     struct fi_info **all)
{
	struct fi_info *cur;
	int ret;

	ret = fi_getinfo(version, NULL, NULL, 0, hints, all);
	if (ret) {
		assert_int_equal(ret, -FI_ENODATA);
		assert_null(*all);
		return NULL;
	}
	for (cur = *all; cur; cur = cur->next) {
		if (!strcmp(cur->fabric_attr->prov_name, "fakea"))
			return cur;
	}
	return NULL;
}

static bool matches_v(uint32_t version, const struct fi_info *hints)
{
	struct fi_info *all = NULL;
	bool hit = ask_v(version, hints, &all) != NULL;

	fi_freeinfo(all);
	return hit;
}

static bool matches(const struct fi_info *hints)
{
	return matches_v(API, hints);
}

static void test_no_hints(void **state)
{
	struct fi_info *all = NULL, *a;

	a = ask_v(API, NULL, &all);
	assert_non_null(a);
	assert_string_equal(a->fabric_attr->prov_name, "fakea");
	assert_int_equal(a->fabric_attr->prov_version, V(3, 2));
	assert_int_equal(a->fabric_attr->api_version, API);
	assert_int_equal(a->caps, tmpl->caps);
	/* NULL hints: every cap, so every mr_mode bit, stays. */
	assert_int_equal(a->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_HMEM);
	assert_int_equal(fakea_calls, 1);
	assert_int_equal(fakeb_calls, 1);
	fi_freeinfo(all);
}

static void test_args(void **state)
{
	struct fi_info *info = (void *)1;

	assert_int_equal(fi_getinfo(API, NULL, NULL, 0, NULL, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_getinfo(V(2, 0), NULL, NULL, 0, NULL, &info),
			 -FI_ENOSYS);
	assert_null(info);
	assert_int_equal(fi_getinfo(V(1, 18), NULL, NULL, 0, NULL, &info),
			 -FI_ENOSYS);
	assert_int_equal(fi_getinfo(V(0, 9), NULL, NULL, 0, NULL, &info),
			 -FI_ENOSYS);
	assert_int_equal(fi_getinfo(API, NULL, NULL, FI_SOURCE, NULL, &info),
			 -FI_EINVAL);
	assert_int_equal(fi_getinfo(API, NULL, "1234", FI_SOURCE, NULL, &info),
			 0);
	fi_freeinfo(info);
	assert_int_equal(fi_version(), API);
}

static void test_caps(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *a;

	/* Open caps: FI_HMEM is dropped since FI_MR_HMEM is not accepted. */
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->caps, tmpl->caps & ~FI_HMEM);
	assert_false(a->tx_attr->caps & FI_HMEM);
	assert_int_equal(a->domain_attr->mr_mode, FI_MR_LOCAL);
	fi_freeinfo(all);
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_HMEM;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->caps, tmpl->caps);
	assert_int_equal(a->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_HMEM);
	fi_freeinfo(all);
	hints->domain_attr->mr_mode = FI_MR_LOCAL;

	hints->caps = FI_ATOMIC;
	assert_false(matches(hints));
	hints->caps = FI_MSG | FI_COLLECTIVE;
	assert_false(matches(hints));
	hints->caps = FI_MSG | FI_RMA_EVENT; /* secondary, not offered */
	assert_false(matches(hints));

	hints->caps = FI_MSG;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	/* Primary: only what was asked; modifiers implied; secondary kept. */
	assert_int_equal(a->caps, FI_MSG | FI_SEND | FI_RECV | FI_MULTI_RECV |
					  FI_SOURCE | FI_LOCAL_COMM |
					  FI_REMOTE_COMM);
	assert_int_equal(a->tx_attr->caps, FI_MSG | FI_SEND);
	assert_int_equal(a->rx_attr->caps,
			 FI_MSG | FI_RECV | FI_MULTI_RECV | FI_SOURCE);
	/* FI_HMEM not asked: FI_MR_HMEM no longer required. */
	assert_int_equal(a->domain_attr->mr_mode, FI_MR_LOCAL);
	fi_freeinfo(all);

	hints->caps = FI_MSG | FI_SEND;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_true(a->caps & FI_SEND);
	assert_false(a->caps & FI_RECV);
	assert_false(a->caps & FI_TAGGED);
	fi_freeinfo(all);

	hints->caps = FI_RMA | FI_HMEM;
	hints->domain_attr->mr_mode = FI_MR_HMEM | FI_MR_LOCAL;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->caps & OFI_CAP_MODIFIERS,
			 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
	assert_int_equal(a->domain_attr->mr_mode, FI_MR_HMEM | FI_MR_LOCAL);
	fi_freeinfo(all);
}

static void test_mode(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *a;

	tmpl->mode = FI_CONTEXT;
	hints->mode = 0;
	assert_false(matches(hints));
	hints->mode = FI_CONTEXT2;
	assert_false(matches(hints));
	hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->mode, FI_CONTEXT);
	fi_freeinfo(all);

	a = ask_v(API, NULL, &all);
	assert_non_null(a);
	assert_int_equal(a->mode, FI_CONTEXT);
	fi_freeinfo(all);

	/* tx_attr mode needs are checked against the tx hint (or mode). */
	tmpl->mode = 0;
	tmpl->tx_attr->mode = FI_MSG_PREFIX;
	hints->mode = 0;
	assert_false(matches(hints));
	hints->tx_attr->mode = FI_MSG_PREFIX;
	assert_true(matches(hints));
	hints->tx_attr->mode = 0;
	hints->mode = FI_MSG_PREFIX;
	assert_true(matches(hints));
	tmpl->tx_attr->mode = 0;
	tmpl->rx_attr->mode = FI_CONTEXT;
	assert_false(matches(hints));
	hints->rx_attr->mode = FI_CONTEXT;
	assert_true(matches(hints));
}

static void test_ep_type_addr_format(void **state)
{
	struct fi_info *hints = *state;

	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	assert_true(matches(hints));
	hints->ep_attr->type = FI_EP_MSG;
	assert_false(matches(hints));
	hints->ep_attr->type = FI_EP_RDM;
	assert_true(matches(hints));

	hints->addr_format = FI_SOCKADDR_IN6;
	assert_false(matches(hints));
	hints->addr_format = FI_SOCKADDR;
	assert_true(matches(hints));
	hints->addr_format = FI_SOCKADDR_IN;
	assert_true(matches(hints));

	hints->ep_attr->protocol = FI_PROTO_UDP;
	assert_false(matches(hints));
	hints->ep_attr->protocol = FI_PROTO_SOCK_TCP;
	hints->ep_attr->protocol_version = 3;
	assert_false(matches(hints));
	hints->ep_attr->protocol_version = 2;
	assert_true(matches(hints));
}

static void test_names(void **state)
{
	struct fi_info *hints = *state;

	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	hints->fabric_attr->name = strdup("fabx");
	assert_false(matches(hints));
	free(hints->fabric_attr->name);
	hints->fabric_attr->name = strdup("faba");
	assert_true(matches(hints));

	hints->domain_attr->name = strdup("domx");
	assert_false(matches(hints));
	free(hints->domain_attr->name);
	hints->domain_attr->name = strdup("doma");
	assert_true(matches(hints));

	hints->fabric_attr->prov_version = V(3, 3);
	assert_false(matches(hints));
	hints->fabric_attr->prov_version = V(3, 2);
	assert_true(matches(hints));
}

static void test_prov_name(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *cur;
	static const struct {
		const char *want;
		bool a, b;
	} cases[] = {
		{"fakea", true, false},		{"FAKEB", false, true},
		{"fakea,fakeb", true, true},	{"^fakea", false, true},
		{"fakec", false, false},	{"fakea;util", false, false},
		{"^fakea,fakeb", false, false},
	};
	size_t i;
	bool a, b;

	for (i = 0; i < OFI_ARRAY_SIZE(cases); i++) {
		hints->fabric_attr->prov_name = strdup(cases[i].want);
		fi_getinfo(API, NULL, NULL, 0, hints, &all);
		a = b = false;
		for (cur = all; cur; cur = cur->next) {
			a = a || !strcmp(cur->fabric_attr->prov_name, "fakea");
			b = b || !strcmp(cur->fabric_attr->prov_name, "fakeb");
		}
		fi_freeinfo(all);
		all = NULL;
		free(hints->fabric_attr->prov_name);
		hints->fabric_attr->prov_name = NULL;
		assert_int_equal(a, cases[i].a);
		assert_int_equal(b, cases[i].b);
	}
	/* Providers left out by name are not even asked. */
	fakea_calls = 0;
	hints->fabric_attr->prov_name = strdup("fakeb");
	assert_false(matches(hints));
	assert_int_equal(fakea_calls, 0);
}

static void test_prov_name_layered(void **state)
{
	assert_true(ofi_prov_name_match("tcp", "tcp;ofi_rxm"));
	assert_true(ofi_prov_name_match("ofi_rxm", "tcp;ofi_rxm"));
	assert_true(ofi_prov_name_match("ofi_rxm;tcp", "tcp;ofi_rxm"));
	assert_false(ofi_prov_name_match("ofi_rxm;verbs", "tcp;ofi_rxm"));
	assert_false(ofi_prov_name_match("tcp;ofi_rxm", "tcp"));
	assert_true(ofi_prov_name_match("shm,tcp;ofi_rxm", "tcp;ofi_rxm"));
	assert_false(ofi_prov_name_match("^tcp", "tcp;ofi_rxm"));
	assert_true(ofi_prov_name_match(NULL, "x"));
	assert_false(ofi_prov_name_match("x", NULL));
}

static void test_mr_mode(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *a;

	/* 1.5+: the application must allow every bit the provider needs. */
	hints->domain_attr->mr_mode = 0;
	assert_false(matches(hints));
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR;
	assert_false(matches(hints));
	hints->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->domain_attr->mr_mode, FI_MR_LOCAL);
	assert_false(a->mode & FI_LOCAL_MR);
	fi_freeinfo(all);

	tmpl->domain_attr->mr_mode = FI_MR_RAW;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	assert_true(matches(hints));
	tmpl->domain_attr->mr_mode = 0;
	hints->domain_attr->mr_mode = 0;
	assert_true(matches(hints));
}

static void test_mr_mode_old(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *a;

	/* Before 1.5: FI_MR_LOCAL needs the FI_LOCAL_MR mode bit. */
	tmpl->domain_attr->mr_mode = FI_MR_LOCAL | OFI_MR_BASIC_MAP;
	hints->domain_attr->mr_mode = FI_MR_UNSPEC;
	assert_false(matches_v(V(1, 4), hints));
	hints->mode = FI_LOCAL_MR;
	a = ask_v(V(1, 4), hints, &all);
	assert_non_null(a);
	assert_int_equal(a->domain_attr->mr_mode, FI_MR_BASIC);
	assert_true(a->mode & FI_LOCAL_MR);
	assert_int_equal(a->fabric_attr->api_version, V(1, 4));
	fi_freeinfo(all);

	hints->domain_attr->mr_mode = FI_MR_SCALABLE;
	assert_false(matches_v(V(1, 4), hints));
	hints->domain_attr->mr_mode = FI_MR_BASIC;
	assert_true(matches_v(V(1, 4), hints));
	/* Old values are honoured by new API versions too. */
	assert_true(matches_v(API, hints));

	tmpl->domain_attr->mr_mode = 0;
	hints->domain_attr->mr_mode = FI_MR_SCALABLE;
	a = ask_v(V(1, 4), hints, &all);
	assert_non_null(a);
	assert_int_equal(a->domain_attr->mr_mode, FI_MR_SCALABLE);
	fi_freeinfo(all);

	/* Bits with no pre-1.5 form rule the provider out. */
	tmpl->domain_attr->mr_mode = FI_MR_RAW;
	hints->domain_attr->mr_mode = FI_MR_UNSPEC;
	assert_false(matches_v(V(1, 4), hints));
	assert_false(matches_v(V(1, 4), NULL));

	assert_int_equal(ofi_mr_mode_bits(API, FI_MR_BASIC), OFI_MR_BASIC_MAP);
	assert_int_equal(ofi_mr_mode_bits(API, FI_MR_SCALABLE), 0);
	assert_int_equal(ofi_mr_mode_bits(API, FI_MR_LOCAL | FI_MR_RAW),
			 FI_MR_LOCAL | FI_MR_RAW);
}

static void test_domain_modes(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *a;

	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	assert_false(matches(hints));
	hints->domain_attr->threading = FI_THREAD_COMPLETION;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->domain_attr->threading, FI_THREAD_COMPLETION);
	fi_freeinfo(all);
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	assert_true(matches(hints));

	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	assert_false(matches(hints));
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	assert_false(matches(hints));
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	assert_true(matches(hints));

	tmpl->domain_attr->av_type = FI_AV_MAP;
	hints->domain_attr->av_type = FI_AV_TABLE;
	assert_false(matches(hints));
	hints->domain_attr->av_type = FI_AV_MAP;
	assert_true(matches(hints));
	tmpl->domain_attr->av_type = FI_AV_UNSPEC;
	hints->domain_attr->av_type = FI_AV_TABLE;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->domain_attr->av_type, FI_AV_TABLE);
	fi_freeinfo(all);

	tmpl->domain_attr->resource_mgmt = FI_RM_DISABLED;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	assert_false(matches(hints));
	hints->domain_attr->resource_mgmt = FI_RM_DISABLED;
	assert_true(matches(hints));

	hints->domain_attr->caps = FI_SHARED_AV;
	assert_false(matches(hints));
	hints->domain_attr->caps = FI_LOCAL_COMM;
	assert_true(matches(hints));

	tmpl->domain_attr->mode = FI_RESTRICTED_COMP;
	assert_false(matches(hints));
	hints->domain_attr->mode = FI_RESTRICTED_COMP;
	assert_true(matches(hints));
}

/* Each limit: one above the provider's maximum fails, equal passes. */
#define LIMIT_CASE(hints, attr, field)                                         \
	do {                                                                   \
		(hints)->attr->field = tmpl->attr->field + 1;                  \
		assert_false(matches(hints));                                  \
		(hints)->attr->field = tmpl->attr->field;                      \
		assert_true(matches(hints));                                   \
	} while (0)

static void test_limits(void **state)
{
	struct fi_info *hints = *state;

	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	LIMIT_CASE(hints, tx_attr, inject_size);
	LIMIT_CASE(hints, tx_attr, size);
	LIMIT_CASE(hints, tx_attr, iov_limit);
	LIMIT_CASE(hints, tx_attr, rma_iov_limit);
	LIMIT_CASE(hints, rx_attr, size);
	LIMIT_CASE(hints, rx_attr, iov_limit);
	LIMIT_CASE(hints, rx_attr, total_buffered_recv);
	LIMIT_CASE(hints, ep_attr, max_msg_size);
	LIMIT_CASE(hints, ep_attr, tx_ctx_cnt);
	LIMIT_CASE(hints, ep_attr, rx_ctx_cnt);
	LIMIT_CASE(hints, domain_attr, cq_cnt);
	LIMIT_CASE(hints, domain_attr, ep_cnt);
	LIMIT_CASE(hints, domain_attr, cq_data_size);
	LIMIT_CASE(hints, domain_attr, mr_key_size);
	LIMIT_CASE(hints, domain_attr, tx_ctx_cnt);
	LIMIT_CASE(hints, domain_attr, rx_ctx_cnt);
	LIMIT_CASE(hints, domain_attr, max_ep_tx_ctx);
	LIMIT_CASE(hints, domain_attr, max_ep_rx_ctx);
	LIMIT_CASE(hints, domain_attr, cntr_cnt);
	LIMIT_CASE(hints, domain_attr, mr_iov_limit);
	LIMIT_CASE(hints, domain_attr, mr_cnt);

	hints->ep_attr->mem_tag_format = 0x1ffffffffULL;
	assert_false(matches(hints));
	hints->ep_attr->mem_tag_format = 0xaaaaULL;
	assert_true(matches(hints));
}

static void test_orders_and_attr_caps(void **state)
{
	struct fi_info *hints = *state;

	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	hints->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_WAW;
	assert_false(matches(hints));
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	assert_true(matches(hints));
	hints->tx_attr->comp_order = FI_ORDER_STRICT;
	assert_false(matches(hints));
	hints->tx_attr->comp_order = 0;
	hints->rx_attr->msg_order = FI_ORDER_RAR;
	assert_false(matches(hints));
	hints->rx_attr->msg_order = 0;

	hints->tx_attr->caps = FI_ATOMIC;
	assert_false(matches(hints));
	hints->tx_attr->caps = FI_MSG | FI_SEND;
	assert_true(matches(hints));
	hints->rx_attr->caps = FI_MSG | FI_REMOTE_READ | FI_DIRECTED_RECV;
	assert_false(matches(hints));
	hints->rx_attr->caps = FI_MSG | FI_RECV;
	assert_true(matches(hints));

	tmpl->tx_attr->op_flags = FI_COMPLETION;
	hints->tx_attr->op_flags = FI_INJECT_COMPLETE;
	assert_false(matches(hints));
	hints->tx_attr->op_flags = FI_COMPLETION;
	assert_true(matches(hints));
}

/* Supported op flags in, the defaults asked for (or none) out. */
static void test_op_flags_result(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *a;

	tmpl->tx_attr->op_flags = FI_COMPLETION | FI_DELIVERY_COMPLETE;
	tmpl->rx_attr->op_flags = FI_COMPLETION | FI_MULTI_RECV;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->tx_attr->op_flags, FI_DELIVERY_COMPLETE);
	assert_int_equal(a->rx_attr->op_flags, 0);
	fi_freeinfo(all);
	all = NULL;
	a = ask_v(API, NULL, &all);
	assert_non_null(a);
	assert_int_equal(a->tx_attr->op_flags, 0);
	fi_freeinfo(all);
}

/* FI_INJECT is supported wherever the candidate has an inject size. */
static void test_op_flags_inject(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *a;

	tmpl->tx_attr->op_flags = FI_COMPLETION | FI_INJECT_COMPLETE;
	hints->tx_attr->op_flags = FI_INJECT | FI_INJECT_COMPLETE;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->tx_attr->op_flags, FI_INJECT | FI_INJECT_COMPLETE);
	fi_freeinfo(all);
	tmpl->tx_attr->inject_size = 0;
	assert_false(matches(hints));
	hints->tx_attr->op_flags = FI_INJECT_COMPLETE;
	assert_true(matches(hints));
	/* not an rx flag */
	tmpl->tx_attr->inject_size = 64;
	hints->rx_attr->op_flags = FI_INJECT;
	assert_false(matches(hints));
}

static void test_auth_key(void **state)
{
	struct fi_info *hints = *state, *all = NULL, *a;
	uint8_t key[8] = {1, 2, 3, 4, 5, 6, 7, 8};

	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	hints->domain_attr->auth_key = malloc(sizeof(key));
	memcpy(hints->domain_attr->auth_key, key, sizeof(key));
	hints->domain_attr->auth_key_size = sizeof(key);
	assert_false(matches(hints));
	tmpl->domain_attr->auth_key_size = 4;
	assert_false(matches(hints));
	tmpl->domain_attr->auth_key_size = 16;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_int_equal(a->domain_attr->auth_key_size, sizeof(key));
	assert_ptr_not_equal(a->domain_attr->auth_key,
			     hints->domain_attr->auth_key);
	assert_memory_equal(a->domain_attr->auth_key, key, sizeof(key));
	fi_freeinfo(all);

	hints->ep_attr->auth_key = malloc(sizeof(key));
	memcpy(hints->ep_attr->auth_key, key, sizeof(key));
	hints->ep_attr->auth_key_size = sizeof(key);
	assert_false(matches(hints));
	tmpl->ep_attr->auth_key_size = 8;
	a = ask_v(API, hints, &all);
	assert_non_null(a);
	assert_memory_equal(a->ep_attr->auth_key, key, sizeof(key));
	fi_freeinfo(all);
}

static void test_register(void **state)
{
	struct fi_provider bad = fakea;
	struct fi_info *all = NULL;
	int before = fakea_calls;

	bad.name = NULL;
	assert_int_equal(ofi_register_provider(&bad, NULL), -FI_EINVAL);
	bad.name = "fakebad";
	bad.getinfo = NULL;
	assert_int_equal(ofi_register_provider(&bad, NULL), -FI_EINVAL);
	bad.getinfo = fakeb_getinfo;
	bad.fi_version = V(2, 0);
	assert_int_equal(ofi_register_provider(&bad, NULL), -FI_ENOSYS);
	bad.fi_version = V(1, 18);
	assert_int_equal(ofi_register_provider(&bad, NULL), -FI_ENOSYS);
	assert_null(ofi_find_provider("fakebad"));

	/* Same name: the first registration stays in charge. */
	bad.name = "FAKEA";
	bad.fi_version = API;
	assert_int_equal(ofi_register_provider(&bad, NULL), -FI_EALREADY);
	assert_ptr_equal(ofi_find_provider("fakea"), &fakea);
	fakeb_calls = 0;
	fi_getinfo(API, NULL, NULL, 0, NULL, &all);
	fi_freeinfo(all);
	assert_int_equal(fakea_calls, before + 1);
	assert_int_equal(fakeb_calls, 1);
}

static void test_prov_api_version(void **state)
{
	struct fi_info *all = NULL, *cur;
	int seen;

	assert_int_equal(ofi_register_provider(&fakeold, NULL), 0);
	for (int pass = 0; pass < 2; pass++) {
		uint32_t version = pass ? V(1, 5) : API;

		assert_int_equal(fi_getinfo(version, NULL, NULL, 0, NULL, &all),
				 0);
		seen = 0;
		for (cur = all; cur; cur = cur->next)
			seen += !strcmp(cur->fabric_attr->prov_name, "fakeold");
		fi_freeinfo(all);
		assert_int_equal(seen, pass ? 1 : 0);
	}
	cleanup_calls = 0;
	assert_int_equal(ofi_unregister_provider("fakeold"), 0);
	assert_int_equal(ofi_unregister_provider("fakeold"), -FI_ENOENT);
	assert_null(ofi_find_provider("fakeold"));
}

static void test_provider_filter(void **state)
{
	struct fi_fabric_attr attr = {.name = "faba", .prov_name = "fakea"};
	struct fid_fabric *fabric;
	struct fi_info *hints = *state;

	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	assert_int_equal(ofi_set_provider_filter("fakeb"), 0);
	fakea_calls = 0;
	assert_false(matches(hints));
	assert_int_equal(fakea_calls, 0);
	assert_int_equal(fi_fabric(&attr, &fabric, NULL), -FI_ENODEV);

	ofi_set_provider_filter("^fakea");
	assert_false(matches(hints));
	ofi_set_provider_filter("^fakeb,fakec");
	assert_true(matches(hints));
	ofi_set_provider_filter("fakec,FAKEA");
	assert_true(matches(hints));
	ofi_set_provider_filter("");
	assert_true(matches(hints));
	ofi_set_provider_filter(NULL);
}

static void test_prov_attr_only(void **state)
{
	struct fi_info *all = NULL, *cur;
	int na = 0, nb = 0;

	fakea_ret = -FI_ENODATA; /* no hardware: still listed */
	assert_int_equal(
		fi_getinfo(API, NULL, NULL, FI_PROV_ATTR_ONLY, NULL, &all), 0);
	for (cur = all; cur; cur = cur->next) {
		assert_non_null(cur->fabric_attr->prov_name);
		if (!strcmp(cur->fabric_attr->prov_name, "fakea")) {
			na++;
			assert_int_equal(cur->fabric_attr->prov_version,
					 V(3, 2));
			assert_int_equal(cur->caps, 0);
		}
		nb += !strcmp(cur->fabric_attr->prov_name, "fakeb");
	}
	fi_freeinfo(all);
	assert_int_equal(na, 1);
	assert_int_equal(nb, 1);
	assert_int_equal(fakea_calls, 0);
	assert_int_equal(fakeb_calls, 0);
}

static void test_provider_error(void **state)
{
	struct fi_info *all = NULL;

	fakea_ret = -FI_EIO;
	assert_int_equal(fi_getinfo(API, NULL, NULL, 0, NULL, &all), 0);
	assert_non_null(all);
	assert_string_equal(all->fabric_attr->prov_name, "fakeb");
	assert_null(all->next);
	fi_freeinfo(all);
}

static void fill_nic(struct fid_nic *nic, struct fi_device_attr *dev,
		     struct fi_bus_attr *bus, struct fi_link_attr *link)
{
	memset(nic, 0, sizeof(*nic));
	nic->fid.fclass = FI_CLASS_NIC;
	dev->name = "eth9";
	dev->device_id = "0x1234";
	dev->device_version = "1";
	dev->vendor_id = "0x8086";
	dev->driver = "fake";
	dev->firmware = "9.9";
	bus->bus_type = FI_BUS_PCI;
	bus->attr.pci.bus_id = 3;
	link->address = "10.0.0.1";
	link->mtu = 1500;
	link->speed = 1000;
	link->state = FI_LINK_UP;
	link->network_type = "Ethernet";
	nic->device_attr = dev;
	nic->bus_attr = bus;
	nic->link_attr = link;
}

static void test_dupinfo(void **state)
{
	struct fi_info *orig = tmpl, *dup, *dup2;
	struct fi_device_attr dev = {0};
	struct fi_bus_attr bus = {0};
	struct fi_link_attr link = {0};
	struct fid_nic nic;
	uint8_t addr[16] = {7}, key[4] = {9, 9, 9, 9};

	orig->src_addr = malloc(sizeof(addr));
	memcpy(orig->src_addr, addr, sizeof(addr));
	orig->src_addrlen = sizeof(addr);
	orig->dest_addr = malloc(8);
	memset(orig->dest_addr, 5, 8);
	orig->dest_addrlen = 8;
	orig->fabric_attr->prov_name = strdup("fakea");
	orig->domain_attr->auth_key = malloc(4);
	memcpy(orig->domain_attr->auth_key, key, 4);
	orig->domain_attr->auth_key_size = 4;
	orig->ep_attr->auth_key = malloc(4);
	memcpy(orig->ep_attr->auth_key, key, 4);
	orig->ep_attr->auth_key_size = 4;
	fill_nic(&nic, &dev, &bus, &link);
	orig->nic = &nic;

	dup = fi_dupinfo(orig);
	orig->nic = NULL; /* the original's nic is on the stack */
	assert_non_null(dup);
	assert_null(dup->next);
	assert_ptr_not_equal(dup->src_addr, orig->src_addr);
	assert_memory_equal(dup->src_addr, addr, sizeof(addr));
	assert_ptr_not_equal(dup->dest_addr, orig->dest_addr);
	assert_ptr_not_equal(dup->tx_attr, orig->tx_attr);
	assert_memory_equal(dup->tx_attr, orig->tx_attr, sizeof(*dup->tx_attr));
	assert_ptr_not_equal(dup->rx_attr, orig->rx_attr);
	assert_ptr_not_equal(dup->domain_attr->name, orig->domain_attr->name);
	assert_string_equal(dup->domain_attr->name, "doma");
	assert_ptr_not_equal(dup->fabric_attr->name, orig->fabric_attr->name);
	assert_string_equal(dup->fabric_attr->prov_name, "fakea");
	assert_ptr_not_equal(dup->domain_attr->auth_key,
			     orig->domain_attr->auth_key);
	assert_ptr_not_equal(dup->ep_attr->auth_key, orig->ep_attr->auth_key);
	assert_non_null(dup->nic);
	assert_ptr_not_equal(dup->nic->device_attr->name, dev.name);
	assert_string_equal(dup->nic->device_attr->firmware, "9.9");
	assert_string_equal(dup->nic->link_attr->network_type, "Ethernet");
	assert_int_equal(dup->nic->bus_attr->attr.pci.bus_id, 3);

	/* Changing the copy leaves the original alone. */
	dup->domain_attr->name[0] = 'X';
	((uint8_t *)dup->src_addr)[0] = 0xff;
	dup->domain_attr->auth_key[0] = 0;
	dup->tx_attr->size = 1;
	dup->caps = 0;
	assert_string_equal(orig->domain_attr->name, "doma");
	assert_int_equal(((uint8_t *)orig->src_addr)[0], 7);
	assert_int_equal(orig->domain_attr->auth_key[0], 9);
	assert_int_equal(orig->tx_attr->size, 1024);
	assert_int_not_equal(orig->caps, 0);

	/* A copy of a copy: the core's nic copies itself. */
	dup2 = fi_dupinfo(dup);
	assert_non_null(dup2);
	assert_ptr_not_equal(dup2->nic, dup->nic);
	assert_string_equal(dup2->nic->device_attr->name, "eth9");
	fi_freeinfo(dup);
	fi_freeinfo(dup2);

	/* Missing attributes stay missing. */
	free(orig->rx_attr);
	orig->rx_attr = NULL;
	dup = fi_dupinfo(orig);
	assert_non_null(dup);
	assert_null(dup->rx_attr);
	assert_non_null(dup->tx_attr);
	fi_freeinfo(dup);
}

static void test_allocinfo(void **state)
{
	struct fi_info *info = fi_allocinfo();

	assert_non_null(info);
	assert_non_null(info->tx_attr);
	assert_non_null(info->rx_attr);
	assert_non_null(info->ep_attr);
	assert_non_null(info->domain_attr);
	assert_non_null(info->fabric_attr);
	assert_null(info->nic);
	assert_null(info->next);
	assert_int_equal(info->caps, 0);
	assert_null(info->fabric_attr->prov_name);
	fi_freeinfo(info);
	fi_freeinfo(NULL);
}

static void test_fabric(void **state)
{
	struct fi_fabric_attr attr = {
		.name = "faba", .prov_name = "fakea", .api_version = V(1, 9)};
	struct fid_fabric *fabric = NULL;
	int ctx;

	assert_int_equal(fi_fabric(NULL, &fabric, NULL), -FI_EINVAL);
	assert_int_equal(fi_fabric(&attr, NULL, NULL), -FI_EINVAL);
	assert_int_equal(fi_fabric(&attr, &fabric, &ctx), 0);
	assert_ptr_equal(fabric, &fake_fabric_obj);
	assert_ptr_equal(fabric->fid.context, &ctx);
	assert_int_equal(fabric->api_version, V(1, 9));
	attr.prov_name = "nosuch";
	assert_int_equal(fi_fabric(&attr, &fabric, NULL), -FI_ENODEV);
	/* A layered name finds the provider that is part of it. */
	attr.prov_name = "fakea;ofi_util";
	assert_int_equal(fi_fabric(&attr, &fabric, NULL), 0);
}

static int user_enabled(const struct fi_provider *prov, enum fi_log_level level,
			enum fi_log_subsys subsys, uint64_t flags)
{
	return 0;
}

static int user_ready(const struct fi_provider *prov, enum fi_log_level level,
		      enum fi_log_subsys subsys, uint64_t flags,
		      uint64_t *showtime)
{
	return 0;
}

static void user_log(const struct fi_provider *prov, enum fi_log_level level,
		     enum fi_log_subsys subsys, const char *func, int line,
		     const char *msg)
{
}

static void test_open(void **state)
{
	struct fi_ops_log ops = {
		.enabled = user_enabled, .ready = user_ready, .log = user_log};
	struct fid_logging log = {.ops = &ops};
	struct fid *fid, *fid2;

	assert_int_equal(fi_open(API, "nosuch", NULL, 0, 0, &fid, NULL),
			 -FI_ENOSYS);
	assert_int_equal(fi_open(API, NULL, NULL, 0, 0, &fid, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_open(V(2, 0), "logging", NULL, 0, 0, &fid, NULL),
			 -FI_ENOSYS);
	assert_int_equal(fi_open(API, "logging", NULL, 0, 0, &fid, NULL), 0);
	assert_int_equal(fid->fclass, FI_CLASS_LOG);
	assert_int_equal(fi_open(API, "logging", NULL, 0, 0, &fid2, NULL),
			 -FI_EBUSY);
	assert_int_equal(fi_close(fid), 0);

	/* Importing user ops that log nothing silences warnings. */
	setenv("FI_LOG_LEVEL", "warn", 1);
	ofi_log_init();
	assert_int_equal(fi_import_log(API, 0, &log), 0);
	assert_false(fi_log_enabled(&fakea, FI_LOG_WARN, FI_LOG_CORE));
	ofi_log_fini(); /* back to the default ops */
	ofi_log_init();
	assert_true(fi_log_enabled(&fakea, FI_LOG_WARN, FI_LOG_CORE));
	unsetenv("FI_LOG_LEVEL");
	ofi_log_init();
}

/* ABI 1.0 structs end before the fields later ABIs appended. */
static void test_abi_1_0(void **state)
{
	size_t info_sz = offsetof(struct fi_info, nic);
	size_t ep_sz = offsetof(struct fi_ep_attr, auth_key_size);
	size_t dom_sz = offsetof(struct fi_domain_attr, cntr_cnt);
	size_t fab_sz = offsetof(struct fi_fabric_attr, api_version);
	size_t tx_sz = offsetof(struct fi_tx_attr, tclass);
	struct fi_info *hints = calloc(1, info_sz), *all = NULL, *cur, *dup;
	struct fid_fabric *fabric;
	struct fi_fabric_attr *fattr;
	bool found = false;

	assert_non_null(hints);
	hints->ep_attr = calloc(1, ep_sz);
	hints->domain_attr = calloc(1, dom_sz);
	hints->fabric_attr = calloc(1, fab_sz);
	hints->tx_attr = calloc(1, tx_sz);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_LOCAL_MR;
	hints->domain_attr->mr_mode = FI_MR_BASIC;
	hints->fabric_attr->prov_name = "fakea";
	tmpl->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR;

	assert_int_equal(ofi_getinfo_1_0(V(1, 4), NULL, NULL, 0, hints, &all),
			 0);
	for (cur = all; cur; cur = cur->next)
		found = found || !strcmp(cur->fabric_attr->prov_name, "fakea");
	assert_true(found);
	assert_int_equal(all->domain_attr->mr_mode, FI_MR_BASIC);

	dup = ofi_dupinfo_1_0(hints);
	assert_non_null(dup);
	assert_string_equal(dup->fabric_attr->prov_name, "fakea");
	assert_int_equal(dup->caps, FI_MSG);
	assert_null(dup->ep_attr->auth_key);
	fi_freeinfo(dup);
	fi_freeinfo(all);

	fattr = calloc(1, fab_sz);
	fattr->name = "faba";
	fattr->prov_name = "fakea";
	assert_int_equal(ofi_fabric_1_0(fattr, &fabric, NULL), 0);
	assert_int_equal(fabric->api_version, V(1, 4));
	assert_int_equal(ofi_fabric_1_0(NULL, &fabric, NULL), -FI_EINVAL);
	free(fattr);

	free(hints->ep_attr);
	free(hints->domain_attr);
	free(hints->fabric_attr);
	free(hints->tx_attr);
	free(hints);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_no_hints),
		T(test_args),
		T(test_caps),
		T(test_mode),
		T(test_ep_type_addr_format),
		T(test_names),
		T(test_prov_name),
		T(test_prov_name_layered),
		T(test_mr_mode),
		T(test_mr_mode_old),
		T(test_domain_modes),
		T(test_limits),
		T(test_orders_and_attr_caps),
		T(test_op_flags_result),
		T(test_op_flags_inject),
		T(test_auth_key),
		T(test_register),
		T(test_prov_api_version),
		T(test_provider_filter),
		T(test_prov_attr_only),
		T(test_provider_error),
		T(test_dupinfo),
		T(test_allocinfo),
		T(test_fabric),
		T(test_open),
		T(test_abi_1_0),
#undef T
	};

	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
