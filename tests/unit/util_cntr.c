/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_cntr.c - unit tests of util_cntr: read/add/set and their error
 * twins, fi_cntr_wait thresholds, timeouts and wake-ups, progress on read,
 * and a read that looks again after giving the core away.
 */
#include <pthread.h>

#include "ofi_yield.h"
#include "util_common.h"

static struct fid_cntr *cntr_open(struct util_env *env, enum fi_wait_obj w)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = w,
	};
	struct fid_cntr *cntr;

	assert_int_equal(
		ofi_cntr_open(&env->domain->domain_fid, &attr, &cntr, NULL), 0);
	return cntr;
}

static void test_values(void **state)
{
	struct util_env env;
	struct fid_cntr *cntr;
	struct util_cntr *uc;
	struct fi_cntr_attr bad = {.events = 7};

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	assert_int_equal(
		ofi_cntr_open(&env.domain->domain_fid, &bad, &cntr, NULL),
		-FI_EINVAL);
	cntr = cntr_open(&env, FI_WAIT_NONE);
	uc = container_of(cntr, struct util_cntr, cntr_fid);
	assert_int_equal(fi_cntr_read(cntr), 0);
	assert_int_equal(fi_cntr_add(cntr, 5), 0);
	ofi_cntr_inc(uc);
	assert_int_equal(fi_cntr_read(cntr), 6);
	assert_int_equal(fi_cntr_set(cntr, 2), 0);
	assert_int_equal(fi_cntr_read(cntr), 2);
	assert_int_equal(fi_cntr_readerr(cntr), 0);
	assert_int_equal(fi_cntr_adderr(cntr, 3), 0);
	ofi_cntr_inc_err(uc);
	assert_int_equal(fi_cntr_readerr(cntr), 4);
	assert_int_equal(fi_cntr_seterr(cntr, 1), 0);
	assert_int_equal(fi_cntr_readerr(cntr), 1);
	assert_int_equal(fi_cntr_read(cntr), 2);
	/* Busy-polls without a wait object, still bounded by the timeout. */
	assert_int_equal(fi_cntr_wait(cntr, 2, 10), 0);
	assert_int_equal(fi_cntr_wait(cntr, 3, 10), -FI_ETIMEDOUT);
	assert_int_equal(fi_close(&cntr->fid), 0);
	util_env_close(&env);
}

struct add_arg {
	struct fid_cntr *cntr;
	int err;
};

static void *adder(void *p)
{
	struct add_arg *a = p;

	usleep(20000);
	if (a->err)
		fi_cntr_adderr(a->cntr, 1);
	else
		fi_cntr_add(a->cntr, 10);
	return NULL;
}

static void test_wait(void **state)
{
	struct util_env env;
	struct add_arg a;
	struct fid_cntr *cntr;
	enum fi_wait_obj obj;
	uint64_t start;
	pthread_t t;
	int fd;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cntr = cntr_open(&env, FI_WAIT_UNSPEC);
	assert_int_equal(fi_control(&cntr->fid, FI_GETWAITOBJ, &obj), 0);
	assert_int_equal(obj, FI_WAIT_MUTEX_COND);
	start = ofi_gettime_ms();
	assert_int_equal(fi_cntr_wait(cntr, 1, 50), -FI_ETIMEDOUT);
	assert_true(ofi_gettime_ms() - start >= 45);

	a.cntr = cntr;
	a.err = 0;
	pthread_create(&t, NULL, adder, &a);
	assert_int_equal(fi_cntr_wait(cntr, 10, 2000), 0);
	pthread_join(t, NULL);
	a.err = 1;
	pthread_create(&t, NULL, adder, &a);
	assert_int_equal(fi_cntr_wait(cntr, 100, 2000), -FI_EAVAIL);
	pthread_join(t, NULL);
	assert_int_equal(fi_close(&cntr->fid), 0);

	cntr = cntr_open(&env, FI_WAIT_FD);
	assert_int_equal(fi_control(&cntr->fid, FI_GETWAIT, &fd), 0);
	assert_true(fd >= 0);
	assert_int_equal(fi_close(&cntr->fid), 0);
	util_env_close(&env);
}

static int progressed;

static void ep_progress(struct util_ep *ep)
{
	if (!progressed++)
		ofi_ep_cntr_inc(ep, OFI_CNTR_RX);
}

static void test_progress_bind(void **state)
{
	struct util_env env;
	struct fid_cntr *cntr, *other;
	struct util_ep *ep;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cntr = cntr_open(&env, FI_WAIT_UNSPEC);
	other = cntr_open(&env, FI_WAIT_NONE);
	ep = calloc(1, sizeof(*ep));
	assert_int_equal(
		ofi_ep_init(env.domain, env.info, ep, ep_progress, NULL), 0);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &cntr->fid, 0), -FI_EINVAL);
	assert_int_equal(
		fi_ep_bind(&ep->ep_fid, &cntr->fid, FI_TRANSMIT << 1 | FI_PEEK),
		-FI_EINVAL);
	assert_int_equal(
		fi_ep_bind(&ep->ep_fid, &cntr->fid, FI_RECV | FI_REMOTE_WRITE),
		0);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &other->fid, FI_RECV),
			 -FI_EINVAL);
	assert_int_equal(
		fi_ep_bind(&ep->ep_fid, &other->fid,
			   FI_SEND | FI_READ | FI_WRITE | FI_REMOTE_READ),
		0);
	assert_ptr_equal(ep->cntrs[OFI_CNTR_REM_WR],
			 container_of(cntr, struct util_cntr, cntr_fid));
	assert_ptr_equal(ep->cntrs[OFI_CNTR_RD],
			 container_of(other, struct util_cntr, cntr_fid));
	progressed = 0;
	assert_int_equal(fi_cntr_wait(cntr, 1, 100), 0);
	assert_int_equal(fi_cntr_read(cntr), 1);
	assert_true(progressed >= 2);
	assert_int_equal(fi_close(&cntr->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&ep->ep_fid.fid), 0);
	assert_int_equal(fi_close(&cntr->fid), 0);
	assert_int_equal(fi_close(&other->fid), 0);
	util_env_close(&env);
}

/* The progress pass that counts one: never before it is set. */
static int late_calls, late_at = -1;

static void ep_progress_late(struct util_ep *ep)
{
	if (++late_calls == late_at)
		ofi_ep_cntr_inc(ep, OFI_CNTR_RX);
}

/*
 * A read that gave the core away progresses and reads again before it
 * answers (util_cq's read_after_yield: the read must be past the spin
 * budget and follow the one before at once, so a few tries).
 */
static void test_read_after_yield(void **state)
{
	struct util_env env;
	struct fid_cntr *cntr;
	struct util_ep *ep;
	int64_t spin = ofi_yield_spin_ns();
	uint64_t t0, val = 0;
	int tries;

	if (spin < 0) /* FI_PROGRESS_SPIN=-1 never yields */
		skip();
	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	cntr = cntr_open(&env, FI_WAIT_UNSPEC);
	ep = calloc(1, sizeof(*ep));
	assert_int_equal(
		ofi_ep_init(env.domain, env.info, ep, ep_progress_late, NULL),
		0);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &cntr->fid, FI_RECV), 0);
	for (tries = 0; tries < 50 && !val; tries++) {
		late_at = -1;
		(void)fi_cntr_read(cntr);
		t0 = ofi_gettime_ns();
		while (ofi_gettime_ns() - t0 < 2 * (uint64_t)spin + 50000)
			assert_int_equal(fi_cntr_read(cntr), 0);
		late_at = late_calls + 2;
		val = fi_cntr_read(cntr);
	}
	assert_int_equal(val, 1);
	assert_int_equal(late_calls, late_at);
	assert_int_equal(fi_close(&ep->ep_fid.fid), 0);
	assert_int_equal(fi_close(&cntr->fid), 0);
	util_env_close(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_wait),
		cmocka_unit_test(test_progress_bind),
		cmocka_unit_test(test_read_after_yield),
	};

	return cmocka_run_group_tests_name("util_cntr", tests, NULL, NULL);
}
