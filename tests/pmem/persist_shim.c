/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * persist_shim.c - an LD_PRELOAD library that observes libpmem's
 * persistence calls from outside a process.  It defines pmem_persist and
 * pmem_msync; libfabric.so reaches them through its PLT, so these run
 * first.  Each calls the real function (dlsym(RTLD_NEXT)) and then, before
 * returning, appends one line to the file named by $PMEM_SHIM_LOG with a
 * single write(2), so the line is on disk (in the page cache of a file
 * another process reads) even if the process is SIGKILLed right after:
 *
 *   persist <addr hex> <len dec> <pid>
 *   msync <addr hex> <len dec> <rc> <pid>
 *
 * Without $PMEM_SHIM_LOG nothing is logged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef void (*persist_fn)(const void *addr, size_t len);
typedef int (*msync_fn)(const void *addr, size_t len);

static int log_fd = -1;

static void shim_log(const char *line, int len)
{
	const char *path;

	if (log_fd < 0) {
		path = getenv("PMEM_SHIM_LOG");
		if (!path)
			return;
		/* O_APPEND: one write(2) per line, never interleaved */
		log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			      0600);
		if (log_fd < 0)
			return;
	}
	if (write(log_fd, line, (size_t)len) != len)
		return;
}

static void *real(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (!fn) {
		/* no libpmem behind us: nothing can be made durable */
		fprintf(stderr, "persist_shim: %s not found: %s\n", name,
			dlerror());
		abort();
	}
	return fn;
}

void pmem_persist(const void *addr, size_t len)
{
	static persist_fn fn;
	char line[128];
	int n;

	if (!fn)
		fn = (persist_fn)real("pmem_persist");
	fn(addr, len);
	n = snprintf(line, sizeof(line), "persist %p %zu %d\n", addr, len,
		     (int)getpid());
	shim_log(line, n);
}

int pmem_msync(const void *addr, size_t len)
{
	static msync_fn fn;
	char line[128];
	int n, rc, err;

	if (!fn)
		fn = (msync_fn)real("pmem_msync");
	rc = fn(addr, len);
	err = errno;
	n = snprintf(line, sizeof(line), "msync %p %zu %d %d\n", addr, len, rc,
		     (int)getpid());
	shim_log(line, n);
	errno = err;
	return rc;
}
