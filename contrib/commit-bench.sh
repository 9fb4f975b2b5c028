#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# commit-bench.sh: SHMEM's persistent-heap pattern on shm:
# N puts FI_DELIVERY_COMPLETE + one fi_commit (a) against N puts
# FI_COMMIT_COMPLETE (b), per put, medians, and the ratio b/a, from
# fabtests/benchmarks/commit_bw.c. The server's region is a file in DIR
# (default /var/tmp, a disk filesystem; its type is printed). A report, not
# a test. The server runs on cpu 0 and the client on cpu 1 when taskset
# exists.
#
# usage: contrib/commit-bench.sh [-b BUILD_DIR] [-d DIR] [-p PROV]
#                                [-- commit_bw options: -S SIZES -N COUNTS -r REPS]
#   e.g. contrib/commit-bench.sh -- -S 64,4k,64k -N 1,16,256 -r 9
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bld=
dir=/var/tmp
prov=shm
while getopts "b:d:p:h" opt; do
	case $opt in
	b) bld=$OPTARG ;;
	d) dir=$OPTARG ;;
	p) prov=$OPTARG ;;
	*) sed -n '/^# usage:/,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ -z "$bld" ]; then
	for d in ./build "$top/build"; do
		[ -e "$d/config.h" ] && { bld=$d; break; }
	done
fi
[ -n "$bld" ] || { echo "no build tree; use -b" >&2; exit 2; }
bld=$(cd "$bld" && pwd)
make -C "$bld" -s fabtests/bin/commit_bw >/dev/null || exit 2
bin=$bld/fabtests/bin/commit_bw
export LD_LIBRARY_PATH="$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FT_PMEM_DIR=$dir
pin0= pin1=
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	pin0="taskset -c 0" pin1="taskset -c 1"
fi
port=$((20000 + ($$ * 7) % 30000))
case $prov in shm*) src= ;; *) src="-s 127.0.0.1" ;; esac
echo "# $(date -u '+%F %T') UTC, $(git -C "$top" describe --always --dirty 2>/dev/null)," \
	"load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cpus${pin0:+, pinned}"
# shellcheck disable=SC2086 # $src and $pin* are word lists on purpose
slog=$(mktemp)
trap 'rm -f "$slog"' EXIT
$pin0 timeout 900 "$bin" -p "$prov" $src -B $port -T 60 "$@" >"$slog" 2>&1 &
spid=$!
# shellcheck disable=SC2086
$pin1 timeout 900 "$bin" -p "$prov" $src -P $port -T 60 "$@" 127.0.0.1
rc=$?
wait $spid
srv=$?
# the server's lines: where its region lives, or why it failed
sed 's/^/# server: /' "$slog"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ $rc -eq 0 ] && [ $srv -eq 0 ] || exit $((rc ? rc : srv))
