/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_teardown.c - what tearing down peers must not lose, on tcp and
 * sockets over TCP (their same-host path off). In-process, loopback.
 *
 * Cases, each able to fail:
 *  av_remove    a small send completes (it was copied) while its
 *               connection is still being made; the sender removes the
 *               receiver's address at once: the receiver still gets the
 *               message, whole (the connection stays until it is written)
 *  remove_idle  A removes B's address while their connection is idle, and
 *               B, which still has A in its AV, sends to A before it has
 *               read that A is gone (as a peer that removed and inserted
 *               an address again would): the message reaches A's posted
 *               receive, whole. Closing the socket at the removal lost
 *               it; fi_av_xfer's removal test hung on that.
 *
 * One line per case and provider; exit status 0 when every case passed,
 * 77 when tcp is missing. TEARDOWN_ONLY=name runs one case. Every case
 * runs under an alarm: a hang fails the test instead of hanging make
 * check.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "tcp_net.h"
#include "tcp_test.h"

/* One completion on @cq, reading @other (may be NULL) meanwhile. */
static int cq_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		   struct fid_cq *other)
{
	struct fid_cq *all[2] = {other, NULL};

	return cq_wait_all(cq, e, all);
}

/* Two RDM endpoints of @prov over loopback; @manual: manual progress,
 * so that nobody reads a socket behind the test's back. */
struct pair {
	struct fi_info *hints;
	struct net n;
	struct rdm a, b;
};

static int pair_open(struct pair *p, const char *prov, bool manual)
{
	memset(p, 0, sizeof(*p));
	p->hints = hints_for(prov, FI_EP_RDM);
	if (!p->hints)
		return -1;
	if (manual) {
		p->hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
		p->hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	}
	if (net_open(&p->n, p->hints) || rdm_open(&p->n, &p->a) ||
	    rdm_open(&p->n, &p->b))
		return -1;
	return 0;
}

static void pair_close(struct pair *p)
{
	rdm_close(&p->a);
	rdm_close(&p->b);
	net_close(&p->n);
	fi_freeinfo(p->hints);
}

static int av_remove_of(const char *prov)
{
	struct fi_cq_tagged_entry e;
	struct pair p;
	char out[64], in[64];
	fi_addr_t to_b;
	int ret = -1, got;

	CHECK(!pair_open(&p, prov, false), "%s: endpoints", prov);
	CHECK(fi_av_insert(p.a.av, p.b.addr, 1, &to_b, 0, NULL) == 1, "av");
	memset(out, 'r', sizeof(out));
	memset(in, 0, sizeof(in));
	CHECK(!fi_trecv(p.b.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 7, 0, in),
	      "trecv");
	/* Only the sender progresses: the receiver has not answered its
	 * connection yet when the send completes. */
	CHECK(!fi_tsend(p.a.ep, out, sizeof(out), NULL, to_b, 7, out),
	      "%s: send", prov);
	got = cq_wait(p.a.cq, &e, NULL);
	CHECK(got == 1 && e.op_context == out, "%s: send completion: %d", prov,
	      got);
	CHECK(!fi_av_remove(p.a.av, &to_b, 1, 0), "%s: av_remove", prov);
	got = cq_wait(p.b.cq, &e, p.a.cq);
	CHECK(got == 1, "%s: the completed send never arrived (%d)", prov, got);
	CHECK(e.op_context == in && e.len == sizeof(in) && e.tag == 7 &&
		      !memcmp(in, out, sizeof(in)),
	      "%s: the message arrived damaged", prov);
	/* Nothing else completes on the sender (no late error). */
	CHECK(fi_cq_read(p.a.cq, &e, 1) == -FI_EAGAIN, "%s: sender CQ", prov);
	ret = 0;
out:
	pair_close(&p);
	return ret;
}

/* One message from @from to @to's posted receive, each progressing. */
static int exchange(struct rdm *from, fi_addr_t dest, struct rdm *to,
		    uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	char out[48], in[48];

	memset(out, (int)tag, sizeof(out));
	memset(in, 0, sizeof(in));
	if (fi_trecv(to->ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, tag, 0,
		     in) ||
	    fi_tsend(from->ep, out, sizeof(out), NULL, dest, tag, out) ||
	    cq_wait(from->cq, &e, to->cq) != 1 || e.op_context != out ||
	    cq_wait(to->cq, &e, from->cq) != 1 || e.op_context != in ||
	    memcmp(in, out, sizeof(in)))
		return -1;
	return 0;
}

static int remove_idle_of(const char *prov)
{
	struct fi_cq_tagged_entry e;
	struct pair p;
	char out[64], in[64];
	fi_addr_t to_a, to_b;
	int ret = -1, got, i;

	CHECK(!pair_open(&p, prov, true), "%s: endpoints", prov);
	CHECK(fi_av_insert(p.a.av, p.b.addr, 1, &to_b, 0, NULL) == 1 &&
		      fi_av_insert(p.b.av, p.a.addr, 1, &to_a, 0, NULL) == 1,
	      "av");
	CHECK(!exchange(&p.a, to_b, &p.b, 3), "%s: first message", prov);
	memset(out, 'i', sizeof(out));
	memset(in, 0, sizeof(in));
	CHECK(!fi_trecv(p.a.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 9, 0, in),
	      "trecv");
	CHECK(!fi_av_remove(p.a.av, &to_b, 1, 0), "%s: av_remove", prov);
	for (i = 0; i < 10; i++) /* A applies the removal */
		CHECK(fi_cq_read(p.a.cq, &e, 1) == -FI_EAGAIN, "%s: A's CQ",
		      prov);
	/* B writes before any progress of its own reads A's leaving. */
	CHECK(!fi_tsend(p.b.ep, out, sizeof(out), NULL, to_a, 9, out),
	      "%s: send", prov);
	got = cq_wait(p.b.cq, &e, NULL);
	CHECK(got == 1 && e.op_context == out, "%s: send completion: %d", prov,
	      got);
	got = cq_wait(p.a.cq, &e, p.b.cq);
	CHECK(got == 1, "%s: a completed send was lost (%d)", prov, got);
	CHECK(e.op_context == in && e.len == sizeof(in) && e.tag == 9 &&
		      !memcmp(in, out, sizeof(in)),
	      "%s: the message arrived damaged", prov);
	ret = 0;
out:
	pair_close(&p);
	return ret;
}

static const char *const provs[] = {"tcp", "sockets"};

struct tcase {
	const char *name;
	int (*fn)(const char *prov);
};

static const struct tcase cases[] = {
	{"av_remove", av_remove_of},
	{"remove_idle", remove_idle_of},
};

int main(void)
{
	const char *only = getenv("TEARDOWN_ONLY");
	int failures = 0;
	size_t i, j;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	/* Over TCP: peers in one process would take the same-host path. */
	setenv("FI_TCP_SHM", "0", 1);
	setenv("FI_SOCKETS_SHM", "0", 1);
	if (!have_prov("tcp")) {
		printf("SKIP: no tcp provider\n");
		return 77;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		for (j = 0; j < sizeof(provs) / sizeof(provs[0]); j++) {
			if (!have_prov(provs[j]))
				continue;
			alarm(60); /* a hang fails the test */
			ret = cases[i].fn(provs[j]);
			alarm(0);
			if (ret)
				failures++;
			printf("%s %s %s\n", ret ? "FAIL" : "PASS",
			       cases[i].name, provs[j]);
			fflush(stdout);
		}
	}
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
