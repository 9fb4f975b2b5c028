/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_hmem.c - FI_HMEM over the tcp provider against the fake CUDA driver
 * of tests/hmem (host memory posing as device memory, with call
 * counters). One process, two endpoints on two domains (A initiates, B is
 * the receiver or RMA target) over loopback. Every transfer runs in the
 * four combinations of A's and B's buffers in host or device memory:
 * tagged sends (posted and unexpected receives, 1 B to 1 MiB), injects,
 * RMA writes, inject writes and reads, atomic writes, fetching and
 * compare atomics, with and without MR descriptors (src/hmem's lookup),
 * the data checked each time.
 *
 * "ovr": both domains carry counting copy overrides. Each transfer must
 * call exactly the overrides its buffers need, with their iface: device
 * memory through the override of the side that owns it, host payloads
 * too (tcp stages them once an override is set), never the driver's
 * copies. Device memory is mprotect()ed PROT_NONE outside the overrides,
 * so a byte of it handed to the socket (EFAULT) or touched by the
 * provider directly (SIGSEGV) fails the test.
 * "drv": no overrides: device memory is copied by the driver
 * (cuMemcpyDtoH_v2 / cuMemcpyHtoD_v2 counted), host memory by nothing.
 * Both modes end with failing copies (an override's error, a driver
 * error) that must fail exactly their one operation.
 * "nodev": run with FI_HMEM=system: tcp must not claim FI_HMEM.
 *
 * Run by tests/tcp/tcp_hmem.sh. Exit 0 pass, 1 fail, 77 skip.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "../shm/test_iov.h"

#define DEV	 1 /* the fake device every device buffer lives on */
#define BUF_SIZE (1 << 20)
#define NELEM	 4	      /* atomic elements */
#define FAULT	 FI_EOVERFLOW /* what a failing override answers */

enum mem { HOST, DEVM };
enum side_id { A, B };
enum dir { FROM, TO }; /* copy_from_hmem_iov (reads memory), copy_to */

static int failures;
static bool ovr_mode;
static bool no_desc; /* the provider must find the iface by address */
static const char *cur = "";

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s [%s] %s:%d: ",                \
				ovr_mode ? "ovr" : "drv", cur, __func__,       \
				__LINE__);                                     \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			failures++;                                            \
			return;                                                \
		}                                                              \
	} while (0)

#define DIE_IF(cond, ...)                                                      \
	do {                                                                   \
		if (cond) {                                                    \
			fprintf(stderr, "setup: ");                            \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* ------------------------------------------------------------------ */
/* The fake driver, reached inside what libfabric loaded.               */

static void *cuda_lib;
static unsigned long (*cuda_calls)(const char *);
static void (*cuda_fail_next)(const char *, int);

static bool drv_up(void)
{
	const char *path = getenv("FI_HMEM_CUDA_LIBRARY");

	if (!path || !*path)
		return false;
	cuda_lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!cuda_lib)
		return false;
	*(void **)&cuda_calls = dlsym(cuda_lib, "fake_cuda_calls");
	*(void **)&cuda_fail_next = dlsym(cuda_lib, "fake_cuda_fail_next");
	return cuda_calls && cuda_fail_next;
}

/* The driver API by its ABI (no cuda.h needed): CUresult is an int. */
static void *dev_alloc(size_t size)
{
	int (*retain)(void **, int);
	int (*set)(void *);
	int (*alloc)(unsigned long long *, size_t);
	unsigned long long p;
	void *ctx;

	*(void **)&retain = dlsym(cuda_lib, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(cuda_lib, "cuCtxSetCurrent");
	*(void **)&alloc = dlsym(cuda_lib, "cuMemAlloc_v2");
	if (!retain || !set || !alloc || retain(&ctx, DEV) || set(ctx) ||
	    alloc(&p, size))
		return NULL;
	return (void *)(uintptr_t)p;
}

/* ------------------------------------------------------------------ */
/* Device memory is closed to everyone but the overrides (ovr mode).   */

static uint8_t *dev_bufs[2];

static void dev_access(bool open)
{
	int i;

	if (!ovr_mode)
		return;
	for (i = 0; i < 2; i++)
		if (dev_bufs[i] &&
		    mprotect(dev_bufs[i], BUF_SIZE,
			     open ? PROT_READ | PROT_WRITE : PROT_NONE))
			DIE_IF(1, "mprotect");
}

/* ------------------------------------------------------------------ */
/* Counting overrides, one set per domain.                              */

struct ovr_count {
	unsigned long dev, host; /* calls by iface */
	unsigned long bad;	 /* an iface/device that is not ours */
	int fail;		 /* non-zero: the next device copy fails */
};

static struct ovr_count ovr[2][2]; /* [side][dir] */

static ssize_t count_copy(int side, enum dir dir, enum fi_hmem_iface iface,
			  uint64_t device, const struct iovec *iov, size_t cnt,
			  uint64_t off, void *buf, size_t size)
{
	struct ovr_count *c = &ovr[side][dir];
	ssize_t ret;

	if (iface == FI_HMEM_CUDA && device == DEV) {
		c->dev++;
	} else if (iface == FI_HMEM_SYSTEM && device == 0) {
		c->host++;
	} else {
		c->bad++;
		return -FI_EINVAL;
	}
	if (iface == FI_HMEM_CUDA && c->fail) {
		ret = -c->fail;
		c->fail = 0;
		return ret;
	}
	if (iface == FI_HMEM_CUDA)
		dev_access(true);
	ret = shm_test_iov_copy(iov, cnt, off, buf, size, dir == TO);
	if (iface == FI_HMEM_CUDA)
		dev_access(false);
	return ret;
}

#define OVR_PAIR(s)                                                            \
	static ssize_t from_##s(void *dest, size_t size,                       \
				enum fi_hmem_iface iface, uint64_t device,     \
				const struct iovec *iov, size_t cnt,           \
				uint64_t off)                                  \
	{                                                                      \
		return count_copy(s, FROM, iface, device, iov, cnt, off, dest, \
				  size);                                       \
	}                                                                      \
	static ssize_t to_##s(enum fi_hmem_iface iface, uint64_t device,       \
			      const struct iovec *iov, size_t cnt,             \
			      uint64_t off, const void *src, size_t size)      \
	{                                                                      \
		return count_copy(s, TO, iface, device, iov, cnt, off,         \
				  (void *)src, size);                          \
	}
OVR_PAIR(A)
OVR_PAIR(B)

/* ------------------------------------------------------------------ */
/* Fabric setup.                                                        */

struct side {
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
	uint8_t *buf[2]; /* [enum mem] */
	struct fid_mr *mr[2];
};

static struct fi_info *info;
static struct fid_fabric *fab;
static struct side sd[2];

static struct fi_info *hints_of(bool hmem)
{
	struct fi_info *hints = fi_allocinfo();

	DIE_IF(!hints, "fi_allocinfo");
	hints->caps =
		FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | (hmem ? FI_HMEM : 0);
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->addr_format = FI_SOCKADDR_IN;
	return hints;
}

static struct fid_mr *reg(struct side *s, void *buf, enum mem m)
{
	struct iovec iov = {buf, BUF_SIZE};
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			  FI_REMOTE_READ | FI_REMOTE_WRITE,
		.iface = m == DEVM ? FI_HMEM_CUDA : FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr;
	int ret;

	if (m == DEVM)
		attr.device.cuda = DEV;
	ret = fi_mr_regattr(s->dom, &attr, 0, &mr);
	DIE_IF(ret, "fi_mr_regattr: %s", fi_strerror(-ret));
	return mr;
}

static void side_open(int i)
{
	struct fi_hmem_override_ops ops = {
		.size = sizeof(ops),
		.copy_from_hmem_iov = i == A ? from_A : from_B,
		.copy_to_hmem_iov = i == A ? to_A : to_B,
	};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct side *s = &sd[i];
	int ret;

	ret = fi_domain(fab, info, &s->dom, NULL);
	DIE_IF(ret, "fi_domain: %s", fi_strerror(-ret));
	/* the 1.17 form for one side, fi_set_op for the other */
	if (ovr_mode && i == A) {
		ret = fi_set_ops(&s->dom->fid, FI_SET_OPS_HMEM_OVERRIDE, 0,
				 &ops, NULL);
		DIE_IF(ret, "fi_set_ops: %s", fi_strerror(-ret));
	} else if (ovr_mode) {
		union fi_override_op from = {.copy_from_hmem_iov = from_B};
		union fi_override_op to = {.copy_to_hmem_iov = to_B};

		ret = fi_set_op(&s->dom->fid, FI_OVERRIDE_COPY_FROM_HMEM_IOV,
				&from, 0);
		ret = ret
			      ?: fi_set_op(&s->dom->fid,
					   FI_OVERRIDE_COPY_TO_HMEM_IOV, &to,
					   0);
		DIE_IF(ret, "fi_set_op: %s", fi_strerror(-ret));
	}
	ret = fi_av_open(s->dom, &av_attr, &s->av, NULL);
	ret = ret ?: fi_cq_open(s->dom, &cq_attr, &s->cq, NULL);
	ret = ret ?: fi_endpoint(s->dom, info, &s->ep, NULL);
	ret = ret ?: fi_ep_bind(s->ep, &s->av->fid, 0);
	ret = ret ?: fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ?: fi_enable(s->ep);
	DIE_IF(ret, "endpoint: %s", fi_strerror(-ret));
	s->buf[HOST] = aligned_alloc(4096, BUF_SIZE);
	s->buf[DEVM] = dev_alloc(BUF_SIZE);
	DIE_IF(!s->buf[HOST] || !s->buf[DEVM], "buffers");
	dev_bufs[i] = s->buf[DEVM];
	s->mr[HOST] = reg(s, s->buf[HOST], HOST);
	s->mr[DEVM] = reg(s, s->buf[DEVM], DEVM);
}

static void setup(void)
{
	char name[2][64];
	size_t len;
	int i, ret;

	memset(ovr, 0, sizeof(ovr));
	memset(sd, 0, sizeof(sd));
	ret = fi_fabric(info->fabric_attr, &fab, NULL);
	DIE_IF(ret, "fi_fabric: %s", fi_strerror(-ret));
	for (i = 0; i < 2; i++) {
		side_open(i);
		len = sizeof(name[i]);
		ret = fi_getname(&sd[i].ep->fid, name[i], &len);
		DIE_IF(ret, "fi_getname");
	}
	for (i = 0; i < 2; i++) {
		ret = fi_av_insert(sd[i].av, name[!i], 1, &sd[i].peer, 0, NULL);
		DIE_IF(ret != 1, "fi_av_insert");
	}
	dev_access(false);
}

static void teardown(void)
{
	int i, m;

	dev_access(true);
	for (i = 0; i < 2; i++) {
		fi_close(&sd[i].ep->fid);
		for (m = 0; m < 2; m++)
			fi_close(&sd[i].mr[m]->fid);
		fi_close(&sd[i].cq->fid);
		fi_close(&sd[i].av->fid);
		fi_close(&sd[i].dom->fid);
		free(sd[i].buf[HOST]);
		dev_bufs[i] = NULL;
	}
	fi_close(&fab->fid);
}

/* ------------------------------------------------------------------ */
/* Completions.                                                         */

/* One completion of side @i: 0, its error (positive), or -1 on timeout.
 * Both sides are progressed meanwhile (manual progress). */
static int wait_comp(int i, struct fi_cq_tagged_entry *e)
{
	time_t end = time(NULL) + 20;
	struct fi_cq_err_entry err;
	ssize_t ret;

	while (time(NULL) < end) {
		ret = fi_cq_read(sd[i].cq, e, 1);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(sd[i].cq, &err, 0);
			return err.err ? err.err : FI_EOTHER;
		}
		if (ret != -FI_EAGAIN)
			return FI_EOTHER;
		(void)fi_cq_read(sd[!i].cq, NULL, 0);
	}
	return -1;
}

static void progress_both(int rounds)
{
	while (rounds--) {
		(void)fi_cq_read(sd[A].cq, NULL, 0);
		(void)fi_cq_read(sd[B].cq, NULL, 0);
	}
}

/* Retries a posting call while it answers -FI_EAGAIN. */
#define POST(call)                                                             \
	({                                                                     \
		ssize_t r_;                                                    \
		while ((r_ = (call)) == -FI_EAGAIN)                            \
			progress_both(1);                                      \
		r_;                                                            \
	})

/* ------------------------------------------------------------------ */
/* Buffers and what the copies must have been.                          */

static void *desc_of(int i, enum mem m)
{
	return no_desc ? NULL : fi_mr_desc(sd[i].mr[m]);
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	size_t k;

	dev_access(true);
	for (k = 0; k < len; k++)
		p[k] = (uint8_t)(k * 131 + seed * 7 + (k >> 11));
	dev_access(false);
}

static bool same(const uint8_t *a, const uint8_t *b, size_t len)
{
	bool eq;

	dev_access(true);
	eq = !memcmp(a, b, len);
	dev_access(false);
	return eq;
}

static void set_bytes(uint8_t *p, int c, size_t len)
{
	dev_access(true);
	memset(p, c, len);
	dev_access(false);
}

struct snap {
	struct ovr_count o[2][2];
	unsigned long htod, dtoh, d2d;
};

static void snap(struct snap *s)
{
	memcpy(s->o, ovr, sizeof(ovr));
	s->htod = cuda_calls("cuMemcpyHtoD_v2");
	s->dtoh = cuda_calls("cuMemcpyDtoH_v2");
	s->d2d = cuda_calls("cuMemcpy");
}

/* The copies one transfer needs: per side and direction, which memory. */
struct want {
	bool need[2][2];
	enum mem mem[2][2];
};

static void want_copy(struct want *w, int side, enum dir d, enum mem m)
{
	w->need[side][d] = true;
	w->mem[side][d] = m;
}

/*
 * ovr: exactly the overrides @w names were called, with the iface of
 * their memory, and the driver copied nothing. drv: the driver read
 * device memory iff a FROM copy of device memory was needed, wrote it
 * iff a TO copy was.
 */
static void check_copies(const struct snap *s0, const struct want *w)
{
	bool dtoh = false, htod = false, wdev, whost;
	unsigned long dev, host;
	struct snap s1;
	int i, d;

	snap(&s1);
	for (i = 0; i < 2; i++) {
		for (d = 0; d < 2; d++) {
			dev = s1.o[i][d].dev - s0->o[i][d].dev;
			host = s1.o[i][d].host - s0->o[i][d].host;
			wdev = w->need[i][d] && w->mem[i][d] == DEVM;
			whost = w->need[i][d] && w->mem[i][d] == HOST;
			CHECK(s1.o[i][d].bad == s0->o[i][d].bad,
			      "side %c: override saw a foreign iface/device",
			      'A' + i);
			dtoh = dtoh || (wdev && d == FROM);
			htod = htod || (wdev && d == TO);
			if (!ovr_mode)
				continue;
			CHECK((dev > 0) == wdev && (host > 0) == whost,
			      "side %c copy_%s: %lu device, %lu host copies "
			      "(want %s)",
			      'A' + i, d == FROM ? "from" : "to", dev, host,
			      wdev    ? "device"
			      : whost ? "host"
				      : "none");
		}
	}
	CHECK(s1.d2d == s0->d2d, "%lu device-to-device copies",
	      s1.d2d - s0->d2d);
	if (ovr_mode) {
		CHECK(s1.dtoh == s0->dtoh && s1.htod == s0->htod,
		      "driver copied with overrides set: %lu DtoH, %lu HtoD",
		      s1.dtoh - s0->dtoh, s1.htod - s0->htod);
		return;
	}
	CHECK((s1.dtoh > s0->dtoh) == dtoh && (s1.htod > s0->htod) == htod,
	      "driver copies: %lu DtoH (want %s), %lu HtoD (want %s)",
	      s1.dtoh - s0->dtoh, dtoh ? "some" : "none", s1.htod - s0->htod,
	      htod ? "some" : "none");
}

/* ------------------------------------------------------------------ */
/* Transfers: A's buffer in @am, B's in @bm.                            */

static const size_t sizes[] = {1, 4096, 70000, BUF_SIZE};

/* fi_tsend A -> fi_trecv B, the receive posted first or not (unexp). */
static void t_send(enum mem am, enum mem bm, size_t size, bool unexp,
		   bool inject)
{
	uint8_t *src = sd[A].buf[am], *dst = sd[B].buf[bm];
	struct fi_cq_tagged_entry e;
	struct want w = {0};
	struct snap s0;
	ssize_t ret;
	int err;

	fill(src, size, (unsigned)size + unexp);
	set_bytes(dst, 0xee, size);
	want_copy(&w, A, FROM, am);
	want_copy(&w, B, TO, bm);
	snap(&s0);
	if (!unexp) {
		ret = POST(fi_trecv(sd[B].ep, dst, size, desc_of(B, bm),
				    FI_ADDR_UNSPEC, 7, 0, NULL));
		CHECK(!ret, "trecv: %s", fi_strerror((int)-ret));
	}
	if (inject)
		ret = POST(fi_tinject(sd[A].ep, src, size, sd[A].peer, 7));
	else
		ret = POST(fi_tsend(sd[A].ep, src, size, desc_of(A, am),
				    sd[A].peer, 7, NULL));
	CHECK(!ret, "tsend %zu: %s", size, fi_strerror((int)-ret));
	if (!inject) {
		err = wait_comp(A, &e);
		CHECK(!err, "send completion: %d", err);
	}
	if (unexp) {
		progress_both(50); /* let it arrive before the receive */
		ret = POST(fi_trecv(sd[B].ep, dst, size, desc_of(B, bm),
				    FI_ADDR_UNSPEC, 7, 0, NULL));
		CHECK(!ret, "trecv: %s", fi_strerror((int)-ret));
	}
	err = wait_comp(B, &e);
	CHECK(!err, "recv completion: %d (%s)", err,
	      err > 0 ? fi_strerror(err) : "timeout");
	CHECK(e.len == size && same(src, dst, size), "data differs (len %zu)",
	      e.len);
	check_copies(&s0, &w);
}

/* fi_write (or fi_inject_write) A -> B's MR, or fi_read from it. */
static void t_rma(enum mem am, enum mem bm, size_t size, bool write,
		  bool inject)
{
	uint8_t *loc = sd[A].buf[am], *rem = sd[B].buf[bm];
	uint64_t key = fi_mr_key(sd[B].mr[bm]);
	struct fi_cq_tagged_entry e;
	struct want w = {0};
	uint8_t probe; /* the read behind an inject write lands here */
	struct snap s0;
	ssize_t ret;
	int err;

	fill(write ? loc : rem, size, (unsigned)size + write);
	set_bytes(write ? rem : loc, 0xee, size);
	want_copy(&w, A, write ? FROM : TO, am);
	want_copy(&w, B, write ? TO : FROM, bm);
	snap(&s0);
	if (inject)
		ret = POST(fi_inject_write(sd[A].ep, loc, size, sd[A].peer,
					   (uintptr_t)rem, key));
	else if (write)
		ret = POST(fi_write(sd[A].ep, loc, size, desc_of(A, am),
				    sd[A].peer, (uintptr_t)rem, key, NULL));
	else
		ret = POST(fi_read(sd[A].ep, loc, size, desc_of(A, am),
				   sd[A].peer, (uintptr_t)rem, key, NULL));
	CHECK(!ret, "%s %zu: %s", write ? "write" : "read", size,
	      fi_strerror((int)-ret));
	if (inject) {
		/* nothing completes: a read behind it shows it landed */
		ret = POST(fi_read(sd[A].ep, &probe, 1, NULL, sd[A].peer,
				   (uintptr_t)rem, key, NULL));
		CHECK(!ret, "probe read: %s", fi_strerror((int)-ret));
		want_copy(&w, B, FROM, bm);
		want_copy(&w, A, TO, HOST);
	}
	err = wait_comp(A, &e);
	CHECK(!err, "completion: %d (%s)", err,
	      err > 0 ? fi_strerror(err) : "timeout");
	CHECK(same(loc, rem, size), "%s %zu: data differs",
	      write ? "write" : "read", size);
	check_copies(&s0, &w);
}

static void dev_get_u64(const uint8_t *p, uint64_t *v, size_t n)
{
	dev_access(true);
	memcpy(v, p, n * sizeof(*v));
	dev_access(false);
}

static void dev_put_u64(uint8_t *p, const uint64_t *v, size_t n)
{
	dev_access(true);
	memcpy(p, v, n * sizeof(*v));
	dev_access(false);
}

enum aop { AT_SUM, AT_FETCH_SUM, AT_CSWAP };

/*
 * NELEM uint64 at B's buffer, operands (and compare values, results)
 * in A's: operands at 0, compare at 64, results at 128.
 */
static void t_atomic(enum mem am, enum mem bm, enum aop op)
{
	uint8_t *loc = sd[A].buf[am], *rem = sd[B].buf[bm];
	uint64_t key = fi_mr_key(sd[B].mr[bm]);
	uint64_t opnd[NELEM], cmpv[NELEM], init[NELEM], got[NELEM], res[NELEM],
		want_t[NELEM];
	void *d = desc_of(A, am);
	struct fi_cq_tagged_entry e;
	struct want w = {0};
	struct snap s0;
	ssize_t ret;
	int err, k;

	for (k = 0; k < NELEM; k++) {
		init[k] = 1000 + k;
		opnd[k] = 10 + k;
		cmpv[k] = init[k]; /* every compare matches: all swap */
		want_t[k] = op == AT_CSWAP ? opnd[k] : init[k] + opnd[k];
	}
	dev_put_u64(rem, init, NELEM);
	dev_put_u64(loc, opnd, NELEM);
	dev_put_u64(loc + 64, cmpv, NELEM);
	set_bytes(loc + 128, 0xee, sizeof(res));
	want_copy(&w, A, FROM, am);
	if (op != AT_SUM)
		want_copy(&w, A, TO, am);
	if (bm == DEVM) { /* executed on a host copy of the target */
		want_copy(&w, B, FROM, bm);
		want_copy(&w, B, TO, bm);
	}
	snap(&s0);
	if (op == AT_SUM)
		ret = POST(fi_atomic(sd[A].ep, loc, NELEM, d, sd[A].peer,
				     (uintptr_t)rem, key, FI_UINT64, FI_SUM,
				     NULL));
	else if (op == AT_FETCH_SUM)
		ret = POST(fi_fetch_atomic(sd[A].ep, loc, NELEM, d, loc + 128,
					   d, sd[A].peer, (uintptr_t)rem, key,
					   FI_UINT64, FI_SUM, NULL));
	else
		ret = POST(fi_compare_atomic(sd[A].ep, loc, NELEM, d, loc + 64,
					     d, loc + 128, d, sd[A].peer,
					     (uintptr_t)rem, key, FI_UINT64,
					     FI_CSWAP, NULL));
	CHECK(!ret, "atomic %d: %s", op, fi_strerror((int)-ret));
	err = wait_comp(A, &e);
	CHECK(!err, "atomic %d completion: %d (%s)", op, err,
	      err > 0 ? fi_strerror(err) : "timeout");
	dev_get_u64(rem, got, NELEM);
	CHECK(!memcmp(got, want_t, sizeof(got)), "atomic %d: target %llu", op,
	      (unsigned long long)got[0]);
	if (op != AT_SUM) {
		dev_get_u64(loc + 128, res, NELEM);
		CHECK(!memcmp(res, init, sizeof(res)), "atomic %d: result %llu",
		      op, (unsigned long long)res[0]);
	}
	check_copies(&s0, &w);
}

/* ------------------------------------------------------------------ */
/* Failing copies: exactly the one operation fails.                     */

static void arm(int side, enum dir d)
{
	if (ovr_mode)
		ovr[side][d].fail = FAULT;
	else
		cuda_fail_next(d == FROM ? "cuMemcpyDtoH_v2"
					 : "cuMemcpyHtoD_v2",
			       1 /* CUDA_ERROR_INVALID_VALUE */);
}

/* The error a failing copy surfaces as: the override's own, or EIO. */
static bool fault_err(int err)
{
	return ovr_mode ? err == FAULT : err > 0;
}

static void t_faults(void)
{
	uint8_t *ah = sd[A].buf[HOST], *ad = sd[A].buf[DEVM];
	uint8_t *bd = sd[B].buf[DEVM];
	uint64_t key = fi_mr_key(sd[B].mr[DEVM]);
	struct fi_cq_tagged_entry e;
	ssize_t ret;
	int err;

	cur = "fault send";
	/* the sender's copy fails: the call answers it, nothing is sent */
	arm(A, FROM);
	ret = fi_tsend(sd[A].ep, ad, 4096, desc_of(A, DEVM), sd[A].peer, 9,
		       NULL);
	CHECK(ovr_mode ? ret == -FAULT : ret < 0 && ret != -FI_EAGAIN,
	      "tsend with a failing copy: %zd", ret);
	t_send(DEVM, DEVM, 4096, false, false); /* the next one is intact */

	cur = "fault recv";
	/* the receiver's copy fails: its receive fails, the send does not */
	ret = POST(fi_trecv(sd[B].ep, bd, 4096, desc_of(B, DEVM),
			    FI_ADDR_UNSPEC, 9, 0, NULL));
	CHECK(!ret, "trecv");
	arm(B, TO);
	ret = POST(fi_tsend(sd[A].ep, ah, 4096, desc_of(A, HOST), sd[A].peer, 9,
			    NULL));
	CHECK(!ret, "tsend");
	err = wait_comp(A, &e);
	CHECK(!err, "send: %d", err);
	err = wait_comp(B, &e);
	CHECK(fault_err(err), "recv with a failing copy: %d", err);
	t_send(HOST, DEVM, 4096, false, false);

	cur = "fault write";
	/* at the target: the initiator's write completes with the error */
	arm(B, TO);
	ret = POST(fi_write(sd[A].ep, ah, 4096, desc_of(A, HOST), sd[A].peer,
			    (uintptr_t)bd, key, NULL));
	CHECK(!ret, "write");
	err = wait_comp(A, &e);
	CHECK(fault_err(err), "write with a failing target copy: %d", err);

	cur = "fault read";
	arm(A, TO); /* into A's device buffer at completion */
	ret = POST(fi_read(sd[A].ep, ad, 4096, desc_of(A, DEVM), sd[A].peer,
			   (uintptr_t)bd, key, NULL));
	CHECK(!ret, "read");
	err = wait_comp(A, &e);
	CHECK(fault_err(err), "read with a failing local copy: %d", err);

	cur = "fault atomic";
	arm(B, FROM);
	ret = POST(fi_atomic(sd[A].ep, ah, 1, desc_of(A, HOST), sd[A].peer,
			     (uintptr_t)bd, key, FI_UINT64, FI_SUM, NULL));
	CHECK(!ret, "atomic");
	err = wait_comp(A, &e);
	CHECK(fault_err(err), "atomic with a failing target copy: %d", err);
	t_rma(HOST, DEVM, 4096, true, false); /* the endpoints go on */
}

/* ------------------------------------------------------------------ */

static void run_matrix(void)
{
	static const char *const mn[] = {"host", "dev"};
	char name[96];
	size_t s;
	int am, bm;

	for (am = 0; am < 2; am++) {
		for (bm = 0; bm < 2; bm++) {
			for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				snprintf(name, sizeof(name), "%s->%s %zu%s",
					 mn[am], mn[bm], sizes[s],
					 no_desc ? " nodesc" : "");
				cur = name;
				t_send(am, bm, sizes[s], false, false);
				t_send(am, bm, sizes[s], true, false);
				t_rma(am, bm, sizes[s], true, false);
				t_rma(am, bm, sizes[s], false, false);
			}
			snprintf(name, sizeof(name), "%s->%s inject/atomic%s",
				 mn[am], mn[bm], no_desc ? " nodesc" : "");
			cur = name;
			t_send(am, bm, 64, false, true);
			t_send(am, bm, 64, true, true);
			t_rma(am, bm, 64, true, true);
			t_atomic(am, bm, AT_SUM);
			t_atomic(am, bm, AT_FETCH_SUM);
			t_atomic(am, bm, AT_CSWAP);
		}
	}
}

static int run_nodev(void)
{
	struct fi_info *hints = hints_of(true), *fi = NULL;
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi);
	if (ret != -FI_ENODATA) {
		fprintf(stderr, "FAIL nodev: tcp with FI_HMEM: %s\n",
			ret ? fi_strerror(-ret) : "offered");
		failures++;
	}
	fi_freeinfo(fi);
	hints->caps &= ~FI_HMEM;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi);
	if (ret || (fi->caps & FI_HMEM)) {
		fprintf(stderr, "FAIL nodev: tcp without FI_HMEM: %s\n",
			ret ? fi_strerror(-ret) : "FI_HMEM claimed");
		failures++;
	}
	fi_freeinfo(fi);
	fi_freeinfo(hints);
	printf("nodev: %s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	int ret, mode, before;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && !strcmp(argv[1], "nodev"))
		return run_nodev();
	hints = hints_of(true);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (!drv_up()) {
		printf("fake CUDA driver not loaded: skipped\n");
		fi_freeinfo(info);
		return 77;
	}
	if (ret) {
		fprintf(stderr, "FAIL: tcp with FI_HMEM not found: %s\n",
			fi_strerror(-ret));
		return 1;
	}
	for (mode = 0; mode < 2; mode++) {
		ovr_mode = mode == 0;
		before = failures;
		setup();
		no_desc = false;
		run_matrix();
		no_desc = true;
		run_matrix();
		no_desc = false;
		t_faults();
		teardown();
		printf("%s: %s\n", ovr_mode ? "overrides" : "driver",
		       failures == before ? "ok" : "FAIL");
	}
	fi_freeinfo(info);
	return failures ? 1 : 0;
}
