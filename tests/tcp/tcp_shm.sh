#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tcp_shm.sh - tcp's same-host path (FI_TCP_SHM, on by default; make check
# turns it off for the other tcp tests so they test TCP): tests/tcp/tcp_shm
# (also in the ASan stage) with the path on (one sender through shm, one
# by TCP, one CQ, FI_SOURCE and directed receives across both, the route
# checked by the TCP connections A accepted) and off; then, with the path
# on, the feature,
# RMA, atomic, delivery-complete and multi-process suites of
# tcp_features.sh, tcp_commit.sh (fi_commit, FI_COMMIT events), Debian's
# fi_pingpong (-e rdm) and Open MPI's mtl/ofi and osc/rdma runs of
# mpi.sh, all between processes on this host.
set -u
: "${top_builddir:?}" "${top_srcdir:?}"
bin=$top_builddir/tests/tcp/tcp_shm
fail=0
run() {
	echo "== $*"
	"$@"
	rc=$?
	[ $rc = 0 ] || [ $rc = 77 ] || { echo "FAILED ($rc): $*"; fail=1; }
}
run timeout 120 "$bin"
export FI_TCP_SHM=1
run sh "$top_srcdir/tests/tcp/tcp_features.sh"
run sh "$top_srcdir/tests/tcp/tcp_commit.sh"
run sh "$top_srcdir/tests/interop/fi_pingpong_tcp.sh"
run sh "$top_srcdir/tests/mpi/mpi.sh"
exit $fail
