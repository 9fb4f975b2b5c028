#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the shm RMA test with virtual and offset addressing,
# and with Cross Memory Attach refused (large transfers go in chunks).
set -u
bin=${top_builddir:?}/tests/shm/shm_rma
fail=0
for cfg in "" "SHM_TEST_MR=offset" "FI_SHM_DISABLE_CMA=1" \
	"FI_SHM_DISABLE_CMA=1 SHM_TEST_MR=offset"; do
	echo "== shm_rma ${cfg:-(defaults)}"
	env $cfg timeout 120 "$bin" || fail=1
done
exit $fail
