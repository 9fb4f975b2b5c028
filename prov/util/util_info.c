/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_info.c - helpers for a provider's getinfo: the default source
 * address every returned fi_info carries when the caller named none, and
 * the modes echoed from the hints.
 *
 * fi_getinfo(3) answers with the address "that corresponds to the
 * indicated fabric, domain, node, and/or service": with neither node nor
 * FI_SOURCE that is the address an endpoint opened from the entry would
 * start from. Each provider knows what that is; this only walks the list.
 *
 * Also the rest every provider's getinfo did alike (ofi_info_build), and
 * the socket-address discovery of the providers over IP (tcp, sockets).
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ofi_coll.h"

int ofi_info_default_src(struct fi_info *list, ofi_src_addr_fn make, void *arg)
{
	struct fi_info *fi;
	void *addr;
	size_t len;
	int ret;

	if (!make)
		return -FI_EINVAL;
	for (fi = list; fi; fi = fi->next) {
		if (fi->src_addr)
			continue;
		addr = NULL;
		len = 0;
		ret = make(fi, &addr, &len, arg);
		if (ret)
			return ret;
		if (!addr || !len) {
			free(addr);
			return -FI_EINVAL;
		}
		fi->src_addr = addr;
		fi->src_addrlen = len;
	}
	return 0;
}

/*
 * The core matches a candidate's mr_mode as bits the provider requires and
 * returns them. A provider that requires none (@honoured: the bits it can
 * work with when asked) echoes those asked for, or all of them for the
 * old FI_MR_BASIC. FI_COMMIT_MANUAL (fi_commit(3)) is echoed when the
 * provider offers persistent memory (@pmem).
 */
void ofi_info_hint_modes(uint32_t version, const struct fi_info *hints,
			 struct fi_info *fi, int honoured, bool pmem)
{
	int mr = hints->domain_attr ? hints->domain_attr->mr_mode : 0;

	if (FI_VERSION_GE(version, FI_VERSION(1, 5)) && mr != FI_MR_BASIC &&
	    mr != FI_MR_SCALABLE)
		fi->domain_attr->mr_mode = mr & honoured;
	else if (mr == FI_MR_BASIC)
		fi->domain_attr->mr_mode = honoured;
	if (pmem && (hints->mode & FI_COMMIT_MANUAL))
		fi->mode |= FI_COMMIT_MANUAL;
	ofi_coll_info(hints, fi);
}

/* A hint's explicit progress model, for a provider that runs either. */
static void util_info_progress(struct fi_info *fi, const struct fi_info *hints)
{
	const struct fi_domain_attr *want = hints->domain_attr;

	if (!want)
		return;
	if (want->data_progress != FI_PROGRESS_UNSPEC)
		fi->domain_attr->data_progress = want->data_progress;
	if (want->control_progress != FI_PROGRESS_UNSPEC)
		fi->domain_attr->control_progress = want->control_progress;
}

static int util_info_hints(const struct fi_info *hints,
			   const struct ofi_info_addr_ops *ops,
			   struct fi_info *fi)
{
	int ret;

	if (ops->any_progress)
		util_info_progress(fi, hints);
	if (hints->src_addr) {
		ret = ops->hint(fi, hints->addr_format, hints->src_addr,
				hints->src_addrlen, &fi->src_addr,
				&fi->src_addrlen);
		if (ret)
			return ret;
	}
	if (!hints->dest_addr)
		return 0;
	return ops->hint(fi, hints->addr_format, hints->dest_addr,
			 hints->dest_addrlen, &fi->dest_addr,
			 &fi->dest_addrlen);
}

int ofi_info_build(uint32_t version, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints,
		   const struct ofi_info_addr_ops *ops, struct fi_info *fi)
{
	uint64_t drop = ops->on_request;
	void **addr;
	size_t *len;
	int ret;

	if (hints)
		drop &= ~(hints->caps |
			  (hints->tx_attr ? hints->tx_attr->caps : 0) |
			  (hints->rx_attr ? hints->rx_attr->caps : 0));
	fi->caps &= ~drop;
	if (fi->tx_attr)
		fi->tx_attr->caps &= ~drop;
	if (fi->rx_attr)
		fi->rx_attr->caps &= ~drop;
	if (hints) {
		ofi_info_hint_modes(version, hints, fi, ops->mr_honoured,
				    ops->pmem);
		ret = util_info_hints(hints, ops, fi);
		if (ret)
			return ret;
	}
	if (node || service) {
		addr = flags & FI_SOURCE ? &fi->src_addr : &fi->dest_addr;
		len = flags & FI_SOURCE ? &fi->src_addrlen : &fi->dest_addrlen;
		free(*addr);
		*addr = NULL;
		*len = 0;
		ret = ops->resolve(fi, node, service, addr, len);
		if (ret)
			return ret;
	}
	return ofi_info_default_src(fi, ops->default_src, ops->arg);
}

static int util_sock_family(uint32_t format)
{
	return format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
}

size_t ofi_sockaddr_len(uint32_t addr_format)
{
	return addr_format == FI_SOCKADDR_IN6 ? sizeof(struct sockaddr_in6)
					      : sizeof(struct sockaddr_in);
}

int ofi_sockaddr_resolve(const struct fi_info *fi, const char *node,
			 const char *service, void **addr, size_t *len)
{
	int family = util_sock_family(fi->addr_format);
	struct addrinfo hints = {.ai_family = family,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *res;

	if (!node)
		node = family == AF_INET6 ? "::1" : "127.0.0.1";
	if (getaddrinfo(node, service ? service : "0", &hints, &res))
		return -FI_ENODATA;
	*len = ofi_sockaddr_len(fi->addr_format);
	*addr = calloc(1, *len);
	if (*addr)
		memcpy(*addr, res->ai_addr, OFI_MIN(*len, res->ai_addrlen));
	freeaddrinfo(res);
	return *addr ? 0 : -FI_ENOMEM;
}

/* A hint's address must be of the candidate's format and family. */
int ofi_sockaddr_hint(const struct fi_info *fi, uint32_t hint_format,
		      const void *src, size_t src_len, void **addr, size_t *len)
{
	const struct sockaddr *sa = src;
	size_t want = ofi_sockaddr_len(fi->addr_format);

	OFI_UNUSED(hint_format); /* the candidate's format was chosen from it */
	if (src_len < want ||
	    sa->sa_family != util_sock_family(fi->addr_format))
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
static bool util_iface_usable(const struct ifaddrs *i, const char *name,
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
 * -FI_ENODATA when the named interface has no address of the family;
 * with no name, loopback when no interface fits.
 */
int ofi_sockaddr_default_src(const struct fi_info *fi, void **addr, size_t *len,
			     void *arg)
{
	int family = util_sock_family(fi->addr_format);
	struct ifaddrs *ifa, *i;
	char *name = NULL;

	fi_param_get_str(arg, "iface", &name);
	if (name && !*name)
		name = NULL;
	if (getifaddrs(&ifa))
		return name ? -FI_ENODATA
			    : ofi_sockaddr_resolve(fi, NULL, NULL, addr, len);
	for (i = ifa; i && !util_iface_usable(i, name, family); i = i->ifa_next)
		;
	if (!i) {
		freeifaddrs(ifa);
		return name ? -FI_ENODATA
			    : ofi_sockaddr_resolve(fi, NULL, NULL, addr, len);
	}
	*len = ofi_sockaddr_len(fi->addr_format);
	*addr = calloc(1, *len);
	if (*addr) {
		memcpy(*addr, i->ifa_addr, *len);
		/* port 0: the same offset in both families */
		((struct sockaddr_in *)*addr)->sin_port = 0;
	}
	freeifaddrs(ifa);
	return *addr ? 0 : -FI_ENOMEM;
}
