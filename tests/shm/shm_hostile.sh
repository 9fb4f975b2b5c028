#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the hostile-peer test of shm's trust boundary.
# Cases listed in SHM_HOSTILE_XFAIL are expected to fail on this tree
# (message-path validation that lands with the shm_msg.c rework); they
# are reported as XFAIL/XPASS and do not fail the run. Empty the list to
# hold every case to the bar.
set -u
bin=${top_builddir:?}/tests/shm/shm_hostile
# sar_unexp_huge: an unexpected segmented message mallocs the size the
# peer wrote (ASan aborts on 2^60; elsewhere malloc just fails).
# resp_ring_full: shm_send_ack (shm_msg.c) spins up to 10^6 times, each
# with a /proc liveness check, on a sender whose response ring stays full,
# so one hostile sender stalls the victim's progress for seconds per ack.
: "${SHM_HOSTILE_XFAIL=}"
export SHM_HOSTILE_XFAIL
exec timeout 300 "$bin"
