/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_rma_common.h - harness shared by the shm RMA and atomic tests: the
 * target is the parent process (it registers memory in a MAP_SHARED
 * mapping made before fork, publishes its name and keys in a shared
 * control block, and progresses until told to stop, recording remote
 * counters and CQ entries there); initiators are forked children that open
 * their own endpoint and can inspect the target memory directly to check
 * what an operation did, or did not, do to it.
 *
 * SHM_TEST_MR=offset runs with mr_mode 0 (offset addressing, user keys);
 * SHM_TEST_PROV names another provider to run the same checks over (tcp);
 * the default asks FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY.
 */
#ifndef SHM_RMA_COMMON_H
#define SHM_RMA_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "shm_check.h"

enum { MR_RW, MR_RO, MR_WO, MR_CNT };

#define TMEM_SIZE  (9u << 20)
#define SMALL_SIZE (64u << 10)

struct ctl {
	volatile int ready;
	volatile int stop;
	char name[64];
	uint64_t key[MR_CNT];
	uint64_t base[MR_CNT]; /* what the initiator adds offsets to */
	volatile uint64_t rem_wr, rem_rd, mr_events;
	volatile uint64_t cq_count, cq_flags, cq_data, cq_len;
	volatile int target_err;
};

struct node {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *wcntr, *rcntr; /* initiator: FI_WRITE/FI_READ */
	struct fid_cntr *rem_wr, *rem_rd, *mr_cntr; /* target */
	struct fid_mr *mr[MR_CNT];
	fi_addr_t peer;
};

static struct ctl *ctl;
static uint8_t *tmem, *tro, *two; /* target regions, shared mappings */
static bool offset_mode;

static void *shared_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	DIE_IF(p == MAP_FAILED, "mmap");
	return p;
}

static void harness_init(void)
{
	const char *m = getenv("SHM_TEST_MR");

	offset_mode = m && !strcmp(m, "offset");
	ctl = shared_map(sizeof(*ctl));
	tmem = shared_map(TMEM_SIZE);
	tro = shared_map(SMALL_SIZE);
	two = shared_map(SMALL_SIZE);
}

static struct fi_info *get_info(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	const char *prov = getenv("SHM_TEST_PROV");
	int ret;

	hints->caps = FI_RMA | FI_ATOMIC | FI_RMA_EVENT | FI_READ | FI_WRITE |
		      FI_REMOTE_READ | FI_REMOTE_WRITE;
	hints->ep_attr->type = FI_EP_RDM;
	/* SHM_TEST_PROV=tcp runs the same checks over the tcp provider. */
	if (!prov)
		prov = "shm";
	if (!strcmp(prov, "shm"))
		hints->addr_format = FI_ADDR_STR;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->mr_mode =
		offset_mode
			? 0
			: FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	DIE_IF(ret, "fi_getinfo");
	fi_freeinfo(hints);
	return info;
}

static struct fid_cntr *open_cntr(struct node *n, uint64_t bind_flags)
{
	struct fi_cntr_attr a = {.events = FI_CNTR_EVENTS_COMP};
	struct fid_cntr *c;

	DIE_IF(fi_cntr_open(n->dom, &a, &c, NULL), "fi_cntr_open");
	DIE_IF(fi_ep_bind(n->ep, &c->fid, bind_flags), "cntr bind");
	return c;
}

static void node_open(struct node *n, bool target)
{
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA, .size = 1024};
	struct fi_av_attr ava = {.type = FI_AV_TABLE};

	memset(n, 0, sizeof(*n));
	n->info = get_info();
	DIE_IF(fi_fabric(n->info->fabric_attr, &n->fab, NULL), "fi_fabric");
	DIE_IF(fi_domain(n->fab, n->info, &n->dom, NULL), "fi_domain");
	DIE_IF(fi_av_open(n->dom, &ava, &n->av, NULL), "fi_av_open");
	DIE_IF(fi_endpoint(n->dom, n->info, &n->ep, NULL), "fi_endpoint");
	DIE_IF(fi_cq_open(n->dom, &cqa, &n->cq, NULL), "fi_cq_open");
	DIE_IF(fi_ep_bind(n->ep, &n->av->fid, 0), "av bind");
	DIE_IF(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV),
	       "cq bind");
	if (target) {
		n->rem_wr = open_cntr(n, FI_REMOTE_WRITE);
		n->rem_rd = open_cntr(n, FI_REMOTE_READ);
	} else {
		n->wcntr = open_cntr(n, FI_WRITE);
		n->rcntr = open_cntr(n, FI_READ);
	}
	DIE_IF(fi_enable(n->ep), "fi_enable");
}

static void node_close(struct node *n)
{
	int i;

	fi_close(&n->ep->fid);
	/* An MR bound to an open counter closes and unbinds, as 1.17's. */
	if (n->mr_cntr && n->mr[MR_RW]) {
		if (fi_close(&n->mr[MR_RW]->fid)) {
			fprintf(stderr, "FAIL: closing a bound MR failed\n");
			failures++;
		}
		n->mr[MR_RW] = NULL;
	}
	if (n->mr_cntr)
		fi_close(&n->mr_cntr->fid);
	n->mr_cntr = NULL;
	for (i = 0; i < MR_CNT; i++)
		if (n->mr[i])
			fi_close(&n->mr[i]->fid);
	if (n->wcntr)
		fi_close(&n->wcntr->fid);
	if (n->rcntr)
		fi_close(&n->rcntr->fid);
	if (n->rem_wr)
		fi_close(&n->rem_wr->fid);
	if (n->rem_rd)
		fi_close(&n->rem_rd->fid);
	if (n->mr_cntr)
		fi_close(&n->mr_cntr->fid);
	fi_close(&n->cq->fid);
	fi_close(&n->av->fid);
	fi_close(&n->dom->fid);
	fi_close(&n->fab->fid);
	fi_freeinfo(n->info);
}

static void target_reg(struct node *n, int i, void *buf, size_t len,
		       uint64_t access, uint64_t flags)
{
	DIE_IF(fi_mr_reg(n->dom, buf, len, access, 0, 0x1000 + i, flags,
			 &n->mr[i], NULL),
	       "fi_mr_reg");
	ctl->key[i] = fi_mr_key(n->mr[i]);
	ctl->base[i] = offset_mode ? 0 : (uintptr_t)buf;
}

/* The parent: registers, publishes, then progresses until told to stop. */
static int target_run(void)
{
	struct fi_cntr_attr a = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct node n;
	size_t len = sizeof(ctl->name);
	ssize_t ret;

	node_open(&n, true);
	target_reg(&n, MR_RW, tmem, TMEM_SIZE, FI_REMOTE_READ | FI_REMOTE_WRITE,
		   FI_RMA_EVENT);
	DIE_IF(fi_cntr_open(n.dom, &a, &n.mr_cntr, NULL), "mr cntr");
	DIE_IF(fi_mr_bind(n.mr[MR_RW], &n.mr_cntr->fid, FI_REMOTE_WRITE),
	       "mr bind");
	target_reg(&n, MR_RO, tro, SMALL_SIZE, FI_REMOTE_READ, 0);
	target_reg(&n, MR_WO, two, SMALL_SIZE, FI_REMOTE_WRITE, 0);
	DIE_IF(fi_getname(&n.ep->fid, ctl->name, &len), "fi_getname");
	__atomic_store_n(&ctl->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE)) {
		ret = fi_cq_read(n.cq, &e, 1);
		if (ret == 1) {
			ctl->cq_flags = e.flags;
			ctl->cq_data = e.data;
			ctl->cq_len = e.len;
			__atomic_add_fetch(&ctl->cq_count, 1, __ATOMIC_RELEASE);
		} else if (ret == -FI_EAVAIL) {
			fi_cq_readerr(n.cq, &err, 0);
			ctl->target_err = err.err;
		}
		ctl->rem_wr = fi_cntr_read(n.rem_wr);
		ctl->rem_rd = fi_cntr_read(n.rem_rd);
		ctl->mr_events = fi_cntr_read(n.mr_cntr);
	}
	node_close(&n);
	return failures ? 1 : 0;
}

/* An initiator connected to the target. */
static void initiator_open(struct node *n)
{
	time_t end = time(NULL) + 20;

	while (!__atomic_load_n(&ctl->ready, __ATOMIC_ACQUIRE)) {
		DIE_IF(time(NULL) > end, "target start");
		usleep(1000);
	}
	node_open(n, false);
	DIE_IF(fi_av_insert(n->av, ctl->name, 1, &n->peer, 0, NULL) != 1,
	       "fi_av_insert");
}

/* Waits for the completion of @ctx; 0, or the error's positive code. */
static int wait_comp(struct node *n, void *ctx)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	time_t end = time(NULL) + 20;
	ssize_t ret;

	while (time(NULL) < end) {
		ret = fi_cq_read(n->cq, &e, 1);
		if (ret == 1) {
			if (e.op_context != ctx) {
				fprintf(stderr, "unexpected context %p\n",
					e.op_context);
				return -1;
			}
			return 0;
		}
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(n->cq, &err, 0);
			if (err.op_context != ctx)
				return -1;
			return err.err;
		}
		if (ret != -FI_EAGAIN)
			return -1;
	}
	fprintf(stderr, "timeout waiting for a completion\n");
	return -2;
}

/* Posts with retry on -FI_EAGAIN (progress runs inside the call). */
#define POST(n, call)                                                          \
	({                                                                     \
		ssize_t _r;                                                    \
		time_t _end = time(NULL) + 20;                                 \
		do {                                                           \
			_r = (call);                                           \
			if (_r == -FI_EAGAIN)                                  \
				fi_cq_read((n)->cq, NULL, 0);                  \
		} while (_r == -FI_EAGAIN && time(NULL) < _end);               \
		_r;                                                            \
	})

/*
 * Runs the target in one child and @nproc initiators running @fn in
 * others; the parent only coordinates. Returns the number that failed.
 */
static int run_test(int nproc, int (*fn)(int rank))
{
	pid_t tpid, pid[16];
	int i, st, bad = 0;

	ctl->ready = 0;
	ctl->stop = 0;
	tpid = fork();
	DIE_IF(tpid < 0, "fork");
	if (!tpid)
		exit(target_run());
	for (i = 0; i < nproc; i++) {
		pid[i] = fork();
		DIE_IF(pid[i] < 0, "fork");
		if (!pid[i])
			exit(fn(i));
	}
	for (i = 0; i < nproc; i++) {
		waitpid(pid[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
	waitpid(tpid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		bad++;
	return bad;
}

#endif /* SHM_RMA_COMMON_H */
