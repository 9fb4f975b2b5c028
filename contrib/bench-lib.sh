#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# bench-lib.sh: what contrib/bench.sh and contrib/mpi-bench.sh share
# (sourced, not run): their command-line plumbing (die, usage, where our
# library is, whether two cpus can be pinned) and the statistics: medians
# and extremes of the numbers in a file (one a line), ratios, and target
# verdicts.

die() {
	echo "$(basename "$0"): $*" >&2
	exit 2
}

# the script's "# usage:" comment block
usage() {
	sed -n '/^# usage:/,/^$/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
}

# default_ourlib TOP: the first directory holding our libfabric.so.1 of
# ./build/.libs, ./install/lib, then the same under TOP; empty if none
default_ourlib() {
	local d
	for d in ./build/.libs ./install/lib "$1/build/.libs" \
		"$1/install/lib"; do
		[ -e "$d/libfabric.so.1" ] && { echo "$d"; return; }
	done
}

# pin_check: with pin=1, turns pinning off (pin=0) when cpus 0 and 1
# cannot both be used, saying why in pin_why
# shellcheck disable=SC2034 # pin_why is the sourcing script's
pin_check() {
	pin_why=
	[ "$pin" = 1 ] || return 0
	if ! command -v taskset >/dev/null; then
		pin=0 pin_why=" (no taskset)"
	elif ! taskset -c 0,1 true 2>/dev/null; then
		pin=0 pin_why=" (cpus 0 and 1 not both usable)"
	fi
}

# median of the numbers in file $1; empty if none
median() {
	[ -s "$1" ] || return 0
	sort -g "$1" | awk '{ v[NR] = $1 }
		END { if (NR % 2) print v[(NR + 1) / 2];
		      else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# largest / smallest number in file $1; empty if none
largest() {
	[ -s "$1" ] || return 0
	sort -g "$1" | tail -n 1
}

smallest() {
	[ -s "$1" ] || return 0
	sort -g "$1" | head -n 1
}

# how many numbers file $1 holds (0 if it does not exist)
count() {
	[ -f "$1" ] || { echo 0; return; }
	grep -c . <"$1"
}

# ratio A B [fmt]: A/B or n/a
ratio() {
	awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN {
		if (a == "" || b == "" || b + 0 == 0) print "n/a";
		else printf f "\n", a / b }'
}

fmt_num() {
	[ -n "$1" ] && printf '%.2f' "$1" || echo n/a
}

# verdict VALUE OP LIMIT: "met" / "MISSED" / "n/a"
verdict() {
	[ "$1" = n/a ] && { echo n/a; return; }
	awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
		ok = (op == "<=") ? v <= l : v >= l
		print ok ? "met" : "MISSED" }'
}
