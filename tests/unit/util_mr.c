/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_mr.c - unit tests of the MR map and util_mr: provider vs user keys,
 * virtual vs offset addressing, access checks, argument checks, HMEM
 * iface/device bookkeeping, bind/enable rules, and that a removal waits
 * for a holder (a remote operation copying into the region), as a narrowing
 * of access does, and the count of registrations with a counter bound.
 */
#include <pthread.h>
#include <unistd.h>

#include "util_common.h"

/* Registration attributes of the one buffer @iov names. */
static struct fi_mr_attr attr_of(struct iovec *iov, uint64_t access,
				 uint64_t key)
{
	return (struct fi_mr_attr){
		.mr_iov = iov,
		.iov_count = 1,
		.access = access,
		.requested_key = key,
	};
}

/* A map of @mode over one buffer, which @k1 and @k2 both register. */
static void map_two(struct ofi_mr_map *map, int mode, uint64_t access,
		    uint64_t *k1, uint64_t *k2)
{
	static char buf[64];
	struct iovec iov = {buf, sizeof(buf)};
	struct fi_mr_attr attr = attr_of(&iov, access, 7);

	assert_int_equal(ofi_mr_map_init(&util_test_prov, mode, map), 0);
	assert_int_equal(ofi_mr_map_insert(map, &attr, 0, k1, NULL), 0);
	assert_int_equal(ofi_mr_map_insert(map, &attr, 0, k2, NULL),
			 mode & FI_MR_PROV_KEY ? 0 : -FI_ENOKEY);
}

static void test_map_keys(void **state)
{
	struct ofi_mr_map map;
	uint64_t k1, k2;

	map_two(&map, FI_MR_PROV_KEY, FI_REMOTE_READ, &k1, &k2);
	assert_int_not_equal(k1, k2);
	assert_int_equal(ofi_mr_map_remove(&map, k1), 0);
	assert_int_equal(ofi_mr_map_remove(&map, k1), -FI_ENOKEY);
	ofi_mr_map_remove(&map, k2);
	ofi_mr_map_close(&map);

	/* user keys: the second insert of key 7 is refused */
	map_two(&map, FI_MR_SCALABLE, FI_REMOTE_READ, &k1, &k2);
	assert_int_equal(k1, 7);
	ofi_mr_map_close(&map);
	assert_int_equal(ofi_mr_mode_normalize(FI_MR_BASIC),
			 FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
}

/* ofi_mr_map_counted follows binds, unbinds and removals, so a target
 * may skip looking up registrations that count nothing. */
static void test_counted(void **state)
{
	struct ofi_mr_map map;
	/* The map only keeps the pointer: no counter is touched here. */
	int dummy[2];
	struct util_cntr *c1 = (void *)&dummy[0], *c2 = (void *)&dummy[1];
	uint64_t k1, k2;

	map_two(&map, FI_MR_PROV_KEY, FI_REMOTE_WRITE, &k1, &k2);
	assert_false(ofi_mr_map_counted(&map));
	assert_int_equal(ofi_mr_map_bind_cntr(&map, k1, c1, 0), 0);
	assert_true(ofi_mr_map_counted(&map));
	/* rebinding an entry counts it once */
	assert_int_equal(ofi_mr_map_bind_cntr(&map, k1, c2, 0), 0);
	ofi_mr_map_unbind_cntr(&map, c1);
	assert_true(ofi_mr_map_counted(&map));
	ofi_mr_map_unbind_cntr(&map, c2);
	assert_false(ofi_mr_map_counted(&map));
	/* a removed entry no longer counts */
	assert_int_equal(ofi_mr_map_bind_cntr(&map, k1, c1, 0), 0);
	assert_int_equal(ofi_mr_map_bind_cntr(&map, k2, c1, 0), 0);
	assert_int_equal(ofi_mr_map_remove(&map, k1), 0);
	assert_true(ofi_mr_map_counted(&map));
	assert_int_equal(ofi_mr_map_remove(&map, k2), 0);
	assert_false(ofi_mr_map_counted(&map));
	ofi_mr_map_close(&map);
}

struct remover {
	struct ofi_mr_map *map;
	uint64_t key;
	int ret;
	volatile int done;
};

static void *remove_thread(void *arg)
{
	struct remover *r = arg;

	r->ret = ofi_mr_map_remove(r->map, r->key);
	r->done = 1;
	return NULL;
}

static void *narrow_thread(void *arg)
{
	struct remover *r = arg;

	r->ret = ofi_mr_map_set_access(r->map, r->key, 0);
	r->done = 1;
	return NULL;
}

/*
 * @fn (a removal or a narrowing of r->key) run by a thread while @e is
 * held: once it has run, nobody gets write access to r->key any more (on
 * a loaded machine the thread may take a while to be scheduled), but it
 * returns only after the holder let go.
 */
static void holder_waited(struct remover *r, void *(*fn)(void *),
			  struct ofi_mr_entry *e, void *buf)
{
	uintptr_t addr;
	pthread_t t;
	int i;

	assert_int_equal(pthread_create(&t, NULL, fn, r), 0);
	for (i = 0; i < 10000; i++) {
		addr = (uintptr_t)buf;
		if (ofi_mr_map_verify(r->map, &addr, 8, r->key, FI_REMOTE_WRITE,
				      NULL) == -FI_EACCES)
			break;
		usleep(1000);
	}
	assert_true(i < 10000);
	usleep(20000);
	assert_int_equal(r->done, 0);
	ofi_mr_map_put(r->map, e);
	pthread_join(t, NULL);
	assert_int_equal(r->done, 1);
	assert_int_equal(r->ret, 0);
}

/* A virtual-address map where @buf (64 bytes) takes remote writes,
 * registered with itself as context under *@key. */
static void map_writable(struct ofi_mr_map *map, char *buf, uint64_t *key)
{
	struct iovec iov = {buf, 64};
	struct fi_mr_attr attr = attr_of(&iov, FI_REMOTE_WRITE, 0);

	assert_int_equal(ofi_mr_map_init(&util_test_prov,
					 FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, map),
			 0);
	assert_int_equal(ofi_mr_map_insert(map, &attr, 0, key, buf), 0);
}

static void test_hold(void **state)
{
	struct ofi_mr_map map;
	char buf[64];
	struct ofi_mr_entry *e;
	struct remover r = {.map = &map};
	uintptr_t addr = (uintptr_t)buf + 8;

	(void)state;
	map_writable(&map, buf, &r.key);
	assert_int_equal(
		ofi_mr_map_get(&map, &addr, 64, r.key, FI_REMOTE_WRITE, &e),
		-FI_EACCES);
	assert_int_equal(
		ofi_mr_map_get(&map, &addr, 56, r.key, FI_REMOTE_READ, &e),
		-FI_EACCES);
	assert_int_equal(
		ofi_mr_map_get(&map, &addr, 56, r.key, FI_REMOTE_WRITE, &e), 0);
	assert_ptr_equal(e->context, buf);
	holder_waited(&r, remove_thread, e, buf);
	ofi_mr_map_close(&map);
}

/* Widening is immediate; narrowing refuses new holds, waits for old ones. */
static void test_set_access(void **state)
{
	struct ofi_mr_map map;
	char buf[64];
	struct ofi_mr_entry *e;
	struct remover r = {.map = &map};
	uintptr_t addr = (uintptr_t)buf;

	(void)state;
	map_writable(&map, buf, &r.key);
	assert_int_equal(ofi_mr_map_set_access(&map, r.key + 1, 0), -FI_ENOKEY);
	assert_int_equal(
		ofi_mr_map_get(&map, &addr, 8, r.key, FI_REMOTE_WRITE, &e), 0);
	/* a holder does not delay a widening */
	assert_int_equal(ofi_mr_map_set_access(
				 &map, r.key, FI_REMOTE_WRITE | FI_REMOTE_READ),
			 0);
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 8, r.key, FI_REMOTE_READ, NULL),
		0);
	holder_waited(&r, narrow_thread, e, buf);
	/* enabled again, the same key takes holds */
	assert_int_equal(ofi_mr_map_set_access(&map, r.key, FI_REMOTE_WRITE),
			 0);
	assert_int_equal(
		ofi_mr_map_get(&map, &addr, 8, r.key, FI_REMOTE_WRITE, &e), 0);
	ofi_mr_map_put(&map, e);
	assert_int_equal(ofi_mr_map_remove(&map, r.key), 0);
	ofi_mr_map_close(&map);
}

static void test_verify(void **state)
{
	struct ofi_mr_map map;
	char a[64], b[32];
	struct iovec iov[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = 2,
		.access = FI_REMOTE_WRITE,
		.offset = 1000,
		.requested_key = 3,
	};
	uintptr_t addr;
	void *ctx = NULL;
	uint64_t key;

	/* Offset addressing counts from attr.offset across the iovecs. */
	ofi_mr_map_init(&util_test_prov, 0, &map);
	assert_int_equal(ofi_mr_map_insert(&map, &attr, 0, &key, (void *)9), 0);
	addr = 1000 + 8;
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 8, 3, FI_REMOTE_WRITE, &ctx), 0);
	assert_ptr_equal((void *)addr, a + 8);
	assert_ptr_equal(ctx, (void *)9);
	addr = 1000 + 64 + 4;
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 28, 3, FI_REMOTE_WRITE, NULL),
		0);
	assert_ptr_equal((void *)addr, b + 4);
	addr = 1000 + 64 + 4;
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 29, 3, FI_REMOTE_WRITE, NULL),
		-FI_EACCES);
	addr = 999;
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 1, 3, FI_REMOTE_WRITE, NULL),
		-FI_EACCES);
	addr = 1000;
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 1, 3, FI_REMOTE_READ, NULL),
		-FI_EACCES);
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 1, 4, FI_REMOTE_WRITE, NULL),
		-FI_EACCES);
	ofi_mr_map_close(&map);

	ofi_mr_map_init(&util_test_prov, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY,
			&map);
	assert_int_equal(ofi_mr_map_insert(&map, &attr, 0, &key, NULL), 0);
	addr = (uintptr_t)(a + 60);
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 4, key, FI_REMOTE_WRITE, NULL),
		0);
	assert_ptr_equal((void *)addr, a + 60);
	addr = (uintptr_t)(a + 60);
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 5, key, FI_REMOTE_WRITE, NULL),
		-FI_EACCES);
	addr = (uintptr_t)b;
	assert_int_equal(
		ofi_mr_map_verify(&map, &addr, 32, key, FI_REMOTE_WRITE, NULL),
		0);
	ofi_mr_map_close(&map);
}

static void test_mr_object(void **state)
{
	struct util_env env;
	struct fid_domain *dom;
	struct fid_mr *mr, *mr2;
	struct fi_cntr_attr cattr = {.wait_obj = FI_WAIT_NONE};
	struct fid_cntr *cntr;
	struct iovec iov[5];
	struct fi_mr_attr attr;
	enum fi_hmem_iface iface;
	struct util_mr *umr;
	uint64_t device, key;
	char buf[128];
	uintptr_t addr;
	int i;

	util_env_open(&env, FI_VERSION(1, 17), FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
		      FI_MSG | FI_RMA | FI_HMEM, FI_FORMAT_UNSPEC);
	dom = &env.domain->domain_fid;
	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf), 1ULL << 60, 0, 0, 0,
				   &mr, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf), FI_REMOTE_READ, 0, 0,
				   FI_SEND, &mr, NULL),
			 -FI_EINVAL);
	for (i = 0; i < 5; i++) {
		iov[i].iov_base = buf + i;
		iov[i].iov_len = 1;
	}
	assert_int_equal(fi_mr_regv(dom, iov, 5, FI_READ, 0, 0, 0, &mr, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf),
				   FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
				   &mr, (void *)4),
			 0);
	assert_ptr_equal(mr->fid.context, (void *)4);
	umr = ofi_mr_from_desc(fi_mr_desc(mr));
	assert_ptr_equal(&umr->mr_fid, mr);
	addr = (uintptr_t)buf + 16;
	assert_int_equal(ofi_mr_map_verify(&env.domain->mr_map, &addr, 16,
					   fi_mr_key(mr), FI_REMOTE_READ, NULL),
			 0);
	assert_int_equal(
		fi_mr_reg(dom, buf, 8, FI_REMOTE_READ, 0, 0, 0, &mr2, NULL), 0);
	assert_int_not_equal(fi_mr_key(mr), fi_mr_key(mr2));
	assert_int_equal(fi_close(dom ? &dom->fid : NULL), -FI_EBUSY);
	assert_int_equal(fi_close(&mr2->fid), 0);

	/* FI_RMA_EVENT, flag or counter, needs the capability. */
	assert_int_equal(ofi_cntr_open(dom, &cattr, &cntr, NULL), 0);
	assert_int_equal(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE),
			 -FI_EINVAL);
	assert_int_equal(fi_mr_reg(dom, buf, 8, FI_REMOTE_READ, 0, 0,
				   FI_RMA_EVENT, &mr2, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_mr_enable(mr), 0);
	assert_int_equal(fi_close(&cntr->fid), 0);

	memset(&attr, 0, sizeof(attr));
	attr.mr_iov = iov;
	attr.iov_count = 1;
	attr.access = FI_SEND;
	attr.iface = FI_HMEM_ZE;
	attr.device.ze = 3;
	assert_int_equal(fi_mr_regattr(dom, &attr, 0, &mr2), 0);
	umr = fi_mr_desc(mr2);
	assert_int_equal(umr->iface, FI_HMEM_ZE);
	assert_int_equal(umr->device, 3);
	assert_int_equal(ofi_mr_map_query(&env.domain->mr_map, fi_mr_key(mr2),
					  &iface, &device),
			 0);
	assert_int_equal(iface, FI_HMEM_ZE);
	assert_int_equal(device, 3);
	attr.iface = 99;
	assert_int_equal(fi_mr_regattr(dom, &attr, 0, &mr), -FI_EINVAL);
	key = fi_mr_key(mr2);
	assert_int_equal(fi_close(&mr2->fid), 0);
	assert_int_equal(
		ofi_mr_map_query(&env.domain->mr_map, key, &iface, &device),
		-FI_ENOKEY);
	assert_int_equal(fi_close(&mr->fid), 0);
	util_env_close(&env);
}

/*
 * A domain with FI_RMA_EVENT and @mr_mode, a counter in it, and an MR of
 * @buf registered with @flags under @key.
 */
static struct fid_mr *bind_env_open(struct util_env *env, int mr_mode,
				    struct fid_cntr **cntr, char *buf,
				    uint64_t key, uint64_t flags)
{
	struct fi_cntr_attr cattr = {.wait_obj = FI_WAIT_NONE};
	struct fid_mr *mr;

	util_env_open(env, FI_VERSION(1, 17), mr_mode, FI_RMA | FI_RMA_EVENT,
		      FI_FORMAT_UNSPEC);
	assert_int_equal(
		ofi_cntr_open(&env->domain->domain_fid, &cattr, cntr, NULL), 0);
	assert_int_equal(fi_mr_reg(&env->domain->domain_fid, buf, 64,
				   FI_REMOTE_WRITE, 0, key, flags, &mr, NULL),
			 0);
	return mr;
}

/*
 * With the capability, a counter binds to any MR unless mr_mode has
 * FI_MR_RMA_EVENT, which asks for the flag at registration.
 */
static void test_bind_cntr(void **state)
{
	struct util_env env;
	struct fid_cntr *cntr;
	struct fid_mr *mr, *mr2;
	struct ofi_mr_entry *e;
	char buf[64];
	uintptr_t addr;

	mr = bind_env_open(&env, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, &cntr, buf,
			   0, 0);
	assert_int_equal(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE), 0);
	assert_true(ofi_mr_map_counted(&env.domain->mr_map));
	/* A remote write landing in it counts. */
	addr = (uintptr_t)buf;
	assert_int_equal(ofi_mr_map_get(&env.domain->mr_map, &addr, 8,
					fi_mr_key(mr), FI_REMOTE_WRITE, &e),
			 0);
	ofi_mr_map_event(&env.domain->mr_map, e, FI_REMOTE_WRITE);
	ofi_mr_map_put(&env.domain->mr_map, e);
	assert_int_equal(fi_cntr_read(cntr), 1);
	/* Closing the MR first unbinds the counter, as 1.17 does. */
	assert_int_equal(fi_close(&mr->fid), 0);
	assert_false(ofi_mr_map_counted(&env.domain->mr_map));
	assert_int_equal(fi_cntr_read(cntr), 1);
	assert_int_equal(fi_close(&cntr->fid), 0);
	util_env_close(&env);

	mr = bind_env_open(&env, FI_MR_RMA_EVENT, &cntr, buf, 1, 0);
	assert_int_equal(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE),
			 -FI_EINVAL);
	assert_int_equal(fi_mr_reg(&env.domain->domain_fid, buf, sizeof(buf),
				   FI_REMOTE_WRITE, 0, 2, FI_RMA_EVENT, &mr2,
				   NULL),
			 0);
	assert_int_equal(fi_mr_bind(mr2, &cntr->fid, FI_REMOTE_WRITE), 0);
	assert_int_equal(fi_close(&cntr->fid), 0);
	assert_int_equal(fi_close(&mr2->fid), 0);
	assert_int_equal(fi_close(&mr->fid), 0);
	util_env_close(&env);
}

static void test_user_keys(void **state)
{
	struct util_env env;
	struct fid_mr *mr, *mr2;
	char buf[16];

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG | FI_RMA,
		      FI_FORMAT_UNSPEC);
	assert_int_equal(fi_mr_reg(&env.domain->domain_fid, buf, sizeof(buf),
				   FI_REMOTE_READ, 0, 0x1234, 0, &mr, NULL),
			 0);
	assert_int_equal(fi_mr_key(mr), 0x1234);
	assert_int_equal(fi_mr_reg(&env.domain->domain_fid, buf, sizeof(buf),
				   FI_REMOTE_READ, 0, 0x1234, 0, &mr2, NULL),
			 -FI_ENOKEY);
	assert_int_equal(fi_mr_regattr(&env.domain->domain_fid, NULL, 0, &mr2),
			 -FI_EINVAL);
	assert_int_equal(fi_close(&mr->fid), 0);
	util_env_close(&env);
}

/*
 * A region starting at NULL is the whole address space (a SHMEM runtime's
 * remote virtual addressing: offsets are addresses), unless the domain
 * wants allocated memory.
 */
static void test_whole_space(void **state)
{
	struct util_env env;
	struct iovec iov = {.iov_base = NULL, .iov_len = UINT64_MAX};
	struct fid_mr *mr;
	char buf[16];
	uintptr_t addr;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG | FI_RMA,
		      FI_FORMAT_UNSPEC);
	assert_int_equal(fi_mr_reg(&env.domain->domain_fid, NULL, UINT64_MAX,
				   FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
				   &mr, NULL),
			 0);
	addr = (uintptr_t)buf;
	assert_int_equal(ofi_mr_map_verify(&env.domain->mr_map, &addr,
					   sizeof(buf), 0, FI_REMOTE_WRITE,
					   NULL),
			 0);
	assert_ptr_equal((void *)addr, buf);
	addr = UINTPTR_MAX - 4;
	assert_int_equal(ofi_mr_map_verify(&env.domain->mr_map, &addr, 8, 0,
					   FI_REMOTE_WRITE, NULL),
			 -FI_EACCES);
	assert_int_equal(fi_close(&mr->fid), 0);
	util_env_close(&env);

	util_env_open(&env, FI_VERSION(1, 17), FI_MR_ALLOCATED | FI_MR_PROV_KEY,
		      FI_MSG | FI_RMA, FI_FORMAT_UNSPEC);
	assert_int_equal(fi_mr_reg(&env.domain->domain_fid, NULL, 8,
				   FI_REMOTE_READ, 0, 0, 0, &mr, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_mr_regv(&env.domain->domain_fid, &iov, 1,
				    FI_REMOTE_READ, 0, 0, 0, &mr, NULL),
			 -FI_EINVAL);
	util_env_close(&env);
}

/* The collective engine's key range is its own. */
static void test_engine_keys(void **state)
{
	struct ofi_mr_map map;
	char buf[64];
	struct iovec iov = {buf, sizeof(buf)};
	struct fi_mr_attr attr =
		attr_of(&iov, FI_REMOTE_WRITE, OFI_MR_KEY_ENGINE | 0x1234);
	uint64_t k;

	(void)state;
	assert_int_equal(ofi_mr_map_init(&util_test_prov, 0, &map), 0);
	/* an application may not take one... */
	assert_int_equal(ofi_mr_map_insert(&map, &attr, 0, &k, NULL),
			 -FI_EKEYREJECTED);
	attr.requested_key = OFI_MR_KEY_ENGINE | ~OFI_MR_KEY_ENGINE_MASK;
	assert_int_equal(ofi_mr_map_insert(&map, &attr, 0, &k, NULL),
			 -FI_EKEYREJECTED);
	/* ...so the engine finds it free */
	assert_int_equal(
		ofi_mr_map_insert(&map, &attr, OFI_MR_INTERNAL, &k, NULL), 0);
	assert_int_equal(k, attr.requested_key);
	assert_int_equal(ofi_mr_map_remove(&map, k), 0);
	/* the keys on either side stay the application's */
	attr.requested_key = OFI_MR_KEY_ENGINE - 1;
	assert_int_equal(ofi_mr_map_insert(&map, &attr, 0, &k, NULL), 0);
	assert_int_equal(ofi_mr_map_remove(&map, k), 0);
	attr.requested_key = OFI_MR_KEY_ENGINE + (~OFI_MR_KEY_ENGINE_MASK + 1);
	assert_int_equal(ofi_mr_map_insert(&map, &attr, 0, &k, NULL), 0);
	assert_int_equal(ofi_mr_map_remove(&map, k), 0);
	ofi_mr_map_close(&map);

	/* FI_MR_PROV_KEY never picks one either */
	assert_int_equal(ofi_mr_map_init(&util_test_prov, FI_MR_PROV_KEY, &map),
			 0);
	map.next_key = OFI_MR_KEY_ENGINE - 1;
	assert_int_equal(ofi_mr_map_insert(&map, &attr, 0, &k, NULL), 0);
	assert_int_equal(k, OFI_MR_KEY_ENGINE - 1);
	assert_int_equal(ofi_mr_map_remove(&map, k), 0);
	assert_int_equal(ofi_mr_map_insert(&map, &attr, 0, &k, NULL), 0);
	assert_false(ofi_mr_key_engine(k));
	assert_int_equal(ofi_mr_map_remove(&map, k), 0);
	ofi_mr_map_close(&map);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_keys),
		cmocka_unit_test(test_counted),
		cmocka_unit_test(test_verify),
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_set_access),
		cmocka_unit_test(test_mr_object),
		cmocka_unit_test(test_bind_cntr),
		cmocka_unit_test(test_user_keys),
		cmocka_unit_test(test_whole_space),
		cmocka_unit_test(test_engine_keys),
	};

	return cmocka_run_group_tests_name("util_mr", tests, NULL, NULL);
}
