/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_trigger.c - unit tests of the trigger queue's bookkeeping
 * (prov/util/util_trigger.c) through deferred work on util counters:
 * closing a counter drops the work naming it after earlier work ran, and
 * closing an endpoint waits for the work another thread is starting on
 * it. The queue is process-wide: test_close_after_fire runs first, on
 * an empty queue.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "util_common.h"
#include "ofi_trigger.h"

static struct fid_cntr *cntr_open(struct util_env *env)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = FI_WAIT_NONE};
	struct fid_cntr *cntr;

	assert_int_equal(
		ofi_cntr_open(&env->domain->domain_fid, &attr, &cntr, NULL), 0);
	return cntr;
}

static int work_ctl(struct util_env *env, int cmd, struct fi_deferred_work *w)
{
	return ofi_trig_domain_control(&env->domain->domain_fid.fid, cmd, w);
}

static void work_add(struct fi_deferred_work *w, struct fi_op_cntr *op,
		     struct fid_cntr *trig, uint64_t threshold,
		     struct fid_cntr *target)
{
	memset(w, 0, sizeof(*w));
	op->cntr = target;
	op->value = 1;
	w->triggering_cntr = trig;
	w->threshold = threshold;
	w->op_type = FI_OP_CNTR_ADD;
	w->op.cntr = op;
}

/*
 * One item started, then one queued: the queue is not empty, so closing
 * the counter the queued one adds to drops it (it would start on freed
 * memory).
 */
static void test_close_after_fire(void **state)
{
	struct fi_deferred_work w0, w1;
	struct fi_op_cntr op0, op1;
	struct fid_cntr *trig, *x, *y;
	struct util_env env;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	env.domain->trig = true;
	trig = cntr_open(&env);
	x = cntr_open(&env);
	y = cntr_open(&env);
	work_add(&w0, &op0, trig, 1, x);
	assert_int_equal(work_ctl(&env, FI_QUEUE_WORK, &w0), 0);
	assert_int_equal(fi_cntr_add(trig, 1), 0);
	assert_int_equal(fi_cntr_read(x), 1);
	work_add(&w1, &op1, trig, 10, y);
	assert_int_equal(work_ctl(&env, FI_QUEUE_WORK, &w1), 0);
	assert_int_equal(fi_close(&y->fid), 0);
	assert_int_equal(work_ctl(&env, FI_CANCEL_WORK, &w1), -FI_ENOENT);
	assert_int_equal(fi_cntr_add(trig, 10), 0);
	assert_int_equal(fi_cntr_read(x), 1);
	assert_int_equal(fi_close(&x->fid), 0);
	assert_int_equal(fi_close(&trig->fid), 0);
	util_env_close(&env);
}

/* A stand-in endpoint whose send blocks until released. */
static struct {
	int started, release;
} fake;

static ssize_t fake_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			    uint64_t flags)
{
	int i;

	__atomic_store_n(&fake.started, 1, __ATOMIC_SEQ_CST);
	for (i = 0;
	     i < 5000 && !__atomic_load_n(&fake.release, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	return -FI_EIO;
}

static struct fi_ops_msg fake_msg = {
	.size = sizeof(struct fi_ops_msg),
	.sendmsg = fake_sendmsg,
};

struct fire_arg {
	struct fid_cntr *trig;
	struct util_ep *ep;
	int closed;
};

static void *fire_run(void *p)
{
	struct fire_arg *a = p;

	fi_cntr_add(a->trig, 1);
	return NULL;
}

static void *close_run(void *p)
{
	struct fire_arg *a = p;

	ofi_trig_ep_close(a->ep);
	__atomic_store_n(&a->closed, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * An endpoint closed while another thread starts deferred work on it:
 * the close returns only once that start (and its failure's report) is
 * over.
 */
static void test_close_while_firing(void **state)
{
	struct util_ep ep = {0};
	struct fi_op_msg op = {0};
	struct fi_deferred_work w = {0};
	struct fire_arg a = {0};
	struct util_env env;
	pthread_t firer, closer;
	int i;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	env.domain->trig = true;
	ep.ep_fid.fid.fclass = FI_CLASS_EP;
	ep.ep_fid.msg = &fake_msg;
	a.trig = cntr_open(&env);
	a.ep = &ep;
	op.ep = &ep.ep_fid;
	w.triggering_cntr = a.trig;
	w.threshold = 1;
	w.op_type = FI_OP_SEND;
	w.op.msg = &op;
	assert_int_equal(work_ctl(&env, FI_QUEUE_WORK, &w), 0);
	assert_int_equal(pthread_create(&firer, NULL, fire_run, &a), 0);
	for (i = 0;
	     i < 5000 && !__atomic_load_n(&fake.started, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	assert_true(fake.started);
	assert_int_equal(pthread_create(&closer, NULL, close_run, &a), 0);
	usleep(100000);
	assert_false(__atomic_load_n(&a.closed, __ATOMIC_SEQ_CST));
	__atomic_store_n(&fake.release, 1, __ATOMIC_SEQ_CST);
	pthread_join(firer, NULL);
	pthread_join(closer, NULL);
	assert_true(a.closed);
	assert_int_equal(work_ctl(&env, FI_CANCEL_WORK, &w), -FI_ENOENT);
	assert_int_equal(fi_close(&a.trig->fid), 0);
	util_env_close(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_after_fire),
		cmocka_unit_test(test_close_while_firing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
