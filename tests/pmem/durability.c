/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * durability.c - what a commit promises survives the target's death.
 *
 * One binary, three roles:
 *   durability [-p PROV] [-n TRIALS] [-s SHIM] [-d DIR] [-k KINDS]
 *              [-S SEED] [-K] [-v]
 *       the driver and initiator (default role); PROV is the provider
 *       both ends use (default $PMEM_DURABILITY_PROV, else shm);
 *   durability target FILE SIZE KIND
 *       maps FILE (MAP_SHARED), registers it with FI_RMA_PMEM on PROV,
 *       publishes its address, key and endpoint name on stdout and drives
 *       progress until it is killed;
 *   durability verify FILE EXPECT SIZE
 *       a fresh process: reads FILE and compares every byte with the image
 *       EXPECT describes (zero except the listed ranges).
 *
 * Each trial starts a target with LD_PRELOAD=persist_shim.so (every
 * pmem_persist / pmem_msync of the target logged), writes random ranges
 * into its region in rounds of 1..4 and makes them durable, kills the
 * target with SIGKILL the moment the last completion is seen, then runs a
 * verifier process and checks the shim's log: every committed range must be
 * covered by one logged call of the kind fi_commit(3) prescribes, made by
 * the target.  Kinds rotate per trial (-k picks some):
 *   0 commit   fi_commit after the writes, region classified msync
 *   1 commit   same with PMEM_IS_PMEM_FORCE=1: pmem_persist expected
 *   2 cc       every write FI_COMMIT_COMPLETE, msync
 *   3 cc       same, pmem_persist
 *   4 manual   target in FI_COMMIT_MANUAL with a handler answering 0:
 *              the provider must persist nothing (empty log)
 *   5 cc       FI_COMMIT_COMPLETE in the initiator's tx_attr->op_flags,
 *              plain fi_write, msync
 *   6 cc       FI_ATOMIC_WRITE of uint64s with FI_COMMIT_COMPLETE, msync
 * SIGKILL alone does not lose a MAP_SHARED file's page cache, so the byte
 * check shows the data arrived and stayed; the log shows the provider made
 * the persistence call for it before the initiator's completion.
 *
 * Prints one line per trial and "K/N passed"; exit 0 iff all passed, 77
 * (skip) when PROV does not offer FI_RMA_PMEM.  TRIALS defaults to
 * $PMEM_DURABILITY_TRIALS, else 7 (each kind once); SHIM to $PMEM_SHIM; DIR to
 * $PMEM_DURABILITY_DIR, $TMPDIR, /tmp.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
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
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define RGN_SIZE   (1UL << 20)
#define SLOT	   (16UL << 10)
#define NSLOTS	   (RGN_SIZE / SLOT)
#define ROUNDS	   8
#define MAX_IOV	   4
#define MAX_WRITES (ROUNDS * MAX_IOV)
#define TGT_KEY	   0xD00AULL
#define WAIT_S	   10
#define PUB_MAGIC  0x70756231U
#define NKINDS	   7

enum kind {
	K_COMMIT,
	K_COMMIT_PMEM,
	K_CC,
	K_CC_PMEM,
	K_MANUAL,
	K_CC_OPFLAGS,
	K_CC_ATOMIC,
};
static const char *const kind_names[NKINDS] = {
	"commit/msync", "commit/persist",   "cc/msync",	      "cc/persist",
	"manual/none",	"cc-opflags/msync", "cc-atomic/msync"};

/* what the target publishes on its stdout */
struct pub {
	uint32_t magic;
	uint32_t name_len;
	uint64_t base; /* the mapping, as the shim logs addresses */
	uint64_t addr; /* as RMA names it (0 without FI_MR_VIRT_ADDR) */
	uint64_t key;
	char name[256];
};

struct range {
	uint64_t off, len, seed;
};

static int verbose;
/* the provider of both ends; the driver passes it on in the environment */
static const char *prov = "shm";

#define ERR(fmt, ...) fprintf(stderr, "durability: " fmt "\n", ##__VA_ARGS__)

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint8_t pattern(uint64_t i, uint64_t seed)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ULL ^ (seed * 0xff51afd7ULL);

	return (uint8_t)(x >> 31 ^ x);
}

/* ------------------------------------------------------------------ */
/* fabric set-up shared by both ends                                    */

struct fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *txcq, *rxcq;
	struct fid_av *av;
	struct fid_eq *eq;
	struct fid_ep *ep;
	struct fid_mr *mr;
};

static int get_info(int kind, struct fi_info **info)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_RMA | FI_PMEM | (kind == K_CC_ATOMIC ? FI_ATOMIC : 0);
	hints->mode = FI_CONTEXT | FI_CONTEXT2 |
		      (kind == K_MANUAL ? FI_COMMIT_MANUAL : 0);
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	return ret;
}

static ssize_t manual_handler(struct fid_eq *eq, uint64_t event_type,
			      void *event_data, uint64_t len, void *context)
{
	return 0; /* the application "took responsibility" */
}

/* @initiator: the driver's end, which never takes the manual mode */
static int fab_open(struct fab *f, int kind, bool initiator)
{
	bool manual = kind == K_MANUAL && !initiator;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_NONE};
	int ret;

	ret = get_info(kind == K_MANUAL && initiator ? K_COMMIT : kind,
		       &f->info);
	if (ret)
		return ret;
	/* the completion level for every write, fi_write included */
	if (initiator && kind == K_CC_OPFLAGS)
		f->info->tx_attr->op_flags |= FI_COMMIT_COMPLETE;
	ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
	if (!ret)
		ret = fi_domain(f->fabric, f->info, &f->domain, NULL);
	if (!ret)
		ret = fi_cq_open(f->domain, &cq_attr, &f->txcq, NULL);
	if (!ret)
		ret = fi_cq_open(f->domain, &cq_attr, &f->rxcq, NULL);
	if (!ret)
		ret = fi_av_open(f->domain, &av_attr, &f->av, NULL);
	if (!ret)
		ret = fi_endpoint(f->domain, f->info, &f->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(f->ep, &f->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(f->ep, &f->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(f->ep, &f->rxcq->fid, FI_RECV);
	if (!ret && manual) {
		ret = fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL);
		if (!ret)
			ret = fi_ep_bind(f->ep, &f->eq->fid, 0);
		if (!ret)
			ret = (int)fi_eq_register_handler(f->eq, FI_COMMIT,
							  manual_handler, NULL);
	}
	if (!ret)
		ret = fi_enable(f->ep);
	if (ret)
		ERR("fabric set-up: %s", fi_strerror(-ret));
	return ret;
}

static void fab_close(struct fab *f)
{
	struct fid **fids[] = {
		(struct fid **)&f->ep,	   (struct fid **)&f->mr,
		(struct fid **)&f->av,	   (struct fid **)&f->txcq,
		(struct fid **)&f->rxcq,   (struct fid **)&f->eq,
		(struct fid **)&f->domain, (struct fid **)&f->fabric};
	size_t i;

	/* a struct fid_xx starts with its struct fid */
	for (i = 0; i < sizeof(fids) / sizeof(fids[0]); i++) {
		if (*fids[i])
			fi_close(*fids[i]);
		*fids[i] = NULL;
	}
	if (f->info)
		fi_freeinfo(f->info);
	f->info = NULL;
}

/* ------------------------------------------------------------------ */
/* target role                                                          */

static int run_target(const char *file, size_t size, int kind)
{
	struct fi_cq_data_entry e;
	struct pub pub = {.magic = PUB_MAGIC};
	struct fab f = {0};
	size_t len = sizeof(pub.name);
	void *base;
	int fd, ret;

	alarm(60); /* the driver kills us long before */
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size)) {
		ERR("target: %s: %s", file, strerror(errno));
		return 1;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return 1;
	ret = fab_open(&f, kind, false);
	if (!ret)
		ret = fi_mr_reg(f.domain, base, size,
				FI_REMOTE_WRITE | FI_REMOTE_READ, 0, TGT_KEY,
				FI_RMA_PMEM, &f.mr, NULL);
	if (!ret)
		ret = fi_getname(&f.ep->fid, pub.name, &len);
	if (ret) {
		ERR("target: %s", fi_strerror(-ret));
		return 1;
	}
	pub.name_len = (uint32_t)len;
	pub.base = (uint64_t)(uintptr_t)base;
	pub.addr =
		f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? pub.base : 0;
	pub.key = fi_mr_key(f.mr);
	if (write(1, &pub, sizeof(pub)) != sizeof(pub))
		return 1;
	for (;;) {
		if (fi_cq_read(f.txcq, &e, 1) == -FI_EAVAIL ||
		    fi_cq_read(f.rxcq, &e, 1) == -FI_EAVAIL) {
			ERR("target: unexpected CQ error");
			return 1;
		}
		sched_yield();
	}
}

/* ------------------------------------------------------------------ */
/* verify role: a fresh process reads the file                         */

static int load_expect(const char *path, struct range *r, int max)
{
	FILE *fp = fopen(path, "r");
	int n = 0;

	if (!fp)
		return -1;
	while (n < max && fscanf(fp, "%" SCNu64 " %" SCNu64 " %" SCNu64,
				 &r[n].off, &r[n].len, &r[n].seed) == 3)
		n++;
	fclose(fp);
	return n;
}

static int run_verify(const char *file, const char *expect, size_t size)
{
	static struct range r[MAX_WRITES];
	uint8_t *img, *got;
	uint64_t i;
	struct stat st;
	int n, k, fd, ret = 1;

	n = load_expect(expect, r, MAX_WRITES);
	img = calloc(1, size);
	got = malloc(size);
	fd = open(file, O_RDONLY);
	if (n < 0 || !img || !got || fd < 0 || fstat(fd, &st)) {
		ERR("verify: cannot read %s / %s", file, expect);
		goto out;
	}
	if ((size_t)st.st_size != size ||
	    pread(fd, got, size, 0) != (ssize_t)size) {
		ERR("verify: %s has %lld bytes, expected %zu", file,
		    (long long)st.st_size, size);
		goto out;
	}
	for (k = 0; k < n; k++) {
		if (r[k].off > size || r[k].len > size - r[k].off)
			goto out;
		for (i = 0; i < r[k].len; i++)
			img[r[k].off + i] = pattern(i, r[k].seed);
	}
	for (i = 0; i < size && got[i] == img[i]; i++)
		;
	if (i < size)
		ERR("verify: byte %" PRIu64 " is 0x%02x, expected 0x%02x", i,
		    got[i], img[i]);
	else
		ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(img);
	free(got);
	return ret;
}

/* ------------------------------------------------------------------ */
/* driver                                                               */

struct trial {
	int no, kind;
	unsigned seed;
	char file[4096], log[4096], expect[4096];
	pid_t pid;
	struct pub pub;
	struct range w[MAX_WRITES]; /* every write, all committed */
	int nw;
	struct fi_rma_iov commits[MAX_WRITES]; /* every commit's ranges */
	int nc;
};

static const char *self_exe = "/proc/self/exe";

static const char *asan_opts(void)
{
	static char buf[1024];
	const char *old = getenv("ASAN_OPTIONS");

	snprintf(buf, sizeof(buf), "%s%sverify_asan_link_order=0",
		 old ? old : "", old && *old ? ":" : "");
	return buf;
}

static int spawn_target(struct trial *t, const char *shim)
{
	char size[32], kind[8];
	int fds[2];
	struct pollfd pfd;
	size_t got = 0;
	ssize_t n;

	if (pipe(fds))
		return -errno;
	t->pid = fork();
	if (t->pid < 0)
		return -errno;
	if (!t->pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		setenv("LD_PRELOAD", shim, 1);
		/* an ASan build wants its runtime first; the shim is */
		setenv("ASAN_OPTIONS", asan_opts(), 1);
		setenv("PMEM_SHIM_LOG", t->log, 1);
		if (t->kind == K_COMMIT_PMEM || t->kind == K_CC_PMEM)
			setenv("PMEM_IS_PMEM_FORCE", "1", 1);
		else
			unsetenv("PMEM_IS_PMEM_FORCE");
		snprintf(size, sizeof(size), "%lu", RGN_SIZE);
		snprintf(kind, sizeof(kind), "%d", t->kind);
		execl(self_exe, "durability", "target", t->file, size, kind,
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	while (got < sizeof(t->pub)) {
		if (poll(&pfd, 1, WAIT_S * 1000) <= 0)
			break;
		n = read(fds[0], (char *)&t->pub + got, sizeof(t->pub) - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (got != sizeof(t->pub) || t->pub.magic != PUB_MAGIC ||
	    !t->pub.name_len || t->pub.name_len > sizeof(t->pub.name)) {
		ERR("trial %d: the target published nothing usable", t->no);
		return -FI_EIO;
	}
	return 0;
}

/* waits for @n completions; the commit ones are checked */
static int wait_comps(struct fab *f, int n, void *commit_ctx)
{
	struct fi_cq_err_entry err = {0};
	struct fi_cq_data_entry e;
	uint64_t start = now_us();
	ssize_t rd;

	while (n > 0) {
		rd = fi_cq_read(f->txcq, &e, 1);
		if (rd == 1) {
			n--;
			if (e.op_context == commit_ctx &&
			    e.flags !=
				    (FI_RMA | FI_WRITE | FI_COMMIT_COMPLETE)) {
				ERR("commit completion flags 0x%" PRIx64,
				    e.flags);
				return -FI_EIO;
			}
			continue;
		}
		if (rd == -FI_EAVAIL) {
			fi_cq_readerr(f->txcq, &err, 0);
			ERR("completion error: %s%s", fi_strerror(err.err),
			    err.op_context == commit_ctx ? " (the commit)"
							 : "");
			return -FI_EIO;
		}
		if (rd != -FI_EAGAIN)
			return (int)rd;
		if (now_us() - start > WAIT_S * 1000000ULL) {
			ERR("no completion within %d s", WAIT_S);
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
	return 0;
}

static ssize_t post_retry(struct fab *f,
			  ssize_t (*post)(struct fab *f, void *arg), void *arg)
{
	uint64_t start = now_us();
	ssize_t ret;

	while ((ret = post(f, arg)) == -FI_EAGAIN &&
	       now_us() - start < WAIT_S * 1000000ULL)
		fi_cq_read(f->txcq, NULL, 0);
	return ret;
}

struct write_arg {
	struct trial *t;
	struct range *r;
	uint8_t *src;
	void *desc;
	uint64_t flags;
	void *ctx;
	int kind;
};

/* FI_ATOMIC_WRITE of uint64s, FI_COMMIT_COMPLETE */
static ssize_t do_atomic(struct fab *f, struct write_arg *a)
{
	struct fi_ioc ioc = {.addr = a->src + a->r->off,
			     .count = a->r->len / 8};
	struct fi_rma_ioc rioc = {.addr = a->t->pub.addr + a->r->off,
				  .count = a->r->len / 8,
				  .key = a->t->pub.key};
	struct fi_msg_atomic msg = {.msg_iov = &ioc,
				    .desc = &a->desc,
				    .iov_count = 1,
				    .addr = 0,
				    .rma_iov = &rioc,
				    .rma_iov_count = 1,
				    .datatype = FI_UINT64,
				    .op = FI_ATOMIC_WRITE,
				    .context = a->ctx};

	return fi_atomicmsg(f->ep, &msg, FI_COMMIT_COMPLETE | FI_COMPLETION);
}

static ssize_t do_write(struct fab *f, void *arg)
{
	struct write_arg *a = arg;
	struct iovec iov = {.iov_base = a->src + a->r->off,
			    .iov_len = a->r->len};
	struct fi_rma_iov rma = {.addr = a->t->pub.addr + a->r->off,
				 .len = a->r->len,
				 .key = a->t->pub.key};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .desc = &a->desc,
				 .iov_count = 1,
				 .addr = 0,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = a->ctx};

	if (a->kind == K_CC_ATOMIC)
		return do_atomic(f, a);
	/* the level comes from tx_attr->op_flags alone */
	if (a->kind == K_CC_OPFLAGS)
		return fi_write(f->ep, iov.iov_base, iov.iov_len, a->desc, 0,
				rma.addr, rma.key, a->ctx);
	return fi_writemsg(f->ep, &msg, a->flags | FI_COMPLETION);
}

struct commit_arg {
	struct fi_rma_iov *iov;
	size_t count;
	void *ctx;
};

static ssize_t do_commit(struct fab *f, void *arg)
{
	struct commit_arg *a = arg;

	return fi_commit(f->ep, a->iov, a->count, 0, 0, a->ctx);
}

/* the rounds of writes and commits; the target is killed after them */
static int drive(struct trial *t, struct fab *f, uint8_t *src, void *desc)
{
	static struct fi_context2 wctx, cctx;
	int perm[NSLOTS], round, i, j, w, ret, tmp;
	bool cc = t->kind == K_CC || t->kind == K_CC_PMEM ||
		  t->kind == K_CC_OPFLAGS || t->kind == K_CC_ATOMIC;
	struct write_arg wa = {.t = t,
			       .src = src,
			       .desc = desc,
			       .ctx = &wctx,
			       .kind = t->kind};
	struct commit_arg ca;
	struct range *r;
	uint64_t k;

	wa.flags = cc ? FI_COMMIT_COMPLETE : 0;
	for (i = 0; i < (int)NSLOTS; i++)
		perm[i] = i;
	for (i = NSLOTS - 1; i > 0; i--) {
		j = rand_r(&t->seed) % (i + 1);
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	for (round = 0; round < ROUNDS; round++) {
		w = 1 + rand_r(&t->seed) % MAX_IOV;
		for (i = 0; i < w; i++) {
			r = &t->w[t->nw];
			r->off = perm[t->nw] * SLOT + rand_r(&t->seed) % 1024;
			r->len = 1 + rand_r(&t->seed) % (SLOT - 1024);
			if (t->kind == K_CC_ATOMIC) {
				/* aligned uint64s, a count atomics take */
				r->off &= ~7UL;
				r->len = 8 * (1 + rand_r(&t->seed) % 64);
			}
			r->seed = (uint64_t)t->no << 20 | (uint64_t)t->nw;
			for (k = 0; k < r->len; k++)
				src[r->off + k] = pattern(k, r->seed);
			wa.r = r;
			ret = (int)post_retry(f, do_write, &wa);
			if (ret) {
				ERR("write/atomic: %s", fi_strerror(-ret));
				return ret;
			}
			t->commits[t->nc + i].addr = t->pub.addr + r->off;
			t->commits[t->nc + i].len = r->len;
			t->commits[t->nc + i].key = t->pub.key;
			t->nw++;
		}
		if (!cc) {
			/* posted before the writes completed: ordered */
			ca.iov = &t->commits[t->nc];
			ca.count = (size_t)w;
			ca.ctx = &cctx;
			ret = (int)post_retry(f, do_commit, &ca);
			if (ret) {
				ERR("fi_commit: %s", fi_strerror(-ret));
				return ret;
			}
		}
		t->nc += w;
		ret = wait_comps(f, w + !cc, &cctx);
		if (ret)
			return ret;
	}
	return 0;
}

/* one logged call covering [start, start+len) of the right kind? */
static int check_log(struct trial *t, char *why, size_t whylen)
{
	long page = sysconf(_SC_PAGESIZE);
	bool want_persist = t->kind == K_COMMIT_PMEM || t->kind == K_CC_PMEM;
	struct {
		bool persist;
		uint64_t addr, len;
	} calls[4096];
	char line[256], what[16];
	unsigned long long addr, len;
	int n = 0, i, c, rc, pid;
	uint64_t s, e;
	FILE *fp;

	fp = fopen(t->log, "r");
	while (fp && fgets(line, sizeof(line), fp) && n < 4096) {
		rc = 0;
		if (sscanf(line, "%15s %llx %llu", what, &addr, &len) != 3 ||
		    (strcmp(what, "persist") && strcmp(what, "msync"))) {
			snprintf(why, whylen, "bad log line '%s'", line);
			fclose(fp);
			return -1;
		}
		calls[n].persist = !strcmp(what, "persist");
		if (calls[n].persist)
			sscanf(line, "%*s %*s %*s %d", &pid);
		else
			sscanf(line, "%*s %*s %*s %d %d", &rc, &pid);
		if (pid != t->pid) {
			snprintf(why, whylen,
				 "a persist call from pid %d, "
				 "not the target %d",
				 pid, (int)t->pid);
			fclose(fp);
			return -1;
		}
		if (rc) {
			snprintf(why, whylen, "pmem_msync failed (%d)", rc);
			fclose(fp);
			return -1;
		}
		calls[n].addr = addr;
		calls[n].len = len;
		n++;
	}
	if (fp)
		fclose(fp);
	if (t->kind == K_MANUAL) {
		if (!n)
			return 0;
		snprintf(why, whylen,
			 "%d persist call(s) in FI_COMMIT_MANUAL "
			 "mode; the provider must persist nothing",
			 n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (calls[i].persist != want_persist) {
			snprintf(why, whylen, "%s called, %s expected (%s)",
				 calls[i].persist ? "pmem_persist"
						  : "pmem_msync",
				 want_persist ? "pmem_persist" : "pmem_msync",
				 want_persist ? "PMEM_IS_PMEM_FORCE=1"
					      : "a plain file mapping");
			return -1;
		}
		if (!calls[i].persist &&
		    ((calls[i].addr | calls[i].len) & (uint64_t)(page - 1))) {
			snprintf(why, whylen,
				 "pmem_msync(0x%" PRIx64 ", %" PRIu64
				 ") is not whole pages",
				 calls[i].addr, calls[i].len);
			return -1;
		}
	}
	for (c = 0; c < t->nc; c++) {
		s = t->pub.base + t->w[c].off;
		e = s + t->w[c].len;
		for (i = 0; i < n; i++)
			if (calls[i].addr <= s &&
			    calls[i].addr + calls[i].len >= e)
				break;
		if (i == n) {
			snprintf(why, whylen,
				 "no persist call covers committed "
				 "range %d [0x%" PRIx64 ", 0x%" PRIx64 ") "
				 "(%d calls logged)",
				 c, s, e, n);
			return -1;
		}
	}
	return 0;
}

static int run_child(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		unsetenv("LD_PRELOAD");
		execv(self_exe, argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int write_expect(struct trial *t)
{
	FILE *fp = fopen(t->expect, "w");
	int i;

	if (!fp)
		return -1;
	for (i = 0; i < t->nw; i++)
		fprintf(fp, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
			t->w[i].off, t->w[i].len, t->w[i].seed);
	return fclose(fp);
}

static int trial(struct trial *t, const char *shim, char *why, size_t whylen)
{
	struct fab f = {0};
	uint8_t *src = NULL;
	char size[32];
	char *vargv[] = {"durability", "verify", t->file,
			 t->expect,    size,	 NULL};
	bool reaped = false;
	fi_addr_t peer;
	int ret, status, rc;

	snprintf(size, sizeof(size), "%lu", RGN_SIZE);
	unlink(t->log);
	ret = spawn_target(t, shim);
	if (ret) {
		snprintf(why, whylen, "target did not start");
		goto out;
	}
	src = calloc(1, RGN_SIZE);
	ret = src ? fab_open(&f, t->kind, true) : -FI_ENOMEM;
	if (!ret)
		ret = fi_mr_reg(f.domain, src, RGN_SIZE, FI_WRITE | FI_READ, 0,
				1, 0, &f.mr, NULL);
	if (!ret && fi_av_insert(f.av, t->pub.name, 1, &peer, 0, NULL) != 1)
		ret = -FI_EINVAL;
	if (!ret && peer != 0)
		ret = -FI_EINVAL; /* do_write/do_commit address fi_addr 0 */
	if (ret) {
		snprintf(why, whylen, "initiator set-up: %s",
			 fi_strerror(-ret));
		goto out;
	}
	ret = drive(t, &f, src, fi_mr_desc(f.mr));
	/* the moment the last completion is seen */
	kill(t->pid, SIGKILL);
	reaped = waitpid(t->pid, &status, 0) == t->pid;
	if (reaped && !ret &&
	    !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
		snprintf(why, whylen,
			 "the target ended before the kill "
			 "(status 0x%x)",
			 status);
		ret = -FI_EIO;
	}
	if (ret) {
		if (!*why)
			snprintf(why, whylen, "writes/commits failed: %s",
				 fi_strerror(-ret));
		goto out;
	}
	if (write_expect(t)) {
		snprintf(why, whylen, "cannot write the expected image");
		ret = -1;
		goto out;
	}
	rc = run_child(vargv);
	if (rc) {
		snprintf(why, whylen,
			 rc == 1 ? "committed bytes wrong after the kill "
				   "(verifier output above)"
				 : "the verifier failed (status %d)",
			 rc);
		ret = -1;
		goto out;
	}
	ret = check_log(t, why, whylen);
out:
	if (t->pid > 0 && !reaped) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
	fab_close(&f);
	free(src);
	return ret;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: durability [-p PROV] [-n TRIALS] [-s SHIM] [-d DIR] "
		"[-k KINDS] [-S SEED] [-K] [-v]\n"
		"  KINDS: comma list of 0..4 (default all, rotating)\n"
		"  -K keep the files of failed trials\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *shim = getenv("PMEM_SHIM"), *dir;
	int kinds[NKINDS], nkinds = 0, ntrials, passed = 0, i, op;
	char why[512], *tok, *save = NULL;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	struct fi_info *info;
	bool keep = false;
	struct trial *t;

	if (getenv("PMEM_DURABILITY_PROV"))
		prov = getenv("PMEM_DURABILITY_PROV");
	if (argc == 5 && !strcmp(argv[1], "target"))
		return run_target(argv[2], strtoul(argv[3], NULL, 0),
				  atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "verify"))
		return run_verify(argv[2], argv[3], strtoul(argv[4], NULL, 0));
	/* a role's child must never become a driver and fork again */
	if (getenv("PMEM_DURABILITY_CHILD") ||
	    (argc > 1 &&
	     (!strcmp(argv[1], "target") || !strcmp(argv[1], "verify")))) {
		ERR("a target or verifier started as a driver: refused");
		return 99;
	}
	setenv("PMEM_DURABILITY_CHILD", "1", 1); /* its children inherit it */

	ntrials = getenv("PMEM_DURABILITY_TRIALS")
			  ? atoi(getenv("PMEM_DURABILITY_TRIALS"))
			  : NKINDS;
	dir = getenv("PMEM_DURABILITY_DIR");
	if (!dir)
		dir = getenv("TMPDIR");
	if (!dir)
		dir = "/tmp";
	while ((op = getopt(argc, argv, "p:n:s:d:k:S:Kv")) != -1) {
		switch (op) {
		case 'p':
			prov = optarg;
			break;
		case 'n':
			ntrials = atoi(optarg);
			break;
		case 's':
			shim = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			for (tok = strtok_r(optarg, ",", &save);
			     tok && nkinds < NKINDS;
			     tok = strtok_r(NULL, ",", &save)) {
				kinds[nkinds] = atoi(tok);
				if (kinds[nkinds] < 0 ||
				    kinds[nkinds] >= NKINDS)
					return usage();
				nkinds++;
			}
			break;
		case 'S':
			seed = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'K':
			keep = true;
			break;
		case 'v':
			verbose++;
			break;
		default:
			return usage();
		}
	}
	if (ntrials <= 0 || !shim)
		return usage();
	if (access(shim, R_OK)) {
		ERR("shim %s: %s", shim, strerror(errno));
		return 99;
	}
	if (!nkinds)
		for (nkinds = 0; nkinds < NKINDS; nkinds++)
			kinds[nkinds] = nkinds;
	setenv("PMEM_DURABILITY_PROV", prov, 1); /* for the targets */
	if (get_info(K_COMMIT, &info)) {
		printf("SKIP: %s does not offer FI_RMA|FI_RMA_PMEM (library "
		       "built without libpmem?)\n",
		       prov);
		return 77;
	}
	fi_freeinfo(info);
	printf("# %s: %d trial(s), seed %u, files in %s\n", prov, ntrials, seed,
	       dir);
	t = calloc(1, sizeof(*t));
	if (!t)
		return 99;
	for (i = 0; i < ntrials; i++) {
		memset(t, 0, sizeof(*t));
		t->no = i;
		t->kind = kinds[i % nkinds];
		t->seed = seed + (unsigned)i;
		snprintf(t->file, sizeof(t->file), "%s/durability.%d.%d.data",
			 dir, (int)getpid(), i);
		snprintf(t->log, sizeof(t->log), "%s/durability.%d.%d.log", dir,
			 (int)getpid(), i);
		snprintf(t->expect, sizeof(t->expect),
			 "%s/durability.%d.%d.expect", dir, (int)getpid(), i);
		why[0] = 0;
		if (!trial(t, shim, why, sizeof(why))) {
			passed++;
			if (verbose)
				printf("PASS trial %d %s: %d ranges in %d "
				       "writes\n",
				       i, kind_names[t->kind], t->nc, t->nw);
		} else {
			printf("FAIL trial %d %s (seed %u): %s\n", i,
			       kind_names[t->kind], seed + (unsigned)i, why);
			if (keep) {
				printf("  kept %s, %s, %s\n", t->file, t->log,
				       t->expect);
				continue;
			}
		}
		unlink(t->file);
		unlink(t->log);
		unlink(t->expect);
	}
	free(t);
	printf("%d/%d passed\n", passed, ntrials);
	return passed == ntrials ? 0 : 1;
}
