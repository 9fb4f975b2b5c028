#!/bin/sh
# fuzz_tcp_wire.sh - builds the libFuzzer harness over the tcp wire
# decoders with clang (-fsanitize=fuzzer,address,undefined) and runs it
# from a seed corpus the encoders write.
#
#   make check:  a short fixed count (FUZZ_RUNS, default 20000), in a
#                scratch directory; skipped (77) without clang's fuzzer
#                runtime.
#   make fuzz:   FUZZ_RUNS=N or FUZZ_TIME=seconds, keeping the corpus in
#                $top_builddir/tests/tcp/fuzz_corpus across runs.
# A crash, a sanitizer report or a broken property aborts: exit non-zero.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
bld=${top_builddir:-.}
CLANG=${CLANG:-clang}
runs=${FUZZ_RUNS:-}
time=${FUZZ_TIME:-}
keep=${FUZZ_KEEP:-0}

if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "SKIP: $CLANG not found"
	exit 77
fi
work=$bld/tests/tcp/fuzz
mkdir -p "$work"
probe=$work/probe.c
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)
{ return 0; }' >"$probe"
if ! "$CLANG" -fsanitize=fuzzer "$probe" -o "$work/probe" 2>/dev/null; then
	echo "SKIP: $CLANG has no libFuzzer runtime (-fsanitize=fuzzer)"
	exit 77
fi

srcs="$src/tests/tcp/fuzz_tcp_wire.c $src/prov/tcp/tcp_wire.c
      $src/prov/util/util_atomic.c"
inc="-I$src/include -I$src/prov/tcp"
flags="-std=gnu11 -g -O1 -Wall -Wno-unused-parameter"
"$CLANG" $flags -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined $inc $srcs \
	-o "$work/fuzz_tcp_wire" -lpthread -lm || exit 1
"$CLANG" $flags -DTCP_FUZZ_SEEDS $inc $srcs \
	-o "$work/fuzz_tcp_wire_seeds" -lpthread -lm || exit 1

if [ "$keep" = 1 ]; then
	corpus=$bld/tests/tcp/fuzz_corpus
	mkdir -p "$corpus"
else
	corpus=$(mktemp -d "$work/corpus.XXXXXX") || exit 1
	trap 'rm -rf "$corpus"' EXIT
fi
seeds=$work/seeds
rm -rf "$seeds" && mkdir -p "$seeds"
"$work/fuzz_tcp_wire_seeds" "$seeds" || exit 1

limit="-runs=${runs:-20000}"
[ -n "$time" ] && limit="-max_total_time=$time"
[ -n "$time" ] && [ -n "$runs" ] && limit="-runs=$runs -max_total_time=$time"
echo "fuzz_tcp_wire $limit"
# -max_len covers a full frame head (header + the largest body) and more.
"$work/fuzz_tcp_wire" $limit -max_len=512 -print_final_stats=1 -timeout=10 \
	-artifact_prefix="$work/" "$corpus" "$seeds" >"$work/last.log" 2>&1
rc=$?
grep -E 'stat::number_of_executed_units|^Done|ERROR|SUMMARY|abort|\.c:[0-9]+:' \
	"$work/last.log"
if [ $rc -ne 0 ]; then
	tail -40 "$work/last.log"
	echo "FAIL: fuzz_tcp_wire exited $rc (log: $work/last.log)"
	exit 1
fi
exit 0
