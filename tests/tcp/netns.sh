#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# netns.sh - two hosts on one machine: network namespaces joined by a veth
# pair with 198.18.251.1/30 and 198.18.251.2/30 (RFC 2544's benchmarking
# range, on that link only). Over our tcp provider (FI_PROVIDER=tcp):
#  - Debian's unmodified fi_pingpong, server in the first namespace,
#    client in the second, -e rdm and -e msg, each with -m msg and
#    -m tagged, data checked (-c) over all sizes;
#  - Open MPI (tests/mpi/mpi_p2p.c over mtl/ofi), one rank in each
#    namespace: mpirun runs in the first, and starts its daemon in the
#    second through an agent script (--mca plm_rsh_agent) that runs
#    `ip netns exec`; once with the provider named (FI_PROVIDER and
#    mtl_ofi_provider_include), once with Open MPI's own choice (nothing
#    beyond --mca pml cm --mca mtl ofi and the launch's options), which
#    must find our tcp as "net".
# The namespaces, the link and the launch are tests/tcp/netns_lib.sh's
# (contrib/mpi-bench.sh uses them too).
# Exits 77 (skip) where namespaces cannot be created (not root, no ip(8),
# no permission), without fi_pingpong, or when our library has no tcp.
# MPI_LIB=system runs the same against Debian's libfabric (tcp;ofi_rxm).
set -u
top_builddir=${top_builddir:-.}
srcdir=${top_srcdir:-$(dirname "$0")/../..}
LIBDIR=${OFI_LIBDIR:-$top_builddir/.libs}
TMO=${NETNS_TIMEOUT:-120}
A=ofia$$ B=ofib$$
IPA=198.18.251.1 IPB=198.18.251.2
PP=$(command -v fi_pingpong) || { echo "SKIP: fi_pingpong not found"; exit 77; }

if [ "${MPI_LIB:-ours}" = system ]; then
	PROV="tcp;ofi_rxm" PPPROV=tcp LIBENV=
else
	PROV=tcp PPPROV=tcp
	if ! LD_LIBRARY_PATH=$LIBDIR "$top_builddir/util/fi_info" -p tcp \
		>/dev/null 2>&1; then
		echo "SKIP: our library has no tcp provider"
		exit 77
	fi
	LIBENV="LD_LIBRARY_PATH=$(cd "$LIBDIR" && pwd -P)"
fi

# shellcheck source=tests/tcp/netns_lib.sh
. "$srcdir/tests/tcp/netns_lib.sh"
work=$(mktemp -d)
cleanup() {
	netns_cleanup
	rm -rf "$work"
}
trap cleanup EXIT
why=$(netns_setup) || { echo "SKIP: $why"; exit 77; }

fail=0
# in NS CMD...: the command in namespace NS with our library and provider
in_ns() {
	ns=$1
	shift
	ip netns exec "$ns" env $LIBENV FI_PROVIDER="${NSPROV:-$PROV}" \
		FI_TCP_IFACE="v$ns" "$@"
}

port=$(( 20000 + $$ % 20000 ))
for ep in rdm msg; do
# Debian layers rxm for rdm only; its msg endpoints are plain tcp
NSPROV=$PROV
[ $ep = msg ] && NSPROV=tcp
for mode in msg tagged; do
	# Debian's plain tcp has no FI_TAGGED on msg endpoints
	[ -z "$LIBENV" ] && [ $ep = msg ] && [ $mode = tagged ] && continue
	in_ns "$A" timeout "$TMO" "$PP" -p "$PPPROV" -e $ep -I 50 -S all -c \
		-m "$mode" -B "$port" >"$work/srv" 2>&1 &
	srv=$!
	sleep 0.5
	in_ns "$B" timeout "$TMO" "$PP" -p "$PPPROV" -e $ep -I 50 -S all -c \
		-m "$mode" -P "$port" $IPA >"$work/cli" 2>&1
	crc=$?
	wait $srv
	src=$?
	lines=$(grep -c '^[0-9]' "$work/cli")
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ "$lines" -lt 40 ]; then
		echo "FAIL: fi_pingpong -e $ep -m $mode across namespaces" \
			"(client $crc, server $src, $lines sizes)"
		tail -n 20 "$work/cli" "$work/srv"
		fail=1
	else
		echo "PASS: fi_pingpong -e $ep -m $mode across namespaces" \
			"($lines sizes)"
	fi
	port=$((port + 1))
done
done

NSPROV=
# Open MPI: one rank per namespace.
MPICC=$(command -v mpicc) && MPIRUN=$(command -v mpirun) || {
	echo "SKIP (MPI part): no Open MPI"
	exit $fail
}
"$MPICC" -O2 -o "$work/mpi_p2p" "$srcdir/tests/mpi/mpi_p2p.c" ||
	{ echo "FAIL: mpicc"; exit 1; }
netns_agent
mpienv="-x FI_PROVIDER=$PROV -x FI_TCP_IFACE"
[ -n "$LIBENV" ] && mpienv="$mpienv -x $LIBENV"
# shellcheck disable=SC2086 # $mpienv is a list of words
netns_mpirun "$TMO" $mpienv \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$PROV" \
	sh -c "$NETNS_IFACE exec $work/mpi_p2p" >"$work/mpi" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q " 0 errors" "$work/mpi" &&
	grep -q "$B" "$work/agent.used" 2>/dev/null; then
	echo "PASS: Open MPI across namespaces ($(grep ' errors' "$work/mpi"))"
else
	echo "FAIL: Open MPI across namespaces (exit $rc; daemon started" \
		"in: $(cat "$work/agent.used" 2>/dev/null || echo none))"
	tail -n 30 "$work/mpi"
	fail=1
fi

# Open MPI's default provider selection: no FI_PROVIDER, no provider list.
mpienv="-x FI_TCP_IFACE"
[ -n "$LIBENV" ] && mpienv="$mpienv -x $LIBENV"
# shellcheck disable=SC2086 # $mpienv is a list of words
netns_mpirun "$TMO" $mpienv --mca pml cm --mca mtl ofi \
	sh -c "$NETNS_IFACE exec $work/mpi_p2p" >"$work/mpi" 2>&1
rc=$?
libs=$(grep -c "libfabric ${LIBENV#LD_LIBRARY_PATH=}" "$work/mpi")
if [ $rc -eq 0 ] && grep -q " 0 errors" "$work/mpi" && [ "$libs" -eq 2 ]
then
	echo "PASS: Open MPI's own provider choice across namespaces" \
		"($(grep ' errors' "$work/mpi"))"
else
	echo "FAIL: Open MPI's own provider choice across namespaces" \
		"(exit $rc, $libs ranks on the library asked for)"
	tail -n 30 "$work/mpi"
	fail=1
fi
exit $fail
