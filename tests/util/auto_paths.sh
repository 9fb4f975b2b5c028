#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# auto_paths.sh PROGRAM SECONDS: runs PROGRAM PROVIDER over every path
# automatic progress must keep: shm, and tcp and sockets with their
# same-host path on and off, each bounded at SECONDS. Exit 1 if a run
# fails; 77 (no such provider here) is not a failure.
set -u
bin=$1
tmo=$2
fail=0
run() {
	timeout "$tmo" "$bin" "$1"
	rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail=1
}
run shm
FI_TCP_SHM=1 run tcp
FI_TCP_SHM=0 run tcp
FI_SOCKETS_SHM=1 run sockets
FI_SOCKETS_SHM=0 run sockets
exit $fail
