/*
 * sockets_init.c - the sockets provider's entry point (issue 18, first
 * milestone): FI_EP_MSG and FI_EP_RDM over FI_SOCKADDR_IN/IN6, served by
 * tcp's engine (prov/tcp and prov/util/util_sock.c) under sockets' own
 * name, parameters (FI_SOCKETS_IFACE, _MAX_UNEXP, _SHM) and attributes.
 * There is no second TCP engine: this file holds only what sockets
 * promises differently from tcp. Today that is automatic progress by
 * default (FI_PROGRESS_MANUAL still answered when asked) and scalable
 * endpoints with FI_NAMED_RX_CTX (the engine's, prov/tcp/tcp_sep.c; tcp's
 * domain refuses them). What fi_sockets(7) lists as not yet there (DGRAM,
 * triggered operations...) is not advertised; the calls answer
 * -FI_ENOSYS or -FI_EINVAL for an unknown flag, as tcp's do.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ofi_prov.h"
#include "../tcp/tcp.h"

#define SOCKETS_PROV_NAME "sockets"

static struct fi_info *sockets_template;

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

static int sockets_getinfo(uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *fi;
	int ret;

	*info = NULL;
	if (!sockets_template)
		return -FI_ENODATA;
	ret = tcp_getinfo_as(&sockets_prov, sockets_template, version, node,
			     service, flags, hints, info);
	if (ret || (hints && (hints->caps & FI_SOURCE_ERR)))
		return ret;
	/* It changes what completions say: only for who asks. */
	for (fi = *info; fi; fi = fi->next) {
		fi->caps &= ~FI_SOURCE_ERR;
		if (fi->rx_attr)
			fi->rx_attr->caps &= ~FI_SOURCE_ERR;
	}
	return 0;
}

static int sockets_fabric_open(struct fi_fabric_attr *attr,
			       struct fid_fabric **fabric, void *context)
{
	return ofi_fabric_create(&sockets_prov, attr, fabric, context,
				 &tcp_fabric_ops);
}

static void sockets_cleanup(void)
{
	fi_freeinfo(sockets_template);
	sockets_template = NULL;
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
	/* scalable endpoints (prov/tcp/tcp_sep.c), raw source addresses
	 * of unknown senders (util_comp.c), RDM only; named AVs shared
	 * between processes (util_av_shared.c) */
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
	tcp_define_params(&sockets_prov);
	return &sockets_prov;
}
