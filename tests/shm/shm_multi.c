/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_multi.c - multi-process checks of the shm provider through the public
 * API only: N processes exchanging tagged messages of every protocol size at
 * once, peers SIGKILLed mid-transfer on either side (the survivor gets
 * errors and never hangs), reclaim of a dead peer's region by a fresh
 * process, region file permissions, a sender that exits right after its
 * send completed, one that closes and sends again from a new endpoint
 * before the receiver looked (each message keeps its source address), and
 * endpoints that send and close in a loop while the receiver works.
 *
 * The parent never calls into libfabric: every child loads the library
 * itself, so a child started after a kill is a fresh process whose provider
 * load reclaims stale regions. Children publish their addresses in a
 * MAP_SHARED area created before fork. Every child runs under alarm() and
 * the parent kills whatever outlives its deadline.
 *
 * Usage: shm_multi [alltoall|dead_rx|dead_race|dead_tx|dead_zombie|
 * exit_send|exit_reuse|churn]...
 * (default: all). SHM_MULTI_NPROCS (default 6) and SHM_MULTI_ROUNDS
 * (default 2) size the all-to-all. Exit 0 when every check passed.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sched.h>
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

#define MAXP	  16
#define NAME_LEN  64
#define NSIZES	  5
#define CHILD_TMO 60 /* alarm() in every child, seconds */
#define ERR_TMO	  10 /* a dead peer must be noticed within this */
#define BIG	  (64UL << 20)

/* Order of the sizes a sender uses, so protocols interleave. */
static const size_t sizes[NSIZES] = {
	8UL << 20,  /* above the CMA threshold */
	8,	    /* inline */
	1UL << 20,  /* streamed */
	1024,	    /* inject */
	64UL << 10, /* streamed, one segment */
};

enum {
	F_POSTED,  /* A posted its receive / sent its sends */
	F_SENDING, /* B's transfer is under way */
	F_A_DONE,  /* A finished its checks, waits for F_FINISH */
	F_FINISH,  /* parent: A may close and exit */
	F_GO,	   /* parent: go on */
	F_NFLAGS,
};

struct shared {
	char names[MAXP][NAME_LEN];
	_Atomic pid_t pids[MAXP];
	_Atomic int ready[MAXP];
	_Atomic int flag[F_NFLAGS];
	_Atomic int done;
};

struct node {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
	char name[NAME_LEN];
	fi_addr_t addr[MAXP];
};

static struct shared *sh;
static int nprocs = 6;
static int rounds = 2;
static int rank = -1; /* -1 in the parent */
static const char *cur_test = "";
static int fails;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL %s[%d]: ", cur_test, rank);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	fails++;
}

/* A child that cannot go on: exit non-zero, no cleanup. */
#define DIE(...)                                                               \
	do {                                                                   \
		fail(__VA_ARGS__);                                             \
		_exit(1);                                                      \
	} while (0)

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			fail(__VA_ARGS__);                                     \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Region files, named the way the provider names them.                 */

/* "fi_shm://X" lives in /dev/shm/ofi_shm_X, with '/' turned into '_'. */
static void region_path(const char *name, char *path, size_t len)
{
	const char *p = name;
	char *q;

	if (!strncmp(p, "fi_shm://", 9))
		p += 9;
	snprintf(path, len, "/dev/shm/ofi_shm_%s", p);
	for (q = path + strlen("/dev/shm/"); *q; q++) {
		if (*q == '/')
			*q = '_';
	}
}

/*
 * SHM_TEST_PROV=tcp runs the same processes over tcp (tests/tcp): region
 * files are shm's, so their checks hold vacuously there.
 */
static const char *prov = "shm";
static bool is_shm = true;

/* The error a transfer to a peer that died gets: shm's FI_EIO, or what
 * a stream socket reports. */
static bool peer_gone_err(int err)
{
	if (err == FI_EIO)
		return true;
	return !is_shm && (err == FI_ECONNRESET || err == FI_ECONNREFUSED ||
			   err == FI_ECONNABORTED || err == FI_ENOTCONN);
}

static bool region_exists(const char *name)
{
	char path[NAME_LEN + 32];
	struct stat st;

	if (!is_shm)
		return false;
	region_path(name, path, sizeof(path));
	return !stat(path, &st);
}

static void check_region_mode(const char *name)
{
	char path[NAME_LEN + 32];
	struct stat st;

	if (!is_shm)
		return;
	region_path(name, path, sizeof(path));
	if (stat(path, &st)) {
		fail("region %s of a live endpoint: %s", path, strerror(errno));
		return;
	}
	CHECK((st.st_mode & 07777) == 0600, "region %s mode %o, want 600", path,
	      (unsigned)(st.st_mode & 07777));
	CHECK(st.st_uid == geteuid(), "region %s owner %u", path,
	      (unsigned)st.st_uid);
}

/*
 * Files a closed endpoint of process @pid left for its receivers (the
 * provider's "ofi_shml_<pid>_..." linger names); how many.
 */
static int linger_left(pid_t pid)
{
	char pfx[32];
	struct dirent *de;
	DIR *dir = opendir("/dev/shm");
	int n = 0;

	if (!dir || !is_shm) {
		if (dir)
			closedir(dir);
		return 0;
	}
	snprintf(pfx, sizeof(pfx), "ofi_shml_%d_", (int)pid);
	while ((de = readdir(dir)))
		n += !strncmp(de->d_name, pfx, strlen(pfx));
	closedir(dir);
	return n;
}

/*
 * Polls @n's CQ until no lingering region of @pid is left, or ERR_TMO
 * seconds: bounded by time, as an idle fi_cq_read may sleep up to a
 * millisecond (FI_PROGRESS_SPIN in fabric(7)).
 */
static void progress_until_unlinked(struct node *n, pid_t pid)
{
	double end = now() + ERR_TMO;
	int i;

	for (i = 0; now() < end; i++) {
		fi_cq_read(n->cq, NULL, 0);
		if (i % 64 == 0 && !linger_left(pid))
			return;
	}
}

/* ------------------------------------------------------------------ */
/* Data patterns derived from (sender, receiver, seq).                  */

static uint64_t pat_seed(int from, int to, int seq)
{
	uint64_t x = (uint64_t)from << 40 ^ (uint64_t)to << 20 ^ (uint64_t)seq;

	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t pat_word(uint64_t seed, size_t i)
{
	return (seed ^ i) * 0x9e3779b97f4a7c15ULL + i;
}

static void pat_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t *w = buf, last;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = pat_word(seed, i);
	last = pat_word(seed, i);
	memcpy((char *)buf + i * 8, &last, len % 8);
}

/* Offset of the first wrong byte, or -1. */
static long pat_check(const void *buf, size_t len, uint64_t seed)
{
	const uint64_t *w = buf;
	uint64_t last;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		if (w[i] != pat_word(seed, i))
			return (long)i * 8;
	}
	last = pat_word(seed, i);
	if (memcmp((const char *)buf + i * 8, &last, len % 8))
		return (long)i * 8;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Per-child fabric objects.                                            */

static int node_open(struct node *n)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	size_t len = sizeof(n->name);
	int ret;

	memset(n, 0, sizeof(*n));
	if (!hints)
		return -FI_ENOMEM;
	hints->caps = FI_MSG | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &n->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	return fi_fabric(n->info->fabric_attr, &n->fab, NULL) ?:
	       fi_domain(n->fab, n->info, &n->dom, NULL) ?:
	       fi_av_open(n->dom, &aa, &n->av, NULL) ?:
	       fi_endpoint(n->dom, n->info, &n->ep, NULL) ?:
	       fi_cq_open(n->dom, &ca, &n->cq, NULL) ?:
	       fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ?:
	       fi_ep_bind(n->ep, &n->av->fid, 0) ?: fi_enable(n->ep) ?:
	       fi_getname(&n->ep->fid, n->name, &len);
}

static void node_close(struct node *n)
{
	if (n->ep)
		CHECK(!fi_close(&n->ep->fid), "close ep");
	if (n->cq)
		CHECK(!fi_close(&n->cq->fid), "close cq");
	if (n->av)
		CHECK(!fi_close(&n->av->fid), "close av");
	if (n->dom)
		CHECK(!fi_close(&n->dom->fid), "close domain");
	if (n->fab)
		CHECK(!fi_close(&n->fab->fid), "close fabric");
	fi_freeinfo(n->info);
	memset(n, 0, sizeof(*n));
}

static void wait_flag(int f)
{
	while (!atomic_load(&sh->flag[f]))
		usleep(1000);
}

/* Opens, publishes our name, waits for @cnt peers and inserts them all. */
static void node_join(struct node *n, int cnt)
{
	int i, ret = node_open(n);

	if (ret)
		DIE("open: %s", fi_strerror(-ret));
	memcpy(sh->names[rank], n->name, NAME_LEN);
	atomic_store(&sh->ready[rank], 1);
	for (i = 0; i < cnt; i++) {
		while (!atomic_load(&sh->ready[i]))
			usleep(1000);
	}
	for (i = 0; i < cnt; i++) {
		if (fi_av_insert(n->av, sh->names[i], 1, &n->addr[i], 0,
				 NULL) != 1)
			DIE("av insert %s", sh->names[i]);
	}
}

/* One completion or error of @n's CQ; -FI_EAGAIN when there is none. */
static ssize_t read_one(struct node *n, struct fi_cq_tagged_entry *e,
			fi_addr_t *src, struct fi_cq_err_entry *err)
{
	ssize_t ret = fi_cq_readfrom(n->cq, e, 1, src);

	if (ret == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		ret = fi_cq_readerr(n->cq, err, 0);
		return ret == 1 ? -FI_EAVAIL : ret;
	}
	return ret;
}

/* Waits for the next completion within @tmo seconds; -FI_ETIMEDOUT else. */
static ssize_t wait_one(struct node *n, struct fi_cq_tagged_entry *e,
			struct fi_cq_err_entry *err, double tmo)
{
	double end = now() + tmo;
	fi_addr_t src;
	ssize_t ret;

	do {
		ret = read_one(n, e, &src, err);
		if (ret != -FI_EAGAIN)
			return ret;
		sched_yield();
	} while (now() < end);
	return -FI_ETIMEDOUT;
}

static ssize_t tsend_retry(struct node *n, const void *buf, size_t len,
			   fi_addr_t to, uint64_t tag, void *ctx, double tmo)
{
	double end = now() + tmo;
	ssize_t ret;

	do {
		ret = fi_tsend(n->ep, buf, len, NULL, to, tag, ctx);
		if (ret != -FI_EAGAIN)
			return ret;
		fi_cq_read(n->cq, NULL, 0);
		sched_yield();
	} while (now() < end);
	return -FI_ETIMEDOUT;
}

/* Both sides send and receive one small message: peers mapped both ways. */
static void hello(struct node *n, int peer)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t out = rank, in = ~0ULL;
	int i;

	if (fi_trecv(n->ep, &in, sizeof(in), NULL, n->addr[peer], 99, 0, &in))
		DIE("hello trecv");
	if (tsend_retry(n, &out, sizeof(out), n->addr[peer], 99, &out, 5))
		DIE("hello tsend");
	for (i = 0; i < 2; i++) {
		if (wait_one(n, &e, &err, 5) != 1)
			DIE("hello completion (err %d)", err.err);
	}
	if (in != (uint64_t)peer)
		DIE("hello got %llu", (unsigned long long)in);
}

/* ------------------------------------------------------------------ */
/* Parent side.                                                         */

static void reset_shared(void)
{
	memset(sh, 0, sizeof(*sh));
}

static pid_t spawn(void (*fn)(int), int r)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (!pid) {
		rank = r;
		fails = 0;
		alarm(CHILD_TMO);
		fn(r);
		_exit(fails ? 1 : 0);
	}
	return pid;
}

/* Reaps @pid; a child still alive after @tmo seconds is killed. */
static int reap(pid_t pid, double tmo, const char *what)
{
	double end = now() + tmo;
	int st;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail("%s hung: killed after %.0f s", what, tmo);
			return -1;
		}
		usleep(2000);
	}
	if (WIFSIGNALED(st)) {
		fail("%s died of signal %d%s", what, WTERMSIG(st),
		     WTERMSIG(st) == SIGALRM ? " (alarm: hang)" : "");
		return -1;
	}
	if (WEXITSTATUS(st)) {
		fail("%s exited %d", what, WEXITSTATUS(st));
		return -1;
	}
	return 0;
}

/* Waits for flag @f set by a child, false after @tmo seconds. */
static bool parent_wait_flag(int f, double tmo)
{
	double end = now() + tmo;

	while (!atomic_load(&sh->flag[f])) {
		if (now() > end)
			return false;
		usleep(1000);
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* 1. All-to-all.                                                       */

struct a2a_op {
	bool recv;
	int peer;
	int sidx;
	int seq;
};

struct a2a {
	struct node n;
	char *sbuf[MAXP][NSIZES];
	char *rbuf[MAXP][NSIZES];
	struct a2a_op sop[MAXP][NSIZES];
	struct a2a_op rop[MAXP][NSIZES];
	int pending;
	int got;
};

static void a2a_complete(struct a2a *a, struct a2a_op *op,
			 const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	size_t len = sizes[op->sidx];
	long bad;

	a->pending--;
	if (!op->recv)
		return;
	a->got++;
	if (e->len != len || e->tag != (uint64_t)op->peer ||
	    src != a->n.addr[op->peer]) {
		fail("recv from %d size %zu: len %zu tag %llu src %llu",
		     op->peer, len, e->len, (unsigned long long)e->tag,
		     (unsigned long long)src);
		return;
	}
	bad = pat_check(a->rbuf[op->peer][op->sidx], len,
			pat_seed(op->peer, rank, op->seq));
	if (bad >= 0)
		fail("data from %d size %zu seq %d wrong at offset %ld",
		     op->peer, len, op->seq, bad);
}

/* Reaps what the CQ holds; every completion is accounted for. */
static void a2a_poll(struct a2a *a)
{
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err;
	fi_addr_t src[16];
	struct a2a_op *op;
	ssize_t ret, i;

	ret = fi_cq_readfrom(a->n.cq, e, 16, src);
	if (ret == -FI_EAGAIN) {
		sched_yield();
		return;
	}
	if (ret == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(a->n.cq, &err, 0) != 1)
			DIE("readerr");
		op = err.op_context;
		fail("%s %d size %zu: error %d (%s)",
		     op->recv ? "recv from" : "send to", op->peer,
		     sizes[op->sidx], err.err, fi_strerror(err.err));
		a->pending--;
		return;
	}
	if (ret < 0)
		DIE("cq read: %s", fi_strerror((int)-ret));
	for (i = 0; i < ret; i++)
		a2a_complete(a, e[i].op_context, &e[i], src[i]);
}

static void a2a_round(struct a2a *a, int round)
{
	struct a2a_op *op;
	fi_addr_t from;
	int i, j, s, peer;
	ssize_t ret;

	/* Receives in the order each sender sends: size by size. */
	for (s = 0; s < NSIZES; s++) {
		for (i = 1; i < nprocs; i++) {
			peer = (rank + i) % nprocs;
			op = &a->rop[peer][s];
			*op = (struct a2a_op){true, peer, s,
					      round * NSIZES + s};
			/* Some receives take any source: the tag decides. */
			from = (peer + s + round) % 3 ? a->n.addr[peer]
						      : FI_ADDR_UNSPEC;
			memset(a->rbuf[peer][s], 0, sizes[s]);
			while ((ret = fi_trecv(a->n.ep, a->rbuf[peer][s],
					       sizes[s], NULL, from, peer, 0,
					       op)) == -FI_EAGAIN)
				a2a_poll(a);
			if (ret)
				DIE("trecv: %s", fi_strerror((int)-ret));
			a->pending++;
		}
	}
	for (s = 0; s < NSIZES; s++) {
		for (j = 1; j < nprocs; j++) {
			peer = (rank + j) % nprocs;
			op = &a->sop[peer][s];
			*op = (struct a2a_op){false, peer, s,
					      round * NSIZES + s};
			pat_fill(a->sbuf[peer][s], sizes[s],
				 pat_seed(rank, peer, op->seq));
			while ((ret = fi_tsend(a->n.ep, a->sbuf[peer][s],
					       sizes[s], NULL, a->n.addr[peer],
					       rank, op)) == -FI_EAGAIN)
				a2a_poll(a);
			if (ret)
				DIE("tsend to %d: %s", peer,
				    fi_strerror((int)-ret));
			a->pending++;
		}
	}
	while (a->pending > 0)
		a2a_poll(a);
}

static void a2a_child(int r)
{
	struct a2a *a = calloc(1, sizeof(*a));
	int i, s, round;

	(void)r;
	if (!a)
		DIE("calloc");
	node_join(&a->n, nprocs);
	for (i = 0; i < nprocs; i++)
		check_region_mode(sh->names[i]);
	for (i = 0; i < nprocs; i++) {
		for (s = 0; s < NSIZES && i != rank; s++) {
			a->sbuf[i][s] = malloc(sizes[s]);
			a->rbuf[i][s] = malloc(sizes[s]);
			if (!a->sbuf[i][s] || !a->rbuf[i][s])
				DIE("malloc");
		}
	}
	for (round = 0; round < rounds; round++)
		a2a_round(a, round);
	CHECK(a->got == rounds * NSIZES * (nprocs - 1), "got %d messages",
	      a->got);
	/* Nobody closes while a peer may still need it. */
	atomic_fetch_add(&sh->done, 1);
	while (atomic_load(&sh->done) < nprocs)
		a2a_poll(a);
	node_close(&a->n);
	if (region_exists(sh->names[rank]))
		fail("own region %s left after close", sh->names[rank]);
}

static void t_alltoall(void)
{
	pid_t pids[MAXP];
	char what[32];
	double t0 = now();
	int i;

	reset_shared();
	for (i = 0; i < nprocs; i++)
		pids[i] = spawn(a2a_child, i);
	for (i = 0; i < nprocs; i++) {
		snprintf(what, sizeof(what), "rank %d", i);
		reap(pids[i], CHILD_TMO + 5, what);
	}
	for (i = 0; i < nprocs; i++) {
		if (sh->names[i][0] && region_exists(sh->names[i]))
			fail("region of %s left after a normal close",
			     sh->names[i]);
	}
	printf("  %d processes x %d rounds x %d sizes: %.2f s\n", nprocs,
	       rounds, NSIZES, now() - t0);
}

/* ------------------------------------------------------------------ */
/* 2. Peer killed mid-transfer: the receiver survives.                  */

static bool race_mode; /* B keeps progressing and dies at a random time */
static bool race_cma;  /* ... sending by Cross Memory Attach */

/* Sends that must fail now that @peer is dead; never hang. */
static void send_to_dead(struct node *n, int peer)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	static char small[8], *big;
	double end = now() + ERR_TMO;
	int ok = 0, posted = 0;
	ssize_t ret;

	/* Small sends may be buffered in the peer's ring, but not forever. */
	while (now() < end) {
		ret = fi_tsend(n->ep, small, sizeof(small), NULL, n->addr[peer],
			       2, small);
		if (ret == -FI_EAGAIN) {
			fi_cq_read(n->cq, NULL, 0);
			continue;
		}
		if (ret)
			break;
		posted++;
		ret = wait_one(n, &e, &err, ERR_TMO);
		if (ret == 1) {
			ok++;
			continue;
		}
		if (ret != -FI_EAVAIL)
			fail("small send to dead peer: %s",
			     fi_strerror((int)-ret));
		break;
	}
	CHECK(now() < end, "small sends to a dead peer never failed (%d ok)",
	      ok);
	if (ok)
		printf("  note: %d small sends to the dead peer completed "
		       "without error before one failed\n",
		       ok);
	big = malloc(1 << 20);
	ret = tsend_retry(n, big, 1 << 20, n->addr[peer], 3, big, ERR_TMO);
	if (!ret) {
		ret = wait_one(n, &e, &err, ERR_TMO);
		CHECK(ret == -FI_EAVAIL && err.op_context == big,
		      "1 MiB send to dead peer: ret %zd, want an error "
		      "completion",
		      ret);
	} else {
		CHECK(ret != -FI_ETIMEDOUT,
		      "1 MiB send to dead peer: -FI_EAGAIN for %d s", ERR_TMO);
	}
	(void)posted;
	free(big);
}

static void dead_rx_a(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char *buf = malloc(BIG);
	double t0;
	ssize_t ret;
	struct node n;
	long bad;

	node_join(&n, 2);
	check_region_mode(n.name);
	hello(&n, 1);
	if (!buf || fi_trecv(n.ep, buf, BIG, NULL, n.addr[1], 1, 0, buf))
		DIE("post 64 MiB receive");
	atomic_store(&sh->flag[F_POSTED], 1);
	wait_flag(F_SENDING);
	t0 = now();
	ret = wait_one(&n, &e, &err, ERR_TMO);
	if (ret == -FI_ETIMEDOUT) {
		fail("no completion %d s after the sender was killed", ERR_TMO);
	} else if (ret == -FI_EAVAIL) {
		CHECK(err.op_context == buf, "error for context %p",
		      err.op_context);
		CHECK(peer_gone_err(err.err), "error %d (%s), want FI_EIO%s",
		      err.err, fi_strerror(err.err),
		      is_shm ? "" : " or a connection error");
		printf("  receiver got error %d (%s) %.2f s after the "
		       "transfer started\n",
		       err.err, fi_strerror(err.err), now() - t0);
	} else if (ret == 1 && race_mode) {
		bad = pat_check(buf, BIG, pat_seed(1, 0, 0));
		CHECK(e.len == BIG && bad < 0,
		      "completed 64 MiB receive: len %zu, bad at %ld", e.len,
		      bad);
		printf("  transfer finished before the kill\n");
	} else {
		fail("64 MiB receive from a killed sender completed: ret %zd",
		     ret);
	}
	wait_flag(F_GO); /* parent reaped B */
	send_to_dead(&n, 1);
	atomic_store(&sh->flag[F_A_DONE], 1);
	wait_flag(F_FINISH);
	node_close(&n);
	free(buf);
}

static void dead_rx_b(void)
{
	char *buf = malloc(BIG);
	struct node n;
	ssize_t ret;

	/* Streamed through the channel, which stalls when we stop. */
	if (!race_cma)
		setenv("FI_SHM_DISABLE_CMA", "1", 1);
	node_join(&n, 2);
	hello(&n, 0);
	if (!buf)
		DIE("malloc");
	pat_fill(buf, BIG, pat_seed(1, 0, 0));
	wait_flag(F_POSTED);
	ret = tsend_retry(&n, buf, BIG, n.addr[0], 1, buf, 5);
	if (ret)
		DIE("64 MiB send: %s", fi_strerror((int)-ret));
	atomic_store(&sh->flag[F_SENDING], 1);
	if (!race_mode)
		pause(); /* mid-transfer until killed */
	for (;;)
		fi_cq_read(n.cq, NULL, 0);
}

static void dead_rx_child(int r)
{
	if (r == 0)
		dead_rx_a();
	else
		dead_rx_b();
}

/* A fresh process: its provider load reclaims the dead peer's region. */
static void reclaim_child(int r)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t v = 1;
	struct node n;
	int ret = node_open(&n);
	fi_addr_t dead;

	(void)r;
	if (ret)
		DIE("open: %s", fi_strerror(-ret));
	CHECK(!region_exists(sh->names[1]),
	      "dead peer's region %s still there after a fresh process "
	      "opened an endpoint",
	      sh->names[1]);
	CHECK(region_exists(sh->names[0]), "live peer's region %s was removed",
	      sh->names[0]);
	CHECK(region_exists(n.name), "own region missing");
	/* A name whose region is gone: an error, not -FI_EAGAIN forever. */
	if (fi_av_insert(n.av, sh->names[1], 1, &dead, 0, NULL) != 1)
		DIE("insert dead name");
	ret = (int)tsend_retry(&n, &v, sizeof(v), dead, 1, &v, 3);
	if (!ret)
		ret = (int)wait_one(&n, &e, &err, ERR_TMO);
	CHECK(ret == -FI_EAVAIL || (ret < 0 && ret != -FI_ETIMEDOUT),
	      "send to a reclaimed address: %s",
	      ret == -FI_ETIMEDOUT ? "-FI_EAGAIN for 3 s"
				   : "completed without error");
	node_close(&n);
}

static void t_dead_rx(void)
{
	pid_t a, b, c;

	reset_shared();
	a = spawn(dead_rx_child, 0);
	b = spawn(dead_rx_child, 1);
	if (!parent_wait_flag(F_SENDING, 20)) {
		fail("sender never started");
		kill(b, SIGKILL);
	}
	if (!race_mode)
		usleep(50000);
	else
		usleep((unsigned)(rand() % (race_cma ? 1000 : 20000)));
	kill(b, SIGKILL);
	waitpid(b, NULL, 0);
	if (is_shm && !race_mode && !region_exists(sh->names[1]))
		printf("  note: killed sender's region already gone\n");
	atomic_store(&sh->flag[F_GO], 1);
	if (!parent_wait_flag(F_A_DONE, 3 * ERR_TMO + 10))
		fail("survivor did not finish its checks");
	if (is_shm && !race_mode) {
		cur_test = "reclaim";
		c = spawn(reclaim_child, 2);
		reap(c, 20, "fresh process");
		CHECK(!region_exists(sh->names[1]),
		      "killed peer's region still there");
		cur_test = "dead_rx";
	}
	atomic_store(&sh->flag[F_FINISH], 1);
	reap(a, 10, "survivor");
	CHECK(!region_exists(sh->names[0]),
	      "survivor's region left after a normal close");
}

/* ------------------------------------------------------------------ */
/* 2b. The receiver is killed while the sender waits on it.             */

static void dead_tx_a(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	size_t len[2] = {8UL << 20, 2UL << 20}; /* CMA ack, streamed */
	char *buf[2];
	int i, got[2] = {0, 0};
	struct node n;
	ssize_t ret;
	double t0;

	/*
	 * A TCP send completes once the kernel took it: loopback socket
	 * buffers hold several MiB, so over tcp both sends are larger than
	 * they can absorb from a receiver that reads nothing.
	 */
	if (!is_shm) {
		len[0] = 48UL << 20;
		len[1] = 32UL << 20;
	}
	node_join(&n, 2);
	hello(&n, 1);
	for (i = 0; i < 2; i++) {
		buf[i] = calloc(1, len[i]);
		if (!buf[i] ||
		    tsend_retry(&n, buf[i], len[i], n.addr[1], 1, buf[i], 5))
			DIE("send %zu", len[i]);
	}
	/* The receiver posts nothing: neither send can finish. */
	for (i = 0; i < 100; i++) {
		ret = read_one(&n, &e, &(fi_addr_t){0}, &err);
		CHECK(ret == -FI_EAGAIN,
		      "send completed (%zd) while the "
		      "receiver was alive and not receiving",
		      ret);
		if (ret != -FI_EAGAIN)
			break;
	}
	atomic_store(&sh->flag[F_SENDING], 1);
	wait_flag(F_GO);
	t0 = now();
	for (i = 0; i < 2; i++) {
		ret = wait_one(&n, &e, &err, ERR_TMO);
		if (ret != -FI_EAVAIL) {
			fail("send to killed receiver: %s",
			     ret == 1 ? "completed without error"
				      : fi_strerror((int)-ret));
			break;
		}
		CHECK(peer_gone_err(err.err), "error %d (%s), want FI_EIO%s",
		      err.err, fi_strerror(err.err),
		      is_shm ? "" : " or a connection error");
		got[err.op_context == buf[1]]++;
	}
	if (got[0] == 1 && got[1] == 1)
		printf("  sender got its errors %.2f s after the kill\n",
		       now() - t0);
	else
		fail("errors for %d CMA, %d streamed sends", got[0], got[1]);
	send_to_dead(&n, 1);
	atomic_store(&sh->flag[F_A_DONE], 1);
	node_close(&n);
	free(buf[0]);
	free(buf[1]);
}

static void dead_tx_child(int r)
{
	struct node n;

	if (r == 0) {
		dead_tx_a();
		return;
	}
	node_join(&n, 2);
	hello(&n, 0);
	pause();
}

/*
 * @zombie: the killed receiver stays unreaped until the survivor is done,
 * as when its parent is slow to wait for it; it is dead all the same.
 */
static void dead_tx(bool zombie)
{
	pid_t a, b;

	reset_shared();
	a = spawn(dead_tx_child, 0);
	b = spawn(dead_tx_child, 1);
	if (!parent_wait_flag(F_SENDING, 20))
		fail("sender never started");
	usleep(20000);
	kill(b, SIGKILL);
	if (!zombie)
		waitpid(b, NULL, 0);
	atomic_store(&sh->flag[F_GO], 1);
	if (zombie) {
		if (!parent_wait_flag(F_A_DONE, 2 * ERR_TMO + 5))
			fail("survivor stuck while the dead peer is a zombie");
		waitpid(b, NULL, 0);
	}
	reap(a, 3 * ERR_TMO + 10, "survivor");
}

static void t_dead_tx(void)
{
	dead_tx(false);
}

static void t_dead_zombie(void)
{
	dead_tx(true);
}

/* ------------------------------------------------------------------ */
/* 3. A sender that exits right after its sends completed.              */

static void exit_send_child(int r)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	static char s1[8], s2[1024], r1[8], r2[1024];
	struct node n;
	int i;

	node_join(&n, 2);
	if (r == 1) {
		pat_fill(s1, sizeof(s1), pat_seed(1, 0, 1));
		pat_fill(s2, sizeof(s2), pat_seed(1, 0, 2));
		if (tsend_retry(&n, s1, sizeof(s1), n.addr[0], 1, s1, 5) ||
		    tsend_retry(&n, s2, sizeof(s2), n.addr[0], 2, s2, 5))
			DIE("send");
		for (i = 0; i < 2; i++) {
			if (wait_one(&n, &e, &err, 5) != 1)
				DIE("send completion");
		}
		node_close(&n);
		return;
	}
	/* No progress here until the sender is gone. */
	wait_flag(F_GO);
	if (fi_trecv(n.ep, r1, sizeof(r1), NULL, FI_ADDR_UNSPEC, 1, 0, r1) ||
	    fi_trecv(n.ep, r2, sizeof(r2), NULL, FI_ADDR_UNSPEC, 2, 0, r2))
		DIE("trecv");
	for (i = 0; i < 2; i++) {
		if (wait_one(&n, &e, &err, 3) != 1) {
			fail("%d of 2 messages of the exited sender lost",
			     2 - i);
			break;
		}
	}
	if (i == 2) {
		CHECK(pat_check(r1, sizeof(r1), pat_seed(1, 0, 1)) < 0,
		      "8 B data");
		CHECK(pat_check(r2, sizeof(r2), pat_seed(1, 0, 2)) < 0,
		      "1 KiB data");
	}
	node_close(&n);
}

static void t_exit_send(void)
{
	pid_t a, b;

	reset_shared();
	a = spawn(exit_send_child, 0);
	b = spawn(exit_send_child, 1);
	reap(b, 20, "sender");
	CHECK(!region_exists(sh->names[1]),
	      "closed sender's address still taken");
	atomic_store(&sh->flag[F_GO], 1);
	reap(a, 20, "receiver");
	CHECK(!linger_left(b), "%d region(s) of the closed sender left",
	      linger_left(b));
}

/* ------------------------------------------------------------------ */
/* 4. A sender closes, then sends again from a new endpoint, which stays */
/*    open until the receiver, idle so far, got everything.             */

/* Sends an 8 B and a 1 KiB message tagged @tag, @tag + 1; both complete. */
static void send_pair(struct node *n, fi_addr_t to, uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	static char s[2][1024];
	size_t len[2] = {8, 1024};
	int i;

	for (i = 0; i < 2; i++) {
		pat_fill(s[i], len[i], pat_seed(1, 0, (int)tag + i));
		if (tsend_retry(n, s[i], len[i], to, tag + i, s[i], 5))
			DIE("send tag %d", (int)tag + i);
	}
	for (i = 0; i < 2; i++) {
		if (wait_one(n, &e, &err, 5) != 1)
			DIE("send completion (err %d)", err.err);
	}
}

static void exit_reuse_b(void)
{
	struct node n;
	int ret;

	atomic_store(&sh->pids[1], getpid());
	node_join(&n, 2);
	send_pair(&n, n.addr[0], 1);
	node_close(&n);
	/* Same process, new endpoint: it must not pass for the old one. */
	ret = node_open(&n);
	if (ret)
		DIE("reopen: %s", fi_strerror(-ret));
	memcpy(sh->names[2], n.name, NAME_LEN);
	atomic_store(&sh->ready[2], 1);
	if (fi_av_insert(n.av, sh->names[0], 1, &n.addr[0], 0, NULL) != 1)
		DIE("av insert");
	send_pair(&n, n.addr[0], 3);
	/* Open while the receiver looks: a slot it may have taken over. */
	atomic_store(&sh->flag[F_SENDING], 1);
	wait_flag(F_FINISH);
	node_close(&n);
}

static void exit_reuse_a(void)
{
	static char r[4][1024];
	size_t len[4] = {8, 1024, 8, 1024};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src, from[4];
	struct node n;
	double end;
	int i, got = 0;
	ssize_t ret;

	node_join(&n, 2);
	/* No progress here until the sender closed and sent again. */
	wait_flag(F_GO);
	if (fi_av_insert(n.av, sh->names[2], 1, &n.addr[2], 0, NULL) != 1)
		DIE("av insert second endpoint");
	for (i = 0; i < 4; i++) {
		if (fi_trecv(n.ep, r[i], len[i], NULL, FI_ADDR_UNSPEC, 1 + i, 0,
			     r[i]))
			DIE("trecv");
	}
	end = now() + 3;
	while (got < 4 && now() < end) {
		ret = read_one(&n, &e, &src, &err);
		if (ret == -FI_EAGAIN)
			continue;
		if (ret != 1) {
			fail("receive: %zd (err %d)", ret, err.err);
			break;
		}
		for (i = 0; i < 4 && e.op_context != r[i]; i++)
			;
		if (i == 4)
			DIE("completion for unknown context");
		from[i] = src;
		CHECK(e.len == len[i] && e.tag == (uint64_t)1 + i,
		      "tag %d: len %zu tag %llu", 1 + i, e.len,
		      (unsigned long long)e.tag);
		CHECK(pat_check(r[i], len[i], pat_seed(1, 0, 1 + i)) < 0,
		      "tag %d: data", 1 + i);
		got++;
	}
	if (got < 4)
		fail("%d of 4 messages of the closed endpoints lost", 4 - got);
	for (i = 0; i < got; i++) {
		CHECK(from[i] == n.addr[i < 2 ? 1 : 2],
		      "tag %d: source %llu, want %llu", 1 + i,
		      (unsigned long long)from[i],
		      (unsigned long long)n.addr[i < 2 ? 1 : 2]);
	}
	/* Progress alone gives the closed senders' regions back. */
	progress_until_unlinked(&n, sh->pids[1]);
	CHECK(!linger_left(sh->pids[1]),
	      "%d region(s) of the closed sender left while we progress",
	      linger_left(sh->pids[1]));
	node_close(&n);
}

static void exit_reuse_child(int r)
{
	if (r == 0)
		exit_reuse_a();
	else
		exit_reuse_b();
}

static void t_exit_reuse(void)
{
	pid_t a, b;

	reset_shared();
	a = spawn(exit_reuse_child, 0);
	b = spawn(exit_reuse_child, 1);
	if (!parent_wait_flag(F_SENDING, 20))
		fail("sender never finished");
	atomic_store(&sh->flag[F_GO], 1);
	reap(a, 20, "receiver");
	atomic_store(&sh->flag[F_FINISH], 1);
	reap(b, 20, "sender");
	CHECK(!linger_left(b), "%d region(s) of the closed sender left",
	      linger_left(b));
}

/* ------------------------------------------------------------------ */
/* 5. Endpoints that send and close in a loop while the receiver works. */

#define CHURN 40

static void churn_b(void)
{
	struct node n;
	int k, ret;

	for (k = 0; k < CHURN; k++) {
		ret = node_open(&n);
		if (ret)
			DIE("open %d: %s", k, fi_strerror(-ret));
		if (fi_av_insert(n.av, sh->names[0], 1, &n.addr[0], 0, NULL) !=
		    1)
			DIE("av insert");
		send_pair(&n, n.addr[0], 2 * k);
		node_close(&n);
	}
}

static void churn_a(void)
{
	static char r[2 * CHURN][1024];
	bool seen[2 * CHURN] = {false};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct node n;
	int i, t, got = 0;
	double end, burst;
	ssize_t ret;

	node_join(&n, 1);
	for (i = 0; i < 2 * CHURN; i++) {
		if (fi_trecv(n.ep, r[i], sizeof(r[i]), NULL, FI_ADDR_UNSPEC, 0,
			     ~0ULL, r[i]))
			DIE("trecv");
	}
	atomic_store(&sh->flag[F_POSTED], 1);
	end = now() + 20;
	burst = now() + 0.002;
	while (got < 2 * CHURN && now() < end) {
		/* In bursts: senders close both while we read and while not. */
		if (now() > burst) {
			usleep(12000);
			burst = now() + 0.002;
		}
		ret = read_one(&n, &e, &(fi_addr_t){0}, &err);
		if (ret == -FI_EAGAIN)
			continue;
		if (ret != 1) {
			fail("receive: %zd (err %d)", ret, err.err);
			break;
		}
		t = (int)e.tag;
		i = (int)((char(*)[1024])e.op_context - r);
		if (t < 0 || t >= 2 * CHURN || seen[t] ||
		    e.len != (t % 2 ? 1024u : 8u)) {
			fail("tag %d len %zu", t, e.len);
			continue;
		}
		seen[t] = true;
		CHECK(pat_check(r[i], e.len, pat_seed(1, 0, t)) < 0,
		      "tag %d: data", t);
		got++;
	}
	if (got < 2 * CHURN)
		fail("%d of %d messages of closing endpoints lost",
		     2 * CHURN - got, 2 * CHURN);
	progress_until_unlinked(&n, sh->pids[1]);
	wait_flag(F_FINISH);
	CHECK(!linger_left(sh->pids[1]), "%d region(s) of closed senders left",
	      linger_left(sh->pids[1]));
	node_close(&n);
}

static void churn_child(int r)
{
	if (r == 0) {
		churn_a();
		return;
	}
	atomic_store(&sh->pids[1], getpid());
	while (!atomic_load(&sh->flag[F_POSTED]))
		usleep(1000);
	churn_b();
}

static void t_churn(void)
{
	pid_t a, b;

	reset_shared();
	a = spawn(churn_child, 0);
	b = spawn(churn_child, 1);
	reap(b, 30, "sender");
	atomic_store(&sh->flag[F_FINISH], 1);
	reap(a, 30, "receiver");
	CHECK(!linger_left(b), "%d region(s) of the closed sender left",
	      linger_left(b));
}

/* ------------------------------------------------------------------ */

static void t_dead_race(void)
{
	int i;

	race_mode = true;
	for (i = 0; i < 4; i++) {
		race_cma = !(i % 2);
		t_dead_rx();
	}
	race_mode = false;
	race_cma = false;
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{"alltoall", t_alltoall},	{"dead_rx", t_dead_rx},
	{"dead_race", t_dead_race},	{"dead_tx", t_dead_tx},
	{"dead_zombie", t_dead_zombie}, {"exit_send", t_exit_send},
	{"exit_reuse", t_exit_reuse},	{"churn", t_churn},
};

#define NTESTS (sizeof(tests) / sizeof(tests[0]))

static void run(size_t i)
{
	int before = fails;

	cur_test = tests[i].name;
	printf("== %s\n", cur_test);
	fflush(stdout);
	tests[i].fn();
	printf("%s: %s\n", cur_test, fails == before ? "ok" : "FAILED");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *env;
	size_t i;
	int a;

	env = getenv("SHM_TEST_PROV");
	if (env && *env) {
		prov = env;
		is_shm = !strcmp(env, "shm");
	}
	env = getenv("SHM_MULTI_NPROCS");
	if (env)
		nprocs = atoi(env);
	env = getenv("SHM_MULTI_ROUNDS");
	if (env)
		rounds = atoi(env);
	if (nprocs < 2 || nprocs > MAXP || rounds < 1) {
		fprintf(stderr, "bad SHM_MULTI_NPROCS/ROUNDS\n");
		return 2;
	}
	srand((unsigned)getpid());
	setvbuf(stdout, NULL, _IOLBF, 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	for (a = 1; a < argc; a++) {
		for (i = 0; i < NTESTS && strcmp(argv[a], tests[i].name); i++)
			;
		if (i == NTESTS) {
			fprintf(stderr, "unknown test %s\n", argv[a]);
			return 2;
		}
		run(i);
	}
	for (i = 0; argc == 1 && i < NTESTS; i++)
		run(i);
	printf("%s: %d failures\n", argv[0], fails);
	return fails ? 1 : 0;
}
