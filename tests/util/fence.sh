#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: FI_FENCE (tests/util/fence.c) on every provider
# built here, on each path: shm with and without CMA; tcp and sockets on the same-host path
# and over TCP.
set -u
bld=${top_builddir:?}
bin=$bld/tests/util/fence
FI_TCP_IFACE=${FI_TCP_IFACE:-lo}
FI_SOCKETS_IFACE=${FI_SOCKETS_IFACE:-lo}
export FI_TCP_IFACE FI_SOCKETS_IFACE
fail=0 ran=0

# run PROV "VAR=VALUE": skipped unless PROV is built here
run() {
	up=$(echo "$1" | tr a-z A-Z)
	grep -q "define HAVE_$up 1" "$bld/config.h" || return 0
	echo "== $1 $2"
	env "$2" timeout 60 "$bin" "$1" || { echo "FAILED: $1 $2"; fail=1; }
	ran=1
}

run shm "FI_SHM_DISABLE_CMA=0"
run shm "FI_SHM_DISABLE_CMA=1"
run tcp "FI_TCP_SHM=1"
run tcp "FI_TCP_SHM=0"
run sockets "FI_SOCKETS_SHM=1"
run sockets "FI_SOCKETS_SHM=0"
[ $ran = 1 ] || exit 77
exit $fail
