/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_init.c - the shm provider's entry point and discovery: the provider
 * structure, its candidate fi_info (the core matches hints), resolving
 * node/service into FI_ADDR_STR names, the default source address, and the
 * fabric object. Stale regions
 * of dead processes are reclaimed once when the provider loads.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ofi_prov.h"
#include "shm.h"

#define SHM_CAPS (OFI_FULL_CAPS | FI_HMEM)
/* mr_mode bits we honour when asked and never require. */
#define SHM_MR_MODE OFI_MR_BASIC_MAP

static struct fi_tx_attr shm_tx_attr = {
	.caps = OFI_FULL_TX_CAPS | FI_HMEM,
	.op_flags = OFI_FULL_TX_OP_FLAGS,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.inject_size = SHM_INJECT_SIZE,
	.size = SHM_TX_SIZE,
	.iov_limit = SHM_IOV_ATTR,
	.rma_iov_limit = SHM_IOV_ATTR,
};

static struct fi_rx_attr shm_rx_attr = {
	.caps = OFI_FULL_RX_CAPS | FI_HMEM,
	.op_flags = OFI_FULL_RX_OP_FLAGS,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_STRICT,
	.total_buffered_recv = 0,
	.size = SHM_RX_SIZE,
	.iov_limit = SHM_IOV_ATTR,
};

static struct fi_ep_attr shm_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_SHM,
	.protocol_version = SHM_VERSION,
	.max_msg_size = SIZE_MAX,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL, /* FI_TAG_GENERIC */
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr shm_domain_attr = {
	.name = SHM_PROV_NAME,
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_AUTO,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = sizeof(uint64_t),
	.cq_cnt = 1024,
	.ep_cnt = SHM_MAX_PEERS,
	.tx_ctx_cnt = 1024,
	.rx_ctx_cnt = 1024,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.mr_iov_limit = SHM_IOV_ATTR,
	.mr_cnt = 1 << 16,
	.cntr_cnt = 1024,
};

static struct fi_fabric_attr shm_fabric_attr = {
	.name = SHM_PROV_NAME,
	.prov_version = SHM_PROV_VERSION,
};

const struct fi_info shm_info_template = {
	.caps = SHM_CAPS,
	.addr_format = FI_ADDR_STR,
	.tx_attr = &shm_tx_attr,
	.rx_attr = &shm_rx_attr,
	.ep_attr = &shm_ep_attr,
	.domain_attr = &shm_domain_attr,
	.fabric_attr = &shm_fabric_attr,
};

/* "fi_shm://x" stays as it is; anything else becomes fi_shm://node:svc. */
static char *shm_resolve(const char *node, const char *service)
{
	char buf[SHM_NAME_MAX];
	int n;

	if (node && !strncmp(node, SHM_ADDR_PREFIX, strlen(SHM_ADDR_PREFIX)))
		n = snprintf(buf, sizeof(buf), "%s", node);
	else if (node && service)
		n = snprintf(buf, sizeof(buf), SHM_ADDR_PREFIX "%s:%s", node,
			     service);
	else
		n = snprintf(buf, sizeof(buf), SHM_ADDR_PREFIX "%s",
			     node ? node : service);
	if (n < 0 || (size_t)n >= sizeof(buf) || shm_name_valid(buf))
		return NULL;
	return strdup(buf);
}

static int shm_set_addr(void **addr, size_t *len, char *name)
{
	free(*addr);
	*addr = name;
	*len = strlen(name) + 1;
	return 0;
}

static int shm_resolve_addr(const struct fi_info *fi, const char *node,
			    const char *service, void **addr, size_t *len)
{
	char *name = shm_resolve(node, service);

	OFI_UNUSED(fi);
	if (!name)
		return -FI_ENODATA;
	return shm_set_addr(addr, len, name);
}

static int shm_hint_addr(const struct fi_info *fi, uint32_t format,
			 const void *src, size_t src_len, void **addr,
			 size_t *len)
{
	char *name;

	OFI_UNUSED(fi);
	if (format != FI_ADDR_STR || shm_name_valid(src))
		return -FI_ENODATA;
	name = strndup(src, src_len);
	if (!name)
		return -FI_ENOMEM;
	return shm_set_addr(addr, len, name);
}

/*
 * The source of an entry asked for without node or FI_SOURCE (fi_getinfo(3)
 * fills one in every entry): fi_shm://<pid>, the process's default name.
 * An endpoint opened with it names itself fi_shm://<pid>:<n> (shm_ep.c),
 * so one info opens any number of endpoints, as port 0 does for sockets.
 */
static int shm_default_src(const struct fi_info *fi, void **addr, size_t *len,
			   void *arg)
{
	char buf[SHM_NAME_MAX];

	OFI_UNUSED(fi);
	OFI_UNUSED(arg);
	snprintf(buf, sizeof(buf), SHM_ADDR_PREFIX "%d", (int)getpid());
	*addr = strdup(buf);
	if (!*addr)
		return -FI_ENOMEM;
	*len = strlen(buf) + 1;
	return 0;
}

static const struct ofi_info_addr_ops shm_info_ops = {
	.resolve = shm_resolve_addr,
	.hint = shm_hint_addr,
	.default_src = shm_default_src,
	.mr_honoured = SHM_MR_MODE,
	.pmem = OFI_PMEM_CAPS != 0,
	/* FI_PROGRESS_AUTO when asked: a thread per endpoint (shm_wake.c) */
	.any_progress = true,
	/* a fence would take the direct entries off the endpoint */
	.on_request = FI_FENCE,
};

static int shm_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	struct fi_info *fi;
	int ret;

	*info = NULL;
	if (hints && hints->addr_format != FI_FORMAT_UNSPEC &&
	    hints->addr_format != FI_ADDR_STR)
		return -FI_ENODATA;
	if (hints && hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
	    hints->ep_attr->type != FI_EP_RDM)
		return -FI_ENODATA;
	fi = fi_dupinfo(&shm_info_template);
	if (!fi)
		return -FI_ENOMEM;
	ret = ofi_info_build(version, node, service, flags, hints,
			     &shm_info_ops, fi);
	if (ret) {
		fi_freeinfo(fi);
		return ret;
	}
	*info = fi;
	return 0;
}

static const struct fi_ops_fabric shm_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = shm_domain_open,
	.passive_ep = fi_no_passive_ep,
	.eq_open = ofi_eq_open,
	.wait_open = ofi_wait_open,
	.trywait = ofi_trywait,
	.domain2 = fi_no_domain2,
};

int shm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context)
{
	return ofi_fabric_create(&shm_prov, attr, fabric, context,
				 &shm_fabric_ops);
}

static void shm_cleanup(void)
{
}

struct fi_provider shm_prov = {
	.version = SHM_PROV_VERSION,
	.fi_version = OFI_API_VERSION,
	.name = SHM_PROV_NAME,
	.getinfo = shm_getinfo,
	.fabric = shm_fabric_open,
	.cleanup = shm_cleanup,
};

struct fi_provider *ofi_shm_ini(void)
{
	fi_param_define(&shm_prov, "disable_cma", FI_PARAM_BOOL,
			"Never use Cross Memory Attach (process_vm_readv); "
			"large messages stream through bounce buffers "
			"(default: false)");
	ofi_param_define_range(
		&shm_prov, "cma_threshold", FI_PARAM_SIZE_T, 0, SIZE_MAX,
		"Messages larger than this use Cross Memory Attach "
		"when allowed; smaller ones above the inject size "
		"are pipelined through bounce buffers, which is "
		"faster while they fit the caches (default: %d)",
		SHM_CMA_THRESHOLD);
	fi_param_define(&shm_prov, "adapt", FI_PARAM_BOOL,
			"Messages, RMA writes and reads from 16 KiB up to "
			"the CMA threshold take, per peer, whichever of "
			"streaming and Cross Memory Attach measures faster; "
			"false: they always stream (default: true)");
	shm_hmem_define_params();
	shm_region_reclaim();
	return &shm_prov;
}
