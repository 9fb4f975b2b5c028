/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_mr.c - the MR map (key -> registered regions, access rights, HMEM
 * iface/device, bound counter) that providers consult on the target side,
 * holding an entry while a remote operation uses it so a close waits for
 * it, and the util_mr object behind fi_mr_reg/regv/regattr, fi_mr_bind,
 * fi_mr_desc, fi_mr_key. Persistent registrations (FI_RMA_PMEM) remember
 * how to make their memory durable and persist ranges on request
 * (ofi_mr_map_persist, the target side of fi_commit).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ofi_util.h"

#define OFI_MR_ACCESS_ALL                                                      \
	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE | FI_COLLECTIVE)
#define OFI_MR_REG_FLAGS                                                       \
	(FI_RMA_EVENT | FI_RMA_PMEM | FI_HMEM_DEVICE_ONLY | FI_HMEM_HOST_ALLOC)

int ofi_mr_mode_normalize(int mode)
{
	if (mode == FI_MR_BASIC)
		return FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (mode == FI_MR_SCALABLE)
		return 0;
	return mode & ~(FI_MR_BASIC | FI_MR_SCALABLE);
}

static size_t mr_bucket(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return key % OFI_MR_MAP_BUCKETS;
}

int ofi_mr_map_init(const struct fi_provider *prov, int mode,
		    struct ofi_mr_map *map)
{
	memset(map, 0, sizeof(*map));
	map->prov = prov;
	map->mode = ofi_mr_mode_normalize(mode);
	map->next_key = 1;
	return ofi_mutex_init(&map->lock);
}

void ofi_mr_map_close(struct ofi_mr_map *map)
{
	struct ofi_mr_entry *e, *next;
	size_t i;

	for (i = 0; i < OFI_MR_MAP_BUCKETS; i++) {
		for (e = map->buckets[i]; e; e = next) {
			next = e->next;
			free(e);
		}
		map->buckets[i] = NULL;
	}
	if (map->count)
		FI_WARN(map->prov, FI_LOG_MR, "%zu MRs left open\n",
			map->count);
	map->count = 0;
	ofi_mutex_destroy(&map->lock);
}

static struct ofi_mr_entry *mr_map_find(struct ofi_mr_map *map, uint64_t key)
{
	struct ofi_mr_entry *e;

	for (e = map->buckets[mr_bucket(key)]; e; e = e->next) {
		if (e->key == key)
			return e;
	}
	return NULL;
}

int ofi_mr_map_insert(struct ofi_mr_map *map, const struct fi_mr_attr *attr,
		      uint64_t flags, uint64_t *key, void *context)
{
	struct ofi_mr_entry *e;
	int pmem = OFI_PMEM_NONE;
	size_t b;

	/* 1.17 takes FI_RMA_PMEM as a flag; we also accept the access bit. */
	if ((flags | attr->access) & FI_RMA_PMEM) {
		if (attr->iface != FI_HMEM_SYSTEM)
			return -FI_EBADFLAGS;
		pmem = ofi_pmem_classify(attr->mr_iov, attr->iov_count);
		if (pmem < 0)
			return pmem;
	}
	e = calloc(1, sizeof(*e) + attr->iov_count * sizeof(struct iovec));
	if (!e)
		return -FI_ENOMEM;
	e->pmem = pmem;
	e->access = attr->access;
	e->offset = attr->offset;
	e->flags = flags;
	e->context = context;
	e->iface = attr->iface;
	e->device = attr->device.reserved;
	e->iov_count = attr->iov_count;
	if (attr->iov_count)
		memcpy(e->iov, attr->mr_iov,
		       attr->iov_count * sizeof(struct iovec));

	ofi_mutex_lock(&map->lock);
	if ((map->mode & FI_MR_PROV_KEY) && !(flags & OFI_MR_INTERNAL)) {
		do {
			if (ofi_mr_key_engine(map->next_key))
				map->next_key = (map->next_key |
						 ~OFI_MR_KEY_ENGINE_MASK) +
						1;
			e->key = map->next_key++;
		} while (mr_map_find(map, e->key));
	} else {
		e->key = attr->requested_key;
		if (!(flags & OFI_MR_INTERNAL) && ofi_mr_key_engine(e->key)) {
			ofi_mutex_unlock(&map->lock);
			free(e);
			return -FI_EKEYREJECTED;
		}
		if (mr_map_find(map, e->key)) {
			ofi_mutex_unlock(&map->lock);
			free(e);
			return -FI_ENOKEY;
		}
	}
	b = mr_bucket(e->key);
	e->next = map->buckets[b];
	map->buckets[b] = e;
	map->count++;
	*key = e->key;
	ofi_mutex_unlock(&map->lock);
	return 0;
}

/* Under the lock: entries with a counter bound (ofi_mr_map_counted). */
static void mr_map_bound_add(struct ofi_mr_map *map, int delta)
{
	__atomic_store_n(&map->bound, map->bound + delta, __ATOMIC_RELAXED);
}

/* Called locked, returns unlocked once @e has no holder left. */
static void mr_map_unlock_unheld(struct ofi_mr_map *map, struct ofi_mr_entry *e)
{
	while (e->ref) {
		ofi_mutex_unlock(&map->lock);
		sched_yield();
		ofi_mutex_lock(&map->lock);
	}
	ofi_mutex_unlock(&map->lock);
}

int ofi_mr_map_remove(struct ofi_mr_map *map, uint64_t key)
{
	struct ofi_mr_entry **pp, *e;

	ofi_mutex_lock(&map->lock);
	for (pp = &map->buckets[mr_bucket(key)]; (e = *pp); pp = &e->next) {
		if (e->key == key)
			break;
	}
	if (!e) {
		ofi_mutex_unlock(&map->lock);
		return -FI_ENOKEY;
	}
	*pp = e->next;
	map->count--;
	if (e->cntr)
		mr_map_bound_add(map, -1);
	/*
	 * Unlinked, nobody can take a new hold; the holders (a remote
	 * operation copying into the region, briefly) finish first, so
	 * that no byte lands in the buffer once its close returned.
	 */
	mr_map_unlock_unheld(map, e);
	free(e);
	return 0;
}

/*
 * A narrowed entry takes no new hold that needs a dropped right; the
 * holders already in (a remote operation copying into the region) finish
 * first, so that once this returns no byte lands through the old rights.
 */
int ofi_mr_map_set_access(struct ofi_mr_map *map, uint64_t key, uint64_t access)
{
	struct ofi_mr_entry *e;
	bool narrowed;

	ofi_mutex_lock(&map->lock);
	e = mr_map_find(map, key);
	if (!e) {
		ofi_mutex_unlock(&map->lock);
		return -FI_ENOKEY;
	}
	narrowed = e->access & ~access;
	e->access = access;
	if (narrowed)
		mr_map_unlock_unheld(map, e);
	else
		ofi_mutex_unlock(&map->lock);
	return 0;
}

int ofi_mr_map_query(struct ofi_mr_map *map, uint64_t key,
		     enum fi_hmem_iface *iface, uint64_t *device)
{
	struct ofi_mr_entry *e;

	ofi_mutex_lock(&map->lock);
	e = mr_map_find(map, key);
	if (e) {
		if (iface)
			*iface = e->iface;
		if (device)
			*device = e->device;
	}
	ofi_mutex_unlock(&map->lock);
	return e ? 0 : -FI_ENOKEY;
}

/*
 * Finds the iovec holding [addr, addr + len): virtual addresses are looked up
 * directly, offsets are counted over the concatenated iovecs starting at the
 * registration's offset.  A range spanning two iovecs cannot be handed back
 * as one pointer and is refused.
 */
static int mr_translate(const struct ofi_mr_entry *e, int mode,
			uintptr_t *io_addr, size_t len)
{
	uintptr_t base, addr = *io_addr;
	uint64_t off;
	size_t i;

	if (mode & FI_MR_VIRT_ADDR) {
		for (i = 0; i < e->iov_count; i++) {
			base = (uintptr_t)e->iov[i].iov_base;
			if (addr >= base && len <= e->iov[i].iov_len &&
			    addr - base <= e->iov[i].iov_len - len)
				return 0;
		}
		return -FI_EACCES;
	}

	if (addr < e->offset)
		return -FI_EACCES;
	off = addr - e->offset;
	for (i = 0; i < e->iov_count; i++) {
		if (off < e->iov[i].iov_len ||
		    (off == e->iov[i].iov_len && !len)) {
			if (len > e->iov[i].iov_len - off)
				return -FI_EACCES;
			*io_addr = (uintptr_t)e->iov[i].iov_base + off;
			return 0;
		}
		off -= e->iov[i].iov_len;
	}
	return off == 0 && !len ? 0 : -FI_EACCES;
}

static OFI_HOT int mr_map_lookup(struct ofi_mr_map *map, uintptr_t *io_addr,
				 size_t len, uint64_t key, uint64_t access,
				 struct ofi_mr_entry **out)
{
	struct ofi_mr_entry *e;
	int ret;

	e = mr_map_find(map, key);
	if (!e || (e->access & access) != access)
		return -FI_EACCES;
	ret = mr_translate(e,
			   e->flags & OFI_MR_INTERNAL
				   ? map->mode & ~FI_MR_VIRT_ADDR
				   : map->mode,
			   io_addr, len);
	if (!ret)
		*out = e;
	return ret;
}

OFI_HOT int ofi_mr_map_verify(struct ofi_mr_map *map, uintptr_t *io_addr,
			      size_t len, uint64_t key, uint64_t access,
			      void **context)
{
	struct ofi_mr_entry *e;
	int ret;

	if (!io_addr)
		return -FI_EINVAL;
	ofi_mutex_lock(&map->lock);
	ret = mr_map_lookup(map, io_addr, len, key, access, &e);
	if (!ret && context)
		*context = e->context;
	ofi_mutex_unlock(&map->lock);
	return ret;
}

OFI_HOT int ofi_mr_map_get(struct ofi_mr_map *map, uintptr_t *io_addr,
			   size_t len, uint64_t key, uint64_t access,
			   struct ofi_mr_entry **entry)
{
	int ret;

	if (!io_addr || !entry)
		return -FI_EINVAL;
	ofi_mutex_lock(&map->lock);
	ret = mr_map_lookup(map, io_addr, len, key, access, entry);
	if (!ret)
		(*entry)->ref++;
	ofi_mutex_unlock(&map->lock);
	return ret;
}

OFI_HOT void ofi_mr_map_put(struct ofi_mr_map *map, struct ofi_mr_entry *entry)
{
	if (!entry)
		return;
	ofi_mutex_lock(&map->lock);
	entry->ref--;
	ofi_mutex_unlock(&map->lock);
}

int ofi_mr_entry_persist(const struct ofi_mr_entry *entry, uintptr_t addr,
			 size_t len)
{
	if (!entry || entry->pmem == OFI_PMEM_NONE)
		return -FI_EACCES;
	return ofi_pmem_persist(entry->pmem, (const void *)addr, len);
}

/*
 * A commit needs no particular remote access, only a persistent
 * registration covering the range. libpmem may sleep (msync), so it runs
 * on a held entry, outside the map lock, like a remote copy does.
 */
int ofi_mr_map_persist(struct ofi_mr_map *map, uint64_t key, uint64_t addr,
		       size_t len)
{
	struct ofi_mr_entry *e;
	uintptr_t io_addr = (uintptr_t)addr;
	int ret;

	if ((uint64_t)io_addr != addr)
		return -FI_EACCES;
	ret = ofi_mr_map_get(map, &io_addr, len, key, 0, &e);
	if (ret)
		return ret;
	ret = ofi_mr_entry_persist(e, io_addr, len);
	ofi_mr_map_put(map, e);
	return ret;
}

/* Under the lock: a counter closing meanwhile unbinds under it too. */
void ofi_mr_map_event(struct ofi_mr_map *map, struct ofi_mr_entry *entry,
		      uint64_t access)
{
	ofi_mutex_lock(&map->lock);
	if (entry->cntr && (entry->cntr_flags & access))
		ofi_cntr_inc(entry->cntr);
	ofi_mutex_unlock(&map->lock);
}

int ofi_mr_map_bind_cntr(struct ofi_mr_map *map, uint64_t key,
			 struct util_cntr *cntr, uint64_t flags)
{
	struct ofi_mr_entry *e;

	ofi_mutex_lock(&map->lock);
	e = mr_map_find(map, key);
	if (e) {
		if (!e->cntr)
			mr_map_bound_add(map, 1);
		e->cntr = cntr;
		/* No flags: the counter counts both directions. */
		e->cntr_flags =
			flags ? flags : FI_REMOTE_WRITE | FI_REMOTE_READ;
	}
	ofi_mutex_unlock(&map->lock);
	return e ? 0 : -FI_ENOKEY;
}

void ofi_mr_map_unbind_cntr(struct ofi_mr_map *map, struct util_cntr *cntr)
{
	struct ofi_mr_entry *e;
	size_t i;

	ofi_mutex_lock(&map->lock);
	for (i = 0; i < OFI_MR_MAP_BUCKETS; i++) {
		for (e = map->buckets[i]; e; e = e->next) {
			if (e->cntr != cntr)
				continue;
			e->cntr = NULL;
			mr_map_bound_add(map, -1);
		}
	}
	ofi_mutex_unlock(&map->lock);
}

/* util_mr object -------------------------------------------------------- */

static int util_mr_close(struct fid *fid)
{
	struct util_mr *mr = container_of(fid, struct util_mr, mr_fid.fid);
	int ret;

	/*
	 * A counter still bound is unbound, as 1.17 does (OpenSHMEM closes
	 * its target MRs before their counter); closing the counter first
	 * unbinds it too.
	 */
	ret = ofi_mr_map_remove(&mr->domain->mr_map, mr->mr_fid.key);
	if (ret)
		return ret;
	ofi_atomic_dec32(&mr->domain->ref);
	free(mr);
	return 0;
}

static int util_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_mr *mr = container_of(fid, struct util_mr, mr_fid.fid);
	struct util_cntr *cntr;
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	switch (bfid->fclass) {
	case FI_CLASS_CNTR:
		if (flags & ~(uint64_t)FI_REMOTE_WRITE &
		    ~(uint64_t)FI_REMOTE_READ)
			return -FI_EINVAL;
		/*
		 * fi_mr(3): the FI_RMA_EVENT flag is asked of registrations
		 * only where mr_mode has FI_MR_RMA_EVENT; elsewhere any MR
		 * of a domain with the capability takes a counter (OpenSHMEM
		 * binds its segments so, and 1.17's sockets counts them).
		 */
		if (!(mr->domain->info->caps & FI_RMA_EVENT))
			return -FI_EINVAL;
		if ((mr->domain->mr_mode & FI_MR_RMA_EVENT) &&
		    !(mr->flags & FI_RMA_EVENT))
			return -FI_EINVAL;
		cntr = container_of(bfid, struct util_cntr, cntr_fid.fid);
		ret = ofi_mr_map_bind_cntr(&mr->domain->mr_map, mr->mr_fid.key,
					   cntr, flags);
		if (!ret)
			ofi_cntr_mr_bound(cntr);
		return ret;
	case FI_CLASS_EP:
		if (flags)
			return -FI_EINVAL;
		if (!(mr->domain->mr_mode & FI_MR_ENDPOINT))
			return -FI_EINVAL;
		mr->ep = container_of(bfid, struct fid_ep, fid);
		return 0;
	default:
		return -FI_EINVAL;
	}
}

static int util_mr_control(struct fid *fid, int command, void *arg)
{
	struct util_mr *mr = container_of(fid, struct util_mr, mr_fid.fid);

	switch (command) {
	case FI_ENABLE:
		if ((mr->domain->mr_mode & FI_MR_ENDPOINT) && !mr->ep)
			return -FI_EINVAL;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static const struct fi_ops util_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = util_mr_close,
	.bind = util_mr_bind,
	.control = util_mr_control,
	.ops_open = fi_no_ops_open,
	.tostr = fi_no_tostr,
	.ops_set = fi_no_ops_set,
#if OFI_HAVE_EXT_SLOTS
	.op_set = fi_no_op_set,
#endif
};

/*
 * Only a domain with FI_MR_ALLOCATED needs the pages to exist. Without
 * it, a region may start at NULL: SHMEM runtimes with remote virtual
 * addressing register the whole address space (0, UINT64_MAX) under one
 * key, as libfabric 1.17's sockets accepts.
 */
static bool mr_iov_unallocated(const struct fi_mr_attr *attr)
{
	size_t i;

	for (i = 0; i < attr->iov_count; i++)
		if (!attr->mr_iov[i].iov_base && attr->mr_iov[i].iov_len)
			return true;
	return false;
}

static int mr_check_attr(struct util_domain *domain,
			 const struct fi_mr_attr *attr, uint64_t flags)
{
	if (!attr || (attr->iov_count && !attr->mr_iov))
		return -FI_EINVAL;
	if ((domain->mr_map.mode & FI_MR_ALLOCATED) && mr_iov_unallocated(attr))
		return -FI_EINVAL;
	if (attr->access & ~(OFI_MR_ACCESS_ALL | FI_RMA_PMEM))
		return -FI_EINVAL;
	if (flags & ~OFI_MR_REG_FLAGS)
		return -FI_EINVAL;
	/*
	 * fi_mr(3): a flag the provider does not support is -FI_EBADFLAGS.
	 * A persistent registration needs the FI_RMA_PMEM capability and a
	 * library built with libpmem; anything else would promise a
	 * durability nobody provides.
	 */
	if (((flags | attr->access) & FI_RMA_PMEM) &&
	    (!HAVE_LIBPMEM || !(domain->info->caps & FI_RMA_PMEM) ||
	     attr->iface != FI_HMEM_SYSTEM))
		return -FI_EBADFLAGS;
	if (domain->attr->mr_iov_limit &&
	    attr->iov_count > domain->attr->mr_iov_limit)
		return -FI_EINVAL;
	if (attr->iface > FI_HMEM_SYNAPSEAI)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM && !(domain->info->caps & FI_HMEM))
		return -FI_EINVAL;
	if ((flags & FI_RMA_EVENT) && !(domain->info->caps & FI_RMA_EVENT))
		return -FI_EINVAL;
	return 0;
}

int ofi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		   uint64_t flags, struct fid_mr **mr_fid)
{
	struct util_domain *domain;
	struct util_mr *mr;
	uint64_t key;
	int ret;

	if (!fid || fid->fclass != FI_CLASS_DOMAIN || !mr_fid)
		return -FI_EINVAL;
	domain = container_of(fid, struct util_domain, domain_fid.fid);
	ret = mr_check_attr(domain, attr, flags);
	if (ret)
		return ret;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = domain;
	mr->access = attr->access;
	mr->flags = flags;
	mr->iface = attr->iface;
	mr->device = attr->device.reserved;
	key = attr->requested_key;
	ret = ofi_mr_map_insert(&domain->mr_map, attr, flags, &key, mr);
	if (ret) {
		free(mr);
		return ret;
	}
	/* Local users of the descriptor (a receive buffer) persist too. */
	ofi_mutex_lock(&domain->mr_map.lock);
	mr->pmem = mr_map_find(&domain->mr_map, key)->pmem;
	ofi_mutex_unlock(&domain->mr_map.lock);
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = (struct fi_ops *)&util_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = key;
	ofi_atomic_inc32(&domain->ref);
	*mr_fid = &mr->mr_fid;
	return 0;
}

int ofi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		uint64_t access, uint64_t offset, uint64_t requested_key,
		uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return ofi_mr_regattr(fid, &attr, flags, mr);
}

int ofi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
	       uint64_t offset, uint64_t requested_key, uint64_t flags,
	       struct fid_mr **mr, void *context)
{
	struct iovec iov = {
		.iov_base = (void *)buf,
		.iov_len = len,
	};

	return ofi_mr_regv(fid, &iov, 1, access, offset, requested_key, flags,
			   mr, context);
}
