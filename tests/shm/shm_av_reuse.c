/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_av_reuse.c - address reuse across processes, through the public API:
 *
 * reuse: A talks to B, removes B from its AV and inserts C, which gets
 * B's old fi_addr. Sends to that fi_addr reach C and never B; a directed
 * receive for it matches C's message, not a late one B sent after the
 * removal; FI_SOURCE reports C as that fi_addr and B's late message as
 * FI_ADDR_NOTAVAIL.
 *
 * slot: D sends A an unexpected message and closes, freeing its slot in
 * A's peer table; E, inserted in A's AV, takes the slot over and sends
 * too. A directed receive for E gets E's message, and D's is reported
 * from FI_ADDR_NOTAVAIL, never as E's.
 *
 * Every role is a child process (forked before any libfabric call) under
 * alarm(); they meet through a MAP_SHARED area. Exit 0 when all passed.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define NAME_LEN 64
#define TMO_MS	 10000

enum role { A1, A2, B, C, D, E, NROLES };

enum flag {
	F_B_GOT,  /* B received A's message */
	F_B_LATE, /* A: B, send your late message */
	F_B_SENT, /* B sent it */
	F_C_SEND, /* A: C, send */
	F_C_GOT,  /* C received A's message, checked */
	F_A_DONE, /* A finished "reuse": B and C may close */
	F_D_SENT,
	F_D_CLOSE, /* A consumed D's message: D may close */
	F_D_GONE,
	F_E_SEND,
	F_E_SENT,
	F_NFLAGS,
};

struct shared {
	char names[NROLES][NAME_LEN];
	_Atomic int ready[NROLES];
	_Atomic int flag[F_NFLAGS];
	_Atomic int fails;
};

struct node {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *cq;
};

static struct shared *sh;
static const char *who = "parent";
static int my_fails; /* this process's: its exit status */

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL [%s]: ", who);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	my_fails++;
	atomic_fetch_add(&sh->fails, 1);
}

#define DIE(...)                                                               \
	do {                                                                   \
		fail(__VA_ARGS__);                                             \
		_exit(1);                                                      \
	} while (0)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void wait_flag(int f)
{
	double end = now_ms() + TMO_MS;

	while (!atomic_load(&sh->flag[f])) {
		if (now_ms() > end)
			DIE("timed out waiting for flag %d", f);
		usleep(100);
	}
}

static void set_flag(int f)
{
	atomic_store(&sh->flag[f], 1);
}

static void node_open(struct node *n, enum role r)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	size_t len = NAME_LEN;
	int ret;

	hints->caps = FI_MSG | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("shm");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &n->info);
	fi_freeinfo(hints);
	if (ret)
		DIE("fi_getinfo: %d", ret);
	ret = fi_fabric(n->info->fabric_attr, &n->fab, NULL) ?:
	      fi_domain(n->fab, n->info, &n->dom, NULL) ?:
	      fi_av_open(n->dom, &aa, &n->av, NULL) ?:
	      fi_endpoint(n->dom, n->info, &n->ep, NULL) ?:
	      fi_cq_open(n->dom, &ca, &n->cq, NULL) ?:
	      fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) ?:
	      fi_ep_bind(n->ep, &n->av->fid, 0) ?:
	      fi_enable(n->ep) ?:
	      fi_getname(&n->ep->fid, sh->names[r], &len);
	if (ret)
		DIE("open: %d", ret);
	atomic_store(&sh->ready[r], 1);
}

static void node_close(struct node *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->cq->fid);
	fi_close(&n->av->fid);
	fi_close(&n->dom->fid);
	fi_close(&n->fab->fid);
	fi_freeinfo(n->info);
}

static fi_addr_t insert(struct node *n, enum role r)
{
	double end = now_ms() + TMO_MS;
	fi_addr_t fa;

	while (!atomic_load(&sh->ready[r])) {
		if (now_ms() > end)
			DIE("peer %d never came up", r);
		usleep(100);
	}
	if (fi_av_insert(n->av, sh->names[r], 1, &fa, 0, NULL) != 1)
		DIE("insert of %d failed", r);
	return fa;
}

/* One completion within the timeout, with its source; errors are fatal. */
static void wait_comp(struct node *n, struct fi_cq_tagged_entry *e,
		      fi_addr_t *src)
{
	double end = now_ms() + TMO_MS;
	struct fi_cq_err_entry err;
	ssize_t ret;

	for (;;) {
		ret = fi_cq_readfrom(n->cq, e, 1, src);
		if (ret == 1)
			return;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(n->cq, &err, 0);
			DIE("completion error %d", err.err);
		}
		if (ret != -FI_EAGAIN)
			DIE("fi_cq_readfrom: %zd", ret);
		if (now_ms() > end)
			DIE("no completion");
	}
}

static void progress(struct node *n, int ms)
{
	struct fi_cq_tagged_entry e;
	double end = now_ms() + ms;

	while (now_ms() < end)
		if (fi_cq_read(n->cq, &e, 1) == 1)
			fail("unexpected completion %p", e.op_context);
}

static void send_msg(struct node *n, fi_addr_t to, uint64_t tag,
		     const char *msg)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	ssize_t ret;

	do {
		ret = fi_tsend(n->ep, msg, strlen(msg) + 1, NULL, to, tag,
			       (void *)msg);
		if (ret == -FI_EAGAIN)
			fi_cq_read(n->cq, NULL, 0);
	} while (ret == -FI_EAGAIN);
	if (ret)
		DIE("fi_tsend: %zd", ret);
	wait_comp(n, &e, &src);
	if (e.op_context != msg || !(e.flags & FI_SEND))
		DIE("send completion is not the send's");
}

/* Receives one tag-@tag message from @from; checks payload and source. */
static void recv_check(struct node *n, fi_addr_t from, uint64_t tag,
		       const char *want, fi_addr_t want_src)
{
	struct fi_cq_tagged_entry e;
	char buf[NAME_LEN];
	fi_addr_t src;

	memset(buf, 0, sizeof(buf));
	if (fi_trecv(n->ep, buf, sizeof(buf), NULL, from, tag, 0, buf))
		DIE("fi_trecv");
	wait_comp(n, &e, &src);
	if (e.op_context != buf)
		DIE("receive completion is not the receive's");
	if (strcmp(buf, want))
		fail("tag %lu from %lu: got \"%s\", want \"%s\"",
		     (unsigned long)tag, (unsigned long)from, buf, want);
	if (src != want_src)
		fail("\"%s\": source %lu, want %lu", buf, (unsigned long)src,
		     (unsigned long)want_src);
}

/* ------------------------------------------------------------------ */
/* reuse                                                                */

static void role_a1(void)
{
	struct node n;
	fi_addr_t fb, fc;

	node_open(&n, A1);
	fb = insert(&n, B);
	recv_check(&n, fb, 1, "B1", fb);
	send_msg(&n, fb, 2, "to B");
	wait_flag(F_B_GOT);

	if (fi_av_remove(n.av, &fb, 1, 0))
		DIE("fi_av_remove");
	fc = insert(&n, C);
	if (fc != fb)
		DIE("C got fi_addr %lu, not B's old %lu", (unsigned long)fc,
		    (unsigned long)fb);
	/* B, no longer in our AV, sends late: it sits unexpected here. */
	set_flag(F_B_LATE);
	wait_flag(F_B_SENT);
	progress(&n, 50);
	set_flag(F_C_SEND);
	recv_check(&n, fc, 3, "C3", fc);
	recv_check(&n, FI_ADDR_UNSPEC, 3, "B late", FI_ADDR_NOTAVAIL);
	send_msg(&n, fc, 4, "to C");
	wait_flag(F_C_GOT);
	set_flag(F_A_DONE);
	node_close(&n);
}

/*
 * Posts a receive for anything: 1 when it completed, 0 when @until was
 * set (and 100 ms more passed) first; @until < 0 waits for a message.
 */
static int drain(struct node *n, char *buf, size_t len, int until)
{
	double end = now_ms() + TMO_MS, grace = 0;
	struct fi_cq_tagged_entry e;

	memset(buf, 0, len);
	if (fi_trecv(n->ep, buf, len, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, buf))
		DIE("fi_trecv");
	for (;;) {
		if (fi_cq_read(n->cq, &e, 1) == 1 && e.op_context == buf)
			return 1;
		if (now_ms() > end)
			DIE("nothing received");
		if (until < 0)
			continue;
		if (!grace && atomic_load(&sh->flag[until]))
			grace = now_ms() + 100;
		if (grace && now_ms() > grace)
			break;
	}
	fi_cancel(&n->ep->fid, buf);
	return 0;
}

static void role_b(void)
{
	char buf[NAME_LEN];
	struct node n;
	fi_addr_t fa;

	node_open(&n, B);
	fa = insert(&n, A1);
	send_msg(&n, fa, 1, "B1");
	if (drain(&n, buf, sizeof(buf), -1) != 1 || strcmp(buf, "to B"))
		fail("B got \"%s\", want \"to B\"", buf);
	set_flag(F_B_GOT);
	wait_flag(F_B_LATE);
	send_msg(&n, fa, 3, "B late");
	set_flag(F_B_SENT);
	/* A's next message is C's: anything arriving here is a failure. */
	if (drain(&n, buf, sizeof(buf), F_A_DONE))
		fail("B received \"%s\" meant for C", buf);
	node_close(&n);
}

static void role_c(void)
{
	char buf[NAME_LEN];
	struct node n;
	fi_addr_t fa;

	node_open(&n, C);
	fa = insert(&n, A1);
	wait_flag(F_C_SEND);
	send_msg(&n, fa, 3, "C3");
	if (drain(&n, buf, sizeof(buf), -1) != 1 || strcmp(buf, "to C"))
		fail("C got \"%s\", want \"to C\"", buf);
	set_flag(F_C_GOT);
	wait_flag(F_A_DONE);
	node_close(&n);
}

/* ------------------------------------------------------------------ */
/* slot                                                                 */

static void role_a2(void)
{
	struct node n;
	fi_addr_t fe;

	node_open(&n, A2);
	wait_flag(F_D_SENT);
	progress(&n, 50); /* D's message: consumed, unexpected */
	set_flag(F_D_CLOSE);
	wait_flag(F_D_GONE);
	fe = insert(&n, E);
	set_flag(F_E_SEND);
	wait_flag(F_E_SENT);
	progress(&n, 50);
	recv_check(&n, fe, 9, "E9", fe);
	recv_check(&n, FI_ADDR_UNSPEC, 9, "D9", FI_ADDR_NOTAVAIL);
	node_close(&n);
}

static void role_d(void)
{
	struct node n;
	fi_addr_t fa;

	node_open(&n, D);
	fa = insert(&n, A2);
	send_msg(&n, fa, 9, "D9");
	set_flag(F_D_SENT);
	wait_flag(F_D_CLOSE);
	node_close(&n);
	set_flag(F_D_GONE);
}

static void role_e(void)
{
	struct node n;
	fi_addr_t fa;

	node_open(&n, E);
	fa = insert(&n, A2);
	wait_flag(F_E_SEND);
	send_msg(&n, fa, 9, "E9");
	set_flag(F_E_SENT);
	node_close(&n);
}

static void (*const roles[NROLES])(void) = {
	[A1] = role_a1, [A2] = role_a2, [B] = role_b,
	[C] = role_c,	[D] = role_d,	[E] = role_e,
};
static const char *const names[NROLES] = {"A1", "A2", "B", "C", "D", "E"};

int main(void)
{
	pid_t pids[NROLES];
	int i, st, bad = 0;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset(sh, 0, sizeof(*sh));
	for (i = 0; i < NROLES; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			who = names[i];
			alarm(30);
			roles[i]();
			_exit(my_fails ? 1 : 0);
		}
	}
	for (i = 0; i < NROLES; i++) {
		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			fprintf(stderr, "FAIL: %s exited badly (status %#x)\n",
				names[i], st);
			bad++;
		}
	}
	if (bad || atomic_load(&sh->fails)) {
		printf("shm_av_reuse: FAILED\n");
		return 1;
	}
	printf("shm_av_reuse: reuse and slot passed\n");
	return 0;
}
