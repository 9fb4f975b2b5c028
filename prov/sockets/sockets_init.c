/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_init.c - the sockets provider's entry point: FI_EP_MSG and FI_EP_RDM over FI_SOCKADDR_IN/IN6, served by
 * tcp's engine (prov/tcp and prov/util/util_sock_*.c) under sockets' own
 * name, parameters (FI_SOCKETS_IFACE, _MAX_UNEXP, _SHM) and attributes,
 * and FI_EP_DGRAM over UDP (sockets_dgram.c), listed after them.
 * There is no second TCP engine: this file holds only what sockets
 * promises differently from tcp. Today that is automatic progress by
 * default (FI_PROGRESS_MANUAL still answered when asked), datagrams,
 * triggered operations, deferred work and fences (util_trigger.c), and
 * scalable endpoints with FI_NAMED_RX_CTX (the engine's,
 * prov/tcp/tcp_sep.c, tcp's domain refuses them; sockets_dgram.c's for
 * datagrams). What fi_sockets(7)
 * lists as not yet there is not advertised; the calls answer -FI_ENOSYS
 * or -FI_EINVAL for an unknown flag, as tcp's do.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ofi_prov.h"
#include "sockets.h"

/* Endpoints one shared transmit or receive context serves (Debian's). */
#define SOCKETS_EP_SHARED 128
/* What sockets adds to tcp's caps: util_trigger.c on its endpoints. */
#define SOCKETS_TRIG_CAPS (FI_TRIGGER | FI_FENCE)

static struct fi_info *sockets_template;
static struct fi_info *sockets_dgram_tmpl;
/* What sockets offers beyond tcp(7) on the engine's endpoints. */
static const struct tcp_engine_desc sockets_desc = {
	.scalable_ep = true,
	.shared_av = true,
	.trigger = true,
	.max_rx_ctx_bits = TCP_RX_CTX_BITS,
};
/* tcp's fabric and domain calls, but for endpoints of type FI_EP_DGRAM */
static struct fi_ops_fabric sockets_fabric_ops;
static struct fi_ops_domain sockets_domain_ops;

static int sockets_getinfo(uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints, struct fi_info **info);
static int sockets_fabric_open(struct fi_fabric_attr *attr,
			       struct fid_fabric **fabric, void *context);
static void sockets_cleanup(void);

static struct fi_provider sockets_prov = {
	.version = OFI_PROV_VERSION,
	.fi_version = OFI_API_VERSION,
	.name = SOCKETS_PROV_NAME,
	.getinfo = sockets_getinfo,
	.fabric = sockets_fabric_open,
	.cleanup = sockets_cleanup,
};

/*
 * Debian's sockets requires none of the 1.5 mr_mode bits and so returns
 * none, however many the hints accept: keys are the application's and
 * remote addresses are offsets into the registration (programs such as
 * fabtests' fi_multi_mr write to key i at address 0 without exchanging
 * anything). tcp's engine echoes the bits it can honour; sockets takes
 * them back. The pre-1.5 FI_MR_BASIC and FI_MR_SCALABLE stay as asked.
 */
static void sockets_mr_mode(struct fi_info *info)
{
	int *mode = &info->domain_attr->mr_mode;

	if (*mode != FI_MR_BASIC && *mode != FI_MR_SCALABLE)
		*mode &= ~OFI_MR_BASIC_MAP;
}

/* What sockets answers beside tcp: its mr_mode. */
static int sockets_answer(int ret, struct fi_info *info)
{
	if (ret)
		return ret;
	for (; info; info = info->next)
		sockets_mr_mode(info);
	return 0;
}

static int sockets_getinfo(uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *dgram = NULL, **tail;
	enum fi_ep_type type;
	uint32_t format;
	int ret, dret;

	*info = NULL;
	if (!sockets_template)
		return -FI_ENODATA;
	ret = tcp_hint_kind(node, hints, &format, &type);
	if (ret)
		return ret;
	if (type != FI_EP_DGRAM)
		ret = tcp_getinfo_as(&sockets_prov, sockets_template, version,
				     node, service, flags, hints, info);
	if (type != FI_EP_DGRAM && type != FI_EP_UNSPEC)
		return sockets_answer(ret, *info);
	/* Datagrams after RDM and MSG: who asks for no type keeps RDM first. */
	dret = tcp_getinfo_one(&sockets_prov, sockets_dgram_tmpl, version, node,
			       service, flags, hints, format, FI_EP_DGRAM,
			       &dgram);
	if (dret) /* what RDM/MSG answered stands, else the DGRAM error */
		return *info ? sockets_answer(0, *info) : (ret ? ret : dret);
	for (tail = info; *tail; tail = &(*tail)->next)
		;
	*tail = dgram;
	return sockets_answer(0, *info);
}

static int sockets_ep_open(struct fid_domain *domain, struct fi_info *info,
			   struct fid_ep **ep, void *context)
{
	if (info && info->ep_attr && info->ep_attr->type == FI_EP_DGRAM)
		return sockets_dgram_ep_open(domain, info, ep, context);
	return tcp_domain_ops.endpoint(domain, info, ep, context);
}

static int sockets_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			       struct fid_ep **sep, void *context)
{
	if (info && info->ep_attr && info->ep_attr->type == FI_EP_DGRAM)
		return sockets_dgram_scalable_ep(domain, info, sep, context);
	return tcp_domain_ops.scalable_ep(domain, info, sep, context);
}

/* A domain opened for datagrams shares receive contexts between them. */
static int sockets_srx_context(struct fid_domain *domain,
			       struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			       void *context)
{
	struct util_domain *dom;

	if (!domain)
		return -FI_EINVAL;
	dom = container_of(domain, struct util_domain, domain_fid);
	if (dom->info && dom->info->ep_attr &&
	    dom->info->ep_attr->type == FI_EP_DGRAM)
		return sockets_dgram_srx_context(domain, attr, rx_ep, context);
	return tcp_domain_ops.srx_ctx(domain, attr, rx_ep, context);
}

/* tcp's domain with sockets' description (triggered operations and
 * deferred work, prov/util/util_trigger.c, among them), opening datagram
 * endpoints too. */
static int sockets_domain_open(struct fid_fabric *fabric, struct fi_info *info,
			       struct fid_domain **domain, void *context)
{
	int ret = tcp_domain_open_as(fabric, info, domain, context,
				     &sockets_desc);

	if (ret)
		return ret;
	(*domain)->ops = &sockets_domain_ops;
	return 0;
}

static int sockets_fabric_open(struct fi_fabric_attr *attr,
			       struct fid_fabric **fabric, void *context)
{
	return ofi_fabric_create(&sockets_prov, attr, fabric, context,
				 &sockets_fabric_ops);
}

static void sockets_cleanup(void)
{
	fi_freeinfo(sockets_template);
	fi_freeinfo(sockets_dgram_tmpl);
	sockets_template = NULL;
	sockets_dgram_tmpl = NULL;
}

static int sockets_rename(char **name)
{
	free(*name);
	*name = strdup(SOCKETS_PROV_NAME);
	return *name ? 0 : -FI_ENOMEM;
}

/*
 * tcp's candidate under sockets' name: the engine's sizes and caps as they
 * are (one table, tcp_init.c), automatic progress by default.
 */
static struct fi_info *sockets_make_template(void)
{
	struct fi_info *fi = fi_dupinfo(&tcp_info_template);

	if (!fi)
		return NULL;
	if (sockets_rename(&fi->domain_attr->name) ||
	    sockets_rename(&fi->fabric_attr->name)) {
		fi_freeinfo(fi);
		return NULL;
	}
	fi->domain_attr->control_progress = FI_PROGRESS_AUTO;
	fi->domain_attr->data_progress = FI_PROGRESS_AUTO;
	/* the engine's iov limits, as Debian's sockets offers 8 */
	fi->tx_attr->iov_limit = TCP_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = TCP_IOV_LIMIT;
	fi->rx_attr->iov_limit = TCP_IOV_LIMIT;
	fi->domain_attr->mr_iov_limit = TCP_IOV_LIMIT;
	/* Debian's: util's shared contexts take any number of endpoints */
	fi->domain_attr->max_ep_stx_ctx = SOCKETS_EP_SHARED;
	fi->domain_attr->max_ep_srx_ctx = SOCKETS_EP_SHARED;
	fi->caps |= SOCKETS_TRIG_CAPS;
	fi->tx_attr->caps |= SOCKETS_TRIG_CAPS;
	fi->rx_attr->caps |= FI_TRIGGER;
	/* scalable endpoints (prov/tcp/tcp_sep.c; RDM and MSG: tcp_info_msg
	 * keeps the counts), raw source addresses of unknown senders
	 * (util_comp.c, RDM only); named AVs shared between processes
	 * (util_av_shared.c) */
	fi->caps |= FI_NAMED_RX_CTX | FI_SOURCE_ERR | FI_SHARED_AV;
	fi->domain_attr->caps |= FI_SHARED_AV;
	fi->tx_attr->caps |= FI_NAMED_RX_CTX;
	fi->rx_attr->caps |= FI_NAMED_RX_CTX | FI_SOURCE_ERR;
	fi->ep_attr->tx_ctx_cnt = TCP_SEP_CTX_MAX;
	fi->ep_attr->rx_ctx_cnt = TCP_SEP_CTX_MAX;
	fi->domain_attr->max_ep_tx_ctx = TCP_SEP_CTX_MAX;
	fi->domain_attr->max_ep_rx_ctx = TCP_SEP_CTX_MAX;
	return fi;
}

struct fi_provider *ofi_sockets_ini(void)
{
	sockets_template = sockets_make_template();
	if (!sockets_template)
		return NULL;
	sockets_dgram_tmpl = sockets_dgram_template(sockets_template);
	if (!sockets_dgram_tmpl) {
		sockets_cleanup();
		return NULL;
	}
	sockets_fabric_ops = tcp_fabric_ops;
	sockets_fabric_ops.domain = sockets_domain_open;
	sockets_domain_ops = tcp_domain_ops;
	sockets_domain_ops.endpoint = sockets_ep_open;
	sockets_domain_ops.scalable_ep = sockets_scalable_ep;
	sockets_domain_ops.srx_ctx = sockets_srx_context;
	tcp_define_params(&sockets_prov);
	return &sockets_prov;
}
