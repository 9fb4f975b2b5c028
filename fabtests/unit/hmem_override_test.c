/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_override_test: provider conformance of the HMEM copy overrides
 * (fi_set_op(3) and the fi_set_ops FI_SET_OPS_HMEM_OVERRIDE form).  One
 * process, two RDM endpoints of one domain talking through the AV: the call
 * rules, counting overrides that must see every copy the provider makes
 * through its own buffers, and failing or miscounting overrides that must
 * fail exactly the one operation they served.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "shared.h"

#ifdef FI_PMEM /* our headers: the fi_set_op extension is declared */

#define NSLOTS	  8
#define SLOT_PAD  64
#define TAG_BASE  0x4d00ULL
#define DATA_BASE 0xda7a0000ULL
#define NCOMP	  64
/* copies at or below this size must go through a provider buffer */
#define BUFFERED_MAX 4096
#define FAULT_CODE   FI_EACCES /* distinct from what providers make up */

enum op { OP_SEND, OP_TSEND, OP_SENDDATA, OP_INJECT, OP_TINJECT, OP_SENDV };

static const char *const op_names[] = {"fi_send",   "fi_tsend",	  "fi_senddata",
				       "fi_inject", "fi_tinject", "fi_sendv"};

struct comp {
	void *ctx;
	size_t len;
	uint64_t flags, data, tag;
	int err;
};

struct side {
	struct fid_ep *ep;
	struct fid_cq *cq;
	fi_addr_t addr;
	struct comp log[NCOMP];
	int n;
	struct fi_context2 ctx[NSLOTS];
};

/* side 0 sends, side 1 receives */
static struct side sd[2];
static char *mem;
static size_t slot_size, mem_size;
static struct fid_mr *mr;
static void *desc;

/* what the overrides saw; the provider may call them from any thread */
static atomic_ulong from_calls, from_bytes, to_calls, to_bytes;
static atomic_ulong bad_args;

enum fault_mode { FAULT_NONE, FAULT_CODE_RET, FAULT_SHORT, FAULT_LONG };

static struct {
	_Atomic int armed;
	int to_side; /* 0: copy_from fails, 1: copy_to fails */
	enum fault_mode mode;
	const char *base; /* the one buffer whose copy fails */
	size_t msg_size;  /* fail the copy covering its middle byte */
	atomic_ulong fired;
} fault;

static char *tx_slot(int i)
{
	return mem + (size_t)i * slot_size;
}

static char *rx_slot(int i)
{
	return mem + (size_t)(NSLOTS + i) * slot_size;
}

static size_t iov_len(const struct iovec *iov, size_t count)
{
	size_t i, len = 0;

	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/* the user's iov as given: within our own tx (or rx) slots */
static void check_args(enum fi_hmem_iface iface, uint64_t device,
		       const struct iovec *iov, size_t count, uint64_t offset,
		       size_t size, bool rx)
{
	const char *lo = rx ? rx_slot(0) : tx_slot(0);
	const char *hi = lo + (size_t)NSLOTS * slot_size;
	size_t i;

	if (iface != FI_HMEM_SYSTEM || device != 0 || !iov || !count)
		goto bad;
	for (i = 0; i < count; i++) {
		if ((const char *)iov[i].iov_base < lo ||
		    (const char *)iov[i].iov_base + iov[i].iov_len > hi)
			goto bad;
	}
	if (offset > iov_len(iov, count) || !size)
		goto bad;
	return;
bad:
	if (atomic_fetch_add(&bad_args, 1) < 4)
		fprintf(stderr,
			"  override (%s) got iface %d device %" PRIu64
			" iov %p count %zu offset %" PRIu64 " size %zu\n",
			rx ? "copy_to" : "copy_from", (int)iface, device,
			iov && count ? iov[0].iov_base : NULL, count, offset,
			size);
}

static size_t walk(const struct iovec *iov, size_t count, uint64_t offset,
		   char *buf, size_t size, bool to_iov)
{
	size_t i, n, done = 0;

	for (i = 0; i < count && done < size; i++) {
		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		n = iov[i].iov_len - offset;
		if (n > size - done)
			n = size - done;
		if (to_iov)
			memcpy((char *)iov[i].iov_base + offset, buf + done, n);
		else
			memcpy(buf + done, (char *)iov[i].iov_base + offset, n);
		done += n;
		offset = 0;
	}
	return done;
}

/*
 * The one copy chosen to misbehave (the one covering the message's middle
 * byte, once): true with *ret the answer and *len the bytes to copy.
 */
static bool fault_hit(int to_side, const struct iovec *iov, uint64_t offset,
		      size_t size, ssize_t *ret, size_t *len)
{
	int one = 1;

	if (fault.mode == FAULT_NONE || fault.to_side != to_side ||
	    iov[0].iov_base != fault.base ||
	    offset + size <= fault.msg_size / 2)
		return false;
	if (!atomic_compare_exchange_strong(&fault.armed, &one, 0))
		return false;
	atomic_fetch_add(&fault.fired, 1);
	switch (fault.mode) {
	case FAULT_CODE_RET:
		/* nothing copied, as with a real device error */
		*ret = -FAULT_CODE;
		*len = 0;
		break;
	case FAULT_SHORT:
		*ret = (ssize_t)size - 1;
		*len = size - 1;
		break;
	default:
		/* everything copied, but miscounted */
		*ret = (ssize_t)size + 1;
		*len = size;
		break;
	}
	return true;
}

static ssize_t count_from(void *dest, size_t size, enum fi_hmem_iface iface,
			  uint64_t device, const struct iovec *iov,
			  size_t count, uint64_t offset)
{
	size_t n, len = size;
	ssize_t ret = 0;
	bool hit;

	check_args(iface, device, iov, count, offset, size, false);
	atomic_fetch_add(&from_calls, 1);
	hit = fault_hit(0, iov, offset, size, &ret, &len);
	n = walk(iov, count, offset, dest, len, false);
	atomic_fetch_add(&from_bytes, n);
	return hit ? ret : (ssize_t)n;
}

static ssize_t count_to(enum fi_hmem_iface iface, uint64_t device,
			const struct iovec *iov, size_t count, uint64_t offset,
			const void *src, size_t size)
{
	size_t n, len = size;
	ssize_t ret = 0;
	bool hit;

	check_args(iface, device, iov, count, offset, size, true);
	atomic_fetch_add(&to_calls, 1);
	hit = fault_hit(1, iov, offset, size, &ret, &len);
	n = walk(iov, count, offset, (char *)src, len, true);
	atomic_fetch_add(&to_bytes, n);
	return hit ? ret : (ssize_t)n;
}

static void reset_counts(void)
{
	atomic_store(&from_calls, 0);
	atomic_store(&from_bytes, 0);
	atomic_store(&to_calls, 0);
	atomic_store(&to_bytes, 0);
}

/* setup */

static int open_domain(void)
{
	ft_opts.ep_type = FI_EP_RDM;
	return ft_unit_open(FI_MSG | FI_TAGGED);
}

static int install_overrides(void)
{
	union fi_override_op from = {.copy_from_hmem_iov = count_from};
	union fi_override_op to = {.copy_to_hmem_iov = count_to};
	int ret;

	ret = fi_set_op(&ft.domain->fid, FI_OVERRIDE_COPY_FROM_HMEM_IOV, &from,
			0);
	if (!ret)
		ret = fi_set_op(&ft.domain->fid, FI_OVERRIDE_COPY_TO_HMEM_IOV,
				&to, 0);
	if (ret)
		FT_DEBUG("fi_set_op: %s", fi_strerror(-ret));
	return ret;
}

static int alloc_mem(size_t max)
{
	int ret;

	slot_size = (max + SLOT_PAD + 63) & ~(size_t)63;
	mem_size = 2 * NSLOTS * slot_size;
	if (posix_memalign((void **)&mem, 4096, mem_size))
		return -FI_ENOMEM;
	memset(mem, 0, mem_size);
	if (!(ft.info->domain_attr->mr_mode & (FI_MR_LOCAL | FI_LOCAL_MR)))
		return 0;
	ret = fi_mr_reg(ft.domain, mem, mem_size, FI_SEND | FI_RECV, 0, 0x0e, 0,
			&mr, NULL);
	if (ret) {
		FT_PRINTERR("fi_mr_reg", ret);
		return ret;
	}
	desc = fi_mr_desc(mr);
	return 0;
}

static int open_side(struct side *s)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE};
	int ret;

	ret = fi_cq_open(ft.domain, &attr, &s->cq, NULL);
	if (ret) {
		FT_PRINTERR("fi_cq_open", ret);
		return ret;
	}
	ret = fi_endpoint(ft.domain, ft.info, &s->ep, NULL);
	if (ret) {
		FT_PRINTERR("fi_endpoint", ret);
		return ret;
	}
	ret = fi_ep_bind(s->ep, &ft.av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret) {
		FT_PRINTERR("fi_ep_bind", ret);
		return ret;
	}
	return 0;
}

static int enable_side(struct side *s)
{
	char name[256];
	size_t len = sizeof(name);
	int ret;

	ret = fi_enable(s->ep);
	if (ret) {
		FT_PRINTERR("fi_enable", ret);
		return ret;
	}
	ret = fi_getname(&s->ep->fid, name, &len);
	if (ret) {
		FT_PRINTERR("fi_getname", ret);
		return ret;
	}
	ret = fi_av_insert(ft.av, name, 1, &s->addr, 0, NULL);
	if (ret != 1) {
		FT_PRINTERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	return 0;
}

/* the av and both endpoints, opened (not enabled) */
static int open_pair(void)
{
	struct fi_av_attr av_attr = {.type = ft.info->domain_attr->av_type};
	int ret;

	if (av_attr.type == FI_AV_UNSPEC)
		av_attr.type = FI_AV_TABLE;
	ret = fi_av_open(ft.domain, &av_attr, &ft.av, NULL);
	if (ret) {
		FT_PRINTERR("fi_av_open", ret);
		return ret;
	}
	ret = open_side(&sd[0]);
	if (!ret)
		ret = open_side(&sd[1]);
	return ret;
}

static int enable_pair(void)
{
	int ret;

	ret = enable_side(&sd[0]);
	return ret ? ret : enable_side(&sd[1]);
}

/* domain, overrides (when wanted), memory and an enabled pair */
static int setup(size_t max, bool overrides)
{
	int ret;

	ret = open_domain();
	if (ret)
		return ret;
	if (overrides) {
		ret = install_overrides();
		if (ret)
			return ret;
	}
	if (max > ft.info->ep_attr->max_msg_size)
		max = ft.info->ep_attr->max_msg_size;
	ret = alloc_mem(max);
	if (!ret)
		ret = open_pair();
	return ret ? ret : enable_pair();
}

static void cleanup(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		FT_CLOSE_FID(sd[i].ep);
		FT_CLOSE_FID(sd[i].cq);
	}
	FT_CLOSE_FID(mr);
	ft_free_res();
	free(mem);
	mem = NULL;
}

/* progress and completions */

static void log_comp(struct side *s, const struct comp *c)
{
	if (s->n < NCOMP)
		s->log[s->n] = *c;
	s->n++;
}

static int poll_side(struct side *s)
{
	struct fi_cq_tagged_entry e[8];
	struct fi_cq_err_entry err = {0};
	struct comp c;
	ssize_t ret;
	int i;

	ret = fi_cq_read(s->cq, e, 8);
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret == -FI_EAVAIL) {
		ret = fi_cq_readerr(s->cq, &err, 0);
		if (ret < 0)
			return ret == -FI_EAGAIN ? 0 : (int)ret;
		c = (struct comp){err.op_context, err.len,
				  err.flags,	  err.data,
				  err.tag,	  err.err ? err.err : -1};
		FT_DEBUG("side %d: error entry ctx %p err %d (%s)",
			 (int)(s - sd), err.op_context, err.err,
			 fi_strerror(err.err));
		log_comp(s, &c);
		return 0;
	}
	if (ret < 0) {
		FT_PRINTERR("fi_cq_read", ret);
		return (int)ret;
	}
	for (i = 0; i < ret; i++) {
		c = (struct comp){e[i].op_context, e[i].len, e[i].flags,
				  e[i].data,	   e[i].tag, 0};
		log_comp(s, &c);
	}
	return 0;
}

static int progress(void)
{
	int ret;

	ret = poll_side(&sd[0]);
	return ret ? ret : poll_side(&sd[1]);
}

static const struct comp *find(const struct side *s, int i)
{
	int k;

	for (k = 0; k < s->n && k < NCOMP; k++)
		if (s->log[k].ctx == &s->ctx[i])
			return &s->log[k];
	return NULL;
}

static int count_for(const struct side *s, int i)
{
	int k, n = 0;

	for (k = 0; k < s->n && k < NCOMP; k++)
		n += s->log[k].ctx == &s->ctx[i];
	return n;
}

/* drives both sides until message i completed where asked, bounded */
static int wait_msg(int i, bool tx, bool rx)
{
	uint64_t start = ft_now_us();
	int ret;

	while ((tx && !find(&sd[0], i)) || (rx && !find(&sd[1], i))) {
		ret = progress();
		if (ret)
			return ret;
		if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("timeout on message %d (tx %s, rx %s)", i,
			       find(&sd[0], i) ? "done" : "pending",
			       find(&sd[1], i) ? "done" : "pending");
			return -FI_ETIMEDOUT;
		}
	}
	return 0;
}

static int idle_progress(int ms)
{
	uint64_t start = ft_now_us();
	int ret;

	while (ft_now_us() - start < (uint64_t)ms * 1000) {
		ret = progress();
		if (ret)
			return ret;
	}
	return 0;
}

/* data path */

static bool is_inject(enum op op)
{
	return op == OP_INJECT || op == OP_TINJECT;
}

static bool is_tagged(enum op op)
{
	return op == OP_TSEND || op == OP_TINJECT;
}

static ssize_t post_send_once(enum op op, int i, size_t size)
{
	struct iovec iov[2];
	void *descs[2] = {desc, desc};
	size_t cut = size / 2;
	struct side *s = &sd[0];
	fi_addr_t to = sd[1].addr;
	char *buf = tx_slot(i);

	switch (op) {
	case OP_SEND:
		return fi_send(s->ep, buf, size, desc, to, &s->ctx[i]);
	case OP_TSEND:
		return fi_tsend(s->ep, buf, size, desc, to, TAG_BASE + i,
				&s->ctx[i]);
	case OP_SENDDATA:
		return fi_senddata(s->ep, buf, size, desc, DATA_BASE + i, to,
				   &s->ctx[i]);
	case OP_INJECT:
		return fi_inject(s->ep, buf, size, to);
	case OP_TINJECT:
		return fi_tinject(s->ep, buf, size, to, TAG_BASE + i);
	case OP_SENDV:
		iov[0] = (struct iovec){buf, cut};
		iov[1] = (struct iovec){buf + cut, size - cut};
		if (!cut)
			return fi_sendv(s->ep, &iov[1], descs, 1, to,
					&s->ctx[i]);
		return fi_sendv(s->ep, iov, descs, 2, to, &s->ctx[i]);
	}
	return -FI_EINVAL;
}

static ssize_t post_send(enum op op, int i, size_t size)
{
	uint64_t start = ft_now_us();
	ssize_t ret;

	while ((ret = post_send_once(op, i, size)) == -FI_EAGAIN) {
		if (progress() || ft_timed_out(start, ft_opts.timeout))
			break;
	}
	return ret;
}

static ssize_t post_recv(enum op op, int i, size_t size)
{
	struct side *s = &sd[1];
	char *buf = rx_slot(i);
	size_t cut = size / 3;
	struct iovec iov[2] = {{buf, cut}, {buf + cut, size - cut}};
	void *descs[2] = {desc, desc};
	uint64_t start = ft_now_us();
	ssize_t ret;

	memset(buf, 0xa5, size + SLOT_PAD);
	do {
		if (is_tagged(op))
			ret = fi_trecv(s->ep, buf, size, desc, FI_ADDR_UNSPEC,
				       TAG_BASE + i, 0, &s->ctx[i]);
		else if (op == OP_SENDV && cut)
			ret = fi_recvv(s->ep, iov, descs, 2, FI_ADDR_UNSPEC,
				       &s->ctx[i]);
		else
			ret = fi_recv(s->ep, buf, size, desc, FI_ADDR_UNSPEC,
				      &s->ctx[i]);
	} while (ret == -FI_EAGAIN && !progress() &&
		 !ft_timed_out(start, ft_opts.timeout));
	if (ret)
		FT_PRINTERR("post_recv", ret);
	return ret;
}

static uint64_t seed_of(enum op op, int i, size_t size)
{
	return (uint64_t)op << 40 ^ (uint64_t)i << 32 ^ size;
}

/* a successful receive of message i: length, tag, data and bytes intact */
static int check_rx(enum op op, int i, size_t size)
{
	const struct comp *c = find(&sd[1], i);
	const unsigned char *pad = (unsigned char *)rx_slot(i) + size;
	int k;

	if (!c || c->err) {
		FT_ERR("message %d: receive %s", i,
		       c ? fi_strerror(c->err) : "missing");
		return -FI_EIO;
	}
	if (c->len != size) {
		FT_ERR("message %d: len %zu, expected %zu", i, c->len, size);
		return -FI_EIO;
	}
	if (is_tagged(op) && c->tag != TAG_BASE + (uint64_t)i) {
		FT_ERR("message %d: tag %#" PRIx64, i, c->tag);
		return -FI_EIO;
	}
	if (op == OP_SENDDATA && (!(c->flags & FI_REMOTE_CQ_DATA) ||
				  c->data != DATA_BASE + (uint64_t)i)) {
		FT_ERR("message %d: remote cq data %#" PRIx64
		       " flags %#" PRIx64,
		       i, c->data, c->flags);
		return -FI_EIO;
	}
	for (k = 0; k < SLOT_PAD; k++) {
		if (pad[k] != 0xa5) {
			FT_ERR("message %d: written past its %zu bytes", i,
			       size);
			return -FI_EIO;
		}
	}
	return ft_check_buf(rx_slot(i), size, seed_of(op, i, size));
}

/* message i from side 0 to side 1, checked; unexp: send before the recv */
static int xfer(enum op op, int i, size_t size, bool unexp)
{
	ssize_t ret;

	ft_fill_buf(tx_slot(i), size, seed_of(op, i, size));
	if (!unexp) {
		ret = post_recv(op, i, size);
		if (ret)
			return (int)ret;
	}
	ret = post_send(op, i, size);
	if (ret) {
		FT_ERR("%s of %zu bytes: %s", op_names[op], size,
		       fi_strerror((int)-ret));
		return (int)ret;
	}
	if (unexp) {
		/* let the message arrive before there is a receive */
		ret = idle_progress(10);
		if (!ret)
			ret = post_recv(op, i, size);
		if (ret)
			return (int)ret;
	}
	ret = wait_msg(i, !is_inject(op), true);
	if (ret)
		return (int)ret;
	if (!is_inject(op) && find(&sd[0], i)->err) {
		FT_ERR("%s of %zu bytes: send completed with %s", op_names[op],
		       size, fi_strerror(find(&sd[0], i)->err));
		return -FI_EIO;
	}
	return check_rx(op, i, size);
}

/* sub-tests */

static const size_t count_sizes[] = {1,	   64,	 200,	208,   209,   1000,
				     4096, 4097, 16384, 65536, 65537, 1 << 20};

/* every size through one operation; the override counts what it sees */
static enum ft_result count_op(enum op op, bool unexp)
{
	enum ft_result res = FT_PASS;
	size_t size, limit;
	unsigned long fc, fb, tc, tb;
	unsigned k;
	int ret;

	ret = setup(1 << 20, true);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	if (op == OP_SENDDATA && !ft.info->domain_attr->cq_data_size) {
		res = FT_NOTSUPP;
		goto out;
	}
	if (op == OP_SENDV && ft.info->tx_attr->iov_limit < 2) {
		res = FT_NOTSUPP;
		goto out;
	}
	limit = is_inject(op) ? ft.info->tx_attr->inject_size
			      : ft.info->ep_attr->max_msg_size;
	for (k = 0; k < sizeof(count_sizes) / sizeof(count_sizes[0]); k++) {
		size = count_sizes[k];
		if (size > limit)
			continue;
		reset_counts();
		/* slots are reused: forget the completions of earlier sizes */
		sd[0].n = sd[1].n = 0;
		ret = xfer(op, (int)(k % NSLOTS), size, unexp);
		UT_CHECK(!ret, "%s of %zu bytes failed", op_names[op], size);
		fc = atomic_load(&from_calls);
		fb = atomic_load(&from_bytes);
		tc = atomic_load(&to_calls);
		tb = atomic_load(&to_bytes);
		FT_DEBUG("%-11s %8zu bytes: copy_from %lu calls %lu bytes, "
			 "copy_to %lu calls %lu bytes",
			 op_names[op], size, fc, fb, tc, tb);
		UT_CHECK(!atomic_load(&bad_args),
			 "override saw a wrong iface/device/iov");
		if (size > BUFFERED_MAX && !is_inject(op))
			continue;
		UT_CHECK(fc >= 1 && fb >= size,
			 "%s %zu bytes: copy_from %lu calls %lu bytes",
			 op_names[op], size, fc, fb);
		UT_CHECK(tc >= 1 && tb >= size,
			 "%s %zu bytes: copy_to %lu calls %lu bytes",
			 op_names[op], size, tc, tb);
	}
out:
	cleanup();
	return res;
}

static enum ft_result t_count_send(void)
{
	return count_op(OP_SEND, false);
}

static enum ft_result t_count_tsend(void)
{
	return count_op(OP_TSEND, false);
}

static enum ft_result t_count_senddata(void)
{
	return count_op(OP_SENDDATA, false);
}

static enum ft_result t_count_inject(void)
{
	return count_op(OP_INJECT, false);
}

static enum ft_result t_count_tinject(void)
{
	return count_op(OP_TINJECT, false);
}

static enum ft_result t_count_sendv(void)
{
	return count_op(OP_SENDV, false);
}

static enum ft_result t_count_unexp(void)
{
	return count_op(OP_TSEND, true);
}

/* did message i complete on side s, and how */
static int outcome(const struct side *s, int i, int *err)
{
	const struct comp *c = find(s, i);

	*err = c ? c->err : 0;
	return count_for(s, i);
}

/*
 * Five messages, the third one's copy fails (at its middle byte); then a
 * sixth.  Exactly one operation fails with the expected code, at the side
 * whose copy failed; the others arrive intact; nothing completes twice.
 */
static enum ft_result fault_run(int to_side, enum fault_mode mode, enum op op,
				size_t size)
{
	enum ft_result res = FT_PASS;
	int want = mode == FAULT_CODE_RET ? FAULT_CODE : FI_EIO;
	int i, n, err, failed = 0, target = 2;
	ssize_t ret;

	ret = setup(size, true);
	if (ret) {
		res = ft_ret_notsupp((int)ret);
		goto out;
	}
	if (size > (is_inject(op) ? ft.info->tx_attr->inject_size
				  : ft.info->ep_attr->max_msg_size)) {
		res = FT_NOTSUPP;
		goto out;
	}
	fault.to_side = to_side;
	fault.mode = mode;
	fault.base = to_side ? rx_slot(target) : tx_slot(target);
	fault.msg_size = size;
	atomic_store(&fault.armed, 1);
	for (i = 0; i < 6; i++) {
		ft_fill_buf(tx_slot(i), size, seed_of(op, i, size));
		ret = post_recv(op, i, size);
		UT_CHECK(!ret, "posting receive %d", i);
	}
	for (i = 0; i < 6; i++) {
		ret = post_send(op, i, size);
		if (ret) {
			UT_CHECK(i == target && !to_side && ret == -want,
				 "message %d: %s returned %zd (%s)", i,
				 op_names[op], ret, fi_strerror((int)-ret));
			failed++;
			FT_DEBUG("message %d: posting call returned %s", i,
				 fi_strerror(want));
			continue;
		}
		if (i != target) {
			ret = wait_msg(i, !is_inject(op), true);
			UT_CHECK(!ret, "message %d did not complete", i);
			continue;
		}
		/* the failing side reports; give the other one time too */
		ret = wait_msg(i, !to_side && !is_inject(op), to_side);
		UT_CHECK(!ret, "failed message %d: no completion", i);
		ret = idle_progress(100);
		UT_CHECK(!ret, "progress");
	}
	ret = idle_progress(100);
	UT_CHECK(!ret, "progress");
	if (!atomic_load(&fault.fired) && size > BUFFERED_MAX) {
		/* a direct copy (CMA) bypasses overrides at this size */
		FT_DEBUG("override not used for %zu bytes: nothing to fail",
			 size);
		res = FT_NOTSUPP;
		goto out;
	}
	UT_CHECK(atomic_load(&fault.fired) == 1,
		 "the override's fault fired %lu times", fault.fired);
	for (i = 0; i < 6; i++) {
		n = outcome(&sd[0], i, &err);
		if (!is_inject(op) && i != target)
			UT_CHECK(n == 1 && !err,
				 "send %d: %d completions, err %d", i, n, err);
		if (i == target && n) {
			UT_CHECK(n == 1, "send %d completed %d times", i, n);
			UT_CHECK(!err || to_side || err == want,
				 "send %d: err %d (%s), expected %d", i, err,
				 fi_strerror(err), want);
			if (err && !to_side)
				failed++;
			FT_DEBUG("sender: message %d completed, err %d (%s)", i,
				 err, fi_strerror(err));
		}
		n = outcome(&sd[1], i, &err);
		if (i != target) {
			UT_CHECK(n == 1, "receive %d: %d completions", i, n);
			UT_CHECK(!check_rx(op, i, size), "receive %d", i);
			continue;
		}
		FT_DEBUG("receiver: message %d %d completions, err %d (%s)", i,
			 n, err, n ? fi_strerror(err) : "-");
		UT_CHECK(n <= 1, "receive %d completed %d times", i, n);
		if (n && !err)
			FT_ERR("receive %d: success for a failed message, "
			       "data %s",
			       i, check_rx(op, i, size) ? "corrupt" : "intact");
		/* a failed message never arrives as if it were whole */
		UT_CHECK(!n || err, "receive %d completed without error", i);
		if (to_side) {
			UT_CHECK(n == 1 && err == want,
				 "receive %d: err %d (%s), expected %d", i, err,
				 fi_strerror(err), want);
			failed++;
		}
	}
	UT_CHECK(failed == 1, "%d operations failed, expected exactly one",
		 failed);
	UT_CHECK(sd[0].n <= NCOMP && sd[1].n <= NCOMP, "completion flood");
out:
	cleanup();
	return res;
}

static enum ft_result t_fail_from_inline(void)
{
	return fault_run(0, FAULT_CODE_RET, OP_TSEND, 64);
}

static enum ft_result t_fail_from_inject(void)
{
	return fault_run(0, FAULT_CODE_RET, OP_TINJECT, 64);
}

static enum ft_result t_fail_from_medium(void)
{
	return fault_run(0, FAULT_CODE_RET, OP_TSEND, 4000);
}

static enum ft_result t_fail_from_large(void)
{
	return fault_run(0, FAULT_CODE_RET, OP_TSEND, 1 << 20);
}

static enum ft_result t_fail_to_inline(void)
{
	return fault_run(1, FAULT_CODE_RET, OP_TSEND, 64);
}

static enum ft_result t_fail_to_medium(void)
{
	return fault_run(1, FAULT_CODE_RET, OP_TSEND, 4000);
}

static enum ft_result t_fail_to_large(void)
{
	return fault_run(1, FAULT_CODE_RET, OP_TSEND, 1 << 20);
}

static enum ft_result t_short_from(void)
{
	return fault_run(0, FAULT_SHORT, OP_TSEND, 1000);
}

static enum ft_result t_short_from_large(void)
{
	return fault_run(0, FAULT_SHORT, OP_TSEND, 1 << 20);
}

static enum ft_result t_short_to(void)
{
	return fault_run(1, FAULT_SHORT, OP_TSEND, 1000);
}

static enum ft_result t_long_from(void)
{
	return fault_run(0, FAULT_LONG, OP_TSEND, 100);
}

static enum ft_result t_long_to(void)
{
	return fault_run(1, FAULT_LONG, OP_TSEND, 100);
}

/* calls that must answer before any data moves */
static enum ft_result t_rules(void)
{
	union fi_override_op from = {.copy_from_hmem_iov = count_from};
	union fi_override_op to = {.copy_to_hmem_iov = count_to};
	union fi_override_op none = {.copy_from_hmem_iov = NULL};
	struct fid *dom;
	enum ft_result res = FT_PASS;
	int ret;

	ret = open_domain();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	dom = &ft.domain->fid;
	ret = fi_set_op(dom, FI_OVERRIDE_COPY_FROM_HMEM_IOV, &from, 0);
	if (ret == -FI_ENOSYS) {
		FT_DEBUG("domain takes no overrides (-FI_ENOSYS)");
		res = FT_NOTSUPP;
		goto out;
	}
	UT_EXPECT_RET(ret, 0);
	UT_EXPECT_RET(fi_set_op(dom, FI_OVERRIDE_COPY_FROM_HMEM_IOV, &from, 1),
		      -FI_EINVAL);
	UT_EXPECT_RET(
		fi_set_op(dom, FI_OVERRIDE_COPY_TO_HMEM_IOV, &to, 1ULL << 60),
		-FI_EINVAL);
	UT_EXPECT_RET(fi_set_op(dom, (enum fi_set_op)99, &from, 0), -FI_ENOSYS);
	UT_EXPECT_RET(fi_set_op(&ft.fabric->fid, FI_OVERRIDE_COPY_FROM_HMEM_IOV,
				&from, 0),
		      -FI_ENOSYS);
	UT_EXPECT_RET(alloc_mem(4096), 0);
	UT_EXPECT_RET(open_pair(), 0);
	UT_EXPECT_RET(fi_set_op(&sd[0].ep->fid, FI_OVERRIDE_COPY_FROM_HMEM_IOV,
				&from, 0),
		      -FI_ENOSYS);
	UT_EXPECT_RET(
		fi_set_op(&sd[0].cq->fid, FI_OVERRIDE_COPY_TO_HMEM_IOV, &to, 0),
		-FI_ENOSYS);
	UT_EXPECT_RET(
		fi_set_op(&ft.av->fid, FI_OVERRIDE_COPY_TO_HMEM_IOV, &to, 0),
		-FI_ENOSYS);
	/* endpoints opened but not enabled: still open for changes */
	UT_EXPECT_RET(fi_set_op(dom, FI_OVERRIDE_COPY_TO_HMEM_IOV, &to, 0), 0);
	UT_EXPECT_RET(fi_set_op(dom, FI_OVERRIDE_COPY_FROM_HMEM_IOV, NULL, 0),
		      0);
	UT_EXPECT_RET(fi_set_op(dom, FI_OVERRIDE_COPY_TO_HMEM_IOV, &none, 0),
		      0);
	UT_EXPECT_RET(enable_pair(), 0);
	UT_EXPECT_RET(fi_set_op(dom, FI_OVERRIDE_COPY_FROM_HMEM_IOV, &from, 0),
		      -FI_EBUSY);
	UT_EXPECT_RET(fi_set_op(dom, FI_OVERRIDE_COPY_TO_HMEM_IOV, NULL, 0),
		      -FI_EBUSY);
	/* both restored: the provider copies alone */
	reset_counts();
	UT_EXPECT_RET(xfer(OP_SEND, 0, 64, false), 0);
	UT_EXPECT_RET(xfer(OP_SEND, 1, 4096, false), 0);
	UT_CHECK(!from_calls && !to_calls,
		 "restored overrides still called: %lu from, %lu to",
		 from_calls, to_calls);
	FT_CLOSE_FID(sd[0].ep);
	FT_CLOSE_FID(sd[1].ep);
	UT_EXPECT_RET(fi_set_op(dom, FI_OVERRIDE_COPY_FROM_HMEM_IOV, &from, 0),
		      -FI_EBUSY);
out:
	cleanup();
	return res;
}

/* the 1.17 form: same rules, both slots at once */
static enum ft_result t_rules_set_ops(void)
{
	struct fi_hmem_override_ops ops = {
		.size = sizeof(ops),
		.copy_from_hmem_iov = count_from,
		.copy_to_hmem_iov = count_to,
	};
	const char *name = FI_SET_OPS_HMEM_OVERRIDE;
	enum ft_result res = FT_PASS;
	struct fid *dom;
	int ret;

	ret = open_domain();
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	dom = &ft.domain->fid;
	ret = fi_set_ops(dom, name, 0, &ops, NULL);
	if (ret == -FI_ENOSYS) {
		FT_DEBUG("domain takes no overrides (-FI_ENOSYS)");
		res = FT_NOTSUPP;
		goto out;
	}
	UT_EXPECT_RET(ret, 0);
	UT_EXPECT_RET(fi_set_ops(dom, name, 1, &ops, NULL), -FI_EINVAL);
	UT_EXPECT_RET(fi_set_ops(dom, "no_such_ops", 0, &ops, NULL),
		      -FI_ENOSYS);
	UT_EXPECT_RET(fi_set_ops(&ft.fabric->fid, name, 0, &ops, NULL),
		      -FI_ENOSYS);
	/* NULL restores both; size 0 is taken as the whole table */
	UT_EXPECT_RET(fi_set_ops(dom, name, 0, NULL, NULL), 0);
	ops.size = 0;
	UT_EXPECT_RET(fi_set_ops(dom, name, 0, &ops, NULL), 0);
	UT_EXPECT_RET(alloc_mem(4096), 0);
	UT_EXPECT_RET(open_pair(), 0);
	UT_EXPECT_RET(fi_set_ops(&sd[0].ep->fid, name, 0, &ops, NULL),
		      -FI_ENOSYS);
	UT_EXPECT_RET(enable_pair(), 0);
	UT_EXPECT_RET(fi_set_ops(dom, name, 0, &ops, NULL), -FI_EBUSY);
	UT_EXPECT_RET(fi_set_ops(dom, name, 0, NULL, NULL), -FI_EBUSY);
	reset_counts();
	UT_EXPECT_RET(xfer(OP_SEND, 0, 64, false), 0);
	UT_CHECK(from_calls >= 1 && to_calls >= 1,
		 "fi_set_ops overrides not called: %lu from, %lu to",
		 from_calls, to_calls);
out:
	cleanup();
	return res;
}

#else /* !FI_PMEM: plain 1.17 headers, no fi_set_op */

static enum ft_result t_notsupp(void)
{
	FT_DEBUG("built without the fi_set_op extension");
	return FT_NOTSUPP;
}

#define t_rules		   t_notsupp
#define t_rules_set_ops	   t_notsupp
#define t_count_send	   t_notsupp
#define t_count_tsend	   t_notsupp
#define t_count_senddata   t_notsupp
#define t_count_inject	   t_notsupp
#define t_count_tinject	   t_notsupp
#define t_count_sendv	   t_notsupp
#define t_count_unexp	   t_notsupp
#define t_fail_from_inline t_notsupp
#define t_fail_from_inject t_notsupp
#define t_fail_from_medium t_notsupp
#define t_fail_from_large  t_notsupp
#define t_fail_to_inline   t_notsupp
#define t_fail_to_medium   t_notsupp
#define t_fail_to_large	   t_notsupp
#define t_short_from	   t_notsupp
#define t_short_from_large t_notsupp
#define t_short_to	   t_notsupp
#define t_long_from	   t_notsupp
#define t_long_to	   t_notsupp

#endif /* FI_PMEM */

static const struct ft_unit_test tests[] = {
	{"rules", t_rules, "fi_set_op: EINVAL/ENOSYS/EBUSY, NULL restores",
	 false},
	{"rules_set_ops", t_rules_set_ops,
	 "fi_set_ops(FI_SET_OPS_HMEM_OVERRIDE): same rules", false},
	{"count_send", t_count_send, "fi_send: override sees buffered copies",
	 false},
	{"count_tsend", t_count_tsend, "fi_tsend: override sees copies", false},
	{"count_senddata", t_count_senddata, "fi_senddata: copies + cq data",
	 false},
	{"count_inject", t_count_inject, "fi_inject: always through override",
	 false},
	{"count_tinject", t_count_tinject, "fi_tinject: always overridden",
	 false},
	{"count_sendv", t_count_sendv, "fi_sendv/fi_recvv: iov offsets", false},
	{"count_unexp", t_count_unexp, "unexpected messages: copies counted",
	 false},
	{"fail_from_inline", t_fail_from_inline,
	 "64 B send, copy_from fails once: exactly one error", false},
	{"fail_from_inject", t_fail_from_inject,
	 "64 B tinject, copy_from fails: the call returns it", false},
	{"fail_from_medium", t_fail_from_medium,
	 "4000 B send, copy_from fails once", false},
	{"fail_from_large", t_fail_from_large,
	 "1 MiB send, copy_from fails mid-transfer", false},
	{"fail_to_inline", t_fail_to_inline,
	 "64 B, copy_to fails once: one receive error", false},
	{"fail_to_medium", t_fail_to_medium, "4000 B, copy_to fails once",
	 false},
	{"fail_to_large", t_fail_to_large, "1 MiB, copy_to fails mid-transfer",
	 false},
	{"short_from", t_short_from, "copy_from short count -> EIO", false},
	{"short_from_large", t_short_from_large,
	 "1 MiB, copy_from short count mid-transfer -> EIO", false},
	{"short_to", t_short_to, "copy_to short count -> EIO", false},
	{"long_from", t_long_from, "copy_from count too long -> EIO", false},
	{"long_to", t_long_to, "copy_to count too long -> EIO", false},
	{NULL, NULL, NULL, false},
};

int main(int argc, char **argv)
{
	return ft_run_unit("hmem_override_test", tests, argc, argv);
}
