/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_region.c - the shared region each shm endpoint owns: creation (POSIX
 * shm, mode 0600, named from the endpoint's address, layout fixed by
 * shm_wire.h), mapping a peer's region (ours, 0600, the right size, the
 * right magic and version; a private handle made of it), which pid the
 * kernel confirms as its owner for Cross Memory Attach, pid liveness,
 * the second name a closed endpoint's region lingers under while receivers
 * still have to read it, reclaiming regions left behind by dead processes,
 * and the probe for Cross Memory Attach (process_vm_readv).
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

#define SHM_OBJ_PREFIX	  "ofi_shm_"
#define SHM_LINGER_PREFIX "ofi_shml_" /* no address maps to it */
#define SHM_DIR		  "/dev/shm"

/* Address "fi_shm://X" lives in /dev/shm/ofi_shm_X ('/' is not allowed). */
static int shm_obj_name(const char *name, char *obj, size_t len)
{
	const char *p = name + strlen(SHM_ADDR_PREFIX);
	size_t n;

	n = snprintf(obj, len, "/" SHM_OBJ_PREFIX "%s", p);
	if (n >= len)
		return -FI_EINVAL;
	for (p = obj + 1; *p; p++) {
		if (*p == '/')
			obj[p - obj] = '_';
	}
	return 0;
}

int shm_name_valid(const char *name)
{
	size_t len;

	if (!name)
		return -FI_EINVAL;
	len = strnlen(name, SHM_NAME_MAX);
	if (len >= SHM_NAME_MAX || len <= strlen(SHM_ADDR_PREFIX))
		return -FI_EINVAL;
	if (strncmp(name, SHM_ADDR_PREFIX, strlen(SHM_ADDR_PREFIX)))
		return -FI_EINVAL;
	return 0;
}

/*
 * A zombie still answers kill(pid, 0) but will never read its rings again:
 * its state in /proc/<pid>/stat ('Z' or 'X', after the command name in
 * parentheses) says so. Only slow paths ask.
 */
/*
 * A process found alive is taken as alive for SHM_ALIVE_CACHE_MS: the
 * full check costs four system calls and a /proc read, and progress asks
 * for every queued transfer, which with many messages in flight ate more
 * than half the CPU of a windowed benchmark. Death is detected at most
 * that much later; a dead answer is never cached (callers remember it).
 * Entries pack pid and a millisecond stamp in one word, so concurrent
 * endpoints need no lock; a torn race only costs a real check.
 */
#define SHM_ALIVE_CACHE_MS   50
#define SHM_ALIVE_CACHE_SIZE 64

static _Atomic uint64_t shm_alive_cache[SHM_ALIVE_CACHE_SIZE];

static bool shm_pid_alive_slow(pid_t pid)
{
	char path[32], buf[256], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

bool shm_pid_alive(pid_t pid)
{
	_Atomic uint64_t *e;
	uint32_t now;
	uint64_t v;

	if (pid <= 0)
		return false;
	e = &shm_alive_cache[(uint32_t)pid % SHM_ALIVE_CACHE_SIZE];
	now = (uint32_t)ofi_gettime_ms();
	v = atomic_load_explicit(e, memory_order_relaxed);
	if ((uint32_t)(v >> 32) == (uint32_t)pid &&
	    now - (uint32_t)v < SHM_ALIVE_CACHE_MS)
		return true;
	if (!shm_pid_alive_slow(pid))
		return false;
	atomic_store_explicit(e, (uint64_t)(uint32_t)pid << 32 | now,
			      memory_order_relaxed);
	return true;
}

/* The owner's pid from a name "fi_shm://<pid>:<n>"; 0 for other names. */
static pid_t shm_name_pid(const char *name)
{
	const char *p = name + strlen(SHM_ADDR_PREFIX);
	char *end;
	long pid;

	pid = strtol(p, &end, 10);
	return (end != p && *end == ':' && pid > 0) ? (pid_t)pid : 0;
}

bool shm_cma_probe(void)
{
	char src[8] = "shmprob", dst[8] = {0};
	struct iovec l = {dst, sizeof(dst)}, r = {src, sizeof(src)};

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == sizeof(src) &&
	       !memcmp(src, dst, sizeof(src));
}

/* A private handle for the mapping @map; NULL when out of memory. */
static struct shm_region *region_handle(struct shm_layout *map, int fd)
{
	struct shm_region *rg = calloc(1, sizeof(*rg));

	if (!rg)
		return NULL;
	rg->map = map;
	rg->fd = fd;
	shm_region_handles(rg);
	return rg;
}

int shm_region_create(const char *name, bool cma_ok, struct shm_region **out)
{
	struct shm_layout *map;
	struct shm_region *rg;
	char obj[SHM_NAME_MAX + 16];
	int fd, ret, tries = 0;

	ret = shm_name_valid(name) ?: shm_obj_name(name, obj, sizeof(obj));
	if (ret)
		return ret;
retry:
	fd = shm_open(obj, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 && errno == EEXIST && !tries++) {
		/* A dead owner's leftover is ours to take over. */
		shm_region_reclaim();
		goto retry;
	}
	if (fd < 0)
		return errno == EEXIST ? -FI_EADDRINUSE : -errno;
	/* Peers open only 0600 regions: a umask must not make it less. */
	if (fchmod(fd, 0600) || ftruncate(fd, SHM_REGION_SIZE)) {
		ret = -errno;
		goto err;
	}
	map = mmap(NULL, SHM_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
#ifdef MADV_POPULATE_WRITE
	/* The rings' sequence words are written below, one page fault per
	 * page otherwise: one call maps them all (a kernel before 5.14
	 * refuses the advice, and the faults happen as before). */
	(void)madvise(map, offsetof(struct shm_layout, inject),
		      MADV_POPULATE_WRITE);
#endif
	rg = region_handle(map, fd);
	if (!rg) {
		munmap(map, SHM_REGION_SIZE);
		ret = -FI_ENOMEM;
		goto err;
	}
	map->hdr.magic = SHM_MAGIC;
	map->hdr.version = SHM_VERSION;
	map->hdr.pid = getpid();
	map->hdr.size = SHM_REGION_SIZE;
	map->hdr.cma_ok = cma_ok;
	snprintf(map->hdr.name, sizeof(map->hdr.name), "%s", name);
	shm_ring_format(&rg->cmd);
	shm_ring_format(&rg->resp);
	snprintf(rg->name, sizeof(rg->name), "%s", name);
	rg->pid = getpid();
	rg->cma_pid = getpid();
	rg->cma_ok = cma_ok;
	atomic_store_explicit(&map->hdr.ready, 1, memory_order_release);
	*out = rg;
	return 0;
err:
	close(fd);
	shm_unlink(obj);
	return ret;
}

void shm_region_destroy(struct shm_region *rg)
{
	char obj[SHM_NAME_MAX + 16];

	if (!rg)
		return;
	if (!shm_obj_name(rg->name, obj, sizeof(obj)))
		shm_unlink(obj);
	shm_region_unmap(rg);
}

/*
 * A region we may map: a regular file of our uid, mode 0600, of exactly
 * the size our layout has. Anything else (another user's object, a file
 * a peer truncated or grew) is refused before it is mapped.
 */
static int region_stat_ok(const struct stat *st)
{
	if (!S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
	    (st->st_mode & 07777) != 0600)
		return -FI_EACCES;
	if (st->st_size == 0)
		return -FI_EAGAIN; /* being created */
	return (size_t)st->st_size == SHM_REGION_SIZE ? 0 : -FI_EINVAL;
}

/* The header of a peer's region: checked once, then copied out. */
static int region_check(struct shm_layout *map, struct shm_region *rg)
{
	if (map->hdr.magic != SHM_MAGIC || map->hdr.version != SHM_VERSION)
		return -FI_EINVAL;
	if (!atomic_load_explicit(&map->hdr.ready, memory_order_acquire))
		return -FI_EAGAIN;
	if (!shm_copy_str(rg->name, map->hdr.name, sizeof(rg->name)))
		return -FI_EINVAL;
	rg->pid = map->hdr.pid > 0 ? map->hdr.pid : 0;
	rg->cma_ok = map->hdr.cma_ok == 1;
	return 0;
}

static int region_open(const char *obj, struct shm_region **out)
{
	struct shm_layout *map;
	struct shm_region *rg;
	struct stat st;
	int fd, ret;

	fd = shm_open(obj, O_RDWR | O_NOFOLLOW, 0);
	if (fd < 0)
		return errno == ENOENT ? -FI_EAGAIN : -errno;
	ret = fstat(fd, &st) ? -errno : region_stat_ok(&st);
	if (ret)
		goto out;
	map = mmap(NULL, SHM_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
#ifdef MADV_POPULATE_WRITE
	/* Our commands go to its ring's slots, one page fault per eight
	 * of them otherwise, in the first round of every connection. */
	(void)madvise(map, offsetof(struct shm_layout, inject),
		      MADV_POPULATE_WRITE);
#endif
	rg = region_handle(map, -1);
	ret = rg ? region_check(map, rg) : -FI_ENOMEM;
	if (ret) {
		free(rg);
		munmap(map, SHM_REGION_SIZE);
		goto out;
	}
	rg->dev = st.st_dev;
	rg->ino = st.st_ino;
	*out = rg;
out:
	close(fd);
	return ret;
}

int shm_region_map(const char *name, struct shm_region **out)
{
	char obj[SHM_NAME_MAX + 16];
	int ret;

	ret = shm_name_valid(name) ?: shm_obj_name(name, obj, sizeof(obj));
	if (ret)
		return ret;
	ret = region_open(obj, out);
	/*
	 * No region yet is worth a retry only while its owner may still
	 * create it: a region that is gone with its process never returns.
	 */
	if (ret == -FI_EAGAIN && shm_name_pid(name) &&
	    !shm_pid_alive(shm_name_pid(name)))
		return -FI_EIO;
	if (ret)
		return ret;
	if (strncmp((*out)->name, name, SHM_NAME_MAX)) {
		shm_region_unmap(*out);
		return -FI_EINVAL;
	}
	return 0;
}

void shm_region_unmap(struct shm_region *rg)
{
	if (!rg)
		return;
	munmap(rg->map, SHM_REGION_SIZE);
	if (rg->fd >= 0)
		close(rg->fd);
	free(rg);
}

/*
 * Whether process @pid has the file @dev/@ino open. The owner of a region
 * keeps its descriptor open for the endpoint's life, peers close theirs
 * once mapped, so this tells the owner apart (and its forked children,
 * which share its memory image anyway).
 */
static bool shm_pid_has_file(pid_t pid, dev_t dev, ino_t ino)
{
	char path[32];
	struct dirent *de;
	struct stat st;
	bool found = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!found && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		found = !fstatat(dirfd(dir), de->d_name, &st, 0) &&
			st.st_dev == dev && st.st_ino == ino;
	}
	closedir(dir);
	return found;
}

/*
 * The pid process_vm_readv/writev may use for the owner of @rg, or 0: no
 * CMA with it then. The pid in the header is anyone's word (every process
 * of our uid can write it), and CMA to a pid a peer picked would let it
 * aim our reads and writes at a third process. So the kernel decides:
 * the claimed pid must hold the region's file open right now, which only
 * its owner does (see shm_pid_has_file). Why not SO_PEERCRED: it needs a
 * socket and a handshake per peer for the same answer; the descriptor
 * table is the kernel's record of who created and keeps the region.
 *
 * Limits, stated: the answer holds when asked (a pid reused after the
 * owner died would fail the check at the next mapping, not between), and
 * the command ring carries no authenticated sender, so a process of our
 * uid that can write our ring can still name another endpoint owner as a
 * command's sender; what it can never do is point CMA at a process that
 * does not own a shm region, and the kernel's ptrace check still applies.
 */
pid_t shm_region_cma_pid(struct shm_region *rg)
{
	if (rg->cma_pid || !rg->pid || !rg->cma_ok)
		return rg->cma_pid;
	if (shm_pid_has_file(rg->pid, rg->dev, rg->ino))
		rg->cma_pid = rg->pid;
	else
		rg->cma_ok = false; /* asked once per mapping */
	return rg->cma_pid;
}

/* A linger name comes from a peer's slot: it must be one we make. */
static bool shm_linger_valid(const char *obj)
{
	size_t len = strnlen(obj, SHM_LINGER_NAME_MAX);

	return len < SHM_LINGER_NAME_MAX &&
	       !strncmp(obj, "/" SHM_LINGER_PREFIX,
			strlen("/" SHM_LINGER_PREFIX)) &&
	       !strchr(obj + 1, '/');
}

/*
 * The object a closed sender @name lingers as: @obj from its slot, or its
 * own name where @obj is empty (it could not make a second one).
 */
static int shm_linger_obj(const char *obj, const char *name, char *out,
			  size_t len)
{
	int ret;

	if (*obj) {
		if (!shm_linger_valid(obj))
			return -FI_EINVAL;
		snprintf(out, len, "%s", obj);
		return 0;
	}
	ret = shm_name_valid(name);
	return ret ? ret : shm_obj_name(name, out, len);
}

int shm_region_map_linger(const char *obj, const char *name,
			  struct shm_region **out)
{
	char path[SHM_NAME_MAX + 16];
	int ret;

	ret = shm_linger_obj(obj, name, path, sizeof(path));
	if (ret)
		return ret;
	ret = region_open(path, out);
	if (ret)
		return ret == -FI_EAGAIN ? -FI_EIO : ret;
	if (strncmp((*out)->name, name, SHM_NAME_MAX)) {
		shm_region_unmap(*out);
		return -FI_EINVAL;
	}
	return 0;
}

/*
 * Gives our region a second, unique name to linger under after close, so
 * our address is free for a new endpoint at once. 0 with @obj set to it;
 * an error with @obj empty: we linger under our address then.
 */
int shm_region_linger(struct shm_region *rg, char *obj, size_t len)
{
	static _Atomic uint32_t counter;
	char own[SHM_NAME_MAX + 16], from[SHM_NAME_MAX + 32], to[64];
	char path[sizeof(to) + sizeof(SHM_DIR)];
	struct timespec ts;
	int ret;

	*obj = '\0';
	ret = shm_obj_name(rg->name, own, sizeof(own));
	if (ret)
		return ret;
	/* The clock keeps a recycled pid from meeting its old names. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ret = snprintf(to, sizeof(to), "/" SHM_LINGER_PREFIX "%d_%x_%x",
		       (int)getpid(), atomic_fetch_add(&counter, 1),
		       (unsigned)ts.tv_nsec);
	if (ret < 0 || (size_t)ret >= len || ret >= SHM_LINGER_NAME_MAX)
		return -FI_EINVAL;
	snprintf(from, sizeof(from), SHM_DIR "%s", own);
	snprintf(path, sizeof(path), SHM_DIR "%s", to);
	if (link(from, path))
		return -errno;
	snprintf(obj, len, "%s", to);
	return 0;
}

void shm_region_unlink_linger(const char *obj, const char *name)
{
	char path[SHM_NAME_MAX + 16];

	if (!shm_linger_obj(obj, name, path, sizeof(path)))
		shm_unlink(path);
}

static bool shm_any_alive(const struct shm_hdr *rg)
{
	uint32_t i, n = OFI_MIN(rg->linger_cnt, SHM_MAX_PEERS);

	for (i = 0; i < n; i++) {
		if (shm_pid_alive(rg->linger_pid[i]))
			return true;
	}
	return false;
}

/*
 * Whether a region is left over, from its header alone (regions of other
 * layouts or versions are judged by their owner's pid): its owner died
 * without closing it, or it closed and every receiver that still had to
 * read it is gone. Not ours: never.
 */
static bool region_stale(const char *obj)
{
	struct shm_hdr *rg;
	struct stat st;
	size_t len = 0;
	bool stale = false;
	int fd;

	fd = shm_open(obj, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return false;
	/* Older, smaller headers start with magic, version and pid too. */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		len = OFI_MIN((size_t)st.st_size, sizeof(*rg));
	rg = len >= offsetof(struct shm_hdr, size)
		     ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0)
		     : MAP_FAILED;
	close(fd);
	if (rg == MAP_FAILED)
		return false;
	if (rg->magic != SHM_MAGIC || rg->pid <= 0)
		stale = false;
	else if (len == sizeof(*rg) && rg->version == SHM_VERSION && rg->gone)
		stale = !atomic_load(&rg->linger) || !shm_any_alive(rg);
	else
		stale = !shm_pid_alive(rg->pid);
	munmap(rg, len);
	return stale;
}

/*
 * Whether a group object of the collective engine (shm_coll.c,
 * "ofi_coll_X_KEY") outlived the region "ofi_shm_X" of the endpoint that
 * made it: the region exists for as long as the endpoint does, so an
 * object without one was left by an owner that died.
 */
static bool coll_obj_stale(const char *d_name)
{
	const char *x = d_name + strlen(SHM_COLL_PREFIX);
	size_t xlen = strlen(x), klen = strlen("_0123456789abcdef");
	char region[sizeof(SHM_DIR) + NAME_MAX + 1];
	struct stat st;
	int n;

	if (xlen <= klen || x[xlen - klen] != '_')
		return false;
	n = snprintf(region, sizeof(region), SHM_DIR "/" SHM_OBJ_PREFIX "%.*s",
		     (int)(xlen - klen), x);
	if (n < 0 || (size_t)n >= sizeof(region))
		return false;
	if (!lstat(region, &st) || errno != ENOENT)
		return false;
	snprintf(region, sizeof(region), SHM_DIR "/%s", d_name);
	return !lstat(region, &st) && S_ISREG(st.st_mode) &&
	       st.st_uid == geteuid();
}

static bool has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/*
 * Removes regions whose owner died without closing them, those of
 * closed endpoints whose receivers all died before reading them, and
 * then the collective engine's group objects of endpoints that are gone.
 */
void shm_region_reclaim(void)
{
	char obj[NAME_MAX + 2];
	struct dirent *de;
	DIR *dir;

	dir = opendir(SHM_DIR);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		if (!has_prefix(de->d_name, SHM_OBJ_PREFIX) &&
		    !has_prefix(de->d_name, SHM_LINGER_PREFIX))
			continue;
		snprintf(obj, sizeof(obj), "/%s", de->d_name);
		if (region_stale(obj))
			shm_unlink(obj);
	}
	rewinddir(dir);
	while ((de = readdir(dir))) {
		if (!has_prefix(de->d_name, SHM_COLL_PREFIX) ||
		    !coll_obj_stale(de->d_name))
			continue;
		snprintf(obj, sizeof(obj), "/%s", de->d_name);
		shm_unlink(obj);
	}
	closedir(dir);
}
