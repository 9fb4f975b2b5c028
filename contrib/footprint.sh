#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# footprint.sh - how many cache lines (code and data) and page walks one
# 2-process tcp barrier call of ours touches per rank, a report, never a
# test: a build's fabtests/bin rdm_coll -B under valgrind's lackey, split
# at each call into the provider (RDM_COLL_MARK prints where that is),
# counted by contrib/footprint.py. The count does not move with the
# machine's phases as timings do, so a change to the collective path's
# cost can be judged from it alone (about 3 ns a line and 5-10 ns a page
# walk here: contrib/footprint.py).
#
# usage: contrib/footprint.sh [BUILD_DIR] (default build-rel: an -O2
#        build, configured without --enable-debug)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bld=$(cd "${1:-$top/build-rel}" && pwd)
lib=$bld/.libs
bin=$bld/fabtests/bin/.libs/rdm_coll
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
make -C "$bld" -s fabtests/bin/rdm_coll >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RDM_COLL_MARK=1 FI_TCP_SHM=0 LD_LIBRARY_PATH=$lib \
	valgrind --tool=lackey --trace-mem=yes --trace-syscalls=yes \
	--trace-children=yes \
	--log-file="$tmp/trace.%p" "$bin" -p tcp -N 2 -B -I 100 -M 8 \
	>"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
mark=$(awk '/^mark barrier/ {print $3; exit}' "$tmp/out")
[ -n "$mark" ] || { echo "rdm_coll printed no mark" >&2; exit 1; }
# the ranks are the two largest traces (the launcher's is small)
for t in $(ls -S "$tmp"/trace.* | head -2); do
	python3 "$top/contrib/footprint.py" "$t" "$mark" \
		"$(readlink -f "$lib/libfabric.so.1")"
done
