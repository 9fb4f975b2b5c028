/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_alias.c - endpoint aliases (fi_ep_alias) on the sockets
 * provider, in-process, over RDM endpoints with FI_TRIGGER:
 *
 *  flags    an alias asks FI_TRANSMIT or FI_RECV, not both (-FI_EINVAL);
 *           fi_control(FI_GETOPSFLAG) on it gives the flags it was made
 *           with
 *  trigger  a plain fi_send through an alias made with FI_TRANSMIT |
 *           FI_TRIGGER takes its context as a struct
 *           fi_triggered_context: it waits for the parent's transmit
 *           counter, then goes once a plain send on the parent completes
 *           (as upstream fi_rdm_rma_trigger does with fi_write)
 *
 * One line per case; exit 0 when every case passed, 77 when sockets is not
 * built.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_trigger.h>

#include "sockets_test.h"

#define DEADLINE_MS 20000

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_ep *ep[2];
static struct fid_cq *cq[2];
static struct fid_cntr *txcntr;
static fi_addr_t peer;

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	char name[128];
	size_t len = sizeof(name);
	int ret, i;

	if (!hints)
		return 1;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TRIGGER;
	hints->mode = FI_CONTEXT;
	ret = sockets_getinfo(hints, &info);
	if (ret)
		return ret;
	if (fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL) ||
	    fi_av_open(domain, &av_attr, &av, NULL) ||
	    fi_cntr_open(domain, &cntr_attr, &txcntr, NULL))
		return 1;
	for (i = 0; i < 2; i++) {
		if (fi_endpoint(domain, info, &ep[i], NULL) ||
		    fi_cq_open(domain, &cq_attr, &cq[i], NULL) ||
		    fi_ep_bind(ep[i], &av->fid, 0) ||
		    fi_ep_bind(ep[i], &cq[i]->fid, FI_TRANSMIT | FI_RECV) ||
		    (!i && fi_ep_bind(ep[i], &txcntr->fid, FI_SEND)) ||
		    fi_enable(ep[i]))
			return 1;
	}
	if (fi_getname(&ep[1]->fid, name, &len) ||
	    fi_av_insert(av, name, 1, &peer, 0, NULL) != 1)
		return 1;
	return 0;
}

static void teardown(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		fi_close(&ep[i]->fid);
		fi_close(&cq[i]->fid);
	}
	fi_close(&txcntr->fid);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

static int flags_case(void)
{
	struct fid_ep *alias = NULL;
	uint64_t f;
	int ret, fails = 1;

	ret = fi_ep_alias(ep[0], &alias, FI_TRANSMIT | FI_RECV);
	CHECK(ret == -FI_EINVAL, "both directions: %d", ret);
	ret = fi_ep_alias(ep[0], &alias, FI_TRANSMIT | FI_TRIGGER);
	CHECK(!ret, "fi_ep_alias %d", ret);
	f = FI_TRANSMIT;
	ret = fi_control(&alias->fid, FI_GETOPSFLAG, &f);
	CHECK(!ret && (f & FI_TRIGGER), "FI_GETOPSFLAG %d %#llx", ret,
	      (unsigned long long)f);
	fails = 0;
out:
	if (alias)
		fi_close(&alias->fid);
	return fails ? -1 : 0;
}

/* @n completions on cq[@i] within @ms */
static int cq_wait(int i, int n, uint64_t ms)
{
	struct fi_cq_entry c;
	uint64_t end = now_ms() + ms;
	ssize_t r;

	while (n && now_ms() < end) {
		r = fi_cq_read(cq[i], &c, 1);
		if (r == 1)
			n--;
		else if (r != -FI_EAGAIN)
			return -1;
	}
	return n ? -1 : 0;
}

static int trigger_case(void)
{
	struct fi_triggered_context tctx = {
		.event_type = FI_TRIGGER_THRESHOLD,
	};
	struct fi_context rctx[2], sctx;
	char rbuf[2][16] = {{0}}, first[16] = "plain", second[16] = "aliased";
	struct fid_ep *alias = NULL;
	uint64_t base = fi_cntr_read(txcntr);
	int ret, i, fails = 1;

	for (i = 0; i < 2; i++) {
		ret = fi_recv(ep[1], rbuf[i], sizeof(rbuf[i]), NULL,
			      FI_ADDR_UNSPEC, &rctx[i]);
		CHECK(!ret, "fi_recv %d", ret);
	}
	ret = fi_ep_alias(ep[0], &alias, FI_TRANSMIT | FI_TRIGGER);
	CHECK(!ret, "fi_ep_alias %d", ret);
	tctx.trigger.threshold.cntr = txcntr;
	tctx.trigger.threshold.threshold = base + 1;
	ret = fi_send(alias, second, sizeof(second), NULL, peer, &tctx);
	CHECK(!ret, "triggered fi_send %d", ret);
	/* it waits for the counter: nothing has arrived */
	CHECK(cq_wait(1, 1, 500) && !rbuf[0][0],
	      "the triggered send went early");
	ret = fi_send(ep[0], first, sizeof(first), NULL, peer, &sctx);
	CHECK(!ret, "fi_send %d", ret);
	CHECK(!cq_wait(1, 2, DEADLINE_MS), "receives");
	CHECK(!strcmp(rbuf[0], first) && !strcmp(rbuf[1], second),
	      "got '%s' '%s'", rbuf[0], rbuf[1]);
	CHECK(!cq_wait(0, 2, DEADLINE_MS), "send completions");
	fails = 0;
out:
	if (alias)
		fi_close(&alias->fid);
	return fails ? -1 : 0;
}

static const struct sockets_case cases[] = {
	{"flags", flags_case},
	{"trigger", trigger_case},
};

int main(void)
{
	return sockets_main(setup, "sockets RDM endpoints with FI_TRIGGER",
			    cases, sizeof(cases) / sizeof(cases[0]), teardown);
}
