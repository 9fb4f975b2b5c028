/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_domain.c - the util_domain base object: a private copy of the fi_info
 * it was opened with, threading model, MR map, EQ binding, the per-domain
 * HMEM override slots and the reference count that keeps a domain with open
 * children from closing.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_util.h"

static int util_domain_close_fid(struct fid *fid)
{
	struct util_domain *domain =
		container_of(fid, struct util_domain, domain_fid.fid);
	int ret;

	ret = ofi_domain_close(domain);
	if (ret)
		return ret;
	free(domain);
	return 0;
}

int ofi_domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_domain *domain =
		container_of(fid, struct util_domain, domain_fid.fid);
	struct util_eq *eq;

	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (flags & ~FI_REG_MR)
		return -FI_EINVAL;
	eq = container_of(bfid, struct util_eq, eq_fid.fid);
	ofi_domain_lock(domain);
	if (domain->eq) {
		ofi_domain_unlock(domain);
		return -FI_EINVAL;
	}
	domain->eq = eq;
	domain->eq_flags = flags;
	ofi_atomic_inc32(&eq->ref);
	ofi_domain_unlock(domain);
	return 0;
}

#if OFI_HAVE_EXT_SLOTS
/* fi_set_op(3): the rules are in util_override.c. */
int ofi_domain_op_set(struct fid *fid, enum fi_set_op op,
		      union fi_override_op *fn, uint64_t flags)
{
	struct util_domain *domain =
		container_of(fid, struct util_domain, domain_fid.fid);
	int ret;

	ofi_domain_lock(domain);
	ret = ofi_hmem_override_set(&domain->hmem_override,
				    domain->override_locked, op, fn, flags);
	ofi_domain_unlock(domain);
	return ret;
}
#endif

/* The upstream-compatible form, fi_set_ops(FI_SET_OPS_HMEM_OVERRIDE). */
int ofi_domain_ops_set(struct fid *fid, const char *name, uint64_t flags,
		       void *ops, void *context)
{
	struct util_domain *domain =
		container_of(fid, struct util_domain, domain_fid.fid);
	int ret;

	if (!name || strcmp(name, FI_SET_OPS_HMEM_OVERRIDE))
		return -FI_ENOSYS;
	if (flags)
		return -FI_EINVAL;
	ofi_domain_lock(domain);
	ret = ofi_hmem_override_set_ops(&domain->hmem_override,
					domain->override_locked, ops);
	ofi_domain_unlock(domain);
	return ret;
}

const struct fi_ops ofi_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = util_domain_close_fid,
	.bind = ofi_domain_bind,
	.control = fi_no_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = ofi_domain_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = ofi_domain_op_set,
#endif
};

const struct fi_ops_mr ofi_domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = ofi_mr_reg,
	.regv = ofi_mr_regv,
	.regattr = ofi_mr_regattr,
};

int ofi_domain_init(struct util_fabric *fabric, const struct fi_info *info,
		    struct util_domain *domain, void *context)
{
	int ret;

	if (!fabric || !info || !info->domain_attr || !domain)
		return -FI_EINVAL;
	memset(domain, 0, sizeof(*domain));
	domain->info = fi_dupinfo(info);
	if (!domain->info)
		return -FI_ENOMEM;
	domain->fabric = fabric;
	domain->prov = fabric->prov;
	domain->attr = domain->info->domain_attr;
	domain->threading = domain->attr->threading;
	domain->mr_mode = ofi_mr_mode_normalize(domain->attr->mr_mode);
	domain->addr_format = info->addr_format;
	ofi_atomic_init32(&domain->ref, 0);
	ret = ofi_mutex_init(&domain->lock);
	if (ret)
		goto err_info;
	ret = ofi_mutex_init(&domain->ep_lock);
	if (ret)
		goto err_lock;
	dlist_init(&domain->ep_list);
	ret = ofi_mr_map_init(domain->prov, domain->mr_mode, &domain->mr_map);
	if (ret)
		goto err_ep_lock;

	domain->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	domain->domain_fid.fid.context = context;
	domain->domain_fid.fid.ops = (struct fi_ops *)&ofi_domain_fi_ops;
	domain->domain_fid.mr = (struct fi_ops_mr *)&ofi_domain_mr_ops;

	ofi_mutex_lock(&fabric->lock);
	dlist_insert_tail(&domain->list_entry, &fabric->domain_list);
	ofi_mutex_unlock(&fabric->lock);
	ofi_atomic_inc32(&fabric->ref);
	return 0;

err_ep_lock:
	ofi_mutex_destroy(&domain->ep_lock);
err_lock:
	ofi_mutex_destroy(&domain->lock);
err_info:
	fi_freeinfo(domain->info);
	return ret;
}

int ofi_domain_close(struct util_domain *domain)
{
	if (ofi_atomic_get32(&domain->ref))
		return -FI_EBUSY;
	ofi_mutex_lock(&domain->fabric->lock);
	dlist_remove(&domain->list_entry);
	ofi_mutex_unlock(&domain->fabric->lock);
	ofi_atomic_dec32(&domain->fabric->ref);
	if (domain->eq)
		ofi_atomic_dec32(&domain->eq->ref);
	ofi_mr_map_close(&domain->mr_map);
	ofi_mutex_destroy(&domain->ep_lock);
	ofi_mutex_destroy(&domain->lock);
	fi_freeinfo(domain->info);
	domain->info = NULL;
	return 0;
}
