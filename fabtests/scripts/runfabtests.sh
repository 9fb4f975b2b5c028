#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# runfabtests.sh: runs the fabtests unit programs (single process) and the
# client/server functional programs over 127.0.0.1 for one provider, one
# result line per test, and ends with "N passed, N failed".  Exit status 0
# iff nothing failed.  The libfabric used is whatever the binaries resolve
# with the caller's LD_LIBRARY_PATH / FI_PROVIDER_PATH, passed through as is.

usage() {
	cat >&2 <<EOF
usage: $0 [-v] [-x] [-b BIN_DIR] [-t unit|functional|all] [-e EXCLUDE_REGEX]
          [-r REQUIRE_REGEX] [-T SECONDS] PROVIDER
  -v  print every test's output       -x  strict unit checks (FT_STRICT=1)
  -b  directory of the test binaries   -t  which tests (default all)
  -e  skip tests whose name matches    -T  per-test time limit (default 60)
  -r  tests whose name matches must run whole: any NOTSUPP is a failure
env: FT_SRC_ADDR (default 127.0.0.1, empty for shm), FT_BASE_PORT
EOF
	exit 2
}

verbose=0
strict=0
bin_dir="$(cd "$(dirname "$0")/.." && pwd)/bin"
types=all
exclude=
require=
limit=60

while getopts "vxb:t:e:r:T:h" opt; do
	case $opt in
	v) verbose=1 ;;
	x) strict=1 ;;
	b) bin_dir=$OPTARG ;;
	t) types=$OPTARG ;;
	e) exclude=$OPTARG ;;
	r) require=$OPTARG ;;
	T) limit=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
prov=$1
case $types in unit | functional | all) ;; *) usage ;; esac
[ -d "$bin_dir" ] || { echo "no binary directory $bin_dir" >&2; exit 2; }

if [ -z "${FT_SRC_ADDR+set}" ]; then
	case $prov in shm*) FT_SRC_ADDR= ;; *) FT_SRC_ADDR=127.0.0.1 ;; esac
fi
src_opt=${FT_SRC_ADDR:+-s $FT_SRC_ADDR}
# a port range private to this run, below the ephemeral range (32768 and
# up) so sockets other tests open do not take it; each test takes two (MSG
# CM uses +1)
port=${FT_BASE_PORT:-$((10000 + ($$ * 7) % 20000))}
export FT_STRICT=$strict

passed=0
failed=0
notsupp=0
skipped=0
logdir=$(mktemp -d /tmp/runfabtests.XXXXXX)
bg_pids=()
note=

cleanup() {
	local p
	for p in "${bg_pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

[ $verbose -eq 1 ] && echo "# provider $prov, bin $bin_dir," \
	"LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" \
	"FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-}"

# report NAME RESULT START LOG...
report() {
	local name=$1 res=$2 start=$3 log
	shift 3
	printf "%-8s %-36s %7ss%s\n" "$res" "$name" "$(elapsed "$start")" \
		"${note:+  ($note)}"
	note=
	case $res in
	PASS) passed=$((passed + 1)) ;;
	NOTSUPP) notsupp=$((notsupp + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
	if [ $verbose -eq 1 ] || [ "$res" = FAIL ]; then
		for log in "$@"; do
			[ -s "$log" ] && sed 's/^/    | /' "$log" | tail -n 60
		done
	fi
}

required() {
	[ -n "$require" ] && [[ $1 =~ $require ]]
}

excluded() {
	[ -n "$exclude" ] && [[ $1 =~ $exclude ]] && {
		skipped=$((skipped + 1))
		return 0
	}
	return 1
}

run_unit() {
	local name=$1 exe="$bin_dir/$1" log="$logdir/$1.log" start rc res
	excluded "unit/$name" && return
	start=$(now)
	if [ ! -x "$exe" ]; then
		echo "missing $exe" >"$log"
		report "unit/$name" FAIL "$start" "$log"
		return
	fi
	timeout -k 5 $((limit * 2)) "$exe" -p "$prov" $src_opt >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		res=PASS
		# nothing ran but NOTSUPP lines: the provider lacks the feature
		grep -q '^PASS ' "$log" || res=NOTSUPP
		# sub-tests the provider cannot run are listed, not hidden
		note=$(awk '$1 == "NOTSUPP" || $1 == "SKIP" { printf "%s%s %s", \
			sep, $1, $2; sep = ", " }' "$log")
		# a feature the provider claims: not supported is a failure
		if required "unit/$name" && grep -q '^NOTSUPP ' "$log"; then
			res=FAIL
			note="required, $note"
		fi
	else
		res=FAIL
		[ $rc -ge 124 ] && echo "(rc $rc: timed out or killed)" >>"$log"
	fi
	report "unit/$name" $res "$start" "$log"
}

# run_multi NAME PROGRAM ARGS...: one program that forks its own ranks
run_multi() {
	local name=$1 exe="$bin_dir/$2" log="$logdir/$1.log" start rc res
	shift 2
	excluded "functional/$name" && return
	start=$(now)
	timeout -k 5 "$limit" "$exe" -p "$prov" "$@" >"$log" 2>&1
	rc=$?
	res=FAIL
	if [ $rc -eq 0 ]; then
		res=PASS
		grep -q '^NOTSUPP ' "$log" && res=NOTSUPP
		if [ $res = NOTSUPP ] && required "functional/$name"; then
			res=FAIL
			note=required
		fi
	elif [ $rc -ge 124 ]; then
		echo "(rc $rc: timed out or killed)" >>"$log"
	fi
	report "functional/$name" $res "$start" "$log"
}

# run_pair NAME PROGRAM ARGS...: server in the background, then the client
run_pair() {
	local name=$1 exe="$bin_dir/$2" start srv_rc cli_rc res spid i
	local slog="$logdir/$name.server.log" clog="$logdir/$name.client.log"
	shift 2
	excluded "functional/$name" && return
	start=$(now)
	port=$((port + 2))
	if [ ! -x "$exe" ]; then
		echo "missing $exe" >"$clog"
		report "functional/$name" FAIL "$start" "$clog"
		return
	fi
	timeout -k 5 "$limit" "$exe" -p "$prov" $src_opt -B $port "$@" \
		>"$slog" 2>&1 &
	spid=$!
	bg_pids+=("$spid")
	timeout -k 5 "$limit" "$exe" -p "$prov" $src_opt -P $port "$@" \
		127.0.0.1 >"$clog" 2>&1
	cli_rc=$?
	# an unsupported setup ends the client at once; do not wait the
	# server's out-of-band timeout then
	if [ $cli_rc -eq 77 ]; then
		for i in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 $spid 2>/dev/null || break
			sleep 0.1
		done
		kill $spid 2>/dev/null
	fi
	wait $spid
	srv_rc=$?
	if [ $cli_rc -eq 0 ] && [ $srv_rc -eq 0 ]; then
		res=PASS
	elif [ $cli_rc -eq 77 ] || [ $srv_rc -eq 77 ]; then
		res=NOTSUPP
		# a feature the provider claims: not supported is a failure
		if required "functional/$name"; then
			res=FAIL
			note="required"
		fi
	else
		res=FAIL
		echo "(server rc $srv_rc, client rc $cli_rc)" >>"$clog"
	fi
	report "functional/$name" $res "$start" "$slog" "$clog"
}

if [ "$types" != functional ]; then
	for t in getinfo_test eq_test cq_test av_test cntr_test mr_test \
		hmem_override_test poll_test ep_test; do
		run_unit $t
	done
fi

if [ "$types" != unit ]; then
	fn=(-T 15 -W 2)
	run_pair rdm_pingpong rdm_pingpong "${fn[@]}" -I 50 -S 64
	run_pair rdm_tagged_pingpong rdm_pingpong "${fn[@]}" -m tagged \
		-I 50 -S 64
	run_pair rdm_pingpong_check rdm_pingpong "${fn[@]}" -c -I 10 \
		-S 1,100,4k,64k,1m
	run_pair rdm_tagged_pingpong_check rdm_pingpong "${fn[@]}" -c \
		-m tagged -I 10 -S 1,4k,64k
	run_pair msg_pingpong msg_pingpong "${fn[@]}" -I 50 -S 64
	run_pair msg_pingpong_check msg_pingpong "${fn[@]}" -c -I 10 \
		-S 1,100,4k,64k,1m
	# Debian's tcp;ofi_rxm fails a wrong-key write with FI_ECANCELED
	# rather than FI_EACCES; -E accepts any error code there.
	case $prov in tcp*) rma_e=-E ;; *) rma_e= ;; esac
	run_pair rdm_rma rdm_rma "${fn[@]}" $rma_e -I 20 -S 8,4k,64k,1m
	run_pair rdm_rma_check rdm_rma "${fn[@]}" $rma_e -c -I 10 \
		-S 1,8,100,4k,64k,1m,4m
	run_pair rdm_atomic rdm_atomic "${fn[@]}" -I 50
	# smoke run of the windowed benchmark: every mode, data checked
	run_pair rdm_bw rdm_bw "${fn[@]}" -D 5 -w 16 -S 8,64k
	# persistent memory (fi_commit(3)): every case of rdm_commit, then a
	# smoke run of the commit benchmark; NOTSUPP without FI_RMA_PMEM
	for c in args auto manual_ok manual_pos manual_eio manual_decline \
		manual_event bad manual_bad selective unwritten many \
		many_large many_auto commit_complete die dead closed \
		dead_first closed_first; do
		run_pair "rdm_commit_$c" rdm_commit "${fn[@]}" -C "$c"
	done
	# streamed writes without CMA: the commit must still wait for them
	case $prov in shm*)
		FI_SHM_DISABLE_CMA=1 run_pair rdm_commit_large_nocma \
			rdm_commit "${fn[@]}" -C many_large ;;
	esac
	run_pair commit_bw commit_bw "${fn[@]}" -S 64,4k -N 1,16 -r 1
	# collectives (fi_collective(3)) among 2, 3, 4 and 7 forked ranks,
	# FI_AV_MAP once, and a rank killed mid-collective or before joining
	run_multi rdm_coll_2 rdm_coll -N 2 -c 2000
	for n in 3 4 7; do
		run_multi "rdm_coll_$n" rdm_coll -N $n -c 20
	done
	run_multi rdm_coll_map rdm_coll -N 3 -m -c 20
	# ranks pinned round-robin (more than one to a CPU here), the
	# same-host shm path off: over sockets, members that share a CPU
	# fold into one for barriers and small allreduces (ofi_coll_leaders)
	FI_TCP_SHM=0 FI_SOCKETS_SHM=0 run_multi rdm_coll_pinned rdm_coll \
		-N 7 -P -c 20
	# and a leader among them (rank 1, alone or first on its CPU) killed
	FI_TCP_SHM=0 FI_SOCKETS_SHM=0 run_multi rdm_coll_pinned_kill \
		rdm_coll -N 4 -P -K -k 1
	# above 32 members, where slots default to 32 KiB (FI_COLL_SLOT_SIZE):
	# 33 processes on a few cores, 21 s on sockets under ASan
	limit=$((limit * 2)) run_multi rdm_coll_33 rdm_coll -N 33 -c 2
	# every transfer written straight into the receiver's registration
	# (from 64 B), then none (slots only, up to 4 MiB): both paths whole
	FI_COLL_DIRECT_MIN=64 run_multi rdm_coll_direct rdm_coll -N 3 -c 20
	FI_COLL_DIRECT_MIN=0 run_multi rdm_coll_slots rdm_coll -N 4 -c 5
	# the smallest slots: many chunks per transfer, windows full, acks
	# both standalone and carried in chunks' trailers
	FI_COLL_SLOT_SIZE=64 run_multi rdm_coll_small_slots rdm_coll -N 3 -c 5
	# FI_PROGRESS_AUTO, completions awaited asleep in fi_cq_sread
	run_multi rdm_coll_sread rdm_coll -N 3 -S -c 20
	run_multi rdm_coll_kill rdm_coll -N 3 -K
	# a member dead before it joins: the others' join fails, not waits
	run_multi rdm_coll_kill_join rdm_coll -N 3 -J
	FI_TCP_SHM=0 FI_SOCKETS_SHM=0 run_multi rdm_coll_kill_join_sock \
		rdm_coll -N 3 -J
	# a peer writing through the others' kept direct keys between
	# their calls: every write refused, their buffers untouched
	run_multi rdm_coll_stale rdm_coll -N 3 -R
	# shm: a member scribbling over the others' mapped group regions
	case $prov in shm*)
		run_multi rdm_coll_hostile rdm_coll -N 3 -H ;;
	esac
fi

echo "$notsupp notsupp, $skipped excluded"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
