/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_test.h - helpers shared by the hmem cmocka programs: pointing the
 * CUDA / ZE library parameters at the fake drivers, reaching the fakes'
 * call counters, and the two-process IPC exchange (hmem_test_common.c).
 */
#ifndef HMEM_TEST_H
#define HMEM_TEST_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ofi_hmem.h"

/*
 * Makes @env_var (FI_HMEM_CUDA_LIBRARY, ...) name a library to test
 * against: kept when already set (a real driver, from gpu-check.sh), else
 * @libname in $HMEM_FAKE_DIR or the compile-time HMEM_FAKE_DIR. Returns
 * false when there is nothing to test against.
 */
bool hmem_test_pick_lib(const char *env_var, const char *libname);

/*
 * The fake's counter function (fake_cuda_calls / fake_ze_calls) from the
 * library @env_var names, or NULL for a real driver.
 */
typedef unsigned long (*hmem_fake_calls_fn)(const char *name);
typedef void (*hmem_fake_fail_fn)(const char *name, int code);
hmem_fake_calls_fn hmem_test_fake_calls(const char *env_var, const char *sym);
hmem_fake_fail_fn hmem_test_fake_fail(const char *env_var, const char *sym);

/*
 * Exports a device buffer of @iface to a fresh process (fork + exec of
 * @self), which maps it, checks and rewrites it and copies through its own
 * device buffer; returns 0 when both sides saw the right data.
 */
int hmem_test_ipc_parent(enum fi_hmem_iface iface, const char *self);

/* When argv says "--ipc-child", runs the child side and returns its exit
 * status; -1 otherwise. */
int hmem_test_ipc_child(int argc, char **argv);

void hmem_test_fill(void *buf, size_t len, unsigned seed);
bool hmem_test_check(const void *buf, size_t len, unsigned seed);

#endif /* HMEM_TEST_H */
