#!/bin/sh
# make check wrapper: shm's in-process persistent-memory test
# (tests/shm/shm_commit.c) over the tcp provider (SHM_TEST_PROV): commits
# of 1..4 ranges persisted exactly, FI_EACCES for bad keys/ranges and
# non-persistent registrations, a commit behind many writes, and
# FI_COMMIT_COMPLETE writes, atomics and sends (a posted persistent
# receive buffer, an unexpected message whose sender waits for the
# receive, a volatile buffer that is delivery complete), FI_COMMIT_MANUAL
# with handlers and queued events, argument errors. Skips (77) when the
# library is built without libpmem.
set -u
bin=${top_builddir:?}/tests/shm/shm_commit
[ -x "$bin" ] || { echo "SKIP: $bin not built (shm disabled)"; exit 77; }
echo "== shm_commit tcp"
SHM_TEST_PROV=tcp exec timeout 120 "$bin"
