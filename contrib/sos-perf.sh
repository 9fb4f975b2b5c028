#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# sos-perf.sh: Sandia OpenSHMEM 1.5.3's performance suite
# (tests-sos test/performance/shmem_perf_suite) on our library and on
# Debian's, side by side in one run. The suite is built once outside the
# tree, in the SOS build of contrib/peers-lib.sh (PEERS_WORK/sos-default,
# or sos-hard-polling with -H). Every test runs at 2 PEs through Open MPI's
# mpirun with Open MPI's own OFI components off, so that only SOS loads
# libfabric, over each library in turn (run by run, the order rotating),
# N runs each, once unpinned (mpirun --bind-to none: at 2 processes Open
# MPI binds to cores unless told not to) and once pinned (--bind-to core).
# Libraries (-l):
#   deb-sockets    Debian's sockets: the baseline every ratio is against
#   deb-tcp        Debian's tcp (tcp;ofi_rxm), where SOS starts on it (once
#                  it does not, it is not asked again)
#   shm            ours
#   tcp, sockets   ours, same-host path on (FI_TCP_SHM=1, FI_SOCKETS_SHM=1)
#   tcp-noshm, sockets-noshm   ours, the same path off (=0): TCP itself
# Per test and size the table gives each library's median and spread
# (min-max over the runs) and ours/Debian's-sockets: latency in us (lower
# is better, a ratio under 1 is ours ahead), bandwidth in MB/s (higher is
# better, a ratio over 1 is ours ahead); the atomics tests report their
# latency column. Then, unless -F, our own fi_pingpong round trip (twice
# its usec/xfer, 8 B, same provider and path and pinning) against the get
# latency of shmem_latency_get_perf (shmem_long_g, 8 B): the target is
# get <= 2x the round trip. A report, never a test: it fails only on bad
# usage, missing tools or a failed build. Runs that time out (-T) keep the
# rows they printed and are counted under the table.
#
# usage: contrib/sos-perf.sh [-n RUNS] [-t TESTS] [-l LIBS] [-m MODES]
#                            [-s START] [-e END] [-I TRIALS] [-T SECS]
#                            [-H] [-F] [OUR_LIBDIR]
#   -n RUNS   runs per library, test and mode (5; reports want >= 9)
#   -t TESTS  comma-separated suite programs (default: latency put/get and
#             their nb and ctx variants, bw put/get and nb variants,
#             bw_put_ctx, bw atomics and nb atomics); any check program
#             of the suite may be named, shmem_ prefix and _perf optional
#   -l LIBS   libraries besides deb-sockets (default: deb-tcp shm tcp
#             tcp-noshm sockets sockets-noshm), comma-separated
#   -m MODES  unpinned, pinned or both (default unpinned,pinned)
#   -s, -e    smallest and largest message size, powers of two with
#             optional k/m suffix (8 and 1m)
#   -I N      trials per size (the suite's -n; warm-up N/10); default:
#             the suite's own (1000, 100 above its large-message size)
#   -T SECS   limit per run (300)
#   -H        SOS built with --enable-hard-polling instead of its default
#   -F        no fi_pingpong round trips (2000 of them per run)
#   OUR_LIBDIR  directory holding our libfabric.so.1 (default: as
#             peers.sh finds it, build-test/.libs then build/.libs)
# Environment: PEERS_DIR, PEERS_WORK, PEERS_MAKE_JOBS as for peers.sh.
# shellcheck disable=SC2059 # one printf format ($hdr) serves every row
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
# die, usage, median, smallest, largest, ratio, fmt_num, verdict
# shellcheck source=contrib/bench-lib.sh
. "$top/contrib/bench-lib.sh"
# peers_build_sos, peers_find_lib, peers_work
# shellcheck source=contrib/peers-lib.sh
. "$top/contrib/peers-lib.sh"
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo} FI_SOCKETS_IFACE=${FI_SOCKETS_IFACE:-lo}

perf_dir=modules/tests-sos/test/performance/shmem_perf_suite
all_libs=deb-tcp,shm,tcp,tcp-noshm,sockets,sockets-noshm
runs=5
tests=latency_put,latency_put_nb,latency_get,latency_get_nb
tests+=,latency_put_ctx,latency_get_ctx,latency_put_ctx_nb
tests+=,latency_get_ctx_nb,bw_put,bw_put_nb,bw_get,bw_get_nb
tests+=,bw_put_ctx,bw_atomics,bw_nb_atomics
libs=$all_libs
modes=unpinned,pinned
start=8 end=1m trials='' tmo=300 variant=default pp=1
while getopts "n:t:l:m:s:e:I:T:HFh" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	t) tests=$OPTARG ;;
	l) libs=$OPTARG ;;
	m) modes=$OPTARG ;;
	s) start=$OPTARG ;;
	e) end=$OPTARG ;;
	I) trials=$OPTARG ;;
	T) tmo=$OPTARG ;;
	H) variant=hard-polling ;;
	F) pp=0 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage

# 8, 4k, 1m -> bytes
bytes() {
	[[ $1 =~ ^([0-9]+)([kKmM]?)$ ]] || die "bad size: $1"
	case ${BASH_REMATCH[2]} in
	k | K) echo $((BASH_REMATCH[1] << 10)) ;;
	m | M) echo $((BASH_REMATCH[1] << 20)) ;;
	*) echo "${BASH_REMATCH[1]}" ;;
	esac
}
start=$(bytes "$start") || exit 2
end=$(bytes "$end") || exit 2
for v in "$runs" "$tmo" ${trials:+"$trials"}; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || die "not a positive number: $v"
done
for m in ${modes//,/ }; do
	case $m in unpinned | pinned) ;; *) die "unknown mode: $m" ;; esac
done
sel=(deb-sockets)
for l in ${libs//,/ }; do
	[[ ",$all_libs," == *",$l,"* ]] || die "unknown library: $l"
	[ "$l" = deb-sockets ] || sel+=("$l")
done
progs=()
for t in ${tests//,/ }; do
	t=${t#shmem_}
	t=${t/_perf/}
	# the suite names its nb builds PROG_perf_nb
	case $t in
	*_nb) progs+=("shmem_${t%_nb}_perf_nb") ;;
	*) progs+=("shmem_${t}_perf") ;;
	esac
done

ourlib=$(peers_find_lib "${1:-}") || ourlib=debian
[ "$ourlib" != debian ] ||
	die "no libfabric.so.1 of ours found; pass its directory"
command -v mpirun >/dev/null || die "mpirun (Open MPI) not found"
[ $pp = 0 ] || command -v fi_pingpong >/dev/null ||
	die "fi_pingpong not found (libfabric-bin), or pass -F"
# fi_pingpong's pinned runs go on cpus 0 and 1, as mpirun --bind-to core
# puts the two PEs
pin=1
pin_check

# ---- the suite, built once -------------------------------------------------

opts=()
[ $variant = hard-polling ] && opts=(--enable-hard-polling)
bdir=$(peers_build_sos "$variant" "${opts[@]}") || die "SOS build failed"
pdir=$bdir/$perf_dir
# check_PROGRAMS: "make check" builds them all; TESTS is empty unless SOS
# was configured with its lengthy tests
if [ ! -f "$pdir/.perf-built" ]; then
	echo "sos-perf: building the performance suite in $pdir" >&2
	make -s -j"$peers_make_jobs" -C "$pdir" check TESTS= \
		>"$peers_work/sos-$variant-perf-build.log" 2>&1 || {
		tail -n 30 "$peers_work/sos-$variant-perf-build.log" >&2
		die "performance suite build failed"
	}
	touch "$pdir/.perf-built"
fi
for p in "${progs[@]}"; do
	[ -x "$pdir/$p" ] || die "no such program in the suite: $p"
done

work=$(mktemp -d /tmp/sos-perf.XXXXXX) || die "mktemp failed"
srv_pid=
# shellcheck disable=SC2317 # reached through the trap
cleanup() {
	# only the pingpong server this script started, by its pid
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# lib_env LIB: the provider name and environment of a library, one a line
lib_env() {
	case $1 in
	deb-*) echo "${1#deb-}" ;;
	*-noshm)
		local p=${1%-noshm}
		printf '%s\nFI_%s_SHM=0\n' "$p" "${p^^}"
		;;
	tcp | sockets) printf '%s\nFI_%s_SHM=1\n' "$1" "${1^^}" ;;
	*) echo "$1" ;;
	esac
	case $1 in deb-*) ;; *) echo "LD_LIBRARY_PATH=$ourlib" ;; esac
}

# Rows of a suite program's output: "SECTION SIZE VALUE UNIT". Latency
# tables are named by the "X results:" line before them (a bare one is
# the streaming block test), bandwidth ones by their test type; atomics
# give one row per operation and type, their latency column.
parse_suite() {
	awk '
	/results:$/ {
		for (i = 1; i <= NF; i++)
			if ($i ~ /^shmem_/) t = $i
		next
	}
	/^Bandwidth test type:/ { bt = $NF; next }
	/^shmem_[a-z]+$/ && NF == 1 { op = $1; next }
	/^Message Size/ {
		sec = t != "" ? t : bt != "" ? bt : "block"
		unit = /Latency/ ? "us" : "MB/s"
		t = ""
		atom = 0
		next
	}
	/^Operation/ { atom = 1; sec = ""; next }
	atom && NF == 4 && $4 ~ /^[0-9.]+$/ { print op, $1, $4, "us"; next }
	sec != "" && unit == "us" && NF == 2 && $1 ~ /^[0-9]+$/ {
		print sec, $1, $2, unit
		next
	}
	sec != "" && unit == "MB/s" && NF == 3 && $1 ~ /^[0-9]+$/ {
		print sec, $1, $2, unit
	}' "$1"
}

# run_sos MODE PROG LIB: one run; its rows go to work/MODE/PROG/LIB.rows
run_sos() {
	local mode=$1 prog=$2 lib=$3 prov envs=() xs=() e bind args rc
	local out=$work/$mode/$prog/$lib
	[ -f "$work/$lib.nostart" ] && return
	mkdir -p "$work/$mode/$prog" "$work/tmp"
	{
		read -r prov
		while read -r e; do
			envs+=("$e")
		done
	} < <(lib_env "$lib")
	for e in "${envs[@]}"; do
		xs+=(-x "${e%%=*}")
	done
	bind=none
	[ "$mode" = pinned ] && bind=core
	args=(-s "$start" -e "$end")
	# the suite checks -p against the trials so far and -n against the
	# warm-up so far: a warm-up of 1 lets any -n through, then the real one
	[ -n "$trials" ] && args+=(-p 1 -n "$trials" -p $((trials / 10)))
	# Debian's runs must not inherit a caller's LD_LIBRARY_PATH; Open MPI
	# keeps its session under TMPDIR
	(cd "$pdir" && env -u LD_LIBRARY_PATH "${envs[@]}" \
		SHMEM_OFI_PROVIDER="$prov" TMPDIR="$work/tmp" \
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout -k 10 "$tmo" mpirun --oversubscribe -np 2 \
		--bind-to "$bind" --mca pml ob1 --mca btl self,vader \
		--mca mtl ^ofi -x SHMEM_OFI_PROVIDER -x FI_TCP_IFACE \
		-x FI_SOCKETS_IFACE "${xs[@]}" "./$prog" "${args[@]}") \
		>"$out.out" 2>"$out.err" </dev/null
	rc=$?
	[ $rc = 124 ] || [ $rc = 137 ] && echo x >>"$out.timeouts"
	[ $rc = 0 ] || [ $rc = 124 ] || [ $rc = 137 ] ||
		echo x >>"$out.failures"
	parse_suite "$out.out" >>"$out.rows"
	# Debian's tcp (tcp;ofi_rxm) may offer SOS too little to start on:
	# asked once, not again
	if [ "$lib" = deb-tcp ] && [ $rc != 0 ] &&
		grep -q 'did not find any valid fabric' "$out.err"; then
		grep -m1 'did not find' "$out.err" | sed 's/^\[[0-9]*\] *//' \
			>"$work/$lib.nostart"
	fi
}

# run_pp MODE LIB: our fi_pingpong, 8 B; appends its round trip in us to
# work/MODE/pp/LIB. The client retries while the server comes up.
run_pp() {
	local mode=$1 lib=$2 prov envs=() e ts_s=() ts_c=() port rc
	local out=$work/$mode/pp/$lib
	mkdir -p "$work/$mode/pp"
	{
		read -r prov
		while read -r e; do
			envs+=("$e")
		done
	} < <(lib_env "$lib")
	[ "$mode" = pinned ] && [ $pin = 1 ] &&
		ts_s=(taskset -c 0) ts_c=(taskset -c 1)
	port=$((20000 + (RANDOM % 10000)))
	env "${envs[@]}" timeout 60 "${ts_s[@]}" fi_pingpong -p "$prov" \
		-e rdm -S 8 -I 2000 -B "$port" >"$out.srv" 2>&1 </dev/null &
	srv_pid=$!
	for _ in $(seq 50); do
		env "${envs[@]}" timeout 60 "${ts_c[@]}" fi_pingpong \
			-p "$prov" -e rdm -S 8 -I 2000 -P "$port" 127.0.0.1 \
			>"$out.cli" 2>&1 </dev/null
		rc=$?
		grep -q 'failed to connect' "$out.cli" || break
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.1
	done
	[ $rc = 0 ] || kill "$srv_pid" 2>/dev/null
	wait "$srv_pid" 2>/dev/null
	srv_pid=
	awk '/usec\/xfer/ { for (i = 1; i <= NF; i++)
			if ($i == "usec/xfer") c = i; next }
	     c && $1 ~ /^[0-9]/ { print 2 * $c; exit }' "$out.cli" >>"$out"
}

# the libraries of run R, rotated so that none always goes first
order() {
	local r=$1 n=${#sel[@]} i
	for ((i = 0; i < n; i++)); do
		echo "${sel[(i + r) % n]}"
	done
}

# ---- the runs -------------------------------------------------------------

echo "== OpenSHMEM performance suite (SOS 1.5.3, $variant build), 2 PEs," \
	"$runs runs per library; ours: $ourlib"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in ${modes//,/ }; do
	for ((r = 0; r < runs; r++)); do
		[ $pp = 1 ] || break
		for lib in $(order "$r"); do
			case $lib in deb-*) ;; *) run_pp "$mode" "$lib" ;; esac
		done
	done
	for prog in "${progs[@]}"; do
		for ((r = 0; r < runs; r++)); do
			for lib in $(order "$r"); do
				run_sos "$mode" "$prog" "$lib"
			done
		done
	done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- tables ---------------------------------------------------------------

# vals FILE SECTION SIZE: the values of one row over the runs, one a line
vals() {
	[ -f "$1" ] && awk -v s="$2" -v z="$3" '$1 == s && $2 == z { print $3 }' "$1"
}

spread() {
	[ -s "$1" ] && echo "$(fmt_num "$(smallest "$1")")-$(fmt_num \
		"$(largest "$1")")" || echo n/a
}

hdr='%-14s %10s  %-14s %12s %21s %7s\n'
for mode in ${modes//,/ }; do
	bind=none
	[ "$mode" = pinned ] && bind=core
	for prog in "${progs[@]}"; do
		d=$work/$mode/$prog
		echo
		echo "== $prog, $mode (mpirun --bind-to $bind)"
		echo "   ratio = ours / Debian's sockets, by medians; us: lower" \
			"is better (ratio < 1: ours ahead); MB/s: higher is" \
			"better (ratio > 1: ours ahead)"
		printf "$hdr" section size library median min-max ratio
		cat "$d"/*.rows 2>/dev/null | awk '!seen[$1 " " $2]++ {
			print $1, $2, $4 }' | while read -r sec size unit; do
			vals "$d/deb-sockets.rows" "$sec" "$size" >"$work/base"
			base=$(median "$work/base")
			lab=$sec shown=$size
			for lib in "${sel[@]}"; do
				[ -f "$work/$lib.nostart" ] && continue
				vals "$d/$lib.rows" "$sec" "$size" >"$work/v"
				med=$(median "$work/v")
				rat=
				[ "$lib" = deb-sockets ] ||
					rat=$(ratio "$med" "$base" %.3g)
				printf "$hdr" "$lab" "$shown" "$lib" \
					"$(fmt_num "$med")${med:+ $unit}" \
					"$(spread "$work/v")" "$rat"
				lab='' shown=''
			done
		done
		for lib in "${sel[@]}"; do
			if [ -f "$work/$lib.nostart" ]; then
				echo "   $lib: SOS does not start on it:" \
					"$(cat "$work/$lib.nostart")"
				continue
			fi
			n=$(count "$d/$lib.timeouts")
			f=$(count "$d/$lib.failures")
			[ "$n" = 0 ] || echo "   $lib: $n of $runs runs timed" \
				"out after ${tmo}s (their rows so far are kept)"
			[ "$f" = 0 ] || echo "   $lib: $f of $runs runs failed;" \
				"last: $(grep -v '^\s*$' "$d/$lib.err" |
					grep -iv warning | head -2 | tr '\n' ' ' |
					cut -c1-200)"
		done
	done
	[ $pp = 1 ] || continue
	echo
	echo "== get latency against our own fi_pingpong round trip, $mode:" \
		"shmem_latency_get_perf shmem_long_g 8 B / (2 x fi_pingpong" \
		"-e rdm -S 8 usec/xfer); target <= 2"
	[ "$mode" = pinned ] && [ -n "$pin_why" ] &&
		echo "   fi_pingpong ran unpinned$pin_why"
	printf '%-14s %12s %12s %7s %7s\n' library get_us rtt_us ratio target
	for lib in "${sel[@]}"; do
		case $lib in deb-*) continue ;; esac
		vals "$work/$mode/shmem_latency_get_perf/$lib.rows" \
			shmem_long_g 8 >"$work/v"
		get=$(median "$work/v")
		rtt=$(median "$work/$mode/pp/$lib")
		rat=$(ratio "$get" "$rtt")
		printf '%-14s %12s %12s %7s %7s\n' "$lib" "$(fmt_num "$get")" \
			"$(fmt_num "$rtt")" "$rat" "$(verdict "$rat" '<=' 2)"
	done
done
exit 0
