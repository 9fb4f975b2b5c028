#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Sandia OpenSHMEM 1.5.3's own CI matrix (its .github/workflows/ci.yml), the
# libfabric-facing variants, on shm, tcp and sockets against our library:
# builds each variant outside the tree, runs its unit tests at 2 PEs through
# Open MPI's mpirun and prints a table. Not part of contrib/test.sh: it
# builds SOS once per variant and takes long; run it before landing a change
# that touches what SOS uses. SOS's CI launches with PMI simple and hydra;
# here every variant uses Open MPI's PMI, the way peers.sh does.
#
# usage: contrib/sos-matrix.sh [LIBDIR|debian]
# Environment: PEERS_DIR, PEERS_WORK, PEERS_JOBS, PEERS_SOS_TIMEOUT and
# PEERS_SOS_BUDGET as for peers.sh; SOS_MATRIX picks variants by name,
# SOS_PROVS the providers [sockets tcp shm].
set -u
. "$(dirname "$0")/peers-lib.sh"

# name|configure options|environment of the run
variants='default||
hard-polling|--enable-hard-polling|
ofi-manual-progress|--enable-ofi-manual-progress|
manual-progress|--enable-error-checking --enable-remote-virtual-addressing --enable-manual-progress|SHMEM_BARRIER_ALGORITHM=tree SHMEM_BCAST_ALGORITHM=tree SHMEM_REDUCE_ALGORITHM=tree SHMEM_OFI_STX_MAX=0
thread-completion|--enable-error-checking --enable-remote-virtual-addressing --enable-thread-completion|
ofi-fence|--enable-error-checking --enable-remote-virtual-addressing --enable-ofi-fence --with-hwloc=no|SHMEM_BOUNCE_SIZE=0
mr-basic-av-map|--enable-ofi-mr=basic --enable-av-map --disable-cxx --enable-memcpy --with-hwloc=no|
rva|--enable-error-checking --enable-remote-virtual-addressing --disable-aslr-check|
stx-random|--enable-error-checking --enable-remote-virtual-addressing|SHMEM_OFI_STX_MAX=8 SHMEM_OFI_STX_ALLOCATOR=random
stx-auto|--enable-error-checking --enable-remote-virtual-addressing --enable-manual-progress --enable-hard-polling --with-hwloc=no|SHMEM_OFI_STX_AUTO=1 SHMEM_BARRIER_ALGORITHM=dissem SHMEM_REDUCE_ALGORITHM=recdbl SHMEM_FCOLLECT_ALGORITHM=recdbl
stx-threshold|--enable-error-checking --enable-remote-virtual-addressing|SHMEM_FCOLLECT_ALGORITHM=ring SHMEM_OFI_TX_POLL_LIMIT=1 SHMEM_OFI_RX_POLL_LIMIT=1 SHMEM_OFI_STX_THRESHOLD=1024'

run_dir=$peers_work/sos-matrix

# A run is a job of its own, in a network namespace: the script again.
if [ "${1:-}" = --job ]; then
	shift
	bdir=$1 prov=$2 out=$3
	shift 3
	# Remote virtual addressing wants the same addresses in every PE (SOS
	# refuses to start under ASLR unless built with --disable-aslr-check,
	# and then it writes to the wrong places). SOS's CI turns ASLR off for
	# the machine; here each PE runs without it.
	if grep -q -- '--enable-remote-virtual-addressing' "$bdir/config.log"; then
		export PEERS_SOS_WRAP="setarch $(uname -m) -R"
	fi
	peers_run_sos "$bdir" "$prov" "$out" "$@"
	exit
fi

lib=$(peers_find_lib "${1:-}") || {
	echo "sos-matrix: no libfabric.so.1 found; pass its dir" >&2
	exit 1
}
if [ "$lib" = debian ]; then
	unset LD_LIBRARY_PATH
else
	export LD_LIBRARY_PATH=$lib
fi
provs=${SOS_PROVS:-sockets tcp shm}
pick=${SOS_MATRIX:-}
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
rm -rf "$run_dir"
mkdir -p "$run_dir"
trap 'peers_cleanup_ns' EXIT
peers_ns_probe

names=()
# The list comes in on fd 3: SOS's configure and make read stdin, and
# would eat the variants after the first.
while IFS='|' read -r name opts envs <&3; do
	if [ -n "$pick" ] && ! [[ " $pick " == *" $name "* ]]; then
		continue
	fi
	# shellcheck disable=SC2086
	bdir=$(peers_build_sos "$name" $opts) || {
		echo "$name: build failed" >"$run_dir/$name.build-failed"
		continue
	}
	names+=("$name")
	for p in $provs; do
		# shellcheck disable=SC2086
		peers_spawn "$name-$p" "$self" --job "$bdir" "$p" \
			"$run_dir/$name-$p" $envs
	done
done 3<<<"$variants"
peers_wait_all

bad=0
printf '%-22s' variant
for p in $provs; do
	printf '%16s' "$p"
done
echo
for name in "${names[@]}"; do
	printf '%-22s' "$name"
	for p in $provs; do
		r=$run_dir/$name-$p/results
		np=$(grep -c '^PASS' "$r" 2>/dev/null)
		nf=$(grep -c '^FAIL' "$r" 2>/dev/null)
		[ "${nf:-1}" = 0 ] || bad=1
		printf '%16s' "${np:-0} ok ${nf:-?} bad"
	done
	echo
done
for f in "$run_dir"/*.build-failed; do
	[ -f "$f" ] && cat "$f" && bad=1
done
for name in "${names[@]}"; do
	for p in $provs; do
		grep '^FAIL' "$run_dir/$name-$p/results" 2>/dev/null |
			sed "s/^FAIL|/   $name\/$p: /"
	done
done
exit $bad
