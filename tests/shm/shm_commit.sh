#!/bin/sh
# make check wrapper: fi_commit, FI_COMMIT_COMPLETE and FI_COMMIT_MANUAL on shm.
set -u
bin=${top_builddir:?}/tests/shm/shm_commit
echo "== shm_commit"
exec timeout 120 "$bin"
