/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_eq.c - the util_eq base object: event FIFO plus an error queue that
 * takes precedence, fi_eq_read (FI_PEEK), readerr, write, sread with
 * timeout, strerror, and the per-EQ, per-event-type handler registry
 * (fi_eq_register_handler) through which provider events are delivered.
 *
 * Handlers run without the EQ lock held, so a handler may read, write or
 * register on its own EQ. Close and re-registration wait for the handler
 * calls in flight instead, unless the waiting thread is itself inside a
 * handler (it would wait for itself): see fi_eq(3).
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_util.h"
#include "ofi_yield.h"

#define OFI_EQ_DEF_SIZE 256
/* Largest event a user may write: an entry plus generous CM data. */
#define OFI_EQ_MAX_EVENT (sizeof(struct fi_eq_cm_entry) + 4096)

/* Handler calls on this thread's stack, any EQ: such a thread never waits. */
static __thread unsigned eq_handler_depth;

/*
 * An FI_COMMIT event carries its iov array right after the entry, and the
 * entry's iov points at it: in every copy (queued, handed to a handler,
 * read into the caller's buffer), so it never points into freed memory.
 * See fi_eq(3).
 */
static void eq_commit_rebase(uint32_t event, void *data, size_t len)
{
	struct fi_eq_commit_entry *c = data;

	if (event != FI_COMMIT || len < sizeof(*c) ||
	    (len - sizeof(*c)) / sizeof(struct fi_rma_iov) != c->count ||
	    (len - sizeof(*c)) % sizeof(struct fi_rma_iov))
		return;
	c->iov = c->count ? (const struct fi_rma_iov *)(c + 1) : NULL;
}

static struct util_eq_event *eq_event_new(uint32_t event, const void *buf,
					  size_t len, bool is_err)
{
	struct util_eq_event *ev;

	ev = malloc(sizeof(*ev) + len);
	if (!ev)
		return NULL;
	ev->event = event;
	ev->is_err = is_err;
	ev->size = len;
	ev->err_data = NULL;
	memcpy(ev->data, buf, len);
	if (!is_err)
		eq_commit_rebase(event, ev->data, len);
	return ev;
}

/* Takes ev; user events honour attr.size, provider events never fail so. */
static ssize_t eq_queue(struct util_eq *eq, struct util_eq_event *ev, bool user)
{
	pthread_mutex_lock(&eq->lock);
	if (user && eq->count >= eq->size) {
		pthread_mutex_unlock(&eq->lock);
		free(ev);
		return -FI_EAGAIN;
	}
	dlist_insert_tail(&ev->entry, ev->is_err ? &eq->err_list : &eq->list);
	eq->count++;
	pthread_mutex_unlock(&eq->lock);
	ofi_wait_signal(eq->wait);
	return 0;
}

static ssize_t eq_insert(struct util_eq *eq, uint32_t event, const void *buf,
			 size_t len, bool is_err, bool user)
{
	struct util_eq_event *ev;
	ssize_t ret;

	ev = eq_event_new(event, buf, len, is_err);
	if (!ev)
		return -FI_ENOMEM;
	ret = eq_queue(eq, ev, user);
	return ret ? ret : (ssize_t)len;
}

/*
 * Calls the handler registered for ev's type, if any, with the EQ unlocked.
 * True when the handler consumed the event (any answer but -FI_EAGAIN).
 */
static bool eq_run_handler(struct util_eq *eq, struct util_eq_event *ev,
			   ssize_t *answer)
{
	struct util_eq_handler *h;
	ofi_eq_handler_t fn;
	void *context;
	uint64_t gen;
	ssize_t ret;

	if (ev->event >= OFI_EQ_MAX_HANDLERS)
		return false;
	h = &eq->handlers[ev->event];
	pthread_mutex_lock(&eq->lock);
	if (!h->fn || eq->closing) {
		pthread_mutex_unlock(&eq->lock);
		return false;
	}
	/* Copy the pair under the lock: a racing registration is all or
	 * nothing. */
	fn = h->fn;
	context = h->context;
	gen = h->gen;
	h->busy++;
	eq->inflight++;
	pthread_mutex_unlock(&eq->lock);

	eq_handler_depth++;
	ret = fn(&eq->eq_fid, ev->event, ev->data, ev->size, context);
	eq_handler_depth--;

	pthread_mutex_lock(&eq->lock);
	if (gen == h->gen)
		h->busy--;
	else
		h->stale--;
	eq->inflight--;
	pthread_cond_broadcast(&eq->idle);
	pthread_mutex_unlock(&eq->lock);
	*answer = ret;
	return ret != -FI_EAGAIN;
}

ssize_t ofi_eq_deliver(struct util_eq *eq, uint32_t event, const void *buf,
		       size_t len, uint64_t flags, ssize_t *answer)
{
	struct util_eq_event *ev;
	ssize_t ret, dummy;

	if (!eq || !buf || !len || flags)
		return -FI_EINVAL;
	ev = eq_event_new(event, buf, len, false);
	if (!ev)
		return -FI_ENOMEM;
	if (eq_run_handler(eq, ev, answer ? answer : &dummy)) {
		free(ev);
		return OFI_EQ_HANDLED;
	}
	/* No handler, or it passed the event on: the handler's edits stay. */
	ret = eq_queue(eq, ev, false);
	return ret ? ret : OFI_EQ_QUEUED;
}

ssize_t ofi_eq_write(struct util_eq *eq, uint32_t event, const void *buf,
		     size_t len)
{
	ssize_t ret;

	ret = ofi_eq_deliver(eq, event, buf, len, 0, NULL);
	return ret < 0 ? ret : (ssize_t)len;
}

int ofi_eq_set_handler(struct util_eq *eq, uint64_t event_type,
		       ofi_eq_handler_t handler, void *context)
{
	struct util_eq_handler *h;

	if (!eq || event_type >= OFI_EQ_MAX_HANDLERS)
		return -FI_EINVAL;
	h = &eq->handlers[event_type];
	pthread_mutex_lock(&eq->lock);
	h->stale += h->busy;
	h->busy = 0;
	h->gen++;
	h->fn = handler;
	h->context = handler ? context : NULL;
	/* Once we return, the old handler is not running (and its context
	 * may be freed) - unless we run inside a handler and cannot wait. */
	while (h->stale && !eq_handler_depth)
		pthread_cond_wait(&eq->idle, &eq->lock);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

ssize_t ofi_eq_write_error(struct util_eq *eq, fid_t fid, void *context,
			   uint64_t data, int err, int prov_errno,
			   const void *err_data, size_t err_data_size)
{
	struct fi_eq_err_entry e = {
		.fid = fid,
		.context = context,
		.data = data,
		.err = err,
		.prov_errno = prov_errno,
	};

	if (err_data && err_data_size) {
		e.err_data = malloc(err_data_size);
		if (!e.err_data)
			return -FI_ENOMEM;
		memcpy(e.err_data, err_data, err_data_size);
		e.err_data_size = err_data_size;
	}
	return eq_insert(eq, FI_NOTIFY, &e, sizeof(e), true, false);
}

void ofi_eq_prog_add(struct util_eq *eq, struct util_eq_prog *prog)
{
	pthread_mutex_lock(&eq->prog_lock);
	dlist_insert_tail(&prog->entry, &eq->prog_list);
	pthread_mutex_unlock(&eq->prog_lock);
}

void ofi_eq_prog_del(struct util_eq *eq, struct util_eq_prog *prog)
{
	pthread_mutex_lock(&eq->prog_lock);
	dlist_remove(&prog->entry);
	pthread_mutex_unlock(&eq->prog_lock);
}

/* Runs the connection progress of the objects on @eq; see ofi_util.h. */
static bool eq_progress(struct util_eq *eq)
{
	struct dlist_entry *e, *next;
	bool any;

	pthread_mutex_lock(&eq->prog_lock);
	any = !dlist_empty(&eq->prog_list);
	for (e = eq->prog_list.next; e != &eq->prog_list; e = next) {
		next = e->next;
		container_of(e, struct util_eq_prog, entry)
			->progress(container_of(e, struct util_eq_prog, entry));
	}
	pthread_mutex_unlock(&eq->prog_lock);
	return any;
}

void ofi_eq_progress(struct util_eq *eq)
{
	if (!dlist_empty(&eq->prog_list))
		eq_progress(eq);
}

static ssize_t eq_read_once(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			    size_t len, uint64_t flags)
{
	struct util_eq *eq = container_of(eq_fid, struct util_eq, eq_fid);
	struct util_eq_event *ev;
	size_t copy;
	ssize_t ret;

	if (!dlist_empty(&eq->prog_list))
		eq_progress(eq);

	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (!dlist_empty(&eq->err_list)) {
		ret = -FI_EAVAIL;
		goto out;
	}
	if (dlist_empty(&eq->list)) {
		ret = -FI_EAGAIN;
		goto out;
	}
	ev = container_of(eq->list.next, struct util_eq_event, entry);
	if (event)
		*event = ev->event;
	/*
	 * As libfabric 1.17: no buffer or a short one still takes the event, with
	 * as much of its entry as fits (callers that wait for an event type
	 * read with none). A cut commit entry gets no array to point at.
	 */
	copy = buf ? OFI_MIN(len, ev->size) : 0;
	if (copy)
		memcpy(buf, ev->data, copy);
	if (copy == ev->size)
		eq_commit_rebase(ev->event, buf, copy);
	else if (ev->event == FI_COMMIT &&
		 copy >= offsetof(struct fi_eq_commit_entry, count))
		((struct fi_eq_commit_entry *)buf)->iov = NULL;
	ret = copy;
	if (!(flags & FI_PEEK)) {
		dlist_remove(&ev->entry);
		eq->count--;
		free(ev);
	}
out:
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

/*
 * A busy-polling caller gives a shared core away, and one that did reads
 * again before it answers, as fi_cq_read does (util_cq.c).
 */
static ssize_t eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	ssize_t ret = eq_read_once(eq_fid, event, buf, len, flags);

	if (ret == -FI_EAGAIN && ofi_yield_idle() != OFI_YIELD_SPIN)
		ret = eq_read_once(eq_fid, event, buf, len, flags);
	if (ret != -FI_EAGAIN)
		ofi_yield_busy();
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	struct util_eq *eq = container_of(eq_fid, struct util_eq, eq_fid);
	uint32_t api = eq->fabric->api_version;
	struct util_eq_event *ev;
	struct fi_eq_err_entry *e;
	void *user_data;
	size_t user_size;

	if (!buf || (flags & ~(uint64_t)FI_PEEK))
		return -FI_EINVAL;
	if (!dlist_empty(&eq->prog_list))
		eq_progress(eq);
	pthread_mutex_lock(&eq->lock);
	if (dlist_empty(&eq->err_list)) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	ev = container_of(eq->err_list.next, struct util_eq_event, entry);
	e = (struct fi_eq_err_entry *)ev->data;
	if (flags & FI_PEEK) {
		/* A peek leaves the data where it is and lends it. */
		user_size = api >= OFI_API_1_5 ? e->err_data_size : 0;
		memcpy(buf, e,
		       api >= OFI_API_1_5 ? sizeof(*e)
					  : offsetof(struct fi_eq_err_entry,
						     err_data_size));
		pthread_mutex_unlock(&eq->lock);
		return sizeof(*buf);
	}
	dlist_remove(&ev->entry);
	eq->count--;

	user_data = api >= OFI_API_1_5 ? buf->err_data : NULL;
	user_size = api >= OFI_API_1_5 ? buf->err_data_size : 0;
	if (api >= OFI_API_1_5)
		*buf = *e;
	else
		memcpy(buf, e, offsetof(struct fi_eq_err_entry, err_data_size));
	ofi_copy_err_data(api, &eq->err_data, e->err_data, e->err_data_size,
			  &user_data, &user_size);
	buf->err_data = e->err_data_size ? user_data : NULL;
	if (api >= OFI_API_1_5)
		buf->err_data_size = e->err_data_size ? user_size : 0;
	pthread_mutex_unlock(&eq->lock);
	free(ev);
	return sizeof(*buf);
}

static ssize_t eq_user_write(struct fid_eq *eq_fid, uint32_t event,
			     const void *buf, size_t len, uint64_t flags)
{
	struct util_eq *eq = container_of(eq_fid, struct util_eq, eq_fid);

	if (!(eq->flags & FI_WRITE))
		return -FI_EINVAL;
	/* Reads may peek; a write has nothing to peek at. */
	if (flags)
		return -FI_EINVAL;
	if (!buf || !len || len > OFI_EQ_MAX_EVENT)
		return -FI_EINVAL;
	return eq_insert(eq, event, buf, len, false, true);
}

static ssize_t eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	struct util_eq *eq = container_of(eq_fid, struct util_eq, eq_fid);
	uint64_t start = ofi_gettime_ms(), seq;
	ssize_t ret;
	int left;

	if (!eq->wait)
		return -FI_EINVAL;
	for (;;) {
		seq = ofi_wait_seq(eq->wait);
		ret = eq_read_once(eq_fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		left = ofi_timeout_left(timeout, start);
		if (!left)
			return -FI_EAGAIN;
		/* Sockets to progress: look at them again every 10 ms. */
		if (!dlist_empty(&eq->prog_list) && (left < 0 || left > 10))
			left = 10;
		ofi_wait_sleep(eq->wait, seq, left);
	}
}

static const char *eq_strerror(struct fid_eq *eq_fid, int prov_errno,
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

#if OFI_HAVE_EXT_SLOTS
static ssize_t eq_register_handler(struct fid_eq *eq_fid, uint64_t event_type,
				   fi_eq_event_handler_t handler, void *context)
{
	struct util_eq *eq = container_of(eq_fid, struct util_eq, eq_fid);

	return ofi_eq_set_handler(eq, event_type, handler, context);
}
#endif

static int eq_close_fid(struct fid *fid)
{
	struct util_eq *eq = container_of(fid, struct util_eq, eq_fid.fid);
	int ret;

	ret = ofi_eq_close(eq);
	if (ret)
		return ret;
	free(eq);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct util_eq *eq = container_of(fid, struct util_eq, eq_fid.fid);

	return ofi_wait_control(eq->wait, command, arg);
}

const struct fi_ops ofi_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close_fid,
	.bind = fi_no_bind,
	.control = eq_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

const struct fi_ops_eq ofi_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_user_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
#if OFI_HAVE_EXT_SLOTS
	.register_handler = eq_register_handler,
#endif
};

static bool eq_wait_ready(struct fid *fid)
{
	struct util_eq *eq = container_of(fid, struct util_eq, eq_fid.fid);
	bool ready;

	pthread_mutex_lock(&eq->lock);
	ready = eq->count > 0;
	pthread_mutex_unlock(&eq->lock);
	return ready;
}

/*
 * Recursive: an event that progress delivers may run a handler that opens
 * and enables an endpoint (FI_CONNREQ -> fi_accept), which joins the list.
 */
static void eq_prog_lock_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

int ofi_eq_init(struct util_fabric *fabric, struct fi_eq_attr *attr,
		struct util_eq *eq, void *context)
{
	int ret;

	if (!fabric || !attr || !eq)
		return -FI_EINVAL;
	if (attr->flags & ~(uint64_t)(FI_WRITE | FI_AFFINITY))
		return -FI_EINVAL;
	memset(eq, 0, sizeof(*eq));
	eq->fabric = fabric;
	eq->flags = attr->flags;
	eq->size = attr->size ? attr->size : OFI_EQ_DEF_SIZE;
	ret = ofi_wait_get(fabric, attr->wait_obj, attr->wait_set, &eq->wait);
	if (ret)
		return ret;
	ret = ofi_wait_attach(eq->wait, &eq->eq_fid.fid, NULL, eq_wait_ready);
	if (ret) {
		ofi_wait_put(eq->wait);
		return ret;
	}
	pthread_mutex_init(&eq->lock, NULL);
	pthread_cond_init(&eq->idle, NULL);
	ofi_atomic_init32(&eq->ref, 0);
	dlist_init(&eq->list);
	dlist_init(&eq->err_list);
	eq_prog_lock_init(&eq->prog_lock);
	dlist_init(&eq->prog_list);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = (struct fi_ops *)&ofi_eq_fi_ops;
	eq->eq_fid.ops = (struct fi_ops_eq *)&ofi_eq_ops;
	ofi_atomic_inc32(&fabric->ref);
	return 0;
}

static void eq_free_list(struct dlist_entry *list, bool is_err)
{
	struct util_eq_event *ev;
	struct dlist_entry *item;

	while ((item = dlist_pop_front(list))) {
		ev = container_of(item, struct util_eq_event, entry);
		if (is_err)
			free(((struct fi_eq_err_entry *)ev->data)->err_data);
		free(ev);
	}
}

/*
 * Stops handler calls and waits for those running. A thread inside a handler
 * gets -FI_EBUSY while any handler of this EQ runs: it could be waiting for
 * itself, or for a thread that waits for it.
 */
static int eq_quiesce(struct util_eq *eq)
{
	pthread_mutex_lock(&eq->lock);
	if (eq_handler_depth && eq->inflight) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EBUSY;
	}
	eq->closing = true;
	while (eq->inflight)
		pthread_cond_wait(&eq->idle, &eq->lock);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

int ofi_eq_close(struct util_eq *eq)
{
	int ret;

	if (ofi_atomic_get32(&eq->ref))
		return -FI_EBUSY;
	ret = eq_quiesce(eq);
	if (ret)
		return ret;
	ofi_wait_detach(eq->wait, &eq->eq_fid.fid);
	ofi_wait_put(eq->wait);
	eq_free_list(&eq->list, false);
	eq_free_list(&eq->err_list, true);
	free(eq->err_data);
	pthread_cond_destroy(&eq->idle);
	pthread_mutex_destroy(&eq->lock);
	pthread_mutex_destroy(&eq->prog_lock);
	ofi_atomic_dec32(&eq->fabric->ref);
	return 0;
}

int ofi_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
		struct fid_eq **eq_fid, void *context)
{
	struct util_eq *eq;
	int ret;

	if (!fabric_fid || !eq_fid)
		return -FI_EINVAL;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = ofi_eq_init(
		container_of(fabric_fid, struct util_fabric, fabric_fid), attr,
		eq, context);
	if (ret) {
		free(eq);
		return ret;
	}
	*eq_fid = &eq->eq_fid;
	return 0;
}
