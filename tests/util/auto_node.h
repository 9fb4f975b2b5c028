/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * auto_node.h - one RDM endpoint of its own fabric and domain under
 * FI_PROGRESS_AUTO, with an AV, a CQ bound FI_SELECTIVE_COMPLETION, a
 * counter of its reads and an MR over the caller's buffer, for the tests
 * whose initiator reads from a target that makes no call after its
 * setup (tests/util/auto_wake.c, auto_bigread.c). Over the provider
 * named by the caller; tcp and sockets on IPv4.
 */
#ifndef AUTO_NODE_H
#define AUTO_NODE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

struct auto_node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_ep *ep;
	struct fid_mr *mr;
	void *buf;
	size_t len;
	uint8_t addr[64];
	size_t addrlen;
};

/* @prov's RDM endpoint with RMA and automatic progress, or NULL. */
static inline struct fi_info *auto_node_info(const char *prov)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	if (!hints)
		return NULL;
	hints->caps = FI_RMA;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	hints->fabric_attr->prov_name = strdup(prov);
	if (strcmp(prov, "shm"))
		hints->addr_format = FI_SOCKADDR_IN;
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info))
		info = NULL;
	fi_freeinfo(hints);
	return info;
}

/* Opens @n over @prov with @n->buf and @n->len set; 0 or fi_errno.
 * auto_node_close undoes what was opened, also after a failure. */
static inline int auto_node_open(struct auto_node *n, const char *prov)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT,
				     .wait_obj = FI_WAIT_UNSPEC};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_UNSPEC};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int ret;

	n->info = auto_node_info(prov);
	if (!n->info)
		return -FI_ENODATA;
	n->addrlen = sizeof(n->addr);
	ret = fi_fabric(n->info->fabric_attr, &n->fabric, NULL);
	ret = ret ? ret : fi_domain(n->fabric, n->info, &n->domain, NULL);
	ret = ret ? ret : fi_av_open(n->domain, &av_attr, &n->av, NULL);
	ret = ret ? ret : fi_cq_open(n->domain, &cq_attr, &n->cq, NULL);
	ret = ret ? ret : fi_cntr_open(n->domain, &cntr_attr, &n->cntr, NULL);
	ret = ret ? ret : fi_endpoint(n->domain, n->info, &n->ep, NULL);
	ret = ret ? ret : fi_ep_bind(n->ep, &n->av->fid, 0);
	/* Reads complete to the CQ only when they ask. */
	ret = ret ? ret
		  : fi_ep_bind(n->ep, &n->cq->fid,
			       FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION);
	ret = ret ? ret : fi_ep_bind(n->ep, &n->cntr->fid, FI_READ);
	ret = ret ? ret : fi_enable(n->ep);
	ret = ret ? ret
		  : fi_mr_reg(n->domain, n->buf, n->len,
			      FI_REMOTE_READ | FI_READ, 0, 0, 0, &n->mr, NULL);
	ret = ret ? ret : fi_getname(&n->ep->fid, n->addr, &n->addrlen);
	return ret;
}

/* Opens the target @b, then the initiator @a (buffers set), and inserts
 * @b's name into @a's AV at *@dest; 0 or fi_errno. */
static inline int auto_node_pair(struct auto_node *a, struct auto_node *b,
				 const char *prov, fi_addr_t *dest)
{
	int ret;

	ret = auto_node_open(b, prov);
	ret = ret ? ret : auto_node_open(a, prov);
	if (ret)
		return ret;
	return fi_av_insert(a->av, b->addr, 1, dest, 0, NULL) == 1 ? 0
								   : -FI_EINVAL;
}

static inline void auto_node_close(struct auto_node *n)
{
	if (n->ep)
		fi_close(&n->ep->fid);
	if (n->mr)
		fi_close(&n->mr->fid);
	if (n->cntr)
		fi_close(&n->cntr->fid);
	if (n->cq)
		fi_close(&n->cq->fid);
	if (n->av)
		fi_close(&n->av->fid);
	if (n->domain)
		fi_close(&n->domain->fid);
	if (n->fabric)
		fi_close(&n->fabric->fid);
	fi_freeinfo(n->info);
}

/* Where @target's buffer starts for a read: its address where the
 * domain asks for FI_MR_VIRT_ADDR, else offset 0 (sockets answers
 * mr_mode 0, as Debian's does). */
static inline uint64_t auto_node_rma_addr(const struct auto_node *target)
{
	bool virt = target->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;

	return virt ? (uintptr_t)target->buf : 0;
}

#endif
