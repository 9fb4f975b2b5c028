#!/bin/sh
# make check wrapper (issue 16): tests/shm/shared_core over tcp, both
# processes on one CPU, with the same-host path off (the TCP path and its
# progress) and on (through shm). It fails with FI_PROGRESS_SPIN=-1.
set -u
bin=${top_builddir:?}/tests/shm/shared_core
fail=0
for shm in 0 1; do
	echo "== FI_TCP_SHM=$shm"
	FI_TCP_SHM=$shm timeout 300 "$bin" tcp
	rc=$?
	[ $rc = 0 ] || [ $rc = 77 ] || fail=1
done
exit $fail
