#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# gpu-check.sh - checks the HMEM layer against a real NVIDIA GPU: configures
# and builds the library --with-cuda, builds the hmem test programs and runs
# them against the real libcuda.so.1 (device allocation, pointer queries,
# copies in every direction, IPC between two processes), then prints a
# summary, and runs collectives on device buffers over shm and
# tcp. Exits 77 (skipped) where there is no GPU, driver or cuda.h.
#
# Usage: contrib/gpu-check.sh [--no-lib]
#   --no-lib        skip configure/make of the library (BUILD_DIR must
#                   then hold one from an earlier run, in BUILD_DIR/lib)
# Environment: CUDA_DIR (default /usr/local/cuda), BUILD_DIR (default a
#   fresh temporary folder), CC (default cc), JOBS (default 2).

set -u

SRC=$(cd "$(dirname "$0")/.." && pwd)
CUDA_DIR=${CUDA_DIR:-/usr/local/cuda}
CC=${CC:-cc}
JOBS=${JOBS:-2}
BUILD_LIB=1
[ "${1:-}" = "--no-lib" ] && BUILD_LIB=0

SUMMARY=""
FAILED=0

skip() {
	echo "gpu-check: SKIP: $*"
	exit 77
}

record() { # name, status
	SUMMARY="$SUMMARY$(printf '  %-40s %s' "$1" "$2")
"
	[ "$2" = FAIL ] && FAILED=1
	return 0
}

# --- Is there anything to test against? ---------------------------------
command -v nvidia-smi >/dev/null 2>&1 || skip "nvidia-smi not found"
nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || skip "no NVIDIA GPU listed"
have_libcuda() {
	ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && return 0
	for d in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' ') \
		/usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64; do
		[ -e "$d/libcuda.so.1" ] && return 0
	done
	return 1
}
have_libcuda || skip "libcuda.so.1 not installed"
[ -f "$CUDA_DIR/include/cuda.h" ] || skip "no $CUDA_DIR/include/cuda.h"
pkg-config --exists cmocka 2>/dev/null || skip "cmocka not installed"

BUILD_DIR=${BUILD_DIR:-$(mktemp -d /tmp/gpu-check.XXXXXX)}
mkdir -p "$BUILD_DIR" || exit 1
LOG="$BUILD_DIR/gpu-check.log"
: >"$LOG"
echo "gpu-check: $(nvidia-smi -L | head -n 1)"
echo "gpu-check: building in $BUILD_DIR (log: $LOG)"

# --- The library, configured the way a CUDA user would ------------------
if [ $BUILD_LIB = 1 ]; then
	status=PASS
	(
		cd "$SRC" && { [ -x configure ] || ./autogen.sh; } &&
			mkdir -p "$BUILD_DIR/lib" && cd "$BUILD_DIR/lib" &&
			"$SRC/configure" --with-cuda="$CUDA_DIR" &&
			grep -q '^#define HAVE_CUDA 1' config.h &&
			make -j"$JOBS"
	) >>"$LOG" 2>&1 || status=FAIL
	record "configure --with-cuda + make" $status
fi

# --- The hmem test programs, linked with the library just built ---------
# Against the library's own objects (what make check links), so that the
# script never lags behind where a symbol lives in the tree.
LIBDIR="$BUILD_DIR/lib"
OFILIB="$LIBDIR/.libs/libofi.a"
CFLAGS="-std=gnu11 -g -O1 -Wall -Wno-unused-parameter \
 -Wno-missing-field-initializers -fno-strict-aliasing \
 -DHAVE_CUDA=1 -DHAVE_ZE=0 -I$CUDA_DIR/include -I$LIBDIR -I$SRC/include \
 $(pkg-config --cflags cmocka)"
LIBS="$OFILIB $(sed -n 's/^LIBS = //p' "$LIBDIR/Makefile" 2>/dev/null) \
 $(pkg-config --libs cmocka) -ldl -lpthread -lm"
HMEM="$SRC/tests/hmem/hmem_test_common.c"

built=1
if [ ! -f "$OFILIB" ]; then
	echo "no $OFILIB: build the library first" >>"$LOG"
	built=0
fi
for t in hmem_dispatch hmem_ipc_cache hmem_cuda; do
	# shellcheck disable=SC2086 # word splitting of the lists is wanted
	$CC $CFLAGS -o "$BUILD_DIR/$t" "$SRC/tests/hmem/$t.c" $HMEM $LIBS \
		>>"$LOG" 2>&1 || built=0
done
# shellcheck disable=SC2086 # word splitting of the lists is wanted
$CC $CFLAGS -I"$SRC/tests/shm" -o "$BUILD_DIR/coll_hmem" \
	"$SRC/tests/hmem/coll_hmem.c" $LIBS >>"$LOG" 2>&1 || built=0
if [ $built = 0 ]; then
	record "build hmem tests" FAIL
else
	record "build hmem tests" PASS
fi

run() { # name, "program [args]", env...
	name=$1
	prog=${2%% *}
	args=${2#"$prog"}
	shift 2
	if [ ! -x "$BUILD_DIR/$prog" ]; then
		record "$name" FAIL
		return
	fi
	echo "=== $name" >>"$LOG"
	# shellcheck disable=SC2086 # the arguments split
	env "$@" timeout 300 "$BUILD_DIR/$prog" $args >>"$LOG" 2>&1
	case $? in
	0) record "$name" PASS ;;
	77) record "$name" SKIP ;;
	*) record "$name" FAIL ;;
	esac
}

# Everything real: no fake library anywhere near.
run "dispatch/overrides/iov" hmem_dispatch HMEM_FAKE_DIR=/nonexistent
run "ipc cache" hmem_ipc_cache
run "cuda (real driver) incl. 2-proc IPC" hmem_cuda \
	FI_HMEM_CUDA_LIBRARY=libcuda.so.1 FI_HMEM_ZE_ENABLE=0 \
	FI_LOG_LEVEL=info
for p in shm tcp; do
	run "collectives on device buffers, $p" "coll_hmem $p" \
		COLL_HMEM_REAL=1 FI_HMEM_CUDA_LIBRARY=libcuda.so.1 \
		FI_HMEM_ZE_ENABLE=0
done

# The real driver must have come up, not the library quietly without it.
if grep -q 'cuda: libcuda.so.1, [1-9][0-9]* device(s)' "$LOG"; then
	record "real driver loaded" PASS
else
	record "real driver loaded" FAIL
fi

echo "gpu-check summary:"
printf '%s' "$SUMMARY"
if [ $FAILED = 0 ]; then
	echo "gpu-check: all passed"
	exit 0
fi
echo "gpu-check: FAILED (see $LOG)"
exit 1
