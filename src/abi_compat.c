/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * abi_compat.c - the entry points that programs linked against older
 * libfabric ABIs bind to (fi_getinfo@FABRIC_1.0 .. 1.2, fi_fabric@FABRIC_1.0
 * and friends). Fields were only ever appended (fabric(7), "ABI CHANGES"),
 * so every object the library allocates has today's layout, which old
 * callers read as a prefix; what old callers hand in is copied into
 * today's layout first, reading no further than their struct ends:
 *
 *   ABI 1.0: fi_info without nic; fi_tx_attr without tclass; fi_ep_attr
 *            without auth_key_size/auth_key; fi_domain_attr ending at
 *            max_ep_srx_ctx; fi_fabric_attr without api_version.
 *   ABI 1.1: fi_info without nic; fi_tx_attr and fi_domain_attr without
 *            tclass.
 *   ABI 1.2: fi_tx_attr and fi_domain_attr without tclass.
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

struct ofi_abi_layout {
	size_t info;
	size_t tx;
	size_t rx;
	size_t ep;
	size_t domain;
	size_t fabric;
};

static const struct ofi_abi_layout ofi_abi_1_0 = {
	.info = offsetof(struct fi_info, nic),
	.tx = offsetof(struct fi_tx_attr, tclass),
	.rx = sizeof(struct fi_rx_attr),
	.ep = offsetof(struct fi_ep_attr, auth_key_size),
	.domain = offsetof(struct fi_domain_attr, cntr_cnt),
	.fabric = offsetof(struct fi_fabric_attr, api_version),
};

static const struct ofi_abi_layout ofi_abi_1_1 = {
	.info = offsetof(struct fi_info, nic),
	.tx = offsetof(struct fi_tx_attr, tclass),
	.rx = sizeof(struct fi_rx_attr),
	.ep = sizeof(struct fi_ep_attr),
	.domain = offsetof(struct fi_domain_attr, tclass),
	.fabric = sizeof(struct fi_fabric_attr),
};

static const struct ofi_abi_layout ofi_abi_1_2 = {
	.info = sizeof(struct fi_info),
	.tx = offsetof(struct fi_tx_attr, tclass),
	.rx = sizeof(struct fi_rx_attr),
	.ep = sizeof(struct fi_ep_attr),
	.domain = offsetof(struct fi_domain_attr, tclass),
	.fabric = sizeof(struct fi_fabric_attr),
};

/* Old callers of 1.0 never asked for anything past API 1.4. */
#define OFI_ABI_1_0_API FI_VERSION(1, 4)

/*
 * Today's-layout view of an old caller's fi_info: a shallow copy (strings
 * and addresses stay the caller's) of the prefix the old ABI had.
 */
struct ofi_info_view {
	struct fi_info info;
	struct fi_tx_attr tx;
	struct fi_rx_attr rx;
	struct fi_ep_attr ep;
	struct fi_domain_attr domain;
	struct fi_fabric_attr fabric;
};

#define OFI_VIEW_ATTR(view, old, layout, field, member, size)                  \
	do {                                                                   \
		if ((old)->field) {                                            \
			memcpy(&(view)->member, (old)->field, (layout)->size); \
			(view)->info.field = &(view)->member;                  \
		}                                                              \
	} while (0)

static const struct fi_info *ofi_view(struct ofi_info_view *view,
				      const struct fi_info *old,
				      const struct ofi_abi_layout *layout)
{
	if (!old)
		return NULL;
	memset(view, 0, sizeof(*view));
	memcpy(&view->info, old, layout->info);
	view->info.next = NULL;
	view->info.tx_attr = NULL;
	view->info.rx_attr = NULL;
	view->info.ep_attr = NULL;
	view->info.domain_attr = NULL;
	view->info.fabric_attr = NULL;
	OFI_VIEW_ATTR(view, old, layout, tx_attr, tx, tx);
	OFI_VIEW_ATTR(view, old, layout, rx_attr, rx, rx);
	OFI_VIEW_ATTR(view, old, layout, ep_attr, ep, ep);
	OFI_VIEW_ATTR(view, old, layout, domain_attr, domain, domain);
	OFI_VIEW_ATTR(view, old, layout, fabric_attr, fabric, fabric);
	return &view->info;
}

static int ofi_getinfo_old(const struct ofi_abi_layout *layout,
			   uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints, struct fi_info **info)
{
	struct ofi_info_view view;

	return fi_getinfo(version, node, service, flags,
			  ofi_view(&view, hints, layout), info);
}

static struct fi_info *ofi_dupinfo_old(const struct ofi_abi_layout *layout,
				       const struct fi_info *info)
{
	struct ofi_info_view view;

	return fi_dupinfo(ofi_view(&view, info, layout));
}

int ofi_getinfo_1_0(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info);
int ofi_getinfo_1_1(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info);
int ofi_getinfo_1_2(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info);
struct fi_info *ofi_dupinfo_1_0(const struct fi_info *info);
struct fi_info *ofi_dupinfo_1_1(const struct fi_info *info);
struct fi_info *ofi_dupinfo_1_2(const struct fi_info *info);
void ofi_freeinfo_1_0(struct fi_info *info);
void ofi_freeinfo_1_1(struct fi_info *info);
void ofi_freeinfo_1_2(struct fi_info *info);
int ofi_fabric_1_0(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		   void *context);

__asm__(".symver ofi_getinfo_1_0, fi_getinfo@FABRIC_1.0");
__asm__(".symver ofi_getinfo_1_1, fi_getinfo@FABRIC_1.1");
__asm__(".symver ofi_getinfo_1_2, fi_getinfo@FABRIC_1.2");
__asm__(".symver ofi_dupinfo_1_0, fi_dupinfo@FABRIC_1.0");
__asm__(".symver ofi_dupinfo_1_1, fi_dupinfo@FABRIC_1.1");
__asm__(".symver ofi_dupinfo_1_2, fi_dupinfo@FABRIC_1.2");
__asm__(".symver ofi_freeinfo_1_0, fi_freeinfo@FABRIC_1.0");
__asm__(".symver ofi_freeinfo_1_1, fi_freeinfo@FABRIC_1.1");
__asm__(".symver ofi_freeinfo_1_2, fi_freeinfo@FABRIC_1.2");
__asm__(".symver ofi_fabric_1_0, fi_fabric@FABRIC_1.0");

int ofi_getinfo_1_0(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info)
{
	return ofi_getinfo_old(&ofi_abi_1_0, version, node, service, flags,
			       hints, info);
}

int ofi_getinfo_1_1(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info)
{
	return ofi_getinfo_old(&ofi_abi_1_1, version, node, service, flags,
			       hints, info);
}

int ofi_getinfo_1_2(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info)
{
	return ofi_getinfo_old(&ofi_abi_1_2, version, node, service, flags,
			       hints, info);
}

struct fi_info *ofi_dupinfo_1_0(const struct fi_info *info)
{
	return ofi_dupinfo_old(&ofi_abi_1_0, info);
}

struct fi_info *ofi_dupinfo_1_1(const struct fi_info *info)
{
	return ofi_dupinfo_old(&ofi_abi_1_1, info);
}

struct fi_info *ofi_dupinfo_1_2(const struct fi_info *info)
{
	return ofi_dupinfo_old(&ofi_abi_1_2, info);
}

/* Everything an old caller can free was allocated in today's layout. */
void ofi_freeinfo_1_0(struct fi_info *info)
{
	fi_freeinfo(info);
}

void ofi_freeinfo_1_1(struct fi_info *info)
{
	fi_freeinfo(info);
}

void ofi_freeinfo_1_2(struct fi_info *info)
{
	fi_freeinfo(info);
}

/*
 * The 1.0 fabric attributes end before api_version. Providers may keep the
 * attr pointer's strings only for the call, so a stack copy is enough;
 * what they write back (the fabric fid) is copied out.
 */
int ofi_fabric_1_0(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		   void *context)
{
	struct fi_fabric_attr cur = {0};
	int ret;

	if (!attr)
		return -FI_EINVAL;
	memcpy(&cur, attr, ofi_abi_1_0.fabric);
	cur.api_version = OFI_ABI_1_0_API;
	ret = fi_fabric(&cur, fabric, context);
	attr->fabric = cur.fabric;
	return ret;
}
