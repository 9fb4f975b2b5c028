/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * auto_samehost.c - FI_PROGRESS_AUTO keeps its promise on the same-host
 * path: a target that makes no libfabric call after its setup still has
 * its memory written, its atomics applied and its posted receive filled,
 * and the initiator's completions come, within AUTO_WAIT_MS. Over the
 * provider of argv[1] (tcp and sockets through their shm path, which the
 * caller turns on; shm itself), FI_PROGRESS_AUTO asked in the hints.
 *
 * Cases, each able to fail:
 *  local   one process, two endpoints: the idle one is the target
 *  proc    two processes: the target spins on its memory (as a SHMEM PE
 *          in a barrier does) and calls nothing until it sees the
 *          initiator's write, atomic and send there
 * Each writes RMA_SMALL and RMA_LARGE bytes (an inline command and a
 * transfer the target must drive), adds with an atomic and sends
 * SEND_LEN bytes into a receive the target posted before it went idle.
 *
 * The provider must offer FI_PROGRESS_AUTO when asked. One line per
 * case; exit 0 when both passed, 77 without the provider.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

#define RMA_SMALL    64
#define RMA_LARGE    (1UL << 20)
#define SEND_LEN     (256UL << 10)
#define AUTO_WAIT_MS 5000 /* what must happen, happens well within */
#define ADD	     5

static const char *prov;
static bool inet; /* tcp or sockets: addresses on the loopback */

/* What the target lays out, and tells the initiator. */
struct target {
	uint8_t addr[64];
	size_t addrlen;
	uint64_t buf, key; /* RMA_LARGE + RMA_SMALL bytes written */
	uint64_t word, wkey;
};

/* The target's memory: the initiator's data lands here. */
struct target_mem {
	struct fid_mr *mr, *wmr;
	uint8_t *buf;  /* written */
	uint8_t *rbuf; /* the posted receive */
	volatile uint64_t word;
};

static struct fi_info *get_info_prog(enum fi_progress prog)
{
	return auto_node_getinfo(prov, FI_MSG | FI_RMA | FI_ATOMIC, FI_EP_RDM,
				 prog, inet, inet ? "127.0.0.1" : NULL);
}

static struct fi_info *get_info(void)
{
	return get_info_prog(FI_PROGRESS_AUTO);
}

static int node_open(struct auto_node *n)
{
	static const struct auto_node_attr attr = {
		.cq_format = FI_CQ_FORMAT_CONTEXT,
		.cq_flags = FI_TRANSMIT | FI_RECV,
	};

	memset(n, 0, sizeof(*n));
	return auto_node_open_info(n, get_info(), &attr);
}

static void node_close(struct auto_node *n)
{
	auto_node_close(n);
	memset(n, 0, sizeof(*n));
}

static uint8_t pattern(size_t i, uint8_t seed)
{
	return (uint8_t)(i * 7 + seed);
}

static void fill(uint8_t *buf, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(i, seed);
}

static bool filled(const volatile uint8_t *buf, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pattern(i, seed))
			return false;
	return true;
}

/* The target's setup: its last library calls. */
static int target_open(struct auto_node *n, struct target_mem *m,
		       struct target *t)
{
	bool virt;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = node_open(n);
	if (ret)
		return ret;
	m->buf = calloc(1, RMA_LARGE + RMA_SMALL);
	m->rbuf = calloc(1, SEND_LEN);
	if (!m->buf || !m->rbuf)
		return -FI_ENOMEM;
	/* Keys 1 and 2 where the application picks them (sockets answers
	 * mr_mode 0, as Debian's does); then offsets, not addresses. */
	ret = fi_mr_reg(n->domain, m->buf, RMA_LARGE + RMA_SMALL,
			FI_REMOTE_WRITE, 0, 1, 0, &m->mr, NULL);
	ret = ret ? ret
		  : fi_mr_reg(n->domain, (void *)&m->word, sizeof(m->word),
			      FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 2, 0,
			      &m->wmr, NULL);
	ret = ret ? ret
		  : (int)fi_recv(n->ep, m->rbuf, SEND_LEN, NULL, FI_ADDR_UNSPEC,
				 m->rbuf);
	if (ret)
		return ret;
	memcpy(t->addr, n->addr, n->addrlen);
	t->addrlen = n->addrlen;
	virt = n->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	t->buf = virt ? (uintptr_t)m->buf : 0;
	t->key = fi_mr_key(m->mr);
	t->word = virt ? (uintptr_t)&m->word : 0;
	t->wkey = fi_mr_key(m->wmr);
	return 0;
}

static void target_close(struct auto_node *n, struct target_mem *m)
{
	if (m->wmr)
		fi_close(&m->wmr->fid);
	if (m->mr)
		fi_close(&m->mr->fid);
	node_close(n);
	free(m->buf);
	free(m->rbuf);
}

/* Everything arrived, seen by looking at memory alone. */
static bool target_done(struct target_mem *m)
{
	return m->word == ADD && filled(m->buf, RMA_LARGE + RMA_SMALL, 0x33) &&
	       filled(m->rbuf, SEND_LEN, 0x77);
}

/* One completion of @cq by @deadline, spun for: 1, 0 on timeout, -1 on
 * error. */
static int cq_wait(struct fid_cq *cq, uint64_t deadline)
{
	return auto_node_cq_wait(cq, deadline, 0);
}

/* The initiator's part against @t: 0, or -1 (said why). */
static int initiate(struct auto_node *n, const struct target *t)
{
	uint64_t deadline = now_ms() + AUTO_WAIT_MS, add = ADD;
	uint8_t *wbuf = NULL, *sbuf = NULL;
	fi_addr_t peer;
	int ret = -1;

	CHECK(fi_av_insert(n->av, t->addr, 1, &peer, 0, NULL) == 1, "av");
	wbuf = malloc(RMA_LARGE + RMA_SMALL);
	sbuf = malloc(SEND_LEN);
	CHECK(wbuf && sbuf, "malloc");
	fill(wbuf, RMA_LARGE + RMA_SMALL, 0x33);
	fill(sbuf, SEND_LEN, 0x77);
	CHECK(!fi_write(n->ep, wbuf + RMA_LARGE, RMA_SMALL, NULL, peer,
			t->buf + RMA_LARGE, t->key, NULL),
	      "fi_write small");
	CHECK(cq_wait(n->cq, deadline) == 1, "small write: no completion");
	CHECK(!fi_write(n->ep, wbuf, RMA_LARGE, NULL, peer, t->buf, t->key,
			NULL),
	      "fi_write large");
	CHECK(cq_wait(n->cq, deadline) == 1, "large write: no completion");
	CHECK(!fi_atomic(n->ep, &add, 1, NULL, peer, t->word, t->wkey,
			 FI_UINT64, FI_SUM, NULL),
	      "fi_atomic");
	CHECK(cq_wait(n->cq, deadline) == 1, "atomic: no completion");
	CHECK(!fi_send(n->ep, sbuf, SEND_LEN, NULL, peer, NULL), "fi_send");
	CHECK(cq_wait(n->cq, deadline) == 1, "send: no completion");
	ret = 0;
out:
	free(wbuf);
	free(sbuf);
	return ret;
}

static int c_local(void)
{
	struct auto_node tn = {0}, in = {0};
	struct target_mem m;
	struct target t;
	uint64_t deadline;
	int ret = -1;

	CHECK(!target_open(&tn, &m, &t), "target open");
	CHECK(!node_open(&in), "initiator open");
	CHECK(!initiate(&in, &t), "the idle endpoint was not progressed");
	deadline = now_ms() + AUTO_WAIT_MS;
	while (!target_done(&m) && now_ms() < deadline)
		;
	CHECK(target_done(&m), "target memory: word %llu",
	      (unsigned long long)m.word);
	ret = 0;
out:
	node_close(&in);
	target_close(&tn, &m);
	return ret;
}

/* The child: sets up, reports, then only looks at its memory. */
static void proc_target(int up)
{
	struct target_mem m;
	struct target t = {0};
	struct auto_node n = {0};
	uint64_t deadline;
	bool ok = false;

	if (!target_open(&n, &m, &t) && write(up, &t, sizeof(t)) == sizeof(t)) {
		deadline = now_ms() + AUTO_WAIT_MS;
		while (!target_done(&m) && now_ms() < deadline)
			;
		ok = target_done(&m);
		if (!ok)
			fprintf(stderr, "  target: word %llu, data %s/%s\n",
				(unsigned long long)m.word,
				filled(m.buf, RMA_LARGE + RMA_SMALL, 0x33)
					? "ok"
					: "missing",
				filled(m.rbuf, SEND_LEN, 0x77) ? "ok"
							       : "missing");
	}
	target_close(&n, &m);
	_exit(ok ? 0 : 1);
}

static int c_proc(void)
{
	struct auto_node n = {0};
	struct target t;
	int up[2], status, ret = -1;
	pid_t pid;

	if (pipe(up))
		return -1;
	fflush(stderr);
	pid = fork();
	if (!pid) {
		close(up[0]);
		proc_target(up[1]);
	}
	close(up[1]);
	CHECK(pid > 0, "fork");
	CHECK(read(up[0], &t, sizeof(t)) == sizeof(t), "target did not start");
	CHECK(!node_open(&n), "initiator open");
	CHECK(!initiate(&n, &t), "the idle process was not progressed");
	ret = 0;
out:
	if (pid > 0) {
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			fprintf(stderr, "  target did not see its data\n");
			ret = -1;
		}
	}
	close(up[0]);
	node_close(&n);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} cases[] = {{"local", c_local}, {"proc", c_proc}};
	struct fi_info *info;
	int failures = 0, ret;
	uint64_t t0;
	size_t i;

	prov = argc > 1 ? argv[1] : "sockets";
	inet = strcmp(prov, "shm") != 0;
	setenv("FI_TCP_IFACE", "lo", 0);
	info = get_info_prog(FI_PROGRESS_UNSPEC);
	if (!info) {
		printf("SKIP: no %s\n", prov);
		return 77;
	}
	fi_freeinfo(info);
	info = get_info();
	if (!info || info->domain_attr->data_progress != FI_PROGRESS_AUTO) {
		printf("FAIL %s: FI_PROGRESS_AUTO not offered\n", prov);
		fi_freeinfo(info);
		return 1;
	}
	fi_freeinfo(info);
	/* A hang is a failure too. */
	alarm(60);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t0 = now_ms();
		ret = cases[i].fn();
		failures += ret != 0;
		printf("%s %s %s (%llu ms)\n", ret ? "FAIL" : "PASS", prov,
		       cases[i].name, (unsigned long long)(now_ms() - t0));
		fflush(stdout);
	}
	return failures ? 1 : 0;
}
