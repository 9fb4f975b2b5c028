/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_wait.c - unit tests of wait objects and wait sets: fi_wait_open
 * argument checks, fi_wait with timeout and wake-up through an attached CQ,
 * fi_trywait on sets/EQs/counters, FI_WAIT_YIELD, endpoint control/options,
 * fi_no_* stubs and the override slot; fi_trywait arming what a manual
 * endpoint waits on, so that the FI_GETWAIT fd wakes for its traffic.
 */
#include <poll.h>
#include <pthread.h>

#include "util_common.h"

static void test_wait_set(void **state)
{
	struct util_env env;
	struct fid_fabric *fab;
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cattr = {.wait_obj = FI_WAIT_SET};
	struct fid_wait *ws;
	struct fid_cq *cq;
	struct fi_cq_entry c;
	struct fid *fids[1];
	uint64_t start;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	fab = &env.fabric->fabric_fid;
	wattr.flags = 1;
	assert_int_equal(fi_wait_open(fab, &wattr, &ws), -FI_EINVAL);
	wattr.flags = 0;
	wattr.wait_obj = FI_WAIT_NONE;
	assert_int_equal(fi_wait_open(fab, &wattr, &ws), -FI_EINVAL);
	wattr.wait_obj = FI_WAIT_FD;
	assert_int_equal(fi_wait_open(fab, &wattr, &ws), 0);

	assert_int_equal(
		ofi_cq_open(&env.domain->domain_fid, &cattr, &cq, NULL),
		-FI_EINVAL);
	cattr.wait_set = ws;
	assert_int_equal(
		ofi_cq_open(&env.domain->domain_fid, &cattr, &cq, NULL), 0);
	start = ofi_gettime_ms();
	assert_int_equal(fi_wait(ws, 30), -FI_ETIMEDOUT);
	assert_true(ofi_gettime_ms() - start >= 25);
	fids[0] = &ws->fid;
	assert_int_equal(fi_trywait(fab, fids, 1), 0);

	ofi_cq_write(container_of(cq, struct util_cq, cq_fid), (void *)1, 0, 0,
		     NULL, 0, 0);
	assert_int_equal(fi_trywait(fab, fids, 1), -FI_EAGAIN);
	assert_int_equal(fi_wait(ws, 100), 0);
	assert_int_equal(fi_cq_read(cq, &c, 1), 1);
	assert_int_equal(fi_trywait(fab, fids, 1), 0);
	assert_int_equal(fi_wait(ws, 10), -FI_ETIMEDOUT);

	assert_int_equal(fi_close(&ws->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&cq->fid), 0);
	assert_int_equal(fi_close(&env.fabric->fabric_fid.fid), -FI_EBUSY);
	assert_int_equal(fi_close(&ws->fid), 0);
	util_env_close(&env);
}

static void test_trywait_kinds(void **state)
{
	struct util_env env;
	struct fid_fabric *fab;
	struct fi_eq_attr eattr = {.wait_obj = FI_WAIT_FD};
	struct fi_cntr_attr nattr = {.wait_obj = FI_WAIT_YIELD};
	struct fi_eq_entry ent = {0};
	struct fid_eq *eq;
	struct fid_cntr *cntr;
	struct fid *fids[2];
	uint32_t ev;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	fab = &env.fabric->fabric_fid;
	assert_int_equal(fi_eq_open(fab, &eattr, &eq, NULL), 0);
	assert_int_equal(
		ofi_cntr_open(&env.domain->domain_fid, &nattr, &cntr, NULL), 0);
	fids[0] = &eq->fid;
	fids[1] = &cntr->fid;
	assert_int_equal(fi_trywait(fab, fids, 2), 0);
	ofi_eq_write(container_of(eq, struct util_eq, eq_fid), FI_NOTIFY, &ent,
		     sizeof(ent));
	assert_int_equal(fi_trywait(fab, fids, 2), -FI_EAGAIN);
	assert_int_equal(fi_eq_read(eq, &ev, &ent, sizeof(ent), 0),
			 sizeof(ent));
	assert_int_equal(fi_trywait(fab, fids, 2), 0);
	assert_int_equal(fi_trywait(fab, NULL, 1), -FI_EINVAL);
	fids[0] = &env.domain->domain_fid.fid;
	assert_int_equal(fi_trywait(fab, fids, 1), -FI_EINVAL);
	/* YIELD counters still honour the timeout. */
	assert_int_equal(fi_cntr_wait(cntr, 1, 10), -FI_ETIMEDOUT);
	fi_cntr_add(cntr, 1);
	assert_int_equal(fi_cntr_wait(cntr, 1, 10), 0);
	assert_int_equal(fi_close(&cntr->fid), 0);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

static void test_ep_control(void **state)
{
	struct util_env env;
	struct fi_av_attr aattr = {.type = FI_AV_TABLE};
	struct util_av_attr pattr = {.addrlen = 8};
	struct fid_cq *cq, *cq2;
	struct fid_av *av;
	struct util_ep *ep;
	uint64_t flags;
	size_t val, len;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	env.info->tx_attr->op_flags = FI_COMPLETION;
	ep = calloc(1, sizeof(*ep));
	assert_int_equal(ofi_ep_init(env.domain, env.info, ep, NULL, NULL), 0);
	assert_int_equal(fi_enable(&ep->ep_fid), -FI_ENOAV);
	assert_int_equal(
		ofi_av_open(&env.domain->domain_fid, &aattr, &pattr, &av, NULL),
		0);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &av->fid, 0), 0);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &av->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_enable(&ep->ep_fid), -FI_ENOCQ);
	assert_int_equal(ofi_cq_open(&env.domain->domain_fid, NULL, &cq, NULL),
			 0);
	assert_int_equal(ofi_cq_open(&env.domain->domain_fid, NULL, &cq2, NULL),
			 0);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &cq->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &cq->fid,
				    FI_TRANSMIT | FI_SELECTIVE_COMPLETION),
			 0);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &cq2->fid, FI_TRANSMIT),
			 -FI_EINVAL);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &cq2->fid, FI_RECV), 0);
	assert_true(ofi_ep_wants_comp(ep->tx_cq_flags, FI_COMPLETION));
	assert_false(ofi_ep_wants_comp(ep->tx_cq_flags, 0));
	assert_true(ofi_ep_wants_comp(ep->rx_cq_flags, 0));

	flags = FI_TRANSMIT;
	assert_int_equal(fi_control(&ep->ep_fid.fid, FI_GETOPSFLAG, &flags), 0);
	assert_int_equal(flags, FI_COMPLETION);
	flags = FI_RECV | FI_MULTI_RECV;
	assert_int_equal(fi_control(&ep->ep_fid.fid, FI_SETOPSFLAG, &flags), 0);
	flags = FI_RECV;
	assert_int_equal(fi_control(&ep->ep_fid.fid, FI_GETOPSFLAG, &flags), 0);
	assert_int_equal(flags, FI_MULTI_RECV);
	flags = FI_RECV | FI_TRANSMIT;
	assert_int_equal(fi_control(&ep->ep_fid.fid, FI_GETOPSFLAG, &flags),
			 -FI_EINVAL);

	val = 4096;
	assert_int_equal(fi_setopt(&ep->ep_fid.fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &val, sizeof(val)),
			 0);
	assert_int_equal(fi_setopt(&ep->ep_fid.fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &val, 1),
			 -FI_EINVAL);
	assert_int_equal(fi_setopt(&ep->ep_fid.fid, 99, FI_OPT_MIN_MULTI_RECV,
				   &val, sizeof(val)),
			 -FI_ENOPROTOOPT);
	val = 0;
	len = 1;
	assert_int_equal(fi_getopt(&ep->ep_fid.fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &val, &len),
			 -FI_ETOOSMALL);
	len = sizeof(val);
	assert_int_equal(fi_getopt(&ep->ep_fid.fid, FI_OPT_ENDPOINT,
				   FI_OPT_MIN_MULTI_RECV, &val, &len),
			 0);
	assert_int_equal(val, 4096);

	assert_false(env.domain->override_locked);
	/* Overrides may change until the first endpoint is enabled. */
	assert_int_equal(fi_set_op(&env.domain->domain_fid.fid,
				   FI_OVERRIDE_COPY_FROM_HMEM_IOV, NULL, 0),
			 0);
	assert_int_equal(fi_enable(&ep->ep_fid), 0);
	assert_true(env.domain->override_locked);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &cq2->fid, FI_RECV),
			 -FI_EINVAL);
	/* Interfaces the endpoint lacks answer -FI_ENOSYS. */
	assert_int_equal(fi_send(&ep->ep_fid, NULL, 0, NULL, 0, NULL),
			 -FI_ENOSYS);
	assert_int_equal(fi_read(&ep->ep_fid, NULL, 0, NULL, 0, 0, 0, NULL),
			 -FI_ENOSYS);
	assert_int_equal(fi_connect(&ep->ep_fid, NULL, NULL, 0), -FI_ENOSYS);
	assert_int_equal(fi_cancel(&ep->ep_fid.fid, NULL), -FI_ENOSYS);
	assert_int_equal(fi_commit(&ep->ep_fid, NULL, 0, 0, 0, NULL),
			 -FI_ENOSYS);
	assert_int_equal(fi_barrier(&ep->ep_fid, 0, NULL), -FI_ENOSYS);
	assert_int_equal(fi_set_op(&env.domain->domain_fid.fid,
				   FI_OVERRIDE_COPY_FROM_HMEM_IOV, NULL, 0),
			 -FI_EBUSY);

	assert_int_equal(fi_close(&av->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&ep->ep_fid.fid), 0);
	assert_int_equal(fi_close(&av->fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
	assert_int_equal(fi_close(&cq2->fid), 0);
	util_env_close(&env);
}

/* A manual endpoint whose work shows up on a pipe (a socket, in tcp). */
static int arm_pipe[2] = {-1, -1};

static int arm_wait_fd(struct util_ep *ep)
{
	(void)ep;
	return arm_pipe[0];
}

static bool fd_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* Whether @fd becomes readable within 20 naps. */
static bool fd_wakes(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 20 * OFI_EP_POLL_NAP_MS) == 1;
}

static void test_trywait_arms(void **state)
{
	struct fi_cq_attr cattr = {.wait_obj = FI_WAIT_FD};
	struct fi_cntr_attr nattr = {.wait_obj = FI_WAIT_FD};
	struct fid *fids[2];
	struct util_env env;
	struct fid_fabric *fab;
	struct fid_cntr *cntr;
	struct fid_cq *cq;
	struct util_ep *ep;
	char c = 'x';
	int fd = -1, cfd = -1;

	assert_int_equal(pipe(arm_pipe), 0);
	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	env.info->ep_attr->type = FI_EP_MSG;
	fab = &env.fabric->fabric_fid;
	assert_int_equal(
		ofi_cq_open(&env.domain->domain_fid, &cattr, &cq, NULL), 0);
	assert_int_equal(
		ofi_cntr_open(&env.domain->domain_fid, &nattr, &cntr, NULL), 0);
	ep = calloc(1, sizeof(*ep));
	assert_int_equal(ofi_ep_init(env.domain, env.info, ep, NULL, NULL), 0);
	ep->wait_fd = arm_wait_fd;
	assert_int_equal(
		fi_ep_bind(&ep->ep_fid, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &cntr->fid, FI_RECV), 0);
	assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	assert_int_equal(fi_control(&cntr->fid, FI_GETWAIT, &cfd), 0);
	fids[0] = &cq->fid;
	fids[1] = &cntr->fid;

	/* armed: traffic for the endpoint wakes both fds */
	assert_int_equal(fi_trywait(fab, fids, 2), 0);
	assert_false(fd_readable(fd));
	assert_int_equal(write(arm_pipe[1], &c, 1), 1);
	assert_true(fd_readable(fd));
	assert_true(fd_readable(cfd));
	/* progress took it: trywait collects the shot and re-arms */
	assert_int_equal(read(arm_pipe[0], &c, 1), 1);
	assert_int_equal(fi_trywait(fab, fids, 2), 0);
	assert_false(fd_readable(fd));
	assert_false(fd_readable(cfd));
	/* what came before the arming is not missed */
	assert_int_equal(write(arm_pipe[1], &c, 1), 1);
	assert_int_equal(fi_trywait(fab, fids, 2), 0);
	assert_true(fd_readable(fd));
	assert_int_equal(read(arm_pipe[0], &c, 1), 1);
	/* work no fd announces: the fd wakes after a nap */
	ep->wait_nap = true;
	assert_int_equal(fi_trywait(fab, fids, 2), 0);
	assert_false(fd_readable(fd));
	assert_true(fd_wakes(fd));
	assert_true(fd_wakes(cfd));
	ep->wait_nap = false;
	ep->wait_fd = NULL;
	assert_int_equal(fi_trywait(fab, fids, 2), 0);
	assert_true(fd_wakes(fd));
	/* auto progress: its thread signals; no nap either */
	ep->auto_progress = true;
	assert_int_equal(fi_trywait(fab, fids, 2), 0);
	assert_false(fd_wakes(fd));

	assert_int_equal(fi_close(&ep->ep_fid.fid), 0);
	assert_int_equal(fi_close(&cntr->fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
	util_env_close(&env);
	close(arm_pipe[0]);
	close(arm_pipe[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_set),
		cmocka_unit_test(test_trywait_kinds),
		cmocka_unit_test(test_ep_control),
		cmocka_unit_test(test_trywait_arms),
	};

	return cmocka_run_group_tests_name("util_wait", tests, NULL, NULL);
}
