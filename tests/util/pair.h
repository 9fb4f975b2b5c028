/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pair.h - two RDM endpoints of one provider in one process, sharing a
 * domain, AV, CQ and EQ (each is both members of the whole AV), for the
 * test programs of tests/util: open, one message between them, a join
 * of the whole AV driven by EQ reads, a barrier, close. Every call
 * answers 0 or a negative fi_errno; none waits longer than PAIR_WAIT_SEC.
 */
#ifndef PAIR_H
#define PAIR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define PAIR_WAIT_SEC 30
#define PAIR_NAME_LEN 128

struct pair {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_eq *eq;
	struct fid_ep *ep[2];
	struct fid_mc *mc[2];
};

static inline double pair_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define PAIR_CALL(call)                                                        \
	do {                                                                   \
		int pair_ret_ = (int)(call);                                   \
		if (pair_ret_) {                                               \
			printf("  %s:%d: %s: %d\n", __FILE__, __LINE__, #call, \
			       pair_ret_);                                     \
			return pair_ret_ < 0 ? pair_ret_ : -FI_EOTHER;         \
		}                                                              \
	} while (0)

/* Inserts the two endpoint names, at AV addresses 0 and 1. */
static inline int pair_insert(struct pair *p, char (*names)[PAIR_NAME_LEN])
{
	fi_addr_t a;
	int i;

	for (i = 0; i < 2; i++) {
		PAIR_CALL(fi_av_insert(p->av, names[i], 1, &a, 0, NULL) != 1);
		PAIR_CALL(a != (fi_addr_t)i);
	}
	return 0;
}

/*
 * Opens @p over @prov with @progress (FI_PROGRESS_UNSPEC: the provider's
 * choice), an EQ waiting on @eq_wait, and @n endpoints (1 or 2), whose
 * names land in @names (may be NULL). Two are inserted into the AV; one
 * waits for pair_insert. -FI_ENODATA when @prov offers no such endpoint.
 */
static inline int pair_open_n(struct pair *p, const char *prov,
			      enum fi_progress progress,
			      enum fi_wait_obj eq_wait, int n,
			      char (*names)[PAIR_NAME_LEN])
{
	struct fi_eq_attr eqa = {.wait_obj = eq_wait};
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	struct fi_info *hints = fi_allocinfo();
	char name[2][PAIR_NAME_LEN];
	size_t len;
	int i, ret;

	memset(p, 0, sizeof(*p));
	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_COLLECTIVE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->data_progress = progress;
	hints->domain_attr->control_progress = progress;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (strcmp(prov, "shm"))
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE,
				 hints, &p->info);
	else
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &p->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	PAIR_CALL(fi_fabric(p->info->fabric_attr, &p->fabric, NULL));
	PAIR_CALL(fi_domain(p->fabric, p->info, &p->domain, NULL));
	PAIR_CALL(fi_av_open(p->domain, &ava, &p->av, NULL));
	PAIR_CALL(fi_cq_open(p->domain, &cqa, &p->cq, NULL));
	PAIR_CALL(fi_eq_open(p->fabric, &eqa, &p->eq, NULL));
	for (i = 0; i < n; i++) {
		PAIR_CALL(fi_endpoint(p->domain, p->info, &p->ep[i], NULL));
		PAIR_CALL(fi_ep_bind(p->ep[i], &p->av->fid, 0));
		PAIR_CALL(fi_ep_bind(p->ep[i], &p->cq->fid,
				     FI_TRANSMIT | FI_RECV));
		PAIR_CALL(fi_ep_bind(p->ep[i], &p->eq->fid, 0));
		PAIR_CALL(fi_enable(p->ep[i]));
		len = sizeof(name[i]);
		PAIR_CALL(fi_getname(&p->ep[i]->fid, name[i], &len));
		if (names)
			memcpy(names[i], name[i], PAIR_NAME_LEN);
	}
	return n == 2 ? pair_insert(p, name) : 0;
}

static inline int pair_open(struct pair *p, const char *prov,
			    enum fi_progress progress, enum fi_wait_obj eq_wait)
{
	return pair_open_n(p, prov, progress, eq_wait, 2, NULL);
}

static inline void pair_close(struct pair *p)
{
	int i;

	for (i = 0; i < 2; i++)
		if (p->mc[i])
			fi_close(&p->mc[i]->fid);
	for (i = 0; i < 2; i++)
		if (p->ep[i])
			fi_close(&p->ep[i]->fid);
	if (p->eq)
		fi_close(&p->eq->fid);
	if (p->cq)
		fi_close(&p->cq->fid);
	if (p->av)
		fi_close(&p->av->fid);
	if (p->domain)
		fi_close(&p->domain->fid);
	if (p->fabric)
		fi_close(&p->fabric->fid);
	fi_freeinfo(p->info);
	memset(p, 0, sizeof(*p));
}

/* Reads @want completions off the CQ (each endpoint's progress). */
static inline int pair_cq_wait(struct pair *p, int want)
{
	struct fi_cq_entry e;
	double end = pair_now() + PAIR_WAIT_SEC;
	ssize_t ret;

	while (want > 0) {
		ret = fi_cq_read(p->cq, &e, 1);
		if (ret == 1) {
			want--;
			continue;
		}
		if (ret != -FI_EAGAIN)
			return (int)ret;
		if (pair_now() > end)
			return -FI_ETIMEDOUT;
	}
	return 0;
}

/* One message of @len bytes (at most 4096) from endpoint 0 to 1. */
static inline int pair_msg(struct pair *p, size_t len)
{
	static uint8_t tx[4096], rx[4096];

	memset(tx, 0x5a, len);
	memset(rx, 0, len);
	PAIR_CALL(fi_recv(p->ep[1], rx, len, NULL, FI_ADDR_UNSPEC, NULL));
	PAIR_CALL(fi_send(p->ep[0], tx, len, NULL, 1, NULL));
	PAIR_CALL(pair_cq_wait(p, 2));
	return memcmp(tx, rx, len) ? -FI_EIO : 0;
}

/* Each endpoint joins the whole AV; completion is not waited for. */
static inline int pair_join_start(struct pair *p, int *ctx)
{
	int i;

	for (i = 0; i < 2 && p->ep[i]; i++)
		PAIR_CALL(fi_join_collective(p->ep[i], FI_ADDR_NOTAVAIL, NULL,
					     0, &p->mc[i], &ctx[i]));
	return 0;
}

/* Counts an FI_JOIN_COMPLETE read off the EQ into *@joined; -FI_EAGAIN
 * when none was there. */
static inline int pair_join_read(struct pair *p, int *joined)
{
	struct fi_eq_entry e;
	uint32_t ev;
	ssize_t ret;

	ret = fi_eq_read(p->eq, &ev, &e, sizeof(e), 0);
	if (ret == -FI_EAGAIN)
		return -FI_EAGAIN;
	if (ret < 0)
		return (int)ret;
	if (ev != FI_JOIN_COMPLETE)
		return -FI_EOTHER;
	(*joined)++;
	return 0;
}

/* A join of both, driven by EQ and CQ reads, then a barrier. */
static inline int pair_coll(struct pair *p)
{
	double end = pair_now() + PAIR_WAIT_SEC;
	int ctx[2], joined = 0, ret, i;

	PAIR_CALL(pair_join_start(p, ctx));
	while (joined < 2) {
		(void)fi_cq_read(p->cq, NULL, 0);
		ret = pair_join_read(p, &joined);
		if (ret && ret != -FI_EAGAIN)
			return ret;
		if (pair_now() > end)
			return -FI_ETIMEDOUT;
	}
	for (i = 0; i < 2; i++)
		PAIR_CALL(fi_barrier(p->ep[i], fi_mc_addr(p->mc[i]), NULL));
	return pair_cq_wait(p, 2);
}

#endif /* PAIR_H */
