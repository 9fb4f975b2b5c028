#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: persistent memory over tcp.
# 1. shm's in-process test (tests/shm/shm_commit.c) over tcp
#    (SHM_TEST_PROV): commits of 1..4 ranges persisted exactly, FI_EACCES
#    for bad keys/ranges and non-persistent registrations, a commit behind
#    many writes, FI_COMMIT_COMPLETE writes, atomics and sends (a posted
#    persistent receive buffer, an unexpected message whose sender waits
#    for the receive, a volatile buffer that is delivery complete),
#    FI_COMMIT_MANUAL with handlers and queued events, argument errors.
# 2. tests/pmem/durability over tcp (PMEM_DURABILITY_PROV): targets killed
#    right after the commit completes, every committed byte found by a
#    fresh process and covered by a logged libpmem call of the target
#    (PMEM_DURABILITY_TRIALS, default 7: one of each kind).
# Skips (77) when the library is built without libpmem.
set -u
bld=${top_builddir:?}
bin=$bld/tests/shm/shm_commit
[ -x "$bin" ] || { echo "SKIP: $bin not built (shm disabled)"; exit 77; }
echo "== shm_commit tcp"
SHM_TEST_PROV=tcp timeout 120 "$bin"
rc=$?
[ $rc -eq 77 ] && exit 77
echo "== durability tcp"
export LD_LIBRARY_PATH="$OFI_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PMEM_SHIM="$bld/tests/pmem/.libs/persist_shim.so" \
PMEM_DURABILITY_TRIALS=${PMEM_DURABILITY_TRIALS:-7} \
	timeout 120 "$bld/tests/pmem/durability" -p tcp -K
drc=$?
[ $rc -ne 0 ] && exit $rc
exit $drc
