/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_av_shared.c - named address vectors shared by the processes of a
 * host (FI_SHARED_AV, fi_av(3)'s name and FI_READ): the POSIX shared
 * memory object that mirrors a util_av's slots, for the providers that
 * ask for it (util_av_attr.shared).
 *
 * fi_av_open with a name and without FI_READ creates the object (or opens
 * one that exists: one writer at a time) and writes every insert and
 * removal through to it, at the slot index the local AV chose, so an
 * fi_addr means the same peer in every process. With FI_READ the object
 * must exist; the AV is read-only (inserts and removals answer
 * -FI_EOPNOTSUPP) and its slots follow the object's: util_av.c calls
 * ofi_av_shared_sync before it reads a slot, which rereads the records
 * when the writer's generation count moved.
 *
 * Layout: a header, then cap records of a fixed stride, each a used flag
 * and the address, then cap fi_addr_t: slot i's fi_addr (i) while it is
 * used, FI_ADDR_NOTAVAIL otherwise. That array is what fi_av_open
 * returns in map_addr (fi_av(3): the map_addr the provider used, when
 * the caller gave none), so a process reads the fi_addrs another one
 * inserted there, as applications written for Debian's sockets do. The capacity is fixed when the object is created
 * (fi_av_attr.count, or util_av's default): a shared AV does not grow, an
 * insert past it is -FI_ENOSPC. The writer stores a record's address,
 * then its flag, then bumps the generation (release order); a reader
 * that saw the generation change rescans, and scans again if it moved
 * during the scan. Everything read from the object is bounded by the
 * header the reader validated at open; the object is created 0600, so
 * only processes of our user share it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ofi_util.h"

#define AV_SHARED_MAGIC 0x5641464fU /* "OFAV" */

struct av_shared_hdr {
	uint32_t magic;
	uint32_t addrlen;
	uint32_t addr_format;
	uint32_t stride; /* bytes per record */
	uint64_t cap;
	uint64_t gen; /* changes after every insert and removal */
};

struct av_shared_rec {
	uint8_t used;
	uint8_t pad[7];
	uint8_t addr[];
};

struct ofi_av_shared {
	struct av_shared_hdr *hdr;
	size_t size; /* of the mapping */
	bool writer;
	bool created;  /* unlinked at close */
	uint64_t seen; /* generation the local slots match */
	char path[NAME_MAX];
};

static struct av_shared_rec *av_rec(struct ofi_av_shared *sh, size_t i)
{
	return (struct av_shared_rec *)((uint8_t *)(sh->hdr + 1) +
					i * sh->hdr->stride);
}

/* The fi_addr_t array after the records. */
static fi_addr_t *av_ids(struct ofi_av_shared *sh)
{
	return (fi_addr_t *)av_rec(sh, sh->hdr->cap);
}

/* The object's bytes for @cap records of @stride. */
static size_t av_shared_size(size_t cap, size_t stride)
{
	return sizeof(struct av_shared_hdr) +
	       cap * (stride + sizeof(fi_addr_t));
}

/* "/fi_av.<name>": a name with a '/' in it or too long is refused. */
static int av_shared_path(const char *name, char *path)
{
	if (!*name || strchr(name, '/') ||
	    (size_t)snprintf(path, NAME_MAX, "/fi_av.%s", name) >= NAME_MAX)
		return -FI_EINVAL;
	return 0;
}

static int av_shared_map(struct ofi_av_shared *sh, int fd, int prot)
{
	void *p = mmap(NULL, sh->size, prot, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	sh->hdr = p;
	return 0;
}

/* An existing object: its header must describe what @av stores. */
static int av_shared_attach(struct util_av *av, struct ofi_av_shared *sh,
			    int fd)
{
	struct av_shared_hdr h;
	struct stat st;
	size_t stride = ofi_align_up(
		sizeof(struct av_shared_rec) + av->prov_attr.addrlen, 8);

	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(h) ||
	    pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -FI_EINVAL;
	if (h.magic != AV_SHARED_MAGIC || h.addrlen != av->prov_attr.addrlen ||
	    h.addr_format != av->addr_format || h.stride != stride || !h.cap ||
	    h.cap > ((size_t)st.st_size - sizeof(h)) /
			    (stride + sizeof(fi_addr_t)))
		return -FI_EINVAL;
	sh->size = av_shared_size(h.cap, stride);
	return av_shared_map(sh, fd,
			     sh->writer ? PROT_READ | PROT_WRITE : PROT_READ);
}

static int av_shared_create(struct util_av *av, struct ofi_av_shared *sh,
			    int fd, size_t cap)
{
	struct av_shared_hdr *h;
	uint32_t stride = (uint32_t)ofi_align_up(
		sizeof(struct av_shared_rec) + av->prov_attr.addrlen, 8);
	size_t i;
	int ret;

	sh->size = av_shared_size(cap, stride);
	if (ftruncate(fd, (off_t)sh->size))
		return -errno;
	ret = av_shared_map(sh, fd, PROT_READ | PROT_WRITE);
	if (ret)
		return ret;
	h = sh->hdr;
	h->addrlen = (uint32_t)av->prov_attr.addrlen;
	h->addr_format = av->addr_format;
	h->stride = stride;
	h->cap = cap;
	h->gen = 1;
	for (i = 0; i < cap; i++)
		av_ids(sh)[i] = FI_ADDR_NOTAVAIL;
	__atomic_store_n(&h->magic, AV_SHARED_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

int ofi_av_shared_open(struct util_av *av, const char *name, bool readonly,
		       size_t cap)
{
	struct ofi_av_shared *sh = calloc(1, sizeof(*sh));
	int fd, ret;

	if (!sh)
		return -FI_ENOMEM;
	ret = av_shared_path(name, sh->path);
	if (ret)
		goto err;
	sh->writer = !readonly;
	if (readonly) {
		fd = shm_open(sh->path, O_RDONLY, 0);
	} else {
		fd = shm_open(sh->path, O_RDWR | O_CREAT | O_EXCL, 0600);
		sh->created = fd >= 0;
		if (fd < 0 && errno == EEXIST)
			fd = shm_open(sh->path, O_RDWR, 0);
	}
	if (fd < 0) {
		ret = errno == ENOENT ? -FI_ENOENT : -errno;
		goto err;
	}
	ret = sh->created ? av_shared_create(av, sh, fd, cap)
			  : av_shared_attach(av, sh, fd);
	close(fd);
	if (ret) {
		if (sh->created)
			shm_unlink(sh->path);
		goto err;
	}
	av->shared = sh;
	return 0;
err:
	free(sh);
	return ret;
}

void ofi_av_shared_close(struct util_av *av)
{
	struct ofi_av_shared *sh = av->shared;

	if (!sh)
		return;
	munmap(sh->hdr, sh->size);
	if (sh->created)
		shm_unlink(sh->path);
	free(sh);
	av->shared = NULL;
}

size_t ofi_av_shared_cap(const struct util_av *av)
{
	return av->shared->hdr->cap;
}

void *ofi_av_shared_map_addr(const struct util_av *av)
{
	return av_ids(av->shared);
}

bool ofi_av_shared_readonly(const struct util_av *av)
{
	return av->shared && !av->shared->writer;
}

void ofi_av_shared_set(struct util_av *av, size_t i, const void *addr)
{
	struct ofi_av_shared *sh = av->shared;
	struct av_shared_rec *r = av_rec(sh, i);

	uint64_t gen;

	if (addr)
		memcpy(r->addr, addr, sh->hdr->addrlen);
	__atomic_store_n(&av_ids(sh)[i], addr ? (fi_addr_t)i : FI_ADDR_NOTAVAIL,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&r->used, addr != NULL, __ATOMIC_RELEASE);
	gen = __atomic_add_fetch(&sh->hdr->gen, 1, __ATOMIC_ACQ_REL);
	/* the writer's slots are the object's: no rescan for its own */
	if (sh->seen == gen - 1)
		sh->seen = gen;
}

/*
 * Reader: whether the object changed since the local slots were synced
 * (*@gen to pass to ofi_av_shared_synced once they are).
 */
bool ofi_av_shared_changed(const struct util_av *av, uint64_t *gen)
{
	struct ofi_av_shared *sh = av->shared;

	*gen = __atomic_load_n(&sh->hdr->gen, __ATOMIC_ACQUIRE);
	return *gen != sh->seen;
}

/* Record @i into @addr; false when unused. */
bool ofi_av_shared_get(const struct util_av *av, size_t i, void *addr)
{
	struct ofi_av_shared *sh = av->shared;
	struct av_shared_rec *r = av_rec(sh, i);

	if (!__atomic_load_n(&r->used, __ATOMIC_ACQUIRE))
		return false;
	memcpy(addr, r->addr, sh->hdr->addrlen);
	return true;
}

/* The scan that started at @gen is over: consistent if nothing moved. */
void ofi_av_shared_synced(struct util_av *av, uint64_t gen)
{
	struct ofi_av_shared *sh = av->shared;

	if (__atomic_load_n(&sh->hdr->gen, __ATOMIC_ACQUIRE) == gen)
		sh->seen = gen;
}
