/*
 * tcp_init.c - the tcp provider's entry point and discovery: the provider
 * structure, its candidate fi_info (native FI_EP_RDM, FI_SOCKADDR_IN or
 * FI_SOCKADDR_IN6; the core matches the hints), turning node/service into
 * socket addresses, the default source address and the fabric object.
 *
 * Addresses: without a node the endpoint listens on an address of the
 * interface FI_TCP_IFACE names, or else of the first interface that is up
 * and not a loopback (other hosts must reach what we advertise), or else
 * on the loopback address of the family (127.0.0.1 or ::1); port 0 unless
 * a service names one. A node given with FI_SOURCE is bound as is. Names
 * are resolved with getaddrinfo, first answer of the asked family.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ofi_prov.h"
#include "tcp.h"

/* Persistent memory (fi_commit(3)) needs libpmem to make ranges durable. */
#if HAVE_LIBPMEM
#define TCP_PMEM_CAPS FI_RMA_PMEM
#else
#define TCP_PMEM_CAPS 0
#endif
#define TCP_RMA_CAPS                                                           \
	(FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |            \
	 FI_REMOTE_WRITE | FI_RMA_EVENT | TCP_PMEM_CAPS)
#define TCP_CAPS                                                               \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE |                  \
	 FI_DIRECTED_RECV | FI_MULTI_RECV | FI_REMOTE_CQ_DATA |                \
	 FI_LOCAL_COMM | FI_REMOTE_COMM | TCP_RMA_CAPS)
#define TCP_TX_CAPS                                                            \
	(FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_ATOMIC | FI_READ |         \
	 FI_WRITE | TCP_PMEM_CAPS)
#define TCP_RX_CAPS                                                            \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | FI_DIRECTED_RECV |         \
	 FI_MULTI_RECV | FI_RMA | FI_ATOMIC | FI_REMOTE_READ |                 \
	 FI_REMOTE_WRITE | FI_RMA_EVENT | TCP_PMEM_CAPS)
#define TCP_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

static struct fi_tx_attr tcp_tx_attr = {
	.caps = TCP_TX_CAPS,
	.op_flags = FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
		    FI_DELIVERY_COMPLETE |
		    (TCP_PMEM_CAPS ? FI_COMMIT_COMPLETE : 0),
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.inject_size = TCP_INJECT_SIZE,
	.size = TCP_TX_SIZE,
	.iov_limit = TCP_IOV_LIMIT,
	.rma_iov_limit = TCP_IOV_LIMIT,
};

static struct fi_rx_attr tcp_rx_attr = {
	.caps = TCP_RX_CAPS,
	.op_flags = FI_COMPLETION | FI_MULTI_RECV,
	.msg_order = FI_ORDER_SAS,
	.comp_order = FI_ORDER_NONE,
	.total_buffered_recv = 0,
	.size = TCP_RX_SIZE,
	.iov_limit = TCP_IOV_LIMIT,
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
	.tx_ctx_cnt = 1024,
	.rx_ctx_cnt = 1024,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = 1, /* fi_stx_context, fi_srx_context: util's */
	.max_ep_srx_ctx = 1,
	.mr_iov_limit = TCP_IOV_LIMIT,
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

static int tcp_family(uint32_t format)
{
	return format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
}

/* @node (NULL: loopback) and @service (NULL: port 0) as a socket address. */
static int tcp_resolve(const char *node, const char *service, int family,
		       void **addr, size_t *len)
{
	struct addrinfo hints = {.ai_family = family,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;
	int ret;

	if (!node)
		node = family == AF_INET6 ? "::1" : "127.0.0.1";
	ret = getaddrinfo(node, service ? service : "0", &hints, &res);
	if (ret)
		return -FI_ENODATA;
	*len = family == AF_INET6 ? sizeof(struct sockaddr_in6)
				  : sizeof(struct sockaddr_in);
	*addr = calloc(1, *len);
	if (*addr)
		memcpy(*addr, res->ai_addr, OFI_MIN(*len, res->ai_addrlen));
	freeaddrinfo(res);
	return *addr ? 0 : -FI_ENOMEM;
}

/* A hint's address must be of our format and family. */
static int tcp_hint_addr(void **addr, size_t *len, uint32_t format,
			 const void *src, size_t src_len)
{
	const struct sockaddr *sa = src;
	size_t want = tcp_addrlen(format);

	if (!src)
		return 0;
	if (src_len < want || sa->sa_family != tcp_family(format))
		return -FI_ENODATA;
	free(*addr);
	*addr = calloc(1, want);
	if (!*addr)
		return -FI_ENOMEM;
	memcpy(*addr, src, want);
	*len = want;
	return 0;
}

/* An interface address we may advertise when none was asked for. */
static bool tcp_iface_usable(const struct ifaddrs *i, const char *name,
			     int family)
{
	const struct sockaddr_in6 *sin6;

	if (!i->ifa_addr || i->ifa_addr->sa_family != family ||
	    !(i->ifa_flags & IFF_UP))
		return false;
	if (name)
		return !strcmp(i->ifa_name, name);
	if (i->ifa_flags & IFF_LOOPBACK)
		return false;
	/* Link-local needs a scope on the peer's side too: skip it. */
	sin6 = (const struct sockaddr_in6 *)i->ifa_addr;
	return family != AF_INET6 || !IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr);
}

/*
 * The source address of an endpoint given no node: FI_TCP_IFACE's address
 * (-FI_ENODATA when that interface has none of the family), else the first
 * usable interface's, else loopback. Port 0.
 */
static int tcp_default_src(const struct fi_info *fi, void **addr, size_t *len,
			   void *arg)
{
	int family = tcp_family(fi->addr_format);
	struct ifaddrs *ifa, *i;
	char *name = NULL;

	OFI_UNUSED(arg);
	fi_param_get_str(&tcp_prov, "iface", &name);
	if (name && !*name)
		name = NULL;
	if (getifaddrs(&ifa))
		return name ? -FI_ENODATA
			    : tcp_resolve(NULL, NULL, family, addr, len);
	for (i = ifa; i && !tcp_iface_usable(i, name, family); i = i->ifa_next)
		;
	if (!i) {
		freeifaddrs(ifa);
		return name ? -FI_ENODATA
			    : tcp_resolve(NULL, NULL, family, addr, len);
	}
	*len = family == AF_INET6 ? sizeof(struct sockaddr_in6)
				  : sizeof(struct sockaddr_in);
	*addr = calloc(1, *len);
	if (*addr) {
		memcpy(*addr, i->ifa_addr, *len);
		/* port 0: the same offset in both families */
		((struct sockaddr_in *)*addr)->sin_port = 0;
	}
	freeifaddrs(ifa);
	return *addr ? 0 : -FI_ENOMEM;
}

/*
 * FI_EP_MSG: the same data path over one connection. No AV, so no
 * FI_SOURCE or FI_DIRECTED_RECV (there is only one peer).
 */
#define TCP_MSG_DROP_CAPS (FI_SOURCE | FI_DIRECTED_RECV)

static void tcp_info_msg(struct fi_info *fi)
{
	fi->caps &= ~(uint64_t)TCP_MSG_DROP_CAPS;
	fi->rx_attr->caps &= ~(uint64_t)TCP_MSG_DROP_CAPS;
	fi->ep_attr->type = FI_EP_MSG;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
}

static int tcp_getinfo_one(uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints, uint32_t format,
			   enum fi_ep_type type, struct fi_info **info);

/*
 * FI_PROGRESS_AUTO (data, control, or both) is what the hints ask for:
 * endpoints then run a progress thread. Asked for nothing, we answer
 * FI_PROGRESS_MANUAL, which costs no thread.
 */
static void tcp_info_progress(struct fi_info *fi, const struct fi_info *hints)
{
	const struct fi_domain_attr *want = hints->domain_attr;

	if (!want)
		return;
	if (want->data_progress == FI_PROGRESS_AUTO)
		fi->domain_attr->data_progress = FI_PROGRESS_AUTO;
	if (want->control_progress == FI_PROGRESS_AUTO)
		fi->domain_attr->control_progress = FI_PROGRESS_AUTO;
}

static int tcp_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	uint32_t format = FI_SOCKADDR_IN;
	enum fi_ep_type type = FI_EP_UNSPEC;
	struct fi_info *rdm = NULL, *msg = NULL;
	int ret;

	*info = NULL;
	if (hints) {
		switch (hints->addr_format) {
		case FI_FORMAT_UNSPEC:
		case FI_SOCKADDR:
		case FI_SOCKADDR_IN:
			break;
		case FI_SOCKADDR_IN6:
			format = FI_SOCKADDR_IN6;
			break;
		default:
			return -FI_ENODATA;
		}
		if (hints->ep_attr)
			type = hints->ep_attr->type;
		if (type != FI_EP_UNSPEC && type != FI_EP_RDM &&
		    type != FI_EP_MSG)
			return -FI_ENODATA;
	}
	if (node && strchr(node, ':'))
		format = FI_SOCKADDR_IN6;
	/* RDM first: what asks for no type keeps getting RDM first. */
	if (type != FI_EP_MSG) {
		ret = tcp_getinfo_one(version, node, service, flags, hints,
				      format, FI_EP_RDM, &rdm);
		if (ret)
			return ret;
	}
	if (type != FI_EP_RDM) {
		ret = tcp_getinfo_one(version, node, service, flags, hints,
				      format, FI_EP_MSG, &msg);
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

static int tcp_getinfo_one(uint32_t version, const char *node,
			   const char *service, uint64_t flags,
			   const struct fi_info *hints, uint32_t format,
			   enum fi_ep_type type, struct fi_info **info)
{
	struct fi_info *fi;
	void **addr;
	size_t *len;
	int ret;

	fi = fi_dupinfo(&tcp_info_template);
	if (!fi)
		return -FI_ENOMEM;
	fi->addr_format = format;
	tcp_hmem_caps(fi); /* FI_HMEM when a device interface is up */
	if (type == FI_EP_MSG)
		tcp_info_msg(fi);
	if (hints) {
		ofi_info_hint_modes(version, hints, fi, TCP_MR_MODE,
				    TCP_PMEM_CAPS != 0);
		tcp_info_progress(fi, hints);
		ret = tcp_hint_addr(&fi->src_addr, &fi->src_addrlen, format,
				    hints->src_addr, hints->src_addrlen);
		if (!ret)
			ret = tcp_hint_addr(&fi->dest_addr, &fi->dest_addrlen,
					    format, hints->dest_addr,
					    hints->dest_addrlen);
		if (ret)
			goto err;
	}
	if (node || service) {
		addr = flags & FI_SOURCE ? &fi->src_addr : &fi->dest_addr;
		len = flags & FI_SOURCE ? &fi->src_addrlen : &fi->dest_addrlen;
		free(*addr);
		*addr = NULL;
		ret = tcp_resolve(node, service, tcp_family(format), addr, len);
		if (ret)
			goto err;
	}
	ret = ofi_info_default_src(fi, tcp_default_src, NULL);
	if (ret)
		goto err;
	*info = fi;
	return 0;
err:
	fi_freeinfo(fi);
	return ret;
}

static const struct fi_ops_fabric tcp_fabric_ops = {
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

struct fi_provider *ofi_tcp_ini(void)
{
	fi_param_define(&tcp_prov, "iface", FI_PARAM_STRING,
			"Interface whose address endpoints listen on and "
			"advertise when no node is given (default: the first "
			"interface that is up and not a loopback, else "
			"loopback)");
	fi_param_define(&tcp_prov, "max_unexp", FI_PARAM_SIZE_T,
			"Bytes of unexpected message payload an endpoint "
			"buffers; past it, senders wait (TCP flow control) "
			"until receives are posted (default: %llu)",
			(unsigned long long)TCP_UNEXP_MAX);
	fi_param_define(&tcp_prov, "shm", FI_PARAM_BOOL,
			"RDM endpoints reach peers on this host (same network "
			"namespace) through shared memory (default: yes)");
	return &tcp_prov;
}
