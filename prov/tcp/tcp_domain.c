/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_domain.c - the tcp domain and its address vector: util objects with
 * tcp's endpoint constructor and atomic query, for tcp or for a provider
 * built on the engine, whose description (tcp_engine.h) the domain keeps.
 * AV entries are socket addresses of the domain's format (struct
 * sockaddr_in or sockaddr_in6), checked for family at insert; connections
 * are made on first use.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcp.h"

static int tcp_av_validate(struct util_av *av, const void *addr)
{
	const struct sockaddr *sa = addr;
	int family = av->addr_format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;

	return sa->sa_family == family ? 0 : -FI_EINVAL;
}

static int tcp_av_svc_to_addr(struct util_av *av, const char *node,
			      const char *service, void *addr)
{
	int family = av->addr_format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
	struct addrinfo hints = {.ai_family = family,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	size_t len = ofi_sockaddr_len(av->addr_format);

	if (!node || !service)
		return -FI_EINVAL;
	if (getaddrinfo(node, service, &hints, &res))
		return -FI_EINVAL;
	memset(addr, 0, len);
	memcpy(addr, res->ai_addr, OFI_MIN(len, res->ai_addrlen));
	freeaddrinfo(res);
	return 0;
}

static int tcp_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		       struct fid_av **av, void *context)
{
	struct util_domain *dom =
		container_of(domain, struct util_domain, domain_fid);
	const struct tcp_engine_desc *desc = tcp_domain_desc(dom);
	struct util_av_attr a = {
		.addrlen = ofi_sockaddr_len(dom->addr_format),
		.validate = tcp_av_validate,
		.svc_to_addr = tcp_av_svc_to_addr,
		/* receive contexts of scalable endpoints, where offered */
		.max_rx_ctx_bits = desc->max_rx_ctx_bits,
		.shared = desc->shared_av, /* FI_SHARED_AV */
	};

	if (!attr)
		return -FI_EINVAL;
	return ofi_av_open(domain, attr, &a, av, context);
}

static int tcp_domain_close(struct fid *fid)
{
	struct tcp_domain *dom =
		container_of(fid, struct tcp_domain, util.domain_fid.fid);
	int ret;

	ret = ofi_domain_close(&dom->util);
	if (ret)
		return ret;
	free(dom);
	return 0;
}

/*
 * Copy overrides (fi_set_op(3), FI_SET_OPS_HMEM_OVERRIDE): util's rules
 * and slots; tcp_hmem.c moves every staged payload through them.
 */
static const struct fi_ops tcp_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = tcp_domain_close,
	.bind = ofi_domain_bind,
	/* deferred work where the provider offers it (desc->trigger) */
	.control = ofi_trig_domain_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = ofi_domain_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = ofi_domain_op_set,
#endif
};

const struct fi_ops_domain tcp_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = tcp_av_open,
	.cq_open = ofi_cq_open,
	.endpoint = tcp_ep_open,
	.scalable_ep = tcp_scalable_ep, /* where desc->scalable_ep */
	.cntr_open = ofi_cntr_open,
	.poll_open = ofi_poll_open,
	.stx_ctx = ofi_stx_context,
	.srx_ctx = tcp_srx_context,
	.query_atomic = tcp_query_atomic,
	.query_collective = ofi_query_collective,
	.endpoint2 = fi_no_endpoint2,
};

int tcp_domain_open_as(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **domain, void *context,
		       const struct tcp_engine_desc *desc)
{
	struct util_fabric *uf;
	struct tcp_domain *dom;
	int ret;

	if (!fabric || !info || !info->domain_attr || !domain)
		return -FI_EINVAL;
	uf = container_of(fabric, struct util_fabric, fabric_fid);
	/* tcp, or a provider built on its engine */
	if (info->domain_attr->name &&
	    strcmp(info->domain_attr->name, uf->prov->name))
		return -FI_EINVAL;
	if (info->addr_format != FI_SOCKADDR_IN &&
	    info->addr_format != FI_SOCKADDR_IN6 &&
	    info->addr_format != FI_FORMAT_UNSPEC)
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = ofi_domain_init(uf, info, &dom->util, context);
	if (ret) {
		free(dom);
		return ret;
	}
	if (dom->util.addr_format != FI_SOCKADDR_IN6)
		dom->util.addr_format = FI_SOCKADDR_IN;
	dom->desc = desc;
	dom->util.trig = desc->trigger;
	dom->util.domain_fid.fid.ops = (struct fi_ops *)&tcp_domain_fi_ops;
	dom->util.domain_fid.ops = (struct fi_ops_domain *)&tcp_domain_ops;
	*domain = &dom->util.domain_fid;
	return 0;
}

/* tcp(7) offers none of what a provider built on the engine may add. */
static const struct tcp_engine_desc tcp_desc;

int tcp_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context)
{
	return tcp_domain_open_as(fabric, info, domain, context, &tcp_desc);
}
