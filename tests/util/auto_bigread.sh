#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/util/auto_bigread, 16 MiB reads under
# FI_PROGRESS_AUTO awaited in fi_cntr_wait, data checked: over shm, and
# over tcp and sockets with their same-host path on and off; bounded in
# the times the threads sleep per read.
set -u
bin=${top_builddir:?}/tests/util/auto_bigread
fail=0
run() {
	timeout 300 "$@"
	rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail=1
}
run "$bin" shm
FI_TCP_SHM=1 run "$bin" tcp
FI_TCP_SHM=0 run "$bin" tcp
FI_SOCKETS_SHM=1 run "$bin" sockets
FI_SOCKETS_SHM=0 run "$bin" sockets
exit $fail
