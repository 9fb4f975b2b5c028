/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_poll.c - unit tests of util poll sets: provider-side news (error
 * counts, completions written by ofi_cq_write), objects of another
 * domain, the count limit's carry-over, and fi_poll racing fi_poll_add /
 * fi_poll_del and provider writes from other threads.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "util_common.h"

static char ctx_cq, ctx_cntr;

static struct fid_poll *poll_open(struct util_env *env)
{
	struct fi_poll_attr attr = {0};
	struct fid_poll *ps;

	assert_int_equal(ofi_poll_open(&env->domain->domain_fid, &attr, &ps),
			 0);
	return ps;
}

static struct util_cq *cq_open(struct util_env *env)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT};
	struct fid_cq *cq;

	assert_int_equal(
		ofi_cq_open(&env->domain->domain_fid, &attr, &cq, &ctx_cq), 0);
	return container_of(cq, struct util_cq, cq_fid);
}

static struct util_cntr *cntr_open(struct util_env *env)
{
	struct fid_cntr *cntr;

	assert_int_equal(
		ofi_cntr_open(&env->domain->domain_fid, NULL, &cntr, &ctx_cntr),
		0);
	return container_of(cntr, struct util_cntr, cntr_fid);
}

static void test_news(void **state)
{
	struct util_env env;
	struct fid_poll *ps;
	struct util_cq *cq;
	struct util_cntr *cntr;
	struct fi_cq_entry e;
	void *ctx[2];

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	ps = poll_open(&env);
	cq = cq_open(&env);
	cntr = cntr_open(&env);
	assert_int_equal(fi_poll_add(ps, &cq->cq_fid.fid, 0), 0);
	assert_int_equal(fi_poll_add(ps, &cntr->cntr_fid.fid, 0), 0);
	assert_int_equal(fi_poll(ps, ctx, 2), 0);

	/* a provider's error count is news, once */
	ofi_cntr_inc_err(cntr);
	assert_int_equal(fi_poll(ps, ctx, 2), 1);
	assert_ptr_equal(ctx[0], &ctx_cntr);
	assert_int_equal(fi_poll(ps, ctx, 2), 0);

	/* a completion is news until read; count 1 carries the counter */
	assert_int_equal(ofi_cq_write(cq, NULL, FI_SEND, 0, NULL, 0, 0), 0);
	ofi_cntr_inc(cntr);
	assert_int_equal(fi_poll(ps, ctx, 1), 1);
	assert_ptr_equal(ctx[0], &ctx_cq);
	assert_int_equal(fi_poll(ps, ctx, 1), 1);
	assert_ptr_equal(ctx[0], &ctx_cntr);
	assert_int_equal(fi_poll(ps, ctx, 2), 1);
	assert_ptr_equal(ctx[0], &ctx_cq);
	assert_int_equal(fi_cq_read(&cq->cq_fid, &e, 1), 1);
	assert_int_equal(fi_poll(ps, ctx, 2), 0);

	assert_int_equal(fi_poll_del(ps, &cq->cq_fid.fid, 0), 0);
	assert_int_equal(fi_poll_del(ps, &cntr->cntr_fid.fid, 0), 0);
	assert_int_equal(fi_close(&ps->fid), 0);
	assert_int_equal(fi_close(&cq->cq_fid.fid), 0);
	assert_int_equal(fi_close(&cntr->cntr_fid.fid), 0);
	util_env_close(&env);
}

/* A CQ of another domain, and objects that are neither CQ nor counter. */
static void test_foreign(void **state)
{
	struct util_env env, other;
	struct fid_poll *ps;
	struct util_cq *cq;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	util_env_open(&other, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	ps = poll_open(&env);
	cq = cq_open(&other);
	assert_int_equal(fi_poll_add(ps, &cq->cq_fid.fid, 0), -FI_EINVAL);
	assert_int_equal(fi_poll_add(ps, NULL, 0), -FI_EINVAL);
	assert_int_equal(fi_poll_add(ps, &env.fabric->fabric_fid.fid, 0),
			 -FI_EINVAL);
	assert_int_equal(fi_close(&cq->cq_fid.fid), 0);
	assert_int_equal(fi_close(&env.domain->domain_fid.fid), -FI_EBUSY);
	assert_int_equal(fi_close(&ps->fid), 0);
	util_env_close(&other);
	util_env_close(&env);
}

struct race {
	struct fid_poll *ps;
	struct util_cq *cq;
	struct util_cntr *cntr;
	atomic_bool stop;
	atomic_int polls;
};

static void *poller(void *p)
{
	struct race *r = p;
	void *ctx[4];
	int n, i;

	while (!atomic_load(&r->stop)) {
		n = fi_poll(r->ps, ctx, 4);
		assert_true(n >= 0 && n <= 2);
		for (i = 0; i < n; i++)
			assert_true(ctx[i] == &ctx_cq || ctx[i] == &ctx_cntr);
		atomic_fetch_add(&r->polls, 1);
	}
	return NULL;
}

static void *writer(void *p)
{
	struct race *r = p;
	struct fi_cq_entry e;

	while (!atomic_load(&r->stop)) {
		ofi_cntr_inc(r->cntr);
		ofi_cq_write(r->cq, NULL, FI_RECV, 0, NULL, 0, 0);
		fi_cq_read(&r->cq->cq_fid, &e, 1);
	}
	return NULL;
}

/* FI_THREAD_SAFE: membership changes while others poll and write. */
static void test_race(void **state)
{
	struct util_env env;
	struct race r = {0};
	pthread_t t[3];
	int i, ret;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	r.ps = poll_open(&env);
	r.cq = cq_open(&env);
	r.cntr = cntr_open(&env);
	pthread_create(&t[0], NULL, poller, &r);
	pthread_create(&t[1], NULL, poller, &r);
	pthread_create(&t[2], NULL, writer, &r);
	/*
	 * On a loaded 2-core machine the pollers may not run before 20000
	 * rounds are over: keep going (bounded) until they overlapped.
	 */
	for (i = 0; i < 20000 || (atomic_load(&r.polls) < 100 && i < 5000000);
	     i++) {
		assert_int_equal(fi_poll_add(r.ps, &r.cq->cq_fid.fid, 0), 0);
		assert_int_equal(fi_poll_add(r.ps, &r.cntr->cntr_fid.fid, 0),
				 0);
		assert_int_equal(fi_poll_del(r.ps, &r.cq->cq_fid.fid, 0), 0);
		assert_int_equal(fi_poll_del(r.ps, &r.cntr->cntr_fid.fid, 0),
				 0);
	}
	atomic_store(&r.stop, true);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	assert_true(atomic_load(&r.polls) > 0);
	ret = fi_close(&r.ps->fid);
	assert_int_equal(ret, 0);
	assert_int_equal(fi_close(&r.cq->cq_fid.fid), 0);
	assert_int_equal(fi_close(&r.cntr->cntr_fid.fid), 0);
	util_env_close(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_news),
		cmocka_unit_test(test_foreign),
		cmocka_unit_test(test_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
