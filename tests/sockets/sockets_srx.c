/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_srx.c - shared receive contexts (fi_srx_context) on the sockets
 * provider, in-process, for each endpoint type sockets offers (RDM, MSG,
 * DGRAM):
 *
 *  open  fi_srx_context with the getinfo entry's own rx_attr (sockets'
 *        caps, FI_TRIGGER and FI_NAMED_RX_CTX among them) opens one, as
 *        upstream fi_shared_ctx asks
 *  recv  (RDM, DGRAM) two endpoints bound to one context and enabled; a
 *        third sends one message to each; both land in receives posted
 *        on the context, each completing on its own endpoint's CQ
 *
 * One line per case; exit 0 when every case passed, 77 when sockets is not
 * built.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "sockets_test.h"

#define DEADLINE_MS 20000
#define MSGLEN	    32

struct srx_env {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *srx;
	struct fid_ep *ep[3]; /* two bound to srx, the sender */
	struct fid_cq *cq[3];
	fi_addr_t addr[2];
};

static int env_info(enum fi_ep_type type, struct fi_info **info)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return -1;
	hints->ep_attr->type = type;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = 0;
	return sockets_getinfo(hints, info);
}

static void env_close(struct srx_env *e)
{
	int i;

	for (i = 0; i < 3; i++)
		if (e->ep[i])
			fi_close(&e->ep[i]->fid);
	for (i = 0; i < 3; i++)
		if (e->cq[i])
			fi_close(&e->cq[i]->fid);
	if (e->srx)
		fi_close(&e->srx->fid);
	if (e->av)
		fi_close(&e->av->fid);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	fi_freeinfo(e->info);
	memset(e, 0, sizeof(*e));
}

/* fabric, domain and a context opened on the entry's own rx_attr */
static int env_open(struct srx_env *e, enum fi_ep_type type)
{
	int ret;

	memset(e, 0, sizeof(*e));
	ret = env_info(type, &e->info);
	if (ret)
		return ret;
	ret = fi_fabric(e->info->fabric_attr, &e->fabric, NULL);
	CHECK(!ret, "fi_fabric %d", ret);
	ret = fi_domain(e->fabric, e->info, &e->domain, NULL);
	CHECK(!ret, "fi_domain %d", ret);
	ret = fi_srx_context(e->domain, e->info->rx_attr, &e->srx, NULL);
	CHECK(!ret, "fi_srx_context %d", ret);
	return 0;
out:
	env_close(e);
	return -1;
}

static int open_case(enum fi_ep_type type)
{
	struct srx_env e;
	int ret = env_open(&e, type);

	if (!ret)
		env_close(&e);
	return ret;
}

static int open_rdm(void)
{
	return open_case(FI_EP_RDM);
}

static int open_msg(void)
{
	return open_case(FI_EP_MSG);
}

static int open_dgram(void)
{
	return open_case(FI_EP_DGRAM);
}

static int ep_open(struct srx_env *e, int i)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	int ret;

	ret = fi_endpoint(e->domain, e->info, &e->ep[i], NULL);
	CHECK(!ret, "fi_endpoint %d", ret);
	ret = fi_cq_open(e->domain, &cq_attr, &e->cq[i], NULL);
	CHECK(!ret, "fi_cq_open %d", ret);
	ret = fi_ep_bind(e->ep[i], &e->av->fid, 0);
	CHECK(!ret, "bind av %d", ret);
	ret = fi_ep_bind(e->ep[i], &e->cq[i]->fid, FI_TRANSMIT | FI_RECV);
	CHECK(!ret, "bind cq %d", ret);
	if (i < 2) {
		ret = fi_ep_bind(e->ep[i], &e->srx->fid, 0);
		CHECK(!ret, "bind srx %d", ret);
	}
	ret = fi_enable(e->ep[i]);
	CHECK(!ret, "fi_enable %d", ret);
	return 0;
out:
	return -1;
}

/* One completion on @cq within the deadline; its context in @ctx. */
static int cq_wait(struct fid_cq *cq, void **ctx)
{
	struct fi_cq_entry c;
	uint64_t end = now_ms() + DEADLINE_MS;
	ssize_t n;

	do {
		n = fi_cq_read(cq, &c, 1);
		if (n == 1) {
			*ctx = c.op_context;
			return 0;
		}
		if (n != -FI_EAGAIN)
			return -1;
	} while (now_ms() < end);
	return -1;
}

static int recv_case(enum fi_ep_type type)
{
	struct fi_context rctx[2], sctx[2];
	char rbuf[2][MSGLEN], sbuf[2][MSGLEN];
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	uint8_t name[128];
	size_t len;
	struct srx_env e;
	void *ctx;
	char *got;
	int ret, i, fails = 1;

	ret = env_open(&e, type);
	if (ret)
		return ret;
	ret = fi_av_open(e.domain, &av_attr, &e.av, NULL);
	CHECK(!ret, "fi_av_open %d", ret);
	for (i = 0; i < 3; i++)
		if (ep_open(&e, i))
			goto out;
	for (i = 0; i < 2; i++) {
		len = sizeof(name);
		ret = fi_getname(&e.ep[i]->fid, name, &len);
		CHECK(!ret, "fi_getname %d", ret);
		ret = fi_av_insert(e.av, name, 1, &e.addr[i], 0, NULL);
		CHECK(ret == 1, "fi_av_insert %d", ret);
	}
	for (i = 0; i < 2; i++) {
		memset(rbuf[i], 0, MSGLEN);
		ret = fi_recv(e.srx, rbuf[i], MSGLEN, NULL, FI_ADDR_UNSPEC,
			      &rctx[i]);
		CHECK(!ret, "fi_recv on srx %d", ret);
	}
	for (i = 0; i < 2; i++) {
		snprintf(sbuf[i], MSGLEN, "to endpoint %d", i);
		do {
			ret = fi_send(e.ep[2], sbuf[i], MSGLEN, NULL, e.addr[i],
				      &sctx[i]);
		} while (ret == -FI_EAGAIN);
		CHECK(!ret, "fi_send %d", ret);
	}
	for (i = 0; i < 2; i++)
		CHECK(!cq_wait(e.cq[2], &ctx), "send completion %d", i);
	/* each endpoint's CQ has one receive: the message sent to it */
	for (i = 0; i < 2; i++) {
		CHECK(!cq_wait(e.cq[i], &ctx), "endpoint %d: no receive", i);
		CHECK(ctx == &rctx[0] || ctx == &rctx[1], "foreign context");
		got = ctx == &rctx[0] ? rbuf[0] : rbuf[1];
		CHECK(!strcmp(got, sbuf[i]), "endpoint %d: wrong data", i);
	}
	fails = 0;
out:
	env_close(&e);
	return fails ? -1 : 0;
}

static int recv_rdm(void)
{
	return recv_case(FI_EP_RDM);
}

static int recv_dgram(void)
{
	return recv_case(FI_EP_DGRAM);
}

static int setup(void)
{
	struct fi_info *info;
	int ret = env_info(FI_EP_RDM, &info);

	if (!ret)
		fi_freeinfo(info);
	return ret;
}

static void teardown(void)
{
}

static const struct sockets_case cases[] = {
	{"open rdm", open_rdm},	    {"open msg", open_msg},
	{"open dgram", open_dgram}, {"recv rdm", recv_rdm},
	{"recv dgram", recv_dgram},
};

int main(void)
{
	return sockets_main(setup, "sockets RDM entry", cases,
			    sizeof(cases) / sizeof(cases[0]), teardown);
}
