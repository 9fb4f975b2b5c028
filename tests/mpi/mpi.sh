#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# mpi.sh - Debian's unmodified Open MPI 4.1 (openmpi-bin, libopenmpi-dev)
# on our library: tests/mpi/mpi_p2p.c with the ofi MTL
# (--mca pml cm --mca mtl ofi) on 2 and 4 ranks, and tests/mpi/mpi_osc.c
# with --mca pml ob1 --mca btl self,vader,ofi --mca osc rdma (vader's
# single-copy RMA off, so the window's RMA goes through ofi), both with the
# provider forced to PROV (default tcp); and a short run of
# tests/mpi/mpi_bench.c (contrib/mpi-bench.sh's program) on the MTL. Each
# run must say "0 errors" and, for the MTL runs, Open MPI must report that
# it opened the ofi MTL on PROV; tests/mpi/mpi_threads.c on the MTL
# under MPI_THREAD_MULTIPLE (threads of each rank sending and receiving at
# once on one endpoint); and tests/mpi/mpi_spawn.c on the MTL with tcp's
# same-host path off (MPI_Comm_spawn: a root's sends must leave while it
# waits in PMIx, calling nothing). First, Open MPI's own choice: mpi_p2p
# with nothing beyond --mca pml cm --mca mtl ofi (no FI_PROVIDER, no
# OMPI_MCA_ variables) must run on our library; Open MPI's default
# exclusion list rejects every name beginning with shm or tcp, so it has
# to find our tcp under Debian's name "net". Exits 77 (skip) without mpicc/mpirun or
# when our library has no PROV provider.
#
# Environment: OFI_LIBDIR (default: the build's .libs); MPI_LIB=system runs
# the same programs against Debian's libfabric instead (provider
# "tcp;ofi_rxm" on loopback), to check the tests themselves.
set -u
top_builddir=${top_builddir:-.}
srcdir=${top_srcdir:-$(dirname "$0")/../..}
LIBDIR=${OFI_LIBDIR:-$top_builddir/.libs}
PROV=${PROV:-tcp}
TMO=${MPI_TIMEOUT:-180}
MPICC=$(command -v mpicc) || { echo "SKIP: mpicc not found"; exit 77; }
MPIRUN=$(command -v mpirun) || { echo "SKIP: mpirun not found"; exit 77; }

if [ "${MPI_LIB:-ours}" = system ]; then
	libenv=
	PROV="tcp;ofi_rxm"
else
	[ -e "$LIBDIR/libfabric.so.1" ] ||
		{ echo "FAIL: no $LIBDIR/libfabric.so.1"; exit 1; }
	if ! LD_LIBRARY_PATH=$LIBDIR "$top_builddir/util/fi_info" -p "$PROV" \
		-e rdm >/dev/null 2>&1; then
		echo "SKIP: our library has no $PROV provider"
		exit 77
	fi
	libenv="-x LD_LIBRARY_PATH=$LIBDIR"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in mpi_p2p mpi_osc mpi_bench mpi_threads mpi_spawn; do
	"$MPICC" -O2 -pthread -o "$work/$t" "$srcdir/tests/mpi/$t.c" ||
		{ echo "FAIL: mpicc $t"; exit 1; }
done

# Loopback only, whatever the provider would pick by itself.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
common="--oversubscribe --bind-to none -x FI_PROVIDER=$PROV -x FI_TCP_IFACE=lo
	-x FI_SOCKETS_IFACE=lo -x FI_TCP_SHM=${FI_TCP_SHM:-1} $libenv"
fail=0

# Open MPI's default provider selection, on our library (it picks tcp).
if [ "${MPI_LIB:-ours}" != system ] && [ "$PROV" = tcp ]; then
	log=$work/default.log
	lib=$(cd "$LIBDIR" && pwd -P)
	unset_mca=$(env | sed -n 's/^\(OMPI_MCA_[^=]*\)=.*/-u \1/p')
	# shellcheck disable=SC2086 # $unset_mca is a list of words
	env $unset_mca -u FI_PROVIDER LD_LIBRARY_PATH="$lib" FI_TCP_IFACE=lo \
		timeout "$TMO" "$MPIRUN" -np 2 --mca pml cm --mca mtl ofi \
		"$work/mpi_p2p" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && grep -q " 0 errors" "$log" &&
		[ "$(grep -c "libfabric $lib/libfabric.so" "$log")" -eq 2 ]; then
		echo "PASS: p2p_default ($(grep ' errors' "$log"))"
	else
		echo "FAIL: p2p_default (exit $rc)"
		tail -30 "$log"
		fail=1
	fi
fi

# run NAME NP EXPECT-PATTERN MPIRUN-ARGS... ; checks "0 errors" and EXPECT
run() {
	name=$1 np=$2 expect=$3
	shift 3
	log=$work/$name.log
	# shellcheck disable=SC2086 # $common is a list of words
	timeout "$TMO" "$MPIRUN" -np "$np" $common "$@" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && grep -q " 0 errors" "$log" &&
		{ [ -z "$expect" ] || grep -q "$expect" "$log"; }; then
		echo "PASS: $name ($(grep ' errors' "$log"))"
	else
		echo "FAIL: $name (exit $rc)"
		grep -v '^\[[^]]*\] mca' "$log" | tail -30
		fail=1
	fi
}

mtl="--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include $PROV
	--mca mtl_base_verbose 10"
# Open MPI names the domain there: ours is named after the provider,
# Debian's tcp after the interface.
mtl_seen="mtl:ofi:provider: $PROV"
[ "${MPI_LIB:-ours}" = system ] && mtl_seen=" 0 errors"
# shellcheck disable=SC2086
run p2p_np2 2 "$mtl_seen" $mtl "$work/mpi_p2p"
# shellcheck disable=SC2086
run p2p_np4 4 "$mtl_seen" $mtl "$work/mpi_p2p"
# shellcheck disable=SC2086
run threads_np3 3 "$mtl_seen" $mtl "$work/mpi_threads"
# over TCP itself: the same-host path would carry the roots' sends
# through shm rings, which need no progress call of the sender
# shellcheck disable=SC2086
run spawn_np2 2 "$mtl_seen" $mtl -x FI_TCP_SHM=0 "$work/mpi_spawn"
# contrib/mpi-bench.sh's program, a few iterations: it still runs and
# checks its data (its numbers are not looked at here)
# shellcheck disable=SC2086
run bench_np2 2 "$mtl_seen" $mtl "$work/mpi_bench" -i 100 -w 10 \
	-n 5 -W 8
# vader without its single-copy RMA: osc/rdma must take ofi's (without
# ofi it fails to create the window, checked by hand).
# Debian's tcp;ofi_rxm does not open btl/ofi: there the window goes
# through vader, which checks the program only.
osc="--mca pml ob1 --mca btl self,vader,ofi --mca osc rdma
	--mca btl_ofi_provider_include $PROV"
[ "${MPI_LIB:-ours}" = system ] ||
	osc="$osc --mca btl_vader_single_copy_mechanism none"
# shellcheck disable=SC2086
run osc_np2 2 "" $osc "$work/mpi_osc"
# shellcheck disable=SC2086
run osc_np4 4 "" $osc "$work/mpi_osc"
exit $fail
