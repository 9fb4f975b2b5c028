#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pmem-durability.sh: the full durability run (the make check
# test runs 5 trials). TRIALS (default 100) trials of tests/pmem/durability:
# a target is killed with SIGKILL right after the initiator saw its commit
# (or FI_COMMIT_COMPLETE writes) complete; a fresh process checks every
# committed byte, and the target's libpmem calls, logged by an LD_PRELOAD
# shim, must cover every committed range. Prints the failures and
# "N/TRIALS passed"; exit 0 iff all passed, 77 without FI_RMA_PMEM.
#
# usage: contrib/pmem-durability.sh [-b BUILD_DIR] [-d DIR] [TRIALS]
#   -b  the configured build tree (default ./build, then <src>/build)
#   -d  where the target's files go (default /var/tmp: a disk filesystem)
# PMEM_DURABILITY_PROV=tcp runs it over tcp (default shm).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bld=
dir=/var/tmp
while getopts "b:d:h" opt; do
	case $opt in
	b) bld=$OPTARG ;;
	d) dir=$OPTARG ;;
	*) sed -n '/^# usage:/,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
trials=${1:-100}
if [ -z "$bld" ]; then
	for d in ./build "$top/build"; do
		[ -x "$d/tests/pmem/durability" ] && { bld=$d; break; }
	done
fi
[ -n "$bld" ] || { echo "no build tree: make -C build check first, or -b" >&2; exit 2; }
bld=$(cd "$bld" && pwd)
make -C "$bld" -s tests/pmem/durability tests/pmem/persist_shim.la >/dev/null ||
	exit 2
echo "# $(date -u '+%F %T') UTC, $(git -C "$top" describe --always --dirty 2>/dev/null)," \
	"files in $dir ($(stat -f -c %T "$dir" 2>/dev/null))"
LD_LIBRARY_PATH="$bld/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
PMEM_SHIM="$bld/tests/pmem/.libs/persist_shim.so" \
	timeout $((trials * 10 + 60)) "$bld/tests/pmem/durability" -d "$dir" \
	-n "$trials"
