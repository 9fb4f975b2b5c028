/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_sep.c - scalable endpoints (fi_scalable_ep(3)) on tcp's engine, for
 * the providers whose description offers them (tcp_engine_desc; tcp's
 * domain answers -FI_ENOSYS): the SEP, its
 * transmit and receive contexts (fi_tx_context, fi_rx_context), and which
 * of them an incoming frame is for.
 *
 * A SEP is an RDM endpoint (its listening socket, connections, progress
 * thread), or an MSG one (its one connection, made by fi_connect or
 * fi_accept with tcp_cm.c's events naming the SEP), that carries no data
 * itself. Each context is a struct tcp_ep of its own (request pool, match
 * queue, CQ and counter bindings) sharing the SEP's connection set and
 * lock, so contexts driven from several threads are serialised there, as
 * every endpoint's calls are.
 *
 * On the wire a request names its target's receive context in hdr.rx_ctx:
 * fi_rx_addr's index, stripped off the fi_addr by tcp_req_rx_ctx when the
 * AV has rx_ctx_bits (FI_NAMED_RX_CTX); on an MSG SEP, which has no AV,
 * dest_addr is fi_rx_addr(0, i, TCP_RX_CTX_BITS) with FI_NAMED_RX_CTX
 * (tcp_msg_rx_ctx), and context 0 without it. An answer names its request
 * by op_id, whose pool index carries req_base: the transmit context's slot
 * (index + 1) in bits 16..23, 0 for a plain endpoint. A message for a
 * receive context that is not open is read and dropped (a delivery ACK
 * says FI_ENOENT); RMA and atomics for one are served by the SEP, with no
 * target event.
 *
 * Closing a context: it leaves the SEP's tables first (nothing new comes
 * to it), cancels its receives, then lets frames being read for it and
 * its requests in flight finish for up to TCP_LINGER_MS; what is left
 * then loses its connection. A context still referenced after that (a
 * sender not in the AV cannot be disconnected by name) stays allocated
 * until the SEP closes.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ofi_prov.h"

#include "tcp.h"

struct tcp_sep {
	struct ofi_sep_slots slots; /* the contexts, util_ep.c's table */
	struct tcp_ep **zombie;	    /* closed, still referenced */
	size_t zombie_cnt;
};

static struct tcp_ep *tcp_ctx_at(struct util_ep *util)
{
	return util ? container_of(util, struct tcp_ep, util) : NULL;
}

/* ------------------------------------------------------------------ */
/* What the engine asks (tcp.h).                                        */

struct tcp_ep *tcp_sep_next(struct tcp_ep *ep, size_t *i)
{
	return ep->sep ? tcp_ctx_at(ofi_sep_slot_next(&ep->sep->slots, i))
		       : NULL;
}

static bool tcp_op_is_answer(uint8_t op)
{
	return op == TCP_OP_WRITE_RESP || op == TCP_OP_READ_RESP ||
	       op == TCP_OP_ATOMIC_RESP || op == TCP_OP_ACK ||
	       op == TCP_OP_COMMIT_RESP;
}

OFI_HOT struct tcp_ep *tcp_frame_ep(struct tcp_ep *ep,
				    const struct tcp_hdr_view *h)
{
	struct tcp_sep *sep = ep->sep;
	uint32_t slot;
	struct tcp_ep *c;

	if (OFI_LIKELY(!sep))
		return h->rx_ctx ? NULL : ep;
	if (tcp_op_is_answer(h->op)) {
		/* not ours: the engine's pool finds no such request */
		slot = (uint32_t)h->op_id >> 16;
		if (slot && slot <= TCP_SEP_CTX_MAX && sep->slots.tx[slot - 1])
			return tcp_ctx_at(sep->slots.tx[slot - 1]);
		return ep;
	}
	if (h->rx_ctx >= TCP_SEP_CTX_MAX)
		return NULL;
	c = tcp_ctx_at(sep->slots.rx[h->rx_ctx]);
	return c && ofi_ep_enabled(&c->util) ? c : NULL;
}

int tcp_req_rx_ctx(struct tcp_ep *ep, struct tcp_req *req)
{
	int bits = ep->util.av->rx_ctx_bits;

	if (req->addr == FI_ADDR_NOTAVAIL)
		return 0; /* the connection layer refuses it */
	tcp_hdr_set_rx_ctx(req->head, (uint16_t)(req->addr >> (64 - bits)));
	req->addr &= UINT64_MAX >> bits;
	return 0;
}

void tcp_msg_rx_ctx(struct tcp_ep *ep, struct tcp_req *req)
{
	uint16_t idx = 0;

	if (ep->util.caps & FI_NAMED_RX_CTX)
		idx = (uint16_t)(req->addr >> (64 - TCP_RX_CTX_BITS));
	tcp_hdr_set_rx_ctx(req->head, idx);
}

/* ------------------------------------------------------------------ */
/* Contexts.                                                            */

static struct tcp_ep *tcp_ctx_of(struct fid *fid)
{
	return container_of(fid, struct tcp_ep, util.ep_fid.fid);
}

/* Their progress is the SEP's: one connection set. */
static void tcp_ctx_progress(struct util_ep *util)
{
	tcp_ep_progress(&container_of(util, struct tcp_ep, util)->engine->util);
}

static int tcp_ctx_wait_fd(struct util_ep *util)
{
	return ofi_sock_fd(container_of(util, struct tcp_ep, util)->set);
}

static uint64_t tcp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool tcp_ctx_busy(struct tcp_ep *c)
{
	return !dlist_empty(&c->busy) || !dlist_empty(&c->pending);
}

/*
 * Under the SEP's lock: lets @c's frames and requests finish, then drops
 * the connections of what is left. True when nothing refers to @c.
 */
static bool tcp_ctx_drain(struct tcp_ep *c)
{
	struct tcp_ep *ep = c->engine;
	uint64_t end = tcp_now_ms() + TCP_LINGER_MS;
	struct tcp_frame *f;
	struct tcp_req *req;

	ofi_match_flush(&c->mq, -FI_ECANCELED);
	/* a stalled message of ours is dropped now (tcp_unexp_retry) */
	tcp_sock_resume(ep);
	while (tcp_ctx_busy(c) && tcp_now_ms() < end) {
		tcp_progress_locked(ep);
		tcp_ep_unlock(ep);
		sched_yield();
		tcp_ep_lock(ep);
	}
	while (!dlist_empty(&c->busy)) {
		f = container_of(c->busy.next, struct tcp_frame, entry);
		if (f->conn >= OFI_SOCK_ANON_ADDR)
			return false;
		ofi_sock_abort_peer(ep->set, f->conn); /* aborts it */
		if (c->busy.next == &f->entry)
			return false;
	}
	while (!dlist_empty(&c->pending)) {
		req = container_of(c->pending.next, struct tcp_req, entry);
		ofi_sock_abort_peer(ep->set, req->addr);
		if (c->pending.next == &req->entry)
			tcp_req_complete(c, req, FI_ECANCELED);
	}
	return true;
}

static int tcp_ctx_close(struct fid *fid)
{
	struct tcp_ep *c = tcp_ctx_of(fid), *ep = c->engine;
	struct tcp_sep *sep = ep->sep;
	struct tcp_ep **z;
	bool done;

	ofi_ep_detach(&c->util);
	tcp_ep_lock(ep);
	ofi_sep_slot_drop(&sep->slots, &c->util);
	done = tcp_ctx_drain(c);
	if (!done) {
		z = realloc(sep->zombie, (sep->zombie_cnt + 1) * sizeof(*z));
		if (z) {
			sep->zombie = z;
			z[sep->zombie_cnt++] = c;
		}
		FI_WARN(&tcp_prov, FI_LOG_EP_CTRL,
			"context closed with traffic still arriving: "
			"freed with its scalable endpoint\n");
	}
	tcp_ep_unlock(ep);
	if (done) {
		tcp_ep_fini(c);
		free(c);
	}
	return 0;
}

static int tcp_sep_enable(struct tcp_ep *ep);

static int tcp_ctx_enable(struct util_ep *util)
{
	return tcp_sep_enable(container_of(util, struct tcp_ep, util)->engine);
}

OFI_EP_FI_OPS(tcp_ctx_fi_ops, tcp_ctx_close);

static const struct fi_ops_ep tcp_rx_ctx_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = tcp_ep_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = fi_no_tx_ctx,
	.rx_ctx = fi_no_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

/* tcp's data ops, one direction each: a transmit context receives
 * nothing, a receive context sends nothing. */
static struct fi_ops_msg tcp_tx_msg, tcp_rx_msg;
static struct fi_ops_tagged tcp_tx_tagged, tcp_rx_tagged;
static pthread_once_t tcp_ctx_ops_once = PTHREAD_ONCE_INIT;

static void tcp_ctx_ops_init(void)
{
	ofi_ctx_msg_ops(&tcp_msg_ops, true, &tcp_tx_msg);
	ofi_ctx_msg_ops(&tcp_msg_ops, false, &tcp_rx_msg);
	ofi_ctx_tagged_ops(&tcp_tagged_ops, true, &tcp_tx_tagged);
	ofi_ctx_tagged_ops(&tcp_tagged_ops, false, &tcp_rx_tagged);
}

static void tcp_ctx_setup(struct tcp_ep *c, struct tcp_ep *ep, bool tx)
{
	struct fid_ep *fid = &c->util.ep_fid;

	c->engine = ep;
	c->set = ep->set;
	c->lockp = &ep->lock;
	c->name = ep->name;
	c->namelen = ep->namelen;
	c->util.progress = tcp_ctx_progress;
	c->util.wait_fd = tcp_ctx_wait_fd;
	c->util.auto_progress = ep->util.auto_progress;
	c->util.enable = tcp_ctx_enable;
	c->util.comp_optional = true;
	dlist_init(&c->util.av_entry);
	ofi_ctx_take_av(&c->util, &ep->util);
	fid->fid.fclass = tx ? FI_CLASS_TX_CTX : FI_CLASS_RX_CTX;
	fid->fid.ops = (struct fi_ops *)&tcp_ctx_fi_ops;
	fid->ops = (struct fi_ops_ep *)(tx ? &ofi_ep_ops : &tcp_rx_ctx_ops);
	fid->msg = tx ? &tcp_tx_msg : &tcp_rx_msg;
	fid->tagged = tx ? &tcp_tx_tagged : &tcp_rx_tagged;
	if (tx) {
		fid->rma = (struct fi_ops_rma *)&tcp_rma_ops;
		fid->atomic = (struct fi_ops_atomic *)&tcp_atomic_ops;
		c->util.tx_busy = tcp_tx_busy; /* FI_FENCE */
	}
}

static int tcp_sep_ctx(struct fid_ep *sep_fid, int index, const void *attr,
		       struct fid_ep **ctx_fid, void *context, bool tx)
{
	struct tcp_ep *ep = tcp_ep_of(sep_fid), *c;
	struct tcp_sep *sep = ep->sep;
	struct fi_info *info;
	int ret;

	if (!ctx_fid || ofi_sep_slot_check(&sep->slots, index, tx))
		return -FI_EINVAL;
	pthread_once(&tcp_ctx_ops_once, tcp_ctx_ops_init);
	info = ofi_ctx_info(ep->util.info, tx, attr);
	if (!info)
		return -FI_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		fi_freeinfo(info);
		return -FI_ENOMEM;
	}
	ret = tcp_ep_init(c, ep->util.domain, info,
			  tx ? (uint32_t)(index + 1) << 16 : 0, context);
	fi_freeinfo(info);
	if (ret) {
		free(c);
		return ret;
	}
	tcp_ep_lock(ep);
	ret = ofi_sep_slot_take(&sep->slots, index, tx, &c->util);
	if (ret) {
		tcp_ep_unlock(ep);
		tcp_ep_fini(c);
		free(c);
		return ret;
	}
	tcp_ctx_setup(c, ep, tx);
	tcp_ep_unlock(ep);
	/* FI_TRIGGER and FI_FENCE, as on an endpoint (util_trigger.c) */
	ret = ofi_trig_ep_wrap(&c->util);
	if (ret) {
		tcp_ctx_close(&c->util.ep_fid.fid);
		return ret;
	}
	*ctx_fid = &c->util.ep_fid;
	return 0;
}

static int tcp_sep_tx_ctx(struct fid_ep *sep, int index,
			  struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			  void *context)
{
	return tcp_sep_ctx(sep, index, attr, tx_ep, context, true);
}

static int tcp_sep_rx_ctx(struct fid_ep *sep, int index,
			  struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			  void *context)
{
	return tcp_sep_ctx(sep, index, attr, rx_ep, context, false);
}

/* ------------------------------------------------------------------ */
/* The scalable endpoint.                                               */

static int tcp_sep_enable(struct tcp_ep *ep)
{
	/* an MSG SEP has its connection instead (its EQ checked) */
	return ofi_sep_enable(&ep->util, ep->util.av || ep->msg);
}

static int tcp_sep_control(struct fid *fid, int command, void *arg)
{
	if (command == FI_ENABLE)
		return tcp_sep_enable(tcp_ctx_of(fid));
	return ofi_ep_control(fid, command, arg);
}

/* An AV (and an EQ); contexts take the SEP's AV as they open, or now. */
static int tcp_sep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct tcp_ep *ep = tcp_ctx_of(fid);
	int ret;

	if (!bfid ||
	    (bfid->fclass != FI_CLASS_AV && bfid->fclass != FI_CLASS_EQ) ||
	    (ep->msg && bfid->fclass == FI_CLASS_AV))
		return -FI_EINVAL;
	ret = ofi_ep_bind(fid, bfid, flags);
	if (ret || bfid->fclass != FI_CLASS_AV)
		return ret;
	tcp_ep_lock(ep);
	ofi_sep_share_av(&ep->sep->slots, &ep->util);
	tcp_ep_unlock(ep);
	return 0;
}

static int tcp_sep_close(struct fid *fid)
{
	struct tcp_ep *ep = tcp_ctx_of(fid);
	struct tcp_sep *sep = ep->sep;
	size_t i;
	int ret;

	if (sep->slots.open)
		return -FI_EBUSY;
	/* the connections close with it: the zombies' frames abort */
	ret = tcp_ep_close(fid);
	for (i = 0; i < sep->zombie_cnt; i++) {
		tcp_ep_fini(sep->zombie[i]);
		free(sep->zombie[i]);
	}
	free(sep->zombie);
	free(sep);
	return ret;
}

static const struct fi_ops tcp_sep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = tcp_sep_close,
	.bind = tcp_sep_bind,
	.control = tcp_sep_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

static const struct fi_ops_ep tcp_sep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = fi_no_cancel,
	.getopt = ofi_ep_getopt,
	.setopt = ofi_ep_setopt,
	.tx_ctx = tcp_sep_tx_ctx,
	.rx_ctx = tcp_sep_rx_ctx,
	.rx_size_left = fi_no_rx_size_left,
	.tx_size_left = fi_no_tx_size_left,
};

int tcp_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		    struct fid_ep **sep_fid, void *context)
{
	struct util_domain *dom;
	struct fid_ep *fid;
	struct tcp_sep *sep;
	struct tcp_ep *ep;
	int ret;

	if (!domain || !info || !sep_fid)
		return -FI_EINVAL;
	dom = container_of(domain, struct util_domain, domain_fid);
	if (!tcp_domain_desc(dom)->scalable_ep)
		return -FI_ENOSYS; /* tcp(7) offers none */
	/* other endpoint types' SEPs are their provider's own */
	if (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_MSG &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	sep = calloc(1, sizeof(*sep));
	if (!sep)
		return -FI_ENOMEM;
	ret = ofi_sep_slots_init(&sep->slots, info)
		      ?: tcp_ep_open(domain, info, &fid, context);
	if (ret) {
		free(sep);
		return ret;
	}
	ep = tcp_ep_of(fid);
	/* contexts match in their own queues: no same-host path */
	tcp_shm_close(ep);
	ep->util.wait_nap = false;
	ep->sep = sep;
	fid->fid.fclass = FI_CLASS_SEP;
	fid->fid.ops = (struct fi_ops *)&tcp_sep_fi_ops;
	fid->ops = (struct fi_ops_ep *)&tcp_sep_ops;
	fid->msg = (struct fi_ops_msg *)&ofi_no_msg_ops;
	fid->tagged = (struct fi_ops_tagged *)&ofi_no_tagged_ops;
	fid->rma = (struct fi_ops_rma *)&ofi_no_rma_ops;
	fid->atomic = (struct fi_ops_atomic *)&ofi_no_atomic_ops;
	*sep_fid = fid;
	return 0;
}
