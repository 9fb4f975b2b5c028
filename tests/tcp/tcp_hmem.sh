#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: FI_HMEM over tcp (tests/tcp/tcp_hmem.c) against the
# fake CUDA driver built under tests/hmem/fake: every transfer kind between
# host and device buffers in the four combinations, with counting copy
# overrides (device memory closed to everything else) and with the
# driver's copies; then, with FI_HMEM=system, that tcp claims no FI_HMEM.
# Skips (77) when the fake driver was not built (no cuda.h).
set -u
bld=${top_builddir:?}
bin=$bld/tests/tcp/tcp_hmem
fake=$bld/tests/hmem/fake/libcuda.so.1
[ -x "$bin" ] || { echo "SKIP: $bin not built"; exit 77; }
[ -r "$fake" ] || { echo "SKIP: no fake CUDA driver built"; exit 77; }
echo "== tcp_hmem (fake CUDA)"
FI_HMEM=system,cuda FI_HMEM_CUDA_LIBRARY=$fake timeout 300 "$bin"
rc=$?
[ $rc -eq 0 ] || exit $rc
echo "== tcp_hmem nodev (FI_HMEM=system)"
FI_HMEM=system timeout 60 "$bin" nodev
