#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# mpi-bench.sh: Debian's unmodified Open MPI 4.1 (mtl/ofi: --mca pml cm
# --mca mtl ofi) on our libfabric against Debian's libfabric 1.17, in one
# run, as ratios (the targets: 8 B latency and 1 MiB bandwidth at
# least as good as Debian's tcp;ofi_rxm, much better between ranks on one
# host through the shm path). tests/mpi/mpi_bench.c, built here with mpicc,
# measures ping-pong latency (median half round trip) and windowed
# bandwidth between two ranks, its data checked; each mpirun is one run of
# all sizes. Runs are interleaved (ours, Debian's, Debian's, ours, ...),
# REPS per library and mode, and the table shows medians of the runs.
#   ours     FI_PROVIDER=tcp, LD_LIBRARY_PATH=OUR_LIBDIR
#   ours-tcp the same with FI_TCP_SHM=0 (shm path off; -S)
#   ours-sock FI_PROVIDER=sockets, mtl_ofi_provider_include sockets,
#            FI_SOCKETS_SHM=0 (-s, which adds ours-tcp): sockets'
#            target, within 1.2x of ours-tcp (lat <= 1.2x, bw >= 0.83x)
#   debian   FI_PROVIDER='tcp;ofi_rxm', no LD_LIBRARY_PATH
# Modes: same-host (both ranks here, FI_TCP_IFACE=lo) and netns (a rank in
# each of two network namespaces joined by a veth pair, as
# tests/tcp/netns.sh does; skipped with a message where namespaces cannot
# be made); and, oversubscribed like the CI's MPI jobs, 1core
# (same-host, both ranks on cpu 0: mpi_bench -c 0,0) and np4 (same-host,
# 4 ranks on 2 cpus: ranks 2 and 3 wait in MPI_Allreduce, polling, while
# 0 and 1 measure on cpus 0 and 1); both judged by the shared-core targets
# (8 B lat <= 0.05x Debian, 64 KiB and 1 MiB bw >= 2x). At np4 Open MPI
# finds itself oversubscribed and sets mpi_yield_when_idle: every empty
# pass of its progress loop, in the measuring ranks too, calls
# sched_yield, whichever library is below. That, not the idle ranks, is
# what np4 adds to 8 B latency (ours, release build, load 7-9: np4
# 1.06-1.26 us; np4 with --mca mpi_yield_when_idle 0 0.76-0.79 us; np2
# 0.79-0.98 us, np2 with it 1.01-1.03 us); 0.05x of Debian's 7-9 us is
# below even np2's. Every run must load the library it means to measure (the
# program prints the libfabric each rank loaded) and see its data intact.
# A report, not a test: never run it in CI; it fails only on bad usage or
# missing tools (2), or when no mode could run (77).
#
# usage: contrib/mpi-bench.sh [-m MODES] [-n REPS] [-S] [-U] [-q] [-T SECS]
#                             [-s] [-i LAT_ITERS] [-N BW_WINDOWS]
#                             [-w WINDOW] [-l LAT_SIZES] [-b BW_SIZES]
#                             [OUR_LIBDIR]
#   -m MODES  same-host, netns, 1core, np4, comma separated (default
#             same-host,netns)
#   -n REPS   mpirun runs per library and mode (5)
#   -S        also run ours with the shm path off (FI_TCP_SHM=0): the
#             ours-tcp column, tcp-only against with-shm
#   -s        also run ours over sockets (its shm path off too) and
#             ours-tcp, and set sockets against ours-tcp
#   -U        unpinned.  By default (2+ cpus) rank 0 runs on cpu 0 and
#             rank 1 on cpu 1 (mpi_bench -c 0,1; mpirun --bind-to none)
#   -q        quick: 3 reps, 2000 latency iterations, 10 windows
#   -T SECS   timeout for every mpirun (120)
#   -i N      latency iterations per size, after 1000 of warm-up (10000)
#   -N N      bandwidth windows per size, after one of warm-up (40)
#   -w N      bandwidth window: MPI_Isend in flight (64)
#   -l SIZES  latency sizes, a,b,c with k/m suffixes (8,1k,64k)
#   -b SIZES  bandwidth sizes (64k,1m)
#   OUR_LIBDIR  directory holding our libfabric.so.1
#             (default: ./build/.libs, then ./install/lib, under the
#             current directory, then under the source tree)

# shellcheck disable=SC2059 # one printf format ($hdr) serves every row
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
# die, usage, default_ourlib, pin_check; median, largest, ratio, verdict...
# shellcheck source=contrib/bench-lib.sh
. "$top/contrib/bench-lib.sh"
modes=same-host,netns
reps=5
pin=1
noshm=0
sock=0
tmo=120
lat_iters=10000
bw_windows=40
window=64
lat_sizes=8,1k,64k
bw_sizes=64k,1m


while getopts "m:n:SsUqT:i:N:w:l:b:h" opt; do
	case $opt in
	m) modes=$OPTARG ;;
	n) reps=$OPTARG ;;
	S) noshm=1 ;;
	s) sock=1 noshm=1 ;;
	U) pin=0 ;;
	q) reps=3 lat_iters=2000 bw_windows=10 ;;
	T) tmo=$OPTARG ;;
	i) lat_iters=$OPTARG ;;
	N) bw_windows=$OPTARG ;;
	w) window=$OPTARG ;;
	l) lat_sizes=$OPTARG ;;
	b) bw_sizes=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
for v in "$reps" "$tmo" "$lat_iters" "$bw_windows" "$window"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || die "not a positive number: $v"
done
for s in "$lat_sizes" "$bw_sizes"; do
	[[ $s =~ ^[0-9]+[kKmM]?(,[0-9]+[kKmM]?)*$ ]] ||
		die "bad size list: $s"
done
do_same=0 do_netns=0 do_1core=0 do_np4=0
for m in ${modes//,/ }; do
	case $m in
	same-host) do_same=1 ;;
	netns) do_netns=1 ;;
	1core) do_1core=1 ;;
	np4) do_np4=1 ;;
	*) die "unknown mode: $m (same-host, netns, 1core or np4)" ;;
	esac
done

ourlib=${1:-$(default_ourlib "$top")}
[ -n "$ourlib" ] && [ -e "$ourlib/libfabric.so.1" ] ||
	die "no libfabric.so.1 in ${ourlib:-./build/.libs or ./install/lib}" \
		"(build first or pass OUR_LIBDIR)"
ourlib=$(cd "$ourlib" && pwd)

MPICC=$(command -v mpicc) || die "mpicc not found (apt-get install" \
	"libopenmpi-dev)"
MPIRUN=$(command -v mpirun) || die "mpirun not found (openmpi-bin)"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
pin_check

work=$(mktemp -d /tmp/mpi-bench.XXXXXX) || die "mktemp failed"
# shellcheck disable=SC2034 # netns_lib.sh's
A=ofiba$$ B=ofibb$$
# shellcheck disable=SC2034
IPA=198.18.251.5 IPB=198.18.251.6
netns_up=0
# shellcheck source=tests/tcp/netns_lib.sh
. "$top/tests/tcp/netns_lib.sh"
# shellcheck disable=SC2317 # reached through the trap
cleanup() {
	[ "$netns_up" = 1 ] && netns_cleanup
	# failed runs' whole output stays for a look
	if [ "${failures:-0}" != 0 ]; then
		rm -f "$work/mpi_bench" "$work"/v.* "$work"/agent.*
		echo "logs of the failed runs: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$MPICC" -std=gnu11 -O2 -o "$work/mpi_bench" "$top/tests/mpi/mpi_bench.c" \
	2>"$work/cc.log" || { cat "$work/cc.log" >&2; die "mpicc failed"; }
# (mpi_bench's own letters: -n windows, -W window)
args=(-i "$lat_iters" -n "$bw_windows" -W "$window" -l "$lat_sizes"
	-b "$bw_sizes")

# ---- runs -----------------------------------------------------------------

# prov_of CONFIG: the provider mtl/ofi is given
prov_of() {
	case $1 in
	debian) echo "tcp;ofi_rxm" ;;
	ours-sock) echo sockets ;;
	*) echo tcp ;;
	esac
}

# mpirun_env CONFIG: -x words for the ranks' environment
mpirun_env() {
	local cfg=$1
	echo "-x FI_PROVIDER=$(prov_of "$cfg")"
	[ "$cfg" = debian ] || echo "-x LD_LIBRARY_PATH=$ourlib"
	[ "$cfg" = ours-tcp ] && echo "-x FI_TCP_SHM=0"
	[ "$cfg" = ours-sock ] && echo "-x FI_SOCKETS_SHM=0"
	[ "$cfg" = ours ] && [ -n "${FI_TCP_SHM:-}" ] &&
		echo "-x FI_TCP_SHM=$FI_TCP_SHM"
}

# run_one MODE CONFIG OUT: one mpirun of mpi_bench; fails with the reason
# in OUT.fail
run_one() {
	local mode=$1 cfg=$2 out=$3 prov env rc np=2 margs=("${args[@]}")
	prov=$(prov_of "$cfg")
	# (oversubscribed: a tick-bound library takes ms per round trip,
	# so 100 rounds of warm-up, not 1000)
	case $mode in
	1core) margs+=(-c "0,0" -w 100) ;;
	np4) np=4 margs+=(-c "0,1" -w 100) ;;
	*) [ $pin = 1 ] && margs+=(-c "0,1") ;;
	esac
	# shellcheck disable=SC2207 # words without spaces
	env=($(mpirun_env "$cfg"))
	local mca=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include
		"$prov")
	# Debian's runs must not inherit a caller's LD_LIBRARY_PATH
	if [ "$mode" != netns ]; then
		env -u LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 \
			OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
			OMPI_MCA_btl_tcp_if_include=lo \
			OMPI_MCA_oob_tcp_if_include=lo \
			timeout "$tmo" "$MPIRUN" -np "$np" --oversubscribe \
			--bind-to none "${env[@]}" -x FI_TCP_IFACE=lo \
			-x FI_SOCKETS_IFACE=lo \
			"${mca[@]}" "$work/mpi_bench" "${margs[@]}" \
			>"$out" 2>&1 </dev/null
	else
		rm -f "$work/agent.used"
		(
			unset LD_LIBRARY_PATH
			netns_mpirun "$tmo" "${env[@]}" "${mca[@]}" sh -c \
				"$NETNS_IFACE${NETNS_IFACE//TCP/SOCKETS}exec \
				$work/mpi_bench ${margs[*]}"
		) >"$out" 2>&1 </dev/null
	fi
	rc=$?
	check_run "$mode" "$cfg" "$out" "$rc"
}

# check_run MODE CONFIG OUT RC: the run finished, without data errors,
# on the library meant, in the namespaces meant
check_run() {
	local mode=$1 cfg=$2 out=$3 rc=$4 why='' lib
	if [ "$rc" = 124 ]; then
		why="timed out after ${tmo}s"
	elif [ "$rc" != 0 ]; then
		why="mpirun exit $rc"
	elif ! grep -q '^mpi_bench: 0 errors' "$out"; then
		why="data errors or no result"
	elif grep -q 'check=BAD' "$out"; then
		why="data check failed"
	fi
	for lib in $(sed -n 's/^# rank[01] .*libfabric=\([^ ]*\).*/\1/p' \
		"$out"); do
		[ -n "$why" ] && break
		case $cfg:$lib in
		debian:"$ourlib"/* | ours*:none | debian:none)
			why="rank loaded $lib" ;;
		ours*:"$ourlib"/*) ;;
		ours*:*) why="rank loaded $lib, not ours" ;;
		esac
	done
	[ -z "$why" ] && [ "$(grep -c '^# rank[01] ' "$out")" != 2 ] &&
		why="no rank lines"
	[ -z "$why" ] && [ "$mode" = netns ] &&
		! grep -q "$B" "$work/agent.used" 2>/dev/null &&
		why="rank 1 did not start in $B"
	[ -z "$why" ] && return 0
	{
		grep -v '^\[[^]]*\] mca' "$out" | tail -n 15
		echo "($why)"
	} >"$out.fail"
	return 1
}

# keep MODE CONFIG OUT: one value per measurement and size into
# $work/v.MODE.KIND.SIZE.CONFIG (lat: median_us; bw: mbps)
keep() {
	awk -v dir="$work" -v mode="$1" -v cfg="$2" '
	$1 == "lat" || $1 == "bw" {
		size = ""; val = ""
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "size") size = kv[2]
			if ($1 == "lat" && kv[1] == "median_us") val = kv[2]
			if ($1 == "bw" && kv[1] == "mbps") val = kv[2]
		}
		if (size == "" || val == "") next
		f = dir "/v." mode "." $1 "." size "." cfg
		print val >>f
		close(f)
	}' "$3"
}

# "lat 8:9.12 1024:9.30 ..." for the round's progress line
brief() {
	awk '$1 == "lat" || $1 == "bw" {
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "size") s = kv[2]
			if (kv[1] == "median_us" || kv[1] == "mbps") v = kv[2]
		}
		printf "%s %s:%s  ", $1, s, v
	}' "$1"
}

# ---- statistics and table -------------------------------------------------


# best KIND FILE: the best run's value (lat: lowest, bw: highest)
best() {
	if [ "$1" = lat ]; then
		smallest "$2"
	else
		largest "$2"
	fi
}

human() {
	awk -v s="$1" 'BEGIN {
		if (s >= 1048576 && s % 1048576 == 0) print s / 1048576 " MiB";
		else if (s >= 1024 && s % 1024 == 0) print s / 1024 " KiB";
		else print s " B" }'
}

to_bytes() {
	local s
	for s in ${1//,/ }; do
		case $s in
		*[kK]) echo $((${s%?} * 1024)) ;;
		*[mM]) echo $((${s%?} * 1048576)) ;;
		*) echo "$s" ;;
		esac
	done
}

# kind_sizes KIND: the sizes measured for lat or bw, in bytes
kind_sizes() {
	if [ "$1" = lat ]; then
		to_bytes "$lat_sizes"
	else
		to_bytes "$bw_sizes"
	fi
}

# oversub MODE: whether MODE runs more ranks than cpus
oversub() {
	[ "$1" = 1core ] || [ "$1" = np4 ]
}

table() {
	local mode=$1 kind sz o t d f name tgt vd line
	local hdr='%-16s %9s %9s %9s %8s %8s %8s %5s %7s %7s\n'
	echo
	case $mode in
	same-host) echo "same-host: both ranks on this host (loopback)" ;;
	netns) echo "netns: one rank in each namespace, veth pair" ;;
	1core) echo "1core: both ranks on cpu 0 (oversubscribed)" ;;
	np4) echo "np4: 4 ranks on 2 cpus, ranks 2 and 3 polling" ;;
	esac
	printf "$hdr" metric ours ours-tcp debian ours/deb tcp/deb best runs \
		target verdict
	for kind in lat bw; do
		for sz in $(kind_sizes $kind); do
			f=$work/v.$mode.$kind.$sz
			o=$(median "$f.ours")
			t=$(median "$f.ours-tcp")
			d=$(median "$f.debian")
			tgt=- vd=-
			if [ $kind = lat ]; then
				name="lat $(human "$sz") us"
				[ "$sz" = 8 ] && tgt='<=1.00' &&
					vd=$(verdict "$(ratio "$o" "$d")" '<=' 1)
				[ "$sz" = 8 ] && oversub "$mode" &&
					tgt='<=0.05' &&
					vd=$(verdict "$(ratio "$o" "$d")" '<=' 0.05)
			else
				name="bw $(human "$sz") MB/s"
				[ "$sz" = 1048576 ] && tgt='>=1.00' &&
					vd=$(verdict "$(ratio "$o" "$d")" '>=' 1)
				oversub "$mode" && tgt='>=2.00' &&
					vd=$(verdict "$(ratio "$o" "$d")" '>=' 2)
			fi
			line=$(printf "$hdr" "$name" "$(fmt_num "$o")" \
				"$(fmt_num "$t")" "$(fmt_num "$d")" \
				"$(ratio "$o" "$d")" "$(ratio "$t" "$d")" \
				"$(ratio "$(best $kind "$f.ours")" \
				"$(best $kind "$f.debian")")" "$(count "$f.ours")/$(count "$f.debian")" \
				"$tgt" "$vd")
			echo "$line"
		done
	done
}

# sock_table MODE: ours over sockets against ours-tcp (target: within
# 1.2x; the shm path off in both)
sock_table() {
	local mode=$1 kind sz f o t rt name tgt vd
	local hdr='%-16s %9s %9s %9s %8s %7s\n'
	echo "$mode, sockets against ours-tcp:"
	printf "$hdr" metric ours-sock ours-tcp sock/tcp target verdict
	for kind in lat bw; do
		for sz in $(kind_sizes $kind); do
			f=$work/v.$mode.$kind.$sz
			o=$(median "$f.ours-sock")
			t=$(median "$f.ours-tcp")
			rt=$(ratio "$o" "$t")
			if [ $kind = lat ]; then
				name="lat $(human "$sz") us" tgt='<=1.20'
				vd=$(verdict "$rt" '<=' 1.2)
			else
				name="bw $(human "$sz") MB/s" tgt='>=0.83'
				vd=$(verdict "$rt" '>=' 0.83)
			fi
			printf "$hdr" "$name" "$(fmt_num "$o")" \
				"$(fmt_num "$t")" "$rt" "$tgt" "$vd"
		done
	done
}

# ---- main -----------------------------------------------------------------

echo "== mpi-bench.sh: Open MPI mtl/ofi, ours vs Debian libfabric," \
	"load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc 2>/dev/null) cpus"
echo "Open MPI:    $("$MPIRUN" --version 2>/dev/null | head -n 1)"
echo "our lib:     $ourlib/libfabric.so.1"
echo "Debian lib:  $(ldconfig -p 2>/dev/null |
	awk '$1 == "libfabric.so.1" { print $NF; exit }')"
echo "pinning:     $([ $pin = 1 ] && echo 'rank 0 cpu 0, rank 1 cpu 1' ||
	echo "none$pin_why")"
echo "mpi_bench:   ${args[*]} (1core: -c 0,0; np4: -c 0,1, 4 ranks)"

run_modes=()
[ $do_same = 1 ] && run_modes+=(same-host)
[ $do_1core = 1 ] && run_modes+=(1core)
[ $do_np4 = 1 ] && run_modes+=(np4)
if [ $do_netns = 1 ]; then
	if why=$(netns_setup); then
		netns_up=1
		netns_agent
		run_modes+=(netns)
	else
		netns_cleanup
		echo "NOTE: netns mode skipped: $why (needs root and ip(8))"
	fi
fi
if [ ${#run_modes[@]} = 0 ]; then
	echo "nothing measured: no mode could run"
	exit 77
fi
configs=(ours)
[ $noshm = 1 ] && configs+=(ours-tcp)
[ $sock = 1 ] && configs+=(ours-sock)
configs+=(debian)

failures=0
for r in $(seq 1 "$reps"); do
	echo "  round $r/$reps (load $(cut -d' ' -f1-3 /proc/loadavg))"
	# alternate who goes first: drift in the load cancels out
	order=("${configs[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((i = ${#configs[@]} - 1; i >= 0; i--)); do
			order+=("${configs[i]}")
		done
	fi
	for mode in "${run_modes[@]}"; do
		for cfg in "${order[@]}"; do
			out=$work/run.$mode.$cfg.$r
			if run_one "$mode" "$cfg" "$out"; then
				keep "$mode" "$cfg" "$out"
				echo "    $mode $cfg: $(brief "$out")"
				rm -f "$out"
			else
				failures=$((failures + 1))
				echo "    $mode $cfg FAILED: $(tail -n 4 \
					"$out.fail" | tr '\n' ' ')"
			fi
		done
	done
done

echo
echo "medians of $reps runs; lat = median half round trip (us, lower is" \
	"better), bw = MB/s (10^6 B/s) with $window sends in flight (higher" \
	"is better)"
echo "targets: 8 B lat ours/debian <= 1.00, 1 MiB bw >= 1.00;" \
	"same-host much better (shm path); best = ours/debian of the best" \
	"runs (load only slows a run down); runs = kept ours/debian"
[ $noshm = 1 ] || echo "ours-tcp (FI_TCP_SHM=0) not run: -S adds it"
for mode in "${run_modes[@]}"; do
	table "$mode"
	[ $sock = 1 ] && sock_table "$mode"
done
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" \
	"(a busy machine makes every number noisy)"
[ $failures = 0 ] || echo "NOTE: $failures runs failed or found wrong data" \
	"(FAILED lines above)"
exit 0
