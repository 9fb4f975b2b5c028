/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets.h - what the sockets provider adds to tcp's engine, shared
 * between its files: the entry point (sockets_init.c) and the FI_EP_DGRAM
 * endpoint over UDP (sockets_dgram.c).
 */
#ifndef SOCKETS_H
#define SOCKETS_H

#include "../tcp/tcp_engine.h"

#define SOCKETS_PROV_NAME "sockets"

/* sockets_dgram.c: FI_EP_DGRAM over UDP (IPv4 and IPv6). */
/* The DGRAM candidate derived from @base (sockets' RDM template). */
struct fi_info *sockets_dgram_template(const struct fi_info *base);
int sockets_dgram_ep_open(struct fid_domain *domain, struct fi_info *info,
			  struct fid_ep **ep, void *context);
int sockets_dgram_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **sep, void *context);
/* fi_srx_context of a domain opened for datagrams. */
int sockets_dgram_srx_context(struct fid_domain *domain,
			      struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			      void *context);

#endif /* SOCKETS_H */
