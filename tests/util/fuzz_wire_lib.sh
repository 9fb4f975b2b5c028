# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# shellcheck shell=sh
# fuzz_wire_lib.sh - what the libFuzzer scripts over pure wire decoders
# share, sourced (POSIX sh): tests/tcp/fuzz_tcp_wire.sh (tcp's frames)
# and tests/sockets/fuzz_dgram.sh (sockets' datagrams). The harness is
# built with clang (-fsanitize=fuzzer,address,undefined) together with the
# decoder's sources, and a second time with -D<SEEDS> as a program that
# writes a seed corpus with the encoders; then it runs.
#
#   make check:  a short fixed count (FUZZ_RUNS, default 20000), in a
#                scratch directory; skipped (77) without clang's fuzzer
#                runtime.
#   make fuzz:   FUZZ_RUNS=N or FUZZ_TIME=seconds, FUZZ_KEEP=1 keeping the
#                corpus in $top_builddir/<dir>/fuzz_corpus across runs.
# A crash, a sanitizer report or a broken property aborts: non-zero.
#
# fuzz_wire NAME DIR SOURCES INCLUDES SEEDS_MACRO MAX_LEN
#   NAME harness name, DIR its build directory under $top_builddir,
#   SOURCES and INCLUDES (-I...) what to compile, MAX_LEN libFuzzer's.
# Returns 0, 77 (skip) or 1.
# fuzz_probe WORK: 0 when $CLANG builds libFuzzer programs (a probe in
# WORK, created), else 77 with the reason on stdout.
fuzz_probe() {
	CLANG=${CLANG:-clang}
	if ! command -v "$CLANG" >/dev/null 2>&1; then
		echo "SKIP: $CLANG not found"
		return 77
	fi
	mkdir -p "$1"
	echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)
{ return 0; }' >"$1/probe.c"
	if ! "$CLANG" -fsanitize=fuzzer "$1/probe.c" -o "$1/probe" \
		2>/dev/null; then
		echo "SKIP: $CLANG has no libFuzzer runtime (-fsanitize=fuzzer)"
		return 77
	fi
	return 0
}

# fuzz_lib WORK: the whole library compiled with $CLANG for a harness
# that drives the public API (tests/util/fuzz_av.sh, fuzz_api.sh):
# -fsanitize=fuzzer-no-link,address,undefined, objects kept in WORK/obj
# across runs (a makefile with -MMD dependencies rebuilds what changed),
# one build at a time (flock: make check runs the harnesses in parallel).
# Needs FUZZ_OFI_SOURCES, $src and $bld; sets $cflags for the harness.
fuzz_lib() {
	san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
	cflags="-std=gnu11 -g -O1 -w $san -fsanitize=fuzzer-no-link \
	-DHAVE_CONFIG_H -I$bld -I$src/include ${FUZZ_CPPFLAGS:-}"
	mkdir -p "$1/obj"
	(
		flock 9
		{
			printf 'CFLAGS = %s\n' "$cflags"
			printf 'OBJS =\n'
			: >"$1/objs.new"
			for f in $FUZZ_OFI_SOURCES; do
				case $f in *.c) ;; *) continue ;; esac
				o=obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')
				echo "$1/$o" >>"$1/objs.new"
				printf 'OBJS += %s\n%s: %s\n\t%s $(CFLAGS) -MMD -MP -c $< -o $@\n' \
					"$o" "$o" "$src/$f" "$CLANG"
			done
			printf 'all: $(OBJS)\n-include obj/*.d\n'
		} >"$1/lib.mk"
		nice make -s -C "$1" -f lib.mk -j"${FUZZ_JOBS:-2}" all &&
			mv "$1/objs.new" "$1/objs"
	) 9>"$1/lib.lock"
}

# fuzz_harness WORK NAME MACRO [LDFLAGS]: tests/util/NAME.c over the
# library fuzz_lib built in WORK (the objects of today's sources, listed
# in WORK/objs: obj/ may still hold those of files since renamed or
# split), as WORK/NAME (libFuzzer) and, with -DMACRO, as WORK/NAME_main
# (a plain program over the inputs named).
fuzz_harness() {
	libs="-lpthread -ldl -lm ${FUZZ_LIBS:-}"
	# shellcheck disable=SC2086 # flag lists
	"$CLANG" $cflags -fsanitize=fuzzer ${4:-} "$src/tests/util/$2.c" \
		$(cat "$1/objs") -o "$1/$2" $libs || return 1
	# shellcheck disable=SC2086
	"$CLANG" $cflags "-D$3" ${4:-} "$src/tests/util/$2.c" \
		$(cat "$1/objs") -o "$1/$2_main" $libs
}

# fuzz_limit: libFuzzer's options for FUZZ_RUNS / FUZZ_TIME (make check's
# default: 20000 runs).
fuzz_limit() {
	if [ -n "${FUZZ_TIME:-}" ] && [ -n "${FUZZ_RUNS:-}" ]; then
		echo "-runs=$FUZZ_RUNS -max_total_time=$FUZZ_TIME"
	elif [ -n "${FUZZ_TIME:-}" ]; then
		echo "-max_total_time=$FUZZ_TIME"
	else
		echo "-runs=${FUZZ_RUNS:-20000}"
	fi
}

fuzz_wire() {
	name=$1
	dir=$2
	srcs=$3
	inc=$4
	seeds_macro=$5
	max_len=$6
	bld=${top_builddir:-.}
	CLANG=${CLANG:-clang}
	keep=${FUZZ_KEEP:-0}

	work=$bld/$dir/fuzz
	fuzz_probe "$work" || return $?
	flags="-std=gnu11 -g -O1 -Wall -Wno-unused-parameter"
	# shellcheck disable=SC2086 # word lists
	"$CLANG" $flags -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined $inc $srcs \
		-o "$work/$name" -lpthread -lm || return 1
	# shellcheck disable=SC2086
	"$CLANG" $flags "-D$seeds_macro" $inc $srcs \
		-o "$work/${name}_seeds" -lpthread -lm || return 1

	if [ "$keep" = 1 ]; then
		corpus=$bld/$dir/fuzz_corpus
		mkdir -p "$corpus"
	else
		corpus=$(mktemp -d "$work/corpus.XXXXXX") || return 1
		trap 'rm -rf "$corpus"' EXIT
	fi
	seeds=$work/seeds
	rm -rf "$seeds" && mkdir -p "$seeds"
	"$work/${name}_seeds" "$seeds" || return 1

	limit=$(fuzz_limit)
	echo "$name $limit"
	# shellcheck disable=SC2086
	"$work/$name" $limit -max_len="$max_len" -print_final_stats=1 \
		-timeout=10 -artifact_prefix="$work/" "$corpus" "$seeds" \
		>"$work/last.log" 2>&1
	rc=$?
	grep -E 'stat::number_of_executed_units|^Done|ERROR|SUMMARY|abort|\.c:[0-9]+:' \
		"$work/last.log"
	if [ $rc -ne 0 ]; then
		tail -40 "$work/last.log"
		echo "FAIL: $name exited $rc (log: $work/last.log)"
		return 1
	fi
	return 0
}
