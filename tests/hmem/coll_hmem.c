/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_hmem.c - collectives on device buffers (FI_HMEM) against the fake
 * CUDA driver of tests/hmem: NPROC forked ranks on the provider named in
 * argv[1] join the whole AV and run an allreduce (small: recursive
 * doubling; large: ring) on buffers from the fake cuMemAlloc found by
 * pointer (desc NULL), and a broadcast on one registered with iface
 * FI_HMEM_CUDA and passed by its desc. Results must be right, and every
 * device byte must have moved through the domain's copy overrides with
 * the buffer's iface (the engine stages device buffers through src/hmem).
 *
 * With COLL_HMEM_REAL=1 and FI_HMEM_CUDA_LIBRARY=libcuda.so.1 it runs on a
 * real GPU (contrib/gpu-check.sh): device memory is then not host memory,
 * so the overrides and the test's own fills and checks copy with cuMemcpy
 * (unified addressing) in the rank's context instead of memcpy.
 *
 * Run by tests/hmem/coll_hmem.sh. Exit 0 pass, 1 fail, 77 skip.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
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
#include <rdma/fi_collective.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#ifdef HAVE_CUDA
#include <cuda.h>
#endif

#include "test_iov.h" /* tests/shm */

#define NPROC	3
#define SMALL	100
#define LARGE	(64 * 1024) /* int64s: 512 KiB, the ring */
#define NAMELEN 64

static struct {
	char name[NPROC][NAMELEN];
	size_t len[NPROC];
	int ready;
} * sh;

static int rank;
static const char *prov;
static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_eq *eq;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *ep;

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "rank %d: %s:%d: ", rank, __func__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		exit(1);                                                       \
	} while (0)
#define CHK(call)                                                              \
	do {                                                                   \
		int _r = (int)(call);                                          \
		if (_r)                                                        \
			FAIL("%s: %s", #call, fi_strerror(-_r));               \
	} while (0)

static bool real;
#ifdef HAVE_CUDA
static CUcontext cu_ctx;
static CUresult (*cu_set)(CUcontext);
static CUresult (*cu_memcpy)(CUdeviceptr, CUdeviceptr, size_t);
#endif

/* Any pointers, device or host: memcpy on the fake, cuMemcpy on a GPU. */
static void dev_copy(void *dst, const void *src, size_t n)
{
#ifdef HAVE_CUDA
	if (real) {
		if (cu_set(cu_ctx) || cu_memcpy((CUdeviceptr)(uintptr_t)dst,
						(CUdeviceptr)(uintptr_t)src, n))
			FAIL("cuMemcpy of %zu", n);
		return;
	}
#endif
	memcpy(dst, src, n);
}

/* Counting overrides: the engine must move device bytes through them. */
static unsigned long dev_from, dev_to;

static ssize_t ovr_from(void *dest, size_t size, enum fi_hmem_iface iface,
			uint64_t device, const struct iovec *iov, size_t cnt,
			uint64_t off)
{
	(void)device;
	if (iface == FI_HMEM_CUDA)
		dev_from++;
	return shm_test_iov_copy_with(iov, cnt, off, dest, size, false,
				      dev_copy);
}

static ssize_t ovr_to(enum fi_hmem_iface iface, uint64_t device,
		      const struct iovec *iov, size_t cnt, uint64_t off,
		      const void *src, size_t size)
{
	(void)device;
	if (iface == FI_HMEM_CUDA)
		dev_to++;
	return shm_test_iov_copy_with(iov, cnt, off, (void *)src, size, true,
				      dev_copy);
}

#ifdef HAVE_CUDA
/* The driver libfabric loaded (FI_HMEM_CUDA_LIBRARY): its allocator. */
static void *dev_alloc(size_t size)
{
	const char *path = getenv("FI_HMEM_CUDA_LIBRARY");
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUdeviceptr p;
	void *lib;

	lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
	if (!lib)
		exit(77);
	*(void **)&retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cu_set = dlsym(lib, "cuCtxSetCurrent");
	*(void **)&alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&cu_memcpy = dlsym(lib, "cuMemcpy");
	if (!retain || !cu_set || !alloc || (real && !cu_memcpy) ||
	    retain(&cu_ctx, 0) || cu_set(cu_ctx) || alloc(&p, size))
		FAIL("cuMemAlloc of %zu", size);
	return (void *)(uintptr_t)p;
}
#endif

static void setup(void)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fi_eq_attr eqa = {.wait_obj = FI_WAIT_NONE};
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	union fi_override_op op;
	size_t len = NAMELEN;
	fi_addr_t a;
	int i, ret;

	hints->caps = FI_MSG | FI_COLLECTIVE | FI_HMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_HMEM;
	if (strcmp(prov, "shm"))
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE,
				 hints, &info);
	else
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &info);
	if (ret == -FI_ENODATA)
		exit(77);
	CHK(ret);
	CHK(fi_fabric(info->fabric_attr, &fab, NULL));
	CHK(fi_domain(fab, info, &dom, NULL));
	op.copy_from_hmem_iov = ovr_from;
	CHK(fi_set_op(&dom->fid, FI_OVERRIDE_COPY_FROM_HMEM_IOV, &op, 0));
	op.copy_to_hmem_iov = ovr_to;
	CHK(fi_set_op(&dom->fid, FI_OVERRIDE_COPY_TO_HMEM_IOV, &op, 0));
	CHK(fi_eq_open(fab, &eqa, &eq, NULL));
	CHK(fi_cq_open(dom, &cqa, &cq, NULL));
	CHK(fi_av_open(dom, &ava, &av, NULL));
	CHK(fi_endpoint(dom, info, &ep, NULL));
	CHK(fi_ep_bind(ep, &eq->fid, 0));
	CHK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHK(fi_ep_bind(ep, &av->fid, 0));
	CHK(fi_enable(ep));
	CHK(fi_getname(&ep->fid, sh->name[rank], &len));
	sh->len[rank] = len;
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < NPROC)
		usleep(1000);
	for (i = 0; i < NPROC; i++)
		if (fi_av_insert(av, sh->name[i], 1, &a, 0, NULL) != 1 ||
		    a != (fi_addr_t)i)
			FAIL("av insert %d", i);
	fi_freeinfo(hints);
	fi_freeinfo(info);
}

static void wait_ctx(void *ctx)
{
	time_t end = time(NULL) + 60;
	struct fi_cq_err_entry err;
	struct fi_cq_entry e;
	ssize_t r;

	while (time(NULL) < end) {
		r = fi_cq_read(cq, &e, 1);
		if (r == 1 && e.op_context == ctx)
			return;
		if (r == 1)
			FAIL("completion of another op");
		if (r == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			FAIL("collective failed: %s", fi_strerror(err.err));
		}
		if (r != -FI_EAGAIN)
			FAIL("fi_cq_read %zd", r);
		sched_yield();
	}
	FAIL("timed out");
}

static struct fid_mc *join_all(void)
{
	struct fi_eq_entry e;
	struct fid_mc *mc;
	uint32_t ev;
	time_t end = time(NULL) + 60;
	int ctx;
	ssize_t r;

	CHK(fi_join_collective(ep, FI_ADDR_NOTAVAIL, NULL, 0, &mc, &ctx));
	while (time(NULL) < end) {
		(void)fi_cq_read(cq, NULL, 0);
		r = fi_eq_read(eq, &ev, &e, sizeof(e), 0);
		if (r > 0 && ev == FI_JOIN_COMPLETE && e.context == &ctx)
			return mc;
		if (r != -FI_EAGAIN)
			FAIL("join: %zd", r);
		sched_yield();
	}
	FAIL("join timed out");
}

/* Host staging of the test's own fills and checks. */
static int64_t host[LARGE];

static void allreduce(fi_addr_t world, int64_t *in, int64_t *out, size_t cnt)
{
	unsigned long from = dev_from, to = dev_to;
	int64_t want;
	size_t i;
	int ctx;

	for (i = 0; i < cnt; i++)
		host[i] = (int64_t)(rank + 1) * (int64_t)i;
	dev_copy(in, host, cnt * sizeof(*host));
	memset(host, 0xff, cnt * sizeof(*host));
	dev_copy(out, host, cnt * sizeof(*host));
	CHK(fi_allreduce(ep, in, cnt, NULL, out, NULL, world, FI_INT64, FI_SUM,
			 0, &ctx));
	wait_ctx(&ctx);
	dev_copy(host, out, cnt * sizeof(*host));
	for (i = 0; i < cnt; i++) {
		want = (int64_t)i * NPROC * (NPROC + 1) / 2;
		if (host[i] != want)
			FAIL("allreduce %zu: [%zu] %lld, want %lld", cnt, i,
			     (long long)host[i], (long long)want);
	}
	if (dev_from == from || dev_to == to)
		FAIL("allreduce %zu: device copies in %lu, out %lu", cnt,
		     dev_from - from, dev_to - to);
}

static void bcast(fi_addr_t world, int64_t *buf, size_t cnt)
{
	struct iovec iov = {buf, cnt * sizeof(*buf)};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV | FI_READ | FI_WRITE,
		.iface = FI_HMEM_CUDA,
	};
	unsigned long from = dev_from, to = dev_to;
	struct fid_mr *mr;
	size_t i;
	int ctx;

	CHK(fi_mr_regattr(dom, &attr, 0, &mr));
	for (i = 0; i < cnt; i++)
		host[i] = rank == 1 ? (int64_t)(i * 7 + 3) : -1;
	dev_copy(buf, host, cnt * sizeof(*host));
	CHK(fi_broadcast(ep, buf, cnt, fi_mr_desc(mr), world, 1, FI_INT64, 0,
			 &ctx));
	wait_ctx(&ctx);
	dev_copy(host, buf, cnt * sizeof(*host));
	for (i = 0; i < cnt; i++)
		if (host[i] != (int64_t)(i * 7 + 3))
			FAIL("bcast [%zu] %lld", i, (long long)host[i]);
	/* the root's copy in, everyone's copy out */
	if ((rank == 1 && dev_from == from) || dev_to == to)
		FAIL("bcast: device copies in %lu, out %lu", dev_from - from,
		     dev_to - to);
	CHK(fi_close(&mr->fid));
}

static int rank_main(void)
{
#ifdef HAVE_CUDA
	int64_t *in, *out;
	struct fid_mc *mc;
	fi_addr_t world;

	setup();
	in = dev_alloc(LARGE * sizeof(int64_t));
	out = dev_alloc(LARGE * sizeof(int64_t));
	mc = join_all();
	world = fi_mc_addr(mc);
	allreduce(world, in, out, SMALL);
	allreduce(world, in, out, LARGE);
	bcast(world, out, SMALL);
	CHK(fi_close(&mc->fid));
	CHK(fi_close(&ep->fid));
	CHK(fi_close(&av->fid));
	CHK(fi_close(&cq->fid));
	CHK(fi_close(&eq->fid));
	CHK(fi_close(&dom->fid));
	CHK(fi_close(&fab->fid));
	return 0;
#else
	return 77;
#endif
}

int main(int argc, char **argv)
{
	pid_t pid[NPROC];
	int i, st, fail = 0, skip = 0;

	prov = argc > 1 ? argv[1] : "shm";
	real = getenv("COLL_HMEM_REAL") &&
	       !strcmp(getenv("COLL_HMEM_REAL"), "1");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	/* No libfabric call before fork: each rank loads its own fake. */
	for (i = 0; i < NPROC; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			return 1;
		if (!pid[i]) {
			rank = i;
			alarm(120);
			exit(rank_main());
		}
	}
	for (i = 0; i < NPROC; i++) {
		if (waitpid(pid[i], &st, 0) < 0)
			return 1;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
			skip++;
		else if (!WIFEXITED(st) || WEXITSTATUS(st))
			fail = 1;
	}
	if (fail)
		return 1;
	if (skip) {
		printf("SKIP coll_hmem on %s\n", prov);
		return 77;
	}
	printf("PASS coll_hmem on %s, %d ranks\n", prov, NPROC);
	return 0;
}
