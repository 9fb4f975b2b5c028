/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_plain.c - the plain data calls written once (prov/util/util_plain.c):
 * each reaches the *msg entry of its fid exactly once, with the message
 * and op flags fi_msg(3), fi_tagged(3), fi_rma(3) and fi_atomic(3) give
 * it, and refuses what it cannot read before any provider sees it.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "ofi_plain.h"
#include "ofi_util.h"

#define TX_FLAGS (FI_INJECT | FI_COMPLETION | FI_DELIVERY_COMPLETE)
#define RX_FLAGS (FI_COMPLETION | FI_MULTI_RECV)
#define INJ	 4096
#define IOVS	 4

/* The one *msg call a plain call made: what it was given. */
static struct rec {
	int calls;
	char what;
	/* what the call's stack held: copied while it lives */
	const struct iovec *iov_at;
	struct iovec iov0;
	bool has_desc;
	void *desc0;
	size_t count;
	fi_addr_t addr;
	void *context;
	uint64_t data, flags, tag, ignore;
	struct fi_rma_iov rma0;
	struct fi_rma_ioc rioc0;
	size_t rma_count;
	struct fi_ioc ioc0;
	enum fi_datatype dt;
	enum fi_op op;
	size_t cmp_count, res_count;
} r;

static ssize_t rec_msg(char what, const struct fi_msg *m, uint64_t flags)
{
	r.calls++;
	r.what = what;
	r.iov_at = m->msg_iov;
	r.iov0 = m->iov_count && m->msg_iov ? m->msg_iov[0] : (struct iovec){0};
	r.has_desc = m->desc != NULL;
	r.desc0 = m->desc && m->iov_count ? m->desc[0] : NULL;
	r.count = m->iov_count;
	r.addr = m->addr;
	r.context = m->context;
	r.data = m->data;
	r.flags = flags;
	return 0;
}

static ssize_t f_recvmsg(struct fid_ep *ep, const struct fi_msg *m,
			 uint64_t flags)
{
	(void)ep;
	return rec_msg('r', m, flags);
}

static ssize_t f_sendmsg(struct fid_ep *ep, const struct fi_msg *m,
			 uint64_t flags)
{
	(void)ep;
	return rec_msg('s', m, flags);
}

static ssize_t rec_tagged(char what, const struct fi_msg_tagged *m,
			  uint64_t flags)
{
	struct fi_msg plain = {m->msg_iov, m->desc,    m->iov_count,
			       m->addr,	   m->context, m->data};

	r.tag = m->tag;
	r.ignore = m->ignore;
	return rec_msg(what, &plain, flags);
}

static ssize_t f_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *m,
			  uint64_t flags)
{
	(void)ep;
	return rec_tagged('R', m, flags);
}

static ssize_t f_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *m,
			  uint64_t flags)
{
	(void)ep;
	return rec_tagged('S', m, flags);
}

static ssize_t rec_rma(char what, const struct fi_msg_rma *m, uint64_t flags)
{
	struct fi_msg plain = {m->msg_iov, m->desc,    m->iov_count,
			       m->addr,	   m->context, m->data};

	r.rma0 = m->rma_iov[0];
	r.rma_count = m->rma_iov_count;
	return rec_msg(what, &plain, flags);
}

static ssize_t f_readmsg(struct fid_ep *ep, const struct fi_msg_rma *m,
			 uint64_t flags)
{
	(void)ep;
	return rec_rma('g', m, flags);
}

static ssize_t f_writemsg(struct fid_ep *ep, const struct fi_msg_rma *m,
			  uint64_t flags)
{
	(void)ep;
	return rec_rma('p', m, flags);
}

static ssize_t rec_atomic(char what, const struct fi_msg_atomic *m,
			  uint64_t flags)
{
	r.calls++;
	r.what = what;
	r.ioc0 = m->iov_count ? m->msg_iov[0] : (struct fi_ioc){0};
	r.has_desc = m->desc != NULL;
	r.count = m->iov_count;
	r.addr = m->addr;
	r.rioc0 = m->rma_iov[0];
	r.rma_count = m->rma_iov_count;
	r.dt = m->datatype;
	r.op = m->op;
	r.context = m->context;
	r.data = m->data;
	r.flags = flags;
	return 0;
}

static ssize_t f_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			   uint64_t flags)
{
	(void)ep;
	return rec_atomic('a', m, flags);
}

static ssize_t f_fetchmsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			  struct fi_ioc *res, void **res_desc, size_t res_count,
			  uint64_t flags)
{
	(void)ep;
	(void)res;
	(void)res_desc;
	r.res_count = res_count;
	return rec_atomic('f', m, flags);
}

static ssize_t f_comparemsg(struct fid_ep *ep, const struct fi_msg_atomic *m,
			    const struct fi_ioc *cmp, void **cmp_desc,
			    size_t cmp_count, struct fi_ioc *res,
			    void **res_desc, size_t res_count, uint64_t flags)
{
	(void)ep;
	(void)cmp;
	(void)cmp_desc;
	(void)res;
	(void)res_desc;
	r.cmp_count = cmp_count;
	r.res_count = res_count;
	return rec_atomic('c', m, flags);
}

static const struct fi_ops_msg f_msg = {
	OFI_PLAIN_MSG_OPS(f_recvmsg, f_sendmsg),
};
static const struct fi_ops_tagged f_tagged = {
	OFI_PLAIN_TAGGED_OPS(f_trecvmsg, f_tsendmsg),
};
static const struct fi_ops_rma f_rma = {
	OFI_PLAIN_RMA_OPS(f_readmsg, f_writemsg),
};
static const struct fi_ops_atomic f_atomic = {
	OFI_PLAIN_ATOMIC_OPS(f_atomicmsg, f_fetchmsg, f_comparemsg),
};

static struct util_ep ep;
static struct fid_ep *fid = &ep.ep_fid;
static char buf[8192], cmpb[64], resb[64];
static void *desc = (void *)0x1234, *ctx = (void *)0x5678;

static int setup(void **state)
{
	(void)state;
	memset(&ep, 0, sizeof(ep));
	memset(&r, 0, sizeof(r));
	ep.ep_fid.msg = (struct fi_ops_msg *)&f_msg;
	ep.ep_fid.tagged = (struct fi_ops_tagged *)&f_tagged;
	ep.ep_fid.rma = (struct fi_ops_rma *)&f_rma;
	ep.ep_fid.atomic = (struct fi_ops_atomic *)&f_atomic;
	ep.tx_op_flags = TX_FLAGS;
	ep.rx_op_flags = RX_FLAGS;
	ep.inject_size = INJ;
	ep.iov_limit = IOVS;
	return 0;
}

/* One call, of @what, on one iov of @len bytes at buf. */
static void one_iov(char what, size_t len)
{
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.what, what);
	assert_int_equal(r.count, 1);
	assert_ptr_equal(r.iov0.iov_base, buf);
	assert_int_equal(r.iov0.iov_len, len);
}

static void test_msg(void **state)
{
	struct iovec iov[IOVS + 1] = {{buf, 10}, {buf, 20}};
	void *descs[IOVS + 1] = {desc, desc};

	(void)state;
	assert_int_equal(fi_send(fid, buf, 100, desc, 7, ctx), 0);
	one_iov('s', 100);
	assert_ptr_equal(r.desc0, desc);
	assert_int_equal(r.addr, 7);
	assert_ptr_equal(r.context, ctx);
	assert_int_equal(r.flags, TX_FLAGS);

	/* a default FI_INJECT holds only within inject_size */
	r.calls = 0;
	assert_int_equal(fi_send(fid, buf, INJ + 1, desc, 7, ctx), 0);
	assert_int_equal(r.flags, TX_FLAGS & ~FI_INJECT);

	r.calls = 0;
	assert_int_equal(fi_senddata(fid, buf, 8, desc, 99, 7, ctx), 0);
	one_iov('s', 8);
	assert_int_equal(r.data, 99);
	assert_int_equal(r.flags, TX_FLAGS | FI_REMOTE_CQ_DATA);

	/* fi_inject: its own flags, no desc, no context, no completion */
	r.calls = 0;
	assert_int_equal(fi_inject(fid, buf, 8, 7), 0);
	one_iov('s', 8);
	assert_false(r.has_desc);
	assert_null(r.context);
	assert_int_equal(r.flags, FI_INJECT | OFI_INJECT_NOCOMP);

	r.calls = 0;
	assert_int_equal(fi_injectdata(fid, buf, 8, 99, 7), 0);
	assert_false(r.has_desc);
	assert_int_equal(r.data, 99);
	assert_int_equal(r.flags,
			 FI_INJECT | FI_REMOTE_CQ_DATA | OFI_INJECT_NOCOMP);

	r.calls = 0;
	assert_int_equal(fi_sendv(fid, iov, descs, 2, 7, ctx), 0);
	assert_int_equal(r.calls, 1);
	assert_ptr_equal(r.iov_at, iov);
	assert_int_equal(r.count, 2);
	assert_int_equal(r.flags, TX_FLAGS);

	/* iovs it may not read: sized as unbounded, the funnel refuses */
	r.calls = 0;
	assert_int_equal(fi_sendv(fid, NULL, NULL, 2, 7, ctx), 0);
	assert_int_equal(r.flags, TX_FLAGS & ~FI_INJECT);
	r.calls = 0;
	assert_int_equal(fi_sendv(fid, iov, descs, IOVS + 1, 7, ctx), 0);
	assert_int_equal(r.count, IOVS + 1);
	assert_int_equal(r.flags, TX_FLAGS & ~FI_INJECT);

	r.calls = 0;
	assert_int_equal(fi_recv(fid, buf, 64, desc, 3, ctx), 0);
	one_iov('r', 64);
	assert_int_equal(r.addr, 3);
	assert_int_equal(r.flags, RX_FLAGS);
	r.calls = 0;
	assert_int_equal(fi_recvv(fid, iov, descs, 2, 3, ctx), 0);
	assert_int_equal(r.count, 2);
	assert_int_equal(r.flags, RX_FLAGS);
}

static void test_tagged(void **state)
{
	(void)state;
	assert_int_equal(fi_tsend(fid, buf, 100, desc, 7, 0xab, ctx), 0);
	one_iov('S', 100);
	assert_int_equal(r.tag, 0xab);
	assert_int_equal(r.flags, TX_FLAGS);

	r.calls = 0;
	assert_int_equal(fi_tinject(fid, buf, 8, 7, 0xab), 0);
	one_iov('S', 8);
	assert_false(r.has_desc);
	assert_null(r.context);
	assert_int_equal(r.flags, FI_INJECT | OFI_INJECT_NOCOMP);

	r.calls = 0;
	assert_int_equal(fi_tsenddata(fid, buf, 8, desc, 5, 7, 0xab, ctx), 0);
	assert_int_equal(r.data, 5);
	assert_int_equal(r.flags, TX_FLAGS | FI_REMOTE_CQ_DATA);

	r.calls = 0;
	assert_int_equal(fi_tinjectdata(fid, buf, 8, 5, 7, 0xab), 0);
	assert_int_equal(r.flags,
			 FI_INJECT | FI_REMOTE_CQ_DATA | OFI_INJECT_NOCOMP);

	r.calls = 0;
	assert_int_equal(fi_trecv(fid, buf, 64, desc, 3, 0xab, 0xf0, ctx), 0);
	one_iov('R', 64);
	assert_int_equal(r.tag, 0xab);
	assert_int_equal(r.ignore, 0xf0);
	assert_int_equal(r.flags, RX_FLAGS);
}

static void test_rma(void **state)
{
	struct iovec iov[IOVS + 1] = {{buf, 10}, {buf, 20}};
	void *descs[IOVS + 1] = {desc, desc};

	(void)state;
	/* reads never inject */
	assert_int_equal(fi_read(fid, buf, 64, desc, 7, 0x100, 9, ctx), 0);
	one_iov('g', 64);
	assert_int_equal(r.rma_count, 1);
	assert_int_equal(r.rma0.addr, 0x100);
	assert_int_equal(r.rma0.len, 64);
	assert_int_equal(r.rma0.key, 9);
	assert_int_equal(r.flags, TX_FLAGS & ~FI_INJECT);

	r.calls = 0;
	assert_int_equal(fi_readv(fid, iov, descs, 2, 7, 0x100, 9, ctx), 0);
	assert_int_equal(r.rma0.len, 30);

	/* the remote length is the iovs' total: bad iovs are not read */
	r.calls = 0;
	assert_int_equal(fi_readv(fid, NULL, NULL, 1, 7, 0x100, 9, ctx),
			 -FI_EINVAL);
	assert_int_equal(fi_writev(fid, iov, descs, IOVS + 1, 7, 0x100, 9, ctx),
			 -FI_EINVAL);
	assert_int_equal(r.calls, 0);

	assert_int_equal(fi_write(fid, buf, 64, desc, 7, 0x100, 9, ctx), 0);
	one_iov('p', 64);
	assert_int_equal(r.flags, TX_FLAGS);
	r.calls = 0;
	assert_int_equal(fi_write(fid, buf, INJ + 1, desc, 7, 0x100, 9, ctx),
			 0);
	assert_int_equal(r.flags, TX_FLAGS & ~FI_INJECT);

	r.calls = 0;
	assert_int_equal(fi_writev(fid, iov, descs, 2, 7, 0x100, 9, ctx), 0);
	assert_int_equal(r.rma0.len, 30);
	assert_int_equal(r.flags, TX_FLAGS);

	r.calls = 0;
	assert_int_equal(fi_writedata(fid, buf, 8, desc, 42, 7, 0x100, 9, ctx),
			 0);
	assert_int_equal(r.data, 42);
	assert_int_equal(r.flags, TX_FLAGS | FI_REMOTE_CQ_DATA);

	r.calls = 0;
	assert_int_equal(fi_inject_write(fid, buf, 8, 7, 0x100, 9), 0);
	one_iov('p', 8);
	assert_false(r.has_desc);
	assert_null(r.context);
	assert_int_equal(r.rma0.len, 8);
	assert_int_equal(r.flags, FI_INJECT | OFI_INJECT_NOCOMP);

	r.calls = 0;
	assert_int_equal(fi_inject_writedata(fid, buf, 8, 42, 7, 0x100, 9), 0);
	assert_int_equal(r.data, 42);
	assert_int_equal(r.flags,
			 FI_INJECT | FI_REMOTE_CQ_DATA | OFI_INJECT_NOCOMP);
}

static void test_atomic(void **state)
{
	struct fi_ioc ioc[2] = {{buf, 3}, {buf, 4}}, res[2] = {{resb, 2}};
	struct fi_ioc cmp[1] = {{cmpb, 7}};
	void *descs[2] = {desc, desc};

	(void)state;
	assert_int_equal(fi_atomic(fid, buf, 5, desc, 7, 0x100, 9, FI_UINT64,
				   FI_SUM, ctx),
			 0);
	assert_int_equal(r.what, 'a');
	assert_int_equal(r.count, 1);
	assert_ptr_equal(r.ioc0.addr, buf);
	assert_int_equal(r.ioc0.count, 5);
	assert_int_equal(r.rioc0.count, 5);
	assert_int_equal(r.rioc0.key, 9);
	assert_int_equal(r.dt, FI_UINT64);
	assert_int_equal(r.op, FI_SUM);
	assert_int_equal(r.flags, TX_FLAGS & ~FI_INJECT);

	assert_int_equal(fi_atomicv(fid, ioc, descs, 2, 7, 0x100, 9, FI_UINT64,
				    FI_SUM, ctx),
			 0);
	assert_int_equal(r.rioc0.count, 7);

	assert_int_equal(
		fi_inject_atomic(fid, buf, 5, 7, 0x100, 9, FI_UINT64, FI_SUM),
		0);
	assert_false(r.has_desc);
	assert_null(r.context);
	assert_int_equal(r.flags, FI_INJECT | OFI_INJECT_NOCOMP);

	/* an FI_ATOMIC_READ has an operand buffer it does not read; any
	 * other op without one has no operand */
	assert_int_equal(fi_fetch_atomic(fid, NULL, 2, NULL, resb, NULL, 7,
					 0x100, 9, FI_UINT64, FI_ATOMIC_READ,
					 ctx),
			 0);
	assert_int_equal(r.what, 'f');
	assert_int_equal(r.count, 1);
	assert_int_equal(r.res_count, 1);
	assert_int_equal(r.rioc0.count, 2);
	assert_int_equal(r.flags, TX_FLAGS & ~FI_INJECT);
	assert_int_equal(fi_fetch_atomic(fid, NULL, 2, NULL, resb, NULL, 7,
					 0x100, 9, FI_UINT64, FI_SUM, ctx),
			 0);
	assert_int_equal(r.count, 0);

	/* a fetch's remote count is its results' */
	assert_int_equal(fi_fetch_atomicv(fid, NULL, NULL, 0, res, descs, 1, 7,
					  0x100, 9, FI_UINT64, FI_ATOMIC_READ,
					  ctx),
			 0);
	assert_int_equal(r.rioc0.count, 2);

	assert_int_equal(fi_compare_atomic(fid, buf, 7, desc, cmpb, desc, resb,
					   desc, 7, 0x100, 9, FI_UINT64,
					   FI_CSWAP, ctx),
			 0);
	assert_int_equal(r.what, 'c');
	assert_int_equal(r.cmp_count, 1);
	assert_int_equal(r.res_count, 1);
	assert_int_equal(r.rioc0.count, 7);
	assert_int_equal(r.flags, TX_FLAGS & ~FI_INJECT);

	/* a compare's remote count is its operands' */
	assert_int_equal(fi_compare_atomicv(fid, ioc, descs, 2, cmp, descs, 1,
					    res, descs, 1, 7, 0x100, 9,
					    FI_UINT64, FI_CSWAP, ctx),
			 0);
	assert_int_equal(r.rioc0.count, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_msg, setup),
		cmocka_unit_test_setup(test_tagged, setup),
		cmocka_unit_test_setup(test_rma, setup),
		cmocka_unit_test_setup(test_atomic, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
