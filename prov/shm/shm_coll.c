/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_coll.c - what shm lends the collective engine (struct
 * ofi_coll_shared, ofi_coll.h): each group region of an endpoint is a
 * shared memory object named from the endpoint's region name and the
 * group's key, which the group's other members map, so the engine's
 * small transfers between members are stores, not ring commands.
 *
 * The object is created before the engine registers the region and
 * removed by name once every peer's hello landed (each maps first, then
 * says hello), or at the group's close. A peer's object is mapped only
 * if it is a regular file of our uid, mode 0600, of exactly the length
 * the engine computed, as shm's regions are (shm_region.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ofi_coll.h"
#include "shm.h"

#define SHM_COLL_OBJ_MAX (SHM_NAME_MAX + 32)

/* The object of region @name's group @key: 0, or -1 for a bad name. */
static int shm_coll_obj(const char *name, uint64_t key, char *obj, size_t len)
{
	size_t plen = strlen(SHM_ADDR_PREFIX), i;
	int n;

	if (strncmp(name, SHM_ADDR_PREFIX, plen))
		return -1;
	n = snprintf(obj, len, "/" SHM_COLL_PREFIX "%s_%016" PRIx64,
		     name + plen, key);
	if (n < 0 || (size_t)n >= len)
		return -1;
	for (i = 1; obj[i]; i++) {
		if (obj[i] == '/')
			obj[i] = '_';
	}
	return 0;
}

static void *shm_coll_create(struct util_ep *util, uint64_t key, size_t len)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);
	char obj[SHM_COLL_OBJ_MAX];
	void *p;
	int fd;

	if (shm_coll_obj(ep->name, key, obj, sizeof(obj)))
		return NULL;
	fd = shm_open(obj, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* Our region's name is ours alone: a dead owner's leftover */
		shm_unlink(obj);
		fd = shm_open(obj, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW,
			      0600);
	}
	if (fd < 0)
		return NULL;
	p = MAP_FAILED;
	if (!fchmod(fd, 0600) && !ftruncate(fd, (off_t)len))
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		return p;
	shm_unlink(obj);
	return NULL;
}

static void shm_coll_unlink(struct util_ep *util, uint64_t key)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);
	char obj[SHM_COLL_OBJ_MAX];

	if (!shm_coll_obj(ep->name, key, obj, sizeof(obj)))
		shm_unlink(obj);
}

static void *shm_coll_map(struct util_ep *util, fi_addr_t addr, uint64_t key,
			  size_t len)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);
	char name[SHM_NAME_MAX], obj[SHM_COLL_OBJ_MAX];
	struct shm_tx_peer *p;
	struct stat st;
	void *m = MAP_FAILED;
	int fd, ret;

	shm_ep_lock(ep);
	ret = shm_tx_peer_get(ep, addr, &p);
	if (!ret)
		snprintf(name, sizeof(name), "%s", p->rg->name);
	shm_ep_unlock(ep);
	if (ret || shm_coll_obj(name, key, obj, sizeof(obj)))
		return NULL;
	fd = shm_open(obj, O_RDWR | O_NOFOLLOW, 0);
	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    (st.st_mode & 07777) == 0600 && (size_t)st.st_size == len)
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

static void shm_coll_unmap(void *p, size_t len)
{
	munmap(p, len);
}

static void shm_coll_wake(struct util_ep *util, fi_addr_t addr)
{
	struct shm_ep *ep = container_of(util, struct shm_ep, util);
	struct shm_tx_peer *p;

	shm_ep_lock(ep);
	if (!shm_tx_peer_get(ep, addr, &p))
		shm_wake_peer(ep, p->rg);
	shm_ep_unlock(ep);
}

const struct ofi_coll_shared shm_coll_shared = {
	.create = shm_coll_create,
	.unlink = shm_coll_unlink,
	.map = shm_coll_map,
	.unmap = shm_coll_unmap,
	.wake = shm_coll_wake,
};
