#!/bin/bash
# bench-lib.sh: the statistics contrib/bench.sh and contrib/mpi-bench.sh
# share (sourced, not run): medians and extremes of the numbers in a file
# (one a line), ratios, and target verdicts.

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
