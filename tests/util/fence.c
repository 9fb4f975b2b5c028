/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fence.c - FI_FENCE on one provider's RDM endpoints (argv[1]), in one
 * process under manual progress: endpoint A reads from and writes to B,
 * each with a CQ of its own, so B moves only when the test reads B's CQ.
 *
 *  caps    fi_getinfo offers FI_FENCE when the hints ask for it; unasked,
 *          only sockets reports it (as Debian's does: its endpoints are
 *          wrapped for FI_TRIGGER anyway), since a fence takes shm's
 *          direct entries off the endpoint
 *  write   a fenced fi_writemsg waits (-FI_EAGAIN) while an earlier read
 *          is unanswered, an unfenced one goes at once; once B answered,
 *          the fenced write goes, and completes after the read
 *  atomic  the same with a fenced fi_atomicmsg (FI_SUM, FI_INJECT and
 *          FI_DELIVERY_COMPLETE, as OpenSHMEM signals a put)
 *  opflags the same with fi_send under FI_FENCE in the op flags
 *          (FI_SETOPSFLAG): a plain call passes the same gate
 *
 * Exits 0, or 1 on a failed check (tests/util/fence.sh skips providers
 * not built).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define WAIT_SEC 20
#define MEM_SIZE 4096

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("  %s:%d: ", __FILE__, __LINE__);               \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
			goto out;                                              \
		}                                                              \
	} while (0)

static struct {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_mr *mr;
	struct fid_ep *ep[2];
	struct fid_cq *cq[2];
	uint8_t mem[MEM_SIZE];	/* B's, registered */
	uint8_t lbuf[MEM_SIZE]; /* A's, registered too */
	uint64_t key;
} t;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int setup(const char *prov)
{
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fi_av_attr ava = {.type = FI_AV_TABLE};
	struct fi_info *hints = fi_allocinfo();
	char name[128];
	fi_addr_t a;
	size_t len;
	int i, ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC | FI_FENCE;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (strcmp(prov, "shm"))
		ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE,
				 hints, &t.info);
	else
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &t.info);
	fi_freeinfo(hints);
	if (ret) {
		printf("  fi_getinfo with FI_FENCE: %d\n", ret);
		return ret;
	}
	if (!(t.info->caps & FI_FENCE) || !(t.info->tx_attr->caps & FI_FENCE))
		return -FI_ENODATA;
	if ((ret = fi_fabric(t.info->fabric_attr, &t.fab, NULL)) ||
	    (ret = fi_domain(t.fab, t.info, &t.dom, NULL)) ||
	    (ret = fi_av_open(t.dom, &ava, &t.av, NULL)))
		return ret;
	/* one region over both buffers: A's local side needs no desc */
	ret = fi_mr_reg(t.dom, &t, sizeof(t),
			FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
			0, 0, 0, &t.mr, NULL);
	if (ret)
		return ret;
	t.key = fi_mr_key(t.mr);
	for (i = 0; i < 2; i++) {
		len = sizeof(name);
		if ((ret = fi_cq_open(t.dom, &cqa, &t.cq[i], NULL)) ||
		    (ret = fi_endpoint(t.dom, t.info, &t.ep[i], NULL)) ||
		    (ret = fi_ep_bind(t.ep[i], &t.av->fid, 0)) ||
		    (ret = fi_ep_bind(t.ep[i], &t.cq[i]->fid,
				      FI_TRANSMIT | FI_RECV)) ||
		    (ret = fi_enable(t.ep[i])) ||
		    (ret = fi_getname(&t.ep[i]->fid, name, &len)))
			return ret;
		if (fi_av_insert(t.av, name, 1, &a, 0, NULL) != 1 ||
		    a != (fi_addr_t)i)
			return -FI_EOTHER;
	}
	return 0;
}

/* Whether @prov reports FI_FENCE to hints that do not ask for it. */
static int fence_unasked(const char *prov, bool *has)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_RMA;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	*has = (info->caps | info->tx_attr->caps) & FI_FENCE;
	fi_freeinfo(info);
	return 0;
}

static void teardown(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (t.ep[i])
			fi_close(&t.ep[i]->fid);
		if (t.cq[i])
			fi_close(&t.cq[i]->fid);
	}
	if (t.mr)
		fi_close(&t.mr->fid);
	if (t.av)
		fi_close(&t.av->fid);
	if (t.dom)
		fi_close(&t.dom->fid);
	if (t.fab)
		fi_close(&t.fab->fid);
	fi_freeinfo(t.info);
}

static int b_done; /* B's completions (its receives) */

/* B's progress, counting its completions. */
static void pump_b(void)
{
	struct fi_cq_entry e;

	if (fi_cq_read(t.cq[1], &e, 1) == 1)
		b_done++;
}

/* A's next completion's context, progressing B meanwhile; NULL on
 * error or time out. */
static void *next_a(void)
{
	struct fi_cq_entry e;
	double end = now() + WAIT_SEC;
	ssize_t ret;

	do {
		ret = fi_cq_read(t.cq[0], &e, 1);
		if (ret == 1)
			return e.op_context;
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			(void)fi_cq_readerr(t.cq[0], &err, 0);
			printf("  error completion: %d (%s)\n", err.err,
			       fi_strerror(err.err));
			return NULL;
		}
		if (ret != -FI_EAGAIN) {
			printf("  fi_cq_read: %zd\n", ret);
			return NULL;
		}
		pump_b();
	} while (now() < end);
	return NULL;
}

/* @p's target address: virtual, or an offset into the region. */
static uint64_t raddr(void *p)
{
	if (t.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		return (uint64_t)(uintptr_t)p;
	return (uint64_t)((uint8_t *)p - (uint8_t *)&t);
}

/* The read that keeps A busy until B answers it. */
static int start_read(void *ctx)
{
	memset(t.mem, 'f', 64);
	memset(t.lbuf, 0, 64);
	return (int)fi_read(t.ep[0], t.lbuf, 64, NULL, 1, raddr(t.mem), t.key,
			    ctx);
}

/*
 * @post(fence) posts the fenced (or unfenced) transmit with context
 * @ctx: while the read is out it must wait, an unfenced one goes; the
 * fenced one goes after B answered and completes after the read.
 */
static int fenced(ssize_t (*post)(uint64_t, void *), const char *what)
{
	char rctx, fctx, uctx;
	void *got;
	double end;
	ssize_t ret;
	int i, rc = -1, nread = -1, nfence = -1;

	CHECK(!start_read(&rctx), "%s: read", what);
	for (i = 0; i < 3; i++) {
		ret = post(FI_FENCE, &fctx);
		CHECK(ret == -FI_EAGAIN,
		      "%s: fenced while a read is out: %zd, not -FI_EAGAIN",
		      what, ret);
	}
	CHECK(!(ret = post(0, &uctx)), "%s: unfenced: %zd", what, ret);
	end = now() + WAIT_SEC;
	do {
		pump_b();
		ret = post(FI_FENCE, &fctx);
	} while (ret == -FI_EAGAIN && now() < end);
	CHECK(!ret, "%s: fenced after the read: %zd", what, ret);
	for (i = 0; i < 3; i++) {
		got = next_a();
		CHECK(got, "%s: completion %d of 3", what, i + 1);
		if (got == &rctx)
			nread = i;
		if (got == &fctx)
			nfence = i;
	}
	CHECK(nread >= 0 && nfence >= 0, "%s: completions", what);
	CHECK(nread < nfence, "%s: the fenced one completed before the read",
	      what);
	CHECK(t.lbuf[0] == 'f' && t.lbuf[63] == 'f', "%s: read data", what);
	rc = 0;
out:
	return rc;
}

static ssize_t post_write(uint64_t flags, void *ctx)
{
	struct iovec iov = {t.lbuf + 128, 8};
	struct fi_rma_iov rma = {
		.addr = raddr(t.mem + 2048), .len = 8, .key = t.key};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .iov_count = 1,
				 .addr = 1,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = ctx};

	return fi_writemsg(t.ep[0], &msg, flags);
}

static int case_write(void)
{
	int rc = -1;

	memset(t.lbuf + 128, 'w', 8);
	memset(t.mem + 2048, 0, 8);
	CHECK(!fenced(post_write, "write"), "write");
	CHECK(!memcmp(t.mem + 2048, "wwwwwwww", 8), "written data");
	rc = 0;
out:
	return rc;
}

static uint64_t addend = 5;

static ssize_t post_atomic(uint64_t flags, void *ctx)
{
	struct fi_ioc ioc = {&addend, 1};
	struct fi_rma_ioc rioc = {
		.addr = raddr(t.mem + 1024), .count = 1, .key = t.key};
	struct fi_msg_atomic msg = {.msg_iov = &ioc,
				    .iov_count = 1,
				    .addr = 1,
				    .rma_iov = &rioc,
				    .rma_iov_count = 1,
				    .datatype = FI_UINT64,
				    .op = FI_SUM,
				    .context = ctx};

	return fi_atomicmsg(t.ep[0], &msg,
			    flags | FI_INJECT | FI_DELIVERY_COMPLETE);
}

static int case_atomic(void)
{
	uint64_t v = 100, *p = (uint64_t *)(void *)(t.mem + 1024);
	int rc = -1;

	memcpy(p, &v, sizeof(v));
	CHECK(!fenced(post_atomic, "atomic"), "atomic");
	memcpy(&v, p, sizeof(v));
	CHECK(v == 110, "sum %llu, not 110", (unsigned long long)v);
	rc = 0;
out:
	return rc;
}

static ssize_t post_send(uint64_t flags, void *ctx)
{
	uint64_t f = FI_TRANSMIT | flags;
	int ret;

	ret = fi_control(&t.ep[0]->fid, FI_SETOPSFLAG, &f);
	if (ret)
		return ret;
	return fi_send(t.ep[0], t.lbuf + 256, 8, NULL, 1, ctx);
}

static int case_opflags(void)
{
	double end;
	int rc = -1, want;

	memset(t.lbuf + 256, 's', 8);
	memset(t.mem + 512, 0, 16);
	CHECK(!fi_recv(t.ep[1], t.mem + 512, 8, NULL, 0, NULL), "recv");
	CHECK(!fi_recv(t.ep[1], t.mem + 520, 8, NULL, 0, NULL), "recv");
	want = b_done + 2;
	CHECK(!fenced(post_send, "send"), "send");
	end = now() + WAIT_SEC;
	while (b_done < want && now() < end)
		pump_b();
	CHECK(b_done == want, "receives: %d of 2", 2 - (want - b_done));
	CHECK(!memcmp(t.mem + 512, "ssssssssssssssss", 16), "sent data");
	rc = 0;
out:
	return rc;
}

int main(int argc, char **argv)
{
	bool has = false;
	int ret, rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROVIDER\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	/* B answers only when pump_b drives it: no thread of the
	 * provider's may serve it (fabric(7)). */
	setenv("FI_PROGRESS_TARGET", "0", 1);
	ret = setup(argv[1]);
	if (ret == -FI_ENODATA) {
		printf("FAIL: %s offers no FI_FENCE\n", argv[1]);
		goto out;
	}
	if (ret) {
		printf("FAIL: set-up: %d (%s)\n", ret, fi_strerror(-ret));
		goto out;
	}
	ret = fence_unasked(argv[1], &has);
	if (ret || has != !strcmp(argv[1], "sockets")) {
		printf("FAIL: unasked, FI_FENCE %s (%d)\n",
		       has ? "reported" : "left out", ret);
		goto out;
	}
	printf("caps: ok\n");
	if (case_write())
		goto out;
	printf("write: ok\n");
	if (case_atomic())
		goto out;
	printf("atomic: ok\n");
	if (case_opflags())
		goto out;
	printf("opflags: ok\n");
	rc = 0;
out:
	teardown();
	return rc;
}
