/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_commit.c - fi_commit(3) on shm inside one process: an initiator
 * endpoint and a target endpoint (own domains), the target's memory a
 * MAP_SHARED mapping of a file registered with FI_RMA_PMEM. The test
 * defines pmem_persist and pmem_msync itself (exported with -rdynamic, so
 * libfabric's calls land here first) and records each range before
 * calling libpmem's, which shows which ranges the provider made durable.
 *
 * Checked: automatic commits persist exactly the named ranges and complete
 * with FI_RMA | FI_WRITE | FI_COMMIT_COMPLETE; bad keys, ranges past the
 * registration and non-persistent registrations fail with FI_EACCES and
 * persist nothing; a commit issued right behind many streamed writes runs
 * after all of them landed; FI_COMMIT_COMPLETE writes and atomics persist
 * what they wrote; FI_COMMIT_MANUAL endpoints need an EQ, call the FI_COMMIT handler
 * (its answer reaches the initiator, -FI_EAGAIN queues the event), or
 * queue the event with its iov array in the reader's buffer; sends with
 * FI_COMMIT_COMPLETE complete only once a persistent receive buffer holds
 * them durably (inline, inject, CMA; unexpected ones wait for the
 * receive); with the fake CUDA driver, commit-complete writes and sends
 * out of device memory are staged through the initiator's copy override,
 * one into a device registration uses the target's override and a commit
 * naming device memory is refused with FI_EACCES; argument
 * errors. Exit 0 when all pass, 77 without libpmem.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_domain.h>

#include "shm_check.h"

#define REGION (4u << 20)
#define NREC   256

/* ------------------------------------------------------------------ */
/* libpmem interposed: every range the provider persists.              */

static struct {
	int n;
	uintptr_t addr[NREC];
	size_t len[NREC];
} rec;

static void record(const void *addr, size_t len)
{
	if (rec.n < NREC) {
		rec.addr[rec.n] = (uintptr_t)addr;
		rec.len[rec.n] = len;
	}
	rec.n++;
}

void pmem_persist(const void *addr, size_t len)
{
	static void (*real)(const void *, size_t);

	record(addr, len);
	if (!real)
		real = (void (*)(const void *, size_t))dlsym(RTLD_NEXT,
							     "pmem_persist");
	if (real)
		real(addr, len);
}

int pmem_msync(const void *addr, size_t len)
{
	static int (*real)(const void *, size_t);

	record(addr, len);
	if (!real)
		real = (int (*)(const void *, size_t))dlsym(RTLD_NEXT,
							    "pmem_msync");
	return real ? real(addr, len) : -1;
}

/* Some recorded call covers [addr, addr + len). */
static bool persisted(const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	int i;

	for (i = 0; i < rec.n && i < NREC; i++) {
		if (rec.addr[i] <= a && a + len <= rec.addr[i] + rec.len[i])
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Two endpoints.                                                       */

struct node {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_eq *eq;
	fi_addr_t peer;
};

static struct node ini, tgt;
static uint8_t *region;		 /* target memory: a file mapping */
static struct fid_mr *pmr, *vmr; /* persistent, volatile registrations */
static uint8_t *vmem;
static uint8_t src[REGION];

static bool want_hmem;
/* SHM_TEST_PROV=tcp runs the same checks over tcp (tests/tcp). */
static const char *prov = "shm";

static struct fi_info *get_info(bool manual)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	DIE_IF(!hints, "fi_allocinfo");
	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_PMEM |
		      (want_hmem ? FI_HMEM : 0);
	hints->mode = manual ? FI_COMMIT_MANUAL : 0;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	return ret ? NULL : info;
}

static void node_open(struct node *n, bool manual, bool bind_eq)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_eq_attr eq_attr = {.size = 64};

	n->info = get_info(manual);
	DIE_IF(!n->info, "fi_getinfo");
	if (manual)
		DIE_IF(!(n->info->mode & FI_COMMIT_MANUAL), "manual mode");
	DIE_IF(fi_fabric(n->info->fabric_attr, &n->fab, NULL), "fabric");
	DIE_IF(fi_domain(n->fab, n->info, &n->dom, NULL), "domain");
	DIE_IF(fi_endpoint(n->dom, n->info, &n->ep, NULL), "endpoint");
	DIE_IF(fi_cq_open(n->dom, &cq_attr, &n->cq, NULL), "cq");
	DIE_IF(fi_av_open(n->dom, &av_attr, &n->av, NULL), "av");
	DIE_IF(fi_eq_open(n->fab, &eq_attr, &n->eq, NULL), "eq");
	DIE_IF(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV), "bind");
	DIE_IF(fi_ep_bind(n->ep, &n->av->fid, 0), "bind av");
	if (bind_eq)
		DIE_IF(fi_ep_bind(n->ep, &n->eq->fid, 0), "bind eq");
}

static void node_close(struct node *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->av->fid);
	fi_close(&n->cq->fid);
	fi_close(&n->eq->fid);
	fi_close(&n->dom->fid);
	fi_close(&n->fab->fid);
	fi_freeinfo(n->info);
	memset(n, 0, sizeof(*n));
}

static void connect_nodes(void)
{
	char name[128];
	size_t len;

	DIE_IF(fi_enable(ini.ep), "enable ini");
	DIE_IF(fi_enable(tgt.ep), "enable tgt");
	len = sizeof(name);
	DIE_IF(fi_getname(&tgt.ep->fid, name, &len), "getname");
	DIE_IF(fi_av_insert(ini.av, name, 1, &ini.peer, 0, NULL) != 1, "av");
}

static void target_mr(void)
{
	char path[] = "/tmp/shm_commit_XXXXXX";
	int fd = mkstemp(path);

	DIE_IF(fd < 0, "mkstemp");
	DIE_IF(ftruncate(fd, REGION), "ftruncate");
	region = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	DIE_IF(region == MAP_FAILED, "mmap");
	unlink(path);
	close(fd);
	vmem = calloc(1, 65536);
	DIE_IF(!vmem, "calloc");
	DIE_IF(fi_mr_reg(tgt.dom, region, REGION,
			 FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, FI_RMA_PMEM,
			 &pmr, NULL),
	       "mr pmem");
	DIE_IF(fi_mr_reg(tgt.dom, vmem, 65536, FI_REMOTE_WRITE, 0, 0, 0, &vmr,
			 NULL),
	       "mr volatile");
}

/* Undoes target_mr (LeakSanitizer runs over this test too). */
static void target_mr_free(void)
{
	fi_close(&pmr->fid);
	fi_close(&vmr->fid);
	munmap(region, REGION);
	free(vmem);
	region = vmem = NULL;
}

/* Polls both sides until the initiator's next completion (or error). */
static int wait_ini(struct fi_cq_data_entry *out, struct fi_cq_err_entry *err)
{
	struct fi_cq_data_entry e, dummy;
	time_t end = time(NULL) + 10;
	ssize_t ret;

	while (time(NULL) < end) {
		(void)fi_cq_read(tgt.cq, &dummy, 1);
		ret = fi_cq_read(ini.cq, &e, 1);
		if (ret == 1) {
			if (out)
				*out = e;
			return 0;
		}
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(ini.cq, err, 0);
			return err->err ? err->err : -1;
		}
	}
	return -2; /* timeout */
}

static ssize_t commit1(uint8_t *base, size_t off, size_t len, uint64_t key)
{
	struct fi_rma_iov iov = {(uintptr_t)base + off, len, key};

	return fi_commit(ini.ep, &iov, 1, ini.peer, 0, (void *)0xc0);
}

/* ------------------------------------------------------------------ */
/* Automatic commits.                                                   */

static void test_auto(void)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct fi_rma_iov iov[2];
	ssize_t ret;

	memset(src, 0x5a, 8192);
	ret = fi_write(ini.ep, src, 8192, NULL, ini.peer,
		       (uintptr_t)region + 4096, fi_mr_key(pmr), NULL);
	CHECK(!ret, "write %zd", ret);
	CHECK(!wait_ini(NULL, &err), "write completion");
	rec.n = 0;
	iov[0] = (struct fi_rma_iov){(uintptr_t)region + 4096, 100,
				     fi_mr_key(pmr)};
	iov[1] = (struct fi_rma_iov){(uintptr_t)region + 3 * 65536, 8192,
				     fi_mr_key(pmr)};
	ret = fi_commit(ini.ep, iov, 2, ini.peer, 0, (void *)0xc1);
	CHECK(!ret, "commit %zd", ret);
	CHECK(!wait_ini(&e, &err), "commit completion err %d", err.err);
	CHECK(e.op_context == (void *)0xc1, "context");
	CHECK(e.flags == (FI_RMA | FI_WRITE | FI_COMMIT_COMPLETE),
	      "flags %#llx", (unsigned long long)e.flags);
	CHECK(rec.n == 2, "persist calls %d", rec.n);
	CHECK(persisted(region + 4096, 100), "range 0 persisted");
	CHECK(persisted(region + 3 * 65536, 8192), "range 1 persisted");
}

static void test_eacces(void)
{
	struct fi_cq_err_entry err;
	int r;

	rec.n = 0;
	CHECK(!commit1(region, 0, 64, fi_mr_key(pmr) + 12345), "post");
	r = wait_ini(NULL, &err);
	CHECK(r == FI_EACCES, "bad key: %d", r);
	CHECK(err.op_context == (void *)0xc0, "error context");
	CHECK(!commit1(region, REGION - 64, 128, fi_mr_key(pmr)), "post");
	r = wait_ini(NULL, &err);
	CHECK(r == FI_EACCES, "past the end: %d", r);
	CHECK(!commit1(vmem, 0, 64, fi_mr_key(vmr)), "post");
	r = wait_ini(NULL, &err);
	CHECK(r == FI_EACCES, "volatile registration: %d", r);
	CHECK(rec.n == 0, "nothing persisted on refusal (%d)", rec.n);
}

/* Streamed writes then a commit posted at once: it must see them all. */
static void test_order(void)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	const size_t sz = 256 * 1024;
	size_t i, done = 0;
	ssize_t ret;

	memset(region, 0, REGION);
	for (i = 0; i < REGION / sz; i++) {
		memset(src + i * sz, (int)(i + 1), sz);
		ret = fi_write(ini.ep, src + i * sz, sz, NULL, ini.peer,
			       (uintptr_t)region + i * sz, fi_mr_key(pmr),
			       NULL);
		CHECK(!ret, "write %zu: %zd", i, ret);
	}
	rec.n = 0;
	ret = commit1(region, 0, REGION, fi_mr_key(pmr));
	CHECK(!ret, "commit %zd", ret);
	/* Fenced behind the writes: its completion comes last. */
	while (done < REGION / sz + 1) {
		CHECK(!wait_ini(&e, &err), "completion %zu err %d", done,
		      err.err);
		done++;
		CHECK((e.op_context == (void *)0xc0) ==
			      (done == REGION / sz + 1),
		      "commit completed as number %zu", done);
	}
	CHECK(rec.n == 1, "persist calls %d", rec.n);
	for (i = 0; i < REGION / sz; i++)
		CHECK(region[i * sz + sz - 1] == (uint8_t)(i + 1), "data %zu",
		      i);
}

static void test_commit_complete(void)
{
	struct fi_msg_rma msg;
	struct fi_rma_iov riov = {(uintptr_t)region + 70000, 3000,
				  fi_mr_key(pmr)};
	struct iovec iov = {src, 3000};
	struct fi_cq_err_entry err;
	ssize_t ret;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.addr = ini.peer;
	msg.rma_iov = &riov;
	msg.rma_iov_count = 1;
	rec.n = 0;
	ret = fi_writemsg(ini.ep, &msg, FI_COMMIT_COMPLETE | FI_COMPLETION);
	CHECK(!ret, "writemsg %zd", ret);
	CHECK(!wait_ini(NULL, &err), "completion err %d", err.err);
	CHECK(rec.n >= 1 && persisted(region + 70000, 3000),
	      "written range persisted (%d calls)", rec.n);
	/* Without the flag nothing is persisted. */
	rec.n = 0;
	ret = fi_writemsg(ini.ep, &msg, FI_COMPLETION);
	CHECK(!ret, "writemsg %zd", ret);
	CHECK(!wait_ini(NULL, &err), "completion");
	CHECK(rec.n == 0, "plain write persisted (%d)", rec.n);
	/* Into a volatile registration: delivery complete, no error. */
	riov = (struct fi_rma_iov){(uintptr_t)vmem, 3000, fi_mr_key(vmr)};
	ret = fi_writemsg(ini.ep, &msg, FI_COMMIT_COMPLETE | FI_COMPLETION);
	CHECK(!ret, "writemsg %zd", ret);
	CHECK(!wait_ini(NULL, &err), "volatile completion err %d", err.err);
}

/* Sends with FI_COMMIT_COMPLETE: durable in a persistent receive buffer. */
static int send_commit(size_t len, void *ctx)
{
	struct iovec iov = {src, len};
	struct fi_msg msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = ini.peer,
		.context = ctx,
	};

	return (int)fi_sendmsg(ini.ep, &msg,
			       FI_COMMIT_COMPLETE | FI_COMPLETION);
}

static void test_send(void)
{
	static const size_t sizes[] = {100, 3000, 65536};
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	void *desc = fi_mr_desc(pmr);
	size_t i;
	int k;

	for (i = 0; i < 3; i++) {
		memset(src, (int)(0x10 + i), sizes[i]);
		CHECK(!fi_recv(tgt.ep, region + 65536, sizes[i], desc,
			       FI_ADDR_UNSPEC, (void *)0xd0),
		      "recv");
		rec.n = 0;
		CHECK(!send_commit(sizes[i], (void *)0xd1), "send %zu",
		      sizes[i]);
		/* The receive completes first, the send after the persist. */
		CHECK(!wait_ini(&e, &err), "send %zu err %d", sizes[i],
		      err.err);
		CHECK(e.op_context == (void *)0xd1, "send context");
		CHECK(persisted(region + 65536, sizes[i]),
		      "%zu B receive persisted (%d calls)", sizes[i], rec.n);
		CHECK(region[65536 + sizes[i] - 1] == (uint8_t)(0x10 + i),
		      "data");
		while (fi_cq_read(tgt.cq, &e, 1) == 1)
			;
	}
	/* Unexpected: the sender waits until the receive is posted. */
	rec.n = 0;
	CHECK(!send_commit(200, (void *)0xd2), "send");
	for (k = 0; k < 1000; k++) {
		(void)fi_cq_read(tgt.cq, &e, 1);
		CHECK(fi_cq_read(ini.cq, &e, 1) == -FI_EAGAIN,
		      "completed before the receive was posted");
	}
	CHECK(!fi_recv(tgt.ep, region + 200000, 4096, desc, FI_ADDR_UNSPEC,
		       NULL),
	      "late recv");
	CHECK(!wait_ini(&e, &err), "late send err %d", err.err);
	CHECK(persisted(region + 200000, 200), "late receive persisted");
	while (fi_cq_read(tgt.cq, &e, 1) == 1)
		;
	/* A volatile receive buffer: delivery complete, nothing persisted. */
	rec.n = 0;
	CHECK(!fi_recv(tgt.ep, vmem, 4096, fi_mr_desc(vmr), FI_ADDR_UNSPEC,
		       NULL),
	      "recv");
	CHECK(!send_commit(1000, NULL), "send");
	CHECK(!wait_ini(&e, &err), "volatile send err %d", err.err);
	CHECK(rec.n == 0, "volatile receive persisted (%d)", rec.n);
	while (fi_cq_read(tgt.cq, &e, 1) == 1)
		;
}

static void test_atomic_commit(void)
{
	uint64_t one = 5, *t = (uint64_t *)(region + 300000);
	struct fi_ioc ioc = {&one, 1};
	struct fi_rma_ioc rioc = {(uintptr_t)t, 1, fi_mr_key(pmr)};
	struct fi_msg_atomic msg = {
		.msg_iov = &ioc,
		.iov_count = 1,
		.addr = ini.peer,
		.rma_iov = &rioc,
		.rma_iov_count = 1,
		.datatype = FI_UINT64,
		.op = FI_SUM,
	};
	struct fi_cq_err_entry err;

	*t = 10;
	rec.n = 0;
	CHECK(!fi_atomicmsg(ini.ep, &msg, FI_COMMIT_COMPLETE | FI_COMPLETION),
	      "atomicmsg");
	CHECK(!wait_ini(NULL, &err), "atomic err %d", err.err);
	CHECK(*t == 15, "atomic result %llu", (unsigned long long)*t);
	CHECK(persisted(t, sizeof(*t)), "atomic target persisted");
	rec.n = 0;
	CHECK(!fi_atomicmsg(ini.ep, &msg, FI_COMPLETION), "atomicmsg");
	CHECK(!wait_ini(NULL, &err), "atomic err %d", err.err);
	CHECK(rec.n == 0 && *t == 20, "plain atomic persisted (%d)", rec.n);
}

static void test_args(void)
{
	struct fi_rma_iov iov[5];

	memset(iov, 0, sizeof(iov));
	CHECK(fi_commit(ini.ep, iov, 0, ini.peer, 0, NULL) == -FI_EINVAL,
	      "count 0");
	CHECK(fi_commit(ini.ep, iov, 5, ini.peer, 0, NULL) == -FI_EINVAL,
	      "count 5");
	CHECK(fi_commit(ini.ep, NULL, 1, ini.peer, 0, NULL) == -FI_EINVAL,
	      "NULL iov");
	CHECK(fi_commit(ini.ep, iov, 1, ini.peer, FI_INJECT, NULL) ==
		      -FI_EBADFLAGS,
	      "flags");
}

/* ------------------------------------------------------------------ */
/* Device memory through the fake CUDA driver and copy overrides.       */

static unsigned long ini_from, tgt_to;

static ssize_t ini_copy_from(void *dest, size_t size, enum fi_hmem_iface iface,
			     uint64_t device, const struct iovec *iov,
			     size_t cnt, uint64_t off)
{
	(void)device;
	if (iface == FI_HMEM_CUDA)
		ini_from++;
	return shm_test_iov_copy(iov, cnt, off, dest, size, false);
}

static ssize_t tgt_copy_to(enum fi_hmem_iface iface, uint64_t device,
			   const struct iovec *iov, size_t cnt, uint64_t off,
			   const void *src, size_t size)
{
	(void)device;
	if (iface == FI_HMEM_CUDA)
		tgt_to++;
	return shm_test_iov_copy(iov, cnt, off, (void *)src, size, true);
}

/* Host memory posing as device memory, from the fake driver. */
static void *fake_cuda_alloc(size_t size)
{
	const char *lib = getenv("FI_HMEM_CUDA_LIBRARY");
	int (*retain)(void **, int), (*set)(void *);
	int (*alloc)(unsigned long long *, size_t);
	unsigned long long p;
	void *h, *ctx;

	h = lib ? dlopen(lib, RTLD_NOW) : NULL;
	if (!h)
		return NULL;
	retain = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
	set = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
	alloc = (int (*)(unsigned long long *, size_t))dlsym(h,
							     "cuMemAlloc_v2");
	if (!retain || !set || !alloc || retain(&ctx, 0) || set(ctx) ||
	    alloc(&p, size))
		return NULL;
	return (void *)(uintptr_t)p;
}

static struct fid_mr *dev_mr(struct fid_domain *dom, void *buf, size_t len,
			     uint64_t access)
{
	struct iovec iov = {buf, len};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = access,
		.iface = FI_HMEM_CUDA,
	};
	struct fid_mr *mr = NULL;

	return fi_mr_regattr(dom, &attr, 0, &mr) ? NULL : mr;
}

static void set_override(struct node *n, bool from)
{
	union fi_override_op op;

	memset(&op, 0, sizeof(op));
	if (from) {
		op.copy_from_hmem_iov = ini_copy_from;
		DIE_IF(fi_set_op(&n->dom->fid, FI_OVERRIDE_COPY_FROM_HMEM_IOV,
				 &op, 0),
		       "override");
	} else {
		op.copy_to_hmem_iov = tgt_copy_to;
		DIE_IF(fi_set_op(&n->dom->fid, FI_OVERRIDE_COPY_TO_HMEM_IOV,
				 &op, 0),
		       "override");
	}
}

/*
 * Commit-complete writes and sends out of a device buffer are staged
 * through src/hmem with the initiator's override; one into a device
 * registration is copied with the target's override and is delivery
 * complete; a commit naming it is refused (device memory is never a
 * persistent registration).
 */
static void test_device(uint8_t *dsrc, uint8_t *ddst)
{
	struct fid_mr *smr = dev_mr(ini.dom, dsrc, 65536, FI_WRITE | FI_SEND);
	struct fid_mr *tmr = dev_mr(tgt.dom, ddst, 65536, FI_REMOTE_WRITE);
	struct fi_rma_iov riov = {(uintptr_t)region + 4096, 3000,
				  fi_mr_key(pmr)};
	void *desc = smr ? fi_mr_desc(smr) : NULL;
	struct iovec iov = {dsrc, 3000};
	struct fi_msg_rma rmsg = {
		.msg_iov = &iov,
		.desc = &desc,
		.iov_count = 1,
		.addr = ini.peer,
		.rma_iov = &riov,
		.rma_iov_count = 1,
	};
	struct fi_msg msg = {
		.msg_iov = &iov,
		.desc = &desc,
		.iov_count = 1,
		.addr = ini.peer,
	};
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	int r;

	CHECK(smr && tmr, "device registrations");
	memset(dsrc, 0x77, 3000);
	ini_from = tgt_to = 0;
	rec.n = 0;
	CHECK(!fi_writemsg(ini.ep, &rmsg, FI_COMMIT_COMPLETE | FI_COMPLETION),
	      "writemsg");
	CHECK(!wait_ini(NULL, &err), "device write err %d", err.err);
	CHECK(ini_from >= 1, "initiator override not used (%lu)", ini_from);
	CHECK(persisted(region + 4096, 3000), "device write persisted");
	CHECK(region[4096 + 2999] == 0x77, "data");

	ini_from = 0;
	rec.n = 0;
	CHECK(!fi_recv(tgt.ep, region + 131072, 4096, fi_mr_desc(pmr),
		       FI_ADDR_UNSPEC, NULL),
	      "recv");
	CHECK(!fi_sendmsg(ini.ep, &msg, FI_COMMIT_COMPLETE | FI_COMPLETION),
	      "sendmsg");
	CHECK(!wait_ini(NULL, &err), "device send err %d", err.err);
	CHECK(ini_from >= 1, "send override not used");
	CHECK(persisted(region + 131072, 3000), "device send persisted");
	while (fi_cq_read(tgt.cq, &e, 1) == 1)
		;

	/* Into device memory at the target: its override, no persist. */
	rec.n = 0;
	riov = (struct fi_rma_iov){(uintptr_t)ddst, 3000, fi_mr_key(tmr)};
	CHECK(!fi_writemsg(ini.ep, &rmsg, FI_COMMIT_COMPLETE | FI_COMPLETION),
	      "writemsg");
	CHECK(!wait_ini(NULL, &err), "write into device err %d", err.err);
	CHECK(tgt_to >= 1, "target override not used");
	CHECK(rec.n == 0 && ddst[2999] == 0x77, "device target");
	CHECK(!commit1(ddst, 0, 64, fi_mr_key(tmr)), "commit");
	r = wait_ini(NULL, &err);
	CHECK(r == FI_EACCES, "commit of device memory: %d", r);
	fi_close(&smr->fid);
	fi_close(&tmr->fid);
}

/* ------------------------------------------------------------------ */
/* FI_COMMIT_MANUAL.                                                    */

static struct {
	int calls;
	ssize_t answer;
	uint64_t len;
	size_t count;
	struct fi_rma_iov iov[4];
	fid_t fid;
} hs;

static ssize_t on_commit(struct fid_eq *eq, uint64_t type, void *data,
			 uint64_t len, void *context)
{
	struct fi_eq_commit_entry *c = data;

	(void)eq;
	(void)context;
	if (type != FI_COMMIT)
		return -FI_EINVAL;
	hs.calls++;
	hs.len = len;
	hs.count = c->count;
	hs.fid = c->fid;
	if (c->count <= 4 && c->iov)
		memcpy(hs.iov, c->iov, c->count * sizeof(*c->iov));
	return hs.answer;
}

static void test_manual(void)
{
	struct fi_cq_err_entry err;
	uint8_t buf[sizeof(struct fi_eq_commit_entry) +
		    2 * sizeof(struct fi_rma_iov)];
	struct fi_eq_commit_entry *c = (void *)buf;
	struct fi_rma_iov iov[2];
	uint32_t event;
	ssize_t ret;
	int r;

	iov[0] = (struct fi_rma_iov){(uintptr_t)region + 8, 16, fi_mr_key(pmr)};
	iov[1] = (struct fi_rma_iov){(uintptr_t)region + 512, 32,
				     fi_mr_key(pmr)};
	/* Handler answering 0: success, nothing persisted by us. */
	CHECK(!fi_eq_register_handler(tgt.eq, FI_COMMIT, on_commit, NULL),
	      "register");
	rec.n = 0;
	hs.answer = 0;
	CHECK(!fi_commit(ini.ep, iov, 2, ini.peer, 0, NULL), "post");
	CHECK(!wait_ini(NULL, &err), "handled commit err %d", err.err);
	CHECK(hs.calls == 1, "handler calls %d", hs.calls);
	CHECK(hs.count == 2 && !memcmp(hs.iov, iov, sizeof(iov)),
	      "handler iovs");
	CHECK(hs.len == sizeof(buf), "event len %llu",
	      (unsigned long long)hs.len);
	CHECK(hs.fid == &tgt.ep->fid, "event fid");
	CHECK(rec.n == 0, "manual mode persisted (%d)", rec.n);

	/* Handler answering an error: the initiator gets it. */
	hs.answer = -FI_EIO;
	CHECK(!fi_commit(ini.ep, iov, 1, ini.peer, 0, NULL), "post");
	r = wait_ini(NULL, &err);
	CHECK(r == FI_EIO, "handler error reached initiator: %d", r);

	/* Bad key: refused before the application hears of it. */
	hs.calls = 0;
	CHECK(!commit1(region, 0, 8, fi_mr_key(pmr) ^ 0xff00), "post");
	r = wait_ini(NULL, &err);
	CHECK(r == FI_EACCES && !hs.calls, "bad key in manual mode: %d", r);

	/* Declined (-FI_EAGAIN), then no handler: the event is queued. */
	hs.answer = -FI_EAGAIN;
	hs.calls = 0;
	CHECK(!fi_commit(ini.ep, iov, 2, ini.peer, 0, NULL), "post");
	CHECK(!wait_ini(NULL, &err), "declined commit err %d", err.err);
	CHECK(hs.calls == 1, "declining handler called");
	CHECK(!fi_eq_register_handler(tgt.eq, FI_COMMIT, NULL, NULL),
	      "unregister");
	CHECK(!fi_commit(ini.ep, iov + 1, 1, ini.peer, 0, NULL), "post");
	CHECK(!wait_ini(NULL, &err), "queued commit err %d", err.err);
	for (r = 0; r < 2; r++) {
		memset(buf, 0, sizeof(buf));
		ret = fi_eq_read(tgt.eq, &event, buf, sizeof(buf), 0);
		CHECK(ret == (ssize_t)(sizeof(*c) +
				       (2 - r) * sizeof(struct fi_rma_iov)),
		      "eq_read %d: %zd", r, ret);
		CHECK(event == FI_COMMIT, "event %u", event);
		CHECK(c->count == (size_t)(2 - r), "count %zu", c->count);
		CHECK(c->iov == (void *)(c + 1), "iov points into our buffer");
		CHECK(!memcmp(c->iov, iov + r, c->count * sizeof(iov[0])),
		      "event iovs %d", r);
		CHECK(c->fid == &tgt.ep->fid, "fid");
	}
	CHECK(fi_eq_read(tgt.eq, &event, buf, sizeof(buf), 0) == -FI_EAGAIN,
	      "no more events");
	/* A too short buffer. */
	CHECK(!fi_commit(ini.ep, iov, 2, ini.peer, 0, NULL), "post");
	CHECK(!wait_ini(NULL, &err), "queued commit");
	CHECK(fi_eq_read(tgt.eq, &event, buf, sizeof(*c), FI_PEEK) ==
		      (ssize_t)sizeof(*c),
	      "short buffer: a cut copy");
	CHECK(!c->iov && c->count == 2, "a cut entry points at no array");
	CHECK(fi_eq_read(tgt.eq, &event, buf, sizeof(buf), 0) ==
		      (ssize_t)sizeof(buf),
	      "then read");
}

static void test_manual_needs_eq(void)
{
	struct node n;

	node_open(&n, true, false);
	CHECK(fi_enable(n.ep) == -FI_ENOEQ, "enable without EQ");
	node_close(&n);
}

int main(void)
{
	struct fi_info *probe;
	uint8_t *dsrc = NULL, *ddst = NULL;

	if (getenv("SHM_TEST_PROV"))
		prov = getenv("SHM_TEST_PROV");
	probe = get_info(false);
	if (!probe) {
		printf("SKIP: no %s with FI_RMA_PMEM (built without libpmem)\n",
		       prov);
		return 77;
	}
	fi_freeinfo(probe);

	node_open(&ini, false, false);
	node_open(&tgt, false, false);
	connect_nodes();
	target_mr();
	test_args();
	test_auto();
	test_eacces();
	test_order();
	test_commit_complete();
	test_send();
	test_atomic_commit();
	target_mr_free();
	node_close(&ini);
	node_close(&tgt);

	/* Device memory, when the fake CUDA driver is there (shm_commit.sh). */
	want_hmem = true;
	/* The device cases need FI_HMEM, which only shm offers. */
	if (!strcmp(prov, "shm")) {
		dsrc = fake_cuda_alloc(65536);
		ddst = fake_cuda_alloc(65536);
	}
	if (dsrc && ddst) {
		node_open(&ini, false, false);
		node_open(&tgt, false, false);
		set_override(&ini, true);
		set_override(&tgt, false);
		connect_nodes();
		target_mr();
		test_device(dsrc, ddst);
		target_mr_free();
		node_close(&ini);
		node_close(&tgt);
	} else {
		printf("no fake CUDA driver: device cases skipped\n");
	}
	want_hmem = false;

	node_open(&ini, false, false);
	node_open(&tgt, true, true);
	connect_nodes();
	target_mr();
	test_manual();
	test_manual_needs_eq();
	target_mr_free();
	node_close(&ini);
	node_close(&tgt);

	printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
