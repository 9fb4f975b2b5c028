/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_common.h - fixtures shared by the prov/util unit tests: a stand-in
 * provider and a fabric + domain built directly on the util base objects.
 */
#ifndef UTIL_COMMON_H
#define UTIL_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ofi_util.h"

static struct fi_provider util_test_prov = {
	.version = FI_VERSION(1, 0),
	.fi_version = FI_VERSION(1, 17),
	.name = "utiltest",
};

struct util_env {
	struct util_fabric *fabric;
	struct util_domain *domain;
	struct fi_info *info;
};

static inline void util_env_open(struct util_env *env, uint32_t api,
				 int mr_mode, uint64_t caps,
				 uint32_t addr_format)
{
	struct fi_fabric_attr fattr = {.name = "utiltest", .api_version = api};
	struct fid_fabric *fab;

	memset(env, 0, sizeof(*env));
	assert_int_equal(
		ofi_fabric_create(&util_test_prov, &fattr, &fab, NULL, NULL),
		0);
	env->fabric = container_of(fab, struct util_fabric, fabric_fid);
	env->info = fi_allocinfo();
	assert_non_null(env->info);
	env->info->caps = caps;
	env->info->addr_format = addr_format;
	env->info->domain_attr->mr_mode = mr_mode;
	env->info->domain_attr->mr_iov_limit = 4;
	env->info->domain_attr->threading = FI_THREAD_SAFE;
	env->info->ep_attr->type = FI_EP_RDM;
	env->domain = calloc(1, sizeof(*env->domain));
	assert_non_null(env->domain);
	assert_int_equal(
		ofi_domain_init(env->fabric, env->info, env->domain, NULL), 0);
}

static inline void util_env_close(struct util_env *env)
{
	assert_int_equal(fi_close(&env->domain->domain_fid.fid), 0);
	assert_int_equal(fi_close(&env->fabric->fabric_fid.fid), 0);
	fi_freeinfo(env->info);
}

#endif /* UTIL_COMMON_H */
