/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_close_race.c - endpoint close against progress from another thread
 * (FI_THREAD_SAFE): a reader thread loops fi_cq_read on a CQ (which runs
 * the progress of every endpoint bound to it) while the main thread opens,
 * binds, enables, sends to itself on and closes endpoints bound to that CQ,
 * ITERS times, half of them closing with the message still in flight.
 *
 * Passing means no crash (run it under ASan: --enable-asan) and that the
 * race really ran: the reader must have completed receives of endpoints
 * that were closed afterwards, and read while an endpoint was being
 * closed. Exit 0 on success.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define ITERS	200
#define MSG_LEN 2000 /* an inject-sized message */

static struct fi_info *info;
static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_cq *cq;
static struct fid_av *av;

static _Atomic int stop;
static _Atomic int closing;	   /* main is inside fi_close(ep) */
static _Atomic long reads;	   /* fi_cq_read calls of the reader */
static _Atomic long reads_closing; /* ... that began during a close */
static _Atomic long recvs;	   /* receive completions the reader saw */

static void *reader(void *arg)
{
	struct fi_cq_tagged_entry e[8];
	struct fi_cq_err_entry err;
	ssize_t i, n;
	int c;

	(void)arg;
	while (!atomic_load(&stop)) {
		c = atomic_load(&closing);
		n = fi_cq_read(cq, e, 8);
		atomic_fetch_add(&reads, 1);
		if (c)
			atomic_fetch_add(&reads_closing, 1);
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			continue;
		}
		for (i = 0; i < n; i++) {
			if (e[i].flags & FI_RECV)
				atomic_fetch_add(&recvs, 1);
		}
	}
	return NULL;
}

static int one_round(int iter)
{
	static char sbuf[MSG_LEN], rbuf[MSG_LEN];
	char name[64];
	size_t len = sizeof(name);
	struct fid_ep *ep;
	fi_addr_t self;
	long before = atomic_load(&recvs);
	int ret, spins;

	ret = fi_endpoint(dom, info, &ep, NULL) ?:
	      fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ?:
	      fi_ep_bind(ep, &av->fid, 0) ?: fi_enable(ep) ?:
	      fi_getname(&ep->fid, name, &len);
	if (ret) {
		fprintf(stderr, "FAIL: endpoint %d: %d\n", iter, ret);
		return ret;
	}
	if (fi_av_insert(av, name, 1, &self, 0, NULL) != 1) {
		fprintf(stderr, "FAIL: insert %d\n", iter);
		return -1;
	}
	ret = fi_trecv(ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, 1, 0,
		       rbuf);
	do {
		if (!ret)
			ret = fi_tsend(ep, sbuf, sizeof(sbuf), NULL, self, 1,
				       sbuf);
	} while (ret == -FI_EAGAIN);
	if (ret) {
		fprintf(stderr, "FAIL: send/recv %d: %d\n", iter, ret);
		return ret;
	}
	/* Every other round waits for the reader to complete the receive. */
	for (spins = 0;
	     iter % 2 && atomic_load(&recvs) == before && spins < 200000;
	     spins++)
		sched_yield();
	atomic_store(&closing, 1);
	ret = fi_close(&ep->fid);
	atomic_store(&closing, 0);
	fi_av_remove(av, &self, 1, 0);
	if (ret)
		fprintf(stderr, "FAIL: close %d: %d\n", iter, ret);
	return ret;
}

int main(void)
{
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED, .size = 4096};
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_info *hints = fi_allocinfo();
	pthread_t t;
	int i, ret = 0;

	hints->caps = FI_MSG | FI_TAGGED;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->fabric_attr->prov_name = strdup("shm");
	alarm(60);
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info) ||
	    fi_fabric(info->fabric_attr, &fab, NULL) ||
	    fi_domain(fab, info, &dom, NULL) ||
	    fi_cq_open(dom, &ca, &cq, NULL) ||
	    fi_av_open(dom, &aa, &av, NULL)) {
		fprintf(stderr, "FAIL: setup\n");
		return 1;
	}
	fi_freeinfo(hints);
	if (info->domain_attr->threading != FI_THREAD_SAFE) {
		fprintf(stderr, "FAIL: no FI_THREAD_SAFE domain\n");
		return 1;
	}
	pthread_create(&t, NULL, reader, NULL);
	for (i = 0; i < ITERS && !ret; i++)
		ret = one_round(i);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("shm_close_race: %d rounds, %ld reads (%ld during a close), "
	       "%ld receives completed by the reader\n",
	       i, atomic_load(&reads), atomic_load(&reads_closing),
	       atomic_load(&recvs));
	if (!ret && atomic_load(&recvs) < ITERS / 2) {
		fprintf(stderr, "FAIL: the reader completed too few receives: "
				"the race did not run\n");
		ret = 1;
	}
	if (!ret && !atomic_load(&reads_closing)) {
		fprintf(stderr, "FAIL: no read overlapped a close\n");
		ret = 1;
	}
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	return ret ? 1 : 0;
}
