# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# multi_iov_lib.sh - sourced by the multi_iov_*.sh make check wrappers:
# tests/util/multi_iov once per path of a provider, each run with its own
# time limit; a provider not built here skips (77).
set -u
bld=${top_builddir:?}
bin=$bld/tests/util/multi_iov
FI_TCP_IFACE=${FI_TCP_IFACE:-lo}
FI_SOCKETS_IFACE=${FI_SOCKETS_IFACE:-lo}
export FI_TCP_IFACE FI_SOCKETS_IFACE
fail=0

# multi_iov_need PROV: skips unless PROV is built here.
multi_iov_need() {
	grep -q "define HAVE_$(echo "$1" | tr a-z A-Z) 1" "$bld/config.h" ||
		{ echo "SKIP: $1 not built"; exit 77; }
}

# multi_iov_run "VAR=VALUE ..." PROV rdm|msg
multi_iov_run() {
	echo "== $1 $2 $3"
	# the assignments are words of their own
	# shellcheck disable=SC2086
	env $1 timeout 50 "$bin" "$2" "$3"
	rc=$?
	[ $rc = 0 ] || { echo "FAILED ($rc): $1 $2 $3"; fail=1; }
}
