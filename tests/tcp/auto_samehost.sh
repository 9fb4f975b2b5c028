#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/tcp/auto_samehost, FI_PROGRESS_AUTO on the
# same-host path. A target process (and a second endpoint of one
# process) that calls nothing after its setup gets RMA writes, an atomic
# and a send: over tcp and sockets with their shm path on, and over shm.
set -u
bin=${top_builddir:?}/tests/tcp/auto_samehost
fail=0
run() {
	timeout 120 "$@"
	rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail=1
}
FI_TCP_SHM=1 run "$bin" tcp
FI_SOCKETS_SHM=1 run "$bin" sockets
run "$bin" shm
exit $fail
