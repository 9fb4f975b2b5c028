#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fi_pingpong_tcp.sh - interop check of the tcp provider's endpoints:
# Debian's unmodified fi_pingpong (libfabric-bin) runs against our library
# with -e rdm (native; Debian itself only offers it layered as
# tcp;ofi_rxm) and -e msg (passive endpoint, fi_connect/fi_accept), each
# in -m msg and -m tagged modes with data checks over all sizes. Exits 77
# (skip) when fi_pingpong is not installed, non-zero when any run fails.
#
# Environment: OFI_LIBDIR (default: the build's .libs), PINGPONG_ITERS
# (default 20, about 13 s per endpoint type), PINGPONG_TIMEOUT (seconds
# per run, default 300).
LIBDIR=${OFI_LIBDIR:-${top_builddir:-.}/.libs}
ITERS=${PINGPONG_ITERS:-20}
TMO=${PINGPONG_TIMEOUT:-300}
PP=$(command -v fi_pingpong) || { echo "SKIP: fi_pingpong not found"; exit 77; }
[ -e "$LIBDIR/libfabric.so.1" ] || { echo "FAIL: no $LIBDIR/libfabric.so.1"; exit 1; }

# shellcheck source=tests/interop/pingpong_lib.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/interop/pingpong_lib.sh"
for run in rdm:msg rdm:tagged msg:msg msg:tagged; do
	ep=${run%%:*}
	mode=${run#*:}
	pingpong "-e $ep -m $mode" -p tcp -e "$ep" -I "$ITERS" -m "$mode"
done
exit $fail
