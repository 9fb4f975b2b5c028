/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_fabric.c - the util_fabric base object: name, provider, API version
 * (which decides the err_data rules of readerr), reference count of the
 * domains/EQs/wait sets opened on it, and its default ops.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_util.h"

static int util_fabric_close_fid(struct fid *fid)
{
	struct util_fabric *fabric =
		container_of(fid, struct util_fabric, fabric_fid.fid);
	int ret;

	ret = ofi_fabric_close(fabric);
	if (ret)
		return ret;
	free(fabric);
	return 0;
}

OFI_CLOSE_ONLY_FI_OPS(util_fabric_fi_ops, util_fabric_close_fid);

const struct fi_ops_fabric ofi_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = fi_no_domain,
	.passive_ep = fi_no_passive_ep,
	.eq_open = ofi_eq_open,
	.wait_open = ofi_wait_open,
	.trywait = ofi_trywait,
	.domain2 = fi_no_domain2,
};

int ofi_fabric_init(const struct fi_provider *prov,
		    const struct fi_fabric_attr *attr,
		    struct util_fabric *fabric, void *context)
{
	int ret;

	if (!prov || !attr || !fabric)
		return -FI_EINVAL;
	memset(fabric, 0, sizeof(*fabric));
	fabric->prov = prov;
	fabric->api_version =
		attr->api_version ? attr->api_version : FI_VERSION(1, 17);
	if (attr->name) {
		fabric->name = strdup(attr->name);
		if (!fabric->name)
			return -FI_ENOMEM;
	}
	ret = ofi_mutex_init(&fabric->lock);
	if (ret) {
		free(fabric->name);
		return ret;
	}
	ofi_atomic_init32(&fabric->ref, 0);
	dlist_init(&fabric->domain_list);
	fabric->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fabric->fabric_fid.fid.context = context;
	fabric->fabric_fid.fid.ops = (struct fi_ops *)&util_fabric_fi_ops;
	fabric->fabric_fid.ops = (struct fi_ops_fabric *)&ofi_fabric_ops;
	fabric->fabric_fid.api_version = fabric->api_version;
	return 0;
}

int ofi_fabric_close(struct util_fabric *fabric)
{
	if (ofi_atomic_get32(&fabric->ref))
		return -FI_EBUSY;
	ofi_mutex_destroy(&fabric->lock);
	free(fabric->name);
	fabric->name = NULL;
	return 0;
}

int ofi_fabric_create(const struct fi_provider *prov,
		      struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context, const struct fi_ops_fabric *ops)
{
	struct util_fabric *uf;
	int ret;

	/* fi_fabric(3): attr names one of the provider's fabrics. */
	if (!attr || !fabric || (attr->name && strcmp(attr->name, prov->name)))
		return -FI_EINVAL;
	uf = calloc(1, sizeof(*uf));
	if (!uf)
		return -FI_ENOMEM;
	ret = ofi_fabric_init(prov, attr, uf, context);
	if (ret) {
		free(uf);
		return ret;
	}
	if (ops)
		uf->fabric_fid.ops = (struct fi_ops_fabric *)ops;
	*fabric = &uf->fabric_fid;
	return 0;
}
