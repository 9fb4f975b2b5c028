/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * coll_edge.c - the collective engine at its edges, through the public
 * API, with two endpoints A and B of one provider in this process (each
 * on its own domain, whose AV names A 0 and B 1), progressed by polling
 * both:
 *
 *  align     an allreduce whose result is misaligned for its datatype
 *            is refused at the post (-FI_EINVAL); the group stays
 *            usable (a barrier of both completes)
 *  count     a count past fi_query_collective's datatype_attr.count
 *            answers -FI_EMSGSIZE
 *  flags     fi_barrier2 with a flag no collective takes (the library's
 *            own bits included) answers -FI_EINVAL; with FI_COMPLETION
 *            it meets the other side's fi_barrier
 *  msgcount  fi_collectivemsg whose resultv[0].count is smaller than
 *            what the allreduce writes answers -FI_EINVAL
 *  dup       an AV set naming one endpoint twice (two fi_addrs of one
 *            address) is refused at the join (-FI_EINVAL)
 *  inflight  both join; A closes its group while its join hello is in
 *            flight (B does not progress meanwhile): the close returns
 *            at once, and the late completion (B answers afterwards)
 *            finds its memory alive (ASan or valgrind see the
 *            difference); both join and meet again after
 *  cntrwait  (FI_PROGRESS_AUTO) each side posts a barrier and waits in
 *            fi_cntr_wait on its transmit counter: both return within
 *            a fraction of the timeout
 *  busy      closing an endpoint with a joined group answers -FI_EBUSY;
 *            after fi_close of the group it closes
 *  joinlate  (only when named: it takes 31 s) both join, neither looks
 *            at anything for 31 s, then both progress: the join's 30 s
 *            count from its first progress, so it completes
 *
 * Usage: coll_edge PROVIDER [auto|manual [CASE]]. One line per case; exit
 * 0 when all
 * passed, 77 when the provider offers no FI_COLLECTIVE.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "../tcp/tcp_test.h"

#define VER	FI_VERSION(1, 17)
#define WAIT_MS 20000 /* what a join or barrier may take on a loaded host */

struct side {
	struct fid_domain *dom; /* its own: no progress of the other's */
	struct fid_av *av;	/* A is 0, B is 1 */
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_cntr *tx;
	struct fid_mc *mc;
	int joined, join_err;
	int done, err; /* completions of the context below, errors */
	int ctx;
};

static struct {
	const char *prov;
	bool autop;
	struct fi_info *info;
	struct fid_fabric *fab;
	struct side s[2];
} t;

static void poll_side(struct side *s)
{
	struct fi_cq_entry e;
	struct fi_cq_err_entry ce;
	struct fi_eq_err_entry ee;
	struct fi_eq_entry ev;
	uint32_t type;
	ssize_t n;

	while ((n = fi_cq_read(s->cq, &e, 1)) == 1) {
		if (e.op_context == &s->ctx)
			s->done++;
	}
	if (n == -FI_EAVAIL) {
		memset(&ce, 0, sizeof(ce));
		if (fi_cq_readerr(s->cq, &ce, 0) == 1)
			s->err = ce.err ? ce.err : -1;
	}
	n = fi_eq_read(s->eq, &type, &ev, sizeof(ev), 0);
	if (n > 0 && type == FI_JOIN_COMPLETE)
		s->joined++;
	if (n == -FI_EAVAIL) {
		memset(&ee, 0, sizeof(ee));
		if (fi_eq_readerr(s->eq, &ee, 0) > 0)
			s->join_err = ee.err ? ee.err : -1;
	}
}

static void poll_both(void)
{
	poll_side(&t.s[0]);
	poll_side(&t.s[1]);
}

static int side_open(struct side *s)
{
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT,
				     .wait_obj = FI_WAIT_UNSPEC};
	struct fi_cntr_attr cntr_attr = {.events = FI_CNTR_EVENTS_COMP,
					 .wait_obj = FI_WAIT_UNSPEC};

	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};

	if (fi_domain(t.fab, t.info, &s->dom, NULL) ||
	    fi_av_open(s->dom, &av_attr, &s->av, NULL) ||
	    fi_endpoint(s->dom, t.info, &s->ep, NULL) ||
	    fi_eq_open(t.fab, &eq_attr, &s->eq, NULL) ||
	    fi_cq_open(s->dom, &cq_attr, &s->cq, NULL) ||
	    fi_cntr_open(s->dom, &cntr_attr, &s->tx, NULL))
		return -1;
	if (fi_ep_bind(s->ep, &s->eq->fid, 0) ||
	    fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(s->ep, &s->tx->fid, FI_SEND) ||
	    fi_ep_bind(s->ep, &s->av->fid, 0))
		return -1;
	return fi_enable(s->ep);
}

static void side_close(struct side *s)
{
	if (s->mc)
		fi_close(&s->mc->fid);
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	if (s->tx)
		fi_close(&s->tx->fid);
	if (s->eq)
		fi_close(&s->eq->fid);
	if (s->av)
		fi_close(&s->av->fid);
	if (s->dom)
		fi_close(&s->dom->fid);
	memset(s, 0, sizeof(*s));
}

static int setup(void)
{
	struct fi_info *h = fi_allocinfo();
	bool net = strcmp(t.prov, "shm");
	char name[256];
	size_t len;
	fi_addr_t a;
	int i, j, ret;

	h->fabric_attr->prov_name = strdup(t.prov);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_COLLECTIVE;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	if (t.autop)
		h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	ret = fi_getinfo(VER, net ? "127.0.0.1" : NULL, net ? "0" : NULL,
			 net ? FI_SOURCE : 0, h, &t.info);
	fi_freeinfo(h);
	if (ret)
		return ret;
	if (!(t.info->caps & FI_COLLECTIVE))
		return -FI_ENODATA;
	if (fi_fabric(t.info->fabric_attr, &t.fab, NULL))
		return -1;
	for (i = 0; i < 2; i++) {
		if (side_open(&t.s[i]))
			return -1;
	}
	for (i = 0; i < 2; i++) {
		len = sizeof(name);
		if (fi_getname(&t.s[i].ep->fid, name, &len))
			return -1;
		for (j = 0; j < 2; j++) {
			if (fi_av_insert(t.s[j].av, name, 1, &a, 0, NULL) !=
				    1 ||
			    a != (fi_addr_t)i)
				return -1;
		}
	}
	return 0;
}

static void teardown(void)
{
	side_close(&t.s[0]);
	side_close(&t.s[1]);
	if (t.fab)
		fi_close(&t.fab->fid);
	fi_freeinfo(t.info);
	t.fab = NULL;
	t.info = NULL;
}

/* The set {A, B} of @s's AV. */
static struct fid_av_set *set_ab(struct side *s)
{
	struct fi_av_set_attr attr = {
		.start_addr = 0, .end_addr = 1, .stride = 1};
	struct fid_av_set *set;

	return fi_av_set(s->av, &attr, &set, NULL) ? NULL : set;
}

/* @s joins {A, B} (the set may go once the join was called). */
static int join_post(struct side *s)
{
	struct fid_av_set *set = set_ab(s);
	int ret;

	if (!set)
		return -1;
	s->joined = s->join_err = 0;
	ret = fi_join_collective(s->ep, FI_ADDR_NOTAVAIL, set, 0, &s->mc, s);
	fi_close(&set->fid);
	return ret;
}

/* Both sides join {A, B}, look at nothing for @idle_s seconds, then
 * progress: 0 once both saw FI_JOIN_COMPLETE. */
static int join_both(unsigned idle_s)
{
	uint64_t end;
	int rc = -1;

	CHECK(!join_post(&t.s[0]) && !join_post(&t.s[1]), "join");
	if (idle_s)
		sleep(idle_s);
	for (end = now_ms() + WAIT_MS; !(t.s[0].joined && t.s[1].joined);) {
		CHECK(!t.s[0].join_err && !t.s[1].join_err,
		      "join failed: %d %d", t.s[0].join_err, t.s[1].join_err);
		CHECK(now_ms() < end, "join not complete");
		poll_both();
	}
	rc = 0;
out:
	return rc;
}

static void leave_both(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (t.s[i].mc)
			fi_close(&t.s[i].mc->fid);
		t.s[i].mc = NULL;
	}
}

/* Both sides through one barrier: 0 when both completed without error. */
static int barrier_both(void)
{
	uint64_t end = now_ms() + WAIT_MS;
	int i, rc = -1;

	for (i = 0; i < 2; i++) {
		t.s[i].done = t.s[i].err = 0;
		CHECK(!fi_barrier(t.s[i].ep, fi_mc_addr(t.s[i].mc),
				  &t.s[i].ctx),
		      "barrier %d", i);
	}
	while (t.s[0].done + t.s[1].done < 2) {
		CHECK(!t.s[0].err && !t.s[1].err, "barrier failed: %d %d",
		      t.s[0].err, t.s[1].err);
		CHECK(now_ms() < end, "barrier not complete");
		poll_both();
	}
	rc = 0;
out:
	return rc;
}

/*
 * A post of A that @post makes is refused with @want, and leaves the
 * group usable: a barrier of both completes.
 */
static int refused(ssize_t (*post)(struct side *), ssize_t want,
		   const char *what)
{
	ssize_t ret;
	int rc = -1;

	CHECK(!join_both(0), "join");
	ret = post(&t.s[0]);
	CHECK(ret == want, "%s: %zd, not %zd", what, ret, want);
	CHECK(!barrier_both(), "group unusable after a refused post");
	rc = 0;
out:
	leave_both();
	return rc;
}

static uint64_t in[4] = {1, 2, 3, 4}, out[5];

static ssize_t post_misaligned(struct side *a)
{
	return fi_allreduce(a->ep, in, 1, NULL, (char *)out + 1, NULL,
			    fi_mc_addr(a->mc), FI_UINT64, FI_SUM, 0, &a->ctx);
}

static ssize_t post_oversized(struct side *a)
{
	struct fi_collective_attr attr = {.op = FI_SUM, .datatype = FI_UINT64};

	if (fi_query_collective(a->dom, FI_ALLREDUCE, &attr, 0))
		return 1;
	return fi_allreduce(a->ep, in, attr.datatype_attr.count + 1, NULL, out,
			    NULL, fi_mc_addr(a->mc), FI_UINT64, FI_SUM, 0,
			    &a->ctx);
}

static ssize_t post_library_bit(struct side *a)
{
	return fi_barrier2(a->ep, fi_mc_addr(a->mc), 1ULL << 60, &a->ctx);
}

static ssize_t post_query_flag(struct side *a)
{
	return fi_barrier2(a->ep, fi_mc_addr(a->mc), FI_SCATTER, &a->ctx);
}

/* collective->msg: 4 elements in, room for 2 out */
static ssize_t post_short_result(struct side *a)
{
	struct fi_ioc iov = {in, 4}, rv = {out, 2};
	struct fi_msg_collective m = {.msg_iov = &iov,
				      .iov_count = 1,
				      .coll_addr = fi_mc_addr(a->mc),
				      .datatype = FI_UINT64,
				      .op = FI_SUM,
				      .coll = FI_ALLREDUCE,
				      .context = &a->ctx};

	return a->ep->collective->msg(a->ep, &m, &rv, NULL, 1, 0);
}

static int case_align(void)
{
	return refused(post_misaligned, -FI_EINVAL, "misaligned result");
}

static int case_count(void)
{
	return refused(post_oversized, -FI_EMSGSIZE, "count past the limit");
}

static int case_msgcount(void)
{
	return refused(post_short_result, -FI_EINVAL, "result of 2 for 4");
}

static int case_flags(void)
{
	struct side *a = &t.s[0], *b = &t.s[1];
	uint64_t end = now_ms() + WAIT_MS;
	int rc = -1;

	CHECK(!refused(post_library_bit, -FI_EINVAL, "a library bit") &&
		      !refused(post_query_flag, -FI_EINVAL, "FI_SCATTER"),
	      "flags");
	CHECK(!join_both(0), "join");
	a->done = b->done = a->err = b->err = 0;
	CHECK(!fi_barrier2(a->ep, fi_mc_addr(a->mc), FI_COMPLETION, &a->ctx),
	      "fi_barrier2, FI_COMPLETION");
	CHECK(!fi_barrier(b->ep, fi_mc_addr(b->mc), &b->ctx), "fi_barrier");
	while (a->done + b->done < 2) {
		CHECK(!a->err && !b->err, "barrier failed: %d %d", a->err,
		      b->err);
		CHECK(now_ms() < end, "barrier not complete");
		poll_both();
	}
	rc = 0;
out:
	leave_both();
	return rc;
}

static int case_dup(void)
{
	struct fid_av_set *set = set_ab(&t.s[0]);
	char name[256];
	size_t len = sizeof(name);
	fi_addr_t dup = FI_ADDR_NOTAVAIL;
	struct fid_mc *mc = NULL;
	int ret, rc = -1;

	CHECK(set, "av set");
	CHECK(!fi_getname(&t.s[1].ep->fid, name, &len) &&
		      fi_av_insert(t.s[0].av, name, 1, &dup, 0, NULL) == 1,
	      "second fi_addr of B");
	if (dup == 1) {
		printf("  (the AV gives one address one fi_addr)\n");
		rc = 0;
		goto out;
	}
	CHECK(!fi_av_set_insert(set, dup), "set insert");
	ret = fi_join_collective(t.s[0].ep, FI_ADDR_NOTAVAIL, set, 0, &mc,
				 NULL);
	CHECK(ret == -FI_EINVAL, "join of a set with B twice: %d", ret);
	rc = 0;
out:
	if (mc)
		fi_close(&mc->fid);
	if (dup != FI_ADDR_NOTAVAIL && dup != 1)
		fi_av_remove(t.s[0].av, &dup, 1, 0);
	if (set)
		fi_close(&set->fid);
	return rc;
}

static int case_inflight(void)
{
	struct side *a = &t.s[0], *b = &t.s[1];
	uint64_t start, took, end;
	int rc = -1;

	/* both join (members join the same groups in the same order) */
	CHECK(!join_post(a) && !join_post(b), "join");
	/* A's hellos go out; B is not looking */
	for (end = now_ms() + 50; now_ms() < end;)
		poll_side(a);
	start = now_ms();
	CHECK(!fi_close(&a->mc->fid), "close");
	a->mc = NULL;
	took = now_ms() - start;
	CHECK(took < 2000, "close took %llu ms", (unsigned long long)took);
	CHECK(!fi_close(&b->mc->fid), "close");
	b->mc = NULL;
	/* B answers now, A sees the completions */
	for (end = now_ms() + 300; now_ms() < end;)
		poll_both();
	/* and both can still join and meet */
	CHECK(!join_both(0), "join after");
	CHECK(!barrier_both(), "barrier after");
	rc = 0;
out:
	leave_both();
	return rc;
}

struct waiter {
	struct side *s;
	int ret;
	uint64_t took;
};

static void *cntr_waiter(void *p)
{
	struct waiter *w = p;
	uint64_t start = now_ms(), before = fi_cntr_read(w->s->tx);

	w->ret = (int)fi_barrier(w->s->ep, fi_mc_addr(w->s->mc), &w->s->ctx);
	if (!w->ret)
		w->ret = fi_cntr_wait(w->s->tx, before + 1, 5000);
	w->took = now_ms() - start;
	return NULL;
}

static int case_cntrwait(void)
{
	struct waiter w[2] = {{&t.s[0]}, {&t.s[1]}};
	pthread_t th[2];
	int i, rc = -1;

	CHECK(!join_both(0), "join");
	/* the joins' own writes settle */
	CHECK(!barrier_both(), "first barrier");
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, cntr_waiter, &w[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 2; i++)
		CHECK(!w[i].ret && w[i].took < 2500,
		      "side %d: fi_cntr_wait %d after %llu ms", i, w[i].ret,
		      (unsigned long long)w[i].took);
	rc = 0;
out:
	leave_both();
	return rc;
}

static int case_busy(void)
{
	struct side *a = &t.s[0];
	int ret = -FI_EBUSY, rc = -1;

	CHECK(!join_both(0), "join");
	ret = fi_close(&a->ep->fid);
	CHECK(ret == -FI_EBUSY, "endpoint close with a group: %d", ret);
	CHECK(!barrier_both(), "group unusable after the refused close");
	leave_both();
	CHECK(!fi_close(&a->ep->fid), "endpoint close after the group's");
	a->ep = NULL;
	rc = 0;
out:
	if (rc && !ret)
		a->ep = NULL; /* closed: its fid_mc dangles, do not touch */
	leave_both();
	return rc;
}

static int case_joinlate(void)
{
	int rc = -1;

	CHECK(!join_both(31), "join");
	CHECK(!barrier_both(), "barrier");
	rc = 0;
out:
	leave_both();
	return rc;
}

static int failed;
static const char *only; /* the one case to run, or NULL */

static void run(const char *name, int (*fn)(void))
{
	int rc;

	if (only && strcmp(only, name))
		return;
	rc = fn();

	printf("%s %s\n", rc ? "FAIL" : "PASS", name);
	fflush(stdout);
	failed |= rc;
}

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PROVIDER [auto|manual [CASE]]\n",
			argv[0]);
		return 2;
	}
	t.prov = argv[1];
	t.autop = argc > 2 && !strcmp(argv[2], "auto");
	only = argc > 3 ? argv[3] : NULL;
	ret = setup();
	if (ret == -FI_ENODATA) {
		printf("SKIP %s: no FI_COLLECTIVE%s\n", t.prov,
		       t.autop ? " with FI_PROGRESS_AUTO" : "");
		teardown();
		return 77;
	}
	if (ret) {
		printf("FAIL setup: %d\n", ret);
		teardown();
		return 1;
	}
	run("align", case_align);
	run("count", case_count);
	run("flags", case_flags);
	run("msgcount", case_msgcount);
	run("dup", case_dup);
	run("inflight", case_inflight);
	if (t.autop)
		run("cntrwait", case_cntrwait);
	run("busy", case_busy);
	if (only)
		run("joinlate", case_joinlate);
	teardown();
	return failed ? 1 : 0;
}
