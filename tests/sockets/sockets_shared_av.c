/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_shared_av.c - named AVs shared between processes (FI_SHARED_AV)
 * on the sockets provider. The parent creates AV
 * "sockets_sav.<kind>.<pid>" and fills slots 0 and 2 with two endpoints'
 * names (slot 1 inserted and removed again), then runs itself as a child
 * process that opens the AV by name with FI_READ:
 *
 *  open      FI_READ of a name nobody created is -FI_ENOENT, FI_READ
 *            without a name -FI_EINVAL
 *  lookup    the child sees the parent's fi_addrs: slot 0 and 2 hold the
 *            names the parent passed on its command line, slot 1 none;
 *            fi_av_open returned map_addr, an array of fi_addr_t that
 *            holds 0, FI_ADDR_NOTAVAIL, 2 (upstream fi_rdm_shared_av
 *            reads its peer's fi_addr there)
 *  readonly  the child's inserts and removals are refused
 *  send      the child's endpoint, bound to the read-only AV, sends to
 *            fi_addr 0 and 2 and the parent's endpoints get the messages
 *  follow    an address the parent inserts later (slot 1, a third
 *            endpoint) reaches the child: its send to fi_addr 1 arrives
 *
 * All of it twice: with FI_EP_RDM endpoints, then with FI_EP_DGRAM ones
 * (sockets_dgram.c over the same AV code); the child is told which.
 *
 * The parent prints one line per case (the child's cases by its exit
 * status and its lines); exit 0 when all passed, 77 without sockets.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "sockets_test.h"

#define DEADLINE 30000
#define NAMELEN	 128

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static int failed;
/* "rdm" or "dgram": the endpoints' type, for both processes */
static const char *kind = "rdm";

struct ep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	uint8_t name[NAMELEN];
	size_t namelen;
};

static int ep_open(struct ep *e, struct fid_av *av)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT};

	e->namelen = sizeof(e->name);
	return fi_endpoint(domain, info, &e->ep, NULL) ?:
		       fi_cq_open(domain, &cq_attr, &e->cq, NULL) ?:
		       fi_ep_bind(e->ep, &av->fid, 0) ?:
		       fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV) ?:
		       fi_enable(e->ep) ?:
		       fi_getname(&e->ep->fid, e->name, &e->namelen);
}

static void ep_close(struct ep *e)
{
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
}

static int cq_wait(struct fid_cq *cq)
{
	uint64_t end = now_ms() + DEADLINE;
	struct fi_cq_entry e;
	ssize_t n;

	do {
		n = fi_cq_read(cq, &e, 1);
		if (n == 1)
			return 0;
	} while (n == -FI_EAGAIN && now_ms() < end);
	return n == -FI_EAGAIN ? -FI_ETIMEDOUT : (int)n;
}

static int send_wait(struct ep *e, fi_addr_t dest, uint32_t v)
{
	uint64_t end = now_ms() + DEADLINE;
	ssize_t ret;

	do {
		ret = fi_send(e->ep, &v, sizeof(v), NULL, dest, NULL);
	} while (ret == -FI_EAGAIN && now_ms() < end);
	return ret ? (int)ret : cq_wait(e->cq);
}

static void hex(const uint8_t *p, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	hints->ep_attr->type = strcmp(kind, "dgram") ? FI_EP_RDM : FI_EP_DGRAM;
	hints->caps = FI_MSG | FI_SHARED_AV;
	hints->domain_attr->mr_mode = 0;
	ret = sockets_getinfo(hints, &info);
	if (ret)
		return ret;
	if (fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL))
		return 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The child: argv name, slot 0's and slot 2's names in hex, and the    */
/* fds it waits on (the parent's "inserted") and reports on.            */

#define REPORT(c)                                                              \
	do {                                                                   \
		bool _c = (c);                                                 \
		printf("%s: %s child %s\n", _c ? "PASS" : "FAIL", kind, #c);   \
		fflush(stdout);                                                \
		if (!_c)                                                       \
			goto out;                                              \
	} while (0)

static bool slot_is(struct fid_av *av, fi_addr_t i, const char *want)
{
	uint8_t buf[NAMELEN];
	char h[2 * NAMELEN + 1];
	size_t len = sizeof(buf);

	if (fi_av_lookup(av, i, buf, &len) || len > sizeof(buf))
		return false;
	hex(buf, len, h);
	return !strcmp(h, want);
}

static int child(char **argv)
{
	struct fi_av_attr attr = {.type = FI_AV_TABLE, .flags = FI_READ};
	struct fid_av *av = NULL;
	struct ep e = {0};
	uint8_t buf[NAMELEN];
	size_t len = sizeof(buf);
	fi_addr_t a = 7;
	int in = atoi(argv[5]), out = atoi(argv[6]);
	char c;
	bool ok = false;

	if (setup())
		return 1;
	attr.name = argv[2];
	REPORT(fi_av_open(domain, &attr, &av, NULL) == 0);
	REPORT(slot_is(av, 0, argv[3]) && slot_is(av, 2, argv[4]));
	/* map_addr, given none, is the object's fi_addr per slot */
	REPORT(attr.map_addr && ((fi_addr_t *)attr.map_addr)[0] == 0 &&
	       ((fi_addr_t *)attr.map_addr)[1] == FI_ADDR_NOTAVAIL &&
	       ((fi_addr_t *)attr.map_addr)[2] == 2);
	REPORT(fi_av_lookup(av, 1, buf, &len) == -FI_EINVAL);
	REPORT(fi_av_insert(av, buf, 1, &a, 0, NULL) == -FI_EOPNOTSUPP);
	a = 0;
	REPORT(fi_av_remove(av, &a, 1, 0) == -FI_EOPNOTSUPP);
	REPORT(ep_open(&e, av) == 0);
	REPORT(send_wait(&e, 0, 100) == 0 && send_wait(&e, 2, 102) == 0);
	/* the parent inserts slot 1 now */
	REPORT(write(out, "r", 1) == 1 && read(in, &c, 1) == 1);
	REPORT(send_wait(&e, 1, 101) == 0);
	ok = true;
out:
	ep_close(&e);
	if (av)
		fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* The parent.                                                          */

#define CASE(name, cond)                                                       \
	do {                                                                   \
		bool _c = (cond);                                              \
		printf("%s: %s %s\n", _c ? "PASS" : "FAIL", kind, name);       \
		fflush(stdout);                                                \
		failed |= !_c;                                                 \
	} while (0)

static bool received(struct ep *e, uint32_t *buf, uint32_t v)
{
	return cq_wait(e->cq) == 0 && *buf == v;
}

static int parent(void)
{
	struct fi_av_attr attr = {.type = FI_AV_TABLE, .count = 16};
	struct fid_av *av = NULL, *bad;
	struct ep e[3] = {{0}};
	char name[64], h0[2 * NAMELEN + 1], h2[2 * NAMELEN + 1];
	char fin[16], fout[16], *argv[9];
	uint32_t rbuf[3] = {0};
	fi_addr_t a[3];
	int to_child[2], from_child[2], status = -1, i;
	pid_t pid = -1;
	char c;

	snprintf(name, sizeof(name), "sockets_sav.%s.%d", kind, (int)getpid());
	attr.name = name;
	attr.flags = FI_READ;
	CASE("open", fi_av_open(domain, &attr, &bad, NULL) == -FI_ENOENT);
	attr.name = NULL;
	CASE("open", fi_av_open(domain, &attr, &bad, NULL) == -FI_EINVAL);
	attr.name = name;
	attr.flags = 0;
	if (fi_av_open(domain, &attr, &av, NULL))
		return 1;
	for (i = 0; i < 3; i++)
		if (ep_open(&e[i], av) ||
		    fi_recv(e[i].ep, &rbuf[i], 4, NULL, FI_ADDR_UNSPEC, NULL))
			goto out;
	/* slots 0 and 2; 1 held by e[1] for a while */
	if (fi_av_insert(av, e[0].name, 1, &a[0], 0, NULL) != 1 ||
	    fi_av_insert(av, e[1].name, 1, &a[1], 0, NULL) != 1 ||
	    fi_av_insert(av, e[2].name, 1, &a[2], 0, NULL) != 1 || a[0] ||
	    a[1] != 1 || a[2] != 2 || fi_av_remove(av, &a[1], 1, 0))
		goto out;
	hex(e[0].name, e[0].namelen, h0);
	hex(e[2].name, e[2].namelen, h2);
	if (pipe(to_child) || pipe(from_child))
		goto out;
	snprintf(fin, sizeof(fin), "%d", to_child[0]);
	snprintf(fout, sizeof(fout), "%d", from_child[1]);
	argv[0] = "sockets_shared_av";
	argv[1] = "child";
	argv[2] = name;
	argv[3] = h0;
	argv[4] = h2;
	argv[5] = fin;
	argv[6] = fout;
	argv[7] = (char *)kind;
	argv[8] = NULL;
	pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	if (pid < 0)
		goto out;
	/* the child's ends: a child that dies is EOF here, not a hang */
	close(to_child[0]);
	close(from_child[1]);
	CASE("send",
	     received(&e[0], &rbuf[0], 100) && received(&e[2], &rbuf[2], 102));
	/* the child asks for slot 1, gets it once it is in */
	if (read(from_child[0], &c, 1) == 1 &&
	    fi_av_insert(av, e[1].name, 1, &a[1], 0, NULL) == 1 && a[1] == 1)
		(void)!write(to_child[1], "i", 1);
	CASE("follow", received(&e[1], &rbuf[1], 101));
out:
	if (pid > 0) {
		close(to_child[1]); /* a child still waiting reads EOF */
		waitpid(pid, &status, 0);
	}
	CASE("child", pid > 0 && WIFEXITED(status) && !WEXITSTATUS(status));
	for (i = 0; i < 3; i++)
		ep_close(&e[i]);
	if (av)
		fi_close(&av->fid);
	return failed;
}

/* The parent's cases over @k's endpoints: 0, 77 without sockets. */
static int run(const char *k)
{
	int ret;

	kind = k;
	ret = setup();
	if (ret == 77)
		printf("SKIP: no sockets provider\n");
	else if (ret)
		printf("FAIL: %s setup (FI_SHARED_AV)\n", kind);
	if (ret)
		return ret;
	ret = parent();
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return ret;
}

int main(int argc, char **argv)
{
	int ret;

	unsetenv("FI_PROVIDER");
	if (argc == 8 && !strcmp(argv[1], "child")) {
		kind = argv[7];
		return child(argv);
	}
	ret = run("rdm");
	return ret == 77 ? ret : ret | run("dgram");
}
