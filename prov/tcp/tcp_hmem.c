/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_hmem.c - device memory (FI_HMEM) and the domain's copy overrides
 * over tcp: where a payload is staged in host memory and moved with
 * src/hmem's copies, at every place tcp touches user or registered
 * memory. The socket never reads or writes device memory.
 *
 * What is staged. A buffer's interface comes from its descriptor's MR
 * or, without one, from src/hmem's address lookup when the endpoint asked
 * for FI_HMEM and a device interface is up (ofi_iov_iface; FI_MR_HMEM is
 * not required). Device memory is always staged. With a copy override
 * set on the domain (fi_set_op(3)), host memory is staged too, so that
 * the application's routines see every copy tcp makes, as fi_set_op
 * promises; without one, host payloads go straight between the socket
 * and the user's buffers as before, and none of this runs (one check per
 * operation: tcp_hmem_on, tcp_rx_staged).
 *
 * Where. Sends, RMA writes and atomic operands are copied into memory
 * the request owns before the frame is queued (a failed copy fails the
 * call). A receive that is staged reads its slice into a bounce buffer
 * that is copied out when the frame is done; an unexpected message is
 * copied out of its host buffer. Reads and fetching atomics read their
 * answer into a bounce buffer copied out at completion. At the target,
 * writes into registrations with a device interface (or any with an
 * override) land in a bounce buffer and are copied in at frame done,
 * with the registrations held and re-checked; reads are copied out into
 * the answer; atomics copy the target out, run prov/util's executor on
 * the copy and copy it back, all under the executor's lock.
 *
 * Bounce buffers are malloc'd per operation, as large as the operation
 * (bounded by the request pool and posted receives, like the payloads
 * they stand for). Locking: everything runs under the endpoint lock.
 */
#include <stdlib.h>
#include <string.h>

#include "tcp.h"

static inline const struct ofi_hmem_override *tcp_ovr(struct tcp_ep *ep)
{
	return &ep->util.domain->hmem_override;
}

void tcp_hmem_caps(struct fi_info *fi)
{
	if (!ofi_hmem_any_available())
		return;
	fi->caps |= FI_HMEM;
	fi->tx_attr->caps |= FI_HMEM;
	fi->rx_attr->caps |= FI_HMEM;
}

void tcp_hmem_iface(struct tcp_ep *ep, void **desc, const struct iovec *iov,
		    size_t count, enum fi_hmem_iface *iface, uint64_t *device)
{
	bool detect = (ep->util.caps & FI_HMEM) && ofi_hmem_any_available();

	ofi_iov_iface(detect, desc, iov, iov ? count : 0, iface, device);
}

/* 0 or a positive fi_errno, as completions want them. */
static int tcp_copy_to(struct tcp_ep *ep, enum fi_hmem_iface iface,
		       uint64_t device, const struct iovec *iov, size_t count,
		       size_t off, const void *src, size_t len)
{
	ssize_t n;

	if (!len)
		return 0;
	n = ofi_copy_to_hmem_iov(tcp_ovr(ep), iface, device, iov, count, off,
				 src, len);
	return n < 0 ? (int)-n : 0;
}

static int tcp_copy_from(struct tcp_ep *ep, void *dst, size_t len,
			 enum fi_hmem_iface iface, uint64_t device,
			 const struct iovec *iov, size_t count)
{
	ssize_t n;

	if (!len)
		return 0;
	n = ofi_copy_from_hmem_iov(tcp_ovr(ep), dst, len, iface, device, iov,
				   count, 0);
	return n < 0 ? (int)-n : 0;
}

/* ------------------------------------------------------------------ */
/* Initiator.                                                           */

OFI_HOT int tcp_tx_payload(struct tcp_ep *ep, struct tcp_req *req, void **desc,
			   const struct iovec *iov, size_t count, size_t size,
			   bool copy)
{
	enum fi_hmem_iface iface = FI_HMEM_SYSTEM;
	struct ofi_sock_tx *tx = &req->tx;
	uint64_t device = 0;
	bool plain = true;
	void *buf;
	size_t i;
	int ret;

	if (tcp_hmem_on(ep)) {
		tcp_hmem_iface(ep, desc, iov, count, &iface, &device);
		plain = iface == FI_HMEM_SYSTEM && !tcp_hmem_ovr(ep);
	}
	if (plain && !copy) {
		for (i = 0; i < count; i++)
			tx->iov[i + 1] = iov[i];
		tx->iov_cnt = count + 1;
		return 0;
	}
	buf = req->inject;
	if (size > sizeof(req->inject)) {
		buf = malloc(size);
		if (!buf)
			return -FI_ENOMEM;
		req->abuf = buf; /* freed with the request */
	}
	if (plain) {
		ofi_copy_from_iov(buf, size, iov, count, 0);
	} else {
		ret = tcp_copy_from(ep, buf, size, iface, device, iov, count);
		if (ret)
			return -ret;
	}
	tx->iov[1].iov_base = buf;
	tx->iov[1].iov_len = size;
	tx->iov_cnt = 2;
	req->owned = true;
	return 0;
}

int tcp_ioc_stage(struct tcp_ep *ep, uint8_t *dst, const struct fi_ioc *ioc,
		  void **desc, size_t count, size_t dts)
{
	struct iovec iov[TCP_IOV_LIMIT];
	enum fi_hmem_iface iface;
	uint64_t device;
	size_t i, len = 0;

	if (count > TCP_IOV_LIMIT)
		return -FI_EINVAL;
	if (!count)
		return 0;
	for (i = 0; i < count; i++) {
		iov[i].iov_base = ioc[i].addr;
		iov[i].iov_len = ioc[i].count * dts;
		len += iov[i].iov_len;
	}
	tcp_hmem_iface(ep, desc, iov, count, &iface, &device);
	return -tcp_copy_from(ep, dst, len, iface, device, iov, count);
}

int tcp_resp_stage(struct tcp_ep *ep, struct tcp_req *req, void **desc)
{
	tcp_hmem_iface(ep, desc, req->liov, req->liov_cnt, &req->riface,
		       &req->rdevice);
	if (!req->resp_len ||
	    (req->riface == FI_HMEM_SYSTEM && !tcp_hmem_ovr(ep)))
		return 0;
	req->rbuf = malloc(req->resp_len);
	return req->rbuf ? 0 : -FI_ENOMEM;
}

int tcp_resp_unstage(struct tcp_ep *ep, struct tcp_req *req)
{
	return tcp_copy_to(ep, req->riface, req->rdevice, req->liov,
			   req->liov_cnt, 0, req->rbuf, req->resp_len);
}

/* ------------------------------------------------------------------ */
/* Receives.                                                            */

void tcp_rx_stage(struct tcp_frame *f, struct iovec *iov, size_t *cnt)
{
	size_t len = f->u.recv.sl.len;

	f->u.recv.staged = true;
	/* Without memory the payload is dropped; tcp_rx_unstage fails it. */
	f->u.recv.bounce = len ? malloc(len) : NULL;
	iov[0].iov_base = f->u.recv.bounce;
	iov[0].iov_len = len;
	*cnt = f->u.recv.bounce ? 1 : 0;
}

int tcp_rx_copy(struct tcp_ep *ep, const struct ofi_rx_buf *rx, size_t off,
		const void *src, size_t len)
{
	return tcp_copy_to(ep, rx->iface, rx->device, rx->iov, rx->iov_count,
			   off, src, len);
}

int tcp_rx_unstage(struct tcp_ep *ep, struct tcp_frame *f)
{
	const struct ofi_rx_slice *sl = &f->u.recv.sl;
	int err;

	if (!sl->len)
		return 0;
	if (!f->u.recv.bounce)
		return FI_ENOMEM;
	err = tcp_rx_copy(ep, f->u.recv.rx, sl->off, f->u.recv.bounce, sl->len);
	tcp_rx_unstage_drop(f);
	return err;
}

void tcp_rx_unstage_drop(struct tcp_frame *f)
{
	free(f->u.recv.bounce);
	f->u.recv.bounce = NULL;
}

/* ------------------------------------------------------------------ */
/* RMA and atomics at the target.                                       */

void tcp_write_stage(struct tcp_ep *ep, struct tcp_frame *f, struct iovec *iov,
		     size_t *cnt)
{
	struct ofi_mr_map *map = &ep->util.domain->mr_map;
	bool stage = tcp_hmem_ovr(ep);
	enum fi_hmem_iface iface;
	size_t i, total = 0;
	uint64_t device;

	for (i = 0; i < f->u.rma.count; i++) {
		total += f->u.rma.iov[i].len;
		/* A key gone meanwhile fails at done, when it is held. */
		if (!stage &&
		    !ofi_mr_map_query(map, f->u.rma.iov[i].key, &iface,
				      &device) &&
		    iface != FI_HMEM_SYSTEM)
			stage = true;
	}
	if (!stage)
		return;
	f->u.rma.bounce = malloc(total ? total : 1);
	if (!f->u.rma.bounce) {
		f->err = FI_ENOMEM; /* the payload is dropped */
		*cnt = 0;
		return;
	}
	iov[0].iov_base = f->u.rma.bounce;
	iov[0].iov_len = total;
	*cnt = 1;
}

void tcp_write_unstage(struct tcp_ep *ep, struct tcp_frame *f)
{
	struct iovec iov;
	size_t i, off = 0;
	int err;

	if (f->err)
		goto out;
	/* Held and re-checked: a registration closed meanwhile is EACCES
	 * and nothing lands in it. */
	memset(f->u.rma.ent, 0, sizeof(f->u.rma.ent));
	f->err = tcp_rma_get(ep, f, FI_REMOTE_WRITE);
	if (f->err)
		goto out;
	for (i = 0, err = 0; !err && i < f->u.rma.count; i++) {
		iov.iov_base = (void *)f->u.rma.addr[i];
		iov.iov_len = f->u.rma.iov[i].len;
		err = tcp_copy_to(ep, f->u.rma.ent[i]->iface,
				  f->u.rma.ent[i]->device, &iov, 1, 0,
				  f->u.rma.bounce + off, iov.iov_len);
		off += iov.iov_len;
	}
	tcp_rma_put(ep, f);
	f->err = err;
out:
	free(f->u.rma.bounce);
	f->u.rma.bounce = NULL;
}

void *tcp_read_stage(struct tcp_ep *ep, struct tcp_frame *f, size_t total)
{
	bool stage = tcp_hmem_ovr(ep);
	uint8_t *buf = NULL;
	struct iovec iov;
	size_t i, off = 0;
	int err;

	memset(f->u.rma.ent, 0, sizeof(f->u.rma.ent));
	err = tcp_rma_get(ep, f, FI_REMOTE_READ);
	if (err) {
		f->err = err;
		return NULL;
	}
	for (i = 0; i < f->u.rma.count; i++)
		stage = stage || f->u.rma.ent[i]->iface != FI_HMEM_SYSTEM;
	if (!stage)
		goto out;
	buf = malloc(total ? total : 1);
	err = buf ? 0 : FI_ENOMEM;
	for (i = 0; !err && i < f->u.rma.count; i++) {
		iov.iov_base = (void *)f->u.rma.addr[i];
		iov.iov_len = f->u.rma.iov[i].len;
		err = tcp_copy_from(ep, buf + off, iov.iov_len,
				    f->u.rma.ent[i]->iface,
				    f->u.rma.ent[i]->device, &iov, 1);
		off += iov.iov_len;
	}
	if (err) {
		f->err = err;
		free(buf);
		buf = NULL;
	}
out:
	tcp_rma_put(ep, f);
	return buf;
}

int tcp_atomic_staged(struct tcp_ep *ep, const struct tcp_atomic_view *av,
		      const struct ofi_mr_entry *ent, uintptr_t dst, size_t len,
		      const uint8_t *src, const uint8_t *cmp, uint8_t *res)
{
	enum fi_datatype dt = (enum fi_datatype)av->datatype;
	enum fi_op op = (enum fi_op)av->op;
	struct iovec iov = {(void *)dst, len};
	uint8_t *tmp;
	int err;

	if (ofi_atomic_valid((enum ofi_atomic_kind)av->kind, dt, op,
			     TCP_ATOMIC_MAX, NULL, NULL))
		return FI_EOPNOTSUPP;
	if (!ofi_atomic_aligned(dt, (void *)dst))
		return FI_EINVAL;
	/* The target's bytes, and the original to tell whether it changed
	 * (a compare that fails writes nothing back). */
	tmp = malloc(2 * len);
	if (!tmp)
		return FI_ENOMEM;
	ofi_atomic_lock();
	err = tcp_copy_from(ep, tmp, len, ent->iface, ent->device, &iov, 1);
	if (!err) {
		memcpy(tmp + len, tmp, len);
		err = -ofi_atomic_apply(op, dt, tmp, src, cmp, res,
					len / av->dt_size);
	}
	if (!err && op != FI_ATOMIC_READ && memcmp(tmp, tmp + len, len))
		err = tcp_copy_to(ep, ent->iface, ent->device, &iov, 1, 0, tmp,
				  len);
	ofi_atomic_unlock();
	free(tmp);
	return err;
}
