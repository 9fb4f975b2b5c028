/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_cq.c - unit tests of util_cq: formats, read/readfrom/readerr with the
 * err_data rules, overrun, sread timeouts, wait conditions, signal, FD wait
 * objects with trywait, manual progress and concurrent writers, a read that
 * looks again after giving the core away, and the lockless CQ of an
 * FI_THREAD_DOMAIN domain.
 */
#include <poll.h>
#include <pthread.h>

#include "ofi_yield.h"
#include "util_common.h"

static struct fid_cq *cq_open(struct util_env *env, enum fi_cq_format fmt,
			      enum fi_wait_obj wait, size_t size)
{
	struct fi_cq_attr attr = {
		.format = fmt,
		.wait_obj = wait,
		.size = size,
	};
	struct fid_cq *cq;

	assert_int_equal(
		ofi_cq_open(&env->domain->domain_fid, &attr, &cq, NULL), 0);
	return cq;
}

static struct util_cq *ucq(struct fid_cq *cq)
{
	return container_of(cq, struct util_cq, cq_fid);
}

static void test_formats(void **state)
{
	struct util_env env;
	struct fi_cq_tagged_entry t;
	struct fi_cq_data_entry d;
	struct fi_cq_msg_entry m;
	struct fi_cq_entry c[2];
	struct fid_cq *cq;
	struct fi_cq_attr bad = {.format = 42};

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	assert_int_equal(ofi_cq_open(&env.domain->domain_fid, &bad, &cq, NULL),
			 -FI_EINVAL);

	cq = cq_open(&env, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0);
	ofi_cq_write(ucq(cq), (void *)1, FI_RECV | FI_TAGGED, 10, (void *)2, 3,
		     4);
	assert_int_equal(fi_cq_read(cq, &t, 1), 1);
	assert_ptr_equal(t.op_context, (void *)1);
	assert_int_equal(t.flags, FI_RECV | FI_TAGGED);
	assert_int_equal(t.len, 10);
	assert_ptr_equal(t.buf, (void *)2);
	assert_int_equal(t.data, 3);
	assert_int_equal(t.tag, 4);
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = cq_open(&env, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0);
	ofi_cq_write(ucq(cq), (void *)5, FI_RECV, 6, (void *)7, 8, 9);
	assert_int_equal(fi_cq_read(cq, &d, 1), 1);
	assert_ptr_equal(d.op_context, (void *)5);
	assert_int_equal(d.data, 8);
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = cq_open(&env, FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0);
	ofi_cq_write(ucq(cq), (void *)5, FI_SEND, 6, NULL, 0, 0);
	assert_int_equal(fi_cq_read(cq, &m, 1), 1);
	assert_int_equal(m.len, 6);
	assert_int_equal(m.flags, FI_SEND);
	assert_int_equal(fi_close(&cq->fid), 0);

	/* UNSPEC resolves to the context format: entries are 8 bytes apart. */
	cq = cq_open(&env, FI_CQ_FORMAT_UNSPEC, FI_WAIT_NONE, 0);
	assert_int_equal(ucq(cq)->entry_size, sizeof(struct fi_cq_entry));
	ofi_cq_write(ucq(cq), (void *)11, 0, 0, NULL, 0, 0);
	ofi_cq_write(ucq(cq), (void *)12, 0, 0, NULL, 0, 0);
	assert_int_equal(fi_cq_read(cq, c, 2), 2);
	assert_ptr_equal(c[0].op_context, (void *)11);
	assert_ptr_equal(c[1].op_context, (void *)12);
	assert_int_equal(fi_cq_read(cq, c, 1), -FI_EAGAIN);
	assert_int_equal(fi_cq_read(cq, NULL, 1), -FI_EINVAL);
	assert_string_equal(fi_cq_strerror(cq, FI_ETRUNC, NULL, NULL, 0),
			    fi_strerror(FI_ETRUNC));
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

static void test_errors(void **state)
{
	struct util_env env;
	struct fi_cq_err_entry in = {
		.op_context = (void *)9,
		.err = FI_ETRUNC,
		.olen = 3,
		.prov_errno = -7,
	};
	struct fi_cq_err_entry out;
	struct fi_cq_entry c;
	char blob[8] = "abcdefg", small[4];
	fi_addr_t src;
	struct fid_cq *cq;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	assert_int_equal(fi_cq_readerr(cq, &out, 0), -FI_EAGAIN);
	in.err_data = blob;
	in.err_data_size = sizeof(blob);
	ofi_cq_write_src(ucq(cq), (void *)1, 0, 0, NULL, 0, 0, 42);
	assert_int_equal(ofi_cq_write_error(ucq(cq), &in), 0);
	ofi_cq_write(ucq(cq), (void *)2, 0, 0, NULL, 0, 0);
	in.err = 0;
	assert_int_equal(ofi_cq_write_error(ucq(cq), &in), -FI_EINVAL);

	/* Entries ahead of the error come first, with their source. */
	assert_int_equal(fi_cq_readfrom(cq, &c, 4, &src), 1);
	assert_ptr_equal(c.op_context, (void *)1);
	assert_int_equal(src, 42);
	assert_int_equal(fi_cq_read(cq, &c, 1), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(cq, &out, 1), -FI_EINVAL);

	/* Caller's buffer smaller than the data: copy what fits. */
	memset(&out, 0, sizeof(out));
	out.err_data = small;
	out.err_data_size = sizeof(small);
	assert_int_equal(fi_cq_readerr(cq, &out, 0), 1);
	assert_int_equal(out.err, FI_ETRUNC);
	assert_int_equal(out.olen, 3);
	assert_ptr_equal(out.op_context, (void *)9);
	assert_ptr_equal(out.err_data, small);
	assert_int_equal(out.err_data_size, sizeof(small));
	assert_memory_equal(small, "abcd", 4);
	assert_int_equal(fi_cq_readerr(cq, &out, 0), -FI_EAGAIN);
	assert_int_equal(fi_cq_readfrom(cq, &c, 1, &src), 1);
	assert_int_equal(src, FI_ADDR_NOTAVAIL);

	/* No caller buffer: the CQ lends its own copy. */
	in.err = FI_EIO;
	assert_int_equal(ofi_cq_write_error(ucq(cq), &in), 0);
	memset(&out, 0, sizeof(out));
	assert_int_equal(fi_cq_readerr(cq, &out, 0), 1);
	assert_non_null(out.err_data);
	assert_ptr_not_equal(out.err_data, blob);
	assert_int_equal(out.err_data_size, sizeof(blob));
	assert_memory_equal(out.err_data, blob, sizeof(blob));
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

static void test_errors_old_api(void **state)
{
	struct util_env env;
	struct fi_cq_err_entry in = {.err = FI_EIO};
	struct fi_cq_err_entry out;
	char blob[4] = "xyz", user[4];
	struct fid_cq *cq;

	util_env_open(&env, FI_VERSION(1, 4), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	in.err_data = blob;
	in.err_data_size = sizeof(blob);
	assert_int_equal(ofi_cq_write_error(ucq(cq), &in), 0);
	/* 1.4 callers have no err_data_size: it must stay untouched. */
	out.err_data = user;
	out.err_data_size = 0x5a5a;
	assert_int_equal(fi_cq_readerr(cq, &out, 0), 1);
	assert_int_equal(out.err_data_size, 0x5a5a);
	assert_ptr_not_equal(out.err_data, user);
	assert_memory_equal(out.err_data, "xyz", 4);
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

static void test_overrun(void **state)
{
	struct util_env env;
	struct fi_cq_entry c[16];
	struct fid_cq *cq;
	int i;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 4);
	for (i = 0; i < 3; i++)
		ofi_cq_write(ucq(cq), (void *)(uintptr_t)(100 + i), 0, 0, NULL,
			     0, 0);
	assert_int_equal(fi_cq_read(cq, c, 2), 2);
	/* Wraps the ring, then overruns it: nothing lost, order kept. */
	for (i = 3; i < 13; i++)
		assert_int_equal(ofi_cq_write(ucq(cq),
					      (void *)(uintptr_t)(100 + i), 0,
					      0, NULL, 0, 0),
				 0);
	assert_int_equal(fi_cq_read(cq, c, 16), 11);
	for (i = 0; i < 11; i++)
		assert_ptr_equal(c[i].op_context, (void *)(uintptr_t)(102 + i));
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

static void test_sread(void **state)
{
	struct util_env env;
	struct fi_cq_attr attr = {
		.format = FI_CQ_FORMAT_CONTEXT,
		.wait_obj = FI_WAIT_UNSPEC,
		.wait_cond = FI_CQ_COND_THRESHOLD,
	};
	struct fi_cq_entry c[4];
	struct fid_cq *cq;
	uint64_t start;
	size_t thr = 3;
	int i;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	assert_int_equal(fi_cq_sread(cq, c, 1, NULL, 10), -FI_EINVAL);
	assert_int_equal(fi_cq_signal(cq), -FI_EINVAL);
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	start = ofi_gettime_ms();
	assert_int_equal(fi_cq_sread(cq, c, 1, NULL, 50), -FI_EAGAIN);
	assert_true(ofi_gettime_ms() - start >= 45);
	ofi_cq_write(ucq(cq), (void *)1, 0, 0, NULL, 0, 0);
	assert_int_equal(fi_cq_sread(cq, c, 1, NULL, 50), 1);
	assert_int_equal(fi_close(&cq->fid), 0);

	assert_int_equal(ofi_cq_open(&env.domain->domain_fid, &attr, &cq, NULL),
			 0);
	for (i = 0; i < 2; i++)
		ofi_cq_write(ucq(cq), (void *)1, 0, 0, NULL, 0, 0);
	assert_int_equal(fi_cq_sread(cq, c, 4, &thr, 20), -FI_EAGAIN);
	ofi_cq_write(ucq(cq), (void *)1, 0, 0, NULL, 0, 0);
	assert_int_equal(fi_cq_sread(cq, c, 4, &thr, 20), 3);
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

struct sread_arg {
	struct fid_cq *cq;
	ssize_t ret;
};

static void *sread_thread(void *p)
{
	struct sread_arg *a = p;
	struct fi_cq_entry c;

	a->ret = fi_cq_sread(a->cq, &c, 1, NULL, 5000);
	return NULL;
}

static void test_signal(void **state)
{
	struct util_env env;
	struct sread_arg a;
	pthread_t t;
	uint64_t start;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	a.cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_MUTEX_COND, 0);
	a.ret = 1;
	start = ofi_gettime_ms();
	pthread_create(&t, NULL, sread_thread, &a);
	usleep(20000);
	assert_int_equal(fi_cq_signal(a.cq), 0);
	pthread_join(t, NULL);
	assert_int_equal(a.ret, -FI_EAGAIN);
	assert_true(ofi_gettime_ms() - start < 2000);

	/* A completion also wakes the sleeper. */
	pthread_create(&t, NULL, sread_thread, &a);
	usleep(10000);
	ofi_cq_write(ucq(a.cq), NULL, 0, 0, NULL, 0, 0);
	pthread_join(t, NULL);
	assert_int_equal(a.ret, 1);
	assert_int_equal(fi_close(&a.cq->fid), 0);
	util_env_close(&env);
}

static void test_wait_fd(void **state)
{
	struct util_env env;
	struct fid_fabric *fab;
	struct fi_cq_entry c;
	struct fid_cq *cq;
	struct fid *fids[1];
	struct pollfd pfd;
	enum fi_wait_obj obj;
	int fd = -1;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	fab = &env.fabric->fabric_fid;
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 0);
	assert_int_equal(fi_control(&cq->fid, FI_GETWAITOBJ, &obj), 0);
	assert_int_equal(obj, FI_WAIT_FD);
	assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	assert_true(fd >= 0);
	fids[0] = &cq->fid;
	assert_int_equal(fi_trywait(fab, fids, 1), 0);
	pfd.fd = fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0);
	ofi_cq_write(ucq(cq), NULL, 0, 0, NULL, 0, 0);
	assert_int_equal(poll(&pfd, 1, 100), 1);
	assert_int_equal(fi_trywait(fab, fids, 1), -FI_EAGAIN);
	assert_int_equal(fi_cq_read(cq, &c, 1), 1);
	assert_int_equal(fi_trywait(fab, fids, 1), 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(fi_close(&cq->fid), 0);

	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	fids[0] = &cq->fid;
	assert_int_equal(fi_trywait(fab, fids, 1), -FI_EINVAL);
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

static int progress_calls;

static void ep_progress(struct util_ep *ep)
{
	progress_calls++;
	if (progress_calls == 2)
		ofi_cq_write(ep->rx_cq, (void *)77, FI_RECV, 0, NULL, 0, 0);
}

static void test_progress_and_busy(void **state)
{
	struct util_env env;
	struct util_ep *ep;
	struct fi_cq_entry c, cc[2];
	struct fid_cq *cq;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	ep = calloc(1, sizeof(*ep));
	assert_int_equal(
		ofi_ep_init(env.domain, env.info, ep, ep_progress, NULL), 0);
	assert_int_equal(
		fi_ep_bind(&ep->ep_fid, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	progress_calls = 0;
	assert_int_equal(fi_cq_read(cq, &c, 1), -FI_EAGAIN);
	assert_int_equal(progress_calls, 1);
	assert_int_equal(fi_cq_sread(cq, &c, 1, NULL, 100), 1);
	assert_ptr_equal(c.op_context, (void *)77);

	/* Quiet entries (OFI_CQ_QUIET) at the head are returned without a
	 * progress pass; any other entry, an empty ring or a read of none
	 * progresses first. */
	ofi_cq_write(ep->tx_cq, (void *)78, FI_SEND | OFI_CQ_QUIET, 0, NULL, 0,
		     0);
	ofi_cq_write(ep->tx_cq, (void *)79, FI_SEND, 0, NULL, 0, 0);
	ofi_cq_write(ep->tx_cq, (void *)80, FI_SEND | OFI_CQ_QUIET, 0, NULL, 0,
		     0);
	progress_calls = 10;
	assert_int_equal(fi_cq_read(cq, &c, 1), 1);
	assert_ptr_equal(c.op_context, (void *)78);
	assert_int_equal(progress_calls, 10);
	assert_int_equal(fi_cq_read(cq, &c, 1), 1);
	assert_ptr_equal(c.op_context, (void *)79);
	assert_int_equal(progress_calls, 11);
	assert_int_equal(fi_cq_read(cq, &c, 0), 0);
	assert_int_equal(progress_calls, 12);
	assert_int_equal(fi_cq_read(cq, &c, 1), 1);
	assert_ptr_equal(c.op_context, (void *)80);
	assert_int_equal(progress_calls, 12);
	assert_int_equal(fi_cq_read(cq, &c, 1), -FI_EAGAIN);
	assert_int_equal(progress_calls, 13);
	/* A batch read without a pass stops at the first entry that needs
	 * one. */
	ofi_cq_write(ep->tx_cq, (void *)81, FI_SEND | OFI_CQ_QUIET, 0, NULL, 0,
		     0);
	ofi_cq_write(ep->tx_cq, (void *)82, FI_SEND, 0, NULL, 0, 0);
	assert_int_equal(fi_cq_read(cq, cc, 2), 1);
	assert_ptr_equal(cc[0].op_context, (void *)81);
	assert_int_equal(progress_calls, 13);
	assert_int_equal(fi_cq_read(cq, cc, 2), 1);
	assert_ptr_equal(cc[0].op_context, (void *)82);
	assert_int_equal(progress_calls, 14);

	assert_int_equal(fi_close(&cq->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&env.domain->domain_fid.fid), -FI_EBUSY);
	assert_int_equal(fi_close(&ep->ep_fid.fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

/* The progress pass that writes a completion: never before it is set. */
static int late_at = -1;

static void ep_progress_late(struct util_ep *ep)
{
	if (++progress_calls == late_at)
		ofi_cq_write(ep->rx_cq, (void *)90, FI_RECV, 0, NULL, 0, 0);
}

/*
 * A read that gave the core away looks again before it says empty: what
 * another task did meanwhile is found in the same call, not in the
 * caller's next one (which may yield first). The read must be past the
 * spin budget and follow the one before at once, or it keeps the core
 * (a preemption in between makes it so): a few tries.
 */
static void test_read_after_yield(void **state)
{
	struct util_env env;
	struct util_ep *ep;
	struct fi_cq_entry c;
	struct fid_cq *cq;
	int64_t spin = ofi_yield_spin_ns();
	ssize_t ret = -FI_EAGAIN;
	uint64_t t0;
	int tries;

	if (spin < 0) /* FI_PROGRESS_SPIN=-1 never yields */
		skip();
	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	ep = calloc(1, sizeof(*ep));
	assert_int_equal(
		ofi_ep_init(env.domain, env.info, ep, ep_progress_late, NULL),
		0);
	assert_int_equal(
		fi_ep_bind(&ep->ep_fid, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	for (tries = 0; tries < 50 && ret == -FI_EAGAIN; tries++) {
		late_at = -1;
		t0 = ofi_gettime_ns();
		while (ofi_gettime_ns() - t0 < 2 * (uint64_t)spin + 50000)
			assert_int_equal(fi_cq_read(cq, &c, 1), -FI_EAGAIN);
		late_at = progress_calls + 2;
		ret = fi_cq_read(cq, &c, 1);
	}
	assert_int_equal(ret, 1);
	assert_ptr_equal(c.op_context, (void *)90);
	assert_int_equal(progress_calls, late_at);

	assert_int_equal(fi_close(&ep->ep_fid.fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

#define MT_PER_WRITER 20000

struct mt_arg {
	struct util_cq *cq;
	uintptr_t id;
};

static void *mt_writer(void *p)
{
	struct mt_arg *a = p;
	uintptr_t i;

	for (i = 0; i < MT_PER_WRITER; i++)
		assert_int_equal(ofi_cq_write(a->cq, (void *)(a->id << 32 | i),
					      0, 0, NULL, 0, 0),
				 0);
	return NULL;
}

/* Two writer threads beside this thread's blocking reads of @cq. */
static void mt_run(struct fid_cq *cq)
{
	struct mt_arg args[2];
	struct fi_cq_entry c[64];
	uintptr_t next[2] = {0, 0}, v;
	pthread_t t[2];
	size_t got = 0;
	ssize_t n, i;

	for (i = 0; i < 2; i++) {
		args[i].cq = ucq(cq);
		args[i].id = i;
		pthread_create(&t[i], NULL, mt_writer, &args[i]);
	}
	while (got < 2 * MT_PER_WRITER) {
		n = fi_cq_sread(cq, c, 64, NULL, 1000);
		assert_true(n > 0);
		for (i = 0; i < n; i++) {
			v = (uintptr_t)c[i].op_context;
			/* Each writer's completions arrive in its order. */
			assert_int_equal(v & 0xffffffff, next[v >> 32]);
			next[v >> 32]++;
		}
		got += n;
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(fi_cq_read(cq, c, 1), -FI_EAGAIN);
}

static void test_multithread(void **state)
{
	struct util_env env;
	struct fid_cq *cq;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 128);
	mt_run(cq);
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
}

/*
 * FI_THREAD_DOMAIN: the application serializes every call, so the CQ
 * takes no lock, until an endpoint bound to it gets a progress thread or
 * an EQ (whose reader may drive it from another thread); from then on it
 * locks, which the writers below check (under TSan, a race report).
 */
static struct util_ep *td_ep(struct util_env *env, struct fid_cq *cq,
			     struct fid_av *av, struct fid_eq *eq,
			     bool auto_progress)
{
	struct util_ep *ep = calloc(1, sizeof(*ep));

	assert_non_null(ep);
	assert_int_equal(ofi_ep_init(env->domain, env->info, ep, NULL, NULL),
			 0);
	ep->auto_progress = auto_progress;
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &av->fid, 0), 0);
	assert_int_equal(
		fi_ep_bind(&ep->ep_fid, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	if (eq)
		assert_int_equal(fi_ep_bind(&ep->ep_fid, &eq->fid, 0), 0);
	assert_int_equal(fi_enable(&ep->ep_fid), 0);
	return ep;
}

static void test_thread_domain(void **state)
{
	struct util_env env;
	struct fi_av_attr aattr = {.type = FI_AV_TABLE};
	struct util_av_attr pattr = {.addrlen = 8};
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_FD};
	struct fi_cq_attr sattr = {.wait_obj = FI_WAIT_SET};
	struct fi_eq_attr eattr = {.wait_obj = FI_WAIT_NONE};
	struct fid_cq *cq, *cq_set, *cq_eq;
	struct util_ep *ep[3];
	struct fi_cq_entry c[64];
	struct fid_wait *ws;
	struct fid_eq *eq;
	struct fid_av *av;
	uintptr_t v;
	ssize_t n, i;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 0);
	assert_false(ucq(cq)->serial); /* FI_THREAD_SAFE */
	assert_int_equal(fi_close(&cq->fid), 0);

	env.domain->threading = FI_THREAD_DOMAIN;
	assert_int_equal(
		ofi_av_open(&env.domain->domain_fid, &aattr, &pattr, &av, NULL),
		0);
	assert_int_equal(fi_eq_open(&env.fabric->fabric_fid, &eattr, &eq, NULL),
			 0);
	assert_int_equal(fi_wait_open(&env.fabric->fabric_fid, &wattr, &ws), 0);
	sattr.wait_set = ws;
	assert_int_equal(
		ofi_cq_open(&env.domain->domain_fid, &sattr, &cq_set, NULL), 0);
	assert_false(ucq(cq_set)->serial); /* fi_wait may come from anywhere */
	cq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, 128);
	cq_eq = cq_open(&env, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	assert_true(ucq(cq)->serial);
	assert_true(ucq(cq_eq)->serial);

	/* Manual progress, no EQ: stays lockless, and works. */
	ep[0] = td_ep(&env, cq, av, NULL, false);
	assert_true(ucq(cq)->serial);
	for (i = 0; i < 200; i++)
		ofi_cq_write(ucq(cq), (void *)i, FI_SEND, 0, NULL, 0, 0);
	for (v = 0; v < 200; v += n) {
		n = fi_cq_read(cq, c, 64);
		assert_true(n > 0);
		for (i = 0; i < n; i++)
			assert_int_equal((uintptr_t)c[i].op_context, v + i);
	}
	assert_int_equal(fi_cq_read(cq, c, 1), -FI_EAGAIN);

	/* An EQ's reader may progress the endpoint from another thread. */
	ep[1] = td_ep(&env, cq_eq, av, eq, false);
	assert_false(ucq(cq_eq)->serial);

	/* A progress thread writes beside the application's reads. */
	ep[2] = td_ep(&env, cq, av, NULL, true);
	assert_false(ucq(cq)->serial);
	mt_run(cq);

	for (i = 0; i < 3; i++)
		assert_int_equal(fi_close(&ep[i]->ep_fid.fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
	assert_int_equal(fi_close(&cq_eq->fid), 0);
	assert_int_equal(fi_close(&cq_set->fid), 0);
	assert_int_equal(fi_close(&ws->fid), 0);
	assert_int_equal(fi_close(&eq->fid), 0);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_errors_old_api),
		cmocka_unit_test(test_overrun),
		cmocka_unit_test(test_sread),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_wait_fd),
		cmocka_unit_test(test_progress_and_busy),
		cmocka_unit_test(test_read_after_yield),
		cmocka_unit_test(test_multithread),
		cmocka_unit_test(test_thread_domain),
	};

	return cmocka_run_group_tests_name("util_cq", tests, NULL, NULL);
}
