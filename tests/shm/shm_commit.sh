#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: fi_commit, FI_COMMIT_COMPLETE and FI_COMMIT_MANUAL on
# shm; device-memory cases run against the fake CUDA driver when built.
set -u
bin=${top_builddir:?}/tests/shm/shm_commit
fake=$top_builddir/tests/hmem/fake
if [ -r "$fake/libcuda.so.1" ]; then
	FI_HMEM_CUDA_LIBRARY=$fake/libcuda.so.1
	export FI_HMEM_CUDA_LIBRARY
fi
echo "== shm_commit"
exec timeout 120 "$bin"
