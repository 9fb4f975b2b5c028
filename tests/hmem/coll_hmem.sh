#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: collectives on fake CUDA device buffers (built by
# make check under tests/hmem/fake) over shm and tcp. Skips (77) when the
# fake driver was not built.
set -u
bin=${top_builddir:?}/tests/hmem/coll_hmem
fake=$top_builddir/tests/hmem/fake/libcuda.so.1
if [ ! -r "$fake" ]; then
	echo "no fake CUDA driver built: skipped"
	exit 77
fi
FI_HMEM_CUDA_LIBRARY=$fake
export FI_HMEM_CUDA_LIBRARY
fail=0
for p in shm tcp; do
	timeout 120 "$bin" $p
	rc=$?
	[ $rc = 0 ] || [ $rc = 77 ] || fail=1
done
exit $fail
