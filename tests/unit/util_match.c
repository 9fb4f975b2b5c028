/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_match.c - unit tests of prov/util's receive matching (ofi_match.h)
 * and completion writers (util_comp.c), through the util API alone: a
 * stand-in provider embeds the generic entries and moves bytes with
 * memcpy, the CQ and counters are util's. Also shared receive and
 * transmit contexts (util_srx, util_stx).
 */
#include "ofi_match.h"
#include "util_common.h"

#define NRX 8

struct t_rx {
	struct ofi_rx_entry m;
	char *buf;
};

struct t_unexp {
	struct ofi_unexp_msg m;
	int id;
	char payload[64];
};

struct t_prov {
	struct util_env env;
	struct util_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *rx_cntr;
	struct fid_cntr *tx_cntr;
	struct ofi_match_queue q;
	struct t_rx rx[NRX];
	int discarded[8];
	int ndiscarded;
	int delivered;
	fi_addr_t resolved; /* what resolve_addr answers */
	int resolves;
	bool hold; /* deliver without reporting the slice (async) */
	struct ofi_rx_slice held;
	struct ofi_rx_entry *held_rx;
};

static struct t_prov *tp_of(struct ofi_match_queue *q)
{
	return container_of(q, struct t_prov, q);
}

static struct ofi_rx_done t_done(uint64_t tag, int err)
{
	struct ofi_rx_done d = {
		.flags = FI_RECV | FI_TAGGED,
		.tag = tag,
		.src_addr = FI_ADDR_NOTAVAIL,
		.err = err,
	};
	return d;
}

static void t_deliver(struct ofi_match_queue *q, struct ofi_rx_entry *m,
		      struct ofi_unexp_msg *um, const struct ofi_rx_slice *s)
{
	struct t_prov *tp = tp_of(q);
	struct t_rx *rx = container_of(m, struct t_rx, m);
	struct t_unexp *u = container_of(um, struct t_unexp, m);
	struct ofi_rx_done d = t_done(um->tag, 0);

	memcpy(rx->buf + s->off, u->payload, s->len);
	d.flags = FI_RECV | um->cq_flags;
	d.data = um->data;
	tp->delivered++;
	free(u);
	if (tp->hold) {
		tp->held = *s;
		tp->held_rx = m;
		return;
	}
	ofi_match_done(q, m, s, &d);
}

static void t_discard(struct ofi_match_queue *q, struct ofi_unexp_msg *um,
		      int status)
{
	struct t_prov *tp = tp_of(q);
	struct t_unexp *u = container_of(um, struct t_unexp, m);

	(void)status;
	if (tp->ndiscarded < 8)
		tp->discarded[tp->ndiscarded++] = u->id;
	free(u);
}

static fi_addr_t t_resolve(struct ofi_match_queue *q, struct ofi_unexp_msg *um)
{
	(void)um;
	tp_of(q)->resolves++;
	return tp_of(q)->resolved;
}

static const struct ofi_match_ops t_ops = {
	.deliver = t_deliver,
	.discard = t_discard,
	.resolve_addr = t_resolve,
};

static struct fid_cntr *t_cntr(struct t_prov *tp)
{
	struct fi_cntr_attr attr = {.wait_obj = FI_WAIT_NONE};
	struct fid_cntr *c;

	assert_int_equal(
		ofi_cntr_open(&tp->env.domain->domain_fid, &attr, &c, NULL), 0);
	return c;
}

static struct t_prov *t_open(uint64_t caps, uint64_t cq_bind)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 64};
	struct t_prov *tp = calloc(1, sizeof(*tp));
	int i;

	assert_non_null(tp);
	util_env_open(&tp->env, FI_VERSION(1, 17), 0, caps, FI_FORMAT_UNSPEC);
	tp->env.info->caps = caps;
	tp->ep = calloc(1, sizeof(*tp->ep));
	assert_int_equal(
		ofi_ep_init(tp->env.domain, tp->env.info, tp->ep, NULL, NULL),
		0);
	tp->ep->caps = caps;
	tp->ep->min_multi_recv = 64;
	assert_int_equal(
		ofi_cq_open(&tp->env.domain->domain_fid, &attr, &tp->cq, NULL),
		0);
	assert_int_equal(fi_ep_bind(&tp->ep->ep_fid, &tp->cq->fid,
				    FI_TRANSMIT | FI_RECV | cq_bind),
			 0);
	tp->rx_cntr = t_cntr(tp);
	tp->tx_cntr = t_cntr(tp);
	assert_int_equal(fi_ep_bind(&tp->ep->ep_fid, &tp->rx_cntr->fid,
				    FI_RECV | FI_REMOTE_WRITE),
			 0);
	assert_int_equal(fi_ep_bind(&tp->ep->ep_fid, &tp->tx_cntr->fid,
				    FI_SEND | FI_READ),
			 0);
	ofi_match_init(&tp->q, tp->ep, &t_ops);
	for (i = 0; i < NRX; i++) {
		tp->rx[i].buf = calloc(1, 256);
		ofi_match_rx_add(&tp->q, &tp->rx[i].m);
	}
	tp->resolved = FI_ADDR_NOTAVAIL;
	return tp;
}

static void t_close(struct t_prov *tp)
{
	int i;

	ofi_match_flush(&tp->q, -FI_ECANCELED);
	if (tp->ep)
		assert_int_equal(fi_close(&tp->ep->ep_fid.fid), 0);
	assert_int_equal(fi_close(&tp->cq->fid), 0);
	assert_int_equal(fi_close(&tp->rx_cntr->fid), 0);
	assert_int_equal(fi_close(&tp->tx_cntr->fid), 0);
	util_env_close(&tp->env);
	for (i = 0; i < NRX; i++)
		free(tp->rx[i].buf);
	free(tp);
}

static struct t_rx *t_post(struct t_prov *tp, void *ctx, uint64_t flags,
			   fi_addr_t addr, uint64_t tag, uint64_t ignore,
			   bool tagged, size_t size)
{
	struct ofi_rx_entry *m;

	m = ofi_match_rx_get(&tp->q, ctx, flags, addr, tag, ignore, tagged,
			     size);
	assert_non_null(m);
	ofi_match_post(&tp->q, m);
	return container_of(m, struct t_rx, m);
}

static void t_unexp(struct t_prov *tp, int id, bool tagged, fi_addr_t addr,
		    uint64_t tag, const char *payload)
{
	struct t_unexp *u = calloc(1, sizeof(*u));

	u->id = id;
	u->m.addr = addr;
	u->m.tag = tag;
	u->m.data = 1000 + id;
	u->m.size = strlen(payload);
	u->m.cq_flags = (tagged ? FI_TAGGED : FI_MSG) | FI_REMOTE_CQ_DATA;
	u->m.tagged = tagged;
	memcpy(u->payload, payload, u->m.size);
	ofi_match_unexp_add(&tp->q, &u->m);
}

/* An arriving message of @size: matched, taken and completed in place. */
static struct ofi_rx_entry *t_arrive(struct t_prov *tp, bool tagged,
				     fi_addr_t addr, uint64_t tag, size_t size,
				     struct ofi_rx_slice *s, bool finish)
{
	struct ofi_rx_entry *m = ofi_match_posted(&tp->q, tagged, addr, tag);
	struct ofi_rx_done d = t_done(tag, 0);

	if (!m)
		return NULL;
	ofi_match_take(&tp->q, m, size, s);
	if (finish)
		ofi_match_done(&tp->q, m, s, &d);
	return m;
}

static void t_read(struct t_prov *tp, struct fi_cq_tagged_entry *e)
{
	assert_int_equal(fi_cq_read(tp->cq, e, 1), 1);
}

static void t_readerr(struct t_prov *tp, struct fi_cq_err_entry *e)
{
	assert_int_equal(fi_cq_read(tp->cq, e, 1), -FI_EAVAIL);
	memset(e, 0, sizeof(*e));
	assert_int_equal(fi_cq_readerr(tp->cq, e, 0), 1);
}

static void t_empty(struct t_prov *tp)
{
	struct fi_cq_tagged_entry e;

	assert_int_equal(fi_cq_read(tp->cq, &e, 1), -FI_EAGAIN);
}

static void test_tag_ignore_order(void **state)
{
	struct t_prov *tp = t_open(FI_MSG | FI_TAGGED, 0);
	struct fi_cq_tagged_entry e;
	struct ofi_rx_slice s;
	struct t_rx *a, *b;

	(void)state;
	assert_true(ofi_match_tag(0x12, 0x0f, 0x1f));
	assert_false(ofi_match_tag(0x12, 0x0f, 0x22));
	a = t_post(tp, (void *)1, 0, FI_ADDR_UNSPEC, 0x100, 0x0ff, true, 64);
	b = t_post(tp, (void *)2, 0, FI_ADDR_UNSPEC, 0x100, 0, true, 64);
	/* Tag 0x200 matches neither; untagged never meets tagged. */
	assert_null(t_arrive(tp, true, 5, 0x200, 8, &s, true));
	assert_null(t_arrive(tp, false, 5, 0x100, 8, &s, true));
	/* 0x100 matches both: the first posted wins, then the second. */
	assert_ptr_equal(t_arrive(tp, true, 5, 0x100, 8, &s, true), &a->m);
	t_read(tp, &e);
	assert_ptr_equal(e.op_context, (void *)1);
	assert_int_equal(e.len, 8);
	assert_int_equal(e.tag, 0x100);
	/* 0x1ab only matches through a's ignore mask: a is gone now. */
	assert_null(t_arrive(tp, true, 5, 0x1ab, 8, &s, true));
	assert_ptr_equal(t_arrive(tp, true, 5, 0x100, 8, &s, true), &b->m);
	t_read(tp, &e);
	assert_ptr_equal(e.op_context, (void *)2);
	assert_int_equal(fi_cntr_read(tp->rx_cntr), 2);
	t_close(tp);
}

static void test_unexpected(void **state)
{
	struct t_prov *tp = t_open(FI_MSG | FI_TAGGED, 0);
	struct fi_cq_tagged_entry e;
	struct t_rx *rx;

	(void)state;
	t_unexp(tp, 1, true, 3, 7, "seven");
	t_unexp(tp, 2, false, 3, 0, "untagged");
	t_unexp(tp, 3, true, 3, 7, "again");
	/* A tagged receive for 8 stays posted. */
	rx = t_post(tp, (void *)8, 0, FI_ADDR_UNSPEC, 8, 0, true, 64);
	assert_true(rx->m.posted);
	assert_int_equal(tp->delivered, 0);
	/* The first tag-7 message, in arrival order. */
	rx = t_post(tp, (void *)7, 0, FI_ADDR_UNSPEC, 7, 0, true, 64);
	assert_false(rx->m.posted);
	assert_int_equal(tp->delivered, 1);
	assert_string_equal(rx->buf, "seven");
	t_read(tp, &e);
	assert_ptr_equal(e.op_context, (void *)7);
	assert_int_equal(e.len, 5);
	assert_int_equal(e.data, 1001);
	assert_true(e.flags & FI_REMOTE_CQ_DATA);
	rx = t_post(tp, (void *)9, 0, FI_ADDR_UNSPEC, 0, 0, false, 64);
	assert_string_equal(rx->buf, "untagged");
	t_read(tp, &e);
	assert_true(e.flags & FI_MSG);
	/* Close drops the one left. */
	ofi_match_flush(&tp->q, -FI_ECANCELED);
	assert_int_equal(tp->ndiscarded, 1);
	assert_int_equal(tp->discarded[0], 3);
	t_close(tp);
}

static void test_directed(void **state)
{
	struct t_prov *tp = t_open(FI_TAGGED | FI_DIRECTED_RECV, 0);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct ofi_rx_slice s;
	struct t_rx *rx;

	(void)state;
	rx = t_post(tp, (void *)1, 0, 5, 1, 0, true, 64);
	assert_null(t_arrive(tp, true, 6, 1, 4, &s, true));
	assert_ptr_equal(t_arrive(tp, true, 5, 1, 4, &s, true), &rx->m);
	t_read(tp, &e);
	/* FI_ADDR_UNSPEC takes anyone. */
	t_post(tp, (void *)2, 0, FI_ADDR_UNSPEC, 1, 0, true, 64);
	assert_non_null(t_arrive(tp, true, 6, 1, 4, &s, true));
	t_read(tp, &e);

	/* Unexpected from 6, and from an address not in the AV yet. */
	t_unexp(tp, 1, true, 6, 1, "six");
	t_unexp(tp, 2, true, FI_ADDR_NOTAVAIL, 1, "later");
	rx = t_post(tp, (void *)3, 0, 5, 1, 0, true, 64);
	assert_true(rx->m.posted); /* neither is from 5 (resolves to none) */
	assert_int_equal(tp->resolves, 1);
	assert_int_equal(ofi_match_cancel(&tp->q, (void *)3), 0);
	t_readerr(tp, &err);
	assert_int_equal(err.err, FI_ECANCELED);
	/* Once the AV names it, the directed receive takes it. */
	tp->resolved = 5;
	rx = t_post(tp, (void *)4, 0, 5, 1, 0, true, 64);
	assert_false(rx->m.posted);
	assert_string_equal(rx->buf, "later");
	t_read(tp, &e);
	/* An address leaving the AV unbinds its queued messages. */
	ofi_match_addr_removed(&tp->q, 6);
	tp->resolved = 9;
	rx = t_post(tp, (void *)5, 0, 6, 1, 0, true, 64);
	assert_true(rx->m.posted);
	t_close(tp);
}

static void test_no_directed_cap(void **state)
{
	struct t_prov *tp = t_open(FI_TAGGED, 0);
	struct ofi_rx_slice s;
	struct t_rx *rx;

	(void)state;
	/* Without FI_DIRECTED_RECV the address is ignored. */
	rx = t_post(tp, (void *)1, 0, 5, 1, 0, true, 64);
	assert_ptr_equal(t_arrive(tp, true, 6, 1, 4, &s, true), &rx->m);
	t_close(tp);
}

static void test_peek_claim_discard(void **state)
{
	struct t_prov *tp = t_open(FI_TAGGED, 0);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct ofi_unexp_msg *u;
	struct ofi_rx_entry *m;
	struct t_rx *rx;

	(void)state;
	/* Nothing there: FI_ENOMSG. */
	assert_int_equal(ofi_match_peek(&tp->q, (void *)1, FI_PEEK,
					FI_ADDR_UNSPEC, 4, 0),
			 0);
	t_readerr(tp, &err);
	assert_int_equal(err.err, FI_ENOMSG);
	assert_ptr_equal(err.op_context, (void *)1);

	t_unexp(tp, 1, true, 2, 4, "four");
	t_unexp(tp, 2, true, 2, 5, "five");
	t_unexp(tp, 3, true, 2, 6, "six");
	/* Peek reports without taking. */
	assert_int_equal(ofi_match_peek(&tp->q, (void *)2, FI_PEEK,
					FI_ADDR_UNSPEC, 4, 0),
			 0);
	t_read(tp, &e);
	assert_ptr_equal(e.op_context, (void *)2);
	assert_int_equal(e.len, 4);
	assert_int_equal(e.tag, 4);
	assert_int_equal(e.data, 1001);
	/* Claim: later receives no longer see it. */
	assert_int_equal(ofi_match_peek(&tp->q, (void *)3, FI_PEEK | FI_CLAIM,
					FI_ADDR_UNSPEC, 4, 0),
			 0);
	t_read(tp, &e);
	assert_null(ofi_match_unexp(&tp->q, true, FI_ADDR_UNSPEC, 4, 0));
	assert_null(ofi_match_claimed(&tp->q, (void *)99));
	u = ofi_match_claimed(&tp->q, (void *)3);
	assert_non_null(u);
	m = ofi_match_rx_get(&tp->q, (void *)3, FI_CLAIM, FI_ADDR_UNSPEC, 0, 0,
			     true, 64);
	ofi_match_deliver(&tp->q, m, u);
	rx = container_of(m, struct t_rx, m);
	assert_string_equal(rx->buf, "four");
	t_read(tp, &e);
	assert_ptr_equal(e.op_context, (void *)3);
	assert_int_equal(e.len, 4);
	/* Peek + discard drops it. */
	assert_int_equal(ofi_match_peek(&tp->q, (void *)4, FI_PEEK | FI_DISCARD,
					FI_ADDR_UNSPEC, 5, 0),
			 0);
	t_read(tp, &e);
	assert_int_equal(tp->ndiscarded, 1);
	assert_int_equal(tp->discarded[0], 2);
	/* Claim, then FI_CLAIM | FI_DISCARD. */
	ofi_match_peek(&tp->q, (void *)5, FI_PEEK | FI_CLAIM, FI_ADDR_UNSPEC, 6,
		       0);
	t_read(tp, &e);
	u = ofi_match_claimed(&tp->q, (void *)5);
	assert_non_null(u);
	ofi_match_discard_claimed(&tp->q, u, (void *)5, FI_CLAIM | FI_DISCARD);
	t_read(tp, &e);
	assert_ptr_equal(e.op_context, (void *)5);
	assert_int_equal(e.len, 0);
	assert_int_equal(tp->ndiscarded, 2);
	assert_int_equal(tp->discarded[1], 3);
	assert_null(ofi_match_claimed(&tp->q, (void *)5));
	t_empty(tp);
	t_close(tp);
}

static void test_multi_recv(void **state)
{
	struct t_prov *tp = t_open(FI_MSG | FI_MULTI_RECV, 0);
	struct ofi_rx_done d = t_done(0, 0);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct ofi_rx_slice s1, s2, s3;
	struct t_rx *rx;

	(void)state;
	rx = t_post(tp, (void *)1, FI_MULTI_RECV, FI_ADDR_UNSPEC, 0, 0, false,
		    256);
	/* Two slices in flight: 100 at 0, 100 at 100; 56 < 64 left. */
	assert_ptr_equal(t_arrive(tp, false, 1, 0, 100, &s1, false), &rx->m);
	assert_int_equal(s1.off, 0);
	assert_int_equal(s1.len, 100);
	assert_false(s1.consumed);
	assert_true(rx->m.posted);
	assert_ptr_equal(t_arrive(tp, false, 1, 0, 100, &s2, false), &rx->m);
	assert_int_equal(s2.off, 100);
	assert_true(s2.consumed);
	assert_false(rx->m.posted);
	assert_null(t_arrive(tp, false, 1, 0, 10, &s3, false));
	/* They land out of order: the last one releases the buffer. */
	assert_false(ofi_match_done(&tp->q, &rx->m, &s2, &d));
	t_read(tp, &e);
	assert_false(e.flags & FI_MULTI_RECV);
	assert_int_equal(e.len, 100);
	assert_true(ofi_match_done(&tp->q, &rx->m, &s1, &d));
	t_read(tp, &e);
	assert_true(e.flags & FI_MULTI_RECV);
	assert_ptr_equal(e.op_context, (void *)1);

	/* The unused tail is all a message gets, the rest truncates. */
	rx = t_post(tp, (void *)2, FI_MULTI_RECV, FI_ADDR_UNSPEC, 0, 0, false,
		    100);
	assert_non_null(t_arrive(tp, false, 1, 0, 30, &s1, true));
	t_read(tp, &e);
	assert_non_null(t_arrive(tp, false, 1, 0, 90, &s2, false));
	assert_int_equal(s2.off, 30);
	assert_int_equal(s2.len, 70);
	assert_int_equal(s2.olen, 20);
	ofi_match_done(&tp->q, &rx->m, &s2, &d);
	t_readerr(tp, &err);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_int_equal(err.olen, 20);
	t_close(tp);
}

static void test_cancel(void **state)
{
	struct t_prov *tp = t_open(FI_MSG | FI_TAGGED, 0);
	struct ofi_rx_done d = t_done(0, 0);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct ofi_rx_slice s;
	struct t_rx *rx;
	int i;

	(void)state;
	t_post(tp, (void *)1, 0, FI_ADDR_UNSPEC, 1, 0, true, 64);
	assert_int_equal(ofi_match_cancel(&tp->q, (void *)1), 0);
	t_readerr(tp, &err);
	assert_int_equal(err.err, FI_ECANCELED);
	assert_ptr_equal(err.op_context, (void *)1);
	assert_true(err.flags & FI_TAGGED);
	assert_int_equal(fi_cntr_readerr(tp->rx_cntr), 1);
	assert_int_equal(ofi_match_cancel(&tp->q, (void *)1), -FI_ENOENT);
	/* A cancelled receive no longer matches. */
	assert_null(t_arrive(tp, true, 1, 1, 4, &s, true));

	/* Multi-receive with a slice in flight: its last slice releases. */
	rx = t_post(tp, (void *)2, FI_MULTI_RECV, FI_ADDR_UNSPEC, 0, 0, false,
		    256);
	assert_non_null(t_arrive(tp, false, 1, 0, 10, &s, false));
	assert_int_equal(ofi_match_cancel(&tp->q, (void *)2), 0);
	assert_null(t_arrive(tp, false, 1, 0, 10, &s, false));
	t_empty(tp);
	assert_true(ofi_match_done(&tp->q, &rx->m, &s, &d));
	t_read(tp, &e);
	assert_true(e.flags & FI_MULTI_RECV);

	/* Every entry came back: the free list holds NRX again. */
	for (i = 0; i < NRX; i++)
		assert_non_null(ofi_match_rx_get(
			&tp->q, NULL, 0, FI_ADDR_UNSPEC, 0, 0, false, 0));
	assert_null(ofi_match_rx_get(&tp->q, NULL, 0, FI_ADDR_UNSPEC, 0, 0,
				     false, 0));
	t_close(tp);
}

static void test_truncation(void **state)
{
	struct t_prov *tp = t_open(FI_TAGGED, 0);
	struct fi_cq_err_entry err;
	struct t_rx *rx;

	(void)state;
	t_unexp(tp, 1, true, 1, 3, "0123456789abcdefghij");
	rx = t_post(tp, (void *)1, 0, FI_ADDR_UNSPEC, 3, 0, true, 8);
	assert_memory_equal(rx->buf, "01234567", 8);
	assert_int_equal(rx->buf[8], 0);
	t_readerr(tp, &err);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_int_equal(err.len, 8);
	assert_int_equal(err.olen, 12);
	assert_int_equal(err.tag, 3);
	assert_int_equal(fi_cntr_readerr(tp->rx_cntr), 1);
	t_close(tp);
}

static void test_tx_complete(void **state)
{
	struct t_prov *tp =
		t_open(FI_MSG | FI_RMA | FI_RMA_EVENT, FI_SELECTIVE_COMPLETION);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	(void)state;
	/* Selective: only FI_COMPLETION writes, the counter always counts. */
	ofi_ep_tx_complete(tp->ep, (void *)1, FI_SEND | FI_MSG, 0, true, 0);
	t_empty(tp);
	ofi_ep_tx_complete(tp->ep, (void *)2, FI_SEND | FI_MSG, FI_COMPLETION,
			   true, 0);
	t_read(tp, &e);
	assert_ptr_equal(e.op_context, (void *)2);
	/* fi_inject: counters only. */
	ofi_ep_tx_complete(tp->ep, (void *)3, FI_SEND | FI_MSG, FI_COMPLETION,
			   false, 0);
	t_empty(tp);
	assert_int_equal(fi_cntr_read(tp->tx_cntr), 3);
	/* Errors always reach the CQ. */
	ofi_ep_tx_complete(tp->ep, (void *)4, FI_RMA | FI_READ, 0, false,
			   FI_EIO);
	t_readerr(tp, &err);
	assert_int_equal(err.err, FI_EIO);
	assert_ptr_equal(err.op_context, (void *)4);
	assert_int_equal(fi_cntr_readerr(tp->tx_cntr), 1);
	/* RMA writes count on the write counter (none bound here). */
	ofi_ep_tx_complete(tp->ep, (void *)5, FI_RMA | FI_WRITE, FI_COMPLETION,
			   true, 0);
	t_read(tp, &e);
	assert_int_equal(fi_cntr_read(tp->tx_cntr), 3);

	/* Target side: remote counter, CQ entry only with data. */
	ofi_ep_rma_target_complete(tp->ep, FI_RMA | FI_REMOTE_WRITE, 8, 0, NULL,
				   0);
	t_empty(tp);
	ofi_ep_rma_target_complete(tp->ep,
				   FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
				   8, 42, NULL, 0);
	t_read(tp, &e);
	assert_int_equal(e.data, 42);
	assert_int_equal(e.len, 8);
	assert_int_equal(fi_cntr_read(tp->rx_cntr), 2);
	t_close(tp);
}

/* Shared receive context: a stand-in provider's unexpected message
 * names the endpoint it came on. */
struct s_unexp {
	struct ofi_unexp_msg m;
	struct util_ep *ep;
	char payload[16];
};

static void s_deliver(struct ofi_match_queue *q, struct ofi_rx_entry *m,
		      struct ofi_unexp_msg *um, const struct ofi_rx_slice *s)
{
	struct s_unexp *u = container_of(um, struct s_unexp, m);
	struct ofi_rx_done d = t_done(0, 0);

	memcpy(ofi_rx_buf_at(ofi_rx_buf_of(m), s->off), u->payload, s->len);
	d.flags = FI_RECV | FI_MSG;
	d.ep = u->ep;
	free(u);
	ofi_match_done(q, m, s, &d);
}

static void s_discard(struct ofi_match_queue *q, struct ofi_unexp_msg *um,
		      int status)
{
	(void)q;
	(void)status;
	free(container_of(um, struct s_unexp, m));
}

static const struct ofi_match_ops s_ops = {
	.deliver = s_deliver,
	.discard = s_discard,
};

static int s_posted_calls;

static void s_posted(struct util_srx *srx)
{
	(void)srx;
	s_posted_calls++;
}

static const struct ofi_srx_ops s_srx_ops = {.posted = s_posted};

static void test_srx(void **state)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 64};
	struct fi_rx_attr rx_attr = {.size = 4};
	struct t_prov *tp = t_open(FI_MSG, 0);
	struct util_domain *dom = tp->env.domain;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct ofi_rx_slice sl;
	struct ofi_rx_entry *m;
	struct ofi_rx_done d = t_done(0, 0);
	struct util_ep *ep1 = calloc(1, sizeof(*ep1));
	struct fid_cq *cq1;
	struct util_srx *srx;
	struct fid_stx *stx;
	struct s_unexp *u;
	char b0[16] = {0}, b1[16] = {0}, b2[16] = {0};

	assert_int_equal(
		ofi_srx_open(dom, &rx_attr, &s_ops, &s_srx_ops, &srx, NULL), 0);
	assert_int_equal(srx->ep_fid.fid.fclass, FI_CLASS_SRX_CTX);
	/* nothing bound: no endpoint to complete to */
	assert_int_equal(fi_recv(&srx->ep_fid, b0, 16, NULL, 0, b0),
			 -FI_EOPBADSTATE);
	assert_int_equal(ofi_ep_init(dom, tp->env.info, ep1, NULL, NULL), 0);
	assert_int_equal(ofi_cq_open(&dom->domain_fid, &attr, &cq1, NULL), 0);
	assert_int_equal(
		fi_ep_bind(&ep1->ep_fid, &cq1->fid, FI_TRANSMIT | FI_RECV), 0);
	assert_int_equal(fi_ep_bind(&tp->ep->ep_fid, &srx->ep_fid.fid, 0), 0);
	assert_int_equal(fi_ep_bind(&ep1->ep_fid, &srx->ep_fid.fid, 0), 0);
	assert_int_equal(fi_ep_bind(&ep1->ep_fid, &srx->ep_fid.fid, 0),
			 -FI_EINVAL);
	assert_int_equal(ofi_stx_context(&dom->domain_fid, NULL, &stx, NULL),
			 0);
	assert_int_equal(fi_ep_bind(&ep1->ep_fid, &stx->fid, 0), 0);

	/* a message on ep1 takes the first receive, completes on cq1 */
	assert_int_equal(fi_recv(&srx->ep_fid, b0, 16, NULL, 0, b0), 0);
	assert_int_equal(fi_recv(&srx->ep_fid, b1, 16, NULL, 0, b1), 0);
	assert_int_equal(s_posted_calls, 2);
	m = ofi_match_posted(&srx->q, false, FI_ADDR_NOTAVAIL, 0);
	assert_non_null(m);
	ofi_match_take(&srx->q, m, 3, &sl);
	d.flags = FI_RECV | FI_MSG;
	d.ep = ep1;
	ofi_match_done(&srx->q, m, &sl, &d);
	assert_int_equal(fi_cq_read(cq1, &e, 1), 1);
	assert_ptr_equal(e.op_context, b0);
	t_empty(tp);

	/* unexpected from the first endpoint, then a receive on the srx */
	m = ofi_match_posted(&srx->q, false, FI_ADDR_NOTAVAIL, 0);
	assert_ptr_equal(container_of(m, struct ofi_rx_buf, m)->iov[0].iov_base,
			 b1);
	ofi_match_take(&srx->q, m, 1, &sl);
	ofi_match_done(&srx->q, m, &sl, &d);
	assert_int_equal(fi_cq_read(cq1, &e, 1), 1);
	u = calloc(1, sizeof(*u));
	u->ep = tp->ep;
	u->m.size = 5;
	u->m.cq_flags = FI_MSG;
	memcpy(u->payload, "early", 5);
	ofi_match_unexp_add(&srx->q, &u->m);
	assert_int_equal(fi_recv(&srx->ep_fid, b2, 16, NULL, 0, b2), 0);
	t_read(tp, &e);
	assert_ptr_equal(e.op_context, b2);
	assert_memory_equal(b2, "early", 5);
	assert_int_equal(fi_cq_read(cq1, &e, 1), -FI_EAGAIN);

	/* cancel: the first endpoint bound reports it, then the next */
	assert_int_equal(fi_recv(&srx->ep_fid, b0, 16, NULL, 0, b0), 0);
	assert_int_equal(fi_cancel(&srx->ep_fid.fid, b0), 0);
	t_readerr(tp, &err);
	assert_int_equal(err.err, FI_ECANCELED);
	assert_int_equal(fi_cancel(&srx->ep_fid.fid, b0), -FI_ENOENT);
	assert_int_equal(fi_close(&srx->ep_fid.fid), -FI_EBUSY);
	assert_int_equal(fi_close(&tp->ep->ep_fid.fid), 0);
	tp->ep = NULL;
	assert_int_equal(fi_recv(&srx->ep_fid, b0, 16, NULL, 0, b0), 0);
	assert_int_equal(fi_cancel(&srx->ep_fid.fid, b0), 0);
	assert_int_equal(fi_cq_read(cq1, &e, 1), -FI_EAVAIL);
	assert_int_equal(fi_close(&stx->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&ep1->ep_fid.fid), 0);
	assert_int_equal(fi_close(&srx->ep_fid.fid), 0);
	assert_int_equal(fi_close(&stx->fid), 0);
	assert_int_equal(fi_close(&cq1->fid), 0);
	t_close(tp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tag_ignore_order),
		cmocka_unit_test(test_unexpected),
		cmocka_unit_test(test_directed),
		cmocka_unit_test(test_no_directed_cap),
		cmocka_unit_test(test_peek_claim_discard),
		cmocka_unit_test(test_multi_recv),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_tx_complete),
		cmocka_unit_test(test_srx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
