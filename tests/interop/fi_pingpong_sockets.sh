#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fi_pingpong_sockets.sh - interop check of the sockets provider: Debian's
# fi_info -p sockets lists an RDM, an MSG and a DGRAM entry, and its
# unmodified fi_pingpong (libfabric-bin) runs against our library with
# -p sockets -e rdm (tagged), -e msg (passive endpoint,
# fi_connect/fi_accept) and -e dgram (UDP, -m msg and -m tagged), with
# data checks over all sizes (a datagram's up to max_msg_size, 48k: 32
# lines), under sockets' default automatic progress. Exits 77 (skip) when fi_pingpong is not
# installed, non-zero when any run fails.
#
# Environment: OFI_LIBDIR (default: the build's .libs), PINGPONG_ITERS
# (default 20), PINGPONG_TIMEOUT (seconds per run, default 300).
LIBDIR=${OFI_LIBDIR:-${top_builddir:-.}/.libs}
ITERS=${PINGPONG_ITERS:-20}
TMO=${PINGPONG_TIMEOUT:-300}
PP=$(command -v fi_pingpong) || { echo "SKIP: fi_pingpong not found"; exit 77; }
[ -e "$LIBDIR/libfabric.so.1" ] || { echo "FAIL: no $LIBDIR/libfabric.so.1"; exit 1; }

# Debian's fi_info lists both endpoint types under the name sockets.
INFO=$(command -v fi_info)
if [ -n "$INFO" ]; then
	out=$(LD_LIBRARY_PATH=$LIBDIR "$INFO" -p sockets 2>&1)
	if [ "$(echo "$out" | grep -c 'provider: sockets')" -lt 3 ] ||
		! echo "$out" | grep -q 'type: *FI_EP_RDM' ||
		! echo "$out" | grep -q 'type: *FI_EP_MSG' ||
		! echo "$out" | grep -q 'type: *FI_EP_DGRAM'; then
		echo "FAIL: fi_info -p sockets"
		echo "$out"
		exit 1
	fi
	echo "PASS: fi_info -p sockets"
fi

# shellcheck source=tests/interop/pingpong_lib.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/interop/pingpong_lib.sh"
for run in rdm:tagged msg:msg; do
	ep=${run%%:*}
	mode=${run#*:}
	pingpong "-p sockets -e $ep -m $mode" -p sockets -e "$ep" \
		-I "$ITERS" -m "$mode"
done
for mode in msg tagged; do
	PP_MIN_LINES=32 pingpong "-p sockets -e dgram -m $mode" -p sockets \
		-e dgram -I "$ITERS" -m "$mode"
done
exit $fail
