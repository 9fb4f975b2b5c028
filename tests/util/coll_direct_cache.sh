#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the collective engine keeps the
# registrations of direct receives (FI_COLL_DIRECT_MIN and up) for the
# group's next calls. rdm_coll at 2 ranks on every provider built here:
# every group logs at its close (FI_LOG_LEVEL=info) how many direct
# receives it ran and how many of them found their registration cached.
# broadcast_buffer_reuse alternates two buffers, each root twice: every
# rank's second pass over a buffer must hit the cache (at least 4 hits
# a rank), and its results are checked by rdm_coll itself. The stale
# side, writes through a kept key between calls refused, is rdm_coll -R
# (runfabtests.sh's rdm_coll_stale).
set -u
bld=${top_builddir:?}
bin=$bld/fabtests/bin/rdm_coll
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail=0
for prov in shm tcp sockets; do
	grep -q "define HAVE_$(echo $prov | tr a-z A-Z) 1" "$bld/config.h" ||
		continue
	if ! env FI_LOG_LEVEL=info timeout 120 "$bin" -p $prov -N 2 -c 1 \
		>"$log" 2>&1; then
		echo "FAIL $prov: rdm_coll failed"
		tail -5 "$log"
		fail=1
		continue
	fi
	# "D direct receives, H through a cached registration", summed
	set -- $(awk '/direct receives,/ {
		for (i = 1; i < NF; i++) {
			if ($(i + 1) == "direct") d += $i
			if ($(i + 1) == "through") h += $i
		}
	} END { printf "%d %d\n", d, h }' "$log")
	r="$1 direct receives, $2 through a cached registration"
	if [ "$2" -ge 8 ] && [ "$1" -gt "$2" ]; then
		echo "PASS $prov 2 ranks: $r"
	else
		echo "FAIL $prov 2 ranks: $r (want 8 or more hits, some misses)"
		fail=1
	fi
done
exit $fail
