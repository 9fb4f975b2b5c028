#!/bin/sh
# fi_pingpong_tcp.sh - interop check of the tcp provider's endpoints:
# Debian's unmodified fi_pingpong (libfabric-bin) runs against our library
# with -e rdm (native; Debian itself only offers it layered as
# tcp;ofi_rxm) and -e msg (passive endpoint, fi_connect/fi_accept), each
# in -m msg and -m tagged modes with data checks over all sizes. Exits 77
# (skip) when fi_pingpong is not installed, non-zero when any run fails.
#
# Environment: OFI_LIBDIR (default: the build's .libs), PINGPONG_ITERS
# (default 20, about 13 s per endpoint type), PINGPONG_TIMEOUT (seconds
# per run, default 300).
LIBDIR=${OFI_LIBDIR:-${top_builddir:-.}/.libs}
ITERS=${PINGPONG_ITERS:-20}
TMO=${PINGPONG_TIMEOUT:-300}
PP=$(command -v fi_pingpong) || { echo "SKIP: fi_pingpong not found"; exit 77; }
[ -e "$LIBDIR/libfabric.so.1" ] || { echo "FAIL: no $LIBDIR/libfabric.so.1"; exit 1; }

# Below the ephemeral range (32768 and up), so that sockets other tests
# open meanwhile rarely hold it; a run whose server found its port taken
# (exit 98, EADDRINUSE) is tried again on another one.
port=$(( 10000 + $$ % 20000 ))
fail=0
for run in rdm:msg rdm:tagged msg:msg msg:tagged; do
	ep=${run%%:*}
	mode=${run#*:}
	log=$(mktemp)
	for try in 1 2 3; do
		LD_LIBRARY_PATH=$LIBDIR timeout "$TMO" "$PP" -p tcp -e "$ep" \
			-I "$ITERS" -S all -c -m "$mode" -B "$port" \
			>"$log.srv" 2>&1 &
		srv=$!
		sleep 0.5
		LD_LIBRARY_PATH=$LIBDIR timeout "$TMO" "$PP" -p tcp -e "$ep" \
			-I "$ITERS" -S all -c -m "$mode" -P "$port" \
			127.0.0.1 >"$log" 2>&1
		crc=$?
		wait $srv
		src=$?
		port=$((port + 1))
		[ $src = 98 ] || break
		echo "note: port taken (try $try), again on port $port"
	done
	# Every size line must be there: the biggest one ends the table.
	lines=$(grep -c '^[0-9]' "$log")
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ "$lines" -lt 40 ]; then
		echo "FAIL: fi_pingpong -e $ep -m $mode (client $crc, server $src, $lines sizes)"
		cat "$log" "$log.srv"
		fail=1
	else
		echo "PASS: fi_pingpong -e $ep -m $mode ($lines sizes)"
	fi
	rm -f "$log" "$log.srv"
done
exit $fail
