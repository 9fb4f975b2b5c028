/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * info.c - fi_info lifetime: fi_dupinfo (and so fi_allocinfo), which deep
 * copies every pointer member, fi_freeinfo, and the core-owned copy of a
 * fid_nic that a duplicated fi_info carries.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "ofi.h"
#include "ofi_prov.h"

static int ofi_dup_mem(void **dst, const void *src, size_t len)
{
	*dst = NULL;
	if (!src || !len)
		return 0;
	*dst = malloc(len);
	if (!*dst)
		return -FI_ENOMEM;
	memcpy(*dst, src, len);
	return 0;
}

static int ofi_dup_str(char **dst, const char *src)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -FI_ENOMEM;
}

/* The nic copy: one block per attribute so fi_close frees them all. */
struct ofi_nic {
	struct fid_nic nic;
	struct fi_device_attr device;
	struct fi_bus_attr bus;
	struct fi_link_attr link;
};

static void ofi_nic_free(struct ofi_nic *copy)
{
	free(copy->device.name);
	free(copy->device.device_id);
	free(copy->device.device_version);
	free(copy->device.vendor_id);
	free(copy->device.driver);
	free(copy->device.firmware);
	free(copy->link.address);
	free(copy->link.network_type);
	free(copy);
}

static int ofi_nic_close(struct fid *fid)
{
	ofi_nic_free(container_of(fid, struct ofi_nic, nic.fid));
	return 0;
}

static int ofi_nic_control(struct fid *fid, int command, void *arg)
{
	struct fid_nic *dup;

	if (command != FI_DUP || !arg)
		return -FI_ENOSYS;
	dup = ofi_nic_dup(container_of(fid, struct fid_nic, fid));
	if (!dup)
		return -FI_ENOMEM;
	*(struct fid **)arg = &dup->fid;
	return 0;
}

static int ofi_nic_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int ofi_nic_ops_open(struct fid *fid, const char *name, uint64_t flags,
			    void **ops, void *context)
{
	return -FI_ENOSYS;
}

static int ofi_nic_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

static int ofi_nic_ops_set(struct fid *fid, const char *name, uint64_t flags,
			   void *ops, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops ofi_nic_ops = {
	.size = sizeof(struct fi_ops),
	.close = ofi_nic_close,
	.bind = ofi_nic_bind,
	.control = ofi_nic_control,
	.ops_open = ofi_nic_ops_open,
	.tostr = ofi_nic_tostr,
	.ops_set = ofi_nic_ops_set,
};

static int ofi_dup_device(struct fi_device_attr *dst,
			  const struct fi_device_attr *src)
{
	if (ofi_dup_str(&dst->name, src->name) ||
	    ofi_dup_str(&dst->device_id, src->device_id) ||
	    ofi_dup_str(&dst->device_version, src->device_version) ||
	    ofi_dup_str(&dst->vendor_id, src->vendor_id) ||
	    ofi_dup_str(&dst->driver, src->driver) ||
	    ofi_dup_str(&dst->firmware, src->firmware))
		return -FI_ENOMEM;
	return 0;
}

/*
 * prov_attr is opaque to the core and stays shared with the original;
 * providers that hang state off it must answer FI_DUP themselves.
 */
struct fid_nic *ofi_nic_dup(const struct fid_nic *nic)
{
	struct ofi_nic *copy = calloc(1, sizeof(*copy));

	if (!copy)
		return NULL;
	copy->nic.fid.fclass = FI_CLASS_NIC;
	copy->nic.fid.context = nic ? nic->fid.context : NULL;
	copy->nic.fid.ops = &ofi_nic_ops;
	copy->nic.device_attr = &copy->device;
	copy->nic.bus_attr = &copy->bus;
	copy->nic.link_attr = &copy->link;
	if (!nic)
		return &copy->nic;
	copy->nic.prov_attr = nic->prov_attr;
	if (nic->bus_attr)
		copy->bus = *nic->bus_attr;
	if (nic->link_attr) {
		copy->link = *nic->link_attr;
		copy->link.address = NULL;
		copy->link.network_type = NULL;
		if (ofi_dup_str(&copy->link.address, nic->link_attr->address) ||
		    ofi_dup_str(&copy->link.network_type,
				nic->link_attr->network_type))
			goto err;
	}
	if (nic->device_attr && ofi_dup_device(&copy->device, nic->device_attr))
		goto err;
	return &copy->nic;
err:
	ofi_nic_free(copy);
	return NULL;
}

static struct fid_nic *ofi_dup_nic(struct fid_nic *nic)
{
	struct fid *dup = NULL;

	/* A provider's own nic knows best how to copy itself. */
	if (nic->fid.ops && nic->fid.ops->control &&
	    nic->fid.ops != &ofi_nic_ops &&
	    !nic->fid.ops->control(&nic->fid, FI_DUP, &dup) && dup)
		return container_of(dup, struct fid_nic, fid);
	return ofi_nic_dup(nic);
}

static void ofi_free_one(struct fi_info *info)
{
	free(info->src_addr);
	free(info->dest_addr);
	free(info->tx_attr);
	free(info->rx_attr);
	if (info->ep_attr)
		free(info->ep_attr->auth_key);
	free(info->ep_attr);
	if (info->domain_attr) {
		free(info->domain_attr->name);
		free(info->domain_attr->auth_key);
	}
	free(info->domain_attr);
	if (info->fabric_attr) {
		free(info->fabric_attr->name);
		free(info->fabric_attr->prov_name);
	}
	free(info->fabric_attr);
	if (info->nic && info->nic->fid.ops && info->nic->fid.ops->close)
		info->nic->fid.ops->close(&info->nic->fid);
	free(info);
}

/* Default versions; the older ones are in abi_compat.c. */
OFI_DEFAULT_SYMVER(ofi_freeinfo_1_3, fi_freeinfo, "FABRIC_1.3");
void ofi_freeinfo_1_3(struct fi_info *info)
{
	struct fi_info *next;

	for (; info; info = next) {
		next = info->next;
		ofi_free_one(info);
	}
}

static struct fi_info *ofi_alloc_info(void)
{
	struct fi_info *info = calloc(1, sizeof(*info));

	if (!info)
		return NULL;
	info->tx_attr = calloc(1, sizeof(*info->tx_attr));
	info->rx_attr = calloc(1, sizeof(*info->rx_attr));
	info->ep_attr = calloc(1, sizeof(*info->ep_attr));
	info->domain_attr = calloc(1, sizeof(*info->domain_attr));
	info->fabric_attr = calloc(1, sizeof(*info->fabric_attr));
	if (!info->tx_attr || !info->rx_attr || !info->ep_attr ||
	    !info->domain_attr || !info->fabric_attr) {
		fi_freeinfo(info);
		return NULL;
	}
	return info;
}

static int ofi_dup_attr(void **dst, const void *src, size_t size)
{
	if (!src) {
		free(*dst);
		*dst = NULL;
		return 0;
	}
	memcpy(*dst, src, size);
	return 0;
}

/* Drops the pointers memcpy borrowed from the original, before any copy. */
static void ofi_clear_borrowed(struct fi_info *dup)
{
	if (dup->ep_attr)
		dup->ep_attr->auth_key = NULL;
	if (dup->domain_attr) {
		dup->domain_attr->name = NULL;
		dup->domain_attr->auth_key = NULL;
	}
	if (dup->fabric_attr) {
		dup->fabric_attr->name = NULL;
		dup->fabric_attr->prov_name = NULL;
	}
}

static int ofi_dup_ep_domain(struct fi_info *dup, const struct fi_info *info)
{
	if (dup->ep_attr &&
	    ofi_dup_mem((void **)&dup->ep_attr->auth_key,
			info->ep_attr->auth_key, info->ep_attr->auth_key_size))
		return -FI_ENOMEM;
	if (dup->domain_attr &&
	    (ofi_dup_str(&dup->domain_attr->name, info->domain_attr->name) ||
	     ofi_dup_mem((void **)&dup->domain_attr->auth_key,
			 info->domain_attr->auth_key,
			 info->domain_attr->auth_key_size)))
		return -FI_ENOMEM;
	if (dup->fabric_attr &&
	    (ofi_dup_str(&dup->fabric_attr->name, info->fabric_attr->name) ||
	     ofi_dup_str(&dup->fabric_attr->prov_name,
			 info->fabric_attr->prov_name)))
		return -FI_ENOMEM;
	return 0;
}

/* Copies one fi_info; the copy's next is NULL, the handle is shared. */
OFI_DEFAULT_SYMVER(ofi_dupinfo_1_3, fi_dupinfo, "FABRIC_1.3");
struct fi_info *ofi_dupinfo_1_3(const struct fi_info *info)
{
	struct fi_info *dup = ofi_alloc_info();

	if (!dup || !info)
		return dup;
	dup->caps = info->caps;
	dup->mode = info->mode;
	dup->addr_format = info->addr_format;
	dup->src_addrlen = info->src_addrlen;
	dup->dest_addrlen = info->dest_addrlen;
	dup->handle = info->handle;
	ofi_dup_attr((void **)&dup->tx_attr, info->tx_attr,
		     sizeof(*info->tx_attr));
	ofi_dup_attr((void **)&dup->rx_attr, info->rx_attr,
		     sizeof(*info->rx_attr));
	ofi_dup_attr((void **)&dup->ep_attr, info->ep_attr,
		     sizeof(*info->ep_attr));
	ofi_dup_attr((void **)&dup->domain_attr, info->domain_attr,
		     sizeof(*info->domain_attr));
	ofi_dup_attr((void **)&dup->fabric_attr, info->fabric_attr,
		     sizeof(*info->fabric_attr));
	ofi_clear_borrowed(dup);
	if (ofi_dup_ep_domain(dup, info))
		goto err;
	if (ofi_dup_mem(&dup->src_addr, info->src_addr, info->src_addrlen) ||
	    ofi_dup_mem(&dup->dest_addr, info->dest_addr, info->dest_addrlen))
		goto err;
	if (info->nic) {
		dup->nic = ofi_dup_nic(info->nic);
		if (!dup->nic)
			goto err;
	}
	return dup;
err:
	fi_freeinfo(dup);
	return NULL;
}
