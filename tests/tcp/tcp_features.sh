#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the provider-neutral feature test (built with shm's
# tests, tests/shm/shm_features.c) over the tcp provider: every size,
# tagged matching, directed receive and FI_SOURCE, unexpected messages,
# FI_PEEK/FI_CLAIM/FI_DISCARD, cancel, truncation, multi-receive,
# injectdata, a peer killed mid-transfer. Run with the default unexpected
# bound, then with 4 KiB and 0, so unexpected messages take the path
# where their connection stalls and the payload goes straight into the
# receive that later matches (peek, claim and discard included), and
# once over IPv6 (::1, FI_SOCKADDR_IN6).
# Then shm_dc over tcp: FI_DELIVERY_COMPLETE waits for the receiver
# (posted, or buffered as unexpected), a plain small send does not even
# while the connection is being made, a killed receiver fails the send.
# Then shm_rma and shm_atomic over tcp (SHM_TEST_PROV), virtual and
# offset addressing: every size, iov shapes, writedata, inject, RMA
# event counters, bad key/range/access answered FI_EACCES with the
# target untouched, every atomic op/type/kind.
# Then shm_multi's processes over tcp: six ranks all-to-all, peers
# SIGKILLed mid-transfer on either side (errors within 5 s, later sends
# to the dead peer fail, the survivor goes on), endpoints that send and
# close in a loop (close lingers until queued sends are written). Not its
# exit_send/exit_reuse cases: there the receiver makes no progress until
# the sender is gone, which only shared memory survives (a TCP peer must
# answer the connection before data flows).
set -u
bin=${top_builddir:?}/tests/shm/shm_features
dc=${top_builddir:?}/tests/shm/shm_dc
[ -x "$bin" ] || { echo "SKIP: $bin not built (shm disabled)"; exit 77; }
fail=0
echo "== shm_dc tcp"
timeout 120 "$dc" tcp || fail=1
for cfg in "" "FI_TCP_MAX_UNEXP=4096" "FI_TCP_MAX_UNEXP=0" "FEATURES_IPV6=1"; do
	echo "== shm_features tcp ${cfg:-(defaults)}"
	env $cfg timeout 120 "$bin" tcp || fail=1
done
for mr in virt offset; do
	for t in shm_rma shm_atomic; do
		echo "== $t tcp $mr"
		SHM_TEST_PROV=tcp SHM_TEST_MR=$mr timeout 120 \
			"${top_builddir}/tests/shm/$t" || fail=1
	done
done
echo "== shm_multi tcp"
SHM_TEST_PROV=tcp timeout 200 "${top_builddir}/tests/shm/shm_multi" alltoall \
	dead_rx dead_race dead_tx dead_zombie churn || fail=1
exit $fail
