/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_sizes.c - the sizes sockets advertises as Debian's sockets does
 *, held through the public API, in-process, on loopback:
 *
 *  attr    RDM and MSG entries: inject_size at least 255,
 *          max_ep_stx_ctx and max_ep_srx_ctx 128 (hints asking for 128
 *          shared endpoints are answered)
 *  share   128 RDM endpoints bound to one fi_stx_context and one
 *          fi_srx_context: a message from the last to the first lands in
 *          a receive posted to the srx, and back
 *
 * Exit 0 when both passed, 77 when sockets is not built.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "sockets_test.h"

#define VER	 FI_VERSION(1, 17)
#define SHARED	 128
#define WAIT_SEC 30

static struct fi_info *hints_shared(enum fi_ep_type type)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		abort();
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = type;
	hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	hints->domain_attr->max_ep_stx_ctx = SHARED;
	hints->domain_attr->max_ep_srx_ctx = SHARED;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	/* small queues: 128 endpoints of the default 1024 are slow to set up */
	hints->tx_attr->size = 16;
	hints->rx_attr->size = 16;
	return hints;
}

static int get(enum fi_ep_type type, struct fi_info **info)
{
	struct fi_info *hints = hints_shared(type);
	int ret = fi_getinfo(VER, NULL, NULL, 0, hints, info);

	fi_freeinfo(hints);
	return ret;
}

static int case_attr(void)
{
	enum fi_ep_type types[] = {FI_EP_RDM, FI_EP_MSG};
	struct fi_info *info;
	int i, ok;

	for (i = 0; i < 2; i++) {
		REQUIRE(!get(types[i], &info));
		ok = info->tx_attr->inject_size >= 255 &&
		     info->domain_attr->max_ep_stx_ctx == SHARED &&
		     info->domain_attr->max_ep_srx_ctx == SHARED;
		fi_freeinfo(info);
		REQUIRE(ok);
	}
	return 0;
}

/* Completions on @cq until one with @ctx (receive), or a timeout. */
static int wait_ctx(struct fid_cq *cq, void *ctx)
{
	struct fi_cq_tagged_entry e;
	double end = now() + WAIT_SEC;
	ssize_t n;

	while (now() < end) {
		n = fi_cq_read(cq, &e, 1);
		if (n == 1 && e.op_context == ctx)
			return 0;
		if (n < 0 && n != -FI_EAGAIN)
			return (int)n;
	}
	return -FI_ETIMEDOUT;
}

struct shared {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_stx *stx;
	struct fid_ep *srx;
	struct fid_ep *ep[SHARED];
};

static int share_open(struct shared *s)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_rx_attr rx_attr = {.size = 16};
	int i;

	REQUIRE(!get(FI_EP_RDM, &s->info));
	REQUIRE(!fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	REQUIRE(!fi_domain(s->fabric, s->info, &s->domain, NULL));
	REQUIRE(!fi_av_open(s->domain, &av_attr, &s->av, NULL));
	REQUIRE(!fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
	REQUIRE(!fi_stx_context(s->domain, NULL, &s->stx, NULL));
	REQUIRE(!fi_srx_context(s->domain, &rx_attr, &s->srx, NULL));
	for (i = 0; i < SHARED; i++) {
		struct fid_ep *ep;

		REQUIRE(!fi_endpoint(s->domain, s->info, &s->ep[i], NULL));
		ep = s->ep[i];
		REQUIRE(!fi_ep_bind(ep, &s->stx->fid, 0));
		REQUIRE(!fi_ep_bind(ep, &s->srx->fid, 0));
		REQUIRE(!fi_ep_bind(ep, &s->av->fid, 0));
		REQUIRE(!fi_ep_bind(ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
		REQUIRE(!fi_enable(ep));
	}
	return 0;
}

static void share_close(struct shared *s)
{
	int i;

	for (i = 0; i < SHARED; i++)
		if (s->ep[i])
			fi_close(&s->ep[i]->fid);
	if (s->srx)
		fi_close(&s->srx->fid);
	if (s->stx)
		fi_close(&s->stx->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	if (s->av)
		fi_close(&s->av->fid);
	if (s->domain)
		fi_close(&s->domain->fid);
	if (s->fabric)
		fi_close(&s->fabric->fid);
	fi_freeinfo(s->info);
}

static int share_traffic(struct shared *s)
{
	char name[64], rx[2][16];
	size_t len = sizeof(name);
	fi_addr_t first, last;

	REQUIRE(!fi_getname(&s->ep[0]->fid, name, &len));
	REQUIRE(fi_av_insert(s->av, name, 1, &first, 0, NULL) == 1);
	len = sizeof(name);
	REQUIRE(!fi_getname(&s->ep[SHARED - 1]->fid, name, &len));
	REQUIRE(fi_av_insert(s->av, name, 1, &last, 0, NULL) == 1);
	REQUIRE(!fi_recv(s->srx, rx[0], sizeof(rx[0]), NULL, FI_ADDR_UNSPEC,
			 rx[0]));
	REQUIRE(!fi_send(s->ep[SHARED - 1], "to first", 9, NULL, first, NULL));
	REQUIRE(!wait_ctx(s->cq, rx[0]) && !strcmp(rx[0], "to first"));
	REQUIRE(!fi_recv(s->srx, rx[1], sizeof(rx[1]), NULL, FI_ADDR_UNSPEC,
			 rx[1]));
	REQUIRE(!fi_send(s->ep[0], "to last", 8, NULL, last, NULL));
	REQUIRE(!wait_ctx(s->cq, rx[1]) && !strcmp(rx[1], "to last"));
	return 0;
}

static int case_share(void)
{
	struct shared s;
	int ret;

	memset(&s, 0, sizeof(s));
	ret = share_open(&s) ?: share_traffic(&s);
	share_close(&s);
	return ret;
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *probe = NULL;
	int ret;

	setvbuf(stdout, NULL, _IONBF, 0);
	/* 128 endpoints: TCP only, no same-host regions to map */
	setenv("FI_SOCKETS_SHM", "0", 1);
	hints->fabric_attr->prov_name = strdup("sockets");
	ret = fi_getinfo(VER, NULL, NULL, 0, hints, &probe);
	fi_freeinfo(hints);
	fi_freeinfo(probe);
	if (ret) {
		printf("SKIP: no sockets provider (%d)\n", ret);
		return 77;
	}
	printf("%s: attr\n", case_attr() ? "FAIL" : "PASS");
	printf("%s: share\n", case_share() ? "FAIL" : "PASS");
	return failed;
}
