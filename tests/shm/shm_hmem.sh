#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: shm device-memory transfers between two processes
# against the fake CUDA and Level Zero drivers (built by make check under
# tests/hmem/fake), once with device IPC allowed and once with
# FI_HMEM_DISABLE_P2P=1 (everything staged through host buffers), and once
# with a low IPC threshold. Skips (77) when no fake driver was built.
set -u
bin=${top_builddir:?}/tests/shm/shm_hmem
fake=$top_builddir/tests/hmem/fake
found=0
if [ -r "$fake/libcuda.so.1" ]; then
	FI_HMEM_CUDA_LIBRARY=$fake/libcuda.so.1
	export FI_HMEM_CUDA_LIBRARY
	found=1
fi
if [ -r "$fake/libze_loader.so.1" ]; then
	FI_HMEM_ZE_LIBRARY=$fake/libze_loader.so.1
	export FI_HMEM_ZE_LIBRARY
	found=1
fi
if [ $found = 0 ]; then
	echo "no fake device driver built: skipped"
	exit 77
fi
fail=0
for cfg in "" "FI_HMEM_DISABLE_P2P=1" "FI_SHM_IPC_THRESHOLD=8192"; do
	echo "== shm_hmem ${cfg:-(defaults)}"
	env $cfg timeout 120 "$bin"
	rc=$?
	[ $rc = 77 ] && exit 77
	[ $rc = 0 ] || fail=1
done
exit $fail
