#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/tostr/strerror_compare.sh - runs two fi_strerror binaries with the
# same single-argument cases and compares output and exit status.
# Usage: strerror_compare.sh REFERENCE CANDIDATE [LD_LIBRARY_PATH]
# Exit: 0 all equal, 1 a difference, 2 usage, 77 a binary is missing.

if [ $# -lt 2 ]; then
	echo "usage: $0 REFERENCE CANDIDATE [LD_LIBRARY_PATH]" >&2
	exit 2
fi
for bin in "$1" "$2"; do
	[ -x "$bin" ] || { echo "SKIP: $bin is not an executable"; exit 77; }
done
if [ -n "${3:-}" ]; then
	LD_LIBRARY_PATH=$3
	export LD_LIBRARY_PATH
else
	unset LD_LIBRARY_PATH
fi
ref=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cand=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# Same argv[0] for both: the usage text names the program.
mkdir "$tmp/ref" "$tmp/cand"
ln -s "$ref" "$tmp/ref/fi_strerror"
ln -s "$cand" "$tmp/cand/fi_strerror"
cd "$tmp" || exit 1

total=0
bad=0
for arg in NOARG 0 1 22 61 -61 0x3d 075 08 255 256 257 258 259 260 261 \
	262 263 264 265 266 267 268 999 abc 12abc -h --help 2147483647 \
	2147483648 -2147483648 -2147483649 99999999999 +7 -0x10; do
	total=$((total + 1))
	if [ "$arg" = NOARG ]; then
		(cd ref && ./fi_strerror) > "$tmp/r" 2>&1; r1=$?
		(cd cand && ./fi_strerror) > "$tmp/c" 2>&1; r2=$?
	else
		(cd ref && ./fi_strerror "$arg") > "$tmp/r" 2>&1; r1=$?
		(cd cand && ./fi_strerror "$arg") > "$tmp/c" 2>&1; r2=$?
	fi
	if ! cmp -s "$tmp/r" "$tmp/c" || [ "$r1" != "$r2" ]; then
		bad=$((bad + 1))
		echo "DIFF fi_strerror $arg (exit $r1 vs $r2)"
		diff "$tmp/r" "$tmp/c" | head -6
	fi
done
echo "strerror_compare: $total cases, $bad differ"
[ "$bad" -eq 0 ]
