#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/util/auto_wake, a reader asleep in
# fi_cntr_wait and fi_cq_sread under FI_PROGRESS_AUTO is woken by the
# completion itself, not by a timer: over shm, over tcp and sockets with
# their same-host path on and off.
set -u
bin=${top_builddir:?}/tests/util/auto_wake
fail=0
run() {
	timeout 150 "$@"
	rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail=1
}
run "$bin" shm
FI_TCP_SHM=1 run "$bin" tcp
FI_TCP_SHM=0 run "$bin" tcp
FI_SOCKETS_SHM=1 run "$bin" sockets
FI_SOCKETS_SHM=0 run "$bin" sockets
exit $fail
