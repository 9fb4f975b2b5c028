#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the shm multi-process test. Everything once with the
# defaults (all-to-all exchange, peers killed mid-transfer on either side,
# region reclaim and permissions, a sender that exits right after sending,
# one that closes and sends again from a new endpoint, endpoints that send
# and close in a loop), then the all-to-all again with Cross Memory Attach
# refused and with CMA from 4 KiB up. Every child bounds itself with
# alarm(); the timeout here only backs that up.
set -u
bin=${top_builddir:?}/tests/shm/shm_multi
fail=0
echo "== shm_multi (defaults)"
timeout 240 "$bin" || fail=1
for cfg in "FI_SHM_DISABLE_CMA=1" "FI_SHM_CMA_THRESHOLD=4096"; do
	echo "== shm_multi alltoall $cfg"
	env $cfg timeout 120 "$bin" alltoall || fail=1
done
exit $fail
