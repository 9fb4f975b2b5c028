/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_init.c - the tcp provider's entry point and discovery: the provider
 * structure, its candidate fi_info (native FI_EP_RDM and FI_EP_MSG,
 * FI_SOCKADDR_IN or FI_SOCKADDR_IN6; the core matches the hints) and the
 * fabric object. tcp_getinfo_as and tcp_fabric_ops serve every provider
 * built on tcp's engine (its own name, template and parameters).
 *
 * Addresses (util_info.c's ofi_sockaddr_*): without a node the endpoint
 * listens on an address of the interface FI_TCP_IFACE names, or else of
 * the first interface that is up and not a loopback (other hosts must
 * reach what we advertise), or else on the loopback address of the family
 * (127.0.0.1 or ::1); port 0 unless a service names one. A node given
 * with FI_SOURCE is bound as is. Names are resolved with getaddrinfo,
 * first answer of the asked family.
 */
#include "config.h"

#include <string.h>

#include "ofi_prov.h"
#include "tcp.h"

#define TCP_CAPS    (OFI_FULL_CAPS | FI_REMOTE_COMM)
#define TCP_MR_MODE OFI_MR_BASIC_MAP

static struct fi_tx_attr tcp_tx_attr = {
	.caps = OFI_FULL_TX_CAPS,
	.op_flags = OFI_FULL_TX_OP_FLAGS,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.inject_size = TCP_INJECT_SIZE,
	.size = TCP_TX_SIZE,
	.iov_limit = TCP_IOV_ATTR,
	.rma_iov_limit = TCP_IOV_ATTR,
};

static struct fi_rx_attr tcp_rx_attr = {
	.caps = OFI_FULL_RX_CAPS,
	.op_flags = OFI_FULL_RX_OP_FLAGS,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.total_buffered_recv = 0,
	.size = TCP_RX_SIZE,
	.iov_limit = TCP_IOV_ATTR,
};

static struct fi_ep_attr tcp_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_SOCK_TCP,
	.protocol_version = TCP_WIRE_VERSION,
	.max_msg_size = TCP_MAX_MSG_SIZE,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr tcp_domain_attr = {
	.name = TCP_PROV_NAME,
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = 0,
	.mr_key_size = sizeof(uint64_t),
	.cq_data_size = sizeof(uint64_t),
	.cq_cnt = 1024,
	.ep_cnt = 1024,
	/* Debian's sockets' count: OpenSHMEM's automatic STX management
	 * shares it out among a node's processes, one STX per share. */
	.tx_ctx_cnt = 16,
	.rx_ctx_cnt = 16,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = 1, /* fi_stx_context, fi_srx_context: util's */
	.max_ep_srx_ctx = 1,
	.mr_iov_limit = TCP_IOV_ATTR,
	.mr_cnt = 1 << 16,
	.cntr_cnt = 1024,
};

static struct fi_fabric_attr tcp_fabric_attr = {
	.name = TCP_PROV_NAME,
	.prov_version = TCP_PROV_VERSION,
};

const struct fi_info tcp_info_template = {
	.caps = TCP_CAPS,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &tcp_tx_attr,
	.rx_attr = &tcp_rx_attr,
	.ep_attr = &tcp_ep_attr,
	.domain_attr = &tcp_domain_attr,
	.fabric_attr = &tcp_fabric_attr,
};

/*
 * FI_EP_MSG: the same data path over one connection. No AV, so no
 * FI_SOURCE or FI_DIRECTED_RECV (there is only one peer). A template
 * with scalable endpoints (a provider's on the engine) keeps its context
 * counts and FI_NAMED_RX_CTX: an MSG SEP names the peer's receive
 * context (tcp_sep.c); tcp's template has one context and loses the cap.
 */
#define TCP_MSG_DROP_CAPS (FI_SOURCE | FI_DIRECTED_RECV | FI_SOURCE_ERR)

static void tcp_info_msg(struct fi_info *fi)
{
	uint64_t drop = TCP_MSG_DROP_CAPS;

	if (fi->ep_attr->tx_ctx_cnt <= 1)
		drop |= FI_NAMED_RX_CTX;
	fi->caps &= ~drop;
	fi->tx_attr->caps &= ~drop;
	fi->rx_attr->caps &= ~drop;
	fi->ep_attr->type = FI_EP_MSG;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
}

int tcp_getinfo_one(struct fi_provider *prov, const struct fi_info *tmpl,
		    uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    uint32_t format, enum fi_ep_type type,
		    struct fi_info **info)
{
	const struct ofi_info_addr_ops ops = {
		.resolve = ofi_sockaddr_resolve,
		.hint = ofi_sockaddr_hint,
		.default_src = ofi_sockaddr_default_src,
		.arg = prov,
		.mr_honoured = TCP_MR_MODE,
		/* what the template offers (not a provider's datagrams) */
		.pmem = (tmpl->caps & OFI_PMEM_CAPS) != 0,
		.any_progress = true,
		/* A fence wraps the endpoint's calls: for who asks, unless
		 * triggers wrap them anyway (sockets, as Debian's). Raw
		 * source addresses (sockets) change what completions say. */
		.on_request = FI_SOURCE_ERR |
			      ((tmpl->caps & FI_TRIGGER) ? 0 : FI_FENCE),
	};
	struct fi_info *fi;
	int ret;

	fi = fi_dupinfo(tmpl);
	if (!fi)
		return -FI_ENOMEM;
	fi->addr_format = format;
	/* FI_HMEM when a device interface is up (not on a provider's
	 * datagrams, which stage nothing) */
	if (type != FI_EP_DGRAM)
		tcp_hmem_caps(fi);
	if (type == FI_EP_MSG)
		tcp_info_msg(fi);
	ret = ofi_info_build(version, node, service, flags, hints, &ops, fi);
	if (ret) {
		fi_freeinfo(fi);
		return ret;
	}
	*info = fi;
	return 0;
}

int tcp_hint_kind(const char *node, const struct fi_info *hints,
		  uint32_t *format, enum fi_ep_type *type)
{
	*format = FI_SOCKADDR_IN;
	*type = FI_EP_UNSPEC;
	if (hints) {
		switch (hints->addr_format) {
		case FI_FORMAT_UNSPEC:
		case FI_SOCKADDR:
		case FI_SOCKADDR_IN:
			break;
		case FI_SOCKADDR_IN6:
			*format = FI_SOCKADDR_IN6;
			break;
		default:
			return -FI_ENODATA;
		}
		if (hints->ep_attr)
			*type = hints->ep_attr->type;
	}
	if (node && strchr(node, ':'))
		*format = FI_SOCKADDR_IN6;
	return 0;
}

int tcp_getinfo_as(struct fi_provider *prov, const struct fi_info *tmpl,
		   uint32_t version, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints,
		   struct fi_info **info)
{
	struct fi_info *rdm = NULL, *msg = NULL;
	enum fi_ep_type type;
	uint32_t format;
	int ret;

	*info = NULL;
	ret = tcp_hint_kind(node, hints, &format, &type);
	if (ret)
		return ret;
	if (type != FI_EP_UNSPEC && type != FI_EP_RDM && type != FI_EP_MSG)
		return -FI_ENODATA;
	/* RDM first: what asks for no type keeps getting RDM first. */
	if (type != FI_EP_MSG) {
		ret = tcp_getinfo_one(prov, tmpl, version, node, service, flags,
				      hints, format, FI_EP_RDM, &rdm);
		if (ret)
			return ret;
	}
	if (type != FI_EP_RDM) {
		ret = tcp_getinfo_one(prov, tmpl, version, node, service, flags,
				      hints, format, FI_EP_MSG, &msg);
		if (ret) {
			fi_freeinfo(rdm);
			return ret;
		}
	}
	if (rdm)
		rdm->next = msg;
	*info = rdm ? rdm : msg;
	return 0;
}

static int tcp_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	return tcp_getinfo_as(&tcp_prov, &tcp_info_template, version, node,
			      service, flags, hints, info);
}

const struct fi_ops_fabric tcp_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = tcp_domain_open,
	.passive_ep = tcp_passive_ep,
	.eq_open = ofi_eq_open,
	.wait_open = ofi_wait_open,
	.trywait = ofi_trywait,
	.domain2 = fi_no_domain2,
};

static int tcp_fabric_open(struct fi_fabric_attr *attr,
			   struct fid_fabric **fabric, void *context)
{
	return ofi_fabric_create(&tcp_prov, attr, fabric, context,
				 &tcp_fabric_ops);
}

static void tcp_cleanup(void)
{
}

struct fi_provider tcp_prov = {
	.version = TCP_PROV_VERSION,
	.fi_version = OFI_API_VERSION,
	.name = TCP_PROV_NAME,
	.getinfo = tcp_getinfo,
	.fabric = tcp_fabric_open,
	.cleanup = tcp_cleanup,
};

/*
 * Debian's names for the same endpoints: its native provider "net" (RDM
 * and MSG), and its rxm-over-tcp stacks, RDM only and listed only when
 * named in full. Open MPI's default provider exclusion list rejects any
 * name that begins with "tcp", so its default selection finds "net".
 */
const struct ofi_prov_alias ofi_tcp_aliases[] = {
	{"net", OFI_EP_BIT(FI_EP_RDM) | OFI_EP_BIT(FI_EP_MSG), false},
	{"tcp;ofi_rxm", OFI_EP_BIT(FI_EP_RDM), true},
	{"net;ofi_rxm", OFI_EP_BIT(FI_EP_RDM), true},
	{NULL, 0, false},
};

/* tcp's parameters, also defined for every provider built on its engine. */
void tcp_define_params(struct fi_provider *prov)
{
	fi_param_define(prov, "iface", FI_PARAM_STRING,
			"Interface whose address endpoints listen on and "
			"advertise when no node is given (default: the first "
			"interface that is up and not a loopback, else "
			"loopback)");
	ofi_param_define_range(
		prov, "max_unexp", FI_PARAM_SIZE_T, 0, SIZE_MAX,
		"Bytes of unexpected message payload an endpoint "
		"buffers; past it, senders wait (TCP flow control) "
		"until receives are posted (default: %llu)",
		(unsigned long long)TCP_UNEXP_MAX);
	fi_param_define(prov, "shm", FI_PARAM_BOOL,
			"RDM endpoints reach peers on this host (same network "
			"namespace) through shared memory (default: yes)");
}

struct fi_provider *ofi_tcp_ini(void)
{
	tcp_define_params(&tcp_prov);
	return &tcp_prov;
}
