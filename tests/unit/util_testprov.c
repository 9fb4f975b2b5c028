/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_testprov.c - end-to-end test of prov/util through the public API only:
 * loads the "testprov" provider from FI_PROVIDER_PATH and runs
 * fi_getinfo -> fabric -> domain -> endpoints -> send/recv/tagged/inject ->
 * completions, counters, FI_SOURCE, directed receive and truncation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#ifndef TESTPROV_BUILD_DIR
#define TESTPROV_BUILD_DIR "tests/prov/.libs"
#endif

struct tp_env {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq[2];
	struct fid_cntr *cntr[2];
	struct fid_ep *ep[2];
	fi_addr_t addr[2];
};

static struct fi_info *tp_getinfo(void)
{
	struct fi_info *hints, *list, *fi, *pick = NULL;
	int ret;

	hints = fi_allocinfo();
	assert_non_null(hints);
	hints->caps = FI_MSG | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("testprov");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &list);
	fi_freeinfo(hints);
	assert_int_equal(ret, 0);
	for (fi = list; fi && !pick; fi = fi->next) {
		if (!strcmp(fi->fabric_attr->prov_name, "testprov"))
			pick = fi_dupinfo(fi);
	}
	fi_freeinfo(list);
	assert_non_null(pick);
	return pick;
}

static void tp_open(struct tp_env *env)
{
	struct fi_cq_attr cattr = {
		.format = FI_CQ_FORMAT_TAGGED,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	struct fi_cntr_attr nattr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	struct fi_av_attr aattr = {.type = FI_AV_TABLE};
	char name[64];
	size_t len;
	int i;

	memset(env, 0, sizeof(*env));
	env->info = tp_getinfo();
	assert_int_equal(env->info->addr_format, FI_ADDR_STR);
	assert_true(env->info->caps & FI_DIRECTED_RECV);
	assert_int_equal(fi_fabric(env->info->fabric_attr, &env->fabric, NULL),
			 0);
	assert_int_equal(fi_domain(env->fabric, env->info, &env->domain, NULL),
			 0);
	assert_int_equal(fi_av_open(env->domain, &aattr, &env->av, NULL), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(
			fi_cq_open(env->domain, &cattr, &env->cq[i], NULL), 0);
		assert_int_equal(
			fi_cntr_open(env->domain, &nattr, &env->cntr[i], NULL),
			0);
		assert_int_equal(
			fi_endpoint(env->domain, env->info, &env->ep[i], NULL),
			0);
		/* Nothing may move before the endpoint is enabled. */
		assert_int_equal(fi_send(env->ep[i], "x", 1, NULL, 0, NULL),
				 -FI_EOPBADSTATE);
		assert_int_equal(fi_enable(env->ep[i]), -FI_ENOAV);
		assert_int_equal(fi_ep_bind(env->ep[i], &env->av->fid, 0), 0);
		assert_int_equal(fi_ep_bind(env->ep[i], &env->cq[i]->fid,
					    FI_TRANSMIT | FI_RECV),
				 0);
		assert_int_equal(fi_ep_bind(env->ep[i], &env->cntr[i]->fid,
					    FI_SEND | FI_RECV),
				 0);
		assert_int_equal(fi_enable(env->ep[i]), 0);
		len = 4;
		assert_int_equal(fi_getname(&env->ep[i]->fid, name, &len),
				 -FI_ETOOSMALL);
		len = sizeof(name);
		assert_int_equal(fi_getname(&env->ep[i]->fid, name, &len), 0);
		assert_int_equal(len, strlen(name) + 1);
		assert_memory_equal(name, "testprov://", 11);
		{
			const char *names[1] = {name};

			assert_int_equal(fi_av_insert(env->av, names, 1,
						      &env->addr[i], 0, NULL),
					 1);
		}
	}
}

static void tp_close(struct tp_env *env)
{
	int i;

	assert_int_equal(fi_close(&env->domain->fid), -FI_EBUSY);
	for (i = 0; i < 2; i++) {
		assert_int_equal(fi_close(&env->ep[i]->fid), 0);
		assert_int_equal(fi_close(&env->cq[i]->fid), 0);
		assert_int_equal(fi_close(&env->cntr[i]->fid), 0);
	}
	assert_int_equal(fi_close(&env->av->fid), 0);
	assert_int_equal(fi_close(&env->domain->fid), 0);
	assert_int_equal(fi_close(&env->fabric->fid), 0);
	fi_freeinfo(env->info);
}

static void test_msg(void **state)
{
	struct tp_env env;
	struct fi_cq_tagged_entry c;
	char rbuf[32] = {0};
	fi_addr_t src;

	tp_open(&env);
	assert_int_equal(fi_recv(env.ep[1], rbuf, sizeof(rbuf), NULL,
				 FI_ADDR_UNSPEC, (void *)0x11),
			 0);
	assert_int_equal(fi_cq_read(env.cq[1], &c, 1), -FI_EAGAIN);
	assert_int_equal(
		fi_send(env.ep[0], "hello", 6, NULL, env.addr[1], (void *)0x22),
		0);
	assert_int_equal(fi_cq_read(env.cq[0], &c, 1), 1);
	assert_ptr_equal(c.op_context, (void *)0x22);
	assert_true(c.flags & FI_SEND);
	assert_int_equal(fi_cq_readfrom(env.cq[1], &c, 1, &src), 1);
	assert_ptr_equal(c.op_context, (void *)0x11);
	assert_int_equal(c.flags, FI_RECV | FI_MSG);
	assert_int_equal(c.len, 6);
	assert_int_equal(src, env.addr[0]);
	assert_string_equal(rbuf, "hello");
	assert_int_equal(fi_cntr_read(env.cntr[0]), 1);
	assert_int_equal(fi_cntr_read(env.cntr[1]), 1);

	/* Unexpected path, with remote CQ data. */
	assert_int_equal(
		fi_senddata(env.ep[1], "abc", 4, NULL, 99, env.addr[0], NULL),
		0);
	assert_int_equal(fi_recv(env.ep[0], rbuf, sizeof(rbuf), NULL,
				 FI_ADDR_UNSPEC, (void *)0x33),
			 0);
	assert_int_equal(fi_cq_sread(env.cq[0], &c, 1, NULL, 100), 1);
	assert_int_equal(c.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	assert_int_equal(c.data, 99);
	assert_string_equal(rbuf, "abc");
	assert_int_equal(fi_cq_read(env.cq[1], &c, 1), 1);

	/* Inject: no sender completion, counter still moves. */
	assert_int_equal(fi_inject(env.ep[0], "inj", 4, env.addr[1]), 0);
	assert_int_equal(fi_cq_read(env.cq[0], &c, 1), -FI_EAGAIN);
	assert_int_equal(fi_cntr_wait(env.cntr[0], 2, 100), 0);
	assert_int_equal(fi_recv(env.ep[1], rbuf, sizeof(rbuf), NULL,
				 FI_ADDR_UNSPEC, NULL),
			 0);
	assert_int_equal(fi_cq_read(env.cq[1], &c, 1), 1);
	assert_string_equal(rbuf, "inj");
	{
		static char big[1024];

		assert_int_equal(
			fi_inject(env.ep[0], big, sizeof(big), env.addr[1]),
			-FI_EINVAL);
	}
	assert_int_equal(fi_send(env.ep[0], "x", 1, NULL, 77, NULL),
			 -FI_EINVAL);
	tp_close(&env);
}

static void test_tagged(void **state)
{
	struct tp_env env;
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry err;
	char a[16] = {0}, b[16] = {0}, tiny[2];

	tp_open(&env);
	assert_int_equal(fi_trecv(env.ep[1], a, sizeof(a), NULL, FI_ADDR_UNSPEC,
				  0x100, 0, (void *)1),
			 0);
	assert_int_equal(fi_trecv(env.ep[1], b, sizeof(b), NULL, FI_ADDR_UNSPEC,
				  0x200, 0xff, (void *)2),
			 0);
	/* Matches the second receive through its ignore mask. */
	assert_int_equal(
		fi_tsend(env.ep[0], "two", 4, NULL, env.addr[1], 0x2ab, NULL),
		0);
	assert_int_equal(fi_cq_read(env.cq[1], &c, 1), 1);
	assert_ptr_equal(c.op_context, (void *)2);
	assert_int_equal(c.tag, 0x2ab);
	assert_int_equal(c.flags, FI_RECV | FI_TAGGED);
	assert_string_equal(b, "two");
	assert_int_equal(
		fi_tsend(env.ep[0], "one", 4, NULL, env.addr[1], 0x100, NULL),
		0);
	assert_int_equal(fi_cq_read(env.cq[1], &c, 1), 1);
	assert_ptr_equal(c.op_context, (void *)1);
	assert_string_equal(a, "one");
	/* Untagged receives never see tagged messages. */
	assert_int_equal(fi_recv(env.ep[1], a, sizeof(a), NULL, FI_ADDR_UNSPEC,
				 (void *)3),
			 0);
	assert_int_equal(fi_tinject(env.ep[0], "t", 2, env.addr[1], 5), 0);
	assert_int_equal(fi_cq_read(env.cq[1], &c, 1), -FI_EAGAIN);

	/* Directed receive: only from the named source. */
	assert_int_equal(fi_trecv(env.ep[1], b, sizeof(b), NULL, env.addr[1], 5,
				  0, (void *)4),
			 0);
	assert_int_equal(fi_cq_read(env.cq[1], &c, 1), -FI_EAGAIN);
	assert_int_equal(fi_trecv(env.ep[1], b, sizeof(b), NULL, env.addr[0], 5,
				  0, (void *)5),
			 0);
	assert_int_equal(fi_cq_read(env.cq[1], &c, 1), 1);
	assert_ptr_equal(c.op_context, (void *)5);

	/* ep0's two tsends completed; its tinject did not report. */
	assert_int_equal(fi_cq_read(env.cq[0], &c, 1), 1);
	assert_int_equal(c.flags, FI_SEND | FI_TAGGED);
	assert_int_equal(fi_cq_read(env.cq[0], &c, 1), 1);
	assert_int_equal(fi_cq_read(env.cq[0], &c, 1), -FI_EAGAIN);

	/* Truncation reaches the CQ as an FI_ETRUNC error entry. */
	assert_int_equal(fi_trecv(env.ep[0], tiny, sizeof(tiny), NULL,
				  FI_ADDR_UNSPEC, 9, 0, (void *)6),
			 0);
	assert_int_equal(
		fi_tsend(env.ep[1], "toolong", 8, NULL, env.addr[0], 9, NULL),
		0);
	assert_int_equal(fi_cq_read(env.cq[0], &c, 1), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(fi_cq_readerr(env.cq[0], &err, 0), 1);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_int_equal(err.olen, 6);
	assert_ptr_equal(err.op_context, (void *)6);
	assert_memory_equal(tiny, "to", 2);
	assert_int_equal(fi_cntr_readerr(env.cntr[0]), 1);
	tp_close(&env);
}

static void test_objects(void **state)
{
	struct tp_env env;
	struct fi_eq_attr eattr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_eq_entry ent;
	struct fid_eq *eq;
	struct fid_mr *mr;
	char buf[64], str[64];
	fi_addr_t fa;
	size_t len;
	uint32_t ev;

	tp_open(&env);
	assert_int_equal(fi_eq_open(env.fabric, &eattr, &eq, NULL), 0);
	assert_int_equal(fi_eq_sread(eq, &ev, &ent, sizeof(ent), 10, 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_close(&eq->fid), 0);
	assert_int_equal(fi_mr_reg(env.domain, buf, sizeof(buf), FI_SEND, 0, 5,
				   0, &mr, NULL),
			 0);
	assert_int_equal(fi_mr_key(mr), 5);
	assert_int_equal(fi_close(&mr->fid), 0);
	assert_int_equal(fi_av_insertsvc(env.av, NULL, "41", &fa, 0, NULL), 1);
	len = sizeof(str);
	assert_int_equal(fi_av_lookup(env.av, fa, str, &len), 0);
	assert_string_equal(str, "testprov://41");
	len = sizeof(str);
	assert_string_equal(fi_av_straddr(env.av, "testprov://41", str, &len),
			    "testprov://41");
	assert_int_equal(fi_av_insertsvc(env.av, NULL, "nope", &fa, 0, NULL),
			 0);
	/* An address nobody listens on. */
	assert_int_equal(fi_av_insertsvc(env.av, NULL, "41", &fa, 0, NULL), 1);
	assert_int_equal(fi_send(env.ep[0], "x", 1, NULL, fa, NULL),
			 -FI_EHOSTUNREACH);
	assert_int_equal(fi_cancel(&env.ep[0]->fid, NULL), -FI_ENOSYS);
	tp_close(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_msg),
		cmocka_unit_test(test_tagged),
		cmocka_unit_test(test_objects),
	};
	const char *dir = getenv("TESTPROV_DIR");

	setenv("FI_PROVIDER_PATH", dir ? dir : TESTPROV_BUILD_DIR, 1);
	return cmocka_run_group_tests_name("util_testprov", tests, NULL, NULL);
}
