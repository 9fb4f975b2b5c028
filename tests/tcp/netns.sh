#!/bin/sh
# netns.sh - two hosts on one machine: network namespaces joined by a veth
# pair with 198.18.251.1/30 and 198.18.251.2/30 (RFC 2544's benchmarking
# range, on that link only). Over our tcp provider (FI_PROVIDER=tcp):
#  - Debian's unmodified fi_pingpong, server in the first namespace,
#    client in the second, -e rdm and -e msg, each with -m msg and
#    -m tagged, data checked (-c) over all sizes;
#  - Open MPI (tests/mpi/mpi_p2p.c over mtl/ofi), one rank in each
#    namespace: mpirun runs in the first, and starts its daemon in the
#    second through an agent script (--mca plm_rsh_agent) that runs
#    `ip netns exec`.
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
command -v ip >/dev/null || { echo "SKIP: no ip(8)"; exit 77; }

if [ "${MPI_LIB:-ours}" = system ]; then
	PROV="tcp;ofi_rxm" PPPROV=tcp LIBENV=
else
	PROV=tcp PPPROV=tcp
	if ! LD_LIBRARY_PATH=$LIBDIR "$top_builddir/util/fi_info" -p tcp \
		>/dev/null 2>&1; then
		echo "SKIP: our library has no tcp provider"
		exit 77
	fi
	LIBENV="LD_LIBRARY_PATH=$(cd "$LIBDIR" && pwd)"
fi

work=$(mktemp -d)
cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
if ! ip netns add "$A" 2>/dev/null || ! ip netns add "$B" 2>/dev/null; then
	echo "SKIP: cannot create network namespaces"
	exit 77
fi
ip link add "v$A" netns "$A" type veth peer name "v$B" netns "$B" &&
	ip -n "$A" addr add $IPA/30 dev "v$A" &&
	ip -n "$B" addr add $IPB/30 dev "v$B" &&
	ip -n "$A" link set "v$A" up && ip -n "$B" link set "v$B" up &&
	ip -n "$A" link set lo up && ip -n "$B" link set lo up ||
	{ echo "SKIP: cannot set up the veth link"; exit 77; }

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
cat >"$work/agent.sh" <<AGENT
#!/bin/sh
# plm_rsh_agent: "agent.sh [options] HOST CMD..." -> CMD in HOST's namespace
while [ \$# -gt 0 ]; do
	case \$1 in -*) shift ;; *) break ;; esac
done
host=\$1
shift
case \$host in
$IPB) ns=$B ;;
*) ns=$A ;;
esac
echo "\$ns" >>"$work/agent.used"
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$work/agent.sh"
mpienv="-x FI_PROVIDER=$PROV -x FI_TCP_IFACE"
[ -n "$LIBENV" ] && mpienv="$mpienv -x $LIBENV"
ip netns exec "$A" env OMPI_ALLOW_RUN_AS_ROOT=1 \
	OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=$IPA/30 \
	OMPI_MCA_btl_tcp_if_include=$IPA/30 FI_TCP_IFACE=dummy \
	timeout "$TMO" "$MPIRUN" --mca plm_rsh_agent "$work/agent.sh" \
	--host $IPA,$IPB -np 2 --map-by node --bind-to none $mpienv \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$PROV" \
	sh -c "FI_TCP_IFACE=\$(ip -o addr show | awk '/198\\.18\\.251/ {print \$2; exit}') exec $work/mpi_p2p" \
	>"$work/mpi" 2>&1
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
exit $fail
