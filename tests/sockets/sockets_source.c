/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_source.c - FI_SOURCE and FI_SOURCE_ERR of the sockets provider
 * for a sender that is not in the receiver's AV (two RDM endpoints of one
 * process over loopback; the sender knows the receiver, not the reverse):
 *
 *  notavail  with FI_SOURCE alone the message completes normally and
 *            fi_cq_readfrom reports FI_ADDR_NOTAVAIL
 *  err       with FI_SOURCE_ERR the same message (one arriving before its
 *            receive is posted, one after) completes as an error entry
 *            FI_EADDRNOTAVAIL whose err_data is the sender's address as
 *            fi_getname gives it; the data is in the buffer and the
 *            receive counter counts it as a success
 *  insert    that err_data goes into fi_av_insert, and the next message
 *            from the sender completes normally with the new fi_addr
 *
 * One line per case; exit 0 when every case passed, 77 without sockets.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdbool.h>
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

#define DEADLINE 30000

struct node {
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct sockaddr_in name;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct node snd, plain, strict;
static fi_addr_t to_plain, to_strict;

static int node_open(struct node *n, uint64_t caps)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_info *fi = fi_dupinfo(info);
	size_t len = sizeof(n->name);
	int ret;

	if (!fi)
		return -FI_ENOMEM;
	fi->caps = caps;
	fi->rx_attr->caps = caps & ~(uint64_t)FI_SEND;
	ret = fi_endpoint(domain, fi, &n->ep, NULL) ?:
		      fi_av_open(domain, &av_attr, &n->av, NULL) ?:
		      fi_cq_open(domain, &cq_attr, &n->cq, NULL) ?:
		      fi_cntr_open(domain, &cntr_attr, &n->cntr, NULL) ?:
		      fi_ep_bind(n->ep, &n->av->fid, 0) ?:
		      fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ?:
		      fi_ep_bind(n->ep, &n->cntr->fid, FI_RECV) ?:
		      fi_enable(n->ep) ?:
		      fi_getname(&n->ep->fid, &n->name, &len);
	fi_freeinfo(fi);
	return ret;
}

static void node_close(struct node *n)
{
	if (n->ep)
		fi_close(&n->ep->fid);
	if (n->cq)
		fi_close(&n->cq->fid);
	if (n->cntr)
		fi_close(&n->cntr->fid);
	if (n->av)
		fi_close(&n->av->fid);
}

/* The next completion of @cq: 0 with its source, or the error entry's
 * code with *@err filled (err_data copied to @raw). */
static int next(struct fid_cq *cq, fi_addr_t *src, struct fi_cq_err_entry *err,
		struct sockaddr_in *raw)
{
	uint64_t end = now_ms() + DEADLINE;
	struct fi_cq_msg_entry e;
	ssize_t n;

	do {
		n = fi_cq_readfrom(cq, &e, 1, src);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			if (fi_cq_readerr(cq, err, 0) != 1)
				return -1;
			if (raw && err->err_data &&
			    err->err_data_size == sizeof(*raw))
				memcpy(raw, err->err_data, sizeof(*raw));
			return err->err;
		}
	} while (n == -FI_EAGAIN && now_ms() < end);
	return -FI_ETIMEDOUT;
}

static int send_one(fi_addr_t dest, uint32_t v)
{
	struct fi_cq_err_entry err;
	fi_addr_t src;

	if (fi_send(snd.ep, &v, sizeof(v), NULL, dest, NULL))
		return -1;
	return next(snd.cq, &src, &err, NULL);
}

static int case_notavail(void)
{
	struct fi_cq_err_entry err;
	fi_addr_t src = 0;
	uint32_t buf = 0;
	int ok = 0;

	CHECK(!fi_recv(plain.ep, &buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL),
	      "recv");
	CHECK(!send_one(to_plain, 11), "send");
	CHECK(!next(plain.cq, &src, &err, NULL), "not a plain completion");
	CHECK(src == FI_ADDR_NOTAVAIL, "src %llu", (unsigned long long)src);
	CHECK(buf == 11, "data");
	ok = 1;
out:
	return ok ? 0 : -1;
}

/* One message to @strict, its receive posted before or after. */
static int source_err(bool posted_first, uint32_t v)
{
	struct fi_cq_err_entry err;
	struct sockaddr_in raw;
	uint64_t before = fi_cntr_read(strict.cntr);
	fi_addr_t src;
	uint32_t buf = 0;
	int ret, ok = 0;

	memset(&raw, 0, sizeof(raw));
	if (posted_first)
		CHECK(!fi_recv(strict.ep, &buf, sizeof(buf), NULL,
			       FI_ADDR_UNSPEC, &buf),
		      "recv");
	CHECK(!send_one(to_strict, v), "send");
	if (!posted_first)
		CHECK(!fi_recv(strict.ep, &buf, sizeof(buf), NULL,
			       FI_ADDR_UNSPEC, &buf),
		      "recv");
	ret = next(strict.cq, &src, &err, &raw);
	CHECK(ret == FI_EADDRNOTAVAIL, "completion %d", ret);
	CHECK(err.op_context == &buf && err.len == sizeof(buf) &&
		      (err.flags & FI_RECV),
	      "entry");
	CHECK(err.err_data_size == sizeof(raw), "size %zu", err.err_data_size);
	CHECK(!memcmp(&raw, &snd.name, sizeof(raw)), "not the sender's");
	CHECK(buf == v, "data");
	CHECK(fi_cntr_read(strict.cntr) == before + 1 &&
		      !fi_cntr_readerr(strict.cntr),
	      "counter");
	ok = 1;
out:
	return ok ? 0 : -1;
}

static int case_err(void)
{
	return source_err(false, 21) || source_err(true, 22) ? -1 : 0;
}

static int case_insert(void)
{
	struct fi_cq_err_entry err;
	struct sockaddr_in raw;
	fi_addr_t src = 0, addr = FI_ADDR_NOTAVAIL;
	uint32_t buf = 0;
	int ret, ok = 0;

	CHECK(!fi_recv(strict.ep, &buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
		       NULL),
	      "recv");
	CHECK(!send_one(to_strict, 31), "send");
	ret = next(strict.cq, &src, &err, &raw);
	CHECK(ret == FI_EADDRNOTAVAIL, "completion %d", ret);
	CHECK(fi_av_insert(strict.av, &raw, 1, &addr, 0, NULL) == 1, "insert");
	CHECK(!fi_recv(strict.ep, &buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
		       NULL),
	      "recv");
	CHECK(!send_one(to_strict, 32), "send");
	CHECK(!next(strict.cq, &src, &err, NULL), "still an error: %d",
	      err.err);
	CHECK(src == addr && buf == 32, "src %llu", (unsigned long long)src);
	ok = 1;
out:
	return ok ? 0 : -1;
}

static const struct sockets_case cases[] = {
	{"notavail", case_notavail},
	{"err", case_err},
	{"insert", case_insert},
};

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR;
	hints->domain_attr->mr_mode = 0;
	ret = sockets_getinfo(hints, &info);
	if (ret)
		return ret;
	if (fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL))
		return 1;
	if (node_open(&snd, FI_MSG | FI_SEND | FI_RECV) ||
	    node_open(&plain, FI_MSG | FI_SEND | FI_RECV | FI_SOURCE) ||
	    node_open(&strict,
		      FI_MSG | FI_SEND | FI_RECV | FI_SOURCE | FI_SOURCE_ERR))
		return 1;
	if (fi_av_insert(snd.av, &plain.name, 1, &to_plain, 0, NULL) != 1 ||
	    fi_av_insert(snd.av, &strict.name, 1, &to_strict, 0, NULL) != 1)
		return 1;
	return 0;
}

static void teardown(void)
{
	node_close(&snd);
	node_close(&plain);
	node_close(&strict);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

int main(void)
{
	return sockets_main(setup, "three endpoints with FI_SOURCE_ERR", cases,
			    sizeof(cases) / sizeof(cases[0]), teardown);
}
