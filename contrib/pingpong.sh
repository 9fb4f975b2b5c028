#!/bin/sh
# A pingpong between two processes through our library over the shm
# provider: fabtests' rdm_pingpong built standalone against the install
# prefix, then Debian's unmodified fi_pingpong with LD_LIBRARY_PATH at our
# library. Usage: pingpong.sh PREFIX
set -u
prefix=${1:?usage: pingpong.sh PREFIX}
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$prefix/lib
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
port=$((20000 + $$ % 20000))
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

# pair NAME CMD...: "CMD -B PORT" serves in the background, then
# "CMD -P PORT 127.0.0.1" is the client; both bounded in time.
pair() {
	name=$1
	shift
	port=$((port + 1))
	echo "== $name"
	timeout 60 "$@" -B $port &
	srv=$!
	sleep 0.5
	timeout 60 "$@" -P $port 127.0.0.1
	rc=$?
	wait $srv
	src=$?
	[ $rc = 0 ] && [ $src = 0 ] && return 0
	echo "$name failed (client $rc, server $src)"
	return 1
}

make -s -C "$top/fabtests" LIBFABRIC_PREFIX="$prefix" BINDIR="$bin" \
	"$bin/rdm_pingpong" || exit 1
fail=0
pair "fabtests rdm_pingpong (shm, tagged, data check)" \
	"$bin/rdm_pingpong" -p shm -m tagged -c -S 1,64,4k,64k,1m -I 200 || \
	fail=1
if [ -x /usr/bin/fi_pingpong ]; then
	pair "Debian's fi_pingpong on our library (shm, data check)" \
		/usr/bin/fi_pingpong -p shm -e rdm -c -S all -I 100 || fail=1
fi
exit $fail
