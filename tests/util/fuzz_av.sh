#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fuzz_av.sh - builds the libFuzzer harness tests/util/fuzz_av.c over the
# address parsing of util_av and the providers (the whole library compiled
# with clang, -fsanitize=fuzzer-no-link,address,undefined; objects kept in
# $top_builddir/tests/util/fuzz/obj across runs) and runs it for each
# address format: shm (FI_ADDR_STR), tcp and sockets (FI_SOCKADDR_IN),
# tcp6 and sockets6 (FI_SOCKADDR_IN6), sockets-dgram, starting from the corpus kept in the tree
# (tests/util/fuzz_av_corpus/FORMAT: seeds and every input that once
# failed).
#
#   make check:  the kept corpus as regression inputs, then a short run per
#                format (FUZZ_RUNS, default 20000); skipped (77) without
#                clang's fuzzer runtime or without the libofi source list.
#   make fuzz:   FUZZ_RUNS=N or FUZZ_TIME=seconds per format, keeping what
#                it learns in $top_builddir/tests/util/fuzz_corpus/FORMAT
#                (FUZZ_AV_FORMATS narrows the formats).
# A crash, a sanitizer report or a broken property aborts: exit non-zero.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
src=$(cd "$src" && pwd)
bld=$(cd "${top_builddir:-.}" && pwd)
CLANG=${CLANG:-clang}
keep=${FUZZ_KEEP:-0}
formats=${FUZZ_AV_FORMATS:-shm tcp tcp6 sockets sockets6 sockets-dgram}

# shellcheck source=tests/util/fuzz_wire_lib.sh
. "$src/tests/util/fuzz_wire_lib.sh"
if [ -z "${FUZZ_OFI_SOURCES:-}" ]; then
	echo "SKIP: FUZZ_OFI_SOURCES (the library's sources) not given"
	exit 77
fi
work=$bld/tests/util/fuzz
fuzz_probe "$work" || exit $?
fuzz_lib "$work" || exit 1

fuzz_harness "$work" fuzz_av FUZZ_AV_MAIN -Wl,--wrap=getaddrinfo || exit 1

limit=$(fuzz_limit)
# Providers quiet, tcp on loopback; shm regions are never created (no
# endpoint), so nothing is left behind.
export FI_LOG_LEVEL=none FI_TCP_IFACE=lo
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
fail=0
for fmt in $formats; do
	prov=${fmt%-dgram}
	prov=${prov%6}
	if ! LD_LIBRARY_PATH=$bld/.libs "$bld/util/fi_info" -p "$prov" \
		>/dev/null 2>&1; then
		echo "fuzz_av $fmt: no $prov provider in this build, skipped"
		continue
	fi
	# One kept corpus per address format: sockets reads tcp's.
	case $fmt in
	shm) kept=shm ;;
	*6*) kept=tcp6 ;;
	*) kept=tcp ;;
	esac
	kept=$src/tests/util/fuzz_av_corpus/$kept
	# The kept inputs first, as plain regression inputs.
	if [ -d "$kept" ] && [ -n "$(ls "$kept")" ]; then
		if ! FUZZ_AV_FORMAT=$fmt "$work/fuzz_av_main" "$kept"/* \
			>"$work/$fmt.regress.log" 2>&1; then
			tail -30 "$work/$fmt.regress.log"
			echo "FAIL: fuzz_av $fmt: a kept input fails"
			fail=1
			continue
		fi
	fi
	if [ "$keep" = 1 ]; then
		corpus=$bld/tests/util/fuzz_corpus/$fmt
		mkdir -p "$corpus"
	else
		corpus=$(mktemp -d "$work/corpus.XXXXXX") || exit 1
	fi
	echo "fuzz_av $fmt $limit"
	# shellcheck disable=SC2086 # $limit is a list of options
	FUZZ_AV_FORMAT=$fmt nice "$work/fuzz_av" $limit -max_len=300 \
		-print_final_stats=1 -timeout=10 \
		-artifact_prefix="$work/$fmt-" "$corpus" "$kept" \
		>"$work/$fmt.log" 2>&1
	rc=$?
	[ "$keep" = 1 ] || rm -rf "$corpus"
	grep -E 'stat::number_of_executed_units|^Done|ERROR|SUMMARY|\.c:[0-9]+:' \
		"$work/$fmt.log"
	if [ $rc -ne 0 ]; then
		tail -40 "$work/$fmt.log"
		echo "FAIL: fuzz_av $fmt exited $rc (log: $work/$fmt.log)"
		fail=1
	fi
done
exit $fail
