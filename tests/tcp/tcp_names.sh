#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tcp_names.sh - Debian's names for TCP endpoints select our tcp provider
# (fi_tcp(7), NAMES): "net" (RDM and MSG), "tcp;ofi_rxm" and "net;ofi_rxm"
# (RDM), each asked for as a prov_name hint (fi_info -p), through
# FI_PROVIDER, and excluded through FI_PROVIDER=^NAME; "tcp" answers as
# before. Open MPI's default provider exclusion rule (a name is rejected
# when it begins with shm, sockets, tcp, udp, rstream or usnic) must still
# find an RDM provider, and its inclusion rule with "tcp" must find tcp.
# Then Debian's fi_pingpong opens fabrics under each name (fi_fabric maps
# the name back to tcp), with data checks.
# Exits 77 (skip) when our library has no tcp provider.
set -u
top_builddir=${top_builddir:-.}
LIBDIR=${OFI_LIBDIR:-$top_builddir/.libs}
FI_INFO=$top_builddir/util/fi_info
TMO=${PINGPONG_TIMEOUT:-120}
fail=0

if ! LD_LIBRARY_PATH=$LIBDIR "$FI_INFO" -p tcp >/dev/null 2>&1; then
	echo "SKIP: our library has no tcp provider"
	exit 77
fi

# names FILTER FI_INFO-ARGS...: "provider type" of each answer, with
# FI_PROVIDER=FILTER ("-": unset)
names() {
	filter=$1
	shift
	(
		unset FI_PROVIDER
		[ "$filter" = - ] || export FI_PROVIDER="$filter"
		LD_LIBRARY_PATH=$LIBDIR "$FI_INFO" "$@" 2>/dev/null
	) | awk '/^provider:/ { p = $2 } /^ *type:/ { print p, $2 }'
}

# expect DESC WANT GOT: WANT and GOT as sorted sets of lines
expect() {
	want=$(printf '%s\n' "$2" | sort -u)
	got=$(printf '%s\n' "$3" | sort -u)
	if [ "$want" = "$got" ]; then
		echo "PASS: $1"
	else
		echo "FAIL: $1: want [$want] got [$got]" | tr '\n' ' '
		echo
		fail=1
	fi
}

net="net FI_EP_MSG
net FI_EP_RDM"
tcp="tcp FI_EP_MSG
tcp FI_EP_RDM"
for name in net "tcp;ofi_rxm" "net;ofi_rxm" tcp; do
	case $name in
	net) want=$net ;;
	tcp) want=$tcp ;;
	*) want="$name FI_EP_RDM" ;;
	esac
	expect "hint prov_name $name" "$want" "$(names - -p "$name")"
	expect "FI_PROVIDER=$name" "$want" "$(names "$name")"
done

# Exclusion: a name and the stacks built on it go; the others stay.
all=$(names -)
expect "unfiltered list" "$(printf '%s\n' "$all" | grep -E '^(shm|sockets) ')
$tcp
$net" "$all"
expect "FI_PROVIDER=^net" "$(printf '%s\n' "$all" | grep -v '^net ')" \
	"$(names ^net)"
expect "FI_PROVIDER=^tcp" "$(printf '%s\n' "$all" | grep -v '^tcp ')" \
	"$(names ^tcp)"
expect "FI_PROVIDER=^tcp;ofi_rxm" "$all" "$(names "^tcp;ofi_rxm")"
expect "hint prov_name ^net" "$(printf '%s\n' "$all" | grep -v '^net ')" \
	"$(names - -p ^net)"

# Open MPI's rules over the RDM answers, in order.
rdm=$(names - -t FI_EP_RDM | cut -d' ' -f1)
first=$(printf '%s\n' "$rdm" |
	grep -v -E '^(shm|sockets|tcp|udp|rstream|usnic)' | head -n 1)
expect "Open MPI's default exclusion finds net" net "$first"
first=$(printf '%s\n' "$rdm" | grep -E '^tcp' | head -n 1)
expect "Open MPI's inclusion of tcp finds tcp" tcp "$first"
expect "fi_info -l lists net" "net" \
	"$(LD_LIBRARY_PATH=$LIBDIR "$FI_INFO" -l | grep -x 'net:' | tr -d :)"

# fi_fabric and the endpoints under each name, Debian's fi_pingpong.
PP=$(command -v fi_pingpong) || {
	echo "SKIP (fi_pingpong part): fi_pingpong not found"
	exit $fail
}
# shellcheck source=tests/interop/pingpong_lib.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/interop/pingpong_lib.sh"
port=$((23000 + $$ % 900))
LIBDIR=$(cd "$LIBDIR" && pwd)
export FI_TCP_IFACE=lo
for run in "net:rdm" "net:msg" "tcp;ofi_rxm:rdm" "net;ofi_rxm:rdm"; do
	name=${run%:*}
	ep=${run##*:}
	pingpong "-p '$name' -e $ep" -p "$name" -e "$ep" -I 5
done
exit $fail
