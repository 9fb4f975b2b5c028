#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fuzz_api.sh - builds the libFuzzer harness tests/util/fuzz_api.c (random
# sequences of public API calls: open, bind, enable, every op family,
# collectives, cancel, CQ/EQ/counter reads and waits, trywait, close in any
# order, a second polling thread) over the library compiled with clang
# (fuzz_lib in fuzz_wire_lib.sh, objects shared with fuzz_av.sh) and runs
# it for each provider (shm, tcp, sockets) and each parameter profile:
#   default  the providers' defaults, but an idle poll spins rather
#            than sleeps (FI_PROGRESS_SPIN=-1);
#   limits   parameters at the small end of their ranges (one-node
#            fan-out, the smallest collective slot, no CMA or every
#            transfer by CMA, an unexpected-message limit of one, no
#            spin, tcp's same-host path);
#   pool     short inputs (up to 48 bytes) chained over the objects the
#            ones before left open (fuzz_api.c's pool mode), manual
#            progress without a progress thread, polls that spin: the
#            profile of the long runs;
# starting from the corpus kept in the tree (tests/util/fuzz_api_corpus:
# seeds and every input that once failed), and for the pool profile also
# from what its long runs learnt (tests/util/fuzz_api_pool/PROV.b64: one
# input per line in base64, a libFuzzer -merge=1 of the run's corpus; to
# refresh it, merge build/tests/util/fuzz_corpus/api-PROV-pool the same
# way, with the pool profile's environment, and write each file of the
# result as one line of `base64 -w0`).
#
#   make check:  the kept corpus as regression inputs, then a short run per
#                provider with the default profile (FUZZ_API_RUNS, default
#                100: an input opens endpoints, a few ms each) and the
#                pool profile (FUZZ_API_POOL_RUNS, default 10000, well
#                under a ms each);
#                skipped (77) without clang's fuzzer runtime.
#   make fuzz:   FUZZ_RUNS=N or FUZZ_TIME=seconds per provider and
#                profile, keeping what it learns in
#                $top_builddir/tests/util/fuzz_corpus/api-PROV (the pool
#                profile's in api-PROV-pool)
#                (FUZZ_API_PROVS, FUZZ_API_PROFILES narrow the runs).
# A crash, a sanitizer report or a broken property aborts: exit non-zero.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
src=$(cd "$src" && pwd)
bld=$(cd "${top_builddir:-.}" && pwd)
CLANG=${CLANG:-clang}
keep=${FUZZ_KEEP:-0}
provs=${FUZZ_API_PROVS:-shm tcp sockets}
if [ "$keep" = 1 ]; then
	profiles=${FUZZ_API_PROFILES:-default limits pool}
else
	profiles=${FUZZ_API_PROFILES:-default pool}
	[ -n "${FUZZ_TIME:-}" ] || FUZZ_RUNS=${FUZZ_API_RUNS:-100}
fi

# shellcheck source=tests/util/fuzz_wire_lib.sh
. "$src/tests/util/fuzz_wire_lib.sh"
if [ -z "${FUZZ_OFI_SOURCES:-}" ]; then
	echo "SKIP: FUZZ_OFI_SOURCES (the library's sources) not given"
	exit 77
fi
work=$bld/tests/util/fuzz
fuzz_probe "$work" || exit $?
fuzz_lib "$work" || exit 1

fuzz_harness "$work" fuzz_api FUZZ_API_MAIN || exit 1

limit=$(fuzz_limit)

# The pool corpus kept in the tree into DIR, unless DIR has inputs.
pool_seed() {
	[ -f "$src/tests/util/fuzz_api_pool/$1.b64" ] || return 0
	[ -z "$(ls "$2")" ] || return 0
	n=0
	while read -r line; do
		n=$((n + 1))
		printf '%s\n' "$line" | base64 -d >"$2/kept-$n" || return 1
	done <"$src/tests/util/fuzz_api_pool/$1.b64"
}
export FI_LOG_LEVEL=none FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
kept=$src/tests/util/fuzz_api_corpus
# Known faults not fixed yet can be steered around with FUZZ_API_AVOID
# (see fuzz_api.c); none is listed by default.
export FUZZ_API_AVOID=${FUZZ_API_AVOID-}
fail=0

# profile NAME: the environment of a parameter profile, as assignments.
profile() {
	case $1 in
	limits)
		echo FI_COLL_FANOUT=1 FI_COLL_SLOT_SIZE=64 \
			FI_COLL_PROBE_TIMEOUT=0 FI_COLL_DIRECT_MIN=0 \
			FI_SHM_CMA_THRESHOLD=0 FI_SHM_IPC_THRESHOLD=0 \
			FI_SHM_ADAPT=0 FI_TCP_MAX_UNEXP=1 \
			FI_SOCKETS_MAX_UNEXP=1 FI_PROGRESS_SPIN=0 \
			FI_TCP_SHM=1 FI_SOCKETS_SHM=1
		;;
	nocma) echo FI_SHM_DISABLE_CMA=1 FI_COLL_SHARED=0 FI_COLL_FOLD=0 ;;
	# Short inputs chained over long-lived objects (fuzz_api.c's pool
	# mode), no progress thread, polls that spin: 12-18 times the
	# executions a second of the others, for the long runs.
	pool)
		echo FUZZ_API_PROFILE=pool FUZZ_API_POOL=1 \
			FUZZ_API_PROGRESS=manual FI_PROGRESS_TARGET=0 \
			FI_PROGRESS_SPIN=-1
		;;
	# Past its spin budget an idle poll sleeps up to 1 ms (ofi_yield),
	# and an input's polls are nearly all idle: the default profile
	# spins instead (limits covers the sleeping side with no spin).
	*) echo FUZZ_API_PROFILE=default FI_PROGRESS_SPIN=-1 ;;
	esac
}

for prov in $provs; do
	if ! LD_LIBRARY_PATH=$bld/.libs "$bld/util/fi_info" -p "$prov" \
		>/dev/null 2>&1; then
		echo "fuzz_api $prov: no $prov provider in this build, skipped"
		continue
	fi
	for prof in $profiles; do
		name=$prov-$prof
		# shellcheck disable=SC2046 # the profile is a list
		set -- $(profile "$prof")
		if [ -n "$(ls "$kept" 2>/dev/null)" ] &&
			! env "$@" FUZZ_API_PROV="$prov" \
				"$work/fuzz_api_main" "$kept"/* \
				>"$work/api-$name.regress.log" 2>&1; then
			tail -30 "$work/api-$name.regress.log"
			echo "FAIL: fuzz_api $name: a kept input fails"
			fail=1
			continue
		fi
		# The pool's short inputs learn a corpus of their own.
		sub=$prov
		[ "$prof" = pool ] && sub=$prov-pool
		if [ "$keep" = 1 ]; then
			corpus=$bld/tests/util/fuzz_corpus/api-$sub
			mkdir -p "$corpus"
		else
			corpus=$(mktemp -d "$work/corpus.XXXXXX") || exit 1
		fi
		if [ "$prof" = pool ] && ! pool_seed "$prov" "$corpus"; then
			echo "FAIL: fuzz_api $name: the kept pool corpus"
			exit 1
		fi
		opts="$limit -max_len=512"
		if [ "$prof" = pool ]; then
			[ "$keep" = 1 ] || [ -n "${FUZZ_TIME:-}" ] ||
				opts=-runs=${FUZZ_API_POOL_RUNS:-10000}
			# Objects outlive the input on purpose: no leak check
			# after each one (a whole heap scan), only at the end.
			opts="$opts -max_len=48 -detect_leaks=0"
		fi
		echo "fuzz_api $name $opts"
		# shellcheck disable=SC2086 # $opts is a list of options
		env "$@" FUZZ_API_PROV="$prov" nice "$work/fuzz_api" $opts \
			-print_final_stats=1 -timeout=30 \
			-artifact_prefix="$work/api-$name-" "$corpus" "$kept" \
			>"$work/api-$name.log" 2>&1
		rc=$?
		[ "$keep" = 1 ] || rm -rf "$corpus"
		grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|^Done|ERROR|SUMMARY|\.c:[0-9]+:' \
			"$work/api-$name.log"
		if [ $rc -ne 0 ]; then
			tail -40 "$work/api-$name.log"
			echo "FAIL: fuzz_api $name exited $rc (log: $work/api-$name.log)"
			fail=1
		fi
	done
done
exit $fail
