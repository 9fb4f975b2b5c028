/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_hmem.c - FI_HMEM over the shm provider between two processes, run
 * against the fake CUDA and Level Zero drivers of tests/hmem (host memory
 * posing as device memory, with call counters). The parent receives, a
 * fresh exec of this program sends (each process loads the fake driver
 * itself). Both domains carry counting copy overrides. For every transfer
 * the two sides predict the path (path_of()) and check it by the counters
 * of their own process:
 *  - staged (host memory, P2P off, too large for a bounce slot): every
 *    copy goes through the overrides with the buffer's iface and device;
 *    no handle is exported or opened, no device-to-device copy is made;
 *  - bounce (device source below FI_SHM_IPC_THRESHOLD): one device-to-
 *    device copy at each end, the sender's override never called; the
 *    bounce buffer is allocated and exported once and opened once by the
 *    receiver however many messages pass through it;
 *  - direct IPC (device source at or above the threshold): the sender
 *    exports the buffer's handle, copies nothing; the receiver opens it
 *    once per buffer and copies device to device.
 * On the bounce and IPC paths a host receive buffer is filled by a
 * device-to-host copy, which goes through the receiver's copy_from
 * override. Then a hostile phase: the sender corrupts its own pool entry
 * (size, handle size, iface, generation) and posts commands with a bad
 * entry index, offset and overflowing range straight into the receiver's
 * ring; the receiver must fail or drop each without one copy, and carry
 * on with good messages.
 *
 * Run by tests/shm/shm_hmem.sh. Exit 0 pass, 1 fail, 77 skip.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "shm_check.h"
#include "shm_wire.h" /* the region's layout, for the hostile phase */

#ifdef HAVE_CUDA
#include <cuda.h>
#endif
#ifdef HAVE_ZE
#include <level_zero/ze_api.h>
#endif

#define DEV	     1 /* the device id every device buffer lives on */
#define BUF_SIZE     (1 << 20)
#define IPC_DEFAULT  (64 * 1024)
#define REPEAT	     4
#define BOUNCE_ROUND 6
#define HOSTILE_TAG  0xbad0000000ULL

enum mem { HOST, DEVM };
enum path { STAGED, BOUNCE, DIRECT };

static const size_t sizes[] = {100, 3000, 20000, 200000, BUF_SIZE};
static const size_t bounce_sizes[] = {8, 4096, 60 * 1024};
static const enum mem combos[][2] = {{DEVM, DEVM}, {DEVM, HOST}, {HOST, DEVM}};

static struct fi_info *info;
static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_av *av;
static struct fid_ep *ep;
static struct fid_cq *cq;
static int failures;
static bool p2p;
static size_t ipc_threshold = IPC_DEFAULT;
static const char *role = "parent";
static bool no_desc; /* the provider must find the iface by address */

/* Unlike shm_check.h's: names the process and lets the test go on. */
#undef CHECK
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL [%s] %s:%d: ", role, __func__,   \
				__LINE__);                                     \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			failures++;                                            \
		}                                                              \
	} while (0)

/* ------------------------------------------------------------------ */
/* Counting overrides: plain copies (fake device memory is host memory). */

struct ovr_count {
	unsigned long calls;
	enum fi_hmem_iface iface;
	uint64_t device;
};

static struct ovr_count ovr_from, ovr_to;

static ssize_t ovr_copy_from(void *dest, size_t size, enum fi_hmem_iface iface,
			     uint64_t device, const struct iovec *iov,
			     size_t cnt, uint64_t off)
{
	ovr_from.calls++;
	ovr_from.iface = iface;
	ovr_from.device = device;
	return shm_test_iov_copy(iov, cnt, off, dest, size, false);
}

static ssize_t ovr_copy_to(enum fi_hmem_iface iface, uint64_t device,
			   const struct iovec *iov, size_t cnt, uint64_t off,
			   const void *src, size_t size)
{
	ovr_to.calls++;
	ovr_to.iface = iface;
	ovr_to.device = device;
	return shm_test_iov_copy(iov, cnt, off, (void *)src, size, true);
}

/* ------------------------------------------------------------------ */
/* The fake drivers, reached inside what libfabric loaded.              */

struct fake_drv {
	const char *name;
	enum fi_hmem_iface iface;
	const char *env;
	const char *calls_sym;
	const char *get_sym, *open_sym;
	const char *d2d_sym, *alloc_sym; /* device-to-device copy, alloc */
	unsigned long (*calls)(const char *);
	void *lib;
	void *(*alloc)(struct fake_drv *d, size_t size);
	void *ctx, *dev;
};

static unsigned long calls(struct fake_drv *d, const char *sym)
{
	return d->calls(sym);
}

#ifdef HAVE_CUDA
static void *cuda_alloc(struct fake_drv *d, size_t size)
{
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*set)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUcontext ctx;
	CUdeviceptr p;

	retain = (CUresult(*)(CUcontext *, CUdevice))dlsym(
		d->lib, "cuDevicePrimaryCtxRetain");
	set = (CUresult(*)(CUcontext))dlsym(d->lib, "cuCtxSetCurrent");
	alloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(d->lib,
							  "cuMemAlloc_v2");
	if (!retain || !set || !alloc || retain(&ctx, DEV) || set(ctx) ||
	    alloc(&p, size))
		return NULL;
	return (void *)(uintptr_t)p;
}
#endif

#ifdef HAVE_ZE
static void *ze_alloc(struct fake_drv *d, size_t size)
{
	ze_result_t (*drv_get)(uint32_t *, ze_driver_handle_t *);
	ze_result_t (*dev_get)(ze_driver_handle_t, uint32_t *,
			       ze_device_handle_t *);
	ze_result_t (*ctx_create)(ze_driver_handle_t, const ze_context_desc_t *,
				  ze_context_handle_t *);
	ze_result_t (*alloc)(ze_context_handle_t,
			     const ze_device_mem_alloc_desc_t *, size_t, size_t,
			     ze_device_handle_t, void **);
	ze_context_desc_t cdesc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
	ze_device_mem_alloc_desc_t adesc = {
		.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
	ze_device_handle_t devs[4];
	ze_driver_handle_t drv;
	uint32_t n = 1;
	void *p;

	*(void **)&drv_get = dlsym(d->lib, "zeDriverGet");
	*(void **)&dev_get = dlsym(d->lib, "zeDeviceGet");
	*(void **)&ctx_create = dlsym(d->lib, "zeContextCreate");
	*(void **)&alloc = dlsym(d->lib, "zeMemAllocDevice");
	if (!drv_get || !dev_get || !ctx_create || !alloc)
		return NULL;
	if (!d->ctx) {
		if (drv_get(&n, &drv))
			return NULL;
		n = 4;
		if (dev_get(drv, &n, devs) || n <= DEV ||
		    ctx_create(drv, &cdesc, (ze_context_handle_t *)&d->ctx))
			return NULL;
		d->dev = devs[DEV];
	}
	if (alloc(d->ctx, &adesc, size, 64, d->dev, &p))
		return NULL;
	return p;
}
#endif

static struct fake_drv drivers[] = {
#ifdef HAVE_CUDA
	{"cuda", FI_HMEM_CUDA, "FI_HMEM_CUDA_LIBRARY", "fake_cuda_calls",
	 "cuIpcGetMemHandle", "cuIpcOpenMemHandle_v2", "cuMemcpy",
	 "cuMemAlloc_v2", NULL, NULL, cuda_alloc},
#endif
#ifdef HAVE_ZE
	/* With overrides set, the driver copies only device to device. */
	{"ze", FI_HMEM_ZE, "FI_HMEM_ZE_LIBRARY", "fake_ze_calls",
	 "zeMemGetIpcHandle", "zeMemOpenIpcHandle",
	 "zeCommandListAppendMemoryCopy", "zeMemAllocDevice", NULL, NULL,
	 ze_alloc},
#endif
};
#define NDRV (sizeof(drivers) / sizeof(drivers[0]))

/* Only a fake the library itself loaded counts (RTLD_NOLOAD). */
static bool drv_up(struct fake_drv *d)
{
	const char *path = getenv(d->env);

	if (!path || !*path)
		return false;
	d->lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!d->lib)
		return false;
	*(void **)&d->calls = dlsym(d->lib, d->calls_sym);
	return d->calls != NULL;
}

/* ------------------------------------------------------------------ */
/* Fabric setup.                                                        */

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	union fi_override_op op;
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_TAGGED | FI_HMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("shm");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		fprintf(stderr, "[%s] shm with FI_HMEM not found: %s\n", role,
			fi_strerror(-ret));
		return ret;
	}
	ret = fi_fabric(info->fabric_attr, &fab, NULL);
	ret = ret ?: fi_domain(fab, info, &dom, NULL);
	if (ret)
		return ret;
	op.copy_from_hmem_iov = ovr_copy_from;
	ret = fi_set_op(&dom->fid, FI_OVERRIDE_COPY_FROM_HMEM_IOV, &op, 0);
	op.copy_to_hmem_iov = ovr_copy_to;
	ret = ret ?: fi_set_op(&dom->fid, FI_OVERRIDE_COPY_TO_HMEM_IOV, &op, 0);
	ret = ret ?: fi_av_open(dom, &av_attr, &av, NULL);
	ret = ret ?: fi_cq_open(dom, &cq_attr, &cq, NULL);
	ret = ret ?: fi_endpoint(dom, info, &ep, NULL);
	ret = ret ?: fi_ep_bind(ep, &av->fid, 0);
	ret = ret ?: fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ?: fi_enable(ep);
	if (ret)
		fprintf(stderr, "[%s] setup: %s\n", role, fi_strerror(-ret));
	return ret;
}

static void teardown(void)
{
	if (ep)
		fi_close(&ep->fid);
	if (cq)
		fi_close(&cq->fid);
	if (av)
		fi_close(&av->fid);
	if (dom)
		fi_close(&dom->fid);
	if (fab)
		fi_close(&fab->fid);
	fi_freeinfo(info);
}

static ssize_t wait_comp(struct fi_cq_tagged_entry *e)
{
	time_t end = time(NULL) + 20;
	struct fi_cq_err_entry err;
	ssize_t ret;

	while (time(NULL) < end) {
		ret = fi_cq_read(cq, e, 1);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			return -(ssize_t)err.err;
		}
		if (ret != -FI_EAGAIN)
			return ret;
	}
	return -FI_ETIMEDOUT;
}

static struct fid_mr *reg(void *buf, size_t len, struct fake_drv *d)
{
	struct iovec iov = {buf, len};
	static uint64_t next_key = 1;
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_SEND | FI_RECV,
		.requested_key = next_key++,
		.iface = d ? d->iface : FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr = NULL;
	int ret;

	if (d && d->iface == FI_HMEM_CUDA)
		attr.device.cuda = DEV;
	else if (d)
		attr.device.ze = DEV;
	ret = fi_mr_regattr(dom, &attr, 0, &mr);
	CHECK(!ret, "fi_mr_regattr(%s): %s", d ? d->name : "host",
	      fi_strerror(-ret));
	return mr;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 11));
}

/* The path the provider must take (single-iov sends). */
static enum path path_of(enum mem src, size_t size)
{
	if (!p2p || src != DEVM)
		return STAGED;
	if (size >= ipc_threshold)
		return DIRECT;
	return size <= SHM_BOUNCE_SLOT_SIZE ? BOUNCE : STAGED;
}

static const char *path_name(enum path p)
{
	return p == STAGED ? "staged" : p == BOUNCE ? "bounce" : "IPC";
}

/* ------------------------------------------------------------------ */
/* One transfer, from each side.                                        */

struct bufs {
	struct fake_drv *d;
	uint8_t *host, *dev;
	struct fid_mr *host_mr, *dev_mr;
};

/* Driver and override counts of this process, before and after. */
struct snap {
	struct ovr_count from, to;
	unsigned long gets, opens, d2d, allocs;
};

static void snap(struct fake_drv *d, struct snap *s)
{
	s->from = ovr_from;
	s->to = ovr_to;
	s->gets = calls(d, d->get_sym);
	s->opens = calls(d, d->open_sym);
	s->d2d = calls(d, d->d2d_sym);
	s->allocs = calls(d, d->alloc_sym);
}

static ssize_t post_send(void *buf, size_t size, void *desc, fi_addr_t peer,
			 uint64_t tag)
{
	ssize_t ret;

	do {
		ret = fi_tsend(ep, buf, size, desc, peer, tag, NULL);
		if (ret == -FI_EAGAIN)
			fi_cq_read(cq, NULL, 0);
	} while (ret == -FI_EAGAIN);
	return ret;
}

static void send_one(struct bufs *b, fi_addr_t peer, enum mem src, size_t size,
		     uint64_t tag)
{
	uint8_t *buf = src == DEVM ? b->dev : b->host;
	struct fid_mr *mr = src == DEVM ? b->dev_mr : b->host_mr;
	enum path path = path_of(src, size);
	struct fi_cq_tagged_entry e;
	struct snap s0, s1;
	ssize_t ret;

	fill(buf, size, (unsigned)tag);
	snap(b->d, &s0);
	ret = post_send(buf, size, no_desc ? NULL : fi_mr_desc(mr), peer, tag);
	CHECK(!ret, "tsend %zu: %s", size, fi_strerror((int)-ret));
	if (ret)
		return;
	ret = wait_comp(&e);
	CHECK(!ret, "send completion %s %zu: %s", b->d->name, size,
	      fi_strerror((int)-ret));
	snap(b->d, &s1);
	if (path != STAGED) {
		CHECK(s1.from.calls == s0.from.calls,
		      "%s %s send %zu staged %lu copies", b->d->name,
		      path_name(path), size, s1.from.calls - s0.from.calls);
		/* Bounce: exported once, with the buffer's allocation. */
		CHECK(path == DIRECT
			      ? s1.gets == s0.gets + 1
			      : s1.gets - s0.gets == s1.allocs - s0.allocs,
		      "%s %s send %zu exported %lu handles", b->d->name,
		      path_name(path), size, s1.gets - s0.gets);
		CHECK(s1.d2d - s0.d2d == (path == BOUNCE),
		      "%s %s send %zu: %lu device copies", b->d->name,
		      path_name(path), size, s1.d2d - s0.d2d);
		return;
	}
	CHECK(s1.from.calls > s0.from.calls, "%s send %zu: override not used",
	      b->d->name, size);
	CHECK(s1.from.iface == (src == DEVM ? b->d->iface : FI_HMEM_SYSTEM) &&
		      s1.from.device == (src == DEVM ? DEV : 0),
	      "%s send %zu: override saw iface %d device %llu", b->d->name,
	      size, (int)s1.from.iface, (unsigned long long)s1.from.device);
	CHECK(s1.gets == s0.gets && s1.d2d == s0.d2d,
	      "%s staged send %zu: %lu handles, %lu device copies", b->d->name,
	      size, s1.gets - s0.gets, s1.d2d - s0.d2d);
}

static ssize_t post_recv(struct bufs *b, enum mem dst, uint64_t tag)
{
	uint8_t *buf = dst == DEVM ? b->dev : b->host;
	struct fid_mr *mr = dst == DEVM ? b->dev_mr : b->host_mr;
	ssize_t ret;

	do {
		ret = fi_trecv(ep, buf, BUF_SIZE,
			       no_desc ? NULL : fi_mr_desc(mr), FI_ADDR_UNSPEC,
			       tag, 0, NULL);
	} while (ret == -FI_EAGAIN);
	return ret;
}

static void recv_one(struct bufs *b, enum mem src, enum mem dst, size_t size,
		     uint64_t tag)
{
	uint8_t *buf = dst == DEVM ? b->dev : b->host;
	enum path path = path_of(src, size);
	struct fi_cq_tagged_entry e;
	uint8_t *want = malloc(size);
	struct snap s0, s1;
	ssize_t ret;

	memset(buf, 0xee, size);
	snap(b->d, &s0);
	ret = post_recv(b, dst, tag);
	CHECK(!ret, "trecv: %s", fi_strerror((int)-ret));
	ret = ret ?: wait_comp(&e);
	CHECK(!ret, "recv completion %s %zu: %s", b->d->name, size,
	      fi_strerror((int)-ret));
	snap(b->d, &s1);
	if (ret || !want) {
		free(want);
		return;
	}
	fill(want, size, (unsigned)tag);
	CHECK(e.len == size && !memcmp(buf, want, size),
	      "%s %s->%s %zu: data differs (len %zu)", b->d->name,
	      src == DEVM ? "dev" : "host", dst == DEVM ? "dev" : "host", size,
	      e.len);
	free(want);
	if (path != STAGED) {
		CHECK(s1.to.calls == s0.to.calls,
		      "%s %s recv %zu went through copy_to", b->d->name,
		      path_name(path), size);
		/* Device to host is host<->device: the override's. */
		CHECK(dst == DEVM ? s1.d2d == s0.d2d + 1 &&
					    s1.from.calls == s0.from.calls
				  : s1.d2d == s0.d2d &&
					    s1.from.calls == s0.from.calls + 1,
		      "%s %s recv %zu to %s: %lu device copies, %lu "
		      "copy_from overrides",
		      b->d->name, path_name(path), size,
		      dst == DEVM ? "dev" : "host", s1.d2d - s0.d2d,
		      s1.from.calls - s0.from.calls);
		CHECK(dst == DEVM || (s1.from.iface == b->d->iface &&
				      s1.from.device == DEV),
		      "%s %s recv %zu: override saw iface %d device %llu",
		      b->d->name, path_name(path), size, (int)s1.from.iface,
		      (unsigned long long)s1.from.device);
		return;
	}
	CHECK(s1.to.calls > s0.to.calls, "%s recv %zu: override not used",
	      b->d->name, size);
	CHECK(s1.to.iface == (dst == DEVM ? b->d->iface : FI_HMEM_SYSTEM) &&
		      s1.to.device == (dst == DEVM ? DEV : 0),
	      "%s recv %zu: override saw iface %d device %llu", b->d->name,
	      size, (int)s1.to.iface, (unsigned long long)s1.to.device);
	CHECK(s1.d2d == s0.d2d && s1.opens == s0.opens,
	      "%s staged recv %zu: %lu device copies, %lu opens", b->d->name,
	      size, s1.d2d - s0.d2d, s1.opens - s0.opens);
}

static int bufs_init(struct bufs *b, struct fake_drv *d)
{
	b->d = d;
	b->host = malloc(BUF_SIZE);
	b->dev = d->alloc(d, BUF_SIZE);
	CHECK(b->host && b->dev, "%s: no buffers", d->name);
	if (!b->host || !b->dev)
		return -1;
	b->host_mr = reg(b->host, BUF_SIZE, NULL);
	b->dev_mr = reg(b->dev, BUF_SIZE, d);
	return b->host_mr && b->dev_mr ? 0 : -1;
}

static void bufs_fini(struct bufs *b)
{
	if (b->host_mr)
		fi_close(&b->host_mr->fid);
	if (b->dev_mr)
		fi_close(&b->dev_mr->fid);
	free(b->host);
}

/*
 * Many small device messages: all through the one bounce buffer, which the
 * sender allocates once and the receiver opens once.
 */
static void run_bounce(struct bufs *b, bool sender, fi_addr_t peer,
		       uint64_t *tag)
{
	unsigned long want_allocs = 0, want_opens = 0;
	struct snap s0, s1;
	bool direct = false;
	size_t s;
	int r;

	for (s = 0; s < (sizeof(bounce_sizes) / sizeof(bounce_sizes[0])); s++) {
		want_allocs |= path_of(DEVM, bounce_sizes[s]) == BOUNCE;
		direct |= path_of(DEVM, bounce_sizes[s]) == DIRECT;
	}
	want_opens = want_allocs + direct; /* one user buffer */
	snap(b->d, &s0);
	for (r = 0; r < BOUNCE_ROUND; r++) {
		for (s = 0;
		     s < (sizeof(bounce_sizes) / sizeof(bounce_sizes[0]));
		     s++, (*tag)++) {
			if (sender)
				send_one(b, peer, DEVM, bounce_sizes[s], *tag);
			else
				recv_one(b, DEVM, r & 1 ? HOST : DEVM,
					 bounce_sizes[s], *tag);
		}
	}
	snap(b->d, &s1);
	if (sender)
		CHECK(s1.allocs - s0.allocs == want_allocs,
		      "%s: bounce buffer allocated %lu times", b->d->name,
		      s1.allocs - s0.allocs);
	else
		CHECK(s1.opens - s0.opens == want_opens,
		      "%s: %d small messages opened %lu handles (want %lu)",
		      b->d->name, BOUNCE_ROUND * 3, s1.opens - s0.opens,
		      want_opens);
}

/* ------------------------------------------------------------------ */
/* Hostile sender: the child corrupts what it shares with the parent.  */

static const char *peer_name; /* the parent's address, in the child */

static struct shm_layout *map_region(const char *addr)
{
	char obj[SHM_NAME_MAX + 16];
	struct stat st;
	void *p;
	int fd;
	char *c;

	snprintf(obj, sizeof(obj), "/ofi_shm_%s",
		 addr + strlen(SHM_ADDR_PREFIX));
	for (c = obj + 1; *c; c++)
		if (*c == '/')
			*c = '_';
	fd = shm_open(obj, O_RDWR, 0);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || (size_t)st.st_size != SHM_REGION_SIZE) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, SHM_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* Our bounce buffer's entry in our own region's pool. */
static struct shm_ipc_pool_entry *
bounce_entry(struct shm_layout *rg, struct fake_drv *d, uint32_t *idx)
{
	struct shm_ipc_pool_entry *e;
	uint32_t i, gen;

	for (i = 0; i < SHM_IPC_POOL_SIZE; i++) {
		e = &rg->dev.pool[i];
		gen = atomic_load(&e->gen);
		if (e->iface == (uint32_t)d->iface &&
		    e->size ==
			    (uint64_t)SHM_BOUNCE_SLOTS * SHM_BOUNCE_SLOT_SIZE &&
		    gen && !(gen & 1)) {
			*idx = i;
			return e;
		}
	}
	return NULL;
}

/* Posts a forged SHM_PROTO_IPC command into the parent's ring. */
static void forge_cmd(struct shm_layout *prg, const char *self, uint64_t tag,
		      uint32_t entry, uint32_t gen, uint64_t offset)
{
	struct shm_region rg = {.map = prg};
	struct shm_peer_slot *slot;
	struct shm_cmd *cmd;
	uint64_t pos;
	uint16_t id;

	shm_region_handles(&rg);
	for (id = 0; id < SHM_MAX_PEERS; id++) {
		slot = shm_peer_slot(&rg, id);
		if (atomic_load(&slot->state) == SHM_PEER_READY &&
		    !strncmp(slot->name, self, SHM_NAME_MAX))
			break;
	}
	CHECK(id < SHM_MAX_PEERS, "own slot not found in the parent's table");
	if (id == SHM_MAX_PEERS)
		return;
	while (!(cmd = shm_ring_claim(shm_cmd_ring(&rg), &pos)))
		fi_cq_read(cq, NULL, 0);
	cmd->op = SHM_OP_TAGGED;
	cmd->proto = SHM_PROTO_IPC;
	cmd->src_id = id;
	cmd->flags = 0;
	cmd->size = 4096;
	cmd->tag = tag;
	cmd->data = 0;
	cmd->msg_id = UINT32_MAX; /* names no transfer of ours */
	cmd->u.ipc.entry = entry;
	cmd->u.ipc.gen = gen;
	cmd->u.ipc.offset = offset;
	slot->last_pos = pos + 1; /* as the provider does: close waits */
	shm_ring_commit(cmd, pos);
}

enum { H_SIZE_SMALL, H_SIZE_BIG, H_HSIZE, H_IFACE, H_GEN, H_OFFSET, H_NCASE };

static const char *const hostile_names[] = {
	"entry size below the message",
	"entry size above the mapping",
	"handle size",
	"iface",
	"generation",
	"offset past the entry",
};

static void hostile_send(struct bufs *b, fi_addr_t peer, uint64_t tag)
{
	struct shm_ipc_pool_entry *e, saved;
	char self[SHM_NAME_MAX];
	size_t len = sizeof(self);
	struct fi_cq_tagged_entry c;
	struct shm_layout *rg, *prg;
	uint32_t idx = 0, gen;
	int h;

	if (fi_getname(&ep->fid, self, &len) || !(rg = map_region(self))) {
		CHECK(0, "cannot map our region");
		return;
	}
	prg = map_region(peer_name);
	CHECK(prg, "cannot map the parent's region");
	e = prg ? bounce_entry(rg, b->d, &idx) : NULL;
	CHECK(e, "%s: bounce buffer entry not found", b->d->name);
	if (!e)
		goto out;
	gen = atomic_load(&e->gen);
	for (h = 0; h < H_NCASE; h++, tag++) {
		memcpy(&saved, e, sizeof(saved));
		switch (h) {
		case H_SIZE_SMALL:
			e->size = 100;
			break;
		case H_SIZE_BIG:
			e->size = 1ULL << 40;
			break;
		case H_HSIZE:
			e->handle_size = SHM_IPC_HANDLE_SIZE + 1;
			break;
		case H_IFACE:
			e->iface = 99;
			break;
		case H_GEN:
			atomic_store(&e->gen, gen + 2);
			break;
		case H_OFFSET:
			forge_cmd(prg, self, tag, idx, gen, saved.size - 100);
			continue;
		}
		fill(b->dev, 4096, (unsigned)tag);
		if (!post_send(b->dev, 4096, fi_mr_desc(b->dev_mr), peer, tag))
			wait_comp(&c); /* the receiver has judged it */
		memcpy(e, &saved, sizeof(saved));
	}
	/* Dropped before any lookup; then a good one with the same tag. */
	forge_cmd(prg, self, tag, SHM_IPC_POOL_SIZE, gen, 0);
	forge_cmd(prg, self, tag, idx, gen, UINT64_MAX - 10);
	forge_cmd(prg, self, tag, idx, gen | 1, 0);
	send_one(b, peer, DEVM, 4096, tag);
out:
	munmap(rg, SHM_REGION_SIZE);
	if (prg)
		munmap(prg, SHM_REGION_SIZE);
}

static void hostile_recv(struct bufs *b, uint64_t tag)
{
	struct fi_cq_tagged_entry c;
	struct snap s0, s1;
	ssize_t ret;
	int h;

	for (h = 0; h < H_NCASE; h++, tag++) {
		memset(b->dev, 0xee, 4096);
		snap(b->d, &s0);
		ret = post_recv(b, DEVM, tag);
		ret = ret ?: wait_comp(&c);
		snap(b->d, &s1);
		CHECK(ret == -FI_EIO, "%s hostile %s: receive answered %s",
		      b->d->name, hostile_names[h], fi_strerror((int)-ret));
		CHECK(s1.d2d == s0.d2d && s1.from.calls == s0.from.calls &&
			      s1.to.calls == s0.to.calls && b->dev[0] == 0xee &&
			      b->dev[4095] == 0xee,
		      "%s hostile %s: %lu device copies, %lu overrides",
		      b->d->name, hostile_names[h], s1.d2d - s0.d2d,
		      s1.from.calls - s0.from.calls + s1.to.calls -
			      s0.to.calls);
	}
	/* Three forged commands dropped, then the good message lands. */
	recv_one(b, DEVM, DEVM, 4096, tag);
}

/* Both sides walk the same sequence of transfers. */
static void run_driver(struct fake_drv *d, bool sender, fi_addr_t peer)
{
	unsigned long opens = calls(d, d->open_sym), rep_opens;
	struct bufs b = {0}, rb = {0};
	uint64_t tag = (uint64_t)d->iface << 32;
	size_t c, s;
	int i;

	if (bufs_init(&b, d))
		goto out;
	run_bounce(&b, sender, peer, &tag);
	for (c = 0; c < sizeof(combos) / sizeof(combos[0]); c++) {
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++, tag++) {
			if (sender)
				send_one(&b, peer, combos[c][0], sizes[s], tag);
			else
				recv_one(&b, combos[c][0], combos[c][1],
					 sizes[s], tag);
		}
	}
	if (!sender) {
		opens = calls(d, d->open_sym) - opens;
		printf("[parent] %s: %lu IPC handles opened\n", d->name, opens);
		CHECK(p2p ? opens > 0 : opens == 0,
		      "%s: %lu IPC handles opened with P2P %s", d->name, opens,
		      p2p ? "on" : "off");
	}
	/* A fresh buffer sent from repeatedly is mapped by the peer once. */
	if (bufs_init(&rb, d))
		goto out;
	rep_opens = calls(d, d->open_sym);
	for (i = 0; i < REPEAT; i++, tag++) {
		if (sender)
			send_one(&rb, peer, DEVM, BUF_SIZE, tag);
		else
			recv_one(&rb, DEVM, i & 1 ? HOST : DEVM, BUF_SIZE, tag);
	}
	if (!sender) {
		rep_opens = calls(d, d->open_sym) - rep_opens;
		CHECK(rep_opens == (p2p ? 1u : 0u),
		      "%s: %d sends from one buffer opened %lu handles",
		      d->name, REPEAT, rep_opens);
	}
	/* No descriptors: staged and IPC paths still see the device. */
	no_desc = true;
	for (s = 1; s < sizeof(sizes) / sizeof(sizes[0]); s += 2, tag++) {
		if (sender)
			send_one(&b, peer, DEVM, sizes[s], tag);
		else
			recv_one(&b, DEVM, DEVM, sizes[s], tag);
	}
	no_desc = false;
	/* A sender that lies: only where the bounce path is taken. */
	if (path_of(DEVM, 4096) == BOUNCE) {
		if (sender)
			hostile_send(&b, peer, HOSTILE_TAG);
		else
			hostile_recv(&b, HOSTILE_TAG);
	}
out:
	bufs_fini(&b);
	bufs_fini(&rb);
	printf("[%s] %s: done\n", role, d->name);
}

/* ------------------------------------------------------------------ */

static int child_main(const char *parent_name)
{
	fi_addr_t peer;
	size_t i;

	role = "child";
	peer_name = parent_name;
	if (setup())
		return 1;
	if (fi_av_insert(av, parent_name, 1, &peer, 0, NULL) != 1) {
		fprintf(stderr, "[child] av insert failed\n");
		return 1;
	}
	for (i = 0; i < NDRV; i++)
		if (drv_up(&drivers[i]))
			run_driver(&drivers[i], true, peer);
	teardown();
	return failures ? 1 : 0;
}

static int parent_main(const char *self)
{
	char name[128];
	size_t len = sizeof(name), i, up = 0;
	int status;
	pid_t pid;

	if (setup())
		return 1;
	for (i = 0; i < NDRV; i++)
		up += drv_up(&drivers[i]);
	if (!up) {
		printf("no fake device driver loaded: skipped\n");
		teardown();
		return 77;
	}
	if (fi_getname(&ep->fid, name, &len)) {
		fprintf(stderr, "getname failed\n");
		return 1;
	}
	pid = fork();
	if (pid == 0) {
		execl(self, self, "child", name, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < NDRV; i++)
		if (drivers[i].lib)
			run_driver(&drivers[i], false, FI_ADDR_UNSPEC);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "FAIL: sender process failed\n");
		failures++;
	}
	teardown();
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *env = getenv("FI_HMEM_DISABLE_P2P");

	setvbuf(stdout, NULL, _IONBF, 0);
	p2p = !(env && (*env == '1' || *env == 'y' || *env == 't'));
	env = getenv("FI_SHM_IPC_THRESHOLD");
	if (env)
		ipc_threshold = strtoul(env, NULL, 0);
	if (argc == 3 && !strcmp(argv[1], "child"))
		return child_main(argv[2]);
	return parent_main("/proc/self/exe");
}
