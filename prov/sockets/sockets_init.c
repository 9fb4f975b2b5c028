/*
 * sockets_init.c - the sockets provider's entry point (issue 18, first
 * milestone): FI_EP_MSG and FI_EP_RDM over FI_SOCKADDR_IN/IN6, served by
 * tcp's engine (prov/tcp and prov/util/util_sock.c) under sockets' own
 * name, parameters (FI_SOCKETS_IFACE, _MAX_UNEXP, _SHM) and attributes.
 * There is no second TCP engine: this file holds only what sockets
 * promises differently from tcp. Today that is automatic progress by
 * default (FI_PROGRESS_MANUAL still answered when asked). What fi_sockets(7)
 * lists as not yet there (DGRAM, scalable endpoints, triggered operations,
 * FI_NAMED_RX_CTX...) is not advertised; the calls answer -FI_ENOSYS
 * (fi_scalable_ep, fi_tx_context) or -FI_EINVAL for an unknown flag, as
 * tcp's do.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ofi_prov.h"
#include "../tcp/tcp.h"

#define SOCKETS_PROV_NAME "sockets"
/* What sockets adds to tcp's caps: util_trigger.c on its endpoints. */
#define SOCKETS_TRIG_CAPS (FI_TRIGGER | FI_FENCE)

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
	*info = NULL;
	if (!sockets_template)
		return -FI_ENODATA;
	return tcp_getinfo_as(&sockets_prov, sockets_template, version, node,
			      service, flags, hints, info);
}

/* tcp's domain, offering triggered operations and deferred work
 * (prov/util/util_trigger.c). */
static int sockets_domain_open(struct fid_fabric *fabric, struct fi_info *info,
			       struct fid_domain **domain, void *context)
{
	int ret = tcp_domain_open(fabric, info, domain, context);

	if (!ret)
		container_of(*domain, struct util_domain, domain_fid)->trig =
			true;
	return ret;
}

static struct fi_ops_fabric sockets_fabric_ops;

static int sockets_fabric_open(struct fi_fabric_attr *attr,
			       struct fid_fabric **fabric, void *context)
{
	return ofi_fabric_create(&sockets_prov, attr, fabric, context,
				 &sockets_fabric_ops);
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
	fi->caps |= SOCKETS_TRIG_CAPS;
	fi->tx_attr->caps |= SOCKETS_TRIG_CAPS;
	fi->rx_attr->caps |= FI_TRIGGER;
	return fi;
}

struct fi_provider *ofi_sockets_ini(void)
{
	sockets_template = sockets_make_template();
	if (!sockets_template)
		return NULL;
	sockets_fabric_ops = tcp_fabric_ops;
	sockets_fabric_ops.domain = sockets_domain_open;
	tcp_define_params(&sockets_prov);
	return &sockets_prov;
}
