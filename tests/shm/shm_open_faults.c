/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_open_faults.c - opening an shm endpoint maps its region's rings in
 * one call, not by a page fault per page: the faults the opening thread
 * takes, counted by the kernel (a software perf event), stay a few per
 * endpoint. Each fault is a trap, dear under a hypervisor; a region's
 * rings are over a hundred pages, most of an endpoint's open time when
 * they faulted one by one (an MPI job opens one per rank, a runtime that
 * opens and closes them pays it each time).
 *
 * Skipped (77) where the kernel refuses the counter (perf_event_paranoid,
 * a seccomp filter) or the advice (before 5.14), where there is no shm
 * provider, and under a sanitizer: its allocator hands out fresh pages
 * (quarantine, shadow memory) and their faults are its, not the region's.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define OPENS	       20
#define MAX_FAULTS_PER 64

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) ||           \
	__has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static int fault_counter(void)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

/* Whether this kernel populates on advice (5.14 and later): before, the
 * region faults page by page as it always did. */
static int populate_ok(void)
{
#ifdef MADV_POPULATE_WRITE
	size_t len = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;

	if (p == MAP_FAILED)
		return 0;
	ok = !madvise(p, len, MADV_POPULATE_WRITE);
	munmap(p, len);
	return ok;
#else
	return 0;
#endif
}

static int open_close(struct fid_domain *dom, struct fi_info *info,
		      struct fid_av *av, struct fid_cq *cq)
{
	struct fid_ep *ep;
	int ret;

	ret = fi_endpoint(dom, info, &ep, NULL);
	if (ret)
		return ret;
	ret = fi_ep_bind(ep, &av->fid, 0) ?:
	      fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ?: fi_enable(ep);
	return fi_close(&ep->fid) ?: ret;
}

int main(void)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_info *hints, *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	uint64_t faults;
	int fd, i;

	if (SANITIZED) {
		printf("SKIP: a sanitizer's allocator faults on its own\n");
		return 77;
	}
	if (!populate_ok()) {
		printf("SKIP: the kernel does not populate on advice\n");
		return 77;
	}
	hints = fi_allocinfo();
	if (!hints)
		return 1;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info)) {
		printf("SKIP: no shm provider\n");
		return 77;
	}
	fi_freeinfo(hints);
	if (fi_fabric(info->fabric_attr, &fab, NULL) ||
	    fi_domain(fab, info, &dom, NULL) ||
	    fi_av_open(dom, &av_attr, &av, NULL) ||
	    fi_cq_open(dom, &cq_attr, &cq, NULL)) {
		printf("FAIL: opening the domain's objects\n");
		return 1;
	}
	/* The first open warms the allocator and the provider's caches. */
	if (open_close(dom, info, av, cq)) {
		printf("FAIL: opening an endpoint\n");
		return 1;
	}
	fd = fault_counter();
	if (fd < 0) {
		printf("SKIP: no page-fault counter (perf_event_open)\n");
		return 77;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (i = 0; i < OPENS; i++) {
		if (open_close(dom, info, av, cq)) {
			printf("FAIL: opening an endpoint\n");
			return 1;
		}
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &faults, sizeof(faults)) != sizeof(faults)) {
		printf("FAIL: reading the counter\n");
		return 1;
	}
	close(fd);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	if (faults / OPENS > MAX_FAULTS_PER) {
		printf("FAIL: %llu page faults per endpoint opened, "
		       "at most %d expected\n",
		       (unsigned long long)(faults / OPENS), MAX_FAULTS_PER);
		return 1;
	}
	printf("PASS: %llu page faults per endpoint opened\n",
	       (unsigned long long)(faults / OPENS));
	return 0;
}
