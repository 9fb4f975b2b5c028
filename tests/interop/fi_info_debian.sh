#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Debian's unmodified fi_info (libfabric-bin) on our library: it must load
# with no missing symbol, report our version, and list the test provider
# loaded through FI_PROVIDER_PATH with its attributes; -l must print our
# built-in providers' versions in libfabric's convention, as Debian's
# library prints its own (MAJOR*100+MINOR "." REVISION*10 of the library:
# 117.0 for 1.17.0).
set -u
bin=/usr/bin/fi_info
[ -x "$bin" ] || { echo "skip: Debian's fi_info not installed"; exit 77; }
lib=${OFI_LIBDIR:?}
prov=${top_builddir:?}/tests/prov/.libs
[ -f "$prov/libtestprov-fi.so" ] || { echo "no test provider built"; exit 1; }
fail=0
run() {
	LD_LIBRARY_PATH="$lib" FI_PROVIDER_PATH="$prov" LD_BIND_NOW=1 \
		timeout 30 "$bin" "$@"
}
check() {
	# check DESC PATTERN CMD...: CMD's output must match PATTERN
	desc=$1 pat=$2
	shift 2
	out=$(run "$@" 2>&1)
	if printf '%s\n' "$out" | grep -Eq "$pat"; then
		echo "ok   $desc"
	else
		echo "FAIL $desc: no match for '$pat' in:"
		printf '%s\n' "$out" | head -20
		fail=1
	fi
}
# the library actually loaded must be ours, not Debian's
loaded=$(LD_LIBRARY_PATH="$lib" LD_DEBUG=libs "$bin" --version 2>&1 |
	grep -m1 'calling init: .*libfabric.so.1')
case "$loaded" in
*"$lib"*) echo "ok   loads $lib/libfabric.so.1" ;;
*) echo "FAIL not loading our library: $loaded"; fail=1 ;;
esac
check "--version reports 1.17" '^libfabric api: 1\.17$' --version
check "-l lists testprov" '^testprov:' -l
check "-p testprov -v prints fi_info" 'type:[[:space:]]+FI_EP_RDM' -p testprov -v
check "-p testprov shows provider" 'provider: testprov' -p testprov
check "-c FI_TAGGED finds testprov" 'provider: testprov' -c FI_TAGGED
# a cap testprov lacks must find nothing (exit status 61 = ENODATA)
run -p testprov -c FI_ATOMIC >/dev/null 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "ok   -p testprov -c FI_ATOMIC finds nothing (rc $rc)"
else
	echo "FAIL -p testprov -c FI_ATOMIC matched"
	fail=1
fi
check "-e lists core params" 'FI_LOG_LEVEL' -e

# -l: "NAME:" then "    version: X.Y", for each provider but testprov
versions() {
	awk '/^[^ ].*:$/ { n = $1 } /version:/ { print n, $2 }' |
		grep -v '^testprov:'
}
rel=$(run --version | sed -n 's/^libfabric: //p')
want=$(echo "$rel" | awk -F. '{ printf "%d.%d", $1 * 100 + $2, $3 * 10 }')
ours=$(run -l | versions)
bad=$(printf '%s
' "$ours" | awk -v w="$want" '$2 != w')
if [ -n "$ours" ] && [ -z "$bad" ]; then
	echo "ok   -l prints version $want (library $rel) for every provider"
else
	echo "FAIL -l versions, want $want (library $rel):"
	printf '%s
' "$ours"
	fail=1
fi
# Debian's own library follows the same convention for the same names.
debian=$(timeout 30 "$bin" -l 2>/dev/null | versions)
for name in $(printf '%s
' "$ours" | cut -d' ' -f1); do
	theirs=$(printf '%s
' "$debian" | grep -F -x -m1 "$name $want")
	[ -n "$debian" ] && [ -z "$theirs" ] &&
		printf '%s
' "$debian" | grep -q -F "$name " && {
		echo "FAIL Debian's library prints another version for $name"
		fail=1
	}
done
# The iov limits each provider offers are Debian's (largest offered over its
# FI_EP_RDM and FI_EP_MSG entries): clients tuned on Debian's break on
# more (fabtests' ubertest rounds 6- and 8-iov layouts to a total that is
# not the message size, and counts the receive as lost).
iov_limits() {
	grep -E '^[[:space:]]+(iov_limit|rma_iov_limit):' |
		sort -u | awk '{ m[$1] = $2 > m[$1] ? $2 : m[$1] }
			END { for (k in m) print k, m[k] }' | sort
}
for p in shm tcp sockets; do
	theirs=$(timeout 30 "$bin" -p "$p" -t FI_EP_RDM -v 2>/dev/null |
		iov_limits)
	[ -n "$theirs" ] || continue
	mine=$(run -p "$p" -t FI_EP_RDM -v 2>/dev/null | iov_limits)
	if [ "$mine" = "$theirs" ]; then
		echo "ok   $p RDM iov limits as Debian's:" $mine
	else
		echo "FAIL $p RDM iov limits:" $mine "; Debian's:" $theirs
		fail=1
	fi
done
exit $fail
