#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper, for contrib/test.sh's ThreadSanitizer stage: the
# collective engine under automatic progress, where sockets' progress
# threads complete the group's transfers while the application posts and
# polls: rdm_coll at 3 ranks (each a process of its own, every collective
# and the join), and shm (its control progress thread) at 2 ranks. In an
# ordinary build it is a short functional run as well.
set -u
bld=${top_builddir:?}
bin=$bld/fabtests/bin/rdm_coll
fail=0
for run in "sockets 3" "shm 2"; do
	set -- $run
	grep -q "define HAVE_$(echo "$1" | tr a-z A-Z) 1" "$bld/config.h" ||
		continue
	if timeout 300 "$bin" -p "$1" -N "$2" -c 2; then
		echo "PASS $1 $2 ranks"
	else
		echo "FAIL $1 $2 ranks"
		fail=1
	fi
done
exit $fail
