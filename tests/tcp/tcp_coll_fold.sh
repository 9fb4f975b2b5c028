#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: members pinned to one CPU fold into one
# for barriers and small allreduces over sockets (ofi_coll_leaders).
# Under taskset on one CPU all 4 ranks share it and every group of 4
# must be led by one member (its close logs "1 members lead",
# FI_LOG_LEVEL=info) with the checks passing. No group folds (4 lead)
# with the same-host shm path on (FI_TCP_SHM=1: same-host writes go
# through shm, where folding loses), nor, where there are two CPUs or
# more, with nobody pinned (no taskset, no rdm_coll -P).
set -u
unset FI_COLL_FOLD
bin=${top_builddir:?}/fabtests/bin/rdm_coll
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cpu=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' \
	/proc/self/status)
fail=0
# run NAME EXPECT CPUS ENV ARGS...: rdm_coll on CPUS (- for all) passes,
# and its groups of 4 all logged EXPECT leaders
run() {
	name=$1 want=$2 on=$3 e=$4
	shift 4
	set -- "$bin" -p tcp -N 4 "$@"
	[ "$on" = - ] || set -- taskset -c "$on" "$@"
	if ! env FI_LOG_LEVEL=info "$e" timeout 120 "$@" >"$log" 2>&1; then
		echo "FAIL $name: rdm_coll failed"
		tail -5 "$log"
		fail=1
		return
	fi
	got=$(sed -n 's/.*collective group of 4 closed.* \([0-9]*\) members lead.*/\1/p' \
		"$log" | sort -u | tr '\n' ' ')
	if [ "$got" != "$want " ]; then
		echo "FAIL $name: groups of 4 led by '$got', want '$want '"
		fail=1
		return
	fi
	echo "PASS $name: $(grep -c '^PASS' "$log") checks, $want leading"
}
run one_cpu 1 "$cpu" FI_TCP_SHM=0 -c 2
run shm_path 4 "$cpu" FI_TCP_SHM=1 -c 2
if [ "$(nproc)" -ge 2 ]; then
	run unpinned 4 - FI_TCP_SHM=0 -c 2
else
	echo "SKIP unpinned: one CPU, every rank is pinned"
fi
exit $fail
