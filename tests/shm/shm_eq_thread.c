/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_eq_thread.c - an FI_THREAD_DOMAIN endpoint with no progress thread
 * (FI_PROGRESS_TARGET=0) but with FI_COLLECTIVE and an EQ: the EQ is a
 * fabric object, so a second thread may read it while the main thread
 * sends and reads the CQ, and each EQ read drives the endpoint's
 * progress (the collective engine's). The endpoint must lock for that.
 *
 * Passing means every message arrived with its bytes, and the EQ reader
 * really ran beside the traffic (the rounds go on, up to a time limit,
 * until it has: a mutex promises no fairness, and the reader may wait
 * out a burst of the main thread's rounds); under TSan (the stage of
 * contrib/test.sh) an unlocked progress is a race report. Exit 0 on
 * success, 77 when shm offers no such endpoint.
 */
#include <pthread.h>
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
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define ROUNDS	  2000
#define MIN_READS 100
#define MAX_SECS  20
#define MSG_LEN	  64

static struct fid_eq *eq;
static _Atomic int stop;
static _Atomic long eq_reads;

static void *eq_reader(void *arg)
{
	struct fi_eq_entry e;
	uint32_t ev;

	(void)arg;
	while (!atomic_load(&stop)) {
		(void)fi_eq_read(eq, &ev, &e, sizeof(e), 0);
		atomic_fetch_add(&eq_reads, 1);
	}
	return NULL;
}

/* One completion of @want's direction from @cq, spinning. */
static int wait_comp(struct fid_cq *cq, uint64_t want)
{
	struct fi_cq_msg_entry c;
	long spins;
	ssize_t n;

	for (spins = 0; spins < 100000000; spins++) {
		n = fi_cq_read(cq, &c, 1);
		if (n == 1)
			return c.flags & want ? 0 : -1;
		if (n != -FI_EAGAIN)
			return -1;
	}
	return -1;
}

int main(void)
{
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_MSG};
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_eq_attr ea = {.wait_obj = FI_WAIT_NONE};
	char sbuf[MSG_LEN], rbuf[MSG_LEN], name[64];
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	size_t len = sizeof(name);
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t self;
	pthread_t t;
	time_t start = time(NULL);
	int i, ret;

	/* No RMA target thread: only the application's calls and the EQ
	 * reader's drive the endpoint. */
	setenv("FI_PROGRESS_TARGET", "0", 1);
	alarm(60);
	hints->caps = FI_MSG | FI_COLLECTIVE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->fabric_attr->prov_name = strdup("shm");
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info)) {
		printf("SKIP: shm offers no FI_COLLECTIVE endpoint\n");
		return 77;
	}
	fi_freeinfo(hints);
	if (fi_fabric(info->fabric_attr, &fab, NULL) ||
	    fi_domain(fab, info, &dom, NULL) ||
	    fi_eq_open(fab, &ea, &eq, NULL) ||
	    fi_cq_open(dom, &ca, &cq, NULL) ||
	    fi_av_open(dom, &aa, &av, NULL) ||
	    fi_endpoint(dom, info, &ep, NULL) || fi_ep_bind(ep, &eq->fid, 0) ||
	    fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(ep, &av->fid, 0) || fi_enable(ep) ||
	    fi_getname(&ep->fid, name, &len) ||
	    fi_av_insert(av, name, 1, &self, 0, NULL) != 1) {
		fprintf(stderr, "FAIL: setup\n");
		return 1;
	}
	pthread_create(&t, NULL, eq_reader, NULL);
	for (i = 0; i < ROUNDS || (atomic_load(&eq_reads) < MIN_READS &&
				   time(NULL) < start + MAX_SECS);
	     i++) {
		memset(sbuf, 'a' + i % 26, sizeof(sbuf));
		memset(rbuf, 0, sizeof(rbuf));
		ret = fi_recv(ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			      rbuf);
		while (!ret && (ret = fi_send(ep, sbuf, sizeof(sbuf), NULL,
					      self, sbuf)) == -FI_EAGAIN)
			(void)fi_cq_read(cq, NULL, 0);
		if (ret || wait_comp(cq, FI_SEND | FI_RECV) ||
		    wait_comp(cq, FI_SEND | FI_RECV) ||
		    memcmp(sbuf, rbuf, sizeof(rbuf))) {
			fprintf(stderr, "FAIL: round %d: %d\n", i, ret);
			ret = 1;
			break;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	if (!ret && atomic_load(&eq_reads) < MIN_READS) {
		fprintf(stderr, "FAIL: the EQ reader hardly ran (%ld)\n",
			atomic_load(&eq_reads));
		ret = 1;
	}
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&eq->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	printf("%s: %d rounds, %ld EQ reads beside them\n",
	       ret ? "FAIL" : "PASS", i, atomic_load(&eq_reads));
	return ret ? 1 : 0;
}
