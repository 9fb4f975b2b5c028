/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_av.c - the util_av base object: FI_AV_MAP and FI_AV_TABLE address
 * vectors over one slot array (fi_addr == slot index, lowest free first),
 * insert/insertsvc/insertsym/remove/lookup/straddr, FI_EVENT (asynchronous)
 * and FI_SYNC_ERR reporting, FI_AV_USER_ID, a hash for the reverse
 * lookup (address -> fi_addr) that FI_SOURCE completions need, and the
 * list of bound endpoints told of every removal and insert (ofi_av_ep_ops)
 * so their per-address caches never outlive an address. A named AV
 * (FI_SHARED_AV) mirrors its slots in a shared memory object
 * (util_av_shared.c): written through by its creator, followed by the
 * processes that open it with FI_READ.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ofi_util.h"

struct av_slot {
	bool used;
	bool was_used; /* a removed address held it: reuse */
	fi_addr_t user_id;
	int64_t next; /* hash chain */
	uint8_t addr[];
};

#define OFI_AV_DEF_COUNT 64

static struct av_slot *av_slot(struct util_av *av, size_t i)
{
	return (struct av_slot *)(av->slots + i * av->stride);
}

static uint64_t av_hash(const void *addr, size_t len)
{
	const uint8_t *p = addr;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void av_hash_add(struct util_av *av, size_t i)
{
	struct av_slot *s = av_slot(av, i);
	size_t b = av_hash(s->addr, av->prov_attr.addrlen) & (av->nbuckets - 1);

	s->next = av->buckets[b];
	av->buckets[b] = (int64_t)i;
}

static void av_hash_del(struct util_av *av, size_t i)
{
	struct av_slot *s = av_slot(av, i);
	size_t b = av_hash(s->addr, av->prov_attr.addrlen) & (av->nbuckets - 1);
	int64_t *pp = &av->buckets[b];

	while (*pp >= 0) {
		if (*pp == (int64_t)i) {
			*pp = s->next;
			return;
		}
		pp = &av_slot(av, *pp)->next;
	}
}

static int av_grow(struct util_av *av, size_t cap)
{
	uint8_t *slots;
	int64_t *buckets;
	size_t i, nb = ofi_roundup_pow2(cap * 2);

	slots = realloc(av->slots, cap * av->stride);
	if (!slots)
		return -FI_ENOMEM;
	av->slots = slots;
	memset(slots + av->cap * av->stride, 0, (cap - av->cap) * av->stride);
	buckets = malloc(nb * sizeof(*buckets));
	if (!buckets)
		return -FI_ENOMEM;
	free(av->buckets);
	av->buckets = buckets;
	av->nbuckets = nb;
	for (i = 0; i < nb; i++)
		buckets[i] = -1;
	av->cap = cap;
	for (i = 0; i < cap; i++) {
		if (av_slot(av, i)->used)
			av_hash_add(av, i);
	}
	return 0;
}

/* Brings a caller's address into stored form (strings are NUL padded). */
static int av_canon(struct util_av *av, const void *addr, void *out)
{
	size_t len;

	if (!addr)
		return -FI_EINVAL;
	if (av->addr_format != FI_ADDR_STR) {
		memcpy(out, addr, av->prov_attr.addrlen);
		return 0;
	}
	len = strnlen(addr, av->prov_attr.addrlen);
	if (len >= av->prov_attr.addrlen)
		return -FI_EINVAL;
	memset(out, 0, av->prov_attr.addrlen);
	memcpy(out, addr, len);
	return 0;
}

static int av_find_locked(struct util_av *av, const void *canon)
{
	size_t b = av_hash(canon, av->prov_attr.addrlen) & (av->nbuckets - 1);
	int64_t i;

	for (i = av->buckets[b]; i >= 0; i = av_slot(av, i)->next) {
		if (!memcmp(av_slot(av, i)->addr, canon, av->prov_attr.addrlen))
			return (int)i;
	}
	return -1;
}

/*
 * Tells every bound endpoint that @i was removed or filled; under the AV
 * lock, so no insert or remove of the same slot can overtake the news.
 */
static void av_notify(struct util_av *av, size_t i, bool removed, bool reused)
{
	struct dlist_entry *item;
	struct util_ep *ep;

	dlist_foreach(&av->ep_list, item) {
		ep = container_of(item, struct util_ep, av_entry);
		if (!ep->av_ops)
			continue;
		if (removed && ep->av_ops->removed)
			ep->av_ops->removed(ep, i);
		else if (!removed && ep->av_ops->inserted)
			ep->av_ops->inserted(ep, i, reused);
	}
}

/*
 * A shared AV: its slots become the object's (added, removed and changed
 * ones told to the bound endpoints), under the lock. A reader follows the
 * writer so; the writer reads it once, at open, if it was there before.
 */
static void av_sync_locked(struct util_av *av)
{
	uint8_t addr[av->prov_attr.addrlen];
	struct av_slot *s;
	uint64_t gen;
	size_t i;
	bool used;

	if (!av->shared || !ofi_av_shared_changed(av, &gen))
		return;
	for (i = 0; i < av->cap; i++) {
		s = av_slot(av, i);
		used = ofi_av_shared_get(av, i, addr);
		if (s->used && (!used || memcmp(s->addr, addr, sizeof(addr)))) {
			av_hash_del(av, i);
			s->used = false;
			s->was_used = true;
			av->count--;
			av_notify(av, i, true, false);
		}
		if (used && !s->used) {
			s->used = true;
			s->user_id = FI_ADDR_NOTAVAIL;
			memcpy(s->addr, addr, sizeof(addr));
			av_hash_add(av, i);
			av->count++;
			av_notify(av, i, false, s->was_used);
		}
	}
	ofi_av_shared_synced(av, gen);
}

static int av_insert_one(struct util_av *av, const void *addr,
			 fi_addr_t *fi_addr, fi_addr_t user_id)
{
	uint8_t canon[av->prov_attr.addrlen];
	struct av_slot *s;
	size_t i;
	int ret;

	if (ofi_av_shared_readonly(av))
		return -FI_EOPNOTSUPP; /* FI_READ */
	ret = av_canon(av, addr, canon);
	if (ret)
		return ret;
	if (av->prov_attr.validate) {
		ret = av->prov_attr.validate(av, canon);
		if (ret)
			return ret;
	}
	ofi_mutex_lock(&av->lock);
	for (i = av->free_hint; i < av->cap; i++) {
		if (!av_slot(av, i)->used)
			break;
	}
	if (i == av->cap) {
		/* a shared AV keeps the size it was created with */
		ret = av->shared ? -FI_ENOSPC : av_grow(av, av->cap * 2);
		if (ret) {
			ofi_mutex_unlock(&av->lock);
			return ret;
		}
	}
	s = av_slot(av, i);
	s->used = true;
	s->user_id = user_id;
	memcpy(s->addr, canon, av->prov_attr.addrlen);
	if (av->shared)
		ofi_av_shared_set(av, i, canon);
	av_hash_add(av, i);
	av->count++;
	av->free_hint = i + 1;
	av_notify(av, i, false, s->was_used);
	ofi_mutex_unlock(&av->lock);
	*fi_addr = i;
	return 0;
}

int ofi_av_insert_addr(struct util_av *av, const void *addr, fi_addr_t *fi_addr)
{
	return av_insert_one(av, addr, fi_addr, FI_ADDR_NOTAVAIL);
}

static struct util_av *to_av(struct fid_av *av_fid)
{
	return container_of(av_fid, struct util_av, av_fid);
}

static int av_check_flags(struct util_av *av, uint64_t flags,
			  fi_addr_t *fi_addr, void *context)
{
	if (flags & ~(uint64_t)(FI_MORE | FI_SYNC_ERR | FI_AV_USER_ID))
		return -FI_EINVAL;
	if (ofi_av_shared_readonly(av))
		return -FI_EOPNOTSUPP; /* FI_READ */
	if ((flags & FI_SYNC_ERR) && ((av->flags & FI_EVENT) || !context))
		return -FI_EINVAL;
	if ((flags & FI_AV_USER_ID) && !fi_addr)
		return -FI_EINVAL;
	if ((av->flags & FI_EVENT) && !av->eq)
		return -FI_ENOEQ;
	return 0;
}

/*
 * Reports the outcome of one address: FI_SYNC_ERR fills the caller's int
 * array, FI_EVENT queues an error event carrying the address index.
 */
static void av_report(struct util_av *av, size_t i, int ret, uint64_t flags,
		      fi_addr_t *fi_addr, void *context)
{
	if (ret && fi_addr)
		fi_addr[i] = FI_ADDR_NOTAVAIL;
	if (flags & FI_SYNC_ERR)
		((int *)context)[i] = -ret;
	if (ret && (av->flags & FI_EVENT))
		ofi_eq_write_error(av->eq, &av->av_fid.fid, context, i, -ret, 0,
				   NULL, 0);
}

static int av_finish(struct util_av *av, size_t done, void *context)
{
	struct fi_eq_entry entry = {
		.fid = &av->av_fid.fid,
		.context = context,
		.data = done,
	};

	if (!(av->flags & FI_EVENT))
		return (int)done;
	ofi_eq_write(av->eq, FI_AV_COMPLETE, &entry, sizeof(entry));
	return 0;
}

/*
 * Whether @p can be read: process_vm_readv reads through the kernel, so a
 * wild value fails with EFAULT instead of faulting. Where the call is not
 * allowed (seccomp, ptrace rules) nothing is known and @p is trusted.
 */
static bool av_readable(const void *p)
{
	char c;
	struct iovec local = {&c, 1}, remote = {(void *)p, 1};

	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1)
		return true;
	return errno != EFAULT;
}

/*
 * fi_av(3) passes FI_ADDR_STR addresses as an array of string pointers, but
 * fi_pingpong, fabtests and MPI libraries pass the names packed one after
 * the other, as fi_getname gave them. Both are taken: a user-space pointer
 * has zero bytes among its 8 (its top two), while every real name is longer
 * than 8 characters, so 8 bytes without a NUL are a packed name. With a
 * NUL they are a pointer only if it points at readable memory: a short or
 * empty packed name must not be dereferenced as one. In an array, every
 * pointer is checked the same way before it is followed.
 */
static bool av_str_packed(const void *addr)
{
	const void *p;

	if (!memchr(addr, '\0', sizeof(void *)))
		return true;
	memcpy(&p, addr, sizeof(p));
	return !p || !av_readable(p);
}

/*
 * The next name. Packed names are read at most @max bytes each: after one
 * without its NUL in them, where the next one starts is unknown, so the
 * rest are NULL (invalid) and nothing past count * @max bytes is read.
 */
static const void *av_str_next(const void *addr, bool packed, size_t i,
			       const char **cursor, size_t max)
{
	const char *name;
	size_t len;

	if (!packed) {
		name = ((const char *const *)addr)[i];
		return name && av_readable(name) ? name : NULL;
	}
	name = *cursor;
	if (!name)
		return NULL;
	len = strnlen(name, max);
	*cursor = len < max ? name + len + 1 : NULL;
	return name;
}

static int av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct util_av *av = to_av(av_fid);
	const uint8_t *bytes = addr;
	const char *cursor = addr;
	fi_addr_t out, uid;
	size_t i, done = 0;
	bool packed;
	int ret;

	ret = av_check_flags(av, flags, fi_addr, context);
	if (ret)
		return ret;
	if (count && !addr)
		return -FI_EINVAL;
	packed = count && av->addr_format == FI_ADDR_STR && av_str_packed(addr);
	for (i = 0; i < count; i++) {
		uid = (flags & FI_AV_USER_ID) ? fi_addr[i] : FI_ADDR_NOTAVAIL;
		ret = av_insert_one(av,
				    av->addr_format == FI_ADDR_STR
					    ? av_str_next(addr, packed, i,
							  &cursor,
							  av->prov_attr.addrlen)
					    : bytes + i * av->prov_attr.addrlen,
				    &out, uid);
		if (!ret) {
			done++;
			if (fi_addr)
				fi_addr[i] = out;
		}
		av_report(av, i, ret, flags, fi_addr, context);
	}
	return av_finish(av, done, context);
}

static int av_insert_svc_one(struct util_av *av, const char *node,
			     const char *service, fi_addr_t *fi_addr,
			     fi_addr_t uid)
{
	uint8_t buf[av->prov_attr.addrlen];
	int ret;

	memset(buf, 0, sizeof(buf));
	ret = av->prov_attr.svc_to_addr(av, node, service, buf);
	if (ret)
		return ret;
	return av_insert_one(av, buf, fi_addr, uid);
}

static int av_insertsvc(struct fid_av *av_fid, const char *node,
			const char *service, fi_addr_t *fi_addr, uint64_t flags,
			void *context)
{
	struct util_av *av = to_av(av_fid);
	fi_addr_t out, uid;
	int ret;

	ret = av_check_flags(av, flags, fi_addr, context);
	if (ret)
		return ret;
	if (!node && !service)
		return -FI_EINVAL;
	uid = (flags & FI_AV_USER_ID) ? *fi_addr : FI_ADDR_NOTAVAIL;
	if (av->addr_format == FI_ADDR_STR && node && !service)
		ret = av_insert_one(av, node, &out, uid);
	else if (av->prov_attr.svc_to_addr)
		ret = av_insert_svc_one(av, node, service, &out, uid);
	else
		return -FI_ENOSYS;
	if (!ret && fi_addr)
		*fi_addr = out;
	av_report(av, 0, ret, flags, fi_addr, context);
	return av_finish(av, ret ? 0 : 1, context);
}

/*
 * The n-th node after @node: IPv4/IPv6 literals count up as addresses,
 * names count up their numeric suffix keeping its width.
 */
static int av_nth_node(const char *node, size_t n, char *out, size_t len)
{
	struct in_addr a4;
	struct in6_addr a6;
	size_t plen, dlen;
	unsigned long long v;
	int i;

	if (inet_pton(AF_INET, node, &a4) == 1) {
		a4.s_addr = htonl(ntohl(a4.s_addr) + (uint32_t)n);
		return inet_ntop(AF_INET, &a4, out, len) ? 0 : -FI_EINVAL;
	}
	if (inet_pton(AF_INET6, node, &a6) == 1) {
		for (i = 15; i >= 0 && n; i--) {
			n += a6.s6_addr[i];
			a6.s6_addr[i] = n & 0xff;
			n >>= 8;
		}
		return inet_ntop(AF_INET6, &a6, out, len) ? 0 : -FI_EINVAL;
	}
	plen = strlen(node);
	while (plen && isdigit((unsigned char)node[plen - 1]))
		plen--;
	dlen = strlen(node) - plen;
	if (!dlen) {
		if (n)
			return -FI_EINVAL;
		return (size_t)snprintf(out, len, "%s", node) < len
			       ? 0
			       : -FI_EINVAL;
	}
	/* A suffix that does not count up (too long) names no host. */
	errno = 0;
	v = strtoull(node + plen, NULL, 10);
	if (errno || v > ULLONG_MAX - n || dlen > 64)
		return -FI_EINVAL;
	v += n;
	if ((size_t)snprintf(out, len, "%.*s%0*llu", (int)plen, node, (int)dlen,
			     v) >= len)
		return -FI_EINVAL;
	return 0;
}

static int av_insertsym(struct fid_av *av_fid, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	struct util_av *av = to_av(av_fid);
	char nbuf[256], sbuf[32], *end;
	size_t i, j, k, done = 0;
	fi_addr_t out, uid;
	long svc;
	int ret;

	ret = av_check_flags(av, flags, fi_addr, context);
	if (ret)
		return ret;
	if (!node || !service || !nodecnt || !svccnt)
		return -FI_EINVAL;
	if (!av->prov_attr.svc_to_addr)
		return -FI_ENOSYS;
	/* fi_av(3): a numeric service, counted up svccnt - 1 times. */
	errno = 0;
	svc = strtol(service, &end, 10);
	if (end == service || *end || errno || svc < 0 ||
	    (unsigned long)(LONG_MAX - svc) < svccnt)
		return -FI_EINVAL;
	for (i = 0, k = 0; i < nodecnt; i++) {
		for (j = 0; j < svccnt; j++, k++) {
			snprintf(sbuf, sizeof(sbuf), "%ld", svc + (long)j);
			ret = av_nth_node(node, i, nbuf, sizeof(nbuf));
			uid = (flags & FI_AV_USER_ID) ? fi_addr[k]
						      : FI_ADDR_NOTAVAIL;
			if (!ret)
				ret = av_insert_svc_one(av, nbuf, sbuf, &out,
							uid);
			if (!ret) {
				done++;
				if (fi_addr)
					fi_addr[k] = out;
			}
			av_report(av, k, ret, flags, fi_addr, context);
		}
	}
	return av_finish(av, done, context);
}

static bool av_valid_locked(struct util_av *av, fi_addr_t fi_addr)
{
	return fi_addr < av->cap && av_slot(av, fi_addr)->used;
}

static int av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	struct util_av *av = to_av(av_fid);
	size_t i;

	if (flags || (count && !fi_addr))
		return -FI_EINVAL;
	if (ofi_av_shared_readonly(av))
		return -FI_EOPNOTSUPP; /* FI_READ */
	ofi_mutex_lock(&av->lock);
	for (i = 0; i < count; i++) {
		if (!av_valid_locked(av, fi_addr[i])) {
			ofi_mutex_unlock(&av->lock);
			return -FI_EINVAL;
		}
	}
	for (i = 0; i < count; i++) {
		if (!av_slot(av, fi_addr[i])->used)
			continue; /* listed twice */
		av_hash_del(av, fi_addr[i]);
		av_slot(av, fi_addr[i])->used = false;
		av_slot(av, fi_addr[i])->was_used = true;
		if (av->shared)
			ofi_av_shared_set(av, fi_addr[i], NULL);
		av->count--;
		if (fi_addr[i] < av->free_hint)
			av->free_hint = fi_addr[i];
		av_notify(av, fi_addr[i], true, false);
	}
	ofi_mutex_unlock(&av->lock);
	return 0;
}

static size_t av_addr_size(struct util_av *av, const void *addr)
{
	if (av->addr_format == FI_ADDR_STR)
		return strnlen(addr, av->prov_attr.addrlen) + 1;
	return av->prov_attr.addrlen;
}

static int av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
		     size_t *addrlen)
{
	struct util_av *av = to_av(av_fid);
	struct av_slot *s;
	size_t size;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	ofi_mutex_lock(&av->lock);
	av_sync_locked(av);
	if (!av_valid_locked(av, fi_addr)) {
		ofi_mutex_unlock(&av->lock);
		return -FI_EINVAL;
	}
	s = av_slot(av, fi_addr);
	size = av_addr_size(av, s->addr);
	if (*addrlen)
		memcpy(addr, s->addr, OFI_MIN(*addrlen, size));
	*addrlen = size;
	ofi_mutex_unlock(&av->lock);
	return 0;
}

static const char *av_straddr(struct fid_av *av_fid, const void *addr,
			      char *buf, size_t *len)
{
	struct util_av *av = to_av(av_fid);
	char tmp[512];
	const uint8_t *p = addr;
	size_t i, n, need;

	if (!addr || !len || (*len && !buf))
		return NULL;
	if (av->prov_attr.straddr)
		return av->prov_attr.straddr(av, addr, buf, len);
	if (av->addr_format == FI_ADDR_STR) {
		n = snprintf(tmp, sizeof(tmp), "%.*s",
			     (int)av->prov_attr.addrlen, (const char *)addr);
	} else {
		n = snprintf(tmp, sizeof(tmp), "fi_addr_hex://0x");
		for (i = 0; i < av->prov_attr.addrlen && n < sizeof(tmp) - 3;
		     i++)
			n += snprintf(tmp + n, sizeof(tmp) - n, "%02x", p[i]);
	}
	need = n + 1;
	if (*len) {
		memcpy(buf, tmp, OFI_MIN(*len - 1, n));
		buf[OFI_MIN(*len - 1, n)] = '\0';
	}
	*len = need;
	return buf;
}

int ofi_av_get_addr(struct util_av *av, fi_addr_t fi_addr, void *addr)
{
	int ret = -FI_EINVAL;

	ofi_mutex_lock(&av->lock);
	av_sync_locked(av);
	if (av_valid_locked(av, fi_addr)) {
		memcpy(addr, av_slot(av, fi_addr)->addr, av->prov_attr.addrlen);
		ret = 0;
	}
	ofi_mutex_unlock(&av->lock);
	return ret;
}

static fi_addr_t av_reverse(struct util_av *av, const void *addr, bool user)
{
	uint8_t canon[av->prov_attr.addrlen];
	fi_addr_t ret = FI_ADDR_NOTAVAIL;
	struct av_slot *s;
	int i;

	if (av_canon(av, addr, canon))
		return FI_ADDR_NOTAVAIL;
	ofi_mutex_lock(&av->lock);
	av_sync_locked(av);
	i = av_find_locked(av, canon);
	if (i >= 0) {
		s = av_slot(av, i);
		ret = (user && s->user_id != FI_ADDR_NOTAVAIL) ? s->user_id
							       : (fi_addr_t)i;
	}
	ofi_mutex_unlock(&av->lock);
	return ret;
}

fi_addr_t ofi_av_reverse_lookup(struct util_av *av, const void *addr)
{
	return av_reverse(av, addr, false);
}

fi_addr_t ofi_av_src_addr(struct util_av *av, const void *addr)
{
	if (!av)
		return FI_ADDR_NOTAVAIL;
	return av_reverse(av, addr, true);
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_av *av = container_of(fid, struct util_av, av_fid.fid);

	if (!bfid || bfid->fclass != FI_CLASS_EQ || flags)
		return -FI_EINVAL;
	ofi_mutex_lock(&av->lock);
	if (av->eq) {
		ofi_mutex_unlock(&av->lock);
		return -FI_EINVAL;
	}
	av->eq = container_of(bfid, struct util_eq, eq_fid.fid);
	ofi_atomic_inc32(&av->eq->ref);
	ofi_mutex_unlock(&av->lock);
	return 0;
}

static int av_close_fid(struct fid *fid)
{
	struct util_av *av = container_of(fid, struct util_av, av_fid.fid);
	int ret;

	ret = ofi_av_close(av);
	if (ret)
		return ret;
	free(av);
	return 0;
}

const struct fi_ops ofi_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close_fid,
	.bind = av_bind,
	.control = fi_no_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

const struct fi_ops_av ofi_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = ofi_av_set,
};

int ofi_av_init(struct util_domain *domain, struct fi_av_attr *attr,
		const struct util_av_attr *prov_attr, struct util_av *av,
		void *context)
{
	size_t cap;
	int ret;

	if (!domain || !attr || !prov_attr || !prov_attr->addrlen || !av)
		return -FI_EINVAL;
	if (attr->flags & ~(uint64_t)(FI_EVENT | FI_SYMMETRIC | FI_READ))
		return -FI_EINVAL;
	if (attr->name && !prov_attr->shared)
		return -FI_ENOSYS; /* named/shared AVs */
	if ((attr->flags & FI_READ) && !attr->name)
		return -FI_EINVAL; /* read-only: someone else's named AV */
	if (attr->rx_ctx_bits < 0 ||
	    attr->rx_ctx_bits > prov_attr->max_rx_ctx_bits)
		return prov_attr->max_rx_ctx_bits ? -FI_EINVAL : -FI_ENOSYS;
	memset(av, 0, sizeof(*av));
	av->rx_ctx_bits = attr->rx_ctx_bits;
	switch (attr->type) {
	case FI_AV_UNSPEC:
		av->type = FI_AV_TABLE;
		break;
	case FI_AV_MAP:
	case FI_AV_TABLE:
		av->type = attr->type;
		break;
	default:
		return -FI_EINVAL;
	}
	av->domain = domain;
	av->prov_attr = *prov_attr;
	av->flags = attr->flags;
	av->addr_format = domain->addr_format;
	av->stride =
		ofi_align_up(sizeof(struct av_slot) + prov_attr->addrlen, 8);
	av->buckets = NULL;
	cap = attr->count ? attr->count : OFI_AV_DEF_COUNT;
	if (attr->name) {
		ret = ofi_av_shared_open(av, attr->name, attr->flags & FI_READ,
					 cap);
		if (ret)
			return ret;
		cap = ofi_av_shared_cap(av); /* its creator's */
		if (!attr->map_addr)
			attr->map_addr = ofi_av_shared_map_addr(av);
	}
	ret = av_grow(av, cap);
	if (ret) {
		ofi_av_shared_close(av);
		free(av->slots);
		return ret;
	}
	ofi_mutex_init(&av->lock);
	ofi_atomic_init32(&av->ref, 0);
	dlist_init(&av->ep_list);
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = (struct fi_ops *)&ofi_av_fi_ops;
	av->av_fid.ops = (struct fi_ops_av *)&ofi_av_ops;
	av_sync_locked(av); /* a named AV that exists */
	ofi_atomic_inc32(&domain->ref);
	return 0;
}

int ofi_av_close(struct util_av *av)
{
	if (ofi_atomic_get32(&av->ref))
		return -FI_EBUSY;
	if (av->eq)
		ofi_atomic_dec32(&av->eq->ref);
	ofi_av_shared_close(av);
	free(av->slots);
	free(av->buckets);
	ofi_mutex_destroy(&av->lock);
	ofi_atomic_dec32(&av->domain->ref);
	return 0;
}

int ofi_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		const struct util_av_attr *prov_attr, struct fid_av **av_fid,
		void *context)
{
	struct util_av *av;
	int ret;

	if (!domain_fid || !av_fid)
		return -FI_EINVAL;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	ret = ofi_av_init(
		container_of(domain_fid, struct util_domain, domain_fid), attr,
		prov_attr, av, context);
	if (ret) {
		free(av);
		return ret;
	}
	*av_fid = &av->av_fid;
	return 0;
}
