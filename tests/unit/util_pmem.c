/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_pmem.c - unit tests of persistent registrations (FI_RMA_PMEM) and
 * ofi_mr_map_persist: a MAP_SHARED mapping of a file in /tmp is
 * registered, written through the mapping and persisted; the test hook of
 * util_pmem.c shows which range went to libpmem (pmem_msync on whole
 * pages, pmem_persist on the exact range when the memory is real pmem,
 * forced through PMEM_IS_PMEM_FORCE in a re-executed child); bad keys,
 * ranges and non-persistent registrations answer -FI_EACCES; unsupported
 * registrations answer -FI_EBADFLAGS. Without libpmem only the refusal is
 * tested.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "util_common.h"

#define REC_MAX 8

static struct {
	int calls;
	enum ofi_pmem_kind kind[REC_MAX];
	const void *addr[REC_MAX];
	size_t len[REC_MAX];
} rec;

static void record(enum ofi_pmem_kind kind, const void *addr, size_t len)
{
	if (rec.calls < REC_MAX) {
		rec.kind[rec.calls] = kind;
		rec.addr[rec.calls] = addr;
		rec.len[rec.calls] = len;
	}
	rec.calls++;
}

static size_t page;

/* A MAP_SHARED file mapping; *rfd reads the file through its own fd. */
static char *map_file(size_t size, int *rfd)
{
	char path[] = "/tmp/ofi_pmem_XXXXXX";
	char *p;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	*rfd = open(path, O_RDONLY);
	assert_true(*rfd >= 0);
	unlink(path);
	close(fd);
	return p;
}

static int need_pmem(void)
{
	if (HAVE_LIBPMEM)
		return 0;
	print_message("built without libpmem: persistence not tested\n");
	skip();
	return 1;
}

static void test_reg_refused(void **state)
{
	struct util_env env;
	struct fid_domain *dom;
	struct fid_mr *mr;
	struct fi_mr_attr attr = {0};
	struct iovec iov;
	struct ofi_mr_map map;
	char buf[64];
	uint64_t key;

	/* No FI_RMA_PMEM capability: the flag is not supported. */
	util_env_open(&env, FI_VERSION(1, 17), FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
		      FI_RMA | FI_HMEM, FI_FORMAT_UNSPEC);
	dom = &env.domain->domain_fid;
	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0,
				   FI_RMA_PMEM, &mr, NULL),
			 -FI_EBADFLAGS);
	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf),
				   FI_REMOTE_WRITE | FI_RMA_PMEM, 0, 0, 0, &mr,
				   NULL),
			 -FI_EBADFLAGS);
	util_env_close(&env);

	util_env_open(&env, FI_VERSION(1, 17), FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
		      FI_RMA | FI_HMEM | FI_RMA_PMEM, FI_FORMAT_UNSPEC);
	dom = &env.domain->domain_fid;
	/* Device memory is not persisted here (yet). */
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = FI_REMOTE_WRITE;
	attr.iface = FI_HMEM_ZE;
	assert_int_equal(fi_mr_regattr(dom, &attr, FI_RMA_PMEM, &mr),
			 -FI_EBADFLAGS);
	/* With the capability, only a build without libpmem refuses. */
	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0,
				   FI_RMA_PMEM, &mr, NULL),
			 HAVE_LIBPMEM ? 0 : -FI_EBADFLAGS);
	if (HAVE_LIBPMEM)
		assert_int_equal(fi_close(&mr->fid), 0);
	util_env_close(&env);

	/* The map itself refuses too when it cannot honour the flag. */
	ofi_mr_map_init(&util_test_prov, FI_MR_PROV_KEY, &map);
	attr.iface = FI_HMEM_SYSTEM;
	assert_int_equal(
		ofi_mr_map_insert(&map, &attr, FI_RMA_PMEM, &key, NULL),
		HAVE_LIBPMEM ? 0 : -FI_EBADFLAGS);
	if (HAVE_LIBPMEM)
		assert_int_equal(ofi_mr_map_remove(&map, key), 0);
	attr.iface = FI_HMEM_ZE;
	assert_int_equal(
		ofi_mr_map_insert(&map, &attr, FI_RMA_PMEM, &key, NULL),
		-FI_EBADFLAGS);
	ofi_mr_map_close(&map);
}

static void test_persist_msync(void **state)
{
	struct util_env env;
	struct fid_domain *dom;
	struct fid_mr *mr, *plain, *flagged;
	struct ofi_mr_map *map;
	struct ofi_mr_entry *e;
	uint64_t key;
	size_t size;
	uintptr_t addr;
	char *p, got[300], want[300];
	int rfd;

	if (need_pmem())
		return;
	size = 4 * page;
	p = map_file(size, &rfd);
	util_env_open(&env, FI_VERSION(1, 17), FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
		      FI_RMA | FI_RMA_PMEM, FI_FORMAT_UNSPEC);
	dom = &env.domain->domain_fid;
	map = &env.domain->mr_map;
	assert_int_equal(fi_mr_reg(dom, p, size, FI_REMOTE_WRITE | FI_RMA_PMEM,
				   0, 0, 0, &mr, NULL),
			 0);
	addr = (uintptr_t)p;
	assert_int_equal(ofi_mr_map_get(map, &addr, size, fi_mr_key(mr), 0, &e),
			 0);
	assert_int_equal(e->pmem, OFI_PMEM_MSYNC); /* /tmp is not pmem */
	ofi_mr_map_put(map, e);

	memset(want, 0xab, sizeof(want));
	memcpy(p + page + 100, want, sizeof(want));
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(ofi_mr_map_persist(map, fi_mr_key(mr),
					    (uintptr_t)p + page + 100,
					    sizeof(want)),
			 0);
	assert_int_equal(rec.calls, 1);
	assert_int_equal(rec.kind[0], OFI_PMEM_MSYNC);
	assert_ptr_equal(rec.addr[0], p + page);
	assert_int_equal(rec.len[0], page);
	assert_int_equal(pread(rfd, got, sizeof(got), (off_t)page + 100),
			 (ssize_t)sizeof(got));
	assert_memory_equal(got, want, sizeof(want));

	/* A range across a page boundary covers both pages. */
	assert_int_equal(ofi_mr_map_persist(map, fi_mr_key(mr),
					    (uintptr_t)p + page - 10, 20),
			 0);
	assert_int_equal(rec.calls, 2);
	assert_ptr_equal(rec.addr[1], p);
	assert_int_equal(rec.len[1], 2 * page);
	/* Nothing to persist: no call. */
	assert_int_equal(
		ofi_mr_map_persist(map, fi_mr_key(mr), (uintptr_t)p + 8, 0), 0);
	assert_int_equal(rec.calls, 2);

	/* Bad key, ranges outside, a registration without FI_RMA_PMEM. */
	assert_int_equal(
		ofi_mr_map_persist(map, fi_mr_key(mr) + 100, (uintptr_t)p, 8),
		-FI_EACCES);
	assert_int_equal(ofi_mr_map_persist(map, fi_mr_key(mr),
					    (uintptr_t)p + size - 10, 20),
			 -FI_EACCES);
	assert_int_equal(
		ofi_mr_map_persist(map, fi_mr_key(mr), (uintptr_t)p - 1, 8),
		-FI_EACCES);
	assert_int_equal(
		fi_mr_reg(dom, p, size, FI_REMOTE_WRITE, 0, 0, 0, &plain, NULL),
		0);
	assert_int_equal(
		ofi_mr_map_persist(map, fi_mr_key(plain), (uintptr_t)p, 8),
		-FI_EACCES);
	assert_int_equal(rec.calls, 2);

	/* 1.17's form: FI_RMA_PMEM in the registration flags. */
	assert_int_equal(fi_mr_reg(dom, p, page, FI_REMOTE_WRITE, 0, 0,
				   FI_RMA_PMEM, &flagged, NULL),
			 0);
	assert_int_equal(
		ofi_mr_map_persist(map, fi_mr_key(flagged), (uintptr_t)p, 1),
		0);
	assert_int_equal(rec.calls, 3);
	assert_ptr_equal(rec.addr[2], p);
	assert_int_equal(rec.len[2], page);

	assert_int_equal(fi_close(&flagged->fid), 0);
	assert_int_equal(fi_close(&plain->fid), 0);
	key = fi_mr_key(mr); /* read before close frees the MR */
	assert_int_equal(fi_close(&mr->fid), 0);
	/* A closed registration is a bad key. */
	assert_int_equal(ofi_mr_map_persist(map, key, (uintptr_t)p, 8),
			 -FI_EACCES);
	util_env_close(&env);
	munmap(p, size);
	close(rfd);
}

/* Offset addressing across two iovecs of the file. */
static void test_persist_offset(void **state)
{
	struct ofi_mr_map map;
	struct iovec iov[2];
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = 2,
		.access = FI_REMOTE_WRITE,
		.offset = 1000,
	};
	uint64_t key;
	char *p, got[10];
	int rfd;

	if (need_pmem())
		return;
	p = map_file(4 * page, &rfd);
	iov[0].iov_base = p;
	iov[0].iov_len = page;
	iov[1].iov_base = p + 2 * page;
	iov[1].iov_len = page;
	ofi_mr_map_init(&util_test_prov, FI_MR_PROV_KEY, &map);
	assert_int_equal(
		ofi_mr_map_insert(&map, &attr, FI_RMA_PMEM, &key, NULL), 0);
	memset(&rec, 0, sizeof(rec));
	memcpy(p + 2 * page + 50, "committed", 10);
	assert_int_equal(ofi_mr_map_persist(&map, key, 1000 + page + 50, 10),
			 0);
	assert_int_equal(rec.calls, 1);
	assert_ptr_equal(rec.addr[0], p + 2 * page);
	assert_int_equal(rec.len[0], page);
	assert_int_equal(pread(rfd, got, 10, (off_t)(2 * page + 50)), 10);
	assert_string_equal(got, "committed");
	/* Spanning the two iovecs, or past the end, is refused as for RMA. */
	assert_int_equal(ofi_mr_map_persist(&map, key, 1000 + page - 4, 8),
			 -FI_EACCES);
	assert_int_equal(ofi_mr_map_persist(&map, key, 1000 + 2 * page, 1),
			 -FI_EACCES);
	assert_int_equal(ofi_mr_map_persist(&map, key, 999, 1), -FI_EACCES);
	assert_int_equal(rec.calls, 1);
	assert_int_equal(ofi_mr_map_remove(&map, key), 0);
	ofi_mr_map_close(&map);
	munmap(p, 4 * page);
	close(rfd);
}

/* A persist in flight holds its registration: removal waits for it. */
static volatile int hook_in, hook_out;

static void slow_hook(enum ofi_pmem_kind kind, const void *addr, size_t len)
{
	hook_in = 1;
	usleep(100000);
	hook_out = 1;
}

struct persister {
	struct ofi_mr_map *map;
	uint64_t key;
	uintptr_t addr;
	int ret;
};

static void *persist_thread(void *arg)
{
	struct persister *t = arg;

	t->ret = ofi_mr_map_persist(t->map, t->key, t->addr, 8);
	return NULL;
}

static void test_persist_holds(void **state)
{
	struct ofi_mr_map map;
	struct iovec iov;
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
	};
	struct persister t = {.map = &map};
	pthread_t thr;
	char *p;
	int rfd;

	if (need_pmem())
		return;
	p = map_file(page, &rfd);
	iov.iov_base = p;
	iov.iov_len = page;
	ofi_mr_map_init(&util_test_prov, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
			&map);
	assert_int_equal(
		ofi_mr_map_insert(&map, &attr, FI_RMA_PMEM, &t.key, NULL), 0);
	t.addr = (uintptr_t)p;
	hook_in = hook_out = 0;
	ofi_pmem_set_test_hook(slow_hook);
	assert_int_equal(pthread_create(&thr, NULL, persist_thread, &t), 0);
	while (!hook_in)
		usleep(1000);
	assert_int_equal(ofi_mr_map_remove(&map, t.key), 0);
	assert_int_equal(hook_out, 1);
	pthread_join(thr, NULL);
	assert_int_equal(t.ret, 0);
	ofi_pmem_set_test_hook(record);
	ofi_mr_map_close(&map);
	munmap(p, page);
	close(rfd);
}

/* Run in a child started with PMEM_IS_PMEM_FORCE=1: the pmem_persist path. */
static void test_flush_child(void **state)
{
	struct ofi_mr_map map;
	struct iovec iov;
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
	};
	struct ofi_mr_entry *e;
	uint64_t key;
	uintptr_t addr;
	char *p;
	int rfd;

	p = map_file(2 * page, &rfd);
	iov.iov_base = p;
	iov.iov_len = 2 * page;
	ofi_mr_map_init(&util_test_prov, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
			&map);
	assert_int_equal(
		ofi_mr_map_insert(&map, &attr, FI_RMA_PMEM, &key, NULL), 0);
	addr = (uintptr_t)p;
	assert_int_equal(ofi_mr_map_get(&map, &addr, 1, key, 0, &e), 0);
	assert_int_equal(e->pmem, OFI_PMEM_FLUSH);
	ofi_mr_map_put(&map, e);
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(
		ofi_mr_map_persist(&map, key, (uintptr_t)p + page - 3, 7), 0);
	assert_int_equal(rec.calls, 1);
	assert_int_equal(rec.kind[0], OFI_PMEM_FLUSH);
	assert_ptr_equal(rec.addr[0], p + page - 3); /* exact, not aligned */
	assert_int_equal(rec.len[0], 7);
	assert_int_equal(ofi_mr_map_remove(&map, key), 0);
	ofi_mr_map_close(&map);
	munmap(p, 2 * page);
	close(rfd);
}

static void test_persist_flush(void **state)
{
	int status;
	pid_t pid;

	if (need_pmem())
		return;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		setenv("PMEM_IS_PMEM_FORCE", "1", 1);
		execl("/proc/self/exe", "util_pmem", "--flush", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reg_refused),
		cmocka_unit_test(test_persist_msync),
		cmocka_unit_test(test_persist_offset),
		cmocka_unit_test(test_persist_holds),
		cmocka_unit_test(test_persist_flush),
	};
	const struct CMUnitTest flush[] = {
		cmocka_unit_test(test_flush_child),
	};

	page = (size_t)sysconf(_SC_PAGESIZE);
	ofi_pmem_set_test_hook(record);
	if (argc > 1 && !strcmp(argv[1], "--flush"))
		return cmocka_run_group_tests_name("util_pmem_flush", flush,
						   NULL, NULL);
	/* Even if /tmp were real pmem, this process takes the msync path. */
	setenv("PMEM_IS_PMEM_FORCE", "0", 1);
	return cmocka_run_group_tests_name("util_pmem", tests, NULL, NULL);
}
