/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_wait.c - wait objects (FI_WAIT_FD, FI_WAIT_MUTEX_COND, FI_WAIT_YIELD,
 * FI_WAIT_UNSPEC), user wait sets (fi_wait_open / fi_wait) and fi_trywait.
 *
 * Every waitable object sleeps on a pthread condition; FI_WAIT_FD adds an
 * eventfd that is written on each signal so applications can poll() it.
 * A sequence number bumped under the mutex makes sleeping race-free.
 *
 * The fd FI_GETWAIT hands out is an epoll set: the eventfd, and what the
 * endpoints of the object wait on themselves (util_ep->wait_fd: their
 * sockets and progress eventfd, in their own epoll set). Under manual
 * progress no completion is written while the application sleeps, so
 * fi_trywait arms those fds, one shot each (ofi_wait_arm): incoming data
 * wakes the application, which then reads the CQ (progress) and calls
 * fi_trywait again before sleeping, which collects the shot and re-arms.
 * An EQ's trywait runs its connection progress and arms the endpoints on
 * it (util_eq_prog) the same way.
 * An endpoint with work no fd announces (tcp's same-host path, shm while
 * it streams) arms a timer instead: the sleeper wakes after a nap
 * (OFI_EP_POLL_NAP_MS, as blocking reads nap) to drive it. An endpoint
 * with a wait_arm hook (shm: its wake socket, which peers poke) is asked
 * first; when its fd fires for all its work only a long timer
 * (OFI_EP_POLL_LONG_MS) bounds what a lost wakeup could cost.
 *
 * A FI_WAIT_MUTEX_COND object has an eventfd too, so that a blocking read
 * can poll it beside its endpoints' fds; a signal writes it only while
 * such a read sleeps (sleepers). fi_wait on a user wait set sleeps the
 * same way, on the fds of the endpoints of every CQ and counter bound to
 * it (util_wait_set_poll).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ofi_progress.h"
#include "ofi_util.h"
#include "ofi_yield.h"

static int util_wait_set_close(struct fid *fid);
static int util_wait_set_control(struct fid *fid, int command, void *arg);
static int util_wait_set_wait(struct fid_wait *waitset, int timeout);

static const struct fi_ops util_wait_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = util_wait_set_close,
	.bind = fi_no_bind,
	.control = util_wait_set_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

static const struct fi_ops_wait util_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = util_wait_set_wait,
};

/* epoll data of the eventfd, the nap timer and armed endpoint fds */
#define OFI_WAIT_EV_SIGNAL 0
#define OFI_WAIT_EV_TIMER  1
#define OFI_WAIT_EV_ARMED  2

static void util_wait_fds_close(struct util_wait *wait)
{
	if (wait->efd >= 0)
		close(wait->efd);
	if (wait->tfd >= 0)
		close(wait->tfd);
	if (wait->epfd >= 0)
		close(wait->epfd);
	wait->efd = wait->tfd = wait->epfd = -1;
}

static void util_wait_free(struct util_wait *wait)
{
	util_wait_fds_close(wait);
	pthread_cond_destroy(&wait->cond);
	pthread_mutex_destroy(&wait->mutex);
	if (wait->fabric)
		ofi_atomic_dec32(&wait->fabric->ref);
	free(wait);
}

/* FI_WAIT_FD: the eventfd and the nap timer, in the epoll set the
 * application gets. */
static int util_wait_fd_open(struct util_wait *wait)
{
	struct epoll_event ev = {.events = EPOLLIN,
				 .data.u64 = OFI_WAIT_EV_SIGNAL};
	struct epoll_event tev = {.events = EPOLLIN,
				  .data.u64 = OFI_WAIT_EV_TIMER};

	wait->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	wait->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	wait->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (wait->efd >= 0 && wait->tfd >= 0 && wait->epfd >= 0 &&
	    !epoll_ctl(wait->epfd, EPOLL_CTL_ADD, wait->efd, &ev) &&
	    !epoll_ctl(wait->epfd, EPOLL_CTL_ADD, wait->tfd, &tev))
		return 0;
	util_wait_fds_close(wait);
	return -1;
}

static int util_wait_alloc(struct util_fabric *fabric, enum fi_wait_obj type,
			   struct util_wait **out)
{
	struct util_wait *wait;
	pthread_condattr_t cattr;

	switch (type) {
	case FI_WAIT_UNSPEC:
		type = FI_WAIT_MUTEX_COND;
		break;
	case FI_WAIT_FD:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_YIELD:
		break;
	case FI_WAIT_POLLFD:
		return -FI_ENOSYS;
	default:
		return -FI_EINVAL;
	}

	wait = calloc(1, sizeof(*wait));
	if (!wait)
		return -FI_ENOMEM;
	wait->type = type;
	wait->efd = wait->tfd = wait->epfd = -1;
	if (type == FI_WAIT_FD && util_wait_fd_open(wait)) {
		free(wait);
		return -FI_EMFILE;
	}
	/* Without it blocking reads only nap: no error. */
	if (type == FI_WAIT_MUTEX_COND)
		wait->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&wait->mutex, NULL);
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&wait->cond, &cattr);
	pthread_condattr_destroy(&cattr);
	dlist_init(&wait->fids);
	ofi_atomic_init32(&wait->ref, 0);
	wait->fabric = fabric;
	if (fabric)
		ofi_atomic_inc32(&fabric->ref);
	wait->wait_fid.fid.fclass = FI_CLASS_WAIT;
	wait->wait_fid.fid.ops = (struct fi_ops *)&util_wait_fi_ops;
	wait->wait_fid.ops = (struct fi_ops_wait *)&util_wait_ops;
	*out = wait;
	return 0;
}

int ofi_wait_open(struct fid_fabric *fabric_fid, struct fi_wait_attr *attr,
		  struct fid_wait **waitset)
{
	struct util_fabric *fabric;
	struct util_wait *wait;
	int ret;

	if (!fabric_fid || !attr || !waitset || attr->flags)
		return -FI_EINVAL;
	if (attr->wait_obj == FI_WAIT_NONE || attr->wait_obj == FI_WAIT_SET)
		return -FI_EINVAL;
	fabric = container_of(fabric_fid, struct util_fabric, fabric_fid);
	ret = util_wait_alloc(fabric, attr->wait_obj, &wait);
	if (ret)
		return ret;
	wait->is_set = true;
	*waitset = &wait->wait_fid;
	return 0;
}

static int util_wait_set_close(struct fid *fid)
{
	struct util_wait *wait =
		container_of(fid, struct util_wait, wait_fid.fid);

	if (ofi_atomic_get32(&wait->ref))
		return -FI_EBUSY;
	util_wait_free(wait);
	return 0;
}

/* @wait is NULL for a CQ, EQ or counter opened with FI_WAIT_NONE. */
int ofi_wait_control(struct util_wait *wait, int command, void *arg)
{
	struct fi_mutex_cond *mc;

	if (!wait)
		return command == FI_GETWAIT || command == FI_GETWAITOBJ
			       ? -FI_ENODATA
			       : -FI_ENOSYS;
	switch (command) {
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = wait->type;
		return 0;
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		if (wait->type == FI_WAIT_FD) {
			*(int *)arg = wait->epfd;
			return 0;
		}
		if (wait->type == FI_WAIT_MUTEX_COND) {
			mc = arg;
			mc->mutex = &wait->mutex;
			mc->cond = &wait->cond;
			return 0;
		}
		return -FI_ENODATA;
	default:
		return -FI_ENOSYS;
	}
}

static int util_wait_set_control(struct fid *fid, int command, void *arg)
{
	return ofi_wait_control(
		container_of(fid, struct util_wait, wait_fid.fid), command,
		arg);
}

int ofi_wait_get(struct util_fabric *fabric, enum fi_wait_obj type,
		 struct fid_wait *set, struct util_wait **wait)
{
	int ret;

	*wait = NULL;
	if (type == FI_WAIT_NONE)
		return 0;
	if (type == FI_WAIT_SET) {
		if (!set || set->fid.fclass != FI_CLASS_WAIT)
			return -FI_EINVAL;
		*wait = container_of(set, struct util_wait, wait_fid);
	} else {
		ret = util_wait_alloc(NULL, type, wait);
		if (ret)
			return ret;
	}
	ofi_atomic_inc32(&(*wait)->ref);
	return 0;
}

void ofi_wait_put(struct util_wait *wait)
{
	if (!wait)
		return;
	if (!ofi_atomic_dec32(&wait->ref) && !wait->is_set)
		util_wait_free(wait);
}

int ofi_wait_attach(struct util_wait *wait, struct fid *fid,
		    void (*progress)(struct fid *), bool (*ready)(struct fid *))
{
	struct util_wait_fid *wf;

	if (!wait)
		return 0;
	wf = calloc(1, sizeof(*wf));
	if (!wf)
		return -FI_ENOMEM;
	wf->fid = fid;
	wf->progress = progress;
	wf->ready = ready;
	pthread_mutex_lock(&wait->mutex);
	dlist_insert_tail(&wf->entry, &wait->fids);
	pthread_mutex_unlock(&wait->mutex);
	return 0;
}

void ofi_wait_detach(struct util_wait *wait, struct fid *fid)
{
	struct dlist_entry *item, *tmp;
	struct util_wait_fid *wf;

	if (!wait)
		return;
	pthread_mutex_lock(&wait->mutex);
	dlist_foreach_safe(&wait->fids, item, tmp) {
		wf = container_of(item, struct util_wait_fid, entry);
		if (wf->fid == fid) {
			dlist_remove(item);
			free(wf);
			break;
		}
	}
	pthread_mutex_unlock(&wait->mutex);
}

uint64_t ofi_wait_seq(struct util_wait *wait)
{
	uint64_t seq;

	pthread_mutex_lock(&wait->mutex);
	seq = wait->seq;
	pthread_mutex_unlock(&wait->mutex);
	return seq;
}

OFI_HOT void ofi_wait_signal(struct util_wait *wait)
{
	uint64_t one = 1;
	ssize_t ret;
	bool fd;

	if (!wait)
		return;
	pthread_mutex_lock(&wait->mutex);
	wait->seq++;
	pthread_cond_broadcast(&wait->cond);
	fd = wait->type == FI_WAIT_FD || wait->sleepers;
	pthread_mutex_unlock(&wait->mutex);
	if (fd && wait->efd >= 0) {
		ret = write(wait->efd, &one, sizeof(one));
		OFI_UNUSED(ret);
	}
}

bool ofi_wait_sleeper(struct util_wait *wait, uint64_t seen, int delta)
{
	bool ok = true;

	pthread_mutex_lock(&wait->mutex);
	if (delta > 0 && wait->seq != seen)
		ok = false;
	else
		wait->sleepers += delta;
	pthread_mutex_unlock(&wait->mutex);
	return ok;
}

void ofi_wait_drain(struct util_wait *wait)
{
	uint64_t val;
	ssize_t ret;

	if (wait && wait->efd >= 0) {
		ret = read(wait->efd, &val, sizeof(val));
		OFI_UNUSED(ret);
	}
}

/* Collects the shots that fired (armed fds, the nap timer). */
static void util_wait_collect(struct util_wait *wait)
{
	struct epoll_event ev[16];
	uint64_t n;

	if (!wait || wait->epfd < 0)
		return;
	while (epoll_wait(wait->epfd, ev, 16, 0) == 16)
		;
	(void)!read(wait->tfd, &n, sizeof(n));
}

/* Arms @fd one shot in @wait's set; false if it cannot be. */
static bool util_wait_arm_fd(struct util_wait *wait, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
				 .data.u64 = OFI_WAIT_EV_ARMED};

	/* Re-arming checks readiness now: nothing that came since the
	 * last progress is missed. A number reused by another file is not
	 * in the set (ENOENT): added. */
	return !epoll_ctl(wait->epfd, EPOLL_CTL_MOD, fd, &ev) ||
	       (errno == ENOENT &&
		!epoll_ctl(wait->epfd, EPOLL_CTL_ADD, fd, &ev));
}

/* What arming a wait object's endpoints found: a nap's length, and
 * whether one of them has work at hand. */
struct util_wait_arming {
	int ms;
	bool busy;
};

static void util_wait_arm_ep(struct util_wait *wait, struct util_ep *ep,
			     struct util_wait_arming *a)
{
	int fd, st;

	if (ep->auto_progress) {
		/* its thread signals the eventfd: it watches from now on */
		ofi_ep_rouse(ep);
		return;
	}
	fd = ep->wait_fd ? ep->wait_fd(ep) : -1;
	st = fd < 0	    ? OFI_EP_WAIT_POLL
	     : ep->wait_arm ? ep->wait_arm(ep)
	     : ep->wait_nap ? OFI_EP_WAIT_NAP
			    : OFI_EP_WAIT_SOUND;
	if (st == OFI_EP_WAIT_BUSY)
		a->busy = true;
	else if (fd < 0 || !util_wait_arm_fd(wait, fd) ||
		 st != OFI_EP_WAIT_SOUND)
		a->ms = OFI_EP_POLL_NAP_MS;
	else if (ep->wait_arm && !a->ms)
		a->ms = OFI_EP_POLL_LONG_MS;
}

static int util_wait_arm_end(struct util_wait *wait,
			     const struct util_wait_arming *a)
{
	struct itimerspec its = {0};

	/* Work no fd announces: the sleeper wakes after a nap to drive it,
	 * as blocking reads do. */
	its.it_value.tv_sec = a->ms / 1000;
	its.it_value.tv_nsec = (a->ms % 1000) * 1000000L;
	if (timerfd_settime(wait->tfd, 0, &its, NULL))
		return -FI_EAGAIN;
	return a->busy ? -FI_EAGAIN : 0;
}

int ofi_wait_arm_lists(struct util_wait *wait, size_t n, ofi_mutex_t **locks,
		       struct dlist_entry **lists)
{
	struct util_wait_arming a = {0};
	struct dlist_entry *item;
	size_t i;

	if (!wait || wait->epfd < 0)
		return 0;
	for (i = 0; i < n; i++) {
		ofi_mutex_lock(locks[i]);
		dlist_foreach(lists[i], item)
			util_wait_arm_ep(
				wait,
				container_of(item, struct util_ep_ref, entry)
					->ep,
				&a);
		ofi_mutex_unlock(locks[i]);
	}
	return util_wait_arm_end(wait, &a);
}

int ofi_wait_arm(struct util_wait *wait, ofi_mutex_t *lock,
		 struct dlist_entry *list)
{
	return ofi_wait_arm_lists(wait, 1, &lock, &list);
}

/*
 * An EQ's objects (util_eq_prog) are armed as a CQ's endpoints are; one
 * that names no endpoint (a listener) has its work found by a nap unless
 * its own thread drives it.
 */
static int util_wait_arm_eq(struct util_eq *eq)
{
	struct util_wait_arming a = {0};
	struct util_eq_prog *prog;
	struct dlist_entry *item;

	if (eq->wait->epfd < 0)
		return 0;
	pthread_mutex_lock(&eq->prog_lock);
	dlist_foreach(&eq->prog_list, item) {
		prog = container_of(item, struct util_eq_prog, entry);
		if (prog->ep)
			util_wait_arm_ep(eq->wait, prog->ep, &a);
		else if (!__atomic_load_n(&prog->auto_progress,
					  __ATOMIC_RELAXED))
			a.ms = OFI_EP_POLL_NAP_MS;
	}
	pthread_mutex_unlock(&eq->prog_lock);
	return util_wait_arm_end(eq->wait, &a);
}

int ofi_wait_sleep(struct util_wait *wait, uint64_t seen, int timeout_ms)
{
	struct timespec ts;
	uint64_t ns;
	int ret = 0;

	if (wait->type == FI_WAIT_YIELD) {
		sched_yield();
		return ofi_wait_seq(wait) != seen ? 0 : -FI_ETIMEDOUT;
	}

	pthread_mutex_lock(&wait->mutex);
	if (timeout_ms >= 0) {
		ns = ofi_gettime_ns() + (uint64_t)timeout_ms * 1000000ULL;
		ts.tv_sec = ns / 1000000000ULL;
		ts.tv_nsec = ns % 1000000000ULL;
	}
	while (wait->seq == seen && !ret) {
		if (timeout_ms < 0)
			pthread_cond_wait(&wait->cond, &wait->mutex);
		else
			ret = pthread_cond_timedwait(&wait->cond, &wait->mutex,
						     &ts);
	}
	ret = wait->seq != seen ? 0 : -FI_ETIMEDOUT;
	pthread_mutex_unlock(&wait->mutex);
	return ret;
}

/* The most attached objects fi_wait looks at. */
#define UTIL_WAIT_FIDS_MAX 64

struct util_wait_snap {
	struct fid *fid;
	bool (*ready)(struct fid *);
	void (*progress)(struct fid *);
};

/*
 * Copies the attached objects into @snap (UTIL_WAIT_FIDS_MAX entries)
 * under the wait mutex, so that their callbacks run without it: they
 * may signal this very wait object. Sets *@more when some did not fit.
 */
static int util_wait_snapshot(struct util_wait *wait,
			      struct util_wait_snap *snap, bool *more)
{
	struct dlist_entry *item;
	struct util_wait_fid *wf;
	int n = 0;

	*more = false;
	pthread_mutex_lock(&wait->mutex);
	dlist_foreach(&wait->fids, item) {
		if (n == UTIL_WAIT_FIDS_MAX) {
			*more = true;
			break;
		}
		wf = container_of(item, struct util_wait_fid, entry);
		snap[n].fid = wf->fid;
		snap[n].ready = wf->ready;
		snap[n++].progress = wf->progress;
	}
	pthread_mutex_unlock(&wait->mutex);
	return n;
}

/* Progresses and asks the attached objects (the first UTIL_WAIT_FIDS_MAX). */
static bool util_wait_set_ready(struct util_wait *wait)
{
	struct util_wait_snap snap[UTIL_WAIT_FIDS_MAX];
	bool more;
	int i, n;

	n = util_wait_snapshot(wait, snap, &more);
	for (i = 0; i < n; i++) {
		if (snap[i].progress)
			snap[i].progress(snap[i].fid);
		if (snap[i].ready && snap[i].ready(snap[i].fid))
			return true;
	}
	return false;
}

/* Short naps while someone must drive progress by hand. */
#define OFI_PROGRESS_NAP_MS 1

/* Gathers @fid's endpoint fds (see ofi_ep_refs_fds). */
static int util_wait_fid_fds(struct fid *fid, struct pollfd *fds, nfds_t *n,
			     int st)
{
	struct util_cq *cq;
	struct util_cntr *cntr;

	switch (fid->fclass) {
	case FI_CLASS_CQ:
		cq = container_of(fid, struct util_cq, cq_fid.fid);
		return ofi_ep_refs_fds(&cq->ep_lock, &cq->ep_list, fds, n, st);
	case FI_CLASS_CNTR:
		cntr = container_of(fid, struct util_cntr, cntr_fid.fid);
		return ofi_cntr_fds(cntr, fds, n, st);
	default:
		return OFI_EP_WAIT_POLL; /* EQs: their endpoints nap */
	}
}

/*
 * fi_wait with nothing ready: sleeps in poll() on the fds of the
 * endpoints bound to the set's CQs and counters and on the set's eventfd,
 * as blocking reads do (ofi_ep_refs_poll); true when it slept (or work
 * is there), false when some endpoint has no fd: the caller naps.
 */
static bool util_wait_set_poll(struct util_wait *wait, uint64_t seq, int left)
{
	struct pollfd fds[OFI_EP_POLL_MAX + 1];
	struct util_wait_snap snap[UTIL_WAIT_FIDS_MAX];
	int i, n, st = OFI_EP_WAIT_SOUND;
	nfds_t nfd = 0;
	bool more;

	if (wait->type == FI_WAIT_YIELD)
		return false;
	n = util_wait_snapshot(wait, snap, &more);
	if (more)
		st = OFI_EP_WAIT_POLL;
	for (i = 0; i < n && st > OFI_EP_WAIT_POLL; i++)
		st = util_wait_fid_fds(snap[i].fid, fds, &nfd, st);
	if (!nfd && st == OFI_EP_WAIT_SOUND) {
		/* no manual endpoint: every completion signals the set */
		(void)ofi_wait_sleep(
			wait, seq,
			left < 0 ? OFI_EP_POLL_LONG_MS
				 : OFI_MIN(left, OFI_EP_POLL_LONG_MS));
		return true;
	}
	return ofi_ep_fds_sleep(wait, seq, fds, nfd, st, left);
}

static int util_wait_set_wait(struct fid_wait *waitset, int timeout)
{
	struct util_wait *wait =
		container_of(waitset, struct util_wait, wait_fid);
	uint64_t start = ofi_gettime_ms(), seq;
	int left, nap;

	for (;;) {
		seq = ofi_wait_seq(wait);
		if (util_wait_set_ready(wait) || seq != wait->seen_seq) {
			wait->seen_seq = seq;
			ofi_wait_drain(wait);
			return 0;
		}
		left = ofi_timeout_left(timeout, start);
		if (!left)
			return -FI_ETIMEDOUT;
		if (ofi_yield_idle_wait() != OFI_YIELD_SLEEP)
			continue;
		if (util_wait_set_poll(wait, seq, left))
			continue;
		nap = left < 0 ? OFI_PROGRESS_NAP_MS
			       : OFI_MIN(left, OFI_PROGRESS_NAP_MS);
		if (!ofi_wait_sleep(wait, seq, nap)) {
			wait->seen_seq = ofi_wait_seq(wait);
			ofi_wait_drain(wait);
			return 0;
		}
	}
}

static int util_trywait_one(struct fid *fid)
{
	struct util_cq *cq;
	struct util_eq *eq;
	struct util_cntr *cntr;
	struct util_wait *wait;
	bool busy = false;

	switch (fid->fclass) {
	case FI_CLASS_CQ:
		cq = container_of(fid, struct util_cq, cq_fid.fid);
		if (!cq->wait)
			return -FI_EINVAL;
		util_wait_collect(cq->wait);
		ofi_wait_drain(cq->wait);
		ofi_cq_progress(cq);
		busy = ofi_wait_arm(cq->wait, &cq->ep_lock, &cq->ep_list) ||
		       ofi_cq_count(cq) > 0;
		break;
	case FI_CLASS_EQ:
		eq = container_of(fid, struct util_eq, eq_fid.fid);
		if (!eq->wait)
			return -FI_EINVAL;
		util_wait_collect(eq->wait);
		ofi_wait_drain(eq->wait);
		ofi_eq_progress(eq);
		busy = util_wait_arm_eq(eq) != 0;
		pthread_mutex_lock(&eq->lock);
		busy |= !dlist_empty(&eq->list) || !dlist_empty(&eq->err_list);
		pthread_mutex_unlock(&eq->lock);
		break;
	case FI_CLASS_CNTR:
		cntr = container_of(fid, struct util_cntr, cntr_fid.fid);
		if (!cntr->wait)
			return -FI_EINVAL;
		util_wait_collect(cntr->wait);
		ofi_wait_drain(cntr->wait);
		busy = ofi_cntr_arm(cntr) != 0;
		break;
	case FI_CLASS_WAIT:
		wait = container_of(fid, struct util_wait, wait_fid.fid);
		util_wait_collect(wait);
		ofi_wait_drain(wait);
		busy = util_wait_set_ready(wait);
		break;
	default:
		return -FI_EINVAL;
	}
	return busy ? -FI_EAGAIN : 0;
}

int ofi_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	int i, ret;

	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		ret = util_trywait_one(fids[i]);
		if (ret)
			return ret;
	}
	return 0;
}
