#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the shm feature test in each protocol configuration:
# the defaults, Cross Memory Attach refused (everything through the
# segmented channel), and CMA from 4 KiB up.
set -u
bin=${top_builddir:?}/tests/shm/shm_features
fail=0
for cfg in "" "FI_SHM_DISABLE_CMA=1" "FI_SHM_CMA_THRESHOLD=4096"; do
	echo "== shm_features ${cfg:-(defaults)}"
	env $cfg timeout 120 "$bin" || fail=1
done
exit $fail
