#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pingpong_headline.sh - contrib/pingpong.sh (what contrib/quickstart.sh
# shows a newcomer) against this build: it must succeed, its figures must
# come from runs without data checks (no -c on the commands it prints
# above its tables) and one checked run of each program must pass.
# The build stands in for an install prefix (include/ and lib/ links).
set -u
top_builddir=${top_builddir:-.}
src=$(cd "${top_srcdir:-$(dirname "$0")/../..}" && pwd)
LIBDIR=$(cd "${OFI_LIBDIR:-$top_builddir/.libs}" && pwd)
command -v make >/dev/null || { echo "SKIP: no make"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/prefix"
ln -s "$src/include" "$work/prefix/include"
ln -s "$LIBDIR" "$work/prefix/lib"
PINGPONG_ITERS=${PINGPONG_ITERS:-100} sh "$src/contrib/pingpong.sh" \
	"$work/prefix" >"$work/out" 2>&1
rc=$?
fail=0
# check DESC CONDITION-RESULT
check() {
	if [ "$2" = 0 ]; then
		echo "PASS: $1"
	else
		echo "FAIL: $1"
		fail=1
	fi
}
check "pingpong.sh exits 0 (exit $rc)" $rc
heads=$(grep '^   .*pingpong ' "$work/out")
[ -n "$heads" ] && ! printf '%s\n' "$heads" | grep -q -- ' -c\b'
check "headline runs without data check" $?
grep -q '^1m ' "$work/out"
check "headline table reaches 1 MiB" $?
n=$(grep -c '^== correctness: .*: PASS, every byte checked' "$work/out")
expect=1
[ -x /usr/bin/fi_pingpong ] && expect=2
[ "$n" -eq "$expect" ]
check "$n of $expect checked runs pass" $?
[ $fail = 0 ] || cat "$work/out"
exit $fail
