/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_ipc_cache.c - cmocka tests of the IPC handle cache with mock
 * open/close routines: one mapping per key however often it is asked for,
 * distinct keys for distinct peers/handles, LRU eviction of unreferenced
 * entries only, peer removal (deferred while referenced), error paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hmem_test.h"

#define MAX_MAPS 64

static struct {
	int opens, closes, fail_open;
	void *open_maps[MAX_MAPS]; /* live mappings */
	char pages[MAX_MAPS][16];
} m;

static int mock_open(enum fi_hmem_iface iface, void *handle, size_t size,
		     uint64_t device, void **mapped)
{
	int i;

	if (m.fail_open)
		return m.fail_open;
	for (i = 0; i < MAX_MAPS && m.open_maps[i]; i++)
		;
	assert_true(i < MAX_MAPS);
	m.open_maps[i] = m.pages[i];
	*mapped = m.pages[i];
	m.opens++;
	return 0;
}

static int mock_close(enum fi_hmem_iface iface, void *mapped)
{
	int i;

	for (i = 0; i < MAX_MAPS; i++) {
		if (m.open_maps[i] == mapped) {
			m.open_maps[i] = NULL;
			m.closes++;
			return 0;
		}
	}
	fail_msg("closing %p, which is not mapped", mapped);
	return -FI_EINVAL;
}

static const struct ofi_ipc_cache_ops mock_ops = {mock_open, mock_close};

static struct ofi_ipc_key key(uint64_t peer, uint64_t base, uint8_t tag)
{
	struct ofi_ipc_key k;

	memset(&k, 0, sizeof(k));
	k.peer_id = peer;
	k.iface = FI_HMEM_CUDA;
	k.base = base;
	k.handle_size = 64;
	memset(k.handle, tag, sizeof(k.handle));
	return k;
}

static int setup(void **state)
{
	struct ofi_ipc_cache *cache;

	memset(&m, 0, sizeof(m));
	if (ofi_ipc_cache_open(&cache, 3, &mock_ops))
		return -1;
	*state = cache;
	return 0;
}

static int teardown(void **state)
{
	ofi_ipc_cache_close(*state);
	/* Closing unmaps everything it still held. */
	assert_int_equal(m.opens, m.closes);
	return 0;
}

static void test_hit_miss(void **state)
{
	struct ofi_ipc_cache *cache = *state;
	struct ofi_ipc_key k1 = key(1, 0x1000, 'a');
	struct ofi_ipc_key k2 = key(2, 0x1000, 'a');
	struct ofi_ipc_key k3 = key(1, 0x1000, 'b');
	struct ofi_ipc_entry *e1, *e1b, *e2, *e3;
	struct ofi_ipc_cache_stats st;
	void *p1, *p1b, *p2, *p3;

	assert_int_equal(ofi_ipc_cache_get(cache, &k1, &p1, &e1), 0);
	assert_int_equal(ofi_ipc_cache_get(cache, &k1, &p1b, &e1b), 0);
	assert_ptr_equal(p1, p1b);
	assert_ptr_equal(e1, e1b);
	assert_int_equal(m.opens, 1);
	/* Another peer, same handle bytes; same peer, another handle. */
	assert_int_equal(ofi_ipc_cache_get(cache, &k2, &p2, &e2), 0);
	assert_int_equal(ofi_ipc_cache_get(cache, &k3, &p3, &e3), 0);
	assert_int_equal(m.opens, 3);
	assert_ptr_not_equal(p1, p2);
	assert_ptr_not_equal(p1, p3);

	ofi_ipc_cache_get_stats(cache, &st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 3);
	assert_int_equal(st.entries, 3);
	ofi_ipc_cache_put(cache, e1);
	ofi_ipc_cache_put(cache, e1b);
	ofi_ipc_cache_put(cache, e2);
	ofi_ipc_cache_put(cache, e3);
	/* Unreferenced entries stay mapped for the next user. */
	assert_int_equal(m.closes, 0);
	assert_int_equal(ofi_ipc_cache_get(cache, &k1, &p1b, &e1b), 0);
	assert_ptr_equal(p1, p1b);
	assert_int_equal(m.opens, 3);
	ofi_ipc_cache_put(cache, e1b);
}

static void test_lru_eviction(void **state)
{
	struct ofi_ipc_cache *cache = *state;
	struct ofi_ipc_key k[5];
	struct ofi_ipc_entry *e[5];
	struct ofi_ipc_cache_stats st;
	void *p[5];
	int i;

	for (i = 0; i < 5; i++)
		k[i] = key(7, 0x1000 * (i + 1), (uint8_t)i);
	for (i = 0; i < 3; i++)
		assert_int_equal(ofi_ipc_cache_get(cache, &k[i], &p[i], &e[i]),
				 0);
	/* Full of referenced entries: nothing to evict. */
	assert_int_equal(ofi_ipc_cache_get(cache, &k[3], &p[3], &e[3]),
			 -FI_EAGAIN);
	assert_int_equal(m.opens, 3);

	/* Released in the order 1, 0, 2: entry 1 is the oldest unused. */
	ofi_ipc_cache_put(cache, e[1]);
	ofi_ipc_cache_put(cache, e[0]);
	ofi_ipc_cache_put(cache, e[2]);
	assert_int_equal(ofi_ipc_cache_get(cache, &k[3], &p[3], &e[3]), 0);
	assert_int_equal(m.closes, 1);
	/* 0 and 2 still hit, 1 misses again. */
	assert_int_equal(ofi_ipc_cache_get(cache, &k[0], &p[4], &e[4]), 0);
	assert_ptr_equal(p[4], p[0]);
	ofi_ipc_cache_put(cache, e[4]);
	assert_int_equal(m.opens, 4);
	/* A hit refreshes: now 2 is the oldest and goes for key 1. */
	assert_int_equal(ofi_ipc_cache_get(cache, &k[1], &p[1], &e[1]), 0);
	assert_int_equal(m.opens, 5);
	assert_int_equal(m.closes, 2);
	assert_int_equal(ofi_ipc_cache_get(cache, &k[0], &p[4], &e[4]), 0);
	assert_ptr_equal(p[4], p[0]);
	ofi_ipc_cache_get_stats(cache, &st);
	assert_int_equal(st.evictions, 2);
	assert_int_equal(st.entries, 3);
	ofi_ipc_cache_put(cache, e[4]);
	ofi_ipc_cache_put(cache, e[1]);
	ofi_ipc_cache_put(cache, e[3]);
}

static void test_remove_peer(void **state)
{
	struct ofi_ipc_cache *cache = *state;
	struct ofi_ipc_key a1 = key(1, 0x1000, 1), a2 = key(1, 0x2000, 2);
	struct ofi_ipc_key b1 = key(2, 0x1000, 1);
	struct ofi_ipc_entry *ea1, *ea2, *eb1, *e;
	struct ofi_ipc_cache_stats st;
	void *pa1, *pa2, *pb1, *p;

	assert_int_equal(ofi_ipc_cache_get(cache, &a1, &pa1, &ea1), 0);
	assert_int_equal(ofi_ipc_cache_get(cache, &a2, &pa2, &ea2), 0);
	assert_int_equal(ofi_ipc_cache_get(cache, &b1, &pb1, &eb1), 0);
	ofi_ipc_cache_put(cache, ea2);

	/* a2 goes at once, a1 (in use) when released; b1 stays. */
	ofi_ipc_cache_remove_peer(cache, 1);
	assert_int_equal(m.closes, 1);
	assert_int_equal(ofi_ipc_cache_get(cache, &a1, &p, &e), 0);
	assert_int_equal(m.opens, 4); /* a new mapping for the new peer 1 */
	ofi_ipc_cache_put(cache, e);
	ofi_ipc_cache_put(cache, ea1);
	assert_int_equal(m.closes, 2);
	ofi_ipc_cache_get_stats(cache, &st);
	assert_int_equal(st.entries, 2);

	ofi_ipc_cache_put(cache, eb1);
	ofi_ipc_cache_remove_peer(cache, 2);
	ofi_ipc_cache_remove_peer(cache, 1);
	assert_int_equal(m.closes, 4);
	assert_int_equal(m.opens, m.closes);
	ofi_ipc_cache_remove_peer(cache, 99);
}

static void test_errors(void **state)
{
	struct ofi_ipc_cache *cache = *state, *c2;
	struct ofi_ipc_key k = key(1, 0x1000, 1);
	struct ofi_ipc_entry *e, *held;
	struct ofi_ipc_cache_stats st;
	int closes;
	void *p;

	m.fail_open = -FI_EINVAL;
	assert_int_equal(ofi_ipc_cache_get(cache, &k, &p, &e), -FI_EINVAL);
	m.fail_open = 0;
	ofi_ipc_cache_get_stats(cache, &st);
	assert_int_equal(st.entries, 0);
	/* The failure was not cached. */
	assert_int_equal(ofi_ipc_cache_get(cache, &k, &p, &e), 0);
	ofi_ipc_cache_put(cache, e);

	k.handle_size = OFI_HMEM_MAX_HANDLE_SIZE + 1;
	assert_int_equal(ofi_ipc_cache_get(cache, &k, &p, &e), -FI_EINVAL);
	assert_int_equal(ofi_ipc_cache_open(&c2, 0, &mock_ops), -FI_EINVAL);

	/* Close while a removed peer's entry is still referenced. */
	assert_int_equal(ofi_ipc_cache_open(&c2, 4, &mock_ops), 0);
	k = key(5, 0x5000, 5);
	assert_int_equal(ofi_ipc_cache_get(c2, &k, &p, &held), 0);
	ofi_ipc_cache_remove_peer(c2, 5);
	closes = m.closes;
	ofi_ipc_cache_close(c2);
	assert_int_equal(m.closes, closes + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hit_miss, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lru_eviction, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_remove_peer, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests_name("hmem_ipc_cache", tests, NULL, NULL);
}
