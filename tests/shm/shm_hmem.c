/*
 * shm_hmem.c - FI_HMEM over the shm provider between two processes, run
 * against the fake CUDA and Level Zero drivers of tests/hmem (host memory
 * posing as device memory, with call counters). The parent receives, a
 * fresh exec of this program sends (each process loads the fake driver
 * itself): device->device, device->host and host->device for sizes on the
 * inline, inject, segmented and device IPC paths, data checked. Both
 * domains carry counting copy overrides, which must see every staged copy
 * with the buffer's iface and device id and none of the IPC copies. The
 * driver counters prove which path ran: IPC handles opened with P2P on,
 * never with FI_HMEM_DISABLE_P2P=1, and opened once for repeated sends
 * from one buffer (Level Zero: the fd crossed the processes).
 *
 * Run by tests/shm/shm_hmem.sh. Exit 0 pass, 1 fail, 77 skip.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#ifdef HAVE_CUDA
#include <cuda.h>
#endif
#ifdef HAVE_ZE
#include <level_zero/ze_api.h>
#endif

#define DEV	    1 /* the device id every device buffer lives on */
#define BUF_SIZE    (1 << 20)
#define IPC_DEFAULT (64 * 1024)
#define REPEAT	    4

enum mem { HOST, DEVM };

static const size_t sizes[] = {100, 3000, 20000, 200000, BUF_SIZE};
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

static ssize_t iov_copy(const struct iovec *iov, size_t cnt, uint64_t off,
			void *buf, size_t size, bool to_iov)
{
	size_t i, n, done = 0;

	for (i = 0; i < cnt && done < size; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		n = iov[i].iov_len - off;
		if (n > size - done)
			n = size - done;
		if (to_iov)
			memcpy((char *)iov[i].iov_base + off,
			       (char *)buf + done, n);
		else
			memcpy((char *)buf + done,
			       (char *)iov[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return (ssize_t)done;
}

static ssize_t ovr_copy_from(void *dest, size_t size, enum fi_hmem_iface iface,
			     uint64_t device, const struct iovec *iov,
			     size_t cnt, uint64_t off)
{
	ovr_from.calls++;
	ovr_from.iface = iface;
	ovr_from.device = device;
	return iov_copy(iov, cnt, off, dest, size, false);
}

static ssize_t ovr_copy_to(enum fi_hmem_iface iface, uint64_t device,
			   const struct iovec *iov, size_t cnt, uint64_t off,
			   const void *src, size_t size)
{
	ovr_to.calls++;
	ovr_to.iface = iface;
	ovr_to.device = device;
	return iov_copy(iov, cnt, off, (void *)src, size, true);
}

/* ------------------------------------------------------------------ */
/* The fake drivers, reached inside what libfabric loaded.              */

struct fake_drv {
	const char *name;
	enum fi_hmem_iface iface;
	const char *env;
	const char *calls_sym;
	const char *get_sym, *open_sym;
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
	 "cuIpcGetMemHandle", "cuIpcOpenMemHandle_v2", NULL, NULL, cuda_alloc},
#endif
#ifdef HAVE_ZE
	{"ze", FI_HMEM_ZE, "FI_HMEM_ZE_LIBRARY", "fake_ze_calls",
	 "zeMemGetIpcHandle", "zeMemOpenIpcHandle", NULL, NULL, ze_alloc},
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

static bool ipc_path(enum mem src, size_t size)
{
	return p2p && src == DEVM && size >= ipc_threshold && size > 4096;
}

/* ------------------------------------------------------------------ */
/* One transfer, from each side.                                        */

struct bufs {
	struct fake_drv *d;
	uint8_t *host, *dev;
	struct fid_mr *host_mr, *dev_mr;
};

static void send_one(struct bufs *b, fi_addr_t peer, enum mem src, size_t size,
		     uint64_t tag)
{
	uint8_t *buf = src == DEVM ? b->dev : b->host;
	struct fid_mr *mr = src == DEVM ? b->dev_mr : b->host_mr;
	struct ovr_count before = ovr_from;
	struct fi_cq_tagged_entry e;
	unsigned long gets = calls(b->d, b->d->get_sym);
	ssize_t ret;

	fill(buf, size, (unsigned)tag);
	do {
		ret = fi_tsend(ep, buf, size, no_desc ? NULL : fi_mr_desc(mr),
			       peer, tag, NULL);
		if (ret == -FI_EAGAIN)
			fi_cq_read(cq, NULL, 0);
	} while (ret == -FI_EAGAIN);
	CHECK(!ret, "tsend %zu: %s", size, fi_strerror((int)-ret));
	if (ret)
		return;
	ret = wait_comp(&e);
	CHECK(!ret, "send completion %s %zu: %s", b->d->name, size,
	      fi_strerror((int)-ret));
	if (ipc_path(src, size)) {
		CHECK(ovr_from.calls == before.calls,
		      "%s IPC send %zu staged %lu copies", b->d->name, size,
		      ovr_from.calls - before.calls);
		CHECK(calls(b->d, b->d->get_sym) > gets,
		      "%s IPC send %zu exported no handle", b->d->name, size);
		return;
	}
	CHECK(ovr_from.calls > before.calls, "%s send %zu: override not used",
	      b->d->name, size);
	CHECK(ovr_from.iface == (src == DEVM ? b->d->iface : FI_HMEM_SYSTEM) &&
		      ovr_from.device == (src == DEVM ? DEV : 0),
	      "%s send %zu: override saw iface %d device %llu", b->d->name,
	      size, (int)ovr_from.iface, (unsigned long long)ovr_from.device);
	CHECK(calls(b->d, b->d->get_sym) == gets,
	      "%s staged send %zu exported a handle", b->d->name, size);
}

static void recv_one(struct bufs *b, enum mem src, enum mem dst, size_t size,
		     uint64_t tag)
{
	uint8_t *buf = dst == DEVM ? b->dev : b->host;
	struct fid_mr *mr = dst == DEVM ? b->dev_mr : b->host_mr;
	struct ovr_count before = ovr_to;
	struct fi_cq_tagged_entry e;
	uint8_t *want = malloc(size);
	ssize_t ret;

	memset(buf, 0xee, size);
	do {
		ret = fi_trecv(ep, buf, BUF_SIZE,
			       no_desc ? NULL : fi_mr_desc(mr), FI_ADDR_UNSPEC,
			       tag, 0, NULL);
	} while (ret == -FI_EAGAIN);
	CHECK(!ret, "trecv: %s", fi_strerror((int)-ret));
	ret = ret ?: wait_comp(&e);
	CHECK(!ret, "recv completion %s %zu: %s", b->d->name, size,
	      fi_strerror((int)-ret));
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
	if (ipc_path(src, size)) {
		CHECK(ovr_to.calls == before.calls,
		      "%s IPC recv %zu went through the override", b->d->name,
		      size);
		return;
	}
	CHECK(ovr_to.calls > before.calls, "%s recv %zu: override not used",
	      b->d->name, size);
	CHECK(ovr_to.iface == (dst == DEVM ? b->d->iface : FI_HMEM_SYSTEM) &&
		      ovr_to.device == (dst == DEVM ? DEV : 0),
	      "%s recv %zu: override saw iface %d device %llu", b->d->name,
	      size, (int)ovr_to.iface, (unsigned long long)ovr_to.device);
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
