# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# netns_lib.sh - two "hosts" on one machine, sourced (POSIX sh) by
# tests/tcp/netns.sh and contrib/mpi-bench.sh: network namespaces $A and $B
# joined by a veth pair (v$A in $A with $IPA/30, v$B in $B with $IPB/30,
# addresses on that link only), and an Open MPI launch with one rank in
# each namespace.
#
# The caller sets A, B (namespace names, unique per run), IPA, IPB and
# work (its private temporary folder), calls netns_setup, and calls
# netns_cleanup from its exit trap.
# shellcheck shell=sh disable=SC2154,SC2034 # the caller's variables

# netns_setup: 0 when both namespaces and the link are up; otherwise 77
# with the reason on stdout (not root, no ip(8), no permission).
netns_setup() {
	command -v ip >/dev/null || {
		echo "no ip(8)"
		return 77
	}
	if ! ip netns add "$A" 2>/dev/null || ! ip netns add "$B" 2>/dev/null
	then
		echo "cannot create network namespaces"
		return 77
	fi
	ip link add "v$A" netns "$A" type veth peer name "v$B" netns "$B" &&
		ip -n "$A" addr add "$IPA/30" dev "v$A" &&
		ip -n "$B" addr add "$IPB/30" dev "v$B" &&
		ip -n "$A" link set "v$A" up && ip -n "$B" link set "v$B" up &&
		ip -n "$A" link set lo up && ip -n "$B" link set lo up ||
		{
			echo "cannot set up the veth link"
			return 77
		}
}

netns_cleanup() {
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
}

# netns_agent: writes $work/agent.sh, the plm_rsh_agent through which
# mpirun starts its daemon for host $IPB in $B (anything else in $A); each
# namespace it enters is appended to $work/agent.used.
netns_agent() {
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
}

# netns_mpirun TMO MPIRUN-ARGS...: mpirun -np 2 in $A, one rank per
# namespace (rank 0 in $A), its out-of-band traffic on the veth link.
# Needs netns_agent first. A rank that should use the link must set
# FI_TCP_IFACE itself (see NETNS_IFACE).
netns_mpirun() {
	tmo=$1
	shift
	ip netns exec "$A" env OMPI_ALLOW_RUN_AS_ROOT=1 \
		OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		OMPI_MCA_oob_tcp_if_include="$IPA/30" \
		OMPI_MCA_btl_tcp_if_include="$IPA/30" FI_TCP_IFACE=dummy \
		timeout "$tmo" "${MPIRUN:-mpirun}" --mca plm_rsh_agent "$work/agent.sh" \
		--host "$IPA,$IPB" -np 2 --map-by node --bind-to none "$@"
}

# Shell words that set FI_TCP_IFACE, in a rank started by netns_mpirun, to
# its namespace's end of the link: sh -c "$NETNS_IFACE exec PROGRAM".
# shellcheck disable=SC2016 # expanded by the rank's shell
NETNS_IFACE='FI_TCP_IFACE=v$(ip netns identify) '
