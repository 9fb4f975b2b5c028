/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_ring.c - unit tests of the sleeping mark in an shm ring's tail
 * (SHM_RING_SLEEPING, shm_wire.h): a claim that may wake the owner clears
 * the mark and reports it, a plain claim keeps it, a full ring keeps it,
 * a marked tail at the head is not a stuck ring; and, with a producer
 * thread and a consumer thread that marks its tail whenever its ring is
 * empty, no command is ever published after a mark that found the ring
 * empty without its producer reporting the mark (a lost wakeup).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "shm_wire.h"

#define T_SLOTS	  8
#define T_SLOT_SZ 64
#define T_ROUNDS  20000
#define T_WAIT_NS (10ULL * 1000000000ULL)

struct t_ring {
	struct shm_ring_ctl ctl;
	_Alignas(SHM_CACHELINE) uint8_t slots[T_SLOTS * T_SLOT_SZ];
	struct shm_ring r;
};

static void t_init(struct t_ring *t)
{
	uint64_t i;

	memset(t, 0, sizeof(*t));
	shm_ring_init(&t->r, &t->ctl, t->slots, T_SLOTS, T_SLOT_SZ);
	for (i = 0; i < T_SLOTS; i++)
		atomic_store((_Atomic uint64_t *)shm_ring_slot(&t->r, i), i);
}

static uint64_t t_mark(struct t_ring *t)
{
	return atomic_fetch_or(&t->ctl.tail, SHM_RING_SLEEPING);
}

static void claim_wake_clears(void **state)
{
	struct t_ring *t = malloc(sizeof(*t));
	uint64_t pos;
	bool wake = true;
	void *s;

	(void)state;
	t_init(t);
	s = shm_ring_claim_wake(&t->r, &pos, &wake);
	assert_non_null(s);
	assert_false(wake);
	assert_int_equal(pos, 0);
	shm_ring_commit(s, pos);
	assert_int_equal(t_mark(t), 1);
	s = shm_ring_claim_wake(&t->r, &pos, &wake);
	assert_non_null(s);
	assert_true(wake);
	assert_int_equal(pos, 1);
	assert_int_equal(atomic_load(&t->ctl.tail), 2); /* mark gone */
	shm_ring_commit(s, pos);
	s = shm_ring_claim_wake(&t->r, &pos, &wake);
	assert_non_null(s);
	assert_false(wake); /* only the first claim after the mark */
	free(t);
}

static void plain_claim_keeps(void **state)
{
	struct t_ring *t = malloc(sizeof(*t));
	uint64_t pos;
	void *s;

	(void)state;
	t_init(t);
	t_mark(t);
	s = shm_ring_claim(&t->r, &pos);
	assert_non_null(s);
	assert_int_equal(pos, 0);
	assert_int_equal(atomic_load(&t->ctl.tail), 1 | SHM_RING_SLEEPING);
	free(t);
}

static void full_keeps_and_not_stuck(void **state)
{
	struct t_ring *t = malloc(sizeof(*t));
	uint64_t pos;
	bool wake;
	void *s;
	int i;

	(void)state;
	t_init(t);
	assert_false(shm_ring_stuck(&t->r));
	t_mark(t);
	assert_false(shm_ring_stuck(&t->r)); /* marked, at the head */
	for (i = 0; i < T_SLOTS; i++) {
		s = shm_ring_claim(&t->r, &pos);
		assert_non_null(s);
		shm_ring_commit(s, pos);
	}
	assert_null(shm_ring_claim_wake(&t->r, &pos, &wake));
	assert_true(atomic_load(&t->ctl.tail) & SHM_RING_SLEEPING);
	/* One claimed, never published: stuck, mark or not. */
	while ((s = shm_ring_peek(&t->r)))
		shm_ring_release(&t->r, s);
	assert_non_null(shm_ring_claim(&t->r, &pos));
	assert_true(shm_ring_stuck(&t->r));
	free(t);
}

/* The race: one producer, one consumer that marks when it finds none. */
struct t_race {
	struct t_ring t;
	_Atomic uint64_t pokes; /* producer: marks it cleared, after commit */
	_Atomic bool stop;
};

static uint64_t t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *t_producer(void *arg)
{
	struct t_race *x = arg;
	uint64_t pos;
	bool wake;
	void *s;

	while (!atomic_load(&x->stop)) {
		s = shm_ring_claim_wake(&x->t.r, &pos, &wake);
		if (!s) {
			sched_yield();
			continue;
		}
		shm_ring_commit(s, pos);
		if (wake)
			atomic_fetch_add(&x->pokes, 1);
	}
	return NULL;
}

static void no_lost_wakeup(void **state)
{
	struct t_race *x = malloc(sizeof(*x));
	uint64_t tail, pokes, start;
	unsigned sound = 0;
	pthread_t th;
	void *s;
	int i;

	(void)state;
	memset(x, 0, sizeof(*x));
	t_init(&x->t);
	assert_int_equal(pthread_create(&th, NULL, t_producer, x), 0);
	for (i = 0; i < T_ROUNDS; i++) {
		while ((s = shm_ring_peek(&x->t.r)))
			shm_ring_release(&x->t.r, s);
		pokes = atomic_load(&x->pokes);
		tail = t_mark(&x->t);
		if ((tail & ~SHM_RING_SLEEPING) != x->t.r.head) {
			/* work came first: no sleep; take the mark back */
			atomic_fetch_and(&x->t.ctl.tail, ~SHM_RING_SLEEPING);
			continue;
		}
		/* "Asleep": the next command must come with a poke. */
		sound++;
		start = t_now();
		while (atomic_load(&x->pokes) == pokes &&
		       t_now() - start < T_WAIT_NS)
			sched_yield(); /* the producer may share our CPU */
		assert_int_not_equal(atomic_load(&x->pokes), pokes);
	}
	atomic_store(&x->stop, true);
	pthread_join(th, NULL);
	print_message("%u of %d marks found the ring empty\n", sound, T_ROUNDS);
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(claim_wake_clears),
		cmocka_unit_test(plain_claim_keeps),
		cmocka_unit_test(full_keeps_and_not_stuck),
		cmocka_unit_test(no_lost_wakeup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
