#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# bench.sh: performance of our libfabric against Debian's libfabric 1.17 in
# one run, as ratios.  Two parts, each binary run once with
# LD_LIBRARY_PATH=OUR_LIBDIR and once against the system library,
# interleaved (ours, Debian's, Debian's, ours, ...), REPS times each:
#  pp  Debian's unmodified fi_pingpong (libfabric-bin): 8-byte latency and
#      1 MiB ping-pong bandwidth, set against the hardware floors measured
#      by fabtests/benchmarks/{raw_pingpong,memcpy_bw}.c;
#  bw  fabtests/benchmarks/rdm_bw.c built here against Debian's headers and
#      library: windowed bandwidth (WINDOW operations in flight) for tagged
#      sends, RMA writes and RMA reads over a size sweep, one table per mode
#      with ours/Debian and the targets (>= 1.0 everywhere, >= 1.5 from
#      64 KiB); before each round fabtests/benchmarks/copy_ring.c measures
#      the machine's two-core streaming rate, which streaming protocols
#      cannot beat and which moves on a shared host;
#  wait blocking waits under automatic progress: upstream fabtests'
#      fi_rdm_pingpong (fi_cq_sread) and fi_rdm_cntr_pingpong
#      (fi_cntr_wait), -c sread, 64 B, 200 iterations, every RDM provider
#      asked for FI_PROGRESS_AUTO through progress_shim (Debian's shm
#      offers manual progress only: its runs keep their default, ours
#      ask for AUTO as everywhere else); the binaries from FABTESTS_BIN
#      (default /tmp/ofi-peers/fabtests/bin, then $PATH);
#  coll (only with -M coll) contrib/coll-bench.sh: barrier, broadcast and
#      allreduce on our tcp and shm against Debian's
#      tcp;ofi_rxm and Open MPI over vader, at 2 and 4 processes, 200
#      calls per figure (-q: 100), ranks pinned as mpirun binds them and
#      unpinned (vader --bind-to none).
# The pp and wait parts run in both settings a user meets: pinned as
# mpirun binds (round-robin over cpus 0 and 1), and unpinned, as
# fi_pingpong is typed by hand; bw runs pinned (-U: unpinned).
# A report, not a test: never run it in CI, it only fails on bad usage or
# missing tools.  Numbers on a loaded machine are noisy: the load average
# is printed before and after, and only medians are reported.
#
# usage: contrib/bench.sh [-p PROVIDER]... [-n REPS] [-t|-U] [-S]
#                         [-A BASE_LIBDIR]
#                         [-q] [-T SECS] [-P auto|manual]
#                         [-L LAT_ITERS] [-W BW_ITERS] [-M PARTS]
#                         [-o MODES] [-s SIZES] [-w WINDOW] [-D MS]
#                         [OUR_LIBDIR]
#   -p PROV   also run this provider (shm always runs); repeatable.
#             tcp: Debian's side is its tcp;ofi_rxm, the floors are
#             fabtests/benchmarks/raw_tcp.c (loopback TCP ping-pong and
#             stream) and the tcp targets (lat <= 0.7x Debian and
#             <= 1.2x raw TCP, 1 MiB bw >= 1.2x Debian). Our tcp runs
#             with its same-host path off (FI_TCP_SHM=0): the TCP path
#             is measured.
#             tcp-shm: our tcp as a user gets it on one host, its
#             same-host path through shm on (FI_TCP_SHM=1), against
#             the same Debian tcp;ofi_rxm (targets: lat <= 0.7x, bw
#             >= 1.2x Debian; no raw TCP floor applies)
#             PROV-msg, PROV-dgram: fi_pingpong -e msg / -e dgram (the
#             pp part only, rdm_bw is RDM's; dgram latency only, a
#             datagram holds no 1 MiB message). With tcp among the
#             providers, every sockets[-msg|-dgram] row is also set
#             against our tcp (dgram against tcp's rdm) with sockets'
#             targets: lat <= 1.1x, bw >= 0.9x our tcp; so is sockets'
#             rdm_bw, every size (>= 0.9x). Sockets' same-host path is
#             off too (FI_SOCKETS_SHM=0), but its progress is automatic
#             (a thread blocked in poll(2)) where tcp's is manual (the
#             application's polls spin, then yield): -P compares them in
#             one mode, see fi_sockets(7)
#   -n REPS   runs per library and metric (5)
#   -U        unpinned only.  By default (2+ cpus and taskset present)
#             every pp and wait figure is taken twice: pinned, the
#             fi_pingpong server and raw_pingpong's parent on cpu 0,
#             the client, raw_pingpong's child and memcpy_bw on cpu 1;
#             and unpinned, where the scheduler places (and moves) the
#             processes: each setting has its own table
#   -t        pinned only
#   -S        shared core: both processes of every run on cpu
#             0, as with more ranks than cores. No floors (they need two
#             cpus); fi_pingpong also at 64 KiB, 300 latency / 100
#             bandwidth iterations unless -L/-W say otherwise; targets
#             against Debian: time per transfer <= 0.01x at 8 B, <= 0.5x
#             at 64 KiB and 1 MiB; rdm_bw >= 2x up to 16 KiB, >= 1x above.
#   -A DIR    A/B of two builds of ours: the "debian" column runs the
#             libfabric.so.1 in DIR (say, main built in /tmp/base) with
#             our provider names and FI_TCP_SHM; ratios are new/base,
#             the targets do not apply
#   -q        quick: 3 reps, 2000 latency / 200 bandwidth iterations
#   -T SECS   timeout for every fi_pingpong process (60)
#   -P MODE   every run asks for FI_PROGRESS_AUTO or _MANUAL (auto,
#             manual) for data and control, whatever the program's
#             hints say: fabtests/benchmarks/progress_shim.c, preloaded
#             (LD_PRELOAD), wraps fi_getinfo. Default: each provider's
#             own default
#   -L, -W    iterations for the latency (10000) / bandwidth (1000) runs
#   -M PARTS  pp, bw, wait, coll, comma-separated (default pp,bw,wait)
#   -o MODES  rdm_bw modes: tagged,write,read (default all three)
#   -s SIZES  rdm_bw sizes, a,b,c with k/m suffixes (default 8 .. 4m)
#   -w N      rdm_bw window: operations in flight (64)
#   -D MS     rdm_bw time per size and mode (100; -q: 30)
#   OUR_LIBDIR  directory holding our libfabric.so.1
#             (default: ./build/.libs, then ./install/lib, under the
#             current directory, then under the source tree)

# shellcheck disable=SC2059 # one printf format ($hdr) serves every row
set -u
# Benchmarks stay on loopback unless told otherwise (tcp, sockets).
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo} FI_SOCKETS_IFACE=${FI_SOCKETS_IFACE:-lo}
# Our tcp's same-host path only where asked for (-p tcp-shm); sockets' is
# off too, so that its TCP path is what is set against tcp's.
export FI_TCP_SHM=0 FI_SOCKETS_SHM=0

top=$(cd "$(dirname "$0")/.." && pwd)
# die, usage, default_ourlib, pin_check; median, largest, ratio, verdict...
# shellcheck source=contrib/bench-lib.sh
. "$top/contrib/bench-lib.sh"
provs=(shm)
reps=5
pin=1
pins='1 0' # the settings pp and wait run in: pinned, unpinned
share=0
tmo=60
lat_iters=10000
coll_iters=200
bw_iters=1000
lat_size=8
bw_size=1048576
parts=pp,bw,wait
wait_iters=200
bw_modes=tagged,write,read
bw_sizes=
bw_window=64
bw_ms=100


lat_set='' bw_set=''
abase=''
progress=''
while getopts "p:n:tUSA:qT:P:L:W:M:o:s:w:D:h" opt; do
	case $opt in
	p) [[ " ${provs[*]} " == *" $OPTARG "* ]] || provs+=("$OPTARG") ;;
	n) reps=$OPTARG ;;
	t) pin=1 pins=1 ;;
	U) pin=0 pins=0 ;;
	S) share=1 ;;
	A) abase=$(cd "$OPTARG" 2>/dev/null && pwd) ||
		die "no such directory: $OPTARG" ;;
	q) reps=3 lat_iters=2000 bw_iters=200 bw_ms=30 coll_iters=100
	   wait_iters=100 ;;
	T) tmo=$OPTARG ;;
	P) progress=$OPTARG ;;
	L) lat_iters=$OPTARG lat_set=1 ;;
	W) bw_iters=$OPTARG bw_set=1 ;;
	M) parts=$OPTARG ;;
	o) bw_modes=$OPTARG ;;
	s) bw_sizes=$OPTARG ;;
	w) bw_window=$OPTARG ;;
	D) bw_ms=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
# Shared core: a tick-bound library takes ms per transfer.
if [ $share = 1 ]; then
	pin=1 pins=1
	[ -n "$lat_set" ] || lat_iters=300
	[ -n "$bw_set" ] || bw_iters=100
fi
for v in "$reps" "$tmo" "$lat_iters" "$bw_iters" "$bw_window" "$bw_ms"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || die "not a positive number: $v"
done
do_pp=0 do_bw=0 do_coll=0 do_wait=0
for p in ${parts//,/ }; do
	case $p in
	pp) do_pp=1 ;;
	bw) do_bw=1 ;;
	coll) do_coll=1 ;;
	wait) do_wait=1 ;;
	*) die "unknown part: $p (pp, bw, wait or coll)" ;;
	esac
done
for m in ${bw_modes//,/ }; do
	case $m in tagged | write | read) ;; *) die "unknown mode: $m" ;; esac
done
[[ -z $progress || $progress == auto || $progress == manual ]] ||
	die "unknown progress mode: $progress (auto or manual)"
[[ -z $bw_sizes || $bw_sizes =~ ^[0-9]+[kKmM]?(,[0-9]+[kKmM]?)*$ ]] ||
	die "bad size list: $bw_sizes"

ourlib=${1:-$(default_ourlib "$top")}
ourlib_arg=$ourlib
[ -n "$ourlib" ] && ourlib=$(cd "$ourlib" 2>/dev/null && pwd)
cpu_c=1 pp_metrics="lat bw"
[ $share = 1 ] && cpu_c=0 pp_metrics="lat mid bw"

[ $do_pp = 0 ] || command -v fi_pingpong >/dev/null ||
	die "fi_pingpong not found (apt-get install libfabric-bin)"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
pin_check
[ $pin = 1 ] || pins=0
fi_pp=$(command -v fi_pingpong || echo fi_pingpong)

work=$(mktemp -d /tmp/bench.XXXXXX) || die "mktemp failed"
work_top=$work # each setting's pp/wait runs keep their files below it
srv_pid=
# shellcheck disable=SC2317 # reached through the trap
cleanup() {
	# only the server this script started, by its pid
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$work_top"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- hardware floors ------------------------------------------------------

# The benchmark sources live next to fabtests; a prebuilt bin/ wins.
find_floor_tool() {
	local name=$1 b
	for b in "$top/fabtests/bin/$name" "$top/fabtests/benchmarks/$name"; do
		[ -x "$b" ] && { echo "$b"; return 0; }
	done
	${CC:-cc} -std=gnu11 -O2 -o "$work/$name" \
		"$top/fabtests/benchmarks/$name.c" 2>"$work/$name.cc.log" ||
		{ cat "$work/$name.cc.log" >&2; return 1; }
	echo "$work/$name"
}

# ---- fi_pingpong runs -----------------------------------------------------

port=$((20000 + ($$ * 7) % 10000))

port_busy() {
	local hex
	hex=$(printf ':%04X ' "$1")
	grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

next_port() {
	port=$((port + 1))
	[ $port -ge 32000 ] && port=20000
	while port_busy $port; do
		port=$((port + 1))
	done
}

# The server is ready once its control socket listens (state 0A).
listening() {
	awk -v port="$(printf ':%04X' "$1")" '
	$4 == "0A" && substr($2, length($2) - 4) == port { found = 1 }
	END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

wait_listen() {
	local tries=200
	while [ $tries -gt 0 ]; do
		tries=$((tries - 1))
		listening "$1" && return 0
		kill -0 "$srv_pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# Prints "usec mbps" taken from fi_pingpong's result line, by column name.
# shellcheck disable=SC2317 # called through pair_run
parse_pp() {
	awk '
	/usec\/xfer/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "usec/xfer") ucol = i
			if ($i == "MB/sec") mcol = i
		}
		next
	}
	ucol && mcol && NF >= ucol && $1 ~ /^[0-9]/ {
		print $ucol, $mcol
		exit
	}' "$1"
}

# tcp-shm is our tcp with its same-host path on: -p tcp, FI_TCP_SHM=1;
# PROV-msg and PROV-dgram name fi_pingpong's endpoint type.
real_prov() {
	local p=${1%-shm}
	p=${p%-msg}
	echo "${p%-dgram}"
}

ep_of() {
	case $1 in
	*-msg) echo msg ;;
	*-dgram) echo dgram ;;
	*) echo rdm ;;
	esac
}

shm_for() {
	[ "$1" = tcp-shm ] && echo 1 || echo 0
}

# pair_run OUT PARSE [PORT]: the server command srv_cmd in the background,
# then, once it is ready (its control socket on PORT listens; without one,
# half a second), the client command cli_cmd, both under timeout; prints
# PARSE's reading of the client's output, or fails with OUT.fail saying
# what went wrong.
pair_run() {
	local out=$1 parse=$2 ready=${3:-} res rc
	timeout "$tmo" "${srv_cmd[@]}" >"$out.srv" 2>&1 </dev/null &
	srv_pid=$!
	if [ -z "$ready" ]; then
		sleep 0.5 # no control socket to watch: the server binds first
	elif ! wait_listen "$ready"; then
		kill "$srv_pid" 2>/dev/null
		wait "$srv_pid" 2>/dev/null
		srv_pid=
		cp "$out.srv" "$out.fail"
		return 1
	fi
	timeout "$tmo" "${cli_cmd[@]}" >"$out.cli" 2>&1 </dev/null
	rc=$?
	[ $rc = 0 ] || kill "$srv_pid" 2>/dev/null
	wait "$srv_pid" 2>/dev/null
	srv_pid=
	res=$("$parse" "$out.cli")
	if [ $rc != 0 ] || [ -z "$res" ]; then
		{
			cat "$out.srv" "$out.cli"
			[ $rc = 124 ] && echo "(timed out after ${tmo}s)"
			[ $rc != 0 ] && echo "(client exit $rc)"
		} >"$out.fail"
		return 1
	fi
	echo "$res"
}

# run_failed NAME FAIL LINES: a run NAME failed; says so with the last
# LINES lines of its file FAIL, counted in failures.
run_failed() {
	failures=$((failures + 1))
	echo "    $1 FAILED: $(tail -n "$3" "$2" | tr '\n' ' ')"
}

# run_pp LIB(ours|deb) PROV SIZE ITERS -> "usec mbps" on stdout, or fails
run_pp() {
	local lib=$1 prov=$2 size=$3 iters=$4 env_lib=() ts_s=() ts_c=()
	local args srv_cmd cli_cmd
	# Debian's run must not inherit a caller's LD_LIBRARY_PATH either
	read -ra env_lib <<<"$(lib_env "$lib" "$prov")"
	[ $pin = 1 ] && ts_s=(taskset -c 0) ts_c=(taskset -c "$cpu_c")
	next_port
	args=(-p "$(real_prov "$prov")" -e "$(ep_of "$prov")" -S "$size"
		-I "$iters")
	srv_cmd=("${ts_s[@]}" "${env_lib[@]}" "$fi_pp" "${args[@]}" -B "$port")
	cli_cmd=("${ts_c[@]}" "${env_lib[@]}" "$fi_pp" "${args[@]}" -P "$port"
		127.0.0.1)
	pair_run "$work/pp.$lib.$prov.$size" parse_pp "$port"
}

# ---- statistics and table -------------------------------------------------


# ---- rdm_bw runs ---------------------------------------------------------

# One rdm_bw binary for both libraries (DESIGN: built against Debian's
# headers, so our drop-in ABI is what is measured), compiled here every
# time: a prebuilt one may carry a run path to either library.
build_rdm_bw() {
	local src=$top/fabtests inc=() libs=(-lfabric)
	if [ ! -e /usr/include/rdma/fabric.h ]; then
		echo "NOTE: no Debian libfabric headers (libfabric-dev): rdm_bw" \
			"is built against this tree's headers" >&2
		inc=(-I"$top/include")
		[ -n "$ourlib" ] && libs=(-L"$ourlib" -lfabric)
	fi
	${CC:-cc} -std=gnu11 -O2 -g "${inc[@]}" -I"$src/common" \
		-o "$work/rdm_bw" "$src/benchmarks/rdm_bw.c" \
		"$src/common/shared.c" "${libs[@]}" 2>"$work/rdm_bw.cc.log" ||
		{ cat "$work/rdm_bw.cc.log" >&2; return 1; }
	echo "$work/rdm_bw"
}

# env_for LIB CMD...: runs CMD with the environment that loads LIB's
# libfabric (a caller's LD_LIBRARY_PATH never leaks into Debian's runs)
env_for() {
	local lib=$1
	shift
	if [ "$lib" = ours ]; then
		env "LD_LIBRARY_PATH=$ourlib" "$@"
	elif [ -n "$abase" ]; then
		env "LD_LIBRARY_PATH=$abase" "$@"
	else
		env -u LD_LIBRARY_PATH "$@"
	fi
}

# lib_env LIB PROV: the env command line (one word each, no blanks in
# the directories) that runs LIB's library for PROV (-P: in that
# progress mode)
lib_env() {
	local dir=$ourlib pre=''
	[ "$1" = ours ] || dir=$abase
	[ -n "$shim" ] && pre=" LD_PRELOAD=$shim BENCH_PROGRESS=$progress"
	if [ -z "$dir" ]; then
		echo "env -u LD_LIBRARY_PATH$pre"
	else
		echo "env LD_LIBRARY_PATH=$dir FI_TCP_SHM=$(shm_for "$2")$pre"
	fi
}

# build_shim: progress_shim.so for -P, built here like rdm_bw
build_shim() {
	local inc=()
	[ -e /usr/include/rdma/fabric.h ] || inc=(-I"$top/include")
	${CC:-cc} -std=gnu11 -O2 -shared -fPIC "${inc[@]}" \
		-o "$work/progress_shim.so" \
		"$top/fabtests/benchmarks/progress_shim.c" -ldl \
		2>"$work/shim.cc.log" ||
		{ cat "$work/shim.cc.log" >&2; return 1; }
	echo "$work/progress_shim.so"
}

# run_bw LIB(ours|deb) PROV MODE -> rdm_bw's rows in $work/bw.LIB.out
run_bw() {
	local lib=$1 prov=$2 mode=$3 env_lib=() ts_s=() ts_c=() rc srv_rc
	local out=$work/bw.$lib args=()
	read -ra env_lib <<<"$(lib_env "$lib" "$prov")"
	[ $pin = 1 ] && ts_s=(taskset -c 0) ts_c=(taskset -c "$cpu_c")
	args=(-p "$(real_prov "$prov")" -o "$mode" -w "$bw_window" \
		-D "$bw_ms")
	[ -n "$bw_sizes" ] && args+=(-S "$bw_sizes")
	next_port
	timeout "$tmo" "${ts_s[@]}" "${env_lib[@]}" "$rbw" "${args[@]}" \
		-B "$port" >"$out.srv" 2>&1 </dev/null &
	srv_pid=$!
	# the client retries its connect until the server listens
	timeout "$tmo" "${ts_c[@]}" "${env_lib[@]}" "$rbw" "${args[@]}" \
		-P "$port" 127.0.0.1 >"$out.out" 2>&1 </dev/null
	rc=$?
	[ $rc = 0 ] || kill "$srv_pid" 2>/dev/null
	wait "$srv_pid" 2>/dev/null
	srv_rc=$?
	srv_pid=
	if [ $rc != 0 ] || [ $srv_rc != 0 ]; then
		{
			cat "$out.srv" "$out.out"
			[ $rc = 124 ] && echo "(timed out after ${tmo}s)"
			echo "(client exit $rc, server exit $srv_rc)"
		} >"$out.fail"
		return 1
	fi
}

# rows "mode bytes window xfers seconds MB/s Mxfers/s check" -> files
keep_bw() {
	local lib=$1 prov=$2
	awk -v dir="$work" -v lib="$lib" -v prov="$prov" '
	/^#/ || NF < 8 { next }
	{
		f = dir "/bw." prov "." $1 "." $2 "." lib
		print $6 >>f
		close(f)
		if ($8 != "ok") bad++
	}
	END { exit bad > 0 }' "$work/bw.$lib.out"
}

# The machine's core-to-core streaming rate now (copy_ring, pinned like
# rdm_bw): on a shared host it moves between rounds, and streaming
# bandwidth with it. Prints ", copy_ring N MB/s" and keeps N.
ring_round() {
	local ab=() v
	[ -n "$ring" ] && [ $share = 0 ] || return 0
	[ $pin = 1 ] && ab=(-a 0 -b 1)
	v=$("$ring" -n 1 -m 100 "${ab[@]}" 2>/dev/null |
		sed -n 's/.* mbps=\([0-9]*\).*/\1/p')
	[ -n "$v" ] || return 0
	echo "$v" >>"$work/ring"
	echo ", copy_ring $v MB/s"
}

bw_part() {
	local r prov mode lib order sizes sz o d rt tgt lim line hdr ring
	echo
	echo "== windowed bandwidth: rdm_bw (window $bw_window, ~$bw_ms ms" \
		"per size), $reps runs each, interleaved, medians"
	echo "rdm_bw:      $rbw, built with $(${CC:-cc} --version | head -n 1)"
	for lib in deb ours; do
		[ $lib = ours ] && [ $ours_ok = 0 ] && continue
		echo "  $lib: $(env_for $lib ldd "$rbw" | awk \
			'$1 ~ /^libfabric.so/ && $2 == "=>" { print $3 }')"
	done
	ring=$(find_floor_tool copy_ring) || ring=
	[ -n "$ring" ] || echo "NOTE: copy_ring did not build: no ceiling"
	for r in $(seq 1 "$reps"); do
		echo "  round $r/$reps (load $(cut -d' ' -f1-3 /proc/loadavg))$(
			ring_round)"
		# alternate who goes first: drift in the load cancels out
		order="ours deb"
		[ $((r % 2)) = 0 ] && order="deb ours"
		for prov in "${provs[@]}"; do
			[ "$(ep_of "$prov")" = rdm ] || continue
			for mode in ${bw_modes//,/ }; do
				for lib in $order; do
					[ "$lib" = ours ] &&
						[ "${ours_has[$prov]}" = 0 ] &&
						continue
					if ! run_bw "$lib" "$prov" "$mode"; then
						failures=$((failures + 1))
						echo "    $lib $prov $mode FAILED:" \
							"$(tail -n 3 \
							"$work/bw.$lib.fail" |
							tr '\n' ' ')"
						continue
					fi
					keep_bw "$lib" "$prov" || {
						failures=$((failures + 1))
						echo "    $lib $prov $mode: DATA" \
							"CHECK FAILED"
					}
					echo "    $lib $prov $mode: $(awk \
						'!/^#/ && NF >= 8 {
						printf "%s:%.0f ", $2, $6 }' \
						"$work/bw.$lib.out")"
				done
			done
		done
	done
	echo
	if [ $share = 1 ]; then
		echo "MB/s = 10^6 B/s, median of $reps, both processes on" \
			"cpu 0; target: ours/debian >= 2.00 up to 16 KiB," \
			">= 1.00 above; best = ratio of the best runs"
	else
		echo "MB/s = 10^6 B/s, median of $reps; target: ours/debian" \
			">= 1.00 below 64 KiB, >= 1.50 from 64 KiB; best =" \
			"ratio of the best runs (load only slows a run down)"
	fi
	[ -s "$work/ring" ] && echo "copy_ring, the two-core streaming" \
		"ceiling before each round: median $(median "$work/ring" |
		cut -d. -f1), lowest $(smallest "$work/ring")," \
		"highest $(largest "$work/ring") MB/s (streaming cannot beat" \
		"it while it lasts; Debian's shm copies by CMA on one core)"
	hdr='%-8s %10s %11s %11s %6s %11s %7s %8s\n'
	for prov in "${provs[@]}"; do
		[ "$(ep_of "$prov")" = rdm ] || continue
		for mode in ${bw_modes//,/ }; do
			echo
			echo "$prov $mode:"
			printf "$hdr" size ours debian ours/debian best \
				runs target verdict
			sizes=$(for f in "$work/bw.$prov.$mode".*.*; do
				[ -e "$f" ] || continue
				f=${f#"$work/bw.$prov.$mode."}
				echo "${f%.*}"
			done | sort -n -u)
			for sz in $sizes; do
				o=$(median "$work/bw.$prov.$mode.$sz.ours")
				d=$(median "$work/bw.$prov.$mode.$sz.deb")
				rt=$(ratio "$o" "$d")
				if [ $share = 1 ] && [ "$sz" -le 16384 ]; then
					tgt='>=2.00' lim=2
				elif [ $share = 1 ]; then
					tgt='>=1.00' lim=1
				elif [ "$sz" -ge 65536 ]; then
					tgt='>=1.50' lim=1.5
				else
					tgt='>=1.00' lim=1
				fi
				line=$(printf "$hdr" "$sz" "$(fmt_num "$o")" \
					"$(fmt_num "$d")" "$rt" "$(ratio \
					"$(largest "$work/bw.$prov.$mode.$sz.ours")" \
					"$(largest "$work/bw.$prov.$mode.$sz.deb")")" \
					"$(count "$work/bw.$prov.$mode.$sz.ours")/$(count \
					"$work/bw.$prov.$mode.$sz.deb")" "$tgt" \
					"$(verdict "$rt" '>=' $lim)")
				echo "$line"
			done
		done
	done
	bw_vs_tcp
}

# Our sockets' windowed bandwidth against our tcp's, same run,
# every size (>= 0.9x).
bw_vs_tcp() {
	local mode sz o t rt hdr
	[[ " ${provs[*]} " == *" tcp "* && " ${provs[*]} " == *" sockets "* ]] ||
		return 0
	hdr='%-8s %10s %11s %11s %8s %8s\n'
	for mode in ${bw_modes//,/ }; do
		echo
		echo "ours: sockets $mode against tcp (FI_TCP_SHM=0," \
			"FI_SOCKETS_SHM=0), medians of this run:"
		printf "$hdr" size sockets tcp sock/tcp target verdict
		for sz in $(for f in "$work/bw.sockets.$mode".*.ours; do
			[ -e "$f" ] || continue
			f=${f#"$work/bw.sockets.$mode."}
			echo "${f%.ours}"
		done | sort -n); do
			o=$(median "$work/bw.sockets.$mode.$sz.ours")
			t=$(median "$work/bw.tcp.$mode.$sz.ours")
			rt=$(ratio "$o" "$t")
			printf "$hdr" "$sz" "$(fmt_num "$o")" "$(fmt_num "$t")" \
				"$rt" '>=0.9' "$(verdict "$rt" '>=' 0.9)"
		done
	done
}

# ---- pingpong part --------------------------------------------------------

pp_part() {
	local r prov lib m sz it res usec mbps o d of col floor tgt op lim name
	local order
	echo
	echo "== latency and ping-pong bandwidth: fi_pingpong -e rdm," \
		"$reps runs each (interleaved), medians; $(setting)"
	echo "fi_pingpong: $fi_pp ($(dpkg-query -W -f '${Package} ${Version}' \
		libfabric-bin 2>/dev/null || echo 'version unknown'))"
	cpu_a=-1 cpu_b=-1 mcpu=-1
	[ $pin = 1 ] && cpu_a=0 cpu_b=1 mcpu=1
	rpp='' mbw='' rtcp=''
	if [ $share = 0 ]; then
		rpp=$(find_floor_tool raw_pingpong) || rpp=
		mbw=$(find_floor_tool memcpy_bw) || mbw=
		if [[ " ${provs[*]} " == *" tcp "* ]]; then
			rtcp=$(find_floor_tool raw_tcp) ||
				echo "NOTE: raw_tcp did not build: no tcp floors"
		fi
		[ -n "$rpp" ] ||
			echo "NOTE: raw_pingpong did not build: no latency floor"
		[ -n "$mbw" ] ||
			echo "NOTE: memcpy_bw did not build: no bandwidth floor"
	fi

	for r in $(seq 1 "$reps"); do
		echo "  round $r/$reps"
		[ $share = 1 ] || floors
		# alternate who goes first, as bw_part does: drift in the
		# load, and whatever the first run leaves warm, cancel out
		order="ours deb"
		[ $((r % 2)) = 0 ] && order="deb ours"
		for prov in "${provs[@]}"; do
			for lib in $order; do
				[ $lib = ours ] && [ "${ours_has[$prov]}" = 0 ] &&
					continue
				for m in $pp_metrics; do
					# a datagram holds no 1 MiB message
					[ "$m" != lat ] && [ "$(ep_of "$prov")" = dgram ] &&
						continue
					case $m in
					lat) sz=$lat_size it=$lat_iters ;;
					mid) sz=65536 it=$bw_iters ;;
					*) sz=$bw_size it=$bw_iters ;;
					esac
					res=$(run_pp $lib "$prov" "$sz" "$it") || {
						run_failed "$lib $prov $m" \
							"$work/pp.$lib.$prov.$sz.fail" 3
						continue
					}
					read -r usec mbps <<<"$res"
					echo "    $lib $prov $m: $usec us $mbps MB/s"
					echo "$usec" >>"$work/$prov.$m.$lib.usec"
					echo "$mbps" >>"$work/$prov.$m.$lib.mbps"
				done
			done
		done
	done
	[ $share = 1 ] && { pp_table_shared; return; }
	raw_lat=$(median "$work/raw.lat")
	mc_warm=$(median "$work/memcpy.warm")
	mc_cold=$(median "$work/memcpy.cold")
	tcp_lat=$(median "$work/rawtcp.lat")
	tcp_bw=$(median "$work/rawtcp.bw")

	echo
	echo "latency: fi_pingpong usec/xfer (one-way, half a round trip) at" \
		"$lat_size B; floor = raw_pingpong one-way cache-line latency" \
		"(${raw_lat:-n/a} us)"
	echo "  target: ours <= 2x raw cross-process cache-line ping-pong"
	echo "bandwidth: fi_pingpong MB/sec (10^6 B/s) at $bw_size B; floor =" \
		"single-core 1 MiB memcpy, warm cache (${mc_warm:-n/a} MB/s);" \
		"cold (> LLC) ${mc_cold:-n/a} MB/s"
	echo "  target: ours >= 70% of warm memcpy"
	if [ -n "$rtcp" ]; then
		echo "tcp: Debian's side is tcp;ofi_rxm; floors = raw_tcp," \
			"TCP_NODELAY loopback: one-way ${tcp_lat:-n/a} us," \
			"1 MiB stream ${tcp_bw:-n/a} MB/s"
		echo "  targets: lat <= 0.70x Debian and <= 1.20x raw_tcp;" \
			"bw >= 1.20x Debian"
	fi
	echo
	hdr='%-16s %10s %10s %11s %10s %10s %7s %8s\n'
	printf "$hdr" metric ours debian ours/debian ours/floor deb/floor \
		target verdict
	for prov in "${provs[@]}"; do
		for m in lat bw; do
			[ $m = bw ] && [ "$(ep_of "$prov")" = dgram ] && continue
			if [ $m = lat ]; then
				col=usec floor=$raw_lat tgt='<=2.00' op='<='
				lim=2 name="$prov lat us"
			else
				col=mbps floor=$mc_warm tgt='>=0.70' op='>='
				lim=0.7 name="$prov bw MB/s"
			fi
			o=$(median "$work/$prov.$m.ours.$col")
			d=$(median "$work/$prov.$m.deb.$col")
			of=$(ratio "$o" "$floor")
			vd=$(verdict "$of" $op $lim)
			if [ "$prov" = tcp ]; then
				tcp_targets
			elif [ "$prov" = tcp-shm ]; then
				tcp_shm_targets
			fi
			printf "$hdr" "$name" "$(fmt_num "$o")" \
				"$(fmt_num "$d")" "$(ratio "$o" "$d")" "$of" \
				"$(ratio "$d" "$floor")" "$tgt" "$vd"
		done
	done
	printf "$hdr" "raw one-way us" "$(fmt_num "$raw_lat")" - - - - - floor
	printf "$hdr" "memcpy warm MB/s" "$(fmt_num "$mc_warm")" - - - - - \
		floor
	printf "$hdr" "memcpy cold MB/s" "$(fmt_num "$mc_cold")" - - - - - info
	if [ -n "$rtcp" ]; then
		printf "$hdr" "raw_tcp one-way" "$(fmt_num "$tcp_lat")" - - - \
			- - floor
		printf "$hdr" "raw_tcp MB/s" "$(fmt_num "$tcp_bw")" - - - - - \
			floor
	fi
	echo
	echo "runs kept (ours/debian of $reps):"
	for prov in "${provs[@]}"; do
		for m in lat bw; do
			[ $m = bw ] && [ "$(ep_of "$prov")" = dgram ] && continue
			echo "  $prov $m: $(count \
				"$work/$prov.$m.ours.usec")/$(count \
				"$work/$prov.$m.deb.usec")"
		done
	done
	echo "spread over the runs, min-max (max/min):"
	for prov in "${provs[@]}"; do
		for m in lat bw; do
			[ $m = bw ] && [ "$(ep_of "$prov")" = dgram ] && continue
			col=usec
			[ $m = bw ] && col=mbps
			echo "  $prov $m: ours $(spread \
				"$work/$prov.$m.ours.$col"), debian $(spread \
				"$work/$prov.$m.deb.$col")"
		done
	done
	echo "lat ratios: lower is better; bw ratios: higher is better"
	pp_vs_tcp
}

# The pinning of this setting's runs, in words.
setting() {
	if [ $pin = 1 ]; then
		echo "pinned (server cpu 0, client cpu $cpu_c)"
	else
		echo "unpinned${pin_why}"
	fi
}

# spread FILE: "min-max (max/min)" of its numbers, or n/a
spread() {
	local lo hi
	lo=$(smallest "$1") hi=$(largest "$1")
	[ -n "$lo" ] || { echo n/a; return; }
	echo "$(fmt_num "$lo")-$(fmt_num "$hi") ($(ratio "$hi" "$lo"))"
}

# The tcp row a sockets[-msg|-dgram] row is set against (dgram: rdm's).
tcp_twin() {
	case $1 in
	sockets-msg) echo tcp-msg ;;
	sockets | sockets-dgram) echo tcp ;;
	esac
}

# Our sockets against our tcp, same run (lat <= 1.1x, bw >= 0.9x).
pp_vs_tcp() {
	local prov twin m col o t lim op
	[[ " ${provs[*]} " == *" tcp "* ]] || return 0
	echo
	echo "ours: sockets against tcp (FI_TCP_SHM=0), medians of this run"
	printf "$hdr" metric sockets tcp sock/tcp - - target verdict
	for prov in "${provs[@]}"; do
		twin=$(tcp_twin "$prov")
		[ -n "$twin" ] || continue
		for m in lat bw; do
			[ $m = bw ] && [ "$(ep_of "$prov")" = dgram ] && continue
			col=mbps lim=0.9 op='>='
			[ $m = lat ] && col=usec lim=1.1 op='<='
			o=$(median "$work/$prov.$m.ours.$col")
			t=$(median "$work/$twin.$m.ours.$col")
			printf "$hdr" "$prov $m vs $twin" "$(fmt_num "$o")" \
				"$(fmt_num "$t")" "$(ratio "$o" "$t")" - - \
				"$op$lim" "$(verdict "$(ratio "$o" "$t")" "$op" $lim)"
		done
	done
}

# Shared core: time per transfer, ours against Debian's only.
pp_table_shared() {
	local hdr o d rt
	echo
	echo "shared core: fi_pingpong usec/xfer (one-way), both processes" \
		"on cpu 0; lower is better"
	hdr='%-16s %10s %10s %11s %7s %8s\n'
	printf "$hdr" metric ours debian ours/debian target verdict
	for prov in "${provs[@]}"; do
		for m in $pp_metrics; do
			case $m in
			lat) tgt='<=0.01' lim=0.01 name="$prov 8 B" ;;
			mid) tgt='<=0.50' lim=0.5 name="$prov 64 KiB" ;;
			*) tgt='<=0.50' lim=0.5 name="$prov $bw_size B" ;;
			esac
			o=$(median "$work/$prov.$m.ours.usec")
			d=$(median "$work/$prov.$m.deb.usec")
			rt=$(ratio "$o" "$d" %.4f)
			printf "$hdr" "$name" "$(fmt_num "$o")" \
				"$(fmt_num "$d")" "$rt" "$tgt" \
				"$(verdict "$rt" '<=' $lim)"
		done
	done
	echo "runs kept (ours/debian of $reps):"
	for prov in "${provs[@]}"; do
		for m in $pp_metrics; do
			echo "  $prov $m: $(count \
				"$work/$prov.$m.ours.usec")/$(count \
				"$work/$prov.$m.deb.usec")"
		done
	done
}

# tcp's targets: against Debian's tcp;ofi_rxm and raw_tcp.
# Sets floor, of, tgt and vd for metric $m from $o and $d.
tcp_targets() {
	local vs
	if [ $m = lat ]; then
		floor=$tcp_lat tgt='<=.7d,1.2f'
		vs=$(ratio "$o" "$d")
		of=$(ratio "$o" "$floor")
		vd=$(verdict "$vs" '<=' 0.7)
		[ "$vd" = met ] && vd=$(verdict "$of" '<=' 1.2)
	else
		floor=$tcp_bw tgt='>=1.2d'
		vs=$(ratio "$o" "$d")
		of=$(ratio "$o" "$floor")
		vd=$(verdict "$vs" '>=' 1.2)
	fi
}

# tcp-shm's: against Debian's tcp;ofi_rxm only.
tcp_shm_targets() {
	if [ $m = lat ]; then
		tgt='<=.7d'
		vd=$(verdict "$(ratio "$o" "$d")" '<=' 0.7)
	else
		tgt='>=1.2d'
		vd=$(verdict "$(ratio "$o" "$d")" '>=' 1.2)
	fi
}

# The floors are measured in every round too: on a shared VM the vCPUs'
# placement (and so the raw latency) changes over minutes.
floors() {
	local line
	if [ -n "$rpp" ]; then
		line=$(timeout 120 "$rpp" -n 5 -i 20000 -c "$cpu_a,$cpu_b")
		echo "    $line"
		sed -n 's/.*lat_us=\([0-9.]*\).*/\1/p' <<<"$line" \
			>>"$work/raw.lat"
	fi
	if [ -n "$rtcp" ]; then
		line=$(timeout 120 "$rtcp" -n 3 -i 5000 -m 256 \
			-c "$cpu_a,$cpu_b")
		echo "    $line"
		sed -n 's/.*lat_us=\([0-9.]*\).*/\1/p' <<<"$line" \
			>>"$work/rawtcp.lat"
		sed -n 's/.*mbps=\([0-9.]*\).*/\1/p' <<<"$line" \
			>>"$work/rawtcp.bw"
	fi
	if [ -n "$mbw" ]; then
		line=$(timeout 120 "$mbw" -n 3 -m 30 -c "$mcpu")
		echo "    ${line//$'\n'/$'\n    '}"
		sed -n 's/.*mode=warm mbps=\([0-9.]*\).*/\1/p' <<<"$line" \
			>>"$work/memcpy.warm"
		sed -n 's/.*mode=cold mbps=\([0-9.]*\).*/\1/p' <<<"$line" \
			>>"$work/memcpy.cold"
	fi
}

# ---- blocking waits -------------------------------------------------------

# The upstream fabtests binaries the wait part runs (built against
# Debian's headers, as fi_pingpong is).
find_fabtests() {
	local d
	for d in "${FABTESTS_BIN:-/tmp/ofi-peers/fabtests/bin}" \
		"$(dirname "$(command -v fi_rdm_pingpong 2>/dev/null || echo .)")"; do
		[ -x "$d/fi_rdm_pingpong" ] && [ -x "$d/fi_rdm_cntr_pingpong" ] &&
			{ echo "$d"; return 0; }
	done
	return 1
}

# Prints usec/xfer from a fabtests result table, by column name.
# shellcheck disable=SC2317 # called through pair_run
parse_ft() {
	awk '
	/usec\/xfer/ {
		for (i = 1; i <= NF; i++)
			if ($i == "usec/xfer") ucol = i
		next
	}
	ucol && NF >= ucol && $1 ~ /^[0-9]/ { print $ucol; exit }' "$1"
}

# wait_auto LIB PROV: whether the wait part asks PROV for automatic
# progress: everywhere but Debian's shm, which offers manual progress only
# (it refuses AUTO with -FI_ENODATA; ours, and an -A base, run it).
wait_auto() {
	[ "$1" != deb ] || [ -n "$abase" ] || [ "$(real_prov "$2")" != shm ]
}

# run_wait LIB PROV PROG(fi_rdm_pingpong|fi_rdm_cntr_pingpong) -> usec
run_wait() {
	local lib=$1 prov=$2 prog=$3 env_lib=() ts_s=() ts_c=() pre=()
	local p args srv_cmd cli_cmd
	read -ra env_lib <<<"$(lib_env "$lib" "$prov")"
	[ $pin = 1 ] && ts_s=(taskset -c 0) ts_c=(taskset -c "$cpu_c")
	wait_auto "$lib" "$prov" &&
		pre=(LD_PRELOAD="$wshim" BENCH_PROGRESS=auto)
	p=$(real_prov "$prov")
	# Debian's tcp is its tcp;ofi_rxm (its tcp is MSG only)
	[ "$lib" = deb ] && [ -z "$abase" ] && [ "$p" = tcp ] && p='tcp;ofi_rxm'
	next_port
	args=(-p "$p" -c sread -S 64 -I "$wait_iters")
	srv_cmd=("${ts_s[@]}" "${env_lib[@]}" "${pre[@]}" "$ftbin/$prog"
		"${args[@]}" -B "$port" -s 127.0.0.1)
	cli_cmd=("${ts_c[@]}" "${env_lib[@]}" "${pre[@]}" "$ftbin/$prog"
		"${args[@]}" -P "$port" -s 127.0.0.1 127.0.0.1)
	pair_run "$work/wait.$lib.$prov.$prog" parse_ft
}

wait_part() {
	local r prov lib prog order res o d hdr name
	echo
	echo "== blocking waits: fabtests -c sread -S 64 -I $wait_iters," \
		"$reps runs each (interleaved), medians; $(setting)"
	if [ -z "$ftbin" ]; then
		echo "NOTE: no fi_rdm_pingpong/fi_rdm_cntr_pingpong (set" \
			"FABTESTS_BIN): no wait part"
		return 0
	fi
	echo "fabtests:    $ftbin; AUTO progress through progress_shim" \
		"(Debian's shm: manual, the only mode it offers)"
	for r in $(seq 1 "$reps"); do
		echo "  round $r/$reps (load $(cut -d' ' -f1-3 /proc/loadavg))"
		order="ours deb"
		[ $((r % 2)) = 0 ] && order="deb ours"
		for prov in "${provs[@]}"; do
			[ "$(ep_of "$prov")" = rdm ] || continue
			for prog in fi_rdm_pingpong fi_rdm_cntr_pingpong; do
				for lib in $order; do
					[ $lib = ours ] &&
						[ "${ours_has[$prov]}" = 0 ] &&
						continue
					res=$(run_wait $lib "$prov" $prog) || {
						run_failed "$lib $prov $prog" \
							"$work/wait.$lib.$prov.$prog.fail" 2
						continue
					}
					echo "    $lib $prov $prog: $res us"
					echo "$res" >>"$work/wait.$prov.$prog.$lib"
				done
			done
		done
	done
	echo
	echo "blocking waits: usec/xfer (one-way), 64 B; lower is better"
	hdr='%-34s %9s %9s %11s %26s %26s\n'
	printf "$hdr" metric ours debian ours/debian "ours min-max (max/min)" \
		"debian min-max (max/min)"
	for prov in "${provs[@]}"; do
		[ "$(ep_of "$prov")" = rdm ] || continue
		for prog in fi_rdm_pingpong fi_rdm_cntr_pingpong; do
			name="$prov cq_sread"
			[ $prog = fi_rdm_cntr_pingpong ] &&
				name="$prov cntr_wait"
			name+=" auto"
			wait_auto deb "$prov" || name+=" (deb manual)"
			o=$(median "$work/wait.$prov.$prog.ours")
			d=$(median "$work/wait.$prov.$prog.deb")
			printf "$hdr" "$name" "$(fmt_num "$o")" "$(fmt_num "$d")" \
				"$(ratio "$o" "$d")" \
				"$(spread "$work/wait.$prov.$prog.ours")" \
				"$(spread "$work/wait.$prov.$prog.deb")"
		done
	done
}

# ---- main -----------------------------------------------------------------

echo "== bench.sh: ours vs Debian libfabric ($parts)," \
	"load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc 2>/dev/null) cpus"

shim=
if [ -n "$progress" ]; then
	shim=$(build_shim) || die "progress_shim.c did not build"
	echo "progress:    FI_PROGRESS_${progress^^} for every run (-P)"
fi
ftbin= wshim=
if [ $do_wait = 1 ]; then
	ftbin=$(find_fabtests) || ftbin=
	wshim=$shim
	[ -n "$wshim" ] || wshim=$(build_shim) ||
		die "progress_shim.c did not build"
fi
rbw=
if [ $do_bw = 1 ]; then
	rbw=$(build_rdm_bw) || rbw=
	if [ -z "$rbw" ]; then
		echo "NOTE: rdm_bw did not build: no windowed bandwidth part"
		do_bw=0
	fi
fi
# the binary whose library resolution shows which libfabric each run gets
probe=$fi_pp
[ $do_pp = 1 ] || [ -z "$rbw" ] || probe=$rbw
[ $do_pp = 1 ] || [ $do_bw = 1 ] || [ $do_coll = 1 ] || [ $do_wait = 1 ] ||
	die "nothing to run"
[ -n "$abase" ] && echo "A/B: the 'debian' column is $abase (base)"
echo "Debian lib:  $(env_for deb ldd "$probe" |
	awk '$1 ~ /^libfabric.so/ && $2 == "=>" { print $3; exit }')"

ours_ok=1
ours_why=
if [ -z "$ourlib" ] || [ ! -e "$ourlib/libfabric.so.1" ]; then
	ours_ok=0
	ours_why="no libfabric.so.1 in ${ourlib_arg:-./build/.libs or"
	ours_why+=" ./install/lib}"
	ours_why+=" (build first or pass OUR_LIBDIR)"
else
	loaded=$(LD_LIBRARY_PATH=$ourlib ldd "$probe" |
		awk '$1 ~ /^libfabric.so/ && $2 == "=>" { print $3; exit }')
	echo "our lib:     $loaded"
	case $loaded in
	"$ourlib"/*) ;;
	*)
		ours_ok=0
		ours_why="LD_LIBRARY_PATH=$ourlib does not load our library"
		;;
	esac
fi
[ $ours_ok = 1 ] || echo "NOTE: our library is not measured: $ours_why"
echo "pinning:     pp and wait: $(for pin in $pins; do
	[ $pin = 1 ] && printf 'pinned (taskset server cpu0, client cpu%s) ' \
		"$cpu_c" || printf 'unpinned%s ' "$pin_why"
done); bw: $([ "${pins%% *}" = 1 ] && echo pinned || echo unpinned)"

# per provider: does our library offer it?
declare -A ours_has
for prov in "${provs[@]}"; do
	ours_has[$prov]=0
	[ $ours_ok = 1 ] || continue
	ep=$(ep_of "$prov")
	if LD_LIBRARY_PATH=$ourlib timeout 20 fi_info -p "$(real_prov "$prov")" \
		-t "FI_EP_${ep^^}" >/dev/null 2>&1; then
		ours_has[$prov]=1
	else
		echo "NOTE: our library has no '$prov' provider with FI_EP_${ep^^}" \
			"yet (fi_info -p $prov failed): our column is n/a"
	fi
done

failures=0
# each setting in its own directory: the tables read every file there
for pin in $pins; do
	work=$work_top/pin$pin
	mkdir -p "$work"
	[ $do_pp = 1 ] && pp_part
	[ $do_wait = 1 ] && wait_part
done
work=$work_top
pin=${pins%% *}
[ $do_bw = 1 ] && bw_part
if [ $do_coll = 1 ]; then
	echo
	echo "== coll: contrib/coll-bench.sh, $coll_iters calls per figure"
	if [ $ours_ok = 1 ]; then
		"$top/contrib/coll-bench.sh" -I "$coll_iters" "$ourlib" ||
			failures=$((failures + 1))
	else
		echo "NOTE: coll needs our library: $ours_why"
	fi
fi
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" \
	"(a busy machine makes every number noisy)"
[ $ours_ok = 1 ] || echo "NOTE: our column is n/a: $ours_why"
for prov in "${provs[@]}"; do
	[ $ours_ok = 1 ] && [ "${ours_has[$prov]}" = 0 ] &&
		echo "NOTE: our library has no '$prov' provider yet: n/a"
done
[ $failures = 0 ] || echo "NOTE: $failures runs failed or found wrong" \
	"data (FAILED lines above)"
exit 0
