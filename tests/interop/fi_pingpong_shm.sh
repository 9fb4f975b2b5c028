#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fi_pingpong_shm.sh - interop check of the shm provider: Debian's unmodified
# fi_pingpong (libfabric-bin) runs against our library in -m msg and
# -m tagged modes with data checks over all sizes. Exits 77 (skip) when
# fi_pingpong is not installed, non-zero when either mode fails.
#
# Environment: OFI_LIBDIR (default: the build's .libs), PINGPONG_ITERS
# (default 100), PINGPONG_TIMEOUT (seconds per run, default 300: with -c
# over all sizes Debian's own library needs about 90 s on two cores).
LIBDIR=${OFI_LIBDIR:-${top_builddir:-.}/.libs}
ITERS=${PINGPONG_ITERS:-100}
TMO=${PINGPONG_TIMEOUT:-300}
PP=$(command -v fi_pingpong) || { echo "SKIP: fi_pingpong not found"; exit 77; }
[ -e "$LIBDIR/libfabric.so.1" ] || { echo "FAIL: no $LIBDIR/libfabric.so.1"; exit 1; }

# shellcheck source=tests/interop/pingpong_lib.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/interop/pingpong_lib.sh"
for mode in msg tagged; do
	pingpong "-m $mode" -p shm -e rdm -I "$ITERS" -m "$mode"
done
exit $fail
