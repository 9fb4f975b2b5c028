#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/shm/shared_core over tcp, both
# processes on one CPU, with the same-host path off (the TCP path and its
# progress) and on (through shm). It fails with FI_PROGRESS_SPIN=-1, and
# with FI_TCP_SHM=0 when socket progress that moves frames does not count
# as work (ofi_yield_busy in ofi_sock_progress): the RMA write target
# sleeps once per window.
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
