#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the collective engine's shared-memory
# path on shm (ofi_coll.h, struct ofi_coll_shared). rdm_coll at 2 and 4
# ranks: every group logs at its close (FI_LOG_LEVEL=info) the slot
# chunks it stored into peers' mapped regions and those it wrote by RMA;
# with the path on, chunks are stored and none written, the small ones
# in their slot's head line, and many ops finish within their post
# (their completions quiet, fi_cq_read skips its progress pass); with
# FI_COLL_SHARED=0, none stored and few finish so. Stores ask for the
# line of the peer's next slot ahead, as does a one-way receive (a
# broadcast's): some lines are prefetched with the path on, none
# without. A broadcast of up to 40 bytes that can finish within its
# post (a root whose children's windows have room, a member whose
# parent's chunk is there) runs without an op (bcast_fast): some do with
# the path on, none without. Then
# FI_PROGRESS_AUTO asleep in fi_cq_sread: stores must wake the sleeper
# (shm's wake socket). Last, shm's load-time reclaim removes a group
# object whose endpoint's region is gone (its owner died) and keeps one
# whose region is there.
set -u
bin=${top_builddir:?}/fabtests/bin/rdm_coll
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail=0
# run NAME ENV ARGS... : rdm_coll ARGS passes under ENV (VAR=VALUE, or
# X=0 for none); its log kept in $log
run() {
	name=$1 e=$2
	shift 2
	if ! env FI_LOG_LEVEL=info "$e" timeout 120 "$bin" -p shm "$@" \
		>"$log" 2>&1; then
		echo "FAIL $name: rdm_coll failed"
		tail -5 "$log"
		fail=1
		return 1
	fi
}
# sums of "N chunks stored into peers (H in a slot head), M written; Q
# ops done by their post (F small broadcasts without an op); P next slot
# lines prefetched" over every group
sums() {
	awk '/chunks stored into peers/ {
		for (i = 1; i < NF; i++) {
			if ($(i + 1) == "chunks") s += $i
			if ($(i + 1) == "written;") w += $i
			if ($(i + 1) == "in" && $(i + 3) == "slot")
				h += substr($i, 2)
			if ($(i + 1) == "ops" && $(i + 3) == "by") q += $i
			if ($(i + 1) == "next" && $(i + 4) == "prefetched;")
				p += $i
			if ($(i + 1) == "small" && $(i + 2) == "broadcasts")
				f += substr($i, 2)
		}
	} END { printf "%d %d %d %d %d %d\n", s, w, h, q, p, f }' "$log"
}
# check LABEL ENV N WANT: at N ranks under ENV, only WANT (stored or
# written) chunks, some of them; stored ones of up to 40 bytes (the
# barriers, small collectives) travel in their slot's head line; the
# ops done by their post (quiet: read without a progress pass) are kept
# in $quiet: stores finish many (a broadcast's root, ...), writes only
# those that move nothing
check() {
	quiet=0
	run "$1" "$2" -N $3 -c 10 || return
	set -- "$1" "$2" "$3" "$4" $(sums)
	quiet=$8
	case $4 in
	stored) good=$(($5 > 0 && $6 == 0 && $7 > 0 && $7 <= $5 && $9 > 0 &&
		${10} > 0 && ${10} <= $8)) ;;
	*) good=$(($5 == 0 && $6 > 0 && $7 == 0 && $9 == 0 && ${10} == 0)) ;;
	esac
	r="$5 stored ($7 in a head), $6 written, $8 ops done by their post"
	r="$r (${10} broadcasts without an op), $9 lines prefetched"
	if [ $good -eq 1 ]; then
		echo "PASS $1 $3 ranks: $r"
	else
		echo "FAIL $1 $3 ranks: $r"
		fail=1
	fi
}
# Quiet ops: with stores 800 of rdm_coll's ops at 2 ranks, 1000-1900 at
# 4; with writes 4-16 at 2 ranks, but 6 to 313 at 4, as a rank that was
# off its CPU finds more chunks landed when it posts (make check runs a
# 33-process fabtest beside this). A store path that quiets nothing
# still fails: it finishes no more ops by their post than writes do.
for n in 2 4; do
	check shared X=0 $n stored
	qs=$quiet
	check FI_COLL_SHARED=0 FI_COLL_SHARED=0 $n written
	if [ $qs -gt $((2 * quiet + 300)) ]; then
		echo "PASS quiet $n ranks: $qs ops done by their post, $quiet" \
			"with writes"
	else
		echo "FAIL quiet $n ranks: $qs ops done by their post, $quiet" \
			"with writes"
		fail=1
	fi
done
run "sread" X=0 -N 3 -S -c 10 && echo "PASS sread 3 ranks"
# reclaim: fake objects named like shm_coll.c's, one without a region
tag=ck$$_$(date +%s)
dead=/dev/shm/ofi_coll_${tag}_dead_0123456789abcdef
live=/dev/shm/ofi_coll_${tag}_live_0123456789abcdef
region=/dev/shm/ofi_shm_${tag}_live
( umask 077 && : >"$dead" && : >"$live" && : >"$region" )
env FI_LOG_LEVEL=warn timeout 60 "$bin" -p shm -N 2 -c 1 >"$log" 2>&1
if [ -e "$dead" ] || [ ! -e "$live" ]; then
	echo "FAIL reclaim: want the orphaned object removed, the live kept:"
	ls -l "$dead" "$live" 2>&1
	fail=1
else
	echo "PASS reclaim: an orphaned group object removed, a live one kept"
fi
rm -f "$dead" "$live" "$region"
exit $fail
