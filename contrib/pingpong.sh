#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Pingpongs between two processes through our library over the shm
# provider: fabtests' rdm_pingpong built standalone against the install
# prefix, then Debian's unmodified fi_pingpong with LD_LIBRARY_PATH at our
# library. The figures shown are the library's: those runs do not check
# the data (a byte-by-byte check caps 1 MiB at well under 1 GB/s). One
# more run of each checks every byte over all sizes and prints only its
# verdict. Usage: pingpong.sh PREFIX; PINGPONG_ITERS sets the iterations
# of the unchecked runs (default 200 for rdm_pingpong, 100 for
# fi_pingpong).
set -u
prefix=${1:?usage: pingpong.sh PREFIX}
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$prefix/lib
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
port=$((20000 + $$ % 20000))
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

# pair NAME CMD...: "CMD -B PORT" serves in the background, then
# "CMD -P PORT 127.0.0.1" is the client (its table on stdout); both
# bounded in time.
pair() {
	name=$1
	shift
	port=$((port + 1))
	echo "== $name"
	echo "   $*"
	timeout 120 "$@" -B $port >"$bin/srv.log" 2>&1 &
	srv=$!
	sleep 0.5
	timeout 120 "$@" -P $port 127.0.0.1
	rc=$?
	wait $srv
	src=$?
	[ $rc = 0 ] && [ $src = 0 ] && return 0
	cat "$bin/srv.log"
	echo "$name failed (client $rc, server $src)"
	return 1
}

# checked NAME CMD...: the pair with data checks (-c); the verdict only
checked() {
	name=$1
	shift
	if pair "$name" "$@" -c >"$bin/check.log" 2>&1; then
		echo "== $name: PASS, every byte checked" \
			"($(grep -c '^[0-9]' "$bin/check.log") sizes)"
		return 0
	fi
	cat "$bin/check.log"
	return 1
}

make -s -C "$top/fabtests" LIBFABRIC_PREFIX="$prefix" BINDIR="$bin" \
	"$bin/rdm_pingpong" || exit 1
fail=0
rdm="$bin/rdm_pingpong -p shm -m tagged"
# shellcheck disable=SC2086 # $rdm is a command and its words
pair "fabtests rdm_pingpong (shm, tagged)" $rdm -S 1,64,4k,64k,1m \
	-I "${PINGPONG_ITERS:-200}" || fail=1
if [ -x /usr/bin/fi_pingpong ]; then
	pp="/usr/bin/fi_pingpong -p shm -e rdm"
	# shellcheck disable=SC2086
	pair "Debian's fi_pingpong on our library (shm)" $pp -S all \
		-I "${PINGPONG_ITERS:-100}" || fail=1
fi
# shellcheck disable=SC2086
checked "correctness: fabtests rdm_pingpong with data check" $rdm \
	-S 1,64,4k,64k,1m -I 50 || fail=1
if [ -x /usr/bin/fi_pingpong ]; then
	# shellcheck disable=SC2086
	checked "correctness: Debian's fi_pingpong with data check" $pp \
		-S all -I 20 || fail=1
fi
exit $fail
