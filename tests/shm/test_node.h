/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * test_node.h - the RDM endpoint multi-process tests open on a named
 * provider (tests/shm/shared_core.c, tests/tcp/tcp_shm.c): one CQ of the
 * tagged format for both directions, a table AV, enabled, and its name.
 */
#ifndef TEST_NODE_H
#define TEST_NODE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

struct test_node {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	uint64_t mr_mode; /* the domain's: how to address a remote MR */
};

/* @name gets the endpoint's name, @namelen its room in and length out.
 * 0 or a negative fi_errno (-FI_ENODATA: no such provider). */
static inline int test_node_open(struct test_node *n, const char *prov,
				 uint64_t caps, void *name, size_t *namelen)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->fabric_attr->prov_name = strdup(prov);
	if (!strcmp(prov, "tcp"))
		hints->addr_format = FI_SOCKADDR_IN;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	n->mr_mode = (uint64_t)info->domain_attr->mr_mode;
	ret = fi_fabric(info->fabric_attr, &n->fabric, NULL) ?:
	      fi_domain(n->fabric, info, &n->domain, NULL) ?:
	      fi_cq_open(n->domain, &cq_attr, &n->cq, NULL) ?:
	      fi_av_open(n->domain, &av_attr, &n->av, NULL) ?:
	      fi_endpoint(n->domain, info, &n->ep, NULL) ?:
	      fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ?:
	      fi_ep_bind(n->ep, &n->av->fid, 0) ?: fi_enable(n->ep);
	fi_freeinfo(info);
	return ret ? ret : fi_getname(&n->ep->fid, name, namelen);
}

static inline void test_node_close(struct test_node *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->av->fid);
	fi_close(&n->cq->fid);
	fi_close(&n->domain->fid);
	fi_close(&n->fabric->fid);
}

#endif /* TEST_NODE_H */
