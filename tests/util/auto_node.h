/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * auto_node.h - one RDM endpoint of its own fabric and domain, with an
 * AV, a CQ, and as the test asks a counter and an MR over its buffer:
 * the node the FI_PROGRESS_AUTO tests open (tests/util/auto_wake.c,
 * auto_bigread.c, tests/tcp/tcp_auto.c, auto_samehost.c). auto_node_open
 * is the one of the tests whose initiator reads from a target that makes
 * no call after its setup: FI_PROGRESS_AUTO, the CQ bound
 * FI_SELECTIVE_COMPLETION, a counter of its reads, an MR over the
 * caller's buffer; over the provider named by the caller, tcp and
 * sockets on IPv4. auto_node_open_info opens one from any fi_info.
 */
#ifndef AUTO_NODE_H
#define AUTO_NODE_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/*
 * @prov's endpoints of @type with @caps and @prog (both progress kinds),
 * the MR modes every provider here takes, or NULL. @inet: IPv4 addresses;
 * @node: the source address to bind (NULL: the provider's default).
 */
static inline struct fi_info *auto_node_getinfo(const char *prov, uint64_t caps,
						enum fi_ep_type type,
						enum fi_progress prog,
						bool inet, const char *node)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	if (!hints)
		return NULL;
	hints->caps = caps;
	hints->ep_attr->type = type;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	hints->domain_attr->data_progress = prog;
	hints->domain_attr->control_progress = prog;
	hints->fabric_attr->prov_name = strdup(prov);
	if (inet)
		hints->addr_format = FI_SOCKADDR_IN;
	if (fi_getinfo(FI_VERSION(1, 17), node, NULL, node ? FI_SOURCE : 0,
		       hints, &info))
		info = NULL;
	fi_freeinfo(hints);
	return info;
}

/* @prov's RDM endpoint with RMA and automatic progress, or NULL. */
static inline struct fi_info *auto_node_info(const char *prov)
{
	return auto_node_getinfo(prov, FI_RMA, FI_EP_RDM, FI_PROGRESS_AUTO,
				 strcmp(prov, "shm") != 0, NULL);
}

/*
 * The start of a test's main over @prov: tcp and sockets on the loopback,
 * and a hang after it a failure (SIGALRM in @alarm_s). 0, or 77 (the
 * automake skip, said) when @prov offers no FI_PROGRESS_AUTO.
 */
static inline int auto_node_start(const char *prov, unsigned int alarm_s)
{
	struct fi_info *info;

	setenv("FI_TCP_IFACE", "lo", 0);
	setenv("FI_SOCKETS_IFACE", "lo", 0);
	info = auto_node_info(prov);
	if (!info) {
		printf("SKIP: no %s with FI_PROGRESS_AUTO\n", prov);
		return 77;
	}
	fi_freeinfo(info);
	alarm(alarm_s);
	return 0;
}

/* What auto_node_open_info opens besides fabric, domain, AV, CQ, ep. */
struct auto_node_attr {
	enum fi_cq_format cq_format;
	enum fi_wait_obj cq_wait; /* FI_WAIT_NONE: no fi_cq_sread on it */
	uint64_t cq_flags;	  /* how the CQ is bound */
	uint64_t cntr_flags;	  /* how a counter is bound; 0: none */
	uint64_t mr_access;	  /* of an MR over buf and len; 0: none */
};

/* Opens @n from @info (@n's from the call on; NULL: -FI_ENODATA) as
 * @attr says, buf and len set where it asks an MR; 0 or fi_errno.
 * auto_node_close undoes what was opened, also after a failure. */
static inline int auto_node_open_info(struct auto_node *n, struct fi_info *info,
				      const struct auto_node_attr *attr)
{
	struct fi_cq_attr cq_attr = {.format = attr->cq_format,
				     .wait_obj = attr->cq_wait};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_UNSPEC};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int ret;

	n->info = info;
	if (!n->info)
		return -FI_ENODATA;
	n->addrlen = sizeof(n->addr);
	ret = fi_fabric(n->info->fabric_attr, &n->fabric, NULL);
	ret = ret ? ret : fi_domain(n->fabric, n->info, &n->domain, NULL);
	ret = ret ? ret : fi_av_open(n->domain, &av_attr, &n->av, NULL);
	ret = ret ? ret : fi_cq_open(n->domain, &cq_attr, &n->cq, NULL);
	if (!ret && attr->cntr_flags)
		ret = fi_cntr_open(n->domain, &cntr_attr, &n->cntr, NULL);
	ret = ret ? ret : fi_endpoint(n->domain, n->info, &n->ep, NULL);
	ret = ret ? ret : fi_ep_bind(n->ep, &n->av->fid, 0);
	ret = ret ? ret : fi_ep_bind(n->ep, &n->cq->fid, attr->cq_flags);
	if (!ret && attr->cntr_flags)
		ret = fi_ep_bind(n->ep, &n->cntr->fid, attr->cntr_flags);
	ret = ret ? ret : fi_enable(n->ep);
	if (!ret && attr->mr_access)
		ret = fi_mr_reg(n->domain, n->buf, n->len, attr->mr_access, 0,
				0, 0, &n->mr, NULL);
	ret = ret ? ret : fi_getname(&n->ep->fid, n->addr, &n->addrlen);
	return ret;
}

/* Opens @n over @prov with @n->buf and @n->len set; 0 or fi_errno.
 * auto_node_close undoes what was opened, also after a failure. */
static inline int auto_node_open(struct auto_node *n, const char *prov)
{
	static const struct auto_node_attr attr = {
		.cq_format = FI_CQ_FORMAT_CONTEXT,
		.cq_wait = FI_WAIT_UNSPEC,
		/* Reads complete to the CQ only when they ask. */
		.cq_flags = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION,
		.cntr_flags = FI_READ,
		.mr_access = FI_REMOTE_READ | FI_READ,
	};

	return auto_node_open_info(n, auto_node_info(prov), &attr);
}

/*
 * One completion of @cq by @deadline (CLOCK_MONOTONIC, ms), polled (which
 * progresses @cq's own endpoint only), @nap_us asleep between reads: 1, 0
 * on timeout, -1 on an error entry (said on stderr).
 */
static inline int auto_node_cq_wait(struct fid_cq *cq, uint64_t deadline,
				    unsigned int nap_us)
{
	struct fi_cq_tagged_entry e; /* room for an entry of any format */
	struct fi_cq_err_entry err;
	struct timespec ts;
	ssize_t n;

	do {
		n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			(void)fi_cq_readerr(cq, &err, 0);
			fprintf(stderr, "  completion error: %s\n",
				fi_strerror(err.err));
			return -1;
		}
		if (n != -FI_EAGAIN)
			return -1;
		if (nap_us)
			usleep(nap_us);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while ((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 <
		 deadline);
	return 0;
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

/*
 * Times the threads of this process whose name contains @name (the
 * providers' progress threads: "shm_prog", "<provider>-prog") went to
 * sleep so far: their voluntary context switches. -1 when /proc does not
 * tell.
 */
static inline long auto_node_thread_sleeps(const char *name)
{
	char path[300], line[128];
	struct dirent *d;
	long total = 0, n;
	DIR *dir = opendir("/proc/self/task");
	FILE *f;

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f) || !strstr(line, name)) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) ==
			    1)
				total += n;
		fclose(f);
	}
	closedir(dir);
	return total;
}

#endif
