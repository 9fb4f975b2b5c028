/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_net.h - the setup the in-process tests of tcp and its neighbours
 * (tcp_dropin.c, tcp_teardown.c) share: hints for one provider and
 * endpoint type, fi_getinfo on loopback (and whether a provider answers
 * it), a fabric and domain (struct net) and an RDM endpoint with its own
 * CQ and AV (struct rdm), and waiting for a completion. Providers that address by socket (tcp, sockets)
 * are asked for FI_SOCKADDR_IN with 127.0.0.1 as source; shm for its own
 * format and no node.
 */
#ifndef TCP_NET_H
#define TCP_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "tcp_test.h"

/* How long a test waits for a completion. */
#define NET_WAIT_MS 5000

static inline struct fi_info *hints_for(const char *prov, enum fi_ep_type type)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->ep_attr->type = type;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY |
				      FI_MR_ALLOCATED | FI_MR_LOCAL;
	hints->fabric_attr->prov_name = strdup(prov);
	if (strcmp(prov, "shm"))
		hints->addr_format = FI_SOCKADDR_IN;
	return hints;
}

static inline int getinfo(const struct fi_info *hints, struct fi_info **info)
{
	const char *node =
		hints->addr_format == FI_SOCKADDR_IN ? "127.0.0.1" : NULL;

	*info = NULL;
	return fi_getinfo(FI_VERSION(1, 17), node, NULL, node ? FI_SOURCE : 0,
			  (struct fi_info *)hints, info);
}

/* Whether @prov answers an RDM fi_getinfo here. */
static inline bool have_prov(const char *prov)
{
	struct fi_info *hints = hints_for(prov, FI_EP_RDM), *info = NULL;
	bool ok = hints && !getinfo(hints, &info);

	fi_freeinfo(info);
	fi_freeinfo(hints);
	return ok;
}

/* A fabric and domain of one provider. */
struct net {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};

static inline int net_open(struct net *n, struct fi_info *hints)
{
	int ret;

	memset(n, 0, sizeof(*n));
	ret = getinfo(hints, &n->info);
	ret = ret ? ret : fi_fabric(n->info->fabric_attr, &n->fabric, NULL);
	return ret ? ret : fi_domain(n->fabric, n->info, &n->domain, NULL);
}

static inline void net_close(struct net *n)
{
	if (n->domain)
		fi_close(&n->domain->fid);
	if (n->fabric)
		fi_close(&n->fabric->fid);
	fi_freeinfo(n->info);
	memset(n, 0, sizeof(*n));
}

/* An RDM endpoint with its own CQ and AV. */
struct rdm {
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t addr[128];
	size_t addrlen;
};

static inline int rdm_open(struct net *n, struct rdm *r)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int ret;

	memset(r, 0, sizeof(*r));
	r->addrlen = sizeof(r->addr);
	ret = fi_av_open(n->domain, &av_attr, &r->av, NULL);
	ret = ret ? ret : fi_cq_open(n->domain, &cq_attr, &r->cq, NULL);
	ret = ret ? ret : fi_endpoint(n->domain, n->info, &r->ep, NULL);
	ret = ret ? ret : fi_ep_bind(r->ep, &r->av->fid, 0);
	ret = ret ? ret : fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_enable(r->ep);
	return ret ? ret : fi_getname(&r->ep->fid, r->addr, &r->addrlen);
}

static inline void rdm_close(struct rdm *r)
{
	if (r->ep)
		fi_close(&r->ep->fid);
	if (r->cq)
		fi_close(&r->cq->fid);
	if (r->av)
		fi_close(&r->av->fid);
	memset(r, 0, sizeof(*r));
}

/*
 * One completion on @cq within NET_WAIT_MS while progressing every CQ of
 * @all (NULL-terminated): 1, 0 on timeout, a negative fi_errno for an
 * error entry (its context in @e), -1 when the read itself fails.
 */
static inline int cq_wait_all(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
			      struct fid_cq **all)
{
	uint64_t end = now_ms() + NET_WAIT_MS;
	struct fi_cq_tagged_entry x;
	struct fi_cq_err_entry err;
	size_t i;
	ssize_t n;

	do {
		n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			(void)fi_cq_readerr(cq, &err, 0);
			*e = (struct fi_cq_tagged_entry){
				.op_context = err.op_context};
			return -err.err;
		}
		if (n != -FI_EAGAIN)
			return -1;
		for (i = 0; all[i]; i++)
			if (all[i] != cq)
				(void)fi_cq_read(all[i], &x, 0);
	} while (now_ms() < end);
	return 0;
}

#endif /* TCP_NET_H */
