/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_ring.c - unit tests of the sleeping mark in an shm ring's tail
 * (SHM_RING_SLEEPING, shm_wire.h): a claim that may wake the owner clears
 * the mark and reports it, a plain claim keeps it, a full ring keeps it,
 * a marked tail at the head is not a stuck ring; and, with a producer
 * thread and a consumer thread that marks its tail whenever its ring is
 * empty, no command is ever published after a mark that found the ring
 * empty without its producer reporting the mark (a lost wakeup).
 * Also the claim's bound: producers go by the published head, a released
 * slot keeps its sequence, a garbage head stops claims until the owner
 * restores it, a skipped slot never yields its late commit, and two
 * producer threads never overwrite a command the consumer has not read.
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
	memset(t, 0, sizeof(*t));
	shm_ring_init(&t->r, &t->ctl, t->slots, T_SLOTS, T_SLOT_SZ);
	shm_ring_format(&t->r);
}

static uint64_t t_seq(struct t_ring *t, uint64_t pos)
{
	return atomic_load((_Atomic uint64_t *)shm_ring_slot(&t->r, pos));
}

static uint64_t t_mark(struct t_ring *t)
{
	return atomic_fetch_or(&t->ctl.tail, SHM_RING_SLEEPING);
}

static void claim_wake_clears(void **state)
{
	struct t_ring *t = malloc(sizeof(*t));
	uint64_t pos = 0;
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
	uint64_t pos = 0;
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
	uint64_t pos = 0;
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
	uint64_t pos = 0;
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

static void head_bounds_claims(void **state)
{
	struct t_ring *t = malloc(sizeof(*t));
	uint64_t pos = 0, seq;
	void *s;
	int i;

	(void)state;
	t_init(t);
	for (i = 0; i < T_SLOTS; i++) {
		s = shm_ring_claim(&t->r, &pos);
		assert_non_null(s);
		shm_ring_commit(s, pos);
	}
	assert_null(shm_ring_claim(&t->r, &pos));
	s = shm_ring_peek(&t->r);
	assert_non_null(s);
	seq = t_seq(t, 0);
	shm_ring_release(&t->r, s);
	assert_int_equal(t_seq(t, 0), seq); /* the consumer wrote no slot */
	assert_int_equal(atomic_load(&t->ctl.head), 1);
	s = shm_ring_claim(&t->r, &pos);
	assert_non_null(s);
	assert_int_equal(pos, T_SLOTS);
	assert_null(shm_ring_claim(&t->r, &pos));
	shm_ring_commit(s, pos);
	while ((s = shm_ring_peek(&t->r)))
		shm_ring_release(&t->r, s);
	assert_int_equal(t->r.head, T_SLOTS + 1);

	/* Garbage in the published head: claims fail until restored. */
	atomic_store(&t->ctl.head, 0x123456789abcULL);
	assert_null(shm_ring_claim(&t->r, &pos));
	atomic_store(&t->ctl.head, ~0ULL);
	assert_null(shm_ring_claim(&t->r, &pos));
	assert_true(shm_ring_repair(&t->r));
	assert_false(shm_ring_repair(&t->r));
	s = shm_ring_claim(&t->r, &pos);
	assert_non_null(s);
	assert_int_equal(pos, T_SLOTS + 1);
	free(t);
}

static void skip_drops_late_commit(void **state)
{
	struct t_ring *t = malloc(sizeof(*t));
	uint64_t pos = 0, dead = 0;
	void *ds, *s;
	int i;

	(void)state;
	t_init(t);
	ds = shm_ring_claim(&t->r, &dead);
	assert_non_null(ds);
	assert_true(shm_ring_stuck(&t->r));
	assert_true(shm_ring_skip(&t->r));
	assert_int_equal(t->r.head, 1);
	assert_int_equal(atomic_load(&t->ctl.head), 1);
	shm_ring_commit(ds, dead); /* too late: its lap is over */
	for (i = 1; i < T_SLOTS; i++) {
		s = shm_ring_claim(&t->r, &pos);
		assert_non_null(s);
		shm_ring_commit(s, pos);
	}
	for (i = 1; i < T_SLOTS; i++) {
		s = shm_ring_peek(&t->r);
		assert_non_null(s);
		shm_ring_release(&t->r, s);
	}
	assert_int_equal(t->r.head, T_SLOTS);
	assert_null(shm_ring_peek(&t->r)); /* slot 0 holds the late one */
	assert_false(shm_ring_stuck(&t->r));

	/* A commit that lands before the skip wins. */
	s = shm_ring_claim(&t->r, &pos);
	assert_non_null(s);
	assert_int_equal(pos, T_SLOTS);
	shm_ring_commit(s, pos);
	assert_false(shm_ring_skip(&t->r));
	assert_ptr_equal(shm_ring_peek(&t->r), s);
	free(t);
}

/* Two producers, a tiny ring, payloads written after the claim. */
#define T_MP_N 200000

struct t_mp {
	struct shm_ring r; /* the producer's private handle */
	int id;
	_Atomic bool *stop;
};

struct t_mp_cmd {
	_Atomic uint64_t seq;
	uint64_t id, n;
	uint8_t pad[T_SLOT_SZ - 4 * sizeof(uint64_t)];
	uint64_t check;
};

static void *t_mp_producer(void *arg)
{
	struct t_mp *x = arg;
	struct t_mp_cmd *c;
	uint64_t pos = 0, n;

	for (n = 0; n < T_MP_N; n++) {
		while (!(c = shm_ring_claim(&x->r, &pos))) {
			if (atomic_load(x->stop))
				return NULL;
			sched_yield();
		}
		c->id = (uint64_t)x->id;
		c->n = n;
		c->check = n * 3 + (uint64_t)x->id;
		shm_ring_commit(c, pos);
	}
	return NULL;
}

static void producers_never_overrun(void **state)
{
	struct t_ring *t = malloc(sizeof(*t));
	uint64_t next[2] = {0, 0}, start = t_now(), bad = 0;
	_Atomic bool stop = false;
	struct t_mp_cmd *c;
	struct t_mp x[2];
	pthread_t th[2];
	int i;

	(void)state;
	_Static_assert(sizeof(struct t_mp_cmd) == T_SLOT_SZ, "slot");
	t_init(t);
	for (i = 0; i < 2; i++) {
		x[i].id = i;
		x[i].stop = &stop;
		shm_ring_init(&x[i].r, &t->ctl, t->slots, T_SLOTS, T_SLOT_SZ);
		assert_int_equal(
			pthread_create(&th[i], NULL, t_mp_producer, &x[i]), 0);
	}
	while (!bad && next[0] + next[1] < 2 * T_MP_N &&
	       t_now() - start < T_WAIT_NS) {
		c = shm_ring_peek(&t->r);
		if (!c) {
			sched_yield();
			continue;
		}
		if (c->id > 1 || c->n != next[c->id] ||
		    c->check != c->n * 3 + c->id)
			bad++;
		else
			next[c->id]++;
		shm_ring_release(&t->r, c);
	}
	atomic_store(&stop, true);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(bad, 0);
	assert_int_equal(next[0], T_MP_N);
	assert_int_equal(next[1], T_MP_N);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(claim_wake_clears),
		cmocka_unit_test(plain_claim_keeps),
		cmocka_unit_test(full_keeps_and_not_stuck),
		cmocka_unit_test(no_lost_wakeup),
		cmocka_unit_test(head_bounds_claims),
		cmocka_unit_test(skip_drops_late_commit),
		cmocka_unit_test(producers_never_overrun),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
