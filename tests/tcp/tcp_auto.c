/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_auto.c - FI_PROGRESS_AUTO on the tcp provider: a progress thread
 * per endpoint (and per passive endpoint) moves data while the
 * application calls nothing.
 *
 * Cases, each able to fail:
 *  getinfo       the hints' progress is echoed; none asked: MANUAL
 *  rma_idle      two processes: the target sleeps in read(2) while the
 *                initiator writes 4 MiB, reads 4 MiB and runs two atomics
 *                on its memory; then the target checks its memory. The
 *                same with FI_PROGRESS_MANUAL: an RMA target is served
 *                by a thread under either progress.
 *  send_idle     two processes: the sender (FI_MSG only) posts a 16 MiB
 *                send and sleeps in read(2); a manual receiver gets it
 *                all, data checked. With FI_PROGRESS_MANUAL at the
 *                sender it must time out.
 *  send_unasked  the same with a 64-byte send under manual progress (no
 *                progress in the hints): the send completes at once, its
 *                connection still being made, and the sender then waits
 *                outside the library (Open MPI's MPI_Comm_spawn does);
 *                the receiver must still get it (the flusher thread)
 *  many_eps      200 auto endpoints opened, enabled, given RMA traffic
 *                and closed with it in flight: no hang, and the threads
 *                and fds of the process are back to their count
 *  port_reuse    a new endpoint on the port of a closed one is answered
 *  sread         fi_cq_sread and fi_cntr_wait on auto endpoints wake for
 *                a completion the thread writes, and time out when idle
 *  sread_domain  the same on FI_THREAD_DOMAIN domains: the application
 *                serializes its calls, but the progress thread runs
 *                beside them, so the endpoint and CQ still lock (under
 *                TSan a missing lock is a race report)
 *  idle_cpu      idle auto endpoints (connected ones too) do not spin,
 *                nor wake while nothing is in flight
 *  manual_nothread  a manual endpoint with FI_MSG only starts no thread
 *  msg           FI_EP_MSG: FI_CONNREQ, FI_CONNECTED and FI_SHUTDOWN
 *                reach EQ handlers with no EQ or CQ read, and RMA to an
 *                accepted endpoint whose CQ nobody reads completes
 *
 * One line per case; exit status 0 when every case passed.
 * TCP_AUTO_ONLY=name runs one case.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

#include "../util/auto_node.h"
#include "tcp_test.h"

#define MiB	       (1UL << 20)
#define RMA_LEN	       (4 * MiB)
#define SEND_LEN       (16 * MiB)
#define AUTO_WAIT_MS   10000 /* what must happen, happens well within */
#define MANUAL_WAIT_MS 1000  /* what must not happen, has had this long */
#define EVBUF	       (sizeof(struct fi_eq_cm_entry) + 256)

static uint64_t cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Entries of a /proc/self directory: threads (task) or fds (fd). */
static int proc_count(const char *dir)
{
	struct dirent *d;
	DIR *p = opendir(dir);
	int n = 0;

	if (!p)
		return -1;
	while ((d = readdir(p)))
		n += d->d_name[0] != '.';
	closedir(p);
	return n;
}

/* Threads of the process once earlier cases' joined threads are gone. */
static int tasks_quiet(void)
{
	int last = proc_count("/proc/self/task"), n, i;

	for (i = 0; i < 100; i++) {
		usleep(10000);
		n = proc_count("/proc/self/task");
		if (n == last)
			break;
		last = n;
	}
	return last;
}

/*
 * Threads of the process, once it settles on want: pthread_join returns
 * when the thread has left its user code, but the kernel drops it from
 * /proc/self/task a moment later, so a count taken right after a join may
 * still see it. Polls for up to a second; returns the last count.
 */
static int tasks_settle(int want)
{
	int n, i;

	for (i = 0; i < 1000; i++) {
		n = proc_count("/proc/self/task");
		if (n == want)
			break;
		usleep(1000);
	}
	return n;
}

/* What most cases open; a message-only endpoint is not an RMA target, so
 * under FI_PROGRESS_MANUAL it starts no thread. */
#define NODE_CAPS (FI_MSG | FI_RMA | FI_ATOMIC)

/* The threading model the next opens ask for; UNSPEC: the provider's. */
static enum fi_threading threading = FI_THREAD_UNSPEC;

static struct fi_info *get_info(enum fi_ep_type type, enum fi_progress prog,
				uint64_t caps)
{
	struct fi_info *info;

	info = auto_node_getinfo("tcp", caps, type, prog, true, "127.0.0.1");
	if (info && threading != FI_THREAD_UNSPEC)
		info->domain_attr->threading = threading;
	return info;
}

/* One process's RDM side: fabric, domain, AV, CQ, counter, endpoint. */
static int node_open(struct auto_node *n, enum fi_progress prog, uint64_t caps,
		     bool cntr)
{
	const struct auto_node_attr attr = {
		.cq_format = FI_CQ_FORMAT_DATA,
		.cq_wait = FI_WAIT_UNSPEC,
		.cq_flags = FI_TRANSMIT | FI_RECV,
		.cntr_flags = cntr ? FI_RECV : 0,
	};

	memset(n, 0, sizeof(*n));
	return auto_node_open_info(n, get_info(FI_EP_RDM, prog, caps), &attr);
}

static void node_close(struct auto_node *n)
{
	auto_node_close(n);
	memset(n, 0, sizeof(*n));
}

/* One completion of @cq by @deadline: 1, 0 on timeout, -1 on error. */
static int cq_wait(struct fid_cq *cq, uint64_t deadline)
{
	return auto_node_cq_wait(cq, deadline, 100);
}

static void fill(uint8_t *buf, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 7 + (i >> 12));
}

static bool filled(const uint8_t *buf, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(seed + i * 7 + (i >> 12)))
			return false;
	return true;
}

static bool read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = read(fd, p, len);
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static bool write_all(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len;
}

/* ------------------------------------------------------------------ */

/* A child running @fn, and the parent's ends of the pipes between them. */
struct child {
	pid_t pid;
	int up;	  /* the child writes, the parent reads */
	int down; /* the parent writes, the child reads */
};

typedef void child_fn(enum fi_progress prog, int to_parent, int from_parent);

/* Forks a child that runs @fn (which exits); 0, or -1 with nothing left. */
static int child_start(struct child *c, child_fn *fn, enum fi_progress prog)
{
	int up[2], down[2];

	c->pid = -1;
	c->up = c->down = -1;
	if (pipe(up))
		return -1;
	if (pipe(down)) {
		close(up[0]);
		close(up[1]);
		return -1;
	}
	c->pid = fork();
	if (!c->pid) {
		close(up[0]);
		close(down[1]);
		fn(prog, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	if (c->pid < 0) {
		close(up[0]);
		close(down[1]);
		return -1;
	}
	c->up = up[0];
	c->down = down[1];
	return 0;
}

/*
 * The parent's side ended with @ret: a failed one kills the child; one
 * that passed fails (-1) if the child did not exit 0. Returns the verdict.
 */
static int child_end(struct child *c, int ret)
{
	int status;

	if (c->pid > 0) {
		if (ret)
			kill(c->pid, SIGKILL);
		waitpid(c->pid, &status, 0);
		if (!ret && (!WIFEXITED(status) || WEXITSTATUS(status)))
			ret = -1;
	}
	if (c->up >= 0)
		close(c->up);
	if (c->down >= 0)
		close(c->down);
	return ret;
}

static int c_getinfo(void)
{
	struct fi_info *i;
	int ret = -1;

	i = get_info(FI_EP_RDM, FI_PROGRESS_UNSPEC, NODE_CAPS);
	CHECK(i, "no tcp info without progress hints");
	CHECK(i->domain_attr->data_progress == FI_PROGRESS_MANUAL &&
		      i->domain_attr->control_progress == FI_PROGRESS_MANUAL,
	      "unasked: %d/%d, not MANUAL", i->domain_attr->data_progress,
	      i->domain_attr->control_progress);
	fi_freeinfo(i);
	i = get_info(FI_EP_RDM, FI_PROGRESS_AUTO, NODE_CAPS);
	CHECK(i, "no tcp info for FI_PROGRESS_AUTO");
	CHECK(i->domain_attr->data_progress == FI_PROGRESS_AUTO &&
		      i->domain_attr->control_progress == FI_PROGRESS_AUTO,
	      "AUTO asked, %d/%d answered", i->domain_attr->data_progress,
	      i->domain_attr->control_progress);
	fi_freeinfo(i);
	i = get_info(FI_EP_MSG, FI_PROGRESS_AUTO, NODE_CAPS);
	CHECK(i && i->domain_attr->data_progress == FI_PROGRESS_AUTO,
	      "no MSG info for FI_PROGRESS_AUTO");
	ret = 0;
out:
	fi_freeinfo(i);
	return ret;
}

/* ------------------------------------------------------------------ */
/* rma_idle: the target process calls nothing while it is written.      */

struct rma_target {
	uint8_t addr[64];
	size_t addrlen;
	uint64_t buf, key;   /* 2 * RMA_LEN: written half, read half */
	uint64_t word, wkey; /* the atomic's uint64_t */
};

static void rma_target(enum fi_progress prog, int to_parent, int from_parent)
{
	struct fid_mr *mr = NULL, *wmr = NULL;
	struct rma_target t = {0};
	static uint64_t word;
	struct auto_node n;
	uint8_t *buf = NULL, ok = 0, go;

	if (node_open(&n, prog, NODE_CAPS, false))
		goto out;
	buf = calloc(1, 2 * RMA_LEN);
	if (!buf)
		goto out;
	fill(buf + RMA_LEN, RMA_LEN, 0x5a);
	if (fi_mr_reg(n.domain, buf, 2 * RMA_LEN,
		      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) ||
	    fi_mr_reg(n.domain, &word, sizeof(word),
		      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &wmr, NULL))
		goto out;
	memcpy(t.addr, n.addr, n.addrlen);
	t.addrlen = n.addrlen;
	t.buf = (uintptr_t)buf;
	t.key = fi_mr_key(mr);
	t.word = (uintptr_t)&word;
	t.wkey = fi_mr_key(wmr);
	if (!write_all(to_parent, &t, sizeof(t)))
		goto out;
	/* Asleep in read(2): only a progress thread can answer now. */
	if (!read_all(from_parent, &go, 1))
		goto out;
	/* Everything completed at the initiator; a read of our CQ takes
	 * the lock the thread wrote under (an order race checkers see). */
	(void)fi_cq_read(n.cq, NULL, 0);
	ok = filled(buf, RMA_LEN, 0x33) && word == 12;
	if (!ok)
		fprintf(stderr, "  target: memory %s, word %llu\n",
			filled(buf, RMA_LEN, 0x33) ? "ok" : "wrong",
			(unsigned long long)word);
out:
	(void)!write(to_parent, &ok, 1);
	if (wmr)
		fi_close(&wmr->fid);
	if (mr)
		fi_close(&mr->fid);
	node_close(&n);
	free(buf);
	_exit(ok ? 0 : 1);
}

/* 0: all completed and checked; 1: timed out; -1: failed. */
static int rma_idle(enum fi_progress prog)
{
	uint64_t deadline, add = 5, add2 = 7, old = 0;
	uint64_t wait =
		prog == FI_PROGRESS_AUTO ? AUTO_WAIT_MS : MANUAL_WAIT_MS;
	struct child c = {-1, -1, -1};
	struct rma_target t;
	struct auto_node n = {0};
	uint8_t *wbuf = NULL, *rbuf = NULL, go = 1, ok = 0;
	fi_addr_t peer;
	int ret = -1, got;

	CHECK(!child_start(&c, rma_target, prog), "pipe or fork");
	CHECK(read_all(c.up, &t, sizeof(t)), "target did not start");
	CHECK(!node_open(&n, prog, NODE_CAPS, false), "initiator open");
	CHECK(fi_av_insert(n.av, t.addr, 1, &peer, 0, NULL) == 1, "av");
	wbuf = malloc(RMA_LEN);
	rbuf = calloc(1, RMA_LEN);
	CHECK(wbuf && rbuf, "malloc");
	fill(wbuf, RMA_LEN, 0x33);

	deadline = now_ms() + wait;
	CHECK(!fi_write(n.ep, wbuf, RMA_LEN, NULL, peer, t.buf, t.key, NULL),
	      "fi_write");
	got = cq_wait(n.cq, deadline);
	if (!got) {
		ret = 1;
		goto out;
	}
	CHECK(got == 1, "write failed");
	CHECK(!fi_read(n.ep, rbuf, RMA_LEN, NULL, peer, t.buf + RMA_LEN, t.key,
		       NULL),
	      "fi_read");
	CHECK(cq_wait(n.cq, deadline) == 1, "read: no completion");
	CHECK(filled(rbuf, RMA_LEN, 0x5a), "read: wrong data");
	CHECK(!fi_atomic(n.ep, &add, 1, NULL, peer, t.word, t.wkey, FI_UINT64,
			 FI_SUM, NULL),
	      "fi_atomic");
	CHECK(cq_wait(n.cq, deadline) == 1, "atomic: no completion");
	CHECK(!fi_fetch_atomic(n.ep, &add2, 1, NULL, &old, NULL, peer, t.word,
			       t.wkey, FI_UINT64, FI_SUM, NULL),
	      "fi_fetch_atomic");
	CHECK(cq_wait(n.cq, deadline) == 1, "fetch atomic: no completion");
	CHECK(old == 5, "fetch atomic: old value %llu, not 5",
	      (unsigned long long)old);
	CHECK(write_all(c.down, &go, 1) && read_all(c.up, &ok, 1) && ok,
	      "target's check failed");
	ret = 0;
out:
	ret = child_end(&c, ret);
	node_close(&n);
	free(wbuf);
	free(rbuf);
	return ret;
}

/*
 * @run must finish with FI_PROGRESS_AUTO (0) and time out (1) with
 * FI_PROGRESS_MANUAL: what the thread moved, nothing else would have.
 */
static int auto_not_manual(int (*run)(enum fi_progress))
{
	int ret;

	ret = run(FI_PROGRESS_AUTO);
	if (ret) {
		fprintf(stderr, "  FI_PROGRESS_AUTO: %s\n",
			ret > 0 ? "timed out" : "failed");
		return -1;
	}
	ret = run(FI_PROGRESS_MANUAL);
	if (ret != 1) {
		fprintf(stderr,
			"  FI_PROGRESS_MANUAL: %s, expected a timeout\n",
			ret ? "failed" : "completed");
		return -1;
	}
	return 0;
}

/* A target of RMA and atomics is served under either progress. */
static int c_rma_idle(void)
{
	enum fi_progress prog[] = {FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL};
	int i, ret;

	for (i = 0; i < 2; i++) {
		ret = rma_idle(prog[i]);
		if (ret) {
			fprintf(stderr, "  %s: %s\n",
				fi_tostr(&prog[i], FI_TYPE_PROGRESS),
				ret > 0 ? "timed out" : "failed");
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* send_idle: the sender posts 16 MiB (send_unasked: 64 B) and sleeps.  */

static size_t send_len = SEND_LEN;

static void idle_sender(enum fi_progress prog, int to_parent, int from_parent)
{
	struct {
		uint8_t addr[64];
		size_t addrlen;
	} r;
	struct fi_cq_data_entry e;
	struct auto_node n;
	uint8_t *buf = NULL, ok = 0, go;
	fi_addr_t peer;

	if (!read_all(from_parent, &r, sizeof(r)) ||
	    node_open(&n, prog, FI_MSG, false) ||
	    fi_av_insert(n.av, r.addr, 1, &peer, 0, NULL) != 1)
		goto out;
	buf = malloc(send_len);
	if (!buf)
		goto out;
	fill(buf, send_len, 0x77);
	if (fi_send(n.ep, buf, send_len, NULL, peer, buf))
		goto out;
	ok = 1;
	(void)!write(to_parent, &ok, 1);
	/* Asleep in read(2): only a progress thread keeps writing. */
	ok = read_all(from_parent, &go, 1) && go;
	/* The send completed meanwhile, its context ours. */
	ok = ok && fi_cq_read(n.cq, &e, 1) == 1 && e.op_context == buf;
out:
	(void)!write(to_parent, &ok, 1);
	node_close(&n);
	free(buf);
	_exit(ok ? 0 : 1);
}

static int send_idle(enum fi_progress prog)
{
	uint64_t wait =
		prog != FI_PROGRESS_MANUAL ? AUTO_WAIT_MS : MANUAL_WAIT_MS;
	struct child c = {-1, -1, -1};
	struct {
		uint8_t addr[64];
		size_t addrlen;
	} r;
	struct auto_node n = {0};
	uint8_t *buf = NULL, ok = 0, go = 1;
	int ret = -1, got;

	CHECK(!child_start(&c, idle_sender, prog), "pipe or fork");
	/* The receiver is manual: only its own reads progress it. */
	CHECK(!node_open(&n, FI_PROGRESS_MANUAL, FI_MSG, false),
	      "receiver open");
	buf = calloc(1, send_len);
	CHECK(buf, "malloc");
	CHECK(!fi_recv(n.ep, buf, send_len, NULL, FI_ADDR_UNSPEC, buf),
	      "fi_recv");
	memcpy(r.addr, n.addr, n.addrlen);
	r.addrlen = n.addrlen;
	CHECK(write_all(c.down, &r, sizeof(r)), "to sender");
	CHECK(read_all(c.up, &ok, 1) && ok, "sender could not post");
	got = cq_wait(n.cq, now_ms() + wait);
	if (!got) {
		ret = 1;
		goto out;
	}
	CHECK(got == 1, "receive failed");
	CHECK(filled(buf, send_len, 0x77), "wrong data received");
	CHECK(write_all(c.down, &go, 1) && read_all(c.up, &ok, 1) && ok,
	      "sender: no send completion");
	ret = 0;
out:
	ret = child_end(&c, ret);
	node_close(&n);
	free(buf);
	return ret;
}

static int c_send_idle(void)
{
	return auto_not_manual(send_idle);
}

static int c_send_unasked(void)
{
	int ret;

	send_len = 64;
	ret = send_idle(FI_PROGRESS_UNSPEC);
	send_len = SEND_LEN;
	if (ret)
		fprintf(stderr, "  no progress asked: %s\n",
			ret > 0 ? "timed out" : "failed");
	return ret ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* many_eps: threads start and stop with their endpoints.                */

#define MANY_EPS 200
#define MANY_LEN (64 * 1024)

static int c_many_eps(void)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct fid_mr *mr = NULL;
	struct fid_ep *ep = NULL;
	struct auto_node t = {0};
	uint8_t *tbuf = NULL, *src = NULL;
	int tasks, fds, n, i, ret = -1;
	fi_addr_t peer;
	uint64_t start;

	CHECK(!node_open(&t, FI_PROGRESS_AUTO, NODE_CAPS, false),
	      "target open");
	tbuf = calloc(1, MANY_LEN);
	src = malloc(MANY_LEN);
	CHECK(tbuf && src, "malloc");
	memset(src, 0xcd, MANY_LEN);
	CHECK(!fi_mr_reg(t.domain, tbuf, MANY_LEN, FI_REMOTE_WRITE, 0, 0, 0,
			 &mr, NULL),
	      "mr");
	CHECK(fi_av_insert(t.av, t.addr, 1, &peer, 0, NULL) == 1, "av");
	tasks = tasks_quiet();
	fds = proc_count("/proc/self/fd");
	start = now_ms();
	for (i = 0; i < MANY_EPS; i++) {
		CHECK(!fi_endpoint(t.domain, t.info, &ep, NULL), "ep %d", i);
		CHECK(!fi_ep_bind(ep, &t.av->fid, 0) &&
			      !fi_ep_bind(ep, &t.cq->fid,
					  FI_TRANSMIT | FI_RECV) &&
			      !fi_enable(ep),
		      "enable %d", i);
		n = tasks_settle(tasks + 1);
		CHECK(n == tasks + 1, "ep %d: %d threads, expected %d", i, n,
		      tasks + 1);
		CHECK(!fi_write(ep, src, MANY_LEN, NULL, peer, (uintptr_t)tbuf,
				fi_mr_key(mr), NULL) &&
			      !fi_write(ep, src, 100, NULL, peer,
					(uintptr_t)tbuf, fi_mr_key(mr), NULL),
		      "write %d", i);
		/* Every other one closes before anything completed. */
		if (i % 2)
			CHECK(cq_wait(t.cq, now_ms() + AUTO_WAIT_MS) == 1,
			      "ep %d: no completion", i);
		CHECK(!fi_close(&ep->fid), "close %d", i);
		ep = NULL;
		while (fi_cq_read(t.cq, &e, 1) == 1 ||
		       fi_cq_readerr(t.cq, &err, 0) == 1)
			;
	}
	n = tasks_settle(tasks);
	CHECK(n == tasks, "%d threads, not %d", n, tasks);
	CHECK(proc_count("/proc/self/fd") == fds, "%d fds, not %d",
	      proc_count("/proc/self/fd"), fds);
	CHECK(tbuf[0] == 0xcd && tbuf[MANY_LEN - 1] == 0xcd, "no write landed");
	printf("  %d endpoints in %llu ms\n", MANY_EPS,
	       (unsigned long long)(now_ms() - start));
	ret = 0;
out:
	if (ep)
		fi_close(&ep->fid);
	if (mr)
		fi_close(&mr->fid);
	node_close(&t);
	free(tbuf);
	free(src);
	return ret;
}

/*
 * port_reuse: what many_eps ran into. An endpoint the target knows only by
 * its connection (not in the target's AV) closes; a new endpoint listening
 * on the same port (the kernel hands ports out again) must be answered,
 * not taken for the failed one.
 */
static int c_port_reuse(void)
{
	struct fi_info *src = NULL;
	struct fid_mr *mr = NULL;
	struct fid_ep *ep = NULL;
	struct auto_node t = {0};
	static uint8_t tbuf[4096];
	uint8_t addr[64];
	size_t len;
	fi_addr_t peer;
	int i, ret = -1;

	CHECK(!node_open(&t, FI_PROGRESS_AUTO, NODE_CAPS, false),
	      "target open");
	CHECK(!fi_mr_reg(t.domain, tbuf, sizeof(tbuf), FI_REMOTE_WRITE, 0, 0, 0,
			 &mr, NULL),
	      "mr");
	CHECK(fi_av_insert(t.av, t.addr, 1, &peer, 0, NULL) == 1, "av");
	src = fi_dupinfo(t.info);
	CHECK(src, "dupinfo");
	for (i = 0; i < 3; i++) {
		CHECK(!fi_endpoint(t.domain, src, &ep, NULL) &&
			      !fi_ep_bind(ep, &t.av->fid, 0) &&
			      !fi_ep_bind(ep, &t.cq->fid,
					  FI_TRANSMIT | FI_RECV) &&
			      !fi_enable(ep),
		      "ep %d", i);
		len = sizeof(addr);
		CHECK(!fi_getname(&ep->fid, addr, &len) &&
			      len <= src->src_addrlen,
		      "getname");
		/* The next one listens where this one did. */
		memcpy(src->src_addr, addr, len);
		CHECK(!fi_write(ep, "x", 1, NULL, peer, (uintptr_t)tbuf,
				fi_mr_key(mr), NULL),
		      "write %d", i);
		CHECK(cq_wait(t.cq, now_ms() + AUTO_WAIT_MS) == 1,
		      "ep %d: no completion", i);
		CHECK(!fi_close(&ep->fid), "close %d", i);
		ep = NULL;
	}
	ret = 0;
out:
	if (ep)
		fi_close(&ep->fid);
	if (mr)
		fi_close(&mr->fid);
	fi_freeinfo(src);
	node_close(&t);
	return ret;
}

/* ------------------------------------------------------------------ */
/* sread: blocking reads wake for what the thread completes.             */

static int c_sread(void)
{
	struct fi_cq_data_entry e;
	struct auto_node a = {0}, b = {0};
	char out[1024], in[1024];
	fi_addr_t to_b;
	uint64_t t0;
	ssize_t n;
	int i, ret = -1;

	CHECK(!node_open(&a, FI_PROGRESS_AUTO, NODE_CAPS, false) &&
		      !node_open(&b, FI_PROGRESS_AUTO, NODE_CAPS, true),
	      "open");
	CHECK(fi_av_insert(a.av, b.addr, 1, &to_b, 0, NULL) == 1, "av");
	for (i = 0; i < 20; i++) {
		memset(out, 'a' + i, sizeof(out));
		memset(in, 0, sizeof(in));
		CHECK(!fi_recv(b.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, in),
		      "recv");
		CHECK(!fi_send(a.ep, out, sizeof(out), NULL, to_b, out),
		      "send");
		n = fi_cq_sread(b.cq, &e, 1, NULL, AUTO_WAIT_MS);
		CHECK(n == 1 && e.op_context == in, "recv sread: %zd", n);
		CHECK(!memcmp(in, out, sizeof(in)), "data");
		n = fi_cq_sread(a.cq, &e, 1, NULL, AUTO_WAIT_MS);
		CHECK(n == 1 && e.op_context == out, "send sread: %zd", n);
		CHECK(!fi_cntr_wait(b.cntr, (uint64_t)i + 1, AUTO_WAIT_MS),
		      "cntr_wait %d", i);
	}
	t0 = now_ms();
	n = fi_cq_sread(b.cq, &e, 1, NULL, 200);
	CHECK(n == -FI_EAGAIN, "idle sread: %zd", n);
	CHECK(now_ms() - t0 >= 150, "idle sread returned early");
	t0 = now_ms();
	CHECK(fi_cntr_wait(b.cntr, 1000, 200) == -FI_ETIMEDOUT,
	      "idle cntr_wait");
	CHECK(now_ms() - t0 >= 150, "idle cntr_wait returned early");
	ret = 0;
out:
	node_close(&a);
	node_close(&b);
	return ret;
}

static int c_sread_domain(void)
{
	int ret;

	threading = FI_THREAD_DOMAIN;
	ret = c_sread();
	threading = FI_THREAD_UNSPEC;
	return ret;
}

/* ------------------------------------------------------------------ */
/* idle_cpu: the threads sleep when there is nothing to do.              */

static int c_idle_cpu(void)
{
	struct auto_node n[4] = {0};
	struct fi_cq_data_entry e;
	char buf[64] = "x", in[64];
	uint64_t c0, used;
	fi_addr_t peer;
	long sleeps;
	int i, ret = -1;

	for (i = 0; i < 4; i++)
		CHECK(!node_open(&n[i], FI_PROGRESS_AUTO, NODE_CAPS, false),
		      "open %d", i);
	/* Two of them connected, with their connection idle. */
	CHECK(fi_av_insert(n[0].av, n[1].addr, 1, &peer, 0, NULL) == 1, "av");
	CHECK(!fi_recv(n[1].ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, NULL),
	      "recv");
	CHECK(!fi_send(n[0].ep, buf, sizeof(buf), NULL, peer, NULL), "send");
	CHECK(fi_cq_sread(n[1].cq, &e, 1, NULL, AUTO_WAIT_MS) == 1, "recv");
	CHECK(fi_cq_sread(n[0].cq, &e, 1, NULL, AUTO_WAIT_MS) == 1, "send");
	/* The threads' last callbacks (after the completions) may still
	 * be running: let them go to sleep first. */
	usleep(50 * 1000);
	sleeps = auto_node_thread_sleeps("tcp-prog");
	c0 = cpu_ms();
	usleep(500 * 1000);
	used = cpu_ms() - c0;
	if (sleeps >= 0)
		sleeps = auto_node_thread_sleeps("tcp-prog") - sleeps;
	/* Spinning threads would take ~2000 ms; waking every 10 ms, ~1. */
	CHECK(used < 150, "idle threads used %llu ms of CPU in 500 ms",
	      (unsigned long long)used);
	/* With nothing in flight they sleep without a period: waking every
	 * 10 ms, the four would have gone to sleep ~200 times. */
	CHECK(sleeps < 20, "idle threads woke %ld times in 500 ms", sleeps);
	ret = 0;
out:
	for (i = 0; i < 4; i++)
		node_close(&n[i]);
	return ret;
}

static int c_manual_nothread(void)
{
	int tasks = tasks_quiet(), now;
	struct auto_node n = {0};
	int ret = -1;

	CHECK(!node_open(&n, FI_PROGRESS_MANUAL, FI_MSG, false), "open");
	now = tasks_settle(tasks);
	CHECK(now == tasks, "manual endpoint: %d threads, not %d", now, tasks);
	ret = 0;
out:
	node_close(&n);
	return ret;
}

/* ------------------------------------------------------------------ */
/* msg: connection management with nobody reading an EQ.                 */

struct msg_state {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_info *info;
	struct fid_eq *acc_eq;
	struct fid_cq *acc_cq;
	struct fid_ep *acc_ep;
	atomic_int connreq, connected, acc_connected, shutdown;
	atomic_int failed;
};

static struct msg_state ms;

static ssize_t on_connreq(struct fid_eq *eq, uint64_t type, void *data,
			  uint64_t len, void *ctx)
{
	struct fi_eq_cm_entry *e = data;

	(void)eq;
	(void)type;
	(void)len;
	(void)ctx;
	/* From the passive endpoint's thread: accept at once. */
	if (fi_endpoint(ms.domain, e->info, &ms.acc_ep, NULL) ||
	    fi_ep_bind(ms.acc_ep, &ms.acc_eq->fid, 0) ||
	    fi_ep_bind(ms.acc_ep, &ms.acc_cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(ms.acc_ep) || fi_accept(ms.acc_ep, NULL, 0))
		atomic_store(&ms.failed, 1);
	fi_freeinfo(e->info);
	atomic_store(&ms.connreq, 1);
	return 0;
}

static ssize_t on_event(struct fid_eq *eq, uint64_t type, void *data,
			uint64_t len, void *ctx)
{
	(void)eq;
	(void)data;
	(void)len;
	if (type == FI_CONNECTED)
		atomic_store((atomic_int *)ctx, 1);
	if (type == FI_SHUTDOWN)
		atomic_store(&ms.shutdown, 1);
	return 0;
}

/* Sleeps (no libfabric call) until @flag is set or @ms pass. */
static bool flag_wait(atomic_int *flag, int ms_left)
{
	uint64_t end = now_ms() + (uint64_t)ms_left;

	while (!atomic_load(flag) && now_ms() < end)
		usleep(1000);
	return atomic_load(flag);
}

static int c_msg(void)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};
	struct fid_eq *leq = NULL, *ceq = NULL;
	struct fid_cq *ccq = NULL;
	struct fid_pep *pep = NULL;
	struct fid_ep *cep = NULL;
	struct fid_mr *mr = NULL;
	struct sockaddr_storage ss;
	size_t len = sizeof(ss);
	static uint8_t tgt[RMA_LEN];
	uint8_t *src = NULL;
	int ret = -1;

	memset(&ms, 0, sizeof(ms));
	ms.info = get_info(FI_EP_MSG, FI_PROGRESS_AUTO, NODE_CAPS);
	CHECK(ms.info, "no MSG info");
	CHECK(!fi_fabric(ms.info->fabric_attr, &ms.fabric, NULL) &&
		      !fi_domain(ms.fabric, ms.info, &ms.domain, NULL),
	      "domain");
	CHECK(!fi_eq_open(ms.fabric, &eq_attr, &leq, NULL) &&
		      !fi_eq_open(ms.fabric, &eq_attr, &ceq, NULL) &&
		      !fi_eq_open(ms.fabric, &eq_attr, &ms.acc_eq, NULL) &&
		      !fi_cq_open(ms.domain, &cq_attr, &ccq, NULL) &&
		      !fi_cq_open(ms.domain, &cq_attr, &ms.acc_cq, NULL),
	      "eqs, cqs");
	CHECK(!fi_eq_register_handler(leq, FI_CONNREQ, on_connreq, NULL) &&
		      !fi_eq_register_handler(ceq, FI_CONNECTED, on_event,
					      &ms.connected) &&
		      !fi_eq_register_handler(ms.acc_eq, FI_CONNECTED, on_event,
					      &ms.acc_connected) &&
		      !fi_eq_register_handler(ms.acc_eq, FI_SHUTDOWN, on_event,
					      NULL),
	      "handlers");
	CHECK(!fi_mr_reg(ms.domain, tgt, sizeof(tgt),
			 FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL),
	      "mr");
	fill(tgt + RMA_LEN / 2, RMA_LEN / 2, 0x21);
	CHECK(!fi_passive_ep(ms.fabric, ms.info, &pep, NULL) &&
		      !fi_pep_bind(pep, &leq->fid, 0) && !fi_listen(pep) &&
		      !fi_getname(&pep->fid, &ss, &len),
	      "listen");
	CHECK(!fi_endpoint(ms.domain, ms.info, &cep, NULL) &&
		      !fi_ep_bind(cep, &ceq->fid, 0) &&
		      !fi_ep_bind(cep, &ccq->fid, FI_TRANSMIT | FI_RECV) &&
		      !fi_enable(cep),
	      "connector");
	CHECK(!fi_connect(cep, &ss, NULL, 0), "connect");
	/* Nobody reads an EQ or a CQ: the threads do it all. */
	CHECK(flag_wait(&ms.connreq, AUTO_WAIT_MS), "no FI_CONNREQ");
	CHECK(!atomic_load(&ms.failed), "accept failed");
	CHECK(flag_wait(&ms.connected, AUTO_WAIT_MS), "no FI_CONNECTED");
	CHECK(flag_wait(&ms.acc_connected, AUTO_WAIT_MS),
	      "acceptor: no FI_CONNECTED");

	/* RMA to the accepted endpoint, whose CQ nobody reads. */
	src = malloc(RMA_LEN / 2);
	CHECK(src, "malloc");
	fill(src, RMA_LEN / 2, 0x44);
	CHECK(!fi_write(cep, src, RMA_LEN / 2, NULL, 0, (uintptr_t)tgt,
			fi_mr_key(mr), NULL),
	      "write");
	CHECK(cq_wait(ccq, now_ms() + AUTO_WAIT_MS) == 1, "write: none");
	CHECK(filled(tgt, RMA_LEN / 2, 0x44), "write: data");
	memset(src, 0, RMA_LEN / 2);
	CHECK(!fi_read(cep, src, RMA_LEN / 2, NULL, 0,
		       (uintptr_t)tgt + RMA_LEN / 2, fi_mr_key(mr), NULL),
	      "read");
	CHECK(cq_wait(ccq, now_ms() + AUTO_WAIT_MS) == 1, "read: none");
	CHECK(filled(src, RMA_LEN / 2, 0x21), "read: data");

	CHECK(!fi_shutdown(cep, 0), "shutdown");
	CHECK(flag_wait(&ms.shutdown, AUTO_WAIT_MS),
	      "acceptor: no FI_SHUTDOWN");
	ret = 0;
out:
	if (cep)
		fi_close(&cep->fid);
	if (ms.acc_ep)
		fi_close(&ms.acc_ep->fid);
	if (pep)
		fi_close(&pep->fid);
	if (mr)
		fi_close(&mr->fid);
	if (ccq)
		fi_close(&ccq->fid);
	if (ms.acc_cq)
		fi_close(&ms.acc_cq->fid);
	if (leq)
		fi_close(&leq->fid);
	if (ceq)
		fi_close(&ceq->fid);
	if (ms.acc_eq)
		fi_close(&ms.acc_eq->fid);
	if (ms.domain)
		fi_close(&ms.domain->fid);
	if (ms.fabric)
		fi_close(&ms.fabric->fid);
	fi_freeinfo(ms.info);
	free(src);
	return ret;
}

/* ------------------------------------------------------------------ */

struct tcase {
	const char *name;
	int (*fn)(void);
};

static const struct tcase cases[] = {
	{"getinfo", c_getinfo},
	{"rma_idle", c_rma_idle},
	{"send_idle", c_send_idle},
	{"send_unasked", c_send_unasked},
	{"many_eps", c_many_eps},
	{"port_reuse", c_port_reuse},
	{"sread", c_sread},
	{"sread_domain", c_sread_domain},
	{"idle_cpu", c_idle_cpu},
	{"manual_nothread", c_manual_nothread},
	{"msg", c_msg},
};

int main(void)
{
	const char *only = getenv("TCP_AUTO_ONLY");
	int failures = 0;
	uint64_t t0;
	size_t i;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	/* The threads moving TCP are tested: over the same-host path a
	 * receiver pulls a sleeping sender's data itself (CMA), manual
	 * progress or not. */
	setenv("FI_TCP_SHM", "0", 1);
	/* Loopback only, as make check has it. */
	setenv("FI_TCP_IFACE", "lo", 0);
	/* A hang is a failure too. */
	alarm(120);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		t0 = now_ms();
		ret = cases[i].fn();
		if (ret)
			failures++;
		printf("%s %s (%llu ms)\n", ret ? "FAIL" : "PASS",
		       cases[i].name, (unsigned long long)(now_ms() - t0));
		fflush(stdout);
	}
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
