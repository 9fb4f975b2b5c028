/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fake_dev.h - the "device" both fake drivers (fake_cuda.c, fake_ze.c)
 * pretend to have: per device, a shared-memory file mapped at a fixed,
 * recognisable address, a bump allocator over it, a table of the ranges
 * handed out (own allocations and mapped IPC imports) for pointer queries,
 * and per-call counters with one-shot failure injection that tests reach
 * through the drivers' exported query functions. Included once per fake.
 */
#ifndef FAKE_DEV_H
#define FAKE_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FAKE_MAX_DEV	  4
#define FAKE_DEV_SPAN	  (1ULL << 30)	/* address space per device */
#define FAKE_DEV_SIZE	  (64ULL << 20) /* backing file per device */
#define FAKE_PAGE	  4096ULL
#define FAKE_MAX_SEGS	  1024
#define FAKE_MAX_COUNTERS 64

enum fake_seg_kind {
	FAKE_SEG_FREE,
	FAKE_SEG_ALLOC,
	FAKE_SEG_IPC,
	FAKE_SEG_HOST
};

struct fake_seg {
	enum fake_seg_kind kind;
	uintptr_t start;
	size_t size;
	int dev;
	uint64_t file_off; /* offset of an allocation in its device file */
};

struct fake_counter {
	const char *name;
	unsigned long calls;
	int fail_with; /* non-zero: the next call answers this */
};

struct fake_state {
	pthread_mutex_t lock;
	int ndev;
	int fd[FAKE_MAX_DEV];
	uint64_t bump[FAKE_MAX_DEV];
	uintptr_t ipc_next;
	struct fake_seg segs[FAKE_MAX_SEGS];
	struct fake_counter counters[FAKE_MAX_COUNTERS];
};

static struct fake_state fake = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct fake_counter *fake_counter(const char *name)
{
	int i;

	for (i = 0; i < FAKE_MAX_COUNTERS && fake.counters[i].name; i++)
		if (!strcmp(fake.counters[i].name, name))
			return &fake.counters[i];
	if (i == FAKE_MAX_COUNTERS)
		return NULL;
	fake.counters[i].name = name;
	return &fake.counters[i];
}

/* Counts a call; returns the injected failure code, 0 normally. */
static int fake_enter(const char *name)
{
	struct fake_counter *c;
	int fail = 0;

	pthread_mutex_lock(&fake.lock);
	c = fake_counter(name);
	if (c) {
		c->calls++;
		fail = c->fail_with;
		c->fail_with = 0;
	}
	pthread_mutex_unlock(&fake.lock);
	return fail;
}

static unsigned long fake_calls(const char *name)
{
	unsigned long n = 0;
	int i;

	pthread_mutex_lock(&fake.lock);
	for (i = 0; i < FAKE_MAX_COUNTERS && fake.counters[i].name; i++)
		if (!strcmp(fake.counters[i].name, name))
			n = fake.counters[i].calls;
	pthread_mutex_unlock(&fake.lock);
	return n;
}

static void fake_fail_next(const char *name, int code)
{
	struct fake_counter *c;

	pthread_mutex_lock(&fake.lock);
	c = fake_counter(name);
	if (c)
		c->fail_with = code;
	pthread_mutex_unlock(&fake.lock);
}

static void fake_reset_calls(void)
{
	int i;

	pthread_mutex_lock(&fake.lock);
	for (i = 0; i < FAKE_MAX_COUNTERS; i++) {
		fake.counters[i].calls = 0;
		fake.counters[i].fail_with = 0;
	}
	pthread_mutex_unlock(&fake.lock);
}

/* Caller holds the lock. The segment containing [p, p + len), or NULL. */
static struct fake_seg *fake_find(uintptr_t p, size_t len, bool host_too)
{
	struct fake_seg *s;
	int i;

	for (i = 0; i < FAKE_MAX_SEGS; i++) {
		s = &fake.segs[i];
		if (s->kind == FAKE_SEG_FREE ||
		    (s->kind == FAKE_SEG_HOST && !host_too))
			continue;
		if (p >= s->start && p - s->start < s->size &&
		    len <= s->size - (p - s->start))
			return s;
	}
	return NULL;
}

static struct fake_seg *fake_new_seg(void)
{
	int i;

	for (i = 0; i < FAKE_MAX_SEGS; i++)
		if (fake.segs[i].kind == FAKE_SEG_FREE)
			return &fake.segs[i];
	return NULL;
}

/* Maps device @dev's file at its fixed address. Caller holds the lock. */
static int fake_map_dev(uintptr_t base, int dev, int fd)
{
	void *p;

	if (ftruncate(fd, (off_t)FAKE_DEV_SIZE))
		return -1;
	p = mmap((void *)(base + dev * FAKE_DEV_SPAN), FAKE_DEV_SIZE,
		 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
		 0);
	if (p == MAP_FAILED)
		return -1;
	if ((uintptr_t)p != base + dev * FAKE_DEV_SPAN) {
		munmap(p, FAKE_DEV_SIZE);
		return -1;
	}
	fake.fd[dev] = fd;
	fake.bump[dev] = FAKE_PAGE; /* never hand out offset 0 (NULL-ish) */
	return 0;
}

/* Bump allocation in device @dev; 0 when out of "device memory". */
static uintptr_t fake_alloc(uintptr_t base, int dev, size_t size)
{
	struct fake_seg *s;
	uint64_t len = (size + FAKE_PAGE - 1) & ~(FAKE_PAGE - 1);
	uintptr_t p = 0;

	if (!len)
		len = FAKE_PAGE;
	pthread_mutex_lock(&fake.lock);
	s = fake_new_seg();
	if (!s || fake.bump[dev] + len > FAKE_DEV_SIZE)
		goto out;
	s->kind = FAKE_SEG_ALLOC;
	s->dev = dev;
	s->file_off = fake.bump[dev];
	s->start = base + dev * FAKE_DEV_SPAN + s->file_off;
	s->size = size ? size : 1;
	fake.bump[dev] += len;
	p = s->start;
out:
	pthread_mutex_unlock(&fake.lock);
	return p;
}

/* Frees an allocation by its base; false when @p is none. */
static bool fake_free(uintptr_t p)
{
	struct fake_seg *s;
	bool ok = false;

	pthread_mutex_lock(&fake.lock);
	s = fake_find(p, 1, false);
	if (s && s->kind == FAKE_SEG_ALLOC && s->start == p) {
		s->kind = FAKE_SEG_FREE;
		ok = true;
	}
	pthread_mutex_unlock(&fake.lock);
	return ok;
}

/* Maps @size bytes of @fd at @off into the import window. */
static uintptr_t fake_map_import(int fd, uint64_t off, size_t size, int dev)
{
	struct fake_seg *s;
	size_t len = (size + FAKE_PAGE - 1) & ~(FAKE_PAGE - 1);
	uintptr_t p = 0;
	void *m;

	pthread_mutex_lock(&fake.lock);
	s = fake_new_seg();
	if (!s)
		goto out;
	m = mmap((void *)fake.ipc_next, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, (off_t)off);
	if (m == MAP_FAILED)
		goto out;
	s->kind = FAKE_SEG_IPC;
	s->start = (uintptr_t)m;
	s->size = size;
	s->dev = dev;
	s->file_off = off;
	fake.ipc_next += len + FAKE_PAGE;
	p = s->start;
out:
	pthread_mutex_unlock(&fake.lock);
	return p;
}

static bool fake_unmap_import(uintptr_t p)
{
	struct fake_seg *s;
	bool ok = false;

	pthread_mutex_lock(&fake.lock);
	s = fake_find(p, 1, false);
	if (s && s->kind == FAKE_SEG_IPC && s->start == p) {
		munmap((void *)s->start, s->size);
		s->kind = FAKE_SEG_FREE;
		ok = true;
	}
	pthread_mutex_unlock(&fake.lock);
	return ok;
}

/* Copy of the segment holding [p, p + len); false when there is none. */
static bool fake_lookup(uintptr_t p, size_t len, bool host_too,
			struct fake_seg *out)
{
	struct fake_seg *s;

	pthread_mutex_lock(&fake.lock);
	s = fake_find(p, len ? len : 1, host_too);
	if (s)
		*out = *s;
	pthread_mutex_unlock(&fake.lock);
	return s != NULL;
}

#endif /* FAKE_DEV_H */
