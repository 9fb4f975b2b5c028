#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the sockets provider's data path under its defaults
# (FI_PROGRESS_AUTO: a progress thread per endpoint) with shm's
# provider-neutral tests pointed at it (the same programs tcp_features.sh
# runs over tcp, tests/shm/): shm_features (every size, tagged matching,
# directed receive and FI_SOURCE, unexpected messages, peek/claim/discard,
# cancel, truncation, multi-receive, a peer killed mid-transfer), then
# shm_rma and shm_atomic with offset addressing (mr_mode 0, sockets'
# default: user keys, zero-based offsets), also with FI_SOCKETS_SHM=0 so
# RMA events and every atomic (128-bit included) cross TCP. Skips when
# shm's tests are not built.
set -u
bin=${top_builddir:?}/tests/shm
[ -x "$bin/shm_features" ] || { echo "SKIP: shm's tests not built"; exit 77; }
fail=0
echo "== shm_features sockets"
timeout 120 "$bin/shm_features" sockets || fail=1
for shm in 1 0; do
	for t in shm_rma shm_atomic; do
		echo "== $t sockets offset FI_SOCKETS_SHM=$shm"
		FI_SOCKETS_SHM=$shm SHM_TEST_PROV=sockets SHM_TEST_MR=offset \
			timeout 120 "$bin/$t" || fail=1
	done
done
exit $fail
