#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/util/coll_edge on every provider
# built here, with manual progress, and sockets with FI_PROGRESS_AUTO
# too (its fi_cntr_wait case), then the slow joinlate case on one. A
# provider without FI_COLLECTIVE skips.
set -u
bld=${top_builddir:?}
bin=$bld/tests/util/coll_edge
fail=0
ran=0
for run in shm tcp sockets "sockets auto"; do
	prov=${run%% *}
	grep -q "define HAVE_$(echo $prov | tr a-z A-Z) 1" "$bld/config.h" ||
		continue
	echo "== $run"
	timeout 300 "$bin" $run
	rc=$?
	case $rc in
	0) ran=1 ;;
	77) ;;
	*)
		echo "FAIL $run: exit $rc"
		fail=1
		;;
	esac
done
# the join's 30 s limit from its first progress: once, 31 s
for prov in shm tcp; do
	grep -q "define HAVE_$(echo $prov | tr a-z A-Z) 1" "$bld/config.h" ||
		continue
	echo "== $prov manual joinlate"
	timeout 300 "$bin" $prov manual joinlate
	rc=$?
	[ $rc = 77 ] && continue
	[ $rc = 0 ] || fail=1
	break
done
[ $fail = 0 ] || exit 1
[ $ran = 1 ] || exit 77
exit 0
