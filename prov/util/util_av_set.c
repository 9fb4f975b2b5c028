/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_av_set.c - AV sets (fi_av_set(3)) over a util_av: an ordered list
 * of the AV's fi_addrs, the set arithmetic with the man page's order
 * rules (union appends, intersect/diff/remove keep the destination's
 * order), and fi_av_set_addr. Purely local: no traffic.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_coll.h"

static struct util_av_set *to_set(const struct fid_av_set *set)
{
	return container_of(set, struct util_av_set, set_fid);
}

static bool av_addr_valid(struct util_av *av, fi_addr_t addr)
{
	uint8_t buf[av->prov_attr.addrlen];

	return !ofi_av_get_addr(av, addr, buf);
}

static ssize_t set_find(const struct util_av_set *s, fi_addr_t addr)
{
	size_t i;

	for (i = 0; i < s->count; i++) {
		if (s->addrs[i] == addr)
			return (ssize_t)i;
	}
	return -1;
}

static int set_append(struct util_av_set *s, fi_addr_t addr)
{
	fi_addr_t *a;
	size_t cap;

	if (s->count == s->cap) {
		cap = s->cap ? s->cap * 2 : 16;
		a = realloc(s->addrs, cap * sizeof(*a));
		if (!a)
			return -FI_ENOMEM;
		s->addrs = a;
		s->cap = cap;
	}
	s->addrs[s->count++] = addr;
	return 0;
}

/* Keeps the members for which @keep(src has it) holds, in order. */
static void set_filter(struct util_av_set *dst, const struct util_av_set *src,
		       bool keep_if_in_src)
{
	size_t i, j = 0;

	for (i = 0; i < dst->count; i++) {
		if ((set_find(src, dst->addrs[i]) >= 0) == keep_if_in_src)
			dst->addrs[j++] = dst->addrs[i];
	}
	dst->count = j;
}

static void set_pair_unlock(struct util_av_set *d, struct util_av_set *s)
{
	if (s != d)
		ofi_mutex_unlock(&s->lock);
	ofi_mutex_unlock(&d->lock);
}

/*
 * Two sets of one AV, locked; the same set twice is fine. The lower
 * address first, whichever is the destination: A u B and B u A on two
 * threads would otherwise each hold the lock the other waits for.
 */
static int set_pair_lock(const struct fid_av_set *dst,
			 const struct fid_av_set *src, struct util_av_set **d,
			 struct util_av_set **s)
{
	struct util_av_set *lo, *hi;

	if (!dst || !src)
		return -FI_EINVAL;
	*d = to_set(dst);
	*s = to_set(src);
	if ((*d)->av != (*s)->av)
		return -FI_EINVAL;
	lo = (uintptr_t)*d < (uintptr_t)*s ? *d : *s;
	hi = lo == *d ? *s : *d;
	ofi_mutex_lock(&lo->lock);
	if (hi != lo)
		ofi_mutex_lock(&hi->lock);
	return 0;
}

static int av_set_union(struct fid_av_set *dst, const struct fid_av_set *src)
{
	struct util_av_set *d, *s;
	size_t i, n;
	int ret;

	ret = set_pair_lock(dst, src, &d, &s);
	if (ret)
		return ret;
	n = s->count;
	for (i = 0; i < n && !ret; i++) {
		if (set_find(d, s->addrs[i]) < 0)
			ret = set_append(d, s->addrs[i]);
	}
	set_pair_unlock(d, s);
	return ret;
}

static int av_set_filter(struct fid_av_set *dst, const struct fid_av_set *src,
			 bool keep)
{
	struct util_av_set *d, *s;
	int ret;

	ret = set_pair_lock(dst, src, &d, &s);
	if (ret)
		return ret;
	if (s == d)
		d->count = keep ? d->count : 0;
	else
		set_filter(d, s, keep);
	set_pair_unlock(d, s);
	return 0;
}

static int av_set_intersect(struct fid_av_set *dst,
			    const struct fid_av_set *src)
{
	return av_set_filter(dst, src, true);
}

static int av_set_diff(struct fid_av_set *dst, const struct fid_av_set *src)
{
	return av_set_filter(dst, src, false);
}

static int av_set_insert(struct fid_av_set *set, fi_addr_t addr)
{
	struct util_av_set *s;
	int ret;

	if (!set)
		return -FI_EINVAL;
	s = to_set(set);
	if (!av_addr_valid(s->av, addr))
		return -FI_EINVAL;
	ofi_mutex_lock(&s->lock);
	ret = set_find(s, addr) >= 0 ? -FI_EALREADY : set_append(s, addr);
	ofi_mutex_unlock(&s->lock);
	return ret;
}

static int av_set_remove(struct fid_av_set *set, fi_addr_t addr)
{
	struct util_av_set *s;
	ssize_t i;

	if (!set)
		return -FI_EINVAL;
	s = to_set(set);
	ofi_mutex_lock(&s->lock);
	i = set_find(s, addr);
	if (i >= 0) {
		memmove(&s->addrs[i], &s->addrs[i + 1],
			(s->count - (size_t)i - 1) * sizeof(*s->addrs));
		s->count--;
	}
	ofi_mutex_unlock(&s->lock);
	return i >= 0 ? 0 : -FI_EINVAL;
}

/*
 * The address names the set itself: fi_join_collective, which also gets
 * the set, takes the members from it at the time of the join.
 */
static int av_set_addr(struct fid_av_set *set, fi_addr_t *coll_addr)
{
	if (!set || !coll_addr)
		return -FI_EINVAL;
	*coll_addr = (fi_addr_t)(uintptr_t)set;
	return 0;
}

static int av_set_close(struct fid *fid)
{
	struct util_av_set *s =
		container_of(fid, struct util_av_set, set_fid.fid);

	ofi_atomic_dec32(&s->av->ref);
	ofi_mutex_destroy(&s->lock);
	free(s->addrs);
	free(s);
	return 0;
}

static struct fi_ops av_set_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_set_close,
	.bind = fi_no_bind,
	.control = fi_no_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
};

static struct fi_ops_av_set av_set_ops = {
	.size = sizeof(struct fi_ops_av_set),
	.set_union = av_set_union,
	.intersect = av_set_intersect,
	.diff = av_set_diff,
	.insert = av_set_insert,
	.remove = av_set_remove,
	.addr = av_set_addr,
};

/* Initial members: FI_UNIVERSE, or the valid addresses of start..end by
 * stride (FI_AV_TABLE). */
static int av_set_fill(struct util_av_set *s, const struct fi_av_set_attr *a)
{
	size_t cap = s->av->cap, limit = a->count ? a->count : cap;
	fi_addr_t i;
	int ret = 0;

	if (a->flags & FI_UNIVERSE) {
		for (i = 0; i < cap && !ret; i++) {
			if (av_addr_valid(s->av, i))
				ret = set_append(s, i);
		}
		return ret;
	}
	if (a->start_addr == FI_ADDR_NOTAVAIL)
		return a->end_addr == FI_ADDR_NOTAVAIL ? 0 : -FI_EINVAL;
	if (s->av->type != FI_AV_TABLE || a->end_addr == FI_ADDR_NOTAVAIL ||
	    a->end_addr < a->start_addr || !a->stride)
		return -FI_EINVAL;
	if ((a->end_addr - a->start_addr) / a->stride + 1 > limit)
		return -FI_EINVAL;
	/* fi_av_set(3): the valid addresses of the range are members */
	for (i = a->start_addr; i <= a->end_addr && !ret; i += a->stride) {
		if (av_addr_valid(s->av, i))
			ret = set_append(s, i);
		if (a->end_addr - i < a->stride)
			break;
	}
	return ret;
}

#define OFI_AV_SET_FLAGS                                                       \
	(FI_UNIVERSE | FI_BARRIER_SET | FI_BROADCAST_SET | FI_ALLTOALL_SET |   \
	 FI_ALLREDUCE_SET | FI_ALLGATHER_SET | FI_REDUCE_SCATTER_SET |         \
	 FI_REDUCE_SET | FI_SCATTER_SET | FI_GATHER_SET)

int ofi_av_set(struct fid_av *av_fid, struct fi_av_set_attr *attr,
	       struct fid_av_set **set, void *context)
{
	struct util_av_set *s;
	struct util_av *av;
	int ret;

	if (!av_fid || !attr || !set)
		return -FI_EINVAL;
	if ((attr->flags & ~(uint64_t)OFI_AV_SET_FLAGS) ||
	    attr->comm_key_size || attr->comm_key)
		return -FI_EINVAL;
	av = container_of(av_fid, struct util_av, av_fid);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	s->av = av;
	ofi_mutex_init(&s->lock);
	ret = av_set_fill(s, attr);
	if (ret) {
		ofi_mutex_destroy(&s->lock);
		free(s->addrs);
		free(s);
		return ret;
	}
	s->set_fid.fid.fclass = FI_CLASS_AV_SET;
	s->set_fid.fid.context = context;
	s->set_fid.fid.ops = &av_set_fi_ops;
	s->set_fid.ops = &av_set_ops;
	ofi_atomic_inc32(&av->ref);
	*set = &s->set_fid;
	return 0;
}

int ofi_av_set_members(const struct fid_av_set *set, struct util_av **av,
		       fi_addr_t **addrs, size_t *count)
{
	struct util_av_set *s;

	if (!set || set->fid.fclass != FI_CLASS_AV_SET ||
	    set->ops != &av_set_ops)
		return -FI_EINVAL;
	s = to_set(set);
	ofi_mutex_lock(&s->lock);
	*addrs = malloc((s->count ? s->count : 1) * sizeof(**addrs));
	if (*addrs) {
		if (s->count) /* no member: addrs may be NULL */
			memcpy(*addrs, s->addrs, s->count * sizeof(**addrs));
		*count = s->count;
		*av = s->av;
	}
	ofi_mutex_unlock(&s->lock);
	return *addrs ? 0 : -FI_ENOMEM;
}
