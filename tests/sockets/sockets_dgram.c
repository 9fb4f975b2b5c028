/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_dgram.c - the sockets provider's FI_EP_DGRAM endpoints over UDP
 * (prov/sockets/sockets_dgram.c) through the public API, in-process, on
 * loopback, for each of {IPv4, IPv6} x {FI_AV_MAP, FI_AV_TABLE} x
 * {FI_PROGRESS_MANUAL, FI_PROGRESS_AUTO}:
 *
 *  attr       the entry: FI_EP_DGRAM, FI_PROTO_UDP, max_msg_size the
 *             datagram limit, iov_limit 8, no RMA or atomics
 *  bounds     three messages of different sizes arrive as three, each
 *             with its size and bytes (boundaries kept); a sendv of 8
 *             iovs arrives as one message
 *  tagged     two tags sent, received in the other order by tag
 *  multi      one FI_MULTI_RECV buffer takes three messages at
 *             consecutive offsets; the last completion releases it
 *  source     fi_cq_readfrom names the sender's fi_addr, and
 *             FI_ADDR_NOTAVAIL for a sender not in the receiver's AV
 *  trunc      a message longer than the receive: FI_ETRUNC error entry
 *             with olen, the counter's error count
 *  garbage    datagrams from a raw UDP socket (random bytes, a header
 *             with a wrong length, version or magic, a short one, one for
 *             receive context 16 or 1) are never delivered; the valid
 *             message after them is
 *  errors     a send past max_msg_size is -FI_EMSGSIZE,
 *             FI_DELIVERY_COMPLETE -FI_EINVAL; shared receive
 *             contexts are advertised as Debian's (max_ep_srx_ctx 128)
 *             and one bound enables (sockets_srx.c sends through one)
 *  trigger    (FI_TRIGGER) a triggered receive and send wait for their
 *             counter's threshold: a plain receive posted after the
 *             triggered one takes the message the triggered send makes
 *             at its threshold, the triggered receive takes the next
 *             once its own is reached; a triggered tagged receive and
 *             send start together at theirs
 *  deferred   fi_control(FI_QUEUE_WORK) of a send and of a receive on
 *             DGRAM endpoints: each starts at its threshold, the send
 *             arrives, both report to their completion counter
 *  fence      a send with FI_FENCE is accepted and arrives; a fenced
 *             triggered send starts after the triggered send queued
 *             before it with the same threshold (they arrive in order)
 *  empty      empty datagrams count against FI_SOCKETS_MAX_UNEXP (4096
 *             bytes): of 256 sent while no receive is posted, fewer than
 *             half are kept; a message after the receives drained them
 *             is kept again
 *  names      (automatic progress) the threads are named for sockets:
 *             "sockets-dgram" here, and "sockets-prog" for an RDM
 *             endpoint on tcp's engine; none says tcp
 *
 * One line per configuration; exit 0 when all passed, 77 when sockets is
 * not built or offers no DGRAM.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "sockets_test.h"

#define VER	   FI_VERSION(1, 17)
#define MAX_MSG	   65475 /* SOCK_DG_MAX_MSG, documented in fi_sockets(7) */
#define WAIT_SEC   20	 /* a completion that is due (loopback) */
#define QUIET_MSEC 150	 /* how long "nothing more arrives" is watched */

struct node {
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr; /* receive counter */
	char name[64];
	size_t namelen;
};

struct cfg {
	uint32_t format;
	enum fi_av_type av_type;
	enum fi_progress progress;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct node a, b, c, d;
static fi_addr_t a_at_b, b_at_a, b_at_c;

/* One completion (or error entry: returns -FI_EAVAIL, @err filled). */
static int wait_comp(struct node *n, struct fi_cq_tagged_entry *e,
		     fi_addr_t *src, struct fi_cq_err_entry *err)
{
	double end = now() + WAIT_SEC;
	ssize_t ret;

	do {
		ret = src ? fi_cq_readfrom(n->cq, e, 1, src)
			  : fi_cq_read(n->cq, e, 1);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(n->cq, err, 0);
			return -FI_EAVAIL;
		}
		if (ret != -FI_EAGAIN)
			return (int)ret;
	} while (now() < end);
	return -FI_ETIMEDOUT;
}

/* Nothing more on @n's CQ for a while. */
static int quiet(struct node *n)
{
	struct fi_cq_tagged_entry e;
	double end = now() + QUIET_MSEC / 1e3;

	while (now() < end)
		if (fi_cq_read(n->cq, &e, 1) != -FI_EAGAIN)
			return -1;
	return 0;
}

/* The send's own completion. */
static int sent(struct node *n)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	REQUIRE(!wait_comp(n, &e, NULL, &err));
	REQUIRE(e.flags & FI_SEND);
	return 0;
}

static int open_node(struct node *n, const struct cfg *cfg)
{
	struct fi_av_attr av_attr = {.type = cfg->av_type};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP};

	REQUIRE(!fi_endpoint(domain, info, &n->ep, NULL));
	REQUIRE(!fi_av_open(domain, &av_attr, &n->av, NULL));
	REQUIRE(!fi_cq_open(domain, &cq_attr, &n->cq, NULL));
	REQUIRE(!fi_cntr_open(domain, &cntr_attr, &n->cntr, NULL));
	REQUIRE(!fi_ep_bind(n->ep, &n->av->fid, 0));
	REQUIRE(!fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV));
	REQUIRE(!fi_ep_bind(n->ep, &n->cntr->fid, FI_RECV));
	REQUIRE(!fi_enable(n->ep));
	n->namelen = sizeof(n->name);
	REQUIRE(!fi_getname(&n->ep->fid, n->name, &n->namelen));
	return 0;
}

static void close_node(struct node *n)
{
	if (n->ep)
		fi_close(&n->ep->fid);
	if (n->cntr)
		fi_close(&n->cntr->fid);
	if (n->cq)
		fi_close(&n->cq->fid);
	if (n->av)
		fi_close(&n->av->fid);
	memset(n, 0, sizeof(*n));
}

static int insert(struct node *at, const struct node *peer, fi_addr_t *addr)
{
	REQUIRE(fi_av_insert(at->av, peer->name, 1, addr, 0, NULL) == 1);
	return 0;
}

static void teardown(void)
{
	close_node(&a);
	close_node(&b);
	close_node(&c);
	close_node(&d);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	fi_freeinfo(info);
	domain = NULL;
	fabric = NULL;
	info = NULL;
}

/* -FI_ENODATA when the family has no loopback (IPv6 off). */
static int setup(const struct cfg *cfg)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		abort();
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_DGRAM;
	hints->addr_format = cfg->format;
	hints->caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_SOURCE |
		      FI_TRIGGER | FI_FENCE;
	hints->domain_attr->data_progress = cfg->progress;
	hints->domain_attr->control_progress = cfg->progress;
	hints->domain_attr->av_type = cfg->av_type;
	ret = fi_getinfo(VER,
			 cfg->format == FI_SOCKADDR_IN6 ? "::1" : "127.0.0.1",
			 NULL, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	REQUIRE(!fi_fabric(info->fabric_attr, &fabric, NULL));
	REQUIRE(!fi_domain(fabric, info, &domain, NULL));
	if (open_node(&a, cfg) || open_node(&b, cfg) || open_node(&c, cfg))
		return -1;
	/* a and b know each other; b does not know c */
	if (insert(&a, &b, &b_at_a) || insert(&b, &a, &a_at_b) ||
	    insert(&c, &b, &b_at_c))
		return -1;
	return 0;
}

static int case_attr(void)
{
	REQUIRE(info->ep_attr->type == FI_EP_DGRAM);
	REQUIRE(info->ep_attr->protocol == FI_PROTO_UDP);
	REQUIRE(info->ep_attr->max_msg_size == MAX_MSG);
	REQUIRE(info->tx_attr->iov_limit == 8 && info->rx_attr->iov_limit == 8);
	REQUIRE(info->tx_attr->inject_size >= 255);
	REQUIRE(!(info->caps & (FI_RMA | FI_ATOMIC)));
	return 0;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7);
}

static int case_bounds(void)
{
	static const size_t sizes[] = {1, 1000, 65000};
	static uint8_t tx[3][65000], rx[3][65536];
	struct iovec iov[8];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	size_t i;

	for (i = 0; i < 3; i++) {
		fill(tx[i], sizes[i], (unsigned)i + 1);
		REQUIRE(!fi_recv(b.ep, rx[i], sizeof(rx[i]), NULL,
				 FI_ADDR_UNSPEC, &rx[i]));
	}
	for (i = 0; i < 3; i++) {
		REQUIRE(!fi_send(a.ep, tx[i], sizes[i], NULL, b_at_a, NULL));
		REQUIRE(!sent(&a));
	}
	for (i = 0; i < 3; i++) {
		REQUIRE(!wait_comp(&b, &e, NULL, &err));
		REQUIRE(e.op_context == &rx[i] && e.len == sizes[i]);
		REQUIRE((e.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG));
		REQUIRE(!memcmp(rx[i], tx[i], sizes[i]));
	}
	/* 8 iovs, one message */
	for (i = 0; i < 8; i++) {
		iov[i].iov_base = tx[1] + i * 100;
		iov[i].iov_len = 100;
	}
	REQUIRE(!fi_recv(b.ep, rx[0], sizeof(rx[0]), NULL, FI_ADDR_UNSPEC,
			 NULL));
	REQUIRE(!fi_sendv(a.ep, iov, NULL, 8, b_at_a, NULL));
	REQUIRE(!sent(&a));
	REQUIRE(!wait_comp(&b, &e, NULL, &err));
	REQUIRE(e.len == 800 && !memcmp(rx[0], tx[1], 800));
	REQUIRE(!quiet(&b));
	return 0;
}

static int case_tagged(void)
{
	uint64_t v5 = 5, v7 = 7, r5 = 0, r7 = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	REQUIRE(!fi_tsend(a.ep, &v5, sizeof(v5), NULL, b_at_a, 0x5, NULL));
	REQUIRE(!sent(&a));
	REQUIRE(!fi_tsend(a.ep, &v7, sizeof(v7), NULL, b_at_a, 0x7, NULL));
	REQUIRE(!sent(&a));
	/* posted after arrival (unexpected path), in the other order */
	usleep(100000);
	REQUIRE(!fi_trecv(b.ep, &r7, sizeof(r7), NULL, FI_ADDR_UNSPEC, 0x7, 0,
			  &r7));
	REQUIRE(!wait_comp(&b, &e, NULL, &err));
	REQUIRE(e.op_context == &r7 && e.tag == 0x7 && r7 == 7);
	REQUIRE(e.flags & FI_TAGGED);
	REQUIRE(!fi_trecv(b.ep, &r5, sizeof(r5), NULL, FI_ADDR_UNSPEC, 0x5, 0,
			  &r5));
	REQUIRE(!wait_comp(&b, &e, NULL, &err));
	REQUIRE(e.op_context == &r5 && e.tag == 0x5 && r5 == 5);
	return 0;
}

static int case_multi(void)
{
	static uint8_t buf[300], tx[100];
	struct iovec iov = {buf, sizeof(buf)};
	struct fi_msg msg = {.msg_iov = &iov,
			     .iov_count = 1,
			     .addr = FI_ADDR_UNSPEC,
			     .context = buf};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	size_t min = 64;
	int i;

	REQUIRE(!fi_setopt(&b.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			   &min, sizeof(min)));
	REQUIRE(!fi_recvmsg(b.ep, &msg, FI_MULTI_RECV));
	for (i = 0; i < 3; i++) {
		fill(tx, sizeof(tx), (unsigned)i + 10);
		REQUIRE(!fi_send(a.ep, tx, sizeof(tx), NULL, b_at_a, NULL));
		REQUIRE(!sent(&a));
		REQUIRE(!wait_comp(&b, &e, NULL, &err));
		REQUIRE(e.op_context == buf && e.len == sizeof(tx));
		REQUIRE(e.buf == buf + i * 100 &&
			!memcmp(e.buf, tx, sizeof(tx)));
		/* released once less than min is left: with the third */
		REQUIRE(!!(e.flags & FI_MULTI_RECV) == (i == 2));
	}
	return 0;
}

static int case_source(void)
{
	char x = 'x', y = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src = 12345;

	REQUIRE(!fi_recv(b.ep, &y, 1, NULL, FI_ADDR_UNSPEC, NULL));
	REQUIRE(!fi_send(a.ep, &x, 1, NULL, b_at_a, NULL));
	REQUIRE(!sent(&a));
	REQUIRE(!wait_comp(&b, &e, &src, &err));
	REQUIRE(src == a_at_b && y == 'x');
	/* c is not in b's AV */
	REQUIRE(!fi_recv(b.ep, &y, 1, NULL, FI_ADDR_UNSPEC, NULL));
	REQUIRE(!fi_send(c.ep, &x, 1, NULL, b_at_c, NULL));
	REQUIRE(!sent(&c));
	REQUIRE(!wait_comp(&b, &e, &src, &err));
	REQUIRE(src == FI_ADDR_NOTAVAIL);
	return 0;
}

static int case_trunc(void)
{
	static uint8_t tx[200], rx[100];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint64_t errs = fi_cntr_readerr(b.cntr);

	fill(tx, sizeof(tx), 3);
	REQUIRE(!fi_recv(b.ep, rx, sizeof(rx), NULL, FI_ADDR_UNSPEC, rx));
	REQUIRE(!fi_send(a.ep, tx, sizeof(tx), NULL, b_at_a, NULL));
	REQUIRE(!sent(&a));
	REQUIRE(wait_comp(&b, &e, NULL, &err) == -FI_EAVAIL);
	REQUIRE(err.err == FI_ETRUNC && err.olen == 100 &&
		err.op_context == rx);
	REQUIRE(!memcmp(rx, tx, sizeof(rx)));
	REQUIRE(fi_cntr_readerr(b.cntr) == errs + 1);
	return 0;
}

/* @n sends SENT empty messages to d, which has no receive posted. */
static int empty_burst(struct node *n, fi_addr_t to, int count)
{
	struct fi_cq_tagged_entry e;
	int i;

	for (i = 0; i < count; i++) {
		REQUIRE(!fi_send(n->ep, NULL, 0, NULL, to, NULL));
		REQUIRE(!sent(n));
		/* d's progress takes each before its socket buffer fills */
		REQUIRE(fi_cq_read(d.cq, &e, 1) == -FI_EAGAIN);
	}
	return 0;
}

/* How many messages d kept: receives posted one at a time until one finds
 * none; that last receive stays posted. */
static int empty_kept(uint64_t *r)
{
	struct fi_cq_tagged_entry e;
	double end;
	int kept = 0;
	ssize_t ret;

	for (;;) {
		if (fi_recv(d.ep, r, sizeof(*r), NULL, FI_ADDR_UNSPEC, r))
			return -1;
		end = now() + QUIET_MSEC / 1e3;
		while ((ret = fi_cq_read(d.cq, &e, 1)) == -FI_EAGAIN &&
		       now() < end)
			;
		if (ret != 1)
			return ret == -FI_EAGAIN ? kept : -1;
		if (e.len || e.op_context != r)
			return -1;
		kept++;
	}
}

static int case_empty(const struct cfg *cfg)
{
	enum { SENT = 256 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t d_at_a;
	uint64_t one = 1, r = 0;
	int ret, kept;

	setenv("FI_SOCKETS_MAX_UNEXP", "4096", 1);
	ret = open_node(&d, cfg);
	unsetenv("FI_SOCKETS_MAX_UNEXP");
	REQUIRE(!ret && !insert(&a, &d, &d_at_a));
	REQUIRE(!empty_burst(&a, d_at_a, SENT));
	kept = empty_kept(&r);
	REQUIRE(kept > 0 && kept < SENT / 2);
	/* the outstanding receive takes the next message */
	REQUIRE(!fi_send(a.ep, &one, sizeof(one), NULL, d_at_a, NULL));
	REQUIRE(!sent(&a));
	REQUIRE(!wait_comp(&d, &e, NULL, &err));
	REQUIRE(e.op_context == &r && e.len == sizeof(one) && r == 1);
	/* delivering them gave their room back: as many are kept again */
	REQUIRE(!empty_burst(&a, d_at_a, SENT));
	REQUIRE(empty_kept(&r) == kept);
	REQUIRE(!fi_cancel(&d.ep->fid, &r));
	REQUIRE(wait_comp(&d, &e, NULL, &err) == -FI_EAVAIL &&
		err.err == FI_ECANCELED);
	close_node(&d); /* the cases after count a, b and c only */
	return 0;
}

/* Raw datagrams to b that are not messages of ours. */
static int send_garbage(const struct cfg *cfg)
{
	uint8_t d[64];
	int fd, i;
	int family = cfg->format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;

	fd = socket(family, SOCK_DGRAM, 0);
	REQUIRE(fd >= 0);
	srand(7);
	for (i = 0; i < 20; i++) {
		size_t n = (size_t)(rand() % (int)sizeof(d));
		size_t k;

		for (k = 0; k < sizeof(d); k++)
			d[k] = (uint8_t)rand();
		if (i == 1) { /* our magic and version, wrong length */
			memcpy(d, "OSDG\2\1\0\0\100\0\0\0", 12);
			memset(d + 12, 0, 20);
			n = 40;
		} else if (i == 2) { /* a foreign version (ours is 2) */
			memcpy(d, "OSDG\1\1\0\0\0\0\0\0", 12);
			memset(d + 12, 0, 20);
			n = 32;
		} else if (i == 3) { /* a header cut short */
			memcpy(d, "OSDG\2\1\0\0\0\0\0\0", 12);
			n = 12;
		} else if (i == 4 || i == 5) {
			/* receive context 16 (none can be), or 1 (valid,
			 * but a plain endpoint has context 0 only) */
			memcpy(d, "OSDG\2\1\0\0\0\0\0\0", 12);
			memset(d + 12, 0, 20);
			d[12] = i == 4 ? 16 : 1;
			n = 32;
		}
		sendto(fd, d, n, 0, (struct sockaddr *)b.name,
		       (socklen_t)b.namelen);
	}
	close(fd);
	return 0;
}

static int case_garbage(const struct cfg *cfg)
{
	uint8_t rx[4][128];
	char x[] = "valid";
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int i;

	for (i = 0; i < 4; i++)
		REQUIRE(!fi_recv(b.ep, rx[i], sizeof(rx[i]), NULL,
				 FI_ADDR_UNSPEC, rx[i]));
	REQUIRE(!send_garbage(cfg));
	usleep(100000); /* the garbage first */
	REQUIRE(!fi_send(a.ep, x, sizeof(x), NULL, b_at_a, NULL));
	REQUIRE(!sent(&a));
	REQUIRE(!wait_comp(&b, &e, NULL, &err));
	REQUIRE(e.len == sizeof(x) && !strcmp(e.op_context, "valid"));
	REQUIRE(e.op_context == rx[0]);
	REQUIRE(!quiet(&b));
	for (i = 1; i < 4; i++)
		REQUIRE(fi_cancel(&b.ep->fid, rx[i]) == 0);
	for (i = 1; i < 4; i++) /* the cancelled receives */
		REQUIRE(wait_comp(&b, &e, NULL, &err) == -FI_EAVAIL &&
			err.err == FI_ECANCELED);
	return 0;
}

static int case_errors(void)
{
	static uint8_t big[MAX_MSG + 1];
	struct iovec iov = {big, 1};
	struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1, .addr = b_at_a};
	struct fi_rx_attr rx_attr = {.size = 16};
	struct fid_ep *ep, *srx;
	int ret;

	REQUIRE(fi_send(a.ep, big, sizeof(big), NULL, b_at_a, NULL) ==
		-FI_EMSGSIZE);
	REQUIRE(fi_sendmsg(a.ep, &msg, FI_DELIVERY_COMPLETE) == -FI_EINVAL);
	REQUIRE(!quiet(&a));
	/* shared receive contexts: advertised, and one bound enables */
	REQUIRE(info->domain_attr->max_ep_srx_ctx == 128);
	REQUIRE(!fi_endpoint(domain, info, &ep, NULL));
	ret = fi_srx_context(domain, &rx_attr, &srx, NULL);
	if (!ret) {
		ret = fi_ep_bind(ep, &srx->fid, 0) ?:
		      fi_ep_bind(ep, &a.av->fid, 0) ?:
		      fi_ep_bind(ep, &a.cq->fid, FI_TRANSMIT | FI_RECV) ?:
		      fi_enable(ep);
		fi_close(&ep->fid);
		fi_close(&srx->fid);
	} else {
		fi_close(&ep->fid);
	}
	REQUIRE(ret == 0);
	return 0;
}

static struct fid_cntr *cntr_new(void)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP};
	struct fid_cntr *c = NULL;

	return fi_cntr_open(domain, &attr, &c, NULL) ? NULL : c;
}

static struct fi_triggered_context at(struct fid_cntr *c, uint64_t thr)
{
	struct fi_triggered_context t = {.event_type = FI_TRIGGER_THRESHOLD};

	t.trigger.threshold.cntr = c;
	t.trigger.threshold.threshold = thr;
	return t;
}

/* A message @iov to @dest, with @context. */
static struct fi_msg msg_of(struct iovec *iov, fi_addr_t dest, void *context)
{
	return (struct fi_msg){.msg_iov = iov,
			       .iov_count = 1,
			       .addr = dest,
			       .context = context};
}

static int trigger_steps(struct fid_cntr *t)
{
	struct fi_triggered_context ts = at(t, 1), tr = at(t, 2);
	uint32_t sv = 0x1111, pv = 0x2222, rt = 0, rp = 0;
	struct iovec siov = {&sv, 4}, riov = {&rt, 4};
	struct fi_msg sm = msg_of(&siov, b_at_a, &ts),
		      rm = msg_of(&riov, FI_ADDR_UNSPEC, &tr);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	REQUIRE(!fi_recvmsg(b.ep, &rm, FI_TRIGGER));
	REQUIRE(!fi_recv(b.ep, &rp, 4, NULL, FI_ADDR_UNSPEC, &rp));
	REQUIRE(!fi_sendmsg(a.ep, &sm, FI_TRIGGER));
	REQUIRE(!quiet(&a) && !quiet(&b)); /* nothing below 1 */
	REQUIRE(!fi_cntr_add(t, 1));
	REQUIRE(!wait_comp(&a, &e, NULL, &err) && e.op_context == &ts);
	/* the triggered receive is not posted yet: the plain one takes it */
	REQUIRE(!wait_comp(&b, &e, NULL, &err) && e.op_context == &rp);
	REQUIRE(rp == sv && !rt);
	REQUIRE(!fi_send(a.ep, &pv, 4, NULL, b_at_a, NULL) && !sent(&a));
	REQUIRE(!quiet(&b)); /* kept as unexpected */
	REQUIRE(!fi_cntr_add(t, 1));
	REQUIRE(!wait_comp(&b, &e, NULL, &err) && e.op_context == &tr);
	REQUIRE(rt == pv);
	return 0;
}

/* The tagged calls: a triggered fi_trecvmsg and fi_tsendmsg at 3 (the
 * counter is at 2 after trigger_steps). */
static int trigger_tagged(struct fid_cntr *t)
{
	struct fi_triggered_context ts = at(t, 3), tr = at(t, 3);
	uint32_t sv = 0x7777, rv = 0;
	struct iovec siov = {&sv, 4}, riov = {&rv, 4};
	struct fi_msg_tagged sm = {.msg_iov = &siov,
				   .iov_count = 1,
				   .addr = b_at_a,
				   .tag = 0x42,
				   .context = &ts},
			     rm = {.msg_iov = &riov,
				   .iov_count = 1,
				   .addr = FI_ADDR_UNSPEC,
				   .tag = 0x42,
				   .context = &tr};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	REQUIRE(!fi_trecvmsg(b.ep, &rm, FI_TRIGGER));
	REQUIRE(!fi_tsendmsg(a.ep, &sm, FI_TRIGGER));
	REQUIRE(!quiet(&a) && !quiet(&b)); /* nothing below 3 */
	REQUIRE(!fi_cntr_add(t, 1));
	REQUIRE(!wait_comp(&a, &e, NULL, &err) && e.op_context == &ts);
	REQUIRE(!wait_comp(&b, &e, NULL, &err) && e.op_context == &tr);
	REQUIRE(e.tag == 0x42 && (e.flags & FI_TAGGED) && rv == sv);
	return 0;
}

static int case_trigger(void)
{
	struct fid_cntr *t = cntr_new();
	int ret;

	REQUIRE(t);
	ret = trigger_steps(t) ?: trigger_tagged(t);
	fi_close(&t->fid);
	return ret;
}

/* Waits until @c counts @n (successes and errors: deferred work). @c is
 * bound to no endpoint: b's receive counter drives b's progress. */
static int cntr_reach(struct fid_cntr *c, uint64_t n)
{
	double end = now() + WAIT_SEC;

	while (fi_cntr_read(c) + fi_cntr_readerr(c) < n && now() < end)
		(void)fi_cntr_read(b.cntr);
	return fi_cntr_read(c) == n ? 0 : -1;
}

static int deferred_steps(struct fid_cntr *t, struct fid_cntr *done)
{
	uint32_t sv = 0x3333, pv = 0x4444, rv = 0, rd = 0;
	struct iovec siov = {&sv, 4}, riov = {&rd, 4};
	struct fi_op_msg sop = {.ep = a.ep, .msg = msg_of(&siov, b_at_a, &sv)},
			 rop = {.ep = b.ep,
				.msg = msg_of(&riov, FI_ADDR_UNSPEC, &rd)};
	struct fi_deferred_work ws = {.threshold = 1,
				      .triggering_cntr = t,
				      .completion_cntr = done,
				      .op_type = FI_OP_SEND},
				wr = ws;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	ws.op.msg = &sop;
	wr.threshold = 2;
	wr.op_type = FI_OP_RECV;
	wr.op.msg = &rop;
	REQUIRE(!fi_recv(b.ep, &rv, 4, NULL, FI_ADDR_UNSPEC, &rv));
	REQUIRE(!fi_control(&domain->fid, FI_QUEUE_WORK, &ws));
	REQUIRE(!fi_control(&domain->fid, FI_QUEUE_WORK, &wr));
	REQUIRE(!quiet(&b) && fi_cntr_read(done) == 0);
	REQUIRE(!fi_cntr_add(t, 1));
	REQUIRE(!wait_comp(&b, &e, NULL, &err) && e.op_context == &rv);
	REQUIRE(rv == sv && !cntr_reach(done, 1));
	/* the deferred receive waits for 2: this message is unexpected */
	REQUIRE(!fi_send(a.ep, &pv, 4, NULL, b_at_a, NULL) && !sent(&a));
	REQUIRE(!fi_cntr_add(t, 1));
	REQUIRE(!cntr_reach(done, 2) && rd == pv);
	REQUIRE(!quiet(&a) && !quiet(&b)); /* no CQ entries of theirs */
	return 0;
}

static int case_deferred(void)
{
	struct fid_cntr *t = cntr_new(), *done = cntr_new();
	int ret = t && done ? deferred_steps(t, done) : -1;

	if (t)
		fi_close(&t->fid);
	if (done)
		fi_close(&done->fid);
	REQUIRE(!ret);
	return 0;
}

static int fence_steps(struct fid_cntr *t)
{
	struct fi_triggered_context t1 = at(t, 1), t2 = at(t, 1);
	uint32_t v[3] = {0x5551, 0x5552, 0x5553}, r[3] = {0};
	struct iovec iov[3] = {{&v[0], 4}, {&v[1], 4}, {&v[2], 4}};
	struct fi_msg m0 = msg_of(&iov[0], b_at_a, &v[0]),
		      m1 = msg_of(&iov[1], b_at_a, &t1),
		      m2 = msg_of(&iov[2], b_at_a, &t2);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int i;

	for (i = 0; i < 3; i++)
		REQUIRE(!fi_recv(b.ep, &r[i], 4, NULL, FI_ADDR_UNSPEC, &r[i]));
	REQUIRE(!fi_sendmsg(a.ep, &m0, FI_FENCE | FI_COMPLETION));
	REQUIRE(!wait_comp(&a, &e, NULL, &err) && e.op_context == &v[0]);
	REQUIRE(!wait_comp(&b, &e, NULL, &err) && r[0] == v[0]);
	REQUIRE(!fi_sendmsg(a.ep, &m1, FI_TRIGGER));
	REQUIRE(!fi_sendmsg(a.ep, &m2, FI_TRIGGER | FI_FENCE));
	REQUIRE(!quiet(&b));
	REQUIRE(!fi_cntr_add(t, 1));
	for (i = 1; i < 3; i++) {
		REQUIRE(!wait_comp(&b, &e, NULL, &err));
		REQUIRE(e.op_context == &r[i] && r[i] == v[i]);
	}
	REQUIRE(!wait_comp(&a, &e, NULL, &err) && e.op_context == &t1);
	REQUIRE(!wait_comp(&a, &e, NULL, &err) && e.op_context == &t2);
	return 0;
}

static int case_fence(void)
{
	struct fid_cntr *t = cntr_new();
	int ret;

	REQUIRE(t);
	ret = fence_steps(t);
	fi_close(&t->fid);
	return ret;
}

/* How many threads of ours are named @name; -1 if none says "tcp-". */
static int named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *t;
	char path[300], comm[32];
	int n = 0;
	FILE *f;

	if (!d)
		return 0;
	while ((t = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 t->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			if (!strncmp(comm, "tcp-", 4))
				n = -1;
			else if (n >= 0 && !strcmp(comm, name))
				n++;
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

/* A thread names itself once it runs: @want of them within WAIT_SEC. */
static bool names_settle(const char *name, int want)
{
	double end = now() + WAIT_SEC;
	int n;

	while ((n = named(name)) >= 0 && n < want && now() < end)
		usleep(1000);
	if (n != want)
		fprintf(stderr,
			"  %d threads named %s, not %d (-1: one named tcp-*)\n",
			n, name, want);
	return n == want;
}

static int case_names(const struct cfg *cfg)
{
	struct fi_info *hints, *rdm = NULL;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	int ok;

	if (cfg->progress != FI_PROGRESS_AUTO)
		return 0;
	REQUIRE(names_settle("sockets-dgram", 3)); /* a, b and c's */
	hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_RDM;
	REQUIRE(!fi_getinfo(VER, NULL, NULL, 0, hints, &rdm));
	fi_freeinfo(hints);
	REQUIRE(!fi_fabric(rdm->fabric_attr, &fab, NULL));
	REQUIRE(!fi_domain(fab, rdm, &dom, NULL));
	REQUIRE(!fi_av_open(dom, &av_attr, &av, NULL));
	REQUIRE(!fi_cq_open(dom, &cq_attr, &cq, NULL));
	REQUIRE(!fi_endpoint(dom, rdm, &ep, NULL));
	REQUIRE(!fi_ep_bind(ep, &av->fid, 0));
	REQUIRE(!fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	REQUIRE(!fi_enable(ep));
	ok = names_settle("sockets-prog", 1);
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	fi_freeinfo(rdm);
	REQUIRE(ok);
	return 0;
}

static int run(const struct cfg *cfg)
{
	int ret = setup(cfg);

	if (ret == -FI_ENODATA && cfg->format == FI_SOCKADDR_IN6) {
		teardown();
		return 1; /* no IPv6 loopback here */
	}
	if (!ret)
		ret = case_attr() ?: case_bounds() ?: case_tagged() ?:
		      case_multi() ?: case_source() ?: case_trunc() ?:
		      case_garbage(cfg) ?: case_errors() ?: case_trigger() ?:
		      case_deferred() ?: case_fence() ?: case_empty(cfg) ?:
		      case_names(cfg);
	teardown();
	return ret;
}

int main(void)
{
	static const char *progress[] = {"", "auto", "manual"};
	struct fi_info *hints = fi_allocinfo(), *probe = NULL;
	uint32_t formats[] = {FI_SOCKADDR_IN, FI_SOCKADDR_IN6};
	enum fi_av_type avs[] = {FI_AV_MAP, FI_AV_TABLE};
	enum fi_progress progs[] = {FI_PROGRESS_MANUAL, FI_PROGRESS_AUTO};
	int f, v, p, ret;

	setvbuf(stdout, NULL, _IONBF, 0);
	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_DGRAM;
	ret = fi_getinfo(VER, NULL, NULL, 0, hints, &probe);
	fi_freeinfo(hints);
	fi_freeinfo(probe);
	if (ret) {
		printf("SKIP: sockets offers no FI_EP_DGRAM (%d)\n", ret);
		return 77;
	}
	for (f = 0; f < 2; f++)
		for (v = 0; v < 2; v++)
			for (p = 0; p < 2; p++) {
				struct cfg cfg = {formats[f], avs[v], progs[p]};
				const char *what = f ? "ipv6" : "ipv4";

				ret = run(&cfg);
				printf("%s: %s %s %s\n",
				       ret > 0 ? "SKIP"
				       : ret   ? "FAIL"
					       : "PASS",
				       what, v ? "table" : "map",
				       progress[progs[p]]);
			}
	return failed;
}
