/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_lock.c - unit tests of ofi_mutex_t (include/ofi.h): a biased lock
 * excludes like any mutex while its bias is revoked under load (threads
 * joining an owner that is taking it in a loop, counters that a lost
 * exclusion would miscount); a second thread waits for the owner that
 * holds it by bias and gets in once it lets go; trylock fails on a lock
 * held by any thread, its caller included, and never waits; a forked
 * child revokes its parent's biases.
 */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "ofi.h"

#define MIX_THREADS 4
#define MIX_ROUNDS  40
#define MIX_ITERS   20000

struct mix {
	ofi_mutex_t lock;
	uint64_t count;	   /* plain: only the lock guards it */
	uint64_t pairs[2]; /* always equal under the lock */
	int go;		   /* the owner is deep in its loop */
	int bad;
};

/* Every seventh take is a trylock, then a lock if it failed. */
static void mix_once(struct mix *x, int i)
{
	if (i % 7 != 3 || !ofi_mutex_trylock(&x->lock))
		ofi_mutex_lock(&x->lock);
	if (x->pairs[0] != x->pairs[1])
		x->bad++;
	x->pairs[0]++;
	x->count++;
	x->pairs[1]++;
	ofi_mutex_unlock(&x->lock);
}

struct mix_arg {
	struct mix *x;
	int id;
};

static void *mix_thread(void *p)
{
	struct mix_arg *a = p;
	int i;

	/* The owner (id 0) is deep in its loop when the others join. */
	while (a->id && !__atomic_load_n(&a->x->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (i = 0; i < MIX_ITERS; i++) {
		mix_once(a->x, i);
		if (!a->id && i == MIX_ITERS / 8)
			__atomic_store_n(&a->x->go, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Threads join an owner mid-loop; every increment must count. */
static void test_revoke_under_load(void **state)
{
	pthread_t t[MIX_THREADS];
	struct mix_arg a[MIX_THREADS];
	struct mix x;
	int r, i;

	(void)state;
	for (r = 0; r < MIX_ROUNDS; r++) {
		memset(&x, 0, sizeof(x));
		ofi_mutex_init(&x.lock);
		for (i = 0; i < MIX_THREADS; i++) {
			a[i].x = &x;
			a[i].id = i;
			assert_int_equal(
				pthread_create(&t[i], NULL, mix_thread, &a[i]),
				0);
		}
		for (i = 0; i < MIX_THREADS; i++)
			pthread_join(t[i], NULL);
		assert_int_equal(x.bad, 0);
		assert_int_equal(x.count, (uint64_t)MIX_THREADS * MIX_ITERS);
		ofi_mutex_destroy(&x.lock);
	}
}

struct hold {
	ofi_mutex_t lock;
	int waiting; /* the second thread is about to lock */
	int inside;  /* the second thread got in */
	int try_ok;  /* its trylock while we held it */
};

static void *hold_second(void *p)
{
	struct hold *h = p;

	__atomic_store_n(&h->try_ok, ofi_mutex_trylock(&h->lock),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h->waiting, 1, __ATOMIC_RELEASE);
	ofi_mutex_lock(&h->lock);
	__atomic_store_n(&h->inside, 1, __ATOMIC_RELEASE);
	ofi_mutex_unlock(&h->lock);
	return NULL;
}

/* The owner holds it by bias: the other thread's trylock fails at once,
 * its lock waits until the owner lets go. */
static void test_wait_for_owner(void **state)
{
	struct hold h;
	pthread_t t;
	int i;

	(void)state;
	memset(&h, 0, sizeof(h));
	ofi_mutex_init(&h.lock);
	for (i = 0; i < 1000; i++) { /* the bias is ours */
		ofi_mutex_lock(&h.lock);
		ofi_mutex_unlock(&h.lock);
	}
	ofi_mutex_lock(&h.lock);
	assert_int_equal(pthread_create(&t, NULL, hold_second, &h), 0);
	while (!__atomic_load_n(&h.waiting, __ATOMIC_ACQUIRE))
		sched_yield();
	usleep(50000);
	assert_int_equal(h.try_ok, 0);
	assert_int_equal(__atomic_load_n(&h.inside, __ATOMIC_ACQUIRE), 0);
	ofi_mutex_unlock(&h.lock);
	pthread_join(t, NULL);
	assert_int_equal(h.inside, 1);
	/* Both ways still work once the bias is gone. */
	assert_true(ofi_mutex_trylock(&h.lock));
	assert_false(ofi_mutex_trylock(&h.lock));
	ofi_mutex_unlock(&h.lock);
	ofi_mutex_destroy(&h.lock);
}

/* A trylock never takes a lock its own caller holds. */
static void test_trylock_own(void **state)
{
	ofi_mutex_t m, s = OFI_MUTEX_INITIALIZER;

	(void)state;
	ofi_mutex_init(&m);
	assert_true(ofi_mutex_trylock(&m));
	assert_false(ofi_mutex_trylock(&m));
	ofi_mutex_unlock(&m);
	ofi_mutex_lock(&m);
	assert_false(ofi_mutex_trylock(&m));
	ofi_mutex_unlock(&m);
	assert_true(ofi_mutex_trylock(&s));
	assert_false(ofi_mutex_trylock(&s));
	ofi_mutex_unlock(&s);
	ofi_mutex_destroy(&m);
}

static void *fork_thread(void *p)
{
	ofi_mutex_t *m = p;

	ofi_mutex_lock(m);
	ofi_mutex_unlock(m);
	return NULL;
}

/* A child's only thread is not the owner its parent's lock was biased
 * to: it revokes (registering for membarrier if it must) and gets in. */
static void test_fork_child(void **state)
{
	ofi_mutex_t m;
	pthread_t t;
	pid_t pid;
	int st;

	(void)state;
	ofi_mutex_init(&m);
	assert_int_equal(pthread_create(&t, NULL, fork_thread, &m), 0);
	pthread_join(t, NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		ofi_mutex_lock(&m);
		ofi_mutex_unlock(&m);
		_exit(ofi_mutex_trylock(&m) ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	ofi_mutex_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_revoke_under_load),
		cmocka_unit_test(test_wait_for_owner),
		cmocka_unit_test(test_trylock_own),
		cmocka_unit_test(test_fork_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
