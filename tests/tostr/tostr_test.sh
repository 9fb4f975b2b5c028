#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/tostr/tostr_test.sh - builds src/tostr.c with its entry points
# renamed, links it beside Debian's libfabric 1.17 and runs the
# differential test.  Usage: tostr_test.sh [-I<include dir>]
# The optional include dir (e.g. -I../../include) is used for src/tostr.c
# only; the test driver always sees the reference headers.
# Exit: 0 pass, 1 mismatch, 77 skip (reference libfabric-dev missing).

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
ref_lib=/usr/lib/x86_64-linux-gnu/libfabric.so.1
inc=""
case "$1" in
-I*) inc="-I$(cd "$here" && cd "${1#-I}" && pwd)" || exit 1 ;;
"") ;;
*) echo "usage: $0 [-I<include dir>]" >&2; exit 2 ;;
esac

if [ ! -f /usr/include/rdma/fabric.h ] || [ ! -e "$ref_lib" ]; then
	echo "SKIP: Debian libfabric-dev (1.17) not installed"
	exit 77
fi

CC=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

$CC -std=gnu11 -O1 -g -Wall -Wextra $inc \
	-Dfi_tostr=our_tostr -Dfi_tostr_r=our_tostr_r \
	-c "$top/src/tostr.c" -o "$tmp/tostr.o" || exit 1
$CC -std=gnu11 -O1 -g -Wall -Wextra \
	-c "$here/tostr_test.c" -o "$tmp/tostr_test.o" || exit 1
$CC -o "$tmp/tostr_test" "$tmp/tostr_test.o" "$tmp/tostr.o" \
	"$ref_lib" -lpthread || exit 1

# The reference must be Debian's library, whatever the caller exported.
env -u LD_LIBRARY_PATH -u LD_PRELOAD -u FI_PROVIDER -u FI_PROVIDER_PATH \
	"$tmp/tostr_test"
