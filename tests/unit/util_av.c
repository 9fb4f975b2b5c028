/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_av.c - unit tests of util_av: TABLE/MAP insert order and reuse,
 * validation, FI_SYNC_ERR, FI_EVENT completions, lookup truncation, straddr,
 * remove, reverse lookup with FI_AV_USER_ID, insertsvc/insertsym, hostile
 * FI_ADDR_STR input, and the insert/remove callbacks of bound endpoints.
 */
#include <stdio.h>

#include "util_common.h"

struct bin_addr {
	uint32_t magic;
	uint32_t id;
};

static int bin_validate(struct util_av *av, const void *addr)
{
	const struct bin_addr *a = addr;

	return a->magic == 0xfab ? 0 : -FI_EINVAL;
}

static const struct util_av_attr bin_attr = {
	.addrlen = sizeof(struct bin_addr),
	.validate = bin_validate,
};

static int str_svc(struct util_av *av, const char *node, const char *service,
		   void *addr)
{
	snprintf(addr, 32, "t://%s:%s", node ? node : "", service);
	return 0;
}

static const struct util_av_attr str_attr = {
	.addrlen = 32,
	.svc_to_addr = str_svc,
};

static struct fid_av *av_open(struct util_env *env, enum fi_av_type type,
			      uint64_t flags, const struct util_av_attr *pa)
{
	struct fi_av_attr attr = {.type = type, .count = 2, .flags = flags};
	struct fid_av *av;

	assert_int_equal(
		ofi_av_open(&env->domain->domain_fid, &attr, pa, &av, NULL), 0);
	return av;
}

static void test_insert_table(void **state)
{
	struct util_env env;
	struct bin_addr a[4] =
		{
			{0xfab, 1},
			{0xfab, 2},
			{0xbad, 3},
			{0xfab, 4},
		},
			out;
	fi_addr_t fa[4];
	int errs[4];
	struct fid_av *av;
	size_t len;
	struct util_av *uav;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	av = av_open(&env, FI_AV_TABLE, 0, &bin_attr);
	uav = container_of(av, struct util_av, av_fid);
	/* Grows past attr.count; the bad one fails alone. */
	assert_int_equal(fi_av_insert(av, a, 4, fa, FI_SYNC_ERR, errs), 3);
	assert_int_equal(fa[0], 0);
	assert_int_equal(fa[1], 1);
	assert_int_equal(fa[2], FI_ADDR_NOTAVAIL);
	assert_int_equal(fa[3], 2);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[2], FI_EINVAL);
	assert_int_equal(fi_av_insert(av, a, 1, fa, FI_SEND, NULL), -FI_EINVAL);
	assert_int_equal(fi_av_insert(av, a, 1, fa, FI_SYNC_ERR, NULL),
			 -FI_EINVAL);

	len = sizeof(out);
	assert_int_equal(fi_av_lookup(av, 1, &out, &len), 0);
	assert_int_equal(len, sizeof(out));
	assert_int_equal(out.id, 2);
	/* Too small a buffer: truncated copy, needed size reported. */
	memset(&out, 0, sizeof(out));
	len = 4;
	assert_int_equal(fi_av_lookup(av, 2, &out, &len), 0);
	assert_int_equal(len, sizeof(out));
	assert_int_equal(out.magic, 0xfab);
	assert_int_equal(out.id, 0);
	assert_int_equal(fi_av_lookup(av, 7, &out, &len), -FI_EINVAL);

	assert_int_equal(ofi_av_reverse_lookup(uav, &a[3]), 2);
	assert_int_equal(ofi_av_reverse_lookup(uav, &a[2]), FI_ADDR_NOTAVAIL);
	assert_int_equal(ofi_av_get_addr(uav, 0, &out), 0);
	assert_int_equal(out.id, 1);

	fa[0] = 0;
	fa[1] = 9;
	assert_int_equal(fi_av_remove(av, fa, 2, 0), -FI_EINVAL);
	assert_int_equal(fi_av_remove(av, fa, 1, 1), -FI_EINVAL);
	assert_int_equal(fi_av_remove(av, fa, 1, 0), 0);
	assert_int_equal(fi_av_lookup(av, 0, &out, &len), -FI_EINVAL);
	assert_int_equal(ofi_av_reverse_lookup(uav, &a[0]), FI_ADDR_NOTAVAIL);
	/* The lowest free index is reused. */
	assert_int_equal(fi_av_insert(av, &a[0], 1, fa, 0, NULL), 1);
	assert_int_equal(fa[0], 0);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

static void test_user_id_and_straddr(void **state)
{
	struct util_env env;
	struct bin_addr a = {0xfab, 0x01020304};
	fi_addr_t fa = 555;
	struct fid_av *av;
	char buf[64], tiny[8];
	size_t len;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	av = av_open(&env, FI_AV_MAP, 0, &bin_attr);
	assert_int_equal(fi_av_insert(av, &a, 1, NULL, FI_AV_USER_ID, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_av_insert(av, &a, 1, &fa, FI_AV_USER_ID, NULL), 1);
	assert_int_equal(fa, 0);
	assert_int_equal(
		ofi_av_src_addr(container_of(av, struct util_av, av_fid), &a),
		555);
	len = sizeof(buf);
	assert_ptr_equal(fi_av_straddr(av, &a, buf, &len), buf);
	assert_string_equal(buf, "fi_addr_hex://0xab0f000004030201");
	assert_int_equal(len, strlen(buf) + 1);
	len = sizeof(tiny);
	fi_av_straddr(av, &a, tiny, &len);
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
	assert_int_equal(len, strlen(buf) + 1);
	assert_int_equal(fi_av_insertsvc(av, "n", "1", &fa, 0, NULL),
			 -FI_ENOSYS);
	assert_int_equal(fi_av_insertsym(av, "n", 1, "1", 1, &fa, 0, NULL),
			 -FI_ENOSYS);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

static void test_async(void **state)
{
	struct util_env env;
	struct bin_addr a[2] = {{0xfab, 1}, {0xbad, 2}};
	struct fi_eq_attr eattr = {.wait_obj = FI_WAIT_NONE};
	struct fi_eq_err_entry err;
	struct fi_eq_entry ent;
	fi_addr_t fa[2];
	struct fid_eq *eq;
	struct fid_av *av;
	uint32_t event;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	av = av_open(&env, FI_AV_TABLE, FI_EVENT, &bin_attr);
	assert_int_equal(fi_av_insert(av, a, 2, fa, 0, NULL), -FI_ENOEQ);
	assert_int_equal(fi_eq_open(&env.fabric->fabric_fid, &eattr, &eq, NULL),
			 0);
	assert_int_equal(fi_av_bind(av, &eq->fid, 1), -FI_EINVAL);
	assert_int_equal(fi_av_bind(av, &eq->fid, 0), 0);
	assert_int_equal(fi_av_insert(av, a, 2, fa, FI_SYNC_ERR, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_av_insert(av, a, 2, fa, 0, (void *)0x77), 0);
	assert_int_equal(fi_eq_read(eq, &event, &ent, sizeof(ent), 0),
			 -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(fi_eq_readerr(eq, &err, 0), sizeof(err));
	assert_int_equal(err.err, FI_EINVAL);
	assert_int_equal(err.data, 1);
	assert_ptr_equal(err.context, (void *)0x77);
	assert_int_equal(fi_eq_read(eq, &event, &ent, sizeof(ent), 0),
			 sizeof(ent));
	assert_int_equal(event, FI_AV_COMPLETE);
	assert_int_equal(ent.data, 1);
	assert_ptr_equal(ent.fid, &av->fid);
	assert_int_equal(fa[0], 0);
	assert_int_equal(fa[1], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_close(&eq->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&av->fid), 0);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

static void test_strings(void **state)
{
	struct util_env env;
	const char *names[2] = {"t://a:1", "t://b:2"};
	char buf[32], toolong[40];
	const char *bad[1] = {toolong};
	fi_addr_t fa[8];
	struct fid_av *av;
	size_t len;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_ADDR_STR);
	av = av_open(&env, FI_AV_TABLE, 0, &str_attr);
	assert_int_equal(fi_av_insert(av, names, 2, fa, 0, NULL), 2);
	memset(toolong, 'x', sizeof(toolong) - 1);
	toolong[sizeof(toolong) - 1] = '\0';
	assert_int_equal(fi_av_insert(av, bad, 1, fa, 0, NULL), 0);
	len = sizeof(buf);
	assert_int_equal(fi_av_lookup(av, 1, buf, &len), 0);
	assert_string_equal(buf, "t://b:2");
	assert_int_equal(len, strlen("t://b:2") + 1);
	len = sizeof(buf);
	assert_string_equal(fi_av_straddr(av, names[0], buf, &len), "t://a:1");

	/* FI_ADDR_STR node with no service is an address in itself. */
	assert_int_equal(fi_av_insertsvc(av, "t://c:3", NULL, fa, 0, NULL), 1);
	assert_int_equal(fa[0], 2);
	assert_int_equal(fi_av_insertsvc(av, "host", "7", fa, 0, NULL), 1);
	assert_int_equal(
		ofi_av_reverse_lookup(container_of(av, struct util_av, av_fid),
				      "t://host:7"),
		3);

	assert_int_equal(fi_av_insertsym(av, "node08", 2, "10", 2, fa, 0, NULL),
			 4);
	len = sizeof(buf);
	fi_av_lookup(av, fa[1], buf, &len);
	assert_string_equal(buf, "t://node08:11");
	len = sizeof(buf);
	fi_av_lookup(av, fa[2], buf, &len);
	assert_string_equal(buf, "t://node09:10");
	assert_int_equal(
		fi_av_insertsym(av, "10.0.0.255", 2, "5", 1, fa, 0, NULL), 2);
	len = sizeof(buf);
	fi_av_lookup(av, fa[1], buf, &len);
	assert_string_equal(buf, "t://10.0.1.0:5");
	assert_int_equal(fi_av_insertsym(av, "x", 0, "5", 1, fa, 0, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

/*
 * Names are application input (what fuzz_av found): a short or empty
 * packed name is not a pointer, an unterminated one ends the packed names,
 * unreadable pointers are invalid, insertsym's service and node suffix
 * must count up, and a lookup may ask for the size alone.
 */
static void test_hostile_strings(void **state)
{
	struct util_env env;
	char packed[4 * 32], buf[32];
	const char *ptrs[3] = {"t://a:1", NULL, (const char *)0x10};
	fi_addr_t fa[4];
	struct fid_av *av;
	size_t len;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_ADDR_STR);
	av = av_open(&env, FI_AV_TABLE, 0, &str_attr);
	memset(packed, 0, sizeof(packed));
	memcpy(packed, "ab\0t://a:1", 11);
	assert_int_equal(fi_av_insert(av, packed, 2, fa, 0, NULL), 2);
	len = sizeof(buf);
	assert_int_equal(fi_av_lookup(av, fa[1], buf, &len), 0);
	assert_string_equal(buf, "t://a:1");
	/* Empty names, then bytes that would be a wild pointer. */
	memset(packed, 0, sizeof(packed));
	packed[20] = 0x30;
	assert_int_equal(fi_av_insert(av, packed, 4, fa, 0, NULL), 4);
	/* Unterminated: neither it nor the next name is read. */
	memset(packed, 'x', 32);
	memcpy(packed + 32, "t://b:2", 8);
	assert_int_equal(fi_av_insert(av, packed, 2, fa, 0, NULL), 0);
	assert_int_equal(fa[1], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_av_insert(av, ptrs, 3, fa, 0, NULL), 1);
	assert_int_equal(fa[2], FI_ADDR_NOTAVAIL);

	assert_int_equal(fi_av_insertsym(av, "n1", 1, "99999999999999999999", 1,
					 fa, 0, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_av_insertsym(av, "n1", 1, "9223372036854775807", 2,
					 fa, 0, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_av_insertsym(av, "n1", 1, "http", 1, fa, 0, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_av_insertsym(av, "n1", 1, "-1", 1, fa, 0, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_av_insertsym(av, "n99999999999999999999999", 1, "1",
					 1, fa, 0, NULL),
			 0);
	len = 0;
	assert_int_equal(fi_av_lookup(av, 0, NULL, &len), 0);
	assert_int_equal(len, strlen("ab") + 1);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

/* Callbacks of bound endpoints: what was removed and what reuses it. */
static struct {
	int removed, inserted, reused;
	fi_addr_t last;
} av_events;

static void ep_removed(struct util_ep *ep, fi_addr_t addr)
{
	(void)ep;
	av_events.removed++;
	av_events.last = addr;
}

static void ep_inserted(struct util_ep *ep, fi_addr_t addr, bool reused)
{
	(void)ep;
	av_events.inserted++;
	av_events.reused += reused;
	av_events.last = addr;
}

static const struct ofi_av_ep_ops test_av_ep_ops = {
	.removed = ep_removed,
	.inserted = ep_inserted,
};

static void test_ep_callbacks(void **state)
{
	struct bin_addr a[3] = {{0xfab, 1}, {0xfab, 2}, {0xfab, 3}};
	struct util_env env;
	struct util_ep *ep;
	struct fid_av *av;
	fi_addr_t fa[3];

	(void)state;
	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	av = av_open(&env, FI_AV_TABLE, 0, &bin_attr);
	ep = calloc(1, sizeof(*ep));
	assert_non_null(ep);
	assert_int_equal(ofi_ep_init(env.domain, env.info, ep, NULL, NULL), 0);
	ep->av_ops = &test_av_ep_ops;
	assert_int_equal(fi_ep_bind(&ep->ep_fid, &av->fid, 0), 0);
	memset(&av_events, 0, sizeof(av_events));

	assert_int_equal(fi_av_insert(av, a, 2, fa, 0, NULL), 2);
	assert_int_equal(av_events.inserted, 2);
	assert_int_equal(av_events.reused, 0);
	assert_int_equal(fi_av_remove(av, &fa[0], 1, 0), 0);
	assert_int_equal(av_events.removed, 1);
	assert_int_equal(av_events.last, fa[0]);
	/* The third address takes the first one's slot: reuse is reported. */
	assert_int_equal(fi_av_insert(av, &a[2], 1, &fa[2], 0, NULL), 1);
	assert_int_equal(fa[2], fa[0]);
	assert_int_equal(av_events.inserted, 3);
	assert_int_equal(av_events.reused, 1);
	assert_int_equal(av_events.last, fa[0]);
	/* A failed remove reports nothing. */
	fa[0] = 99;
	assert_int_equal(fi_av_remove(av, &fa[0], 1, 0), -FI_EINVAL);
	assert_int_equal(av_events.removed, 1);

	/* Detached (closing) endpoints hear nothing more. */
	ofi_ep_detach(ep);
	assert_int_equal(fi_av_remove(av, &fa[1], 1, 0), 0);
	assert_int_equal(av_events.removed, 1);
	assert_int_equal(fi_close(&av->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&ep->ep_fid.fid), 0);
	assert_int_equal(fi_close(&av->fid), 0);
	util_env_close(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_table),
		cmocka_unit_test(test_user_id_and_straddr),
		cmocka_unit_test(test_async),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_hostile_strings),
		cmocka_unit_test(test_ep_callbacks),
	};

	return cmocka_run_group_tests_name("util_av", tests, NULL, NULL);
}
