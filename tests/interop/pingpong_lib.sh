# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# pingpong_lib.sh - what fi_pingpong_shm.sh and fi_pingpong_tcp.sh share,
# sourced (POSIX sh): one run of Debian's unmodified fi_pingpong
# (libfabric-bin) as server and client against our library, with data
# checks over all sizes. The sourcing script sets LIBDIR, TMO and PP.

# Below the ephemeral range (32768 and up), so that sockets other tests
# open meanwhile rarely hold it; a run whose server found its port taken
# (exit 98, EADDRINUSE) is tried again on another one.
port=$(( 10000 + $$ % 20000 ))
fail=0

# pingpong DESC ARGS...: fi_pingpong ARGS -S all -c, server and client;
# prints PASS or FAIL (with both logs) for DESC, and sets fail=1 on FAIL
# shellcheck disable=SC2034 # fail is the sourcing script's
pingpong() {
	desc=$1
	shift
	log=$(mktemp)
	for try in 1 2 3; do
		LD_LIBRARY_PATH=$LIBDIR timeout "$TMO" "$PP" "$@" -S all -c \
			-B "$port" >"$log.srv" 2>&1 &
		srv=$!
		sleep 0.5
		LD_LIBRARY_PATH=$LIBDIR timeout "$TMO" "$PP" "$@" -S all -c \
			-P "$port" 127.0.0.1 >"$log" 2>&1
		crc=$?
		wait $srv
		src=$?
		port=$((port + 1))
		[ "$src" = 98 ] || break
		echo "note: port taken (try $try), again on port $port"
	done
	# Every size line must be there: the biggest one ends the table
	# (PP_MIN_LINES fewer where max_msg_size stops it early: datagrams).
	lines=$(grep -c '^[0-9]' "$log")
	if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] ||
		[ "$lines" -lt "${PP_MIN_LINES:-40}" ]; then
		echo "FAIL: fi_pingpong $desc (client $crc, server $src, $lines sizes)"
		cat "$log" "$log.srv"
		fail=1
	else
		echo "PASS: fi_pingpong $desc ($lines sizes)"
	fi
	rm -f "$log" "$log.srv"
}
