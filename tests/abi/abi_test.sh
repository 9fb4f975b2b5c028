#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# ABI table test: every struct size, member offset/size, enum value and
# integer/string #define of the reference (Debian 1.17) public headers must
# come out the same when compiled against our include dir.  Differences
# listed in extensions.allow (our documented appended ops slots) pass.
#
# usage: abi_test.sh [OUR_INCLUDE_DIR]     (default: <tree>/include)
# env:   ABI_REF_INCLUDE (default /usr/include), CC_ABI (default gcc),
#        CLANG (default clang), ABI_KEEP=1 keeps the work dir.
# exit:  0 pass, 1 differences, 77 skip (no reference headers/tools),
#        2 harness error (e.g. our headers do not compile).

here=$(cd "$(dirname "$0")" && pwd)
ours=${1:-$here/../../include}
ref=${ABI_REF_INCLUDE:-/usr/include}

if [ ! -f "$ref/rdma/fabric.h" ] || [ ! -f "$ref/rdma/fi_ext.h" ]; then
	echo "abi: SKIP: reference headers not found in $ref"
	exit 77
fi
for tool in "${CLANG:-clang}" "${CC_ABI:-gcc}" python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "abi: SKIP: $tool not found"
		exit 77
	fi
done
if [ ! -f "$ours/rdma/fabric.h" ]; then
	echo "abi: FAIL: no rdma/fabric.h in $ours"
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/abi_test.XXXXXX") || exit 2
if [ -z "$ABI_KEEP" ]; then
	trap 'rm -rf "$work"' EXIT
else
	echo "abi: keeping $work"
fi

py="python3 $here/abi_table.py"
$py gen "$ref" "$work/table.c" || exit 2
$py run "$ref" "$work/table.c" "$work/ref.txt" "$ref" || exit 2
if ! $py run "$ours" "$work/table.c" "$work/ours.txt" "$ref"; then
	echo "abi: FAIL: could not build the table against $ours"
	exit 1
fi
$py compare "$work/ref.txt" "$work/ours.txt" "$here/extensions.allow"
