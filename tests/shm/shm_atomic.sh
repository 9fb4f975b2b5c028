#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the shm atomic test with virtual and offset addressing.
set -u
bin=${top_builddir:?}/tests/shm/shm_atomic
fail=0
for cfg in "" "SHM_TEST_MR=offset"; do
	echo "== shm_atomic ${cfg:-(defaults)}"
	env $cfg timeout 120 "$bin" || fail=1
done
exit $fail
