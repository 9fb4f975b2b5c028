/*
 * shm_region.c - the shared region each shm endpoint owns: creation (POSIX
 * shm, mode 0600, named from the endpoint's address), layout of the rings
 * and pools, mapping a peer's region with full validation, pid liveness,
 * the second name a closed endpoint's region lingers under while receivers
 * still have to read it, reclaiming regions left behind by dead processes,
 * and the probe for Cross Memory Attach (process_vm_readv).
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
bool shm_pid_alive(pid_t pid)
{
	char path[32], buf[256], *p;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return false;
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

struct shm_layout {
	size_t cmd, resp, inject, sar, peers, size;
};

static size_t ring_bytes(size_t slots, size_t slot_size)
{
	return sizeof(struct shm_ring) + slots * slot_size;
}

static void shm_layout(struct shm_layout *l)
{
	size_t off = ofi_align_up(sizeof(struct shm_region), OFI_CACHELINE);

	l->cmd = off;
	off = ofi_align_up(off + ring_bytes(SHM_CMD_SLOTS, SHM_CMD_SIZE),
			   OFI_CACHELINE);
	l->resp = off;
	off = ofi_align_up(
		off + ring_bytes(SHM_RESP_SLOTS, sizeof(struct shm_resp)),
		4096);
	l->inject = off;
	off += SHM_INJECT_BUFS * sizeof(struct shm_inject_buf);
	off = ofi_align_up(off, 4096);
	l->sar = off;
	off += SHM_SAR_SEGS * sizeof(struct shm_sar_seg);
	l->peers = off;
	off += SHM_MAX_PEERS * sizeof(struct shm_peer_slot);
	l->size = ofi_align_up(off, 4096);
}

static void ring_init(struct shm_ring *r, uint32_t slots, uint32_t slot_size)
{
	uint32_t i;

	atomic_store(&r->tail, 0);
	r->head = 0;
	r->mask = slots - 1;
	r->slot_size = slot_size;
	r->slots_off = sizeof(*r);
	for (i = 0; i < slots; i++)
		atomic_store((_Atomic uint64_t *)shm_ring_slot(r, i), i);
}

int shm_region_create(const char *name, bool cma_ok, struct shm_region **out)
{
	struct shm_layout l;
	struct shm_region *rg;
	char obj[SHM_NAME_MAX + 16];
	int fd, ret, tries = 0;

	ret = shm_name_valid(name) ?: shm_obj_name(name, obj, sizeof(obj));
	if (ret)
		return ret;
	shm_layout(&l);
retry:
	fd = shm_open(obj, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 && errno == EEXIST && !tries++) {
		/* A dead owner's leftover is ours to take over. */
		shm_region_reclaim();
		goto retry;
	}
	if (fd < 0)
		return errno == EEXIST ? -FI_EADDRINUSE : -errno;
	if (ftruncate(fd, l.size)) {
		ret = -errno;
		goto err;
	}
	rg = mmap(NULL, l.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (rg == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
	close(fd);
	rg->magic = SHM_MAGIC;
	rg->version = SHM_VERSION;
	rg->pid = getpid();
	rg->size = l.size;
	rg->cma_ok = cma_ok;
	snprintf(rg->name, sizeof(rg->name), "%s", name);
	rg->cmd_off = l.cmd;
	rg->resp_off = l.resp;
	rg->inject_off = l.inject;
	rg->sar_off = l.sar;
	rg->peers_off = l.peers;
	ring_init(shm_cmd_ring(rg), SHM_CMD_SLOTS, SHM_CMD_SIZE);
	ring_init(shm_resp_ring(rg), SHM_RESP_SLOTS, sizeof(struct shm_resp));
	atomic_store_explicit(&rg->ready, 1, memory_order_release);
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
	munmap(rg, rg->size);
}

/* Everything a peer's header claims is checked before it is used. */
static int region_check(struct shm_region *rg, size_t size)
{
	struct shm_layout l;

	shm_layout(&l);
	if (rg->magic != SHM_MAGIC || rg->version != SHM_VERSION)
		return -FI_EINVAL;
	if (!atomic_load_explicit(&rg->ready, memory_order_acquire))
		return -FI_EAGAIN;
	if (rg->size != size || size != l.size || rg->cmd_off != l.cmd ||
	    rg->resp_off != l.resp || rg->inject_off != l.inject ||
	    rg->sar_off != l.sar || rg->peers_off != l.peers)
		return -FI_EINVAL;
	if (shm_cmd_ring(rg)->mask != SHM_CMD_SLOTS - 1 ||
	    shm_cmd_ring(rg)->slot_size != SHM_CMD_SIZE ||
	    shm_cmd_ring(rg)->slots_off != sizeof(struct shm_ring) ||
	    shm_resp_ring(rg)->mask != SHM_RESP_SLOTS - 1 ||
	    shm_resp_ring(rg)->slot_size != sizeof(struct shm_resp) ||
	    shm_resp_ring(rg)->slots_off != sizeof(struct shm_ring))
		return -FI_EINVAL;
	return 0;
}

static int region_open(const char *obj, int flags, struct shm_region **out)
{
	struct shm_region *rg;
	struct stat st;
	int fd, ret, prot = PROT_READ;

	fd = shm_open(obj, flags, 0);
	if (fd < 0)
		return errno == ENOENT ? -FI_EAGAIN : -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if ((size_t)st.st_size < sizeof(struct shm_region)) {
		ret = -FI_EAGAIN;
		goto out;
	}
	if ((flags & O_ACCMODE) == O_RDWR)
		prot |= PROT_WRITE;
	rg = mmap(NULL, st.st_size, prot, MAP_SHARED, fd, 0);
	if (rg == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	ret = region_check(rg, st.st_size);
	if (ret) {
		munmap(rg, st.st_size);
		goto out;
	}
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
	ret = region_open(obj, O_RDWR, out);
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
	if (rg)
		munmap(rg, rg->size);
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
	ret = region_open(path, O_RDWR, out);
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

static bool shm_any_alive(const struct shm_region *rg)
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
	struct shm_region *rg;
	struct stat st;
	size_t len;
	bool stale = false;
	int fd;

	fd = shm_open(obj, O_RDONLY, 0);
	if (fd < 0)
		return false;
	/* Older, smaller headers start with magic, version and pid too. */
	len = fstat(fd, &st) ? 0 : OFI_MIN((size_t)st.st_size, sizeof(*rg));
	rg = len >= offsetof(struct shm_region, size)
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
 * Removes regions whose owner died without closing them, and those of
 * closed endpoints whose receivers all died before reading them.
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
		if (strncmp(de->d_name, SHM_OBJ_PREFIX,
			    strlen(SHM_OBJ_PREFIX)) &&
		    strncmp(de->d_name, SHM_LINGER_PREFIX,
			    strlen(SHM_LINGER_PREFIX)))
			continue;
		snprintf(obj, sizeof(obj), "/%s", de->d_name);
		if (region_stale(obj))
			shm_unlink(obj);
	}
	closedir(dir);
}
