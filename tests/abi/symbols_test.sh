#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Symbol test: our libfabric.so.1 must export every fi_* symbol@version of
# Debian's libfabric 1.17 with the same default (@@) / compat (@) status,
# and no other fi_* symbols unless listed in symbols.allow.
#
# usage: symbols_test.sh PATH_TO_OUR_libfabric.so.1
# env:   SYMBOLS_REF_LIB (default /usr/lib/x86_64-linux-gnu/libfabric.so.1),
#        OBJDUMP (default objdump)
# exit:  0 pass, 1 fail, 77 skip (no reference library or objdump), 2 usage

here=$(cd "$(dirname "$0")" && pwd)
ref=${SYMBOLS_REF_LIB:-/usr/lib/x86_64-linux-gnu/libfabric.so.1}
objdump=${OBJDUMP:-objdump}

if [ $# -ne 1 ]; then
	echo "usage: $0 PATH_TO_OUR_libfabric.so.1" >&2
	exit 2
fi
if [ ! -f "$ref" ]; then
	echo "symbols: SKIP: reference library $ref not found"
	exit 77
fi
for tool in "$objdump" python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "symbols: SKIP: $tool not found"
		exit 77
	fi
done
if [ ! -f "$1" ]; then
	echo "symbols: FAIL: $1 not found"
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/symbols_test.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

"$objdump" -T "$ref" >"$work/ref.txt" || exit 2
if ! "$objdump" -T "$1" >"$work/ours.txt"; then
	echo "symbols: FAIL: objdump -T $1 failed"
	exit 1
fi
python3 "$here/symbols_check.py" "$work/ref.txt" "$work/ours.txt" \
	"$here/symbols.allow"
