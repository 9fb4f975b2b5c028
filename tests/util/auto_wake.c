/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * auto_wake.c - under FI_PROGRESS_AUTO a completion wakes the reader
 * asleep on it at once, whoever makes it: the initiator sleeps in
 * fi_cntr_wait, then in fi_cq_sread, on reads from a target endpoint
 * that makes no call after its setup (its provider's thread serves
 * them; the initiator's thread completes them). Over the provider of
 * argv[1]; the caller sets FI_TCP_SHM / FI_SOCKETS_SHM.
 *
 * Cases, each able to fail:
 *  cntr  ROUNDS reads, each awaited in fi_cntr_wait
 *  cq    ROUNDS reads, each awaited in fi_cq_sread
 * Nine rounds in ten must take under ROUND_US each (a loaded machine
 * delays a few rounds, not that many): a sleeper woken by a timer slice,
 * or a progress thread that stands down for a millisecond after the
 * reader's own progress pass, costs up to a millisecond in most rounds.
 *
 * One line per case; exit 0 when both passed, 77 without the provider.
 */
#include <signal.h>
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

#define ROUNDS	 2000
#define ROUND_US 600
#define READ_LEN 64
#define WAIT_MS	 5000

static const char *prov;

struct node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_ep *ep;
	struct fid_mr *mr;
	uint8_t buf[READ_LEN];
	uint8_t addr[64];
	size_t addrlen;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct fi_info *get_info(void)
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

static int node_open(struct node *n)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT,
				     .wait_obj = FI_WAIT_UNSPEC};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_UNSPEC};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	int ret;

	n->info = get_info();
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
	/* Reads complete to the CQ only when they ask (the cq case). */
	ret = ret ? ret
		  : fi_ep_bind(n->ep, &n->cq->fid,
			       FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION);
	ret = ret ? ret : fi_ep_bind(n->ep, &n->cntr->fid, FI_READ);
	ret = ret ? ret : fi_enable(n->ep);
	ret = ret ? ret
		  : fi_mr_reg(n->domain, n->buf, sizeof(n->buf),
			      FI_REMOTE_READ | FI_READ, 0, 0, 0, &n->mr, NULL);
	ret = ret ? ret : fi_getname(&n->ep->fid, n->addr, &n->addrlen);
	return ret;
}

static void node_close(struct node *n)
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

/* One read of the target's buffer, awaited as @cq says; 0 or fi_errno. */
static int one_read(struct node *a, struct node *b, fi_addr_t dest, bool cq,
		    uint64_t round)
{
	struct iovec iov = {.iov_base = a->buf, .iov_len = READ_LEN};
	/* sockets answers mr_mode 0, as Debian's does: offsets, not addresses */
	bool virt = b->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	struct fi_rma_iov rma = {.addr = virt ? (uintptr_t)b->buf : 0,
				 .len = READ_LEN,
				 .key = fi_mr_key(b->mr)};
	void *desc = fi_mr_desc(a->mr);
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .desc = &desc,
				 .iov_count = 1,
				 .addr = dest,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = a};
	struct fi_cq_entry e;
	ssize_t ret;

	do {
		ret = fi_readmsg(a->ep, &msg, cq ? FI_COMPLETION : 0);
	} while (ret == -FI_EAGAIN);
	if (ret)
		return (int)ret;
	if (!cq)
		return fi_cntr_wait(a->cntr, round + 1, WAIT_MS);
	ret = fi_cq_sread(a->cq, &e, 1, NULL, WAIT_MS);
	if (ret == 1)
		return e.op_context == a ? 0 : -FI_EOTHER;
	return ret < 0 ? (int)ret : -FI_EOTHER;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ROUNDS reads awaited as @cq says, nine in ten under ROUND_US. */
static int run_case(struct node *a, struct node *b, fi_addr_t dest, bool cq)
{
	static double us[ROUNDS];
	const char *name = cq ? "cq" : "cntr";
	double t0 = now_ms(), t, ms, p90;
	uint64_t i, base = cq ? 0 : fi_cntr_read(a->cntr);
	int ret;

	for (i = 0; i < ROUNDS; i++) {
		t = now_ms();
		ret = one_read(a, b, dest, cq, base + i);
		if (ret) {
			printf("FAIL %s %s: round %llu: %s\n", prov, name,
			       (unsigned long long)i, fi_strerror(-ret));
			return 1;
		}
		us[i] = (now_ms() - t) * 1e3;
	}
	ms = now_ms() - t0;
	qsort(us, ROUNDS, sizeof(us[0]), cmp_double);
	p90 = us[ROUNDS * 9 / 10];
	printf("%s %s %s: %d reads in %.0f ms, median %.1f us, 90th "
	       "percentile %.1f us (want under %d)\n",
	       p90 < ROUND_US ? "PASS" : "FAIL", prov, name, ROUNDS, ms,
	       us[ROUNDS / 2], p90, ROUND_US);
	return p90 >= ROUND_US;
}

int main(int argc, char **argv)
{
	struct node a = {0}, b = {0};
	fi_addr_t dest;
	struct fi_info *info;
	int ret, fail = 0;

	prov = argc > 1 ? argv[1] : "sockets";
	setenv("FI_TCP_IFACE", "lo", 0);
	setenv("FI_SOCKETS_IFACE", "lo", 0);
	info = get_info();
	if (!info) {
		printf("SKIP: no %s with FI_PROGRESS_AUTO\n", prov);
		return 77;
	}
	fi_freeinfo(info);
	/* A hang is a failure too. */
	alarm(120);
	ret = node_open(&b);
	ret = ret ? ret : node_open(&a);
	ret = ret ? ret
		  : (fi_av_insert(a.av, b.addr, 1, &dest, 0, NULL) == 1
			     ? 0
			     : -FI_EINVAL);
	if (ret) {
		printf("FAIL %s: setup: %s\n", prov, fi_strerror(-ret));
		fail = 1;
		goto out;
	}
	/* From here the target b makes no call until it closes. */
	fail |= run_case(&a, &b, dest, false);
	fail |= run_case(&a, &b, dest, true);
out:
	node_close(&a);
	node_close(&b);
	return fail;
}
