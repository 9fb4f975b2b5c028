/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_cq.c - the util_cq base object: a FIFO of completions (errors keep
 * their place in it) in every CQ format, fi_cq_read/readfrom/readerr,
 * blocking reads with wait conditions, fi_cq_signal, and the calls providers
 * use to post completions.  Reading drives the progress callbacks of bound
 * endpoints, which is all manual progress needs.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_util.h"
#include "ofi_yield.h"

#define OFI_CQ_DEF_SIZE 1024

static size_t cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

/* The leading fields of all formats coincide, so one copy per size. */
static void cq_copy_out(struct util_cq *cq, void *dst,
			const struct fi_cq_tagged_entry *src)
{
	memcpy(dst, src, cq->entry_size);
}

static inline void cq_lock(struct util_cq *cq)
{
	if (!cq->serial)
		ofi_mutex_lock(&cq->lock);
}

static inline void cq_unlock(struct util_cq *cq)
{
	if (!cq->serial)
		ofi_mutex_unlock(&cq->lock);
}

void ofi_cq_shared(struct util_cq *cq)
{
	if (cq)
		cq->serial = false;
}

/* The ring index @i entries past the head (@i <= cap): no division on
 * every read and write. */
static size_t cq_index(const struct util_cq *cq, size_t i)
{
	size_t n = cq->head + i;

	return n >= cq->cap ? n - cq->cap : n;
}

static OFI_HOT struct util_cq_slot *cq_tail_slot(struct util_cq *cq)
{
	struct util_cq_slot *ring;
	size_t i, n, cap;

	if (cq->count == cq->cap) {
		/* Overrun: keep every completion, in order, and say so once. */
		cap = cq->cap * 2;
		ring = malloc(cap * sizeof(*ring));
		if (!ring)
			return NULL;
		for (i = 0; i < cq->count; i++) {
			n = cq_index(cq, i);
			ring[i] = cq->ring[n];
		}
		free(cq->ring);
		cq->ring = ring;
		cq->cap = cap;
		cq->head = 0;
		if (!cq->overrun_logged) {
			cq->overrun_logged = true;
			FI_WARN(cq->domain->prov, FI_LOG_CQ,
				"CQ overrun: more than %zu entries queued\n",
				cq->size);
		}
	}
	return &cq->ring[cq_index(cq, cq->count)];
}

OFI_HOT int ofi_cq_write_src(struct util_cq *cq, void *context, uint64_t flags,
			     size_t len, void *buf, uint64_t data, uint64_t tag,
			     fi_addr_t src_addr)
{
	struct util_cq_slot *slot;

	cq_lock(cq);
	slot = cq_tail_slot(cq);
	if (!slot) {
		cq_unlock(cq);
		return -FI_ENOMEM;
	}
	slot->comp.op_context = context;
	slot->comp.flags = flags & ~OFI_CQ_QUIET;
	slot->comp.len = len;
	slot->comp.buf = buf;
	slot->comp.data = data;
	slot->comp.tag = tag;
	slot->src_addr = src_addr;
	slot->err = NULL;
	slot->quiet = flags & OFI_CQ_QUIET;
	if (slot->quiet)
		__atomic_store_n(&cq->quiet, cq->quiet + 1, __ATOMIC_RELAXED);
	cq->count++;
	cq_unlock(cq);
	ofi_wait_signal(cq->wait);
	return 0;
}

OFI_HOT int ofi_cq_write(struct util_cq *cq, void *context, uint64_t flags,
			 size_t len, void *buf, uint64_t data, uint64_t tag)
{
	return ofi_cq_write_src(cq, context, flags, len, buf, data, tag,
				FI_ADDR_NOTAVAIL);
}

int ofi_cq_write_error(struct util_cq *cq, const struct fi_cq_err_entry *err)
{
	struct util_cq_slot *slot;
	struct util_cq_err *e;

	if (!err || err->err <= 0)
		return -FI_EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	e->entry = *err;
	e->src_addr = FI_ADDR_NOTAVAIL;
	e->entry.err_data = NULL;
	e->entry.err_data_size = 0;
	if (err->err_data && err->err_data_size) {
		e->entry.err_data = malloc(err->err_data_size);
		if (!e->entry.err_data) {
			free(e);
			return -FI_ENOMEM;
		}
		memcpy(e->entry.err_data, err->err_data, err->err_data_size);
		e->entry.err_data_size = err->err_data_size;
	}

	cq_lock(cq);
	slot = cq_tail_slot(cq);
	if (!slot) {
		cq_unlock(cq);
		free(e->entry.err_data);
		free(e);
		return -FI_ENOMEM;
	}
	memset(slot, 0, sizeof(*slot));
	slot->err = e;
	cq->count++;
	cq_unlock(cq);
	ofi_wait_signal(cq->wait);
	return 0;
}

int ofi_cq_write_error_code(struct util_cq *cq, void *context, uint64_t flags,
			    int err, int prov_errno, size_t olen)
{
	struct fi_cq_err_entry e = {
		.op_context = context,
		.flags = flags,
		.err = err,
		.prov_errno = prov_errno,
		.olen = olen,
	};

	return ofi_cq_write_error(cq, &e);
}

OFI_HOT void ofi_cq_progress(struct util_cq *cq)
{
	struct dlist_entry *item;
	struct util_ep_ref *ref;
	bool lock = !cq->serial; /* what we unlock, whatever progress did */

	if (lock)
		ofi_mutex_lock(&cq->ep_lock);
	dlist_foreach(&cq->ep_list, item) {
		ref = container_of(item, struct util_ep_ref, entry);
		if (ref->ep->progress)
			ref->ep->progress(ref->ep);
	}
	if (lock)
		ofi_mutex_unlock(&cq->ep_lock);
}

size_t ofi_cq_count(struct util_cq *cq)
{
	size_t n;

	cq_lock(cq);
	n = cq->count;
	cq_unlock(cq);
	return n;
}

static OFI_HOT ssize_t cq_readfrom(struct fid_cq *cq_fid, void *buf,
				   size_t count, fi_addr_t *src_addr)
{
	struct util_cq *cq = container_of(cq_fid, struct util_cq, cq_fid);
	struct util_cq_slot *slot;
	char *dst = buf;
	bool prog, yielded = false;
	size_t i;

	if (count && !buf)
		return -FI_EINVAL;
again:
	/* Quiet entries (ops finished within their post: a collective whose
	 * transfers were stores) are returned without a progress pass; any
	 * other entry is read after one, as providers that complete an op
	 * before its bytes left rely on. */
	prog = !count || !__atomic_load_n(&cq->quiet, __ATOMIC_RELAXED);
	if (prog)
		ofi_cq_progress(cq);

	cq_lock(cq);
	if (!prog && (!cq->count || !cq->ring[cq->head].quiet)) {
		cq_unlock(cq);
		ofi_cq_progress(cq);
		prog = true;
		cq_lock(cq);
	}
	if (!cq->count) {
		cq_unlock(cq);
		/* A busy-polling caller gives a shared core away, and looks
		 * again once it is back: what the task that ran meanwhile
		 * sent would otherwise wait for the caller's next read,
		 * and a caller's own idle loop may give the core away
		 * first (Open MPI's does when oversubscribed). */
		if (yielded || ofi_yield_idle() == OFI_YIELD_SPIN)
			return -FI_EAGAIN;
		yielded = true;
		goto again;
	}
	ofi_yield_busy();
	for (i = 0; i < count && cq->count; i++) {
		slot = &cq->ring[cq->head];
		if (slot->err || (!prog && !slot->quiet))
			break;
		cq_copy_out(cq, dst, &slot->comp);
		dst += cq->entry_size;
		if (src_addr)
			src_addr[i] = slot->src_addr;
		if (slot->quiet)
			__atomic_store_n(&cq->quiet, cq->quiet - 1,
					 __ATOMIC_RELAXED);
		cq->head = cq_index(cq, 1);
		cq->count--;
	}
	if (!i && cq->count && cq->ring[cq->head].err) {
		cq_unlock(cq);
		return -FI_EAVAIL;
	}
	cq_unlock(cq);
	return i;
}

static OFI_HOT ssize_t cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return cq_readfrom(cq_fid, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct util_cq *cq = container_of(cq_fid, struct util_cq, cq_fid);
	uint32_t api = cq->domain->fabric->api_version;
	struct util_cq_slot *slot;
	struct util_cq_err *e;
	void *user_data;
	size_t user_size;

	if (!buf || flags)
		return -FI_EINVAL;
	ofi_cq_progress(cq);

	cq_lock(cq);
	if (!cq->count || !cq->ring[cq->head].err) {
		cq_unlock(cq);
		return -FI_EAGAIN;
	}
	slot = &cq->ring[cq->head];
	e = slot->err;
	cq->head = cq_index(cq, 1);
	cq->count--;

	user_data = api >= OFI_API_1_5 ? buf->err_data : NULL;
	user_size = api >= OFI_API_1_5 ? buf->err_data_size : 0;
	/* Callers of API < 1.5 have no err_data_size field: never touch it. */
	if (api >= OFI_API_1_5)
		*buf = e->entry;
	else
		memcpy(buf, &e->entry,
		       offsetof(struct fi_cq_err_entry, err_data_size));
	ofi_copy_err_data(api, &cq->err_data, e->entry.err_data,
			  e->entry.err_data_size, &user_data, &user_size);
	buf->err_data = e->entry.err_data_size ? user_data : NULL;
	if (api >= OFI_API_1_5)
		buf->err_data_size = e->entry.err_data_size ? user_size : 0;
	cq_unlock(cq);
	free(e);
	return 1;
}

/* Enough entries to satisfy an sread, per its wait condition. */
static bool cq_sread_ready(struct util_cq *cq, size_t count, const void *cond)
{
	size_t need = 1;

	if (cq->wait_cond == FI_CQ_COND_THRESHOLD && cond)
		need = OFI_MAX(OFI_MIN(*(const size_t *)cond, count), 1);
	cq_lock(cq);
	if (cq->count && cq->ring[cq->head].err)
		need = 1;
	need = cq->count >= need;
	cq_unlock(cq);
	return need;
}

static bool cq_take_signal(struct util_cq *cq)
{
	bool sig;

	cq_lock(cq);
	sig = cq->signaled;
	cq->signaled = false;
	cq_unlock(cq);
	return sig;
}

/* Bound endpoints needing manual progress cap each sleep at this. */
#define OFI_CQ_NAP_MS 1
static ssize_t cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			    fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct util_cq *cq = container_of(cq_fid, struct util_cq, cq_fid);
	uint64_t start = ofi_gettime_ms(), seq;
	int left, nap;

	if (!cq->wait)
		return -FI_EINVAL;
	for (;;) {
		seq = ofi_wait_seq(cq->wait);
		if (cq_take_signal(cq))
			return -FI_EAGAIN;
		ofi_cq_progress(cq);
		if (cq_sread_ready(cq, count, cond))
			return cq_readfrom(cq_fid, buf, count, src_addr);
		left = ofi_timeout_left(timeout, start);
		if (!left)
			return -FI_EAGAIN;
		if (ofi_wait_seq(cq->wait) != seq)
			continue;
		nap = left;
		/* Our own passes find the work as soon as a thread's would:
		 * spin and yield the budget first, whoever progresses. */
		if (ofi_yield_idle_wait() != OFI_YIELD_SLEEP)
			continue;
		if (ofi_ep_refs_manual(&cq->ep_lock, &cq->ep_list)) {
			if (ofi_ep_refs_poll(cq->wait, seq, &cq->ep_lock,
					     &cq->ep_list, left))
				continue;
			nap = left < 0 ? OFI_CQ_NAP_MS
				       : OFI_MIN(left, OFI_CQ_NAP_MS);
		} else {
			/* the provider's threads complete what we wait for */
			ofi_ep_refs_rouse(&cq->ep_lock, &cq->ep_list);
		}
		ofi_wait_sleep(cq->wait, seq, nap);
	}
}

static ssize_t cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			const void *cond, int timeout)
{
	return cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *cq_fid)
{
	struct util_cq *cq = container_of(cq_fid, struct util_cq, cq_fid);

	if (!cq->wait)
		return -FI_EINVAL;
	cq_lock(cq);
	cq->signaled = true;
	cq_unlock(cq);
	ofi_wait_signal(cq->wait);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq_fid, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	const char *str =
		fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return str;
}

static int cq_close_fid(struct fid *fid)
{
	struct util_cq *cq = container_of(fid, struct util_cq, cq_fid.fid);
	int ret;

	ret = ofi_cq_close(cq);
	if (ret)
		return ret;
	free(cq);
	return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct util_cq *cq = container_of(fid, struct util_cq, cq_fid.fid);

	return ofi_wait_control(cq->wait, command, arg);
}

const struct fi_ops ofi_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close_fid,
	.bind = fi_no_bind,
	.control = cq_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

const struct fi_ops_cq ofi_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static void cq_wait_progress(struct fid *fid)
{
	ofi_cq_progress(container_of(fid, struct util_cq, cq_fid.fid));
}

static bool cq_wait_ready(struct fid *fid)
{
	return ofi_cq_count(container_of(fid, struct util_cq, cq_fid.fid)) > 0;
}

static int cq_check_attr(const struct fi_cq_attr *attr)
{
	if (attr->flags & ~(uint64_t)FI_AFFINITY)
		return -FI_EINVAL;
	if (attr->format != FI_CQ_FORMAT_UNSPEC && !cq_entry_size(attr->format))
		return -FI_EINVAL;
	switch (attr->wait_cond) {
	case FI_CQ_COND_NONE:
	case FI_CQ_COND_THRESHOLD:
		break;
	default:
		return -FI_EINVAL;
	}
	return 0;
}

int ofi_cq_init(struct util_domain *domain, struct fi_cq_attr *attr,
		struct util_cq *cq, void *context)
{
	struct fi_cq_attr def = {.format = FI_CQ_FORMAT_CONTEXT};
	int ret;

	if (!domain || !cq)
		return -FI_EINVAL;
	if (!attr)
		attr = &def;
	ret = cq_check_attr(attr);
	if (ret)
		return ret;

	memset(cq, 0, sizeof(*cq));
	cq->domain = domain;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT
							 : attr->format;
	cq->entry_size = cq_entry_size(cq->format);
	cq->wait_cond = attr->wait_cond;
	cq->size = attr->size ? attr->size : OFI_CQ_DEF_SIZE;
	cq->cap = cq->size;
	cq->head = cq->count = cq->quiet = 0;
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	if (!cq->ring)
		return -FI_ENOMEM;
	ret = ofi_wait_get(domain->fabric, attr->wait_obj, attr->wait_set,
			   &cq->wait);
	if (ret)
		goto err_ring;
	ret = ofi_wait_attach(cq->wait, &cq->cq_fid.fid, cq_wait_progress,
			      cq_wait_ready);
	if (ret)
		goto err_wait;
	ofi_mutex_init(&cq->lock);
	ofi_mutex_init(&cq->ep_lock);
	/* a wait set's fi_wait may progress us from any thread */
	cq->serial = domain->threading == FI_THREAD_DOMAIN &&
		     attr->wait_obj != FI_WAIT_SET;
	dlist_init(&cq->ep_list);
	ofi_atomic_init32(&cq->ref, 0);

	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = (struct fi_ops *)&ofi_cq_fi_ops;
	cq->cq_fid.ops = (struct fi_ops_cq *)&ofi_cq_ops;
	ofi_atomic_inc32(&domain->ref);
	return 0;

err_wait:
	ofi_wait_put(cq->wait);
err_ring:
	free(cq->ring);
	return ret;
}

int ofi_cq_close(struct util_cq *cq)
{
	size_t i;
	struct util_cq_slot *slot;

	if (ofi_atomic_get32(&cq->ref))
		return -FI_EBUSY;
	ofi_wait_detach(cq->wait, &cq->cq_fid.fid);
	ofi_wait_put(cq->wait);
	for (i = 0; i < cq->count; i++) {
		slot = &cq->ring[cq_index(cq, i)];
		if (slot->err) {
			free(slot->err->entry.err_data);
			free(slot->err);
		}
	}
	free(cq->ring);
	free(cq->err_data);
	ofi_mutex_destroy(&cq->lock);
	ofi_mutex_destroy(&cq->ep_lock);
	ofi_atomic_dec32(&cq->domain->ref);
	return 0;
}

int ofi_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		struct fid_cq **cq_fid, void *context)
{
	struct util_cq *cq;
	int ret;

	if (!domain_fid || !cq_fid)
		return -FI_EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	ret = ofi_cq_init(
		container_of(domain_fid, struct util_domain, domain_fid), attr,
		cq, context);
	if (ret) {
		free(cq);
		return ret;
	}
	*cq_fid = &cq->cq_fid;
	return 0;
}
