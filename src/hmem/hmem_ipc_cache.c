/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_ipc_cache.c - the IPC handle cache providers share: a peer's device
 * allocation is mapped into this process once and reused for every
 * transfer that touches it, since opening a handle costs far more than a
 * copy. Entries are reference counted; unreferenced ones sit on an LRU
 * list and are unmapped when the cache is full or their peer goes away.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "ofi.h"
#include "ofi_hmem.h"

#define OFI_IPC_BUCKETS 64

struct ofi_ipc_entry {
	struct dlist_entry hash_entry; /* bucket chain, or the stale list */
	struct dlist_entry lru_entry;  /* on the LRU list while unreferenced */
	struct ofi_ipc_key key;
	void *mapped;
	int refcnt;
	bool stale; /* peer removed while referenced: unmap on last put */
};

struct ofi_ipc_cache {
	ofi_mutex_t lock;
	size_t max_entries;
	size_t entries; /* mapped, stale ones included */
	struct ofi_ipc_cache_ops ops;
	struct dlist_entry lru;	  /* least recently used first */
	struct dlist_entry stale; /* referenced entries of removed peers */
	struct dlist_entry buckets[OFI_IPC_BUCKETS];
	struct ofi_ipc_cache_stats stats;
};

static int ofi_ipc_default_open(enum fi_hmem_iface iface, void *handle,
				size_t size, uint64_t device, void **mapped)
{
	return ofi_hmem_open_handle(iface, handle, size, device, mapped);
}

static int ofi_ipc_default_close(enum fi_hmem_iface iface, void *mapped)
{
	return ofi_hmem_close_handle(iface, mapped);
}

int ofi_ipc_cache_open(struct ofi_ipc_cache **cache, size_t max_entries,
		       const struct ofi_ipc_cache_ops *ops)
{
	struct ofi_ipc_cache *c;
	int i;

	if (!cache || !max_entries)
		return -FI_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	if (ofi_mutex_init(&c->lock)) {
		free(c);
		return -FI_ENOMEM;
	}
	c->max_entries = max_entries;
	c->ops.open = ops && ops->open ? ops->open : ofi_ipc_default_open;
	c->ops.close = ops && ops->close ? ops->close : ofi_ipc_default_close;
	dlist_init(&c->lru);
	dlist_init(&c->stale);
	for (i = 0; i < OFI_IPC_BUCKETS; i++)
		dlist_init(&c->buckets[i]);
	*cache = c;
	return 0;
}

static uint64_t ofi_ipc_hash(const struct ofi_ipc_key *key)
{
	uint64_t h = 14695981039346656037ULL;
	const uint8_t *p = key->handle;
	size_t i;

	h = (h ^ key->peer_id) * 1099511628211ULL;
	h = (h ^ key->base) * 1099511628211ULL;
	h = (h ^ key->size) * 1099511628211ULL;
	h = (h ^ key->device) * 1099511628211ULL;
	h = (h ^ (uint64_t)key->iface) * 1099511628211ULL;
	for (i = 0; i < key->handle_size; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static bool ofi_ipc_key_eq(const struct ofi_ipc_key *a,
			   const struct ofi_ipc_key *b)
{
	return a->peer_id == b->peer_id && a->iface == b->iface &&
	       a->device == b->device && a->base == b->base &&
	       a->size == b->size && a->handle_size == b->handle_size &&
	       !memcmp(a->handle, b->handle, a->handle_size);
}

static struct ofi_ipc_entry *ofi_ipc_find(struct ofi_ipc_cache *c,
					  const struct ofi_ipc_key *key)
{
	struct dlist_entry *head, *item;
	struct ofi_ipc_entry *e;

	head = &c->buckets[ofi_ipc_hash(key) % OFI_IPC_BUCKETS];
	dlist_foreach(head, item) {
		e = container_of(item, struct ofi_ipc_entry, hash_entry);
		if (ofi_ipc_key_eq(&e->key, key))
			return e;
	}
	return NULL;
}

/* Unmaps and frees @e, taking it off whatever lists it is on. */
static void ofi_ipc_destroy(struct ofi_ipc_cache *c, struct ofi_ipc_entry *e)
{
	int ret;

	dlist_remove(&e->hash_entry);
	dlist_remove(&e->lru_entry);
	ret = c->ops.close(e->key.iface, e->mapped);
	if (ret)
		FI_WARN(&ofi_core_prov, FI_LOG_CORE,
			"ipc cache: unmapping %p: %s\n", e->mapped,
			fi_strerror(-ret));
	c->entries--;
	free(e);
}

static bool ofi_ipc_evict_one(struct ofi_ipc_cache *c)
{
	struct ofi_ipc_entry *e;

	if (dlist_empty(&c->lru))
		return false;
	e = container_of(c->lru.next, struct ofi_ipc_entry, lru_entry);
	FI_DBG(&ofi_core_prov, FI_LOG_CORE,
	       "ipc cache: evicting peer %llu base 0x%llx\n",
	       (unsigned long long)e->key.peer_id,
	       (unsigned long long)e->key.base);
	ofi_ipc_destroy(c, e);
	c->stats.evictions++;
	return true;
}

static int ofi_ipc_insert(struct ofi_ipc_cache *c,
			  const struct ofi_ipc_key *key,
			  struct ofi_ipc_entry **entry)
{
	struct ofi_ipc_entry *e;
	int ret;

	while (c->entries >= c->max_entries)
		if (!ofi_ipc_evict_one(c))
			return -FI_EAGAIN;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	e->key = *key;
	ret = c->ops.open(key->iface, e->key.handle, key->handle_size,
			  key->device, &e->mapped);
	if (ret) {
		free(e);
		return ret;
	}
	dlist_init(&e->lru_entry);
	dlist_insert_tail(&e->hash_entry,
			  &c->buckets[ofi_ipc_hash(key) % OFI_IPC_BUCKETS]);
	c->entries++;
	*entry = e;
	return 0;
}

int ofi_ipc_cache_get(struct ofi_ipc_cache *cache,
		      const struct ofi_ipc_key *key, void **mapped,
		      struct ofi_ipc_entry **entry)
{
	struct ofi_ipc_entry *e;
	int ret = 0;

	if (!cache || !key || !mapped || !entry ||
	    key->handle_size > OFI_HMEM_MAX_HANDLE_SIZE)
		return -FI_EINVAL;

	ofi_mutex_lock(&cache->lock);
	e = ofi_ipc_find(cache, key);
	if (e) {
		cache->stats.hits++;
		dlist_remove(&e->lru_entry);
	} else {
		cache->stats.misses++;
		ret = ofi_ipc_insert(cache, key, &e);
		if (ret)
			goto out;
	}
	e->refcnt++;
	*mapped = e->mapped;
	*entry = e;
out:
	ofi_mutex_unlock(&cache->lock);
	return ret;
}

void ofi_ipc_cache_put(struct ofi_ipc_cache *cache, struct ofi_ipc_entry *entry)
{
	ofi_mutex_lock(&cache->lock);
	if (--entry->refcnt == 0) {
		if (entry->stale)
			ofi_ipc_destroy(cache, entry);
		else
			dlist_insert_tail(&entry->lru_entry, &cache->lru);
	}
	ofi_mutex_unlock(&cache->lock);
}

void ofi_ipc_cache_remove_peer(struct ofi_ipc_cache *cache, uint64_t peer_id)
{
	struct dlist_entry *item, *tmp;
	struct ofi_ipc_entry *e;
	int i;

	ofi_mutex_lock(&cache->lock);
	for (i = 0; i < OFI_IPC_BUCKETS; i++) {
		dlist_foreach_safe(&cache->buckets[i], item, tmp) {
			e = container_of(item, struct ofi_ipc_entry,
					 hash_entry);
			if (e->key.peer_id != peer_id)
				continue;
			if (e->refcnt) {
				/* Unfindable now; unmapped by the last put. */
				dlist_remove(&e->hash_entry);
				dlist_insert_tail(&e->hash_entry,
						  &cache->stale);
				e->stale = true;
			} else {
				ofi_ipc_destroy(cache, e);
			}
		}
	}
	ofi_mutex_unlock(&cache->lock);
}

void ofi_ipc_cache_get_stats(struct ofi_ipc_cache *cache,
			     struct ofi_ipc_cache_stats *stats)
{
	ofi_mutex_lock(&cache->lock);
	*stats = cache->stats;
	stats->entries = cache->entries;
	ofi_mutex_unlock(&cache->lock);
}

void ofi_ipc_cache_close(struct ofi_ipc_cache *cache)
{
	struct dlist_entry *item, *tmp;
	struct ofi_ipc_entry *e;
	int i;

	if (!cache)
		return;
	if (!dlist_empty(&cache->stale))
		FI_WARN(&ofi_core_prov, FI_LOG_CORE,
			"ipc cache: closing with mappings still in use\n");
	dlist_foreach_safe(&cache->stale, item, tmp)
		ofi_ipc_destroy(cache, container_of(item, struct ofi_ipc_entry,
						    hash_entry));
	FI_DBG(&ofi_core_prov, FI_LOG_CORE,
	       "ipc cache: %llu hits, %llu misses, %llu evictions\n",
	       (unsigned long long)cache->stats.hits,
	       (unsigned long long)cache->stats.misses,
	       (unsigned long long)cache->stats.evictions);
	for (i = 0; i < OFI_IPC_BUCKETS; i++) {
		dlist_foreach_safe(&cache->buckets[i], item, tmp) {
			e = container_of(item, struct ofi_ipc_entry,
					 hash_entry);
			ofi_ipc_destroy(cache, e);
		}
	}
	ofi_mutex_destroy(&cache->lock);
	free(cache);
}
