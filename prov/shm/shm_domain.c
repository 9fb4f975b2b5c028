/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_domain.c - the shm domain and its address vector: util objects with
 * shm's endpoint constructor (poll sets too), and an FI_ADDR_STR AV whose
 * entries are only checked for shape at insert; peers are mapped lazily
 * on first send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm.h"

static int shm_av_validate(struct util_av *av, const void *addr)
{
	OFI_UNUSED(av);
	return shm_name_valid(addr);
}

static int shm_av_svc_to_addr(struct util_av *av, const char *node,
			      const char *service, void *addr)
{
	int n;

	OFI_UNUSED(av);
	if (node && !strncmp(node, SHM_ADDR_PREFIX, strlen(SHM_ADDR_PREFIX)))
		n = snprintf(addr, SHM_NAME_MAX, "%s", node);
	else if (node && service)
		n = snprintf(addr, SHM_NAME_MAX, SHM_ADDR_PREFIX "%s:%s", node,
			     service);
	else if (node || service)
		n = snprintf(addr, SHM_NAME_MAX, SHM_ADDR_PREFIX "%s",
			     node ? node : service);
	else
		return -FI_EINVAL;
	if (n < 0 || n >= SHM_NAME_MAX)
		return -FI_EINVAL;
	return shm_name_valid(addr);
}

static const struct util_av_attr shm_av_attr = {
	.addrlen = SHM_NAME_MAX,
	.validate = shm_av_validate,
	.svc_to_addr = shm_av_svc_to_addr,
};

int shm_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av, void *context)
{
	if (!attr)
		return -FI_EINVAL;
	return ofi_av_open(domain, attr, &shm_av_attr, av, context);
}

static const struct fi_ops_domain shm_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = shm_av_open,
	.cq_open = ofi_cq_open,
	.endpoint = shm_ep_open,
	.scalable_ep = fi_no_scalable_ep,
	.cntr_open = ofi_cntr_open,
	.poll_open = ofi_poll_open,
	.stx_ctx = fi_no_stx_context,
	.srx_ctx = fi_no_srx_context,
	.query_atomic = shm_query_atomic,
	.query_collective = ofi_query_collective,
	.endpoint2 = fi_no_endpoint2,
};

int shm_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context)
{
	struct util_fabric *uf;
	struct shm_domain *dom;
	int ret;

	if (!fabric || !info || !info->domain_attr || !domain)
		return -FI_EINVAL;
	if (info->domain_attr->name &&
	    strcmp(info->domain_attr->name, SHM_PROV_NAME))
		return -FI_EINVAL;
	uf = container_of(fabric, struct util_fabric, fabric_fid);
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = ofi_domain_init(uf, info, &dom->util, context);
	if (ret) {
		free(dom);
		return ret;
	}
	dom->util.domain_fid.ops = (struct fi_ops_domain *)&shm_domain_ops;
	*domain = &dom->util.domain_fid;
	return 0;
}
