#!/bin/sh
# coll-bench.sh - the collective benchmark (issue 19), a report, never a
# test: fabtests/functional/rdm_coll.c built here against Debian's headers
# and run with -B (barrier, broadcast and allreduce, FI_SUM on doubles,
# the slowest rank's median per call) on our tcp (FI_TCP_SHM=0), our shm
# and Debian's tcp;ofi_rxm (up to 8 B: larger ones fail or hang there),
# at 2 and 4 processes; then tests/mpi/mpi_coll_bench.c under Open MPI
# over vader (--mca btl self,vader) for the same calls.
#
# usage: contrib/coll-bench.sh [-I ITERS] [OUR_LIBDIR]   (default build/.libs)
set -u
iters=200
while getopts "I:h" opt; do
	case $opt in
	I) iters=$OPTARG ;;
	*) echo "usage: $0 [-I ITERS] [OUR_LIBDIR]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
src=$(cd "$(dirname "$0")/.." && pwd)
ours=$(cd "${1:-$src/build/.libs}" && pwd) || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -std=gnu11 -o "$work/rdm_coll" "$src/fabtests/functional/rdm_coll.c" \
	-lfabric || exit 1
run() { # LABEL ENV... -- ARGS...
	label=$1
	shift
	echo "== $label"
	env "$@" || echo "   (failed or timed out: rc $?)"
}
for n in 2 4; do
	run "ours tcp (FI_TCP_SHM=0), $n processes" FI_TCP_SHM=0 \
		LD_LIBRARY_PATH="$ours" timeout 300 "$work/rdm_coll" -p tcp \
		-N $n -B -I "$iters"
	run "Debian tcp;ofi_rxm, $n processes (8 B only)" timeout 120 \
		"$work/rdm_coll" -p "tcp;ofi_rxm" -N $n -B -I "$iters" -M 8
	run "ours shm, $n processes" LD_LIBRARY_PATH="$ours" timeout 300 \
		"$work/rdm_coll" -p shm -N $n -B -I "$iters"
done
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
	mpicc -O2 -o "$work/mpi_coll_bench" "$src/tests/mpi/mpi_coll_bench.c" ||
		exit 1
	for n in 2 4; do
		run "Open MPI vader, np $n" timeout 300 mpirun --allow-run-as-root \
			--oversubscribe -np $n --mca pml ob1 \
			--mca btl self,vader "$work/mpi_coll_bench" "$iters"
	done
fi
